/*
 * The fake module's NCCL (kernels/fake/fake_nccl.c): a communicator's members and what the families
 * that run work on one share (fake_allreduce.c's collectives and ring, fake_minitrain.c's
 * data-parallel mean). With every member in one process (no launcher) the collectives are done in
 * memory between them; with members in other processes (one rank a GPU under mpirun, each in a
 * burn's worker that never initialises MPI) they go through a shared-memory segment that the
 * members find from the unique id alone, as real NCCL bootstraps from it over its own sockets: no
 * MPI in the fake. All of a communicator's processes must be on one host.
 */
#ifndef SDC_KERNELS_FAKE_NCCL_H
#define SDC_KERNELS_FAKE_NCCL_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/fake/fake.h"

struct fmember {
	int rank, ordinal;
	float *in, *out, *recv, *sums, *fault; /* the collective's buffers; the checked ring's chunks */
	uint32_t hdr[4], rhdr[4];              /* the header a ring step sends, and the one it got */
	const float *payload;                  /* what the step sends */
};

struct fseg; /* the shared-memory segment (fake_nccl.c) */

struct sdc_gpu_comm {
	bool shm;        /* members in other processes: the exchanges go through seg */
	struct fseg *seg;
	size_t seg_bytes;
	bool unlinked;   /* seg's name removed (every member mapped it, or it was given up) */
	char seg_name[80];
	uint64_t seq;    /* the exchanges done on seg (the same count on every member) */
	int P, nmem;
	int64_t n;
	struct fmember *m;
	char algo[16], proto[16];
};

/* Whether var (FAKE_GPU_NCCL_HANG, FAKE_GPU_NCCL_STUCK) names who: a communicator rank when the
 * members are in several processes (under mpirun the MPI rank), a GPU (its ordinal) in one. */
FAKE_HIDDEN bool fake_named_by(const char *var, int who);
FAKE_HIDDEN bool fake_hangs(int who);
/* GPUs (ordinals) on which a stuck collective's kernels still spin: the communicator not yet
 * aborted, a kernel or a free queued on the GPU waits behind them */
extern _Atomic bool fake_spinning[64] FAKE_HIDDEN;
/* Whether member m of c stopped (its collectives never start). */
FAKE_HIDDEN bool fake_member_hangs(const struct sdc_gpu_comm *c, const struct fmember *m);
/* One bit of a float flipped. */
FAKE_HIDDEN void fake_flip_word(float *p, int bit);

/*
 * One exchange between the processes of a communicator with c->shm (every member of every process
 * writes its slot, then reads any slot):
 *   fake_xchg_begin  waits until every member has read the last exchange (the slots may be
 *                    written again);
 *   fake_xchg_slot   member rank's slot: fake_xchg_cap(c) floats, and a header of 4 words;
 *   fake_xchg_post   says this process's members' slots are written, waits for every member's;
 *   fake_xchg_end    says this process's members have read what they needed.
 * begin and post return false past the deadline t0 + timeout (a member that never comes): the
 * communicator is then only good for fake_nccl_destroy.
 */
FAKE_HIDDEN bool fake_xchg_begin(struct sdc_gpu_comm *c, double t0, double timeout);
FAKE_HIDDEN float *fake_xchg_slot(struct sdc_gpu_comm *c, int rank, uint32_t **hdr);
FAKE_HIDDEN int64_t fake_xchg_cap(const struct sdc_gpu_comm *c);
FAKE_HIDDEN bool fake_xchg_post(struct sdc_gpu_comm *c, double t0, double timeout);
FAKE_HIDDEN void fake_xchg_end(struct sdc_gpu_comm *c);

/* The main table's NCCL entries and ping (fake_module.c). */
FAKE_HIDDEN const char *fake_nccl_version(char *why, size_t len);
FAKE_HIDDEN int fake_nccl_unique_id(uint8_t *id, char *err, size_t errlen);
FAKE_HIDDEN struct sdc_gpu_comm *fake_nccl_init(const uint8_t *id, int nranks, int first_rank, int nmem,
						const int *devices, const char *algo, const char *proto, int64_t n,
						double timeout, char *err, size_t errlen);
FAKE_HIDDEN void fake_nccl_destroy(struct sdc_gpu_comm *c, int abort);
FAKE_HIDDEN int fake_ping(int device, double timeout, char *err, size_t errlen);

#endif
