/*
 * The GPU fast types' default e_max (src/probes/gemm/gpu.c) against a simulation of what the GPU
 * computes, on the burn's own data (probes/gemm/dist.h pools) and element formats (gemm_elements.h):
 * a 64 x 64 x 256 GEMM whose operands reach the product as the tensor cores take them. For TF32
 * both conversions the sources leave open are simulated, written out here from the bits: round to
 * nearest with ties away (PTX cvt.rna.tf32.f32; CUTLASS adds half a TF32 ulp and drops the low 13
 * bits) and truncation (the low 13 bits dropped: what PyTorch's notes say the tensor cores read).
 *
 *   - V-ABFT's e_max >= max |alpha_k|, |beta_k| (seeds/004, 3.2-3.4), with e_kn the relative error
 *     of B_kn through the product less that of its row through the checksum column: observed from
 *     the simulated conversions, it must stay below the default and above a quarter of it (a
 *     default ten times too loose, or two times too tight, fails);
 *   - the whole check (exact products accumulated in fp32 truncating, C stored in fp32, each row
 *     summed in double against its checksum columns, thresholds from abft_ref.h at the default
 *     e_max): no clean row fails.
 *
 * fp32-fast converts nothing: its e_max is V-ABFT Table 7's H100 FP32 accumulation, measured, which
 * a sequential sum here does not reproduce (it is less accurate than cuBLAS on an H100 was); only
 * its checksums' rounding is checked, against a twentieth of the default.
 */
#include <stdbool.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/abft_ref.h"
#include "probes/gemm/abft.h"
#include "probes/gemm/dist.h"
#include "probes/gemm/gemm.h"
#include "probes/gemm/gemm_elements.h"

enum { M = 64, N = 64, K = 256 };

/* How the tensor cores take a stored operand: as it is, or converted to TF32 (11 significant bits). */
enum conv { CONV_NONE, CONV_TF32_NEAREST, CONV_TF32_TRUNCATE };
static const char *const conv_names[] = { "as stored", "TF32 round to nearest", "TF32 truncated" };

static double tensor_core_value(double stored, enum conv c)
{
	if (c == CONV_NONE)
		return stored;
	float f = (float)stored;
	uint32_t u;
	memcpy(&u, &f, 4);
	if (c == CONV_TF32_NEAREST)
		u += 0x1000; /* half a TF32 ulp: ties go away from zero */
	u &= 0xffffe000u;
	memcpy(&f, &u, 4);
	return f;
}

/* acc + x rounded toward zero to fp32: a tensor core's accumulation as Fasi et al. found it
 * ("Numerical behavior of NVIDIA tensor cores", PeerJ CS 2021: truncated, not rounded). */
static float add_toward_zero(float acc, double x)
{
	const double s = (double)acc + x; /* (rounded once more only below fp32's last bit) */
	float f = (float)s;
	if (fabs((double)f) > fabs(s))
		f = nextafterf(f, 0.0f);
	return f;
}

/* The value a type stores for x (the device's rounding of drawn values and of the checksums). */
static double stored(enum sdc_gpu_type t, double x)
{
	return sdc_gemm_value_of(t, sdc_gemm_bits_of(t, x));
}

/* The simulated conversions are what they claim: within u (nearest) or below 2u and toward zero. */
static void conversions(const double *v, size_t nv)
{
	const double u = ldexp(1, -11);
	int bad = 0;
	for (size_t i = 0; i < nv; i++) {
		const double x = stored(SDC_GPU_TF32_FAST, v[i]), rn = tensor_core_value(x, CONV_TF32_NEAREST);
		const double rz = tensor_core_value(x, CONV_TF32_TRUNCATE);
		bad += !(fabs(rn - x) <= u * fabs(x)) || !(fabs(rz - x) < 2 * u * fabs(x)) || fabs(rz) > fabs(x);
		bad += ldexp(rn, 10 - ilogb(rn)) != nearbyint(ldexp(rn, 10 - ilogb(rn))); /* 11 bits */
	}
	CHECK_MSG(bad == 0, "%d simulated TF32 conversions out of their bounds", bad);
}

/*
 * max over the rows p of B of |alpha_p| and beta_p (V-ABFT eq. 18), e_pj = d_pj - d_p: d_pj the
 * relative error of B[p][j] as the tensor cores take it, d_p that of the row's stored checksum
 * (summed in double in column order, as k_encode_fast does) against the row's exact sum.
 */
static double max_alpha_beta(enum sdc_gpu_type type, enum conv cv, const double *b)
{
	double worst = 0;
	for (int p = 0; p < K; p++) {
		double sum = 0;
		for (int j = 0; j < N; j++)
			sum += stored(type, b[p * N + j]);
		const double dp = tensor_core_value(stored(type, sum), cv) / sum - 1;
		double s1 = 0, s2 = 0;
		for (int j = 0; j < N; j++) {
			const double x = stored(type, b[p * N + j]);
			const double e = (x != 0 ? tensor_core_value(x, cv) / x - 1 : 0) - dp;
			s1 += e;
			s2 += e * e;
		}
		worst = fmax(worst, fmax(fabs(s1 / N), sqrt(s2 / N)));
	}
	return worst;
}

/*
 * The whole check on the simulated GEMM: B_ext = [B | r1 | r2] stored, C[i][j] the fp32 sum in
 * order of the exact products of the operands as the tensor cores take them, each row's C summed
 * in double against its two checksum columns, thresholds (abft_ref.h) from the stored operands'
 * statistics as k_bstats and k_thresholds compute them. Returns the largest |difference| / threshold.
 */
static double worst_row(enum sdc_gpu_type type, enum conv cv, const double *a, const double *b, double emax)
{
	static double bx[K][N + 2], ax[M][K];
	struct sdc_ref_bstats bs = { 0, 0, 0 };
	for (int p = 0; p < K; p++) {
		double r1 = 0, r2 = 0, mn = INFINITY, mx = -INFINITY;
		for (int j = 0; j < N; j++) {
			const double v = stored(type, b[p * N + j]);
			bx[p][j] = v;
			r1 += v;
			r2 += (double)(j + 1) * v;
			mn = fmin(mn, v);
			mx = fmax(mx, v);
		}
		bx[p][N] = stored(type, r1);
		bx[p][N + 1] = stored(type, r2);
		double mu, var;
		sdc_ref_row_stats(r1, mn, mx, N, &mu, &var);
		bs.absmu += fabs(mu), bs.mu2 += mu * mu, bs.sig2 += var;
	}
	double worst = 0;
	for (int i = 0; i < M; i++) {
		double s = 0, mn = INFINITY, mx = -INFINITY;
		for (int p = 0; p < K; p++) {
			ax[i][p] = stored(type, a[i * K + p]);
			s += ax[i][p];
			mn = fmin(mn, ax[i][p]);
			mx = fmax(mx, ax[i][p]);
		}
		double mu, var, t1, t2;
		sdc_ref_row_stats(s, mn, mx, K, &mu, &var);
		sdc_ref_vabft(emax, SDC_C_SIGMA, N, mu, var, &bs, &t1, &t2);
		double c[N + 2];
		for (int j = 0; j < N + 2; j++) {
			float acc = 0;
			for (int p = 0; p < K; p++) /* (the product of two 11- or 8-bit significands is exact) */
				acc = add_toward_zero(acc, tensor_core_value(ax[i][p], cv) *
								   tensor_core_value(bx[p][j], cv));
			c[j] = acc;
		}
		double s1 = 0, s2 = 0;
		for (int j = 0; j < N; j++) {
			s1 += c[j];
			s2 += (double)(j + 1) * c[j];
		}
		worst = fmax(worst, fmax(fabs(c[N] - s1) / t1, fabs(c[N + 1] - s2) / t2));
	}
	return worst;
}

int main(void)
{
	const enum sdc_dist dists[] = { SDC_DIST_NORMAL, SDC_DIST_UNIFORM, SDC_DIST_NORMAL1 };
	const struct {
		enum sdc_gpu_type type;
		enum conv cv;
	} cases[] = { { SDC_GPU_TF32_FAST, CONV_TF32_NEAREST },
		      { SDC_GPU_TF32_FAST, CONV_TF32_TRUNCATE },
		      { SDC_GPU_BF16_FAST, CONV_NONE },
		      { SDC_GPU_FP32_FAST, CONV_NONE } };
	for (size_t d = 0; d < sizeof(dists) / sizeof(dists[0]); d++) {
		struct sdc_dist_pool pool;
		CHECK(sdc_dist_pool_init(&pool, dists[d], 1) == 0);
		const double *a = pool.v, *b = pool.v + M * K;
		if (d == 0)
			conversions(pool.v, (size_t)M * K + (size_t)K * N);
		for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
			const enum sdc_gpu_type type = cases[c].type;
			struct sdc_gpu_gemm_cfg cfg;
			char err[256];
			CHECK(sdc_gemm_gpu_burn_cfg(type, M, N, K, 1, &cfg, err, sizeof(err)) == 0);
			char what[96];
			snprintf(what, sizeof(what), "%s, %s, %s", sdc_gemm_gpu_type_names[type], conv_names[cases[c].cv],
				 sdc_dist_names[dists[d]]);
			const double ab = max_alpha_beta(type, cases[c].cv, b);
			/* fp32: its checksums' rounding alone; the accumulation Table 7 measured is not here */
			const bool fp32 = type == SDC_GPU_FP32_FAST;
			const double rows = fp32 ? 0 : worst_row(type, cases[c].cv, a, b, cfg.emax);
			printf("%-42s e_max %.4g: max |alpha|, beta %.4g (%.2f e_max)", what, cfg.emax, ab, ab / cfg.emax);
			printf(fp32 ? "\n" : "; worst clean row |E| / T %.3f\n", rows);
			CHECK_MSG(ab <= cfg.emax, "%s: alpha/beta %g above the default e_max %g", what, ab, cfg.emax);
			const double floor = fp32 ? cfg.emax / 20 : cfg.emax / 4;
			CHECK_MSG(ab >= floor, "%s: alpha/beta %g: the default e_max %g is more than %.0f times it", what, ab,
				  cfg.emax, cfg.emax / floor);
			CHECK_MSG(rows <= 1, "%s: a clean row's difference is %.3g times its threshold", what, rows);
		}
		sdc_dist_pool_release(&pool);
	}
	return check_done("test_gpu_fast_emax");
}
