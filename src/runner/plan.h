/*
 * A plan: which probes run, with which options, for how long. Built from a YAML profile
 * (built-in or a file), then adjusted by --probe, --set and --duration, and validated as a
 * whole before anything runs.
 */
#ifndef SDC_PLAN_H
#define SDC_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "base/options.h"
#include "probe/probe.h"

#define SDC_PLAN_MAX 16

/* Keys every probe takes in a profile and with --set, besides its own options. */
struct sdc_common_opts {
	double duration;    /* seconds, split evenly across the probe's variants */
	double gpu_duration; /* > 0: seconds for the GPU-only variants, apart from duration */
	int64_t iterations; /* stop each device after this many iterations; 0: the duration decides */
	bool optional;      /* missing hardware is WARNING (skipped), not UNKNOWN */
	double hang_timeout; /* seconds a worker may make no progress (iterations, heartbeats) before it is hung */
};
extern const struct sdc_option sdc_common_options[];

struct sdc_plan_entry {
	const struct sdc_probe *probe;
	void *opts;
	struct sdc_common_opts common;
	char only_variant[SDC_NAME_MAX]; /* non-empty: run just this variant (golden verify) */
};

enum sdc_seed_mode {
	SDC_SEED_FIXED,
	SDC_SEED_DAILY,  /* from the UTC date: hosts scanned the same day compare */
	SDC_SEED_RANDOM, /* fresh each run */
};

struct sdc_plan {
	char name[128];
	char source[256]; /* "built-in" or the file path */
	char description[512];
	enum sdc_seed_mode seed_mode;
	uint64_t seed;
	int expect_gpus; /* GPUs the host should have; fewer is WARNING (0: no expectation) */
	int clear_after; /* a CRITICAL node state clears after this many clean scheduled runs (0: never) */
	struct sdc_plan_entry entries[SDC_PLAN_MAX];
	int n;
};

void sdc_plan_release(struct sdc_plan *plan);

/* Adds an entry for probe with default options. NULL when the plan is full or out of memory. */
struct sdc_plan_entry *sdc_plan_add(struct sdc_plan *plan, const struct sdc_probe *probe);
struct sdc_plan_entry *sdc_plan_find(struct sdc_plan *plan, const char *probe);

/*
 * Sets PROBE.KEY=VALUE (the --set form). `where` prefixes error messages (e.g. "--set").
 * Returns 0, or -1 after printing the error.
 */
int sdc_plan_set(struct sdc_plan *plan, const char *assignment);

/* The option a key names for this entry (common keys first), or NULL. */
const struct sdc_option *sdc_plan_entry_option(const struct sdc_plan_entry *e, const char *key);

/* Sets one key of an entry; err gets "what was wrong (valid choices)". */
int sdc_plan_entry_set(struct sdc_plan_entry *e, const char *key, const char *value, char *err,
		       size_t errlen);

/* Scales every entry's duration so they add up to total seconds. */
void sdc_plan_scale_duration(struct sdc_plan *plan, double total);

/* The seed the plan asks for, resolved for a run starting at wall time `now`. */
uint64_t sdc_plan_seed(const struct sdc_plan *plan, double now);

#endif
