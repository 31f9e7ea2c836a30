/* The node's verdict over time: history/ and state.json (history.h). */
#include "core/history.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "json_load.h"
#include "core/report_read.h"
#include "core/state.h"

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

int sdc_node_read(const char *dir, struct sdc_node_state *s, char *err, size_t errlen)
{
	char path[4096];
	size_t len;
	memset(s, 0, sizeof(*s));
	if (sdc_state_path(dir, "state.json", path, sizeof(path))) {
		snprintf(err, errlen, "state directory %s: path too long", dir);
		return -1;
	}
	if (access(path, F_OK))
		return 1;
	char *text = sdc_read_regular_file(path, 1u << 20, &len, "node state", err, errlen);
	if (!text)
		return -1;
	json_error_t je;
	json_t *j = sdc_json_loadb(text, len, 0, &je);
	free(text);
	json_t *last = json_object_get(j, "last_run"), *cl = json_object_get(j, "cleared");
	const int v = verdict_of(sdc_json_str(j, "verdict")), lv = verdict_of(sdc_json_str(last, "verdict"));
	const int lk = kind_of(sdc_json_str(last, "kind"));
	if (!j || v < 0 || lv < 0 || lk < 0) {
		snprintf(err, errlen, "%s: not sdcscan's node state%s%s", path, j ? "" : ": ", j ? "" : je.text);
		json_decref(j);
		return -1;
	}
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
	snprintf(s->last_summary, sizeof(s->last_summary), "%s", sdc_json_str(last, "summary"));
	json_decref(j);
	return 0;
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

/* The rules of history.h: the state after run (kind, v) on top of s. */
static void apply(struct sdc_node_state *s, enum sdc_run_kind kind, enum sdc_verdict v, const char *summary,
		  double end, uint64_t seq, int clear_after)
{
	const bool sticky = s->verdict == SDC_CRITICAL;
	bool set = false;
	if (kind == SDC_RUN_SCHEDULED && !sticky) {
		set = true;
	} else if (!s->last_scheduled_end && !sticky && kind != SDC_RUN_INJECTED && kind != SDC_RUN_INTERRUPTED &&
		   kind != SDC_RUN_SKIPPED) {
		set = true; /* no full scheduled run yet: the runs there are stand for the node until one comes */
	} else if (kind == SDC_RUN_SCHEDULED) {
		s->clean_runs = v == SDC_OK ? s->clean_runs + 1 : 0;
		if (clear_after > 0 && s->clean_runs >= clear_after) {
			s->cleared = end;
			snprintf(s->cleared_by, sizeof(s->cleared_by), "sdcscan");
			snprintf(s->clear_reason, sizeof(s->clear_reason),
				 "%d full scheduled runs in a row were OK (the profile's clear_after_clean_runs)", s->clean_runs);
			set = true;
		}
	} else if (kind != SDC_RUN_INJECTED && kind != SDC_RUN_SKIPPED && v == SDC_CRITICAL && !sticky) {
		set = true; /* corruption seen is corruption, whatever run saw it */
	}
	if (set) {
		if (v != s->verdict || !s->since)
			s->since = end;
		if (v == SDC_CRITICAL)
			s->clean_runs = 0, s->cleared = 0, s->cleared_by[0] = s->clear_reason[0] = '\0';
		s->verdict = v;
		s->set_by = seq;
		snprintf(s->summary, sizeof(s->summary), "%s", summary);
	}
	if (kind == SDC_RUN_SCHEDULED)
		s->last_scheduled_end = end;
	s->sequence = seq;
	s->last_kind = kind;
	s->last_verdict = v;
	s->last_end = end;
	snprintf(s->last_summary, sizeof(s->last_summary), "%s", summary);
}

int sdc_node_record(const char *dir, void *report, enum sdc_run_kind kind, enum sdc_verdict v, const char *summary,
		    double end, int clear_after, struct sdc_node_state *s, char *err, size_t errlen)
{
	char why[512];
	const int had = sdc_node_read(dir, s, why, sizeof(why));
	if (had < 0)
		sdc_warning("%s: started anew", why); /* an unreadable state is not a reason to lose this run */
	if (had != 0) {
		memset(s, 0, sizeof(*s));
		s->verdict = SDC_UNKNOWN;
		snprintf(s->summary, sizeof(s->summary), "no run has said anything of this node yet (only injected or "
							 "interrupted ones)");
	}
	const uint64_t seq = s->sequence + 1;
	json_t *run = json_object_get(report, "run");
	json_object_set_new(run, "kind", json_string(sdc_run_kind_name(kind)));
	json_object_set_new(run, "sequence", json_integer((json_int_t)seq));
	if (save_history(dir, report, seq, kind, v, err, errlen))
		return -1;
	apply(s, kind, v, summary, end, seq, clear_after);
	return write_state(dir, s, err, errlen);
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
	return j;
}
