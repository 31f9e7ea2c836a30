/*
 * IEEE-754 binary16 <-> binary32, in portable C (and CUDA: SDC_HD). FBGEMM's 4-bit fused rows store
 * their scale and bias as fp16; the x86 kernels convert with F16C (vcvtph2ps) and must agree with
 * this bit for bit (tests/unit/test_embbag.c checks all 65536 values against the hardware where it
 * has F16C). bfloat16 is the top half of a binary32, rounded to nearest even.
 */
#ifndef SDC_HALF_H
#define SDC_HALF_H

#include <stdint.h>
#include <string.h>

#include "base/hd.h"

/* Exact: every binary16 value (subnormals, INF, NaN payloads) is a binary32 value. */
SDC_HD float sdc_half_to_float(uint16_t h)
{
	const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu, bits;
	if (exp == 0x1F) {
		/* INF; a NaN keeps its payload and comes out quiet, as vcvtph2ps makes it */
		bits = sign | 0x7F800000u | man << 13 | (man ? 0x400000u : 0);
	} else if (exp) {
		bits = sign | (exp + 112) << 23 | man << 13;
	} else if (!man) {
		bits = sign;
	} else {
		/* subnormal: normalise; its value is man * 2^-24 */
		int e = 113;
		while (!(man & 0x400u)) {
			man <<= 1;
			e--;
		}
		bits = sign | (uint32_t)e << 23 | (man & 0x3FFu) << 13;
	}
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

/* Round to nearest, ties to even, as vcvtps2ph with rounding mode 0. */
SDC_HD uint16_t sdc_float_to_half(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
	const uint32_t abs = x & 0x7FFFFFFFu;
	if (abs >= 0x7F800000u) /* INF or NaN (quiet) */
		return sign | 0x7C00u | (abs > 0x7F800000u ? (uint16_t)(0x200u | ((abs >> 13) & 0x3FFu)) : 0);
	if (abs >= 0x477FF000u) /* rounds to or beyond 65520: INF */
		return sign | 0x7C00u;
	if (abs < 0x38800000u) { /* below 2^-14: a subnormal or zero in binary16 */
		if (abs < 0x33000000u) /* below 2^-25: rounds to zero */
			return sign;
		const uint32_t e = abs >> 23, man = (abs & 0x7FFFFFu) | 0x800000u;
		const int shift = 126 - (int)e; /* value = man * 2^(e-150); in units of 2^-24: man >> (126-e) */
		uint32_t q = man >> shift;
		const uint32_t rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
		if (rem > half || (rem == half && (q & 1)))
			q++;
		return sign | (uint16_t)q;
	}
	uint32_t r = abs - 0x38000000u; /* rebias 127 -> 15, still 23 mantissa bits */
	const uint32_t rem = r & 0x1FFFu;
	r >>= 13;
	if (rem > 0x1000u || (rem == 0x1000u && (r & 1)))
		r++; /* may carry into the exponent: still right */
	return sign | (uint16_t)r;
}

/* binary32 -> bfloat16, round to nearest, ties to even; a NaN stays a (quiet) NaN. */
SDC_HD uint16_t sdc_float_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7FFFFFFFu) > 0x7F800000u)
		return (uint16_t)((x >> 16) | 0x40u);
	return (uint16_t)((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

/* bfloat16 -> binary32: exact. */
SDC_HD float sdc_bf16_to_float(uint16_t h)
{
	const uint32_t x = (uint32_t)h << 16;
	float f;
	memcpy(&f, &x, 4);
	return f;
}

#endif
