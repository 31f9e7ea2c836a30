/*
 * sdcscan campaign cpu-faults: the register-fault campaign. For every CPU variant of every probe
 * that runs on one host, sdcscan runs itself as a child (`sdcscan run --variant P/V` on two CPUs,
 * 16 iterations, small sizes), and the injector (inject/regfault.h) follows the child's processes to the
 * second CPU's burn worker and flips one bit of one general-purpose or vector register of it at a
 * moment drawn from the seed: by default anywhere in the worker's whole burn (its lane, from
 * before its first iteration to after its last check), or within an iteration, or at its start.
 * The child's JSON report says what became of the fault (campaign_cpu_run.c):
 *   masked        nothing reported, and the worker's work digest (SHA-256 of its 16 iterations'
 *                 results; ecparity: of every shard and parity at the end) is the unfaulted run's
 *   found+located a corruption finding of the probe's own checks at the faulted CPU
 *   vote/golden   found only by the vote across devices or a golden (device-disagreement,
 *                 golden-*, rank-* kinds)
 *   crash, hang   a finding of class crash or hang at the faulted CPU
 *   no verdict    the run ended in no verdict: sdcscan died, was killed at its bound, wrote no
 *                 report or exited with another code than its report's verdict. A fault of a
 *                 worker's process must never take the run with it: it must be 0; exit 2 otherwise.
 *   other         anything else, said: a finding at another device, an UNKNOWN error, a worker
 *                 slowed short of its work
 *   missed        a different (or no) work digest and nothing reported: silent corruption that
 *                 got past every check. It must be 0; exit 2 otherwise.
 * The table has a row a probe (its variants' sum; --faults is a probe's) and a row a variant.
 * allreduce runs only across MPI ranks and is left out (said in the output).
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <sched.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/message.h"
#include "base/parse.h"
#include "inject/campaign_html.h"
#include "commands/campaign_cpu.h"
#include "commands/commands.h"
#include "runner/report_read.h"
#include "run/facts_json.h"
#include "base/stop.h"

static const char *const bp_choices[] = { "auto", "hardware", "software", NULL };

/* ---- the table ---- */

struct row {
	char name[2 * SDC_NAME_MAX + 4];
	uint64_t injected, not_injected, counts[O_N];
};

static void row_add(struct row *r, const struct cc_target *t)
{
	r->injected += t->injected;
	r->not_injected += t->not_injected;
	for (int o = 0; o < O_N; o++)
		r->counts[o] += t->counts[o];
}

static void print_row(FILE *out, const struct row *r)
{
	fprintf(out, "%-24s %6" PRIu64, r->name, r->injected);
	for (int o = 0; o < O_N; o++)
		fprintf(out, " %10" PRIu64, r->counts[o]);
	fprintf(out, "%s%s\n", r->counts[O_NO_VERDICT] ? "  NO-VERDICT" : "", r->counts[O_MISSED] ? "  MISSED" : "");
}

/* The probes' rows (their variants' sums), in order: n of them. */
static int probe_rows(const struct cc_target *t, int n, struct row *rows)
{
	int k = 0;
	for (int i = 0; i < n; i++) {
		if (!k || strcmp(rows[k - 1].name, t[i].probe)) {
			memset(&rows[k], 0, sizeof(rows[k]));
			sdc_strlcpy(rows[k++].name, t[i].probe, sizeof(rows[0].name));
		}
		row_add(&rows[k - 1], &t[i]);
	}
	return k;
}

static void print_table(const struct cc_campaign *c, const struct cc_target *t, int n, const json_t *left_out)
{
	struct row rows[CC_MAX_TARGETS], total = { .name = "total" };
	const int np = probe_rows(t, n, rows);
	fprintf(c->out, "\n%-24s %6s", "probe, probe/variant", "faults");
	for (int o = 0; o < O_N; o++)
		fprintf(c->out, " %10s", sdc_cc_outcome_heads[o]);
	fputc('\n', c->out);
	for (int p = 0, i = 0; p < np; p++) {
		print_row(c->out, &rows[p]);
		for (; i < n && !strcmp(t[i].probe, rows[p].name); i++) {
			struct row v = { 0 };
			snprintf(v.name, sizeof(v.name), "  %.23s/%.23s", t[i].probe, t[i].variant);
			row_add(&v, &t[i]);
			print_row(c->out, &v);
			row_add(&total, &t[i]);
		}
	}
	print_row(c->out, &total);
	size_t i;
	json_t *x;
	json_array_foreach(left_out, i, x)
		fprintf(c->out, "%s: left out: %s\n", sdc_json_str(x, "probe"), sdc_json_str(x, "why"));
	if (total.not_injected)
		fprintf(c->out, "%" PRIu64 " draws went in no fault (the worker or its lane ended first; see above) and were drawn again\n",
			total.not_injected);
	if (c->fault_runs)
		fprintf(c->out, "%" PRIu64 " faulted runs in %.0f s: %.2f s a fault here\n", c->fault_runs, c->fault_seconds,
			c->fault_seconds / (double)c->fault_runs);
}

static json_t *counts_json(const char *key, const char *name, const struct row *r)
{
	json_t *j = json_pack("{s:s, s:I, s:I}", key, name, "faults", (json_int_t)r->injected, "not_injected",
			      (json_int_t)r->not_injected);
	for (int o = 0; o < O_N; o++)
		json_object_set_new(j, sdc_cc_outcome_keys[o], json_integer((json_int_t)r->counts[o]));
	return j;
}

static json_t *target_json(const struct cc_target *t)
{
	struct row r = { 0 };
	row_add(&r, t);
	json_t *j = counts_json("probe", t->probe, &r);
	json_object_set_new(j, "variant", json_string(t->variant));
	json_object_set_new(j, "faults_asked", json_integer((json_int_t)t->want));
	json_object_set_new(j, "unfaulted_digest", json_string(t->digest));
	json_object_set_new(j, "reference_seconds", json_real(t->ref_seconds));
	json_object_set_new(j, "lane_seconds", json_real(t->lane_seconds));
	json_object_set_new(j, "address_randomisation_off", json_boolean(t->no_aslr));
	json_object_set(j, "fault_list", t->faults);
	return j;
}

/* The campaign's JSON: its settings, the probes' totals, the variants with every fault. */
static json_t *campaign_json(const struct cc_campaign *c, const struct cc_target *t, int n, json_t *left_out,
			     const char *classes, struct row *total)
{
	struct row rows[CC_MAX_TARGETS];
	const int np = probe_rows(t, n, rows);
	json_t *ps = json_array(), *vs = json_array();
	*total = (struct row){ .name = "total" };
	for (int p = 0; p < np; p++)
		json_array_append_new(ps, counts_json("probe", rows[p].name, &rows[p]));
	for (int i = 0; i < n; i++) {
		row_add(total, &t[i]);
		json_array_append_new(vs, target_json(&t[i]));
	}
	const struct cc_opts *o = c->o;
	return json_pack("{s:I, s:I, s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:I, s:I, s:f}", "seed",
			 (json_int_t)c->seed, "faults_per_probe", (json_int_t)o->faults, "registers", classes, "instant",
			 sdc_cc_instant_names[o->instant], "breakpoints", sdc_regfault_bp_names[c->bp], "breakpoints_why",
			 c->bp_why, "cpus", c->cpus, "faulted_device", c->device, "probes", ps, "variants", vs, "left_out",
			 left_out, "missed", (json_int_t)total->counts[O_MISSED], "no_verdict",
			 (json_int_t)total->counts[O_NO_VERDICT], "seconds_per_fault",
			 c->fault_runs ? c->fault_seconds / (double)c->fault_runs : 0.0);
}

/* ---- the command ---- */

/* The two CPUs: the first two of --cpus, else of this process's affinity. -1: fewer than two. */
static int pick_cpus(const struct sdc_cli *cli, struct cc_campaign *c)
{
	cpu_set_t set;
	if (cli->have_cpus)
		set = cli->cpus;
	else if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	int got[2], n = 0;
	for (int i = 0; i < CPU_SETSIZE && n < 2; i++)
		if (CPU_ISSET(i, &set))
			got[n++] = i;
	if (n < 2)
		return -1;
	snprintf(c->cpus, sizeof(c->cpus), "%d,%d", got[0], got[1]);
	c->cpu = got[1];
	snprintf(c->thread, sizeof(c->thread), "sdc cpu%d", got[1]);
	snprintf(c->device, sizeof(c->device), "cpu%d", got[1]);
	snprintf(c->other, sizeof(c->other), "cpu%d", got[0]);
	return 0;
}

/*
 * The breakpoints: as asked, or (auto) debug registers where one trapped on a test child here, an
 * int3 elsewhere (and from the first unfaulted run that sees no trap on). -1 after saying why:
 * hardware asked where they do not trap, which cannot test what was asked (UNKNOWN).
 */
static int choose_breakpoints(struct cc_campaign *c)
{
	char why[240] = "";
	const int asked = c->o->breakpoints;
	const int hw = asked == CC_BP_SOFTWARE ? 0 : sdc_regfault_hw_traps(why, sizeof(why));
	c->bp = asked == CC_BP_HARDWARE || (asked == CC_BP_AUTO && hw == 1) ? SDC_BP_HARDWARE : SDC_BP_SOFTWARE;
	c->bp_chosen = asked == CC_BP_AUTO;
	if (asked == CC_BP_HARDWARE && hw != 1) {
		sdc_error("campaign cpu-faults: --breakpoints hardware: hardware breakpoints %s here: %s",
			  hw < 0 ? "cannot be tried" : "do not trap", why);
		return -1;
	}
	if (asked == CC_BP_SOFTWARE)
		snprintf(c->bp_why, sizeof(c->bp_why), "asked for (--breakpoints software)");
	else if (hw == 1)
		snprintf(c->bp_why, sizeof(c->bp_why), "a debug register trapped on a test child here");
	else
		snprintf(c->bp_why, sizeof(c->bp_why), "hardware ones do not trap here: %s", why);
	return 0;
}

static int make_dir(struct cc_campaign *c)
{
	if (c->o->keep) {
		snprintf(c->dir, sizeof(c->dir), "%s", c->o->keep);
		if (mkdir(c->dir, 0755) && errno != EEXIST)
			return -1;
		return 0;
	}
	const char *tmp = getenv("TMPDIR");
	snprintf(c->dir, sizeof(c->dir), "%s/sdcscan-cpu-faults.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	return mkdtemp(c->dir) ? 0 : -1;
}

/* The temporary folder and what the runs left in it (their reports and logs). */
static void remove_dir(const struct cc_campaign *c)
{
	if (c->o->keep || !c->dir[0])
		return;
	DIR *d = opendir(c->dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char path[PATH_MAX + 300];
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", c->dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(c->dir);
}

static double mean_iteration(const struct cc_target *t)
{
	double sum = 0;
	for (int i = 0; i < CC_ITERATIONS - 1; i++)
		sum += t->length[i];
	return sum / (CC_ITERATIONS - 1);
}

/* Every variant: its unfaulted run, then faults until its share went in (or twice as many draws
 * and two); with --attempt, that attempt alone. */
static int campaign_targets(struct cc_campaign *c, struct cc_target *t, int n)
{
	for (int i = 0; i < n; i++) {
		if (sdc_stop_is_requested() || sdc_cc_reference(c, &t[i]))
			return -1;
		char took[64];
		if (c->o->instant == INSTANT_ANYWHERE)
			snprintf(took, sizeof(took), "its worker's lane %.1f ms", t[i].lane_seconds * 1e3);
		else
			snprintf(took, sizeof(took), "iterations of %.2f ms", mean_iteration(&t[i]) * 1e3);
		if (!c->quiet)
			fprintf(c->out, "%s/%s: unfaulted run %.2f s, %s, work digest %.16s...\n", t[i].probe, t[i].variant,
				t[i].ref_seconds, took, t[i].digest);
		const uint64_t first = c->o->attempt >= 0 ? (uint64_t)c->o->attempt : 0;
		const uint64_t want = t[i].want, most = first + (c->o->attempt >= 0 ? 1 : 2 * want + 2);
		for (uint64_t a = first; t[i].injected < want && a < most; a++)
			if (sdc_stop_is_requested() || sdc_cc_fault(c, &t[i], a))
				return -1;
		fflush(c->out);
	}
	return 0;
}

/* The verdict's line (-q: it alone, which then says how many and where to look). */
static enum sdc_verdict verdict(const struct cc_campaign *c, const struct row *total, int rc)
{
	const uint64_t missed = total->counts[O_MISSED], none = total->counts[O_NO_VERDICT];
	const char *nl = c->quiet ? "" : "\n";
	if (missed)
		fprintf(c->out, "%sCRITICAL: %" PRIu64 " fault%s changed the work and nothing reported %s (%s)\n", nl, missed,
			missed == 1 ? "" : "s", missed == 1 ? "it" : "them",
			c->quiet ? "which: without -q, or in --json" : "MISSED above");
	if (none)
		fprintf(c->out, "%sCRITICAL: %" PRIu64 " faulted run%s ended in no verdict: sdcscan itself did not outlive a "
			"fault of its worker (%s)\n", missed ? "" : nl, none, none == 1 ? "" : "s",
			c->quiet ? "which: without -q, or in --json" : "NO-VERDICT above");
	if (missed || none)
		return SDC_CRITICAL;
	if (rc)
		fprintf(c->out, "%sUNKNOWN: the campaign could not run to its end (%s)\n", nl,
			c->quiet ? "why: without -q" : "see above");
	else
		fprintf(c->out, "%sOK: no fault was missed, and every run ended in its verdict\n", nl);
	return rc ? SDC_UNKNOWN : SDC_OK;
}

/* The variants with a share of their probe's faults, first in t: how many. */
static int keep_asked(struct cc_target *t, int n)
{
	int k = 0;
	for (int i = 0; i < n; i++)
		if (t[i].want)
			t[k++] = t[i];
	return k;
}

static int cpu_faults_main(struct sdc_cmd *cmd)
{
	const struct cc_opts *o = cmd->opts;
	struct sdc_cli *cli = &cmd->cli;
	const bool to_stdout = cli->json && !strcmp(cli->json, "-");
	struct cc_campaign c = { .o = o, .seed = cli->have_seed ? cli->seed : 1, .out = to_stdout ? stderr : stdout,
				 .quiet = cli->quiet };
	char why[600];
	if (pick_cpus(cli, &c))
		return sdc_cli_bad(cli, "it needs two CPUs (--cpus): the fault goes on the second, the first votes");
	if (sdc_campaign_html_path_ok(o->html, why, sizeof(why)))
		return sdc_cli_bad(cli, "--html %s", why);
	if (sdc_regfault_allowed(why, sizeof(why))) {
		sdc_error("campaign cpu-faults: ptrace is not allowed here: %s", why);
		return sdc_cli_unknown(cli);
	}
	static struct cc_target t[CC_MAX_TARGETS];
	int n = 0;
	json_t *left_out = json_array();
	if (choose_breakpoints(&c) || sdc_cc_select_targets(&c, t, &n, left_out) || make_dir(&c)) {
		json_decref(left_out);
		return sdc_cli_unknown(cli);
	}
	n = keep_asked(t, n);
	sdc_stop_install_signals();
	char classes[32];
	snprintf(classes, sizeof(classes), "%s%s%s", o->registers & 1 ? "gpr" : "", o->registers == 3 ? "," : "",
		 o->registers & 2 ? "vector" : "");
	static const char *const at[] = { "random instants over the worker's whole burn", "a random instant of an iteration",
					  "an iteration's start" };
	if (!c.quiet)
		fprintf(c.out,
			"sdcscan campaign cpu-faults: seed %" PRIu64 ", %" PRId64 " faults a probe (%s registers, at %s), "
			"%s breakpoints (%s), CPUs %s: the faults go on %s's worker\n",
			c.seed, o->faults, classes, at[o->instant], sdc_regfault_bp_names[c.bp], c.bp_why, c.cpus, c.device);
	for (int i = 0; i < n; i++)
		t[i].faults = json_array();
	const int rc = campaign_targets(&c, t, n);
	if (!c.quiet)
		print_table(&c, t, n, left_out);
	struct row total;
	json_t *out = campaign_json(&c, t, n, left_out, classes, &total);
	for (int i = 0; i < n; i++)
		json_decref(t[i].faults);
	enum sdc_verdict v = verdict(&c, &total, rc);
	json_object_set_new(out, "status", json_string(sdc_verdict_name(v)));
	if (cli->json && sdc_cli_write_json(cli->json, out, cli->command))
		v = sdc_verdict_worst(v, SDC_UNKNOWN);
	if (o->html && sdc_campaign_html(o->html, "cpu-faults", sdc_facts_of(out)))
		v = sdc_verdict_worst(v, SDC_UNKNOWN);
	json_decref(out);
	remove_dir(&c);
	return sdc_exit_code(v, cli->exit_style);
}

/* --faults N, or admit: the admit size, a few hundred faults a probe. */
static int parse_faults(const char *value, void *field, char *err, size_t errlen)
{
	int64_t v = CC_ADMIT_FAULTS;
	if (strcmp(value, "admit") && (!sdc_parse_i64(value, &v) || v < 1 || v > 100000)) {
		snprintf(err, errlen, "a number of faults from 1 to 100000, or admit (%d)", CC_ADMIT_FAULTS);
		return -1;
	}
	memcpy(field, &v, sizeof(v));
	return 0;
}

/* --attempt N, or none. */
static int parse_attempt(const char *value, void *field, char *err, size_t errlen)
{
	int64_t v = -1;
	if (strcmp(value, "none") && (!sdc_parse_i64(value, &v) || v < 0 || v > 1000000000)) {
		snprintf(err, errlen, "an attempt number from 0 (a fault's \"attempt\" in the JSON), or none");
		return -1;
	}
	memcpy(field, &v, sizeof(v));
	return 0;
}

#define OPT(f) offsetof(struct cc_opts, f)
static const struct sdc_option cc_options[] = {
	{ .name = "faults", .short_name = 'n', .metavar = "N", .type = SDC_OPT_CUSTOM, .offset = OPT(faults),
	  .parse = parse_faults, .def = "8",
	  .help = "faults injected per probe, shared among its variants; admit: 300, the admit size (a few hundred "
		  "a probe)" },
	{ .name = "registers", .short_name = 'r', .metavar = "LIST", .type = SDC_OPT_SET, .offset = OPT(registers),
	  .choices = sdc_cc_class_names, .def = "gpr,vector",
	  .help = "register classes: gpr (rax..r15, rip), vector (xmm/ymm/zmm, as wide as the CPU has them)" },
	{ .name = "variants", .short_name = 'V', .metavar = "LIST", .type = SDC_OPT_STRING, .offset = OPT(variants),
	  .def = "all", .help = "probes or probe/variant, comma-separated (all: every CPU variant that runs on one host)" },
	{ .name = "hang-timeout", .short_name = 'H', .metavar = "SECONDS", .type = SDC_OPT_DOUBLE,
	  .offset = OPT(hang_timeout), .def = "2", .dmin = 1, .dmax = 600,
	  .help = "the runs' hang_timeout: a worker without progress this long is named hung" },
	{ .name = "instant", .short_name = 'i', .metavar = "WHEN", .type = SDC_OPT_ENUM, .offset = OPT(instant),
	  .choices = sdc_cc_instant_names, .def = "anywhere",
	  .help = "anywhere: a moment of the worker's whole burn (its lane: setup, iterations, checks, stop), in "
		  "wall-clock time; random: a moment of the drawn iteration; start: the iteration's start, where the "
		  "probe's loop holds its live values (the same seed gives the same table)" },
	{ .name = "breakpoints", .short_name = 'b', .metavar = "KIND", .type = SDC_OPT_ENUM, .offset = OPT(breakpoints),
	  .choices = bp_choices, .def = "auto",
	  .help = "how the worker is stopped at a known point: hardware (debug registers), software (an int3 in the "
		  "worker's own text), auto (hardware where a test child's debug register traps, else software)" },
	{ .name = "attempt", .metavar = "N", .type = SDC_OPT_CUSTOM, .offset = OPT(attempt), .parse = parse_attempt,
	  .def = "none", .help = "run that attempt of each variant alone: a fault replayed (its JSON's \"replay\")" },
	{ .name = "keep", .short_name = 'k', .metavar = "DIR", .type = SDC_OPT_ARG, .offset = OPT(keep),
	  .help = "keep every run's report and log in DIR (default: a temporary folder, removed)" },
	{ .name = "html", .metavar = "FILE", .type = SDC_OPT_ARG, .offset = OPT(html),
	  .help = "the table as charts (by probe, variant, bit and register) in one self-contained HTML page" },
	SDC_OPT_END,
};

static void cc_help(FILE *out)
{
	fprintf(out,
		"sdcscan runs itself as a child (sdcscan run --variant P/V on the first two CPUs, 16 iterations, small\n"
		"sizes), once unfaulted, then once a fault. Through ptrace it follows the child's processes (the run,\n"
		"the variant's leader, one worker process a CPU) to the second CPU's worker, stops it at a breakpoint\n"
		"(its lane's start, or an iteration's) and, after a delay or there, flips one bit of one register;\n"
		"instant, register and bit come from the seed. Rows: each probe (its variants' sum), then its\n"
		"variants. Columns: faults injected; masked (nothing reported, the unfaulted run's work digest);\n"
		"found+loc (the probe's own checks, at that CPU); vote/gold (only the vote across CPUs or a golden);\n"
		"crash, hang (named at that CPU); no-verdict (the run died, was killed at its bound, wrote no report\n"
		"or exited with another code than its verdict's: must be 0); other (said in the fault's line); missed\n"
		"(a different work digest and nothing reported: must be 0). A fault takes about one run of the\n"
		"variant, 0.2-0.7 s on a 2-core VM: --faults admit (300 a probe) takes about 8 minutes there, within\n"
		"the admit profile's 30. allreduce needs MPI ranks: left out. Needs ptrace of its own child (Yama\n"
		"ptrace_scope 0-1, or 2 with CAP_SYS_PTRACE; no seccomp filter refusing ptrace). Exit 0: none missed\n"
		"and every run ended in its verdict; 2: a fault missed, or a run without a verdict (sdcscan itself\n"
		"failed); 3: it could not run (ptrace refused, hardware breakpoints asked for where they do not trap,\n"
		"an unfaulted run that cannot serve).\n");
}

const struct sdc_command sdc_command_campaign_cpu = {
	.name = "cpu-faults",
	.summary = "flip register bits in a burning worker (ptrace) and table what each probe made of them; "
		   "exit 0 none missed, 2 a fault missed or a run without a verdict",
	.options = cc_options,
	.opts_size = sizeof(struct cc_opts),
	.common = SDC_CF_CPUS | SDC_CF_SEED | SDC_CF_JSON | SDC_CF_QUIET | SDC_CF_EXIT,
	.help = cc_help,
	.fn = cpu_faults_main,
};
