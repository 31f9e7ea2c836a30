/*
 * embbag: an ABFT-checked quantized EmbeddingBag burn on every selected CPU core and GPU (the
 * engine: probes/embbag/abft.h; the kernels: kernel.h; on a GPU embbag_hd.h's functions
 * in probes/embbag/embbag.cu, through the GPU module).
 *
 * Variants: row format (8-bit, 4-bit FBGEMM fused rows) x numerics class (exact, fast) x embedding
 * width. Every core looks up the same seeded batches in a table larger than the caches (its own
 * copy, or one shared table when copies would not fit in memory), so each iteration's outputs are
 * voted on across cores. Each bag's pooled row is checked against the rows' stored sums as it is
 * computed; a failing bag has its rows compared with the regenerated truth (a corrupted row is
 * named and repaired) and is recomputed, so every wrong element is reported with its bits. A sweep
 * re-verifies a slice of the table at rest every iteration (CRC32C and recomputed row sums), so a
 * flip in rows nobody looked up is found too.
 *
 * A GPU runs the same iterations on its own table in GPU memory (made there from the seed): each
 * iteration's batches drawn there, every bag looked up and checked there, a slice of the table
 * swept there; the outputs come back for the vote (the same bits as a core's) and a failing bag or
 * row is reported from here as a core's is, its rows read back from GPU memory and repaired there.
 *
 * This file: the options, the variants, the setup and both lanes' loops; what the lanes do once a
 * check fails or a fault is due (findings, row repair, faults, the sweep) is in lane.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/digest.h"
#include "device/gpu_loader.h"
#include "probes/embbag/gpu_ops.h"
#include "device/parallel.h"
#include "probe/probe.h"
#include "inject/fatal.h"
#include "probes/embbag/abft.h"
#include "probes/embbag/embbag.h"
#include "probes/embbag/lane.h"
#include "base/message.h"
#include "base/memory.h"

static const char *const format_names[] = { "8bit", "4bit", NULL };
static const char *const class_names[] = { "exact", "fast", NULL };
static const char *const dim_names[] = { "32", "64", "128", "256", NULL };
static const int dim_values[] = { 32, 64, 128, 256 };
static const char *const table_modes[] = { "auto", "per-core", "shared", NULL };
static const char *const kernel_names[] = { "auto", "portable", "avx2", "avx512", NULL };

enum { TABLE_AUTO, TABLE_PER_CORE, TABLE_SHARED };

struct embbag_opts {
	uint32_t formats, classes, dims;
	int64_t rows, pooling, batch, batches, sweep_rows;
	int table, kernel;
	double c_sigma, floor, gpu_timeout;
};

#define OPT(f) offsetof(struct embbag_opts, f)
static const struct sdc_option embbag_options[] = {
	{ .name = "formats", .neutral = true, .type = SDC_OPT_SET, .offset = OPT(formats), .def = "8bit,4bit",
	  .help = "row formats: FBGEMM fused 8-bit rows (fp32 scale, bias) and 4-bit rows (fp16 scale, bias)",
	  .choices = format_names },
	{ .name = "classes", .neutral = true, .type = SDC_OPT_SET, .offset = OPT(classes), .def = "exact,fast",
	  .help = "exact: power-of-two scales, equality checks; fast: real quantisation, statistical thresholds",
	  .choices = class_names },
	{ .name = "dims", .neutral = true, .type = SDC_OPT_SET, .offset = OPT(dims), .def = "64",
	  .help = "embedding widths (one variant each)", .choices = dim_names },
	{ .name = "rows", .type = SDC_OPT_INT, .offset = OPT(rows), .def = "1000000",
	  .help = "rows per table (Li et al. used 4,000,000); a table should not fit in the caches",
	  .imin = 1024, .imax = UINT32_MAX },
	{ .name = "pooling", .type = SDC_OPT_INT, .offset = OPT(pooling), .def = "100",
	  .help = "mean rows per bag; lengths are uniform in [pooling/2, 3 pooling/2]", .imin = 1,
	  .imax = SDC_EB_MAX_POOLING },
	{ .name = "batch", .type = SDC_OPT_INT, .offset = OPT(batch), .def = "10", .help = "bags per batch",
	  .imin = 1, .imax = SDC_EB_MAX_BAGS },
	{ .name = "batches", .type = SDC_OPT_INT, .offset = OPT(batches), .def = "32",
	  .help = "batches per iteration (one result digest per iteration is voted on)", .imin = 1, .imax = 4096 },
	{ .name = "sweep_rows", .neutral = true, .type = SDC_OPT_INT, .offset = OPT(sweep_rows), .def = "512",
	  .help = "table rows re-verified at rest per round (0: no sweep)", .imin = 0, .imax = 1 << 24 },
	{ .name = "table", .neutral = true, .type = SDC_OPT_ENUM, .offset = OPT(table), .def = "auto",
	  .help = "per-core copies (memory near each core), one shared table, or auto: copies when they fit "
		  "in half the available memory",
	  .choices = table_modes },
	{ .name = "kernel", .type = SDC_OPT_ENUM, .offset = OPT(kernel), .def = "auto",
	  .help = "lookup kernel (auto: the fastest this CPU supports)", .choices = kernel_names },
	{ .name = "c_sigma", .neutral = true, .type = SDC_OPT_DOUBLE, .offset = OPT(c_sigma), .def = "6",
	  .help = "fast class: threshold in standard deviations of the rounding error", .dmin = 3, .dmax = 50 },
	{ .name = "floor", .neutral = true, .type = SDC_OPT_DOUBLE, .offset = OPT(floor), .def = "0",
	  .help = "per-core lookups below which the core is WARNING (0: no floor)", .dmin = 0, .dmax = 1e6,
	  .unit = "Mlookup/s" },
	{ .name = "gpu_timeout", .type = SDC_OPT_DOUBLE, .offset = OPT(gpu_timeout), .def = "30", .neutral = true,
	  .help = "seconds a GPU may take for an iteration's lookups, past which it is declared hung", .dmin = 0.1,
	  .dmax = 3600, .unit = "s" },
	SDC_OPT_END,
};

static const char *const embbag_targets[] = {
	"T: an element of the table at rest (default: a row this iteration looks up; col d = scale, d+1 = bias, "
	"d+2/d+3 = stored sums)",
	"R: an element of a bag's pooled output after the lookup, before verification (row = bag in the iteration)",
	NULL,
};

static const char *const embbag_selftest_options[] = { "rows=65536", "batches=8", "sweep_rows=1024", NULL };
static const char *const embbag_selftest_faults[] = {
	"embbag/8bit-d64:T",          "embbag/8bit-d64:R:count=2,every=3",
	"embbag/8bit-fast-d64:T:bit=0", "embbag/8bit-fast-d64:R:bit=30",
	"embbag/4bit-d64:T",          "embbag/4bit-d64:R:bit=0",
	"embbag/4bit-fast-d64:T:bit=0", "embbag/4bit-fast-d64:R:bit=29",
	/* where there is a GPU: both kinds in its memory as well (not asked for without one) */
	"embbag/8bit-d64:T:device=gpu0", "embbag/4bit-fast-d64:T:col=66,device=gpu0",
	"embbag/8bit-fast-d64:R:bit=30,device=gpu0", "embbag/4bit-d64:R:bit=0,device=gpu0",
	NULL,
};

/* ---- the probe ---- */

static int embbag_variants(const void *opts, struct sdc_variant *out, int max)
{
	const struct embbag_opts *o = opts;
	int n = 0;
	for (int f = 0; format_names[f]; f++)
		for (int c = 0; class_names[c]; c++)
			for (int d = 0; dim_names[d]; d++) {
				if (!sdc_opt_set_has(o->formats, f) || !sdc_opt_set_has(o->classes, c) ||
				    !sdc_opt_set_has(o->dims, d) || n >= max)
					continue;
				const struct sdc_eb_cfg cfg = { .fmt = (enum sdc_eb_format)f,
								.cls = (enum sdc_eb_class)c,
								.d = dim_values[d] };
				struct sdc_variant *v = &out[n++];
				/* every core and every GPU looks up the same bags: one vote */
				*v = (struct sdc_variant){ .devices = SDC_ON_CPU | SDC_ON_GPU, .param = { f, c, dim_values[d] } };
				v->numerics = cfg.cls == SDC_EB_FAST ? SDC_NUMERICS_FAST : SDC_NUMERICS_EXACT;
				sdc_eb_variant_name(&cfg, v->name, sizeof(v->name));
			}
	return n;
}

struct fill_job {
	struct sdc_eb_table *t;
	uint64_t chunk;
};

static void fill_chunk(void *arg, int worker, uint64_t job)
{
	(void)worker;
	struct fill_job *fj = arg;
	const uint64_t r0 = job * fj->chunk, r1 = SDC_MIN(r0 + fj->chunk, fj->t->cfg.rows);
	sdc_eb_table_fill(fj->t, r0, r1);
}

static void embbag_teardown(struct sdc_probe_ctx *ctx)
{
	struct embbag_shared *sh = ctx->shared;
	if (!sh)
		return;
	sdc_eb_table_release(&sh->table);
	free(sh);
	ctx->shared = NULL;
}

static double gib(uint64_t bytes)
{
	return (double)bytes / (1u << 30);
}

static int embbag_setup(struct sdc_probe_ctx *ctx)
{
	const struct embbag_opts *o = ctx->opts;
	struct embbag_shared *sh = calloc(1, sizeof(*sh));
	if (!sh)
		return sdc_ctx_error(ctx, "out of memory");
	ctx->shared = sh;
	/* the variant's format, class and width (embbag_variants) */
	const struct { enum sdc_eb_format fmt; enum sdc_eb_class cls; int d; } k = {
		(enum sdc_eb_format)ctx->variant->param[0], (enum sdc_eb_class)ctx->variant->param[1],
		ctx->variant->param[2] };
	sh->cfg = (struct sdc_eb_cfg){ .fmt = k.fmt, .cls = k.cls, .d = k.d, .rows = (uint64_t)o->rows,
				       .batch = (int)o->batch, .pooling = (int)o->pooling, .seed = ctx->seed,
				       .c_sigma = o->c_sigma };
	sh->batches = (int)o->batches;
	sh->sweep_rows = (uint64_t)o->sweep_rows;
	sh->gpu_timeout = o->gpu_timeout;
	sh->impl = sdc_eb_find(kernel_names[o->kernel]);
	if (!sh->impl) {
		embbag_teardown(ctx);
		return sdc_ctx_error(ctx, "kernel=%s is not supported by this CPU", kernel_names[o->kernel]);
	}
	sdc_strlcpy(ctx->iter_unit, "rounds", sizeof(ctx->iter_unit)); /* of `batches` batches */
	sdc_strlcpy(ctx->rate_unit, "Mlookup/s", sizeof(ctx->rate_unit));
	ctx->rate_scale = 1e6;
	ctx->floor = o->floor;

	/* Memory: copies near each core when they fit in half of what is available, else one table.
	 * A GPU keeps its own table in its memory, which must fit in half of it too. */
	const uint64_t bytes = sdc_eb_table_bytes(&sh->cfg), avail = sdc_mem_available();
	const uint64_t budget = avail ? avail / 2 : UINT64_MAX;
	int ncores = 0;
	for (int i = 0; i < ctx->run->ndevices; i++) {
		const struct sdc_device *dev = &ctx->run->devices[i];
		ncores += dev->kind == SDC_DEVICE_CPU;
		if (dev->kind == SDC_DEVICE_GPU && (ctx->variant->devices & SDC_ON_GPU) && dev->gpu.memory_bytes &&
		    bytes > dev->gpu.memory_bytes / 2) {
			embbag_teardown(ctx);
			return sdc_ctx_error(ctx,
					     "a table of %" PRId64 " rows (%.2f GiB) needs more than half of %s's %.2f GiB: "
					     "lower embbag.rows or leave the GPU out (--gpus)",
					     o->rows, gib(bytes), dev->id, gib(dev->gpu.memory_bytes));
		}
	}
	const uint64_t copies = bytes * (uint64_t)SDC_MAX(ncores, 1);
	if (o->table == TABLE_PER_CORE && copies > budget) {
		embbag_teardown(ctx);
		return sdc_ctx_error(ctx,
				     "%d per-main tables of %" PRId64 " rows (%.2f GiB each) need %.2f GiB, more than half "
				     "of the %.2f GiB available: lower embbag.rows or set embbag.table=shared",
				     ctx->nworkers, o->rows, gib(bytes), gib(copies), gib(avail));
	}
	if (bytes > budget) {
		embbag_teardown(ctx);
		return sdc_ctx_error(ctx,
				     "a table of %" PRId64 " rows (%.2f GiB) needs more than half of the %.2f GiB "
				     "available: lower embbag.rows",
				     o->rows, gib(bytes), gib(avail));
	}
	sh->shared_table = o->table == TABLE_SHARED || (o->table == TABLE_AUTO && copies > budget);
	if (sh->shared_table) {
		char err[256];
		if (sdc_eb_table_alloc(&sh->table, &sh->cfg, true, err, sizeof(err))) {
			embbag_teardown(ctx);
			return sdc_ctx_error(ctx, "%s", err);
		}
		struct fill_job fj = { &sh->table, 65536 };
		if (sdc_parallel_for(ctx->run->devices, ctx->run->ndevices, (sh->cfg.rows + fj.chunk - 1) / fj.chunk,
				     fill_chunk, &fj)) {
			embbag_teardown(ctx);
			return sdc_ctx_error(ctx, "interrupted while building the table");
		}
	}
	struct sdc_eb_layout l;
	sdc_eb_layout_init(&l, k.fmt, k.d, true);
	snprintf(sh->operation, sizeof(sh->operation), "embbag %s %" PRId64 "x%d (%zu B rows), bags of %d x %d",
		 ctx->variant->name, o->rows, k.d, l.stride, (int)o->batch, (int)o->pooling);

	struct sdc_facts *f = sdc_facts_new(), *v = sdc_facts_key(f, ctx->variant->name);
	sdc_facts_str(v, "kernel", sh->impl->name);
	sdc_facts_str(v, "table", sh->shared_table ? "shared" : "per-core");
	sdc_facts_int(v, "rows", o->rows);
	sdc_facts_int(v, "row_bytes", (int64_t)l.stride);
	sdc_facts_real(v, "table_gib", gib(bytes));
	if (k.cls == SDC_EB_FAST)
		sdc_facts_real(v, "c_sigma", o->c_sigma);
	/* (run.environment.embbag.VARIANT, replaced whole as the variant is set up again) */
	sdc_run_facts_replace(ctx->run, "embbag", f);
	return 0;
}

static void worker_release(struct eb_worker *ew)
{
	sdc_eb_table_release(&ew->own);
	sdc_eb_batch_release(&ew->batch);
	free(ew->out);
	free(ew->ref);
	free(ew->expect);
	free(ew->scratch);
	free(ew->truth_row);
	free(ew->hashes);
	free(ew->row_buf);
	free(ew->verdicts);
	if (ew->g)
		ew->m->eb_close(ew->g);
}

/*
 * A GPU's lane: each iteration's batches drawn and looked up there, every bag checked there, then
 * its outputs and verdicts back here in one copy: a failing bag is reported as a core's is (its
 * batch drawn here), the outputs hashed for the vote as a core hashes them.
 */
static void run_gpu(struct eb_worker *ew)
{
	struct sdc_worker *w = ew->w;
	const struct embbag_shared *sh = ew->sh;
	const struct sdc_eb_cfg *cfg = &sh->cfg;
	const int d = cfg->d, nbags = sh->batches * cfg->batch;
	const enum sdc_eb_sums sums = cfg->cls == SDC_EB_FAST ? SDC_EB_SUMS_STATS : SDC_EB_SUMS;
	char err[256];
	ew->m = SDC_GPU_FAMILY(embbag, SDC_GPU_EMBBAG_VERSION);
	if (!ew->m) {
		sdc_worker_device_lost(w, "%s: %s", w->dev->id, sdc_gpu_family_why("embbag"));
		return;
	}
	if (sdc_gpu_bind(w->dev, err, sizeof(err)) ||
	    !(ew->g = ew->m->eb_open(cfg, 1, nbags, sh->gpu_timeout, err, sizeof(err)))) {
		sdc_worker_device_lost(w, "%s (%s): %s", w->dev->id, w->dev->gpu.pci_bus_id, err);
		return;
	}
	snprintf(w->kernel, sizeof(w->kernel), "CUDA");
	/* a GPU's lane is voted on and checked, not held to the cores' floor */
	w->no_floor = true;
	/* start the sweep where this GPU's share of the table begins, as cores share one */
	ew->sweep_cursor = cfg->rows / 16 * (uint64_t)(w->dev->gpu.index % 16);
	sdc_worker_restart_clock(w);
	for (ew->iter = 0; sdc_worker_continue(w) && !ew->lost; ew->iter++) {
		const uint64_t first = ew->iter * (uint64_t)sh->batches;
		int bags_reported = 0;
		struct sdc_fault tf[8], rf[8];
		struct sdc_gpu_flip flips[8];
		int from[8];
		const int nt = sdc_worker_faults(w, "T", ew->iter, tf, 8), nr = sdc_worker_faults(w, "R", ew->iter, rf, 8);
		if (nt) {
			sdc_eb_batch_draw(&ew->batch, cfg, first);
			sdc_eb_lane_table_faults(ew, tf, nt);
		}
		const int nflips = sdc_eb_lane_output_flips(ew, rf, nr, flips, from);
		sdc_worker_fatal_faults(w, ew->iter, ew->out);
		if (ew->lost || ew->m->eb_draw(ew->g, first, sh->batches) ||
		    ew->m->eb_lookup(ew->g, sums, flips, nflips, ew->out, ew->verdicts)) {
			sdc_eb_lane_gpu_lost(ew);
			break;
		}
		sdc_eb_lane_report_flips(ew, rf, flips, from, nflips);
		uint64_t lookups = 0;
		for (int bt = 0; bt < sh->batches; bt++) {
			bool drawn = false;
			for (int b = 0; b < cfg->batch && !ew->lost; b++) {
				const int bag = bt * cfg->batch + b;
				if (!ew->verdicts[bag].bad)
					continue;
				if (!drawn)
					sdc_eb_batch_draw(&ew->batch, cfg, first + (uint64_t)bt);
				drawn = true;
				sdc_eb_lane_report_bag(ew, b, ew->out + (size_t)bag * d, &ew->verdicts[bag],
						       &bags_reported);
			}
			lookups += sdc_eb_batch_lookups(cfg, first + (uint64_t)bt);
			ew->hashes[bt] = sdc_xxh64(ew->out + (size_t)bt * cfg->batch * d, (size_t)cfg->batch * d * sizeof(float));
		}
		if (ew->lost)
			break;
		ew->table->sweep(ew);
		if (ew->lost)
			break;
		sdc_worker_digest(w, ew->iter, sdc_xxh64(ew->hashes, (size_t)sh->batches * sizeof(uint64_t)));
		sdc_worker_account(w, (double)lookups);
	}
}

/*
 * A worker's table and buffers, either lane's: on a GPU the table lives there and here only its
 * truth, to report and repair against; on a core the run's shared table or this core's own, filled
 * here. 0, or -1 after saying why (what was made released).
 */
static int worker_open(struct eb_worker *ew, bool on_gpu)
{
	struct sdc_worker *w = ew->w;
	const struct embbag_shared *sh = ew->sh;
	const struct sdc_eb_cfg *cfg = &sh->cfg;
	char err[256];
	sdc_strlcpy(w->kernel, sh->impl->name, sizeof(w->kernel));
	if (on_gpu) {
		if (sdc_eb_table_plan(&ew->own, cfg, true, err, sizeof(err))) {
			sdc_worker_error(w, "%s", err);
			return -1;
		}
		ew->t = &ew->own;
	} else if (sh->shared_table) {
		ew->t = (struct sdc_eb_table *)&sh->table;
	} else {
		if (sdc_eb_table_alloc(&ew->own, cfg, true, err, sizeof(err))) {
			sdc_worker_error(w, "%s", err);
			return -1;
		}
		/* on this core, so its memory is local; a heartbeat a slice, as a paper-size table takes minutes */
		for (uint64_t r0 = 0; r0 < cfg->rows; r0 += 65536) {
			sdc_eb_table_fill(&ew->own, r0, cfg->rows - r0 < 65536 ? cfg->rows : r0 + 65536);
			sdc_worker_heartbeat(w);
		}
		ew->t = &ew->own;
	}
	const int d = cfg->d;
	/* a core's outputs: one batch; a GPU's: every batch of an iteration, and their verdicts */
	const size_t out_bags = on_gpu ? (size_t)sh->batches * cfg->batch : (size_t)cfg->batch;
	ew->out = malloc(out_bags * d * sizeof(float));
	ew->ref = malloc((size_t)d * sizeof(float));
	ew->expect = malloc((size_t)cfg->batch * sizeof(*ew->expect));
	ew->scratch = sdc_alloc_aligned(sdc_eb_scratch_bytes(cfg));
	ew->truth_row = calloc(1, ew->t->l.stride); /* (read for an element's width before any truth is in it) */
	ew->hashes = malloc((size_t)sh->batches * sizeof(uint64_t));
	if (on_gpu) {
		ew->row_buf = malloc(ew->t->l.stride);
		ew->verdicts = calloc(out_bags, sizeof(*ew->verdicts));
	}
	if (!ew->out || !ew->ref || !ew->expect || !ew->scratch || !ew->truth_row || !ew->hashes ||
	    (on_gpu && (!ew->row_buf || !ew->verdicts)) || sdc_eb_batch_alloc(&ew->batch, cfg)) {
		sdc_worker_error(w, "out of memory");
		worker_release(ew);
		return -1;
	}
	return 0;
}

/* The GPU lane: every batch of an iteration looked up and checked on the GPU (run_gpu). */
static void embbag_gpu_lane(struct sdc_worker *w)
{
	struct eb_worker ew = { .w = w, .sh = w->ctx->shared, .table = &sdc_eb_table_on_gpu };
	if (worker_open(&ew, true))
		return;
	run_gpu(&ew);
	worker_release(&ew);
}

/* The CPU lane: this core's batches looked up by the run's kernel and checked, the table swept. */
static void embbag_cpu_lane(struct sdc_worker *w)
{
	const struct embbag_shared *sh = w->ctx->shared;
	const struct sdc_eb_cfg *cfg = &sh->cfg;
	struct eb_worker ew = { .w = w, .sh = sh, .table = &sdc_eb_table_here };
	if (worker_open(&ew, false))
		return;
	const int d = cfg->d;
	/* Start the sweep where this core's share of the table begins, so cores cover it together. */
	ew.sweep_cursor = sh->shared_table ? cfg->rows / (uint64_t)w->ctx->nworkers * (uint64_t)w->index : 0;
	sdc_worker_restart_clock(w);

	const struct sdc_eb_layout *l = &ew.t->l;
	for (ew.iter = 0; sdc_worker_continue(w); ew.iter++) {
		uint64_t lookups = 0;
		int bags_reported = 0;
		struct sdc_fault rfaults[8];
		const int nrf = sdc_worker_faults(w, "R", ew.iter, rfaults, 8);
		sdc_worker_fatal_faults(w, ew.iter, ew.out);
		for (int bt = 0; bt < sh->batches; bt++) {
			sdc_eb_batch_draw(&ew.batch, cfg, ew.iter * (uint64_t)sh->batches + (uint64_t)bt);
			if (bt == 0) {
				struct sdc_fault tf[8];
				sdc_eb_lane_table_faults(&ew, tf, sdc_worker_faults(w, "T", ew.iter, tf, 8));
			}
			const enum sdc_eb_sums sums = cfg->cls == SDC_EB_FAST ? SDC_EB_SUMS_STATS : SDC_EB_SUMS;
			for (int b = 0; b < ew.batch.nbags; b++) {
				const struct sdc_eb_bag g = sdc_eb_batch_bag(&ew.batch, b);
				sh->impl->bag(l, ew.t->data, &g, ew.out + (size_t)b * d, &ew.expect[b], sums);
			}
			/*
			 * The batch's bags are checked after all were looked up: a check waits for its bag's
			 * last rows, and in the lookup loop it would hold the next bag's loads back.
			 */
			for (int b = 0; b < ew.batch.nbags; b++) {
				const float *out = ew.out + (size_t)b * d;
				if (nrf)
					sdc_eb_lane_output_faults(&ew, (int64_t)bt * cfg->batch + b, rfaults, nrf);
				struct sdc_eb_verdict v;
				struct sdc_eb_out_sums os;
				sh->impl->out_sums(out, d, &os);
				if (sdc_eb_check(cfg, l, &os, &ew.expect[b], &v))
					sdc_eb_lane_report_bag(&ew, b, out, &v, &bags_reported);
			}
			lookups += (uint64_t)ew.batch.off[ew.batch.nbags];
			ew.hashes[bt] = sdc_xxh64(ew.out, (size_t)ew.batch.nbags * d * sizeof(float));
		}
		ew.table->sweep(&ew);
		sdc_worker_digest(w, ew.iter, sdc_xxh64(ew.hashes, (size_t)sh->batches * sizeof(uint64_t)));
		sdc_worker_account(w, (double)lookups);
	}
	worker_release(&ew);
}

static const struct sdc_command *const embbag_benches[] = { &sdc_embbag_bench, NULL };

const struct sdc_probe sdc_probe_embbag = {
	.name = "embbag",
	.summary = "ABFT-checked quantized EmbeddingBag (8/4-bit FBGEMM rows) on every core and GPU, table swept at rest",
	.options = embbag_options,
	.opts_size = sizeof(struct embbag_opts),
	.inject_targets = embbag_targets,
	.selftest_options = embbag_selftest_options,
	.selftest_faults = embbag_selftest_faults,
	.variants = embbag_variants,
	.setup = embbag_setup,
	.lane = { [SDC_DEVICE_CPU] = embbag_cpu_lane, [SDC_DEVICE_GPU] = embbag_gpu_lane },
	.teardown = embbag_teardown,
	.benches = embbag_benches,
	.campaign = &sdc_embbag_campaign,
};
