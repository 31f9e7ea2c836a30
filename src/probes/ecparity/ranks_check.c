/*
 * ecparity across ranks: checks against a replay of training from the seed (any rank can compute
 * any server's). A rebuilt server's copy is checked on a helper thread while the ranks train on
 * (struct sdc_ec_rk_replay in ranks.h); at the run's end every server this rank trains is checked
 * against a replay of all its rounds (a wrong update goes into the parities as computed, so only
 * a recomputation sees it).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "run/facts.h"
#include "probes/ecparity/ranks.h"
#include "base/stop.h"
#include "base/message.h"
#include "base/clock.h"

/* A step of a rebuilt server's replay: on until the run's end stops it. */
static bool replay_tick(void *arg)
{
	struct sdc_ec_rk_replay *c = arg;
	return !atomic_load_explicit(&c->stop, memory_order_acquire);
}

static void *replay_main(void *arg)
{
	struct sdc_ec_rk_replay *c = arg;
	const double t0 = sdc_now();
	c->finished = sdc_ec_replay(c->wk, c->D, c->rounds, c->replayed, replay_tick, c);
	c->replay_s = sdc_now() - t0;
	atomic_store_explicit(&c->done, true, memory_order_release);
	return NULL;
}

/* Server D (v) rebuilt here and put in service at the end of round `installed` (span: seconds
 * from the loss): its copy as it went in, and its check against a replay of its training started
 * beside the training (one check at a time: an earlier rebuild's finishes, or stops, first).
 * 0, or -1 (said). */
int sdc_ec_rk_check_start(struct sdc_ec_rk *k, const struct sdc_ec_rk_server *v, uint64_t installed, double span)
{
	const struct sdc_ec_rk_rebuild *b = &k->rb;
	struct sdc_ec_rk_replay *c = &k->rc;
	sdc_ec_rk_check_finish(k, true);
	const size_t shard_words = (size_t)k->l.rows * (size_t)k->l.words;
	*c = (struct sdc_ec_rk_replay){ .D = b->D, .was = b->was, .round = b->round, .rounds = b->rounds,
					.installed = installed, .wk = &k->wk, .rebuilt = malloc(shard_words * 4),
					.replayed = malloc(shard_words * 4), .rebuild_s = span, .sum_s = b->sum_s,
					.bytes = b->bytes, .pause_s = b->cut_s };
	if (!c->rebuilt || !c->replayed) {
		free(c->rebuilt), free(c->replayed);
		c->rebuilt = c->replayed = NULL;
		return sdc_worker_error(k->w, "out of memory for the check of server %d's rebuild", b->D), -1;
	}
	memcpy(c->rebuilt, v->shard, shard_words * 4);
	c->threaded = !pthread_create(&c->thread, NULL, replay_main, c);
	if (!c->threaded)
		replay_main(c); /* (no thread: the replay here and now) */
	c->running = true;
	return 0;
}

/*
 * The check of a rebuild, once its replay is done (wait: the run ends, or another rebuild comes;
 * a replay still going is stopped then, and the rebuild reported unverified). A rebuilt copy that
 * is not the replay's bits is named at its first wrong word; training went on from it (its
 * parities were made from it), so from here on the server's trajectory is not the seed's.
 */
void sdc_ec_rk_check_finish(struct sdc_ec_rk *k, bool wait)
{
	struct sdc_ec_rk_replay *c = &k->rc;
	if (!c->running || (!wait && !atomic_load_explicit(&c->done, memory_order_acquire)))
		return;
	/* (at the end, a replay still going is given half the probe's timeout: the others wait for
	 * this rank's results no longer than the timeout) */
	const double until = sdc_now() + k->x.timeout / 2;
	while (!atomic_load_explicit(&c->done, memory_order_acquire) && sdc_now() < until) {
		const struct timespec ts = { 0, 5 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	atomic_store_explicit(&c->stop, true, memory_order_release);
	if (c->threaded)
		pthread_join(c->thread, NULL);
	c->running = false;
	struct sdc_ec_event e;
	const bool same = c->finished && !sdc_ec_differs_from_replay(&k->l, c->D, c->replayed, c->rebuilt, &e);
	c->passed = same;
	if (c->finished && !same) {
		snprintf(e.detail, sizeof(e.detail),
			 "server %d (lost with rank %d) rebuilt on rank %d from the parities differs from a replay of its "
			 "training at entry %d: the rebuild went wrong here (training went on from the rebuilt copy)",
			 c->D, c->was, k->me, e.row);
		sdc_ec_rk_report_event(k, c->round, &e);
	}
	struct sdc_facts *f = sdc_facts_new();
	sdc_facts_int(f, "rebuild.server", c->D);
	sdc_facts_int(f, "rebuild.lost_rank", c->was);
	sdc_facts_int(f, "rebuild.rebuilt_on_rank", k->me);
	sdc_facts_int(f, "rebuild.round", (int64_t)c->round);
	sdc_facts_int(f, "rebuild.installed_round", (int64_t)c->installed);
	sdc_facts_int(f, "rebuild.rounds_missed", (int64_t)(c->installed + 1 - c->rounds));
	sdc_facts_bool(f, "rebuild.while_training", c->installed > c->round);
	sdc_facts_real(f, "rebuild.bytes_read", c->bytes);
	sdc_facts_real(f, "rebuild.seconds", c->rebuild_s);
	sdc_facts_real(f, "rebuild.gb_per_s", c->rebuild_s > 0 ? c->bytes / c->rebuild_s / 1e9 : 0);
	sdc_facts_real(f, "rebuild.sum_seconds", c->sum_s);
	sdc_facts_bool(f, "rebuild.verified_by_replay", same);
	sdc_facts_bool(f, "rebuild.replay_finished", c->finished);
	sdc_facts_real(f, "rebuild.replay_seconds", c->replay_s);
	sdc_facts_real(f, "rebuild.pause_seconds", c->pause_s);
	sdc_facts_real(f, "rebuild.catch_up_seconds", c->catch_s);
	/* (the last rebuild's, whole) */
	sdc_run_facts_replace(k->w->ctx->run, "ecparity", f);
	k->rebuild_reported = true;
	sdc_note("ecparity: server %d's rebuild on rank %d: %s", c->D, k->me,
		 !c->finished ? "its replay did not finish before the run ended: unverified"
		 : same	      ? "the same bits as a replay of its training (replayed while training went on)"
			      : "NOT the bits of a replay of its training");
	free(c->rebuilt), free(c->replayed);
	c->rebuilt = c->replayed = NULL;
}

/* The end's replay: ends at its deadline, with a heartbeat at each step (no rounds meanwhile). */
struct end_replay {
	double until;
	struct sdc_worker *w;
};
static bool end_tick(void *arg)
{
	struct end_replay *t = arg;
	sdc_worker_heartbeat(t->w);
	return sdc_now() < t->until && !sdc_stop_interrupted();
}

/* Where the end's replay of server s differs from its shard: said as a rebuilt server's (D, whose
 * check when it went in passed: its training since went wrong) or as any other's (an update
 * computed wrong: its parities followed it). */
static void end_mismatch(struct sdc_ec_rk *k, int s, const struct sdc_ec_event *found)
{
	struct sdc_ec_event e = *found;
	if (s == k->rc.D)
		snprintf(e.detail, sizeof(e.detail),
			 "server %d, rebuilt on rank %d and right then, differs at the run's end from a replay of its %" PRIu64
			 " rounds at entry %d: its training since (the rounds it caught up, or later ones) went wrong",
			 s, k->me, k->at.done[s], e.row);
	else {
		sdc_strlcpy(e.kind, "training-mismatch", sizeof(e.kind));
		sdc_strlcpy(e.target, "E", sizeof(e.target));
		snprintf(e.detail, sizeof(e.detail),
			 "server %d differs at the run's end from a replay of its %" PRIu64 " rounds at entry %d word %d, its "
			 "parities agreeing: an update computed wrong in training on rank %d",
			 s, k->at.done[s], e.row, e.col, k->me);
	}
	sdc_ec_rk_report_event(k, k->at.done[s] - 1, &e);
}

/*
 * At the run's end, every server this rank trains against a replay of its rounds from the seed:
 * a wrong update (training's own arithmetic) goes into the parities as computed, so only a
 * recomputation sees it. The rounds stopped early enough for this to end by the deadline; it is
 * given half the timeout all the same (the others wait for this rank's results no longer than the
 * timeout). A rebuilt server (D) is not named again where its rebuild's check failed; its result
 * joins the rebuild's in the report.
 */
void sdc_ec_rk_final_check(struct sdc_ec_rk *k)
{
	const size_t n = (size_t)k->l.rows * (size_t)k->l.words;
	uint32_t *want = malloc(n * 4);
	if (!want) {
		sdc_worker_error(k->w, "out of memory for the end's replay check");
		return;
	}
	sdc_worker_stop_clock(k->w); /* (the throughput is the training's) */
	const double t0 = sdc_now();
	struct end_replay tick = { .until = t0 + k->x.timeout / 2, .w = k->w };
	int checked = 0, unfinished = 0, D = k->rc.D;
	bool d_finished = false, d_same = false;
	for (int s = 0; s < k->S; s++) {
		const struct sdc_ec_rk_server *v = sdc_ec_rk_trains(k, s);
		if (!v || !k->at.done[s])
			continue;
		const bool finished = sdc_ec_replay(&k->wk, s, k->at.done[s], want, end_tick, &tick);
		struct sdc_ec_event e;
		const bool same = finished && !sdc_ec_differs_from_replay(&k->l, s, want, v->shard, &e);
		checked += finished, unfinished += !finished;
		if (s == D)
			d_finished = finished, d_same = same;
		if (finished && !same && (s != D || k->rc.passed))
			end_mismatch(k, s, &e);
	}
	free(want);
	/* the rebuilt server's end joins its rebuild's facts; the end's replay check, whole */
	struct sdc_facts *f = sdc_facts_new(), *g = sdc_facts_new();
	if (k->rebuild_reported && D >= 0 && sdc_ec_rk_trains(k, D)) {
		sdc_facts_int(f, "rebuild.final_rounds", (int64_t)k->at.done[D]);
		if (d_finished)
			sdc_facts_bool(f, "rebuild.final_matches_replay", d_same);
		else
			sdc_facts_null(f, "rebuild.final_matches_replay");
	}
	sdc_run_facts(k->w->ctx->run, "ecparity", f);
	sdc_facts_int(g, "replay_check.servers", checked);
	sdc_facts_int(g, "replay_check.unfinished", unfinished);
	sdc_facts_real(g, "replay_check.seconds", sdc_now() - t0);
	sdc_run_facts_replace(k->w->ctx->run, "ecparity", g);
	if (unfinished && !sdc_stop_interrupted())
		sdc_worker_error(k->w, "the end's replay check of %d of this rank's servers did not finish in half the "
				 "timeout (%.0f s): their training is not verified", unfinished, k->x.timeout / 2);
}
