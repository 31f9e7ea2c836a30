/*
 * NCCL's communicators in the GPU module's base (kernels/gpu_module.h: nccl_version,
 * nccl_unique_id, nccl_init, nccl_destroy; nccl_comm.h), and the GPU's ping. The families run their
 * work on them: allreduce's collectives, checked exactly, and its checked ring (nccl_check.cu),
 * minitrain's data-parallel mean (mt_nccl.cu).
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
 * initialises (device/gpu_loader.c: NCCL reads them there, getenv in its tuning model, per communicator), so
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

#include "kernels/cuda/nccl_comm.h"

struct sdc_nccl_api sdc_nccl;
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
		{ (void **)&sdc_nccl.GetVersion, "ncclGetVersion" },
		{ (void **)&sdc_nccl.GetUniqueId, "ncclGetUniqueId" },
		{ (void **)&sdc_nccl.CommInitRankConfig, "ncclCommInitRankConfig" },
		{ (void **)&sdc_nccl.CommGetAsyncError, "ncclCommGetAsyncError" },
		{ (void **)&sdc_nccl.CommFinalize, "ncclCommFinalize" },
		{ (void **)&sdc_nccl.CommDestroy, "ncclCommDestroy" },
		{ (void **)&sdc_nccl.CommAbort, "ncclCommAbort" },
		{ (void **)&sdc_nccl.AllReduce, "ncclAllReduce" },
		{ (void **)&sdc_nccl.ReduceScatter, "ncclReduceScatter" },
		{ (void **)&sdc_nccl.AllGather, "ncclAllGather" },
		{ (void **)&sdc_nccl.Send, "ncclSend" },
		{ (void **)&sdc_nccl.Recv, "ncclRecv" },
		{ (void **)&sdc_nccl.GroupStart, "ncclGroupStart" },
		{ (void **)&sdc_nccl.GroupEnd, "ncclGroupEnd" },
		{ (void **)&sdc_nccl.GetErrorString, "ncclGetErrorString" },
		{ (void **)&sdc_nccl.GetLastError, "ncclGetLastError" },
	};
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
		if (!(*syms[i].fn = dlsym(h, syms[i].name))) {
			snprintf(api_why, sizeof(api_why), "libnccl.so.2 has no %s (NCCL older than 2.14?)", syms[i].name);
			sdc_nccl.GetVersion = NULL;
			return;
		}
	int v = 0;
	sdc_nccl.GetVersion(&v);
	/* NCCL_VERSION(): X*1000 + Y*100 + Z up to 2.8, X*10000 + Y*100 + Z after */
	if (v >= 10000)
		snprintf(api_version, sizeof(api_version), "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
	else
		snprintf(api_version, sizeof(api_version), "%d.%d.%d", v / 1000, v / 100 % 10, v % 100);
}

bool sdc_nccl_have(char *err, size_t errlen)
{
	pthread_once(&api_once, api_load);
	if (sdc_nccl.GetVersion)
		return true;
	snprintf(err, errlen, "%s", api_why);
	return false;
}

void sdc_nccl_pause(void)
{
	const struct timespec ts = { 0, 100 * 1000 }; /* 0.1 ms: a collective of 1 MiB takes ~10 */
	nanosleep(&ts, NULL);
}


void sdc_nccl_error(char *err, size_t errlen, const char *what, ncclComm_t comm, ncclResult_t r)
{
	const char *last = comm ? sdc_nccl.GetLastError(comm) : "";
	if (err)
		snprintf(err, errlen, "%s: %s%s%s", what, sdc_nccl.GetErrorString(r), last && *last ? ": " : "", last ? last : "");
}

/* Until the communicator's last call is through on the host (no longer ncclInProgress). 0; -1 an
 * error; 1 the deadline passed. */
int sdc_nccl_settle(ncclComm_t comm, double deadline, const char *what, char *err, size_t errlen)
{
	for (;;) {
		ncclResult_t st = ncclSuccess;
		const ncclResult_t r = sdc_nccl.CommGetAsyncError(comm, &st);
		if (r != ncclSuccess) {
			sdc_nccl_error(err, errlen, what, comm, r);
			return -1;
		}
		if (st == ncclSuccess)
			return 0;
		if (st != ncclInProgress) {
			sdc_nccl_error(err, errlen, what, comm, st);
			return -1;
		}
		if (sdc_cuda_clock() > deadline) {
			if (err)
				snprintf(err, errlen, "%s did not finish in time (ncclInProgress at the deadline)", what);
			return 1;
		}
		sdc_nccl_pause();
	}
}

/* settle for every member. */
int sdc_nccl_settle_all(struct sdc_gpu_comm *c, double deadline, const char *what, char *err, size_t errlen)
{
	for (int i = 0; i < c->nmem; i++) {
		const int rc = sdc_nccl_settle(c->m[i].comm, deadline, what, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

/* Until every member's stream has run everything queued, NCCL's async error looked at on every
 * turn. */
int sdc_nccl_drain(struct sdc_gpu_comm *c, double deadline, const char *what, char *err, size_t errlen)
{
	for (int i = 0; i < c->nmem; i++) {
		struct sdc_nccl_member *m = &c->m[i];
		for (;;) {
			const cudaError_t e = cudaStreamQuery(m->s);
			if (e == cudaSuccess)
				break;
			if (e != cudaErrorNotReady) {
				sdc_cuda_error(err, errlen, what, e);
				return -1;
			}
			ncclResult_t st = ncclSuccess;
			if (sdc_nccl.CommGetAsyncError(m->comm, &st) == ncclSuccess && st != ncclSuccess && st != ncclInProgress) {
				sdc_nccl_error(err, errlen, what, m->comm, st);
				return -1;
			}
			if (sdc_cuda_clock() > deadline) {
				snprintf(err, errlen, "%s did not finish in time (a peer that never came, or a stuck GPU or link)",
					 what);
				return 1;
			}
			sdc_nccl_pause();
		}
	}
	return 0;
}

/* Makes member i's GPU current (every call below enqueues on one member at a time). */
int sdc_nccl_use(struct sdc_nccl_member *m, char *err, size_t errlen)
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
	return sdc_nccl_have(why, len) ? api_version : NULL;
}

static int m_nccl_unique_id(uint8_t *id, char *err, size_t errlen)
{
	if (!sdc_nccl_have(err, errlen))
		return -1;
	ncclUniqueId u;
	static_assert(sizeof(u) == SDC_GPU_NCCL_ID_BYTES, "ncclUniqueId is 128 bytes");
	const ncclResult_t r = sdc_nccl.GetUniqueId(&u);
	if (r != ncclSuccess) {
		sdc_nccl_error(err, errlen, "ncclGetUniqueId", NULL, r);
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
	const double deadline = sdc_cuda_clock() + ABORT_S;
	while (!__atomic_load_n(&k->done, __ATOMIC_ACQUIRE) && sdc_cuda_clock() < deadline)
		sdc_nccl_pause();
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
static void member_free(struct sdc_nccl_member *m)
{
	const int d = m->ordinal;
	void *const bufs[] = { m->in, m->out, m->stat, m->recv, m->sums, m->fault, m->hdr_send,
			       m->dev.stat, m->dev.crc, m->dev.hdr, m->dev.got, m->crc_c[0], m->crc_c[1],
			       m->crc_l[0], m->crc_l[1], m->dp_local, m->dp_all, m->dp_out };
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
			const ncclResult_t r = sdc_nccl.CommFinalize(c->m[i].comm);
			finalized = r == ncclSuccess || r == ncclInProgress;
		}
	finalized = finalized && !sdc_nccl_settle_all(c, sdc_cuda_clock() + 10, "ncclCommFinalize", NULL, 0);
	for (int i = 0; i < c->nmem; i++) {
		struct sdc_nccl_member *m = &c->m[i];
		if (m->comm && comm_call_bounded(finalized ? sdc_nccl.CommDestroy : sdc_nccl.CommAbort, m->comm, m->ordinal))
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
static int member_alloc(struct sdc_nccl_member *m, int64_t n, char *err, size_t errlen)
{
	const size_t bytes = (size_t)n * 4;
	if (sdc_nccl_use(m, err, errlen) || sdc_cuda_refuse_hung(m->ordinal, err, errlen))
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
	if (!sdc_nccl_have(err, errlen))
		return NULL;
	if (nmem < 1 || nmem > 64 || nranks < nmem) {
		snprintf(err, errlen, "%d GPUs of %d ranks in this process: 1 to 64 expected", nmem, nranks);
		return NULL;
	}
	struct sdc_gpu_comm *c = (struct sdc_gpu_comm *)calloc(1, sizeof(*c));
	if (c)
		c->m = (struct sdc_nccl_member *)calloc((size_t)nmem, sizeof(*c->m));
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
	const double deadline = sdc_cuda_clock() + timeout;
	/* several GPUs of one thread initialise in one group (as ncclCommInitAll does) */
	ncclResult_t r = sdc_nccl.GroupStart();
	for (int i = 0; i < nmem && (r == ncclSuccess || r == ncclInProgress); i++) {
		ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
		cfg.blocking = 0;
		cudaSetDevice(c->m[i].ordinal);
		r = sdc_nccl.CommInitRankConfig(&c->m[i].comm, nranks, u, c->m[i].rank, &cfg);
	}
	const ncclResult_t g = sdc_nccl.GroupEnd();
	if (r == ncclSuccess || r == ncclInProgress)
		r = g;
	int rc = r == ncclSuccess || r == ncclInProgress ? 0 : -1;
	if (rc)
		sdc_nccl_error(err, errlen, "ncclCommInitRankConfig", NULL, r);
	for (int i = 0; i < nmem && !rc; i++)
		rc = c->m[i].comm ? sdc_nccl_settle(c->m[i].comm, deadline, "ncclCommInitRankConfig", err, errlen) : -1;
	cudaSetDevice(dev);
	if (rc) {
		m_nccl_destroy(c, 1);
		return NULL;
	}
	return c;
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

/* The main table's NCCL entries and the ping (module.cu). */
void sdc_cuda_nccl_entries(struct sdc_gpu_module *m)
{
	m->nccl_version = m_nccl_version;
	m->nccl_unique_id = m_nccl_unique_id;
	m->nccl_init = m_nccl_init;
	m->nccl_destroy = m_nccl_destroy;
	m->ping = m_ping;
}
