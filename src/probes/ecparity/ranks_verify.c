/*
 * ecparity across ranks: the parities encoded or verified at their holders (every member's
 * entries and column sums sent to the parity's rank, in an order both sides enumerate from the
 * layout, so no indices travel), every rank's breaks shared with every rank, and each rank naming
 * what broke in the servers it holds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/ecparity/ranks.h"

int sdc_ec_rk_by_server(const void *a, const void *b)
{
	return ((const struct sdc_ec_rk_part *)a)->x - ((const struct sdc_ec_rk_part *)b)->x;
}

static int by_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Whether stripe (r, c) waits for a server being rebuilt (a member, or its parity's holder); and
 * server x's column (x is that server, or the column's holder). Both sides of an exchange ask. */
static bool stripe_waits(const struct sdc_ec_rk *k, int r, int c)
{
	return k->rb.on && (sdc_ec_stripe_has(&k->l, r, c, k->rb.D) || sdc_ec_stripe_parity_server(&k->l, r, c) == k->rb.D);
}

static bool column_waits(const struct sdc_ec_rk *k, int x)
{
	return k->rb.on && (x == k->rb.D || sdc_ec_column_parity_server(&k->l, x) == k->rb.D);
}

/* The members of the stripes through row r whose parity is held here, by member (the order every
 * sender writes its entries in); x's holder in out[].sign. */
static int held_members(const struct sdc_ec_rk *k, int r, struct sdc_ec_rk_part *out)
{
	int n = 0;
	for (int h = 0; h < k->at.nhere; h++) {
		const int p = k->at.here[h], c = sdc_ec_held_chunk(&k->l, p, r);
		for (int i = 0; c >= 0 && !stripe_waits(k, r, c) && i < k->l.k; i++)
			out[n++] = (struct sdc_ec_rk_part){ sdc_ec_member(&k->l, r, c, i), p };
	}
	qsort(out, (size_t)n, sizeof(*out), sdc_ec_rk_by_server);
	return n;
}

/* A verification's or an encoding's work space, and the breaks it counts. */
struct contribution {
	size_t *cap;                          /* per rank: the words it sends here */
	uint32_t (*sum)[SDC_EC_MAX_DIM + 1];  /* per holder server: a row's sum */
	uint32_t *col;                        /* a column's sum */
	struct sdc_ec_rk_part *mem;           /* a row's members held here */
	int *cols, ncols;                     /* the columns held here, by the server they sum */
	int64_t broken;
};

/* This rank's members' entries to their stripes' holders, in row order, and their columns' sums
 * to the columns' holders. 0, or -1 out of memory. */
static int send_members(struct sdc_ec_rk *k, struct contribution *cb)
{
	const struct sdc_ec_layout *l = &k->l;
	const size_t words = (size_t)l->words;
	sdc_ec_rk_clear_out(k);
	for (int r = 0; r < l->rows; r++) {
		for (int h = 0; h < k->at.nhere; h++) {
			const int x = k->at.here[h], c = sdc_ec_chunk_of(l, x, r);
			const int p = sdc_ec_stripe_parity_server(l, r, c);
			if (!stripe_waits(k, r, c) && k->x.live[k->at.host[p]] &&
			    sdc_ec_rk_put(k, k->at.host[p], k->at.srv[x]->shard + (size_t)r * words, words))
				return -1;
		}
	}
	for (int h = 0; h < k->at.nhere; h++) {
		const int x = k->at.here[h];
		const struct sdc_ec_rk_server *v = k->at.srv[x];
		const int p = sdc_ec_column_parity_server(l, x);
		if (column_waits(k, x) || !k->x.live[k->at.host[p]])
			continue;
		memset(cb->col, 0, 4 * words);
		for (int r = 0; r < l->rows; r++)
			for (size_t c = 0; c < words; c++)
				cb->col[c] += v->shard[(size_t)r * words + c];
		if (sdc_ec_rk_put(k, k->at.host[p], cb->col, words))
			return -1;
	}
	return 0;
}

/* What each rank sends here: its members of the stripes held here, and their columns. */
static void expect_members(const struct sdc_ec_rk *k, struct contribution *cb)
{
	const size_t words = (size_t)k->l.words;
	for (int r = 0; r < k->l.rows; r++) {
		const int n = held_members(k, r, cb->mem);
		for (int i = 0; i < n; i++)
			cb->cap[k->at.host[cb->mem[i].x]] += words;
	}
	/* the columns held here, by the server they sum (the order their senders write them in) */
	cb->ncols = 0;
	for (int h = 0; h < k->at.nhere; h++) {
		const int x = (k->at.here[h] - 1 + k->S) % k->S;
		if (!column_waits(k, x))
			cb->cols[cb->ncols++] = x;
	}
	qsort(cb->cols, (size_t)cb->ncols, sizeof(int), by_int);
	for (int i = 0; i < cb->ncols; i++)
		cb->cap[k->at.host[cb->cols[i]]] += words;
}

/* The members that came summed per held stripe: compared with the parities (verify) or stored
 * as them. 0, or -1 when a live rank sent less than its part. */
static int take_stripes(struct sdc_ec_rk *k, struct contribution *cb, bool verify)
{
	const struct sdc_ec_layout *l = &k->l;
	const int words = l->words;
	for (int r = 0; r < l->rows; r++) {
		const int n = held_members(k, r, cb->mem);
		for (int i = 0; i < n; i++)
			memset(cb->sum[cb->mem[i].sign], 0, 4 * (size_t)words);
		for (int i = 0; i < n; i++) {
			const int from = k->at.host[cb->mem[i].x];
			const uint32_t *e = k->x.live[from] ? sdc_ec_rk_take(k, from, (size_t)words) : NULL;
			if (!e && k->x.live[from])
				return -1;
			for (int c = 0; e && c < words; c++)
				cb->sum[cb->mem[i].sign][c] += e[c];
		}
		for (int h = 0; h < k->at.nhere; h++) {
			const int p = k->at.here[h], c = sdc_ec_held_chunk(l, p, r);
			if (c < 0 || stripe_waits(k, r, c))
				continue;
			uint32_t *held = k->at.srv[p]->held + (size_t)r * words;
			for (int w = 0; w < words; w++) {
				if (!verify)
					held[w] = cb->sum[p][w];
				else if (held[w] != cb->sum[p][w] && cb->broken++ < SDC_EC_RK_MAX_BREAKS)
					k->br.sb[k->br.nsb++] = (struct sdc_ec_break){ r, c, w, held[w] - cb->sum[p][w] };
			}
		}
	}
	return 0;
}

/* The columns that came, compared with the column parities held here (verify) or stored as them. */
static int take_columns(struct sdc_ec_rk *k, struct contribution *cb, bool verify)
{
	for (int i = 0; i < cb->ncols; i++) {
		const int x = cb->cols[i];
		if (!k->x.live[k->at.host[x]])
			continue;
		uint32_t *col = k->at.srv[sdc_ec_column_parity_server(&k->l, x)]->col;
		const uint32_t *e = sdc_ec_rk_take(k, k->at.host[x], (size_t)k->l.words);
		if (!e)
			return -1;
		for (int c = 0; c < k->l.words; c++) {
			if (!verify)
				col[c] = e[c];
			else if (col[c] != e[c] && cb->broken++ < 2 * SDC_EC_RK_MAX_BREAKS && k->br.ncb < SDC_EC_RK_MAX_BREAKS)
				k->br.cb[k->br.ncb++] = (struct sdc_ec_break){ x, -1, c, col[c] - e[c] };
		}
	}
	return 0;
}

/*
 * Every parity held here made again from its members (verify false: encoding) or compared with
 * them (breaks into k->br): the members' entries and their columns' sums sent to the holders,
 * received and summed per held stripe. A rank lost in the exchange leaves sums short: the caller
 * does not use such a verification. 0, or -1 (said).
 */
int sdc_ec_rk_contribute(struct sdc_ec_rk *k, bool verify)
{
	const size_t nhere = (size_t)(k->at.nhere ? k->at.nhere : 1);
	struct contribution cb = { .cap = calloc((size_t)k->P, sizeof(size_t)),
				   .col = calloc((size_t)k->l.words, 4),
				   .sum = calloc((size_t)k->S, sizeof(*cb.sum)),
				   .mem = calloc(nhere * (size_t)k->l.k, sizeof(*cb.mem)),
				   .cols = calloc(nhere, sizeof(int)) };
	int rc = -1;
	if (cb.cap && cb.col && cb.sum && cb.mem && cb.cols && !send_members(k, &cb)) {
		expect_members(k, &cb);
		if (sdc_ec_rk_exchange(k, verify ? SDC_EC_TAG_VERIFY : SDC_EC_TAG_ENCODE, cb.cap) >= 0) {
			k->br.nsb = k->br.ncb = 0;
			rc = take_stripes(k, &cb, verify) || take_columns(k, &cb, verify) ? -1 : 0;
		}
	}
	if (rc && !k->x.cut_off)
		sdc_worker_error(k->w, "out of memory, or a rank sent less than its part of a verification");
	free(cb.cap), free(cb.col), free(cb.sum), free(cb.mem), free(cb.cols);
	return rc;
}

/* Every rank's breaks to every rank, in rank order: the same lists everywhere. */
int sdc_ec_rk_share_breaks(struct sdc_ec_rk *k)
{
	const size_t rec = 4, most = 2 + 2 * SDC_EC_RK_MAX_BREAKS * rec;
	size_t *cap = calloc((size_t)k->P, sizeof(size_t));
	uint32_t *mine = calloc(most, 4);
	int rc = -1;
	if (!cap || !mine)
		goto out;
	mine[0] = (uint32_t)k->br.nsb, mine[1] = (uint32_t)k->br.ncb;
	for (int i = 0; i < k->br.nsb; i++)
		memcpy(mine + 2 + rec * (size_t)i, &k->br.sb[i], 16);
	for (int i = 0; i < k->br.ncb; i++)
		memcpy(mine + 2 + rec * (size_t)(k->br.nsb + i), &k->br.cb[i], 16);
	sdc_ec_rk_clear_out(k);
	for (int p = 0; p < k->P; p++) {
		cap[p] = k->x.live[p] ? most : 0;
		if (k->x.live[p] && sdc_ec_rk_put(k, p, mine, 2 + rec * (size_t)(k->br.nsb + k->br.ncb)))
			goto out;
	}
	if (sdc_ec_rk_exchange(k, SDC_EC_TAG_BREAKS, cap) < 0)
		goto out;
	k->br.nsb = k->br.ncb = 0;
	for (int p = 0; p < k->P; p++) {
		const uint32_t *n = k->x.live[p] ? sdc_ec_rk_take(k, p, 2) : NULL;
		if (!n)
			continue;
		if (n[0] > SDC_EC_RK_MAX_BREAKS || n[1] > SDC_EC_RK_MAX_BREAKS) {
			sdc_worker_error(k->w, "rank %d (%s) sent %u and %u breaks, more than %d: refused", p, sdc_mpi_host(p),
					 n[0], n[1], SDC_EC_RK_MAX_BREAKS);
			goto out;
		}
		const uint32_t ns = n[0], nc = n[1];
		for (uint32_t i = 0; i < ns + nc; i++) {
			const uint32_t *b = sdc_ec_rk_take(k, p, rec);
			struct sdc_ec_break x;
			if (!b || k->br.nsb >= SDC_EC_RK_SHARED_BREAKS || k->br.ncb >= SDC_EC_RK_SHARED_BREAKS)
				break; /* (more breaks than named: the first ones are enough to say where) */
			memcpy(&x, b, 16);
			if (x.row < 0 || x.row >= (i < ns ? k->l.rows : k->S) || x.word < 0 || x.word >= k->l.words ||
			    (i < ns && (x.chunk < 0 || x.chunk >= sdc_ec_chunks(&k->l)))) {
				sdc_worker_error(k->w, "rank %d (%s) sent a break outside the layout: refused", p, sdc_mpi_host(p));
				goto out;
			}
			if (i < ns)
				k->br.sb[k->br.nsb++] = x;
			else
				k->br.cb[k->br.ncb++] = x;
		}
	}
	rc = 0;
out:
	free(cap), free(mine);
	return rc;
}

/* What the breaks (every rank's, the same lists everywhere) say about each server that trains
 * here, named by this rank. */
void sdc_ec_rk_localise(struct sdc_ec_rk *k, uint64_t round)
{
	char where[32];
	snprintf(where, sizeof(where), "on rank %d", k->me);
	for (int s = 0; s < k->S; s++) {
		struct sdc_ec_rk_server *v = sdc_ec_rk_trains(k, s);
		struct sdc_ec_event ev[2 * SDC_EC_RK_MAX_BREAKS];
		const int n = v ? sdc_ec_explain(&k->l, k->br.sb, k->br.nsb, k->br.cb, k->br.ncb, s, v->shard, v->touched, ev,
						 2 * SDC_EC_RK_MAX_BREAKS)
				: 0;
		for (int i = 0; i < n; i++) {
			/* a server put in service this round has not moved since the cut: a word of it
			 * that breaks its groups now, still what the rebuild wrote, is the rebuild's
			 * (of the round of the loss) */
			if (s == k->rc.D && k->rc.installed == round && sdc_ec_as_rebuild(&k->l, &ev[i], k->rc.rebuilt, where))
				sdc_ec_rk_report_event(k, k->rc.round, &ev[i]);
			else
				sdc_ec_rk_report_event(k, round, &ev[i]);
		}
	}
}
