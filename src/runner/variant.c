/*
 * One variant of a plan entry (runner/variant.h): its burn's processes started and watched until
 * its time is up (runner/burn.h), their result digests voted on as they come, and one result per
 * device filed from what each worker reported and how its process ended.
 */
#include "runner/variant.h"
#include "runner/shares.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/message.h"
#include "base/clock.h"
#include "runner/burn.h"
#include "runner/runner.h"
#include "runner/vote.h"
#include "mpi/transport.h"

/* How often the parent wakes to draw progress and compare digests (a record wakes it sooner). */
#define TICK_SECONDS 0.1

struct variant_run {
	struct sdc_run *run;
	const struct sdc_plan_entry *e;
	const struct sdc_variant *variant;
	struct sdc_burn b;
	struct sdc_vote *vote;
	bool *vote_done;    /* per worker: its lane told the vote it is done */
	uint64_t *dissents; /* per worker: times it was the odd one out */
	int host_dissents;  /* iterations with no majority */
};

static const char *device_id(const struct variant_run *vr, int lane)
{
	return vr->run->devices[vr->b.w[lane].device].id;
}

static void dissent_finding(struct variant_run *vr, const struct sdc_vote_dissent *d, struct sdc_finding *f)
{
	memset(f, 0, sizeof(*f));
	f->cls = SDC_FINDING_CORRUPTION;
	sdc_strlcpy(f->kind, "device-disagreement", sizeof(f->kind));
	sdc_strlcpy(f->probe, vr->e->probe->name, sizeof(f->probe));
	sdc_strlcpy(f->variant, vr->variant->name, sizeof(f->variant));
	snprintf(f->operation, sizeof(f->operation), "%s %s result digest", vr->e->probe->name, vr->variant->name);
	f->iteration = d->iteration;
	f->time_to_failure = sdc_now() - vr->b.setup.t_start;
	f->row = f->col = -1;
}

/* Results that should be identical were not: name the odd device out, or the host. */
static void on_dissent(void *arg, const struct sdc_vote_dissent *d)
{
	struct variant_run *vr = arg;
	struct sdc_finding f;
	if (!d->has_majority) {
		/* Nobody can be blamed from digests alone (two devices, or a tie): a host finding. */
		if (++vr->host_dissents > 4) {
			sdc_run_count_dropped(vr->run);
			return;
		}
		dissent_finding(vr, d, &f);
		f.device = -1;
		int used = snprintf(f.detail, sizeof(f.detail),
				    "iteration %" PRIu64 " results differ with no majority among %d devices:", d->iteration,
				    d->participants);
		for (int i = 0; i < d->nlisted && used > 0 && (size_t)used < sizeof(f.detail); i++)
			used += snprintf(f.detail + used, sizeof(f.detail) - (size_t)used, " %s=%016" PRIx64,
					 device_id(vr, d->lanes[i]), d->digests[i]);
		sdc_run_add_finding(vr->run, &f);
		return;
	}
	for (int i = 0; i < d->nlisted; i++) {
		const int lane = d->lanes[i];
		if (++vr->dissents[lane] > 4) {
			sdc_run_count_dropped(vr->run);
			continue;
		}
		dissent_finding(vr, d, &f);
		f.device = vr->b.w[lane].device;
		snprintf(f.expected, sizeof(f.expected), "0x%016" PRIx64, d->majority_digest);
		snprintf(f.actual, sizeof(f.actual), "0x%016" PRIx64, d->digests[i]);
		snprintf(f.xor_mask, sizeof(f.xor_mask), "0x%016" PRIx64, d->digests[i] ^ d->majority_digest);
		snprintf(f.detail, sizeof(f.detail),
			 "iteration %" PRIu64 " result differs from the majority (%d of %d devices agree)", d->iteration,
			 d->agreeing, d->participants);
		sdc_run_add_finding(vr->run, &f);
	}
}

static void on_digest(void *arg, int worker, uint64_t iteration, uint64_t digest)
{
	struct variant_run *vr = arg;
	sdc_vote_record(vr->vote, worker, iteration, digest);
}

int sdc_variant_plain_results(struct sdc_run *run, const struct sdc_probe *p, const struct sdc_variant *v,
			      enum sdc_status st, const char *why)
{
	int n = 0;
	for (int d = 0; d < run->ndevices; d++) {
		if (!sdc_variant_runs_on(run, p, v, d) || run->devices[d].lost[0])
			continue;
		struct sdc_result *r = sdc_run_add_result(run);
		if (!r)
			return n;
		sdc_strlcpy(r->probe, p->name, sizeof(r->probe));
		sdc_strlcpy(r->variant, v->name, sizeof(r->variant));
		r->device = d;
		r->status = st;
		sdc_strlcpy(r->error, why, sizeof(r->error));
		n++;
	}
	return n;
}

/* The devices the variant runs on (into devs); a device lost earlier in the run gets a result
 * saying so and no worker. Returns how many. */
static int pick_devices(struct sdc_run *run, const struct sdc_plan_entry *e, const struct sdc_variant *v, int *devs)
{
	int nw = 0;
	for (int d = 0; d < run->ndevices; d++) {
		if (!sdc_variant_runs_on(run, e->probe, v, d))
			continue;
		if (!run->devices[d].lost[0]) {
			devs[nw++] = d;
			continue;
		}
		struct sdc_result *r = sdc_run_add_result(run);
		if (r) {
			sdc_strlcpy(r->probe, e->probe->name, sizeof(r->probe));
			sdc_strlcpy(r->variant, v->name, sizeof(r->variant));
			r->device = d;
			r->status = SDC_STATUS_ERROR;
			snprintf(r->error, sizeof(r->error), "not run: %.200s failed earlier in this run", run->devices[d].id);
		}
	}
	return nw;
}

static uint64_t total_iterations(const struct variant_run *vr)
{
	uint64_t it = 0;
	for (int i = 0; i < vr->b.rq.nworkers; i++)
		it += atomic_load_explicit(&vr->b.w[i].slot->progress.iterations, memory_order_relaxed);
	return it;
}

/* The vote stops waiting for a worker that ended. */
static void lanes_done(struct variant_run *vr)
{
	for (int i = 0; i < vr->b.rq.nworkers; i++)
		if ((vr->b.w[i].end != SDC_END_RUNNING || vr->b.w[i].digest_next == UINT64_MAX) && !vr->vote_done[i]) {
			vr->vote_done[i] = true;
			sdc_vote_lane_done(vr->vote, i);
		}
}

/*
 * The workers watched until the variant's time is up, told to stop, and given until they end:
 * a device still on its first iteration finishes it (sdc_worker_continue): every variant gets one
 * checked iteration, however short its share (admit's 4,000,000-row embbag tables under mpirun
 * -np 4 took 20 s and more where the grace was 10 s). What bounds it is progress: a worker with no
 * iteration or heartbeat for hang_timeout is named hung and killed (a few seconds after an
 * interrupt); past ten times the variant's time and ten hang_timeouts everything is told to stop
 * at once, and what is left SDC_BURN_KILL_GRACE later is killed.
 */
static void burn(struct variant_run *vr, double share, struct sdc_output *out, void (*poll_interrupt)(void))
{
	struct sdc_burn *b = &vr->b;
	const double hang = vr->e->common.hang_timeout, deadline = b->setup.t_start + share;
	char label[64];
	snprintf(label, sizeof(label), "%.23s/%.23s", vr->e->probe->name, vr->variant->name);
	while (sdc_burn_running(b) && sdc_now() < deadline && !sdc_stop_interrupted()) {
		poll_interrupt();
		sdc_burn_tick(b, SDC_MIN(TICK_SECONDS, SDC_MAX(0.0, deadline - sdc_now())), hang);
		lanes_done(vr);
		sdc_output_progress(out, label, sdc_now() - b->setup.t_start, share, total_iterations(vr), b->rq.nworkers);
		sdc_vote_compare(vr->vote, false, on_dissent, vr);
	}
	sdc_burn_signal(b, true, false, sdc_stop_interrupted());
	const double grace_end = sdc_now() + SDC_MAX(10.0, 10 * SDC_MAX(share, hang));
	double hard_at = 0;
	while (sdc_burn_running(b)) {
		poll_interrupt();
		const bool interrupted = sdc_stop_interrupted();
		if (!hard_at && (sdc_now() >= grace_end || interrupted)) {
			hard_at = sdc_now();
			sdc_burn_signal(b, true, true, interrupted);
		}
		if (hard_at && sdc_now() - hard_at > SDC_BURN_KILL_GRACE + (interrupted ? SDC_MIN(hang, 5.0) : hang))
			break;
		sdc_burn_tick(b, 0.02, interrupted ? SDC_MIN(hang, 5.0) : hang);
		lanes_done(vr);
		sdc_vote_compare(vr->vote, false, on_dissent, vr);
	}
	sdc_burn_finish(b, "did not stop when told to (the variant's time, and then a hard stop, were past)");
	lanes_done(vr);
}

static void result_status(struct variant_run *vr, int i, struct sdc_result *r, bool was_interrupted)
{
	struct sdc_burn_worker *w = &vr->b.w[i];
	struct sdc_device *dev = &vr->run->devices[w->device];
	const bool failed = w->failed || w->result.failed || w->end == SDC_END_LOST;
	const char *error = w->error[0] ? w->error : w->result.error;
	if (w->end == SDC_END_HUNG) {
		r->status = SDC_STATUS_HUNG;
		sdc_strlcpy(r->error, error, sizeof(r->error));
		sdc_strlcpy(dev->lost, "hung earlier in this run", sizeof(dev->lost));
	} else if (w->end == SDC_END_CRASHED) {
		r->status = SDC_STATUS_CRASHED;
		sdc_strlcpy(r->error, error, sizeof(r->error));
		sdc_strlcpy(dev->lost, "crashed earlier in this run", sizeof(dev->lost));
	} else if (r->corruptions) {
		r->status = SDC_STATUS_CORRUPT;
	} else if (failed) {
		r->status = SDC_STATUS_ERROR;
		sdc_strlcpy(r->error, error, sizeof(r->error));
		if (w->device_lost || w->result.device_lost || w->end == SDC_END_LOST)
			sdc_strlcpy(dev->lost, error, sizeof(dev->lost));
	} else if (!r->iterations) {
		r->status = SDC_STATUS_ERROR;
		sdc_strlcpy(r->error, was_interrupted ? "interrupted before the first iteration finished"
						      : "no iteration finished before the deadline",
			    sizeof(r->error));
	} else if (vr->b.setup.floor > 0 && !w->result.no_floor && r->rate < vr->b.setup.floor && !was_interrupted) {
		r->status = SDC_STATUS_DEGRADED;
		struct sdc_finding f = { .cls = SDC_FINDING_DEGRADED, .row = -1, .col = -1, .iteration = r->iterations,
					 .device = w->device };
		sdc_strlcpy(f.kind, "slow-device", sizeof(f.kind));
		snprintf(f.operation, sizeof(f.operation), "%s %s throughput", vr->e->probe->name, vr->variant->name);
		snprintf(f.detail, sizeof(f.detail), "%.1f %s is below the profile's floor of %.1f %s", r->rate,
			 vr->b.setup.rate_unit, vr->b.setup.floor, vr->b.setup.rate_unit);
		sdc_strlcpy(f.probe, vr->e->probe->name, sizeof(f.probe));
		sdc_strlcpy(f.variant, vr->variant->name, sizeof(f.variant));
		sdc_run_add_finding(vr->run, &f);
	} else {
		r->status = SDC_STATUS_OK;
	}
}

static void collect_results(struct variant_run *vr, double share)
{
	const struct sdc_burn_setup *su = &vr->b.setup;
	const bool was_interrupted = sdc_stop_interrupted();
	struct sdc_total total = { 0 };
	sdc_strlcpy(total.probe, vr->e->probe->name, sizeof(total.probe));
	sdc_strlcpy(total.variant, vr->variant->name, sizeof(total.variant));
	sdc_strlcpy(total.rate_unit, su->rate_unit, sizeof(total.rate_unit));
	for (int i = 0; i < vr->b.rq.nworkers; i++) {
		struct sdc_burn_worker *w = &vr->b.w[i];
		const struct sdc_burn_result *wr = &w->result;
		struct sdc_result *r = sdc_run_add_result(vr->run);
		if (!r)
			return;
		sdc_strlcpy(r->probe, vr->e->probe->name, sizeof(r->probe));
		sdc_strlcpy(r->variant, vr->variant->name, sizeof(r->variant));
		r->device = w->device;
		/* what it reported; where it ended without a report, what its slot says */
		r->iterations = w->reported ? wr->iterations : atomic_load(&w->slot->progress.iterations);
		r->ops = w->reported ? wr->ops : 0;
		r->seconds = w->reported ? wr->t_end - wr->t_start : 0;
		r->rate = r->seconds > 0 ? r->ops / r->seconds / su->rate_scale : 0;
		sdc_strlcpy(r->rate_unit, su->rate_unit, sizeof(r->rate_unit));
		sdc_strlcpy(r->iter_unit, su->iter_unit, sizeof(r->iter_unit));
		sdc_strlcpy(r->kernel, wr->kernel, sizeof(r->kernel));
		r->ref_rate = wr->ref_rate / su->rate_scale;
		const double deadline = su->t_start + share;
		r->overrun = w->reported ? sdc_shares_overrun(r->iterations, share, wr->t_end - deadline) : 0;
		sdc_strlcpy(r->ref_name, wr->ref_name, sizeof(r->ref_name));
		r->corruptions = SDC_MAX(wr->corruptions, w->corruption_findings) + vr->dissents[i];
		r->interrupted = was_interrupted;
		r->start_seconds = w->t_burn > 0 ? SDC_MAX(0.0, w->t_burn - vr->b.t_spawn - su->setup_seconds) : -1;
		if (w->work_done)
			sdc_hex(w->work_digest, sizeof(w->work_digest), r->work_digest);
		result_status(vr, i, r, was_interrupted);
		if (!w->failed && !wr->failed && r->iterations && w->end == SDC_END_CLEAN) {
			total.rate += r->rate;
			total.devices++;
			total.gpus += vr->run->devices[w->device].kind == SDC_DEVICE_GPU;
		}
	}
	sdc_run_add_total(vr->run, &total);
}

int sdc_variant_run(struct sdc_run *run, const struct sdc_plan_entry *e, const struct sdc_variant *v, double share,
		    struct sdc_output *out, void (*poll_interrupt)(void))
{
	const int first = run->nresults;
	int *devs = calloc((size_t)run->ndevices + 1, sizeof(int));
	struct variant_run *vr = calloc(1, sizeof(*vr));
	if (!devs || !vr) {
		free(devs), free(vr);
		return -1;
	}
	const int nw = pick_devices(run, e, v, devs);
	*vr = (struct variant_run){ .run = run, .e = e, .variant = v, .vote = sdc_vote_new(nw),
				    .vote_done = calloc((size_t)nw + 1, sizeof(bool)),
				    .dissents = calloc((size_t)nw + 1, sizeof(uint64_t)) };
	if (!vr->vote || !vr->vote_done || !vr->dissents) {
		sdc_variant_plain_results(run, e->probe, v, SDC_STATUS_ERROR, "out of memory");
		goto out;
	}
	if (!nw)
		goto out; /* every device it runs on was lost earlier */
	bool stall = false; /* (the allreduce probe's X fault: its library stops returning) */
	for (int i = 0; i < run->ninject; i++)
		stall |= !strcmp(run->inject[i].probe, e->probe->name) && !strcmp(run->inject[i].target, "X");
	const struct sdc_burn_request rq = {
		.run = run, .entry = e, .variant = v, .devices = devs, .nworkers = nw, .share = share,
		.fleet_calls = sdc_mpi.active && (v->per_rank || (e->probe->needs & SDC_NEED_MPI)), .may_stall = stall,
	};
	if (sdc_burn_start(&vr->b, &rq)) {
		sdc_variant_plain_results(run, e->probe, v, SDC_STATUS_ERROR, vr->b.setup_error);
		goto out;
	}
	vr->b.on_digest = on_digest;
	vr->b.arg = vr;
	if (sdc_burn_wait_setup(&vr->b, poll_interrupt)) {
		sdc_variant_plain_results(run, e->probe, v, vr->b.interrupted ? SDC_STATUS_NOT_RUN : SDC_STATUS_ERROR,
					  vr->b.setup_error);
		goto out;
	}
	burn(vr, share, out, poll_interrupt);
	sdc_output_clear_progress(out);
	sdc_vote_compare(vr->vote, true, on_dissent, vr);
	collect_results(vr, share);
out:
	sdc_output_results(out, run, first, run->nresults);
	sdc_burn_release(&vr->b);
	sdc_vote_free(vr->vote);
	free(vr->vote_done);
	free(vr->dissents);
	free(vr);
	free(devs);
	return 0;
}
