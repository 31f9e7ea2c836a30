/*
 * NCCL inside the GPU module (kernels/cuda/nccl.cu): the entry points opened from libnccl.so.2 at
 * run time, the communicators of the main table (nccl_init, nccl_destroy) with each member's GPU,
 * stream and buffers, and the waits every call on them polls against its deadline. The families
 * that run work on a communicator include this: allreduce's collectives and checked ring
 * (probes/allreduce/nccl_check.cu), minitrain's data-parallel mean (probes/minitrain/mt_nccl.cu).
 */
#ifndef SDC_CUDA_NCCL_COMM_H
#define SDC_CUDA_NCCL_COMM_H

#include <cuda_runtime.h>
#include <nccl.h>
#include <stdint.h>

#include "kernels/cuda/cuda_util.h"

/* The entry points used, resolved from libnccl.so.2 (sdc_nccl_have). */
struct sdc_nccl_api {
	ncclResult_t (*GetVersion)(int *);
	ncclResult_t (*GetUniqueId)(ncclUniqueId *);
	ncclResult_t (*CommInitRankConfig)(ncclComm_t *, int, ncclUniqueId, int, ncclConfig_t *);
	ncclResult_t (*CommGetAsyncError)(ncclComm_t, ncclResult_t *);
	ncclResult_t (*CommFinalize)(ncclComm_t);
	ncclResult_t (*CommDestroy)(ncclComm_t);
	ncclResult_t (*CommAbort)(ncclComm_t);
	ncclResult_t (*AllReduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
	ncclResult_t (*ReduceScatter)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
				      cudaStream_t);
	ncclResult_t (*AllGather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
	ncclResult_t (*Send)(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
	ncclResult_t (*Recv)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
	ncclResult_t (*GroupStart)(void);
	ncclResult_t (*GroupEnd)(void);
	const char *(*GetErrorString)(ncclResult_t);
	const char *(*GetLastError)(ncclComm_t);
};
extern struct sdc_nccl_api sdc_nccl;
/* Whether libnccl.so.2 could be opened (once): true, or false with err saying why. */
bool sdc_nccl_have(char *err, size_t errlen);
/* A short sleep between polls. */
void sdc_nccl_pause(void);

/* What a ring's hops leave on the device, copied back at its end: per hop, the wrong elements and
 * the first (stat, 2 words), the CRC of what arrived, the first wrong value, the header as it
 * arrived. Its host copy lies in one pinned staging buffer in this order (RING_OUT_BYTES). */
struct sdc_nccl_ring_out {
	unsigned long long *stat;
	uint32_t *crc, *hdr;
	float *got;
};
#define RING_OUT_BYTES(hops) ((size_t)(hops) * (16 + 4 + 16 + 4))

/* One GPU of this process in the communicator (one under mpirun, every GPU of the host in a
 * single process): its NCCL rank, stream, buffers. */
struct sdc_nccl_member {
	int ordinal, rank; /* its CUDA device, its NCCL rank */
	ncclComm_t comm;
	cudaStream_t s;
	cudaEvent_t t0, t1;
	float *in, *out;
	unsigned long long *stat;  /* [0] wrong elements, [1] the first (ULLONG_MAX: none) */
	struct sdc_cuda_pinned hstat; /* its host copy (staging: kernels/cuda/cuda_util.h) */
	/* the checked ring's (made at its first use): a chunk each to receive into, for the sums sent
	 * on and for a hop fault's copy; headers sent; the hops' results on the device and pinned */
	float *recv, *sums, *fault;
	uint32_t *hdr_send;
	struct sdc_nccl_ring_out dev, host; /* host: views into ring_stage */
	struct sdc_cuda_pinned ring_stage;
	uint32_t *crc_c[2]; /* the CRC's scratch (struct sdc_crc_scratch of the allreduce lane) */
	uint64_t *crc_l[2];
	/* the data-parallel mean's (made at its first use, for total floats): this rank's gradient, every
	 * rank's, the mean; pinned host copies of the first and the last */
	int64_t dp_total;
	float *dp_local, *dp_all, *dp_out;
	struct sdc_cuda_pinned dp_stage; /* the gradient in, then the mean out */
};

struct sdc_gpu_comm {
	int nranks, nmem;
	int64_t n;
	struct sdc_nccl_member *m;
};

/* "WHAT: NCCL's error: its last error" into err (NULL: nothing). */
void sdc_nccl_error(char *err, size_t errlen, const char *what, ncclComm_t comm, ncclResult_t r);
/* Until the communicator's last call is through on the host (no longer ncclInProgress). 0; -1 an
 * error; 1 the deadline passed. */
int sdc_nccl_settle(ncclComm_t comm, double deadline, const char *what, char *err, size_t errlen);
/* sdc_nccl_settle for every member. */
int sdc_nccl_settle_all(struct sdc_gpu_comm *c, double deadline, const char *what, char *err, size_t errlen);
/* Until every member's stream has run everything queued, NCCL's async error looked at on every
 * turn. 0; -1 an error; 1 the deadline passed. */
int sdc_nccl_drain(struct sdc_gpu_comm *c, double deadline, const char *what, char *err, size_t errlen);
/* Makes member m's GPU current (every call enqueues on one member at a time). 0, or -1 with err. */
int sdc_nccl_use(struct sdc_nccl_member *m, char *err, size_t errlen);

/* Blocks for a grid-stride loop over n elements, 256 threads each. */
static inline unsigned sdc_nccl_grid(int64_t n)
{
	const int64_t b = (n + 255) / 256;
	return (unsigned)(b < 4096 ? (b ? b : 1) : 4096);
}

#endif
