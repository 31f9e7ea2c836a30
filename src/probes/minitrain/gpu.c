/*
 * minitrain on a GPU: the model's backend (model.h) from the GPU module's mt_ entries
 * (probes/minitrain/minitrain.cu), on the worker's GPU. The steps, hooks, goldens, replay and vote are
 * the CPU's: only where the arithmetic runs differs, and its bits must not.
 */
#include <stdio.h>
#include <stdlib.h>

#include "device/gpu_loader.h"
#include "probes/minitrain/gpu_ops.h"
#include "probes/minitrain/minitrain.h"

struct mt_gpu {
	const struct sdc_gpu_minitrain_ops *m;
	struct sdc_gpu_mt *g;
};

static void *be_alloc(void *ctx, size_t bytes)
{
	struct mt_gpu *x = ctx;
	return x->m->mt_alloc(x->g, bytes);
}

static void be_release(void *ctx, void *p)
{
	struct mt_gpu *x = ctx;
	x->m->mt_free(x->g, p);
}

static int be_copy(void *ctx, int to_device, int n, void *const *dst, const void *const *src, const size_t *bytes)
{
	struct mt_gpu *x = ctx;
	return x->m->mt_copy(x->g, to_device, n, dst, src, bytes);
}

static int be_op(void *ctx, const struct sdc_mt_op *op)
{
	struct mt_gpu *x = ctx;
	return x->m->mt_op(x->g, op);
}

static int be_gemm(void *ctx, int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c, int ldc)
{
	struct mt_gpu *x = ctx;
	return x->m->mt_gemm(x->g, m, n, k, a, lda, b, ldb, c, ldc);
}

static const char *be_error(void *ctx)
{
	struct mt_gpu *x = ctx;
	return x->m->mt_error(x->g);
}

int sdc_mt_gpu_backend(const struct sdc_device *dev, double timeout, struct sdc_mt_backend *be, char *err, size_t len)
{
	const struct sdc_gpu_minitrain_ops *m = SDC_GPU_FAMILY(minitrain, SDC_GPU_MINITRAIN_VERSION);
	if (!m) {
		snprintf(err, len, "%s", sdc_gpu_family_why("minitrain"));
		return -1;
	}
	if (sdc_gpu_bind(dev, err, len))
		return -1;
	struct mt_gpu *x = calloc(1, sizeof(*x));
	if (!x) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	x->m = m;
	if (!(x->g = m->mt_open(timeout, err, len))) {
		free(x);
		return -1;
	}
	*be = (struct sdc_mt_backend){ .ctx = x, .alloc = be_alloc, .release = be_release, .copy = be_copy, .op = be_op, .gemm = be_gemm, .error = be_error };
	return 0;
}

void sdc_mt_gpu_backend_close(struct sdc_mt_backend *be)
{
	struct mt_gpu *x = be->ctx;
	if (!x)
		return;
	x->m->mt_close(x->g);
	free(x);
	be->ctx = NULL;
}

int sdc_mt_gpu_open(struct mt_worker *mw, double timeout, char *err, size_t len)
{
	if (sdc_mt_gpu_backend(mw->w->dev, timeout, &mw->be, err, len))
		return -1;
	mw->gpu = mw->be.ctx;
	return 0;
}

void sdc_mt_gpu_close(struct mt_worker *mw)
{
	sdc_mt_gpu_backend_close(&mw->be);
	mw->gpu = NULL;
}
