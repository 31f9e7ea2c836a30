/*
 * Quantized EmbeddingBag over FBGEMM's fused rowwise formats, behind one interface: a portable C
 * kernel and x86 kernels (AVX2, AVX-512), all computing every output element the same way:
 *
 *   s = fl(w * scale), b = fl(w * bias)              (w = 1 for sum pooling: both exact)
 *   out[j] = +0;  for each row, in bag order:  out[j] = fma(s, q[j], fl(out[j] + b))
 *
 * FBGEMM's reference EmbeddingSpMDM computes the same expression, and since the order is fixed
 * per element the kernels agree bit for bit, so any of them is the reference for another.
 *
 * Row layouts (FBGEMM "fused 8-bit rowwise" and "fused 4-bit rowwise"):
 *   8-bit: d uint8 values, fp32 scale, fp32 bias
 *   4-bit: d/2 bytes (element 2k in the low nibble of byte k, 2k+1 in the high), fp16 scale, fp16 bias
 * sdcscan's checked tables append the row's exact integer sums C_T = sum_j q[j] and
 * W_T = sum_j (j+1) q[j] (Li et al. Algorithm 2, plus the position-weighted sum that locates a
 * column), in the row itself so a lookup reads them from the cache lines it already fetched:
 *   8-bit: int32 C_T, int32 W_T                       (C_T <= 255 d, W_T <= 255 d(d+1)/2 < 2^24)
 *   4-bit: one uint32, C_T in bits 0-11, W_T in 12-31 (C_T <= 3840 < 2^12, W_T <= 493440 < 2^20)
 */
#ifndef SDC_EMBBAG_KERNEL_H
#define SDC_EMBBAG_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/hd.h"
#include "kernels/half.h"

#define SDC_EB_DMAX 256

enum sdc_eb_format { SDC_EB_8BIT, SDC_EB_4BIT };

struct sdc_eb_layout {
	enum sdc_eb_format fmt;
	int d;
	int qmax;       /* 255 or 15 */
	size_t data;    /* bytes of quantized values */
	size_t params;  /* bytes of scale and bias */
	size_t trailer; /* bytes of ABFT row sums: 0 in a plain FBGEMM row */
	size_t stride;  /* bytes per row */
	double tri;     /* d (d + 1) / 2: the weighted sum of a row of ones */
};

/* Plans a row; with_sums adds the ABFT trailer. -1 unless d is a multiple of 16 in [16, 256]. */
SDC_HD int sdc_eb_layout_init(struct sdc_eb_layout *l, enum sdc_eb_format fmt, int d, bool with_sums)
{
	memset(l, 0, sizeof(*l));
	if (d < 16 || d > SDC_EB_DMAX || d % 16)
		return -1;
	l->fmt = fmt;
	l->d = d;
	l->qmax = fmt == SDC_EB_8BIT ? 255 : 15;
	l->data = fmt == SDC_EB_8BIT ? (size_t)d : (size_t)d / 2;
	l->params = fmt == SDC_EB_8BIT ? 8 : 4;
	l->trailer = !with_sums ? 0 : fmt == SDC_EB_8BIT ? 8 : 4;
	l->stride = l->data + l->params + l->trailer;
	l->tri = (double)d * (d + 1) / 2;
	return 0;
}

SDC_HD float sdc_eb_load_f32(const uint8_t *p)
{
	float f;
	memcpy(&f, p, 4);
	return f;
}

SDC_HD uint16_t sdc_eb_load_u16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}

/* Scale and bias from a row's tail (the bytes after its values). */
SDC_HD void sdc_eb_tail_params(const struct sdc_eb_layout *l, const uint8_t *tail, float *scale, float *bias)
{
	if (l->fmt == SDC_EB_8BIT) {
		*scale = sdc_eb_load_f32(tail);
		*bias = sdc_eb_load_f32(tail + 4);
	} else {
		*scale = sdc_half_to_float(sdc_eb_load_u16(tail));
		*bias = sdc_half_to_float(sdc_eb_load_u16(tail + 2));
	}
}

SDC_HD void sdc_eb_row_params(const struct sdc_eb_layout *l, const uint8_t *row, float *scale, float *bias)
{
	sdc_eb_tail_params(l, row + l->data, scale, bias);
}

SDC_HD int sdc_eb_row_q(const struct sdc_eb_layout *l, const uint8_t *row, int j)
{
	return l->fmt == SDC_EB_8BIT ? row[j] : (row[j >> 1] >> ((j & 1) * 4)) & 0xF;
}

SDC_HD void sdc_eb_row_set_q(const struct sdc_eb_layout *l, uint8_t *row, int j, int q)
{
	if (l->fmt == SDC_EB_8BIT)
		row[j] = (uint8_t)q;
	else
		row[j >> 1] = (uint8_t)((row[j >> 1] & (0xF0u >> ((j & 1) * 4))) | (unsigned)(q & 0xF) << ((j & 1) * 4));
}

/* The stored sums from the tail of a row with a trailer. */
SDC_HD void sdc_eb_tail_sums(const struct sdc_eb_layout *l, const uint8_t *tail, int32_t *c, int32_t *w)
{
	const uint8_t *p = tail + l->params;
	if (l->fmt == SDC_EB_8BIT) {
		memcpy(c, p, 4);
		memcpy(w, p + 4, 4);
	} else {
		uint32_t v;
		memcpy(&v, p, 4);
		*c = (int32_t)(v & 0xFFFu);
		*w = (int32_t)(v >> 12);
	}
}

SDC_HD void sdc_eb_row_stored_sums(const struct sdc_eb_layout *l, const uint8_t *row, int32_t *c, int32_t *w)
{
	sdc_eb_tail_sums(l, row + l->data, c, w);
}

/* Recomputes a row's sums from its values. */
SDC_HD void sdc_eb_row_sums(const struct sdc_eb_layout *l, const uint8_t *row, int32_t *c, int32_t *w)
{
	int32_t sc = 0, sw = 0;
	if (l->fmt == SDC_EB_8BIT) {
		for (int j = 0; j < l->d; j++) {
			sc += row[j];
			sw += (j + 1) * row[j];
		}
	} else {
		for (int k = 0; k < l->d / 2; k++) {
			const int lo = row[k] & 0xF, hi = row[k] >> 4;
			sc += lo + hi;
			sw += (2 * k + 1) * lo + (2 * k + 2) * hi;
		}
	}
	*c = sc;
	*w = sw;
}

/* Writes them into the trailer. */
SDC_HD void sdc_eb_row_put_sums(const struct sdc_eb_layout *l, uint8_t *row, int32_t c, int32_t w)
{
	uint8_t *p = row + l->data + l->params;
	if (l->fmt == SDC_EB_8BIT) {
		memcpy(p, &c, 4);
		memcpy(p + 4, &w, 4);
	} else {
		const uint32_t v = ((uint32_t)c & 0xFFFu) | (uint32_t)w << 12;
		memcpy(p, &v, 4);
	}
}

/* One bag: which rows, with which weights. */
struct sdc_eb_bag {
	const uint32_t *idx;
	const float *w; /* NULL: sum pooling */
	int len;
	int ahead; /* valid indices from idx[0] on (>= len): the kernels prefetch into the next bag */
};

/* What a checked lookup gathers besides the output. */
enum sdc_eb_sums {
	SDC_EB_NO_SUMS,    /* the plain operator */
	SDC_EB_SUMS,       /* the expectation from the rows' stored sums (exact class) */
	SDC_EB_SUMS_STATS, /* and the rounding statistics its threshold needs (fast class) */
};

/*
 * What the rows' stored sums predict for a bag's output, and the statistics of its rounding
 * (probes/embbag/abft.h derives the threshold). The x86 kernels note where each row's tail lies (scale,
 * bias and stored sums, as the row holds them) and every eight rows load the eight tails, still
 * in cache, and fold them in with a few vector operations across rows; so the checked lookup
 * costs little more than the plain one.
 */
struct sdc_eb_expect {
	double c, w; /* sum_i w_i (a_i C_T[i] + d b_i), sum_i w_i (a_i W_T[i] + d(d+1)/2 b_i) */
	/*
	 * Sum over rows l and the first 16 columns j of t^2, t = acc + b being the first of the two
	 * values each output element is rounded to per row (then acc = fma(s, q, t)); one fma per
	 * row. Columns are drawn alike, so d/16 times this estimates the sum over all columns. The
	 * second value is bounded from it: acc^2 <= 2 t^2 + 2 (s q)^2, and sum_j q^2 <= qmax C_T, so
	 * s2c = sum over rows of S^2 C_T completes the bound.
	 */
	double sq_t, s2c;
	/* Weighted bags: sum over rows of (S C_T)^2 + (B d)^2 and (S W_T)^2 + (B d(d+1)/2)^2, the
	 * squares of what one rounding of s = fl(w a) and b = fl(w b) moves the two sums by. */
	double pc, pw;
};

/* Longest bag a kernel takes (the probe's pooling of at most 400, times 3/2). */
#define SDC_EB_MAX_BAG_LEN 600

/*
 * Adds one row's part of the expectation, from its tail (the bytes after its values), into e:
 * S = w scale and B = w bias in double (exact). The GPU's lookup calls it too (embbag_hd.h).
 */
SDC_HD void sdc_eb_expect_row(const struct sdc_eb_layout *l, const uint8_t *tail, float w, bool weighted,
			      struct sdc_eb_expect *e, enum sdc_eb_sums sums)
{
	float scale, bias;
	int32_t c, ws;
	sdc_eb_tail_params(l, tail, &scale, &bias);
	sdc_eb_tail_sums(l, tail, &c, &ws);
	const double S = (double)w * scale, B = (double)w * bias;
	const double xc = S * c, xw = S * ws, yc = B * l->d, yw = B * l->tri;
	e->c += xc + yc;
	e->w += xw + yw;
	if (sums == SDC_EB_SUMS_STATS) {
		e->s2c += S * xc;
		if (weighted) {
			e->pc += xc * xc + yc * yc;
			e->pw += xw * xw + yw * yw;
		}
	}
}

/*
 * out[0..d) = the bag's pooled row; with sums other than SDC_EB_NO_SUMS, e is filled too. table
 * has rows of l->stride bytes; SDC_EB_NO_SUMS on a trailer-less layout is the plain FBGEMM
 * operator.
 */
typedef void (*sdc_eb_bag_fn)(const struct sdc_eb_layout *l, const uint8_t *table, const struct sdc_eb_bag *bag,
			      float *out, struct sdc_eb_expect *e, enum sdc_eb_sums sums);

/* The two sums of a bag's output as it lies in memory, in double, and whether any is -0.0. */
struct sdc_eb_out_sums {
	double c, w; /* sum_j R[j], sum_j (j+1) R[j] */
	bool negzero;
};
typedef void (*sdc_eb_out_sums_fn)(const float *out, int d, struct sdc_eb_out_sums *os);

struct sdc_eb_impl {
	const char *name;
	const char *isa;
	bool (*supported)(void);
	sdc_eb_bag_fn bag;
	sdc_eb_out_sums_fn out_sums;
};

/* Every kernel built in, the portable one first; terminated by a NULL name. */
extern const struct sdc_eb_impl sdc_eb_impls[];

/* "auto" picks the fastest supported kernel. NULL if unknown or unsupported here. */
const struct sdc_eb_impl *sdc_eb_find(const char *name);

void sdc_eb_out_sums_portable(const float *out, int d, struct sdc_eb_out_sums *os);

/* The portable kernel, also the reference a mismatch is recomputed with. */
void sdc_eb_bag_portable(const struct sdc_eb_layout *l, const uint8_t *table, const struct sdc_eb_bag *bag,
			 float *out, struct sdc_eb_expect *e, enum sdc_eb_sums sums);

/* Rows ahead of the current one that the kernels prefetch (FBGEMM's default distance). */
#define SDC_EB_PREFETCH 16

#endif
