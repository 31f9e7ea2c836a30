/*
 * The embbag probe's lanes (embbag.c) and the steps they share (lane.c): the state a lane's worker
 * keeps, and what it does once a check fails or a fault is due, on a core and on a GPU alike.
 */
#ifndef SDC_PROBES_EMBBAG_LANE_H
#define SDC_PROBES_EMBBAG_LANE_H

#include <stdbool.h>
#include <stdint.h>

#include "probe/probe.h"
#include "probes/embbag/abft.h"
#include "probes/embbag/gpu_ops.h"

struct embbag_shared {
	struct sdc_eb_cfg cfg;
	const struct sdc_eb_impl *impl;
	bool shared_table;
	struct sdc_eb_table table; /* the shared one */
	int batches;
	uint64_t sweep_rows;
	double gpu_timeout;
	char operation[96];
};

struct eb_worker;

/*
 * The table where a lane keeps it: this core's memory (sdc_eb_table_here) or the GPU's
 * (sdc_eb_table_on_gpu). The steps both lanes share (a bag's report, a fault planted in the table)
 * reach its rows only through these, so neither lane branches on where it runs.
 */
struct sdc_eb_table_ops {
	/* A row's bytes as the table holds them (on a GPU: a copy read back); NULL when the GPU failed. */
	uint8_t *(*row_at)(struct eb_worker *ew, uint64_t row);
	/* After row_at's bytes were changed: kept (on a GPU, written back). */
	void (*row_stored)(struct eb_worker *ew, uint64_t row);
	/* The row put back to its truth. */
	void (*row_repair)(struct eb_worker *ew, uint64_t row);
	/* This iteration's slice of the table re-verified at rest. */
	void (*sweep)(struct eb_worker *ew);
};
extern const struct sdc_eb_table_ops sdc_eb_table_here, sdc_eb_table_on_gpu;

struct eb_worker {
	struct sdc_worker *w;
	const struct sdc_eb_table_ops *table; /* where its table is: here or on its GPU */
	const struct embbag_shared *sh;
	struct sdc_eb_table own, *t;
	struct sdc_eb_batch batch;
	float *out, *ref;
	struct sdc_eb_expect *expect;
	uint8_t *scratch, *truth_row;
	uint64_t *hashes;
	uint64_t sweep_cursor;
	uint64_t iter;
	/* on a GPU: its module and table (ew->t then holds the truth only), a row read back, and an
	 * iteration's verdicts; lost once the GPU failed */
	const struct sdc_gpu_embbag_ops *m;
	struct sdc_gpu_eb *g;
	uint8_t *row_buf;
	struct sdc_eb_verdict *verdicts;
	bool lost;
};

/* The GPU failed: the lane is declared lost (once) with the module's reason. */
void sdc_eb_lane_gpu_lost(struct eb_worker *ew);
/* The T faults due this iteration (ew->batch: its first batch, where the default row comes from). */
void sdc_eb_lane_table_faults(struct eb_worker *ew, const struct sdc_fault *faults, int nf);
/* Output faults due at one bag (row = the bag's number within the iteration), before its check. */
void sdc_eb_lane_output_faults(struct eb_worker *ew, int64_t this_bag, struct sdc_fault *faults, int nf);
/* On a GPU, the R faults due this iteration as flips of its outputs there; returns how many
 * (flip k from fault from[k]). */
int sdc_eb_lane_output_flips(struct eb_worker *ew, const struct sdc_fault *faults, int nf,
			     struct sdc_gpu_flip *flips, int *from);
/* The flips reported as applied, once the outputs came back. */
void sdc_eb_lane_report_flips(struct eb_worker *ew, const struct sdc_fault *faults, const struct sdc_gpu_flip *flips,
			      const int *from, int nflips);
/* A bag failed its check (out: its output, v: the verdict): its rows and its output compared with
 * the truth, every difference reported, a corrupted row repaired. */
void sdc_eb_lane_report_bag(struct eb_worker *ew, int bag, const float *out, const struct sdc_eb_verdict *v,
			    int *bags_reported);

#endif
