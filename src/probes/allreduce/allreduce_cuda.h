/* What the allreduce lane's CUDA files (ring.cu, crc.cu, nccl_check.cu) declare to each other. */
#ifndef SDC_PROBES_ALLREDUCE_CUDA_H
#define SDC_PROBES_ALLREDUCE_CUDA_H

#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/cuda/cuda_util.h"
#include "probes/allreduce/gpu_ops.h"

/* Blocks of 256 threads for n elements, one at the least, 65536 at the most (the kernels stride). */
static inline unsigned sdc_ar_blocks_for(uint64_t n)
{
	const uint64_t b = (n + 255) / 256;
	return (unsigned)(b < 65536 ? (b ? b : 1) : 65536);
}

/* The scratch of the CRC32C of device bytes: two levels of the pieces' CRCs (c) and lengths (l),
 * one entry a piece of 256 bytes (a checked ring's member keeps its buffers: nccl_comm.h). */
struct sdc_crc_scratch {
	uint32_t *c[2];
	uint64_t *l[2];
};

/* The CRC32C of device bytes on the GPU (crc.cu): pieces of 256 bytes each CRC'd by a thread, then
 * joined pairwise into the value sdc_crc32c gives, in sc (sdc_cuda_crc_pieces(len) entries a
 * level). The result ends in sc->c[*which][0], on stream s. */
uint64_t sdc_cuda_crc_pieces(uint64_t len);
void sdc_cuda_crc_enqueue(const uint8_t *p, uint64_t len, struct sdc_crc_scratch *sc, int *which, cudaStream_t s);

/* The family table's collectives and checked ring, where the module has NCCL (nccl_check.cu). */
void sdc_cuda_nccl_allreduce(struct sdc_gpu_allreduce_ops *t);

#endif
