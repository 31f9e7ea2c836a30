/* The records of a burn's channel (runner/burn_records.h): the sending side and the parent's checks. */
#include "runner/burn_records.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "base/message.h"
#include "base/clock.h"
#include "run/facts_json.h"
#include "base/json_load.h"

size_t sdc_burn_slot_stride(void)
{
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	return (sizeof(struct sdc_burn_slot) + page - 1) / page * page;
}

/* ---- a burn process's side ---- */

/* The findings counted but not kept, said in one record (a bad core fails thousands a second). */
static void flush_dropped(struct sdc_burn_sink *s)
{
	if (!s->dropped)
		return;
	const uint64_t n = s->dropped;
	s->dropped = 0;
	sdc_burn_send(s, SDC_REC_DROPPED, s->worker, &n, sizeof(n));
}

static void sink_finding(void *arg, const struct sdc_finding *f)
{
	struct sdc_burn_sink *s = arg;
	flush_dropped(s);
	sdc_burn_send(s, SDC_REC_FINDING, s->worker, f, sizeof(*f));
}

static void sink_dropped(void *arg)
{
	struct sdc_burn_sink *s = arg;
	if (++s->dropped >= 4096)
		flush_dropped(s);
}

static void sink_injection(void *arg, const struct sdc_injection *inj)
{
	struct sdc_burn_sink *s = arg;
	sdc_burn_send(s, SDC_REC_INJECTION, s->worker, inj, sizeof(*inj));
}

static void sink_facts(void *arg, const char *name, int how, const struct sdc_facts *f)
{
	struct sdc_burn_sink *s = arg;
	char *text = json_dumps(sdc_facts_json((struct sdc_facts *)f), JSON_COMPACT | JSON_PRESERVE_ORDER |
										   JSON_REAL_PRECISION(17));
	struct sdc_burn_facts_head h = { .how = how };
	sdc_strlcpy(h.name, name, sizeof(h.name));
	const size_t n = text ? strlen(text) + 1 : 0;
	char *rec = text ? malloc(sizeof(h) + n) : NULL;
	if (rec && sizeof(h) + n <= SDC_BURN_RECORD_MAX) {
		memcpy(rec, &h, sizeof(h));
		memcpy(rec + sizeof(h), text, n);
		sdc_burn_send(s, SDC_REC_FACTS, s->worker, rec, sizeof(h) + n);
	} else {
		struct sdc_burn_error e = { 0 };
		snprintf(e.text, sizeof(e.text), "the %s facts for the report (%zu bytes) could not be sent to the run", name, n);
		sdc_burn_send(s, SDC_REC_ERROR, s->worker, &e, sizeof(e));
	}
	free(rec);
	free(text);
}

static void sink_error(void *arg, int worker, const char *text, bool lost)
{
	struct sdc_burn_error e = { .lost = lost };
	sdc_strlcpy(e.text, text, sizeof(e.text));
	sdc_burn_send(arg, SDC_REC_ERROR, worker, &e, sizeof(e));
}

static void sink_digest(void *arg, uint64_t iteration, uint64_t digest)
{
	sdc_burn_push_digest(arg, iteration, digest);
}

void sdc_burn_sink_init(struct sdc_burn_sink *s, int fd, int worker, struct sdc_burn_slot *slot)
{
	s->sink = (struct sdc_run_sink){ sink_finding, sink_dropped, sink_injection, sink_facts, sink_error, sink_digest, s };
	s->fd = fd;
	s->worker = worker;
	s->slot = slot;
	s->digests_off = false;
	/* a parent that takes nothing for this long is gone or stuck: the record is dropped, said */
	const struct timeval tv = { 30, 0 };
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

int sdc_burn_sink_window(struct sdc_burn_sink *s, int fd, size_t bytes)
{
	void *w = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (w == MAP_FAILED)
		return -1;
	s->window = w;
	s->window_bytes = bytes;
	return 0;
}

struct sdc_burn_sink *sdc_burn_sink_of(const struct sdc_run *run)
{
	return run->sink ? (struct sdc_burn_sink *)run->sink->arg : NULL;
}

int sdc_burn_send(struct sdc_burn_sink *s, enum sdc_burn_record_type type, int worker, const void *payload,
		  size_t len)
{
	struct sdc_burn_head h = { .type = (uint32_t)type, .worker = worker };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)payload, len } };
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
	ssize_t n;
	do /* wait-ok: a burn process's side, bounded by SO_SNDTIMEO (and the parent kills it) */
		n = sendmsg(s->fd, &m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)(sizeof(h) + len) ? 0 : -1;
}

int sdc_burn_send_text(struct sdc_burn_sink *s, enum sdc_burn_record_type type, const char *text)
{
	char buf[256];
	sdc_strlcpy(buf, text, sizeof(buf));
	return sdc_burn_send(s, type, s->worker, buf, strlen(buf) + 1);
}

void sdc_burn_send_result(struct sdc_burn_sink *s, const struct sdc_worker *w)
{
	struct sdc_burn_result r = { .iterations = sdc_worker_iterations(w), .corruptions = w->corruptions, .ops = w->ops,
				     .t_start = w->t_start, .t_end = w->t_end, .ref_rate = w->ref_rate,
				     .no_floor = w->no_floor, .failed = w->failed, .device_lost = w->device_lost };
	sdc_strlcpy(r.kernel, w->kernel, sizeof(r.kernel));
	sdc_strlcpy(r.ref_name, w->ref_name, sizeof(r.ref_name));
	sdc_strlcpy(r.error, w->error, sizeof(r.error));
	flush_dropped(s);
	sdc_burn_send(s, SDC_REC_RESULT, s->worker, &r, sizeof(r));
}

void sdc_burn_push_digest(struct sdc_burn_sink *s, uint64_t iteration, uint64_t digest)
{
	struct sdc_burn_slot *slot = s->slot;
	if (!slot || s->digests_off)
		return;
	const uint64_t head = atomic_load_explicit(&slot->ring_head, memory_order_relaxed);
	/* full: the parent drains every 0.1 s; one that took nothing for 10 s is stuck or gone */
	const double until = sdc_now() + 10;
	while (head - atomic_load_explicit(&slot->ring_tail, memory_order_acquire) >= SDC_BURN_RING) {
		if (sdc_now() > until || sdc_stop_is_hard()) {
			s->digests_off = true;
			struct sdc_burn_error e = { 0 };
			snprintf(e.text, sizeof(e.text), "the run took none of this worker's result digests for 10 s: its "
				 "later iterations are not in the vote");
			sdc_burn_send(s, SDC_REC_ERROR, s->worker, &e, sizeof(e));
			return;
		}
		const struct timespec t = { 0, 1000 * 1000 };
		nanosleep(&t, NULL);
	}
	slot->ring[head % SDC_BURN_RING] = (struct sdc_burn_digest){ iteration, digest };
	atomic_store_explicit(&slot->ring_head, head + 1, memory_order_release);
}

int sdc_burn_fleet_call(void *arg, const void *req, size_t reqlen, void *reply, size_t replymax, size_t *replylen,
			double timeout)
{
	struct sdc_burn_sink *s = arg;
	if (sdc_burn_send(s, SDC_REC_CALL, s->worker, req, reqlen))
		return -1;
	/* the parent makes the call with its own deadlines; this one only bounds a parent that died */
	const double until = sdc_now() + timeout;
	char buf[SDC_BURN_RECORD_MAX];
	for (;;) {
		const double left = until - sdc_now();
		if (left <= 0)
			return -1;
		const struct timeval tv = { (time_t)left, (suseconds_t)((left - (double)(time_t)left) * 1e6) + 1 };
		setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		/* wait-ok: a burn process's side, bounded by SO_RCVTIMEO (and the parent kills it) */
		const ssize_t n = recv(s->fd, buf, sizeof(buf), 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		struct sdc_burn_head h;
		if (n < (ssize_t)sizeof(h))
			return -1;
		memcpy(&h, buf, sizeof(h));
		if (h.type != SDC_REC_REPLY || (size_t)n - sizeof(h) > replymax)
			return -1;
		*replylen = (size_t)n - sizeof(h);
		memcpy(reply, buf + sizeof(h), *replylen);
		return 0;
	}
}

/* ---- the parent's side ---- */

/* Whether a char array holds a string that ends within it; one that does not is ended and said. */
static bool ended(char *s, size_t size)
{
	if (memchr(s, 0, size))
		return true;
	s[size - 1] = 0;
	return false;
}
#define ENDED(x) ended((x), sizeof(x))

static int bad(char *why, size_t whylen, const char *fmt, const char *what)
{
	snprintf(why, whylen, fmt, what);
	return -1;
}

/* The worker whose device d is (-1: the host), or -2 when none of this variant's is. */
static int worker_of_device(const struct sdc_burn *b, int d)
{
	if (d == -1)
		return -1;
	for (int i = 0; i < b->rq.nworkers; i++)
		if (b->w[i].device == d)
			return i;
	return -2;
}

int sdc_burn_check_finding(const struct sdc_burn *b, const void *p, size_t len, struct sdc_finding *f, int *worker,
			   char *why, size_t whylen)
{
	if (len != sizeof(*f))
		return bad(why, whylen, "a finding of the wrong size%s", "");
	memcpy(f, p, sizeof(*f));
	if (!(ENDED(f->probe) & ENDED(f->variant) & ENDED(f->kind) & ENDED(f->operation) & ENDED(f->target) &
	      ENDED(f->expected) & ENDED(f->actual) & ENDED(f->xor_mask) & ENDED(f->expected_value) &
	      ENDED(f->actual_value) & ENDED(f->signal) & ENDED(f->si_code) & ENDED(f->fault_address) & ENDED(f->ip) &
	      ENDED(f->detail)))
		return bad(why, whylen, "a finding with a text that does not end%s", "");
	if ((unsigned)f->cls > SDC_FINDING_HANG)
		return bad(why, whylen, "a finding of no class%s", "");
	if (strcmp(f->probe, b->rq.entry->probe->name) || strcmp(f->variant, b->rq.variant->name))
		return bad(why, whylen, "a finding of another probe or variant (%.60s)", f->probe);
	if ((*worker = worker_of_device(b, f->device)) == -2)
		return bad(why, whylen, "a finding at a device that is not the variant's%s", "");
	/* (a threshold or margin may be inf or NaN: what a fault made of the element) */
	if (!isfinite(f->time_to_failure))
		return bad(why, whylen, "a finding whose time is no number%s", "");
	return 0;
}

int sdc_burn_check_injection(const struct sdc_burn *b, const void *p, size_t len, struct sdc_injection *inj,
			     char *why, size_t whylen)
{
	if (len != sizeof(*inj))
		return bad(why, whylen, "an injection of the wrong size%s", "");
	memcpy(inj, p, sizeof(*inj));
	if (!(ENDED(inj->probe) & ENDED(inj->variant) & ENDED(inj->target) & ENDED(inj->before) & ENDED(inj->after)))
		return bad(why, whylen, "an injection with a text that does not end%s", "");
	if (inj->spec < 0 || inj->spec >= b->rq.run->ninject || worker_of_device(b, inj->device) < 0 ||
	    strcmp(inj->probe, b->rq.entry->probe->name))
		return bad(why, whylen, "an injection no --inject asked for, or at a device not the variant's%s", "");
	return 0;
}

int sdc_burn_check_result(const void *p, size_t len, struct sdc_burn_result *r, char *why, size_t whylen)
{
	if (len != sizeof(*r))
		return bad(why, whylen, "a result of the wrong size%s", "");
	memcpy(r, p, sizeof(*r));
	if (!(ENDED(r->kernel) & ENDED(r->ref_name) & ENDED(r->error)))
		return bad(why, whylen, "a result with a text that does not end%s", "");
	if (!isfinite(r->ops) || r->ops < 0 || !isfinite(r->t_start) || !isfinite(r->t_end) || r->t_end < r->t_start ||
	    !isfinite(r->ref_rate) || r->ref_rate < 0)
		return bad(why, whylen, "a result whose operations, times or rates are no numbers or out of order%s", "");
	return 0;
}

int sdc_burn_check_error(const void *p, size_t len, struct sdc_burn_error *e, char *why, size_t whylen)
{
	if (len != sizeof(*e))
		return bad(why, whylen, "an error of the wrong size%s", "");
	memcpy(e, p, sizeof(*e));
	if (!ENDED(e->text))
		return bad(why, whylen, "an error whose text does not end%s", "");
	return 0;
}

int sdc_burn_check_setup(const struct sdc_burn *b, const void *p, size_t len, struct sdc_burn_setup *su, char *why,
			 size_t whylen)
{
	if (len != sizeof(*su))
		return bad(why, whylen, "a setup record of the wrong size%s", "");
	memcpy(su, p, sizeof(*su));
	if (!(ENDED(su->rate_unit) & ENDED(su->iter_unit)))
		return bad(why, whylen, "a setup record whose unit does not end%s", "");
	const double now = sdc_now();
	if (!isfinite(su->rate_scale) || su->rate_scale <= 0 || !isfinite(su->floor) || su->floor < 0 ||
	    !isfinite(su->t_start) || su->t_start < b->t_spawn || su->t_start > now + 1 || !isfinite(su->setup_seconds) ||
	    su->setup_seconds < 0 || su->setup_seconds > now - b->t_spawn + 1 || !(su->fleet_timeout > 0) ||
	    su->fleet_timeout > 86400)
		return bad(why, whylen, "a setup record whose scale, floor or times are out of range%s", "");
	return 0;
}

int sdc_burn_check_facts(const void *p, size_t len, char *name, size_t namelen, int *how, struct sdc_facts **f,
			 char *why, size_t whylen)
{
	struct sdc_burn_facts_head h;
	if (len <= sizeof(h))
		return bad(why, whylen, "facts of the wrong size%s", "");
	memcpy(&h, p, sizeof(h));
	if (!ENDED(h.name) || !h.name[0] || h.name[strspn(h.name, "abcdefghijklmnopqrstuvwxyz0123456789_-")] ||
	    h.how < SDC_FACTS_MERGE || h.how > SDC_FACTS_REPLACE)
		return bad(why, whylen, "facts with no name a probe gives, or no way to merge them%s", "");
	const char *text = (const char *)p + sizeof(h);
	const size_t n = len - sizeof(h);
	if (text[n - 1])
		return bad(why, whylen, "facts whose text does not end%s", "");
	json_error_t je;
	json_t *j = sdc_json_loadb(text, n - 1, 0, &je);
	if (!json_is_object(j)) {
		json_decref(j);
		return bad(why, whylen, "facts that are not a JSON object (%.80s)", je.text);
	}
	sdc_strlcpy(name, h.name, namelen);
	*how = h.how;
	*f = sdc_facts_of(j);
	return 0;
}

int sdc_burn_check_text(const void *p, size_t len, char *text, size_t textlen, char *why, size_t whylen)
{
	if (!len || len > 256 || ((const char *)p)[len - 1])
		return bad(why, whylen, "a text that does not end%s", "");
	sdc_strlcpy(text, p, textlen);
	return 0;
}
