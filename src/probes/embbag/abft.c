#include "probes/embbag/abft.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/crc32c.h"
#include "base/util.h"

/* RNG purposes: which stream, for which format, class and width. */
enum { PURPOSE_TABLE = 1, PURPOSE_BATCH = 2 };

static uint32_t purpose(const struct sdc_eb_cfg *cfg, unsigned kind)
{
	return (uint32_t)kind << 16 | (uint32_t)cfg->fmt << 12 | (uint32_t)cfg->cls << 8 | (uint32_t)(cfg->d / 16);
}

void sdc_eb_variant_name(const struct sdc_eb_cfg *cfg, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s-d%d", cfg->fmt == SDC_EB_8BIT ? "8bit" : "4bit", cfg->cls == SDC_EB_FAST ? "-fast" : "",
		 cfg->d);
}

/* ---- tables ---- */

/* Philox blocks (16 bytes) per row: the values' bytes, then two words for scale and bias. */
static size_t blocks_per_row(const struct sdc_eb_layout *l)
{
	return (l->data + 8 + 15) / 16;
}

size_t sdc_eb_table_bytes(const struct sdc_eb_cfg *cfg)
{
	struct sdc_eb_layout l;
	if (sdc_eb_layout_init(&l, cfg->fmt, cfg->d, true))
		return 0;
	return (size_t)cfg->rows * (l.stride + sizeof(uint32_t));
}

int sdc_eb_table_alloc(struct sdc_eb_table *t, const struct sdc_eb_cfg *cfg, bool with_sums, char *err,
		       size_t errlen)
{
	memset(t, 0, sizeof(*t));
	t->cfg = *cfg;
	if (sdc_eb_layout_init(&t->l, cfg->fmt, cfg->d, with_sums)) {
		snprintf(err, errlen, "embedding width %d: expected a multiple of 16 from 16 to %d", cfg->d, SDC_EB_DMAX);
		return -1;
	}
	if (!cfg->rows || cfg->rows > UINT32_MAX) {
		snprintf(err, errlen, "%llu table rows: expected 1 to %u", (unsigned long long)cfg->rows, UINT32_MAX);
		return -1;
	}
	t->truth = sdc_rng_make(cfg->seed, SDC_RNG_PROBE_EMBBAG, SDC_RNG_SHARED, SDC_RNG_SHARED,
				purpose(cfg, PURPOSE_TABLE));
	t->bytes = (size_t)cfg->rows * t->l.stride;
	t->data = sdc_alloc_huge(t->bytes);
	if (with_sums)
		t->crc = malloc((size_t)cfg->rows * sizeof(uint32_t));
	if (!t->data || (with_sums && !t->crc)) {
		snprintf(err, errlen, "cannot allocate a table of %llu rows x %zu bytes (%.2f GiB)",
			 (unsigned long long)cfg->rows, t->l.stride, (double)t->bytes / (1u << 30));
		sdc_eb_table_release(t);
		return -1;
	}
	return 0;
}

void sdc_eb_table_release(struct sdc_eb_table *t)
{
	if (t->data)
		sdc_free_huge(t->data, t->bytes);
	free(t->crc);
	t->data = NULL;
	t->crc = NULL;
}

/*
 * One row from its random words: the values are the words' bytes (both nibbles of each byte for
 * 4-bit rows, so every value is uniform in [0, qmax]), scale and bias from the last two words.
 */
static void make_row(const struct sdc_eb_table *t, const uint32_t *words, uint8_t *dst)
{
	const struct sdc_eb_layout *l = &t->l;
	memcpy(dst, words, l->data);
	const uint32_t u0 = words[l->data / 4], u1 = words[l->data / 4 + 1];
	float scale, bias;
	if (t->cfg.cls == SDC_EB_EXACT) {
		scale = ldexpf(1.0f, (int)(u0 & 3) - 2);
		bias = (float)((int)(u1 % 65) - 32) / 16.0f;
	} else {
		const float range = 0.1f + 0.9f * ((float)(u0 >> 8) * 0x1p-24f);
		scale = range / (float)l->qmax;
		bias = -range * (0.35f + 0.3f * ((float)(u1 >> 8) * 0x1p-24f));
	}
	uint8_t *p = dst + l->data;
	if (l->fmt == SDC_EB_8BIT) {
		memcpy(p, &scale, 4);
		memcpy(p + 4, &bias, 4);
	} else {
		const uint16_t hs = sdc_float_to_half(scale), hb = sdc_float_to_half(bias);
		memcpy(p, &hs, 2);
		memcpy(p + 2, &hb, 2);
	}
	if (l->trailer) {
		int32_t c, w;
		sdc_eb_row_sums(l, dst, &c, &w);
		sdc_eb_row_put_sums(l, dst, c, w);
	}
}

void sdc_eb_truth_row(const struct sdc_eb_table *t, uint64_t row, uint8_t *dst)
{
	uint32_t words[(SDC_EB_DMAX + 8 + 15) / 16 * 4];
	const size_t bpr = blocks_per_row(&t->l);
	sdc_rng_fill_u32(&t->truth, row * bpr, words, bpr * 4);
	make_row(t, words, dst);
}

void sdc_eb_table_fill(struct sdc_eb_table *t, uint64_t r0, uint64_t r1)
{
	enum { CHUNK = 512 };
	const size_t bpr = blocks_per_row(&t->l), wpr = bpr * 4;
	uint32_t *words = malloc(CHUNK * wpr * sizeof(uint32_t));
	for (uint64_t r = r0; r < r1; r += CHUNK) {
		const uint64_t n = r1 - r < CHUNK ? r1 - r : CHUNK;
		if (words)
			sdc_rng_fill_u32(&t->truth, r * bpr, words, n * wpr);
		for (uint64_t i = 0; i < n; i++) {
			uint8_t *row = sdc_eb_row(t, r + i);
			if (words)
				make_row(t, words + i * wpr, row);
			else
				sdc_eb_truth_row(t, r + i, row); /* no scratch memory: slower, same bytes */
			if (t->crc)
				t->crc[r + i] = sdc_crc32c(0, row, t->l.stride);
		}
	}
	free(words);
}

int64_t sdc_eb_element(const struct sdc_eb_layout *l, const uint8_t *row, int col, int *bits)
{
	const uint8_t *p = row + l->data;
	const bool eight = l->fmt == SDC_EB_8BIT;
	if (col >= 0 && col < l->d) {
		*bits = eight ? 8 : 4;
		return sdc_eb_row_q(l, row, col);
	}
	if (col == SDC_EB_COL_SCALE(l) || col == SDC_EB_COL_BIAS(l)) {
		const int k = col - l->d;
		*bits = eight ? 32 : 16;
		uint32_t v = 0;
		memcpy(&v, p + (size_t)k * (eight ? 4 : 2), eight ? 4 : 2);
		return v;
	}
	if (l->trailer && (col == SDC_EB_COL_CSUM(l) || col == SDC_EB_COL_WSUM(l))) {
		uint32_t v;
		if (eight) {
			*bits = 32;
			memcpy(&v, p + l->params + (col == SDC_EB_COL_WSUM(l) ? 4 : 0), 4);
			return v;
		}
		memcpy(&v, p + l->params, 4);
		*bits = col == SDC_EB_COL_CSUM(l) ? 12 : 20;
		return col == SDC_EB_COL_CSUM(l) ? v & 0xFFFu : v >> 12;
	}
	*bits = 0;
	return -1;
}

void sdc_eb_element_set(const struct sdc_eb_layout *l, uint8_t *row, int col, uint64_t value)
{
	uint8_t *p = row + l->data;
	const bool eight = l->fmt == SDC_EB_8BIT;
	if (col >= 0 && col < l->d) {
		sdc_eb_row_set_q(l, row, col, (int)value);
	} else if (col == SDC_EB_COL_SCALE(l) || col == SDC_EB_COL_BIAS(l)) {
		const uint32_t v = (uint32_t)value;
		const uint16_t h = (uint16_t)value;
		memcpy(p + (size_t)(col - l->d) * (eight ? 4 : 2), eight ? (const void *)&v : (const void *)&h,
		       eight ? 4 : 2);
	} else if (l->trailer && (col == SDC_EB_COL_CSUM(l) || col == SDC_EB_COL_WSUM(l))) {
		uint32_t v = (uint32_t)value;
		if (eight) {
			memcpy(p + l->params + (col == SDC_EB_COL_WSUM(l) ? 4 : 0), &v, 4);
			return;
		}
		uint32_t old;
		memcpy(&old, p + l->params, 4);
		v = col == SDC_EB_COL_CSUM(l) ? (old & ~0xFFFu) | (v & 0xFFFu) : (old & 0xFFFu) | v << 12;
		memcpy(p + l->params, &v, 4);
	}
}

void sdc_eb_element_name(const struct sdc_eb_layout *l, int col, char *buf, size_t len)
{
	if (col >= 0 && col < l->d)
		snprintf(buf, len, "q[%d]", col);
	else
		snprintf(buf, len, "%s",
			 col == SDC_EB_COL_SCALE(l) ? "scale" : col == SDC_EB_COL_BIAS(l) ? "bias"
							 : col == SDC_EB_COL_CSUM(l) ? "C_T" : "W_T");
}

bool sdc_eb_row_intact(const struct sdc_eb_table *t, uint64_t row)
{
	const uint8_t *p = sdc_eb_row(t, row);
	if (sdc_crc32c(0, p, t->l.stride) != t->crc[row])
		return false;
	int32_t c, w, sc, sw;
	sdc_eb_row_sums(&t->l, p, &c, &w);
	sdc_eb_row_stored_sums(&t->l, p, &sc, &sw);
	return c == sc && w == sw;
}

void sdc_eb_row_repair(struct sdc_eb_table *t, uint64_t row)
{
	uint8_t *p = sdc_eb_row(t, row);
	sdc_eb_truth_row(t, row, p);
	if (t->crc)
		t->crc[row] = sdc_crc32c(0, p, t->l.stride);
}

/* ---- batches ---- */

struct batch_plan {
	size_t len_blocks, idx_block, w_block, blocks, max_total;
};

static struct batch_plan batch_plan(const struct sdc_eb_cfg *cfg)
{
	struct batch_plan p;
	p.max_total = (size_t)cfg->batch * (size_t)sdc_eb_max_len(cfg);
	p.len_blocks = ((size_t)cfg->batch + 3) / 4;
	p.idx_block = p.len_blocks;
	p.w_block = p.idx_block + (p.max_total + 3) / 4;
	p.blocks = p.w_block + (p.max_total + 3) / 4;
	return p;
}

int sdc_eb_batch_alloc(struct sdc_eb_batch *b, const struct sdc_eb_cfg *cfg)
{
	memset(b, 0, sizeof(*b));
	const struct batch_plan p = batch_plan(cfg);
	b->cap = p.max_total;
	b->idx = malloc(p.max_total * sizeof(uint32_t));
	b->w = malloc(p.max_total * sizeof(float));
	b->words = malloc((p.max_total + 4 * p.len_blocks) * sizeof(uint32_t));
	if (!b->idx || !b->w || !b->words) {
		sdc_eb_batch_release(b);
		return -1;
	}
	return 0;
}

void sdc_eb_batch_release(struct sdc_eb_batch *b)
{
	free(b->idx);
	free(b->w);
	free(b->words);
	memset(b, 0, sizeof(*b));
}

void sdc_eb_batch_draw(struct sdc_eb_batch *b, const struct sdc_eb_cfg *cfg, uint64_t index)
{
	const struct batch_plan p = batch_plan(cfg);
	const struct sdc_rng r = sdc_rng_make(cfg->seed, SDC_RNG_PROBE_EMBBAG, SDC_RNG_SHARED, SDC_RNG_SHARED,
					      purpose(cfg, PURPOSE_BATCH));
	const uint64_t base = index * p.blocks;
	const int lmax = sdc_eb_max_len(cfg), lmin = SDC_MAX(1, cfg->pooling - cfg->pooling / 2);
	b->index = index;
	b->nbags = cfg->batch;
	b->weighted = index & 1;
	sdc_rng_fill_u32(&r, base, b->words, 4 * p.len_blocks);
	b->off[0] = 0;
	for (int i = 0; i < b->nbags; i++)
		b->off[i + 1] = b->off[i] + lmin + (int)(b->words[i] % (uint32_t)(lmax - lmin + 1));
	const size_t total = (size_t)b->off[b->nbags];
	sdc_rng_fill_u32(&r, base + p.idx_block, b->idx, total);
	for (size_t i = 0; i < total; i++)
		b->idx[i] = (uint32_t)(((uint64_t)b->idx[i] * cfg->rows) >> 32);
	if (b->weighted) {
		sdc_rng_fill_u32(&r, base + p.w_block, b->words, total);
		for (size_t i = 0; i < total; i++)
			b->w[i] = cfg->cls == SDC_EB_EXACT ? (float)(1 + b->words[i] % 3)
							   : 0.5f + (float)(b->words[i] >> 8) * 0x1p-24f;
	}
}

/* ---- the check ---- */

bool sdc_eb_check(const struct sdc_eb_cfg *cfg, const struct sdc_eb_layout *l, const struct sdc_eb_out_sums *os,
		  const struct sdc_eb_expect *e, struct sdc_eb_verdict *v)
{
	const int d = l->d;
	v->dc = os->c - e->c;
	v->dw = os->w - e->w;
	v->negzero = os->negzero;
	if (cfg->cls == SDC_EB_EXACT) {
		v->tc = v->tw = 0;
	} else {
		/*
		 * The header derives this: Q_t from its 16 columns times d/16, t's rounding bounded as if
		 * the same in every column (d Q_t), the fma's from acc^2 <= 2 t^2 + 2 (s q)^2.
		 */
		const double u2_3 = 0x1p-48 / 3, kw = (d + 1.0) * (2.0 * d + 1) / 6;
		const double qt = d / 16.0 * e->sq_t, q = (d + 2) * qt + 2.0 * l->qmax * e->s2c;
		const double slack = 0x1p-40 * d * sqrt(q);
		v->tc = cfg->c_sigma * sqrt(u2_3 * (q + e->pc)) + slack + 0x1p-40 * fabs(e->c);
		v->tw = cfg->c_sigma * sqrt(u2_3 * (kw * q + e->pw)) + slack * d + 0x1p-40 * fabs(e->w);
	}
	v->bad = v->negzero || !(fabs(v->dc) <= v->tc) || !(fabs(v->dw) <= v->tw);
	/* One bad element at column j moves the weighted sum j + 1 times as far as the plain one. */
	v->col = -1;
	if (v->bad && isfinite(v->dc) && isfinite(v->dw) && fabs(v->dc) > v->tc) {
		const double ratio = v->dw / v->dc;
		if (ratio >= 0.5 && ratio < d + 0.5) {
			const int j = (int)lrint(ratio) - 1;
			if (fabs(v->dw - (j + 1) * v->dc) <= v->tw + (j + 1) * v->tc)
				v->col = j;
		}
	}
	return v->bad;
}

size_t sdc_eb_scratch_bytes(const struct sdc_eb_cfg *cfg)
{
	struct sdc_eb_layout l;
	sdc_eb_layout_init(&l, cfg->fmt, cfg->d, true);
	return (size_t)sdc_eb_max_len(cfg) * (l.stride + sizeof(uint32_t));
}

void sdc_eb_reference(const struct sdc_eb_table *t, const struct sdc_eb_bag *bag, uint8_t *scratch, float *out)
{
	const size_t stride = t->l.stride;
	uint32_t *iota = (uint32_t *)(scratch + (size_t)sdc_eb_max_len(&t->cfg) * stride);
	for (int r = 0; r < bag->len; r++) {
		sdc_eb_truth_row(t, bag->idx[r], scratch + (size_t)r * stride);
		iota[r] = (uint32_t)r;
	}
	const struct sdc_eb_bag local = { iota, bag->w, bag->len, bag->len };
	sdc_eb_bag_portable(&t->l, scratch, &local, out, NULL, SDC_EB_NO_SUMS);
}
