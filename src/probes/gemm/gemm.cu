/*
 * The checked GEMM engine on the GPU (kernels/gpu_module.h): operands drawn on the device from the
 * element definitions the host shares (probes/gemm/gemm_data.h), B's checksum columns encoded on the
 * device (kernels/abft_ref.h), C = A B_ext by cuBLASLt, every row of C checked on the device, and
 * sdcscan's own exact kernel to recompute a tile on every SM. Every wait polls against a deadline;
 * every copy to or from host memory goes through pinned staging on the engine's stream, and memory
 * is freed in that stream's order (cuda_util.h: nothing here can wait on a hung GPU).
 *
 * This file is the engine itself: its state made and freed, cuBLASLt set up and called, the
 * submissions into its slots and their collection, elements read back and flipped, and the family's
 * table. The kernels that draw the operands and check C are gemm_abft.cu's, the SM replay is
 * gemm_replay.cu's; the three share gemm_cuda.h.
 *
 * Layout. cuBLASLt is column-major; the host's matrices are row-major, so C = A B_ext is computed
 * as C^T = B_ext^T A^T: B is kept transposed on the device (Bt, ldc rows of kp elements; rows
 * n_ext.. are zero, so C's padding columns come out zero as on the CPU), A as m rows of kp
 * elements (k rounded up to 16, zero padded), C as m rows of ldc elements. cuBLASLt sees
 * A' = Bt (kp x ldc, op T), B' = A (kp x m, op N), D = C (ldc x m): the "TN" form int8 needs.
 */
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/gemm/gemm_cuda.h"

/* ---- errors ---- */

static void blas_error(char *err, size_t errlen, const char *what, cublasStatus_t s)
{
	snprintf(err, errlen, "%s: %s", what, cublasLtGetStatusString(s));
}

#define BLAS_TRY(call, what)                                                                      \
	do {                                                                                      \
		const cublasStatus_t s_ = (call);                                                 \
		if (s_ != CUBLAS_STATUS_SUCCESS) {                                                \
			blas_error(err, errlen, what, s_);                                        \
			return -1;                                                                \
		}                                                                                 \
	} while (0)

static void g_destroy(struct sdc_gpu_gemm *g)
{
	if (!g)
		return;
	char err[256];
	/*
	 * The frees are queued on the engine's stream (sdc_cuda_free), so none waits for the device;
	 * the wait first (bounded) only tells a hung GPU, whose memory, staging and handle stay as they
	 * are (work queued there may never end): the process ends soon, and that frees them.
	 */
	if (g->hung || sdc_cuda_is_hung(g->dev) || (g->s && sdc_cuda_gemm_wait(g, "the last work", err, sizeof(err)))) {
		free(g);
		return;
	}
	sdc_cuda_pinned_put(g->dev, &g->stage, g->s); /* (before the frees, which make the stream busy) */
	for (int i = 0; i < SDC_GPU_SLOTS; i++)
		sdc_cuda_pinned_put(g->dev, &g->slot[i].res_host, g->s);
	void *const bufs[] = { g->a, g->bt, g->pool, g->thr, g->thr2, g->brow, g->bstats, g->fp, g->tiles, g->smid, g->ws };
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		sdc_cuda_free(g->dev, bufs[i], g->s);
	for (int i = 0; i < SDC_GPU_SLOTS; i++) {
		struct slot *sl = &g->slot[i];
		sdc_cuda_free(g->dev, sl->cm, g->s), sdc_cuda_free(g->dev, sl->res, g->s), sdc_cuda_free(g->dev, sl->bad, g->s);
		if (sl->done)
			cudaEventDestroy(sl->done);
	}
	if (g->la)
		cublasLtMatrixLayoutDestroy(g->la);
	if (g->lb)
		cublasLtMatrixLayoutDestroy(g->lb);
	if (g->lc)
		cublasLtMatrixLayoutDestroy(g->lc);
	if (g->la_plain)
		cublasLtMatrixLayoutDestroy(g->la_plain);
	if (g->lc_plain)
		cublasLtMatrixLayoutDestroy(g->lc_plain);
	if (g->op)
		cublasLtMatmulDescDestroy(g->op);
	/* kept for the next engine on this GPU: cublasLtDestroy may synchronise the device */
	sdc_cuda_spare_give(g->dev, SDC_CUDA_SPARE_LT, g->lt);
	/* (neither waits: CUDA Runtime API, cudaEventDestroy, cudaStreamDestroy) */
	if (g->ev)
		cudaEventDestroy(g->ev);
	if (g->s)
		cudaStreamDestroy(g->s);
	free(g);
}

/* The cuBLASLt types of an engine type: A/B, C, compute, scale. */
static void blas_types(enum sdc_gpu_type t, cudaDataType_t *ab, cudaDataType_t *cd, cublasComputeType_t *comp,
		       cudaDataType_t *scale)
{
	*cd = CUDA_R_32F;
	*comp = CUBLAS_COMPUTE_32F;
	*scale = CUDA_R_32F;
	switch (t) {
	case SDC_GPU_INT8:
		*ab = CUDA_R_8I;
		*cd = CUDA_R_32I;
		*comp = CUBLAS_COMPUTE_32I;
		*scale = CUDA_R_32I;
		break;
	case SDC_GPU_BF16:
	case SDC_GPU_BF16_FAST:
		*ab = CUDA_R_16BF;
		break;
	case SDC_GPU_FP16:
		*ab = CUDA_R_16F;
		break;
	case SDC_GPU_TF32_FAST:
		*ab = CUDA_R_32F;
		*comp = CUBLAS_COMPUTE_32F_FAST_TF32;
		break;
	default:
		*ab = CUDA_R_32F;
		break;
	}
}

/* The best algorithm cuBLASLt's heuristic gives for these layouts, pinned for the run. */
static int pick_algo(struct sdc_gpu_gemm *g, cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lc,
		     cublasLtMatmulAlgo_t *algo, int *id, char *err, size_t errlen)
{
	cublasLtMatmulPreference_t pref;
	BLAS_TRY(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
	const size_t ws = WORKSPACE;
	cublasLtMatmulHeuristicResult_t h;
	int found = 0;
	cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
								 sizeof(ws));
	if (s == CUBLAS_STATUS_SUCCESS)
		s = cublasLtMatmulAlgoGetHeuristic(g->lt, g->op, la, g->lb, lc, lc, pref, 1, &h, &found);
	cublasLtMatmulPreferenceDestroy(pref);
	if (s != CUBLAS_STATUS_SUCCESS || !found || h.state != CUBLAS_STATUS_SUCCESS) {
		blas_error(err, errlen, "cublasLtMatmulAlgoGetHeuristic: no algorithm for these types and sizes",
			   s != CUBLAS_STATUS_SUCCESS ? s : h.state);
		return -1;
	}
	*algo = h.algo;
	size_t written = 0;
	*id = -1;
	cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_ID, id, sizeof(*id), &written);
	return 0;
}

static int g_init(struct sdc_gpu_gemm *g, char *err, size_t errlen)
{
	const struct sdc_gpu_gemm_cfg *c = &g->c;
	const size_t a_bytes = (size_t)c->m * g->kp * g->esz, b_bytes = (size_t)c->ldc * g->kp * g->esz;
	const size_t res_bytes = RES_SUMS + sizeof(uint64_t) * 2 * c->m;
	CUDA_TRY(cudaStreamCreateWithFlags(&g->s, cudaStreamNonBlocking), "cudaStreamCreate");
	CUDA_TRY(cudaEventCreateWithFlags(&g->ev, cudaEventDisableTiming), "cudaEventCreate");
	CUDA_TRY(sdc_cuda_gemm_malloc(g, (void **)&g->a, a_bytes), "cudaMallocAsync A");
	CUDA_TRY(sdc_cuda_gemm_malloc(g, (void **)&g->bt, b_bytes), "cudaMallocAsync B");
	for (int i = 0; i < SDC_GPU_SLOTS; i++) {
		struct slot *sl = &g->slot[i];
		CUDA_TRY(sdc_cuda_gemm_malloc(g, (void **)&sl->cm, (size_t)c->m * c->ldc * 4), "cudaMallocAsync C");
		CUDA_TRY(sdc_cuda_gemm_malloc(g, (void **)&sl->res, res_bytes), "cudaMallocAsync");
		CUDA_TRY(sdc_cuda_gemm_malloc(g, (void **)&sl->bad, sizeof(struct sdc_gpu_bad_row) * c->m), "cudaMallocAsync");
		CUDA_TRY(sdc_cuda_pinned_get(&sl->res_host, res_bytes), "cudaHostAlloc");
		CUDA_TRY(cudaEventCreateWithFlags(&sl->done, cudaEventDisableTiming), "cudaEventCreate");
	}
	CUDA_TRY(sdc_cuda_gemm_malloc(g, (void **)&g->thr, sizeof(double) * c->m), "cudaMallocAsync");
	CUDA_TRY(sdc_cuda_gemm_malloc(g, (void **)&g->thr2, sizeof(double) * c->m), "cudaMallocAsync");
	CUDA_TRY(sdc_cuda_gemm_malloc(g, (void **)&g->brow, sizeof(double) * 2 * c->k), "cudaMallocAsync");
	CUDA_TRY(sdc_cuda_gemm_malloc(g, (void **)&g->bstats, sizeof(double) * 3), "cudaMallocAsync");
	CUDA_TRY(sdc_cuda_gemm_malloc(g, (void **)&g->fp, sizeof(unsigned long long) * 2), "cudaMallocAsync");
	CUDA_TRY(sdc_cuda_gemm_malloc(g, (void **)&g->ws, WORKSPACE), "cudaMallocAsync workspace");
	/* zero padding (k up to kp, B's rows n_ext up to ldc) stays zero: nothing writes there */
	CUDA_TRY(cudaMemsetAsync(g->a, 0, a_bytes, g->s), "cudaMemset");
	CUDA_TRY(cudaMemsetAsync(g->bt, 0, b_bytes, g->s), "cudaMemset");
	/* Staging for reads (in pieces of its size), the failing rows and the SM replay. */
	size_t stage = (size_t)4 << 20;
	const size_t bad_b = sizeof(struct sdc_gpu_bad_row) * c->m;
	const size_t row_b = (size_t)(c->ldc > g->kp ? c->ldc : g->kp) * 8;
	const size_t replay = sizeof(uint32_t) * SDC_GPU_MAX_SMS * SDC_GPU_TILE * SDC_GPU_TILE + sizeof(int) * SDC_GPU_MAX_SMS;
	stage = stage > bad_b ? stage : bad_b;
	stage = stage > row_b ? stage : row_b;
	CUDA_TRY(sdc_cuda_pinned_get(&g->stage, stage > replay ? stage : replay), "cudaHostAlloc");

	if (sdc_cuda_gemm_replay_init(g, err, errlen))
		return -1;

	cudaDataType_t ab, cd, scale;
	cublasComputeType_t comp;
	blas_types(c->type, &ab, &cd, &comp, &scale);
	if (!(g->lt = (cublasLtHandle_t)sdc_cuda_spare_take(g->dev, SDC_CUDA_SPARE_LT)))
		BLAS_TRY(cublasLtCreate(&g->lt), "cublasLtCreate");
	BLAS_TRY(cublasLtMatmulDescCreate(&g->op, comp, scale), "cublasLtMatmulDescCreate");
	const cublasOperation_t opT = CUBLAS_OP_T, opN = CUBLAS_OP_N;
	BLAS_TRY(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof(opT)), "TRANSA");
	BLAS_TRY(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof(opN)), "TRANSB");
	/* checked: all ldc rows of Bt; plain: the data columns only (n rounded up to 16, at most ldc) */
	const int plain = (c->n + 15) / 16 * 16 < c->ldc ? (c->n + 15) / 16 * 16 : c->ldc;
	BLAS_TRY(cublasLtMatrixLayoutCreate(&g->la, ab, g->kp, c->ldc, g->kp), "layout A'");
	BLAS_TRY(cublasLtMatrixLayoutCreate(&g->la_plain, ab, g->kp, plain, g->kp), "layout A' plain");
	BLAS_TRY(cublasLtMatrixLayoutCreate(&g->lb, ab, g->kp, c->m, g->kp), "layout B'");
	BLAS_TRY(cublasLtMatrixLayoutCreate(&g->lc, cd, c->ldc, c->m, c->ldc), "layout D");
	BLAS_TRY(cublasLtMatrixLayoutCreate(&g->lc_plain, cd, plain, c->m, c->ldc), "layout D plain");
	int id = -1, id_plain = -1;
	if (pick_algo(g, g->la, g->lc, &g->algo, &id, err, errlen) ||
	    pick_algo(g, g->la_plain, g->lc_plain, &g->algo_plain, &id_plain, err, errlen))
		return -1;
	snprintf(g->kernel, sizeof(g->kernel), "cuBLASLt algo %d (plain %d), %dx%dx%d on %d SMs", id, id_plain, c->m,
		 c->ldc, g->kp, g->sms);
	return sdc_cuda_gemm_wait(g, "allocating", err, errlen);
}

static struct sdc_gpu_gemm *g_create(const struct sdc_gpu_gemm_cfg *cfg, char *err, size_t errlen)
{
	if (cfg->nd1 + cfg->nd2 > DIGITS_MAX || cfg->n_ext > cfg->ldc || cfg->m < 1 || cfg->n < 1 || cfg->k < 1) {
		snprintf(err, errlen, "unsupported engine configuration");
		return NULL;
	}
	struct sdc_gpu_gemm *g = (struct sdc_gpu_gemm *)calloc(1, sizeof(*g));
	if (!g) {
		snprintf(err, errlen, "out of host memory");
		return NULL;
	}
	g->c = *cfg;
	g->dev = sdc_cuda_device();
	if (sdc_cuda_refuse_hung(g->dev, err, errlen)) {
		free(g);
		return NULL;
	}
	g->kp = (cfg->k + 15) / 16 * 16;
	g->esz = sdc_gpu_type_esz(cfg->type);
	if (g_init(g, err, errlen)) {
		g_destroy(g);
		return NULL;
	}
	return g;
}

static int g_submit(struct sdc_gpu_gemm *g, int slot, int what, char *err, size_t errlen)
{
	const struct sdc_gpu_gemm_cfg c = g->c;
	if (sdc_gpu_gemm_submission_check(slot, what, err, errlen))
		return -1;
	if (g->hung) {
		snprintf(err, errlen, "the GPU hung earlier in this run");
		return -1;
	}
	struct slot *sl = &g->slot[slot];
	sl->what = 0;
	if (what & (SDC_GPU_MULTIPLY | SDC_GPU_PLAIN)) {
		const bool checked = what & SDC_GPU_MULTIPLY;
		const int32_t one_i = 1, zero_i = 0;
		const float one_f = 1, zero_f = 0;
		const bool i8 = c.type == SDC_GPU_INT8;
		const void *alpha = i8 ? (const void *)&one_i : (const void *)&one_f;
		const void *beta = i8 ? (const void *)&zero_i : (const void *)&zero_f;
		BLAS_TRY(cublasLtMatmul(g->lt, g->op, alpha, g->bt, checked ? g->la : g->la_plain, g->a, g->lb, beta, sl->cm,
					checked ? g->lc : g->lc_plain, sl->cm, checked ? g->lc : g->lc_plain,
					checked ? &g->algo : &g->algo_plain, g->ws, WORKSPACE, g->s),
			 "cublasLtMatmul");
	}
	size_t copy = 0;
	if (what & SDC_GPU_CHECK) {
		if (sdc_cuda_gemm_check(g, sl, err, errlen))
			return -1;
		copy = RES_SUMS + sizeof(uint64_t) * 2 * c.m;
	}
	if (what & SDC_GPU_FINGERPRINT) {
		if (sdc_cuda_gemm_fingerprints(g, (unsigned long long *)(sl->res + RES_FP), err, errlen))
			return -1;
		copy = copy > RES_SUMS ? copy : RES_SUMS;
	}
	if (copy)
		CUDA_TRY(sdc_cuda_from_device(&sl->res_host, 0, sl->res, copy, g->s), "cudaMemcpyAsync");
	CUDA_TRY(cudaEventRecord(sl->done, g->s), "cudaEventRecord");
	sl->what = what;
	return 0;
}

/* Rows in increasing order (the device appends them as blocks finish). */
static int by_row(const void *x, const void *y)
{
	const int a = ((const struct sdc_gpu_bad_row *)x)->row, b = ((const struct sdc_gpu_bad_row *)y)->row;
	return (a > b) - (a < b);
}

static int g_collect(struct sdc_gpu_gemm *g, int slot, uint64_t *sums, struct sdc_gpu_check *out, char *err,
		     size_t errlen)
{
	const struct sdc_gpu_gemm_cfg *c = &g->c;
	out->nbad = 0;
	out->a_intact = out->b_intact = 1;
	out->check_bytes = 0; /* (not counted on the device) */
	if (slot < 0 || slot >= SDC_GPU_SLOTS || !g->slot[slot].what) {
		snprintf(err, errlen, "gemm_collect: nothing was submitted to slot %d", slot);
		return -1;
	}
	if (g->hung) {
		snprintf(err, errlen, "the GPU hung earlier in this run");
		return -1;
	}
	struct slot *sl = &g->slot[slot];
	const int r = sdc_cuda_poll(sl->done, c->timeout,
				    sl->what & SDC_GPU_CHECK ? "the GEMM and its row checks" : "the GEMM", err, errlen);
	g->hung = r > 0;
	if (r)
		return -1;
	if (sl->what & SDC_GPU_FINGERPRINT) {
		unsigned long long f[2];
		memcpy(f, sl->res_host.p + RES_FP, sizeof(f));
		out->a_intact = f[0] == g->fp_load[0];
		out->b_intact = f[1] == g->fp_load[1];
	}
	if (!(sl->what & SDC_GPU_CHECK))
		return 0;
	memcpy(&out->nbad, sl->res_host.p + RES_NBAD, sizeof(int));
	if (sums)
		memcpy(sums, sl->res_host.p + RES_SUMS, sizeof(uint64_t) * 2 * c->m);
	if (out->nbad < 0 || out->nbad > c->m) {
		snprintf(err, errlen, "the row check reported %d failing rows of %d: its own memory is corrupt", out->nbad, c->m);
		return -1;
	}
	if (!out->nbad)
		return 0;
	/* Behind whatever was submitted since: a failure path, it may wait. */
	const size_t bytes = sizeof(struct sdc_gpu_bad_row) * out->nbad;
	CUDA_TRY(sdc_cuda_from_device(&g->stage, 0, sl->bad, bytes, g->s), "cudaMemcpyAsync");
	if (sdc_cuda_gemm_wait(g, "reading the failing rows", err, errlen))
		return -1;
	memcpy(out->bad, g->stage.p, bytes);
	qsort(out->bad, (size_t)out->nbad, sizeof(*out->bad), by_row);
	return 0;
}

static int g_sync(struct sdc_gpu_gemm *g, char *err, size_t errlen)
{
	return sdc_cuda_gemm_wait(g, "the GEMMs", err, errlen);
}

static int g_read(struct sdc_gpu_gemm *g, int slot, char matrix, int row, int col, int count, void *out, char *err,
		  size_t errlen)
{
	const struct sdc_gpu_gemm_cfg *c = &g->c;
	const int esz = matrix == 'C' ? 4 : g->esz;
	uint8_t *dst = (uint8_t *)out;
	if (matrix == 'C' && (slot < 0 || slot >= SDC_GPU_SLOTS)) {
		snprintf(err, errlen, "no slot %d", slot);
		return -1;
	}
	/* in pieces as large as the staging buffer */
	const int per = (int)(g->stage.bytes / esz < (size_t)count ? g->stage.bytes / esz : (size_t)count);
	for (int done = 0; done < count;) {
		const int n = count - done < per ? count - done : per;
		if (matrix == 'A') {
			CUDA_TRY(sdc_cuda_from_device(&g->stage, 0, g->a + ((size_t)row * g->kp + col + done) * esz, (size_t)n * esz,
						      g->s), "cudaMemcpyAsync A");
		} else if (matrix == 'B') {
			/* row p of B_ext is a column of Bt: one element every kp */
			CUDA_TRY(sdc_cuda_from_device_2d(&g->stage, 0, esz, g->bt + ((size_t)(col + done) * g->kp + row) * esz,
							 (size_t)g->kp * esz, esz, n, g->s), "cudaMemcpy2DAsync B");
		} else if (matrix == 'C') {
			CUDA_TRY(sdc_cuda_from_device(&g->stage, 0, (uint8_t *)g->slot[slot].cm + ((size_t)row * c->ldc + col + done) * 4,
						      (size_t)n * 4, g->s), "cudaMemcpyAsync C");
		} else {
			snprintf(err, errlen, "no matrix '%c'", matrix);
			return -1;
		}
		if (sdc_cuda_gemm_wait(g, "reading back", err, errlen))
			return -1;
		memcpy(dst + (size_t)done * esz, g->stage.p, (size_t)n * esz);
		done += n;
	}
	return 0;
}

static int g_flip(struct sdc_gpu_gemm *g, int slot, char matrix, int row, int col, int bit, uint64_t *before,
		  uint64_t *after, char *err, size_t errlen)
{
	const int esz = matrix == 'C' ? 4 : g->esz;
	uint8_t *p;
	if (matrix == 'A')
		p = g->a + ((size_t)row * g->kp + col) * esz;
	else if (matrix == 'B')
		p = g->bt + ((size_t)col * g->kp + row) * esz;
	else if (matrix == 'C' && slot >= 0 && slot < SDC_GPU_SLOTS)
		p = (uint8_t *)g->slot[slot].cm + ((size_t)row * g->c.ldc + col) * 4;
	else {
		snprintf(err, errlen, "no matrix '%c' (slot %d)", matrix, slot);
		return -1;
	}
	CUDA_TRY(sdc_cuda_from_device(&g->stage, 0, p, esz, g->s), "cudaMemcpyAsync");
	if (sdc_cuda_gemm_wait(g, "reading an element", err, errlen))
		return -1;
	uint64_t v = 0;
	memcpy(&v, g->stage.p, esz);
	*before = v;
	*after = v ^ ((uint64_t)1 << bit);
	memcpy(g->stage.p, after, esz);
	CUDA_TRY(sdc_cuda_to_device(p, &g->stage, 0, esz, g->s), "cudaMemcpyAsync");
	return sdc_cuda_gemm_wait(g, "writing an element", err, errlen);
}

static const char *g_kernel(struct sdc_gpu_gemm *g)
{
	return g->kernel;
}

/* The gemm family's table (module.cu asks for it once). */
const struct sdc_gpu_gemm_ops *sdc_cuda_gemm_family(void)
{
	static char blas_text[48];
	static struct sdc_gpu_gemm_ops t;
	if (!t.version) {
		const size_t v = cublasLtGetVersion();
		snprintf(blas_text, sizeof(blas_text), "cuBLASLt %zu.%zu.%zu", v / 10000, v / 100 % 100, v % 100);
		t.blas = blas_text;
		t.gemm_create = g_create;
		t.gemm_destroy = g_destroy;
		t.gemm_load = sdc_cuda_gemm_load;
		t.gemm_submit = g_submit;
		t.gemm_collect = g_collect;
		t.gemm_sync = g_sync;
		t.gemm_read = g_read;
		t.gemm_flip = g_flip;
		t.gemm_sm_replay = sdc_cuda_gemm_sm_replay;
		t.gemm_kernel = g_kernel;
		t.version = SDC_GPU_GEMM_VERSION;
	}
	return &t;
}
