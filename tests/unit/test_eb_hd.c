/*
 * The GPU's EmbeddingBag source (probes/embbag/embbag_hd.h, as the GPU module's embbag.cu runs
 * it) against the CPU's kernels, on the host: the true rows made one by one from Philox blocks against the
 * table filled in bulk; batches drawn word by word against sdc_eb_batch_draw; every output column
 * against every CPU kernel this machine runs, bit for bit; the expectation in 32 lanes joined in
 * the kernel's tree against the CPU kernel's (equal in the exact class, within 2^-45 in the fast
 * one); the output sums against sdc_eb_out_sums_portable bit for bit; the check passing clean bags
 * and locating a flipped element; the sweep's test of a row against its truth.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "probes/embbag/kernel.h"
#include "probes/embbag/embbag_hd.h"
#include "probes/embbag/abft.h"

/* A bag as k_eb_bags computes it: columns, 32 lanes joined, the check. */
static void gpu_bag(const struct sdc_eb_cfg *cfg, const struct sdc_eb_layout *l, const uint8_t *table,
		    const struct sdc_eb_bag *g, bool weighted, enum sdc_eb_sums sums, float *out, struct sdc_eb_expect *e,
		    double *sq)
{
	for (int j = l->d - 1; j >= 0; j--)
		out[j] = sdc_eb_bag_column(l, table, g->idx, g->w, g->len, j, sums == SDC_EB_SUMS_STATS && j < 16 ? &sq[j] : NULL);
	struct sdc_eb_expect es[32];
	for (int lane = 31; lane >= 0; lane--)
		sdc_eb_expect_lane(l, table, g->idx, g->w, g->len, weighted, sums, lane, 32, &es[lane]);
	sdc_eb_expect_join(es, 32);
	*e = es[0];
	(void)cfg;
}

static void test_variant(enum sdc_eb_format fmt, enum sdc_eb_class cls, int d)
{
	const struct sdc_eb_cfg cfg = { .fmt = fmt, .cls = cls, .d = d, .rows = 4099, .batch = 7, .pooling = 40,
					.seed = 11, .c_sigma = SDC_EB_C_SIGMA };
	struct sdc_eb_table t;
	char err[256];
	CHECK(!sdc_eb_table_alloc(&t, &cfg, true, err, sizeof(err)));
	sdc_eb_table_fill(&t, 0, cfg.rows);
	const struct sdc_eb_layout *l = &t.l;
	uint8_t row[SDC_EB_MAX_STRIDE];

	/* the true rows, one by one (the GPU's k_eb_fill), against the bulk fill */
	int rows_bad = 0;
	for (uint64_t r = 0; r < cfg.rows; r++) {
		sdc_eb_row_truth(&cfg, l, r, row);
		rows_bad += memcmp(row, sdc_eb_row(&t, r), l->stride) != 0;
		rows_bad += !sdc_eb_row_sound(&cfg, l, sdc_eb_row(&t, r), r);
	}
	CHECK_MSG(!rows_bad, "%d rows made one by one differ from the bulk fill, or fail the sweep", rows_bad);

	/* the sweep's test: any one bit of a row flipped is unsound (values, scale, bias, sums) */
	int missed = 0;
	for (size_t k = 0; k < l->stride; k++)
		for (int b = 0; b < 8; b++) {
			uint8_t *p = sdc_eb_row(&t, 5);
			p[k] ^= (uint8_t)(1u << b);
			missed += sdc_eb_row_sound(&cfg, l, p, 5);
			p[k] ^= (uint8_t)(1u << b);
		}
	CHECK_MSG(!missed, "%d single-bit flips of a row pass the sweep's test", missed);

	struct sdc_eb_batch b;
	CHECK(!sdc_eb_batch_alloc(&b, &cfg));
	const struct sdc_eb_batch_plan p = sdc_eb_batch_plan(&cfg);
	const struct sdc_rng rng = sdc_eb_rng(&cfg, SDC_EB_PURPOSE_BATCH);
	float *cpu = malloc((size_t)d * sizeof(float)), *gpu = malloc((size_t)d * sizeof(float));
	uint32_t idx[SDC_EB_MAX_BAG_LEN];
	float w[SDC_EB_MAX_BAG_LEN];
	int draw_bad = 0, col_bad = 0, exp_bad = 0, sums_bad = 0, check_bad = 0, located = 0, flips = 0;
	const enum sdc_eb_sums sums = cls == SDC_EB_FAST ? SDC_EB_SUMS_STATS : SDC_EB_SUMS;
	for (uint64_t index = 0; index < 12; index++) {
		sdc_eb_batch_draw(&b, &cfg, index);
		/* k_eb_draw's words, one at a time */
		const uint64_t base = index * p.blocks;
		draw_bad += sdc_eb_batch_lookups(&cfg, index) != (uint64_t)b.off[b.nbags];
		for (int i = 0; i < b.nbags; i++) {
			const int len = sdc_eb_len_of(&cfg, sdc_eb_stream_word(&rng, base, (uint64_t)i));
			draw_bad += len != b.off[i + 1] - b.off[i];
		}
		for (int k = 0; k < b.off[b.nbags]; k++) {
			draw_bad += sdc_eb_index_of(&cfg, sdc_eb_stream_word(&rng, base + p.idx_block, (uint64_t)k)) != b.idx[k];
			if (b.weighted)
				draw_bad += sdc_eb_weight_of(&cfg, sdc_eb_stream_word(&rng, base + p.w_block, (uint64_t)k)) != b.w[k];
		}
		for (int i = 0; i < b.nbags; i++) {
			const struct sdc_eb_bag g = sdc_eb_batch_bag(&b, i);
			memcpy(idx, g.idx, (size_t)g.len * sizeof(uint32_t));
			if (g.w)
				memcpy(w, g.w, (size_t)g.len * sizeof(float));
			const struct sdc_eb_bag mine = { idx, g.w ? w : NULL, g.len, g.len };
			struct sdc_eb_expect eg, ec;
			double sq[16] = { 0 };
			gpu_bag(&cfg, l, t.data, &mine, b.weighted, sums, gpu, &eg, sq);
			/* every CPU kernel this machine runs gives the same columns */
			for (const struct sdc_eb_impl *k = sdc_eb_impls; k->name; k++) {
				if (!k->supported())
					continue;
				k->bag(l, t.data, &g, cpu, &ec, sums);
				col_bad += memcmp(cpu, gpu, (size_t)d * sizeof(float)) != 0;
				struct sdc_eb_out_sums oc, og;
				k->out_sums(gpu, d, &oc);
				sdc_eb_out_sums_ref(gpu, d, &og);
				sums_bad += memcmp(&oc.c, &og.c, 8) || memcmp(&oc.w, &og.w, 8) || oc.negzero != og.negzero;
			}
			sdc_eb_bag_portable(l, t.data, &g, cpu, &ec, sums);
			if (cls == SDC_EB_EXACT) {
				exp_bad += ec.c != eg.c || ec.w != eg.w;
			} else {
				/* other association: each sum within 2^-45 of the sum of its terms' magnitudes */
				double mc = 0, mw = 0;
				for (int r = 0; r < g.len; r++) {
					struct sdc_eb_expect one = { 0 };
					sdc_eb_expect_row(l, sdc_eb_row(&t, g.idx[r]) + l->data, g.w ? g.w[r] : 1.0f, b.weighted, &one,
							  SDC_EB_SUMS);
					mc += fabs(one.c), mw += fabs(one.w);
				}
				const bool off = fabs(ec.c - eg.c) > 0x1p-45 * mc || fabs(ec.w - eg.w) > 0x1p-45 * mw ||
						 fabs(ec.s2c - eg.s2c) > 0x1p-45 * ec.s2c;
				CHECK_MSG(!off, "%s: expectation c %.17g / %.17g, w %.17g / %.17g", t.cfg.fmt ? "4bit" : "8bit",
					  ec.c, eg.c, ec.w, eg.w);
				exp_bad += off;
			}
			struct sdc_eb_verdict v;
			struct sdc_eb_expect e = eg;
			check_bad += sdc_eb_bag_check(&cfg, l, gpu, &e, sq, sums, &v);
			/* a flip of bit 22 of one element (far above the fast class's rounding) is found at it */
			const int j = (int)((index * 7 + (uint64_t)i * 13) % (uint64_t)d);
			uint32_t bits;
			memcpy(&bits, &gpu[j], 4);
			bits ^= 1u << 22;
			memcpy(&gpu[j], &bits, 4);
			e = eg;
			flips++;
			if (sdc_eb_bag_check(&cfg, l, gpu, &e, sq, sums, &v))
				located += v.col == j;
		}
	}
	CHECK_MSG(!draw_bad, "%d lengths, rows or weights drawn word by word differ from sdc_eb_batch_draw", draw_bad);
	CHECK_MSG(!col_bad, "%d bags whose columns differ from a CPU kernel's", col_bad);
	CHECK_MSG(!sums_bad, "%d output sums differ from a CPU kernel's", sums_bad);
	CHECK_MSG(!exp_bad, "%d expectations differ from the CPU kernel's", exp_bad);
	CHECK_MSG(!check_bad, "%d clean bags fail the check", check_bad);
	CHECK_MSG(located == flips, "%d of %d flipped elements found and located", located, flips);
	free(cpu);
	free(gpu);
	sdc_eb_batch_release(&b);
	sdc_eb_table_release(&t);
}

int main(void)
{
	static const int dims[] = { 16, 32, 48, 64, 256 };
	for (int f = 0; f < 2; f++)
		for (int c = 0; c < 2; c++)
			for (size_t i = 0; i < sizeof(dims) / sizeof(dims[0]); i++)
				test_variant((enum sdc_eb_format)f, (enum sdc_eb_class)c, dims[i]);
	return check_done("eb_hd");
}
