/*
 * The GPU module's interface: the CUDA code (kernels/cuda/) is built into a shared module that
 * sdcscan loads at run time (gpu.c, dlopen), so the one binary starts on hosts without the CUDA
 * libraries or driver and says why no GPU can be tested there. The module exports one symbol,
 * sdc_gpu_module, returning this table; a module whose abi differs is refused.
 *
 * Every call takes the calling thread's current GPU (bind), reports failure as a non-zero return
 * with err naming what failed (a CUDA or cuBLASLt error, or a deadline), and never blocks past
 * the engine's deadline: waits poll the stream (cudaEventQuery) until it passes; copies between
 * host and device memory go through pinned staging on the call's own stream and are waited for so;
 * memory is freed in stream order (cudaFreeAsync), never by a call that waits for the device. Once
 * a wait on a GPU has passed its deadline that GPU is given up: nothing more is started on it and
 * nothing of it is freed (kernels/cuda/cuda_util.h; tests/gpu/wait_lint.py checks the sources).
 *
 * tests/gpu/fake_module.c implements the same table on the CPU, from the same reference
 * arithmetic (abft_ref.h, gemm_data.h), so CI tests the host side of every GPU path.
 */
#ifndef SDC_GPU_MODULE_H
#define SDC_GPU_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "base/hd.h"

#define SDC_GPU_MODULE_ABI 7
#define SDC_GPU_MODULE_SYMBOL "sdc_gpu_module"

/* What the CUDA runtime says of one GPU. */
struct sdc_gpu_props {
	char name[96];
	char uuid[48];       /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
	char pci_bus_id[24]; /* "0000:3b:00.0" */
	int cc_major, cc_minor;
	int sm_count;
	uint64_t memory_bytes;
	int ecc_enabled;
	int driver_version;  /* cudaDriverGetVersion: 13000 for CUDA 13.0 */
};

/* The GEMM types the engine runs (kernels/cuda/gemm.cu). */
enum sdc_gpu_type {
	SDC_GPU_INT8,      /* exact: s8 x s8 -> s32, cuBLASLt IMMA (CUBLAS_COMPUTE_32I) */
	SDC_GPU_FP32,      /* exact: small integers in fp32, CUBLAS_COMPUTE_32F (no TF32) */
	SDC_GPU_BF16,      /* exact: small integers in bf16, tensor cores, fp32 out */
	SDC_GPU_FP16,      /* exact: small integers in fp16, tensor cores, fp32 out */
	SDC_GPU_FP32_FAST, /* fast: full-mantissa fp32, CUBLAS_COMPUTE_32F */
	SDC_GPU_TF32_FAST, /* fast: fp32 data, CUBLAS_COMPUTE_32F_FAST_TF32 */
	SDC_GPU_BF16_FAST, /* fast: full-mantissa bf16, fp32 accumulate and out */
	SDC_GPU_NTYPES,
};

SDC_HD int sdc_gpu_type_exact(enum sdc_gpu_type t)
{
	return t <= SDC_GPU_FP16;
}

/* Bytes of an A/B element and of a C element. */
SDC_HD int sdc_gpu_type_esz(enum sdc_gpu_type t)
{
	return t == SDC_GPU_INT8 ? 1 : t == SDC_GPU_BF16 || t == SDC_GPU_FP16 || t == SDC_GPU_BF16_FAST ? 2 : 4;
}

struct sdc_gpu_gemm_cfg {
	enum sdc_gpu_type type;
	int m, n, k;          /* the product; B has n data columns */
	int n_ext;            /* n plus the checksum columns */
	int ldc;              /* C's row length in elements (>= n_ext; padding columns are zero) */
	uint64_t seed;
	int cls;              /* the class the RNG purposes are keyed by (gemm_data.h) */
	/* exact: the digit layout of B's checksum columns (abft_exact.h) and the data bounds */
	int base_log2, nd1, nd2;
	int64_t amax, bmax;
	int extreme;          /* exact: every element of A at amax (int8: 127) and of B at bmax (int8: 127) */
	/* fast: the size of the distribution pools (doubles, a power of 2), e_max, c_sigma */
	uint64_t pool_size;
	double emax, c_sigma;
	double timeout;       /* seconds any one wait may take before the GPU is declared hung */
	int report_all;       /* every row comes back from the check, failing or not (calibration, campaigns) */
};

/* A row of C that failed its check, as the device saw it. */
struct sdc_gpu_bad_row {
	int row;
	int64_t s1, s2, e1, e2; /* exact: the sums over the data columns and what the digit columns spell */
	int nbad, first_bad;    /* exact: values that are not exact integers */
	double d1, d2, t1, t2;  /* fast: the two verification differences and their thresholds */
};

/* What a check found: every row that failed (every row, with report_all), in increasing row
 * order, and whether the operands still had the fingerprints taken at load when the GEMM had
 * run (1 each; 1 when not asked). */
struct sdc_gpu_check {
	int nbad;
	struct sdc_gpu_bad_row *bad; /* the caller's array of m entries */
	int a_intact, b_intact;
};

/*
 * Work is submitted into one of SDC_GPU_SLOTS slots, each with its own C and results, and
 * collected later: while the host looks at one slot's results the GPU computes the other's, so
 * the GPU never waits for the host. What a submission does (flags):
 */
#define SDC_GPU_SLOTS 2
#define SDC_GPU_MULTIPLY 1    /* C = A B_ext: the data and the checksum columns in one cuBLASLt call */
#define SDC_GPU_PLAIN 2       /* C = A B: the data columns only (the benchmark's reference) */
#define SDC_GPU_CHECK 4       /* every row of C checked on the device, its two sums kept */
#define SDC_GPU_FINGERPRINT 8 /* A's and B's fingerprints taken again, to compare with the load's */

/* The SM replay of one output tile: the engine's own exact GEMM kernel, one block per SM, each
 * computing the same tile of rows [row0, row0 + rows) and columns [col0, col0 + cols). */
#define SDC_GPU_TILE 16
#define SDC_GPU_MAX_SMS 256

struct sdc_gpu_sm_replay {
	int row0, col0, rows, cols;
	int blocks;                     /* blocks that ran (one per SM asked) */
	int smid[SDC_GPU_MAX_SMS];      /* the SM each block ran on (-1: moved while it ran) */
	/* each block's tile, row-major rows x cols, as raw element bits (int32 or fp32) */
	uint32_t *tiles;                /* host memory: blocks * rows * cols, given by the caller */
};

struct sdc_gpu_gemm;
struct sdc_gpu_mt;
struct sdc_mt_op;
struct sdc_gpu_eb;
struct sdc_eb_cfg;
struct sdc_eb_verdict;

/* NCCL (kernels/cuda/nccl.cu): the unique id's size, and what one checked collective found. */
#define SDC_GPU_NCCL_ID_BYTES 128
struct sdc_gpu_comm;
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
/* A bit of a collective's output flipped in GPU memory before its check (member, element). */
struct sdc_gpu_flip {
	int member;
	int64_t el;
	int bit;
};

struct sdc_gpu_module {
	int abi;
	const char *cuda_runtime; /* "13.0" */
	const char *blas;         /* "cuBLASLt 13.1.0" */

	/* How many GPUs; 0 with why (no driver, driver too old, no device). */
	int (*count)(char *why, size_t len);
	int (*props)(int index, struct sdc_gpu_props *p, char *err, size_t errlen);
	/* Makes index the calling thread's GPU. */
	int (*bind)(int index, char *err, size_t errlen);

	/* ---- the checked GEMM engine, on the calling thread's GPU ---- */
	struct sdc_gpu_gemm *(*gemm_create)(const struct sdc_gpu_gemm_cfg *cfg, char *err, size_t errlen);
	void (*gemm_destroy)(struct sdc_gpu_gemm *g);
	/* Operand set `set`: A and B drawn on the device (the fast class from pool, pool_size doubles in
	 * host memory, kept on the device while it is the same pointer), B's checksum columns encoded
	 * there, the operands' fingerprints taken, and for the fast class the per-row thresholds. */
	int (*gemm_load)(struct sdc_gpu_gemm *g, uint64_t set, const double *pool, char *err, size_t errlen);
	/* Enqueues `what` (SDC_GPU_* flags, in the order listed) on slot's C; returns without waiting.
	 * A slot's C and results stay as they are until the slot is submitted again. */
	int (*gemm_submit)(struct sdc_gpu_gemm *g, int slot, int what, char *err, size_t errlen);
	/* Waits for slot's submission (within the deadline) and gives what it found: out (nbad 0 when
	 * not checked; the failing rows copied back only when there are some), and in sums (host,
	 * m x 2 words; NULL: not wanted) each row's two sums as raw bits (int64, or double for the
	 * fast class), the vote's input. */
	int (*gemm_collect)(struct sdc_gpu_gemm *g, int slot, uint64_t *sums, struct sdc_gpu_check *out, char *err,
			    size_t errlen);
	/* Waits for everything submitted. */
	int (*gemm_sync)(struct sdc_gpu_gemm *g, char *err, size_t errlen);
	/* Copies count elements of matrix 'A', 'B' (as B_ext, row p, columns col..) or 'C' (slot's)
	 * starting at (row, col) to host memory, raw bits, esz or csz bytes each. */
	int (*gemm_read)(struct sdc_gpu_gemm *g, int slot, char matrix, int row, int col, int count, void *out,
			 char *err, size_t errlen);
	/* Flips one bit of one element in device memory (C: slot's); before and after get its raw bits. */
	int (*gemm_flip)(struct sdc_gpu_gemm *g, int slot, char matrix, int row, int col, int bit, uint64_t *before,
			 uint64_t *after, char *err, size_t errlen);
	/* The SM replay (see above); r->row0, col0, rows, cols and tiles set by the caller. */
	int (*gemm_sm_replay)(struct sdc_gpu_gemm *g, struct sdc_gpu_sm_replay *r, char *err, size_t errlen);
	/* What ran: "cuBLASLt algo 23, tile 128x256, ..." */
	const char *(*gemm_kernel)(struct sdc_gpu_gemm *g);

	/* ---- the exact class (kernels/xops.h, kernels/cuda/xgemm.cu), on the calling thread's GPU ---- */
	/* C = A B (m x k, k x n, row-major, host memory) by the exact GEMM kernel: each element summed
	 * as sdc_xgemm_plain sums it, from the same source, so the bits must be the CPU's. */
	int (*xgemm)(int m, int n, int k, const float *a, const float *b, float *c, double timeout, char *err,
		     size_t errlen);
	/* exp and log of n doubles (host memory) on the GPU, as sdc_exp and sdc_log compute them. */
	int (*xmath)(int n, const double *x, double *exp_out, double *log_out, double timeout, char *err, size_t errlen);
	/* n x n x n: the exact kernel and cuBLAS sgemm on the same device operands, reps each back to
	 * back; seconds per GEMM of each (the best of three turns). */
	int (*xgemm_bench)(int n, int reps, double *exact_s, double *sgemm_s, double timeout, char *err, size_t errlen);

	/* ---- minitrain's steps on the calling thread's GPU (kernels/mt_ops.h, kernels/cuda/minitrain.cu):
	 * the model's minitrain.h backend. One stream; every operation a kernel of one CUDA thread per
	 * operation thread, calling the same sdc_mt_op_thread the CPU runs; the GEMM the exact kernel.
	 * Copies (host memory pageable, staged through pinned memory) wait for the stream by polling it to the deadline (a
	 * hung GPU fails the call, never blocks it); after one failure every call fails, mt_error saying why. ---- */
	struct sdc_gpu_mt *(*mt_open)(double timeout, char *err, size_t errlen);
	void (*mt_close)(struct sdc_gpu_mt *g);
	void *(*mt_alloc)(struct sdc_gpu_mt *g, size_t bytes); /* zeroed device memory; NULL: see mt_error */
	void (*mt_free)(struct sdc_gpu_mt *g, void *p);
	/* n copies, to the device (host to device) or from it: one wait for the stream before them
	 * and one after, so a step's tensors move in one batch. */
	int (*mt_copy)(struct sdc_gpu_mt *g, int to_device, int n, void *const *dst, const void *const *src,
		       const size_t *bytes);
	int (*mt_op)(struct sdc_gpu_mt *g, const struct sdc_mt_op *op);
	int (*mt_gemm)(struct sdc_gpu_mt *g, int m, int n, int k, const float *a, int lda, const float *b, int ldb,
		       float *c, int ldc);
	const char *(*mt_error)(struct sdc_gpu_mt *g);

	/* ---- embbag on the calling thread's GPU (kernels/embbag_hd.h, kernels/cuda/embbag.cu). One
	 * stream; every wait polled to the deadline; after one failure every call fails, eb_error
	 * saying why. ---- */
	/* A table of cfg's rows (with the ABFT trailer or without: the plain FBGEMM rows), made on the
	 * device from the seed as sdc_eb_row_truth makes them, and room for max_bags bags. */
	struct sdc_gpu_eb *(*eb_open)(const struct sdc_eb_cfg *cfg, int with_sums, int max_bags, double timeout,
				      char *err, size_t errlen);
	void (*eb_close)(struct sdc_gpu_eb *g);
	/* Draws batches [first, first + n) of cfg's stream on the device, as sdc_eb_batch_draw does
	 * (n * cfg->batch <= max_bags): the bags the lookups below take. */
	int (*eb_draw)(struct sdc_gpu_eb *g, uint64_t first, int n);
	/* Looks every drawn bag up (sums: enum sdc_eb_sums; with sums, each bag's output checked on
	 * the device by sdc_eb_check against its rows' stored sums). flips[nflips] (member: the bag,
	 * el: the column) are flipped in the output in GPU memory before the checks. out (host,
	 * bags x d floats) and v (host, one a bag) are copied back unless NULL. */
	int (*eb_lookup)(struct sdc_gpu_eb *g, int sums, const struct sdc_gpu_flip *flips, int nflips, float *out,
			 struct sdc_eb_verdict *v);
	/* Rows [row0, row0 + n) (from 0 again past the last) compared on the device with their truth
	 * and their stored sums with the recomputed ones: *nbad rows failed, the first max of them in
	 * bad[] in increasing order. */
	int (*eb_sweep)(struct sdc_gpu_eb *g, uint64_t row0, uint64_t n, uint64_t *bad, int max, int *nbad);
	/* One row's bytes (cfg's stride) copied from the device (write 0) or to it (write 1). */
	int (*eb_row)(struct sdc_gpu_eb *g, int write, uint64_t row, uint8_t *bytes);
	/* The benchmark: seconds per lookup of every drawn bag (sums as eb_lookup, nothing copied
	 * back), reps launches back to back between events. */
	int (*eb_time)(struct sdc_gpu_eb *g, int sums, int reps, double *seconds);
	const char *(*eb_error)(struct sdc_gpu_eb *g);

	/* ---- the allreduce probe's hop checks (kernels/ring_hd.h, kernels/cuda/ring.cu) ---- */
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

	/* ---- NCCL's native collectives, checked exactly (kernels/ring_hd.h, kernels/cuda/nccl.cu) ----
	 * libnccl.so.2 is opened at run time, so the module loads on hosts without it. */
	/* NCCL's version ("2.28.9"), or NULL with why it cannot be used. */
	const char *(*nccl_version)(char *why, size_t len);
	/* ncclGetUniqueId: what one rank makes and the others are given (SDC_GPU_NCCL_ID_BYTES). */
	int (*nccl_unique_id)(uint8_t *id, char *err, size_t errlen);
	/* A non-blocking communicator (ncclCommInitRankConfig, blocking = 0) of nranks, of which this
	 * process holds nmem GPUs (devices[], CUDA ordinals) as ranks first_rank .. first_rank + nmem - 1:
	 * one under mpirun (one rank a GPU), every GPU of the host in a single process (initialised in
	 * one group, as ncclCommInitAll does); at most 64. Its initialisation is polled until the
	 * deadline and aborted past it. algo and proto (NULL or "": NCCL's choice) name the path: the
	 * caller sets NCCL_ALGO and NCCL_PROTO around this call (gpu.c, sdc_gpu_nccl_init: NCCL's tuning
	 * reads them while the communicator initialises; the module never touches the environment,
	 * which other threads read); n: floats a collective moves,
	 * device buffers for them made here. The entries below act on every member, launching them in
	 * one group so none waits for another. */
	struct sdc_gpu_comm *(*nccl_init)(const uint8_t *id, int nranks, int first_rank, int nmem, const int *devices,
					  const char *algo, const char *proto, int64_t n, double timeout, char *err,
					  size_t errlen);
	/* Frees it: ncclCommFinalize then ncclCommDestroy, or ncclCommAbort (abort: after a deadline,
	 * when nothing on it may be waited for). */
	void (*nccl_destroy)(struct sdc_gpu_comm *c, int abort);
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
	/* Data-parallel training's global gradient over NCCL (minitrain's xfmr-dp, one rank a GPU: a
	 * communicator of one member here): every rank's local (total floats, host memory) all-gathered
	 * by ncclAllGather, then each element's mean in rank order on the GPU (xops.h's
	 * sdc_xrank_mean, the bits the CPU's dp.c gets) into out (host). Within the deadline
	 * (*timed_out past it). */
	int (*nccl_rank_mean)(struct sdc_gpu_comm *c, const float *local, int64_t total, float *out, int *timed_out,
			      double timeout, char *err, size_t errlen);
	/* Whether GPU device (a CUDA ordinal; -1: the calling thread's) still runs a kernel within the
	 * deadline (after a collective timed out: a stuck GPU is told from a peer that never came). */
	int (*ping)(int device, double timeout, char *err, size_t errlen);
};

typedef const struct sdc_gpu_module *(*sdc_gpu_module_fn)(void);

#endif
