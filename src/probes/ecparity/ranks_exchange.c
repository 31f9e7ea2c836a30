/*
 * ecparity across ranks: the exchanges, all-to-all among the live ranks (sdc_mpi_alltoall), each
 * with a tag of its own phase; what a rank sends is put in out[p], what came read from in[p] with
 * a cursor, never past what arrived. The difference messages (struct sdc_ec_msg) read from them:
 * checked (CRC32C, then addressed to a server held here), applied to the held parities and logged
 * for a loss to take back; one that failed its CRC asked again of its sender (resend_round).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/ecparity/ranks.h"
#include "base/message.h"

/* Words to rank p in the next exchange, after what is already there. */
int sdc_ec_rk_put(struct sdc_ec_rk *k, int p, const uint32_t *v, size_t words)
{
	if (sdc_ec_rk_grow(&k->x.out[p], &k->x.outcap[p], k->x.nout[p] + words))
		return -1;
	memcpy(k->x.out[p] + k->x.nout[p], v, words * 4);
	k->x.nout[p] += words;
	return 0;
}

/* The next exchange's buffers emptied. */
void sdc_ec_rk_clear_out(struct sdc_ec_rk *k)
{
	for (int p = 0; p < k->P; p++)
		k->x.nout[p] = 0;
}

/* The next `words` words that came from rank p, or NULL when p sent fewer than that (a peer's
 * bytes are checked against what arrived, never trusted). */
const uint32_t *sdc_ec_rk_take(struct sdc_ec_rk *k, int p, size_t words)
{
	if (k->x.cursor[p] + words > k->x.got[p])
		return NULL;
	const uint32_t *v = k->x.in[p] + k->x.cursor[p];
	k->x.cursor[p] += words;
	return v;
}

/*
 * The exchange of out[] for in[] among the live ranks; in[p] must hold cap[p] words. Returns the
 * ranks newly lost, or -1 when this rank was cut off or out of memory.
 */
int sdc_ec_rk_exchange(struct sdc_ec_rk *k, int tag, const size_t *cap)
{
	for (int p = 0; p < k->P; p++) {
		if (sdc_ec_rk_grow(&k->x.in[p], &k->x.incap[p], cap[p] ? cap[p] : 1))
			return sdc_worker_error(k->w, "out of memory for the messages"), -1;
		k->x.cursor[p] = 0;
		k->x.sp[p] = (struct sdc_mpi_part){ k->x.out[p], (int)(k->x.nout[p] * 4) };
		k->x.rp[p] = (struct sdc_mpi_part){ k->x.in[p], (int)(cap[p] * 4) };
	}
	/* what this rank sends itself goes through the same reading as a peer's */
	const size_t self = k->x.nout[k->me] < cap[k->me] ? k->x.nout[k->me] : cap[k->me];
	if (self) /* (an empty buffer may be NULL, which memcpy may not be given even for 0 bytes) */
		memcpy(k->x.in[k->me], k->x.out[k->me], self * 4);
	const int n = sdc_mpi_alltoall(k->x.sp, k->x.rp, k->x.live, tag, k->x.timeout);
	for (int p = 0; p < k->P; p++)
		k->x.got[p] = p == k->me ? self : k->x.live[p] ? (size_t)k->x.rp[p].bytes / 4 : 0;
	if (n < 0) {
		k->x.cut_off = true;
		sdc_worker_error(k->w, "this rank was taken as lost by the others (it kept them waiting over %.0f s): it "
				       "leaves the ecparity job",
				 k->x.timeout);
	}
	return n;
}

/* The server whose parity a message moves. */
int sdc_ec_rk_holder_of(const struct sdc_ec_rk *k, const struct sdc_ec_msg *m)
{
	return m->kind ? sdc_ec_column_parity_server(&k->l, (int)m->from)
		       : sdc_ec_stripe_parity_server(&k->l, (int)m->row, sdc_ec_chunk_of(&k->l, (int)m->from, (int)m->row));
}

static void apply(struct sdc_ec_rk *k, const struct sdc_ec_msg *m)
{
	struct sdc_ec_rk_server *h = k->at.srv[sdc_ec_rk_holder_of(k, m)];
	if (!m->kind)
		sdc_ec_rk_keep(k, h, 1, (int)m->row);
	uint32_t *p = m->kind ? h->col : h->held + (size_t)m->row * k->l.words;
	for (int x = 0; x < k->l.words; x++)
		p[x] += m->diff[x];
	/* logged: taken back if the sender turns out lost this round */
	if (!sdc_ec_rk_grow(&k->msg.log, &k->msg.logcap, k->msg.nlog + 3 + (size_t)k->l.words)) {
		uint32_t *e = k->msg.log + k->msg.nlog;
		e[0] = m->from, e[1] = m->kind, e[2] = m->row;
		memcpy(e + 3, m->diff, 4 * (size_t)k->l.words);
		k->msg.nlog += 3 + (size_t)k->l.words;
	}
}

/* The fields that must hold before a message is used: it is for a server held here, from a
 * server the sender holds. (Its CRC32C is checked before any of them.) */
static bool addressed_here(const struct sdc_ec_rk *k, const struct sdc_ec_msg *m, int p)
{
	return m->from < (uint32_t)k->S && m->row < (uint32_t)k->l.rows && m->kind < 2 && k->at.host[m->from] == p &&
	       k->at.srv[sdc_ec_rk_holder_of(k, m)];
}

void sdc_ec_rk_report_event(struct sdc_ec_rk *k, uint64_t round, const struct sdc_ec_event *e)
{
	struct sdc_finding f;
	sdc_ec_finding(&f, k->operation, round, e);
	sdc_worker_report(k->w, &f);
}

/* Reads the messages rank p sent in this exchange: count, then records. */
int sdc_ec_rk_read_messages(struct sdc_ec_rk *k, int p, uint64_t round, bool resend)
{
	const uint32_t *n = sdc_ec_rk_take(k, p, 1);
	if (!n)
		return 0; /* (a rank lost in the exchange sent nothing) */
	const size_t count = *n;
	for (size_t i = 0; i < count; i++) {
		const uint32_t *v = sdc_ec_rk_take(k, p, sdc_ec_rk_record(k));
		if (!v)
			return sdc_worker_error(k->w, "rank %d (%s) said it sent %zu messages and sent fewer: refused", p,
						sdc_mpi_host(p), count),
			       -1;
		struct sdc_ec_msg m;
		memcpy(&m, v, sdc_ec_rk_record(k) * 4);
		if (!sdc_ec_msg_intact(&m, k->l.words)) {
			if (resend) {
				struct sdc_ec_event e = { .owner = -1, .row = (int)m.row, .col = -1 };
				sdc_strlcpy(e.kind, "difference-corrupt", sizeof(e.kind));
				sdc_strlcpy(e.target, "M", sizeof(e.target));
				snprintf(e.detail, sizeof(e.detail),
					 "a difference from rank %d (%s) failed its CRC32C twice, sent and sent again: the link "
					 "to rank %d changes it; its parity is recomputed from the members",
					 p, sdc_mpi_host(p), k->me);
				sdc_ec_rk_report_event(k, round, &e);
			} else if (k->msg.npend < SDC_EC_RK_MAX_PENDING)
				k->msg.pend[k->msg.npend++] = (struct sdc_ec_rk_pending){ .m = m, .rank = p };
			continue;
		}
		if (!addressed_here(k, &m, p))
			return sdc_worker_error(k->w, "rank %d (%s) sent a message with a good CRC32C for server %u's entry %u "
						      "that is not for this rank: the ranks disagree on the layout",
						p, sdc_mpi_host(p), m.from, m.row),
			       -1;
		if (resend) {
			/* the sender's copy names what changed on the way */
			for (int j = 0; j < k->msg.npend; j++) {
				struct sdc_ec_rk_pending *q = &k->msg.pend[j];
				if (q->rank != p || q->m.seq != m.seq || q->m.from != m.from)
					continue;
				struct sdc_ec_event e = { .owner = (int)m.from, .row = (int)m.row, .col = -1 };
				for (int x = 0; x < k->l.words && e.col < 0; x++)
					if (q->m.diff[x] != m.diff[x])
						e.col = x, e.expected = m.diff[x], e.actual = q->m.diff[x];
				sdc_strlcpy(e.kind, "difference-corrupt", sizeof(e.kind));
				sdc_strlcpy(e.target, "M", sizeof(e.target));
				snprintf(e.detail, sizeof(e.detail),
					 "a difference of server %u's entry %u failed its CRC32C from rank %d (%.20s) to rank %d: "
					 "the link (memory or transport) changed it; applied as sent again",
					 m.from, m.row, p, sdc_mpi_host(p), k->me);
				sdc_ec_rk_report_event(k, round, &e);
				q->rank = -1;
			}
		}
		apply(k, &m);
	}
	return 0;
}

/* The messages that failed their CRC32C asked for again from their senders, and applied. */
int sdc_ec_rk_resend_round(struct sdc_ec_rk *k, uint64_t round)
{
	size_t *cap = calloc((size_t)k->P, sizeof(size_t));
	if (!cap)
		return sdc_worker_error(k->w, "out of memory"), -1;
	sdc_ec_rk_clear_out(k);
	int rc = 0;
	for (int p = 0; p < k->P; p++)
		if (k->x.live[p]) {
			uint32_t n = 0;
			for (int i = 0; i < k->msg.npend; i++)
				n += k->msg.pend[i].rank == p;
			rc |= sdc_ec_rk_put(k, p, &n, 1);
			for (int i = 0; i < k->msg.npend; i++)
				if (k->msg.pend[i].rank == p)
					rc |= sdc_ec_rk_put(k, p, (const uint32_t[]){ k->msg.pend[i].m.from, k->msg.pend[i].m.seq }, 2);
			cap[p] = 1 + 2 * SDC_EC_RK_MAX_PENDING;
		}
	if (rc || sdc_ec_rk_exchange(k, SDC_EC_TAG_REQUEST, cap) < 0) {
		free(cap);
		return -1;
	}
	/* what each rank asks for, from the outboxes */
	sdc_ec_rk_clear_out(k);
	for (int p = 0; p < k->P && !rc; p++) {
		if (!k->x.live[p] && p != k->me)
			continue;
		const uint32_t *n = sdc_ec_rk_take(k, p, 1);
		if (k->x.live[p])
			rc |= sdc_ec_rk_put(k, p, (const uint32_t[]){ 0 }, 1);
		for (uint32_t i = 0; n && i < *n && i < SDC_EC_RK_MAX_PENDING && !rc; i++) {
			const uint32_t *q = sdc_ec_rk_take(k, p, 2);
			const struct sdc_ec_rk_server *v = q && q[0] < (uint32_t)k->S ? k->at.srv[q[0]] : NULL;
			if (!v || q[1] >= v->nout) {
				sdc_worker_error(k->w, "rank %d (%s) asked again for a message this rank did not send", p,
						 sdc_mpi_host(p));
				rc = -1;
				break;
			}
			k->x.out[p][0]++;
			rc |= sdc_ec_rk_put(k, p, (const uint32_t *)&v->outbox[q[1]], sdc_ec_rk_record(k));
		}
	}
	for (int p = 0; p < k->P; p++)
		cap[p] = k->x.live[p] ? 1 + SDC_EC_RK_MAX_PENDING * sdc_ec_rk_record(k) : 0;
	if (rc || sdc_ec_rk_exchange(k, SDC_EC_TAG_RESEND, cap) < 0) {
		free(cap);
		return -1;
	}
	for (int p = 0; p < k->P && !rc; p++)
		if (k->x.live[p] || p == k->me)
			rc = sdc_ec_rk_read_messages(k, p, round, true);
	/* asked of a rank lost since: its messages of the round are taken back anyway */
	k->msg.npend = 0;
	free(cap);
	return rc;
}
