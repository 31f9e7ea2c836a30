/*
 * minitrain's steps on a GPU (gpu_module.h's mt_ entries; the model's backend, minitrain.h): every
 * operation of kernels/mt_ops.h is one launch of k_mt_op, one CUDA thread per operation thread,
 * each calling sdc_mt_op_thread, the function the CPU runs in a loop (sdc_mt_op_run_host): same
 * source, same order per output element, the _rn intrinsics (no FMA, no flush to zero, IEEE
 * division and square root), no atomics, so the bits are the CPU's whatever the launch shape. The
 * GEMM is the exact kernel of xgemm.cu on the model's device matrices.
 *
 * One stream per model. Launches do not wait; copies first poll the stream empty against the
 * deadline (cudaMemcpy would block on a hung kernel), so a stuck GPU fails the call.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/cuda_util.h"
#include "kernels/mt_ops.h"

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
	g->k.timeout = timeout;
	SDC_CUDA_TRY(cudaStreamCreateWithFlags(&g->k.s, cudaStreamNonBlocking), "cudaStreamCreate");
	SDC_CUDA_TRY(cudaEventCreateWithFlags(&g->k.ev, cudaEventDisableTiming), "cudaEventCreate");
	return g;
fail:
	if (g->k.s)
		cudaStreamDestroy(g->k.s);
	free(g);
	return NULL;
}

static void m_mt_close(struct sdc_gpu_mt *g)
{
	if (!g)
		return;
	if (!g->k.failed)
		sdc_cuda_sticky_settle(&g->k, "the last training kernels");
	/* (a hung GPU keeps its stream, as its memory: see m_mt_free) */
	if (!g->k.hung) {
		cudaEventDestroy(g->k.ev);
		cudaStreamDestroy(g->k.s);
	}
	free(g);
}

static void *m_mt_alloc(struct sdc_gpu_mt *g, size_t bytes)
{
	void *p = NULL;
	if (g->k.failed)
		return NULL;
	cudaError_t e = cudaMalloc(&p, bytes);
	if (e != cudaSuccess) {
		sdc_cuda_sticky_fail(&g->k, "cudaMalloc", e);
		return NULL;
	}
	if ((e = cudaMemsetAsync(p, 0, bytes, g->k.s)) != cudaSuccess || sdc_cuda_sticky_settle(&g->k, "zeroing device memory")) {
		if (e != cudaSuccess)
			sdc_cuda_sticky_fail(&g->k, "cudaMemset", e);
		cudaFree(p);
		return NULL;
	}
	return p;
}

/* cudaFree waits for the device without a deadline: a hung GPU keeps its memory (the process
 * ends soon, and that frees it), as the GEMM engine's does. The model frees its buffers before
 * it closes the stream, and after a settled stream nothing of its own still runs on them. */
static void m_mt_free(struct sdc_gpu_mt *g, void *p)
{
	if (!g->k.hung)
		cudaFree(p);
}

/*
 * The stream is waited for first (a copy from pageable memory synchronises with the stream inside
 * cudaMemcpyAsync, with no deadline, so nothing but copies may be queued then). To the device: each
 * returns once its host bytes are staged (CUDA's API notes on pageable memory), the batch is waited
 * for once at the end; from the device: each returns when its bytes are in host memory.
 */
static int m_mt_copy(struct sdc_gpu_mt *g, int to_device, int n, void *const *dst, const void *const *src,
		     const size_t *bytes)
{
	if (sdc_cuda_sticky_settle(&g->k, to_device ? "the training kernels before a copy to the GPU" : "the training kernels"))
		return -1;
	for (int i = 0; i < n; i++) {
		const cudaError_t e = cudaMemcpyAsync(dst[i], src[i], bytes[i],
						      to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, g->k.s);
		if (e != cudaSuccess)
			return sdc_cuda_sticky_fail(&g->k, to_device ? "cudaMemcpy to the GPU" : "cudaMemcpy from the GPU", e);
	}
	return to_device ? sdc_cuda_sticky_settle(&g->k, "copies to the GPU") : 0;
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

void sdc_cuda_mt_ops(struct sdc_gpu_module *m)
{
	m->mt_open = m_mt_open;
	m->mt_close = m_mt_close;
	m->mt_alloc = m_mt_alloc;
	m->mt_free = m_mt_free;
	m->mt_copy = m_mt_copy;
	m->mt_op = m_mt_op;
	m->mt_gemm = m_mt_gemm;
	m->mt_error = m_mt_error;
}
