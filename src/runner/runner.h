/*
 * The runner owns processes and time. For each probe in the plan and each variant of it, it
 * starts the variant's processes (runner/burn.h: the probe's setup, then one pinned worker process
 * per device), lets them burn until the deadline (or an iteration cap, or SIGINT/SIGTERM),
 * compares their result digests, and files one result per device. A probe that cannot run is
 * never reported as OK.
 */
#ifndef SDC_RUNNER_H
#define SDC_RUNNER_H

#include "runner/output.h"
#include "runner/plan.h"
#include "run/record.h"

struct sdc_worker;

/* Runs every plan entry. Returns 0, or -1 if the run could not start at all. */
int sdc_runner_execute(struct sdc_run *run, const struct sdc_plan *plan, struct sdc_output *out);


/* Checks --inject specs against the plan's probes and the run's devices (runner/inject_check.c):
 * each must be able to take effect. 0, or -1 (said). */
int sdc_runner_check_injections(const struct sdc_run *run, const struct sdc_plan *plan);
/* After the run: a spec that was never injected is a finding (UNKNOWN). */
void sdc_runner_check_injected(struct sdc_run *run);
#endif
