/* The ABFT row sums behind one table per instruction-set level (abft_sums.h). */
#include "kernels/abft_sums.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

/* ---- int32 rows, exact int64 sums ---- */

/*
 * Row sums without a 64-bit multiply: the columns are taken 16 at a time (lanes l), with
 * per-lane running sums P[l] = sum_b c[b][l] and Q[l] = sum of the P[l] seen so far. Then
 * sum_b b c[b][l] = nb P[l] - Q[l], and
 *   sum_j (j + 1) c[j] = sum_l (l + 1) P[l] + 16 sum_l (nb P[l] - Q[l])
 * over the nb whole blocks; the tail is added directly. Only int64 adds in the loop.
 */
#define BLK 16

static void combine_lanes(const int64_t *p, const int64_t *q, int nb, const int32_t *c, int n, int64_t *s1,
			  int64_t *s2)
{
	int64_t a = 0, w = 0;
	for (int l = 0; l < BLK; l++) {
		a += p[l];
		w += (int64_t)(l + 1) * p[l] + (int64_t)BLK * ((int64_t)nb * p[l] - q[l]);
	}
	for (int j = nb * BLK; j < n; j++) {
		a += c[j];
		w += (int64_t)(j + 1) * c[j];
	}
	*s1 = a;
	*s2 = w;
}

static void sums_i32_portable(const int32_t *c, int n, int64_t *s1, int64_t *s2)
{
	int64_t p[BLK] = { 0 }, q[BLK] = { 0 };
	const int nb = n / BLK;
	for (int b = 0; b < nb; b++)
		for (int l = 0; l < BLK; l++) {
			p[l] += c[b * BLK + l];
			q[l] += p[l];
		}
	combine_lanes(p, q, nb, c, n, s1, s2);
}

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx512f"))) static void sums_i32_avx512(const int32_t *c, int n, int64_t *s1, int64_t *s2)
{
	__m512i p0 = _mm512_setzero_si512(), p1 = p0, q0 = p0, q1 = p0;
	const int nb = n / BLK;
	for (int b = 0; b < nb; b++) {
		const __m512i v = _mm512_loadu_si512(c + b * BLK);
		p0 = _mm512_add_epi64(p0, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(v)));
		p1 = _mm512_add_epi64(p1, _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(v, 1)));
		q0 = _mm512_add_epi64(q0, p0);
		q1 = _mm512_add_epi64(q1, p1);
	}
	int64_t p[BLK], q[BLK];
	_mm512_storeu_si512(p, p0);
	_mm512_storeu_si512(p + 8, p1);
	_mm512_storeu_si512(q, q0);
	_mm512_storeu_si512(q + 8, q1);
	combine_lanes(p, q, nb, c, n, s1, s2);
}

__attribute__((target("avx2"))) static void sums_i32_avx2(const int32_t *c, int n, int64_t *s1, int64_t *s2)
{
	__m256i p[4], q[4];
	for (int r = 0; r < 4; r++)
		p[r] = q[r] = _mm256_setzero_si256();
	const int nb = n / BLK;
	for (int b = 0; b < nb; b++) {
		for (int r = 0; r < 4; r++) {
			const __m128i v = _mm_loadu_si128((const __m128i *)(c + b * BLK + 4 * r));
			p[r] = _mm256_add_epi64(p[r], _mm256_cvtepi32_epi64(v));
			q[r] = _mm256_add_epi64(q[r], p[r]);
		}
	}
	int64_t pl[BLK], ql[BLK];
	for (int r = 0; r < 4; r++) {
		_mm256_storeu_si256((__m256i *)(pl + 4 * r), p[r]);
		_mm256_storeu_si256((__m256i *)(ql + 4 * r), q[r]);
	}
	combine_lanes(pl, ql, nb, c, n, s1, s2);
}
#endif

/* ---- fp64 rows, compensated sums ---- */

/*
 * fp64-fast row sums, compensated: per lane, Knuth's TwoSum keeps each addition's exact rounding
 * error (s = a + b, e = (a - (s - bb)) + (b - bb), bb = s - a), summed apart and added back at
 * the end. Eight lanes side by side; AVX-512 and AVX2 versions of the same arithmetic.
 */
static void combine_dd(const double *s, const double *e, const double *w, const double *we, int lanes,
		       const double *c, int j, int n, double *s1, double *s2)
{
	double ts = 0, tc = 0, tw = 0, twc = 0;
	for (int l = 0; l < lanes; l++) {
		sdc_neumaier(&ts, &tc, s[l]);
		tc += e[l];
		sdc_neumaier(&tw, &twc, w[l]);
		twc += we[l];
	}
	for (; j < n; j++) {
		sdc_neumaier(&ts, &tc, c[j]);
		sdc_neumaier(&tw, &twc, (double)(j + 1) * c[j]);
	}
	*s1 = ts + tc;
	*s2 = tw + twc;
}

/*
 * Written once with GCC vector types; each instance compiles to its instruction set's vectors.
 * U independent accumulators per sum, so the additions' latency overlaps instead of chaining.
 */
typedef double v8d __attribute__((vector_size(64)));
typedef double v4d __attribute__((vector_size(32)));
#define U 4

#define DEFINE_SUMS_F64(name, attr, V, W)                                                          \
	attr static void name(const double *c, int n, double *s1, double *s2)                      \
	{                                                                                          \
		V s[U] = { { 0 } }, e[U] = { { 0 } }, w[U] = { { 0 } }, we[U] = { { 0 } }, idx[U], step; \
		for (int l = 0; l < (W); l++) {                                                    \
			for (int u = 0; u < U; u++)                                                \
				idx[u][l] = u * (W) + l + 1;                                       \
			step[l] = U * (W);                                                         \
		}                                                                                  \
		int j = 0;                                                                         \
		for (; j + U * (W) <= n; j += U * (W)) {                                           \
			_Pragma("GCC unroll 4")                                                    \
			for (int u = 0; u < U; u++) {                                              \
				V x;                                                               \
				memcpy(&x, c + j + u * (W), sizeof(x));                            \
				V t = s[u] + x, bb = t - s[u];                                     \
				e[u] += (s[u] - (t - bb)) + (x - bb);                              \
				s[u] = t;                                                          \
				const V y = idx[u] * x;                                            \
				t = w[u] + y;                                                      \
				bb = t - w[u];                                                     \
				we[u] += (w[u] - (t - bb)) + (y - bb);                             \
				w[u] = t;                                                          \
				idx[u] += step;                                                    \
			}                                                                          \
		}                                                                                  \
		double sl[U * (W)], el[U * (W)], wl[U * (W)], wel[U * (W)];                        \
		memcpy(sl, s, sizeof(sl));                                                         \
		memcpy(el, e, sizeof(el));                                                         \
		memcpy(wl, w, sizeof(wl));                                                         \
		memcpy(wel, we, sizeof(wel));                                                      \
		combine_dd(sl, el, wl, wel, U * (W), c, j, n, s1, s2);                             \
	}

DEFINE_SUMS_F64(sums_f64_portable, , v8d, 8)
#if defined(__x86_64__)
DEFINE_SUMS_F64(sums_f64_avx2, __attribute__((target("avx2"))), v4d, 4)
DEFINE_SUMS_F64(sums_f64_avx512, __attribute__((target("avx512f"))), v8d, 8)
#endif

/* ---- the tables ---- */

static const struct sdc_abft_sums_fns portable = { .i32 = sums_i32_portable, .f64 = sums_f64_portable };
#if defined(__x86_64__)
static const struct sdc_abft_sums_fns avx2 = { .i32 = sums_i32_avx2, .f64 = sums_f64_avx2 };
static const struct sdc_abft_sums_fns avx512 = { .i32 = sums_i32_avx512, .f64 = sums_f64_avx512 };
#endif

const struct sdc_abft_sums_fns *sdc_abft_sums_isa(enum sdc_isa isa)
{
	if (!sdc_isa_supported(isa))
		return NULL;
	switch (isa) {
#if defined(__x86_64__)
	case SDC_ISA_AVX2:
		return &avx2;
	case SDC_ISA_AVX512F:
		return &avx512;
#endif
	case SDC_ISA_PORTABLE:
		return &portable;
	default:
		return NULL;
	}
}

const struct sdc_abft_sums_fns *sdc_abft_sums(void)
{
	static _Atomic(const struct sdc_abft_sums_fns *) best;
	const struct sdc_abft_sums_fns *t = atomic_load_explicit(&best, memory_order_relaxed);
	if (!t) {
		t = sdc_abft_sums_isa(SDC_ISA_AVX512F);
		if (!t)
			t = sdc_abft_sums_isa(SDC_ISA_AVX2);
		if (!t)
			t = &portable;
		atomic_store_explicit(&best, t, memory_order_relaxed); /* every thread stores the same pointer */
	}
	return t;
}
