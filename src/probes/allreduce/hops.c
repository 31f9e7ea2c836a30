/*
 * What the allreduce probe's rings share, over MPI (ring_mpi.c) and over NCCL (nccl.c): the
 * rings' orders, a member's name, the findings a hop's check or a silent rank makes, and the
 * agreement to go on. Below the probe (allreduce.c), which picks a variant and runs its ring.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mpi/transport.h"
#include "probes/allreduce/allreduce.h"
#include "probes/allreduce/ring_check.h"
#include "probe/probe.h"
#include "base/message.h"

bool sdc_ar_hop_tensor(const char *tn, int *phase, bool *header)
{
	static const char *const names[] = { "", "rs", "ag", "rs-header", "ag-header" };
	*phase = 0, *header = false;
	for (int k = 0; k < 5; k++)
		if (!strcmp(tn, names[k])) {
			*phase = k == 2 || k == 4;
			*header = k >= 3;
			return true;
		}
	return false;
}

/* The shuffle's draw: the same on every rank, new every iteration. */
static inline uint64_t draw(int r, uint64_t it)
{
	uint64_t x = (uint64_t)r * 0x9E3779B97F4A7C15ull ^ (it * 0xBF58476D1CE4E5B9ull);
	x ^= x >> 31;
	x *= 0x94D049BB133111EBull;
	return x ^ x >> 29;
}

/* A finding with the expected and actual value of an element, or (crcs not NULL, when no element
 * is wrong) the chunk's CRC32C as computed and as its header gave it. */
void sdc_ar_report(struct sdc_worker *w, uint64_t iter, const char *kind, const char *target, int64_t row,
		   int64_t col, float expected, float actual, const uint32_t *crcs, const char *fmt, ...)
{
	const struct ar_shared *sh = w->ctx->shared;
	struct sdc_finding f = { .cls = SDC_FINDING_CORRUPTION, .iteration = iter, .row = row, .col = col };
	sdc_strlcpy(f.kind, kind, sizeof(f.kind));
	sdc_strlcpy(f.target, target, sizeof(f.target));
	sdc_strlcpy(f.operation, sh->operation, sizeof(f.operation));
	if (crcs)
		sdc_finding_set_bits(&f, crcs[0], crcs[1], 32);
	else
		sdc_finding_set_f32(&f, expected, actual);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f.detail, sizeof(f.detail), fmt, ap);
	va_end(ap);
	sdc_worker_report(w, &f);
}

void sdc_ar_unresponsive(struct sdc_worker *w, int peer, const char *what)
{
	/* (the iteration in progress: every variant counts one when it ends) */
	struct sdc_finding f = { .cls = SDC_FINDING_ERROR, .iteration = sdc_worker_iterations(w), .row = peer, .col = -1 };
	sdc_strlcpy(f.kind, "rank-unresponsive", sizeof(f.kind));
	if (peer >= 0)
		snprintf(f.detail, sizeof(f.detail), "rank %d (%s) did not answer within %.0f s during %s: dead or stuck",
			 peer, sdc_mpi_host(peer), ((const struct ar_shared *)w->ctx->shared)->timeout, what);
	else
		snprintf(f.detail, sizeof(f.detail), "some rank did not take part within %.0f s in %s: dead or stuck",
			 ((const struct ar_shared *)w->ctx->shared)->timeout, what);
	sdc_worker_report(w, &f);
	w->failed = true;
	if (peer >= 0)
		snprintf(w->error, sizeof(w->error), "rank %d (%s) did not answer", peer, sdc_mpi_host(peer));
	else
		snprintf(w->error, sizeof(w->error), "a rank did not take part in %s", what);
}

/* Whether every rank goes on to another iteration. Everyone stops together: a rank that stopped
 * alone would leave its peers waiting. */
bool sdc_ar_all_go_on(struct sdc_worker *w)
{
	uint64_t stop = !sdc_worker_continue(w);
	if (sdc_mpi_sum_u64(&stop, ((const struct ar_shared *)w->ctx->shared)->timeout)) {
		sdc_ar_unresponsive(w, -1, "the agreement to go on");
		return false;
	}
	return !stop;
}

/* The report of a hop whose verdict is not OK (what arrived from prev at this rank me in step
 * `what`): a bad CRC names the link, a good CRC on wrong values the sender. el: the first wrong
 * element's index in the whole vector (-1: none); crcs of the chunk and of its header go in as the
 * bits when no element is wrong (the header alone was hit). */
void sdc_ar_hop_report(struct sdc_worker *w, uint64_t it, const char *what, int prev, int me,
		       const struct sdc_hop_verdict *hv, const uint32_t *rhdr, int64_t nbad, int64_t el, float expected,
		       float got)
{
	const struct ar_shared *sh = w->ctx->shared;
	const uint32_t crcs[2] = { hv->crc, rhdr[0] };
	char from[96], to[96];
	sdc_ar_member(sh, prev, from, sizeof(from));
	sdc_ar_member(sh, me, to, sizeof(to));
	if (hv->fault == SDC_HOP_LINK)
		sdc_ar_report(w, it, "link-corrupt", "H", prev, me, expected, got, nbad ? NULL : crcs,
			      "%s: CRC32C of the chunk%s from %s to %s failed: the link corrupted it (%" PRId64
			      " wrong elements, first element %" PRId64 "%s)",
			      what, hv->header_ok ? "" : "'s header", from, to, nbad, el,
			      nbad ? "" : "; expected and actual are the data's CRC32C and the header's");
	else if (hv->fault == SDC_HOP_SENDER)
		sdc_ar_report(w, it, "sender-compute", "C", prev, el, expected, got, NULL,
			      "%s: %s sent a chunk whose CRC32C holds but whose values are wrong: its arithmetic or memory "
			      "(%" PRId64 " wrong elements, first element %" PRId64 ")",
			      what, from, nbad, el);
}

void sdc_ar_ring_orders(int P, uint64_t it, int *fwd, int *rev, int *shuf)
{
	for (int r = 0; r < P; r++) {
		fwd[r] = r;
		rev[r] = P - 1 - r;
		shuf[r] = r;
	}
	/* the shuffle: the same on every rank, new every iteration */
	for (int r = P - 1; r > 0; r--) {
		const int j = (int)(draw(r, it) % (uint64_t)(r + 1));
		const int t = shuf[r];
		shuf[r] = shuf[j], shuf[j] = t;
	}
}

void sdc_ar_member(const struct ar_shared *sh, int m, char *buf, size_t len)
{
	if (sh->local)
		snprintf(buf, len, "GPU %d (%s)", m, sh->member_bus ? sh->member_bus[m] : "?");
	else
		snprintf(buf, len, "rank %d (%s)", m, sdc_mpi_host(m));
}
