/* The node's verdict over time: history/ and state.json (history.h). */
#include "runner/history.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/message.h"
#include "base/clock.h"
#include "base/files.h"
#include "base/json_load.h"
#include "runner/export.h"
#include "runner/report_read.h"
#include "runner/state.h"
#include "run/record.h"

static const char *const kind_names[] = { "scheduled", "partial", "variant", "injected", "interrupted", "skipped" };

const char *sdc_run_kind_name(enum sdc_run_kind k)
{
	return (unsigned)k < sizeof(kind_names) / sizeof(kind_names[0]) ? kind_names[k] : "scheduled";
}

static int kind_of(const char *name)
{
	for (int k = 0; k < (int)(sizeof(kind_names) / sizeof(kind_names[0])); k++)
		if (!strcmp(name, kind_names[k]))
			return k;
	return -1;
}

static int verdict_of(const char *name)
{
	for (int v = SDC_OK; v <= SDC_UNKNOWN; v++)
		if (!strcmp(name, sdc_verdict_name((enum sdc_verdict)v)))
			return v;
	return -1;
}

/* An epoch from the report's UTC form ("2026-11-28T03:00:00Z"); 0 when it is not one. */
static double utc_epoch(const char *text)
{
	struct tm tm = { 0 };
	char z = 0;
	if (sscanf(text, "%4d-%2d-%2dT%2d:%2d:%2d%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
		   &tm.tm_sec, &z) != 7 || z != 'Z')
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	const time_t t = timegm(&tm);
	return t > 0 ? (double)t : 0;
}

static void read_places(json_t *arr, struct sdc_node_state *s)
{
	size_t i;
	json_t *x;
	s->ncritical_at = 0;
	json_array_foreach(arr, i, x)
		if (json_is_string(x) && s->ncritical_at < SDC_NODE_PLACES)
			sdc_strlcpy(s->critical_at[s->ncritical_at++], json_string_value(x), sizeof(s->critical_at[0]));
}

static int parse_state(json_t *j, struct sdc_node_state *s)
{
	json_t *last = json_object_get(j, "last_run"), *cl = json_object_get(j, "cleared");
	const int v = verdict_of(sdc_json_str(j, "verdict")), lv = verdict_of(sdc_json_str(last, "verdict"));
	const int lk = kind_of(sdc_json_str(last, "kind"));
	if (!json_is_object(j) || v < 0 || lv < 0 || lk < 0 || !json_is_number(json_object_get(j, "since")) ||
	    !json_is_integer(json_object_get(last, "sequence")))
		return -1;
	s->verdict = (enum sdc_verdict)v;
	s->since = json_number_value(json_object_get(j, "since"));
	snprintf(s->summary, sizeof(s->summary), "%s", sdc_json_str(j, "summary"));
	s->set_by = (uint64_t)json_integer_value(json_object_get(j, "set_by"));
	s->clean_runs = (int)json_integer_value(json_object_get(j, "clean_runs"));
	s->cleared = json_number_value(json_object_get(cl, "when"));
	snprintf(s->cleared_by, sizeof(s->cleared_by), "%s", sdc_json_str(cl, "by"));
	snprintf(s->clear_reason, sizeof(s->clear_reason), "%s", sdc_json_str(cl, "reason"));
	s->sequence = (uint64_t)json_integer_value(json_object_get(last, "sequence"));
	s->last_kind = (enum sdc_run_kind)lk;
	s->last_verdict = (enum sdc_verdict)lv;
	s->last_end = json_number_value(json_object_get(last, "end"));
	s->last_scheduled_end = json_number_value(json_object_get(j, "last_scheduled_end"));
	s->scheduled_runs = (uint64_t)json_integer_value(json_object_get(j, "scheduled_runs"));
	if (!json_object_get(j, "scheduled_runs") && s->last_scheduled_end > 0)
		s->scheduled_runs = 1; /* (a state written before the count was kept) */
	snprintf(s->last_summary, sizeof(s->last_summary), "%s", sdc_json_str(last, "summary"));
	read_places(json_object_get(j, "critical_at"), s);
	return 0;
}

/* The highest sequence number in history/ and the name of its file (0: none). */
static uint64_t newest_history(const char *dir, char *name, size_t len)
{
	char hdir[4096];
	uint64_t best = 0;
	if (name)
		name[0] = '\0';
	if (sdc_state_path(dir, "history", hdir, sizeof(hdir)))
		return 0;
	DIR *d = opendir(hdir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char *end;
		const unsigned long long n = strtoull(e->d_name, &end, 10);
		if (end != e->d_name && *end == '-' && n > best && strstr(e->d_name, ".json")) {
			best = n;
			if (name)
				snprintf(name, len, "%s", e->d_name);
		}
	}
	if (d)
		closedir(d);
	return best;
}

/* The state from the newest report in history/ (each holds the state after it: node). 0, or -1. */
static int rebuild(const char *dir, struct sdc_node_state *s, char *err, size_t errlen)
{
	char name[300], path[4096 + 320], why[256];
	if (!newest_history(dir, name, sizeof(name))) {
		snprintf(err, errlen, "history/ holds no run to rebuild it from");
		return -1;
	}
	snprintf(path, sizeof(path), "%s/history/%s", dir, name);
	size_t len;
	char *text = sdc_read_regular_file(path, 256u << 20, &len, "history", why, sizeof(why));
	json_error_t je;
	json_t *r = text ? sdc_json_loadb(text, len, 0, &je) : NULL;
	free(text);
	json_t *node = json_object_get(r, "node"), *run = json_object_get(r, "run");
	const int v = verdict_of(sdc_json_str(node, "verdict"));
	const int lk = kind_of(sdc_json_str(run, "kind"));
	const int lv = verdict_of(sdc_json_str(json_object_get(r, "verdict"), "status"));
	if (v < 0 || lk < 0 || lv < 0 || !json_is_integer(json_object_get(run, "sequence"))) {
		snprintf(err, errlen, "the newest run in history/ (%.200s) does not hold the node's state to rebuild it from",
			 name);
		json_decref(r);
		return -1;
	}
	memset(s, 0, sizeof(*s));
	s->verdict = (enum sdc_verdict)v;
	s->since = utc_epoch(sdc_json_str(node, "since"));
	snprintf(s->summary, sizeof(s->summary), "%s", sdc_json_str(node, "summary"));
	s->set_by = (uint64_t)json_integer_value(json_object_get(node, "set_by"));
	s->clean_runs = (int)json_integer_value(json_object_get(node, "clean_runs"));
	json_t *cl = json_object_get(node, "cleared");
	s->cleared = utc_epoch(sdc_json_str(cl, "when"));
	snprintf(s->cleared_by, sizeof(s->cleared_by), "%s", sdc_json_str(cl, "by"));
	snprintf(s->clear_reason, sizeof(s->clear_reason), "%s", sdc_json_str(cl, "reason"));
	read_places(json_object_get(node, "critical_at"), s);
	s->last_scheduled_end = utc_epoch(sdc_json_str(node, "last_full_run"));
	s->scheduled_runs = (uint64_t)json_integer_value(json_object_get(node, "scheduled_runs"));
	s->sequence = (uint64_t)json_integer_value(json_object_get(run, "sequence"));
	s->last_kind = (enum sdc_run_kind)lk;
	s->last_verdict = (enum sdc_verdict)lv;
	s->last_end = sdc_report_end_time(r);
	snprintf(s->last_summary, sizeof(s->last_summary), "%s",
		 sdc_json_str(json_object_get(r, "verdict"), "summary"));
	snprintf(s->rebuilt, sizeof(s->rebuilt), "history/%.200s", name);
	json_decref(r);
	return 0;
}

int sdc_node_read(const char *dir, struct sdc_node_state *s, char *err, size_t errlen)
{
	char path[4096], why[512] = "";
	size_t len;
	memset(s, 0, sizeof(*s));
	if (sdc_state_path(dir, "state.json", path, sizeof(path))) {
		snprintf(err, errlen, "state directory %s: path too long", dir);
		return -1;
	}
	if (access(path, F_OK)) {
		if (!newest_history(dir, NULL, 0))
			return 1; /* a node no run has saved anything on */
		snprintf(why, sizeof(why), "%.400s is missing", path);
	} else {
		char *text = sdc_read_regular_file(path, 1u << 20, &len, "node state", why, sizeof(why));
		json_error_t je;
		json_t *j = text ? sdc_json_loadb(text, len, 0, &je) : NULL;
		const int rc = j ? parse_state(j, s) : -1;
		const bool json = j != NULL;
		json_decref(j);
		if (text && rc)
			snprintf(why, sizeof(why), "%.300s: not sdcscan's node state%s", path,
				 json ? "" : ": not JSON (its bytes are not shown)");
		free(text);
		if (!rc)
			return 0;
	}
	char rwhy[400];
	if (!rebuild(dir, s, rwhy, sizeof(rwhy))) {
		char note[sizeof(s->rebuilt)];
		snprintf(note, sizeof(note), "%s", s->rebuilt);
		snprintf(s->rebuilt, sizeof(s->rebuilt), "%.120s; rebuilt from %.160s", why, note);
		return 0;
	}
	snprintf(err, errlen, "%s, and %s: move it aside to start this node's state anew (the node's verdict is lost then)",
		 why, rwhy);
	return -1;
}

static json_t *places_json(const struct sdc_node_state *s)
{
	json_t *a = json_array();
	for (int i = 0; i < s->ncritical_at; i++)
		json_array_append_new(a, json_string(s->critical_at[i]));
	return a;
}

static int write_state(const char *dir, const struct sdc_node_state *s, char *err, size_t errlen)
{
	char path[4096];
	if (sdc_state_path(dir, "state.json", path, sizeof(path))) {
		snprintf(err, errlen, "state directory %s: path too long", dir);
		return -1;
	}
	json_t *j = json_pack("{s:s, s:f, s:s, s:I, s:i, s:f, s:{s:I, s:s, s:s, s:f, s:s}}", "verdict",
			      sdc_verdict_name(s->verdict), "since", s->since, "summary", s->summary, "set_by",
			      (json_int_t)s->set_by, "clean_runs", s->clean_runs, "last_scheduled_end", s->last_scheduled_end,
			      "last_run", "sequence", (json_int_t)s->sequence, "kind", sdc_run_kind_name(s->last_kind),
			      "verdict", sdc_verdict_name(s->last_verdict), "end", s->last_end, "summary", s->last_summary);
	if (j && s->cleared > 0)
		json_object_set_new(j, "cleared", json_pack("{s:f, s:s, s:s}", "when", s->cleared, "by", s->cleared_by,
							    "reason", s->clear_reason));
	if (j)
		json_object_set_new(j, "scheduled_runs", json_integer((json_int_t)s->scheduled_runs));
	if (j && s->ncritical_at)
		json_object_set_new(j, "critical_at", places_json(s));
	char *text = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
	json_decref(j);
	if (!text) {
		snprintf(err, errlen, "node state: out of memory");
		return -1;
	}
	const int rc = sdc_write_atomic(path, text, strlen(text), err, errlen);
	free(text);
	return rc;
}

/* history/NNNNNN-KIND-VERDICT.json for the run, then the oldest beyond SDC_HISTORY_KEEP removed. */
static int save_history(const char *dir, void *report, uint64_t seq, enum sdc_run_kind kind, enum sdc_verdict v,
			char *err, size_t errlen)
{
	char hdir[4096], path[4096 + 300];
	if (sdc_state_path(dir, "history", hdir, sizeof(hdir))) {
		snprintf(err, errlen, "state directory %s: path too long", dir);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%06" PRIu64 "-%s-%s.json", hdir, seq, sdc_run_kind_name(kind),
		 sdc_verdict_name(v));
	if (sdc_make_parent_dirs(path, 0755, err, errlen))
		return -1;
	char *text = json_dumps(report, JSON_INDENT(2));
	if (!text) {
		snprintf(err, errlen, "history: out of memory");
		return -1;
	}
	const int rc = sdc_write_atomic(path, text, strlen(text), err, errlen);
	free(text);
	if (rc)
		return -1;
	DIR *d = opendir(hdir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char *end;
		const unsigned long long n = strtoull(e->d_name, &end, 10);
		if (end != e->d_name && *end == '-' && n + SDC_HISTORY_KEEP <= seq) {
			snprintf(path, sizeof(path), "%s/%s", hdir, e->d_name);
			unlink(path);
		}
	}
	if (d)
		closedir(d);
	return 0;
}

/* Whether a finding class name gives CRITICAL (corruption, a crash, a hardware error). */
static bool critical_class(const char *name)
{
	for (int c = SDC_FINDING_CORRUPTION; c <= SDC_FINDING_HANG; c++)
		if (!strcmp(name, sdc_finding_class_name((enum sdc_finding_class)c)))
			return sdc_finding_class_verdict((enum sdc_finding_class)c) == SDC_CRITICAL;
	return false;
}

/* The places (probe/variant@device) of the report's CRITICAL findings added to s's. */
static void add_places(struct sdc_node_state *s, json_t *report)
{
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(report, "findings"), i, f) {
		const char *probe = sdc_json_str(f, "probe"), *variant = sdc_json_str(f, "variant");
		const char *device = sdc_json_str(f, "device");
		if (!critical_class(sdc_json_str(f, "class")) || !*probe || !*variant || !*device ||
		    !strcmp(device, "host"))
			continue; /* (the host's: a hardware error, a vote without a majority; any full run tests it) */
		char place[96];
		snprintf(place, sizeof(place), "%.30s/%.30s@%.30s", probe, variant, device);
		bool have = false;
		for (int k = 0; k < s->ncritical_at; k++)
			have |= !strcmp(s->critical_at[k], place);
		if (!have && s->ncritical_at < SDC_NODE_PLACES)
			sdc_strlcpy(s->critical_at[s->ncritical_at++], place, sizeof(s->critical_at[0]));
	}
}

/* Whether the report tested every place of the standing CRITICAL and found it OK there. */
static bool tested_places(const struct sdc_node_state *s, json_t *report)
{
	for (int k = 0; k < s->ncritical_at; k++) {
		bool ok = false;
		size_t i;
		json_t *r;
		json_array_foreach(json_object_get(report, "results"), i, r) {
			char place[96];
			snprintf(place, sizeof(place), "%.30s/%.30s@%.30s", sdc_json_str(r, "probe"), sdc_json_str(r, "variant"),
				 sdc_json_str(r, "device"));
			ok |= !strcmp(place, s->critical_at[k]) && !strcmp(sdc_json_str(r, "status"), "ok");
		}
		if (!ok)
			return false;
	}
	return true;
}

/* The rules of history.h: the state after run (kind, v) on top of s. */
static void apply(struct sdc_node_state *s, json_t *report, enum sdc_run_kind kind, enum sdc_verdict v,
		  const char *summary, double end, uint64_t seq, int clear_after)
{
	const bool sticky = s->verdict == SDC_CRITICAL;
	const bool counts = kind != SDC_RUN_INJECTED && kind != SDC_RUN_SKIPPED; /* says something of the node */
	bool set = false;
	if (kind == SDC_RUN_SCHEDULED && !sticky) {
		set = true;
	} else if (!s->scheduled_runs && !sticky && counts && kind != SDC_RUN_INTERRUPTED) {
		set = true; /* no full scheduled run yet: the runs there are stand for the node until one comes */
	} else if (sticky && counts && v == SDC_CRITICAL) {
		s->clean_runs = 0; /* corruption seen again: where, too */
		add_places(s, report);
	} else if (kind == SDC_RUN_SCHEDULED) {
		/* a clean run counts only where it tested every place the CRITICAL was found at */
		s->clean_runs = v == SDC_OK && tested_places(s, report) ? s->clean_runs + 1 : 0;
		if (clear_after > 0 && s->clean_runs >= clear_after) {
			s->cleared = end;
			snprintf(s->cleared_by, sizeof(s->cleared_by), "sdcscan");
			snprintf(s->clear_reason, sizeof(s->clear_reason),
				 "%d full scheduled runs in a row were OK (the profile's clear_after_clean_runs)", s->clean_runs);
			s->ncritical_at = 0;
			set = true;
		}
	} else if (counts && v == SDC_CRITICAL) {
		set = true; /* corruption seen is corruption, whatever run saw it */
	}
	if (set) {
		if (v != s->verdict || !s->since)
			s->since = end;
		if (v == SDC_CRITICAL) {
			s->clean_runs = 0, s->cleared = 0, s->cleared_by[0] = s->clear_reason[0] = '\0';
			s->ncritical_at = 0;
			add_places(s, report);
		}
		s->verdict = v;
		s->set_by = seq;
		snprintf(s->summary, sizeof(s->summary), "%s", summary);
	}
	if (kind == SDC_RUN_SCHEDULED) {
		s->scheduled_runs++;
		if (v != SDC_UNKNOWN)
			s->last_scheduled_end = end; /* fresh: a full run that tested */
	}
	s->sequence = seq;
	s->last_kind = kind;
	s->last_verdict = v;
	s->last_end = end;
	snprintf(s->last_summary, sizeof(s->last_summary), "%s", summary);
}

int sdc_node_record(const char *dir, void *report, enum sdc_run_kind kind, enum sdc_verdict v, const char *summary,
		    double end, int clear_after, struct sdc_node_state *s, char *err, size_t errlen)
{
	const int had = sdc_node_read(dir, s, err, errlen);
	if (had < 0)
		return -1; /* never a silent start anew over a node's verdict (the run is refused before it burns) */
	if (had > 0) {
		memset(s, 0, sizeof(*s));
		s->verdict = SDC_UNKNOWN;
		snprintf(s->summary, sizeof(s->summary), "no run has said anything of this node yet (only injected or "
							 "interrupted ones)");
	}
	if (s->rebuilt[0])
		sdc_warning("node state: %s", s->rebuilt);
	/* never a number history/ already holds (a state.json older than its history) */
	const uint64_t newest = newest_history(dir, NULL, 0);
	const uint64_t seq = (newest > s->sequence ? newest : s->sequence) + 1;
	json_t *run = json_object_get(report, "run");
	json_object_set_new(run, "kind", json_string(sdc_run_kind_name(kind)));
	json_object_set_new(run, "sequence", json_integer((json_int_t)seq));
	apply(s, report, kind, v, summary, end, seq, clear_after);
	/* the small state first: a disk that fills loses the history entry, never the verdict */
	if (write_state(dir, s, err, errlen))
		return -1;
	json_object_set_new(report, "node", sdc_node_json(s));
	if (save_history(dir, report, seq, kind, v, err, errlen)) {
		const size_t n = strlen(err);
		snprintf(err + n, errlen - n, " (the node's state was saved: %s)", sdc_verdict_name(s->verdict));
		return -1;
	}
	return 0;
}

int sdc_node_clear(const char *dir, const char *who, const char *reason, char *err, size_t errlen)
{
	struct sdc_node_state s;
	const int rc = sdc_node_read(dir, &s, err, errlen);
	if (rc)
		return rc > 0 ? (snprintf(err, errlen, "no saved state in %s: nothing to clear", dir), -1) : -1;
	if (s.verdict != SDC_CRITICAL) {
		snprintf(err, errlen, "the node's state is %s, not CRITICAL: nothing to clear", sdc_verdict_name(s.verdict));
		return -1;
	}
	const double now = sdc_wall_now();
	s.cleared = now;
	snprintf(s.cleared_by, sizeof(s.cleared_by), "%s", who);
	snprintf(s.clear_reason, sizeof(s.clear_reason), "%s", reason);
	snprintf(s.summary, sizeof(s.summary), "cleared by %s: %s", who, reason);
	s.verdict = SDC_OK;
	s.since = now;
	s.clean_runs = 0;
	s.ncritical_at = 0;
	return write_state(dir, &s, err, errlen);
}

void *sdc_node_json(const struct sdc_node_state *s)
{
	char since[40];
	sdc_format_utc(s->since, since, sizeof(since));
	json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:i}", "verdict", sdc_verdict_name(s->verdict), "since", since,
			      "summary", s->summary, "set_by", (json_int_t)s->set_by, "clean_runs", s->clean_runs);
	if (j && s->cleared > 0) {
		char when[40];
		sdc_format_utc(s->cleared, when, sizeof(when));
		json_object_set_new(j, "cleared", json_pack("{s:s, s:s, s:s}", "when", when, "by", s->cleared_by, "reason",
							    s->clear_reason));
	}
	if (j && s->last_scheduled_end > 0) {
		char when[40];
		sdc_format_utc(s->last_scheduled_end, when, sizeof(when));
		json_object_set_new(j, "last_full_run", json_string(when));
	}
	if (j) {
		json_object_set_new(j, "scheduled_runs", json_integer((json_int_t)s->scheduled_runs));
		if (s->ncritical_at)
			json_object_set_new(j, "critical_at", places_json(s));
	}
	return j;
}
