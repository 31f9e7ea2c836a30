/*
 * The mini-DLRM (model.h). Per step: a batch of dense features and, per table, bags of row
 * indices, all from the RNG keyed by the step; labels from a fixed rule on the dense features,
 * so the loss falls as it learns. Every loop runs in one fixed order.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/exactmath.h"
#include "probes/minitrain/mt_internal.h"

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
	/* activations and scratch, where the steps compute: e holds the T tables' pooled bags (B x E
	 * each) end to end, dz the gradients of z0 and of each table's bags */
	float *x, *y, *h1, *z0, *e, *tin, *g1, *logit, *loss;
	float *dlogit, *dg1, *dt, *dz, *dh1, *tr, *tr2;
	/* the batch's bags (device copies of the host's), each table's rows touched (kept for the
	 * update), and one table's gradient lists (rstart, bags: the bags of touched row i, in order) */
	int32_t *idx[MAX_TABLES], *off[MAX_TABLES], *len[MAX_TABLES], *touched[MAX_TABLES], *rstart, *bags;
	int ntouched[MAX_TABLES];
	/* host side: the batch as drawn, and the lists' scratch */
	float *hx, *hy;
	int32_t *hidx[MAX_TABLES], *hoff[MAX_TABLES], *hlen[MAX_TABLES], *htouched, *hpos, *hstart, *hbags;
	uint8_t *mark;
};

static void dlrm_reset(struct sdc_mt_model *m)
{
	struct dlrm *d = m->impl;
	const struct sdc_rng r = sdc_rng_make(m->cfg.seed, SDC_RNG_PROBE_MINITRAIN, SDC_RNG_SHARED, SDC_RNG_SHARED,
					      SDC_MT_DLRM << 8 | PURPOSE_INIT);
	/* Each tensor draws from its own stretch of blocks: 2^24 blocks apart. */
	uint64_t blk = 0;
	/* (on the host views: the next step takes them to the device) */
#define INIT(p, n, s) (sdc_mt_fill_uniform(sdc_mt_host_of(m, p), n, s, &r, blk), blk += 1u << 24)
	INIT(d->W0, (size_t)d->D * d->H, 1.0f / sqrtf((float)d->D));
	INIT(d->W1, (size_t)d->H * d->E, 1.0f / sqrtf((float)d->H));
	INIT(d->U0, (size_t)d->NI * d->TOP, 1.0f / sqrtf((float)d->NI));
	INIT(d->U1, (size_t)d->TOP, 1.0f / sqrtf((float)d->TOP));
	for (int t = 0; t < d->T; t++)
		INIT(d->emb[t], (size_t)d->R * d->E, 0.25f);
#undef INIT
	memset(sdc_mt_host_of(m, d->b0), 0, sizeof(float) * d->H);
	memset(sdc_mt_host_of(m, d->b1), 0, sizeof(float) * d->E);
	memset(sdc_mt_host_of(m, d->c0), 0, sizeof(float) * d->TOP);
	sdc_mt_host_of(m, d->c1)[0] = 0.0f;
	for (int t = 0; t < d->T; t++) {
		memset(sdc_mt_host_of(m, d->G[t]), 0, sizeof(float) * (size_t)d->R * d->E);
		memset(sdc_mt_host_of(m, d->gemb[t]), 0, sizeof(float) * (size_t)d->R * d->E);
	}
	memset(d->mark, 0, (size_t)d->R);
}

/* The step's batch: dense features, labels and bags. */
static void dlrm_batch(struct sdc_mt_model *m, int step)
{
	struct dlrm *d = m->impl;
	const struct sdc_rng rd = sdc_rng_make(m->cfg.seed, SDC_RNG_PROBE_MINITRAIN, SDC_RNG_SHARED,
					       SDC_RNG_SHARED, SDC_MT_DLRM << 8 | PURPOSE_DENSE);
	sdc_mt_fill_uniform(d->hx, (size_t)d->B * d->D, 1.0f, &rd, (uint64_t)step << 20);
	/* The label rule: the sign of a fixed mix of three features, which the bottom MLP can learn. */
	for (int b = 0; b < d->B; b++) {
		const float *xb = d->hx + (long)b * d->D;
		d->hy[b] = xb[0] + xb[1] - xb[2] * 0.5f > 0.0f ? 1.0f : 0.0f;
	}
	sdc_mt_upload(m, d->x, d->hx, sizeof(float) * (size_t)d->B * d->D);
	sdc_mt_upload(m, d->y, d->hy, sizeof(float) * (size_t)d->B);
	const struct sdc_rng rs = sdc_rng_make(m->cfg.seed, SDC_RNG_PROBE_MINITRAIN, SDC_RNG_SHARED,
					       SDC_RNG_SHARED, SDC_MT_DLRM << 8 | PURPOSE_SPARSE);
	for (int t = 0; t < d->T; t++) {
		const uint64_t base = ((uint64_t)step << 24) + ((uint64_t)t << 20);
		int o = 0;
		for (int b = 0; b < d->B; b++) {
			/* pooling lengths uniform in [1, 2P - 1]: mean P */
			const int n = 1 + (int)sdc_rng_below(&rs, base + (uint64_t)b, (uint64_t)(2 * d->P - 1));
			d->hlen[t][b] = n, d->hoff[t][b] = o;
			for (int i = 0; i < n; i++)
				d->hidx[t][o + i] = (int32_t)sdc_rng_below(&rs, base + (1u << 16) + (uint64_t)(o + i),
									   (uint64_t)d->R);
			o += n;
		}
		sdc_mt_upload(m, d->idx[t], d->hidx[t], sizeof(int32_t) * (size_t)o);
		sdc_mt_upload(m, d->off[t], d->hoff[t], sizeof(int32_t) * (size_t)d->B);
		sdc_mt_upload(m, d->len[t], d->hlen[t], sizeof(int32_t) * (size_t)d->B);
	}
}

/*
 * Table t's rows the batch touched, in the order first touched (kept for the update), and for each
 * the bags that hold it, in bag order (a row twice in a bag: twice), so the gradient kernel adds a
 * row's bags in the order the bags come.
 */
static void dlrm_touched(struct sdc_mt_model *m, int t)
{
	struct dlrm *d = m->impl;
	int nt = 0, total = 0;
	for (int b = 0; b < d->B; b++)
		for (int i = 0; i < d->hlen[t][b]; i++) {
			const int32_t row = d->hidx[t][d->hoff[t][b] + i];
			if (!d->mark[row])
				d->mark[row] = 1, d->hpos[row] = nt, d->htouched[nt] = row, d->hstart[++nt] = 0;
			d->hstart[d->hpos[row] + 1]++;
			total++;
		}
	d->hstart[0] = 0;
	for (int i = 0; i < nt; i++)
		d->hstart[i + 1] += d->hstart[i];
	/* (hpos becomes each row's next free place in hbags) */
	for (int i = 0; i < nt; i++)
		d->hpos[d->htouched[i]] = d->hstart[i];
	for (int b = 0; b < d->B; b++)
		for (int i = 0; i < d->hlen[t][b]; i++)
			d->hbags[d->hpos[d->hidx[t][d->hoff[t][b] + i]]++] = b;
	for (int i = 0; i < nt; i++)
		d->mark[d->htouched[i]] = 0;
	d->ntouched[t] = nt;
	sdc_mt_upload(m, d->touched[t], d->htouched, sizeof(int32_t) * (size_t)nt);
	sdc_mt_upload(m, d->rstart, d->hstart, sizeof(int32_t) * (size_t)(nt + 1));
	sdc_mt_upload(m, d->bags, d->hbags, sizeof(int32_t) * (size_t)total);
}

static float dlrm_step(struct sdc_mt_model *m, int step, const struct sdc_mt_hooks *hk)
{
	struct dlrm *d = m->impl;
	const int B = d->B, D = d->D, H = d->H, E = d->E, T = d->T, TOP = d->TOP, NI = d->NI;
	const long BE = (long)B * E;
	dlrm_batch(m, step);

	/* ---- forward ---- */
	sdc_mt_gemm(m, B, H, D, d->x, D, d->W0, H, d->h1, H);
	sdc_mt_activation(m, hk, step, "h1", d->h1, B, H);
	sdc_mt_add_bias(m, d->h1, B, H, d->b0);
	sdc_mt_relu(m, d->h1, (size_t)B * H);
	sdc_mt_gemm(m, B, E, H, d->h1, H, d->W1, E, d->z0, E);
	sdc_mt_activation(m, hk, step, "z0", d->z0, B, E);
	sdc_mt_add_bias(m, d->z0, B, E, d->b1);
	sdc_mt_relu(m, d->z0, (size_t)B * E);
	/* each bag: its rows summed in the bag's order, from +0 */
	for (int t = 0; t < T; t++) {
		const struct sdc_mt_op pool = { .code = SDC_MT_OP_EMB_POOL, .n = BE, .i = { B, E }, .a = d->emb[t],
						.ia = d->idx[t], .ib = d->off[t], .ic = d->len[t], .x = d->e + t * BE };
		sdc_mt_run(m, &pool);
	}
	/* interaction: [z0, dot(v_i, v_j) for i < j] with v_0 = z0, v_1.. = pooled embeddings */
	const struct sdc_mt_op inter = { .code = SDC_MT_OP_INTERACT, .n = (long)B * NI, .i = { B, E, T, NI }, .a = d->z0,
					 .b = d->e, .x = d->tin };
	sdc_mt_run(m, &inter);
	sdc_mt_gemm(m, B, TOP, NI, d->tin, NI, d->U0, TOP, d->g1, TOP);
	sdc_mt_activation(m, hk, step, "g1", d->g1, B, TOP);
	sdc_mt_add_bias(m, d->g1, B, TOP, d->c0);
	sdc_mt_relu(m, d->g1, (size_t)B * TOP);
	sdc_mt_gemm(m, B, 1, TOP, d->g1, TOP, d->U1, 1, d->logit, 1);
	sdc_mt_activation(m, hk, step, "logit", d->logit, B, 1);

	/* logistic loss, mean over the batch, and each logit's gradient */
	const struct sdc_mt_op logistic = { .code = SDC_MT_OP_LOGISTIC, .n = 1, .i = { B }, .a = d->logit, .b = d->y,
					    .c = d->c1, .x = d->dlogit, .y = d->loss };
	sdc_mt_run(m, &logistic);
	const float loss = sdc_mt_read1(m, d->loss);

	/* ---- backward ---- */
	sdc_mt_transpose(m, B, TOP, d->g1, TOP, d->tr, B);
	sdc_mt_gemm(m, TOP, 1, B, d->tr, B, d->dlogit, 1, d->gU1, 1);
	sdc_mt_colsum(m, d->dlogit, B, 1, d->gc1);
	sdc_mt_gemm(m, B, TOP, 1, d->dlogit, 1, d->U1, TOP, d->dg1, TOP); /* U1^T is U1 laid out as a row */
	sdc_mt_relu_mask(m, d->dg1, d->g1, (size_t)B * TOP);
	sdc_mt_transpose(m, B, NI, d->tin, NI, d->tr, B);
	sdc_mt_gemm(m, NI, TOP, B, d->tr, B, d->dg1, TOP, d->gU0, TOP);
	sdc_mt_colsum(m, d->dg1, B, TOP, d->gc0);
	sdc_mt_transpose(m, NI, TOP, d->U0, TOP, d->tr2, NI);
	sdc_mt_gemm(m, B, NI, TOP, d->dg1, TOP, d->tr2, NI, d->dt, NI);
	/* interaction backward: dv_i += g v_j, dv_j += g v_i, pairs in the forward order */
	const struct sdc_mt_op inter_back = { .code = SDC_MT_OP_INTERACT_BACK, .n = (T + 1) * BE, .i = { B, E, T, NI },
					      .a = d->z0, .b = d->e, .c = d->dt, .x = d->dz };
	sdc_mt_run(m, &inter_back);
	/* bottom MLP */
	sdc_mt_relu_mask(m, d->dz, d->z0, (size_t)BE);
	sdc_mt_transpose(m, B, H, d->h1, H, d->tr, B);
	sdc_mt_gemm(m, H, E, B, d->tr, B, d->dz, E, d->gW1, E);
	sdc_mt_colsum(m, d->dz, B, E, d->gb1);
	sdc_mt_transpose(m, H, E, d->W1, E, d->tr2, H);
	sdc_mt_gemm(m, B, H, E, d->dz, E, d->tr2, H, d->dh1, H);
	sdc_mt_relu_mask(m, d->dh1, d->h1, (size_t)B * H);
	sdc_mt_transpose(m, B, D, d->x, D, d->tr, B);
	sdc_mt_gemm(m, D, H, B, d->tr, B, d->dh1, H, d->gW0, H);
	sdc_mt_colsum(m, d->dh1, B, H, d->gb0);
	/* embedding rows: each bag's gradient added to its rows, in bag order */
	for (int t = 0; t < T; t++) {
		dlrm_touched(m, t);
		const struct sdc_mt_op grad = { .code = SDC_MT_OP_EMB_GRAD, .n = (long)d->ntouched[t] * E, .i = { E },
						.a = d->dz + (t + 1) * BE, .ia = d->rstart, .ib = d->touched[t],
						.ic = d->bags, .x = d->gemb[t] };
		sdc_mt_run(m, &grad);
	}
	sdc_mt_grads_ready(m, hk, step);

	/* ---- update: SGD on the MLPs, Adagrad on the rows touched (their gradients zeroed) ---- */
	sdc_mt_sgd(m, d->W0, d->gW0, (size_t)D * H, LR);
	sdc_mt_sgd(m, d->b0, d->gb0, (size_t)H, LR);
	sdc_mt_sgd(m, d->W1, d->gW1, (size_t)H * E, LR);
	sdc_mt_sgd(m, d->b1, d->gb1, (size_t)E, LR);
	sdc_mt_sgd(m, d->U0, d->gU0, (size_t)NI * TOP, LR);
	sdc_mt_sgd(m, d->c0, d->gc0, (size_t)TOP, LR);
	sdc_mt_sgd(m, d->U1, d->gU1, (size_t)TOP, LR);
	sdc_mt_sgd(m, d->c1, d->gc1, 1, LR);
	for (int t = 0; t < T; t++) {
		const struct sdc_mt_op ada = { .code = SDC_MT_OP_ADAGRAD, .n = (long)d->ntouched[t] * E, .i = { E },
					       .f = { LR_EMB, ADAGRAD_EPS }, .ia = d->touched[t], .x = d->emb[t],
					       .y = d->G[t], .z = d->gemb[t] };
		sdc_mt_run(m, &ada);
	}
	return loss;
}

static void dlrm_free(void *impl)
{
	struct dlrm *d = impl;
	if (!d)
		return;
	free(d); /* (its arrays belong to the model) */
}

int sdc_mt_dlrm_init(struct sdc_mt_model *m, char *err, size_t errlen)
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
#define P(field, name, r, cl) ok = ok && (d->field = sdc_mt_param(m, name, r, cl, &d->g##field))
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
		ok = (d->emb[t] = sdc_mt_param(m, name, R, E, &d->gemb[t])) != NULL;
	}
	for (int t = 0; t < T && ok; t++) {
		snprintf(name, sizeof(name), "adagrad.emb%d", t);
		ok = (d->G[t] = sdc_mt_state(m, name, R, E)) != NULL;
	}
	const int maxlen = B * (2 * d->P - 1), wide = NI > H ? (NI > D ? NI : D) : (H > D ? H : D);
	ok = ok && (d->x = sdc_mt_alloc(m, (size_t)B * D)) && (d->y = sdc_mt_alloc(m, (size_t)B)) &&
	     (d->h1 = sdc_mt_alloc(m, (size_t)B * H)) && (d->z0 = sdc_mt_alloc(m, (size_t)B * E)) &&
	     (d->e = sdc_mt_alloc(m, (size_t)T * B * E)) && (d->dz = sdc_mt_alloc(m, (size_t)(T + 1) * B * E)) &&
	     (d->tin = sdc_mt_alloc(m, (size_t)B * NI)) && (d->g1 = sdc_mt_alloc(m, (size_t)B * TOP)) &&
	     (d->logit = sdc_mt_alloc(m, (size_t)B)) && (d->loss = sdc_mt_alloc(m, 1)) && (d->dlogit = sdc_mt_alloc(m, (size_t)B)) &&
	     (d->dg1 = sdc_mt_alloc(m, (size_t)B * TOP)) && (d->dt = sdc_mt_alloc(m, (size_t)B * NI)) &&
	     (d->dh1 = sdc_mt_alloc(m, (size_t)B * H)) &&
	     (d->tr = sdc_mt_alloc(m, (size_t)B * (wide > TOP ? wide : TOP))) &&
	     (d->tr2 = sdc_mt_alloc(m, (size_t)NI * TOP + (size_t)H * E)) &&
	     (d->rstart = sdc_mt_alloc_i32(m, (size_t)maxlen + 1)) && (d->bags = sdc_mt_alloc_i32(m, (size_t)maxlen)) &&
	     (d->hx = sdc_mt_host_alloc(m, sizeof(float) * (size_t)B * D)) && (d->hy = sdc_mt_host_alloc(m, sizeof(float) * B)) &&
	     (d->htouched = sdc_mt_host_alloc(m, sizeof(int32_t) * (size_t)maxlen)) &&
	     (d->hpos = sdc_mt_host_alloc(m, sizeof(int32_t) * (size_t)R)) &&
	     (d->hstart = sdc_mt_host_alloc(m, sizeof(int32_t) * ((size_t)maxlen + 1))) &&
	     (d->hbags = sdc_mt_host_alloc(m, sizeof(int32_t) * (size_t)maxlen)) && (d->mark = sdc_mt_host_alloc(m, (size_t)R));
	for (int t = 0; t < T && ok; t++) {
		ok = (d->idx[t] = sdc_mt_alloc_i32(m, (size_t)maxlen)) && (d->off[t] = sdc_mt_alloc_i32(m, (size_t)B)) &&
		     (d->len[t] = sdc_mt_alloc_i32(m, (size_t)B)) && (d->touched[t] = sdc_mt_alloc_i32(m, (size_t)maxlen)) &&
		     (d->hidx[t] = sdc_mt_host_alloc(m, sizeof(int32_t) * (size_t)maxlen)) &&
		     (d->hoff[t] = sdc_mt_host_alloc(m, sizeof(int32_t) * (size_t)B)) &&
		     (d->hlen[t] = sdc_mt_host_alloc(m, sizeof(int32_t) * (size_t)B));
	}
	if (!ok)
		return snprintf(err, errlen, "dlrm: out of memory"), -1;
	/* multiply-adds x 2: bottom, top, interaction; backward ~2x the GEMMs; pooling and updates */
	const double gemm_fwd = 2.0 * B * ((double)D * H + (double)H * E + (double)NI * TOP + TOP);
	m->flops = 3.0 * gemm_fwd + 3.0 * B * (double)(NI - E) * E + 2.0 * B * T * d->P * E;
	return 0;
}
