/*
 * A step of minitrain did not match the golden: replayed from the seed on this core or GPU (or, data
 * parallel, recomputed from the same state) and compared element by element, so the finding names
 * the step, the tensor, the element and its bits, and whether the divergence repeats.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/transport.h"
#include "probes/minitrain/minitrain.h"

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
	sdc_mt_tensors_to_flat(rc->grads, rc->ngrads, rc->mw->capture);
}

static bool has_nonfinite(const float *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isfinite(x[i]))
			return true;
	return false;
}

void sdc_mt_first_difference(const struct sdc_mt_tensor *shape, int n, struct mt_side actual, struct mt_side expected,
			     struct mt_difference *d)
{
	memset(d, 0, sizeof(*d));
	d->tensor = -1;
	size_t off = 0;
	for (int i = 0; i < n; i++) {
		const size_t numel = sdc_mt_numel(&shape[i]);
		const float *a = actual.list ? actual.list[i].data : actual.flat + off;
		const float *e = expected.list ? expected.list[i].data : expected.flat + off;
		size_t here = 0;
		for (size_t k = 0; k < numel; k++) {
			/* bits, not values: -0.0 and a NaN's payload count */
			if (!memcmp(&a[k], &e[k], 4))
				continue;
			if (!here++ && d->tensor < 0)
				d->tensor = i, d->index = k, d->expected = e[k], d->actual = a[k];
		}
		d->elements += here;
		d->tensors += here > 0;
		d->nonfinite |= here && has_nonfinite(a, numel);
		off += numel;
	}
}

/* Replays model from the seed to the point that differed (its gradients at that step into
 * mw->capture); returns the first step whose entry differs from the golden, or -1. */
static int replay_on(struct mt_worker *mw, struct sdc_mt_model *model, enum point at, float *loss)
{
	const struct sdc_golden_traj *g = &mw->sh->golden->traj;
	struct sdc_mt_tensor *rt, *rg;
	const int nrt = sdc_mt_tensors(model, &rt), nrg = sdc_mt_grads(model, &rg);
	struct replay_ctx rc = { .mw = mw, .capture_step = at == POINT_ENTRY ? -1 : mw->step, .grads = rg,
				 .ngrads = nrg };
	const struct sdc_mt_hooks hooks = { .ctx = &rc, .gradients = replay_grads };
	sdc_mt_reset(model);
	int bad = -1;
	for (int s = 0; s <= mw->step; s++) {
		if (s < g->steps && sdc_mt_tensors_hash(rt, nrt, NULL) != g->entry[s] && bad < 0)
			bad = s;
		if (s == mw->step && at == POINT_ENTRY)
			break;
		*loss = sdc_mt_step(model, s, &hooks);
	}
	return bad;
}

void sdc_mt_diverged(struct mt_worker *mw, enum point at, float loss)
{
	const struct mt_shared *sh = mw->sh;
	mw->diverged_this_step = true;
	char err[256];
	if (!mw->replay && !(mw->replay = sdc_mt_model_new(mw, err, sizeof(err)))) {
		sdc_worker_error(mw->w, "replay: %s", err);
		return;
	}
	float replay_loss = 0;
	int replay_bad = replay_on(mw, mw->replay, at, &replay_loss);
	/* A GPU whose own replay differs from the golden as well: a CPU core's replay (the goldens' own
	 * arithmetic) is the reference that names the element. */
	struct sdc_mt_model *ref = mw->replay, *cpu = NULL;
	if (mw->gpu && replay_bad >= 0 && (cpu = sdc_mt_create(&sh->cfg, sdc_xgemm, err, sizeof(err)))) {
		float cpu_loss = 0;
		if (replay_on(mw, cpu, at, &cpu_loss) < 0)
			ref = cpu, replay_loss = cpu_loss;
	}
	struct sdc_mt_tensor *rt;
	sdc_mt_tensors(ref, &rt);
	/* The first differing element, and how many differ. */
	const struct sdc_mt_tensor *ft = at == POINT_ENTRY ? mw->traj : mw->grads;
	struct mt_difference d = { .tensor = -1 };
	if (at == POINT_ENTRY)
		sdc_mt_first_difference(ft, mw->ntraj, (struct mt_side){ .list = ft }, (struct mt_side){ .list = rt }, &d);
	else if (at == POINT_GRADS)
		sdc_mt_first_difference(ft, mw->ngrads, (struct mt_side){ .flat = mw->saved_grads },
					(struct mt_side){ .flat = mw->capture }, &d);
	const int first_t = d.tensor;
	const size_t first_i = d.index, differing = d.elements;
	const int tensors_differing = d.tensors;
	const bool nonfinite = d.nonfinite || mw->extreme || !isfinite(loss);
	static const char *const point_names[] = { "the state entering the step", "the gradients before the update",
						   "the loss" };
	struct sdc_finding f;
	const char *target = at == POINT_LOSS ? "A" : at == POINT_GRADS ? "G"
			     : first_t >= 0 && ft[first_t].role == SDC_MT_STATE ? "O" : "W";
	char trust[160];
	if (replay_bad < 0)
		snprintf(trust, sizeof(trust), "a replay from the seed here matches the golden");
	else if (ref == cpu)
		snprintf(trust, sizeof(trust), "a replay on this GPU ALSO differs from step %d: persistent (the element is "
			 "against a replay on a CPU core, which matches the golden)", replay_bad);
	else
		snprintf(trust, sizeof(trust), "a replay here ALSO differs from step %d: persistent", replay_bad);
	if (at != POINT_LOSS && first_t < 0) {
		sdc_mt_finding_init(&f, mw, "golden-divergence", target, -1, -1);
		snprintf(f.detail, sizeof(f.detail),
			 "step %d: %s did not match the golden but equals a replay from the seed on this %s: this %s "
			 "computes the model differently every time (from step %d), or the golden came from a build that does",
			 mw->step, point_names[at], mt_device_word(mw), mt_device_word(mw), replay_bad);
	} else if (at == POINT_LOSS) {
		/* the golden's own loss, beside this device's (the golden holds the loss's bits) */
		const struct sdc_golden_traj *g = &sh->golden->traj;
		float golden_loss = replay_loss;
		if (mw->step < g->steps)
			memcpy(&golden_loss, &g->loss[mw->step], 4);
		sdc_mt_finding_init(&f, mw, "golden-divergence", target, -1, -1);
		sdc_finding_set_f32(&f, golden_loss, loss);
		snprintf(f.detail, sizeof(f.detail),
			 "step %d: %s did not match the golden while the state entering the step matched: the forward "
			 "pass computed differently; began as %s; %s",
			 mw->step, point_names[at], nonfinite ? "a NaN/INF event" : "a silent change of value",
			 trust);
	} else {
		const struct sdc_mt_tensor *t = &ft[first_t];
		sdc_mt_finding_init(&f, mw, "golden-divergence", target, (int64_t)(first_i / (size_t)t->cols),
			     (int64_t)(first_i % (size_t)t->cols));
		/* the reference's element is the golden's where its replay matches the golden; where no replay
		 * here does, the golden's digest of the state beside this device's (the golden holds digests
		 * of the tensors, not their elements) */
		const struct sdc_golden_traj *g = &sh->golden->traj;
		if (ref != cpu && replay_bad >= 0 && mw->step < g->steps) {
			const uint64_t want = at == POINT_ENTRY ? g->entry[mw->step] : g->grads[mw->step];
			const uint64_t got = at == POINT_ENTRY ? sdc_mt_tensors_hash(mw->traj, mw->ntraj, NULL)
							       : sdc_mt_tensors_hash(mw->grads, mw->ngrads, NULL);
			sdc_finding_set_bits(&f, want, got, 64);
		} else {
			sdc_finding_set_f32(&f, d.expected, d.actual);
		}
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
	sdc_mt_free(cpu);
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
void sdc_mt_dp_gradient_diverged(struct mt_worker *mw)
{
	const struct mt_shared *sh = mw->sh;
	const struct sdc_golden_traj *g = &sh->golden->traj;
	char err[256];
	if (!mw->replay && !(mw->replay = sdc_mt_model_new(mw, err, sizeof(err)))) {
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
	const uint64_t again = sdc_mt_tensors_hash(rg, nrg, NULL);
	const bool transient = again == g->rank_grads[(size_t)sdc_mpi.rank * g->steps + mw->step];
	struct mt_difference d;
	sdc_mt_first_difference(mw->grads, mw->ngrads, (struct mt_side){ .list = mw->grads },
				(struct mt_side){ .flat = mw->capture }, &d);
	const int first_t = d.tensor;
	const size_t first_i = d.index, differing = d.elements;
	struct sdc_finding f;
	if (first_t < 0) {
		sdc_mt_finding_init(&f, mw, "rank-gradient", "G", -1, -1);
		snprintf(f.detail, sizeof(f.detail),
			 "step %d: the local gradients of rank %d (%s) differ from the golden's for this rank, and computing "
			 "them again here gives the same bits: this %s computes the model differently every time",
			 mw->step, sdc_mpi.rank, sdc_mpi.host, mt_device_word(mw));
		sdc_worker_report(mw->w, &f);
		return;
	}
	const struct sdc_mt_tensor *t = &mw->grads[first_t];
	sdc_mt_finding_init(&f, mw, "rank-gradient", "G", (int64_t)(first_i / (size_t)t->cols), (int64_t)(first_i % (size_t)t->cols));
	sdc_finding_set_f32(&f, d.expected, d.actual);
	snprintf(f.detail, sizeof(f.detail),
		 "step %d: rank %d (%.40s) computed its local gradients wrong before the all-reduce: first %.24s[%zu][%zu], "
		 "%zu element%s differ from the step computed again here, %s",
		 mw->step, sdc_mpi.rank, sdc_mpi.host, t->name, first_i / (size_t)t->cols, first_i % (size_t)t->cols,
		 differing, differing == 1 ? "" : "s",
		 transient ? "which matches the golden and goes to the all-reduce instead" : "which ALSO differs from the golden");
	snprintf(f.operation, sizeof(f.operation), "%.60s: tensor %s", sh->operation, t->name);
	sdc_worker_report(mw->w, &f);
	if (!transient)
		return;
	sdc_mt_tensors_from_flat(mw->grads, mw->ngrads, mw->capture);
	mw->grad_hash = again;
}

