/*
 * sdcscan status: one line about the last saved run (its verdict, age, first finding) and its
 * verdict as the exit code, in well under a second: what Slurm's HealthCheckProgram, NHC and
 * node-problem-detector call, while the long scans run from a timer or cron.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "commands/commands.h"
#include "core/export.h"
#include "core/history.h"
#include "core/report_read.h"
#include "core/state.h"
#include "sdc_config.h"

struct status_opts {
	const char *state_dir, *prom;
	double max_age;
};

#define OPT(f) offsetof(struct status_opts, f)
static const struct sdc_option status_options[] = {
	{ .name = "state-dir", .metavar = "DIR", .type = SDC_OPT_ARG, .offset = OPT(state_dir),
	  .help = "where sdcscan run saved its report (default: $SDCSCAN_STATE_DIR, else " SDC_STATE_DIR_DEFAULT ")" },
	{ .name = "max-age", .metavar = "SECONDS", .type = SDC_OPT_CUSTOM, .offset = OPT(max_age), .parse = sdc_cli_opt_age,
	  .def = "172800", .help = "a last run older than this is stale: WARNING (default two days)" },
	{ .name = "prom", .metavar = "FILE", .type = SDC_OPT_ARG, .offset = OPT(prom),
	  .help = "where the last run died without a verdict, write its metrics (UNKNOWN) there: the textfile the "
		  "run would have written (sdcscan run --prom)" },
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

/*
 * Metrics for a run that died without a verdict: the run before's probes and devices (nothing else
 * of it: its findings are not the died run's) with this verdict, no results (so every probe on
 * every device reads error: core/export.h), the died run's start and profile; or a bare one. 0, or
 * -1 (said).
 */
static int status_prom(const char *dir, const char *prom, enum sdc_verdict v, const char *summary,
		       const struct sdc_state_start *st, enum sdc_exit_style style)
{
	char path[4096], err[1024], when[40];
	json_t *prev = NULL;
	size_t len;
	if (!sdc_state_path(dir, "last.json", path, sizeof(path))) {
		char *text = sdc_read_regular_file(path, 256u << 20, &len, "report", err, sizeof(err));
		prev = text ? sdc_report_parse(text, len, err, sizeof(err)) : NULL;
		free(text);
	}
	json_t *tool = json_object_get(prev, "tool"), *probes = json_object_get(json_object_get(prev, "run"), "probes");
	json_t *devices = json_object_get(prev, "devices");
	sdc_format_utc(st->start, when, sizeof(when));
	json_t *r = json_pack("{s:o, s:{s:o, s:s, s:s, s:f, s:[]}, s:o, s:[], s:[]}", "tool",
			      tool ? json_incref(tool) : json_pack("{s:s, s:s}", "name", "sdcscan", "version", SDC_VERSION),
			      "run", "probes", probes ? json_incref(probes) : json_array(), "profile", st->profile, "start",
			      when, "duration_seconds", 0.0, "inject", "devices", devices ? json_incref(devices) : json_array(),
			      "results", "findings");
	json_decref(prev);
	if (!r) {
		fprintf(stderr, "sdcscan status: --prom: out of memory\n");
		return -1;
	}
	json_object_set_new(r, "node", json_pack("{s:s}", "verdict", sdc_verdict_name(v)));
	json_object_set_new(r, "verdict", json_pack("{s:s, s:i, s:s}", "status", sdc_verdict_name(v), "code",
						    sdc_exit_code(v, style == SDC_EXIT_NPD ? SDC_EXIT_NAGIOS : style),
						    "summary", summary));
	const int rc = sdc_export_prom(r, sdc_state_last_success(dir), prom, err, sizeof(err));
	if (rc)
		fprintf(stderr, "sdcscan status: --prom: %s\n", err);
	json_decref(r);
	return rc;
}

/*
 * The last run started and died without a verdict (SIGKILL, the OOM killer, a power loss): never
 * the verdict of the run before, unless that was CRITICAL (what it found stands). UNKNOWN, or that
 * CRITICAL, with what happened.
 */
static int died(struct sdc_cmd *c, const struct sdc_report_summary *prev, const struct sdc_state_start *st)
{
	const struct status_opts *o = c->opts;
	const bool npd = c->cli.exit_style == SDC_EXIT_NPD;
	/* the node's CRITICAL where it keeps a state (an injected run's is not one), else the last report's */
	struct sdc_node_state ns;
	char why[512];
	const bool node = sdc_node_read(sdc_state_dir(o->state_dir), &ns, why, sizeof(why)) == 0;
	const enum sdc_verdict before = node ? ns.verdict : prev ? prev->verdict : SDC_UNKNOWN;
	const enum sdc_verdict v = before == SDC_CRITICAL ? SDC_CRITICAL : SDC_UNKNOWN;
	char when[40], ago[32], line[1024];
	sdc_format_utc(st->start, when, sizeof(when));
	age_text(sdc_wall_now() - st->start, ago, sizeof(ago));
	snprintf(line, sizeof(line), "the last run, started %s (%s ago, pid %d, profile %s), died without a verdict", when,
		 ago, st->pid, st->profile);
	if (npd) {
		char short_line[96];
		snprintf(short_line, sizeof(short_line), "SDC: %s last run died without a verdict", sdc_verdict_name(v));
		short_line[80] = '\0';
		printf("%s\n", short_line);
		sdc_print_line(stderr, "sdcscan status: %s%s%s", line, prev ? "; the run before it: " : "",
			       prev ? prev->summary : "");
	} else {
		sdc_print_line(stdout, "%s: %s%s%s", sdc_verdict_name(v), line, prev ? "; the run before it: " : "",
			       prev ? prev->summary : "");
	}
	if (o->prom && status_prom(sdc_state_dir(o->state_dir), o->prom, v, line, st, c->cli.exit_style))
		return sdc_exit_code(SDC_UNKNOWN, c->cli.exit_style);
	return sdc_exit_code(v, c->cli.exit_style);
}

/* Seconds a report may be dated ahead of this clock before it is a clock skew (NTP keeps hosts
 * well within it; a run's end rounds to the millisecond). */
#define CLOCK_SLACK 300.0

/*
 * The node's state where the last run did not set it: a CRITICAL that stands (sticky: which run
 * set it, the clean scheduled runs since, the last run), or the last run's kind (one that does not
 * change the state), or a CRITICAL cleared.
 */
static void node_line(const struct sdc_node_state *ns, const struct sdc_report_summary *s, char *buf, size_t len,
		      bool sticky)
{
	char since[40], ago[32], last_ago[32];
	sdc_format_utc(ns->since, since, sizeof(since));
	age_text(sdc_wall_now() - ns->since, ago, sizeof(ago));
	age_text(sdc_wall_now() - ns->last_end, last_ago, sizeof(last_ago));
	if (sticky)
		snprintf(buf, len,
			 "since %s (%s ago, run %llu; it stays until `sdcscan clear --reason ...`): %.200s; %d clean "
			 "scheduled run%s since; the last run (%s, %s ago): %.160s",
			 since, ago, (unsigned long long)ns->set_by, ns->summary, ns->clean_runs, ns->clean_runs == 1 ? "" : "s",
			 sdc_run_kind_name(ns->last_kind), last_ago, s->summary);
	else if (ns->cleared > ns->last_end)
		snprintf(buf, len, "%.300s (at %s); no run since", ns->summary, since);
	else if (!ns->since)
		snprintf(buf, len, "%.200s; the last run was %s (%s ago): %.160s", ns->summary,
			 sdc_run_kind_name(ns->last_kind), last_ago, s->summary);
	else
		snprintf(buf, len, "%s since %s (%s ago): %.200s; the last run was %s (%s ago, which does not change the "
				   "node's state): %.160s",
			 sdc_verdict_name(ns->verdict), since, ago, ns->summary, sdc_run_kind_name(ns->last_kind), last_ago,
			 s->summary);
}

static int status_main(struct sdc_cmd *c)
{
	const struct status_opts *o = c->opts;
	struct sdc_cli *cli = &c->cli;
	const bool npd = cli->exit_style == SDC_EXIT_NPD;
	char path[4096], why[700] = "";
	const char *dir = sdc_state_dir(o->state_dir);
	if (c->nargs)
		snprintf(path, sizeof(path), "%s", c->args[0]);
	else if (sdc_state_path(dir, "last.json", path, sizeof(path)))
		return sdc_cli_bad(cli, "--state-dir: path too long");
	size_t len;
	char *text = sdc_read_regular_file(path, 256u << 20, &len, "report", why, sizeof(why));
	struct sdc_report_summary s;
	const bool have = text && !sdc_report_read_summary(text, len, &s, why + strlen(why), sizeof(why) - strlen(why));
	/* a run started after that verdict, with none of its own: going, or died (no report given) */
	struct sdc_state_start st;
	const int started = c->nargs ? 0 : sdc_state_read_start(dir, &st);
	/* (the node's state, where kept: a run that died before a person cleared it says nothing now) */
	struct sdc_node_state ns;
	char nwhy[512];
	const int nrc = c->nargs ? 1 : sdc_node_read(dir, &ns, nwhy, sizeof(nwhy));
	if (started == 1 && !st.alive && (!have || st.start >= s.end - 1) && (nrc != 0 || st.start > ns.cleared)) {
		free(text);
		return died(c, have ? &s : NULL, &st);
	}
	if (!have) {
		/* no result to go by: UNKNOWN, and why (never run here, unreadable, not a report) */
		if (text)
			sdc_print_line(stderr, "sdcscan status: %s: %s", path, why);
		else
			sdc_print_line(stderr, "sdcscan status: %s", why);
		printf(npd ? "SDC: no sdcscan result (see stderr)\n" : "UNKNOWN: no usable sdcscan result at %s\n", path);
		free(text);
		return sdc_exit_code(SDC_UNKNOWN, cli->exit_style);
	}
	free(text);
	/* the node's state (core/history.h), where the runs keep one: what it is, and which run set it */
	if (nrc < 0)
		sdc_print_line(stderr, "sdcscan status: %s: the last report is read instead", nwhy);
	const bool node = nrc == 0;
	const double now = sdc_wall_now();
	/* how old the node's verdict is: from its last full scheduled run (a manual or injected run
	 * does not make it fresh) */
	const double ref = node && ns.last_scheduled_end > 0 ? ns.last_scheduled_end : s.end;
	const double age = now - ref;
	const bool stale = age > o->max_age;
	/* a report from the future says nothing about now: the clock was wrong, then or now */
	const double ahead = (s.end > ref ? s.end : ref) - now;
	const bool skew = ahead > CLOCK_SLACK;
	const enum sdc_verdict base = node ? ns.verdict : s.verdict;
	enum sdc_verdict v = base;
	if (stale || skew)
		v = sdc_verdict_worst(v, SDC_WARNING);
	char ago[32], limit[32], note[700] = "", future[48];
	age_text(age, ago, sizeof(ago));
	age_text(o->max_age, limit, sizeof(limit));
	age_text(ahead, future, sizeof(future));
	if (skew)
		snprintf(note, sizeof(note), "clock skew: the last run on %s is dated %s in the future; ", s.host, future);
	/* the last run did not set the node's state (a CRITICAL that stands, a run of another kind),
	 * or a person cleared it since */
	if (node && (ns.set_by != ns.sequence || ns.cleared > ns.last_end))
		node_line(&ns, &s, note + strlen(note), sizeof(note) - strlen(note), base == SDC_CRITICAL);
	if (npd) {
		/* node-problem-detector keeps 80 characters of stdout: the problem, short; the rest on stderr */
		char line[512];
		if (skew)
			snprintf(line, sizeof(line), "SDC: clock skew on %s: last run dated %s ahead", s.host, future);
		else if (base == SDC_OK && !stale)
			snprintf(line, sizeof(line), "SDC: OK %s ago", ago);
		else if (base == SDC_OK)
			snprintf(line, sizeof(line), "SDC: last scheduled run %s ago, stale (max %s)", ago, limit);
		else if (node && base == SDC_CRITICAL && ns.set_by != ns.sequence)
			snprintf(line, sizeof(line), "SDC: CRITICAL %.200s",
				 ns.summary + (strncmp(ns.summary, "CRITICAL: ", 10) ? 0 : 10));
		else
			snprintf(line, sizeof(line), "SDC: %s %s", sdc_verdict_name(base), s.first[0] ? s.first : s.summary);
		char shown[81]; /* escaped, then cut at 80 between characters */
		sdc_escape(shown, sizeof(shown), line);
		printf("%s\n", shown);
		sdc_print_line(stderr, "sdcscan status: %s%s, %s ago (%s), profile %s: %s%s%s", note, sdc_verdict_name(base),
			       ago, path, s.profile, s.summary, s.first_detail[0] ? ": " : "", s.first_detail);
	} else if (note[0] && !skew) {
		sdc_print_line(stdout, "%s: %s", sdc_verdict_name(v), note);
	} else {
		char going[96] = "";
		if (started == 1 && st.alive)
			snprintf(going, sizeof(going), " (a run is in progress: pid %d, profile %.40s)", st.pid, st.profile);
		sdc_print_line(stdout, "%s: %slast run %s ago%s%s, profile %s, %.1f s: %s%s%s", sdc_verdict_name(v), note, ago,
			       stale ? " (stale: older than --max-age)" : "", going, s.profile, s.duration,
			       s.first[0] && s.verdict != SDC_OK ? s.first : s.summary, s.first_detail[0] ? ": " : "",
			       s.first_detail);
	}
	if (s.warning[0]) /* (a metrics folder that was missing: the scan ran, its metrics were not written) */
		sdc_print_line(npd ? stderr : stdout, "warning: the last run: %s", s.warning);
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
