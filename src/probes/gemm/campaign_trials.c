/*
 * campaign gemm's trials: what runs on the workers for its tables (campaign.c). Each draws where
 * to flip from the seed (class, phase, trial), runs the gemm probe's own engine and checks on a
 * clean multiply and a faulted one, and counts what the checks found, located or missed, telling
 * a flip that must be found (it moved a value past the row's threshold, or changed an exact
 * output) from one that may be masked.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/message.h"
#include "probes/gemm/abft.h"
#include "probes/gemm/campaign.h"
#include "base/stop.h"

/* Where to flip: random from the seed, per class, phase and trial, so a campaign replays. */
static uint64_t draw(const struct campaign *c, uint32_t phase, uint64_t trial, unsigned which, uint64_t bound)
{
	struct sdc_rng r = sdc_rng_make(c->seed, SDC_RNG_PROBE_INJECT, (unsigned)c->cfg.cls, phase, 0x5000);
	return sdc_rng_below(&r, trial * 8 + which, bound);
}

static struct worker_state *state(struct campaign *c, int worker)
{
	struct worker_state *w = &c->ws[worker];
	if (w->ready)
		return w;
	char err[256];
	if (sdc_gemm_init(&w->g, &c->cfg, err, sizeof(err))) {
		snprintf(c->error, sizeof(c->error), "%s", err);
		sdc_stop_request();
		return NULL;
	}
	w->clean_c = malloc(w->g.c_bytes);
	w->clean_e = malloc((size_t)w->g.cfg.m * sizeof(double));
	if (!w->clean_c || !w->clean_e) {
		free(w->clean_c);
		free(w->clean_e);
		snprintf(c->error, sizeof(c->error), "out of memory");
		sdc_stop_request();
		sdc_gemm_release(&w->g);
		return NULL;
	}
	w->ready = true;
	return w;
}

static double value_of(const struct sdc_gemm *g, const void *elem)
{
	if (g->cfg.cls == SDC_GEMM_INT8) {
		int32_t v;
		memcpy(&v, elem, 4);
		return v;
	}
	if (g->csz == 4) {
		float v;
		memcpy(&v, elem, 4);
		return v;
	}
	double v;
	memcpy(&v, elem, 8);
	return v;
}

/* Flips one bit of a C element; returns by how much its value moved (INF when it left the finite). */
static double flip(const struct sdc_gemm *g, void *elem, int bits, int bit)
{
	const double before = g ? value_of(g, elem) : 0;
	uint64_t v = 0;
	memcpy(&v, elem, (size_t)bits / 8);
	v ^= 1ull << bit;
	memcpy(elem, &v, (size_t)bits / 8);
	if (!g)
		return 0;
	const double after = value_of(g, elem);
	return isfinite(after) ? fabs(after - before) : INFINITY;
}

/*
 * Whether a move of C[i][j] by delta must be found: exact class, any move; fast class, a move of
 * a data element larger than the row's threshold plus its clean verification difference, which
 * by the triangle inequality leaves |E| above the threshold whatever the rounding did.
 */
static bool must_find(struct sdc_gemm *g, int i, int j, double delta, double clean_e)
{
	if (!sdc_gemm_is_fast(g->cfg.cls))
		return delta > 0;
	return j < g->cfg.n && delta > g->thr[i] + fabs(clean_e);
}

/*
 * Whether the checks must find a flip in B's column bj, with the output recomputed: exact class,
 * any change of C; fast class, a data element of column bj moved by more than its row's threshold
 * plus clean difference (only that column changes: each C element reads one column of B).
 */
static bool b_must_find(struct sdc_gemm *g, const struct worker_state *w, int64_t bj, int64_t data_cols)
{
	if (!sdc_gemm_is_fast(g->cfg.cls))
		return memcmp(g->c, w->clean_c, g->c_bytes) != 0;
	if (bj >= data_cols)
		return false;
	for (int i = 0; i < g->cfg.m; i++) {
		int bits;
		char *now = sdc_gemm_element(g, 'C', i, bj, &bits);
		const char *was = (const char *)w->clean_c + (now - (char *)g->c);
		const double a = value_of(g, now), b = value_of(g, was);
		const double delta = isfinite(a) ? fabs(a - b) : INFINITY;
		if (must_find(g, i, (int)bj, delta, w->clean_e[i]))
			return true;
	}
	return false;
}

static double clean_difference(struct sdc_gemm *g, int i)
{
	double e, cs;
	sdc_gemm_row_difference(g, i, &e, &cs, NULL, NULL);
	return e;
}

/* One Table II trial: a clean check, a flip in C, a flip in B. */
void sdc_gemm_campaign_table2_trial(void *arg, int worker, uint64_t trial)
{
	struct campaign *c = arg;
	struct worker_state *w = state(c, worker);
	if (!w)
		return;
	struct sdc_gemm *g = &w->g;
	sdc_gemm_load(g, trial);
	sdc_gemm_multiply(g);
	memcpy(w->clean_c, g->c, g->c_bytes);

	const int fp = sdc_gemm_check(g);
	if (sdc_gemm_is_fast(g->cfg.cls)) {
		for (int i = 0; i < g->cfg.m; i++) {
			double e, cs, e2, cs2;
			sdc_gemm_row_difference(g, i, &e, &cs, &e2, &cs2);
			w->clean_e[i] = e;
			const double m1 = e != 0 ? g->thr[i] / fabs(e) : INFINITY;
			const double m2 = e2 != 0 ? g->thr2[i] / fabs(e2) : INFINITY;
			w->n.min_margin[g->dist] = SDC_MIN(w->n.min_margin[g->dist], SDC_MIN(m1, m2));
		}
	}
	w->n.clean_trials++;
	w->n.clean_rows += (uint64_t)g->cfg.m;
	w->n.clean_fp_rows += (uint64_t)fp;
	w->n.clean_fp_trials += fp > 0;

	/* C: any element of the extended output, checksum columns included (Li et al.'s C_temp). */
	int64_t rows, cols, data_cols;
	int bits;
	sdc_gemm_dims(g, 'C', &rows, &cols, &data_cols);
	const int64_t ci = (int64_t)draw(c, 1, trial, 0, (uint64_t)rows), cj = (int64_t)draw(c, 1, trial, 1, (uint64_t)cols);
	void *e = sdc_gemm_element(g, 'C', ci, cj, &bits);
	const int cbit = (int)draw(c, 1, trial, 2, (uint64_t)bits);
	const double ce = sdc_gemm_is_fast(g->cfg.cls) ? w->clean_e[ci] : 0;
	const bool sig = must_find(g, (int)ci, (int)cj, flip(g, e, bits, cbit), ce);
	const int nbad = sdc_gemm_check(g);
	w->n.c_trials++;
	w->n.c_data += cj < data_cols;
	w->n.c_significant += sig;
	if (nbad) {
		w->n.c_detected++;
		w->n.c_significant_detected += sig;
		bool located = false;
		for (int r = 0; r < nbad; r++)
			located |= g->bad[r].row == ci && g->bad[r].col == cj;
		w->n.c_located += located && cj < data_cols;
	}
	flip(NULL, e, bits, cbit);

	/* B: any element after encoding (checksum columns included); the GEMM runs on it. */
	sdc_gemm_dims(g, 'B', &rows, &cols, &data_cols);
	const int64_t bp = (int64_t)draw(c, 2, trial, 0, (uint64_t)rows), bj = (int64_t)draw(c, 2, trial, 1, (uint64_t)cols);
	e = sdc_gemm_element(g, 'B', bp, bj, &bits);
	const int bbit = (int)draw(c, 2, trial, 2, (uint64_t)bits);
	flip(NULL, e, bits, bbit);
	sdc_gemm_multiply(g);
	w->n.b_trials++;
	const bool digest = !sdc_gemm_b_intact(g); /* the probe's at-rest check, after every GEMM */
	const bool b_sig = b_must_find(g, w, bj, data_cols);
	const bool checks = sdc_gemm_check(g) > 0;
	w->n.b_digest += digest;
	w->n.b_significant += b_sig;
	w->n.b_significant_detected += b_sig && checks;
	if (checks)
		w->n.b_detected++;
	else if (!memcmp(g->c, w->clean_c, g->c_bytes))
		w->n.b_masked++; /* the flip did not change a single bit of the output */
	else
		w->n.b_missed++;
	flip(NULL, e, bits, bbit);
}

/* Per-bit table: `bit_trials` flips of one bit position in C data elements, per distribution. */
void sdc_gemm_campaign_bits_job(void *arg, int worker, uint64_t job)
{
	struct campaign *c = arg;
	struct worker_state *w = state(c, worker);
	if (!w)
		return;
	struct sdc_gemm *g = &w->g;
	/* Job = one operand set of one distribution; it flips every bit position a few times. */
	const uint64_t per_set = 8;
	const uint64_t sets_per_dist = (c->bit_trials + per_set - 1) / per_set;
	const int d = (int)(job / sets_per_dist);
	sdc_gemm_load(g, job * NBURN_DISTS + (uint64_t)d); /* set % 4 picks pool d */
	sdc_gemm_multiply(g);
	const int dist = g->dist;
	for (int bit = 0; bit < c->bit_width; bit++) {
		for (uint64_t t = 0; t < per_set; t++) {
			if ((job % sets_per_dist) * per_set + t >= c->bit_trials)
				break;
			const uint64_t trial = (job * 64 + (uint64_t)bit) * per_set + t;
			int bits;
			const int64_t i = (int64_t)draw(c, 3, trial, 0, (uint64_t)g->cfg.m);
			const int64_t j = (int64_t)draw(c, 3, trial, 1, (uint64_t)g->cfg.n);
			void *e = sdc_gemm_element(g, 'C', i, j, &bits);
			struct sdc_gemm_bad_row bad;
			const double ce = clean_difference(g, (int)i);
			const bool sig = must_find(g, (int)i, (int)j, flip(g, e, bits, bit), ce);
			const bool found = !sdc_gemm_check_row(g, (int)i, &bad);
			w->bits->trials[dist][bit]++;
			w->bits->detected[dist][bit] += found;
			w->bits->sig_trials[dist][bit] += sig;
			w->bits->sig_detected[dist][bit] += sig && found;
			flip(NULL, e, bits, bit);
		}
	}
}

/* Tightness: threshold and actual verification difference of every row, clean. */
void sdc_gemm_campaign_tight_job(void *arg, int worker, uint64_t job)
{
	struct campaign *c = arg;
	struct worker_state *w = state(c, worker);
	if (!w)
		return;
	struct sdc_gemm *g = &w->g;
	sdc_gemm_load(g, job);
	sdc_gemm_multiply(g);
	for (int i = 0; i < g->cfg.m; i++) {
		double e, cs;
		sdc_gemm_row_difference(g, i, &e, &cs, NULL, NULL);
		e = fabs(e);
		w->sum_e += e;
		w->max_e = SDC_MAX(w->max_e, e);
		w->sum_t += g->thr[i];
		if (e > 0)
			w->min_ratio = SDC_MIN(w->min_ratio, g->thr[i] / e);
		w->below += e > g->thr[i];
		w->rows++;
	}
}

static void release_states(struct campaign *c)
{
	for (int i = 0; i < c->nworkers; i++) {
		if (c->ws[i].ready) {
			sdc_gemm_release(&c->ws[i].g);
			free(c->ws[i].clean_c);
			free(c->ws[i].clean_e);
		}
		c->ws[i].ready = false;
	}
}

int sdc_gemm_campaign_run_phase(struct campaign *c, const struct sdc_run *run, uint64_t jobs, sdc_job_fn fn)
{
	int rc = sdc_parallel_for(run->devices, run->ndevices, jobs, fn, c);
	release_states(c);
	if (rc || c->error[0]) {
		sdc_error("campaign: %s", c->error[0] ? c->error : "interrupted");
		return -1;
	}
	return 0;
}
