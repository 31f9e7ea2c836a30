/*
 * Value distributions for the fast numerics class, after V-ABFT's evaluation (§6.1):
 * N(1e-6, 1), N(1, 1), U(-1, 1), N(0, 1) truncated to [-1, 1], and |N(1, 1)| for calibration.
 * A pool of values is drawn once from Philox (normals by Marsaglia's polar method with sdc_log,
 * so the pool is the same bits on every host) and operand sets are windows into it.
 */
#ifndef SDC_DIST_H
#define SDC_DIST_H

#include <stddef.h>
#include <stdint.h>

enum sdc_dist {
	SDC_DIST_NORMAL,      /* N(1e-6, 1): near-zero mean, like normalised activations */
	SDC_DIST_NORMAL1,     /* N(1, 1): non-zero mean */
	SDC_DIST_UNIFORM,     /* U(-1, 1) */
	SDC_DIST_TRUNCNORMAL, /* N(0, 1) truncated to [-1, 1] */
	SDC_DIST_ABSNORMAL1,  /* |N(1, 1)|: positive, for calibration */
	SDC_NDISTS,
};

/* Names as options and reports spell them; NULL-terminated, in enum order. */
extern const char *const sdc_dist_names[];
/* The paper's notation, for tables: "N(1e-6,1)". */
extern const char *const sdc_dist_labels[];

#define SDC_DIST_POOL (1u << 20)

struct sdc_dist_pool {
	enum sdc_dist dist;
	double *v; /* SDC_DIST_POOL values */
};

int sdc_dist_pool_init(struct sdc_dist_pool *p, enum sdc_dist d, uint64_t seed);
void sdc_dist_pool_release(struct sdc_dist_pool *p);

#endif
