/*
 * sdc_exp and sdc_log: within one ulp of long-double libm (an independent, more precise
 * implementation) over their ranges, exact where the answer is exact, IEEE at the edges.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "kernels/exactmath.h"

static int64_t ulps(double a, double b)
{
	int64_t x, y;
	memcpy(&x, &a, 8);
	memcpy(&y, &b, 8);
	if (x < 0)
		x = INT64_MIN - x;
	if (y < 0)
		y = INT64_MIN - y;
	return x > y ? x - y : y - x;
}

int main(void)
{
	uint64_t st = 1;
	int64_t worst_log = 0, worst_exp = 0;
	for (int i = 0; i < 1000000; i++) {
		st = st * 6364136223846793005ull + 1442695040888963407ull;
		const double x = ldexp((double)(st >> 11) * 0x1p-53 + 0.5, (int)((st >> 3) % 2000) - 1000);
		const int64_t u = ulps(sdc_log(x), (double)logl((long double)x));
		worst_log = u > worst_log ? u : worst_log;
		st = st * 6364136223846793005ull + 1442695040888963407ull;
		const double y = ((double)(st >> 11) * 0x1p-53 - 0.5) * 1400;
		const int64_t v = ulps(sdc_exp(y), (double)expl((long double)y));
		worst_exp = v > worst_exp ? v : worst_exp;
	}
	CHECK_MSG(worst_log <= 1, "log: %lld ulp", (long long)worst_log);
	CHECK_MSG(worst_exp <= 1, "exp: %lld ulp", (long long)worst_exp);
	/* Exact answers, and the edges of IEEE double. */
	CHECK(sdc_log(1.0) == 0.0 && sdc_exp(0.0) == 1.0);
	CHECK(sdc_log(0.0) == -INFINITY && isnan(sdc_log(-1.0)) && sdc_log(INFINITY) == INFINITY);
	CHECK(sdc_exp(1000.0) == INFINITY && sdc_exp(-1000.0) == 0.0);
	CHECK(ulps(sdc_log(4.9406564584124654e-324), -744.44007192138126) <= 1); /* subnormal input */
	CHECK(ulps(sdc_exp(-740.0), 4.1995579896506763e-322) <= 1);          /* subnormal output */
	CHECK(ulps(sdc_exp(709.0), 8.2184074615549724e+307) <= 1);
	CHECK(ulps(sdc_log(2.0), 0.69314718055994531) <= 1);
	return check_done("test_exactmath");
}
