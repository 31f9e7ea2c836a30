/*
 * sdcscan bench embbag --gpus: plain against ABFT-checked EmbeddingBag on one GPU (kernels/cuda/
 * embbag.cu), per row format and width, the tables in GPU memory (4,000,000 rows by default, Li et
 * al.'s size). First the bits: the checked lookup's outputs of a launch's first and last bags
 * against this CPU's portable kernel on the same rows (every element), the plain lookup's against
 * the checked one's, and no bag failing its check. Then the speed: each turn draws fresh batches
 * (so no launch finds another's rows in the L2), then times the plain lookup (FBGEMM rows, no sums)
 * and the checked one (rows with their sums, the expectation and the check of every bag on the
 * GPU) between events, one launch each, in alternating order; the overhead is the median over
 * turns of checked / plain - 1. Target: the same bits, and the overhead at most 10%.
 *
 * Beside each overhead, the design's by the roofline (probe/roofline.h) on the GPU's model: the
 * lookups are bound by the rows they fetch from memory, so the check costs the DRAM bytes it adds
 * (the rows' sums, in whatever sectors the plain rows do not already fetch, and each bag's
 * verdict) at the memory's bandwidth. What a roofline does not see, the check's extra warp a bag
 * and thread 0's serial check of the output, only the measurement shows.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/bench_race.h"
#include "probe/roofline.h"
#include "run/facts.h"
#include "device/gpu_loader.h"
#include "mpi/gpu_ranks.h"
#include "probes/embbag/gpu_ops.h"
#include "run/record.h"
#include "probes/embbag/abft.h"
#include "probes/embbag/embbag.h"
#include "base/message.h"
#include "base/clock.h"

#define TARGET_OVERHEAD 0.10
/* Batches (of 10 bags) a launch looks up: about a million rows at the default pooling. */
#define LAUNCH_BATCHES 1024
#define MAX_TURNS 200
/* Bags compared element by element at each end of the first launch. */
#define BAGS_COMPARED 32

struct gpu_case {
	const struct sdc_gpu_embbag_ops *m;
	struct sdc_gpu_eb *plain, *checked;
	struct sdc_eb_cfg cfg;
	struct sdc_eb_table truth; /* rows regenerated here for the reference */
	float *out_p, *out_c, *ref;
	struct sdc_eb_verdict *v;
	uint8_t *scratch;
	struct sdc_eb_batch batch;
};

static const char *eb_err(const struct gpu_case *c)
{
	const char *e = c->checked ? c->m->eb_error(c->checked) : "";
	return e && e[0] ? e : c->plain ? c->m->eb_error(c->plain) : "";
}

/*
 * The bits of the first launch: BAGS_COMPARED bags at each end against the CPU's portable kernel
 * on the true rows, every plain output against the checked one's, every bag's check. Returns the
 * elements (and checks) that differ or failed, -1 on a GPU error.
 */
static long check_bits(struct gpu_case *c, char *first, size_t len)
{
	const int d = c->cfg.d, nbags = LAUNCH_BATCHES * c->cfg.batch;
	if (c->m->eb_draw(c->plain, 0, LAUNCH_BATCHES) || c->m->eb_draw(c->checked, 0, LAUNCH_BATCHES) ||
	    c->m->eb_lookup(c->plain, SDC_EB_NO_SUMS, NULL, 0, c->out_p, NULL) ||
	    c->m->eb_lookup(c->checked, SDC_EB_SUMS_STATS, NULL, 0, c->out_c, c->v))
		return -1;
	long bad = 0;
	for (int b = 0; b < nbags; b++) {
		if (c->v[b].bad && !bad++)
			snprintf(first, len, "bag %d failed its check on the GPU (sums off by %.3g, %.3g; thresholds %.3g, %.3g)",
				 b, c->v[b].dc, c->v[b].dw, c->v[b].tc, c->v[b].tw);
		const bool compared = b < BAGS_COMPARED || b >= nbags - BAGS_COMPARED;
		if (compared) {
			if (c->batch.index != (uint64_t)(b / c->cfg.batch) || !c->batch.nbags)
				sdc_eb_batch_draw(&c->batch, &c->cfg, (uint64_t)(b / c->cfg.batch));
			const struct sdc_eb_bag g = sdc_eb_batch_bag(&c->batch, b % c->cfg.batch);
			sdc_eb_reference(&c->truth, &g, c->scratch, c->ref);
		}
		for (int j = 0; j < d; j++) {
			const float *gc = &c->out_c[(size_t)b * d + j], *gp = &c->out_p[(size_t)b * d + j];
			if (compared && memcmp(gc, &c->ref[j], 4) && !bad++)
				snprintf(first, len, "bag %d column %d: CPU %.9g, GPU %.9g", b, j, c->ref[j], *gc);
			if (memcmp(gc, gp, 4) && !bad++)
				snprintf(first, len, "bag %d column %d: checked %.9g, plain %.9g", b, j, *gc, *gp);
		}
	}
	return bad;
}

void sdc_eb_gpu_roofline(const struct sdc_rl_gpu *gpu, const struct sdc_eb_cfg *cfg, struct sdc_eb_roofline *out)
{
	/*
	 * k_eb_bags (embbag.cu), a block a bag: its start, length and weighted flag (9 bytes); each of
	 * its rows' indices (4 bytes) and, in weighted batches (every other one: sdc_eb_batch_weighted),
	 * weights (4 bytes); each row whole (the column threads read its values and scale and bias; the
	 * checked one's expectation warp its tail, scale, bias and sums: the same sectors, fetched once
	 * and re-read from the caches); the output written (d floats) and, checked, the verdict. The
	 * output's re-read by thread 0 comes from the caches too. Rows are random: each its mean sectors.
	 */
	struct sdc_eb_layout lp, lc;
	sdc_eb_layout_init(&lp, cfg->fmt, cfg->d, false);
	sdc_eb_layout_init(&lc, cfg->fmt, cfg->d, true);
	const double len = (sdc_eb_min_len(cfg) + sdc_eb_max_len(cfg)) / 2.0;
	const double per_row = 4 + 4 * 0.5;
	out->plain_bytes = 9 + len * (per_row + sdc_rl_row_bytes(lp.stride, lp.stride)) + 4.0 * cfg->d;
	out->extra_bytes = len * (sdc_rl_row_bytes(lc.stride, lc.stride) - sdc_rl_row_bytes(lp.stride, lp.stride)) +
			   (double)sizeof(struct sdc_eb_verdict);
	out->t_plain = out->plain_bytes / gpu->bandwidth;
	out->t_check = out->extra_bytes / gpu->bandwidth;
	out->overhead = out->t_check / out->t_plain;
}

static void case_release(struct gpu_case *c)
{
	if (c->plain)
		c->m->eb_close(c->plain);
	if (c->checked)
		c->m->eb_close(c->checked);
	free(c->out_p), free(c->out_c), free(c->ref), free(c->v), free(c->scratch);
	sdc_eb_batch_release(&c->batch);
}

static int bench_case(const struct sdc_gpu_embbag_ops *m, const struct sdc_rl_gpu *gpu, const struct sdc_eb_cfg *cfg,
		      double seconds, struct sdc_facts *out, bool *met, char *err, size_t errlen)
{
	struct gpu_case c = { .m = m, .cfg = *cfg };
	const int nbags = LAUNCH_BATCHES * cfg->batch, d = cfg->d;
	int rc = -1;
	double *tp = malloc(MAX_TURNS * sizeof(double)), *tc = malloc(MAX_TURNS * sizeof(double));
	double *ratio = malloc(MAX_TURNS * sizeof(double));
	struct sdc_eb_layout lp;
	sdc_eb_layout_init(&lp, cfg->fmt, d, false);
	if (sdc_eb_table_plan(&c.truth, cfg, true, err, errlen))
		goto out;
	c.out_p = malloc((size_t)nbags * d * sizeof(float));
	c.out_c = malloc((size_t)nbags * d * sizeof(float));
	c.ref = malloc((size_t)d * sizeof(float));
	c.v = calloc((size_t)nbags, sizeof(*c.v));
	c.scratch = malloc(sdc_eb_scratch_bytes(cfg));
	if (!tp || !tc || !ratio || !c.out_p || !c.out_c || !c.ref || !c.v || !c.scratch || sdc_eb_batch_alloc(&c.batch, cfg)) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (!(c.plain = m->eb_open(cfg, 0, nbags, 120, err, errlen)) ||
	    !(c.checked = m->eb_open(cfg, 1, nbags, 120, err, errlen)))
		goto out;
	char first[200] = "";
	const long bad = check_bits(&c, first, sizeof(first));
	if (bad < 0) {
		snprintf(err, errlen, "%s", eb_err(&c));
		goto out;
	}
	/* turns: fresh batches, then the two lookups in alternating order */
	const double t_end = sdc_now() + seconds;
	double lookups = 0;
	int turns = 0;
	while (turns < MAX_TURNS && (turns < 5 || sdc_now() < t_end)) {
		const uint64_t at = (uint64_t)(turns + 1) * LAUNCH_BATCHES;
		if (m->eb_draw(c.plain, at, LAUNCH_BATCHES) || m->eb_draw(c.checked, at, LAUNCH_BATCHES)) {
			snprintf(err, errlen, "%s", eb_err(&c));
			goto out;
		}
		const int r1 = turns & 1 ? m->eb_time(c.checked, SDC_EB_SUMS_STATS, 1, &tc[turns])
					 : m->eb_time(c.plain, SDC_EB_NO_SUMS, 1, &tp[turns]);
		const int r2 = turns & 1 ? m->eb_time(c.plain, SDC_EB_NO_SUMS, 1, &tp[turns])
					 : m->eb_time(c.checked, SDC_EB_SUMS_STATS, 1, &tc[turns]);
		if (r1 || r2) {
			snprintf(err, errlen, "%s", eb_err(&c));
			goto out;
		}
		ratio[turns] = tc[turns] / tp[turns] - 1;
		for (int bt = 0; bt < LAUNCH_BATCHES; bt++)
			lookups += (double)sdc_eb_batch_lookups(cfg, at + (uint64_t)bt);
		turns++;
	}
	lookups /= turns; /* per launch */
	const double over = sdc_median(ratio, turns), mp = sdc_median(tp, turns), mc = sdc_median(tc, turns);
	const double rp = lookups / mp, rcheck = lookups / mc;
	struct sdc_eb_roofline rl;
	char design[64] = "", rls[16] = "-";
	bool design_ok = true;
	if (gpu) {
		sdc_eb_gpu_roofline(gpu, cfg, &rl);
		design_ok = sdc_rl_verdict(rl.overhead, TARGET_OVERHEAD, false, design, sizeof(design));
		snprintf(rls, sizeof(rls), "%+.2f%%", 100 * rl.overhead);
	}
	const bool measured_ok = !bad && over <= TARGET_OVERHEAD, ok = measured_ok && design_ok;
	*met &= ok;
	printf("%-5s %4d %5zu %5zu  %9.1f %7.1f  %9.1f %7.1f  %+8.2f%% %9s  %-10s %5d  %s%s%s\n",
	       cfg->fmt == SDC_EB_8BIT ? "8bit" : "4bit", d, lp.stride, c.truth.l.stride, rp / 1e6, rp * lp.stride / 1e9,
	       rcheck / 1e6, rcheck * c.truth.l.stride / 1e9, 100 * over, rls, bad ? "DIFFERENT" : "same", turns,
	       measured_ok ? "met" : "MISSED", gpu ? ", " : "", design);
	if (bad)
		printf("      %ld elements or checks differ, first %s\n", bad, first);
	struct sdc_facts *row = sdc_facts_row(out, "rows");
	sdc_facts_str(row, "format", cfg->fmt == SDC_EB_8BIT ? "8bit" : "4bit");
	sdc_facts_int(row, "d", d);
	sdc_facts_int(row, "differing", bad);
	sdc_facts_real(row, "plain_mlookups", rp / 1e6);
	sdc_facts_real(row, "plain_gbps", rp * lp.stride / 1e9);
	sdc_facts_real(row, "checked_mlookups", rcheck / 1e6);
	sdc_facts_real(row, "checked_gbps", rcheck * c.truth.l.stride / 1e9);
	sdc_facts_real(row, "overhead", over);
	if (gpu) {
		sdc_facts_real(row, "roofline_overhead", rl.overhead);
		sdc_facts_real(row, "roofline_plain_bytes_per_bag", rl.plain_bytes);
		sdc_facts_real(row, "roofline_check_bytes_per_bag", rl.extra_bytes);
		sdc_facts_bool(row, "design_met", design_ok);
	}
	sdc_facts_int(row, "turns", turns);
	sdc_facts_bool(row, "target_met", ok);
	rc = 0;
out:
	case_release(&c);
	free(tp), free(tc), free(ratio);
	return rc;
}

int sdc_embbag_bench_gpu(struct sdc_cmd *cmd, struct sdc_run *run, const int *dims, int ndims, uint32_t formats,
			 uint64_t rows, int pooling, double seconds)
{
	char err[512];
	const struct sdc_device *gpu = sdc_gpu_first_bound(run, err, sizeof(err));
	if (!gpu) {
		sdc_error("bench embbag: %s", err);
		return sdc_cli_unknown(&cmd->cli);
	}
	const struct sdc_gpu_embbag_ops *m = SDC_GPU_FAMILY(embbag, SDC_GPU_EMBBAG_VERSION);
	if (!m) {
		sdc_error("bench embbag: %s", sdc_gpu_family_why("embbag"));
		return sdc_cli_unknown(&cmd->cli);
	}
	const struct sdc_eb_cfg base = { .cls = SDC_EB_FAST, .rows = rows, .batch = 10, .pooling = pooling, .seed = 1,
					 .c_sigma = SDC_EB_C_SIGMA };
	printf("sdcscan bench embbag on %s (%s, %d SMs, %s), CUDA runtime %s\n"
	       "%" PRIu64 " rows in GPU memory, %d batches of 10 bags of %d rows on average a launch (sum and weighted "
	       "batches alternating), fast-class data;\n"
	       "bits: %d bags at each end of a launch against this CPU's portable kernel, plain against checked, every "
	       "bag's check;\nspeed: each turn fresh batches, then one launch of each (order alternating), timed between "
	       "events;\nrates are the median launch, overhead the median over turns of checked/plain - 1; target: same "
	       "bits, overhead <= %.0f%%\n\n",
	       gpu->id, gpu->model, gpu->gpu.sm_count, gpu->gpu.pci_bus_id, sdc_gpu_ops()->cuda_runtime, rows, LAUNCH_BATCHES,
	       pooling, BAGS_COMPARED, 100 * TARGET_OVERHEAD);
	char why[160];
	const struct sdc_rl_gpu *rl = sdc_rl_find(gpu->model, why, sizeof(why));
	sdc_rl_print(rl, why);
	if (rl)
		printf("roofline column: the overhead by design, the DRAM bytes the check adds to a mean bag's (rows in "
		       "32-byte sectors)\nat the memory's bandwidth; the extra warp and the serial check are not in it.\n");
	printf("%-5s %4s %5s %5s  %9s %7s  %9s %7s  %9s %9s  %-10s %5s  %s\n", "rows", "d", "B/row", "+sums", "plain",
	       "GB/s", "checked", "GB/s", "overhead", "roofline", "bits", "turns", "target");
	printf("%-5s %4s %5s %5s  %9s %7s  %9s\n", "", "", "", "", "Mlook/s", "", "Mlook/s");
	struct sdc_facts *out = sdc_facts_new();
	sdc_facts_str(out, "gpu.device", gpu->id);
	sdc_facts_str(out, "gpu.name", gpu->model);
	sdc_facts_str(out, "gpu.uuid", gpu->gpu.uuid);
	sdc_facts_real(out, "target_overhead", TARGET_OVERHEAD);
	sdc_rl_facts(out, rl, why);
	sdc_facts_list(out, "rows");
	bool met = true;
	for (int f = 0; f < 2; f++)
		for (int i = 0; i < ndims && sdc_opt_set_has(formats, f); i++) {
			struct sdc_eb_cfg cfg = base;
			cfg.fmt = (enum sdc_eb_format)f;
			cfg.d = dims[i];
			if (bench_case(m, rl, &cfg, seconds, out, &met, err, sizeof(err))) {
				sdc_error("bench embbag: %s: %s", gpu->id, err);
				sdc_facts_free(out);
				return sdc_cli_unknown(&cmd->cli);
			}
			fflush(stdout);
		}
	const int code = sdc_cli_facts_end(&cmd->cli, out, met);
	sdc_facts_free(out);
	return code;
}
