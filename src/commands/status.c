/*
 * sdcscan status: one line about the last saved run (its verdict, age, first finding) and its
 * verdict as the exit code, in well under a second: what Slurm's HealthCheckProgram, NHC and
 * node-problem-detector call, while the long scans run from a timer or cron.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands/commands.h"
#include "core/report_read.h"
#include "core/state.h"

struct status_opts {
	const char *state_dir;
	double max_age;
};

#define OPT(f) offsetof(struct status_opts, f)
static const struct sdc_option status_options[] = {
	{ .name = "state-dir", .metavar = "DIR", .type = SDC_OPT_ARG, .offset = OPT(state_dir),
	  .help = "where sdcscan run saved its report (default: $SDCSCAN_STATE_DIR, else " SDC_STATE_DIR_DEFAULT ")" },
	{ .name = "max-age", .metavar = "SECONDS", .type = SDC_OPT_CUSTOM, .offset = OPT(max_age), .parse = sdc_cli_opt_age,
	  .def = "172800", .help = "a last run older than this is stale: WARNING (default two days)" },
	SDC_OPT_END,
};

static void age_text(double s, char *buf, size_t len)
{
	if (s < 120)
		snprintf(buf, len, "%.0f s", s < 0 ? 0 : s);
	else if (s < 7200)
		snprintf(buf, len, "%.0f min", s / 60);
	else if (s < 2 * 86400)
		snprintf(buf, len, "%.0f h", s / 3600);
	else
		snprintf(buf, len, "%.0f days", s / 86400);
}

static int status_main(struct sdc_cmd *c)
{
	const struct status_opts *o = c->opts;
	struct sdc_cli *cli = &c->cli;
	const bool npd = cli->exit_style == SDC_EXIT_NPD;
	char path[4096], why[700];
	const char *dir = sdc_state_dir(o->state_dir);
	if (c->nargs)
		snprintf(path, sizeof(path), "%s", c->args[0]);
	else if (sdc_state_path(dir, "last.json", path, sizeof(path)))
		return sdc_cli_bad(cli, "--state-dir: path too long");
	size_t len;
	char *text = sdc_read_regular_file(path, 256u << 20, &len, "report", why, sizeof(why));
	struct sdc_report_summary s;
	if (!text || sdc_report_read_summary(text, len, &s, why + strlen(why), sizeof(why) - strlen(why))) {
		/* no result to go by: UNKNOWN, and why (never run here, unreadable, not a report) */
		if (text)
			fprintf(stderr, "sdcscan status: %s: %s\n", path, why);
		else
			fprintf(stderr, "sdcscan status: %s\n", why);
		printf(npd ? "SDC: no sdcscan result (see stderr)\n" : "UNKNOWN: no usable sdcscan result at %s\n", path);
		free(text);
		return sdc_exit_code(SDC_UNKNOWN, cli->exit_style);
	}
	free(text);
	const double age = sdc_wall_now() - s.end;
	const bool stale = age > o->max_age;
	enum sdc_verdict v = s.verdict;
	if (stale)
		v = sdc_verdict_worst(v, SDC_WARNING);
	char ago[32], limit[32];
	age_text(age, ago, sizeof(ago));
	age_text(o->max_age, limit, sizeof(limit));
	if (npd) {
		/* node-problem-detector keeps 80 characters of stdout: the problem, short; the rest on stderr */
		char line[512];
		if (s.verdict == SDC_OK && !stale)
			snprintf(line, sizeof(line), "SDC: OK %s ago", ago);
		else if (s.verdict == SDC_OK)
			snprintf(line, sizeof(line), "SDC: last run %s ago, stale (max %s)", ago, limit);
		else
			snprintf(line, sizeof(line), "SDC: %s %s", sdc_verdict_name(s.verdict), s.first[0] ? s.first : s.summary);
		line[80] = '\0';
		printf("%s\n", line);
		fprintf(stderr, "sdcscan status: %s, %s ago (%s), profile %s: %s%s%s\n", sdc_verdict_name(s.verdict), ago, path,
			s.profile, s.summary, s.first_detail[0] ? ": " : "", s.first_detail);
	} else {
		printf("%s: last run %s ago%s, profile %s, %.1f s: %s%s%s\n", sdc_verdict_name(v), ago,
		       stale ? " (stale: older than --max-age)" : "", s.profile, s.duration,
		       s.first[0] && s.verdict != SDC_OK ? s.first : s.summary, s.first_detail[0] ? ": " : "",
		       s.first_detail);
	}
	return sdc_exit_code(v, cli->exit_style);
}

static void status_help(FILE *out)
{
	fprintf(out, "Reads DIR/last.json (or REPORT) as sdcscan run saved it. Exit status: the saved verdict; WARNING when\n"
		     "the run is older than --max-age; UNKNOWN when there is no readable result. With --exit-codes npd, one\n"
		     "line of at most 80 characters on stdout for node-problem-detector, details on stderr.\n");
}

const struct sdc_command sdc_command_status = {
	.name = "status",
	.summary = "print the last saved run's verdict, age and first finding, and exit with that verdict (fast: for "
		   "Slurm health checks, NHC, node-problem-detector)",
	.args = "[REPORT]",
	.min_args = 0,
	.max_args = 1,
	.options = status_options,
	.opts_size = sizeof(struct status_opts),
	.common = SDC_CF_EXIT,
	.help = status_help,
	.fn = status_main,
};
