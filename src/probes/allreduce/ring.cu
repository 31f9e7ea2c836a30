/*
 * The allreduce probe's hop checks on the GPU (probes/allreduce/ring_hd.h), the pieces an NCCL ring is
 * built from: the CRC32C of a chunk computed in pieces that are joined on the device into the
 * value the CPU's sdc_crc32c gives, and a reduce-scatter hop's check (every received partial sum
 * against the value the receiver predicts from the terms, dst = own + that value), one element a
 * thread, with the terms drawn on the device. Counts are integer atomics; nothing in a float
 * depends on the launch shape.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/allreduce/allreduce_cuda.h"
#include "kernels/cuda/cuda_util.h"
#include "probes/allreduce/gpu_ops.h"
#include "sdc_config.h"
#include "probes/allreduce/ring_hd.h"

__global__ void k_check(int64_t n, uint32_t salt, int count, int rsum, const float *own, const uint32_t *got, float *dst,
			unsigned long long *wrong)
{
	unsigned long long bad = 0;
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
		int8_t f, g;
		sdc_ring_term(i, salt, &f, &g);
		bad += (unsigned long long)sdc_ring_check_add_one(dst ? &dst[i] : NULL, own[i], got[i], f, g, count, rsum);
	}
	if (bad)
		atomicAdd(wrong, bad);
}

static int m_crc32c(const void *buf, uint64_t len, uint32_t *crc, double timeout, char *err, size_t errlen)
{
	struct sdc_cuda_work w;
	const uint64_t np = sdc_cuda_crc_pieces(len);
	const size_t bytes[5] = { len, np * 4, np * 8, np * 4, np * 8 };
	int which = 0, rc = -1;
	if (sdc_cuda_work_init(&w, bytes, 5, 0, err, errlen))
		return -1;
	struct sdc_crc_scratch sc = { { (uint32_t *)w.buf[1], (uint32_t *)w.buf[3] }, { (uint64_t *)w.buf[2], (uint64_t *)w.buf[4] } };
	/* through the pinned staging (len bytes, then the CRC): see xgemm.cu's entries */
	if (sdc_cuda_work_host(&w, len + 4, err, errlen))
		goto fail;
	if (len)
		memcpy(w.host.p, buf, len);
	SDC_CUDA_TRY(sdc_cuda_to_device(w.buf[0], &w.host, 0, len, w.s), "cudaMemcpyAsync");
	sdc_cuda_crc_enqueue((const uint8_t *)w.buf[0], len, &sc, &which, w.s);
	SDC_CUDA_TRY(cudaGetLastError(), "the CRC32C kernels");
	SDC_CUDA_TRY(sdc_cuda_from_device(&w.host, len, sc.c[which], 4, w.s), "cudaMemcpyAsync");
	if (sdc_cuda_wait(w.s, w.ev, timeout, "CRC32C", err, errlen))
		goto fail;
	memcpy(crc, w.host.p + len, 4);
	rc = 0;
fail:
	sdc_cuda_work_free(&w);
	return rc;
}

static int m_ring_check(int64_t n, uint64_t it, int count, int rsum, const float *own, const uint32_t *got, float *dst,
			int64_t *wrong, uint32_t *crc, double timeout, char *err, size_t errlen)
{
	struct sdc_cuda_work w;
	const uint64_t nb = (uint64_t)n * 4, np = sdc_cuda_crc_pieces(nb);
	const size_t bytes[8] = { nb, nb, nb, 8, np * 4, np * 8, np * 4, np * 8 };
	unsigned long long bad = 0;
	int which = 0, rc = -1;
	if (sdc_cuda_work_init(&w, bytes, 8, 0, err, errlen))
		return -1;
	struct sdc_crc_scratch sc = { { (uint32_t *)w.buf[4], (uint32_t *)w.buf[6] }, { (uint64_t *)w.buf[5], (uint64_t *)w.buf[7] } };
	/* the staging: own, got, then dst, the count and the CRC coming back */
	if (sdc_cuda_work_host(&w, 3 * nb + 8 + 4, err, errlen))
		goto fail;
	memcpy(w.host.p, own, nb);
	memcpy(w.host.p + nb, got, nb);
	SDC_CUDA_TRY(sdc_cuda_to_device(w.buf[0], &w.host, 0, nb, w.s), "cudaMemcpyAsync");
	SDC_CUDA_TRY(sdc_cuda_to_device(w.buf[1], &w.host, nb, nb, w.s), "cudaMemcpyAsync");
	SDC_CUDA_TRY(cudaMemsetAsync(w.buf[3], 0, 8, w.s), "cudaMemset");
	k_check<<<sdc_ar_blocks_for((uint64_t)n), 256, 0, w.s>>>(n, sdc_ring_salt(it), count, rsum, (const float *)w.buf[0],
							   (const uint32_t *)w.buf[1], (float *)w.buf[2],
							   (unsigned long long *)w.buf[3]);
	sdc_cuda_crc_enqueue((const uint8_t *)w.buf[2], nb, &sc, &which, w.s);
	SDC_CUDA_TRY(cudaGetLastError(), "the hop check kernels");
	SDC_CUDA_TRY(sdc_cuda_from_device(&w.host, 2 * nb, w.buf[2], nb, w.s), "cudaMemcpyAsync");
	SDC_CUDA_TRY(sdc_cuda_from_device(&w.host, 3 * nb, w.buf[3], 8, w.s), "cudaMemcpyAsync");
	SDC_CUDA_TRY(sdc_cuda_from_device(&w.host, 3 * nb + 8, sc.c[which], 4, w.s), "cudaMemcpyAsync");
	if (sdc_cuda_wait(w.s, w.ev, timeout, "the hop check", err, errlen))
		goto fail;
	memcpy(dst, w.host.p + 2 * nb, nb);
	memcpy(&bad, w.host.p + 3 * nb, 8);
	memcpy(crc, w.host.p + 3 * nb + 8, 4);
	*wrong = (int64_t)bad;
	rc = 0;
fail:
	sdc_cuda_work_free(&w);
	return rc;
}

/* bytes of device data: the CRC32C alone, then the check with the CRC of what it writes (a
 * reduce-scatter hop's work on the GPU), reps each back to back after a warm-up. */
static int m_ring_bench(uint64_t bytes, int reps, double *crc_s, double *check_s, double timeout, char *err,
			size_t errlen)
{
	struct sdc_cuda_work w;
	const int64_t n = (int64_t)(bytes / 4);
	const uint64_t np = sdc_cuda_crc_pieces(bytes);
	const size_t b[8] = { bytes, bytes, bytes, 8, np * 4, np * 8, np * 4, np * 8 };
	int which = 0, rc = -1;
	if (sdc_cuda_work_init(&w, b, 8, 1, err, errlen))
		return -1;
	struct sdc_crc_scratch sc = { { (uint32_t *)w.buf[4], (uint32_t *)w.buf[6] }, { (uint64_t *)w.buf[5], (uint64_t *)w.buf[7] } };
	SDC_CUDA_TRY(cudaMemsetAsync(w.buf[0], 0x3c, bytes, w.s), "cudaMemset");
	SDC_CUDA_TRY(cudaMemsetAsync(w.buf[1], 0x41, bytes, w.s), "cudaMemset");
	for (int who = 0; who < 2; who++) {
		for (int r = -1; r < reps; r++) {
			if (r == 0)
				SDC_CUDA_TRY(cudaEventRecord(w.t0, w.s), "cudaEventRecord");
			if (who)
				k_check<<<sdc_ar_blocks_for((uint64_t)n), 256, 0, w.s>>>(n, 1, 2, 1, (const float *)w.buf[0],
										   (const uint32_t *)w.buf[1], (float *)w.buf[2],
										   (unsigned long long *)w.buf[3]);
			sdc_cuda_crc_enqueue((const uint8_t *)w.buf[who ? 2 : 0], bytes, &sc, &which, w.s);
		}
		SDC_CUDA_TRY(cudaGetLastError(), "the hop check kernels");
		SDC_CUDA_TRY(cudaEventRecord(w.t1, w.s), "cudaEventRecord");
		if (sdc_cuda_poll(w.t1, timeout, "the hop check benchmark", err, errlen))
			goto fail;
		float ms = 0;
		SDC_CUDA_TRY(cudaEventElapsedTime(&ms, w.t0, w.t1), "cudaEventElapsedTime");
		*(who ? check_s : crc_s) = ms / 1e3 / reps;
	}
	rc = 0;
fail:
	sdc_cuda_work_free(&w);
	return rc;
}

/* The allreduce family's table: the hop checks here, NCCL's from nccl_check.cu (NULL in a module
 * built without nccl.h). */
const struct sdc_gpu_allreduce_ops *sdc_cuda_allreduce_family(void)
{
	static struct sdc_gpu_allreduce_ops t;
	if (!t.version) {
		t.crc32c = m_crc32c;
		t.ring_check = m_ring_check;
		t.ring_bench = m_ring_bench;
#if HAVE_NCCL
		sdc_cuda_nccl_allreduce(&t);
#endif
		t.version = SDC_GPU_ALLREDUCE_VERSION;
	}
	return &t;
}
