/* A report as Prometheus text and as JUnit XML (export.h). */
#include "runner/export.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/files.h"
#include "runner/report_read.h"
#include "run/record.h"

/* A growing text buffer; on allocation failure it stays failed and says so at the end. */
struct text {
	char *s;
	size_t len, cap;
	bool failed;
};

static void put(struct text *t, const char *fmt, ...) SDC_PRINTF(2, 3);
static void put(struct text *t, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		const int n = t->failed ? 0 : vsnprintf(t->s ? t->s + t->len : NULL, t->s ? t->cap - t->len : 0, fmt, ap);
		va_end(ap);
		if (t->failed || n < 0) {
			t->failed = true;
			return;
		}
		if (t->s && t->len + (size_t)n < t->cap) {
			t->len += (size_t)n;
			return;
		}
		const size_t cap = (t->cap + (size_t)n + 1) * 2;
		char *s = realloc(t->s, cap);
		if (!s) {
			t->failed = true;
			return;
		}
		t->s = s, t->cap = cap;
	}
}


/* Escapes for a Prometheus label value (backslash, quote, newline) or XML text/attribute. */
static void put_escaped(struct text *t, const char *s, bool xml)
{
	for (; *s; s++) {
		const unsigned char c = (unsigned char)*s;
		if (xml && c == '&')
			put(t, "&amp;");
		else if (xml && c == '<')
			put(t, "&lt;");
		else if (xml && c == '>')
			put(t, "&gt;");
		else if (xml && c == '"')
			put(t, "&quot;");
		else if (xml && c < 0x20 && c != '\n' && c != '\t')
			put(t, " "); /* XML 1.0 has no other control characters */
		else if (!xml && (c == '\\' || c == '"'))
			put(t, "\\%c", c);
		else if (!xml && c == '\n')
			put(t, "\\n");
		else
			put(t, "%c", c);
	}
}

static int finish(struct text *t, const char *path, const char *what, char *err, size_t errlen)
{
	int rc = -1;
	if (t->failed)
		snprintf(err, errlen, "%s: out of memory", what);
	else
		rc = sdc_write_atomic(path, t->s ? t->s : "", t->len, err, errlen);
	free(t->s);
	return rc;
}

/* Whether any result of probe on device id went wrong (corrupt, degraded, error). */
static bool failed_on(json_t *report, const char *probe, const char *id)
{
	size_t i;
	json_t *r;
	json_array_foreach(json_object_get(report, "results"), i, r) {
		const char *st = sdc_json_str(r, "status");
		if (!strcmp(sdc_json_str(r, "probe"), probe) && !strcmp(sdc_json_str(r, "device"), id) && strcmp(st, "ok") &&
		    strcmp(st, "skipped"))
			return true;
	}
	return false;
}

/* Whether probe ran anything on device id. */
static bool ran_on(json_t *report, const char *probe, const char *id)
{
	size_t i;
	json_t *r;
	json_array_foreach(json_object_get(report, "results"), i, r)
		if (!strcmp(sdc_json_str(r, "probe"), probe) && !strcmp(sdc_json_str(r, "device"), id))
			return true;
	return false;
}

/*
 * The status label of a probe on a device, from its results and findings: the worst of them, by
 * this order (worst last). What was found outranks what was not done: a core found slow stays
 * degraded in a run a Ctrl-C cut short, and interrupted is never corrupt, nor a failure.
 * crashed and hung keep their own values (the report's statuses): a crash is CRITICAL like a
 * corruption, a hang UNKNOWN like an error, and an alert can tell them apart.
 */
enum status_label { L_NONE = -1, L_OK, L_SKIPPED, L_INTERRUPTED, L_DEGRADED, L_ERROR, L_HUNG, L_CRASHED, L_CORRUPT };
static const char *const label_names[] = { "ok", "skipped", "interrupted", "degraded", "error", "hung", "crashed",
					   "corrupt" };
/* From L_DEGRADED on, sdcscan_probe_failed is 1: found something, or could not test. */
#define L_FAILED L_DEGRADED

/* A result's status (its name in the report), with whether a signal cut it short. */
static enum status_label result_label(const char *name, bool interrupted)
{
	for (int s = SDC_STATUS_OK; s <= SDC_STATUS_HUNG; s++) {
		if (strcmp(name, sdc_status_name((enum sdc_status)s)))
			continue;
		switch ((enum sdc_status)s) {
		case SDC_STATUS_OK:
			return interrupted ? L_INTERRUPTED : L_OK;
		case SDC_STATUS_CORRUPT:
			return L_CORRUPT;
		case SDC_STATUS_DEGRADED:
			return L_DEGRADED;
		case SDC_STATUS_ERROR:
			return L_ERROR;
		case SDC_STATUS_SKIPPED:
			return L_SKIPPED;
		case SDC_STATUS_NOT_RUN: /* the run ended (a signal) before it started */
			return L_INTERRUPTED;
		case SDC_STATUS_CRASHED:
			return L_CRASHED;
		case SDC_STATUS_HUNG:
			return L_HUNG;
		}
	}
	return L_ERROR; /* a status this build does not know: never read as OK */
}

/* A finding's class (its name in the report): a vote's or the health checks' findings count too. */
static enum status_label finding_label(const char *name)
{
	for (int c = SDC_FINDING_CORRUPTION; c <= SDC_FINDING_HANG; c++) {
		if (strcmp(name, sdc_finding_class_name((enum sdc_finding_class)c)))
			continue;
		switch ((enum sdc_finding_class)c) {
		case SDC_FINDING_CORRUPTION:
			return L_CORRUPT;
		case SDC_FINDING_DEGRADED:
			return L_DEGRADED;
		case SDC_FINDING_ERROR:
			return L_ERROR;
		case SDC_FINDING_CRASH:
			return L_CRASHED;
		case SDC_FINDING_HANG:
			return L_HUNG;
		}
	}
	return L_ERROR;
}

/* One probe on one device (a device of the run, or "host" for what no one device did). */
struct pair {
	const char *probe, *device;
	json_t *dev; /* its entry in devices, NULL for "host" */
	enum status_label label;
	json_int_t findings;
};

struct pairs {
	struct pair *p;
	size_t n, cap;
	bool failed;
};

static struct pair *pair_get(struct pairs *ps, const char *probe, const char *device, json_t *dev, bool add)
{
	for (size_t i = 0; i < ps->n; i++)
		if (!strcmp(ps->p[i].probe, probe) && !strcmp(ps->p[i].device, device))
			return &ps->p[i];
	if (!add)
		return NULL;
	if (ps->n == ps->cap) {
		struct pair *p = realloc(ps->p, (ps->cap * 2 + 16) * sizeof(*p));
		if (!p) {
			ps->failed = true;
			return NULL;
		}
		ps->p = p, ps->cap = ps->cap * 2 + 16;
	}
	ps->p[ps->n] = (struct pair){ .probe = probe, .device = device, .dev = dev, .label = L_NONE };
	return &ps->p[ps->n++];
}

/* Whether --if-idle found the node busy (run.kind where the run kept state; the idle check's
 * record either way). */
static bool run_skipped(json_t *report)
{
	json_t *run = json_object_get(report, "run");
	return !strcmp(sdc_json_str(run, "kind"), "skipped") ||
	       json_object_get(json_object_get(json_object_get(run, "environment"), "idle"), "busy");
}

/*
 * Every probe of the run on every device, then any other probe and device a finding names (the
 * health checks on a GPU, a vote without a majority on the host), each with its status label and
 * findings. A probe that did nothing on a device is skipped there; where the run as a whole did
 * nothing, the run says why: skipped (--if-idle), interrupted, else it could not test (error: a
 * run that died, see sdcscan status --prom).
 */
static int collect_pairs(json_t *report, struct pairs *ps)
{
	json_t *run = json_object_get(report, "run"), *devices = json_object_get(report, "devices");
	json_t *results = json_object_get(report, "results"), *p, *d, *x;
	size_t i, k;
	json_array_foreach(json_object_get(run, "probes"), i, p)
		json_array_foreach(devices, k, d)
			pair_get(ps, sdc_json_str(p, "name"), sdc_json_str(d, "id"), d, true);
	json_array_foreach(results, i, x) {
		struct pair *q = pair_get(ps, sdc_json_str(x, "probe"), sdc_json_str(x, "device"), NULL, false);
		const enum status_label l = result_label(sdc_json_str(x, "status"), json_is_true(json_object_get(x, "interrupted")));
		if (q && l > q->label)
			q->label = l;
	}
	json_array_foreach(json_object_get(report, "findings"), i, x) {
		const char *probe = sdc_json_str(x, "probe"), *device = sdc_json_str(x, "device");
		if (!*probe || !*device)
			continue; /* (a finding about the run, not a probe: the skipped run's why) */
		json_t *dev = NULL;
		json_array_foreach(devices, k, d)
			if (!strcmp(sdc_json_str(d, "id"), device))
				dev = d;
		struct pair *q = pair_get(ps, probe, device, dev, true);
		if (!q)
			break;
		const enum status_label l = finding_label(sdc_json_str(x, "class"));
		if (l > q->label)
			q->label = l;
		q->findings++;
	}
	enum status_label none = L_SKIPPED;
	/* a run that tested nothing could not test: error on every pair, its skips too */
	json_array_foreach(json_object_get(report, "findings"), i, x)
		if (!strcmp(sdc_json_str(x, "kind"), "tested-nothing")) {
			for (size_t j = 0; j < ps->n; j++)
				if (ps->p[j].label <= L_SKIPPED)
					ps->p[j].label = L_ERROR;
			none = L_ERROR;
		}
	if (!json_array_size(results) && !run_skipped(report)) {
		const json_int_t code = json_integer_value(json_object_get(json_object_get(report, "verdict"), "code"));
		if (json_is_true(json_object_get(run, "interrupted")))
			none = L_INTERRUPTED;
		else if (code == SDC_UNKNOWN)
			none = L_ERROR;
	}
	for (size_t j = 0; j < ps->n; j++)
		if (ps->p[j].label == L_NONE)
			ps->p[j].label = none;
	return ps->failed ? -1 : 0;
}

/* One label, name="value", escaped; none for an empty value (a CPU has no gpu or UUID). */
static void put_label(struct text *t, bool *first, const char *name, const char *value)
{
	if (!*value)
		return;
	put(t, "%s%s=\"", *first ? "" : ",", name);
	put_escaped(t, value, false);
	put(t, "\"");
	*first = false;
}

/*
 * The labels of a probe on a device: probe; device, and for a GPU dcgm-exporter's gpu, UUID and
 * device ("nvidiaN"), so queries can join the two exporters' series (not its modelName: promtool's
 * lint refuses camelCase label names, and the model is in the report); status where asked; the
 * run's profile and whether it injected faults (an alert leaves a test's corruption out).
 */
static void put_pair_labels(struct text *t, const struct pair *q, const char *status, const char *profile,
			    bool injected)
{
	bool first = true;
	char num[32];
	put_label(t, &first, "probe", q->probe);
	if (q->dev && !strcmp(sdc_json_str(q->dev, "type"), "gpu")) {
		const json_int_t index = json_integer_value(json_object_get(q->dev, "index"));
		snprintf(num, sizeof(num), "nvidia%" JSON_INTEGER_FORMAT, index);
		put_label(t, &first, "device", num);
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, index);
		put_label(t, &first, "gpu", num);
		put_label(t, &first, "UUID", sdc_json_str(q->dev, "uuid"));
	} else {
		put_label(t, &first, "device", q->device);
	}
	if (status)
		put_label(t, &first, "status", status);
	put_label(t, &first, "profile", profile);
	put_label(t, &first, "injected", injected ? "true" : "false");
}

int sdc_export_prom(void *report, double last_success, double last_full, const char *path, char *err, size_t errlen)
{
	struct text t = { 0 };
	json_t *tool = json_object_get(report, "tool"), *build = json_object_get(tool, "build");
	json_t *run = json_object_get(report, "run");
	bool first = true;
	put(&t, "# HELP sdcscan_build_info sdcscan's version and the optional features built in.\n"
		"# TYPE sdcscan_build_info gauge\nsdcscan_build_info{");
	put_label(&t, &first, "version", sdc_json_str(tool, "version"));
	const char *key;
	json_t *v;
	json_object_foreach(build, key, v)
		put_label(&t, &first, key, json_is_true(v) ? "true" : "false");
	put(&t, "} 1\n");
	const double end = sdc_report_end_time(report);
	const double dur = json_number_value(json_object_get(run, "duration_seconds"));
	const json_int_t run_verdict = json_integer_value(json_object_get(json_object_get(report, "verdict"), "code"));
	/* the node's verdict where the run kept state (a CRITICAL stays until cleared: runner/history.h) */
	const char *node = sdc_json_str(json_object_get(report, "node"), "verdict");
	json_int_t verdict = run_verdict;
	for (int nv = SDC_OK; nv <= SDC_UNKNOWN && *node; nv++)
		if (!strcmp(node, sdc_verdict_name((enum sdc_verdict)nv)))
			verdict = nv;
	const char *profile = sdc_json_str(run, "profile");
	const bool injected = json_array_size(json_object_get(run, "inject")) > 0;
	put(&t, "# HELP sdcscan_last_run_timestamp_seconds When the last sdcscan run ended.\n"
		"# TYPE sdcscan_last_run_timestamp_seconds gauge\nsdcscan_last_run_timestamp_seconds %.3f\n",
	    end > 0 ? end : 0);
	put(&t, "# HELP sdcscan_last_full_run_timestamp_seconds When the last full scheduled run that tested the node "
		"(OK, WARNING or CRITICAL) ended: the node's verdict is as fresh as this (0: none known).\n"
		"# TYPE sdcscan_last_full_run_timestamp_seconds gauge\nsdcscan_last_full_run_timestamp_seconds %.3f\n",
	    last_full);
	put(&t, "# HELP sdcscan_last_success_timestamp_seconds When the last full scheduled run that ended OK ended (0: "
		"none known).\n# TYPE sdcscan_last_success_timestamp_seconds gauge\nsdcscan_last_success_timestamp_seconds "
		"%.3f\n",
	    last_success);
	put(&t, "# HELP sdcscan_last_run_duration_seconds How long the last sdcscan run took.\n"
		"# TYPE sdcscan_last_run_duration_seconds gauge\nsdcscan_last_run_duration_seconds %.3f\n",
	    dur);
	put(&t, "# HELP sdcscan_verdict The node's verdict: 0 OK, 1 WARNING, 2 CRITICAL (until cleared), 3 UNKNOWN.\n"
		"# TYPE sdcscan_verdict gauge\nsdcscan_verdict %" JSON_INTEGER_FORMAT "\n",
	    verdict);
	put(&t, "# HELP sdcscan_last_run_verdict The last run's own verdict (an injected or partial run's too).\n"
		"# TYPE sdcscan_last_run_verdict gauge\nsdcscan_last_run_verdict %" JSON_INTEGER_FORMAT "\n",
	    run_verdict);
	put(&t, "# HELP sdcscan_last_run_info The last run's profile and whether it injected faults.\n"
		"# TYPE sdcscan_last_run_info gauge\nsdcscan_last_run_info{");
	first = true;
	put_label(&t, &first, "profile", profile);
	put_label(&t, &first, "injected", injected ? "true" : "false");
	put(&t, "} 1\n");
	struct pairs ps = { 0 };
	if (collect_pairs(report, &ps))
		t.failed = true;
	put(&t, "# HELP sdcscan_probe_failed 1 when the probe found corruption (corrupt, crashed), a slow device "
		"(degraded) or could not test (error, hung) on the device in the last run; 0 when ok, skipped or "
		"interrupted. status: which.\n# TYPE sdcscan_probe_failed gauge\n");
	for (size_t i = 0; i < ps.n; i++) {
		put(&t, "sdcscan_probe_failed{");
		put_pair_labels(&t, &ps.p[i], label_names[ps.p[i].label], profile, injected);
		put(&t, "} %d\n", ps.p[i].label >= L_FAILED);
	}
	put(&t, "# HELP sdcscan_probe_findings The findings the last run's report holds for the probe on the device.\n"
		"# TYPE sdcscan_probe_findings gauge\n");
	for (size_t i = 0; i < ps.n; i++) {
		put(&t, "sdcscan_probe_findings{");
		put_pair_labels(&t, &ps.p[i], NULL, profile, injected);
		put(&t, "} %" JSON_INTEGER_FORMAT "\n", ps.p[i].findings);
	}
	free(ps.p);
	return finish(&t, path, "Prometheus metrics", err, errlen);
}

int sdc_export_junit(void *report, const char *path, char *err, size_t errlen)
{
	struct text t = { 0 };
	json_t *run = json_object_get(report, "run");
	size_t i, k, f;
	json_t *p, *d, *fd;
	int tests = 0, failures = 0, skipped = 0, errors = 0;
	/* a busy node's skip says why; a run that tested nothing is an error on every case, not a skip */
	const char *busy = NULL, *nothing = NULL;
	if (run_skipped(report))
		busy = sdc_json_str(json_object_get(json_object_get(run, "environment"), "idle"), "busy");
	json_array_foreach(json_object_get(report, "findings"), f, fd)
		if (!strcmp(sdc_json_str(fd, "kind"), "tested-nothing"))
			nothing = sdc_json_str(fd, "detail");
	/* counted first: the suite's attributes come before its cases */
	json_array_foreach(json_object_get(run, "probes"), i, p)
		json_array_foreach(json_object_get(report, "devices"), k, d) {
			tests++;
			failures += failed_on(report, sdc_json_str(p, "name"), sdc_json_str(d, "id"));
			const bool ran = ran_on(report, sdc_json_str(p, "name"), sdc_json_str(d, "id"));
			skipped += !ran && !nothing;
			errors += !ran && nothing;
		}
	put(&t, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"sdcscan\" tests=\"%d\" failures=\"%d\" "
		"errors=\"%d\" skipped=\"%d\" time=\"%.3f\">\n",
	    tests, failures, errors, skipped, json_number_value(json_object_get(run, "duration_seconds")));
	put(&t, "  <testsuite name=\"sdcscan ");
	put_escaped(&t, sdc_json_str(run, "profile"), true);
	put(&t, "\" tests=\"%d\" failures=\"%d\" skipped=\"%d\" errors=\"%d\" timestamp=\"", tests, failures, skipped,
	    errors);
	put_escaped(&t, sdc_json_str(run, "start"), true);
	put(&t, "\" time=\"%.3f\">\n", json_number_value(json_object_get(run, "duration_seconds")));
	json_array_foreach(json_object_get(run, "probes"), i, p) {
		const char *probe = sdc_json_str(p, "name");
		json_array_foreach(json_object_get(report, "devices"), k, d) {
			const char *id = sdc_json_str(d, "id");
			double secs = 0;
			size_t r;
			json_t *res;
			json_array_foreach(json_object_get(report, "results"), r, res)
				if (!strcmp(sdc_json_str(res, "probe"), probe) && !strcmp(sdc_json_str(res, "device"), id))
					secs += json_number_value(json_object_get(res, "seconds"));
			put(&t, "    <testcase classname=\"sdcscan.");
			put_escaped(&t, probe, true);
			put(&t, "\" name=\"");
			put_escaped(&t, probe, true);
			put(&t, " on ");
			put_escaped(&t, id, true);
			put(&t, "\" time=\"%.3f\">", secs);
			if (!ran_on(report, probe, id) && nothing) {
				put(&t, "<error message=\"");
				put_escaped(&t, nothing, true);
				put(&t, "\" type=\"sdcscan\"/>");
			} else if (!ran_on(report, probe, id)) {
				put(&t, "<skipped message=\"");
				put_escaped(&t, busy ? "skipped: node busy: " : "not run on this device", true);
				put_escaped(&t, busy ? busy : "", true);
				put(&t, "\"/>");
			} else if (failed_on(report, probe, id)) {
				/* GitLab shows the element text, not the message attribute: the findings go there */
				put(&t, "\n      <failure message=\"");
				put_escaped(&t, probe, true);
				put(&t, " failed on ");
				put_escaped(&t, id, true);
				put(&t, "\" type=\"sdcscan\">");
				json_array_foreach(json_object_get(report, "results"), r, res)
					if (!strcmp(sdc_json_str(res, "probe"), probe) && !strcmp(sdc_json_str(res, "device"), id) &&
					    strcmp(sdc_json_str(res, "status"), "ok")) {
						put_escaped(&t, probe, true);
						put(&t, "/");
						put_escaped(&t, sdc_json_str(res, "variant"), true);
						put(&t, ": ");
						put_escaped(&t, sdc_json_str(res, "status"), true);
						put(&t, "\n");
					}
				json_array_foreach(json_object_get(report, "findings"), f, fd)
					if (!strcmp(sdc_json_str(fd, "probe"), probe) && !strcmp(sdc_json_str(fd, "device"), id)) {
						put_escaped(&t, sdc_json_str(fd, "kind"), true);
						put(&t, ": ");
						put_escaped(&t, sdc_json_str(fd, "detail"), true);
						put(&t, "\n");
					}
				put(&t, "</failure>\n    ");
			}
			put(&t, "</testcase>\n");
		}
	}
	put(&t, "  </testsuite>\n</testsuites>\n");
	return finish(&t, path, "JUnit report", err, errlen);
}
