/* What the minitrain lane's CUDA files (minitrain.cu, xgemm.cu, mt_nccl.cu) declare to each other. */
#ifndef SDC_PROBES_MINITRAIN_CUDA_H
#define SDC_PROBES_MINITRAIN_CUDA_H

#include <cuda_runtime.h>

#include "probes/minitrain/gpu_ops.h"

/* The exact GEMM kernel (xgemm.cu) on device matrices, row-major with leading dimensions; m, n >= 1. */
void sdc_cuda_xgemm_launch(int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c, int ldc,
			   cudaStream_t s);
/* The family table's entries of the exact class (xgemm.cu), and where the module has NCCL the
 * data-parallel mean's (mt_nccl.cu). */
void sdc_cuda_xops(struct sdc_gpu_minitrain_ops *t);
void sdc_cuda_nccl_minitrain(struct sdc_gpu_minitrain_ops *t);

#endif
