/* Argument handling shared by the commands that burn: run, selftest, bench. */
#include "commands/cli.h"

#include <inttypes.h>
#include "fleet.h"

#include <getopt.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/report.h"
#include "base/util.h"

int sdc_cli_bad(const struct sdc_cli *cli, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "sdcscan %s: %s (see 'sdcscan %s --help')\n", cli->command, msg, cli->command);
	return sdc_exit_code(SDC_UNKNOWN, cli->exit_style);
}

/* Reports getopt's '?' and ':' returns as one line naming the argument. */
int sdc_cli_getopt_error(const struct sdc_cli *cli, int c, char **argv)
{
	const char *arg = argv[optind - 1];
	if (c == ':')
		return sdc_cli_bad(cli, "option '%s' needs a value", arg);
	if (optopt)
		return sdc_cli_bad(cli, "unknown option '-%c'", optopt);
	return sdc_cli_bad(cli, "unknown option '%s'", arg);
}

int sdc_cli_common(struct sdc_cli *cli, int c, const char *arg)
{
	char err[256];
	switch (c) {
	case 'c':
		if (sdc_cpu_list_parse(arg, &cli->cpus, err, sizeof(err))) {
			sdc_cli_bad(cli, "--cpus: %s", err);
			return -1;
		}
		cli->have_cpus = true;
		return 0;
	case 'S':
		if (!sdc_parse_u64(arg, &cli->seed)) {
			sdc_cli_bad(cli, "--seed '%s': expected a non-negative integer", arg);
			return -1;
		}
		cli->have_seed = true;
		return 0;
	case 'j':
		cli->json = arg;
		return 0;
	case 'q':
		cli->quiet = true;
		return 0;
	case 'C':
		cli->no_color = true;
		return 0;
	case 'e':
		if (!strcmp(arg, "nagios"))
			cli->exit_style = SDC_EXIT_NAGIOS;
		else if (!strcmp(arg, "npd"))
			cli->exit_style = SDC_EXIT_NPD;
		else {
			sdc_cli_bad(cli, "--exit-codes '%s': expected nagios or npd", arg);
			return -1;
		}
		return 0;
	}
	return 1;
}

int sdc_cli_default(struct sdc_cli *cli, int c, char **argv)
{
	if (c == '?' || c == ':') {
		sdc_cli_getopt_error(cli, c, argv);
		return -1;
	}
	return sdc_cli_common(cli, c, optarg) ? -1 : 0;
}

/* Devices, report, exit code: the part of a run every command that burns shares. */
int sdc_cli_finish(struct sdc_cli *cli, struct sdc_run *run, const struct sdc_plan *plan,
		   struct sdc_output *out, enum sdc_verdict v)
{
	/* Under MPI: rank 0 gathers and votes, every rank takes the worst verdict of all. */
	const int before = run->nfindings;
	const enum sdc_verdict local = v;
	v = sdc_fleet_finish(run, v, &run->fleet);
	if (v > local)
		fprintf(out->fp, "fleet: %s from another rank (rank 0 %s)\n", sdc_verdict_name(v),
			cli->json ? "writes the job's report" : "prints the fleet's findings");
	for (int i = before; i < run->nfindings; i++)
		fprintf(out->fp, "fleet: %s: %s\n", run->findings[i].kind, run->findings[i].detail);
	int code = sdc_exit_code(v, cli->exit_style);
	/* One report for the job, written by rank 0 with every rank's results in its fleet section. */
	if (cli->json && sdc_fleet.rank == 0) {
		json_t *report = sdc_report_build(run, plan, v, code, NULL);
		if (!report || sdc_report_write(report, cli->json)) {
			v = sdc_verdict_worst(v, SDC_UNKNOWN);
			code = sdc_exit_code(v, cli->exit_style);
		}
		json_decref(report);
	}
	sdc_output_verdict(out, run, v, cli->json && strcmp(cli->json, "-") ? cli->json : NULL);
	return code;
}

int sdc_cli_prepare_run(struct sdc_cli *cli, struct sdc_run *run, const struct sdc_plan *plan, int argc,
			char **argv)
{
	char err[512];
	if (sdc_run_init(run)) {
		sdc_error("out of memory");
		return -1;
	}
	run->argc = argc;
	run->argv = argv;
	run->start_wall = sdc_wall_now();
	run->start_mono = sdc_now();
	run->seed = cli->have_seed ? cli->seed : sdc_plan_seed(plan, run->start_wall);
	sdc_fleet_launch_check(run);
	sdc_strlcpy(run->profile, plan->name, sizeof(run->profile));
	sdc_strlcpy(run->profile_source, plan->source, sizeof(run->profile_source));
	if (sdc_cpu_devices(cli->have_cpus ? &cli->cpus : NULL, &run->devices, &run->ndevices, err, sizeof(err))) {
		sdc_cli_bad(cli, "%s", err);
		goto out_release;
	}
	if (!run->ndevices) {
		sdc_cli_bad(cli, "no CPUs selected");
		goto out_release;
	}
	return 0;
out_release:
	sdc_run_release(run);
	return -1;
}


int sdc_cli_parse_sizes(const char *s, struct sdc_size3 *out, int max)
{
	int n = 0;
	while (*s) {
		int m, nn, k, used;
		if (n == max)
			return -1;
		if (sscanf(s, "%dx%dx%d%n", &m, &nn, &k, &used) == 3 && (s[used] == ',' || !s[used])) {
			/* MxNxK */
		} else if (sscanf(s, "%d%n", &m, &used) == 1 && (s[used] == ',' || !s[used])) {
			nn = k = m;
		} else {
			return -1;
		}
		if (m < 1 || nn < 1 || k < 4 || m > 16384 || nn > 16384 || k > 65536)
			return -1;
		out[n++] = (struct sdc_size3){ m, nn, k };
		s += used;
		if (*s == ',')
			s++;
	}
	return n;
}

int sdc_cli_write_json(const char *path, void *j, const char *who)
{
	char *text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	char err[600];
	int rc = 0;
	if (!text) {
		sdc_error("%s: cannot format the JSON", who);
		rc = -1;
	} else if (!strcmp(path, "-")) {
		puts(text);
	} else if (sdc_write_atomic(path, text, strlen(text), err, sizeof(err))) {
		sdc_error("%s: %s", who, err);
		rc = -1;
	}
	free(text);
	return rc;
}

int sdc_cli_uint(const struct sdc_cli *cli, const char *flag, const char *arg, uint64_t lo, uint64_t hi,
		 uint64_t *out)
{
	if (sdc_parse_u64(arg, out) && *out >= lo && *out <= hi)
		return 0;
	sdc_cli_bad(cli, "%s '%s': expected an integer from %" PRIu64 " to %" PRIu64, flag, arg, lo, hi);
	return -1;
}

int sdc_cli_seconds(const struct sdc_cli *cli, const char *arg, double *out)
{
	if (sdc_parse_double(arg, out) && *out > 0 && *out <= 600)
		return 0;
	sdc_cli_bad(cli, "--seconds '%s': expected a number of seconds in (0, 600]", arg);
	return -1;
}

int sdc_cli_bench_start(struct sdc_cli *cli, struct sdc_run *run, int argc, char **argv)
{
	const struct sdc_plan none = { 0 };
	if (sdc_cli_prepare_run(cli, run, &none, argc, argv))
		return -1;
	if (sdc_cpu_pin(run->devices[0].cpu)) {
		sdc_error("%s: cannot pin to CPU %d", cli->command, run->devices[0].cpu);
		sdc_run_release(run);
		return -1;
	}
	return 0;
}
