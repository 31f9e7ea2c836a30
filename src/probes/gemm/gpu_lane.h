/*
 * The gemm probe's GPU lane (the GPU module's gemm family, probes/gemm/gpu_ops.h), shared by its two
 * files and by nothing else:
 *   gpu.c       the lanes' configuration and set-up, and a lane's run: its engine made, its operands
 *               drawn and compared with the host's twin, the GPU's reference rate, faults injected,
 *               iterations submitted two in flight
 *   gpu_look.c  an iteration looked at: collected, the operands' fingerprints, failing rows read back
 *               and recomputed on the host, the SM replay, findings filed, the digest given to the vote
 */
#ifndef SDC_PROBES_GEMM_GPU_LANE_H
#define SDC_PROBES_GEMM_GPU_LANE_H

#include <stdbool.h>
#include <stdint.h>

#include "probes/gemm/gemm.h"

/* One GPU lane: its worker (one GPU), its engine and the host's buffers for what it reads back. */
struct gemm_lane {
	struct sdc_worker *w;
	const struct gemm_shared *sh;
	const struct sdc_gpu_gemm_ops *m;
	struct sdc_gpu_gemm *g;
	struct sdc_gpu_truth truth;
	uint64_t set;     /* the operand set on the device */
	bool loaded;
	uint64_t iter;    /* the iteration being submitted or looked at */
	int slot;         /* the slot being looked at (its C) */
	bool fingerprinted[SDC_GPU_SLOTS]; /* the slot's submission took the operands' fingerprints */
	const double *pool;
	int esz, csz;
	uint64_t *sums;   /* m x 2 */
	struct sdc_gpu_bad_row *bad; /* m */
	void *c_host;     /* vote lanes: C as the CPU lays it out */
	uint32_t *tiles;  /* SM replay */
	void *row;        /* one row of C, n_ext elements */
	int64_t *ref_i64;
	double *ref_f64;
	char err[256];
};

/* gpu.c */
/* A platform failure: the GPU could not be tested (UNKNOWN), named with its bus id; l->err says why. */
void sdc_gemm_lane_error(struct gemm_lane *l, const char *what);
/* Draws operand set `set` on the device (and forgets the host's twin of the last). -1: l->err. */
int sdc_gemm_lane_load(struct gemm_lane *l, uint64_t set);
/* The host's twin of the operand set on the device (gpu_truth.c), made if not yet. -1: l->err. */
int sdc_gemm_lane_truth(struct gemm_lane *l);

/* gpu_look.c */
/* A corruption finding of the lane's current iteration, at (row, col) of target. */
void sdc_gemm_lane_finding(struct sdc_finding *f, const struct gemm_lane *l, const char *kind, const char *target,
			   int64_t row, int64_t col);
/*
 * Collects iteration iter from slot and files what it shows. *redo: its operands were found
 * changed and reloaded, so whatever was submitted after it ran on bad operands and must run
 * again. -1: the lane failed.
 */
int sdc_gemm_lane_look(struct gemm_lane *l, int slot, uint64_t iter, bool *redo);
/* The operands' fingerprints taken alone (slot's C untouched) against the load's, after the lane's
 * last iteration iter took none: a change at rest since the last is filed at iter (and the
 * operands reloaded). */
void sdc_gemm_lane_verify_at_end(struct gemm_lane *l, int slot, uint64_t iter);

#endif
