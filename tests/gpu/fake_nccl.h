/*
 * The fake module's NCCL (tests/gpu/fake_nccl.c): a communicator's members and what the families
 * that run work on one share (fake_allreduce.c's collectives and ring, fake_minitrain.c's
 * data-parallel mean). NCCL's collectives are MPI's on host memory under mpirun (one rank a GPU),
 * and in memory between the members with no launcher (one process, every GPU).
 */
#ifndef SDC_TESTS_FAKE_NCCL_H
#define SDC_TESTS_FAKE_NCCL_H

#include <stdbool.h>
#include <stdint.h>

#include "fake.h"
#include "sdc_config.h"
#if HAVE_MPI
#include <mpi.h>
#endif

struct fmember {
	int rank, ordinal;
	float *in, *out, *recv, *sums, *fault; /* the collective's buffers; the checked ring's chunks */
	uint32_t hdr[4], rhdr[4];              /* the header a ring step sends, and the one it got */
	const float *payload;                  /* what the step sends */
};

struct sdc_gpu_comm {
	bool mpi; /* the ranks' shape: one member, the others over MPI */
#if HAVE_MPI
	MPI_Comm comm;
#endif
	int P, nmem;
	int64_t n;
	struct fmember *m;
	char algo[16], proto[16];
};

/* Whether MPI is initialised (under mpirun). */
FAKE_HIDDEN bool fake_under_mpi(void);
/* Whether var (FAKE_GPU_NCCL_HANG, FAKE_GPU_NCCL_STUCK) names who: a rank under mpirun, a GPU (its
 * ordinal) in one process. */
FAKE_HIDDEN bool fake_named_by(const char *var, int who);
FAKE_HIDDEN bool fake_hangs(int who);
/* GPUs (ordinals) on which a stuck collective's kernels still spin: the communicator not yet
 * aborted, a kernel or a free queued on the GPU waits behind them */
extern _Atomic bool fake_spinning[64] FAKE_HIDDEN;
FAKE_HIDDEN int fake_world_rank(void);
/* Whether member m of c stopped (its collectives never start). */
FAKE_HIDDEN bool fake_member_hangs(const struct sdc_gpu_comm *c, const struct fmember *m);
/* One bit of a float flipped. */
FAKE_HIDDEN void fake_flip_word(float *p, int bit);
#if HAVE_MPI
/* Waits for reqs within the deadline (t0 + timeout); false past it. */
FAKE_HIDDEN bool fake_wait(MPI_Request *reqs, int n, double t0, double timeout);
#endif

/* The core table's NCCL entries and ping (fake_core.c). */
FAKE_HIDDEN const char *fake_nccl_version(char *why, size_t len);
FAKE_HIDDEN int fake_nccl_unique_id(uint8_t *id, char *err, size_t errlen);
FAKE_HIDDEN struct sdc_gpu_comm *fake_nccl_init(const uint8_t *id, int nranks, int first_rank, int nmem,
						const int *devices, const char *algo, const char *proto, int64_t n,
						double timeout, char *err, size_t errlen);
FAKE_HIDDEN void fake_nccl_destroy(struct sdc_gpu_comm *c, int abort);
FAKE_HIDDEN int fake_ping(int device, double timeout, char *err, size_t errlen);

#endif
