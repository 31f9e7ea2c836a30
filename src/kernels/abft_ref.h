/*
 * ABFT arithmetic written once for the CPU and the GPU: inline and __host__ __device__ (SDC_HD,
 * base/philox.h), included by the C kernels and by the CUDA kernels (kernels/cuda/), so the checks
 * a GPU runs are the checks the CPU runs and the host-side tests check both.
 *   - balanced base-2^b digits of a checksum and the value they spell (abft_exact.h's encoding);
 *   - whether an fp32 value is an exact small integer (the exact class's output domain);
 *   - locating a single bad element from a row's two checksums;
 *   - V-ABFT's per-row threshold (Gao et al., seeds/004, Algorithm 1, eq. 23 and 24).
 */
#ifndef SDC_ABFT_REF_H
#define SDC_ABFT_REF_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "base/philox.h"

/* Balanced digits of v: out[t] in [-2^(b-1), 2^(b-1)), v = sum_t out[t] 2^(b t). Returns whether
 * nd digits were enough (the layout sizes nd so that they always are). */
SDC_HD bool sdc_ref_digits(int64_t v, int base_log2, int nd, int64_t *out)
{
	const int64_t b = (int64_t)1 << base_log2;
	for (int t = 0; t < nd; t++) {
		/* v mod b in [0, b) by masking (two's complement), then balanced into [-b/2, b/2). */
		int64_t r = (int64_t)((uint64_t)v & (uint64_t)(b - 1));
		if (r >= b / 2)
			r -= b;
		out[t] = r;
		v = (v - r) / b; /* exact: v - r is a multiple of b */
	}
	return v == 0;
}

/* The value nd digits spell. */
SDC_HD int64_t sdc_ref_from_digits(const int64_t *d, int nd, int base_log2)
{
	int64_t v = 0;
	for (int t = nd - 1; t >= 0; t--)
		v = v * ((int64_t)1 << base_log2) + d[t];
	return v;
}

/*
 * An exact-class fp32 output is an integer of magnitude <= 2^24 (false for NaN too), and never
 * -0.0: the generator gives every row of A a non-negative entry, so each dot product has a +0 or
 * nonzero term and IEEE addition cannot end at -0.0 in any order. A sign flip of a zero is caught.
 */
SDC_HD bool sdc_ref_exact_f32(float v)
{
	uint32_t bits;
	memcpy(&bits, &v, sizeof(bits));
	return fabsf(v) <= 16777216.0f && (float)(int32_t)v == v && bits != 0x80000000u;
}

/*
 * The data column of the single error a row's checksums point at, or -1. s1, s2: the row's sums
 * over its exact values (sum_j c[j], sum_j (j+1) c[j]); e1, e2: what its checksum columns say;
 * nbad values were not exact integers, the first at first_bad. A non-integer is the suspect, and
 * the two checksums must agree on what it should be for it to be the only error.
 */
SDC_HD int sdc_ref_locate(int n, int64_t s1, int64_t s2, int64_t e1, int64_t e2, int nbad, int first_bad)
{
	if (nbad == 1 && first_bad < n) {
		const int j = first_bad;
		return (e2 - s2) == (int64_t)(j + 1) * (e1 - s1) ? j : -1;
	}
	if (nbad)
		return -1;
	const int64_t d1 = s1 - e1, d2 = s2 - e2;
	if (d1 == 0 || d2 % d1 != 0)
		return -1;
	const int64_t q = d2 / d1;
	return q >= 1 && q <= n ? (int)(q - 1) : -1;
}

/* What V-ABFT's threshold needs of B: over its k rows, the sums of |mean|, mean^2 and the
 * extrema-variance bound (max - mean)(mean - min) of each row's n values. */
struct sdc_ref_bstats {
	double absmu, mu2, sig2;
};

/* The mean of n values and the extrema-variance bound (eq. 24), from their sum, min and max. */
SDC_HD void sdc_ref_row_stats(double sum, double mn, double mx, int n, double *mean, double *var)
{
	*mean = sum / n;
	const double b = (mx - *mean) * (*mean - mn);
	*var = b > 0 ? b : 0;
}

/*
 * Row i's thresholds for the plain checksum (t1) and the weighted one (t2, weights j + 1) of an
 * n-column product, from A's row mean and variance bound and B's statistics (V-ABFT eq. 23):
 *   T = e_max (N |mu_A| sum|mu_B| + c sqrt(N mu_A^2 sum s_B^2 + N^2 s_A^2 sum mu_B^2)
 *              + c sqrt(N) s_A sqrt(sum s_B^2)),
 * with W1 = sum_j w_j in place of N where the paper sums over columns and W2 = sum w_j^2 for N
 * under a square root, for the weighted checksum.
 */
SDC_HD void sdc_ref_vabft(double emax, double c_sigma, int n, double mu, double var, const struct sdc_ref_bstats *b,
			  double *t1, double *t2)
{
	const double N = n;
	const double w1 = N * (N + 1) / 2, w2 = N * (N + 1) * (2 * N + 1) / 6;
	const double sa = sqrt(var);
	const double t_det = N * fabs(mu) * b->absmu;
	const double t_var23 = c_sigma * sqrt(N * mu * mu * b->sig2 + N * N * var * b->mu2);
	const double t_var4 = c_sigma * sqrt(N) * sa * sqrt(b->sig2);
	*t1 = emax * (t_det + t_var23 + t_var4);
	const double w_det = w1 * fabs(mu) * b->absmu;
	const double w_var23 = c_sigma * sqrt(w2 * mu * mu * b->sig2 + w1 * w1 * var * b->mu2);
	const double w_var4 = c_sigma * sqrt(w2) * sa * sqrt(b->sig2);
	*t2 = emax * (w_det + w_var23 + w_var4);
}

#endif
