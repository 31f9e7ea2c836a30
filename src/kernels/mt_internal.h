/* Shared by the two mini-training models (minitrain.h): tensors, data and the exact helpers. */
#ifndef SDC_MT_INTERNAL_H
#define SDC_MT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/rng.h"
#include "kernels/minitrain.h"

#define MT_MAX_TENSORS 48
#define MT_MAX_SCRATCH 64

struct sdc_mt_model {
	struct sdc_mt_cfg cfg;
	sdc_xgemm_fn gemm;
	struct sdc_mt_tensor traj[MT_MAX_TENSORS], grads[MT_MAX_TENSORS];
	int ntraj, ngrads;
	void *allocs[MT_MAX_TENSORS * 2 + MT_MAX_SCRATCH];
	int nallocs;
	double flops;
	void *impl; /* the model's own */
	void (*reset)(struct sdc_mt_model *m);
	float (*step)(struct sdc_mt_model *m, int step, const struct sdc_mt_hooks *h);
	void (*free_impl)(void *impl);
};

/* Zeroed floats owned by the model (freed with it); NULL when out of memory. */
float *mt_alloc(struct sdc_mt_model *m, size_t n);
/* Adds a parameter (and its gradient, named "grad.NAME") to the trajectory. */
float *mt_param(struct sdc_mt_model *m, const char *name, int rows, int cols, float **grad);
/* Adds an optimizer-state tensor to the trajectory. */
float *mt_state(struct sdc_mt_model *m, const char *name, int rows, int cols);

/* Uniform floats in [-scale, scale): 24 random bits each, so every value is exact. */
void mt_fill_uniform(float *x, size_t n, float scale, const struct sdc_rng *r, uint64_t first_block);

/* y = a · b (m x k times k x n) through the model's kernel; flops counted. */
void mt_gemm(struct sdc_mt_model *m, int rows, int cols, int k, const float *a, int lda, const float *b, int ldb,
	     float *c, int ldc);
/* out (k x m) = in^T, for the A^T B and A B^T products of the backward pass. */
void mt_transpose(int m, int n, const float *in, int ldin, float *out, int ldout);
/* y[i][j] += bias[j] */
void mt_add_bias(float *y, int rows, int cols, const float *bias);
/* y = max(y, 0) */
void mt_relu(float *y, size_t n);
/* g[i] = 0 where the ReLU output y[i] was 0 */
void mt_relu_mask(float *g, const float *y, size_t n);
/* out[j] = sum_i g[i][j], i in order */
void mt_colsum(const float *g, int rows, int cols, float *out);
/* Plain SGD: w -= lr g */
void mt_sgd(float *w, const float *g, size_t n, float lr);
/* Reports a GEMM output to the activation hook. */
void mt_activation(const struct sdc_mt_hooks *h, int step, const char *name, float *data, int rows, int cols);

int mt_dlrm_init(struct sdc_mt_model *m, char *err, size_t errlen);
int mt_xfmr_init(struct sdc_mt_model *m, char *err, size_t errlen);

#endif
