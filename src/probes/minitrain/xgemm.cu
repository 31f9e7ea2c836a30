/*
 * The exact class on the GPU (kernels/xops.h): minitrain's GEMM, whose every element is summed
 * k = 0, 1, ..., K-1 from +0, each step a correctly rounded product then a correctly rounded sum
 * (sdc_xmac: __fmul_rn, __fadd_rn), as sdc_xgemm_plain sums it on the CPU from the same source;
 * and exp and log (sdc_xexp, sdc_xlog) for the softmax and the loss. Nothing here depends on the
 * launch shape: a tile only changes which thread owns an element, never the order of its sum, and
 * the edge of k is never padded (a padded +0 product would turn a -0 sum into +0).
 *
 * The benchmark times this kernel against cuBLAS sgemm on the same device operands (issue: the
 * exact GEMM at least 30% of sgemm; without FMA its ceiling is about half the FMA peak).
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/minitrain/minitrain_cuda.h"
#include "kernels/cuda/cuda_util.h"
#include "probes/minitrain/gpu_ops.h"
#include "kernels/xops.h"
#include "probes/minitrain/xgemm_tile.h"

/* A block computes a BM x BN tile of C, BK of k at a time from shared memory; each of its 256
 * threads owns a TM x TN patch of the tile in registers (xgemm_tile.h). */
#define BM SDC_XGEMM_BM
#define BN SDC_XGEMM_BN
#define BK SDC_XGEMM_BK
#define TM SDC_XGEMM_TM
#define TN SDC_XGEMM_TN
static_assert(SDC_XGEMM_THREADS == 256, "k_xgemm's loads assume 256 threads a block");
static_assert(TM == 4 && TN == 4 && (BM + SDC_XGEMM_APAD) % 4 == 0 && BN % 4 == 0,
	      "a thread's patch is one float4 of each tile's row, 16-byte aligned");

__global__ void __launch_bounds__(256) k_xgemm(int m, int n, int k, const float *__restrict__ a, int lda,
					       const float *__restrict__ b, int ldb, float *__restrict__ c, int ldc)
{
	__shared__ __align__(16) float as[BK][BM + SDC_XGEMM_APAD]; /* A's tile transposed: as[p][row] */
	__shared__ __align__(16) float bs[BK][BN];
	const int tid = threadIdx.x, tx = tid % (BN / TN), ty = tid / (BN / TN);
	const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
	float acc[TM][TN];
	for (int i = 0; i < TM; i++)
		for (int j = 0; j < TN; j++)
			acc[i][j] = 0.0f;
	for (int k0 = 0; k0 < k; k0 += BK) {
		const int kk = k - k0 < BK ? k - k0 : BK;
		/* 256 threads load 64 x 16 of A and 16 x 64 of B, four elements each (zeros outside
		 * the matrices are loaded but never summed: the loop below stops at kk) */
		for (int e = tid; e < BM * BK; e += 256) {
			const int r = e / BK, p = e % BK;
			as[p][r] = row0 + r < m && p < kk ? a[(long)(row0 + r) * lda + k0 + p] : 0.0f;
		}
		for (int e = tid; e < BK * BN; e += 256) {
			const int p = e / BN, col = e % BN;
			bs[p][col] = col0 + col < n && p < kk ? b[(long)(k0 + p) * ldb + col0 + col] : 0.0f;
		}
		__syncthreads();
		for (int p = 0; p < kk; p++) {
			/* The patch's 4 rows of A and 4 columns of B, a 128-bit load each: 3 shared-memory
			 * wavefronts a step where 8 scalar loads took 12 (B's lanes tx and tx + 8 shared a
			 * bank), and 2 instructions, not 8, beside the 32 of arithmetic (bench_gpu.c's
			 * roofline). The values and the order of every sum are the same. */
			const float4 a4 = *reinterpret_cast<const float4 *>(&as[p][ty * TM]);
			const float4 b4 = *reinterpret_cast<const float4 *>(&bs[p][tx * TN]);
			const float av[TM] = { a4.x, a4.y, a4.z, a4.w }, bv[TN] = { b4.x, b4.y, b4.z, b4.w };
			for (int i = 0; i < TM; i++)
				for (int j = 0; j < TN; j++)
					acc[i][j] = sdc_xmac(acc[i][j], av[i], bv[j]);
		}
		__syncthreads();
	}
	for (int i = 0; i < TM; i++)
		for (int j = 0; j < TN; j++) {
			const int r = row0 + ty * TM + i, col = col0 + tx * TN + j;
			if (r < m && col < n)
				c[(long)r * ldc + col] = acc[i][j];
		}
}

__global__ void k_xmath(int n, const double *x, double *e, double *l)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		e[i] = sdc_xexp(x[i]);
		l[i] = sdc_xlog(x[i]);
	}
}

void sdc_cuda_xgemm_launch(int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c, int ldc,
			   cudaStream_t s)
{
	const dim3 grid((unsigned)((n + BN - 1) / BN), (unsigned)((m + BM - 1) / BM));
	k_xgemm<<<grid, 256, 0, s>>>(m, n, k, a, lda, b, ldb, c, ldc);
}

static void launch_xgemm(int m, int n, int k, const float *a, const float *b, float *c, cudaStream_t s)
{
	sdc_cuda_xgemm_launch(m, n, k, a, k, b, n, c, n, s);
}

/*
 * The one-call entries below copy through the workspace's pinned staging on its own stream, and
 * wait for the copies back by polling to the deadline (a copy into pageable host memory would
 * return only once done, with no deadline: CUDA Runtime API, API synchronization behavior).
 */
static int m_xgemm(int m, int n, int k, const float *a, const float *b, float *c, double timeout, char *err,
		   size_t errlen)
{
	struct sdc_cuda_work w;
	const size_t bytes[3] = { (size_t)m * k * 4, (size_t)k * n * 4, (size_t)m * n * 4 };
	if (sdc_cuda_work_init(&w, bytes, 3, 0, err, errlen))
		return -1;
	if (sdc_cuda_work_host(&w, bytes[0] + bytes[1] + bytes[2], err, errlen))
		goto fail;
	memcpy(w.host.p, a, bytes[0]);
	memcpy(w.host.p + bytes[0], b, bytes[1]);
	SDC_CUDA_TRY(sdc_cuda_to_device(w.buf[0], &w.host, 0, bytes[0], w.s), "cudaMemcpyAsync A");
	SDC_CUDA_TRY(sdc_cuda_to_device(w.buf[1], &w.host, bytes[0], bytes[1], w.s), "cudaMemcpyAsync B");
	launch_xgemm(m, n, k, (const float *)w.buf[0], (const float *)w.buf[1], (float *)w.buf[2], w.s);
	SDC_CUDA_TRY(cudaGetLastError(), "the exact GEMM kernel");
	SDC_CUDA_TRY(sdc_cuda_from_device(&w.host, bytes[0] + bytes[1], w.buf[2], bytes[2], w.s), "cudaMemcpyAsync C");
	if (sdc_cuda_wait(w.s, w.ev, timeout, "the exact GEMM", err, errlen))
		goto fail;
	memcpy(c, w.host.p + bytes[0] + bytes[1], bytes[2]);
	sdc_cuda_work_free(&w);
	return 0;
fail:
	sdc_cuda_work_free(&w);
	return -1;
}

static int m_xmath(int n, const double *x, double *e, double *l, double timeout, char *err, size_t errlen)
{
	struct sdc_cuda_work w;
	const size_t nb = (size_t)n * 8, bytes[3] = { nb, nb, nb };
	if (sdc_cuda_work_init(&w, bytes, 3, 0, err, errlen))
		return -1;
	if (sdc_cuda_work_host(&w, 3 * nb, err, errlen))
		goto fail;
	memcpy(w.host.p, x, nb);
	SDC_CUDA_TRY(sdc_cuda_to_device(w.buf[0], &w.host, 0, nb, w.s), "cudaMemcpyAsync x");
	k_xmath<<<(unsigned)((n + 255) / 256), 256, 0, w.s>>>(n, (const double *)w.buf[0], (double *)w.buf[1],
							      (double *)w.buf[2]);
	SDC_CUDA_TRY(cudaGetLastError(), "the exp/log kernel");
	SDC_CUDA_TRY(sdc_cuda_from_device(&w.host, nb, w.buf[1], nb, w.s), "cudaMemcpyAsync exp");
	SDC_CUDA_TRY(sdc_cuda_from_device(&w.host, 2 * nb, w.buf[2], nb, w.s), "cudaMemcpyAsync log");
	if (sdc_cuda_wait(w.s, w.ev, timeout, "exp and log", err, errlen))
		goto fail;
	memcpy(e, w.host.p + nb, nb);
	memcpy(l, w.host.p + 2 * nb, nb);
	sdc_cuda_work_free(&w);
	return 0;
fail:
	sdc_cuda_work_free(&w);
	return -1;
}

__global__ void k_fill(float *p, size_t n, uint32_t seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		uint32_t h = (uint32_t)i * 0x9E3779B1u ^ seed;
		h ^= h >> 15, h *= 0x2C1B3C6Du, h ^= h >> 12;
		p[i] = (float)(h >> 8) * (1.0f / 16777216.0f) - 0.5f;
	}
}

/* The handle back for the next call, once its stream has run dry (its work is w's, whose stream it
 * keeps until then); on a hung GPU it is left as it is. */
static void give_blas(struct sdc_cuda_work *w, cublasHandle_t blas)
{
	if (blas && sdc_cuda_idle(w->s))
		sdc_cuda_spare_give(w->dev, SDC_CUDA_SPARE_BLAS, blas);
}

/*
 * n x n x n, the exact kernel and cuBLAS sgemm (row-major C = A B as C^T = B^T A^T, column-major)
 * on the same operands, reps of each back to back after a warm-up, timed with events; the two
 * alternate three times and each keeps its best (a shared GPU's noise only slows a turn).
 */
static int m_xgemm_bench(int n, int reps, double *exact_s, double *sgemm_s, double timeout, char *err, size_t errlen)
{
	struct sdc_cuda_work w;
	cublasHandle_t blas = NULL;
	const size_t bytes[3] = { (size_t)n * n * 4, (size_t)n * n * 4, (size_t)n * n * 4 };
	float *a, *b, *c;
	const float one = 1.0f, zero = 0.0f;
	if (sdc_cuda_work_init(&w, bytes, 3, 1, err, errlen))
		return -1;
	a = (float *)w.buf[0], b = (float *)w.buf[1], c = (float *)w.buf[2];
	/* a handle kept from an earlier call on this GPU: cublasDestroy would synchronise the device */
	blas = (cublasHandle_t)sdc_cuda_spare_take(w.dev, SDC_CUDA_SPARE_BLAS);
	if ((!blas && cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) || cublasSetStream(blas, w.s) != CUBLAS_STATUS_SUCCESS) {
		snprintf(err, errlen, "cublasCreate failed");
		goto fail;
	}
	k_fill<<<1024, 256, 0, w.s>>>(a, (size_t)n * n, 1);
	k_fill<<<1024, 256, 0, w.s>>>(b, (size_t)n * n, 2);
	*exact_s = *sgemm_s = 1e30;
	for (int turn = 0; turn < 3; turn++)
		for (int who = 0; who < 2; who++) {
			for (int r = -1; r < reps; r++) {
				if (r == 0)
					SDC_CUDA_TRY(cudaEventRecord(w.t0, w.s), "cudaEventRecord");
				if (!who)
					launch_xgemm(n, n, n, a, b, c, w.s);
				else if (cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b, n, a, n, &zero, c, n) !=
					 CUBLAS_STATUS_SUCCESS) {
					snprintf(err, errlen, "cublasSgemm failed");
					goto fail;
				}
			}
			SDC_CUDA_TRY(cudaGetLastError(), who ? "cublasSgemm" : "the exact GEMM kernel");
			SDC_CUDA_TRY(cudaEventRecord(w.t1, w.s), "cudaEventRecord");
			if (sdc_cuda_poll(w.t1, timeout, who ? "cublasSgemm" : "the exact GEMM", err, errlen))
				goto fail;
			float ms = 0;
			SDC_CUDA_TRY(cudaEventElapsedTime(&ms, w.t0, w.t1), "cudaEventElapsedTime");
			double *best = who ? sgemm_s : exact_s;
			if (ms / 1e3 / reps < *best)
				*best = ms / 1e3 / reps;
		}
	give_blas(&w, blas);
	sdc_cuda_work_free(&w);
	return 0;
fail:
	give_blas(&w, blas);
	sdc_cuda_work_free(&w);
	return -1;
}

void sdc_cuda_xops(struct sdc_gpu_minitrain_ops *t)
{
	t->xgemm = m_xgemm;
	t->xmath = m_xmath;
	t->xgemm_bench = m_xgemm_bench;
}
