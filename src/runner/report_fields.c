/* The fields of a report that its reader and its exports both take (runner/report_fields.h). */
#include "runner/report_fields.h"

#include <jansson.h>
#include <string.h>
#include <time.h>

const char *sdc_json_str(void *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));
	return v ? v : "";
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
