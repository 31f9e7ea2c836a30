/*
 * ecparity across MPI ranks (ECRM, seeds/README: 002): server s is rank s at the start, with its
 * shard, the stripe parities it holds and the column parity of server s - 1 in its own memory;
 * every difference travels to its parity's rank as an MPI message with its CRC32C, and every
 * verification gathers the members' entries at the parity's rank. Nothing assumes the others
 * share this host.
 *
 * A round: the servers train `steps` steps (after each, the step's messages are exchanged and
 * applied: asynchronously from the updates, as ECRM does); messages whose CRC failed are asked
 * for again; faults at rest; the ranks agree on who is still there and whether to go on; lost
 * servers are rebuilt; every parity is verified; the breaks are shared and each rank names what
 * is its own.
 *
 * A lost rank (killed, stuck, or taken away by --inject ...:L) is found by the deadline of an
 * exchange (option timeout) or by a notice from a rank that found it (mpi/transport.h); the ranks agree on
 * it, and then, while the rest keep their state:
 *   - every holder takes back what it applied this round from the lost rank's servers, so the
 *     parities are those of the lost servers' state at the end of the last round (a consistent cut
 *     whatever part of this round's messages got through);
 *   - each lost server is rebuilt on the next surviving rank from its stripes' parities and the
 *     other members (each sends its part; the rebuilder sums), timed, and put in service at once;
 *     a helper thread checks the rebuilt copy bit for bit against a replay of its training from
 *     the seed (which any rank can compute) while the ranks train on (struct replay_check), so
 *     the others wait for one exchange and a sum, not for a replay that grows with the rounds;
 *   - the parities it held are recomputed from their members on its new rank, and its training
 *     of this round is done again there: the run goes on with every server.
 * Exchanges are all-to-all among the live ranks (sdc_mpi_alltoall), each with a tag of its own
 * phase; the order of every buffer is one both sides enumerate from the layout, so no indices
 * travel. The ranks' agreement is a loop of exchanges of what each has seen lost, until every
 * view is the same; a rank lost during the agreement itself can leave the others apart (each
 * names the other: UNKNOWN, never a corruption finding).
 *
 * This file holds the probe's setup across ranks, this rank's state's life, and the round as a
 * sequence of steps; ranks.h lists the parts, one file a job.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inject/fatal.h"
#include "probes/ecparity/ranks.h"
#include "base/message.h"
#include "base/clock.h"

int sdc_ec_ranks_setup(struct sdc_probe_ctx *ctx)
{
	const struct sdc_ec_opts *o = ctx->opts;
	const int S = sdc_mpi.size;
	const struct sdc_ec_layout l = { .servers = S, .k = o->k ? (int)o->k : sdc_ec_auto_k(S), .rows = (int)o->rows,
					 .words = (int)o->dim + 1 };
	char why[256];
	if (sdc_ec_layout_check(&l, why, sizeof(why)))
		return sdc_ctx_error(ctx, "%s", why);
	sdc_mpi.timeout = o->timeout; /* the gather at the end waits no longer than the probe's waits */
	sdc_strlcpy(ctx->rate_unit, "Mupd/s", sizeof(ctx->rate_unit));
	sdc_strlcpy(ctx->iter_unit, "rounds", sizeof(ctx->iter_unit));
	ctx->rate_scale = 1e6;
	ctx->floor = o->floor;
	return 0;
}

static void rk_free(struct sdc_ec_rk *k)
{
	for (int s = 0; k->at.srv && s < k->S; s++)
		sdc_ec_rk_server_free(k->at.srv[s]);
	for (int p = 0; k->x.out && p < k->P; p++)
		free(k->x.out[p]), free(k->x.in[p]);
	free(k->at.srv), free(k->at.host), free(k->at.here), free(k->at.done), free(k->at.start);
	free(k->x.live), free(k->x.out), free(k->x.in), free(k->x.nout), free(k->x.outcap), free(k->x.incap);
	free(k->x.cursor), free(k->x.got), free(k->x.sp), free(k->x.rp);
	free(k->msg.log), free(k->rb.q), free(k->rb.who);
}

static int rk_init(struct sdc_ec_rk *k, struct sdc_worker *w)
{
	const struct sdc_ec_opts *o = w->ctx->opts;
	k->w = w;
	k->P = k->S = sdc_mpi.size;
	k->me = sdc_mpi.rank;
	k->rc.D = -1;
	k->x.timeout = o->timeout;
	k->l = (struct sdc_ec_layout){ .servers = k->S, .k = o->k ? (int)o->k : sdc_ec_auto_k(k->S), .rows = (int)o->rows,
				       .words = (int)o->dim + 1 };
	k->wk = (struct sdc_ec_work){ .seed = sdc_variant_seed(w->ctx->variant, w->ctx->seed), .rows = k->l.rows,
				      .d = (int)o->dim, .steps = o->steps, .batch = o->batch };
	const size_t P = (size_t)k->P;
	struct sdc_ec_rk_place *at = &k->at;
	struct sdc_ec_rk_exchange *x = &k->x;
	at->host = calloc(P, sizeof(int)), at->srv = calloc(P, sizeof(*at->srv)), at->here = calloc(P, sizeof(int));
	at->done = calloc(P, sizeof(uint64_t)), at->start = calloc(P, sizeof(uint64_t));
	x->live = calloc(P, sizeof(bool)), x->out = calloc(P, sizeof(*x->out)), x->in = calloc(P, sizeof(*x->in));
	x->nout = calloc(P, sizeof(size_t)), x->outcap = calloc(P, sizeof(size_t)), x->incap = calloc(P, sizeof(size_t));
	x->cursor = calloc(P, sizeof(size_t)), x->got = calloc(P, sizeof(size_t));
	x->sp = calloc(P, sizeof(*x->sp)), x->rp = calloc(P, sizeof(*x->rp));
	if (!at->host || !at->srv || !at->here || !at->done || !at->start || !x->live || !x->out || !x->in || !x->nout ||
	    !x->outcap || !x->incap || !x->cursor || !x->got || !x->sp || !x->rp || !(at->srv[k->me] = sdc_ec_rk_server_new(k)))
		return -1;
	for (int p = 0; p < k->P; p++)
		at->host[p] = p, x->live[p] = true;
	sdc_ec_rk_hosts_changed(k);
	sdc_ec_initial(&k->wk, k->me, at->srv[k->me]->shard);
	snprintf(k->operation, sizeof(k->operation), "ecparity %d ranks, k %d, %d entries x %d", k->S, k->l.k, k->l.rows,
		 k->wk.d);
	snprintf(w->kernel, sizeof(w->kernel), "server %d of %d (MPI rank)", k->me, k->S);
	return 0;
}

/* ---- the round's steps ---- */

/* The parities built from every member, before the first round: 0, or -1 (said). */
static int build_parities(struct sdc_ec_rk *k)
{
	if (sdc_ec_rk_contribute(k, false))
		return -1;
	/* a rank lost before every parity held its part: nothing can be rebuilt from them */
	for (int p = 0; p < k->P; p++) {
		if (!k->x.live[p]) {
			sdc_worker_error(k->w, "rank %d (%s) was lost before the parities were built: its server cannot be "
					       "rebuilt",
					 p, sdc_mpi_host(p));
			return -1;
		}
	}
	return 0;
}

/* Faults at rest on this rank's server and the fatal ones; true when this rank is taken away
 * (L) and leaves the job. */
static bool faults_at_rest(struct sdc_ec_rk *k, uint64_t round)
{
	struct sdc_ec_rk_server *mine = k->at.srv[k->me];
	if (mine)
		sdc_ec_rest_faults(k->w, &k->l, mine->shard, mine->touched, round);
	sdc_worker_fatal_faults(k->w, round, mine ? (const void *)mine->shard : (const void *)k);
	return sdc_ec_rk_taken_away(k, round);
}

/* Whether this rank would go on after this round (it is counted after it). A run for its time
 * stops early enough for the end's replay check, about as long as the training so far, before
 * the deadline (ranks_check.c: sdc_ec_rk_final_check). */
static bool wants_more(const struct sdc_ec_rk *k)
{
	const struct sdc_worker *w = k->w;
	return sdc_worker_continue(w) &&
	       !(w->ctx->max_iterations && sdc_worker_iterations(w) + 1 >= w->ctx->max_iterations) &&
	       (w->ctx->max_iterations || sdc_now() + k->train_s < w->ctx->deadline);
}

/* Agree on who is there; rebuild what was lost; verify; again if a rank was lost meanwhile.
 * before: the live ranks at the round's start; *reencode: every parity to be recomputed first (a
 * rank lost during a recovery left them short). 0, or -1: the probe ends here for this rank. */
static int agree_and_verify(struct sdc_ec_rk *k, uint64_t round, bool *before, bool *reencode, bool *go_on)
{
	for (;;) {
		const int lost = sdc_ec_rk_agree(k, wants_more(k), go_on, before);
		if (lost < 0)
			return -1;
		if (lost) {
			memcpy(before, k->x.live, (size_t)k->P);
			if (sdc_ec_rk_recover(k, round))
				return -1;
			/* a rank lost during the recovery leaves parities short: all recomputed once the
			 * ranks agree again (this round's faults at rest go unseen then) */
			*reencode |= memcmp(before, k->x.live, (size_t)k->P) != 0;
			continue;
		}
		if (*reencode && sdc_ec_rk_contribute(k, false))
			return -1;
		*reencode = false;
		if (sdc_ec_rk_contribute(k, true) || sdc_ec_rk_share_breaks(k))
			return -1;
		bool same = true;
		for (int p = 0; p < k->P; p++)
			same &= k->x.live[p] == before[p];
		if (same)
			return 0;
	}
}

/* The round counted: its updates on the servers trained here; a rebuild's replay check read if
 * it is done and the server has caught up. */
static void round_end(struct sdc_ec_rk *k)
{
	int held = 0;
	for (int s = 0; s < k->S; s++)
		held += sdc_ec_rk_trains(k, s) != NULL;
	sdc_worker_account(k->w, (double)(k->wk.steps * k->wk.batch * held));
	if (!k->rc.running || k->at.done[k->rc.D] > k->rc.installed + 1)
		sdc_ec_rk_check_finish(k, false);
}

/* Round `round`; false: the rounds end here (a failure said, or this rank taken away), with no
 * end check. */
static bool one_round(struct sdc_ec_rk *k, uint64_t round, bool *before, bool *reencode, bool *go_on)
{
	k->msg.nlog = 0;
	memcpy(k->at.start, k->at.done, (size_t)k->S * sizeof(uint64_t));
	memcpy(before, k->x.live, (size_t)k->P);
	if (sdc_ec_rk_train_round(k, round) || sdc_ec_rk_resend_round(k, round))
		return false;
	/* a rebuild whose parts all came with this round's messages: in service */
	if (k->rb.on && k->rb.next >= k->rb.slices && sdc_ec_rk_rb_install(k, round))
		return false;
	if (faults_at_rest(k, round) || agree_and_verify(k, round, before, reencode, go_on))
		return false;
	sdc_ec_rk_localise(k, round);
	/* parities that broke are recomputed by their holders, once the members are right */
	if ((k->br.nsb || k->br.ncb) && sdc_ec_rk_contribute(k, false))
		return false;
	round_end(k);
	return true;
}

void sdc_ec_ranks_run(struct sdc_worker *w)
{
	struct sdc_ec_rk k = { 0 };
	if (rk_init(&k, w)) {
		sdc_worker_error(w, "out of memory for a shard of %d entries", k.l.rows);
		rk_free(&k);
		return;
	}
	bool *before = calloc((size_t)k.P, sizeof(bool));
	bool go_on = true, reencode = false, ended = false;
	uint64_t round = 0;
	if (before && !build_parities(&k)) {
		bool on = true;
		for (; go_on && on; round++) {
			on = one_round(&k, round, before, &reencode, &go_on);
			ended = on && !go_on;
		}
		/* the last round's agreement found a rank lost: its server's parts in one exchange */
		if (ended && k.rb.on && !k.x.cut_off)
			sdc_ec_rk_rb_finish_now(&k, round - 1);
	}
	sdc_ec_rk_check_finish(&k, true);
	if (ended)
		sdc_ec_rk_final_check(&k);
	free(before);
	rk_free(&k);
}
