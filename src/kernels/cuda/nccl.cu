/*
 * NCCL's native collectives checked exactly (the allreduce probe's nccl variant): each rank draws
 * its input on its GPU (kernels/ring_hd.h, sdc_coll_input), NCCL all-reduces, reduce-scatters or
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
 * gives the types only. NCCL_ALGO and NCCL_PROTO are set while a communicator initialises: NCCL
 * reads them there (getenv in its tuning model, per communicator), so each (algorithm, protocol)
 * path gets a communicator of its own.
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
#include "kernels/ring_hd.h"

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

/* What a ring's hops leave on the device, copied back at its end (pinned, so the copies are
 * queued and never block the host past a deadline): per hop, the wrong elements and the first
 * (stat, 2 words), the CRC of what arrived, the first wrong value, the header as it arrived. */
struct ring_out {
	unsigned long long *stat;
	uint32_t *crc, *hdr;
	float *got;
};

struct sdc_gpu_comm {
	ncclComm_t comm;
	int nranks, rank;
	int64_t n;
	cudaStream_t s;
	cudaEvent_t t0, t1;
	float *in, *out;
	unsigned long long *stat;  /* [0] wrong elements, [1] the first (ULLONG_MAX: none) */
	unsigned long long *hstat; /* its pinned host copy */
	/* the checked ring's (made at its first use): a chunk each to receive into, for the sums sent
	 * on and for a hop fault's copy; headers sent; the hops' results on the device and pinned */
	float *recv, *sums, *fault;
	uint32_t *hdr_send;
	struct ring_out dev, host;
	struct sdc_crc_scratch sc;
};

static void nccl_error(char *err, size_t errlen, const char *what, ncclComm_t comm, ncclResult_t r)
{
	const char *last = comm ? api.GetLastError(comm) : "";
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
			snprintf(err, errlen, "%s did not finish in time (ncclInProgress at the deadline)", what);
			return 1;
		}
		pause_briefly();
	}
}

/* Until the stream has run everything queued, NCCL's async error looked at on every turn. */
static int drain_stream(struct sdc_gpu_comm *c, double deadline, const char *what, char *err, size_t errlen)
{
	for (;;) {
		const cudaError_t e = cudaStreamQuery(c->s);
		if (e == cudaSuccess)
			return 0;
		if (e != cudaErrorNotReady) {
			sdc_cuda_error(err, errlen, what, e);
			return -1;
		}
		ncclResult_t st = ncclSuccess;
		if (api.CommGetAsyncError(c->comm, &st) == ncclSuccess && st != ncclSuccess && st != ncclInProgress) {
			nccl_error(err, errlen, what, c->comm, st);
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

static void m_nccl_destroy(struct sdc_gpu_comm *c, int abort)
{
	if (!c)
		return;
	if (c->comm) {
		/* a finalize flushes what is queued and may wait on peers: it too gets a deadline */
		const ncclResult_t r = abort ? ncclInternalError : api.CommFinalize(c->comm);
		if ((r != ncclSuccess && r != ncclInProgress) || settle(c->comm, now() + 10, "ncclCommFinalize", NULL, 0))
			api.CommAbort(c->comm);
		else
			api.CommDestroy(c->comm);
	}
	/* after an abort the stream may hold work that never ends: it is left to the process's end */
	if (!abort) {
		cudaFree(c->in), cudaFree(c->out), cudaFree(c->stat), cudaFreeHost(c->hstat);
		cudaFree(c->recv), cudaFree(c->sums), cudaFree(c->fault), cudaFree(c->hdr_send);
		cudaFree(c->dev.stat), cudaFree(c->dev.crc), cudaFree(c->dev.hdr), cudaFree(c->dev.got);
		cudaFreeHost(c->host.stat), cudaFreeHost(c->host.crc), cudaFreeHost(c->host.hdr), cudaFreeHost(c->host.got);
		for (int k = 0; k < 2; k++)
			cudaFree(c->sc.c[k]), cudaFree(c->sc.l[k]);
		if (c->s)
			cudaStreamDestroy(c->s);
		if (c->t0)
			cudaEventDestroy(c->t0);
		if (c->t1)
			cudaEventDestroy(c->t1);
	}
	free(c);
}

/* Sets or restores one variable of the environment (value NULL: unset). */
static void set_env(const char *name, const char *value)
{
	if (value)
		setenv(name, value, 1);
	else
		unsetenv(name);
}

static struct sdc_gpu_comm *m_nccl_init(const uint8_t *id, int nranks, int rank, const char *algo, const char *proto,
					int64_t n, double timeout, char *err, size_t errlen)
{
	if (!have_api(err, errlen))
		return NULL;
	struct sdc_gpu_comm *c = (struct sdc_gpu_comm *)calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->nranks = nranks, c->rank = rank, c->n = n;
	const size_t bytes = (size_t)n * 4;
	SDC_CUDA_TRY(cudaStreamCreateWithFlags(&c->s, cudaStreamNonBlocking), "cudaStreamCreate");
	SDC_CUDA_TRY(cudaEventCreate(&c->t0), "cudaEventCreate");
	SDC_CUDA_TRY(cudaEventCreate(&c->t1), "cudaEventCreate");
	SDC_CUDA_TRY(cudaMalloc(&c->in, bytes), "cudaMalloc");
	SDC_CUDA_TRY(cudaMalloc(&c->out, bytes), "cudaMalloc");
	SDC_CUDA_TRY(cudaMalloc(&c->stat, 16), "cudaMalloc");
	SDC_CUDA_TRY(cudaMallocHost(&c->hstat, 16), "cudaMallocHost");
	{
		/* the path this communicator takes, for as long as NCCL initialises it */
		char *old_algo = getenv("NCCL_ALGO") ? strdup(getenv("NCCL_ALGO")) : NULL;
		char *old_proto = getenv("NCCL_PROTO") ? strdup(getenv("NCCL_PROTO")) : NULL;
		set_env("NCCL_ALGO", algo && *algo ? algo : old_algo);
		set_env("NCCL_PROTO", proto && *proto ? proto : old_proto);
		ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
		cfg.blocking = 0;
		ncclUniqueId u;
		memcpy(&u, id, sizeof(u));
		const double deadline = now() + timeout;
		const ncclResult_t r = api.CommInitRankConfig(&c->comm, nranks, u, rank, &cfg);
		int rc = r == ncclSuccess || r == ncclInProgress ? 0 : -1;
		if (rc)
			nccl_error(err, errlen, "ncclCommInitRankConfig", NULL, r);
		else if (c->comm)
			rc = settle(c->comm, deadline, "ncclCommInitRankConfig", err, errlen);
		set_env("NCCL_ALGO", old_algo);
		set_env("NCCL_PROTO", old_proto);
		free(old_algo), free(old_proto);
		if (rc) {
			m_nccl_destroy(c, 1);
			return NULL;
		}
	}
	return c;
fail:
	m_nccl_destroy(c, 0);
	return NULL;
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

static int m_nccl_collective(struct sdc_gpu_comm *c, char op, uint64_t it, int64_t flip_el, int flip_bit,
			     struct sdc_gpu_coll_result *res, double timeout, char *err, size_t errlen)
{
	memset(res, 0, sizeof(*res));
	res->first = -1;
	const int P = c->nranks;
	const int64_t n = c->n, nin = sdc_coll_in_count(op, n, P), nout = sdc_coll_out_count(op, n, P);
	const uint32_t salt = sdc_ring_salt(it);
	const double deadline = now() + timeout;
	const char *what = op == 'A' ? "ncclAllReduce" : op == 'R' ? "ncclReduceScatter" : "ncclAllGather";
	unsigned long long *stat = c->hstat;
	ncclResult_t r;
	int rc;
	k_fill<<<grid_for(nin), 256, 0, c->s>>>(op, nin, c->rank, P, n, salt, c->in);
	SDC_CUDA_TRY(cudaMemsetAsync(c->out, 0xFF, (size_t)nout * 4, c->s), "cudaMemset"); /* NaN: nothing left over */
	k_stat_init<<<1, 32, 0, c->s>>>(c->stat, 1);
	SDC_CUDA_TRY(cudaGetLastError(), "the fill kernel");
	SDC_CUDA_TRY(cudaEventRecord(c->t0, c->s), "cudaEventRecord");
	r = op == 'A'	? api.AllReduce(c->in, c->out, (size_t)n, ncclFloat32, ncclSum, c->comm, c->s)
	    : op == 'R' ? api.ReduceScatter(c->in, c->out, (size_t)nout, ncclFloat32, ncclSum, c->comm, c->s)
			: api.AllGather(c->in, c->out, (size_t)nin, ncclFloat32, c->comm, c->s);
	if (r != ncclSuccess && r != ncclInProgress) {
		nccl_error(err, errlen, what, c->comm, r);
		return -1;
	}
	if ((rc = settle(c->comm, deadline, what, err, errlen)))
		goto out;
	SDC_CUDA_TRY(cudaEventRecord(c->t1, c->s), "cudaEventRecord");
	if (flip_el >= 0 && flip_el < nout)
		k_flip<<<1, 1, 0, c->s>>>((uint32_t *)c->out, flip_el, flip_bit & 31);
	k_verify<<<grid_for(nout), 256, 0, c->s>>>(op, nout, c->rank, P, n, salt, (const uint32_t *)c->out, c->stat);
	SDC_CUDA_TRY(cudaGetLastError(), "the check kernel");
	SDC_CUDA_TRY(cudaMemcpyAsync(stat, c->stat, 16, cudaMemcpyDeviceToHost, c->s), "cudaMemcpy");
	if ((rc = drain_stream(c, deadline, what, err, errlen)))
		goto out;
	{
		float ms = 0;
		SDC_CUDA_TRY(cudaEventElapsedTime(&ms, c->t0, c->t1), "cudaEventElapsedTime");
		res->seconds = ms / 1e3;
	}
	res->wrong = (int64_t)stat[0];
	if (stat[0]) {
		res->first = (int64_t)stat[1];
		SDC_CUDA_TRY(cudaMemcpyAsync(c->hstat, (const uint32_t *)c->out + res->first, 4, cudaMemcpyDeviceToHost, c->s),
			     "cudaMemcpy");
		if ((rc = drain_stream(c, deadline, what, err, errlen)))
			goto out;
		memcpy(&res->got, c->hstat, 4);
		res->expected = sdc_coll_expect(op, res->first, c->rank, P, n, salt);
	}
	return 0;
out:
	res->timed_out = rc > 0;
	return -1;
fail:
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

/* The ring's buffers, made at its first use (a chunk is n / P floats). */
static int ring_alloc(struct sdc_gpu_comm *c, char *err, size_t errlen)
{
	if (c->recv)
		return 0;
	const int P = c->nranks, hops = 2 * (P - 1);
	const size_t cb = (size_t)(c->n / P) * 4;
	const uint64_t np = sdc_cuda_crc_pieces(cb);
	SDC_CUDA_TRY(cudaMalloc(&c->recv, cb), "cudaMalloc");
	SDC_CUDA_TRY(cudaMalloc(&c->sums, cb), "cudaMalloc");
	SDC_CUDA_TRY(cudaMalloc(&c->fault, cb), "cudaMalloc");
	SDC_CUDA_TRY(cudaMalloc(&c->hdr_send, (size_t)hops * 16), "cudaMalloc");
	SDC_CUDA_TRY(cudaMalloc(&c->dev.stat, (size_t)hops * 16), "cudaMalloc");
	SDC_CUDA_TRY(cudaMalloc(&c->dev.crc, (size_t)hops * 4), "cudaMalloc");
	SDC_CUDA_TRY(cudaMalloc(&c->dev.hdr, (size_t)hops * 16), "cudaMalloc");
	SDC_CUDA_TRY(cudaMalloc(&c->dev.got, (size_t)hops * 4), "cudaMalloc");
	SDC_CUDA_TRY(cudaMallocHost(&c->host.stat, (size_t)hops * 16), "cudaMallocHost");
	SDC_CUDA_TRY(cudaMallocHost(&c->host.crc, (size_t)hops * 4), "cudaMallocHost");
	SDC_CUDA_TRY(cudaMallocHost(&c->host.hdr, (size_t)hops * 16), "cudaMallocHost");
	SDC_CUDA_TRY(cudaMallocHost(&c->host.got, (size_t)hops * 4), "cudaMallocHost");
	for (int k = 0; k < 2; k++) {
		SDC_CUDA_TRY(cudaMalloc(&c->sc.c[k], np * 4), "cudaMalloc");
		SDC_CUDA_TRY(cudaMalloc(&c->sc.l[k], np * 8), "cudaMalloc");
	}
	return 0;
fail:
	return -1; /* (what was made is freed with the communicator) */
}

static int m_nccl_ring(struct sdc_gpu_comm *c, const int *order, uint64_t it, const struct sdc_gpu_ring_fault *faults,
		       int nfaults, struct sdc_gpu_hop *hops, double *seconds, int *timed_out, double timeout, char *err,
		       size_t errlen)
{
	*timed_out = 0;
	if (ring_alloc(c, err, errlen))
		return -1;
	const int P = c->nranks, nh = 2 * (P - 1);
	const int64_t n = c->n, cn = n / P;
	const size_t cb = (size_t)cn * 4;
	const uint32_t salt = sdc_ring_salt(it);
	const double deadline = now() + timeout;
	int p = 0, rc = 0, which = 0;
	while (p < P && order[p] != c->rank)
		p++;
	const int next = order[(p + 1) % P], prev = order[(p - 1 + P) % P];
	k_fill<<<grid_for(n), 256, 0, c->s>>>('A', n, c->rank, P, n, salt, c->in);
	k_stat_init<<<1, 256, 0, c->s>>>(c->dev.stat, nh);
	SDC_CUDA_TRY(cudaGetLastError(), "the ring's fill");
	SDC_CUDA_TRY(cudaEventRecord(c->t0, c->s), "cudaEventRecord");
	for (int phase = 0; phase < 2; phase++)
		for (int s = 0; s < P - 1; s++) {
			const int h = phase * (P - 1) + s;
			const struct sdc_ring_step st = sdc_ring_step_at(phase, s, p, P);
			const int64_t off = (int64_t)st.recv_c * cn;
			const uint32_t step_id = (uint32_t)(phase << 16 | s);
			/* what leaves: the rank's own chunk first, then the sums it made, then (all-gather)
			 * what it received; its CRC32C into the header, taken as it leaves */
			const float *payload = phase == 0 && s == 0 ? c->in + (int64_t)st.send_c * cn
					       : phase == 0	     ? c->sums
								     : c->out + (int64_t)st.send_c * cn;
			uint32_t *hdr = c->hdr_send + 4 * h;
			sdc_cuda_crc_enqueue((const uint8_t *)payload, cb, &c->sc, &which, c->s);
			k_header<<<1, 1, 0, c->s>>>(hdr, c->sc.c[which], step_id);
			for (int k = 0; k < nfaults; k++) {
				const struct sdc_gpu_ring_fault *f = &faults[k];
				if ((f->kind != 'H' && f->kind != 'h') || f->phase != phase || f->step != s)
					continue;
				if (f->kind == 'h') { /* the header's CRC word: the data arrive right */
					k_flip<<<1, 1, 0, c->s>>>(hdr, 0, f->bit & 31);
				} else { /* a copy changes on its way, after its CRC was taken */
					SDC_CUDA_TRY(cudaMemcpyAsync(c->fault, payload, cb, cudaMemcpyDeviceToDevice, c->s), "cudaMemcpy");
					k_flip<<<1, 1, 0, c->s>>>((uint32_t *)c->fault, f->el % cn, f->bit & 31);
					payload = c->fault;
				}
			}
			float *into = phase == 0 ? c->recv : c->out + off;
			api.GroupStart();
			ncclResult_t r = api.Send(hdr, 12, ncclUint8, next, c->comm, c->s);
			if (r == ncclSuccess || r == ncclInProgress)
				r = api.Send(payload, cb, ncclUint8, next, c->comm, c->s);
			if (r == ncclSuccess || r == ncclInProgress)
				r = api.Recv(c->dev.hdr + 4 * h, 12, ncclUint8, prev, c->comm, c->s);
			if (r == ncclSuccess || r == ncclInProgress)
				r = api.Recv(into, cb, ncclUint8, prev, c->comm, c->s);
			const ncclResult_t g = api.GroupEnd();
			if (r == ncclSuccess || r == ncclInProgress)
				r = g;
			if (r != ncclSuccess && r != ncclInProgress) {
				nccl_error(err, errlen, "ncclSend/ncclRecv", c->comm, r);
				return -1;
			}
			if ((rc = settle(c->comm, deadline, "the ring's ncclSend/ncclRecv", err, errlen)))
				goto out;
			/* what arrived: its CRC32C as it is, then every element against its partial sum */
			sdc_cuda_crc_enqueue((const uint8_t *)into, cb, &c->sc, &which, c->s);
			k_copy_word<<<1, 1, 0, c->s>>>(c->dev.crc + h, c->sc.c[which]);
			const int rsum = sdc_ring_rank_sum(order, P, st.first, st.count);
			unsigned long long *stat = c->dev.stat + 2 * h;
			if (phase == 0) {
				/* the last step's sums are this rank's own chunk of the result */
				float *dst = s < P - 2 ? c->sums : c->out + off;
				k_hop_add<<<grid_for(cn), 256, 0, c->s>>>(cn, off, salt, st.count, rsum, c->in + off,
									   (const uint32_t *)c->recv, dst, stat);
				k_hop_pick<<<1, 1, 0, c->s>>>(stat, c->recv, c->dev.got + h);
				for (int k = 0; k < nfaults && s == 0; k++)
					if (faults[k].kind == 'C') /* its sums go wrong before they leave with their CRC */
						k_flip<<<1, 1, 0, c->s>>>((uint32_t *)dst, faults[k].el % cn, faults[k].bit & 31);
			} else {
				k_hop_count<<<grid_for(cn), 256, 0, c->s>>>(cn, off, salt, st.count, rsum, (const uint32_t *)into, stat);
				k_hop_pick<<<1, 1, 0, c->s>>>(stat, into, c->dev.got + h);
				k_hop_repair<<<grid_for(cn), 256, 0, c->s>>>(cn, off, salt, st.count, rsum, into);
			}
			SDC_CUDA_TRY(cudaGetLastError(), "the ring's hop kernels");
		}
	SDC_CUDA_TRY(cudaEventRecord(c->t1, c->s), "cudaEventRecord");
	SDC_CUDA_TRY(cudaMemcpyAsync(c->host.stat, c->dev.stat, (size_t)nh * 16, cudaMemcpyDeviceToHost, c->s), "cudaMemcpy");
	SDC_CUDA_TRY(cudaMemcpyAsync(c->host.crc, c->dev.crc, (size_t)nh * 4, cudaMemcpyDeviceToHost, c->s), "cudaMemcpy");
	SDC_CUDA_TRY(cudaMemcpyAsync(c->host.hdr, c->dev.hdr, (size_t)nh * 16, cudaMemcpyDeviceToHost, c->s), "cudaMemcpy");
	SDC_CUDA_TRY(cudaMemcpyAsync(c->host.got, c->dev.got, (size_t)nh * 4, cudaMemcpyDeviceToHost, c->s), "cudaMemcpy");
	if ((rc = drain_stream(c, deadline, "the checked ring", err, errlen)))
		goto out;
	{
		float ms = 0;
		SDC_CUDA_TRY(cudaEventElapsedTime(&ms, c->t0, c->t1), "cudaEventElapsedTime");
		*seconds = ms / 1e3;
	}
	for (int h = 0; h < nh; h++) {
		const int phase = h >= P - 1, s = h - phase * (P - 1);
		const struct sdc_ring_step st = sdc_ring_step_at(phase, s, p, P);
		struct sdc_gpu_hop *o = &hops[h];
		memcpy(o->hdr, c->host.hdr + 4 * h, 12);
		o->crc = c->host.crc[h];
		o->nbad = (int64_t)c->host.stat[2 * h];
		o->first = c->host.stat[2 * h + 1] == ~0ull ? -1 : (int64_t)c->host.stat[2 * h + 1];
		o->got = c->host.got[h];
		o->expected = 0;
		if (o->first >= 0) {
			int8_t f, g;
			sdc_ring_term((int64_t)st.recv_c * cn + o->first, salt, &f, &g);
			o->expected = sdc_ring_expect(st.count, sdc_ring_rank_sum(order, P, st.first, st.count), f, g);
		}
	}
	return 0;
out:
	*timed_out = rc > 0;
	return -1;
fail:
	return -1;
}

__global__ void k_nothing(int *p)
{
	if (p)
		*p = 1;
}

static int m_ping(double timeout, char *err, size_t errlen)
{
	struct sdc_cuda_work w;
	const size_t bytes[1] = { 4 };
	int rc = -1;
	if (sdc_cuda_work_init(&w, bytes, 1, 0, err, errlen))
		return -1;
	k_nothing<<<1, 1, 0, w.s>>>((int *)w.buf[0]);
	SDC_CUDA_TRY(cudaGetLastError(), "a kernel of one thread");
	rc = sdc_cuda_wait(w.s, w.ev, timeout, "a kernel of one thread", err, errlen) ? -1 : 0;
	if (rc)
		return -1; /* (a GPU that does not finish it: nothing of it is freed) */
fail:
	sdc_cuda_work_free(&w);
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
	m->ping = m_ping;
}
