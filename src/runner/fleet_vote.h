/*
 * The fleet vote: under mpirun or srun, rank 0 gathers every rank's results, majority-votes the
 * work digests of the same work per device model, names the minority (host, rank, device), and
 * sends the fleet verdict back, so every rank exits with the worst verdict of all. A rank that
 * sends nothing in time is named (UNKNOWN). Outside MPI it returns the local verdict.
 */
#ifndef SDC_FLEET_VOTE_H
#define SDC_FLEET_VOTE_H

#include "base/verdict.h"
#include "run/record.h"

/* Rank 0's run gains the fleet's findings and *fleet_json (json_t *, for the report); returns
 * the fleet verdict on every rank. */
enum sdc_verdict sdc_fleet_finish(struct sdc_run *run, enum sdc_verdict local, void **fleet_json);

/*
 * A rank's results as it sent them (peers' bytes): the record if it is one, every field the vote
 * and the report read of the type they read it as, and its rank the one expected; else NULL and
 * why. (jansson: json_t *.)
 */
void *sdc_fleet_rank_record(const char *text, size_t len, int rank, char *why, size_t whylen);
/* The vote over the records of every rank (json_t * array of records), its findings into run,
 * per group of the same work into out (a json_t * object). */
void sdc_fleet_vote(struct sdc_run *run, void *ranks, void *out);

#endif
