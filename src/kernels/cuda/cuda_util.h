/*
 * What the GPU module's CUDA files share (cuda_util.cu): error text, waits that poll against a
 * deadline, and the only ways the module frees, allocates and copies to or from host memory, none
 * of which can wait on a hung GPU (tests/gpu/wait_lint.py checks that nothing else does).
 *
 * A GPU is "hung" once any wait on it has passed its deadline (any lane's: the flag is the GPU's,
 * shared by every lane on it). From then on nothing is started on it (the entries that make
 * something refuse), and nothing of it is freed, destroyed or reused: work queued there may never
 * end, so its memory, streams and staging are left to the process's end.
 */
#ifndef SDC_CUDA_UTIL_H
#define SDC_CUDA_UTIL_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/gpu_module.h"

/* Seconds on the monotonic clock. */
double sdc_cuda_clock(void);

/* "WHAT: cudaErrorX (text)" into err. */
void sdc_cuda_error(char *err, size_t errlen, const char *what, cudaError_t e);

/* ---- the GPUs' hung flags ---- */
#define SDC_CUDA_MAX_DEVICES 64
/* The calling thread's GPU (cudaGetDevice), or -1. */
int sdc_cuda_device(void);
void sdc_cuda_mark_hung(int dev);
/* 1 when dev is hung (and for a dev the module cannot name: nothing of it is freed). */
int sdc_cuda_is_hung(int dev);
/* 0, or -1 with err saying dev is hung (or not a GPU): for entries that would start something. */
int sdc_cuda_refuse_hung(int dev, char *err, size_t errlen);

/*
 * Waits for the recorded event ev, polling it (never a blocking synchronize), up to timeout
 * seconds. 0; -1 with err naming what failed (a sticky error); 1 with err saying what did not
 * finish in time (a hung GPU, an Xid): the calling thread's GPU, which must be ev's, is marked
 * hung (nothing may wait on it again).
 */
int sdc_cuda_poll(cudaEvent_t ev, double timeout, const char *what, char *err, size_t errlen);

/* Waits for everything queued on stream s so far: records ev there and polls it. */
int sdc_cuda_wait(cudaStream_t s, cudaEvent_t ev, double timeout, const char *what, char *err, size_t errlen);

/* The same for a stream that waits a few dozen times a second after short kernels: the first
 * 2 ms are polled with a yield, not the 20 us sleep of sdc_cuda_poll (70 us with the kernel's timer
 * slack), which would cost more than the kernels. */
int sdc_cuda_settle(cudaStream_t s, cudaEvent_t ev, double timeout, const char *what, char *err, size_t errlen);

/* 1 when everything queued on s has run (one cudaStreamQuery: it never waits). */
int sdc_cuda_idle(cudaStream_t s);

/* ---- device memory: stream ordered, so no free waits for the device ---- */
/* bytes (at least 1) of GPU dev's memory, allocated in s's order (cudaMallocAsync; cudaMalloc on a
 * GPU without the stream-ordered allocator); usable by work queued on s after this call. */
cudaError_t sdc_cuda_malloc(int dev, void **p, size_t bytes, cudaStream_t s);
/* Frees p in s's order (cudaFreeAsync: it never waits); nothing on a hung GPU, or memory that came
 * from cudaMalloc (its cudaFree may wait for the device), which is left to the process's end. */
void sdc_cuda_free(int dev, void *p, cudaStream_t s);

/* ---- pinned host staging: every copy between host and device memory goes through it ---- */
struct sdc_cuda_pinned {
	uint8_t *p;
	size_t bytes;
};
/* At least bytes of pinned host memory: one given back before, or a new cudaHostAlloc. */
cudaError_t sdc_cuda_pinned_get(struct sdc_cuda_pinned *h, size_t bytes);
/* Gives h back for reuse (h emptied), unless dev is hung or s (NULL: none) still has work queued
 * that may copy into it: then it is left as it is. Never cudaFreeHost. */
void sdc_cuda_pinned_put(int dev, struct sdc_cuda_pinned *h, cudaStream_t s);
/* Copies queued on s, returning at once (the caller polls s to its deadline): bytes between
 * h->p + off and device memory; cudaErrorInvalidValue past h's end. */
cudaError_t sdc_cuda_to_device(void *dst, const struct sdc_cuda_pinned *h, size_t off, size_t bytes, cudaStream_t s);
cudaError_t sdc_cuda_from_device(struct sdc_cuda_pinned *h, size_t off, const void *src, size_t bytes,
				 cudaStream_t s);
/* height rows of width bytes, src's rows spitch apart, into h's hpitch apart. */
cudaError_t sdc_cuda_from_device_2d(struct sdc_cuda_pinned *h, size_t off, size_t hpitch, const void *src,
				    size_t spitch, size_t width, size_t height, cudaStream_t s);

/* ---- library handles kept for reuse (their destroy synchronises the device) ---- */
enum { SDC_CUDA_SPARE_LT, SDC_CUDA_SPARE_BLAS, SDC_CUDA_SPARES };
/* A handle of that kind given back on GPU dev, or NULL (then make one). */
void *sdc_cuda_spare_take(int dev, int kind);
/* Gives h back for the next taker on dev (nothing on a hung GPU: it is left as it is). */
void sdc_cuda_spare_give(int dev, int kind, void *h);

/*
 * A stream whose first failure sticks (minitrain's and embbag's entries): after it every call
 * fails, err saying why; a wait past the deadline marks the GPU hung, and nothing may wait on it
 * again (its memory, stream and staging are kept: see above).
 */
struct sdc_cuda_sticky {
	cudaStream_t s;
	cudaEvent_t ev;
	int dev;
	double timeout;
	struct sdc_cuda_pinned stage; /* staging for the copies (sdc_cuda_sticky_stage) */
	char err[256];
	int failed;
	int hung;
};
/* A stream and its event on the calling thread's GPU (refused where it is hung): 0, or -1 with err. */
int sdc_cuda_sticky_open(struct sdc_cuda_sticky *k, double timeout, char *err, size_t errlen);
/* Settles the last work, then (unless the GPU is hung) gives back the staging, frees bufs[nbufs]
 * (device memory from sdc_cuda_malloc on k->s; NULL entries skipped) and destroys the stream. */
void sdc_cuda_sticky_close(struct sdc_cuda_sticky *k, void *const *bufs, int nbufs);
/* Records what failed (the first failure's words stay); -1. */
int sdc_cuda_sticky_fail(struct sdc_cuda_sticky *k, const char *what, cudaError_t e);
/* Everything queued so far done, within the deadline (sdc_cuda_settle); 0, or -1. */
int sdc_cuda_sticky_settle(struct sdc_cuda_sticky *k, const char *what);
/* After a launch: cudaGetLastError, as a failure of what; 0, or -1. */
int sdc_cuda_sticky_launched(struct sdc_cuda_sticky *k, const char *what);
/* k->stage at least bytes (grown only when the stream is settled); 0, or -1 (sticky). */
int sdc_cuda_sticky_stage(struct sdc_cuda_sticky *k, size_t bytes, const char *what);

/*
 * A one-call workspace (the exact class's and the hop checks' entries) on the calling thread's GPU
 * (refused where it is hung): device buffers of the given sizes (stream ordered, on s), a stream,
 * an event to wait on, with timing two timing events, and pinned staging (sdc_cuda_work_host).
 * init: 0, or -1 with err (everything made so far released); free releases what is there, as
 * sdc_cuda_sticky_close does (nothing on a hung GPU).
 */
#define SDC_CUDA_WORK_BUFS 8
struct sdc_cuda_work {
	void *buf[SDC_CUDA_WORK_BUFS];
	struct sdc_cuda_pinned host;
	cudaStream_t s;
	cudaEvent_t ev, t0, t1;
	int dev;
};
int sdc_cuda_work_init(struct sdc_cuda_work *w, const size_t *bytes, int nbuf, int timing, char *err, size_t errlen);
void sdc_cuda_work_free(struct sdc_cuda_work *w);
/* w->host at least bytes: 0, or -1 with err. */
int sdc_cuda_work_host(struct sdc_cuda_work *w, size_t bytes, char *err, size_t errlen);
/* A CUDA call in a function with err, errlen and a fail: label. */
#define SDC_CUDA_TRY(call, what)                                                                               \
	do {                                                                                                   \
		const cudaError_t e_ = (call);                                                                 \
		if (e_ != cudaSuccess) {                                                                       \
			sdc_cuda_error(err, errlen, what, e_);                                                 \
			goto fail;                                                                             \
		}                                                                                              \
	} while (0)

/* Each family's table is made by its own code, sdc_cuda_NAME_family (module.cu); parts of one made
 * in another file of its folder fill their entries (the probe's CUDA header declares them); the
 * module's communicators and ping are nccl.cu's. */
void sdc_cuda_nccl_entries(struct sdc_gpu_module *m);

#endif
