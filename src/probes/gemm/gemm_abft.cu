/*
 * The gemm engine's own kernels around cuBLASLt's product (gemm.cu): the operands drawn on the device
 * from the element definitions the host shares (probes/gemm/gemm_data.h), B's checksum columns
 * encoded (kernels/abft_ref.h), the fast class's V-ABFT thresholds, the operands' fingerprints, and
 * every row of C checked against its checksum columns; with the host functions that enqueue them on
 * the engine's stream (gemm_cuda.h). The device layout of A, B and C is gemm.cu's top comment's.
 *
 * Exact kernels here are built with -fmad=false (meson.build): no contraction changes their bits,
 * and the fast class's host-side twins (gpu_truth.c) add in the same order where bits must agree
 * (B's checksum columns: one thread a row, columns in order).
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/abft_ref.h"
#include "probes/gemm/gemm_cuda.h"

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
			bits = sdc_gemm_bits_of(c.type, (double)v);
		} else if (c.type == SDC_GPU_INT8) {
			const uint8_t byte = (uint8_t)(w.v[q / 4] >> (8 * (q % 4)));
			bits = matrix == SDC_GD_A ? (uint64_t)(byte & 0x7F) : (uint64_t)byte;
		} else {
			const uint64_t col = matrix == SDC_GD_A ? e % (uint64_t)c.k : 0;
			int64_t v = sdc_gd_int_of(w.v[q], matrix == SDC_GD_A ? c.amax : c.bmax);
			if (matrix == SDC_GD_A && col == 0 && v < 0)
				v = -v; /* the row's first entry non-negative (gemm_data.h) */
			bits = sdc_gemm_bits_of(c.type, (double)v);
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
			sdc_gemm_bits_of(c.type, sdc_gd_window_at(pool, c.pool_size, w.a0, w.as, e)));
	else
		dev_put(out, esz, (size_t)(e % (uint64_t)c.n) * kp + (size_t)(e / (uint64_t)c.n),
			sdc_gemm_bits_of(c.type, sdc_gd_window_at(pool, c.pool_size, w.b0, w.bs, e)));
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
		const int64_t v = (int64_t)sdc_gemm_value_of(c.type, dev_get(bt, esz, (size_t)j * kp + p));
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
		dev_put(bt, esz, (size_t)(c.n + t) * kp + p, sdc_gemm_bits_of(c.type, (double)d[t]));
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
		const double v = sdc_gemm_value_of(c.type, dev_get(bt, esz, (size_t)j * kp + p));
		r1 += v;
		r2 += (double)(j + 1) * v;
		mn = fmin(mn, v);
		mx = fmax(mx, v);
	}
	dev_put(bt, esz, (size_t)c.n * kp + p, sdc_gemm_bits_of(c.type, r1));
	dev_put(bt, esz, (size_t)(c.n + 1) * kp + p, sdc_gemm_bits_of(c.type, r2));
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
		const double v = sdc_gemm_value_of(c.type, dev_get(a, esz, (size_t)i * kp + p));
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

/* ---- host side: enqueued on the engine's stream ---- */

static unsigned blocks_for(uint64_t n, unsigned threads)
{
	return (unsigned)((n + threads - 1) / threads);
}

/* Enqueues A's and B's fingerprints into out[0] and out[1] (device memory). */
int sdc_cuda_gemm_fingerprints(struct sdc_gpu_gemm *g, unsigned long long *out, char *err, size_t errlen)
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
		CUDA_TRY(sdc_cuda_gemm_malloc(g, (void **)&g->pool, bytes), "cudaMallocAsync pool");
	g->pool_host = NULL; /* (until it is all there) */
	for (size_t done = 0; done < bytes;) {
		const size_t n = bytes - done < g->stage.bytes ? bytes - done : g->stage.bytes;
		/* the staging is free: every copy through it has been waited for */
		memcpy(g->stage.p, (const uint8_t *)pool + done, n);
		CUDA_TRY(sdc_cuda_to_device((uint8_t *)g->pool + done, &g->stage, 0, n, g->s), "the pool upload");
		if (sdc_cuda_gemm_wait(g, "the pool upload", err, errlen))
			return -1;
		done += n;
	}
	g->pool_host = pool;
	return 0;
}

int sdc_cuda_gemm_load(struct sdc_gpu_gemm *g, uint64_t set, const double *pool, char *err, size_t errlen)
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
	if (sdc_cuda_gemm_fingerprints(g, g->fp, err, errlen))
		return -1;
	CUDA_TRY(sdc_cuda_from_device(&g->stage, 0, g->fp, 2 * sizeof(unsigned long long), g->s), "cudaMemcpyAsync");
	if (sdc_cuda_gemm_wait(g, "drawing the operands", err, errlen))
		return -1;
	memcpy(g->fp_load, g->stage.p, sizeof(g->fp_load));
	return 0;
}

int sdc_cuda_gemm_check(struct sdc_gpu_gemm *g, struct slot *sl, char *err, size_t errlen)
{
	const struct sdc_gpu_gemm_cfg c = g->c;
	int *nbad = (int *)(sl->res + RES_NBAD);
	uint64_t *sums = (uint64_t *)(sl->res + RES_SUMS);
	CUDA_TRY(cudaMemsetAsync(nbad, 0, sizeof(int), g->s), "cudaMemset");
	if (sdc_gpu_type_exact(c.type))
		k_check_exact<<<c.m, THREADS, 0, g->s>>>(c, sl->cm, sums, sl->bad, nbad);
	else
		k_check_fast<<<c.m, THREADS, 0, g->s>>>(c, sl->cm, g->thr, g->thr2, sums, sl->bad, nbad);
	CUDA_TRY(cudaGetLastError(), "check kernel");
	return 0;
}
