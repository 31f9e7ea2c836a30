#include "gemm_fp32.h"

#include <stdio.h>
#include <string.h>

#include "sdc_config.h"

#if HAVE_BLAS
#include <cblas.h>
#endif

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CLONES
#endif

/*
 * Portable kernel: blocked i-p-j loops, the j loop vectorised by the compiler. Blocks keep a
 * KB x NB tile of B (64 KiB) in L2 while rows of A stream past it.
 */
#define KB 128
#define NB 128

CLONES
static void sgemm_portable(int m, int n, int k, const float *a, int lda, const float *b, int ldb,
			   float *c, int ldc)
{
	for (int i = 0; i < m; i++)
		memset(c + (size_t)i * ldc, 0, sizeof(float) * (size_t)n);
	for (int p0 = 0; p0 < k; p0 += KB) {
		const int p1 = p0 + KB < k ? p0 + KB : k;
		for (int j0 = 0; j0 < n; j0 += NB) {
			const int j1 = j0 + NB < n ? j0 + NB : n;
			for (int i = 0; i < m; i++) {
				float *ci = c + (size_t)i * ldc;
				for (int p = p0; p < p1; p++) {
					const float av = a[(size_t)i * lda + p];
					const float *bp = b + (size_t)p * ldb;
					for (int j = j0; j < j1; j++)
						ci[j] += av * bp[j];
				}
			}
		}
	}
}

static bool always(void)
{
	return true;
}

#if HAVE_BLAS
static void sgemm_openblas(int m, int n, int k, const float *a, int lda, const float *b, int ldb,
			   float *c, int ldc)
{
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c,
		    ldc);
}
#endif

const struct sdc_sgemm_impl sdc_sgemm_impls[] = {
	{ "portable", "C (compiler-vectorised)", always, sgemm_portable },
#if HAVE_BLAS
	{ "openblas", "OpenBLAS cblas_sgemm", always, sgemm_openblas },
#endif
	{ NULL, NULL, NULL, NULL },
};

const struct sdc_sgemm_impl *sdc_sgemm_find(const char *name)
{
	const struct sdc_sgemm_impl *best = NULL;
	for (const struct sdc_sgemm_impl *k = sdc_sgemm_impls; k->name; k++) {
		if (!strcmp(name, "auto"))
			best = k;
		else if (!strcmp(name, k->name))
			return k;
	}
	return !strcmp(name, "auto") ? best : NULL;
}

void sdc_blas_info(struct sdc_blas_info *info)
{
	memset(info, 0, sizeof(*info));
#if HAVE_BLAS
	info->library = "OpenBLAS";
	/* openblas_get_config() reads like "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY SkylakeX MAX_THREADS=64". */
	const char *cfg = openblas_get_config();
	if (cfg && !strncmp(cfg, "OpenBLAS ", 9)) {
		size_t n = strcspn(cfg + 9, " ");
		snprintf(info->version, sizeof(info->version), "%.*s", (int)n, cfg + 9);
	}
	const char *core = openblas_get_corename();
	snprintf(info->corename, sizeof(info->corename), "%s", core ? core : "unknown");
	info->threads = openblas_get_num_threads();
#else
	info->library = "none";
	snprintf(info->version, sizeof(info->version), "-");
	snprintf(info->corename, sizeof(info->corename), "-");
	info->threads = 1;
#endif
}

void sdc_blas_single_thread(void)
{
#if HAVE_BLAS
	openblas_set_num_threads(1);
#endif
}
