/*
 * The gemm engine's SM replay (gpu_ops.h, gemm_sm_replay): sdcscan's own exact GEMM kernel
 * recomputing one tile of C on every SM of the GPU, each block noting the SM it ran on, so the host
 * (gpu_look.c) can tell a fault that repeats on one SM from one that does not; and the engine's set-up
 * for it (the SMs, the shared memory that keeps one block an SM, the tiles). Built with -fmad=false
 * like the engine's other kernels (meson.build); the device layout of A and B is gemm.cu's.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "probes/gemm/gemm_cuda.h"

__device__ __forceinline__ int smid(void)
{
	unsigned r;
	asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
	return (int)r;
}

/*
 * sdcscan's own exact GEMM kernel: every block computes the same tile of C (rows row0.., columns
 * col0.. of C_ext) in int64, one element a thread, and notes the SM it ran on at its start and its
 * end (-1 when they differ: preempted and moved). The dynamic shared memory it asks for is more
 * than half of an SM's, so no two blocks share an SM.
 */
__global__ void k_sm_replay(struct sdc_gpu_gemm_cfg c, int kp, const uint8_t *a, const uint8_t *bt, int row0, int col0,
			    int rows, int cols, uint32_t *tiles, int *sm)
{
	extern __shared__ uint8_t pin[];
	const int start = smid();
	const int esz = sdc_gpu_type_esz(c.type);
	if (!threadIdx.x)
		pin[0] = 0; /* touch it: the allocation is what keeps other blocks off this SM */
	for (int e = threadIdx.x; e < rows * cols; e += blockDim.x) {
		const int i = row0 + e / cols, j = col0 + e % cols;
		int64_t s = 0;
		for (int p = 0; p < c.k; p++)
			s += (int64_t)sdc_gemm_value_of(c.type, dev_get(a, esz, (size_t)i * kp + p)) *
			     (int64_t)sdc_gemm_value_of(c.type, dev_get(bt, esz, (size_t)j * kp + p));
		uint32_t out;
		if (c.type == SDC_GPU_INT8) {
			out = (uint32_t)(int32_t)s;
		} else {
			const float f = (float)s;
			memcpy(&out, &f, 4);
		}
		tiles[(size_t)blockIdx.x * rows * cols + e] = out;
	}
	__syncthreads();
	if (!threadIdx.x)
		sm[blockIdx.x] = smid() == start ? start : -1;
}

/* ---- host side ---- */

int sdc_cuda_gemm_replay_init(struct sdc_gpu_gemm *g, char *err, size_t errlen)
{
	const int dev = g->dev;
	CUDA_TRY(cudaDeviceGetAttribute(&g->sms, cudaDevAttrMultiProcessorCount, dev), "cudaDeviceGetAttribute");
	if (g->sms > SDC_GPU_MAX_SMS)
		g->sms = SDC_GPU_MAX_SMS;
	int per_sm = 0, per_block = 0;
	CUDA_TRY(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev), "attribute");
	CUDA_TRY(cudaDeviceGetAttribute(&per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), "attribute");
	g->replay_smem = per_sm / 2 + 1024 < per_block ? per_sm / 2 + 1024 : per_block;
	CUDA_TRY(cudaFuncSetAttribute(k_sm_replay, cudaFuncAttributeMaxDynamicSharedMemorySize, g->replay_smem),
		 "cudaFuncSetAttribute");
	CUDA_TRY(sdc_cuda_gemm_malloc(g, (void **)&g->tiles, sizeof(uint32_t) * g->sms * SDC_GPU_TILE * SDC_GPU_TILE),
		 "cudaMallocAsync");
	CUDA_TRY(sdc_cuda_gemm_malloc(g, (void **)&g->smid, sizeof(int) * g->sms), "cudaMallocAsync");
	return 0;
}

int sdc_cuda_gemm_sm_replay(struct sdc_gpu_gemm *g, struct sdc_gpu_sm_replay *r, char *err, size_t errlen)
{
	if (!sdc_gpu_type_exact(g->c.type)) {
		snprintf(err, errlen, "the SM replay recomputes exact tiles only");
		return -1;
	}
	k_sm_replay<<<g->sms, THREADS, g->replay_smem, g->s>>>(g->c, g->kp, g->a, g->bt, r->row0, r->col0, r->rows,
								 r->cols, g->tiles, g->smid);
	CUDA_TRY(cudaGetLastError(), "SM replay kernel");
	const size_t tile_bytes = sizeof(uint32_t) * g->sms * r->rows * r->cols;
	CUDA_TRY(sdc_cuda_from_device(&g->stage, 0, g->tiles, tile_bytes, g->s), "cudaMemcpyAsync");
	CUDA_TRY(sdc_cuda_from_device(&g->stage, tile_bytes, g->smid, sizeof(int) * g->sms, g->s), "cudaMemcpyAsync");
	if (sdc_cuda_gemm_wait(g, "the SM replay", err, errlen))
		return -1;
	r->blocks = g->sms;
	memcpy(r->tiles, g->stage.p, tile_bytes);
	memcpy(r->smid, g->stage.p + tile_bytes, sizeof(int) * g->sms);
	return 0;
}

