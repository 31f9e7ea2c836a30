/*
 * Human output: a header, a live progress line (TTY only), a line per probe, variant and
 * device, the findings under it, and the verdict line. Colour only on a TTY, never with
 * NO_COLOR, TERM=dumb or --no-color. Results go to stdout; when the JSON report takes
 * stdout, the human text moves to stderr.
 */
#ifndef SDC_OUTPUT_H
#define SDC_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "runner/plan.h"
#include "run/record.h"

struct sdc_output {
	FILE *fp;
	bool color;
	bool progress;
	bool quiet;
	bool progress_shown;
};

/* lead: this process draws progress on the shared terminal (rank 0 under mpirun, or alone). */
void sdc_output_init(struct sdc_output *o, bool json_on_stdout, bool quiet, bool no_color, bool lead);
void sdc_output_header(struct sdc_output *o, const struct sdc_run *run, const struct sdc_plan *plan);
/* Rank 0 under MPI: each other rank's summary line and first findings, from the fleet vote's JSON. */
void sdc_output_fleet_ranks(struct sdc_output *o, const void *fleet_json);
void sdc_output_progress(struct sdc_output *o, const char *label, double elapsed, double total,
			 uint64_t iterations, int devices);
void sdc_output_clear_progress(struct sdc_output *o);
/* Lines for results [from, to) and the findings that belong to them. */
void sdc_output_results(struct sdc_output *o, const struct sdc_run *run, int from, int to);
/* Lines for the findings that belong to no probe's result (probe "health": GPU memory errors, missing GPUs). */
void sdc_output_host_findings(struct sdc_output *o, const struct sdc_run *run, const char *probe);
void sdc_output_verdict(struct sdc_output *o, const struct sdc_run *run, enum sdc_verdict v,
			const char *report_path);

#endif
