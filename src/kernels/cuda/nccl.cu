/*
 * NCCL's native collectives checked exactly (the allreduce probe's nccl variant): each rank draws
 * its input on its GPU (probes/allreduce/ring_hd.h, sdc_coll_input), NCCL all-reduces, reduce-scatters or
 * all-gathers it, and a kernel compares every output element bit for bit with the value the rank
 * computes itself (sdc_coll_expect): wrong elements counted (integer atomics), the first one kept.
 *
 * No hangs: communicators are non-blocking (ncclCommInitRankConfig with blocking = 0, NCCL's
 * "Fault tolerance" usage notes): a call may return ncclInProgress, and ncclCommGetAsyncError is
 * polled until it says ncclSuccess; the stream is then polled with cudaStreamQuery, with the async
 * error checked on every turn, all against the caller's deadline; past it the caller aborts the
 * communicator (ncclCommAbort), which never waits on a peer.
 *
 * libnccl.so.2 is opened here at run time (dlopen) and its few entry points looked up, so the
 * module still loads, and the GEMM and exact-class work still runs, on a host without NCCL; nccl.h
 * gives the types only. NCCL_ALGO and NCCL_PROTO are set by the caller while a communicator
 * initialises (gpu.c: NCCL reads them there, getenv in its tuning model, per communicator), so
 * each (algorithm, protocol) path gets a communicator of its own.
 */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/cuda/cuda_util.h"
#include "probes/allreduce/ring_hd.h"
#include "kernels/xops.h"

/* The entry points used, resolved from libnccl.so.2. */
static struct {
	ncclResult_t (*GetVersion)(int *);
	ncclResult_t (*GetUniqueId)(ncclUniqueId *);
	ncclResult_t (*CommInitRankConfig)(ncclComm_t *, int, ncclUniqueId, int, ncclConfig_t *);
	ncclResult_t (*CommGetAsyncError)(ncclComm_t, ncclResult_t *);
	ncclResult_t (*CommFinalize)(ncclComm_t);
	ncclResult_t (*CommDestroy)(ncclComm_t);
	ncclResult_t (*CommAbort)(ncclComm_t);
	ncclResult_t (*AllReduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
	ncclResult_t (*ReduceScatter)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
				      cudaStream_t);
	ncclResult_t (*AllGather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
	ncclResult_t (*Send)(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
	ncclResult_t (*Recv)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
	ncclResult_t (*GroupStart)(void);
	ncclResult_t (*GroupEnd)(void);
	const char *(*GetErrorString)(ncclResult_t);
	const char *(*GetLastError)(ncclComm_t);
} api;
static char api_why[256], api_version[32];
static pthread_once_t api_once = PTHREAD_ONCE_INIT;

static void api_load(void)
{
	void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(api_why, sizeof(api_why), "NCCL cannot be loaded: %s", dlerror());
		return;
	}
	struct {
		void **fn;
		const char *name;
	} const syms[] = {
		{ (void **)&api.GetVersion, "ncclGetVersion" },
		{ (void **)&api.GetUniqueId, "ncclGetUniqueId" },
		{ (void **)&api.CommInitRankConfig, "ncclCommInitRankConfig" },
		{ (void **)&api.CommGetAsyncError, "ncclCommGetAsyncError" },
		{ (void **)&api.CommFinalize, "ncclCommFinalize" },
		{ (void **)&api.CommDestroy, "ncclCommDestroy" },
		{ (void **)&api.CommAbort, "ncclCommAbort" },
		{ (void **)&api.AllReduce, "ncclAllReduce" },
		{ (void **)&api.ReduceScatter, "ncclReduceScatter" },
		{ (void **)&api.AllGather, "ncclAllGather" },
		{ (void **)&api.Send, "ncclSend" },
		{ (void **)&api.Recv, "ncclRecv" },
		{ (void **)&api.GroupStart, "ncclGroupStart" },
		{ (void **)&api.GroupEnd, "ncclGroupEnd" },
		{ (void **)&api.GetErrorString, "ncclGetErrorString" },
		{ (void **)&api.GetLastError, "ncclGetLastError" },
	};
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
		if (!(*syms[i].fn = dlsym(h, syms[i].name))) {
			snprintf(api_why, sizeof(api_why), "libnccl.so.2 has no %s (NCCL older than 2.14?)", syms[i].name);
			api.GetVersion = NULL;
			return;
		}
	int v = 0;
	api.GetVersion(&v);
	/* NCCL_VERSION(): X*1000 + Y*100 + Z up to 2.8, X*10000 + Y*100 + Z after */
	if (v >= 10000)
		snprintf(api_version, sizeof(api_version), "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
	else
		snprintf(api_version, sizeof(api_version), "%d.%d.%d", v / 1000, v / 100 % 10, v % 100);
}

static bool have_api(char *err, size_t errlen)
{
	pthread_once(&api_once, api_load);
	if (api.GetVersion)
		return true;
	snprintf(err, errlen, "%s", api_why);
	return false;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void pause_briefly(void)
{
	const struct timespec ts = { 0, 100 * 1000 }; /* 0.1 ms: a collective of 1 MiB takes ~10 */
	nanosleep(&ts, NULL);
}

/* What a ring's hops leave on the device, copied back at its end: per hop, the wrong elements and
 * the first (stat, 2 words), the CRC of what arrived, the first wrong value, the header as it
 * arrived. Its host copy lies in one pinned staging buffer in this order (RING_OUT_BYTES). */
struct ring_out {
	unsigned long long *stat;
	uint32_t *crc, *hdr;
	float *got;
};
#define RING_OUT_BYTES(hops) ((size_t)(hops) * (16 + 4 + 16 + 4))

/* One GPU of this process in the communicator (one under mpirun, every GPU of the host in a
 * single process): its NCCL rank, stream, buffers. */
struct member {
	int ordinal, rank; /* its CUDA device, its NCCL rank */
	ncclComm_t comm;
	cudaStream_t s;
	cudaEvent_t t0, t1;
	float *in, *out;
	unsigned long long *stat;  /* [0] wrong elements, [1] the first (ULLONG_MAX: none) */
	struct sdc_cuda_pinned hstat; /* its host copy (staging: kernels/cuda/cuda_util.h) */
	/* the checked ring's (made at its first use): a chunk each to receive into, for the sums sent
	 * on and for a hop fault's copy; headers sent; the hops' results on the device and pinned */
	float *recv, *sums, *fault;
	uint32_t *hdr_send;
	struct ring_out dev, host; /* host: views into ring_stage */
	struct sdc_cuda_pinned ring_stage;
	struct sdc_crc_scratch sc;
	/* the data-parallel mean's (made at its first use, for total floats): this rank's gradient, every
	 * rank's, the mean; pinned host copies of the first and the last */
	int64_t dp_total;
	float *dp_local, *dp_all, *dp_out;
	struct sdc_cuda_pinned dp_stage; /* the gradient in, then the mean out */
};

struct sdc_gpu_comm {
	int nranks, nmem;
	int64_t n;
	struct member *m;
};

static void nccl_error(char *err, size_t errlen, const char *what, ncclComm_t comm, ncclResult_t r)
{
	const char *last = comm ? api.GetLastError(comm) : "";
	if (err)
		snprintf(err, errlen, "%s: %s%s%s", what, api.GetErrorString(r), last && *last ? ": " : "", last ? last : "");
}

/* Until the communicator's last call is through on the host (no longer ncclInProgress). 0; -1 an
 * error; 1 the deadline passed. */
static int settle(ncclComm_t comm, double deadline, const char *what, char *err, size_t errlen)
{
	for (;;) {
		ncclResult_t st = ncclSuccess;
		const ncclResult_t r = api.CommGetAsyncError(comm, &st);
		if (r != ncclSuccess) {
			nccl_error(err, errlen, what, comm, r);
			return -1;
		}
		if (st == ncclSuccess)
			return 0;
		if (st != ncclInProgress) {
			nccl_error(err, errlen, what, comm, st);
			return -1;
		}
		if (now() > deadline) {
			if (err)
				snprintf(err, errlen, "%s did not finish in time (ncclInProgress at the deadline)", what);
			return 1;
		}
		pause_briefly();
	}
}

/* settle for every member. */
static int settle_all(struct sdc_gpu_comm *c, double deadline, const char *what, char *err, size_t errlen)
{
	for (int i = 0; i < c->nmem; i++) {
		const int rc = settle(c->m[i].comm, deadline, what, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

/* Until every member's stream has run everything queued, NCCL's async error looked at on every
 * turn. */
static int drain_streams(struct sdc_gpu_comm *c, double deadline, const char *what, char *err, size_t errlen)
{
	for (int i = 0; i < c->nmem; i++) {
		struct member *m = &c->m[i];
		for (;;) {
			const cudaError_t e = cudaStreamQuery(m->s);
			if (e == cudaSuccess)
				break;
			if (e != cudaErrorNotReady) {
				sdc_cuda_error(err, errlen, what, e);
				return -1;
			}
			ncclResult_t st = ncclSuccess;
			if (api.CommGetAsyncError(m->comm, &st) == ncclSuccess && st != ncclSuccess && st != ncclInProgress) {
				nccl_error(err, errlen, what, m->comm, st);
				return -1;
			}
			if (now() > deadline) {
				snprintf(err, errlen, "%s did not finish in time (a peer that never came, or a stuck GPU or link)",
					 what);
				return 1;
			}
			pause_briefly();
		}
	}
	return 0;
}

/* Makes member i's GPU current (every call below enqueues on one member at a time). */
static int use(struct member *m, char *err, size_t errlen)
{
	const cudaError_t e = cudaSetDevice(m->ordinal);
	if (e != cudaSuccess) {
		sdc_cuda_error(err, errlen, "cudaSetDevice", e);
		return -1;
	}
	return 0;
}

static const char *m_nccl_version(char *why, size_t len)
{
	return have_api(why, len) ? api_version : NULL;
}

static int m_nccl_unique_id(uint8_t *id, char *err, size_t errlen)
{
	if (!have_api(err, errlen))
		return -1;
	ncclUniqueId u;
	static_assert(sizeof(u) == SDC_GPU_NCCL_ID_BYTES, "ncclUniqueId is 128 bytes");
	const ncclResult_t r = api.GetUniqueId(&u);
	if (r != ncclSuccess) {
		nccl_error(err, errlen, "ncclGetUniqueId", NULL, r);
		return -1;
	}
	memcpy(id, &u, sizeof(u));
	return 0;
}

/* ncclCommAbort and ncclCommDestroy can wait for the device (a cudaFree inside: NVIDIA/nccl
 * issues 549 and 829), so each runs on a thread of its own and is waited for ABORT_S at most;
 * one that does not return gives its GPU up (marked hung: nothing more is started or freed there)
 * and is left running to the process's end. */
#define ABORT_S 10.0
struct comm_call {
	ncclResult_t (*fn)(ncclComm_t);
	ncclComm_t comm;
	int ordinal;
	int done; /* (__atomic builtins: the thread sets it, the caller polls it) */
};

static void *comm_call_thread(void *arg)
{
	struct comm_call *k = (struct comm_call *)arg;
	cudaSetDevice(k->ordinal);
	k->fn(k->comm);
	__atomic_store_n(&k->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* 0 when fn(comm) returned within ABORT_S; -1 (the GPU marked hung) when not. */
static int comm_call_bounded(ncclResult_t (*fn)(ncclComm_t), ncclComm_t comm, int ordinal)
{
	struct comm_call *k = (struct comm_call *)calloc(1, sizeof(*k));
	pthread_t t;
	if (!k)
		return -1;
	k->fn = fn, k->comm = comm, k->ordinal = ordinal;
	if (pthread_create(&t, NULL, comm_call_thread, k)) {
		free(k);
		return -1;
	}
	const double deadline = now() + ABORT_S;
	while (!__atomic_load_n(&k->done, __ATOMIC_ACQUIRE) && now() < deadline)
		pause_briefly();
	if (!__atomic_load_n(&k->done, __ATOMIC_ACQUIRE)) {
		pthread_detach(t); /* (k stays with it: it may still write done) */
		sdc_cuda_mark_hung(ordinal);
		return -1;
	}
	pthread_join(t, NULL);
	free(k);
	return 0;
}

/* A member's memory, streams and events (nothing on a GPU given up: see cuda_util.h). */
static void member_free(struct member *m)
{
	const int d = m->ordinal;
	void *const bufs[] = { m->in, m->out, m->stat, m->recv, m->sums, m->fault, m->hdr_send, m->dev.stat,
			       m->dev.crc, m->dev.hdr, m->dev.got, m->sc.c[0], m->sc.c[1], m->sc.l[0], m->sc.l[1],
			       m->dp_local, m->dp_all, m->dp_out };
	if (sdc_cuda_is_hung(d) || !m->s)
		return;
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		if (bufs[i])
			sdc_cuda_free(d, bufs[i], m->s);
	sdc_cuda_pinned_put(d, &m->hstat, m->s);
	sdc_cuda_pinned_put(d, &m->ring_stage, m->s);
	sdc_cuda_pinned_put(d, &m->dp_stage, m->s);
	cudaStreamDestroy(m->s); /* (returns at once: the stream goes when its work is done) */
	if (m->t0)
		cudaEventDestroy(m->t0);
	if (m->t1)
		cudaEventDestroy(m->t1);
}

static void m_nccl_destroy(struct sdc_gpu_comm *c, int abort)
{
	if (!c)
		return;
	int dev = 0;
	cudaGetDevice(&dev);
	/* a finalize flushes what is queued and may wait on peers: it too gets a deadline */
	bool finalized = !abort;
	for (int i = 0; i < c->nmem && finalized; i++)
		if (c->m[i].comm) {
			cudaSetDevice(c->m[i].ordinal);
			const ncclResult_t r = api.CommFinalize(c->m[i].comm);
			finalized = r == ncclSuccess || r == ncclInProgress;
		}
	finalized = finalized && !settle_all(c, now() + 10, "ncclCommFinalize", NULL, 0);
	for (int i = 0; i < c->nmem; i++) {
		struct member *m = &c->m[i];
		if (m->comm && comm_call_bounded(finalized ? api.CommDestroy : api.CommAbort, m->comm, m->ordinal))
			continue; /* given up */
		/* after an abort the stream may hold work that never ends: left to the process's end */
		if (finalized)
			member_free(m);
	}
	cudaSetDevice(dev);
	free(c->m);
	free(c);
}

/* A member's stream, events and collective buffers. */
static int member_alloc(struct member *m, int64_t n, char *err, size_t errlen)
{
	const size_t bytes = (size_t)n * 4;
	if (use(m, err, errlen) || sdc_cuda_refuse_hung(m->ordinal, err, errlen))
		return -1;
	SDC_CUDA_TRY(cudaStreamCreateWithFlags(&m->s, cudaStreamNonBlocking), "cudaStreamCreate");
	SDC_CUDA_TRY(cudaEventCreate(&m->t0), "cudaEventCreate");
	SDC_CUDA_TRY(cudaEventCreate(&m->t1), "cudaEventCreate");
	SDC_CUDA_TRY(sdc_cuda_malloc(m->ordinal, (void **)&m->in, bytes, m->s), "cudaMallocAsync");
	SDC_CUDA_TRY(sdc_cuda_malloc(m->ordinal, (void **)&m->out, bytes, m->s), "cudaMallocAsync");
	SDC_CUDA_TRY(sdc_cuda_malloc(m->ordinal, (void **)&m->stat, 16, m->s), "cudaMallocAsync");
	SDC_CUDA_TRY(sdc_cuda_pinned_get(&m->hstat, 16), "cudaHostAlloc");
	return 0;
fail:
	return -1;
}

static struct sdc_gpu_comm *m_nccl_init(const uint8_t *id, int nranks, int first_rank, int nmem, const int *devices,
					const char *algo, const char *proto, int64_t n, double timeout, char *err,
					size_t errlen)
{
	if (!have_api(err, errlen))
		return NULL;
	if (nmem < 1 || nmem > 64 || nranks < nmem) {
		snprintf(err, errlen, "%d GPUs of %d ranks in this process: 1 to 64 expected", nmem, nranks);
		return NULL;
	}
	struct sdc_gpu_comm *c = (struct sdc_gpu_comm *)calloc(1, sizeof(*c));
	if (c)
		c->m = (struct member *)calloc((size_t)nmem, sizeof(*c->m));
	if (!c || !c->m) {
		free(c);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->nranks = nranks, c->nmem = nmem, c->n = n;
	int dev = 0;
	cudaGetDevice(&dev);
	for (int i = 0; i < nmem; i++) {
		c->m[i].ordinal = devices[i];
		c->m[i].rank = first_rank + i;
		if (member_alloc(&c->m[i], n, err, errlen)) {
			cudaSetDevice(dev);
			m_nccl_destroy(c, 0);
			return NULL;
		}
	}
	/* (the path, algo/proto, is in NCCL_ALGO and NCCL_PROTO: the caller set them, gpu_module.h) */
	(void)algo, (void)proto;
	ncclUniqueId u;
	memcpy(&u, id, sizeof(u));
	const double deadline = now() + timeout;
	/* several GPUs of one thread initialise in one group (as ncclCommInitAll does) */
	ncclResult_t r = api.GroupStart();
	for (int i = 0; i < nmem && (r == ncclSuccess || r == ncclInProgress); i++) {
		ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
		cfg.blocking = 0;
		cudaSetDevice(c->m[i].ordinal);
		r = api.CommInitRankConfig(&c->m[i].comm, nranks, u, c->m[i].rank, &cfg);
	}
	const ncclResult_t g = api.GroupEnd();
	if (r == ncclSuccess || r == ncclInProgress)
		r = g;
	int rc = r == ncclSuccess || r == ncclInProgress ? 0 : -1;
	if (rc)
		nccl_error(err, errlen, "ncclCommInitRankConfig", NULL, r);
	for (int i = 0; i < nmem && !rc; i++)
		rc = c->m[i].comm ? settle(c->m[i].comm, deadline, "ncclCommInitRankConfig", err, errlen) : -1;
	cudaSetDevice(dev);
	if (rc) {
		m_nccl_destroy(c, 1);
		return NULL;
	}
	return c;
}

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

static unsigned grid_for(int64_t n)
{
	const int64_t b = (n + 255) / 256;
	return (unsigned)(b < 4096 ? (b ? b : 1) : 4096);
}

/* The collective's call for one member. */
static ncclResult_t collective(struct member *m, char op, int64_t n, int64_t nin, int64_t nout)
{
	return op == 'A'   ? api.AllReduce(m->in, m->out, (size_t)n, ncclFloat32, ncclSum, m->comm, m->s)
	       : op == 'R' ? api.ReduceScatter(m->in, m->out, (size_t)nout, ncclFloat32, ncclSum, m->comm, m->s)
			   : api.AllGather(m->in, m->out, (size_t)nin, ncclFloat32, m->comm, m->s);
}

static int m_nccl_collective(struct sdc_gpu_comm *c, char op, uint64_t it, const struct sdc_gpu_flip *flip,
			     struct sdc_gpu_coll_result *res, double timeout, char *err, size_t errlen)
{
	const int P = c->nranks;
	const int64_t n = c->n, nin = sdc_coll_in_count(op, n, P), nout = sdc_coll_out_count(op, n, P);
	const uint32_t salt = sdc_ring_salt(it);
	const double deadline = now() + timeout;
	const char *what = op == 'A' ? "ncclAllReduce" : op == 'R' ? "ncclReduceScatter" : "ncclAllGather";
	int rc = 0, dev = 0;
	ncclResult_t r = ncclSuccess;
	cudaGetDevice(&dev);
	for (int i = 0; i < c->nmem; i++) {
		memset(&res[i], 0, sizeof(res[i]));
		res[i].first = -1;
		struct member *m = &c->m[i];
		if (use(m, err, errlen))
			goto fail;
		k_fill<<<grid_for(nin), 256, 0, m->s>>>(op, nin, m->rank, P, n, salt, m->in);
		SDC_CUDA_TRY(cudaMemsetAsync(m->out, 0xFF, (size_t)nout * 4, m->s), "cudaMemset"); /* NaN: nothing left over */
		k_stat_init<<<1, 32, 0, m->s>>>(m->stat, 1);
		SDC_CUDA_TRY(cudaGetLastError(), "the fill kernel");
		SDC_CUDA_TRY(cudaEventRecord(m->t0, m->s), "cudaEventRecord");
	}
	/* every member of this process in one group: none waits for another before it is launched */
	api.GroupStart();
	for (int i = 0; i < c->nmem && (r == ncclSuccess || r == ncclInProgress); i++) {
		cudaSetDevice(c->m[i].ordinal);
		r = collective(&c->m[i], op, n, nin, nout);
	}
	{
		const ncclResult_t g = api.GroupEnd();
		if (r == ncclSuccess || r == ncclInProgress)
			r = g;
	}
	if (r != ncclSuccess && r != ncclInProgress) {
		nccl_error(err, errlen, what, c->m[0].comm, r);
		goto refused;
	}
	if ((rc = settle_all(c, deadline, what, err, errlen)) < 0)
		goto refused; /* NCCL's asynchronous error */
	if (rc)
		goto out;
	for (int i = 0; i < c->nmem; i++) {
		struct member *m = &c->m[i];
		if (use(m, err, errlen))
			goto fail;
		SDC_CUDA_TRY(cudaEventRecord(m->t1, m->s), "cudaEventRecord");
		if (flip && flip->member == i && flip->el >= 0 && flip->el < nout)
			k_flip<<<1, 1, 0, m->s>>>((uint32_t *)m->out, flip->el, flip->bit & 31);
		k_verify<<<grid_for(nout), 256, 0, m->s>>>(op, nout, m->rank, P, n, salt, (const uint32_t *)m->out, m->stat);
		SDC_CUDA_TRY(cudaGetLastError(), "the check kernel");
		SDC_CUDA_TRY(sdc_cuda_from_device(&m->hstat, 0, m->stat, 16, m->s), "cudaMemcpyAsync");
	}
	if ((rc = drain_streams(c, deadline, what, err, errlen)))
		goto out;
	for (int i = 0; i < c->nmem; i++) {
		struct member *m = &c->m[i];
		float ms = 0;
		SDC_CUDA_TRY(cudaEventElapsedTime(&ms, m->t0, m->t1), "cudaEventElapsedTime");
		res[i].seconds = ms / 1e3;
		const unsigned long long *hstat = (const unsigned long long *)m->hstat.p;
		res[i].wrong = (int64_t)hstat[0];
		if (!hstat[0])
			continue;
		res[i].first = (int64_t)hstat[1];
		res[i].expected = sdc_coll_expect(op, res[i].first, m->rank, P, n, salt);
		if (use(m, err, errlen))
			goto fail;
		SDC_CUDA_TRY(sdc_cuda_from_device(&m->hstat, 0, (const uint32_t *)m->out + res[i].first, 4, m->s),
			     "cudaMemcpyAsync");
		if ((rc = drain_streams(c, deadline, what, err, errlen)))
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
static int ring_alloc(struct member *m, int P, int64_t n, char *err, size_t errlen)
{
	if (m->recv)
		return 0;
	const int hops = 2 * (P - 1);
	const size_t cb = (size_t)(n / P) * 4;
	const uint64_t np = sdc_cuda_crc_pieces(cb);
	if (use(m, err, errlen))
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
		SDC_CUDA_TRY(sdc_cuda_malloc(d, (void **)&m->sc.c[k], np * 4, m->s), "cudaMallocAsync");
		SDC_CUDA_TRY(sdc_cuda_malloc(d, (void **)&m->sc.l[k], np * 8, m->s), "cudaMallocAsync");
	}
	return 0;
fail:
	return -1; /* (what was made is freed with the communicator) */
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
static const float *step_send(struct member *m, int P, int64_t cn, int phase, int s, int p, int mi,
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
	sdc_cuda_crc_enqueue((const uint8_t *)payload, cb, &m->sc, &which, m->s);
	k_header<<<1, 1, 0, m->s>>>(hdr, m->sc.c[which], (uint32_t)(phase << 16 | s));
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
static void step_check(struct member *m, const int *order, int P, int64_t cn, int phase, int s, int p, int mi,
		       uint32_t salt, const struct sdc_gpu_ring_fault *faults, int nfaults)
{
	const size_t cb = (size_t)cn * 4;
	const int h = phase * (P - 1) + s;
	const struct sdc_ring_step st = sdc_ring_step_at(phase, s, p, P);
	const int64_t off = (int64_t)st.recv_c * cn;
	float *into = phase == 0 ? m->recv : m->out + off;
	int which = 0;
	sdc_cuda_crc_enqueue((const uint8_t *)into, cb, &m->sc, &which, m->s);
	k_copy_word<<<1, 1, 0, m->s>>>(m->dev.crc + h, m->sc.c[which]);
	const int rsum = sdc_ring_rank_sum(order, P, st.first, st.count);
	unsigned long long *stat = m->dev.stat + 2 * h;
	if (phase == 0) {
		/* the last step's sums are this rank's own chunk of the result */
		float *dst = s < P - 2 ? m->sums : m->out + off;
		k_hop_add<<<grid_for(cn), 256, 0, m->s>>>(cn, off, salt, st.count, rsum, m->in + off,
							   (const uint32_t *)m->recv, dst, stat);
		k_hop_pick<<<1, 1, 0, m->s>>>(stat, m->recv, m->dev.got + h);
		for (int k = 0; k < nfaults && s == 0; k++)
			if (faults[k].kind == 'C' && faults[k].member == mi) /* its sums go wrong before they leave */
				k_flip<<<1, 1, 0, m->s>>>((uint32_t *)dst, faults[k].el % cn, faults[k].bit & 31);
	} else {
		k_hop_count<<<grid_for(cn), 256, 0, m->s>>>(cn, off, salt, st.count, rsum, (const uint32_t *)into, stat);
		k_hop_pick<<<1, 1, 0, m->s>>>(stat, into, m->dev.got + h);
		k_hop_repair<<<grid_for(cn), 256, 0, m->s>>>(cn, off, salt, st.count, rsum, into);
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
	const double deadline = now() + timeout;
	int rc = 0, dev = 0;
	cudaGetDevice(&dev);
	for (int i = 0; i < c->nmem; i++) {
		struct member *m = &c->m[i];
		if (ring_alloc(m, P, n, err, errlen))
			goto fail;
		k_fill<<<grid_for(n), 256, 0, m->s>>>('A', n, m->rank, P, n, salt, m->in);
		k_stat_init<<<1, 256, 0, m->s>>>(m->dev.stat, nh);
		SDC_CUDA_TRY(cudaGetLastError(), "the ring's fill");
		SDC_CUDA_TRY(cudaEventRecord(m->t0, m->s), "cudaEventRecord");
	}
	for (int phase = 0; phase < 2; phase++)
		for (int s = 0; s < P - 1; s++) {
			const int h = phase * (P - 1) + s;
			const float *payload[64];
			for (int i = 0; i < c->nmem; i++) {
				struct member *m = &c->m[i];
				if (use(m, err, errlen) ||
				    !(payload[i % 64] = step_send(m, P, cn, phase, s, position(order, P, m->rank), i, faults, nfaults,
								  err, errlen)))
					goto fail;
			}
			/* every member's send and receive of the step in one group */
			ncclResult_t r = api.GroupStart();
			for (int i = 0; i < c->nmem && (r == ncclSuccess || r == ncclInProgress); i++) {
				struct member *m = &c->m[i];
				const int p = position(order, P, m->rank);
				const int next = order[(p + 1) % P], prev = order[(p - 1 + P) % P];
				const int64_t off = (int64_t)sdc_ring_step_at(phase, s, p, P).recv_c * cn;
				cudaSetDevice(m->ordinal);
				r = api.Send(m->hdr_send + 4 * h, 12, ncclUint8, next, m->comm, m->s);
				if (r == ncclSuccess || r == ncclInProgress)
					r = api.Send(payload[i % 64], cb, ncclUint8, next, m->comm, m->s);
				if (r == ncclSuccess || r == ncclInProgress)
					r = api.Recv(m->dev.hdr + 4 * h, 12, ncclUint8, prev, m->comm, m->s);
				if (r == ncclSuccess || r == ncclInProgress)
					r = api.Recv(phase == 0 ? m->recv : m->out + off, cb, ncclUint8, prev, m->comm, m->s);
			}
			const ncclResult_t g = api.GroupEnd();
			if (r == ncclSuccess || r == ncclInProgress)
				r = g;
			if (r != ncclSuccess && r != ncclInProgress) {
				nccl_error(err, errlen, "ncclSend/ncclRecv", c->m[0].comm, r);
				goto fail;
			}
			if ((rc = settle_all(c, deadline, "the ring's ncclSend/ncclRecv", err, errlen)))
				goto out;
			for (int i = 0; i < c->nmem; i++) {
				struct member *m = &c->m[i];
				if (use(m, err, errlen))
					goto fail;
				step_check(m, order, P, cn, phase, s, position(order, P, m->rank), i, salt, faults, nfaults);
				SDC_CUDA_TRY(cudaGetLastError(), "the ring's hop kernels");
			}
		}
	for (int i = 0; i < c->nmem; i++) {
		struct member *m = &c->m[i];
		if (use(m, err, errlen))
			goto fail;
		SDC_CUDA_TRY(cudaEventRecord(m->t1, m->s), "cudaEventRecord");
		struct sdc_cuda_pinned *h = &m->ring_stage;
		SDC_CUDA_TRY(sdc_cuda_from_device(h, 0, m->dev.stat, (size_t)nh * 16, m->s), "cudaMemcpyAsync");
		SDC_CUDA_TRY(sdc_cuda_from_device(h, (size_t)nh * 16, m->dev.crc, (size_t)nh * 4, m->s), "cudaMemcpyAsync");
		SDC_CUDA_TRY(sdc_cuda_from_device(h, (size_t)nh * 20, m->dev.hdr, (size_t)nh * 16, m->s), "cudaMemcpyAsync");
		SDC_CUDA_TRY(sdc_cuda_from_device(h, (size_t)nh * 36, m->dev.got, (size_t)nh * 4, m->s), "cudaMemcpyAsync");
	}
	if ((rc = drain_streams(c, deadline, "the checked ring", err, errlen)))
		goto out;
	*seconds = 0;
	for (int i = 0; i < c->nmem; i++) {
		struct member *m = &c->m[i];
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

/* ---- data-parallel training's global gradient ---- */

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
	struct member *m = &c->m[0];
	const int P = c->nranks;
	const size_t bytes = (size_t)total * 4;
	const double deadline = now() + timeout;
	int rc = 0, dev = 0;
	cudaGetDevice(&dev);
	if (use(m, err, errlen))
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
		const ncclResult_t r = api.AllGather(m->dp_local, m->dp_all, (size_t)total, ncclFloat32, m->comm, m->s);
		if (r != ncclSuccess && r != ncclInProgress) {
			nccl_error(err, errlen, "ncclAllGather of the gradients", m->comm, r);
			goto fail;
		}
	}
	if ((rc = settle(m->comm, deadline, "ncclAllGather of the gradients", err, errlen)))
		goto out;
	k_rank_mean<<<grid_for(total), 256, 0, m->s>>>(m->dp_all, total, P, 1.0f / (float)P, m->dp_out);
	SDC_CUDA_TRY(cudaGetLastError(), "the rank-order mean");
	SDC_CUDA_TRY(sdc_cuda_from_device(&m->dp_stage, 0, m->dp_out, bytes, m->s), "cudaMemcpyAsync");
	if ((rc = drain_streams(c, deadline, "the gradients' mean", err, errlen)))
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

__global__ void k_nothing(int *p)
{
	if (p)
		*p = 1;
}

/* Each GPU's ping: a stream, an event and a word, made at its first ping and kept (a ping runs
 * after a deadline, when nothing may be freed: a free waits for the whole device). */
static struct {
	cudaStream_t s;
	cudaEvent_t ev;
	int *word;
} pings[SDC_CUDA_MAX_DEVICES];
static pthread_mutex_t ping_lock = PTHREAD_MUTEX_INITIALIZER;

static int m_ping(int device, double timeout, char *err, size_t errlen)
{
	int rc = -1, dev = 0;
	cudaGetDevice(&dev);
	if (device < 0 || device >= SDC_CUDA_MAX_DEVICES || cudaSetDevice(device) != cudaSuccess) {
		snprintf(err, errlen, "cudaSetDevice(%d) failed", device);
		return -1;
	}
	if (sdc_cuda_refuse_hung(device, err, errlen))
		goto fail;
	pthread_mutex_lock(&ping_lock);
	if (!pings[device].s) {
		cudaStream_t s = NULL;
		cudaEvent_t ev = NULL;
		int *word = NULL;
		const bool made = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess &&
				  cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) == cudaSuccess &&
				  sdc_cuda_malloc(device, (void **)&word, 4, s) == cudaSuccess;
		if (made)
			pings[device].s = s, pings[device].ev = ev, pings[device].word = word;
	}
	pthread_mutex_unlock(&ping_lock);
	if (!pings[device].s) {
		snprintf(err, errlen, "a stream for a kernel of one thread could not be made on GPU %d", device);
		goto fail;
	}
	k_nothing<<<1, 1, 0, pings[device].s>>>(pings[device].word);
	SDC_CUDA_TRY(cudaGetLastError(), "a kernel of one thread");
	/* (past the deadline sdc_cuda_wait marks the GPU hung) */
	rc = sdc_cuda_wait(pings[device].s, pings[device].ev, timeout, "a kernel of one thread", err, errlen) ? -1 : 0;
fail:
	cudaSetDevice(dev);
	return rc;
}

void sdc_cuda_nccl_ops(struct sdc_gpu_module *m)
{
	m->nccl_version = m_nccl_version;
	m->nccl_unique_id = m_nccl_unique_id;
	m->nccl_init = m_nccl_init;
	m->nccl_destroy = m_nccl_destroy;
	m->nccl_collective = m_nccl_collective;
	m->nccl_ring = m_nccl_ring;
	m->nccl_rank_mean = m_nccl_rank_mean;
	m->ping = m_ping;
}
