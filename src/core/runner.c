/*
 * The runner (core/runner.h): each plan entry's variants run one after another, a worker thread per
 * device, watched for hangs and crashes until the variant's time is up, their digests voted on,
 * one result per device filed, the GPUs' health compared before and after. What a worker calls
 * (faults, errors, findings, digests) is in worker.c, the --inject checks in inject_check.c.
 */
#include "core/runner.h"
#include "fleet.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "facts_json.h"
#include "probe.h"
#include "core/registry.h"
#include "core/supervise.h"
#include "fatal.h"
#include "hwerr.h"
#include "base/util.h"
#include "core/vote.h"

/* How often the main thread wakes to draw progress and compare digests. */
#define TICK_SECONDS 0.1

/* Under MPI an interrupt on one rank stops them all: this rank's is passed on, a peer's taken. */
static void poll_fleet_interrupt(void)
{
	int from;
	if (sdc_fleet_interrupt_poll(sdc_stop_interrupted(), &from) && !sdc_stop_interrupted()) {
		sdc_note("rank %d (%s) was interrupted: this rank stops too", from, sdc_fleet_host(from));
		sdc_stop_interrupt();
	}
}

/* ---- one variant ---- */

struct variant_run {
	struct sdc_probe_ctx ctx;
	uint64_t *dissents; /* per worker: times it was the odd one out (main thread only) */
	int host_dissents;  /* iterations with no majority */
	atomic_int finished;
};

/* What a hung worker may still touch, kept to the process's end: never freed, and reachable from
 * here (so LeakSanitizer does not call it a leak). Main thread only. */
struct abandoned {
	struct variant_run *vr;
	void *threads, *devs, *seen, *since;
	struct abandoned *next;
};
static struct abandoned *abandoned_runs;

static void abandon(struct variant_run *vr, void *threads, void *devs, void *seen, void *since)
{
	struct abandoned *a = malloc(sizeof(*a));
	if (!a)
		return; /* (then only unreachable: still never freed) */
	*a = (struct abandoned){ vr, threads, devs, seen, since, abandoned_runs };
	abandoned_runs = a;
}

static void dissent_finding(struct variant_run *vr, const struct sdc_vote_dissent *d, struct sdc_finding *f)
{
	memset(f, 0, sizeof(*f));
	f->cls = SDC_FINDING_CORRUPTION;
	sdc_strlcpy(f->kind, "device-disagreement", sizeof(f->kind));
	sdc_strlcpy(f->probe, vr->ctx.probe->name, sizeof(f->probe));
	sdc_strlcpy(f->variant, vr->ctx.variant->name, sizeof(f->variant));
	snprintf(f->operation, sizeof(f->operation), "%s %s result digest", vr->ctx.probe->name,
		 vr->ctx.variant->name);
	f->iteration = d->iteration;
	f->time_to_failure = sdc_now() - vr->ctx.t_start;
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
			sdc_run_count_dropped(vr->ctx.run);
			return;
		}
		dissent_finding(vr, d, &f);
		f.device = -1;
		int used = snprintf(f.detail, sizeof(f.detail),
				    "iteration %" PRIu64 " results differ with no majority among %d devices:", d->iteration,
				    d->participants);
		for (int i = 0; i < d->nlisted && used > 0 && (size_t)used < sizeof(f.detail); i++)
			used += snprintf(f.detail + used, sizeof(f.detail) - (size_t)used, " %s=%016" PRIx64,
					 vr->ctx.workers[d->lanes[i]].dev->id, d->digests[i]);
		sdc_run_add_finding(vr->ctx.run, &f);
		return;
	}
	for (int i = 0; i < d->nlisted; i++) {
		const int lane = d->lanes[i];
		if (++vr->dissents[lane] > 4) {
			sdc_run_count_dropped(vr->ctx.run);
			continue;
		}
		dissent_finding(vr, d, &f);
		f.device = vr->ctx.workers[lane].device;
		snprintf(f.expected, sizeof(f.expected), "0x%016" PRIx64, d->majority_digest);
		snprintf(f.actual, sizeof(f.actual), "0x%016" PRIx64, d->digests[i]);
		snprintf(f.xor_mask, sizeof(f.xor_mask), "0x%016" PRIx64, d->digests[i] ^ d->majority_digest);
		snprintf(f.detail, sizeof(f.detail),
			 "iteration %" PRIu64 " result differs from the majority (%d of %d devices agree)", d->iteration,
			 d->agreeing, d->participants);
		sdc_run_add_finding(vr->ctx.run, &f);
	}
}

/* A worker whose probe died of a fault (core/supervise.h): the finding, and the device is given
 * no more work in this run (what else it held may be what broke). */
static void worker_crashed(struct sdc_worker *w, const struct sdc_crash *c)
{
	struct sdc_finding f;
	sdc_crash_finding(w, c, &f);
	f.time_to_failure = sdc_now() - w->ctx->t_start;
	sdc_worker_file_finding(w, &f);
	w->crashed = sdc_crash_is_fault(c);
	snprintf(w->error, sizeof(w->error), "%s (%s) in iteration %" PRIu64 ", instruction at %.120s", f.signal,
		 f.si_code, c->iteration, f.ip);
	w->failed = true;
	w->device_lost = true;
	atomic_fetch_add(&w->ctx->lost_workers, 1);
}

/* A worker's end, counted once: by itself, or by the runner when it named it hung. */
static bool worker_end(struct sdc_worker *w, int how)
{
	int running = 0;
	if (!atomic_compare_exchange_strong(&w->ended, &running, how))
		return false;
	sdc_vote_lane_done(w->ctx->vote, w->index);
	atomic_fetch_add(&((struct variant_run *)w->ctx)->finished, 1); /* ctx is the first member */
	return true;
}

static void *worker_main(void *arg)
{
	struct sdc_worker *w = arg;
	char err[200], name[16];
	snprintf(name, sizeof(name), "sdc %.11s", w->dev->id); /* what top -H and /proc show */
	pthread_setname_np(pthread_self(), name);
	const int bound = sdc_device_bind(w->dev, err, sizeof(err));
	w->t_start = sdc_now();
	w->t_end = 0;
	struct sdc_crash crash;
	void (*const lane)(struct sdc_worker *) = w->ctx->probe->lane[w->dev->kind];
	if (bound)
		sdc_worker_error(w, "%s", err);
	else if (!lane)
		sdc_worker_error(w, "%s: the %s probe has no %s lane", w->dev->id, w->ctx->probe->name,
				 sdc_device_kind_name(w->dev->kind));
	else if (sdc_supervise_call(w, lane, &crash))
		worker_crashed(w, &crash);
	if (!w->t_end) /* (where the probe did not stop the clock before a check at its end) */
		w->t_end = sdc_now();
	worker_end(w, 1);
	return NULL;
}

/* Each worker's progress (iterations and heartbeats) and when it last moved, on the main thread. */
struct hang_watch {
	uint64_t *seen;
	double *since;
	int hung;
};

/* Names the workers that made no progress for timeout seconds hung: a finding at the device, the
 * device given no more work, the worker left behind (never joined). */
static void watch_hangs(struct variant_run *vr, struct hang_watch *hw, int started, double timeout)
{
	struct sdc_probe_ctx *ctx = &vr->ctx;
	const double now = sdc_now();
	for (int i = 0; i < started; i++) {
		struct sdc_worker *w = &ctx->workers[i];
		const uint64_t it = atomic_load(&w->iterations), p = it + atomic_load(&w->heartbeat);
		if (atomic_load(&w->ended) || p != hw->seen[i] || !hw->since[i]) {
			hw->seen[i] = p, hw->since[i] = now;
			continue;
		}
		if (now - hw->since[i] < timeout || !worker_end(w, 2))
			continue;
		hw->hung++;
		atomic_fetch_add(&ctx->lost_workers, 1);
		struct sdc_finding f = { .cls = SDC_FINDING_HANG, .device = w->device, .iteration = it, .row = -1, .col = -1 };
		sdc_strlcpy(f.kind, "hang", sizeof(f.kind));
		sdc_strlcpy(f.probe, ctx->probe->name, sizeof(f.probe));
		sdc_strlcpy(f.variant, ctx->variant->name, sizeof(f.variant));
		snprintf(f.operation, sizeof(f.operation), "%.40s %.40s worker on %.12s", ctx->probe->name,
			 ctx->variant->name, w->dev->id);
		f.time_to_failure = now - ctx->t_start;
		snprintf(f.detail, sizeof(f.detail),
			 "the worker on %s finished no iteration and sent no heartbeat for %.0f s (in iteration %" PRIu64
			 "): stuck (a livelock, a stuck GPU lane, or the host stopping it); left behind, the run went on",
			 w->dev->id, timeout, it);
		sdc_run_add_finding(ctx->run, &f);
		snprintf(w->error, sizeof(w->error), "no progress for %.0f s in iteration %" PRIu64, timeout, it);
		sdc_strlcpy(ctx->run->devices[w->device].lost, "hung earlier in this run",
			    sizeof(ctx->run->devices[w->device].lost));
	}
}

/* Whether device d runs variant v: its kind, and for a per-rank variant one such device: the first,
 * or on GPUs the one the rank's place on its host picks (one rank per GPU, as NCCL needs: two
 * ranks on one GPU would be refused). */
static bool runs_on(const struct sdc_run *run, const struct sdc_probe *p, const struct sdc_variant *v, int d)
{
	if (!(v->devices & (1u << run->devices[d].kind)))
		return false;
	if (!v->per_rank && !(p->needs & SDC_NEED_MPI))
		return true;
	int before = 0, all = 0;
	for (int i = 0; i < run->ndevices; i++)
		if (v->devices & (1u << run->devices[i].kind))
			before += i < d, all++;
	return before == (run->devices[d].kind == SDC_DEVICE_GPU ? sdc_fleet.local_rank % all : 0);
}

/* Results of a variant that did not run, one per device it would have run on; returns how many. */
static int add_plain_results(struct sdc_run *run, const struct sdc_probe *p, const struct sdc_variant *v,
			     enum sdc_status st, const char *why)
{
	int n = 0;
	for (int d = 0; d < run->ndevices; d++) {
		if (!runs_on(run, p, v, d) || run->devices[d].lost[0])
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

static uint64_t total_iterations(const struct sdc_probe_ctx *ctx)
{
	uint64_t it = 0;
	for (int i = 0; i < ctx->nworkers; i++)
		it += atomic_load_explicit(&ctx->workers[i].iterations, memory_order_relaxed);
	return it;
}

static void sleep_seconds(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
	nanosleep(&ts, NULL); /* EINTR is fine: the loop re-checks the stop flag */
}

static void collect_results(struct variant_run *vr)
{
	struct sdc_probe_ctx *ctx = &vr->ctx;
	const bool was_interrupted = sdc_stop_interrupted();
	struct sdc_total total;
	memset(&total, 0, sizeof(total));
	sdc_strlcpy(total.probe, ctx->probe->name, sizeof(total.probe));
	sdc_strlcpy(total.variant, ctx->variant->name, sizeof(total.variant));
	sdc_strlcpy(total.rate_unit, ctx->rate_unit, sizeof(total.rate_unit));
	for (int i = 0; i < ctx->nworkers; i++) {
		struct sdc_worker *w = &ctx->workers[i];
		struct sdc_result *r = sdc_run_add_result(ctx->run);
		if (!r)
			return;
		sdc_strlcpy(r->probe, ctx->probe->name, sizeof(r->probe));
		sdc_strlcpy(r->variant, ctx->variant->name, sizeof(r->variant));
		r->device = w->device;
		r->iterations = atomic_load(&w->iterations);
		r->ops = w->ops;
		r->seconds = w->t_end - w->t_start;
		r->rate = r->seconds > 0 ? w->ops / r->seconds / ctx->rate_scale : 0;
		sdc_strlcpy(r->rate_unit, ctx->rate_unit, sizeof(r->rate_unit));
		sdc_strlcpy(r->iter_unit, ctx->iter_unit, sizeof(r->iter_unit));
		sdc_strlcpy(r->kernel, w->kernel, sizeof(r->kernel));
		r->ref_rate = w->ref_rate / ctx->rate_scale;
		r->overrun = sdc_runner_overrun(r->iterations, ctx->deadline - ctx->t_start, w->t_end - ctx->deadline);
		sdc_strlcpy(r->ref_name, w->ref_name, sizeof(r->ref_name));
		r->corruptions = w->corruptions + vr->dissents[i];
		r->interrupted = was_interrupted;
		if (w->work_done)
			sdc_hex(w->work_digest, sizeof(w->work_digest), r->work_digest);
		if (!w->failed && r->iterations) {
			total.rate += r->rate;
			total.devices++;
			total.gpus += w->dev->kind == SDC_DEVICE_GPU;
		}
		if (atomic_load(&w->ended) == 2) {
			r->status = SDC_STATUS_HUNG;
			sdc_strlcpy(r->error, w->error, sizeof(r->error));
		} else if (w->crashed) {
			r->status = SDC_STATUS_CRASHED;
			sdc_strlcpy(r->error, w->error, sizeof(r->error));
			sdc_strlcpy(ctx->run->devices[w->device].lost, "crashed earlier in this run",
				    sizeof(ctx->run->devices[w->device].lost));
		} else if (r->corruptions) {
			r->status = SDC_STATUS_CORRUPT;
		} else if (w->failed) {
			r->status = SDC_STATUS_ERROR;
			sdc_strlcpy(r->error, w->error, sizeof(r->error));
			if (w->device_lost)
				sdc_strlcpy(ctx->run->devices[w->device].lost, w->error, sizeof(ctx->run->devices[w->device].lost));
		} else if (!r->iterations) {
			r->status = SDC_STATUS_ERROR;
			sdc_strlcpy(r->error, was_interrupted ? "interrupted before the first iteration finished"
							      : "no iteration finished before the deadline",
				    sizeof(r->error));
		} else if (ctx->floor > 0 && !w->no_floor && r->rate < ctx->floor && !was_interrupted) {
			r->status = SDC_STATUS_DEGRADED;
			struct sdc_finding f;
			memset(&f, 0, sizeof(f));
			f.cls = SDC_FINDING_DEGRADED;
			sdc_strlcpy(f.kind, "slow-device", sizeof(f.kind));
			snprintf(f.operation, sizeof(f.operation), "%s %s throughput", ctx->probe->name,
				 ctx->variant->name);
			f.row = f.col = -1;
			f.iteration = r->iterations;
			snprintf(f.detail, sizeof(f.detail), "%.1f %s is below the profile's floor of %.1f %s",
				 r->rate, ctx->rate_unit, ctx->floor, ctx->rate_unit);
			sdc_strlcpy(f.probe, ctx->probe->name, sizeof(f.probe));
			sdc_strlcpy(f.variant, ctx->variant->name, sizeof(f.variant));
			f.device = w->device;
			sdc_run_add_finding(ctx->run, &f);
		} else {
			r->status = SDC_STATUS_OK;
		}
	}
	sdc_run_add_total(ctx->run, &total);
}

/* How many devices the variant runs on; a device lost earlier in the run gets a result saying so. */
static int count_workers(struct sdc_run *run, const struct sdc_plan_entry *e, const struct sdc_variant *variant)
{
	int nw = 0;
	for (int d = 0; d < run->ndevices; d++) {
		if (!runs_on(run, e->probe, variant, d))
			continue;
		if (!run->devices[d].lost[0]) {
			nw++;
			continue;
		}
		/* A device lost earlier in the run: said, not tried again. */
		struct sdc_result *r = sdc_run_add_result(run);
		if (r) {
			sdc_strlcpy(r->probe, e->probe->name, sizeof(r->probe));
			sdc_strlcpy(r->variant, variant->name, sizeof(r->variant));
			r->device = d;
			r->status = SDC_STATUS_ERROR;
			snprintf(r->error, sizeof(r->error), "not run: %.200s failed earlier in this run", run->devices[d].id);
		}
	}
	return nw;
}

/*
 * The variant's workers started, watched until its time is up (a hung one named), stopped and
 * joined (a hung one left behind, detached).
 */
static void burn(struct variant_run *vr, const struct sdc_plan_entry *e, double duration, pthread_t *threads,
		 struct hang_watch *hw, struct sdc_output *out)
{
	struct sdc_probe_ctx *ctx = &vr->ctx;
	const int nw = ctx->nworkers;
	int started = 0;
	atomic_store(&sdc_stop_requested, sdc_stop_interrupted());
	ctx->t_start = sdc_now();
	const double deadline = ctx->t_start + duration;
	ctx->deadline = deadline; /* (before the workers start: a probe may plan by it) */
	for (; started < nw; started++) {
		int err = pthread_create(&threads[started], NULL, worker_main, &ctx->workers[started]);
		if (err) {
			sdc_error("cannot start a worker thread: %s", strerror(err));
			atomic_store(&sdc_stop_requested, true);
			break;
		}
	}
	char label[64];
	snprintf(label, sizeof(label), "%.23s/%.23s", e->probe->name, ctx->variant->name);
	for (;;) {
		double now = sdc_now();
		poll_fleet_interrupt();
		watch_hangs(vr, hw, started, e->common.hang_timeout);
		if (atomic_load(&sdc_stop_requested) || atomic_load(&vr->finished) == started || now >= deadline)
			break;
		sleep_seconds(SDC_MIN(TICK_SECONDS, deadline - now));
		sdc_output_progress(out, label, sdc_now() - ctx->t_start, duration, total_iterations(ctx), nw);
		sdc_vote_compare(ctx->vote, false, on_dissent, vr);
	}
	atomic_store(&sdc_stop_requested, true);
	/* A device still on its first iteration finishes it (sdc_worker_continue): every variant gets
	 * one checked iteration, however short its share (admit's 4,000,000-row embbag tables under
	 * mpirun -np 4 took 20 s and more where the grace was 10 s: UNKNOWN). What bounds it is
	 * progress: a worker with no iteration or heartbeat for hang_timeout is named hung (a few
	 * seconds after an interrupt); past ten times the variant's time and ten hang_timeouts
	 * everything stops all the same. */
	const double grace_end = sdc_now() + SDC_MAX(10.0, 10 * SDC_MAX(duration, e->common.hang_timeout));
	while (atomic_load(&vr->finished) < started) {
		poll_fleet_interrupt();
		if (sdc_now() >= grace_end || sdc_stop_interrupted())
			atomic_store(&ctx->hard_stop, true);
		watch_hangs(vr, hw, started,
			    sdc_stop_interrupted() ? SDC_MIN(e->common.hang_timeout, 5.0) : e->common.hang_timeout);
		sleep_seconds(0.02);
	}
	atomic_store(&ctx->hard_stop, true);
	for (int i = 0; i < started; i++) {
		if (atomic_load(&ctx->workers[i].ended) == 2)
			pthread_detach(threads[i]); /* hung: left behind */
		else
			pthread_join(threads[i], NULL);
	}
	for (int i = started; i < nw; i++) {
		sdc_worker_error(&ctx->workers[i], "worker thread could not start");
		sdc_vote_lane_done(ctx->vote, i);
	}
}

static int run_variant(struct sdc_run *run, const struct sdc_plan_entry *e, const struct sdc_variant *variant,
		       double duration, struct sdc_output *out)
{
	const int first = run->nresults, nw = count_workers(run, e, variant);
	struct variant_run *vr = calloc(1, sizeof(*vr));
	if (!vr)
		return -1;
	struct sdc_probe_ctx *ctx = &vr->ctx;
	ctx->probe = e->probe;
	ctx->opts = e->opts;
	ctx->variant = variant;
	ctx->seed = run->seed;
	ctx->run = run;
	ctx->max_iterations = (uint64_t)e->common.iterations;
	sdc_strlcpy(ctx->rate_unit, "GOP/s", sizeof(ctx->rate_unit));
	sdc_strlcpy(ctx->iter_unit, "iterations", sizeof(ctx->iter_unit));
	ctx->rate_scale = 1e9;
	ctx->workers = calloc((size_t)nw + 1, sizeof(*ctx->workers));
	vr->dissents = calloc((size_t)nw + 1, sizeof(uint64_t));
	pthread_t *threads = calloc((size_t)nw + 1, sizeof(pthread_t));
	const struct sdc_device **devs = calloc((size_t)nw + 1, sizeof(*devs));
	ctx->vote = sdc_vote_new(nw);
	ctx->nworkers = nw;
	struct hang_watch hw = { .seen = calloc((size_t)nw + 1, sizeof(uint64_t)),
				 .since = calloc((size_t)nw + 1, sizeof(double)) };
	if (!ctx->workers || !vr->dissents || !threads || !devs || !ctx->vote || !hw.seen || !hw.since) {
		add_plain_results(run, e->probe, variant, SDC_STATUS_ERROR, "out of memory");
		goto out_free;
	}
	if (!nw)
		goto out_output; /* every device it runs on was lost earlier */
	for (int d = 0, i = 0; d < run->ndevices; d++) {
		if (!runs_on(run, e->probe, variant, d) || run->devices[d].lost[0])
			continue;
		ctx->workers[i].ctx = ctx;
		ctx->workers[i].index = i;
		ctx->workers[i].device = d;
		ctx->workers[i].dev = devs[i] = &run->devices[d];
		if (sdc_sha256_init(&ctx->workers[i].work)) {
			add_plain_results(run, e->probe, variant, SDC_STATUS_ERROR, "cannot create a SHA-256 context");
			goto out_free;
		}
		i++;
	}
	ctx->faults = sdc_fault_plan_new(run->inject, run->ninject, e->probe->name, variant->name, ctx->seed, devs, nw);
	for (int i = 0; i < run->ninject; i++)
		ctx->fatal_planned |= !strcmp(run->inject[i].probe, e->probe->name) && sdc_fatal_target(run->inject[i].target);
	if (!ctx->faults) {
		add_plain_results(run, e->probe, variant, SDC_STATUS_ERROR, "out of memory");
		goto out_free;
	}
	ctx->t_start = sdc_now();
	if (e->probe->setup && e->probe->setup(ctx)) {
		add_plain_results(run, e->probe, variant, SDC_STATUS_ERROR, ctx->error);
		goto out_output;
	}

	burn(vr, e, duration, threads, &hw, out);
	sdc_output_clear_progress(out);
	sdc_vote_compare(ctx->vote, true, on_dissent, vr);
	/* a hung worker may still be using what teardown frees: kept to the process's end */
	if (e->probe->teardown && !hw.hung)
		e->probe->teardown(ctx);
	collect_results(vr);
out_output:
	sdc_output_results(out, run, first, run->nresults);
	if (hw.hung) {
		abandon(vr, threads, devs, hw.seen, hw.since); /* (a hung worker may still touch them) */
		return 0;
	}
out_free:
	free(hw.seen), free(hw.since);
	for (int i = 0; ctx->workers && i < nw; i++)
		if (ctx->workers[i].work.ctx)
			sdc_sha256_release(&ctx->workers[i].work);
	sdc_fault_plan_free(ctx->faults);
	sdc_vote_free(ctx->vote);
	free(devs);
	free(threads);
	free(vr->dissents);
	free(ctx->workers);
	free(vr);
	return 0;
}

/* Each GPU's health from NVML, before (slot 0) or after (slot 1) the run. */
static void gpu_health(struct sdc_run *run, int slot)
{
	if (!run->health)
		run->health = calloc((size_t)run->ndevices * 2, sizeof(*run->health));
	for (int d = 0; run->health && d < run->ndevices; d++)
		if (run->devices[d].kind == SDC_DEVICE_GPU)
			sdc_nvml_health(run->devices[d].gpu.pci_bus_id, &run->health[2 * d + slot]);
}

static void health_finding(struct sdc_run *run, int d, const char *fmt, ...) SDC_PRINTF(3, 4);
static void health_finding(struct sdc_run *run, int d, const char *fmt, ...)
{
	struct sdc_finding f = { .cls = SDC_FINDING_CORRUPTION, .device = d, .row = -1, .col = -1 };
	sdc_strlcpy(f.probe, "health", sizeof(f.probe));
	sdc_strlcpy(f.kind, "ecc-uncorrectable", sizeof(f.kind));
	snprintf(f.operation, sizeof(f.operation), "NVML memory error counters of %s (%s)", run->devices[d].id,
		 run->devices[d].gpu.pci_bus_id);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f.detail, sizeof(f.detail), fmt, ap);
	va_end(ap);
	sdc_run_add_finding(run, &f);
}

/* An uncorrectable memory error that appeared during the run is corruption: the GPU's memory
 * lost data its ECC could not restore, whatever the probes saw. */
static void health_compare(struct sdc_run *run)
{
	for (int d = 0; run->health && d < run->ndevices; d++) {
		const struct sdc_gpu_health *b = &run->health[2 * d], *a = &run->health[2 * d + 1];
		if (run->devices[d].kind != SDC_DEVICE_GPU || !b->valid || !a->valid)
			continue;
		if (b->ecc_uncorrected >= 0 && a->ecc_uncorrected > b->ecc_uncorrected)
			health_finding(run, d, "%" PRId64 " new uncorrectable ECC error%s during the run (volatile count %" PRId64
				       " -> %" PRId64 ")", a->ecc_uncorrected - b->ecc_uncorrected,
				       a->ecc_uncorrected - b->ecc_uncorrected == 1 ? "" : "s", b->ecc_uncorrected,
				       a->ecc_uncorrected);
		if (b->remapped_unc >= 0 && a->remapped_unc > b->remapped_unc)
			health_finding(run, d, "%" PRId64 " row%s remapped for uncorrectable errors during the run",
				       a->remapped_unc - b->remapped_unc, a->remapped_unc - b->remapped_unc == 1 ? "" : "s");
		if (b->retired_dbe >= 0 && a->retired_dbe > b->retired_dbe)
			health_finding(run, d, "%" PRId64 " page%s retired for double-bit errors during the run",
				       a->retired_dbe - b->retired_dbe, a->retired_dbe - b->retired_dbe == 1 ? "" : "s");
		if (b->remap_failure == 0 && a->remap_failure == 1)
			health_finding(run, d, "a row remapping failed during the run");
	}
}

/* The plan entry's variants (its probe's, or the one it names); at least a "default" one. */
static int entry_variants(const struct sdc_plan_entry *e, struct sdc_variant *variants)
{
	int nv = e->probe->variants ? e->probe->variants(e->opts, variants, SDC_VARIANTS_MAX) : 0;
	if (nv <= 0) {
		variants[0] = (struct sdc_variant){ .name = "default", .devices = SDC_ON_CPU };
		nv = 1;
	}
	if (e->only_variant[0]) {
		int keep = 0;
		for (int v = 0; v < nv; v++)
			if (!strcmp(variants[v].name, e->only_variant))
				variants[keep++] = variants[v];
		nv = keep;
	}
	return nv;
}

/* A variant for a kind of device this run has none of (GPU variants on a host without GPUs: the
 * header said why) is not run: keeps the others first in variants[], returns how many, and in
 * *gpu_only how many of them run on GPUs alone. */
static int runnable_variants(const struct sdc_run *run, const struct sdc_plan_entry *e, struct sdc_variant *variants,
			     int nv, int *gpu_only)
{
	int runnable = 0;
	*gpu_only = 0;
	for (int v = 0; v < nv; v++) {
		bool any = false;
		for (int d = 0; d < run->ndevices && !any; d++)
			any = runs_on(run, e->probe, &variants[v], d);
		if (any) {
			variants[runnable++] = variants[v];
			*gpu_only += variants[v].devices == SDC_ON_GPU;
		}
	}
	return runnable;
}

/* A variant's share of its probe's time. With gpu_duration, the GPU-only variants have a time of
 * their own, so GPUs on the host do not shorten the CPUs' burn. */
static double variant_share(const struct sdc_plan_entry *e, const struct sdc_variant *v, int runnable, int gpu_only)
{
	const bool own = e->common.gpu_duration > 0 && gpu_only;
	return !own				  ? e->common.duration / runnable
	       : v->devices == SDC_ON_GPU ? e->common.gpu_duration / gpu_only
					  : e->common.duration / SDC_MAX(1, runnable - gpu_only);
}

double sdc_runner_overrun(uint64_t iterations, double span, double late)
{
	return iterations == 1 && late > SDC_MAX(0.05, 0.25 * span) ? late : 0;
}

int sdc_runner_short_shares(const struct sdc_run *run, const struct sdc_plan *plan, double below, double *least)
{
	int n = 0;
	*least = INFINITY;
	for (int i = 0; i < plan->n; i++) {
		const struct sdc_plan_entry *e = &plan->entries[i];
		struct sdc_variant variants[SDC_VARIANTS_MAX];
		char why[256];
		if (((e->probe->needs & SDC_NEED_MPI) && e->common.optional && !sdc_fleet.active) ||
		    !sdc_probe_usable(e->probe, run, why, sizeof(why)))
			continue; /* (not run: said where the run gets to it) */
		int gpu_only;
		const int runnable = runnable_variants(run, e, variants, entry_variants(e, variants), &gpu_only);
		for (int v = 0; v < runnable; v++) {
			const double share = variant_share(e, &variants[v], runnable, gpu_only);
			if (share < below)
				n++, *least = fmin(*least, share);
		}
	}
	return n;
}

int sdc_runner_execute(struct sdc_run *run, const struct sdc_plan *plan, struct sdc_output *out)
{
	if (sdc_supervise_init())
		sdc_warning("the handlers that turn a crashing worker into a finding could not be installed: a crash "
			    "ends the run");
	gpu_health(run, 0);
	struct sdc_hwerr *hwerr = sdc_hwerr_begin(run); /* the hardware's error counters, before and during */
	/* What every probe builds on goes into every report (the BLAS of the fast class, ...). */
	for (int i = 0; sdc_probes[i]; i++)
		if (sdc_probes[i]->environment)
			sdc_probes[i]->environment(sdc_facts_of(run->environment));
	for (int i = 0; i < plan->n; i++) {
		const struct sdc_plan_entry *e = &plan->entries[i];
		struct sdc_variant variants[SDC_VARIANTS_MAX];
		const int nv = entry_variants(e, variants);
		char why[256];
		/* A cross-node probe in a profile that also runs alone (admit): not a WARNING on one host. */
		if ((e->probe->needs & SDC_NEED_MPI) && e->common.optional && !sdc_fleet.active) {
			sdc_note("%s: not launched under MPI (mpirun, srun --mpi=pmix): single-host run, %s not run",
				 e->probe->name, e->probe->name);
			continue;
		}
		if (!sdc_probe_usable(e->probe, run, why, sizeof(why))) {
			int added = 0;
			for (int v = 0; v < nv; v++)
				added += add_plain_results(run, e->probe, &variants[v],
							   e->common.optional ? SDC_STATUS_SKIPPED : SDC_STATUS_ERROR, why);
			sdc_output_results(out, run, run->nresults - added, run->nresults);
			continue;
		}
		int gpu_only = 0;
		const int runnable = runnable_variants(run, e, variants, nv, &gpu_only);
		for (int v = 0; v < runnable; v++) {
			poll_fleet_interrupt();
			if (sdc_stop_interrupted()) {
				add_plain_results(run, e->probe, &variants[v], SDC_STATUS_NOT_RUN,
						  "the run was interrupted before this probe started");
				continue;
			}
			const double share = variant_share(e, &variants[v], runnable, gpu_only);
			if (run_variant(run, e, &variants[v], share, out)) {
				sdc_hwerr_end(hwerr, NULL);
				return -1;
			}
		}
	}
	poll_fleet_interrupt();
	run->interrupted = sdc_stop_interrupted();
	if (!run->interrupted)
		sdc_runner_check_injected(run);
	gpu_health(run, 1);
	health_compare(run);
	sdc_hwerr_end(hwerr, run);
	sdc_output_host_findings(out, run, "health");
	return 0;
}
