/*
 * ecparity: ECRM's erasure-coded embedding shards (seeds/README: 002) as a detector. S servers
 * each own `rows` entries of an embedding table (d fp32 weights and the row-wise Adagrad
 * accumulator) and train them on a deterministic sparse workload; every update's difference goes
 * to the server that holds the entry's stripe parity (ECRM's rotating placement) and to the one
 * that holds its server's column parity, a step's differences as one message with a CRC32C
 * (ecparity.h: struct sdc_ec_bundle), which they apply when they next look (asynchronously from
 * the updates, as ECRM does). The parity arithmetic is
 * exact (kernels/ecparity.h): every round, when the messages are in, every parity is compared by
 * equality with its members, so a clean run has no finding, and one corrupt word breaks one
 * stripe and one column by the same amount: named at their intersection (server, entry, word,
 * expected, actual, XOR). A message whose CRC fails is named as the link's (the sender's copy
 * gives the element and bits) and never applied; a parity word that breaks alone is the parity
 * holder's. A lost server (--inject ...:L) is rebuilt bit for bit from the parities and the
 * other members while the others train the next round (a helper thread of the next server, ECRM's
 * "training continues during recovery"), put in service as rebuilt and caught up on the round it
 * missed; its check against a deterministic replay of its training runs on a thread of its own
 * from the loss on and is read when done, so the others do not wait for a replay that grows with
 * the rounds; the time and rate of the rebuild go into the report (run.environment.ecparity).
 *
 * One host: the servers are the selected CPUs, one worker a server, messages through shared
 * memory, rounds kept in step by a barrier (messages drained, then verification). Each round is
 * one iteration.
 */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/digest.h"
#include "base/rng.h"
#include "kernels/crc32c.h"
#include "kernels/ecparity.h"
#include "fleet.h"
#include "probe.h"
#include "fatal.h"
#include "probes/ecparity/ecparity.h"

#define MAX_DIM SDC_EC_MAX_DIM
#define MAX_BREAKS 64

#define OPT(f) offsetof(struct sdc_ec_opts, f)
static const struct sdc_option ec_options[] = {
	{ .name = "rows", .type = SDC_OPT_INT, .offset = OPT(rows), .def = "65536",
	  .help = "entries (embedding rows) each server owns", .imin = 16, .imax = 1 << 26 },
	{ .name = "dim", .type = SDC_OPT_INT, .offset = OPT(dim), .def = "32", .help = "fp32 weights an entry holds",
	  .imin = 1, .imax = MAX_DIM },
	{ .name = "batch", .type = SDC_OPT_INT, .offset = OPT(batch), .def = "256",
	  .help = "sparse updates a server makes per step", .imin = 1, .imax = 1 << 20 },
	{ .name = "steps", .type = SDC_OPT_INT, .offset = OPT(steps), .def = "200",
	  .help = "training steps per round; every parity is verified at the end of each round", .imin = 1,
	  .imax = 1 << 20 },
	{ .name = "k", .type = SDC_OPT_INT, .offset = OPT(k), .def = "0",
	  .help = "members of a stripe, on k different servers (0: the largest divisor of the servers below "
		  "them, at most 4)",
	  .imin = 0, .imax = 4095 },
	{ .name = "servers", .type = SDC_OPT_INT, .offset = OPT(servers), .def = "0",
	  .help = "on one host: the servers, shared out over the selected CPUs (0: one a CPU, at least 2); under "
		  "mpirun the ranks are the servers",
	  .imin = 0, .imax = 4096 },
	{ .name = "floor", .neutral = true, .type = SDC_OPT_DOUBLE, .offset = OPT(floor), .def = "0",
	  .help = "per-server updates below which the server is WARNING (0: no floor)", .dmin = 0, .dmax = 1e6,
	  .unit = "Mupd/s" },
	{ .name = "timeout", .type = SDC_OPT_DOUBLE, .offset = OPT(timeout), .def = "30", .neutral = true,
	  .help = "under mpirun: seconds a rank may keep the others waiting before it is taken as lost (its servers "
		  "rebuilt elsewhere)",
	  .dmin = 1, .dmax = 3600, .unit = "s" },
	SDC_OPT_END,
};

static const char *const ec_targets[] = {
	"E: a weight of an entry at rest (row = entry, col = weight; default: an entry not updated this round)",
	"O: an entry's Adagrad accumulator at rest (row = entry)",
	"U: the result of a server's last update of a round, after its difference was sent (its arithmetic)",
	"M: a difference message in transit, after its CRC32C (col = word)",
	"G: a gradient of a server's first update of a round, computed wrong (col = weight): its difference and "
	"parities follow it, and only the end's replay of the training finds it",
	"L: the server is lost: its shard and parities dropped, rebuilt from the others (with row=: the rebuilt copy "
	"corrupted there too, which the replay must find)",
	NULL,
};

static const char *const ec_selftest_options[] = { "rows=4096", "batch=64", "steps=4", NULL };
static const char *const ec_selftest_faults[] = {
	"ecparity:E:iter=1",
	"ecparity:O:iter=2,bit=grow",
	"ecparity:U:iter=3",
	"ecparity:M:iter=1,col=3",
	"ecparity:L:iter=4,row=11,col=4",
	NULL,
};

/* A difference's word changed on its way (the M fault): what the stripe holder of the first
 * record of the round's first message receives there instead. */
struct transit_fault {
	bool on;
	uint64_t round;
	int to, word; /* the receiving server; the word of record 0 (its row word is 0) */
	uint32_t value;
};

struct ec_shared {
	struct sdc_ec_layout l;
	struct sdc_ec_state st;
	int S, T, d; /* servers, worker threads */
	double *train_s; /* per worker: its seconds in training, what the end's replay will take about */
	int64_t batch, steps;
	struct sdc_ec_work wk; /* the workload, for training and for the replay of a lost server */
	/* per server: this round's messages, one a step (kept as sent, for a resend), and how many
	 * are out (round << 32 | steps, stored with release: the messages are whole before) */
	uint32_t **outbox;
	size_t bundle_words;
	uint64_t *published;
	/* per holder: what it has applied of each sender's (round << 32 | messages), and where a
	 * message arrives (its own copy: a change on the way is in this copy only) */
	uint64_t *applied;
	uint32_t **recv;
	struct transit_fault *transit;
	uint8_t *touched; /* per server and row: updated this round */
	/* the barrier that keeps rounds in step */
	pthread_mutex_t bl;
	pthread_cond_t bc;
	int arrived;
	int gone; /* workers out of the rounds */
	uint64_t generation;
	bool go_on, abort;
	/* what the verification found */
	pthread_mutex_t elock;
	struct sdc_ec_break sb[MAX_BREAKS], cb[MAX_BREAKS];
	int nsb, ncb;
	int64_t stripe_breaks, column_breaks;
	struct sdc_ec_event ev[MAX_BREAKS];
	int nev;
	int lost; /* a server whose shard was dropped this round, or -1 */
	struct sdc_fault lost_fault; /* its fault: with a row, the rebuilt copy is corrupted there too */
	/*
	 * The rebuild of a lost server, while the others train the next round: a helper thread reads
	 * each row's parity and other members unless a member's touched flag says it is being
	 * updated this round (the flag is set, then a fence, before the entry changes; the helper
	 * reads, fences, and looks at the flags again: a seqlock's reader, so a row read while it
	 * moved is set aside, never used); the rows set aside are done again at the round's end,
	 * when nothing moves. The lost server neither trains nor takes messages meanwhile; at the
	 * round's end it is installed and caught up on the round, and checked against the replay
	 * when that is done (check_rebuild).
	 */
	int rebuilding;         /* the server being rebuilt, or -1 */
	uint64_t rebuild_round; /* the round it was lost in */
	int catch_up;           /* a server just rebuilt, to train the round it missed, or -1 */
	pthread_t rb_thread;
	bool rb_running;
	uint32_t *rb_out;       /* the rebuilt shard */
	uint8_t *rb_redo;       /* rows read while one of their members moved */
	double rb_pass;         /* the helper's pass, seconds */
	/* the replay of the lost server's training, on a thread of its own from the loss on, so the
	 * check at the round's end waits for it only if it is not done by then */
	pthread_t rp_thread;
	bool rp_running;
	int rp_done;            /* (atomic: the replay is done) */
	int rp_server;          /* what it replays: the server, and its rounds (set before it starts) */
	uint64_t rp_rounds;
	uint32_t *rp_out;
	double rp_s;            /* the replay, seconds */
	/* a rebuilt server in service whose check against the replay is still to come (rb_out keeps
	 * the copy that went in until then), and the rebuild's figures for the report */
	int installed;          /* the server, or -1 */
	uint64_t installed_round;
	bool check_pending, rb_caught_up;
	int64_t rb_redone;
	double rb_dt, rb_pause, rb_catch_s;
	char operation[96];
	/* the end's check of every server against a replay of its training (end_check) */
	pthread_mutex_t ck_lock;
	int ck_servers, ck_unfinished;
	uint64_t ck_rounds;
	double ck_seconds;
};

static int ec_variants(const void *opts, struct sdc_variant *out, int max)
{
	const struct sdc_ec_opts *o = opts;
	if (max < 1)
		return 0;
	memset(out, 0, sizeof(*out));
	out->numerics = SDC_NUMERICS_EXACT;
	out->devices = 1u << SDC_DEVICE_CPU;
	/* under mpirun the servers are the ranks (one worker each); on one host, its CPUs */
	out->per_rank = sdc_fleet.active && sdc_fleet.size > 1;
	out->world_dependent = out->per_rank;
	snprintf(out->name, sizeof(out->name), "adagrad-d%d%s", (int)o->dim, out->per_rank ? "-ranks" : "");
	return 1;
}

/* ---- the barrier: every server at the same point of the same round ---- */

/* With sh->bl held: waits on sh->bc for a broadcast, or 50 ms at most (so a hard stop is seen). */
static void wait_a_while(struct ec_shared *sh)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 50 * 1000 * 1000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&sh->bc, &sh->bl, &ts);
}

/* Whether another round fits before the variant's deadline with the end's replay check after it
 * (end_check: about as long as the training so far, on the slowest worker); a run of a number of
 * iterations goes on to them. */
static bool time_for_another(const struct ec_shared *sh, const struct sdc_worker *w)
{
	if (w->ctx->max_iterations)
		return true;
	double most = 0;
	for (int i = 0; i < sh->T; i++)
		most = SDC_MAX(most, sh->train_s[i]);
	return sdc_now() + most < w->ctx->deadline;
}

/* Waits for every server; the last to come says whether the run goes on (decide). A server that
 * failed, or a hard stop, ends it for all. */
static bool ec_barrier(struct ec_shared *sh, struct sdc_worker *w, bool decide)
{
	pthread_mutex_lock(&sh->bl);
	const uint64_t gen = sh->generation;
	if (++sh->arrived == sh->T) {
		sh->arrived = 0;
		if (decide)
			sh->go_on = sdc_worker_continue(w) && time_for_another(sh, w);
		sh->generation++;
		pthread_cond_broadcast(&sh->bc);
	} else {
		while (gen == sh->generation && !sh->abort) {
			wait_a_while(sh);
			/* (a server's worker that crashed or hung never comes: the others stop too) */
			if (atomic_load(&w->ctx->hard_stop) || atomic_load(&w->ctx->lost_workers)) {
				sh->abort = true;
				pthread_cond_broadcast(&sh->bc);
			}
		}
	}
	const bool ok = !sh->abort && (!decide || sh->go_on);
	pthread_mutex_unlock(&sh->bl);
	return ok;
}

static void ec_abort(struct ec_shared *sh)
{
	pthread_mutex_lock(&sh->bl);
	sh->abort = true;
	pthread_cond_broadcast(&sh->bc);
	pthread_mutex_unlock(&sh->bl);
}

/* ---- messages ---- */

static void add_event(struct ec_shared *sh, const struct sdc_ec_event *e)
{
	pthread_mutex_lock(&sh->elock);
	if (sh->nev < MAX_BREAKS)
		sh->ev[sh->nev++] = *e;
	pthread_mutex_unlock(&sh->elock);
}

static struct sdc_ec_bundle *bundle_at(const struct ec_shared *sh, int s, int64_t step)
{
	return (struct sdc_ec_bundle *)(sh->outbox[s] + (size_t)step * sh->bundle_words);
}

/* Holder s takes sender t's message of step k: copied (the transit), its CRC32C checked, the
 * records it holds parities of applied. One whose CRC fails is not applied: the sender's copy (as
 * a resend would bring it) names the record, word and bits that changed on the way and is applied
 * in its place. */
static void receive(struct ec_shared *sh, int s, int t, uint64_t round, int64_t k)
{
	const int words = sh->l.words;
	const struct sdc_ec_bundle *sent = bundle_at(sh, t, k);
	struct sdc_ec_bundle *got = (struct sdc_ec_bundle *)sh->recv[s];
	memcpy(got, sent, 4 * sdc_ec_bundle_words((int)sent->n, words));
	const struct transit_fault *tf = &sh->transit[t];
	if (tf->on && tf->round == round && k == 0 && tf->to == s && sent->n)
		sdc_ec_bundle_record(got, 0, words)[1 + tf->word] = tf->value;
	if (got->n != sent->n || sdc_ec_bundle_crc(got, sent->n, words) != got->crc) {
		struct sdc_ec_event e = { .owner = t, .row = -1, .col = -1 };
		sdc_strlcpy(e.kind, "difference-corrupt", sizeof(e.kind));
		sdc_strlcpy(e.target, "M", sizeof(e.target));
		for (uint32_t i = 0; i < sent->n && e.col < 0; i++) {
			const uint32_t *a = sdc_ec_bundle_record(got, (int)i, words),
				       *x = sdc_ec_bundle_record((struct sdc_ec_bundle *)sent, (int)i, words);
			for (int w = 0; w <= words && e.col < 0; w++)
				if (a[w] != x[w]) {
					e.row = (int)x[0];
					/* (word 0 is the record's row: a change there is in no difference word) */
					e.col = w ? w - 1 : 0, e.expected = x[w], e.actual = a[w];
				}
		}
		snprintf(e.detail, sizeof(e.detail),
			 "the message of step %" PRId64 " from server %d to server %d failed its CRC32C: the link "
			 "(memory or transport between them) changed entry %d's difference; applied from the sender's copy",
			 k, t, s, e.row);
		add_event(sh, &e);
		got = (struct sdc_ec_bundle *)sent;
	}
	sdc_ec_bundle_apply(&sh->st, got, s);
}

/* Applies every message of round `round` that has come for server s since it last looked. */
static void drain(struct ec_shared *sh, int s, uint64_t round)
{
	for (int t = 0; t < sh->S; t++) {
		if (t == s)
			continue;
		const uint64_t pub = __atomic_load_n(&sh->published[t], __ATOMIC_ACQUIRE);
		if (pub >> 32 != round)
			continue; /* (a sender not yet in this round, or lost) */
		uint64_t *ap = &sh->applied[(size_t)s * (size_t)sh->S + (size_t)t];
		int64_t k = *ap >> 32 == round ? (int64_t)(uint32_t)*ap : 0;
		/* a server being rebuilt: its parities are gone, encoded again from the members once it is
		 * back, so what comes for it meanwhile is let go */
		for (; k < (int64_t)(uint32_t)pub && s != sh->rebuilding; k++)
			receive(sh, s, t, round, k);
		*ap = pub;
	}
}

/* ---- training ---- */

/* ---- setup and teardown ---- */

/*
 * Every shard and parity at the run's end, as a SHA-256 in the report
 * (run.environment.ecparity.state_sha256): the same seed, servers and rounds give the same state.
 * The probe has no per-device result digest (its servers hold different shards), and `sdcscan
 * campaign cpu-faults` needs one to tell a fault that changed nothing from one that changed the
 * state unseen.
 */
static void record_state(struct sdc_probe_ctx *ctx, const struct ec_shared *sh)
{
	const struct sdc_ec_layout *l = &sh->st.l;
	const size_t w = (size_t)l->words * 4;
	struct sdc_sha256 h;
	uint8_t sha[SDC_SHA256_LEN];
	char hex[SDC_SHA256_HEX_LEN];
	if (!sh->st.data || sdc_sha256_init(&h))
		return;
	sdc_sha256_update(&h, sh->st.data, (size_t)l->servers * (size_t)l->rows * w);
	sdc_sha256_update(&h, sh->st.stripe, (size_t)l->rows * (size_t)sdc_ec_chunks(l) * w);
	sdc_sha256_update(&h, sh->st.column, (size_t)l->servers * w);
	sdc_sha256_final(&h, sha);
	sdc_sha256_release(&h);
	sdc_hex(sha, sizeof(sha), hex);
	pthread_mutex_lock(&ctx->run->lock);
	json_t *ec = json_object_get(ctx->run->environment, "ecparity");
	if (!json_is_object(ec))
		json_object_set_new(ctx->run->environment, "ecparity", ec = json_object());
	json_object_set_new(ec, "state_sha256", json_string(hex));
	json_object_set_new(ec, "replay_check",
			    json_pack("{s:i, s:i, s:I, s:f}", "servers", sh->ck_servers, "unfinished", sh->ck_unfinished,
				      "rounds", (json_int_t)sh->ck_rounds, "seconds", sh->ck_seconds));
	pthread_mutex_unlock(&ctx->run->lock);
}

static void ec_teardown(struct sdc_probe_ctx *ctx)
{
	struct ec_shared *sh = ctx->shared;
	if (!sh || ctx->variant->per_rank)
		return; /* (the ranks' form keeps its state on its worker) */
	record_state(ctx, sh);
	for (int s = 0; s < sh->S; s++) {
		if (sh->outbox)
			free(sh->outbox[s]);
		if (sh->recv)
			free(sh->recv[s]);
	}
	if (sh->rb_running)
		pthread_join(sh->rb_thread, NULL);
	if (sh->rp_running)
		pthread_join(sh->rp_thread, NULL);
	free(sh->rb_out), free(sh->rb_redo), free(sh->rp_out), free(sh->train_s);
	free(sh->outbox), free(sh->recv), free(sh->published), free(sh->applied), free(sh->transit), free(sh->touched);
	sdc_ec_state_free(&sh->st);
	pthread_mutex_destroy(&sh->bl);
	pthread_cond_destroy(&sh->bc);
	pthread_mutex_destroy(&sh->elock);
	pthread_mutex_destroy(&sh->ck_lock);
	free(sh);
	ctx->shared = NULL;
}

static int setup_shared(struct sdc_probe_ctx *ctx)
{
	const struct sdc_ec_opts *o = ctx->opts;
	struct ec_shared *sh = calloc(1, sizeof(*sh));
	if (!sh)
		return sdc_ctx_error(ctx, "out of memory");
	ctx->shared = sh;
	pthread_mutex_init(&sh->bl, NULL);
	pthread_cond_init(&sh->bc, NULL);
	pthread_mutex_init(&sh->elock, NULL);
	pthread_mutex_init(&sh->ck_lock, NULL);
	/* one server a CPU; on one CPU, two servers on its one thread (parity must be elsewhere) */
	sh->T = ctx->nworkers;
	sh->S = o->servers ? (int)o->servers : SDC_MAX(2, ctx->nworkers);
	if (sh->S < 2 || sh->S < sh->T)
		return sdc_ctx_error(ctx, "servers=%d with %d CPUs: at least 2 servers, and at least one a CPU", sh->S,
				     sh->T);
	sh->d = (int)o->dim;
	sh->batch = o->batch;
	sh->steps = o->steps;
	sh->lost = sh->rebuilding = sh->catch_up = sh->installed = -1;
	sh->l = (struct sdc_ec_layout){ .servers = sh->S, .k = o->k ? (int)o->k : sdc_ec_auto_k(sh->S), .rows = (int)o->rows,
					.words = sh->d + 1 };
	char why[256];
	if (sdc_ec_layout_check(&sh->l, why, sizeof(why)))
		return sdc_ctx_error(ctx, "%s", why);
	sh->bundle_words = sdc_ec_bundle_words((int)sh->batch, sh->l.words);
	sh->outbox = calloc((size_t)sh->S, sizeof(*sh->outbox));
	sh->recv = calloc((size_t)sh->S, sizeof(*sh->recv));
	sh->published = calloc((size_t)sh->S, sizeof(*sh->published));
	sh->applied = calloc((size_t)sh->S * (size_t)sh->S, sizeof(*sh->applied));
	sh->transit = calloc((size_t)sh->S, sizeof(*sh->transit));
	sh->touched = calloc((size_t)sh->S * (size_t)sh->l.rows, 1);
	sh->rb_out = calloc((size_t)sh->l.rows * (size_t)sh->l.words, 4);
	sh->rb_redo = calloc((size_t)sh->l.rows, 1);
	sh->rp_out = malloc((size_t)sh->l.rows * (size_t)sh->l.words * 4);
	sh->train_s = calloc((size_t)sh->T, sizeof(double));
	if (sh->rb_out) /* touched now: a rebuild is not timed faulting pages in */
		memset(sh->rb_out, 0, (size_t)sh->l.rows * (size_t)sh->l.words * 4);
	if (!sh->outbox || !sh->recv || !sh->published || !sh->applied || !sh->transit || !sh->touched || !sh->rb_out ||
	    !sh->rb_redo || !sh->rp_out || !sh->train_s || sdc_ec_state_alloc(&sh->st, &sh->l))
		return sdc_ctx_error(ctx, "out of memory for %d shards of %d entries", sh->S, sh->l.rows);
	/* (published and applied start at round 0 with nothing out: no round is 2^32 - 1) */
	for (int s = 0; s < sh->S; s++) {
		sh->published[s] = UINT64_MAX << 32;
		if (!(sh->outbox[s] = malloc((size_t)sh->steps * sh->bundle_words * 4)) ||
		    !(sh->recv[s] = malloc(sh->bundle_words * 4)))
			return sdc_ctx_error(ctx, "out of memory for the messages");
	}
	sh->wk = (struct sdc_ec_work){ .seed = sdc_variant_seed(ctx->variant, ctx->seed), .rows = sh->l.rows, .d = sh->d,
				       .steps = sh->steps, .batch = sh->batch };
	for (int s = 0; s < sh->S; s++)
		sdc_ec_initial(&sh->wk, s, sdc_ec_entry(&sh->st, s, 0));
	sdc_ec_encode(&sh->st);
	snprintf(sh->operation, sizeof(sh->operation), "ecparity %d servers, k %d, %d entries x %d", sh->S, sh->l.k,
		 sh->l.rows, sh->d);
	sdc_strlcpy(ctx->rate_unit, "Mupd/s", sizeof(ctx->rate_unit));
	sdc_strlcpy(ctx->iter_unit, "rounds", sizeof(ctx->iter_unit));
	ctx->rate_scale = 1e6;
	ctx->floor = o->floor;
	return 0;
}

/* (the runner calls teardown only after a setup that succeeded) */
static int ec_setup(struct sdc_probe_ctx *ctx)
{
	if (ctx->variant->per_rank)
		return sdc_ec_ranks_setup(ctx);
	const int rc = setup_shared(ctx);
	if (rc)
		ec_teardown(ctx);
	return rc;
}

/* ---- one server ---- */

/* Server s's training of one round: updates, a step's differences sent as one message, what has
 * arrived applied. */
static int train(struct sdc_worker *w, struct ec_shared *sh, int s, uint64_t round)
{
	const int words = sh->l.words;
	float g[MAX_DIM];
	struct sdc_fault uf[2], mf[2], gf[2];
	/* a device's faults go to its first server (a thread with two servers runs on one CPU) */
	const bool primary = s == w->index;
	const int nu = primary ? sdc_worker_faults(w, "U", round, uf, 2) : 0;
	const int nm = primary ? sdc_worker_faults(w, "M", round, mf, 2) : 0;
	const int ng = primary ? sdc_worker_faults(w, "G", round, gf, 2) : 0;
	uint8_t *touched = sh->touched + (size_t)s * sh->l.rows;
	if (s == sh->rebuilding)
		return 0; /* it is being rebuilt: it trains this round once it is back (catch-up) */
	/* (the rebuild's helper reads these flags: atomics) */
	for (int r = 0; r < sh->l.rows; r++)
		__atomic_store_n(&touched[r], 0, __ATOMIC_RELAXED);
	for (int64_t step = 0; step < sh->steps; step++) {
		struct sdc_ec_bundle *b = bundle_at(sh, s, step);
		*b = (struct sdc_ec_bundle){ .from = (uint32_t)s, .round = (uint32_t)round, .step = (uint32_t)step };
		for (int64_t u = 0; u < sh->batch; u++) {
			const int row = sdc_ec_draw_update(&sh->wk, s, round, step, u, g);
			uint32_t *e = sdc_ec_entry(&sh->st, s, row);
			/* the flag before the entry moves (a seqlock's writer): the helper of a rebuild under
			 * way sets this row aside */
			if (!__atomic_load_n(&touched[row], __ATOMIC_RELAXED)) {
				__atomic_store_n(&touched[row], 1, __ATOMIC_RELAXED);
				__atomic_thread_fence(__ATOMIC_SEQ_CST);
			}
			/* G: training's own arithmetic goes wrong (a gradient), before anything checks it */
			for (int i = 0; i < ng && step == 0 && u == 0; i++) {
				const int col = gf[i].col >= 0 ? (int)(gf[i].col % sh->d) : 0;
				uint32_t gw;
				memcpy(&gw, &g[col], 4);
				sdc_ec_flip(w, &gf[i], "G", round, row, col, &gw, true);
				memcpy(&g[col], &gw, 4);
			}
			sdc_ec_bundle_update(b, e, row, sh->d, g);
			/* M: the round's first difference changes on its way to the holder of its stripe */
			for (int i = 0; i < nm && step == 0 && u == 0; i++) {
				const int col = mf[i].col >= 0 ? (int)(mf[i].col % words) : 0;
				struct transit_fault *tf = &sh->transit[s];
				tf->value = sdc_ec_bundle_record(b, 0, words)[1 + col];
				sdc_ec_flip(w, &mf[i], "M", round, row, col, &tf->value, false);
				tf->on = true, tf->round = round, tf->word = col;
				tf->to = sdc_ec_stripe_parity_server(&sh->l, row, sdc_ec_chunk_of(&sh->l, s, row));
			}
			/* U: the last update of the round stores a wrong result after its difference went */
			for (int i = 0; i < nu && step == sh->steps - 1 && u == sh->batch - 1; i++) {
				const int col = uf[i].col >= 0 ? (int)(uf[i].col % words) : (int)sdc_fault_draw(&uf[i], 1, sh->d);
				sdc_ec_flip(w, &uf[i], "U", round, row, col, &e[col], true);
			}
		}
		b->crc = sdc_ec_bundle_crc(b, b->n, words);
		__atomic_store_n(&sh->published[s], round << 32 | (uint64_t)(step + 1), __ATOMIC_RELEASE);
		drain(sh, s, round); /* asynchronously from the updates: what has arrived so far */
	}
	return 0;
}

/* L: server s is lost this round: its shard and the parities it held are gone. */
static void lose(struct sdc_worker *w, struct ec_shared *sh, int s, uint64_t round)
{
	struct sdc_fault lf;
	if (s != w->index || !sdc_worker_faults(w, "L", round, &lf, 1))
		return; /* (a device's faults go to its first server) */
	const int words = sh->l.words;
	memset(sdc_ec_entry(&sh->st, s, 0), 0xA5, (size_t)sh->l.rows * (size_t)words * 4);
	for (int r = 0; r < sh->l.rows; r++) {
		const int c = sdc_ec_held_chunk(&sh->l, s, r);
		if (c >= 0)
			memset(sdc_ec_stripe_word(&sh->st, r, c), 0xA5, 4 * (size_t)words);
	}
	memset(sdc_ec_column_word(&sh->st, (s - 1 + sh->S) % sh->S), 0xA5, 4 * (size_t)words);
	sh->lost = s;
	sh->rebuilding = s;
	sh->rebuild_round = round;
	sh->lost_fault = lf;
	if (lf.row < 0)
		sdc_worker_fault_applied(w, &lf, "L", round, -1, -1, -1, "", "");
}

/* Row r of the lost server from its stripe's parity and the other members, into out (words). */
static void rebuild_row(const struct ec_shared *sh, int lost, int r, uint32_t *out)
{
	const struct sdc_ec_layout *l = &sh->l;
	const int c = sdc_ec_chunk_of(l, lost, r);
	memcpy(out, sdc_ec_stripe_word(&sh->st, r, c), 4 * (size_t)l->words);
	for (int i = 0; i < l->k; i++) {
		const int m = sdc_ec_member(l, r, c, i);
		if (m == lost)
			continue;
		const uint32_t *e = sdc_ec_entry(&sh->st, m, r);
		for (int w = 0; w < l->words; w++)
			out[w] -= e[w];
	}
}

/* Whether a member of row r's stripe (the lost server's) moves this round. */
static bool row_moving(const struct ec_shared *sh, int lost, int r, int order)
{
	const struct sdc_ec_layout *l = &sh->l;
	const int c = sdc_ec_chunk_of(l, lost, r);
	for (int i = 0; i < l->k; i++) {
		const int m = sdc_ec_member(l, r, c, i);
		if (m != lost && __atomic_load_n(&sh->touched[(size_t)m * l->rows + (size_t)r], order))
			return true;
	}
	return false;
}

/* The helper's pass while the others train: every row not moving, read and checked again. */
static void *rebuild_pass(void *arg)
{
	struct ec_shared *sh = arg;
	const int lost = sh->rebuilding, words = sh->l.words;
	const double t0 = sdc_now();
	/* (tests: a helper slow enough that training moves rows under it, so the rows set aside and
	 * done again at the round's end are exercised) */
	const char *slow = getenv("SDCSCAN_TEST_EC_SLOW_REBUILD");
	const bool dawdle = slow && *slow == '1';
	for (int r = 0; r < sh->l.rows; r++) {
		if (dawdle && r % 64 == 0) {
			const struct timespec ts = { 0, 200 * 1000 };
			nanosleep(&ts, NULL);
		}
		sh->rb_redo[r] = 1;
		if (row_moving(sh, lost, r, __ATOMIC_ACQUIRE))
			continue;
		rebuild_row(sh, lost, r, sh->rb_out + (size_t)r * words);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		sh->rb_redo[r] = row_moving(sh, lost, r, __ATOMIC_RELAXED);
	}
	sh->rb_pass = sdc_now() - t0;
	return NULL;
}

/* The lost server's state after the rounds up to the loss's, replayed from the seed. */
static void *replay_pass(void *arg)
{
	struct ec_shared *sh = arg;
	const double t0 = sdc_now();
	sdc_ec_replay(&sh->wk, sh->rp_server, sh->rp_rounds, sh->rp_out, NULL, NULL);
	sh->rp_s = sdc_now() - t0;
	__atomic_store_n(&sh->rp_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * The check of a rebuilt server in service against the replay of its training, once the replay
 * is done (wait: now, the run ends); a wrong copy is named at its first wrong word (the
 * verification of the round it went in has found and repaired it in the shard by then). The
 * rebuild's figures go into the report.
 */
static void check_rebuild(struct sdc_worker *w, struct ec_shared *sh, bool wait)
{
	if (!sh->check_pending || (!wait && sh->rp_running && !__atomic_load_n(&sh->rp_done, __ATOMIC_ACQUIRE)))
		return;
	if (sh->rp_running)
		pthread_join(sh->rp_thread, NULL);
	else if (!__atomic_load_n(&sh->rp_done, __ATOMIC_ACQUIRE))
		replay_pass(sh); /* (no thread: here and now) */
	sh->rp_running = false;
	sh->check_pending = false;
	const int lost = sh->installed, words = sh->l.words;
	const size_t bytes_shard = (size_t)sh->l.rows * (size_t)words * 4;
	const uint32_t *rebuilt = sh->rb_out, *replayed = sh->rp_out;
	struct sdc_ec_event e;
	const bool same = !sdc_ec_differs_from_replay(&sh->l, lost, replayed, rebuilt, &e);
	/* the rebuild's figures in the report: what it read (k entries a row), how fast, how long the
	 * others waited for it at the round's end (the redone rows), and for its catch-up */
	const double bytes = (double)bytes_shard * sh->l.k;
	struct sdc_run *run = w->ctx->run;
	pthread_mutex_lock(&run->lock);
	json_object_set_new(run->environment, "ecparity",
			    json_pack("{s:{s:i, s:I, s:I, s:f, s:f, s:f, s:b, s:b, s:I, s:f, s:f, s:f, s:b}}", "rebuild", "server",
				      lost, "round", (json_int_t)sh->rebuild_round, "installed_round", (json_int_t)sh->installed_round,
				      "bytes_read", bytes, "seconds", sh->rb_dt, "gb_per_s", sh->rb_dt > 0 ? bytes / sh->rb_dt / 1e9 : 0,
				      "verified_by_replay", same, "while_training", true, "rows_redone", (json_int_t)sh->rb_redone,
				      "pause_seconds", sh->rb_pause, "catch_up_seconds", sh->rb_catch_s, "replay_seconds", sh->rp_s,
				      "caught_up", sh->rb_caught_up));
	pthread_mutex_unlock(&run->lock);
	if (!same) {
		snprintf(e.detail, sizeof(e.detail),
			 "server %d rebuilt from the parities differs from a replay of its training at entry %d: the "
			 "rebuild (the survivor's memory or arithmetic) went wrong",
			 lost, e.row);
		add_event(sh, &e);
	}
}

/* At the end of the round after the loss, nothing moving: the rows set aside rebuilt, the shard
 * installed as rebuilt, the parities it held encoded again; it trains the round it missed next
 * (catch-up). Its check against the replay comes later (check_rebuild). round: the round now
 * ending. */
static void rebuild_finish(struct sdc_worker *w, struct ec_shared *sh, uint64_t round, bool will_catch_up)
{
	const int lost = sh->rebuilding, words = sh->l.words;
	const size_t bytes_shard = (size_t)sh->l.rows * (size_t)words * 4;
	if (sh->rb_running)
		pthread_join(sh->rb_thread, NULL);
	sh->rb_running = false;
	const double t0 = sdc_now();
	int64_t redone = 0;
	for (int r = 0; r < sh->l.rows; r++)
		if (sh->rb_redo[r]) {
			rebuild_row(sh, lost, r, sh->rb_out + (size_t)r * words);
			redone++;
		}
	const double t_redo = sdc_now() - t0;
	uint32_t *rebuilt = sh->rb_out;
	/* L with a row: the rebuilt copy goes wrong there (a survivor whose memory fails), which the
	 * replay must catch */
	const struct sdc_fault *lf = &sh->lost_fault;
	if (lf->row >= 0) {
		const int64_t row = lf->row % sh->l.rows, col = lf->col >= 0 ? lf->col % words : 0;
		/* recorded on the lost server's device, where the finding goes */
		sdc_ec_flip(&w->ctx->workers[lost % sh->T], lf, "L", round, row, col, rebuilt + row * words + col, true);
	}
	/* in service as rebuilt: its check against the replay (running since the loss) comes when
	 * the replay is done, while training goes on */
	memcpy(sdc_ec_entry(&sh->st, lost, 0), rebuilt, bytes_shard);
	sdc_ec_encode_held(&sh->st, lost);
	sh->rebuilding = -1;
	sh->catch_up = lost;
	sh->installed = lost;
	sh->installed_round = round;
	sh->check_pending = true;
	sh->rb_caught_up = will_catch_up;
	sh->rb_redone = redone;
	sh->rb_dt = sh->rb_pass + t_redo;
	sh->rb_pause = sdc_now() - t0;
	sh->rb_catch_s = 0;
}

/* The stripes whose parity server p holds, and the column it holds: their breaks, for everyone. */
static void verify(struct ec_shared *sh, int p)
{
	struct sdc_ec_break sb[MAX_BREAKS], cb[MAX_BREAKS];
	/* a server being rebuilt: the parities it held and the groups it is in wait for it */
	if (p == sh->rebuilding)
		return;
	const int64_t ns = sdc_ec_verify_held_stripes(&sh->st, p, sh->rebuilding, sb, MAX_BREAKS);
	const int64_t nc = sdc_ec_verify_held_column(&sh->st, p, sh->rebuilding, cb, MAX_BREAKS);
	if (!ns && !nc)
		return;
	pthread_mutex_lock(&sh->elock);
	for (int64_t i = 0; i < ns && i < MAX_BREAKS && sh->nsb < MAX_BREAKS; i++)
		sh->sb[sh->nsb++] = sb[i];
	for (int64_t i = 0; i < nc && i < MAX_BREAKS && sh->ncb < MAX_BREAKS; i++)
		sh->cb[sh->ncb++] = cb[i];
	sh->stripe_breaks += ns;
	sh->column_breaks += nc;
	pthread_mutex_unlock(&sh->elock);
}

/* Localisation for server s (explain.c), and what the messages and the rebuild left for it. */
static void localise(struct sdc_worker *w, struct ec_shared *sh, int s, uint64_t round)
{
	struct sdc_ec_event ev[2 * MAX_BREAKS];
	struct sdc_finding f;
	const int n = sdc_ec_explain(&sh->l, sh->sb, sh->nsb, sh->cb, sh->ncb, s, sdc_ec_entry(&sh->st, s, 0),
				     sh->touched + (size_t)s * sh->l.rows, ev, 2 * MAX_BREAKS);
	for (int i = 0; i < n; i++) {
		/* a server put in service this round: a word of it that breaks its groups now and is
		 * still what the rebuild wrote is the rebuild's */
		if (s == sh->installed && round == sh->installed_round)
			sdc_ec_as_rebuild(&sh->l, &ev[i], sh->rb_out, "from the parities");
		sdc_ec_finding(&f, sh->operation, round, &ev[i]);
		sdc_worker_report(w, &f);
	}
	/* (a rebuild's check against the replay, found later, is of the round it went in) */
	for (int i = 0; i < sh->nev; i++)
		if (sh->ev[i].owner == s) {
			sdc_ec_finding(&f, sh->operation,
				       !strcmp(sh->ev[i].kind, "rebuild-mismatch") ? sh->installed_round : round, &sh->ev[i]);
			sdc_worker_report(w, &f);
		}
}

/* Each worker thread runs servers index, index + T, ... (one each when there are two CPUs or
 * more); the phases of a round are kept in step by the barrier. */
#define EACH_SERVER(s) for (int s = w->index; s < sh->S; s += sh->T)

/* A step of the end's replay: a heartbeat (no iterations meanwhile: not hung); on at a hard stop
 * or an interrupt no more. */
static bool replay_tick(void *arg)
{
	struct sdc_worker *w = arg;
	sdc_worker_heartbeat(w);
	return !atomic_load(&w->ctx->hard_stop) && !sdc_stop_interrupted();
}

/*
 * At the run's end, each server this worker trained against a replay of its rounds from the seed:
 * a wrong update (training's own arithmetic: a flipped register in the gradient or the Adagrad
 * step) goes into the parities as it was computed, so they agree with it, and only a recomputation
 * sees it (campaign cpu-faults). The server still being rebuilt (behind: its missed round is not
 * trained) has its own check. The rounds stopped early enough for it to end by the deadline
 * (time_for_another); a hard stop or an interrupt cuts it short, which is said.
 */
static void end_check(struct sdc_worker *w, struct ec_shared *sh, uint64_t rounds, int behind)
{
	const size_t words = (size_t)sh->l.rows * (size_t)sh->l.words;
	uint32_t *want = malloc(words * 4);
	if (!want) {
		sdc_worker_error(w, "out of memory for the end's replay check");
		return;
	}
	sdc_worker_stop_clock(w); /* (the throughput is the training's) */
	const double t0 = sdc_now();
	int checked = 0, unfinished = 0;
	EACH_SERVER(s)
	{
		if (s == behind)
			continue;
		struct sdc_ec_event e;
		if (!sdc_ec_replay(&sh->wk, s, rounds, want, replay_tick, w)) {
			unfinished++;
			continue;
		}
		checked++;
		if (!sdc_ec_differs_from_replay(&sh->l, s, want, sdc_ec_entry(&sh->st, s, 0), &e))
			continue;
		sdc_strlcpy(e.kind, "training-mismatch", sizeof(e.kind));
		sdc_strlcpy(e.target, "E", sizeof(e.target)); /* (the entry's word: what went wrong, unknown) */
		snprintf(e.detail, sizeof(e.detail),
			 "server %d differs at the run's end from a replay of its %" PRIu64 " rounds at entry %d word %d, "
			 "its parities agreeing: an update computed wrong in training",
			 s, rounds, e.row, e.col);
		struct sdc_finding f;
		sdc_ec_finding(&f, sh->operation, rounds - 1, &e);
		sdc_worker_report(w, &f);
	}
	free(want);
	if (unfinished && !sdc_stop_interrupted())
		sdc_worker_error(w, "the end's replay check of %d of this worker's servers was cut short by the hard stop: "
				 "their training is not verified", unfinished);
	pthread_mutex_lock(&sh->ck_lock);
	sh->ck_servers += checked;
	sh->ck_unfinished += unfinished;
	sh->ck_rounds = rounds;
	sh->ck_seconds = SDC_MAX(sh->ck_seconds, sdc_now() - t0);
	pthread_mutex_unlock(&sh->ck_lock);
}

static void ec_run(struct sdc_worker *w)
{
	if (w->ctx->variant->per_rank) {
		sdc_ec_ranks_run(w);
		return;
	}
	struct ec_shared *sh = w->ctx->shared;
	snprintf(w->kernel, sizeof(w->kernel), "%s %d of %d", sh->S > sh->T ? "servers from" : "server", w->index,
		 sh->S);
	uint64_t round = 0;
	for (; ec_barrier(sh, w, true); round++) {
		bool failed = false;
		const double t_train = sdc_now();
		EACH_SERVER(s)
		failed |= train(w, sh, s, round) != 0;
		sh->train_s[w->index] += sdc_now() - t_train;
		if (failed) {
			ec_abort(sh);
			break;
		}
		/* A server rebuilt during this round: once every message is in, installed and checked by
		 * the next server, then caught up on this round by its own worker. */
		if (sh->rebuilding >= 0 && sh->rebuild_round < round) {
			if (!ec_barrier(sh, w, false))
				break;
			EACH_SERVER(s)
			drain(sh, s, round);
			if (!ec_barrier(sh, w, false))
				break;
			if (w->index == (sh->rebuilding + 1) % sh->S % sh->T)
				rebuild_finish(w, sh, round, true);
			if (!ec_barrier(sh, w, false))
				break;
			EACH_SERVER(s)
			if (s == sh->catch_up) {
				const double t0 = sdc_now();
				if (train(w, sh, s, round)) {
					ec_abort(sh);
					break;
				}
				sh->rb_catch_s = sdc_now() - t0;
			}
		}
		/* Every message of the round sent: the rest applied, then faults at rest and a lost server. */
		if (!ec_barrier(sh, w, false))
			break;
		EACH_SERVER(s)
		{
			drain(sh, s, round);
			if (s == w->index) { /* a device's faults go to its first server */
				sdc_ec_rest_faults(w, &sh->l, sdc_ec_entry(&sh->st, s, 0), sh->touched + (size_t)s * sh->l.rows,
						   round);
				sdc_worker_fatal_faults(w, round, sdc_ec_entry(&sh->st, s, 0));
			}
			lose(w, sh, s, round);
		}
		if (!ec_barrier(sh, w, false))
			break;
		/* a rebuilt server's check, when its replay is done (or now: a new loss's rebuild will
		 * write over the copy it checks) */
		if (sh->installed >= 0 && w->index == (sh->installed + 1) % sh->S % sh->T)
			check_rebuild(w, sh, sh->lost >= 0); /* (it alone reads check_pending here) */
		EACH_SERVER(s)
		verify(sh, s);
		if (!ec_barrier(sh, w, false))
			break;
		EACH_SERVER(s)
		localise(w, sh, s, round);
		if (!ec_barrier(sh, w, false))
			break;
		/* Parities that broke are recomputed by their holders, once the members are right (not
		 * those of a server being rebuilt, which wait for it). */
		if (sh->nsb || sh->ncb)
			EACH_SERVER(s)
		if (s != sh->rebuilding)
			sdc_ec_encode_held_without(&sh->st, s, sh->rebuilding);
		if (!ec_barrier(sh, w, false))
			break;
		if (w->index == 0)
			sh->nsb = sh->ncb = sh->nev = 0, sh->lost = -1, sh->catch_up = -1;
		/* A server lost this round: the next one's helper rebuilds it while the others train the
		 * next round. */
		if (sh->rebuilding >= 0 && sh->rebuild_round == round && w->index == (sh->rebuilding + 1) % sh->S % sh->T) {
			sh->rp_server = sh->rebuilding, sh->rp_rounds = round + 1, sh->rp_done = 0;
			sh->rb_running = !pthread_create(&sh->rb_thread, NULL, rebuild_pass, sh);
			sh->rp_running = sh->rb_running && !pthread_create(&sh->rp_thread, NULL, replay_pass, sh);
			if (!sh->rb_running) {
				sdc_worker_error(w, "cannot start the rebuild of server %d", sh->rebuilding);
				ec_abort(sh);
				break;
			}
		}
		int mine = 0;
		EACH_SERVER(s)
		mine++;
		sdc_worker_account(w, (double)(sh->steps * sh->batch * mine));
	}
	/* The run ends with a rebuild under way: it is finished and checked all the same (nothing
	 * trains any more), but the round it missed is not trained; or with a rebuilt server's check
	 * to come: it waits for its replay. */
	const int behind = sh->rebuilding;
	const int owner = sh->rebuilding >= 0 ? sh->rebuilding : sh->check_pending ? sh->installed : -1;
	const bool finisher = owner >= 0 && w->index == (owner + 1) % sh->S % sh->T;
	pthread_mutex_lock(&sh->bl);
	if (finisher) {
		/* (the others leave the rounds with no barrier: wait until they are all out) */
		while (sh->gone < sh->T - 1 && !sh->abort)
			wait_a_while(sh);
	} else {
		sh->gone++;
		pthread_cond_broadcast(&sh->bc);
	}
	const bool finish = finisher && !sh->abort;
	pthread_mutex_unlock(&sh->bl);
	if (finish) {
		if (sh->rebuilding >= 0)
			rebuild_finish(w, sh, round, false);
		check_rebuild(w, sh, true);
		/* no round is left to say what the check found: said here, on the lost server's device */
		for (int i = 0; i < sh->nev; i++) {
			struct sdc_finding f;
			sdc_ec_finding(&f, sh->operation, sh->installed_round, &sh->ev[i]);
			sdc_worker_report(&w->ctx->workers[sh->ev[i].owner % sh->T], &f);
		}
		sh->nev = 0;
	} else if (finisher && sh->rb_running) {
		pthread_join(sh->rb_thread, NULL);
		sh->rb_running = false;
	}
	if (finisher && sh->rp_running) {
		pthread_join(sh->rp_thread, NULL);
		sh->rp_running = false;
	}
	if (!sh->abort && round > 0)
		end_check(w, sh, round, behind);
}

static const struct sdc_command *const ec_benches[] = { &sdc_ecparity_bench, NULL };

const struct sdc_probe sdc_probe_ecparity = {
	.name = "ecparity",
	.summary = "ECRM's erasure-coded embedding shards: Adagrad training with difference propagation to rotating "
		   "parities, every parity checked exactly each round; a corrupt entry, optimizer state, update or "
		   "message named at its server, entry and bits, a lost server rebuilt bit for bit",
	.options = ec_options,
	.opts_size = sizeof(struct sdc_ec_opts),
	.inject_targets = ec_targets,
	.selftest_options = ec_selftest_options,
	.selftest_faults = ec_selftest_faults,
	.variants = ec_variants,
	.setup = ec_setup,
	.run = ec_run,
	.teardown = ec_teardown,
	.benches = ec_benches,
};
