/*
 * The minitrain probe's own parts, shared by the files of its folder and by nothing outside it:
 *   minitrain.c      the probe: options, variants, setup, fault injection, the burn loop
 *   training.c       what its parts share: a model configured and made, tensor hashes, a finding
 *   golden_record.c  the golden recorder (sdcscan golden record): a trajectory on the reference kernel
 *   replay.c         a divergence from the golden, replayed from the seed to name step, tensor, element
 *   dp.c             data parallel across MPI ranks: the gradient all-reduce and the per-step state check
 *   bench.c          sdcscan bench minitrain
 * and the models themselves, which know nothing of the probe (tests/layers.py: its arithmetic):
 *   model.h      the two models and their backend; mt_dlrm.c, mt_xfmr.c (made by model_make.c),
 *                model.c (mt_internal.h), their operations (mt_ops.h) and the attention GEMMs'
 *                check (attn_check.h)
 */
#ifndef SDC_PROBES_MINITRAIN_H
#define SDC_PROBES_MINITRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/digest.h"
#include "probe/command.h"
#include "probe/golden_file.h"
#include "probes/minitrain/model.h"
#include "probe/probe.h"

enum { GOLDEN_AUTO, GOLDEN_OFF, GOLDEN_REQUIRE };
enum { MODEL_DLRM, MODEL_XFMR };

struct minitrain_opts {
	uint32_t models;
	int64_t seed, steps, checkpoint;
	int64_t dlrm_batch, dlrm_tables, dlrm_rows, dlrm_dim, dlrm_pooling;
	int64_t xfmr_batch, xfmr_seq, xfmr_dim, xfmr_heads, xfmr_ff;
	int kernel, golden;
	bool data_parallel;
	int dp_transport; /* enum mt_dp_transport */
	double floor, gpu_timeout;
};


#define MAX_FAULTS 8
#define ELEMENTS_DETAILED 4

/* Where a step's check found the first difference from the golden. */
enum point { POINT_ENTRY, POINT_GRADS, POINT_LOSS };

struct sdc_gpu_comm;

struct mt_shared {
	struct sdc_mt_cfg cfg;
	int steps, every;
	bool plain;
	const struct sdc_golden_entry *golden;
	const char *golden_origin;
	char operation[96];
};

struct mt_worker {
	struct sdc_worker *w;
	const struct mt_shared *sh;
	struct sdc_mt_model *m, *replay;
	struct sdc_mt_tensor *traj, *grads;
	int ntraj, ngrads;
	struct sdc_sha256 sha;
	uint64_t iter; /* global step */
	int step;      /* within the run */
	uint64_t *tensor_hash;
	/* this step */
	struct sdc_fault faults[MAX_FAULTS];
	const char *fault_target[MAX_FAULTS];
	int nfaults;
	bool extreme; /* an attention check saw NaN, INF or near-INF */
	uint64_t grad_hash;
	bool grads_diverged;
	float *saved_grads; /* the gradients of a step whose gradients diverged */
	size_t grads_total;
	/* replay capture */
	float *capture;
	bool diverged_this_run; /* and not repaired: no replay reproduced the golden */
	bool diverged_this_step;
	/* An attention check failed in this run: later failures are its consequences, not reported. */
	int attn_step;
	/* data parallel */
	float *dp_local, *dp_all;
	uint64_t *dp_hashes;
	bool dp_failed;
	struct sdc_gpu_comm *dp_nccl; /* the gradients over NCCL between the ranks' GPUs, or NULL: MPI */
	bool dp_entry_golden; /* the state entering this step matched the golden */
	/* on a GPU (gpu.c): the module's training kernels as the models' backend */
	void *gpu;
	struct sdc_mt_backend be;
};

/* training.c */
void sdc_mt_cfg_from_opts(const struct minitrain_opts *o, const struct sdc_variant *v, uint64_t seed,
			  struct sdc_mt_cfg *c);
int sdc_mt_check_cfg(const struct sdc_mt_cfg *c, char *err, size_t len);
/* One hash over a list of tensors: XXH3 of their XXH3s, each kept in out (may be NULL). */
uint64_t sdc_mt_tensors_hash(const struct sdc_mt_tensor *t, int n, uint64_t *out);
/* The SHA-256 of each tensor into out[n][32]. */
void sdc_mt_tensors_sha(struct sdc_sha256 *s, const struct sdc_mt_tensor *t, int n, uint8_t *out);
/* The tensors laid end to end in flat, and back. */
void sdc_mt_tensors_to_flat(const struct sdc_mt_tensor *t, int n, float *flat);
void sdc_mt_tensors_from_flat(struct sdc_mt_tensor *t, int n, const float *flat);
void sdc_mt_finding_init(struct sdc_finding *f, const struct mt_worker *mw, const char *kind, const char *target,
			 int64_t row, int64_t col);
/* "GPU" or "core": where the worker trains, for findings. */
static inline const char *mt_device_word(const struct mt_worker *mw)
{
	return mw->gpu ? "GPU" : "core";
}
/* A model of the worker's configuration where the worker runs (its core, or its GPU: mw->gpu). */
struct sdc_mt_model *sdc_mt_model_new(struct mt_worker *mw, char *err, size_t len);

/* gpu.c: a GPU as the models' backend (bound to the calling thread), or -1 with err; closed. */
int sdc_mt_gpu_backend(const struct sdc_device *dev, double timeout, struct sdc_mt_backend *be, char *err, size_t len);
void sdc_mt_gpu_backend_close(struct sdc_mt_backend *be);
/* ... the worker's GPU, as mw->be (mw->gpu set). */
int sdc_mt_gpu_open(struct mt_worker *mw, double timeout, char *err, size_t len);
void sdc_mt_gpu_close(struct mt_worker *mw);
/* bench.c: the quick profile's two models, which the benchmarks train. */
extern const struct sdc_mt_cfg sdc_mt_bench_dlrm, sdc_mt_bench_xfmr;

/* golden_record.c: the trajectory of one variant, on the calling thread (the descriptor's golden_record). */
struct sdc_facts *sdc_mt_golden_record(const void *opts, const struct sdc_variant *variant, uint64_t seed, char *err,
				       size_t len);

/* replay.c */
/* One side of a comparison: a list of tensors, or the same tensors end to end in one buffer. */
struct mt_side {
	const struct sdc_mt_tensor *list;
	const float *flat;
};
/* Where two sides first differ (tensor -1: nowhere), how many elements and tensors differ, and
 * whether a differing tensor holds a NaN or INF on the actual side. */
struct mt_difference {
	int tensor;
	size_t index, elements;
	int tensors;
	float expected, actual;
	bool nonfinite;
};
void sdc_mt_first_difference(const struct sdc_mt_tensor *shape, int n, struct mt_side actual, struct mt_side expected,
			     struct mt_difference *d);
/* The state (at POINT_ENTRY), gradients or loss of this step did not match the golden: replay and report. */
void sdc_mt_diverged(struct mt_worker *mw, enum point at, float loss);
/* Data parallel: this rank's own gradients differ from its golden ones: recompute and report. */
void sdc_mt_dp_gradient_diverged(struct mt_worker *mw);

/* dp.c */
/* The global gradient: every rank's, summed in rank order, averaged. -1 when a rank did not take part. */
int sdc_mt_dp_reduce(struct sdc_mt_tensor *grads, int ngrads, size_t total, float *local, float *all);
/* The model's reduce hook in a data-parallel run. */
void sdc_mt_hook_reduce(void *ctx, int step);
/* The gradients' transport (option dp_transport): auto takes NCCL between the ranks' GPUs where
 * every rank has a GPU and NCCL, MPI otherwise; all ranks take the same. Opens the communicator;
 * 0, or -1 after the worker said why (nccl asked for and not possible everywhere, a rank gone). */
enum mt_dp_transport { MT_DP_AUTO, MT_DP_MPI, MT_DP_NCCL };
int sdc_mt_dp_open(struct mt_worker *mw, int transport);
/* Closes it (aborted after a failure). */
void sdc_mt_dp_close(struct mt_worker *mw);
/* Before each step: every rank's state compared, the odd one named; false to stop. */
bool sdc_mt_dp_step_check(struct mt_worker *mw, uint64_t *entry_io);

/* bench.c */
extern const struct sdc_command sdc_minitrain_bench; /* sdcscan bench minitrain */
struct sdc_cmd;
struct sdc_size_list;
/*
 * The exact GEMM's share of cuBLAS sgemm by the roofline on gpu (probe/roofline.h), n x n x n on sms
 * SMs (0: the board's): per warp and step of k, the SM clocks its FP32 lanes, its shared memory
 * (wavefronts, bank conflicts counted from the kernel's indices) and its schedulers need, the
 * busiest of them; that share of the FP32 FMA peak, times the blocks' spread over the SMs; sgemm
 * at the peak (bench_gpu.c).
 */
struct sdc_rl_gpu;
struct sdc_mt_xgemm_roofline {
	double fp32_clk, smem_clk, issue_clk; /* SM clocks a warp's step of k takes on each */
	double per_sm;                        /* the FP32 FMA peak's share an SM reaches */
	double spread;                        /* blocks / (SMs x the busiest SM's blocks) */
	double share;                         /* per_sm x spread: of sgemm at the peak */
};
void sdc_mt_xgemm_roofline(const struct sdc_rl_gpu *gpu, int n, int sms, struct sdc_mt_xgemm_roofline *out);
/* bench minitrain --gpus: the exact class on a GPU (bench_gpu.c). */
int sdc_minitrain_bench_gpu(struct sdc_cmd *cmd, struct sdc_run *run, const struct sdc_size_list *sizes,
			    double seconds);

#endif
