/*
 * u8 x s8 -> s32 GEMM behind one interface: a portable C kernel and x86 kernels for AVX2,
 * AVX-512BW and AVX-512 VNNI, all on the same packed B. A is kept to 0..127 by the callers
 * so vpmaddubsw (AVX2, AVX-512BW) cannot saturate: 2 * 127 * -128 > INT16_MIN.
 */
#ifndef SDC_GEMM_INT8_H
#define SDC_GEMM_INT8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * B packed for the kernels: kp = k rounded up to 4, np = n rounded up to 16, zero padding.
 * Columns form panels of 64 (the last one may be narrower, a multiple of 16); inside a panel
 * of width w, rows come in groups of four and element (p, j) lives at
 *   (j0 * kp) + ((p / 4) * w + (j - j0)) * 4 + p % 4,   j0 = j rounded down to 64.
 * So one 64-byte load gives 16 columns x 4 rows, the shape vpdpbusd consumes, and a panel
 * is contiguous: walking k never strides by a power of two through the L1 sets.
 */
#define SDC_I8_PANEL 64

struct sdc_i8_packed {
	int k, n, kp, np;
	int8_t *data;
	size_t bytes;
};

int sdc_i8_packed_alloc(struct sdc_i8_packed *bp, int k, int n);
void sdc_i8_packed_release(struct sdc_i8_packed *bp);
/* Packs row-major b (k x n, leading dimension ldb). */
void sdc_i8_pack(struct sdc_i8_packed *bp, const int8_t *b, int ldb);

static inline int sdc_i8_panel_width(const struct sdc_i8_packed *bp, int j0)
{
	return bp->np - j0 < SDC_I8_PANEL ? bp->np - j0 : SDC_I8_PANEL;
}

static inline size_t sdc_i8_packed_offset(const struct sdc_i8_packed *bp, int p, int j)
{
	const int j0 = j / SDC_I8_PANEL * SDC_I8_PANEL, w = sdc_i8_panel_width(bp, j0);
	return (size_t)j0 * (size_t)bp->kp + ((size_t)(p / 4) * (size_t)w + (size_t)(j - j0)) * 4 +
	       (size_t)(p % 4);
}

/*
 * Told about rows [r0, r1) of C as soon as their values are final, while they are still in
 * cache: the ABFT check reads them there instead of streaming C from memory again.
 */
struct sdc_i8_rows_done {
	void (*fn)(void *arg, int r0, int r1);
	void *arg;
};

/*
 * C[i][j] = sum_p A[i][p] * B[p][j] for i < m and every j < np (padding columns included).
 * A is row-major with kp columns (zero padded) and leading dimension lda; ldc >= np. done may be
 * NULL; otherwise every row is reported to it exactly once.
 */
typedef void (*sdc_gemm_u8s8_fn)(int m, const uint8_t *a, int lda, const struct sdc_i8_packed *bp,
				 int32_t *c, int ldc, const struct sdc_i8_rows_done *done);

struct sdc_gemm_u8s8_impl {
	const char *name;
	const char *isa;
	bool (*supported)(void);
	sdc_gemm_u8s8_fn fn;
};

/* Every kernel built in, the portable one first; terminated by a NULL name. */
extern const struct sdc_gemm_u8s8_impl sdc_gemm_u8s8_impls[];

/* "auto" picks the fastest supported kernel. NULL if unknown or unsupported here. */
const struct sdc_gemm_u8s8_impl *sdc_gemm_u8s8_find(const char *name);

/*
 * Independent scalar path for one output row, on unpacked row-major B: out[j] for j < n.
 * Used to confirm and localise a mismatch, never in the burn loop.
 */
void sdc_gemm_u8s8_row_reference(int k, int n, const uint8_t *a_row, const int8_t *b, int ldb,
				 int64_t *out);

#if defined(__x86_64__)
void sdc_gemm_u8s8_avx2(int m, const uint8_t *a, int lda, const struct sdc_i8_packed *bp, int32_t *c,
			int ldc, const struct sdc_i8_rows_done *done);
void sdc_gemm_u8s8_avx512bw(int m, const uint8_t *a, int lda, const struct sdc_i8_packed *bp,
			    int32_t *c, int ldc, const struct sdc_i8_rows_done *done);
void sdc_gemm_u8s8_avx512vnni(int m, const uint8_t *a, int lda, const struct sdc_i8_packed *bp,
			      int32_t *c, int ldc, const struct sdc_i8_rows_done *done);
#endif

#endif
