/*
 * The gemm probe on GPUs, through the GPU module (kernels/gpu_module.h): one host thread and one
 * stream per GPU, the data drawn and B encoded on the device, cuBLASLt multiplying, every row of C
 * checked on the device, so the host only reads the verdicts.
 *
 * Two kinds of GPU lane:
 *   - the burn variants gpu-int8, gpu-bf16, gpu-fp16 (exact) and gpu-fp32-fast, gpu-tf32-fast,
 *     gpu-bf16-fast (V-ABFT thresholds), at sizes that keep a GPU busy; each iteration's vote
 *     digest is the hash of every row's two sums, the same on every healthy GPU of a model;
 *   - the exact CPU variants int8 and fp32 on GPUs too, at the CPU's sizes and with the CPU's
 *     data: their C is bit-identical to the CPU kernels', so its hash goes into the same vote as
 *     the cores' and one host's CPUs check its GPUs, and the reverse.
 *
 * A failing row is read back and recomputed on the host from regenerated operands (gpu_truth.c),
 * so a finding names row, column, expected, actual and XOR; the failing tile is then recomputed
 * by the module's own exact kernel on every SM, which tells a persistent fault (the same SM gets
 * it wrong again) from a transient one, and names the SM.
 *
 * This file holds the lanes' configuration and set-up, and a lane's run: its engine, its first
 * operands compared with the host's twin, the GPU's reference rate, faults injected, iterations
 * submitted two in flight. Looking at an iteration's results and filing what they show is
 * gpu_look.c's; the two share gpu_lane.h.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/gpu_loader.h"
#include "probes/gemm/calibration.h"
#include "probes/gemm/gpu_lane.h"
#include "base/message.h"
#include "base/clock.h"

const char *const sdc_gemm_gpu_type_names[] = { "int8", "fp32", "bf16", "fp16", "fp32-fast", "tf32-fast", "bf16-fast", NULL };
const char *const sdc_gemm_gpu_variant_names[] = { "gpu-int8",      "gpu-fp32",      "gpu-bf16",      "gpu-fp16",
						   "gpu-fp32-fast", "gpu-tf32-fast", "gpu-bf16-fast", NULL };

/* ---- configuration ---- */

/*
 * Exact small-integer data in bf16/fp16 on tensor cores. The products are exact in fp32 (|a b| <=
 * 127 * 127), and every partial sum is an integer of magnitude <= k amax max(bmax, 2^(base-1))
 * (the digit columns' products too). NVIDIA's tensor cores add products aligned to the largest
 * exponent of a block and keep at least 24 bits below its leading bit, truncating the rest (Fasi
 * et al., "Numerical behavior of NVIDIA tensor cores", PeerJ CS 2021): an integer addend loses no
 * bit while every magnitude stays below 2^24. The bound here is 2^22, a margin of four; the gpu
 * suite checks the worst case (every |a| = amax, |b| = bmax, signs alike) against the CPU's exact
 * product on the GPU itself.
 */
#define TC_BOUND (1 << 22)
#define TC_BASE_LOG2 8

static int exact_bounds(enum sdc_gpu_type type, int k, struct sdc_gpu_gemm_cfg *c, char *err, size_t errlen)
{
	const int64_t digit = (int64_t)1 << (TC_BASE_LOG2 - 1);
	int64_t amax = TC_BOUND / ((int64_t)k * digit);
	if (amax > 127)
		amax = 127;
	if (amax < 1) {
		snprintf(err, errlen, "gpu_k=%d is too deep for exact %s data (at most %d)", k, sdc_gemm_gpu_type_names[type],
			 (int)(TC_BOUND / digit));
		return -1;
	}
	int64_t bmax = TC_BOUND / ((int64_t)k * amax);
	if (bmax > 127)
		bmax = 127;
	c->amax = amax;
	c->bmax = bmax;
	c->base_log2 = TC_BASE_LOG2;
	return 0;
}

/*
 * A fast type's default e_max, for a GPU no calibration names. V-ABFT (seeds/004, 3.2-3.4) needs
 * e_max >= |alpha_k|, |beta_k|: the mean and RMS over row k of B of e_kn, the relative error with
 * which B_kn reaches C through the product less that through its checksum column. A, B and their
 * checksums are stored in the element type, C in fp32, and every path accumulates in fp32:
 *  - fp32-fast rounds in fp32 only (the checksums, C, the K-deep sums): Table 7's H100 FP32 row;
 *  - tf32-fast adds the tensor cores' TF32 conversion of B and its checksums (A's enters both paths
 *    alike): e_kn = d_kn - d_k, two conversion errors of one kind, under 2 u_tf32 whether both round
 *    to nearest (|d| <= u) or both drop the low 13 bits (d in (-2u, 0]);
 *  - bf16-fast data is bf16 already and its checksums round to bf16 (|e_kn| <= u_bf16): Table 7's
 *    BF16 row, "about 2u", keeps a margin of two.
 * Sources for the conversion: PTX ISA 5.2.3 (tf32 keeps ">=10 bits") and cvt.rna.tf32.f32,
 * docs.nvidia.com/cuda/parallel-thread-execution; cuBLAS's CUBLAS_COMPUTE_32F_FAST_TF32 does not
 * say how it converts; CUTLASS rounds (github.com/NVIDIA/cutlass, its numeric conversions:
 * PreferredRoundingMode<tfloat32_t, float> is round_half_ulp_truncate); PyTorch's notes say the
 * tensor cores read the first 10 mantissa bits (TensorFloat-32 in
 * pytorch.org/docs/stable/notes/numerical_accuracy.html).
 */
static double fp32_accumulation(int k)
{
	return 5.0e-9 * sqrt((double)k) + 1.2e-7;
}

/* The unit roundoff 2^-t of a format with t significand bits, the implicit one included. */
static double unit_roundoff(int t)
{
	return ldexp(1, -t);
}

static double default_emax(enum sdc_gpu_type type, int k)
{
	switch (type) {
	case SDC_GPU_FP32_FAST:
		return fp32_accumulation(k);
	case SDC_GPU_TF32_FAST:
		return 2 * unit_roundoff(11) + fp32_accumulation(k);
	default:
		return 2 * unit_roundoff(8) + fp32_accumulation(k); /* BF16 */
	}
}

/* What default_emax() rests on, for the report. */
static const char *default_why(enum sdc_gpu_type type)
{
	switch (type) {
	case SDC_GPU_FP32_FAST:
		return "V-ABFT Table 7's H100 FP32 row, 5e-9 sqrt(K) + 1.2e-7";
	case SDC_GPU_TF32_FAST:
		return "derived from TF32's unit roundoff: 2 u_tf32 = 2^-10 (the tensor cores' conversion of the fp32 "
		       "operands) + V-ABFT Table 7's H100 FP32 accumulation, 5e-9 sqrt(K) + 1.2e-7";
	default:
		return "derived from bf16's unit roundoff: 2 u_bf16 = 2^-7 (V-ABFT Table 7's BF16 row) + its H100 FP32 "
		       "accumulation, 5e-9 sqrt(K) + 1.2e-7";
	}
}

int sdc_gemm_gpu_burn_cfg(enum sdc_gpu_type type, int m, int n, int k, uint64_t seed, struct sdc_gpu_gemm_cfg *c,
			  char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->type = type;
	c->seed = seed;
	/* Streams of their own, apart from the CPU classes' (gemm_data.h keys them by class). */
	c->cls = 16 + (int)type;
	c->m = m, c->n = n, c->k = k;
	c->timeout = 30;
	c->pool_size = SDC_DIST_POOL;
	c->c_sigma = SDC_C_SIGMA;
	if (sdc_gpu_type_exact(type)) {
		struct sdc_abft_layout l;
		if (type == SDC_GPU_INT8) {
			c->amax = 127;
			c->bmax = 128;
			c->base_log2 = 7;
		} else if (exact_bounds(type, k, c, err, errlen)) {
			return -1;
		}
		sdc_abft_layout_init(&l, n, c->bmax, c->base_log2);
		c->n_ext = l.n_ext;
		c->nd1 = l.nd1;
		c->nd2 = l.nd2;
	} else {
		c->n_ext = n + 2;
		c->emax = default_emax(type, k);
	}
	c->ldc = (c->n_ext + 15) / 16 * 16;
	return 0;
}

/* The GPU lane's engine configuration for a variant; err when it cannot run. */
static int lane_cfg(const struct gemm_shared *sh, const struct gemm_opts *o, const struct sdc_variant *v,
		    uint64_t seed, struct sdc_gpu_gemm_cfg *c, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->seed = seed;
	c->timeout = o->gpu_timeout;
	c->pool_size = SDC_DIST_POOL;
	c->c_sigma = o->c_sigma;
	if (!sh->gpu_burn) {
		/* A CPU variant's lane: its sizes, data and layout, bit for bit (abft.c). */
		struct sdc_gemm g;
		if (sdc_gemm_init(&g, &sh->cfg, err, errlen))
			return -1;
		c->type = sh->cfg.cls == SDC_GEMM_INT8 ? SDC_GPU_INT8 : SDC_GPU_FP32;
		c->cls = (int)sh->cfg.cls;
		c->m = sh->cfg.m, c->n = sh->cfg.n, c->k = sh->cfg.k;
		c->n_ext = g.n_ext;
		c->ldc = g.ldc;
		c->base_log2 = g.layout.base_log2;
		c->nd1 = g.layout.nd1;
		c->nd2 = g.layout.nd2;
		c->amax = g.amax;
		c->bmax = g.cfg.cls == SDC_GEMM_INT8 ? 128 : g.bmax;
		sdc_gemm_release(&g);
		return 0;
	}
	if (sdc_gemm_gpu_burn_cfg((enum sdc_gpu_type)v->param[0], (int)o->gpu_m, (int)o->gpu_n, (int)o->gpu_k, seed, c,
				  err, errlen))
		return -1;
	c->extreme = o->gpu_data == 1;
	c->timeout = o->gpu_timeout;
	c->c_sigma = o->c_sigma;
	return 0;
}

int sdc_gemm_gpu_emax(const char *calibration, const char *model, enum sdc_gpu_type type, int k, double *emax,
		      char *source, size_t srclen, char *err, size_t errlen)
{
	const struct sdc_gpu_gemm_ops *m = SDC_GPU_FAMILY(gemm, SDC_GPU_GEMM_VERSION);
	struct sdc_calibration_key key;
	sdc_calibration_key_gpu(&key, model, m ? m->blas : "no GPU module");
	const char *prec = sdc_gemm_gpu_type_names[type];
	int deepest = 0;
	if (sdc_calibration_find(calibration, &key, prec, emax, &deepest, source, srclen, err, errlen) < 0)
		return -1;
	if (source[0] && deepest < k) {
		/* Measured no deeper than K=deepest: the error grows with the depth (sqrt(K), Table 7's
		 * accumulation), so a bound from shallower GEMMs would be too tight for the burn's (a
		 * calibration at 4096 by 2.3x at 32768). It grows as the default does. */
		const double scale = default_emax(type, k) / default_emax(type, deepest);
		*emax *= scale;
		const size_t len = strlen(source);
		snprintf(source + len, srclen - len, ", measured to K=%d: x%.4g for K=%d as the default grows (%s)", deepest,
			 scale, k, default_why(type));
	}
	if (!source[0]) {
		*emax = default_emax(type, k);
		snprintf(source, srclen,
			 "default, not a calibration: %.3g for %s at K=%d, %s; no calibration for %s, %s: "
			 "`sdcscan calibrate gemm --gpus all` makes one",
			 *emax, prec, k, default_why(type), model, key.library);
	}
	return 0;
}

int sdc_gemm_gpu_setup(struct sdc_probe_ctx *ctx, struct gemm_shared *sh, const struct gemm_opts *o)
{
	char err[256];
	if (!SDC_GPU_FAMILY(gemm, SDC_GPU_GEMM_VERSION))
		return sdc_ctx_error(ctx, "%s", sdc_gpu_family_why("gemm"));
	if (lane_cfg(sh, o, ctx->variant, ctx->seed, &sh->gcfg, err, sizeof(err)))
		return sdc_ctx_error(ctx, "%s", err);
	struct sdc_gpu_gemm_cfg *c = &sh->gcfg;
	sh->gpu = true;
	sh->gpu_refresh = sh->gpu_burn ? (uint64_t)o->gpu_refresh : sh->refresh;
	if (!sdc_gpu_type_exact(c->type)) {
		/* e_max: a calibration for this GPU model, else the type's default (the report says which). */
		const struct sdc_device *gpu = NULL;
		for (int d = 0; d < ctx->run->ndevices && !gpu; d++)
			if (ctx->run->devices[d].kind == SDC_DEVICE_GPU)
				gpu = &ctx->run->devices[d];
		char cerr[700];
		if (sdc_gemm_gpu_emax(o->calibration, gpu ? gpu->model : "unknown GPU", c->type, c->k, &c->emax,
				      sh->emax_source, sizeof(sh->emax_source), cerr, sizeof(cerr)))
			return sdc_ctx_error(ctx, "%s", cerr);
		if (!sh->npools) {
			for (int d = 0; d < 4; d++) {
				if (!sdc_opt_set_has(o->distributions, d))
					continue;
				if (sdc_dist_pool_init(&sh->pools[sh->npools], (enum sdc_dist)d, ctx->seed))
					return sdc_ctx_error(ctx, "out of memory for the distribution pools");
				sh->npools++;
			}
		}
	}
	snprintf(sh->gpu_operation, sizeof(sh->gpu_operation), "gemm %s %dx%dx%d (+%d checksum columns) on GPU",
		 ctx->variant->name, c->m, c->n, c->k, c->n_ext - c->n);
	if (sh->gpu_burn) {
		sdc_strlcpy(ctx->iter_unit, "GEMMs", sizeof(ctx->iter_unit));
		sdc_strlcpy(ctx->rate_unit, c->type == SDC_GPU_INT8 ? "TOP/s" : "TFLOP/s", sizeof(ctx->rate_unit));
		ctx->rate_scale = 1e12;
		ctx->floor = o->gpu_floor[c->type];
	}
	return 0;
}

/* ---- one GPU lane ---- */

/* ---- fault injection ---- */

static void inject(struct gemm_lane *l, char target)
{
	const struct sdc_gpu_gemm_cfg *c = &l->sh->gcfg;
	const char name[2] = { target, 0 };
	struct sdc_fault faults[8];
	const int nf = sdc_worker_faults(l->w, name, l->iter, faults, 8);
	for (int i = 0; i < nf; i++) {
		const struct sdc_fault *f = &faults[i];
		const int rows = target == 'A' ? c->m : target == 'B' ? c->k : c->m;
		const int cols = target == 'A' ? c->k : c->n_ext, data_cols = target == 'A' ? c->k : c->n;
		const int bits = 8 * (target == 'C' ? l->csz : l->esz);
		/* Drawn coordinates stay in the data columns; explicit ones may name a checksum column. */
		const int64_t row = f->row >= 0 ? f->row : sdc_fault_draw(f, 0, rows);
		const int64_t col = f->col >= 0 ? f->col : sdc_fault_draw(f, 1, data_cols);
		uint64_t now = 0;
		if (row < rows && col < cols &&
		    l->m->gemm_read(l->g, l->slot, target, (int)row, (int)col, 1, &now, l->err, sizeof(l->err))) {
			sdc_gemm_lane_error(l, "reading an element to inject into");
			return;
		}
		const bool is_float = bits == 32 && !(target == 'C' && c->type == SDC_GPU_INT8);
		const int bit = sdc_fault_bit(f, now, bits, is_float);
		if (row >= rows || col >= cols || bit >= bits) {
			sdc_worker_error(l->w, "--inject %s: row %" PRId64 ", col %" PRId64 ", bit %d outside %s (%d x %d, %d bits)",
					 l->w->ctx->run->inject[f->spec].text, row, col, bit, name, rows, cols, bits);
			continue;
		}
		uint64_t before, after;
		if (l->m->gemm_flip(l->g, l->slot, target, (int)row, (int)col, bit, &before, &after, l->err, sizeof(l->err))) {
			sdc_gemm_lane_error(l, "injecting a fault");
			return;
		}
		char hb[24], ha[24];
		sdc_hex_bits(hb, sizeof(hb), before, bits);
		sdc_hex_bits(ha, sizeof(ha), after, bits);
		sdc_worker_fault_applied(l->w, f, name, l->iter, row, col, bit, hb, ha);
	}
}

/* ---- the lane ---- */

static void lane_release(struct gemm_lane *l)
{
	if (l->g)
		l->m->gemm_destroy(l->g);
	sdc_gpu_truth_release(&l->truth);
	free(l->sums), free(l->bad), free(l->c_host), free(l->tiles), free(l->row), free(l->ref_i64), free(l->ref_f64);
}

/* Which faults are due at this iteration (the plan is only read): FAULT_AB, FAULT_C. */
#define FAULT_AB 1
#define FAULT_C 2

static int faults_due(struct gemm_lane *l, uint64_t iter)
{
	struct sdc_fault f[8];
	return (sdc_worker_faults(l->w, "A", iter, f, 8) || sdc_worker_faults(l->w, "B", iter, f, 8) ? FAULT_AB : 0) |
	       (sdc_worker_faults(l->w, "C", iter, f, 8) ? FAULT_C : 0);
}

/* As sdc_worker_continue, for the next submission: past the deadline only a first iteration. */
static bool may_submit(const struct gemm_lane *l, uint64_t iter)
{
	const struct sdc_worker *w = l->w;
	if (w->failed || (w->ctx->max_iterations && iter >= w->ctx->max_iterations))
		return false;
	if (sdc_stop_is_requested())
		return iter == 0 && !sdc_stop_is_hard() && !sdc_stop_interrupted();
	return true;
}

/*
 * Whether iteration iter takes the operands' fingerprints. The burn's: the last of its operand
 * set (the operands are compared with their load's before they are thrown away), and one with an
 * A or B fault due. Every GEMM's would re-read A and B, bytes a deeper k does not shrink (the
 * burn at 85% of plain by the roofline, issue 39); once a set, they cost 1/gpu_refresh of that. A
 * change at rest is still found before the set is redrawn, at the lane's end (verify_at_end), or
 * as soon as a row fails (the look takes them then, so no SM is blamed for a changed B); with
 * the GEMMs since the last fingerprint in its window. The lanes that vote with the CPUs take
 * them every GEMM: small, and their C is read back whole anyway.
 */
static bool fingerprinted(const struct gemm_lane *l, uint64_t iter, int faults)
{
	return !l->sh->gpu_burn || (faults & FAULT_AB) || (iter + 1) % l->sh->gpu_refresh == 0;
}

/*
 * Submits iteration l->iter into slot: A and B faults first, then the GEMM, the row checks and
 * (where fingerprinted) the operands' fingerprints; with a C fault due, the GEMM alone, the
 * fault, then the checks.
 */
static int submit(struct gemm_lane *l, int slot, int faults)
{
	l->slot = slot;
	inject(l, 'A');
	inject(l, 'B');
	if (l->w->failed)
		return -1;
	l->fingerprinted[slot] = fingerprinted(l, l->iter, faults);
	const int verify = SDC_GPU_CHECK | (l->fingerprinted[slot] ? SDC_GPU_FINGERPRINT : 0);
	if (!(faults & FAULT_C))
		return l->m->gemm_submit(l->g, slot, SDC_GPU_MULTIPLY | verify, l->err, sizeof(l->err));
	if (l->m->gemm_submit(l->g, slot, SDC_GPU_MULTIPLY, l->err, sizeof(l->err)))
		return -1;
	inject(l, 'C'); /* its read waits for the GEMM */
	if (l->w->failed)
		return -1;
	return l->m->gemm_submit(l->g, slot, verify, l->err, sizeof(l->err));
}

/*
 * The device's operand generator (probes/gemm/gemm_abft.cu) against the host's twin (gemm_data.h,
 * gpu_truth.c), once per burn lane on its first operand set: all of A, and up to eight rows of
 * B_ext with their checksum columns (the first, the last, some between), element by element. Findings'
 * expected values and the SM replay's right answers come from the host's twin, so the two must
 * agree bit for bit; a difference is named at its element.
 */
static void check_generator(struct gemm_lane *l)
{
	const struct sdc_gpu_gemm_cfg *c = &l->sh->gcfg;
	const int kp = (c->k + 15) / 16 * 16;
	const size_t a_elems = (size_t)c->m * (size_t)kp, chunk = (size_t)1 << 20; /* elements a read */
	uint8_t *buf = malloc(SDC_MAX(chunk, (size_t)c->n_ext) * (size_t)l->esz);
	if (!buf || sdc_gemm_lane_truth(l)) {
		free(buf);
		sdc_worker_error(l->w, "%s: out of host memory to check the operand generator", l->w->dev->id);
		return;
	}
	int reported = 0;
	uint64_t differ = 0;
	struct sdc_finding f;
	for (size_t e = 0; e < a_elems; e++) {
		if (e % chunk == 0) {
			/* A lies as m rows of kp: a linear read from (0, e) runs on across rows */
			const size_t count = SDC_MIN(chunk, a_elems - e);
			if (l->m->gemm_read(l->g, 0, 'A', (int)(e / (size_t)kp), (int)(e % (size_t)kp), (int)count, buf, l->err,
					    sizeof(l->err))) {
				sdc_gemm_lane_error(l, "reading A back");
				goto out;
			}
		}
		const int i = (int)(e / (size_t)kp), p = (int)(e % (size_t)kp);
		uint64_t have = 0;
		memcpy(&have, buf + (e % chunk) * (size_t)l->esz, (size_t)l->esz);
		const uint64_t want = sdc_gpu_truth_a(&l->truth, i, p);
		if (have == want)
			continue;
		differ++;
		if (reported++ < 4) {
			sdc_gemm_lane_finding(&f, l, "operand-generation", "A", i, p);
			sdc_finding_set_bits(&f, want, have, 8 * l->esz);
			snprintf(f.detail, sizeof(f.detail), "the GPU drew A[%d][%d] otherwise than the host's twin of its "
				 "generator", i, p);
			sdc_worker_report(l->w, &f);
		}
	}
	const int rows[8] = { 0, c->k - 1, c->k / 2, c->k / 3, c->k / 5, c->k / 7, c->k / 11, 1 % c->k };
	for (int r = 0; r < 8; r++) {
		const int p = rows[r];
		bool seen = false;
		for (int q = 0; q < r; q++)
			seen |= rows[q] == p;
		if (seen)
			continue;
		if (l->m->gemm_read(l->g, 0, 'B', p, 0, c->n_ext, buf, l->err, sizeof(l->err))) {
			sdc_gemm_lane_error(l, "reading B back");
			goto out;
		}
		for (int j = 0; j < c->n_ext; j++) {
			uint64_t have = 0;
			memcpy(&have, buf + (size_t)j * (size_t)l->esz, (size_t)l->esz);
			const uint64_t want = sdc_gpu_truth_b(&l->truth, p, j);
			if (have == want)
				continue;
			differ++;
			if (reported++ < 8) {
				sdc_gemm_lane_finding(&f, l, "operand-generation", "B", p, j);
				sdc_finding_set_bits(&f, want, have, 8 * l->esz);
				snprintf(f.detail, sizeof(f.detail), "the GPU %s B[%d][%d] otherwise than the host's twin",
					 j < c->n ? "drew" : "encoded", p, j);
				sdc_worker_report(l->w, &f);
			}
		}
	}
	if (differ > (uint64_t)SDC_MIN(reported, 8))
		l->w->corruptions += differ - (uint64_t)SDC_MIN(reported, 8);
out:
	free(buf);
}

/*
 * The GPU's own throughput for this product: plain cuBLASLt GEMMs (no checksum columns, no
 * checks) back to back for about a tenth of a second. The burn's rate as a share of it is how
 * busy the burn kept the GPU, measured rather than assumed.
 */
static void measure_reference(struct gemm_lane *l)
{
	const struct sdc_gpu_gemm_cfg *c = &l->sh->gcfg;
	const double ops = 2.0 * c->m * c->n * c->k;
	char err[256];
	double t0 = sdc_now();
	if (l->m->gemm_submit(l->g, 0, SDC_GPU_PLAIN, err, sizeof(err)) || l->m->gemm_sync(l->g, err, sizeof(err)))
		return; /* the burn meets the same failure and reports it */
	/* About a tenth of a second of GEMMs (at least 4, so the launches overlap as in the burn). */
	const double one = sdc_now() - t0;
	const int n = one >= 0.025 ? 4 : one * 4096 < 0.1 ? 4096 : (int)(0.1 / one) + 1;
	t0 = sdc_now();
	for (int i = 0; i < n; i++)
		if (l->m->gemm_submit(l->g, i % SDC_GPU_SLOTS, SDC_GPU_PLAIN, err, sizeof(err)))
			return;
	if (l->m->gemm_sync(l->g, err, sizeof(err)))
		return;
	const double t = sdc_now() - t0;
	if (t > 0) {
		l->w->ref_rate = n * ops / t;
		snprintf(l->w->ref_name, sizeof(l->w->ref_name), "plain %s", l->m->blas);
	}
}

void sdc_gemm_gpu_run(struct sdc_worker *w)
{
	const struct gemm_shared *sh = w->ctx->shared;
	const struct sdc_gpu_gemm_cfg *c = &sh->gcfg;
	struct gemm_lane l = { .w = w, .sh = sh, .m = SDC_GPU_FAMILY(gemm, SDC_GPU_GEMM_VERSION) };
	if (!l.m || !sh->gpu) {
		sdc_worker_error(w, "%s: %s", w->dev->id, l.m ? "no GPU lane set up" : sdc_gpu_family_why("gemm"));
		return;
	}
	l.esz = sdc_gpu_type_esz(c->type);
	l.csz = 4;
	sdc_gpu_truth_init(&l.truth, c);
	l.sums = malloc(sizeof(uint64_t) * 2 * (size_t)c->m);
	l.bad = malloc(sizeof(*l.bad) * (size_t)c->m);
	l.row = malloc((size_t)c->n_ext * 4);
	l.ref_i64 = malloc(sizeof(int64_t) * (size_t)c->n_ext);
	l.ref_f64 = malloc(sizeof(double) * (size_t)c->n_ext);
	if (sdc_gpu_type_exact(c->type))
		l.tiles = malloc(sizeof(uint32_t) * SDC_GPU_MAX_SMS * SDC_GPU_TILE * SDC_GPU_TILE);
	if (!sh->gpu_burn)
		l.c_host = malloc((size_t)c->m * (size_t)c->ldc * 4);
	if (!l.sums || !l.bad || !l.row || !l.ref_i64 || !l.ref_f64 || (sdc_gpu_type_exact(c->type) && !l.tiles) ||
	    (!sh->gpu_burn && !l.c_host)) {
		sdc_worker_error(w, "%s: out of host memory", w->dev->id);
		goto out;
	}
	if (!(l.g = l.m->gemm_create(c, l.err, sizeof(l.err)))) {
		sdc_gemm_lane_error(&l, "setting up the GEMM");
		goto out;
	}
	/* A fast type's bound that no calibration of this GPU model gave says so on its line (the
	 * report's emax_source says how the default was derived). */
	const bool emax_default = sh->gpu_burn && !sdc_gpu_type_exact(c->type) && !strncmp(sh->emax_source, "default", 7);
	snprintf(w->kernel, sizeof(w->kernel), "%s%s", emax_default ? "default e_max (uncalibrated), " : "",
		 l.m->gemm_kernel(l.g));
	if (sh->gpu_burn) {
		if (sdc_gemm_lane_load(&l, 0)) {
			sdc_gemm_lane_error(&l, "drawing the operands");
			goto out;
		}
		check_generator(&l);
		if (w->failed)
			goto out;
		measure_reference(&l);
		sdc_worker_restart_clock(w);
	}
	/*
	 * Two iterations in flight: iteration i + 1 is submitted before i is looked at, so the GPU
	 * computes while the host reads results and files findings. Where the operands are about to
	 * change (a new set, a fault to inject) the one in flight is looked at first.
	 */
	bool in_flight = false;
	int flight_slot = 0, next = 0;
	uint64_t flight_iter = 0, it = 0;
	bool redo = false;
	while (may_submit(&l, it)) {
		const uint64_t set = it / sh->gpu_refresh;
		const bool new_set = !l.loaded || l.set != set;
		l.iter = it;
		const int faults = faults_due(&l, it);
		if (in_flight && (new_set || faults)) {
			in_flight = false;
			if (sdc_gemm_lane_look(&l, flight_slot, flight_iter, &redo))
				break;
		}
		if ((new_set || !l.loaded) && sdc_gemm_lane_load(&l, set)) {
			sdc_gemm_lane_error(&l, "drawing the operands");
			break;
		}
		l.iter = it;
		if (submit(&l, next, faults)) {
			if (!w->failed)
				sdc_gemm_lane_error(&l, "multiplying");
			break;
		}
		if (in_flight) {
			if (sdc_gemm_lane_look(&l, flight_slot, flight_iter, &redo))
				break;
			if (redo) {
				/* it ran on the operands just found bad: throw it away and run it again */
				struct sdc_gpu_check chk = { .bad = l.bad };
				if (l.m->gemm_collect(l.g, next, NULL, &chk, l.err, sizeof(l.err))) {
					sdc_gemm_lane_error(&l, "multiplying and checking");
					break;
				}
				in_flight = false;
				continue;
			}
		}
		in_flight = true;
		flight_slot = next;
		flight_iter = it;
		next = (next + 1) % SDC_GPU_SLOTS;
		it++;
	}
	if (in_flight && !w->failed && !sdc_gemm_lane_look(&l, flight_slot, flight_iter, &redo) &&
	    !l.fingerprinted[flight_slot])
		sdc_gemm_lane_verify_at_end(&l, next, flight_iter);
out:
	lane_release(&l);
}
