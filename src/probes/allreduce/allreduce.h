/* The allreduce probe's own header: what its variants share (allreduce.c, ring_mpi.c, nccl.c). */
#ifndef SDC_PROBES_ALLREDUCE_H
#define SDC_PROBES_ALLREDUCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probes/allreduce/ring_check.h"
#include "probe/probe.h"
#include "base/macros.h"

struct ar_shared {
	int64_t n; /* floats */
	double timeout;
	uint32_t nccl_paths; /* the nccl variant's (algorithm, protocol) paths: bits of sdc_ar_nccl_paths */
	bool local;          /* no launcher: the members are this host's GPUs (the nccl variants), not ranks */
	char (*member_bus)[24]; /* the nccl variants: each member's GPU, its PCI bus id */
	char operation[96];
};

/* ---- hops.c: what the rings share ---- */

/* A member as findings name it: "rank 2 (host)", or with no launcher "GPU 2 (0000:3b:00.0)". */
void sdc_ar_member(const struct ar_shared *sh, int m, char *buf, size_t len);

/* A finding with the expected and actual value of an element, or (crcs not NULL, when no element
 * is wrong) the chunk's CRC32C as computed and as its header gave it. */
void sdc_ar_report(struct sdc_worker *w, uint64_t iter, const char *kind, const char *target, int64_t row,
		   int64_t col, float expected, float actual, const uint32_t *crcs, const char *fmt, ...)
	SDC_PRINTF(10, 11);
/* A peer (peer >= 0) or some rank (-1) that did not answer within the timeout during `what`:
 * an error finding, and the worker failed (UNKNOWN). */
void sdc_ar_unresponsive(struct sdc_worker *w, int peer, const char *what);
/* Whether every rank goes on to another iteration (everyone stops together). */
bool sdc_ar_all_go_on(struct sdc_worker *w);
/* The finding of a hop whose verdict is not OK, what arrived from rank prev at rank me in the
 * step `what`: a bad CRC names the link, a good CRC on wrong values the sender. el: the first
 * wrong element in the whole vector (-1: none, then the chunk's and its header's CRC32C are the
 * bits reported). */
void sdc_ar_hop_report(struct sdc_worker *w, uint64_t it, const char *what, int prev, int me,
		       const struct sdc_hop_verdict *hv, const uint32_t *rhdr, int64_t nbad, int64_t el, float expected,
		       float got);
/* The iteration's three ring orders (order[position] = rank): forward, reversed and shuffled (the
 * same shuffle on every rank, new every iteration), so a bad node (all its links fail) is told
 * from a bad link. */
void sdc_ar_ring_orders(int P, uint64_t it, int *fwd, int *rev, int *shuf);

/* What an H fault's tensor= names: the phase (0 reduce-scatter, 1 all-gather) and whether it
 * corrupts the chunk's header instead of its data; false for anything else. Left out: rs. */
bool sdc_ar_hop_tensor(const char *tn, int *phase, bool *header);

/* The ring variant's lane over MPI (ring_mpi.c; built with MPI only). */
void sdc_ar_ring_run(struct sdc_worker *w);

/* The nccl variants (nccl.c): the paths' names (option nccl_paths' choices); NCCL's collectives
 * checked on every path, and sdcscan's checked ring over NCCL's send and receive. */
extern const char *const sdc_ar_nccl_paths[];
/* Path k's NCCL_ALGO and NCCL_PROTO ("" for NCCL's own choice). */
void sdc_ar_nccl_path_env(int k, const char **algo, const char **proto);
void sdc_ar_nccl_run(struct sdc_worker *w);
void sdc_ar_nccl_ring_run(struct sdc_worker *w);

#endif
