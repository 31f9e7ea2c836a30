/*
 * The MPI calls of a burn's process, made by the run's parent (mpi/transport.h): the process never
 * joins MPI (it is exec'd and forked away from the MPI rank, which must not be forked), so each
 * call it makes travels to the parent as bytes, the parent makes it with its deadlines and
 * watchdog, and the outcome travels back. The payloads lie in a window both map (a memfd the
 * parent made before the process ran): the process copies what it sends in and what it received
 * out; the call's own record carries where each part lies (mpi/transport_wire.h), and the parent
 * checks every offset (mpi/transport_serve.c).
 * Measured (tools/bench-children.sh, the ring's busbw under mpirun -np 4 here): the copies cost
 * what the figure in the man page says; a process of its own in MPI (a singleton joined with
 * MPI_Comm_connect) would cost an ompi-server and its start per variant, and Open MPI 4.1
 * refuses the connection without one.
 */
#include "mpi/transport.h"
#include "mpi/transport_remote.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/message.h"
#include "sdc_config.h"

#include "mpi/transport_wire.h"

static struct {
	sdc_mpi_remote_fn fn;
	void *arg;
	unsigned char *window;
	size_t bytes;
	char (*hosts)[64];
	int nhosts;
} remote;

void sdc_mpi_set_remote(sdc_mpi_remote_fn fn, void *arg, void *window, size_t bytes)
{
	remote.fn = fn;
	remote.arg = arg;
	remote.window = window;
	remote.bytes = bytes;
}

bool sdc_mpi_remote_on(void)
{
	return remote.fn && sdc_mpi.active;
}

void sdc_mpi_set_hosts(const char (*hosts)[64], int n)
{
	free(remote.hosts);
	remote.hosts = n > 0 ? calloc((size_t)n, 64) : NULL;
	remote.nhosts = remote.hosts ? n : 0;
	for (int r = 0; r < remote.nhosts; r++)
		sdc_strlcpy(remote.hosts[r], hosts[r], 64);
}

const char *sdc_mpi_remote_host(int rank)
{
	static char buf[32];
	if (rank >= 0 && rank < remote.nhosts)
		return remote.hosts[rank];
	snprintf(buf, sizeof(buf), "rank %d", rank);
	return buf;
}

/* ---- the burn process's side ---- */

/* A call being built: its record, and the window filled from the start. */
struct building {
	unsigned char rec[sizeof(struct call) + MAX_PARTS * sizeof(struct part_at) + SDC_MPI_REMOTE_MAX_RANKS];
	struct call *c;
	struct part_at *parts;
	size_t used; /* of the window */
	bool too_big;
};

static void begin(struct building *b, enum op op)
{
	memset(b->rec, 0, sizeof(struct call));
	b->c = (struct call *)(void *)b->rec;
	b->c->op = op;
	b->parts = (struct part_at *)(void *)(b->rec + sizeof(struct call));
	b->used = 0;
	b->too_big = false;
}

/* A part of bytes in the window (its contents from src when not NULL); its offset. */
static size_t part(struct building *b, const void *src, size_t bytes)
{
	const size_t at = (b->used + 63) & ~(size_t)63;
	if (b->c->nparts >= MAX_PARTS || at + bytes > remote.bytes || at + bytes < at) {
		b->too_big = true;
		return 0;
	}
	b->parts[b->c->nparts++] = (struct part_at){ at, bytes };
	if (src && bytes)
		memcpy(remote.window + at, src, bytes);
	b->used = at + bytes;
	return at;
}

/* Sends the call with live[] (n of them, NULL: none) after its parts; the answer and, where
 * live is given, live[] as the parent left it. 0, or -1 (the parent did not answer, or too big). */
static int call(struct building *b, const bool *live, int n, double timeout, struct answer *a, uint64_t *lens,
		bool *live_out)
{
	if (b->too_big || n > SDC_MPI_REMOTE_MAX_RANKS)
		return -1;
	b->c->nlive = live ? (uint32_t)n : 0;
	unsigned char *lv = b->rec + sizeof(struct call) + b->c->nparts * sizeof(struct part_at);
	for (int r = 0; live && r < n; r++)
		lv[r] = live[r];
	unsigned char out[sizeof(struct answer) + MAX_PARTS * 8 + SDC_MPI_REMOTE_MAX_RANKS];
	size_t got = 0;
	/* the parent's own deadline, then its watchdog's grace, then some: past that it is gone */
	if (remote.fn(remote.arg, b->rec, (size_t)(lv - b->rec) + b->c->nlive, out, sizeof(out), &got,
		      timeout + SDC_FLEET_WATCH_GRACE + 10) ||
	    got < sizeof(*a))
		return -1;
	memcpy(a, out, sizeof(*a));
	if (got != sizeof(*a) + a->nlens * 8 + a->nlive || a->nlens > MAX_PARTS || (live_out && a->nlive != (uint32_t)n))
		return -1;
	if (lens)
		memcpy(lens, out + sizeof(*a), a->nlens * 8);
	for (uint32_t r = 0; live_out && r < a->nlive; r++)
		live_out[r] = out[sizeof(*a) + a->nlens * 8 + r] != 0;
	return 0;
}

int sdc_mpi_remote_exchange(const struct sdc_mpi_part *send, int nsend, int dst, const struct sdc_mpi_part *recv,
			      int nrecv, int src, int tag, double timeout, int *late, bool neighbours)
{
	struct building b;
	begin(&b, neighbours ? OP_EXCHANGE : OP_SENDRECV);
	if (nsend > 2 || nrecv > 2)
		return -1;
	size_t at[2];
	for (int i = 0; i < nsend; i++)
		part(&b, send[i].buf, (size_t)send[i].bytes);
	for (int i = 0; i < nrecv; i++)
		at[i] = part(&b, NULL, (size_t)recv[i].bytes);
	b.c->i[0] = dst, b.c->i[1] = src, b.c->i[2] = tag, b.c->i[3] = nsend;
	b.c->d = timeout;
	struct answer a;
	if (call(&b, NULL, 0, timeout, &a, NULL, NULL)) {
		*late = -1;
		return -1;
	}
	*late = a.late;
	for (int i = 0; i < nrecv && !a.rc; i++)
		memcpy(recv[i].buf, remote.window + at[i], (size_t)recv[i].bytes);
	return a.rc;
}

void sdc_mpi_remote_stall(void)
{
	struct building b;
	struct answer a;
	begin(&b, OP_STALL);
	call(&b, NULL, 0, 1, &a, NULL, NULL);
}

int sdc_mpi_remote_allgather(const void *in, int bytes, void *out, double timeout)
{
	struct building b;
	begin(&b, OP_ALLGATHER);
	part(&b, in, (size_t)bytes);
	const size_t at = part(&b, NULL, (size_t)bytes * (size_t)sdc_mpi.size);
	b.c->d = timeout;
	struct answer a;
	if (call(&b, NULL, 0, timeout, &a, NULL, NULL))
		return -1;
	if (!a.rc)
		memcpy(out, remote.window + at, (size_t)bytes * (size_t)sdc_mpi.size);
	return a.rc;
}

int sdc_mpi_remote_sum_u64(uint64_t *v, double timeout)
{
	struct building b;
	begin(&b, OP_SUM_U64);
	const size_t at = part(&b, v, sizeof(*v));
	b.c->d = timeout;
	struct answer a;
	if (call(&b, NULL, 0, timeout, &a, NULL, NULL))
		return -1;
	if (!a.rc)
		memcpy(v, remote.window + at, sizeof(*v));
	return a.rc;
}

int sdc_mpi_remote_allreduce_f32(const float *in, float *out, int64_t n, double timeout)
{
	struct building b;
	begin(&b, OP_ALLREDUCE_F32);
	part(&b, in, (size_t)n * 4);
	const size_t at = part(&b, NULL, (size_t)n * 4);
	b.c->d = timeout;
	struct answer a;
	if (call(&b, NULL, 0, timeout, &a, NULL, NULL))
		return -1;
	if (!a.rc)
		memcpy(out, remote.window + at, (size_t)n * 4);
	return a.rc;
}

int sdc_mpi_remote_alltoall(const struct sdc_mpi_part *send, struct sdc_mpi_part *recv, bool *live, int tag,
			      double timeout)
{
	const int P = sdc_mpi.size;
	struct building b;
	begin(&b, OP_ALLTOALL);
	size_t at[SDC_MPI_REMOTE_MAX_RANKS];
	if (P > SDC_MPI_REMOTE_MAX_RANKS)
		return -1;
	for (int p = 0; p < P; p++)
		part(&b, send[p].buf, (size_t)send[p].bytes);
	for (int p = 0; p < P; p++)
		at[p] = part(&b, NULL, (size_t)recv[p].bytes);
	b.c->i[0] = tag;
	b.c->d = timeout;
	struct answer a;
	static uint64_t lens[MAX_PARTS];
	if (call(&b, live, P, timeout, &a, lens, live) || a.nlens != (uint32_t)P)
		return -1;
	/* what the exchange took: from every live rank but this one (a receive it gave up on, or never
	 * posted, leaves its buffer and count as they were, as the exchange itself does) */
	for (int p = 0; p < P; p++) {
		if (p == sdc_mpi.rank || !live[p])
			continue;
		if (lens[p] > (uint64_t)recv[p].bytes)
			return -1;
		recv[p].bytes = (int)lens[p];
		memcpy(recv[p].buf, remote.window + at[p], (size_t)lens[p]);
	}
	return a.rc;
}

void sdc_mpi_remote_keepalive(const bool *live, double period, bool leave)
{
	struct building b;
	struct answer a;
	begin(&b, leave ? OP_LEAVE : OP_KEEPALIVE);
	b.c->d = period;
	call(&b, live, sdc_mpi.size, 1, &a, NULL, NULL);
}

bool sdc_mpi_remote_left(int rank)
{
	struct building b;
	struct answer a;
	begin(&b, OP_LEFT);
	b.c->i[0] = rank;
	return !call(&b, NULL, 0, 1, &a, NULL, NULL) && a.rc == 1;
}

bool sdc_mpi_probe_tag(int tag)
{
	/* (mpi/transport.c's notices and heartbeats 0x7e0-0x7e1, the report's and selftest's gathers 0x5dc
	 * and 0x5e1: each range kept whole) */
	return tag >= 0 && tag <= 0x7fff && !(tag >= 0x5d0 && tag < 0x600) && !(tag >= 0x7e0 && tag < 0x800);
}
