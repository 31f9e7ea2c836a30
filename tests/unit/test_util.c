/*
 * base/util.c's comparator for doubles (sdc_cmp_double), which the benchmarks' medians and
 * quartiles sort with: its sign for pairs worked by hand, and an array sorted with it against the
 * order written out here (negative, zero, equal values, a huge one, an infinity).
 */
#include <math.h>
#include <stdlib.h>

#include "base/util.h"
#include "check.h"

static int cmp(double x, double y)
{
	return sdc_cmp_double(&x, &y);
}

int main(void)
{
	CHECK(cmp(1, 2) == -1);
	CHECK(cmp(2, 1) == 1);
	CHECK(cmp(2, 2) == 0);
	CHECK(cmp(-0.0, 0.0) == 0);
	CHECK(cmp(-1e300, 1e-300) == -1);
	CHECK(cmp(INFINITY, 1e308) == 1);

	double v[] = { 3, -0.5, 2, 1e300, 2, -7, 0, -INFINITY };
	const double want[] = { -INFINITY, -7, -0.5, 0, 2, 2, 3, 1e300 };
	qsort(v, SDC_ARRAY_SIZE(v), sizeof(double), sdc_cmp_double);
	for (size_t i = 0; i < SDC_ARRAY_SIZE(v); i++)
		CHECK_MSG(v[i] == want[i], "sorted[%zu] = %g, want %g", i, v[i], want[i]);
	return check_done("test_util");
}
