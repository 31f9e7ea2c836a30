/* What the GPU module's CUDA files share: error text, and waits that poll against a deadline. */
#ifndef SDC_CUDA_UTIL_H
#define SDC_CUDA_UTIL_H

#include <cuda_runtime.h>
#include <stddef.h>

#include "kernels/gpu_module.h"

/* Seconds on the monotonic clock. */
double sdc_cuda_clock(void);

/* "WHAT: cudaErrorX (text)" into err. */
void sdc_cuda_error(char *err, size_t errlen, const char *what, cudaError_t e);

/*
 * Waits for the recorded event ev, polling it (never a blocking synchronize), up to timeout
 * seconds. 0; -1 with err naming what failed (a sticky error); 1 with err saying what did not
 * finish in time (a hung GPU, an Xid): nothing may wait on that GPU again.
 */
int sdc_cuda_poll(cudaEvent_t ev, double timeout, const char *what, char *err, size_t errlen);

/* Waits for everything queued on stream s so far: records ev there and polls it. */
int sdc_cuda_wait(cudaStream_t s, cudaEvent_t ev, double timeout, const char *what, char *err, size_t errlen);

/* The same for a stream that waits a few dozen times a second after short kernels: the first
 * 2 ms are polled with a yield, not the 20 us sleep of sdc_cuda_poll (70 us with the kernel's timer
 * slack), which would cost more than the kernels. */
int sdc_cuda_settle(cudaStream_t s, cudaEvent_t ev, double timeout, const char *what, char *err, size_t errlen);

/*
 * A stream whose first failure sticks (minitrain's and embbag's entries): after it every call
 * fails, err saying why; a wait past the deadline marks the GPU hung, and nothing may wait on it
 * again (its memory and stream are kept: cudaFree and cudaStreamDestroy would wait).
 */
struct sdc_cuda_sticky {
	cudaStream_t s;
	cudaEvent_t ev;
	double timeout;
	char err[256];
	int failed;
	int hung;
};
/* Records what failed (the first failure's words stay); -1. */
int sdc_cuda_sticky_fail(struct sdc_cuda_sticky *k, const char *what, cudaError_t e);
/* Everything queued so far done, within the deadline (sdc_cuda_settle); 0, or -1. */
int sdc_cuda_sticky_settle(struct sdc_cuda_sticky *k, const char *what);
/* After a launch: cudaGetLastError, as a failure of what; 0, or -1. */
int sdc_cuda_sticky_launched(struct sdc_cuda_sticky *k, const char *what);

/*
 * A one-call workspace (the exact class's and the hop checks' entries): device buffers of the given
 * sizes, a stream, an event to wait on, and with timing two timing events. init: 0, or -1 with err
 * (everything made so far freed); free takes what is there.
 */
#define SDC_CUDA_WORK_BUFS 8
struct sdc_cuda_work {
	void *buf[SDC_CUDA_WORK_BUFS];
	cudaStream_t s;
	cudaEvent_t ev, t0, t1;
};
int sdc_cuda_work_init(struct sdc_cuda_work *w, const size_t *bytes, int nbuf, int timing, char *err, size_t errlen);
void sdc_cuda_work_free(struct sdc_cuda_work *w);
/* A CUDA call in a function with err, errlen and a fail: label. */
#define SDC_CUDA_TRY(call, what)                                                                               \
	do {                                                                                                   \
		const cudaError_t e_ = (call);                                                                 \
		if (e_ != cudaSuccess) {                                                                       \
			sdc_cuda_error(err, errlen, what, e_);                                                 \
			goto fail;                                                                             \
		}                                                                                              \
	} while (0)

/*
 * The CRC32C of device bytes on the GPU (ring.cu): pieces of 256 bytes each CRC'd by a thread,
 * then joined pairwise into the value sdc_crc32c gives. The scratch: two levels of the pieces'
 * CRCs (c) and lengths (l), sdc_cuda_crc_pieces(len) entries each. The result ends in
 * sc->c[*which][0], on stream s.
 */
struct sdc_crc_scratch {
	uint32_t *c[2];
	uint64_t *l[2];
};
uint64_t sdc_cuda_crc_pieces(uint64_t len);
void sdc_cuda_crc_enqueue(const uint8_t *p, uint64_t len, struct sdc_crc_scratch *sc, int *which, cudaStream_t s);

/* The exact GEMM kernel (xgemm.cu) on device matrices, row-major with leading dimensions; m, n >= 1. */
void sdc_cuda_xgemm_launch(int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c, int ldc,
			   cudaStream_t s);

/* Fills the engine's entries of the module table (gemm.cu), and the exact class's (xgemm.cu). */
void sdc_cuda_gemm_ops(struct sdc_gpu_module *m);
void sdc_cuda_xops(struct sdc_gpu_module *m);
/* ... and the allreduce probe's hop checks' (ring.cu). */
void sdc_cuda_ring_ops(struct sdc_gpu_module *m);
/* ... and minitrain's steps (minitrain.cu). */
void sdc_cuda_mt_ops(struct sdc_gpu_module *m);
/* ... and embbag's lookups (embbag.cu). */
void sdc_cuda_eb_ops(struct sdc_gpu_module *m);
/* ... and NCCL's collectives checked exactly, and the GPU's ping (nccl.cu). */
void sdc_cuda_nccl_ops(struct sdc_gpu_module *m);

#endif
