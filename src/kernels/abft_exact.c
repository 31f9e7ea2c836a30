/* ABFT for the exact class: checksum-extended B, located and confirmed errors (kernels/abft_exact.h). */
#include "kernels/abft_exact.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/abft_ref.h"
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
	if (!sdc_ref_digits(v, base_log2, nd, out))
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


void sdc_abft_check_row_i32(const struct sdc_abft_layout *l, const int32_t *c, struct sdc_abft_row *r)
{
	int64_t d[64];
	sdc_abft_sums()->i32(c, l->n, &r->s1, &r->s2);
	for (int t = 0; t < l->nd1 + l->nd2; t++)
		d[t] = c[l->n + t];
	r->e1 = sdc_ref_from_digits(d, l->nd1, l->base_log2);
	r->e2 = sdc_ref_from_digits(d + l->nd1, l->nd2, l->base_log2);
	r->nbad = 0;
	r->first_bad = -1;
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
		if (!sdc_ref_exact_f32(c[j])) {
			r->first_bad = j;
			break;
		}
	}
	for (int t = 0; t < l->nd1 + l->nd2; t++) {
		const float v = c[l->n + t];
		d[t] = sdc_ref_exact_f32(v) ? (int32_t)v : 0;
		if (!sdc_ref_exact_f32(v)) {
			if (r->first_bad < 0)
				r->first_bad = l->n + t;
			r->nbad++;
		}
	}
	r->e1 = sdc_ref_from_digits(d, l->nd1, l->base_log2);
	r->e2 = sdc_ref_from_digits(d + l->nd1, l->nd2, l->base_log2);
}

int sdc_abft_locate(const struct sdc_abft_layout *l, const struct sdc_abft_row *r)
{
	return sdc_ref_locate(l->n, r->s1, r->s2, r->e1, r->e2, r->nbad, r->first_bad);
}
