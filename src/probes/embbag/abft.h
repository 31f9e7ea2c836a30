/*
 * The ABFT-checked EmbeddingBag engine behind the embbag probe, `sdcscan campaign embbag` and
 * `sdcscan bench embbag`: tables regenerated row by row from the seed, batches of bags drawn
 * from it, and the check of each bag's pooled row against the rows' stored sums (Li et al.,
 * seeds/000, Algorithm 2, with a position-weighted second sum that locates the column).
 *
 *   sum_j R[j]       = sum_i w_i (a_i C_T[i] + d b_i)
 *   sum_j (j+1) R[j] = sum_i w_i (a_i W_T[i] + d(d+1)/2 b_i)
 *
 * Exact class: scales are powers of two (1/4 .. 2), biases multiples of 1/16 in [-2, 2], weights
 * 1, 2 or 3, so every partial sum is a multiple of 1/16 below 2^20 and every kernel's fp32 result
 * is exact; both sides are summed in double, exactly, and compared by equality. A -0.0 in the
 * output is rejected too (no exact sum produces one), so no flip hides in a sign of zero.
 *
 * Fast class: FBGEMM's quantisation of real rows (scale = range / qmax, bias = -range * U(.35, .65),
 * fp16 for 4-bit rows), weights U(0.5, 1.5). The sums are computed in double from the fp32 output
 * (exact to 2^-53), so what remains is the rounding of the kernel itself, bounded statistically
 * the way V-ABFT bounds a GEMM (seeds/004) instead of the paper's fixed relative 1e-5:
 *
 *   The kernel rounds twice per element and row: t = fl(acc + b), then acc' = fl(s q + t). Each
 *   rounding error is at most half an ulp, <= u |x| (u = 2^-24, x the rounded value); model it
 *   as zero-mean and uniform, variance <= u^2 x^2 / 3, independent from row to row. Within a row,
 *   the fma's errors depend on each column's q and are independent across columns; t's need not
 *   be (every column adds the same b, whose low bits are what gets rounded away), so they are
 *   bounded as if fully correlated: Var(sum_j err_j) <= u^2/3 (sum_j |t_j|)^2 <= u^2/3 d sum_j t_j^2
 *   (Cauchy-Schwarz). The fma's values are bounded from t's: acc'^2 <= 2 t^2 + 2 (s q)^2, and
 *   sum_j q^2 <= qmax C_T. With Q_t the sum over rows and columns of t^2 (the kernels measure
 *   it on 16 columns as they go, one fma per row, and scale by d/16: the columns are drawn
 *   alike), Q = (d + 2) Q_t + 2 qmax sum_l S_l^2 C_T[l], and, for weighted bags, P_c and P_w
 *   the sums over rows of the squared amounts one rounding of s = fl(w a) and b = fl(w b) moves
 *   the two sums by ((S C_T + B d) and (S W_T + B d(d+1)/2)):
 *
 *     Var(E_sum)      <= u^2/3 (Q + P_c)
 *     Var(E_weighted) <= u^2/3 (k_w Q + P_w),    k_w = (d+1)(2d+1)/6, the mean of (j+1)^2
 *
 *   Each threshold is c_sigma standard deviations (default 6; a 2^-40 relative slack for the
 *   double sums on top). The bounds overstate the typical error (x sits anywhere in its binade,
 *   and t's errors are rarely all alike), which is further margin. A flip of bit 0 of a quantised
 *   value moves the sum by w a; the campaign prints the false-positive margin and the detection
 *   margins it measured.
 */
#ifndef SDC_EMBBAG_ABFT_H
#define SDC_EMBBAG_ABFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probes/embbag/kernel.h"
#include "probes/embbag/embbag_hd.h"
#include "base/rng.h"

/* Variant names: "8bit", "8bit-fast", "4bit", "4bit-fast", then "-d<d>". */
void sdc_eb_variant_name(const struct sdc_eb_cfg *cfg, char *buf, size_t len);

/* A table with the ABFT trailer (or without: the plain FBGEMM rows the benchmark compares with). */
struct sdc_eb_table {
	struct sdc_eb_cfg cfg;
	struct sdc_eb_layout l;
	struct sdc_rng truth;
	uint8_t *data;
	uint32_t *crc; /* CRC32C of each row, for the sweep; NULL without the trailer */
	size_t bytes;
};

/* The table's truth without its rows (data NULL): what the GPU lanes report against. */
int sdc_eb_table_plan(struct sdc_eb_table *t, const struct sdc_eb_cfg *cfg, bool with_sums, char *err, size_t errlen);
/* Allocates (no contents yet). -1 with err filled on a bad configuration or no memory. */
int sdc_eb_table_alloc(struct sdc_eb_table *t, const struct sdc_eb_cfg *cfg, bool with_sums, char *err,
		       size_t errlen);
void sdc_eb_table_release(struct sdc_eb_table *t);
/* Bytes a table of cfg takes (rows, sums and CRCs), for the memory check before allocating. */
size_t sdc_eb_table_bytes(const struct sdc_eb_cfg *cfg);

/* Writes the true contents of rows [r0, r1) (values, scale, bias, sums, CRCs). */
void sdc_eb_table_fill(struct sdc_eb_table *t, uint64_t r0, uint64_t r1);
/* The true bytes of one row, into dst (l.stride bytes). */
static inline void sdc_eb_truth_row(const struct sdc_eb_table *t, uint64_t row, uint8_t *dst)
{
	sdc_eb_row_truth(&t->cfg, &t->l, row, dst);
}

static inline uint8_t *sdc_eb_row(const struct sdc_eb_table *t, uint64_t row)
{
	return t->data + row * t->l.stride;
}

/*
 * Elements of a row by column: 0 .. d-1 the quantised values, d the scale, d+1 the bias, d+2 and
 * d+3 the stored sums C_T and W_T. Returns the element's bits (and their count in *bits), or
 * sets it. -1 / no-op for a column outside the row.
 */
#define SDC_EB_COL_SCALE(l) ((l)->d)
#define SDC_EB_COL_BIAS(l) ((l)->d + 1)
#define SDC_EB_COL_CSUM(l) ((l)->d + 2)
#define SDC_EB_COL_WSUM(l) ((l)->d + 3)
int64_t sdc_eb_element(const struct sdc_eb_layout *l, const uint8_t *row, int col, int *bits);
void sdc_eb_element_set(const struct sdc_eb_layout *l, uint8_t *row, int col, uint64_t value);
/* "q[17]", "scale", "bias", "C_T", "W_T" */
void sdc_eb_element_name(const struct sdc_eb_layout *l, int col, char *buf, size_t len);

/* The sweep's test of a row at rest: its CRC32C, and its sums recomputed from its values. */
bool sdc_eb_row_intact(const struct sdc_eb_table *t, uint64_t row);
/* Rewrites a row from the truth (after its corruption was reported). */
void sdc_eb_row_repair(struct sdc_eb_table *t, uint64_t row);

/* One batch of bags, as drawn for batch number `index` of the run. */
struct sdc_eb_batch {
	uint64_t index;
	int nbags;
	bool weighted; /* odd batches pool with weights, even ones sum */
	int off[SDC_EB_MAX_BAGS + 1];
	uint32_t *idx; /* off[nbags] row numbers */
	float *w;      /* weights, when weighted */
	uint32_t *words;
	size_t cap;
};

/* The rows batch `index` looks up (its bags' lengths), without drawing its rows. */
uint64_t sdc_eb_batch_lookups(const struct sdc_eb_cfg *cfg, uint64_t index);

int sdc_eb_batch_alloc(struct sdc_eb_batch *b, const struct sdc_eb_cfg *cfg);
void sdc_eb_batch_release(struct sdc_eb_batch *b);
void sdc_eb_batch_draw(struct sdc_eb_batch *b, const struct sdc_eb_cfg *cfg, uint64_t index);

static inline struct sdc_eb_bag sdc_eb_batch_bag(const struct sdc_eb_batch *b, int bag)
{
	struct sdc_eb_bag g = { b->idx + b->off[bag], b->weighted ? b->w + b->off[bag] : NULL,
				b->off[bag + 1] - b->off[bag], b->off[b->nbags] - b->off[bag] };
	return g;
}

/*
 * The bag recomputed from regenerated true rows with the portable kernel, in the same order:
 * the exact expected output, bit for bit, in either class. scratch holds pooling * 3/2 rows.
 */
void sdc_eb_reference(const struct sdc_eb_table *t, const struct sdc_eb_bag *bag, uint8_t *scratch, float *out);
size_t sdc_eb_scratch_bytes(const struct sdc_eb_cfg *cfg);

#endif
