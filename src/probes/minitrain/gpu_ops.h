/*
 * The minitrain family: the exact class on a GPU (probes/minitrain/xgemm.cu: the exact GEMM, exp and
 * log, the bits the CPU gets) and minitrain's training steps there (probes/minitrain/minitrain.cu),
 * the table minitrain's GPU backend (gpu.c), benchmark (bench_gpu.c) and data-parallel training
 * over NCCL (dp.c) call. Bump
 * SDC_GPU_MINITRAIN_VERSION with any change to what this file declares.
 */
#ifndef SDC_PROBES_MINITRAIN_GPU_OPS_H
#define SDC_PROBES_MINITRAIN_GPU_OPS_H

#include "kernels/gpu_module.h"

#define SDC_GPU_MINITRAIN_VERSION 1

struct sdc_gpu_mt;
struct sdc_mt_op;

struct sdc_gpu_minitrain_ops {
	int version; /* SDC_GPU_MINITRAIN_VERSION */

	/* ---- the exact class (kernels/xops.h, probes/minitrain/xgemm.cu), on the calling thread's GPU ---- */
	/* C = A B (m x k, k x n, row-major, host memory) by the exact GEMM kernel: each element summed
	 * as sdc_xgemm_plain sums it, from the same source, so the bits must be the CPU's. */
	int (*xgemm)(int m, int n, int k, const float *a, const float *b, float *c, double timeout, char *err,
		     size_t errlen);
	/* exp and log of n doubles (host memory) on the GPU, as sdc_exp and sdc_log compute them. */
	int (*xmath)(int n, const double *x, double *exp_out, double *log_out, double timeout, char *err, size_t errlen);
	/* n x n x n: the exact kernel and cuBLAS sgemm on the same device operands, reps each back to
	 * back; seconds per GEMM of each (the best of three turns). */
	int (*xgemm_bench)(int n, int reps, double *exact_s, double *sgemm_s, double timeout, char *err, size_t errlen);

	/* ---- minitrain's steps on the calling thread's GPU (mt_ops.h, probes/minitrain/minitrain.cu):
	 * the model's minitrain.h backend. One stream; every operation a kernel of one CUDA thread per
	 * operation thread, calling the same sdc_mt_op_thread the CPU runs; the GEMM the exact kernel.
	 * Copies (host memory pageable, staged through pinned memory) wait for the stream by polling it to the deadline (a
	 * hung GPU fails the call, never blocks it); after one failure every call fails, mt_error saying why. ---- */
	struct sdc_gpu_mt *(*mt_open)(double timeout, char *err, size_t errlen);
	void (*mt_close)(struct sdc_gpu_mt *g);
	void *(*mt_alloc)(struct sdc_gpu_mt *g, size_t bytes); /* zeroed device memory; NULL: see mt_error */
	void (*mt_free)(struct sdc_gpu_mt *g, void *p);
	/* n copies, to the device (host to device) or from it: one wait for the stream before them
	 * and one after, so a step's tensors move in one batch. */
	int (*mt_copy)(struct sdc_gpu_mt *g, int to_device, int n, void *const *dst, const void *const *src,
		       const size_t *bytes);
	int (*mt_op)(struct sdc_gpu_mt *g, const struct sdc_mt_op *op);
	int (*mt_gemm)(struct sdc_gpu_mt *g, int m, int n, int k, const float *a, int lda, const float *b, int ldb,
		       float *c, int ldc);
	const char *(*mt_error)(struct sdc_gpu_mt *g);

	/* ---- xfmr-dp over NCCL (probes/minitrain/mt_nccl.cu; NULL in a module built without nccl.h) ---- */
	/* Data-parallel training's global gradient over NCCL (minitrain's xfmr-dp, one rank a GPU: a
	 * communicator of one member here): every rank's local (total floats, host memory) all-gathered
	 * by ncclAllGather, then each element's mean in rank order on the GPU (xops.h's
	 * sdc_xrank_mean, the bits the CPU's dp.c gets) into out (host). Within the deadline
	 * (*timed_out past it). */
	int (*nccl_rank_mean)(struct sdc_gpu_comm *c, const float *local, int64_t total, float *out, int *timed_out,
			      double timeout, char *err, size_t errlen);
};

#endif
