/*
 * sdcscan campaign cpu-faults: the register-fault campaign. For every CPU variant of every probe
 * that runs on one host, sdcscan runs itself as a child (`sdcscan run --variant P/V` on two CPUs,
 * 16 iterations, small sizes), and the injector (regfault.h) flips one bit of one general-purpose
 * or vector register of the second CPU's burn worker at a moment of its burn drawn from the seed.
 * The child's JSON report says what became of the fault:
 *   masked        nothing reported, and the worker's work digest (SHA-256 of its 16 iterations'
 *                 results; ecparity: of every shard and parity at the end) is the unfaulted run's
 *   found+located a corruption finding of the probe's own checks at the faulted CPU
 *   vote/golden   found only by the vote across devices or a golden (device-disagreement,
 *                 golden-*, rank-* kinds)
 *   crash, hang   a finding of class crash or hang at the faulted CPU
 *   other         anything else, said: sdcscan died with no report, a run killed at its bound, a
 *                 finding at another device, an UNKNOWN error, a worker slowed short of its work
 *   missed        a different (or no) work digest and nothing reported: silent corruption that
 *                 got past every check. It must be 0; exit 2 otherwise.
 * allreduce runs only across MPI ranks and is left out (said in the output).
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <sched.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/digest.h"
#include "base/rng.h"
#include "base/util.h"
#include "campaign_html.h"
#include "commands/commands.h"
#include "core/plan.h"
#include "core/profile.h"
#include "core/registry.h"
#include "core/report_read.h"
#include "facts_json.h"
#include "probe.h"
#include "regfault.h"
#include "run.h"
#include "stop.h"

#define ITERATIONS SDC_WORK_DIGEST_ITERATIONS /* the work digest covers the whole run */
#define MAX_TARGETS 48

enum outcome { O_MASKED, O_FOUND, O_VOTE, O_CRASH, O_HANG, O_OTHER, O_MISSED, O_N };
static const char *const outcome_keys[O_N] = { "masked", "found_located", "vote_golden_only", "crash",
					       "hang",   "other",         "missed" };
static const char *const outcome_heads[O_N] = { "masked", "found+loc", "vote/gold", "crash", "hang", "other", "missed" };

/* The sizes a probe runs at here: one run of 16 iterations takes well under a second. */
static const struct {
	const char *probe;
	const char *sets[4];
} sizes[] = {
	{ "gemm", { "m=256", "n=256", "k=1024", NULL } },
	{ "embbag", { "rows=65536", "batches=128", NULL } },
	{ "ecparity", { "rows=16384", "steps=20", NULL } },
};

static const char *const class_names[] = { "gpr", "vector", NULL };
static const char *const instant_names[] = { "random", "start", NULL };
enum { INSTANT_RANDOM, INSTANT_START };

struct cc_opts {
	int64_t faults;
	uint32_t registers;
	char variants[SDC_OPT_STR_MAX];
	double hang_timeout;
	int instant;
	const char *keep, *html;
};

struct target {
	char probe[SDC_NAME_MAX], variant[SDC_NAME_MAX];
	const char *const *sets;
	/* from the unfaulted run */
	char digest[SDC_SHA256_HEX_LEN];
	double length[SDC_REGFAULT_MAX_ITERATIONS];
	double ref_seconds, duration, bound;
	/* the faults */
	uint64_t counts[O_N], injected, not_injected;
	json_t *faults;
};

struct campaign {
	const struct cc_opts *o;
	uint64_t seed;
	char cpus[32], thread[16], device[16], other[16]; /* the faulted CPU and the one that votes */
	int cpu;
	char dir[PATH_MAX];
	FILE *out;
	bool quiet;
	double fault_seconds;
	uint64_t fault_runs;
};

/* ---- which variants ---- */

static const char *const *size_sets(const char *probe)
{
	for (size_t i = 0; i < SDC_ARRAY_SIZE(sizes); i++)
		if (!strcmp(sizes[i].probe, probe))
			return sizes[i].sets;
	return NULL;
}

/* Whether "all" or the comma list asks for probe/variant (a word is a probe or probe/variant). */
static bool asked(const char *list, const char *probe, const char *variant, char *used)
{
	if (!strcmp(list, "all"))
		return true;
	char pv[2 * SDC_NAME_MAX + 2];
	snprintf(pv, sizeof(pv), "%.*s/%.*s", SDC_NAME_MAX - 1, probe, SDC_NAME_MAX - 1, variant);
	bool yes = false;
	for (const char *w = list; *w;) {
		const size_t n = strcspn(w, ",");
		if ((n == strlen(probe) && !strncmp(w, probe, n)) || (n == strlen(pv) && !strncmp(w, pv, n)))
			yes = (used[w - list] = true);
		w += n + (w[n] == ',');
	}
	return yes;
}

/*
 * The CPU variants the default profile's options select (sizes as above), those the list asks for;
 * left_out gets the probes that cannot run on one host. -1 after saying why.
 */
static int select_targets(const struct campaign *c, struct target *t, int *n, json_t *left_out)
{
	struct sdc_plan plan = { 0 };
	char err[600], used[SDC_OPT_STR_MAX] = { 0 };
	if (sdc_profile_load(SDC_DEFAULT_PROFILE, &plan, err, sizeof(err))) {
		sdc_error("campaign cpu-faults: %s", err);
		return -1;
	}
	*n = 0;
	for (int p = 0; sdc_probes[p]; p++) {
		const struct sdc_probe *probe = sdc_probes[p];
		if (probe->needs & SDC_NEED_MPI) {
			json_array_append_new(left_out, json_pack("{s:s, s:s}", "probe", probe->name, "why",
								  "it runs only across MPI ranks (mpirun)"));
			continue;
		}
		struct sdc_plan_entry *e = sdc_plan_find(&plan, probe->name);
		if (!e && !(e = sdc_plan_add(&plan, probe)))
			continue;
		const char *const *sets = size_sets(probe->name);
		for (int s = 0; sets && sets[s]; s++) {
			char key[64];
			snprintf(key, sizeof(key), "%.*s", (int)strcspn(sets[s], "="), sets[s]);
			sdc_plan_entry_set(e, key, strchr(sets[s], '=') + 1, err, sizeof(err));
		}
		struct sdc_variant v[SDC_VARIANTS_MAX];
		const int nv = probe->variants(e->opts, v, SDC_VARIANTS_MAX);
		for (int i = 0; i < nv && *n < MAX_TARGETS; i++) {
			if (!(v[i].devices & SDC_ON_CPU) || v[i].per_rank || !asked(c->o->variants, probe->name, v[i].name, used))
				continue;
			memset(&t[*n], 0, sizeof(t[*n]));
			sdc_strlcpy(t[*n].probe, probe->name, sizeof(t[*n].probe));
			sdc_strlcpy(t[*n].variant, v[i].name, sizeof(t[*n].variant));
			t[*n].sets = sets;
			(*n)++;
		}
	}
	sdc_plan_release(&plan);
	/* every word of the list must have named something */
	const char *list = c->o->variants;
	for (const char *w = list; strcmp(list, "all") && *w; w += strcspn(w, ",") + (w[strcspn(w, ",")] == ','))
		if (!used[w - list]) {
			sdc_error("campaign cpu-faults: --variants: '%.*s' is no CPU variant of a probe that runs on one "
				  "host (see 'sdcscan list')",
				  (int)strcspn(w, ","), w);
			return -1;
		}
	return 0;
}

/* ---- one run of the child ---- */

/* `sdcscan run --variant P/V ...` on the two CPUs, its report to json. */
static void child_argv(const struct campaign *c, const struct target *t, double duration, const char *json,
		       char store[][96], char *argv[])
{
	int n = 0, k = 0;
#define ARG(...) (snprintf(store[k], sizeof(store[k]), __VA_ARGS__), argv[n++] = store[k++])
	ARG("sdcscan");
	ARG("run");
	ARG("--variant");
	ARG("%.23s/%.23s", t->probe, t->variant);
	ARG("--cpus");
	ARG("%s", c->cpus);
	ARG("--gpus");
	ARG("none");
	ARG("--seed");
	ARG("%" PRIu64, c->seed);
	ARG("--set");
	ARG("%s.iterations=%d", t->probe, ITERATIONS);
	ARG("--set");
	ARG("%s.duration=%g", t->probe, duration);
	ARG("--set");
	ARG("%s.hang_timeout=%g", t->probe, c->o->hang_timeout);
	for (int s = 0; t->sets && t->sets[s]; s++) {
		ARG("--set");
		ARG("%s.%s", t->probe, t->sets[s]);
	}
	ARG("--no-state");
	ARG("--no-color");
	ARG("--quiet");
	ARG("--json");
	argv[n++] = (char *)json;
	argv[n] = NULL;
#undef ARG
}

/* Runs the child with spec s; its report (NULL: none readable). -1: the injector failed. */
static int run_child(struct campaign *c, const struct target *t, const char *name, double duration,
		     const struct sdc_regfault_spec *s, struct sdc_regfault_result *r, json_t **report)
{
	char json[PATH_MAX + 64], log[PATH_MAX + 64], store[40][96], *argv[48], err[400];
	snprintf(json, sizeof(json), "%.4000s/%.64s.json", c->dir, name);
	snprintf(log, sizeof(log), "%.4000s/%.64s.log", c->dir, name);
	unlink(json);
	child_argv(c, t, duration, json, store, argv);
	struct sdc_regfault_spec spec = *s;
	spec.thread = c->thread;
	spec.cpu = c->cpu;
	spec.log = log;
	if (sdc_regfault_run(argv, &spec, r, err, sizeof(err))) {
		sdc_error("campaign cpu-faults: %s", err);
		return -1;
	}
	*report = json_load_file(json, 0, NULL);
	return 0;
}

static json_t *result_at(json_t *report, const char *device)
{
	size_t i;
	json_t *x;
	json_array_foreach(json_object_get(report, "results"), i, x)
		if (!strcmp(sdc_json_str(x, "device"), device))
			return x;
	return NULL;
}

/* The faulted worker's work digest, or ecparity's state at the end ("" when none): ecparity's
 * servers hold different shards, so it has no per-device digest, and a fault on one server's
 * worker reaches the others' parities. */
static const char *work_digest(json_t *report, const char *probe, const char *device)
{
	if (!strcmp(probe, "ecparity")) {
		json_t *env = json_object_get(json_object_get(report, "run"), "environment");
		return sdc_json_str(json_object_get(env, "ecparity"), "state_sha256");
	}
	return sdc_json_str(json_object_get(result_at(report, device), "work_digest"), "sha256");
}

/* The unfaulted run: its digest, the worker's iterations' lengths, and how long a faulted one may
 * take. */
static int reference(struct campaign *c, struct target *t)
{
	struct sdc_regfault_spec s = { .inject = false, .bound = 120 };
	struct sdc_regfault_result r;
	json_t *rep = NULL;
	char name[2 * SDC_NAME_MAX + 16];
	snprintf(name, sizeof(name), "%.23s-%.23s-reference", t->probe, t->variant);
	if (run_child(c, t, name, 60, &s, &r, &rep))
		return -1;
	const char *why = NULL;
	json_t *res = result_at(rep, c->device);
	const char *d = rep ? work_digest(rep, t->probe, c->device) : "";
	if (!rep)
		why = "it wrote no report";
	else if (strcmp(sdc_json_str(json_object_get(rep, "verdict"), "status"), "OK"))
		why = "its verdict is not OK";
	else if (!res || json_integer_value(json_object_get(res, "iterations")) != ITERATIONS || !*d)
		why = "the faulted CPU's worker did not do 16 iterations, or left no work digest (ecparity: no state digest)";
	else if (strcmp(t->probe, "ecparity") && strcmp(d, work_digest(rep, t->probe, c->other)))
		why = "its two CPUs' work digests differ";
	else if (r.nlengths < ITERATIONS - 1)
		why = "the injector did not see the worker's iterations start";
	if (why) {
		sdc_error("campaign cpu-faults: %s/%s: the unfaulted run (%s/%s.log) cannot serve: %s", t->probe, t->variant,
			  c->dir, name, why);
		json_decref(rep);
		return -1;
	}
	if (!r.no_aslr)
		sdc_note("%s/%s: address-space randomisation could not be turned off in the child: a flipped pointer "
			 "lands elsewhere each run", t->probe, t->variant);
	sdc_strlcpy(t->digest, d, sizeof(t->digest));
	memcpy(t->length, r.length, sizeof(t->length));
	t->ref_seconds = r.seconds;
	/* time enough for a slowed worker, then the hang timeout; the bound kills a run that outlives it */
	t->duration = SDC_MAX(4.0, 8 * r.seconds);
	t->bound = t->duration + c->o->hang_timeout + 5 + 2 * r.seconds;
	json_decref(rep);
	return 0;
}

/* ---- what became of a fault ---- */

static bool vote_kind(const char *kind)
{
	return !strcmp(kind, "device-disagreement") || !strncmp(kind, "golden-", 7) || !strncmp(kind, "rank-", 5);
}

/* From the findings: crash, hang, found, vote at the faulted CPU, or other (why), or -1: none. */
static int from_findings(const struct campaign *c, json_t *rep, char *why, size_t len)
{
	static const enum outcome rank[] = { O_CRASH, O_HANG, O_FOUND, O_VOTE, O_OTHER };
	int best = -1; /* index into rank */
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(rep, "findings"), i, f) {
		const char *cls = sdc_json_str(f, "class"), *kind = sdc_json_str(f, "kind"), *dev = sdc_json_str(f, "device");
		const bool here = !strcmp(dev, c->device);
		int k = 4;
		if (here && !strcmp(cls, "crash"))
			k = 0;
		else if (here && !strcmp(cls, "hang"))
			k = 1;
		else if (!strcmp(cls, "corruption") && vote_kind(kind))
			k = 3;
		else if (here && !strcmp(cls, "corruption"))
			k = 2;
		if (best >= 0 && k >= best)
			continue;
		best = k;
		if (k == 0)
			snprintf(why, len, "%s %s at %s", sdc_json_str(f, "signal"), sdc_json_str(f, "si_code"),
				 sdc_json_str(f, "ip"));
		else
			snprintf(why, len, "%s %s at %s: %.160s", cls, kind, dev, sdc_json_str(f, "detail"));
	}
	return best < 0 ? -1 : (int)rank[best];
}

static enum outcome classify(const struct campaign *c, const struct target *t, const struct sdc_regfault_result *r,
			     json_t *rep, char *why, size_t len)
{
	why[0] = '\0';
	if (r->killed) {
		snprintf(why, len, "still running at its bound (%.0f s): killed", t->bound);
		return O_OTHER;
	}
	if (!rep) {
		if (WIFSIGNALED(r->status))
			snprintf(why, len, "sdcscan died of %s with no report", strsignal(WTERMSIG(r->status)));
		else
			snprintf(why, len, "sdcscan exited %d with no report", WEXITSTATUS(r->status));
		return O_OTHER;
	}
	const int f = from_findings(c, rep, why, len);
	if (f >= 0)
		return (enum outcome)f;
	const char *verdict = sdc_json_str(json_object_get(rep, "verdict"), "status");
	if (strcmp(verdict, "OK")) {
		snprintf(why, len, "verdict %s with no finding: %.160s", verdict,
			 sdc_json_str(json_object_get(rep, "verdict"), "summary"));
		return O_OTHER;
	}
	json_t *res = result_at(rep, c->device);
	const json_int_t it = json_integer_value(json_object_get(res, "iterations"));
	if (it < ITERATIONS) {
		snprintf(why, len, "nothing reported; %s finished %" JSON_INTEGER_FORMAT " of %d iterations in %.0f s (slowed)",
			 c->device, it, ITERATIONS, t->duration);
		return O_OTHER;
	}
	const char *d = work_digest(rep, t->probe, c->device);
	if (!strcmp(d, t->digest))
		return O_MASKED;
	snprintf(why, len, "nothing reported, and the work digest is %.16s%s, not the unfaulted %.16s", *d ? d : "none",
		 *d ? "..." : "", t->digest);
	return O_MISSED;
}

/* ---- the faults ---- */

/* o gets add's members; add is let go. */
static void update_new(json_t *o, json_t *add)
{
	json_object_update(o, add);
	json_decref(add);
}

/* Fault attempt a of target t, drawn from the seed: class, register, bit, iteration, delay. */
static void draw(const struct campaign *c, const struct target *t, uint64_t a, struct sdc_regfault_spec *s)
{
	char pv[2 * SDC_NAME_MAX + 2];
	snprintf(pv, sizeof(pv), "%.23s/%.23s", t->probe, t->variant);
	const struct sdc_rng rng = sdc_rng_make(c->seed, SDC_RNG_PROBE_INJECT, 0, (unsigned)sdc_xxh64(pv, strlen(pv)),
						0xCF00);
	enum sdc_reg_class classes[SDC_REG_NCLASSES];
	int n = 0;
	for (int k = 0; k < SDC_REG_NCLASSES; k++)
		if (c->o->registers >> k & 1)
			classes[n++] = (enum sdc_reg_class)k;
	s->cls = classes[sdc_rng_below(&rng, a * 8, (uint64_t)n)];
	s->reg = (int)sdc_rng_below(&rng, a * 8 + 1, (uint64_t)sdc_regfault_nregs(s->cls));
	s->bit = (int)sdc_rng_below(&rng, a * 8 + 2, (uint64_t)sdc_regfault_width(s->cls));
	/* iterations 1 to 14: the first's setup and the last's end are left out, and the fault's
	 * iteration has a successor whose start measured its length */
	s->iteration = 1 + sdc_rng_below(&rng, a * 8 + 3, ITERATIONS - 2);
	s->delay = c->o->instant == INSTANT_START ? 0 : sdc_rng_uniform(&rng, a * 8 + 4) * t->length[s->iteration];
	s->settle = t->length[s->iteration];
	s->inject = true;
	s->bound = t->bound;
}

/* One fault: run, classify, count, record. -1: the injector failed. */
static int one_fault(struct campaign *c, struct target *t, uint64_t a)
{
	struct sdc_regfault_spec s = { 0 };
	struct sdc_regfault_result r;
	json_t *rep = NULL;
	char name[2 * SDC_NAME_MAX + 32], why[400];
	draw(c, t, a, &s);
	snprintf(name, sizeof(name), "%.23s-%.23s-%" PRIu64, t->probe, t->variant, a);
	if (run_child(c, t, name, t->duration, &s, &r, &rep))
		return -1;
	c->fault_seconds += r.seconds;
	c->fault_runs++;
	json_t *j = json_pack("{s:I, s:s, s:I, s:f}", "attempt", (json_int_t)a, "class", class_names[s.cls], "iteration",
			      (json_int_t)s.iteration, "delay_seconds", s.delay);
	if (!r.injected) {
		t->not_injected++;
		json_object_set_new(j, "outcome", json_string("not-injected"));
		json_object_set_new(j, "detail", json_string(r.not_injected));
		if (!c->quiet)
			fprintf(c->out, "  %s/%s #%" PRIu64 ": not injected: %s\n", t->probe, t->variant, a, r.not_injected);
	} else {
		const enum outcome o = classify(c, t, &r, rep, why, sizeof(why));
		t->counts[o]++;
		t->injected++;
		update_new(j, json_pack("{s:s, s:i, s:s, s:s, s:s, s:s, s:s, s:f}", "register", r.reg, "bit", s.bit,
						"at", r.at, "before", r.before, "after", r.after, "outcome", outcome_keys[o],
						"detail", why, "seconds", r.seconds));
		if (!c->quiet)
			fprintf(c->out, "  %s/%s #%" PRIu64 ": %s bit %d, iteration %" PRIu64 " + %.2f ms, at %s: %s%s%s\n",
				t->probe, t->variant, a, r.reg, s.bit, s.iteration, s.delay * 1e3, r.at,
				o == O_MISSED ? "MISSED" : outcome_heads[o], *why ? ": " : "", why);
	}
	json_array_append_new(t->faults, j);
	json_decref(rep);
	return 0;
}

/* ---- the table ---- */

static void print_row(FILE *out, const char *name, uint64_t injected, const uint64_t *counts)
{
	fprintf(out, "%-22s %6" PRIu64, name, injected);
	for (int o = 0; o < O_N; o++)
		fprintf(out, " %9" PRIu64, counts[o]);
	fprintf(out, "%s\n", counts[O_MISSED] ? "  MISSED" : "");
}

static void print_table(const struct campaign *c, const struct target *t, int n, const json_t *left_out)
{
	uint64_t total[O_N] = { 0 }, injected = 0, not_injected = 0;
	fprintf(c->out, "\n%-22s %6s", "probe/variant", "faults");
	for (int o = 0; o < O_N; o++)
		fprintf(c->out, " %9s", outcome_heads[o]);
	fputc('\n', c->out);
	for (int i = 0; i < n; i++) {
		char pv[2 * SDC_NAME_MAX + 2];
		snprintf(pv, sizeof(pv), "%.23s/%.23s", t[i].probe, t[i].variant);
		print_row(c->out, pv, t[i].injected, t[i].counts);
		for (int o = 0; o < O_N; o++)
			total[o] += t[i].counts[o];
		injected += t[i].injected;
		not_injected += t[i].not_injected;
	}
	print_row(c->out, "total", injected, total);
	size_t i;
	json_t *x;
	json_array_foreach(left_out, i, x)
		fprintf(c->out, "%s: left out: %s\n", sdc_json_str(x, "probe"), sdc_json_str(x, "why"));
	if (not_injected)
		fprintf(c->out, "%" PRIu64 " draws went in no fault (the thread ended first; see above) and were drawn again\n",
			not_injected);
	if (c->fault_runs)
		fprintf(c->out, "%" PRIu64 " faulted runs in %.0f s: %.2f s a fault here\n", c->fault_runs, c->fault_seconds,
			c->fault_seconds / (double)c->fault_runs);
}

static json_t *target_json(const struct target *t)
{
	json_t *j = json_pack("{s:s, s:s, s:I}", "probe", t->probe, "variant", t->variant, "faults", (json_int_t)t->injected);
	for (int o = 0; o < O_N; o++)
		json_object_set_new(j, outcome_keys[o], json_integer((json_int_t)t->counts[o]));
	json_object_set_new(j, "not_injected", json_integer((json_int_t)t->not_injected));
	json_object_set_new(j, "unfaulted_digest", json_string(t->digest));
	json_object_set_new(j, "reference_seconds", json_real(t->ref_seconds));
	json_object_set(j, "fault_list", t->faults);
	return j;
}

/* ---- the command ---- */

/* The two CPUs: the first two of --cpus, else of this process's affinity. -1: fewer than two. */
static int pick_cpus(const struct sdc_cli *cli, struct campaign *c)
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

static int make_dir(struct campaign *c)
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
static void remove_dir(const struct campaign *c)
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

static double mean_length(const struct target *t)
{
	double sum = 0;
	for (int i = 0; i < ITERATIONS - 1; i++)
		sum += t->length[i];
	return sum / (ITERATIONS - 1);
}

/* Every variant: its unfaulted run, then faults until o->faults went in (or half as many more draws). */
static int campaign_targets(struct campaign *c, struct target *t, int n)
{
	for (int i = 0; i < n; i++) {
		if (atomic_load(&sdc_stop_requested))
			return -1;
		if (reference(c, &t[i]))
			return -1;
		if (!c->quiet)
			fprintf(c->out, "%s/%s: unfaulted run %.2f s, iterations of %.2f ms, work digest %.16s...\n",
				t[i].probe, t[i].variant, t[i].ref_seconds,
				mean_length(&t[i]) * 1e3, t[i].digest);
		const uint64_t want = (uint64_t)c->o->faults, most = want + want / 2 + 2;
		for (uint64_t a = 0; t[i].injected < want && a < most; a++) {
			if (atomic_load(&sdc_stop_requested))
				return -1;
			if (one_fault(c, &t[i], a))
				return -1;
		}
		fflush(c->out);
	}
	return 0;
}

static int cpu_faults_main(struct sdc_cmd *cmd)
{
	const struct cc_opts *o = cmd->opts;
	struct sdc_cli *cli = &cmd->cli;
	const bool to_stdout = cli->json && !strcmp(cli->json, "-");
	struct campaign c = { .o = o, .seed = cli->have_seed ? cli->seed : 1, .out = to_stdout ? stderr : stdout,
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
	static struct target t[MAX_TARGETS];
	int n = 0;
	json_t *left_out = json_array(), *out = json_object();
	if (select_targets(&c, t, &n, left_out) || make_dir(&c)) {
		json_decref(left_out), json_decref(out);
		return sdc_cli_unknown(cli);
	}
	sdc_stop_install_signals();
	char classes[32];
	snprintf(classes, sizeof(classes), "%s%s%s", o->registers & 1 ? "gpr" : "", o->registers == 3 ? "," : "",
		 o->registers & 2 ? "vector" : "");
	if (!c.quiet)
		fprintf(c.out,
			"sdcscan campaign cpu-faults: seed %" PRIu64 ", %" PRId64 " faults a variant (%s registers, at %s), "
			"CPUs %s: the faults go on %s's worker\n",
			c.seed, o->faults, classes, o->instant == INSTANT_START ? "an iteration's start" : "a random instant",
			c.cpus, c.device);
	for (int i = 0; i < n; i++)
		t[i].faults = json_array();
	const int rc = campaign_targets(&c, t, n);
	if (!c.quiet)
		print_table(&c, t, n, left_out);
	uint64_t missed = 0;
	json_t *vs = json_array();
	for (int i = 0; i < n; i++) {
		missed += t[i].counts[O_MISSED];
		json_array_append_new(vs, target_json(&t[i]));
		json_decref(t[i].faults);
	}
	update_new(out, json_pack("{s:I, s:I, s:s, s:s, s:s, s:s, s:o, s:o, s:I, s:f}", "seed",
					  (json_int_t)c.seed, "faults_per_variant", (json_int_t)o->faults, "registers",
					  classes, "instant", instant_names[o->instant], "cpus", c.cpus, "faulted_device",
					  c.device, "variants", vs, "left_out", left_out, "missed", (json_int_t)missed,
					  "seconds_per_fault", c.fault_runs ? c.fault_seconds / (double)c.fault_runs : 0.0));
	enum sdc_verdict v = missed ? SDC_CRITICAL : rc ? SDC_UNKNOWN : SDC_OK;
	json_object_set_new(out, "status", json_string(sdc_verdict_name(v)));
	/* (-q: the verdict line alone, which then says how many and where to look) */
	if (missed)
		fprintf(c.out, "%sCRITICAL: %" PRIu64 " fault%s changed the work and nothing reported %s (%s)\n",
			c.quiet ? "" : "\n", missed, missed == 1 ? "" : "s", missed == 1 ? "it" : "them",
			c.quiet ? "which: without -q, or in --json" : "MISSED above");
	else
		fprintf(c.out, "%s%s\n", c.quiet ? "" : "\n",
			rc ? (c.quiet ? "UNKNOWN: the campaign could not run to its end (why: without -q)"
				      : "UNKNOWN: the campaign could not run to its end (see above)")
			   : "OK: no fault was missed");
	if (cli->json && sdc_cli_write_json(cli->json, out, cli->command))
		v = sdc_verdict_worst(v, SDC_UNKNOWN);
	if (o->html && sdc_campaign_html(o->html, "cpu-faults", sdc_facts_of(out)))
		v = sdc_verdict_worst(v, SDC_UNKNOWN);
	json_decref(out);
	remove_dir(&c);
	return sdc_exit_code(v, cli->exit_style);
}

#define OPT(f) offsetof(struct cc_opts, f)
static const struct sdc_option cc_options[] = {
	{ .name = "faults", .short_name = 'n', .metavar = "N", .type = SDC_OPT_INT, .offset = OPT(faults), .def = "5",
	  .imin = 1, .imax = 100000, .help = "faults injected per variant" },
	{ .name = "registers", .short_name = 'r', .metavar = "LIST", .type = SDC_OPT_SET, .offset = OPT(registers),
	  .choices = class_names, .def = "gpr,vector",
	  .help = "register classes: gpr (rax..r15, rip), vector (xmm/ymm/zmm, as wide as the CPU has them)" },
	{ .name = "variants", .short_name = 'V', .metavar = "LIST", .type = SDC_OPT_STRING, .offset = OPT(variants),
	  .def = "all", .help = "probes or probe/variant, comma-separated (all: every CPU variant that runs on one host)" },
	{ .name = "hang-timeout", .short_name = 'H', .metavar = "SECONDS", .type = SDC_OPT_DOUBLE,
	  .offset = OPT(hang_timeout), .def = "2", .dmin = 1, .dmax = 600,
	  .help = "the runs' hang_timeout: a worker without progress this long is named hung" },
	{ .name = "instant", .short_name = 'i', .metavar = "WHEN", .type = SDC_OPT_ENUM, .offset = OPT(instant),
	  .choices = instant_names, .def = "random",
	  .help = "random: a moment of the drawn iteration, in wall-clock time (where it lands varies a little "
		  "from run to run); start: the iteration's start, where the probe's loop holds its live values "
		  "(the same seed gives the same table)" },
	{ .name = "keep", .short_name = 'k', .metavar = "DIR", .type = SDC_OPT_ARG, .offset = OPT(keep),
	  .help = "keep every run's report and log in DIR (default: a temporary folder, removed)" },
	{ .name = "html", .metavar = "FILE", .type = SDC_OPT_ARG, .offset = OPT(html),
	  .help = "the table as charts (by variant, bit and register) in one self-contained HTML page" },
	SDC_OPT_END,
};

static void cc_help(FILE *out)
{
	fprintf(out,
		"sdcscan runs itself as a child (sdcscan run --variant P/V on the first two CPUs, 16 iterations, small\n"
		"sizes), once unfaulted, then once a fault: through ptrace, a hardware breakpoint stops the second\n"
		"CPU's worker at the start of an iteration, and after a delay (--instant random) or there (start) one\n"
		"bit of one register is flipped; iteration, delay, register and bit come from the seed. Columns:\n"
		"faults injected; masked (nothing reported, the unfaulted run's work digest); found+loc (the probe's\n"
		"own checks, at that CPU); vote/gold (only the vote across CPUs or a golden); crash, hang (named at\n"
		"that CPU); other (said in the fault's line); missed (a different work digest and nothing reported:\n"
		"must be 0). A fault takes about one run of the variant, 0.2-0.8 s on a 2-core VM: 300 faults of a\n"
		"probe take a few minutes, well within the admit profile's 30; the default 5 a variant, under a\n"
		"minute. allreduce needs MPI ranks: left out. Needs ptrace of its own child (Yama ptrace_scope 0-1,\n"
		"or 2 with CAP_SYS_PTRACE; no seccomp filter refusing ptrace). Exit 0 none missed, 2 a fault missed,\n"
		"3 it could not run.\n");
}

const struct sdc_command sdc_command_campaign_cpu = {
	.name = "cpu-faults",
	.summary = "flip register bits in a burning worker (ptrace) and table what each probe made of them; "
		   "exit 0 none missed, 2 a fault missed",
	.options = cc_options,
	.opts_size = sizeof(struct cc_opts),
	.common = SDC_CF_CPUS | SDC_CF_SEED | SDC_CF_JSON | SDC_CF_QUIET | SDC_CF_EXIT,
	.help = cc_help,
	.fn = cpu_faults_main,
};
