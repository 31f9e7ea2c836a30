/*
 * x86 EmbeddingBag kernels: the pooled row lives in vector registers for the whole bag (d / 16
 * zmm or d / 8 ymm), each row's values are widened to fp32 and folded in with one add and one
 * fma, as the portable kernel does per element. Rows SDC_EB_PREFETCH ahead are prefetched, the
 * way FBGEMM hides the table's cache misses, and past the end of the bag into the next one.
 *
 * The checked form (AVX-512) notes where each row's tail lies (scale, bias, stored sums: 16 bytes
 * of an 8-bit row, 8 of a 4-bit one) and every eight rows loads the eight tails, still in L1,
 * side by side and folds them into the expectation with a few vector operations across rows, in
 * double; one fma per row on 16 columns gathers the rounding statistic. Functions carry
 * their own target attributes, so this file builds with baseline flags.
 */
#include <cpuid.h>
#include <immintrin.h>
#include <string.h>

#include "probes/embbag/kernel.h"

#define INLINE static inline __attribute__((always_inline))
#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
#define AVX2 __attribute__((target("avx2,fma,f16c")))

/*
 * A bag kernel's entry: the row format, the sums asked for, weights or not and the width in
 * chunks of W floats are all made constants of one inlined body (bag is a macro-like always-inline
 * function), so the compiler keeps the pooled row in registers: 2 to 16 chunks get their own
 * instance (more would not fit the registers), any other width the general one.
 */
#define BAG_NCH(bag_fn, W, four, sm, wt)                                                          \
	switch (l->d / (W)) {                                                                     \
	case 2: bag_fn(2, four, sm, wt, l, table, bag, out, e); return;                           \
	case 4: bag_fn(4, four, sm, wt, l, table, bag, out, e); return;                           \
	case 8: bag_fn(8, four, sm, wt, l, table, bag, out, e); return;                           \
	case 16: bag_fn(16, four, sm, wt, l, table, bag, out, e); return;                         \
	default: bag_fn(l->d / (W), four, sm, wt, l, table, bag, out, e); return;                 \
	}
#define BAG_WEIGHTED(bag_fn, W, four, sm)                                                         \
	do {                                                                                      \
		if (bag->w)                                                                       \
			BAG_NCH(bag_fn, W, four, sm, true)                                        \
		else                                                                              \
			BAG_NCH(bag_fn, W, four, sm, false)                                       \
	} while (0)
#define BAG_SUMS(bag_fn, W, four)                                                                 \
	do {                                                                                      \
		if (sums == SDC_EB_NO_SUMS)                                                       \
			BAG_WEIGHTED(bag_fn, W, four, SDC_EB_NO_SUMS);                            \
		else if (sums == SDC_EB_SUMS)                                                     \
			BAG_WEIGHTED(bag_fn, W, four, SDC_EB_SUMS);                               \
		else                                                                              \
			BAG_WEIGHTED(bag_fn, W, four, SDC_EB_SUMS_STATS);                         \
	} while (0)
#define BAG_DISPATCH(bag_fn, W)                                                                   \
	do {                                                                                      \
		if (l->fmt == SDC_EB_8BIT)                                                        \
			BAG_SUMS(bag_fn, W, false);                                               \
		else                                                                              \
			BAG_SUMS(bag_fn, W, true);                                                \
	} while (0)

bool sdc_eb_have_avx2(void);
bool sdc_eb_have_avx512(void);
void sdc_eb_bag_avx2(const struct sdc_eb_layout *l, const uint8_t *table, const struct sdc_eb_bag *bag, float *out,
		     struct sdc_eb_expect *e, enum sdc_eb_sums sums);
void sdc_eb_bag_avx512(const struct sdc_eb_layout *l, const uint8_t *table, const struct sdc_eb_bag *bag, float *out,
		       struct sdc_eb_expect *e, enum sdc_eb_sums sums);
void sdc_eb_out_sums_avx512(const float *out, int d, struct sdc_eb_out_sums *os);

/* clang's __builtin_cpu_supports knows no "f16c", so that bit is read from CPUID leaf 1 directly. */
static bool have_f16c(void)
{
	unsigned a, b, c, d;
	return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}

bool sdc_eb_have_avx2(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && have_f16c();
}

bool sdc_eb_have_avx512(void)
{
	__builtin_cpu_init();
	return sdc_eb_have_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	       __builtin_cpu_supports("avx512vl");
}

INLINE void prefetch_row(const uint8_t *p, size_t stride)
{
	for (size_t o = 0; o < stride; o += 64)
		_mm_prefetch((const char *)p + o, _MM_HINT_T0);
	_mm_prefetch((const char *)p + stride - 1, _MM_HINT_T0);
}

/* Scale and bias of row r, times its weight: the two scalars every element of the row uses. */
#define ROW_SCALARS(l, row, bag, r, weighted, F16)                                                \
	float scale, bias;                                                                        \
	if ((l)->fmt == SDC_EB_8BIT) {                                                            \
		scale = sdc_eb_load_f32(row + (l)->data);                                         \
		bias = sdc_eb_load_f32(row + (l)->data + 4);                                      \
	} else {                                                                                  \
		scale = F16(sdc_eb_load_u16(row + (l)->data));                                    \
		bias = F16(sdc_eb_load_u16(row + (l)->data + 2));                                 \
	}                                                                                         \
	const float wr = (weighted) ? (bag)->w[r] : 1.0f;                                         \
	const float s = wr * scale, b = wr * bias

/* ---- AVX-512: 16 elements per zmm ---- */

AVX512 static inline float z_half(uint16_t h)
{
	return _cvtsh_ss(h);
}

/* 16 nibbles from 8 bytes, element 2k from the low nibble of byte k, as 16 bytes. */
INLINE AVX512 __m128i unpack_nibbles(const uint8_t *p)
{
	const __m128i x = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)p));
	return _mm_or_si128(_mm_and_si128(x, _mm_set1_epi16(0x000F)),
			    _mm_and_si128(_mm_slli_epi16(x, 4), _mm_set1_epi16(0x0F00)));
}

INLINE AVX512 double z_hsum(__m512 v)
{
	return _mm512_reduce_add_ps(v);
}

INLINE AVX512 double z_hsum_pd(__m512d v)
{
	return _mm512_reduce_add_pd(v); /* a tree of shuffles and adds, in registers */
}

/* The expectation's accumulators, eight lanes each. */
struct z_expect {
	__m512d c, w, s2c, pc, pw;
};

/* A row's tail of zeros (scale and bias 0: it adds nothing), for the rows a last fold lacks. */
static const uint8_t zero_tail[16];

/* Four 16-byte tails side by side. */
INLINE AVX512 __m512i z_tails4(const uint8_t *const *t)
{
	const __m512i z = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)t[0]));
	return _mm512_inserti32x4(_mm512_inserti32x4(_mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)t[1]), 1),
						     _mm_loadu_si128((const __m128i *)t[2]), 2),
				  _mm_loadu_si128((const __m128i *)t[3]), 3);
}

/* Two 8-byte tails side by side. */
INLINE AVX512 __m128i z_tails2(const uint8_t *const *t)
{
	long long b;
	memcpy(&b, t[1], 8);
	return _mm_insert_epi64(_mm_loadl_epi64((const __m128i *)t[0]), b, 1);
}

/*
 * Folds the tails of eight rows (and their weights; the rows a last fold lacks point at zero_tail
 * and weigh 0) into x: scale, bias and the two sums deinterleaved into vectors of eight, widened
 * to double (exactly), times the weights. The tails are read where the rows lie, still in L1:
 * copying them out row by row and reading the copies back as one vector stalled on store
 * forwarding.
 */
INLINE AVX512 void z_fold(const bool four_bit, const enum sdc_eb_sums sums, const bool weighted,
			  const struct sdc_eb_layout *l, const uint8_t *const *tp, const float *w, int n,
			  struct z_expect *x)
{
	__m512 sb; /* scale 0..7, bias 0..7 */
	__m256i c8, w8;
	if (!four_bit) {
		/* (scale, bias, C, W): four 32-bit lanes per row */
		const __m512i z0 = z_tails4(tp), z1 = z_tails4(tp + 4);
		const __m512i isb = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29);
		const __m512i icw = _mm512_setr_epi32(2, 6, 10, 14, 18, 22, 26, 30, 3, 7, 11, 15, 19, 23, 27, 31);
		sb = _mm512_castsi512_ps(_mm512_permutex2var_epi32(z0, isb, z1));
		const __m512i cw = _mm512_permutex2var_epi32(z0, icw, z1);
		c8 = _mm512_castsi512_si256(cw);
		w8 = _mm512_extracti64x4_epi64(cw, 1);
	} else {
		/* (fp16 scale, fp16 bias | packed sums): two 32-bit lanes per row */
		const __m512i z = _mm512_inserti64x4(
			_mm512_castsi256_si512(_mm256_inserti128_si256(_mm256_castsi128_si256(z_tails2(tp)), z_tails2(tp + 2), 1)),
			_mm256_inserti128_si256(_mm256_castsi128_si256(z_tails2(tp + 4)), z_tails2(tp + 6), 1), 1);
		const __m512i ipair = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
		const __m512i split = _mm512_permutexvar_epi32(ipair, z);
		const __m512 f = _mm512_cvtph_ps(_mm512_castsi512_si256(split)); /* s0 b0 s1 b1 ... */
		sb = _mm512_permutexvar_ps(ipair, f);
		const __m256i cw = _mm512_extracti64x4_epi64(split, 1);
		c8 = _mm256_and_si256(cw, _mm256_set1_epi32(0xFFF));
		w8 = _mm256_srli_epi32(cw, 12);
	}
	__m512d S = _mm512_cvtps_pd(_mm512_castps512_ps256(sb));
	__m512d B = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(sb), 1)));
	if (weighted) {
		const __m512d wv = _mm512_cvtps_pd(_mm256_maskz_loadu_ps((__mmask8)((1u << n) - 1), w));
		S = _mm512_mul_pd(wv, S);
		B = _mm512_mul_pd(wv, B);
	}
	const __m512d xc = _mm512_mul_pd(S, _mm512_cvtepi32_pd(c8)), xw = _mm512_mul_pd(S, _mm512_cvtepi32_pd(w8));
	const __m512d yc = _mm512_mul_pd(B, _mm512_set1_pd(l->d)), yw = _mm512_mul_pd(B, _mm512_set1_pd(l->tri));
	x->c = _mm512_add_pd(x->c, _mm512_add_pd(xc, yc));
	x->w = _mm512_add_pd(x->w, _mm512_add_pd(xw, yw));
	if (sums == SDC_EB_SUMS_STATS)
		x->s2c = _mm512_add_pd(x->s2c, _mm512_mul_pd(S, xc));
	if (sums == SDC_EB_SUMS_STATS && weighted) {
		x->pc = _mm512_add_pd(x->pc, _mm512_add_pd(_mm512_mul_pd(xc, xc), _mm512_mul_pd(yc, yc)));
		x->pw = _mm512_add_pd(x->pw, _mm512_add_pd(_mm512_mul_pd(xw, xw), _mm512_mul_pd(yw, yw)));
	}
}

/* One row folded into the pooled row acc (and sq_t); returns the row. */
INLINE AVX512 const uint8_t *z_row(const int nch, const bool four_bit, const enum sdc_eb_sums sums, const bool weighted,
				   const struct sdc_eb_layout *l, const uint8_t *table, const struct sdc_eb_bag *bag, int r,
				   __m512 *acc, __m512 *sq_t)
{
	const size_t stride = l->stride;
	if (r + SDC_EB_PREFETCH < bag->ahead)
		prefetch_row(table + (size_t)bag->idx[r + SDC_EB_PREFETCH] * stride, stride);
	const uint8_t *row = table + (size_t)bag->idx[r] * stride;
	ROW_SCALARS(l, row, bag, r, weighted, z_half);
	const __m512 vs = _mm512_set1_ps(s), vb = _mm512_set1_ps(b);
	_Pragma("GCC unroll 16") for (int c = 0; c < nch; c++) {
		const __m128i q8 = four_bit ? unpack_nibbles(row + 8 * c) : _mm_loadu_si128((const __m128i *)(row + 16 * c));
		const __m512 q = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(q8));
		const __m512 t = _mm512_add_ps(acc[c], vb);
		acc[c] = _mm512_fmadd_ps(vs, q, t);
		if (sums == SDC_EB_SUMS_STATS && c == 0)
			*sq_t = _mm512_fmadd_ps(t, t, *sq_t);
	}
	return row;
}

INLINE AVX512 void z_bag(const int nch, const bool four_bit, const enum sdc_eb_sums sums, const bool weighted,
			 const struct sdc_eb_layout *l, const uint8_t *table, const struct sdc_eb_bag *bag, float *out,
			 struct sdc_eb_expect *e)
{
	__m512 acc[SDC_EB_DMAX / 16], sq_t = _mm512_setzero_ps();
	struct z_expect x = { _mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd(),
			      _mm512_setzero_pd() };
	const uint8_t *tp[8]; /* the tails of the rows since the last fold */
	_Pragma("GCC unroll 32") for (int c = 0; c < nch; c++)
		acc[c] = _mm512_setzero_ps();
	int r = 0;
	if (sums != SDC_EB_NO_SUMS) /* eight rows, then their fold, without a test per row */
		for (; r + 8 <= bag->len; r += 8) {
			_Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
				tp[k] = z_row(nch, four_bit, sums, weighted, l, table, bag, r + k, acc, &sq_t) + l->data;
			z_fold(four_bit, sums, weighted, l, tp, weighted ? bag->w + r : NULL, 8, &x);
		}
	for (int k = 0; r < bag->len; r++, k++) { /* the plain operator's rows, or the last few */
		const uint8_t *row = z_row(nch, four_bit, sums, weighted, l, table, bag, r, acc, &sq_t);
		if (sums != SDC_EB_NO_SUMS)
			tp[k & 7] = row + l->data;
	}
	_Pragma("GCC unroll 32") for (int c = 0; c < nch; c++)
		_mm512_storeu_ps(out + 16 * c, acc[c]);
	if (sums == SDC_EB_NO_SUMS)
		return;
	const int rest = bag->len & 7;
	if (rest) {
		for (int k = rest; k < 8; k++)
			tp[k] = zero_tail;
		z_fold(four_bit, sums, weighted, l, tp, weighted ? bag->w + bag->len - rest : NULL, rest, &x);
	}
	e->c = z_hsum_pd(x.c);
	e->w = z_hsum_pd(x.w);
	e->s2c = z_hsum_pd(x.s2c);
	e->pc = z_hsum_pd(x.pc);
	e->pw = z_hsum_pd(x.pw);
	e->sq_t = sums == SDC_EB_SUMS_STATS ? z_hsum(sq_t) : 0.0;
}

AVX512 void sdc_eb_bag_avx512(const struct sdc_eb_layout *l, const uint8_t *table, const struct sdc_eb_bag *bag,
			      float *out, struct sdc_eb_expect *e, enum sdc_eb_sums sums)
{
	/* 16 floats a chunk */
	BAG_DISPATCH(z_bag, 16);
}

/* The output's sums, 16 elements per step: two lanes of eight doubles each, plus a -0.0 mask. */
AVX512 void sdc_eb_out_sums_avx512(const float *out, int d, struct sdc_eb_out_sums *os)
{
	__m512d c0 = _mm512_setzero_pd(), c1 = c0, w0 = c0, w1 = c0;
	__m512d j0 = _mm512_setr_pd(1, 2, 3, 4, 5, 6, 7, 8), j1 = _mm512_setr_pd(9, 10, 11, 12, 13, 14, 15, 16);
	const __m512d sixteen = _mm512_set1_pd(16);
	const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
	__mmask16 negzero = 0;
	for (int j = 0; j < d; j += 16) {
		const __m512i bits = _mm512_loadu_si512(out + j);
		negzero |= _mm512_cmpeq_epi32_mask(bits, sign);
		const __m512 v = _mm512_castsi512_ps(bits);
		const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
		const __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
		c0 = _mm512_add_pd(c0, lo);
		c1 = _mm512_add_pd(c1, hi);
		w0 = _mm512_add_pd(w0, _mm512_mul_pd(j0, lo));
		w1 = _mm512_add_pd(w1, _mm512_mul_pd(j1, hi));
		j0 = _mm512_add_pd(j0, sixteen);
		j1 = _mm512_add_pd(j1, sixteen);
	}
	os->c = z_hsum_pd(_mm512_add_pd(c0, c1));
	os->w = z_hsum_pd(_mm512_add_pd(w0, w1));
	os->negzero = negzero != 0;
}

/* ---- AVX2: 8 elements per ymm; the expectation row by row in scalar code ---- */

AVX2 static inline float y_half(uint16_t h)
{
	return _cvtsh_ss(h);
}

INLINE AVX2 __m128i y_unpack_nibbles(const uint8_t *p)
{
	const __m128i x = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)p));
	return _mm_or_si128(_mm_and_si128(x, _mm_set1_epi16(0x000F)),
			    _mm_and_si128(_mm_slli_epi16(x, 4), _mm_set1_epi16(0x0F00)));
}

INLINE AVX2 double y_hsum(__m256 v)
{
	const __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	float f[4];
	_mm_storeu_ps(f, q);
	return ((double)f[0] + f[1]) + ((double)f[2] + f[3]);
}

INLINE AVX2 void y_bag(const int nch, const bool four_bit, const enum sdc_eb_sums sums, const bool weighted,
		       const struct sdc_eb_layout *l, const uint8_t *table, const struct sdc_eb_bag *bag, float *out,
		       struct sdc_eb_expect *e)
{
	__m256 acc[SDC_EB_DMAX / 8], sq_t = _mm256_setzero_ps();
	struct sdc_eb_expect x;
	memset(&x, 0, sizeof(x));
	_Pragma("GCC unroll 32") for (int c = 0; c < nch; c++)
		acc[c] = _mm256_setzero_ps();
	const size_t stride = l->stride;
	for (int r = 0; r < bag->len; r++) {
		if (r + SDC_EB_PREFETCH < bag->ahead)
			prefetch_row(table + (size_t)bag->idx[r + SDC_EB_PREFETCH] * stride, stride);
		const uint8_t *row = table + (size_t)bag->idx[r] * stride;
		ROW_SCALARS(l, row, bag, r, weighted, y_half);
		const __m256 vs = _mm256_set1_ps(s), vb = _mm256_set1_ps(b);
		_Pragma("GCC unroll 16") for (int c = 0; c < nch; c += 2) {
			__m128i q0, q1;
			if (four_bit) {
				const __m128i n = y_unpack_nibbles(row + 4 * c);
				q0 = n;
				q1 = _mm_srli_si128(n, 8);
			} else {
				q0 = _mm_loadl_epi64((const __m128i *)(row + 8 * c));
				q1 = _mm_loadl_epi64((const __m128i *)(row + 8 * c + 8));
			}
			const __m256 f0 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q0));
			const __m256 f1 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q1));
			const __m256 t0 = _mm256_add_ps(acc[c], vb), t1 = _mm256_add_ps(acc[c + 1], vb);
			acc[c] = _mm256_fmadd_ps(vs, f0, t0);
			acc[c + 1] = _mm256_fmadd_ps(vs, f1, t1);
			if (sums == SDC_EB_SUMS_STATS && c == 0)
				sq_t = _mm256_fmadd_ps(t1, t1, _mm256_fmadd_ps(t0, t0, sq_t));
		}
		if (sums != SDC_EB_NO_SUMS)
			sdc_eb_expect_row(l, row + l->data, wr, weighted, &x, sums);
	}
	_Pragma("GCC unroll 32") for (int c = 0; c < nch; c++)
		_mm256_storeu_ps(out + 8 * c, acc[c]);
	if (sums == SDC_EB_NO_SUMS)
		return;
	x.sq_t = sums == SDC_EB_SUMS_STATS ? y_hsum(sq_t) : 0.0;
	*e = x;
}

AVX2 void sdc_eb_bag_avx2(const struct sdc_eb_layout *l, const uint8_t *table, const struct sdc_eb_bag *bag,
			  float *out, struct sdc_eb_expect *e, enum sdc_eb_sums sums)
{
	/* 8 floats a chunk */
	BAG_DISPATCH(y_bag, 8);
}
