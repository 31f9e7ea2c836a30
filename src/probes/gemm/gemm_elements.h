/*
 * An element type's bits for a value, and its value for bits, written once for the device (the
 * engine's kernels, gemm_cuda.h), the host's regenerated truth (gpu_truth.c) and the fake module
 * (fake_gemm.c), so all three convert the same way (kernels/half.h: round to nearest
 * even, as cuBLASLt stores bf16 and fp16).
 */
#ifndef SDC_GEMM_ELEMENTS_H
#define SDC_GEMM_ELEMENTS_H

#include <stdint.h>
#include <string.h>

#include "base/hd.h"
#include "kernels/half.h"
#include "probes/gemm/gpu_ops.h"

/* The bits type t stores for x (exact types: x is a small integer). */
SDC_HD uint64_t sdc_gemm_bits_of(enum sdc_gpu_type t, double x)
{
	const float f = (float)x;
	uint32_t u;
	memcpy(&u, &f, 4);
	if (t == SDC_GPU_INT8)
		return (uint8_t)(int8_t)x;
	if (t == SDC_GPU_BF16 || t == SDC_GPU_BF16_FAST)
		return sdc_float_to_bf16(f);
	if (t == SDC_GPU_FP16)
		return sdc_float_to_half(f);
	return u;
}

/* The value of bits of type t. */
SDC_HD double sdc_gemm_value_of(enum sdc_gpu_type t, uint64_t bits)
{
	if (t == SDC_GPU_INT8)
		return (int8_t)(uint8_t)bits;
	if (t == SDC_GPU_BF16 || t == SDC_GPU_BF16_FAST)
		return sdc_bf16_to_float((uint16_t)bits);
	if (t == SDC_GPU_FP16)
		return sdc_half_to_float((uint16_t)bits);
	float f;
	uint32_t u = (uint32_t)bits;
	memcpy(&f, &u, 4);
	return f;
}

#endif
