/*
 * What the runner offers a probe's workers (probe.h): the faults due to them, their errors, the
 * findings they report (filed within per-worker caps) and the digests they hand to the vote. The
 * threads, the time and the results are runner.c's.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/digest.h"
#include "base/util.h"
#include "core/runner.h"
#include "core/vote.h"
#include "fleet.h"
#include "inject.h"
#include "probe.h"

/*
 * Findings kept in detail per device and variant, and per device and iteration, so one flood
 * (a corrupted operand fails every row) cannot hide the next event; the rest are counted.
 */
#define FINDINGS_PER_WORKER 64
#define FINDINGS_PER_ITERATION 16

/* ---- faults: planned by inject.c, asked for by the probes ---- */

int sdc_worker_faults_of_rank(struct sdc_worker *w, int rank, const char *target, uint64_t iter, struct sdc_fault *out,
			      int max)
{
	return sdc_fault_plan_due(w->ctx->faults, w->index, w->dev, rank, target, iter, out, max);
}

int sdc_worker_faults(struct sdc_worker *w, const char *target, uint64_t iter, struct sdc_fault *out,
		      int max)
{
	return sdc_worker_faults_of_rank(w, sdc_fleet.rank, target, iter, out, max);
}

void sdc_worker_fault_applied(struct sdc_worker *w, const struct sdc_fault *f, const char *target,
			      uint64_t iter, int64_t row, int64_t col, int bit, const char *before,
			      const char *after)
{
	struct sdc_injection inj;
	memset(&inj, 0, sizeof(inj));
	sdc_strlcpy(inj.probe, w->ctx->probe->name, sizeof(inj.probe));
	sdc_strlcpy(inj.variant, w->ctx->variant->name, sizeof(inj.variant));
	inj.device = w->device;
	sdc_strlcpy(inj.target, target, sizeof(inj.target));
	inj.iteration = iter;
	inj.row = row;
	inj.col = col;
	inj.bit = bit;
	sdc_strlcpy(inj.before, before, sizeof(inj.before));
	sdc_strlcpy(inj.after, after, sizeof(inj.after));
	inj.spec = f->spec;
	sdc_run_add_injection(w->ctx->run, &inj);
}

/* ---- helpers for probes ---- */

int sdc_ctx_error(struct sdc_probe_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ctx->error, sizeof(ctx->error), fmt, ap);
	va_end(ap);
	return -1;
}

void sdc_worker_error(struct sdc_worker *w, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(w->error, sizeof(w->error), fmt, ap);
	va_end(ap);
	w->failed = true;
}

void sdc_worker_device_lost(struct sdc_worker *w, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(w->error, sizeof(w->error), fmt, ap);
	va_end(ap);
	w->failed = true;
	w->device_lost = true;
	atomic_fetch_add(&w->ctx->lost_workers, 1);
}

void sdc_worker_file_finding(struct sdc_worker *w, struct sdc_finding *f)
{
	sdc_strlcpy(f->probe, w->ctx->probe->name, sizeof(f->probe));
	sdc_strlcpy(f->variant, w->ctx->variant->name, sizeof(f->variant));
	f->device = w->device;
	if (f->iteration != w->findings_iteration) {
		w->findings_iteration = f->iteration;
		w->findings_this_iteration = 0;
	}
	if (w->findings_kept < FINDINGS_PER_WORKER && w->findings_this_iteration++ < FINDINGS_PER_ITERATION) {
		if (sdc_run_add_finding(w->ctx->run, f))
			w->findings_kept++;
	} else {
		sdc_run_count_dropped(w->ctx->run);
	}
}

void sdc_worker_report(struct sdc_worker *w, struct sdc_finding *f)
{
	f->time_to_failure = sdc_now() - w->ctx->t_start;
	if (f->cls == SDC_FINDING_CORRUPTION)
		w->corruptions++;
	sdc_worker_file_finding(w, f);
}

void sdc_worker_digest(struct sdc_worker *w, uint64_t iter, uint64_t digest)
{
	/* Digests come for iterations 0, 1, 2, ...: one out of order is the worker's own counter gone
	 * wrong (a flipped loop counter escaped the vote and the work digest unseen: `campaign
	 * cpu-faults`). Said once; what comes after it is not compared. */
	if (iter != w->digest_next) {
		if (!w->digest_jumped) {
			struct sdc_finding f = { .cls = SDC_FINDING_CORRUPTION, .iteration = w->digest_next, .row = -1,
						 .col = -1 };
			sdc_strlcpy(f.kind, "iteration-jump", sizeof(f.kind));
			snprintf(f.operation, sizeof(f.operation), "%.30s %.30s iteration count on %.12s", w->ctx->probe->name,
				 w->ctx->variant->name, w->dev->id);
			sdc_finding_set_bits(&f, w->digest_next, iter, 64);
			snprintf(f.detail, sizeof(f.detail),
				 "the worker's iteration count went from %" PRIu64 " to %" PRIu64 " (xor %#" PRIx64 "): a corrupted "
				 "loop counter; its results from there on are not compared",
				 w->digest_next, iter, w->digest_next ^ iter);
			sdc_worker_report(w, &f);
		}
		w->digest_jumped = true;
		return;
	}
	w->digest_next = iter + 1;
	sdc_vote_record(w->ctx->vote, w->index, iter, digest);
	if (iter < SDC_WORK_DIGEST_ITERATIONS && w->work.ctx) {
		uint8_t le[8];
		for (int i = 0; i < 8; i++)
			le[i] = (uint8_t)(digest >> (8 * i));
		sdc_sha256_update(&w->work, le, sizeof(le));
		if (iter + 1 == SDC_WORK_DIGEST_ITERATIONS) {
			sdc_sha256_final(&w->work, w->work_digest);
			w->work_done = true;
		}
	}
}
