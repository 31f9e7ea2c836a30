/*
 * The allreduce probe's ring variant over MPI (allreduce.c holds the probe): sdcscan's own ring
 * all-reduce, every hop CRC- and value-checked (the checks: ring_check.c), the H and C faults
 * planted in it, the lane that runs it forward, reversed and shuffled every iteration; and
 * `sdcscan bench allreduce`, the same ring timed against MPI_Allreduce.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/transport.h"
#include "kernels/crc32c.h"
#include "probes/allreduce/allreduce.h"
#include "probes/allreduce/ring_check.h"
#include "probes/allreduce/ring_hd.h"
#include "probe/bench_race.h"
#include "probe/command.h"
#include "probe/probe.h"
#include "inject/fatal.h"
#include "sdc_config.h"

#if HAVE_MPI
#include <mpi.h>
#include "base/clock.h"
void *sdc_mpi_comm(void);
#endif

/* sdcscan bench allreduce */
struct bench_opts {
	int64_t max_bytes, reps;
};

#define BOPT(f) offsetof(struct bench_opts, f)
static const struct sdc_option bench_options[] = {
	{ .name = "max-bytes", .metavar = "B", .type = SDC_OPT_INT, .offset = BOPT(max_bytes), .def = "268435456",
	  .imin = 1 << 20, .imax = (int64_t)1 << 34, .help = "largest all-reduce, from 1 MiB up by factors of 4" },
	{ .name = "reps", .metavar = "R", .type = SDC_OPT_INT, .offset = BOPT(reps), .def = "9", .imin = 1, .imax = 100,
	  .help = "turns per size" },
	SDC_OPT_END,
};

#if HAVE_MPI

/* The faults due in an iteration (the framework's plan: one worker per rank, so every rank
 * gets the same list and the one the fault names acts on it). Applied on the forward ring. */
struct ar_faults {
	struct sdc_fault f[8];
	const char *target[8];
	int n;
};

static void due_faults(struct sdc_worker *w, uint64_t it, struct ar_faults *af)
{
	static const char *const targets[] = { "H", "C" };
	af->n = 0;
	for (int t = 0; t < 2; t++) {
		const int n = sdc_worker_faults(w, targets[t], it, af->f + af->n, 8 - af->n);
		for (int i = 0; i < n; i++)
			af->target[af->n++] = targets[t];
	}
}

/* X: this rank's MPI library stops returning from here on (mpi/transport.c stalls its exchanges). */
static void stall_if_due(struct sdc_worker *w, uint64_t it)
{
	struct sdc_fault x;
	if (sdc_worker_faults(w, "X", it, &x, 1) && (x.row >= 0 ? x.row : 0) == sdc_mpi.rank) {
		sdc_worker_fault_applied(w, &x, "X", it, x.row, -1, -1, "", "");
		sdc_mpi_stall();
	}
}

struct ring {
	int P, pos, *order, *where; /* order[position] = rank; where[rank] = position */
};

/* A chunk each: what arrives in the reduce-scatter, the partial sums it sends on (one buffer used
 * again every step stays in cache; the sums' own place in out is written over by the all-gather
 * anyway), and the copy a hop fault corrupts. */
struct ring_bufs {
	uint8_t *recv, *sums, *fault;
};

static int ring_bufs_alloc(struct ring_bufs *b, size_t chunk_bytes)
{
	b->recv = malloc(chunk_bytes), b->sums = malloc(chunk_bytes), b->fault = malloc(chunk_bytes);
	return b->recv && b->sums && b->fault ? 0 : -1;
}

static void ring_bufs_free(struct ring_bufs *b)
{
	free(b->recv), free(b->sums), free(b->fault);
}

/* A hop fault (H) on this rank's first send of the phase: bytes change after the CRC was taken,
 * as on a bad link (in a copy, so the sender keeps its own data right), or the header's CRC word
 * does. Returns what goes out: payload, or the faulted copy. */
static uint8_t *plant_hop_fault(struct sdc_worker *w, const struct ar_faults *af, const struct ring *g, int phase,
				uint32_t hdr[3], uint8_t *payload, const struct ring_bufs *bufs, int64_t cn, uint64_t it)
{
	const int P = g->P, me = g->order[g->pos], next = g->order[(g->pos + 1) % P];
	for (int k = 0; af && k < af->n; k++) {
		const struct sdc_fault *ft = &af->f[k];
		if (strcmp(af->target[k], "H"))
			continue;
		const int src = ft->row >= 0 ? (int)ft->row : 0;
		const int dst = ft->col >= 0 ? (int)ft->col : g->order[(g->where[src] + 1) % P];
		int ph;
		bool header;
		sdc_ar_hop_tensor(w->ctx->run->inject[ft->spec].tensor, &ph, &header); /* setup refused others */
		if (src != me || dst != next || ph != phase)
			continue;
		const int bit = ft->bit >= 0 ? ft->bit % 32 : header ? 3 : 20;
		if (header) {
			/* the header's CRC word: the data arrive right, the header's own check fails */
			hdr[0] ^= 1u << bit;
		} else {
			const int64_t el = cn / 3;
			memcpy(bufs->fault, payload, (size_t)cn * 4);
			payload = bufs->fault;
			payload[el * 4 + bit / 8] ^= (uint8_t)(1u << (bit % 8));
		}
		sdc_worker_fault_applied(w, ft, "H", it, src, dst, bit, "", "");
	}
	return payload;
}

/* A compute fault (C) at this rank's first step: the sum it sends next goes wrong in its
 * arithmetic; the CRC the check took is of the wrong sum, so the receiver sees a good CRC on
 * wrong values. */
static void plant_sum_fault(struct sdc_worker *w, const struct ar_faults *af, int me, float *dst, int64_t cn,
			    int recv_c, uint64_t it, uint32_t *fwd_crc)
{
	for (int k = 0; af && k < af->n; k++) {
		const struct sdc_fault *ft = &af->f[k];
		if (strcmp(af->target[k], "C") || (ft->row >= 0 ? ft->row : 0) != me)
			continue;
		const int bit = ft->bit >= 0 ? ft->bit % 32 : 22;
		uint32_t u;
		memcpy(&u, &dst[cn / 5], 4);
		u ^= 1u << bit;
		memcpy(&dst[cn / 5], &u, 4);
		*fwd_crc = sdc_crc32c(0, dst, (size_t)cn * 4);
		sdc_worker_fault_applied(w, ft, "C", it, me, recv_c * cn + cn / 5, bit, "", "");
	}
}

/* One ring all-reduce in ring order g of in (this rank's values, left as they are) into out (f
 * and g are the iteration's terms). 0, 1 after corruption was found, -1 on a dead peer. Out of
 * place, as MPI_Allreduce is called in the benchmark, so both can run again on the same data. */
static int ring_once(struct sdc_worker *w, const float *in, float *out, const struct ring_bufs *bufs, const int8_t *f,
		     const int8_t *gt, const struct ring *g, uint64_t it, const char *order_name,
		     const struct ar_faults *af)
{
	const struct ar_shared *sh = w->ctx->shared;
	const int P = g->P, p = g->pos, me = g->order[p];
	const int next = g->order[(p + 1) % P], prev = g->order[(p - 1 + P) % P];
	const int64_t cn = sh->n / P;
	const size_t cb = (size_t)cn * 4;
	int bad = 0;
	/* Every chunk travels with the CRC32C its sender took of it, and the header with a CRC32C of
	 * its own. The receiver compares every element with the value it predicts, which proves the
	 * payload bit for bit; the chunk's CRC is computed again only when some element is wrong, to
	 * say whose fault it is (bad CRC: the link; good CRC: the sender), or when the header fails
	 * its own check (the link). (Taking it on every hop as well was about a fifth of the ring's
	 * CPU time with four ranks on two cores.) The sender's CRC costs no pass of its own either: a
	 * reduce-scatter step takes it of the sums as its check writes them, and an all-gather step
	 * forwards a chunk it proved right with the CRC it arrived with (the same bytes, so the same
	 * CRC), one it put right with the CRC of the repaired bytes. A flip in this rank's memory
	 * between the check and the send therefore reads as a bad link on the next hop; the reversed
	 * and shuffled rings then show every link of this node failing: a bad node. */
	uint32_t fwd_crc = 0; /* the CRC32C of what the next step sends (after the first step) */
	uint8_t *const recvb = bufs->recv;
	for (int phase = 0; phase < 2; phase++) {
		for (int s = 0; s < P - 1; s++) {
			const struct sdc_ring_step st = sdc_ring_step_at(phase, s, p, P);
			const int send_c = st.send_c, recv_c = st.recv_c;
			/* The chunk leaves from where it lies, its header (CRC32C, step, the header's own CRC)
			 * ahead of it: the first reduce-scatter step sends this rank's own chunk, later ones
			 * the sums it made, the all-gather what it received. */
			const bool first_step = phase == 0 && s == 0;
			uint8_t *payload = first_step ? (uint8_t *)(in + send_c * cn)
				       : phase == 0 ? bufs->sums
						    : (uint8_t *)(out + send_c * cn);
			const uint32_t step_id = (uint32_t)(phase << 16 | s);
			uint32_t hdr[3], rhdr[3];
			sdc_ring_hop_header(hdr, first_step ? sdc_crc32c(0, payload, cb) : fwd_crc, step_id);
			if (s == 0)
				payload = plant_hop_fault(w, af, g, phase, hdr, payload, bufs, cn, it);
			int late;
			char what[64];
			snprintf(what, sizeof(what), "the %s ring's %s step %d", order_name, phase ? "all-gather" : "reduce-scatter", s);
			/* the last reduce-scatter step's sums are this rank's own chunk of the result */
			float *const dst = phase == 0 && s < P - 2 ? (float *)bufs->sums : out + recv_c * cn;
			/* reduce-scatter adds what arrives to its own chunk; all-gather takes it in place */
			uint8_t *const into = phase == 0 ? recvb : (uint8_t *)dst;
			const struct sdc_mpi_part sp[2] = { { hdr, 12 }, { payload, (int)cb } },
						    rp[2] = { { rhdr, 12 }, { into, (int)cb } };
			if (sdc_mpi_exchange(sp, 2, next, rp, 2, prev, 100 + phase * 64 + s, sh->timeout, &late)) {
				sdc_ar_unresponsive(w, late, what);
				return -1;
			}
			/* what the sender should have sent: the partial sum of positions prev-s .. prev */
			const int count = st.count;
			const int rsum = sdc_ring_rank_sum(g->order, P, st.first, count);
			const int8_t *fc = f + recv_c * cn, *gc = gt + recv_c * cn;
			/* a reduce-scatter step's sums go out next, with the CRC32C the check took of them */
			uint32_t sum_crc = 0;
			int64_t nbad = phase == 0 ? sdc_ring_check_add_crc(dst, in + recv_c * cn, (const uint32_t *)recvb, fc,
								     gc, cn, count, rsum, &sum_crc)
						  : sdc_ring_count_wrong(dst, fc, gc, cn, count, rsum);
			/* whose fault, from what arrived, before any repair */
			struct sdc_hop_verdict hv;
			sdc_ring_hop_verdict(rhdr, step_id, into, cb, nbad, &hv);
			const uint32_t crc = hv.crc;
			/* the first wrong element, looked for only when there is one; in the all-gather the
			 * wrong values are then put right, so a fault does not echo through later steps */
			float got0 = 0;
			int64_t first_bad = -1;
			if (nbad) {
				float *r = phase == 0 ? (float *)recvb : dst;
				first_bad = sdc_ring_first_wrong(r, fc, gc, cn, count, rsum, phase == 1, &got0);
			}
			/* what the next step sends is this chunk: the sums (reduce-scatter), or what arrived, put
			 * right if it was wrong (all-gather) */
			fwd_crc = phase == 0 ? sum_crc : nbad ? sdc_crc32c(0, dst, cb) : crc;
			if (hv.fault != SDC_HOP_OK) {
				bad = 1;
				const int64_t el = first_bad >= 0 ? recv_c * cn + first_bad : -1;
				const float e = el >= 0 ? sdc_ring_expected(fc, gc, first_bad, count, rsum) : 0;
				sdc_ar_hop_report(w, it, what, prev, me, &hv, rhdr, nbad, el, e, got0);
			}
			if (first_step)
				plant_sum_fault(w, af, me, dst, cn, recv_c, it, &fwd_crc);
		}
	}
	return bad;
}

/* The ring variant's lane: every iteration the ring forward, reversed and shuffled. */
void sdc_ar_ring_run(struct sdc_worker *w)
{
	const struct ar_shared *sh = w->ctx->shared;
	const int P = sdc_mpi.size;
	const size_t cb = (size_t)(sh->n / P) * 4;
	float *buf = malloc((size_t)sh->n * 4), *out = malloc((size_t)sh->n * 4);
	int8_t *f = malloc((size_t)sh->n), *gt = malloc((size_t)sh->n);
	struct ring_bufs rb;
	const int rb_err = ring_bufs_alloc(&rb, cb);
	struct ring g[3];
	for (int k = 0; k < 3; k++) {
		g[k].P = P;
		g[k].order = malloc(sizeof(int) * P);
		g[k].where = malloc(sizeof(int) * P);
	}
	if (!buf || !out || !f || !gt || rb_err || !g[2].where) {
		sdc_worker_error(w, "out of memory");
		goto out;
	}
	static const char *const names[] = { "forward", "reversed", "shuffled" };
	uint64_t it = 0;
	for (;; it++) {
		if (!sdc_ar_all_go_on(w))
			break;
		sdc_ar_ring_orders(P, it, g[0].order, g[1].order, g[2].order);
		struct ar_faults faults;
		due_faults(w, it, &faults);
		stall_if_due(w, it);
		sdc_worker_fatal_faults(w, it, buf);
		sdc_ring_terms(sh->n, it, f, gt);
		sdc_ring_values(buf, sh->n, sdc_mpi.rank, f, gt);
		for (int k = 0; k < 3; k++) {
			for (int r = 0; r < P; r++)
				g[k].where[g[k].order[r]] = r;
			g[k].pos = g[k].where[sdc_mpi.rank];
			if (ring_once(w, buf, out, &rb, f, gt, &g[k], it, names[k], k == 0 ? &faults : NULL) < 0)
				goto out;
		}
		sdc_worker_digest(w, it, it);
		sdc_worker_account(w, 3.0 * (double)sh->n * 4 * 2 * (P - 1) / P);
	}
out:
	free(buf), free(out), free(f), free(gt);
	ring_bufs_free(&rb);
	for (int k = 0; k < 3; k++)
		free(g[k].order), free(g[k].where);
}

static int bench_main(struct sdc_cmd *cmd)
{
	const struct bench_opts *o = cmd->opts;
	const int64_t max_bytes = o->max_bytes;
	const int reps = (int)o->reps;
	if (!sdc_mpi.active || sdc_mpi.size < 2)
		return sdc_cli_bad(&cmd->cli, "needs mpirun (or srun) with 2 or more ranks");
	const int P = sdc_mpi.size;
	MPI_Comm comm = *(MPI_Comm *)sdc_mpi_comm();
	struct sdc_run run;
	if (sdc_run_init(&run))
		return SDC_UNKNOWN;
	struct ar_shared sh = { .timeout = 120 };
	const struct sdc_variant ring_variant = { .name = "ring", .devices = SDC_ON_CPU, .per_rank = true };
	struct sdc_probe_ctx ctx = { .shared = &sh, .run = &run, .variant = &ring_variant };
	struct sdc_worker_progress progress = { 0 };
	struct sdc_worker w = { .ctx = &ctx, .progress = &progress };
	struct ring g = { .P = P, .order = malloc(sizeof(int) * P), .where = malloc(sizeof(int) * P) };
	float *buf = malloc((size_t)max_bytes), *out = malloc((size_t)max_bytes);
	int8_t *f = malloc((size_t)max_bytes / 4), *gt = malloc((size_t)max_bytes / 4);
	struct ring_bufs rb;
	const int rb_err = ring_bufs_alloc(&rb, (size_t)max_bytes / P + 16);
	if (!g.order || !g.where || !buf || !out || !f || !gt || rb_err) {
		fprintf(stderr, "sdcscan bench allreduce: out of memory\n");
		return SDC_UNKNOWN;
	}
	for (int r = 0; r < P; r++)
		g.order[r] = r, g.where[r] = r;
	g.pos = sdc_mpi.rank;
	if (sdc_mpi.rank == 0)
		printf("sdcscan bench allreduce: %d ranks; per size one untimed warm-up of each, then %d turns in which\n"
		       "each runs a batch of all-reduces between barriers (who goes first alternates); median time per\n"
		       "all-reduce; busbw = bytes / time x 2(n-1)/n (nccl-tests); ring/mpi is the median of the turns'\n"
		       "own ratios (the two ran side by side, so drift of this machine between turns cancels)\n"
		       "ring: sdcscan's ring with CRC32C and exact value checks on every hop, timed whole;\n"
		       "mpi: MPI_Allreduce alone, timed as nccl-tests times it (its result is checked after the clock)\n\n"
		       "      bytes  batch   ring algbw  ring busbw   mpi algbw   mpi busbw   ring/mpi busbw\n"
		       "                         GB/s        GB/s        GB/s        GB/s\n", P, reps);
	int rc = 0;
	const int all = P * (P - 1) / 2;
	for (int64_t bytes = 1 << 20; bytes <= max_bytes && !rc; bytes *= 4) {
		sh.n = bytes / 4 / P * P;
		/* nccl-tests times a batch too: at small sizes one all-reduce is too short for a barrier's skew */
		const int batch = bytes >= (32 << 20) ? 1 : (int)((32 << 20) / bytes);
		/* the data and the terms every check uses are made before any clock starts; both run out of
		 * place, so every all-reduce of a batch starts from the same data */
		sdc_ring_terms(sh.n, (uint64_t)bytes, f, gt);
		sdc_ring_values(buf, sh.n, sdc_mpi.rank, f, gt);
		double tr[100], tm[100], ratio[100];
		for (int k = -1; k < reps && !rc; k++) {
			const int nb = k < 0 ? 1 : batch;
			for (int turn = 0; turn < 2; turn++) {
				const bool ring = (turn + k) % 2 == 0;
				MPI_Barrier(comm);
				const double t0 = sdc_now();
				for (int i = 0; i < nb && !rc; i++)
					if (ring)
						rc = ring_once(&w, buf, out, &rb, f, gt, &g, (uint64_t)k, "forward", NULL) != 0;
					else
						MPI_Allreduce(buf, out, (int)sh.n, MPI_FLOAT, MPI_SUM, comm);
				MPI_Barrier(comm);
				const double t = (sdc_now() - t0) / nb;
				if (k >= 0)
					*(ring ? &tr[k] : &tm[k]) = t;
				if (sdc_ring_count_wrong(out, f, gt, sh.n, P, all))
					rc = 1;
			}
		}
		for (int k = 0; k < reps; k++)
			ratio[k] = tm[k] / tr[k];
		const double b = (double)sh.n * 4, fb = 2.0 * (P - 1) / P;
		const double r_alg = b / sdc_median(tr, reps) / 1e9, m_alg = b / sdc_median(tm, reps) / 1e9;
		if (sdc_mpi.rank == 0 && !rc)
			printf("%11.0f  %5d  %10.3f  %10.3f  %10.3f  %10.3f   %13.1f%%\n", b, batch, r_alg, r_alg * fb, m_alg,
			       m_alg * fb, 100 * sdc_median(ratio, reps));
		fflush(stdout);
	}
	if (rc)
		fprintf(stderr, "sdcscan bench allreduce: rank %d saw corruption or a dead peer during the benchmark\n",
			sdc_mpi.rank);
	free(buf), free(out), free(f), free(gt), free(g.order), free(g.where);
	ring_bufs_free(&rb);
	sdc_run_release(&run);
	return rc ? SDC_CRITICAL : 0;
}

#else

static int bench_main(struct sdc_cmd *cmd)
{
	return sdc_cli_bad(&cmd->cli, "this sdcscan was built without MPI");
}

#endif

const struct sdc_command sdc_allreduce_bench = {
	.name = "allreduce",
	.summary = "under mpirun: the checked ring all-reduce against MPI_Allreduce, busbw from 1 MiB to 256 MiB",
	.options = bench_options,
	.opts_size = sizeof(struct bench_opts),
	.flags = SDC_CMD_JOINS_MPI,
	.fn = bench_main,
};
