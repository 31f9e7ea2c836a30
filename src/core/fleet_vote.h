/*
 * The fleet vote: under mpirun or srun, rank 0 gathers every rank's results, majority-votes the
 * work digests of the same work per device model, names the minority (host, rank, device), and
 * sends the fleet verdict back, so every rank exits with the worst verdict of all. A rank that
 * sends nothing in time is named (UNKNOWN). Outside MPI it returns the local verdict.
 */
#ifndef SDC_FLEET_VOTE_H
#define SDC_FLEET_VOTE_H

#include "base/verdict.h"
#include "run.h"

/* Rank 0's run gains the fleet's findings and *fleet_json (json_t *, for the report); returns
 * the fleet verdict on every rank. */
enum sdc_verdict sdc_fleet_finish(struct sdc_run *run, enum sdc_verdict local, void **fleet_json);

#endif
