/* ecparity's exact parity arithmetic (parity.h). */
#include "probes/ecparity/parity.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sdc_ec_auto_k(int servers)
{
	for (int k = servers - 1 < 4 ? servers - 1 : 4; k > 1; k--)
		if (servers % k == 0)
			return k;
	return 1;
}

int sdc_ec_layout_check(const struct sdc_ec_layout *l, char *why, size_t len)
{
	if (l->servers < 2 || l->servers > 4096)
		snprintf(why, len, "servers: %d, expected 2 to 4096", l->servers);
	else if (l->k < 1 || l->k >= l->servers || l->servers % l->k)
		snprintf(why, len, "k = %d with %d servers: k must be at least 1, less than the servers and divide them "
			 "(every stripe has k members on k servers and its parity on another)", l->k, l->servers);
	else if (l->rows < 1 || l->words < 1 || (uint64_t)l->rows * (uint64_t)l->words > (1ull << 32))
		snprintf(why, len, "%d rows of %d words: out of range", l->rows, l->words);
	else
		return 0;
	return -1;
}

/* The bytes of the state's three arrays (data, stripe, column), each rounded up to a cache line
 * so that none shares one with the next. */
static void part_bytes(const struct sdc_ec_layout *l, size_t bytes[3])
{
	const size_t w = (size_t)l->words;
	const size_t words[3] = { (size_t)l->servers * (size_t)l->rows * w, (size_t)l->rows * (size_t)sdc_ec_chunks(l) * w,
				  (size_t)l->servers * w };
	for (int i = 0; i < 3; i++)
		bytes[i] = (words[i] * 4 + 63) & ~(size_t)63;
}

size_t sdc_ec_state_bytes(const struct sdc_ec_layout *l)
{
	size_t b[3];
	part_bytes(l, b);
	return b[0] + b[1] + b[2];
}

void sdc_ec_state_place(struct sdc_ec_state *st, const struct sdc_ec_layout *l, void *mem)
{
	size_t b[3];
	part_bytes(l, b);
	unsigned char *p = mem;
	st->l = *l;
	st->data = (uint32_t *)(void *)p;
	st->stripe = (uint32_t *)(void *)(p + b[0]);
	st->column = (uint32_t *)(void *)(p + b[0] + b[1]);
}

int sdc_ec_state_alloc(struct sdc_ec_state *st, const struct sdc_ec_layout *l)
{
	memset(st, 0, sizeof(*st));
	void *mem = calloc(1, sdc_ec_state_bytes(l));
	if (!mem)
		return -1;
	sdc_ec_state_place(st, l, mem);
	return 0;
}

/* (the block sdc_ec_state_alloc took starts at data) */
void sdc_ec_state_free(struct sdc_ec_state *st)
{
	free(st->data);
	st->data = st->stripe = st->column = NULL;
}

/* Into q (words), the sum of the k members of stripe (r, c). */
static void stripe_sum(const struct sdc_ec_state *st, int r, int c, uint32_t *q)
{
	memset(q, 0, 4 * (size_t)st->l.words);
	for (int i = 0; i < st->l.k; i++) {
		const uint32_t *e = sdc_ec_entry(st, sdc_ec_member(&st->l, r, c, i), r);
		for (int w = 0; w < st->l.words; w++)
			q[w] += e[w];
	}
}

/* Into q (words), the sum of server s's entries. */
static void column_sum(const struct sdc_ec_state *st, int s, uint32_t *q)
{
	memset(q, 0, 4 * (size_t)st->l.words);
	for (int r = 0; r < st->l.rows; r++) {
		const uint32_t *e = sdc_ec_entry(st, s, r);
		for (int w = 0; w < st->l.words; w++)
			q[w] += e[w];
	}
}

void sdc_ec_encode_held_without(struct sdc_ec_state *st, int p, int skip)
{
	for (int r = 0; r < st->l.rows; r++) {
		const int c = sdc_ec_held_chunk(&st->l, p, r);
		if (c >= 0 && (skip < 0 || !sdc_ec_stripe_has(&st->l, r, c, skip)))
			stripe_sum(st, r, c, sdc_ec_stripe_word(st, r, c));
	}
	const int s = (p - 1 + st->l.servers) % st->l.servers;
	if (s != skip)
		column_sum(st, s, sdc_ec_column_word(st, s));
}

void sdc_ec_encode_held(struct sdc_ec_state *st, int p)
{
	sdc_ec_encode_held_without(st, p, -1);
}

void sdc_ec_encode(struct sdc_ec_state *st)
{
	for (int p = 0; p < st->l.servers; p++)
		sdc_ec_encode_held(st, p);
}

void sdc_ec_apply_diff(struct sdc_ec_state *st, int s, int r, const uint32_t *diff)
{
	uint32_t *p = sdc_ec_stripe_word(st, r, sdc_ec_chunk_of(&st->l, s, r)), *q = sdc_ec_column_word(st, s);
	for (int w = 0; w < st->l.words; w++) {
		p[w] += diff[w];
		q[w] += diff[w];
	}
}

/* Compares a parity with the sum of its members, word by word: breaks into out (up to max). */
static int64_t compare(const uint32_t *parity, const uint32_t *sum, int words, struct sdc_ec_break at,
		       struct sdc_ec_break *out, int max)
{
	int64_t broken = 0;
	for (int w = 0; w < words; w++)
		if (parity[w] != sum[w] && broken++ < max) {
			at.word = w;
			at.delta = parity[w] - sum[w];
			out[broken - 1] = at;
		}
	return broken;
}

int64_t sdc_ec_verify_held_stripes(const struct sdc_ec_state *st, int p, int skip, struct sdc_ec_break *out, int max)
{
	uint32_t sum[SDC_EC_MAX_DIM + 1];
	int64_t broken = 0;
	for (int r = 0; r < st->l.rows; r++) {
		const int c = sdc_ec_held_chunk(&st->l, p, r);
		if (c < 0 || (skip >= 0 && sdc_ec_stripe_has(&st->l, r, c, skip)))
			continue;
		stripe_sum(st, r, c, sum);
		const int room = (int)(broken < max ? max - broken : 0);
		broken += compare(sdc_ec_stripe_word(st, r, c), sum, st->l.words, (struct sdc_ec_break){ r, c, 0, 0 },
				  out + (max - room), room);
	}
	return broken;
}

int64_t sdc_ec_verify_held_column(const struct sdc_ec_state *st, int p, int skip, struct sdc_ec_break *out, int max)
{
	uint32_t sum[SDC_EC_MAX_DIM + 1];
	const int s = (p - 1 + st->l.servers) % st->l.servers;
	if (s == skip)
		return 0;
	column_sum(st, s, sum);
	return compare(sdc_ec_column_word(st, s), sum, st->l.words, (struct sdc_ec_break){ s, -1, 0, 0 }, out, max);
}

int64_t sdc_ec_verify_stripes(const struct sdc_ec_state *st, struct sdc_ec_break *out, int max)
{
	/* in memory order (holder by holder would stride through the data S / k times) */
	uint32_t sum[SDC_EC_MAX_DIM + 1];
	int64_t broken = 0;
	for (int r = 0; r < st->l.rows; r++)
		for (int c = 0; c < sdc_ec_chunks(&st->l); c++) {
			stripe_sum(st, r, c, sum);
			const int room = (int)(broken < max ? max - broken : 0);
			broken += compare(sdc_ec_stripe_word(st, r, c), sum, st->l.words, (struct sdc_ec_break){ r, c, 0, 0 },
					  out + (max - room), room);
		}
	return broken;
}

int64_t sdc_ec_verify_columns(const struct sdc_ec_state *st, struct sdc_ec_break *out, int max)
{
	int64_t broken = 0;
	for (int p = 0; p < st->l.servers; p++) {
		const int room = (int)(broken < max ? max - broken : 0);
		broken += sdc_ec_verify_held_column(st, p, -1, out + (max - room), room);
	}
	return broken;
}

bool sdc_ec_locate(const struct sdc_ec_layout *l, const uint32_t *shard, const struct sdc_ec_break *stripe,
		   const struct sdc_ec_break *column, struct sdc_ec_located *out)
{
	const int s = column->row, r = stripe->row;
	if (stripe->word != column->word || stripe->delta != column->delta || sdc_ec_chunk_of(l, s, r) != stripe->chunk)
		return false;
	out->server = s;
	out->row = r;
	out->word = stripe->word;
	out->actual = shard[(size_t)r * l->words + stripe->word];
	/* parity - sum = -(change of the member): the member moved by -delta */
	out->expected = out->actual + stripe->delta;
	return true;
}

void sdc_ec_rebuild(const struct sdc_ec_state *st, int s, uint32_t *out)
{
	const struct sdc_ec_layout *l = &st->l;
	for (int r = 0; r < l->rows; r++) {
		const int c = sdc_ec_chunk_of(l, s, r);
		uint32_t *o = out + (size_t)r * l->words;
		memcpy(o, sdc_ec_stripe_word(st, r, c), (size_t)l->words * 4);
		for (int i = 0; i < l->k; i++) {
			const int m = sdc_ec_member(l, r, c, i);
			if (m == s)
				continue;
			const uint32_t *e = sdc_ec_entry(st, m, r);
			for (int w = 0; w < l->words; w++)
				o[w] -= e[w];
		}
	}
}

void sdc_ec_adagrad(uint32_t *entry, int d, const float *g)
{
	/* a word at a time, in place (a copy of the entry would cost as much as the update) */
	float acc, g2 = 0;
	memcpy(&acc, entry + d, 4);
	for (int j = 0; j < d; j++)
		g2 += g[j] * g[j];
	acc += g2 / (float)d;
	const float step = 0.01f / (sqrtf(acc) + 1e-6f);
	for (int j = 0; j < d; j++) {
		float w;
		memcpy(&w, entry + j, 4);
		w -= step * g[j];
		memcpy(entry + j, &w, 4);
	}
	memcpy(entry + d, &acc, 4);
}

void sdc_ec_adagrad_diff(uint32_t *entry, int d, const float *g, uint32_t *diff)
{
	/* sdc_ec_adagrad's operations in its order, a word at a time (no copy of the entry) */
	const uint32_t acc_old = entry[d];
	float acc, g2 = 0;
	memcpy(&acc, &acc_old, 4);
	for (int j = 0; j < d; j++)
		g2 += g[j] * g[j];
	acc += g2 / (float)d;
	const float step = 0.01f / (sqrtf(acc) + 1e-6f);
	for (int j = 0; j < d; j++) {
		const uint32_t before = entry[j];
		float w;
		memcpy(&w, &before, 4);
		w -= step * g[j];
		uint32_t after;
		memcpy(&after, &w, 4);
		entry[j] = after;
		diff[j] = sdc_ec_diff(after, before);
	}
	uint32_t acc_new;
	memcpy(&acc_new, &acc, 4);
	entry[d] = acc_new;
	diff[d] = sdc_ec_diff(acc_new, acc_old);
}
