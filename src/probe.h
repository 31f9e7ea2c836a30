/*
 * The probe interface. A probe is one kind of test in one file under src/probes/, exporting
 * one descriptor; registry.c lists them all. The framework owns threads, time, options,
 * fault injection and the comparison of results across devices; a probe owns its data,
 * kernels and checks.
 *
 * Lifecycle, per variant the options select (e.g. gemm's int8 and fp32):
 *   setup(ctx)     once, on the main thread: shared, read-only state
 *   run(worker)    on one pinned thread per device, until sdc_worker_continue() says stop
 *   teardown(ctx)  once, after every worker returned
 */
#ifndef SDC_PROBE_H
#define SDC_PROBE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/digest.h"
#include "options.h"
#include "run.h"
#include "base/util.h"

struct sdc_vote;

enum sdc_need {
	SDC_NEED_GPU = 1u << 0,
	SDC_NEED_MPI = 1u << 1,
};

struct sdc_probe_ctx;
struct sdc_worker;

struct sdc_probe {
	const char *name;
	const char *summary;
	unsigned needs;
	/* Non-NULL when this build cannot run the probe at all, and why. */
	const char *not_built;
	const struct sdc_option *options;
	size_t opts_size;
	/* Fault injection targets, NULL-terminated, each "NAME: what it corrupts". */
	const char *const *inject_targets;
	/* selftest: option settings ("key=value") for a short run, and the --inject specs it must catch. */
	const char *const *selftest_options;
	const char *const *selftest_faults;

	/* Names of the variants opts select; returns how many (at most max). */
	int (*variants)(const void *opts, const char **names, int max);
	/* Whether this host can run it; writes why not. NULL: always. */
	bool (*available)(char *why, size_t len);
	int (*setup)(struct sdc_probe_ctx *ctx);
	void (*run)(struct sdc_worker *w);
	void (*teardown)(struct sdc_probe_ctx *ctx);
	/*
	 * golden record for probes whose golden is more than the work digest (minitrain's
	 * trajectory): computes it for one variant on this thread. NULL: the generic work digest.
	 */
	void *(*golden_record)(const void *opts, const char *variant, uint64_t seed, char *err, size_t errlen);
	/* The seed a variant's results depend on, when the probe can fix its own (NULL: the run's). */
	uint64_t (*data_seed)(const void *opts, uint64_t run_seed);
	/* Whether a variant runs once per MPI rank (one worker, it talks to the other ranks). */
	bool (*one_per_rank)(const char *variant);
	/* Iterations a golden verify runs per device (0: SDC_WORK_DIGEST_ITERATIONS). */
	int golden_iterations;
};

struct sdc_probe_ctx {
	const struct sdc_probe *probe;
	const void *opts;
	const char *variant;
	uint64_t seed;
	struct sdc_run *run;
	uint64_t max_iterations; /* 0: until the deadline */
	double t_start;

	/* set by setup */
	void *shared;
	char rate_unit[16]; /* "GOP/s" */
	char iter_unit[16]; /* "GEMMs" */
	double rate_scale;  /* operations per rate unit: 1e9 for GOP/s (the default), 1e6 for Mlookup/s */
	double floor;       /* per-device minimum rate; below it is WARNING. 0: none */

	/* framework */
	struct sdc_vote *vote;
	struct sdc_worker *workers;
	int nworkers;
	struct sdc_fault_plan *faults;
	char error[256];
};

struct sdc_worker {
	struct sdc_probe_ctx *ctx;
	int index;  /* 0 .. nworkers-1 */
	int device; /* index into ctx->run->devices */
	const struct sdc_device *dev;
	void *state; /* the probe's own */

	/* kept by the probe through the helpers below */
	_Atomic uint64_t iterations;
	double ops;
	uint64_t corruptions;
	char kernel[64];
	bool failed;
	char error[256];

	/* framework */
	double t_start, t_end;
	int findings_kept;
	uint64_t findings_iteration;
	int findings_this_iteration;
	struct sdc_sha256 work; /* over the first per-iteration digests */
	uint8_t work_digest[32];
	bool work_done;
};

/* ---- for probes ---- */

extern atomic_bool sdc_stop_requested;

/* One relaxed load and one compare: cheap enough for the innermost burn loop. */
static inline bool sdc_worker_continue(const struct sdc_worker *w)
{
	if (atomic_load_explicit(&sdc_stop_requested, memory_order_relaxed))
		return false;
	return !w->ctx->max_iterations ||
	       atomic_load_explicit(&w->iterations, memory_order_relaxed) < w->ctx->max_iterations;
}

/* Counts one finished iteration and its work (operations, for the throughput). */
static inline void sdc_worker_account(struct sdc_worker *w, double ops)
{
	w->ops += ops;
	atomic_fetch_add_explicit(&w->iterations, 1, memory_order_relaxed);
}

/*
 * Restarts this device's clock after per-device preparation (building a table), so its throughput
 * counts only the burn. The deadline is not moved.
 */
static inline void sdc_worker_restart_clock(struct sdc_worker *w)
{
	w->t_start = sdc_now();
}

/* Setup failed: the variant cannot run here. Returns -1 for `return sdc_ctx_error(...)`. */
int sdc_ctx_error(struct sdc_probe_ctx *ctx, const char *fmt, ...) SDC_PRINTF(2, 3);
/* A platform failure on this device (allocation, affinity): UNKNOWN, never corruption. */
void sdc_worker_error(struct sdc_worker *w, const char *fmt, ...) SDC_PRINTF(2, 3);

/* Files a finding; the framework fills probe, variant, device and time to failure. */
void sdc_worker_report(struct sdc_worker *w, struct sdc_finding *f);

/* Result digest of iteration `iter` (consecutive from 0) for the cross-device vote. */
void sdc_worker_digest(struct sdc_worker *w, uint64_t iter, uint64_t digest);

/* Faults due at this target and iteration; at most max are written. */
int sdc_worker_faults(struct sdc_worker *w, const char *target, uint64_t iter, struct sdc_fault *out,
		      int max);
/* Records a fault the probe applied, with the element and the bits before and after. */
void sdc_worker_fault_applied(struct sdc_worker *w, const struct sdc_fault *f, const char *target,
			      uint64_t iter, int64_t row, int64_t col, int bit, const char *before,
			      const char *after);

#endif
