/*
 * The ABFT-checked GEMM engine behind the gemm probe, `sdcscan campaign`, `sdcscan calibrate`
 * and `sdcscan bench`: one place that draws operands, encodes B, multiplies, and checks C
 * (operands.c: data, truth and encoding; vabft.c: the fast class's thresholds; abft.c: the
 * lifecycle, the multiply and the checks).
 *
 * Exact class (int8, fp32): small-integer operands, checksum digit columns, equality in int64
 * (kernels/abft_exact.h).
 *
 * Fast class (fp32-fast, fp64-fast): full-mantissa values from a distribution pool, the library
 * GEMM with B extended by r1 = B*1 and r2 = B*(j+1) (computed in higher precision: double for
 * fp32, double-double for fp64, then rounded), row sums of C in the same higher precision, and a
 * per-row threshold from V-ABFT's Algorithm 1 (Gao et al., seeds/004, eq. 23 with the
 * extrema-variance bound of eq. 24):
 *   T_i = e_max * ( N |mu_A| sum_k |mu_Bk|
 *                 + c_sigma sqrt(N mu_A^2 sum_k s_Bk^2 + N^2 s_A^2 sum_k mu_Bk^2)
 *                 + c_sigma sqrt(N) s_A sqrt(sum_k s_Bk^2) ),   s^2 <= (max - mu)(mu - min).
 * A row whose verification difference E_i = C[i][n] - sum_j C[i][j] breaches T_i (or is not
 * finite) is reported; D2 / D1 locates the column. The weighted checksum is checked too, against
 * the same bound with the weights w_j = j + 1 carried through (W1 = sum w_j for N where the
 * paper's terms sum over columns, sqrt(W2), W2 = sum w_j^2, for sqrt(N)), so a fault in either
 * checksum column is seen.
 */
#ifndef SDC_GEMM_ABFT_H
#define SDC_GEMM_ABFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probes/gemm/dist.h"
#include "kernels/abft_exact.h"
#include "kernels/gemm_float.h"
#include "probes/gemm/gemm_int8.h"

enum sdc_gemm_class {
	SDC_GEMM_INT8,      /* exact: u8 x s8 -> s32 */
	SDC_GEMM_FP32,      /* exact: small integers in fp32 */
	SDC_GEMM_FP32_FAST, /* fast: full-mantissa fp32, V-ABFT thresholds */
	SDC_GEMM_FP64_FAST, /* fast: full-mantissa fp64, V-ABFT thresholds */
	SDC_GEMM_NCLASSES,
};

/* "int8", "fp32", "fp32-fast", "fp64-fast"; NULL-terminated. */
extern const char *const sdc_gemm_class_names[];

static inline bool sdc_gemm_is_fast(enum sdc_gemm_class c)
{
	return c == SDC_GEMM_FP32_FAST || c == SDC_GEMM_FP64_FAST;
}

#define SDC_C_SIGMA 2.5

struct sdc_gemm_cfg {
	enum sdc_gemm_class cls;
	int m, n, k;
	const char *kernel; /* "auto" or a kernel name */
	uint64_t seed;
	/* fast class: e_max for this k (calibration.h), c_sigma */
	double emax, c_sigma;
	const struct sdc_dist_pool *pools; /* operand sets rotate through them */
	int npools;
};

/* One failing row of C, as the checks saw it. */
struct sdc_gemm_bad_row {
	int row;
	int col;              /* the column the checksums point at, -1 when they point at none */
	struct sdc_abft_row x; /* exact class */
	double e, t;          /* fast class: |verification difference| and its threshold (e may be inf/nan) */
	bool weighted;        /* fast class: the weighted checksum failed, the plain one passed */
	double d1, d2;        /* fast class: the two differences */
};

struct sdc_gemm {
	struct sdc_gemm_cfg cfg;
	const char *kernel_name;
	const struct sdc_gemm_u8s8_impl *i8;
	const struct sdc_fgemm_impl *fl;
	int esz;        /* bytes per A/B element */
	int csz;        /* bytes per C element */
	int n_ext;      /* n plus the checksum columns */
	int lda, ldb, ldc;
	struct sdc_abft_layout layout; /* exact class */
	int64_t amax, bmax;            /* fp32 exact operand magnitude */

	void *a;        /* m x lda */
	struct sdc_i8_packed bp; /* int8: B_ext packed */
	void *b;        /* others: B_ext row-major k x ldb */
	void *c;        /* m x ldc */
	size_t a_bytes, b_bytes, c_bytes;
	uint64_t digest_a, digest_b;
	uint64_t set;
	int dist;       /* fast: the distribution of this set (enum sdc_dist) */

	/* fast: per-row thresholds of this set, for the plain and the weighted checksum */
	double *thr, *thr2;
	double b_absmu, b_mu2, b_sig2; /* B's row statistics, summed (V-ABFT Algorithm 1) */
	/* truth, regenerated: B_ext row-major (k x n_ext), one A row, scratch */
	void *truth_b;
	void *truth_a_row;
	void *scratch;
	int64_t *row_vals;
	int64_t *ref_i64;   /* exact: reference row */
	double *ref_f64;    /* fast: reference row (double for fp32, rounded double-double for fp64) */
	bool truth_b_valid;
	uint64_t truth_b_set;

	struct sdc_gemm_bad_row *bad; /* m entries */
};

/* Allocates for cfg (call it on the thread that will use it). err says why not. */
int sdc_gemm_init(struct sdc_gemm *g, const struct sdc_gemm_cfg *cfg, char *err, size_t errlen);
void sdc_gemm_release(struct sdc_gemm *g);

/* Loads operand set `set`: draws A and B, encodes B's checksums, takes digests and thresholds. */
void sdc_gemm_load(struct sdc_gemm *g, uint64_t set);
/* Encodes B's checksum columns from the B data currently in the buffer (after an edit to B). */
void sdc_gemm_reencode(struct sdc_gemm *g);
void sdc_gemm_multiply(struct sdc_gemm *g);
/* Fast class: recomputes the per-row thresholds from A's rows (B's part is taken at load). */
void sdc_gemm_thresholds(struct sdc_gemm *g);
/* Fast class: B's part of the thresholds, from B as it is in the buffer (vabft.c). */
void sdc_gemm_b_statistics(struct sdc_gemm *g);
/*
 * Multiplies and checks: int8 checks each block of rows as soon as the kernel has finished it,
 * while it is still in cache (a separate pass would stream C from memory again); the library
 * classes are checked after the call. hook, when not NULL, sees each block of C between its
 * multiply and its check (where faults are injected into C). Failing rows go to g->bad, in
 * increasing row order; returns how many failed.
 */
typedef void (*sdc_gemm_rows_hook)(void *arg, int r0, int r1);
int sdc_gemm_multiply_check(struct sdc_gemm *g, sdc_gemm_rows_hook hook, void *arg);

/* Checks every row of C; failing rows go to g->bad. Returns how many failed. */
int sdc_gemm_check(struct sdc_gemm *g);
/* Checks one row; returns whether it passed and fills *out. */
bool sdc_gemm_check_row(struct sdc_gemm *g, int i, struct sdc_gemm_bad_row *out);

/*
 * Fast class: row i's verification difference E_i and its checksum C[i][n]; with e2/checksum2
 * not NULL, the same for the weighted checksum C[i][n+1] (for calibration and campaigns).
 */
void sdc_gemm_row_difference(struct sdc_gemm *g, int i, double *e, double *checksum, double *e2,
			     double *checksum2);

/* Whether A and B still match the digests taken at load. */
bool sdc_gemm_a_intact(const struct sdc_gemm *g);
bool sdc_gemm_b_intact(const struct sdc_gemm *g);

/*
 * An element of A, B (checksum columns included) or C, for injection and reports; NULL when
 * out of range. *bits gets the element's width.
 */
void *sdc_gemm_element(struct sdc_gemm *g, char target, int64_t row, int64_t col, int *bits);
/* Rows and columns of a target; data_cols excludes B's and C's checksum columns. */
void sdc_gemm_dims(const struct sdc_gemm *g, char target, int64_t *rows, int64_t *cols, int64_t *data_cols);

/* The true value of an element of A or B (regenerated), as raw bits. */
uint64_t sdc_gemm_truth_bits(struct sdc_gemm *g, char target, int row, int col);
/* Raw bits of the element in the buffer. */
uint64_t sdc_gemm_bits(struct sdc_gemm *g, char target, int64_t row, int64_t col);

/*
 * Row i of C_ext recomputed on an independent scalar path from regenerated operands: exact
 * class into g->ref_i64, fast class into g->ref_f64 (higher precision).
 */
void sdc_gemm_reference_row(struct sdc_gemm *g, int i);


/* Operations per multiply (2 m n k, the useful work). */
double sdc_gemm_ops(const struct sdc_gemm *g);

#endif
