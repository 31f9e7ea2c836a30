#include "probes/gemm/abft.h"
#include "kernels/abft_sums.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/digest.h"
#include "base/rng.h"
#include "base/util.h"

const char *const sdc_gemm_class_names[] = { "int8", "fp32", "fp32-fast", "fp64-fast", NULL };

#include "kernels/clones.h"

/* RNG purposes: which matrix of which class. */
enum { MAT_A = 1, MAT_B = 2, MAT_WINDOW = 3 };

static struct sdc_rng gemm_rng(const struct sdc_gemm *g, int mat)
{
	return sdc_rng_make(g->cfg.seed, SDC_RNG_PROBE_GEMM, SDC_RNG_SHARED, SDC_RNG_SHARED,
			    (uint32_t)g->cfg.cls << 8 | (uint32_t)mat);
}

/* ---- exact class data: the same stream on every core, regenerable element by element ---- */

/* Words [first, first + n) of a matrix's stream in operand set `set`. */
static void stream_words(const struct sdc_rng *r, uint64_t set, uint64_t first, size_t n, uint32_t *out)
{
	uint32_t buf[1024 + 4];
	while (n) {
		const uint64_t block = first / 4;
		const size_t off = (size_t)(first % 4), chunk = SDC_MIN(n, (size_t)1024);
		sdc_rng_fill_u32(r, (set << 32) + block, buf, off + chunk);
		memcpy(out, buf + off, chunk * sizeof(uint32_t));
		first += chunk;
		out += chunk;
		n -= chunk;
	}
}

/* Bytes [first, first + n) of the stream, little-endian within each word on any host. */
static void stream_bytes(const struct sdc_rng *r, uint64_t set, uint64_t first, size_t n, uint8_t *out)
{
	uint32_t words[1024 + 1];
	while (n) {
		const uint64_t w0 = first / 4;
		const size_t off = (size_t)(first % 4), chunk = SDC_MIN(n, (size_t)4096 - off);
		const size_t nw = (off + chunk + 3) / 4;
		stream_words(r, set, w0, nw, words);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		memcpy(out, (const uint8_t *)words + off, chunk);
#else
		for (size_t i = 0; i < chunk; i++)
			out[i] = (uint8_t)(words[(off + i) / 4] >> (8 * ((off + i) % 4)));
#endif
		first += chunk;
		out += chunk;
		n -= chunk;
	}
}

/* fp32 exact values: integers in [-max, max] from one word each. */
static void stream_ints(const struct sdc_rng *r, uint64_t set, uint64_t first, size_t n, int64_t max,
			float *out)
{
	uint32_t words[1024];
	while (n) {
		const size_t chunk = SDC_MIN(n, (size_t)1024);
		stream_words(r, set, first, chunk, words);
		for (size_t i = 0; i < chunk; i++)
			out[i] = (float)((int64_t)(((uint64_t)words[i] * (uint64_t)(2 * max + 1)) >> 32) - max);
		first += chunk;
		out += chunk;
		n -= chunk;
	}
}

/* ---- fast class data: windows into a shared distribution pool ---- */

struct window {
	const double *pool;
	uint64_t a0, as, b0, bs; /* start and odd stride of A's and B's windows */
};

static struct window window_of(const struct sdc_gemm *g, uint64_t set)
{
	struct window w;
	struct sdc_rng r = gemm_rng(g, MAT_WINDOW);
	struct sdc_philox_ctr c = sdc_rng_block(&r, set);
	w.pool = g->cfg.pools[set % (uint64_t)g->cfg.npools].v;
	/* An odd stride visits every pool entry before repeating one. */
	w.a0 = c.v[0] % SDC_DIST_POOL;
	w.as = (c.v[1] % SDC_DIST_POOL) | 1;
	w.b0 = c.v[2] % SDC_DIST_POOL;
	w.bs = (c.v[3] % SDC_DIST_POOL) | 1;
	return w;
}

static inline double window_at(const double *pool, uint64_t start, uint64_t stride, uint64_t idx)
{
	return pool[(start + idx * stride) & (SDC_DIST_POOL - 1)];
}

/* ---- truth: true operands of the current set ---- */

/* Rows [r0, r1) of A into out, leading dimension ld (elements). */
static void truth_a_rows(const struct sdc_gemm *g, uint64_t set, int r0, int r1, int ld, void *out)
{
	const size_t k = (size_t)g->cfg.k;
	if (sdc_gemm_is_fast(g->cfg.cls)) {
		const struct window w = window_of(g, set);
		for (int i = r0; i < r1; i++)
			for (size_t p = 0; p < k; p++) {
				const double v = window_at(w.pool, w.a0, w.as, (uint64_t)i * k + p);
				if (g->cfg.cls == SDC_GEMM_FP32_FAST)
					((float *)out)[(size_t)(i - r0) * ld + p] = (float)v;
				else
					((double *)out)[(size_t)(i - r0) * ld + p] = v;
			}
		return;
	}
	struct sdc_rng r = gemm_rng(g, MAT_A);
	for (int i = r0; i < r1; i++) {
		const uint64_t first = (uint64_t)i * k;
		if (g->cfg.cls == SDC_GEMM_INT8) {
			uint8_t *a = (uint8_t *)out + (size_t)(i - r0) * ld;
			stream_bytes(&r, set, first, k, a);
			for (size_t p = 0; p < k; p++)
				a[p] &= 0x7F; /* 0..127: vpmaddubsw cannot saturate */
		} else {
			float *a = (float *)out + (size_t)(i - r0) * ld;
			stream_ints(&r, set, first, k, g->amax, a);
			/* A non-negative entry in every row: no dot product can round to -0.0 (abft_exact.c). */
			a[0] = fabsf(a[0]);
		}
	}
}

/* Neumaier's compensated sum: the rounding of each addition is kept and added back. */

/* Encodes row p of a fast-class B_ext (n data values, then r1 and r2) in higher precision. */
static void encode_fast_row(const struct sdc_gemm *g, void *row)
{
	const int n = g->cfg.n;
	if (g->cfg.cls == SDC_GEMM_FP32_FAST) {
		float *b = row;
		double r1 = 0, r2 = 0; /* a float times j+1 <= 2^14 is exact in double */
		for (int j = 0; j < n; j++) {
			r1 += b[j];
			r2 += (double)(j + 1) * b[j];
		}
		b[n] = (float)r1;
		b[n + 1] = (float)r2;
	} else {
		double *b = row;
		double s = 0, c = 0, s2 = 0, c2 = 0;
		for (int j = 0; j < n; j++) {
			sdc_neumaier(&s, &c, b[j]);
			sdc_neumaier(&s2, &c2, (double)(j + 1) * b[j]);
		}
		b[n] = s + c;
		b[n + 1] = s2 + c2;
	}
}

/* The whole true B_ext of `set`, row-major k x n_ext, checksum columns included. */
static void truth_b(struct sdc_gemm *g, uint64_t set, void *out)
{
	const int n = g->cfg.n, ne = g->n_ext, k = g->cfg.k;
	if (sdc_gemm_is_fast(g->cfg.cls)) {
		const struct window w = window_of(g, set);
		for (int p = 0; p < k; p++) {
			char *row = (char *)out + (size_t)p * ne * g->esz;
			for (int j = 0; j < n; j++) {
				const double v = window_at(w.pool, w.b0, w.bs, (uint64_t)p * n + (uint64_t)j);
				if (g->cfg.cls == SDC_GEMM_FP32_FAST)
					((float *)row)[j] = (float)v;
				else
					((double *)row)[j] = v;
			}
			encode_fast_row(g, row);
		}
		return;
	}
	struct sdc_rng r = gemm_rng(g, MAT_B);
	const size_t kn = (size_t)k * (size_t)n;
	if (g->cfg.cls == SDC_GEMM_INT8)
		stream_bytes(&r, set, 0, kn, g->scratch);
	else
		stream_ints(&r, set, 0, kn, g->bmax, g->scratch);
	int64_t *vals = g->row_vals;
	for (int p = 0; p < k; p++) {
		if (g->cfg.cls == SDC_GEMM_INT8) {
			const int8_t *src = (const int8_t *)g->scratch + (size_t)p * n;
			int8_t *row = (int8_t *)out + (size_t)p * ne;
			for (int j = 0; j < n; j++)
				vals[j] = row[j] = src[j];
			sdc_abft_encode_row_i64(&g->layout, vals, vals);
			for (int j = n; j < ne; j++)
				row[j] = (int8_t)vals[j];
		} else {
			const float *src = (const float *)g->scratch + (size_t)p * n;
			float *row = (float *)out + (size_t)p * ne;
			for (int j = 0; j < n; j++) {
				row[j] = src[j];
				vals[j] = (int64_t)src[j];
			}
			sdc_abft_encode_row_i64(&g->layout, vals, vals);
			for (int j = n; j < ne; j++)
				row[j] = (float)vals[j];
		}
	}
}

static void ensure_truth_b(struct sdc_gemm *g)
{
	if (!g->truth_b_valid || g->truth_b_set != g->set) {
		truth_b(g, g->set, g->truth_b);
		g->truth_b_valid = true;
		g->truth_b_set = g->set;
	}
}

/* ---- fast-class thresholds (V-ABFT Algorithm 1) ---- */

/*
 * mean, and the extrema-variance bound (max - mean)(mean - min) >= variance (eq. 24). Eight
 * partial sums side by side: strict IEEE order would make one long dependency chain.
 */
#define LANES 8
#define DEFINE_STATS(name, T)                                                                     \
	CLONES static void name(const T *x, int n, double *mean, double *var)                      \
	{                                                                                          \
		T lo[LANES], hi[LANES];                                                            \
		double s[LANES] = { 0 };                                                           \
		for (int l = 0; l < LANES; l++)                                                    \
			lo[l] = hi[l] = x[0];                                                      \
		int j = 0;                                                                         \
		for (; j + LANES <= n; j += LANES)                                                 \
			for (int l = 0; l < LANES; l++) {                                          \
				const T v = x[j + l];                                              \
				s[l] += v;                                                         \
				lo[l] = v < lo[l] ? v : lo[l];                                     \
				hi[l] = v > hi[l] ? v : hi[l];                                     \
			}                                                                          \
		for (; j < n; j++) {                                                               \
			s[0] += x[j];                                                              \
			lo[0] = x[j] < lo[0] ? x[j] : lo[0];                                       \
			hi[0] = x[j] > hi[0] ? x[j] : hi[0];                                       \
		}                                                                                  \
		double sum = 0, mn = lo[0], mx = hi[0];                                            \
		for (int l = 0; l < LANES; l++) {                                                  \
			sum += s[l];                                                               \
			mn = lo[l] < mn ? lo[l] : mn;                                              \
			mx = hi[l] > mx ? hi[l] : mx;                                              \
		}                                                                                  \
		*mean = sum / n;                                                                   \
		const double b = (mx - *mean) * (*mean - mn);                                      \
		*var = b > 0 ? b : 0;                                                              \
	}

DEFINE_STATS(stats_f32, float)
DEFINE_STATS(stats_f64, double)

static void row_stats(const struct sdc_gemm *g, const void *x, int n, double *mean, double *var)
{
	if (g->cfg.cls == SDC_GEMM_FP32_FAST)
		stats_f32(x, n, mean, var);
	else
		stats_f64(x, n, mean, var);
}

/* B's part of the thresholds: sums over its rows of |mean|, mean^2 and the variance bound. */
static void b_statistics(struct sdc_gemm *g)
{
	double s_absmu = 0, s_mu2 = 0, s_sig2 = 0;
	for (int p = 0; p < g->cfg.k; p++) {
		double mu, var;
		row_stats(g, (const char *)g->b + (size_t)p * g->ldb * g->esz, g->cfg.n, &mu, &var);
		s_absmu += fabs(mu);
		s_mu2 += mu * mu;
		s_sig2 += var;
	}
	g->b_absmu = s_absmu;
	g->b_mu2 = s_mu2;
	g->b_sig2 = s_sig2;
}

void sdc_gemm_thresholds(struct sdc_gemm *g)
{
	const int k = g->cfg.k;
	const double N = g->cfg.n, cs = g->cfg.c_sigma;
	const double s_absmu = g->b_absmu, s_mu2 = g->b_mu2, s_sig2 = g->b_sig2;
	/* The weighted checksum's weights j + 1: W1 = sum w, W2 = sum w^2. */
	const double w1 = N * (N + 1) / 2, w2 = N * (N + 1) * (2 * N + 1) / 6;
	for (int i = 0; i < g->cfg.m; i++) {
		double mu, var;
		row_stats(g, (const char *)g->a + (size_t)i * g->lda * g->esz, k, &mu, &var);
		const double sa = sqrt(var);
		const double t_det = N * fabs(mu) * s_absmu;
		const double t_var23 = cs * sqrt(N * mu * mu * s_sig2 + N * N * var * s_mu2);
		const double t_var4 = cs * sqrt(N) * sa * sqrt(s_sig2);
		g->thr[i] = g->cfg.emax * (t_det + t_var23 + t_var4);
		const double w_det = w1 * fabs(mu) * s_absmu;
		const double w_var23 = cs * sqrt(w2 * mu * mu * s_sig2 + w1 * w1 * var * s_mu2);
		const double w_var4 = cs * sqrt(w2) * sa * sqrt(s_sig2);
		g->thr2[i] = g->cfg.emax * (w_det + w_var23 + w_var4);
	}
}

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

static void take_digests(struct sdc_gemm *g)
{
	g->digest_a = sdc_xxh64(g->a, g->a_bytes);
	g->digest_b = sdc_xxh64(g->cfg.cls == SDC_GEMM_INT8 ? (void *)g->bp.data : g->b, g->b_bytes);
}

/* Copies the row-major truth into the burn layout of B (packed for int8). */
static void install_b(struct sdc_gemm *g)
{
	if (g->cfg.cls == SDC_GEMM_INT8) {
		sdc_i8_pack(&g->bp, g->truth_b, g->n_ext);
		return;
	}
	for (int p = 0; p < g->cfg.k; p++)
		memcpy((char *)g->b + (size_t)p * g->ldb * g->esz, (const char *)g->truth_b + (size_t)p * g->n_ext * g->esz,
		       (size_t)g->n_ext * g->esz);
}

void sdc_gemm_load(struct sdc_gemm *g, uint64_t set)
{
	g->set = set;
	truth_b(g, set, g->truth_b);
	g->truth_b_valid = true;
	g->truth_b_set = set;
	install_b(g);
	memset(g->a, 0, g->a_bytes); /* int8 rows are padded to a multiple of 4 */
	truth_a_rows(g, set, 0, g->cfg.m, g->lda, g->a);
	if (sdc_gemm_is_fast(g->cfg.cls)) {
		g->dist = g->cfg.pools[set % (uint64_t)g->cfg.npools].dist;
		b_statistics(g);
		sdc_gemm_thresholds(g);
	}
	take_digests(g);
}

void sdc_gemm_reencode(struct sdc_gemm *g)
{
	/* Only the fast class is edited in place (bench, campaign); re-derive its checksum columns. */
	for (int p = 0; p < g->cfg.k && sdc_gemm_is_fast(g->cfg.cls); p++)
		encode_fast_row(g, (char *)g->b + (size_t)p * g->ldb * g->esz);
	if (sdc_gemm_is_fast(g->cfg.cls)) {
		b_statistics(g);
		sdc_gemm_thresholds(g);
	}
	take_digests(g);
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

/* ---- elements ---- */

void sdc_gemm_dims(const struct sdc_gemm *g, char target, int64_t *rows, int64_t *cols, int64_t *data_cols)
{
	switch (target) {
	case 'A':
		*rows = g->cfg.m;
		*cols = *data_cols = g->cfg.k;
		break;
	case 'B':
		*rows = g->cfg.k;
		*cols = g->n_ext;
		*data_cols = g->cfg.n;
		break;
	default:
		*rows = g->cfg.m;
		*cols = g->n_ext;
		*data_cols = g->cfg.n;
		break;
	}
}

void *sdc_gemm_element(struct sdc_gemm *g, char target, int64_t row, int64_t col, int *bits)
{
	int64_t rows, cols, data_cols;
	sdc_gemm_dims(g, target, &rows, &cols, &data_cols);
	if (row < 0 || col < 0 || row >= rows || col >= cols)
		return NULL;
	switch (target) {
	case 'A':
		*bits = 8 * g->esz;
		return (char *)g->a + ((size_t)row * g->lda + (size_t)col) * g->esz;
	case 'B':
		*bits = 8 * g->esz;
		if (g->cfg.cls == SDC_GEMM_INT8)
			return g->bp.data + sdc_i8_packed_offset(&g->bp, (int)row, (int)col);
		return (char *)g->b + ((size_t)row * g->ldb + (size_t)col) * g->esz;
	case 'C':
		*bits = 8 * g->csz;
		return (char *)g->c + ((size_t)row * g->ldc + (size_t)col) * g->csz;
	}
	return NULL;
}

uint64_t sdc_gemm_bits(struct sdc_gemm *g, char target, int64_t row, int64_t col)
{
	int bits;
	uint64_t v = 0;
	const void *p = sdc_gemm_element(g, target, row, col, &bits);
	if (p)
		memcpy(&v, p, (size_t)bits / 8); /* little-endian hosts; reports print the value */
	return v;
}

uint64_t sdc_gemm_truth_bits(struct sdc_gemm *g, char target, int row, int col)
{
	uint64_t v = 0;
	if (target == 'A') {
		truth_a_rows(g, g->set, row, row + 1, g->cfg.k, g->truth_a_row);
		memcpy(&v, (const char *)g->truth_a_row + (size_t)col * g->esz, (size_t)g->esz);
	} else {
		ensure_truth_b(g);
		memcpy(&v, (const char *)g->truth_b + ((size_t)row * g->n_ext + (size_t)col) * g->esz, (size_t)g->esz);
	}
	return v;
}

void sdc_gemm_reference_row(struct sdc_gemm *g, int i)
{
	const int ne = g->n_ext, k = g->cfg.k;
	ensure_truth_b(g);
	truth_a_rows(g, g->set, i, i + 1, k, g->truth_a_row);
	switch (g->cfg.cls) {
	case SDC_GEMM_INT8:
		sdc_gemm_u8s8_row_reference(k, ne, g->truth_a_row, g->truth_b, ne, g->ref_i64);
		break;
	case SDC_GEMM_FP32: {
		const float *a = g->truth_a_row, *b = g->truth_b;
		for (int j = 0; j < ne; j++) {
			int64_t s = 0;
			for (int p = 0; p < k; p++)
				s += (int64_t)a[p] * (int64_t)b[(size_t)p * ne + j];
			g->ref_i64[j] = s;
		}
		break;
	}
	case SDC_GEMM_FP32_FAST: {
		/* float x float is exact in double; the double sum is far finer than fp32's rounding. */
		const float *a = g->truth_a_row, *b = g->truth_b;
		for (int j = 0; j < ne; j++) {
			double s = 0;
			for (int p = 0; p < k; p++)
				s += (double)a[p] * (double)b[(size_t)p * ne + j];
			g->ref_f64[j] = s;
		}
		break;
	}
	default: {
		/* long double: 64-bit significand on x86, quad elsewhere; the failure path only. */
		const double *a = g->truth_a_row, *b = g->truth_b;
		for (int j = 0; j < ne; j++) {
			long double s = 0;
			for (int p = 0; p < k; p++)
				s += (long double)a[p] * (long double)b[(size_t)p * ne + j];
			g->ref_f64[j] = (double)s;
		}
		break;
	}
	}
}

double sdc_gemm_ops(const struct sdc_gemm *g)
{
	return 2.0 * g->cfg.m * g->cfg.n * g->cfg.k;
}
