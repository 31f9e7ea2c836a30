/*
 * Exact-class GEMM kernels (see exact_gemm.h). The tiled kernel keeps a 4 x 32 block of C in
 * vector registers and walks k in order, so each element sees exactly the plain loop's
 * sequence of roundings; -ffp-contract=off (meson.build) keeps `acc + a * b` two operations.
 * GCC/clang vector extensions let one body serve AVX-512, AVX2 and baseline SSE: the target
 * attribute only changes how wide the hardware vectors are, never the arithmetic.
 */
#include "kernels/exact_gemm.h"

#include "kernels/xops.h"


typedef float v16 __attribute__((vector_size(64)));
/* The same vector at any float alignment, allowed to alias the float arrays it reads. */
typedef float v16u __attribute__((vector_size(64), aligned(4), may_alias));

#define MR 4
#define NR 32

/* Macros, not functions: a v16 passed by value would change the ABI between the targets. */
#define load16(p) (*(const v16u *)(p))
#define store16(p, v) (*(v16u *)(p) = (v))

/* One element the plain way: the edge columns and rows the tiles do not cover. */
static inline float dot_plain(int k, const float *a, const float *b, int ldb)
{
	float acc = 0.0f;
	for (int p = 0; p < k; p++)
		acc = acc + a[p] * b[(long)p * ldb];
	return acc;
}

/*
 * k is walked in blocks of KC so a 32-column panel of B stays in L1; between blocks each
 * partial sum waits in C as an fp32 value, exactly where the plain loop would hold it, so the
 * order and every rounding are unchanged.
 */
#define KC 128

#define TILE_ROWS(r, K0, K1)                                                                                   \
	do {                                                                                                   \
		const float *bp = b + (long)(K0) * ldb + j;                                                    \
		for (int p = (K0); p < (K1); p++, bp += ldb) {                                                 \
			const v16 b0 = load16(bp), b1 = load16(bp + 16);                                       \
			for (int q = 0; q < (r); q++) {                                                        \
				acc[q][0] = acc[q][0] + ap[q][p] * b0;                                         \
				acc[q][1] = acc[q][1] + ap[q][p] * b1;                                         \
			}                                                                                      \
		}                                                                                              \
	} while (0)

#define TILED_GEMM(NAME, ATTR)                                                                                 \
	ATTR static void NAME(int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c,  \
			      int ldc)                                                                         \
	{                                                                                                      \
		const int n_full = n - n % NR;                                                                 \
		for (int k0 = 0; k0 < k; k0 += KC) {                                                           \
			const int k1 = k - k0 < KC ? k : k0 + KC;                                              \
			for (int j = 0; j < n_full; j += NR) {                                                 \
				for (int i = 0; i < m; i += MR) {                                              \
					const int r = m - i < MR ? m - i : MR;                                 \
					v16 acc[MR][2];                                                        \
					const float *ap[MR];                                                   \
					for (int q = 0; q < r; q++) {                                          \
						ap[q] = a + (long)(i + q) * lda;                               \
						float *cp = c + (long)(i + q) * ldc + j;                       \
						if (k0) {                                                      \
							acc[q][0] = load16(cp), acc[q][1] = load16(cp + 16);   \
						} else {                                                       \
							acc[q][0] = (v16){ 0 }, acc[q][1] = (v16){ 0 };        \
						}                                                              \
					}                                                                      \
					if (r == MR)                                                           \
						TILE_ROWS(MR, k0, k1);                                         \
					else                                                                   \
						TILE_ROWS(r, k0, k1);                                          \
					for (int q = 0; q < r; q++) {                                          \
						float *cp = c + (long)(i + q) * ldc + j;                       \
						store16(cp, acc[q][0]), store16(cp + 16, acc[q][1]);           \
					}                                                                      \
				}                                                                              \
			}                                                                                      \
		}                                                                                              \
		for (int i = 0; i < m; i++)                                                                    \
			for (int j = n_full; j < n; j++)                                                       \
				c[(long)i * ldc + j] = dot_plain(k, a + (long)i * lda, b + j, ldb);            \
	}

#if defined(__x86_64__)
TILED_GEMM(gemm_avx512, __attribute__((target("avx512f"))))
TILED_GEMM(gemm_avx2, __attribute__((target("avx2"))))
#endif
TILED_GEMM(gemm_baseline, )

static sdc_xgemm_fn chosen;
static const char *chosen_name;

static void choose(void)
{
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f")) {
		chosen = gemm_avx512, chosen_name = "avx512";
		return;
	}
	if (__builtin_cpu_supports("avx2")) {
		chosen = gemm_avx2, chosen_name = "avx2";
		return;
	}
#endif
	chosen = gemm_baseline, chosen_name = "baseline";
}

void sdc_xgemm(int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c, int ldc)
{
	if (!chosen)
		choose();
	chosen(m, n, k, a, lda, b, ldb, c, ldc);
}

const char *sdc_xgemm_kernel(void)
{
	if (!chosen)
		choose();
	return chosen_name;
}

/* (each element through sdc_xdot: the function the GPU's exact GEMM sums with, xops.h) */
void sdc_xgemm_plain(int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c, int ldc)
{
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++)
			c[(long)i * ldc + j] = sdc_xdot(k, a + (long)i * lda, 1, b + j, ldb);
}

void sdc_xtranspose(int m, int n, const float *in, int ldin, float *out, int ldout)
{
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++)
			out[(long)j * ldout + i] = in[(long)i * ldin + j];
}

#if defined(__x86_64__)
__attribute__((target("fma")))
#endif
float sdc_xcontract_canary(float a, float b, float c)
{
	return a * b + c;
}
