/* What the GPU module's CUDA files share: error text, and waits that poll against a deadline. */
#ifndef SDC_CUDA_UTIL_H
#define SDC_CUDA_UTIL_H

#include <cuda_runtime.h>
#include <stddef.h>

#include "kernels/gpu_module.h"

/* "WHAT: cudaErrorX (text)" into err. */
void sdc_cuda_error(char *err, size_t errlen, const char *what, cudaError_t e);

/*
 * Waits for everything queued on stream s, polling an event (never a blocking synchronize), up to
 * timeout seconds. 0; or -1 with err naming what did not finish: a deadline passed (a hung GPU,
 * an Xid) or the stream failed (a sticky error).
 */
int sdc_cuda_wait(cudaStream_t s, cudaEvent_t ev, double timeout, const char *what, char *err, size_t errlen);

/* Fills the engine's entries of the module table (gemm.cu). */
void sdc_cuda_gemm_ops(struct sdc_gpu_module *m);

#endif
