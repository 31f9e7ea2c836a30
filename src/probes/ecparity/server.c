/* ecparity: what a server does the same on one host and across ranks: its workload, its replay,
 * the faults it takes, and what a round's broken parities say about it. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/rng.h"

#include "mpi/transport.h"
#include "run/inject.h"
#include "probe/probe.h"
#include "probes/ecparity/ecparity.h"
#include "base/message.h"

/* A stripe break and a column break that can be one word's: the same word and amount, and the
 * column's server a member of the stripe at that row. */
static bool pairs(const struct sdc_ec_layout *l, const struct sdc_ec_break *bs, const struct sdc_ec_break *bc)
{
	return bs->word == bc->word && bs->delta == bc->delta && sdc_ec_chunk_of(l, bc->row, bs->row) == bs->chunk;
}

#define MAX_PAIRED 256

int sdc_ec_explain(const struct sdc_ec_layout *l, const struct sdc_ec_break *sb, int nsb, const struct sdc_ec_break *cb,
		   int ncb, int s, uint32_t *shard, const _Atomic uint8_t *touched, struct sdc_ec_event *out, int max)
{
	bool stripe_used[MAX_PAIRED] = { false }, column_used[MAX_PAIRED] = { false };
	const int d = l->words - 1;
	int n = 0;
	nsb = nsb < MAX_PAIRED ? nsb : MAX_PAIRED;
	ncb = ncb < MAX_PAIRED ? ncb : MAX_PAIRED;
	/* the pairing is the same greedy one for every server, from the breaks alone */
	for (int a = 0; a < nsb; a++)
		for (int b = 0; b < ncb; b++) {
			if (column_used[b] || !pairs(l, &sb[a], &cb[b]))
				continue;
			stripe_used[a] = column_used[b] = true;
			struct sdc_ec_located at;
			if (cb[b].row != s || !sdc_ec_locate(l, shard, &sb[a], &cb[b], &at) || n >= max)
				break; /* another server's word: it names it */
			const bool opt = at.word == d, updated = atomic_load_explicit(&touched[at.row], memory_order_relaxed);
			struct sdc_ec_event *e = &out[n++];
			*e = (struct sdc_ec_event){ .owner = s, .row = at.row, .col = opt && !updated ? 0 : at.word,
						    .expected = at.expected, .actual = at.actual };
			sdc_strlcpy(e->kind, updated ? "update-corrupt" : "memory-corrupt", sizeof(e->kind));
			sdc_strlcpy(e->target, updated ? "U" : opt ? "O" : "E", sizeof(e->target));
			snprintf(e->detail, sizeof(e->detail),
				 "%s of entry %d on server %d differs from what its updates sent to stripe (%d, %d) and column "
				 "%d%s",
				 opt ? "the Adagrad accumulator" : "a weight", at.row, s, at.row, sb[a].chunk, s,
				 updated ? ": updated this round, so its arithmetic or its memory since" : ": at rest");
			shard[(size_t)at.row * l->words + at.word] = at.expected;
			break;
		}
	for (int a = 0; a < nsb && n < max; a++) {
		if (stripe_used[a] || sdc_ec_stripe_parity_server(l, sb[a].row, sb[a].chunk) != s)
			continue;
		struct sdc_ec_event *e = &out[n++];
		*e = (struct sdc_ec_event){ .owner = s, .row = sb[a].row, .col = sb[a].word };
		sdc_strlcpy(e->kind, "parity-corrupt", sizeof(e->kind));
		sdc_strlcpy(e->target, "P", sizeof(e->target));
		snprintf(e->detail, sizeof(e->detail),
			 "the parity of stripe (%d, %d) on server %d is not the sum of its members while every member "
			 "agrees with its column: the parity itself",
			 sb[a].row, sb[a].chunk, s);
	}
	for (int b = 0; b < ncb && n < max; b++) {
		if (column_used[b] || sdc_ec_column_parity_server(l, cb[b].row) != s)
			continue;
		struct sdc_ec_event *e = &out[n++];
		*e = (struct sdc_ec_event){ .owner = s, .row = -1, .col = cb[b].word };
		sdc_strlcpy(e->kind, "parity-corrupt", sizeof(e->kind));
		sdc_strlcpy(e->target, "P", sizeof(e->target));
		snprintf(e->detail, sizeof(e->detail),
			 "the column parity of server %d held on server %d is not the sum of its entries while every "
			 "stripe agrees: the parity itself",
			 cb[b].row, s);
	}
	return n;
}

bool sdc_ec_as_rebuild(const struct sdc_ec_layout *l, struct sdc_ec_event *e, const uint32_t *copy, const char *where)
{
	const bool entry = !strcmp(e->target, "E") || !strcmp(e->target, "O") || !strcmp(e->target, "U");
	/* (an accumulator found at rest is named at column 0: its word is the last) */
	const int word = !strcmp(e->target, "O") ? l->words - 1 : e->col;
	if (!entry || e->row < 0 || word < 0 || !copy || copy[(size_t)e->row * (size_t)l->words + (size_t)word] != e->actual)
		return false;
	char was[sizeof(e->detail)];
	sdc_strlcpy(was, e->detail, sizeof(was));
	sdc_strlcpy(e->kind, "rebuild-mismatch", sizeof(e->kind));
	sdc_strlcpy(e->target, "L", sizeof(e->target));
	e->col = word;
	snprintf(e->detail, sizeof(e->detail), "in server %d's copy rebuilt %s, at its first verification: %.120s", e->owner,
		 where, was);
	return true;
}

bool sdc_ec_differs_from_replay(const struct sdc_ec_layout *l, int server, const uint32_t *replayed, const uint32_t *shard,
				struct sdc_ec_event *e)
{
	const size_t n = (size_t)l->rows * (size_t)l->words;
	size_t i = 0;
	while (i < n && replayed[i] == shard[i])
		i++;
	if (i == n)
		return false;
	*e = (struct sdc_ec_event){ .owner = server, .row = (int)(i / (size_t)l->words), .col = (int)(i % (size_t)l->words),
				    .expected = replayed[i], .actual = shard[i] };
	sdc_strlcpy(e->kind, "rebuild-mismatch", sizeof(e->kind));
	sdc_strlcpy(e->target, "L", sizeof(e->target));
	return true;
}

void sdc_ec_finding(struct sdc_finding *f, const char *operation, uint64_t round, const struct sdc_ec_event *e)
{
	sdc_finding_corruption(f, e->kind, operation, e->target, round, e->row, e->col);
	if (e->col >= 0)
		sdc_finding_set_bits(f, e->expected, e->actual, 32);
	sdc_strlcpy(f->detail, e->detail, sizeof(f->detail));
}

int sdc_ec_draw_update(const struct sdc_ec_work *wk, int s, uint64_t round, int64_t step, int64_t u, float *g)
{
	const struct sdc_rng r = sdc_rng_make(wk->seed, SDC_RNG_PROBE_ECPARITY, 0, (unsigned)s, 1);
	const uint64_t idx = ((round * (uint64_t)wk->steps + (uint64_t)step) * (uint64_t)wk->batch + (uint64_t)u) * 2;
	const int row = (int)sdc_rng_below(&r, idx * (uint64_t)(wk->d + 1), (uint64_t)wk->rows);
	for (int j = 0; j < wk->d; j++)
		g[j] = (float)(sdc_rng_uniform(&r, idx * (uint64_t)(wk->d + 1) + 1 + (uint64_t)j) * 2 - 1);
	return row;
}

void sdc_ec_initial(const struct sdc_ec_work *wk, int s, uint32_t *out)
{
	const struct sdc_rng r = sdc_rng_make(wk->seed, SDC_RNG_PROBE_ECPARITY, 0, 0, 0);
	const int words = wk->d + 1;
	for (int row = 0; row < wk->rows; row++) {
		const size_t i = (size_t)s * (size_t)wk->rows + (size_t)row; /* the entry's number among all servers' */
		uint32_t *e = out + (size_t)row * (size_t)words;
		for (int j = 0; j < wk->d; j++) {
			const float v = (float)((sdc_rng_uniform(&r, i * (uint64_t)wk->d + (uint64_t)j) - 0.5) * 0.1);
			memcpy(&e[j], &v, 4);
		}
		const float acc = 0.1f;
		memcpy(&e[wk->d], &acc, 4);
	}
}

bool sdc_ec_replay(const struct sdc_ec_work *wk, int s, uint64_t rounds, uint32_t *out, bool (*tick)(void *),
		   void *arg)
{
	float g[SDC_EC_MAX_DIM];
	sdc_ec_initial(wk, s, out);
	for (uint64_t round = 0; round < rounds; round++)
		for (int64_t step = 0; step < wk->steps; step++) {
			for (int64_t u = 0; u < wk->batch; u++) {
				const int row = sdc_ec_draw_update(wk, s, round, step, u, g);
				sdc_ec_adagrad(out + (size_t)row * (size_t)(wk->d + 1), wk->d, g);
			}
			if (tick && !tick(arg))
				return false;
		}
	return true;
}

void sdc_ec_flip(struct sdc_worker *w, const struct sdc_fault *f, const char *target, uint64_t round, int64_t row,
		 int64_t col, uint32_t *word, bool is_float)
{
	const int bit = sdc_fault_bit(f, *word, 32, is_float);
	char hb[24], ha[24];
	sdc_hex_bits(hb, sizeof(hb), *word, 32);
	*word ^= 1u << bit;
	sdc_hex_bits(ha, sizeof(ha), *word, 32);
	sdc_worker_fault_applied(w, f, target, round, row, col, bit, hb, ha);
}

int sdc_ec_faults(struct sdc_worker *w, int rank, const char *target, uint64_t round, struct sdc_fault *out, int max)
{
	const int n = sdc_worker_faults_of_rank(w, rank, target, round, out, max);
	if (!w->ctx->variant->per_rank || sdc_mpi.size < 2)
		return n;
	int m = 0;
	for (int i = 0; i < n; i++) {
		const struct sdc_inject_spec *s = &w->ctx->run->inject[out[i].spec];
		const struct sdc_rng r = sdc_rng_make(w->ctx->seed, SDC_RNG_PROBE_INJECT, (unsigned)out[i].spec, 0, 3);
		if (s->rank >= 0 || (int)sdc_rng_below(&r, round, (uint64_t)sdc_mpi.size) == rank)
			out[m++] = out[i];
	}
	return m;
}

void sdc_ec_rest_faults(struct sdc_worker *w, const struct sdc_ec_layout *l, uint32_t *shard,
			const _Atomic uint8_t *touched, uint64_t round)
{
	static const char *const targets[] = { "E", "O" };
	const int d = l->words - 1;
	for (int t = 0; t < 2; t++) {
		struct sdc_fault f[4];
		const int n = sdc_ec_faults(w, sdc_mpi.rank, targets[t], round, f, 4);
		for (int i = 0; i < n; i++) {
			int64_t row = f[i].row;
			for (unsigned draw = 0; row < 0 && draw < 64; draw++) {
				const int64_t r = sdc_fault_draw(&f[i], draw, l->rows);
				if (!atomic_load_explicit(&touched[r], memory_order_relaxed) || draw == 63)
					row = r;
			}
			const int64_t col = t ? 0 : f[i].col >= 0 ? f[i].col : sdc_fault_draw(&f[i], 64, d);
			if (row >= l->rows || col >= d) {
				sdc_worker_error(w, "--inject %s: entry %" PRId64 " weight %" PRId64 " outside the shard (%d entries "
						    "of %d weights)",
						 w->ctx->run->inject[f[i].spec].text, row, col, l->rows, d);
				continue;
			}
			sdc_ec_flip(w, &f[i], targets[t], round, row, col, shard + (size_t)row * l->words + (t ? d : col), true);
		}
	}
}
