/* The fast class's value distributions (probes/gemm/dist.h). */
#include "probes/gemm/dist.h"

#include <math.h>
#include <stdlib.h>

#include "kernels/exactmath.h"
#include "base/rng.h"

const char *const sdc_dist_names[] = { "normal", "normal1", "uniform", "truncnormal", "absnormal1", NULL };
const char *const sdc_dist_labels[] = { "N(1e-6,1)", "N(1,1)", "U(-1,1)", "TruncN(0,1)", "|N(1,1)|", NULL };

/* A uniform double in [-1, 1) from two words (53 bits). */
static double signed_unit(uint32_t hi, uint32_t lo)
{
	return (double)(((uint64_t)hi << 32 | lo) >> 11) * 0x1p-52 - 1.0;
}

int sdc_dist_pool_init(struct sdc_dist_pool *p, enum sdc_dist d, uint64_t seed)
{
	p->dist = d;
	p->v = malloc(sizeof(double) * SDC_DIST_POOL);
	if (!p->v)
		return -1;
	struct sdc_rng r = sdc_rng_make(seed, SDC_RNG_PROBE_GEMM, SDC_RNG_SHARED, SDC_RNG_SHARED, 0x100u + (unsigned)d);
	uint32_t w[4 * 64];
	uint64_t block = 0;
	size_t n = 0;
	while (n < SDC_DIST_POOL) {
		sdc_rng_fill_u32(&r, block, w, 4 * 64);
		block += 64;
		for (int b = 0; b < 64 && n < SDC_DIST_POOL; b++) {
			const uint32_t *q = w + 4 * b;
			const double u = signed_unit(q[0], q[1]), v = signed_unit(q[2], q[3]);
			if (d == SDC_DIST_UNIFORM) {
				p->v[n++] = u;
				if (n < SDC_DIST_POOL)
					p->v[n++] = v;
				continue;
			}
			/* Marsaglia's polar method: two normals per accepted pair; sqrt is correctly rounded. */
			const double s = u * u + v * v;
			if (s >= 1.0 || s == 0.0)
				continue;
			const double f = sqrt(-2.0 * sdc_log(s) / s);
			const double z[2] = { u * f, v * f };
			for (int i = 0; i < 2 && n < SDC_DIST_POOL; i++) {
				switch (d) {
				case SDC_DIST_NORMAL:
					p->v[n++] = z[i] + 1e-6;
					break;
				case SDC_DIST_NORMAL1:
					p->v[n++] = z[i] + 1.0;
					break;
				case SDC_DIST_TRUNCNORMAL:
					if (fabs(z[i]) <= 1.0)
						p->v[n++] = z[i];
					break;
				case SDC_DIST_ABSNORMAL1:
					p->v[n++] = fabs(z[i] + 1.0);
					break;
				default:
					break;
				}
			}
		}
	}
	return 0;
}

void sdc_dist_pool_release(struct sdc_dist_pool *p)
{
	free(p->v);
	p->v = NULL;
}
