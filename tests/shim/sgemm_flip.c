/*
 * A user's own library that goes bad, the way a sick core's BLAS would: LD_PRELOADed, it passes
 * every cblas_sgemm to the real one (dlsym RTLD_NEXT) and then flips bit 28 of one element of
 * every 20th result. sdcscan did not write it and cannot see it; a test that uses it sees what a
 * real CRITICAL does to the node's state, its outputs and the fleet. SGEMM_FLIP_EVERY changes 20.
 */
#ifndef _GNU_SOURCE /* (meson gives it to every C file) */
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

typedef void (*sgemm_fn)(const enum CBLAS_ORDER, const enum CBLAS_TRANSPOSE, const enum CBLAS_TRANSPOSE,
			 const blasint, const blasint, const blasint, const float, const float *, const blasint,
			 const float *, const blasint, const float, float *, const blasint);

static unsigned long calls;

void cblas_sgemm(const enum CBLAS_ORDER order, const enum CBLAS_TRANSPOSE ta, const enum CBLAS_TRANSPOSE tb,
		 const blasint m, const blasint n, const blasint k, const float alpha, const float *a,
		 const blasint lda, const float *b, const blasint ldb, const float beta, float *c, const blasint ldc)
{
	static sgemm_fn real;
	if (!real)
		real = (sgemm_fn)dlsym(RTLD_NEXT, "cblas_sgemm");
	if (!real)
		abort(); /* no BLAS under us: nothing honest to return */
	real(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
	const char *every_env = getenv("SGEMM_FLIP_EVERY");
	const unsigned long every = every_env && atol(every_env) > 0 ? (unsigned long)atol(every_env) : 20;
	if (++calls % every || m <= 0 || n <= 0)
		return;
	/* one element, moving with the call count, of the row-major (or column-major) result */
	const blasint row = (blasint)((calls / every) % (unsigned long)m), col = (blasint)((calls / every) % (unsigned long)n);
	float *e = order == CblasRowMajor ? &c[(size_t)row * (size_t)ldc + (size_t)col]
					  : &c[(size_t)col * (size_t)ldc + (size_t)row];
	uint32_t bits;
	memcpy(&bits, e, sizeof(bits));
	bits ^= UINT32_C(1) << 28;
	memcpy(e, &bits, sizeof(bits));
}
