/* The fields of a report (a json_t *, as void * for files that do not include jansson) that both
 * its reader (report_read.c) and its exports (export.c) take: below both of them. */
#ifndef SDC_RUNNER_REPORT_FIELDS_H
#define SDC_RUNNER_REPORT_FIELDS_H

/* A string member of a JSON object (json_t *), "" when it is missing or not a string. */
const char *sdc_json_str(void *o, const char *key);
/* The end of the run a report describes (start + duration, Unix time), or -1 if it says none. */
double sdc_report_end_time(void *report);

#endif
