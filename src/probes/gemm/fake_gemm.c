/*
 * The fake GPU module's gemm family (probes/gemm/gpu_ops.h; the base: kernels/fake/fake_module.c):
 * it does what the CUDA engine does (probes/gemm/gemm.cu) from the same element definitions and the
 * same check arithmetic (gemm_data.h, kernels/abft_ref.h): operands drawn per element, B's checksum
 * columns encoded per row, every row of C checked, fingerprints of the operands, the SM replay of a
 * tile. The product is a plain loop (exact in int64; fast in double, rounded to fp32).
 *
 * Environment, to exercise the failure paths:
 *   FAKE_GPU_BAD_SM=S     SM S computes C[0][0] wrong (bit 3) in every product and in the replay
 *   FAKE_GPU_SM_MISSED=S  the SM replay's block meant for SM S runs on SM S+1 beside that SM's own
 *                         (nothing pins a block to an SM): SM S is never reached
 *   FAKE_GPU_FAIL=STEP    create, load, multiply or check fails as a sticky CUDA error would
 *   FAKE_GPU_HANG=1       the first collect waits out the deadline and reports a hung GPU, as the
 *                         CUDA module does; every later wait is refused
 *   FAKE_GPU_GEN_BUG=1    the operand generator differs from the host's twin at A[1][2] and at
 *                         B[0][1] (a port of the generator that went wrong)
 *   FAKE_GPU_ACC_BITS=B   the bf16/fp16 accumulator keeps B significant bits (a tensor core whose
 *                         accumulator is narrower than the exactness bound assumes)
 *   FAKE_GPU_ROT=N        after a burn engine's Nth checked product, A[5][7]'s bit 3 flips at rest,
 *                         unannounced (a page that goes bad under a running burn; the injector's
 *                         faults are announced to the burn, which checks their iteration at once)
 *   FAKE_GPU_ROT_B=N      the same for B[5][7] (which fails every row's check from the next GEMM)
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/abft_ref.h"
#include "kernels/half.h"
#include "probes/gemm/gemm_data.h"
#include "kernels/fake/fake.h"
#include "probes/gemm/gpu_ops.h"
#include "probes/gemm/gemm_elements.h"

struct sdc_gpu_gemm {
	struct sdc_gpu_gemm_cfg c;
	int kp, esz;
	uint64_t set;
	const double *pool;
	uint8_t *a;   /* m x kp element bits */
	uint8_t *bt;  /* ldc x kp: B_ext transposed, as the device keeps it */
	struct fake_slot {
		uint32_t *cm; /* m x ldc */
		uint64_t *sums;
		struct sdc_gpu_bad_row *bad;
		int nbad, what;
		uint64_t check_bytes; /* what the check's loads read: the benchmark sets it beside its model */
		uint64_t fp[2];
		bool failed; /* FAKE_GPU_FAIL=check */
	} slot[SDC_GPU_SLOTS];
	double *thr, *thr2;
	uint64_t fp_a, fp_b;
	bool hung;
	long products; /* checked products submitted (FAKE_GPU_ROT) */
	char kernel[96];
};

static bool fail(const char *step, char *err, size_t errlen)
{
	const char *f = getenv("FAKE_GPU_FAIL");
	if (!f || strcmp(f, step))
		return false;
	snprintf(err, errlen, "cudaErrorIllegalAddress: an illegal memory access was encountered (fake, at %s)", step);
	return true;
}

/* ---- elements ---- */

static void put(uint8_t *buf, int esz, size_t idx, uint64_t bits)
{
	memcpy(buf + idx * (size_t)esz, &bits, (size_t)esz);
}

static uint64_t get(const uint8_t *buf, int esz, size_t idx)
{
	uint64_t v = 0;
	memcpy(&v, buf + idx * (size_t)esz, (size_t)esz);
	return v;
}

/* Position-weighted sum of the words (mod 2^64): the device's fingerprint of an operand. */
static uint64_t fingerprint(const uint8_t *buf, size_t bytes)
{
	uint64_t h = 0;
	for (size_t i = 0; i < bytes; i++)
		h += (uint64_t)buf[i] * (2 * i + 1);
	return h;
}

/* ---- the engine ---- */

static void fake_destroy(struct sdc_gpu_gemm *g)
{
	if (!g)
		return;
	free(g->a), free(g->bt), free(g->thr), free(g->thr2);
	for (int i = 0; i < SDC_GPU_SLOTS; i++)
		free(g->slot[i].cm), free(g->slot[i].sums), free(g->slot[i].bad);
	free(g);
}

static struct sdc_gpu_gemm *fake_create(const struct sdc_gpu_gemm_cfg *cfg, char *err, size_t errlen)
{
	if (fake_bound < 0) {
		snprintf(err, errlen, "no GPU fake_bound to this thread");
		return NULL;
	}
	if (fail("create", err, errlen))
		return NULL;
	struct sdc_gpu_gemm *g = calloc(1, sizeof(*g));
	if (!g)
		goto out_nomem;
	g->c = *cfg;
	g->kp = (cfg->k + 15) / 16 * 16;
	g->esz = sdc_gpu_type_esz(cfg->type);
	g->a = calloc((size_t)cfg->m * g->kp, (size_t)g->esz);
	g->bt = calloc((size_t)cfg->ldc * g->kp, (size_t)g->esz);
	g->thr = calloc((size_t)cfg->m, sizeof(double));
	g->thr2 = calloc((size_t)cfg->m, sizeof(double));
	if (!g->a || !g->bt || !g->thr || !g->thr2)
		goto out_nomem;
	for (int i = 0; i < SDC_GPU_SLOTS; i++) {
		struct fake_slot *sl = &g->slot[i];
		sl->cm = calloc((size_t)cfg->m * cfg->ldc, 4);
		sl->sums = calloc((size_t)cfg->m * 2, sizeof(uint64_t));
		sl->bad = calloc((size_t)cfg->m, sizeof(*sl->bad));
		if (!sl->cm || !sl->sums || !sl->bad)
			goto out_nomem;
	}
	snprintf(g->kernel, sizeof(g->kernel), "fake GPU (CPU emulation), type %d", (int)cfg->type);
	return g;
out_nomem:
	fake_destroy(g);
	snprintf(err, errlen, "out of memory (fake)");
	return NULL;
}

static int fake_load(struct sdc_gpu_gemm *g, uint64_t set, const double *pool, char *err, size_t errlen)
{
	if (fail("load", err, errlen))
		return -1;
	const struct sdc_gpu_gemm_cfg *c = &g->c;
	const enum sdc_gpu_type t = c->type;
	const int n = c->n, ne = c->n_ext;
	g->set = set;
	g->pool = pool;
	if (sdc_gpu_type_exact(t)) {
		const struct sdc_rng ra = sdc_gd_rng(c->seed, c->cls, SDC_GD_A), rb = sdc_gd_rng(c->seed, c->cls, SDC_GD_B);
		for (int i = 0; i < c->m; i++)
			for (int p = 0; p < c->k; p++)
				put(g->a, g->esz, (size_t)i * g->kp + p,
				    c->extreme ? sdc_gemm_bits_of(t, (double)sdc_gd_extreme_a(t == SDC_GPU_INT8, c->amax))
				    : t == SDC_GPU_INT8 ? (uint64_t)sdc_gd_int8_a(&ra, set, c->k, i, p)
							: sdc_gemm_bits_of(t, (double)sdc_gd_small_a(&ra, set, c->k, i, p, c->amax)));
		int64_t row[64];
		for (int p = 0; p < c->k; p++) {
			int64_t s1 = 0, s2 = 0;
			for (int j = 0; j < n; j++) {
				const int64_t v = c->extreme ? sdc_gd_extreme_b(t == SDC_GPU_INT8, c->bmax)
						  : t == SDC_GPU_INT8 ? sdc_gd_int8_b(&rb, set, n, p, j)
								      : sdc_gd_small_b(&rb, set, n, p, j, c->bmax);
				put(g->bt, g->esz, (size_t)j * g->kp + p, sdc_gemm_bits_of(t, (double)v));
				s1 += v;
				s2 += (int64_t)(j + 1) * v;
			}
			sdc_ref_digits(s1, c->base_log2, c->nd1, row);
			sdc_ref_digits(s2, c->base_log2, c->nd2, row + c->nd1);
			for (int d = 0; d < c->nd1 + c->nd2; d++)
				put(g->bt, g->esz, (size_t)(n + d) * g->kp + p, sdc_gemm_bits_of(t, (double)row[d]));
		}
	} else {
		const struct sdc_rng wr = sdc_gd_rng(c->seed, c->cls, SDC_GD_WINDOW);
		const struct sdc_gd_window w = sdc_gd_window_of(&wr, set, c->pool_size);
		for (int i = 0; i < c->m; i++)
			for (int p = 0; p < c->k; p++)
				put(g->a, g->esz, (size_t)i * g->kp + p,
				    sdc_gemm_bits_of(t, sdc_gd_window_at(pool, c->pool_size, w.a0, w.as, (uint64_t)i * c->k + p)));
		struct sdc_ref_bstats bs = { 0 };
		for (int p = 0; p < c->k; p++) {
			double r1 = 0, r2 = 0, sum = 0, mn = INFINITY, mx = -INFINITY;
			for (int j = 0; j < n; j++) {
				const uint64_t b = sdc_gemm_bits_of(t, sdc_gd_window_at(pool, c->pool_size, w.b0, w.bs, (uint64_t)p * n + j));
				put(g->bt, g->esz, (size_t)j * g->kp + p, b);
				const double v = sdc_gemm_value_of(t, b);
				r1 += v;
				r2 += (double)(j + 1) * v;
				sum += v;
				mn = v < mn ? v : mn;
				mx = v > mx ? v : mx;
			}
			put(g->bt, g->esz, (size_t)n * g->kp + p, sdc_gemm_bits_of(t, r1));
			put(g->bt, g->esz, (size_t)(n + 1) * g->kp + p, sdc_gemm_bits_of(t, r2));
			double mu, var;
			sdc_ref_row_stats(sum, mn, mx, n, &mu, &var);
			bs.absmu += fabs(mu);
			bs.mu2 += mu * mu;
			bs.sig2 += var;
		}
		for (int i = 0; i < c->m; i++) {
			double sum = 0, mn = INFINITY, mx = -INFINITY, mu, var;
			for (int p = 0; p < c->k; p++) {
				const double v = sdc_gemm_value_of(t, get(g->a, g->esz, (size_t)i * g->kp + p));
				sum += v;
				mn = v < mn ? v : mn;
				mx = v > mx ? v : mx;
			}
			sdc_ref_row_stats(sum, mn, mx, c->k, &mu, &var);
			sdc_ref_vabft(c->emax, c->c_sigma, n, mu, var, &bs, &g->thr[i], &g->thr2[i]);
		}
	}
	(void)ne;
	if (fake_env_int("FAKE_GPU_GEN_BUG", 0) && c->cls >= 16 && c->m > 1 && c->k > 2 && n > 1) { /* burn engines only */
		put(g->a, g->esz, (size_t)1 * g->kp + 2, get(g->a, g->esz, (size_t)1 * g->kp + 2) ^ 1);
		put(g->bt, g->esz, (size_t)1 * g->kp + 0, get(g->bt, g->esz, (size_t)1 * g->kp + 0) ^ 1);
	}
	g->fp_a = fingerprint(g->a, (size_t)c->m * g->kp * g->esz);
	g->fp_b = fingerprint(g->bt, (size_t)c->ldc * g->kp * g->esz);
	return 0;
}

/* s with only its top `bits` significant bits kept, toward zero. */
static int64_t truncate_bits(int64_t s, int bits)
{
	const uint64_t mag = s < 0 ? (uint64_t)-s : (uint64_t)s;
	int width = 0;
	while (width < 64 && (mag >> width))
		width++;
	if (width <= bits)
		return s;
	const uint64_t kept = mag >> (width - bits) << (width - bits);
	return s < 0 ? -(int64_t)kept : (int64_t)kept;
}

/* C[i][j]: int8 exact in int64, the float types in double rounded to fp32. */
static uint32_t product(const struct sdc_gpu_gemm *g, int i, int j, int ncols_data)
{
	const struct sdc_gpu_gemm_cfg *c = &g->c;
	/* int8 in integers; the float types in double, exact for their small integers and faithful
	 * to a corrupted element's fraction or exponent (rounded to fp32 once, at the end); a narrowed
	 * accumulator (FAKE_GPU_ACC_BITS, integer data) in integers it truncates. */
	const int acc_bits = c->type == SDC_GPU_INT8 || !sdc_gpu_type_exact(c->type) ? -1 : fake_env_int("FAKE_GPU_ACC_BITS", -1);
	if (c->type == SDC_GPU_INT8 || acc_bits > 0) {
		int64_t s = 0;
		for (int p = 0; p < c->k; p++) {
			s += (int64_t)sdc_gemm_value_of(c->type, get(g->a, g->esz, (size_t)i * g->kp + p)) *
			     (int64_t)sdc_gemm_value_of(c->type, get(g->bt, g->esz, (size_t)j * g->kp + p));
			if (acc_bits > 0)
				s = truncate_bits(s, acc_bits);
		}
		if (c->type == SDC_GPU_INT8)
			return (uint32_t)(int32_t)s;
		const float f = (float)s;
		uint32_t u;
		memcpy(&u, &f, 4);
		return u;
	}
	(void)ncols_data;
	double s = 0;
	for (int p = 0; p < c->k; p++)
		s += sdc_gemm_value_of(c->type, get(g->a, g->esz, (size_t)i * g->kp + p)) *
		     sdc_gemm_value_of(c->type, get(g->bt, g->esz, (size_t)j * g->kp + p));
	const float f = (float)s;
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

/* C of slot = A B_ext (checked) or A B (plain: the data columns only). */
static void fake_multiply(struct sdc_gpu_gemm *g, struct fake_slot *sl, bool checked)
{
	const int cols = checked ? g->c.ldc : g->c.n;
	for (int i = 0; i < g->c.m; i++)
		for (int j = 0; j < cols; j++)
			sl->cm[(size_t)i * g->c.ldc + j] = j < g->c.n_ext ? product(g, i, j, g->c.n) : 0;
	if (fake_env_int("FAKE_GPU_BAD_SM", -1) >= 0)
		sl->cm[0] ^= 1u << 3; /* the tile at (0, 0) ran on the bad SM */
}

/* Every row of slot's C checked, as the device's check kernels do. */
static void fake_check(struct sdc_gpu_gemm *g, struct fake_slot *sl)
{
	const struct sdc_gpu_gemm_cfg *c = &g->c;
	uint64_t *sums = sl->sums;
	uint64_t bytes = 0; /* every load of C, the thresholds: sizeof what each reads */
	sl->nbad = 0;
	for (int i = 0; i < c->m; i++) {
		const uint32_t *row = sl->cm + (size_t)i * c->ldc;
		struct sdc_gpu_bad_row b = { .row = i, .first_bad = -1 };
		bool bad;
		if (sdc_gpu_type_exact(c->type)) {
			int64_t d[64];
			for (int j = 0; j < c->n_ext; j++) {
				int64_t v;
				bytes += sizeof(row[j]);
				if (c->type == SDC_GPU_INT8) {
					v = (int32_t)row[j];
				} else {
					float f;
					memcpy(&f, &row[j], 4);
					if (!sdc_ref_exact_f32(f)) {
						if (!b.nbad++)
							b.first_bad = j;
						v = 0;
					} else {
						v = (int32_t)f;
					}
				}
				if (j < c->n) {
					b.s1 += v;
					b.s2 += (int64_t)(j + 1) * v;
				} else {
					d[j - c->n] = v;
				}
			}
			b.e1 = sdc_ref_from_digits(d, c->nd1, c->base_log2);
			b.e2 = sdc_ref_from_digits(d + c->nd1, c->nd2, c->base_log2);
			bad = b.nbad || b.s1 != b.e1 || b.s2 != b.e2;
			sums[2 * i] = (uint64_t)b.s1;
			sums[2 * i + 1] = (uint64_t)b.s2;
		} else {
			double s1 = 0, s2 = 0;
			for (int j = 0; j < c->n; j++) {
				float f;
				memcpy(&f, &row[j], 4);
				bytes += sizeof(f);
				s1 += f;
				s2 += (double)(j + 1) * f;
			}
			float r1, r2;
			memcpy(&r1, &row[c->n], 4);
			memcpy(&r2, &row[c->n + 1], 4);
			b.d1 = r1 - s1;
			b.d2 = r2 - s2;
			b.t1 = g->thr[i];
			b.t2 = g->thr2[i];
			bytes += sizeof(r1) + sizeof(r2) + sizeof(g->thr[i]) + sizeof(g->thr2[i]);
			bad = !(fabs(b.d1) <= b.t1) || !(fabs(b.d2) <= b.t2);
			memcpy(&sums[2 * i], &s1, 8);
			memcpy(&sums[2 * i + 1], &s2, 8);
		}
		if (bad || c->report_all)
			sl->bad[sl->nbad++] = b;
	}
	sl->check_bytes = bytes;
}

/* The work is done here, at once; collect hands over what it found. */
static int fake_submit(struct sdc_gpu_gemm *g, int slot, int what, char *err, size_t errlen)
{
	if (sdc_gpu_gemm_submission_check(slot, what, err, errlen))
		return -1;
	if (g->hung) {
		snprintf(err, errlen, "the GPU hung earlier in this run (fake)");
		return -1;
	}
	struct fake_slot *sl = &g->slot[slot];
	sl->what = 0;
	if (what & (SDC_GPU_MULTIPLY | SDC_GPU_PLAIN)) {
		if (fail("multiply", err, errlen))
			return -1;
		fake_multiply(g, sl, what & SDC_GPU_MULTIPLY);
		if ((what & SDC_GPU_MULTIPLY) && g->c.cls >= 16 && g->c.m > 5 && g->c.k > 7 && g->c.n > 7) {
			/* burn engines only; the element's low byte: bit 3 (B lies transposed: ldc rows of kp) */
			++g->products;
			if (g->products == fake_env_int("FAKE_GPU_ROT", -1))
				g->a[((size_t)5 * g->kp + 7) * g->esz] ^= 8;
			if (g->products == fake_env_int("FAKE_GPU_ROT_B", -1))
				g->bt[((size_t)7 * g->kp + 5) * g->esz] ^= 8;
		}
	}
	if (what & SDC_GPU_CHECK) {
		sl->failed = fail("check", err, errlen);
		fake_check(g, sl);
	}
	if (what & SDC_GPU_FINGERPRINT) {
		sl->fp[0] = fingerprint(g->a, (size_t)g->c.m * g->kp * g->esz);
		sl->fp[1] = fingerprint(g->bt, (size_t)g->c.ldc * g->kp * g->esz);
	}
	sl->what = what;
	return 0;
}

static int fake_collect(struct sdc_gpu_gemm *g, int slot, uint64_t *sums, struct sdc_gpu_check *out, char *err,
			size_t errlen)
{
	out->nbad = 0;
	out->a_intact = out->b_intact = 1;
	out->check_bytes = 0;
	if (slot < 0 || slot >= SDC_GPU_SLOTS || !g->slot[slot].what) {
		snprintf(err, errlen, "gemm_collect: nothing was submitted to slot %d", slot);
		return -1;
	}
	if (g->hung) {
		snprintf(err, errlen, "the GPU hung earlier in this run (fake)");
		return -1;
	}
	if (fake_env_int("FAKE_GPU_HANG", 0)) {
		const double t = g->c.timeout;
		const struct timespec ts = { (time_t)t, (long)((t - (double)(time_t)t) * 1e9) };
		nanosleep(&ts, NULL);
		g->hung = true;
		snprintf(err, errlen, "the GEMM and its row checks did not finish within %.1f s: the GPU is hung (fake)", t);
		return -1;
	}
	const struct fake_slot *sl = &g->slot[slot];
	if (sl->what & SDC_GPU_FINGERPRINT) {
		out->a_intact = sl->fp[0] == g->fp_a;
		out->b_intact = sl->fp[1] == g->fp_b;
	}
	if (!(sl->what & SDC_GPU_CHECK))
		return 0;
	if (sl->failed) {
		snprintf(err, errlen, "cudaErrorIllegalAddress: an illegal memory access was encountered (fake, at check)");
		return -1;
	}
	out->nbad = sl->nbad;
	out->check_bytes = sl->check_bytes;
	memcpy(out->bad, sl->bad, sizeof(*sl->bad) * (size_t)sl->nbad);
	if (sums)
		memcpy(sums, sl->sums, sizeof(uint64_t) * 2 * (size_t)g->c.m);
	return 0;
}

static int fake_sync(struct sdc_gpu_gemm *g, char *err, size_t errlen)
{
	if (g->hung) {
		snprintf(err, errlen, "the GPU hung earlier in this run (fake)");
		return -1;
	}
	return 0;
}

static int fake_read(struct sdc_gpu_gemm *g, int slot, char matrix, int row, int col, int count, void *out, char *err,
		     size_t errlen)
{
	const struct sdc_gpu_gemm_cfg *c = &g->c;
	for (int k = 0; k < count; k++) {
		uint64_t v;
		if (matrix == 'A')
			v = get(g->a, g->esz, (size_t)row * g->kp + col + k);
		else if (matrix == 'B')
			v = get(g->bt, g->esz, (size_t)(col + k) * g->kp + row);
		else if (matrix == 'C' && slot >= 0 && slot < SDC_GPU_SLOTS)
			v = g->slot[slot].cm[(size_t)row * c->ldc + col + k];
		else {
			snprintf(err, errlen, "no matrix '%c'", matrix);
			return -1;
		}
		put(out, matrix == 'C' ? 4 : g->esz, (size_t)k, v);
	}
	return 0;
}

static int fake_flip(struct sdc_gpu_gemm *g, int slot, char matrix, int row, int col, int bit, uint64_t *before,
		     uint64_t *after, char *err, size_t errlen)
{
	uint8_t *buf;
	size_t idx;
	int esz = g->esz;
	if (matrix == 'A')
		buf = g->a, idx = (size_t)row * g->kp + col;
	else if (matrix == 'B')
		buf = g->bt, idx = (size_t)col * g->kp + row;
	else if (matrix == 'C' && slot >= 0 && slot < SDC_GPU_SLOTS)
		buf = (uint8_t *)g->slot[slot].cm, idx = (size_t)row * g->c.ldc + col, esz = 4;
	else {
		snprintf(err, errlen, "no matrix '%c'", matrix);
		return -1;
	}
	*before = get(buf, esz, idx);
	*after = *before ^ ((uint64_t)1 << bit);
	put(buf, esz, idx, *after);
	return 0;
}

static int fake_sm_replay(struct sdc_gpu_gemm *g, struct sdc_gpu_sm_replay *r, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	const int bad_sm = fake_env_int("FAKE_GPU_BAD_SM", -1), missed = fake_env_int("FAKE_GPU_SM_MISSED", -1);
	r->blocks = FAKE_SMS;
	for (int b = 0; b < FAKE_SMS; b++) {
		r->smid[b] = b == missed ? (b + 1) % FAKE_SMS : b; /* its block shares the next SM */
		for (int i = 0; i < r->rows; i++)
			for (int j = 0; j < r->cols; j++) {
				uint32_t v = product(g, r->row0 + i, r->col0 + j, g->c.n);
				if (r->smid[b] == bad_sm && r->row0 + i == 0 && r->col0 + j == 0)
					v ^= 1u << 3;
				r->tiles[((size_t)b * r->rows + i) * r->cols + j] = v;
			}
	}
	return 0;
}

static const char *fake_kernel(struct sdc_gpu_gemm *g)
{
	return g->kernel;
}

/* The gemm family's table (fake_module.c asks for it). */
const struct sdc_gpu_gemm_ops *fake_gemm_family(void)
{
	static struct sdc_gpu_gemm_ops t = {
		.blas = "fake cuBLASLt",
		.gemm_create = fake_create,
		.gemm_destroy = fake_destroy,
		.gemm_load = fake_load,
		.gemm_submit = fake_submit,
		.gemm_collect = fake_collect,
		.gemm_sync = fake_sync,
		.gemm_read = fake_read,
		.gemm_flip = fake_flip,
		.gemm_sm_replay = fake_sm_replay,
		.gemm_kernel = fake_kernel,
	};
	t.version = SDC_GPU_GEMM_VERSION - fake_stale("gemm");
	return &t;
}
