/* minitrain data parallel across MPI ranks: the gradient all-reduce in rank order, and the state check before each step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/transport.h"
#include "device/gpu_loader.h"
#include "mpi/gpu_ranks.h"
#include "probes/minitrain/gpu_ops.h"
#include "kernels/xops.h"
#include "probes/minitrain/minitrain.h"
#include "base/message.h"

/*
 * The global gradient: every rank's, summed in rank order (so every rank gets the same bits),
 * then averaged. local holds total floats, all size x total. -1 when a rank did not take part.
 */
int sdc_mt_dp_reduce(struct sdc_mt_tensor *grads, int ngrads, size_t total, float *local, float *all)
{
	sdc_mt_tensors_to_flat(grads, ngrads, local);
	if (sdc_mpi_allgather(local, (int)(total * sizeof(float)), all, sdc_mpi.timeout))
		return -1;
	const float inv = 1.0f / (float)sdc_mpi.size;
	size_t off = 0;
	for (int i = 0; i < ngrads; i++) {
		float *g = grads[i].data;
		for (size_t e = 0; e < sdc_mt_numel(&grads[i]); e++)
			g[e] = sdc_xrank_mean(all, (long)total, sdc_mpi.size, (long)(off + e), inv);
		off += sdc_mt_numel(&grads[i]);
	}
	return 0;
}


/* The same over NCCL: the all-gather and the rank-order mean on this rank's GPU (the same
 * sdc_xrank_mean, so the same bits). */
static int dp_reduce_nccl(struct mt_worker *mw)
{
	const struct sdc_gpu_minitrain_ops *m = SDC_GPU_FAMILY(minitrain, SDC_GPU_MINITRAIN_VERSION);
	char err[256];
	int late = 0;
	sdc_mt_tensors_to_flat(mw->grads, mw->ngrads, mw->dp_local);
	if (m->nccl_rank_mean(mw->dp_nccl, mw->dp_local, (int64_t)mw->grads_total, mw->dp_all, &late, sdc_mpi.timeout,
			      err, sizeof(err))) {
		sdc_worker_error(mw->w, "the gradients' all-gather over NCCL in step %d%s: %s", mw->step,
				 late ? " did not finish in time (a rank, GPU or link stuck)" : " failed", err);
		return -1;
	}
	sdc_mt_tensors_from_flat(mw->grads, mw->ngrads, mw->dp_all);
	return 0;
}

void sdc_mt_hook_reduce(void *ctx, int step)
{
	(void)step;
	struct mt_worker *mw = ctx;
	if (mw->dp_failed)
		return;
	if (mw->dp_nccl) {
		mw->dp_failed = dp_reduce_nccl(mw) != 0;
		return;
	}
	if (!sdc_mt_dp_reduce(mw->grads, mw->ngrads, mw->grads_total, mw->dp_local, mw->dp_all))
		return;
	mw->dp_failed = true;
	sdc_worker_error(mw->w, "a rank did not take part in the gradient all-reduce of step %d within %.0f s",
			 mw->step, sdc_mpi.timeout);
}

/* Whether every rank says yes (all take the same transport); -1 when a rank did not answer. */
static int all_yes(struct mt_worker *mw, bool yes)
{
	uint64_t no = !yes;
	if (sdc_mpi_sum_u64(&no, sdc_mpi.timeout)) {
		sdc_worker_error(mw->w, "a rank did not take part in choosing the gradients' transport within %.0f s",
				 sdc_mpi.timeout);
		return -1;
	}
	return no == 0;
}

int sdc_mt_dp_open(struct mt_worker *mw, int transport)
{
	const struct sdc_gpu_module *m = sdc_gpu_ops();
	const struct sdc_gpu_minitrain_ops *mt = SDC_GPU_FAMILY(minitrain, SDC_GPU_MINITRAIN_VERSION);
	char why[256] = "";
	const struct sdc_device *gpu = sdc_gpu_of_rank(mw->w->ctx->run, why, sizeof(why)); /* as allreduce picks */
	int ordinal = gpu ? gpu->gpu.index : -1;
	if (transport == MT_DP_MPI)
		return 0;
	if (gpu && (!m || !m->nccl_init || !mt || !mt->nccl_rank_mean))
		snprintf(why, sizeof(why), "%s", m && !mt ? sdc_gpu_family_why("minitrain") : "the GPU module has no NCCL");
	else if (gpu && !m->nccl_version(why, sizeof(why)) && !why[0])
		snprintf(why, sizeof(why), "NCCL cannot be loaded");
	int yes = all_yes(mw, !why[0]);
	if (yes < 0)
		return -1;
	if (yes) {
		uint8_t id[SDC_GPU_NCCL_ID_BYTES];
		bool late = false;
		if (sdc_mpi_nccl_id(id, sdc_mpi.timeout, &late, why, sizeof(why))) {
			sdc_worker_error(mw->w, "%s", why);
			return -1;
		}
		mw->dp_nccl = sdc_gpu_nccl_init(id, sdc_mpi.size, sdc_mpi.rank, 1, &ordinal, "", "", sdc_mpi.size,
					   sdc_mpi.timeout, why, sizeof(why));
		if ((yes = all_yes(mw, mw->dp_nccl != NULL)) < 0)
			return -1;
		if (yes)
			return 0;
		if (mw->dp_nccl)
			m->nccl_destroy(mw->dp_nccl, 1);
		mw->dp_nccl = NULL;
		if (!why[0])
			snprintf(why, sizeof(why), "another rank's communicator failed");
	}
	if (transport == MT_DP_NCCL) {
		sdc_worker_error(mw->w, "dp_transport=nccl: not every rank can: %s", why[0] ? why : "another rank cannot");
		return -1;
	}
	bool any_gpu = false; /* (a rank without a GPU has nothing to say) */
	for (int d = 0; d < mw->w->ctx->run->ndevices; d++)
		any_gpu |= mw->w->ctx->run->devices[d].kind == SDC_DEVICE_GPU;
	if (any_gpu)
		sdc_warning("rank %d: xfmr-dp's gradients go over MPI, not NCCL: %s", sdc_mpi.rank,
			    why[0] ? why : "another rank cannot");
	return 0;
}

void sdc_mt_dp_close(struct mt_worker *mw)
{
	if (mw->dp_nccl)
		sdc_gpu_ops()->nccl_destroy(mw->dp_nccl, mw->dp_failed);
	mw->dp_nccl = NULL;
}

/*
 * Before each step: every rank's state hash and whether it wants to stop. All stop together; a
 * rank whose state differs from the majority names itself (Adept: the rank whose update diverged,
 * at the step it diverged). Returns true to go on.
 */
bool sdc_mt_dp_step_check(struct mt_worker *mw, uint64_t *entry_io)
{
	const int P = sdc_mpi.size;
	const uint64_t entry = *entry_io;
	const uint64_t mine[2] = { entry, !sdc_worker_continue(mw->w) };
	if (sdc_mpi_allgather(mine, sizeof(mine), mw->dp_hashes, sdc_mpi.timeout)) {
		mw->dp_failed = true;
		sdc_worker_error(mw->w, "a rank did not take part in the state check before step %d within %.0f s",
				 mw->step, sdc_mpi.timeout);
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
	if (sdc_mpi.rank == lead)
		sdc_mt_tensors_to_flat(mw->traj, mw->ntraj, state);
	for (int r = 0; r < P; r++) {
		if (mw->dp_hashes[2 * r] == agreed || (sdc_mpi.rank != lead && sdc_mpi.rank != r))
			continue;
		int late;
		const bool send = sdc_mpi.rank == lead;
		if (sdc_mpi_sendrecv(send ? state : NULL, send ? (int)(total * 4) : 0, r, send ? NULL : state,
				       send ? 0 : (int)(total * 4), lead, 0x3d0, sdc_mpi.timeout, &late)) {
			sdc_worker_error(mw->w, "rank %d did not take part in the state exchange of step %d within %.0f s",
					 late, mw->step, sdc_mpi.timeout);
			mw->dp_failed = true;
			free(state);
			return false;
		}
	}
	if (entry != agreed) {
		/* the first element of this rank's state that differs from the agreed one */
		struct mt_difference d;
		sdc_mt_first_difference(mw->traj, mw->ntraj, (struct mt_side){ .list = mw->traj },
					(struct mt_side){ .flat = state }, &d);
		const int first_t = d.tensor;
		const size_t first_i = d.index, differing = d.elements;
		struct sdc_finding f;
		const struct sdc_mt_tensor *t = first_t >= 0 ? &mw->traj[first_t] : NULL;
		sdc_mt_finding_init(&f, mw, "rank-divergence", t && t->role == SDC_MT_STATE ? "O" : "W",
			     t ? (int64_t)(first_i / (size_t)t->cols) : -1, t ? (int64_t)(first_i % (size_t)t->cols) : -1);
		if (t) {
			sdc_finding_set_f32(&f, d.expected, d.actual);
			snprintf(f.operation, sizeof(f.operation), "%.60s: tensor %s", mw->sh->operation, t->name);
		}
		snprintf(f.detail, sizeof(f.detail),
			 "step %d: the state of rank %d (%.40s) entering the step differs from %s of %d ranks (%d agree) at "
			 "%zu elements, first %.24s[%zu][%zu]; gradients are all-reduced, so it diverged here: in memory or "
			 "in its own update",
			 mw->step, sdc_mpi.rank, sdc_mpi.host, 2 * best > P ? "the majority" : "the largest group", P,
			 best, differing, t ? t->name : "?", t ? first_i / (size_t)t->cols : 0,
			 t ? first_i % (size_t)t->cols : 0);
		sdc_worker_report(mw->w, &f);
		/* back onto the agreed state */
		sdc_mt_tensors_from_flat(mw->traj, mw->ntraj, state);
		*entry_io = agreed;
	}
	free(state);
	return !stop;
}

