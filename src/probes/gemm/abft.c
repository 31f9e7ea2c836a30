/* The gemm engine's lifecycle, multiply and checks (abft.h); operands in operands.c, thresholds in vabft.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/digest.h"
#include "base/memory.h"
#include "kernels/abft_sums.h"
#include "kernels/clones.h"
#include "probes/gemm/abft.h"

const char *const sdc_gemm_class_names[] = { "int8", "fp32", "fp32-fast", "fp64-fast", NULL };

/* ---- lifecycle ---- */

int sdc_gemm_init(struct sdc_gemm *g, const struct sdc_gemm_cfg *cfg, char *err, size_t errlen)
{
	memset(g, 0, sizeof(*g));
	g->cfg = *cfg;
	const int m = cfg->m, n = cfg->n, k = cfg->k;
	switch (cfg->cls) {
	case SDC_GEMM_INT8:
		g->i8 = sdc_gemm_u8s8_find(cfg->kernel);
		if (!g->i8) {
			snprintf(err, errlen, "int8 kernel '%s' is not supported by this CPU or build", cfg->kernel);
			return -1;
		}
		g->kernel_name = g->i8->name;
		/* B is s8: |B| <= 128; balanced base-2^7 digits fit s8 (Li et al. used mod 127 instead). */
		sdc_abft_layout_init(&g->layout, n, 128, 7);
		g->n_ext = g->layout.n_ext;
		g->esz = 1;
		g->csz = 4;
		g->lda = (k + 3) / 4 * 4;
		g->ldc = (g->n_ext + 15) / 16 * 16;
		break;
	case SDC_GEMM_FP32: {
		/* Every partial sum is exact when k * amax * bmax <= 2^24 (fp32's 24-bit significand). */
		int64_t mx = (int64_t)floor(sqrt((double)(1 << 24) / k));
		g->amax = g->bmax = mx > 127 ? 127 : mx;
		int bits = 1;
		while ((int64_t)1 << bits <= g->bmax) /* digits reach 2^(bits-1) <= bmax */
			bits++;
		sdc_abft_layout_init(&g->layout, n, g->bmax, bits);
		g->n_ext = g->layout.n_ext;
		g->esz = g->csz = 4;
		break;
	}
	case SDC_GEMM_FP32_FAST:
	case SDC_GEMM_FP64_FAST:
		if (!cfg->npools || cfg->emax <= 0) {
			snprintf(err, errlen, "fast class needs distributions and e_max");
			return -1;
		}
		g->n_ext = n + 2;
		g->esz = g->csz = cfg->cls == SDC_GEMM_FP32_FAST ? 4 : 8;
		break;
	default:
		snprintf(err, errlen, "unknown class");
		return -1;
	}
	if (cfg->cls != SDC_GEMM_INT8) {
		g->fl = sdc_fgemm_find(cfg->kernel);
		if (!g->fl) {
			snprintf(err, errlen, "floating-point kernel '%s' is not built into this sdcscan", cfg->kernel);
			return -1;
		}
		g->kernel_name = g->fl->name;
		g->lda = k;
		g->ldb = g->ldc = (g->n_ext + 15) / 16 * 16;
	}

	g->a_bytes = (size_t)m * g->lda * g->esz;
	g->c_bytes = (size_t)m * g->ldc * g->csz;
	g->a = sdc_alloc_aligned(g->a_bytes);
	g->c = sdc_alloc_aligned(g->c_bytes);
	if (cfg->cls == SDC_GEMM_INT8) {
		if (sdc_i8_packed_alloc(&g->bp, k, g->n_ext))
			goto out_nomem;
		g->b_bytes = g->bp.bytes;
	} else {
		g->b_bytes = (size_t)k * g->ldb * g->esz;
		g->b = sdc_alloc_aligned(g->b_bytes);
	}
	g->truth_b = malloc((size_t)k * g->n_ext * g->esz);
	g->truth_a_row = malloc((size_t)k * g->esz);
	g->scratch = malloc((size_t)k * n * g->esz);
	g->row_vals = malloc((size_t)g->n_ext * sizeof(int64_t));
	g->ref_i64 = malloc((size_t)g->n_ext * sizeof(int64_t));
	g->ref_f64 = malloc((size_t)g->n_ext * sizeof(double));
	g->thr = malloc((size_t)m * sizeof(double));
	g->thr2 = malloc((size_t)m * sizeof(double));
	g->bad = malloc((size_t)m * sizeof(*g->bad));
	if (!g->a || !g->c || (cfg->cls != SDC_GEMM_INT8 && !g->b) || !g->truth_b || !g->truth_a_row ||
	    !g->scratch || !g->row_vals || !g->ref_i64 || !g->ref_f64 || !g->thr || !g->thr2 || !g->bad)
		goto out_nomem;
	memset(g->a, 0, g->a_bytes);
	memset(g->c, 0, g->c_bytes);
	if (g->b)
		memset(g->b, 0, g->b_bytes);
	return 0;
out_nomem:
	snprintf(err, errlen, "cannot allocate the %s operands (%dx%dx%d)", sdc_gemm_class_names[cfg->cls], m, n, k);
	sdc_gemm_release(g);
	return -1;
}

void sdc_gemm_release(struct sdc_gemm *g)
{
	sdc_free_aligned(g->a);
	sdc_free_aligned(g->c);
	sdc_free_aligned(g->b);
	sdc_i8_packed_release(&g->bp);
	free(g->truth_b);
	free(g->truth_a_row);
	free(g->scratch);
	free(g->row_vals);
	free(g->ref_i64);
	free(g->ref_f64);
	free(g->thr);
	free(g->thr2);
	free(g->bad);
	memset(g, 0, sizeof(*g));
}

void sdc_gemm_multiply(struct sdc_gemm *g)
{
	const int m = g->cfg.m, k = g->cfg.k;
	switch (g->cfg.cls) {
	case SDC_GEMM_INT8:
		g->i8->fn(m, g->a, g->lda, &g->bp, g->c, g->ldc, NULL);
		break;
	case SDC_GEMM_FP32:
	case SDC_GEMM_FP32_FAST:
		g->fl->sgemm(m, g->n_ext, k, g->a, g->lda, g->b, g->ldb, g->c, g->ldc);
		break;
	default:
		g->fl->dgemm(m, g->n_ext, k, g->a, g->lda, g->b, g->ldb, g->c, g->ldc);
		break;
	}
}

/* ---- checks ---- */

#define LANES 8

/* fp32-fast row sums in double: each float and each (j+1) * float is exact in double. */
CLONES
static void sums_f32_in_f64(const float *c, int n, double *s1, double *s2)
{
	double a[LANES] = { 0 }, w[LANES] = { 0 };
	int j = 0;
	for (; j + LANES <= n; j += LANES)
		for (int l = 0; l < LANES; l++) {
			a[l] += c[j + l];
			w[l] += (double)(j + l + 1) * c[j + l];
		}
	double ta = 0, tw = 0;
	for (int l = 0; l < LANES; l++) {
		ta += a[l];
		tw += w[l];
	}
	for (; j < n; j++) {
		ta += c[j];
		tw += (double)(j + 1) * c[j];
	}
	*s1 = ta;
	*s2 = tw;
}

/* Row i's sums in higher precision (s1, s2) and its checksum columns (r1, r2). */
static void fast_row_sums(struct sdc_gemm *g, int i, double *s1, double *s2, double *r1, double *r2)
{
	const int n = g->cfg.n;
	if (g->cfg.cls == SDC_GEMM_FP32_FAST) {
		const float *c = (const float *)g->c + (size_t)i * g->ldc;
		sums_f32_in_f64(c, n, s1, s2);
		*r1 = c[n];
		*r2 = c[n + 1];
	} else {
		const double *c = (const double *)g->c + (size_t)i * g->ldc;
		sdc_abft_sums()->f64(c, n, s1, s2);
		*r1 = c[n];
		*r2 = c[n + 1];
	}
}

void sdc_gemm_row_difference(struct sdc_gemm *g, int i, double *e, double *checksum, double *e2,
			     double *checksum2)
{
	double s1, s2, r1, r2;
	fast_row_sums(g, i, &s1, &s2, &r1, &r2);
	*e = r1 - s1;
	*checksum = r1;
	if (e2) {
		*e2 = r2 - s2;
		*checksum2 = r2;
	}
}

static bool check_fast_row(struct sdc_gemm *g, int i, struct sdc_gemm_bad_row *out)
{
	const int n = g->cfg.n;
	double s1, s2, r1, r2;
	fast_row_sums(g, i, &s1, &s2, &r1, &r2);
	const double e = fabs(r1 - s1), t = g->thr[i], e2 = fabs(r2 - s2), t2 = g->thr2[i];
	if (e <= t && e2 <= t2) /* false for NaN: a NaN anywhere in the row is an error */
		return true;
	out->row = i;
	out->weighted = e <= t;
	out->e = out->weighted ? e2 : e;
	out->t = out->weighted ? t2 : t;
	out->d1 = s1 - r1;
	out->d2 = s2 - r2;
	out->col = -1;
	const double q = out->d2 / out->d1;
	if (isfinite(q) && q >= 0.5 && q < n + 0.5) {
		out->col = (int)(q + 0.5) - 1;
		return false;
	}
	/*
	 * INF or NaN: the first non-finite data value is the suspect; when only the checksum columns
	 * overflowed, the data value of largest magnitude.
	 */
	double biggest = -1;
	for (int j = 0; j < n; j++) {
		const double v = g->cfg.cls == SDC_GEMM_FP32_FAST ? ((const float *)g->c)[(size_t)i * g->ldc + j]
								: ((const double *)g->c)[(size_t)i * g->ldc + j];
		if (!isfinite(v)) {
			out->col = j;
			break;
		}
		if (fabs(v) > biggest) {
			biggest = fabs(v);
			out->col = j;
		}
	}
	return false;
}

bool sdc_gemm_check_row(struct sdc_gemm *g, int i, struct sdc_gemm_bad_row *out)
{
	if (sdc_gemm_is_fast(g->cfg.cls))
		return check_fast_row(g, i, out);
	struct sdc_abft_row x;
	if (g->cfg.cls == SDC_GEMM_INT8)
		sdc_abft_check_row_i32(&g->layout, (const int32_t *)g->c + (size_t)i * g->ldc, &x);
	else
		sdc_abft_check_row_f32(&g->layout, (const float *)g->c + (size_t)i * g->ldc, &x);
	if (sdc_abft_row_ok(&x))
		return true;
	out->row = i;
	out->x = x;
	out->col = sdc_abft_locate(&g->layout, &x);
	out->e = out->t = out->d1 = out->d2 = 0;
	return false;
}

struct fused {
	struct sdc_gemm *g;
	sdc_gemm_rows_hook hook;
	void *arg;
	int nbad;
};

static void rows_done(void *arg, int r0, int r1)
{
	struct fused *f = arg;
	if (f->hook)
		f->hook(f->arg, r0, r1);
	for (int i = r0; i < r1; i++)
		if (!sdc_gemm_check_row(f->g, i, &f->g->bad[f->nbad]))
			f->nbad++;
}

int sdc_gemm_multiply_check(struct sdc_gemm *g, sdc_gemm_rows_hook hook, void *arg)
{
	struct fused f = { g, hook, arg, 0 };
	if (g->cfg.cls != SDC_GEMM_INT8) {
		/* OpenBLAS is a black box: check its output afterwards, in one pass. */
		sdc_gemm_multiply(g);
		rows_done(&f, 0, g->cfg.m);
		return f.nbad;
	}
	const struct sdc_i8_rows_done done = { rows_done, &f };
	g->i8->fn(g->cfg.m, g->a, g->lda, &g->bp, g->c, g->ldc, &done);
	return f.nbad;
}

int sdc_gemm_check(struct sdc_gemm *g)
{
	int nbad = 0;
	for (int i = 0; i < g->cfg.m; i++)
		if (!sdc_gemm_check_row(g, i, &g->bad[nbad]))
			nbad++;
	return nbad;
}

bool sdc_gemm_a_intact(const struct sdc_gemm *g)
{
	return sdc_xxh64(g->a, g->a_bytes) == g->digest_a;
}

bool sdc_gemm_b_intact(const struct sdc_gemm *g)
{
	return sdc_xxh64(g->cfg.cls == SDC_GEMM_INT8 ? (const void *)g->bp.data : g->b, g->b_bytes) == g->digest_b;
}

double sdc_gemm_ops(const struct sdc_gemm *g)
{
	return 2.0 * g->cfg.m * g->cfg.n * g->cfg.k;
}

