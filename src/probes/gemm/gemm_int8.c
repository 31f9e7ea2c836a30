/* u8 x s8 -> s32 GEMM: the portable kernel and the dispatch to x86's (probes/gemm/gemm_int8.h). */
#include "probes/gemm/gemm_int8.h"

#include <stdlib.h>
#include <string.h>

#include "base/memory.h"

int sdc_i8_packed_alloc(struct sdc_i8_packed *bp, int k, int n)
{
	bp->k = k;
	bp->n = n;
	bp->kp = (k + 3) / 4 * 4;
	bp->np = (n + 15) / 16 * 16;
	bp->bytes = (size_t)bp->kp * (size_t)bp->np;
	bp->data = sdc_alloc_aligned(bp->bytes);
	if (!bp->data)
		return -1;
	memset(bp->data, 0, bp->bytes);
	return 0;
}

void sdc_i8_packed_release(struct sdc_i8_packed *bp)
{
	sdc_free_aligned(bp->data);
	bp->data = NULL;
}

void sdc_i8_pack(struct sdc_i8_packed *bp, const int8_t *b, int ldb)
{
	static const int8_t zeros[SDC_I8_PANEL] = { 0 };
	for (int j0 = 0; j0 < bp->np; j0 += SDC_I8_PANEL) {
		const int w = sdc_i8_panel_width(bp, j0), wn = SDC_MAX(0, SDC_MIN(w, bp->n - j0));
		int8_t *dst = bp->data + (size_t)j0 * (size_t)bp->kp;
		for (int p0 = 0; p0 < bp->kp; p0 += 4) {
			const int8_t *src[4];
			for (int q = 0; q < 4; q++)
				src[q] = p0 + q < bp->k ? b + (size_t)(p0 + q) * (size_t)ldb + j0 : zeros;
			for (int j = 0; j < wn; j++)
				for (int q = 0; q < 4; q++)
					dst[4 * j + q] = src[q][j];
			memset(dst + 4 * wn, 0, 4 * (size_t)(w - wn));
			dst += 4 * (size_t)w;
		}
	}
}

/* Portable kernel on the packed layout; the compiler vectorises the j loop. */
static void gemm_u8s8_portable(int m, const uint8_t *a, int lda, const struct sdc_i8_packed *bp,
			       int32_t *c, int ldc, const struct sdc_i8_rows_done *done)
{
	const int groups = bp->kp / 4;
	for (int i = 0; i < m; i++) {
		int32_t *crow = c + (size_t)i * (size_t)ldc;
		const uint8_t *arow = a + (size_t)i * (size_t)lda;
		memset(crow, 0, sizeof(int32_t) * (size_t)bp->np);
		for (int j0 = 0; j0 < bp->np; j0 += SDC_I8_PANEL) {
			const int w = sdc_i8_panel_width(bp, j0);
			const int8_t *panel = bp->data + (size_t)j0 * (size_t)bp->kp;
			for (int g = 0; g < groups; g++) {
				const int32_t a0 = arow[4 * g], a1 = arow[4 * g + 1];
				const int32_t a2 = arow[4 * g + 2], a3 = arow[4 * g + 3];
				const int8_t *bg = panel + (size_t)g * (size_t)w * 4;
				for (int j = 0; j < w; j++)
					crow[j0 + j] += a0 * bg[4 * j] + a1 * bg[4 * j + 1] +
							a2 * bg[4 * j + 2] + a3 * bg[4 * j + 3];
			}
		}
		if (done)
			done->fn(done->arg, i, i + 1);
	}
}

static bool always(void)
{
	return true;
}

#if defined(__x86_64__)
static bool has_avx2(void)
{
	return __builtin_cpu_supports("avx2");
}

static bool has_avx512bw(void)
{
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
}

static bool has_avx512vnni(void)
{
	return has_avx512bw() && __builtin_cpu_supports("avx512vnni");
}
#endif

/* Ordered slowest to fastest: "auto" takes the last supported one. */
const struct sdc_gemm_u8s8_impl sdc_gemm_u8s8_impls[] = {
	{ "portable", "C", always, gemm_u8s8_portable },
#if defined(__x86_64__)
	{ "avx2", "AVX2 vpmaddubsw", has_avx2, sdc_gemm_u8s8_avx2 },
	{ "avx512bw", "AVX-512BW vpmaddubsw", has_avx512bw, sdc_gemm_u8s8_avx512bw },
	{ "avx512vnni", "AVX-512 VNNI vpdpbusd", has_avx512vnni, sdc_gemm_u8s8_avx512vnni },
#endif
	{ NULL, NULL, NULL, NULL },
};

const struct sdc_gemm_u8s8_impl *sdc_gemm_u8s8_find(const char *name)
{
	const struct sdc_gemm_u8s8_impl *best = NULL;
	for (const struct sdc_gemm_u8s8_impl *k = sdc_gemm_u8s8_impls; k->name; k++) {
		if (!k->supported())
			continue;
		if (!strcmp(name, "auto"))
			best = k;
		else if (!strcmp(name, k->name))
			return k;
	}
	return !strcmp(name, "auto") ? best : NULL;
}

void sdc_gemm_u8s8_row_reference(int k, int n, const uint8_t *a_row, const int8_t *b, int ldb,
				 int64_t *out)
{
	for (int j = 0; j < n; j++) {
		int64_t s = 0;
		for (int p = 0; p < k; p++)
			s += (int64_t)a_row[p] * b[(size_t)p * (size_t)ldb + (size_t)j];
		out[j] = s;
	}
}
