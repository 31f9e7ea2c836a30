/*
 * Which of a plan entry's variants run on which devices, and for how long: each variant's share of
 * its probe's time. Below the runner, which runs the variants, and the output, which says when a
 * share is too short to mean much.
 */
#ifndef SDC_RUNNER_SHARES_H
#define SDC_RUNNER_SHARES_H

#include <stdbool.h>
#include <stdint.h>

#include "runner/plan.h"
#include "probe/probe.h"

/* Whether device d runs variant v: its kind, and for a per-rank variant the one device of the rank. */
bool sdc_variant_runs_on(const struct sdc_run *run, const struct sdc_probe *p, const struct sdc_variant *v, int d);
/* The plan entry's variants (its probe's, or the one it names); at least a "default" one. */
int sdc_shares_variants(const struct sdc_plan_entry *e, struct sdc_variant *variants);
/* A variant for a kind of device this run has none of (GPU variants on a host without GPUs: the
 * header said why) is not run: keeps the others first in variants[], returns how many, and in
 * *gpu_only how many of them run on GPUs alone. */
int sdc_shares_runnable(const struct sdc_run *run, const struct sdc_plan_entry *e, struct sdc_variant *variants,
			int nv, int *gpu_only);
/* A variant's share of its probe's time. With gpu_duration, the GPU-only variants have a time of
 * their own, so GPUs on the host do not shorten the CPUs' burn. */
double sdc_shares_of(const struct sdc_plan_entry *e, const struct sdc_variant *v, int runnable, int gpu_only);
/* How many of the plan's variants that will run here have a share of their probe's time under
 * `below` seconds, and the least share (*least). */
int sdc_shares_short(const struct sdc_run *run, const struct sdc_plan *plan, double below, double *least);

/* Seconds a device's one iteration ran past its variant's time (span: the variant's seconds,
 * late: how long after the deadline it ended), 0 where it ran more than one or ended within
 * max(0.05 s, a quarter of the span): "too short a run to mean much" in the output. */
double sdc_shares_overrun(uint64_t iterations, double span, double late);

#endif
