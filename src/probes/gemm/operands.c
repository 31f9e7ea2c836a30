/*
 * The gemm engine's operands: drawn from the seed (exact class: small integers from the Philox
 * stream; fast class: windows into the distribution pools), B's checksum columns encoded, the
 * burn layout filled, digests taken, and any element regenerated on demand as the truth a
 * finding compares with.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/digest.h"
#include "base/rng.h"
#include "base/macros.h"
#include "kernels/abft_sums.h"
#include "probes/gemm/gemm_data.h"
#include "probes/gemm/abft.h"

/* The streams of gemm_data.h, which define every element; the bulk fills below are a
 * second, vectorised path to the same bytes (tests/cli/gpu_host.sh holds them equal: the fake
 * GPU module draws int8's and fp32's operands element by element, and each lane's work digest
 * must match the cores'). */
enum { MAT_A = SDC_GD_A, MAT_B = SDC_GD_B, MAT_WINDOW = SDC_GD_WINDOW };

static struct sdc_rng gemm_rng(const struct sdc_gemm *g, int mat)
{
	return sdc_gd_rng(g->cfg.seed, (int)g->cfg.cls, mat);
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
	struct sdc_rng r = gemm_rng(g, MAT_WINDOW);
	const struct sdc_gd_window gw = sdc_gd_window_of(&r, set, SDC_DIST_POOL);
	struct window w = { .pool = g->cfg.pools[set % (uint64_t)g->cfg.npools].v, .a0 = gw.a0, .as = gw.as,
			    .b0 = gw.b0, .bs = gw.bs };
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
		sdc_gemm_b_statistics(g);
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
		sdc_gemm_b_statistics(g);
		sdc_gemm_thresholds(g);
	}
	take_digests(g);
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

