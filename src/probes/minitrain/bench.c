/*
 * sdcscan bench minitrain: on one pinned core, the exact-class GEMM (tiled and plain) raced
 * against OpenBLAS sgemm, and each model's training steps per second with each kernel. The
 * exact kernel gives up FMA (a fused product would change its bits) and blocking over k (its
 * order is fixed), so it cannot reach the library; the target is 30% of it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/bench_race.h"
#include "probe/command.h"
#include "run/record.h"
#include "probes/minitrain/minitrain.h"
#include "kernels/exact_gemm.h"
#include "kernels/gemm_float.h"
#include "probes/minitrain/model.h"
#include "base/message.h"
#include "base/memory.h"

struct gemm_case {
	sdc_sgemm_fn fn;
	int n;
	float *a, *b, *c;
};

static void call_gemm(void *arg)
{
	struct gemm_case *g = arg;
	g->fn(g->n, g->n, g->n, g->a, g->n, g->b, g->n, g->c, g->n);
}

struct step_case {
	struct sdc_mt_model *m;
	int step;
};

static void call_step(void *arg)
{
	struct step_case *s = arg;
	sdc_mt_step(s->m, s->step++, NULL);
}

static int bench_gemm(int n, double seconds)
{
	const size_t nn = (size_t)n * n;
	float *a = sdc_alloc_aligned(4 * nn), *b = sdc_alloc_aligned(4 * nn);
	float *c[3] = { sdc_alloc_aligned(4 * nn), sdc_alloc_aligned(4 * nn), sdc_alloc_aligned(4 * nn) };
	if (!a || !b || !c[0] || !c[1] || !c[2]) {
		sdc_error("bench minitrain: cannot allocate %d x %d", n, n);
		return -1;
	}
	for (size_t i = 0; i < nn; i++)
		a[i] = (float)(i % 13) * 0.25f - 1.5f, b[i] = (float)(i % 7) * 0.5f - 1.5f;
	const struct sdc_fgemm_impl *lib = sdc_fgemm_find("openblas");
	struct gemm_case g[3] = { { sdc_xgemm, n, a, b, c[0] }, { sdc_xgemm_plain, n, a, b, c[1] },
				  { lib ? lib->sgemm : NULL, n, a, b, c[2] } };
	struct sdc_contender k[3] = { { .name = "exact tiled", .call = call_gemm, .arg = &g[0] },
				      { .name = "exact plain", .call = call_gemm, .arg = &g[1] },
				      { .name = "openblas", .call = call_gemm, .arg = &g[2] } };
	/* The plain loop is slow at large n: it races only where a round stays short. */
	const bool plain = n <= 256;
	struct sdc_contender race[3];
	int nr = 0;
	race[nr++] = k[0];
	if (plain)
		race[nr++] = k[1];
	if (lib)
		race[nr++] = k[2];
	sdc_bench_race(race, nr, 2.0 * n * n * n, seconds * nr);
	const double tiled = race[0].rate, pl = plain ? race[1].rate : 0, blas = lib ? race[nr - 1].rate : 0;
	char ps[16] = "      -", bs[16] = "      -", ratio[16] = "     -";
	if (plain)
		snprintf(ps, sizeof(ps), "%7.2f", pl);
	if (lib) {
		snprintf(bs, sizeof(bs), "%7.2f", blas);
		snprintf(ratio, sizeof(ratio), "%5.1f%%", 100 * tiled / blas);
	}
	/* Same bits from both exact kernels, or the race meant nothing. */
	const bool same = !plain || !memcmp(c[0], c[1], 4 * nn);
	printf("%5d  %9.2f  %9s  %9s   %s%s\n", n, tiled, ps, bs, ratio, same ? "" : "  (tiled != plain!)");
	sdc_free_aligned(a), sdc_free_aligned(b);
	for (int i = 0; i < 3; i++)
		sdc_free_aligned(c[i]);
	return same ? 0 : -1;
}

static int bench_steps(const struct sdc_mt_cfg *cfg, double seconds)
{
	char err[256];
	struct sdc_mt_model *t = sdc_mt_create(cfg, sdc_xgemm, err, sizeof(err));
	struct sdc_mt_model *p = sdc_mt_create(cfg, sdc_xgemm_plain, err, sizeof(err));
	if (!t || !p) {
		sdc_error("bench minitrain: %s", err);
		sdc_mt_free(t), sdc_mt_free(p);
		return -1;
	}
	struct step_case st = { t, 0 }, sp = { p, 0 };
	struct sdc_contender c[2] = { { .name = "tiled", .call = call_step, .arg = &st },
				      { .name = "plain", .call = call_step, .arg = &sp } };
	/* ops = 1e9 per call, so the race's rate is steps per second */
	sdc_bench_race(c, 2, 1e9, seconds * 2);
	printf("%-5s  %9.1f  %9.1f  %9.3f  %8.2f\n", sdc_mt_kind_name(cfg->kind), c[0].rate, c[1].rate,
	       sdc_mt_step_flops(t) / 1e6, c[0].rate * sdc_mt_step_flops(t) / 1e9);
	sdc_mt_free(t), sdc_mt_free(p);
	return 0;
}

struct bench_opts {
	struct sdc_size_list sizes;
	double seconds;
};

#define OPT(f) offsetof(struct bench_opts, f)
static const struct sdc_option bench_options[] = {
	{ .name = "sizes", .short_name = 'z', .metavar = "LIST", .type = SDC_OPT_CUSTOM, .offset = OPT(sizes),
	  .parse = sdc_cli_opt_sizes, .help = "square GEMM sizes n (default 128,256,512,1024; with --gpus 512,1024,2048,4096)" },
	{ .name = "seconds", .short_name = 't', .metavar = "S", .type = SDC_OPT_CUSTOM, .offset = OPT(seconds),
	  .parse = sdc_cli_opt_seconds, .def = "2", .help = "time per contender and size" },
	SDC_OPT_END,
};

static int bench_main(struct sdc_cmd *cmd)
{
	const struct bench_opts *o = cmd->opts;
	const double seconds = o->seconds;
	struct sdc_run run;
	if (cmd->cli.json && !cmd->cli.have_gpus)
		return sdc_cli_bad(&cmd->cli, "--json: only the GPU benchmark (--gpus) writes a report");
	if (sdc_cli_bench_start(cmd, &run))
		return sdc_cli_unknown(&cmd->cli);
	if (cmd->cli.have_gpus) {
		/* a GPU: the exact class's bits and its GEMM against cuBLAS sgemm (n = 512 ... 4096 unless told) */
		const int code = sdc_minitrain_bench_gpu(cmd, &run, &o->sizes, seconds);
		sdc_run_release(&run);
		return code;
	}
	const struct sdc_device *dev = &run.devices[0];
	int rc = 0;
	sdc_blas_single_thread();
	printf("sdcscan bench minitrain: one thread on %s (%s), exact kernel %s; medians of %d interleaved rounds\n\n"
	       "GEMM, GFLOP/s (square n; exact: fixed k order, no FMA; target: tiled >= 30%% of OpenBLAS)\n"
	       "    n      tiled      plain   openblas   tiled/openblas\n",
	       dev->id, dev->model, sdc_xgemm_kernel(), SDC_BENCH_ROUNDS);
	static const int defaults[] = { 128, 256, 512, 1024 };
	for (int i = 0; i < (o->sizes.n ? o->sizes.n : 4) && !rc; i++)
		rc = bench_gemm(o->sizes.n ? o->sizes.v[i].n : defaults[i], seconds);
	printf("\nTraining steps per second on this core (the quick profile's models)\n"
	       "model      tiled      plain  MFLOP/step  GFLOP/s tiled\n");
	if (!rc)
		rc = bench_steps(&sdc_mt_bench_dlrm, seconds) || bench_steps(&sdc_mt_bench_xfmr, seconds);
	sdc_run_release(&run);
	return rc ? sdc_cli_unknown(&cmd->cli) : 0;
}

const struct sdc_command sdc_minitrain_bench = {
	.name = "minitrain",
	.summary = "the exact GEMM against OpenBLAS, and training steps/s, on one pinned core (--gpus: the GPU's exact "
		   "GEMM and exp/log against the CPU's bits and against cuBLAS sgemm)",
	.options = bench_options,
	.opts_size = sizeof(struct bench_opts),
	.common = SDC_CF_CPUS | SDC_CF_GPUS | SDC_CF_JSON,
	.fn = bench_main,
};
