/*
 * allreduce's nccl variants, through the GPU module (kernels/cuda/nccl.cu), in two launch shapes:
 * under mpirun or srun one rank a GPU (the rank's place on its host picks it; NCCL's unique id
 * made by rank 0 and given to the others over MPI), or with no launcher one process driving every
 * selected GPU of the host (a communicator over them, initialised and launched in one group, as
 * ncclCommInitAll does). The members are the ranks, or the GPUs, and findings name them so.
 *
 * nccl: NCCL's native collectives on the probe's exact data.
 *   - Every (algorithm, protocol) path asked for (option nccl_paths: NCCL's own choice, Ring and
 *     Tree with Simple, LL and LL128) gets a communicator of its own, so a fault in one path is not
 *     averaged away by NCCL picking another; a path NCCL refuses on this host (its init fails on
 *     some member) is dropped everywhere and said in the report, never passed silently.
 *   - Each iteration runs ncclAllReduce on every path, and ncclReduceScatter and ncclAllGather on
 *     the paths that have them (Tree is all-reduce only). Each member draws its input and checks
 *     every output element on its GPU (ring_hd.h: exact small integers, so any order of summation
 *     gives the same bits); wrong elements are counted per member and the counts agreed, and each
 *     member with wrong elements is named with the path and the collective.
 * nccl-ring: sdcscan's checked ring (allreduce.c's ring variant) over NCCL's send and receive,
 *   every chunk's CRC32C taken and every element checked on the GPU, the hops judged as on MPI.
 *
 * No hangs: the communicators are non-blocking and every wait has the probe's deadline. Past it
 * the communicators are aborted, each member's GPU is asked to run a kernel of one thread (a stuck
 * GPU does not), and the members tell each other what they saw: a rank that does not answer
 * (dead, or its host stuck) or whose GPU is stuck is named; otherwise the path is (UNKNOWN).
 * algbw and busbw per path and collective as nccl-tests defines them (doc/PERFORMANCE.md), from
 * events around the collective alone, go into the report (run.environment.nccl).
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/facts.h"
#include "mpi/transport.h"
#include "device/gpu_loader.h"
#include "mpi/gpu_ranks.h"
#include "probes/allreduce/gpu_ops.h"
#include "probes/allreduce/ring_hd.h"
#include "probes/allreduce/allreduce.h"
#include "base/message.h"

/* The paths (option nccl_paths' choices) and the NCCL_ALGO / NCCL_PROTO values they set. */
const char *const sdc_ar_nccl_paths[] = { "auto",	"ring/simple", "ring/ll", "ring/ll128",
					  "tree/simple", "tree/ll",	 "tree/ll128", NULL };
static const char *const path_algo[] = { "", "Ring", "Ring", "Ring", "Tree", "Tree", "Tree" };
static const char *const path_proto[] = { "", "Simple", "LL", "LL128", "Simple", "LL", "LL128" };
#define NPATHS 7
#define MAX_MEMBERS 64

void sdc_ar_nccl_path_env(int k, const char **algo, const char **proto)
{
	*algo = path_algo[k], *proto = path_proto[k];
}

/* What a member says after each step: how it went, and its GPU. */
struct nc_word {
	int32_t status; /* 0 done, 1 failed (an error), 2 past the deadline, 3 NCCL refused the path's first collective */
	int32_t gpu_ok; /* after a deadline: its GPU still ran a kernel */
	int64_t wrong;  /* wrong elements it found */
	int32_t stop;   /* before an iteration: this rank's time is up (all stop together) */
	int32_t pad;
};

#define NC_TAG 0x4E43
/* A GPU that does not run a kernel of one thread in PING_S is stuck. The ranks' exchange after a
 * step waits for a rank still inside the step's collective (up to the probe's timeout: a rank
 * that lost a peer finishes some collectives before the others do), then pinging, and a margin:
 * no heartbeat comes from it meanwhile. A dead rank is named by it, or sooner by MPI. */
#define PING_S 3.0
#define AGREE_MARGIN_S 4.0

struct nc_run {
	struct sdc_worker *w;
	const struct sdc_gpu_module *m;
	const struct sdc_gpu_allreduce_ops *ar; /* the collectives and the checked ring (gpu_ops.h) */
	struct ar_shared *sh;
	const char *version;
	int P;                        /* the communicator's members: ranks, or this host's GPUs */
	int nmem;                     /* those of this process (1 under mpirun) */
	int first;                    /* the first of them (this rank under mpirun) */
	int ordinal[MAX_MEMBERS];     /* their CUDA devices */
	bool *live;                   /* the ranks still answering (under mpirun) */
	struct nc_word *all;          /* every member's word of the last step */
	struct sdc_mpi_part *send, *recv; /* the ranks' exchange of words (under mpirun) */
	bool *was;                    /* live before the exchange */
	struct sdc_gpu_comm *comm[NPATHS];
	struct sdc_facts *paths;      /* per path: the collectives' bandwidth, or why NCCL refused it */
	char refusal[200];            /* the first path NCCL refused, and why */
};

/* The parts of an all-to-all of words: this rank's word to each rank, each rank's into all[]. */
static void word_parts(struct nc_run *r, struct nc_word *word)
{
	for (int p = 0; p < r->P; p++) {
		r->send[p] = (struct sdc_mpi_part){ word, sizeof(*word) };
		r->recv[p] = (struct sdc_mpi_part){ &r->all[p], sizeof(r->all[p]) };
	}
}

/*
 * Every member's word of a step into all[] (under mpirun every rank says its own to the others,
 * with a deadline: a rank that says nothing is named). Members past the deadline ping their GPU
 * first. Returns 0, or -1 when the run cannot go on (a rank gone, or a stuck GPU or path: named,
 * UNKNOWN).
 */
static int agree(struct nc_run *r, struct nc_word *mine, const char *what)
{
	char err[256] = "", name[96];
	/* A collective past its deadline may leave NCCL's kernels spinning for a peer, and a kernel
	 * or a free queued on the GPU waits behind them: the communicators are aborted first, so the
	 * ping says whether the GPU runs, not whether NCCL's kernels ended. (The run ends here.) */
	bool late = false;
	for (int i = 0; i < r->nmem; i++)
		late |= mine[i].status == 2;
	for (int k = 0; k < NPATHS && late; k++)
		if (r->comm[k]) {
			r->m->nccl_destroy(r->comm[k], 1);
			r->comm[k] = NULL;
		}
	for (int i = 0; i < r->nmem; i++)
		if (mine[i].status == 2)
			mine[i].gpu_ok = r->m->ping(r->ordinal[i], PING_S, err, sizeof(err)) == 0;
	if (!r->sh->local) {
		const int P = r->P, me = sdc_mpi.rank;
		word_parts(r, &mine[0]);
		r->all[me] = mine[0];
		memcpy(r->was, r->live, (size_t)P * sizeof(bool));
		const int gone = sdc_mpi_alltoall(r->send, r->recv, r->live, NC_TAG,
						   r->sh->timeout + PING_S + AGREE_MARGIN_S);
		int rc = 0, left = -1;
		for (int p = 0; p < P; p++)
			if (r->was[p] && !r->live[p]) {
				rc = -1;
				if (sdc_mpi_left(p))
					left = left < 0 ? p : left;
				else
					sdc_ar_unresponsive(r->w, p, what);
			}
		if (gone < 0) {
			sdc_ar_unresponsive(r->w, -1, what);
			return -1;
		}
		if (rc) {
			/* A rank that gave up on a lost peer left (its word for this step may have reached
			 * some members and not others, who then wait in the next step): it tells them, so
			 * they stop at once and do not name it. */
			sdc_mpi_leave(r->live);
			if (left >= 0 && !r->w->failed) {
				r->w->failed = true;
				snprintf(r->w->error, sizeof(r->w->error), "rank %d (%s) stopped in %s: it lost a peer", left,
					 sdc_mpi_host(left), what);
			}
			return -1;
		}
	} else {
		memcpy(r->all, mine, sizeof(*mine) * (size_t)r->nmem);
	}
	/* a stuck GPU named by every member */
	late = false;
	int stuck = -1;
	for (int p = 0; p < r->P; p++) {
		if (r->all[p].status != 2)
			continue;
		late = true;
		if (r->all[p].gpu_ok)
			continue;
		stuck = stuck < 0 ? p : stuck;
		struct sdc_finding f = { .cls = SDC_FINDING_ERROR, .row = p, .col = -1 };
		sdc_strlcpy(f.kind, "gpu-unresponsive", sizeof(f.kind));
		const bool own = p >= r->first && p < r->first + r->nmem;
		sdc_ar_member(r->sh, p, name, sizeof(name));
		snprintf(f.detail, sizeof(f.detail),
			 "%s did not finish within %.0f s, and %s%s then did not run a kernel of one thread within %.0f s: "
			 "that GPU is stuck%s%s",
			 what, r->sh->timeout, name, r->sh->local ? "" : "'s GPU", PING_S, own && err[0] ? ": " : "",
			 own ? err : "");
		sdc_worker_report(r->w, &f);
	}
	if (late && stuck < 0) {
		/* every GPU runs kernels, every rank answers: NCCL's path itself (a link, a network, the
		 * library) never completed */
		struct sdc_finding f = { .cls = SDC_FINDING_ERROR, .row = -1, .col = -1 };
		sdc_strlcpy(f.kind, "collective-stuck", sizeof(f.kind));
		int n = snprintf(f.detail, sizeof(f.detail), "%s did not finish within %.0f s on", what, r->sh->timeout);
		for (int p = 0; p < r->P && n < (int)sizeof(f.detail) - 12; p++)
			if (r->all[p].status == 2)
				n += snprintf(f.detail + n, sizeof(f.detail) - (size_t)n, " %s %d", r->sh->local ? "GPU" : "rank", p);
		snprintf(f.detail + n, sizeof(f.detail) - (size_t)n,
			 "; every GPU still runs kernels%s: the path (a link, the network or NCCL) is stuck",
			 r->sh->local ? "" : " and every rank answers over MPI");
		sdc_worker_report(r->w, &f);
	}
	if (late) {
		if (stuck >= 0) {
			sdc_ar_member(r->sh, stuck, name, sizeof(name));
			snprintf(r->w->error, sizeof(r->w->error), "%s%s is stuck: %s did not finish within %.0f s", name,
				 r->sh->local ? "" : "'s GPU", what, r->sh->timeout);
		} else
			snprintf(r->w->error, sizeof(r->w->error), "%s did not finish within %.0f s: the path is stuck", what,
				 r->sh->timeout);
		r->w->failed = true;
		return -1;
	}
	return 0;
}

/* K: this rank dies in the middle of an exchange, its word said to the ranks below it only (the
 * way a process killed between two sends leaves its peers: some a step ahead of the others). */
static void die_in_exchange_if_due(struct nc_run *r, uint64_t it, struct nc_word mine)
{
	struct sdc_fault k;
	const int me = sdc_mpi.rank;
	if (r->sh->local || !sdc_worker_faults(r->w, "K", it, &k, 1) || (k.row >= 0 ? k.row : 0) != me)
		return;
	sdc_worker_fault_applied(r->w, &k, "K", it, me, -1, -1, "", "");
	for (int p = 0; p < r->P; p++)
		r->was[p] = p < me; /* the ranks this word reaches */
	word_parts(r, &mine);
	sdc_mpi_alltoall(r->send, r->recv, r->was, NC_TAG, 1);
	raise(SIGKILL);
}

/* agree() on one status for every member of this process (and wrong counts from res). */
static int agree_status(struct nc_run *r, int status, const struct sdc_gpu_coll_result *res, const char *what)
{
	struct nc_word mine[MAX_MEMBERS];
	for (int i = 0; i < r->nmem; i++)
		mine[i] = (struct nc_word){ .status = status, .wrong = res ? res[i].wrong : 0 };
	return agree(r, mine, what);
}

/* A failure on another member (its own report says what): this one stops with it. */
static bool other_failed(struct nc_run *r, bool here, const char *what)
{
	for (int p = 0; p < r->P && !here; p++)
		if (r->all[p].status == 1) {
			char name[96];
			sdc_ar_member(r->sh, p, name, sizeof(name));
			snprintf(r->w->error, sizeof(r->w->error), "%s failed in %s", name, what);
			r->w->failed = true;
		}
	return r->w->failed;
}

/* An id for a communicator: rank 0's, given to the others (under mpirun), or this process's. */
static int unique_id(struct nc_run *r, uint8_t *id)
{
	char why[256];
	bool late = false;
	if (r->sh->local ? !r->m->nccl_unique_id(id, why, sizeof(why))
			 : !sdc_mpi_nccl_id(id, r->sh->timeout, &late, why, sizeof(why)))
		return 0;
	if (late)
		sdc_ar_unresponsive(r->w, -1, "the exchange of NCCL's unique id");
	else
		sdc_worker_error(r->w, "%s", why);
	return -1;
}

/* The communicators of every path in the mask, every member's init agreed. */
static int open_paths(struct nc_run *r, uint32_t mask)
{
	int opened = 0;
	for (int k = 0; k < NPATHS; k++) {
		if (!sdc_opt_set_has(mask, k))
			continue;
		uint8_t id[SDC_GPU_NCCL_ID_BYTES];
		if (unique_id(r, id))
			return -1;
		char err[256] = "", what[96];
		snprintf(what, sizeof(what), "NCCL's initialisation of path %s", sdc_ar_nccl_paths[k]);
		r->comm[k] = sdc_gpu_nccl_init(id, r->P, r->first, r->nmem, r->ordinal, path_algo[k], path_proto[k], r->sh->n,
					     r->sh->timeout, err, sizeof(err));
		const bool late = !r->comm[k] && strstr(err, "in time");
		if (agree_status(r, r->comm[k] ? 0 : late ? 2 : 1, NULL, what))
			return -1;
		int refused = 0;
		for (int p = 0; p < r->P; p++)
			refused += r->all[p].status != 0;
		if (refused) {
			/* NCCL does not offer it here (a protocol off on this platform): said, and left out */
			if (!r->refusal[0])
				snprintf(r->refusal, sizeof(r->refusal), "%s: %s", sdc_ar_nccl_paths[k],
					 r->comm[k] ? "refused on another rank" : err);
			struct sdc_facts *p = sdc_facts_new();
			sdc_facts_str(p, "refused", r->comm[k] ? "on another rank" : err);
			sdc_facts_int(p, r->sh->local ? "gpus_refusing" : "ranks_refusing", refused);
			sdc_facts_put(r->paths, sdc_ar_nccl_paths[k], p);
			r->m->nccl_destroy(r->comm[k], 1);
			r->comm[k] = NULL;
			continue;
		}
		sdc_facts_put(r->paths, sdc_ar_nccl_paths[k], sdc_facts_new());
		opened++;
	}
	if (!opened) {
		sdc_worker_error(r->w, "NCCL refused every path asked for (nccl_paths), the first %s", r->refusal);
		return -1;
	}
	return 0;
}

/* A path some member's NCCL refused at its first collective: said in the report, its
 * communicator aborted, the others go on. 0: not refused; 1: refused; -1: it was the last path
 * (the worker says so). mine: this process's refusal, if it refused. */
static int refuse_path(struct nc_run *r, int k, const char *what, const char *mine)
{
	int refusing = 0;
	for (int p = 0; p < r->P; p++)
		refusing += r->all[p].status == 3;
	if (!refusing)
		return 0;
	char why[256];
	snprintf(why, sizeof(why), "%s: %s", what, mine ? mine : "refused on another rank");
	if (!r->refusal[0])
		snprintf(r->refusal, sizeof(r->refusal), "%s: %.180s", sdc_ar_nccl_paths[k], why);
	struct sdc_facts *p = sdc_facts_new();
	sdc_facts_str(p, "refused", why);
	sdc_facts_str(p, "at", "first collective");
	sdc_facts_int(p, r->sh->local ? "gpus_refusing" : "ranks_refusing", refusing);
	sdc_facts_put(r->paths, sdc_ar_nccl_paths[k], p);
	r->m->nccl_destroy(r->comm[k], 1);
	r->comm[k] = NULL;
	for (int j = 0; j < NPATHS; j++)
		if (r->comm[j])
			return 1;
	sdc_worker_error(r->w, "NCCL refused every path asked for (nccl_paths), the first %s", r->refusal);
	return -1;
}

/* The bandwidth of one collective, as nccl-tests counts it, kept per path (the best seen). */
static void keep_bw(struct nc_run *r, int k, const char *name, char op, double seconds)
{
	if (seconds <= 0)
		return;
	const double bytes = (double)r->sh->n * 4, algbw = bytes / seconds / 1e9;
	if (!sdc_facts_find_key(r->paths, sdc_ar_nccl_paths[k]))
		return;
	struct sdc_facts *path = sdc_facts_key(r->paths, sdc_ar_nccl_paths[k]);
	double best = 0;
	if (sdc_facts_get_real(sdc_facts_find(path, name), "algbw_gb_s", &best) && best >= algbw)
		return;
	struct sdc_facts *bw = sdc_facts_new();
	sdc_facts_real(bw, "bytes", bytes);
	sdc_facts_real(bw, "algbw_gb_s", algbw);
	sdc_facts_real(bw, "busbw_gb_s", algbw * sdc_coll_bus_factor(op, r->P));
	sdc_facts_put(path, name, bw);
}

/*
 * What both variants start with: NCCL there, the members (this rank's GPU, or every GPU of the
 * run), their PCI bus ids known to all (findings name GPUs by them), the communicators of the
 * paths in mask open. 0, or -1 (the worker says why).
 */
static int nc_start(struct nc_run *r, struct sdc_worker *w, uint32_t mask)
{
	char why[256] = "";
	struct ar_shared *sh = w->ctx->shared;
	*r = (struct nc_run){ .w = w, .m = sdc_gpu_ops(), .sh = sh };
	if (!r->m || !r->m->nccl_init) {
		sdc_worker_error(w, "this GPU module was built without NCCL (nccl.h missing at build time)");
		return -1;
	}
	if (!(r->ar = SDC_GPU_FAMILY(allreduce, SDC_GPU_ALLREDUCE_VERSION))) {
		sdc_worker_error(w, "%s", sdc_gpu_family_why("allreduce"));
		return -1;
	}
	if (!(r->version = r->m->nccl_version(why, sizeof(why)))) {
		sdc_worker_error(w, "%s: install NCCL (libnccl2) or leave the nccl variants out of allreduce.variants",
				 why);
		return -1;
	}
	const struct sdc_run *run = w->ctx->run;
	if (sh->local) {
		for (int d = 0; d < run->ndevices && r->nmem < MAX_MEMBERS; d++)
			if (run->devices[d].kind == SDC_DEVICE_GPU)
				r->ordinal[r->nmem++] = run->devices[d].gpu.index;
		r->P = r->nmem;
		if (r->P < 2) {
			sdc_worker_error(w, "one GPU selected: NCCL between GPUs needs 2 or more (or mpirun across hosts)");
			return -1;
		}
	} else {
		r->P = sdc_mpi.size, r->nmem = 1, r->first = sdc_mpi.rank;
		r->ordinal[0] = w->dev->gpu.index;
	}
	r->live = malloc((size_t)r->P * sizeof(bool));
	r->was = malloc((size_t)r->P * sizeof(bool));
	r->all = calloc((size_t)r->P, sizeof(*r->all));
	r->send = calloc((size_t)r->P, sizeof(*r->send));
	r->recv = calloc((size_t)r->P, sizeof(*r->recv));
	r->paths = sdc_facts_new();
	free(sh->member_bus);
	sh->member_bus = calloc((size_t)r->P, sizeof(*sh->member_bus));
	if (!r->live || !r->was || !r->all || !r->send || !r->recv || !r->paths || !sh->member_bus) {
		sdc_worker_error(w, "out of memory");
		return -1;
	}
	for (int p = 0; p < r->P; p++)
		r->live[p] = true;
	snprintf(w->kernel, sizeof(w->kernel), "nccl %s, %s %d of %d", r->version, sh->local ? "GPUs" : "rank",
		 sh->local ? r->P : sdc_mpi.rank, r->P);
	if (sh->local) {
		for (int d = 0, i = 0; d < run->ndevices && i < r->P; d++)
			if (run->devices[d].kind == SDC_DEVICE_GPU)
				sdc_strlcpy(sh->member_bus[i++], run->devices[d].gpu.pci_bus_id, sizeof(sh->member_bus[0]));
	} else {
		char mine[24] = "";
		sdc_strlcpy(mine, w->dev->gpu.pci_bus_id, sizeof(mine));
		if (sdc_mpi_allgather(mine, (int)sizeof(mine), sh->member_bus, sh->timeout)) {
			sdc_ar_unresponsive(w, -1, "the exchange of the ranks' GPUs");
			return -1;
		}
		/* NCCL takes no two ranks on one GPU (it refuses them, or hangs initialising): every
		 * rank sees the same list, so all say so at once */
		for (int p = 0; p < r->P; p++)
			for (int q = 0; q < p; q++)
				if (!strcmp(sh->member_bus[p], sh->member_bus[q]) &&
				    !strcmp(sdc_mpi_host(p), sdc_mpi_host(q))) {
					sdc_worker_error(w, "ranks %d and %d share GPU %s on %s: NCCL takes one rank a GPU "
							    "(start at most as many ranks a host as it has GPUs)",
							 q, p, sh->member_bus[p], sdc_mpi_host(p));
					return -1;
				}
	}
	return open_paths(r, mask);
}

/* Whether every member goes on to another iteration: all do, or all stop, through the same
 * exchange (which names a rank gone). */
static bool nc_go_on(struct nc_run *r)
{
	struct nc_word mine[MAX_MEMBERS];
	const int32_t stop = !sdc_worker_continue(r->w);
	for (int i = 0; i < r->nmem; i++)
		mine[i] = (struct nc_word){ .stop = stop };
	if (agree(r, mine, "the agreement to go on"))
		return false;
	for (int p = 0; p < r->P; p++)
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
		/* run.environment.nccl: what NCCL and the members are (the first worker's say), then this
		 * variant's paths (or ring), replacing what an earlier run of it said */
		struct sdc_facts *head = sdc_facts_new(), *f = sdc_facts_new();
		sdc_facts_str(head, "version", r->version ? r->version : "");
		sdc_facts_str(head, "shape", r->sh->local ? "one process, every GPU of the host" : "one rank a GPU");
		sdc_facts_int(head, "members", r->P);
		sdc_run_facts_keep(r->w->ctx->run, "nccl", head);
		sdc_facts_put(f, key, r->paths);
		sdc_run_facts_replace(r->w->ctx->run, "nccl", f);
	}
	free(r->live), free(r->was), free(r->all), free(r->send), free(r->recv);
}

void sdc_ar_nccl_run(struct sdc_worker *w)
{
	const struct ar_shared *sh = w->ctx->shared;
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
				const int64_t nout = sdc_coll_out_count(op, sh->n, r.P);
				/* V: an element of the first path's all-reduce result changes in GPU memory */
				struct sdc_gpu_flip flip = { .member = -1 };
				const struct sdc_fault *vflip = NULL;
				for (int i = 0; i < nv && first_path && op == 'A'; i++) {
					const int who = vf[i].row >= 0 ? (int)vf[i].row : 0;
					if (who < r.first || who >= r.first + r.nmem)
						continue;
					flip = (struct sdc_gpu_flip){ .member = who - r.first,
								      .el = vf[i].col >= 0 ? vf[i].col % nout : nout / 3,
								      .bit = vf[i].bit >= 0 ? (int)(vf[i].bit % 32) : 22 };
					vflip = &vf[i];
				}
				struct sdc_gpu_coll_result res[MAX_MEMBERS];
				char err[256] = "", what[96];
				const char *name = op == 'A' ? "ncclAllReduce" : op == 'R' ? "ncclReduceScatter" : "ncclAllGather";
				snprintf(what, sizeof(what), "%s on path %s", name, sdc_ar_nccl_paths[k]);
				const int rc = r.ar->nccl_collective(r.comm[k], op, it, flip.member >= 0 ? &flip : NULL, res, sh->timeout,
								    err, sizeof(err));
				/* NCCL failing a path's first collective itself (not CUDA, not the deadline) refuses
				 * the path, as a refusal at its initialisation does; later it is a failure */
				const int status = !rc ? 0 : res[0].timed_out ? 2 : res[0].refused && it == 0 ? 3 : 1;
				if (status == 1)
					sdc_worker_error(w, "%s: %s", what, err);
				if (!status)
					die_in_exchange_if_due(&r, it, (struct nc_word){ .wrong = res[0].wrong });
				if (agree_status(&r, status, res, what) || other_failed(&r, rc, what))
					goto out;
				const int refusal = refuse_path(&r, k, what, status == 3 ? err : NULL);
				if (refusal < 0)
					goto out;
				if (refusal)
					break;
				if (vflip)
					sdc_worker_fault_applied(w, vflip, "V", it, r.first + flip.member, flip.el, flip.bit, "", "");
				int64_t all_wrong = 0;
				for (int p = 0; p < r.P; p++)
					all_wrong += r.all[p].wrong;
				for (int i = 0; i < r.nmem; i++) {
					if (!res[i].wrong)
						continue;
					char who[96];
					sdc_ar_member(sh, r.first + i, who, sizeof(who));
					if (!sh->local) /* the rank's GPU too */
						snprintf(who + strlen(who), sizeof(who) - strlen(who), " on GPU %s", sh->member_bus[r.first + i]);
					sdc_ar_report(w, it, "collective-wrong", "V", r.first + i, res[i].first, res[i].expected, res[i].got,
						      NULL,
						      "%s gave %s %" PRId64 " wrong elements of %" PRId64 " (%" PRId64
						      " on all); first element %" PRId64,
						      what, who, res[i].wrong, nout, all_wrong, res[i].first);
				}
				total += (uint64_t)all_wrong;
				keep_bw(&r, k, op == 'A' ? "all_reduce" : op == 'R' ? "reduce_scatter" : "all_gather", op,
					res[0].seconds);
				moved += (double)sh->n * 4 * sdc_coll_bus_factor(op, r.P);
			}
			first_path = false;
		}
		sdc_worker_digest(w, it, total);
		sdc_worker_account(w, moved);
	}
out:
	nc_end(&r, "paths");
}

/* This process's part of the iteration's H and C faults (allreduce.c's plan: every rank gets the
 * list, the member a fault names acts), for the forward ring. */
static int ring_faults(struct nc_run *r, uint64_t it, const int *fwd, struct sdc_gpu_ring_fault *out)
{
	struct sdc_worker *w = r->w;
	const int P = r->P;
	const int64_t cn = r->sh->n / P;
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
		if (src < r->first || src >= r->first + r->nmem || at == P || dst != fwd[(at + 1) % P])
			continue;
		const int bit = f[i].bit >= 0 ? (int)(f[i].bit % 32) : header ? 3 : 20;
		out[n++] = (struct sdc_gpu_ring_fault){ .kind = header ? 'h' : 'H', .member = src - r->first, .phase = phase,
							.step = 0, .bit = bit, .el = cn / 3 };
		sdc_worker_fault_applied(w, &f[i], "H", it, src, dst, bit, "", "");
	}
	const int nc = sdc_worker_faults(w, "C", it, f, SDC_GPU_RING_FAULTS);
	for (int i = 0; i < nc && n < SDC_GPU_RING_FAULTS; i++) {
		const int who = f[i].row >= 0 ? (int)f[i].row : 0;
		if (who < r->first || who >= r->first + r->nmem)
			continue;
		int at = 0;
		while (at < P && fwd[at] != who)
			at++;
		const int bit = f[i].bit >= 0 ? (int)(f[i].bit % 32) : 22;
		out[n++] = (struct sdc_gpu_ring_fault){ .kind = 'C', .member = who - r->first, .bit = bit, .el = cn / 5 };
		sdc_worker_fault_applied(w, &f[i], "C", it, who, sdc_ring_step_at(0, 0, at, P).recv_c * cn + cn / 5, bit, "",
					 "");
	}
	return n;
}

void sdc_ar_nccl_ring_run(struct sdc_worker *w)
{
	const struct ar_shared *sh = w->ctx->shared;
	static const char *const names[] = { "forward", "reversed", "shuffled" };
	struct nc_run r;
	int *orders = NULL;
	struct sdc_gpu_hop *hops = NULL;
	double best = 0;
	/* point-to-point takes no NCCL_ALGO / NCCL_PROTO: one communicator, NCCL's own choice */
	if (nc_start(&r, w, 1u))
		goto out;
	const int P = r.P, nh = 2 * (P - 1);
	const int64_t cn = sh->n / P;
	orders = malloc(3 * sizeof(int) * (size_t)P);
	hops = malloc(sizeof(*hops) * (size_t)nh * (size_t)r.nmem);
	if (!orders || !hops) {
		sdc_worker_error(w, "out of memory");
		goto out;
	}
	for (uint64_t it = 0; nc_go_on(&r); it++) {
		sdc_ar_ring_orders(P, it, orders, orders + P, orders + 2 * P);
		for (int k = 0; k < 3; k++) {
			const int *order = orders + k * P;
			struct sdc_gpu_ring_fault faults[SDC_GPU_RING_FAULTS];
			const int nf = k == 0 ? ring_faults(&r, it, order, faults) : 0;
			char err[256] = "", what[96];
			double seconds = 0;
			int timed_out = 0;
			snprintf(what, sizeof(what), "the %s checked ring over NCCL", names[k]);
			const int rc = r.ar->nccl_ring(r.comm[0], order, it, faults, nf, hops, &seconds, &timed_out, sh->timeout,
						      err, sizeof(err));
			if (rc && !timed_out)
				sdc_worker_error(w, "%s: %s", what, err);
			if (agree_status(&r, rc ? timed_out ? 2 : 1 : 0, NULL, what) || other_failed(&r, rc, what))
				goto out;
			/* every hop judged as the MPI ring judges it: a bad CRC names the link, a good CRC
			 * on wrong values the sender */
			for (int i = 0; i < r.nmem; i++) {
				const int me = r.first + i;
				int p = 0;
				while (p < P && order[p] != me)
					p++;
				const int prev = order[(p - 1 + P) % P];
				for (int h = 0; h < nh; h++) {
					const struct sdc_gpu_hop *hop = &hops[i * nh + h];
					const int phase = h >= P - 1, s = h - phase * (P - 1);
					struct sdc_hop_verdict hv;
					sdc_ring_hop_verdict_crc(hop->hdr, (uint32_t)(phase << 16 | s), hop->crc, hop->nbad, &hv);
					if (hv.fault == SDC_HOP_OK)
						continue;
					char step[160];
					snprintf(step, sizeof(step), "%s's %s step %d (GPU %s to GPU %s)", what,
						 phase ? "all-gather" : "reduce-scatter", s, sh->member_bus[prev], sh->member_bus[me]);
					const int64_t el = hop->first >= 0 ? (int64_t)sdc_ring_step_at(phase, s, p, P).recv_c * cn + hop->first
									   : -1;
					sdc_ar_hop_report(w, it, step, prev, me, &hv, hop->hdr, hop->nbad, el, hop->expected, hop->got);
				}
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
		sdc_facts_real(r.paths, "checked_ring.bytes", (double)sh->n * 4);
		sdc_facts_real(r.paths, "checked_ring.algbw_gb_s", algbw);
		sdc_facts_real(r.paths, "checked_ring.busbw_gb_s", algbw * sdc_coll_bus_factor('A', r.P));
	}
	nc_end(&r, "ring");
	free(orders), free(hops);
}
