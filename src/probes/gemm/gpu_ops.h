/*
 * The gemm family: the checked GEMM engine on a GPU (probes/gemm/gemm.cu), the table the gemm
 * probe's GPU lanes, benchmark, calibration and campaign call (gpu.c, bench_gpu.c, calibrate_gpu.c,
 * campaign_gpu.c). Bump SDC_GPU_GEMM_VERSION with any change to what this file declares.
 */
#ifndef SDC_PROBES_GEMM_GPU_OPS_H
#define SDC_PROBES_GEMM_GPU_OPS_H

#include <stdio.h>

#include "kernels/gpu_module.h"

#define SDC_GPU_GEMM_VERSION 2

/* The GEMM types the engine runs (probes/gemm/gemm.cu). */
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
	/* bytes the row check read, where the module counts them (the fake twin: its check's every
	 * load; the benchmark sets them beside its roofline's); 0 where it does not (the CUDA module) */
	uint64_t check_bytes;
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

struct sdc_gpu_gemm_ops {
	int version;      /* SDC_GPU_GEMM_VERSION */
	const char *blas; /* "cuBLASLt 13.1.0": what the engine runs, its calibrations' key */

	/* ---- on the calling thread's GPU ---- */
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
};

/* Whether slot and what make a submission (gemm_submit's contract, checked alike by the module
 * and its fake twin): 0, or -1 with err. */
static inline int sdc_gpu_gemm_submission_check(int slot, int what, char *err, size_t errlen)
{
	if (slot >= 0 && slot < SDC_GPU_SLOTS && what && !((what & SDC_GPU_MULTIPLY) && (what & SDC_GPU_PLAIN)))
		return 0;
	snprintf(err, errlen, "gemm_submit: slot %d, what %#x: not a submission", slot, what);
	return -1;
}

#endif
