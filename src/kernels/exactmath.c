/* exp and log for the CPU: the one source the GPU compiles too (xops.h). */
#include "kernels/exactmath.h"

#include "kernels/xops.h"

double sdc_exp(double x)
{
	return sdc_xexp(x);
}

double sdc_log(double x)
{
	return sdc_xlog(x);
}
