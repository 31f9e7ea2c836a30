/*
 * The allreduce family's work on NCCL's communicators (nccl_comm.h): NCCL's native collectives
 * checked exactly (the allreduce probe's nccl variant): each rank draws its input on its GPU
 * (probes/allreduce/ring_hd.h, sdc_coll_input), NCCL all-reduces, reduce-scatters or all-gathers
 * it, and a kernel compares every output element bit for bit with the value the rank computes
 * itself (sdc_coll_expect): wrong elements counted (integer atomics), the first one kept. And
 * sdcscan's checked ring over NCCL's send and receive, every hop checked on the GPU. Every wait
 * is polled against the caller's deadline (nccl.cu says how).
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/allreduce/allreduce_cuda.h"
#include "kernels/cuda/nccl_comm.h"
#include "probes/allreduce/gpu_ops.h"
#include "probes/allreduce/ring_hd.h"

__global__ void k_fill(char op, int64_t count, int rank, int P, int64_t n, uint32_t salt, float *in)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x)
		in[i] = sdc_coll_input(op, i, rank, P, n, salt);
}

__global__ void k_flip(uint32_t *out, int64_t el, int bit)
{
	out[el] ^= 1u << bit;
}

/* stat = { 0, none }: before a check counts into it */
__global__ void k_stat_init(unsigned long long *stat, int n)
{
	for (int i = threadIdx.x; i < n; i += blockDim.x)
		stat[2 * i] = 0, stat[2 * i + 1] = ~0ull;
}

/* A thread's wrong elements into the check's count, its first into the least first (integer
 * atomics: no float depends on the launch shape). */
__device__ void note_bad(unsigned long long *stat, unsigned long long bad, unsigned long long first)
{
	if (bad) {
		atomicAdd(&stat[0], bad);
		atomicMin(&stat[1], first);
	}
}

__global__ void k_verify(char op, int64_t count, int rank, int P, int64_t n, uint32_t salt, const uint32_t *out,
			 unsigned long long *stat)
{
	unsigned long long bad = 0, first = ~0ull;
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x) {
		const float e = sdc_coll_expect(op, i, rank, P, n, salt);
		uint32_t u;
		memcpy(&u, &e, 4);
		if (u != out[i]) {
			bad++;
			first = first < (unsigned long long)i ? first : (unsigned long long)i;
		}
	}
	note_bad(stat, bad, first);
}

/* The collective's call for one member. */
static ncclResult_t collective(struct sdc_nccl_member *m, char op, int64_t n, int64_t nin, int64_t nout)
{
	return op == 'A'   ? sdc_nccl.AllReduce(m->in, m->out, (size_t)n, ncclFloat32, ncclSum, m->comm, m->s)
	       : op == 'R' ? sdc_nccl.ReduceScatter(m->in, m->out, (size_t)nout, ncclFloat32, ncclSum, m->comm, m->s)
			   : sdc_nccl.AllGather(m->in, m->out, (size_t)nin, ncclFloat32, m->comm, m->s);
}

static int m_nccl_collective(struct sdc_gpu_comm *c, char op, uint64_t it, const struct sdc_gpu_flip *flip,
			     struct sdc_gpu_coll_result *res, double timeout, char *err, size_t errlen)
{
	const int P = c->nranks;
	const int64_t n = c->n, nin = sdc_coll_in_count(op, n, P), nout = sdc_coll_out_count(op, n, P);
	const uint32_t salt = sdc_ring_salt(it);
	const double deadline = sdc_cuda_clock() + timeout;
	const char *what = op == 'A' ? "ncclAllReduce" : op == 'R' ? "ncclReduceScatter" : "ncclAllGather";
	int rc = 0, dev = 0;
	ncclResult_t r = ncclSuccess;
	cudaGetDevice(&dev);
	for (int i = 0; i < c->nmem; i++) {
		memset(&res[i], 0, sizeof(res[i]));
		res[i].first = -1;
		struct sdc_nccl_member *m = &c->m[i];
		if (sdc_nccl_use(m, err, errlen))
			goto fail;
		k_fill<<<sdc_nccl_grid(nin), 256, 0, m->s>>>(op, nin, m->rank, P, n, salt, m->in);
		SDC_CUDA_TRY(cudaMemsetAsync(m->out, 0xFF, (size_t)nout * 4, m->s), "cudaMemset"); /* NaN: nothing left over */
		k_stat_init<<<1, 32, 0, m->s>>>(m->stat, 1);
		SDC_CUDA_TRY(cudaGetLastError(), "the fill kernel");
		SDC_CUDA_TRY(cudaEventRecord(m->t0, m->s), "cudaEventRecord");
	}
	/* every member of this process in one group: none waits for another before it is launched */
	sdc_nccl.GroupStart();
	for (int i = 0; i < c->nmem && (r == ncclSuccess || r == ncclInProgress); i++) {
		cudaSetDevice(c->m[i].ordinal);
		r = collective(&c->m[i], op, n, nin, nout);
	}
	{
		const ncclResult_t g = sdc_nccl.GroupEnd();
		if (r == ncclSuccess || r == ncclInProgress)
			r = g;
	}
	if (r != ncclSuccess && r != ncclInProgress) {
		sdc_nccl_error(err, errlen, what, c->m[0].comm, r);
		goto refused;
	}
	if ((rc = sdc_nccl_settle_all(c, deadline, what, err, errlen)) < 0)
		goto refused; /* NCCL's asynchronous error */
	if (rc)
		goto out;
	for (int i = 0; i < c->nmem; i++) {
		struct sdc_nccl_member *m = &c->m[i];
		if (sdc_nccl_use(m, err, errlen))
			goto fail;
		SDC_CUDA_TRY(cudaEventRecord(m->t1, m->s), "cudaEventRecord");
		if (flip && flip->member == i && flip->el >= 0 && flip->el < nout)
			k_flip<<<1, 1, 0, m->s>>>((uint32_t *)m->out, flip->el, flip->bit & 31);
		k_verify<<<sdc_nccl_grid(nout), 256, 0, m->s>>>(op, nout, m->rank, P, n, salt, (const uint32_t *)m->out, m->stat);
		SDC_CUDA_TRY(cudaGetLastError(), "the check kernel");
		SDC_CUDA_TRY(sdc_cuda_from_device(&m->hstat, 0, m->stat, 16, m->s), "cudaMemcpyAsync");
	}
	if ((rc = sdc_nccl_drain(c, deadline, what, err, errlen)))
		goto out;
	for (int i = 0; i < c->nmem; i++) {
		struct sdc_nccl_member *m = &c->m[i];
		float ms = 0;
		SDC_CUDA_TRY(cudaEventElapsedTime(&ms, m->t0, m->t1), "cudaEventElapsedTime");
		res[i].seconds = ms / 1e3;
		const unsigned long long *hstat = (const unsigned long long *)m->hstat.p;
		res[i].wrong = (int64_t)hstat[0];
		if (!hstat[0])
			continue;
		res[i].first = (int64_t)hstat[1];
		res[i].expected = sdc_coll_expect(op, res[i].first, m->rank, P, n, salt);
		if (sdc_nccl_use(m, err, errlen))
			goto fail;
		SDC_CUDA_TRY(sdc_cuda_from_device(&m->hstat, 0, (const uint32_t *)m->out + res[i].first, 4, m->s),
			     "cudaMemcpyAsync");
		if ((rc = sdc_nccl_drain(c, deadline, what, err, errlen)))
			goto out;
		memcpy(&res[i].got, m->hstat.p, 4);
	}
	cudaSetDevice(dev);
	return 0;
refused:
	for (int i = 0; i < c->nmem; i++)
		res[i].refused = 1;
	cudaSetDevice(dev);
	return -1;
out:
	for (int i = 0; i < c->nmem; i++)
		res[i].timed_out = rc > 0;
fail:
	cudaSetDevice(dev);
	return -1;
}

/* ---- sdcscan's checked ring over NCCL's send and receive ---- */

/* The header ahead of a chunk: the sender's CRC32C of it, the step, the header's own CRC32C of
 * those two words (ring_check.c's sdc_ring_hop_header). */
__global__ void k_header(uint32_t *hdr, const uint32_t *crc, uint32_t step)
{
	hdr[0] = *crc;
	hdr[1] = step;
	hdr[2] = sdc_crc32c_hd(0, (const uint8_t *)hdr, 8);
	hdr[3] = 0;
}

__global__ void k_copy_word(uint32_t *dst, const uint32_t *src)
{
	*dst = *src;
}

/* A reduce-scatter hop (ring_check.c's sdc_ring_check_add, an element a thread): dst = own + the
 * partial sum of count ranks adding up to rsum; got's wrong elements counted. off: the chunk's
 * first index in the vector (its terms). */
__global__ void k_hop_add(int64_t n, int64_t off, uint32_t salt, int count, int rsum, const float *own,
			  const uint32_t *got, float *dst, unsigned long long *stat)
{
	unsigned long long bad = 0, first = ~0ull;
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
		int8_t f, g;
		sdc_ring_term(off + i, salt, &f, &g);
		if (sdc_ring_check_add_one(&dst[i], own[i], got[i], f, g, count, rsum)) {
			bad++;
			first = first < (unsigned long long)i ? first : (unsigned long long)i;
		}
	}
	note_bad(stat, bad, first);
}

/* An all-gather hop: got's elements that are not the total counted (then put right, k_hop_repair,
 * once the first wrong one's value is kept). */
__global__ void k_hop_count(int64_t n, int64_t off, uint32_t salt, int count, int rsum, const uint32_t *got,
			    unsigned long long *stat)
{
	unsigned long long bad = 0, first = ~0ull;
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
		int8_t f, g;
		sdc_ring_term(off + i, salt, &f, &g);
		if (sdc_ring_check_add_one(NULL, 0, got[i], f, g, count, rsum)) {
			bad++;
			first = first < (unsigned long long)i ? first : (unsigned long long)i;
		}
	}
	note_bad(stat, bad, first);
}

__global__ void k_hop_repair(int64_t n, int64_t off, uint32_t salt, int count, int rsum, float *got)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
		int8_t f, g;
		sdc_ring_term(off + i, salt, &f, &g);
		got[i] = sdc_ring_expect(count, rsum, f, g);
	}
}

/* The first wrong element's value (stat[1]: its index, or none). */
__global__ void k_hop_pick(const unsigned long long *stat, const float *base, float *got)
{
	*got = stat[1] != ~0ull ? base[stat[1]] : 0.0f;
}

/* A member's ring buffers, made at the ring's first use (a chunk is n / P floats). */
static int ring_alloc(struct sdc_nccl_member *m, int P, int64_t n, char *err, size_t errlen)
{
	if (m->recv)
		return 0;
	const int hops = 2 * (P - 1);
	const size_t cb = (size_t)(n / P) * 4;
	const uint64_t np = sdc_cuda_crc_pieces(cb);
	if (sdc_nccl_use(m, err, errlen))
		return -1;
	const int d = m->ordinal;
	SDC_CUDA_TRY(sdc_cuda_malloc(d, (void **)&m->recv, cb, m->s), "cudaMallocAsync");
	SDC_CUDA_TRY(sdc_cuda_malloc(d, (void **)&m->sums, cb, m->s), "cudaMallocAsync");
	SDC_CUDA_TRY(sdc_cuda_malloc(d, (void **)&m->fault, cb, m->s), "cudaMallocAsync");
	SDC_CUDA_TRY(sdc_cuda_malloc(d, (void **)&m->hdr_send, (size_t)hops * 16, m->s), "cudaMallocAsync");
	SDC_CUDA_TRY(sdc_cuda_malloc(d, (void **)&m->dev.stat, (size_t)hops * 16, m->s), "cudaMallocAsync");
	SDC_CUDA_TRY(sdc_cuda_malloc(d, (void **)&m->dev.crc, (size_t)hops * 4, m->s), "cudaMallocAsync");
	SDC_CUDA_TRY(sdc_cuda_malloc(d, (void **)&m->dev.hdr, (size_t)hops * 16, m->s), "cudaMallocAsync");
	SDC_CUDA_TRY(sdc_cuda_malloc(d, (void **)&m->dev.got, (size_t)hops * 4, m->s), "cudaMallocAsync");
	SDC_CUDA_TRY(sdc_cuda_pinned_get(&m->ring_stage, RING_OUT_BYTES(hops)), "cudaHostAlloc");
	m->host.stat = (unsigned long long *)m->ring_stage.p;
	m->host.crc = (uint32_t *)(m->ring_stage.p + (size_t)hops * 16);
	m->host.hdr = (uint32_t *)(m->ring_stage.p + (size_t)hops * 20);
	m->host.got = (float *)(m->ring_stage.p + (size_t)hops * 36);
	for (int k = 0; k < 2; k++) {
		SDC_CUDA_TRY(sdc_cuda_malloc(d, (void **)&m->crc_c[k], np * 4, m->s),
			     "cudaMallocAsync");
		SDC_CUDA_TRY(sdc_cuda_malloc(d, (void **)&m->crc_l[k], np * 8, m->s),
			     "cudaMallocAsync");
	}
	return 0;
fail:
	return -1; /* (what was made is freed with the communicator) */
}

/* The member's CRC scratch, as crc.cu takes it. */
static struct sdc_crc_scratch member_crc(const struct sdc_nccl_member *m)
{
	return { { m->crc_c[0], m->crc_c[1] }, { m->crc_l[0], m->crc_l[1] } };
}

/* Where member m stands in the ring (order[position] = rank). */
static int position(const int *order, int P, int rank)
{
	int p = 0;
	while (p < P && order[p] != rank)
		p++;
	return p;
}

/* One step of the ring for one member, before the exchange: its chunk's CRC into the header, a
 * fault of its own, and what it sends (returned). */
static const float *step_send(struct sdc_nccl_member *m, int P, int64_t cn, int phase, int s, int p, int mi,
			      const struct sdc_gpu_ring_fault *faults, int nfaults, char *err, size_t errlen)
{
	const size_t cb = (size_t)cn * 4;
	const int h = phase * (P - 1) + s;
	const struct sdc_ring_step st = sdc_ring_step_at(phase, s, p, P);
	int which = 0;
	/* the rank's own chunk first, then the sums it made, then (all-gather) what it received; its
	 * CRC32C into the header, taken as it leaves */
	const float *payload = phase == 0 && s == 0 ? m->in + (int64_t)st.send_c * cn
			       : phase == 0	     ? m->sums
						     : m->out + (int64_t)st.send_c * cn;
	uint32_t *hdr = m->hdr_send + 4 * h;
	struct sdc_crc_scratch sc = member_crc(m);
	sdc_cuda_crc_enqueue((const uint8_t *)payload, cb, &sc, &which, m->s);
	k_header<<<1, 1, 0, m->s>>>(hdr, sc.c[which], (uint32_t)(phase << 16 | s));
	for (int k = 0; k < nfaults; k++) {
		const struct sdc_gpu_ring_fault *f = &faults[k];
		if (f->member != mi || (f->kind != 'H' && f->kind != 'h') || f->phase != phase || f->step != s)
			continue;
		if (f->kind == 'h') { /* the header's CRC word: the data arrive right */
			k_flip<<<1, 1, 0, m->s>>>(hdr, 0, f->bit & 31);
		} else { /* a copy changes on its way, after its CRC was taken */
			if (cudaMemcpyAsync(m->fault, payload, cb, cudaMemcpyDeviceToDevice, m->s) != cudaSuccess) {
				snprintf(err, errlen, "cudaMemcpy of a hop fault's copy failed");
				return NULL;
			}
			k_flip<<<1, 1, 0, m->s>>>((uint32_t *)m->fault, f->el % cn, f->bit & 31);
			payload = m->fault;
		}
	}
	return payload;
}

/* One step of the ring for one member, after the exchange: what arrived CRC'd as it is, then
 * every element checked against its partial sum. */
static void step_check(struct sdc_nccl_member *m, const int *order, int P, int64_t cn, int phase, int s, int p, int mi,
		       uint32_t salt, const struct sdc_gpu_ring_fault *faults, int nfaults)
{
	const size_t cb = (size_t)cn * 4;
	const int h = phase * (P - 1) + s;
	const struct sdc_ring_step st = sdc_ring_step_at(phase, s, p, P);
	const int64_t off = (int64_t)st.recv_c * cn;
	float *into = phase == 0 ? m->recv : m->out + off;
	int which = 0;
	struct sdc_crc_scratch sc = member_crc(m);
	sdc_cuda_crc_enqueue((const uint8_t *)into, cb, &sc, &which, m->s);
	k_copy_word<<<1, 1, 0, m->s>>>(m->dev.crc + h, sc.c[which]);
	const int rsum = sdc_ring_rank_sum(order, P, st.first, st.count);
	unsigned long long *stat = m->dev.stat + 2 * h;
	if (phase == 0) {
		/* the last step's sums are this rank's own chunk of the result */
		float *dst = s < P - 2 ? m->sums : m->out + off;
		k_hop_add<<<sdc_nccl_grid(cn), 256, 0, m->s>>>(cn, off, salt, st.count, rsum, m->in + off,
							   (const uint32_t *)m->recv, dst, stat);
		k_hop_pick<<<1, 1, 0, m->s>>>(stat, m->recv, m->dev.got + h);
		for (int k = 0; k < nfaults && s == 0; k++)
			if (faults[k].kind == 'C' && faults[k].member == mi) /* its sums go wrong before they leave */
				k_flip<<<1, 1, 0, m->s>>>((uint32_t *)dst, faults[k].el % cn, faults[k].bit & 31);
	} else {
		k_hop_count<<<sdc_nccl_grid(cn), 256, 0, m->s>>>(cn, off, salt, st.count, rsum, (const uint32_t *)into, stat);
		k_hop_pick<<<1, 1, 0, m->s>>>(stat, into, m->dev.got + h);
		k_hop_repair<<<sdc_nccl_grid(cn), 256, 0, m->s>>>(cn, off, salt, st.count, rsum, into);
	}
}

static int m_nccl_ring(struct sdc_gpu_comm *c, const int *order, uint64_t it, const struct sdc_gpu_ring_fault *faults,
		       int nfaults, struct sdc_gpu_hop *hops, double *seconds, int *timed_out, double timeout, char *err,
		       size_t errlen)
{
	*timed_out = 0;
	const int P = c->nranks, nh = 2 * (P - 1);
	const int64_t n = c->n, cn = n / P;
	const size_t cb = (size_t)cn * 4;
	const uint32_t salt = sdc_ring_salt(it);
	const double deadline = sdc_cuda_clock() + timeout;
	int rc = 0, dev = 0;
	cudaGetDevice(&dev);
	for (int i = 0; i < c->nmem; i++) {
		struct sdc_nccl_member *m = &c->m[i];
		if (ring_alloc(m, P, n, err, errlen))
			goto fail;
		k_fill<<<sdc_nccl_grid(n), 256, 0, m->s>>>('A', n, m->rank, P, n, salt, m->in);
		k_stat_init<<<1, 256, 0, m->s>>>(m->dev.stat, nh);
		SDC_CUDA_TRY(cudaGetLastError(), "the ring's fill");
		SDC_CUDA_TRY(cudaEventRecord(m->t0, m->s), "cudaEventRecord");
	}
	for (int phase = 0; phase < 2; phase++)
		for (int s = 0; s < P - 1; s++) {
			const int h = phase * (P - 1) + s;
			const float *payload[64];
			for (int i = 0; i < c->nmem; i++) {
				struct sdc_nccl_member *m = &c->m[i];
				if (sdc_nccl_use(m, err, errlen) ||
				    !(payload[i % 64] = step_send(m, P, cn, phase, s, position(order, P, m->rank), i, faults, nfaults,
								  err, errlen)))
					goto fail;
			}
			/* every member's send and receive of the step in one group */
			ncclResult_t r = sdc_nccl.GroupStart();
			for (int i = 0; i < c->nmem && (r == ncclSuccess || r == ncclInProgress); i++) {
				struct sdc_nccl_member *m = &c->m[i];
				const int p = position(order, P, m->rank);
				const int next = order[(p + 1) % P], prev = order[(p - 1 + P) % P];
				const int64_t off = (int64_t)sdc_ring_step_at(phase, s, p, P).recv_c * cn;
				cudaSetDevice(m->ordinal);
				r = sdc_nccl.Send(m->hdr_send + 4 * h, 12, ncclUint8, next, m->comm, m->s);
				if (r == ncclSuccess || r == ncclInProgress)
					r = sdc_nccl.Send(payload[i % 64], cb, ncclUint8, next, m->comm, m->s);
				if (r == ncclSuccess || r == ncclInProgress)
					r = sdc_nccl.Recv(m->dev.hdr + 4 * h, 12, ncclUint8, prev, m->comm, m->s);
				if (r == ncclSuccess || r == ncclInProgress)
					r = sdc_nccl.Recv(phase == 0 ? m->recv : m->out + off, cb, ncclUint8, prev, m->comm, m->s);
			}
			const ncclResult_t g = sdc_nccl.GroupEnd();
			if (r == ncclSuccess || r == ncclInProgress)
				r = g;
			if (r != ncclSuccess && r != ncclInProgress) {
				sdc_nccl_error(err, errlen, "ncclSend/ncclRecv", c->m[0].comm, r);
				goto fail;
			}
			if ((rc = sdc_nccl_settle_all(c, deadline, "the ring's ncclSend/ncclRecv", err, errlen)))
				goto out;
			for (int i = 0; i < c->nmem; i++) {
				struct sdc_nccl_member *m = &c->m[i];
				if (sdc_nccl_use(m, err, errlen))
					goto fail;
				step_check(m, order, P, cn, phase, s, position(order, P, m->rank), i, salt, faults, nfaults);
				SDC_CUDA_TRY(cudaGetLastError(), "the ring's hop kernels");
			}
		}
	for (int i = 0; i < c->nmem; i++) {
		struct sdc_nccl_member *m = &c->m[i];
		if (sdc_nccl_use(m, err, errlen))
			goto fail;
		SDC_CUDA_TRY(cudaEventRecord(m->t1, m->s), "cudaEventRecord");
		struct sdc_cuda_pinned *h = &m->ring_stage;
		SDC_CUDA_TRY(sdc_cuda_from_device(h, 0, m->dev.stat, (size_t)nh * 16, m->s), "cudaMemcpyAsync");
		SDC_CUDA_TRY(sdc_cuda_from_device(h, (size_t)nh * 16, m->dev.crc, (size_t)nh * 4, m->s), "cudaMemcpyAsync");
		SDC_CUDA_TRY(sdc_cuda_from_device(h, (size_t)nh * 20, m->dev.hdr, (size_t)nh * 16, m->s), "cudaMemcpyAsync");
		SDC_CUDA_TRY(sdc_cuda_from_device(h, (size_t)nh * 36, m->dev.got, (size_t)nh * 4, m->s), "cudaMemcpyAsync");
	}
	if ((rc = sdc_nccl_drain(c, deadline, "the checked ring", err, errlen)))
		goto out;
	*seconds = 0;
	for (int i = 0; i < c->nmem; i++) {
		struct sdc_nccl_member *m = &c->m[i];
		const int p = position(order, P, m->rank);
		float ms = 0;
		SDC_CUDA_TRY(cudaEventElapsedTime(&ms, m->t0, m->t1), "cudaEventElapsedTime");
		*seconds = *seconds > ms / 1e3 ? *seconds : ms / 1e3; /* the slowest member's */
		for (int h = 0; h < nh; h++) {
			const int phase = h >= P - 1, s = h - phase * (P - 1);
			const struct sdc_ring_step st = sdc_ring_step_at(phase, s, p, P);
			struct sdc_gpu_hop *o = &hops[i * nh + h];
			memcpy(o->hdr, m->host.hdr + 4 * h, 12);
			o->crc = m->host.crc[h];
			o->nbad = (int64_t)m->host.stat[2 * h];
			o->first = m->host.stat[2 * h + 1] == ~0ull ? -1 : (int64_t)m->host.stat[2 * h + 1];
			o->got = m->host.got[h];
			o->expected = 0;
			if (o->first >= 0) {
				int8_t f, g;
				sdc_ring_term((int64_t)st.recv_c * cn + o->first, salt, &f, &g);
				o->expected = sdc_ring_expect(st.count, sdc_ring_rank_sum(order, P, st.first, st.count), f, g);
			}
		}
	}
	cudaSetDevice(dev);
	return 0;
out:
	*timed_out = rc > 0;
fail:
	cudaSetDevice(dev);
	return -1;
}

/* The allreduce family's NCCL entries (ring.cu's sdc_cuda_allreduce_family). */
void sdc_cuda_nccl_allreduce(struct sdc_gpu_allreduce_ops *t)
{
	t->nccl_collective = m_nccl_collective;
	t->nccl_ring = m_nccl_ring;
}
