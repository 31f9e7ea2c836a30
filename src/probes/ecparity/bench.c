/*
 * sdcscan bench ecparity: what ECRM's parity costs, on one pinned core, contenders in turns.
 *   training:  the probe's training, as its servers run it: each update drawn from the workload's
 *              seed (the entry and its gradient: sdc_ec_draw_update, the probe's stand-in for a
 *              model's backward pass) and applied by Adagrad to S servers' shards;
 *   bare:      the Adagrad updates alone, their gradients drawn beforehand (the harshest
 *              denominator, printed beside: no model's step is this light);
 *   +parity:   either, and what the probe's servers on one host do for it: each update's
 *              difference recorded in the same pass (sdc_ec_bundle_update), a step's records
 *              closed as one message with its CRC32C (the probe's step: --batch updates), and
 *              at the holders each message copied, its CRC checked and both parities moved;
 *   verify:    one verification of every stripe and column, per `steps x batch` updates of each
 *              server (the probe's default round), as a share of that round's training.
 * Targets: parity maintenance within 10% of the probe's training time (ECRM measured 4% against a
 * DLRM step, and 33% for checkpointing), and a lost server's rebuild at least half the core's memory-copy bandwidth,
 * both measured in this run. Exit 0 every target met, 2 one missed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "probe/command.h"
#include "run/facts.h"
#include "kernels/crc32c.h"
#include "probes/ecparity/parity.h"
#include "probe/probe.h"
#include "probes/ecparity/ecparity.h"
#include "base/message.h"
#include "base/clock.h"

struct bench_opts {
	int64_t servers, rows, dim, updates, steps, batch;
	double seconds;
};

#define OPT(f) offsetof(struct bench_opts, f)
static const struct sdc_option bench_options[] = {
	{ .name = "servers", .short_name = 'S', .metavar = "N", .type = SDC_OPT_INT, .offset = OPT(servers), .def = "4",
	  .imin = 2, .imax = 64, .help = "servers whose shards the one core trains" },
	{ .name = "rows", .short_name = 'r', .metavar = "N", .type = SDC_OPT_INT, .offset = OPT(rows), .def = "262144",
	  .imin = 1024, .imax = 1 << 24, .help = "entries per server" },
	{ .name = "dim", .short_name = 'd', .metavar = "N", .type = SDC_OPT_INT, .offset = OPT(dim), .def = "32",
	  .imin = 1, .imax = SDC_EC_MAX_DIM, .help = "weights per entry" },
	{ .name = "updates", .short_name = 'u', .metavar = "N", .type = SDC_OPT_INT, .offset = OPT(updates),
	  .def = "131072", .imin = 64, .imax = 1 << 22, .help = "updates per turn (turns of tens of ms: a steadier median)" },
	{ .name = "steps", .metavar = "N", .type = SDC_OPT_INT, .offset = OPT(steps), .def = "200", .imin = 1,
	  .imax = 1 << 20, .help = "steps per round of the probe (for the verify share)" },
	{ .name = "batch", .metavar = "N", .type = SDC_OPT_INT, .offset = OPT(batch), .def = "256", .imin = 1,
	  .imax = 1 << 20, .help = "updates per step of the probe (for the verify share)" },
	{ .name = "seconds", .short_name = 't', .metavar = "S", .type = SDC_OPT_CUSTOM, .offset = OPT(seconds),
	  .parse = sdc_cli_opt_seconds, .def = "3", .help = "time per contender" },
	SDC_OPT_END,
};

struct work {
	struct sdc_ec_state st; /* trained with parity maintenance */
	uint32_t *plain;        /* the same shards, trained without */
	int n, d, per;          /* updates a turn, weights, updates a message (the probe's batch) */
	struct sdc_ec_work draw; /* the workload the probe draws its updates from */
	int *server, *row;
	float *grad;
	uint32_t *recv;         /* where a holder copies a message */
	uint32_t bad;           /* a CRC that failed (none should) */
};

/*
 * One turn: n updates (from a drawn list). Plain: the updates alone. With parity, as the probe's
 * servers on one host do it (host_train.c's training and receive): the training core records each
 * update's difference in the step's message and closes every `per` updates' message with its
 * CRC32C (timed as its own overhead, *sender); then the holders copy each message, check its CRC
 * and move the parity words (timed apart, *holder: in ECRM and in the probe that is other
 * servers' cores). Each message's records come from one server here (the probe's do); the updates
 * of a turn cycle through the servers a message at a time.
 */
static void turn(struct work *wk, bool parity, bool bare, uint64_t round, uint32_t *msgs, double *sender,
		 double *holder)
{
	float drawn[SDC_EC_MAX_DIM];
	const int words = wk->st.l.words;
	const size_t bw = sdc_ec_bundle_words(wk->per, words);
	const double t0 = sdc_now();
	struct sdc_ec_bundle *b = NULL;
	for (int i = 0; i < wk->n; i++) {
		/* (both contenders take the same entries: a message's updates are one server's) */
		const int s = wk->server[i / wk->per * wk->per];
		int r = wk->row[i];
		const float *g = wk->grad + (size_t)i * (size_t)wk->d;
		if (!bare) /* the probe's update: its entry and gradient drawn as its servers draw them */
			r = sdc_ec_draw_update(&wk->draw, s, round, i / wk->per, i % wk->per, drawn), g = drawn;
		if (!parity) {
			sdc_ec_adagrad(wk->plain + ((size_t)s * (size_t)wk->st.l.rows + (size_t)r) * (size_t)words, wk->d, g);
			continue;
		}
		if (i % wk->per == 0) {
			b = (struct sdc_ec_bundle *)(msgs + (size_t)(i / wk->per) * bw);
			*b = (struct sdc_ec_bundle){ .from = (uint32_t)s, .step = (uint32_t)(i / wk->per) };
		}
		sdc_ec_bundle_update(b, sdc_ec_entry(&wk->st, s, r), r, wk->d, g);
		if ((i + 1) % wk->per == 0 || i + 1 == wk->n)
			b->crc = sdc_ec_bundle_crc(b, b->n, words);
	}
	const double t1 = sdc_now();
	*sender = t1 - t0;
	if (!parity)
		return;
	for (int i = 0; i < wk->n; i += wk->per) {
		const struct sdc_ec_bundle *m = (const struct sdc_ec_bundle *)(msgs + (size_t)(i / wk->per) * bw);
		struct sdc_ec_bundle *got = (struct sdc_ec_bundle *)wk->recv;
		memcpy(got, m, 4 * sdc_ec_bundle_words((int)m->n, words));
		if (sdc_ec_bundle_crc(got, m->n, words) != got->crc)
			wk->bad = 1;
		else
			sdc_ec_bundle_apply(&wk->st, got, -1);
	}
	*holder = sdc_now() - t1;
}

static int cmp_double(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The buffers of a run of the benchmark, filled from the seed: every shard and its parities,
 * the same shards to train without, the drawn updates. 0, or -1 out of memory. */
static int work_init(struct work *wk, const struct sdc_ec_layout *l)
{
	const size_t shard = (size_t)l->rows * (size_t)l->words * 4;
	wk->server = malloc(sizeof(int) * (size_t)wk->n);
	wk->row = malloc(sizeof(int) * (size_t)wk->n);
	wk->grad = malloc(sizeof(float) * (size_t)wk->n * (size_t)wk->d);
	wk->recv = malloc(4 * sdc_ec_bundle_words(wk->per, l->words));
	wk->plain = calloc((size_t)l->servers, shard); /* (as the state's data: the same kind of pages) */
	if (!wk->server || !wk->row || !wk->grad || !wk->plain || !wk->recv || sdc_ec_state_alloc(&wk->st, l))
		return -1;
	const struct sdc_rng r = sdc_rng_make(1, SDC_RNG_PROBE_ECPARITY, 0, 0, 9);
	for (size_t i = 0; i < (size_t)l->servers * (size_t)l->rows * (size_t)l->words; i++) {
		const float v = (float)((sdc_rng_uniform(&r, i) - 0.5) * 0.1);
		memcpy(&wk->st.data[i], &v, 4);
	}
	for (int i = 0; i < wk->n; i++) {
		wk->server[i] = (int)sdc_rng_below(&r, 1ull << 40 | (uint64_t)i * 2, (uint64_t)l->servers);
		wk->row[i] = (int)sdc_rng_below(&r, 1ull << 40 | ((uint64_t)i * 2 + 1), (uint64_t)l->rows);
		for (int x = 0; x < wk->d; x++)
			wk->grad[(size_t)i * (size_t)wk->d + (size_t)x] =
				(float)(sdc_rng_uniform(&r, 1ull << 41 | ((uint64_t)i * 64 + (uint64_t)x)) * 2 - 1);
	}
	sdc_ec_encode(&wk->st);
	memcpy(wk->plain, wk->st.data, shard * (size_t)l->servers);
	return 0;
}

static void work_release(struct work *wk)
{
	free(wk->server), free(wk->row), free(wk->grad), free(wk->plain), free(wk->recv);
	sdc_ec_state_free(&wk->st);
}

/* What the turns measured: medians of sorted turns, and quartiles of the ratios. */
struct race {
	int turns;
	double plain, with, bare;     /* seconds of a turn: the probe's training without and with parity; bare */
	double over, q1, q3;          /* parity's overhead on the training core, and its quartiles */
	double bover, bq1, bq3;       /* the same against the bare updates */
	double holders;               /* the holders' work as a share of the training */
};

/* Training with and without parity, in turns, order alternating; medians. */
static void race_turns(struct work *wk, uint32_t *msgs, double seconds, struct race *out)
{
	enum { MAX_TURNS = 4096 };
	static double t_plain[MAX_TURNS], t_parity[MAX_TURNS], t_holder[MAX_TURNS], ratio[MAX_TURNS], hratio[MAX_TURNS];
	static double t_bare[MAX_TURNS], t_bare_parity[MAX_TURNS], bratio[MAX_TURNS];
	int turns = 0;
	const double t_end = sdc_now() + 4 * seconds;
	while (turns < MAX_TURNS && (turns < 5 || sdc_now() < t_end)) {
		/* the probe's training with and without, then the bare updates with and without */
		for (int b = 0; b < 2; b++)
			for (int k = 0; k < 2; k++) {
				const bool parity = (k + turns) % 2, bare = b;
				double sender = 0, holder = 0;
				turn(wk, parity, bare, (uint64_t)turns, msgs, &sender, &holder);
				if (bare)
					*(parity ? &t_bare_parity[turns] : &t_bare[turns]) = sender;
				else if (parity)
					t_parity[turns] = sender, t_holder[turns] = holder;
				else
					t_plain[turns] = sender;
			}
		ratio[turns] = t_parity[turns] / t_plain[turns];
		hratio[turns] = t_holder[turns] / t_plain[turns];
		bratio[turns] = t_bare_parity[turns] / t_bare[turns];
		turns++;
	}
	qsort(t_plain, (size_t)turns, sizeof(double), cmp_double);
	qsort(t_parity, (size_t)turns, sizeof(double), cmp_double);
	qsort(ratio, (size_t)turns, sizeof(double), cmp_double);
	qsort(hratio, (size_t)turns, sizeof(double), cmp_double);
	qsort(bratio, (size_t)turns, sizeof(double), cmp_double);
	qsort(t_bare, (size_t)turns, sizeof(double), cmp_double);
	*out = (struct race){ .turns = turns, .plain = t_plain[turns / 2], .with = t_parity[turns / 2],
			      .bare = t_bare[turns / 2], .over = ratio[turns / 2] - 1, .q1 = ratio[turns / 4] - 1,
			      .q3 = ratio[3 * turns / 4] - 1, .bover = bratio[turns / 2] - 1, .bq1 = bratio[turns / 4] - 1,
			      .bq3 = bratio[3 * turns / 4] - 1, .holders = hratio[turns / 2] };
}

/* One verification of everything, and the rebuild of one server against memcpy of the same bytes
 * (into out, through src and dst): best of five each. */
struct checks {
	double verify_s, rebuild_s, copy_s;
	bool rebuilt_right;
};
static void time_checks(struct work *wk, uint32_t *out, uint8_t *src, uint8_t *dst, size_t bytes, struct checks *c)
{
	struct sdc_ec_break br;
	c->verify_s = c->rebuild_s = c->copy_s = 1e30;
	for (int i = 0; i < 5; i++) {
		const double t0 = sdc_now();
		(void)sdc_ec_verify_stripes(&wk->st, &br, 1);
		(void)sdc_ec_verify_columns(&wk->st, &br, 1);
		c->verify_s = SDC_MIN(c->verify_s, sdc_now() - t0);
	}
	for (int i = 0; i < 5; i++) {
		double t0 = sdc_now();
		sdc_ec_rebuild(&wk->st, 0, out);
		c->rebuild_s = SDC_MIN(c->rebuild_s, sdc_now() - t0);
		t0 = sdc_now();
		memcpy(dst, src, bytes);
		c->copy_s = SDC_MIN(c->copy_s, sdc_now() - t0);
	}
	c->rebuilt_right = !memcmp(out, sdc_ec_entry(&wk->st, 0, 0), (size_t)wk->st.l.rows * (size_t)wk->st.l.words * 4);
}

/* The figures, printed and as the report's JSON; whether every target was met. */
static bool say(const struct bench_opts *o, const struct sdc_run *run, const struct work *wk, const struct race *ra,
		const struct checks *c, bool consistent, struct sdc_facts *j)
{
	const struct sdc_ec_layout *l = &wk->st.l;
	const double shard = (double)l->rows * l->words * 4, bytes = shard * l->k;
	const double rebuild_bw = bytes / c->rebuild_s, copy_bw = bytes / c->copy_s;
	const double round_train = ra->plain / wk->n * (double)o->steps * (double)o->batch * l->servers;
	const bool over_ok = ra->over <= 0.10, rebuild_ok = rebuild_bw >= 0.5 * copy_bw && c->rebuilt_right;
	printf("sdcscan bench ecparity: one thread on %s (%s); %d servers, k %d, %d entries of %d weights each "
	       "(%.0f MiB), %d updates a turn, %d turns a contender\n",
	       run->devices[0].id, run->devices[0].model, l->servers, l->k, l->rows, wk->d, shard * l->servers / 1048576,
	       wk->n, ra->turns);
	printf("  training          %8.3f Mupd/s   (the probe's: each update drawn from the seed, then Adagrad)\n",
	       wk->n / ra->plain / 1e6);
	printf("  +parity           %8.3f Mupd/s   on the training core: %+.1f%% of training time [quartiles %+.1f%%, "
	       "%+.1f%%] (differences, a message a step, CRC32C)\n",
	       wk->n / ra->with / 1e6, 100 * ra->over, 100 * ra->q1, 100 * ra->q3);
	printf("  bare Adagrad      %8.3f Mupd/s   (gradients drawn beforehand): +parity %+.1f%% [quartiles %+.1f%%, "
	       "%+.1f%%]\n",
	       wk->n / ra->bare / 1e6, 100 * ra->bover, 100 * ra->bq1, 100 * ra->bq3);
	printf("  at the holders    %8.1f%% of the training time, on their own cores (message copied, CRC checked, "
	       "parity words moved: a random access each); parities consistent after: %s\n",
	       100 * ra->holders, consistent ? "yes" : "NO");
	printf("  verify            %8.3f ms for every group, %.1f%% of a round (%" PRId64 " steps x %" PRId64
	       " updates on each server)\n",
	       c->verify_s * 1e3, 100 * c->verify_s / round_train, o->steps, o->batch);
	printf("  rebuild           %8.2f GB/s read (%.1f MiB in %.2f ms, bit for bit: %s); memcpy %.2f GB/s: %.0f%%\n",
	       rebuild_bw / 1e9, bytes / 1048576, c->rebuild_s * 1e3, c->rebuilt_right ? "yes" : "NO", copy_bw / 1e9,
	       100 * rebuild_bw / copy_bw);
	printf("target: parity maintenance within 10%% of the probe's training time on its core (ECRM: 4%% of a DLRM "
	       "step): %s\n",
	       over_ok ? "met" : "MISSED");
	printf("target: rebuild at least 50%% of memcpy bandwidth, bit for bit: %s\n", rebuild_ok ? "met" : "MISSED");
	sdc_facts_int(j, "servers", l->servers);
	sdc_facts_int(j, "k", l->k);
	sdc_facts_int(j, "rows", l->rows);
	sdc_facts_int(j, "dim", wk->d);
	sdc_facts_int(j, "turns", ra->turns);
	sdc_facts_real(j, "training_mupd_s", wk->n / ra->plain / 1e6);
	sdc_facts_real(j, "parity_mupd_s", wk->n / ra->with / 1e6);
	sdc_facts_real(j, "maintenance_overhead", ra->over);
	sdc_facts_real(j, "bare_mupd_s", wk->n / ra->bare / 1e6);
	sdc_facts_real(j, "maintenance_overhead_bare", ra->bover);
	sdc_facts_real(j, "holder_load", ra->holders);
	sdc_facts_bool(j, "parities_consistent", consistent);
	sdc_facts_real(j, "verify_share_of_round", c->verify_s / round_train);
	sdc_facts_real(j, "rebuild_gb_s", rebuild_bw / 1e9);
	sdc_facts_real(j, "memcpy_gb_s", copy_bw / 1e9);
	sdc_facts_real(j, "rebuild_share_of_memcpy", rebuild_bw / copy_bw);
	sdc_facts_bool(j, "rebuilt_bit_for_bit", c->rebuilt_right);
	sdc_facts_bool(j, "maintenance_target_met", over_ok);
	sdc_facts_bool(j, "rebuild_target_met", rebuild_ok);
	return over_ok && rebuild_ok && consistent;
}

static int bench_main(struct sdc_cmd *cmd)
{
	const struct bench_opts *o = cmd->opts;
	struct sdc_run run;
	if (sdc_cli_bench_start(cmd, &run))
		return sdc_cli_unknown(&cmd->cli);
	const struct sdc_ec_layout l = { .servers = (int)o->servers, .k = sdc_ec_auto_k((int)o->servers),
					 .rows = (int)o->rows, .words = (int)o->dim + 1 };
	struct work wk = { .n = (int)o->updates, .d = (int)o->dim, .per = (int)SDC_MIN(o->batch, o->updates) };
	wk.draw = (struct sdc_ec_work){ .seed = 1, .rows = l.rows, .d = wk.d, .steps = (wk.n + wk.per - 1) / wk.per,
					.batch = wk.per };
	char why[256];
	int rc = -1;
	const size_t shard = (size_t)l.rows * (size_t)l.words * 4;
	uint32_t *out = NULL, *msgs = NULL;
	uint8_t *src = NULL, *dst = NULL;
	struct sdc_facts *j = sdc_facts_new();
	if (sdc_ec_layout_check(&l, why, sizeof(why))) {
		sdc_error("bench ecparity: %s", why);
		goto done;
	}
	out = malloc(shard);
	msgs = malloc(4 * sdc_ec_bundle_words(wk.per, l.words) * (size_t)((wk.n + wk.per - 1) / wk.per));
	src = malloc(shard * (size_t)l.k), dst = malloc(shard * (size_t)l.k);
	if (!out || !msgs || !src || !dst || work_init(&wk, &l)) {
		sdc_error("bench ecparity: out of memory");
		goto done;
	}
	memset(out, 0, shard), memset(src, 1, shard * (size_t)l.k), memset(dst, 0, shard * (size_t)l.k);
	struct race ra;
	race_turns(&wk, msgs, o->seconds, &ra);
	/* the maintained parities are still the parities of the data (the bench computed them right) */
	struct sdc_ec_break br;
	const bool consistent = !wk.bad && !sdc_ec_verify_stripes(&wk.st, &br, 1) && !sdc_ec_verify_columns(&wk.st, &br, 1);
	struct checks c;
	time_checks(&wk, out, src, dst, shard * (size_t)l.k, &c);
	const bool met = say(o, &run, &wk, &ra, &c, consistent, j);
	rc = sdc_cli_facts_end(&cmd->cli, j, met);
done:
	sdc_facts_free(j);
	free(msgs), free(out), free(src), free(dst);
	work_release(&wk);
	sdc_run_release(&run);
	return rc < 0 ? sdc_cli_unknown(&cmd->cli) : rc;
}

const struct sdc_command sdc_ecparity_bench = {
	.name = "ecparity",
	.summary = "training with ECRM's parity maintenance against training without it, verification's share of a "
		   "round, and a server's rebuild against memcpy, on one pinned core; exit 0 every target met, 2 one "
		   "missed",
	.options = bench_options,
	.opts_size = sizeof(struct bench_opts),
	.common = SDC_CF_CPUS | SDC_CF_JSON,
	.fn = bench_main,
};
