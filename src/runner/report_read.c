/* A saved report read back into a summary (report_read.h). */
#include "runner/report_read.h"

#include <inttypes.h>
#include <stdint.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "base/json_load.h"
#include "runner/export.h"
#include "runner/report.h"

/*
 * Whether the report's verdict is less than its own findings and results say (an OK over a
 * corruption finding: edited, or written by something else): such a report is refused, never
 * believed either way.
 */
static bool inconsistent(json_t *r, enum sdc_verdict v, char *why, size_t whylen)
{
	size_t i;
	json_t *x;
	json_array_foreach(json_object_get(r, "findings"), i, x) {
		const char *cls = sdc_json_str(x, "class");
		for (int c = SDC_FINDING_CORRUPTION; c <= SDC_FINDING_HANG; c++) {
			const enum sdc_verdict fv = sdc_finding_class_verdict((enum sdc_finding_class)c);
			if (!strcmp(cls, sdc_finding_class_name((enum sdc_finding_class)c)) && sdc_verdict_worst(v, fv) != v) {
				snprintf(why, whylen, "its verdict (%s) disagrees with its findings (a %s finding: %.32s on %.16s)",
					 sdc_verdict_name(v), cls, sdc_json_str(x, "kind"), sdc_json_str(x, "device"));
				return true;
			}
		}
	}
	static const char *const worse[][2] = { { "corrupt", "CRITICAL" }, { "crashed", "CRITICAL" } };
	json_array_foreach(json_object_get(r, "results"), i, x)
		for (size_t k = 0; k < sizeof(worse) / sizeof(worse[0]); k++)
			if (!strcmp(sdc_json_str(x, "status"), worse[k][0]) && v != SDC_CRITICAL) {
				snprintf(why, whylen, "its verdict (%s) disagrees with its results (%.24s/%.24s on %.16s is %s)",
					 sdc_verdict_name(v), sdc_json_str(x, "probe"), sdc_json_str(x, "variant"),
					 sdc_json_str(x, "device"), worse[k][0]);
				return true;
			}
	return false;
}

void *sdc_report_parse(const char *text, size_t len, char *why, size_t whylen)
{
	json_error_t je;
	json_t *r = sdc_json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!r) {
		char *near = strstr(je.text, " near "); /* (jansson quotes the file's bytes there: never echoed) */
		if (near)
			*near = '\0';
		snprintf(why, whylen, "not JSON: %s (line %d, column %d)", je.text, je.line, je.column);
		return NULL;
	}
	json_t *sv = json_object_get(r, "schema_version"), *verdict = json_object_get(r, "verdict");
	json_t *code = json_object_get(verdict, "code"), *run = json_object_get(r, "run");
	if (!json_is_object(r) || !json_is_array(sv) || !json_is_integer(json_array_get(sv, 0)))
		snprintf(why, whylen, "not an sdcscan report (no schema_version)");
	else if (json_integer_value(json_array_get(sv, 0)) != SDC_SCHEMA_MAJOR)
		snprintf(why, whylen, "report schema %" JSON_INTEGER_FORMAT ".x, this sdcscan reads %d.x",
			 json_integer_value(json_array_get(sv, 0)), SDC_SCHEMA_MAJOR);
	else if (!json_is_integer(code) || json_integer_value(code) < SDC_OK || json_integer_value(code) > SDC_UNKNOWN ||
		 strcmp(sdc_json_str(verdict, "status"), sdc_verdict_name((enum sdc_verdict)json_integer_value(code))))
		snprintf(why, whylen, "its verdict is not one of OK, WARNING, CRITICAL, UNKNOWN with its code");
	else if (!json_is_object(run) || sdc_report_end_time(r) < 0 ||
		 !(json_number_value(json_object_get(run, "duration_seconds")) >= 0))
		snprintf(why, whylen, "run.start or run.duration_seconds is missing or malformed");
	else if (!json_is_array(json_object_get(r, "results")) || !json_is_array(json_object_get(r, "devices")) ||
		 !json_is_array(json_object_get(r, "findings")))
		snprintf(why, whylen, "it has no results, devices or findings list");
	else if (inconsistent(r, (enum sdc_verdict)json_integer_value(code), why, whylen))
		; /* why says */
	else
		return r;
	json_decref(r);
	return NULL;
}

/* Whether a finding of the report's class name gives verdict v. */
static bool class_gives(const char *name, enum sdc_verdict v)
{
	for (int c = SDC_FINDING_CORRUPTION; c <= SDC_FINDING_HANG; c++)
		if (!strcmp(name, sdc_finding_class_name((enum sdc_finding_class)c)))
			return sdc_finding_class_verdict((enum sdc_finding_class)c) == v;
	return false;
}

int sdc_report_read_summary(const char *text, size_t len, struct sdc_report_summary *s, char *why, size_t whylen)
{
	memset(s, 0, sizeof(*s));
	json_t *r = sdc_report_parse(text, len, why, whylen);
	if (!r)
		return -1;
	json_t *verdict = json_object_get(r, "verdict"), *run = json_object_get(r, "run");
	json_t *findings = json_object_get(r, "findings");
	s->end = sdc_report_end_time(r);
	s->verdict = (enum sdc_verdict)json_integer_value(json_object_get(verdict, "code"));
	s->duration = json_number_value(json_object_get(run, "duration_seconds"));
	snprintf(s->profile, sizeof(s->profile), "%s", sdc_json_str(run, "profile"));
	snprintf(s->host, sizeof(s->host), "%s", sdc_json_str(json_object_get(r, "host"), "hostname"));
	snprintf(s->summary, sizeof(s->summary), "%s", sdc_json_str(verdict, "summary"));
	s->nfindings = (int)json_array_size(findings);
	snprintf(s->warning, sizeof(s->warning), "%s", json_string_value(json_array_get(json_object_get(run, "warnings"), 0)) ?
								json_string_value(json_array_get(json_object_get(run, "warnings"), 0)) : "");
	/* the headline: the first finding at the verdict's level that names a device, else the first
	 * (a vote's "host" disagreement and the located fault of the same iteration reach the report
	 * in the order the burns' records and the vote happen to arrive) */
	size_t i, pick = SIZE_MAX;
	json_t *f;
	json_array_foreach(findings, i, f) {
		if (!class_gives(sdc_json_str(f, "class"), s->verdict))
			continue;
		if (pick == SIZE_MAX)
			pick = i;
		if (strcmp(sdc_json_str(f, "device"), "host")) {
			pick = i;
			break;
		}
	}
	json_array_foreach(findings, i, f) {
		if (i != pick)
			continue;
		json_t *row = json_object_get(f, "row"), *col = json_object_get(f, "col");
		char where[64] = "";
		if (*sdc_json_str(f, "target") && json_is_integer(row) && json_is_integer(col))
			snprintf(where, sizeof(where), " %.8s[%" JSON_INTEGER_FORMAT "][%" JSON_INTEGER_FORMAT "]",
				 sdc_json_str(f, "target"), json_integer_value(row), json_integer_value(col));
		snprintf(s->first, sizeof(s->first), "%.16s %.24s%s%.48s %.32s%s", sdc_json_str(f, "device"),
			 sdc_json_str(f, "probe"), *sdc_json_str(f, "variant") ? "/" : "", sdc_json_str(f, "variant"),
			 sdc_json_str(f, "kind"), where);
		snprintf(s->first_detail, sizeof(s->first_detail), "%s", sdc_json_str(f, "detail"));
		break;
	}
	json_decref(r);
	return 0;
}
