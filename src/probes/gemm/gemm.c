/*
 * gemm: an ABFT-checked GEMM burn on every selected CPU core (the engine: probes/gemm/abft.h).
 *
 * Variants (option dtypes):
 *   int8, fp32       exact class: small-integer operands, checksum digit columns compared by
 *                    equality; a single bad element is located by the weighted checksum.
 *   fp32-fast,       fast class: full-mantissa data from four distributions at full library
 *   fp64-fast        speed, each row checked against its V-ABFT threshold.
 * Every iteration the operands at rest are re-verified against their digests (a flip in A or B
 * memory is named by element, from the regenerated truth), and every core burns the same
 * seeded stream, so each iteration's result digest is voted on across cores.
 */
#include <inttypes.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/gemm/calibration.h"
#include "base/digest.h"
#include "base/macros.h"
#include "probe/probe.h"
#include "inject/fatal.h"
#include "probes/gemm/abft.h"
#include "probes/gemm/gemm.h"
#include "device/gpu_loader.h"
#include "base/message.h"

static const char *const int8_kernels[] = { "auto", "portable", "avx2", "avx512bw", "avx512vnni", NULL };
static const char *const float_kernels[] = { "auto", "portable", "openblas", NULL };
static const char *const gpu_data_names[] = { "random", "extreme", NULL };
/* The burn's distributions: sdc_dist_names without the calibration-only |N(1,1)|. */
static const char *const burn_dists[] = { "normal", "normal1", "uniform", "truncnormal", NULL };


#define OPT(f) offsetof(struct gemm_opts, f)
static const struct sdc_option gemm_options[] = {
	{ .name = "dtypes", .neutral = true, .type = SDC_OPT_SET, .offset = OPT(dtypes), .def = "int8,fp32,fp32-fast,fp64-fast",
	  .help = "variants to burn: int8 and fp32 (exact class), fp32-fast and fp64-fast (V-ABFT)",
	  .choices = sdc_gemm_class_names },
	{ .name = "m", .type = SDC_OPT_INT, .offset = OPT(m), .def = "256", .help = "rows of A and C",
	  .imin = 1, .imax = 16384 },
	{ .name = "n", .type = SDC_OPT_INT, .offset = OPT(n), .def = "256", .help = "columns of B and C",
	  .imin = 1, .imax = 16384 },
	{ .name = "k", .type = SDC_OPT_INT, .offset = OPT(k), .def = "1024",
	  .help = "inner dimension (exact fp32 operands shrink to keep k * |a| * |b| <= 2^24)", .imin = 4,
	  .imax = 65536 },
	{ .name = "refresh", .type = SDC_OPT_INT, .offset = OPT(refresh), .def = "8",
	  .help = "iterations that reuse one operand set before new data is drawn", .imin = 1,
	  .imax = 1 << 20 },
	{ .name = "int8_kernel", .neutral = true, .type = SDC_OPT_ENUM, .offset = OPT(int8_kernel), .def = "auto",
	  .help = "int8 kernel (auto: the fastest this CPU supports)", .choices = int8_kernels },
	{ .name = "float_kernel", .type = SDC_OPT_ENUM, .offset = OPT(float_kernel), .def = "auto",
	  .help = "fp32/fp64 kernel (auto: OpenBLAS when built with it)", .choices = float_kernels },
	{ .name = "distributions", .type = SDC_OPT_SET, .offset = OPT(distributions),
	  .def = "normal,normal1,uniform,truncnormal",
	  .help = "fast-class data, rotating by operand set: N(1e-6,1), N(1,1), U(-1,1), N(0,1) in [-1,1]",
	  .choices = burn_dists },
	{ .name = "c_sigma", .neutral = true, .type = SDC_OPT_DOUBLE, .offset = OPT(c_sigma), .def = "2.5",
	  .help = "V-ABFT confidence multiplier c_sigma", .dmin = 1, .dmax = 10 },
	{ .name = "calibration", .neutral = true, .type = SDC_OPT_STRING, .offset = OPT(calibration), .def = "",
	  .help = "e_max calibration file (empty: $SDCSCAN_CALIBRATION or " SDC_CALIBRATION_PATH
		  " if present, else V-ABFT Table 7)" },
	{ .name = "int8_floor", .neutral = true, .type = SDC_OPT_DOUBLE, .offset = OPT(int8_floor), .def = "0",
	  .help = "per-core int8 throughput below which the core is WARNING (0: no floor)", .dmin = 0,
	  .dmax = 1e6, .unit = "GOP/s" },
	{ .name = "fp32_floor", .neutral = true, .type = SDC_OPT_DOUBLE, .offset = OPT(fp32_floor), .def = "0",
	  .help = "per-core exact fp32 floor (0: none)", .dmin = 0, .dmax = 1e6, .unit = "GFLOP/s" },
	{ .name = "fp32_fast_floor", .neutral = true, .type = SDC_OPT_DOUBLE, .offset = OPT(fp32_fast_floor), .def = "0",
	  .help = "per-core fp32-fast floor (0: none)", .dmin = 0, .dmax = 1e6, .unit = "GFLOP/s" },
	{ .name = "fp64_fast_floor", .neutral = true, .type = SDC_OPT_DOUBLE, .offset = OPT(fp64_fast_floor), .def = "0",
	  .help = "per-core fp64-fast floor (0: none)", .dmin = 0, .dmax = 1e6, .unit = "GFLOP/s" },
	/* The GPU burn's options are left out of golden keys (neutral): goldens are recorded on a CPU, and
	 * a CPU variant's results do not depend on them. */
	{ .name = "gpu_dtypes", .neutral = true, .type = SDC_OPT_SET, .offset = OPT(gpu_dtypes),
	  .def = "int8,bf16,fp16,fp32-fast,tf32-fast,bf16-fast",
	  .help = "GPU burn variants (gpu-NAME): int8, fp32, bf16, fp16 exact on small integers; fp32-fast, "
		  "tf32-fast, bf16-fast with V-ABFT thresholds. On a host without GPUs they do not run",
	  .choices = sdc_gemm_gpu_type_names },
	{ .name = "gpu_m", .neutral = true, .type = SDC_OPT_INT, .offset = OPT(gpu_m), .def = "4096", .help = "GPU burn: rows of A and C",
	  .imin = 16, .imax = 32768 },
	{ .name = "gpu_n", .neutral = true, .type = SDC_OPT_INT, .offset = OPT(gpu_n), .def = "4096", .help = "GPU burn: columns of B and C",
	  .imin = 16, .imax = 32768 },
	/* Deep: the row check re-reads C (m n words) after a product of m n k, so its share shrinks with k;
	 * at 32768 the checked GEMM is 96% of plain and more by the roofline on H100 SXM, H100 PCIe and
	 * H200 for every type (bench overhead --gpus prints it), at 4096 int8's is 77% on H100 SXM. */
	{ .name = "gpu_k", .neutral = true, .type = SDC_OPT_INT, .offset = OPT(gpu_k), .def = "32768",
	  .help = "GPU burn: inner dimension (deep, so checking costs under 5% by the roofline; exact bf16/fp16 data "
		  "shrink to keep every sum below 2^22)",
	  .imin = 16, .imax = 32768 },
	{ .name = "gpu_refresh", .neutral = true, .type = SDC_OPT_INT, .offset = OPT(gpu_refresh),
	  .def = SDC_XSTR(SDC_GEMM_GPU_REFRESH),
	  .help = "GPU burn: iterations that reuse one operand set (its fingerprints taken once, at its last)", .imin = 1,
	  .imax = 1 << 20 },
	{ .name = "gpu_data", .neutral = true, .type = SDC_OPT_ENUM, .offset = OPT(gpu_data), .def = "random", .choices = gpu_data_names,
	  .help = "GPU exact burn data: random, or extreme (every element at its bound: the largest sums the "
		  "exactness bound allows, checked against their closed form)" },
	{ .name = "gpu_timeout", .neutral = true, .type = SDC_OPT_DOUBLE, .offset = OPT(gpu_timeout), .def = "30",
	  .help = "seconds one GPU wait may take before the GPU is declared hung (UNKNOWN)", .dmin = 0.1, .dmax = 3600,
	  .unit = "s" },
	{ .name = "gpu_int8_floor", .neutral = true, .type = SDC_OPT_DOUBLE, .offset = OPT(gpu_floor[0]), .def = "0",
	  .help = "per-GPU gpu-int8 floor (0: none)", .dmin = 0, .dmax = 1e6, .unit = "TOP/s" },
	{ .name = "gpu_fp32_floor", .neutral = true, .type = SDC_OPT_DOUBLE, .offset = OPT(gpu_floor[1]), .def = "0",
	  .help = "per-GPU gpu-fp32 floor (0: none)", .dmin = 0, .dmax = 1e6, .unit = "TFLOP/s" },
	{ .name = "gpu_bf16_floor", .neutral = true, .type = SDC_OPT_DOUBLE, .offset = OPT(gpu_floor[2]), .def = "0",
	  .help = "per-GPU gpu-bf16 floor (0: none)", .dmin = 0, .dmax = 1e6, .unit = "TFLOP/s" },
	{ .name = "gpu_fp16_floor", .neutral = true, .type = SDC_OPT_DOUBLE, .offset = OPT(gpu_floor[3]), .def = "0",
	  .help = "per-GPU gpu-fp16 floor (0: none)", .dmin = 0, .dmax = 1e6, .unit = "TFLOP/s" },
	{ .name = "gpu_fp32_fast_floor", .neutral = true, .type = SDC_OPT_DOUBLE, .offset = OPT(gpu_floor[4]), .def = "0",
	  .help = "per-GPU gpu-fp32-fast floor (0: none)", .dmin = 0, .dmax = 1e6, .unit = "TFLOP/s" },
	{ .name = "gpu_tf32_fast_floor", .neutral = true, .type = SDC_OPT_DOUBLE, .offset = OPT(gpu_floor[5]), .def = "0",
	  .help = "per-GPU gpu-tf32-fast floor (0: none)", .dmin = 0, .dmax = 1e6, .unit = "TFLOP/s" },
	{ .name = "gpu_bf16_fast_floor", .neutral = true, .type = SDC_OPT_DOUBLE, .offset = OPT(gpu_floor[6]), .def = "0",
	  .help = "per-GPU gpu-bf16-fast floor (0: none)", .dmin = 0, .dmax = 1e6, .unit = "TFLOP/s" },
	SDC_OPT_END,
};

static const char *const gemm_targets[] = {
	"A: an element of operand A at rest, before the GEMM",
	"B: an element of operand B (checksum columns included) after encoding, before the GEMM",
	"C: an element of the output after the GEMM, before verification (on GPUs in GPU memory: device=gpuN)",
	NULL,
};

/* A short run that must find and locate a fault in every target of every variant. */
static const char *const gemm_selftest_options[] = { "m=64",     "n=80",     "k=96",         "refresh=4",
						      "gpu_m=128", "gpu_n=96", "gpu_k=256",    "gpu_refresh=4",
						      "gpu_dtypes=int8,fp32,bf16,fp16,fp32-fast,tf32-fast,bf16-fast", NULL };
static const char *const gemm_selftest_faults[] = {
	"gemm/int8:C:count=2,every=3",  "gemm/int8:B",      "gemm/int8:A",
	"gemm/fp32:C:count=2,every=3",  "gemm/fp32:B",      "gemm/fp32:A",
	"gemm/fp32-fast:C:bit=29",      "gemm/fp32-fast:A", "gemm/fp32-fast:B:bit=30",
	"gemm/fp64-fast:C:bit=61",      "gemm/fp64-fast:A", "gemm/fp64-fast:B:bit=62",
	/* GPU memory, when the host has GPUs (selftest leaves them out otherwise) */
	"gemm/gpu-int8:C:count=2,every=3", "gemm/gpu-int8:B", "gemm/gpu-int8:A",
	"gemm/gpu-fp32:C",                 "gemm/gpu-fp32:B", "gemm/gpu-fp32:A",
	"gemm/gpu-bf16:C:count=2,every=3", "gemm/gpu-bf16:B", "gemm/gpu-bf16:A",
	"gemm/gpu-fp16:C",                 "gemm/gpu-fp16:B", "gemm/gpu-fp16:A",
	/* the fast classes see a change only beyond their thresholds: bit=grow makes it so */
	"gemm/gpu-fp32-fast:C:bit=grow",   "gemm/gpu-fp32-fast:A", "gemm/gpu-fp32-fast:B:bit=30",
	"gemm/gpu-tf32-fast:C:bit=grow",   "gemm/gpu-tf32-fast:A",
	"gemm/gpu-bf16-fast:C:bit=grow",   "gemm/gpu-bf16-fast:A", "gemm/gpu-bf16-fast:B:bit=14",
	NULL,
};


/* ---- findings ---- */

static void finding_init(struct sdc_finding *f, const struct gemm_shared *sh, uint64_t iter, const char *kind,
			 const char *target, int64_t row, int64_t col)
{
	sdc_finding_corruption(f, kind, sh->operation, target, iter, row, col);
}

/* Expected (bits of the reference, rounded to the element type), actual and XOR of C[i][j]. */
static void set_c_values(struct sdc_finding *f, struct sdc_gemm *g, int i, int j)
{
	const uint64_t actual = sdc_gemm_bits(g, 'C', i, j);
	uint64_t expected;
	switch (g->cfg.cls) {
	case SDC_GEMM_INT8: {
		const int32_t e = (int32_t)g->ref_i64[j], a = (int32_t)(uint32_t)actual;
		expected = (uint32_t)e;
		snprintf(f->expected_value, sizeof(f->expected_value), "%" PRId32, e);
		snprintf(f->actual_value, sizeof(f->actual_value), "%" PRId32, a);
		break;
	}
	case SDC_GEMM_FP32:
	case SDC_GEMM_FP32_FAST: {
		const float e = g->cfg.cls == SDC_GEMM_FP32 ? (float)g->ref_i64[j] : (float)g->ref_f64[j];
		float a;
		uint32_t u;
		memcpy(&u, &e, 4);
		expected = u;
		u = (uint32_t)actual;
		memcpy(&a, &u, 4);
		snprintf(f->expected_value, sizeof(f->expected_value), "%.9g", (double)e);
		snprintf(f->actual_value, sizeof(f->actual_value), "%.9g", (double)a);
		break;
	}
	default: {
		double a;
		memcpy(&expected, &g->ref_f64[j], 8);
		memcpy(&a, &actual, 8);
		snprintf(f->expected_value, sizeof(f->expected_value), "%.17g", g->ref_f64[j]);
		snprintf(f->actual_value, sizeof(f->actual_value), "%.17g", a);
		break;
	}
	}
	sdc_finding_set_bits(f, expected, actual, 8 * g->csz);
}

/*
 * How far C[i][j] is from the reference row (computed first): exact class 0 or 1 (any
 * difference is corruption), fast class the absolute difference (INF when not finite).
 */
static double deviation(struct sdc_gemm *g, int i, int j)
{
	const uint64_t bits = sdc_gemm_bits(g, 'C', i, j);
	if (g->cfg.cls == SDC_GEMM_INT8)
		return (int32_t)(uint32_t)bits != g->ref_i64[j];
	double v;
	if (g->csz == 4) {
		float fv;
		uint32_t u = (uint32_t)bits;
		memcpy(&fv, &u, 4);
		v = fv;
	} else {
		memcpy(&v, &bits, 8);
	}
	if (g->cfg.cls == SDC_GEMM_FP32) {
		/* Bits, not values: -0.0 is as wrong as any other flip here. */
		const float e = (float)g->ref_i64[j];
		uint32_t eb;
		memcpy(&eb, &e, 4);
		return (uint32_t)bits != eb;
	}
	return isfinite(v) ? fabs(v - g->ref_f64[j]) : INFINITY;
}

static void report_element(struct sdc_worker *w, struct sdc_gemm *g, const struct gemm_shared *sh, uint64_t iter,
			   const struct sdc_gemm_bad_row *bad, int j, const char *why)
{
	struct sdc_finding f;
	const int i = bad->row;
	finding_init(&f, sh, iter, j < g->cfg.n ? "checksum-mismatch" : "checksum-column-corrupt", "C", i, j);
	set_c_values(&f, g, i, j);
	if (sdc_gemm_is_fast(g->cfg.cls)) {
		f.threshold = bad->t;
		f.margin = bad->e / bad->t;
		snprintf(f.detail, sizeof(f.detail),
			 "%s verification difference %.3g exceeds its V-ABFT threshold %.3g (%.3gx); %s%s",
			 bad->weighted ? "weighted-checksum" : "row", bad->e, bad->t, f.margin,
			 j == bad->col ? "the weighted checksum locates this column, the recomputed row agrees"
				       : "found by recomputing the row",
			 why);
	} else if (j == bad->col && bad->x.nbad) {
		snprintf(f.detail, sizeof(f.detail), "not an exact integer; both checksums agree it is the row's only error%s",
			 why);
	} else if (j == bad->col) {
		snprintf(f.detail, sizeof(f.detail),
			 "row checksum off by %" PRId64 ", weighted checksum locates column %d; confirmed by "
			 "recomputing the row%s",
			 bad->x.s1 - bad->x.e1, j, why);
	} else {
		snprintf(f.detail, sizeof(f.detail), "found by recomputing the row; the checksums point at %s%s",
			 bad->col >= 0 ? "another column" : "no single column (several errors)", why);
	}
	sdc_worker_report(w, &f);
}

/*
 * Row i failed its check: recompute it on the independent path and report every element off by
 * more than the class allows (exact: any difference; fast: more than the row's threshold, since
 * rounding moves every element a little), except column `skip`. Returns how many were off.
 */
static int report_row(struct sdc_worker *w, struct sdc_gemm *g, const struct gemm_shared *sh, uint64_t iter,
		      const struct sdc_gemm_bad_row *bad, bool operand_fault, int skip)
{
	const char *why = operand_fault ? "; an operand was found corrupted in this iteration" : "";
	const bool fast = sdc_gemm_is_fast(g->cfg.cls);
	int off = 0, reported = 0, worst = -1;
	double worst_d = -1;
	sdc_gemm_reference_row(g, bad->row);
	for (int j = 0; j < g->n_ext; j++) {
		/* The weighted checksum column carries weights up to n, and its rounding with them. */
		const double tol = !fast ? 0 : j == g->cfg.n + 1 ? bad->t * g->cfg.n : bad->t;
		const double d = deviation(g, bad->row, j);
		if (d > worst_d) {
			worst_d = d;
			worst = j;
		}
		if (!(d > tol) || j == skip)
			continue;
		off++;
		if (reported++ < 8)
			report_element(w, g, sh, iter, bad, j, why);
		else
			w->corruptions++;
	}
	if (off || skip >= 0)
		return off;
	if (fast) {
		/*
		 * No element is off by more than the threshold, yet the checksum difference breached it:
		 * many small errors add up, or the checksum path itself went wrong, or e_max is too tight
		 * for this data. Named apart, with the located (or worst) element, so it reads as what it is.
		 */
		struct sdc_finding f;
		const int j = bad->col >= 0 ? bad->col : worst;
		finding_init(&f, sh, iter, "threshold-breach", "C", bad->row, j);
		set_c_values(&f, g, bad->row, j);
		f.threshold = bad->t;
		f.margin = bad->e / bad->t;
		snprintf(f.detail, sizeof(f.detail),
			 "%s difference %.3g > V-ABFT threshold %.3g (%.3gx) though no recomputed element is off by "
			 "that much: small errors adding up, a checksum-path fault, or e_max too tight here "
			 "(calibrate at these sizes)%s",
			 bad->weighted ? "weighted-checksum" : "row", bad->e, bad->t, f.margin, why);
		sdc_worker_report(w, &f);
		return 1;
	}
	/* The checks disagreed with a row that recomputes correctly: the check itself glitched. */
	struct sdc_finding f;
	finding_init(&f, sh, iter, "verification-glitch", "C", bad->row, -1);
	snprintf(f.detail, sizeof(f.detail), "row checksums disagreed but the stored row recomputes correctly");
	sdc_worker_report(w, &f);
	return 0;
}

/* Rows of a column pattern re-examined per iteration for errors the pattern would hide. */
#define ROWS_RECHECKED 64

/*
 * Reports the rows of C that failed their check (g->bad). A corrupted column of B fails every row
 * at one column: such rows are summarised after the first few, but each is still recomputed (up
 * to a budget) so an independent error elsewhere in it is never hidden behind the pattern.
 */
static void verify_rows(struct sdc_worker *w, struct sdc_gemm *g, const struct gemm_shared *sh, uint64_t iter,
			int nbad, bool operand_fault)
{
	if (!nbad)
		return;
	/* The column most failing rows point at (Boyer-Moore majority vote). */
	int common = -1, votes = 0;
	for (int r = 0; r < nbad; r++) {
		if (!votes)
			common = g->bad[r].col;
		votes += g->bad[r].col == common ? 1 : -1;
	}
	int detailed = 0, summarised = 0, rechecked = 0;
	for (int r = 0; r < nbad; r++) {
		const bool odd = common < 0 || g->bad[r].col != common;
		if (r < ROWS_DETAILED || (odd && detailed < 4 * ROWS_DETAILED)) {
			report_row(w, g, sh, iter, &g->bad[r], operand_fault, -1);
			detailed++;
			continue;
		}
		w->corruptions++;
		summarised++;
		if (rechecked++ < ROWS_RECHECKED)
			report_row(w, g, sh, iter, &g->bad[r], operand_fault, common);
	}
	if (summarised) {
		struct sdc_finding f;
		finding_init(&f, sh, iter, "checksum-mismatch-rows", "C", -1, common);
		snprintf(f.detail, sizeof(f.detail),
			 "%d of %d rows fail their checks; %d more rows at column %d not listed: the pattern "
			 "of a corrupted column of B or of its products",
			 nbad, g->cfg.m, summarised, common);
		sdc_worker_report(w, &f);
	}
}

/* Compares operand elements with their regenerated truth and files what differs. */
static void report_operand(struct sdc_worker *w, struct sdc_gemm *g, const struct gemm_shared *sh, uint64_t iter,
			   char target, int *reported)
{
	int64_t rows, cols, data_cols;
	const char name[2] = { target, 0 };
	sdc_gemm_dims(g, target, &rows, &cols, &data_cols);
	for (int64_t r = 0; r < rows; r++) {
		for (int64_t c = 0; c < cols; c++) {
			const uint64_t e = sdc_gemm_truth_bits(g, target, (int)r, (int)c);
			const uint64_t a = sdc_gemm_bits(g, target, r, c);
			if (e == a)
				continue;
			if ((*reported)++ >= 8) {
				w->corruptions++;
				continue;
			}
			struct sdc_finding f;
			finding_init(&f, sh, iter, "operand-corrupt", name, r, c);
			sdc_finding_set_bits(&f, e, a, 8 * g->esz);
			snprintf(f.detail, sizeof(f.detail), "operand %s%s changed in memory after %s", name,
				 target == 'B' && c >= data_cols ? " (checksum column)" : "",
				 target == 'A' ? "its digest was taken" : "encoding");
			sdc_worker_report(w, &f);
		}
	}
}

/* Re-verifies A and B against their digests; names and repairs any element that changed. */
static bool verify_operands(struct sdc_worker *w, struct sdc_gemm *g, const struct gemm_shared *sh, uint64_t iter)
{
	const bool a_ok = sdc_gemm_a_intact(g), b_ok = sdc_gemm_b_intact(g);
	if (a_ok && b_ok)
		return false;
	int reported = 0;
	if (!a_ok)
		report_operand(w, g, sh, iter, 'A', &reported);
	if (!b_ok)
		report_operand(w, g, sh, iter, 'B', &reported);
	if (!reported) {
		/* Digest differs but every element is right: the digest or its read glitched. */
		struct sdc_finding f;
		finding_init(&f, sh, iter, "verification-glitch", a_ok ? "B" : "A", -1, -1);
		snprintf(f.detail, sizeof(f.detail), "operand digest changed but every element matches");
		sdc_worker_report(w, &f);
	}
	sdc_gemm_load(g, g->set); /* repair, so the next iteration starts clean */
	return true;
}

/* ---- fault injection ---- */

/* Faults due at one target and iteration, with their element and bit drawn. */
struct fault_batch {
	struct sdc_worker *w;
	struct sdc_gemm *g;
	char target[2];
	uint64_t iter;
	int n;
	struct {
		struct sdc_fault f;
		int64_t row, col;
		int bit;
	} p[8];
};

static void draw_faults(struct fault_batch *fb, struct sdc_worker *w, struct sdc_gemm *g, char target, uint64_t iter)
{
	struct sdc_fault faults[8];
	fb->w = w;
	fb->g = g;
	fb->target[0] = target;
	fb->target[1] = '\0';
	fb->iter = iter;
	fb->n = 0;
	const int nf = sdc_worker_faults(w, fb->target, iter, faults, 8);
	for (int i = 0; i < nf; i++) {
		const struct sdc_fault *f = &faults[i];
		int64_t rows, cols, data_cols;
		int bits;
		sdc_gemm_dims(g, target, &rows, &cols, &data_cols);
		/* Drawn coordinates stay in the data columns; explicit ones may name a checksum column. */
		const int64_t row = f->row >= 0 ? f->row : sdc_fault_draw(f, 0, rows);
		const int64_t col = f->col >= 0 ? f->col : sdc_fault_draw(f, 1, data_cols);
		const uint8_t *elem = sdc_gemm_element(g, target, row, col, &bits);
		uint64_t now = 0;
		if (elem)
			memcpy(&now, elem, (size_t)bits / 8);
		const bool is_float = bits >= 32 && !(target == 'C' && g->cfg.cls == SDC_GEMM_INT8);
		const int bit = sdc_fault_bit(f, now, bits, is_float);
		if (!elem || bit >= bits) {
			sdc_worker_error(w, "--inject %s: row %" PRId64 ", col %" PRId64 ", bit %d outside %s (%" PRId64
					    " x %" PRId64 ", %d bits)",
					 w->ctx->run->inject[f->spec].text, row, col, bit, fb->target, rows, cols, bits);
			continue;
		}
		fb->p[fb->n].f = *f;
		fb->p[fb->n].row = row;
		fb->p[fb->n].col = col;
		fb->p[fb->n].bit = bit;
		fb->n++;
	}
}

/* Flips the drawn bits of the faults whose row lies in [r0, r1), and records each one. */
static void apply_faults(void *arg, int r0, int r1)
{
	struct fault_batch *fb = arg;
	for (int i = 0; i < fb->n; i++) {
		if (fb->p[i].row < r0 || fb->p[i].row >= r1)
			continue;
		int bits;
		uint8_t *elem = sdc_gemm_element(fb->g, fb->target[0], fb->p[i].row, fb->p[i].col, &bits);
		uint64_t before = 0, after;
		memcpy(&before, elem, (size_t)bits / 8);
		after = before ^ (1ull << fb->p[i].bit);
		memcpy(elem, &after, (size_t)bits / 8);
		char hb[24], ha[24];
		sdc_hex_bits(hb, sizeof(hb), before, bits);
		sdc_hex_bits(ha, sizeof(ha), after, bits);
		sdc_worker_fault_applied(fb->w, &fb->p[i].f, fb->target, fb->iter, fb->p[i].row, fb->p[i].col,
					 fb->p[i].bit, hb, ha);
	}
}

/* ---- the probe ---- */

/*
 * param[0]: the CPU class (enum sdc_gemm_class) or the GPU type (enum sdc_gpu_type); param[1]: 1
 * for a GPU burn variant. The exact CPU classes run on GPUs too, as lanes of the same vote.
 */
static int gemm_variants(const void *opts, struct sdc_variant *out, int max)
{
	const struct gemm_opts *o = opts;
	int n = 0;
	for (int i = 0; sdc_gemm_class_names[i] && n < max; i++) {
		if (!sdc_opt_set_has(o->dtypes, i))
			continue;
		const bool fast = sdc_gemm_is_fast((enum sdc_gemm_class)i);
		struct sdc_variant *v = &out[n++];
		*v = (struct sdc_variant){ .devices = fast ? SDC_ON_CPU : SDC_ON_CPU | SDC_ON_GPU, .param = { i, 0 } };
		sdc_strlcpy(v->name, sdc_gemm_class_names[i], sizeof(v->name));
		v->numerics = fast ? SDC_NUMERICS_FAST : SDC_NUMERICS_EXACT;
	}
	for (int t = 0; t < SDC_GPU_NTYPES && n < max; t++) {
		if (!sdc_opt_set_has(o->gpu_dtypes, t))
			continue;
		struct sdc_variant *v = &out[n++];
		*v = (struct sdc_variant){ .devices = SDC_ON_GPU, .param = { t, 1 } };
		sdc_strlcpy(v->name, sdc_gemm_gpu_variant_names[t], sizeof(v->name));
		v->numerics = sdc_gpu_type_exact((enum sdc_gpu_type)t) ? SDC_NUMERICS_EXACT : SDC_NUMERICS_FAST;
	}
	return n;
}

/* Fast-class results depend on the BLAS, its kernel and threads. */
static void gemm_library_id(const struct sdc_variant *v, char *buf, size_t len)
{
	if (v->param[1]) {
		const struct sdc_gpu_gemm_ops *m = SDC_GPU_FAMILY(gemm, SDC_GPU_GEMM_VERSION);
		snprintf(buf, len, "%s", m ? m->blas : "no GPU module");
		return;
	}
	struct sdc_blas_info bi;
	sdc_blas_info(&bi);
	snprintf(buf, len, "%s %s (%s)", bi.library, bi.version, bi.corename);
}

/* Every report says which BLAS the fast class ran on, its kernel and threads. */
static void gemm_environment(struct sdc_facts *env)
{
	/* One worker per core: a BLAS that spins up its own threads would fight them. */
	sdc_blas_single_thread();
	struct sdc_blas_info bi;
	sdc_blas_info(&bi);
	sdc_facts_str(env, "blas.library", bi.library);
	sdc_facts_str(env, "blas.version", bi.version);
	sdc_facts_str(env, "blas.core", bi.corename);
	sdc_facts_int(env, "blas.threads", bi.threads);
}


static void record_environment(struct sdc_probe_ctx *ctx, const struct gemm_shared *sh, const char *kernel,
			       const char *emax_source)
{
	struct sdc_facts *f = sdc_facts_new(), *v = sdc_facts_key(f, ctx->variant->name);
	sdc_facts_str(v, "kernel", kernel);
	const bool gpu_fast = sh->gpu_burn && !sdc_gpu_type_exact(sh->gcfg.type);
	if (gpu_fast || (!sh->gpu_burn && sdc_gemm_is_fast(sh->cfg.cls))) {
		sdc_facts_real(v, "emax", gpu_fast ? sh->gcfg.emax : sh->cfg.emax);
		sdc_facts_str(v, "emax_source", emax_source);
		sdc_facts_real(v, "c_sigma", gpu_fast ? sh->gcfg.c_sigma : sh->cfg.c_sigma);
	}
	sdc_run_facts(ctx->run, "gemm", f);
}

static void gemm_teardown(struct sdc_probe_ctx *ctx)
{
	struct gemm_shared *sh = ctx->shared;
	if (!sh)
		return;
	for (int i = 0; i < sh->npools; i++)
		sdc_dist_pool_release(&sh->pools[i]);
	free(sh);
	ctx->shared = NULL;
}

/* Whether the run has a device of this kind. */
static bool run_has(const struct sdc_run *run, enum sdc_device_kind kind)
{
	for (int d = 0; d < run->ndevices; d++)
		if (run->devices[d].kind == kind)
			return true;
	return false;
}

static int gemm_setup(struct sdc_probe_ctx *ctx)
{
	const struct gemm_opts *o = ctx->opts;
	struct gemm_shared *sh = calloc(1, sizeof(*sh));
	if (!sh)
		return sdc_ctx_error(ctx, "out of memory");
	ctx->shared = sh;
	if (ctx->variant->param[1]) {
		sh->gpu_burn = true;
		sh->refresh = (uint64_t)o->gpu_refresh;
		if (sdc_gemm_gpu_setup(ctx, sh, o)) {
			gemm_teardown(ctx);
			return -1;
		}
		record_environment(ctx, sh, "cuBLASLt", sh->emax_source);
		return 0;
	}
	struct sdc_gemm_cfg *cfg = &sh->cfg;
	cfg->cls = (enum sdc_gemm_class)ctx->variant->param[0];
	cfg->m = (int)o->m;
	cfg->n = (int)o->n;
	cfg->k = (int)o->k;
	cfg->seed = ctx->seed;
	cfg->kernel = cfg->cls == SDC_GEMM_INT8 ? int8_kernels[o->int8_kernel] : float_kernels[o->float_kernel];
	sh->refresh = (uint64_t)o->refresh;
	sdc_strlcpy(ctx->iter_unit, "GEMMs", sizeof(ctx->iter_unit));
	sdc_strlcpy(ctx->rate_unit, cfg->cls == SDC_GEMM_INT8 ? "GOP/s" : "GFLOP/s", sizeof(ctx->rate_unit));
	const double floors[] = { o->int8_floor, o->fp32_floor, o->fp32_fast_floor, o->fp64_fast_floor };
	ctx->floor = floors[cfg->cls];

	char source[512] = "";
	if (sdc_gemm_is_fast(cfg->cls)) {
		const bool fp32 = cfg->cls == SDC_GEMM_FP32_FAST;
		const struct sdc_fgemm_impl *impl = sdc_fgemm_find(cfg->kernel);
		struct sdc_calibration_key key;
		char err[700];
		if (!impl) {
			gemm_teardown(ctx);
			return sdc_ctx_error(ctx, "float_kernel=%s is not built into this sdcscan", cfg->kernel);
		}
		sdc_calibration_key_here(&key, impl->name);
		if (sdc_calibration_emax(o->calibration, &key, fp32 ? "fp32" : "fp64", &cfg->emax, source,
					 sizeof(source), err, sizeof(err))) {
			gemm_teardown(ctx);
			return sdc_ctx_error(ctx, "%s", err);
		}
		cfg->c_sigma = o->c_sigma;
		for (int d = 0; burn_dists[d]; d++) {
			if (!sdc_opt_set_has(o->distributions, d))
				continue;
			if (sdc_dist_pool_init(&sh->pools[sh->npools], (enum sdc_dist)d, ctx->seed)) {
				gemm_teardown(ctx);
				return sdc_ctx_error(ctx, "out of memory for the distribution pools");
			}
			sh->npools++;
		}
		cfg->pools = sh->pools;
		cfg->npools = sh->npools;
	}
	/* Check the configuration once here, so a bad kernel is one error, not one per core. */
	struct sdc_gemm probe;
	char err[256];
	if (sdc_gemm_init(&probe, cfg, err, sizeof(err))) {
		gemm_teardown(ctx);
		return sdc_ctx_error(ctx, "%s", err);
	}
	snprintf(sh->operation, sizeof(sh->operation), "gemm %s %dx%dx%d (+%d checksum columns)", ctx->variant->name,
		 cfg->m, cfg->n, cfg->k, probe.n_ext - cfg->n);
	record_environment(ctx, sh, probe.kernel_name, source);
	sdc_gemm_release(&probe);
	/* The exact classes' lanes on GPUs: a setup that fails there fails those lanes (UNKNOWN), not the cores'. */
	if ((ctx->variant->devices & SDC_ON_GPU) && run_has(ctx->run, SDC_DEVICE_GPU) && sdc_gemm_gpu_setup(ctx, sh, o)) {
		sh->gpu = false;
		sdc_strlcpy(sh->gpu_error, ctx->error, sizeof(sh->gpu_error));
		ctx->error[0] = '\0';
	}
	return 0;
}

/* The GPU lane (gpu.c): set up for every GPU of the run in setup, or said why not there. */
static void gemm_gpu_lane(struct sdc_worker *w)
{
	const struct gemm_shared *sh = w->ctx->shared;
	if (!sh->gpu) {
		sdc_worker_error(w, "%s: %s", w->dev->id, sh->gpu_error[0] ? sh->gpu_error : "no GPU lanes set up");
		return;
	}
	/* A CPU variant's lane on a GPU: checked and voted on, but not held to the cores' floor. */
	w->no_floor = !sh->gpu_burn;
	sdc_gemm_gpu_run(w);
}

/* The CPU lane: one core's GEMMs, each checked by its ABFT sums. */
static void gemm_run(struct sdc_worker *w)
{
	const struct gemm_shared *sh = w->ctx->shared;
	struct sdc_gemm g;
	char err[256];
	if (sdc_gemm_init(&g, &sh->cfg, err, sizeof(err))) {
		sdc_worker_error(w, "%s", err);
		return;
	}
	sdc_strlcpy(w->kernel, g.kernel_name, sizeof(w->kernel));
	const double ops = sdc_gemm_ops(&g);
	for (uint64_t iter = 0; sdc_worker_continue(w); iter++) {
		if (iter % sh->refresh == 0)
			sdc_gemm_load(&g, iter / sh->refresh);
		struct fault_batch fb;
		draw_faults(&fb, w, &g, 'A', iter);
		apply_faults(&fb, 0, INT32_MAX);
		draw_faults(&fb, w, &g, 'B', iter);
		apply_faults(&fb, 0, INT32_MAX);
		draw_faults(&fb, w, &g, 'C', iter);
		sdc_worker_fatal_faults(w, iter, g.a);
		const int nbad = sdc_gemm_multiply_check(&g, fb.n ? apply_faults : NULL, &fb);
		/* Operands first: a changed input explains the rows that fail after it. */
		const bool operand_fault = verify_operands(w, &g, sh, iter);
		verify_rows(w, &g, sh, iter, nbad, operand_fault);
		sdc_worker_digest(w, iter, sdc_xxh64(g.c, g.c_bytes));
		sdc_worker_account(w, ops);
	}
	sdc_gemm_release(&g);
}

static const struct sdc_command *const gemm_benches[] = { &sdc_gemm_bench, &sdc_gemm_bench_overhead, NULL };

const struct sdc_probe sdc_probe_gemm = {
	.name = "gemm",
	.summary = "ABFT-checked GEMM burn on every core: int8/fp32 exact, fp32/fp64 with V-ABFT thresholds",
	.options = gemm_options,
	.opts_size = sizeof(struct gemm_opts),
	.inject_targets = gemm_targets,
	.selftest_options = gemm_selftest_options,
	.selftest_faults = gemm_selftest_faults,
	.variants = gemm_variants,
	.setup = gemm_setup,
	.lane = { [SDC_DEVICE_CPU] = gemm_run, [SDC_DEVICE_GPU] = gemm_gpu_lane },
	.teardown = gemm_teardown,
	.benches = gemm_benches,
	.campaign = &sdc_gemm_campaign,
	.calibrate = &sdc_gemm_calibrate,
	.library_id = gemm_library_id,
	.environment = gemm_environment,
};
