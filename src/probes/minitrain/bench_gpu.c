/*
 * sdcscan bench minitrain --gpus: the exact class on one GPU (kernels/xops.h, kernels/cuda/
 * xgemm.cu). First the bits: the GPU's exact GEMM against the CPU's on the same operands (an odd
 * shape for the tile edges, then each size: every element up to n = 1024, beyond it the first and
 * last rows), and exp and log against the CPU's over their range; any element that differs is
 * named, and is a missed target. Then the speed: the exact kernel against cuBLAS sgemm on the same
 * device operands, GFLOP/s, target at least 30% of sgemm (the CPU's exact kernel has the same
 * target against OpenBLAS). Before the GEMM's speed, training: the quick profile's two models on the GPU (every
 * operation a kernel, probes/minitrain/minitrain.cu) and on one core, their trajectories compared after
 * every step of the first 20 (the same bits, or a missed target), and steps per second of each side
 * by side (target: the GPU trains faster than one core, or it is not worth running there).
 *
 * Beside each size's share, the design's by the roofline (probe/roofline.h) on the GPU's model:
 * what k_xgemm's loop asks of an SM (no FMA: a rounded product and a rounded sum each step, a
 * 128-bit shared-memory load of each tile a step, their bank conflicts) against sgemm at the FP32
 * FMA peak.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/bench_race.h"
#include "probe/roofline.h"
#include "run/facts.h"
#include "device/gpu_loader.h"
#include "mpi/gpu_ranks.h"
#include "probes/minitrain/gpu_ops.h"
#include "base/rng.h"
#include "kernels/exact_gemm.h"
#include "kernels/exactmath.h"
#include "probes/minitrain/minitrain.h"
#include "probes/minitrain/xgemm_tile.h"
#include "base/message.h"
#include "base/clock.h"

#define TARGET_SHARE 0.30
_Static_assert(SDC_XGEMM_TM == 4 && SDC_XGEMM_TN == 4, "k_xgemm loads a float4 of each tile a step");

void sdc_mt_xgemm_roofline(const struct sdc_rl_gpu *gpu, int n, int sms, struct sdc_mt_xgemm_roofline *out)
{
	enum { BM = SDC_XGEMM_BM, BN = SDC_XGEMM_BN, BK = SDC_XGEMM_BK, TM = SDC_XGEMM_TM, TN = SDC_XGEMM_TN,
	       T = SDC_XGEMM_THREADS, AROW = BM + SDC_XGEMM_APAD };
	/*
	 * Warp 0's lanes (every warp's addresses are its own shifted alike): in a step p of the loop
	 * each lane loads as[p][ty TM .. ty TM + TM) and bs[p][tx TN .. tx TN + TN), one 128-bit load
	 * each (TM = TN = 4: ld.shared.v4.f32, which ptx_lint_xgemm requires); every BK steps it stores
	 * its share of the tiles, as[p][r] (r = e / BK, p = e % BK) and bs[p][col] (p = e / BN,
	 * col = e % BN) for e = tid, tid + T, ..., one float each.
	 */
	uint32_t w[32 * 4];
	double lds = 0, sts = 0;
	for (int l = 0; l < 32; l++)
		for (int i = 0; i < TM; i++)
			w[l * TM + i] = (uint32_t)(l / (BN / TN) * TM + i);
	lds += sdc_rl_wavefronts(w, 32 * TM, gpu->smem_banks);
	for (int l = 0; l < 32; l++)
		for (int j = 0; j < TN; j++)
			w[l * TN + j] = (uint32_t)(l % (BN / TN) * TN + j);
	lds += sdc_rl_wavefronts(w, 32 * TN, gpu->smem_banks);
	for (int e0 = 0; e0 < BM * BK; e0 += T) {
		for (int l = 0; l < 32; l++)
			w[l] = (uint32_t)((e0 + l) % BK * AROW + (e0 + l) / BK);
		sts += sdc_rl_wavefronts(w, 32, gpu->smem_banks);
	}
	for (int e0 = 0; e0 < BK * BN; e0 += T) {
		for (int l = 0; l < 32; l++)
			w[l] = (uint32_t)((e0 + l) / BN * BN + (e0 + l) % BN);
		sts += sdc_rl_wavefronts(w, 32, gpu->smem_banks);
	}
	/* a step: TM TN elements, each a rounded product and a rounded sum (sdc_xmac: two FP32
	 * instructions, no FMA), 2 loads; every BK steps the tiles' loads from memory and stores */
	const double fp32 = 2.0 * TM * TN, moves = 2.0 * (BM * BK + BK * BN) / T;
	out->fp32_clk = fp32 * 32 / gpu->fp32_lanes;
	out->smem_clk = lds + sts / BK;
	out->issue_clk = (fp32 + 2 + moves / BK) / SDC_RL_SCHEDULERS;
	double clk = out->fp32_clk > out->smem_clk ? out->fp32_clk : out->smem_clk;
	clk = clk > out->issue_clk ? clk : out->issue_clk;
	out->per_sm = TM * TN * 32 / clk / gpu->fp32_lanes; /* (2 TM TN 32 flops / clk) / (2 lanes) */
	const int nsm = sms > 0 ? sms : gpu->sms;
	const double blocks = (double)((n + BN - 1) / BN) * ((n + BM - 1) / BM), busiest = ceil(blocks / nsm);
	out->spread = blocks / (busiest * nsm);
	out->share = out->per_sm * out->spread;
}

/* Full-mantissa operands in [-1, 1) from the seed: every rounding of the sum matters. */
static void fill(float *p, size_t n, unsigned which)
{
	const struct sdc_rng r = sdc_rng_make(1, SDC_RNG_PROBE_MINITRAIN, 7, which, 0);
	for (size_t i = 0; i < n; i++)
		p[i] = (float)(sdc_rng_uniform(&r, i) * 2 - 1);
}

/* The GPU's C against the CPU's on rows [r0, r1): how many elements differ; the first named. */
static long compare_rows(const float *gpu, const float *cpu, int n, int r0, int r1, char *first, size_t len)
{
	long bad = 0;
	for (int i = r0; i < r1; i++)
		for (int j = 0; j < n; j++) {
			uint32_t g, c;
			memcpy(&g, &gpu[(size_t)i * n + j], 4);
			memcpy(&c, &cpu[(size_t)(i - r0) * n + j], 4);
			if (g != c && !bad++)
				snprintf(first, len, "C[%d][%d]: expected 0x%08" PRIx32 ", actual 0x%08" PRIx32 ", xor 0x%08" PRIx32,
					 i, j, c, g, c ^ g);
		}
	return bad;
}

/* C = A B (m x k x n) on the GPU and on this CPU (sdc_xgemm, the tiled kernel) on rows [0, head)
 * and [m - head, m) (all of them when head * 2 >= m). Returns elements that differ, -1 on error. */
static long check_gemm(const struct sdc_gpu_minitrain_ops *m, int M, int N, int K, int head, char *first, size_t len,
		       char *err, size_t errlen)
{
	float *a = malloc((size_t)M * K * 4), *b = malloc((size_t)K * N * 4), *c = malloc((size_t)M * N * 4);
	float *ref = malloc((size_t)(head * 2 < M ? head : M) * N * 4);
	long bad = -1;
	if (!a || !b || !c || !ref) {
		snprintf(err, errlen, "out of memory for %d x %d x %d", M, N, K);
		goto out;
	}
	fill(a, (size_t)M * K, 1), fill(b, (size_t)K * N, 2);
	if (m->xgemm(M, N, K, a, b, c, 120, err, errlen))
		goto out;
	bad = 0;
	const int spans[2][2] = { { 0, head * 2 < M ? head : M }, { head * 2 < M ? M - head : M, M } };
	for (int s = 0; s < 2; s++) {
		const int r0 = spans[s][0], r1 = spans[s][1];
		if (r1 <= r0)
			continue;
		sdc_xgemm(r1 - r0, N, K, a + (size_t)r0 * K, K, b, N, ref, N);
		char f[160] = "";
		const long d = compare_rows(c, ref, N, r0, r1, f, sizeof(f));
		if (d && !bad)
			snprintf(first, len, "%s", f);
		bad += d;
	}
out:
	free(a), free(b), free(c), free(ref);
	return bad;
}

/* exp and log over their range (and subnormal, zero, infinite and NaN inputs) on the GPU against
 * this CPU's. Returns the values that differ, -1 on error. */
static long check_math(const struct sdc_gpu_minitrain_ops *m, char *first, size_t len, char *err, size_t errlen)
{
	enum { N = 8192 };
	double *x = malloc(N * 8), *e = malloc(N * 8), *l = malloc(N * 8);
	long bad = -1;
	if (!x || !e || !l) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	const struct sdc_rng r = sdc_rng_make(1, SDC_RNG_PROBE_MINITRAIN, 7, 3, 0);
	for (int i = 0; i < N; i++)
		x[i] = i % 4 == 0 ? sdc_rng_uniform(&r, (uint64_t)i) * 1460 - 750                  /* exp's range */
		       : i % 4 == 1 ? sdc_rng_uniform(&r, (uint64_t)i) * 20 - 10                    /* a softmax's */
		       : i % 4 == 2 ? (sdc_rng_uniform(&r, (uint64_t)i) + 1e-300) * 1e6             /* log's */
				    : (double)(i / 4) * 4.9406564584124654e-324;                    /* subnormals */
	x[2] = 0.0, x[6] = 1.0 / 0.0, x[10] = -0.0;
	if (m->xmath(N, x, e, l, 120, err, errlen))
		goto out;
	bad = 0;
	for (int i = 0; i < N; i++) {
		const double ce = sdc_exp(x[i]), cl = sdc_log(x[i]);
		const bool de = memcmp(&ce, &e[i], 8) != 0, dl = memcmp(&cl, &l[i], 8) != 0;
		if ((de || dl) && !bad)
			snprintf(first, len, "%s(%.17g): CPU %.17g, GPU %.17g", de ? "exp" : "log", x[i], de ? ce : cl,
				 de ? e[i] : l[i]);
		bad += de + dl;
	}
out:
	free(x), free(e), free(l);
	return bad;
}

/* Steps of m for about `seconds`: steps per second (NaN when the GPU failed). */
static double steps_per_second(struct sdc_mt_model *m, double seconds)
{
	const double t0 = sdc_now();
	int s = 0;
	do
		sdc_mt_step(m, s++, NULL);
	while (sdc_now() - t0 < seconds && !sdc_mt_error(m));
	return sdc_mt_error(m) ? NAN : s / (sdc_now() - t0);
}

/* One model on the GPU and on this core: the bits of 20 steps, then steps/s (best of three turns
 * each, alternating). 0, or -1 with err. */
static int bench_train(const struct sdc_device *gpu, const struct sdc_mt_cfg *cfg, double seconds,
		       struct sdc_facts *out, bool *met, char *err, size_t errlen)
{
	struct sdc_mt_backend be;
	if (sdc_mt_gpu_backend(gpu, 120, &be, err, errlen))
		return -1;
	struct sdc_mt_model *g = sdc_mt_create_on(cfg, NULL, &be, err, errlen), *c = g ? sdc_mt_create(cfg, sdc_xgemm, err, errlen) : NULL;
	int rc = -1, first_bad = -1;
	if (!g || !c)
		goto out;
	struct sdc_mt_tensor *tg, *tc;
	const int ng = sdc_mt_tensors(g, &tg), nc = sdc_mt_tensors(c, &tc);
	for (int s = 0; s < 20; s++) {
		const float lg = sdc_mt_step(g, s, NULL), lc = sdc_mt_step(c, s, NULL);
		if (sdc_mt_error(g)) {
			snprintf(err, errlen, "%s", sdc_mt_error(g));
			goto out;
		}
		if (first_bad < 0 && (memcmp(&lg, &lc, 4) || sdc_mt_tensors_hash(tg, ng, NULL) != sdc_mt_tensors_hash(tc, nc, NULL)))
			first_bad = s;
	}
	double gr = 0, cr = 0;
	for (int turn = 0; turn < 3; turn++) {
		const double a = steps_per_second(g, seconds / 3), b = steps_per_second(c, seconds / 3);
		if (isnan(a)) {
			snprintf(err, errlen, "%s", sdc_mt_error(g));
			goto out;
		}
		gr = a > gr ? a : gr, cr = b > cr ? b : cr;
	}
	const bool ok = first_bad < 0 && gr > cr;
	*met &= ok;
	char bits[32] = "same";
	if (first_bad >= 0)
		snprintf(bits, sizeof(bits), "DIFFER at %d", first_bad);
	printf("%-5s  %-12s  %11.1f  %12.1f  %8.1fx  %s\n", sdc_mt_kind_name(cfg->kind), bits, gr, cr, gr / cr,
	       ok ? "met" : "MISSED");
	struct sdc_facts *row = sdc_facts_row(out, "training");
	sdc_facts_str(row, "model", sdc_mt_kind_name(cfg->kind));
	sdc_facts_int(row, "first_step_differing", first_bad);
	sdc_facts_real(row, "gpu_steps_per_s", gr);
	sdc_facts_real(row, "core_steps_per_s", cr);
	sdc_facts_bool(row, "target_met", ok);
	rc = 0;
out:
	sdc_mt_free(g), sdc_mt_free(c);
	sdc_mt_gpu_backend_close(&be);
	return rc;
}

int sdc_minitrain_bench_gpu(struct sdc_cmd *cmd, struct sdc_run *run, const struct sdc_size_list *sizes,
			    double seconds)
{
	char err[512], first[200] = "";
	const struct sdc_device *gpu = sdc_gpu_first_bound(run, err, sizeof(err));
	if (!gpu) {
		sdc_error("bench minitrain: %s", err);
		return sdc_cli_unknown(&cmd->cli);
	}
	const struct sdc_gpu_minitrain_ops *m = SDC_GPU_FAMILY(minitrain, SDC_GPU_MINITRAIN_VERSION);
	if (!m) {
		sdc_error("bench minitrain: %s", sdc_gpu_family_why("minitrain"));
		return sdc_cli_unknown(&cmd->cli);
	}
	static const int defaults[] = { 512, 1024, 2048, 4096 };
	int n_sizes = sizes->n ? sizes->n : 4;
	printf("sdcscan bench minitrain on %s (%s, %d SMs, %s), CUDA runtime %s\n"
	       "The exact class: every element summed in k order from +0, rounded products and sums, no FMA.\n\n",
	       gpu->id, gpu->model, gpu->gpu.sm_count, gpu->gpu.pci_bus_id, sdc_gpu_ops()->cuda_runtime);
	struct sdc_facts *out = sdc_facts_new();
	bool met = true;
	/* the bits first: an odd shape (the tiles' edges in m, n and k), then exp and log */
	long bad = check_gemm(m, 67, 131, 77, 67, first, sizeof(first), err, sizeof(err));
	if (bad < 0)
		goto fail;
	sdc_bench_bits("exact GEMM 67 x 131 x 77 (tile edges), every element", "the same", bad, first, out,
		       "edges_differing", &met);
	bad = check_math(m, first, sizeof(first), err, sizeof(err));
	if (bad < 0)
		goto fail;
	sdc_bench_bits("exp and log of 8192 values", "the same", bad, first, out, "math_differing", &met);
	printf("\nTraining, the quick profile's models (bits: the trajectory after each of 20 steps against this "
	       "core's;\nspeed: steps/s, best of three turns; target: the same bits and the GPU faster than one core)\n"
	       "model  bits          GPU steps/s  core steps/s  GPU/core  target\n");
	sdc_facts_list(out, "training");
	if (bench_train(gpu, &sdc_mt_bench_dlrm, seconds, out, &met, err, sizeof(err)) ||
	    bench_train(gpu, &sdc_mt_bench_xfmr, seconds, out, &met, err, sizeof(err)))
		goto fail;
	/* (the JSON's order: the bits, the training, the GPU, the target, the roofline, the rows) */
	sdc_facts_str(out, "gpu.device", gpu->id);
	sdc_facts_str(out, "gpu.name", gpu->model);
	sdc_facts_str(out, "gpu.uuid", gpu->gpu.uuid);
	sdc_facts_real(out, "target_share", TARGET_SHARE);
	char why[160];
	const struct sdc_rl_gpu *rl = sdc_rl_find(gpu->model, why, sizeof(why));
	sdc_rl_facts(out, rl, why);
	sdc_facts_list(out, "rows");
	printf("\nGEMM, square n (bits: against this CPU's exact kernel, all rows up to 1024, else the first and "
	       "last 8;\nspeed: best of three turns of back-to-back GEMMs; target: exact >= %.0f%% of cuBLAS sgemm)\n",
	       100 * TARGET_SHARE);
	sdc_rl_print(rl, why);
	if (rl)
		printf("roofline column: exact/sgemm by design: the SM clocks a step of k_xgemm's loop takes (the busiest of "
		       "FP32 lanes,\nshared-memory wavefronts, schedulers), its blocks spread over %d SMs, against sgemm "
		       "at the FP32 peak.\n",
		       gpu->gpu.sm_count > 0 ? gpu->gpu.sm_count : rl->sms);
	printf("    n  bits       exact GFLOP/s  sgemm GFLOP/s  exact/sgemm  roofline  target\n");
	for (int i = 0; i < n_sizes; i++) {
		const int n = sizes->n ? sizes->v[i].n : defaults[i];
		bad = check_gemm(m, n, n, n, n <= 1024 ? n : 8, first, sizeof(first), err, sizeof(err));
		if (bad < 0)
			goto fail;
		double te = 0, ts = 0;
		const int reps = n <= 1024 ? 20 : n <= 2048 ? 8 : 3;
		if (m->xgemm_bench(n, reps, &te, &ts, 120, err, sizeof(err)))
			goto fail;
		const double flops = 2.0 * n * n * n, share = ts / te;
		struct sdc_mt_xgemm_roofline x;
		char design[64] = "", rls[16] = "-";
		bool design_ok = true;
		if (rl) {
			sdc_mt_xgemm_roofline(rl, n, gpu->gpu.sm_count, &x);
			design_ok = sdc_rl_verdict(x.share, TARGET_SHARE, true, design, sizeof(design));
			snprintf(rls, sizeof(rls), "%.1f%%", 100 * x.share);
		}
		const bool measured_ok = !bad && share >= TARGET_SHARE, ok = measured_ok && design_ok;
		met &= ok;
		printf("%5d  %-10s  %13.1f  %13.1f  %10.1f%%  %8s  %s%s%s\n", n, bad ? "DIFFERENT" : "same", flops / te / 1e9,
		       flops / ts / 1e9, 100 * share, rls, measured_ok ? "met" : "MISSED", rl ? ", " : "", design);
		if (bad)
			printf("       %ld elements differ, first %s\n", bad, first);
		struct sdc_facts *row = sdc_facts_row(out, "rows");
		sdc_facts_int(row, "n", n);
		sdc_facts_int(row, "differing", bad);
		sdc_facts_real(row, "exact_gflops", flops / te / 1e9);
		sdc_facts_real(row, "sgemm_gflops", flops / ts / 1e9);
		sdc_facts_real(row, "share", share);
		if (rl) {
			sdc_facts_real(row, "roofline_share", x.share);
			sdc_facts_bool(row, "design_met", design_ok);
		}
		sdc_facts_bool(row, "target_met", ok);
	}
	const int code = sdc_cli_facts_end(&cmd->cli, out, met);
	sdc_facts_free(out);
	return code;
fail:
	sdc_error("bench minitrain: %s: %s", gpu->id, err);
	sdc_facts_free(out);
	return sdc_cli_unknown(&cmd->cli);
}
