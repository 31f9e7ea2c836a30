/*
 * A GPU module that runs on the CPU (kernels/gpu_module.h), for testing the host side of every GPU
 * path without a GPU: sdcscan loads it as it loads the CUDA module ($SDCSCAN_GPU_MODULE), and it
 * does what the CUDA kernels do (kernels/cuda/gemm.cu) from the same element definitions and the
 * same check arithmetic (probes/gemm/gemm_data.h, kernels/abft_ref.h): operands drawn per element, B's
 * checksum columns encoded per row, every row of C checked, fingerprints of the operands, the SM
 * replay of a tile. The product is a plain loop (exact in int64; fast in double, rounded to fp32).
 *
 * Environment, to exercise the failure paths:
 *   FAKE_GPU_COUNT=N      GPUs (default 1); 0: "no GPU found"
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
 *   FAKE_GPU_XGEMM_BUG=1  the exact GEMM fuses the multiply-add of C[1][2] (a port of the exact
 *                         kernel built with contraction)
 *
 *   FAKE_GPU_CRC_BUG=1    the GPU's CRC32C joins its pieces wrong (the pieces' lengths swapped)
 *   FAKE_GPU_XMATH_BUG=1  exp is libm's, not the exact class's (a port that called the library)
 *   FAKE_GPU_HOP_BUG=1    the hop check misses the last wrong element it meets
 *   FAKE_GPU_MT_BUG=D     GPU D's training kernels round one result wrong: every SGD update's
 *                         element 0 comes out with its lowest bit flipped (a GPU that trains
 *                         differently every time, as the goldens and the vote must show)
 *   FAKE_GPU_MT_HANG=D    GPU D's training kernels stop at the 5th batch of copies back: it waits out the
 *                         deadline and fails, as the CUDA module's polled copies do
 *   FAKE_GPU_EB_BUG=D     GPU D's lookups compute column 3 of every bag with a separate multiply and
 *                         add where the CPU fuses them (a port without __fmaf_rn): the same value
 *                         in the exact class, other low bits in the fast one, which only the vote
 *                         can tell
 *   FAKE_GPU_EB_HANG=D    GPU D's third lookup never finishes: it waits out the deadline and fails
 *
 *   NCCL, as MPI's collectives on host memory (the module is built with MPI where sdcscan is):
 *   FAKE_GPU_NCCL=0       no NCCL library on this host
 *   FAKE_GPU_NCCL_BUG=R,OP,ALGO,PROTO   on rank R the collective OP ('A', 'R' or 'G') of the path
 *                         ALGO/PROTO gives output element 1 with bit 21 flipped (one of NCCL's
 *                         kernels wrong, on one GPU: the paths not averaged together must show it)
 *   FAKE_GPU_NCCL_REFUSE=ALGO/PROTO     every rank's communicator for that path fails to
 *                         initialise (a protocol NCCL does not offer on this host)
 *   FAKE_GPU_NCCL_REFUSE_LATE=ALGO/PROTO every collective on that path fails with NCCL's own error
 *                         (its initialisation succeeded: NCCL refuses the protocol at its first use)
 *   FAKE_GPU_NCCL_STUCK=R the collectives of rank R (with no launcher: GPU R) never complete, every
 *                         GPU fine (a stuck path): until the communicator is aborted, its kernels
 *                         spin on every member's GPU and a ping there waits behind them
 *   FAKE_GPU_NCCL_HANG=R  rank R's GPU stops (with no launcher: GPU R): its collectives never start
 *                         and its ping never ends (both wait out the deadline)
 *   FAKE_GPU_DP_BUG=R,N   rank R's N-th data-parallel mean (from 0) comes out with element 0's bit 20
 *                         flipped (its GPU's sum went wrong)
 *   Two ranks of one host on the same GPU are refused, as NCCL refuses them ("Using the same CUDA
 *   device multiple times as different ranks of the same NCCL communicator is not supported").
 *
 * The exact class (xgemm, xmath) and the hop checks (crc32c, ring_check) are the device code's
 * host twins: the same xops.h and ring_hd.h functions, over every index as the kernels' threads.
 * minitrain's operations (mt_ entries) run mt_ops.h's threads in reverse order, as a GPU may run
 * them in any order, on "device memory" that is host memory the fake allocates. embbag's (eb_
 * entries) run embbag_hd.h's functions in the shape of embbag.cu's kernels: a bag's columns, its
 * 32 expectation lanes joined in the same tree, then the check, threads and bags in reverse order.
 */
#include <math.h>
#include <stdbool.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kernels/abft_ref.h"
#include "probes/embbag/embbag_hd.h"
#include "probes/gemm/gemm_data.h"
#include "kernels/gpu_module.h"
#include "kernels/half.h"
#include "probes/minitrain/mt_ops.h"
#include "probes/allreduce/ring_hd.h"
#include "kernels/xops.h"
#include "sdc_config.h"

#include <unistd.h>
#if HAVE_MPI
#include <mpi.h>
#endif

#define SMS 8

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
		uint64_t fp[2];
		bool failed; /* FAKE_GPU_FAIL=check */
	} slot[SDC_GPU_SLOTS];
	double *thr, *thr2;
	uint64_t fp_a, fp_b;
	bool hung;
	char kernel[96];
};

static __thread int bound = -1;

static int env_int(const char *name, int def)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : def;
}

static bool fail(const char *step, char *err, size_t errlen)
{
	const char *f = getenv("FAKE_GPU_FAIL");
	if (!f || strcmp(f, step))
		return false;
	snprintf(err, errlen, "cudaErrorIllegalAddress: an illegal memory access was encountered (fake, at %s)", step);
	return true;
}

static int fake_count(char *why, size_t len)
{
	const int n = env_int("FAKE_GPU_COUNT", 1);
	if (n <= 0)
		snprintf(why, len, "no CUDA-capable device is detected (fake module)");
	return n;
}

static int fake_props(int index, struct sdc_gpu_props *p, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "sdcscan fake GPU (CPU emulation)");
	snprintf(p->uuid, sizeof(p->uuid), "GPU-00000000-0000-0000-0000-%012d", index);
	snprintf(p->pci_bus_id, sizeof(p->pci_bus_id), "0000:%02x:00.0", 0xf0 + index);
	p->cc_major = 9;
	p->cc_minor = 0;
	p->sm_count = SMS;
	p->memory_bytes = (uint64_t)1 << 30;
	p->ecc_enabled = 1;
	p->driver_version = 13000;
	return 0;
}

static int fake_bind(int index, char *err, size_t errlen)
{
	if (index < 0 || index >= env_int("FAKE_GPU_COUNT", 1)) {
		snprintf(err, errlen, "cudaErrorInvalidDevice (fake)");
		return -1;
	}
	bound = index;
	return 0;
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

/* The element type's bits for x, and back (the device converts the same way: half.h). */
static uint64_t bits_of(enum sdc_gpu_type t, double x)
{
	const float f = (float)x;
	uint32_t u;
	memcpy(&u, &f, 4);
	if (t == SDC_GPU_INT8)
		return (uint8_t)(int8_t)x;
	if (t == SDC_GPU_BF16 || t == SDC_GPU_BF16_FAST)
		return sdc_float_to_bf16(f);
	if (t == SDC_GPU_FP16)
		return sdc_float_to_half(f);
	return u;
}

static double value_of(enum sdc_gpu_type t, uint64_t bits)
{
	if (t == SDC_GPU_INT8)
		return (int8_t)(uint8_t)bits;
	if (t == SDC_GPU_BF16 || t == SDC_GPU_BF16_FAST)
		return sdc_bf16_to_float((uint16_t)bits);
	if (t == SDC_GPU_FP16)
		return sdc_half_to_float((uint16_t)bits);
	float f;
	uint32_t u = (uint32_t)bits;
	memcpy(&f, &u, 4);
	return f;
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
	if (bound < 0) {
		snprintf(err, errlen, "no GPU bound to this thread");
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
				    c->extreme ? bits_of(t, (double)sdc_gd_extreme_a(t == SDC_GPU_INT8, c->amax))
				    : t == SDC_GPU_INT8 ? (uint64_t)sdc_gd_int8_a(&ra, set, c->k, i, p)
							: bits_of(t, (double)sdc_gd_small_a(&ra, set, c->k, i, p, c->amax)));
		int64_t row[64];
		for (int p = 0; p < c->k; p++) {
			int64_t s1 = 0, s2 = 0;
			for (int j = 0; j < n; j++) {
				const int64_t v = c->extreme ? sdc_gd_extreme_b(t == SDC_GPU_INT8, c->bmax)
						  : t == SDC_GPU_INT8 ? sdc_gd_int8_b(&rb, set, n, p, j)
								      : sdc_gd_small_b(&rb, set, n, p, j, c->bmax);
				put(g->bt, g->esz, (size_t)j * g->kp + p, bits_of(t, (double)v));
				s1 += v;
				s2 += (int64_t)(j + 1) * v;
			}
			sdc_ref_digits(s1, c->base_log2, c->nd1, row);
			sdc_ref_digits(s2, c->base_log2, c->nd2, row + c->nd1);
			for (int d = 0; d < c->nd1 + c->nd2; d++)
				put(g->bt, g->esz, (size_t)(n + d) * g->kp + p, bits_of(t, (double)row[d]));
		}
	} else {
		const struct sdc_rng wr = sdc_gd_rng(c->seed, c->cls, SDC_GD_WINDOW);
		const struct sdc_gd_window w = sdc_gd_window_of(&wr, set, c->pool_size);
		for (int i = 0; i < c->m; i++)
			for (int p = 0; p < c->k; p++)
				put(g->a, g->esz, (size_t)i * g->kp + p,
				    bits_of(t, sdc_gd_window_at(pool, c->pool_size, w.a0, w.as, (uint64_t)i * c->k + p)));
		struct sdc_ref_bstats bs = { 0 };
		for (int p = 0; p < c->k; p++) {
			double r1 = 0, r2 = 0, sum = 0, mn = INFINITY, mx = -INFINITY;
			for (int j = 0; j < n; j++) {
				const uint64_t b = bits_of(t, sdc_gd_window_at(pool, c->pool_size, w.b0, w.bs, (uint64_t)p * n + j));
				put(g->bt, g->esz, (size_t)j * g->kp + p, b);
				const double v = value_of(t, b);
				r1 += v;
				r2 += (double)(j + 1) * v;
				sum += v;
				mn = v < mn ? v : mn;
				mx = v > mx ? v : mx;
			}
			put(g->bt, g->esz, (size_t)n * g->kp + p, bits_of(t, r1));
			put(g->bt, g->esz, (size_t)(n + 1) * g->kp + p, bits_of(t, r2));
			double mu, var;
			sdc_ref_row_stats(sum, mn, mx, n, &mu, &var);
			bs.absmu += fabs(mu);
			bs.mu2 += mu * mu;
			bs.sig2 += var;
		}
		for (int i = 0; i < c->m; i++) {
			double sum = 0, mn = INFINITY, mx = -INFINITY, mu, var;
			for (int p = 0; p < c->k; p++) {
				const double v = value_of(t, get(g->a, g->esz, (size_t)i * g->kp + p));
				sum += v;
				mn = v < mn ? v : mn;
				mx = v > mx ? v : mx;
			}
			sdc_ref_row_stats(sum, mn, mx, c->k, &mu, &var);
			sdc_ref_vabft(c->emax, c->c_sigma, n, mu, var, &bs, &g->thr[i], &g->thr2[i]);
		}
	}
	(void)ne;
	if (env_int("FAKE_GPU_GEN_BUG", 0) && c->cls >= 16 && c->m > 1 && c->k > 2 && n > 1) { /* burn engines only */
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
	const int acc_bits = c->type == SDC_GPU_INT8 || !sdc_gpu_type_exact(c->type) ? -1 : env_int("FAKE_GPU_ACC_BITS", -1);
	if (c->type == SDC_GPU_INT8 || acc_bits > 0) {
		int64_t s = 0;
		for (int p = 0; p < c->k; p++) {
			s += (int64_t)value_of(c->type, get(g->a, g->esz, (size_t)i * g->kp + p)) *
			     (int64_t)value_of(c->type, get(g->bt, g->esz, (size_t)j * g->kp + p));
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
		s += value_of(c->type, get(g->a, g->esz, (size_t)i * g->kp + p)) *
		     value_of(c->type, get(g->bt, g->esz, (size_t)j * g->kp + p));
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
	if (env_int("FAKE_GPU_BAD_SM", -1) >= 0)
		sl->cm[0] ^= 1u << 3; /* the tile at (0, 0) ran on the bad SM */
}

/* Every row of slot's C checked, as the device's check kernels do. */
static void fake_check(struct sdc_gpu_gemm *g, struct fake_slot *sl)
{
	const struct sdc_gpu_gemm_cfg *c = &g->c;
	uint64_t *sums = sl->sums;
	sl->nbad = 0;
	for (int i = 0; i < c->m; i++) {
		const uint32_t *row = sl->cm + (size_t)i * c->ldc;
		struct sdc_gpu_bad_row b = { .row = i, .first_bad = -1 };
		bool bad;
		if (sdc_gpu_type_exact(c->type)) {
			int64_t d[64];
			for (int j = 0; j < c->n_ext; j++) {
				int64_t v;
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
			bad = !(fabs(b.d1) <= b.t1) || !(fabs(b.d2) <= b.t2);
			memcpy(&sums[2 * i], &s1, 8);
			memcpy(&sums[2 * i + 1], &s2, 8);
		}
		if (bad || c->report_all)
			sl->bad[sl->nbad++] = b;
	}
}

/* The work is done here, at once; collect hands over what it found. */
static int fake_submit(struct sdc_gpu_gemm *g, int slot, int what, char *err, size_t errlen)
{
	if (slot < 0 || slot >= SDC_GPU_SLOTS || !what || ((what & SDC_GPU_MULTIPLY) && (what & SDC_GPU_PLAIN))) {
		snprintf(err, errlen, "gemm_submit: slot %d, what %#x: not a submission", slot, what);
		return -1;
	}
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
	if (slot < 0 || slot >= SDC_GPU_SLOTS || !g->slot[slot].what) {
		snprintf(err, errlen, "gemm_collect: nothing was submitted to slot %d", slot);
		return -1;
	}
	if (g->hung) {
		snprintf(err, errlen, "the GPU hung earlier in this run (fake)");
		return -1;
	}
	if (env_int("FAKE_GPU_HANG", 0)) {
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
	const int bad_sm = env_int("FAKE_GPU_BAD_SM", -1), missed = env_int("FAKE_GPU_SM_MISSED", -1);
	r->blocks = SMS;
	for (int b = 0; b < SMS; b++) {
		r->smid[b] = b == missed ? (b + 1) % SMS : b; /* its block shares the next SM */
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

static int fake_xgemm(int m, int n, int k, const float *a, const float *b, float *c, double timeout, char *err,
		      size_t errlen)
{
	(void)timeout, (void)err, (void)errlen;
	const char *bug = getenv("FAKE_GPU_XGEMM_BUG");
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++) {
			float acc = sdc_xdot(k, a + (long)i * k, 1, b + j, n);
			if (bug && *bug == '1' && i == 1 && j == 2) {
				acc = 0.0f;
				for (int p = 0; p < k; p++)
					acc = fmaf(a[(long)i * k + p], b[(long)p * n + j], acc);
			}
			c[(long)i * n + j] = acc;
		}
	return 0;
}

static int fake_xmath(int n, const double *x, double *e, double *l, double timeout, char *err, size_t errlen)
{
	(void)timeout, (void)err, (void)errlen;
	const char *bug = getenv("FAKE_GPU_XMATH_BUG");
	for (int i = 0; i < n; i++)
		e[i] = bug && *bug == '1' ? exp(x[i]) : sdc_xexp(x[i]), l[i] = sdc_xlog(x[i]);
	return 0;
}

static int fake_xgemm_bench(int n, int reps, double *exact_s, double *sgemm_s, double timeout, char *err,
			    size_t errlen)
{
	(void)n, (void)reps, (void)exact_s, (void)sgemm_s, (void)timeout;
	snprintf(err, errlen, "the fake GPU module has no GPU to time and no cuBLAS");
	return -1;
}

static int fake_crc32c(const void *buf, uint64_t len, uint32_t *out, double timeout, char *err, size_t errlen)
{
	(void)timeout;
	const uint64_t seg = 256, n0 = len ? (len + seg - 1) / seg : 1;
	uint32_t *crc = malloc(n0 * 4), *c2 = malloc(n0 * 4);
	uint64_t *ln = malloc(n0 * 8), *l2 = malloc(n0 * 8);
	const char *bug = getenv("FAKE_GPU_CRC_BUG");
	if (!crc || !c2 || !ln || !l2) {
		free(crc), free(c2), free(ln), free(l2);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (uint64_t s = 0; s < n0; s++)
		sdc_crc32c_piece(buf, len, seg, s, &crc[s], &ln[s]);
	for (int64_t n = (int64_t)n0; n > 1; n = (n + 1) / 2) {
		for (int64_t i = 0; i < (n + 1) / 2; i++) {
			sdc_crc32c_join(crc, ln, n, i, &c2[i], &l2[i]);
			if (bug && *bug == '1' && 2 * i + 1 < n && ln[2 * i] != ln[2 * i + 1])
				c2[i] = sdc_crc32c_combine(crc[2 * i], crc[2 * i + 1], ln[2 * i]);
		}
		memcpy(crc, c2, (size_t)(n + 1) / 2 * 4);
		memcpy(ln, l2, (size_t)(n + 1) / 2 * 8);
	}
	*out = crc[0];
	free(crc), free(c2), free(ln), free(l2);
	return 0;
}

static int fake_ring_check(int64_t n, uint64_t it, int count, int rsum, const float *own, const uint32_t *got, float *dst,
			   int64_t *wrong, uint32_t *crc, double timeout, char *err, size_t errlen)
{
	const uint32_t salt = sdc_ring_salt(it);
	const char *bug = getenv("FAKE_GPU_HOP_BUG");
	int64_t last = -1;
	*wrong = 0;
	for (int64_t i = 0; i < n; i++) {
		int8_t f, g;
		sdc_ring_term(i, salt, &f, &g);
		if (sdc_ring_check_add_one(&dst[i], own[i], got[i], f, g, count, rsum))
			(*wrong)++, last = i;
	}
	if (bug && *bug == '1' && last >= 0)
		(*wrong)--;
	return fake_crc32c(dst, (uint64_t)n * 4, crc, timeout, err, errlen);
}

static int fake_ring_bench(uint64_t bytes, int reps, double *crc_s, double *check_s, double timeout, char *err,
			   size_t errlen)
{
	(void)bytes, (void)reps, (void)crc_s, (void)check_s, (void)timeout;
	snprintf(err, errlen, "the fake GPU module has no GPU to time");
	return -1;
}

/* ---- NCCL's collectives: as MPI's on host memory under mpirun (one rank a GPU), in memory
 * between the members with no launcher (one process, every GPU) ---- */

struct fmember {
	int rank, ordinal;
	float *in, *out, *recv, *sums, *fault; /* the collective's buffers; the checked ring's chunks */
	uint32_t hdr[4], rhdr[4];              /* the header a ring step sends, and the one it got */
	const float *payload;                  /* what the step sends */
};

struct sdc_gpu_comm {
	bool mpi; /* the ranks' shape: one member, the others over MPI */
#if HAVE_MPI
	MPI_Comm comm;
#endif
	int P, nmem;
	int64_t n;
	struct fmember *m;
	char algo[16], proto[16];
};

static double fake_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static bool under_mpi(void)
{
#if HAVE_MPI
	int on = 0;
	MPI_Initialized(&on);
	return on;
#else
	return false;
#endif
}

/* FAKE_GPU_NCCL_HANG, FAKE_GPU_NCCL_STUCK: a rank under mpirun, a GPU (its ordinal) in one process. */
static bool named_by(const char *var, int who)
{
	const char *h = getenv(var);
	return h && *h && atoi(h) == who;
}

static bool hangs(int who)
{
	return named_by("FAKE_GPU_NCCL_HANG", who);
}

/* GPUs (ordinals) on which a stuck collective's kernels still spin: the communicator not yet
 * aborted, a kernel or a free queued on the GPU waits behind them */
static _Atomic bool spinning[64];

static int world_rank(void)
{
	int r = -1;
#if HAVE_MPI
	if (under_mpi())
		MPI_Comm_rank(MPI_COMM_WORLD, &r);
#endif
	return r;
}

/* Whether member m of c stopped (its collectives never start). */
static bool member_hangs(const struct sdc_gpu_comm *c, const struct fmember *m)
{
	return hangs(c->mpi ? m->rank : m->ordinal);
}

static void wait_out(double t0, double timeout)
{
	while (fake_now() - t0 < timeout)
		usleep(20000);
}

static const char *fake_nccl_version(char *why, size_t len)
{
	const char *v = getenv("FAKE_GPU_NCCL");
	if (v && !strcmp(v, "0")) {
		snprintf(why, len, "NCCL cannot be loaded: libnccl.so.2: cannot open shared object file (fake)");
		return NULL;
	}
	return "fake 2.28 (MPI)";
}

static int fake_nccl_unique_id(uint8_t *id, char *err, size_t errlen)
{
	if (!fake_nccl_version(err, errlen))
		return -1;
	/* different on every call and every rank, so the ranks must be given the one rank 0 made */
	static unsigned calls;
	memset(id, 0, SDC_GPU_NCCL_ID_BYTES);
	const uint64_t v[2] = { (uint64_t)getpid() << 20 ^ ++calls, (uint64_t)(fake_now() * 1e6) };
	memcpy(id, v, sizeof(v));
	return 0;
}

static void fake_nccl_destroy(struct sdc_gpu_comm *c, int abort)
{
	if (!c)
		return;
#if HAVE_MPI
	if (c->mpi && !abort) /* (after a deadline a collective may still be posted on it: left as it is) */
		MPI_Comm_free(&c->comm);
#endif
	for (int i = 0; abort && c->m && i < c->nmem; i++)
		spinning[c->m[i].ordinal & 63] = false; /* ncclCommAbort ends its kernels */
	for (int i = 0; c->m && i < c->nmem; i++)
		free(c->m[i].in), free(c->m[i].out), free(c->m[i].recv), free(c->m[i].sums), free(c->m[i].fault);
	free(c->m);
	free(c);
}

static struct sdc_gpu_comm *fake_nccl_init(const uint8_t *id, int nranks, int first_rank, int nmem, const int *devices,
					   const char *algo, const char *proto, int64_t n, double timeout, char *err,
					   size_t errlen)
{
	(void)timeout;
	if (!fake_nccl_version(err, errlen))
		return NULL;
	struct sdc_gpu_comm *c = calloc(1, sizeof(*c));
	if (c)
		c->m = calloc((size_t)nmem, sizeof(*c->m));
	bool ok = c && c->m;
	for (int i = 0; ok && i < nmem; i++) {
		struct fmember *m = &c->m[i];
		m->rank = first_rank + i, m->ordinal = devices[i];
		ok = (m->in = malloc((size_t)n * 4)) && (m->out = malloc((size_t)n * 4)) &&
		     (m->recv = malloc((size_t)n * 4)) && (m->sums = malloc((size_t)n * 4)) && (m->fault = malloc((size_t)n * 4));
	}
	if (!ok) {
		fake_nccl_destroy(c, 1);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->P = nranks, c->nmem = nmem, c->n = n;
	c->mpi = nmem == 1 && nranks > 1 && under_mpi();
	snprintf(c->algo, sizeof(c->algo), "%s", algo ? algo : "");
	snprintf(c->proto, sizeof(c->proto), "%s", proto ? proto : "");
	const char *refuse = getenv("FAKE_GPU_NCCL_REFUSE");
	char path[40];
	snprintf(path, sizeof(path), "%s/%s", c->algo, c->proto);
	int dup = -1, dup_of = -1, dup_gpu = -1;
	bool same_id = true, shape = nmem == nranks;
#if HAVE_MPI
	if (c->mpi) {
		MPI_Comm_dup(MPI_COMM_WORLD, &c->comm);
		/* every rank must hold the same unique id (the one rank 0 made), as NCCL needs */
		uint64_t mine[2], lo[2], hi[2];
		memcpy(mine, id, sizeof(mine));
		MPI_Allreduce(mine, lo, 2, MPI_UINT64_T, MPI_MIN, c->comm);
		MPI_Allreduce(mine, hi, 2, MPI_UINT64_T, MPI_MAX, c->comm);
		same_id = !memcmp(lo, hi, sizeof(lo));
		int size = 0;
		MPI_Comm_size(c->comm, &size);
		shape = size == nranks && first_rank == world_rank();
		struct {
			char host[64];
			int32_t gpu;
		} me = { .gpu = devices[0] }, *all = calloc((size_t)size, sizeof(me));
		gethostname(me.host, sizeof(me.host) - 1);
		if (all) {
			MPI_Allgather(&me, (int)sizeof(me), MPI_BYTE, all, (int)sizeof(me), MPI_BYTE, c->comm);
			for (int q = 0; q < size && dup < 0; q++)
				if (q != first_rank && all[q].gpu == me.gpu && !strcmp(all[q].host, me.host))
					dup = first_rank, dup_of = q, dup_gpu = me.gpu;
			free(all);
		}
	}
#endif
	(void)id;
	for (int i = 0; i < nmem && dup < 0; i++)
		for (int j = 0; j < i; j++)
			if (devices[i] == devices[j])
				dup = first_rank + i, dup_of = first_rank + j, dup_gpu = devices[i];
	if (!same_id || !shape)
		snprintf(err, errlen, "ncclCommInitRankConfig: invalid argument: the ranks hold different unique ids or "
			 "ranks (fake)");
	else if (dup >= 0)
		snprintf(err, errlen, "ncclCommInitRankConfig: invalid usage: Duplicate GPU detected: rank %d and rank %d "
			 "both on CUDA device %d (fake)", dup, dup_of, dup_gpu);
	else if (refuse && !strcasecmp(refuse, path))
		snprintf(err, errlen, "ncclCommInitRankConfig: invalid usage: no algorithm/protocol available for %s "
			 "(fake)", path);
	else
		return c;
	fake_nccl_destroy(c, 0);
	return NULL;
}

/* FAKE_GPU_NCCL_BUG: "R,OP,ALGO,PROTO": member R's output element 1 goes wrong in that path's OP. */
static void nccl_bug(const struct sdc_gpu_comm *c, const struct fmember *m, char op, int64_t nout)
{
	const char *bug = getenv("FAKE_GPU_NCCL_BUG");
	int brank = -1;
	char bop = 0, balgo[16] = "", bproto[16] = "";
	if (bug && sscanf(bug, "%d,%c,%15[^,],%15s", &brank, &bop, balgo, bproto) == 4 && brank == m->rank && bop == op &&
	    !strcasecmp(balgo, c->algo) && !strcasecmp(bproto, c->proto) && nout > 1) {
		uint32_t u;
		memcpy(&u, &m->out[1], 4);
		u ^= 1u << 21;
		memcpy(&m->out[1], &u, 4);
	}
}

static void flip_word(float *p, int bit)
{
	uint32_t u;
	memcpy(&u, p, 4);
	u ^= 1u << (bit & 31);
	memcpy(p, &u, 4);
}

static int fake_nccl_collective(struct sdc_gpu_comm *c, char op, uint64_t it, const struct sdc_gpu_flip *flip,
				struct sdc_gpu_coll_result *res, double timeout, char *err, size_t errlen)
{
	const int P = c->P;
	const int64_t n = c->n, nin = sdc_coll_in_count(op, n, P), nout = sdc_coll_out_count(op, n, P), cn = n / P;
	const uint32_t salt = sdc_ring_salt(it);
	const double t0 = fake_now();
	for (int i = 0; i < c->nmem; i++) {
		memset(&res[i], 0, sizeof(res[i]));
		res[i].first = -1;
	}
	const char *late = getenv("FAKE_GPU_NCCL_REFUSE_LATE");
	char path[40];
	snprintf(path, sizeof(path), "%s/%s", c->algo, c->proto);
	if (late && *late && !strcasecmp(late, path)) {
		snprintf(err, errlen, "%s: invalid usage (run with NCCL_DEBUG=WARN for details): protocol %s is not "
			 "supported here (fake)", op == 'A' ? "ncclAllReduce" : op == 'R' ? "ncclReduceScatter" : "ncclAllGather",
			 c->proto);
		for (int k = 0; k < c->nmem; k++)
			res[k].refused = 1;
		return -1;
	}
	for (int i = 0; i < c->nmem; i++)
		if (named_by("FAKE_GPU_NCCL_STUCK", c->mpi ? c->m[i].rank : c->m[i].ordinal)) {
			/* the path never completes (a peer's data never comes), every GPU fine */
			wait_out(t0, timeout);
			snprintf(err, errlen, "the collective did not finish in time (fake: the path is stuck)");
			for (int k = 0; k < c->nmem; k++) {
				res[k].timed_out = 1;
				spinning[c->m[k].ordinal & 63] = true;
			}
			return -1;
		}
	for (int i = 0; i < c->nmem; i++)
		if (member_hangs(c, &c->m[i])) {
			wait_out(t0, timeout);
			snprintf(err, errlen, "the collective did not finish in time (fake: a GPU stopped)");
			for (int k = 0; k < c->nmem; k++)
				res[k].timed_out = 1;
			return -1;
		}
	for (int i = 0; i < c->nmem; i++)
		for (int64_t x = 0; x < nin; x++)
			c->m[i].in[x] = sdc_coll_input(op, x, c->m[i].rank, P, n, salt);
	if (c->mpi) {
#if HAVE_MPI
		struct fmember *m = &c->m[0];
		MPI_Request req;
		if (op == 'A')
			MPI_Iallreduce(m->in, m->out, (int)n, MPI_FLOAT, MPI_SUM, c->comm, &req);
		else if (op == 'R')
			MPI_Ireduce_scatter_block(m->in, m->out, (int)nout, MPI_FLOAT, MPI_SUM, c->comm, &req);
		else
			MPI_Iallgather(m->in, (int)nin, MPI_FLOAT, m->out, (int)nin, MPI_FLOAT, c->comm, &req);
		int done = 0;
		while (!done && fake_now() - t0 < timeout) {
			MPI_Test(&req, &done, MPI_STATUS_IGNORE);
			if (!done)
				usleep(200);
		}
		if (!done) {
			snprintf(err, errlen, "the collective did not finish in time (a peer that never came, fake)");
			res[0].timed_out = 1;
			return -1;
		}
#endif
	} else {
		/* every member's output from every member's input, in member order */
		for (int i = 0; i < c->nmem; i++)
			for (int64_t x = 0; x < nout; x++) {
				float sum = 0;
				if (op == 'G')
					sum = c->m[x / cn].in[x % cn];
				else
					for (int q = 0; q < c->nmem; q++)
						sum += c->m[q].in[op == 'R' ? x + (int64_t)i * cn : x];
				c->m[i].out[x] = sum;
			}
	}
	for (int i = 0; i < c->nmem; i++) {
		struct fmember *m = &c->m[i];
		res[i].seconds = fake_now() - t0;
		nccl_bug(c, m, op, nout);
		if (flip && flip->member == i && flip->el >= 0 && flip->el < nout)
			flip_word(&m->out[flip->el], flip->bit);
		/* the check kernel's twin: every element against its exact value */
		for (int64_t x = 0; x < nout; x++) {
			const float e = sdc_coll_expect(op, x, m->rank, P, n, salt);
			if (memcmp(&e, &m->out[x], 4) && !res[i].wrong++) {
				res[i].first = x;
				res[i].got = m->out[x];
				res[i].expected = e;
			}
		}
	}
	return 0;
}

#if HAVE_MPI
/* Waits for reqs within the deadline (t0 + timeout); false past it. */
static bool fake_wait(MPI_Request *reqs, int n, double t0, double timeout)
{
	int done = 0;
	while (!done && fake_now() - t0 < timeout) {
		MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
		if (!done)
			usleep(200);
	}
	return done;
}
#endif

/* Where rank stands in the ring. */
static int ring_position(const int *order, int P, int rank)
{
	int p = 0;
	while (p < P && order[p] != rank)
		p++;
	return p;
}

/* A member's step before the exchange (nccl.cu's step_send): the header with its chunk's CRC32C,
 * its own faults, what it sends. */
static void ring_send(struct fmember *m, int mi, int P, int64_t cn, int phase, int s, int p,
		      const struct sdc_gpu_ring_fault *faults, int nfaults)
{
	const size_t cb = (size_t)cn * 4;
	const struct sdc_ring_step st = sdc_ring_step_at(phase, s, p, P);
	m->payload = phase == 0 && s == 0 ? m->in + (int64_t)st.send_c * cn
		     : phase == 0	  ? m->sums
					  : m->out + (int64_t)st.send_c * cn;
	m->hdr[0] = sdc_crc32c_hd(0, (const uint8_t *)m->payload, cb);
	m->hdr[1] = (uint32_t)(phase << 16 | s);
	m->hdr[2] = sdc_crc32c_hd(0, (const uint8_t *)m->hdr, 8);
	for (int k = 0; k < nfaults; k++) {
		const struct sdc_gpu_ring_fault *f = &faults[k];
		if (f->member != mi || (f->kind != 'H' && f->kind != 'h') || f->phase != phase || f->step != s)
			continue;
		if (f->kind == 'h') {
			m->hdr[0] ^= 1u << (f->bit & 31);
		} else {
			memcpy(m->fault, m->payload, cb);
			flip_word(&m->fault[f->el % cn], f->bit);
			m->payload = m->fault;
		}
	}
}

/* A member's step after the exchange (nccl.cu's step_check): the CRC32C of what arrived, every
 * element against its partial sum (reduce-scatter: the sums sent on; all-gather: put right). */
static void ring_check(struct fmember *m, int mi, const int *order, int P, int64_t cn, int phase, int s, int p,
		       uint32_t salt, const struct sdc_gpu_ring_fault *faults, int nfaults, struct sdc_gpu_hop *o)
{
	const size_t cb = (size_t)cn * 4;
	const struct sdc_ring_step st = sdc_ring_step_at(phase, s, p, P);
	const int64_t off = (int64_t)st.recv_c * cn;
	float *into = phase == 0 ? m->recv : m->out + off;
	memcpy(o->hdr, m->rhdr, 12);
	o->crc = sdc_crc32c_hd(0, (const uint8_t *)into, cb);
	o->nbad = 0, o->first = -1, o->got = 0, o->expected = 0;
	const int rsum = sdc_ring_rank_sum(order, P, st.first, st.count);
	float *dst = phase == 0 ? (s < P - 2 ? m->sums : m->out + off) : NULL;
	for (int64_t i = 0; i < cn; i++) {
		int8_t f, g;
		uint32_t u;
		sdc_ring_term(off + i, salt, &f, &g);
		memcpy(&u, &into[i], 4);
		if (sdc_ring_check_add_one(dst ? &dst[i] : NULL, phase == 0 ? m->in[off + i] : 0, u, f, g, st.count, rsum) &&
		    !o->nbad++) {
			o->first = i;
			o->got = into[i];
			o->expected = sdc_ring_expect(st.count, rsum, f, g);
		}
		if (phase == 1)
			into[i] = sdc_ring_expect(st.count, rsum, f, g); /* put right */
	}
	for (int k = 0; k < nfaults && phase == 0 && s == 0; k++)
		if (faults[k].kind == 'C' && faults[k].member == mi)
			flip_word(&dst[faults[k].el % cn], faults[k].bit);
}

/* The checked ring's twin (kernels/cuda/nccl.cu's m_nccl_ring): the same schedule and per-element
 * checks (ring_hd.h), the CRC32C one byte at a time, each step's chunk and header by MPI or, with
 * every member here, copied from the previous member. */
static int fake_nccl_ring(struct sdc_gpu_comm *c, const int *order, uint64_t it, const struct sdc_gpu_ring_fault *faults,
			  int nfaults, struct sdc_gpu_hop *hops, double *seconds, int *timed_out, double timeout, char *err,
			  size_t errlen)
{
	*timed_out = 0;
	const int P = c->P, nh = 2 * (P - 1);
	const int64_t n = c->n, cn = n / P;
	const uint32_t salt = sdc_ring_salt(it);
	const double t0 = fake_now();
	for (int i = 0; i < c->nmem; i++)
		if (member_hangs(c, &c->m[i])) {
			wait_out(t0, timeout);
			snprintf(err, errlen, "the checked ring did not finish in time (fake: a GPU stopped)");
			*timed_out = 1;
			return -1;
		}
	for (int i = 0; i < c->nmem; i++)
		for (int64_t x = 0; x < n; x++)
			c->m[i].in[x] = sdc_coll_input('A', x, c->m[i].rank, P, n, salt);
	for (int phase = 0; phase < 2; phase++)
		for (int s = 0; s < P - 1; s++) {
			const int h = phase * (P - 1) + s;
			for (int i = 0; i < c->nmem; i++)
				ring_send(&c->m[i], i, P, cn, phase, s, ring_position(order, P, c->m[i].rank), faults, nfaults);
			if (c->mpi) {
#if HAVE_MPI
				struct fmember *m = &c->m[0];
				const int p = ring_position(order, P, m->rank);
				const int next = order[(p + 1) % P], prev = order[(p - 1 + P) % P];
				float *into = phase == 0 ? m->recv : m->out + (int64_t)sdc_ring_step_at(phase, s, p, P).recv_c * cn;
				MPI_Request q[4];
				MPI_Isend(m->hdr, 12, MPI_BYTE, next, 2 * h, c->comm, &q[0]);
				MPI_Isend(m->payload, (int)(cn * 4), MPI_BYTE, next, 2 * h + 1, c->comm, &q[1]);
				MPI_Irecv(m->rhdr, 12, MPI_BYTE, prev, 2 * h, c->comm, &q[2]);
				MPI_Irecv(into, (int)(cn * 4), MPI_BYTE, prev, 2 * h + 1, c->comm, &q[3]);
				if (!fake_wait(q, 4, t0, timeout)) {
					snprintf(err, errlen, "the ring's send/receive did not finish in time (a peer that never came, fake)");
					*timed_out = 1;
					return -1;
				}
#endif
			} else {
				for (int i = 0; i < c->nmem; i++) {
					struct fmember *m = &c->m[i];
					const int p = ring_position(order, P, m->rank);
					const struct fmember *from = &c->m[order[(p - 1 + P) % P]];
					float *into = phase == 0 ? m->recv : m->out + (int64_t)sdc_ring_step_at(phase, s, p, P).recv_c * cn;
					memcpy(m->rhdr, from->hdr, 12);
					memcpy(into, from->payload, (size_t)cn * 4);
				}
			}
			for (int i = 0; i < c->nmem; i++)
				ring_check(&c->m[i], i, order, P, cn, phase, s, ring_position(order, P, c->m[i].rank), salt, faults,
					   nfaults, &hops[i * nh + h]);
		}
	*seconds = fake_now() - t0;
	return 0;
}

/* The data-parallel mean's twin (nccl.cu's m_nccl_rank_mean): MPI's all-gather, then
 * sdc_xrank_mean for every element, as the GPU's kernel computes it. */
static int fake_nccl_rank_mean(struct sdc_gpu_comm *c, const float *local, int64_t total, float *out, int *timed_out,
			       double timeout, char *err, size_t errlen)
{
	*timed_out = 0;
	if (!c->mpi) {
		snprintf(err, errlen, "the data-parallel mean takes one GPU a rank");
		return -1;
	}
#if HAVE_MPI
	const int P = c->P;
	float *all = malloc((size_t)total * 4 * (size_t)P);
	if (!all) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	const double t0 = fake_now();
	MPI_Request req;
	MPI_Iallgather(local, (int)total, MPI_FLOAT, all, (int)total, MPI_FLOAT, c->comm, &req);
	if (!fake_wait(&req, 1, t0, timeout)) {
		snprintf(err, errlen, "the gradients' all-gather did not finish in time (fake)");
		*timed_out = 1;
		return -1; /* (all stays: the request may still write it) */
	}
	for (int64_t e = 0; e < total; e++)
		out[e] = sdc_xrank_mean(all, (long)total, P, (long)e, 1.0f / (float)P);
	free(all);
	static int calls;
	const char *bug = getenv("FAKE_GPU_DP_BUG");
	int brank = -1, bcall = -1;
	if (bug && sscanf(bug, "%d,%d", &brank, &bcall) == 2 && brank == c->m[0].rank && bcall == calls && total > 0)
		flip_word(&out[0], 20);
	calls++;
	return 0;
#else
	(void)local, (void)total, (void)out, (void)timeout;
	return -1;
#endif
}

static int fake_ping(int device, double timeout, char *err, size_t errlen)
{
	if (spinning[device & 63]) {
		wait_out(fake_now(), timeout);
		snprintf(err, errlen, "a kernel of one thread did not finish in time (fake: it waited behind NCCL's "
			 "kernels of a stuck collective, not aborted)");
		return -1;
	}
	if (!hangs(under_mpi() ? world_rank() : device))
		return 0;
	wait_out(fake_now(), timeout);
	snprintf(err, errlen, "a kernel of one thread did not finish in time (fake: this GPU stopped)");
	return -1;
}

/* ---- minitrain's steps ---- */

struct sdc_gpu_mt {
	int device, copies;
	double timeout;
	bool bug, hang;
	char err[256];
};

static struct sdc_gpu_mt *fake_mt_open(double timeout, char *err, size_t errlen)
{
	struct sdc_gpu_mt *g = calloc(1, sizeof(*g));
	if (!g) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	g->device = bound, g->timeout = timeout;
	g->bug = getenv("FAKE_GPU_MT_BUG") && env_int("FAKE_GPU_MT_BUG", -1) == bound;
	g->hang = getenv("FAKE_GPU_MT_HANG") && env_int("FAKE_GPU_MT_HANG", -1) == bound;
	return g;
}

static void fake_mt_close(struct sdc_gpu_mt *g)
{
	free(g);
}

static void *fake_mt_alloc(struct sdc_gpu_mt *g, size_t bytes)
{
	void *p = g->err[0] ? NULL : calloc(1, bytes);
	if (!p && !g->err[0])
		snprintf(g->err, sizeof(g->err), "cudaErrorMemoryAllocation (fake)");
	return p;
}

static void fake_mt_free(struct sdc_gpu_mt *g, void *p)
{
	(void)g;
	free(p);
}

static int fake_mt_copy(struct sdc_gpu_mt *g, int to_device, int n, void *const *dst, const void *const *src,
			const size_t *bytes)
{
	if (g->err[0])
		return -1;
	if (!to_device && g->hang && ++g->copies >= 5) {
		wait_out(fake_now(), g->timeout);
		snprintf(g->err, sizeof(g->err), "a copy from the GPU did not finish within %.0f s (fake: GPU %d stopped)",
			 g->timeout, g->device);
		return -1;
	}
	for (int i = 0; i < n; i++)
		memcpy(dst[i], src[i], bytes[i]);
	return 0;
}

static int fake_mt_op(struct sdc_gpu_mt *g, const struct sdc_mt_op *op)
{
	if (g->err[0])
		return -1;
	for (long t = op->n - 1; t >= 0; t--)
		sdc_mt_op_thread(op, t);
	if (g->bug && op->code == SDC_MT_OP_SGD) {
		uint32_t u;
		memcpy(&u, &op->x[0], 4);
		u ^= 1;
		memcpy(&op->x[0], &u, 4);
	}
	return 0;
}

static int fake_mt_gemm(struct sdc_gpu_mt *g, int m, int n, int k, const float *a, int lda, const float *b, int ldb,
			float *c, int ldc)
{
	if (g->err[0])
		return -1;
	for (int i = m - 1; i >= 0; i--)
		for (int j = n - 1; j >= 0; j--)
			c[(long)i * ldc + j] = sdc_xdot(k, a + (long)i * lda, 1, b + j, ldb);
	return 0;
}

static const char *fake_mt_error(struct sdc_gpu_mt *g)
{
	return g->err;
}

/* ---- embbag's lookups ---- */

struct sdc_gpu_eb {
	struct sdc_eb_cfg cfg;
	struct sdc_eb_layout l;
	int max_bags, nbags, device, lookups;
	bool bug, hang;
	double timeout;
	uint8_t *table;
	uint32_t *idx;
	float *w, *out;
	int32_t *start, *len;
	bool *weighted;
	struct sdc_eb_verdict *v;
	char err[256];
};

static void fake_eb_close(struct sdc_gpu_eb *g)
{
	if (!g)
		return;
	free(g->table), free(g->idx), free(g->w), free(g->out), free(g->start), free(g->len), free(g->weighted), free(g->v);
	free(g);
}

static struct sdc_gpu_eb *fake_eb_open(const struct sdc_eb_cfg *cfg, int with_sums, int max_bags, double timeout,
				       char *err, size_t errlen)
{
	struct sdc_gpu_eb *g = calloc(1, sizeof(*g));
	if (!g || sdc_eb_layout_init(&g->l, cfg->fmt, cfg->d, with_sums) || max_bags < cfg->batch) {
		snprintf(err, errlen, "cannot make a table of width %d for %d bags (fake)", cfg->d, max_bags);
		free(g);
		return NULL;
	}
	g->cfg = *cfg, g->max_bags = max_bags, g->timeout = timeout, g->device = bound;
	g->bug = getenv("FAKE_GPU_EB_BUG") && env_int("FAKE_GPU_EB_BUG", -1) == bound;
	g->hang = getenv("FAKE_GPU_EB_HANG") && env_int("FAKE_GPU_EB_HANG", -1) == bound;
	const size_t region = (size_t)sdc_eb_batch_plan(cfg).max_total * (size_t)(max_bags / cfg->batch);
	g->table = malloc((size_t)cfg->rows * g->l.stride);
	g->idx = malloc(region * sizeof(uint32_t));
	g->w = malloc(region * sizeof(float));
	g->out = malloc((size_t)max_bags * cfg->d * sizeof(float));
	g->start = malloc((size_t)max_bags * sizeof(int32_t));
	g->len = malloc((size_t)max_bags * sizeof(int32_t));
	g->weighted = malloc((size_t)max_bags);
	g->v = malloc((size_t)max_bags * sizeof(*g->v));
	if (!g->table || !g->idx || !g->w || !g->out || !g->start || !g->len || !g->weighted || !g->v) {
		snprintf(err, errlen, "cudaErrorMemoryAllocation (fake)");
		fake_eb_close(g);
		return NULL;
	}
	/* k_eb_fill: a thread a row */
	for (uint64_t r = cfg->rows; r-- > 0;)
		sdc_eb_row_truth(cfg, &g->l, r, g->table + r * g->l.stride);
	return g;
}

static int fake_eb_draw(struct sdc_gpu_eb *g, uint64_t first, int n)
{
	if (g->err[0])
		return -1;
	if (n < 1 || n * g->cfg.batch > g->max_bags) {
		snprintf(g->err, sizeof(g->err), "%d batches of %d bags: room for %d bags", n, g->cfg.batch, g->max_bags);
		return -1;
	}
	/* k_eb_draw: a block a batch, its rows and weights word by word */
	const struct sdc_eb_batch_plan p = sdc_eb_batch_plan(&g->cfg);
	const struct sdc_rng r = sdc_eb_rng(&g->cfg, SDC_EB_PURPOSE_BATCH);
	for (int bt = n - 1; bt >= 0; bt--) {
		const uint64_t index = first + (uint64_t)bt, base = index * p.blocks, region = (uint64_t)bt * p.max_total;
		const bool wt = sdc_eb_batch_weighted(index);
		int off = 0;
		for (int i = 0; i < g->cfg.batch; i++) {
			const int b = bt * g->cfg.batch + i;
			g->start[b] = (int32_t)(region + (uint64_t)off);
			g->len[b] = sdc_eb_len_of(&g->cfg, sdc_eb_stream_word(&r, base, (uint64_t)i));
			g->weighted[b] = wt;
			off += g->len[b];
		}
		for (int k = off - 1; k >= 0; k--) {
			g->idx[region + (uint64_t)k] = sdc_eb_index_of(&g->cfg, sdc_eb_stream_word(&r, base + p.idx_block, (uint64_t)k));
			g->w[region + (uint64_t)k] =
				wt ? sdc_eb_weight_of(&g->cfg, sdc_eb_stream_word(&r, base + p.w_block, (uint64_t)k)) : 1.0f;
		}
	}
	g->nbags = n * g->cfg.batch;
	return 0;
}

/* FAKE_GPU_EB_BUG's column: the multiply and the add rounded apart. */
static float unfused_column(const struct sdc_eb_layout *l, const uint8_t *table, const uint32_t *idx, const float *w,
			    int len, int j)
{
	float acc = 0.0f;
	for (int r = 0; r < len; r++) {
		const uint8_t *row = table + (size_t)idx[r] * l->stride;
		float scale, bias;
		sdc_eb_row_params(l, row, &scale, &bias);
		const float wr = w ? w[r] : 1.0f, s = wr * scale, b = wr * bias, t = acc + b;
		const float prod = s * (float)sdc_eb_row_q(l, row, j);
		acc = prod + t;
	}
	return acc;
}

static int fake_eb_lookup(struct sdc_gpu_eb *g, int sums_in, const struct sdc_gpu_flip *flips, int nflips, float *out,
			  struct sdc_eb_verdict *v)
{
	if (g->err[0])
		return -1;
	if (g->hang && ++g->lookups >= 3) {
		wait_out(fake_now(), g->timeout);
		snprintf(g->err, sizeof(g->err), "the lookups did not finish within %.0f s (fake: GPU %d stopped)", g->timeout,
			 g->device);
		return -1;
	}
	const struct sdc_eb_layout *l = &g->l;
	const enum sdc_eb_sums sums = l->trailer ? (enum sdc_eb_sums)sums_in : SDC_EB_NO_SUMS;
	const int d = l->d;
	/* k_eb_bags: a block a bag */
	for (int bag = g->nbags - 1; bag >= 0; bag--) {
		const uint32_t *bi = g->idx + g->start[bag];
		const float *bw = g->weighted[bag] ? g->w + g->start[bag] : NULL;
		float *o = g->out + (size_t)bag * d;
		double sq[16];
		struct sdc_eb_expect es[32];
		for (int t = d - 1; t >= 0; t--)
			o[t] = g->bug && t == 3 ? unfused_column(l, g->table, bi, bw, g->len[bag], t)
						: sdc_eb_bag_column(l, g->table, bi, bw, g->len[bag], t,
								    sums == SDC_EB_SUMS_STATS && t < 16 ? &sq[t] : NULL);
		if (sums == SDC_EB_NO_SUMS)
			continue;
		for (int lane = 31; lane >= 0; lane--)
			sdc_eb_expect_lane(l, g->table, bi, bw, g->len[bag], g->weighted[bag], sums, lane, 32, &es[lane]);
		sdc_eb_expect_join(es, 32);
		sdc_eb_apply_flips(o, d, bag, flips, nflips);
		sdc_eb_bag_check(&g->cfg, l, o, &es[0], sq, sums, &g->v[bag]);
	}
	if (out)
		memcpy(out, g->out, (size_t)g->nbags * d * sizeof(float));
	if (v && l->trailer)
		memcpy(v, g->v, (size_t)g->nbags * sizeof(*v));
	return 0;
}

static int fake_eb_sweep(struct sdc_gpu_eb *g, uint64_t row0, uint64_t n, uint64_t *bad, int max, int *nbad)
{
	*nbad = 0;
	if (g->err[0])
		return -1;
	if (n > g->cfg.rows)
		n = g->cfg.rows;
	/* in increasing order of rows: the CUDA module sorts what its threads found */
	uint64_t found[1024];
	int got = 0;
	for (uint64_t k = 0; k < n; k++) {
		const uint64_t row = (row0 + k) % g->cfg.rows;
		if (!sdc_eb_row_sound(&g->cfg, &g->l, g->table + row * g->l.stride, row)) {
			if (got < 1024)
				found[got] = row;
			got++;
		}
	}
	*nbad = got;
	const int have = got < 1024 ? got : 1024;
	for (int i = 1; i < have; i++)
		for (int j = i; j > 0 && found[j - 1] > found[j]; j--) {
			const uint64_t x = found[j];
			found[j] = found[j - 1], found[j - 1] = x;
		}
	for (int i = 0; i < have && i < max; i++)
		bad[i] = found[i];
	return 0;
}

static int fake_eb_row(struct sdc_gpu_eb *g, int write, uint64_t row, uint8_t *bytes)
{
	if (g->err[0])
		return -1;
	if (row >= g->cfg.rows) {
		snprintf(g->err, sizeof(g->err), "row %llu of a table of %llu", (unsigned long long)row,
			 (unsigned long long)g->cfg.rows);
		return -1;
	}
	uint8_t *p = g->table + row * g->l.stride;
	memcpy(write ? p : bytes, write ? bytes : p, g->l.stride);
	return 0;
}

static int fake_eb_time(struct sdc_gpu_eb *g, int sums, int reps, double *seconds)
{
	const double t0 = fake_now();
	for (int i = 0; i < reps; i++)
		if (fake_eb_lookup(g, sums, NULL, 0, NULL, NULL))
			return -1;
	*seconds = (fake_now() - t0) / (reps > 0 ? reps : 1);
	return 0;
}

static const char *fake_eb_error(struct sdc_gpu_eb *g)
{
	return g->err;
}

static const struct sdc_gpu_module fake = {
	.abi = SDC_GPU_MODULE_ABI,
	.cuda_runtime = "fake",
	.blas = "fake cuBLASLt",
	.count = fake_count,
	.props = fake_props,
	.bind = fake_bind,
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
	.xgemm = fake_xgemm,
	.xmath = fake_xmath,
	.xgemm_bench = fake_xgemm_bench,
	.crc32c = fake_crc32c,
	.ring_check = fake_ring_check,
	.ring_bench = fake_ring_bench,
	.nccl_version = fake_nccl_version,
	.nccl_unique_id = fake_nccl_unique_id,
	.nccl_init = fake_nccl_init,
	.nccl_destroy = fake_nccl_destroy,
	.nccl_collective = fake_nccl_collective,
	.nccl_ring = fake_nccl_ring,
	.nccl_rank_mean = fake_nccl_rank_mean,
	.ping = fake_ping,
	.mt_open = fake_mt_open,
	.mt_close = fake_mt_close,
	.mt_alloc = fake_mt_alloc,
	.mt_free = fake_mt_free,
	.mt_copy = fake_mt_copy,
	.mt_op = fake_mt_op,
	.mt_gemm = fake_mt_gemm,
	.mt_error = fake_mt_error,
	.eb_open = fake_eb_open,
	.eb_close = fake_eb_close,
	.eb_draw = fake_eb_draw,
	.eb_lookup = fake_eb_lookup,
	.eb_sweep = fake_eb_sweep,
	.eb_row = fake_eb_row,
	.eb_time = fake_eb_time,
	.eb_error = fake_eb_error,
};

const struct sdc_gpu_module *sdc_gpu_module(void);
const struct sdc_gpu_module *sdc_gpu_module(void)
{
	return &fake;
}
