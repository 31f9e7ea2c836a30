/* One variant of a plan entry, run in processes of its own (runner/variant.c). */
#ifndef SDC_CORE_VARIANT_H
#define SDC_CORE_VARIANT_H

#include "runner/output.h"
#include "runner/plan.h"
#include "probe/probe.h"

/* Results of a variant that did not run, one per device it would have run on; returns how many. */
int sdc_variant_plain_results(struct sdc_run *run, const struct sdc_probe *p, const struct sdc_variant *v,
			      enum sdc_status st, const char *why);
/* Runs v for share seconds: its processes, the vote, one result a device, printed. poll_interrupt
 * is called while it waits (an MPI peer's interrupt). 0, or -1 out of memory. */
int sdc_variant_run(struct sdc_run *run, const struct sdc_plan_entry *e, const struct sdc_variant *v, double share,
		    struct sdc_output *out, void (*poll_interrupt)(void));

#endif
