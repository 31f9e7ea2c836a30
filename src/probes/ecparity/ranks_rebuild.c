/*
 * ecparity across ranks: a lost server rebuilt on the next surviving rank while the ranks train
 * on (struct sdc_ec_rk_rebuild in ranks.h): its parts sent slice by slice with the training's
 * messages, each row as it was at the cut (the write buffer, struct sdc_ec_rk_kept, keeps a row
 * that training changes before its slice has gone), summed on the new host, and the server put
 * in service there at the round's end.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "probes/ecparity/ranks.h"
#include "base/message.h"
#include "base/clock.h"

/* Who holds a part of lost server D's entry r: its stripe's other members (to subtract) and its
 * parity (to add), by server. */
static int contributors(const struct sdc_ec_layout *l, int D, int r, struct sdc_ec_rk_part *out)
{
	const int c = sdc_ec_chunk_of(l, D, r);
	int n = 0;
	for (int i = 0; i < l->k; i++)
		if (sdc_ec_member(l, r, c, i) != D)
			out[n++] = (struct sdc_ec_rk_part){ sdc_ec_member(l, r, c, i), -1 };
	out[n++] = (struct sdc_ec_rk_part){ sdc_ec_stripe_parity_server(l, r, c), 1 };
	qsort(out, (size_t)n, sizeof(*out), sdc_ec_rk_by_server);
	return n;
}

enum part_into { INTO_ENTRY, INTO_HELD, INTO_COLUMN };
struct sdc_ec_rk_rb_part {
	int x, sign, into; /* the server it comes from, its sign, what it adds to */
};

/* The parts of row r of the server being rebuilt, in the order both sides enumerate: its stripe's
 * contributors, then the members of the stripe it held through r; row `rows` is its column parity. */
static int rb_parts(const struct sdc_ec_rk *k, int r, struct sdc_ec_rk_rb_part *out)
{
	const struct sdc_ec_layout *l = &k->l;
	const int D = k->rb.D;
	if (r == l->rows) {
		out[0] = (struct sdc_ec_rk_rb_part){ (D - 1 + l->servers) % l->servers, 1, INTO_COLUMN };
		return 1;
	}
	struct sdc_ec_rk_part *who = k->rb.who;
	int n = contributors(l, D, r, who);
	for (int i = 0; i < n; i++)
		out[i] = (struct sdc_ec_rk_rb_part){ who[i].x, who[i].sign, INTO_ENTRY };
	const int c = sdc_ec_held_chunk(l, D, r);
	for (int i = 0; c >= 0 && i < l->k; i++)
		out[n++] = (struct sdc_ec_rk_rb_part){ sdc_ec_member(l, r, c, i), 1, INTO_HELD };
	return n;
}

/* Row r of server v (kind 0: its entry, 1: the stripe parity it holds) as it was at the cut. */
static const uint32_t *cut_value(const struct sdc_ec_rk *k, const struct sdc_ec_rk_server *v, int kind, int r)
{
	const int32_t at = v->kept.at ? v->kept.at[2 * (size_t)r + kind] : -1;
	return at >= 0 ? v->kept.v + (size_t)at * k->l.words : (kind ? v->held : v->shard) + (size_t)r * k->l.words;
}

static void rb_drop_kept(struct sdc_ec_rk *k)
{
	for (int s = 0; s < k->S; s++)
		if (k->at.srv[s]) {
			free(k->at.srv[s]->kept.at), free(k->at.srv[s]->kept.v);
			k->at.srv[s]->kept.at = NULL, k->at.srv[s]->kept.v = NULL;
			k->at.srv[s]->kept.n = k->at.srv[s]->kept.cap = 0;
		}
}

/*
 * After the loss is agreed (round: the loss's): server D's rebuild set up on every rank, an empty
 * server waiting for its parts on the new host, and every other server held here ready to keep
 * its rows' values at the cut. Nothing is copied or exchanged here.
 */
int sdc_ec_rk_rb_start(struct sdc_ec_rk *k, int D, int was, uint64_t round)
{
	struct sdc_ec_rk_rebuild *b = &k->rb;
	const double t0 = sdc_now();
	*b = (struct sdc_ec_rk_rebuild){ .on = true, .D = D, .was = was, .round = round, .rounds = k->at.start[D],
					 .slices = k->wk.steps < k->l.rows + 1 ? (int)k->wk.steps : k->l.rows + 1,
					 .lost_with = -1, .t0 = t0,
					 .q = calloc(2 * (size_t)k->l.k + 1, sizeof(struct sdc_ec_rk_rb_part)),
					 .who = calloc((size_t)k->l.k + 1, sizeof(struct sdc_ec_rk_part)) };
	if (!b->q || !b->who)
		return sdc_worker_error(k->w, "out of memory for server %d's rebuild", D), -1;
	for (int h = 0; h < k->at.nhere; h++) {
		struct sdc_ec_rk_server *v = k->at.srv[k->at.here[h]];
		if (!(v->kept.at = malloc(2 * (size_t)k->l.rows * sizeof(int32_t))))
			return sdc_worker_error(k->w, "out of memory for server %d's rebuild", D), -1;
		memset(v->kept.at, 0xff, 2 * (size_t)k->l.rows * sizeof(int32_t)); /* -1: nothing kept */
	}
	if (k->at.host[D] == k->me) {
		struct sdc_ec_rk_server *v = sdc_ec_rk_server_new(k);
		if (!v)
			return sdc_worker_error(k->w, "out of memory for server %d's rebuild", D), -1;
		v->pending = true;
		k->at.srv[D] = v;
		sdc_ec_rk_hosts_changed(k);
	}
	b->cut_s = sdc_now() - t0;
	sdc_note("ecparity: server %d (rank %d lost) is rebuilt on rank %d while the ranks train round %" PRIu64
		 ": its parts go with that round's messages",
		 D, was, k->at.host[D], round + 1);
	return 0;
}

/* Slices j0 .. j1 - 1 of this rank's parts, as they were at the cut, to the new host. */
int sdc_ec_rk_rb_put(struct sdc_ec_rk *k, int j0, int j1)
{
	struct sdc_ec_rk_rebuild *b = &k->rb;
	const int to = k->at.host[b->D], xc = (b->D - 1 + k->S) % k->S;
	const size_t words = (size_t)k->l.words;
	const struct sdc_ec_rk_server *vc = sdc_ec_rk_trains(k, xc);
	uint32_t part[SDC_EC_MAX_DIM + 1];
	if (b->short_of_memory)
		return sdc_worker_error(k->w, "out of memory for the values server %d's rebuild reads", b->D), -1;
	for (int r = sdc_ec_rk_rb_row(k, j0); r < sdc_ec_rk_rb_row(k, j1); r++) {
		/* the column's part: its rows summed slice by slice, sent with the last */
		if (vc && r < k->l.rows) {
			const uint32_t *e = cut_value(k, vc, 0, r);
			for (size_t c = 0; c < words; c++)
				b->column[c] += e[c];
		}
		const int m = rb_parts(k, r, b->q);
		for (int i = 0; i < m; i++) {
			const struct sdc_ec_rk_rb_part *q = &b->q[i];
			const struct sdc_ec_rk_server *v = sdc_ec_rk_trains(k, q->x);
			if (!v || !k->x.live[to])
				continue;
			if (q->into == INTO_COLUMN)
				memcpy(part, b->column, 4 * words);
			else {
				const uint32_t *e = cut_value(k, v, q->into == INTO_ENTRY && q->sign > 0, r);
				for (size_t c = 0; c < words; c++)
					part[c] = q->sign > 0 ? e[c] : 0u - e[c];
			}
			if (sdc_ec_rk_put(k, to, part, words))
				return sdc_worker_error(k->w, "out of memory for the rebuild's parts"), -1;
		}
	}
	return 0;
}

/* On the new host: what each rank sends of slices j0 .. j1 - 1. */
void sdc_ec_rk_rb_caps(const struct sdc_ec_rk *k, int j0, int j1, size_t *cap)
{
	struct sdc_ec_rk_rb_part *q = k->rb.q;
	if (k->at.host[k->rb.D] != k->me)
		return;
	for (int r = sdc_ec_rk_rb_row(k, j0); r < sdc_ec_rk_rb_row(k, j1); r++) {
		const int m = rb_parts(k, r, q);
		for (int i = 0; i < m; i++)
			if (k->x.live[k->at.host[q[i].x]])
				cap[k->at.host[q[i].x]] += (size_t)k->l.words;
	}
}

/* On the new host: slices j0 .. j1 - 1 added up as they came (a rank lost before its part is
 * remembered: the rebuild cannot finish; one that sent less is refused). */
int sdc_ec_rk_rb_take(struct sdc_ec_rk *k, int j0, int j1)
{
	struct sdc_ec_rk_rebuild *b = &k->rb;
	struct sdc_ec_rk_rb_part *q = k->rb.q;
	if (k->at.host[b->D] != k->me)
		return 0;
	const double t0 = sdc_now();
	struct sdc_ec_rk_server *v = k->at.srv[b->D];
	const size_t words = (size_t)k->l.words;
	for (int r = sdc_ec_rk_rb_row(k, j0); r < sdc_ec_rk_rb_row(k, j1); r++) {
		const int m = rb_parts(k, r, q);
		for (int i = 0; i < m; i++) {
			const int p = k->at.host[q[i].x];
			const uint32_t *e = k->x.live[p] ? sdc_ec_rk_take(k, p, words) : NULL;
			if (!e && k->x.live[p])
				return sdc_worker_error(k->w, "rank %d (%s) sent less than its part of server %d's rebuild: refused",
							p, sdc_mpi_host(p), b->D),
				       -1;
			if (!e) {
				b->lost_with = p;
				continue;
			}
			uint32_t *o = q[i].into == INTO_COLUMN ? v->col
				      : (q[i].into == INTO_HELD ? v->held : v->shard) + (size_t)r * words;
			for (size_t c = 0; c < words; c++)
				o[c] += e[c];
			b->bytes += 4.0 * (double)words;
		}
	}
	b->sum_s += sdc_now() - t0;
	return 0;
}

/*
 * Every part in: the server goes into service on its new host (round: the round now ending) as it
 * was at the cut (its groups hold then: nothing of it moved since), its check against a replay of
 * its training starts beside the training, and from the next round it trains the rounds it missed
 * as well, several of its steps a step (laps), until it is level.
 */
int sdc_ec_rk_rb_install(struct sdc_ec_rk *k, uint64_t round)
{
	struct sdc_ec_rk_rebuild *b = &k->rb;
	const double span = sdc_now() - b->t0;
	const int D = b->D;
	free(b->q), free(b->who);
	b->q = NULL, b->who = NULL;
	b->on = false;
	rb_drop_kept(k);
	if (b->lost_with >= 0)
		return sdc_worker_error(k->w, "server %d cannot be rebuilt: rank %d (%s), which held a part of it, was lost "
					      "during its rebuild (a parity rebuilds one lost server at a time)",
					D, b->lost_with, sdc_mpi_host(b->lost_with)),
		       -1;
	k->at.done[D] = b->rounds;
	if (k->at.host[D] != k->me)
		return 0;
	struct sdc_ec_rk_server *v = k->at.srv[D];
	const struct sdc_ec_layout *l = &k->l;
	v->pending = false;
	/* L with a row: the rebuilt copy goes wrong there (this survivor's memory), which the replay
	 * must catch; the fault is the lost rank's spec, applied and recorded here */
	struct sdc_fault lf;
	if (sdc_ec_faults(k->w, b->was, "L", b->round, &lf, 1) && lf.row >= 0) {
		const int64_t row = lf.row % l->rows, col = lf.col >= 0 ? lf.col % k->l.words : 0;
		sdc_ec_flip(k->w, &lf, "L", b->round, row, col, v->shard + (size_t)row * k->l.words + (size_t)col, true);
	}
	if (sdc_ec_rk_check_start(k, v, round, span))
		return -1;
	sdc_note("ecparity: server %d (rank %d lost) rebuilt on rank %d in %.3f s while training went on (%.3f GB read, "
		 "%.3f s of adding); its check against a replay of its training runs beside the training",
		 D, b->was, k->me, span, b->bytes / 1e9, b->sum_s);
	return 0;
}

/* The run ends with a rebuild under way: its remaining parts in one exchange (nothing trains any
 * more), installed and checked; the rounds it missed are not trained. */
int sdc_ec_rk_rb_finish_now(struct sdc_ec_rk *k, uint64_t round)
{
	struct sdc_ec_rk_rebuild *b = &k->rb;
	size_t *cap = calloc((size_t)k->P, sizeof(size_t));
	if (!cap)
		return sdc_worker_error(k->w, "out of memory"), -1;
	sdc_ec_rk_clear_out(k);
	sdc_ec_rk_rb_caps(k, b->next, b->slices, cap);
	int rc = -1;
	if (!sdc_ec_rk_rb_put(k, b->next, b->slices) && sdc_ec_rk_exchange(k, SDC_EC_TAG_REBUILD, cap) >= 0)
		rc = sdc_ec_rk_rb_take(k, b->next, b->slices);
	free(cap);
	b->next = b->slices;
	return rc ? rc : sdc_ec_rk_rb_install(k, round);
}
