/*
 * The fast class: V-ABFT thresholds against a hand-worked example, clean data in every
 * distribution raising no alarm, exponent flips found and located, the compensated row sums of
 * every SIMD path against the portable one, and calibration files that round-trip and refuse
 * corruption or another host's key.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probes/gemm/calibration.h"
#include "check.h"
#include "run/facts_json.h"
#include "probes/gemm/abft.h"
#include "kernels/abft_sums.h"

static bool close_to(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fabs(b);
}

static void hand_worked(const struct sdc_dist_pool *pool)
{
	/*
	 * N = 3 columns, K = 2, e_max = 1e-3, c_sigma = 2.5.
	 * A row 0 = [1 3]: mu 2, extrema variance (3-2)(2-1) = 1.  A row 1 = [2 2]: mu 2, variance 0.
	 * B row 0 = [1 2 3]: mu 2, var (3-2)(2-1) = 1.  B row 1 = [0 4 2]: mu 2, var (4-2)(2-0) = 4.
	 * sum|mu_B| = 4, sum mu_B^2 = 8, sum var_B = 5.
	 * Row 0: Tdet = 3*2*4 = 24; Tvar23 = 2.5 sqrt(3*4*5 + 9*1*8) = 2.5 sqrt(132) = 28.722813232690143;
	 *        Tvar4 = 2.5 sqrt(3) sqrt(5) = 9.682458365518542; T = 1e-3 * 62.40527159820868.
	 * Row 1: Tdet = 24; Tvar23 = 2.5 sqrt(60) = 19.364916731037084; T = 1e-3 * 43.364916731037084.
	 * Weighted (w = 1 2 3, W1 = 6, W2 = 14), row 0: 48 + 2.5 sqrt(14*4*5 + 36*8) + 2.5 sqrt(14*5)
	 *        = 48 + 2.5 sqrt(568) + 2.5 sqrt(70) = 48 + 59.58187643906492 + 20.916500663351886.
	 */
	struct sdc_gemm g;
	struct sdc_gemm_cfg cfg = { .cls = SDC_GEMM_FP64_FAST, .m = 2, .n = 3, .k = 2, .kernel = "portable",
				    .seed = 1, .emax = 1e-3, .c_sigma = 2.5, .pools = pool, .npools = 1 };
	char err[256];
	CHECK(sdc_gemm_init(&g, &cfg, err, sizeof(err)) == 0);
	sdc_gemm_load(&g, 0);
	const double a[2][2] = { { 1, 3 }, { 2, 2 } }, b[2][3] = { { 1, 2, 3 }, { 0, 4, 2 } };
	for (int i = 0; i < 2; i++)
		for (int p = 0; p < 2; p++)
			((double *)g.a)[i * g.lda + p] = a[i][p];
	for (int p = 0; p < 2; p++)
		for (int j = 0; j < 3; j++)
			((double *)g.b)[p * g.ldb + j] = b[p][j];
	sdc_gemm_reencode(&g);
	CHECK_MSG(close_to(g.thr[0], 1e-3 * 62.40527159820868), "T0 %.17g", g.thr[0]);
	CHECK_MSG(close_to(g.thr[1], 1e-3 * 43.364916731037084), "T1 %.17g", g.thr[1]);
	CHECK_MSG(close_to(g.thr2[0], 1e-3 * (48 + 59.58187643906492 + 20.916500663351886)), "T2 %.17g", g.thr2[0]);
	/* The checksum columns: r1 = [6 6], r2 = 1+4+9 = 14 and 0+8+6 = 14. */
	CHECK(((double *)g.b)[3] == 6 && ((double *)g.b)[4] == 14 && ((double *)g.b)[g.ldb + 3] == 6);
	sdc_gemm_multiply(&g);
	/* C = [1*1+3*0, 1*2+3*4, 1*3+3*2] = [1 14 9], checksum 24; row 1 = [2 12 10], 24. */
	const double *c = g.c;
	CHECK(c[0] == 1 && c[1] == 14 && c[2] == 9 && c[3] == 24 && c[g.ldc + 3] == 24);
	CHECK(sdc_gemm_check(&g) == 0);
	/* Off by more than T at C[1][2]: found, located, and the difference reported. */
	((double *)g.c)[g.ldc + 2] += 0.5;
	struct sdc_gemm_bad_row bad;
	CHECK(!sdc_gemm_check_row(&g, 1, &bad) && bad.col == 2 && close_to(bad.e, 0.5) && !bad.weighted);
	sdc_gemm_release(&g);
}

static void clean_and_flips(const struct sdc_dist_pool *pools, enum sdc_gemm_class cls)
{
	struct sdc_gemm g;
	const bool fp64 = cls == SDC_GEMM_FP64_FAST;
	struct sdc_gemm_cfg cfg = { .cls = cls, .m = 48, .n = 64, .k = 200, .kernel = "auto", .seed = 3,
				    .emax = fp64 ? SDC_EMAX_FP64 : SDC_EMAX_FP32, .c_sigma = SDC_C_SIGMA,
				    .pools = pools, .npools = 4 };
	char err[256];
	CHECK(sdc_gemm_init(&g, &cfg, err, sizeof(err)) == 0);
	int false_alarms = 0, flips = 0, found = 0, located = 0;
	for (uint64_t set = 0; set < 200; set++) { /* 50 sets of each distribution */
		sdc_gemm_load(&g, set);
		sdc_gemm_multiply(&g);
		false_alarms += sdc_gemm_check(&g);
		/* Flip each of the top four exponent bits of one element of large enough magnitude. */
		const int i = (int)(set % 48), j = (int)((set * 7) % 64), top = fp64 ? 62 : 30;
		int bits;
		uint8_t *e = sdc_gemm_element(&g, 'C', i, j, &bits);
		double v = fp64 ? *(double *)e : *(float *)e;
		if (fabs(v) < 1e-3)
			continue;
		for (int bit = top - 3; bit <= top; bit++) {
			uint64_t u = 0;
			memcpy(&u, e, (size_t)bits / 8);
			u ^= 1ull << bit;
			memcpy(e, &u, (size_t)bits / 8);
			struct sdc_gemm_bad_row bad;
			flips++;
			if (!sdc_gemm_check_row(&g, i, &bad)) {
				found++;
				located += bad.col == j;
			}
			u ^= 1ull << bit;
			memcpy(e, &u, (size_t)bits / 8);
		}
	}
	CHECK_MSG(false_alarms == 0, "%s: %d false alarms on clean data", sdc_gemm_class_names[cls], false_alarms);
	CHECK(flips > 400);
	CHECK_MSG(found == flips && located == flips, "%s: %d flips, %d found, %d located", sdc_gemm_class_names[cls],
		  flips, found, located);
	sdc_gemm_release(&g);
}

static void sums_paths(void)
{
	/*
	 * Integers with 2^53-sized terms that cancel: a plain double sum loses the small ones, while
	 * the exact sum stays below 2^64, where long double (64-bit significand) holds it exactly.
	 */
	double v[301];
	for (int j = 0; j < 301; j++)
		v[j] = (j % 3 ? 1.0 : 0x1p53) * ((j * 37) % 11 - 5) + (j % 7);
	for (int n = 0; n <= 301; n += 7) {
		double w1, w2;
		sdc_abft_sums_isa(SDC_ISA_PORTABLE)->f64(v, n, &w1, &w2);
		long double e1 = 0, e2 = 0;
		for (int j = 0; j < n; j++) {
			e1 += v[j];
			e2 += (long double)(j + 1) * v[j];
		}
		CHECK_MSG(w1 == (double)e1, "portable sum n %d: %.17g, exact %.17Lg", n, w1, e1);
		CHECK_MSG(fabs(w2 - (double)e2) <= fabs((double)e2) * 0x1p-50, "portable weighted sum n %d", n);
		for (int isa = 1; isa < SDC_ISA_COUNT; isa++) {
			const struct sdc_abft_sums_fns *t = sdc_abft_sums_isa((enum sdc_isa)isa);
			double s1, s2;
			if (!t)
				continue;
			t->f64(v, n, &s1, &s2);
			CHECK_MSG(s1 == w1 && fabs(s2 - w2) <= fabs(w2) * 0x1p-48, "%s n %d: %.17g %.17g vs %.17g %.17g",
				  sdc_isa_name((enum sdc_isa)isa), n, s1, s2, w1, w2);
		}
	}
}

static void calibration_files(void)
{
	char path[] = "/tmp/sdcscan-cal-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	struct sdc_calibration_key key;
	sdc_calibration_key_here(&key, "portable");
	json_t *doc = json_pack("{s:s, s:i, s:{s:s, s:s, s:s, s:s}, s:{s:{s:f, s:[{s:i, s:i}]}, s:{s:f, s:[{s:i, s:i}]}}}",
				"format", SDC_CALIBRATION_FORMAT, "version", SDC_CALIBRATION_VERSION, "key", "cpu_model",
				key.cpu_model, "library", key.library, "library_version", key.library_version,
				"kernel", key.kernel, "precisions", "fp32", "emax", 1.25e-6, "sizes", "k", 64, "gemms",
				SDC_CALIBRATION_MIN_GEMMS, "fp64", "emax", 2.5e-15, "sizes", "k", 64, "gemms", 99);
	char err[700], source[512];
	CHECK(sdc_calibration_write(path, sdc_facts_of(doc), err, sizeof(err)) == 0);
	json_decref(doc);
	double e = 0;
	CHECK(sdc_calibration_emax(path, &key, "fp32", &e, source, sizeof(source), err, sizeof(err)) == 0);
	CHECK(e == 1.25e-6 && strstr(source, "calibrated"));
	/* fp64 rests on 99 GEMMs at its size: one fewer than the protocol's minimum, refused */
	CHECK(sdc_calibration_emax(path, &key, "fp64", &e, source, sizeof(source), err, sizeof(err)) == -1);
	CHECK_MSG(strstr(err, "fp64 at K=64 rests on 99 GEMMs"), "%s", err);
	/* Another host's key is refused and named. */
	struct sdc_calibration_key other = key;
	snprintf(other.kernel, sizeof(other.kernel), "Haswell");
	CHECK(sdc_calibration_emax(path, &other, "fp32", &e, source, sizeof(source), err, sizeof(err)) == -1);
	CHECK_MSG(strstr(err, "kernel") && strstr(err, "Haswell"), "%s", err);
	/* An edited value breaks the digest. */
	FILE *f = fopen(path, "r+");
	char text[4096];
	size_t len = fread(text, 1, sizeof(text) - 1, f);
	text[len] = '\0';
	char *at = strstr(text, "1.25");
	CHECK(at != NULL);
	at[2] = '3';
	rewind(f);
	fwrite(text, 1, len, f);
	fclose(f);
	CHECK(sdc_calibration_emax(path, &key, "fp32", &e, source, sizeof(source), err, sizeof(err)) == -1);
	CHECK_MSG(strstr(err, "SHA-256 does not match"), "%s", err);
	/* Truncated: not JSON any more. */
	CHECK(truncate(path, (off_t)(len / 2)) == 0);
	CHECK(sdc_calibration_emax(path, &key, "fp32", &e, source, sizeof(source), err, sizeof(err)) == -1);
	CHECK_MSG(strstr(err, path) != NULL, "%s", err);
	unlink(path);
	/* A named file must exist; the default location may be absent (then the built-in value). */
	CHECK(sdc_calibration_emax(path, &key, "fp32", &e, source, sizeof(source), err, sizeof(err)) == -1);
	setenv("SDCSCAN_CALIBRATION", path, 1);
	CHECK(sdc_calibration_emax("", &key, "fp32", &e, source, sizeof(source), err, sizeof(err)) == 0);
	CHECK(e == SDC_EMAX_FP32 && strstr(source, "built-in"));
}

int main(void)
{
	struct sdc_dist_pool pools[4];
	for (int d = 0; d < 4; d++)
		CHECK(sdc_dist_pool_init(&pools[d], (enum sdc_dist)d, 1) == 0);
	/* The pools hold what they claim: means and ranges of the four distributions. */
	for (int d = 0; d < 4; d++) {
		double s = 0, lo = INFINITY, hi = -INFINITY;
		for (size_t i = 0; i < SDC_DIST_POOL; i++) {
			s += pools[d].v[i];
			lo = fmin(lo, pools[d].v[i]);
			hi = fmax(hi, pools[d].v[i]);
		}
		const double mean = s / SDC_DIST_POOL;
		const double want[] = { 1e-6, 1, 0, 0 };
		CHECK_MSG(fabs(mean - want[d]) < 0.01, "%s mean %g", sdc_dist_names[d], mean);
		if (d >= SDC_DIST_UNIFORM)
			CHECK(lo >= -1 && hi <= 1);
		else
			CHECK(hi - lo > 8); /* normal tails */
	}
	hand_worked(&pools[0]);
	clean_and_flips(pools, SDC_GEMM_FP32_FAST);
	clean_and_flips(pools, SDC_GEMM_FP64_FAST);
	sums_paths();
	calibration_files();
	for (int d = 0; d < 4; d++)
		sdc_dist_pool_release(&pools[d]);
	return check_done("test_gemm_fast");
}
