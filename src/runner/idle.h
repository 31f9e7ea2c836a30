/*
 * Whether this host is busy with other work, so a burn must not start (sdcscan run --if-idle):
 * Slurm's view of the node (a job on it: allocated, mixed or completing), processes on its GPUs
 * (NVML), and the load of the run's CPUs (over IDLE_SAMPLE_S from /proc/stat). A source that
 * cannot answer (no Slurm here, no NVML) says so and does not count as busy.
 */
#ifndef SDC_IDLE_H
#define SDC_IDLE_H

#include <stdbool.h>
#include <stddef.h>

#include "run/record.h"

/* CPUs busier than this share over the sample are in use. */
#define SDC_IDLE_CPU_BUSY 0.25
#define SDC_IDLE_SAMPLE_S 1.0

/* true with why ("Slurm: node n1 is MIXED (a job runs on it)") when busy; checked: what each
 * source said, for the report. */
bool sdc_host_busy(const struct sdc_run *run, char *why, size_t len, char *checked, size_t clen);

#endif
