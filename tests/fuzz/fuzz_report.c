/* The report reader of sdcscan status (a saved last.json, or any file named to it). */
#include "runner/report_read.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sdc_report_summary s;
	char why[256];
	(void)sdc_report_read_summary((const char *)data, size, &s, why, sizeof(why));
	return 0;
}
