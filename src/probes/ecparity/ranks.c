/*
 * ecparity across MPI ranks (ECRM, seeds/README: 002): server s is rank s at the start, with its
 * shard, the stripe parities it holds and the column parity of server s - 1 in its own memory;
 * every difference travels to its parity's rank as an MPI message with its CRC32C, and every
 * verification gathers the members' entries at the parity's rank. Nothing assumes the others
 * share this host.
 *
 * A round: the servers train `steps` steps (after each, the step's messages are exchanged and
 * applied: asynchronously from the updates, as ECRM does); messages whose CRC failed are asked
 * for again; faults at rest; the ranks agree on who is still there and whether to go on; lost
 * servers are rebuilt; every parity is verified; the breaks are shared and each rank names what
 * is its own.
 *
 * A lost rank (killed, stuck, or taken away by --inject ...:L) is found by the deadline of an
 * exchange (option timeout) or by a notice from a rank that found it (fleet.h); the ranks agree on
 * it, and then, while the rest keep their state:
 *   - every holder takes back what it applied this round from the lost rank's servers, so the
 *     parities are those of the lost servers' state at the end of the last round (a consistent cut
 *     whatever part of this round's messages got through);
 *   - each lost server is rebuilt on the next surviving rank from its stripes' parities and the
 *     other members (each sends its part; the rebuilder sums), timed, and put in service at once;
 *     a helper thread checks the rebuilt copy bit for bit against a replay of its training from
 *     the seed (which any rank can compute) while the ranks train on (struct replay_check), so
 *     the others wait for one exchange and a sum, not for a replay that grows with the rounds;
 *   - the parities it held are recomputed from their members on its new rank, and its training
 *     of this round is done again there: the run goes on with every server.
 * Exchanges are all-to-all among the live ranks (sdc_fleet_alltoall), each with a tag of its own
 * phase; the order of every buffer is one both sides enumerate from the layout, so no indices
 * travel. The ranks' agreement is a loop of exchanges of what each has seen lost, until every
 * view is the same; a rank lost during the agreement itself can leave the others apart (each
 * names the other: UNKNOWN, never a corruption finding).
 */
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fleet.h"
#include "inject.h"
#include "kernels/crc32c.h"
#include "kernels/ecparity.h"
#include "probe.h"
#include "fatal.h"
#include "probes/ecparity/ecparity.h"

#define MAX_BREAKS 64
#define MAX_PENDING 64 /* corrupt messages a rank asks again for in one round */
#define SHARED_BREAKS (8 * MAX_BREAKS) /* every rank's, as shared */
#define HDR 6          /* words of a message before its difference (struct sdc_ec_msg) */

enum tag { TAG_TRAIN = 0x4c10, TAG_REQUEST, TAG_RESEND, TAG_AGREE, TAG_REBUILD, TAG_ENCODE, TAG_VERIFY, TAG_BREAKS };

struct server { /* one this rank hosts */
	uint32_t *shard, *held; /* rows x words each: its entries; the stripe parities it holds, by row */
	uint32_t col[SDC_EC_MAX_DIM + 1]; /* the column parity of server id - 1 */
	_Atomic uint8_t *touched; /* (atomics only for the functions both forms share: server.c) */
	struct sdc_ec_msg *outbox; /* this round's messages as sent (for a resend), by seq */
	size_t nout, outcap;
	bool pending; /* being rebuilt here (struct rebuild): not trained, not verified, not sent */
	/* while another's rebuild is under way: the values its rows (entry, held parity) had at the
	 * cut, kept when they first change before their slice has gone (ECRM's write buffer) */
	int32_t *kept_at; /* per row and kind (2 r + 0 entry, 2 r + 1 held): entry of kept[] / words, or -1 */
	uint32_t *kept;
	size_t nkept, keptcap;
};

struct pending { /* a message that failed its CRC32C, waiting for the sender's copy */
	struct sdc_ec_msg m;
	int rank;
};

/*
 * A rebuilt server's check against a replay of its training, on a helper thread while the ranks
 * train on (the replay grows with the rounds done; the rebuild itself is one exchange and a sum).
 * The rebuilt shard goes into service at once; the replay is compared with the copy taken then.
 */
struct replay_check {
	bool running;
	pthread_t thread;
	int D, was, on;       /* the server, the rank it was lost with, the rank it was rebuilt on */
	uint64_t round;       /* the round it was lost in */
	uint64_t rounds;      /* the rounds in its rebuilt state: the replay covers 0 .. rounds - 1 */
	uint64_t installed;   /* the round at whose end it went into service; it catches up in the next */
	const struct sdc_ec_work *wk;
	uint32_t *rebuilt, *replayed;
	size_t words;         /* of a shard */
	double rebuild_s, sum_s, replay_s, bytes, pause_s, catch_s;
	int done, stop;       /* (atomics: the helper finished; the run ends, stop now) */
	bool threaded;        /* on its own thread (else it ran on the caller's) */
	bool finished;        /* the replay ran to the end */
};

/*
 * A lost server's rebuild while the ranks train on (ECRM §3.4.2: training continues during
 * recovery, the lost shard decoded in partitions, a write buffer keeping what recovery reads).
 * The cut is the state at the start of the round after the loss (its messages of the loss's
 * round taken back). The parts of the rebuild: for each of the server's entries, the stripe's
 * parity (+) and its other members (-); for each stripe parity it held, the members (+); for the
 * column parity it held, that column's sum (+). One slice of rows of these goes with each
 * training step's exchange of that round to the new host, which adds them up; a row that
 * training changes before its slice has gone has its value at the cut kept (struct server's
 * kept), so nothing is copied at the cut. The difference messages of the round for the parities
 * the lost server held go to the new host too and are added to the same sums (addition modulo
 * 2^32: the order does not matter). At that round's end the server goes into service as it was
 * at the cut (its groups hold: it has not moved since), is checked against a replay (struct
 * replay_check), and in the next round trains the rounds it missed beside that one (laps).
 * Until it is in service its groups wait: the stripes it is in or holds and its columns are not
 * verified.
 */
struct rebuild {
	bool on;            /* under way */
	int D, was, on_rank; /* the server, the rank it was lost with, the rank rebuilding it */
	uint64_t round;     /* the round it was lost in */
	uint64_t rounds;    /* the rounds in the state being rebuilt */
	int slices, next;   /* of rows; the next slice to go */
	int lost_with;      /* a rank lost with its part still to send (-1: none) */
	bool short_of_memory; /* a value to keep could not be */
	uint32_t column[SDC_EC_MAX_DIM + 1]; /* the column's part as far as it is summed */
	struct rb_part *q;  /* a row's parts (2k + 1) */
	struct part *who;   /* a row's contributors (k + 1) */
	double t0, sum_s, cut_s, bytes;
};

struct rk {
	struct sdc_worker *w;
	struct replay_check rc;
	struct rebuild rb;
	uint64_t *done, *start; /* per server: rounds trained; and at this round's start */
	int rebuilt;            /* the server last rebuilt on this rank, or -1 */
	bool rebuilt_ok;        /* and its check against the replay passed */
	double train_s;         /* seconds of updates so far: about what the end's replay takes */
	struct sdc_ec_layout l;
	struct sdc_ec_work wk;
	int S, P, me, d, words;
	double timeout;
	int *host;   /* per server: the rank that holds it */
	bool *live;  /* per rank */
	struct server **srv; /* per server: non-NULL when held here */
	int *here, nhere;    /* the servers held here, ascending (every loop walks these, not all S) */
	int *count;          /* per rank: how many servers it holds */
	uint32_t **out, **in; /* per rank: this exchange's buffers (words) */
	size_t *nout, *outcap, *incap;
	size_t *got; /* per rank: words that arrived in this exchange */
	size_t *cursor; /* per rank: words of in[] read so far */
	struct sdc_fleet_part *sp, *rp;
	uint32_t *log; /* this round's applied messages: from, kind, row, then the difference */
	size_t nlog, logcap;
	struct pending pend[MAX_PENDING];
	int npend;
	struct sdc_ec_break sb[SHARED_BREAKS], cb[SHARED_BREAKS];
	int nsb, ncb;
	bool cut_off; /* a notice said this rank is lost */
	bool overcount; /* SDCSCAN_TEST_EC_OVERCOUNT names this rank (tests/mpi/ecparity.sh) */
	char operation[96];
};

#define RECORD(k) ((size_t)(HDR + (k)->words))

/* (the rebuild's, below: with the training's messages) */
static void rb_keep(struct rk *k, struct server *v, int kind, int r);
static int rb_put(struct rk *k, int j0, int j1);
static void rb_caps(const struct rk *k, int j0, int j1, size_t *cap);
static int rb_take(struct rk *k, int j0, int j1);

/* The list of the servers held here and the count of each rank's, after host[] or srv[] changed. */
static void hosts_changed(struct rk *k)
{
	k->nhere = 0;
	for (int p = 0; p < k->P; p++)
		k->count[p] = 0;
	for (int s = 0; s < k->S; s++) {
		if (k->host[s] >= 0)
			k->count[k->host[s]]++;
		if (k->srv[s])
			k->here[k->nhere++] = s;
	}
}

/* ---- buffers ---- */

static int grow(uint32_t **buf, size_t *cap, size_t words)
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

static int put(struct rk *k, int p, const uint32_t *v, size_t words)
{
	if (grow(&k->out[p], &k->outcap[p], k->nout[p] + words))
		return -1;
	memcpy(k->out[p] + k->nout[p], v, words * 4);
	k->nout[p] += words;
	return 0;
}

static void clear_out(struct rk *k)
{
	for (int p = 0; p < k->P; p++)
		k->nout[p] = 0;
}

/* The next `words` words that came from rank p, or NULL when p sent fewer than that (a peer's
 * bytes are checked against what arrived, never trusted). */
static const uint32_t *take(struct rk *k, int p, size_t words)
{
	if (k->cursor[p] + words > k->got[p])
		return NULL;
	const uint32_t *v = k->in[p] + k->cursor[p];
	k->cursor[p] += words;
	return v;
}

/*
 * The exchange of out[] for in[] among the live ranks; in[p] must hold cap[p] words. Returns the
 * ranks newly lost, or -1 when this rank was cut off or out of memory.
 */
static int exchange(struct rk *k, int tag, const size_t *cap)
{
	for (int p = 0; p < k->P; p++) {
		if (grow(&k->in[p], &k->incap[p], cap[p] ? cap[p] : 1))
			return sdc_worker_error(k->w, "out of memory for the messages"), -1;
		k->cursor[p] = 0;
		k->sp[p] = (struct sdc_fleet_part){ k->out[p], (int)(k->nout[p] * 4) };
		k->rp[p] = (struct sdc_fleet_part){ k->in[p], (int)(cap[p] * 4) };
	}
	/* what this rank sends itself goes through the same reading as a peer's */
	const size_t self = k->nout[k->me] < cap[k->me] ? k->nout[k->me] : cap[k->me];
	if (self) /* (an empty buffer may be NULL, which memcpy may not be given even for 0 bytes) */
		memcpy(k->in[k->me], k->out[k->me], self * 4);
	const int n = sdc_fleet_alltoall(k->sp, k->rp, k->live, tag, k->timeout);
	for (int p = 0; p < k->P; p++)
		k->got[p] = p == k->me ? self : k->live[p] ? (size_t)k->rp[p].bytes / 4 : 0;
	if (n < 0) {
		k->cut_off = true;
		sdc_worker_error(k->w, "this rank was taken as lost by the others (it kept them waiting over %.0f s): it "
				       "leaves the ecparity job",
				 k->timeout);
	}
	return n;
}

/* ---- messages ---- */

/* The server whose parity a message moves. */
static int holder_of(const struct rk *k, const struct sdc_ec_msg *m)
{
	return m->kind ? sdc_ec_column_parity_server(&k->l, (int)m->from)
		       : sdc_ec_stripe_parity_server(&k->l, (int)m->row, sdc_ec_chunk_of(&k->l, (int)m->from, (int)m->row));
}

static void apply(struct rk *k, const struct sdc_ec_msg *m)
{
	struct server *h = k->srv[holder_of(k, m)];
	if (!m->kind)
		rb_keep(k, h, 1, (int)m->row);
	uint32_t *p = m->kind ? h->col : h->held + (size_t)m->row * k->words;
	for (int x = 0; x < k->words; x++)
		p[x] += m->diff[x];
	/* logged: taken back if the sender turns out lost this round */
	if (!grow(&k->log, &k->logcap, k->nlog + 3 + (size_t)k->words)) {
		uint32_t *e = k->log + k->nlog;
		e[0] = m->from, e[1] = m->kind, e[2] = m->row;
		memcpy(e + 3, m->diff, 4 * (size_t)k->words);
		k->nlog += 3 + (size_t)k->words;
	}
}

/* The fields that must hold before a message is used: it is for a server held here, from a
 * server the sender holds. (Its CRC32C is checked before any of them.) */
static bool addressed_here(const struct rk *k, const struct sdc_ec_msg *m, int p)
{
	return m->from < (uint32_t)k->S && m->row < (uint32_t)k->l.rows && m->kind < 2 && k->host[m->from] == p &&
	       k->srv[holder_of(k, m)];
}

static void report_event(struct rk *k, uint64_t round, const struct sdc_ec_event *e)
{
	struct sdc_finding f;
	sdc_ec_finding(&f, k->operation, round, e);
	sdc_worker_report(k->w, &f);
}

/* Reads the messages rank p sent in this exchange: count, then records. */
static int read_messages(struct rk *k, int p, uint64_t round, bool resend)
{
	const uint32_t *n = take(k, p, 1);
	if (!n)
		return 0; /* (a rank lost in the exchange sent nothing) */
	const size_t count = *n;
	for (size_t i = 0; i < count; i++) {
		const uint32_t *v = take(k, p, RECORD(k));
		if (!v)
			return sdc_worker_error(k->w, "rank %d (%s) said it sent %zu messages and sent fewer: refused", p,
						sdc_fleet_host(p), count),
			       -1;
		struct sdc_ec_msg m;
		memcpy(&m, v, RECORD(k) * 4);
		if (!sdc_ec_msg_intact(&m, k->words)) {
			if (resend) {
				struct sdc_ec_event e = { .owner = -1, .row = (int)m.row, .col = -1 };
				sdc_strlcpy(e.kind, "difference-corrupt", sizeof(e.kind));
				sdc_strlcpy(e.target, "M", sizeof(e.target));
				snprintf(e.detail, sizeof(e.detail),
					 "a difference from rank %d (%s) failed its CRC32C twice, sent and sent again: the link "
					 "to rank %d changes it; its parity is recomputed from the members",
					 p, sdc_fleet_host(p), k->me);
				report_event(k, round, &e);
			} else if (k->npend < MAX_PENDING)
				k->pend[k->npend++] = (struct pending){ .m = m, .rank = p };
			continue;
		}
		if (!addressed_here(k, &m, p))
			return sdc_worker_error(k->w, "rank %d (%s) sent a message with a good CRC32C for server %u's entry %u "
						      "that is not for this rank: the ranks disagree on the layout",
						p, sdc_fleet_host(p), m.from, m.row),
			       -1;
		if (resend) {
			/* the sender's copy names what changed on the way */
			for (int j = 0; j < k->npend; j++) {
				struct pending *q = &k->pend[j];
				if (q->rank != p || q->m.seq != m.seq || q->m.from != m.from)
					continue;
				struct sdc_ec_event e = { .owner = (int)m.from, .row = (int)m.row, .col = -1 };
				for (int x = 0; x < k->words && e.col < 0; x++)
					if (q->m.diff[x] != m.diff[x])
						e.col = x, e.expected = m.diff[x], e.actual = q->m.diff[x];
				sdc_strlcpy(e.kind, "difference-corrupt", sizeof(e.kind));
				sdc_strlcpy(e.target, "M", sizeof(e.target));
				snprintf(e.detail, sizeof(e.detail),
					 "a difference of server %u's entry %u failed its CRC32C from rank %d (%.20s) to rank %d: "
					 "the link (memory or transport) changed it; applied as sent again",
					 m.from, m.row, p, sdc_fleet_host(p), k->me);
				report_event(k, round, &e);
				q->rank = -1;
			}
		}
		apply(k, &m);
	}
	return 0;
}

/* Server s's steps a step in round `round`: 1, or more for a rebuilt server catching up (the
 * rounds it missed and this one, in this round's steps). Every rank knows every server's. */
static int64_t laps(const struct rk *k, int s, uint64_t round)
{
	return k->done[s] < round ? (int64_t)(round + 1 - k->done[s]) : 1;
}

/* Capacity for what each rank sends in a message exchange: its servers' messages of one step. */
static void message_caps(const struct rk *k, size_t *cap, uint64_t round)
{
	for (int p = 0; p < k->P; p++)
		cap[p] = k->live[p] ? 1 : 0;
	for (int s = 0; s < k->S; s++) {
		const int p = k->host[s];
		if (p >= 0 && k->live[p] && !(k->rb.on && s == k->rb.D))
			cap[p] += (size_t)laps(k, s, round) * (size_t)k->wk.batch * 2 * RECORD(k);
	}
}

/* ---- training ---- */

/* Server s when it is held here and not being rebuilt. */
static struct server *trains(const struct rk *k, int s)
{
	struct server *v = k->srv[s];
	return v && !v->pending ? v : NULL;
}

/* The servers train round `round` (every rank takes part in the exchanges): each step's messages
 * exchanged and applied. A rebuild under way sends a slice of its parts with each step's
 * messages; a rebuilt server behind trains several of its steps a step until it is level. */
static int train_round(struct rk *k, uint64_t round)
{
	const int words = k->words;
	float g[SDC_EC_MAX_DIM];
	uint32_t old[SDC_EC_MAX_DIM + 1];
	struct sdc_fault uf[2], mf[2], gf[2];
	struct sdc_worker *w = k->w;
	/* a rank's faults go to its own server */
	const bool primary = trains(k, k->me) != NULL;
	const int nu = primary ? sdc_ec_faults(w, k->me, "U", round, uf, 2) : 0;
	const int nm = primary ? sdc_ec_faults(w, k->me, "M", round, mf, 2) : 0;
	const int ng = primary ? sdc_ec_faults(w, k->me, "G", round, gf, 2) : 0;
	size_t *cap = calloc((size_t)k->P, sizeof(size_t));
	if (!cap)
		return sdc_worker_error(w, "out of memory"), -1;
	for (int h = 0; h < k->nhere; h++) {
		struct server *v = trains(k, k->here[h]);
		if (!v)
			continue;
		for (int r = 0; r < k->l.rows; r++)
			atomic_store_explicit(&v->touched[r], 0, memory_order_relaxed);
		v->nout = 0;
		const size_t need = (size_t)(laps(k, k->here[h], round) * k->wk.steps * k->wk.batch * 2);
		if (v->outcap < need) {
			struct sdc_ec_msg *o = realloc(v->outbox, need * sizeof(*o));
			if (!o) {
				free(cap);
				return sdc_worker_error(w, "out of memory for the messages"), -1;
			}
			v->outbox = o, v->outcap = need;
		}
	}
	int rc = 0;
	for (int64_t step = 0; step < k->wk.steps && !rc; step++) {
		clear_out(k);
		for (int p = 0; p < k->P; p++)
			if (k->live[p] && put(k, p, (const uint32_t[]){ 0 }, 1))
				rc = -1;
		const double t_updates = sdc_now();
		for (int h = 0; h < k->nhere && !rc; h++) {
			const int s = k->here[h];
			struct server *v = trains(k, s);
			if (!v)
				continue;
			const int64_t n = laps(k, s, round);
			const double t0 = n > 1 ? sdc_now() : 0;
			for (int64_t t = step * n; t < (step + 1) * n && !rc; t++)
			for (int64_t u = 0; u < k->wk.batch && !rc; u++) {
				/* its own round and step: the round it is at, then on (t = step when level) */
				const int row = sdc_ec_draw_update(&k->wk, s, k->done[s] + (uint64_t)(t / k->wk.steps),
								   t % k->wk.steps, u, g);
				uint32_t *e = v->shard + (size_t)row * words;
				rb_keep(k, v, 0, row);
				/* G: training's own arithmetic goes wrong (a gradient), before anything checks it */
				for (int i = 0; i < ng && s == k->me && step == 0 && u == 0; i++) {
					const int col = gf[i].col >= 0 ? (int)(gf[i].col % k->d) : 0;
					uint32_t gw;
					memcpy(&gw, &g[col], 4);
					sdc_ec_flip(w, &gf[i], "G", round, row, col, &gw, true);
					memcpy(&g[col], &gw, 4);
				}
				memcpy(old, e, 4 * (size_t)words);
				sdc_ec_adagrad(e, k->d, g);
				atomic_store_explicit(&v->touched[row], 1, memory_order_relaxed);
				struct sdc_ec_msg *pair = &v->outbox[v->nout];
				sdc_ec_msg_pair(pair, (uint32_t)v->nout, s, row, e, old, words);
				v->nout += 2;
				for (int kind = 0; kind < 2; kind++) {
					struct sdc_ec_msg sent = pair[kind];
					/* M: the first message of the round changes on its way */
					for (int i = 0; i < nm && s == k->me && step == 0 && u == 0 && kind == 0; i++) {
						const int col = mf[i].col >= 0 ? (int)(mf[i].col % words) : 0;
						sdc_ec_flip(w, &mf[i], "M", round, row, col, &sent.diff[col], false);
					}
					const int to = k->host[holder_of(k, &sent)];
					/* a holder on a lost rank: its parities are rebuilt from the members as they
					 * are at the round's end (struct rebuild) */
					if (to < 0 || !k->live[to])
						continue;
					uint32_t *count = k->out[to];
					(*count)++;
					if (put(k, to, (const uint32_t *)&sent, RECORD(k))) {
						rc = -1;
						break;
					}
				}
				/* U: the last update of the round stores a wrong result after its difference went */
				for (int i = 0; i < nu && s == k->me && step == k->wk.steps - 1 && u == k->wk.batch - 1; i++) {
					const int col = uf[i].col >= 0 ? (int)(uf[i].col % words) : (int)sdc_fault_draw(&uf[i], 1, k->d);
					sdc_ec_flip(w, &uf[i], "U", round, row, col, &e[col], true);
				}
			}
			if (n > 1 && k->rc.running && s == k->rc.D)
				k->rc.catch_s += sdc_now() - t0;
		}
		k->train_s += sdc_now() - t_updates; /* (the updates, not the exchange: what a replay does) */
		if (rc) {
			sdc_worker_error(w, "out of memory for the messages");
			break;
		}
		const bool slice = k->rb.on && k->rb.next < k->rb.slices;
		if (slice && rb_put(k, k->rb.next, k->rb.next + 1)) {
			rc = -1;
			break;
		}
		/* the mpi suite's stand-in for a peer whose bytes are wrong: with SDCSCAN_TEST_EC_OVERCOUNT=R,
		 * rank R says one message more than it sends to every rank in round 1's first step */
		if (round == 1 && step == 0 && k->overcount)
			for (int p = 0; p < k->P; p++)
				if (k->live[p] && p != k->me)
					k->out[p][0]++;
		message_caps(k, cap, round);
		if (slice)
			rb_caps(k, k->rb.next, k->rb.next + 1, cap);
		if (exchange(k, TAG_TRAIN, cap) < 0) {
			rc = -1;
			break;
		}
		for (int p = 0; p < k->P && !rc; p++)
			if (k->live[p] || p == k->me)
				rc = read_messages(k, p, round, false);
		if (slice && !rc) {
			rc = rb_take(k, k->rb.next, k->rb.next + 1);
			k->rb.next++;
		}
	}
	/* (every rank keeps every server's count: a lost one's cut is the count at its round's start) */
	for (int s = 0; s < k->S && !rc; s++)
		if (k->host[s] >= 0 && !(k->rb.on && s == k->rb.D))
			k->done[s] = round + 1;
	free(cap);
	return rc;
}

/* The messages that failed their CRC32C asked for again from their senders, and applied. */
static int resend_round(struct rk *k, uint64_t round)
{
	size_t *cap = calloc((size_t)k->P, sizeof(size_t));
	if (!cap)
		return sdc_worker_error(k->w, "out of memory"), -1;
	clear_out(k);
	int rc = 0;
	for (int p = 0; p < k->P; p++)
		if (k->live[p]) {
			uint32_t n = 0;
			for (int i = 0; i < k->npend; i++)
				n += k->pend[i].rank == p;
			rc |= put(k, p, &n, 1);
			for (int i = 0; i < k->npend; i++)
				if (k->pend[i].rank == p)
					rc |= put(k, p, (const uint32_t[]){ k->pend[i].m.from, k->pend[i].m.seq }, 2);
			cap[p] = 1 + 2 * MAX_PENDING;
		}
	if (rc || exchange(k, TAG_REQUEST, cap) < 0) {
		free(cap);
		return -1;
	}
	/* what each rank asks for, from the outboxes */
	clear_out(k);
	for (int p = 0; p < k->P && !rc; p++) {
		if (!k->live[p] && p != k->me)
			continue;
		const uint32_t *n = take(k, p, 1);
		if (k->live[p])
			rc |= put(k, p, (const uint32_t[]){ 0 }, 1);
		for (uint32_t i = 0; n && i < *n && i < MAX_PENDING && !rc; i++) {
			const uint32_t *q = take(k, p, 2);
			const struct server *v = q && q[0] < (uint32_t)k->S ? k->srv[q[0]] : NULL;
			if (!v || q[1] >= v->nout) {
				sdc_worker_error(k->w, "rank %d (%s) asked again for a message this rank did not send", p,
						 sdc_fleet_host(p));
				rc = -1;
				break;
			}
			k->out[p][0]++;
			rc |= put(k, p, (const uint32_t *)&v->outbox[q[1]], RECORD(k));
		}
	}
	for (int p = 0; p < k->P; p++)
		cap[p] = k->live[p] ? 1 + MAX_PENDING * RECORD(k) : 0;
	if (rc || exchange(k, TAG_RESEND, cap) < 0) {
		free(cap);
		return -1;
	}
	for (int p = 0; p < k->P && !rc; p++)
		if (k->live[p] || p == k->me)
			rc = read_messages(k, p, round, true);
	/* asked of a rank lost since: its messages of the round are taken back anyway */
	k->npend = 0;
	free(cap);
	return rc;
}

/* ---- agreement ---- */

/*
 * Every live rank's view of who is still there, and whether it goes on; repeated until every
 * view received is this rank's own. Returns the ranks lost since the last agreement (in lost[]),
 * or -1 (cut off); *go_on: every rank goes on.
 */
static int agree(struct rk *k, bool mine, bool *go_on, const bool *before)
{
	size_t *cap = calloc((size_t)k->P, sizeof(size_t));
	uint32_t *view = malloc(((size_t)k->P + 1) * 4);
	int rc = -1;
	if (!cap || !view)
		goto out;
	for (;;) {
		clear_out(k);
		view[0] = mine;
		for (int p = 0; p < k->P; p++)
			view[1 + p] = k->live[p];
		for (int p = 0; p < k->P; p++) {
			cap[p] = k->live[p] ? (size_t)k->P + 1 : 0;
			if (k->live[p] && put(k, p, view, (size_t)k->P + 1))
				goto out;
		}
		const int lost = exchange(k, TAG_AGREE, cap);
		if (lost < 0)
			goto out;
		bool same = lost == 0;
		*go_on = mine;
		for (int p = 0; p < k->P; p++) {
			if (!k->live[p])
				continue;
			const uint32_t *v = take(k, p, (size_t)k->P + 1);
			if (!v)
				goto out;
			*go_on &= v[0] != 0;
			for (int r = 0; r < k->P; r++) {
				same &= (v[1 + r] != 0) == (view[1 + r] != 0);
				if (!v[1 + r])
					k->live[r] = false; /* lost in another's view: lost in all */
			}
		}
		if (!k->live[k->me]) {
			k->cut_off = true;
			sdc_worker_error(k->w, "the other ranks took this rank as lost: it leaves the ecparity job");
			goto out;
		}
		if (same)
			break;
	}
	rc = 0;
	for (int p = 0; p < k->P; p++)
		rc += before[p] && !k->live[p];
out:
	free(cap), free(view);
	return rc;
}

/* ---- contributions: parities encoded or verified at their holders, servers rebuilt ---- */

/* A server's part in one row's sum, and with which sign. */
struct part {
	int x, sign;
};

static int by_server(const void *a, const void *b)
{
	return ((const struct part *)a)->x - ((const struct part *)b)->x;
}

static int by_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Whether stripe (r, c) waits for a server being rebuilt (a member, or its parity's holder); and
 * server x's column (x is that server, or the column's holder). Both sides of an exchange ask. */
static bool stripe_waits(const struct rk *k, int r, int c)
{
	return k->rb.on && (sdc_ec_stripe_has(&k->l, r, c, k->rb.D) || sdc_ec_stripe_parity_server(&k->l, r, c) == k->rb.D);
}

static bool column_waits(const struct rk *k, int x)
{
	return k->rb.on && (x == k->rb.D || sdc_ec_column_parity_server(&k->l, x) == k->rb.D);
}

/* The members of the stripes through row r whose parity is held here by a server in set[], by
 * member (the order every sender writes its entries in); x's holder in out[].sign. */
static int held_members(const struct rk *k, const bool *set, int r, struct part *out)
{
	int n = 0;
	for (int h = 0; h < k->nhere; h++) {
		const int p = k->here[h], c = set[p] ? sdc_ec_held_chunk(&k->l, p, r) : -1;
		for (int i = 0; c >= 0 && !stripe_waits(k, r, c) && i < k->l.k; i++)
			out[n++] = (struct part){ sdc_ec_member(&k->l, r, c, i), p };
	}
	qsort(out, (size_t)n, sizeof(*out), by_server);
	return n;
}

/*
 * The members' entries to the holders in set[] (holder servers), and the columns: sent in row
 * order, then by member; received and summed per held stripe. verify: compared with the held
 * parities (breaks into k->sb, k->cb); else stored as the parities (encoding). A rank lost in the
 * exchange leaves sums short: the caller does not use such a verification.
 */
static int contribute(struct rk *k, const bool *set, bool verify, int64_t *broken)
{
	const struct sdc_ec_layout *l = &k->l;
	const int words = k->words;
	size_t *cap = calloc((size_t)k->P, sizeof(size_t));
	uint32_t *col = calloc((size_t)words, 4), (*sum)[SDC_EC_MAX_DIM + 1] = calloc((size_t)k->S, sizeof(*sum));
	struct part *mem = calloc((size_t)(k->nhere ? k->nhere : 1) * (size_t)l->k, sizeof(*mem));
	int *cols = calloc((size_t)(k->nhere ? k->nhere : 1), sizeof(int)), ncols = 0;
	int rc = -1;
	if (!cap || !col || !sum || !mem || !cols)
		goto out;
	clear_out(k);
	for (int r = 0; r < l->rows; r++)
		for (int h = 0; h < k->nhere; h++) {
			const int x = k->here[h], c = sdc_ec_chunk_of(l, x, r);
			const struct server *v = k->srv[x];
			const int p = sdc_ec_stripe_parity_server(l, r, c);
			if (set[p] && !stripe_waits(k, r, c) && k->live[k->host[p]] &&
			    put(k, k->host[p], v->shard + (size_t)r * words, (size_t)words))
				goto out;
		}
	for (int h = 0; h < k->nhere; h++) {
		const int x = k->here[h];
		const struct server *v = k->srv[x];
		const int p = sdc_ec_column_parity_server(l, x);
		if (!set[p] || column_waits(k, x) || !k->live[k->host[p]])
			continue;
		memset(col, 0, 4 * (size_t)words);
		for (int r = 0; r < l->rows; r++)
			for (int c = 0; c < words; c++)
				col[c] += v->shard[(size_t)r * words + c];
		if (put(k, k->host[p], col, (size_t)words))
			goto out;
	}
	/* what each rank sends here: its members of the stripes held here, and their columns */
	for (int r = 0; r < l->rows; r++) {
		const int n = held_members(k, set, r, mem);
		for (int i = 0; i < n; i++)
			cap[k->host[mem[i].x]] += (size_t)words;
	}
	/* the columns held here, by the server they sum (the order their senders write them in) */
	for (int h = 0; h < k->nhere; h++)
		if (set[k->here[h]] && !column_waits(k, (k->here[h] - 1 + k->S) % k->S))
			cols[ncols++] = (k->here[h] - 1 + k->S) % k->S;
	qsort(cols, (size_t)ncols, sizeof(int), by_int);
	for (int i = 0; i < ncols; i++)
		cap[k->host[cols[i]]] += (size_t)words;
	if (exchange(k, verify ? TAG_VERIFY : TAG_ENCODE, cap) < 0)
		goto out;
	*broken = 0;
	k->nsb = k->ncb = 0;
	for (int r = 0; r < l->rows; r++) {
		const int n = held_members(k, set, r, mem);
		for (int i = 0; i < n; i++)
			memset(sum[mem[i].sign], 0, 4 * (size_t)words);
		for (int i = 0; i < n; i++) {
			const uint32_t *e = k->live[k->host[mem[i].x]] ? take(k, k->host[mem[i].x], (size_t)words) : NULL;
			if (!e && k->live[k->host[mem[i].x]])
				goto out;
			for (int c = 0; e && c < words; c++)
				sum[mem[i].sign][c] += e[c];
		}
		for (int h = 0; h < k->nhere; h++) {
			const int p = k->here[h], c = set[p] ? sdc_ec_held_chunk(l, p, r) : -1;
			if (c < 0 || stripe_waits(k, r, c))
				continue;
			uint32_t *held = k->srv[p]->held + (size_t)r * words;
			for (int w = 0; w < words; w++) {
				if (!verify)
					held[w] = sum[p][w];
				else if (held[w] != sum[p][w] && (*broken)++ < MAX_BREAKS)
					k->sb[k->nsb++] = (struct sdc_ec_break){ r, c, w, held[w] - sum[p][w] };
			}
		}
	}
	for (int i = 0; i < ncols; i++) {
		const int x = cols[i], p = sdc_ec_column_parity_server(l, x);
		if (!k->live[k->host[x]])
			continue;
		const uint32_t *e = take(k, k->host[x], (size_t)words);
		if (!e)
			goto out;
		for (int c = 0; c < words; c++) {
			if (!verify)
				k->srv[p]->col[c] = e[c];
			else if (k->srv[p]->col[c] != e[c] && (*broken)++ < 2 * MAX_BREAKS && k->ncb < MAX_BREAKS)
				k->cb[k->ncb++] = (struct sdc_ec_break){ x, -1, c, k->srv[p]->col[c] - e[c] };
		}
	}
	rc = 0;
out:
	if (rc && !k->cut_off)
		sdc_worker_error(k->w, "out of memory, or a rank sent less than its part of a verification");
	free(cap), free(col), free(sum), free(mem), free(cols);
	return rc;
}

/* Every rank's breaks to every rank, in rank order: the same lists everywhere. */
static int share_breaks(struct rk *k)
{
	const size_t rec = 4, most = 2 + 2 * MAX_BREAKS * rec;
	size_t *cap = calloc((size_t)k->P, sizeof(size_t));
	uint32_t *mine = calloc(most, 4);
	int rc = -1;
	if (!cap || !mine)
		goto out;
	mine[0] = (uint32_t)k->nsb, mine[1] = (uint32_t)k->ncb;
	for (int i = 0; i < k->nsb; i++)
		memcpy(mine + 2 + rec * (size_t)i, &k->sb[i], 16);
	for (int i = 0; i < k->ncb; i++)
		memcpy(mine + 2 + rec * (size_t)(k->nsb + i), &k->cb[i], 16);
	clear_out(k);
	for (int p = 0; p < k->P; p++) {
		cap[p] = k->live[p] ? most : 0;
		if (k->live[p] && put(k, p, mine, 2 + rec * (size_t)(k->nsb + k->ncb)))
			goto out;
	}
	if (exchange(k, TAG_BREAKS, cap) < 0)
		goto out;
	k->nsb = k->ncb = 0;
	for (int p = 0; p < k->P; p++) {
		const uint32_t *n = k->live[p] ? take(k, p, 2) : NULL;
		if (!n)
			continue;
		if (n[0] > MAX_BREAKS || n[1] > MAX_BREAKS) {
			sdc_worker_error(k->w, "rank %d (%s) sent %u and %u breaks, more than %d: refused", p, sdc_fleet_host(p),
					 n[0], n[1], MAX_BREAKS);
			goto out;
		}
		const uint32_t ns = n[0], nc = n[1];
		for (uint32_t i = 0; i < ns + nc; i++) {
			const uint32_t *b = take(k, p, rec);
			struct sdc_ec_break x;
			if (!b || k->nsb >= SHARED_BREAKS || k->ncb >= SHARED_BREAKS)
				break; /* (more breaks than named: the first ones are enough to say where) */
			memcpy(&x, b, 16);
			if (x.row < 0 || x.row >= (i < ns ? k->l.rows : k->S) || x.word < 0 || x.word >= k->words ||
			    (i < ns && (x.chunk < 0 || x.chunk >= sdc_ec_chunks(&k->l)))) {
				sdc_worker_error(k->w, "rank %d (%s) sent a break outside the layout: refused", p, sdc_fleet_host(p));
				goto out;
			}
			if (i < ns)
				k->sb[k->nsb++] = x;
			else
				k->cb[k->ncb++] = x;
		}
	}
	rc = 0;
out:
	free(cap), free(mine);
	return rc;
}

/* ---- a lost rank's servers ---- */

static struct server *server_new(const struct rk *k)
{
	struct server *v = calloc(1, sizeof(*v));
	const size_t shard = (size_t)k->l.rows * (size_t)k->words;
	if (!v || !(v->shard = calloc(shard, 4)) || !(v->held = calloc(shard, 4)) ||
	    !(v->touched = calloc((size_t)k->l.rows, sizeof(*v->touched)))) {
		if (v)
			free(v->shard), free(v->held);
		free(v);
		return NULL;
	}
	return v;
}

static void server_free(struct server *v)
{
	if (v)
		free(v->shard), free(v->held), free(v->touched), free(v->outbox), free(v->kept_at), free(v->kept);
	free(v);
}

/* Who holds a part of lost server D's entry r: its stripe's other members (to subtract) and its
 * parity (to add), by server. */
static int contributors(const struct sdc_ec_layout *l, int D, int r, struct part *out)
{
	const int c = sdc_ec_chunk_of(l, D, r);
	int n = 0;
	for (int i = 0; i < l->k; i++)
		if (sdc_ec_member(l, r, c, i) != D)
			out[n++] = (struct part){ sdc_ec_member(l, r, c, i), -1 };
	out[n++] = (struct part){ sdc_ec_stripe_parity_server(l, r, c), 1 };
	qsort(out, (size_t)n, sizeof(*out), by_server);
	return n;
}

static bool replay_tick(void *arg)
{
	const struct replay_check *c = arg;
	return !__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE);
}

static void *replay_main(void *arg)
{
	struct replay_check *c = arg;
	const double t0 = sdc_now();
	c->finished = sdc_ec_replay(c->wk, c->D, c->rounds, c->replayed, replay_tick, c);
	c->replay_s = sdc_now() - t0;
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * The check of a rebuild, once its replay is done (wait: the run ends, or another rebuild comes;
 * a replay still going is stopped then, and the rebuild reported unverified). A rebuilt copy that
 * is not the replay's bits is named at its first wrong word; training went on from it (its
 * parities were made from it), so from here on the server's trajectory is not the seed's.
 */
static void finish_replay_check(struct rk *k, bool wait)
{
	struct replay_check *c = &k->rc;
	if (!c->running || (!wait && !__atomic_load_n(&c->done, __ATOMIC_ACQUIRE)))
		return;
	/* (at the end, a replay still going is given half the probe's timeout: the others wait for
	 * this rank's results no longer than the timeout) */
	const double until = sdc_now() + k->timeout / 2;
	while (!__atomic_load_n(&c->done, __ATOMIC_ACQUIRE) && sdc_now() < until) {
		const struct timespec ts = { 0, 5 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	__atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
	if (c->threaded)
		pthread_join(c->thread, NULL);
	c->running = false;
	struct sdc_ec_event e;
	const bool same = c->finished && !sdc_ec_differs_from_replay(&k->l, c->D, c->replayed, c->rebuilt, &e);
	k->rebuilt_ok = same;
	if (c->finished && !same) {
		snprintf(e.detail, sizeof(e.detail),
			 "server %d (lost with rank %d) rebuilt on rank %d from the parities differs from a replay of its "
			 "training at entry %d: the rebuild went wrong here (training went on from the rebuilt copy)",
			 c->D, c->was, c->on, e.row);
		report_event(k, c->round, &e);
	}
	struct sdc_run *run = k->w->ctx->run;
	pthread_mutex_lock(&run->lock);
	json_object_set_new(run->environment, "ecparity",
			    json_pack("{s:{s:i, s:i, s:i, s:I, s:I, s:I, s:b, s:f, s:f, s:f, s:f, s:b, s:b, s:f, s:f, s:f}}", "rebuild",
				      "server", c->D, "lost_rank", c->was, "rebuilt_on_rank", c->on, "round", (json_int_t)c->round,
				      "installed_round", (json_int_t)c->installed, "rounds_missed", (json_int_t)(c->installed + 1 - c->rounds),
				      "while_training", c->installed > c->round, "bytes_read", c->bytes, "seconds", c->rebuild_s,
				      "gb_per_s", c->rebuild_s > 0 ? c->bytes / c->rebuild_s / 1e9 : 0, "sum_seconds", c->sum_s,
				      "verified_by_replay", same, "replay_finished", c->finished, "replay_seconds", c->replay_s,
				      "pause_seconds", c->pause_s, "catch_up_seconds", c->catch_s));
	pthread_mutex_unlock(&run->lock);
	sdc_note("ecparity: server %d's rebuild on rank %d: %s", c->D, c->on,
		 !c->finished ? "its replay did not finish before the run ended: unverified"
		 : same	      ? "the same bits as a replay of its training (replayed while training went on)"
			      : "NOT the bits of a replay of its training");
	free(c->rebuilt), free(c->replayed);
	c->rebuilt = c->replayed = NULL;
}

/* ---- a lost server rebuilt while the ranks train on (struct rebuild) ---- */

enum part_into { INTO_ENTRY, INTO_HELD, INTO_COLUMN };
struct rb_part {
	int x, sign, into; /* the server it comes from, its sign, what it adds to */
};

/* The parts of row r of the server being rebuilt, in the order both sides enumerate: its stripe's
 * contributors, then the members of the stripe it held through r; row `rows` is its column parity. */
static int rb_parts(const struct rk *k, int r, struct rb_part *out)
{
	const struct sdc_ec_layout *l = &k->l;
	const int D = k->rb.D;
	if (r == l->rows) {
		out[0] = (struct rb_part){ (D - 1 + l->servers) % l->servers, 1, INTO_COLUMN };
		return 1;
	}
	struct part *who = k->rb.who;
	int n = contributors(l, D, r, who);
	for (int i = 0; i < n; i++)
		out[i] = (struct rb_part){ who[i].x, who[i].sign, INTO_ENTRY };
	const int c = sdc_ec_held_chunk(l, D, r);
	for (int i = 0; c >= 0 && i < l->k; i++)
		out[n++] = (struct rb_part){ sdc_ec_member(l, r, c, i), 1, INTO_HELD };
	return n;
}

/* Slice j's rows: [row(j), row(j + 1)) of 0 .. rows (the last one the column). */
static int rb_row(const struct rk *k, int j)
{
	return (int)((int64_t)j * (k->l.rows + 1) / k->rb.slices);
}

/* Row r of server v (kind 0: its entry, 1: the stripe parity it holds) as it was at the cut. */
static const uint32_t *cut_value(const struct rk *k, const struct server *v, int kind, int r)
{
	const int32_t at = v->kept_at ? v->kept_at[2 * (size_t)r + kind] : -1;
	return at >= 0 ? v->kept + (size_t)at * k->words : (kind ? v->held : v->shard) + (size_t)r * k->words;
}

/* Before row r of server v (kind as above) changes: its value kept if its slice has not gone. */
static void rb_keep(struct rk *k, struct server *v, int kind, int r)
{
	struct rebuild *b = &k->rb;
	if (!b->on || !v->kept_at || r < rb_row(k, b->next) || v->kept_at[2 * (size_t)r + kind] >= 0)
		return;
	if (grow(&v->kept, &v->keptcap, v->nkept + (size_t)k->words)) {
		b->short_of_memory = true;
		return;
	}
	memcpy(v->kept + v->nkept, (kind ? v->held : v->shard) + (size_t)r * k->words, 4 * (size_t)k->words);
	v->kept_at[2 * (size_t)r + kind] = (int32_t)(v->nkept / (size_t)k->words);
	v->nkept += (size_t)k->words;
}

static void rb_drop_kept(struct rk *k)
{
	for (int s = 0; s < k->S; s++)
		if (k->srv[s]) {
			free(k->srv[s]->kept_at), free(k->srv[s]->kept);
			k->srv[s]->kept_at = NULL, k->srv[s]->kept = NULL;
			k->srv[s]->nkept = k->srv[s]->keptcap = 0;
		}
}

/*
 * After the loss is agreed (round: the loss's): server D's rebuild set up on every rank, an empty
 * server waiting for its parts on the new host, and every other server held here ready to keep
 * its rows' values at the cut. Nothing is copied or exchanged here.
 */
static int rb_start(struct rk *k, int D, int was, uint64_t round)
{
	struct rebuild *b = &k->rb;
	const double t0 = sdc_now();
	*b = (struct rebuild){ .on = true, .D = D, .was = was, .on_rank = k->host[D], .round = round, .rounds = k->start[D],
			       .slices = k->wk.steps < k->l.rows + 1 ? (int)k->wk.steps : k->l.rows + 1, .lost_with = -1,
			       .t0 = t0, .q = calloc(2 * (size_t)k->l.k + 1, sizeof(struct rb_part)),
			       .who = calloc((size_t)k->l.k + 1, sizeof(struct part)) };
	if (!b->q || !b->who)
		return sdc_worker_error(k->w, "out of memory for server %d's rebuild", D), -1;
	for (int h = 0; h < k->nhere; h++) {
		struct server *v = k->srv[k->here[h]];
		if (!(v->kept_at = malloc(2 * (size_t)k->l.rows * sizeof(int32_t))))
			return sdc_worker_error(k->w, "out of memory for server %d's rebuild", D), -1;
		memset(v->kept_at, 0xff, 2 * (size_t)k->l.rows * sizeof(int32_t)); /* -1: nothing kept */
	}
	if (b->on_rank == k->me) {
		struct server *v = server_new(k);
		if (!v)
			return sdc_worker_error(k->w, "out of memory for server %d's rebuild", D), -1;
		v->pending = true;
		k->srv[D] = v;
		hosts_changed(k);
	}
	b->cut_s = sdc_now() - t0;
	sdc_note("ecparity: server %d (rank %d lost) is rebuilt on rank %d while the ranks train round %" PRIu64
		 ": its parts go with that round's messages",
		 D, was, b->on_rank, round + 1);
	return 0;
}

/* Slices j0 .. j1 - 1 of this rank's parts, as they were at the cut, to the new host. */
static int rb_put(struct rk *k, int j0, int j1)
{
	struct rebuild *b = &k->rb;
	const int to = k->host[b->D], xc = (b->D - 1 + k->S) % k->S;
	const size_t words = (size_t)k->words;
	const struct server *vc = trains(k, xc);
	uint32_t part[SDC_EC_MAX_DIM + 1];
	if (b->short_of_memory)
		return sdc_worker_error(k->w, "out of memory for the values server %d's rebuild reads", b->D), -1;
	for (int r = rb_row(k, j0); r < rb_row(k, j1); r++) {
		/* the column's part: its rows summed slice by slice, sent with the last */
		if (vc && r < k->l.rows) {
			const uint32_t *e = cut_value(k, vc, 0, r);
			for (size_t c = 0; c < words; c++)
				b->column[c] += e[c];
		}
		const int m = rb_parts(k, r, b->q);
		for (int i = 0; i < m; i++) {
			const struct rb_part *q = &b->q[i];
			const struct server *v = trains(k, q->x);
			if (!v || !k->live[to])
				continue;
			if (q->into == INTO_COLUMN)
				memcpy(part, b->column, 4 * words);
			else {
				const uint32_t *e = cut_value(k, v, q->into == INTO_ENTRY && q->sign > 0, r);
				for (size_t c = 0; c < words; c++)
					part[c] = q->sign > 0 ? e[c] : 0u - e[c];
			}
			if (put(k, to, part, words))
				return sdc_worker_error(k->w, "out of memory for the rebuild's parts"), -1;
		}
	}
	return 0;
}

/* On the new host: what each rank sends of slices j0 .. j1 - 1. */
static void rb_caps(const struct rk *k, int j0, int j1, size_t *cap)
{
	struct rb_part *q = k->rb.q;
	if (k->host[k->rb.D] != k->me)
		return;
	for (int r = rb_row(k, j0); r < rb_row(k, j1); r++) {
		const int m = rb_parts(k, r, q);
		for (int i = 0; i < m; i++)
			if (k->live[k->host[q[i].x]])
				cap[k->host[q[i].x]] += (size_t)k->words;
	}
}

/* On the new host: slices j0 .. j1 - 1 added up as they came (a rank lost before its part is
 * remembered: the rebuild cannot finish; one that sent less is refused). */
static int rb_take(struct rk *k, int j0, int j1)
{
	struct rebuild *b = &k->rb;
	struct rb_part *q = k->rb.q;
	if (k->host[b->D] != k->me)
		return 0;
	const double t0 = sdc_now();
	struct server *v = k->srv[b->D];
	const size_t words = (size_t)k->words;
	for (int r = rb_row(k, j0); r < rb_row(k, j1); r++) {
		const int m = rb_parts(k, r, q);
		for (int i = 0; i < m; i++) {
			const int p = k->host[q[i].x];
			const uint32_t *e = k->live[p] ? take(k, p, words) : NULL;
			if (!e && k->live[p])
				return sdc_worker_error(k->w, "rank %d (%s) sent less than its part of server %d's rebuild: refused",
							p, sdc_fleet_host(p), b->D),
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
static int rb_install(struct rk *k, uint64_t round)
{
	struct rebuild *b = &k->rb;
	const double span = sdc_now() - b->t0;
	const int D = b->D;
	free(b->q), free(b->who);
	b->q = NULL, b->who = NULL;
	b->on = false;
	rb_drop_kept(k);
	if (b->lost_with >= 0)
		return sdc_worker_error(k->w, "server %d cannot be rebuilt: rank %d (%s), which held a part of it, was lost "
					      "during its rebuild (a parity rebuilds one lost server at a time)",
					D, b->lost_with, sdc_fleet_host(b->lost_with)),
		       -1;
	k->done[D] = b->rounds;
	if (k->host[D] != k->me)
		return 0;
	struct replay_check *c = &k->rc;
	struct server *v = k->srv[D];
	const struct sdc_ec_layout *l = &k->l;
	v->pending = false;
	/* L with a row: the rebuilt copy goes wrong there (this survivor's memory), which the replay
	 * must catch; the fault is the lost rank's spec, applied and recorded here */
	struct sdc_fault lf;
	if (sdc_ec_faults(k->w, b->was, "L", b->round, &lf, 1) && lf.row >= 0) {
		const int64_t row = lf.row % l->rows, col = lf.col >= 0 ? lf.col % k->words : 0;
		sdc_ec_flip(k->w, &lf, "L", b->round, row, col, v->shard + (size_t)row * k->words + (size_t)col, true);
	}
	/* one check at a time: an earlier rebuild's replay finishes (or stops) first */
	finish_replay_check(k, true);
	const size_t shard_words = (size_t)l->rows * (size_t)k->words;
	*c = (struct replay_check){ .D = D, .was = b->was, .on = k->me, .round = b->round, .rounds = b->rounds,
				    .installed = round, .wk = &k->wk, .words = shard_words, .rebuilt = malloc(shard_words * 4),
				    .replayed = malloc(shard_words * 4), .rebuild_s = span, .sum_s = b->sum_s,
				    .bytes = b->bytes, .pause_s = b->cut_s };
	if (!c->rebuilt || !c->replayed) {
		free(c->rebuilt), free(c->replayed);
		c->rebuilt = c->replayed = NULL;
		return sdc_worker_error(k->w, "out of memory for the check of server %d's rebuild", D), -1;
	}
	memcpy(c->rebuilt, v->shard, shard_words * 4);
	k->rebuilt = D, k->rebuilt_ok = false;
	c->threaded = !pthread_create(&c->thread, NULL, replay_main, c);
	if (!c->threaded)
		replay_main(c); /* (no thread: the replay here and now) */
	c->running = true;
	sdc_note("ecparity: server %d (rank %d lost) rebuilt on rank %d in %.3f s while training went on (%.3f GB read, "
		 "%.3f s of adding); its check against a replay of its training runs beside the training",
		 D, b->was, k->me, span, b->bytes / 1e9, b->sum_s);
	return 0;
}

/* The run ends with a rebuild under way: its remaining parts in one exchange (nothing trains any
 * more), installed and checked; the rounds it missed are not trained. */
static int rb_finish_now(struct rk *k, uint64_t round)
{
	struct rebuild *b = &k->rb;
	size_t *cap = calloc((size_t)k->P, sizeof(size_t));
	if (!cap)
		return sdc_worker_error(k->w, "out of memory"), -1;
	clear_out(k);
	rb_caps(k, b->next, b->slices, cap);
	int rc = rb_put(k, b->next, b->slices) || exchange(k, TAG_REBUILD, cap) < 0 ? -1 : rb_take(k, b->next, b->slices);
	free(cap);
	b->next = b->slices;
	return rc ? rc : rb_install(k, round);
}

/* The end's replay: ends at its deadline, with a heartbeat at each step (no rounds meanwhile). */
struct end_replay {
	double until;
	struct sdc_worker *w;
};
static bool end_tick(void *arg)
{
	struct end_replay *t = arg;
	sdc_worker_heartbeat(t->w);
	return sdc_now() < t->until && !sdc_stop_interrupted();
}

/* Where the end's replay of server s differs from its shard: said as a rebuilt server's (D, whose
 * check when it went in passed: its training since went wrong) or as any other's (an update
 * computed wrong: its parities followed it). */
static void end_mismatch(struct rk *k, int s, const struct sdc_ec_event *found)
{
	struct sdc_ec_event e = *found;
	if (s == k->rebuilt)
		snprintf(e.detail, sizeof(e.detail),
			 "server %d, rebuilt on rank %d and right then, differs at the run's end from a replay of its %" PRIu64
			 " rounds at entry %d: its training since (the rounds it caught up, or later ones) went wrong",
			 s, k->me, k->done[s], e.row);
	else {
		sdc_strlcpy(e.kind, "training-mismatch", sizeof(e.kind));
		sdc_strlcpy(e.target, "E", sizeof(e.target));
		snprintf(e.detail, sizeof(e.detail),
			 "server %d differs at the run's end from a replay of its %" PRIu64 " rounds at entry %d word %d, its "
			 "parities agreeing: an update computed wrong in training on rank %d",
			 s, k->done[s], e.row, e.col, k->me);
	}
	report_event(k, k->done[s] - 1, &e);
}

/*
 * At the run's end, every server this rank trains against a replay of its rounds from the seed:
 * a wrong update (training's own arithmetic) goes into the parities as computed, so only a
 * recomputation sees it. The rounds stopped early enough for this to end by the deadline; it is
 * given half the timeout all the same (the others wait for this rank's results no longer than the
 * timeout). A rebuilt server (D) is not named again where its rebuild's check failed; its result
 * joins the rebuild's in the report.
 */
static void final_check(struct rk *k)
{
	const size_t n = (size_t)k->l.rows * (size_t)k->words;
	uint32_t *want = malloc(n * 4);
	if (!want) {
		sdc_worker_error(k->w, "out of memory for the end's replay check");
		return;
	}
	sdc_worker_stop_clock(k->w); /* (the throughput is the training's) */
	const double t0 = sdc_now();
	struct end_replay tick = { .until = t0 + k->timeout / 2, .w = k->w };
	int checked = 0, unfinished = 0, D = k->rebuilt;
	bool d_finished = false, d_same = false;
	for (int s = 0; s < k->S; s++) {
		const struct server *v = trains(k, s);
		if (!v || !k->done[s])
			continue;
		const bool finished = sdc_ec_replay(&k->wk, s, k->done[s], want, end_tick, &tick);
		struct sdc_ec_event e;
		const bool same = finished && !sdc_ec_differs_from_replay(&k->l, s, want, v->shard, &e);
		checked += finished, unfinished += !finished;
		if (s == D)
			d_finished = finished, d_same = same;
		if (finished && !same && (s != D || k->rebuilt_ok))
			end_mismatch(k, s, &e);
	}
	free(want);
	struct sdc_run *run = k->w->ctx->run;
	pthread_mutex_lock(&run->lock);
	json_t *ec = json_object_get(run->environment, "ecparity");
	if (!json_is_object(ec))
		json_object_set_new(run->environment, "ecparity", ec = json_object());
	json_t *rb = json_object_get(ec, "rebuild");
	if (rb && D >= 0 && trains(k, D)) {
		json_object_set_new(rb, "final_rounds", json_integer((json_int_t)k->done[D]));
		json_object_set_new(rb, "final_matches_replay", d_finished ? json_boolean(d_same) : json_null());
	}
	json_object_set_new(ec, "replay_check",
			    json_pack("{s:i, s:i, s:f}", "servers", checked, "unfinished", unfinished, "seconds", sdc_now() - t0));
	pthread_mutex_unlock(&run->lock);
	if (unfinished && !sdc_stop_interrupted())
		sdc_worker_error(k->w, "the end's replay check of %d of this rank's servers did not finish in half the "
				 "timeout (%.0f s): their training is not verified", unfinished, k->timeout / 2);
}

/*
 * After the agreement found a rank lost: its server moves to the next surviving rank, every
 * holder takes back what it applied from it this round (so the parities are those of its state
 * at the round's start, whatever part of this round's messages got through), and its rebuild
 * starts (struct rebuild). A parity rebuilds one server: two lost at once, or one lost while
 * another is rebuilt, end the probe on every rank with why.
 */
static int recover(struct rk *k, uint64_t round)
{
	bool *lost = calloc((size_t)k->S, sizeof(bool));
	int *was = calloc((size_t)k->S, sizeof(int));
	int rc = -1, D = -1, nlost = 0;
	if (!lost || !was)
		goto out;
	for (int s = 0; s < k->S; s++) {
		was[s] = k->host[s];
		lost[s] = !k->live[k->host[s]];
		if (lost[s])
			D = s, nlost++;
	}
	if (k->rb.on) {
		sdc_worker_error(k->w, "server %d cannot be rebuilt: server %d was lost during its rebuild (a parity "
				       "rebuilds one lost server at a time)",
				 k->rb.D, D);
		goto out;
	}
	if (nlost > 1) {
		sdc_worker_error(k->w, "%d servers were lost together (server %d the last of them): a parity rebuilds one "
				       "lost server at a time", nlost, D);
		goto out;
	}
	/* what this round's messages from it did to the parities held here, taken back */
	for (size_t i = 0; i < k->nlog; i += 3 + (size_t)k->words) {
		const uint32_t *e = k->log + i;
		if (!lost[e[0]])
			continue;
		const struct sdc_ec_msg m = { .from = e[0], .kind = e[1], .row = e[2] };
		struct server *h = k->srv[holder_of(k, &m)];
		uint32_t *p = m.kind ? h->col : h->held + (size_t)m.row * k->words;
		for (int x = 0; x < k->words; x++)
			p[x] -= e[3 + x];
	}
	int q = k->host[D];
	for (int i = 1; i <= k->P && !k->live[q]; i++)
		q = (k->host[D] + i) % k->P;
	k->host[D] = q;
	hosts_changed(k);
	rc = rb_start(k, D, was[D], round);
out:
	free(lost), free(was);
	return rc;
}

/* ---- setup and the run ---- */

int sdc_ec_ranks_setup(struct sdc_probe_ctx *ctx)
{
	const struct sdc_ec_opts *o = ctx->opts;
	const int S = sdc_fleet.size;
	const struct sdc_ec_layout l = { .servers = S, .k = o->k ? (int)o->k : sdc_ec_auto_k(S), .rows = (int)o->rows,
					 .words = (int)o->dim + 1 };
	char why[256];
	if (sdc_ec_layout_check(&l, why, sizeof(why)))
		return sdc_ctx_error(ctx, "%s", why);
	sdc_fleet.timeout = o->timeout; /* the gather at the end waits no longer than the probe's waits */
	sdc_strlcpy(ctx->rate_unit, "Mupd/s", sizeof(ctx->rate_unit));
	sdc_strlcpy(ctx->iter_unit, "rounds", sizeof(ctx->iter_unit));
	ctx->rate_scale = 1e6;
	ctx->floor = o->floor;
	return 0;
}

static void rk_free(struct rk *k)
{
	for (int s = 0; k->srv && s < k->S; s++)
		server_free(k->srv[s]);
	for (int p = 0; k->out && p < k->P; p++)
		free(k->out[p]), free(k->in[p]);
	free(k->srv), free(k->host), free(k->live), free(k->out), free(k->in), free(k->nout), free(k->outcap);
	free(k->incap), free(k->cursor), free(k->got), free(k->sp), free(k->rp), free(k->log), free(k->here), free(k->count);
	free(k->done), free(k->start), free(k->rb.q), free(k->rb.who);
}

static int rk_init(struct rk *k, struct sdc_worker *w)
{
	const struct sdc_ec_opts *o = w->ctx->opts;
	k->w = w;
	k->P = k->S = sdc_fleet.size;
	k->me = sdc_fleet.rank;
	k->rebuilt = -1;
	k->d = (int)o->dim, k->words = k->d + 1;
	k->timeout = o->timeout;
	k->l = (struct sdc_ec_layout){ .servers = k->S, .k = o->k ? (int)o->k : sdc_ec_auto_k(k->S), .rows = (int)o->rows,
				       .words = k->words };
	k->wk = (struct sdc_ec_work){ .seed = sdc_variant_seed(w->ctx->variant, w->ctx->seed), .rows = k->l.rows,
				      .d = k->d, .steps = o->steps, .batch = o->batch };
	const size_t P = (size_t)k->P;
	k->host = calloc(P, sizeof(int)), k->live = calloc(P, sizeof(bool)), k->srv = calloc(P, sizeof(*k->srv));
	k->out = calloc(P, sizeof(*k->out)), k->in = calloc(P, sizeof(*k->in)), k->nout = calloc(P, sizeof(size_t));
	k->outcap = calloc(P, sizeof(size_t)), k->incap = calloc(P, sizeof(size_t)), k->cursor = calloc(P, sizeof(size_t));
	k->got = calloc(P, sizeof(size_t));
	k->sp = calloc(P, sizeof(*k->sp)), k->rp = calloc(P, sizeof(*k->rp));
	k->here = calloc(P, sizeof(int)), k->count = calloc(P, sizeof(int));
	k->done = calloc(P, sizeof(uint64_t)), k->start = calloc(P, sizeof(uint64_t));
	if (!k->host || !k->live || !k->srv || !k->out || !k->in || !k->nout || !k->outcap || !k->incap || !k->cursor || !k->got ||
	    !k->sp || !k->rp || !k->here || !k->count || !k->done || !k->start || !(k->srv[k->me] = server_new(k)))
		return -1;
	for (int p = 0; p < k->P; p++)
		k->host[p] = p, k->live[p] = true;
	hosts_changed(k);
	const char *over = getenv("SDCSCAN_TEST_EC_OVERCOUNT");
	k->overcount = over && *over && atoi(over) == k->me;
	sdc_ec_initial(&k->wk, k->me, k->srv[k->me]->shard);
	snprintf(k->operation, sizeof(k->operation), "ecparity %d ranks, k %d, %d entries x %d", k->S, k->l.k, k->l.rows,
		 k->d);
	snprintf(w->kernel, sizeof(w->kernel), "server %d of %d (MPI rank)", k->me, k->S);
	return 0;
}

/* L: this rank is taken away: its servers dropped, the others told, and it leaves the job. */
static bool taken_away(struct rk *k, uint64_t round)
{
	struct sdc_fault lf;
	if (!k->srv[k->me] || !sdc_ec_faults(k->w, k->me, "L", round, &lf, 1))
		return false;
	/* the loss, here (with a row, the rebuilder records the corruption of its copy too) */
	sdc_worker_fault_applied(k->w, &lf, "L", round, -1, -1, -1, "", "");
	for (int s = 0; s < k->S; s++) {
		server_free(k->srv[s]);
		k->srv[s] = NULL;
	}
	hosts_changed(k);
	sdc_fleet_leave(k->live);
	sdc_note("ecparity: rank %d leaves the job at round %" PRIu64 " (--inject L): its servers are rebuilt elsewhere",
		 k->me, round);
	return true;
}

void sdc_ec_ranks_run(struct sdc_worker *w)
{
	struct rk k = { 0 };
	if (rk_init(&k, w)) {
		sdc_worker_error(w, "out of memory for a shard of %d entries", (int)((const struct sdc_ec_opts *)w->ctx->opts)->rows);
		rk_free(&k);
		return;
	}
	bool *before = calloc((size_t)k.P, sizeof(bool)), *all = calloc((size_t)k.S, sizeof(bool));
	int64_t broken = 0;
	bool go_on = true, reencode = false, ended = false;
	uint64_t round = 0;
	if (!before || !all)
		goto out;
	for (int s = 0; s < k.S; s++)
		all[s] = true;
	if (contribute(&k, all, false, &broken))
		goto out;
	/* a rank lost before every parity held its part: nothing can be rebuilt from them */
	for (int p = 0; p < k.P; p++)
		if (!k.live[p]) {
			sdc_worker_error(w, "rank %d (%s) was lost before the parities were built: its server cannot be rebuilt",
					 p, sdc_fleet_host(p));
			goto out;
		}
	for (; go_on; round++) {
		k.nlog = 0;
		memcpy(k.start, k.done, (size_t)k.S * sizeof(uint64_t));
		memcpy(before, k.live, (size_t)k.P);
		if (train_round(&k, round) || resend_round(&k, round))
			break;
		/* a rebuild whose parts all came with this round's messages: in service */
		if (k.rb.on && k.rb.next >= k.rb.slices && rb_install(&k, round))
			break;
		struct server *mine = k.srv[k.me];
		if (mine)
			sdc_ec_rest_faults(w, &k.l, mine->shard, mine->touched, round);
		sdc_worker_fatal_faults(w, round, mine ? (const void *)mine->shard : (const void *)&k);
		if (taken_away(&k, round))
			break;
		/* agree on who is there; rebuild what was lost; verify; again if a rank was lost meanwhile */
		bool verified = false;
		while (!verified) {
			/* whether this rank would go on after this round (it is counted below) */
			/* (a run for its time stops early enough for the end's replay check, about as long
			 * as the training so far, before the deadline: final_check) */
			const bool more = sdc_worker_continue(w) &&
					  !(w->ctx->max_iterations && atomic_load(&w->iterations) + 1 >= w->ctx->max_iterations) &&
					  (w->ctx->max_iterations || sdc_now() + k.train_s < w->ctx->deadline);
			const int lost = agree(&k, more, &go_on, before);
			if (lost < 0)
				goto out;
			if (lost) {
				memcpy(before, k.live, (size_t)k.P);
				if (recover(&k, round))
					goto out;
				/* a rank lost during the recovery leaves parities short: all recomputed once the
				 * ranks agree again (this round's faults at rest go unseen then) */
				reencode |= memcmp(before, k.live, (size_t)k.P) != 0;
				continue;
			}
			if (reencode && contribute(&k, all, false, &broken))
				goto out;
			reencode = false;
			if (contribute(&k, all, true, &broken) || share_breaks(&k))
				goto out;
			verified = true;
			for (int p = 0; p < k.P; p++)
				verified &= k.live[p] == before[p];
		}
		for (int s = 0; s < k.S; s++) {
			struct server *v = trains(&k, s);
			struct sdc_ec_event ev[2 * MAX_BREAKS];
			const int n = v ? sdc_ec_explain(&k.l, k.sb, k.nsb, k.cb, k.ncb, s, v->shard, v->touched, ev, 2 * MAX_BREAKS) : 0;
			for (int i = 0; i < n; i++) {
				/* a server put in service this round has not moved since the cut: a word of it
				 * that breaks its groups now, still what the rebuild wrote, is the rebuild's
				 * (of the round of the loss) */
				char where[32];
				snprintf(where, sizeof(where), "on rank %d", k.me);
				if (s == k.rebuilt && k.rc.installed == round && sdc_ec_as_rebuild(&k.l, &ev[i], k.rc.rebuilt, where))
					report_event(&k, k.rc.round, &ev[i]);
				else
					report_event(&k, round, &ev[i]);
			}
		}
		/* parities that broke are recomputed by their holders, once the members are right */
		if ((k.nsb || k.ncb) && contribute(&k, all, false, &broken))
			break;
		int held = 0;
		for (int s = 0; s < k.S; s++)
			held += trains(&k, s) != NULL;
		sdc_worker_account(w, (double)(k.wk.steps * k.wk.batch * held));
		/* a rebuild's replay, if it is done and the server has caught up */
		if (!k.rc.running || k.done[k.rc.D] > k.rc.installed + 1)
			finish_replay_check(&k, false);
		ended = !go_on;
	}
	/* the last round's agreement found a rank lost: its server's parts in one exchange */
	if (ended && k.rb.on && !k.cut_off)
		rb_finish_now(&k, round - 1);
out:
	finish_replay_check(&k, true);
	if (ended)
		final_check(&k);
	free(before), free(all);
	rk_free(&k);
}
