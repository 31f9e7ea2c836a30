/*
 * The JSON report (schema/report.schema.json): schema_version, tool{version, argv,
 * exit_status}, host, devices, run, results, findings, injections, verdict. Written
 * atomically: a reader sees the old report or the new one, never half of one.
 */
#ifndef SDC_REPORT_H
#define SDC_REPORT_H

#include <jansson.h>
#include <stddef.h>

#include "runner/plan.h"
#include "run/record.h"

#define SDC_SCHEMA_MAJOR 1
#define SDC_SCHEMA_MINOR 2

/* summary: the verdict's one-line explanation; NULL derives it from the results. */
json_t *sdc_report_build(const struct sdc_run *run, const struct sdc_plan *plan, enum sdc_verdict v,
			 int exit_status, const char *summary);

/* Writes the report to path ("-": stdout). Returns 0 or -1 after printing the error. */
int sdc_report_write(json_t *report, const char *path);

#endif
