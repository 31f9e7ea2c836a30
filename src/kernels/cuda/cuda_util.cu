/*
 * What every CUDA file of the GPU module shares (cuda_util.h), written so that no call waits on a
 * GPU past the probe's deadline: the waits (an event polled to the deadline), the GPUs' hung flags
 * (set by a wait that passed its deadline; nothing is started, freed or reused on that GPU after),
 * device memory in stream order (cudaMallocAsync / cudaFreeAsync: no free waits for the device),
 * pinned staging buffers that are kept and reused (cudaFreeHost is never called), the only copies
 * between device and host memory (through that staging, on the caller's stream), and cuBLAS
 * handles kept for reuse (their destroy synchronises the device). tests/gpu/wait_lint.py fails on
 * any call outside these helpers that could wait without a deadline.
 */
#include <cuda_runtime.h>
#include <cublasLt.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/cuda/cuda_util.h"
#include "sdc_config.h"
#include "kernels/gpu_module.h"

/* ---- errors and waits ---- */

void sdc_cuda_error(char *err, size_t errlen, const char *what, cudaError_t e)
{
	snprintf(err, errlen, "%s: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

double sdc_cuda_clock(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* What the module knows of each GPU: hung (a wait on it passed its deadline), and whether it has
 * the stream-ordered allocator (0: not asked yet, 1: yes, 2: no). */
static int gpu_hung[SDC_CUDA_MAX_DEVICES];
static int gpu_pools[SDC_CUDA_MAX_DEVICES];

int sdc_cuda_device(void)
{
	int dev = -1;
	return cudaGetDevice(&dev) == cudaSuccess ? dev : -1;
}

void sdc_cuda_mark_hung(int dev)
{
	if (dev >= 0 && dev < SDC_CUDA_MAX_DEVICES)
		__atomic_store_n(&gpu_hung[dev], 1, __ATOMIC_RELEASE);
}

int sdc_cuda_is_hung(int dev)
{
	/* a GPU the module cannot name is treated as hung: nothing of it is freed or reused */
	if (dev < 0 || dev >= SDC_CUDA_MAX_DEVICES)
		return 1;
	return __atomic_load_n(&gpu_hung[dev], __ATOMIC_ACQUIRE);
}

int sdc_cuda_refuse_hung(int dev, char *err, size_t errlen)
{
	if (dev >= 0 && dev < SDC_CUDA_MAX_DEVICES && !sdc_cuda_is_hung(dev))
		return 0;
	if (dev < 0 || dev >= SDC_CUDA_MAX_DEVICES)
		snprintf(err, errlen, "no usable GPU bound to this thread (device %d)", dev);
	else
		snprintf(err, errlen, "GPU %d hung earlier in this run: nothing more is started on it", dev);
	return -1;
}

int sdc_cuda_poll(cudaEvent_t ev, double timeout, const char *what, char *err, size_t errlen)
{
	const double end = sdc_cuda_clock() + timeout;
	for (;;) {
		const cudaError_t e = cudaEventQuery(ev);
		if (e == cudaSuccess)
			return 0;
		if (e != cudaErrorNotReady) {
			sdc_cuda_error(err, errlen, what, e);
			return -1;
		}
		if (sdc_cuda_clock() > end) {
			snprintf(err, errlen, "%s did not finish within %.0f s: the GPU is hung (see the kernel log for an Xid)",
				 what, timeout);
			sdc_cuda_mark_hung(sdc_cuda_device());
			return 1;
		}
		/* A short sleep: the host threads of other devices burn on the CPUs meanwhile, and the
		 * GPU has the next submission queued (gemm_submit), so it does not wait for this one. */
		const struct timespec ts = { 0, 20000 };
		nanosleep(&ts, NULL);
	}
}

int sdc_cuda_wait(cudaStream_t s, cudaEvent_t ev, double timeout, const char *what, char *err, size_t errlen)
{
	const cudaError_t e = cudaEventRecord(ev, s);
	if (e != cudaSuccess) {
		sdc_cuda_error(err, errlen, what, e);
		return -1;
	}
	return sdc_cuda_poll(ev, timeout, what, err, errlen);
}

int sdc_cuda_settle(cudaStream_t s, cudaEvent_t ev, double timeout, const char *what, char *err, size_t errlen)
{
	cudaError_t e = cudaEventRecord(ev, s);
	if (e != cudaSuccess) {
		sdc_cuda_error(err, errlen, what, e);
		return -1;
	}
	const double spin_end = sdc_cuda_clock() + 2e-3;
	while ((e = cudaEventQuery(ev)) == cudaErrorNotReady && sdc_cuda_clock() < spin_end)
		sched_yield();
	if (e == cudaSuccess)
		return 0;
	if (e != cudaErrorNotReady) {
		sdc_cuda_error(err, errlen, what, e);
		return -1;
	}
	return sdc_cuda_poll(ev, timeout, what, err, errlen);
}

int sdc_cuda_idle(cudaStream_t s)
{
	return s && cudaStreamQuery(s) == cudaSuccess;
}

int sdc_cuda_sticky_fail(struct sdc_cuda_sticky *k, const char *what, cudaError_t e)
{
	if (!k->failed)
		sdc_cuda_error(k->err, sizeof(k->err), what, e);
	k->failed = 1;
	return -1;
}

int sdc_cuda_sticky_settle(struct sdc_cuda_sticky *k, const char *what)
{
	if (k->failed)
		return -1;
	const int r = sdc_cuda_settle(k->s, k->ev, k->timeout, what, k->err, sizeof(k->err));
	if (r) {
		k->failed = 1;
		k->hung = r > 0;
		return -1;
	}
	return 0;
}

int sdc_cuda_sticky_launched(struct sdc_cuda_sticky *k, const char *what)
{
	const cudaError_t e = cudaGetLastError();
	return e == cudaSuccess ? 0 : sdc_cuda_sticky_fail(k, what, e);
}

int sdc_cuda_sticky_open(struct sdc_cuda_sticky *k, double timeout, char *err, size_t errlen)
{
	memset(k, 0, sizeof(*k));
	k->timeout = timeout;
	k->dev = sdc_cuda_device();
	if (sdc_cuda_refuse_hung(k->dev, err, errlen))
		return -1;
	cudaError_t e = cudaStreamCreateWithFlags(&k->s, cudaStreamNonBlocking);
	if (e == cudaSuccess && (e = cudaEventCreateWithFlags(&k->ev, cudaEventDisableTiming)) != cudaSuccess) {
		cudaStreamDestroy(k->s);
		k->s = NULL;
	}
	if (e != cudaSuccess) {
		sdc_cuda_error(err, errlen, "cudaStreamCreate", e);
		return -1;
	}
	return 0;
}

int sdc_cuda_sticky_stage(struct sdc_cuda_sticky *k, size_t bytes, const char *what)
{
	if (k->failed)
		return -1;
	if (k->stage.bytes >= bytes)
		return 0;
	/* (the old one back only if the stream is idle: sdc_cuda_pinned_put) */
	sdc_cuda_pinned_put(k->dev, &k->stage, k->s);
	const cudaError_t e = sdc_cuda_pinned_get(&k->stage, bytes);
	return e == cudaSuccess ? 0 : sdc_cuda_sticky_fail(k, what, e);
}

void sdc_cuda_sticky_close(struct sdc_cuda_sticky *k, void *const *bufs, int nbufs)
{
	if (!k->failed && k->s)
		sdc_cuda_sticky_settle(k, "the last work");
	/* On a hung GPU the memory, the stream, its event and the staging stay as they are: work
	 * queued there may never end, and the staging may still be written by a copy that never ran. */
	if (k->hung || sdc_cuda_is_hung(k->dev))
		return;
	sdc_cuda_pinned_put(k->dev, &k->stage, k->s); /* (first: the frees make the stream busy) */
	for (int i = 0; i < nbufs; i++)
		sdc_cuda_free(k->dev, bufs[i], k->s);
	/* (neither waits: "the function will return immediately", CUDA Runtime API, cudaStreamDestroy;
	 * "the call does not block on completion of the event", cudaEventDestroy) */
	if (k->ev)
		cudaEventDestroy(k->ev);
	if (k->s)
		cudaStreamDestroy(k->s);
	k->s = NULL;
	k->ev = NULL;
}

/* ---- device memory, in stream order ---- */

/*
 * cudaFree "may perform implicit synchronization" except for memory from the stream-ordered
 * allocator (CUDA Runtime API, cudaFree), so a stuck kernel of any lane on the GPU would make it
 * wait forever. cudaFreeAsync only queues the free on the stream (CUDA Runtime API, Stream Ordered
 * Memory Allocator: cudaMallocAsync, cudaFreeAsync). Where a GPU has no such allocator
 * (cudaDevAttrMemoryPoolsSupported 0) its memory comes from cudaMalloc and is kept to the
 * process's end: freeing it could wait.
 */
static int has_pools(int dev)
{
	int v = dev >= 0 && dev < SDC_CUDA_MAX_DEVICES ? __atomic_load_n(&gpu_pools[dev], __ATOMIC_ACQUIRE) : 0;
	if (!v) {
		int yes = 0;
		if (cudaDeviceGetAttribute(&yes, cudaDevAttrMemoryPoolsSupported, dev) != cudaSuccess)
			yes = 0;
		v = yes ? 1 : 2;
		if (dev >= 0 && dev < SDC_CUDA_MAX_DEVICES)
			__atomic_store_n(&gpu_pools[dev], v, __ATOMIC_RELEASE);
	}
	return v == 1;
}

cudaError_t sdc_cuda_malloc(int dev, void **p, size_t bytes, cudaStream_t s)
{
	*p = NULL;
	if (!bytes)
		bytes = 1;
	if (has_pools(dev))
		return cudaMallocAsync(p, bytes, s);
	return cudaMalloc(p, bytes);
}

void sdc_cuda_free(int dev, void *p, cudaStream_t s)
{
	if (!p || sdc_cuda_is_hung(dev) || !s || !has_pools(dev))
		return;
	cudaFreeAsync(p, s);
}

/* ---- pinned staging, kept ---- */

/*
 * Buffers from cudaHostAlloc (portable: pinned for every GPU's context), never given back with
 * cudaFreeHost (not documented as asynchronous; it can wait for the device). A returned buffer goes
 * on this list and the next request that fits takes it, so the module holds at most what its lanes
 * held at once.
 */
struct pinned_spare {
	struct sdc_cuda_pinned h;
	struct pinned_spare *next;
};
static pthread_mutex_t depot_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pinned_spare *pinned_spares;

cudaError_t sdc_cuda_pinned_get(struct sdc_cuda_pinned *h, size_t bytes)
{
	h->p = NULL;
	h->bytes = 0;
	pthread_mutex_lock(&depot_lock);
	struct pinned_spare **best = NULL;
	for (struct pinned_spare **q = &pinned_spares; *q; q = &(*q)->next)
		if ((*q)->h.bytes >= bytes && (!best || (*q)->h.bytes < (*best)->h.bytes))
			best = q;
	struct pinned_spare *got = best ? *best : NULL;
	if (got)
		*best = got->next;
	pthread_mutex_unlock(&depot_lock);
	if (got) {
		*h = got->h;
		free(got);
		return cudaSuccess;
	}
	size_t cap = (size_t)64 << 10; /* (a power of 2: a buffer that grows leaves few behind) */
	while (cap < bytes)
		cap *= 2;
	void *p = NULL;
	const cudaError_t e = cudaHostAlloc(&p, cap, cudaHostAllocPortable);
	if (e != cudaSuccess)
		return e;
	h->p = (uint8_t *)p;
	h->bytes = cap;
	return cudaSuccess;
}

void sdc_cuda_pinned_put(int dev, struct sdc_cuda_pinned *h, cudaStream_t s)
{
	if (!h->p)
		return;
	/* a copy still queued (or stuck) on s may write it yet: then it is left where it is */
	struct pinned_spare *sp = NULL;
	if (!sdc_cuda_is_hung(dev) && (!s || sdc_cuda_idle(s)))
		sp = (struct pinned_spare *)malloc(sizeof(*sp));
	if (sp) {
		sp->h = *h;
		pthread_mutex_lock(&depot_lock);
		sp->next = pinned_spares;
		pinned_spares = sp;
		pthread_mutex_unlock(&depot_lock);
	}
	h->p = NULL;
	h->bytes = 0;
}

/*
 * The only copies between device and host memory: from or to pinned staging, on the caller's
 * stream, so they return at once and the caller's poll bounds the wait. (A copy from device to
 * pageable host memory "will return only once the copy has completed", and one from pageable host
 * memory may wait for the staging the driver has: CUDA Runtime API, API synchronization behavior.)
 */
static bool fits(const struct sdc_cuda_pinned *h, size_t off, size_t bytes)
{
	return h->p && off <= h->bytes && bytes <= h->bytes - off;
}

cudaError_t sdc_cuda_to_device(void *dst, const struct sdc_cuda_pinned *h, size_t off, size_t bytes, cudaStream_t s)
{
	if (!fits(h, off, bytes))
		return cudaErrorInvalidValue;
	return cudaMemcpyAsync(dst, h->p + off, bytes, cudaMemcpyHostToDevice, s);
}

cudaError_t sdc_cuda_from_device(struct sdc_cuda_pinned *h, size_t off, const void *src, size_t bytes, cudaStream_t s)
{
	if (!fits(h, off, bytes))
		return cudaErrorInvalidValue;
	return cudaMemcpyAsync(h->p + off, src, bytes, cudaMemcpyDeviceToHost, s);
}

cudaError_t sdc_cuda_from_device_2d(struct sdc_cuda_pinned *h, size_t off, size_t hpitch, const void *src,
				    size_t spitch, size_t width, size_t height, cudaStream_t s)
{
	if (!height || !fits(h, off, hpitch * (height - 1) + width))
		return cudaErrorInvalidValue;
	return cudaMemcpy2DAsync(h->p + off, hpitch, src, spitch, width, height, cudaMemcpyDeviceToHost, s);
}

/* ---- library handles, kept ---- */

/* cublasDestroy "will implicitly call cudaDeviceSynchronize()" (cuBLAS docs, cublasCreate), and
 * cuBLASLt's handle is treated the same: handles are given back here and taken again, per GPU. */
struct spare {
	void *h;
	struct spare *next;
};
static struct spare *spares[SDC_CUDA_MAX_DEVICES][SDC_CUDA_SPARES];

void *sdc_cuda_spare_take(int dev, int kind)
{
	if (dev < 0 || dev >= SDC_CUDA_MAX_DEVICES || kind < 0 || kind >= SDC_CUDA_SPARES)
		return NULL;
	pthread_mutex_lock(&depot_lock);
	struct spare *sp = spares[dev][kind];
	if (sp)
		spares[dev][kind] = sp->next;
	pthread_mutex_unlock(&depot_lock);
	void *h = sp ? sp->h : NULL;
	free(sp);
	return h;
}

void sdc_cuda_spare_give(int dev, int kind, void *h)
{
	if (!h || sdc_cuda_is_hung(dev) || kind < 0 || kind >= SDC_CUDA_SPARES)
		return;
	struct spare *sp = (struct spare *)malloc(sizeof(*sp));
	if (!sp)
		return;
	sp->h = h;
	pthread_mutex_lock(&depot_lock);
	sp->next = spares[dev][kind];
	spares[dev][kind] = sp;
	pthread_mutex_unlock(&depot_lock);
}

/* ---- one-call workspaces ---- */

void sdc_cuda_work_free(struct sdc_cuda_work *w)
{
	/* On a hung GPU everything stays: the work queued on w->s may never end. */
	if (sdc_cuda_is_hung(w->dev)) {
		memset(w, 0, sizeof(*w));
		return;
	}
	sdc_cuda_pinned_put(w->dev, &w->host, w->s); /* (first: the frees below make the stream busy) */
	for (int i = 0; i < SDC_CUDA_WORK_BUFS; i++)
		sdc_cuda_free(w->dev, w->buf[i], w->s);
	if (w->t1)
		cudaEventDestroy(w->t1);
	if (w->t0)
		cudaEventDestroy(w->t0);
	if (w->ev)
		cudaEventDestroy(w->ev);
	if (w->s)
		cudaStreamDestroy(w->s);
	memset(w, 0, sizeof(*w));
}

int sdc_cuda_work_init(struct sdc_cuda_work *w, const size_t *bytes, int nbuf, int timing, char *err, size_t errlen)
{
	memset(w, 0, sizeof(*w));
	w->dev = sdc_cuda_device();
	if (sdc_cuda_refuse_hung(w->dev, err, errlen))
		return -1;
	SDC_CUDA_TRY(cudaStreamCreateWithFlags(&w->s, cudaStreamNonBlocking), "cudaStreamCreate");
	SDC_CUDA_TRY(cudaEventCreateWithFlags(&w->ev, cudaEventDisableTiming), "cudaEventCreate");
	if (timing) {
		SDC_CUDA_TRY(cudaEventCreate(&w->t0), "cudaEventCreate");
		SDC_CUDA_TRY(cudaEventCreate(&w->t1), "cudaEventCreate");
	}
	for (int i = 0; i < nbuf && i < SDC_CUDA_WORK_BUFS; i++)
		SDC_CUDA_TRY(sdc_cuda_malloc(w->dev, &w->buf[i], bytes[i], w->s), "cudaMallocAsync");
	return 0;
fail:
	sdc_cuda_work_free(w);
	return -1;
}

int sdc_cuda_work_host(struct sdc_cuda_work *w, size_t bytes, char *err, size_t errlen)
{
	const cudaError_t e = sdc_cuda_pinned_get(&w->host, bytes);
	if (e != cudaSuccess) {
		sdc_cuda_error(err, errlen, "cudaHostAlloc (staging)", e);
		return -1;
	}
	return 0;
}
