/* The allreduce probe's data and the checks of every hop (probes/allreduce/ring_check.h). */
#include "probes/allreduce/ring_check.h"

#include "kernels/crc32c.h"
#include "probes/allreduce/ring_hd.h"

#include <stdbool.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define RING_AVX512 1
#endif

#include "kernels/clones.h"

/* 32-bit arithmetic only (ring_hd.h, the GPU's too), so the loop vectorises: the terms cost about
 * what writing them costs. */
CLONES void sdc_ring_terms(int64_t n, uint64_t it, int8_t *restrict f, int8_t *restrict g)
{
	const uint32_t salt = sdc_ring_salt(it);
	for (int64_t i = 0; i < n; i++)
		sdc_ring_term(i, salt, &f[i], &g[i]);
}

CLONES void sdc_ring_values(float *restrict buf, int64_t n, int r, const int8_t *restrict f,
			    const int8_t *restrict g)
{
	for (int64_t i = 0; i < n; i++)
		buf[i] = (float)(f[i] + r * g[i]);
}

/* The expected value in float arithmetic, so the loops stay in 32-bit lanes: count f and rsum g
 * are exact in fp32 (|count f| <= 8 P and |rsum g| <= P(P-1) stay below 2^24 for P <= 2896 ranks,
 * and 2 rsum is a power-of-two multiple of an exact rsum beyond), and the one rounding of their
 * sum, fused or not, is the rounding of the exact integer sum: the same bits as
 * sdc_ring_expected, which the unit test checks. A sum of zero comes out +0 either way. */
#define EXPECT(i) (c * (float)f[i] + r * (float)g[i])
/* Counts go in 32-bit lanes a block at a time (a block cannot overflow them). */
#define BLOCK ((int64_t)1 << 24)

/* Both checks in one loop: with dst, dst = own + the expected values (a reduce-scatter step);
 * without, only the count. Inlined with dst known, so each caller gets a loop of its own. Bit
 * patterns are compared, not values: -0 for +0 or one NaN for another is still wrong. */
static inline __attribute__((always_inline)) int64_t check_loop(float *dst, const float *own,
								const uint32_t *restrict got, const int8_t *restrict f,
								const int8_t *restrict g, int64_t n, int count, int rsum)
{
	const float c = (float)count, r = (float)rsum;
	int64_t nbad = 0;
	for (int64_t b = 0; b < n; b += BLOCK) {
		const int64_t end = n - b < BLOCK ? n : b + BLOCK;
		uint32_t bad = 0;
		for (int64_t i = b; i < end; i++) {
			const float e = EXPECT(i);
			uint32_t u;
			memcpy(&u, &e, 4);
			bad += u != got[i];
			if (dst)
				dst[i] = own[i] + e;
		}
		nbad += bad;
	}
	return nbad;
}

static CLONES int64_t check_add_loop(float *dst, const float *own, const uint32_t *got, const int8_t *f,
				     const int8_t *g, int64_t n, int count, int rsum)
{
	return check_loop(dst, own, got, f, g, n, count, rsum);
}

static CLONES int64_t count_wrong_loop(const uint32_t *got, const int8_t *f, const int8_t *g, int64_t n, int count,
				       int rsum)
{
	return check_loop(NULL, NULL, got, f, g, n, count, rsum);
}

int64_t sdc_ring_first_wrong(float *got, const int8_t *f, const int8_t *g, int64_t n, int count, int rsum,
			     bool repair, float *first_got)
{
	int64_t first = -1;
	for (int64_t i = 0; i < n; i++) {
		const float e = sdc_ring_expected(f, g, i, count, rsum);
		if (memcmp(&e, &got[i], 4) == 0)
			continue;
		if (first < 0) {
			first = i;
			if (first_got)
				*first_got = got[i];
		}
		if (!repair)
			break;
		got[i] = e;
	}
	return first;
}

#ifdef RING_AVX512
/* gcc widens the int8 terms through 16-bit steps and shuffles; by hand it is one widening load
 * per term and 16 lanes, and the mismatches are counted from the compare mask. */
#define AVX512 __attribute__((target("avx512f")))

AVX512 static inline __m512 expect16(const int8_t *f, const int8_t *g, __m512 c, __m512 r)
{
	const __m512 fv = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)f)));
	const __m512 gv = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)g)));
	return _mm512_add_ps(_mm512_mul_ps(c, fv), _mm512_mul_ps(r, gv));
}

AVX512 static inline int wrong16(const uint32_t *got, __m512 e)
{
	return __builtin_popcount(_mm512_cmpneq_epi32_mask(_mm512_castps_si512(e), _mm512_loadu_si512(got)));
}

/* With dst a reduce-scatter step, without a count, as check_loop. */
AVX512 static int64_t check_avx512(float *dst, const float *own, const uint32_t *got, const int8_t *f,
				   const int8_t *g, int64_t n, int count, int rsum)
{
	const __m512 c = _mm512_set1_ps((float)count), r = _mm512_set1_ps((float)rsum);
	int64_t nbad = 0, i = 0;
	for (; i + 16 <= n; i += 16) {
		const __m512 e = expect16(f + i, g + i, c, r);
		nbad += wrong16(got + i, e);
		if (dst)
			_mm512_storeu_ps(dst + i, _mm512_add_ps(_mm512_loadu_ps(own + i), e));
	}
	return nbad + (dst ? check_add_loop(dst + i, own + i, got + i, f + i, g + i, n - i, count, rsum)
			   : count_wrong_loop(got + i, f + i, g + i, n - i, count, rsum));
}

/* CRC32C of 64 bytes into one stream's register: eight crc32 instructions on cached loads. */
__attribute__((target("sse4.2"))) static inline uint64_t crc64(uint64_t reg, const void *p)
{
	const uint8_t *b = p;
	for (int k = 0; k < 64; k += 8) {
		uint64_t v;
		memcpy(&v, b + k, 8);
		reg = _mm_crc32_u64(reg, v);
	}
	return reg;
}

#define FUSED __attribute__((target("avx512f,sse4.2")))
#define SB ((int64_t)SDC_CRC32C_STREAM / 4) /* elements per CRC stream */

/* The CRC in three streams of SB elements, as sdc_crc32c runs them (the instruction's latency is
 * three cycles, its rate one a cycle), one block of 3 SB elements behind the vector check, so its
 * crc32 instructions (an integer port) overlap the check of the next block and read sums already
 * in the cache (read right after their stores, the loop ran slower than two passes). The rest is
 * checked as before and its CRC continued.
 *
 * One block of 3 SB elements (from i): its sums, and with crc_prev the CRC streams of the block
 * before it, interleaved. Inlined with crc_prev known, so neither loop tests it. */
FUSED static inline __attribute__((always_inline)) int64_t sums_block(float *dst, const float *own, const uint32_t *got,
								     const int8_t *f, const int8_t *g, int64_t i,
								     __m512 c, __m512 r, const bool crc_prev,
								     uint64_t *crc3)
{
	const int64_t pb = i - 3 * SB;
	int64_t nbad = 0;
	for (int64_t k = 0; k < SB; k += 16) {
		for (int t = 0; t < 3; t++) {
			const int64_t j = i + 3 * k + 16 * t;
			const __m512 e = expect16(f + j, g + j, c, r);
			nbad += wrong16(got + j, e);
			_mm512_storeu_ps(dst + j, _mm512_add_ps(_mm512_loadu_ps(own + j), e));
		}
		if (crc_prev)
			crc3[0] = crc64(crc3[0], dst + pb + k), crc3[1] = crc64(crc3[1], dst + pb + k + SB),
			crc3[2] = crc64(crc3[2], dst + pb + k + 2 * SB);
	}
	return nbad;
}

FUSED static int64_t check_add_crc_avx512(float *dst, const float *own, const uint32_t *got, const int8_t *f,
					  const int8_t *g, int64_t n, int count, int rsum, uint32_t *crc)
{
	const __m512 c = _mm512_set1_ps((float)count), r = _mm512_set1_ps((float)rsum);
	uint32_t rg = 0xFFFFFFFFu; /* the raw register: a CRC starts inverted */
	int64_t nbad = 0, i = 0;
	for (; i + 3 * SB <= n; i += 3 * SB) {
		uint64_t crc3[3] = { rg, 0, 0 };
		if (i == 0) {
			nbad += sums_block(dst, own, got, f, g, i, c, r, false, crc3);
		} else {
			nbad += sums_block(dst, own, got, f, g, i, c, r, true, crc3);
			rg = sdc_crc32c_shift(sdc_crc32c_shift((uint32_t)crc3[0]) ^ (uint32_t)crc3[1]) ^ (uint32_t)crc3[2];
		}
	}
	nbad += check_avx512(dst + i, own + i, got + i, f + i, g + i, n - i, count, rsum);
	/* the last whole block's CRC, then the rest's */
	const int64_t from = i >= 3 * SB ? i - 3 * SB : i;
	*crc = sdc_crc32c(~rg, dst + from, (size_t)(n - from) * 4);
	return nbad;
}

static bool have_avx512(void)
{
	static int have = -1;
	if (have < 0) {
		__builtin_cpu_init();
		have = __builtin_cpu_supports("avx512f");
	}
	return have;
}
#endif

int64_t sdc_ring_check_add(float *dst, const float *own, const uint32_t *got, const int8_t *f, const int8_t *g,
			   int64_t n, int count, int rsum)
{
#ifdef RING_AVX512
	if (have_avx512())
		return check_avx512(dst, own, got, f, g, n, count, rsum);
#endif
	return check_add_loop(dst, own, got, f, g, n, count, rsum);
}

int64_t sdc_ring_count_wrong(const float *got, const int8_t *f, const int8_t *g, int64_t n, int count, int rsum)
{
#ifdef RING_AVX512
	if (have_avx512())
		return check_avx512(NULL, NULL, (const uint32_t *)got, f, g, n, count, rsum);
#endif
	return count_wrong_loop((const uint32_t *)got, f, g, n, count, rsum);
}

int64_t sdc_ring_check_add_crc(float *dst, const float *own, const uint32_t *got, const int8_t *f, const int8_t *g,
			       int64_t n, int count, int rsum, uint32_t *crc)
{
#ifdef RING_AVX512
	if (have_avx512() && __builtin_cpu_supports("sse4.2"))
		return check_add_crc_avx512(dst, own, got, f, g, n, count, rsum, crc);
#endif
	const int64_t nbad = sdc_ring_check_add(dst, own, got, f, g, n, count, rsum);
	*crc = sdc_crc32c(0, dst, (size_t)n * 4);
	return nbad;
}

void sdc_ring_hop_header(uint32_t header[3], uint32_t crc, uint32_t step)
{
	header[0] = crc;
	header[1] = step;
	header[2] = sdc_crc32c(0, header, 8);
}

void sdc_ring_hop_verdict_crc(const uint32_t header[3], uint32_t step, uint32_t chunk_crc, int64_t nbad,
			      struct sdc_hop_verdict *v)
{
	v->header_ok = header[1] == step && header[2] == sdc_crc32c(0, header, 8);
	v->crc = chunk_crc;
	const bool crc_ok = v->header_ok && header[0] == v->crc;
	v->fault = !crc_ok ? SDC_HOP_LINK : nbad ? SDC_HOP_SENDER : SDC_HOP_OK;
}

void sdc_ring_hop_verdict(const uint32_t header[3], uint32_t step, const void *chunk, size_t cb, int64_t nbad,
			  struct sdc_hop_verdict *v)
{
	/* the chunk's CRC only when it can matter: the sender's stands for it otherwise */
	const bool header_ok = header[1] == step && header[2] == sdc_crc32c(0, header, 8);
	sdc_ring_hop_verdict_crc(header, step, nbad || !header_ok ? sdc_crc32c(0, chunk, cb) : header[0], nbad, v);
}
