/* MPI glue for runs across nodes (mpi/transport.h). */
#include "mpi/transport.h"

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sdc_config.h"
#include "base/message.h"
#include "base/clock.h"
#include "mpi/transport_remote.h"

#if HAVE_MPI
#include <mpi.h>
#endif

/* The task count the launcher or scheduler announced (0: none). */
static long announced_tasks(const char **who)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_NTASKS", NULL };
	for (int i = 0; vars[i]; i++) {
		const char *v = getenv(vars[i]);
		if (v && *v) {
			*who = vars[i];
			return strtol(v, NULL, 10);
		}
	}
	return 0;
}

void sdc_mpi_launch_check(struct sdc_run *run)
{
	const char *who = NULL;
	const long n = announced_tasks(&who);
	if (n <= 1 || n == sdc_mpi.size)
		return;
	struct sdc_finding f = { .cls = SDC_FINDING_ERROR, .device = -1, .row = -1, .col = -1 };
	sdc_strlcpy(f.probe, "fleet", sizeof(f.probe));
	sdc_strlcpy(f.kind, "launch-mismatch", sizeof(f.kind));
	snprintf(f.detail, sizeof(f.detail),
		 "%s says %ld tasks but this process sees %d MPI rank%s (%s): the job was not tested as a whole; "
		 "launch with mpirun or srun --mpi=pmix",
		 who, n, sdc_mpi.size, sdc_mpi.size == 1 ? "" : "s",
		 HAVE_MPI ? "is the MPI plugin right?" : "this sdcscan was built without MPI");
	sdc_run_add_finding(run, &f);
	sdc_error("%s", f.detail);
}

#if HAVE_MPI

static MPI_Comm comm = MPI_COMM_NULL;
static char (*hosts)[64];
/* Interrupts travel on a communicator of their own, apart from the probes' traffic: one receive
 * from any rank stays posted, and the main thread tests it between ticks (MPI_THREAD_MULTIPLE). */
static MPI_Comm ctl = MPI_COMM_NULL;
static MPI_Request intr_req = MPI_REQUEST_NULL;
static int32_t intr_buf, intr_me, intr_from = -1;
static bool intr_sent, thread_multiple;
static bool peer_failed;
/* Notices of a rank gone (sdc_mpi_alltoall): its number, plus NOTICE_LEFT when it left on
 * purpose (no MPI failure). */
#define NOTICE_TAG 0x7e0
#define NOTICE_LEFT (1 << 20)
static MPI_Request notice_req = MPI_REQUEST_NULL;
static int32_t notice_buf, *notice_vals;
static bool *left_on_purpose; /* ranks whose NOTICE_LEFT arrived */
/* Heartbeats (sdc_mpi_keepalive): a rank waiting in an exchange, or busy in a long computation
 * between two, says it is there, so a rank blocked behind a lost one is not taken as lost too. */
#define BEAT_TAG 0x7e1
static MPI_Request beat_req = MPI_REQUEST_NULL;
static int32_t beat_buf, beat_val;
static double *heard, last_beat;

/*
 * The watchdog. A deadline on a wait only holds while the MPI library returns from each call;
 * after a peer dies, Open MPI's TCP transport may not (4.1.4 was seen spinning inside one
 * MPI_Test for good: "this local MPI process will likely now behave unpredictably (it may even
 * hang or crash)", its own warning says). Each MPI call that may progress the transport holds a
 * slot with the time it began; a thread checks them every second, and a call inside the library
 * for longer than one deadline plus SDC_FLEET_WATCH_GRACE (mpi/transport.h) ends the process: it says so,
 * with the peers it was waiting on, and exits with watch_code (UNKNOWN, or the agreed verdict
 * once MPI is ending).
 */
#define WATCH_SLOTS 64
static _Atomic int64_t watch_since[WATCH_SLOTS]; /* microseconds of sdc_now(); 0: free */
static _Atomic int64_t watch_limit[WATCH_SLOTS]; /* how long that call may take, microseconds */
static _Atomic int watch_peers[WATCH_SLOTS][2];
static _Atomic int watch_code = SDC_UNKNOWN;

/* A slot for a call of at most `limit` seconds in the library (-1: none free). */
static int watch_enter_for(int dst, int src, double limit)
{
	const int64_t now = (int64_t)(sdc_now() * 1e6) + 1;
	for (int i = 0; i < WATCH_SLOTS; i++) {
		int64_t free_slot = 0;
		if (atomic_compare_exchange_strong(&watch_since[i], &free_slot, now)) {
			/* read here, by the thread that set it, not by the watchdog */
			atomic_store(&watch_limit[i], (int64_t)(limit * 1e6));
			atomic_store(&watch_peers[i][0], dst);
			atomic_store(&watch_peers[i][1], src);
			return i;
		}
	}
	return -1; /* more threads in MPI than slots: that call goes unwatched */
}

static int watch_enter(int dst, int src)
{
	return watch_enter_for(dst, src, sdc_mpi.timeout + SDC_FLEET_WATCH_GRACE);
}

static void watch_leave(int slot)
{
	if (slot >= 0)
		atomic_store(&watch_since[slot], 0);
}

static void *watchdog(void *arg)
{
	(void)arg;
	for (;;) {
		sleep(1);
		const double now = sdc_now();
		for (int i = 0; i < WATCH_SLOTS; i++) {
			const int64_t since = atomic_load(&watch_since[i]), limit = atomic_load(&watch_limit[i]);
			/* (a limit of 0: the slot was taken an instant ago and its limit is not stored yet) */
			if (!since || !limit || now - (double)since / 1e6 < (double)limit / 1e6)
				continue;
			const int dst = watch_peers[i][0], src = watch_peers[i][1];
			char on[160] = "";
			if (dst >= 0 || src >= 0)
				snprintf(on, sizeof(on), " (an exchange: sending to rank %d, receiving from rank %d)", dst, src);
			fprintf(stderr,
				"sdcscan: rank %d (%s): the MPI library has not come back from one call for %.0f s%s: a peer "
				"is gone and the transport is stuck; leaving with exit code %d (the other ranks name the ranks "
				"that did not answer)\n",
				sdc_mpi.rank, sdc_mpi.host, now - (double)since / 1e6, on, atomic_load(&watch_code));
			fflush(stdout);
			fflush(stderr);
			_exit(atomic_load(&watch_code));
		}
	}
	return NULL;
}

/* A library that stops returning, as the allreduce probe's X fault makes one (sdc_mpi_stall):
 * this rank's point-to-point exchanges never come back (the watchdog must end it). */
static atomic_bool stalled;

void sdc_mpi_stall(void)
{
	if (sdc_mpi_remote_on()) {
		sdc_mpi_remote_stall();
		return;
	}
	atomic_store(&stalled, true);
}

/* MPI_Test under the watchdog. */
static int watched_test(MPI_Request *req, int *flag, int dst, int src)
{
	const int slot = watch_enter(dst, src);
	while (dst >= 0 && atomic_load(&stalled))
		sleep(1);
	const int rc = MPI_Test(req, flag, MPI_STATUS_IGNORE);
	watch_leave(slot);
	return rc;
}

/* The same, with the status (whose message completed a receive from any rank). */
static int watched_test_status(MPI_Request *req, int *flag, MPI_Status *st)
{
	const int slot = watch_enter(-1, -1);
	const int rc = MPI_Test(req, flag, st);
	watch_leave(slot);
	return rc;
}

int sdc_mpi_init(int *argc, char ***argv)
{
	const char *who;
	if (announced_tasks(&who) <= 0 && !getenv("OMPI_COMM_WORLD_RANK") && !getenv("PMIX_RANK"))
		return 0; /* not launched by MPI: a single-host run */
	/* A write to a dead peer's TCP socket raises SIGPIPE, which would kill a survivor before it
	 * could name the dead; ignored, the write fails with EPIPE and the transport reports it. */
	signal(SIGPIPE, SIG_IGN);
	int provided;
	/* the watchdog first: the launcher's wire-up and the first collective wait for every rank */
	pthread_t wd;
	if (pthread_create(&wd, NULL, watchdog, NULL) == 0)
		pthread_detach(wd);
	const int slot = watch_enter_for(-1, -1, SDC_FLEET_INIT_SECONDS);
	if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) { /* wait-ok: the watchdog */
		watch_leave(slot);
		return -1;
	}
	MPI_Comm_dup(MPI_COMM_WORLD, &comm); /* wait-ok: under the watchdog */
	watch_leave(slot);
	/* Errors come back as codes, so a dead peer is a finding, not an abort of the job. */
	MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* request errors are raised here */
	MPI_Comm_rank(comm, &sdc_mpi.rank);
	MPI_Comm_size(comm, &sdc_mpi.size);
	gethostname(sdc_mpi.host, sizeof(sdc_mpi.host) - 1);
	hosts = calloc((size_t)sdc_mpi.size, sizeof(*hosts));
	if (!hosts)
		return -1;
	sdc_mpi.active = true;
	if (sdc_mpi_allgather(sdc_mpi.host, 64, hosts, sdc_mpi.timeout)) {
		sdc_error("the ranks did not all exchange host names within %.0f s: some rank is dead or stuck",
			  sdc_mpi.timeout);
		peer_failed = true;
		return -1;
	}
	/* one rank per GPU: a rank's GPU is picked by its place among its host's ranks */
	sdc_mpi.local_size = 0;
	for (int r = 0; r < sdc_mpi.size; r++)
		if (!strcmp(hosts[r], sdc_mpi.host)) {
			sdc_mpi.local_rank += r < sdc_mpi.rank;
			sdc_mpi.local_size++;
		}
	thread_multiple = provided >= MPI_THREAD_MULTIPLE;
	if (thread_multiple) {
		const int dup = watch_enter(-1, -1);
		MPI_Comm_dup(comm, &ctl); /* wait-ok: under the watchdog */
		watch_leave(dup);
		MPI_Comm_set_errhandler(ctl, MPI_ERRORS_RETURN);
		MPI_Irecv(&intr_buf, 1, MPI_INT32_T, MPI_ANY_SOURCE, 1, ctl, &intr_req);
	}
	if (provided < MPI_THREAD_SERIALIZED && sdc_mpi.rank == 0)
		sdc_warning("the MPI library gives thread level %d: the allreduce probe needs MPI_THREAD_SERIALIZED",
			    provided);
	return 0;
}

const char *sdc_mpi_host(int rank)
{
	if (sdc_mpi_remote_on())
		return sdc_mpi_remote_host(rank);
	static char buf[32];
	if (hosts && rank >= 0 && rank < sdc_mpi.size)
		return hosts[rank];
	snprintf(buf, sizeof(buf), "rank %d", rank);
	return buf;
}

bool sdc_mpi_interrupt_poll(bool local, int *from)
{
	if (!sdc_mpi.active || !thread_multiple)
		return false;
	if (intr_from < 0 && intr_req != MPI_REQUEST_NULL) {
		int flag = 0;
		if (watched_test(&intr_req, &flag, -1, -1) == MPI_SUCCESS && flag)
			intr_from = intr_buf;
	}
	/* only an interrupt of this rank's own is passed on, not one it was told of */
	if (local && !intr_sent && intr_from < 0) {
		intr_sent = true;
		intr_me = sdc_mpi.rank;
		for (int r = 0; r < sdc_mpi.size; r++) {
			MPI_Request q;
			/* freed at once: a dead peer must not hold this rank, and an eager message needs no wait */
			if (r != sdc_mpi.rank && MPI_Isend(&intr_me, 1, MPI_INT32_T, r, 1, ctl, &q) == MPI_SUCCESS)
				MPI_Request_free(&q);
		}
	}
	*from = intr_from;
	return intr_from >= 0;
}

void sdc_mpi_end(int code)
{
	if (!sdc_mpi.active)
		return;
	if (peer_failed) {
		/* MPI_Finalize would wait for the dead: leave now, with the verdict's code. */
		fflush(stdout);
		fflush(stderr);
		_exit(code);
	}
	/* Finalize waits on every peer: under the watchdog, with the verdict's code. */
	atomic_store(&watch_code, code);
	watch_enter(-1, -1);
	if (intr_req != MPI_REQUEST_NULL) {
		MPI_Cancel(&intr_req);
		MPI_Wait(&intr_req, MPI_STATUS_IGNORE); /* wait-ok: under the watchdog (watch_enter above) */
	}
	if (notice_req != MPI_REQUEST_NULL) {
		MPI_Cancel(&notice_req);
		MPI_Wait(&notice_req, MPI_STATUS_IGNORE); /* wait-ok: under the watchdog */
	}
	if (beat_req != MPI_REQUEST_NULL) {
		MPI_Cancel(&beat_req);
		MPI_Wait(&beat_req, MPI_STATUS_IGNORE); /* wait-ok: under the watchdog */
	}
	if (ctl != MPI_COMM_NULL)
		MPI_Comm_free(&ctl);
	MPI_Comm_free(&comm);
	MPI_Finalize(); /* wait-ok: under the watchdog */
}

/* Waits for reqs until the deadline; on timeout cancels what is left. Returns -1 and the index late. */
static int wait_all(MPI_Request *reqs, int n, double timeout, int *late_idx, int dst, int src)
{
	const double end = sdc_now() + timeout;
	long spins = 0;
	for (;;) {
		int done = 1;
		for (int i = 0; i < n; i++) {
			if (reqs[i] == MPI_REQUEST_NULL)
				continue;
			int flag = 0;
			if (watched_test(&reqs[i], &flag, dst, src) != MPI_SUCCESS) {
				*late_idx = i;
				peer_failed = true;
				return -1;
			}
			done &= flag;
		}
		if (done)
			return 0;
		if (sdc_now() > end) {
			/* The requests are abandoned, not cancelled: cancelling a send to a dead peer fails too,
			 * and after a dead peer the process leaves without MPI_Finalize (sdc_mpi_end). */
			for (int i = 0; i < n; i++)
				if (reqs[i] != MPI_REQUEST_NULL)
					*late_idx = i;
			peer_failed = true;
			return -1;
		}
		/* Spin first (bandwidth), then give the core away (a long wait for a slow peer). */
		if (++spins > 10000)
			usleep(200);
		else
			sched_yield();
	}
}

static int32_t notice_poll(void);
static void notice_send(int32_t value, const bool *live);

/* Whether nothing, data or heartbeat, has come from rank p for the timeout since a wait began at
 * start: the rule by which both exchanges take a peer as lost. */
static bool silent_since(int p, double start, double timeout)
{
	return sdc_now() - (heard && heard[p] > start ? heard[p] : start) > timeout;
}

/*
 * wait_all for a ring's neighbours (sdc_mpi_exchange): after a rank dies, the rank behind it
 * waits on it, and the ranks behind that one, a step ahead, wait on a live rank whose deadline
 * began a step before theirs. So a neighbour is late only when nothing, data or heartbeat, has
 * come from it for the timeout; this rank beats meanwhile; one that gives up tells every rank
 * which it gave up on, and that notice ends the others' waits naming the same rank.
 */
static int wait_neighbours(MPI_Request *reqs, double timeout, int dst, int src, int *late)
{
	static bool *live; /* the ranks not known to be gone: heartbeats and notices go to them */
	const int P = sdc_mpi.size;
	if (!live && (live = malloc((size_t)P * sizeof(bool))))
		for (int p = 0; p < P; p++)
			live[p] = true;
	if (!live) {
		int idx = -1;
		if (!wait_all(reqs, 4, timeout, &idx, dst, src))
			return 0;
		*late = idx < 2 ? src : dst;
		return -1;
	}
	const double start = sdc_now();
	long spins = 0;
	for (;;) {
		int done = 1, waiting_on[2] = { -1, -1 };
		for (int i = 0; i < 4; i++) {
			if (reqs[i] == MPI_REQUEST_NULL)
				continue;
			const int peer = i < 2 ? src : dst;
			int flag = 0;
			if (watched_test(&reqs[i], &flag, dst, src) != MPI_SUCCESS) {
				*late = peer;
				peer_failed = true;
				return -1;
			}
			if (flag && heard)
				heard[peer] = sdc_now();
			if (!flag)
				waiting_on[i < 2 ? 0 : 1] = peer;
			done &= flag;
		}
		if (done)
			return 0;
		sdc_mpi_keepalive(live, timeout / 5);
		for (int32_t n; (n = notice_poll()) >= 0;) {
			const int p = n & ~NOTICE_LEFT;
			if (p < 0 || p >= P || (n & NOTICE_LEFT))
				continue;
			live[p] = false;
			*late = p == sdc_mpi.rank ? -1 : p; /* (-1: the others gave up on this rank) */
			peer_failed = true;
			return -1;
		}
		for (int k = 0; k < 2; k++) {
			const int p = waiting_on[k];
			if (p < 0 || !silent_since(p, start, timeout))
				continue;
			*late = p;
			live[p] = false;
			peer_failed = true;
			notice_send(p, live);
			return -1;
		}
		/* Spin first (bandwidth), then give the core away (a long wait for a slow peer). */
		if (++spins > 10000)
			usleep(200);
		else
			sched_yield();
	}
}

/* Both sdc_mpi_sendrecv (wait_all: a plain deadline) and sdc_mpi_exchange (wait_neighbours). */
static int exchange(const struct sdc_mpi_part *send, int nsend, int dst, const struct sdc_mpi_part *recv,
		    int nrecv, int src, int tag, double timeout, int *late, bool neighbours)
{
	MPI_Request r[4] = { MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL };
	if (nsend > 2 || nrecv > 2)
		return -1;
	/* Parts with the same source and tag arrive in the order sent (MPI's non-overtaking rule). */
	for (int i = 0; i < nrecv; i++)
		if (recv[i].bytes && MPI_Irecv(recv[i].buf, recv[i].bytes, MPI_BYTE, src, tag, comm, &r[i]) != MPI_SUCCESS) {
			*late = src;
			return -1;
		}
	for (int i = 0; i < nsend; i++)
		if (send[i].bytes &&
		    MPI_Isend(send[i].buf, send[i].bytes, MPI_BYTE, dst, tag, comm, &r[2 + i]) != MPI_SUCCESS) {
			*late = dst;
			return -1;
		}
	if (neighbours)
		return wait_neighbours(r, timeout, dst, src, late);
	int idx = -1;
	if (wait_all(r, 4, timeout, &idx, dst, src)) {
		*late = idx < 2 ? src : dst;
		return -1;
	}
	return 0;
}

int sdc_mpi_exchange(const struct sdc_mpi_part *send, int nsend, int dst, const struct sdc_mpi_part *recv,
		       int nrecv, int src, int tag, double timeout, int *late)
{
	if (sdc_mpi_remote_on())
		return sdc_mpi_remote_exchange(send, nsend, dst, recv, nrecv, src, tag, timeout, late, true);
	return exchange(send, nsend, dst, recv, nrecv, src, tag, timeout, late, true);
}

int sdc_mpi_sendrecv(const void *sbuf, int sbytes, int dst, void *rbuf, int rbytes, int src, int tag,
		       double timeout, int *late)
{
	const struct sdc_mpi_part s = { (void *)sbuf, sbytes }, r = { rbuf, rbytes };
	if (sdc_mpi_remote_on())
		return sdc_mpi_remote_exchange(&s, 1, dst, &r, 1, src, tag, timeout, late, false);
	return exchange(&s, 1, dst, &r, 1, src, tag, timeout, late, false);
}

int sdc_mpi_sum_u64(uint64_t *v, double timeout)
{
	if (sdc_mpi_remote_on())
		return sdc_mpi_remote_sum_u64(v, timeout);
	uint64_t out = 0;
	MPI_Request r;
	/* A collective cannot finish once a member is gone: fail now rather than wait the deadline out. */
	if (peer_failed)
		return -1;
	if (MPI_Iallreduce(v, &out, 1, MPI_UINT64_T, MPI_SUM, comm, &r) != MPI_SUCCESS)
		return -1;
	int idx;
	if (wait_all(&r, 1, timeout, &idx, -1, -1))
		return -1;
	*v = out;
	return 0;
}

int sdc_mpi_allgather(const void *in, int bytes, void *out, double timeout)
{
	if (sdc_mpi_remote_on())
		return sdc_mpi_remote_allgather(in, bytes, out, timeout);
	MPI_Request r;
	if (peer_failed)
		return -1;
	if (MPI_Iallgather(in, bytes, MPI_BYTE, out, bytes, MPI_BYTE, comm, &r) != MPI_SUCCESS)
		return -1;
	int idx;
	return wait_all(&r, 1, timeout, &idx, -1, -1);
}

/* ---- exchanges among members that may be lost (sdc_mpi_alltoall) ---- */


static void notice_send(int32_t value, const bool *live)
{
	if (!notice_vals && !(notice_vals = calloc(2 * (size_t)sdc_mpi.size, sizeof(int32_t))))
		return;
	/* one buffer per value, alive while the sends are: the requests are freed at once (a gone
	 * peer must not hold this rank, and an eager message needs no wait) */
	int32_t *v = &notice_vals[(value & NOTICE_LEFT ? sdc_mpi.size : 0) + (value & ~NOTICE_LEFT)];
	*v = value;
	for (int r = 0; r < sdc_mpi.size; r++) {
		MPI_Request q;
		if (r != sdc_mpi.rank && live[r] && MPI_Isend(v, 1, MPI_INT32_T, r, NOTICE_TAG, comm, &q) == MPI_SUCCESS)
			MPI_Request_free(&q);
	}
}

/* The next notice that has arrived, or -1. */
static int32_t notice_poll(void)
{
	if (notice_req == MPI_REQUEST_NULL &&
	    MPI_Irecv(&notice_buf, 1, MPI_INT32_T, MPI_ANY_SOURCE, NOTICE_TAG, comm, &notice_req) != MPI_SUCCESS)
		return -1;
	int flag = 0;
	if (watched_test(&notice_req, &flag, -1, -1) != MPI_SUCCESS || !flag)
		return -1;
	notice_req = MPI_REQUEST_NULL;
	return notice_buf;
}

/* Takes in every heartbeat that has arrived: heard[rank] = now. */
static void beat_poll(void)
{
	if (!heard && !(heard = calloc((size_t)sdc_mpi.size, sizeof(double))))
		return;
	for (;;) {
		if (beat_req == MPI_REQUEST_NULL &&
		    MPI_Irecv(&beat_buf, 1, MPI_INT32_T, MPI_ANY_SOURCE, BEAT_TAG, comm, &beat_req) != MPI_SUCCESS)
			return;
		int flag = 0;
		MPI_Status st;
		if (watched_test_status(&beat_req, &flag, &st) != MPI_SUCCESS || !flag)
			return;
		beat_req = MPI_REQUEST_NULL;
		if (st.MPI_SOURCE >= 0 && st.MPI_SOURCE < sdc_mpi.size)
			heard[st.MPI_SOURCE] = sdc_now();
	}
}

void sdc_mpi_keepalive(const bool *live, double period)
{
	if (sdc_mpi_remote_on()) {
		sdc_mpi_remote_keepalive(live, period, false);
		return;
	}
	const double now = sdc_now();
	if (now - last_beat >= period) {
		last_beat = now;
		for (int r = 0; r < sdc_mpi.size; r++) {
			MPI_Request q;
			/* freed at once: an eager message needs no wait, and a gone peer must not hold this rank */
			if (r != sdc_mpi.rank && live[r] &&
			    MPI_Isend(&beat_val, 1, MPI_INT32_T, r, BEAT_TAG, comm, &q) == MPI_SUCCESS)
				MPI_Request_free(&q);
		}
	}
	beat_poll();
}

/* Gives up on both requests with rank p: the receive cancelled (so nothing lands in its buffer
 * later), the send left (cancelling a send to a dead peer fails too). */
static void abandon(MPI_Request *r, int p)
{
	if (r[0] != MPI_REQUEST_NULL && MPI_Cancel(&r[0]) == MPI_SUCCESS) {
		int flag = 0;
		/* a cancelled receive completes at once, unless the transport is stuck (then leave it) */
		const double end = sdc_now() + 1;
		while (!flag && sdc_now() < end && watched_test(&r[0], &flag, -1, p) == MPI_SUCCESS)
			sched_yield();
	}
	r[0] = r[1] = MPI_REQUEST_NULL;
}

static void gone(MPI_Request *reqs, bool *live, int p, bool failed, bool tell)
{
	abandon(&reqs[2 * p], p);
	live[p] = false;
	if (failed)
		peer_failed = true; /* collectives cannot finish any more; MPI_Finalize would wait for it */
	if (tell)
		notice_send(p, live);
}

int sdc_mpi_alltoall(const struct sdc_mpi_part *send, struct sdc_mpi_part *recv, bool *live, int tag,
		       double timeout)
{
	if (sdc_mpi_remote_on())
		return sdc_mpi_remote_alltoall(send, recv, live, tag, timeout);
	const int P = sdc_mpi.size, me = sdc_mpi.rank;
	MPI_Request *r = malloc(2 * (size_t)P * sizeof(*r));
	if (!r)
		return -1;
	int newly = 0;
	for (int p = 0; p < P; p++) {
		r[2 * p] = r[2 * p + 1] = MPI_REQUEST_NULL;
		if (p == me || !live[p])
			continue;
		if (MPI_Irecv(recv[p].buf, recv[p].bytes, MPI_BYTE, p, tag, comm, &r[2 * p]) != MPI_SUCCESS ||
		    MPI_Isend(send[p].buf, send[p].bytes, MPI_BYTE, p, tag, comm, &r[2 * p + 1]) != MPI_SUCCESS) {
			gone(r, live, p, true, true);
			newly++;
		}
	}
	/* A peer is taken as lost when nothing has come from it, data or heartbeat, for the timeout
	 * since this exchange began: one blocked behind a lost rank keeps beating from its own wait. */
	const double start = sdc_now();
	double end = start + timeout;
	long spins = 0;
	for (;;) {
		bool done = true;
		sdc_mpi_keepalive(live, timeout / 5);
		for (int p = 0; p < P; p++)
			for (int i = 0; i < 2 && live[p]; i++) {
				if (r[2 * p + i] == MPI_REQUEST_NULL)
					continue;
				int flag = 0, got = 0;
				MPI_Status st;
				if ((i ? watched_test(&r[2 * p + i], &flag, p, -1)
				       : watched_test_status(&r[2 * p + i], &flag, &st)) != MPI_SUCCESS) {
					gone(r, live, p, true, true);
					newly++;
					continue;
				}
				done &= flag != 0;
				if (flag && heard)
					heard[p] = sdc_now();
				/* what arrived, not what there was room for */
				if (flag && !i)
					recv[p].bytes = MPI_Get_count(&st, MPI_BYTE, &got) == MPI_SUCCESS ? got : 0;
			}
		for (int32_t n; (n = notice_poll()) >= 0;) {
			const int p = n & ~NOTICE_LEFT;
			if (p == me) {
				for (int q = 0; q < P; q++)
					abandon(&r[2 * q], q);
				free(r);
				return -1;
			}
			if (!(n & NOTICE_LEFT))
				peer_failed = true; /* (also when this rank had counted it gone from another's view) */
			else if (p < P && (left_on_purpose || (left_on_purpose = calloc((size_t)P, sizeof(bool)))))
				left_on_purpose[p] = true;
			if (p < P && live[p]) {
				gone(r, live, p, false, false);
				newly++;
			}
			end = sdc_now() + timeout;
		}
		if (done)
			break;
		if (sdc_now() > end) {
			bool waiting = false;
			for (int p = 0; p < P; p++) {
				if (!live[p] || (r[2 * p] == MPI_REQUEST_NULL && r[2 * p + 1] == MPI_REQUEST_NULL))
					continue;
				if (silent_since(p, start, timeout)) {
					gone(r, live, p, true, true);
					newly++;
				} else
					waiting = true;
			}
			if (!waiting)
				break;
		}
		/* Spin first (bandwidth), then give the core away (a long wait for a slow peer). */
		if (++spins > 10000)
			usleep(200);
		else
			sched_yield();
	}
	free(r);
	return newly;
}

void sdc_mpi_leave(const bool *live)
{
	if (sdc_mpi_remote_on()) {
		sdc_mpi_remote_keepalive(live, 0, true);
		return;
	}
	notice_send(sdc_mpi.rank | NOTICE_LEFT, live);
}

bool sdc_mpi_left(int rank)
{
	if (sdc_mpi_remote_on())
		return sdc_mpi_remote_left(rank);
	return left_on_purpose && rank >= 0 && rank < sdc_mpi.size && left_on_purpose[rank];
}

int sdc_mpi_allreduce_f32(const float *in, float *out, int64_t n, double timeout)
{
	if (sdc_mpi_remote_on())
		return sdc_mpi_remote_allreduce_f32(in, out, n, timeout);
	MPI_Request r;
	if (peer_failed || n > INT32_MAX || MPI_Iallreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, comm, &r) != MPI_SUCCESS)
		return -1;
	int idx;
	return wait_all(&r, 1, timeout, &idx, -1, -1);
}

int sdc_mpi_test(void *req, int *flag)
{
	return watched_test(req, flag, -1, -1);
}

void *sdc_mpi_comm(void);
void *sdc_mpi_comm(void)
{
	return &comm;
}

int sdc_mpi_to_root(const char *text, int32_t *answer, int tag)
{
	int32_t len = (int32_t)strlen(text) + 1;
	int late;
	/* Rank 0 may come late by one wait of its own (a probe's, for the peer that died) and then
	 * waits out its gather's deadline for that peer before it answers anyone: a rank that gave up
	 * sooner would name a live rank 0. */
	const double wait = 2 * sdc_mpi.timeout + 5;
	return sdc_mpi_sendrecv(&len, 4, 0, NULL, 0, 0, tag, wait, &late) ||
			       sdc_mpi_sendrecv(text, len, 0, NULL, 0, 0, tag + 1, wait, &late) ||
			       sdc_mpi_sendrecv(NULL, 0, 0, answer, 4, 0, tag + 2, wait, &late)
		       ? -1
		       : 0;
}

void sdc_mpi_gather_texts(char **texts, int tag)
{
	const double end = sdc_now() + sdc_mpi.timeout;
	texts[0] = NULL;
	for (int r = 1; r < sdc_mpi.size; r++) {
		int32_t len = 0;
		int late;
		texts[r] = NULL;
		/* One deadline for the whole gather: a dead rank costs it once, not once per rank. */
		const double left = end - sdc_now() > 1 ? end - sdc_now() : 1;
		if (sdc_mpi_sendrecv(NULL, 0, 0, &len, 4, r, tag, left, &late) || len <= 0 || len > (64 << 20) ||
		    !(texts[r] = malloc((size_t)len)) ||
		    sdc_mpi_sendrecv(NULL, 0, 0, texts[r], len, r, tag + 1, sdc_mpi.timeout, &late) ||
		    texts[r][len - 1]) {
			free(texts[r]);
			texts[r] = NULL;
		}
	}
}

void sdc_mpi_answer(const bool *alive, int32_t answer, int tag)
{
	for (int r = 1; r < sdc_mpi.size; r++) {
		int late;
		if (alive[r])
			sdc_mpi_sendrecv(&answer, 4, r, NULL, 0, 0, tag + 2, 5, &late);
	}
}

#endif /* HAVE_MPI (without it: mpi/transport_single.c) */
