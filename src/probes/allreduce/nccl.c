/*
 * allreduce's nccl variant: NCCL's native collectives between the ranks' GPUs (one rank per GPU
 * under mpirun or srun), on the probe's exact data, through the GPU module (kernels/cuda/nccl.cu).
 *
 *   - Every (algorithm, protocol) path asked for (option nccl_paths: NCCL's own choice, Ring and
 *     Tree with Simple, LL and LL128) gets a communicator of its own, so a fault in one path is not
 *     averaged away by NCCL picking another; a path NCCL refuses on this host (its init fails on
 *     some rank) is dropped on every rank and said in the report, never passed silently.
 *   - Each iteration runs ncclAllReduce on every path, and ncclReduceScatter and ncclAllGather on
 *     the paths that have them (Tree is all-reduce only). Each rank draws its input and checks
 *     every output element on its GPU (ring_hd.h: exact small integers, so any order of summation
 *     gives the same bits); wrong elements are counted per rank and the counts agreed among the
 *     ranks, and each rank with wrong elements names itself, the path and the collective.
 *   - No hangs: the communicators are non-blocking and every wait has the probe's deadline. Past
 *     it the rank aborts its communicators, asks its GPU to run a kernel of one thread (a stuck
 *     GPU does not), and the ranks tell each other what they saw: a rank that does not answer
 *     (dead, or its host stuck) or whose GPU is stuck is named; otherwise the path is (UNKNOWN).
 *   - algbw and busbw per path and collective as nccl-tests defines them (doc/PERFORMANCE.md),
 *     from events around the collective alone, go into the report (run.environment.nccl).
 * The NCCL unique id of each communicator is made by rank 0 and given to the others over MPI.
 */
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"
#include "gpu.h"
#include "kernels/ring_hd.h"
#include "probes/allreduce/allreduce.h"
#include "sdc_config.h"

/* The paths (option nccl_paths' choices) and the NCCL_ALGO / NCCL_PROTO values they set. */
const char *const sdc_ar_nccl_paths[] = { "auto",	"ring/simple", "ring/ll", "ring/ll128",
					  "tree/simple", "tree/ll",	 "tree/ll128", NULL };
static const char *const path_algo[] = { "", "Ring", "Ring", "Ring", "Tree", "Tree", "Tree" };
static const char *const path_proto[] = { "", "Simple", "LL", "LL128", "Simple", "LL", "LL128" };
#define NPATHS 7

#if HAVE_MPI /* (allreduce.c runs no variant without MPI) */

/* What a rank says to the others after each step: how it went, and its GPU. */
struct nc_word {
	int32_t status; /* 0 done, 1 failed (an error), 2 past the deadline */
	int32_t gpu_ok; /* after a deadline: its GPU still ran a kernel */
	int64_t wrong;  /* wrong elements it found */
	int32_t stop;   /* before an iteration: this rank's time is up (all stop together) */
	int32_t pad;
};

#define NC_TAG 0x4E43
/* A GPU that does not run a kernel of one thread in PING_S is stuck. The ranks' exchange after a
 * step waits that long and a margin for a rank still pinging (no heartbeat comes from it then); a
 * dead rank is named by it, or sooner by MPI. */
#define PING_S 3.0
#define AGREE_S (PING_S + 4.0)

struct nc_run {
	struct sdc_worker *w;
	const struct sdc_gpu_module *m;
	const struct ar_shared *sh;
	bool *live;
	struct nc_word *all;
	struct sdc_gpu_comm *comm[NPATHS];
	const char *version;
	json_t *paths; /* per path: the collectives' bandwidth, or why NCCL refused it */
	char refusal[200]; /* the first path NCCL refused, and why (this rank's words, or another's) */
	char (*bus)[24];   /* every rank's GPU, its PCI bus id (a hop's report names both ends) */
};

/*
 * Every rank says `mine` to every other (a deadline: a rank that says nothing is named), so all
 * hold all[]. After a deadline (stuck), a rank first pings its GPU. Returns 0, or -1 when the run
 * cannot go on (a rank gone, or a stuck GPU or path: named, UNKNOWN).
 */
static int agree(struct nc_run *r, struct nc_word mine, const char *what)
{
	const int P = sdc_fleet.size, me = sdc_fleet.rank;
	char err[256] = "";
	if (mine.status == 2)
		mine.gpu_ok = r->m->ping(PING_S, err, sizeof(err)) == 0;
	struct sdc_fleet_part *send = calloc((size_t)P, sizeof(*send)), *recv = calloc((size_t)P, sizeof(*recv));
	if (!send || !recv) {
		free(send), free(recv);
		sdc_worker_error(r->w, "out of memory");
		return -1;
	}
	for (int p = 0; p < P; p++) {
		send[p] = (struct sdc_fleet_part){ &mine, sizeof(mine) };
		recv[p] = (struct sdc_fleet_part){ &r->all[p], sizeof(r->all[p]) };
	}
	r->all[me] = mine;
	bool *was = malloc((size_t)P * sizeof(bool));
	if (was)
		memcpy(was, r->live, (size_t)P * sizeof(bool));
	const int gone = sdc_fleet_alltoall(send, recv, r->live, NC_TAG, AGREE_S);
	free(send), free(recv);
	int rc = 0;
	for (int p = 0; was && p < P; p++)
		if (was[p] && !r->live[p]) {
			sdc_ar_unresponsive(r->w, p, what);
			rc = -1;
		}
	free(was);
	if (gone < 0) {
		sdc_ar_unresponsive(r->w, -1, what);
		return -1;
	}
	if (rc)
		return -1;
	/* a stuck GPU named by its rank, and by the others in their reports too */
	bool late = false;
	int stuck = -1;
	for (int p = 0; p < P; p++) {
		if (r->all[p].status != 2)
			continue;
		late = true;
		if (r->all[p].gpu_ok)
			continue;
		stuck = stuck < 0 ? p : stuck;
		struct sdc_finding f = { .cls = SDC_FINDING_ERROR, .row = p, .col = -1 };
		sdc_strlcpy(f.kind, "gpu-unresponsive", sizeof(f.kind));
		snprintf(f.detail, sizeof(f.detail),
			 "%s did not finish within %.0f s, and rank %d's GPU (%s) then did not run a kernel of one "
			 "thread within %.0f s: that GPU is stuck%s%s",
			 what, r->sh->timeout, p, sdc_fleet_host(p), PING_S, p == me && err[0] ? ": " : "", p == me ? err : "");
		sdc_worker_report(r->w, &f);
	}
	if (late && stuck < 0) {
		/* every GPU runs kernels, every rank answers over MPI: NCCL's path itself (a link, a
		 * network, the library) never completed */
		struct sdc_finding f = { .cls = SDC_FINDING_ERROR, .row = -1, .col = -1 };
		sdc_strlcpy(f.kind, "collective-stuck", sizeof(f.kind));
		int n = snprintf(f.detail, sizeof(f.detail), "%s did not finish within %.0f s on rank(s)", what,
				 r->sh->timeout);
		for (int p = 0; p < P && n < (int)sizeof(f.detail) - 12; p++)
			if (r->all[p].status == 2)
				n += snprintf(f.detail + n, sizeof(f.detail) - (size_t)n, " %d", p);
		snprintf(f.detail + n, sizeof(f.detail) - (size_t)n,
			 "; every GPU still runs kernels and every rank answers over MPI: the path (a link, the network or "
			 "NCCL) is stuck");
		sdc_worker_report(r->w, &f);
	}
	if (late) {
		if (stuck >= 0)
			snprintf(r->w->error, sizeof(r->w->error), "rank %d (%s)'s GPU is stuck: %s did not finish within %.0f s",
				 stuck, sdc_fleet_host(stuck), what, r->sh->timeout);
		else
			snprintf(r->w->error, sizeof(r->w->error), "%s did not finish within %.0f s: the path is stuck", what,
				 r->sh->timeout);
		r->w->failed = true;
		return -1;
	}
	return 0;
}

/* The communicators of every path in the mask: an id from rank 0 each, every rank's init agreed. */
static int open_paths(struct nc_run *r, uint32_t mask)
{
	const int P = sdc_fleet.size;
	struct {
		uint8_t id[SDC_GPU_NCCL_ID_BYTES];
		int32_t ok;
		char why[124];
	} mine, *ids = calloc((size_t)P, sizeof(mine));
	if (!ids) {
		sdc_worker_error(r->w, "out of memory");
		return -1;
	}
	int opened = 0, rc = 0;
	for (int k = 0; k < NPATHS && !rc; k++) {
		if (!sdc_opt_set_has(mask, k))
			continue;
		memset(&mine, 0, sizeof(mine));
		mine.ok = sdc_fleet.rank != 0 || !r->m->nccl_unique_id(mine.id, mine.why, sizeof(mine.why));
		if (sdc_fleet_allgather(&mine, (int)sizeof(mine), ids, r->sh->timeout)) {
			sdc_ar_unresponsive(r->w, -1, "the exchange of NCCL's unique id");
			rc = -1;
			break;
		}
		if (!ids[0].ok) {
			sdc_worker_error(r->w, "ncclGetUniqueId on rank 0 (%s): %s", sdc_fleet_host(0), ids[0].why);
			rc = -1;
			break;
		}
		char err[256] = "", what[96];
		snprintf(what, sizeof(what), "NCCL's initialisation of path %s", sdc_ar_nccl_paths[k]);
		r->comm[k] = r->m->nccl_init(ids[0].id, P, sdc_fleet.rank, path_algo[k], path_proto[k], r->sh->n,
					     r->sh->timeout, err, sizeof(err));
		const bool late = !r->comm[k] && strstr(err, "in time");
		if (agree(r, (struct nc_word){ .status = r->comm[k] ? 0 : late ? 2 : 1 }, what)) {
			rc = -1;
			break;
		}
		int refused = 0;
		for (int p = 0; p < P; p++)
			refused += r->all[p].status != 0;
		if (refused) {
			/* NCCL does not offer it here (a protocol off on this platform): said, and left out */
			if (!r->refusal[0])
				snprintf(r->refusal, sizeof(r->refusal), "%s: %s", sdc_ar_nccl_paths[k],
					 r->comm[k] ? "refused on another rank" : err);
			json_object_set_new(r->paths, sdc_ar_nccl_paths[k],
					    json_pack("{s:s, s:i}", "refused", r->comm[k] ? "on another rank" : err, "ranks_refusing",
						      refused));
			r->m->nccl_destroy(r->comm[k], 1);
			r->comm[k] = NULL;
			continue;
		}
		json_object_set_new(r->paths, sdc_ar_nccl_paths[k], json_object());
		opened++;
	}
	free(ids);
	if (!rc && !opened) {
		sdc_worker_error(r->w, "NCCL refused every path asked for (nccl_paths), the first %s", r->refusal);
		rc = -1;
	}
	return rc;
}

/* The bandwidth of one collective, as nccl-tests counts it, kept per path (the best seen). */
static void keep_bw(struct nc_run *r, int k, char op, double seconds)
{
	if (seconds <= 0)
		return;
	const char *name = op == 'A' ? "all_reduce" : op == 'R' ? "reduce_scatter" : "all_gather";
	const double bytes = (double)r->sh->n * 4, algbw = bytes / seconds / 1e9;
	json_t *path = json_object_get(r->paths, sdc_ar_nccl_paths[k]);
	json_t *old = json_object_get(path, name);
	if (old && json_real_value(json_object_get(old, "algbw_gb_s")) >= algbw)
		return;
	json_object_set_new(path, name,
			    json_pack("{s:f, s:f, s:f}", "bytes", bytes, "algbw_gb_s", algbw, "busbw_gb_s",
				      algbw * sdc_coll_bus_factor(op, sdc_fleet.size)));
}

/* What both variants start with: NCCL there, the ranks' exchange ready, the communicators of the
 * paths in mask open. 0, or -1 (the worker says why). */
static int nc_start(struct nc_run *r, struct sdc_worker *w, uint32_t mask)
{
	const int P = sdc_fleet.size;
	char why[256] = "";
	*r = (struct nc_run){ .w = w, .m = sdc_gpu_ops(), .sh = w->ctx->shared };
	if (!r->m || !r->m->nccl_init) {
		sdc_worker_error(w, "this GPU module was built without NCCL (nccl.h missing at build time)");
		return -1;
	}
	if (!(r->version = r->m->nccl_version(why, sizeof(why)))) {
		sdc_worker_error(w, "%s: install NCCL (libnccl2) or leave the nccl variants out of allreduce.variants",
				 why);
		return -1;
	}
	r->live = malloc((size_t)P * sizeof(bool));
	r->all = calloc((size_t)P, sizeof(*r->all));
	r->paths = json_object();
	if (!r->live || !r->all || !r->paths) {
		sdc_worker_error(w, "out of memory");
		return -1;
	}
	for (int p = 0; p < P; p++)
		r->live[p] = true;
	snprintf(w->kernel, sizeof(w->kernel), "nccl %s, rank %d of %d", r->version, sdc_fleet.rank, P);
	char mine[24] = "";
	sdc_strlcpy(mine, w->dev->gpu.pci_bus_id, sizeof(mine));
	if (!(r->bus = calloc((size_t)P, sizeof(*r->bus))) || sdc_fleet_allgather(mine, (int)sizeof(mine), r->bus, r->sh->timeout)) {
		sdc_ar_unresponsive(w, -1, "the exchange of the ranks' GPUs");
		return -1;
	}
	return open_paths(r, mask);
}

/* Whether every rank goes on to another iteration: all do, or all stop, through the same exchange
 * (which names a rank gone). */
static bool nc_go_on(struct nc_run *r)
{
	if (agree(r, (struct nc_word){ .stop = !sdc_worker_continue(r->w) }, "the agreement to go on"))
		return false;
	for (int p = 0; p < sdc_fleet.size; p++)
		if (r->all[p].stop)
			return false;
	return true;
}

/* The communicators closed (aborted after a failure), the figures into the report. */
static void nc_end(struct nc_run *r, const char *key)
{
	for (int k = 0; k < NPATHS; k++)
		if (r->comm[k])
			r->m->nccl_destroy(r->comm[k], r->w->failed);
	if (r->paths) {
		struct sdc_run *run = r->w->ctx->run;
		pthread_mutex_lock(&run->lock);
		json_t *env = json_object_get(run->environment, "nccl");
		if (!env)
			json_object_set_new(run->environment, "nccl",
					    env = json_pack("{s:s, s:i}", "version", r->version ? r->version : "", "ranks",
							    sdc_fleet.size));
		json_object_set_new(env, key, r->paths);
		pthread_mutex_unlock(&run->lock);
	}
	free(r->live), free(r->all), free(r->bus);
}

void sdc_ar_nccl_run(struct sdc_worker *w)
{
	const struct ar_shared *sh = w->ctx->shared;
	const int P = sdc_fleet.size;
	struct nc_run r;
	if (nc_start(&r, w, sh->nccl_paths))
		goto out;
	for (uint64_t it = 0; nc_go_on(&r); it++) {
		struct sdc_fault vf[4];
		const int nv = sdc_worker_faults(w, "V", it, vf, 4);
		uint64_t total = 0;
		double moved = 0;
		bool first_path = true;
		for (int k = 0; k < NPATHS; k++) {
			if (!r.comm[k])
				continue;
			static const char ops[] = { 'A', 'R', 'G' };
			const int nops = path_algo[k][0] == 'T' ? 1 : 3; /* Tree is all-reduce only */
			for (int o = 0; o < nops; o++) {
				const char op = ops[o];
				const int64_t nout = sdc_coll_out_count(op, sh->n, P);
				/* V: an element of the first path's all-reduce result changes in GPU memory */
				int64_t flip_el = -1;
				int flip_bit = 0;
				for (int i = 0; i < nv && first_path && op == 'A'; i++)
					if ((vf[i].row >= 0 ? vf[i].row : 0) == sdc_fleet.rank) {
						flip_el = vf[i].col >= 0 ? vf[i].col % nout : nout / 3;
						flip_bit = vf[i].bit >= 0 ? (int)(vf[i].bit % 32) : 22;
						sdc_worker_fault_applied(w, &vf[i], "V", it, sdc_fleet.rank, flip_el, flip_bit, "", "");
					}
				struct sdc_gpu_coll_result res;
				char err[256] = "", what[96];
				const char *name = op == 'A' ? "ncclAllReduce" : op == 'R' ? "ncclReduceScatter" : "ncclAllGather";
				snprintf(what, sizeof(what), "%s on path %s", name, sdc_ar_nccl_paths[k]);
				const int rc = r.m->nccl_collective(r.comm[k], op, it, flip_el, flip_bit, &res, sh->timeout, err,
								    sizeof(err));
				if (rc && !res.timed_out)
					sdc_worker_error(w, "%s: %s", what, err);
				if (agree(&r, (struct nc_word){ .status = rc ? res.timed_out ? 2 : 1 : 0, .wrong = res.wrong },
					  what))
					goto out;
				int64_t all_wrong = 0;
				for (int p = 0; p < P; p++) {
					if (r.all[p].status == 1 && !rc) {
						/* another rank's error: this one stops with it (named in that rank's report) */
						snprintf(w->error, sizeof(w->error), "rank %d (%s) failed in %s", p, sdc_fleet_host(p),
							 what);
						w->failed = true;
					}
					all_wrong += r.all[p].wrong;
				}
				if (w->failed)
					goto out;
				if (res.wrong)
					sdc_ar_report(w, it, "collective-wrong", "V", sdc_fleet.rank, res.first, res.expected, res.got,
						      NULL,
						      "%s gave rank %d (%s, GPU %s) %" PRId64 " wrong elements of %" PRId64
						      " (%" PRId64 " on all ranks); first element %" PRId64,
						      what, sdc_fleet.rank, sdc_fleet.host, w->dev->gpu.pci_bus_id, res.wrong, nout,
						      all_wrong, res.first);
				total += (uint64_t)all_wrong;
				keep_bw(&r, k, op, res.seconds);
				moved += (double)sh->n * 4 * sdc_coll_bus_factor(op, P);
			}
			first_path = false;
		}
		sdc_worker_digest(w, it, total);
		sdc_worker_account(w, moved);
	}
out:
	nc_end(&r, "paths");
}

/* This rank's part of the iteration's H and C faults (allreduce.c's plan: every rank gets the
 * list, the one a fault names acts), for the forward ring at position p. */
static int ring_faults(struct sdc_worker *w, uint64_t it, const int *fwd, int p, struct sdc_gpu_ring_fault *out)
{
	const int P = sdc_fleet.size, me = sdc_fleet.rank;
	const int64_t cn = ((const struct ar_shared *)w->ctx->shared)->n / P;
	struct sdc_fault f[SDC_GPU_RING_FAULTS];
	int n = 0;
	const int nh = sdc_worker_faults(w, "H", it, f, SDC_GPU_RING_FAULTS);
	for (int i = 0; i < nh && n < SDC_GPU_RING_FAULTS; i++) {
		int phase;
		bool header;
		const int src = f[i].row >= 0 ? (int)f[i].row : 0;
		int at = 0;
		while (at < P && fwd[at] != src)
			at++;
		const int dst = f[i].col >= 0 ? (int)f[i].col : fwd[(at + 1) % P];
		sdc_ar_hop_tensor(w->ctx->run->inject[f[i].spec].tensor, &phase, &header); /* setup refused others */
		if (src != me || dst != fwd[(p + 1) % P])
			continue;
		const int bit = f[i].bit >= 0 ? (int)(f[i].bit % 32) : header ? 3 : 20;
		out[n++] = (struct sdc_gpu_ring_fault){ .kind = header ? 'h' : 'H', .phase = phase, .step = 0, .bit = bit,
							.el = cn / 3 };
		sdc_worker_fault_applied(w, &f[i], "H", it, src, dst, bit, "", "");
	}
	const int nc = sdc_worker_faults(w, "C", it, f, SDC_GPU_RING_FAULTS);
	for (int i = 0; i < nc && n < SDC_GPU_RING_FAULTS; i++) {
		if ((f[i].row >= 0 ? f[i].row : 0) != me)
			continue;
		const int bit = f[i].bit >= 0 ? (int)(f[i].bit % 32) : 22;
		out[n++] = (struct sdc_gpu_ring_fault){ .kind = 'C', .bit = bit, .el = cn / 5 };
		sdc_worker_fault_applied(w, &f[i], "C", it, me, sdc_ring_step_at(0, 0, p, P).recv_c * cn + cn / 5, bit, "",
					 "");
	}
	return n;
}

void sdc_ar_nccl_ring_run(struct sdc_worker *w)
{
	const struct ar_shared *sh = w->ctx->shared;
	const int P = sdc_fleet.size, me = sdc_fleet.rank, nh = 2 * (P - 1);
	const int64_t cn = sh->n / P;
	static const char *const names[] = { "forward", "reversed", "shuffled" };
	struct nc_run r;
	int *orders = malloc(3 * sizeof(int) * (size_t)P);
	struct sdc_gpu_hop *hops = malloc(sizeof(*hops) * (size_t)nh);
	double best = 0;
	if (!orders || !hops) {
		sdc_worker_error(w, "out of memory");
		r = (struct nc_run){ .w = w };
		goto out;
	}
	/* point-to-point takes no NCCL_ALGO / NCCL_PROTO: one communicator, NCCL's own choice */
	if (nc_start(&r, w, 1u) || !r.comm[0])
		goto out;
	for (uint64_t it = 0; nc_go_on(&r); it++) {
		sdc_ar_ring_orders(P, it, orders, orders + P, orders + 2 * P);
		for (int k = 0; k < 3; k++) {
			const int *order = orders + k * P;
			int p = 0;
			while (p < P && order[p] != me)
				p++;
			struct sdc_gpu_ring_fault faults[SDC_GPU_RING_FAULTS];
			const int nf = k == 0 ? ring_faults(w, it, order, p, faults) : 0;
			char err[256] = "", what[96];
			double seconds = 0;
			int timed_out = 0;
			snprintf(what, sizeof(what), "the %s checked ring over NCCL", names[k]);
			const int rc = r.m->nccl_ring(r.comm[0], order, it, faults, nf, hops, &seconds, &timed_out, sh->timeout,
						      err, sizeof(err));
			if (rc && !timed_out)
				sdc_worker_error(w, "%s: %s", what, err);
			if (agree(&r, (struct nc_word){ .status = rc ? timed_out ? 2 : 1 : 0 }, what))
				goto out;
			for (int q = 0; q < P; q++)
				if (r.all[q].status == 1 && !rc) {
					snprintf(w->error, sizeof(w->error), "rank %d (%s) failed in %s", q, sdc_fleet_host(q), what);
					w->failed = true;
				}
			if (w->failed)
				goto out;
			/* every hop judged as the MPI ring judges it: a bad CRC names the link, a good CRC
			 * on wrong values the sender */
			const int prev = order[(p - 1 + P) % P];
			for (int h = 0; h < nh; h++) {
				const int phase = h >= P - 1, s = h - phase * (P - 1);
				struct sdc_hop_verdict hv;
				sdc_ring_hop_verdict_crc(hops[h].hdr, (uint32_t)(phase << 16 | s), hops[h].crc, hops[h].nbad, &hv);
				if (hv.fault == SDC_HOP_OK)
					continue;
				char step[160];
				snprintf(step, sizeof(step), "%s's %s step %d (GPU %s to GPU %s)", what,
					 phase ? "all-gather" : "reduce-scatter", s, r.bus[prev], r.bus[me]);
				const int64_t el =
					hops[h].first >= 0 ? (int64_t)sdc_ring_step_at(phase, s, p, P).recv_c * cn + hops[h].first : -1;
				sdc_ar_hop_report(w, it, step, prev, me, &hv, hops[h].hdr, hops[h].nbad, el, hops[h].expected,
						  hops[h].got);
			}
			if (k == 0 && seconds > 0 && (best == 0 || seconds < best))
				best = seconds;
		}
		sdc_worker_digest(w, it, it);
		sdc_worker_account(w, 3.0 * (double)sh->n * 4 * sdc_coll_bus_factor('A', P));
	}
out:
	if (r.paths && best > 0) {
		const double algbw = (double)sh->n * 4 / best / 1e9;
		json_object_set_new(r.paths, "checked_ring",
				    json_pack("{s:f, s:f, s:f}", "bytes", (double)sh->n * 4, "algbw_gb_s", algbw, "busbw_gb_s",
					      algbw * sdc_coll_bus_factor('A', P)));
	}
	nc_end(&r, "ring");
	free(orders), free(hops);
}
#endif
