/* The gemm probe's own parts, shared by the files of its folder (and by nothing outside it). */
#ifndef SDC_PROBES_GEMM_H
#define SDC_PROBES_GEMM_H

#include "probe/command.h"
#include "probes/gemm/gpu_ops.h"
#include "probe/probe.h"
#include "probes/gemm/abft.h"
#include "probes/gemm/dist.h"

struct gemm_opts {
	uint32_t dtypes;
	int64_t m, n, k;
	int64_t refresh;
	int int8_kernel, float_kernel;
	uint32_t distributions;
	double c_sigma;
	char calibration[SDC_OPT_STR_MAX];
	double int8_floor, fp32_floor, fp32_fast_floor, fp64_fast_floor;
	/* GPUs */
	uint32_t gpu_dtypes;
	int64_t gpu_m, gpu_n, gpu_k, gpu_refresh;
	double gpu_timeout;
	int gpu_data;
	double gpu_floor[SDC_GPU_NTYPES];
};

/* Rows reported in detail per iteration; a corrupted B column fails every row. */
#define ROWS_DETAILED 4
/* Rows of a column pattern re-examined per iteration for errors the pattern would hide. */
#define ROWS_RECHECKED 64

struct gemm_shared {
	struct sdc_gemm_cfg cfg;
	struct sdc_dist_pool pools[SDC_NDISTS];
	int npools;
	uint64_t refresh;
	char operation[96];
	/* GPU lanes: of a burn variant (gpu-*), or a CPU variant's lanes on GPUs (int8, fp32), whose
	 * results are bit-identical to the CPU's and go into the same vote */
	bool gpu;
	bool gpu_burn;
	struct sdc_gpu_gemm_cfg gcfg;
	uint64_t gpu_refresh;
	char gpu_operation[96];
	char emax_source[512];
	char gpu_error[256]; /* why the GPU lanes of a CPU variant cannot run */
};

/* The variants' GPU burn types as options name them ("int8", "bf16", ..., "bf16-fast"); NULL-terminated. */
extern const char *const sdc_gemm_gpu_type_names[];
/* The GPU variants' names ("gpu-int8", ...), in enum sdc_gpu_type order. */
extern const char *const sdc_gemm_gpu_variant_names[];

/* gpu.c: the GPU lanes of the probe */
/* A fast type's e_max on a GPU model at inner dimension k: from the calibration file's "gpus"
 * section (calibration: a path, or "" for the default), else the type's default (gpu.c: from its
 * format's unit roundoff and V-ABFT Table 7's H100 rows); source says which, and for a default that
 * it is one and how to calibrate. -1 with err for a file that cannot be used. */
int sdc_gemm_gpu_emax(const char *calibration, const char *model, enum sdc_gpu_type type, int k, double *emax,
		      char *source, size_t srclen, char *err, size_t errlen);
/* A burn engine's configuration for type and size: random data, a 30 s deadline, the default
 * c_sigma, the fast types' default e_max (sdc_gemm_gpu_emax). -1 with err when the type cannot take it. */
int sdc_gemm_gpu_burn_cfg(enum sdc_gpu_type type, int m, int n, int k, uint64_t seed, struct sdc_gpu_gemm_cfg *c,
			  char *err, size_t errlen);
int sdc_gemm_gpu_setup(struct sdc_probe_ctx *ctx, struct gemm_shared *sh, const struct gemm_opts *o);
void sdc_gemm_gpu_run(struct sdc_worker *w);

/* gpu_truth.c: the GPU engine's operands and products regenerated on the host (gemm_data.h). */
struct sdc_gpu_truth {
	struct sdc_gpu_gemm_cfg cfg;
	int kp;            /* k rounded up as the device lays A and B out */
	uint64_t set;
	const double *pool;
	void *b_ext;       /* k x n_ext, the element type's bits (esz bytes each); NULL until needed */
	bool valid;
};
int sdc_gpu_truth_init(struct sdc_gpu_truth *t, const struct sdc_gpu_gemm_cfg *cfg);
void sdc_gpu_truth_release(struct sdc_gpu_truth *t);
/* Regenerates B_ext of operand set `set` (the fast class from pool). -1 when out of memory. */
int sdc_gpu_truth_load(struct sdc_gpu_truth *t, uint64_t set, const double *pool);
/* Raw bits of A[i][p] and of B_ext[p][j] (load first for B). */
uint64_t sdc_gpu_truth_a(const struct sdc_gpu_truth *t, int i, int p);
uint64_t sdc_gpu_truth_b(const struct sdc_gpu_truth *t, int p, int j);
/* Row i of C_ext computed on the host: exact in int64 (ref_i64), fast in double (ref_f64). */
void sdc_gpu_truth_c_row(const struct sdc_gpu_truth *t, int i, int64_t *ref_i64, double *ref_f64);
/* The value of an element's raw bits, for reports: an integer or a float of the element type. */
double sdc_gpu_value(enum sdc_gpu_type type, int c_elem, uint64_t bits);

/* bench_gpu.c: bench overhead --gpus, on the run's first GPU; returns the exit code. */
int sdc_gemm_bench_gpu(struct sdc_cmd *cmd, struct sdc_run *run, const struct sdc_size3 *sizes, int nsizes,
		       double seconds, uint32_t types);
/* The bytes one row check of engine c moves (gemm_abft.cu's kernels): read and written as the
 * kernel asks for them, and the DRAM traffic that makes (whole 32-byte sectors). */
struct sdc_gemm_check_bytes {
	double read, written, dram;
};
void sdc_gemm_gpu_check_bytes(const struct sdc_gpu_gemm_cfg *c, struct sdc_gemm_check_bytes *b);
/* GEMMs the burn runs on one operand set (gemm.gpu_refresh's default): it fingerprints the
 * operands once a set, at its last GEMM (gpu.c), and bench overhead's burn does the same. */
#define SDC_GEMM_GPU_REFRESH 64
/* The checked GEMM's share of plain cuBLASLt by the roofline on gpu (probe/roofline.h), for engine c;
 * and (burn_share, unless NULL) the burn's, which also fingerprints the operands once every
 * refresh GEMMs. */
struct sdc_rl_gpu;
struct sdc_rl_checked;
void sdc_gemm_gpu_roofline(const struct sdc_rl_gpu *gpu, const struct sdc_gpu_gemm_cfg *c, int refresh,
			   struct sdc_rl_checked *out, double *burn_share);

/* calibrate_gpu.c: calibrate --gpus, every GPU of run; entries ("MODEL, LIBRARY") into gpus_section. */
int sdc_gemm_calibrate_gpus(struct sdc_run *run, const int *sizes, int nsizes, uint64_t trials, uint32_t precisions,
			    bool quiet, struct sdc_facts *gpus_section);

/* campaign.c: V-ABFT Tables 4 (FP64) and 5 (FP32) as published: n, the actual verification
 * difference, A-ABFT's tightness, V-ABFT's threshold and tightness. */
struct sdc_vabft_row {
	int n;
	double actual, a_tight, v_t, v_tight;
};
extern const struct sdc_vabft_row sdc_vabft_t4[5], sdc_vabft_t5[5];

/* campaign_gpu.c: campaign gemm --gpus, the tightness table on the run's first GPU, into out. */
int sdc_gemm_campaign_gpu(struct sdc_run *run, const int *sizes, int nsizes, uint64_t reps, const char *calibration,
			  struct sdc_facts *out, bool *targets_met);

/* Tools, listed in the descriptor (gemm.c). */
extern const struct sdc_command sdc_gemm_bench;          /* bench.c: sdcscan bench gemm */
extern const struct sdc_command sdc_gemm_bench_overhead; /* bench.c: sdcscan bench overhead */
extern const struct sdc_command sdc_gemm_campaign;       /* campaign.c: sdcscan campaign gemm */
extern const struct sdc_command sdc_gemm_calibrate;      /* calibrate.c: sdcscan calibrate */

#endif
