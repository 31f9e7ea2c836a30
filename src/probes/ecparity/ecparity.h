/* The ecparity probe's tools (its folder's own header). */
#ifndef SDC_PROBES_ECPARITY_H
#define SDC_PROBES_ECPARITY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "kernels/crc32c.h"
#include "probes/ecparity/parity.h"

/* A difference on its way to a parity: to the stripe's (kind 0) or the column's (kind 1) holder.
 * The header and the difference carry a CRC32C each: the difference's, the same for both
 * messages of an update, is computed once. */
struct sdc_ec_msg {
	uint32_t seq, from, row, kind;
	uint32_t hcrc, pcrc; /* of the four words above; of the difference (as many words as an entry has) */
	uint32_t diff[SDC_EC_MAX_DIM + 1];
};

/* The two messages of one update of server `from`'s entry `row` from old to now (words each),
 * numbered seq and seq + 1: what the probe's servers send and the benchmark times. */
static inline void sdc_ec_msg_pair(struct sdc_ec_msg m[2], uint32_t seq, int from, int row, const uint32_t *now,
				   const uint32_t *old, int words)
{
	for (int kind = 0; kind < 2; kind++) {
		m[kind].seq = seq + (uint32_t)kind;
		m[kind].from = (uint32_t)from;
		m[kind].row = (uint32_t)row;
		m[kind].kind = (uint32_t)kind;
		m[kind].hcrc = sdc_crc32c(0, &m[kind], 16);
	}
	for (int x = 0; x < words; x++)
		m[0].diff[x] = sdc_ec_diff(now[x], old[x]);
	m[0].pcrc = sdc_crc32c(0, m[0].diff, 4 * (size_t)words);
	memcpy(m[1].diff, m[0].diff, 4 * (size_t)words);
	m[1].pcrc = m[0].pcrc;
}

/* What the holder checks before applying a message. */
static inline bool sdc_ec_msg_intact(const struct sdc_ec_msg *m, int words)
{
	return sdc_crc32c(0, m, 16) == m->hcrc && sdc_crc32c(0, m->diff, 4 * (size_t)words) == m->pcrc;
}

/*
 * The single-host form's messages: one a step, from the server that trained to every holder. The
 * sender appends each update's record (the entry's row, then the d + 1 words the update moved it
 * by: sdc_ec_adagrad_diff, in the same pass as the update) and closes the step's message with a
 * header: sender, round, step, records, and a CRC32C of the header's four words and every record.
 * A holder takes the whole message, checks its CRC, and applies the records whose parities it
 * holds (the stripe's, and all of them when it holds the sender's column). A message of many
 * differences costs the training core one sequential write and one CRC pass per update, where a
 * message per update cost two headers, two CRCs and a lock. (The ranks' form, ranks_train.c, sends
 * sdc_ec_msg pairs over MPI.)
 */
struct sdc_ec_bundle {
	uint32_t from, round, step, n, crc;
	/* then n records of 1 + words words */
};
#define SDC_EC_BUNDLE_HDR_WORDS 5

/* Words a message of n records takes. */
static inline size_t sdc_ec_bundle_words(int n, int words)
{
	return SDC_EC_BUNDLE_HDR_WORDS + (size_t)n * (size_t)(words + 1);
}
static inline uint32_t *sdc_ec_bundle_record(struct sdc_ec_bundle *b, int i, int words)
{
	return (uint32_t *)b + SDC_EC_BUNDLE_HDR_WORDS + (size_t)i * (size_t)(words + 1);
}
/* One update of server b->from's entry `row` (d weights and the accumulator) with gradient g,
 * recorded as the message's next record. */
static inline void sdc_ec_bundle_update(struct sdc_ec_bundle *b, uint32_t *entry, int row, int d, const float *g)
{
	uint32_t *r = sdc_ec_bundle_record(b, (int)b->n++, d + 1);
	r[0] = (uint32_t)row;
	sdc_ec_adagrad_diff(entry, d, g, r + 1);
}
/* The CRC32C a message's header and records must carry, over n records (what arrived: a header
 * whose n changed on the way does not decide how much is read). */
uint32_t sdc_ec_bundle_crc(const struct sdc_ec_bundle *b, uint32_t n, int words);
/* Applies a message's records to the parities holder holds in st (-1: every parity, the
 * benchmark's one core acting for every holder). */
void sdc_ec_bundle_apply(struct sdc_ec_state *st, const struct sdc_ec_bundle *b, int holder);

/* The probe's options (both forms). */
struct sdc_ec_opts {
	int64_t rows, dim, batch, steps, k, servers;
	double floor, timeout;
};

/* The deterministic workload, the same on one host and across ranks, so any server's training
 * can be replayed anywhere from the seed. */
struct sdc_ec_work {
	uint64_t seed;
	int rows, d;
	int64_t steps, batch;
};
/* Update u of step `step` of round `round` on server s: its entry (returned) and gradient g. */
int sdc_ec_draw_update(const struct sdc_ec_work *wk, int s, uint64_t round, int64_t step, int64_t u, float *g);
/* Server s's entries as built (rows x (d + 1) words): weights U(-0.05, 0.05), accumulators 0.1. */
void sdc_ec_initial(const struct sdc_ec_work *wk, int s, uint32_t *out);
/* Server s's shard after rounds 0 .. rounds-1 of training, replayed from the seed into out;
 * tick(arg), when not NULL, is called after each step and ends the replay early by returning
 * false (the shard then incomplete). Returns whether it ran to the end. */
bool sdc_ec_replay(const struct sdc_ec_work *wk, int s, uint64_t rounds, uint32_t *out, bool (*tick)(void *),
		   void *arg);

struct sdc_worker;
struct sdc_fault;
/* Flips the fault's bit of *word and records the fault (the element and the bits before and after). */
void sdc_ec_flip(struct sdc_worker *w, const struct sdc_fault *f, const char *target, uint64_t round, int64_t row,
		 int64_t col, uint32_t *word, bool is_float);
/* The faults due on MPI rank `rank` (this one's, or a lost one's that its rebuilder acts for).
 * Across ranks a fault happens once in the job: a spec without rank= lands on one rank, drawn
 * from the seed (the same draw on every rank). */
int sdc_ec_faults(struct sdc_worker *w, int rank, const char *target, uint64_t round, struct sdc_fault *out, int max);
/* The faults at rest (E, O) due at the end of round `round` on a server's shard: an entry it did
 * not update this round unless the spec names one. touched: the shard's rows updated this round
 * (atomics: on one host a rebuild's helper reads them while the server trains). */
void sdc_ec_rest_faults(struct sdc_worker *w, const struct sdc_ec_layout *l, uint32_t *shard,
			const _Atomic uint8_t *touched, uint64_t round);

/* Something a server's rank or thread reports after a round's verification. */
struct sdc_ec_event {
	int owner; /* the server whose device the finding is on */
	char kind[32], target[4];
	int row, col;
	uint32_t expected, actual;
	char detail[200];
};

/*
 * What a round's breaks (every holder's, in the same order wherever this runs) say about server
 * s: a stripe break and a column break that meet in one of its words by the same amount are that
 * word (an event, and the word repaired in shard to the value its updates left); a break of a
 * parity s holds that meets none is that parity's. touched: s's entries updated this round (a
 * word that broke there is the update's). Returns the events written (at most max).
 */
int sdc_ec_explain(const struct sdc_ec_layout *l, const struct sdc_ec_break *sb, int nsb, const struct sdc_ec_break *cb,
		   int ncb, int s, uint32_t *shard, const _Atomic uint8_t *touched, struct sdc_ec_event *out, int max);

/* An event of a server put in service this round, at its first verification: when it is in a
 * word of its entries that still holds what its rebuilt copy held there (copy), it is the
 * rebuild's, and named so (target L, the word's column); returns whether it was. */
bool sdc_ec_as_rebuild(const struct sdc_ec_layout *l, struct sdc_ec_event *e, const uint32_t *copy, const char *where);

/* A server's shard (rows x words) against a replay of it: false when they are the same bits,
 * else true with e the rebuild-mismatch at the first word that differs (the caller says why). */
bool sdc_ec_differs_from_replay(const struct sdc_ec_layout *l, int server, const uint32_t *replayed, const uint32_t *shard,
				struct sdc_ec_event *e);

struct sdc_finding;
/* The finding of an event of round `round`. */
void sdc_ec_finding(struct sdc_finding *f, const char *operation, uint64_t round, const struct sdc_ec_event *e);

/* The probe across MPI ranks (ranks.c): one server a rank, messages over MPI. */
struct sdc_probe_ctx;
int sdc_ec_ranks_setup(struct sdc_probe_ctx *ctx);
void sdc_ec_ranks_run(struct sdc_worker *w);

struct sdc_command;
extern const struct sdc_command sdc_ecparity_bench;

#endif
