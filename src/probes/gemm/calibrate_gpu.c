/*
 * sdcscan calibrate gemm --gpus: V-ABFT's calibration protocol (Gao et al. §3.6) on GPUs, with
 * the engine the burn runs (cuBLASLt, the checksum columns in the same call, the row checks on
 * the device): positive |N(1,1)| operands, every row's relative verification error
 * max(|E1| / |s1|, |E2| / |s2|) over many GEMMs per type and size, e_max = the maximum plus 20%.
 *
 * The engine reports every row (report_all) with its verification differences. The result is one entry per GPU model and library in the file's "gpus" section, which the
 * burn's fast types read (sdc_calibration_find).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/message.h"
#include "base/clock.h"
#include "run/facts.h"
#include "device/gpu_loader.h"
#include "probes/gemm/calibration.h"
#include "probes/gemm/gemm.h"
#include "base/stop.h"

#define MARGIN 0.2
/* Rows and columns of a calibration GEMM at most: its error grows with the depth K, which is
 * measured as deep as the burn's; fewer columns sum fewer rounded products into each checksum,
 * whose relative error is then no smaller (a bound on the safe side), and a GEMM as deep as the
 * burn's costs 1024 x 1024 x 32768, 69 GFLOP, not 4096^2 x 32768's 1.1 TFLOP. */
#define MAX_ROWS 1024

/* The GPU's fast types a calibration covers, in the order --gpu-precisions names them. */
static const enum sdc_gpu_type fast_types[] = { SDC_GPU_FP32_FAST, SDC_GPU_TF32_FAST, SDC_GPU_BF16_FAST };

struct size_stats {
	double max_rel;
	uint64_t gemms, rows;
};

/* trials GEMMs of type at depth k (n x n x k, n = min(k, MAX_ROWS)) on the bound GPU; the largest
 * relative error into st. */
static int calibrate_one(const struct sdc_gpu_gemm_ops *m, enum sdc_gpu_type type, int k, uint64_t trials, uint64_t seed,
			 const double *pool, struct size_stats *st, char *err, size_t errlen)
{
	const int n = k < MAX_ROWS ? k : MAX_ROWS;
	struct sdc_gpu_gemm_cfg cfg;
	if (sdc_gemm_gpu_burn_cfg(type, n, n, k, seed, &cfg, err, errlen))
		return -1;
	cfg.report_all = 1;
	uint64_t *sums = malloc(sizeof(uint64_t) * 2 * (size_t)n);
	struct sdc_gpu_check chk = { .bad = malloc(sizeof(struct sdc_gpu_bad_row) * (size_t)n) };
	struct sdc_gpu_gemm *g = sums && chk.bad ? m->gemm_create(&cfg, err, errlen) : NULL;
	int rc = -1;
	if (!sums || !chk.bad)
		snprintf(err, errlen, "out of memory");
	for (uint64_t t = 0; g && t < trials; t++) {
		if (sdc_stop_is_requested()) {
			snprintf(err, errlen, "interrupted");
			goto out;
		}
		if (m->gemm_load(g, t, pool, err, errlen) ||
		    m->gemm_submit(g, 0, SDC_GPU_MULTIPLY | SDC_GPU_CHECK, err, errlen) ||
		    m->gemm_collect(g, 0, sums, &chk, err, errlen))
			goto out;
		for (int r = 0; r < chk.nbad; r++) {
			const struct sdc_gpu_bad_row *b = &chk.bad[r];
			double s1, s2;
			memcpy(&s1, &sums[2 * b->row], 8);
			memcpy(&s2, &sums[2 * b->row + 1], 8);
			const double rel = SDC_MAX(fabs(b->d1) / fabs(s1), fabs(b->d2) / fabs(s2));
			if (!isfinite(rel)) {
				snprintf(err, errlen, "row %d's verification difference was not finite: this GPU does not compute "
					 "correctly; run sdcscan run before calibrating", b->row);
				goto out;
			}
			st->max_rel = SDC_MAX(st->max_rel, rel);
		}
		st->gemms++;
		st->rows += (uint64_t)n;
	}
	rc = g ? 0 : -1;
out:
	if (g)
		m->gemm_destroy(g);
	free(sums);
	free(chk.bad);
	return rc;
}

int sdc_gemm_calibrate_gpus(struct sdc_run *run, const int *sizes, int nsizes, uint64_t trials, uint32_t precisions,
			    bool quiet, struct sdc_facts *gpus_section)
{
	const struct sdc_gpu_gemm_ops *m = SDC_GPU_FAMILY(gemm, SDC_GPU_GEMM_VERSION);
	int ngpus = 0;
	for (int d = 0; d < run->ndevices; d++)
		ngpus += run->devices[d].kind == SDC_DEVICE_GPU;
	if (!sdc_gpu_ops() || !ngpus) {
		sdc_error("calibrate: no GPU to calibrate: %s", run->gpu_note[0] ? run->gpu_note : "none selected");
		return -1;
	}
	if (!m) {
		sdc_error("calibrate: %s", sdc_gpu_family_why("gemm"));
		return -1;
	}
	struct sdc_dist_pool pool;
	if (sdc_dist_pool_init(&pool, SDC_DIST_ABSNORMAL1, run->seed)) {
		sdc_error("calibrate: out of memory");
		return -1;
	}
	char err[256];
	int rc = 0;
	/* GPUs of one model share an entry: the largest error any of them showed. */
	for (int d = 0; d < run->ndevices && !rc; d++) {
		const struct sdc_device *gpu = &run->devices[d];
		if (gpu->kind != SDC_DEVICE_GPU)
			continue;
		if (sdc_gpu_bind(gpu, err, sizeof(err))) {
			sdc_error("calibrate: %s: %s", gpu->id, err);
			rc = -1;
			break;
		}
		char name[200];
		snprintf(name, sizeof(name), "%s, %s", gpu->model, m->blas);
		if (!sdc_facts_find_key(gpus_section, name)) {
			struct sdc_facts *e = sdc_facts_key(gpus_section, name);
			sdc_facts_str(e, "model", gpu->model);
			sdc_facts_str(e, "library", m->blas);
			sdc_facts_list(e, "uuids");
			sdc_facts_int(e, "trials", (int64_t)trials);
			sdc_facts_real(e, "margin", MARGIN);
			sdc_facts_group(e, "precisions");
		}
		struct sdc_facts *entry = sdc_facts_key(gpus_section, name);
		sdc_facts_append_str(entry, "uuids", gpu->gpu.uuid);
		if (!quiet)
			printf("sdcscan calibrate: %s (%s, %s), %s; |N(1,1)| data, %" PRIu64 " GEMMs per type\n", gpu->id,
			       gpu->model, gpu->gpu.pci_bus_id, m->blas, trials);
		for (size_t p = 0; p < SDC_ARRAY_SIZE(fast_types) && !rc; p++) {
			if (!(precisions & (1u << p)))
				continue;
			const enum sdc_gpu_type type = fast_types[p];
			const char *pname = sdc_gemm_gpu_type_names[type];
			struct sdc_facts *precs = sdc_facts_group(entry, "precisions");
			if (!sdc_facts_find_key(precs, pname)) {
				struct sdc_facts *q = sdc_facts_key(precs, pname);
				sdc_facts_real(q, "emax", 0.0);
				sdc_facts_int(q, "rows", 0);
				sdc_facts_list(q, "sizes");
			}
			struct sdc_facts *prec = sdc_facts_key(precs, pname);
			const double t0 = sdc_now();
			for (int s = 0; s < nsizes; s++) {
				struct size_stats st = { 0 };
				const uint64_t share = trials / (uint64_t)nsizes + ((uint64_t)s < trials % (uint64_t)nsizes);
				if (calibrate_one(m, type, sizes[s], share, run->seed, pool.v, &st, err, sizeof(err))) {
					sdc_error("calibrate: %s %s K=%d: %s", gpu->id, pname, sizes[s], err);
					rc = -1;
					break;
				}
				struct sdc_facts *row = sdc_facts_row(prec, "sizes");
				sdc_facts_str(row, "gpu", gpu->gpu.uuid);
				sdc_facts_int(row, "k", sizes[s]);
				sdc_facts_int(row, "gemms", (int64_t)st.gemms);
				sdc_facts_int(row, "rows", (int64_t)st.rows);
				sdc_facts_real(row, "max_relative_error", st.max_rel);
				double emax = 0;
				int64_t rows = 0;
				sdc_facts_get_real(prec, "emax", &emax);
				sdc_facts_get_int(prec, "rows", &rows);
				sdc_facts_real(prec, "emax", SDC_MAX(emax, st.max_rel * (1 + MARGIN)));
				sdc_facts_int(prec, "rows", rows + (int64_t)st.rows);
				if (!quiet)
					printf("  %-9s K=%-5d %7" PRIu64 " GEMMs %9" PRIu64 " rows  max |E|/|checksum| %.3g (%.1f u32)\n",
					       pname, sizes[s], st.gemms, st.rows, st.max_rel, st.max_rel / 0x1p-24);
			}
			if (!rc && !quiet) {
				double emax = 0;
				sdc_facts_get_real(prec, "emax", &emax);
				printf("  %-9s e_max = %.3g (%.1f u32: the maximum plus %.0f%%), %.1f s\n", pname, emax,
				       emax / 0x1p-24, 100 * MARGIN, sdc_now() - t0);
			}
		}
	}
	/* An e_max of zero (no rounding seen) cannot scale a threshold: the file says so instead. */
	const char *key;
	for (size_t i = 0; (key = sdc_facts_name_at(gpus_section, i)); i++) {
		const struct sdc_facts *precs = sdc_facts_find(sdc_facts_find_key(gpus_section, key), "precisions");
		const char *pk;
		for (size_t j = 0; (pk = sdc_facts_name_at(precs, j)); j++) {
			const struct sdc_facts *prec = sdc_facts_find_key(precs, pk);
			double emax = 0;
			int64_t rows = 0;
			sdc_facts_get_real(prec, "emax", &emax);
			sdc_facts_get_int(prec, "rows", &rows);
			if (!rc && !(emax > 0)) {
				sdc_error("calibrate: %s %s: no rounding error at all in %" PRId64 " rows: not a floating-point "
					  "GEMM as expected; nothing written", key, pk, rows);
				rc = -1;
			}
		}
	}
	sdc_dist_pool_release(&pool);
	return rc;
}
