#include "ring_check.h"

#include <string.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CLONES
#endif

/* 32-bit arithmetic only (a murmur-style finaliser; multiply-shift to the ranges), so the loop
 * vectorises: the terms cost about what writing them costs. */
CLONES void sdc_ring_terms(int64_t n, uint64_t it, int8_t *restrict f, int8_t *restrict g)
{
	const uint32_t salt = (uint32_t)(it * 0x85EBCA77u) ^ (uint32_t)(it >> 32) ^ 0x27D4EB2Fu;
	for (int64_t i = 0; i < n; i++) {
		uint32_t x = (uint32_t)i * 0x9E3779B1u ^ salt;
		x ^= x >> 15;
		x *= 0x2C1B3C6Du;
		x ^= x >> 12;
		x *= 0x297A2D39u;
		x ^= x >> 15;
		f[i] = (int8_t)((int)(((x & 0xFFFFu) * 17u) >> 16) - 8);
		g[i] = (int8_t)((int)(((x >> 16) * 5u) >> 16) - 2);
	}
}

CLONES void sdc_ring_values(float *restrict buf, int64_t n, int r, const int8_t *restrict f,
			    const int8_t *restrict g)
{
	for (int64_t i = 0; i < n; i++)
		buf[i] = (float)(f[i] + r * g[i]);
}

/* Bit patterns are compared, not values: -0 for +0 or one NaN for another is still wrong. */
CLONES int64_t sdc_ring_check_add(float *restrict dst, const uint32_t *restrict got, const int8_t *restrict f,
				  const int8_t *restrict g, int64_t n, int count, int rsum)
{
	int64_t nbad = 0;
	for (int64_t i = 0; i < n; i++) {
		const float e = (float)(count * f[i] + rsum * g[i]);
		uint32_t u;
		memcpy(&u, &e, 4);
		nbad += u != got[i];
		dst[i] += e;
	}
	return nbad;
}

CLONES int64_t sdc_ring_count_wrong(const float *restrict got, const int8_t *restrict f, const int8_t *restrict g,
				    int64_t n, int count, int rsum)
{
	int64_t nbad = 0;
	for (int64_t i = 0; i < n; i++) {
		const float e = (float)(count * f[i] + rsum * g[i]);
		uint32_t u, v;
		memcpy(&u, &e, 4);
		memcpy(&v, &got[i], 4);
		nbad += u != v;
	}
	return nbad;
}
