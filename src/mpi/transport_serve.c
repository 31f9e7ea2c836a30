/*
 * The parent's side of a burn's process's MPI calls (mpi/transport_remote.c is the process's): the
 * call's record and parts read from the window, each checked, then made on the MPI transport
 * (mpi/transport.c) with its deadlines and watchdog, and the answer written back.
 */
#include "mpi/transport.h"
#include "mpi/transport_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macros.h"
#include "sdc_config.h"

/* ---- the parent's side (with MPI: without it, no burn process makes a call; mpi/transport_single.c) ---- */
#if HAVE_MPI

/* The call's parts as pointers into the window, each checked to lie within it. */
static bool parts_in(const struct call *c, const struct part_at *pa, void *window, size_t wbytes,
		     struct sdc_mpi_part *out)
{
	for (uint32_t k = 0; k < c->nparts; k++) {
		if (pa[k].off > wbytes || pa[k].len > wbytes - pa[k].off || pa[k].len > (uint64_t)INT32_MAX)
			return false;
		out[k] = (struct sdc_mpi_part){ (unsigned char *)window + pa[k].off, (int)pa[k].len };
	}
	return true;
}

static bool a_rank(int r)
{
	return r >= 0 && r < sdc_mpi.size;
}

/* Whether the call's parts are the shape its op needs, and its ranks and tag ones it may use. */
static bool shaped(const struct call *c, const struct sdc_mpi_part *p)
{
	const uint32_t P = (uint32_t)sdc_mpi.size;
	switch (c->op) {
	case OP_SENDRECV:
	case OP_EXCHANGE:
		return c->i[3] >= 0 && c->i[3] <= 2 && c->nparts >= (uint32_t)c->i[3] && c->nparts - (uint32_t)c->i[3] <= 2 &&
		       a_rank(c->i[0]) && a_rank(c->i[1]) && sdc_mpi_probe_tag(c->i[2]);
	case OP_ALLGATHER:
		return c->nparts == 2 && (int64_t)p[1].bytes == (int64_t)p[0].bytes * P;
	case OP_SUM_U64:
		return c->nparts == 1 && p[0].bytes == 8;
	case OP_ALLREDUCE_F32:
		return c->nparts == 2 && p[0].bytes == p[1].bytes && p[0].bytes % 4 == 0;
	case OP_ALLTOALL:
		return c->nparts == 2 * P && c->nlive == P && sdc_mpi_probe_tag(c->i[0]);
	case OP_LEFT:
		return a_rank(c->i[0]);
	case OP_KEEPALIVE:
	case OP_LEAVE:
		return c->nlive == P;
	default:
		return c->op < OP_N;
	}
}

int sdc_mpi_serve(const void *req, size_t len, const struct sdc_mpi_serving *sv, void *reply, size_t max,
		    size_t *rlen)
{
	void *window = sv->window;
	const size_t wbytes = sv->bytes;
	static struct sdc_mpi_part p[MAX_PARTS];
	static bool live[SDC_MPI_REMOTE_MAX_RANKS];
	struct call c = { .op = OP_N };
	struct answer a = { .rc = -1, .late = -1 };
	*rlen = 0;
	if (len < sizeof(c) || max < sizeof(a) + MAX_PARTS * 8 + SDC_MPI_REMOTE_MAX_RANKS)
		goto out;
	memcpy(&c, req, sizeof(c));
	const struct part_at *pa = (const struct part_at *)(const void *)((const unsigned char *)req + sizeof(c));
	const unsigned char *lv = (const unsigned char *)(pa + c.nparts);
	if (c.nparts > MAX_PARTS || c.nlive > SDC_MPI_REMOTE_MAX_RANKS ||
	    len != sizeof(c) + c.nparts * sizeof(*pa) + c.nlive || !parts_in(&c, pa, window, wbytes, p) || !shaped(&c, p) ||
	    !(c.d >= 0) || (c.op == OP_STALL && !sv->may_stall))
		goto out;
	c.d = SDC_MIN(c.d, sv->max_timeout); /* (the process's deadline is not the parent's to keep past its own) */
	for (uint32_t r = 0; r < c.nlive; r++)
		live[r] = lv[r] != 0;
	uint64_t *lens = (uint64_t *)(void *)((unsigned char *)reply + sizeof(a));
	const int ns = c.i[3];
	switch (c.op) {
	case OP_SENDRECV:
	case OP_EXCHANGE:
		a.rc = c.op == OP_EXCHANGE ? sdc_mpi_exchange(p, ns, c.i[0], p + ns, (int)c.nparts - ns, c.i[1], c.i[2], c.d,
								&a.late)
					   : sdc_mpi_sendrecv(ns ? p[0].buf : NULL, ns ? p[0].bytes : 0, c.i[0],
								(int)c.nparts > ns ? p[ns].buf : NULL,
								(int)c.nparts > ns ? p[ns].bytes : 0, c.i[1], c.i[2], c.d, &a.late);
		break;
	case OP_STALL:
		sdc_mpi_stall();
		a.rc = 0;
		break;
	case OP_ALLGATHER:
		a.rc = sdc_mpi_allgather(p[0].buf, p[0].bytes, p[1].buf, c.d);
		break;
	case OP_SUM_U64: {
		uint64_t v;
		memcpy(&v, p[0].buf, 8);
		a.rc = sdc_mpi_sum_u64(&v, c.d);
		memcpy(p[0].buf, &v, 8);
		break;
	}
	case OP_ALLREDUCE_F32:
		a.rc = sdc_mpi_allreduce_f32(p[0].buf, p[1].buf, p[0].bytes / 4, c.d);
		break;
	case OP_ALLTOALL:
		a.rc = sdc_mpi_alltoall(p, p + sdc_mpi.size, live, c.i[0], c.d);
		a.nlens = (uint32_t)sdc_mpi.size;
		for (int r = 0; r < sdc_mpi.size; r++)
			lens[r] = (uint64_t)p[sdc_mpi.size + r].bytes;
		break;
	case OP_KEEPALIVE:
		sdc_mpi_keepalive(live, c.d);
		a.rc = 0;
		break;
	case OP_LEAVE:
		sdc_mpi_leave(live);
		a.rc = 0;
		break;
	case OP_LEFT:
		a.rc = sdc_mpi_left(c.i[0]) ? 1 : 0;
		break;
	default:
		break;
	}
	a.nlive = c.op == OP_ALLTOALL ? c.nlive : 0;
	for (uint32_t r = 0; r < a.nlive; r++)
		((unsigned char *)reply)[sizeof(a) + a.nlens * 8 + r] = live[r];
out:
	memcpy(reply, &a, sizeof(a));
	*rlen = sizeof(a) + a.nlens * 8 + a.nlive;
	return c.op == OP_LEFT ? 0 : a.rc < 0 ? -1 : 0;
}
#endif /* HAVE_MPI */
