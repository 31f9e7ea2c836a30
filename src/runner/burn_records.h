/*
 * The records of a burn's channel (runner/burn.h): written by the burn's processes through a sink,
 * read and checked by the parent as a peer's bytes.
 */
#ifndef SDC_CORE_BURN_RECORDS_H
#define SDC_CORE_BURN_RECORDS_H

#include <stdbool.h>
#include <stddef.h>

#include "runner/burn.h"

/* ---- a burn process's side ---- */

/* Where a burn process's records go: the run copy's sink (run/record.h) and the worker's slot. */
struct sdc_burn_sink {
	struct sdc_run_sink sink; /* (first: the run's hooks get this struct as their arg) */
	int fd;                   /* its socket */
	int worker;               /* the worker it is (-1: the leader) */
	struct sdc_burn_slot *slot;
	void *window;             /* the fleet calls' payloads (0 bytes: none) */
	size_t window_bytes;
	bool digests_off;         /* the parent stopped taking digests: the vote goes on without them */
	uint64_t dropped;         /* findings not kept, not yet said (one record for many) */
};

/* Sets the sink up on socket fd for worker (-1: the leader), whose slot is slot (NULL: the
 * leader's). A window mapped before is kept. */
void sdc_burn_sink_init(struct sdc_burn_sink *s, int fd, int worker, struct sdc_burn_slot *slot);
/* Maps the fleet calls' window. 0, or -1. */
int sdc_burn_sink_window(struct sdc_burn_sink *s, int fd, size_t bytes);
/* The sink of the run copy this process reports through. */
struct sdc_burn_sink *sdc_burn_sink_of(const struct sdc_run *run);

/* One record; 0, or -1 (the parent is gone or took nothing for a long while). */
int sdc_burn_send(struct sdc_burn_sink *s, enum sdc_burn_record_type type, int worker, const void *payload,
		  size_t len);
int sdc_burn_send_text(struct sdc_burn_sink *s, enum sdc_burn_record_type type, const char *text);
/* The worker's result (the last record it sends). */
void sdc_burn_send_result(struct sdc_burn_sink *s, const struct sdc_worker *w);
/* An iteration's result digest, into the slot's ring (no system call: the parent drains it). */
void sdc_burn_push_digest(struct sdc_burn_sink *s, uint64_t iteration, uint64_t digest);
/* A fleet call made by the parent (mpi/transport.h's remote transport): the call's bytes out, the reply
 * in. 0, or -1 when the parent did not answer within timeout seconds. */
int sdc_burn_fleet_call(void *arg, const void *req, size_t reqlen, void *reply, size_t replymax, size_t *replylen,
			double timeout);

/* ---- the parent's side ---- */

/* A record's payload checked and decoded; each returns 0, or -1 with why the bytes are not one
 * a sound burn process writes. */
int sdc_burn_check_finding(const struct sdc_burn *b, const void *p, size_t len, struct sdc_finding *f, int *worker,
			   char *why, size_t whylen);
int sdc_burn_check_injection(const struct sdc_burn *b, const void *p, size_t len, struct sdc_injection *inj,
			     char *why, size_t whylen);
int sdc_burn_check_result(const void *p, size_t len, struct sdc_burn_result *r, char *why, size_t whylen);
int sdc_burn_check_error(const void *p, size_t len, struct sdc_burn_error *e, char *why, size_t whylen);
int sdc_burn_check_setup(const struct sdc_burn *b, const void *p, size_t len, struct sdc_burn_setup *su, char *why,
			 size_t whylen);
/* facts: the group name, how, and the facts (the caller's) */
int sdc_burn_check_facts(const void *p, size_t len, char *name, size_t namelen, int *how, struct sdc_facts **f,
			 char *why, size_t whylen);
/* Text of a SETUP_FAILED record (ended within len). */
int sdc_burn_check_text(const void *p, size_t len, char *text, size_t textlen, char *why, size_t whylen);

#endif
