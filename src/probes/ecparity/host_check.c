/*
 * ecparity on one host: checks against a deterministic replay of training from the seed. A
 * rebuilt server's copy is checked against a replay that runs on a thread of its own from the
 * loss on, read when done, so the others do not wait for a replay that grows with the rounds; at
 * the run's end every server is checked against a replay of all its rounds (a wrong update goes
 * into the parities as computed, so only a recomputation sees it).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/digest.h"
#include "run/facts.h"
#include "probes/ecparity/host.h"
#include "base/stop.h"
#include "base/message.h"
#include "base/clock.h"

/* The lost server's state after the rounds up to the loss's, replayed from the seed. */
void *sdc_ec_host_replay_pass(void *arg)
{
	struct sdc_ec_host *sh = arg;
	struct sdc_ec_host_replay *rp = &sh->rp;
	const double t0 = sdc_now();
	sdc_ec_replay(&sh->wk, rp->server, rp->rounds, rp->out, NULL, NULL);
	rp->seconds = sdc_now() - t0;
	atomic_store_explicit(&rp->done, true, memory_order_release);
	return NULL;
}

void sdc_ec_host_replay_join(struct sdc_ec_host *sh)
{
	sdc_ec_host_thread_join(&sh->rp.helper);
}

/* The rebuild's figures in the report: what it read (k entries a row), how fast, how long the
 * others waited for it at the round's end (the redone rows), and for its catch-up. */
static void report_rebuild(struct sdc_worker *w, const struct sdc_ec_host *sh, bool same)
{
	const struct sdc_ec_host_rebuild *rb = &sh->rb;
	const double bytes = (double)sh->st.l.rows * sh->st.l.words * 4 * sh->st.l.k;
	struct sdc_facts *f = sdc_facts_new();
	sdc_facts_int(f, "rebuild.server", rb->installed);
	sdc_facts_int(f, "rebuild.round", (int64_t)rb->round);
	sdc_facts_int(f, "rebuild.installed_round", (int64_t)rb->installed_round);
	sdc_facts_real(f, "rebuild.bytes_read", bytes);
	sdc_facts_real(f, "rebuild.seconds", rb->seconds);
	sdc_facts_real(f, "rebuild.gb_per_s", rb->seconds > 0 ? bytes / rb->seconds / 1e9 : 0);
	sdc_facts_bool(f, "rebuild.verified_by_replay", same);
	sdc_facts_bool(f, "rebuild.while_training", true);
	sdc_facts_int(f, "rebuild.rows_redone", (int64_t)rb->redone);
	sdc_facts_real(f, "rebuild.pause_seconds", rb->pause_s);
	sdc_facts_real(f, "rebuild.catch_up_seconds", rb->catch_s);
	sdc_facts_real(f, "rebuild.replay_seconds", sh->rp.seconds);
	sdc_facts_bool(f, "rebuild.caught_up", rb->caught_up);
	/* (the last rebuild's, whole) */
	sdc_run_facts_replace(w->ctx->run, "ecparity", f);
}

/*
 * The check of a rebuilt server in service against the replay of its training, once the replay
 * is done (wait: now, the run ends); a wrong copy is named at its first wrong word (the
 * verification of the round it went in has found and repaired it in the shard by then). The
 * rebuild's figures go into the report.
 */
void sdc_ec_host_check_rebuild(struct sdc_worker *w, struct sdc_ec_host *sh, bool wait)
{
	struct sdc_ec_host_rebuild *rb = &sh->rb;
	struct sdc_ec_host_replay *rp = &sh->rp;
	if (!rb->check_pending ||
	    (!wait && rp->helper.owner && !atomic_load_explicit(&rp->done, memory_order_acquire)))
		return;
	/* (this worker started the replay's thread: the next server's after the lost one, as it is
	 * the installed one's) */
	const struct timespec ms = { 0, 1000 * 1000 };
	while (rp->helper.owner && !atomic_load_explicit(&rp->done, memory_order_acquire) && !sdc_stop_is_hard()) {
		sdc_worker_heartbeat(w); /* (a long replay is not this worker hung) */
		nanosleep(&ms, NULL);
	}
	sdc_ec_host_replay_join(sh);
	if (!atomic_load_explicit(&rp->done, memory_order_acquire))
		sdc_ec_host_replay_pass(sh); /* (no thread: here and now) */
	rb->check_pending = false;
	struct sdc_ec_event e;
	const bool same = !sdc_ec_differs_from_replay(&sh->st.l, rb->installed, rp->out, rb->out, &e);
	report_rebuild(w, sh, same);
	if (!same) {
		rb->failed = rb->installed;
		snprintf(e.detail, sizeof(e.detail),
			 "server %d rebuilt from the parities differs from a replay of its training at entry %d: the "
			 "rebuild (the survivor's memory or arithmetic) went wrong",
			 rb->installed, e.row);
		sdc_ec_host_add_event(sh, &e);
	}
}

/* A step of the end's replay: a heartbeat (no iterations meanwhile: not hung); on at a hard stop
 * or an interrupt no more. */
static bool replay_tick(void *arg)
{
	struct sdc_worker *w = arg;
	sdc_worker_heartbeat(w);
	return !sdc_stop_is_hard() && !sdc_stop_interrupted();
}

/* Server s's shard against a replay of its rounds (into want): a difference is named. Returns
 * whether the replay ran to the end. */
static bool check_server(struct sdc_worker *w, const struct sdc_ec_host *sh, int s, uint64_t rounds, uint32_t *want)
{
	struct sdc_ec_event e;
	if (!sdc_ec_replay(&sh->wk, s, rounds, want, replay_tick, w))
		return false;
	if (!sdc_ec_differs_from_replay(&sh->st.l, s, want, sdc_ec_entry(&sh->st, s, 0), &e))
		return true;
	sdc_strlcpy(e.kind, "training-mismatch", sizeof(e.kind));
	sdc_strlcpy(e.target, "E", sizeof(e.target)); /* (the entry's word: what went wrong, unknown) */
	snprintf(e.detail, sizeof(e.detail),
		 "server %d differs at the run's end from a replay of its %" PRIu64 " rounds at entry %d word %d, "
		 "its parities agreeing: an update computed wrong in training",
		 s, rounds, e.row, e.col);
	struct sdc_finding f;
	sdc_ec_finding(&f, sh->operation, rounds - 1, &e);
	sdc_worker_report(w, &f);
	return true;
}

/*
 * At the run's end, each server this worker trained against a replay of its rounds from the seed:
 * a wrong update (training's own arithmetic: a flipped register in the gradient or the Adagrad
 * step) goes into the parities as it was computed, so they agree with it, and only a recomputation
 * sees it (campaign cpu-faults). A server whose rebuild is still being finished or checked at the
 * end (skip: its missed round is not trained, or its check is the finisher's now), and one whose
 * rebuilt copy its check found wrong (named there: training went on from that copy), are left
 * out, as the ranks' form does. The rounds stopped early enough for it to end by the deadline
 * (host_barrier.c: time_for_another); a hard stop or an interrupt cuts it short, which is said.
 */
void sdc_ec_host_end_check(struct sdc_worker *w, struct sdc_ec_host *sh, uint64_t rounds, int skip)
{
	uint32_t *want = malloc((size_t)sh->st.l.rows * (size_t)sh->st.l.words * 4);
	if (!want) {
		sdc_worker_error(w, "out of memory for the end's replay check");
		return;
	}
	sdc_worker_stop_clock(w); /* (the throughput is the training's) */
	const double t0 = sdc_now();
	int checked = 0, unfinished = 0;
	for (int s = w->index; s < sh->st.l.servers; s += sh->T) {
		if (s == skip || s == sh->rb.failed)
			continue;
		if (check_server(w, sh, s, rounds, want))
			checked++;
		else
			unfinished++;
	}
	free(want);
	if (unfinished && !sdc_stop_interrupted())
		sdc_worker_error(w, "the end's replay check of %d of this worker's servers was cut short by the hard stop: "
				 "their training is not verified", unfinished);
	struct sdc_ec_host_end *end = &sh->end;
	if (sdc_ec_host_lock(sh, &end->lock))
		return;
	end->servers += checked;
	end->unfinished += unfinished;
	end->rounds = rounds;
	end->seconds = SDC_MAX(end->seconds, sdc_now() - t0);
	pthread_mutex_unlock(&end->lock);
}

/*
 * Every shard and parity at the run's end, as a SHA-256 in the report
 * (run.environment.ecparity.state_sha256): the same seed, servers and rounds give the same state.
 * The probe has no per-device result digest (its servers hold different shards), and `sdcscan
 * campaign cpu-faults` needs one to tell a fault that changed nothing from one that changed the
 * state unseen. With it, what the end's replay check covered.
 */
static void record_state(struct sdc_worker *w, const struct sdc_ec_host *sh)
{
	const struct sdc_ec_layout *l = &sh->st.l;
	const size_t words = (size_t)l->words * 4;
	struct sdc_sha256 h;
	uint8_t sha[SDC_SHA256_LEN];
	char hex[SDC_SHA256_HEX_LEN];
	if (sdc_sha256_init(&h))
		return;
	sdc_sha256_update(&h, sh->st.data, (size_t)l->servers * (size_t)l->rows * words);
	sdc_sha256_update(&h, sh->st.stripe, (size_t)l->rows * (size_t)sdc_ec_chunks(l) * words);
	sdc_sha256_update(&h, sh->st.column, (size_t)l->servers * words);
	sdc_sha256_final(&h, sha);
	sdc_sha256_release(&h);
	sdc_hex(sha, sizeof(sha), hex);
	struct sdc_facts *f = sdc_facts_new();
	sdc_facts_str(f, "state_sha256", hex);
	sdc_facts_int(f, "replay_check.servers", sh->end.servers);
	sdc_facts_int(f, "replay_check.unfinished", sh->end.unfinished);
	sdc_facts_int(f, "replay_check.rounds", (int64_t)sh->end.rounds);
	sdc_facts_real(f, "replay_check.seconds", sh->end.seconds);
	sdc_run_facts_replace(w->ctx->run, "ecparity", f);
}

/*
 * This worker is done with the run (its end check too, and its share of a rebuild and its
 * threads); the last to be done states the state's digest, once, when no shard moves any more. A
 * run a worker of which was lost (crashed, hung) has no final state: it states none.
 */
void sdc_ec_host_end_done(struct sdc_worker *w, struct sdc_ec_host *sh)
{
	struct sdc_ec_host_end *end = &sh->end;
	if (sdc_ec_host_lock(sh, &end->lock))
		return;
	const bool last = ++end->finished == sh->T;
	pthread_mutex_unlock(&end->lock);
	if (last)
		record_state(w, sh);
}
