/*
 * Floating-point GEMM (fp32 and fp64) behind one interface: OpenBLAS when built with it, and
 * a portable blocked C kernel. Row-major: C[m x n] = A[m x k] * B[k x n].
 */
#ifndef SDC_GEMM_FLOAT_H
#define SDC_GEMM_FLOAT_H

#include <stdbool.h>

typedef void (*sdc_sgemm_fn)(int m, int n, int k, const float *a, int lda, const float *b, int ldb,
			     float *c, int ldc);
typedef void (*sdc_dgemm_fn)(int m, int n, int k, const double *a, int lda, const double *b, int ldb,
			     double *c, int ldc);

struct sdc_fgemm_impl {
	const char *name;
	const char *isa;
	sdc_sgemm_fn sgemm;
	sdc_dgemm_fn dgemm;
};

/* Every implementation built in, the portable one first; terminated by a NULL name. */
extern const struct sdc_fgemm_impl sdc_fgemm_impls[];

/* "auto" picks the library when there is one. NULL if unknown or not built. */
const struct sdc_fgemm_impl *sdc_fgemm_find(const char *name);

/* Library identity for reports: name, version, kernel (core type), threads. */
struct sdc_blas_info {
	const char *library;
	char version[64];
	char corename[64];
	int threads;
};
void sdc_blas_info(struct sdc_blas_info *info);

/* Makes the library run single-threaded in the calling thread (one worker per core). */
void sdc_blas_single_thread(void);

#endif
