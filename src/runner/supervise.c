/*
 * The parent's side of a burn (runner/burn.h), once its leader is spawned (runner/burn_spawn.c): it
 * takes the workers as its own children, reads their records and slots as a peer's bytes, names a
 * worker that crashed, hung or vanished at its device, kills what outlives its deadline and reaps
 * every process. Every wait here has a deadline: poll and waitpid(WNOHANG) in steps, never a
 * blocking join or read.
 */
#include "runner/burn.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/message.h"
#include "base/clock.h"
#include "runner/burn_records.h"
#include "runner/crash.h"
#include "mpi/transport.h"

static struct sdc_burn_slot *slot_at(const struct sdc_burn *b, int i)
{
	return sdc_burn_slot_at(b, i);
}

/* ---- findings about a worker's end ---- */

static void end_finding(struct sdc_burn *b, int i, struct sdc_finding *f)
{
	const struct sdc_run *run = b->rq.run;
	sdc_strlcpy(f->probe, b->rq.entry->probe->name, sizeof(f->probe));
	sdc_strlcpy(f->variant, b->rq.variant->name, sizeof(f->variant));
	f->device = i >= 0 ? b->w[i].device : -1;
	snprintf(f->operation, sizeof(f->operation), "%.40s %.40s %s%.12s", f->probe, f->variant,
		 i >= 0 ? "worker on " : "setup", i >= 0 ? run->devices[f->device].id : "");
	f->time_to_failure = sdc_now() - (b->setup_done ? b->setup.t_start : b->t_spawn);
	f->row = f->col = -1;
	sdc_run_add_finding(b->rq.run, f);
}

/* A worker lost to the variant: the others that wait for it stop waiting. */
static void lose(struct sdc_burn *b, int i, enum sdc_burn_end how)
{
	struct sdc_burn_worker *w = &b->w[i];
	if (w->end != SDC_END_RUNNING)
		return;
	w->end = how;
	w->failed = true;
	for (int k = 0; k <= b->rq.nworkers; k++)
		atomic_fetch_add(&slot_at(b, k)->stop.peers_lost, 1);
}

static uint64_t iterations_of(const struct sdc_burn *b, int i)
{
	return atomic_load_explicit(&slot_at(b, i)->progress.iterations, memory_order_relaxed);
}

static void hang(struct sdc_burn *b, int i, const char *why)
{
	struct sdc_burn_worker *w = &b->w[i];
	if (w->end != SDC_END_RUNNING)
		return;
	const char *dev = b->rq.run->devices[w->device].id;
	struct sdc_finding f = { .cls = SDC_FINDING_HANG, .iteration = iterations_of(b, i) };
	sdc_strlcpy(f.kind, "hang", sizeof(f.kind));
	snprintf(f.detail, sizeof(f.detail), "the worker on %s %s (in iteration %" PRIu64 "): killed, the run went on",
		 dev, why, f.iteration);
	end_finding(b, i, &f);
	snprintf(w->error, sizeof(w->error), "%s (in iteration %" PRIu64 ")", why, f.iteration);
	if (w->pid > 0 && !w->reaped && !kill(w->pid, SIGKILL))
		w->killed = true;
	lose(b, i, SDC_END_HUNG);
}

/* Anything else that ends a worker without its work: class error (UNKNOWN). */
static void lost(struct sdc_burn *b, int i, const char *why)
{
	struct sdc_burn_worker *w = &b->w[i];
	if (w->end != SDC_END_RUNNING)
		return;
	struct sdc_finding f = { .cls = SDC_FINDING_ERROR, .iteration = iterations_of(b, i) };
	sdc_strlcpy(f.kind, "worker-lost", sizeof(f.kind));
	snprintf(f.detail, sizeof(f.detail), "the worker on %s %s", b->rq.run->devices[w->device].id, why);
	end_finding(b, i, &f);
	sdc_strlcpy(w->error, why, sizeof(w->error));
	lose(b, i, SDC_END_LOST);
}

/* The crash record of slot i, checked; NULL where there is none (or none that a handler wrote). */
static const struct sdc_burn_crash *crash_record(const struct sdc_burn *b, int slot, int sig, struct sdc_burn_crash *c)
{
	const struct sdc_burn_slot *s = slot_at(b, slot);
	if (atomic_load_explicit(&s->crash.written, memory_order_acquire) != 1)
		return NULL;
	memcpy(c, &s->crash, sizeof(*c));
	if (c->signo != sig || !memchr(c->module, 0, sizeof(c->module)))
		return NULL;
	return c;
}

/* A process of the burn died of signal sig: a crash at its device (i), or at the host (i -1: the
 * leader, in its setup). */
static void died(struct sdc_burn *b, int i, int sig)
{
	const int slot = i >= 0 ? i : b->rq.nworkers;
	struct sdc_burn_crash rec;
	const struct sdc_burn_crash *c = crash_record(b, slot, sig, &rec);
	const uint64_t it = atomic_load_explicit(&slot_at(b, slot)->progress.iterations, memory_order_relaxed);
	/* the host's fault when the kernel raised it or the process sent it to itself (an abort): not
	 * the record's say, which a broken process wrote */
	const pid_t self = i >= 0 ? b->w[i].pid : b->leader;
	const bool fault = c ? c->code > 0 || (c->sender == (int32_t)self && c->code <= 0) : sdc_signal_is_fault(sig);
	struct sdc_crash_seen seen = { .signo = sig, .code = c ? c->code : 0, .recorded = c != NULL, .is_fault = fault,
				       .sender = c ? c->sender : 0, .addr = c ? c->addr : 0, .ip = c ? c->ip : 0,
				       .iteration = c ? c->iteration : it, .module_offset = c ? c->module_offset : 0,
				       .module = c ? c->module : "",
				       .device = i >= 0 ? b->rq.run->devices[b->w[i].device].id : NULL };
	struct sdc_finding f;
	sdc_crash_finding(&seen, &f);
	end_finding(b, i, &f);
	if (i < 0)
		return;
	struct sdc_burn_worker *w = &b->w[i];
	snprintf(w->error, sizeof(w->error), "%s (%s) in iteration %" PRIu64 ", instruction at %.120s", f.signal,
		 f.si_code[0] ? f.si_code : "no record", seen.iteration, f.ip[0] ? f.ip : "unknown");
	w->device_lost = true;
	lose(b, i, seen.is_fault ? SDC_END_CRASHED : SDC_END_LOST);
}

static void drain(struct sdc_burn *b, int *fd, int i);

/* Worker i's process ended with wait status st (what it sent before it died is read first). */
static void ended(struct sdc_burn *b, int i, int st)
{
	struct sdc_burn_worker *w = &b->w[i];
	drain(b, &w->fd, i);
	w->reaped = true;
	if (w->end != SDC_END_RUNNING)
		return; /* (killed as hung: said then) */
	if (WIFSIGNALED(st)) {
		died(b, i, WTERMSIG(st));
		return;
	}
	const int code = WEXITSTATUS(st);
	if (code == 0 && (w->reported || w->corrupt)) {
		w->end = SDC_END_CLEAN; /* (a corrupt one's results were not taken: its finding says so) */
		return;
	}
	char why[160];
	if (code == SDC_BURN_EXIT_NOT_ADOPTED) {
		lost(b, i, "could not start: the run's process did not adopt it in time (its leader did not exit)");
		return;
	}
	snprintf(why, sizeof(why), "exited (code %d) %s", code,
		 w->reported ? "after its results, not as it does" : "without its results, in the middle of its work");
	struct sdc_finding f = { .cls = SDC_FINDING_CRASH, .iteration = iterations_of(b, i) };
	sdc_strlcpy(f.kind, "crash", sizeof(f.kind));
	snprintf(f.detail, sizeof(f.detail),
		 "the worker's process on %s %s (in iteration %" PRIu64 "): a jump its code never makes; the other devices "
		 "went on", b->rq.run->devices[w->device].id, why, f.iteration);
	end_finding(b, i, &f);
	snprintf(w->error, sizeof(w->error), "%s", why);
	w->device_lost = true;
	lose(b, i, SDC_END_CRASHED);
}

/* A record from process i's socket that no sound burn process writes: a finding at its device
 * (its memory or its core is not what it should be), said once; its later records are not read. */
static void corrupt_channel(struct sdc_burn *b, int i, const char *why)
{
	struct sdc_burn_worker *w = i >= 0 ? &b->w[i] : NULL;
	struct sdc_finding f = { .cls = SDC_FINDING_CORRUPTION };
	sdc_strlcpy(f.kind, "channel-corrupt", sizeof(f.kind));
	snprintf(f.detail, sizeof(f.detail),
		 "the %s's process sent the run %s: bytes its code does not write, so its memory or its core is "
		 "corrupt; its later records were not read", i >= 0 ? "worker" : "setup", why);
	end_finding(b, i, &f);
	if (w) {
		w->corruption_findings++;
		w->corrupt = true; /* (its socket is still drained, so it can finish and exit) */
	}
}

/* ---- records ---- */

/* A fleet call made for process i, and its reply. -1: the process takes no reply (a process that
 * calls and does not read is not one this code makes). */
static int reply(struct sdc_burn *b, int i, int fd, const void *req, size_t len)
{
	static unsigned char out[SDC_BURN_RECORD_MAX];
	size_t n = 0;
	struct sdc_burn_head h = { .type = SDC_REC_REPLY, .worker = -1 };
	memcpy(out, &h, sizeof(h));
	const struct sdc_mpi_serving sv = { .window = b->window, .bytes = b->window_bytes,
					      .max_timeout = SDC_MAX(sdc_mpi.timeout, b->rq.entry->common.hang_timeout),
					      .may_stall = b->rq.may_stall };
	if (sdc_mpi_serve(req, len, &sv, out + sizeof(h), sizeof(out) - sizeof(h), &n))
		b->fleet_failed = true; /* (a request it gave up on may still write the window: kept) */
	if (i >= 0)
		b->w[i].since = sdc_now(); /* (it waited on the parent: no time of its own) */
	return send(fd, out, sizeof(h) + n, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)(sizeof(h) + n) ? 0 : -1;
}

static void take_pids(struct sdc_burn *b, const void *p, size_t len)
{
	if (len != (size_t)b->rq.nworkers * sizeof(int32_t)) {
		corrupt_channel(b, -1, "a list of its workers of the wrong size");
		return;
	}
	const int32_t *pids = p;
	for (int i = 0; i < b->rq.nworkers; i++)
		for (int k = 0; k < i; k++)
			if ((pids[i] > 0 && pids[i] == pids[k]) || pids[i] == b->leader) {
				corrupt_channel(b, -1, "a list of its workers that names one process twice");
				return;
			}
	for (int i = 0; i < b->rq.nworkers; i++)
		b->w[i].pid = pids[i] > 0 ? -pids[i] : 0; /* (negative: named, not yet known to be ours) */
	b->pids_named = true;
}

/* One record from process i (-1: the leader). Returns -1 when the channel is to be dropped. */
static int take(struct sdc_burn *b, int i, const unsigned char *buf, size_t n)
{
	struct sdc_burn_head h;
	char why[160] = "";
	if (n < sizeof(h)) {
		corrupt_channel(b, i, "a record shorter than its header");
		return -1;
	}
	memcpy(&h, buf, sizeof(h));
	const void *p = buf + sizeof(h);
	const size_t len = n - sizeof(h);
	const bool leader = i < 0;
	if (h.worker < -1 || h.worker >= b->rq.nworkers || (!leader && h.worker != i)) {
		corrupt_channel(b, i, "a record for a worker it is not");
		return -1;
	}
	struct sdc_burn_worker *w = h.worker >= 0 ? &b->w[h.worker] : NULL;
	union {
		struct sdc_finding f;
		struct sdc_injection inj;
		struct sdc_burn_result r;
		struct sdc_burn_error e;
	} u;
	int at;
	char name[32];
	int how;
	struct sdc_facts *facts;
	switch (h.type) {
	case SDC_REC_SETUP:
		if (!leader || b->setup_done || sdc_burn_check_setup(b, p, len, &b->setup, why, sizeof(why)))
			break;
		b->setup_done = true;
		b->setup_at = sdc_now();
		if (sdc_mpi.active) /* (a probe's timeout, as its setup set it: mpi/transport.h) */
			sdc_mpi.timeout = b->setup.fleet_timeout;
		return 0;
	case SDC_REC_SETUP_FAILED:
		if (!leader || sdc_burn_check_text(p, len, b->setup_error, sizeof(b->setup_error), why, sizeof(why)))
			break;
		if (!b->setup_error[0])
			sdc_strlcpy(b->setup_error, "the setup failed and did not say why", sizeof(b->setup_error));
		return 0;
	case SDC_REC_PIDS:
		if (!leader)
			break;
		take_pids(b, p, len);
		return 0;
	case SDC_REC_FINDING:
		if (sdc_burn_check_finding(b, p, len, &u.f, &at, why, sizeof(why)))
			break;
		if (!leader && at >= 0 && at != i && !b->rq.variant->cross_report) {
			snprintf(why, sizeof(why), "a finding at another worker's device");
			break;
		}
		if (at >= 0 && u.f.cls == SDC_FINDING_CORRUPTION)
			b->w[at].corruption_findings++;
		sdc_run_add_finding(b->rq.run, &u.f);
		return 0;
	case SDC_REC_DROPPED: {
		uint64_t dropped;
		if (len != sizeof(dropped))
			break;
		memcpy(&dropped, p, sizeof(dropped));
		if (!dropped || dropped > 4096) /* (a sound process says at most its batch) */
			break;
		sdc_run_count_dropped_n(b->rq.run, dropped);
		return 0;
	}
	case SDC_REC_INJECTION:
		if (sdc_burn_check_injection(b, p, len, &u.inj, why, sizeof(why)))
			break;
		if (!leader && u.inj.device != w->device && !b->rq.variant->cross_report) {
			snprintf(why, sizeof(why), "an injection at another worker's device");
			break;
		}
		sdc_run_add_injection(b->rq.run, &u.inj);
		return 0;
	case SDC_REC_FACTS:
		if ((w ? ++w->facts : ++b->leader_facts) > SDC_BURN_FACTS_MAX) {
			snprintf(why, sizeof(why), "more facts for the report than any probe states");
			break;
		}
		if (sdc_burn_check_facts(p, len, name, sizeof(name), &how, &facts, why, sizeof(why)))
			break;
		sdc_run_facts_apply(b->rq.run, name, (enum sdc_facts_how)how, facts);
		return 0;
	case SDC_REC_ERROR:
		if (sdc_burn_check_error(p, len, &u.e, why, sizeof(why)))
			break;
		if (!w) { /* the setup's own (facts that could not be sent) */
			sdc_warning("%s/%s: %s", b->rq.entry->probe->name, b->rq.variant->name, u.e.text);
			return 0;
		}
		w->failed = true;
		sdc_strlcpy(w->error, u.e.text, sizeof(w->error));
		if (u.e.lost && !w->device_lost) {
			w->device_lost = true;
			for (int k = 0; k <= b->rq.nworkers; k++)
				atomic_fetch_add(&slot_at(b, k)->stop.peers_lost, 1);
		}
		if (leader) /* (a worker the leader could not start) */
			lost(b, h.worker, u.e.text);
		return 0;
	case SDC_REC_RESULT:
		if (leader || w->reported || sdc_burn_check_result(p, len, &u.r, why, sizeof(why)))
			break;
		w->result = u.r;
		w->reported = true;
		w->reported_at = sdc_now();
		return 0;
	case SDC_REC_CALL:
		if (!b->rq.fleet_calls || !sdc_mpi.active) {
			snprintf(why, sizeof(why), "a call to the other ranks from a variant that makes none");
			break;
		}
		if (reply(b, i, leader ? b->leader_fd : w->fd, p, len)) {
			snprintf(why, sizeof(why), "calls to the other ranks whose replies it does not read");
			break;
		}
		return 0;
	default:
		break;
	}
	if (!why[0])
		snprintf(why, sizeof(why), "a record of type %u where none is due", h.type);
	corrupt_channel(b, i, why);
	return -1;
}

/* Every record waiting on fd, from process i; closes it at its end. */
static void drain(struct sdc_burn *b, int *fd, int i)
{
	static unsigned char buf[SDC_BURN_RECORD_MAX + 64];
	/* (a bounded share a call: a process that floods its socket does not keep the parent from its
	 * deadlines; the rest waits for the next tick) */
	for (int taken = 0; *fd >= 0 && taken < 4096; taken++) {
		const ssize_t n = recv(*fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) { /* its end: every copy of its socket closed (it exited) */
			close(*fd);
			*fd = -1;
			return;
		}
		if ((size_t)n > sizeof(buf)) {
			corrupt_channel(b, i, "a record longer than any");
			return;
		}
		if (i >= 0 && b->w[i].corrupt)
			continue;
		if (take(b, i, buf, (size_t)n) && i < 0) {
			close(*fd);
			*fd = -1;
		}
	}
}

/* ---- waiting ---- */

double sdc_burn_setup_limit(double hang_timeout)
{
	return SDC_MAX(30.0, 4 * hang_timeout);
}

/* The leader's end: its workers are now this process's children, each checked to be one (a
 * waitpid that names it) before anything is done to it. */
static void leader_ended(struct sdc_burn *b, int st)
{
	b->leader_reaped = true;
	drain(b, &b->leader_fd, -1);
	if (!b->setup_done) {
		if (WIFSIGNALED(st))
			died(b, -1, WTERMSIG(st));
		else if (!b->setup_error[0])
			snprintf(b->setup_error, sizeof(b->setup_error), "the variant's process exited (code %d) without %s",
				 WEXITSTATUS(st), WEXITSTATUS(st) == SDC_BURN_EXIT_BAD_ORDER ? "reading its order" : "its setup");
		if (WIFSIGNALED(st))
			snprintf(b->setup_error, sizeof(b->setup_error), "the variant's setup died of %s",
				 sdc_signal_name(WTERMSIG(st)));
		return;
	}
	for (int i = 0; i < b->rq.nworkers; i++) {
		struct sdc_burn_worker *w = &b->w[i];
		if (w->end != SDC_END_RUNNING)
			continue;
		const pid_t named = w->pid < 0 ? -w->pid : (pid_t)atomic_load(&w->slot->pid);
		bool twice = false; /* (a slot's pid is the process's own word: one another worker has is refused) */
		for (int k = 0; k < i; k++)
			twice |= named > 0 && b->w[k].pid == named;
		int wst;
		const pid_t r = named > 0 && !twice && named != b->leader ? waitpid(named, &wst, WNOHANG) : -1;
		if (r < 0) {
			lost(b, i, named > 0 ? "could not be supervised: the process its leader named is not the run's child"
					     : "was never started (its leader ended before it said its pid)");
			continue;
		}
		w->pid = named;
		w->since = sdc_now();
		if (r == named)
			ended(b, i, wst);
	}
}

static void reap(struct sdc_burn *b)
{
	int st;
	if (b->leader > 0 && !b->leader_reaped && waitpid(b->leader, &st, WNOHANG) == b->leader)
		leader_ended(b, st);
	for (int i = 0; i < b->rq.nworkers; i++) {
		struct sdc_burn_worker *w = &b->w[i];
		if (w->pid <= 0 || w->reaped)
			continue;
		const pid_t r = waitpid(w->pid, &st, WNOHANG);
		if (r == w->pid) {
			ended(b, i, st);
		} else if (r < 0 && errno == ECHILD) {
			/* (not this process's child any more: nothing more is to be done to that pid) */
			w->reaped = true;
			lost(b, i, "is no longer the run's child: it cannot be waited for");
		}
	}
}

/* Waits up to `wait` seconds for a record on any open socket; takes every record there is. */
static void poll_records(struct sdc_burn *b, double wait)
{
	struct pollfd *pfd = b->polls;
	int *who = b->poll_who, n = 0;
	if (b->leader_fd >= 0)
		pfd[n] = (struct pollfd){ b->leader_fd, POLLIN, 0 }, who[n++] = -1;
	for (int i = 0; i < b->rq.nworkers; i++)
		if (b->w[i].fd >= 0)
			pfd[n] = (struct pollfd){ b->w[i].fd, POLLIN, 0 }, who[n++] = i;
	if (!n) {
		wait = SDC_MAX(0.0, wait);
		const struct timespec t = { (time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9) };
		nanosleep(&t, NULL);
		return;
	}
	if (poll(pfd, (nfds_t)n, wait > 0 ? (int)(wait * 1000) + 1 : 0) <= 0)
		return;
	for (int k = 0; k < n; k++)
		if (pfd[k].revents)
			drain(b, who[k] < 0 ? &b->leader_fd : &b->w[who[k]].fd, who[k]);
}

int sdc_burn_wait_setup(struct sdc_burn *b, void (*poll_interrupt)(void))
{
	if (!b->leader)
		return -1;
	const double limit = sdc_burn_setup_limit(b->rq.entry->common.hang_timeout), until = b->t_spawn + limit;
	while (!b->setup_done && !b->setup_error[0] && !b->leader_reaped) {
		if (poll_interrupt)
			poll_interrupt();
		if (sdc_stop_interrupted()) {
			b->interrupted = true;
			sdc_strlcpy(b->setup_error, "the run was interrupted during this variant's setup", sizeof(b->setup_error));
			break;
		}
		if (sdc_now() >= until) {
			struct sdc_finding f = { .cls = SDC_FINDING_HANG };
			sdc_strlcpy(f.kind, "hang", sizeof(f.kind));
			snprintf(f.detail, sizeof(f.detail),
				 "the variant's setup did not finish within %.0f s: killed, the run went on", limit);
			end_finding(b, -1, &f);
			snprintf(b->setup_error, sizeof(b->setup_error), "its setup did not finish within %.0f s", limit);
			break;
		}
		poll_records(b, SDC_MIN(0.1, until - sdc_now()));
		reap(b);
	}
	if (b->setup_done)
		return 0;
	if (!b->leader_reaped && !kill(b->leader, SIGKILL)) {
		int st;
		for (double end = sdc_now() + SDC_BURN_KILL_GRACE; sdc_now() < end;) {
			if (waitpid(b->leader, &st, WNOHANG) == b->leader) {
				b->leader_reaped = true;
				break;
			}
			const struct timespec t = { 0, 10 * 1000 * 1000 };
			nanosleep(&t, NULL);
		}
	}
	for (int i = 0; i < b->rq.nworkers; i++)
		b->w[i].end = SDC_END_LOST;
	return -1;
}

/* The digests in worker i's ring, checked (consecutive iterations) and handed on. */
static void take_digests(struct sdc_burn *b, int i)
{
	struct sdc_burn_worker *w = &b->w[i];
	struct sdc_burn_slot *s = w->slot;
	const uint64_t head = atomic_load_explicit(&s->ring_head, memory_order_acquire);
	uint64_t tail = atomic_load_explicit(&s->ring_tail, memory_order_relaxed);
	if (head - tail > SDC_BURN_RING) {
		corrupt_channel(b, i, "a digest ring that claims more than it holds");
		atomic_store(&s->ring_tail, head);
		w->digest_next = UINT64_MAX; /* (nothing more from it is compared) */
		return;
	}
	for (; tail != head; tail++) {
		const struct sdc_burn_digest d = s->ring[tail % SDC_BURN_RING];
		if (w->digest_next == UINT64_MAX)
			continue;
		if (d.iteration != w->digest_next) {
			corrupt_channel(b, i, "a result digest out of order");
			w->digest_next = UINT64_MAX; /* (its lane leaves the vote: runner/variant.c) */
			continue;
		}
		w->digest_next++;
		if (b->on_digest)
			b->on_digest(b->arg, i, d.iteration, d.digest);
		if (d.iteration < SDC_WORK_DIGEST_ITERATIONS) {
			uint8_t le[8];
			for (int k = 0; k < 8; k++)
				le[k] = (uint8_t)(d.digest >> (8 * k));
			sdc_sha256_update(&w->work, le, sizeof(le));
			if (d.iteration + 1 == SDC_WORK_DIGEST_ITERATIONS) {
				sdc_sha256_final(&w->work, w->work_digest);
				w->work_done = true;
			}
		}
	}
	atomic_store_explicit(&s->ring_tail, tail, memory_order_release);
}

/* Names hung a worker with no progress (iterations, heartbeats) for timeout seconds, and one
 * that sent its result but did not exit. */
static void watch(struct sdc_burn *b, double timeout)
{
	const double now = sdc_now();
	for (int i = 0; i < b->rq.nworkers; i++) {
		struct sdc_burn_worker *w = &b->w[i];
		if (w->end != SDC_END_RUNNING || w->pid <= 0)
			continue;
		if (w->reported) {
			/* (a GPU's process lets the driver tear its context down at its exit: longer) */
			const bool gpu = b->rq.run->devices[w->device].kind == SDC_DEVICE_GPU;
			const double grace = gpu ? SDC_BURN_EXIT_GRACE_GPU : SDC_BURN_EXIT_GRACE;
			if (now - w->reported_at > grace) {
				char why[160];
				snprintf(why, sizeof(why), "sent its results but did not exit within %.0f s: stuck at its exit (a "
					 "lock its exit needed, or its heap)", grace);
				hang(b, i, why);
			}
			continue;
		}
		const uint64_t p = atomic_load(&w->slot->progress.iterations) + atomic_load(&w->slot->progress.heartbeat);
		if (p != w->seen || !w->since) {
			w->seen = p, w->since = now;
			continue;
		}
		if (now - w->since >= timeout) {
			char why[200];
			snprintf(why, sizeof(why), "finished no iteration and sent no heartbeat for %.0f s: stuck (a livelock, "
				 "a deadlock, a stuck GPU lane, or the host stopping it)", timeout);
			hang(b, i, why);
		}
	}
}

void sdc_burn_tick(struct sdc_burn *b, double wait, double hang_timeout)
{
	poll_records(b, wait);
	/* the leader forks its workers and exits: one still there long after is stuck (its workers
	 * wait to be adopted; killed, they are) */
	if (b->setup_done && !b->leader_reaped && b->leader > 0 && sdc_now() - b->setup_at > SDC_BURN_LEADER_EXIT &&
	    !b->leader_killed && !kill(b->leader, SIGKILL)) {
		b->leader_killed = true;
		sdc_warning("%s/%s: the variant's process did not exit within %.0f s of its setup: killed", b->rq.entry->probe->name,
			    b->rq.variant->name, SDC_BURN_LEADER_EXIT);
	}
	reap(b);
	for (int i = 0; i < b->rq.nworkers; i++) {
		struct sdc_burn_worker *w = &b->w[i];
		if (w->fd >= 0 || w->end != SDC_END_RUNNING || !w->reaped)
			take_digests(b, i);
		if (!w->t_burn) {
			const uint64_t bits = atomic_load(&w->slot->t_burn);
			double t;
			memcpy(&t, &bits, sizeof(t));
			if (bits && isfinite(t) && t >= b->t_spawn && t <= sdc_now() + 1)
				w->t_burn = t;
		}
	}
	watch(b, hang_timeout);
}

void sdc_burn_signal(struct sdc_burn *b, bool stop, bool hard, bool interrupted)
{
	for (int i = 0; b->slots && i <= b->rq.nworkers; i++) {
		struct sdc_stop_flags *f = &slot_at(b, i)->stop;
		if (interrupted)
			atomic_store(&f->interrupted, true);
		if (hard)
			atomic_store(&f->hard, true);
		if (stop || hard || interrupted)
			atomic_store(&f->requested, true);
	}
}

int sdc_burn_running(const struct sdc_burn *b)
{
	int n = 0;
	for (int i = 0; i < b->rq.nworkers; i++)
		n += b->w[i].end == SDC_END_RUNNING;
	return n;
}

void sdc_burn_finish(struct sdc_burn *b, const char *why)
{
	sdc_burn_signal(b, true, true, false);
	poll_records(b, 0);
	reap(b);
	for (int i = 0; i < b->rq.nworkers; i++) {
		struct sdc_burn_worker *w = &b->w[i];
		if (w->end == SDC_END_RUNNING && w->pid > 0)
			hang(b, i, why);
		else if (w->end == SDC_END_RUNNING)
			lost(b, i, "was never supervised (its process was not known to the run)");
		/* (one that ended in the run's eyes, lost or hung, may still be alive: killed all the same) */
		if (w->pid > 0 && !w->reaped && !w->killed && !kill(w->pid, SIGKILL))
			w->killed = true;
	}
	if (b->leader > 0 && !b->leader_reaped)
		kill(b->leader, SIGKILL);
	/* every process reaped, within a deadline: one in an uninterruptible sleep (a GPU driver's
	 * call) is left to init, and said */
	const double until = sdc_now() + SDC_BURN_KILL_GRACE;
	for (;;) {
		poll_records(b, 0.01);
		reap(b);
		bool left = b->leader > 0 && !b->leader_reaped;
		for (int i = 0; i < b->rq.nworkers; i++)
			left |= b->w[i].pid > 0 && !b->w[i].reaped;
		if (!left || sdc_now() >= until)
			break;
	}
	for (int i = 0; i < b->rq.nworkers; i++) {
		struct sdc_burn_worker *w = &b->w[i];
		take_digests(b, i);
		if (w->pid > 0 && !w->reaped)
			sdc_warning("the worker's process on %s (pid %d) did not die within %.0f s of SIGKILL (an "
				    "uninterruptible wait in the kernel): left behind", b->rq.run->devices[w->device].id,
				    (int)w->pid, SDC_BURN_KILL_GRACE);
		if (w->fd >= 0)
			close(w->fd);
		w->fd = -1;
	}
	if (b->leader_fd >= 0)
		close(b->leader_fd);
	b->leader_fd = -1;
}

void sdc_burn_release(struct sdc_burn *b)
{
	for (int i = 0; b->w && i < b->rq.nworkers; i++) {
		if (b->w[i].fd >= 0)
			close(b->w[i].fd);
		if (b->w[i].work.ctx)
			sdc_sha256_release(&b->w[i].work);
	}
	if (b->leader_fd >= 0)
		close(b->leader_fd);
	if (b->slots)
		munmap(b->slots, b->slots_bytes);
	/* (after a fleet call that failed, MPI may still hold a request into the window: it stays
	 * mapped to the process's end, so a late message lands in memory nobody reuses) */
	if (b->window && !b->fleet_failed)
		munmap(b->window, b->window_bytes);
	free(b->w);
	free(b->polls);
	free(b->poll_who);
	memset(b, 0, sizeof(*b));
}
