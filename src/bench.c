/*
 * sdcscan bench: the kernels measured side by side in one run, on one pinned core, against
 * the libraries (dav1d's checkasm --bench idea). int8: the hand-written kernels against oneDNN's
 * dnnl_gemm_u8s8s32 when libdnnl is installed (loaded at run time, so sdcscan does not depend
 * on it); fp32: the portable kernel against OpenBLAS. Numbers, not pass/fail: machines are noisy.
 */
#include <dlfcn.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kernels/gemm_fp32.h"
#include "kernels/gemm_int8.h"
#include "rng.h"
#include "util.h"

struct bench_size {
	int m, n, k;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sdcscan bench [gemm] [OPTIONS]\n"
		"Measure the GEMM kernels against each other and the libraries on one core.\n\n"
		"  -z, --sizes LIST     MxNxK sizes (default 256x256x1024,1024x1024x1024)\n"
		"  -t, --seconds S      time per kernel and size (default 1)\n"
		"  -c, --cpus N         the CPU to pin to (default: the first allowed)\n"
		"  -h, --help           this help\n");
}

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

/*
 * Contenders run in interleaved rounds (A B C, A B C, ...) and each reports its median round,
 * so a slow spell of a shared machine (a noisy neighbour, a frequency drop) hits all of them
 * alike instead of whichever happened to run then.
 */
#define ROUNDS 7

typedef void (*bench_call)(void *arg);

struct contender {
	const char *name;
	bench_call call;
	void *arg;
	double rate; /* median, 1e9 operations per second */
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void race(struct contender *c, int n, double ops, double seconds)
{
	double rates[16][ROUNDS];
	for (int i = 0; i < n; i++)
		c[i].call(c[i].arg); /* warm caches and lazy initialisation */
	for (int round = 0; round < ROUNDS; round++) {
		for (int i = 0; i < n; i++) {
			double t0 = sdc_now(), t;
			long reps = 0;
			do {
				c[i].call(c[i].arg);
				reps++;
				t = sdc_now() - t0;
			} while (t < seconds / ROUNDS);
			rates[i][round] = ops * (double)reps / t / 1e9;
		}
	}
	for (int i = 0; i < n; i++) {
		qsort(rates[i], ROUNDS, sizeof(double), cmp_double);
		c[i].rate = rates[i][ROUNDS / 2];
	}
}

/* Prints the contenders with their ratio to the library (the first one, when lib). */
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
	t->impl->fn(t->sz.m, t->a, t->lda, &t->bp, t->c, t->bp.np);
}

static void call_onednn(void *arg)
{
	struct int8_case *t = arg;
	const int32_t co = 0;
	t->dnnl('N', 'N', 'F', t->sz.m, t->sz.n, t->sz.k, 1.0f, t->a, t->lda, 0, t->b, t->sz.n, 0, 0.0f, t->c,
		t->bp.np, &co);
}

struct fp32_case {
	struct bench_size sz;
	float *a, *b, *c;
	const struct sdc_sgemm_impl *impl;
};

static void call_fp32(void *arg)
{
	struct fp32_case *t = arg;
	t->impl->fn(t->sz.m, t->sz.n, t->sz.k, t->a, t->sz.k, t->b, t->sz.n, t->c, t->sz.n);
}

static void fill(void *buf, size_t bytes, uint32_t purpose)
{
	struct sdc_rng r = sdc_rng_make(1, SDC_RNG_PROBE_GEMM, 0, 0, purpose);
	sdc_rng_fill_u32(&r, 0, buf, bytes / 4);
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
	struct int8_case cases[16];
	struct contender c[16];
	int n = 0;
	if (dnnl) {
		c[n] = (struct contender){ "onednn", call_onednn, &t, 0 };
		n++;
	}
	for (const struct sdc_gemm_u8s8_impl *impl = sdc_gemm_u8s8_impls; impl->name && n < 16; impl++) {
		if (!impl->supported())
			continue;
		cases[n] = t;
		cases[n].impl = impl;
		c[n] = (struct contender){ impl->name, call_int8, &cases[n], 0 };
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

static int bench_fp32(struct bench_size sz, double seconds)
{
	struct fp32_case t = { .sz = sz };
	t.a = sdc_alloc_aligned(sizeof(float) * sz.m * sz.k);
	t.b = sdc_alloc_aligned(sizeof(float) * sz.k * sz.n);
	t.c = sdc_alloc_aligned(sizeof(float) * sz.m * sz.n);
	if (!t.a || !t.b || !t.c) {
		sdc_error("bench: cannot allocate %dx%dx%d", sz.m, sz.n, sz.k);
		return -1;
	}
	for (size_t i = 0; i < (size_t)sz.m * sz.k; i++)
		t.a[i] = (float)(i % 7) - 3.0f;
	for (size_t i = 0; i < (size_t)sz.k * sz.n; i++)
		t.b[i] = (float)(i % 5) - 2.0f;
	/* The library first, as the baseline the others are compared with. */
	struct fp32_case cases[8];
	struct contender c[8];
	const struct sdc_sgemm_impl *libimpl = sdc_sgemm_find("openblas");
	int n = 0;
	if (libimpl) {
		cases[n] = t;
		cases[n].impl = libimpl;
		c[n] = (struct contender){ libimpl->name, call_fp32, &cases[n], 0 };
		n++;
	}
	for (const struct sdc_sgemm_impl *impl = sdc_sgemm_impls; impl->name && n < 8; impl++) {
		if (impl == libimpl)
			continue;
		cases[n] = t;
		cases[n].impl = impl;
		c[n] = (struct contender){ impl->name, call_fp32, &cases[n], 0 };
		n++;
	}
	race(c, n, 2.0 * sz.m * sz.n * sz.k, seconds);
	print_race("fp32", sz, c, n, libimpl != NULL, "GFLOP/s");
	sdc_free_aligned(t.a);
	sdc_free_aligned(t.b);
	sdc_free_aligned(t.c);
	return 0;
}

static int parse_sizes(const char *s, struct bench_size *out, int max)
{
	int n = 0;
	while (*s && n < max) {
		int m, nn, k, used;
		if (sscanf(s, "%dx%dx%d%n", &m, &nn, &k, &used) != 3 || m < 1 || nn < 1 || k < 4 || m > 16384 ||
		    nn > 16384 || k > 65536)
			return -1;
		out[n++] = (struct bench_size){ m, nn, k };
		s += used;
		if (*s == ',')
			s++;
		else if (*s)
			return -1;
	}
	return *s ? -1 : n;
}

int sdc_cmd_bench(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "sizes", required_argument, NULL, 'z' }, { "seconds", required_argument, NULL, 't' },
		{ "cpus", required_argument, NULL, 'c' },  { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sdc_cli cli = { .command = "bench" };
	struct bench_size sizes[16] = { { 256, 256, 1024 }, { 1024, 1024, 1024 } };
	int nsizes = 2, c;
	double seconds = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":z:t:c:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case 'z':
			nsizes = parse_sizes(optarg, sizes, 16);
			if (nsizes <= 0)
				return sdc_cli_bad(&cli, "--sizes '%s': expected MxNxK[,MxNxK...] (k >= 4, at most 16 sizes)",
						   optarg);
			break;
		case 't':
			if (!sdc_parse_double(optarg, &seconds) || seconds <= 0 || seconds > 600)
				return sdc_cli_bad(&cli, "--seconds '%s': expected a number of seconds in (0, 600]", optarg);
			break;
		case '?':
		case ':':
			return sdc_cli_getopt_error(&cli, c, argv);
		default:
			if (sdc_cli_common(&cli, c, optarg))
				return sdc_exit_code(SDC_UNKNOWN, cli.exit_style);
		}
	}
	if (optind < argc && strcmp(argv[optind], "gemm"))
		return sdc_cli_bad(&cli, "unknown benchmark '%s' (expected gemm)", argv[optind]);
	if (optind + 1 < argc)
		return sdc_cli_bad(&cli, "unexpected argument '%s'", argv[optind + 1]);

	struct sdc_run run;
	struct sdc_plan none = { 0 };
	if (sdc_cli_prepare_run(&cli, &run, &none, argc, argv))
		return sdc_exit_code(SDC_UNKNOWN, cli.exit_style);
	const struct sdc_device *dev = &run.devices[0];
	if (sdc_cpu_pin(dev->cpu)) {
		sdc_error("bench: cannot pin to CPU %d", dev->cpu);
		sdc_run_release(&run);
		return sdc_exit_code(SDC_UNKNOWN, cli.exit_style);
	}
	sdc_blas_single_thread();
	struct sdc_blas_info bi;
	sdc_blas_info(&bi);
	dnnl_gemm_u8s8s32_fn dnnl = load_onednn();
	printf("sdcscan bench gemm: one thread on %s (%s); kernels interleaved in %d rounds, median round,\n"
	       "%.1f s per kernel and size\n",
	       dev->id, dev->model, ROUNDS, seconds);
	printf("libraries: %s %s (core %s), oneDNN %s\n", bi.library, bi.version, bi.corename,
	       dnnl ? "loaded" : "not installed (libdnnl.so)");
	int rc = 0;
	for (int i = 0; i < nsizes && !rc; i++)
		rc = bench_int8(sizes[i], seconds, dnnl);
	for (int i = 0; i < nsizes && !rc; i++)
		rc = bench_fp32(sizes[i], seconds);
	sdc_run_release(&run);
	return rc ? sdc_exit_code(SDC_UNKNOWN, cli.exit_style) : 0;
}
