/*
 * sdcscan bench: numbers measured side by side in one run, on one pinned core (dav1d's
 * checkasm --bench idea). Machines are noisy, so contenders run in interleaved rounds and each
 * reports its median round.
 *   bench gemm      the GEMM kernels against each other and the libraries: int8 against
 *                   oneDNN's dnnl_gemm_u8s8s32 when libdnnl is installed (loaded at run time, so
 *                   sdcscan does not depend on it), fp32 and fp64 against OpenBLAS.
 *   bench overhead  plain GEMM against the ABFT-checked GEMM of the gemm probe (checksum columns
 *                   in the same call, thresholds, row checks) with the same kernel, per class.
 * With --gpus, either measures a GPU instead: plain cuBLASLt against checked (bench_gpu.c).
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/gemm/calibration.h"
#include "probe/bench_race.h"
#include "probe/command.h"
#include "run/record.h"
#include "probes/gemm/dist.h"
#include "probes/gemm/gemm.h"
#include "kernels/gemm_float.h"
#include "probes/gemm/gemm_int8.h"
#include "probes/gemm/abft.h"
#include "base/rng.h"
#include "base/message.h"
#include "base/clock.h"
#include "base/memory.h"

#define bench_size sdc_size3

/*
 * oneDNN's C API (oneapi/dnnl/dnnl.h, v2.x and v3.x): dnnl_status_t is an enum (0 = success),
 * dnnl_dim_t is int64_t.
 */
typedef int (*dnnl_gemm_u8s8s32_fn)(char transa, char transb, char offsetc, int64_t M, int64_t N, int64_t K,
				    float alpha, const uint8_t *A, int64_t lda, uint8_t ao, const int8_t *B,
				    int64_t ldb, int8_t bo, float beta, int32_t *C, int64_t ldc, const int32_t *co);

static dnnl_gemm_u8s8s32_fn load_onednn(void)
{
	static const char *const names[] = { "libdnnl.so.3", "libdnnl.so.2", "libdnnl.so" };
	/*
	 * oneDNN's OpenMP runtime would spread one call over every core; we measure one. libgomp
	 * reads OMP_NUM_THREADS when it loads (with libdnnl, below), and omp_set_num_threads is
	 * looked up through the library handle because RTLD_LOCAL keeps it out of the global scope.
	 */
	setenv("OMP_NUM_THREADS", "1", 1);
	for (size_t i = 0; i < SDC_ARRAY_SIZE(names); i++) {
		void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (!h)
			continue;
		void (*omp_set)(int) = (void (*)(int))dlsym(h, "omp_set_num_threads");
		if (omp_set)
			omp_set(1);
		dnnl_gemm_u8s8s32_fn fn = (dnnl_gemm_u8s8s32_fn)dlsym(h, "dnnl_gemm_u8s8s32");
		if (fn)
			return fn;
	}
	return NULL;
}

#define ROUNDS SDC_BENCH_ROUNDS
#define MAX_CONTENDERS SDC_BENCH_MAX_CONTENDERS
#define contender sdc_contender
#define race sdc_bench_race

/* ---- bench gemm: kernels ---- */

struct int8_case {
	struct bench_size sz;
	uint8_t *a;
	int lda;
	int8_t *b;
	struct sdc_i8_packed bp;
	int32_t *c;
	const struct sdc_gemm_u8s8_impl *impl;
	dnnl_gemm_u8s8s32_fn dnnl;
};

static void call_int8(void *arg)
{
	struct int8_case *t = arg;
	t->impl->fn(t->sz.m, t->a, t->lda, &t->bp, t->c, t->bp.np, NULL);
}

static void call_onednn(void *arg)
{
	struct int8_case *t = arg;
	const int32_t co = 0;
	t->dnnl('N', 'N', 'F', t->sz.m, t->sz.n, t->sz.k, 1.0f, t->a, t->lda, 0, t->b, t->sz.n, 0, 0.0f, t->c,
		t->bp.np, &co);
}

struct float_case {
	struct bench_size sz;
	void *a, *b, *c;
	bool fp64;
	const struct sdc_fgemm_impl *impl;
};

static void call_float(void *arg)
{
	struct float_case *t = arg;
	if (t->fp64)
		t->impl->dgemm(t->sz.m, t->sz.n, t->sz.k, t->a, t->sz.k, t->b, t->sz.n, t->c, t->sz.n);
	else
		t->impl->sgemm(t->sz.m, t->sz.n, t->sz.k, t->a, t->sz.k, t->b, t->sz.n, t->c, t->sz.n);
}

static void fill(void *buf, size_t bytes, uint32_t purpose)
{
	struct sdc_rng r = sdc_rng_make(1, SDC_RNG_PROBE_GEMM, 0, 0, purpose);
	sdc_rng_fill_u32(&r, 0, buf, bytes / 4);
}

/* Prints the contenders with their ratio to the first one (the library) when lib. */
static void print_race(const char *dtype, struct bench_size sz, const struct contender *c, int n, bool lib,
		       const char *unit)
{
	for (int i = 0; i < n; i++) {
		printf("%-5s %5dx%5dx%5d  %-12s %8.1f %-7s", dtype, sz.m, sz.n, sz.k, c[i].name, c[i].rate, unit);
		if (lib)
			printf("  %.2fx%s", c[i].rate / c[0].rate, i ? "" : " (library)");
		putchar('\n');
	}
}

static int bench_int8(struct bench_size sz, double seconds, dnnl_gemm_u8s8s32_fn dnnl)
{
	struct int8_case t = { .sz = sz, .dnnl = dnnl };
	t.lda = (sz.k + 3) / 4 * 4;
	t.a = sdc_alloc_aligned((size_t)sz.m * t.lda);
	t.b = sdc_alloc_aligned((size_t)sz.k * sz.n + 4);
	if (!t.a || !t.b || sdc_i8_packed_alloc(&t.bp, sz.k, sz.n) ||
	    !(t.c = sdc_alloc_aligned((size_t)sz.m * t.bp.np * 4))) {
		sdc_error("bench: cannot allocate %dx%dx%d", sz.m, sz.n, sz.k);
		return -1;
	}
	fill(t.a, (size_t)sz.m * t.lda, 1);
	for (size_t i = 0; i < (size_t)sz.m * t.lda; i++)
		t.a[i] &= 0x7F;
	fill(t.b, (size_t)sz.k * sz.n, 2);
	sdc_i8_pack(&t.bp, t.b, sz.n);
	struct int8_case cases[MAX_CONTENDERS];
	struct contender c[MAX_CONTENDERS];
	int n = 0;
	if (dnnl)
		c[n++] = (struct contender){ .name = "onednn", .call = call_onednn, .arg = &t };
	for (const struct sdc_gemm_u8s8_impl *impl = sdc_gemm_u8s8_impls; impl->name && n < MAX_CONTENDERS; impl++) {
		if (!impl->supported())
			continue;
		cases[n] = t;
		cases[n].impl = impl;
		c[n] = (struct contender){ .name = impl->name, .call = call_int8, .arg = &cases[n] };
		n++;
	}
	race(c, n, 2.0 * sz.m * sz.n * sz.k, seconds);
	print_race("int8", sz, c, n, dnnl != NULL, "GOP/s");
	sdc_free_aligned(t.a);
	sdc_free_aligned(t.b);
	sdc_free_aligned(t.c);
	sdc_i8_packed_release(&t.bp);
	return 0;
}

static int bench_float(struct bench_size sz, double seconds, bool fp64)
{
	const size_t esz = fp64 ? 8 : 4;
	struct float_case t = { .sz = sz, .fp64 = fp64 };
	t.a = sdc_alloc_aligned(esz * sz.m * sz.k);
	t.b = sdc_alloc_aligned(esz * sz.k * sz.n);
	t.c = sdc_alloc_aligned(esz * sz.m * sz.n);
	if (!t.a || !t.b || !t.c) {
		sdc_error("bench: cannot allocate %dx%dx%d", sz.m, sz.n, sz.k);
		return -1;
	}
	for (size_t i = 0; i < (size_t)sz.m * sz.k; i++) {
		if (fp64)
			((double *)t.a)[i] = (double)(i % 7) - 3.0;
		else
			((float *)t.a)[i] = (float)(i % 7) - 3.0f;
	}
	for (size_t i = 0; i < (size_t)sz.k * sz.n; i++) {
		if (fp64)
			((double *)t.b)[i] = (double)(i % 5) - 2.0;
		else
			((float *)t.b)[i] = (float)(i % 5) - 2.0f;
	}
	/* The library first, as the baseline the others are compared with. */
	struct float_case cases[MAX_CONTENDERS];
	struct contender c[MAX_CONTENDERS];
	const struct sdc_fgemm_impl *lib = sdc_fgemm_find("openblas");
	int n = 0;
	if (lib) {
		cases[n] = t;
		cases[n].impl = lib;
		c[n] = (struct contender){ .name = lib->name, .call = call_float, .arg = &cases[n] };
		n++;
	}
	for (const struct sdc_fgemm_impl *impl = sdc_fgemm_impls; impl->name && n < MAX_CONTENDERS; impl++) {
		if (impl == lib)
			continue;
		cases[n] = t;
		cases[n].impl = impl;
		c[n] = (struct contender){ .name = impl->name, .call = call_float, .arg = &cases[n] };
		n++;
	}
	race(c, n, 2.0 * sz.m * sz.n * sz.k, seconds);
	print_race(fp64 ? "fp64" : "fp32", sz, c, n, lib != NULL, "GFLOP/s");
	sdc_free_aligned(t.a);
	sdc_free_aligned(t.b);
	sdc_free_aligned(t.c);
	return 0;
}

/* ---- bench overhead: plain against ABFT-checked, same kernel ---- */

struct overhead_case {
	struct sdc_gemm g;       /* the checked path, as the gemm probe runs it; plain reuses its buffers */
	struct sdc_i8_packed bp; /* int8 plain: B without checksum columns */
};

static void call_plain(void *arg)
{
	struct overhead_case *t = arg;
	struct sdc_gemm *g = &t->g;
	const int m = g->cfg.m, n = g->cfg.n, k = g->cfg.k;
	switch (g->cfg.cls) {
	case SDC_GEMM_INT8:
		g->i8->fn(m, g->a, g->lda, &t->bp, g->c, g->ldc, NULL);
		break;
	case SDC_GEMM_FP64_FAST:
		g->fl->dgemm(m, n, k, g->a, g->lda, g->b, g->ldb, g->c, g->ldc);
		break;
	default:
		g->fl->sgemm(m, n, k, g->a, g->lda, g->b, g->ldb, g->c, g->ldc);
		break;
	}
}

static long checked_failures;

/* What the burn pays per GEMM: the extended GEMM, the thresholds from A's rows, every row checked. */
static void call_checked(void *arg)
{
	struct overhead_case *t = arg;
	if (sdc_gemm_is_fast(t->g.cfg.cls))
		sdc_gemm_thresholds(&t->g);
	checked_failures += sdc_gemm_multiply_check(&t->g, NULL, NULL);
}

static int bench_overhead(enum sdc_gemm_class cls, int n, double seconds, const struct sdc_dist_pool *pool)
{
	struct overhead_case *t = calloc(1, sizeof(*t));
	struct sdc_gemm_cfg cfg = {
		.cls = cls, .m = n, .n = n, .k = n, .kernel = "auto", .seed = 1,
		.emax = cls == SDC_GEMM_FP64_FAST ? SDC_EMAX_FP64 : SDC_EMAX_FP32,
		.c_sigma = SDC_C_SIGMA, .pools = pool, .npools = 1,
	};
	char err[256];
	if (!t || sdc_gemm_init(&t->g, &cfg, err, sizeof(err))) {
		sdc_error("bench overhead %s %d: %s", sdc_gemm_class_names[cls], n, t ? err : "out of memory");
		free(t);
		return -1;
	}
	const double t0 = sdc_now();
	sdc_gemm_load(&t->g, 0);
	const double load = sdc_now() - t0;
	if (cls == SDC_GEMM_INT8) {
		/* Plain int8 multiplies the same B without its checksum digit columns. */
		int8_t *b = malloc((size_t)n * n);
		if (!b || sdc_i8_packed_alloc(&t->bp, n, n)) {
			sdc_error("bench overhead: out of memory");
			free(b);
			return -1;
		}
		for (int p = 0; p < n; p++)
			for (int j = 0; j < n; j++)
				b[(size_t)p * n + j] = (int8_t)sdc_gemm_truth_bits(&t->g, 'B', p, j);
		sdc_i8_pack(&t->bp, b, n);
		free(b);
	}
	struct contender c[2] = {
		{ .name = "plain", .call = call_plain, .arg = t },
		{ .name = "checked", .call = call_checked, .arg = t },
	};
	race(c, 2, sdc_gemm_ops(&t->g), seconds);
	/* The overhead of each round, plain and checked measured back to back; its median. */
	double q[3];
	sdc_bench_overhead(&c[0], &c[1], q);
	const double gemm_seconds = sdc_gemm_ops(&t->g) / (c[0].rate * 1e9);
	printf("%-9s %5d  %-10s %9.1f %9.1f %-7s  %+6.2f%%  [%+.1f%%, %+.1f%%]  %6.1f%%\n", sdc_gemm_class_names[cls], n,
	       t->g.kernel_name, c[0].rate, c[1].rate, cls == SDC_GEMM_INT8 ? "GOP/s" : "GFLOP/s",
	       100.0 * q[1], 100.0 * q[0], 100.0 * q[2],
	       100.0 * load / gemm_seconds);
	sdc_gemm_release(&t->g);
	sdc_i8_packed_release(&t->bp);
	free(t);
	return 0;
}

struct bench_opts {
	struct sdc_size_list sizes;
	double seconds;
	uint32_t gpu_dtypes;
};

/* --dtypes: GPU types by name (sdc_gemm_gpu_type_names), comma-separated. */
static int opt_gpu_dtypes(const char *value, void *field, char *err, size_t errlen)
{
	uint32_t set = 0;
	char buf[256];
	sdc_strlcpy(buf, value, sizeof(buf));
	char *save = NULL;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int i = 0;
		while (sdc_gemm_gpu_type_names[i] && strcmp(sdc_gemm_gpu_type_names[i], t))
			i++;
		if (!sdc_gemm_gpu_type_names[i]) {
			snprintf(err, errlen, "GPU types, comma-separated (int8, fp32, bf16, fp16, fp32-fast, tf32-fast, "
				 "bf16-fast)");
			return -1;
		}
		set |= 1u << i;
	}
	if (!set) {
		snprintf(err, errlen, "at least one GPU type");
		return -1;
	}
	*(uint32_t *)field = set;
	return 0;
}

#define OPT(f) offsetof(struct bench_opts, f)
static const struct sdc_option bench_options[] = {
	{ .name = "sizes", .short_name = 'z', .metavar = "LIST", .type = SDC_OPT_CUSTOM, .offset = OPT(sizes),
	  .parse = sdc_cli_opt_sizes,
	  .help = "MxNxK or N (square) sizes; default 256x272x1024,1024 for gemm, 1024,2048,4096 for overhead, "
		  "4096x4096x32768,8192x8192x32768 with --gpus (the burn's depth)" },
	{ .name = "seconds", .short_name = 't', .metavar = "S", .type = SDC_OPT_CUSTOM, .offset = OPT(seconds),
	  .parse = sdc_cli_opt_seconds, .help = "time per contender and size (default 1 for gemm, 3 for overhead, 2 with --gpus)" },
	{ .name = "dtypes", .metavar = "LIST", .type = SDC_OPT_CUSTOM, .offset = OPT(gpu_dtypes), .parse = opt_gpu_dtypes,
	  .help = "with --gpus: the GPU types (default int8,bf16,fp16,fp32-fast,tf32-fast,bf16-fast; also fp32)" },
	SDC_OPT_END,
};

static int bench_main(struct sdc_cmd *cmd, bool overhead)
{
	struct bench_opts *o = cmd->opts;
	struct bench_size *sizes = o->sizes.v;
	int nsizes = o->sizes.n;
	double seconds = o->seconds;
	if (!nsizes) {
		static const struct bench_size gemm_sizes[] = { { 256, 272, 1024 }, { 1024, 1024, 1024 } };
		static const struct bench_size over_sizes[] = { { 1024, 1024, 1024 }, { 2048, 2048, 2048 }, { 4096, 4096, 4096 } };
		nsizes = overhead ? 3 : 2;
		memcpy(sizes, overhead ? over_sizes : gemm_sizes, sizeof(struct bench_size) * (size_t)nsizes);
	}
	if (seconds == 0)
		seconds = overhead ? 3 : 1;

	struct sdc_run run;
	if (cmd->cli.have_gpus) {
		/* A GPU: plain cuBLASLt against checked unless told otherwise at the burn's size (gemm.gpu_m,
		 * gpu_n, gpu_k: 4096 x 4096 x 32768, deep so the row check's re-read of C is a small share of
		 * the product's time) and at twice its m and n. */
		static const struct bench_size gpu_sizes[] = { { 4096, 4096, 32768 }, { 8192, 8192, 32768 } };
		if (!o->sizes.n) {
			nsizes = 2;
			memcpy(sizes, gpu_sizes, sizeof(gpu_sizes));
		}
		if (o->seconds == 0)
			seconds = 2;
		const uint32_t types = o->gpu_dtypes ? o->gpu_dtypes
						     : ~0u & ~(1u << SDC_GPU_FP32) & ((1u << SDC_GPU_NTYPES) - 1);
		if (sdc_cli_bench_start(cmd, &run))
			return sdc_cli_unknown(&cmd->cli);
		const int code = sdc_gemm_bench_gpu(cmd, &run, sizes, nsizes, seconds, types);
		sdc_run_release(&run);
		return code;
	}
	if (o->gpu_dtypes)
		return sdc_cli_bad(&cmd->cli, "--dtypes names GPU types: it needs --gpus");
	if (cmd->cli.json)
		return sdc_cli_bad(&cmd->cli, "--json: only the GPU benchmark (--gpus) writes a report");
	if (sdc_cli_bench_start(cmd, &run))
		return sdc_cli_unknown(&cmd->cli);
	const struct sdc_device *dev = &run.devices[0];
	int rc = 0;
	sdc_blas_single_thread();
	struct sdc_blas_info bi;
	sdc_blas_info(&bi);
	printf("sdcscan bench %s: one thread on %s (%s); contenders interleaved in %d rounds, median round, "
	       "%.1f s per contender and size\n",
	       overhead ? "overhead" : "gemm", dev->id, dev->model, ROUNDS, seconds);
	if (!overhead) {
		dnnl_gemm_u8s8s32_fn dnnl = load_onednn();
		printf("libraries: %s %s (core %s), oneDNN %s\n", bi.library, bi.version, bi.corename,
		       dnnl ? "loaded" : "not installed (libdnnl.so)");
		for (int i = 0; i < nsizes && !rc; i++)
			rc = bench_int8(sizes[i], seconds, dnnl);
		for (int f = 0; f < 2; f++)
			for (int i = 0; i < nsizes && !rc; i++)
				rc = bench_float(sizes[i], seconds, f == 1);
	} else {
		struct sdc_dist_pool pool;
		if (sdc_dist_pool_init(&pool, SDC_DIST_NORMAL, 1)) {
			sdc_error("bench: out of memory");
			sdc_run_release(&run);
			return sdc_cli_unknown(&cmd->cli);
		}
		printf("libraries: %s %s (core %s); fast class on N(1e-6,1), built-in e_max\n", bi.library, bi.version,
		       bi.corename);
		printf("checked = the extended GEMM (checksum columns in the same call) + V-ABFT thresholds from A's rows "
		       "+ every row checked.\noverhead: the median over rounds of plain/checked measured back to back "
		       "[quartiles];\nload: drawing and encoding a new operand set, paid once per set, as a share of one plain "
		       "GEMM.\n");
		printf("%-9s %5s  %-10s %9s %9s %-7s  %8s  %-17s %6s\n", "class", "n", "kernel", "plain", "checked", "",
		       "overhead", "[quartiles]", "load");
		static const enum sdc_gemm_class classes[] = { SDC_GEMM_INT8, SDC_GEMM_FP32_FAST, SDC_GEMM_FP64_FAST };
		for (size_t k = 0; k < SDC_ARRAY_SIZE(classes) && !rc; k++)
			for (int i = 0; i < nsizes && !rc; i++)
				rc = bench_overhead(classes[k], sizes[i].m, seconds, &pool);
		if (checked_failures)
			printf("note: %ld rows failed their check during the benchmark: this host needs a closer look\n",
			       checked_failures);
		sdc_dist_pool_release(&pool);
	}
	sdc_run_release(&run);
	return rc ? sdc_cli_unknown(&cmd->cli) : 0;
}

static int bench_gemm_main(struct sdc_cmd *cmd)
{
	return bench_main(cmd, false);
}

static int bench_overhead_main(struct sdc_cmd *cmd)
{
	return bench_main(cmd, true);
}

const struct sdc_command sdc_gemm_bench = {
	.name = "gemm",
	.summary = "the GEMM kernels against each other and OpenBLAS/oneDNN, one pinned core (--gpus: a GPU, "
		   "plain cuBLASLt against checked)",
	.options = bench_options,
	.opts_size = sizeof(struct bench_opts),
	.common = SDC_CF_CPUS | SDC_CF_GPUS | SDC_CF_JSON,
	.flags = SDC_CMD_GPUS_ASKED,
	.json_help = "with --gpus: write the GPU benchmark's JSON report to FILE, or to stdout with - (the CPUs' "
		     "tables are text)",
	.fn = bench_gemm_main,
};

const struct sdc_command sdc_gemm_bench_overhead = {
	.name = "overhead",
	.summary = "plain GEMM against the ABFT-checked GEMM, same kernel, per class (--gpus: on a GPU, "
		   "cuBLASLt, target checked >= 95% of plain)",
	.options = bench_options,
	.opts_size = sizeof(struct bench_opts),
	.common = SDC_CF_CPUS | SDC_CF_GPUS | SDC_CF_JSON,
	.flags = SDC_CMD_GPUS_ASKED,
	.json_help = "with --gpus: write the GPU benchmark's JSON report to FILE, or to stdout with - (the CPUs' "
		     "tables are text)",
	.fn = bench_overhead_main,
};
