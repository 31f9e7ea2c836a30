/*
 * The mini-DLRM (minitrain.h). Per step: a batch of dense features and, per table, bags of row
 * indices, all from the RNG keyed by the step; labels from a fixed rule on the dense features,
 * so the loss falls as it learns. Every loop runs in one fixed order.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/exactmath.h"
#include "kernels/mt_internal.h"

#define MAX_TABLES 8
#define LR 0.05f
#define LR_EMB 0.05f
#define ADAGRAD_EPS 1e-8f

enum { PURPOSE_INIT = 1, PURPOSE_DENSE = 2, PURPOSE_SPARSE = 3 };

struct dlrm {
	int B, D, H, E, T, R, P, TOP, NI; /* NI: interaction width, E + pairs */
	/* parameters, gradients, state */
	float *W0, *b0, *W1, *b1, *U0, *c0, *U1, *c1, *emb[MAX_TABLES], *G[MAX_TABLES];
	float *gW0, *gb0, *gW1, *gb1, *gU0, *gc0, *gU1, *gc1, *gemb[MAX_TABLES];
	/* activations and scratch */
	float *x, *y, *h1, *z0, *e[MAX_TABLES], *tin, *g1, *logit;
	float *dlogit, *dg1, *dt, *dz[MAX_TABLES + 1], *dh1, *tr, *tr2;
	uint32_t *idx[MAX_TABLES];
	int *len[MAX_TABLES], *off[MAX_TABLES];
	uint32_t *touched[MAX_TABLES];
	uint8_t *mark[MAX_TABLES];
	int ntouched[MAX_TABLES];
};

static void dlrm_reset(struct sdc_mt_model *m)
{
	struct dlrm *d = m->impl;
	const struct sdc_rng r = sdc_rng_make(m->cfg.seed, SDC_RNG_PROBE_MINITRAIN, SDC_RNG_SHARED, SDC_RNG_SHARED,
					      SDC_MT_DLRM << 8 | PURPOSE_INIT);
	/* Each tensor draws from its own stretch of blocks: 2^24 blocks apart. */
	uint64_t blk = 0;
#define INIT(p, n, s) (mt_fill_uniform(p, n, s, &r, blk), blk += 1u << 24)
	INIT(d->W0, (size_t)d->D * d->H, 1.0f / sqrtf((float)d->D));
	INIT(d->W1, (size_t)d->H * d->E, 1.0f / sqrtf((float)d->H));
	INIT(d->U0, (size_t)d->NI * d->TOP, 1.0f / sqrtf((float)d->NI));
	INIT(d->U1, (size_t)d->TOP, 1.0f / sqrtf((float)d->TOP));
	for (int t = 0; t < d->T; t++)
		INIT(d->emb[t], (size_t)d->R * d->E, 0.25f);
#undef INIT
	memset(d->b0, 0, sizeof(float) * d->H);
	memset(d->b1, 0, sizeof(float) * d->E);
	memset(d->c0, 0, sizeof(float) * d->TOP);
	d->c1[0] = 0.0f;
	for (int t = 0; t < d->T; t++) {
		memset(d->G[t], 0, sizeof(float) * (size_t)d->R * d->E);
		memset(d->gemb[t], 0, sizeof(float) * (size_t)d->R * d->E);
		memset(d->mark[t], 0, (size_t)d->R);
	}
}

/* The step's batch: dense features, labels and bags. */
static void dlrm_batch(struct sdc_mt_model *m, int step)
{
	struct dlrm *d = m->impl;
	const struct sdc_rng rd = sdc_rng_make(m->cfg.seed, SDC_RNG_PROBE_MINITRAIN, SDC_RNG_SHARED,
					       SDC_RNG_SHARED, SDC_MT_DLRM << 8 | PURPOSE_DENSE);
	mt_fill_uniform(d->x, (size_t)d->B * d->D, 1.0f, &rd, (uint64_t)step << 20);
	/* The label rule: the sign of a fixed mix of three features, which the bottom MLP can learn. */
	for (int b = 0; b < d->B; b++) {
		const float *xb = d->x + (long)b * d->D;
		d->y[b] = xb[0] + xb[1] - xb[2] * 0.5f > 0.0f ? 1.0f : 0.0f;
	}
	const struct sdc_rng rs = sdc_rng_make(m->cfg.seed, SDC_RNG_PROBE_MINITRAIN, SDC_RNG_SHARED,
					       SDC_RNG_SHARED, SDC_MT_DLRM << 8 | PURPOSE_SPARSE);
	for (int t = 0; t < d->T; t++) {
		const uint64_t base = ((uint64_t)step << 24) + ((uint64_t)t << 20);
		int o = 0;
		for (int b = 0; b < d->B; b++) {
			/* pooling lengths uniform in [1, 2P - 1]: mean P */
			const int n = 1 + (int)sdc_rng_below(&rs, base + (uint64_t)b, (uint64_t)(2 * d->P - 1));
			d->len[t][b] = n, d->off[t][b] = o;
			for (int i = 0; i < n; i++)
				d->idx[t][o + i] = (uint32_t)sdc_rng_below(&rs, base + (1u << 16) + (uint64_t)(o + i),
									   (uint64_t)d->R);
			o += n;
		}
	}
}

static float dlrm_step(struct sdc_mt_model *m, int step, const struct sdc_mt_hooks *hk)
{
	struct dlrm *d = m->impl;
	const int B = d->B, D = d->D, H = d->H, E = d->E, T = d->T, TOP = d->TOP, NI = d->NI;
	dlrm_batch(m, step);

	/* ---- forward ---- */
	mt_gemm(m, B, H, D, d->x, D, d->W0, H, d->h1, H);
	mt_activation(hk, step, "h1", d->h1, B, H);
	mt_add_bias(d->h1, B, H, d->b0);
	mt_relu(d->h1, (size_t)B * H);
	mt_gemm(m, B, E, H, d->h1, H, d->W1, E, d->z0, E);
	mt_activation(hk, step, "z0", d->z0, B, E);
	mt_add_bias(d->z0, B, E, d->b1);
	mt_relu(d->z0, (size_t)B * E);
	for (int t = 0; t < T; t++)
		for (int b = 0; b < B; b++) {
			float *eb = d->e[t] + (long)b * E;
			for (int j = 0; j < E; j++)
				eb[j] = 0.0f;
			for (int i = 0; i < d->len[t][b]; i++) {
				const float *row = d->emb[t] + (long)d->idx[t][d->off[t][b] + i] * E;
				for (int j = 0; j < E; j++)
					eb[j] = eb[j] + row[j];
			}
		}
	/* interaction: [z0, dot(v_i, v_j) for i < j] with v_0 = z0, v_1.. = pooled embeddings */
	for (int b = 0; b < B; b++) {
		const float *v[MAX_TABLES + 1];
		v[0] = d->z0 + (long)b * E;
		for (int t = 0; t < T; t++)
			v[t + 1] = d->e[t] + (long)b * E;
		float *tb = d->tin + (long)b * NI;
		memcpy(tb, v[0], sizeof(float) * E);
		int p = E;
		for (int i = 0; i <= T; i++)
			for (int j = i + 1; j <= T; j++) {
				float s = 0.0f;
				for (int q = 0; q < E; q++)
					s = s + v[i][q] * v[j][q];
				tb[p++] = s;
			}
	}
	mt_gemm(m, B, TOP, NI, d->tin, NI, d->U0, TOP, d->g1, TOP);
	mt_activation(hk, step, "g1", d->g1, B, TOP);
	mt_add_bias(d->g1, B, TOP, d->c0);
	mt_relu(d->g1, (size_t)B * TOP);
	mt_gemm(m, B, 1, TOP, d->g1, TOP, d->U1, 1, d->logit, 1);
	mt_activation(hk, step, "logit", d->logit, B, 1);

	/* logistic loss, mean over the batch: max(l, 0) - l y + log(1 + exp(-|l|)) */
	float loss = 0.0f;
	const float inv_b = 1.0f / (float)B;
	for (int b = 0; b < B; b++) {
		const float l = d->logit[b] + d->c1[0], yb = d->y[b];
		const double el = sdc_exp(-fabs((double)l));
		const float lb = (float)((double)(l > 0.0f ? l : 0.0f) - (double)l * yb + sdc_log(1.0 + el));
		loss = loss + lb;
		/* sigmoid from the same exp: l >= 0: 1 / (1 + e^-l); else e^l / (1 + e^l) */
		const float p = (float)(l >= 0.0f ? 1.0 / (1.0 + el) : el / (1.0 + el));
		d->dlogit[b] = (p - yb) * inv_b;
	}
	loss = loss * inv_b;

	/* ---- backward ---- */
	mt_gemm(m, TOP, 1, B, (mt_transpose(B, TOP, d->g1, TOP, d->tr, B), d->tr), B, d->dlogit, 1, d->gU1, 1);
	mt_colsum(d->dlogit, B, 1, d->gc1);
	mt_gemm(m, B, TOP, 1, d->dlogit, 1, d->U1, TOP, d->dg1, TOP); /* U1^T is U1 laid out as a row */
	mt_relu_mask(d->dg1, d->g1, (size_t)B * TOP);
	mt_transpose(B, NI, d->tin, NI, d->tr, B);
	mt_gemm(m, NI, TOP, B, d->tr, B, d->dg1, TOP, d->gU0, TOP);
	mt_colsum(d->dg1, B, TOP, d->gc0);
	mt_transpose(NI, TOP, d->U0, TOP, d->tr2, NI);
	mt_gemm(m, B, NI, TOP, d->dg1, TOP, d->tr2, NI, d->dt, NI);
	/* interaction backward: dv_i += g v_j, dv_j += g v_i, pairs in the forward order */
	for (int b = 0; b < B; b++) {
		const float *v[MAX_TABLES + 1];
		float *dv[MAX_TABLES + 1];
		v[0] = d->z0 + (long)b * E;
		dv[0] = d->dz[0] + (long)b * E;
		for (int t = 0; t < T; t++)
			v[t + 1] = d->e[t] + (long)b * E, dv[t + 1] = d->dz[t + 1] + (long)b * E;
		const float *tb = d->dt + (long)b * NI;
		memcpy(dv[0], tb, sizeof(float) * E);
		for (int t = 1; t <= T; t++)
			memset(dv[t], 0, sizeof(float) * E);
		int p = E;
		for (int i = 0; i <= T; i++)
			for (int j = i + 1; j <= T; j++, p++)
				for (int q = 0; q < E; q++) {
					dv[i][q] = dv[i][q] + tb[p] * v[j][q];
					dv[j][q] = dv[j][q] + tb[p] * v[i][q];
				}
	}
	/* bottom MLP */
	mt_relu_mask(d->dz[0], d->z0, (size_t)B * E);
	mt_transpose(B, H, d->h1, H, d->tr, B);
	mt_gemm(m, H, E, B, d->tr, B, d->dz[0], E, d->gW1, E);
	mt_colsum(d->dz[0], B, E, d->gb1);
	mt_transpose(H, E, d->W1, E, d->tr2, H);
	mt_gemm(m, B, H, E, d->dz[0], E, d->tr2, H, d->dh1, H);
	mt_relu_mask(d->dh1, d->h1, (size_t)B * H);
	mt_transpose(B, D, d->x, D, d->tr, B);
	mt_gemm(m, D, H, B, d->tr, B, d->dh1, H, d->gW0, H);
	mt_colsum(d->dh1, B, H, d->gb0);
	/* embedding rows: each bag's gradient added to its rows, in bag order */
	for (int t = 0; t < T; t++) {
		d->ntouched[t] = 0;
		for (int b = 0; b < B; b++) {
			const float *g = d->dz[t + 1] + (long)b * E;
			for (int i = 0; i < d->len[t][b]; i++) {
				const uint32_t row = d->idx[t][d->off[t][b] + i];
				if (!d->mark[t][row])
					d->mark[t][row] = 1, d->touched[t][d->ntouched[t]++] = row;
				float *gr = d->gemb[t] + (long)row * E;
				for (int j = 0; j < E; j++)
					gr[j] = gr[j] + g[j];
			}
		}
	}
	if (hk && hk->gradients)
		hk->gradients(hk->ctx, step);

	/* ---- update: SGD on the MLPs, Adagrad on the rows touched ---- */
	mt_sgd(d->W0, d->gW0, (size_t)D * H, LR);
	mt_sgd(d->b0, d->gb0, (size_t)H, LR);
	mt_sgd(d->W1, d->gW1, (size_t)H * E, LR);
	mt_sgd(d->b1, d->gb1, (size_t)E, LR);
	mt_sgd(d->U0, d->gU0, (size_t)NI * TOP, LR);
	mt_sgd(d->c0, d->gc0, (size_t)TOP, LR);
	mt_sgd(d->U1, d->gU1, (size_t)TOP, LR);
	mt_sgd(d->c1, d->gc1, 1, LR);
	for (int t = 0; t < T; t++)
		for (int i = 0; i < d->ntouched[t]; i++) {
			const uint32_t row = d->touched[t][i];
			float *w = d->emb[t] + (long)row * E, *s = d->G[t] + (long)row * E, *g = d->gemb[t] + (long)row * E;
			for (int j = 0; j < E; j++) {
				s[j] = s[j] + g[j] * g[j];
				w[j] = w[j] - LR_EMB * g[j] / (sqrtf(s[j]) + ADAGRAD_EPS);
				g[j] = 0.0f;
			}
			d->mark[t][row] = 0;
		}
	return loss;
}

static void dlrm_free(void *impl)
{
	struct dlrm *d = impl;
	if (!d)
		return;
	for (int t = 0; t < MAX_TABLES; t++) {
		free(d->idx[t]);
		free(d->len[t]);
		free(d->off[t]);
		free(d->touched[t]);
		free(d->mark[t]);
	}
	free(d);
}

int mt_dlrm_init(struct sdc_mt_model *m, char *err, size_t errlen)
{
	const struct sdc_mt_cfg *c = &m->cfg;
	if (c->tables < 1 || c->tables > MAX_TABLES || c->batch < 1 || c->dense < 3 || c->bottom < 1 ||
	    c->emb_dim < 1 || c->rows < 1 || c->pooling < 1 || c->top < 1) {
		snprintf(err, errlen, "dlrm: sizes out of range (tables 1..%d, dense >= 3)", MAX_TABLES);
		return -1;
	}
	struct dlrm *d = calloc(1, sizeof(*d));
	if (!d)
		return snprintf(err, errlen, "out of memory"), -1;
	m->impl = d, m->free_impl = dlrm_free, m->reset = dlrm_reset, m->step = dlrm_step;
	d->B = c->batch, d->D = c->dense, d->H = c->bottom, d->E = c->emb_dim, d->T = c->tables, d->R = c->rows;
	d->P = c->pooling, d->TOP = c->top, d->NI = d->E + (d->T + 1) * d->T / 2;
	const int B = d->B, D = d->D, H = d->H, E = d->E, T = d->T, R = d->R, TOP = d->TOP, NI = d->NI;
	bool ok = true;
#define P(field, name, r, cl) ok = ok && (d->field = mt_param(m, name, r, cl, &d->g##field))
	P(W0, "bottom.W0", D, H);
	P(b0, "bottom.b0", 1, H);
	P(W1, "bottom.W1", H, E);
	P(b1, "bottom.b1", 1, E);
	P(U0, "top.U0", NI, TOP);
	P(c0, "top.c0", 1, TOP);
	P(U1, "top.U1", TOP, 1);
	P(c1, "top.c1", 1, 1);
#undef P
	char name[24];
	for (int t = 0; t < T && ok; t++) {
		snprintf(name, sizeof(name), "emb%d", t);
		ok = (d->emb[t] = mt_param(m, name, R, E, &d->gemb[t])) != NULL;
	}
	for (int t = 0; t < T && ok; t++) {
		snprintf(name, sizeof(name), "adagrad.emb%d", t);
		ok = (d->G[t] = mt_state(m, name, R, E)) != NULL;
	}
	const int maxlen = B * (2 * d->P - 1), wide = NI > H ? (NI > D ? NI : D) : (H > D ? H : D);
	ok = ok && (d->x = mt_alloc(m, (size_t)B * D)) && (d->y = mt_alloc(m, (size_t)B)) &&
	     (d->h1 = mt_alloc(m, (size_t)B * H)) && (d->z0 = mt_alloc(m, (size_t)B * E)) &&
	     (d->tin = mt_alloc(m, (size_t)B * NI)) && (d->g1 = mt_alloc(m, (size_t)B * TOP)) &&
	     (d->logit = mt_alloc(m, (size_t)B)) && (d->dlogit = mt_alloc(m, (size_t)B)) &&
	     (d->dg1 = mt_alloc(m, (size_t)B * TOP)) && (d->dt = mt_alloc(m, (size_t)B * NI)) &&
	     (d->dh1 = mt_alloc(m, (size_t)B * H)) &&
	     (d->tr = mt_alloc(m, (size_t)B * (wide > TOP ? wide : TOP))) &&
	     (d->tr2 = mt_alloc(m, (size_t)NI * TOP + (size_t)H * E));
	for (int t = 0; t <= T && ok; t++)
		ok = (d->dz[t] = mt_alloc(m, (size_t)B * E)) != NULL;
	for (int t = 0; t < T && ok; t++) {
		ok = (d->e[t] = mt_alloc(m, (size_t)B * E)) && (d->idx[t] = malloc(sizeof(uint32_t) * maxlen)) &&
		     (d->len[t] = malloc(sizeof(int) * B)) && (d->off[t] = malloc(sizeof(int) * B)) &&
		     (d->touched[t] = malloc(sizeof(uint32_t) * (size_t)R)) && (d->mark[t] = calloc((size_t)R, 1));
	}
	if (!ok)
		return snprintf(err, errlen, "dlrm: out of memory"), -1;
	/* multiply-adds x 2: bottom, top, interaction; backward ~2x the GEMMs; pooling and updates */
	const double gemm_fwd = 2.0 * B * ((double)D * H + (double)H * E + (double)NI * TOP + TOP);
	m->flops = 3.0 * gemm_fwd + 3.0 * B * (double)(NI - E) * E + 2.0 * B * T * d->P * E;
	return 0;
}
