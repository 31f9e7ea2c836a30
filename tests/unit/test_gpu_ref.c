/*
 * The arithmetic the GPU kernels and the host share as __host__ __device__ code (kernels/half.h,
 * kernels/abft_ref.h, probes/gemm/gemm_data.h), compiled for the host, against references written
 * independently here: binary16 values and roundings worked in double from IEEE 754's definitions
 * (and the compiler's own _Float16 conversions where it has that type: GCC does, Debian 12's clang
 * 14 does not on x86-64), a bf16 rounding done by comparing candidates in double, digit expansions
 * evaluated in 128-bit integers, single errors planted at known columns, V-ABFT's eq. 23 typed from
 * the paper, and the exactness bound's worst case.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/abft_ref.h"
#include "probes/gemm/gemm_data.h"
#include "kernels/half.h"
#include "probes/gemm/gemm.h"

static uint32_t fbits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static float bitsf(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 11;
}

/*
 * binary16 from its definition (IEEE 754-2019 3.3-3.4, 754-2008 the same): a sign, a 5-bit
 * exponent biased by 15 and a 10-bit trailing significand m; exponent 0 holds the subnormals
 * m * 2^-24, 31 infinity (m = 0) and the NaNs. Worked as values in double, not bits.
 */
static double half_ref_value(uint16_t h)
{
	const int s = h >> 15, e = h >> 10 & 31, m = h & 1023;
	double v;
	if (e == 31)
		v = m ? NAN : INFINITY;
	else if (e == 0)
		v = ldexp(m, -24);
	else
		v = ldexp(1024 + m, e - 25); /* (1 + m / 2^10) * 2^(e - 15) */
	return s ? -v : v;
}

/* The encoding of a binary16 value v (finite, representable, |v| <= 65504). */
static uint16_t half_ref_encode(double v)
{
	const uint16_t sign = signbit(v) ? 0x8000u : 0;
	const double a = fabs(v);
	if (a < 0x1p-14)
		return sign | (uint16_t)(a * 0x1p24); /* subnormal (or zero): m = a / 2^-24 */
	int e;
	const double fr = frexp(a, &e); /* a = fr * 2^e, fr in [0.5, 1): biased exponent e - 1 + 15 */
	return sign | (uint16_t)((e + 14) << 10 | (int)((fr * 2 - 1) * 1024));
}

/*
 * f rounded to binary16 by the definition of round to nearest, ties to even (IEEE 754-2019 4.3.1):
 * of the two binary16 values either side of |f| (on the grid of its binade: 2^(E-10) for |f| in
 * [2^E, 2^(E+1)), 2^-24 below 2^-14) the nearer, on a tie the one with an even significand; a
 * magnitude of at least 2^15 * (2 - 2^-11) = 65520 rounds to infinity (7.4). Every step is exact
 * in double (|f| has 24 significant bits, the grid is a power of two).
 */
static uint16_t half_ref_round(float f)
{
	const uint16_t sign = signbit(f) ? 0x8000u : 0;
	const double a = fabs((double)f);
	if (isnan(f))
		return sign | 0x7E00u;
	if (a >= 65520.0)
		return sign | 0x7C00u;
	int e;
	frexp(a, &e); /* a in [2^(e-1), 2^e) */
	const double q = ldexp(1.0, (a < 0x1p-14 ? -14 : e - 1) - 10);
	double n = floor(a / q);
	const double r = a - n * q;
	if (r > q / 2 || (r == q / 2 && fmod(n, 2) == 1))
		n += 1;
	return half_ref_encode(signbit(f) ? -n * q : n * q);
}

/* Anchors for the references above and the code alike: values worked by hand (and by Python's
 * struct 'e' format, which packs IEEE binary16 rounding to nearest even). */
static void test_half_anchors(void)
{
	static const struct {
		uint32_t f;
		uint16_t h;
	} to_half[] = {
		{ 0x3F800000u, 0x3C00u }, /* 1 */
		{ 0xC0000000u, 0xC000u }, /* -2 */
		{ 0x80000000u, 0x8000u }, /* -0 */
		{ 0x3DCCCCCDu, 0x2E66u }, /* 0.1f */
		{ 0x3EAAAAABu, 0x3555u }, /* 1/3 */
		{ 0x477FE000u, 0x7BFFu }, /* 65504, the largest finite */
		{ 0x477FEFFFu, 0x7BFFu }, /* just below 65520 */
		{ 0x477FF000u, 0x7C00u }, /* 65520: infinity */
		{ 0xFF800000u, 0xFC00u }, /* -INF */
		{ 0x38800000u, 0x0400u }, /* 2^-14, the smallest normal */
		{ 0x387FE000u, 0x0400u }, /* 1023.5 * 2^-24: a tie, to the even 1024 */
		{ 0x33800000u, 0x0001u }, /* 2^-24, the smallest subnormal */
		{ 0x33000000u, 0x0000u }, /* 2^-25: a tie, to the even 0 */
		{ 0x33000001u, 0x0001u }, /* just above it */
		{ 0x33C00000u, 0x0002u }, /* 1.5 * 2^-24: a tie, to the even 2 */
		{ 0x3F801000u, 0x3C00u }, /* 1 + 2^-11: a tie, to the even 0x3C00 */
		{ 0x3F803000u, 0x3C02u }, /* 1 + 3 * 2^-11: a tie, to the even 0x3C02 */
	};
	for (size_t i = 0; i < sizeof(to_half) / sizeof(to_half[0]); i++) {
		const float f = bitsf(to_half[i].f);
		CHECK_MSG(half_ref_round(f) == to_half[i].h, "reference: 0x%08x -> 0x%04x, want 0x%04x", to_half[i].f,
			  half_ref_round(f), to_half[i].h);
		CHECK_MSG(sdc_float_to_half(f) == to_half[i].h, "0x%08x -> 0x%04x, want 0x%04x", to_half[i].f,
			  sdc_float_to_half(f), to_half[i].h);
	}
	static const struct {
		uint16_t h;
		uint32_t f;
	} to_float[] = {
		{ 0x3C00u, 0x3F800000u }, { 0x7BFFu, 0x477FE000u }, { 0x0001u, 0x33800000u },
		{ 0x03FFu, 0x387FC000u }, { 0x0400u, 0x38800000u }, { 0xC000u, 0xC0000000u },
		{ 0x3555u, 0x3EAAA000u }, { 0x2E66u, 0x3DCCC000u }, { 0x8000u, 0x80000000u },
		{ 0x7C00u, 0x7F800000u }, { 0xFC00u, 0xFF800000u },
	};
	for (size_t i = 0; i < sizeof(to_float) / sizeof(to_float[0]); i++) {
		CHECK(fbits((float)half_ref_value(to_float[i].h)) == to_float[i].f);
		CHECK_MSG(fbits(sdc_half_to_float(to_float[i].h)) == to_float[i].f, "0x%04x -> 0x%08x, want 0x%08x",
			  to_float[i].h, fbits(sdc_half_to_float(to_float[i].h)), to_float[i].f);
	}
}

/*
 * fp16 both ways: all 65536 halves to float, and 2e6 floats to half, against the references
 * above and, where the compiler has _Float16 (IEEE binary16, round to nearest even; GCC on
 * x86-64), against its conversions too. A NaN goes to a NaN of the same sign, and a quiet
 * one back to half unchanged (754-2019 6.2.3: its payload is kept); a signalling one quieted.
 */
static void test_half(void)
{
	test_half_anchors();
	int bad = 0;
#ifdef __FLT16_MANT_DIG__
	int bad_cc = 0;
#endif
	for (uint32_t h = 0; h < 65536; h++) {
		const uint16_t hh = (uint16_t)h;
		const float want = (float)half_ref_value(hh), got = sdc_half_to_float(hh);
		if (isnan(want))
			bad += !isnan(got) || !signbit(got) != !(hh & 0x8000u) ||
			       sdc_float_to_half(got) != (hh | 0x200u);
		else
			bad += fbits(want) != fbits(got);
#ifdef __FLT16_MANT_DIG__
		_Float16 ref;
		memcpy(&ref, &hh, 2);
		const float cc = (float)ref;
		bad_cc += isnan(cc) ? !isnan(got) : fbits(cc) != fbits(got);
#endif
	}
	CHECK_MSG(bad == 0, "%d of 65536 halves convert to float otherwise than binary16 defines", bad);
#ifdef __FLT16_MANT_DIG__
	CHECK_MSG(bad_cc == 0, "%d of 65536 halves convert to float otherwise than _Float16", bad_cc);
	bad_cc = 0;
#endif
	uint64_t seed = 1;
	bad = 0;
	for (int i = 0; i < 2000000; i++) {
		/* every exponent, subnormals, ties (low 13 bits 0x1000) and the overflow edge */
		uint32_t u = (uint32_t)lcg(&seed);
		if (i % 4 == 1)
			u = (u & 0xFFFFE000u) | 0x1000u;
		if (i % 4 == 2)
			u = (u & 0x80000000u) | ((uint32_t)(lcg(&seed) % 40 + 96) << 23) | (u & 0x7FFFFFu);
		const float f = bitsf(u);
		const uint16_t got = sdc_float_to_half(f);
		if (isnan(f)) {
			bad += (got & 0x7C00u) != 0x7C00u || !(got & 0x3FFu);
			continue;
		}
		bad += got != half_ref_round(f);
#ifdef __FLT16_MANT_DIG__
		const _Float16 ref = (_Float16)f;
		uint16_t want;
		memcpy(&want, &ref, 2);
		bad_cc += got != want;
#endif
	}
	CHECK_MSG(bad == 0, "%d of 2e6 floats round to half otherwise than binary16 defines", bad);
#ifdef __FLT16_MANT_DIG__
	CHECK_MSG(bad_cc == 0, "%d of 2e6 floats round to half otherwise than _Float16", bad_cc);
#endif
}

/* bf16: the nearest of the two bf16 values around f, ties to the even one, compared in double. */
static uint16_t bf16_ref(float f)
{
	const uint32_t u = fbits(f);
	if (isnan(f))
		return (uint16_t)(u >> 16 | 0x40);
	const uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
	if ((u & 0xFFFF) == 0)
		return lo;
	const double d = f, dl = bitsf((uint32_t)lo << 16), dh = isinf(bitsf((uint32_t)hi << 16)) ? INFINITY
												  : bitsf((uint32_t)hi << 16);
	const double el = fabs(d - dl), eh = isinf(dh) ? fabs(d - dl) * 2 + 1 : fabs(dh - d);
	/* toward infinity: the next bf16 past the largest finite is INF, a tie goes to it when even */
	if (isinf(dh)) {
		const double ulp = ldexp(1.0, ((int)(u >> 23 & 0xFF) - 127) - 7);
		return fabs(d - dl) >= ulp / 2 && !(fabs(d - dl) == ulp / 2 && !(lo & 1)) ? hi : lo;
	}
	if (el < eh)
		return lo;
	if (eh < el)
		return hi;
	return (lo & 1) ? hi : lo;
}

static void test_bf16(void)
{
	uint64_t seed = 7;
	int bad = 0;
	for (int i = 0; i < 2000000; i++) {
		uint32_t u = (uint32_t)lcg(&seed);
		if (i % 3 == 1)
			u = (u & 0xFFFF0000u) | 0x8000u; /* a tie */
		const float f = bitsf(u);
		const uint16_t got = sdc_float_to_bf16(f), want = bf16_ref(f);
		if (isnan(f) ? !isnan(sdc_bf16_to_float(got)) : got != want)
			bad++;
		if (!isnan(f) && fbits(sdc_bf16_to_float(got)) != (uint32_t)got << 16)
			bad++;
	}
	CHECK_MSG(bad == 0, "%d bf16 roundings differ from the nearest-even reference", bad);
}

/* Balanced digits: the value they spell (in 128-bit arithmetic) and each digit's range. */
static void test_digits(void)
{
	uint64_t seed = 3;
	int bad = 0;
	for (int i = 0; i < 100000; i++) {
		const int b = 7 + (int)(lcg(&seed) % 2); /* base 2^7 (int8) and 2^8 (bf16/fp16) */
		const int64_t v = (int64_t)(lcg(&seed) % ((uint64_t)1 << 50)) - ((int64_t)1 << 49);
		int64_t d[8];
		if (!sdc_ref_digits(v, b, 8, d)) {
			bad++;
			continue;
		}
		__int128 sum = 0, w = 1;
		for (int t = 0; t < 8; t++) {
			sum += (__int128)d[t] * w;
			w <<= b;
			if (d[t] < -((int64_t)1 << (b - 1)) || d[t] >= (int64_t)1 << (b - 1))
				bad++;
		}
		if (sum != v || sdc_ref_from_digits(d, 8, b) != v)
			bad++;
	}
	CHECK_MSG(bad == 0, "%d digit expansions wrong", bad);
	int64_t d[2];
	CHECK(!sdc_ref_digits((int64_t)1 << 20, 7, 2, d)); /* two base-128 digits cannot hold 2^20 */
}

/* A single error planted at column j is located there; a second error is not passed off as one. */
static void test_locate(void)
{
	uint64_t seed = 11;
	int bad = 0;
	for (int i = 0; i < 100000; i++) {
		const int n = 1 + (int)(lcg(&seed) % 8192), j = (int)(lcg(&seed) % (uint64_t)n);
		int64_t delta = (int64_t)(lcg(&seed) % 100000) + 1;
		if (lcg(&seed) & 1)
			delta = -delta;
		const int64_t e1 = (int64_t)(lcg(&seed) % 1000000), e2 = (int64_t)(lcg(&seed) % 1000000000);
		if (sdc_ref_locate(n, e1 + delta, e2 + (int64_t)(j + 1) * delta, e1, e2, 0, -1) != j)
			bad++;
		/* a non-integer at j whose fix both checksums agree on */
		if (sdc_ref_locate(n, e1 - 7, e2 - (int64_t)(j + 1) * 7, e1, e2, 1, j) != j)
			bad++;
		if (sdc_ref_locate(n, e1 - 7, e2 - (int64_t)(j + 1) * 7 + 1, e1, e2, 1, j) != -1)
			bad++;
	}
	CHECK_MSG(bad == 0, "%d planted errors located wrong", bad);
	/* errors of +1 at columns 0 and 2 of 8: d1 = 2, d2 = 1 + 3 = 4: the quotient says column 1, a
	 * column that holds no error; this is why the host recomputes the row before it names one */
	CHECK(sdc_ref_locate(8, 102, 204, 100, 200, 0, -1) == 1);
	CHECK(sdc_ref_locate(8, 103, 204, 100, 200, 0, -1) == -1); /* d2 not a multiple of d1 */
	CHECK(sdc_ref_locate(8, 100, 201, 100, 200, 0, -1) == -1); /* d1 = 0: checksum column wrong */
	CHECK(sdc_ref_locate(8, 101, 209, 100, 200, 0, -1) == -1); /* quotient 9 > n */
	CHECK(sdc_ref_locate(8, 100, 200, 100, 200, 2, 3) == -1);  /* two non-integers */
}

static void test_exact_f32(void)
{
	CHECK(sdc_ref_exact_f32(0.0f) && sdc_ref_exact_f32(-3.0f) && sdc_ref_exact_f32(16777216.0f));
	CHECK(!sdc_ref_exact_f32(-0.0f));       /* exact data never sums to -0 */
	CHECK(!sdc_ref_exact_f32(0.5f) && !sdc_ref_exact_f32(-1.25f));
	CHECK(!sdc_ref_exact_f32(16777218.0f)); /* beyond 2^24: no longer every integer */
	CHECK(!sdc_ref_exact_f32(NAN) && !sdc_ref_exact_f32(INFINITY));
}

/* V-ABFT eq. 23 typed from the paper, for the plain checksum (weights 1) and the weighted one. */
static void test_vabft(void)
{
	const struct sdc_ref_bstats b = { .absmu = 3.5, .mu2 = 2.25, .sig2 = 7.0 };
	const double emax = 1e-7, c = 2.5, mu = -0.25, var = 0.5;
	const int n = 100;
	double t1, t2;
	sdc_ref_vabft(emax, c, n, mu, var, &b, &t1, &t2);
	const double N = 100, W1 = 5050, W2 = 338350; /* sum j, sum j^2 for j = 1..100 */
	const double want1 = emax * (N * 0.25 * 3.5 + c * sqrt(N * 0.0625 * 7.0 + N * N * 0.5 * 2.25) +
				     c * sqrt(N) * sqrt(0.5) * sqrt(7.0));
	const double want2 = emax * (W1 * 0.25 * 3.5 + c * sqrt(W2 * 0.0625 * 7.0 + W1 * W1 * 0.5 * 2.25) +
				     c * sqrt(W2) * sqrt(0.5) * sqrt(7.0));
	CHECK_MSG(fabs(t1 / want1 - 1) < 1e-14 && fabs(t2 / want2 - 1) < 1e-14, "t1 %.17g want %.17g, t2 %.17g want %.17g",
		  t1, want1, t2, want2);
	/* the extrema-variance bound: (max - mean)(mean - min), never negative */
	double mean, v;
	sdc_ref_row_stats(6.0, -1.0, 4.0, 4, &mean, &v);
	CHECK(mean == 1.5 && v == 2.5 * 2.5);
	sdc_ref_row_stats(8.0, 2.0, 2.0, 4, &mean, &v);
	CHECK(mean == 2.0 && v == 0);
}

/*
 * The generators: integers within their bounds, every row of A with a non-negative first entry
 * (no -0.0 sum), the same element from the same (seed, class, set, index) and another from
 * another; the tensor-core bound's worst case (every |a| = amax, |b| = bmax, and the largest
 * digit) stays below 2^22 for every k the exact types allow.
 */
static void test_generators(void)
{
	const struct sdc_rng ra = sdc_gd_rng(5, 18, SDC_GD_A), rb = sdc_gd_rng(5, 18, SDC_GD_B);
	int bad = 0, diff = 0;
	for (int i = 0; i < 64; i++)
		for (int p = 0; p < 100; p++) {
			const int64_t a = sdc_gd_small_a(&ra, 3, 100, i, p, 9);
			bad += a < -9 || a > 9 || (p == 0 && a < 0);
			bad += a != sdc_gd_small_a(&ra, 3, 100, i, p, 9);
			diff += a != sdc_gd_small_a(&ra, 4, 100, i, p, 9);
			const int ai = sdc_gd_int8_a(&ra, 3, 100, i, p);
			bad += ai < 0 || ai > 127;
			const int64_t bv = sdc_gd_small_b(&rb, 3, 64, p, i, 127);
			bad += bv < -127 || bv > 127;
		}
	CHECK_MSG(bad == 0, "%d generated elements out of bounds or not reproducible", bad);
	CHECK_MSG(diff > 6000 * 0.8, "only %d of 6400 elements changed with the set", diff);
	/* the bound as the burn configures it (sdc_gemm_gpu_burn_cfg), at every k it accepts */
	for (int type = SDC_GPU_BF16; type <= SDC_GPU_FP16; type++)
		for (int k = 16; k <= 65536; k *= 2) {
			struct sdc_gpu_gemm_cfg c;
			char err[256];
			if (sdc_gemm_gpu_burn_cfg((enum sdc_gpu_type)type, 64, 64, k, 1, &c, err, sizeof(err))) {
				CHECK_MSG(k > 32768, "k=%d refused: %s", k, err);
				continue;
			}
			const int64_t digit = (int64_t)1 << (c.base_log2 - 1);
			CHECK_MSG((int64_t)k * c.amax * (c.bmax > digit ? c.bmax : digit) <= (1 << 22),
				  "type %d k=%d: amax %lld bmax %lld exceed 2^22", type, k, (long long)c.amax, (long long)c.bmax);
			CHECK(c.amax >= 1 && c.bmax >= 1 && c.ldc % 16 == 0 && c.n_ext > 64);
		}
}

int main(void)
{
	test_half();
	test_bf16();
	test_digits();
	test_locate();
	test_exact_f32();
	test_vabft();
	test_generators();
	return check_done("test_gpu_ref");
}
