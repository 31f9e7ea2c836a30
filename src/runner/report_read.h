/*
 * Reading a saved report back (what `sdcscan status` and the fleet's tools read): the few fields
 * a summary needs, each checked for its type, from text that may be anything (a truncated file,
 * another tool's JSON, a report of a newer major schema).
 */
#ifndef SDC_REPORT_READ_H
#define SDC_REPORT_READ_H

#include "runner/report_fields.h"

#include <stddef.h>

#include "base/verdict.h"

struct sdc_report_summary {
	enum sdc_verdict verdict;
	double end;      /* when the run ended, Unix time */
	double duration; /* seconds */
	char profile[64];
	char host[64];
	char summary[160]; /* the report's own verdict line */
	int nfindings;
	/* the first finding at the verdict's level that names a device (else the first): "cpu3
	 * gemm/int8 checksum-mismatch C[3][4]" */
	char first[160];
	char first_detail[320];
	char warning[240]; /* the run's first warning (run.warnings: a metrics folder missing), "" when none */
};


/*
 * A report's text parsed and checked for what every reader of reports reads: this schema major,
 * a verdict whose code and status agree, run.start and run.duration_seconds, the results,
 * devices and findings lists. The json_t *, or NULL with why.
 */
void *sdc_report_parse(const char *text, size_t len, char *why, size_t whylen);

/* 0, or -1 with why (what is missing or malformed). */
int sdc_report_read_summary(const char *text, size_t len, struct sdc_report_summary *s, char *why, size_t whylen);

#endif
