/*
 * sdcscan campaign embbag: fault-injection campaigns on the embbag probe's engine and checks,
 * printed in the form of Li et al.'s Table III (seeds/000, §VI-B2): one random single-bit flip per
 * trial in the upper or lower four bits of a quantised table element (two of four for 4-bit
 * rows) or of a bag's fp32 output, and clean trials. Every trial looks up one batch of bags and
 * checks all of them. Beside sdcscan's checks, the same trials are judged by the paper's own
 * Algorithm 2 (fp32 sums, fixed relative bound 1e-5), so its figures are reproduced, not only
 * quoted. A per-bit table of output flips says which bits a threshold can see at all.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inject/campaign_html.h"
#include "probe/command.h"
#include "run/facts.h"
#include "probes/embbag/embbag.h"
#include "device/parallel.h"
#include "probe/probe.h"
#include "probes/embbag/abft.h"
#include "base/message.h"

#define MAX_WORKERS 1024

/* The kinds of trial: Table III's columns, then one per output bit for the per-bit table. */
enum trial { CLEAN, TABLE_HI, TABLE_LO, OUT_HI, OUT_LO, NKINDS };
static const char *const kind_names[NKINDS] = { "no error", "table hi", "table lo", "output hi", "output lo" };
static const char *const kind_keys[NKINDS] = { "clean", "table_high", "table_low", "output_high", "output_low" };

struct counts {
	uint64_t trials[NKINDS], found[NKINDS], located[NKINDS];
	uint64_t paper_found[NKINDS]; /* Li et al.'s Algorithm 2 on the same trials */
	uint64_t stray[NKINDS];       /* bags without the fault flagged in a faulted trial */
	uint64_t clean_bags, clean_fp_bags;
	double fp_margin;   /* smallest threshold / |E| over clean bags (fast) */
	double low_margin;  /* smallest |difference| / threshold over found low-bit table flips (fast) */
	uint64_t bit_trials[32], bit_found[32];
};

struct worker_state {
	bool ready;
	struct sdc_eb_table t;
	struct sdc_eb_batch b;
	float *out;
	struct sdc_eb_expect *expect;
	struct counts n;
};

struct campaign {
	struct sdc_eb_cfg cfg;
	const struct sdc_eb_impl *impl;
	struct worker_state *ws;
	int nworkers;
	uint64_t trials, bit_trials;
	unsigned cell; /* which format/class/width: keys the fault placement */
	char error[256];
};

static void counts_reset(struct counts *n)
{
	memset(n, 0, sizeof(*n));
	n->fp_margin = n->low_margin = INFINITY;
}

static void release_state(struct worker_state *w)
{
	if (!w->ready)
		return;
	sdc_eb_table_release(&w->t);
	sdc_eb_batch_release(&w->b);
	free(w->out);
	free(w->expect);
	w->ready = false;
}

static struct worker_state *state(struct campaign *c, int worker)
{
	struct worker_state *w = &c->ws[worker];
	if (w->ready)
		return w;
	char err[256];
	/* Each worker flips bits in a table of its own, so no trial sees another's fault. */
	if (sdc_eb_table_alloc(&w->t, &c->cfg, true, err, sizeof(err)) || sdc_eb_batch_alloc(&w->b, &c->cfg) ||
	    !(w->out = malloc((size_t)c->cfg.batch * c->cfg.d * sizeof(float))) ||
	    !(w->expect = malloc((size_t)c->cfg.batch * sizeof(*w->expect)))) {
		snprintf(c->error, sizeof(c->error), "%s", w->t.data ? "out of memory" : err);
		sdc_stop_request();
		return NULL;
	}
	sdc_eb_table_fill(&w->t, 0, c->cfg.rows);
	w->ready = true;
	return w;
}

/* Where to flip: random from the seed, per cell, kind and trial, so a campaign replays. */
static uint64_t draw(const struct campaign *c, unsigned kind, uint64_t trial, unsigned which, uint64_t bound)
{
	const struct sdc_rng r = sdc_rng_make(c->cfg.seed, SDC_RNG_PROBE_INJECT, c->cell, kind, 0x6000);
	return sdc_rng_below(&r, trial * 8 + which, bound);
}

/* Li et al. Algorithm 2 as a float implementation runs it: RSum and CSum in fp32, |RSum - CSum| > 1e-5 |CSum|. */
static bool paper_flags(const struct sdc_eb_table *t, const struct sdc_eb_bag *g, const float *out)
{
	const struct sdc_eb_layout *l = &t->l;
	float rsum = 0, csum = 0;
	for (int j = 0; j < l->d; j++)
		rsum += out[j];
	for (int r = 0; r < g->len; r++) {
		const uint8_t *row = sdc_eb_row(t, g->idx[r]);
		float scale, bias;
		int32_t cs, ws;
		sdc_eb_row_params(l, row, &scale, &bias);
		sdc_eb_row_stored_sums(l, row, &cs, &ws);
		const float w = g->w ? g->w[r] : 1.0f;
		csum += w * (scale * (float)cs + (float)l->d * bias);
	}
	return !(fabsf(rsum - csum) <= 1e-5f * fabsf(csum));
}

static void trial(void *arg, int worker, uint64_t job)
{
	struct campaign *c = arg;
	struct worker_state *w = state(c, worker);
	if (!w)
		return;
	const struct sdc_eb_cfg *cfg = &c->cfg;
	const struct sdc_eb_layout *l = &w->t.l;
	const int d = cfg->d;
	/* Jobs: NKINDS - 1 faulted kinds and clean ones, trials of each, then the per-bit output flips. */
	const uint64_t table_jobs = c->trials * NKINDS;
	unsigned kind;
	uint64_t t;
	int out_bit = -1;
	if (job < table_jobs) {
		kind = (unsigned)(job % NKINDS);
		t = job / NKINDS;
	} else {
		const uint64_t k = job - table_jobs;
		out_bit = (int)(k % 32);
		kind = out_bit >= 28 ? OUT_HI : OUT_LO; /* placement only; counted per bit */
		t = c->trials + k;
	}
	sdc_eb_batch_draw(&w->b, cfg, job);
	const int bag = (int)draw(c, kind, t, 0, (uint64_t)w->b.nbags);
	const struct sdc_eb_bag fg = sdc_eb_batch_bag(&w->b, bag);
	const int col = (int)draw(c, kind, t, 1, (uint64_t)d);
	const int qbits = cfg->fmt == SDC_EB_8BIT ? 8 : 4, half = qbits / 2;
	uint64_t row = 0, before = 0;
	int bit = 0;
	if (kind == TABLE_HI || kind == TABLE_LO) {
		row = fg.idx[draw(c, kind, t, 2, (uint64_t)fg.len)];
		bit = (int)draw(c, kind, t, 3, (uint64_t)half) + (kind == TABLE_HI ? half : 0);
		int bits;
		uint8_t *p = sdc_eb_row(&w->t, row);
		before = (uint64_t)sdc_eb_element(l, p, col, &bits);
		sdc_eb_element_set(l, p, col, before ^ (1u << bit));
	}
	const enum sdc_eb_sums sums = cfg->cls == SDC_EB_FAST ? SDC_EB_SUMS_STATS : SDC_EB_SUMS;
	for (int i = 0; i < w->b.nbags; i++) {
		const struct sdc_eb_bag g = sdc_eb_batch_bag(&w->b, i);
		c->impl->bag(l, w->t.data, &g, w->out + (size_t)i * d, &w->expect[i], sums);
	}
	if (kind == OUT_HI || kind == OUT_LO) {
		bit = out_bit >= 0 ? out_bit : (int)draw(c, kind, t, 3, 4) + (kind == OUT_HI ? 28 : 0);
		uint32_t v;
		memcpy(&v, &w->out[(size_t)bag * d + col], 4);
		v ^= 1u << bit;
		memcpy(&w->out[(size_t)bag * d + col], &v, 4);
	}
	bool found = false, located = false, paper = false;
	uint64_t stray = 0;
	for (int i = 0; i < w->b.nbags; i++) {
		const struct sdc_eb_bag g = sdc_eb_batch_bag(&w->b, i);
		const float *out = w->out + (size_t)i * d;
		struct sdc_eb_out_sums os;
		struct sdc_eb_verdict v;
		c->impl->out_sums(out, d, &os);
		const bool bad = sdc_eb_check(cfg, l, &os, &w->expect[i], &v);
		bool holds = false; /* does this bag carry the fault? */
		if (kind == OUT_HI || kind == OUT_LO) {
			holds = i == bag;
		} else if (kind != CLEAN) {
			for (int r = 0; r < g.len && !holds; r++)
				holds = g.idx[r] == row;
		}
		paper |= holds && paper_flags(&w->t, &g, out);
		if (kind == CLEAN) {
			w->n.clean_bags++;
			w->n.clean_fp_bags += bad;
			paper |= paper_flags(&w->t, &g, out);
			if (cfg->cls == SDC_EB_FAST && fabs(v.dc) > 0)
				w->n.fp_margin = SDC_MIN(w->n.fp_margin, v.tc / fabs(v.dc));
		}
		if (!bad)
			continue;
		if (!holds) {
			stray++;
			continue;
		}
		found = true;
		located |= v.col == col;
		if (kind == TABLE_LO && cfg->cls == SDC_EB_FAST && v.tc > 0)
			w->n.low_margin = SDC_MIN(w->n.low_margin, fabs(v.dc) / v.tc);
	}
	if (kind == TABLE_HI || kind == TABLE_LO)
		sdc_eb_element_set(l, sdc_eb_row(&w->t, row), col, before); /* repair for the next trial */
	if (out_bit >= 0) {
		w->n.bit_trials[out_bit]++;
		w->n.bit_found[out_bit] += found;
		return;
	}
	w->n.trials[kind]++;
	w->n.found[kind] += kind == CLEAN ? stray > 0 : found;
	w->n.located[kind] += located;
	w->n.paper_found[kind] += paper;
	if (kind != CLEAN)
		w->n.stray[kind] += stray;
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0;
}

static void sum_counts(const struct campaign *c, struct counts *n)
{
	counts_reset(n);
	for (int i = 0; i < c->nworkers; i++) {
		const struct counts *x = &c->ws[i].n;
		for (int k = 0; k < NKINDS; k++) {
			n->trials[k] += x->trials[k];
			n->found[k] += x->found[k];
			n->located[k] += x->located[k];
			n->paper_found[k] += x->paper_found[k];
			n->stray[k] += x->stray[k];
		}
		for (int b = 0; b < 32; b++) {
			n->bit_trials[b] += x->bit_trials[b];
			n->bit_found[b] += x->bit_found[b];
		}
		n->clean_bags += x->clean_bags;
		n->clean_fp_bags += x->clean_fp_bags;
		n->fp_margin = SDC_MIN(n->fp_margin, x->fp_margin);
		n->low_margin = SDC_MIN(n->low_margin, x->low_margin);
	}
}

/*
 * Prints one cell's Table III and returns whether its targets hold: exact class, every flip
 * found; fast class, >= 99.9% of high-bit and >= 90% of low-bit flips of quantised table elements
 * and >= 99.9% of high-bit output flips; both, no false positive.
 */
static bool print_cell(const struct campaign *c, const char *name, const struct counts *n, struct sdc_facts *out)
{
	const bool exact = c->cfg.cls == SDC_EB_EXACT;
	const int qb = c->cfg.fmt == SDC_EB_8BIT ? 8 : 4;
	printf("\n%s: %" PRIu64 " rows x %d, batches of %d bags, pooling %d (lengths %d..%d), %" PRIu64
	       " trials per column\n",
	       name, c->cfg.rows, c->cfg.d, c->cfg.batch, c->cfg.pooling, SDC_MAX(1, c->cfg.pooling - c->cfg.pooling / 2),
	       sdc_eb_max_len(&c->cfg), c->trials);
	printf("  %-22s", "");
	for (int k = TABLE_HI; k < NKINDS; k++)
		printf(" %10s", kind_names[k]);
	printf(" %10s\n", kind_names[CLEAN]);
	const char *rows[] = { "detected runs", "not detected runs", "total" };
	for (int r = 0; r < 3; r++) {
		printf("  %-22s", rows[r]);
		for (int k = 1; k <= NKINDS; k++) {
			const int kk = k % NKINDS;
			const uint64_t v = r == 0 ? n->found[kk] : r == 1 ? n->trials[kk] - n->found[kk] : n->trials[kk];
			printf(" %10" PRIu64, v);
		}
		printf("\n");
	}
	printf("  %-22s", "detected");
	for (int k = 1; k <= NKINDS; k++)
		printf(" %9.3f%%", pct(n->found[k % NKINDS], n->trials[k % NKINDS]));
	printf("\n  %-22s", "column located");
	for (int k = TABLE_HI; k < NKINDS; k++)
		printf(" %9.3f%%", pct(n->located[k], n->found[k]));
	printf(" %10s\n  %-22s", "-", "Li et al. Alg. 2 here");
	for (int k = 1; k <= NKINDS; k++)
		printf(" %9.3f%%", pct(n->paper_found[k % NKINDS], n->trials[k % NKINDS]));
	printf("\n  %-22s %10s %10s %10s %10s %10s\n", "Li et al. Table III", "99.5%", "47.0%", "-", "-", "9.5% FP");
	bool ok[NKINDS];
	double need[NKINDS];
	ok[CLEAN] = n->found[CLEAN] == 0 && n->clean_fp_bags == 0;
	for (int k = TABLE_HI; k < NKINDS; k++) {
		need[k] = exact ? 100.0 : k == TABLE_HI || k == OUT_HI ? 99.9 : k == TABLE_LO ? 90.0 : -1;
		ok[k] = need[k] < 0 || pct(n->found[k], n->trials[k]) >= need[k];
	}
	printf("  %-22s %10s %10s %10s %10s %10s\n", "target", exact ? "100%" : ">=99.9%", exact ? "100%" : ">=90%",
	       exact ? "100%" : ">=99.9%", exact ? "100%" : "reported", "0 FP");
	printf("  %-22s", "");
	bool all = true;
	for (int k = 1; k <= NKINDS; k++) {
		const int kk = k % NKINDS;
		const bool reported = !exact && kk == OUT_LO;
		printf(" %10s", reported ? "-" : ok[kk] ? "met" : "MISSED");
		all &= ok[kk];
	}
	printf("\n  (%d-bit elements: table hi = bits %d-%d, lo = bits 0-%d; output hi = fp32 bits 28-31 (sign, top "
	       "exponent), lo = bits 0-3 (lowest mantissa))\n",
	       qb, qb / 2, qb - 1, qb / 2 - 1);
	printf("  no error: trials (batches of %d bags) with any bag flagged; %" PRIu64 " clean bags checked, %" PRIu64
	       " flagged", c->cfg.batch, n->clean_bags, n->clean_fp_bags);
	if (!exact)
		printf("; threshold / |E| of a clean bag >= %.2f (the largest |E| was %.2f of the bound's sigmas);\n  found "
		       "low-bit table flips: smallest |sum difference| / threshold %.2f (below 1: the weighted sum found it)",
		       n->fp_margin, c->cfg.c_sigma / n->fp_margin, n->low_margin);
	printf("\n");
	uint64_t strays = 0;
	for (int k = TABLE_HI; k < NKINDS; k++)
		strays += n->stray[k];
	if (strays)
		printf("  %" PRIu64 " bags without the fault were flagged in faulted trials (false positives)\n", strays);
	all &= strays == 0;

	/* the cell, under its variant's name (one name, whatever it holds) */
	struct sdc_facts *cell = sdc_facts_key(out, name);
	for (int k = 0; k < NKINDS; k++) {
		struct sdc_facts *g = sdc_facts_group(cell, kind_keys[k]);
		sdc_facts_int(g, "trials", (int64_t)n->trials[k]);
		sdc_facts_int(g, "detected", (int64_t)n->found[k]);
		sdc_facts_int(g, "located", (int64_t)n->located[k]);
		sdc_facts_int(g, "li_et_al", (int64_t)n->paper_found[k]);
	}
	for (int k = TABLE_HI; k < NKINDS; k++) { /* --html: a column's misses are red where it has a target */
		struct sdc_facts *g = sdc_facts_group(cell, kind_keys[k]);
		if (need[k] < 0)
			sdc_facts_null(g, "target_percent");
		else
			sdc_facts_real(g, "target_percent", need[k]);
	}
	sdc_facts_int(cell, "clean_bags", (int64_t)n->clean_bags);
	sdc_facts_int(cell, "clean_bags_flagged", (int64_t)n->clean_fp_bags);
	if (!exact) {
		sdc_facts_real(cell, "fp_margin", isfinite(n->fp_margin) ? n->fp_margin : 0);
		sdc_facts_real(cell, "low_bit_margin", isfinite(n->low_margin) ? n->low_margin : 0);
	}
	if (c->bit_trials) {
		sdc_facts_list(cell, "output_bits");
		for (int b = 0; b < 32; b++) {
			struct sdc_facts *row = sdc_facts_row(cell, "output_bits");
			sdc_facts_int(row, "bit", b);
			sdc_facts_int(row, "trials", (int64_t)n->bit_trials[b]);
			sdc_facts_int(row, "detected", (int64_t)n->bit_found[b]);
			sdc_facts_bool(row, "target", exact || b >= 28);
		}
		printf("  output flips found per bit (bit:%%):");
		for (int b = 31; b >= 0; b--)
			printf("%s %d:%.0f", b % 8 == 7 ? "\n   " : "", b, pct(n->bit_found[b], n->bit_trials[b]));
		printf("\n");
	}
	sdc_facts_bool(cell, "targets_met", all);
	return all;
}

static const char *const format_names[] = { "8bit", "4bit", NULL };
static const char *const class_names[] = { "exact", "fast", NULL };
static const char *const dim_names[] = { "32", "64", "128", "256", NULL };

struct campaign_opts {
	uint32_t formats, classes, dims;
	int64_t trials, bit_trials, rows, pooling;
	double c_sigma;
	const char *html;
};

#define OPT(f) offsetof(struct campaign_opts, f)
static const struct sdc_option campaign_options[] = {
	{ .name = "formats", .short_name = 'f', .metavar = "LIST", .type = SDC_OPT_SET, .offset = OPT(formats),
	  .choices = format_names, .def = "8bit,4bit", .help = "row formats" },
	{ .name = "classes", .short_name = 'k', .metavar = "LIST", .type = SDC_OPT_SET, .offset = OPT(classes),
	  .choices = class_names, .def = "exact,fast", .help = "numerics classes" },
	{ .name = "dims", .short_name = 'd', .metavar = "LIST", .type = SDC_OPT_SET, .offset = OPT(dims),
	  .choices = dim_names, .def = "32,64,128,256", .help = "embedding widths" },
	{ .name = "trials", .short_name = 'n', .metavar = "N", .type = SDC_OPT_INT, .offset = OPT(trials), .def = "10000",
	  .imin = 1, .imax = 100000000,
	  .help = "trials per column: table high/low bits, output high/low bits, clean" },
	{ .name = "bit-trials", .short_name = 'b', .metavar = "N", .type = SDC_OPT_INT, .offset = OPT(bit_trials),
	  .def = "200", .imin = 0, .imax = 1000000, .help = "output flips per bit position for the per-bit table (0: skip)" },
	{ .name = "rows", .short_name = 'r', .metavar = "N", .type = SDC_OPT_INT, .offset = OPT(rows), .def = "100000",
	  .imin = 1024, .imax = 100000000, .help = "table rows (detection does not depend on the size)" },
	{ .name = "pooling", .short_name = 'p', .metavar = "N", .type = SDC_OPT_INT, .offset = OPT(pooling), .def = "100",
	  .imin = 1, .imax = SDC_EB_MAX_POOLING, .help = "mean rows per bag (the paper's)" },
	{ .name = "c-sigma", .short_name = 'C', .metavar = "X", .type = SDC_OPT_DOUBLE, .offset = OPT(c_sigma),
	  .def = SDC_XSTR(SDC_EB_C_SIGMA), .dmin = 1, .dmax = 50, .help = "fast-class threshold in standard deviations" },
	{ .name = "html", .metavar = "FILE", .type = SDC_OPT_ARG, .offset = OPT(html),
	  .help = "the tables as charts in one self-contained HTML page" },
	SDC_OPT_END,
};

static int campaign_main(struct sdc_cmd *cmd)
{
	const struct campaign_opts *o = cmd->opts;
	struct sdc_cli *cli = &cmd->cli;
	const uint32_t formats = o->formats, classes = o->classes, dims = o->dims;
	const uint64_t trials = (uint64_t)o->trials, bit_trials = (uint64_t)o->bit_trials, rows = (uint64_t)o->rows,
		       pooling = (uint64_t)o->pooling;
	const double c_sigma = o->c_sigma;
	struct sdc_run run;
	char herr[600];
	if (sdc_campaign_html_path_ok(o->html, herr, sizeof(herr)))
		return sdc_cli_bad(cli, "--html %s", herr);
	if (sdc_cli_start_run(cmd, &run, cli->have_seed ? cli->seed : 1))
		return sdc_cli_unknown(cli);
	if (run.ndevices > MAX_WORKERS)
		run.ndevices = MAX_WORKERS;
	sdc_stop_install_signals();
	struct campaign cp = { .nworkers = run.ndevices, .trials = trials, .bit_trials = bit_trials,
			       .impl = sdc_eb_find("auto") };
	cp.ws = calloc((size_t)run.ndevices, sizeof(*cp.ws));
	struct sdc_facts *out = sdc_facts_new();
	int rc = 0;
	bool targets_met = true;
	if (!cp.ws) {
		sdc_error("campaign embbag: out of memory");
		rc = -1;
	}
	printf("sdcscan campaign embbag: %d CPU%s, seed %" PRIu64 ", kernel %s, c_sigma %g\n", run.ndevices,
	       run.ndevices == 1 ? "" : "s", run.seed, cp.impl->name, c_sigma);
	printf("Each trial looks up one batch and checks every bag; a faulted trial counts as detected when the bag "
	       "holding\nthe flip fails its check, and \"Li et al. Alg. 2 here\" applies the paper's fp32 sums and "
	       "relative bound 1e-5\nto the same bags.\n");
	static const int dim_values[] = { 32, 64, 128, 256 };
	for (int f = 0; f < 2 && !rc; f++)
		for (int k = 0; k < 2 && !rc; k++)
			for (int di = 0; di < 4 && !rc; di++) {
				if (!(formats >> f & 1) || !(classes >> k & 1) || !(dims >> di & 1))
					continue;
				cp.cfg = (struct sdc_eb_cfg){ .fmt = (enum sdc_eb_format)f, .cls = (enum sdc_eb_class)k,
							      .d = dim_values[di], .rows = rows, .batch = 10,
							      .pooling = (int)pooling, .seed = run.seed,
							      .c_sigma = c_sigma };
				cp.cell = (unsigned)(f * 8 + k * 4 + di);
				for (int i = 0; i < cp.nworkers; i++) {
					release_state(&cp.ws[i]);
					counts_reset(&cp.ws[i].n);
				}
				const uint64_t jobs = trials * NKINDS + 32 * bit_trials;
				if (sdc_parallel_for(run.devices, run.ndevices, jobs, trial, &cp)) {
					sdc_error("campaign embbag: %s", cp.error[0] ? cp.error : "interrupted");
					rc = -1;
					break;
				}
				struct counts n;
				sum_counts(&cp, &n);
				char name[32];
				sdc_eb_variant_name(&cp.cfg, name, sizeof(name));
				targets_met &= print_cell(&cp, name, &n, out);
				fflush(stdout);
			}
	for (int i = 0; cp.ws && i < cp.nworkers; i++)
		release_state(&cp.ws[i]);
	rc = rc ? sdc_cli_unknown(cli) : sdc_cli_facts_end(cli, out, targets_met);
	if (o->html && sdc_facts_has(out, "targets_met") && sdc_campaign_html(o->html, "embbag", out))
		rc = sdc_cli_unknown(cli);
	sdc_facts_free(out);
	free(cp.ws);
	sdc_run_release(&run);
	return rc;
}

const struct sdc_command sdc_embbag_campaign = {
	.name = "embbag",
	.summary = "inject single-bit flips into EmbeddingBag tables and outputs and print Li et al.'s Table III "
		   "form; exit 0 every target met, 2 a target missed",
	.options = campaign_options,
	.opts_size = sizeof(struct campaign_opts),
	.common = SDC_CF_CPUS | SDC_CF_SEED | SDC_CF_JSON,
	.fn = campaign_main,
};
