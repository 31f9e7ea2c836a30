/*
 * fp32 GEMM behind one interface: OpenBLAS when built with it, and a portable blocked C
 * kernel otherwise. Row-major: C[m x n] = A[m x k] * B[k x n].
 */
#ifndef SDC_GEMM_FP32_H
#define SDC_GEMM_FP32_H

#include <stdbool.h>

typedef void (*sdc_sgemm_fn)(int m, int n, int k, const float *a, int lda, const float *b, int ldb,
			     float *c, int ldc);

struct sdc_sgemm_impl {
	const char *name;
	const char *isa;
	bool (*supported)(void);
	sdc_sgemm_fn fn;
};

extern const struct sdc_sgemm_impl sdc_sgemm_impls[];

/* "auto" picks the library when there is one. NULL if unknown or not built. */
const struct sdc_sgemm_impl *sdc_sgemm_find(const char *name);

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
