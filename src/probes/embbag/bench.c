/*
 * sdcscan bench embbag: plain EmbeddingBag against the ABFT-checked one, side by side on one
 * pinned core, per row format and width (Li et al. Figure 6; their overhead stayed under 26%).
 *   plain    FBGEMM fused rows (no sums), the same kernel, no checks
 *   checked  rows with their sums, the expectation folded in per row, every bag checked
 *   +sweep   checked, plus the probe's default re-verification of the table at rest
 * Tables are far larger than the caches (4,000,000 rows by default, as the paper) and every call
 * looks up fresh batches from a pool that touches more rows than the last-level cache holds, so
 * the rows come from memory as they do in a recommendation server.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/bench_race.h"
#include "probe/command.h"
#include "run/record.h"
#include "probes/embbag/embbag.h"
#include "probes/embbag/abft.h"
#include "base/message.h"
#include "base/parse.h"
#include "base/clock.h"

/* Batches each call looks up; the pool they come from is POOL_BATCHES long. */
#define CALL_BATCHES 32
#define POOL_BATCHES 4096

struct eb_case {
	struct sdc_eb_cfg cfg;
	const struct sdc_eb_impl *impl;
	struct sdc_eb_table *table; /* plain or checked */
	struct sdc_eb_batch *pool;
	float *out;
	struct sdc_eb_expect *expect;
	int cursor;
	bool checked, skip_checks; /* skip_checks: the expectation computed, no bag checked */
	enum sdc_eb_sums sums;
	uint64_t sweep_rows, sweep_cursor;
	long failures;
};

static void call_bags(void *arg)
{
	struct eb_case *c = arg;
	const int d = c->cfg.d;
	for (int k = 0; k < CALL_BATCHES; k++) {
		const struct sdc_eb_batch *b = &c->pool[c->cursor];
		c->cursor = (c->cursor + 1) % POOL_BATCHES;
		for (int i = 0; i < b->nbags; i++) {
			const struct sdc_eb_bag g = sdc_eb_batch_bag(b, i);
			c->impl->bag(&c->table->l, c->table->data, &g, c->out + (size_t)i * d, &c->expect[i],
				     c->checked ? c->sums : SDC_EB_NO_SUMS);
		}
		if (!c->checked || c->skip_checks)
			continue;
		/*
		 * As the probe does: the batch's bags are checked after all were looked up, so the checks
		 * (which wait for the last rows) do not hold the next bag's loads back.
		 */
		for (int i = 0; i < b->nbags; i++) {
			struct sdc_eb_verdict v;
			struct sdc_eb_out_sums os;
			c->impl->out_sums(c->out + (size_t)i * d, d, &os);
			c->failures += sdc_eb_check(&c->cfg, &c->table->l, &os, &c->expect[i], &v);
		}
	}
	for (uint64_t k = 0; k < c->sweep_rows; k++) {
		c->failures += !sdc_eb_row_intact(c->table, c->sweep_cursor);
		c->sweep_cursor = (c->sweep_cursor + 1) % c->cfg.rows;
	}
}

/*
 * The contenders are called in turns, one call each, in an order that rotates every turn, and
 * every call is timed: the ratio of two calls' times compares like work (batches drawn alike)
 * a millisecond apart, and the median over turns shrugs off a noisy neighbour. Returns the
 * turns taken.
 */
#define MAX_TURNS 100000
static int paired_race(struct eb_case *cases, int n, double seconds, double *t)
{
	const double t_end = sdc_now() + seconds * n;
	int turn = 0;
	for (int i = 0; i < n; i++)
		call_bags(&cases[i]); /* warm up */
	/*
	 * Each contender starts a quarter of the pool (hundreds of MB of rows) from the others, so no
	 * call finds in the cache the rows another just fetched from the same table.
	 */
	for (int i = 0; i < n; i++)
		cases[i].cursor = POOL_BATCHES / n * i;
	while (turn < MAX_TURNS && (turn < 8 || sdc_now() < t_end)) {
		for (int k = 0; k < n; k++) {
			const int i = (turn + k) % n;
			const double t0 = sdc_now();
			call_bags(&cases[i]);
			t[(size_t)turn * n + i] = sdc_now() - t0;
		}
		turn++;
	}
	return turn;
}

/* Median (q[1]) and quartiles of v[0..n), sorted in place. */
static void quartiles(double *v, int n, double q[3])
{
	qsort(v, (size_t)n, sizeof(double), sdc_cmp_double);
	q[0] = v[n / 4];
	q[1] = v[n / 2];
	q[2] = v[3 * n / 4];
}

struct dim_list {
	int v[8], n;
};

/* Up to 8 embedding widths, multiples of 16 up to SDC_EB_DMAX. */
static int parse_dims(const char *value, void *field, char *err, size_t errlen)
{
	struct dim_list *l = field;
	const char *s = value;
	int n = 0;
	while (*s) {
		char *end;
		const long v = strtol(s, &end, 10);
		if (end == s || v < 16 || v > SDC_EB_DMAX || v % 16 || n == 8 || (*end && *end != ',')) {
			snprintf(err, errlen, "widths that are multiples of 16 from 16 to %d, comma-separated (at most 8)",
				 SDC_EB_DMAX);
			return -1;
		}
		l->v[n++] = (int)v;
		s = *end ? end + 1 : end;
	}
	l->n = n;
	return n ? 0 : -1;
}

static int bench_case(enum sdc_eb_format fmt, int d, const struct sdc_eb_cfg *base, uint64_t sweep_rows,
		      bool skip_checks, double seconds, const struct sdc_eb_impl *impl)
{
	struct sdc_eb_cfg cfg = *base;
	cfg.fmt = fmt;
	cfg.d = d;
	struct sdc_eb_table plain, checked;
	char err[256];
	if (sdc_eb_table_alloc(&plain, &cfg, false, err, sizeof(err))) {
		sdc_error("bench embbag: %s", err);
		return -1;
	}
	if (sdc_eb_table_alloc(&checked, &cfg, true, err, sizeof(err))) {
		sdc_error("bench embbag: %s", err);
		sdc_eb_table_release(&plain);
		return -1;
	}
	sdc_eb_table_fill(&plain, 0, cfg.rows);
	sdc_eb_table_fill(&checked, 0, cfg.rows);

	struct sdc_eb_batch *pool = calloc(POOL_BATCHES, sizeof(*pool));
	float *out = malloc((size_t)cfg.batch * d * sizeof(float));
	struct sdc_eb_expect *expect = malloc((size_t)cfg.batch * sizeof(*expect));
	int rc = -1, drawn = 0;
	double lookups = 0;
	if (!pool || !out || !expect)
		goto out;
	for (; drawn < POOL_BATCHES; drawn++) {
		if (sdc_eb_batch_alloc(&pool[drawn], &cfg))
			goto out;
		sdc_eb_batch_draw(&pool[drawn], &cfg, (uint64_t)drawn);
		lookups += pool[drawn].off[pool[drawn].nbags];
	}
	/* the class's expectation, as the probe computes it (embbag.c) */
	const enum sdc_eb_sums sums = cfg.cls == SDC_EB_FAST ? SDC_EB_SUMS_STATS : SDC_EB_SUMS;
	struct eb_case cases[4] = {
		{ .cfg = cfg, .impl = impl, .table = &plain, .pool = pool, .out = out, .expect = expect },
		{ .cfg = cfg, .impl = impl, .table = &checked, .pool = pool, .out = out, .expect = expect,
		  .checked = true, .sums = sums, .skip_checks = skip_checks },
		{ .cfg = cfg, .impl = impl, .table = &checked, .pool = pool, .out = out, .expect = expect,
		  .checked = true, .sums = sums, .skip_checks = skip_checks, .sweep_rows = sweep_rows },
		/* the plain operator on the checked table's rows: what the layout alone costs */
		{ .cfg = cfg, .impl = impl, .table = &checked, .pool = pool, .out = out, .expect = expect },
	};
	enum { N = 4 };
	double *t = malloc(sizeof(double) * MAX_TURNS * N), *v = malloc(sizeof(double) * MAX_TURNS);
	if (!t || !v) {
		free(t);
		free(v);
		goto out;
	}
	const int turns = paired_race(cases, N, seconds, t);
	/* One call: CALL_BATCHES batches, whose lookups the pool's mean gives. */
	const double per_call = lookups / POOL_BATCHES * CALL_BATCHES;
	double rate[N], q[3], qs[3], ql[3], tmp[3];
	for (int i = 0; i < N; i++) {
		for (int k = 0; k < turns; k++)
			v[k] = t[(size_t)k * N + i];
		quartiles(v, turns, tmp);
		rate[i] = per_call / tmp[1] / 1e6;
	}
	for (int k = 0; k < turns; k++)
		v[k] = t[(size_t)k * N + 1] / t[(size_t)k * N] - 1;
	quartiles(v, turns, q);
	for (int k = 0; k < turns; k++)
		v[k] = t[(size_t)k * N + 2] / t[(size_t)k * N] - 1;
	quartiles(v, turns, qs);
	for (int k = 0; k < turns; k++)
		v[k] = t[(size_t)k * N + 1] / t[(size_t)k * N + 3] - 1;
	quartiles(v, turns, ql);
	free(t);
	free(v);
	printf("%-5s %4d %5zu %5zu  %8.2f %6.2f  %8.2f %6.2f  %8.2f  %+7.2f%% [%+.1f%%, %+.1f%%]  %+7.2f%%  %+7.2f%%  %6d\n",
	       fmt == SDC_EB_8BIT ? "8bit" : "4bit", d, plain.l.stride, checked.l.stride, rate[0],
	       rate[0] * (double)plain.l.stride / 1e3, rate[1], rate[1] * (double)checked.l.stride / 1e3, rate[2],
	       100 * q[1], 100 * q[0], 100 * q[2], 100 * qs[1], 100 * ql[1], turns);
	fflush(stdout);
	if (cases[1].failures || cases[2].failures)
		printf("note: %ld bags or rows failed their checks during the benchmark: this host needs a closer look\n",
		       cases[1].failures + cases[2].failures);
	rc = 0;
out:
	for (int i = 0; i < drawn; i++)
		sdc_eb_batch_release(&pool[i]);
	free(pool);
	free(out);
	free(expect);
	sdc_eb_table_release(&plain);
	sdc_eb_table_release(&checked);
	if (rc)
		sdc_error("bench embbag: out of memory");
	return rc;
}

static const char *const format_names[] = { "8bit", "4bit", NULL };
static const char *const class_names[] = { "exact", "fast", NULL }; /* enum sdc_eb_class's order */

struct bench_opts {
	struct dim_list dims;
	uint32_t formats;
	int cls;
	bool skip_checks;
	int64_t rows, pooling, sweep_rows;
	double seconds;
};

#define OPT(f) offsetof(struct bench_opts, f)
static const struct sdc_option bench_options[] = {
	{ .name = "dims", .short_name = 'd', .metavar = "LIST", .type = SDC_OPT_CUSTOM, .offset = OPT(dims),
	  .parse = parse_dims, .def = "32,64,128,256", .help = "embedding widths" },
	{ .name = "formats", .short_name = 'f', .metavar = "LIST", .type = SDC_OPT_SET, .offset = OPT(formats),
	  .choices = format_names, .def = "8bit,4bit", .help = "row formats" },
	{ .name = "rows", .short_name = 'r', .metavar = "N", .type = SDC_OPT_INT, .offset = OPT(rows), .def = "4000000",
	  .imin = 1024, .imax = UINT32_MAX, .help = "table rows (Li et al.'s size)" },
	{ .name = "pooling", .short_name = 'p', .metavar = "N", .type = SDC_OPT_INT, .offset = OPT(pooling), .def = "100",
	  .imin = 1, .imax = SDC_EB_MAX_POOLING, .help = "mean rows per bag" },
	{ .name = "sweep-rows", .short_name = 's', .metavar = "N", .type = SDC_OPT_INT, .offset = OPT(sweep_rows),
	  .def = "512", .imin = 0, .imax = 1 << 24, .help = "rows re-verified per 32 batches in the +sweep column" },
	{ .name = "seconds", .short_name = 't', .metavar = "S", .type = SDC_OPT_CUSTOM, .offset = OPT(seconds),
	  .parse = sdc_cli_opt_seconds, .def = "3", .help = "time per contender and case" },
	{ .name = "class", .metavar = "CLASS", .type = SDC_OPT_ENUM, .offset = OPT(cls), .choices = class_names,
	  .def = "fast", .help = "exact or fast: the numerics class of the data and the checks (the CPU benchmark)" },
	{ .name = "skip-checks", .type = SDC_OPT_FLAG, .offset = OPT(skip_checks),
	  .help = "the checked columns compute each bag's expectation but check no bag: what the checks alone cost "
		  "is the difference from a run without it (the CPU benchmark)" },
	SDC_OPT_END,
};

static int bench_main(struct sdc_cmd *cmd)
{
	const struct bench_opts *o = cmd->opts;
	const uint64_t rows = (uint64_t)o->rows, pooling = (uint64_t)o->pooling, sweep_rows = (uint64_t)o->sweep_rows;
	const double seconds = o->seconds;
	struct sdc_run run;
	if (cmd->cli.json && !cmd->cli.have_gpus)
		return sdc_cli_bad(&cmd->cli, "--json: only the GPU benchmark (--gpus) writes a report");
	if (cmd->cli.have_gpus && (o->cls != SDC_EB_FAST || o->skip_checks))
		return sdc_cli_bad(&cmd->cli,
				   "--class and --skip-checks are the CPU benchmark's: the GPU benchmark checks the fast class");
	if (sdc_cli_bench_start(cmd, &run))
		return sdc_cli_unknown(&cmd->cli);
	if (cmd->cli.have_gpus) {
		/* a GPU: plain against checked lookups there, with the bits against this CPU's kernel */
		const int code = sdc_embbag_bench_gpu(cmd, &run, o->dims.v, o->dims.n, o->formats, rows, (int)pooling, seconds);
		sdc_run_release(&run);
		return code;
	}
	const struct sdc_device *dev = &run.devices[0];
	const struct sdc_eb_impl *impl = sdc_eb_find("auto");
	const struct sdc_eb_cfg base = { .cls = (enum sdc_eb_class)o->cls, .rows = rows, .batch = 10,
					 .pooling = (int)pooling, .seed = 1, .c_sigma = SDC_EB_C_SIGMA };
	printf("sdcscan bench embbag: one thread on %s (%s), kernel %s; %" PRIu64 " rows, bags of 10 x %" PRIu64
	       " (lengths %" PRIu64 "..%" PRIu64 "), sum and weighted batches alternating, %s-class data;\n"
	       "contenders called in turns (about 1 ms each, order rotating), %.1f s each per case; rates are the median "
	       "call,\noverhead the median over turns of checked/plain - 1 [quartiles].\n"
	       "plain: FBGEMM fused rows, no checks. checked: rows with their sums, expectation per row, %s. "
	       "+sweep: checked plus %" PRIu64 " rows re-verified per %d batches (the probe's default).\n",
	       dev->id, dev->model, impl->name, rows, pooling, pooling - pooling / 2, pooling + pooling / 2,
	       class_names[o->cls], seconds, o->skip_checks ? "no bag checked (--skip-checks)" : "every bag checked",
	       sweep_rows, CALL_BATCHES);
	printf("%-5s %4s %5s %5s  %8s %6s  %8s %6s  %8s  %8s %-17s %8s  %8s  %6s\n", "rows", "d", "B/row", "+sums",
	       "plain", "GB/s", "checked", "GB/s", "+sweep", "overhead", "[quartiles]", "+sweep", "checks", "turns");
	printf("%-5s %4s %5s %5s  %8s %6s  %8s %6s  %8s\n", "", "", "", "", "Mlook/s", "", "Mlook/s", "", "Mlook/s");
	int rc = 0;
	for (int f = 0; f < 2 && !rc; f++)
		for (int i = 0; i < o->dims.n && !rc && sdc_opt_set_has(o->formats, f); i++)
			rc = bench_case((enum sdc_eb_format)f, o->dims.v[i], &base, sweep_rows, o->skip_checks, seconds,
					impl);
	sdc_run_release(&run);
	return rc ? sdc_cli_unknown(&cmd->cli) : 0;
}

const struct sdc_command sdc_embbag_bench = {
	.name = "embbag",
	.summary = "plain against ABFT-checked EmbeddingBag on one pinned core, called in turns (--gpus: on a GPU, "
		   "with the bits against this CPU's kernel)",
	.options = bench_options,
	.opts_size = sizeof(struct bench_opts),
	.common = SDC_CF_CPUS | SDC_CF_GPUS | SDC_CF_JSON,
	.fn = bench_main,
};
