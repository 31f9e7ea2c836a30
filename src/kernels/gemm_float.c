/* fp32 and fp64 GEMM: OpenBLAS where built with it, a portable kernel otherwise (kernels/gemm_float.h). */
#include "kernels/gemm_float.h"

#include <stdio.h>
#include <string.h>

#include "sdc_config.h"

#if HAVE_BLAS
#include <cblas.h>
#endif

#include "kernels/clones.h"

/*
 * Portable kernels: blocked i-p-j loops, the j loop vectorised by the compiler. Blocks keep a
 * KB x NB tile of B in L2 while rows of A stream past it.
 */
#define KB 128
#define NB 128

#define DEFINE_PORTABLE(name, T)                                                                  \
	CLONES static void name(int m, int n, int k, const T *a, int lda, const T *b, int ldb, T *c, \
				int ldc)                                                             \
	{                                                                                            \
		for (int i = 0; i < m; i++)                                                          \
			memset(c + (size_t)i * ldc, 0, sizeof(T) * (size_t)n);                       \
		for (int p0 = 0; p0 < k; p0 += KB) {                                                 \
			const int p1 = p0 + KB < k ? p0 + KB : k;                                    \
			for (int j0 = 0; j0 < n; j0 += NB) {                                         \
				const int j1 = j0 + NB < n ? j0 + NB : n;                            \
				for (int i = 0; i < m; i++) {                                        \
					T *ci = c + (size_t)i * ldc;                                 \
					for (int p = p0; p < p1; p++) {                              \
						const T av = a[(size_t)i * lda + p];                 \
						const T *bp = b + (size_t)p * ldb;                   \
						for (int j = j0; j < j1; j++)                        \
							ci[j] += av * bp[j];                         \
					}                                                            \
				}                                                                    \
			}                                                                            \
		}                                                                                    \
	}

DEFINE_PORTABLE(sgemm_portable, float)
DEFINE_PORTABLE(dgemm_portable, double)

#if HAVE_BLAS
static void sgemm_openblas(int m, int n, int k, const float *a, int lda, const float *b, int ldb,
			   float *c, int ldc)
{
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c,
		    ldc);
}

static void dgemm_openblas(int m, int n, int k, const double *a, int lda, const double *b, int ldb,
			   double *c, int ldc)
{
	cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
}
#endif

const struct sdc_fgemm_impl sdc_fgemm_impls[] = {
	{ "portable", "C (compiler-vectorised)", sgemm_portable, dgemm_portable },
#if HAVE_BLAS
	{ "openblas", "OpenBLAS cblas_sgemm/cblas_dgemm", sgemm_openblas, dgemm_openblas },
#endif
	{ NULL, NULL, NULL, NULL },
};

const struct sdc_fgemm_impl *sdc_fgemm_find(const char *name)
{
	const struct sdc_fgemm_impl *best = NULL;
	for (const struct sdc_fgemm_impl *k = sdc_fgemm_impls; k->name; k++) {
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
