/*
 * sdcscan bench overhead --gpus (and bench gemm --gpus): on one GPU, plain cuBLASLt against the
 * checked GEMM the burn runs, per type and size, side by side in one run (contenders interleaved
 * in rounds, medians, probe/bench_race.h). Three contenders, each a batch of GEMMs ending in a wait:
 *   plain    C = A B, the data columns only, back to back: the GPU's own throughput;
 *   checked  C = A B_ext (the checksum columns in the same call) and every row checked on the
 *            device, two in flight as the burn keeps them: the ABFT-checked GEMM;
 *   burn     checked, and the operands' fingerprints taken once every gpu_refresh GEMMs (its
 *            default, SDC_GEMM_GPU_REFRESH), as the burn takes them: what the burn pays.
 * Target: checked at least 95% of plain (FT-GEMM's fused checked GEMM came within 4.5% of
 * cuBLAS). The load column is drawing and encoding one operand set, paid once every gpu_refresh
 * GEMMs, as a share of one plain GEMM.
 *
 * Beside each measurement, what the design allows by the roofline (probe/roofline.h) on the GPU's
 * model: the checked product's columns (ldc of them: the checksum columns and the padding) at the
 * type's dense peak, then the row check, a kernel of its own re-reading C, at the memory's
 * bandwidth. A share the roofline puts below the target is MISSED by design, whatever was timed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/bench_race.h"
#include "probe/roofline.h"
#include "device/gpu_loader.h"
#include "mpi/gpu_ranks.h"
#include "base/message.h"
#include "base/clock.h"
#include "probes/gemm/gemm.h"

#define TARGET_SHARE 0.95

struct gpu_case {
	const struct sdc_gpu_gemm_ops *m;
	struct sdc_gpu_gemm *g;
	int what;             /* SDC_GPU_PLAIN, or MULTIPLY | CHECK [| FINGERPRINT] */
	int batch;            /* GEMMs a call */
	long done;            /* GEMMs submitted, every call: FINGERPRINT goes on each SDC_GEMM_GPU_REFRESHth */
	struct sdc_gpu_check chk;
	long failures;        /* rows that failed their check */
	char err[256];
	bool failed;
};

/* One call: batch GEMMs; checked ones two in flight, each collected as the burn does. */
static void call_gpu(void *arg)
{
	struct gpu_case *t = arg;
	if (t->failed)
		return;
	const bool collect = t->what != SDC_GPU_PLAIN;
	for (int i = 0; i < t->batch; i++) {
		const bool fp_due = ++t->done % SDC_GEMM_GPU_REFRESH == 0;
		if (t->m->gemm_submit(t->g, i % SDC_GPU_SLOTS, fp_due ? t->what : t->what & ~SDC_GPU_FINGERPRINT, t->err,
				      sizeof(t->err)))
			goto fail;
		if (collect && i > 0) {
			if (t->m->gemm_collect(t->g, (i - 1) % SDC_GPU_SLOTS, NULL, &t->chk, t->err, sizeof(t->err)))
				goto fail;
			t->failures += t->chk.nbad;
		}
	}
	if (collect) {
		if (t->m->gemm_collect(t->g, (t->batch - 1) % SDC_GPU_SLOTS, NULL, &t->chk, t->err, sizeof(t->err)))
			goto fail;
		t->failures += t->chk.nbad;
	} else if (t->m->gemm_sync(t->g, t->err, sizeof(t->err))) {
		goto fail;
	}
	return;
fail:
	t->failed = true;
}

/* Seconds of one plain GEMM, from a short batch after a warm-up; < 0 on failure. */
static double plain_seconds(struct gpu_case *t)
{
	t->what = SDC_GPU_PLAIN;
	t->batch = 2;
	call_gpu(t);
	const double t0 = sdc_now();
	t->batch = 4;
	call_gpu(t);
	return t->failed ? -1 : (sdc_now() - t0) / 4;
}

/* The dense peak a type's GEMM runs at (gemm.cu's blas_types: int8 on IMMA, bf16 and fp16 on the
 * tensor cores with fp32 accumulation, tf32-fast on TF32, fp32 and fp32-fast on the CUDA cores). */
static enum sdc_rl_peak type_peak(enum sdc_gpu_type t)
{
	switch (t) {
	case SDC_GPU_INT8:
		return SDC_RL_INT8;
	case SDC_GPU_BF16:
	case SDC_GPU_FP16:
	case SDC_GPU_BF16_FAST:
		return SDC_RL_FP16;
	case SDC_GPU_TF32_FAST:
		return SDC_RL_TF32;
	default:
		return SDC_RL_FP32;
	}
}

void sdc_gemm_gpu_check_bytes(const struct sdc_gpu_gemm_cfg *c, struct sdc_gemm_check_bytes *b)
{
	/*
	 * k_check_exact and k_check_fast (gemm_abft.cu): a block a row of C, its threads reading the
	 * data columns [0, n) and its thread 0 the checksum columns [n, n_ext), 4 bytes each (int32 or
	 * fp32); the fast check also reads the row's two thresholds (doubles). Each row's two sums are
	 * written (8 bytes each); a failing row's record too (none in a clean check). C's rows start on
	 * a sector (ldc is a multiple of 16 elements: 64 bytes); the thresholds and sums are arrays.
	 */
	const bool fast = !sdc_gpu_type_exact(c->type);
	const uint64_t m = (uint64_t)c->m, row = (uint64_t)c->n_ext * 4;
	b->read = (double)(m * row + (fast ? m * 16 : 0));
	b->written = (double)(m * 16);
	b->dram = (double)m * sdc_rl_run_bytes(0, row) + (fast ? 2 * sdc_rl_run_bytes(0, m * 8) : 0) +
		  sdc_rl_run_bytes(0, m * 16);
}

void sdc_gemm_gpu_roofline(const struct sdc_rl_gpu *gpu, const struct sdc_gpu_gemm_cfg *c, int refresh,
			   struct sdc_rl_checked *out, double *burn_share)
{
	/* gemm.cu: the plain call multiplies n rounded up to 16 columns (at most ldc), the checked one
	 * all ldc of B_ext's rows (checksum columns and zero padding alike); both over k rounded up to 16 */
	const int n16 = (c->n + 15) / 16 * 16, n_plain = n16 < c->ldc ? n16 : c->ldc, kp = (c->k + 15) / 16 * 16;
	struct sdc_gemm_check_bytes b;
	sdc_gemm_gpu_check_bytes(c, &b);
	sdc_rl_checked_gemm(gpu->peak[type_peak(c->type)], gpu->bandwidth, c->m, n_plain, c->ldc, kp, b.dram, out);
	/* the burn also takes the operands' fingerprints once a set of refresh GEMMs (k_fingerprint: all
	 * of A, m rows of kp elements, and of Bt, ldc rows of kp): bytes that do not shrink against the
	 * product with k, only with m and n; every GEMM's would cost int8 at 4096x4096x32768 a tenth */
	if (burn_share) {
		const double fp = ((double)c->m + c->ldc) * kp * sdc_gpu_type_esz(c->type) / gpu->bandwidth / refresh;
		*burn_share = out->t_plain / (out->t_product + out->t_check + fp);
	}
}

/* What a row's numbers are, measured and by design. */
struct row_result {
	double share_c, share_b, q1, q3, load; /* shares of plain; load: of one plain GEMM */
	bool measured_ok;
	bool designed;     /* a roofline for this GPU */
	bool design_ok;
	struct sdc_rl_checked rl;
	double rl_burn;    /* the burn's share by the roofline (fingerprints too) */
	char design[64];   /* "met by design (roofline 99.2%)" */
	uint64_t measured_bytes; /* bytes the fake's row check read (0: not counted: the CUDA module) */
	struct sdc_gemm_check_bytes model;
};

/* Prints the row (and its notes) and states it in the JSON. */
static void put_row(const struct sdc_gpu_gemm_cfg *cfg, const struct sdc_contender *c, const struct row_result *r,
		    const char *kernel, struct sdc_facts *out)
{
	const char *tname = sdc_gemm_gpu_type_names[cfg->type], *unit = cfg->type == SDC_GPU_INT8 ? "TOP/s" : "TFLOP/s";
	const double scale = 1e3; /* the race's 1e9 operations per second, as T(FL)OP/s */
	const bool ok = r->measured_ok && (!r->designed || r->design_ok);
	char size[40], rl[16] = "-";
	snprintf(size, sizeof(size), "%dx%dx%d", cfg->m, cfg->n, cfg->k);
	if (r->designed)
		snprintf(rl, sizeof(rl), "%.1f%%", 100 * r->rl.share);
	printf("%-9s %17s %9.1f %9.1f %9.1f %-7s %6.1f%% %6.1f%% %6.1f%% %8s  %s%s%s\n", tname, size, c[0].rate / scale,
	       c[1].rate / scale, c[2].rate / scale, unit, 100 * r->share_c, 100 * r->share_b, 100 * r->load, rl,
	       r->measured_ok ? "met" : "MISSED", r->designed ? ", " : "", r->designed ? r->design : "");
	if (r->designed && r->rl_burn < TARGET_SHARE)
		printf("%-9s the burn by the roofline: %.1f%% (its fingerprints once every %d GEMMs re-read A and B: "
		       "bytes a deeper k does not shrink)\n",
		       "", 100 * r->rl_burn, SDC_GEMM_GPU_REFRESH);
	if (r->designed && r->share_c > r->rl.share + 0.02)
		printf("%-9s note: measured %.1f%%, above the roofline's %.1f%%: the model leaves something out\n", "",
		       100 * r->share_c, 100 * r->rl.share);
	if (r->measured_bytes)
		printf("%-9s bytes read per check: measured %llu (fake) vs model %.0f%s\n", "",
		       (unsigned long long)r->measured_bytes, r->model.read,
		       (double)r->measured_bytes == r->model.read ? "" : "  DIFFERENT");
	struct sdc_facts *row = sdc_facts_row(out, "rows");
	sdc_facts_str(row, "type", tname);
	sdc_facts_int(row, "m", cfg->m);
	sdc_facts_int(row, "n", cfg->n);
	sdc_facts_int(row, "k", cfg->k);
	sdc_facts_str(row, "unit", unit);
	sdc_facts_real(row, "plain", c[0].rate / scale);
	sdc_facts_real(row, "checked", c[1].rate / scale);
	sdc_facts_real(row, "burn", c[2].rate / scale);
	sdc_facts_real(row, "checked_share", r->share_c);
	sdc_facts_real(row, "checked_share_q1", r->q1);
	sdc_facts_real(row, "checked_share_q3", r->q3);
	sdc_facts_real(row, "burn_share", r->share_b);
	sdc_facts_real(row, "load_share", r->load);
	sdc_facts_real(row, "check_bytes_model", r->model.read);
	if (r->measured_bytes)
		sdc_facts_int(row, "check_bytes_measured", (int64_t)r->measured_bytes);
	if (r->designed) {
		sdc_facts_real(row, "roofline_share", r->rl.share);
		sdc_facts_real(row, "roofline_product_s", r->rl.t_product);
		sdc_facts_real(row, "roofline_check_s", r->rl.t_check);
		sdc_facts_real(row, "roofline_burn_share", r->rl_burn);
		sdc_facts_bool(row, "design_met", r->design_ok);
	}
	sdc_facts_str(row, "kernel", kernel);
	sdc_facts_bool(row, "target_met", ok);
}

/* One row of the table; returns 0, or -1 after printing why the GPU could not be measured. */
static int bench_one(const struct sdc_gpu_gemm_ops *m, const struct sdc_rl_gpu *gpu, enum sdc_gpu_type type,
		     struct sdc_size3 sz, double seconds, const double *pool, struct sdc_facts *out, bool *met, long *failures)
{
	struct sdc_gpu_gemm_cfg cfg;
	char err[256];
	const char *tname = sdc_gemm_gpu_type_names[type];
	if (sdc_gemm_gpu_burn_cfg(type, sz.m, sz.n, sz.k, 1, &cfg, err, sizeof(err))) {
		printf("%-9s %7dx%dx%d  cannot run: %s\n", tname, sz.m, sz.n, sz.k, err);
		return 0;
	}
	struct gpu_case base = { .m = m };
	base.chk.bad = malloc(sizeof(*base.chk.bad) * (size_t)sz.m);
	if (!base.chk.bad || !(base.g = m->gemm_create(&cfg, err, sizeof(err)))) {
		sdc_error("bench: %s %dx%dx%d: %s", tname, sz.m, sz.n, sz.k, base.chk.bad ? err : "out of memory");
		free(base.chk.bad);
		return -1;
	}
	int rc = -1;
	double t0 = sdc_now();
	if (m->gemm_load(base.g, 0, sdc_gpu_type_exact(type) ? NULL : pool, err, sizeof(err))) {
		sdc_error("bench: %s: drawing the operands: %s", tname, err);
		goto out;
	}
	const double load = sdc_now() - t0;
	const double one = plain_seconds(&base);
	if (one < 0) {
		sdc_error("bench: %s: %s", tname, base.err);
		goto out;
	}
	/* Batches of about 20 ms: a wait's cost is small against them, and rounds hold several. */
	base.batch = one >= 0.02 ? 2 : (int)(0.02 / one) + 2;
	struct gpu_case cases[3] = { base, base, base };
	cases[0].what = SDC_GPU_PLAIN;
	cases[1].what = SDC_GPU_MULTIPLY | SDC_GPU_CHECK;
	cases[2].what = SDC_GPU_MULTIPLY | SDC_GPU_CHECK | SDC_GPU_FINGERPRINT;
	struct sdc_contender c[3] = {
		{ .name = "plain", .call = call_gpu, .arg = &cases[0] },
		{ .name = "checked", .call = call_gpu, .arg = &cases[1] },
		{ .name = "burn", .call = call_gpu, .arg = &cases[2] },
	};
	const double ops = 2.0 * sz.m * sz.n * sz.k * base.batch;
	sdc_bench_race(c, 3, ops, seconds);
	for (int i = 0; i < 3; i++) {
		if (cases[i].failed) {
			sdc_error("bench: %s %s: %s", tname, c[i].name, cases[i].err);
			goto out;
		}
		*failures += cases[i].failures;
	}
	/* Shares round by round (plain and checked measured back to back), their median. */
	double qc[3], qb[3];
	sdc_bench_overhead(&c[0], &c[1], qc);
	sdc_bench_overhead(&c[0], &c[2], qb);
	struct row_result r = { .share_c = 1.0 / (1.0 + qc[1]), .share_b = 1.0 / (1.0 + qb[1]),
				.q1 = 1.0 / (1.0 + qc[2]), .q3 = 1.0 / (1.0 + qc[0]), .load = load / one,
				.designed = gpu != NULL, .measured_bytes = cases[1].chk.check_bytes };
	r.measured_ok = r.share_c >= TARGET_SHARE;
	sdc_gemm_gpu_check_bytes(&cfg, &r.model);
	if (gpu) {
		sdc_gemm_gpu_roofline(gpu, &cfg, SDC_GEMM_GPU_REFRESH, &r.rl, &r.rl_burn);
		r.design_ok = sdc_rl_verdict(r.rl.share, TARGET_SHARE, true, r.design, sizeof(r.design));
	}
	*met = *met && r.measured_ok && (!gpu || r.design_ok);
	put_row(&cfg, c, &r, m->gemm_kernel(base.g), out);
	rc = 0;
out:
	m->gemm_destroy(base.g);
	free(base.chk.bad);
	return rc;
}

int sdc_gemm_bench_gpu(struct sdc_cmd *cmd, struct sdc_run *run, const struct sdc_size3 *sizes, int nsizes,
		       double seconds, uint32_t types)
{
	char err[512];
	const struct sdc_device *gpu = sdc_gpu_first_bound(run, err, sizeof(err));
	if (!gpu) {
		sdc_error("bench: %s", err);
		return sdc_cli_unknown(&cmd->cli);
	}
	const struct sdc_gpu_gemm_ops *m = SDC_GPU_FAMILY(gemm, SDC_GPU_GEMM_VERSION);
	if (!m) {
		sdc_error("bench: %s", sdc_gpu_family_why("gemm"));
		return sdc_cli_unknown(&cmd->cli);
	}
	struct sdc_dist_pool pool;
	if (sdc_dist_pool_init(&pool, SDC_DIST_NORMAL, 1)) {
		sdc_error("bench: out of memory");
		return sdc_cli_unknown(&cmd->cli);
	}
	printf("sdcscan bench overhead on %s (%s, %d SMs, %s), %s, CUDA runtime %s; contenders interleaved in %d "
	       "rounds, median round, %.1f s per contender and size\n",
	       gpu->id, gpu->model, gpu->gpu.sm_count, gpu->gpu.pci_bus_id, m->blas, sdc_gpu_ops()->cuda_runtime,
	       SDC_BENCH_ROUNDS, seconds);
	printf("plain: C = A B by cuBLASLt, back to back. checked: C = A B_ext (checksum columns in the same call) and "
	       "every row\nchecked on the GPU, two GEMMs in flight. burn: checked and the operands' fingerprints once "
	       "every %d GEMMs.\nshares: the median over rounds of checked/plain and burn/plain measured back to back; "
	       "load: drawing and\nencoding one operand set (once every gpu_refresh GEMMs) as a share of one plain GEMM. "
	       "Target: checked >= %.0f%% of plain.\n",
	       SDC_GEMM_GPU_REFRESH, 100 * TARGET_SHARE);
	char why[160];
	const struct sdc_rl_gpu *rl = sdc_rl_find(gpu->model, why, sizeof(why));
	sdc_rl_print(rl, why);
	if (rl)
		printf("roofline column: checked/plain by design, t_plain / (t_product + t_check): the checked product's ldc "
		       "columns at the\ntype's dense peak, then the row check's DRAM bytes (C re-read, sums written) at the "
		       "memory's bandwidth.\n");
	printf("%-9s %17s %9s %9s %9s %-7s %7s %7s %7s %8s  %s\n", "type", "m x n x k", "plain", "checked", "burn", "",
	       "checked", "burn", "load", "roofline", "target");
	/* (the JSON's order: the GPU, the target, the roofline, the rows, the failures) */
	struct sdc_facts *out = sdc_facts_new();
	sdc_facts_str(out, "gpu.device", gpu->id);
	sdc_facts_str(out, "gpu.name", gpu->model);
	sdc_facts_str(out, "gpu.uuid", gpu->gpu.uuid);
	sdc_facts_str(out, "gpu.blas", m->blas);
	sdc_facts_real(out, "target_share", TARGET_SHARE);
	sdc_rl_facts(out, rl, why);
	sdc_facts_list(out, "rows");
	bool met = true;
	long failures = 0;
	int rc = 0;
	for (int t = 0; t < SDC_GPU_NTYPES && !rc; t++) {
		if (!(types & (1u << t)))
			continue;
		for (int i = 0; i < nsizes && !rc; i++)
			rc = bench_one(m, rl, (enum sdc_gpu_type)t, sizes[i], seconds, pool.v, out, &met, &failures);
	}
	sdc_dist_pool_release(&pool);
	if (rc) {
		sdc_facts_free(out);
		return sdc_cli_unknown(&cmd->cli);
	}
	if (failures)
		printf("note: %ld rows failed their check during the benchmark: %s needs a closer look (sdcscan run)\n",
		       failures, gpu->id);
	sdc_facts_int(out, "check_failures", failures);
	const int code = sdc_cli_facts_end(&cmd->cli, out, met);
	sdc_facts_free(out);
	return code;
}
