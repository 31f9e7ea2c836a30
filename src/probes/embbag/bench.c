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
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "commands/cli.h"
#include "probes/embbag/abft.h"
#include "base/util.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sdcscan bench embbag [OPTIONS]\n"
		"Plain against ABFT-checked EmbeddingBag on one pinned core, called in turns.\n\n"
		"  -d, --dims LIST      embedding widths (default 32,64,128,256)\n"
		"  -f, --formats LIST   8bit, 4bit (default both)\n"
		"  -r, --rows N         table rows (default 4000000, as Li et al.)\n"
		"  -p, --pooling N      mean rows per bag (default 100)\n"
		"  -s, --sweep-rows N   rows re-verified per 32 batches in the +sweep column (default 512)\n"
		"  -t, --seconds S      time per contender and case (default 3)\n"
		"  -c, --cpus N         the CPU to pin to (default: the first allowed)\n"
		"  -h, --help           this help\n");
}

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
	bool checked, nocheck;
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
		if (!c->checked || c->nocheck)
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

static int cmp_double(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Median (q[1]) and quartiles of v[0..n), sorted in place. */
static void quartiles(double *v, int n, double q[3])
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	q[0] = v[n / 4];
	q[1] = v[n / 2];
	q[2] = v[3 * n / 4];
}

static int parse_dims(const char *s, int *dims, int max)
{
	int n = 0;
	while (*s) {
		char *end;
		const long v = strtol(s, &end, 10);
		if (end == s || v < 16 || v > SDC_EB_DMAX || v % 16 || n == max || (*end && *end != ','))
			return -1;
		dims[n++] = (int)v;
		s = *end ? end + 1 : end;
	}
	return n;
}

static int bench_case(enum sdc_eb_format fmt, int d, const struct sdc_eb_cfg *base, uint64_t sweep_rows,
		      double seconds, const struct sdc_eb_impl *impl)
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
	struct eb_case cases[4] = {
		{ .cfg = cfg, .impl = impl, .table = &plain, .pool = pool, .out = out, .expect = expect },
		{ .cfg = cfg, .impl = impl, .table = &checked, .pool = pool, .out = out, .expect = expect,
		  .checked = true, .sums = getenv("EXACT") ? SDC_EB_SUMS : SDC_EB_SUMS_STATS, .nocheck = getenv("NOCHECK") != NULL },
		{ .cfg = cfg, .impl = impl, .table = &checked, .pool = pool, .out = out, .expect = expect,
		  .checked = true, .sums = SDC_EB_SUMS_STATS, .sweep_rows = sweep_rows },
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

int sdc_bench_embbag(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dims", required_argument, NULL, 'd' },    { "formats", required_argument, NULL, 'f' },
		{ "rows", required_argument, NULL, 'r' },    { "pooling", required_argument, NULL, 'p' },
		{ "sweep-rows", required_argument, NULL, 's' }, { "seconds", required_argument, NULL, 't' },
		{ "cpus", required_argument, NULL, 'c' },    { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sdc_cli cli = { .command = "bench embbag" };
	int dims[8] = { 32, 64, 128, 256 }, ndims = 4, c;
	bool formats[2] = { true, true };
	double seconds = 3;
	uint64_t rows = 4000000, pooling = 100, sweep_rows = 512;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":d:f:r:p:s:t:c:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case 'd':
			ndims = parse_dims(optarg, dims, 8);
			if (ndims <= 0)
				return sdc_cli_bad(&cli, "--dims '%s': expected widths that are multiples of 16 from 16 to %d, "
							 "comma-separated (at most 8)",
						   optarg, SDC_EB_DMAX);
			break;
		case 'f':
			formats[0] = strstr(optarg, "8bit") != NULL;
			formats[1] = strstr(optarg, "4bit") != NULL;
			if ((!formats[0] && !formats[1]) || strspn(optarg, "84bit,") != strlen(optarg))
				return sdc_cli_bad(&cli, "--formats '%s': expected 8bit, 4bit or both, comma-separated", optarg);
			break;
		case 'r':
			if (sdc_cli_uint(&cli, "--rows", optarg, 1024, UINT32_MAX, &rows))
				return sdc_exit_code(SDC_UNKNOWN, cli.exit_style);
			break;
		case 'p':
			if (sdc_cli_uint(&cli, "--pooling", optarg, 1, SDC_EB_MAX_POOLING, &pooling))
				return sdc_exit_code(SDC_UNKNOWN, cli.exit_style);
			break;
		case 's':
			if (sdc_cli_uint(&cli, "--sweep-rows", optarg, 0, 1u << 24, &sweep_rows))
				return sdc_exit_code(SDC_UNKNOWN, cli.exit_style);
			break;
		case 't':
			if (sdc_cli_seconds(&cli, optarg, &seconds))
				return sdc_exit_code(SDC_UNKNOWN, cli.exit_style);
			break;
		default:
			if (sdc_cli_default(&cli, c, argv))
				return sdc_exit_code(SDC_UNKNOWN, cli.exit_style);
		}
	}
	for (int i = optind; i < argc; i++)
		if (strcmp(argv[i], "embbag"))
			return sdc_cli_bad(&cli, "unexpected argument '%s'", argv[i]);

	struct sdc_run run;
	if (sdc_cli_bench_start(&cli, &run, argc, argv))
		return sdc_exit_code(SDC_UNKNOWN, cli.exit_style);
	const struct sdc_device *dev = &run.devices[0];
	const struct sdc_eb_impl *impl = sdc_eb_find("auto");
	const struct sdc_eb_cfg base = { .cls = SDC_EB_FAST, .rows = rows, .batch = 10, .pooling = (int)pooling,
					 .seed = 1, .c_sigma = SDC_EB_C_SIGMA };
	printf("sdcscan bench embbag: one thread on %s (%s), kernel %s; %" PRIu64 " rows, bags of 10 x %" PRIu64
	       " (lengths %" PRIu64 "..%" PRIu64 "), sum and weighted batches alternating, fast-class data;\n"
	       "contenders called in turns (about 1 ms each, order rotating), %.1f s each per case; rates are the median "
	       "call,\noverhead the median over turns of checked/plain - 1 [quartiles].\n"
	       "plain: FBGEMM fused rows, no checks. checked: rows with their sums, expectation per row, every bag "
	       "checked. +sweep: checked plus %" PRIu64 " rows re-verified per %d batches (the probe's default).\n",
	       dev->id, dev->model, impl->name, rows, pooling, pooling - pooling / 2, pooling + pooling / 2, seconds,
	       sweep_rows, CALL_BATCHES);
	printf("%-5s %4s %5s %5s  %8s %6s  %8s %6s  %8s  %8s %-17s %8s  %8s  %6s\n", "rows", "d", "B/row", "+sums",
	       "plain", "GB/s", "checked", "GB/s", "+sweep", "overhead", "[quartiles]", "+sweep", "checks", "turns");
	printf("%-5s %4s %5s %5s  %8s %6s  %8s %6s  %8s\n", "", "", "", "", "Mlook/s", "", "Mlook/s", "", "Mlook/s");
	int rc = 0;
	for (int f = 0; f < 2 && !rc; f++)
		for (int i = 0; i < ndims && !rc && formats[f]; i++)
			rc = bench_case((enum sdc_eb_format)f, dims[i], &base, sweep_rows, seconds, impl);
	sdc_run_release(&run);
	return rc ? sdc_exit_code(SDC_UNKNOWN, cli.exit_style) : 0;
}
