/*
 * x86 u8 x s8 GEMM kernels. Each is a register-tiled micro-kernel (MR rows x NR vectors of
 * columns) over the packed B of gemm_int8.h, blocked over k so a B panel stays in L2.
 * Functions carry their own target attributes, so this file builds with baseline flags
 * and the dispatcher in gemm_int8.c only calls what the CPU supports.
 */
#include <immintrin.h>
#include <string.h>

#include "probes/gemm/gemm_int8.h"

#define INLINE static inline __attribute__((always_inline))
/* k groups (of 4) per block: 256 groups x 64 columns = 64 KiB of B per panel. */
#define KGROUPS 256

static inline int32_t load_quad(const uint8_t *p)
{
	int32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * The micro-kernel, written once: an MR x NR tile of accumulators over k groups g0..g1, each
 * step multiplying a broadcast quad of A by NR vectors of B. Instantiated per instruction set
 * below with that set's vector type, loads and multiply-accumulate step.
 */
#define DEFINE_TILE(name, attr, vec, MRMAX, NRMAX, VW, load, store, zero, set1, step)             \
	INLINE attr void name(const int mr, const int nr, int g0, int g1, const uint8_t *a, int lda,   \
			      const int8_t *b, size_t gstride, int32_t *c, int ldc, int accumulate)   \
	{                                                                                         \
		vec acc[MRMAX][NRMAX];                                                            \
		for (int q = 0; q < mr; q++)                                                      \
			for (int r = 0; r < nr; r++)                                              \
				acc[q][r] = accumulate ? load(c + (size_t)q * ldc + (VW) * r) : zero(); \
		const uint8_t *ap[MRMAX];                                                         \
		for (int q = 0; q < mr; q++)                                                      \
			ap[q] = a + (size_t)q * lda + 4 * (size_t)g0;                             \
		const int8_t *bg = b + (size_t)g0 * gstride;                                      \
		for (int g = g0; g < g1; g++, bg += gstride) {                                    \
			vec bv[NRMAX];                                                            \
			for (int r = 0; r < nr; r++)                                              \
				bv[r] = load(bg + 4 * (VW) * r);                                  \
			for (int q = 0; q < mr; q++) {                                            \
				const vec va = set1(load_quad(ap[q]));                            \
				ap[q] += 4;                                                       \
				for (int r = 0; r < nr; r++)                                      \
					acc[q][r] = step(acc[q][r], va, bv[r]);                   \
			}                                                                         \
		}                                                                                 \
		for (int q = 0; q < mr; q++)                                                      \
			for (int r = 0; r < nr; r++)                                              \
				store(c + (size_t)q * ldc + (VW) * r, acc[q][r]);                 \
	}

/* ---- 512-bit: 16 columns per zmm, 32 registers (24 accumulators) ---- */
#define Z_MR 6
#define Z_NR 4
#define AVX512 __attribute__((target("avx512f")))
INLINE AVX512 __m512i z_load(const void *p) { return _mm512_loadu_si512(p); }
INLINE AVX512 void z_store(void *p, __m512i v) { _mm512_storeu_si512(p, v); }

/* AVX-512 VNNI: vpdpbusd multiplies u8 x s8 and adds four products into each s32 lane. */
#define VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))
INLINE VNNI __m512i vnni_step(__m512i acc, __m512i a, __m512i b) { return _mm512_dpbusd_epi32(acc, a, b); }
DEFINE_TILE(vnni_tile, VNNI, __m512i, Z_MR, Z_NR, 16, z_load, z_store, _mm512_setzero_si512,
	    _mm512_set1_epi32, vnni_step)

/* AVX-512BW: vpmaddubsw to s16 pairs (cannot saturate for A <= 127), vpmaddwd by ones to s32. */
#define BW __attribute__((target("avx512f,avx512bw")))
INLINE BW __m512i bw_step(__m512i acc, __m512i a, __m512i b)
{
	return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(a, b), _mm512_set1_epi16(1)));
}
DEFINE_TILE(bw_tile, BW, __m512i, Z_MR, Z_NR, 16, z_load, z_store, _mm512_setzero_si512,
	    _mm512_set1_epi32, bw_step)

/* ---- AVX2: the AVX-512BW step on 8 columns per ymm, 16 registers in all ---- */
#define Y_MR 4
#define Y_NR 2
#define AVX2 __attribute__((target("avx2")))
INLINE AVX2 __m256i y_load(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }
INLINE AVX2 void y_store(void *p, __m256i v) { _mm256_storeu_si256((__m256i *)p, v); }
INLINE AVX2 __m256i avx2_step(__m256i acc, __m256i a, __m256i b)
{
	return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), _mm256_set1_epi16(1)));
}
DEFINE_TILE(avx2_tile, AVX2, __m256i, Y_MR, Y_NR, 8, y_load, y_store, _mm256_setzero_si256,
	    _mm256_set1_epi32, avx2_step)

/*
 * One driver for every kernel: k blocks of KGROUPS groups, then row blocks of MC rows, so
 * the A block (MC x 4*KGROUPS bytes) and one B panel stay in L2 while the micro-kernel
 * sweeps them. Edge columns run one vector at a time, edge rows one row at a time.
 */
#define MC 96

/* Start of the column vector v (VW columns wide) inside its panel, and the panel's group stride. */
static inline const int8_t *panel_at(const struct sdc_i8_packed *bp, int j, size_t *gstride)
{
	const int j0 = j / SDC_I8_PANEL * SDC_I8_PANEL;
	*gstride = (size_t)sdc_i8_panel_width(bp, j0) * 4;
	return bp->data + (size_t)j0 * (size_t)bp->kp + (size_t)(j - j0) * 4;
}

#define DEFINE_DRIVER(fname, attr, tile, MR, NR, VW)                                              \
	attr void fname(int m, const uint8_t *a, int lda, const struct sdc_i8_packed *bp, int32_t *c, \
			int ldc, const struct sdc_i8_rows_done *done)                                 \
	{                                                                                             \
		const int groups = bp->kp / 4, nvec = bp->np / (VW);                                   \
		for (int g0 = 0; g0 < groups; g0 += KGROUPS) {                                        \
			const int g1 = g0 + KGROUPS < groups ? g0 + KGROUPS : groups, acc = g0 > 0;    \
			for (int i0 = 0; i0 < m; i0 += MC) {                                          \
				const int i1 = i0 + MC < m ? i0 + MC : m;                             \
				for (int v = 0; v < nvec; v += (NR)) {                                \
					size_t gs;                                                    \
					const int8_t *b = panel_at(bp, v * (VW), &gs);                \
					const int full = v + (NR) <= nvec && gs == 4 * SDC_I8_PANEL;  \
					for (int i = i0; i < i1; i += (MR)) {                         \
						int32_t *ci = c + (size_t)i * ldc + (size_t)v * (VW); \
						if (i + (MR) <= i1 && full) {                         \
							tile(MR, NR, g0, g1, a + (size_t)i * lda, lda, \
							     b, gs, ci, ldc, acc);                   \
							continue;                                     \
						}                                                     \
						for (int r = v; r < nvec && r < v + (NR); r++) {      \
							size_t gs1;                                   \
							const int8_t *b1 = panel_at(bp, r * (VW), &gs1); \
							int32_t *c1 = c + (size_t)r * (VW);           \
							if (i + (MR) <= i1) {                         \
								tile(MR, 1, g0, g1, a + (size_t)i * lda, lda, \
								     b1, gs1, c1 + (size_t)i * ldc, ldc, acc); \
								continue;                             \
							}                                             \
							for (int q = i; q < i1; q++)                  \
								tile(1, 1, g0, g1, a + (size_t)q * lda, lda, \
								     b1, gs1, c1 + (size_t)q * ldc, ldc, acc); \
						}                                                     \
					}                                                             \
				}                                                                     \
				if (done && g1 == groups)                                             \
					done->fn(done->arg, i0, i1); /* final values, still in cache */ \
			}                                                                             \
		}                                                                                     \
		if (done && !groups)                                                                  \
			done->fn(done->arg, 0, m);                                                    \
	}

DEFINE_DRIVER(sdc_gemm_u8s8_avx512vnni, VNNI, vnni_tile, Z_MR, Z_NR, 16)
DEFINE_DRIVER(sdc_gemm_u8s8_avx512bw, BW, bw_tile, Z_MR, Z_NR, 16)
DEFINE_DRIVER(sdc_gemm_u8s8_avx2, AVX2, avx2_tile, Y_MR, Y_NR, 8)
