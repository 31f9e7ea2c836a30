/* The mini-training models' common plumbing (minitrain.h, mt_internal.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/mt_internal.h"

const char *sdc_mt_kind_name(enum sdc_mt_kind k)
{
	return k == SDC_MT_DLRM ? "dlrm" : "xfmr";
}

float *mt_alloc(struct sdc_mt_model *m, size_t n)
{
	if (m->nallocs >= (int)(sizeof(m->allocs) / sizeof(m->allocs[0])))
		return NULL;
	float *p = calloc(n ? n : 1, sizeof(float));
	if (p)
		m->allocs[m->nallocs++] = p;
	return p;
}

static float *add_tensor(struct sdc_mt_model *m, struct sdc_mt_tensor *list, int *count, const char *prefix,
			 const char *name, int rows, int cols, enum sdc_mt_role role)
{
	if (*count >= MT_MAX_TENSORS)
		return NULL;
	struct sdc_mt_tensor *t = &list[(*count)++];
	snprintf(t->name, sizeof(t->name), "%s%s", prefix, name);
	t->rows = rows, t->cols = cols, t->role = role;
	t->data = mt_alloc(m, (size_t)rows * (size_t)cols);
	return t->data;
}

float *mt_param(struct sdc_mt_model *m, const char *name, int rows, int cols, float **grad)
{
	*grad = add_tensor(m, m->grads, &m->ngrads, "grad.", name, rows, cols, SDC_MT_GRAD);
	return add_tensor(m, m->traj, &m->ntraj, "", name, rows, cols, SDC_MT_PARAM);
}

float *mt_state(struct sdc_mt_model *m, const char *name, int rows, int cols)
{
	return add_tensor(m, m->traj, &m->ntraj, "", name, rows, cols, SDC_MT_STATE);
}

void mt_fill_uniform(float *x, size_t n, float scale, const struct sdc_rng *r, uint64_t first_block)
{
	uint32_t buf[256];
	for (size_t done = 0; done < n;) {
		const size_t chunk = n - done < 256 ? n - done : 256;
		sdc_rng_fill_u32(r, first_block + done / 4, buf, (chunk + 3) & ~(size_t)3);
		for (size_t i = 0; i < chunk; i++)
			x[done + i] = ((float)(buf[i] >> 8) * 0x1p-23f - 1.0f) * scale;
		done += chunk;
	}
}

void mt_gemm(struct sdc_mt_model *m, int rows, int cols, int k, const float *a, int lda, const float *b, int ldb,
	     float *c, int ldc)
{
	m->gemm(rows, cols, k, a, lda, b, ldb, c, ldc);
}

void mt_transpose(int m, int n, const float *in, int ldin, float *out, int ldout)
{
	sdc_xtranspose(m, n, in, ldin, out, ldout);
}

void mt_add_bias(float *y, int rows, int cols, const float *bias)
{
	for (int i = 0; i < rows; i++)
		for (int j = 0; j < cols; j++)
			y[(long)i * cols + j] = y[(long)i * cols + j] + bias[j];
}

void mt_relu(float *y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		y[i] = y[i] > 0.0f ? y[i] : 0.0f;
}

void mt_relu_mask(float *g, const float *y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		g[i] = y[i] > 0.0f ? g[i] : 0.0f;
}

void mt_colsum(const float *g, int rows, int cols, float *out)
{
	for (int j = 0; j < cols; j++)
		out[j] = 0.0f;
	for (int i = 0; i < rows; i++)
		for (int j = 0; j < cols; j++)
			out[j] = out[j] + g[(long)i * cols + j];
}

void mt_sgd(float *w, const float *g, size_t n, float lr)
{
	for (size_t i = 0; i < n; i++)
		w[i] = w[i] - lr * g[i];
}

void mt_activation(const struct sdc_mt_hooks *h, int step, const char *name, float *data, int rows, int cols)
{
	if (!h || !h->activation)
		return;
	struct sdc_mt_tensor t = { .data = data, .rows = rows, .cols = cols, .role = SDC_MT_ACT };
	snprintf(t.name, sizeof(t.name), "%s", name);
	h->activation(h->ctx, step, &t);
}

struct sdc_mt_model *sdc_mt_create(const struct sdc_mt_cfg *cfg, sdc_xgemm_fn gemm, char *err, size_t errlen)
{
	struct sdc_mt_model *m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	m->cfg = *cfg;
	m->gemm = gemm ? gemm : sdc_xgemm;
	const int rc = cfg->kind == SDC_MT_DLRM ? mt_dlrm_init(m, err, errlen) : mt_xfmr_init(m, err, errlen);
	if (rc) {
		sdc_mt_free(m);
		return NULL;
	}
	sdc_mt_reset(m);
	return m;
}

void sdc_mt_free(struct sdc_mt_model *m)
{
	if (!m)
		return;
	if (m->free_impl)
		m->free_impl(m->impl);
	for (int i = 0; i < m->nallocs; i++)
		free(m->allocs[i]);
	free(m);
}

void sdc_mt_reset(struct sdc_mt_model *m)
{
	m->reset(m);
}

float sdc_mt_step(struct sdc_mt_model *m, int step, const struct sdc_mt_hooks *hooks)
{
	return m->step(m, step, hooks);
}

int sdc_mt_tensors(struct sdc_mt_model *m, struct sdc_mt_tensor **out)
{
	*out = m->traj;
	return m->ntraj;
}

int sdc_mt_grads(struct sdc_mt_model *m, struct sdc_mt_tensor **out)
{
	*out = m->grads;
	return m->ngrads;
}

double sdc_mt_step_flops(const struct sdc_mt_model *m)
{
	return m->flops;
}
