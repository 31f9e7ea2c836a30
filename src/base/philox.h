/*
 * Philox4x32-10 counter-based RNG (Salmon et al., "Parallel random numbers: as easy as
 * 1, 2, 3", SC'11), written once for the C and the CUDA code: include it from either.
 * Checked against the Random123 known-answer vectors in tests/unit/test_rng.c.
 */
#ifndef SDC_PHILOX_H
#define SDC_PHILOX_H

#include <stdint.h>

#include "base/hd.h"

#define SDC_PHILOX_M0 0xD2511F53u
#define SDC_PHILOX_M1 0xCD9E8D57u
#define SDC_PHILOX_W0 0x9E3779B9u
#define SDC_PHILOX_W1 0xBB67AE85u

struct sdc_philox_ctr {
	uint32_t v[4];
};

struct sdc_philox_key {
	uint32_t v[2];
};

SDC_HD void sdc_philox_round(uint32_t c[4], const uint32_t k[2])
{
	uint64_t p0 = (uint64_t)SDC_PHILOX_M0 * c[0];
	uint64_t p1 = (uint64_t)SDC_PHILOX_M1 * c[2];
	uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
	uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
	uint32_t n0 = hi1 ^ c[1] ^ k[0];
	uint32_t n2 = hi0 ^ c[3] ^ k[1];
	c[0] = n0;
	c[1] = lo1;
	c[2] = n2;
	c[3] = lo0;
}

/* Ten rounds, with the Weyl key schedule between them. */
SDC_HD struct sdc_philox_ctr sdc_philox4x32_10(struct sdc_philox_ctr ctr, struct sdc_philox_key key)
{
	uint32_t c[4] = { ctr.v[0], ctr.v[1], ctr.v[2], ctr.v[3] };
	uint32_t k[2] = { key.v[0], key.v[1] };
	for (int r = 0; r < 10; r++) {
		if (r) {
			k[0] += SDC_PHILOX_W0;
			k[1] += SDC_PHILOX_W1;
		}
		sdc_philox_round(c, k);
	}
	struct sdc_philox_ctr out = { { c[0], c[1], c[2], c[3] } };
	return out;
}

#endif
