/*
 * embbag on a GPU (gpu_module.h's eb_ entries): the table in GPU memory, made there from the seed;
 * batches drawn there; every bag looked up and checked there; the table swept at rest there. Every
 * piece of arithmetic is a function of probes/embbag/embbag_hd.h, the source the CPU's probe calls, so
 * the outputs are the CPU kernels' bits (one thread an output element, rows in bag order, the fma
 * the CPU's fmaf: __fmaf_rn, nothing else contracted: -fmad=false) and the check is the CPU's.
 *
 *   k_eb_fill   one thread a row: sdc_eb_row_truth (the CPU's sdc_eb_table_fill)
 *   k_eb_draw   one block a batch: sdc_eb_batch_draw's lengths, rows and weights, word by word
 *   k_eb_bags   one block a bag: threads 0..d-1 its columns (sdc_eb_bag_column: the portable
 *               kernel's loop for one column), one more warp its expectation from the rows' tails
 *               (sdc_eb_expect_lane, joined in sdc_eb_expect_join's tree), then thread 0 checks the
 *               output as it lies in GPU memory (sdc_eb_bag_check: the CPU probe's check)
 *   k_eb_sweep  one thread a row: the row against its regenerated truth, and its sums recomputed
 *
 * No float atomics, nothing whose order depends on the launch shape; the sweep's list of bad rows
 * is gathered with an integer atomic and sorted on the host.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/cuda_util.h"
#include "probes/embbag/gpu_ops.h"
#include "probes/embbag/embbag_hd.h"

#define EB_MAX_FLIPS 64
#define EB_SWEEP_CAP 1024

struct sdc_gpu_eb {
	struct sdc_eb_cfg cfg;
	struct sdc_eb_layout l;
	int max_bags, nbags;
	struct sdc_cuda_sticky k;
	cudaEvent_t t0, t1;
	uint8_t *table;
	uint32_t *idx;
	float *w;
	int32_t *start, *len;
	uint8_t *weighted;
	float *out;
	struct sdc_eb_verdict *v;
	struct sdc_gpu_flip *flips;
	uint64_t *bad;
	int *nbad;
	size_t v_off; /* where the verdicts lie in the staging (k.stage): after the outputs */
};

__global__ void k_eb_fill(const struct sdc_eb_cfg cfg, const struct sdc_eb_layout l, uint8_t *table)
{
	const uint64_t row = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (row < cfg.rows)
		sdc_eb_row_truth(&cfg, &l, row, table + row * l.stride);
}

/* Batch first + blockIdx.x into its slot: rows and weights from idx[slot * max_total] on. */
__global__ void k_eb_draw(const struct sdc_eb_cfg cfg, uint64_t first, uint32_t *idx, float *w, int32_t *start,
			  int32_t *len, uint8_t *weighted)
{
	__shared__ int total;
	const struct sdc_eb_batch_plan p = sdc_eb_batch_plan(&cfg);
	const struct sdc_rng r = sdc_eb_rng(&cfg, SDC_EB_PURPOSE_BATCH);
	const uint64_t index = first + blockIdx.x, base = index * p.blocks, region = blockIdx.x * p.max_total;
	const bool wt = sdc_eb_batch_weighted(index);
	if (threadIdx.x == 0) {
		int off = 0;
		for (int i = 0; i < cfg.batch; i++) {
			const int b = (int)blockIdx.x * cfg.batch + i, n = sdc_eb_len_of(&cfg, sdc_eb_stream_word(&r, base, i));
			start[b] = (int32_t)(region + off);
			len[b] = n;
			weighted[b] = wt;
			off += n;
		}
		total = off;
	}
	__syncthreads();
	for (int q = threadIdx.x; q * 4 < total; q += blockDim.x) {
		const struct sdc_philox_ctr c = sdc_rng_block(&r, base + p.idx_block + (uint64_t)q);
		const struct sdc_philox_ctr cw = sdc_rng_block(&r, base + p.w_block + (uint64_t)q);
		for (int k = 0; k < 4 && q * 4 + k < total; k++) {
			idx[region + q * 4 + k] = sdc_eb_index_of(&cfg, c.v[k]);
			w[region + q * 4 + k] = wt ? sdc_eb_weight_of(&cfg, cw.v[k]) : 1.0f;
		}
	}
}

/* The expectation's warp starts at the first warp boundary at or past d (a warp of its own, so
 * __syncwarp waits for its 32 lanes only). */
static __host__ __device__ int expect_base(int d)
{
	return (d + 31) / 32 * 32;
}

/* One block a bag: blockDim.x = d (+ a warp from expect_base(d) with sums). */
__global__ void k_eb_bags(const struct sdc_eb_cfg cfg, const struct sdc_eb_layout l, const uint8_t *table,
			  const uint32_t *idx, const float *w, const int32_t *start, const int32_t *len,
			  const uint8_t *weighted, enum sdc_eb_sums sums, const struct sdc_gpu_flip *flips, int nflips,
			  float *out, struct sdc_eb_verdict *verdicts)
{
	__shared__ struct sdc_eb_expect es[32];
	__shared__ double sq[16];
	const int bag = blockIdx.x, d = l.d, t = threadIdx.x;
	const uint32_t *bi = idx + start[bag];
	/* sum pooling passes no weights, as the CPU's sum batches do (the same bits as w = 1) */
	const float *bw = weighted[bag] ? w + start[bag] : NULL;
	float *o = out + (size_t)bag * d;
	if (t < d) {
		o[t] = sdc_eb_bag_column(&l, table, bi, bw, len[bag], t, sums == SDC_EB_SUMS_STATS && t < 16 ? &sq[t] : NULL);
	} else if (sums != SDC_EB_NO_SUMS && t >= expect_base(d)) {
		const int lane = t - expect_base(d);
		sdc_eb_expect_lane(&l, table, bi, bw, len[bag], weighted[bag], sums, lane, 32, &es[lane]);
		__syncwarp();
		/* sdc_eb_expect_join's tree, a level at a time across the warp */
		for (int step = 1; step < 32; step *= 2) {
			if (lane % (2 * step) == 0)
				sdc_eb_expect_add(&es[lane], &es[lane + step]);
			__syncwarp();
		}
	}
	if (sums == SDC_EB_NO_SUMS)
		return;
	__syncthreads();
	if (t)
		return;
	sdc_eb_apply_flips(o, d, bag, flips, nflips);
	sdc_eb_bag_check(&cfg, &l, o, &es[0], sq, sums, &verdicts[bag]);
}

__global__ void k_eb_sweep(const struct sdc_eb_cfg cfg, const struct sdc_eb_layout l, const uint8_t *table,
			   uint64_t row0, uint64_t n, uint64_t *bad, int *nbad)
{
	const uint64_t k = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (k >= n)
		return;
	const uint64_t row = (row0 + k) % cfg.rows;
	if (!sdc_eb_row_sound(&cfg, &l, table + row * l.stride, row)) {
		const int at = atomicAdd(nbad, 1);
		if (at < EB_SWEEP_CAP)
			bad[at] = row;
	}
}

static void m_eb_close(struct sdc_gpu_eb *g)
{
	if (!g)
		return;
	/* Freed in the stream's order, nothing on a hung GPU (sdc_cuda_sticky_close): the process
	 * ends soon, and that frees it. */
	if (!g->k.hung && !sdc_cuda_is_hung(g->k.dev)) {
		if (g->t1)
			cudaEventDestroy(g->t1);
		if (g->t0)
			cudaEventDestroy(g->t0);
	}
	void *const bufs[] = { g->table, g->idx, g->w, g->start, g->len, g->weighted, g->out, g->v, g->flips, g->bad, g->nbad };
	sdc_cuda_sticky_close(&g->k, bufs, (int)(sizeof(bufs) / sizeof(bufs[0])));
	free(g);
}

/* Device memory in the stream's order (freed the same way: m_eb_close). */
static cudaError_t dmalloc(struct sdc_gpu_eb *g, void **p, size_t bytes)
{
	return sdc_cuda_malloc(g->k.dev, p, bytes, g->k.s);
}

static struct sdc_gpu_eb *m_eb_open(const struct sdc_eb_cfg *cfg, int with_sums, int max_bags, double timeout,
				    char *err, size_t errlen)
{
	struct sdc_gpu_eb *g = (struct sdc_gpu_eb *)calloc(1, sizeof(*g));
	if (!g) {
		snprintf(err, errlen, "out of host memory");
		return NULL;
	}
	g->cfg = *cfg;
	g->max_bags = max_bags;
	if (sdc_eb_layout_init(&g->l, cfg->fmt, cfg->d, with_sums) || max_bags < cfg->batch || !cfg->rows) {
		snprintf(err, errlen, "a table of %llu rows of width %d and %d bags cannot be made",
			 (unsigned long long)cfg->rows, cfg->d, max_bags);
		free(g);
		return NULL;
	}
	if (sdc_cuda_sticky_open(&g->k, timeout, err, errlen)) {
		free(g);
		return NULL;
	}
	{
		const int batches = max_bags / cfg->batch;
		const size_t region = (size_t)sdc_eb_batch_plan(cfg).max_total * (size_t)batches;
		const size_t table_bytes = (size_t)cfg->rows * g->l.stride;
		/* the staging: the outputs then the verdicts (eb_lookup); the sweep's rows, a row and the
		 * flips each fit in it too */
		const size_t out_bytes = (size_t)max_bags * cfg->d * sizeof(float);
		g->v_off = (out_bytes + 15) / 16 * 16;
		size_t stage = g->v_off + (size_t)max_bags * sizeof(struct sdc_eb_verdict);
		const size_t other[] = { EB_SWEEP_CAP * sizeof(uint64_t), g->l.stride, EB_MAX_FLIPS * sizeof(struct sdc_gpu_flip) };
		for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
			stage = stage > other[i] ? stage : other[i];
		SDC_CUDA_TRY(sdc_cuda_pinned_get(&g->k.stage, stage), "cudaHostAlloc (staging)");
		SDC_CUDA_TRY(cudaEventCreate(&g->t0), "cudaEventCreate");
		SDC_CUDA_TRY(cudaEventCreate(&g->t1), "cudaEventCreate");
		SDC_CUDA_TRY(dmalloc(g, (void **)&g->table, table_bytes), "cudaMallocAsync (the table)");
		SDC_CUDA_TRY(dmalloc(g, (void **)&g->idx, region * sizeof(uint32_t)), "cudaMallocAsync");
		SDC_CUDA_TRY(dmalloc(g, (void **)&g->w, region * sizeof(float)), "cudaMallocAsync");
		SDC_CUDA_TRY(dmalloc(g, (void **)&g->start, (size_t)max_bags * sizeof(int32_t)), "cudaMallocAsync");
		SDC_CUDA_TRY(dmalloc(g, (void **)&g->len, (size_t)max_bags * sizeof(int32_t)), "cudaMallocAsync");
		SDC_CUDA_TRY(dmalloc(g, (void **)&g->weighted, (size_t)max_bags), "cudaMallocAsync");
		SDC_CUDA_TRY(dmalloc(g, (void **)&g->out, out_bytes), "cudaMallocAsync");
		SDC_CUDA_TRY(dmalloc(g, (void **)&g->v, (size_t)max_bags * sizeof(struct sdc_eb_verdict)), "cudaMallocAsync");
		SDC_CUDA_TRY(dmalloc(g, (void **)&g->flips, EB_MAX_FLIPS * sizeof(struct sdc_gpu_flip)), "cudaMallocAsync");
		SDC_CUDA_TRY(dmalloc(g, (void **)&g->bad, EB_SWEEP_CAP * sizeof(uint64_t)), "cudaMallocAsync");
		SDC_CUDA_TRY(dmalloc(g, (void **)&g->nbad, sizeof(int)), "cudaMallocAsync");
		const uint64_t blocks = (cfg->rows + 255) / 256;
		k_eb_fill<<<(unsigned)blocks, 256, 0, g->k.s>>>(g->cfg, g->l, g->table);
		SDC_CUDA_TRY(cudaGetLastError(), "making the table");
		const int r = sdc_cuda_settle(g->k.s, g->k.ev, timeout, "making the table", err, errlen);
		if (r) {
			g->k.hung = r > 0;
			g->k.failed = 1;
			m_eb_close(g);
			return NULL;
		}
	}
	return g;
fail:
	g->k.failed = 1;
	m_eb_close(g);
	return NULL;
}

static int m_eb_draw(struct sdc_gpu_eb *g, uint64_t first, int n)
{
	if (g->k.failed)
		return -1;
	if (n < 1 || n * g->cfg.batch > g->max_bags) {
		snprintf(g->k.err, sizeof(g->k.err), "%d batches of %d bags: room for %d bags", n, g->cfg.batch, g->max_bags);
		g->k.failed = 1;
		return -1;
	}
	k_eb_draw<<<(unsigned)n, 128, 0, g->k.s>>>(g->cfg, first, g->idx, g->w, g->start, g->len, g->weighted);
	g->nbags = n * g->cfg.batch;
	return sdc_cuda_sticky_launched(&g->k, "drawing the batches");
}

static int launch_bags(struct sdc_gpu_eb *g, int sums, int nflips)
{
	const enum sdc_eb_sums s = g->l.trailer ? (enum sdc_eb_sums)sums : SDC_EB_NO_SUMS;
	const unsigned threads = s != SDC_EB_NO_SUMS ? (unsigned)expect_base(g->l.d) + 32u : (unsigned)g->l.d;
	k_eb_bags<<<(unsigned)g->nbags, threads, 0, g->k.s>>>(g->cfg, g->l, g->table, g->idx, g->w, g->start, g->len,
							    g->weighted, s, g->flips, nflips, g->out, g->v);
	return sdc_cuda_sticky_launched(&g->k, "the lookup kernel");
}

static int m_eb_lookup(struct sdc_gpu_eb *g, int sums, const struct sdc_gpu_flip *flips, int nflips, float *out,
		       struct sdc_eb_verdict *v)
{
	if (g->k.failed)
		return -1;
	if (nflips > EB_MAX_FLIPS)
		nflips = EB_MAX_FLIPS;
	cudaError_t e;
	/* The staging is free at every entry: whatever went through it was settled. The flips go
	 * through it too, and the lookups are settled before the copies back are queued there. */
	if (nflips) {
		memcpy(g->k.stage.p, flips, (size_t)nflips * sizeof(*flips));
		if ((e = sdc_cuda_to_device(g->flips, &g->k.stage, 0, (size_t)nflips * sizeof(*flips), g->k.s)) != cudaSuccess)
			return sdc_cuda_sticky_fail(&g->k, "cudaMemcpyAsync to the GPU", e);
	}
	if (launch_bags(g, sums, nflips) || sdc_cuda_sticky_settle(&g->k, "the lookups"))
		return -1;
	const size_t out_bytes = (size_t)g->nbags * g->l.d * sizeof(float), v_bytes = (size_t)g->nbags * sizeof(*v);
	const bool want_v = v && g->l.trailer;
	if (out && (e = sdc_cuda_from_device(&g->k.stage, 0, g->out, out_bytes, g->k.s)) != cudaSuccess)
		return sdc_cuda_sticky_fail(&g->k, "cudaMemcpyAsync from the GPU", e);
	if (want_v && (e = sdc_cuda_from_device(&g->k.stage, g->v_off, g->v, v_bytes, g->k.s)) != cudaSuccess)
		return sdc_cuda_sticky_fail(&g->k, "cudaMemcpyAsync from the GPU", e);
	if (sdc_cuda_sticky_settle(&g->k, "copying the lookups back"))
		return -1;
	if (out)
		memcpy(out, g->k.stage.p, out_bytes);
	if (want_v)
		memcpy(v, g->k.stage.p + g->v_off, v_bytes);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static int m_eb_sweep(struct sdc_gpu_eb *g, uint64_t row0, uint64_t n, uint64_t *bad, int max, int *nbad)
{
	*nbad = 0;
	if (g->k.failed)
		return -1;
	if (n > g->cfg.rows)
		n = g->cfg.rows;
	if (!n)
		return 0;
	cudaError_t e = cudaMemsetAsync(g->nbad, 0, sizeof(int), g->k.s);
	if (e != cudaSuccess)
		return sdc_cuda_sticky_fail(&g->k, "cudaMemset", e);
	k_eb_sweep<<<(unsigned)((n + 127) / 128), 128, 0, g->k.s>>>(g->cfg, g->l, g->table, row0 % g->cfg.rows, n, g->bad,
								    g->nbad);
	if (sdc_cuda_sticky_launched(&g->k, "the sweep kernel") || sdc_cuda_sticky_settle(&g->k, "the sweep"))
		return -1;
	if ((e = sdc_cuda_from_device(&g->k.stage, 0, g->nbad, sizeof(int), g->k.s)) != cudaSuccess)
		return sdc_cuda_sticky_fail(&g->k, "cudaMemcpyAsync from the GPU", e);
	if (sdc_cuda_sticky_settle(&g->k, "copying the sweep's count back"))
		return -1;
	memcpy(nbad, g->k.stage.p, sizeof(int));
	const int got = *nbad < EB_SWEEP_CAP ? *nbad : EB_SWEEP_CAP, take = got < max ? got : max;
	uint64_t *all = (uint64_t *)malloc((size_t)(got ? got : 1) * sizeof(uint64_t));
	if (!all) {
		snprintf(g->k.err, sizeof(g->k.err), "out of host memory");
		g->k.failed = 1;
		return -1;
	}
	if (got && ((e = sdc_cuda_from_device(&g->k.stage, 0, g->bad, (size_t)got * sizeof(uint64_t), g->k.s)) !=
			    cudaSuccess ||
		    sdc_cuda_sticky_settle(&g->k, "copying the sweep's rows back"))) {
		free(all);
		return e != cudaSuccess ? sdc_cuda_sticky_fail(&g->k, "cudaMemcpyAsync from the GPU", e) : -1;
	}
	memcpy(all, g->k.stage.p, (size_t)got * sizeof(uint64_t));
	qsort(all, (size_t)got, sizeof(uint64_t), cmp_u64);
	memcpy(bad, all, (size_t)take * sizeof(uint64_t));
	free(all);
	return 0;
}

static int m_eb_row(struct sdc_gpu_eb *g, int write, uint64_t row, uint8_t *bytes)
{
	if (g->k.failed || sdc_cuda_sticky_settle(&g->k, write ? "the work before a row is written" : "the work before a row is read"))
		return -1;
	if (row >= g->cfg.rows) {
		snprintf(g->k.err, sizeof(g->k.err), "row %llu of a table of %llu", (unsigned long long)row,
			 (unsigned long long)g->cfg.rows);
		g->k.failed = 1;
		return -1;
	}
	uint8_t *p = g->table + row * g->l.stride;
	if (write)
		memcpy(g->k.stage.p, bytes, g->l.stride);
	const cudaError_t e = write ? sdc_cuda_to_device(p, &g->k.stage, 0, g->l.stride, g->k.s)
				    : sdc_cuda_from_device(&g->k.stage, 0, p, g->l.stride, g->k.s);
	if (e != cudaSuccess)
		return sdc_cuda_sticky_fail(&g->k, write ? "cudaMemcpyAsync to the GPU" : "cudaMemcpyAsync from the GPU", e);
	if (sdc_cuda_sticky_settle(&g->k, write ? "writing a row" : "reading a row"))
		return -1;
	if (!write)
		memcpy(bytes, g->k.stage.p, g->l.stride);
	return 0;
}

static int m_eb_time(struct sdc_gpu_eb *g, int sums, int reps, double *seconds)
{
	if (g->k.failed || sdc_cuda_sticky_settle(&g->k, "the work before the benchmark"))
		return -1;
	cudaError_t e = cudaEventRecord(g->t0, g->k.s);
	if (e != cudaSuccess)
		return sdc_cuda_sticky_fail(&g->k, "cudaEventRecord", e);
	for (int i = 0; i < reps; i++)
		if (launch_bags(g, sums, 0))
			return -1;
	if ((e = cudaEventRecord(g->t1, g->k.s)) != cudaSuccess)
		return sdc_cuda_sticky_fail(&g->k, "cudaEventRecord", e);
	if (sdc_cuda_sticky_settle(&g->k, "the benchmark's lookups"))
		return -1;
	float ms = 0;
	if ((e = cudaEventElapsedTime(&ms, g->t0, g->t1)) != cudaSuccess)
		return sdc_cuda_sticky_fail(&g->k, "cudaEventElapsedTime", e);
	*seconds = ms * 1e-3 / (reps > 0 ? reps : 1);
	return 0;
}

static const char *m_eb_error(struct sdc_gpu_eb *g)
{
	return g->k.err;
}

/* The embbag family's table (module.cu asks for it once). */
const struct sdc_gpu_embbag_ops *sdc_cuda_embbag_family(void)
{
	static struct sdc_gpu_embbag_ops t;
	if (!t.version) {
		t.eb_open = m_eb_open;
		t.eb_close = m_eb_close;
		t.eb_draw = m_eb_draw;
		t.eb_lookup = m_eb_lookup;
		t.eb_sweep = m_eb_sweep;
		t.eb_row = m_eb_row;
		t.eb_time = m_eb_time;
		t.eb_error = m_eb_error;
		t.version = SDC_GPU_EMBBAG_VERSION;
	}
	return &t;
}
