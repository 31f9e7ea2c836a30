/*
 * The fake GPU module's minitrain family (probes/minitrain/gpu_ops.h; the base:
 * kernels/fake/fake_module.c): the exact class (xgemm, xmath) is the device code's host twin, the
 * same xops.h functions over every index as the kernels' threads; minitrain's operations (mt_
 * entries) run mt_ops.h's threads in reverse order, as a GPU may run them in any order, on "device
 * memory" that is host memory the fake allocates.
 *
 * Environment, to exercise the failure paths:
 *   FAKE_GPU_XGEMM_BUG=1  the exact GEMM fuses the multiply-add of C[1][2] (a port of the exact
 *                         kernel built with contraction)
 *   FAKE_GPU_XMATH_BUG=1  exp is libm's, not the exact class's (a port that called the library)
 *   FAKE_GPU_MT_BUG=D     GPU D's training kernels round one result wrong: every SGD update's
 *                         element 0 comes out with its lowest bit flipped (a GPU that trains
 *                         differently every time, as the goldens and the vote must show)
 *   FAKE_GPU_MT_HANG=D    GPU D's training kernels stop at the 5th batch of copies back: it waits out the
 *                         deadline and fails, as the CUDA module's polled copies do
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/xops.h"
#include "probes/minitrain/mt_ops.h"
#include "kernels/fake/fake_nccl.h"
#include "probes/minitrain/gpu_ops.h"

static int fake_xgemm(int m, int n, int k, const float *a, const float *b, float *c, double timeout, char *err,
		      size_t errlen)
{
	(void)timeout, (void)err, (void)errlen;
	const char *bug = getenv("FAKE_GPU_XGEMM_BUG");
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++) {
			float acc = sdc_xdot(k, a + (long)i * k, 1, b + j, n);
			if (bug && *bug == '1' && i == 1 && j == 2) {
				acc = 0.0f;
				for (int p = 0; p < k; p++)
					acc = fmaf(a[(long)i * k + p], b[(long)p * n + j], acc);
			}
			c[(long)i * n + j] = acc;
		}
	return 0;
}

static int fake_xmath(int n, const double *x, double *e, double *l, double timeout, char *err, size_t errlen)
{
	(void)timeout, (void)err, (void)errlen;
	const char *bug = getenv("FAKE_GPU_XMATH_BUG");
	for (int i = 0; i < n; i++)
		e[i] = bug && *bug == '1' ? exp(x[i]) : sdc_xexp(x[i]), l[i] = sdc_xlog(x[i]);
	return 0;
}

static int fake_xgemm_bench(int n, int reps, double *exact_s, double *sgemm_s, double timeout, char *err,
			    size_t errlen)
{
	(void)n, (void)reps, (void)exact_s, (void)sgemm_s, (void)timeout;
	snprintf(err, errlen, "the fake GPU module has no GPU to time and no cuBLAS");
	return -1;
}

/* ---- minitrain's steps ---- */

struct sdc_gpu_mt {
	int device, copies;
	double timeout;
	bool bug, hang;
	char err[256];
};

static struct sdc_gpu_mt *fake_mt_open(double timeout, char *err, size_t errlen)
{
	struct sdc_gpu_mt *g = calloc(1, sizeof(*g));
	if (!g) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	g->device = fake_bound, g->timeout = timeout;
	g->bug = getenv("FAKE_GPU_MT_BUG") && fake_env_int("FAKE_GPU_MT_BUG", -1) == fake_bound;
	g->hang = getenv("FAKE_GPU_MT_HANG") && fake_env_int("FAKE_GPU_MT_HANG", -1) == fake_bound;
	return g;
}

static void fake_mt_close(struct sdc_gpu_mt *g)
{
	free(g);
}

static void *fake_mt_alloc(struct sdc_gpu_mt *g, size_t bytes)
{
	void *p = g->err[0] ? NULL : calloc(1, bytes);
	if (!p && !g->err[0])
		snprintf(g->err, sizeof(g->err), "cudaErrorMemoryAllocation (fake)");
	return p;
}

static void fake_mt_free(struct sdc_gpu_mt *g, void *p)
{
	(void)g;
	free(p);
}

static int fake_mt_copy(struct sdc_gpu_mt *g, int to_device, int n, void *const *dst, const void *const *src,
			const size_t *bytes)
{
	if (g->err[0])
		return -1;
	if (!to_device && g->hang && ++g->copies >= 5) {
		fake_wait_out(fake_now(), g->timeout);
		snprintf(g->err, sizeof(g->err), "a copy from the GPU did not finish within %.0f s (fake: GPU %d stopped)",
			 g->timeout, g->device);
		return -1;
	}
	for (int i = 0; i < n; i++)
		memcpy(dst[i], src[i], bytes[i]);
	return 0;
}

static int fake_mt_op(struct sdc_gpu_mt *g, const struct sdc_mt_op *op)
{
	if (g->err[0])
		return -1;
	for (long t = op->n - 1; t >= 0; t--)
		sdc_mt_op_thread(op, t);
	if (g->bug && op->code == SDC_MT_OP_SGD) {
		uint32_t u;
		memcpy(&u, &op->x[0], 4);
		u ^= 1;
		memcpy(&op->x[0], &u, 4);
	}
	return 0;
}

static int fake_mt_gemm(struct sdc_gpu_mt *g, int m, int n, int k, const float *a, int lda, const float *b, int ldb,
			float *c, int ldc)
{
	if (g->err[0])
		return -1;
	for (int i = m - 1; i >= 0; i--)
		for (int j = n - 1; j >= 0; j--)
			c[(long)i * ldc + j] = sdc_xdot(k, a + (long)i * lda, 1, b + j, ldb);
	return 0;
}

static const char *fake_mt_error(struct sdc_gpu_mt *g)
{
	return g->err;
}

/* The data-parallel mean's twin (nccl.cu's m_nccl_rank_mean): an all-gather of every rank's
 * gradients through the communicator's segment (in pieces of a slot's size), then sdc_xrank_mean
 * for every element, as the GPU's kernel computes it. */
static int fake_nccl_rank_mean(struct sdc_gpu_comm *c, const float *local, int64_t total, float *out, int *timed_out,
			       double timeout, char *err, size_t errlen)
{
	*timed_out = 0;
	if (!c->shm || c->nmem != 1) {
		snprintf(err, errlen, "the data-parallel mean takes one GPU a rank");
		return -1;
	}
	const int P = c->P, me = c->m[0].rank;
	float *all = malloc((size_t)total * 4 * (size_t)P);
	if (!all) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	const double t0 = fake_now();
	const int64_t cap = fake_xchg_cap(c);
	for (int64_t off = 0; off < total; off += cap) {
		const int64_t len = total - off < cap ? total - off : cap;
		bool in_time = fake_xchg_begin(c, t0, timeout);
		if (in_time) {
			memcpy(fake_xchg_slot(c, me, NULL), local + off, (size_t)len * 4);
			in_time = fake_xchg_post(c, t0, timeout);
		}
		if (!in_time) {
			free(all);
			snprintf(err, errlen, "the gradients' all-gather did not finish in time (fake)");
			*timed_out = 1;
			return -1;
		}
		for (int q = 0; q < P; q++)
			memcpy(all + (int64_t)q * total + off, fake_xchg_slot(c, q, NULL), (size_t)len * 4);
		fake_xchg_end(c);
	}
	for (int64_t e = 0; e < total; e++)
		out[e] = sdc_xrank_mean(all, (long)total, P, (long)e, 1.0f / (float)P);
	free(all);
	static int calls;
	const char *bug = getenv("FAKE_GPU_DP_BUG");
	int brank = -1, bcall = -1;
	if (bug && sscanf(bug, "%d,%d", &brank, &bcall) == 2 && brank == me && bcall == calls && total > 0)
		fake_flip_word(&out[0], 20);
	calls++;
	return 0;
}

/* The minitrain family's table (fake_module.c asks for it). */
const struct sdc_gpu_minitrain_ops *fake_minitrain_family(void)
{
	static struct sdc_gpu_minitrain_ops t = {
		.xgemm = fake_xgemm,
		.xmath = fake_xmath,
		.xgemm_bench = fake_xgemm_bench,
		.mt_open = fake_mt_open,
		.mt_close = fake_mt_close,
		.mt_alloc = fake_mt_alloc,
		.mt_free = fake_mt_free,
		.mt_copy = fake_mt_copy,
		.mt_op = fake_mt_op,
		.mt_gemm = fake_mt_gemm,
		.mt_error = fake_mt_error,
		.nccl_rank_mean = fake_nccl_rank_mean,
	};
	t.version = SDC_GPU_MINITRAIN_VERSION - fake_stale("minitrain");
	return &t;
}
