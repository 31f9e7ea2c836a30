/*
 * The checked GEMM engine on the GPU (kernels/gpu_module.h): operands drawn on the device from the
 * element definitions the host shares (probes/gemm/gemm_data.h), B's checksum columns encoded on the
 * device (kernels/abft_ref.h), C = A B_ext by cuBLASLt, every row of C checked on the device, and
 * sdcscan's own exact kernel to recompute a tile on every SM. Every wait polls against a deadline;
 * every copy to or from host memory goes through pinned staging on the engine's stream, and memory
 * is freed in that stream's order (cuda_util.h: nothing here can wait on a hung GPU).
 *
 * Layout. cuBLASLt is column-major; the host's matrices are row-major, so C = A B_ext is computed
 * as C^T = B_ext^T A^T: B is kept transposed on the device (Bt, ldc rows of kp elements; rows
 * n_ext.. are zero, so C's padding columns come out zero as on the CPU), A as m rows of kp
 * elements (k rounded up to 16, zero padded), C as m rows of ldc elements. cuBLASLt sees
 * A' = Bt (kp x ldc, op T), B' = A (kp x m, op N), D = C (ldc x m): the "TN" form int8 needs.
 *
 * Exact kernels here are built with -fmad=false (meson.build): no contraction changes their bits,
 * and the fast class's host-side twins (gpu_truth.c) add in the same order where bits must agree
 * (B's checksum columns: one thread a row, columns in order).
 */
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/abft_ref.h"
#include "kernels/cuda/cuda_util.h"
#include "probes/gemm/gpu_ops.h"
#include "probes/gemm/gemm_data.h"
#include "kernels/half.h"

#define THREADS 256
#define WORKSPACE (32u << 20)
#define DIGITS_MAX 16

/* ---- errors ---- */

static void blas_error(char *err, size_t errlen, const char *what, cublasStatus_t s)
{
	snprintf(err, errlen, "%s: %s", what, cublasLtGetStatusString(s));
}

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

/* ---- element conversions, as gpu_truth.c does them on the host ---- */

__device__ __forceinline__ uint64_t dev_bits_of(enum sdc_gpu_type t, double x)
{
	const float f = (float)x;
	uint32_t u;
	memcpy(&u, &f, 4);
	if (t == SDC_GPU_INT8)
		return (uint8_t)(int8_t)x;
	if (t == SDC_GPU_BF16 || t == SDC_GPU_BF16_FAST)
		return sdc_float_to_bf16(f);
	if (t == SDC_GPU_FP16)
		return sdc_float_to_half(f);
	return u;
}

__device__ __forceinline__ double dev_value(enum sdc_gpu_type t, uint64_t bits)
{
	if (t == SDC_GPU_INT8)
		return (int8_t)(uint8_t)bits;
	if (t == SDC_GPU_BF16 || t == SDC_GPU_BF16_FAST)
		return sdc_bf16_to_float((uint16_t)bits);
	if (t == SDC_GPU_FP16)
		return sdc_half_to_float((uint16_t)bits);
	float f;
	uint32_t u = (uint32_t)bits;
	memcpy(&f, &u, 4);
	return f;
}

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

/* ---- operands ---- */

/*
 * Exact operands: one thread a Philox block (16 stream bytes or 4 words), each element written to
 * its place; A is stream index i k + p at A[i][p], B index p n + j at Bt[j][p] (gemm_data.h).
 */
__global__ void k_gen_exact(struct sdc_gpu_gemm_cfg c, uint64_t set, int matrix, int kp, uint8_t *out)
{
	const struct sdc_rng r = sdc_gd_rng(c.seed, c.cls, matrix);
	const uint64_t total = matrix == SDC_GD_A ? (uint64_t)c.m * c.k : (uint64_t)c.k * c.n;
	const int esz = sdc_gpu_type_esz(c.type);
	const int per = c.type == SDC_GPU_INT8 ? 16 : 4; /* elements a block feeds */
	const uint64_t blk = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (blk * per >= total)
		return;
	const struct sdc_philox_ctr w = sdc_rng_block(&r, (set << 32) + blk * per / (per == 16 ? 16 : 4));
	for (int q = 0; q < per; q++) {
		const uint64_t e = blk * per + q;
		if (e >= total)
			break;
		uint64_t bits;
		if (c.extreme) {
			const int64_t v = matrix == SDC_GD_A ? sdc_gd_extreme_a(c.type == SDC_GPU_INT8, c.amax)
							    : sdc_gd_extreme_b(c.type == SDC_GPU_INT8, c.bmax);
			bits = dev_bits_of(c.type, (double)v);
		} else if (c.type == SDC_GPU_INT8) {
			const uint8_t byte = (uint8_t)(w.v[q / 4] >> (8 * (q % 4)));
			bits = matrix == SDC_GD_A ? (uint64_t)(byte & 0x7F) : (uint64_t)byte;
		} else {
			const uint64_t col = matrix == SDC_GD_A ? e % (uint64_t)c.k : 0;
			int64_t v = sdc_gd_int_of(w.v[q], matrix == SDC_GD_A ? c.amax : c.bmax);
			if (matrix == SDC_GD_A && col == 0 && v < 0)
				v = -v; /* the row's first entry non-negative (gemm_data.h) */
			bits = dev_bits_of(c.type, (double)v);
		}
		size_t idx;
		if (matrix == SDC_GD_A)
			idx = (size_t)(e / (uint64_t)c.k) * kp + (size_t)(e % (uint64_t)c.k);
		else
			idx = (size_t)(e % (uint64_t)c.n) * kp + (size_t)(e / (uint64_t)c.n);
		dev_put(out, esz, idx, bits);
	}
}

/* Fast operands: windows into the pool (gemm_data.h), rounded to the element type. */
__global__ void k_gen_fast(struct sdc_gpu_gemm_cfg c, struct sdc_gd_window w, const double *pool, int matrix, int kp,
			   uint8_t *out)
{
	const uint64_t total = matrix == SDC_GD_A ? (uint64_t)c.m * c.k : (uint64_t)c.k * c.n;
	const uint64_t e = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (e >= total)
		return;
	const int esz = sdc_gpu_type_esz(c.type);
	if (matrix == SDC_GD_A)
		dev_put(out, esz, (size_t)(e / (uint64_t)c.k) * kp + (size_t)(e % (uint64_t)c.k),
			dev_bits_of(c.type, sdc_gd_window_at(pool, c.pool_size, w.a0, w.as, e)));
	else
		dev_put(out, esz, (size_t)(e % (uint64_t)c.n) * kp + (size_t)(e / (uint64_t)c.n),
			dev_bits_of(c.type, sdc_gd_window_at(pool, c.pool_size, w.b0, w.bs, e)));
}

/* Block-wide sum of an int64 (exact: any order). */
__device__ int64_t block_sum_i64(int64_t v, int64_t *sh)
{
	sh[threadIdx.x] = v;
	__syncthreads();
	for (int o = blockDim.x / 2; o > 0; o /= 2) {
		if ((int)threadIdx.x < o)
			sh[threadIdx.x] += sh[threadIdx.x + o];
		__syncthreads();
	}
	const int64_t r = sh[0];
	__syncthreads();
	return r;
}

/* Block-wide sum of doubles in one fixed tree order (the same on every GPU for the same shape). */
__device__ double block_sum_f64(double v, double *sh)
{
	sh[threadIdx.x] = v;
	__syncthreads();
	for (int o = blockDim.x / 2; o > 0; o /= 2) {
		if ((int)threadIdx.x < o)
			sh[threadIdx.x] = sh[threadIdx.x] + sh[threadIdx.x + o];
		__syncthreads();
	}
	const double r = sh[0];
	__syncthreads();
	return r;
}

__device__ double block_min_f64(double v, double *sh)
{
	sh[threadIdx.x] = v;
	__syncthreads();
	for (int o = blockDim.x / 2; o > 0; o /= 2) {
		if ((int)threadIdx.x < o)
			sh[threadIdx.x] = fmin(sh[threadIdx.x], sh[threadIdx.x + o]);
		__syncthreads();
	}
	const double r = sh[0];
	__syncthreads();
	return r;
}

__device__ double block_max_f64(double v, double *sh)
{
	sh[threadIdx.x] = v;
	__syncthreads();
	for (int o = blockDim.x / 2; o > 0; o /= 2) {
		if ((int)threadIdx.x < o)
			sh[threadIdx.x] = fmax(sh[threadIdx.x], sh[threadIdx.x + o]);
		__syncthreads();
	}
	const double r = sh[0];
	__syncthreads();
	return r;
}

/* Exact encoding: one block per row p of B, its two integer sums as balanced digits (abft_ref.h). */
__global__ void k_encode_exact(struct sdc_gpu_gemm_cfg c, int kp, uint8_t *bt)
{
	__shared__ int64_t sh[THREADS];
	const int p = blockIdx.x, esz = sdc_gpu_type_esz(c.type);
	int64_t s1 = 0, s2 = 0;
	for (int j = threadIdx.x; j < c.n; j += blockDim.x) {
		const int64_t v = (int64_t)dev_value(c.type, dev_get(bt, esz, (size_t)j * kp + p));
		s1 += v;
		s2 += (int64_t)(j + 1) * v;
	}
	s1 = block_sum_i64(s1, sh);
	s2 = block_sum_i64(s2, sh);
	if (threadIdx.x)
		return;
	int64_t d[DIGITS_MAX];
	sdc_ref_digits(s1, c.base_log2, c.nd1, d);
	sdc_ref_digits(s2, c.base_log2, c.nd2, d + c.nd1);
	for (int t = 0; t < c.nd1 + c.nd2; t++)
		dev_put(bt, esz, (size_t)(c.n + t) * kp + p, dev_bits_of(c.type, (double)d[t]));
}

/*
 * Fast encoding: one thread per row p of B adds its columns in order, as the host's twin does, so
 * the checksum columns are the same bits there; and the row's statistics for V-ABFT.
 */
__global__ void k_encode_fast(struct sdc_gpu_gemm_cfg c, int kp, uint8_t *bt, double *brow)
{
	const int p = blockIdx.x * blockDim.x + threadIdx.x;
	if (p >= c.k)
		return;
	const int esz = sdc_gpu_type_esz(c.type);
	double r1 = 0, r2 = 0, mn = INFINITY, mx = -INFINITY;
	for (int j = 0; j < c.n; j++) {
		const double v = dev_value(c.type, dev_get(bt, esz, (size_t)j * kp + p));
		r1 += v;
		r2 += (double)(j + 1) * v;
		mn = fmin(mn, v);
		mx = fmax(mx, v);
	}
	dev_put(bt, esz, (size_t)c.n * kp + p, dev_bits_of(c.type, r1));
	dev_put(bt, esz, (size_t)(c.n + 1) * kp + p, dev_bits_of(c.type, r2));
	double mu, var;
	sdc_ref_row_stats(r1, mn, mx, c.n, &mu, &var);
	brow[2 * p] = mu;
	brow[2 * p + 1] = var;
}

/* B's part of the thresholds: sums over its rows (one block, a fixed order). */
__global__ void k_bstats(int k, const double *brow, double *out)
{
	__shared__ double sh[THREADS];
	double a = 0, m2 = 0, s2 = 0;
	for (int p = threadIdx.x; p < k; p += blockDim.x) {
		a += fabs(brow[2 * p]);
		m2 += brow[2 * p] * brow[2 * p];
		s2 += brow[2 * p + 1];
	}
	a = block_sum_f64(a, sh);
	m2 = block_sum_f64(m2, sh);
	s2 = block_sum_f64(s2, sh);
	if (!threadIdx.x) {
		out[0] = a;
		out[1] = m2;
		out[2] = s2;
	}
}

/* Row i's V-ABFT thresholds from A's row statistics (one block per row). */
__global__ void k_thresholds(struct sdc_gpu_gemm_cfg c, int kp, const uint8_t *a, const double *bstats, double *thr,
			     double *thr2)
{
	__shared__ double sh[THREADS];
	const int i = blockIdx.x, esz = sdc_gpu_type_esz(c.type);
	double s = 0, mn = INFINITY, mx = -INFINITY;
	for (int p = threadIdx.x; p < c.k; p += blockDim.x) {
		const double v = dev_value(c.type, dev_get(a, esz, (size_t)i * kp + p));
		s += v;
		mn = fmin(mn, v);
		mx = fmax(mx, v);
	}
	s = block_sum_f64(s, sh);
	mn = block_min_f64(mn, sh);
	mx = block_max_f64(mx, sh);
	if (threadIdx.x)
		return;
	double mu, var;
	sdc_ref_row_stats(s, mn, mx, c.k, &mu, &var);
	const struct sdc_ref_bstats b = { bstats[0], bstats[1], bstats[2] };
	sdc_ref_vabft(c.emax, c.c_sigma, c.n, mu, var, &b, &thr[i], &thr2[i]);
}

/* A position-weighted sum of the buffer's 32-bit words, mod 2^64: a flip anywhere changes it. */
__global__ void k_fingerprint(const uint32_t *w, size_t n, unsigned long long *out)
{
	unsigned long long h = 0;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		h += (unsigned long long)w[i] * (2 * (unsigned long long)i + 1);
	atomicAdd(out, h); /* integer addition mod 2^64: the order does not matter */
}

/* ---- the checks ---- */

/* Exact class: one block per row of C, the sums over its data columns against its digit columns. */
__global__ void k_check_exact(struct sdc_gpu_gemm_cfg c, const uint32_t *cm, uint64_t *sums,
			      struct sdc_gpu_bad_row *bad, int *nbad)
{
	__shared__ int64_t sh[THREADS];
	__shared__ int first;
	const int i = blockIdx.x;
	const uint32_t *row = cm + (size_t)i * c.ldc;
	if (!threadIdx.x)
		first = c.n;
	__syncthreads();
	int64_t s1 = 0, s2 = 0, nonint = 0;
	for (int j = threadIdx.x; j < c.n; j += blockDim.x) {
		int64_t v;
		if (c.type == SDC_GPU_INT8) {
			v = (int32_t)row[j];
		} else {
			float f;
			memcpy(&f, &row[j], 4);
			if (!sdc_ref_exact_f32(f)) {
				nonint++;
				atomicMin(&first, j);
				v = 0;
			} else {
				v = (int32_t)f;
			}
		}
		s1 += v;
		s2 += (int64_t)(j + 1) * v;
	}
	s1 = block_sum_i64(s1, sh);
	s2 = block_sum_i64(s2, sh);
	nonint = block_sum_i64(nonint, sh);
	if (threadIdx.x)
		return;
	struct sdc_gpu_bad_row b;
	memset(&b, 0, sizeof(b));
	b.row = i;
	b.s1 = s1;
	b.s2 = s2;
	b.nbad = (int)nonint;
	b.first_bad = nonint ? first : -1;
	int64_t d[DIGITS_MAX];
	for (int t = 0; t < c.nd1 + c.nd2; t++) {
		const uint32_t u = row[c.n + t];
		if (c.type == SDC_GPU_INT8) {
			d[t] = (int32_t)u;
		} else {
			float f;
			memcpy(&f, &u, 4);
			d[t] = sdc_ref_exact_f32(f) ? (int32_t)f : 0;
			if (!sdc_ref_exact_f32(f)) {
				if (b.first_bad < 0)
					b.first_bad = c.n + t;
				b.nbad++;
			}
		}
	}
	b.e1 = sdc_ref_from_digits(d, c.nd1, c.base_log2);
	b.e2 = sdc_ref_from_digits(d + c.nd1, c.nd2, c.base_log2);
	sums[2 * i] = (uint64_t)s1;
	sums[2 * i + 1] = (uint64_t)s2;
	if (c.report_all || b.nbad || b.s1 != b.e1 || b.s2 != b.e2)
		bad[atomicAdd(nbad, 1)] = b;
}

/* Fast class: one block per row, its verification differences against its thresholds. */
__global__ void k_check_fast(struct sdc_gpu_gemm_cfg c, const uint32_t *cm, const double *thr, const double *thr2,
			     uint64_t *sums, struct sdc_gpu_bad_row *bad, int *nbad)
{
	__shared__ double sh[THREADS];
	const int i = blockIdx.x;
	const uint32_t *row = cm + (size_t)i * c.ldc;
	double s1 = 0, s2 = 0;
	for (int j = threadIdx.x; j < c.n; j += blockDim.x) {
		float f;
		memcpy(&f, &row[j], 4);
		s1 += f;
		s2 += (double)(j + 1) * f;
	}
	s1 = block_sum_f64(s1, sh);
	s2 = block_sum_f64(s2, sh);
	if (threadIdx.x)
		return;
	float r1, r2;
	memcpy(&r1, &row[c.n], 4);
	memcpy(&r2, &row[c.n + 1], 4);
	struct sdc_gpu_bad_row b;
	memset(&b, 0, sizeof(b));
	b.row = i;
	b.first_bad = -1;
	b.d1 = (double)r1 - s1;
	b.d2 = (double)r2 - s2;
	b.t1 = thr[i];
	b.t2 = thr2[i];
	memcpy(&sums[2 * i], &s1, 8);
	memcpy(&sums[2 * i + 1], &s2, 8);
	if (c.report_all || !(fabs(b.d1) <= b.t1) || !(fabs(b.d2) <= b.t2))
		bad[atomicAdd(nbad, 1)] = b;
}

/* ---- the SM replay ---- */

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
			s += (int64_t)dev_value(c.type, dev_get(a, esz, (size_t)i * kp + p)) *
			     (int64_t)dev_value(c.type, dev_get(bt, esz, (size_t)j * kp + p));
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

#define CUDA_TRY(call, what)                                                                      \
	do {                                                                                      \
		const cudaError_t e_ = (call);                                                    \
		if (e_ != cudaSuccess) {                                                          \
			sdc_cuda_error(err, errlen, what, e_);                                    \
			return -1;                                                                \
		}                                                                                 \
	} while (0)

#define BLAS_TRY(call, what)                                                                      \
	do {                                                                                      \
		const cublasStatus_t s_ = (call);                                                 \
		if (s_ != CUBLAS_STATUS_SUCCESS) {                                                \
			blas_error(err, errlen, what, s_);                                        \
			return -1;                                                                \
		}                                                                                 \
	} while (0)

static int wait(struct sdc_gpu_gemm *g, const char *what, char *err, size_t errlen)
{
	if (g->hung) {
		snprintf(err, errlen, "%s: the GPU hung earlier in this run", what);
		return -1;
	}
	const int r = sdc_cuda_wait(g->s, g->ev, g->c.timeout, what, err, errlen);
	g->hung = r > 0;
	return r ? -1 : 0;
}

static void g_destroy(struct sdc_gpu_gemm *g)
{
	if (!g)
		return;
	char err[256];
	/*
	 * The frees are queued on the engine's stream (sdc_cuda_free), so none waits for the device;
	 * the wait first (bounded) only tells a hung GPU, whose memory, staging and handle stay as they
	 * are (work queued there may never end): the process ends soon, and that frees them.
	 */
	if (g->hung || sdc_cuda_is_hung(g->dev) || (g->s && wait(g, "the last work", err, sizeof(err)))) {
		free(g);
		return;
	}
	sdc_cuda_pinned_put(g->dev, &g->stage, g->s); /* (before the frees, which make the stream busy) */
	for (int i = 0; i < SDC_GPU_SLOTS; i++)
		sdc_cuda_pinned_put(g->dev, &g->slot[i].res_host, g->s);
	void *const bufs[] = { g->a, g->bt, g->pool, g->thr, g->thr2, g->brow, g->bstats, g->fp, g->tiles, g->smid, g->ws };
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		sdc_cuda_free(g->dev, bufs[i], g->s);
	for (int i = 0; i < SDC_GPU_SLOTS; i++) {
		struct slot *sl = &g->slot[i];
		sdc_cuda_free(g->dev, sl->cm, g->s), sdc_cuda_free(g->dev, sl->res, g->s), sdc_cuda_free(g->dev, sl->bad, g->s);
		if (sl->done)
			cudaEventDestroy(sl->done);
	}
	if (g->la)
		cublasLtMatrixLayoutDestroy(g->la);
	if (g->lb)
		cublasLtMatrixLayoutDestroy(g->lb);
	if (g->lc)
		cublasLtMatrixLayoutDestroy(g->lc);
	if (g->la_plain)
		cublasLtMatrixLayoutDestroy(g->la_plain);
	if (g->lc_plain)
		cublasLtMatrixLayoutDestroy(g->lc_plain);
	if (g->op)
		cublasLtMatmulDescDestroy(g->op);
	/* kept for the next engine on this GPU: cublasLtDestroy may synchronise the device */
	sdc_cuda_spare_give(g->dev, SDC_CUDA_SPARE_LT, g->lt);
	/* (neither waits: CUDA Runtime API, cudaEventDestroy, cudaStreamDestroy) */
	if (g->ev)
		cudaEventDestroy(g->ev);
	if (g->s)
		cudaStreamDestroy(g->s);
	free(g);
}

/* The cuBLASLt types of an engine type: A/B, C, compute, scale. */
static void blas_types(enum sdc_gpu_type t, cudaDataType_t *ab, cudaDataType_t *cd, cublasComputeType_t *comp,
		       cudaDataType_t *scale)
{
	*cd = CUDA_R_32F;
	*comp = CUBLAS_COMPUTE_32F;
	*scale = CUDA_R_32F;
	switch (t) {
	case SDC_GPU_INT8:
		*ab = CUDA_R_8I;
		*cd = CUDA_R_32I;
		*comp = CUBLAS_COMPUTE_32I;
		*scale = CUDA_R_32I;
		break;
	case SDC_GPU_BF16:
	case SDC_GPU_BF16_FAST:
		*ab = CUDA_R_16BF;
		break;
	case SDC_GPU_FP16:
		*ab = CUDA_R_16F;
		break;
	case SDC_GPU_TF32_FAST:
		*ab = CUDA_R_32F;
		*comp = CUBLAS_COMPUTE_32F_FAST_TF32;
		break;
	default:
		*ab = CUDA_R_32F;
		break;
	}
}

/* The best algorithm cuBLASLt's heuristic gives for these layouts, pinned for the run. */
static int pick_algo(struct sdc_gpu_gemm *g, cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lc,
		     cublasLtMatmulAlgo_t *algo, int *id, char *err, size_t errlen)
{
	cublasLtMatmulPreference_t pref;
	BLAS_TRY(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
	const size_t ws = WORKSPACE;
	cublasLtMatmulHeuristicResult_t h;
	int found = 0;
	cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
								 sizeof(ws));
	if (s == CUBLAS_STATUS_SUCCESS)
		s = cublasLtMatmulAlgoGetHeuristic(g->lt, g->op, la, g->lb, lc, lc, pref, 1, &h, &found);
	cublasLtMatmulPreferenceDestroy(pref);
	if (s != CUBLAS_STATUS_SUCCESS || !found || h.state != CUBLAS_STATUS_SUCCESS) {
		blas_error(err, errlen, "cublasLtMatmulAlgoGetHeuristic: no algorithm for these types and sizes",
			   s != CUBLAS_STATUS_SUCCESS ? s : h.state);
		return -1;
	}
	*algo = h.algo;
	size_t written = 0;
	*id = -1;
	cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_ID, id, sizeof(*id), &written);
	return 0;
}

/* Device memory in the engine's stream order (freed the same way: g_destroy). */
static cudaError_t dmalloc(struct sdc_gpu_gemm *g, void **p, size_t bytes)
{
	return sdc_cuda_malloc(g->dev, p, bytes, g->s);
}

static int g_init(struct sdc_gpu_gemm *g, char *err, size_t errlen)
{
	const struct sdc_gpu_gemm_cfg *c = &g->c;
	const size_t a_bytes = (size_t)c->m * g->kp * g->esz, b_bytes = (size_t)c->ldc * g->kp * g->esz;
	const size_t res_bytes = RES_SUMS + sizeof(uint64_t) * 2 * c->m;
	CUDA_TRY(cudaStreamCreateWithFlags(&g->s, cudaStreamNonBlocking), "cudaStreamCreate");
	CUDA_TRY(cudaEventCreateWithFlags(&g->ev, cudaEventDisableTiming), "cudaEventCreate");
	CUDA_TRY(dmalloc(g, (void **)&g->a, a_bytes), "cudaMallocAsync A");
	CUDA_TRY(dmalloc(g, (void **)&g->bt, b_bytes), "cudaMallocAsync B");
	for (int i = 0; i < SDC_GPU_SLOTS; i++) {
		struct slot *sl = &g->slot[i];
		CUDA_TRY(dmalloc(g, (void **)&sl->cm, (size_t)c->m * c->ldc * 4), "cudaMallocAsync C");
		CUDA_TRY(dmalloc(g, (void **)&sl->res, res_bytes), "cudaMallocAsync");
		CUDA_TRY(dmalloc(g, (void **)&sl->bad, sizeof(struct sdc_gpu_bad_row) * c->m), "cudaMallocAsync");
		CUDA_TRY(sdc_cuda_pinned_get(&sl->res_host, res_bytes), "cudaHostAlloc");
		CUDA_TRY(cudaEventCreateWithFlags(&sl->done, cudaEventDisableTiming), "cudaEventCreate");
	}
	CUDA_TRY(dmalloc(g, (void **)&g->thr, sizeof(double) * c->m), "cudaMallocAsync");
	CUDA_TRY(dmalloc(g, (void **)&g->thr2, sizeof(double) * c->m), "cudaMallocAsync");
	CUDA_TRY(dmalloc(g, (void **)&g->brow, sizeof(double) * 2 * c->k), "cudaMallocAsync");
	CUDA_TRY(dmalloc(g, (void **)&g->bstats, sizeof(double) * 3), "cudaMallocAsync");
	CUDA_TRY(dmalloc(g, (void **)&g->fp, sizeof(unsigned long long) * 2), "cudaMallocAsync");
	CUDA_TRY(dmalloc(g, (void **)&g->ws, WORKSPACE), "cudaMallocAsync workspace");
	/* zero padding (k up to kp, B's rows n_ext up to ldc) stays zero: nothing writes there */
	CUDA_TRY(cudaMemsetAsync(g->a, 0, a_bytes, g->s), "cudaMemset");
	CUDA_TRY(cudaMemsetAsync(g->bt, 0, b_bytes, g->s), "cudaMemset");
	/* Staging for reads (in pieces of its size), the failing rows and the SM replay. */
	size_t stage = (size_t)4 << 20;
	const size_t bad_b = sizeof(struct sdc_gpu_bad_row) * c->m;
	const size_t row_b = (size_t)(c->ldc > g->kp ? c->ldc : g->kp) * 8;
	const size_t replay = sizeof(uint32_t) * SDC_GPU_MAX_SMS * SDC_GPU_TILE * SDC_GPU_TILE + sizeof(int) * SDC_GPU_MAX_SMS;
	stage = stage > bad_b ? stage : bad_b;
	stage = stage > row_b ? stage : row_b;
	CUDA_TRY(sdc_cuda_pinned_get(&g->stage, stage > replay ? stage : replay), "cudaHostAlloc");

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
	CUDA_TRY(dmalloc(g, (void **)&g->tiles, sizeof(uint32_t) * g->sms * SDC_GPU_TILE * SDC_GPU_TILE), "cudaMallocAsync");
	CUDA_TRY(dmalloc(g, (void **)&g->smid, sizeof(int) * g->sms), "cudaMallocAsync");

	cudaDataType_t ab, cd, scale;
	cublasComputeType_t comp;
	blas_types(c->type, &ab, &cd, &comp, &scale);
	if (!(g->lt = (cublasLtHandle_t)sdc_cuda_spare_take(g->dev, SDC_CUDA_SPARE_LT)))
		BLAS_TRY(cublasLtCreate(&g->lt), "cublasLtCreate");
	BLAS_TRY(cublasLtMatmulDescCreate(&g->op, comp, scale), "cublasLtMatmulDescCreate");
	const cublasOperation_t opT = CUBLAS_OP_T, opN = CUBLAS_OP_N;
	BLAS_TRY(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof(opT)), "TRANSA");
	BLAS_TRY(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof(opN)), "TRANSB");
	/* checked: all ldc rows of Bt; plain: the data columns only (n rounded up to 16, at most ldc) */
	const int plain = (c->n + 15) / 16 * 16 < c->ldc ? (c->n + 15) / 16 * 16 : c->ldc;
	BLAS_TRY(cublasLtMatrixLayoutCreate(&g->la, ab, g->kp, c->ldc, g->kp), "layout A'");
	BLAS_TRY(cublasLtMatrixLayoutCreate(&g->la_plain, ab, g->kp, plain, g->kp), "layout A' plain");
	BLAS_TRY(cublasLtMatrixLayoutCreate(&g->lb, ab, g->kp, c->m, g->kp), "layout B'");
	BLAS_TRY(cublasLtMatrixLayoutCreate(&g->lc, cd, c->ldc, c->m, c->ldc), "layout D");
	BLAS_TRY(cublasLtMatrixLayoutCreate(&g->lc_plain, cd, plain, c->m, c->ldc), "layout D plain");
	int id = -1, id_plain = -1;
	if (pick_algo(g, g->la, g->lc, &g->algo, &id, err, errlen) ||
	    pick_algo(g, g->la_plain, g->lc_plain, &g->algo_plain, &id_plain, err, errlen))
		return -1;
	snprintf(g->kernel, sizeof(g->kernel), "cuBLASLt algo %d (plain %d), %dx%dx%d on %d SMs", id, id_plain, c->m,
		 c->ldc, g->kp, g->sms);
	return wait(g, "allocating", err, errlen);
}

static struct sdc_gpu_gemm *g_create(const struct sdc_gpu_gemm_cfg *cfg, char *err, size_t errlen)
{
	if (cfg->nd1 + cfg->nd2 > DIGITS_MAX || cfg->n_ext > cfg->ldc || cfg->m < 1 || cfg->n < 1 || cfg->k < 1) {
		snprintf(err, errlen, "unsupported engine configuration");
		return NULL;
	}
	struct sdc_gpu_gemm *g = (struct sdc_gpu_gemm *)calloc(1, sizeof(*g));
	if (!g) {
		snprintf(err, errlen, "out of host memory");
		return NULL;
	}
	g->c = *cfg;
	g->dev = sdc_cuda_device();
	if (sdc_cuda_refuse_hung(g->dev, err, errlen)) {
		free(g);
		return NULL;
	}
	g->kp = (cfg->k + 15) / 16 * 16;
	g->esz = sdc_gpu_type_esz(cfg->type);
	if (g_init(g, err, errlen)) {
		g_destroy(g);
		return NULL;
	}
	return g;
}

static unsigned blocks_for(uint64_t n, unsigned threads)
{
	return (unsigned)((n + threads - 1) / threads);
}

/* Enqueues A's and B's fingerprints into out[0] and out[1] (device memory). */
static int enqueue_fingerprints(struct sdc_gpu_gemm *g, unsigned long long *out, char *err, size_t errlen)
{
	const struct sdc_gpu_gemm_cfg *c = &g->c;
	CUDA_TRY(cudaMemsetAsync(out, 0, 2 * sizeof(unsigned long long), g->s), "cudaMemset");
	k_fingerprint<<<256, THREADS, 0, g->s>>>((const uint32_t *)g->a, (size_t)c->m * g->kp * g->esz / 4, out);
	k_fingerprint<<<256, THREADS, 0, g->s>>>((const uint32_t *)g->bt, (size_t)c->ldc * g->kp * g->esz / 4, out + 1);
	CUDA_TRY(cudaGetLastError(), "fingerprint kernel");
	return 0;
}

/*
 * The fast class's pool to the device, on the engine's own stream: the kernels that read it are
 * queued after it there. (Issue 28: a synchronous cudaMemcpy on the legacy stream, which returns
 * before its DMA is done from pageable memory and which the non-blocking stream was not ordered
 * after, let the kernels read stale operands.) Through the pinned staging in pieces, each waited
 * for within the deadline before the staging is filled again.
 */
static int upload_pool(struct sdc_gpu_gemm *g, const double *pool, char *err, size_t errlen)
{
	const size_t bytes = sizeof(double) * g->c.pool_size;
	if (!g->pool)
		CUDA_TRY(dmalloc(g, (void **)&g->pool, bytes), "cudaMallocAsync pool");
	g->pool_host = NULL; /* (until it is all there) */
	for (size_t done = 0; done < bytes;) {
		const size_t n = bytes - done < g->stage.bytes ? bytes - done : g->stage.bytes;
		/* the staging is free: every copy through it has been waited for */
		memcpy(g->stage.p, (const uint8_t *)pool + done, n);
		CUDA_TRY(sdc_cuda_to_device((uint8_t *)g->pool + done, &g->stage, 0, n, g->s), "the pool upload");
		if (wait(g, "the pool upload", err, errlen))
			return -1;
		done += n;
	}
	g->pool_host = pool;
	return 0;
}

static int g_load(struct sdc_gpu_gemm *g, uint64_t set, const double *pool, char *err, size_t errlen)
{
	const struct sdc_gpu_gemm_cfg c = g->c;
	const bool exact = sdc_gpu_type_exact(c.type);
	if (exact) {
		const int per = c.type == SDC_GPU_INT8 ? 16 : 4;
		k_gen_exact<<<blocks_for(((uint64_t)c.m * c.k + per - 1) / per, THREADS), THREADS, 0, g->s>>>(c, set, SDC_GD_A,
													    g->kp, g->a);
		k_gen_exact<<<blocks_for(((uint64_t)c.k * c.n + per - 1) / per, THREADS), THREADS, 0, g->s>>>(c, set, SDC_GD_B,
													    g->kp, g->bt);
		k_encode_exact<<<c.k, THREADS, 0, g->s>>>(c, g->kp, g->bt);
	} else {
		if (pool != g->pool_host && upload_pool(g, pool, err, errlen))
			return -1;
		const struct sdc_rng wr = sdc_gd_rng(c.seed, c.cls, SDC_GD_WINDOW);
		const struct sdc_gd_window w = sdc_gd_window_of(&wr, set, c.pool_size);
		k_gen_fast<<<blocks_for((uint64_t)c.m * c.k, THREADS), THREADS, 0, g->s>>>(c, w, g->pool, SDC_GD_A, g->kp, g->a);
		k_gen_fast<<<blocks_for((uint64_t)c.k * c.n, THREADS), THREADS, 0, g->s>>>(c, w, g->pool, SDC_GD_B, g->kp, g->bt);
		k_encode_fast<<<blocks_for((uint64_t)c.k, 128), 128, 0, g->s>>>(c, g->kp, g->bt, g->brow);
		k_bstats<<<1, THREADS, 0, g->s>>>(c.k, g->brow, g->bstats);
		k_thresholds<<<c.m, THREADS, 0, g->s>>>(c, g->kp, g->a, g->bstats, g->thr, g->thr2);
	}
	CUDA_TRY(cudaGetLastError(), "operand kernels");
	if (enqueue_fingerprints(g, g->fp, err, errlen))
		return -1;
	CUDA_TRY(sdc_cuda_from_device(&g->stage, 0, g->fp, 2 * sizeof(unsigned long long), g->s), "cudaMemcpyAsync");
	if (wait(g, "drawing the operands", err, errlen))
		return -1;
	memcpy(g->fp_load, g->stage.p, sizeof(g->fp_load));
	return 0;
}

static int g_submit(struct sdc_gpu_gemm *g, int slot, int what, char *err, size_t errlen)
{
	const struct sdc_gpu_gemm_cfg c = g->c;
	if (slot < 0 || slot >= SDC_GPU_SLOTS || !what || (what & SDC_GPU_MULTIPLY && what & SDC_GPU_PLAIN)) {
		snprintf(err, errlen, "gemm_submit: slot %d, what %#x: not a submission", slot, what);
		return -1;
	}
	if (g->hung) {
		snprintf(err, errlen, "the GPU hung earlier in this run");
		return -1;
	}
	struct slot *sl = &g->slot[slot];
	sl->what = 0;
	if (what & (SDC_GPU_MULTIPLY | SDC_GPU_PLAIN)) {
		const bool checked = what & SDC_GPU_MULTIPLY;
		const int32_t one_i = 1, zero_i = 0;
		const float one_f = 1, zero_f = 0;
		const bool i8 = c.type == SDC_GPU_INT8;
		const void *alpha = i8 ? (const void *)&one_i : (const void *)&one_f;
		const void *beta = i8 ? (const void *)&zero_i : (const void *)&zero_f;
		BLAS_TRY(cublasLtMatmul(g->lt, g->op, alpha, g->bt, checked ? g->la : g->la_plain, g->a, g->lb, beta, sl->cm,
					checked ? g->lc : g->lc_plain, sl->cm, checked ? g->lc : g->lc_plain,
					checked ? &g->algo : &g->algo_plain, g->ws, WORKSPACE, g->s),
			 "cublasLtMatmul");
	}
	size_t copy = 0;
	if (what & SDC_GPU_CHECK) {
		int *nbad = (int *)(sl->res + RES_NBAD);
		uint64_t *sums = (uint64_t *)(sl->res + RES_SUMS);
		CUDA_TRY(cudaMemsetAsync(nbad, 0, sizeof(int), g->s), "cudaMemset");
		if (sdc_gpu_type_exact(c.type))
			k_check_exact<<<c.m, THREADS, 0, g->s>>>(c, sl->cm, sums, sl->bad, nbad);
		else
			k_check_fast<<<c.m, THREADS, 0, g->s>>>(c, sl->cm, g->thr, g->thr2, sums, sl->bad, nbad);
		CUDA_TRY(cudaGetLastError(), "check kernel");
		copy = RES_SUMS + sizeof(uint64_t) * 2 * c.m;
	}
	if (what & SDC_GPU_FINGERPRINT) {
		if (enqueue_fingerprints(g, (unsigned long long *)(sl->res + RES_FP), err, errlen))
			return -1;
		copy = copy > RES_SUMS ? copy : RES_SUMS;
	}
	if (copy)
		CUDA_TRY(sdc_cuda_from_device(&sl->res_host, 0, sl->res, copy, g->s), "cudaMemcpyAsync");
	CUDA_TRY(cudaEventRecord(sl->done, g->s), "cudaEventRecord");
	sl->what = what;
	return 0;
}

/* Rows in increasing order (the device appends them as blocks finish). */
static int by_row(const void *x, const void *y)
{
	const int a = ((const struct sdc_gpu_bad_row *)x)->row, b = ((const struct sdc_gpu_bad_row *)y)->row;
	return (a > b) - (a < b);
}

static int g_collect(struct sdc_gpu_gemm *g, int slot, uint64_t *sums, struct sdc_gpu_check *out, char *err,
		     size_t errlen)
{
	const struct sdc_gpu_gemm_cfg *c = &g->c;
	out->nbad = 0;
	out->a_intact = out->b_intact = 1;
	if (slot < 0 || slot >= SDC_GPU_SLOTS || !g->slot[slot].what) {
		snprintf(err, errlen, "gemm_collect: nothing was submitted to slot %d", slot);
		return -1;
	}
	if (g->hung) {
		snprintf(err, errlen, "the GPU hung earlier in this run");
		return -1;
	}
	struct slot *sl = &g->slot[slot];
	const int r = sdc_cuda_poll(sl->done, c->timeout,
				    sl->what & SDC_GPU_CHECK ? "the GEMM and its row checks" : "the GEMM", err, errlen);
	g->hung = r > 0;
	if (r)
		return -1;
	if (sl->what & SDC_GPU_FINGERPRINT) {
		unsigned long long f[2];
		memcpy(f, sl->res_host.p + RES_FP, sizeof(f));
		out->a_intact = f[0] == g->fp_load[0];
		out->b_intact = f[1] == g->fp_load[1];
	}
	if (!(sl->what & SDC_GPU_CHECK))
		return 0;
	memcpy(&out->nbad, sl->res_host.p + RES_NBAD, sizeof(int));
	if (sums)
		memcpy(sums, sl->res_host.p + RES_SUMS, sizeof(uint64_t) * 2 * c->m);
	if (out->nbad < 0 || out->nbad > c->m) {
		snprintf(err, errlen, "the row check reported %d failing rows of %d: its own memory is corrupt", out->nbad, c->m);
		return -1;
	}
	if (!out->nbad)
		return 0;
	/* Behind whatever was submitted since: a failure path, it may wait. */
	const size_t bytes = sizeof(struct sdc_gpu_bad_row) * out->nbad;
	CUDA_TRY(sdc_cuda_from_device(&g->stage, 0, sl->bad, bytes, g->s), "cudaMemcpyAsync");
	if (wait(g, "reading the failing rows", err, errlen))
		return -1;
	memcpy(out->bad, g->stage.p, bytes);
	qsort(out->bad, (size_t)out->nbad, sizeof(*out->bad), by_row);
	return 0;
}

static int g_sync(struct sdc_gpu_gemm *g, char *err, size_t errlen)
{
	return wait(g, "the GEMMs", err, errlen);
}

static int g_read(struct sdc_gpu_gemm *g, int slot, char matrix, int row, int col, int count, void *out, char *err,
		  size_t errlen)
{
	const struct sdc_gpu_gemm_cfg *c = &g->c;
	const int esz = matrix == 'C' ? 4 : g->esz;
	uint8_t *dst = (uint8_t *)out;
	if (matrix == 'C' && (slot < 0 || slot >= SDC_GPU_SLOTS)) {
		snprintf(err, errlen, "no slot %d", slot);
		return -1;
	}
	/* in pieces as large as the staging buffer */
	const int per = (int)(g->stage.bytes / esz < (size_t)count ? g->stage.bytes / esz : (size_t)count);
	for (int done = 0; done < count;) {
		const int n = count - done < per ? count - done : per;
		if (matrix == 'A') {
			CUDA_TRY(sdc_cuda_from_device(&g->stage, 0, g->a + ((size_t)row * g->kp + col + done) * esz, (size_t)n * esz,
						      g->s), "cudaMemcpyAsync A");
		} else if (matrix == 'B') {
			/* row p of B_ext is a column of Bt: one element every kp */
			CUDA_TRY(sdc_cuda_from_device_2d(&g->stage, 0, esz, g->bt + ((size_t)(col + done) * g->kp + row) * esz,
							 (size_t)g->kp * esz, esz, n, g->s), "cudaMemcpy2DAsync B");
		} else if (matrix == 'C') {
			CUDA_TRY(sdc_cuda_from_device(&g->stage, 0, (uint8_t *)g->slot[slot].cm + ((size_t)row * c->ldc + col + done) * 4,
						      (size_t)n * 4, g->s), "cudaMemcpyAsync C");
		} else {
			snprintf(err, errlen, "no matrix '%c'", matrix);
			return -1;
		}
		if (wait(g, "reading back", err, errlen))
			return -1;
		memcpy(dst + (size_t)done * esz, g->stage.p, (size_t)n * esz);
		done += n;
	}
	return 0;
}

static int g_flip(struct sdc_gpu_gemm *g, int slot, char matrix, int row, int col, int bit, uint64_t *before,
		  uint64_t *after, char *err, size_t errlen)
{
	const int esz = matrix == 'C' ? 4 : g->esz;
	uint8_t *p;
	if (matrix == 'A')
		p = g->a + ((size_t)row * g->kp + col) * esz;
	else if (matrix == 'B')
		p = g->bt + ((size_t)col * g->kp + row) * esz;
	else if (matrix == 'C' && slot >= 0 && slot < SDC_GPU_SLOTS)
		p = (uint8_t *)g->slot[slot].cm + ((size_t)row * g->c.ldc + col) * 4;
	else {
		snprintf(err, errlen, "no matrix '%c' (slot %d)", matrix, slot);
		return -1;
	}
	CUDA_TRY(sdc_cuda_from_device(&g->stage, 0, p, esz, g->s), "cudaMemcpyAsync");
	if (wait(g, "reading an element", err, errlen))
		return -1;
	uint64_t v = 0;
	memcpy(&v, g->stage.p, esz);
	*before = v;
	*after = v ^ ((uint64_t)1 << bit);
	memcpy(g->stage.p, after, esz);
	CUDA_TRY(sdc_cuda_to_device(p, &g->stage, 0, esz, g->s), "cudaMemcpyAsync");
	return wait(g, "writing an element", err, errlen);
}

static int g_sm_replay(struct sdc_gpu_gemm *g, struct sdc_gpu_sm_replay *r, char *err, size_t errlen)
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
	if (wait(g, "the SM replay", err, errlen))
		return -1;
	r->blocks = g->sms;
	memcpy(r->tiles, g->stage.p, tile_bytes);
	memcpy(r->smid, g->stage.p + tile_bytes, sizeof(int) * g->sms);
	return 0;
}

static const char *g_kernel(struct sdc_gpu_gemm *g)
{
	return g->kernel;
}

/* The gemm family's table (module.cu asks for it once). */
const struct sdc_gpu_gemm_ops *sdc_cuda_gemm_family(void)
{
	static char blas_text[48];
	static struct sdc_gpu_gemm_ops t;
	if (!t.version) {
		const size_t v = cublasLtGetVersion();
		snprintf(blas_text, sizeof(blas_text), "cuBLASLt %zu.%zu.%zu", v / 10000, v / 100 % 100, v % 100);
		t.blas = blas_text;
		t.gemm_create = g_create;
		t.gemm_destroy = g_destroy;
		t.gemm_load = g_load;
		t.gemm_submit = g_submit;
		t.gemm_collect = g_collect;
		t.gemm_sync = g_sync;
		t.gemm_read = g_read;
		t.gemm_flip = g_flip;
		t.gemm_sm_replay = g_sm_replay;
		t.gemm_kernel = g_kernel;
		t.version = SDC_GPU_GEMM_VERSION;
	}
	return &t;
}
