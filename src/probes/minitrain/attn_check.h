/*
 * ATTNChecker's extreme-error-correcting ABFT (Liang et al., ../shared/seeds/001_*, §4.2,
 * "EEC-ABFT"), used here to detect and locate, not to correct: C = A · B is checked column by
 * column against the column checksums of A (1^T A and w^T A, w = 1, 2, ..., m) carried through
 * B in double. For column j, d1 = sum_i C[i][j] - (1^T A B)[j] and d2 = sum_i (i+1) C[i][j] -
 * (w^T A B)[j]:
 *   - d1 NaN: a NaN in the column (or INF - INF); found by searching the column for it;
 *   - d1 INF: an INF, or a near-INF value whose sum overflowed; the largest |C[i][j]| is it;
 *   - d1 finite beyond the rounding bound: one changed value at row d2/d1 - 1, unless d2
 *     overflowed (a near-INF element, |v| > 1e10 as in the paper), when the largest is it.
 * The rounding bound is rigorous for an fp32 k-term sum, (k + 2) u (1^T|A|)|B|, so a healthy
 * GEMM never fails (no threshold to tune).
 */
#ifndef SDC_ATTN_CHECK_H
#define SDC_ATTN_CHECK_H

#include <stdint.h>

enum sdc_attn_kind { SDC_ATTN_NAN, SDC_ATTN_INF, SDC_ATTN_NEAR_INF, SDC_ATTN_VALUE };

/* The paper's T_near-INF. */
#define SDC_ATTN_NEAR_INF_T 1e10

struct sdc_attn_event {
	const char *gemm; /* "Q = h Wq", ... */
	int gemm_index;   /* 0..5 */
	int head, batch;  /* -1 when the GEMM is not per head */
	enum sdc_attn_kind kind;
	int row, col;     /* located element; row -1 when it could not be located */
	float actual;
	float recomputed; /* the element computed again, one dot product in the kernel's order: in the
			   * exact class the right value, bit for bit */
	double expected;  /* the checksum's estimate of the right value (NaN when d1 is not finite) */
	double d1, bound;
	int near_inf;     /* elements of the column beyond T_near-INF */
};

/*
 * Checks C (m x n) = A (m x k) · B (k x n). scratch holds 3 k + 3 n doubles. Returns the number
 * of failing columns; the first `max` of them are described in ev.
 */
int sdc_attn_check(int m, int n, int k, const float *a, int lda, const float *b, int ldb, const float *c, int ldc,
		   double *scratch, struct sdc_attn_event *ev, int max);

/*
 * The check in two parts, so the checksums run where the GEMM ran (a GPU: mt_ops.h's
 * SDC_MT_OP_ATTN_ASUMS and _CSUMS give d, 3 n doubles: each column's d1, then d2, then bound):
 * how many columns fail, and (only when some do) the events, from host copies of A, B and C.
 */
int sdc_attn_failing(int n, const double *d);
int sdc_attn_locate(int m, int n, int k, const float *a, int lda, const float *b, int ldb, const float *c, int ldc,
		    const double *d, struct sdc_attn_event *ev, int max);

const char *sdc_attn_kind_name(enum sdc_attn_kind k);

#endif
