/*
 * sdcscan selftest: proves on this host that detection works. Every probe runs briefly with
 * the faults its descriptor lists injected at its real injection points; the test passes only
 * if each fault is found and located to the right device, element and bit, and nothing else
 * is reported (OpenDCDiag's selftest idea: tests that fail on purpose).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "registry.h"
#include "report.h"
#include "runner.h"
#include "util.h"

/* Iterations per device: faults are planned in the first eight (inject.h). */
#define SELFTEST_ITERATIONS 12

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sdcscan selftest [OPTIONS]\n"
		"Inject faults into every probe and check each one is detected and located.\n\n"
		"  -c, --cpus LIST          CPUs to test (default: all this process may use)\n"
		"  -S, --seed N             seed for data and fault placement (default 1)\n"
		"  -j, --json FILE|-        write the JSON report of the injected run\n"
		"  -e, --exit-codes STYLE   nagios or npd\n"
		"  -q, --quiet              print only the verdict line\n"
		"      --no-color           no colour\n"
		"  -h, --help               this help\n\n"
		"Exit status: 0 every fault found and located, 2 a fault missed or mislocated or a false\n"
		"alarm, 3 the selftest could not run.\n");
}

static int build_plan(struct sdc_plan *plan, struct sdc_run *run, int *expected)
{
	memset(plan, 0, sizeof(*plan));
	sdc_strlcpy(plan->name, "selftest", sizeof(plan->name));
	sdc_strlcpy(plan->source, "built-in", sizeof(plan->source));
	sdc_strlcpy(plan->description, "fault injection into every probe", sizeof(plan->description));
	plan->seed_mode = SDC_SEED_FIXED;
	plan->seed = 1;
	int nspecs = 0;
	for (int i = 0; sdc_probes[i]; i++)
		for (int f = 0; sdc_probes[i]->selftest_faults && sdc_probes[i]->selftest_faults[f]; f++)
			nspecs++;
	run->inject = calloc((size_t)nspecs + 1, sizeof(*run->inject));
	if (!run->inject)
		return -1;
	*expected = 0;
	for (int i = 0; sdc_probes[i]; i++) {
		const struct sdc_probe *p = sdc_probes[i];
		char why[256], err[1024];
		if (!p->selftest_faults || !sdc_probe_usable(p, why, sizeof(why)))
			continue;
		struct sdc_plan_entry *e = sdc_plan_add(plan, p);
		if (!e)
			return -1;
		e->common.duration = 60;
		e->common.iterations = SELFTEST_ITERATIONS;
		for (int k = 0; p->selftest_options && p->selftest_options[k]; k++) {
			char key[64];
			const char *eq = strchr(p->selftest_options[k], '=');
			snprintf(key, sizeof(key), "%.*s", (int)(eq - p->selftest_options[k]), p->selftest_options[k]);
			if (sdc_plan_entry_set(e, key, eq + 1, err, sizeof(err))) {
				sdc_error("internal: selftest option of %s: %s", p->name, err);
				return -1;
			}
		}
		for (int f = 0; p->selftest_faults[f]; f++) {
			struct sdc_inject_spec *s = &run->inject[run->ninject];
			if (sdc_inject_parse(p->selftest_faults[f], s, err, sizeof(err))) {
				sdc_error("internal: selftest fault of %s: %s", p->name, err);
				return -1;
			}
			run->ninject++;
			*expected += s->count;
		}
	}
	return 0;
}

static void describe(const struct sdc_run *run, const struct sdc_injection *in, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s %s iteration %" PRIu64 ": %s[%" PRId64 "][%" PRId64 "] bit %d", in->probe,
		 in->variant, run->devices[in->device].id, in->iteration, in->target, in->row, in->col, in->bit);
}

int sdc_cmd_selftest(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "cpus", required_argument, NULL, 'c' }, { "seed", required_argument, NULL, 'S' },
		{ "json", required_argument, NULL, 'j' }, { "exit-codes", required_argument, NULL, 'e' },
		{ "quiet", no_argument, NULL, 'q' },      { "no-color", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },       { NULL, 0, NULL, 0 },
	};
	struct sdc_cli cli = { .command = "selftest" };
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:S:j:e:qh", longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (sdc_cli_default(&cli, c, argv))
			return sdc_exit_code(SDC_UNKNOWN, cli.exit_style);
	}
	if (optind < argc)
		return sdc_cli_bad(&cli, "unexpected argument '%s'", argv[optind]);
	sdc_set_quiet(cli.quiet);

	struct sdc_plan plan;
	struct sdc_run run;
	int expected = 0, rc;
	if (sdc_cli_prepare_run(&cli, &run, &(struct sdc_plan){ .seed_mode = SDC_SEED_FIXED, .seed = 1 }, argc,
				argv))
		return sdc_exit_code(SDC_UNKNOWN, cli.exit_style);
	if (build_plan(&plan, &run, &expected) || sdc_runner_check_injections(&run, &plan)) {
		rc = sdc_exit_code(SDC_UNKNOWN, cli.exit_style);
		goto out;
	}

	struct sdc_output quiet_out, out;
	sdc_output_init(&quiet_out, false, true, true);
	sdc_output_init(&out, cli.json && !strcmp(cli.json, "-"), cli.quiet, cli.no_color);
	sdc_runner_install_signals();
	if (sdc_runner_execute(&run, &plan, &quiet_out)) {
		rc = sdc_exit_code(SDC_UNKNOWN, cli.exit_style);
		goto out;
	}
	run.end_mono = sdc_now();

	int located = 0, missed = 0, false_alarms = 0, errors = 0;
	char line[256];
	for (int i = 0; i < run.ninjections; i++) {
		const struct sdc_injection *in = &run.injections[i];
		bool ok = false;
		for (int k = 0; k < run.nfindings && !ok; k++)
			ok = sdc_finding_locates(&run.findings[k], in);
		ok ? located++ : missed++;
		describe(&run, in, line, sizeof(line));
		if (!cli.quiet || !ok)
			fprintf(out.fp, "selftest: %-60s %s\n", line, ok ? "found and located" : "MISSED");
	}
	for (int k = 0; k < run.nfindings; k++) {
		const struct sdc_finding *f = &run.findings[k];
		if (f->cls == SDC_FINDING_CORRUPTION && sdc_finding_explained(f, &run))
			continue;
		false_alarms++;
		fprintf(out.fp, "selftest: FALSE ALARM %s/%s %s iteration %" PRIu64 ": %s %s\n", f->probe, f->variant,
			f->device >= 0 ? run.devices[f->device].id : "host", f->iteration, f->kind, f->detail);
	}
	for (int r = 0; r < run.nresults; r++) {
		const struct sdc_result *res = &run.results[r];
		if (res->status == SDC_STATUS_ERROR || res->status == SDC_STATUS_NOT_RUN ||
		    res->status == SDC_STATUS_SKIPPED) {
			errors++;
			fprintf(out.fp, "selftest: could not test %s/%s on %s: %s\n", res->probe, res->variant,
				run.devices[res->device].id, res->error);
		}
	}

	enum sdc_verdict v;
	char summary[256];
	if (errors || run.interrupted || run.ninjections < expected) {
		v = SDC_UNKNOWN;
		snprintf(summary, sizeof(summary), "UNKNOWN: selftest could not run: %d of %d faults injected, %d errors%s",
			 run.ninjections, expected, errors, run.interrupted ? ", interrupted" : "");
	} else if (missed || false_alarms) {
		v = SDC_CRITICAL;
		snprintf(summary, sizeof(summary), "CRITICAL: selftest failed: %d of %d faults located, %d missed, %d false alarms",
			 located, run.ninjections, missed, false_alarms);
	} else {
		v = SDC_OK;
		snprintf(summary, sizeof(summary), "OK: selftest passed: %d of %d injected faults found and located, no false alarms",
			 located, run.ninjections);
	}
	rc = sdc_exit_code(v, cli.exit_style);
	if (cli.json) {
		json_t *report = sdc_report_build(&run, &plan, v, rc, summary);
		if (!report || sdc_report_write(report, cli.json))
			rc = sdc_exit_code(sdc_verdict_worst(v, SDC_UNKNOWN), cli.exit_style);
		json_decref(report);
	}
	fprintf(out.fp, "%s\n", summary);
out:
	sdc_plan_release(&plan);
	sdc_run_release(&run);
	return rc;
}
