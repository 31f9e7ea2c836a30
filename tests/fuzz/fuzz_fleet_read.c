/*
 * sdcscan fleet's report reader (commands/fleet_read.c over base/json_scan.c) against jansson:
 * beside what ASan/UBSan judge, the scanner must take exactly the documents jansson's json_loadb
 * (JSON_REJECT_DUPLICATES) takes, and the reader exactly the reports sdc_report_parse takes; the
 * one difference allowed is a key given twice where fleet does not read (json_scan.h). A raw NUL
 * byte is not JSON, whatever jansson 2.14 says after a number or keyword (sdc_json_nul). A
 * disagreement aborts, and libFuzzer keeps the input.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "base/json_scan.h"
#include "commands/fleet_data.h"
#include "runner/report_read.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fleet_rec rec; /* (kept: the reader reuses its buffers, as fleet's threads do) */
	const char *text = (const char *)data;
	json_error_t e;
	json_t *j = memchr(text, '\0', size) ? NULL : json_loadb(text, size, JSON_REJECT_DUPLICATES, &e);
	const bool dup = !j && !memchr(text, '\0', size) && strstr(e.text, "duplicate");
	struct sdc_jscan s;
	sdc_jscan_init(&s, text, size);
	const enum sdc_jtype t = sdc_jscan_peek(&s);
	const bool scanned = (t == SDC_JOBJECT || t == SDC_JARRAY) && sdc_jscan_skip(&s) && sdc_jscan_end(&s);
	if (!dup && scanned != (j != NULL)) {
		fprintf(stderr, "the scanner %s what jansson %s (%s)\n", scanned ? "takes" : "refuses", j ? "takes" : "refuses",
			j ? "" : e.text);
		abort();
	}
	json_decref(j);
	char why[700];
	json_t *r = sdc_report_parse(text, size, why, sizeof(why));
	const bool read = sdc_fleet_rec_read(&rec, text, size) == 0;
	if (!(r == NULL && strstr(why, "duplicate")) && read != (r != NULL)) {
		fprintf(stderr, "fleet's reader %s what sdc_report_parse %s (%s)\n", read ? "takes" : "refuses",
			r ? "takes" : "refuses", r ? "" : why);
		abort();
	}
	json_decref(r);
	return 0;
}
