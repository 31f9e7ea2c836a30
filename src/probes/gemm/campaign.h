/*
 * campaign gemm's trials (campaign_trials.c), what its tables (campaign.c) share with them: the
 * counts each worker keeps, the campaign's state, and the jobs that run on the workers (a Table II
 * trial, a bit table's flips, a tightness row set), each from the seed so a campaign replays.
 * Private to the gemm probe's folder.
 */
#ifndef SDC_GEMM_CAMPAIGN_H
#define SDC_GEMM_CAMPAIGN_H

#include <stdbool.h>
#include <stdint.h>

#include "device/parallel.h"
#include "probes/gemm/gemm.h"
#include "run/record.h"

#define MAX_WORKERS 1024
#define NBURN_DISTS 4

struct counts {
	uint64_t b_trials, b_detected, b_masked, b_missed, b_digest;
	/* B flips the checks must find (exact: the output changed; fast: sure to breach), and found */
	uint64_t b_significant, b_significant_detected;
	uint64_t c_trials, c_detected, c_located, c_significant, c_significant_detected;
	uint64_t c_data; /* flips in data columns, the ones the checksums can locate */
	uint64_t clean_trials, clean_fp_trials, clean_rows, clean_fp_rows;
	double min_margin[NBURN_DISTS]; /* fast: smallest threshold / |E| of a clean row, per distribution */
};

struct bits {
	uint64_t trials[NBURN_DISTS][64], detected[NBURN_DISTS][64];
	/* flips that moved the value by more than the row's threshold, and how many were found */
	uint64_t sig_trials[NBURN_DISTS][64], sig_detected[NBURN_DISTS][64];
};

struct worker_state {
	struct sdc_gemm g;
	bool ready;
	void *clean_c; /* C of the clean multiply, to tell a masked B flip */
	double *clean_e; /* fast: each row's clean verification difference */
	struct counts n;
	struct bits *bits;
	/* tightness */
	double sum_e, max_e, sum_t, min_ratio;
	uint64_t rows, below; /* below: rows whose threshold is under their actual difference */
};

struct campaign {
	struct sdc_gemm_cfg cfg;
	struct worker_state *ws;
	int nworkers;
	uint64_t seed;
	int bit_width;
	uint64_t bit_trials;
	char error[256];
};

/* One Table II trial: a clean check, a flip in C, a flip in B (arg: struct campaign). */
void sdc_gemm_campaign_table2_trial(void *arg, int worker, uint64_t trial);
/* A bit table's job: `bit_trials` flips of one bit position in C data elements, one distribution. */
void sdc_gemm_campaign_bits_job(void *arg, int worker, uint64_t job);
/* Tightness: each row's threshold against its actual verification difference, clean. */
void sdc_gemm_campaign_tight_job(void *arg, int worker, uint64_t job);
/* jobs of fn over the run's devices, then every worker's engine released; -1 after saying why. */
int sdc_gemm_campaign_run_phase(struct campaign *c, const struct sdc_run *run, uint64_t jobs, sdc_job_fn fn);

#endif
