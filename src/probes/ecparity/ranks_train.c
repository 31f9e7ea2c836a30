/*
 * ecparity across ranks: a round's training. Every rank takes part in every step's exchange: its
 * servers' updates, each update's two difference messages to the ranks of its parities, read and
 * applied there (asynchronously from the updates, as ECRM does). A rebuild under way sends a
 * slice of its parts with each step's messages; a rebuilt server behind trains several of its
 * steps a step (laps) until it is level. The faults of training (G, U) and of messages (M, C) are
 * injected here.
 */
#include <stdlib.h>
#include <string.h>

#include "probes/ecparity/ranks.h"
#include "base/clock.h"

/* Server s's steps a step in round `round`: 1, or more for a rebuilt server catching up (the
 * rounds it missed and this one, in this round's steps). Every rank knows every server's. */
static int64_t laps(const struct sdc_ec_rk *k, int s, uint64_t round)
{
	return k->at.done[s] < round ? (int64_t)(round + 1 - k->at.done[s]) : 1;
}

/* Capacity for what each rank sends in a message exchange: its servers' messages of one step. */
static void message_caps(const struct sdc_ec_rk *k, size_t *cap, uint64_t round)
{
	for (int p = 0; p < k->P; p++)
		cap[p] = k->x.live[p] ? 1 : 0;
	for (int s = 0; s < k->S; s++) {
		const int p = k->at.host[s];
		if (p >= 0 && k->x.live[p] && !(k->rb.on && s == k->rb.D))
			cap[p] += (size_t)laps(k, s, round) * (size_t)k->wk.batch * 2 * sdc_ec_rk_record(k);
	}
}

/* The faults of a round's training on this rank: its own server's (U, M, G), and its count of
 * messages (C). */
struct round_faults {
	struct sdc_fault u[2], m[2], g[2], c;
	int nu, nm, ng, nc;
};

/* G: training's own arithmetic goes wrong (a gradient), before anything checks it. */
static void wrong_gradient(struct sdc_ec_rk *k, const struct round_faults *f, uint64_t round, int row, float *g)
{
	for (int i = 0; i < f->ng; i++) {
		const int col = f->g[i].col >= 0 ? (int)(f->g[i].col % k->wk.d) : 0;
		uint32_t gw;
		memcpy(&gw, &g[col], 4);
		sdc_ec_flip(k->w, &f->g[i], "G", round, row, col, &gw, true);
		memcpy(&g[col], &gw, 4);
	}
}

/* U: the last update of the round stores a wrong result after its difference went. */
static void wrong_update(struct sdc_ec_rk *k, const struct round_faults *f, uint64_t round, int row, uint32_t *e)
{
	for (int i = 0; i < f->nu; i++) {
		const int col = f->u[i].col >= 0 ? (int)(f->u[i].col % k->l.words) : (int)sdc_fault_draw(&f->u[i], 1, k->wk.d);
		sdc_ec_flip(k->w, &f->u[i], "U", round, row, col, &e[col], true);
	}
}

/* The pair of messages of an update, to the ranks of its parities; the first of the round (M:
 * first) changes on its way. 0, or -1 out of memory. */
static int send_pair(struct sdc_ec_rk *k, const struct sdc_ec_msg *pair, const struct round_faults *f, uint64_t round,
		     bool first)
{
	for (int kind = 0; kind < 2; kind++) {
		struct sdc_ec_msg sent = pair[kind];
		for (int i = 0; i < f->nm && first && kind == 0; i++) {
			const int col = f->m[i].col >= 0 ? (int)(f->m[i].col % k->l.words) : 0;
			sdc_ec_flip(k->w, &f->m[i], "M", round, (int)sent.row, col, &sent.diff[col], false);
		}
		const int to = k->at.host[sdc_ec_rk_holder_of(k, &sent)];
		/* a holder on a lost rank: its parities are rebuilt from the members as they are at the
		 * round's end (struct sdc_ec_rk_rebuild) */
		if (to < 0 || !k->x.live[to])
			continue;
		k->x.out[to][0]++; /* (the count this exchange's messages to `to` open with) */
		if (sdc_ec_rk_put(k, to, (const uint32_t *)&sent, sdc_ec_rk_record(k)))
			return -1;
	}
	return 0;
}

/* Server s's (v's) part of step `step`: its steps t of the round (one, or several catching up),
 * each update applied, kept for a rebuild under way, and its differences sent. 0, or -1 out of
 * memory. */
static int train_step(struct sdc_ec_rk *k, struct sdc_ec_rk_server *v, int s, uint64_t round, int64_t step,
		      const struct round_faults *f)
{
	const int words = k->l.words;
	const int64_t n = laps(k, s, round), steps = k->wk.steps, batch = k->wk.batch;
	const bool own = s == k->me;
	float g[SDC_EC_MAX_DIM];
	uint32_t old[SDC_EC_MAX_DIM + 1];
	for (int64_t t = step * n; t < (step + 1) * n; t++) {
		for (int64_t u = 0; u < batch; u++) {
			/* its own round and step: the round it is at, then on (t = step when level) */
			const int row = sdc_ec_draw_update(&k->wk, s, k->at.done[s] + (uint64_t)(t / steps), t % steps, u, g);
			uint32_t *e = v->shard + (size_t)row * words;
			const bool first = own && step == 0 && u == 0, last = own && step == steps - 1 && u == batch - 1;
			sdc_ec_rk_keep(k, v, 0, row);
			if (first)
				wrong_gradient(k, f, round, row, g);
			memcpy(old, e, 4 * (size_t)words);
			sdc_ec_adagrad(e, k->wk.d, g);
			atomic_store_explicit(&v->touched[row], 1, memory_order_relaxed);
			struct sdc_ec_msg *pair = &v->outbox[v->nout];
			sdc_ec_msg_pair(pair, (uint32_t)v->nout, s, row, e, old, words);
			v->nout += 2;
			if (send_pair(k, pair, f, round, first))
				return -1;
			if (last)
				wrong_update(k, f, round, row, e);
		}
	}
	return 0;
}

/* Before a round: every server that trains here with its touched flags clear and an outbox for
 * its messages of the round. 0, or -1 (said). */
static int ready_servers(struct sdc_ec_rk *k, uint64_t round)
{
	for (int h = 0; h < k->at.nhere; h++) {
		struct sdc_ec_rk_server *v = sdc_ec_rk_trains(k, k->at.here[h]);
		if (!v)
			continue;
		for (int r = 0; r < k->l.rows; r++)
			atomic_store_explicit(&v->touched[r], 0, memory_order_relaxed);
		v->nout = 0;
		const size_t need = (size_t)(laps(k, k->at.here[h], round) * k->wk.steps * k->wk.batch * 2);
		if (v->outcap < need) {
			struct sdc_ec_msg *o = realloc(v->outbox, need * sizeof(*o));
			if (!o)
				return sdc_worker_error(k->w, "out of memory for the messages"), -1;
			v->outbox = o, v->outcap = need;
		}
	}
	return 0;
}

/* C: this rank says one message more than it sends to every other rank (a peer whose bytes do not
 * match its count: the others must refuse them, never read past what arrived). */
static void wrong_count(struct sdc_ec_rk *k, const struct round_faults *f, uint64_t round)
{
	if (!f->nc)
		return;
	for (int p = 0; p < k->P; p++)
		if (k->x.live[p] && p != k->me)
			k->x.out[p][0]++;
	sdc_worker_fault_applied(k->w, &f->c, "C", round, -1, -1, -1, "", "");
}

/* Step `step` of the round: every server's updates, then the exchange of their messages (with a
 * slice of a rebuild under way), read and applied. 0, or -1 (said). */
static int one_step(struct sdc_ec_rk *k, uint64_t round, int64_t step, const struct round_faults *f, size_t *cap)
{
	int rc = 0;
	sdc_ec_rk_clear_out(k);
	for (int p = 0; p < k->P; p++)
		if (k->x.live[p] && sdc_ec_rk_put(k, p, (const uint32_t[]){ 0 }, 1))
			rc = -1;
	const double t_updates = sdc_now();
	for (int h = 0; h < k->at.nhere && !rc; h++) {
		const int s = k->at.here[h];
		struct sdc_ec_rk_server *v = sdc_ec_rk_trains(k, s);
		if (!v)
			continue;
		const bool catching_up = laps(k, s, round) > 1;
		const double t0 = catching_up ? sdc_now() : 0;
		rc = train_step(k, v, s, round, step, f);
		if (catching_up && k->rc.running && s == k->rc.D)
			k->rc.catch_s += sdc_now() - t0;
	}
	k->train_s += sdc_now() - t_updates; /* (the updates, not the exchange: what a replay does) */
	if (rc)
		return sdc_worker_error(k->w, "out of memory for the messages"), -1;
	const bool slice = k->rb.on && k->rb.next < k->rb.slices;
	if (slice && sdc_ec_rk_rb_put(k, k->rb.next, k->rb.next + 1))
		return -1;
	if (step == 0)
		wrong_count(k, f, round);
	message_caps(k, cap, round);
	if (slice)
		sdc_ec_rk_rb_caps(k, k->rb.next, k->rb.next + 1, cap);
	if (sdc_ec_rk_exchange(k, SDC_EC_TAG_TRAIN, cap) < 0)
		return -1;
	for (int p = 0; p < k->P && !rc; p++)
		if (k->x.live[p] || p == k->me)
			rc = sdc_ec_rk_read_messages(k, p, round, false);
	if (slice && !rc) {
		rc = sdc_ec_rk_rb_take(k, k->rb.next, k->rb.next + 1);
		k->rb.next++;
	}
	return rc;
}

/* The servers train round `round` (every rank takes part in the exchanges): each step's messages
 * exchanged and applied. 0, or -1 (said). */
int sdc_ec_rk_train_round(struct sdc_ec_rk *k, uint64_t round)
{
	struct round_faults f = { 0 };
	/* a rank's faults go to its own server */
	if (sdc_ec_rk_trains(k, k->me)) {
		f.nu = sdc_ec_faults(k->w, k->me, "U", round, f.u, 2);
		f.nm = sdc_ec_faults(k->w, k->me, "M", round, f.m, 2);
		f.ng = sdc_ec_faults(k->w, k->me, "G", round, f.g, 2);
	}
	f.nc = sdc_ec_faults(k->w, k->me, "C", round, &f.c, 1);
	size_t *cap = calloc((size_t)k->P, sizeof(size_t));
	if (!cap)
		return sdc_worker_error(k->w, "out of memory"), -1;
	int rc = ready_servers(k, round);
	for (int64_t step = 0; step < k->wk.steps && !rc; step++)
		rc = one_step(k, round, step, &f, cap);
	/* (every rank keeps every server's count: a lost one's cut is the count at its round's start) */
	for (int s = 0; s < k->S && !rc; s++)
		if (k->at.host[s] >= 0 && !(k->rb.on && s == k->rb.D))
			k->at.done[s] = round + 1;
	free(cap);
	return rc;
}
