/*
 * The probe interface. A probe is one kind of test in one folder under src/probes/NAME/, exporting
 * one descriptor; runner/registry.c lists them all. The folder also holds what belongs to the probe
 * alone (its checking engine, benchmarks, campaign, calibration, golden recorder), reached through
 * the descriptor's hooks, so no file outside the folder includes its private headers. The
 * framework owns processes, time, devices, options, fault injection and the comparison of results
 * across devices; a probe owns its data, kernels and checks. What a probe says about itself
 * beyond its findings (the report's run.environment.NAME, its benchmarks' and campaign's JSON,
 * its calibration files) it states as typed facts (run/facts.h) and the framework writes as JSON: no
 * probe file includes jansson (tests/layers.py).
 *
 * Lifecycle, per variant the options select (e.g. gemm's int8 and fp32):
 *   setup(ctx)     once, in the variant's own process (never the run's, which burns nothing):
 *                  shared state, read-only to the workers, or made with sdc_shared_alloc where
 *                  they write it
 *   run(worker)    in one child process per device, forked from the one that ran setup (bound to
 *                  its device: a pinned CPU, a current GPU), until sdc_worker_continue() says stop;
 *                  what it reports reaches the run's parent through its channel (runner/burn.h)
 *   teardown(ctx)  in a tool that calls setup itself; a burn's processes end without it
 */
#ifndef SDC_PROBE_H
#define SDC_PROBE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/digest.h"
#include "run/facts.h"
#include "base/options.h"
#include "run/record.h"
#include "base/stop.h"
#include "base/clock.h"

struct sdc_command;

enum sdc_need {
	SDC_NEED_MPI = 1u << 0, /* runs only across MPI ranks (allreduce) */
};

enum sdc_numerics {
	SDC_NUMERICS_EXACT, /* one right answer, bit for bit, on any IEEE-754 device */
	SDC_NUMERICS_FAST,  /* vendor libraries at full speed, checked by thresholds */
};

/* One variant a probe's options select: what it is, as data (never read back from its name). */
struct sdc_variant {
	char name[SDC_NAME_MAX];  /* "int8", "8bit-fast-d64", "xfmr-dp" */
	enum sdc_numerics numerics;
	unsigned devices;         /* where it runs: SDC_ON_CPU, SDC_ON_GPU (device/device.h) */
	bool per_rank;            /* one worker per MPI rank, which talks to the other ranks */
	bool world_dependent;     /* its results depend on how many ranks share the work */
	bool cross_report;        /* its workers share state and report on each other's devices (ecparity's
				   * servers): without it a worker's record about another device is refused */
	uint64_t seed;            /* non-zero: the probe fixes its own data seed (else the run's) */
	int param[3];             /* the probe's own coordinates of it (gemm: class; embbag: format, class, width) */
};

#define SDC_VARIANTS_MAX 32

struct sdc_probe_ctx;
struct sdc_worker;
struct sdc_shared_map;

/* argv[1] of a variant's own process, which runs setup and forks the workers: `sdcscan __burn FD`
 * (main.c, runner/burn.h), never typed by a person; the register-fault injector knows it by this. */
#define SDC_BURN_ARGV1 "__burn"

/* A worker's progress, where the supervisor reads it: iterations finished, heartbeats within one. */
struct sdc_worker_progress {
	_Atomic uint64_t iterations;
	_Atomic uint64_t heartbeat;
};

struct sdc_probe {
	const char *name;
	const char *summary;
	unsigned needs;
	const struct sdc_option *options;
	size_t opts_size;
	/* Fault injection targets, NULL-terminated, each "NAME: what it corrupts". */
	const char *const *inject_targets;
	/* selftest: option settings ("key=value") for a short run, and the --inject specs it must catch. */
	const char *const *selftest_options;
	const char *const *selftest_faults;

	/* The variants opts select; returns how many (at most max). */
	int (*variants)(const void *opts, struct sdc_variant *out, int max);
	/* Whether it can run on the run's selected devices (run NULL: on this host as a whole, for
	 * `list`); writes why not. NULL: always. */
	bool (*available)(const struct sdc_run *run, char *why, size_t len);
	int (*setup)(struct sdc_probe_ctx *ctx);
	/*
	 * The lanes, one a device kind: what one worker does on a CPU core or on a GPU until
	 * sdc_worker_continue says stop. The runner calls the lane of the worker's device (a variant
	 * says which kinds it runs on); a probe writes its GPU lane as a lane of its own, not as
	 * branches through its CPU lane. NULL: the probe has no lane for that kind.
	 */
	void (*lane[SDC_DEVICE_NKINDS])(struct sdc_worker *w);
	void (*teardown)(struct sdc_probe_ctx *ctx);

	/* ---- the probe's own tools, reached through the registry ---- */
	/* `sdcscan bench NAME`: NULL-terminated; the first is named after the probe. */
	const struct sdc_command *const *benches;
	/* `sdcscan campaign NAME`, `sdcscan calibrate NAME` */
	const struct sdc_command *campaign;
	const struct sdc_command *calibrate;
	/*
	 * golden record for probes whose golden is more than the work digest (minitrain's
	 * trajectory): computes it for one variant on this thread, as a golden file holds it
	 * (sdc_golden_traj_facts); NULL with err on failure. NULL hook: the generic work digest.
	 */
	struct sdc_facts *(*golden_record)(const void *opts, const struct sdc_variant *v, uint64_t seed, char *err,
					   size_t errlen);
	/* Fast-class results depend on the library: its identity for golden keys ("OpenBLAS 0.3.21 (Haswell)"). */
	void (*library_id)(const struct sdc_variant *v, char *buf, size_t len);
	/* Facts every report carries about what this probe builds on (the BLAS, ...), stated into
	 * run.environment (env) on the main thread before any worker starts. During the run a
	 * probe states its facts with sdc_run_facts (run/facts.h). */
	void (*environment)(struct sdc_facts *env);
};

/* Whether some device of the run is of a kind the variant runs on. */
static inline bool sdc_variant_runnable(const struct sdc_variant *v, const struct sdc_run *run)
{
	for (int d = 0; d < run->ndevices; d++)
		if (v->devices & (1u << run->devices[d].kind))
			return true;
	return false;
}

/* The seed a variant's data comes from. */
static inline uint64_t sdc_variant_seed(const struct sdc_variant *v, uint64_t run_seed)
{
	return v->seed ? v->seed : run_seed;
}

struct sdc_probe_ctx {
	const struct sdc_probe *probe;
	const void *opts;
	const struct sdc_variant *variant;
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
	double deadline;        /* when the variant's time is up (sdc_now()) */
	struct sdc_worker *workers;
	int nworkers;
	struct sdc_fault_plan *faults;
	bool fatal_planned; /* a fault of inject/fatal.h's targets is asked for this probe */
	struct sdc_shared_map *shared_maps; /* what sdc_shared_alloc mapped (runner/burn.h) */
	char error[256];
};

struct sdc_worker {
	struct sdc_probe_ctx *ctx;
	int index;  /* 0 .. nworkers-1 */
	int device; /* index into ctx->run->devices */
	const struct sdc_device *dev; /* a CPU or a GPU, as the variant's devices allow */
	void *state; /* the probe's own */

	/* kept by the probe through the helpers below; progress is where the run's parent reads it
	 * (the burn's slot, runner/burn.h): finished iterations, and heartbeats within long ones */
	struct sdc_worker_progress *progress;
	double ops;
	uint64_t corruptions;
	char kernel[64];
	/* A reference throughput for this device measured by the probe (operations per second): the
	 * burn's rate as a share of it says how busy the device was kept. 0: none. */
	double ref_rate;
	char ref_name[48]; /* "plain cuBLASLt back to back" */
	bool no_floor; /* the variant's throughput floor does not apply to this lane (a GPU's vote lane) */
	bool failed;
	bool device_lost; /* sdc_worker_device_lost */
	char error[256];

	/* framework */
	double t_start, t_end;
	int findings_kept;
	uint64_t findings_iteration;
	int findings_this_iteration;
	uint64_t digest_next; /* the iteration the next digest is for (they come in order) */
	bool digest_jumped;   /* one came out of order: a corrupted counter, said once */
};

/* ---- for probes ---- */

/*
 * One relaxed load and one compare: cheap enough for the innermost burn loop. At the deadline a
 * device that has not finished one checked iteration goes on until it has (a run too short for
 * a table build still checks something); an interrupt or a hard stop ends it at once.
 */
static inline bool sdc_worker_continue(const struct sdc_worker *w)
{
	const uint64_t done = atomic_load_explicit(&w->progress->iterations, memory_order_relaxed);
	if (sdc_stop_is_requested())
		return done == 0 && !w->failed && !sdc_stop_is_hard() && !sdc_stop_interrupted();
	return !w->ctx->max_iterations || done < w->ctx->max_iterations;
}

/* Iterations this worker finished. */
static inline uint64_t sdc_worker_iterations(const struct sdc_worker *w)
{
	return atomic_load_explicit(&w->progress->iterations, memory_order_relaxed);
}

/* Progress within an iteration that takes long (a table build, a replay): without iterations or
 * heartbeats for the probe's hang_timeout a worker is named hung. One relaxed add. */
static inline void sdc_worker_heartbeat(struct sdc_worker *w)
{
	atomic_fetch_add_explicit(&w->progress->heartbeat, 1, memory_order_relaxed);
}

/* Counts one finished iteration and its work (operations, for the throughput). */
static inline void sdc_worker_account(struct sdc_worker *w, double ops)
{
	w->ops += ops;
	atomic_fetch_add_explicit(&w->progress->iterations, 1, memory_order_relaxed);
}

/*
 * Restarts this device's clock after per-device preparation (building a table), so its throughput
 * counts only the burn. The deadline is not moved.
 */
static inline void sdc_worker_restart_clock(struct sdc_worker *w)
{
	w->t_start = sdc_now();
}

/*
 * Stops this device's clock where its burn ends and a check of its results at the end begins (a
 * replay), so its throughput counts only the burn.
 */
static inline void sdc_worker_stop_clock(struct sdc_worker *w)
{
	w->t_end = sdc_now();
}

/*
 * Memory every worker of the variant reads and writes (a shard all servers update, a barrier): a
 * shared mapping made in setup, before the workers' processes are forked, so a write by one is
 * seen by all; ordinary memory from setup is each worker's own copy once it writes it. Zeroed.
 * NULL when out of memory. A mutex in it is made with sdc_shared_mutex_init: shared across
 * processes, and one whose holder died is handed on (EOWNERDEAD) instead of blocking the others
 * for good. No condition variable is offered: glibc's (2.36) process-shared one hangs the next
 * broadcast for good once a waiter is killed (seen: __condvar_quiesce_and_switch_g1), and killed
 * workers are routine; wait on an atomic in the mapping with a bounded sleep (a futex) instead.
 */
void *sdc_shared_alloc(struct sdc_probe_ctx *ctx, size_t bytes);
int sdc_shared_mutex_init(pthread_mutex_t *m);
/* pthread_mutex_lock on such a mutex: 0, or -1 when its holder died (the state it guarded may be
 * half-changed; the mutex is usable again). */
int sdc_shared_mutex_lock(pthread_mutex_t *m);

/* Setup failed: the variant cannot run here. Returns -1 for `return sdc_ctx_error(...)`. */
int sdc_ctx_error(struct sdc_probe_ctx *ctx, const char *fmt, ...) SDC_PRINTF(2, 3);
/* A platform failure on this device (allocation, affinity): UNKNOWN, never corruption. */
void sdc_worker_error(struct sdc_worker *w, const char *fmt, ...) SDC_PRINTF(2, 3);
/* The same, for a failure that leaves the device unusable (a sticky CUDA error, a hung GPU): the
 * rest of the run gives it no more work and says why. */
void sdc_worker_device_lost(struct sdc_worker *w, const char *fmt, ...) SDC_PRINTF(2, 3);

/* Files a finding; the framework fills probe, variant, device and time to failure. */
void sdc_worker_report(struct sdc_worker *w, struct sdc_finding *f);

/* Result digest of iteration `iter` (consecutive from 0) for the cross-device vote. */
void sdc_worker_digest(struct sdc_worker *w, uint64_t iter, uint64_t digest);

/* Faults due at this target and iteration; at most max are written. */
int sdc_worker_faults(struct sdc_worker *w, const char *target, uint64_t iter, struct sdc_fault *out,
		      int max);
/* The same, due on MPI rank `rank` (a probe acting for a rank that is gone: its rebuild). */
int sdc_worker_faults_of_rank(struct sdc_worker *w, int rank, const char *target, uint64_t iter, struct sdc_fault *out,
			      int max);
/* Records a fault the probe applied, with the element and the bits before and after. */
void sdc_worker_fault_applied(struct sdc_worker *w, const struct sdc_fault *f, const char *target,
			      uint64_t iter, int64_t row, int64_t col, int bit, const char *before,
			      const char *after);

/* ---- for the framework that runs the workers (runner/) ---- */

/* A finding filed as the worker's (probe/worker.c), within the caps per worker and per iteration,
 * the rest counted as dropped; not counted as the worker's corruption (sdc_worker_report is). */
void sdc_worker_file_finding(struct sdc_worker *w, struct sdc_finding *f);
/* Unmaps what sdc_shared_alloc mapped for ctx (above). */
void sdc_shared_release(struct sdc_probe_ctx *ctx);

#endif
