/* The mini-training models' common plumbing (model.h, mt_internal.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/minitrain/mt_internal.h"

const char *sdc_mt_kind_name(enum sdc_mt_kind k)
{
	return k == SDC_MT_DLRM ? "dlrm" : "xfmr";
}

static bool failed(const struct sdc_mt_model *m)
{
	return m->err[0] != '\0';
}

/* The device said no: remember its first complaint; the model computes nothing more. */
static void device_failed(struct sdc_mt_model *m, const char *what)
{
	if (failed(m))
		return;
	const char *why = m->be.error ? m->be.error(m->be.ctx) : NULL;
	snprintf(m->err, sizeof(m->err), "%s: %s", what, why && why[0] ? why : "failed");
}

void *sdc_mt_host_alloc(struct sdc_mt_model *m, size_t bytes)
{
	if (m->nhost >= MT_MAX_ALLOCS)
		return NULL;
	void *p = calloc(bytes ? bytes : 1, 1);
	if (p)
		m->host_allocs[m->nhost++] = p;
	return p;
}

static void *dev_alloc(struct sdc_mt_model *m, size_t bytes)
{
	if (!m->on_device)
		return sdc_mt_host_alloc(m, bytes);
	if (m->ndev >= MT_MAX_ALLOCS)
		return NULL;
	void *p = m->be.alloc(m->be.ctx, bytes ? bytes : 1);
	if (p)
		m->dev_allocs[m->ndev++] = p;
	else
		device_failed(m, "allocating device memory");
	return p;
}

float *sdc_mt_alloc(struct sdc_mt_model *m, size_t n)
{
	return dev_alloc(m, n * sizeof(float));
}

int32_t *sdc_mt_alloc_i32(struct sdc_mt_model *m, size_t n)
{
	return dev_alloc(m, n * sizeof(int32_t));
}

static float *add_tensor(struct sdc_mt_model *m, struct sdc_mt_tensor *list, int *count, const char *prefix,
			 const char *name, int rows, int cols, enum sdc_mt_role role)
{
	if (*count >= MT_MAX_TENSORS)
		return NULL;
	struct sdc_mt_tensor *t = &list[(*count)++];
	snprintf(t->name, sizeof(t->name), "%s%s", prefix, name);
	t->rows = rows, t->cols = cols, t->role = role;
	const size_t n = (size_t)rows * (size_t)cols;
	t->dev = sdc_mt_alloc(m, n);
	t->data = m->on_device ? sdc_mt_host_alloc(m, n * sizeof(float)) : t->dev;
	return t->data ? t->dev : NULL;
}

float *sdc_mt_param(struct sdc_mt_model *m, const char *name, int rows, int cols, float **grad)
{
	*grad = add_tensor(m, m->grads, &m->ngrads, "grad.", name, rows, cols, SDC_MT_GRAD);
	return add_tensor(m, m->traj, &m->ntraj, "", name, rows, cols, SDC_MT_PARAM);
}

float *sdc_mt_state(struct sdc_mt_model *m, const char *name, int rows, int cols)
{
	return add_tensor(m, m->traj, &m->ntraj, "", name, rows, cols, SDC_MT_STATE);
}

float *sdc_mt_host_of(struct sdc_mt_model *m, const float *dev)
{
	for (int i = 0; i < m->ntraj; i++)
		if (m->traj[i].dev == dev)
			return m->traj[i].data;
	for (int i = 0; i < m->ngrads; i++)
		if (m->grads[i].dev == dev)
			return m->grads[i].data;
	return NULL;
}

/* n copies in one batch (on the CPU: memcpy where the two differ). */
static void copy_many(struct sdc_mt_model *m, bool to_device, int n, void *const *dst, const void *const *src,
		      const size_t *bytes)
{
	if (!m->on_device) {
		for (int i = 0; i < n; i++)
			if (dst[i] != src[i])
				memcpy(dst[i], src[i], bytes[i]);
	} else if (!failed(m) && n > 0 && m->be.copy(m->be.ctx, to_device, n, dst, src, bytes)) {
		device_failed(m, to_device ? "copying to the device" : "copying from the device");
	}
}

void sdc_mt_upload(struct sdc_mt_model *m, void *dev, const void *host, size_t bytes)
{
	copy_many(m, true, 1, &dev, &host, &bytes);
}

void sdc_mt_download(struct sdc_mt_model *m, void *host, const void *dev, size_t bytes)
{
	copy_many(m, false, 1, &host, &dev, &bytes);
}

void sdc_mt_run(struct sdc_mt_model *m, const struct sdc_mt_op *op)
{
	if (!m->on_device)
		sdc_mt_op_run_host(op);
	else if (!failed(m) && op->n > 0 && m->be.op(m->be.ctx, op))
		device_failed(m, "a training kernel");
}

float sdc_mt_read1(struct sdc_mt_model *m, const float *dev)
{
	float v = NAN;
	sdc_mt_download(m, &v, dev, sizeof(v));
	return v;
}

void sdc_mt_fill_uniform(float *x, size_t n, float scale, const struct sdc_rng *r, uint64_t first_block)
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

void sdc_mt_gemm(struct sdc_mt_model *m, int rows, int cols, int k, const float *a, int lda, const float *b, int ldb,
		 float *c, int ldc)
{
	if (!m->on_device)
		m->gemm(rows, cols, k, a, lda, b, ldb, c, ldc);
	else if (!failed(m) && m->be.gemm(m->be.ctx, rows, cols, k, a, lda, b, ldb, c, ldc))
		device_failed(m, "the exact GEMM");
}

void sdc_mt_transpose(struct sdc_mt_model *m, int rows, int cols, const float *in, int ldin, float *out, int ldout)
{
	const struct sdc_mt_op o = { .code = SDC_MT_OP_TRANSPOSE, .n = (long)rows * cols, .i = { rows, cols, ldin, ldout },
				     .a = in, .x = out };
	sdc_mt_run(m, &o);
}

void sdc_mt_add_bias(struct sdc_mt_model *m, float *y, int rows, int cols, const float *bias)
{
	const struct sdc_mt_op o = { .code = SDC_MT_OP_ADD_BIAS, .n = (long)rows * cols, .i = { rows, cols }, .a = bias,
				     .x = y };
	sdc_mt_run(m, &o);
}

void sdc_mt_relu(struct sdc_mt_model *m, float *y, size_t n)
{
	const struct sdc_mt_op o = { .code = SDC_MT_OP_RELU, .n = (long)n, .x = y };
	sdc_mt_run(m, &o);
}

void sdc_mt_relu_mask(struct sdc_mt_model *m, float *g, const float *y, size_t n)
{
	const struct sdc_mt_op o = { .code = SDC_MT_OP_RELU_MASK, .n = (long)n, .a = y, .x = g };
	sdc_mt_run(m, &o);
}

void sdc_mt_colsum(struct sdc_mt_model *m, const float *g, int rows, int cols, float *out)
{
	const struct sdc_mt_op o = { .code = SDC_MT_OP_COLSUM, .n = cols, .i = { rows, cols }, .a = g, .x = out };
	sdc_mt_run(m, &o);
}

void sdc_mt_sgd(struct sdc_mt_model *m, float *w, const float *g, size_t n, float lr)
{
	const struct sdc_mt_op o = { .code = SDC_MT_OP_SGD, .n = (long)n, .f = { lr }, .a = g, .x = w };
	sdc_mt_run(m, &o);
}

void sdc_mt_add(struct sdc_mt_model *m, float *out, const float *a, const float *b, size_t n)
{
	const struct sdc_mt_op o = { .code = SDC_MT_OP_ADD, .n = (long)n, .a = a, .b = b, .x = out };
	sdc_mt_run(m, &o);
}

void sdc_mt_activation(struct sdc_mt_model *m, const struct sdc_mt_hooks *h, int step, const char *name, float *data,
		       int rows, int cols)
{
	if (!h || !h->activation || failed(m))
		return;
	struct sdc_mt_tensor t = { .data = data, .dev = data, .rows = rows, .cols = cols, .role = SDC_MT_ACT };
	snprintf(t.name, sizeof(t.name), "%s", name);
	const size_t bytes = sdc_mt_numel(&t) * sizeof(float);
	if (m->on_device) {
		/* The hook (fault injection) works on host memory: the activation goes there and back. */
		if (sdc_mt_numel(&t) > m->act_cap) {
			free(m->act_host);
			m->act_cap = 0;
			if (!(m->act_host = malloc(bytes))) {
				snprintf(m->err, sizeof(m->err), "out of host memory");
				return;
			}
			m->act_cap = sdc_mt_numel(&t);
		}
		t.data = m->act_host;
		sdc_mt_download(m, t.data, data, bytes);
	}
	h->activation(h->ctx, step, &t);
	if (m->on_device)
		sdc_mt_upload(m, data, t.data, bytes);
}

/* The host views of the trajectory (traj) and of the gradients (grads) to the device or back, in
 * one batch. */
static void tensors_move(struct sdc_mt_model *m, bool traj, bool grads, bool up)
{
	if (!m->on_device)
		return;
	void *dst[2 * MT_MAX_TENSORS];
	const void *src[2 * MT_MAX_TENSORS];
	size_t bytes[2 * MT_MAX_TENSORS];
	int n = 0;
	for (int k = 0; k < 2; k++) {
		if (!(k ? grads : traj))
			continue;
		struct sdc_mt_tensor *list = k ? m->grads : m->traj;
		for (int i = 0; i < (k ? m->ngrads : m->ntraj); i++, n++) {
			dst[n] = up ? (void *)list[i].dev : list[i].data;
			src[n] = up ? list[i].data : list[i].dev;
			bytes[n] = sdc_mt_numel(&list[i]) * sizeof(float);
		}
	}
	copy_many(m, up, n, dst, src, bytes);
}

void sdc_mt_grads_ready(struct sdc_mt_model *m, const struct sdc_mt_hooks *h, int step)
{
	if (!h || (!h->gradients && !h->reduce))
		return;
	tensors_move(m, false, true, false);
	if (failed(m))
		return;
	if (h->gradients)
		h->gradients(h->ctx, step);
	if (h->reduce)
		h->reduce(h->ctx, step);
	tensors_move(m, false, true, true);
}

int sdc_mt_attn_reserve(struct sdc_mt_model *m, int cap)
{
	m->attn_cap = cap;
	m->attn_da = dev_alloc(m, sizeof(double) * 3 * (size_t)cap);
	m->attn_db = dev_alloc(m, sizeof(double) * 3 * (size_t)cap);
	m->attn_host = m->on_device ? sdc_mt_host_alloc(m, sizeof(double) * 3 * (size_t)cap) : m->attn_db;
	return m->attn_da && m->attn_db && m->attn_host ? 0 : -1;
}

/* rows x cols of device memory (row length ld) into a dense host copy. */
static float *download_matrix(struct sdc_mt_model *m, const float *dev, int rows, int cols, int ld)
{
	float *h = malloc(sizeof(float) * (size_t)rows * (size_t)cols);
	if (!h)
		return NULL;
	for (int r = 0; r < rows; r++)
		sdc_mt_download(m, h + (long)r * cols, dev + (long)r * ld, sizeof(float) * (size_t)cols);
	return h;
}

int sdc_mt_attn_check(struct sdc_mt_model *m, int rows, int cols, int k, const float *a, int lda, const float *b, int ldb,
		      const float *c, int ldc, struct sdc_attn_event *ev, int max)
{
	if (failed(m) || k > m->attn_cap || cols > m->attn_cap)
		return 0;
	const struct sdc_mt_op sa = { .code = SDC_MT_OP_ATTN_ASUMS, .n = k, .i = { rows, k, lda }, .a = a,
				      .da = m->attn_da };
	const struct sdc_mt_op sc = { .code = SDC_MT_OP_ATTN_CSUMS, .n = cols, .i = { rows, cols, k, ldb, ldc }, .b = b,
				      .c = c, .da = m->attn_da, .db = m->attn_db };
	sdc_mt_run(m, &sa);
	sdc_mt_run(m, &sc);
	/* d1, d2 and the bounds (3 cols doubles, end to end): here already on the CPU, else one copy */
	double *d = m->attn_host;
	if (m->on_device)
		sdc_mt_download(m, d, m->attn_db, sizeof(double) * 3 * (size_t)cols);
	if (failed(m) || !sdc_attn_failing(cols, d))
		return 0;
	if (!m->on_device)
		return sdc_attn_locate(rows, cols, k, a, lda, b, ldb, c, ldc, d, ev, max);
	float *ha = download_matrix(m, a, rows, k, lda), *hb = download_matrix(m, b, k, cols, ldb),
	      *hc = download_matrix(m, c, rows, cols, ldc);
	int bad = 0;
	if (ha && hb && hc && !failed(m))
		bad = sdc_attn_locate(rows, cols, k, ha, k, hb, cols, hc, cols, d, ev, max);
	else if (!failed(m))
		snprintf(m->err, sizeof(m->err), "out of host memory");
	free(ha), free(hb), free(hc);
	return bad;
}

const char *sdc_mt_error(const struct sdc_mt_model *m)
{
	return failed(m) ? m->err : NULL;
}

void sdc_mt_free(struct sdc_mt_model *m)
{
	if (!m)
		return;
	if (m->free_impl)
		m->free_impl(m->impl);
	for (int i = 0; i < m->ndev; i++)
		m->be.release(m->be.ctx, m->dev_allocs[i]);
	for (int i = 0; i < m->nhost; i++)
		free(m->host_allocs[i]);
	free(m->act_host);
	free(m);
}

void sdc_mt_reset(struct sdc_mt_model *m)
{
	m->reset(m);
}

float sdc_mt_step(struct sdc_mt_model *m, int step, const struct sdc_mt_hooks *hooks)
{
	if (failed(m))
		return NAN;
	tensors_move(m, true, true, true);
	const float loss = m->step(m, step, hooks);
	tensors_move(m, true, true, false);
	return failed(m) ? NAN : loss;
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
