/*
 * minitrain's operations (probes/minitrain/mt_ops.h) do not depend on the order their threads
 * run in: every operation, on random data, gives the same bits with its threads in order (the
 * CPU), reversed and shuffled (a GPU runs them in any order), and the CPU's runner
 * (sdc_mt_op_range, which takes a row of threads at once with the loops interchanged) gives the
 * bits of the threads one by one. A thread that read another thread's output would show here; the
 * harness's own check runs such an operation and must see it move. (That the operations
 * equal the models' arithmetic is the golden suite's check: the shipped trajectories were recorded
 * before these functions existed.)
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "probes/minitrain/mt_ops.h"

#define NF 4096 /* floats in each buffer */
#define ND 512  /* doubles */
#define NI 256  /* ints */

struct arena {
	float in[4][NF], out[3][NF];
	int32_t idx[3][NI];
	double din[ND], dout[ND];
};

static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 8;
}

/* Full 24-bit significands over eight binades: sums of them round, so a changed order shows. */
static float rnd(uint32_t *s)
{
	const float scale = (float)(1u << (lcg(s) % 8)) * 0x1p-25f;
	return (float)((int)lcg(s) - (1 << 23)) * scale;
}

/* The op's pointers into arena r. */
static struct sdc_mt_op bind(struct sdc_mt_op o, struct arena *r)
{
	o.a = r->in[0], o.b = r->in[1], o.c = r->in[2], o.d = r->in[3];
	o.x = r->out[0], o.y = r->out[1], o.z = r->out[2];
	o.ia = r->idx[0], o.ib = r->idx[1], o.ic = r->idx[2];
	o.da = r->din, o.db = r->dout;
	return o;
}

typedef void (*thread_fn)(const struct sdc_mt_op *o, long t);

static void op_thread(const struct sdc_mt_op *o, long t)
{
	sdc_mt_op_thread(o, t);
}

/* Runs o's threads in order `how` (0 forward, 1 reverse, 2 shuffled; 5 the CPU's runner, threads
 * taken in ranges; 6 the same in two ranges split at an odd place) on a copy of base. */
static void run(thread_fn fn, struct sdc_mt_op o, const struct arena *base, struct arena *r, int how, uint32_t seed)
{
	memcpy(r, base, sizeof(*r));
	o = bind(o, r);
	if (how == 5) {
		sdc_mt_op_run_host(&o);
		return;
	}
	if (how == 6) {
		const long cut = o.n / 3 + (o.n > 2);
		sdc_mt_op_range(&o, cut, o.n);
		sdc_mt_op_range(&o, 0, cut);
		return;
	}
	long *order = malloc(sizeof(long) * (size_t)o.n);
	for (long t = 0; t < o.n; t++)
		order[t] = how == 1 ? o.n - 1 - t : t;
	for (long t = o.n - 1; how == 2 && t > 0; t--) {
		const long j = (long)(lcg(&seed) % (uint32_t)(t + 1)), v = order[t];
		order[t] = order[j], order[j] = v;
	}
	for (long t = 0; t < o.n; t++)
		fn(&o, order[t]);
	free(order);
}

/* 0: every order gave the bits of the forward one and the op wrote something (da is an output of
 * attn_asums); else what moved. */
static int order_free(thread_fn fn, struct sdc_mt_op o, const struct arena *base, const char *name)
{
	static struct arena fwd, other;
	run(fn, o, base, &fwd, 0, 0);
	if (!memcmp(fwd.out, base->out, sizeof(fwd.out)) && !memcmp(fwd.dout, base->dout, sizeof(fwd.dout)) &&
	    !memcmp(fwd.din, base->din, sizeof(fwd.din))) {
		fprintf(stderr, "%s: wrote nothing\n", name);
		return 1;
	}
	for (int how = 1; how <= (fn == op_thread ? 6 : 4); how++) {
		run(fn, o, base, &other, how == 3 || how == 4 ? 2 : how, 7u * (uint32_t)how);
		if (memcmp(fwd.out, other.out, sizeof(fwd.out)) || memcmp(fwd.dout, other.dout, sizeof(fwd.dout)) ||
		    memcmp(fwd.din, other.din, sizeof(fwd.din))) {
			fprintf(stderr, "%s: threads in order %d give other bits than in order\n", name, how);
			return 1;
		}
	}
	return 0;
}

/* Random inputs and outputs (outputs are read by the in-place operations); non-negative where an
 * operation takes a square root of it; the index arrays set per operation. */
static void fill(struct arena *r, uint32_t seed)
{
	for (int k = 0; k < 4; k++)
		for (int i = 0; i < NF; i++)
			r->in[k][i] = rnd(&seed);
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < NF; i++)
			r->out[k][i] = k ? (float)(lcg(&seed) & 0xFFFF) * 0x1p-16f : rnd(&seed);
	for (int i = 0; i < ND; i++)
		r->din[i] = rnd(&seed), r->dout[i] = rnd(&seed);
	memset(r->idx, 0, sizeof(r->idx));
}

/* Bags for a table of R rows: B bags, lengths 1..4, indices in idx[0], offsets idx[1], lengths idx[2]. */
static void bags(struct arena *r, int B, int R, uint32_t seed)
{
	int o = 0;
	for (int b = 0; b < B; b++) {
		const int n = 1 + (int)(lcg(&seed) % 4);
		r->idx[1][b] = o, r->idx[2][b] = n;
		for (int i = 0; i < n; i++)
			r->idx[0][o++] = (int32_t)(lcg(&seed) % (uint32_t)R);
	}
}

static void test_every_op(void)
{
	static struct arena base;
	const int B = 8, E = 5, T = 3, NIw = E + (T + 1) * T / 2, R = 20, rows = 6, d = 7;
	struct {
		const char *name;
		struct sdc_mt_op op;
		int index; /* 1: bags; 2: touched rows and their bags */
	} ops[] = {
		{ .name = "transpose", .op = { .code = SDC_MT_OP_TRANSPOSE, .n = 5 * 7, .i = { 5, 7, 7, 5 } } },
		{ .name = "copy2d", .op = { .code = SDC_MT_OP_COPY2D, .n = 4 * 3, .i = { 4, 3, 5, 6 } } },
		{ .name = "add_bias", .op = { .code = SDC_MT_OP_ADD_BIAS, .n = 4 * 6, .i = { 4, 6 } } },
		{ .name = "relu", .op = { .code = SDC_MT_OP_RELU, .n = 30 } },
		{ .name = "relu_mask", .op = { .code = SDC_MT_OP_RELU_MASK, .n = 30 } },
		{ .name = "colsum", .op = { .code = SDC_MT_OP_COLSUM, .n = 6, .i = { 5, 6 } } },
		{ .name = "sgd", .op = { .code = SDC_MT_OP_SGD, .n = 30, .f = { 0.05f } } },
		{ .name = "add", .op = { .code = SDC_MT_OP_ADD, .n = 30 } },
		{ .name = "emb_pool", .op = { .code = SDC_MT_OP_EMB_POOL, .n = B * E, .i = { B, E } }, .index = 1 },
		{ .name = "interact", .op = { .code = SDC_MT_OP_INTERACT, .n = B * NIw, .i = { B, E, T, NIw } } },
		{ .name = "interact_back", .op = { .code = SDC_MT_OP_INTERACT_BACK, .n = (T + 1) * B * E, .i = { B, E, T, NIw } } },
		{ .name = "logistic", .op = { .code = SDC_MT_OP_LOGISTIC, .n = 1, .i = { B } } },
		{ .name = "emb_grad", .op = { .code = SDC_MT_OP_EMB_GRAD, .n = 6 * E, .i = { E } }, .index = 2 },
		{ .name = "adagrad", .op = { .code = SDC_MT_OP_ADAGRAD, .n = 6 * E, .i = { E }, .f = { 0.05f, 1e-8f } }, .index = 3 },
		{ .name = "layer_norm", .op = { .code = SDC_MT_OP_LAYER_NORM, .n = rows, .i = { rows, d }, .f = { 1e-5f } } },
		{ .name = "ln_back_params", .op = { .code = SDC_MT_OP_LN_BACK_PARAMS, .n = d, .i = { rows, d } } },
		{ .name = "ln_back_x", .op = { .code = SDC_MT_OP_LN_BACK_X, .n = rows, .i = { rows, d } } },
		{ .name = "softmax", .op = { .code = SDC_MT_OP_SOFTMAX, .n = 6, .i = { 6, 6 }, .f = { 0.35f } } },
		{ .name = "softmax_back", .op = { .code = SDC_MT_OP_SOFTMAX_BACK, .n = 6, .i = { 6, 6 }, .f = { 0.35f } } },
		{ .name = "mse_grad", .op = { .code = SDC_MT_OP_MSE_GRAD, .n = 30, .f = { 1.0f / 30 } } },
		{ .name = "mse_loss", .op = { .code = SDC_MT_OP_MSE_LOSS, .n = 1, .i = { 30 }, .f = { 1.0f / 30 } } },
		{ .name = "adam", .op = { .code = SDC_MT_OP_ADAM, .n = 30,
			    .f = { 1e-3f, 0.9f, 0.999f, 1e-8f, 1.0f - 0.9f, 1.0f - 0.999f, 0.19f, 0.002f } } },
		{ .name = "attn_asums", .op = { .code = SDC_MT_OP_ATTN_ASUMS, .n = 5, .i = { 6, 5, 5 } } },
		{ .name = "attn_csums", .op = { .code = SDC_MT_OP_ATTN_CSUMS, .n = 4, .i = { 6, 4, 5, 4, 4 } } },
	};
	const int nops = (int)(sizeof(ops) / sizeof(ops[0]));
	CHECK_MSG(nops == SDC_MT_NOPS, "%d of %d operations tested", nops, SDC_MT_NOPS);
	for (int i = 0; i < nops; i++) {
		fill(&base, 100 + (uint32_t)i);
		if (ops[i].index == 1) {
			bags(&base, B, R, 5);
		} else if (ops[i].index >= 2) {
			/* six distinct rows of R touched; emb_grad: their bags (rstart idx[0], bag ids idx[2]) */
			int q = 0;
			for (int t = 0; t < 6; t++) {
				base.idx[1][t] = 3 * t + 1;
				base.idx[0][t] = q;
				for (int k = 0; k <= t % 3; k++)
					base.idx[2][q++] = (t * 5 + k) % B;
			}
			base.idx[0][6] = q;
			if (ops[i].index == 3)
				memcpy(base.idx[0], base.idx[1], sizeof(base.idx[0])); /* adagrad: the rows in ia */
		}
		if (ops[i].op.code == SDC_MT_OP_LOGISTIC)
			for (int b = 0; b < B; b++)
				base.in[1][b] = b % 2 ? 1.0f : 0.0f;
		CHECK_MSG(!order_free(op_thread, ops[i].op, &base, ops[i].name), "%s", ops[i].name);
	}
}

/* The harness can fail: a running sum whose thread t reads thread t - 1's output. */
static void racy_thread(const struct sdc_mt_op *o, long t)
{
	o->x[t] = SDC_XADD(t ? o->x[t - 1] : 0.0f, o->a[t]);
}

static void test_harness_sees_order(void)
{
	static struct arena base;
	fill(&base, 9);
	const struct sdc_mt_op racy = { .n = 64 };
	CHECK_MSG(order_free(racy_thread, racy, &base, "racy (expected to move)") != 0,
		  "the harness did not see an operation whose threads depend on each other");
}

int main(void)
{
	test_every_op();
	test_harness_sees_order();
	return check_done("test_mt_ops");
}
