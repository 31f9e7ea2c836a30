/*
 * EmbeddingBag: binary16 conversion against the F16C instructions, CRC32C against its published
 * check values, every kernel against an independent exact computation and against each other
 * bit for bit, the expectation identity, detection and location of every single-bit flip of a
 * row, and the sweep's test of rows at rest.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/crc32c.h"
#include "probes/embbag/kernel.h"
#include "kernels/half.h"
#include "probes/embbag/abft.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <cpuid.h>
__attribute__((target("f16c"))) static float hw_half_to_float(uint16_t h)
{
	return _cvtsh_ss(h);
}
__attribute__((target("f16c"))) static uint16_t hw_float_to_half(float f)
{
	return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}
static int have_f16c(void)
{
	unsigned a, b, c, d; /* clang's __builtin_cpu_supports has no "f16c" */
	return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#else
static int have_f16c(void)
{
	return 0;
}
#define hw_half_to_float sdc_half_to_float
#define hw_float_to_half sdc_float_to_half
#endif

static uint32_t bits_of(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static void test_half(void)
{
	/* Known values (IEEE 754-2008 binary16). */
	CHECK(sdc_half_to_float(0x3C00) == 1.0f);
	CHECK(sdc_half_to_float(0xC000) == -2.0f);
	CHECK(sdc_half_to_float(0x7BFF) == 65504.0f);
	CHECK(sdc_half_to_float(0x0001) == 0x1p-24f);
	CHECK(sdc_half_to_float(0x0400) == 0x1p-14f);
	CHECK(isinf(sdc_half_to_float(0x7C00)));
	CHECK(sdc_float_to_half(1.0f) == 0x3C00);
	CHECK(sdc_float_to_half(65520.0f) == 0x7C00);  /* halfway to 2^16: ties to even = INF */
	CHECK(sdc_float_to_half(65519.0f) == 0x7BFF);
	CHECK(sdc_float_to_half(0x1p-25f) == 0x0000);  /* tie between 0 and the smallest subnormal */
	CHECK(sdc_float_to_half(0x1.8p-25f) == 0x0001);
	CHECK(sdc_float_to_half(1.0f + 0x1p-11f) == 0x3C00); /* tie: to even */
	CHECK(sdc_float_to_half(1.0f + 0x1.8p-11f) == 0x3C01);
	int bad = 0;
	for (uint32_t h = 0; h < 65536; h++) {
		const float f = sdc_half_to_float((uint16_t)h);
		if (!isnan(f) && sdc_float_to_half(f) != h)
			bad++; /* every non-NaN half round-trips */
		if (have_f16c() && bits_of(f) != bits_of(hw_half_to_float((uint16_t)h)))
			bad++;
	}
	CHECK_MSG(bad == 0, "%d binary16 values convert wrongly", bad);
	if (have_f16c()) {
		/* Rounding of arbitrary floats, against vcvtps2ph. */
		uint64_t x = 0x9E3779B97F4A7C15ull;
		bad = 0;
		for (int i = 0; i < 2000000; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			uint32_t u = (uint32_t)x;
			float f;
			memcpy(&f, &u, 4);
			if (isnan(f))
				continue;
			if (sdc_float_to_half(f) != hw_float_to_half(f))
				bad++;
		}
		CHECK_MSG(bad == 0, "%d floats round to binary16 unlike F16C", bad);
	}
}

static void test_crc32c(void)
{
	/* The CRC catalogue's check value, and RFC 3720 B.4's test vectors. */
	CHECK(sdc_crc32c(0, "123456789", 9) == 0xE3069283u);
	CHECK(sdc_crc32c_portable(0, "123456789", 9) == 0xE3069283u);
	uint8_t buf[32];
	memset(buf, 0, 32);
	CHECK(sdc_crc32c(0, buf, 32) == 0x8A9136AAu);
	memset(buf, 0xFF, 32);
	CHECK(sdc_crc32c(0, buf, 32) == 0x62A8AB43u);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	CHECK(sdc_crc32c(0, buf, 32) == 0x46DD794Eu);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)(31 - i);
	CHECK(sdc_crc32c(0, buf, 32) == 0x113FDB5Cu);
	/* Both paths agree at every length and alignment, and continue across pieces. */
	uint8_t data[300];
	for (int i = 0; i < 300; i++)
		data[i] = (uint8_t)(i * 37 + 11);
	for (int off = 0; off < 8; off++)
		for (int len = 0; len + off <= 300; len += 7) {
			const uint32_t a = sdc_crc32c(0, data + off, (size_t)len);
			CHECK(a == sdc_crc32c_portable(0, data + off, (size_t)len));
			CHECK(a == sdc_crc32c(sdc_crc32c(0, data + off, (size_t)len / 2), data + off + len / 2,
					      (size_t)(len - len / 2)));
		}
	/* Long buffers take the three-stream path (3 x 4096-byte rounds): the same answers. */
	enum { LONG = 5 * 12288 + 777 };
	uint8_t *big = malloc(LONG);
	CHECK(big != NULL);
	uint64_t x = 0x9E3779B97F4A7C15ull;
	for (int i = 0; i < LONG; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		big[i] = (uint8_t)(x >> 56);
	}
	for (int len = 12280; len <= LONG; len += 4093)
		for (int off = 0; off < 3; off++) {
			const uint32_t a = sdc_crc32c(0x1234567u, big + off, (size_t)(len - off));
			CHECK(a == sdc_crc32c_portable(0x1234567u, big + off, (size_t)(len - off)));
		}
	free(big);
}

/* A bag's exact output in units of 1/16, from the true rows, independently of any kernel. */
static void exact_reference(const struct sdc_eb_table *t, const struct sdc_eb_bag *g, int64_t *units)
{
	const struct sdc_eb_layout *l = &t->l;
	uint8_t row[SDC_EB_DMAX + 16];
	memset(units, 0, sizeof(int64_t) * (size_t)l->d);
	for (int r = 0; r < g->len; r++) {
		sdc_eb_truth_row(t, g->idx[r], row);
		float scale, bias;
		sdc_eb_row_params(l, row, &scale, &bias);
		const int64_t w = g->w ? (int64_t)g->w[r] : 1, a16 = (int64_t)(scale * 16), b16 = (int64_t)(bias * 16);
		for (int j = 0; j < l->d; j++)
			units[j] += w * (a16 * sdc_eb_row_q(l, row, j) + b16);
	}
}

static void test_kernels(enum sdc_eb_format fmt, enum sdc_eb_class cls, int d)
{
	const struct sdc_eb_cfg cfg = { .fmt = fmt, .cls = cls, .d = d, .rows = 4096, .batch = 10, .pooling = 100,
					.seed = 7, .c_sigma = SDC_EB_C_SIGMA };
	struct sdc_eb_table t;
	struct sdc_eb_batch b;
	char err[256];
	if (sdc_eb_table_alloc(&t, &cfg, true, err, sizeof(err)) || sdc_eb_batch_alloc(&b, &cfg)) {
		CHECK_MSG(0, "%s", err);
		return;
	}
	sdc_eb_table_fill(&t, 0, cfg.rows);
	float ref[SDC_EB_DMAX], out[SDC_EB_DMAX];
	int64_t units[SDC_EB_DMAX];
	for (uint64_t bi = 0; bi < 6; bi++) { /* even batches sum, odd ones weigh */
		sdc_eb_batch_draw(&b, &cfg, bi);
		for (int bag = 0; bag < b.nbags; bag++) {
			const struct sdc_eb_bag g = sdc_eb_batch_bag(&b, bag);
			struct sdc_eb_expect e0, e;
			sdc_eb_bag_portable(&t.l, t.data, &g, ref, &e0, SDC_EB_SUMS_STATS);
			if (cls == SDC_EB_EXACT) {
				exact_reference(&t, &g, units);
				int off = 0;
				for (int j = 0; j < d; j++)
					off += (double)units[j] / 16 != (double)ref[j];
				CHECK_MSG(off == 0, "%d-bit d=%d: %d elements differ from the exact reference",
					  fmt == SDC_EB_8BIT ? 8 : 4, d, off);
			}
			for (const struct sdc_eb_impl *k = sdc_eb_impls; k->name; k++) {
				if (!k->supported())
					continue;
				for (int sums = 0; sums < 3; sums++) {
					memset(&e, 0xAB, sizeof(e));
					k->bag(&t.l, t.data, &g, out, &e, (enum sdc_eb_sums)sums);
					CHECK_MSG(!memcmp(out, ref, sizeof(float) * (size_t)d),
						  "kernel %s differs from the portable one (d=%d)", k->name, d);
					if (sums == SDC_EB_NO_SUMS)
						continue;
					/* Exact class: the expectation is exact whatever the order of its sums. */
					if (cls == SDC_EB_EXACT)
						CHECK_MSG(e.c == e0.c && e.w == e0.w, "kernel %s: expectation %.17g %.17g vs %.17g %.17g",
							  k->name, e.c, e.w, e0.c, e0.w);
					else
						CHECK_MSG(fabs(e.c - e0.c) <= 1e-9 * (fabs(e0.c) + 1) &&
								  fabs(e.w - e0.w) <= 1e-9 * (fabs(e0.w) + 1),
							  "kernel %s: expectation off", k->name);
					if (sums == SDC_EB_SUMS_STATS)
						CHECK_MSG(fabs(e.sq_t - e0.sq_t) <= 1e-5 * e0.sq_t && fabs(e.s2c - e0.s2c) <= 1e-9 * e0.s2c,
							  "kernel %s: statistics %g %g vs %g %g", k->name, e.sq_t, e.s2c, e0.sq_t,
							  e0.s2c);
				}
				struct sdc_eb_out_sums os, os0;
				k->out_sums(ref, d, &os);
				sdc_eb_out_sums_portable(ref, d, &os0);
				CHECK(os.negzero == os0.negzero);
				CHECK(fabs(os.c - os0.c) <= 1e-12 * (fabs(os0.c) + 1));
			}
			/* The identity holds on a clean bag, and the reference recomputes it bit for bit. */
			struct sdc_eb_out_sums os;
			struct sdc_eb_verdict v;
			sdc_eb_out_sums_portable(ref, d, &os);
			CHECK_MSG(!sdc_eb_check(&cfg, &t.l, &os, &e0, &v), "clean bag fails: dc %g dw %g tc %g tw %g", v.dc,
				  v.dw, v.tc, v.tw);
			uint8_t scratch[SDC_EB_MAX_BAG_LEN * (SDC_EB_DMAX + 20)];
			float again[SDC_EB_DMAX];
			sdc_eb_reference(&t, &g, scratch, again);
			CHECK(!memcmp(again, ref, sizeof(float) * (size_t)d));
		}
	}
	sdc_eb_batch_release(&b);
	sdc_eb_table_release(&t);
}

/*
 * Every bit of every quantised value of one row, flipped in the table: the bag that reads it
 * fails its check and (exact class, or any fast-class flip well above rounding) the weighted sum
 * names the column. Then every bit of every byte of the row at rest fails the sweep's test.
 */
static void test_flips(enum sdc_eb_format fmt, enum sdc_eb_class cls, int d)
{
	const struct sdc_eb_cfg cfg = { .fmt = fmt, .cls = cls, .d = d, .rows = 2048, .batch = 1, .pooling = 100,
					.seed = 3, .c_sigma = SDC_EB_C_SIGMA };
	struct sdc_eb_table t;
	struct sdc_eb_batch b;
	char err[256];
	if (sdc_eb_table_alloc(&t, &cfg, true, err, sizeof(err)) || sdc_eb_batch_alloc(&b, &cfg)) {
		CHECK_MSG(0, "%s", err);
		return;
	}
	sdc_eb_table_fill(&t, 0, cfg.rows);
	sdc_eb_batch_draw(&b, &cfg, 1); /* weighted */
	const struct sdc_eb_bag g = sdc_eb_batch_bag(&b, 0);
	const struct sdc_eb_impl *k = sdc_eb_find("auto");
	const uint64_t row = g.idx[g.len / 2];
	uint8_t *p = sdc_eb_row(&t, row);
	const int qbits = fmt == SDC_EB_8BIT ? 8 : 4;
	int missed = 0, mislocated = 0, flips = 0;
	float out[SDC_EB_DMAX];
	for (int j = 0; j < d; j++)
		for (int bit = 0; bit < qbits; bit++) {
			int nb;
			const int64_t before = sdc_eb_element(&t.l, p, j, &nb);
			sdc_eb_element_set(&t.l, p, j, (uint64_t)before ^ (1u << bit));
			struct sdc_eb_expect e;
			struct sdc_eb_out_sums os;
			struct sdc_eb_verdict v;
			k->bag(&t.l, t.data, &g, out, &e, cls == SDC_EB_FAST ? SDC_EB_SUMS_STATS : SDC_EB_SUMS);
			k->out_sums(out, d, &os);
			flips++;
			if (!sdc_eb_check(&cfg, &t.l, &os, &e, &v))
				missed++;
			else if (v.col != j && (cls == SDC_EB_EXACT || fabs(v.dc) > v.tw))
				/* fast class: the weighted sum's rounding is ~d times the plain one's, so its
				 * ratio to the plain difference names the column once that exceeds it */
				mislocated++;
			CHECK(!sdc_eb_row_intact(&t, row));
			sdc_eb_element_set(&t.l, p, j, (uint64_t)before);
			CHECK(sdc_eb_row_intact(&t, row));
		}
	/*
	 * Exact: every flip found and located. Fast: every flip found (bit 0 moves the sum by w a, above
	 * the threshold at pooling 100), and located when well above the weighted sum's threshold.
	 */
	CHECK_MSG(missed == 0 && mislocated == 0, "%d-bit %s d=%d: %d of %d flips missed, %d mislocated", qbits,
		  cls == SDC_EB_FAST ? "fast" : "exact", d, missed, flips, mislocated);
	/* At rest: every bit of the row, scale, bias and stored sums included. */
	int undetected = 0;
	for (size_t byte = 0; byte < t.l.stride; byte++)
		for (int bit = 0; bit < 8; bit++) {
			p[byte] ^= (uint8_t)(1u << bit);
			undetected += sdc_eb_row_intact(&t, row);
			p[byte] ^= (uint8_t)(1u << bit);
		}
	CHECK_MSG(undetected == 0, "%d single-bit flips of a row at rest pass the sweep", undetected);
	/* Repair from the truth. */
	p[3] ^= 0x10;
	sdc_eb_row_repair(&t, row);
	CHECK(sdc_eb_row_intact(&t, row));
	sdc_eb_batch_release(&b);
	sdc_eb_table_release(&t);
}

/* Output flips: exact class, every bit of every element (a -0.0 included) fails the check. */
static void test_output_flips(enum sdc_eb_format fmt)
{
	const struct sdc_eb_cfg cfg = { .fmt = fmt, .cls = SDC_EB_EXACT, .d = 32, .rows = 2048, .batch = 1,
					.pooling = 20, .seed = 5 };
	struct sdc_eb_table t;
	struct sdc_eb_batch b;
	char err[256];
	if (sdc_eb_table_alloc(&t, &cfg, true, err, sizeof(err)) || sdc_eb_batch_alloc(&b, &cfg)) {
		CHECK_MSG(0, "%s", err);
		return;
	}
	sdc_eb_table_fill(&t, 0, cfg.rows);
	sdc_eb_batch_draw(&b, &cfg, 0);
	const struct sdc_eb_bag g = sdc_eb_batch_bag(&b, 0);
	float out[32];
	struct sdc_eb_expect e;
	sdc_eb_bag_portable(&t.l, t.data, &g, out, &e, SDC_EB_SUMS);
	int missed = 0;
	for (int j = 0; j < 32; j++)
		for (int bit = 0; bit < 32; bit++) {
			float saved = out[j];
			uint32_t u = bits_of(out[j]) ^ (1u << bit);
			memcpy(&out[j], &u, 4);
			struct sdc_eb_out_sums os;
			struct sdc_eb_verdict v;
			sdc_eb_out_sums_portable(out, 32, &os);
			missed += !sdc_eb_check(&cfg, &t.l, &os, &e, &v);
			out[j] = saved;
		}
	CHECK_MSG(missed == 0, "%d of 1024 output flips pass the exact check", missed);
	/* A zero output's sign flip is the one a sum cannot see: -0.0 is rejected by itself. */
	const float z = -0.0f;
	float zeros[32] = { 0 };
	zeros[5] = z;
	struct sdc_eb_out_sums os;
	sdc_eb_out_sums_portable(zeros, 32, &os);
	CHECK(os.negzero);
	sdc_eb_batch_release(&b);
	sdc_eb_table_release(&t);
}

/* Element accessors round-trip, and the 4-bit trailer packs its sums without overlap. */
static void test_elements(void)
{
	for (int f = 0; f < 2; f++) {
		struct sdc_eb_layout l;
		CHECK(sdc_eb_layout_init(&l, (enum sdc_eb_format)f, 48, true) == 0);
		CHECK(sdc_eb_layout_init(&l, (enum sdc_eb_format)f, 40, true) != 0);
		CHECK(sdc_eb_layout_init(&l, (enum sdc_eb_format)f, 272, true) != 0);
		sdc_eb_layout_init(&l, (enum sdc_eb_format)f, 256, true);
		uint8_t row[300] = { 0 };
		for (int col = 0; col <= SDC_EB_COL_WSUM(&l); col++) {
			int bits;
			sdc_eb_element(&l, row, col, &bits);
			const uint64_t v = (1ull << bits) - 1;
			sdc_eb_element_set(&l, row, col, v);
			CHECK(sdc_eb_element(&l, row, col, &bits) == (int64_t)v);
			for (int other = 0; other <= SDC_EB_COL_WSUM(&l); other++) {
				int ob;
				if (other != col)
					CHECK_MSG(sdc_eb_element(&l, row, other, &ob) == 0, "col %d spills into %d", col, other);
			}
			sdc_eb_element_set(&l, row, col, 0);
		}
		/* Largest sums of a d = 256 row fit their fields. */
		memset(row, 0xFF, l.data);
		int32_t c, w, sc, sw;
		sdc_eb_row_sums(&l, row, &c, &w);
		sdc_eb_row_put_sums(&l, row, c, w);
		sdc_eb_row_stored_sums(&l, row, &sc, &sw);
		CHECK(c == sc && w == sw);
		CHECK(c == l.qmax * 256 && w == l.qmax * 256 * 257 / 2);
	}
}

/*
 * The fast-class threshold on a hand-worked bag: d = 16 (so the kernels' 16 measured columns are
 * all of them), one 8-bit row, scale 1/2, bias 1/4, every value 2, sum pooling.
 *   t = 0 + 1/4 per element: Q_t = 16/16 = 1; C_T = 32, W_T = 2 * 136 = 272; S^2 C_T = 8
 *   Q = (d + 2) Q_t + 2 qmax S^2 C_T = 18 + 2 * 255 * 8 = 4098; no weights: P_c = P_w = 0
 *   expectation: sum = 1/2 * 32 + 1/4 * 16 = 20, weighted = 1/2 * 272 + 1/4 * 136 = 170
 *   T_sum = 6 sqrt(2^-48 / 3 * 4098) + 2^-40 (16 sqrt(4098) + 20)
 *   T_weighted = 6 sqrt(2^-48 / 3 * 4098 * 17 * 33 / 6) + 2^-40 (16 * 16 sqrt(4098) + 170)
 */
static void test_threshold_by_hand(void)
{
	struct sdc_eb_layout l;
	sdc_eb_layout_init(&l, SDC_EB_8BIT, 16, true);
	uint8_t row[16 + 16];
	memset(row, 2, 16);
	const float scale = 0.5f, bias = 0.25f;
	memcpy(row + 16, &scale, 4);
	memcpy(row + 20, &bias, 4);
	int32_t c, w;
	sdc_eb_row_sums(&l, row, &c, &w);
	CHECK(c == 32 && w == 272);
	sdc_eb_row_put_sums(&l, row, c, w);
	const uint32_t idx = 0;
	const struct sdc_eb_bag g = { &idx, NULL, 1, 1 };
	const struct sdc_eb_cfg cfg = { .fmt = SDC_EB_8BIT, .cls = SDC_EB_FAST, .d = 16, .c_sigma = 6 };
	for (const struct sdc_eb_impl *k = sdc_eb_impls; k->name; k++) {
		if (!k->supported())
			continue;
		float out[16];
		struct sdc_eb_expect e;
		k->bag(&l, row, &g, out, &e, SDC_EB_SUMS_STATS);
		CHECK(out[0] == 1.25f && out[15] == 1.25f);
		CHECK_MSG(e.sq_t == 1.0 && e.s2c == 8.0 && e.c == 20.0 && e.w == 170.0 && e.pc == 0 && e.pw == 0,
			  "%s: sq_t %g s2c %g c %g w %g", k->name, e.sq_t, e.s2c, e.c, e.w);
		struct sdc_eb_out_sums os;
		struct sdc_eb_verdict v;
		k->out_sums(out, 16, &os);
		CHECK(!sdc_eb_check(&cfg, &l, &os, &e, &v) && v.dc == 0 && v.dw == 0);
		const double tc = 6 * sqrt(0x1p-48 / 3 * 4098) + 0x1p-40 * (16 * sqrt(4098.0) + 20);
		const double tw = 6 * sqrt(0x1p-48 / 3 * 4098 * 17 * 33 / 6) + 0x1p-40 * (16 * 16 * sqrt(4098.0) + 170);
		CHECK_MSG(fabs(v.tc - tc) <= 1e-12 * tc && fabs(v.tw - tw) <= 1e-12 * tw, "%s: thresholds %.9g %.9g, by hand %.9g %.9g",
			  k->name, v.tc, v.tw, tc, tw);
	}
}

int main(void)
{
	test_threshold_by_hand();
	test_half();
	test_crc32c();
	test_elements();
	static const int dims[] = { 32, 64, 128, 256 };
	for (int f = 0; f < 2; f++)
		for (int c = 0; c < 2; c++)
			for (int i = 0; i < 4; i++) {
				test_kernels((enum sdc_eb_format)f, (enum sdc_eb_class)c, dims[i]);
				test_flips((enum sdc_eb_format)f, (enum sdc_eb_class)c, dims[i]);
			}
	test_output_flips(SDC_EB_8BIT);
	test_output_flips(SDC_EB_4BIT);
	return check_done("embbag");
}
