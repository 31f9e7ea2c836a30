/*
 * Streams of random data keyed by (seed, probe, rank, device, purpose) and indexed by a
 * 64-bit block number, so any block of any run can be regenerated from its report.
 * Counter layout: v[0..1] = block index, v[2] = rank << 16 | device, v[3] = probe << 24 | purpose.
 */
#ifndef SDC_RNG_H
#define SDC_RNG_H

#include <stddef.h>
#include <stdint.h>

#include "base/philox.h"

/* Device or rank value for data every device shares (so results compare across devices). */
#define SDC_RNG_SHARED 0xFFFFu

enum sdc_rng_probe {
	SDC_RNG_PROBE_GEMM = 1,
	SDC_RNG_PROBE_EMBBAG = 2,
	SDC_RNG_PROBE_MINITRAIN = 3,
	SDC_RNG_PROBE_ALLREDUCE = 4,
	SDC_RNG_PROBE_ECPARITY = 5,
	SDC_RNG_PROBE_INJECT = 0xF0,
};

struct sdc_rng {
	struct sdc_philox_key key;
	uint32_t stream;  /* rank << 16 | device */
	uint32_t purpose; /* probe << 24 | purpose */
};

/* Inline and __host__ __device__ (SDC_HD, philox.h): the CUDA kernels draw the same streams. */
SDC_HD struct sdc_rng sdc_rng_make(uint64_t seed, unsigned probe, unsigned rank, unsigned device, uint32_t purpose)
{
	struct sdc_rng r;
	r.key.v[0] = (uint32_t)seed;
	r.key.v[1] = (uint32_t)(seed >> 32);
	r.stream = (rank & 0xFFFFu) << 16 | (device & 0xFFFFu);
	r.purpose = (probe & 0xFFu) << 24 | (purpose & 0xFFFFFFu);
	return r;
}

/* The four words of block `index`. */
SDC_HD struct sdc_philox_ctr sdc_rng_block(const struct sdc_rng *r, uint64_t index)
{
	struct sdc_philox_ctr c = { { (uint32_t)index, (uint32_t)(index >> 32), r->stream, r->purpose } };
	return sdc_philox4x32_10(c, r->key);
}

/* Fills out[0..n) with the words of blocks first_block, first_block+1, ... in order. */
void sdc_rng_fill_u32(const struct sdc_rng *r, uint64_t first_block, uint32_t *out, size_t n);

/* Convenience for scalar draws: a uniform double in [0,1) and an integer in [0, bound). */
double sdc_rng_uniform(const struct sdc_rng *r, uint64_t index);
uint64_t sdc_rng_below(const struct sdc_rng *r, uint64_t index, uint64_t bound);

#endif
