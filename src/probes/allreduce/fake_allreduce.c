/*
 * The fake GPU module's allreduce family (probes/allreduce/gpu_ops.h; the base:
 * kernels/fake/fake_module.c): the hop checks (crc32c, ring_check) are the device code's host
 * twins, the same ring_hd.h functions over every index as the kernels' threads; NCCL's collectives
 * are done on host memory, in memory between the members with no launcher, through the
 * communicator's shared-memory segment (fake_nccl.c) between the processes of its ranks under
 * mpirun (one rank a GPU).
 *
 * Environment, to exercise the failure paths:
 *   FAKE_GPU_CRC_BUG=1    the GPU's CRC32C joins its pieces wrong (the pieces' lengths swapped)
 *   FAKE_GPU_HOP_BUG=1    the hop check misses the last wrong element it meets
 *
 *   NCCL, as collectives on host memory (a rank R below: the communicator's rank, which under
 *   mpirun, one rank a GPU, is the MPI rank):
 *   FAKE_GPU_NCCL=0       no NCCL library on this host
 *   FAKE_GPU_NCCL_BUG=R,OP,ALGO,PROTO   on rank R the collective OP ('A', 'R' or 'G') of the path
 *                         ALGO/PROTO gives output element 1 with bit 21 flipped (one of NCCL's
 *                         kernels wrong, on one GPU: the paths not averaged together must show it)
 *   FAKE_GPU_NCCL_REFUSE=ALGO/PROTO     every rank's communicator for that path fails to
 *                         initialise (a protocol NCCL does not offer on this host)
 *   FAKE_GPU_NCCL_REFUSE_LATE=ALGO/PROTO every collective on that path fails with NCCL's own error
 *                         (its initialisation succeeded: NCCL refuses the protocol at its first use)
 *   FAKE_GPU_NCCL_STUCK=R the collectives of rank R (with no launcher: GPU R) never complete, every
 *                         GPU fine (a stuck path): until the communicator is aborted, its kernels
 *                         spin on every member's GPU and a ping there waits behind them
 *   FAKE_GPU_NCCL_HANG=R  rank R's GPU stops (with no launcher: GPU R): its collectives never start
 *                         and its ping never ends (both wait out the deadline)
 *   FAKE_GPU_NCCL_DIE=R   rank R dies (SIGKILL: the burn's worker and the rank's process, its
 *                         parent) at its first collective of iteration 1, its data having reached
 *                         the ranks below it, which finish that collective, and not those above,
 *                         which wait it out (as NCCL's kernels spin for a dead peer's data); ranks
 *                         in several processes only
 *   FAKE_GPU_DP_BUG=R,N   rank R's N-th data-parallel mean (from 0) comes out with element 0's bit 20
 *                         flipped (its GPU's sum went wrong)
 *   Two ranks of one host on the same GPU are refused, as NCCL refuses them ("Using the same CUDA
 *   device multiple times as different ranks of the same NCCL communicator is not supported").
 */
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "probes/allreduce/ring_hd.h"
#include "kernels/xops.h"
#include "kernels/fake/fake_nccl.h"
#include "probes/allreduce/gpu_ops.h"

static int fake_crc32c(const void *buf, uint64_t len, uint32_t *out, double timeout, char *err, size_t errlen)
{
	(void)timeout;
	const uint64_t seg = 256, n0 = len ? (len + seg - 1) / seg : 1;
	uint32_t *crc = malloc(n0 * 4), *c2 = malloc(n0 * 4);
	uint64_t *ln = malloc(n0 * 8), *l2 = malloc(n0 * 8);
	const char *bug = getenv("FAKE_GPU_CRC_BUG");
	if (!crc || !c2 || !ln || !l2) {
		free(crc), free(c2), free(ln), free(l2);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (uint64_t s = 0; s < n0; s++)
		sdc_crc32c_piece(buf, len, seg, s, &crc[s], &ln[s]);
	for (int64_t n = (int64_t)n0; n > 1; n = (n + 1) / 2) {
		for (int64_t i = 0; i < (n + 1) / 2; i++) {
			sdc_crc32c_join(crc, ln, n, i, &c2[i], &l2[i]);
			if (bug && *bug == '1' && 2 * i + 1 < n && ln[2 * i] != ln[2 * i + 1])
				c2[i] = sdc_crc32c_combine(crc[2 * i], crc[2 * i + 1], ln[2 * i]);
		}
		memcpy(crc, c2, (size_t)(n + 1) / 2 * 4);
		memcpy(ln, l2, (size_t)(n + 1) / 2 * 8);
	}
	*out = crc[0];
	free(crc), free(c2), free(ln), free(l2);
	return 0;
}

static int fake_ring_check(int64_t n, uint64_t it, int count, int rsum, const float *own, const uint32_t *got, float *dst,
			   int64_t *wrong, uint32_t *crc, double timeout, char *err, size_t errlen)
{
	const uint32_t salt = sdc_ring_salt(it);
	const char *bug = getenv("FAKE_GPU_HOP_BUG");
	int64_t last = -1;
	*wrong = 0;
	for (int64_t i = 0; i < n; i++) {
		int8_t f, g;
		sdc_ring_term(i, salt, &f, &g);
		if (sdc_ring_check_add_one(&dst[i], own[i], got[i], f, g, count, rsum))
			(*wrong)++, last = i;
	}
	if (bug && *bug == '1' && last >= 0)
		(*wrong)--;
	return fake_crc32c(dst, (uint64_t)n * 4, crc, timeout, err, errlen);
}

static int fake_ring_bench(uint64_t bytes, int reps, double *crc_s, double *check_s, double timeout, char *err,
			   size_t errlen)
{
	(void)bytes, (void)reps, (void)crc_s, (void)check_s, (void)timeout;
	snprintf(err, errlen, "the fake GPU module has no GPU to time");
	return -1;
}

static void nccl_bug(const struct sdc_gpu_comm *c, const struct fmember *m, char op, int64_t nout)
{
	const char *bug = getenv("FAKE_GPU_NCCL_BUG");
	int brank = -1;
	char bop = 0, balgo[16] = "", bproto[16] = "";
	if (bug && sscanf(bug, "%d,%c,%15[^,],%15s", &brank, &bop, balgo, bproto) == 4 && brank == m->rank && bop == op &&
	    !strcasecmp(balgo, c->algo) && !strcasecmp(bproto, c->proto) && nout > 1) {
		uint32_t u;
		memcpy(&u, &m->out[1], 4);
		u ^= 1u << 21;
		memcpy(&m->out[1], &u, 4);
	}
}

/* FAKE_GPU_NCCL_DIE: the rank dies, not only the GPU's process. A burn's worker (it runs the GPU
 * lanes; its launcher's variables are not passed to it) takes the rank's process, its parent,
 * with it; a process that is the rank (under mpirun, its variables set) dies alone. */
static void die_as_rank(void)
{
	const pid_t parent = getppid();
	if (!getenv("OMPI_COMM_WORLD_RANK") && !getenv("PMIX_RANK") && !getenv("PMI_RANK") && parent > 1)
		kill(parent, SIGKILL);
	raise(SIGKILL);
}

/* Rank q's input to a collective: its slot in the segment, or its member's buffer here. */
static const float *input_of(struct sdc_gpu_comm *c, int q)
{
	return c->shm ? fake_xchg_slot(c, q, NULL) : c->m[q - c->m[0].rank].in;
}

/* A member of another process did not come within the deadline: every member here timed out. */
static int peer_late(struct sdc_gpu_comm *c, struct sdc_gpu_coll_result *res, const char *what, char *err,
		     size_t errlen)
{
	snprintf(err, errlen, "%s did not finish in time (a peer that never came, fake)", what);
	for (int i = 0; res && i < c->nmem; i++)
		res[i].timed_out = 1;
	return -1;
}

static int fake_nccl_collective(struct sdc_gpu_comm *c, char op, uint64_t it, const struct sdc_gpu_flip *flip,
				struct sdc_gpu_coll_result *res, double timeout, char *err, size_t errlen)
{
	const int P = c->P;
	const int64_t n = c->n, nin = sdc_coll_in_count(op, n, P), nout = sdc_coll_out_count(op, n, P), cn = n / P;
	const uint32_t salt = sdc_ring_salt(it);
	const double t0 = fake_now();
	for (int i = 0; i < c->nmem; i++) {
		memset(&res[i], 0, sizeof(res[i]));
		res[i].first = -1;
	}
	const char *late = getenv("FAKE_GPU_NCCL_REFUSE_LATE");
	char path[40];
	snprintf(path, sizeof(path), "%s/%s", c->algo, c->proto);
	if (late && *late && !strcasecmp(late, path)) {
		snprintf(err, errlen, "%s: invalid usage (run with NCCL_DEBUG=WARN for details): protocol %s is not "
			 "supported here (fake)", op == 'A' ? "ncclAllReduce" : op == 'R' ? "ncclReduceScatter" : "ncclAllGather",
			 c->proto);
		for (int k = 0; k < c->nmem; k++)
			res[k].refused = 1;
		return -1;
	}
	for (int i = 0; i < c->nmem; i++)
		if (fake_named_by("FAKE_GPU_NCCL_STUCK", c->shm ? c->m[i].rank : c->m[i].ordinal)) {
			/* the path never completes (a peer's data never comes), every GPU fine */
			fake_wait_out(t0, timeout);
			snprintf(err, errlen, "the collective did not finish in time (fake: the path is stuck)");
			for (int k = 0; k < c->nmem; k++) {
				res[k].timed_out = 1;
				fake_spinning[c->m[k].ordinal & 63] = true;
			}
			return -1;
		}
	for (int i = 0; i < c->nmem; i++)
		if (fake_member_hangs(c, &c->m[i])) {
			fake_wait_out(t0, timeout);
			snprintf(err, errlen, "the collective did not finish in time (fake: a GPU stopped)");
			for (int k = 0; k < c->nmem; k++)
				res[k].timed_out = 1;
			return -1;
		}
	for (int i = 0; i < c->nmem; i++)
		for (int64_t x = 0; x < nin; x++)
			c->m[i].in[x] = sdc_coll_input(op, x, c->m[i].rank, P, n, salt);
	const char *die = getenv("FAKE_GPU_NCCL_DIE");
	if (c->shm && die && *die && it == 1) {
		const int victim = atoi(die);
		bool above = false;
		for (int i = 0; i < c->nmem; i++) {
			if (c->m[i].rank == victim)
				die_as_rank();
			res[i].timed_out = c->m[i].rank > victim;
			above |= res[i].timed_out;
		}
		if (above) {
			fake_wait_out(t0, timeout);
			snprintf(err, errlen, "the collective did not finish in time (fake: a peer died before its data came)");
			return -1;
		}
		for (int i = 0; i < c->nmem; i++) /* the victim's data came: the right result */
			for (int64_t x = 0; x < nout; x++)
				c->m[i].out[x] = sdc_coll_expect(op, x, c->m[i].rank, P, n, salt);
	} else {
		/* every member's input where every member reads it: the segment's slots, or its own */
		if (c->shm && !fake_xchg_begin(c, t0, timeout))
			return peer_late(c, res, "the collective", err, errlen);
		for (int i = 0; c->shm && i < c->nmem; i++)
			memcpy(fake_xchg_slot(c, c->m[i].rank, NULL), c->m[i].in, (size_t)nin * 4);
		if (c->shm && !fake_xchg_post(c, t0, timeout))
			return peer_late(c, res, "the collective", err, errlen);
		/* every member's output from every rank's input, summed in rank order */
		for (int i = 0; i < c->nmem; i++) {
			struct fmember *m = &c->m[i];
			for (int64_t x = 0; x < nout; x++) {
				float sum = 0;
				if (op == 'G')
					sum = input_of(c, (int)(x / cn))[x % cn];
				else
					for (int q = 0; q < P; q++)
						sum += input_of(c, q)[op == 'R' ? x + (int64_t)m->rank * cn : x];
				m->out[x] = sum;
			}
		}
		if (c->shm)
			fake_xchg_end(c);
	}
	for (int i = 0; i < c->nmem; i++) {
		struct fmember *m = &c->m[i];
		res[i].seconds = fake_now() - t0;
		nccl_bug(c, m, op, nout);
		if (flip && flip->member == i && flip->el >= 0 && flip->el < nout)
			fake_flip_word(&m->out[flip->el], flip->bit);
		/* the check kernel's twin: every element against its exact value */
		for (int64_t x = 0; x < nout; x++) {
			const float e = sdc_coll_expect(op, x, m->rank, P, n, salt);
			if (memcmp(&e, &m->out[x], 4) && !res[i].wrong++) {
				res[i].first = x;
				res[i].got = m->out[x];
				res[i].expected = e;
			}
		}
	}
	return 0;
}

/* Where rank stands in the ring. */
static int ring_position(const int *order, int P, int rank)
{
	int p = 0;
	while (p < P && order[p] != rank)
		p++;
	return p;
}

/* A member's step before the exchange (nccl.cu's step_send): the header with its chunk's CRC32C,
 * its own faults, what it sends. */
static void ring_send(struct fmember *m, int mi, int P, int64_t cn, int phase, int s, int p,
		      const struct sdc_gpu_ring_fault *faults, int nfaults)
{
	const size_t cb = (size_t)cn * 4;
	const struct sdc_ring_step st = sdc_ring_step_at(phase, s, p, P);
	m->payload = phase == 0 && s == 0 ? m->in + (int64_t)st.send_c * cn
		     : phase == 0	  ? m->sums
					  : m->out + (int64_t)st.send_c * cn;
	m->hdr[0] = sdc_crc32c_hd(0, (const uint8_t *)m->payload, cb);
	m->hdr[1] = (uint32_t)(phase << 16 | s);
	m->hdr[2] = sdc_crc32c_hd(0, (const uint8_t *)m->hdr, 8);
	for (int k = 0; k < nfaults; k++) {
		const struct sdc_gpu_ring_fault *f = &faults[k];
		if (f->member != mi || (f->kind != 'H' && f->kind != 'h') || f->phase != phase || f->step != s)
			continue;
		if (f->kind == 'h') {
			m->hdr[0] ^= 1u << (f->bit & 31);
		} else {
			memcpy(m->fault, m->payload, cb);
			fake_flip_word(&m->fault[f->el % cn], f->bit);
			m->payload = m->fault;
		}
	}
}

/* A member's step after the exchange (nccl.cu's step_check): the CRC32C of what arrived, every
 * element against its partial sum (reduce-scatter: the sums sent on; all-gather: put right). */
static void ring_check(struct fmember *m, int mi, const int *order, int P, int64_t cn, int phase, int s, int p,
		       uint32_t salt, const struct sdc_gpu_ring_fault *faults, int nfaults, struct sdc_gpu_hop *o)
{
	const size_t cb = (size_t)cn * 4;
	const struct sdc_ring_step st = sdc_ring_step_at(phase, s, p, P);
	const int64_t off = (int64_t)st.recv_c * cn;
	float *into = phase == 0 ? m->recv : m->out + off;
	memcpy(o->hdr, m->rhdr, 12);
	o->crc = sdc_crc32c_hd(0, (const uint8_t *)into, cb);
	o->nbad = 0, o->first = -1, o->got = 0, o->expected = 0;
	const int rsum = sdc_ring_rank_sum(order, P, st.first, st.count);
	float *dst = phase == 0 ? (s < P - 2 ? m->sums : m->out + off) : NULL;
	for (int64_t i = 0; i < cn; i++) {
		int8_t f, g;
		uint32_t u;
		sdc_ring_term(off + i, salt, &f, &g);
		memcpy(&u, &into[i], 4);
		if (sdc_ring_check_add_one(dst ? &dst[i] : NULL, phase == 0 ? m->in[off + i] : 0, u, f, g, st.count, rsum) &&
		    !o->nbad++) {
			o->first = i;
			o->got = into[i];
			o->expected = sdc_ring_expect(st.count, rsum, f, g);
		}
		if (phase == 1)
			into[i] = sdc_ring_expect(st.count, rsum, f, g); /* put right */
	}
	for (int k = 0; k < nfaults && phase == 0 && s == 0; k++)
		if (faults[k].kind == 'C' && faults[k].member == mi)
			fake_flip_word(&dst[faults[k].el % cn], faults[k].bit);
}

/* The checked ring's twin (kernels/cuda/nccl.cu's m_nccl_ring): the same schedule and per-element
 * checks (ring_hd.h), the CRC32C one byte at a time, each step's chunk and header through the
 * communicator's segment (members in several processes) or, with every member here, copied from
 * the previous member. */
static int fake_nccl_ring(struct sdc_gpu_comm *c, const int *order, uint64_t it, const struct sdc_gpu_ring_fault *faults,
			  int nfaults, struct sdc_gpu_hop *hops, double *seconds, int *timed_out, double timeout, char *err,
			  size_t errlen)
{
	*timed_out = 0;
	const int P = c->P, nh = 2 * (P - 1);
	const int64_t n = c->n, cn = n / P;
	const uint32_t salt = sdc_ring_salt(it);
	const double t0 = fake_now();
	for (int i = 0; i < c->nmem; i++)
		if (fake_member_hangs(c, &c->m[i])) {
			fake_wait_out(t0, timeout);
			snprintf(err, errlen, "the checked ring did not finish in time (fake: a GPU stopped)");
			*timed_out = 1;
			return -1;
		}
	for (int i = 0; i < c->nmem; i++)
		for (int64_t x = 0; x < n; x++)
			c->m[i].in[x] = sdc_coll_input('A', x, c->m[i].rank, P, n, salt);
	for (int phase = 0; phase < 2; phase++)
		for (int s = 0; s < P - 1; s++) {
			const int h = phase * (P - 1) + s;
			for (int i = 0; i < c->nmem; i++)
				ring_send(&c->m[i], i, P, cn, phase, s, ring_position(order, P, c->m[i].rank), faults, nfaults);
			if (c->shm) {
				/* each member's header and chunk into its slot, then each takes the previous
				 * rank's (in the ring's order) */
				uint32_t *hdr;
				if (!fake_xchg_begin(c, t0, timeout)) {
					*timed_out = 1;
					return peer_late(c, NULL, "the ring's send/receive", err, errlen);
				}
				for (int i = 0; i < c->nmem; i++) {
					struct fmember *m = &c->m[i];
					memcpy(fake_xchg_slot(c, m->rank, &hdr), m->payload, (size_t)cn * 4);
					memcpy(hdr, m->hdr, 12);
				}
				if (!fake_xchg_post(c, t0, timeout)) {
					*timed_out = 1;
					return peer_late(c, NULL, "the ring's send/receive", err, errlen);
				}
				for (int i = 0; i < c->nmem; i++) {
					struct fmember *m = &c->m[i];
					const int p = ring_position(order, P, m->rank);
					float *into = phase == 0 ? m->recv : m->out + (int64_t)sdc_ring_step_at(phase, s, p, P).recv_c * cn;
					memcpy(into, fake_xchg_slot(c, order[(p - 1 + P) % P], &hdr), (size_t)cn * 4);
					memcpy(m->rhdr, hdr, 12);
				}
				fake_xchg_end(c);
			} else {
				for (int i = 0; i < c->nmem; i++) {
					struct fmember *m = &c->m[i];
					const int p = ring_position(order, P, m->rank);
					const struct fmember *from = &c->m[order[(p - 1 + P) % P]];
					float *into = phase == 0 ? m->recv : m->out + (int64_t)sdc_ring_step_at(phase, s, p, P).recv_c * cn;
					memcpy(m->rhdr, from->hdr, 12);
					memcpy(into, from->payload, (size_t)cn * 4);
				}
			}
			for (int i = 0; i < c->nmem; i++)
				ring_check(&c->m[i], i, order, P, cn, phase, s, ring_position(order, P, c->m[i].rank), salt, faults,
					   nfaults, &hops[i * nh + h]);
		}
	*seconds = fake_now() - t0;
	return 0;
}

/* The allreduce family's table (fake_module.c asks for it). */
const struct sdc_gpu_allreduce_ops *fake_allreduce_family(void)
{
	static struct sdc_gpu_allreduce_ops t = {
		.crc32c = fake_crc32c,
		.ring_check = fake_ring_check,
		.ring_bench = fake_ring_bench,
		.nccl_collective = fake_nccl_collective,
		.nccl_ring = fake_nccl_ring,
	};
	t.version = SDC_GPU_ALLREDUCE_VERSION - fake_stale("allreduce");
	return &t;
}
