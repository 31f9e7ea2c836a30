/*
 * The exact class's arithmetic, written once for the CPU and the GPU (base/hd.h): every float
 * operation a correctly rounded IEEE-754 multiply, add or divide in a fixed order, no fused
 * multiply-add, no flush to zero. In device code the products and sums are the _rn intrinsics,
 * which nvcc never contracts whatever -fmad says; on the host (gcc, and g++ for the host side of
 * CUDA files) the files are built with -ffp-contract=off. So a kernel that computes an element
 * with these functions gets the bits the CPU's loop gets from the same source: the GPU's exact
 * GEMM (probes/minitrain/xgemm.cu) sums each element as sdc_xgemm_plain does, through sdc_xdot, and
 * sdc_exp and sdc_log (exactmath.h) are sdc_xexp and sdc_xlog.
 */
#ifndef SDC_XOPS_H
#define SDC_XOPS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/hd.h"

#if defined(__CUDA_ARCH__)
#define SDC_XMUL(a, b) __fmul_rn((a), (b))
#define SDC_XADD(a, b) __fadd_rn((a), (b))
#define SDC_XSUB(a, b) __fsub_rn((a), (b))
#define SDC_XDIV(a, b) __fdiv_rn((a), (b))
#define SDC_XSQRT(a) __fsqrt_rn(a)
#define SDC_XMULD(a, b) __dmul_rn((a), (b))
#define SDC_XADDD(a, b) __dadd_rn((a), (b))
#define SDC_XSUBD(a, b) __dsub_rn((a), (b))
#define SDC_XDIVD(a, b) __ddiv_rn((a), (b))
#else
#define SDC_XMUL(a, b) ((a) * (b))
#define SDC_XADD(a, b) ((a) + (b))
#define SDC_XSUB(a, b) ((a) - (b))
#define SDC_XDIV(a, b) ((a) / (b))
#define SDC_XSQRT(a) sqrtf(a)
#define SDC_XMULD(a, b) ((a) * (b))
#define SDC_XADDD(a, b) ((a) + (b))
#define SDC_XSUBD(a, b) ((a) - (b))
#define SDC_XDIVD(a, b) ((a) / (b))
#endif

/* One element of the exact GEMM: sum over p < k of a[p inca] b[p incb], in order from +0, each
 * step a rounded product then a rounded sum (sdc_xgemm_plain's inner loop). */
SDC_HD float sdc_xdot(int k, const float *a, long inca, const float *b, long incb)
{
	float acc = 0.0f;
	for (int p = 0; p < k; p++)
		acc = SDC_XADD(acc, SDC_XMUL(a[(long)p * inca], b[(long)p * incb]));
	return acc;
}

/* One step of the same sum, for kernels that walk k themselves (tiles): acc + a b. */
SDC_HD float sdc_xmac(float acc, float a, float b)
{
	return SDC_XADD(acc, SDC_XMUL(a, b));
}

/* One element of data-parallel training's global gradient (minitrain's xfmr-dp): the ranks'
 * gradients all[r total + e], summed in rank order from rank 0's, then scaled by inv = 1 / P, so
 * every rank, CPU or GPU, gets the same bits (dp.c's loop; the GPU's over NCCL, nccl.cu). */
SDC_HD float sdc_xrank_mean(const float *all, long total, int P, long e, float inv)
{
	float acc = all[e];
	for (int r = 1; r < P; r++)
		acc = SDC_XADD(acc, all[(long)r * total + e]);
	return SDC_XMUL(acc, inv);
}

SDC_HD double sdc_xfrom_bits(uint64_t u)
{
	double d;
	memcpy(&d, &u, sizeof(d));
	return d;
}

SDC_HD uint64_t sdc_xto_bits(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof(u));
	return u;
}

/* ln 2 split so that k * LN2_HI is exact for |k| < 2^11 (the low 32 bits of LN2_HI are zero). */
#define SDC_XLN2_HI 6.93147180369123816490e-01 /* 0x3FE62E42FEE00000 */
#define SDC_XLN2_LO 1.90821492927058770002e-10 /* 0x3DEA39EF35793C76 */
#define SDC_XINV_LN2 1.44269504088896338700e+00

/* 2^k for -1074 <= k <= 1023, built from bits (two steps for the subnormal range). */
SDC_HD double sdc_xpow2(int k)
{
	if (k >= -1022)
		return sdc_xfrom_bits((uint64_t)(k + 1023) << 52);
	return SDC_XMULD(sdc_xfrom_bits((uint64_t)(k + 1022 + 54) << 52), sdc_xfrom_bits((uint64_t)(1023 - 54) << 52));
}

/* exp from + - * only: within 1 ulp on normal inputs (tests/unit/test_exactmath.c). */
SDC_HD double sdc_xexp(double x)
{
	if (x != x)
		return x;
	if (x > 709.782712893383973096)
		return sdc_xfrom_bits(0x7FF0000000000000ull); /* overflow: +inf */
	if (x < -745.133219101941108420)
		return 0.0;
	/* x = k ln2 + r, |r| <= ln2 / 2. */
	const double t = SDC_XMULD(x, SDC_XINV_LN2);
	const int k = (int)(t < 0 ? SDC_XSUBD(t, 0.5) : SDC_XADDD(t, 0.5));
	const double hi = SDC_XSUBD(x, SDC_XMULD((double)k, SDC_XLN2_HI)), lo = SDC_XMULD((double)k, SDC_XLN2_LO);
	const double r = SDC_XSUBD(hi, lo);
	/* exp(r) = 1 + r + r^2/2! + ... + r^14/14!, Horner; the last term is below 2^-60 for |r| <= 0.35.
	 * (1.0 / 14 and the rest are constants, rounded once by the compiler.) */
	const double c[13] = {
		1.0 / 14, 1.0 / 13, 1.0 / 12, 1.0 / 11, 1.0 / 10, 1.0 / 9, 1.0 / 8,
		1.0 / 7, 1.0 / 6, 1.0 / 5, 1.0 / 4, 1.0 / 3, 1.0 / 2,
	};
	double p = 1.0;
	for (int i = 0; i < 13; i++)
		p = SDC_XADDD(1.0, SDC_XMULD(SDC_XMULD(r, c[i]), p));
	const double e = SDC_XADDD(1.0, SDC_XMULD(r, p));
	/* Scale in two steps so 2^k itself never overflows or underflows on the way. */
	if (k > 1000)
		return SDC_XMULD(SDC_XMULD(e, sdc_xpow2(k - 1000)), sdc_xpow2(1000));
	if (k < -1000)
		return SDC_XMULD(SDC_XMULD(e, sdc_xpow2(k + 1000)), sdc_xpow2(-1000));
	return SDC_XMULD(e, sdc_xpow2(k));
}

/* log from + - * / only: within 1 ulp on normal inputs. */
SDC_HD double sdc_xlog(double x)
{
	if (x != x || x < 0)
		return sdc_xfrom_bits(0x7FF8000000000000ull); /* NaN */
	if (x == 0)
		return -sdc_xfrom_bits(0x7FF0000000000000ull); /* -inf */
	if (x == sdc_xfrom_bits(0x7FF0000000000000ull))
		return x;
	int e = 0;
	uint64_t u = sdc_xto_bits(x);
	if (!(u >> 52)) { /* subnormal: scale up by 2^54 first */
		x = SDC_XMULD(x, sdc_xfrom_bits((uint64_t)(1023 + 54) << 52));
		u = sdc_xto_bits(x);
		e = -54;
	}
	e += (int)(u >> 52) - 1023;
	/* m in [1, 2); fold into [sqrt(1/2), sqrt(2)) so s stays small. */
	double m = sdc_xfrom_bits((u & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull);
	if (m > 1.41421356237309504880) {
		m = SDC_XMULD(m, 0.5);
		e++;
	}
	/*
	 * log(1 + f) = 2 atanh(s), s = f / (2 + f), |s| <= 0.1716. Since 2s = f - s f,
	 * log(1 + f) = f - s (f - R) with R = 2 (z/3 + z^2/5 + ...), z = s^2: f is exact
	 * (Sterbenz), so the rounding sits in the small correction only.
	 */
	const double f = SDC_XSUBD(m, 1.0);
	const double s = SDC_XDIVD(f, SDC_XADDD(2.0, f));
	const double z = SDC_XMULD(s, s);
	const double c[11] = {
		2.0 / 23, 2.0 / 21, 2.0 / 19, 2.0 / 17, 2.0 / 15, 2.0 / 13, 2.0 / 11, 2.0 / 9, 2.0 / 7, 2.0 / 5, 2.0 / 3,
	};
	double p = 0.0;
	for (int i = 0; i < 11; i++)
		p = SDC_XADDD(c[i], SDC_XMULD(z, p));
	const double logm = SDC_XSUBD(f, SDC_XMULD(s, SDC_XSUBD(f, SDC_XMULD(z, p))));
	return SDC_XADDD(SDC_XMULD((double)e, SDC_XLN2_HI), SDC_XADDD(SDC_XMULD((double)e, SDC_XLN2_LO), logm));
}

#endif
