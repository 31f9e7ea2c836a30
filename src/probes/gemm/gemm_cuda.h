/*
 * The gemm family's CUDA, shared by its three files (and by nothing else): the engine's state, the
 * element conversions its kernels share, and the calls one file makes into another. A kernel is
 * launched from the file that defines it (the module is built without relocatable device code), so
 * each file exports host functions that enqueue its kernels:
 *   gemm.cu         the engine: its state made and freed, cuBLASLt set up and called, submissions
 *                   collected, elements read and flipped, the family's table
 *   gemm_abft.cu    the operands drawn on the device, B's checksum columns encoded, the V-ABFT
 *                   thresholds, the fingerprints and the row checks of C
 *   gemm_replay.cu  the SM replay: sdcscan's own exact kernel recomputing a tile on every SM
 * The layout of A, B and C on the device is gemm.cu's top comment's. Every function here follows the
 * module's rules (kernels/gpu_module.h): no wait past the deadline, copies through pinned staging.
 */
#ifndef SDC_PROBES_GEMM_CUDA_H
#define SDC_PROBES_GEMM_CUDA_H

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "kernels/cuda/cuda_util.h"
#include "probes/gemm/gpu_ops.h"
#include "probes/gemm/gemm_data.h"
#include "probes/gemm/gemm_elements.h"
#include "kernels/half.h"

#define THREADS 256
#define WORKSPACE (32u << 20)
#define DIGITS_MAX 16

/* ---- the engine's state ---- */

/*
 * One slot (gpu_module.h): its C, and its results in one device block copied back in one piece:
 * the failing-row count, the operands' fingerprints, the rows' sums.
 */
#define RES_NBAD 0
#define RES_FP 8
#define RES_SUMS 24

struct slot {
	uint32_t *cm;              /* m x ldc, int32 or fp32 bits */
	uint8_t *res;              /* device: RES_SUMS + 16 m bytes */
	struct sdc_cuda_pinned res_host; /* the same, filled by the submission's copy */
	struct sdc_gpu_bad_row *bad;
	cudaEvent_t done;          /* recorded after the submission's copy */
	int what;                  /* what the last submission did (0: none yet) */
};

struct sdc_gpu_gemm {
	struct sdc_gpu_gemm_cfg c;
	int kp, esz;
	int dev;                   /* the GPU it was made on */
	cudaStream_t s;
	cudaEvent_t ev;
	bool hung;                 /* a wait passed its deadline: nothing may wait on this GPU again */
	uint8_t *a, *bt;           /* element bits */
	struct slot slot[SDC_GPU_SLOTS];
	double *pool;              /* the current distribution pool (fast class) */
	const double *pool_host;
	double *thr, *thr2;        /* m each */
	double *brow;              /* k x 2: each B row's mean and variance bound */
	double *bstats;            /* 3: sum |mean|, sum mean^2, sum variance bound */
	unsigned long long *fp;    /* 2: fingerprints of A and B, taken at load */
	unsigned long long fp_load[2];
	uint32_t *tiles;           /* SM replay: sms x TILE x TILE */
	int *smid;
	int sms, replay_smem;
	/* pinned host staging: every copy goes through it, so none blocks past a deadline */
	struct sdc_cuda_pinned stage;
	/* cuBLASLt */
	cublasLtHandle_t lt;
	cublasLtMatmulDesc_t op;
	cublasLtMatrixLayout_t la, lb, lc, la_plain, lc_plain;
	cublasLtMatmulAlgo_t algo, algo_plain;
	void *ws;
	char kernel[160];
};

/* Returns -1 from the calling function, err naming the CUDA call that failed. */
#define CUDA_TRY(call, what)                                                                      \
	do {                                                                                      \
		const cudaError_t e_ = (call);                                                    \
		if (e_ != cudaSuccess) {                                                          \
			sdc_cuda_error(err, errlen, what, e_);                                    \
			return -1;                                                                \
		}                                                                                 \
	} while (0)

/* ---- elements in memory (their conversions: gemm_elements.h, shared with the host) ---- */

__device__ __forceinline__ void dev_put(uint8_t *buf, int esz, size_t idx, uint64_t bits)
{
	uint8_t *p = buf + idx * (size_t)esz;
	if (esz == 1)
		*p = (uint8_t)bits;
	else if (esz == 2)
		*(uint16_t *)p = (uint16_t)bits;
	else
		*(uint32_t *)p = (uint32_t)bits;
}

__device__ __forceinline__ uint64_t dev_get(const uint8_t *buf, int esz, size_t idx)
{
	const uint8_t *p = buf + idx * (size_t)esz;
	return esz == 1 ? *p : esz == 2 ? *(const uint16_t *)p : *(const uint32_t *)p;
}

/* ---- the engine's stream, for each of its .cu files ---- */

/* Waits for everything queued on the engine's stream, to its deadline; a GPU found hung is marked. */
static inline int sdc_cuda_gemm_wait(struct sdc_gpu_gemm *g, const char *what, char *err, size_t errlen)
{
	if (g->hung) {
		snprintf(err, errlen, "%s: the GPU hung earlier in this run", what);
		return -1;
	}
	const int r = sdc_cuda_wait(g->s, g->ev, g->c.timeout, what, err, errlen);
	g->hung = r > 0;
	return r ? -1 : 0;
}

/* Device memory in the engine's stream order (freed the same way: g_destroy). */
static inline cudaError_t sdc_cuda_gemm_malloc(struct sdc_gpu_gemm *g, void **p, size_t bytes)
{
	return sdc_cuda_malloc(g->dev, p, bytes, g->s);
}

/* ---- gemm_abft.cu ---- */

/* The family's gemm_load (gpu_ops.h): operand set `set` drawn, B encoded, fingerprints taken. */
int sdc_cuda_gemm_load(struct sdc_gpu_gemm *g, uint64_t set, const double *pool, char *err, size_t errlen);
/* Enqueues A's and B's fingerprints into out[0] and out[1] (device memory). */
int sdc_cuda_gemm_fingerprints(struct sdc_gpu_gemm *g, unsigned long long *out, char *err, size_t errlen);
/* Enqueues the row checks of slot sl's C: its failing-row count, rows' sums and failing rows. */
int sdc_cuda_gemm_check(struct sdc_gpu_gemm *g, struct slot *sl, char *err, size_t errlen);

/* ---- gemm_replay.cu ---- */

/* The replay's part of the engine: the SMs it runs on, its shared memory, its tiles. */
int sdc_cuda_gemm_replay_init(struct sdc_gpu_gemm *g, char *err, size_t errlen);
/* The family's gemm_sm_replay (gpu_ops.h). */
int sdc_cuda_gemm_sm_replay(struct sdc_gpu_gemm *g, struct sdc_gpu_sm_replay *r, char *err, size_t errlen);

#endif
