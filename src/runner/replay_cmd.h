/* The commands that replay a run and each of its findings (replay.c). */
#ifndef SDC_CORE_REPLAY_H
#define SDC_CORE_REPLAY_H

#include <stddef.h>

#include "run/record.h"

/* The run's command line with its seed, without what only directs output. */
void sdc_replay_run(const struct sdc_run *run, char *buf, size_t len);

/* A command that reproduces finding f: for sdcscan run, its variant on its device (all devices
 * for a disagreement between them) up to its iteration; otherwise the run's replay. */
void sdc_replay_finding(const struct sdc_run *run, const struct sdc_finding *f, char *buf, size_t len);

#endif
