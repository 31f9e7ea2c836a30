/*
 * The allreduce family: the hop checks of sdcscan's ring on a GPU (probes/allreduce/ring.cu) and, on
 * the main table's NCCL communicators, NCCL's collectives checked exactly and the checked ring over NCCL
 * (probes/allreduce/nccl_check.cu): the table the allreduce probe (nccl.c, bench_gpu.c, bench_nccl.c)
 * calls. Bump SDC_GPU_ALLREDUCE_VERSION with any change to what this file declares.
 */
#ifndef SDC_PROBES_ALLREDUCE_GPU_OPS_H
#define SDC_PROBES_ALLREDUCE_GPU_OPS_H

#include "kernels/gpu_module.h"

#define SDC_GPU_ALLREDUCE_VERSION 1

/* What one checked collective found (nccl_collective). */
struct sdc_gpu_coll_result {
	int64_t wrong;         /* output elements that are not their exact value */
	int64_t first;         /* the first of them (-1: none) */
	float got, expected;   /* its value and the exact one */
	double seconds;        /* the collective alone, between events on its stream */
	int timed_out;         /* the deadline passed: the communicator must be aborted */
	int refused;           /* NCCL itself failed the collective (its call, or its asynchronous error), not
				* CUDA: at a path's first collective, a path NCCL does not offer here */
};

/* The checked ring over NCCL (nccl_ring): one hop as its receiver saw it. */
struct sdc_gpu_hop {
	uint32_t hdr[3];      /* the header as it arrived: the sender's CRC32C of the chunk, step, its own CRC */
	uint32_t crc;         /* the CRC32C of the chunk as it arrived, taken on the GPU */
	int64_t nbad, first;  /* elements that are not the partial sum they must be; the first (-1), in the chunk */
	float got, expected;  /* its value, and the right one */
};
/* A fault the ring applies on this rank: 'H' the chunk it sends at (phase, step), after its CRC
 * (element el, a bit); 'h' that chunk's header (its CRC word); 'C' the sums of its first
 * reduce-scatter step (element el), before their CRC is taken: a good CRC on wrong values. */
#define SDC_GPU_RING_FAULTS 4
struct sdc_gpu_ring_fault {
	char kind;
	int member; /* which of the communicator's GPUs of this process (0 under mpirun, one rank a GPU) */
	int phase, step, bit;
	int64_t el;
};
struct sdc_gpu_allreduce_ops {
	int version; /* SDC_GPU_ALLREDUCE_VERSION */

	/* ---- the hop checks (ring_hd.h, ring.cu) ---- */
	/* The CRC32C of len bytes (host memory) computed on the GPU, in pieces joined there. */
	int (*crc32c)(const void *buf, uint64_t len, uint32_t *crc, double timeout, char *err, size_t errlen);
	/* A reduce-scatter hop's check on the GPU (sdc_ring_check_add_crc's): n received elements of
	 * iteration it (got, bit patterns) against the sum of count ranks adding up to rsum, the terms
	 * drawn on the device; dst = own + the expected sums, *wrong and the CRC32C of dst. Host memory. */
	int (*ring_check)(int64_t n, uint64_t it, int count, int rsum, const float *own, const uint32_t *got, float *dst,
			  int64_t *wrong, uint32_t *crc, double timeout, char *err, size_t errlen);
	/* On bytes of device data, reps each: seconds per CRC32C pass, and per check with its CRC. */
	int (*ring_bench)(uint64_t bytes, int reps, double *crc_s, double *check_s, double timeout, char *err,
			  size_t errlen);

	/* ---- NCCL's native collectives, checked exactly (ring_hd.h, probes/allreduce/nccl_check.cu), on a
	 * communicator of the main table (kernels/gpu_module.h, nccl_init); NULL in a module built without
	 * nccl.h ---- */
	/* One collective (op 'A' ncclAllReduce, 'R' ncclReduceScatter, 'G' ncclAllGather; counts as
	 * ring_hd.h's sdc_coll_*) on iteration it's exact data, drawn on the device; its output checked
	 * there, res[member] for each. flip (NULL: none): a bit of an output element flipped before the
	 * check (a fault in GPU memory). Every wait polled (ncclCommGetAsyncError, cudaStreamQuery)
	 * until the deadline. */
	int (*nccl_collective)(struct sdc_gpu_comm *c, char op, uint64_t it, const struct sdc_gpu_flip *flip,
			       struct sdc_gpu_coll_result *res, double timeout, char *err, size_t errlen);
	/* sdcscan's ring all-reduce of the communicator's n floats of iteration it (reduce-scatter, then
	 * all-gather: ring_hd.h's schedule) in ring order order[P] (order[position] = rank) over NCCL's
	 * send and receive, one group a step: every chunk goes with a header holding its CRC32C, taken
	 * on the GPU; what arrives is CRC'd and checked element by element on the GPU against the
	 * partial sum it must be (reduce-scatter: the sums sent on are own + that value, so a wrong one
	 * does not echo; all-gather: wrong ones put right). hops[member * 2 (P - 1) + step]: what each
	 * member received at each step, reduce-scatter's first; faults[nfaults]: this process's.
	 * seconds: the ring with its checks between events, the slowest member's. Every wait polled to
	 * the deadline (*timed_out past it). */
	int (*nccl_ring)(struct sdc_gpu_comm *c, const int *order, uint64_t it, const struct sdc_gpu_ring_fault *faults,
			 int nfaults, struct sdc_gpu_hop *hops, double *seconds, int *timed_out, double timeout, char *err,
			 size_t errlen);
};

#endif
