/*
 * The checked EmbeddingBag's pieces written once for the CPU and the GPU (SDC_HD, base/hd.h): the
 * table's true rows and the batches drawn from the seed, one output element of a bag, a bag's
 * expectation from its rows' tails, the output's two sums and the check. The CPU probe calls them
 * through probes/embbag/abft.c; the GPU module's kernels (probes/embbag/embbag.cu) call the same
 * functions, and the fake module (fake_embbag.c) runs them on the host in the kernels'
 * shape, so CI compares the GPU's source with the CPU's kernels without a GPU.
 *
 * Which CPU loop each mirrors:
 *   sdc_eb_bag_column   the portable kernel's (kernel.c) loop over rows, for one column j:
 *                       t = out + fl(w bias); out = fma(fl(w scale), q[j], t), rows in bag order,
 *                       so the bits are every CPU kernel's (they agree bit for bit, kernel.h)
 *   sdc_eb_expect_lane  sdc_eb_expect_row over rows lane, lane + nlanes, ...; the lanes joined by
 *                       sdc_eb_expect_join in a fixed tree (the exact class's sums are exact, so
 *                       equal to the CPU's; the fast class's differ from the CPU's row order by
 *                       roundings of 2^-53, far inside the check's 2^-40 slack)
 *   sdc_eb_out_sums_ref sdc_eb_out_sums_portable's four chains, scalar: the same bits
 *   sdc_eb_check        the check itself (the CPU probe's and the GPU's)
 */
#ifndef SDC_EMBBAG_HD_H
#define SDC_EMBBAG_HD_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "base/hd.h"
#include "base/rng.h"
#include "probes/embbag/kernel.h"
#include "kernels/gpu_module.h"

#if defined(__CUDA_ARCH__)
#define SDC_EB_FMAF(a, b, c) __fmaf_rn(a, b, c)
#else
#define SDC_EB_FMAF(a, b, c) fmaf(a, b, c)
#endif

enum sdc_eb_class { SDC_EB_EXACT, SDC_EB_FAST };

#define SDC_EB_C_SIGMA 6.0
#define SDC_EB_MAX_BAGS 64
#define SDC_EB_MAX_POOLING 400

struct sdc_eb_cfg {
	enum sdc_eb_format fmt;
	enum sdc_eb_class cls;
	int d;
	uint64_t rows;
	int batch;   /* bags per batch */
	int pooling; /* mean rows per bag; lengths are uniform in [pooling/2, 3 pooling/2] */
	uint64_t seed;
	double c_sigma;
};

/* Longest and shortest bag a configuration draws. */
SDC_HD int sdc_eb_max_len(const struct sdc_eb_cfg *cfg)
{
	return cfg->pooling + cfg->pooling / 2;
}

SDC_HD int sdc_eb_min_len(const struct sdc_eb_cfg *cfg)
{
	const int m = cfg->pooling - cfg->pooling / 2;
	return m > 1 ? m : 1;
}

/* ---- the random streams: which, for which format, class and width ---- */

enum { SDC_EB_PURPOSE_TABLE = 1, SDC_EB_PURPOSE_BATCH = 2 };

SDC_HD struct sdc_rng sdc_eb_rng(const struct sdc_eb_cfg *cfg, unsigned kind)
{
	const uint32_t purpose =
		(uint32_t)kind << 16 | (uint32_t)cfg->fmt << 12 | (uint32_t)cfg->cls << 8 | (uint32_t)(cfg->d / 16);
	return sdc_rng_make(cfg->seed, SDC_RNG_PROBE_EMBBAG, SDC_RNG_SHARED, SDC_RNG_SHARED, purpose);
}

/* ---- the table's true rows ---- */

/* Philox blocks (16 bytes) per row: the values' bytes, then two words for scale and bias. */
SDC_HD int sdc_eb_blocks_per_row(const struct sdc_eb_layout *l)
{
	return (int)((l->data + 8 + 15) / 16);
}

#define SDC_EB_ROW_WORDS ((SDC_EB_DMAX + 8 + 15) / 16 * 4)

/*
 * One row from its random words: the values are the words' bytes (both nibbles of each byte for
 * 4-bit rows, so every value is uniform in [0, qmax]), scale and bias from the last two words.
 * Exact class: scales powers of two (1/4 .. 2), biases multiples of 1/16 in [-2, 2]; fast class:
 * FBGEMM's quantisation of a real row (abft.h).
 */
SDC_HD void sdc_eb_make_row(enum sdc_eb_class cls, const struct sdc_eb_layout *l, const uint32_t *words,
			    uint8_t *dst)
{
	memcpy(dst, words, l->data);
	const uint32_t u0 = words[l->data / 4], u1 = words[l->data / 4 + 1];
	float scale, bias;
	if (cls == SDC_EB_EXACT) {
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

/* The true bytes of one row (l->stride of them), regenerated from the seed. */
SDC_HD void sdc_eb_row_truth(const struct sdc_eb_cfg *cfg, const struct sdc_eb_layout *l, uint64_t row,
			     uint8_t *dst)
{
	uint32_t words[SDC_EB_ROW_WORDS];
	const struct sdc_rng r = sdc_eb_rng(cfg, SDC_EB_PURPOSE_TABLE);
	const int bpr = sdc_eb_blocks_per_row(l);
	for (int b = 0; b < bpr; b++) {
		const struct sdc_philox_ctr c = sdc_rng_block(&r, row * (uint64_t)bpr + (uint64_t)b);
		for (int k = 0; k < 4; k++)
			words[4 * b + k] = c.v[k];
	}
	sdc_eb_make_row(cfg->cls, l, words, dst);
}

/* ---- batches: bag lengths, row numbers and weights from the seed ---- */

/* Where batch `index`'s words lie in the batch stream: lengths, then indices, then weights. */
struct sdc_eb_batch_plan {
	uint64_t len_blocks, idx_block, w_block, blocks, max_total;
};

SDC_HD struct sdc_eb_batch_plan sdc_eb_batch_plan(const struct sdc_eb_cfg *cfg)
{
	struct sdc_eb_batch_plan p;
	p.max_total = (uint64_t)cfg->batch * (uint64_t)sdc_eb_max_len(cfg);
	p.len_blocks = ((uint64_t)cfg->batch + 3) / 4;
	p.idx_block = p.len_blocks;
	p.w_block = p.idx_block + (p.max_total + 3) / 4;
	p.blocks = p.w_block + (p.max_total + 3) / 4;
	return p;
}

/* Odd batches pool with weights, even ones sum. */
SDC_HD bool sdc_eb_batch_weighted(uint64_t index)
{
	return index & 1;
}

/* A bag's length, a row number and a weight from their random words. */
SDC_HD int sdc_eb_len_of(const struct sdc_eb_cfg *cfg, uint32_t word)
{
	const int lmin = sdc_eb_min_len(cfg), lmax = sdc_eb_max_len(cfg);
	return lmin + (int)(word % (uint32_t)(lmax - lmin + 1));
}

SDC_HD uint32_t sdc_eb_index_of(const struct sdc_eb_cfg *cfg, uint32_t word)
{
	return (uint32_t)(((uint64_t)word * cfg->rows) >> 32);
}

SDC_HD float sdc_eb_weight_of(const struct sdc_eb_cfg *cfg, uint32_t word)
{
	return cfg->cls == SDC_EB_EXACT ? (float)(1 + word % 3) : 0.5f + (float)(word >> 8) * 0x1p-24f;
}

/* Word k of the batch stream from block `first` on. */
SDC_HD uint32_t sdc_eb_stream_word(const struct sdc_rng *r, uint64_t first, uint64_t k)
{
	return sdc_rng_block(r, first + k / 4).v[k % 4];
}

/* ---- one bag ---- */

/*
 * Output column j of a bag of len rows idx[] (weights w[], NULL: sum pooling), as the CPU kernels
 * compute it; *sq (unless NULL) gets the sum over rows of t^2, the rounding statistic of the fast
 * class's threshold (sdc_eb_expect.sq_t, which the CPU takes over columns 0..15). apart: each
 * row's multiply and add rounded apart (the fake module's planted bug), else fused, as the kernels do.
 */
SDC_HD float sdc_eb_bag_column_as(const struct sdc_eb_layout *l, const uint8_t *table, const uint32_t *idx,
				  const float *w, int len, int j, double *sq, bool apart)
{
	float acc = 0.0f;
	double s2 = 0;
	for (int r = 0; r < len; r++) {
		const uint8_t *row = table + (size_t)idx[r] * l->stride;
		float scale, bias;
		sdc_eb_row_params(l, row, &scale, &bias);
		const float wr = w ? w[r] : 1.0f;
		const float s = wr * scale, b = wr * bias;
		const float t = acc + b;
		acc = apart ? s * (float)sdc_eb_row_q(l, row, j) + t : SDC_EB_FMAF(s, (float)sdc_eb_row_q(l, row, j), t);
		if (sq)
			s2 += (double)t * t;
	}
	if (sq)
		*sq = s2;
	return acc;
}

/* The column as the kernels compute it: each row's multiply and add fused. */
SDC_HD float sdc_eb_bag_column(const struct sdc_eb_layout *l, const uint8_t *table, const uint32_t *idx,
			       const float *w, int len, int j, double *sq)
{
	return sdc_eb_bag_column_as(l, table, idx, w, len, j, sq, false);
}

/* Lane `lane` of nlanes' share of a bag's expectation: rows lane, lane + nlanes, ... */
SDC_HD void sdc_eb_expect_lane(const struct sdc_eb_layout *l, const uint8_t *table, const uint32_t *idx,
			       const float *w, int len, bool weighted, enum sdc_eb_sums sums, int lane, int nlanes,
			       struct sdc_eb_expect *e)
{
	memset(e, 0, sizeof(*e));
	for (int r = lane; r < len; r += nlanes)
		sdc_eb_expect_row(l, table + (size_t)idx[r] * l->stride + l->data, w ? w[r] : 1.0f, weighted, e, sums);
}

/* e[0] += e[k] in a fixed tree: at each step, e[i] += e[i + step] for i a multiple of 2 step. */
SDC_HD void sdc_eb_expect_add(struct sdc_eb_expect *a, const struct sdc_eb_expect *b)
{
	a->c += b->c;
	a->w += b->w;
	a->sq_t += b->sq_t;
	a->s2c += b->s2c;
	a->pc += b->pc;
	a->pw += b->pw;
}

SDC_HD void sdc_eb_expect_join(struct sdc_eb_expect *e, int n)
{
	for (int step = 1; step < n; step *= 2)
		for (int i = 0; i + step < n; i += 2 * step)
			sdc_eb_expect_add(&e[i], &e[i + step]);
}

/* The two sums of an output as it lies in memory, in four chains (sdc_eb_out_sums_portable's). */
SDC_HD void sdc_eb_out_sums_ref(const float *out, int d, struct sdc_eb_out_sums *os)
{
	double sc[4] = { 0, 0, 0, 0 }, sw[4] = { 0, 0, 0, 0 };
	bool negzero = false;
	for (int j = 0; j < d; j++) {
		uint32_t bits;
		memcpy(&bits, &out[j], 4);
		negzero |= bits == 0x80000000u;
		sc[j & 3] += (double)out[j];
		sw[j & 3] += (double)(j + 1) * (double)out[j];
	}
	os->c = (sc[0] + sc[1]) + (sc[2] + sc[3]);
	os->w = (sw[0] + sw[1]) + (sw[2] + sw[3]);
	os->negzero = negzero;
}

/* What the check says about one bag's output. */
struct sdc_eb_verdict {
	double dc, dw;  /* output sums minus what the stored sums predict */
	double tc, tw;  /* the thresholds (0 in the exact class) */
	int col;        /* the column the two differences point at, -1 if none */
	bool negzero;   /* a -0.0 in the output */
	bool bad;
};

/*
 * Checks an output's sums (read back from memory) against e (abft.h derives the thresholds).
 * Returns v->bad.
 */
SDC_HD bool sdc_eb_check(const struct sdc_eb_cfg *cfg, const struct sdc_eb_layout *l, const struct sdc_eb_out_sums *os,
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
		 * Q_t from its 16 columns times d/16, t's rounding bounded as if the same in every
		 * column (d Q_t), the fma's from acc^2 <= 2 t^2 + 2 (s q)^2.
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

/*
 * A bag's check once its columns and expectation lanes are done (the GPU's thread 0, the fake
 * module's twin): the fast class's t^2 statistic completed from columns 0..15 (sq[], in column
 * order), then the output as it lies in memory checked against the expectation.
 */
SDC_HD bool sdc_eb_bag_check(const struct sdc_eb_cfg *cfg, const struct sdc_eb_layout *l, const float *out,
			     struct sdc_eb_expect *e, const double *sq, enum sdc_eb_sums sums, struct sdc_eb_verdict *v)
{
	if (sums == SDC_EB_SUMS_STATS) {
		e->sq_t = 0;
		for (int j = 0; j < 16; j++)
			e->sq_t += sq[j];
	}
	struct sdc_eb_out_sums os;
	sdc_eb_out_sums_ref(out, l->d, &os);
	return sdc_eb_check(cfg, l, &os, e, v);
}

/* R faults in GPU memory: each flip whose member is this bag turns one bit of output column el,
 * after the lookup and before the check (k_eb_bags' thread 0, and the fake module's twin). */
SDC_HD void sdc_eb_apply_flips(float *o, int d, int bag, const struct sdc_gpu_flip *flips, int nflips)
{
	for (int i = 0; i < nflips; i++)
		if (flips[i].member == bag && flips[i].el >= 0 && flips[i].el < d) {
			uint32_t bits;
			memcpy(&bits, &o[flips[i].el], 4);
			bits ^= 1u << flips[i].bit;
			memcpy(&o[flips[i].el], &bits, 4);
		}
}

#define SDC_EB_MAX_STRIDE (SDC_EB_DMAX + 16)

/*
 * The sweep's test of a row at rest where the table was made from the seed (the GPU's): its bytes
 * against its truth regenerated (what the CPU's CRC32C stands for), and its stored sums against
 * those recomputed from its values (the CPU's second test).
 */
SDC_HD bool sdc_eb_row_sound(const struct sdc_eb_cfg *cfg, const struct sdc_eb_layout *l, const uint8_t *bytes,
			     uint64_t row)
{
	uint8_t truth[SDC_EB_MAX_STRIDE];
	sdc_eb_row_truth(cfg, l, row, truth);
	for (size_t k = 0; k < l->stride; k++)
		if (bytes[k] != truth[k])
			return false;
	if (!l->trailer)
		return true;
	int32_t c, w, sc, sw;
	sdc_eb_row_sums(l, bytes, &c, &w);
	sdc_eb_row_stored_sums(l, bytes, &sc, &sw);
	return c == sc && w == sw;
}

#endif
