/*
 * minitrain: deterministic mini-training (model.h) on every selected core and GPU, as
 * Adept ran it on every node: the same model, seed and data everywhere, so any difference is a
 * fault. A GPU trains with the same operations (mt_ops.h, gpu.c): the same bits.
 *
 * One iteration is one training step; a run of `steps` steps starts from the seed's weights and
 * repeats while time remains. Every step is checked three ways:
 *   - against the golden trajectory when one matches the options and seed (compiled in for the
 *     default profiles, or the file given to `sdcscan golden verify`): the state entering each
 *     step (XXH3 per step, SHA-256 per tensor at checkpoints), the gradients before each update
 *     and the loss. At the first difference the step is replayed from the seed on this core (or
 *     GPU) and compared element by element, so the finding names the step, the tensor, the element, its
 *     bits, and whether the divergence began as a NaN/INF event or as a silent change of value;
 *   - across cores and GPUs, by the framework's vote on each step's digest (the odd one is named);
 *   - inside the step, by ATTNChecker's checksums on the six attention GEMMs of the transformer.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/transport.h"
#include "inject/fatal.h"
#include "probes/minitrain/minitrain.h"
#include "base/message.h"

static const char *const model_names[] = { "dlrm", "xfmr", NULL };
static const char *const kernel_names[] = { "tiled", "plain", NULL };
static const char *const golden_modes[] = { "auto", "off", "require", NULL };
static const char *const dp_transports[] = { "auto", "mpi", "nccl", NULL };

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
	{ .name = "dp_transport", .type = SDC_OPT_ENUM, .offset = OPT(dp_transport), .def = "auto", .neutral = true,
	  .help = "xfmr-dp's gradients: over NCCL between the ranks' GPUs (all-gathered, then summed in rank order "
		  "on each GPU: the same bits), over MPI, or auto (NCCL where every rank has a GPU and NCCL)",
	  .choices = dp_transports },
	{ .name = "floor", .type = SDC_OPT_DOUBLE, .offset = OPT(floor), .def = "0", .neutral = true,
	  .help = "per-core training steps below which the core is WARNING (0: no floor)", .dmin = 0, .dmax = 1e7,
	  .unit = "steps/s" },
	{ .name = "gpu_timeout", .type = SDC_OPT_DOUBLE, .offset = OPT(gpu_timeout), .def = "30", .neutral = true,
	  .help = "seconds a GPU may take for the work queued before a copy back, past which it is declared hung",
	  .dmin = 1, .dmax = 3600, .unit = "s" },
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
	/* where there is a GPU: every kind in its memory as well (not asked for without one) */
	"minitrain/dlrm:O:iter=1,tensor=adagrad.emb0,device=gpu0",
	"minitrain/dlrm:G:iter=9,tensor=grad.bottom.W1,bit=26,device=gpu0",
	"minitrain/xfmr:W:iter=1,tensor=attn.Wk,bit=29,device=gpu0",
	"minitrain/xfmr:A:iter=3,tensor=act.V,bit=30,device=gpu0",
	"minitrain/xfmr:G:iter=5,bit=27,device=gpu0",
	"minitrain/xfmr:O:iter=10,tensor=adam.m.attn.Wo,device=gpu0",
	/* under mpirun: one rank's update (state) and one rank's gradients before the all-reduce */
	"minitrain/xfmr-dp:W:iter=3,rank=1,tensor=attn.Wq,bit=24",
	"minitrain/xfmr-dp:G:iter=6,rank=0,bit=28",
	NULL,
};

/* ---- options and variants ---- */

static int minitrain_variants(const void *opts, struct sdc_variant *out, int max)
{
	const struct minitrain_opts *o = opts;
	int n = 0;
	for (int i = 0; model_names[i] && n < max; i++) {
		if (!sdc_opt_set_has(o->models, i))
			continue;
		/* every core and every GPU trains the same model: one vote, one golden */
		out[n] = (struct sdc_variant){ .devices = SDC_ON_CPU | SDC_ON_GPU, .seed = (uint64_t)o->seed,
					       .param = { i } };
		sdc_strlcpy(out[n++].name, model_names[i], SDC_NAME_MAX);
	}
	/* Under MPI the transformer also trains data-parallel across the ranks (Adept's job): one
	 * worker a rank, and a trajectory that depends on how many ranks share the batch. */
	if (sdc_mpi.active && sdc_mpi.size > 1 && o->data_parallel && sdc_opt_set_has(o->models, MODEL_XFMR) &&
	    n < max) {
		out[n] = (struct sdc_variant){ .devices = SDC_ON_CPU, .per_rank = true, .world_dependent = true,
					       .seed = (uint64_t)o->seed, .param = { MODEL_XFMR } };
		sdc_strlcpy(out[n++].name, "xfmr-dp", SDC_NAME_MAX);
	}
	return n;
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
	sdc_mt_cfg_from_opts(o, ctx->variant, ctx->seed, &sh->cfg);
	char err[256];
	if (sdc_mt_check_cfg(&sh->cfg, err, sizeof(err))) {
		minitrain_teardown(ctx); /* the runner calls teardown only after a setup that worked */
		return sdc_ctx_error(ctx, "%s", err);
	}
	sh->steps = (int)o->steps;
	sh->every = (int)o->checkpoint;
	sh->plain = o->kernel == 1;
	if (o->golden != GOLDEN_OFF) {
		sh->golden = sdc_golden_find_for(ctx->probe, o, ctx->variant, ctx->seed, sdc_run_cpu_model(ctx->run),
						 &sh->golden_origin);
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
	mw->grad_hash = sdc_mt_tensors_hash(mw->grads, mw->ngrads, NULL);
	const struct sdc_golden_entry *g = mw->sh->golden;
	if (g && mw->sh->cfg.nshards > 1 && mw->dp_entry_golden && g->traj.nranks == sdc_mpi.size &&
	    mw->step < g->traj.steps &&
	    mw->grad_hash != g->traj.rank_grads[(size_t)sdc_mpi.rank * g->traj.steps + mw->step])
		sdc_mt_dp_gradient_diverged(mw);
	if (g && mw->sh->cfg.nshards <= 1 && !mw->diverged_this_run && !mw->diverged_this_step && mw->step < g->traj.steps && mw->grad_hash != g->traj.grads[mw->step]) {
		/* Keep the gradients as they are now: the update is about to consume them. */
		sdc_mt_tensors_to_flat(mw->grads, mw->ngrads, mw->saved_grads);
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
	sdc_mt_finding_init(&f, mw, "attention-checksum", "A", e->row, e->col);
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

/* ---- the burn ---- */

/*
 * One step of the training: the state entering it against the golden (and, data parallel, the
 * other ranks), the faults due inside it handed to the hooks, the step, its loss against the
 * golden, and the work digest the fleet votes on. false: stop (a lost device or a failed rank).
 */
static bool train_step(struct mt_worker *mw, const struct sdc_mt_hooks *hooks, const struct sdc_mt_hooks *no_act,
		       uint8_t *sha, int *check)
{
	struct sdc_worker *w = mw->w;
	const struct mt_shared *sh = mw->sh;
	const struct sdc_golden_entry *golden = sh->golden;
	const bool dp = sh->cfg.nshards > 1;
	const int s = mw->step;
	mw->diverged_this_step = false;
	rest_faults(mw);
	sdc_worker_fatal_faults(w, mw->iter, mw->traj);
	uint64_t entry = sdc_mt_tensors_hash(mw->traj, mw->ntraj, NULL);
	/* what this rank held, for its work digest (the fleet vote), before any repair */
	const uint64_t held = entry;
	if (dp && !sdc_mt_dp_step_check(mw, &entry))
		return false;
	bool bad_entry = golden && entry != golden->traj.entry[s];
	mw->dp_entry_golden = golden && !bad_entry && !mw->diverged_this_run;
	if (golden && s && *check < golden->traj.ncheck && golden->traj.check_step[*check] == s) {
		sdc_mt_tensors_sha(&mw->sha, mw->traj, mw->ntraj, sha);
		bad_entry |= memcmp(sha, golden->traj.sha + (size_t)*check * mw->ntraj * SDC_SHA256_LEN,
				    (size_t)mw->ntraj * SDC_SHA256_LEN) != 0;
		(*check)++;
	}
	if (bad_entry && !mw->diverged_this_run && dp) {
		/* No replay: the other ranks' shards are not here. The cross-rank check names the rank. */
		mw->diverged_this_run = true;
		struct sdc_finding f;
		sdc_mt_finding_init(&f, mw, "golden-divergence", "W", sdc_mpi.rank, -1);
		snprintf(f.detail, sizeof(f.detail),
			 "step %d: the state entering the step did not match the golden for %d ranks (%s)", s,
			 sdc_mpi.size, sh->golden_origin);
		sdc_worker_report(w, &f);
	} else if (bad_entry && !mw->diverged_this_run) {
		sdc_mt_diverged(mw, POINT_ENTRY, 0);
	}
	/* The faults due inside this step wait in mw for the hooks. */
	mw->nfaults = 0;
	mw->extreme = false;
	mw->grads_diverged = false;
	struct sdc_fault f[MAX_FAULTS];
	static const char *const inner[] = { "A", "G" };
	for (int k = 0; k < 2; k++) {
		const int n = sdc_worker_faults(w, inner[k], mw->iter, f, MAX_FAULTS);
		for (int i = 0; i < n && mw->nfaults < MAX_FAULTS; i++) {
			mw->faults[mw->nfaults] = f[i];
			mw->fault_target[mw->nfaults++] = inner[k];
		}
	}
	bool act_due = false;
	for (int i = 0; i < mw->nfaults; i++)
		act_due |= !strcmp(mw->fault_target[i], "A");
	const float loss = sdc_mt_step(mw->m, s, act_due ? hooks : no_act);
	if (sdc_mt_error(mw->m)) {
		sdc_worker_device_lost(w, "%s (%s): step %d: %s", w->dev->id, w->dev->gpu.pci_bus_id, s,
				       sdc_mt_error(mw->m));
		return false;
	}
	uint32_t lbits;
	memcpy(&lbits, &loss, 4);
	/* (data parallel: the loss and local gradients are this shard's, the golden has rank 0's) */
	if (golden && !dp && !mw->diverged_this_run && !mw->diverged_this_step) {
		if (lbits != golden->traj.loss[s])
			sdc_mt_diverged(mw, POINT_LOSS, loss);
		else if (mw->grads_diverged)
			sdc_mt_diverged(mw, POINT_GRADS, loss);
	}
	/* Data-parallel ranks see different shards: only their common state compares. */
	const uint64_t d[3] = { held, dp ? 0 : lbits, dp ? 0 : mw->grad_hash };
	sdc_worker_digest(w, mw->iter, sdc_xxh64(d, sizeof(d)));
	sdc_worker_account(w, 1);
	return true;
}

/*
 * The training, the same on either lane: the model on the worker's backend (a core's exact
 * kernels, or the GPU's that the GPU lane opened in mw), its runs from the seed, each step checked
 * (train_step) and the last checkpoint at each run's end.
 */
static void train(struct mt_worker *mw)
{
	struct sdc_worker *w = mw->w;
	struct sdc_probe_ctx *ctx = w->ctx;
	const struct mt_shared *sh = mw->sh;
	const bool on_gpu = mw->gpu != NULL;
	char err[256];
	if (!(mw->m = sdc_mt_model_new(mw, err, sizeof(err)))) {
		if (on_gpu)
			sdc_worker_device_lost(w, "%s (%s): %s", w->dev->id, w->dev->gpu.pci_bus_id, err);
		else
			sdc_worker_error(w, "%s", err);
		return;
	}
	mw->ntraj = sdc_mt_tensors(mw->m, &mw->traj);
	mw->ngrads = sdc_mt_grads(mw->m, &mw->grads);
	for (int i = 0; i < mw->ngrads; i++)
		mw->grads_total += sdc_mt_numel(&mw->grads[i]);
	const struct sdc_golden_entry *golden = sh->golden;
	uint8_t *sha = calloc((size_t)mw->ntraj, SDC_SHA256_LEN);
	mw->saved_grads = malloc(sizeof(float) * mw->grads_total);
	mw->capture = malloc(sizeof(float) * mw->grads_total);
	const bool dp = sh->cfg.nshards > 1;
	if (dp) {
		mw->dp_local = malloc(sizeof(float) * mw->grads_total);
		mw->dp_all = malloc(sizeof(float) * mw->grads_total * (size_t)sdc_mpi.size);
		mw->dp_hashes = malloc(sizeof(uint64_t) * 2 * (size_t)sdc_mpi.size);
	}
	if (!sha || !mw->saved_grads || !mw->capture || sdc_sha256_init(&mw->sha) ||
	    (dp && (!mw->dp_local || !mw->dp_all || !mw->dp_hashes))) {
		sdc_worker_error(w, "out of memory");
		goto out;
	}
	if (golden && !golden_matches_shape(golden, sh, mw->ntraj)) {
		sdc_worker_error(w, "golden %s does not fit this model (steps, checkpoints or tensors differ)",
				 sh->golden_origin);
		goto out;
	}
	if (dp && sdc_mt_dp_open(mw, ((const struct minitrain_opts *)ctx->opts)->dp_transport))
		goto out;
	{
		char line[256];
		/* (over MPI, the default, goes unsaid: the line has 64 bytes, the golden's name comes first) */
		snprintf(line, sizeof(line), "%s%s%s%s", on_gpu ? "exact CUDA" : sh->plain ? "plain" : sdc_xgemm_kernel(),
			 golden ? ", golden: " : ", no golden", golden ? sh->golden_origin : "",
			 mw->dp_nccl ? ", NCCL grads" : "");
		sdc_strlcpy(w->kernel, line, sizeof(w->kernel));
	}
	/* (the activation hook only in a step with an A fault due: on a GPU it moves the tensor) */
	const struct sdc_mt_hooks hooks = { .ctx = mw, .activation = hook_activation, .gradients = hook_gradients,
					    .reduce = dp ? sdc_mt_hook_reduce : NULL, .attn = hook_attn };
	struct sdc_mt_hooks no_act = hooks;
	no_act.activation = NULL;
	/* a GPU's lane is voted on and checked against the goldens, not held to the cores' floor */
	w->no_floor = on_gpu;
	sdc_worker_restart_clock(w);
	while (dp ? !mw->dp_failed : sdc_worker_continue(w)) {
		sdc_mt_reset(mw->m);
		mw->diverged_this_run = false;
		mw->attn_step = -1;
		int check = 0;
		bool stop = false;
		for (mw->step = 0; mw->step < sh->steps && (dp || sdc_worker_continue(w)); mw->step++, mw->iter++) {
			if (!train_step(mw, &hooks, &no_act, sha, &check)) {
				stop = true;
				break;
			}
		}
		if (stop || mw->dp_failed)
			break;
		/* The end of a full run: its final state against the last checkpoint. */
		if (golden && !dp && mw->step == sh->steps && !mw->diverged_this_run && check < golden->traj.ncheck) {
			sdc_mt_tensors_sha(&mw->sha, mw->traj, mw->ntraj, sha);
			if (memcmp(sha, golden->traj.sha + (size_t)check * mw->ntraj * SDC_SHA256_LEN,
				   (size_t)mw->ntraj * SDC_SHA256_LEN)) {
				mw->iter--;
				sdc_mt_diverged(mw, POINT_ENTRY, 0);
				mw->iter++;
			}
		}
	}
out:
	free(sha);
	free(mw->saved_grads);
	free(mw->capture);
	free(mw->dp_local), free(mw->dp_all), free(mw->dp_hashes);
	sdc_mt_dp_close(mw);
	sdc_sha256_release(&mw->sha);
	sdc_mt_free(mw->replay);
	sdc_mt_free(mw->m);
}

/* The CPU lane: the training on this core. */
static void minitrain_cpu_lane(struct sdc_worker *w)
{
	struct mt_worker mw = { .w = w, .sh = w->ctx->shared };
	train(&mw);
}

/* The GPU lane: the GPU's backend opened (gpu.c), the same training on it, the backend closed. */
static void minitrain_gpu_lane(struct sdc_worker *w)
{
	struct mt_worker mw = { .w = w, .sh = w->ctx->shared };
	char err[256];
	if (sdc_mt_gpu_open(&mw, ((const struct minitrain_opts *)w->ctx->opts)->gpu_timeout, err, sizeof(err))) {
		sdc_worker_device_lost(w, "%s (%s): %s", w->dev->id, w->dev->gpu.pci_bus_id, err);
		return;
	}
	train(&mw);
	sdc_mt_gpu_close(&mw);
}

static const struct sdc_command *const minitrain_benches[] = { &sdc_minitrain_bench, NULL };

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
	.lane = { [SDC_DEVICE_CPU] = minitrain_cpu_lane, [SDC_DEVICE_GPU] = minitrain_gpu_lane },
	.teardown = minitrain_teardown,
	.benches = minitrain_benches,
	.golden_record = sdc_mt_golden_record,
};

