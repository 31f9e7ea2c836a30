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
#include "runner/export.h"
#include "runner/history.h"
#include "runner/report_read.h"
#include "runner/state.h"
#include "base/json_load.h"
#include "sdc_config.h"
#include "base/message.h"
#include "base/clock.h"
#include "base/files.h"

struct status_opts {
	const char *state_dir, *prom, *is;
	double max_age;
};

/* What status found, as the three questions node-problem-detector asks (--is). */
struct answer {
	bool corruption; /* the node's state is CRITICAL */
	bool degraded;   /* stale, a clock skew, or a probe degraded (WARNING) */
	bool untested;   /* no usable result, the last run died or could not test (UNKNOWN) */
};

/* --is QUESTION: 1 when the node has that problem, else 0 (node-problem-detector's True and False;
 * its rule's condition says which: packaging/npd). */
static int answer_code(const char *is, const struct answer *a)
{
	return !strcmp(is, "corruption") ? a->corruption : !strcmp(is, "degraded") ? a->degraded : a->untested;
}

static int parse_question(const char *value, void *field, char *err, size_t errlen)
{
	if (strcmp(value, "corruption") && strcmp(value, "degraded") && strcmp(value, "untested")) {
		snprintf(err, errlen, "corruption, degraded or untested");
		return -1;
	}
	memcpy(field, &value, sizeof(value));
	return 0;
}

/* NPD's line, at most 80 characters: head, then body cut so that tail still shows. */
static void npd_print(const char *head, const char *body, const char *tail)
{
	char line[512], shown[81];
	const int room = 80 - (int)strlen(head) - (int)strlen(tail);
	snprintf(line, sizeof(line), "%s%.*s%s", head, room > 0 ? room : 0, body, tail);
	sdc_escape(shown, sizeof(shown), line); /* escaped, then cut at 80 between characters */
	printf("%s\n", shown);
}

/* A verdict line's summary without its own "CRITICAL: " (the line says it already). */
static const char *bare(const char *summary)
{
	return strncmp(summary, "CRITICAL: ", 10) ? summary : summary + 10;
}

#define OPT(f) offsetof(struct status_opts, f)
static const struct sdc_option status_options[] = {
	{ .name = "state-dir", .metavar = "DIR", .type = SDC_OPT_ARG, .offset = OPT(state_dir),
	  .help = "where sdcscan run saved its report (default: $SDCSCAN_STATE_DIR, else " SDC_STATE_DIR_DEFAULT ")" },
	{ .name = "max-age", .metavar = "SECONDS", .type = SDC_OPT_CUSTOM, .offset = OPT(max_age), .parse = sdc_cli_opt_age,
	  .def = "172800", .help = "a last run older than this is stale: WARNING (default two days)" },
	{ .name = "is", .metavar = "QUESTION", .type = SDC_OPT_CUSTOM, .offset = OPT(is), .parse = parse_question,
	  .help = "answer one question, as node-problem-detector's rules ask: corruption (the node is CRITICAL), "
		  "degraded (stale, a clock skew, a probe degraded) or untested (no result, died, could not test): "
		  "exit 1 when so, 0 when not, with the same line" },
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
 * every device reads error: runner/export.h), the died run's start and profile; or a bare one. 0, or
 * -1 (said).
 */
static int status_prom(const char *dir, const char *prom, enum sdc_verdict v, const char *summary,
		       const struct sdc_state_start *st, enum sdc_exit_style style, double last_full)
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
	/* the node's verdict (a CRITICAL stands); the died run's own is UNKNOWN: it could not test */
	json_object_set_new(r, "node", json_pack("{s:s}", "verdict", sdc_verdict_name(v)));
	json_object_set_new(r, "verdict", json_pack("{s:s, s:i, s:s}", "status", sdc_verdict_name(SDC_UNKNOWN), "code",
						    sdc_exit_code(SDC_UNKNOWN, style == SDC_EXIT_NPD ? SDC_EXIT_NAGIOS : style),
						    "summary", summary));
	const int rc = sdc_export_prom(r, sdc_state_last_success(dir), last_full, prom, err, sizeof(err));
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
	char when[40], ago[32], line[1024], crit[700] = "";
	sdc_format_utc(st->start, when, sizeof(when));
	age_text(sdc_wall_now() - st->start, ago, sizeof(ago));
	snprintf(line, sizeof(line), "the last run, started %s (%s ago, pid %d, profile %s), died without a verdict", when,
		 ago, st->pid, st->profile);
	/* a CRITICAL that stands is named first: where, what and since when; the died run after it */
	const char *what = node ? ns.summary : prev ? prev->summary : "";
	if (v == SDC_CRITICAL) {
		char since[40];
		sdc_format_utc(node ? ns.since : prev->end, since, sizeof(since));
		snprintf(crit, sizeof(crit), "%.400s (since %s); ", bare(what), since);
	}
	if (npd) {
		if (v == SDC_CRITICAL)
			npd_print("SDC: CRITICAL ", bare(what), "; last run died");
		else
			npd_print("SDC: UNKNOWN last run died without a verdict", "", "");
		sdc_print_line(stderr, "sdcscan status: %s%s%s%s", crit, line, prev ? "; the run before it: " : "",
			       prev ? prev->summary : "");
	} else {
		sdc_print_line(stdout, "%s: %s%s%s%s", sdc_verdict_name(v), crit, line, prev ? "; the run before it: " : "",
			       prev ? prev->summary : "");
	}
	if (o->prom && status_prom(sdc_state_dir(o->state_dir), o->prom, v, line, st, c->cli.exit_style,
				   node ? ns.last_scheduled_end : 0))
		return o->is ? 2 : sdc_exit_code(SDC_UNKNOWN, c->cli.exit_style);
	const struct answer a = { .corruption = v == SDC_CRITICAL, .untested = true };
	return o->is ? answer_code(o->is, &a) : sdc_exit_code(v, c->cli.exit_style);
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

/* A report's own node section (status REPORT): its verdict (-1: none), since and summary. */
static int report_node(const char *text, size_t len, char *summary, size_t slen, char *since, size_t sincelen)
{
	json_error_t je;
	json_t *r = sdc_json_loadb(text, len, 0, &je), *node = json_object_get(r, "node");
	int v = -1;
	for (int k = SDC_OK; k <= SDC_UNKNOWN && node; k++)
		if (!strcmp(sdc_json_str(node, "verdict"), sdc_verdict_name((enum sdc_verdict)k)))
			v = k;
	snprintf(summary, slen, "%s", sdc_json_str(node, "summary"));
	snprintf(since, sincelen, "%s", sdc_json_str(node, "since"));
	json_decref(r);
	return v;
}

/* No result to go by: UNKNOWN, and why (never run here, unreadable, not a report). */
static int no_result(const struct sdc_cmd *c, const char *path, const char *why, bool read)
{
	const struct status_opts *o = c->opts;
	if (read)
		sdc_print_line(stderr, "sdcscan status: %s: %s", path, why);
	else
		sdc_print_line(stderr, "sdcscan status: %s", why);
	printf(c->cli.exit_style == SDC_EXIT_NPD ? "SDC: no sdcscan result (see stderr)\n"
						 : "UNKNOWN: no usable sdcscan result at %s\n",
	       path);
	const struct answer a = { .untested = true };
	return o->is ? answer_code(o->is, &a) : sdc_exit_code(SDC_UNKNOWN, c->cli.exit_style);
}

/* node-problem-detector keeps 80 characters of stdout: the problem, short (a CRITICAL first,
 * whatever else is wrong). */
static void npd_line(enum sdc_verdict base, const char *crit_what, bool skew, bool stale, bool never,
		     const struct sdc_report_summary *s, const char *ago, const char *limit, const char *future)
{
	char head[160];
	const char *body = "", *tail = "";
	if (base == SDC_CRITICAL) {
		snprintf(head, sizeof(head), "SDC: CRITICAL ");
		body = bare(crit_what);
		tail = skew ? "; clock skew" : "";
	} else if (skew) {
		snprintf(head, sizeof(head), "SDC: clock skew on %.40s: last run dated %s ahead", s->host, future);
	} else if (base == SDC_OK && !stale) {
		snprintf(head, sizeof(head), "SDC: OK %s ago", ago);
	} else if (base == SDC_OK && never) {
		snprintf(head, sizeof(head), "SDC: stale: no full scheduled run has tested this node");
	} else if (base == SDC_OK) {
		snprintf(head, sizeof(head), "SDC: last scheduled run %s ago, stale (max %s)", ago, limit);
	} else {
		snprintf(head, sizeof(head), "SDC: %s ", sdc_verdict_name(base));
		body = s->first[0] ? s->first : s->summary;
	}
	npd_print(head, body, tail);
}

/* The last report cannot be read but the node's state can: the state's verdict (a CRITICAL is
 * never hidden by a spoiled last.json), and why the report is not read. */
static int node_only(const struct sdc_cmd *c, const struct sdc_node_state *ns, const char *path, const char *why)
{
	const struct status_opts *o = c->opts;
	char since[40];
	sdc_format_utc(ns->since, since, sizeof(since));
	sdc_print_line(stderr, "sdcscan status: %s: %s (the node's state is read instead)", path, why);
	if (c->cli.exit_style == SDC_EXIT_NPD) {
		char head[40];
		snprintf(head, sizeof(head), "SDC: %s ", sdc_verdict_name(ns->verdict));
		npd_print(head, bare(ns->summary), "; last report unreadable");
	} else {
		sdc_print_line(stdout, "%s: since %s (run %llu): %.300s; the last report is unreadable (see stderr)",
			       sdc_verdict_name(ns->verdict), since, (unsigned long long)ns->set_by, ns->summary);
	}
	/* (no usable last report: never OK, as nothing says when the node was last tested) */
	const enum sdc_verdict v = ns->verdict == SDC_CRITICAL ? SDC_CRITICAL : SDC_UNKNOWN;
	const struct answer a = { .corruption = v == SDC_CRITICAL, .untested = true };
	return o->is ? answer_code(o->is, &a) : sdc_exit_code(v, c->cli.exit_style);
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
	if (nrc == 0 && ns.rebuilt[0])
		sdc_print_line(stderr, "sdcscan status: warning: node state: %s", ns.rebuilt);
	/* (a last report dated ahead of the clock says nothing of when it ended: the start record does) */
	const double now = sdc_wall_now();
	const bool after = !have || st.start >= s.end - 1 || s.end > now + CLOCK_SLACK;
	const bool since_clear = nrc != 0 || st.start > ns.cleared || ns.cleared > now + CLOCK_SLACK;
	if (started == 1 && !st.alive && after && since_clear) {
		free(text);
		return died(c, have ? &s : NULL, &st);
	}
	if (!have && nrc == 0) {
		free(text); /* the report is lost or spoiled; the node's state says what the node is */
		return node_only(c, &ns, path, why);
	}
	if (!have) {
		const int rc = no_result(c, path, why, text != NULL);
		free(text);
		return rc;
	}
	/* status REPORT: the node's state as that report saw it (a CRITICAL that stood through it) */
	char rnode_summary[512] = "", rnode_since[40] = "";
	const int rnode = c->nargs ? report_node(text, len, rnode_summary, sizeof(rnode_summary), rnode_since,
						 sizeof(rnode_since))
				   : -1;
	free(text);
	/* the node's state (runner/history.h), where the runs keep one: what it is, and which run set it */
	if (nrc < 0)
		sdc_print_line(stderr, "sdcscan status: %s: the last report is read instead", nwhy);
	const bool node = nrc == 0;
	/* how old the node's verdict is: from its last full scheduled run that tested (a manual,
	 * partial or injected run does not make it fresh) */
	const bool never = node && !(ns.last_scheduled_end > 0); /* only partial, replayed, injected runs */
	const double ref = node ? ns.last_scheduled_end : s.end;
	const double age = now - (never ? s.end : ref);
	const bool stale = never || age > o->max_age;
	/* a report from the future says nothing about now: the clock was wrong, then or now */
	const double ahead = (s.end > ref ? s.end : ref) - now;
	const bool skew = ahead > CLOCK_SLACK;
	enum sdc_verdict base = node ? ns.verdict : s.verdict;
	if (rnode >= 0 && rnode == SDC_CRITICAL)
		base = SDC_CRITICAL;
	enum sdc_verdict v = base;
	if (stale || skew)
		v = sdc_verdict_worst(v, SDC_WARNING);
	char ago[32], limit[32], note[900] = "", future[48];
	age_text(age, ago, sizeof(ago));
	age_text(o->max_age, limit, sizeof(limit));
	age_text(ahead, future, sizeof(future));
	if (skew)
		snprintf(note, sizeof(note), "clock skew: the last run on %s is dated %s in the future", s.host, future);
	/* the last run did not set the node's state (a CRITICAL that stands, a run of another kind),
	 * or a person cleared it since; or the report's own node section said CRITICAL */
	const bool node_note = node && (ns.set_by != ns.sequence || ns.cleared > ns.last_end);
	if (node_note || (rnode == SDC_CRITICAL && s.verdict != SDC_CRITICAL)) {
		const size_t n = strlen(note);
		snprintf(note + n, sizeof(note) - n, "%s", n ? "; " : "");
		if (node_note)
			node_line(&ns, &s, note + strlen(note), sizeof(note) - strlen(note), base == SDC_CRITICAL);
		else
			snprintf(note + strlen(note), sizeof(note) - strlen(note), "the node stays CRITICAL since %s: %.300s",
				 rnode_since, rnode_summary);
	}
	const char *crit_what = node && ns.set_by != ns.sequence ? ns.summary
				: rnode == SDC_CRITICAL && s.verdict != SDC_CRITICAL ? rnode_summary
				: s.first[0] ? s.first : s.summary;
	if (npd) {
		/* the problem, short, on stdout; the rest on stderr */
		npd_line(base, crit_what, skew, stale, never, &s, ago, limit, future);
		sdc_print_line(stderr, "sdcscan status: %s%s%s, %s ago (%s), profile %s: %s%s%s", note, note[0] ? "; " : "",
			       sdc_verdict_name(base), ago, path, s.profile, s.summary, s.first_detail[0] ? ": " : "",
			       s.first_detail);
	} else if (note[0] && !skew) {
		sdc_print_line(stdout, "%s: %s%s", sdc_verdict_name(v), note,
			       never ? "; stale: no full scheduled run has tested this node yet"
			       : stale ? "; stale: the last full scheduled run is older than --max-age"
				       : "");
	} else {
		char going[96] = "";
		if (started == 1 && st.alive)
			snprintf(going, sizeof(going), " (a run is in progress: pid %d, profile %.40s)", st.pid, st.profile);
		sdc_print_line(stdout, "%s: %s%slast run %s ago%s%s, profile %s, %.1f s: %s%s%s", sdc_verdict_name(v), note,
			       note[0] ? "; " : "", ago,
			       never ? " (stale: no full scheduled run has tested this node yet)"
			       : stale ? " (stale: older than --max-age)"
				       : "",
			       going, s.profile,
			       s.duration, s.first[0] && s.verdict != SDC_OK ? s.first : s.summary,
			       s.first_detail[0] ? ": " : "", s.first_detail);
	}
	if (s.warning[0]) /* (a metrics folder that was missing: the scan ran, its metrics were not written) */
		sdc_print_line(npd ? stderr : stdout, "warning: the last run: %s", s.warning);
	const struct answer a = { .corruption = base == SDC_CRITICAL,
				  .degraded = stale || skew || base == SDC_WARNING,
				  .untested = base == SDC_UNKNOWN };
	return o->is ? answer_code(o->is, &a) : sdc_exit_code(v, cli->exit_style);
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
