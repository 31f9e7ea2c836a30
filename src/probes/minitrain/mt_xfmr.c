/*
 * The mini transformer block (model.h): pre-LN attention and MLP with residuals, trained
 * with Adam to map each synthetic sequence to a copy of itself shifted by one position. The six
 * attention GEMMs (Q, K, V projections, QK^T per head, PV per head, output projection) are
 * checked by attn_check as soon as each is computed, after the activation hook (the injection
 * point), so an INF, NaN or near-INF is located at the GEMM and step where it appeared.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/exactmath.h"
#include "probes/minitrain/mt_internal.h"

#define LR 1e-3f
#define BETA1 0.9f
#define BETA2 0.999f
#define ADAM_EPS 1e-8f
#define LN_EPS 1e-5f
#define NPARAMS 12
#define MAX_EVENTS 4

enum { PURPOSE_INIT = 1, PURPOSE_DATA = 2 };

struct xfmr {
	int B, T, D, NH, DH, F, N; /* N = B T rows */
	float *p[NPARAMS], *g[NPARAMS], *am[NPARAMS], *av[NPARAMS];
	size_t n[NPARAMS];
	float beta1_t, beta2_t;
	/* activations */
	float *x, *tgt, *xh1, *rstd1, *h, *q, *k, *v, *s, *att, *o, *y, *x1, *xh2, *rstd2, *h2, *f, *z, *x2;
	/* backward scratch */
	float *dx2, *df, *dh2, *dx1, *do_, *dq, *dk, *dv, *dp, *ds, *dh, *tmp, *tr, *tr2, *loss;
	/* host side: the batch as drawn */
	float *hx, *htgt;
};

enum { LN1_G, LN1_B, WQ, WK, WV, WO, LN2_G, LN2_B, W1, C1, W2, C2 };

static void xfmr_reset(struct sdc_mt_model *m)
{
	struct xfmr *x = m->impl;
	const struct sdc_rng r = sdc_rng_make(m->cfg.seed, SDC_RNG_PROBE_MINITRAIN, SDC_RNG_SHARED, SDC_RNG_SHARED,
					      SDC_MT_XFMR << 8 | PURPOSE_INIT);
	const float sd = 1.0f / sqrtf((float)x->D), sf = 1.0f / sqrtf((float)x->F);
	/* (on the host views: the next step takes them to the device) */
	for (int i = 0; i < NPARAMS; i++) {
		float *p = sdc_mt_host_of(m, x->p[i]);
		memset(sdc_mt_host_of(m, x->am[i]), 0, sizeof(float) * x->n[i]);
		memset(sdc_mt_host_of(m, x->av[i]), 0, sizeof(float) * x->n[i]);
		switch (i) {
		case LN1_G: case LN2_G:
			for (size_t j = 0; j < x->n[i]; j++)
				p[j] = 1.0f;
			break;
		case LN1_B: case LN2_B: case C1: case C2:
			memset(p, 0, sizeof(float) * x->n[i]);
			break;
		default:
			sdc_mt_fill_uniform(p, x->n[i], i == W2 ? sf : sd, &r, (uint64_t)i << 24);
		}
	}
	x->beta1_t = 1.0f, x->beta2_t = 1.0f;
}

/* Layer norm of each row: xh = (x - mean) / sqrt(var + eps); out = xh g + b. */
static void layer_norm(struct sdc_mt_model *m, const float *in, int rows, int d, const float *g, const float *b,
		       float *xh, float *rstd, float *out)
{
	const struct sdc_mt_op o = { .code = SDC_MT_OP_LAYER_NORM, .n = rows, .i = { rows, d }, .f = { LN_EPS }, .a = in,
				     .b = g, .c = b, .x = xh, .y = rstd, .z = out };
	sdc_mt_run(m, &o);
}

/* Gradients of g and b, and (when dx is not NULL) dx += the input's gradient. */
static void layer_norm_back(struct sdc_mt_model *m, const float *dout, const float *xh, const float *rstd,
			    const float *g, int rows, int d, float *dg, float *db, float *dx)
{
	const struct sdc_mt_op params = { .code = SDC_MT_OP_LN_BACK_PARAMS, .n = d, .i = { rows, d }, .a = dout, .b = xh,
					  .x = dg, .y = db };
	sdc_mt_run(m, &params);
	if (!dx)
		return;
	const struct sdc_mt_op in = { .code = SDC_MT_OP_LN_BACK_X, .n = rows, .i = { rows, d }, .a = dout, .b = xh,
				      .c = rstd, .d = g, .x = dx };
	sdc_mt_run(m, &in);
}

static const char *const gemm_names[6] = { "Q = h Wq", "K = h Wk", "V = h Wv", "S = Q K^T", "O = P V", "Y = O Wo" };

/* An attention GEMM: computed, offered to the injection hook, then checked. */
static void attn_gemm(struct sdc_mt_model *m, const struct sdc_mt_hooks *hk, int step, int which, int batch,
		      int head, int rows, int cols, int kk, const float *a, int lda, const float *b, int ldb, float *c,
		      int ldc)
{
	struct xfmr *x = m->impl;
	sdc_mt_gemm(m, rows, cols, kk, a, lda, b, ldb, c, ldc);
	if (hk && hk->activation) {
		/* The hook sees the output as its own dense tensor (head slices are strided). */
		static const char *const act[6] = { "act.Q", "act.K", "act.V", "act.S", "act.O", "act.Y" };
		if (ldc == cols) {
			sdc_mt_activation(m, hk, step, act[which], c, rows, cols);
		} else {
			const struct sdc_mt_op out = { .code = SDC_MT_OP_COPY2D, .n = (long)rows * cols,
						       .i = { rows, cols, ldc, cols }, .a = c, .x = x->tmp };
			const struct sdc_mt_op back = { .code = SDC_MT_OP_COPY2D, .n = (long)rows * cols,
							.i = { rows, cols, cols, ldc }, .a = x->tmp, .x = c };
			sdc_mt_run(m, &out);
			sdc_mt_activation(m, hk, step, act[which], x->tmp, rows, cols);
			sdc_mt_run(m, &back);
		}
	}
	struct sdc_attn_event ev[MAX_EVENTS];
	const int bad = sdc_mt_attn_check(m, rows, cols, kk, a, lda, b, ldb, c, ldc, ev, MAX_EVENTS);
	for (int i = 0; i < bad && i < MAX_EVENTS; i++) {
		ev[i].gemm = gemm_names[which], ev[i].gemm_index = which, ev[i].batch = batch, ev[i].head = head;
		if (hk && hk->attn)
			hk->attn(hk->ctx, step, &ev[i]);
	}
}

static void adam(struct sdc_mt_model *m, struct xfmr *x, int i)
{
	const struct sdc_mt_op o = { .code = SDC_MT_OP_ADAM, .n = (long)x->n[i],
				     .f = { LR, BETA1, BETA2, ADAM_EPS, 1.0f - BETA1, 1.0f - BETA2, 1.0f - x->beta1_t,
					    1.0f - x->beta2_t },
				     .a = x->g[i], .x = x->p[i], .y = x->am[i], .z = x->av[i] };
	sdc_mt_run(m, &o);
}

static float xfmr_step(struct sdc_mt_model *m, int step, const struct sdc_mt_hooks *hk)
{
	struct xfmr *x = m->impl;
	const int B = x->B, T = x->T, D = x->D, NH = x->NH, DH = x->DH, F = x->F, N = x->N;
	const long ND = (long)N * D;
	const float scale = 1.0f / sqrtf((float)DH);

	/* data: N(0,1)-ish inputs, target = the sequence shifted by one position */
	const struct sdc_rng r = sdc_rng_make(m->cfg.seed, SDC_RNG_PROBE_MINITRAIN, SDC_RNG_SHARED, SDC_RNG_SHARED,
					      SDC_MT_XFMR << 8 | PURPOSE_DATA);
	/* A shard is its stretch of the global batch's stream (blocks of 4 floats; N D % 4 == 0). */
	sdc_mt_fill_uniform(x->hx, (size_t)ND, 1.0f, &r, ((uint64_t)step << 24) + (uint64_t)m->cfg.shard * N * D / 4);
	for (int b = 0; b < B; b++)
		for (int t = 0; t < T; t++)
			memcpy(x->htgt + ((long)b * T + t) * D, x->hx + ((long)b * T + (t + T - 1) % T) * D,
			       sizeof(float) * D);
	sdc_mt_upload(m, x->x, x->hx, sizeof(float) * (size_t)ND);
	sdc_mt_upload(m, x->tgt, x->htgt, sizeof(float) * (size_t)ND);

	/* ---- forward ---- */
	layer_norm(m, x->x, N, D, x->p[LN1_G], x->p[LN1_B], x->xh1, x->rstd1, x->h);
	attn_gemm(m, hk, step, 0, -1, -1, N, D, D, x->h, D, x->p[WQ], D, x->q, D);
	attn_gemm(m, hk, step, 1, -1, -1, N, D, D, x->h, D, x->p[WK], D, x->k, D);
	attn_gemm(m, hk, step, 2, -1, -1, N, D, D, x->h, D, x->p[WV], D, x->v, D);
	for (int b = 0; b < B; b++)
		for (int hd = 0; hd < NH; hd++) {
			const long r0 = (long)b * T * D + (long)hd * DH;
			float *s = x->s + ((long)b * NH + hd) * T * T, *pa = x->att + ((long)b * NH + hd) * T * T;
			sdc_mt_transpose(m, T, DH, x->k + r0, D, x->tr, T); /* K_h^T: DH x T */
			attn_gemm(m, hk, step, 3, b, hd, T, T, DH, x->q + r0, D, x->tr, T, s, T);
			const struct sdc_mt_op soft = { .code = SDC_MT_OP_SOFTMAX, .n = T, .i = { T, T }, .f = { scale },
							.a = s, .x = pa };
			sdc_mt_run(m, &soft);
			attn_gemm(m, hk, step, 4, b, hd, T, DH, T, pa, T, x->v + r0, D, x->o + r0, D);
		}
	attn_gemm(m, hk, step, 5, -1, -1, N, D, D, x->o, D, x->p[WO], D, x->y, D);
	sdc_mt_add(m, x->x1, x->x, x->y, (size_t)ND);
	layer_norm(m, x->x1, N, D, x->p[LN2_G], x->p[LN2_B], x->xh2, x->rstd2, x->h2);
	sdc_mt_gemm(m, N, F, D, x->h2, D, x->p[W1], F, x->f, F);
	sdc_mt_activation(m, hk, step, "act.F", x->f, N, F);
	sdc_mt_add_bias(m, x->f, N, F, x->p[C1]);
	sdc_mt_relu(m, x->f, (size_t)N * F);
	sdc_mt_gemm(m, N, D, F, x->f, F, x->p[W2], D, x->z, D);
	sdc_mt_add_bias(m, x->z, N, D, x->p[C2]);
	/* mean squared error against the target, and its gradient */
	const float inv = 1.0f / (float)ND;
	const struct sdc_mt_op grad = { .code = SDC_MT_OP_MSE_GRAD, .n = ND, .f = { inv }, .a = x->x1, .b = x->z,
					.c = x->tgt, .x = x->x2, .y = x->dx2 };
	const struct sdc_mt_op mse = { .code = SDC_MT_OP_MSE_LOSS, .n = 1, .i = { (int)ND }, .f = { inv }, .a = x->x2,
				       .b = x->tgt, .x = x->loss };
	sdc_mt_run(m, &grad);
	sdc_mt_run(m, &mse);
	const float loss = sdc_mt_read1(m, x->loss);

	/* ---- backward ---- */
	sdc_mt_colsum(m, x->dx2, N, D, x->g[C2]);
	sdc_mt_transpose(m, N, F, x->f, F, x->tr, N);
	sdc_mt_gemm(m, F, D, N, x->tr, N, x->dx2, D, x->g[W2], D);
	sdc_mt_transpose(m, F, D, x->p[W2], D, x->tr2, F);
	sdc_mt_gemm(m, N, F, D, x->dx2, D, x->tr2, F, x->df, F);
	sdc_mt_relu_mask(m, x->df, x->f, (size_t)N * F);
	sdc_mt_colsum(m, x->df, N, F, x->g[C1]);
	sdc_mt_transpose(m, N, D, x->h2, D, x->tr, N);
	sdc_mt_gemm(m, D, F, N, x->tr, N, x->df, F, x->g[W1], F);
	sdc_mt_transpose(m, D, F, x->p[W1], F, x->tr2, D);
	sdc_mt_gemm(m, N, D, F, x->df, F, x->tr2, D, x->dh2, D);
	const struct sdc_mt_op copy = { .code = SDC_MT_OP_COPY2D, .n = ND, .i = { N, D, D, D }, .a = x->dx2, .x = x->dx1 };
	sdc_mt_run(m, &copy);
	layer_norm_back(m, x->dh2, x->xh2, x->rstd2, x->p[LN2_G], N, D, x->g[LN2_G], x->g[LN2_B], x->dx1);
	/* attention: dY = dX1 */
	sdc_mt_transpose(m, N, D, x->o, D, x->tr, N);
	sdc_mt_gemm(m, D, D, N, x->tr, N, x->dx1, D, x->g[WO], D);
	sdc_mt_transpose(m, D, D, x->p[WO], D, x->tr2, D);
	sdc_mt_gemm(m, N, D, D, x->dx1, D, x->tr2, D, x->do_, D);
	for (int b = 0; b < B; b++)
		for (int hd = 0; hd < NH; hd++) {
			const long r0 = (long)b * T * D + (long)hd * DH;
			const float *pa = x->att + ((long)b * NH + hd) * T * T;
			/* dP = dO_h V_h^T */
			sdc_mt_transpose(m, T, DH, x->v + r0, D, x->tr, T);
			sdc_mt_gemm(m, T, T, DH, x->do_ + r0, D, x->tr, T, x->dp, T);
			/* dV_h = P^T dO_h */
			sdc_mt_transpose(m, T, T, pa, T, x->tr2, T);
			sdc_mt_gemm(m, T, DH, T, x->tr2, T, x->do_ + r0, D, x->dv + r0, D);
			/* dS = P (dP - rowsum(dP P)) scale */
			const struct sdc_mt_op soft_back = { .code = SDC_MT_OP_SOFTMAX_BACK, .n = T, .i = { T, T },
							     .f = { scale }, .a = pa, .b = x->dp, .x = x->ds };
			sdc_mt_run(m, &soft_back);
			/* dQ_h = dS K_h; dK_h = dS^T Q_h */
			sdc_mt_gemm(m, T, DH, T, x->ds, T, x->k + r0, D, x->dq + r0, D);
			sdc_mt_transpose(m, T, T, x->ds, T, x->tr2, T);
			sdc_mt_gemm(m, T, DH, T, x->tr2, T, x->q + r0, D, x->dk + r0, D);
		}
	sdc_mt_transpose(m, N, D, x->h, D, x->tr, N);
	sdc_mt_gemm(m, D, D, N, x->tr, N, x->dq, D, x->g[WQ], D);
	sdc_mt_gemm(m, D, D, N, x->tr, N, x->dk, D, x->g[WK], D);
	sdc_mt_gemm(m, D, D, N, x->tr, N, x->dv, D, x->g[WV], D);
	/* dh = dQ Wq^T + dK Wk^T + dV Wv^T, summed in that order */
	sdc_mt_transpose(m, D, D, x->p[WQ], D, x->tr2, D);
	sdc_mt_gemm(m, N, D, D, x->dq, D, x->tr2, D, x->dh, D);
	sdc_mt_transpose(m, D, D, x->p[WK], D, x->tr2, D);
	sdc_mt_gemm(m, N, D, D, x->dk, D, x->tr2, D, x->tmp, D);
	sdc_mt_add(m, x->dh, x->dh, x->tmp, (size_t)ND);
	sdc_mt_transpose(m, D, D, x->p[WV], D, x->tr2, D);
	sdc_mt_gemm(m, N, D, D, x->dv, D, x->tr2, D, x->tmp, D);
	sdc_mt_add(m, x->dh, x->dh, x->tmp, (size_t)ND);
	layer_norm_back(m, x->dh, x->xh1, x->rstd1, x->p[LN1_G], N, D, x->g[LN1_G], x->g[LN1_B], NULL);
	sdc_mt_grads_ready(m, hk, step);

	/* ---- Adam ---- */
	x->beta1_t = x->beta1_t * BETA1;
	x->beta2_t = x->beta2_t * BETA2;
	for (int i = 0; i < NPARAMS; i++)
		adam(m, x, i);
	return loss;
}

static void xfmr_free(void *impl)
{
	free(impl); /* (its arrays belong to the model) */
}

int sdc_mt_xfmr_init(struct sdc_mt_model *m, char *err, size_t errlen)
{
	const struct sdc_mt_cfg *c = &m->cfg;
	if (c->batch < 1 || c->seq < 2 || c->dmodel < 2 || c->heads < 1 || c->dmodel % c->heads || c->dff < 1 ||
	    (c->nshards > 1 && ((long)c->batch * c->seq * c->dmodel) % 4)) {
		snprintf(err, errlen, "xfmr: sizes out of range (dmodel must be a multiple of heads)");
		return -1;
	}
	struct xfmr *x = calloc(1, sizeof(*x));
	if (!x)
		return snprintf(err, errlen, "out of memory"), -1;
	m->impl = x, m->free_impl = xfmr_free, m->reset = xfmr_reset, m->step = xfmr_step;
	x->B = c->batch, x->T = c->seq, x->D = c->dmodel, x->NH = c->heads, x->DH = c->dmodel / c->heads;
	x->F = c->dff, x->N = x->B * x->T;
	const int D = x->D, F = x->F, N = x->N, T = x->T;
	static const char *const names[NPARAMS] = { "ln1.g", "ln1.b", "attn.Wq", "attn.Wk", "attn.Wv", "attn.Wo",
						    "ln2.g", "ln2.b", "mlp.W1", "mlp.c1", "mlp.W2", "mlp.c2" };
	const int rows[NPARAMS] = { 1, 1, D, D, D, D, 1, 1, D, 1, F, 1 };
	const int cols[NPARAMS] = { D, D, D, D, D, D, D, D, F, F, D, D };
	bool ok = true;
	for (int i = 0; i < NPARAMS && ok; i++) {
		x->n[i] = (size_t)rows[i] * cols[i];
		ok = (x->p[i] = sdc_mt_param(m, names[i], rows[i], cols[i], &x->g[i])) != NULL;
	}
	char name[24];
	for (int i = 0; i < NPARAMS && ok; i++) {
		snprintf(name, sizeof(name), "adam.m.%s", names[i]);
		ok = (x->am[i] = sdc_mt_state(m, name, rows[i], cols[i])) != NULL;
	}
	for (int i = 0; i < NPARAMS && ok; i++) {
		snprintf(name, sizeof(name), "adam.v.%s", names[i]);
		ok = (x->av[i] = sdc_mt_state(m, name, rows[i], cols[i])) != NULL;
	}
	const size_t nd = (size_t)N * D, tt = (size_t)x->B * x->NH * T * T;
	const size_t wide = (size_t)N * (F > D ? F : D);
	float **acts[] = { &x->x, &x->tgt, &x->xh1, &x->h, &x->q, &x->k, &x->v, &x->o, &x->y, &x->x1, &x->xh2, &x->h2,
			   &x->z, &x->x2, &x->dx2, &x->dh2, &x->dx1, &x->do_, &x->dq, &x->dk, &x->dv, &x->dh };
	for (size_t i = 0; i < sizeof(acts) / sizeof(acts[0]) && ok; i++)
		ok = (*acts[i] = sdc_mt_alloc(m, nd)) != NULL;
	ok = ok && (x->rstd1 = sdc_mt_alloc(m, (size_t)N)) && (x->rstd2 = sdc_mt_alloc(m, (size_t)N)) &&
	     (x->s = sdc_mt_alloc(m, tt)) && (x->att = sdc_mt_alloc(m, tt)) && (x->f = sdc_mt_alloc(m, (size_t)N * F)) &&
	     (x->df = sdc_mt_alloc(m, (size_t)N * F)) && (x->dp = sdc_mt_alloc(m, (size_t)T * T)) &&
	     (x->ds = sdc_mt_alloc(m, (size_t)T * T)) && (x->tmp = sdc_mt_alloc(m, nd > (size_t)T * T ? nd : (size_t)T * T)) &&
	     (x->tr = sdc_mt_alloc(m, wide)) && (x->tr2 = sdc_mt_alloc(m, (size_t)D * F + (size_t)D * D + (size_t)T * T)) &&
	     (x->loss = sdc_mt_alloc(m, 1)) && (x->hx = sdc_mt_host_alloc(m, sizeof(float) * nd)) &&
	     (x->htgt = sdc_mt_host_alloc(m, sizeof(float) * nd)) && !sdc_mt_attn_reserve(m, N > D ? N : D);
	if (!ok)
		return snprintf(err, errlen, "xfmr: out of memory"), -1;
	const double proj = 2.0 * N * D * D, attn = 2.0 * x->B * x->NH * (double)T * T * x->DH;
	const double mlp = 2.0 * 2.0 * N * D * F;
	m->flops = 3.0 * (4.0 * proj + 2.0 * attn + mlp);
	return 0;
}
