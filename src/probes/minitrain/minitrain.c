/*
 * minitrain: deterministic mini-training (kernels/minitrain.h) on every selected core, as Adept
 * ran it on every node: the same model, seed and data everywhere, so any difference is a fault.
 *
 * One iteration is one training step; a run of `steps` steps starts from the seed's weights and
 * repeats while time remains. Every step is checked three ways:
 *   - against the golden trajectory when one matches the options and seed (compiled in for the
 *     default profiles, or the file given to `sdcscan golden verify`): the state entering each
 *     step (XXH3 per step, SHA-256 per tensor at checkpoints), the gradients before each update
 *     and the loss. At the first difference the step is replayed from the seed on this core and
 *     compared element by element, so the finding names the step, the tensor, the element, its
 *     bits, and whether the divergence began as a NaN/INF event or as a silent change of value;
 *   - across cores, by the framework's vote on each step's digest (the odd core is named);
 *   - inside the step, by ATTNChecker's checksums on the six attention GEMMs of the transformer.
 */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/digest.h"
#include "fleet.h"
#include "golden.h"
#include "kernels/minitrain.h"
#include "probe.h"

static const char *const model_names[] = { "dlrm", "xfmr", NULL };
static const char *const kernel_names[] = { "tiled", "plain", NULL };
static const char *const golden_modes[] = { "auto", "off", "require", NULL };
enum { GOLDEN_AUTO, GOLDEN_OFF, GOLDEN_REQUIRE };

struct minitrain_opts {
	uint32_t models;
	int64_t seed, steps, checkpoint;
	int64_t dlrm_batch, dlrm_tables, dlrm_rows, dlrm_dim, dlrm_pooling;
	int64_t xfmr_batch, xfmr_seq, xfmr_dim, xfmr_heads, xfmr_ff;
	int kernel, golden;
	bool data_parallel;
	double floor;
};

#define OPT(f) offsetof(struct minitrain_opts, f)
static const struct sdc_option minitrain_options[] = {
	{ .name = "models", .type = SDC_OPT_SET, .offset = OPT(models), .def = "dlrm,xfmr", .neutral = true,
	  .help = "dlrm: MLPs, embedding bags, interaction, SGD and Adagrad; xfmr: one transformer block, Adam",
	  .choices = model_names },
	{ .name = "seed", .type = SDC_OPT_INT, .offset = OPT(seed), .def = "0", .neutral = true,
	  .help = "weights and data seed (0: the run's); fixed, it lets a daily-seeded profile use shipped goldens",
	  .imin = 0, .imax = INT64_MAX },
	{ .name = "steps", .type = SDC_OPT_INT, .offset = OPT(steps), .def = "200",
	  .help = "training steps per run (the trajectory's length)", .imin = 1, .imax = 1000000 },
	{ .name = "checkpoint", .type = SDC_OPT_INT, .offset = OPT(checkpoint), .def = "50",
	  .help = "SHA-256 of every tensor every this many steps", .imin = 1, .imax = 1000000 },
	{ .name = "dlrm_batch", .type = SDC_OPT_INT, .offset = OPT(dlrm_batch), .def = "128",
	  .help = "dlrm: samples per step", .imin = 1, .imax = 4096 },
	{ .name = "dlrm_tables", .type = SDC_OPT_INT, .offset = OPT(dlrm_tables), .def = "4",
	  .help = "dlrm: embedding tables (sparse features)", .imin = 1, .imax = 8 },
	{ .name = "dlrm_rows", .type = SDC_OPT_INT, .offset = OPT(dlrm_rows), .def = "4096",
	  .help = "dlrm: rows per embedding table", .imin = 16, .imax = 1 << 22 },
	{ .name = "dlrm_dim", .type = SDC_OPT_INT, .offset = OPT(dlrm_dim), .def = "32",
	  .help = "dlrm: embedding width (also the bottom MLP's output)", .imin = 4, .imax = 512 },
	{ .name = "dlrm_pooling", .type = SDC_OPT_INT, .offset = OPT(dlrm_pooling), .def = "8",
	  .help = "dlrm: mean rows per bag (lengths uniform in 1 .. 2 pooling - 1)", .imin = 1, .imax = 64 },
	{ .name = "xfmr_batch", .type = SDC_OPT_INT, .offset = OPT(xfmr_batch), .def = "4",
	  .help = "xfmr: sequences per step", .imin = 1, .imax = 256 },
	{ .name = "xfmr_seq", .type = SDC_OPT_INT, .offset = OPT(xfmr_seq), .def = "32",
	  .help = "xfmr: sequence length", .imin = 2, .imax = 1024 },
	{ .name = "xfmr_dim", .type = SDC_OPT_INT, .offset = OPT(xfmr_dim), .def = "64",
	  .help = "xfmr: model width", .imin = 2, .imax = 1024 },
	{ .name = "xfmr_heads", .type = SDC_OPT_INT, .offset = OPT(xfmr_heads), .def = "2",
	  .help = "xfmr: attention heads (must divide xfmr_dim)", .imin = 1, .imax = 64 },
	{ .name = "xfmr_ff", .type = SDC_OPT_INT, .offset = OPT(xfmr_ff), .def = "256",
	  .help = "xfmr: MLP hidden width", .imin = 1, .imax = 8192 },
	{ .name = "kernel", .type = SDC_OPT_ENUM, .offset = OPT(kernel), .def = "tiled", .neutral = true,
	  .help = "GEMM kernel: tiled (vectorised) or plain (the scalar reference); both give the same bits",
	  .choices = kernel_names },
	{ .name = "golden", .type = SDC_OPT_ENUM, .offset = OPT(golden), .def = "auto", .neutral = true,
	  .help = "compare with a golden trajectory: auto (when one matches), off, require (UNKNOWN without one)",
	  .choices = golden_modes },
	{ .name = "data_parallel", .type = SDC_OPT_BOOL, .offset = OPT(data_parallel), .def = "true", .neutral = true,
	  .help = "under MPI, also train the transformer data-parallel across ranks (variant xfmr-dp): gradients "
		  "all-reduced in rank order, every step's state compared across ranks" },
	{ .name = "floor", .type = SDC_OPT_DOUBLE, .offset = OPT(floor), .def = "0", .neutral = true,
	  .help = "per-core training steps below which the core is WARNING (0: no floor)", .dmin = 0, .dmax = 1e7,
	  .unit = "steps/s" },
	SDC_OPT_END,
};

static const char *const minitrain_targets[] = {
	"W: a weight at rest before step ITER (tensor=NAME, row, col: its element; drawn when left out)",
	"O: an optimizer-state element at rest before step ITER (tensor=adagrad.emb0, adam.m.attn.Wq, ...)",
	"G: a gradient element after the backward pass of step ITER, before the update (tensor=grad.NAME)",
	"A: an activation, a GEMM's output before its check (tensor=act.Q, act.K, act.V, act.S, act.O, act.Y, "
	"act.F for xfmr; h1, z0, g1, logit for dlrm; act.S and act.O: batch 0, head 0)",
	NULL,
};

static const char *const minitrain_selftest_options[] = { "seed=1", "steps=12", "checkpoint=4", "dlrm_rows=256",
							  "dlrm_batch=32", "xfmr_seq=16", "xfmr_ff=64", NULL };
static const char *const minitrain_selftest_faults[] = {
	"minitrain/dlrm:W:iter=3",
	"minitrain/dlrm:G:iter=5,tensor=grad.top.U0,bit=27",
	"minitrain/dlrm:O:iter=7,tensor=adagrad.emb1",
	"minitrain/xfmr:W:iter=2,tensor=attn.Wv,bit=30",
	"minitrain/xfmr:G:iter=4,bit=28",
	"minitrain/xfmr:O:iter=6,tensor=adam.v.mlp.W1",
	"minitrain/xfmr:A:iter=8,tensor=act.Q,bit=30",
	"minitrain/xfmr:A:iter=9,tensor=act.S,bit=31",
	/* under mpirun: one rank's update (state) and one rank's gradients before the all-reduce */
	"minitrain/xfmr-dp:W:iter=3,rank=1,tensor=attn.Wq,bit=24",
	"minitrain/xfmr-dp:G:iter=6,rank=0,bit=28",
	NULL,
};

#define MAX_FAULTS 8
#define ELEMENTS_DETAILED 4

/* Where a step's check found the first difference from the golden. */
enum point { POINT_ENTRY, POINT_GRADS, POINT_LOSS };

struct mt_shared {
	struct sdc_mt_cfg cfg;
	int steps, every;
	bool plain;
	const struct sdc_golden_entry *golden;
	const char *golden_origin;
	char operation[96];
};

struct mt_worker {
	struct sdc_worker *w;
	const struct mt_shared *sh;
	struct sdc_mt_model *m, *replay;
	struct sdc_mt_tensor *traj, *grads;
	int ntraj, ngrads;
	struct sdc_sha256 sha;
	uint64_t iter; /* global step */
	int step;      /* within the run */
	uint64_t *tensor_hash;
	/* this step */
	struct sdc_fault faults[MAX_FAULTS];
	const char *fault_target[MAX_FAULTS];
	int nfaults;
	bool extreme; /* an attention check saw NaN, INF or near-INF */
	uint64_t grad_hash;
	bool grads_diverged;
	float *saved_grads; /* the gradients of a step whose gradients diverged */
	size_t grads_total;
	/* replay capture */
	float *capture;
	bool diverged_this_run; /* and not repaired: no replay reproduced the golden */
	bool diverged_this_step;
	/* An attention check failed in this run: later failures are its consequences, not reported. */
	int attn_step;
	/* data parallel */
	float *dp_local, *dp_all;
	uint64_t *dp_hashes;
	bool dp_failed;
	bool dp_entry_golden; /* the state entering this step matched the golden */
};

/* ---- options and variants ---- */

static int minitrain_variants(const void *opts, const char **names, int max)
{
	const struct minitrain_opts *o = opts;
	int n = 0;
	for (int i = 0; model_names[i] && n < max; i++)
		if (sdc_opt_set_has(o->models, i))
			names[n++] = model_names[i];
	/* Under MPI the transformer also trains data-parallel across the ranks (Adept's job). */
	if (sdc_fleet.active && sdc_fleet.size > 1 && o->data_parallel && sdc_opt_set_has(o->models, 1) && n < max)
		names[n++] = "xfmr-dp";
	return n;
}

static bool minitrain_one_per_rank(const char *variant)
{
	return !strcmp(variant, "xfmr-dp");
}

static uint64_t minitrain_data_seed(const void *opts, uint64_t run_seed)
{
	const struct minitrain_opts *o = opts;
	return o->seed ? (uint64_t)o->seed : run_seed;
}

static void cfg_from_opts(const struct minitrain_opts *o, const char *variant, uint64_t seed, struct sdc_mt_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->seed = minitrain_data_seed(o, seed);
	if (!strcmp(variant, "dlrm")) {
		c->kind = SDC_MT_DLRM;
		c->batch = (int)o->dlrm_batch, c->dense = 16, c->bottom = 64, c->emb_dim = (int)o->dlrm_dim;
		c->tables = (int)o->dlrm_tables, c->rows = (int)o->dlrm_rows, c->pooling = (int)o->dlrm_pooling;
		c->top = 64;
	} else {
		c->kind = SDC_MT_XFMR;
		if (!strcmp(variant, "xfmr-dp"))
			c->shard = sdc_fleet.rank, c->nshards = sdc_fleet.size;
		c->batch = (int)o->xfmr_batch, c->seq = (int)o->xfmr_seq, c->dmodel = (int)o->xfmr_dim;
		c->heads = (int)o->xfmr_heads, c->dff = (int)o->xfmr_ff;
	}
}

static int check_cfg(const struct sdc_mt_cfg *c, char *err, size_t len)
{
	if (c->kind == SDC_MT_DLRM && (long)c->batch * (2 * c->pooling - 1) > 60000) {
		snprintf(err, len, "dlrm_batch x (2 dlrm_pooling - 1) must be at most 60000 indices per table");
		return -1;
	}
	if (c->kind == SDC_MT_XFMR && c->dmodel % c->heads) {
		snprintf(err, len, "xfmr_heads (%d) must divide xfmr_dim (%d)", c->heads, c->dmodel);
		return -1;
	}
	return 0;
}

/* ---- hashing ---- */

/* Tensor bytes are hashed little-endian, as the golden files define them. */
static uint64_t tensor_xxh(const struct sdc_mt_tensor *t)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return sdc_xxh64(t->data, sdc_mt_numel(t) * sizeof(float));
#else
#error "minitrain hashes tensors as little-endian bytes; add a byte swap for this host"
#endif
}

/* One hash over a list of tensors: XXH3 of their XXH3s, each kept in out (may be NULL). */
static uint64_t tensors_hash(const struct sdc_mt_tensor *t, int n, uint64_t *out)
{
	uint64_t h[64];
	for (int i = 0; i < n && i < 64; i++) {
		h[i] = tensor_xxh(&t[i]);
		if (out)
			out[i] = h[i];
	}
	return sdc_xxh64(h, sizeof(uint64_t) * (size_t)(n < 64 ? n : 64));
}

static void tensors_sha(struct sdc_sha256 *s, const struct sdc_mt_tensor *t, int n, uint8_t *out)
{
	for (int i = 0; i < n; i++)
		sdc_sha256_buf(s, t[i].data, sdc_mt_numel(&t[i]) * sizeof(float), out + (size_t)i * SDC_SHA256_LEN);
}

/* ---- data parallel: the gradient all-reduce ---- */

/*
 * The global gradient: every rank's, summed in rank order (so every rank gets the same bits),
 * then averaged. local holds total floats, all size x total. -1 when a rank did not take part.
 */
static int dp_reduce(struct sdc_mt_tensor *grads, int ngrads, size_t total, float *local, float *all)
{
	size_t off = 0;
	for (int i = 0; i < ngrads; i++) {
		memcpy(local + off, grads[i].data, sdc_mt_numel(&grads[i]) * sizeof(float));
		off += sdc_mt_numel(&grads[i]);
	}
	if (sdc_fleet_allgather(local, (int)(total * sizeof(float)), all, sdc_fleet.timeout))
		return -1;
	const float inv = 1.0f / (float)sdc_fleet.size;
	off = 0;
	for (int i = 0; i < ngrads; i++) {
		float *g = grads[i].data;
		for (size_t e = 0; e < sdc_mt_numel(&grads[i]); e++) {
			float acc = all[off + e];
			for (int r = 1; r < sdc_fleet.size; r++)
				acc = acc + all[(size_t)r * total + off + e];
			g[e] = acc * inv;
		}
		off += sdc_mt_numel(&grads[i]);
	}
	return 0;
}

/* ---- the trajectory recorder (golden record), on the calling thread ---- */

struct recorder {
	struct sdc_mt_model *m;
	struct sdc_mt_tensor *grads;
	int ngrads;
	uint64_t grad_hash;
	size_t total;
	float *local, *all;
	uint64_t *hashes; /* [world]: one step's gradient hash of every rank */
	bool failed;
};

static void record_reduce_hook(void *ctx, int step)
{
	(void)step;
	struct recorder *r = ctx;
	if (!r->failed && dp_reduce(r->grads, r->ngrads, r->total, r->local, r->all))
		r->failed = true;
}

static void record_grads_hook(void *ctx, int step)
{
	(void)step;
	struct recorder *r = ctx;
	r->grad_hash = tensors_hash(r->grads, r->ngrads, NULL);
}

static void *minitrain_golden_record(const void *opts, const char *variant, uint64_t seed, char *err, size_t len)
{
	const struct minitrain_opts *o = opts;
	struct sdc_mt_cfg cfg;
	cfg_from_opts(o, variant, seed, &cfg);
	if (check_cfg(&cfg, err, len))
		return NULL;
	/* The plain scalar kernel: the recording is made by the reference implementation. */
	struct sdc_mt_model *m = sdc_mt_create(&cfg, sdc_xgemm_plain, err, len);
	if (!m)
		return NULL;
	struct sdc_golden_traj t = { .steps = (int)o->steps, .every = (int)o->checkpoint };
	struct sdc_mt_tensor *traj;
	struct recorder rec = { .m = m };
	const int ntraj = sdc_mt_tensors(m, &traj);
	rec.ngrads = sdc_mt_grads(m, &rec.grads);
	t.ntensors = ntraj;
	t.ncheck = t.steps / t.every + (t.steps % t.every != 0);
	t.loss = calloc((size_t)t.steps, 4);
	t.entry = calloc((size_t)t.steps, 8);
	t.grads = calloc((size_t)t.steps, 8);
	t.check_step = calloc((size_t)t.ncheck, sizeof(int));
	t.names = calloc((size_t)ntraj, sizeof(*t.names));
	t.sha = calloc((size_t)t.ncheck * ntraj, SDC_SHA256_LEN);
	struct sdc_sha256 sha = { 0 };
	json_t *out = NULL;
	if (!t.loss || !t.entry || !t.grads || !t.check_step || !t.names || !t.sha || sdc_sha256_init(&sha)) {
		snprintf(err, len, "out of memory");
		goto done;
	}
	for (int i = 0; i < ntraj; i++)
		sdc_strlcpy(t.names[i], traj[i].name, sizeof(t.names[i]));
	/* Data parallel (recorded under mpirun, every rank taking part): gradients all-reduced as in a run. */
	const bool dp = cfg.nshards > 1;
	if (dp) {
		for (int i = 0; i < rec.ngrads; i++)
			rec.total += sdc_mt_numel(&rec.grads[i]);
		rec.local = malloc(sizeof(float) * rec.total);
		rec.all = malloc(sizeof(float) * rec.total * (size_t)sdc_fleet.size);
		t.nranks = sdc_fleet.size;
		t.rank_grads = calloc((size_t)t.nranks * t.steps, sizeof(uint64_t));
		rec.hashes = calloc((size_t)t.nranks, sizeof(uint64_t));
		if (!rec.local || !rec.all || !t.rank_grads || !rec.hashes) {
			snprintf(err, len, "out of memory");
			goto done;
		}
	}
	const struct sdc_mt_hooks hooks = { .ctx = &rec, .gradients = record_grads_hook,
					    .reduce = dp ? record_reduce_hook : NULL };
	int c = 0;
	for (int s = 0; s <= t.steps; s++) {
		if (s && (s % t.every == 0 || s == t.steps)) {
			t.check_step[c] = s;
			tensors_sha(&sha, traj, ntraj, t.sha + (size_t)c * ntraj * SDC_SHA256_LEN);
			c++;
		}
		if (s == t.steps)
			break;
		t.entry[s] = tensors_hash(traj, ntraj, NULL);
		const float loss = sdc_mt_step(m, s, &hooks);
		memcpy(&t.loss[s], &loss, 4);
		t.grads[s] = rec.grad_hash;
		/* every rank's own gradients of this step, before the all-reduce */
		if (dp && !rec.failed && sdc_fleet_allgather(&rec.grad_hash, 8, rec.hashes, sdc_fleet.timeout))
			rec.failed = true;
		for (int r = 0; dp && r < t.nranks; r++)
			t.rank_grads[(size_t)r * t.steps + s] = rec.hashes[r];
	}
	if (rec.failed) {
		snprintf(err, len, "a rank did not take part in a gradient all-reduce within %.0f s", sdc_fleet.timeout);
		goto done;
	}
	out = sdc_golden_traj_json(&t);
done:
	sdc_sha256_release(&sha);
	free(t.loss), free(t.entry), free(t.grads), free(t.rank_grads), free(t.check_step), free(t.names), free(t.sha);
	free(rec.local), free(rec.all), free(rec.hashes);
	sdc_mt_free(m);
	return out;
}

/* ---- setup ---- */

static bool golden_matches_shape(const struct sdc_golden_entry *g, const struct mt_shared *sh, int ntraj)
{
	return g->has_traj && g->traj.steps == sh->steps && g->traj.every == sh->every && g->traj.ntensors == ntraj;
}

static void minitrain_teardown(struct sdc_probe_ctx *ctx)
{
	free(ctx->shared);
	ctx->shared = NULL;
}

static int minitrain_setup(struct sdc_probe_ctx *ctx)
{
	const struct minitrain_opts *o = ctx->opts;
	struct mt_shared *sh = calloc(1, sizeof(*sh));
	if (!sh)
		return sdc_ctx_error(ctx, "out of memory");
	ctx->shared = sh;
	cfg_from_opts(o, ctx->variant, ctx->seed, &sh->cfg);
	char err[256];
	if (check_cfg(&sh->cfg, err, sizeof(err))) {
		minitrain_teardown(ctx); /* the runner calls teardown only after a setup that worked */
		return sdc_ctx_error(ctx, "%s", err);
	}
	sh->steps = (int)o->steps;
	sh->every = (int)o->checkpoint;
	sh->plain = o->kernel == 1;
	if (o->golden != GOLDEN_OFF) {
		json_t *key = sdc_golden_key(ctx->probe, o, ctx->variant, ctx->seed,
					     ctx->run->ndevices ? ctx->run->devices[0].model : NULL);
		sh->golden = sdc_golden_find(key, &sh->golden_origin);
		json_decref(key);
		if (!sh->golden && o->golden == GOLDEN_REQUIRE) {
			const uint64_t seed = sh->cfg.seed;
			minitrain_teardown(ctx);
			return sdc_ctx_error(ctx, "no golden trajectory for these options and seed %" PRIu64
					     " (golden=require); record one with sdcscan golden record", seed);
		}
	}
	if (sh->cfg.kind == SDC_MT_DLRM)
		snprintf(sh->operation, sizeof(sh->operation), "dlrm b%d, %d tables x %d x %d, %d steps", sh->cfg.batch,
			 sh->cfg.tables, sh->cfg.rows, sh->cfg.emb_dim, sh->steps);
	else
		snprintf(sh->operation, sizeof(sh->operation), "xfmr b%d x t%d, d%d, %d heads, ff%d, %d steps",
			 sh->cfg.batch, sh->cfg.seq, sh->cfg.dmodel, sh->cfg.heads, sh->cfg.dff, sh->steps);
	snprintf(ctx->rate_unit, sizeof(ctx->rate_unit), "steps/s");
	snprintf(ctx->iter_unit, sizeof(ctx->iter_unit), "steps");
	ctx->rate_scale = 1;
	ctx->floor = o->floor;
	return 0;
}


/* ---- findings ---- */

static void finding_init(struct sdc_finding *f, const struct mt_worker *mw, const char *kind, const char *target,
			 int64_t row, int64_t col)
{
	memset(f, 0, sizeof(*f));
	f->cls = SDC_FINDING_CORRUPTION;
	sdc_strlcpy(f->kind, kind, sizeof(f->kind));
	snprintf(f->operation, sizeof(f->operation), "%s", mw->sh->operation);
	sdc_strlcpy(f->target, target, sizeof(f->target));
	f->iteration = mw->iter;
	f->row = row;
	f->col = col;
}

/* ---- fault injection ---- */

static struct sdc_mt_tensor *find_tensor(struct sdc_mt_tensor *list, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(list[i].name, name))
			return &list[i];
	return NULL;
}

/* Picks the fault's tensor among those of a role, and flips its element; t may be fixed by the caller. */
static void apply_fault(struct mt_worker *mw, const struct sdc_fault *f, const char *target,
			struct sdc_mt_tensor *t)
{
	const int64_t row = f->row >= 0 ? f->row % t->rows : sdc_fault_draw(f, 1, t->rows);
	const int64_t col = f->col >= 0 ? f->col % t->cols : sdc_fault_draw(f, 2, t->cols);
	const int bit = f->bit >= 0 ? f->bit % 32 : (int)sdc_fault_draw(f, 3, 32);
	float *p = &t->data[row * t->cols + col];
	uint32_t u;
	memcpy(&u, p, 4);
	char before[24], after[24];
	sdc_hex_bits(before, sizeof(before), u, 32);
	u ^= 1u << bit;
	sdc_hex_bits(after, sizeof(after), u, 32);
	memcpy(p, &u, 4);
	sdc_worker_fault_applied(mw->w, f, target, mw->iter, row, col, bit, before, after);
}

/* The tensor a fault names, or one drawn from those with the role (by name prefix for grads). */
static struct sdc_mt_tensor *fault_tensor(struct mt_worker *mw, const struct sdc_fault *f, struct sdc_mt_tensor *list,
					  int n, enum sdc_mt_role role)
{
	const char *name = mw->w->ctx->run->inject[f->spec].tensor;
	if (name[0])
		return find_tensor(list, n, name);
	int cand[64], nc = 0;
	for (int i = 0; i < n && nc < 64; i++)
		if (list[i].role == role)
			cand[nc++] = i;
	return nc ? &list[cand[sdc_fault_draw(f, 0, nc)]] : NULL;
}

static void rest_faults(struct mt_worker *mw)
{
	static const char *const targets[] = { "W", "O" };
	for (int k = 0; k < 2; k++) {
		struct sdc_fault f[MAX_FAULTS];
		const int n = sdc_worker_faults(mw->w, targets[k], mw->iter, f, MAX_FAULTS);
		for (int i = 0; i < n; i++) {
			struct sdc_mt_tensor *t =
				fault_tensor(mw, &f[i], mw->traj, mw->ntraj, k ? SDC_MT_STATE : SDC_MT_PARAM);
			if (t)
				apply_fault(mw, &f[i], targets[k], t);
		}
	}
}

static void hook_activation(void *ctx, int step, struct sdc_mt_tensor *t)
{
	(void)step;
	struct mt_worker *mw = ctx;
	for (int i = 0; i < mw->nfaults; i++) {
		if (!mw->fault_target[i] || strcmp(mw->fault_target[i], "A"))
			continue;
		const char *want = mw->w->ctx->run->inject[mw->faults[i].spec].tensor;
		if (want[0] && strcmp(want, t->name))
			continue;
		apply_fault(mw, &mw->faults[i], "A", t);
		mw->fault_target[i] = NULL; /* once: act.S and act.O are called per head */
	}
}

static void dp_gradient_diverged(struct mt_worker *mw);

static void hook_gradients(void *ctx, int step)
{
	(void)step;
	struct mt_worker *mw = ctx;
	for (int i = 0; i < mw->nfaults; i++) {
		if (!mw->fault_target[i] || strcmp(mw->fault_target[i], "G"))
			continue;
		struct sdc_mt_tensor *t = fault_tensor(mw, &mw->faults[i], mw->grads, mw->ngrads, SDC_MT_GRAD);
		if (t)
			apply_fault(mw, &mw->faults[i], "G", t);
		mw->fault_target[i] = NULL;
	}
	mw->grad_hash = tensors_hash(mw->grads, mw->ngrads, NULL);
	const struct sdc_golden_entry *g = mw->sh->golden;
	if (g && mw->sh->cfg.nshards > 1 && mw->dp_entry_golden && g->traj.nranks == sdc_fleet.size &&
	    mw->step < g->traj.steps &&
	    mw->grad_hash != g->traj.rank_grads[(size_t)sdc_fleet.rank * g->traj.steps + mw->step])
		dp_gradient_diverged(mw);
	if (g && mw->sh->cfg.nshards <= 1 && !mw->diverged_this_run && !mw->diverged_this_step && mw->step < g->traj.steps && mw->grad_hash != g->traj.grads[mw->step]) {
		/* Keep the gradients as they are now: the update is about to consume them. */
		size_t off = 0;
		for (int i = 0; i < mw->ngrads; i++) {
			memcpy(mw->saved_grads + off, mw->grads[i].data, sdc_mt_numel(&mw->grads[i]) * sizeof(float));
			off += sdc_mt_numel(&mw->grads[i]);
		}
		mw->grads_diverged = true;
	}
}

static void hook_attn(void *ctx, int step, const struct sdc_attn_event *e)
{
	(void)step;
	struct mt_worker *mw = ctx;
	if (e->kind != SDC_ATTN_VALUE)
		mw->extreme = true;
	/* Once a value is wrong, it spreads through every later GEMM of the run (ATTNChecker's
	 * propagation patterns): the first step's events are the fault, the rest its echo. */
	if (mw->attn_step >= 0 && mw->attn_step != mw->step)
		return;
	/* An element the GEMM computed right from inputs that were already wrong (its recomputation
	 * gives the same bits) is the spread of an earlier error, located where it began. */
	if (!memcmp(&e->recomputed, &e->actual, 4) || (isnan(e->recomputed) && isnan(e->actual)))
		return;
	mw->attn_step = mw->step;
	struct sdc_finding f;
	finding_init(&f, mw, "attention-checksum", "A", e->row, e->col);
	sdc_finding_set_f32(&f, e->recomputed, e->actual);
	f.threshold = e->bound;
	f.margin = isfinite(e->d1) && e->bound > 0 ? fabs(e->d1) / e->bound : INFINITY;
	char where[48] = "";
	if (e->batch >= 0)
		snprintf(where, sizeof(where), " (sequence %d, head %d)", e->batch, e->head);
	snprintf(f.detail, sizeof(f.detail),
		 "step %d: %s%s failed its column checksum at column %d: %s at row %d (d1 %.3g, bound %.3g, %d "
		 "near-INF in the column); located by %s",
		 mw->step, e->gemm, where, e->col, sdc_attn_kind_name(e->kind), e->row, e->d1, e->bound, e->near_inf,
		 e->kind == SDC_ATTN_VALUE ? "d2/d1" : e->kind == SDC_ATTN_NAN ? "searching for the NaN" : "the largest value");
	sdc_worker_report(mw->w, &f);
}

/* ---- divergence from the golden: replay and compare ---- */

struct replay_ctx {
	struct mt_worker *mw;
	int capture_step;
	struct sdc_mt_tensor *grads;
	int ngrads;
};

static void replay_grads(void *ctx, int step)
{
	struct replay_ctx *rc = ctx;
	if (step != rc->capture_step)
		return;
	size_t off = 0;
	for (int i = 0; i < rc->ngrads; i++) {
		memcpy(rc->mw->capture + off, rc->grads[i].data, sdc_mt_numel(&rc->grads[i]) * sizeof(float));
		off += sdc_mt_numel(&rc->grads[i]);
	}
}

static bool has_nonfinite(const float *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isfinite(x[i]))
			return true;
	return false;
}

static void diverged(struct mt_worker *mw, enum point at, float loss)
{
	const struct mt_shared *sh = mw->sh;
	const struct sdc_golden_traj *g = &sh->golden->traj;
	mw->diverged_this_step = true;
	char err[256];
	if (!mw->replay && !(mw->replay = sdc_mt_create(&sh->cfg, sh->plain ? sdc_xgemm_plain : sdc_xgemm, err,
							  sizeof(err)))) {
		sdc_worker_error(mw->w, "replay: %s", err);
		return;
	}
	/* Replay from the seed to the point that differed; check the replay against the golden. */
	struct sdc_mt_tensor *rt, *rg;
	const int nrt = sdc_mt_tensors(mw->replay, &rt), nrg = sdc_mt_grads(mw->replay, &rg);
	struct replay_ctx rc = { .mw = mw, .capture_step = at == POINT_ENTRY ? -1 : mw->step, .grads = rg,
				 .ngrads = nrg };
	const struct sdc_mt_hooks hooks = { .ctx = &rc, .gradients = replay_grads };
	sdc_mt_reset(mw->replay);
	int replay_bad = -1;
	float replay_loss = 0;
	for (int s = 0; s <= mw->step; s++) {
		if (s < g->steps && tensors_hash(rt, nrt, NULL) != g->entry[s] && replay_bad < 0)
			replay_bad = s;
		if (s == mw->step && at == POINT_ENTRY)
			break;
		replay_loss = sdc_mt_step(mw->replay, s, &hooks);
	}
	/* The first differing element, and how many differ. */
	const struct sdc_mt_tensor *ft = at == POINT_ENTRY ? mw->traj : mw->grads;
	const int nt = at == POINT_ENTRY ? mw->ntraj : mw->ngrads;
	int first_t = -1, tensors_differing = 0;
	size_t first_i = 0, differing = 0, off = 0;
	float exp_v = 0, act_v = 0;
	bool nonfinite = false;
	for (int i = 0; at != POINT_LOSS && i < nt; i++) {
		const size_t n = sdc_mt_numel(&ft[i]);
		const float *actual = at == POINT_ENTRY ? ft[i].data : mw->saved_grads + off;
		const float *expect = at == POINT_ENTRY ? rt[i].data : mw->capture + off;
		size_t here = 0;
		for (size_t k = 0; k < n; k++) {
			if (!memcmp(&actual[k], &expect[k], 4))
				continue;
			if (!here++ && first_t < 0)
				first_t = i, first_i = k, exp_v = expect[k], act_v = actual[k];
		}
		differing += here;
		tensors_differing += here > 0;
		nonfinite |= here && has_nonfinite(actual, n);
		off += n;
	}
	nonfinite |= mw->extreme || !isfinite(loss);
	static const char *const point_names[] = { "the state entering the step", "the gradients before the update",
						   "the loss" };
	struct sdc_finding f;
	const char *target = at == POINT_LOSS ? "A" : at == POINT_GRADS ? "G"
			     : first_t >= 0 && ft[first_t].role == SDC_MT_STATE ? "O" : "W";
	char trust[80];
	if (replay_bad < 0)
		snprintf(trust, sizeof(trust), "a replay from the seed here matches the golden");
	else
		snprintf(trust, sizeof(trust), "a replay here ALSO differs from step %d: persistent", replay_bad);
	if (at != POINT_LOSS && first_t < 0) {
		finding_init(&f, mw, "golden-divergence", target, -1, -1);
		snprintf(f.detail, sizeof(f.detail),
			 "step %d: %s did not match the golden but equals a replay from the seed on this core: this core "
			 "computes the model differently every time (from step %d), or the golden came from a build that does",
			 mw->step, point_names[at], replay_bad);
	} else if (at == POINT_LOSS) {
		finding_init(&f, mw, "golden-divergence", target, -1, -1);
		sdc_finding_set_f32(&f, at == POINT_LOSS ? replay_loss : 0, at == POINT_LOSS ? loss : 0);
		snprintf(f.detail, sizeof(f.detail),
			 "step %d: %s did not match the golden while the state entering the step matched: the forward "
			 "pass computed differently; began as %s; %s",
			 mw->step, point_names[at], nonfinite ? "a NaN/INF event" : "a silent change of value",
			 trust);
	} else {
		const struct sdc_mt_tensor *t = &ft[first_t];
		finding_init(&f, mw, "golden-divergence", target, (int64_t)(first_i / (size_t)t->cols),
			     (int64_t)(first_i % (size_t)t->cols));
		sdc_finding_set_f32(&f, exp_v, act_v);
		snprintf(f.detail, sizeof(f.detail),
			 "step %d: %s did not match the golden: first %s[%zu][%zu], %zu element%s in %d tensor%s "
			 "differ; began as %s; %s",
			 mw->step, point_names[at], t->name, first_i / (size_t)t->cols,
			 first_i % (size_t)t->cols, differing, differing == 1 ? "" : "s", tensors_differing,
			 tensors_differing == 1 ? "" : "s", nonfinite ? "a NaN/INF event" : "a silent change of value", trust);
		snprintf(f.operation, sizeof(f.operation), "%.60s: tensor %s", sh->operation, t->name);
	}
	sdc_worker_report(mw->w, &f);
	/* Back onto the golden trajectory, as ATTNChecker corrects instead of restarting: the replay
	 * holds the right state for the next step, so a later fault in this run is found on its own. */
	if (replay_bad >= 0)
		mw->diverged_this_run = true;
	else {
		for (int i = 0; i < mw->ntraj; i++)
			memcpy(mw->traj[i].data, rt[i].data, sdc_mt_numel(&rt[i]) * sizeof(float));
		mw->attn_step = -1;
	}
}

/* ---- data parallel across ranks ---- */

/*
 * Data parallel, this rank's own gradients differ from the golden's for this rank while the state
 * entering the step matched: a gradient gone wrong here would reach every rank through the
 * all-reduce and leave them all agreeing on a wrong state (Adept: "no way to detect this without
 * repeating the computation"). The golden is that repetition; to name the element, the step is
 * computed again from the same state on this core. The recomputed gradients replace the wrong ones
 * before the all-reduce, so the fleet stays on the golden trajectory.
 */
static void dp_gradient_diverged(struct mt_worker *mw)
{
	const struct mt_shared *sh = mw->sh;
	const struct sdc_golden_traj *g = &sh->golden->traj;
	char err[256];
	if (!mw->replay && !(mw->replay = sdc_mt_create(&sh->cfg, sh->plain ? sdc_xgemm_plain : sdc_xgemm, err,
							  sizeof(err)))) {
		sdc_worker_error(mw->w, "recompute: %s", err);
		return;
	}
	struct sdc_mt_tensor *rt, *rg;
	const int nrt = sdc_mt_tensors(mw->replay, &rt), nrg = sdc_mt_grads(mw->replay, &rg);
	sdc_mt_reset(mw->replay);
	for (int i = 0; i < nrt && i < mw->ntraj; i++)
		memcpy(rt[i].data, mw->traj[i].data, sdc_mt_numel(&rt[i]) * sizeof(float));
	struct replay_ctx rc = { .mw = mw, .capture_step = mw->step, .grads = rg, .ngrads = nrg };
	const struct sdc_mt_hooks hooks = { .ctx = &rc, .gradients = replay_grads };
	(void)sdc_mt_step(mw->replay, mw->step, &hooks);
	const uint64_t again = tensors_hash(rg, nrg, NULL);
	const bool transient = again == g->rank_grads[(size_t)sdc_fleet.rank * g->steps + mw->step];
	int first_t = -1;
	size_t first_i = 0, differing = 0, off = 0;
	float exp_v = 0, act_v = 0;
	for (int i = 0; i < mw->ngrads; i++) {
		const size_t n = sdc_mt_numel(&mw->grads[i]);
		for (size_t k = 0; k < n; k++) {
			if (!memcmp(&mw->grads[i].data[k], &mw->capture[off + k], 4))
				continue;
			if (!differing++)
				first_t = i, first_i = k, exp_v = mw->capture[off + k], act_v = mw->grads[i].data[k];
		}
		off += n;
	}
	struct sdc_finding f;
	if (first_t < 0) {
		finding_init(&f, mw, "rank-gradient", "G", -1, -1);
		snprintf(f.detail, sizeof(f.detail),
			 "step %d: the local gradients of rank %d (%s) differ from the golden's for this rank, and computing "
			 "them again here gives the same bits: this core computes the model differently every time",
			 mw->step, sdc_fleet.rank, sdc_fleet.host);
		sdc_worker_report(mw->w, &f);
		return;
	}
	const struct sdc_mt_tensor *t = &mw->grads[first_t];
	finding_init(&f, mw, "rank-gradient", "G", (int64_t)(first_i / (size_t)t->cols), (int64_t)(first_i % (size_t)t->cols));
	sdc_finding_set_f32(&f, exp_v, act_v);
	snprintf(f.detail, sizeof(f.detail),
		 "step %d: rank %d (%.40s) computed its local gradients wrong before the all-reduce: first %.24s[%zu][%zu], "
		 "%zu element%s differ from the step computed again here, %s",
		 mw->step, sdc_fleet.rank, sdc_fleet.host, t->name, first_i / (size_t)t->cols, first_i % (size_t)t->cols,
		 differing, differing == 1 ? "" : "s",
		 transient ? "which matches the golden and goes to the all-reduce instead" : "which ALSO differs from the golden");
	snprintf(f.operation, sizeof(f.operation), "%.60s: tensor %s", sh->operation, t->name);
	sdc_worker_report(mw->w, &f);
	if (!transient)
		return;
	off = 0;
	for (int i = 0; i < mw->ngrads; i++) {
		memcpy(mw->grads[i].data, mw->capture + off, sdc_mt_numel(&mw->grads[i]) * sizeof(float));
		off += sdc_mt_numel(&mw->grads[i]);
	}
	mw->grad_hash = again;
}

static void hook_reduce(void *ctx, int step)
{
	(void)step;
	struct mt_worker *mw = ctx;
	if (mw->dp_failed || !dp_reduce(mw->grads, mw->ngrads, mw->grads_total, mw->dp_local, mw->dp_all))
		return;
	mw->dp_failed = true;
	sdc_worker_error(mw->w, "a rank did not take part in the gradient all-reduce of step %d within %.0f s",
			 mw->step, sdc_fleet.timeout);
}

/*
 * Before each step: every rank's state hash and whether it wants to stop. All stop together; a
 * rank whose state differs from the majority names itself (Adept: the rank whose update diverged,
 * at the step it diverged). Returns true to go on.
 */
static bool dp_step_check(struct mt_worker *mw, uint64_t *entry_io)
{
	const int P = sdc_fleet.size;
	const uint64_t entry = *entry_io;
	const uint64_t mine[2] = { entry, !sdc_worker_continue(mw->w) };
	if (sdc_fleet_allgather(mine, sizeof(mine), mw->dp_hashes, sdc_fleet.timeout)) {
		mw->dp_failed = true;
		sdc_worker_error(mw->w, "a rank did not take part in the state check before step %d within %.0f s",
				 mw->step, sdc_fleet.timeout);
		return false;
	}
	bool stop = false;
	int best = 0, lead = 0; /* the largest group's size, and its lowest rank */
	for (int r = 0; r < P; r++) {
		stop |= mw->dp_hashes[2 * r + 1] != 0;
		int c = 0;
		for (int q = 0; q < P; q++)
			c += mw->dp_hashes[2 * q] == mw->dp_hashes[2 * r];
		if (c > best)
			best = c, lead = r;
	}
	const uint64_t agreed = mw->dp_hashes[2 * lead];
	if (best == P)
		return !stop;
	/* Every rank outside the largest group gets that group's state from its lowest rank, to find
	 * the first element that differs and to go on from the agreed state (so a later fault is found
	 * on its own). Every rank sees the same hashes, so all agree on who sends to whom. */
	size_t total = 0;
	for (int i = 0; i < mw->ntraj; i++)
		total += sdc_mt_numel(&mw->traj[i]);
	float *state = malloc(total * sizeof(float));
	if (!state) {
		sdc_worker_error(mw->w, "out of memory");
		mw->dp_failed = true;
		return false;
	}
	size_t off = 0;
	for (int i = 0; sdc_fleet.rank == lead && i < mw->ntraj; i++) {
		memcpy(state + off, mw->traj[i].data, sdc_mt_numel(&mw->traj[i]) * sizeof(float));
		off += sdc_mt_numel(&mw->traj[i]);
	}
	for (int r = 0; r < P; r++) {
		if (mw->dp_hashes[2 * r] == agreed || (sdc_fleet.rank != lead && sdc_fleet.rank != r))
			continue;
		int late;
		const bool send = sdc_fleet.rank == lead;
		if (sdc_fleet_sendrecv(send ? state : NULL, send ? (int)(total * 4) : 0, r, send ? NULL : state,
				       send ? 0 : (int)(total * 4), lead, 0x3d0, sdc_fleet.timeout, &late)) {
			sdc_worker_error(mw->w, "rank %d did not take part in the state exchange of step %d within %.0f s",
					 late, mw->step, sdc_fleet.timeout);
			mw->dp_failed = true;
			free(state);
			return false;
		}
	}
	if (entry != agreed) {
		/* the first element of this rank's state that differs from the agreed one */
		int first_t = -1;
		size_t first_i = 0, differing = 0;
		float exp_v = 0, act_v = 0;
		off = 0;
		for (int i = 0; i < mw->ntraj; i++) {
			const size_t n = sdc_mt_numel(&mw->traj[i]);
			for (size_t k = 0; k < n; k++)
				if (memcmp(&mw->traj[i].data[k], &state[off + k], 4) && !differing++)
					first_t = i, first_i = k, exp_v = state[off + k], act_v = mw->traj[i].data[k];
			off += n;
		}
		struct sdc_finding f;
		const struct sdc_mt_tensor *t = first_t >= 0 ? &mw->traj[first_t] : NULL;
		finding_init(&f, mw, "rank-divergence", t && t->role == SDC_MT_STATE ? "O" : "W",
			     t ? (int64_t)(first_i / (size_t)t->cols) : -1, t ? (int64_t)(first_i % (size_t)t->cols) : -1);
		if (t) {
			sdc_finding_set_f32(&f, exp_v, act_v);
			snprintf(f.operation, sizeof(f.operation), "%.60s: tensor %s", mw->sh->operation, t->name);
		}
		snprintf(f.detail, sizeof(f.detail),
			 "step %d: the state of rank %d (%.40s) entering the step differs from %s of %d ranks (%d agree) at "
			 "%zu elements, first %.24s[%zu][%zu]; gradients are all-reduced, so it diverged here: in memory or "
			 "in its own update",
			 mw->step, sdc_fleet.rank, sdc_fleet.host, 2 * best > P ? "the majority" : "the largest group", P,
			 best, differing, t ? t->name : "?", t ? first_i / (size_t)t->cols : 0,
			 t ? first_i % (size_t)t->cols : 0);
		sdc_worker_report(mw->w, &f);
		/* back onto the agreed state */
		off = 0;
		for (int i = 0; i < mw->ntraj; i++) {
			memcpy(mw->traj[i].data, state + off, sdc_mt_numel(&mw->traj[i]) * sizeof(float));
			off += sdc_mt_numel(&mw->traj[i]);
		}
		*entry_io = agreed;
	}
	free(state);
	return !stop;
}

/* ---- the burn ---- */

static void minitrain_run(struct sdc_worker *w)
{
	struct sdc_probe_ctx *ctx = w->ctx;
	const struct mt_shared *sh = ctx->shared;
	struct mt_worker mw = { .w = w, .sh = sh };
	char err[256];
	mw.m = sdc_mt_create(&sh->cfg, sh->plain ? sdc_xgemm_plain : sdc_xgemm, err, sizeof(err));
	if (!mw.m) {
		sdc_worker_error(w, "%s", err);
		return;
	}
	mw.ntraj = sdc_mt_tensors(mw.m, &mw.traj);
	mw.ngrads = sdc_mt_grads(mw.m, &mw.grads);
	for (int i = 0; i < mw.ngrads; i++)
		mw.grads_total += sdc_mt_numel(&mw.grads[i]);
	const struct sdc_golden_entry *golden = sh->golden;
	uint8_t *sha = calloc((size_t)mw.ntraj, SDC_SHA256_LEN);
	mw.saved_grads = malloc(sizeof(float) * mw.grads_total);
	mw.capture = malloc(sizeof(float) * mw.grads_total);
	const bool dp = sh->cfg.nshards > 1;
	if (dp) {
		mw.dp_local = malloc(sizeof(float) * mw.grads_total);
		mw.dp_all = malloc(sizeof(float) * mw.grads_total * (size_t)sdc_fleet.size);
		mw.dp_hashes = malloc(sizeof(uint64_t) * 2 * (size_t)sdc_fleet.size);
	}
	if (!sha || !mw.saved_grads || !mw.capture || sdc_sha256_init(&mw.sha) ||
	    (dp && (!mw.dp_local || !mw.dp_all || !mw.dp_hashes))) {
		sdc_worker_error(w, "out of memory");
		goto out;
	}
	if (golden && !golden_matches_shape(golden, sh, mw.ntraj)) {
		sdc_worker_error(w, "golden %s does not fit this model (steps, checkpoints or tensors differ)",
				 sh->golden_origin);
		goto out;
	}
	snprintf(w->kernel, sizeof(w->kernel), "%s%s%s", sh->plain ? "plain" : sdc_xgemm_kernel(),
		 golden ? ", golden: " : ", no golden", golden ? sh->golden_origin : "");
	const struct sdc_mt_hooks hooks = { .ctx = &mw, .activation = hook_activation, .gradients = hook_gradients,
					    .reduce = dp ? hook_reduce : NULL, .attn = hook_attn };
	sdc_worker_restart_clock(w);
	while (dp ? !mw.dp_failed : sdc_worker_continue(w)) {
		sdc_mt_reset(mw.m);
		mw.diverged_this_run = false;
		mw.attn_step = -1;
		int check = 0;
		bool stop = false;
		for (mw.step = 0; mw.step < sh->steps && (dp || sdc_worker_continue(w)); mw.step++, mw.iter++) {
			const int s = mw.step;
			mw.diverged_this_step = false;
			rest_faults(&mw);
			uint64_t entry = tensors_hash(mw.traj, mw.ntraj, NULL);
			/* what this rank held, for its work digest (the fleet vote), before any repair */
			const uint64_t held = entry;
			if (dp && !dp_step_check(&mw, &entry)) {
				stop = true;
				break;
			}
			bool bad_entry = golden && entry != golden->traj.entry[s];
			mw.dp_entry_golden = golden && !bad_entry && !mw.diverged_this_run;
			if (golden && s && check < golden->traj.ncheck && golden->traj.check_step[check] == s) {
				tensors_sha(&mw.sha, mw.traj, mw.ntraj, sha);
				bad_entry |= memcmp(sha, golden->traj.sha + (size_t)check * mw.ntraj * SDC_SHA256_LEN,
						    (size_t)mw.ntraj * SDC_SHA256_LEN) != 0;
				check++;
			}
			if (bad_entry && !mw.diverged_this_run && dp) {
				/* No replay: the other ranks' shards are not here. The cross-rank check names the rank. */
				mw.diverged_this_run = true;
				struct sdc_finding f;
				finding_init(&f, &mw, "golden-divergence", "W", sdc_fleet.rank, -1);
				snprintf(f.detail, sizeof(f.detail),
					 "step %d: the state entering the step did not match the golden for %d ranks (%s)", s,
					 sdc_fleet.size, sh->golden_origin);
				sdc_worker_report(w, &f);
			} else if (bad_entry && !mw.diverged_this_run) {
				diverged(&mw, POINT_ENTRY, 0);
			}
			/* The faults due inside this step wait in mw for the hooks. */
			mw.nfaults = 0;
			mw.extreme = false;
			mw.grads_diverged = false;
			struct sdc_fault f[MAX_FAULTS];
			static const char *const inner[] = { "A", "G" };
			for (int k = 0; k < 2; k++) {
				const int n = sdc_worker_faults(w, inner[k], mw.iter, f, MAX_FAULTS);
				for (int i = 0; i < n && mw.nfaults < MAX_FAULTS; i++) {
					mw.faults[mw.nfaults] = f[i];
					mw.fault_target[mw.nfaults++] = inner[k];
				}
			}
			const float loss = sdc_mt_step(mw.m, s, &hooks);
			uint32_t lbits;
			memcpy(&lbits, &loss, 4);
			/* (data parallel: the loss and local gradients are this shard's, the golden has rank 0's) */
			if (golden && !dp && !mw.diverged_this_run && !mw.diverged_this_step) {
				if (lbits != golden->traj.loss[s])
					diverged(&mw, POINT_LOSS, loss);
				else if (mw.grads_diverged)
					diverged(&mw, POINT_GRADS, loss);
			}
			/* Data-parallel ranks see different shards: only their common state compares. */
			const uint64_t d[3] = { held, dp ? 0 : lbits, dp ? 0 : mw.grad_hash };
			sdc_worker_digest(w, mw.iter, sdc_xxh64(d, sizeof(d)));
			sdc_worker_account(w, 1);
		}
		if (stop || mw.dp_failed)
			break;
		/* The end of a full run: its final state against the last checkpoint. */
		if (golden && !dp && mw.step == sh->steps && !mw.diverged_this_run && check < golden->traj.ncheck) {
			tensors_sha(&mw.sha, mw.traj, mw.ntraj, sha);
			if (memcmp(sha, golden->traj.sha + (size_t)check * mw.ntraj * SDC_SHA256_LEN,
				   (size_t)mw.ntraj * SDC_SHA256_LEN)) {
				mw.iter--;
				diverged(&mw, POINT_ENTRY, 0);
				mw.iter++;
			}
		}
	}
out:
	free(sha);
	free(mw.saved_grads);
	free(mw.capture);
	free(mw.dp_local), free(mw.dp_all), free(mw.dp_hashes);
	sdc_sha256_release(&mw.sha);
	sdc_mt_free(mw.replay);
	sdc_mt_free(mw.m);
}

const struct sdc_probe sdc_probe_minitrain = {
	.name = "minitrain",
	.summary = "deterministic mini-training (DLRM, transformer block) against golden trajectories and across "
		   "cores; ATTNChecker checksums on attention",
	.options = minitrain_options,
	.opts_size = sizeof(struct minitrain_opts),
	.inject_targets = minitrain_targets,
	.selftest_options = minitrain_selftest_options,
	.selftest_faults = minitrain_selftest_faults,
	.variants = minitrain_variants,
	.setup = minitrain_setup,
	.run = minitrain_run,
	.teardown = minitrain_teardown,
	.golden_record = minitrain_golden_record,
	.data_seed = minitrain_data_seed,
	.one_per_rank = minitrain_one_per_rank,
};
