/*
 * The GPUs of a run's ranks: which GPU this rank takes, NCCL's unique id shared over the MPI
 * transport, and the GPU a one-GPU tool measures. Above device/ (the module, the GPUs) and run/
 * (the run's devices), so the GPU loader knows nothing of ranks or runs.
 */
#ifndef SDC_MPI_GPU_RANKS_H
#define SDC_MPI_GPU_RANKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device/device.h"

struct sdc_run;

/* The GPU of run this rank uses when the ranks take one GPU each (NCCL's rule: no two ranks of a
 * host on one GPU): the rank's place among its host's ranks picks it, as the runner does for a
 * per-rank GPU variant. NULL, with why, when the run has no GPU or its host's ranks outnumber its
 * GPUs (two ranks would share one, which NCCL refuses or hangs on). */
const struct sdc_device *sdc_gpu_of_rank(const struct sdc_run *run, char *why, size_t len);

/* NCCL's unique id for a communicator of the MPI ranks: rank 0 makes it and every rank gets it
 * (an all-gather with the deadline). 0, or -1 with err: rank 0 could not make one, or some rank
 * did not answer (*late true). Every rank must call it. */
int sdc_mpi_nccl_id(uint8_t *id, double timeout, bool *late, char *err, size_t errlen);

/* The GPU a tool that measures one (a GPU benchmark or campaign) takes: the run's first, bound to
 * the calling thread. NULL with err: no module or no GPU selected (the run's note says why), or
 * "gpuN: why" when it cannot be bound. */
const struct sdc_device *sdc_gpu_first_bound(const struct sdc_run *run, char *err, size_t errlen);

#endif
