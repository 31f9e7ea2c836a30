#include "kernels/exactmath.h"

#include <stdint.h>
#include <string.h>

static double from_bits(uint64_t u)
{
	double d;
	memcpy(&d, &u, sizeof(d));
	return d;
}

static uint64_t to_bits(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof(u));
	return u;
}

/* ln 2 split so that k * LN2_HI is exact for |k| < 2^11 (the low 32 bits of LN2_HI are zero). */
#define LN2_HI 6.93147180369123816490e-01 /* 0x3FE62E42FEE00000 */
#define LN2_LO 1.90821492927058770002e-10 /* 0x3DEA39EF35793C76 */
#define INV_LN2 1.44269504088896338700e+00

/* 2^k for -1074 <= k <= 1023, built from bits (two steps for the subnormal range). */
static double pow2(int k)
{
	if (k >= -1022)
		return from_bits((uint64_t)(k + 1023) << 52);
	return from_bits((uint64_t)(k + 1022 + 54) << 52) * from_bits((uint64_t)(1023 - 54) << 52);
}

double sdc_exp(double x)
{
	if (x != x)
		return x;
	if (x > 709.782712893383973096)
		return from_bits(0x7FF0000000000000ull); /* overflow: +inf */
	if (x < -745.133219101941108420)
		return 0.0;
	/* x = k ln2 + r, |r| <= ln2 / 2. */
	const double t = x * INV_LN2;
	const int k = (int)(t < 0 ? t - 0.5 : t + 0.5);
	const double hi = x - (double)k * LN2_HI, lo = (double)k * LN2_LO;
	const double r = hi - lo;
	/* exp(r) = 1 + r + r^2/2! + ... + r^14/14!, Horner; the last term is below 2^-60 for |r| <= 0.35. */
	static const double c[] = {
		1.0 / 14, 1.0 / 13, 1.0 / 12, 1.0 / 11, 1.0 / 10, 1.0 / 9, 1.0 / 8,
		1.0 / 7, 1.0 / 6, 1.0 / 5, 1.0 / 4, 1.0 / 3, 1.0 / 2,
	};
	double p = 1.0;
	for (int i = 0; i < (int)(sizeof(c) / sizeof(c[0])); i++)
		p = 1.0 + r * c[i] * p;
	const double e = 1.0 + r * p;
	/* Scale in two steps so 2^k itself never overflows or underflows on the way. */
	if (k > 1000)
		return e * pow2(k - 1000) * pow2(1000);
	if (k < -1000)
		return e * pow2(k + 1000) * pow2(-1000);
	return e * pow2(k);
}

double sdc_log(double x)
{
	if (x != x || x < 0)
		return from_bits(0x7FF8000000000000ull); /* NaN */
	if (x == 0)
		return -from_bits(0x7FF0000000000000ull); /* -inf */
	if (x == from_bits(0x7FF0000000000000ull))
		return x;
	int e = 0;
	uint64_t u = to_bits(x);
	if (!(u >> 52)) { /* subnormal: scale up by 2^54 first */
		x *= from_bits((uint64_t)(1023 + 54) << 52);
		u = to_bits(x);
		e = -54;
	}
	e += (int)(u >> 52) - 1023;
	/* m in [1, 2); fold into [sqrt(1/2), sqrt(2)) so s stays small. */
	double m = from_bits((u & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull);
	if (m > 1.41421356237309504880) {
		m *= 0.5;
		e++;
	}
	/*
	 * log(1 + f) = 2 atanh(s), s = f / (2 + f), |s| <= 0.1716. Since 2s = f - s f,
	 * log(1 + f) = f - s (f - R) with R = 2 (z/3 + z^2/5 + ...), z = s^2: f is exact
	 * (Sterbenz), so the rounding sits in the small correction only.
	 */
	const double f = m - 1.0;
	const double s = f / (2.0 + f);
	const double z = s * s;
	static const double c[] = {
		2.0 / 23, 2.0 / 21, 2.0 / 19, 2.0 / 17, 2.0 / 15, 2.0 / 13,
		2.0 / 11, 2.0 / 9, 2.0 / 7, 2.0 / 5, 2.0 / 3,
	};
	double p = 0.0;
	for (int i = 0; i < (int)(sizeof(c) / sizeof(c[0])); i++)
		p = c[i] + z * p;
	const double logm = f - s * (f - z * p);
	return (double)e * LN2_HI + ((double)e * LN2_LO + logm);
}
