/* sdcscan run: the probes of a profile on every selected device, one verdict. */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include <jansson.h>

#include "commands/commands.h"
#include "runner/export.h"
#include "runner/fleet_vote.h"
#include "runner/history.h"
#include "runner/output.h"
#include "runner/plan.h"
#include "runner/profile.h"
#include "runner/registry.h"
#include "runner/report.h"
#include "runner/report_read.h"
#include "runner/runner.h"
#include "runner/state.h"
#include "inject/fatal.h"
#include "mpi/transport.h"
#include "runner/idle.h"
#include "base/message.h"
#include "base/parse.h"
#include "base/clock.h"
#include "base/files.h"

struct run_opts {
	const char *profile, *variant;
	struct sdc_arglist probes, sets, inject;
	double duration;
	int64_t expect_gpus;
	const char *state_dir, *prom, *junit;
	bool no_state, if_idle;
	double wait;
};

static int parse_wait(const char *value, void *field, char *err, size_t errlen)
{
	double v;
	if (!sdc_parse_double(value, &v) || !(v >= 0) || v > 7 * 86400) {
		snprintf(err, errlen, "seconds, from 0 to 604800");
		return -1;
	}
	memcpy(field, &v, sizeof(v));
	return 0;
}

static int parse_duration(const char *value, void *field, char *err, size_t errlen)
{
	double v;
	if (!sdc_parse_double(value, &v) || !(v > 0) || v > 7 * 86400) {
		snprintf(err, errlen, "seconds, more than 0 and at most 604800");
		return -1;
	}
	memcpy(field, &v, sizeof(v));
	return 0;
}

#define OPT(f) offsetof(struct run_opts, f)
static const struct sdc_option run_options[] = {
	{ .name = "profile", .short_name = 'p', .metavar = "NAME|FILE", .type = SDC_OPT_ARG, .offset = OPT(profile),
	  .def = SDC_DEFAULT_PROFILE, .help = "built-in profile name or YAML file" },
	{ .name = "probe", .short_name = 'P', .metavar = "NAME", .type = SDC_OPT_LIST, .offset = OPT(probes),
	  .help = "run only this probe (repeatable); options from the profile" },
	{ .name = "set", .short_name = 's', .metavar = "PROBE.KEY=VAL", .type = SDC_OPT_LIST, .offset = OPT(sets),
	  .help = "set a probe option (repeatable), e.g. --set gemm.m=512" },
	{ .name = "duration", .short_name = 'd', .metavar = "SECONDS", .type = SDC_OPT_CUSTOM, .offset = OPT(duration),
	  .parse = parse_duration, .help = "total run time, shared by the probes in the profile's ratio" },
	{ .name = "variant", .metavar = "PROBE/VARIANT", .type = SDC_OPT_ARG, .offset = OPT(variant),
	  .help = "run only this variant of one probe (a finding's replay uses it)" },
	{ .name = "inject", .short_name = 'i', .metavar = "SPEC", .type = SDC_OPT_LIST, .offset = OPT(inject),
	  .help = "inject faults: PROBE[/VARIANT]:TARGET[:KEY=VAL,...] (repeatable)" },
	{ .name = "expect-gpus", .metavar = "N", .type = SDC_OPT_INT, .offset = OPT(expect_gpus), .def = "-1", .imin = -1,
	  .imax = 64, .help = "GPUs this host should have; fewer found is WARNING (-1: the profile's expect_gpus)" },
	{ .name = "state-dir", .metavar = "DIR", .type = SDC_OPT_ARG, .offset = OPT(state_dir),
	  .help = "where the run's report (last.json) and lock are kept (default: $SDCSCAN_STATE_DIR, else "
		  SDC_STATE_DIR_DEFAULT ")" },
	{ .name = "if-idle", .type = SDC_OPT_FLAG, .offset = OPT(if_idle),
	  .help = "burn only if the node is idle: not when Slurm has a job on it, its GPUs run another job's processes, "
		  "or its CPUs are over 25% busy; a busy node's run is recorded as skipped, with why (UNKNOWN), and "
		  "the node's state is left as it was" },
	{ .name = "no-state", .type = SDC_OPT_FLAG, .offset = OPT(no_state),
	  .help = "keep no state: no saved report for sdcscan status, no lock (another run may overlap)" },
	{ .name = "wait", .metavar = "SECONDS", .type = SDC_OPT_CUSTOM, .offset = OPT(wait), .parse = parse_wait,
	  .def = "0", .help = "wait this long for another run that holds the host's lock (0: exit UNKNOWN at once)" },
	{ .name = "prom", .metavar = "FILE", .type = SDC_OPT_ARG, .offset = OPT(prom),
	  .help = "also write Prometheus metrics (node_exporter's textfile collector: DIR/sdcscan.prom)" },
	{ .name = "junit", .metavar = "FILE", .type = SDC_OPT_ARG, .offset = OPT(junit),
	  .help = "also write a JUnit XML report (one testcase per probe and device)" },
	SDC_OPT_END,
};

static void run_help(FILE *out)
{
	fprintf(out, "Probe options (also the keys of a profile's probe section):\n");
	for (int i = 0; sdc_probes[i]; i++) {
		fprintf(out, " %s:\n", sdc_probes[i]->name);
		sdc_opt_print_help(sdc_common_options, "", out);
		sdc_opt_print_help(sdc_probes[i]->options, "", out);
	}
	fprintf(out, "\nInject keys: device (a logical CPU: 3 or cpu3; a GPU: gpu0), iter, row, col, bit, count, every, "
		     "rate, rank (under MPI), tensor (minitrain).\n");
	for (int i = 0; sdc_probes[i]; i++)
		for (int t = 0; sdc_probes[i]->inject_targets && sdc_probes[i]->inject_targets[t]; t++)
			fprintf(out, "  %s target %s\n", sdc_probes[i]->name, sdc_probes[i]->inject_targets[t]);
	fprintf(out, "Every probe also takes faults that kill or hang its worker, met in its loop on the device asked:\n");
	for (int t = 0; sdc_fatal_targets[t]; t++)
		fprintf(out, "  any target %s\n", sdc_fatal_targets[t]);
}

/* Keeps only the probes named by --probe, taking each one's options from the profile. */
static int select_probes(struct sdc_cli *cli, struct sdc_plan *plan, const struct sdc_arglist *names)
{
	struct sdc_plan sel = *plan;
	bool from_profile[SDC_PLAN_MAX] = { false }, used[SDC_PLAN_MAX] = { false };
	sel.n = 0;
	for (int i = 0; i < names->n; i++) {
		const struct sdc_probe *p = sdc_probe_find(names->v[i]);
		char all[256];
		if (!p) {
			sdc_probe_names(all, sizeof(all));
			sdc_cli_bad(cli, "--probe '%s': unknown probe (valid probes: %s)", names->v[i], all);
			goto out_fail;
		}
		for (int k = 0; k < sel.n; k++) {
			if (sel.entries[k].probe == p) {
				sdc_cli_bad(cli, "--probe '%s' given twice", names->v[i]);
				goto out_fail;
			}
		}
		int found = -1;
		for (int k = 0; k < plan->n; k++)
			if (plan->entries[k].probe == p)
				found = k;
		if (found >= 0) {
			from_profile[sel.n] = true;
			sel.entries[sel.n++] = plan->entries[found];
			used[found] = true;
		} else if (!sdc_plan_add(&sel, p)) {
			sdc_error("out of memory");
			goto out_fail;
		}
	}
	for (int k = 0; k < plan->n; k++)
		if (!used[k])
			free(plan->entries[k].opts);
	*plan = sel;
	return 0;
out_fail:
	for (int k = 0; k < sel.n; k++)
		if (!from_profile[k])
			free(sel.entries[k].opts);
	return -1;
}

/* --variant: the probe's options (profile and --set applied) must give that variant. */
static int check_variant(struct sdc_cli *cli, struct sdc_plan_entry *e, const char *variant)
{
	struct sdc_variant v[SDC_VARIANTS_MAX];
	const int nv = e->probe->variants ? e->probe->variants(e->opts, v, SDC_VARIANTS_MAX) : 0;
	char names[512] = "";
	for (int i = 0; i < nv; i++) {
		if (!strcmp(v[i].name, variant)) {
			sdc_strlcpy(e->only_variant, variant, sizeof(e->only_variant));
			return 0;
		}
		const size_t used = strlen(names);
		snprintf(names + used, sizeof(names) - used, "%s%.64s", i ? ", " : "", v[i].name);
	}
	sdc_cli_bad(cli, "--variant %s/%s: the probe's options give no such variant (they give: %s)", e->probe->name,
		    variant, nv > 0 ? names : "none");
	return -1;
}

/* Fewer GPUs than the host should have (a GPU fallen off the bus, a driver that lost one) is WARNING. */
static void check_gpu_count(struct sdc_run *run, int expected)
{
	int found = 0;
	for (int d = 0; d < run->ndevices; d++)
		found += run->devices[d].kind == SDC_DEVICE_GPU;
	if (found >= expected)
		return;
	struct sdc_finding f = { .cls = SDC_FINDING_DEGRADED, .device = -1, .row = -1, .col = -1 };
	sdc_strlcpy(f.probe, "health", sizeof(f.probe));
	sdc_strlcpy(f.kind, "gpu-missing", sizeof(f.kind));
	sdc_strlcpy(f.operation, "GPU count", sizeof(f.operation));
	snprintf(f.detail, sizeof(f.detail), "%d GPU%s missing: expected %d, found %d%s%s", expected - found,
		 expected - found == 1 ? " is" : "s are", expected, found, run->gpu_note[0] ? " (" : "",
		 run->gpu_note[0] ? run->gpu_note : "");
	if (run->gpu_note[0])
		sdc_strlcpy(f.detail + strlen(f.detail), ")", sizeof(f.detail) - strlen(f.detail));
	sdc_run_add_finding(run, &f);
}

/* The report if asked, the verdict line, the exit code. Under MPI rank 0 gathers and votes, every
 * rank takes the worst verdict of all, and rank 0 writes one report for the job. */
/* Where the run's outputs go: --json, the state directory's last.json, --prom, --junit. */
struct run_outputs {
	const char *state; /* the state directory, or NULL (--no-state, or a rank other than 0) */
	const char *prom, *junit;
	enum sdc_run_kind kind; /* what the run is, for the node's state (runner/history.h) */
	int clear_after;        /* the profile's clear_after_clean_runs */
	char warning[600];      /* the --prom folder is missing: no metrics, the scan goes on (run.warnings) */
	struct sdc_node_state node; /* the node's state after the run, where node_saved */
	bool node_saved;
};

/* A --prom FILE whose folder does not exist (node_exporter's textfile folder where only Debian's
 * prometheus is installed) must not stop the scan: 1 with the warning in why, else 0. A folder
 * that exists but cannot be written stays an error (sdc_output_path). */
static int prom_folder_missing(const char *prom, char *why, size_t len)
{
	char d[4096];
	struct stat st;
	sdc_strlcpy(d, prom, sizeof(d));
	const char *dn = dirname(d);
	if (!stat(dn, &st) || errno != ENOENT)
		return 0;
	snprintf(why, len, "--prom %.250s: the folder %.250s does not exist (node_exporter not installed?): no metrics "
		 "written", prom, dn);
	return 1;
}

/* Writes the report's forms; false when one could not be written (said on stderr). */
static bool write_outputs(json_t *report, const struct sdc_cli *cli, struct run_outputs *ro, enum sdc_verdict v)
{
	bool ok = true;
	char err[1024], path[4096];
	const double end = sdc_report_end_time(report);
	/* into history and the node's state first: every form of the report then says what the run
	 * was (run.kind, run.sequence) and what the node's state became (node) */
	struct sdc_node_state *st = &ro->node;
	if (ro->warning[0])
		json_object_set_new(json_object_get(report, "run"), "warnings", json_pack("[s]", ro->warning));
	if (ro->state && sdc_node_record(ro->state, report, ro->kind, v,
					 sdc_json_str(json_object_get(report, "verdict"), "summary"), end, ro->clear_after,
					 st, err, sizeof(err))) {
		sdc_error("state: %s", err);
		ok = false;
	}
	ro->node_saved = ro->state && json_object_get(report, "node");
	if (cli->json)
		ok &= !sdc_report_write(report, cli->json);
	/* freshness and the last OK are full scheduled runs' alone (a replay or a partial run says
	 * nothing of the node as a whole) */
	const bool full = ro->kind == SDC_RUN_SCHEDULED;
	double last_success = full && v == SDC_OK ? end : 0, last_full = full && v != SDC_UNKNOWN ? end : 0;
	if (ro->state) {
		const bool saved = !sdc_state_path(ro->state, "last.json", path, sizeof(path)) && !sdc_report_write(report, path);
		if (saved)
			sdc_state_clear_start(ro->state);
		ok &= saved;
		last_full = ro->node_saved ? st->last_scheduled_end : last_full;
		if (!last_success)
			last_success = sdc_state_last_success(ro->state);
		else if (sdc_state_save_success(ro->state, last_success, err, sizeof(err))) {
			sdc_error("state: %s", err);
			ok = false;
		}
	}
	if (ro->prom && sdc_export_prom(report, last_success, last_full, ro->prom, err, sizeof(err))) {
		sdc_error("--prom: %s", err);
		ok = false;
	}
	if (ro->junit && sdc_export_junit(report, ro->junit, err, sizeof(err))) {
		sdc_error("--junit: %s", err);
		ok = false;
	}
	return ok;
}

/* A run on a node whose CRITICAL stands says so after its own verdict: it does not make the
 * node OK (its exit code is its own verdict, as every run's). The first says where the state is. */
static void node_stays(struct sdc_output *out, const struct run_outputs *ro, enum sdc_verdict v)
{
	const struct sdc_node_state *n = &ro->node;
	if (ro->node_saved && n->sequence == 1) /* the first run on a node says where its verdict lives */
		sdc_print_line(out->fp, "node: its state is kept in %s (`sdcscan status` reads it there)", ro->state);
	if (!ro->node_saved || n->verdict != SDC_CRITICAL || (v == SDC_CRITICAL && n->set_by == n->sequence))
		return;
	char since[40], how[96] = "";
	sdc_format_utc(n->since, since, sizeof(since));
	if (ro->clear_after > 0)
		snprintf(how, sizeof(how), ", or %d clean full scheduled runs in a row (%d so far)", ro->clear_after,
			 n->clean_runs);
	sdc_print_line(out->fp, "node: stays CRITICAL since %s (run %llu: %.200s): until `sdcscan clear --reason ...`%s",
		       since, (unsigned long long)n->set_by, n->summary, how);
}

/* The report if asked, the verdict line, the exit code. Under MPI rank 0 gathers and votes, every
 * rank takes the worst verdict of all, and rank 0 writes one report for the job. */
static int finish(struct sdc_cli *cli, struct sdc_run *run, const struct sdc_plan *plan, struct sdc_output *out,
		  struct run_outputs *ro)
{
	const int before = run->nfindings;
	const enum sdc_verdict local = sdc_run_verdict(run);
	const enum sdc_verdict v = sdc_fleet_finish(run, local, &run->fleet);
	enum sdc_verdict final = v;
	sdc_output_fleet_ranks(out, run->fleet);
	if (!out->quiet)
		for (int i = before; i < run->nfindings; i++)
			sdc_print_line(out->fp, "fleet: %s: %s", run->findings[i].kind, run->findings[i].detail);
	int code = sdc_exit_code(v, cli->exit_style);
	bool written = true;
	if ((cli->json || ro->state || ro->prom || ro->junit) && sdc_mpi.rank == 0) {
		json_t *report = sdc_report_build(run, plan, v, code, NULL);
		written = report && write_outputs(report, cli, ro, v);
		json_decref(report);
		if (!written) {
			final = sdc_verdict_worst(v, SDC_UNKNOWN);
			code = sdc_exit_code(final, cli->exit_style);
		}
	}
	/* What the probes found, whatever became of the report; a report not written said apart. */
	sdc_output_verdict(out, run, v, written && cli->json && strcmp(cli->json, "-") ? cli->json : NULL);
	if (!written)
		fprintf(out->fp, "%s: the report or its state, metrics or JUnit were not all written (see the error "
				 "above)%s%s\n",
			sdc_verdict_name(final), ro->node_saved ? "; the node's state was saved: " : "",
			ro->node_saved ? sdc_verdict_name(ro->node.verdict) : "");
	node_stays(out, ro, v);
	return code;
}

/* A run --if-idle found the node busy: its report (a finding saying why: UNKNOWN), kept as
 * skipped, which never changes the node's state. */
static int skip_busy(struct sdc_cli *cli, struct sdc_run *run, const struct sdc_plan *plan, struct run_outputs *ro,
		     const char *busy, const char *checked)
{
	struct sdc_finding f = { .cls = SDC_FINDING_ERROR, .device = -1, .row = -1, .col = -1 };
	sdc_strlcpy(f.kind, "skipped-busy", sizeof(f.kind));
	snprintf(f.detail, sizeof(f.detail), "skipped, the node is busy: %.290s", busy);
	sdc_run_add_finding(run, &f);
	json_object_set_new(run->environment, "idle", json_pack("{s:s, s:s}", "busy", busy, "checked", checked));
	struct sdc_output out;
	sdc_output_init(&out, cli->json && !strcmp(cli->json, "-"), cli->quiet, cli->no_color, true);
	run->end_mono = sdc_now();
	ro->kind = SDC_RUN_SKIPPED;
	ro->clear_after = plan->clear_after;
	return finish(cli, run, plan, &out, ro);
}

/* The plan: the profile with --probe, --variant, --set and --duration applied. 0, or -1 after
 * saying why. */
static int plan_from_options(struct sdc_cli *cli, const struct run_opts *o, struct sdc_plan *plan)
{
	char err[1024];
	if (sdc_profile_load(o->profile, plan, err, sizeof(err))) {
		sdc_print_line(stderr, "sdcscan run: %s", err);
		return -1;
	}
	struct sdc_arglist only = { 0 };
	char only_probe[SDC_NAME_MAX] = "";
	const char *only_variant = NULL;
	if (o->variant) {
		const char *slash = strchr(o->variant, '/');
		if (!slash || slash == o->variant || !slash[1] || (size_t)(slash - o->variant) >= sizeof(only_probe)) {
			sdc_cli_bad(cli, "--variant '%s': expected PROBE/VARIANT, e.g. gemm/int8", o->variant);
			return -1;
		}
		memcpy(only_probe, o->variant, (size_t)(slash - o->variant));
		only_variant = slash + 1;
		const char *name = only_probe;
		only = (struct sdc_arglist){ .v = &name, .n = 1 };
		if (o->probes.n) {
			sdc_cli_bad(cli, "--variant names its probe: give it without --probe");
			return -1;
		}
		if (select_probes(cli, plan, &only))
			return -1;
	}
	if (o->probes.n && select_probes(cli, plan, &o->probes))
		return -1;
	for (int i = 0; i < o->sets.n; i++)
		if (sdc_plan_set(plan, o->sets.v[i]))
			return -1;
	if (only_variant && check_variant(cli, &plan->entries[0], only_variant))
		return -1;
	if (o->duration > 0)
		sdc_plan_scale_duration(plan, o->duration);
	return 0;
}

/* State and the lock, before anything burns: a second run exits at once naming the first. Under
 * MPI the job is the scheduler's to serialise: rank 0 keeps the state, no rank takes the lock.
 * Then --prom's folder and the output paths. 0, or -1 after saying why. */
static int prepare_outputs(struct sdc_cli *cli, const struct run_opts *o, struct run_outputs *ro,
			   struct sdc_state_lock *lock)
{
	char err[1024];
	if (!o->no_state && sdc_mpi.rank == 0) {
		ro->state = sdc_state_dir(o->state_dir);
		if (sdc_state_prepare(ro->state, err, sizeof(err))) {
			sdc_print_line(stderr, "sdcscan run: %s", err);
			return -1;
		}
		/* the state files the run writes after the burn, checked before it (a link refused) */
		static const char *const saved[] = { "last.json", "state.json", "last-success" };
		for (size_t k = 0; k < sizeof(saved) / sizeof(saved[0]); k++) {
			char path[4096], real[4096];
			if (sdc_state_path(ro->state, saved[k], path, sizeof(path)) ||
			    sdc_output_path(path, real, sizeof(real), err, sizeof(err))) {
				sdc_print_line(stderr, "sdcscan run: state: %s", err);
				return -1;
			}
		}
		if (!sdc_mpi.active && sdc_state_lock(ro->state, o->wait, "sdcscan run", lock, err, sizeof(err))) {
			sdc_print_line(stderr, "sdcscan run: %s", err);
			return -1;
		}
		/* a node state nothing can read or rebuild is refused before anything burns: never a
		 * silent start anew over a CRITICAL */
		struct sdc_node_state ns;
		if (sdc_node_read(ro->state, &ns, err, sizeof(err)) < 0) {
			sdc_print_line(stderr, "sdcscan run: state: %s", err);
			return -1;
		}
	}
	if (o->prom && sdc_mpi.rank == 0 && prom_folder_missing(o->prom, ro->warning, sizeof(ro->warning))) {
		sdc_print_line(stderr, "sdcscan run: warning: %s", ro->warning);
		ro->prom = NULL;
	}
	for (int k = 0; k < 2; k++) {
		const char *p = k ? o->junit : ro->prom;
		char path[4096];
		if (p && sdc_mpi.rank == 0 && sdc_output_path(p, path, sizeof(path), err, sizeof(err))) {
			sdc_cli_bad(cli, "--%s: %s", k ? "junit" : "prom", err);
			return -1;
		}
	}
	return 0;
}

static int run_main(struct sdc_cmd *c)
{
	struct run_opts *o = c->opts;
	struct sdc_cli *cli = &c->cli;
	struct sdc_plan plan = { 0 };
	struct sdc_run run;
	struct sdc_state_lock lock = { .fd = -1 };
	bool run_inited = false;
	int rc = sdc_cli_unknown(cli);
	struct sdc_inject_spec *inject = calloc((size_t)o->inject.n + 1, sizeof(*inject));
	char err[1024];
	if (!inject) {
		sdc_error("out of memory");
		return rc;
	}
	for (int i = 0; i < o->inject.n; i++) {
		if (sdc_inject_parse(o->inject.v[i], &inject[i], err, sizeof(err))) {
			rc = sdc_cli_bad(cli, "--inject: %s", err);
			goto out;
		}
	}
	struct run_outputs ro = { .prom = o->prom, .junit = o->junit };
	if (plan_from_options(cli, o, &plan) || prepare_outputs(cli, o, &ro, &lock))
		goto out;

	if (sdc_cli_start_run(c, &run, cli->have_seed ? cli->seed : sdc_plan_seed(&plan, sdc_wall_now())))
		goto out;
	run_inited = true;
	sdc_strlcpy(run.profile, plan.name, sizeof(run.profile));
	sdc_strlcpy(run.profile_source, plan.source, sizeof(run.profile_source));
	run.inject = inject;
	run.ninject = o->inject.n;
	inject = NULL; /* owned by run now */
	if (sdc_runner_check_injections(&run, &plan))
		goto out;
	check_gpu_count(&run, o->expect_gpus >= 0 ? (int)o->expect_gpus : plan.expect_gpus);

	/* a busy node is not burned: the run is kept as skipped, with why (--if-idle) */
	if (o->if_idle && sdc_mpi.active) {
		rc = sdc_cli_bad(cli, "--if-idle: not under mpirun or srun (a job's ranks are the node's work)");
		goto out;
	}
	char busy[512] = "", checked[1024] = "";
	if (o->if_idle && sdc_host_busy(&run, busy, sizeof(busy), checked, sizeof(checked))) {
		rc = skip_busy(cli, &run, &plan, &ro, busy, checked);
		goto out;
	}
	/* (before the start record and the header: a signal after either ends the run as interrupted,
	 * never as one that died without a verdict) */
	sdc_stop_install_signals();
	/* before anything burns: a run that dies anyway leaves this, and status says so */
	if (ro.state && sdc_state_save_start(ro.state, plan.name, err, sizeof(err))) {
		sdc_print_line(stderr, "sdcscan run: state: %s", err);
		goto out;
	}
	struct sdc_output out;
	sdc_output_init(&out, cli->json && !strcmp(cli->json, "-"), cli->quiet, cli->no_color, sdc_mpi.rank == 0);
	sdc_output_header(&out, &run, &plan);
	if (sdc_runner_execute(&run, &plan, &out))
		goto out;
	run.end_mono = sdc_now();
	ro.clear_after = plan.clear_after;
	ro.kind = run.ninject ? SDC_RUN_INJECTED
		  : run.interrupted ? SDC_RUN_INTERRUPTED
		  : o->variant	    ? SDC_RUN_VARIANT
		  : o->probes.n || o->sets.n || o->duration > 0 || cli->have_cpus || cli->have_gpus ? SDC_RUN_PARTIAL
												    : SDC_RUN_SCHEDULED;
	rc = finish(cli, &run, &plan, &out, &ro);
out:
	sdc_state_unlock(&lock);
	if (run_inited)
		sdc_run_release(&run);
	sdc_plan_release(&plan);
	free(inject);
	return rc;
}

const struct sdc_command sdc_command_run = {
	.name = "run",
	.summary = "run the probes of a profile on every selected CPU and GPU and give a verdict",
	.options = run_options,
	.opts_size = sizeof(struct run_opts),
	.common = SDC_CF_CPUS | SDC_CF_GPUS | SDC_CF_SEED | SDC_CF_JSON | SDC_CF_REPORTING,
	.flags = SDC_CMD_JOINS_MPI | SDC_CMD_BURNS,
	.help = run_help,
	.fn = run_main,
};
