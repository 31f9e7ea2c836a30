/* A report as Prometheus text and as JUnit XML (export.h). */
#include "core/export.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/util.h"
#include "core/report_read.h"

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

double sdc_report_end_time(void *report)
{
	json_t *run = json_object_get(report, "run");
	const char *start = json_string_value(json_object_get(run, "start"));
	json_t *dur = json_object_get(run, "duration_seconds");
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	if (!start || !json_is_number(dur))
		return -1;
	const char *end = strptime(start, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!end || *end)
		return -1;
	return (double)timegm(&tm) + json_number_value(dur);
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

/* The labels of a device: device, and for a GPU dcgm-exporter's gpu, UUID and device ("nvidiaN"),
 * so queries can join the two exporters' series. (Not its modelName: promtool's lint refuses
 * camelCase label names, and the model is in the report.) */
static void put_device_labels(struct text *t, json_t *d)
{
	const bool gpu = !strcmp(sdc_json_str(d, "type"), "gpu");
	if (gpu) {
		put(t, "device=\"nvidia%" JSON_INTEGER_FORMAT "\",gpu=\"%" JSON_INTEGER_FORMAT "\",UUID=\"",
		    json_integer_value(json_object_get(d, "index")), json_integer_value(json_object_get(d, "index")));
		put_escaped(t, sdc_json_str(d, "uuid"), false);
		put(t, "\"");
	} else {
		put(t, "device=\"");
		put_escaped(t, sdc_json_str(d, "id"), false);
		put(t, "\",gpu=\"\",UUID=\"\"");
	}
}

int sdc_export_prom(void *report, double last_success, const char *path, char *err, size_t errlen)
{
	struct text t = { 0 };
	json_t *tool = json_object_get(report, "tool"), *build = json_object_get(tool, "build");
	put(&t, "# HELP sdcscan_build_info sdcscan's version and the optional features built in.\n"
		"# TYPE sdcscan_build_info gauge\nsdcscan_build_info{version=\"");
	put_escaped(&t, sdc_json_str(tool, "version"), false);
	put(&t, "\"");
	const char *key;
	json_t *v;
	json_object_foreach(build, key, v)
		put(&t, ",%s=\"%s\"", key, json_is_true(v) ? "true" : "false");
	put(&t, "} 1\n");
	const double end = sdc_report_end_time(report);
	const double dur = json_number_value(json_object_get(json_object_get(report, "run"), "duration_seconds"));
	const json_int_t run_verdict = json_integer_value(json_object_get(json_object_get(report, "verdict"), "code"));
	/* the node's verdict where the run kept state (a CRITICAL stays until cleared: core/history.h) */
	const char *node = sdc_json_str(json_object_get(report, "node"), "verdict");
	json_int_t verdict = run_verdict;
	for (int nv = SDC_OK; nv <= SDC_UNKNOWN && *node; nv++)
		if (!strcmp(node, sdc_verdict_name((enum sdc_verdict)nv)))
			verdict = nv;
	put(&t, "# HELP sdcscan_last_run_timestamp_seconds When the last sdcscan run ended.\n"
		"# TYPE sdcscan_last_run_timestamp_seconds gauge\nsdcscan_last_run_timestamp_seconds %.3f\n",
	    end > 0 ? end : 0);
	put(&t, "# HELP sdcscan_last_success_timestamp_seconds When the last sdcscan run that ended OK ended (0: none "
		"saved).\n# TYPE sdcscan_last_success_timestamp_seconds gauge\nsdcscan_last_success_timestamp_seconds %.3f\n",
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
	put(&t, "# HELP sdcscan_probe_failed 1 when the probe found corruption, degradation or an error on the device "
		"in the last run, else 0.\n# TYPE sdcscan_probe_failed gauge\n");
	size_t i, k;
	json_t *p, *d;
	json_array_foreach(json_object_get(json_object_get(report, "run"), "probes"), i, p) {
		json_array_foreach(json_object_get(report, "devices"), k, d) {
			put(&t, "sdcscan_probe_failed{probe=\"");
			put_escaped(&t, sdc_json_str(p, "name"), false);
			put(&t, "\",");
			put_device_labels(&t, d);
			put(&t, "} %d\n", failed_on(report, sdc_json_str(p, "name"), sdc_json_str(d, "id")));
		}
	}
	return finish(&t, path, "Prometheus metrics", err, errlen);
}

int sdc_export_junit(void *report, const char *path, char *err, size_t errlen)
{
	struct text t = { 0 };
	json_t *run = json_object_get(report, "run");
	size_t i, k, f;
	json_t *p, *d, *fd;
	int tests = 0, failures = 0, skipped = 0;
	/* counted first: the suite's attributes come before its cases */
	json_array_foreach(json_object_get(run, "probes"), i, p)
		json_array_foreach(json_object_get(report, "devices"), k, d) {
			tests++;
			failures += failed_on(report, sdc_json_str(p, "name"), sdc_json_str(d, "id"));
			skipped += !ran_on(report, sdc_json_str(p, "name"), sdc_json_str(d, "id"));
		}
	put(&t, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"sdcscan\" tests=\"%d\" failures=\"%d\" "
		"skipped=\"%d\" time=\"%.3f\">\n",
	    tests, failures, skipped, json_number_value(json_object_get(run, "duration_seconds")));
	put(&t, "  <testsuite name=\"sdcscan ");
	put_escaped(&t, sdc_json_str(run, "profile"), true);
	put(&t, "\" tests=\"%d\" failures=\"%d\" skipped=\"%d\" errors=\"0\" timestamp=\"", tests, failures, skipped);
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
			if (!ran_on(report, probe, id)) {
				put(&t, "<skipped message=\"not run on this device\"/>");
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
