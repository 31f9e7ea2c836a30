/* EEC-ABFT detection and location for one GEMM (see attn_check.h). */
#include "probes/minitrain/attn_check.h"

#include <math.h>

#include "probes/minitrain/mt_ops.h"

const char *sdc_attn_kind_name(enum sdc_attn_kind k)
{
	switch (k) {
	case SDC_ATTN_NAN: return "NaN";
	case SDC_ATTN_INF: return "INF";
	case SDC_ATTN_NEAR_INF: return "near-INF";
	case SDC_ATTN_VALUE: break;
	}
	return "value";
}

/* Row of the largest |C[i][j]| (NaN-free column), and how many exceed T_near-INF. */
static int largest_in_column(int m, const float *c, int ldc, int j, int *near_inf)
{
	int best = 0;
	float bv = -1.0f;
	*near_inf = 0;
	for (int i = 0; i < m; i++) {
		const float v = fabsf(c[(long)i * ldc + j]);
		if (v > SDC_ATTN_NEAR_INF_T)
			++*near_inf;
		if (v > bv)
			bv = v, best = i;
	}
	return best;
}

int sdc_attn_check(int m, int n, int k, const float *a, int lda, const float *b, int ldb, const float *c, int ldc,
		   double *scratch, struct sdc_attn_event *ev, int max)
{
	/* The checksums as minitrain's operations (mt_ops.h): what a GPU computes for its GEMMs. */
	double *asums = scratch, *d = scratch + 3 * (long)k;
	const struct sdc_mt_op sa = { .code = SDC_MT_OP_ATTN_ASUMS, .n = k, .i = { m, k, lda }, .a = a, .da = asums };
	const struct sdc_mt_op sc = { .code = SDC_MT_OP_ATTN_CSUMS, .n = n, .i = { m, n, k, ldb, ldc }, .b = b, .c = c,
				      .da = asums, .db = d };
	sdc_mt_op_run_host(&sa);
	sdc_mt_op_run_host(&sc);
	return sdc_attn_locate(m, n, k, a, lda, b, ldb, c, ldc, d, ev, max);
}

int sdc_attn_failing(int n, const double *d)
{
	int failed = 0;
	for (int j = 0; j < n; j++)
		failed += isnan(d[j]) || fabs(d[j]) > d[2 * n + j];
	return failed;
}

int sdc_attn_locate(int m, int n, int k, const float *a, int lda, const float *b, int ldb, const float *c, int ldc,
		    const double *d, struct sdc_attn_event *ev, int max)
{
	/* fp32 sums of k products: |error| <= gamma_k sum |a||b| with gamma_k < (k + 1) u; the double
	 * checksums add a relative error far below u. One more u covers both (sdc_mt_attn_csums). */
	int failed = 0;
	for (int j = 0; j < n; j++) {
		const double d1 = d[j], d2 = d[n + j], bound = d[2 * n + j];
		if (!isnan(d1) && fabs(d1) <= bound)
			continue;
		if (failed++ >= max)
			continue;
		struct sdc_attn_event *e = &ev[failed - 1];
		e->col = j;
		e->d1 = d1;
		e->bound = bound;
		e->expected = NAN;
		e->near_inf = 0;
		e->row = -1;
		if (isnan(d1)) {
			/* Case 3: search the column for the NaN (or, if none, the INF that made INF - INF). */
			for (int i = 0; i < m && e->row < 0; i++)
				if (isnan(c[(long)i * ldc + j]))
					e->row = i;
			if (e->row < 0)
				e->row = largest_in_column(m, c, ldc, j, &e->near_inf);
		} else if (isinf(d1) || !isfinite(d2)) {
			/* Case 2, and case 1 with d2 overflowed: the largest value is the error. */
			e->row = largest_in_column(m, c, ldc, j, &e->near_inf);
		} else {
			/* Case 1: one changed value; d2/d1 names its row. */
			const long r = lround(d2 / d1) - 1;
			int near;
			const int big = largest_in_column(m, c, ldc, j, &near);
			e->near_inf = near;
			e->row = r >= 0 && r < m ? (int)r : big;
		}
		const float v = c[(long)e->row * ldc + j];
		e->actual = v;
		if (isnan(v))
			e->kind = SDC_ATTN_NAN;
		else if (isinf(v))
			e->kind = SDC_ATTN_INF;
		else if (fabsf(v) > SDC_ATTN_NEAR_INF_T)
			e->kind = SDC_ATTN_NEAR_INF;
		else
			e->kind = SDC_ATTN_VALUE;
		if (isfinite(d1))
			e->expected = (double)v - d1;
		float acc = 0.0f;
		for (int p = 0; p < k; p++)
			acc = acc + a[(long)e->row * lda + p] * b[(long)p * ldb + j];
		e->recomputed = acc;
	}
	return failed;
}
