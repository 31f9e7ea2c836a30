/*
 * The gemm probe's operands, element by element, written once for the CPU and the GPU (inline and
 * __host__ __device__, SDC_HD): the CUDA kernels fill A and B with these on the device, the host
 * regenerates any element with them to name what it should have been, and the CPU engine's bulk
 * generators (probes/gemm/operands.c, a separate vectorised path) are tested against them.
 *
 * Streams are keyed by (seed, class, matrix) and indexed by operand set: element e of a matrix is
 * byte e (int8) or word e (small integers) of its stream in set `set`, little-endian words, four
 * words a Philox block, block number (set << 32) + word / 4.
 */
#ifndef SDC_GEMM_DATA_H
#define SDC_GEMM_DATA_H

#include <stdint.h>

#include "base/rng.h"

/* Which matrix a stream draws: the RNG purpose is class << 8 | matrix. */
enum sdc_gd_matrix { SDC_GD_A = 1, SDC_GD_B = 2, SDC_GD_WINDOW = 3 };

SDC_HD struct sdc_rng sdc_gd_rng(uint64_t seed, int cls, int matrix)
{
	return sdc_rng_make(seed, SDC_RNG_PROBE_GEMM, SDC_RNG_SHARED, SDC_RNG_SHARED,
			    (uint32_t)cls << 8 | (uint32_t)matrix);
}

/* Word e of a stream in operand set `set`. */
SDC_HD uint32_t sdc_gd_word(const struct sdc_rng *r, uint64_t set, uint64_t e)
{
	return sdc_rng_block(r, (set << 32) + e / 4).v[e % 4];
}

/* Byte e of a stream in operand set `set` (little-endian within each word). */
SDC_HD uint8_t sdc_gd_byte(const struct sdc_rng *r, uint64_t set, uint64_t e)
{
	return (uint8_t)(sdc_gd_word(r, set, e / 4) >> (8 * (e % 4)));
}

/* A small integer in [-max, max] from word e: the word scaled, not reduced modulo (no bias). */
SDC_HD int64_t sdc_gd_int_of(uint32_t word, int64_t max)
{
	return (int64_t)(((uint64_t)word * (uint64_t)(2 * max + 1)) >> 32) - max;
}

SDC_HD int64_t sdc_gd_int(const struct sdc_rng *r, uint64_t set, uint64_t e, int64_t max)
{
	return sdc_gd_int_of(sdc_gd_word(r, set, e), max);
}

/*
 * int8 operands: A[i][p] is byte i k + p of A's stream masked to 0..127 (so u8 x s8 kernels on
 * the CPU cannot saturate, and the same value is a valid s8 for the GPU's s8 x s8), B[p][j] byte
 * p n + j of B's stream as s8.
 */
SDC_HD int sdc_gd_int8_a(const struct sdc_rng *r, uint64_t set, int k, int i, int p)
{
	return sdc_gd_byte(r, set, (uint64_t)i * (uint64_t)k + (uint64_t)p) & 0x7F;
}

SDC_HD int sdc_gd_int8_b(const struct sdc_rng *r, uint64_t set, int n, int p, int j)
{
	return (int8_t)sdc_gd_byte(r, set, (uint64_t)p * (uint64_t)n + (uint64_t)j);
}

/*
 * Small-integer operands (the exact class in floating point): A[i][p] word i k + p in [-amax,
 * amax], with the row's first entry made non-negative (no dot product can then round to -0.0),
 * B[p][j] word p n + j in [-bmax, bmax].
 */
SDC_HD int64_t sdc_gd_small_a(const struct sdc_rng *r, uint64_t set, int k, int i, int p, int64_t amax)
{
	const int64_t v = sdc_gd_int(r, set, (uint64_t)i * (uint64_t)k + (uint64_t)p, amax);
	return p == 0 && v < 0 ? -v : v;
}

SDC_HD int64_t sdc_gd_small_b(const struct sdc_rng *r, uint64_t set, int n, int p, int j, int64_t bmax)
{
	return sdc_gd_int(r, set, (uint64_t)p * (uint64_t)n + (uint64_t)j, bmax);
}

/* The exact class's extreme data (every element at its bound): the largest sums its bounds allow. */
SDC_HD int64_t sdc_gd_extreme_a(int is_int8, int64_t amax)
{
	return is_int8 ? 127 : amax;
}

SDC_HD int64_t sdc_gd_extreme_b(int is_int8, int64_t bmax)
{
	return is_int8 ? 127 : bmax;
}

/*
 * Fast-class operands are windows into a pool of 2^k values of one distribution: element idx of
 * a matrix is pool[(start + idx * stride) mod size], stride odd, so a window visits every entry
 * before it repeats one; start and stride come from the set's block of the WINDOW stream.
 */
struct sdc_gd_window {
	uint64_t a0, as, b0, bs;
};

SDC_HD struct sdc_gd_window sdc_gd_window_of(const struct sdc_rng *window_rng, uint64_t set, uint64_t pool_size)
{
	const struct sdc_philox_ctr c = sdc_rng_block(window_rng, set);
	struct sdc_gd_window w;
	w.a0 = c.v[0] % pool_size;
	w.as = (c.v[1] % pool_size) | 1;
	w.b0 = c.v[2] % pool_size;
	w.bs = (c.v[3] % pool_size) | 1;
	return w;
}

SDC_HD double sdc_gd_window_at(const double *pool, uint64_t pool_size, uint64_t start, uint64_t stride, uint64_t idx)
{
	return pool[(start + idx * stride) & (pool_size - 1)];
}

#endif
