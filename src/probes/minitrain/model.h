/*
 * Deterministic mini-training in the exact class (DESIGN.md): two small models whose every
 * operation is a fixed-order sequence of correctly rounded + - * / and sqrt, with exp and log
 * from kernels/exactmath.h, so one seed gives one trajectory, bit for bit, on every IEEE-754
 * machine. The GEMMs go through one kernel pointer (exact_gemm.h): the tiled kernel for the
 * burn, the plain one for the reference replay; both give the same bits.
 *
 *   dlrm: dense features -> bottom MLP; sparse features -> sum-pooled embedding bags; pairwise
 *         dot-product interaction; top MLP -> logit; logistic loss. SGD on the MLPs, Adagrad
 *         on the embedding rows a batch touched.
 *   xfmr: one pre-LN transformer block on synthetic sequences: LN, Q/K/V projections, per-head
 *         softmax(QK^T/sqrt(dh))V, output projection, residual, LN, ReLU MLP, residual; mean
 *         squared error against a shifted copy of the input; Adam. The six attention GEMMs are
 *         checked as they are computed (attn_check.h).
 */
#ifndef SDC_MINITRAIN_H
#define SDC_MINITRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "probes/minitrain/attn_check.h"
#include "kernels/exact_gemm.h"

enum sdc_mt_kind { SDC_MT_DLRM, SDC_MT_XFMR };

struct sdc_mt_cfg {
	enum sdc_mt_kind kind;
	uint64_t seed;
	int batch;
	/* dlrm */
	int dense, bottom, emb_dim, tables, rows, pooling, top;
	/* xfmr */
	int seq, dmodel, heads, dff;
	/* data parallel (xfmr): this replica's shard of a global batch of nshards x batch sequences */
	int shard, nshards;
};

enum sdc_mt_role {
	SDC_MT_PARAM,   /* a weight: in the trajectory */
	SDC_MT_STATE,   /* optimizer state: in the trajectory */
	SDC_MT_GRAD,    /* a gradient, complete before the optimizer step */
	SDC_MT_ACT,     /* an activation: a GEMM output before its check */
};

struct sdc_mt_tensor {
	char name[24];
	float *data; /* host memory: what hashes, faults and replays see */
	float *dev;  /* where the steps compute it: data itself on the CPU, a GPU's memory on a GPU */
	int rows, cols;
	enum sdc_mt_role role;
};

static inline size_t sdc_mt_numel(const struct sdc_mt_tensor *t)
{
	return (size_t)t->rows * (size_t)t->cols;
}

/* Called by a step at its fault points (for injection); any may be NULL. */
struct sdc_mt_hooks {
	void *ctx;
	/* A GEMM's output was computed, before it is checked or used. */
	void (*activation)(void *ctx, int step, struct sdc_mt_tensor *t);
	/* Every gradient is complete, before the optimizer. */
	void (*gradients)(void *ctx, int step);
	/* Data parallel: turn the local gradients into the global ones, before the optimizer. */
	void (*reduce)(void *ctx, int step);
	/* An attention GEMM failed its check. */
	void (*attn)(void *ctx, int step, const struct sdc_attn_event *ev);
};

struct sdc_mt_model;
struct sdc_mt_op;

/*
 * Where a model computes: NULL, the calling CPU core; else a device such as a GPU (the probe
 * builds one from the GPU module: probes/minitrain/minitrain.cu). Every operation but the GEMM is a
 * mt_ops.h operation, the same source on both; the GEMM is the exact one (exact_gemm.h,
 * probes/minitrain/xgemm.cu), the same bits. Each call returns 0, or non-zero after which error() says
 * what failed (the model stops computing and the step returns NaN: sdc_mt_error).
 *
 * The contract with the caller is the CPU's: between steps and inside the hooks, the host views
 * (sdc_mt_tensor.data) hold the trajectory and the gradients. On a device the model uploads them
 * when a step starts and after the gradient hooks, and downloads them before the hooks and when
 * the step ends, so faults, replays and data-parallel averages written to the host views reach the
 * device's memory before anything reads them there.
 */
struct sdc_mt_backend {
	void *ctx;
	void *(*alloc)(void *ctx, size_t bytes); /* zeroed */
	void (*release)(void *ctx, void *p);
	/* n copies to the device (to_device) or from it, in one batch */
	int (*copy)(void *ctx, int to_device, int n, void *const *dst, const void *const *src, const size_t *bytes);
	int (*op)(void *ctx, const struct sdc_mt_op *op);
	int (*gemm)(void *ctx, int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c, int ldc);
	const char *(*error)(void *ctx);
};

/* NULL with a message in err when the configuration is unusable. On the calling core: */
struct sdc_mt_model *sdc_mt_create(const struct sdc_mt_cfg *cfg, sdc_xgemm_fn gemm, char *err, size_t errlen);
/* On a device (gemm unused): */
struct sdc_mt_model *sdc_mt_create_on(const struct sdc_mt_cfg *cfg, sdc_xgemm_fn gemm,
				      const struct sdc_mt_backend *be, char *err, size_t errlen);
/* NULL, or what failed on the device (the last step's result is then not to be trusted). */
const char *sdc_mt_error(const struct sdc_mt_model *m);
void sdc_mt_free(struct sdc_mt_model *m);
/* Back to step 0: weights from the seed, optimizer state zero. */
void sdc_mt_reset(struct sdc_mt_model *m);

/* One training step (steps count from 0); returns the loss before the update. */
float sdc_mt_step(struct sdc_mt_model *m, int step, const struct sdc_mt_hooks *hooks);

/* The trajectory's tensors (parameters, then optimizer state), in a fixed order. */
int sdc_mt_tensors(struct sdc_mt_model *m, struct sdc_mt_tensor **out);
/* The gradients, in the parameters' order. */
int sdc_mt_grads(struct sdc_mt_model *m, struct sdc_mt_tensor **out);
/* Floating-point operations of one step (for throughput). */
double sdc_mt_step_flops(const struct sdc_mt_model *m);
const char *sdc_mt_kind_name(enum sdc_mt_kind k);

#endif
