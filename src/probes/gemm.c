/*
 * gemm: an ABFT-checked GEMM burn on every selected CPU core.
 *
 * Exact class (this file's variants int8 and fp32): operands are small integers, so every
 * partial sum is exact in any order and results compare bit for bit.
 *   - B is extended with checksum digit columns (kernels/abft_exact.h) that ride through the
 *     same GEMM call; each row of C is checked by equality in int64, and a single bad element
 *     is located by the position-weighted checksum.
 *   - Operands at rest are re-verified against their digests after every GEMM, so a flip in
 *     A or B memory is found even where the row checks cannot see it; the RNG regenerates
 *     the true values to name the element and bits.
 *   - Every core runs the same seeded stream, so each iteration's result digest is voted on
 *     across cores and the odd core out is named.
 */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../digest.h"
#include "../kernels/abft_exact.h"
#include "../kernels/gemm_fp32.h"
#include "../kernels/gemm_int8.h"
#include "../probe.h"
#include "../rng.h"

enum gemm_dtype { GEMM_INT8, GEMM_FP32 };
static const char *const dtype_names[] = { "int8", "fp32", NULL };
static const char *const int8_kernels[] = { "auto", "portable", "avx2", "avx512bw", "avx512vnni", NULL };
static const char *const fp32_kernels[] = { "auto", "portable", "openblas", NULL };

struct gemm_opts {
	uint32_t dtypes;
	int64_t m, n, k;
	int64_t refresh;
	int int8_kernel, fp32_kernel;
	double int8_floor, fp32_floor;
};

#define OPT(f) offsetof(struct gemm_opts, f)
static const struct sdc_option gemm_options[] = {
	{ .name = "dtypes", .type = SDC_OPT_SET, .offset = OPT(dtypes), .def = "int8,fp32",
	  .help = "element types to burn, one variant each: int8 (u8 x s8 -> s32), fp32 (exact integers)",
	  .choices = dtype_names },
	{ .name = "m", .type = SDC_OPT_INT, .offset = OPT(m), .def = "256", .help = "rows of A and C",
	  .imin = 1, .imax = 16384 },
	{ .name = "n", .type = SDC_OPT_INT, .offset = OPT(n), .def = "256", .help = "columns of B and C",
	  .imin = 1, .imax = 16384 },
	{ .name = "k", .type = SDC_OPT_INT, .offset = OPT(k), .def = "1024",
	  .help = "inner dimension (fp32 operands shrink to keep k * |a| * |b| <= 2^24)", .imin = 4,
	  .imax = 65536 },
	{ .name = "refresh", .type = SDC_OPT_INT, .offset = OPT(refresh), .def = "8",
	  .help = "iterations that reuse one operand set before new data is drawn", .imin = 1,
	  .imax = 1 << 20 },
	{ .name = "int8_kernel", .type = SDC_OPT_ENUM, .offset = OPT(int8_kernel), .def = "auto",
	  .help = "int8 kernel (auto: the fastest this CPU supports)", .choices = int8_kernels },
	{ .name = "fp32_kernel", .type = SDC_OPT_ENUM, .offset = OPT(fp32_kernel), .def = "auto",
	  .help = "fp32 kernel (auto: OpenBLAS when built with it)", .choices = fp32_kernels },
	{ .name = "int8_floor", .type = SDC_OPT_DOUBLE, .offset = OPT(int8_floor), .def = "0",
	  .help = "per-core int8 throughput below which the core is WARNING (0: no floor)", .dmin = 0,
	  .dmax = 1e6, .unit = "GOP/s" },
	{ .name = "fp32_floor", .type = SDC_OPT_DOUBLE, .offset = OPT(fp32_floor), .def = "0",
	  .help = "per-core fp32 throughput below which the core is WARNING (0: no floor)", .dmin = 0,
	  .dmax = 1e6, .unit = "GFLOP/s" },
	SDC_OPT_END,
};

static const char *const gemm_targets[] = {
	"A: an element of operand A at rest, before the GEMM",
	"B: an element of operand B (checksum columns included) after encoding, before the GEMM",
	"C: an element of the output after the GEMM, before verification",
	NULL,
};

/* A short run that must find and locate a fault in every target of both variants. */
static const char *const gemm_selftest_options[] = { "m=64", "n=80", "k=96", "refresh=4", NULL };
static const char *const gemm_selftest_faults[] = {
	"gemm/int8:C:count=2,every=3", "gemm/int8:B", "gemm/int8:A",
	"gemm/fp32:C:count=2,every=3", "gemm/fp32:B", "gemm/fp32:A",
	NULL,
};

/* RNG purposes: which matrix of which dtype. */
enum { MAT_A = 1, MAT_B = 2 };

struct gemm_shared {
	enum gemm_dtype dtype;
	int m, n, k;
	int lda;  /* int8: kp (k rounded to 4, zero padded); fp32: k */
	int ldb;  /* fp32 row-major B_ext; int8 uses the packed layout */
	int ldc;  /* int8: packed np; fp32: ldb */
	int64_t amax, bmax; /* fp32 operand magnitude */
	struct sdc_abft_layout layout;
	uint64_t refresh;
	const struct sdc_gemm_u8s8_impl *i8;
	const struct sdc_sgemm_impl *f32;
	double ops;
	char operation[96];
};

struct gemm_worker {
	void *a;      /* uint8_t[m * lda] or float[m * lda] */
	size_t a_bytes;
	struct sdc_i8_packed bp; /* int8 B_ext, packed */
	float *b;     /* fp32 B_ext, row-major k x ldb */
	size_t b_bytes;
	void *c;
	size_t c_bytes;
	uint64_t digest_a, digest_b;
	uint64_t set; /* operand set in the buffers */

	/* Truth regenerated from the RNG: B_ext row-major (int8 or float), one A row, sums. */
	void *scratch; /* k * n elements: B's data as drawn */
	void *truth_b;
	void *truth_a_row;
	int64_t *row_vals, *ref_row;
	int *bad_rows, *bad_cols; /* failing rows of one iteration and the column each points at */
	struct sdc_abft_row *bad_chk;
	bool operand_fault; /* this iteration's operands were found corrupted */
	bool truth_b_valid;
	uint64_t truth_b_set;
};

static const void *gemm_b_data(const struct gemm_worker *gw, const struct gemm_shared *sh)
{
	return sh->dtype == GEMM_INT8 ? (const void *)gw->bp.data : (const void *)gw->b;
}

static size_t gemm_b_size(const struct gemm_worker *gw, const struct gemm_shared *sh)
{
	return sh->dtype == GEMM_INT8 ? gw->bp.bytes : gw->b_bytes;
}

/* ---- data: the same stream on every core, regenerable element by element ---- */

static struct sdc_rng gemm_rng(uint64_t seed, const struct gemm_shared *sh, int mat)
{
	return sdc_rng_make(seed, SDC_RNG_PROBE_GEMM, SDC_RNG_SHARED, SDC_RNG_SHARED,
			    (uint32_t)sh->dtype << 8 | (uint32_t)mat);
}

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

/*
 * Rows [r0, r1) of A, true values, row-major with leading dimension ld (elements).
 * int8: uint8_t in 0..127 so vpmaddubsw cannot saturate; fp32: integers in [-amax, amax].
 */
static void truth_a_rows(uint64_t seed, const struct gemm_shared *sh, uint64_t set, int r0, int r1, int ld,
			 void *out)
{
	struct sdc_rng r = gemm_rng(seed, sh, MAT_A);
	const size_t k = (size_t)sh->k;
	for (int i = r0; i < r1; i++) {
		const uint64_t first = (uint64_t)i * k;
		if (sh->dtype == GEMM_INT8) {
			uint8_t *a = (uint8_t *)out + (size_t)(i - r0) * ld;
			stream_bytes(&r, set, first, k, a);
			for (size_t p = 0; p < k; p++)
				a[p] &= 0x7F;
		} else {
			stream_ints(&r, set, first, k, sh->amax, (float *)out + (size_t)(i - r0) * ld);
		}
	}
}

/*
 * The whole true B_ext, row-major k x n_ext (int8_t or float), checksum digits included.
 * The data part is drawn in one pass (scratch: k * n elements), then each row is encoded.
 */
static void truth_b(uint64_t seed, const struct gemm_shared *sh, uint64_t set, void *out, void *scratch,
		    int64_t *vals)
{
	struct sdc_rng r = gemm_rng(seed, sh, MAT_B);
	const int n = sh->n, ne = sh->layout.n_ext;
	const size_t kn = (size_t)sh->k * (size_t)n;
	if (sh->dtype == GEMM_INT8)
		stream_bytes(&r, set, 0, kn, scratch);
	else
		stream_ints(&r, set, 0, kn, sh->bmax, scratch);
	for (int p = 0; p < sh->k; p++) {
		if (sh->dtype == GEMM_INT8) {
			const int8_t *src = (const int8_t *)scratch + (size_t)p * n;
			int8_t *row = (int8_t *)out + (size_t)p * ne;
			for (int j = 0; j < n; j++)
				vals[j] = row[j] = src[j];
			sdc_abft_encode_row_i64(&sh->layout, vals, vals);
			for (int j = n; j < ne; j++)
				row[j] = (int8_t)vals[j];
		} else {
			const float *src = (const float *)scratch + (size_t)p * n;
			float *row = (float *)out + (size_t)p * ne;
			for (int j = 0; j < n; j++) {
				row[j] = src[j];
				vals[j] = (int64_t)src[j];
			}
			sdc_abft_encode_row_i64(&sh->layout, vals, vals);
			for (int j = n; j < ne; j++)
				row[j] = (float)vals[j];
		}
	}
}

/* Loads operand set `set` into the burn buffers and records their digests. */
static void load_operands(struct sdc_worker *w, struct gemm_worker *gw, const struct gemm_shared *sh,
			  uint64_t set)
{
	const uint64_t seed = w->ctx->seed;
	truth_b(seed, sh, set, gw->truth_b, gw->scratch, gw->row_vals);
	gw->truth_b_valid = true;
	gw->truth_b_set = set;
	if (sh->dtype == GEMM_INT8) {
		sdc_i8_pack(&gw->bp, gw->truth_b, sh->layout.n_ext);
	} else {
		const int ne = sh->layout.n_ext;
		memset(gw->b, 0, gw->b_bytes);
		for (int p = 0; p < sh->k; p++)
			memcpy(gw->b + (size_t)p * sh->ldb, (float *)gw->truth_b + (size_t)p * ne, sizeof(float) * ne);
	}
	memset(gw->a, 0, gw->a_bytes); /* int8 rows are padded to a multiple of 4 */
	truth_a_rows(seed, sh, set, 0, sh->m, sh->lda, gw->a);
	gw->digest_a = sdc_xxh64(gw->a, gw->a_bytes);
	gw->digest_b = sdc_xxh64(gemm_b_data(gw, sh), gemm_b_size(gw, sh));
	gw->set = set;
}

/* ---- findings ---- */

static void hex_bits(char *buf, size_t len, uint32_t v, int bytes)
{
	snprintf(buf, len, "0x%0*" PRIx32, 2 * bytes, v);
}

static uint32_t f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof(u));
	return u;
}

static void finding_init(struct sdc_finding *f, const struct gemm_shared *sh, uint64_t iter,
			 const char *kind, const char *target, int64_t row, int64_t col)
{
	memset(f, 0, sizeof(*f));
	f->cls = SDC_FINDING_CORRUPTION;
	sdc_strlcpy(f->kind, kind, sizeof(f->kind));
	sdc_strlcpy(f->operation, sh->operation, sizeof(f->operation));
	sdc_strlcpy(f->target, target, sizeof(f->target));
	f->iteration = iter;
	f->row = row;
	f->col = col;
}

/* Fills expected/actual/xor for an element of C (int32 or fp32 bits). */
static void set_c_values(struct sdc_finding *f, const struct gemm_shared *sh, int64_t expected,
			 const void *actual_elem)
{
	uint32_t e, a;
	if (sh->dtype == GEMM_INT8) {
		int32_t av;
		memcpy(&av, actual_elem, sizeof(av));
		e = (uint32_t)(int32_t)expected;
		a = (uint32_t)av;
		snprintf(f->expected_value, sizeof(f->expected_value), "%" PRId64, expected);
		snprintf(f->actual_value, sizeof(f->actual_value), "%" PRId32, av);
	} else {
		float av;
		memcpy(&av, actual_elem, sizeof(av));
		e = f32_bits((float)expected);
		a = f32_bits(av);
		snprintf(f->expected_value, sizeof(f->expected_value), "%.9g", (double)(float)expected);
		snprintf(f->actual_value, sizeof(f->actual_value), "%.9g", (double)av);
	}
	hex_bits(f->expected, sizeof(f->expected), e, 4);
	hex_bits(f->actual, sizeof(f->actual), a, 4);
	hex_bits(f->xor_mask, sizeof(f->xor_mask), e ^ a, 4);
}

static void ensure_truth_b(struct sdc_worker *w, struct gemm_worker *gw, const struct gemm_shared *sh)
{
	if (!gw->truth_b_valid || gw->truth_b_set != gw->set) {
		truth_b(w->ctx->seed, sh, gw->set, gw->truth_b, gw->scratch, gw->row_vals);
		gw->truth_b_valid = true;
		gw->truth_b_set = gw->set;
	}
}

/* The true row i of C_ext, by the scalar reference on regenerated operands. */
static void reference_row(struct sdc_worker *w, struct gemm_worker *gw, const struct gemm_shared *sh, int i)
{
	const int ne = sh->layout.n_ext;
	ensure_truth_b(w, gw, sh);
	truth_a_rows(w->ctx->seed, sh, gw->set, i, i + 1, sh->k, gw->truth_a_row);
	if (sh->dtype == GEMM_INT8) {
		sdc_gemm_u8s8_row_reference(sh->k, ne, gw->truth_a_row, gw->truth_b, ne, gw->ref_row);
	} else {
		const float *a = gw->truth_a_row, *b = gw->truth_b;
		for (int j = 0; j < ne; j++) {
			int64_t s = 0;
			for (int p = 0; p < sh->k; p++)
				s += (int64_t)a[p] * (int64_t)b[(size_t)p * ne + j];
			gw->ref_row[j] = s;
		}
	}
}

static int64_t c_value(const struct gemm_shared *sh, const void *c_row, int j, bool *exact)
{
	*exact = true;
	if (sh->dtype == GEMM_INT8)
		return ((const int32_t *)c_row)[j];
	float v = ((const float *)c_row)[j];
	if (!(fabsf(v) <= 0x1p24f) || (float)(int64_t)v != v) {
		*exact = false;
		return 0;
	}
	return (int64_t)v;
}

/* Rows reported in detail per iteration; a corrupted B column fails every row. */
#define ROWS_DETAILED 4

/*
 * Row i failed its checksums: locate with the checksums, confirm against the reference.
 * Returns the single column the row's errors sit in, or -1.
 */
static int report_row(struct sdc_worker *w, struct gemm_worker *gw, const struct gemm_shared *sh,
		      uint64_t iter, int i, const struct sdc_abft_row *chk)
{
	const int ne = sh->layout.n_ext;
	const size_t esz = sh->dtype == GEMM_INT8 ? sizeof(int32_t) : sizeof(float);
	const char *c_row = (const char *)gw->c + (size_t)i * sh->ldc * esz;
	const int located = sdc_abft_locate(&sh->layout, chk);
	reference_row(w, gw, sh, i);

	int differing = 0, reported = 0, column = -1;
	for (int j = 0; j < ne; j++) {
		bool exact;
		int64_t v = c_value(sh, c_row, j, &exact);
		if (exact && v == gw->ref_row[j])
			continue;
		column = differing++ ? -1 : j;
		if (reported >= 8)
			continue;
		struct sdc_finding f;
		finding_init(&f, sh, iter, j < sh->n ? "checksum-mismatch" : "checksum-column-corrupt", "C", i, j);
		set_c_values(&f, sh, gw->ref_row[j], c_row + (size_t)j * esz);
		const char *why = gw->operand_fault ? "; an operand was found corrupted in this iteration" : "";
		if (j == located && chk->nbad)
			snprintf(f.detail, sizeof(f.detail),
				 "not an exact integer; both checksums agree it is the row's only error%s", why);
		else if (j == located)
			snprintf(f.detail, sizeof(f.detail),
				 "row checksum off by %" PRId64 ", weighted checksum locates column %d; "
				 "confirmed by recomputing the row%s",
				 chk->s1 - chk->e1, j, why);
		else
			snprintf(f.detail, sizeof(f.detail),
				 "found by recomputing the row; the checksums point at %s%s",
				 located >= 0 ? "another column" : "no single column (several errors)", why);
		sdc_worker_report(w, &f);
		reported++;
	}
	if (!differing) {
		/* The checks disagreed with a row that recomputes correctly: the check itself glitched. */
		struct sdc_finding f;
		finding_init(&f, sh, iter, "verification-glitch", "C", i, -1);
		snprintf(f.detail, sizeof(f.detail),
			 "row sums %" PRId64 "/%" PRId64 " disagreed with checksums %" PRId64 "/%" PRId64
			 " but the stored row recomputes correctly",
			 chk->s1, chk->s2, chk->e1, chk->e2);
		sdc_worker_report(w, &f);
	} else if (differing > reported) {
		w->corruptions += (uint64_t)(differing - reported);
	}
	return column;
}

/*
 * Checks every row of C. A corrupted column of B fails every row at one column: such rows are
 * summarised after the first few, but any row whose error sits elsewhere is reported in full,
 * so an independent fault is never hidden behind the pattern.
 */
static void verify_rows(struct sdc_worker *w, struct gemm_worker *gw, const struct gemm_shared *sh,
			uint64_t iter)
{
	struct sdc_abft_row chk;
	int nbad = 0;
	for (int i = 0; i < sh->m; i++) {
		if (sh->dtype == GEMM_INT8)
			sdc_abft_check_row_i32(&sh->layout, (const int32_t *)gw->c + (size_t)i * sh->ldc, &chk);
		else
			sdc_abft_check_row_f32(&sh->layout, (const float *)gw->c + (size_t)i * sh->ldc, &chk);
		if (sdc_abft_row_ok(&chk))
			continue;
		gw->bad_rows[nbad] = i;
		gw->bad_cols[nbad] = sdc_abft_locate(&sh->layout, &chk);
		gw->bad_chk[nbad++] = chk;
	}
	if (!nbad)
		return;
	/* The column most failing rows point at (Boyer-Moore majority vote). */
	int common = -1, votes = 0;
	for (int r = 0; r < nbad; r++) {
		if (!votes)
			common = gw->bad_cols[r];
		votes += gw->bad_cols[r] == common ? 1 : -1;
	}
	int detailed = 0, summarised = 0;
	for (int r = 0; r < nbad; r++) {
		const bool odd = common < 0 || gw->bad_cols[r] != common;
		if (r < ROWS_DETAILED || (odd && detailed < 4 * ROWS_DETAILED)) {
			report_row(w, gw, sh, iter, gw->bad_rows[r], &gw->bad_chk[r]);
			detailed++;
		} else {
			w->corruptions++;
			summarised++;
		}
	}
	if (summarised) {
		struct sdc_finding f;
		finding_init(&f, sh, iter, "checksum-mismatch-rows", "C", -1, common);
		snprintf(f.detail, sizeof(f.detail),
			 "%d of %d rows fail their checksums; %d more rows at column %d not listed: the pattern "
			 "of a corrupted column of B or of its products",
			 nbad, sh->m, summarised, common);
		sdc_worker_report(w, &f);
	}
}

/* Re-verifies A and B against their digests; names and repairs any element that changed. */
/* Compares one operand element with its true bits; files a finding when they differ. */
static void compare_element(struct sdc_worker *w, const struct gemm_shared *sh, uint64_t iter,
			   const char *target, int row, int col, const void *truth, const void *have,
			   int *reported)
{
	const int esz = sh->dtype == GEMM_INT8 ? 1 : 4;
	uint32_t e = 0, a = 0;
	memcpy(&e, truth, (size_t)esz);
	memcpy(&a, have, (size_t)esz);
	if (e == a)
		return;
	if ((*reported)++ >= 8) {
		w->corruptions++;
		return;
	}
	struct sdc_finding f;
	finding_init(&f, sh, iter, "operand-corrupt", target, row, col);
	hex_bits(f.expected, sizeof(f.expected), e, esz);
	hex_bits(f.actual, sizeof(f.actual), a, esz);
	hex_bits(f.xor_mask, sizeof(f.xor_mask), e ^ a, esz);
	snprintf(f.detail, sizeof(f.detail), "operand %s%s changed in memory after %s", target,
		 target[0] == 'B' && col >= sh->n ? " (checksum column)" : "",
		 target[0] == 'A' ? "its digest was taken" : "encoding");
	sdc_worker_report(w, &f);
}

/* Re-verifies A and B against their digests; names and repairs any element that changed. */
static void verify_operands(struct sdc_worker *w, struct gemm_worker *gw, const struct gemm_shared *sh,
			    uint64_t iter)
{
	const bool a_ok = sdc_xxh64(gw->a, gw->a_bytes) == gw->digest_a;
	const bool b_ok = sdc_xxh64(gemm_b_data(gw, sh), gemm_b_size(gw, sh)) == gw->digest_b;
	gw->operand_fault = !a_ok || !b_ok;
	if (a_ok && b_ok)
		return;
	const size_t esz = sh->dtype == GEMM_INT8 ? 1 : 4;
	int reported = 0;
	for (int i = 0; !a_ok && i < sh->m; i++) {
		truth_a_rows(w->ctx->seed, sh, gw->set, i, i + 1, sh->k, gw->truth_a_row);
		const char *have = (const char *)gw->a + (size_t)i * sh->lda * esz;
		for (int p = 0; p < sh->k; p++)
			compare_element(w, sh, iter, "A", i, p, (const char *)gw->truth_a_row + p * esz,
					have + p * esz, &reported);
	}
	if (!b_ok) {
		ensure_truth_b(w, gw, sh);
		const int ne = sh->layout.n_ext;
		for (int p = 0; p < sh->k; p++)
			for (int j = 0; j < ne; j++)
				compare_element(w, sh, iter, "B", p, j,
						(const char *)gw->truth_b + ((size_t)p * ne + j) * esz,
						sh->dtype == GEMM_INT8 ? (const void *)(gw->bp.data + sdc_i8_packed_offset(&gw->bp, p, j))
								       : (const void *)(gw->b + (size_t)p * sh->ldb + j),
						&reported);
	}
	if (!reported) {
		/* Digest differs but every element is right: the digest or its read glitched. */
		struct sdc_finding f;
		finding_init(&f, sh, iter, "verification-glitch", a_ok ? "B" : "A", -1, -1);
		snprintf(f.detail, sizeof(f.detail), "operand digest changed but every element matches");
		sdc_worker_report(w, &f);
	}
	load_operands(w, gw, sh, gw->set); /* repair, so the next iteration starts clean */
}

/* ---- fault injection ---- */

static void apply_faults(struct sdc_worker *w, struct gemm_worker *gw, const struct gemm_shared *sh,
			 const char *target, uint64_t iter)
{
	struct sdc_fault faults[8];
	int nf = sdc_worker_faults(w, target, iter, faults, 8);
	const int esz = sh->dtype == GEMM_INT8 && target[0] != 'C' ? 1 : 4;
	for (int i = 0; i < nf; i++) {
		const struct sdc_fault *f = &faults[i];
		int64_t rows, cols;
		switch (target[0]) {
		case 'A':
			rows = sh->m;
			cols = sh->k;
			break;
		case 'B':
			rows = sh->k;
			cols = sh->layout.n_ext;
			break;
		default:
			rows = sh->m;
			cols = sh->layout.n_ext;
			break;
		}
		/* Drawn coordinates stay in the data columns; explicit ones may name a checksum column. */
		int64_t row = f->row >= 0 ? f->row : sdc_fault_draw(f, 0, rows);
		int64_t col = f->col >= 0 ? f->col : sdc_fault_draw(f, 1, target[0] == 'A' ? sh->k : sh->n);
		int bit = f->bit >= 0 ? f->bit : (int)sdc_fault_draw(f, 2, 8 * esz);
		if (row >= rows || col >= cols || bit >= 8 * esz) {
			sdc_worker_error(w, "--inject %s: row %" PRId64 ", col %" PRId64 ", bit %d outside %s (%" PRId64
					    " x %" PRId64 ", %d bits)",
					 w->ctx->run->inject[f->spec].text, row, col, bit, target, rows, cols, 8 * esz);
			continue;
		}
		uint8_t *elem;
		if (target[0] == 'A')
			elem = (uint8_t *)gw->a + ((size_t)row * sh->lda + (size_t)col) * esz;
		else if (target[0] == 'B')
			elem = sh->dtype == GEMM_INT8 ? (uint8_t *)gw->bp.data + sdc_i8_packed_offset(&gw->bp, (int)row, (int)col)
						      : (uint8_t *)(gw->b + (size_t)row * sh->ldb + col);
		else
			elem = (uint8_t *)gw->c + ((size_t)row * sh->ldc + (size_t)col) * 4;
		uint32_t before = 0, after;
		memcpy(&before, elem, (size_t)esz);
		after = before ^ (1u << bit);
		memcpy(elem, &after, (size_t)esz);
		char hb[24], ha[24];
		hex_bits(hb, sizeof(hb), before, esz);
		hex_bits(ha, sizeof(ha), after, esz);
		sdc_worker_fault_applied(w, f, target, iter, row, col, bit, hb, ha);
	}
}

/* ---- the probe ---- */

static int gemm_variants(const void *opts, const char **names, int max)
{
	const struct gemm_opts *o = opts;
	int n = 0;
	for (int i = 0; dtype_names[i] && n < max; i++)
		if (sdc_opt_set_has(o->dtypes, i))
			names[n++] = dtype_names[i];
	return n;
}

static void record_environment(struct sdc_probe_ctx *ctx, const struct gemm_shared *sh)
{
	json_t *env = ctx->run->environment;
	json_t *g = json_object_get(env, "gemm");
	if (!g) {
		g = json_object();
		json_object_set_new(env, "gemm", g);
	}
	if (sh->dtype == GEMM_INT8) {
		json_object_set_new(g, "int8_kernel", json_string(sh->i8->name));
	} else {
		struct sdc_blas_info bi;
		sdc_blas_info(&bi);
		json_object_set_new(g, "fp32_kernel", json_string(sh->f32->name));
		json_object_set_new(env, "blas", json_pack("{s:s, s:s, s:s, s:i}", "library", bi.library, "version",
							   bi.version, "core", bi.corename, "threads", bi.threads));
	}
}

static int gemm_setup(struct sdc_probe_ctx *ctx)
{
	const struct gemm_opts *o = ctx->opts;
	struct gemm_shared *sh = calloc(1, sizeof(*sh));
	if (!sh)
		return sdc_ctx_error(ctx, "out of memory");
	ctx->shared = sh;
	sh->dtype = !strcmp(ctx->variant, "int8") ? GEMM_INT8 : GEMM_FP32;
	sh->m = (int)o->m;
	sh->n = (int)o->n;
	sh->k = (int)o->k;
	sh->refresh = (uint64_t)o->refresh;
	sh->ops = 2.0 * sh->m * sh->n * sh->k;
	sdc_strlcpy(ctx->iter_unit, "GEMMs", sizeof(ctx->iter_unit));

	if (sh->dtype == GEMM_INT8) {
		const char *want = int8_kernels[o->int8_kernel];
		sh->i8 = sdc_gemm_u8s8_find(want);
		if (!sh->i8)
			return sdc_ctx_error(ctx, "int8_kernel=%s: this CPU or build does not support it", want);
		/* B is s8: |B| <= 128; balanced base-2^7 digits fit s8 (Li et al. used mod 127 instead). */
		sdc_abft_layout_init(&sh->layout, sh->n, 128, 7);
		sh->lda = (sh->k + 3) / 4 * 4;
		sh->ldc = (sh->layout.n_ext + 15) / 16 * 16;
		sdc_strlcpy(ctx->rate_unit, "GOP/s", sizeof(ctx->rate_unit));
		ctx->floor = o->int8_floor;
	} else {
		const char *want = fp32_kernels[o->fp32_kernel];
		sh->f32 = sdc_sgemm_find(want);
		if (!sh->f32)
			return sdc_ctx_error(ctx, "fp32_kernel=%s: not built into this sdcscan", want);
		sdc_blas_single_thread();
		/* Every partial sum is exact when k * amax * bmax <= 2^24 (fp32's 24-bit significand). */
		int64_t mx = (int64_t)floor(sqrt((double)(1 << 24) / sh->k));
		if (mx > 127)
			mx = 127;
		sh->amax = sh->bmax = mx;
		int bits = 1;
		while ((int64_t)1 << bits <= mx) /* digits reach 2^(bits-1) <= bmax */
			bits++;
		sdc_abft_layout_init(&sh->layout, sh->n, sh->bmax, bits);
		sh->lda = sh->k;
		sh->ldb = sh->ldc = (sh->layout.n_ext + 15) / 16 * 16;
		sdc_strlcpy(ctx->rate_unit, "GFLOP/s", sizeof(ctx->rate_unit));
		ctx->floor = o->fp32_floor;
	}
	snprintf(sh->operation, sizeof(sh->operation), "gemm %s %dx%dx%d (+%d checksum columns)",
		 ctx->variant, sh->m, sh->n, sh->k, sh->layout.n_ext - sh->n);
	record_environment(ctx, sh);
	return 0;
}

static void gemm_worker_release(struct gemm_worker *gw)
{
	sdc_free_aligned(gw->a);
	sdc_i8_packed_release(&gw->bp);
	sdc_free_aligned(gw->b);
	sdc_free_aligned(gw->c);
	free(gw->scratch);
	free(gw->truth_b);
	free(gw->truth_a_row);
	free(gw->row_vals);
	free(gw->ref_row);
	free(gw->bad_rows);
	free(gw->bad_cols);
	free(gw->bad_chk);
}

static int gemm_worker_init(struct gemm_worker *gw, const struct gemm_shared *sh)
{
	const size_t esz = sh->dtype == GEMM_INT8 ? 1 : 4, ne = (size_t)sh->layout.n_ext;
	memset(gw, 0, sizeof(*gw));
	gw->a_bytes = (size_t)sh->m * sh->lda * esz;
	gw->a = sdc_alloc_aligned(gw->a_bytes);
	if (sh->dtype == GEMM_INT8) {
		if (sdc_i8_packed_alloc(&gw->bp, sh->k, (int)ne))
			return -1;
	} else {
		gw->b_bytes = (size_t)sh->k * sh->ldb * sizeof(float);
		gw->b = sdc_alloc_aligned(gw->b_bytes);
	}
	gw->c_bytes = (size_t)sh->m * sh->ldc * 4;
	gw->c = sdc_alloc_aligned(gw->c_bytes);
	gw->scratch = malloc((size_t)sh->k * sh->n * esz);
	gw->truth_b = malloc((size_t)sh->k * ne * esz);
	gw->truth_a_row = malloc((size_t)sh->k * esz);
	gw->row_vals = malloc(ne * sizeof(int64_t));
	gw->ref_row = malloc(ne * sizeof(int64_t));
	gw->bad_rows = malloc((size_t)sh->m * sizeof(int));
	gw->bad_cols = malloc((size_t)sh->m * sizeof(int));
	gw->bad_chk = malloc((size_t)sh->m * sizeof(struct sdc_abft_row));
	if (!gw->bad_rows || !gw->bad_cols || !gw->bad_chk ||
	    !gw->a || (sh->dtype == GEMM_FP32 && !gw->b) || !gw->c || !gw->scratch || !gw->truth_b || !gw->truth_a_row ||
	    !gw->row_vals || !gw->ref_row)
		return -1;
	memset(gw->c, 0, gw->c_bytes);
	return 0;
}

static void gemm_run(struct sdc_worker *w)
{
	const struct gemm_shared *sh = w->ctx->shared;
	struct gemm_worker gw;
	if (gemm_worker_init(&gw, sh)) {
		sdc_worker_error(w, "cannot allocate the %s operands (%dx%dx%d)", w->ctx->variant, sh->m, sh->n, sh->k);
		goto out_release;
	}
	sdc_strlcpy(w->kernel, sh->dtype == GEMM_INT8 ? sh->i8->name : sh->f32->name, sizeof(w->kernel));
	for (uint64_t iter = 0; sdc_worker_continue(w); iter++) {
		if (iter % sh->refresh == 0)
			load_operands(w, &gw, sh, iter / sh->refresh);
		apply_faults(w, &gw, sh, "A", iter);
		apply_faults(w, &gw, sh, "B", iter);

		if (sh->dtype == GEMM_INT8)
			sh->i8->fn(sh->m, gw.a, sh->lda, &gw.bp, gw.c, sh->ldc);
		else
			sh->f32->fn(sh->m, sh->layout.n_ext, sh->k, gw.a, sh->lda, gw.b, sh->ldb, gw.c, sh->ldc);

		apply_faults(w, &gw, sh, "C", iter);
		/* Operands first: a changed input explains the rows that fail after it. */
		verify_operands(w, &gw, sh, iter);
		verify_rows(w, &gw, sh, iter);
		sdc_worker_digest(w, iter, sdc_xxh64(gw.c, gw.c_bytes));
		sdc_worker_account(w, sh->ops);
	}
out_release:
	gemm_worker_release(&gw);
}

static void gemm_teardown(struct sdc_probe_ctx *ctx)
{
	free(ctx->shared);
	ctx->shared = NULL;
}

const struct sdc_probe sdc_probe_gemm = {
	.name = "gemm",
	.summary = "ABFT-checked GEMM burn on every core: int8 and fp32 with exact checksums",
	.options = gemm_options,
	.opts_size = sizeof(struct gemm_opts),
	.inject_targets = gemm_targets,
	.selftest_options = gemm_selftest_options,
	.selftest_faults = gemm_selftest_faults,
	.variants = gemm_variants,
	.setup = gemm_setup,
	.run = gemm_run,
	.teardown = gemm_teardown,
};
