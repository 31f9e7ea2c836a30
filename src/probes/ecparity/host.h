/*
 * ecparity on one host (ecparity.c opens with the probe): the state its workers share, grouped by
 * job, and the parts that act on it, one file a job:
 *   host_barrier.c  the barrier that keeps the servers' rounds in step
 *   host_train.c    training, and the messages that carry its differences to the parities
 *   host_verify.c   the verification of every parity and the localisation of what broke
 *   host_rebuild.c  a lost server dropped and rebuilt while the others train
 *   host_check.c    the replays: of a rebuilt server, and of every server at the run's end
 *   host_round.c    a round as a sequence of steps between barriers, and the run's end
 * Each worker runs servers index, index + T, ... (one each with two CPUs or more).
 *
 * The workers are processes of their own, forked after setup (probe/probe.h), so all of this state that
 * a worker writes lives in mappings setup made with sdc_shared_alloc, its pointers the same in
 * every worker; no process-shared condition variable (a waiter that dies in one leaves glibc's
 * broadcasts waiting for it for good, glibc 2.36 at least): the waits sleep on futexes, 50 ms at
 * most, and locks are robust (a holder that died aborts the rounds).
 */
#ifndef SDC_PROBES_ECPARITY_HOST_H
#define SDC_PROBES_ECPARITY_HOST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "run/inject.h"
#include "probes/ecparity/parity.h"
#include "probe/probe.h"
#include "probes/ecparity/ecparity.h"

#define SDC_EC_HOST_MAX_BREAKS 64

/* The barrier that keeps rounds in step (host_barrier.c); generation and gone are futex words. */
struct sdc_ec_host_barrier {
	_Atomic uint32_t generation; /* one more each time the last server arrives */
	_Atomic uint32_t gone;       /* workers out of the rounds */
	atomic_int arrived;
	atomic_bool go_on, abort;
};

/* A helper thread of one worker: a pthread_t means something only in the process that made it,
 * so only that process joins it. */
struct sdc_ec_host_thread {
	pthread_t thread;
	pid_t owner; /* the process it runs in; 0: none running */
};

/* A difference's word changed on its way (the M fault): what the stripe holder of the first
 * record of the round's first message receives there instead. */
struct sdc_ec_transit_fault {
	bool on;
	uint64_t round;
	int to, word; /* the receiving server; the word of record 0 (its row word is 0) */
	uint32_t value;
};

/* The messages (host_train.c). */
struct sdc_ec_host_messages {
	/* per server: this round's messages, one a step (kept as sent, for a resend: steps x
	 * bundle_words words a server), and how many are out (round << 32 | steps, stored with
	 * release: the messages are whole before) */
	uint32_t *outbox;
	size_t bundle_words;
	_Atomic uint64_t *published;
	/* per holder: what it has applied of each sender's (round << 32 | messages), and where a
	 * message arrives (bundle_words a holder, its own copy: a change on the way is in it only) */
	uint64_t *applied;
	uint32_t *recv;
	struct sdc_ec_transit_fault *transit; /* per sender */
};

/* What a round's verification found (host_verify.c), and what the messages and the rebuild's
 * check left to be said. */
struct sdc_ec_host_found {
	pthread_mutex_t lock;
	struct sdc_ec_break sb[SDC_EC_HOST_MAX_BREAKS], cb[SDC_EC_HOST_MAX_BREAKS];
	int nsb, ncb;
	struct sdc_ec_event ev[SDC_EC_HOST_MAX_BREAKS];
	int nev;
};

/*
 * The rebuild of a lost server, while the others train the next round (host_rebuild.c): a helper
 * thread reads each row's parity and other members unless a member's touched flag says it is
 * being updated this round (the flag is set, then a fence, before the entry changes; the helper
 * reads, fences, and looks at the flags again: a seqlock's reader, so a row read while it moved
 * is set aside, never used); the rows set aside are done again at the round's end, when nothing
 * moves. The lost server neither trains nor takes messages meanwhile; at the round's end it is
 * installed and caught up on the round, and checked against the replay when that is done
 * (host_check.c).
 */
struct sdc_ec_host_rebuild {
	int lost;                /* a server whose shard was dropped this round, or -1 */
	struct sdc_fault fault;  /* its fault: with a row, the rebuilt copy is corrupted there too */
	bool slow;               /* the R fault: the helper dawdles, so training moves rows under it */
	int server;              /* the server being rebuilt, or -1 */
	uint64_t round;          /* the round it was lost in */
	int catch_up;            /* a server just rebuilt, to train the round it missed, or -1 */
	struct sdc_ec_host_thread helper;
	uint32_t *out;           /* the rebuilt shard; kept as it went in until its check */
	uint8_t *redo;           /* rows read while one of their members moved */
	double pass_s;           /* the helper's pass */
	/* the server in service whose check against the replay is still to come, and the figures
	 * for the report */
	int installed;           /* the server, or -1 */
	uint64_t installed_round;
	bool check_pending, caught_up;
	int failed;              /* a server whose rebuilt copy its check found wrong, or -1 */
	int64_t redone;
	double seconds, pause_s, catch_s;
};

/* The replay of the lost server's training, on a thread of its own from the loss on, so the
 * check at the round's end waits for it only if it is not done by then (host_check.c). */
struct sdc_ec_host_replay {
	struct sdc_ec_host_thread helper;
	atomic_bool done;
	int server;              /* what it replays: the server, and its rounds (set before it starts) */
	uint64_t rounds;
	uint32_t *out;
	double seconds;
};

/* The end's check of every server against a replay of its training (host_check.c), summed over
 * the workers for the report by the last to finish. */
struct sdc_ec_host_end {
	pthread_mutex_t lock;
	int finished; /* workers at the end of the run */
	int servers, unfinished;
	uint64_t rounds;
	double seconds;
};

struct sdc_ec_host {
	struct sdc_ec_state st;  /* every shard and parity; st.l the layout */
	struct sdc_ec_work wk;   /* the workload, for training and for the replays */
	int T;                   /* workers */
	char operation[96];
	_Atomic uint8_t *touched; /* per server and row: updated this round (the rebuild's helper reads them) */
	double *train_s;         /* per worker: its seconds in training, about what the end's replay takes */
	struct sdc_ec_host_barrier bar;
	struct sdc_ec_host_messages msg;
	struct sdc_ec_host_found found;
	struct sdc_ec_host_rebuild rb;
	struct sdc_ec_host_replay rp;
	struct sdc_ec_host_end end;
};

/* The worker that acts for the server after s (a rebuild's helper and its check). */
static inline bool sdc_ec_host_next_of(const struct sdc_ec_host *sh, const struct sdc_worker *w, int s)
{
	return w->index == (s + 1) % sh->st.l.servers % sh->T;
}

/* host_barrier.c */
bool sdc_ec_host_barrier(struct sdc_ec_host *sh, struct sdc_worker *w, bool decide);
void sdc_ec_host_abort(struct sdc_ec_host *sh);
bool sdc_ec_host_aborted(struct sdc_ec_host *sh);
void sdc_ec_host_wait(struct sdc_worker *w, _Atomic uint32_t *word, uint32_t seen);
void sdc_ec_host_wake(_Atomic uint32_t *word);
int sdc_ec_host_lock(struct sdc_ec_host *sh, pthread_mutex_t *m);
int sdc_ec_host_thread_start(struct sdc_ec_host_thread *t, void *(*fn)(void *), void *arg);
void sdc_ec_host_thread_join(struct sdc_ec_host_thread *t);

/* host_train.c */
void sdc_ec_host_train(struct sdc_worker *w, struct sdc_ec_host *sh, int s, uint64_t round);
void sdc_ec_host_drain(struct sdc_ec_host *sh, int s, uint64_t round);
void sdc_ec_host_add_event(struct sdc_ec_host *sh, const struct sdc_ec_event *e);

/* host_verify.c */
void sdc_ec_host_verify(struct sdc_ec_host *sh, int p);
void sdc_ec_host_localise(struct sdc_worker *w, struct sdc_ec_host *sh, int s, uint64_t round);

/* host_rebuild.c */
void sdc_ec_host_lose(struct sdc_worker *w, struct sdc_ec_host *sh, int s, uint64_t round);
int sdc_ec_host_rebuild_start(struct sdc_worker *w, struct sdc_ec_host *sh, uint64_t round);
void sdc_ec_host_rebuild_finish(struct sdc_worker *w, struct sdc_ec_host *sh, uint64_t round, bool will_catch_up);
void sdc_ec_host_rebuild_join(struct sdc_ec_host *sh);

/* host_check.c */
void *sdc_ec_host_replay_pass(void *arg);
void sdc_ec_host_check_rebuild(struct sdc_worker *w, struct sdc_ec_host *sh, bool wait);
void sdc_ec_host_replay_join(struct sdc_ec_host *sh);
void sdc_ec_host_end_check(struct sdc_worker *w, struct sdc_ec_host *sh, uint64_t rounds, int skip);
void sdc_ec_host_end_done(struct sdc_worker *w, struct sdc_ec_host *sh);

/* host_round.c */
void sdc_ec_host_run(struct sdc_worker *w);

#endif
