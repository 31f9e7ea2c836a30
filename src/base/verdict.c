/* Verdicts, their names and exit codes (base/verdict.h). */
#include "base/verdict.h"

const char *sdc_verdict_name(enum sdc_verdict v)
{
	switch (v) {
	case SDC_OK:
		return "OK";
	case SDC_WARNING:
		return "WARNING";
	case SDC_CRITICAL:
		return "CRITICAL";
	case SDC_UNKNOWN:
		return "UNKNOWN";
	}
	return "UNKNOWN";
}

static int rank(enum sdc_verdict v)
{
	switch (v) {
	case SDC_OK:
		return 0;
	case SDC_WARNING:
		return 1;
	case SDC_UNKNOWN:
		return 2;
	case SDC_CRITICAL:
		return 3;
	}
	return 2;
}

enum sdc_verdict sdc_verdict_worst(enum sdc_verdict a, enum sdc_verdict b)
{
	return rank(a) >= rank(b) ? a : b;
}

int sdc_exit_code(enum sdc_verdict v, enum sdc_exit_style style)
{
	if (style == SDC_EXIT_NAGIOS)
		return (int)v;
	switch (v) {
	case SDC_OK:
		return 0;
	case SDC_WARNING:
	case SDC_CRITICAL:
		return 1;
	case SDC_UNKNOWN:
		return 2;
	}
	return 2;
}
