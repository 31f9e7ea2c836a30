/*
 * minitrain's data-parallel mean over NCCL (xfmr-dp, one rank a GPU): every rank's gradient
 * all-gathered on a communicator of the main table (nccl_comm.h), then each element's mean in rank order
 * on the GPU (xops.h's sdc_xrank_mean, the bits the CPU's dp.c gets). Every wait is polled against
 * the caller's deadline.
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/minitrain/minitrain_cuda.h"
#include "kernels/cuda/nccl_comm.h"
#include "kernels/xops.h"
#include "probes/minitrain/gpu_ops.h"

__global__ void k_rank_mean(const float *all, int64_t total, int P, float inv, float *out)
{
	for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x)
		out[e] = sdc_xrank_mean(all, (long)total, P, (long)e, inv);
}

static int m_nccl_rank_mean(struct sdc_gpu_comm *c, const float *local, int64_t total, float *out, int *timed_out,
			    double timeout, char *err, size_t errlen)
{
	*timed_out = 0;
	if (c->nmem != 1) {
		snprintf(err, errlen, "the data-parallel mean takes one GPU a rank");
		return -1;
	}
	struct sdc_nccl_member *m = &c->m[0];
	const int P = c->nranks;
	const size_t bytes = (size_t)total * 4;
	const double deadline = sdc_cuda_clock() + timeout;
	int rc = 0, dev = 0;
	cudaGetDevice(&dev);
	if (sdc_nccl_use(m, err, errlen))
		goto fail;
	if (sdc_cuda_refuse_hung(m->ordinal, err, errlen))
		goto fail;
	if (m->dp_total != total) {
		/* (stream ordered: the old buffers go after the work queued before them; the stream is
		 * idle here, every call waits for its own work) */
		void *old[] = { m->dp_local, m->dp_all, m->dp_out };
		for (int k = 0; k < 3; k++)
			if (old[k])
				sdc_cuda_free(m->ordinal, old[k], m->s);
		m->dp_local = m->dp_all = m->dp_out = NULL;
		m->dp_total = 0;
		SDC_CUDA_TRY(sdc_cuda_malloc(m->ordinal, (void **)&m->dp_local, bytes, m->s), "cudaMallocAsync");
		SDC_CUDA_TRY(sdc_cuda_malloc(m->ordinal, (void **)&m->dp_all, bytes * (size_t)P, m->s), "cudaMallocAsync");
		SDC_CUDA_TRY(sdc_cuda_malloc(m->ordinal, (void **)&m->dp_out, bytes, m->s), "cudaMallocAsync");
		if (m->dp_stage.bytes < bytes) {
			sdc_cuda_pinned_put(m->ordinal, &m->dp_stage, m->s);
			SDC_CUDA_TRY(sdc_cuda_pinned_get(&m->dp_stage, bytes), "cudaHostAlloc");
		}
		m->dp_total = total;
	}
	memcpy(m->dp_stage.p, local, bytes);
	SDC_CUDA_TRY(sdc_cuda_to_device(m->dp_local, &m->dp_stage, 0, bytes, m->s), "cudaMemcpyAsync");
	{
		const ncclResult_t r = sdc_nccl.AllGather(m->dp_local, m->dp_all, (size_t)total, ncclFloat32, m->comm, m->s);
		if (r != ncclSuccess && r != ncclInProgress) {
			sdc_nccl_error(err, errlen, "ncclAllGather of the gradients", m->comm, r);
			goto fail;
		}
	}
	if ((rc = sdc_nccl_settle(m->comm, deadline, "ncclAllGather of the gradients", err, errlen)))
		goto out;
	k_rank_mean<<<sdc_nccl_grid(total), 256, 0, m->s>>>(m->dp_all, total, P, 1.0f / (float)P, m->dp_out);
	SDC_CUDA_TRY(cudaGetLastError(), "the rank-order mean");
	SDC_CUDA_TRY(sdc_cuda_from_device(&m->dp_stage, 0, m->dp_out, bytes, m->s), "cudaMemcpyAsync");
	if ((rc = sdc_nccl_drain(c, deadline, "the gradients' mean", err, errlen)))
		goto out;
	memcpy(out, m->dp_stage.p, bytes);
	cudaSetDevice(dev);
	return 0;
out:
	*timed_out = rc > 0;
fail:
	cudaSetDevice(dev);
	return -1;
}

/* The minitrain family's NCCL entry (minitrain.cu's sdc_cuda_minitrain_family). */
void sdc_cuda_nccl_minitrain(struct sdc_gpu_minitrain_ops *t)
{
	t->nccl_rank_mean = m_nccl_rank_mean;
}
