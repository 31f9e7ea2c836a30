/*
 * ecparity across ranks: the servers held on this rank (ranks.h): made, freed and listed, and a
 * server's rows kept at the cut while a rebuild is under way. Below the round's steps that use
 * them (the exchanges, the training, the agreement, the rebuild).
 */
#include <stdlib.h>
#include <string.h>

#include "probes/ecparity/ranks.h"

/* The list of the servers held here, after host[] or srv[] changed. */
void sdc_ec_rk_hosts_changed(struct sdc_ec_rk *k)
{
	k->at.nhere = 0;
	for (int s = 0; s < k->S; s++) {
		if (k->at.srv[s])
			k->at.here[k->at.nhere++] = s;
	}
}

struct sdc_ec_rk_server *sdc_ec_rk_server_new(const struct sdc_ec_rk *k)
{
	struct sdc_ec_rk_server *v = calloc(1, sizeof(*v));
	const size_t shard = (size_t)k->l.rows * (size_t)k->l.words;
	if (!v || !(v->shard = calloc(shard, 4)) || !(v->held = calloc(shard, 4)) ||
	    !(v->touched = calloc((size_t)k->l.rows, sizeof(*v->touched)))) {
		if (v)
			free(v->shard), free(v->held);
		free(v);
		return NULL;
	}
	return v;
}

void sdc_ec_rk_server_free(struct sdc_ec_rk_server *v)
{
	if (v)
		free(v->shard), free(v->held), free(v->touched), free(v->outbox), free(v->kept.at), free(v->kept.v);
	free(v);
}

/* *buf made to hold at least `words` words (at least doubling). 0, or -1 out of memory. */
int sdc_ec_rk_grow(uint32_t **buf, size_t *cap, size_t words)
{
	if (words <= *cap)
		return 0;
	const size_t want = words > 2 * *cap ? words : 2 * *cap;
	uint32_t *b = realloc(*buf, want * 4);
	if (!b)
		return -1;
	*buf = b, *cap = want;
	return 0;
}

int sdc_ec_rk_rb_row(const struct sdc_ec_rk *k, int j)
{
	return (int)((int64_t)j * (k->l.rows + 1) / k->rb.slices);
}

/* Before row r of server v (kind 0: its entry, 1: the stripe parity it holds) changes: its value kept if its slice has not gone. */
void sdc_ec_rk_keep(struct sdc_ec_rk *k, struct sdc_ec_rk_server *v, int kind, int r)
{
	struct sdc_ec_rk_rebuild *b = &k->rb;
	if (!b->on || !v->kept.at || r < sdc_ec_rk_rb_row(k, b->next) || v->kept.at[2 * (size_t)r + kind] >= 0)
		return;
	if (sdc_ec_rk_grow(&v->kept.v, &v->kept.cap, v->kept.n + (size_t)k->l.words)) {
		b->short_of_memory = true;
		return;
	}
	memcpy(v->kept.v + v->kept.n, (kind ? v->held : v->shard) + (size_t)r * k->l.words, 4 * (size_t)k->l.words);
	v->kept.at[2 * (size_t)r + kind] = (int32_t)(v->kept.n / (size_t)k->l.words);
	v->kept.n += (size_t)k->l.words;
}
