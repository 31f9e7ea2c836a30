/*
 * sdcscan: find machines that compute wrong answers without crashing.
 * Subcommands: run, list, selftest, bench, version. See man/sdcscan.1.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands/cli.h"
#include "fleet.h"
#include "golden.h"
#include "core/profile.h"
#include "core/registry.h"
#include "core/report.h"
#include "core/runner.h"
#include "sdc_config.h"
#include "base/util.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sdcscan COMMAND [OPTIONS]\n"
		"Find CPUs and GPUs that compute wrong answers without crashing.\n\n"
		"Commands:\n"
		"  run        run the probes of a profile and give a verdict (default profile: %s)\n"
		"  list       list probes (and whether they can run here) and built-in profiles\n"
		"  selftest   inject faults into every probe and check that each is found and located\n"
		"  bench      measure the kernels against each other and the libraries, and ABFT's overhead\n"
		"  calibrate  measure e_max for the fast class's V-ABFT thresholds on this host\n"
		"  campaign   fault-injection campaigns: detection and false-positive tables\n"
		"  golden     record, verify and show golden results (what a known-good host computes)\n"
		"  version    print the version and the optional features built in\n\n"
		"Run 'sdcscan COMMAND --help' for the options of a command.\n"
		"Exit status: 0 OK, 1 WARNING, 2 CRITICAL (corruption found), 3 UNKNOWN (could not test).\n",
		SDC_DEFAULT_PROFILE);
}

/* ---- run ---- */

static void run_usage(FILE *out)
{
	fprintf(out,
		"Usage: sdcscan run [OPTIONS]\n"
		"Run the probes of a profile on every selected CPU and print a verdict.\n\n"
		"  -p, --profile NAME|FILE  built-in profile name or YAML file (default: %s)\n"
		"  -P, --probe NAME         run only this probe (repeatable); options from the profile\n"
		"  -s, --set PROBE.KEY=VAL  set a probe option (repeatable), e.g. --set gemm.m=512\n"
		"  -d, --duration SECONDS   total run time, shared by the probes in the profile's ratio\n"
		"  -S, --seed N             data seed (default: the profile's; every finding can be replayed)\n"
		"  -c, --cpus LIST          CPUs to burn, e.g. 0-3,8 (default: all this process may use)\n"
		"  -j, --json FILE|-        write the JSON report to FILE (atomically), or stdout\n"
		"  -i, --inject SPEC        inject faults: PROBE[/VARIANT]:TARGET[:KEY=VAL,...] (repeatable)\n"
		"  -e, --exit-codes STYLE   nagios (0 OK,1 WARNING,2 CRITICAL,3 UNKNOWN) or npd (0,1 problem,2 unknown)\n"
		"  -q, --quiet              print only the verdict line\n"
		"      --no-color           no colour even on a terminal (NO_COLOR is honoured too)\n"
		"  -h, --help               this help\n\n"
		"Probe options (also the keys of a profile's probe section):\n",
		SDC_DEFAULT_PROFILE);
	for (int i = 0; sdc_probes[i]; i++) {
		fprintf(out, " %s:\n", sdc_probes[i]->name);
		sdc_opt_print_help(sdc_common_options, "", out);
		sdc_opt_print_help(sdc_probes[i]->options, "", out);
	}
	fprintf(out, "\nInject keys: device (logical CPU), iter, row, col, bit, count, every, rate, tensor (minitrain).\n");
	for (int i = 0; sdc_probes[i]; i++)
		for (int t = 0; sdc_probes[i]->inject_targets && sdc_probes[i]->inject_targets[t]; t++)
			fprintf(out, "  %s target %s\n", sdc_probes[i]->name, sdc_probes[i]->inject_targets[t]);
}

/* Keeps only the probes named by --probe, taking each one's options from the profile. */
static int select_probes(struct sdc_cli *cli, struct sdc_plan *plan, char **names, int n)
{
	struct sdc_plan sel = *plan;
	bool from_profile[SDC_PLAN_MAX] = { false }, used[SDC_PLAN_MAX] = { false };
	sel.n = 0;
	for (int i = 0; i < n; i++) {
		const struct sdc_probe *p = sdc_probe_find(names[i]);
		char all[256];
		if (!p) {
			sdc_probe_names(all, sizeof(all));
			sdc_cli_bad(cli, "--probe '%s': unknown probe (valid probes: %s)", names[i], all);
			goto out_fail;
		}
		for (int k = 0; k < sel.n; k++) {
			if (sel.entries[k].probe == p) {
				sdc_cli_bad(cli, "--probe '%s' given twice", names[i]);
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

static int cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "profile", required_argument, NULL, 'p' }, { "probe", required_argument, NULL, 'P' },
		{ "set", required_argument, NULL, 's' },     { "duration", required_argument, NULL, 'd' },
		{ "seed", required_argument, NULL, 'S' },    { "cpus", required_argument, NULL, 'c' },
		{ "json", required_argument, NULL, 'j' },    { "inject", required_argument, NULL, 'i' },
		{ "exit-codes", required_argument, NULL, 'e' }, { "quiet", no_argument, NULL, 'q' },
		{ "no-color", no_argument, NULL, 'C' },      { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sdc_cli cli = { .command = "run" };
	const char *profile = SDC_DEFAULT_PROFILE;
	char **probes = calloc((size_t)argc, sizeof(char *)), **sets = calloc((size_t)argc, sizeof(char *));
	struct sdc_inject_spec *inject = calloc((size_t)argc, sizeof(*inject));
	int nprobes = 0, nsets = 0, ninject = 0, c, rc;
	double duration = 0;
	struct sdc_plan plan = { 0 };
	struct sdc_run run;
	bool run_inited = false;

	if (!probes || !sets || !inject) {
		sdc_error("out of memory");
		rc = sdc_exit_code(SDC_UNKNOWN, cli.exit_style);
		goto out;
	}
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:P:s:d:S:c:j:i:e:qh", longopts, NULL)) != -1) {
		char err[512];
		switch (c) {
		case 'p':
			profile = optarg;
			break;
		case 'P':
			probes[nprobes++] = optarg;
			break;
		case 's':
			sets[nsets++] = optarg;
			break;
		case 'd':
			if (!sdc_parse_double(optarg, &duration) || duration <= 0 || duration > 7 * 86400) {
				rc = sdc_cli_bad(&cli, "--duration '%s': expected seconds, more than 0 and at most 604800",
						 optarg);
				goto out;
			}
			break;
		case 'i':
			if (sdc_inject_parse(optarg, &inject[ninject], err, sizeof(err))) {
				rc = sdc_cli_bad(&cli, "--inject: %s", err);
				goto out;
			}
			ninject++;
			break;
		case 'h':
			run_usage(stdout);
			rc = 0;
			goto out;
		default:
			if (sdc_cli_default(&cli, c, argv)) {
				rc = sdc_exit_code(SDC_UNKNOWN, cli.exit_style);
				goto out;
			}
		}
	}
	if (optind < argc) {
		rc = sdc_cli_bad(&cli, "unexpected argument '%s'", argv[optind]);
		goto out;
	}
	sdc_set_quiet(cli.quiet);

	char err[1024];
	if (sdc_profile_load(profile, &plan, err, sizeof(err))) {
		fprintf(stderr, "sdcscan run: %s\n", err);
		rc = sdc_exit_code(SDC_UNKNOWN, cli.exit_style);
		goto out;
	}
	if (nprobes && select_probes(&cli, &plan, probes, nprobes)) {
		rc = sdc_exit_code(SDC_UNKNOWN, cli.exit_style);
		goto out;
	}
	for (int i = 0; i < nsets; i++) {
		if (sdc_plan_set(&plan, sets[i])) {
			rc = sdc_exit_code(SDC_UNKNOWN, cli.exit_style);
			goto out;
		}
	}
	if (duration > 0)
		sdc_plan_scale_duration(&plan, duration);

	if (sdc_cli_prepare_run(&cli, &run, &plan, argc, argv)) {
		rc = sdc_exit_code(SDC_UNKNOWN, cli.exit_style);
		goto out;
	}
	run_inited = true;
	run.inject = inject;
	run.ninject = ninject;
	inject = NULL; /* owned by run now */
	if (sdc_runner_check_injections(&run, &plan)) {
		rc = sdc_exit_code(SDC_UNKNOWN, cli.exit_style);
		goto out;
	}

	struct sdc_output out;
	sdc_output_init(&out, cli.json && !strcmp(cli.json, "-"), cli.quiet, cli.no_color);
	sdc_output_header(&out, &run, &plan);
	sdc_runner_install_signals();
	if (sdc_runner_execute(&run, &plan, &out)) {
		rc = sdc_exit_code(SDC_UNKNOWN, cli.exit_style);
		goto out;
	}
	run.end_mono = sdc_now();
	rc = sdc_cli_finish(&cli, &run, &plan, &out, sdc_run_verdict(&run));
out:
	if (run_inited)
		sdc_run_release(&run);
	sdc_plan_release(&plan);
	free(inject);
	free(probes);
	free(sets);
	return rc;
}

/* ---- list, version ---- */

static int cmd_list(int argc, char **argv)
{
	struct sdc_cli cli = { .command = "list" };
	static const struct option longopts[] = { { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 } };
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (c == 'h') {
			printf("Usage: sdcscan list\nList every probe (with whether it can run on this host, and why "
			       "not) and every built-in profile.\n");
			return 0;
		}
		return sdc_cli_getopt_error(&cli, c, argv);
	}
	if (optind < argc)
		return sdc_cli_bad(&cli, "unexpected argument '%s'", argv[optind]);
	printf("Probes:\n");
	for (int i = 0; sdc_probes[i]; i++) {
		char why[256];
		bool ok = sdc_probe_usable(sdc_probes[i], why, sizeof(why));
		printf("  %-10s %-11s %s\n", sdc_probes[i]->name, ok ? "available" : "unavailable",
		       sdc_probes[i]->summary);
		if (!ok)
			printf("  %-10s %-11s why: %s\n", "", "", why);
	}
	printf("\nProfiles (built in; --profile FILE takes your own):\n");
	for (const struct sdc_builtin_file *b = sdc_builtin_profiles; b->name; b++) {
		struct sdc_plan plan = { 0 };
		char err[512];
		if (sdc_profile_load(b->name, &plan, err, sizeof(err))) {
			printf("  %-10s (broken: %s)\n", b->name, err);
			continue;
		}
		double total = 0;
		for (int i = 0; i < plan.n; i++)
			total += plan.entries[i].common.duration;
		printf("  %-10s %s%s (about %.0f s)\n", b->name, plan.description,
		       strcmp(b->name, SDC_DEFAULT_PROFILE) ? "" : " [default]", total);
		sdc_plan_release(&plan);
	}
	return 0;
}

static int cmd_version(int argc, char **argv)
{
	struct sdc_cli cli = { .command = "version" };
	static const struct option longopts[] = { { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 } };
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (c == 'h') {
			printf("Usage: sdcscan version\nPrint the version and the optional features built in.\n");
			return 0;
		}
		return sdc_cli_getopt_error(&cli, c, argv);
	}
	if (optind < argc)
		return sdc_cli_bad(&cli, "unexpected argument '%s'", argv[optind]);
	printf("sdcscan %s\nfeatures: cuda=%s nccl=%s mpi=%s blas=%s\n", SDC_VERSION,
	       HAVE_CUDA ? "yes" : "no", HAVE_NCCL ? "yes" : "no", HAVE_MPI ? "yes" : "no",
	       HAVE_BLAS ? "yes" : "no");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} commands[] = {
		{ "run", cmd_run },     { "list", cmd_list },   { "selftest", sdc_cmd_selftest }, { "golden", sdc_cmd_golden },
		{ "bench", sdc_cmd_bench }, { "calibrate", sdc_cmd_calibrate }, { "campaign", sdc_cmd_campaign },
		{ "version", cmd_version },
	};
	if (argc < 2) {
		usage(stderr);
		return SDC_UNKNOWN;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version"))
		return cmd_version(1, argv);
	/* Under an MPI launcher, run, golden and selftest join the job (fleet.h); the others stay per host. */
	const bool mpi_bench = !strcmp(argv[1], "bench") && argc > 2 && !strcmp(argv[2], "allreduce");
	if ((!strcmp(argv[1], "run") || !strcmp(argv[1], "golden") || !strcmp(argv[1], "selftest") || mpi_bench) &&
	    sdc_fleet_init(&argc, &argv)) {
		fprintf(stderr, "sdcscan: MPI_Init failed\n");
		return SDC_UNKNOWN;
	}
	for (size_t i = 0; i < SDC_ARRAY_SIZE(commands); i++) {
		if (!strcmp(argv[1], commands[i].name)) {
			const int rc = commands[i].fn(argc - 1, argv + 1);
			sdc_fleet_end(rc);
			return rc;
		}
	}
	fprintf(stderr, "sdcscan: unknown command '%s' (expected run, list, selftest, bench, calibrate, campaign "
			"golden or version; see 'sdcscan --help')\n",
		argv[1]);
	return SDC_UNKNOWN;
}
