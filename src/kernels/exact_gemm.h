/*
 * The exact-class float GEMM: C = A · B in fp32 where every element is summed in one fixed
 * order, k = 0, 1, ..., K-1, starting from +0, each step a correctly rounded product and then
 * a correctly rounded sum (no fused multiply-add). Its bits are therefore the same on every
 * IEEE-754 machine, compiler and vector width, so a training run built on it has one golden
 * trajectory everywhere. The tiled kernel is vectorised across the output columns (each lane
 * owns one column and walks k in order); the plain one is the textbook triple loop, kept as
 * the reference the tiled one must equal bit for bit.
 *
 * Row-major, leading dimensions in elements. C is overwritten.
 */
#ifndef SDC_EXACT_GEMM_H
#define SDC_EXACT_GEMM_H

#include <stdbool.h>

typedef void (*sdc_xgemm_fn)(int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c,
			     int ldc);

/* The fastest tiled kernel this CPU runs (AVX-512, AVX2 or baseline vectors). */
void sdc_xgemm(int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c, int ldc);
/* The deliberately plain scalar reference. */
void sdc_xgemm_plain(int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c, int ldc);
/* Which kernel sdc_xgemm runs: "avx512", "avx2" or "baseline". */
const char *sdc_xgemm_kernel(void);

/*
 * The same GEMM on a GPU: probes/minitrain/xgemm.cu, in the GPU module (its xgemm entry, gpu_module.h).
 * Every element is summed through sdc_xdot/sdc_xmac (xops.h), the function sdc_xgemm_plain sums
 * with, so its bits equal this file's kernels'.
 */

/* out[j][i] = in[i][j] for an m x n matrix: a copy, exact by construction. */
void sdc_xtranspose(int m, int n, const float *in, int ldin, float *out, int ldout);

/*
 * a * b + c written as one expression. The file is built with -ffp-contract=off and this
 * function with the FMA instruction set enabled, so a compiler that lost the flag would fuse
 * it; tests/unit/test_minitrain.c calls it with operands where the fused result differs.
 */
float sdc_xcontract_canary(float a, float b, float c);

#endif
