/* The exact-class kernels and models under minitrain: bit-exactness, the contraction canary,
 * ATTNChecker's detection and location, and the golden file's self-check. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "probe/golden_file.h"
#include "probes/minitrain/attn_check.h"
#include "kernels/exact_gemm.h"
#include "probes/minitrain/model.h"
#include "base/rng.h"

static void fill(float *x, int n, uint32_t seed)
{
	for (int i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		x[i] = (float)((int)(seed >> 8) - (1 << 23)) * 0x1p-23f;
	}
}

/* Built with -ffp-contract=off, a * b + c is two roundings even where the FMA unit is enabled. */
static void test_contract_canary(void)
{
	const float a = 1.0f + 0x1p-23f, c = -(1.0f + 0x1p-22f);
	/* exact a*a = 1 + 2^-22 + 2^-46: rounded first it cancels c to 0; fused it leaves 2^-46 */
	CHECK(fmaf(a, a, c) == 0x1p-46f);
	CHECK_MSG(sdc_xcontract_canary(a, a, c) == 0.0f,
		  "the exact kernels were built with FMA contraction: -ffp-contract=off was lost");
}

static void test_xgemm_equals_plain(void)
{
	const int shapes[][3] = { { 1, 1, 1 }, { 4, 32, 8 }, { 7, 45, 33 }, { 64, 64, 64 }, { 130, 97, 5 }, { 3, 200, 129 } };
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		const int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
		float *a = malloc(sizeof(float) * m * k), *b = malloc(sizeof(float) * k * n);
		float *c1 = malloc(sizeof(float) * m * n), *c2 = malloc(sizeof(float) * m * n);
		fill(a, m * k, 1 + (uint32_t)s), fill(b, k * n, 100 + (uint32_t)s);
		sdc_xgemm(m, n, k, a, k, b, n, c1, n);
		sdc_xgemm_plain(m, n, k, a, k, b, n, c2, n);
		CHECK_MSG(!memcmp(c1, c2, sizeof(float) * m * n), "tiled != plain at %dx%dx%d", m, n, k);
		free(a), free(b), free(c1), free(c2);
	}
	/* A hand-checked case: the order k = 0, 1, 2 matters: (1e8 + 1) - 1e8 = 0 in fp32, not 1. */
	const float a[3] = { 1e8f, 1.0f, -1e8f }, b[3] = { 1.0f, 1.0f, 1.0f };
	float c;
	sdc_xgemm(1, 1, 3, a, 3, b, 1, &c, 1);
	CHECK(c == 0.0f);
}

static void test_attn_check(void)
{
	const int m = 48, n = 40, k = 24;
	float *a = malloc(sizeof(float) * m * k), *b = malloc(sizeof(float) * k * n), *c = malloc(sizeof(float) * m * n);
	double scratch[4 * (48 + 40)];
	struct sdc_attn_event ev[4];
	int clean_fail = 0;
	for (int trial = 0; trial < 200; trial++) {
		fill(a, m * k, 7 + (uint32_t)trial), fill(b, k * n, 900 + (uint32_t)trial);
		sdc_xgemm(m, n, k, a, k, b, n, c, n);
		clean_fail += sdc_attn_check(m, n, k, a, k, b, n, c, n, scratch, ev, 4);
	}
	CHECK_MSG(clean_fail == 0, "%d false alarms on clean GEMMs", clean_fail);
	const struct { float v; enum sdc_attn_kind kind; int row, col; } cases[] = {
		{ INFINITY, SDC_ATTN_INF, 5, 7 },       { NAN, SDC_ATTN_NAN, 47, 0 },
		{ 3e30f, SDC_ATTN_NEAR_INF, 0, 39 },    { -2e12f, SDC_ATTN_NEAR_INF, 20, 20 },
		{ 0.0f, SDC_ATTN_VALUE, 11, 3 }, /* value replaced by 0: a silent change */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sdc_xgemm(m, n, k, a, k, b, n, c, n);
		const float right = c[cases[i].row * n + cases[i].col];
		c[cases[i].row * n + cases[i].col] = cases[i].v;
		const int bad = sdc_attn_check(m, n, k, a, k, b, n, c, n, scratch, ev, 4);
		CHECK_MSG(bad == 1, "case %zu: %d columns failed", i, bad);
		CHECK_MSG(ev[0].row == cases[i].row && ev[0].col == cases[i].col, "case %zu located at [%d][%d]", i, ev[0].row,
			  ev[0].col);
		CHECK_MSG(ev[0].kind == cases[i].kind, "case %zu: kind %s", i, sdc_attn_kind_name(ev[0].kind));
		CHECK_MSG(!memcmp(&ev[0].recomputed, &right, 4), "case %zu: recomputed value is not the kernel's", i);
	}
	/*
	 * Sensitivity: a change of three times the rigorous bound, (k + 2) u sum |a||b| over the
	 * column (sums computed here, in double), must be found: the kernel's own rounding is below
	 * (k + 1) u of that sum, so the checksum differs by more than twice the bound. (A check ten
	 * times looser misses it.)
	 */
	int missed = 0;
	for (int j = 0; j < n; j += 3) {
		sdc_xgemm(m, n, k, a, k, b, n, c, n);
		double s = 0;
		for (int i = 0; i < m; i++)
			for (int p = 0; p < k; p++)
				s += fabs((double)a[i * k + p]) * fabs((double)b[p * n + j]);
		const int i = (j * 7) % m;
		const float was = c[i * n + j];
		c[i * n + j] = (float)(was + 3.0 * (k + 2) * 0x1p-24 * s);
		CHECK(fabs((double)c[i * n + j] - was) >= 2.99 * (k + 2) * 0x1p-24 * s);
		const int bad = sdc_attn_check(m, n, k, a, k, b, n, c, n, scratch, ev, 4);
		missed += bad != 1 || ev[0].col != j;
	}
	CHECK_MSG(missed == 0, "%d changes of 3x the rounding bound not found at their column", missed);
	free(a), free(b), free(c);
}

/* Both models, tiled vs plain kernel, a few steps: every tensor bit for bit; the loss finite. */
static void test_models_tiled_equals_plain(void)
{
	const struct sdc_mt_cfg cfgs[] = {
		{ .kind = SDC_MT_DLRM, .seed = 3, .batch = 16, .dense = 16, .bottom = 24, .emb_dim = 8, .tables = 3,
		  .rows = 64, .pooling = 3, .top = 20 },
		{ .kind = SDC_MT_XFMR, .seed = 3, .batch = 2, .seq = 8, .dmodel = 16, .heads = 2, .dff = 24 },
	};
	for (int i = 0; i < 2; i++) {
		char err[128];
		struct sdc_mt_model *a = sdc_mt_create(&cfgs[i], sdc_xgemm, err, sizeof(err));
		struct sdc_mt_model *b = sdc_mt_create(&cfgs[i], sdc_xgemm_plain, err, sizeof(err));
		CHECK(a && b);
		if (!a || !b)
			return;
		float first = 0, last = 0;
		for (int s = 0; s < 30; s++) {
			const float la = sdc_mt_step(a, s, NULL), lb = sdc_mt_step(b, s, NULL);
			CHECK_MSG(!memcmp(&la, &lb, 4) && isfinite(la), "%s step %d loss %g vs %g",
				  sdc_mt_kind_name(cfgs[i].kind), s, (double)la, (double)lb);
			if (!s)
				first = la;
			last = la;
		}
		/* The transformer learns its copy task within 30 steps; the DLRM needs hundreds. */
		CHECK_MSG(cfgs[i].kind == SDC_MT_DLRM || last < first, "%s does not learn: loss %g -> %g", sdc_mt_kind_name(cfgs[i].kind), (double)first,
			  (double)last);
		struct sdc_mt_tensor *ta, *tb;
		const int n = sdc_mt_tensors(a, &ta);
		sdc_mt_tensors(b, &tb);
		for (int t = 0; t < n; t++)
			CHECK_MSG(!memcmp(ta[t].data, tb[t].data, sdc_mt_numel(&ta[t]) * 4), "%s differs", ta[t].name);
		/* reset gives step 0 again */
		sdc_mt_reset(a);
		const float l0 = sdc_mt_step(a, 0, NULL);
		CHECK_MSG(!memcmp(&l0, &first, 4), "reset does not return to step 0");
		sdc_mt_free(a), sdc_mt_free(b);
	}
}

static void test_golden_self_check(void)
{
	static const char good[] =
		"{\"format\":\"sdcscan-golden\",\"version\":1,\"entries\":[{\"key\":{\"probe\":\"gemm\",\"variant\":"
		"\"int8\",\"class\":\"exact\",\"seed\":\"1\",\"options\":{}},\"result\":{\"work_digest\":"
		"\"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\",\"iterations\":16}}]";
	/* sha256 of the canonical form, computed independently: python3 -c 'import json,hashlib;...' */
	char text[1024], err[512];
	struct sdc_golden g;
	snprintf(text, sizeof(text), "%s,\"sha256\":\"%s\"}", good,
		 "8a9c3c8f29d3d5ad8e3d2a4c0f0cfd7d3f5e1b3d3c6c3a4e3f0e7a0a6c2b1d4e");
	CHECK_MSG(sdc_golden_parse(text, strlen(text), "t", &g, err, sizeof(err)) != 0 && strstr(err, "sha256 mismatch"),
		  "a wrong sha256 was accepted: %s", err);
	snprintf(text, sizeof(text), "%s}", good);
	CHECK(sdc_golden_parse(text, strlen(text), "t", &g, err, sizeof(err)) != 0 && strstr(err, "no \"sha256\""));
	CHECK(sdc_golden_parse("{\"format\":", 10, "t", &g, err, sizeof(err)) != 0 && strstr(err, "not a golden file"));
	/* The right digest (python3: hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(',', ':')))). */
	snprintf(text, sizeof(text), "%s,\"sha256\":\"%s\"}", good,
		 "736950c9df7c30d951d6f6d98797fe22c78bf5bf77640e0bbcc46ade50f90c89");
	CHECK_MSG(sdc_golden_parse(text, strlen(text), "t", &g, err, sizeof(err)) == 0, "a good file was refused: %s", err);
	if (!check_failures) {
		CHECK(g.n == 1 && !strcmp(g.entries[0].probe, "gemm") && g.entries[0].iterations == 16);
		sdc_golden_free(&g);
	}
}

int main(void)
{
	test_contract_canary();
	test_xgemm_equals_plain();
	test_attn_check();
	test_models_tiled_equals_plain();
	test_golden_self_check();
	return check_done("minitrain");
}
