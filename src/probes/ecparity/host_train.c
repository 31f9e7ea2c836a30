/*
 * ecparity on one host: a server's training of a round, and the messages that carry each step's
 * differences to the servers holding their parities (ecparity.h: struct sdc_ec_bundle), applied
 * by a holder when it next looks (asynchronously from the updates, as ECRM does). The faults of
 * training's arithmetic and of the messages (G, U, M) are injected here.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "probes/ecparity/host.h"
#include "base/message.h"

void sdc_ec_host_add_event(struct sdc_ec_host *sh, const struct sdc_ec_event *e)
{
	struct sdc_ec_host_found *fd = &sh->found;
	if (sdc_ec_host_lock(sh, &fd->lock))
		return;
	if (fd->nev < SDC_EC_HOST_MAX_BREAKS)
		fd->ev[fd->nev++] = *e;
	pthread_mutex_unlock(&fd->lock);
}

static struct sdc_ec_bundle *bundle_at(const struct sdc_ec_host *sh, int s, int64_t step)
{
	const size_t at = (size_t)s * (size_t)sh->wk.steps + (size_t)step;
	return (struct sdc_ec_bundle *)(sh->msg.outbox + at * sh->msg.bundle_words);
}

/* A message that failed its CRC32C: the sender's copy (as a resend would bring it) names the
 * record, word and bits that changed on the way. */
static void say_transit(struct sdc_ec_host *sh, int s, int t, int64_t k, const struct sdc_ec_bundle *got,
			const struct sdc_ec_bundle *sent)
{
	const int words = sh->st.l.words;
	struct sdc_ec_event e = { .owner = t, .row = -1, .col = -1 };
	sdc_strlcpy(e.kind, "difference-corrupt", sizeof(e.kind));
	sdc_strlcpy(e.target, "M", sizeof(e.target));
	for (uint32_t i = 0; i < sent->n && e.col < 0; i++) {
		const uint32_t *a = sdc_ec_bundle_record((struct sdc_ec_bundle *)got, (int)i, words),
			       *x = sdc_ec_bundle_record((struct sdc_ec_bundle *)sent, (int)i, words);
		for (int w = 0; w <= words && e.col < 0; w++) {
			if (a[w] != x[w]) {
				e.row = (int)x[0];
				/* (word 0 is the record's row: a change there is in no difference word) */
				e.col = w ? w - 1 : 0, e.expected = x[w], e.actual = a[w];
			}
		}
	}
	snprintf(e.detail, sizeof(e.detail),
		 "the message of step %" PRId64 " from server %d to server %d failed its CRC32C: the link "
		 "(memory or transport between them) changed entry %d's difference; applied from the sender's copy",
		 k, t, s, e.row);
	sdc_ec_host_add_event(sh, &e);
}

/* Holder s takes sender t's message of step k: copied (the transit), its CRC32C checked, the
 * records it holds parities of applied. One whose CRC fails is said and not applied: the sender's
 * copy is applied in its place. */
static void receive(struct sdc_ec_host *sh, int s, int t, uint64_t round, int64_t k)
{
	const int words = sh->st.l.words;
	const struct sdc_ec_bundle *sent = bundle_at(sh, t, k);
	struct sdc_ec_bundle *got = (struct sdc_ec_bundle *)(sh->msg.recv + (size_t)s * sh->msg.bundle_words);
	memcpy(got, sent, 4 * sdc_ec_bundle_words((int)sent->n, words));
	const struct sdc_ec_transit_fault *tf = &sh->msg.transit[t];
	if (tf->on && tf->round == round && k == 0 && tf->to == s && sent->n)
		sdc_ec_bundle_record(got, 0, words)[1 + tf->word] = tf->value;
	if (got->n != sent->n || sdc_ec_bundle_crc(got, sent->n, words) != got->crc) {
		say_transit(sh, s, t, k, got, sent);
		got = (struct sdc_ec_bundle *)sent;
	}
	sdc_ec_bundle_apply(&sh->st, got, s);
}

/* Applies every message of round `round` that has come for server s since it last looked. */
void sdc_ec_host_drain(struct sdc_ec_host *sh, int s, uint64_t round)
{
	const int S = sh->st.l.servers;
	for (int t = 0; t < S; t++) {
		if (t == s)
			continue;
		const uint64_t pub = atomic_load_explicit(&sh->msg.published[t], memory_order_acquire);
		if (pub >> 32 != round)
			continue; /* (a sender not yet in this round, or lost) */
		uint64_t *ap = &sh->msg.applied[(size_t)s * (size_t)S + (size_t)t];
		int64_t k = *ap >> 32 == round ? (int64_t)(uint32_t)*ap : 0;
		/* a server being rebuilt: its parities are gone, encoded again from the members once it is
		 * back, so what comes for it meanwhile is let go */
		for (; k < (int64_t)(uint32_t)pub && s != sh->rb.server; k++)
			receive(sh, s, t, round, k);
		*ap = pub;
	}
}

/* The faults of a round's training on one server (a device's go to its first server). */
struct train_faults {
	struct sdc_fault u[2], m[2], g[2];
	int nu, nm, ng;
};

/* G: training's own arithmetic goes wrong (a gradient of the round's first update), before
 * anything checks it. */
static void wrong_gradient(struct sdc_worker *w, const struct train_faults *tf, int d, uint64_t round, int row, float *g)
{
	for (int i = 0; i < tf->ng; i++) {
		const int col = tf->g[i].col >= 0 ? (int)(tf->g[i].col % d) : 0;
		uint32_t gw;
		memcpy(&gw, &g[col], 4);
		sdc_ec_flip(w, &tf->g[i], "G", round, row, col, &gw, true);
		memcpy(&g[col], &gw, 4);
	}
}

/* M: the round's first difference (record 0 of b) changes on its way to the holder of its
 * stripe: what that holder will receive, kept aside for it. */
static void wrong_transit(struct sdc_worker *w, struct sdc_ec_host *sh, const struct train_faults *tf, int s,
			  uint64_t round, int row, struct sdc_ec_bundle *b)
{
	const struct sdc_ec_layout *l = &sh->st.l;
	for (int i = 0; i < tf->nm; i++) {
		const int col = tf->m[i].col >= 0 ? (int)(tf->m[i].col % l->words) : 0;
		struct sdc_ec_transit_fault *t = &sh->msg.transit[s];
		t->value = sdc_ec_bundle_record(b, 0, l->words)[1 + col];
		sdc_ec_flip(w, &tf->m[i], "M", round, row, col, &t->value, false);
		t->on = true, t->round = round, t->word = col;
		t->to = sdc_ec_stripe_parity_server(l, row, sdc_ec_chunk_of(l, s, row));
	}
}

/* U: the last update of the round stores a wrong result after its difference went. */
static void wrong_update(struct sdc_worker *w, const struct train_faults *tf, int words, uint64_t round, int row,
			 uint32_t *e)
{
	for (int i = 0; i < tf->nu; i++) {
		const int col =
			tf->u[i].col >= 0 ? (int)(tf->u[i].col % words) : (int)sdc_fault_draw(&tf->u[i], 1, words - 1);
		sdc_ec_flip(w, &tf->u[i], "U", round, row, col, &e[col], true);
	}
}

/* Server s's training of one round: updates, a step's differences sent as one message, what has
 * arrived applied. A server being rebuilt trains this round once it is back (its catch-up). */
void sdc_ec_host_train(struct sdc_worker *w, struct sdc_ec_host *sh, int s, uint64_t round)
{
	const struct sdc_ec_work *wk = &sh->wk;
	const int words = sh->st.l.words;
	float g[SDC_EC_MAX_DIM];
	struct train_faults tf = { 0 };
	/* a device's faults go to its first server (a thread with two servers runs on one CPU) */
	if (s == w->index) {
		tf.nu = sdc_worker_faults(w, "U", round, tf.u, 2);
		tf.nm = sdc_worker_faults(w, "M", round, tf.m, 2);
		tf.ng = sdc_worker_faults(w, "G", round, tf.g, 2);
	}
	_Atomic uint8_t *touched = sh->touched + (size_t)s * sh->st.l.rows;
	if (s == sh->rb.server)
		return;
	/* (the rebuild's helper reads these flags while this trains: atomics) */
	for (int r = 0; r < sh->st.l.rows; r++)
		atomic_store_explicit(&touched[r], 0, memory_order_relaxed);
	for (int64_t step = 0; step < wk->steps; step++) {
		struct sdc_ec_bundle *b = bundle_at(sh, s, step);
		*b = (struct sdc_ec_bundle){ .from = (uint32_t)s, .round = (uint32_t)round, .step = (uint32_t)step };
		for (int64_t u = 0; u < wk->batch; u++) {
			const int row = sdc_ec_draw_update(wk, s, round, step, u, g);
			uint32_t *e = sdc_ec_entry(&sh->st, s, row);
			/* the flag before the entry moves (a seqlock's writer): the helper of a rebuild under
			 * way sets this row aside */
			if (!atomic_load_explicit(&touched[row], memory_order_relaxed)) {
				atomic_store_explicit(&touched[row], 1, memory_order_relaxed);
				atomic_thread_fence(memory_order_seq_cst);
			}
			const bool first = step == 0 && u == 0, last = step == wk->steps - 1 && u == wk->batch - 1;
			if (first)
				wrong_gradient(w, &tf, wk->d, round, row, g);
			sdc_ec_bundle_update(b, e, row, wk->d, g);
			if (first)
				wrong_transit(w, sh, &tf, s, round, row, b);
			if (last)
				wrong_update(w, &tf, words, round, row, e);
		}
		b->crc = sdc_ec_bundle_crc(b, b->n, words);
		atomic_store_explicit(&sh->msg.published[s], round << 32 | (uint64_t)(step + 1), memory_order_release);
		sdc_ec_host_drain(sh, s, round); /* asynchronously from the updates: what has arrived so far */
	}
}
