/*
 * What the framework offers a probe's workers (probe/probe.h), in the burn's processes (runner/burn.h): the
 * faults due to them, their errors, the findings they report (filed within per-worker caps), the
 * digests they hand to the vote, and the memory they share. What they report goes to the run's
 * parent as it happens, through the run's sink (run/record.h), which the burn's process sets; the
 * processes, the time and the results are the parent's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/digest.h"
#include "base/message.h"
#include "base/clock.h"
#include "mpi/transport.h"
#include "run/inject.h"
#include "probe/probe.h"

/*
 * Findings kept in detail per device and variant, and per device and iteration, so one flood
 * (a corrupted operand fails every row) cannot hide the next event; the rest are counted.
 */
#define FINDINGS_PER_WORKER 64
#define FINDINGS_PER_ITERATION 16

/* ---- faults: planned by run/inject.c, asked for by the probes ---- */

int sdc_worker_faults_of_rank(struct sdc_worker *w, int rank, const char *target, uint64_t iter, struct sdc_fault *out,
			      int max)
{
	return sdc_fault_plan_due(w->ctx->faults, w->index, w->dev, rank, target, iter, out, max);
}

int sdc_worker_faults(struct sdc_worker *w, const char *target, uint64_t iter, struct sdc_fault *out,
		      int max)
{
	return sdc_worker_faults_of_rank(w, sdc_mpi.rank, target, iter, out, max);
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

/* The error, to the parent at once: a crash a moment later must not take it along. */
static void send_error(struct sdc_worker *w, bool lost)
{
	const struct sdc_run_sink *s = w->ctx->run->sink;
	if (s)
		s->error(s->arg, w->index, w->error, lost);
}

void sdc_worker_error(struct sdc_worker *w, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(w->error, sizeof(w->error), fmt, ap);
	va_end(ap);
	w->failed = true;
	send_error(w, false);
}

void sdc_worker_device_lost(struct sdc_worker *w, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(w->error, sizeof(w->error), fmt, ap);
	va_end(ap);
	w->failed = true;
	w->device_lost = true;
	send_error(w, true);
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
	const struct sdc_run_sink *s = w->ctx->run->sink;
	if (s)
		s->digest(s->arg, iter, digest);
}

/* ---- memory the workers share ---- */

struct sdc_shared_map {
	void *p;
	size_t bytes;
	struct sdc_shared_map *next;
};

void *sdc_shared_alloc(struct sdc_probe_ctx *ctx, size_t bytes)
{
	struct sdc_shared_map *m = malloc(sizeof(*m));
	if (!m || !bytes)
		return free(m), NULL;
	/* (anonymous and shared: the workers forked after it see one copy; zeroed by the kernel) */
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return free(m), NULL;
	*m = (struct sdc_shared_map){ p, bytes, ctx->shared_maps };
	ctx->shared_maps = m;
	return p;
}

int sdc_shared_mutex_init(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;
	if (pthread_mutexattr_init(&a))
		return -1;
	const int rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED) ||
			 pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST) || pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
	return rc ? -1 : 0;
}

int sdc_shared_mutex_lock(pthread_mutex_t *m)
{
	const int rc = pthread_mutex_lock(m); /* (in a burn's process: the run kills it past its deadline) */
	if (rc == EOWNERDEAD) {
		/* its holder died (a worker crashed holding it): usable again, what it guarded suspect */
		pthread_mutex_consistent(m);
		return -1;
	}
	return 0;
}

void sdc_shared_release(struct sdc_probe_ctx *ctx)
{
	for (struct sdc_shared_map *m = ctx->shared_maps, *next; m; m = next) {
		next = m->next;
		munmap(m->p, m->bytes);
		free(m);
	}
	ctx->shared_maps = NULL;
}
