/*
 * sdcscan campaign cpu-faults between its two files: the command, its table and its JSON
 * (campaign_cpu.c); the runs of the child, each fault's draw and what became of it
 * (campaign_cpu_run.c).
 */
#ifndef SDC_COMMANDS_CAMPAIGN_CPU_H
#define SDC_COMMANDS_CAMPAIGN_CPU_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/digest.h"
#include "base/options.h"
#include "inject/regfault.h"
#include "run/record.h"

#define CC_ITERATIONS SDC_WORK_DIGEST_ITERATIONS /* the work digest covers the whole run */
#define CC_MAX_TARGETS 48
#define CC_ADMIT_FAULTS 300 /* --faults admit: a few hundred faults a probe */

enum cc_outcome { O_MASKED, O_FOUND, O_VOTE, O_CRASH, O_HANG, O_NO_VERDICT, O_OTHER, O_MISSED, O_N };
extern const char *const sdc_cc_outcome_keys[O_N];
extern const char *const sdc_cc_outcome_heads[O_N];

enum cc_instant { INSTANT_ANYWHERE, INSTANT_RANDOM, INSTANT_START };
extern const char *const sdc_cc_instant_names[];
extern const char *const sdc_cc_class_names[];
enum cc_breakpoints { CC_BP_AUTO, CC_BP_HARDWARE, CC_BP_SOFTWARE };

struct cc_opts {
	int64_t faults;  /* a probe's, shared among its variants */
	int64_t attempt; /* >= 0: that attempt of each variant alone (a replay) */
	uint32_t registers;
	char variants[SDC_OPT_STR_MAX];
	double hang_timeout;
	int instant, breakpoints;
	const char *keep, *html;
};

struct cc_target {
	char probe[SDC_NAME_MAX], variant[SDC_NAME_MAX];
	const char *const *sets;
	uintptr_t lane;   /* the probe's CPU lane: the worker's whole burn */
	uint64_t want;    /* faults asked of this variant: its share of its probe's */
	/* from the unfaulted run */
	char digest[SDC_SHA256_HEX_LEN];
	double length[SDC_REGFAULT_MAX_ITERATIONS];
	double lane_seconds, ref_seconds, duration, bound;
	bool no_aslr; /* every process of the run without address-space randomisation */
	/* the faults */
	uint64_t counts[O_N], injected, not_injected;
	json_t *faults;
};

struct cc_campaign {
	const struct cc_opts *o;
	uint64_t seed;
	char cpus[32], thread[16], device[16], other[16]; /* the faulted CPU and the one that votes */
	int cpu;
	enum sdc_regfault_bp bp;
	bool bp_chosen;      /* auto: a reference run that sees no trap falls back to software */
	char bp_why[300];    /* why this kind */
	char dir[PATH_MAX];
	FILE *out;
	bool quiet;
	double fault_seconds;
	uint64_t fault_runs;
};

/* The CPU variants --variants asks for, each with its share of --faults; left_out gets the probes
 * that cannot run on one host. -1 after saying why. */
int sdc_cc_select_targets(const struct cc_campaign *c, struct cc_target *t, int *n, json_t *left_out);
/* t's unfaulted run: its digest, lengths and bounds. -1 after saying why it cannot serve. */
int sdc_cc_reference(struct cc_campaign *c, struct cc_target *t);
/* Attempt a of t: drawn, run, classified, counted, recorded. -1: the injector failed. */
int sdc_cc_fault(struct cc_campaign *c, struct cc_target *t, uint64_t a);

#endif
