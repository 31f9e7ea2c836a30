/*
 * The arithmetic of the ecparity probe (ECRM's erasure-coded embedding shards), apart from its
 * threads and messages so it is tested alone.
 *
 * S servers each own `rows` entries; an entry is `words` 32-bit words (d fp32 weights and the
 * row-wise Adagrad accumulator). The parity of a group is the sum of its members' bit patterns
 * as unsigned integers modulo 2^32, word by word. That sum is exact and linear: an update that
 * turns a word from `old` into `new` moves the parity by new - old (mod 2^32) whatever the floats
 * mean, so difference propagation keeps parity == sum of members bit for bit under any optimizer
 * (Adagrad's state included), the check is an equality with no threshold (no false positive), and
 * a lost member is the parity minus the others, bit for bit. (Float sums would round; XOR would
 * do as well for the rebuild but not say by how much a word moved, which the localisation uses.)
 *
 * Two orthogonal groupings, as ABFT's row and column checksums:
 *   stripes (ECRM's, for the rebuild): entry r of k different servers, servers
 *     (r + c k + i) mod S for i < k, chunk c < S / k; the parity on server (r + (c + 1) k) mod S,
 *     so parities rotate over the servers as RAID-5's do and no member holds its own parity;
 *   columns: all entries of one server, word by word, parity on server (s + 1) mod S.
 * One corrupt word breaks one stripe and one column by the same amount: their intersection names
 * the server, entry and word, and the amount gives the expected value and the XOR mask.
 */
#ifndef SDC_ECPARITY_H
#define SDC_ECPARITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sdc_ec_layout {
	int servers; /* S >= 2 */
	int k;       /* data members of a stripe: 1 <= k < S, S a multiple of k */
	int rows;    /* entries a server owns */
	int words;   /* 32-bit words an entry holds */
};

/* The default k for S servers: the largest divisor of S below it, at most 4 (1 for S = 2). */
int sdc_ec_auto_k(int servers);
/* 0, or -1 with why the numbers do not make a layout. */
int sdc_ec_layout_check(const struct sdc_ec_layout *l, char *why, size_t len);
/* Stripes through each row index (S / k), and the chunk of server s's entry r. */
static inline int sdc_ec_chunks(const struct sdc_ec_layout *l)
{
	return l->servers / l->k;
}
static inline int sdc_ec_chunk_of(const struct sdc_ec_layout *l, int s, int r)
{
	return ((s - r) % l->servers + l->servers) % l->servers / l->k;
}
/* The i-th member server of stripe (r, c), and the server that holds its parity. */
static inline int sdc_ec_member(const struct sdc_ec_layout *l, int r, int c, int i)
{
	return (r + c * l->k + i) % l->servers;
}
static inline int sdc_ec_stripe_parity_server(const struct sdc_ec_layout *l, int r, int c)
{
	return (r + (c + 1) * l->k) % l->servers;
}
static inline int sdc_ec_column_parity_server(const struct sdc_ec_layout *l, int s)
{
	return (s + 1) % l->servers;
}

/* Word arithmetic: what a change moves a parity by, and a parity moved by it. */
static inline uint32_t sdc_ec_diff(uint32_t now, uint32_t before)
{
	return now - before;
}

/*
 * The state of all servers as arrays (one host's form; across ranks each holds its own part):
 * data[s][r][w] (S rows words), stripe[r][c][w] (the parity of stripe (r, c), wherever it is held)
 * and column[s][w]. Builds both parities from the data.
 */
struct sdc_ec_state {
	struct sdc_ec_layout l;
	uint32_t *data, *stripe, *column;
};
int sdc_ec_state_alloc(struct sdc_ec_state *st, const struct sdc_ec_layout *l);
void sdc_ec_state_free(struct sdc_ec_state *st);
/* The same state in memory the caller provides and frees (one host's workers, processes of their
 * own, share it in a mapping): sdc_ec_state_bytes of it, zeroed. */
size_t sdc_ec_state_bytes(const struct sdc_ec_layout *l);
void sdc_ec_state_place(struct sdc_ec_state *st, const struct sdc_ec_layout *l, void *mem);
void sdc_ec_encode(struct sdc_ec_state *st);
static inline uint32_t *sdc_ec_entry(const struct sdc_ec_state *st, int s, int r)
{
	return st->data + ((size_t)s * st->l.rows + r) * st->l.words;
}
static inline uint32_t *sdc_ec_stripe_word(const struct sdc_ec_state *st, int r, int c)
{
	return st->stripe + ((size_t)r * sdc_ec_chunks(&st->l) + c) * st->l.words;
}
static inline uint32_t *sdc_ec_column_word(const struct sdc_ec_state *st, int s)
{
	return st->column + (size_t)s * st->l.words;
}
/* The parities server p holds, recomputed from their members: the stripes whose parity it holds
 * and the column of server p - 1. (sdc_ec_encode is this for every server.) */
void sdc_ec_encode_held(struct sdc_ec_state *st, int p);
/* The same, leaving out every group that server skip is a member of (a server being rebuilt: its
 * entries are not there yet); skip -1: none left out. */
void sdc_ec_encode_held_without(struct sdc_ec_state *st, int p, int skip);
/* The chunk of the stripe through row r whose parity server p holds, or -1 (one at most). */
static inline int sdc_ec_held_chunk(const struct sdc_ec_layout *l, int p, int r)
{
	const int offset = ((p - r) % l->servers + l->servers) % l->servers; /* (c + 1) k mod S */
	return offset % l->k ? -1 : (offset / l->k - 1 + sdc_ec_chunks(l)) % sdc_ec_chunks(l);
}
/* Difference propagation of one entry's update: diff[w] = new - old, applied to both parities. */
void sdc_ec_apply_diff(struct sdc_ec_state *st, int s, int r, const uint32_t *diff);

/* What the verification finds: the first broken stripe and column word and by how much. */
struct sdc_ec_break {
	int row, chunk, word; /* stripe (row, chunk), word */
	uint32_t delta;       /* parity - sum of members */
};
/* Stripes whose parity is not the sum of their members (up to max reported); returns how many
 * stripe words are broken. */
int64_t sdc_ec_verify_stripes(const struct sdc_ec_state *st, struct sdc_ec_break *out, int max);
/* The same for the columns: out[].row is the server. */
int64_t sdc_ec_verify_columns(const struct sdc_ec_state *st, struct sdc_ec_break *out, int max);
/* The same, for only the groups whose parity server p holds (a server verifies its own), leaving
 * out those server skip is a member of (-1: none). */
int64_t sdc_ec_verify_held_stripes(const struct sdc_ec_state *st, int p, int skip, struct sdc_ec_break *out, int max);
int64_t sdc_ec_verify_held_column(const struct sdc_ec_state *st, int p, int skip, struct sdc_ec_break *out, int max);
/* Whether server s is a member of stripe (r, c). */
static inline bool sdc_ec_stripe_has(const struct sdc_ec_layout *l, int r, int c, int s)
{
	return sdc_ec_chunk_of(l, s, r) == c;
}

/*
 * One corrupt word named from one broken stripe word and one broken column word: the server in
 * both, its entry and word, the value it should hold (now minus the breaks' common amount). false
 * when the two do not meet in one word by the same amount (more than one fault, or a parity word
 * itself corrupt: then the stripe or the column alone is broken). shard: the entries of the
 * column's server (column->row), wherever they are held.
 */
struct sdc_ec_located {
	int server, row, word;
	uint32_t expected, actual;
};
bool sdc_ec_locate(const struct sdc_ec_layout *l, const uint32_t *shard, const struct sdc_ec_break *stripe,
		   const struct sdc_ec_break *column, struct sdc_ec_located *out);

/*
 * Row-wise Adagrad on one entry (d weights, then the accumulator), as the probe's servers train:
 * a fixed order of correctly rounded operations (the build contracts no FMA), so a replay
 * anywhere computes the same bits. d <= SDC_EC_MAX_DIM.
 */
#define SDC_EC_MAX_DIM 64
void sdc_ec_adagrad(uint32_t *entry, int d, const float *g);
/* The same update, and in the same pass what it moves the parities by: diff[w] = new - old for
 * each of the entry's d + 1 words (the same bits as sdc_ec_adagrad and sdc_ec_diff apart). */
void sdc_ec_adagrad_diff(uint32_t *entry, int d, const float *g, uint32_t *diff);

/* Server s lost: its entries rebuilt into out (rows words) from the stripes' parities and the
 * other members (no column parity needed). */
void sdc_ec_rebuild(const struct sdc_ec_state *st, int s, uint32_t *out);

#endif
