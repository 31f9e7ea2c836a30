/*
 * minitrain's steps on a GPU (gpu_module.h's mt_ entries; the model's backend, model.h): every
 * operation of probes/minitrain/mt_ops.h is one launch of k_mt_op, one CUDA thread per operation thread,
 * each calling sdc_mt_op_thread, the function the CPU runs in a loop (sdc_mt_op_run_host): same
 * source, same order per output element, the _rn intrinsics (no FMA, no flush to zero, IEEE
 * division and square root), no atomics, so the bits are the CPU's whatever the launch shape. The
 * GEMM is the exact kernel of xgemm.cu on the model's device matrices.
 *
 * One stream per model. Launches do not wait; copies go through pinned staging on that stream and
 * are waited for by polling it to the deadline (a copy to or from pageable memory can block with no
 * deadline), so a stuck GPU fails the call. Memory is allocated and freed in the stream's order
 * (cuda_util.h), so no free waits for the device either.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/minitrain/minitrain_cuda.h"
#include "kernels/cuda/cuda_util.h"
#include "probes/minitrain/gpu_ops.h"
#include "sdc_config.h"
#include "probes/minitrain/mt_ops.h"

struct sdc_gpu_mt {
	struct sdc_cuda_sticky k;
};

__global__ void __launch_bounds__(256) k_mt_op(const struct sdc_mt_op op)
{
	const long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (t < op.n)
		sdc_mt_op_thread(&op, t);
}

static struct sdc_gpu_mt *m_mt_open(double timeout, char *err, size_t errlen)
{
	struct sdc_gpu_mt *g = (struct sdc_gpu_mt *)calloc(1, sizeof(*g));
	if (!g) {
		snprintf(err, errlen, "out of host memory");
		return NULL;
	}
	if (sdc_cuda_sticky_open(&g->k, timeout, err, errlen)) {
		free(g);
		return NULL;
	}
	return g;
}

static void m_mt_close(struct sdc_gpu_mt *g)
{
	if (!g)
		return;
	/* (the model has freed its buffers: m_mt_free) */
	sdc_cuda_sticky_close(&g->k, NULL, 0);
	free(g);
}

static void *m_mt_alloc(struct sdc_gpu_mt *g, size_t bytes)
{
	void *p = NULL;
	if (g->k.failed)
		return NULL;
	cudaError_t e = sdc_cuda_malloc(g->k.dev, &p, bytes, g->k.s);
	if (e != cudaSuccess) {
		sdc_cuda_sticky_fail(&g->k, "cudaMallocAsync", e);
		return NULL;
	}
	if ((e = cudaMemsetAsync(p, 0, bytes, g->k.s)) != cudaSuccess || sdc_cuda_sticky_settle(&g->k, "zeroing device memory")) {
		if (e != cudaSuccess)
			sdc_cuda_sticky_fail(&g->k, "cudaMemset", e);
		sdc_cuda_free(g->k.dev, p, g->k.s);
		return NULL;
	}
	return p;
}

/* In the stream's order (cudaFreeAsync: it never waits for the device); on a hung GPU the memory
 * is kept (the process ends soon, and that frees it). The model frees its buffers before it closes
 * the stream. */
static void m_mt_free(struct sdc_gpu_mt *g, void *p)
{
	if (!g->k.hung)
		sdc_cuda_free(g->k.dev, p, g->k.s);
}

/*
 * The stream is settled first (nothing may be queued that reads or writes what is copied, or the
 * staging), then the batch goes through the pinned staging in one piece: to the device, the host
 * bytes are put there and copied, and the batch is settled once at the end; from the device, the
 * copies are settled, then the bytes taken from the staging.
 */
static int m_mt_copy(struct sdc_gpu_mt *g, int to_device, int n, void *const *dst, const void *const *src,
		     const size_t *bytes)
{
	if (sdc_cuda_sticky_settle(&g->k, to_device ? "the training kernels before a copy to the GPU" : "the training kernels"))
		return -1;
	size_t total = 0;
	for (int i = 0; i < n; i++)
		total += bytes[i];
	if (sdc_cuda_sticky_stage(&g->k, total, "cudaHostAlloc (staging)"))
		return -1;
	size_t off = 0;
	for (int i = 0; i < n; off += bytes[i], i++) {
		cudaError_t e;
		if (to_device) {
			memcpy(g->k.stage.p + off, src[i], bytes[i]);
			e = sdc_cuda_to_device(dst[i], &g->k.stage, off, bytes[i], g->k.s);
		} else {
			e = sdc_cuda_from_device(&g->k.stage, off, src[i], bytes[i], g->k.s);
		}
		if (e != cudaSuccess)
			return sdc_cuda_sticky_fail(&g->k, to_device ? "cudaMemcpyAsync to the GPU" : "cudaMemcpyAsync from the GPU", e);
	}
	if (sdc_cuda_sticky_settle(&g->k, to_device ? "copies to the GPU" : "copies from the GPU"))
		return -1;
	if (!to_device) {
		off = 0;
		for (int i = 0; i < n; off += bytes[i], i++)
			memcpy(dst[i], g->k.stage.p + off, bytes[i]);
	}
	return 0;
}

static int m_mt_op(struct sdc_gpu_mt *g, const struct sdc_mt_op *op)
{
	if (g->k.failed)
		return -1;
	if (op->n <= 0)
		return 0;
	k_mt_op<<<(unsigned)((op->n + 255) / 256), 256, 0, g->k.s>>>(*op);
	return sdc_cuda_sticky_launched(&g->k, "a training kernel");
}

static int m_mt_gemm(struct sdc_gpu_mt *g, int m, int n, int k, const float *a, int lda, const float *b, int ldb,
		     float *c, int ldc)
{
	if (g->k.failed)
		return -1;
	sdc_cuda_xgemm_launch(m, n, k, a, lda, b, ldb, c, ldc, g->k.s);
	return sdc_cuda_sticky_launched(&g->k, "the exact GEMM kernel");
}

static const char *m_mt_error(struct sdc_gpu_mt *g)
{
	return g->k.err;
}

/* The minitrain family's table: the steps here, the exact class's entries from xgemm.cu and the
 * data-parallel mean's from mt_nccl.cu (NULL in a module built without nccl.h). */
const struct sdc_gpu_minitrain_ops *sdc_cuda_minitrain_family(void)
{
	static struct sdc_gpu_minitrain_ops t;
	if (!t.version) {
		sdc_cuda_xops(&t);
#if HAVE_NCCL
		sdc_cuda_nccl_minitrain(&t);
#endif
		t.mt_open = m_mt_open;
		t.mt_close = m_mt_close;
		t.mt_alloc = m_mt_alloc;
		t.mt_free = m_mt_free;
		t.mt_copy = m_mt_copy;
		t.mt_op = m_mt_op;
		t.mt_gemm = m_mt_gemm;
		t.mt_error = m_mt_error;
		t.version = SDC_GPU_MINITRAIN_VERSION;
	}
	return &t;
}
