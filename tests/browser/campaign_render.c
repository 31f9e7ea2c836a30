/*
 * campaign_render NAME IN.json OUT.html: draws a campaign's JSON object with the renderer of
 * `sdcscan campaign NAME --html` (inject/campaign_html.h), for tests that plant what a real campaign
 * on a healthy host never shows (a MISSED count, hostile names). Exit 0, or 1 saying why.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "inject/campaign_html.h"
#include "run/facts_json.h"

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s NAME IN.json OUT.html\n", argv[0]);
		return 1;
	}
	json_error_t e;
	json_t *j = json_load_file(argv[2], 0, &e);
	if (!j) {
		fprintf(stderr, "%s:%d: %s\n", argv[2], e.line, e.text);
		return 1;
	}
	const int rc = sdc_campaign_html(argv[3], argv[1], sdc_facts_of(j));
	json_decref(j);
	return rc ? 1 : 0;
}
