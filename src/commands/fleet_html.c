/* sdcscan fleet --html and --csv (fleet_data.h): written in the next commit. */
#include <stdio.h>

#include "commands/fleet_data.h"

int sdc_fleet_write_html(const struct fl_store *st, const struct fleet_out *o, int verdict)
{
	(void)st, (void)verdict;
	fprintf(stderr, "sdcscan fleet: --html %s: not written by this build\n", o->html);
	return -1;
}

int sdc_fleet_write_csv(const struct fl_store *st, const struct fleet_out *o)
{
	(void)st;
	fprintf(stderr, "sdcscan fleet: --csv %s: not written by this build\n", o->csv);
	return -1;
}
