/*
 * A parallel loop for the tools that are not the burn (calibrate, campaigns, filling tables): one
 * thread per device, bound to it, pulls job numbers until all are done or a signal stops the run.
 */
#ifndef SDC_PARALLEL_H
#define SDC_PARALLEL_H

#include <stdint.h>

#include "device/device.h"

typedef void (*sdc_job_fn)(void *arg, int worker, uint64_t job);

/* Runs fn for jobs 0 .. njobs-1. Returns 0, or -1 if stopped before the end. */
int sdc_parallel_for(const struct sdc_device *devs, int ndev, uint64_t njobs, sdc_job_fn fn, void *arg);

#endif
