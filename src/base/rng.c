/* Philox streams keyed by seed, probe, rank, device and purpose (base/rng.h). */
#include "base/rng.h"

#include <stdbool.h>
#include <string.h>

/* Portable fill: one block at a time (the reference the vector paths are tested against). */
static void fill_scalar(const struct sdc_rng *r, uint64_t first, uint32_t *out, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++) {
		struct sdc_philox_ctr c = sdc_rng_block(r, first + b);
		memcpy(out + 4 * b, c.v, sizeof(c.v));
	}
}

#if defined(__x86_64__)
#include <immintrin.h>

/*
 * Sixteen counters at once. vpmuludq multiplies the even 32-bit lanes into 64-bit products,
 * so odd lanes are shifted down first; the high and low halves are blended back into place.
 */
__attribute__((target("avx512f"))) static inline void mulhilo16(__m512i x, __m512i m, __m512i *hi,
								 __m512i *lo)
{
	const __m512i pe = _mm512_mul_epu32(x, m);
	const __m512i po = _mm512_mul_epu32(_mm512_srli_epi64(x, 32), m);
	*lo = _mm512_mask_blend_epi32(0xAAAA, pe, _mm512_slli_epi64(po, 32));
	*hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(pe, 32), po);
}

/* Two groups of sixteen counters in flight, so one group's multiplies hide the other's latency. */
#define GROUPS 2

__attribute__((target("avx512f"))) static void fill_avx512(const struct sdc_rng *r, uint64_t first,
							     uint32_t *out, size_t nblocks)
{
	const __m512i m0 = _mm512_set1_epi32((int)SDC_PHILOX_M0), m1 = _mm512_set1_epi32((int)SDC_PHILOX_M1);
	const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
	const __m512i one = _mm512_set1_epi32(1);
	size_t b = 0;
	for (; b + 16 * GROUPS <= nblocks; b += 16 * GROUPS) {
		__m512i c0[GROUPS], c1[GROUPS], c2[GROUPS], c3[GROUPS];
		for (int g = 0; g < GROUPS; g++) {
			const uint64_t base = first + b + 16 * (size_t)g;
			const __m512i hi = _mm512_set1_epi32((int)(uint32_t)(base >> 32));
			/* Low index words; a carry into the high word can happen inside the sixteen. */
			c0[g] = _mm512_add_epi32(_mm512_set1_epi32((int)(uint32_t)base), lane);
			c1[g] = _mm512_mask_add_epi32(hi, _mm512_cmplt_epu32_mask(c0[g], lane), hi, one);
			c2[g] = _mm512_set1_epi32((int)r->stream);
			c3[g] = _mm512_set1_epi32((int)r->purpose);
		}
		uint32_t k0 = r->key.v[0], k1 = r->key.v[1];
#pragma GCC unroll 10
		for (int round = 0; round < 10; round++) {
			if (round) {
				k0 += SDC_PHILOX_W0;
				k1 += SDC_PHILOX_W1;
			}
			const __m512i vk0 = _mm512_set1_epi32((int)k0), vk1 = _mm512_set1_epi32((int)k1);
			for (int g = 0; g < GROUPS; g++) {
				__m512i hi0, lo0, hi1, lo1;
				mulhilo16(c0[g], m0, &hi0, &lo0);
				mulhilo16(c2[g], m1, &hi1, &lo1);
				c0[g] = _mm512_ternarylogic_epi32(hi1, c1[g], vk0, 0x96); /* a ^ b ^ c */
				c2[g] = _mm512_ternarylogic_epi32(hi0, c3[g], vk1, 0x96);
				c1[g] = lo1;
				c3[g] = lo0;
			}
		}
		for (int g = 0; g < GROUPS; g++) {
			/* Transpose 4 x 16 words (one array per word) into 16 blocks of 4 words. */
			const __m512i t01 = _mm512_unpacklo_epi32(c0[g], c1[g]), t01h = _mm512_unpackhi_epi32(c0[g], c1[g]);
			const __m512i t23 = _mm512_unpacklo_epi32(c2[g], c3[g]), t23h = _mm512_unpackhi_epi32(c2[g], c3[g]);
			const __m512i q0 = _mm512_unpacklo_epi64(t01, t23), q1 = _mm512_unpackhi_epi64(t01, t23);
			const __m512i q2 = _mm512_unpacklo_epi64(t01h, t23h), q3 = _mm512_unpackhi_epi64(t01h, t23h);
			/* 128-bit lane L of q_j is block 4L + j: transpose the 4 x 4 grid of lanes. */
			const __m512i a = _mm512_shuffle_i32x4(q0, q1, _MM_SHUFFLE(2, 0, 2, 0));
			const __m512i bb = _mm512_shuffle_i32x4(q2, q3, _MM_SHUFFLE(2, 0, 2, 0));
			const __m512i c = _mm512_shuffle_i32x4(q0, q1, _MM_SHUFFLE(3, 1, 3, 1));
			const __m512i d = _mm512_shuffle_i32x4(q2, q3, _MM_SHUFFLE(3, 1, 3, 1));
			uint32_t *o = out + 4 * (b + 16 * (size_t)g);
			_mm512_storeu_si512(o, _mm512_shuffle_i32x4(a, bb, _MM_SHUFFLE(2, 0, 2, 0)));
			_mm512_storeu_si512(o + 16, _mm512_shuffle_i32x4(c, d, _MM_SHUFFLE(2, 0, 2, 0)));
			_mm512_storeu_si512(o + 32, _mm512_shuffle_i32x4(a, bb, _MM_SHUFFLE(3, 1, 3, 1)));
			_mm512_storeu_si512(o + 48, _mm512_shuffle_i32x4(c, d, _MM_SHUFFLE(3, 1, 3, 1)));
		}
	}
	if (b < nblocks)
		fill_scalar(r, first + b, out + 4 * b, nblocks - b);
}

static bool has_avx512(void)
{
	return __builtin_cpu_supports("avx512f");
}
#endif

void sdc_rng_fill_u32(const struct sdc_rng *r, uint64_t first_block, uint32_t *out, size_t n)
{
	size_t whole = n / 4;
#if defined(__x86_64__)
	if (whole >= 32 && has_avx512())
		fill_avx512(r, first_block, out, whole);
	else
#endif
		fill_scalar(r, first_block, out, whole);
	if (n % 4) {
		struct sdc_philox_ctr c = sdc_rng_block(r, first_block + whole);
		for (size_t i = 0; i < n % 4; i++)
			out[whole * 4 + i] = c.v[i];
	}
}

double sdc_rng_uniform(const struct sdc_rng *r, uint64_t index)
{
	struct sdc_philox_ctr c = sdc_rng_block(r, index);
	uint64_t bits = ((uint64_t)c.v[0] << 32 | c.v[1]) >> 11; /* 53 bits */
	return (double)bits * 0x1p-53;
}

uint64_t sdc_rng_below(const struct sdc_rng *r, uint64_t index, uint64_t bound)
{
	if (bound <= 1)
		return 0;
	struct sdc_philox_ctr c = sdc_rng_block(r, index);
	uint64_t x = (uint64_t)c.v[0] << 32 | c.v[1];
	/* Multiply-shift: bias below 2^-64 * bound, irrelevant for test data. */
	return (uint64_t)(((unsigned __int128)x * bound) >> 64);
}
