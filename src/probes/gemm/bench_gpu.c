/*
 * sdcscan bench overhead --gpus (and bench gemm --gpus): on one GPU, plain cuBLASLt against the
 * checked GEMM the burn runs, per type and size, side by side in one run (contenders interleaved
 * in rounds, medians, probe/bench_race.h). Three contenders, each a batch of GEMMs ending in a wait:
 *   plain    C = A B, the data columns only, back to back: the GPU's own throughput;
 *   checked  C = A B_ext (the checksum columns in the same call) and every row checked on the
 *            device, two in flight as the burn keeps them: the ABFT-checked GEMM;
 *   burn     checked, and the operands' fingerprints taken after every GEMM: what the burn pays.
 * Target: checked at least 95% of plain (FT-GEMM's fused checked GEMM came within 4.5% of
 * cuBLAS). The load column is drawing and encoding one operand set, paid once every gpu_refresh
 * GEMMs, as a share of one plain GEMM.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/bench_race.h"
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
		if (t->m->gemm_submit(t->g, i % SDC_GPU_SLOTS, t->what, t->err, sizeof(t->err)))
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

/* One row of the table; returns 0, or -1 after printing why the GPU could not be measured. */
static int bench_one(const struct sdc_gpu_gemm_ops *m, enum sdc_gpu_type type, struct sdc_size3 sz, double seconds,
		     const double *pool, struct sdc_facts *out, bool *met, long *failures)
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
	const double share_c = 1.0 / (1.0 + qc[1]), share_b = 1.0 / (1.0 + qb[1]);
	const bool ok = share_c >= TARGET_SHARE;
	*met = *met && ok;
	const double scale = 1e3; /* the race's 1e9 operations per second, as T(FL)OP/s */
	char size[40];
	snprintf(size, sizeof(size), "%dx%dx%d", sz.m, sz.n, sz.k);
	printf("%-9s %17s %9.1f %9.1f %9.1f %-7s %6.1f%% %6.1f%% %6.1f%%  %s\n", tname, size, c[0].rate / scale, c[1].rate / scale, c[2].rate / scale, type == SDC_GPU_INT8 ? "TOP/s" : "TFLOP/s",
	       100.0 * share_c, 100.0 * share_b, 100.0 * load / one, ok ? "met" : "MISSED");
	struct sdc_facts *row = sdc_facts_row(out, "rows");
	sdc_facts_str(row, "type", tname);
	sdc_facts_int(row, "m", sz.m);
	sdc_facts_int(row, "n", sz.n);
	sdc_facts_int(row, "k", sz.k);
	sdc_facts_str(row, "unit", type == SDC_GPU_INT8 ? "TOP/s" : "TFLOP/s");
	sdc_facts_real(row, "plain", c[0].rate / scale);
	sdc_facts_real(row, "checked", c[1].rate / scale);
	sdc_facts_real(row, "burn", c[2].rate / scale);
	sdc_facts_real(row, "checked_share", share_c);
	sdc_facts_real(row, "checked_share_q1", 1.0 / (1.0 + qc[2]));
	sdc_facts_real(row, "checked_share_q3", 1.0 / (1.0 + qc[0]));
	sdc_facts_real(row, "burn_share", share_b);
	sdc_facts_real(row, "load_share", load / one);
	sdc_facts_str(row, "kernel", m->gemm_kernel(base.g));
	sdc_facts_bool(row, "target_met", ok);
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
	       "every row\nchecked on the GPU, two GEMMs in flight. burn: checked and the operands' fingerprints after "
	       "every GEMM.\nshares: the median over rounds of checked/plain and burn/plain measured back to back; load: "
	       "drawing and\nencoding one operand set (once every gpu_refresh GEMMs) as a share of one plain GEMM. "
	       "Target: checked >= %.0f%% of plain.\n",
	       100 * TARGET_SHARE);
	printf("%-9s %17s %9s %9s %9s %-7s %7s %7s %7s  %s\n", "type", "m x n x k", "plain", "checked", "burn", "",
	       "checked", "burn", "load", "target");
	/* (the JSON's order: the GPU, the target, the rows, the failures) */
	struct sdc_facts *out = sdc_facts_new();
	sdc_facts_str(out, "gpu.device", gpu->id);
	sdc_facts_str(out, "gpu.name", gpu->model);
	sdc_facts_str(out, "gpu.uuid", gpu->gpu.uuid);
	sdc_facts_str(out, "gpu.blas", m->blas);
	sdc_facts_real(out, "target_share", TARGET_SHARE);
	sdc_facts_list(out, "rows");
	bool met = true;
	long failures = 0;
	int rc = 0;
	for (int t = 0; t < SDC_GPU_NTYPES && !rc; t++) {
		if (!(types & (1u << t)))
			continue;
		for (int i = 0; i < nsizes && !rc; i++)
			rc = bench_one(m, (enum sdc_gpu_type)t, sizes[i], seconds, pool.v, out, &met, &failures);
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
