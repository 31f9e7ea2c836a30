/*
 * ecparity across MPI ranks (ranks.c opens with how it works): this rank's state, grouped by job,
 * and the parts that act on it, one file a job:
 *   ranks_servers.c   the servers held here: made, freed, listed, their rows kept at the cut
 *   ranks_exchange.c  the all-to-all exchanges, and the difference messages read from them
 *   ranks_train.c     a round's training, each step's messages exchanged and applied
 *   ranks_agree.c     the agreement on who is lost, and what a loss undoes
 *   ranks_verify.c    parities encoded and verified at their holders; the breaks shared, named
 *   ranks_rebuild.c   a lost server rebuilt while the ranks train on, with its write buffer
 *   ranks_check.c     the replays: of a rebuilt server, and of every server at the run's end
 *   ranks.c           setup, and the round as a sequence of steps
 */
#ifndef SDC_PROBES_ECPARITY_RANKS_H
#define SDC_PROBES_ECPARITY_RANKS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "mpi/transport.h"
#include "probes/ecparity/parity.h"
#include "probe/probe.h"
#include "probes/ecparity/ecparity.h"

#define SDC_EC_RK_MAX_BREAKS 64
#define SDC_EC_RK_MAX_PENDING 64                            /* corrupt messages a rank asks again for in one round */
#define SDC_EC_RK_SHARED_BREAKS (8 * SDC_EC_RK_MAX_BREAKS) /* every rank's, as shared */
#define SDC_EC_RK_HDR 6 /* words of a message before its difference (struct sdc_ec_msg) */

/* Each exchange's tag: its phase. */
enum sdc_ec_rk_tag {
	SDC_EC_TAG_TRAIN = 0x4c10,
	SDC_EC_TAG_REQUEST,
	SDC_EC_TAG_RESEND,
	SDC_EC_TAG_AGREE,
	SDC_EC_TAG_REBUILD,
	SDC_EC_TAG_ENCODE,
	SDC_EC_TAG_VERIFY,
	SDC_EC_TAG_BREAKS,
};

/* While another's rebuild is under way, a server's rows (entry, held parity) as they were at the
 * cut, kept when they first change before their slice has gone (ECRM's write buffer). */
struct sdc_ec_rk_kept {
	int32_t *at; /* per row and kind (2 r + 0 entry, 2 r + 1 held): entry of v[] / words, or -1 */
	uint32_t *v;
	size_t n, cap;
};

struct sdc_ec_rk_server { /* one this rank hosts */
	uint32_t *shard, *held; /* rows x words each: its entries; the stripe parities it holds, by row */
	uint32_t col[SDC_EC_MAX_DIM + 1]; /* the column parity of server id - 1 */
	_Atomic uint8_t *touched; /* rows updated this round (atomics only for server.c, which both forms share) */
	struct sdc_ec_msg *outbox; /* this round's messages as sent (for a resend), by seq */
	size_t nout, outcap;
	bool pending; /* being rebuilt here (struct sdc_ec_rk_rebuild): not trained, not verified, not sent */
	struct sdc_ec_rk_kept kept;
};

/* Who holds which server, and how far each has trained (ranks.c); every rank keeps every
 * server's. */
struct sdc_ec_rk_place {
	int *host;                     /* per server: the rank that holds it, or -1 */
	struct sdc_ec_rk_server **srv; /* per server: non-NULL when held here */
	int *here, nhere;              /* the servers held here, ascending (every loop walks these, not all S) */
	uint64_t *done, *start;        /* per server: rounds trained; and at this round's start */
};

/* This rank's part in the all-to-all exchanges among the live ranks (ranks_exchange.c). */
struct sdc_ec_rk_exchange {
	bool *live;            /* per rank: still in the job */
	double timeout;        /* how long a rank may keep the others waiting before it is lost */
	uint32_t **out, **in;  /* per rank: this exchange's buffers (words) */
	size_t *nout, *outcap, *incap;
	size_t *got;           /* per rank: words that arrived in this exchange */
	size_t *cursor;        /* per rank: words of in[] read so far */
	struct sdc_mpi_part *sp, *rp;
	bool cut_off;          /* the others took this rank as lost */
};

struct sdc_ec_rk_pending { /* a message that failed its CRC32C, waiting for the sender's copy */
	struct sdc_ec_msg m;
	int rank;
};

/* This round's messages as applied (ranks_exchange.c): logged to be taken back if their sender
 * turns out lost this round (ranks_agree.c), and those asked for again. */
struct sdc_ec_rk_messages {
	uint32_t *log; /* from, kind, row, then the difference */
	size_t nlog, logcap;
	struct sdc_ec_rk_pending pend[SDC_EC_RK_MAX_PENDING];
	int npend;
};

/* A verification's breaks (ranks_verify.c): this rank's, then every rank's as shared. */
struct sdc_ec_rk_breaks {
	struct sdc_ec_break sb[SDC_EC_RK_SHARED_BREAKS], cb[SDC_EC_RK_SHARED_BREAKS];
	int nsb, ncb;
};

/* A server's part in one row's sum, and with which sign (ranks_verify.c, ranks_rebuild.c). */
struct sdc_ec_rk_part {
	int x, sign;
};
int sdc_ec_rk_by_server(const void *a, const void *b);

/*
 * A lost server's rebuild while the ranks train on (ECRM §3.4.2: training continues during
 * recovery, the lost shard decoded in partitions, a write buffer keeping what recovery reads).
 * The cut is the state at the start of the round after the loss (its messages of the loss's
 * round taken back). The parts of the rebuild: for each of the server's entries, the stripe's
 * parity (+) and its other members (-); for each stripe parity it held, the members (+); for the
 * column parity it held, that column's sum (+). One slice of rows of these goes with each
 * training step's exchange of that round to the new host, which adds them up; a row that
 * training changes before its slice has gone has its value at the cut kept (struct
 * sdc_ec_rk_kept), so nothing is copied at the cut. The difference messages of the round for the
 * parities the lost server held go to the new host too and are added to the same sums (addition
 * modulo 2^32: the order does not matter). At that round's end the server goes into service as
 * it was at the cut (its groups hold: it has not moved since), is checked against a replay
 * (struct sdc_ec_rk_replay), and in the next round trains the rounds it missed beside that one
 * (laps). Until it is in service its groups wait: the stripes it is in or holds and its columns
 * are not verified. (ranks_rebuild.c)
 */
struct sdc_ec_rk_rebuild {
	bool on;              /* under way */
	int D, was;           /* the server, the rank it was lost with */
	uint64_t round;       /* the round it was lost in */
	uint64_t rounds;      /* the rounds in the state being rebuilt */
	int slices, next;     /* of rows; the next slice to go */
	int lost_with;        /* a rank lost with its part still to send (-1: none) */
	bool short_of_memory; /* a value to keep could not be */
	uint32_t column[SDC_EC_MAX_DIM + 1]; /* the column's part as far as it is summed */
	struct sdc_ec_rk_rb_part *q;         /* a row's parts (2k + 1) */
	struct sdc_ec_rk_part *who;          /* a row's contributors (k + 1) */
	double t0, sum_s, cut_s, bytes;
};

/*
 * A rebuilt server's check against a replay of its training, on a helper thread while the ranks
 * train on (the replay grows with the rounds done; the rebuild itself is one exchange and a sum).
 * The rebuilt shard goes into service at once; the replay is compared with the copy taken then.
 * (ranks_check.c)
 */
struct sdc_ec_rk_replay {
	int D;                /* the server last rebuilt on this rank (-1: none) */
	bool passed;          /* and its check found the replay's bits */
	bool running;
	pthread_t thread;
	int was;              /* the rank it was lost with */
	uint64_t round;       /* the round it was lost in */
	uint64_t rounds;      /* the rounds in its rebuilt state: the replay covers 0 .. rounds - 1 */
	uint64_t installed;   /* the round at whose end it went into service; it catches up in the next */
	const struct sdc_ec_work *wk;
	uint32_t *rebuilt, *replayed;
	double rebuild_s, sum_s, replay_s, bytes, pause_s, catch_s;
	atomic_bool done, stop; /* the helper finished; the run ends, stop now */
	bool threaded;        /* on its own thread (else it ran on the caller's) */
	bool finished;        /* the replay ran to the end */
};

struct sdc_ec_rk {
	struct sdc_worker *w;
	int S, P, me; /* servers, ranks (as many: server s starts on rank s), this rank */
	struct sdc_ec_layout l;
	struct sdc_ec_work wk;
	char operation[96];
	double train_s; /* seconds of updates so far: about what the end's replay takes */
	struct sdc_ec_rk_place at;
	struct sdc_ec_rk_exchange x;
	struct sdc_ec_rk_messages msg;
	struct sdc_ec_rk_breaks br;
	struct sdc_ec_rk_rebuild rb;
	struct sdc_ec_rk_replay rc;
	bool rebuild_reported; /* a rebuild's check is in the report (run.environment.ecparity.rebuild) */
};

/* Words of a message as exchanged. */
static inline size_t sdc_ec_rk_record(const struct sdc_ec_rk *k)
{
	return (size_t)(SDC_EC_RK_HDR + k->l.words);
}

/* ranks_servers.c */
void sdc_ec_rk_hosts_changed(struct sdc_ec_rk *k);
struct sdc_ec_rk_server *sdc_ec_rk_server_new(const struct sdc_ec_rk *k);
void sdc_ec_rk_server_free(struct sdc_ec_rk_server *v);
int sdc_ec_rk_grow(uint32_t **buf, size_t *cap, size_t words);
void sdc_ec_rk_keep(struct sdc_ec_rk *k, struct sdc_ec_rk_server *v, int kind, int r);
/* Slice j's first row: slice j holds rows [row(j), row(j + 1)) of 0 .. rows (the last one the column). */
int sdc_ec_rk_rb_row(const struct sdc_ec_rk *k, int j);
/* Server s when it is held here and not being rebuilt. */
static inline struct sdc_ec_rk_server *sdc_ec_rk_trains(const struct sdc_ec_rk *k, int s)
{
	struct sdc_ec_rk_server *v = k->at.srv[s];
	return v && !v->pending ? v : NULL;
}

/* ranks_exchange.c */
int sdc_ec_rk_put(struct sdc_ec_rk *k, int p, const uint32_t *v, size_t words);
void sdc_ec_rk_clear_out(struct sdc_ec_rk *k);
const uint32_t *sdc_ec_rk_take(struct sdc_ec_rk *k, int p, size_t words);
int sdc_ec_rk_exchange(struct sdc_ec_rk *k, int tag, const size_t *cap);
int sdc_ec_rk_holder_of(const struct sdc_ec_rk *k, const struct sdc_ec_msg *m);
void sdc_ec_rk_report_event(struct sdc_ec_rk *k, uint64_t round, const struct sdc_ec_event *e);
int sdc_ec_rk_read_messages(struct sdc_ec_rk *k, int p, uint64_t round, bool resend);
int sdc_ec_rk_resend_round(struct sdc_ec_rk *k, uint64_t round);

/* ranks_train.c */
int sdc_ec_rk_train_round(struct sdc_ec_rk *k, uint64_t round);

/* ranks_agree.c */
int sdc_ec_rk_agree(struct sdc_ec_rk *k, bool mine, bool *go_on, const bool *before);
int sdc_ec_rk_recover(struct sdc_ec_rk *k, uint64_t round);
bool sdc_ec_rk_taken_away(struct sdc_ec_rk *k, uint64_t round);

/* ranks_verify.c */
int sdc_ec_rk_contribute(struct sdc_ec_rk *k, bool verify);
int sdc_ec_rk_share_breaks(struct sdc_ec_rk *k);
void sdc_ec_rk_localise(struct sdc_ec_rk *k, uint64_t round);

/* ranks_rebuild.c */
int sdc_ec_rk_rb_start(struct sdc_ec_rk *k, int D, int was, uint64_t round);
int sdc_ec_rk_rb_put(struct sdc_ec_rk *k, int j0, int j1);
void sdc_ec_rk_rb_caps(const struct sdc_ec_rk *k, int j0, int j1, size_t *cap);
int sdc_ec_rk_rb_take(struct sdc_ec_rk *k, int j0, int j1);
int sdc_ec_rk_rb_install(struct sdc_ec_rk *k, uint64_t round);
int sdc_ec_rk_rb_finish_now(struct sdc_ec_rk *k, uint64_t round);

/* ranks_check.c */
int sdc_ec_rk_check_start(struct sdc_ec_rk *k, const struct sdc_ec_rk_server *v, uint64_t installed, double span);
void sdc_ec_rk_check_finish(struct sdc_ec_rk *k, bool wait);
void sdc_ec_rk_final_check(struct sdc_ec_rk *k);

#endif
