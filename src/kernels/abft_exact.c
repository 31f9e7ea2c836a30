#include "kernels/abft_exact.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/abft_sums.h"
#include "kernels/clones.h"

static int digits_for(int64_t maxabs, int base_log2)
{
	/* Smallest nd whose balanced digits reach maxabs on both sides: (b/2 - 1)(b^nd - 1)/(b - 1). */
	const int64_t b = (int64_t)1 << base_log2;
	int nd = 1;
	int64_t reach = b / 2 - 1, scale = 1;
	while (reach < maxabs) {
		scale *= b;
		reach += (b / 2 - 1) * scale;
		nd++;
	}
	return nd;
}

void sdc_abft_layout_init(struct sdc_abft_layout *l, int n, int64_t bmax, int base_log2)
{
	l->n = n;
	l->base_log2 = base_log2;
	l->nd1 = digits_for(bmax * n, base_log2);
	l->nd2 = digits_for(bmax * ((int64_t)n * (n + 1) / 2), base_log2);
	l->n_ext = n + l->nd1 + l->nd2;
}

void sdc_abft_digits(int64_t v, int base_log2, int nd, int64_t *out)
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
	if (v != 0)
		abort(); /* layout_init sized nd for every value the generators can produce */
}

CLONES
static void sums_i64(const int64_t *row, int n, int64_t *s1, int64_t *s2)
{
	int64_t a = 0, w = 0;
	for (int j = 0; j < n; j++) {
		a += row[j];
		w += (int64_t)(j + 1) * row[j];
	}
	*s1 = a;
	*s2 = w;
}

void sdc_abft_encode_row_i64(const struct sdc_abft_layout *l, const int64_t *row, int64_t *ext)
{
	int64_t r1, r2;
	sums_i64(row, l->n, &r1, &r2);
	sdc_abft_digits(r1, l->base_log2, l->nd1, ext + l->n);
	sdc_abft_digits(r2, l->base_log2, l->nd2, ext + l->n + l->nd1);
}

static int64_t from_digits(const int64_t *d, int nd, int base_log2)
{
	int64_t v = 0;
	for (int t = nd - 1; t >= 0; t--)
		v = v * ((int64_t)1 << base_log2) + d[t];
	return v;
}

void sdc_abft_check_row_i32(const struct sdc_abft_layout *l, const int32_t *c, struct sdc_abft_row *r)
{
	int64_t d[64];
	sdc_abft_sums()->i32(c, l->n, &r->s1, &r->s2);
	for (int t = 0; t < l->nd1 + l->nd2; t++)
		d[t] = c[l->n + t];
	r->e1 = from_digits(d, l->nd1, l->base_log2);
	r->e2 = from_digits(d + l->nd1, l->nd2, l->base_log2);
	r->nbad = 0;
	r->first_bad = -1;
}

/*
 * Exact fp32 values are integers of magnitude <= 2^24 (false for NaN too), and never -0.0: the
 * generator gives every row of A a non-negative entry, so each dot product has a +0 or nonzero
 * term and IEEE addition cannot end at -0.0 in any order. A sign flip of a zero is then caught.
 */
static inline bool exact_f32(float v)
{
	uint32_t bits;
	memcpy(&bits, &v, sizeof(bits));
	return fabsf(v) <= 0x1p24f && (float)(int32_t)v == v && bits != 0x80000000u;
}

/* Sums over the exact values only; anything else is already proof of corruption. */
CLONES
static int sums_f32(const float *c, int n, int64_t *s1, int64_t *s2)
{
	int64_t a = 0, w = 0;
	int bad = 0;
	for (int j = 0; j < n; j++) {
		const float v = c[j];
		uint32_t bits;
		memcpy(&bits, &v, sizeof(bits));
		const int in_range = fabsf(v) <= 0x1p24f;
		const int32_t t = (int32_t)(in_range ? v : 0.0f);
		const int ok = in_range & ((float)t == v) & (bits != 0x80000000u);
		const int32_t iv = ok ? t : 0;
		bad += !ok;
		a += iv;
		w += (int64_t)(j + 1) * iv;
	}
	*s1 = a;
	*s2 = w;
	return bad;
}

void sdc_abft_check_row_f32(const struct sdc_abft_layout *l, const float *c, struct sdc_abft_row *r)
{
	int64_t d[64];
	r->first_bad = -1;
	r->nbad = sums_f32(c, l->n, &r->s1, &r->s2);
	for (int j = 0; r->nbad && j < l->n; j++) {
		if (!exact_f32(c[j])) {
			r->first_bad = j;
			break;
		}
	}
	for (int t = 0; t < l->nd1 + l->nd2; t++) {
		const float v = c[l->n + t];
		d[t] = exact_f32(v) ? (int32_t)v : 0;
		if (!exact_f32(v)) {
			if (r->first_bad < 0)
				r->first_bad = l->n + t;
			r->nbad++;
		}
	}
	r->e1 = from_digits(d, l->nd1, l->base_log2);
	r->e2 = from_digits(d + l->nd1, l->nd2, l->base_log2);
}

int sdc_abft_locate(const struct sdc_abft_layout *l, const struct sdc_abft_row *r)
{
	if (r->nbad == 1 && r->first_bad < l->n) {
		/* The suspect must be worth e1 - s1 by one checksum and (e2 - s2) / (j + 1) by the other. */
		const int j = r->first_bad;
		return (r->e2 - r->s2) == (int64_t)(j + 1) * (r->e1 - r->s1) ? j : -1;
	}
	if (r->nbad)
		return -1;
	const int64_t d1 = r->s1 - r->e1, d2 = r->s2 - r->e2;
	if (d1 == 0 || d2 % d1 != 0)
		return -1;
	const int64_t q = d2 / d1;
	return q >= 1 && q <= l->n ? (int)(q - 1) : -1;
}
