/*
 * Verdicts and exit codes (Nagios plugin convention, DESIGN.md):
 *   0 OK, 1 WARNING (degraded), 2 CRITICAL (corruption found), 3 UNKNOWN (could not test).
 * Severity order for combining: OK < WARNING < UNKNOWN < CRITICAL. A corruption that was
 * found outranks a run that could not finish: the machine is bad whatever else happened.
 */
#ifndef SDC_VERDICT_H
#define SDC_VERDICT_H

enum sdc_verdict {
	SDC_OK = 0,
	SDC_WARNING = 1,
	SDC_CRITICAL = 2,
	SDC_UNKNOWN = 3,
};

enum sdc_exit_style {
	SDC_EXIT_NAGIOS, /* 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN */
	SDC_EXIT_NPD,    /* node-problem-detector: 0 OK, 1 problem (WARNING, CRITICAL), 2 unknown */
};

const char *sdc_verdict_name(enum sdc_verdict v);
enum sdc_verdict sdc_verdict_worst(enum sdc_verdict a, enum sdc_verdict b);
int sdc_exit_code(enum sdc_verdict v, enum sdc_exit_style style);

#endif
