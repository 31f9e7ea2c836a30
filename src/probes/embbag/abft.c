/* The ABFT-checked EmbeddingBag engine (probes/embbag/abft.h). */
#include "probes/embbag/abft.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/crc32c.h"
#include "base/memory.h"

void sdc_eb_variant_name(const struct sdc_eb_cfg *cfg, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s-d%d", cfg->fmt == SDC_EB_8BIT ? "8bit" : "4bit", cfg->cls == SDC_EB_FAST ? "-fast" : "",
		 cfg->d);
}

/* ---- tables ---- */

size_t sdc_eb_table_bytes(const struct sdc_eb_cfg *cfg)
{
	struct sdc_eb_layout l;
	if (sdc_eb_layout_init(&l, cfg->fmt, cfg->d, true))
		return 0;
	return (size_t)cfg->rows * (l.stride + sizeof(uint32_t));
}

int sdc_eb_table_plan(struct sdc_eb_table *t, const struct sdc_eb_cfg *cfg, bool with_sums, char *err, size_t errlen)
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
	t->truth = sdc_eb_rng(cfg, SDC_EB_PURPOSE_TABLE);
	t->bytes = (size_t)cfg->rows * t->l.stride;
	return 0;
}

int sdc_eb_table_alloc(struct sdc_eb_table *t, const struct sdc_eb_cfg *cfg, bool with_sums, char *err,
		       size_t errlen)
{
	if (sdc_eb_table_plan(t, cfg, with_sums, err, errlen))
		return -1;
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

void sdc_eb_table_fill(struct sdc_eb_table *t, uint64_t r0, uint64_t r1)
{
	enum { CHUNK = 512 };
	const size_t bpr = (size_t)sdc_eb_blocks_per_row(&t->l), wpr = bpr * 4;
	uint32_t *words = malloc(CHUNK * wpr * sizeof(uint32_t));
	for (uint64_t r = r0; r < r1; r += CHUNK) {
		const uint64_t n = r1 - r < CHUNK ? r1 - r : CHUNK;
		if (words)
			sdc_rng_fill_u32(&t->truth, r * bpr, words, n * wpr);
		for (uint64_t i = 0; i < n; i++) {
			uint8_t *row = sdc_eb_row(t, r + i);
			if (words)
				sdc_eb_make_row(t->cfg.cls, &t->l, words + i * wpr, row);
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

int sdc_eb_batch_alloc(struct sdc_eb_batch *b, const struct sdc_eb_cfg *cfg)
{
	memset(b, 0, sizeof(*b));
	const struct sdc_eb_batch_plan p = sdc_eb_batch_plan(cfg);
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

uint64_t sdc_eb_batch_lookups(const struct sdc_eb_cfg *cfg, uint64_t index)
{
	const struct sdc_rng r = sdc_eb_rng(cfg, SDC_EB_PURPOSE_BATCH);
	const uint64_t base = index * sdc_eb_batch_plan(cfg).blocks;
	uint64_t n = 0;
	for (int i = 0; i < cfg->batch; i++)
		n += (uint64_t)sdc_eb_len_of(cfg, sdc_eb_stream_word(&r, base, (uint64_t)i));
	return n;
}

/* The stream's words in bulk (sdc_rng_fill_u32); the GPU draws the same words one by one
 * (sdc_eb_stream_word) through the same mappings. */
void sdc_eb_batch_draw(struct sdc_eb_batch *b, const struct sdc_eb_cfg *cfg, uint64_t index)
{
	const struct sdc_eb_batch_plan p = sdc_eb_batch_plan(cfg);
	const struct sdc_rng r = sdc_eb_rng(cfg, SDC_EB_PURPOSE_BATCH);
	const uint64_t base = index * p.blocks;
	b->index = index;
	b->nbags = cfg->batch;
	b->weighted = sdc_eb_batch_weighted(index);
	sdc_rng_fill_u32(&r, base, b->words, 4 * p.len_blocks);
	b->off[0] = 0;
	for (int i = 0; i < b->nbags; i++)
		b->off[i + 1] = b->off[i] + sdc_eb_len_of(cfg, b->words[i]);
	const size_t total = (size_t)b->off[b->nbags];
	sdc_rng_fill_u32(&r, base + p.idx_block, b->idx, total);
	for (size_t i = 0; i < total; i++)
		b->idx[i] = sdc_eb_index_of(cfg, b->idx[i]);
	if (b->weighted) {
		sdc_rng_fill_u32(&r, base + p.w_block, b->words, total);
		for (size_t i = 0; i < total; i++)
			b->w[i] = sdc_eb_weight_of(cfg, b->words[i]);
	}
}

/* ---- the check ---- */

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
