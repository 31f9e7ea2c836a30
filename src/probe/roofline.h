/*
 * Roofline estimates of the GPU benchmarks' targets (issue 39): what a GPU's datasheet rates allow
 * a kernel at best, so that a target the design cannot reach is said beside the measurement, and
 * before any GPU is timed (the estimates are plain arithmetic: the fake module's tests and the unit
 * tests compute them without one).
 *
 * A roofline counts the work a kernel must do (operations at the GPU's dense peak for their type,
 * bytes at its memory bandwidth, shared-memory wavefronts and instructions at an SM's rates per
 * clock) and nothing else: no latency, occupancy, tile or wave effects of a library's kernel, no
 * clock below boost. So it is an upper bound on what a design reaches; a target it misses is
 * MISSED by design, and a measurement above it says the model left something out.
 *
 * The probes' benchmarks say what their kernels do (probes/gemm/bench_gpu.c: the checked GEMM and
 * its row check; probes/embbag/bench_gpu.c: the checked lookups; probes/minitrain/bench_gpu.c: the
 * exact GEMM); this file holds the GPUs' figures and the arithmetic they share.
 */
#ifndef SDC_PROBE_ROOFLINE_H
#define SDC_PROBE_ROOFLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sdc_facts;

/* The dense peaks a roofline takes, by the unit that runs the operation. */
enum sdc_rl_peak {
	SDC_RL_INT8, /* int8 tensor cores (IMMA), operations per second */
	SDC_RL_FP16, /* fp16 and bf16 tensor cores, fp32 accumulation */
	SDC_RL_TF32, /* tf32 tensor cores */
	SDC_RL_FP32, /* FP32 FMA on the CUDA cores (no tensor cores) */
	SDC_RL_NPEAKS,
};

/* DRAM moves whole sectors (CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory"). */
#define SDC_RL_SECTOR 32
/* An SM's warp schedulers: one instruction each a clock. */
#define SDC_RL_SCHEDULERS 4

struct sdc_rl_gpu {
	const char *name;            /* the board: "H100 SXM" */
	const char *models[2];       /* the device names that are this board (as CUDA and NVML give them) */
	double peak[SDC_RL_NPEAKS];  /* dense operations per second: the datasheet's sparsity figures halved */
	double bandwidth;            /* GPU memory, bytes per second */
	int sms;
	int fp32_lanes;              /* FP32 lanes an SM (each an FFMA, FMUL or FADD a clock) */
	int smem_banks;              /* 4-byte shared-memory banks an SM: one wavefront a clock */
	const char *source;          /* the datasheet */
};

/* The board whose device name is model (case aside), or NULL with why = "no roofline for MODEL". */
const struct sdc_rl_gpu *sdc_rl_find(const char *model, char *why, size_t whylen);

/* The boards known, NULL-terminated (the unit tests). */
extern const struct sdc_rl_gpu *const sdc_rl_gpus[];

/*
 * A checked GEMM against the plain one: t_plain = 2 m n_plain k / peak, t_product = 2 m n_product
 * k / peak (the checksum columns multiplied in the same call), t_check = the row check's DRAM
 * bytes / bandwidth (a kernel of its own after the product, re-reading C), share = t_plain /
 * (t_product + t_check).
 */
struct sdc_rl_checked {
	double t_plain, t_product, t_check, share;
};
void sdc_rl_checked_gemm(double peak, double bandwidth, double m, double n_plain, double n_product, double k,
			 double check_bytes, struct sdc_rl_checked *out);

/* Bytes of DRAM a contiguous run of len bytes at byte offset moves: the 32-byte sectors it touches. */
double sdc_rl_run_bytes(uint64_t offset, uint64_t len);
/* The same for a row of len bytes at the start of a row of a table of stride-byte rows (table
 * aligned to a sector), averaged over the rows' starts within a sector (a random row's mean). */
double sdc_rl_row_bytes(uint64_t stride, uint64_t len);
/* Shared-memory wavefronts of one warp's access to the 4-byte words word[0..n) (32 for a scalar
 * access, 32 v for a v-word vector one: every word its lanes ask for): the most distinct words any
 * one of banks banks holds; the same word in two lanes is one access. (A 128-bit access may take
 * a wavefront per quarter-warp at least: this is the fewest, as a roofline takes.) */
int sdc_rl_wavefronts(const uint32_t *word, int n, int banks);

/*
 * The by-design verdict: whether estimate meets target (at_least: estimate >= target, else <=),
 * and in buf "met by design (roofline 99.1%)" or "MISSED by design (roofline 77.3%)".
 */
bool sdc_rl_verdict(double estimate, double target, bool at_least, char *buf, size_t len);

/* The roofline's GPU in a benchmark's facts ("roofline.gpu", its peaks, bandwidth and source), or
 * why there is none ("roofline.none"); and the same as a line of its table's header. */
void sdc_rl_facts(struct sdc_facts *out, const struct sdc_rl_gpu *g, const char *why);
void sdc_rl_print(const struct sdc_rl_gpu *g, const char *why);

#endif
