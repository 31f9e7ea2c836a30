/*
 * SDC_HD: a function written once for the CPU and the GPU. In CUDA translation units it is
 * __host__ __device__ (and inlined); in C it is static inline. Headers that hold such functions
 * (base/philox.h, kernels/abft_ref.h, kernels/half.h, probes/gemm/gemm_data.h) are included by
 * the C code and by the CUDA kernels alike, so both compute the same bits from the same source.
 */
#ifndef SDC_HD_H
#define SDC_HD_H

#if defined(__CUDACC__)
#define SDC_HD __host__ __device__ __forceinline__
#else
#define SDC_HD static inline
#endif

#endif
