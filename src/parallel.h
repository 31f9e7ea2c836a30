/*
 * A parallel loop for the commands that are not probes (calibrate, campaign): one pinned thread
 * per device pulls job numbers until all are done or SIGINT/SIGTERM stops the run.
 */
#ifndef SDC_PARALLEL_H
#define SDC_PARALLEL_H

#include <stdint.h>

#include "cpu.h"

typedef void (*sdc_job_fn)(void *arg, int worker, uint64_t job);

/* Runs fn for jobs 0 .. njobs-1. Returns 0, or -1 if stopped before the end. */
int sdc_parallel_for(const struct sdc_device *devs, int ndev, uint64_t njobs, sdc_job_fn fn, void *arg);

#endif
