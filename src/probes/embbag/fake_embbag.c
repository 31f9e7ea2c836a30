/*
 * The fake GPU module's embbag family (probes/embbag/gpu_ops.h; the base:
 * kernels/fake/fake_module.c): embbag's operations (eb_ entries) run embbag_hd.h's functions in the
 * shape of embbag.cu's kernels: a bag's columns, its 32 expectation lanes joined in the same tree,
 * then the check, threads and bags in reverse order.
 *
 * Environment, to exercise the failure paths:
 *   FAKE_GPU_EB_BUG=D     GPU D's lookups compute column 3 of every bag with a separate multiply and
 *                         add where the CPU fuses them (a port without __fmaf_rn): the same value
 *                         in the exact class, other low bits in the fast one, which only the vote
 *                         can tell
 *   FAKE_GPU_EB_HANG=D    GPU D's third lookup never finishes: it waits out the deadline and fails
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/embbag/embbag_hd.h"
#include "kernels/fake/fake.h"
#include "probes/embbag/gpu_ops.h"

/* ---- embbag's lookups ---- */

struct sdc_gpu_eb {
	struct sdc_eb_cfg cfg;
	struct sdc_eb_layout l;
	int max_bags, nbags, device, lookups;
	bool bug, hang;
	double timeout;
	uint8_t *table;
	uint32_t *idx;
	float *w, *out;
	int32_t *start, *len;
	bool *weighted;
	struct sdc_eb_verdict *v;
	char err[256];
};

static void fake_eb_close(struct sdc_gpu_eb *g)
{
	if (!g)
		return;
	free(g->table), free(g->idx), free(g->w), free(g->out), free(g->start), free(g->len), free(g->weighted), free(g->v);
	free(g);
}

static struct sdc_gpu_eb *fake_eb_open(const struct sdc_eb_cfg *cfg, int with_sums, int max_bags, double timeout,
				       char *err, size_t errlen)
{
	struct sdc_gpu_eb *g = calloc(1, sizeof(*g));
	if (!g || sdc_eb_layout_init(&g->l, cfg->fmt, cfg->d, with_sums) || max_bags < cfg->batch) {
		snprintf(err, errlen, "cannot make a table of width %d for %d bags (fake)", cfg->d, max_bags);
		free(g);
		return NULL;
	}
	g->cfg = *cfg, g->max_bags = max_bags, g->timeout = timeout, g->device = fake_bound;
	g->bug = getenv("FAKE_GPU_EB_BUG") && fake_env_int("FAKE_GPU_EB_BUG", -1) == fake_bound;
	g->hang = getenv("FAKE_GPU_EB_HANG") && fake_env_int("FAKE_GPU_EB_HANG", -1) == fake_bound;
	const size_t region = (size_t)sdc_eb_batch_plan(cfg).max_total * (size_t)(max_bags / cfg->batch);
	g->table = malloc((size_t)cfg->rows * g->l.stride);
	g->idx = malloc(region * sizeof(uint32_t));
	g->w = malloc(region * sizeof(float));
	g->out = malloc((size_t)max_bags * cfg->d * sizeof(float));
	g->start = malloc((size_t)max_bags * sizeof(int32_t));
	g->len = malloc((size_t)max_bags * sizeof(int32_t));
	g->weighted = malloc((size_t)max_bags);
	g->v = malloc((size_t)max_bags * sizeof(*g->v));
	if (!g->table || !g->idx || !g->w || !g->out || !g->start || !g->len || !g->weighted || !g->v) {
		snprintf(err, errlen, "cudaErrorMemoryAllocation (fake)");
		fake_eb_close(g);
		return NULL;
	}
	/* k_eb_fill: a thread a row */
	for (uint64_t r = cfg->rows; r-- > 0;)
		sdc_eb_row_truth(cfg, &g->l, r, g->table + r * g->l.stride);
	return g;
}

static int fake_eb_draw(struct sdc_gpu_eb *g, uint64_t first, int n)
{
	if (g->err[0])
		return -1;
	if (n < 1 || n * g->cfg.batch > g->max_bags) {
		snprintf(g->err, sizeof(g->err), "%d batches of %d bags: room for %d bags", n, g->cfg.batch, g->max_bags);
		return -1;
	}
	/* k_eb_draw: a block a batch, its rows and weights word by word */
	const struct sdc_eb_batch_plan p = sdc_eb_batch_plan(&g->cfg);
	const struct sdc_rng r = sdc_eb_rng(&g->cfg, SDC_EB_PURPOSE_BATCH);
	for (int bt = n - 1; bt >= 0; bt--) {
		const uint64_t index = first + (uint64_t)bt, base = index * p.blocks, region = (uint64_t)bt * p.max_total;
		const bool wt = sdc_eb_batch_weighted(index);
		int off = 0;
		for (int i = 0; i < g->cfg.batch; i++) {
			const int b = bt * g->cfg.batch + i;
			g->start[b] = (int32_t)(region + (uint64_t)off);
			g->len[b] = sdc_eb_len_of(&g->cfg, sdc_eb_stream_word(&r, base, (uint64_t)i));
			g->weighted[b] = wt;
			off += g->len[b];
		}
		for (int k = off - 1; k >= 0; k--) {
			g->idx[region + (uint64_t)k] = sdc_eb_index_of(&g->cfg, sdc_eb_stream_word(&r, base + p.idx_block, (uint64_t)k));
			g->w[region + (uint64_t)k] =
				wt ? sdc_eb_weight_of(&g->cfg, sdc_eb_stream_word(&r, base + p.w_block, (uint64_t)k)) : 1.0f;
		}
	}
	g->nbags = n * g->cfg.batch;
	return 0;
}

static int fake_eb_lookup(struct sdc_gpu_eb *g, int sums_in, const struct sdc_gpu_flip *flips, int nflips, float *out,
			  struct sdc_eb_verdict *v)
{
	if (g->err[0])
		return -1;
	if (g->hang && ++g->lookups >= 3) {
		fake_wait_out(fake_now(), g->timeout);
		snprintf(g->err, sizeof(g->err), "the lookups did not finish within %.0f s (fake: GPU %d stopped)", g->timeout,
			 g->device);
		return -1;
	}
	const struct sdc_eb_layout *l = &g->l;
	const enum sdc_eb_sums sums = l->trailer ? (enum sdc_eb_sums)sums_in : SDC_EB_NO_SUMS;
	const int d = l->d;
	/* k_eb_bags: a block a bag */
	for (int bag = g->nbags - 1; bag >= 0; bag--) {
		const uint32_t *bi = g->idx + g->start[bag];
		const float *bw = g->weighted[bag] ? g->w + g->start[bag] : NULL;
		float *o = g->out + (size_t)bag * d;
		double sq[16]; /* poisoned: a column that leaves its sum unset fails the check whatever the compiler */
		for (int t = 0; t < 16; t++)
			sq[t] = NAN;
		struct sdc_eb_expect es[32];
		for (int t = d - 1; t >= 0; t--) {
			double *sq_t = sums == SDC_EB_SUMS_STATS && t < 16 ? &sq[t] : NULL;
			o[t] = g->bug && t == 3 ? sdc_eb_bag_column_as(l, g->table, bi, bw, g->len[bag], t, sq_t, true)
						: sdc_eb_bag_column(l, g->table, bi, bw, g->len[bag], t, sq_t);
		}
		if (sums == SDC_EB_NO_SUMS)
			continue;
		for (int lane = 31; lane >= 0; lane--)
			sdc_eb_expect_lane(l, g->table, bi, bw, g->len[bag], g->weighted[bag], sums, lane, 32, &es[lane]);
		sdc_eb_expect_join(es, 32);
		sdc_eb_apply_flips(o, d, bag, flips, nflips);
		sdc_eb_bag_check(&g->cfg, l, o, &es[0], sq, sums, &g->v[bag]);
	}
	if (out)
		memcpy(out, g->out, (size_t)g->nbags * d * sizeof(float));
	if (v && l->trailer)
		memcpy(v, g->v, (size_t)g->nbags * sizeof(*v));
	return 0;
}

static int fake_eb_sweep(struct sdc_gpu_eb *g, uint64_t row0, uint64_t n, uint64_t *bad, int max, int *nbad)
{
	*nbad = 0;
	if (g->err[0])
		return -1;
	if (n > g->cfg.rows)
		n = g->cfg.rows;
	/* in increasing order of rows: the CUDA module sorts what its threads found */
	uint64_t found[1024];
	int got = 0;
	for (uint64_t k = 0; k < n; k++) {
		const uint64_t row = (row0 + k) % g->cfg.rows;
		if (!sdc_eb_row_sound(&g->cfg, &g->l, g->table + row * g->l.stride, row)) {
			if (got < 1024)
				found[got] = row;
			got++;
		}
	}
	*nbad = got;
	const int have = got < 1024 ? got : 1024;
	for (int i = 1; i < have; i++)
		for (int j = i; j > 0 && found[j - 1] > found[j]; j--) {
			const uint64_t x = found[j];
			found[j] = found[j - 1], found[j - 1] = x;
		}
	for (int i = 0; i < have && i < max; i++)
		bad[i] = found[i];
	return 0;
}

static int fake_eb_row(struct sdc_gpu_eb *g, int write, uint64_t row, uint8_t *bytes)
{
	if (g->err[0])
		return -1;
	if (row >= g->cfg.rows) {
		snprintf(g->err, sizeof(g->err), "row %llu of a table of %llu", (unsigned long long)row,
			 (unsigned long long)g->cfg.rows);
		return -1;
	}
	uint8_t *p = g->table + row * g->l.stride;
	memcpy(write ? p : bytes, write ? bytes : p, g->l.stride);
	return 0;
}

static int fake_eb_time(struct sdc_gpu_eb *g, int sums, int reps, double *seconds)
{
	const double t0 = fake_now();
	for (int i = 0; i < reps; i++)
		if (fake_eb_lookup(g, sums, NULL, 0, NULL, NULL))
			return -1;
	*seconds = (fake_now() - t0) / (reps > 0 ? reps : 1);
	return 0;
}

static const char *fake_eb_error(struct sdc_gpu_eb *g)
{
	return g->err;
}

/* The embbag family's table (fake_module.c asks for it). */
const struct sdc_gpu_embbag_ops *fake_embbag_family(void)
{
	static struct sdc_gpu_embbag_ops t = {
		.eb_open = fake_eb_open,
		.eb_close = fake_eb_close,
		.eb_draw = fake_eb_draw,
		.eb_lookup = fake_eb_lookup,
		.eb_sweep = fake_eb_sweep,
		.eb_row = fake_eb_row,
		.eb_time = fake_eb_time,
		.eb_error = fake_eb_error,
	};
	t.version = SDC_GPU_EMBBAG_VERSION - fake_stale("embbag");
	return &t;
}
