/*
 * The fast class's per-row thresholds: V-ABFT's Algorithm 1 (Gao et al., seeds/004, eq. 23 with the
 * extrema-variance bound of eq. 24), B's part taken once per operand set, A's per row (abft.h).
 */
#include <math.h>

#include "kernels/abft_ref.h"
#include "kernels/clones.h"
#include "probes/gemm/abft.h"

/*
 * mean, and the extrema-variance bound (max - mean)(mean - min) >= variance (eq. 24). Eight
 * partial sums side by side: strict IEEE order would make one long dependency chain.
 */
#define LANES 8
#define DEFINE_STATS(name, T)                                                                     \
	CLONES static void name(const T *x, int n, double *mean, double *var)                      \
	{                                                                                          \
		T lo[LANES], hi[LANES];                                                            \
		double s[LANES] = { 0 };                                                           \
		for (int l = 0; l < LANES; l++)                                                    \
			lo[l] = hi[l] = x[0];                                                      \
		int j = 0;                                                                         \
		for (; j + LANES <= n; j += LANES)                                                 \
			for (int l = 0; l < LANES; l++) {                                          \
				const T v = x[j + l];                                              \
				s[l] += v;                                                         \
				lo[l] = v < lo[l] ? v : lo[l];                                     \
				hi[l] = v > hi[l] ? v : hi[l];                                     \
			}                                                                          \
		for (; j < n; j++) {                                                               \
			s[0] += x[j];                                                              \
			lo[0] = x[j] < lo[0] ? x[j] : lo[0];                                       \
			hi[0] = x[j] > hi[0] ? x[j] : hi[0];                                       \
		}                                                                                  \
		double sum = 0, mn = lo[0], mx = hi[0];                                            \
		for (int l = 0; l < LANES; l++) {                                                  \
			sum += s[l];                                                               \
			mn = lo[l] < mn ? lo[l] : mn;                                              \
			mx = hi[l] > mx ? hi[l] : mx;                                              \
		}                                                                                  \
		sdc_ref_row_stats(sum, mn, mx, n, mean, var);                                      \
	}

DEFINE_STATS(stats_f32, float)
DEFINE_STATS(stats_f64, double)

static void row_stats(const struct sdc_gemm *g, const void *x, int n, double *mean, double *var)
{
	if (g->cfg.cls == SDC_GEMM_FP32_FAST)
		stats_f32(x, n, mean, var);
	else
		stats_f64(x, n, mean, var);
}

/* B's part of the thresholds: sums over its rows of |mean|, mean^2 and the variance bound. */
void sdc_gemm_b_statistics(struct sdc_gemm *g)
{
	double s_absmu = 0, s_mu2 = 0, s_sig2 = 0;
	for (int p = 0; p < g->cfg.k; p++) {
		double mu, var;
		row_stats(g, (const char *)g->b + (size_t)p * g->ldb * g->esz, g->cfg.n, &mu, &var);
		s_absmu += fabs(mu);
		s_mu2 += mu * mu;
		s_sig2 += var;
	}
	g->b_absmu = s_absmu;
	g->b_mu2 = s_mu2;
	g->b_sig2 = s_sig2;
}

void sdc_gemm_thresholds(struct sdc_gemm *g)
{
	const struct sdc_ref_bstats b = { .absmu = g->b_absmu, .mu2 = g->b_mu2, .sig2 = g->b_sig2 };
	for (int i = 0; i < g->cfg.m; i++) {
		double mu, var;
		row_stats(g, (const char *)g->a + (size_t)i * g->lda * g->esz, g->cfg.k, &mu, &var);
		sdc_ref_vabft(g->cfg.emax, g->cfg.c_sigma, g->cfg.n, mu, var, &b, &g->thr[i], &g->thr2[i]);
	}
}

