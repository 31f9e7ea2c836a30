/*
 * EmbeddingBag: row layouts, row sums, the portable kernel and the kernel table. Built with
 * -ffp-contract=off: a contracted w * bias + out would round once where the other kernels
 * round twice, and the kernels must agree bit for bit.
 */
#include "probes/embbag/kernel.h"

#include <math.h>
#include <string.h>

void sdc_eb_bag_portable(const struct sdc_eb_layout *l, const uint8_t *table, const struct sdc_eb_bag *bag,
			 float *out, struct sdc_eb_expect *e, enum sdc_eb_sums sums)
{
	const int d = l->d;
	for (int j = 0; j < d; j++)
		out[j] = 0.0f;
	if (sums != SDC_EB_NO_SUMS)
		memset(e, 0, sizeof(*e));
	for (int r = 0; r < bag->len; r++) {
		const uint8_t *row = table + (size_t)bag->idx[r] * l->stride;
		float scale, bias;
		sdc_eb_row_params(l, row, &scale, &bias);
		const float wr = bag->w ? bag->w[r] : 1.0f;
		const float s = wr * scale, b = wr * bias;
		for (int j = 0; j < d; j++) {
			const float t = out[j] + b;
			out[j] = fmaf(s, (float)sdc_eb_row_q(l, row, j), t);
			if (sums == SDC_EB_SUMS_STATS && j < 16)
				e->sq_t += (double)t * t;
		}
		if (sums != SDC_EB_NO_SUMS)
			sdc_eb_expect_row(l, row + l->data, wr, bag->w != NULL, e, sums);
	}
}

/* Four lanes of doubles: independent chains, each exact to 2^-53 of its largest term. */
typedef double v4d __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef uint32_t v4u __attribute__((vector_size(16)));

void sdc_eb_out_sums_portable(const float *out, int d, struct sdc_eb_out_sums *os)
{
	v4d sc = { 0, 0, 0, 0 }, sw = sc, col = { 1, 2, 3, 4 };
	const v4d four = { 4, 4, 4, 4 };
	v4u negzero = { 0, 0, 0, 0 };
	const v4u sign = { 0x80000000u, 0x80000000u, 0x80000000u, 0x80000000u };
	for (int j = 0; j < d; j += 4) {
		v4f x;
		v4u bits;
		memcpy(&x, out + j, sizeof(x));
		memcpy(&bits, out + j, sizeof(bits));
		negzero |= (v4u)(bits == sign);
		const v4d xd = __builtin_convertvector(x, v4d);
		sc += xd;
		sw += col * xd;
		col += four;
	}
	os->c = (sc[0] + sc[1]) + (sc[2] + sc[3]);
	os->w = (sw[0] + sw[1]) + (sw[2] + sw[3]);
	os->negzero = (negzero[0] | negzero[1] | negzero[2] | negzero[3]) != 0;
}

static bool always(void)
{
	return true;
}

#if defined(__x86_64__)
bool sdc_eb_have_avx2(void);
bool sdc_eb_have_avx512(void);
void sdc_eb_bag_avx2(const struct sdc_eb_layout *l, const uint8_t *table, const struct sdc_eb_bag *bag, float *out,
		     struct sdc_eb_expect *e, enum sdc_eb_sums sums);
void sdc_eb_bag_avx512(const struct sdc_eb_layout *l, const uint8_t *table, const struct sdc_eb_bag *bag, float *out,
		       struct sdc_eb_expect *e, enum sdc_eb_sums sums);
void sdc_eb_out_sums_avx512(const float *out, int d, struct sdc_eb_out_sums *os);
#endif

const struct sdc_eb_impl sdc_eb_impls[] = {
	{ "portable", "C", always, sdc_eb_bag_portable, sdc_eb_out_sums_portable },
#if defined(__x86_64__)
	{ "avx2", "AVX2+FMA+F16C", sdc_eb_have_avx2, sdc_eb_bag_avx2, sdc_eb_out_sums_portable },
	{ "avx512", "AVX-512F/BW/VL", sdc_eb_have_avx512, sdc_eb_bag_avx512, sdc_eb_out_sums_avx512 },
#endif
	{ NULL, NULL, NULL, NULL, NULL },
};

const struct sdc_eb_impl *sdc_eb_find(const char *name)
{
	const struct sdc_eb_impl *best = NULL;
	for (const struct sdc_eb_impl *k = sdc_eb_impls; k->name; k++) {
		if (!k->supported())
			continue;
		if (!strcmp(name, k->name))
			return k;
		best = k; /* the table is in ascending order of speed */
	}
	return !strcmp(name, "auto") ? best : NULL;
}
