/*
 * ecparity on one host: a lost server (the L fault) dropped with the parities it held, and
 * rebuilt bit for bit from its stripes' parities and other members while the others train the
 * next round (struct sdc_ec_host_rebuild in host.h: a helper thread, rows that move under it set
 * aside and done again at the round's end), then installed and caught up on the round it missed.
 */
#include <string.h>
#include <time.h>

#include "probes/ecparity/host.h"
#include "base/clock.h"

/* L: server s is lost this round: its shard and the parities it held are gone. R with it: its
 * rebuild's helper will be slow (a survivor busy), so that training moves rows under it. */
void sdc_ec_host_lose(struct sdc_worker *w, struct sdc_ec_host *sh, int s, uint64_t round)
{
	const struct sdc_ec_layout *l = &sh->st.l;
	struct sdc_fault lf, rf;
	if (s != w->index || !sdc_worker_faults(w, "L", round, &lf, 1))
		return; /* (a device's faults go to its first server) */
	memset(sdc_ec_entry(&sh->st, s, 0), 0xA5, (size_t)l->rows * (size_t)l->words * 4);
	for (int r = 0; r < l->rows; r++) {
		const int c = sdc_ec_held_chunk(l, s, r);
		if (c >= 0)
			memset(sdc_ec_stripe_word(&sh->st, r, c), 0xA5, 4 * (size_t)l->words);
	}
	memset(sdc_ec_column_word(&sh->st, (s - 1 + l->servers) % l->servers), 0xA5, 4 * (size_t)l->words);
	sh->rb.lost = s;
	sh->rb.server = s;
	sh->rb.round = round;
	sh->rb.fault = lf;
	if (lf.row < 0)
		sdc_worker_fault_applied(w, &lf, "L", round, -1, -1, -1, "", "");
	sh->rb.slow = sdc_worker_faults(w, "R", round, &rf, 1) > 0;
	if (sh->rb.slow)
		sdc_worker_fault_applied(w, &rf, "R", round, -1, -1, -1, "", "");
}

/* Row r of the lost server from its stripe's parity and the other members, into out (words). */
static void rebuild_row(const struct sdc_ec_host *sh, int lost, int r, uint32_t *out)
{
	const struct sdc_ec_layout *l = &sh->st.l;
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
static bool row_moving(const struct sdc_ec_host *sh, int lost, int r, memory_order order)
{
	const struct sdc_ec_layout *l = &sh->st.l;
	const int c = sdc_ec_chunk_of(l, lost, r);
	for (int i = 0; i < l->k; i++) {
		const int m = sdc_ec_member(l, r, c, i);
		if (m != lost && atomic_load_explicit(&sh->touched[(size_t)m * l->rows + (size_t)r], order))
			return true;
	}
	return false;
}

/* The helper's pass while the others train: every row not moving, read and checked again. */
static void *rebuild_pass(void *arg)
{
	struct sdc_ec_host *sh = arg;
	struct sdc_ec_host_rebuild *rb = &sh->rb;
	const int lost = rb->server, words = sh->st.l.words;
	const double t0 = sdc_now();
	for (int r = 0; r < sh->st.l.rows; r++) {
		if (rb->slow && r % 64 == 0) {
			const struct timespec ts = { 0, 200 * 1000 };
			nanosleep(&ts, NULL);
		}
		rb->redo[r] = 1;
		if (row_moving(sh, lost, r, memory_order_acquire))
			continue;
		rebuild_row(sh, lost, r, rb->out + (size_t)r * words);
		atomic_thread_fence(memory_order_acquire);
		rb->redo[r] = row_moving(sh, lost, r, memory_order_relaxed);
	}
	rb->pass_s = sdc_now() - t0;
	return NULL;
}

/* At the end of the round of the loss (round), on the next server's worker: the helper's pass
 * and the replay of the lost server's training started beside the next round's training, as
 * threads of this worker's process. The same worker (the next server's) finishes the rebuild and
 * checks it against the replay, so it joins both. */
int sdc_ec_host_rebuild_start(struct sdc_worker *w, struct sdc_ec_host *sh, uint64_t round)
{
	struct sdc_ec_host_rebuild *rb = &sh->rb;
	struct sdc_ec_host_replay *rp = &sh->rp;
	rp->server = rb->server, rp->rounds = round + 1;
	atomic_store(&rp->done, false);
	if (sdc_ec_host_thread_start(&rb->helper, rebuild_pass, sh)) {
		sdc_worker_error(w, "cannot start the rebuild of server %d", rb->server);
		return -1;
	}
	/* (no thread for the replay: the check replays when it comes) */
	sdc_ec_host_thread_start(&rp->helper, sdc_ec_host_replay_pass, sh);
	return 0;
}

void sdc_ec_host_rebuild_join(struct sdc_ec_host *sh)
{
	sdc_ec_host_thread_join(&sh->rb.helper);
}

/* At the end of the round after the loss, nothing moving: the rows set aside rebuilt, the shard
 * installed as rebuilt, the parities it held encoded again; it trains the round it missed next
 * (catch-up). Its check against the replay comes later (host_check.c). round: the round now
 * ending. */
void sdc_ec_host_rebuild_finish(struct sdc_worker *w, struct sdc_ec_host *sh, uint64_t round, bool will_catch_up)
{
	struct sdc_ec_host_rebuild *rb = &sh->rb;
	const struct sdc_ec_layout *l = &sh->st.l;
	const int lost = rb->server, words = l->words;
	sdc_ec_host_rebuild_join(sh);
	const double t0 = sdc_now();
	int64_t redone = 0;
	for (int r = 0; r < l->rows; r++) {
		if (rb->redo[r]) {
			rebuild_row(sh, lost, r, rb->out + (size_t)r * words);
			redone++;
		}
	}
	const double t_redo = sdc_now() - t0;
	/* L with a row: the rebuilt copy goes wrong there (a survivor whose memory fails), which the
	 * replay must catch */
	const struct sdc_fault *lf = &rb->fault;
	if (lf->row >= 0) {
		const int64_t row = lf->row % l->rows, col = lf->col >= 0 ? lf->col % words : 0;
		/* recorded on the lost server's device, where the finding goes */
		sdc_ec_flip(&w->ctx->workers[lost % sh->T], lf, "L", round, row, col, rb->out + row * words + col, true);
	}
	/* in service as rebuilt: its check against the replay (running since the loss) comes when
	 * the replay is done, while training goes on */
	memcpy(sdc_ec_entry(&sh->st, lost, 0), rb->out, (size_t)l->rows * (size_t)words * 4);
	sdc_ec_encode_held(&sh->st, lost);
	rb->server = -1;
	rb->catch_up = lost;
	rb->installed = lost;
	rb->installed_round = round;
	rb->check_pending = true;
	rb->caught_up = will_catch_up;
	rb->redone = redone;
	rb->seconds = rb->pass_s + t_redo;
	rb->pause_s = sdc_now() - t0;
	rb->catch_s = 0;
}
