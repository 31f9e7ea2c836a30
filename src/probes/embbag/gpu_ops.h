/*
 * The embbag family: EmbeddingBag on a GPU (probes/embbag/embbag.cu), the table the embbag probe's
 * GPU lanes (embbag.c, lane.c) and benchmark (bench_gpu.c) call. Bump SDC_GPU_EMBBAG_VERSION with
 * any change to what this file declares.
 */
#ifndef SDC_PROBES_EMBBAG_GPU_OPS_H
#define SDC_PROBES_EMBBAG_GPU_OPS_H

#include "kernels/gpu_module.h"

#define SDC_GPU_EMBBAG_VERSION 1

struct sdc_gpu_eb;
struct sdc_eb_cfg;
struct sdc_eb_verdict;

struct sdc_gpu_embbag_ops {
	int version; /* SDC_GPU_EMBBAG_VERSION */

	/* ---- embbag on the calling thread's GPU (embbag_hd.h, probes/embbag/embbag.cu). One
	 * stream; every wait polled to the deadline; after one failure every call fails, eb_error
	 * saying why. ---- */
	/* A table of cfg's rows (with the ABFT trailer or without: the plain FBGEMM rows), made on the
	 * device from the seed as sdc_eb_row_truth makes them, and room for max_bags bags. */
	struct sdc_gpu_eb *(*eb_open)(const struct sdc_eb_cfg *cfg, int with_sums, int max_bags, double timeout,
				      char *err, size_t errlen);
	void (*eb_close)(struct sdc_gpu_eb *g);
	/* Draws batches [first, first + n) of cfg's stream on the device, as sdc_eb_batch_draw does
	 * (n * cfg->batch <= max_bags): the bags the lookups below take. */
	int (*eb_draw)(struct sdc_gpu_eb *g, uint64_t first, int n);
	/* Looks every drawn bag up (sums: enum sdc_eb_sums; with sums, each bag's output checked on
	 * the device by sdc_eb_check against its rows' stored sums). flips[nflips] (member: the bag,
	 * el: the column) are flipped in the output in GPU memory before the checks. out (host,
	 * bags x d floats) and v (host, one a bag) are copied back unless NULL. */
	int (*eb_lookup)(struct sdc_gpu_eb *g, int sums, const struct sdc_gpu_flip *flips, int nflips, float *out,
			 struct sdc_eb_verdict *v);
	/* Rows [row0, row0 + n) (from 0 again past the last) compared on the device with their truth
	 * and their stored sums with the recomputed ones: *nbad rows failed, the first max of them in
	 * bad[] in increasing order. */
	int (*eb_sweep)(struct sdc_gpu_eb *g, uint64_t row0, uint64_t n, uint64_t *bad, int max, int *nbad);
	/* One row's bytes (cfg's stride) copied from the device (write 0) or to it (write 1). */
	int (*eb_row)(struct sdc_gpu_eb *g, int write, uint64_t row, uint8_t *bytes);
	/* The benchmark: seconds per lookup of every drawn bag (sums as eb_lookup, nothing copied
	 * back), reps launches back to back between events. */
	int (*eb_time)(struct sdc_gpu_eb *g, int sums, int reps, double *seconds);
	const char *(*eb_error)(struct sdc_gpu_eb *g);
};

#endif
