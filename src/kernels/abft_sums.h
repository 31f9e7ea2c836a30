/*
 * The row sums every ABFT check needs: s1 = sum_j c[j] and s2 = sum_j (j + 1) c[j] over a row of C,
 * exactly for the integer classes (int32 into int64) and compensated for fp64 (TwoSum per lane).
 * One implementation table per instruction-set level (dav1d's idea): the portable reference
 * first, each level overriding what it has faster; sdc_abft_sums() is this CPU's best, and tests
 * hold every level to the portable reference. CUDA kernels compute the same sums on the device
 * (kernels/cuda/) from the __host__ __device__ reference in kernels/abft_ref.h.
 */
#ifndef SDC_ABFT_SUMS_H
#define SDC_ABFT_SUMS_H

#include <math.h>
#include <stdint.h>

#include "kernels/isa.h"

struct sdc_abft_sums_fns {
	/* int32 elements, int64 sums: exact (no multiply in the hot loop). */
	void (*i32)(const int32_t *c, int n, int64_t *s1, int64_t *s2);
	/* fp64 elements, sums with each addition's rounding error carried (TwoSum) and added back. */
	void (*f64)(const double *c, int n, double *s1, double *s2);
};

/* s + x with the rounding error of the addition carried into *c (Neumaier's compensated sum). */
static inline void sdc_neumaier(double *s, double *c, double x)
{
	const double t = *s + x;
	*c += fabs(*s) >= fabs(x) ? (*s - t) + x : (x - t) + *s;
	*s = t;
}

/* This CPU's table: every entry the fastest level it supports. */
const struct sdc_abft_sums_fns *sdc_abft_sums(void);
/* The table of one level (the portable entries where it has none), or NULL when this CPU lacks it. */
const struct sdc_abft_sums_fns *sdc_abft_sums_isa(enum sdc_isa isa);

/*
 * The same sums on a GPU (kernels/cuda/, in the GPU module, device/gpu_loader.h): rows rows of C, ldc elements
 * apart, each row's s1 and s2 into s1[i], s2[i]; every pointer on the device, enqueued on a stream
 * (a cudaStream_t). Returns 0 or a CUDA error.
 */
typedef int (*sdc_abft_sums_i32_device_fn)(const int32_t *c, int rows, int n, int ldc, int64_t *s1, int64_t *s2,
					   void *stream);

#endif
