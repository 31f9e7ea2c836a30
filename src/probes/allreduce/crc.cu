/*
 * The CRC32C of device bytes on the GPU (probes/allreduce/allreduce_cuda.h: sdc_cuda_crc_enqueue): pieces
 * of 256 bytes each CRC'd by a thread, joined pairwise on the device into the value the CPU's
 * sdc_crc32c gives (probes/allreduce/ring_hd.h). Below both of the allreduce lane's users: the hop
 * checks (ring.cu) and NCCL's checked ring (nccl_check.cu).
 */
#include <cuda_runtime.h>
#include <stdint.h>

#include "probes/allreduce/allreduce_cuda.h"
#include "kernels/cuda/cuda_util.h"
#include "probes/allreduce/ring_hd.h"

#define PIECE 256 /* bytes a thread CRCs before the pieces are joined */

__global__ void k_pieces(const uint8_t *p, uint64_t len, uint64_t n, uint32_t *crc, uint64_t *plen)
{
	for (uint64_t s = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; s < n; s += (uint64_t)gridDim.x * blockDim.x)
		sdc_crc32c_piece(p, len, PIECE, s, &crc[s], &plen[s]);
}

__global__ void k_join(const uint32_t *crc, const uint64_t *len, int64_t n, uint32_t *ocrc, uint64_t *olen)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n + 1) / 2; i += (int64_t)gridDim.x * blockDim.x)
		sdc_crc32c_join(crc, len, n, i, &ocrc[i], &olen[i]);
}

uint64_t sdc_cuda_crc_pieces(uint64_t len)
{
	return len ? (len + PIECE - 1) / PIECE : 1;
}

void sdc_cuda_crc_enqueue(const uint8_t *p, uint64_t len, struct sdc_crc_scratch *sc, int *which, cudaStream_t s)
{
	int64_t n = (int64_t)sdc_cuda_crc_pieces(len);
	k_pieces<<<sdc_ar_blocks_for((uint64_t)n), 256, 0, s>>>(p, len, (uint64_t)n, sc->c[0], sc->l[0]);
	int w = 0;
	for (; n > 1; n = (n + 1) / 2, w ^= 1)
		k_join<<<sdc_ar_blocks_for((uint64_t)(n + 1) / 2), 256, 0, s>>>(sc->c[w], sc->l[w], n, sc->c[w ^ 1], sc->l[w ^ 1]);
	*which = w;
}
