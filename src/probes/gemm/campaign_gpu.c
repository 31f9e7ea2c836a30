/*
 * sdcscan campaign gemm --gpus: V-ABFT's Tables 4-5 form on a GPU, where the paper measured it
 * (cuBLAS on an H100): U(-1,1) operands, n x n x n, the burn's engine (cuBLASLt, the checksum
 * columns in the same call, the check on the device summing each row in double); every row comes
 * back (report_all) with its verification difference |E| and its V-ABFT threshold T at the
 * e_max the burn would use (a calibration, else the type's default: gpu.c's default_emax).
 * Targets: no row's threshold below its |E| (a false positive), for every type; for fp32-fast the
 * paper's FP32 range, 7-20x (Table 5), at every size.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/message.h"
#include "run/facts.h"
#include "device/gpu_loader.h"
#include "mpi/gpu_ranks.h"
#include "probes/gemm/gemm.h"
#include "base/stop.h"

static const enum sdc_gpu_type tight_types[] = { SDC_GPU_FP32_FAST, SDC_GPU_TF32_FAST, SDC_GPU_BF16_FAST };

struct tight_stats {
	double sum_e, max_e, sum_t, min_ratio;
	uint64_t rows, false_positives;
};

static int tight_size(const struct sdc_gpu_gemm_ops *m, enum sdc_gpu_type type, int n, double emax, uint64_t reps,
		      uint64_t seed, const double *pool, struct tight_stats *st, char *err, size_t errlen)
{
	struct sdc_gpu_gemm_cfg cfg;
	if (sdc_gemm_gpu_burn_cfg(type, n, n, n, seed, &cfg, err, errlen))
		return -1;
	cfg.emax = emax;
	cfg.report_all = 1;
	struct sdc_gpu_check chk = { .bad = malloc(sizeof(struct sdc_gpu_bad_row) * (size_t)n) };
	struct sdc_gpu_gemm *g = chk.bad ? m->gemm_create(&cfg, err, errlen) : NULL;
	int rc = -1;
	if (!chk.bad)
		snprintf(err, errlen, "out of memory");
	st->min_ratio = INFINITY;
	for (uint64_t r = 0; g && r < reps; r++) {
		if (sdc_stop_is_requested()) {
			snprintf(err, errlen, "interrupted");
			goto out;
		}
		if (m->gemm_load(g, r, pool, err, errlen) || m->gemm_submit(g, 0, SDC_GPU_MULTIPLY | SDC_GPU_CHECK, err, errlen) ||
		    m->gemm_collect(g, 0, NULL, &chk, err, errlen))
			goto out;
		if (chk.nbad != n) {
			snprintf(err, errlen, "the check returned %d rows of %d", chk.nbad, n);
			goto out;
		}
		for (int i = 0; i < n; i++) {
			const double e = fabs(chk.bad[i].d1), t = chk.bad[i].t1;
			st->sum_e += e;
			st->max_e = SDC_MAX(st->max_e, e);
			st->sum_t += t;
			if (e > 0)
				st->min_ratio = SDC_MIN(st->min_ratio, t / e);
			st->false_positives += !(e <= t);
		}
		st->rows += (uint64_t)n;
	}
	rc = g ? 0 : -1;
out:
	if (g)
		m->gemm_destroy(g);
	free(chk.bad);
	return rc;
}

int sdc_gemm_campaign_gpu(struct sdc_run *run, const int *sizes, int nsizes, uint64_t reps, const char *calibration,
			  struct sdc_facts *out, bool *targets_met)
{
	char err[700];
	const struct sdc_device *gpu = sdc_gpu_first_bound(run, err, sizeof(err));
	if (!gpu) {
		sdc_error("campaign: %s", err);
		return -1;
	}
	const struct sdc_gpu_gemm_ops *m = SDC_GPU_FAMILY(gemm, SDC_GPU_GEMM_VERSION);
	if (!m) {
		sdc_error("campaign: %s", sdc_gpu_family_why("gemm"));
		return -1;
	}
	struct sdc_dist_pool pool;
	if (sdc_dist_pool_init(&pool, SDC_DIST_UNIFORM, run->seed)) {
		sdc_error("campaign: out of memory");
		return -1;
	}
	printf("sdcscan campaign gemm on %s (%s, %s), %s, seed %" PRIu64 "\n", gpu->id, gpu->model, gpu->gpu.pci_bus_id,
	       m->blas, run->seed);
	struct sdc_facts *types = sdc_facts_new();
	int rc = 0;
	for (size_t p = 0; p < SDC_ARRAY_SIZE(tight_types) && !rc; p++) {
		const enum sdc_gpu_type type = tight_types[p];
		const char *tname = sdc_gemm_gpu_type_names[type];
		const bool paper = type == SDC_GPU_FP32_FAST;
		printf("\nV-ABFT Table 5 form on the GPU (%s, U(-1,1), n x n x n, %" PRIu64 " GEMMs per size): mean |E| of "
		       "the row checksum\nagainst the row summed in double on the device, mean V-ABFT threshold T, "
		       "tightness = T / |E|\n",
		       tname, reps);
		printf("%6s %10s %10s %10s %8s %9s %8s  %s\n", "n", "actual |E|", "max |E|", "V-ABFT T", "V-tight",
		       "min T/|E|", "false +", paper ? "| paper (FP32, H100): actual  V-ABFT T  V-tight" : "");
		sdc_facts_list(types, tname); /* (the types' names hold no dot: each is one name) */
		int in_range = 0, done = 0;
		uint64_t false_rows = 0;
		char source[512] = "";
		for (int s = 0; s < nsizes && !rc; s++) {
			const int n = sizes[s];
			double emax;
			if (sdc_gemm_gpu_emax(calibration, gpu->model, type, n, &emax, source, sizeof(source), err,
					      sizeof(err))) {
				sdc_error("campaign: %s", err);
				rc = -1;
				break;
			}
			struct tight_stats st = { 0 };
			if (tight_size(m, type, n, emax, reps, run->seed, pool.v, &st, err, sizeof(err))) {
				sdc_error("campaign: %s %s n=%d: %s", gpu->id, tname, n, err);
				rc = -1;
				break;
			}
			const double ae = st.sum_e / (double)st.rows, at = st.sum_t / (double)st.rows;
			printf("%6d %10.3g %10.3g %10.3g %7.1fx %8.2fx %8" PRIu64, n, ae, st.max_e, at, at / ae, st.min_ratio,
			       st.false_positives);
			for (int q = 0; paper && q < 5; q++)
				if (sdc_vabft_t5[q].n == n)
					printf("  |        %9.3g %10.3g %7.0fx", sdc_vabft_t5[q].actual, sdc_vabft_t5[q].v_t,
					       sdc_vabft_t5[q].v_tight);
			printf("\n");
			struct sdc_facts *row = sdc_facts_row(types, tname);
			sdc_facts_int(row, "n", n);
			sdc_facts_int(row, "rows", (int64_t)st.rows);
			sdc_facts_real(row, "mean_abs_e", ae);
			sdc_facts_real(row, "max_abs_e", st.max_e);
			sdc_facts_real(row, "mean_threshold", at);
			sdc_facts_real(row, "tightness", at / ae);
			sdc_facts_real(row, "min_ratio", isfinite(st.min_ratio) ? st.min_ratio : 0.0);
			sdc_facts_int(row, "false_positive_rows", (int64_t)st.false_positives);
			sdc_facts_real(row, "emax", emax);
			sdc_facts_str(row, "emax_source", source);
			false_rows += st.false_positives;
			*targets_met &= st.false_positives == 0;
			in_range += at / ae >= 7 && at / ae <= 20;
			done++;
		}
		if (rc)
			break;
		printf("e_max: %s\n", source);
		printf("target: no threshold below its row's |E|: %" PRIu64 " false positive rows: %s\n", false_rows,
		       false_rows ? "MISSED" : "met");
		if (paper) {
			printf("target: V-ABFT's FP32 range (7-20x, Table 5) at every size: %d of %d sizes in range: %s\n", in_range,
			       done, in_range == done ? "met" : "MISSED");
			*targets_met &= in_range == done;
		}
	}
	sdc_dist_pool_release(&pool);
	if (rc) {
		sdc_facts_free(types);
		return -1;
	}
	sdc_facts_str(out, "gpu_tightness.device", gpu->id);
	sdc_facts_str(out, "gpu_tightness.name", gpu->model);
	sdc_facts_str(out, "gpu_tightness.uuid", gpu->gpu.uuid);
	sdc_facts_str(out, "gpu_tightness.blas", m->blas);
	sdc_facts_put(out, "gpu_tightness.types", types);
	return 0;
}
