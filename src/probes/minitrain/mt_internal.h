/* Shared by the two mini-training models (model.h): tensors, data and the operations. */
#ifndef SDC_MT_INTERNAL_H
#define SDC_MT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/rng.h"
#include "probes/minitrain/model.h"
#include "probes/minitrain/mt_ops.h"

#define MT_MAX_TENSORS 48
#define MT_MAX_ALLOCS 160

struct sdc_mt_model {
	struct sdc_mt_cfg cfg;
	sdc_xgemm_fn gemm;
	struct sdc_mt_backend be; /* be.op NULL: the calling core */
	bool on_device;
	char err[256];            /* the first failure on the device ("" while none) */
	struct sdc_mt_tensor traj[MT_MAX_TENSORS], grads[MT_MAX_TENSORS];
	int ntraj, ngrads;
	void *host_allocs[MT_MAX_ALLOCS], *dev_allocs[MT_MAX_ALLOCS];
	int nhost, ndev;
	float *act_host;          /* an activation offered to the hook (on a device) */
	size_t act_cap;
	double *attn_da, *attn_db, *attn_host; /* ATTNChecker's checksums: 3 attn_cap doubles each */
	int attn_cap;
	double flops;
	void *impl; /* the model's own */
	void (*reset)(struct sdc_mt_model *m);
	float (*step)(struct sdc_mt_model *m, int step, const struct sdc_mt_hooks *h);
	void (*free_impl)(void *impl);
};

/* Zeroed floats where the steps compute (the device's memory; host memory on the CPU), freed with
 * the model; NULL when out of memory. */
float *sdc_mt_alloc(struct sdc_mt_model *m, size_t n);
int32_t *sdc_mt_alloc_i32(struct sdc_mt_model *m, size_t n);
/* Zeroed host memory, freed with the model. */
void *sdc_mt_host_alloc(struct sdc_mt_model *m, size_t bytes);
/* Adds a parameter (and its gradient, named "grad.NAME") to the trajectory; returns where the
 * steps compute them. */
float *sdc_mt_param(struct sdc_mt_model *m, const char *name, int rows, int cols, float **grad);
/* Adds an optimizer-state tensor to the trajectory. */
float *sdc_mt_state(struct sdc_mt_model *m, const char *name, int rows, int cols);
/* The host view of a tensor of the trajectory or the gradients, by its device pointer. */
float *sdc_mt_host_of(struct sdc_mt_model *m, const float *dev);
/* Host to the device (a copy on the CPU when they differ); nothing after a failure. */
void sdc_mt_upload(struct sdc_mt_model *m, void *dev, const void *host, size_t bytes);
void sdc_mt_download(struct sdc_mt_model *m, void *host, const void *dev, size_t bytes);
/* One operation (mt_ops.h), on the device or here. */
void sdc_mt_run(struct sdc_mt_model *m, const struct sdc_mt_op *op);
/* A float of the device's memory (a loss). */
float sdc_mt_read1(struct sdc_mt_model *m, const float *dev);

/* Uniform floats in [-scale, scale): 24 random bits each, so every value is exact. Host memory. */
void sdc_mt_fill_uniform(float *x, size_t n, float scale, const struct sdc_rng *r, uint64_t first_block);

/* y = a · b (m x k times k x n) through the model's kernel; flops counted. */
void sdc_mt_gemm(struct sdc_mt_model *m, int rows, int cols, int k, const float *a, int lda, const float *b, int ldb,
		 float *c, int ldc);
/* out (n x m) = in^T, for the A^T B and A B^T products of the backward pass. */
void sdc_mt_transpose(struct sdc_mt_model *m, int rows, int cols, const float *in, int ldin, float *out, int ldout);
/* y[i][j] += bias[j] */
void sdc_mt_add_bias(struct sdc_mt_model *m, float *y, int rows, int cols, const float *bias);
/* y = max(y, 0) */
void sdc_mt_relu(struct sdc_mt_model *m, float *y, size_t n);
/* g[i] = 0 where the ReLU output y[i] was 0 */
void sdc_mt_relu_mask(struct sdc_mt_model *m, float *g, const float *y, size_t n);
/* out[j] = sum_i g[i][j], i in order */
void sdc_mt_colsum(struct sdc_mt_model *m, const float *g, int rows, int cols, float *out);
/* Plain SGD: w -= lr g */
void sdc_mt_sgd(struct sdc_mt_model *m, float *w, const float *g, size_t n, float lr);
/* out = a + b (out may be a) */
void sdc_mt_add(struct sdc_mt_model *m, float *out, const float *a, const float *b, size_t n);
/* A GEMM's output (device memory, rows x cols dense) offered to the activation hook. */
void sdc_mt_activation(struct sdc_mt_model *m, const struct sdc_mt_hooks *h, int step, const char *name, float *data,
		       int rows, int cols);
/* Every gradient is complete: the gradients and reduce hooks see (and may change) the host views. */
void sdc_mt_grads_ready(struct sdc_mt_model *m, const struct sdc_mt_hooks *h, int step);
/* ATTNChecker on C = A B (device memory): the checksums where the GEMM ran, the events (only when
 * a column fails) from host copies; returns the failing columns, the first max in ev. */
int sdc_mt_attn_check(struct sdc_mt_model *m, int rows, int cols, int k, const float *a, int lda, const float *b, int ldb,
		      const float *c, int ldc, struct sdc_attn_event *ev, int max);
/* Room for attention checks of up to cap rows, columns or k. */
int sdc_mt_attn_reserve(struct sdc_mt_model *m, int cap);

int sdc_mt_dlrm_init(struct sdc_mt_model *m, char *err, size_t errlen);
int sdc_mt_xfmr_init(struct sdc_mt_model *m, char *err, size_t errlen);

#endif
