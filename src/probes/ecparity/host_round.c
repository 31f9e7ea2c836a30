/*
 * ecparity on one host: a round, one iteration, as steps between barriers (every worker at the
 * same point of the same round), and the run's end. Each worker runs its servers w->index,
 * w->index + T, ...; a step that one worker alone takes (a rebuild, its check) is the worker of
 * the server after the one concerned.
 *   train          every server trains its steps, sending and applying messages as it goes
 *   install        (the round after a loss) every message in, the rebuilt server installed and
 *                  caught up on the round it missed
 *   collect        every message applied; faults at rest; a server lost
 *   verify         a rebuilt server's check when its replay is done; every parity verified
 *   localise       each server names what broke in it
 *   reencode       the parities that broke recomputed
 *   close          the round's findings cleared; a rebuild started for a server lost this round
 */
#include "inject/fatal.h"
#include "probes/ecparity/host.h"
#include "base/clock.h"

static void step_train(struct sdc_worker *w, struct sdc_ec_host *sh, uint64_t round)
{
	const double t0 = sdc_now();
	for (int s = w->index; s < sh->st.l.servers; s += sh->T)
		sdc_ec_host_train(w, sh, s, round);
	sh->train_s[w->index] += sdc_now() - t0;
}

/* A server rebuilt during this round: once every message is in, installed by the next server's
 * worker, then caught up on this round by its own. False: the run was stopped. */
static bool step_install(struct sdc_worker *w, struct sdc_ec_host *sh, uint64_t round)
{
	if (!sdc_ec_host_barrier(sh, w, false))
		return false;
	for (int s = w->index; s < sh->st.l.servers; s += sh->T)
		sdc_ec_host_drain(sh, s, round);
	if (!sdc_ec_host_barrier(sh, w, false))
		return false;
	if (sdc_ec_host_next_of(sh, w, sh->rb.server))
		sdc_ec_host_rebuild_finish(w, sh, round, true);
	if (!sdc_ec_host_barrier(sh, w, false))
		return false;
	for (int s = w->index; s < sh->st.l.servers; s += sh->T) {
		if (s != sh->rb.catch_up)
			continue;
		const double t0 = sdc_now();
		sdc_ec_host_train(w, sh, s, round);
		sh->rb.catch_s = sdc_now() - t0;
	}
	return true;
}

/* Every message of the round sent: the rest applied, then faults at rest and a lost server. */
static void step_collect(struct sdc_worker *w, struct sdc_ec_host *sh, uint64_t round)
{
	for (int s = w->index; s < sh->st.l.servers; s += sh->T) {
		sdc_ec_host_drain(sh, s, round);
		if (s == w->index) { /* a device's faults go to its first server */
			uint32_t *shard = sdc_ec_entry(&sh->st, s, 0);
			sdc_ec_rest_faults(w, &sh->st.l, shard, sh->touched + (size_t)s * sh->st.l.rows, round);
			sdc_worker_fatal_faults(w, round, shard);
		}
		sdc_ec_host_lose(w, sh, s, round);
	}
}

/* A rebuilt server's check, when its replay is done (or now: a new loss's rebuild will write over
 * the copy it checks); then every parity this worker's servers hold. */
static void step_verify(struct sdc_worker *w, struct sdc_ec_host *sh)
{
	if (sh->rb.installed >= 0 && sdc_ec_host_next_of(sh, w, sh->rb.installed))
		sdc_ec_host_check_rebuild(w, sh, sh->rb.lost >= 0); /* (it alone reads check_pending here) */
	for (int s = w->index; s < sh->st.l.servers; s += sh->T)
		sdc_ec_host_verify(sh, s);
}

static void step_localise(struct sdc_worker *w, struct sdc_ec_host *sh, uint64_t round)
{
	for (int s = w->index; s < sh->st.l.servers; s += sh->T)
		sdc_ec_host_localise(w, sh, s, round);
}

/* Parities that broke are recomputed by their holders, once the members are right (not those of
 * a server being rebuilt, which wait for it). */
static void step_reencode(struct sdc_worker *w, struct sdc_ec_host *sh)
{
	if (!sh->found.nsb && !sh->found.ncb)
		return;
	for (int s = w->index; s < sh->st.l.servers; s += sh->T) {
		if (s != sh->rb.server)
			sdc_ec_encode_held_without(&sh->st, s, sh->rb.server);
	}
}

/* The round's findings cleared; a server lost this round: the next one's helper rebuilds it while
 * the others train the next round. The round counted. False: the rebuild could not start. */
static bool step_close(struct sdc_worker *w, struct sdc_ec_host *sh, uint64_t round)
{
	if (w->index == 0) {
		sh->found.nsb = sh->found.ncb = sh->found.nev = 0;
		sh->rb.lost = -1, sh->rb.catch_up = -1;
	}
	if (sh->rb.server >= 0 && sh->rb.round == round && sdc_ec_host_next_of(sh, w, sh->rb.server) &&
	    sdc_ec_host_rebuild_start(w, sh, round)) {
		sdc_ec_host_abort(sh);
		return false;
	}
	int mine = 0;
	for (int s = w->index; s < sh->st.l.servers; s += sh->T)
		mine++;
	sdc_worker_account(w, (double)(sh->wk.steps * sh->wk.batch * mine));
	return true;
}

/* One round; false when the run was stopped in it. */
static bool one_round(struct sdc_worker *w, struct sdc_ec_host *sh, uint64_t round)
{
	step_train(w, sh, round);
	if (sh->rb.server >= 0 && sh->rb.round < round && !step_install(w, sh, round))
		return false;
	if (!sdc_ec_host_barrier(sh, w, false))
		return false;
	step_collect(w, sh, round);
	if (!sdc_ec_host_barrier(sh, w, false))
		return false;
	step_verify(w, sh);
	if (!sdc_ec_host_barrier(sh, w, false))
		return false;
	step_localise(w, sh, round);
	if (!sdc_ec_host_barrier(sh, w, false))
		return false;
	step_reencode(w, sh);
	if (!sdc_ec_host_barrier(sh, w, false))
		return false;
	return step_close(w, sh, round);
}

/*
 * The rounds are over. A rebuild under way is finished and checked all the same (nothing trains
 * any more), but the round it missed is not trained; a rebuilt server's check still to come
 * waits for its replay. Both by the worker of the server after it, once every other worker has
 * left the rounds (they leave with no barrier). Then every server's end check.
 */
static void end_of_run(struct sdc_worker *w, struct sdc_ec_host *sh, uint64_t rounds)
{
	struct sdc_ec_host_rebuild *rb = &sh->rb;
	const int owner = rb->server >= 0 ? rb->server : rb->check_pending ? rb->installed : -1;
	const bool finisher = owner >= 0 && sdc_ec_host_next_of(sh, w, owner);
	if (finisher) {
		uint32_t gone;
		while ((gone = atomic_load(&sh->bar.gone)) < (uint32_t)sh->T - 1 && !sdc_ec_host_aborted(sh))
			sdc_ec_host_wait(w, &sh->bar.gone, gone);
	} else {
		atomic_fetch_add(&sh->bar.gone, 1);
		sdc_ec_host_wake(&sh->bar.gone);
	}
	const bool finish = finisher && !atomic_load(&sh->bar.abort);
	if (finish) {
		if (rb->server >= 0)
			sdc_ec_host_rebuild_finish(w, sh, rounds, false);
		sdc_ec_host_check_rebuild(w, sh, true);
		/* no round is left to say what the check found: said here, on the lost server's device */
		for (int i = 0; i < sh->found.nev; i++) {
			struct sdc_finding f;
			sdc_ec_finding(&f, sh->operation, rb->installed_round, &sh->found.ev[i]);
			sdc_worker_report(&w->ctx->workers[sh->found.ev[i].owner % sh->T], &f);
		}
		sh->found.nev = 0;
	} else if (finisher) {
		sdc_ec_host_rebuild_join(sh);
	}
	if (finisher)
		sdc_ec_host_replay_join(sh);
	if (!sh->bar.abort && rounds > 0)
		sdc_ec_host_end_check(w, sh, rounds, owner);
	sdc_ec_host_end_done(w, sh);
}

void sdc_ec_host_run(struct sdc_worker *w)
{
	struct sdc_ec_host *sh = w->ctx->shared;
	const int S = sh->st.l.servers;
	snprintf(w->kernel, sizeof(w->kernel), "%s %d of %d", S > sh->T ? "servers from" : "server", w->index, S);
	uint64_t round = 0;
	while (sdc_ec_host_barrier(sh, w, true) && one_round(w, sh, round))
		round++;
	end_of_run(w, sh, round);
}
