/*
 * ABFT for the exact numerics class (Huang & Abraham, with Li et al.'s B-side encoding).
 *
 * B is extended by two checksum vectors, r1 = B*1 and r2 = B*(j+1), each written as
 * balanced base-2^bits digit columns so every digit fits the element type's small-integer
 * range (B*1 overflows int8). The GEMM computes the digit columns with everything else,
 * and row i's expected sums are sum_t 2^(bits*t) * C[i][n+t]. Row sums, weighted sums and
 * expectations are int64 and compared by equality: no modulus, no threshold. A single bad
 * element in row i sits at column D2/D1 - 1, where D1 and D2 are the two differences.
 */
#ifndef SDC_ABFT_EXACT_H
#define SDC_ABFT_EXACT_H

#include <stdbool.h>
#include <stdint.h>

struct sdc_abft_layout {
	int n;         /* data columns */
	int base_log2; /* digit base 2^base_log2 */
	int nd1, nd2;  /* digit columns of r1, r2 */
	int n_ext;     /* n + nd1 + nd2 */
};

/* Plans the digit columns for |B| <= bmax. */
void sdc_abft_layout_init(struct sdc_abft_layout *l, int n, int64_t bmax, int base_log2);

/* Balanced digits of v: out[t] in [-2^(bits-1), 2^(bits-1)), v = sum_t out[t] * 2^(bits*t). */
void sdc_abft_digits(int64_t v, int base_log2, int nd, int64_t *out);

/* Writes row p's checksum digits into ext[n .. n_ext) given the row's n data values. */
void sdc_abft_encode_row_i64(const struct sdc_abft_layout *l, const int64_t *row, int64_t *ext);

/* What one row of C says about itself. */
struct sdc_abft_row {
	int64_t s1, s2; /* actual: sum_j C[i][j], sum_j (j+1) C[i][j], over the exact values */
	int64_t e1, e2; /* expected from the digit columns */
	int nbad;       /* values that are not exact integers (fp32: fractions, huge, INF, NaN) */
	int first_bad;  /* column of the first of them, or -1 */
};

void sdc_abft_check_row_i32(const struct sdc_abft_layout *l, const int32_t *c, struct sdc_abft_row *r);
/* fp32 exact class: every element must be an integer of magnitude <= 2^24, and not -0.0. */
void sdc_abft_check_row_f32(const struct sdc_abft_layout *l, const float *c, struct sdc_abft_row *r);

static inline bool sdc_abft_row_ok(const struct sdc_abft_row *r)
{
	return !r->nbad && r->s1 == r->e1 && r->s2 == r->e2;
}

/*
 * Column of the single error the checksums point at, or -1 when they do not point at one
 * data column (several errors, or the checksum columns themselves are wrong). A value that
 * is not an exact integer is the suspect; the two checksums then give two equations for its
 * true value, and they must agree for it to be the only error in the row.
 */
int sdc_abft_locate(const struct sdc_abft_layout *l, const struct sdc_abft_row *r);


#endif
