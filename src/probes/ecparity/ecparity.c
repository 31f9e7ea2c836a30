/*
 * ecparity: ECRM's erasure-coded embedding shards (seeds/README: 002) as a detector. S servers
 * each own `rows` entries of an embedding table (d fp32 weights and the row-wise Adagrad
 * accumulator) and train them on a deterministic sparse workload; every update's difference goes
 * to the server that holds the entry's stripe parity (ECRM's rotating placement) and to the one
 * that holds its server's column parity, a step's differences as one message with a CRC32C
 * (ecparity.h: struct sdc_ec_bundle), which they apply when they next look (asynchronously from
 * the updates, as ECRM does). The parity arithmetic is
 * exact (parity.h): every round, when the messages are in, every parity is compared by
 * equality with its members, so a clean run has no finding, and one corrupt word breaks one
 * stripe and one column by the same amount: named at their intersection (server, entry, word,
 * expected, actual, XOR). A message whose CRC fails is named as the link's (the sender's copy
 * gives the element and bits) and never applied; a parity word that breaks alone is the parity
 * holder's. A lost server (--inject ...:L) is rebuilt bit for bit from the parities and the
 * other members while the others train the next round (a helper thread of the next server, ECRM's
 * "training continues during recovery"), put in service as rebuilt and caught up on the round it
 * missed; its check against a deterministic replay of its training runs on a thread of its own
 * from the loss on and is read when done, so the others do not wait for a replay that grows with
 * the rounds; the time and rate of the rebuild go into the report (run.environment.ecparity).
 *
 * One host: the servers are the selected CPUs, one worker a server, messages through shared
 * memory, rounds kept in step by a barrier (messages drained, then verification). Each round is
 * one iteration. This file holds the probe's descriptor, options and fault targets, and the
 * one-host form's setup and teardown; host.h lists the one-host form's parts, ranks.h the ranks'.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/transport.h"
#include "probe/probe.h"
#include "probes/ecparity/ecparity.h"
#include "probes/ecparity/host.h"
#include "base/message.h"

#define OPT(f) offsetof(struct sdc_ec_opts, f)
static const struct sdc_option ec_options[] = {
	{ .name = "rows", .type = SDC_OPT_INT, .offset = OPT(rows), .def = "65536",
	  .help = "entries (embedding rows) each server owns", .imin = 16, .imax = 1 << 26 },
	{ .name = "dim", .type = SDC_OPT_INT, .offset = OPT(dim), .def = "32", .help = "fp32 weights an entry holds",
	  .imin = 1, .imax = SDC_EC_MAX_DIM },
	{ .name = "batch", .type = SDC_OPT_INT, .offset = OPT(batch), .def = "256",
	  .help = "sparse updates a server makes per step", .imin = 1, .imax = 1 << 20 },
	{ .name = "steps", .type = SDC_OPT_INT, .offset = OPT(steps), .def = "200",
	  .help = "training steps per round; every parity is verified at the end of each round", .imin = 1,
	  .imax = 1 << 20 },
	{ .name = "k", .type = SDC_OPT_INT, .offset = OPT(k), .def = "0",
	  .help = "members of a stripe, on k different servers (0: the largest divisor of the servers below "
		  "them, at most 4)",
	  .imin = 0, .imax = 4095 },
	{ .name = "servers", .type = SDC_OPT_INT, .offset = OPT(servers), .def = "0",
	  .help = "on one host: the servers, shared out over the selected CPUs (0: one a CPU, at least 2); under "
		  "mpirun the ranks are the servers",
	  .imin = 0, .imax = 4096 },
	{ .name = "floor", .neutral = true, .type = SDC_OPT_DOUBLE, .offset = OPT(floor), .def = "0",
	  .help = "per-server updates below which the server is WARNING (0: no floor)", .dmin = 0, .dmax = 1e6,
	  .unit = "Mupd/s" },
	{ .name = "timeout", .type = SDC_OPT_DOUBLE, .offset = OPT(timeout), .def = "30", .neutral = true,
	  .help = "under mpirun: seconds a rank may keep the others waiting before it is taken as lost (its servers "
		  "rebuilt elsewhere)",
	  .dmin = 1, .dmax = 3600, .unit = "s" },
	SDC_OPT_END,
};

static const char *const ec_targets[] = {
	"E: a weight of an entry at rest (row = entry, col = weight; default: an entry not updated this round)",
	"O: an entry's Adagrad accumulator at rest (row = entry)",
	"U: the result of a server's last update of a round, after its difference was sent (its arithmetic)",
	"M: a difference message in transit, after its CRC32C (col = word)",
	"G: a gradient of a server's first update of a round, computed wrong (col = weight): its difference and "
	"parities follow it, and only the end's replay of the training finds it",
	"L: the server is lost: its shard and parities dropped, rebuilt from the others (with row=: the rebuilt copy "
	"corrupted there too, which the replay must find)",
	"R: (one host) with L on the same device and round: its rebuild's helper is slow (a survivor busy), so "
	"training moves rows under it, which are set aside and done again at the round's end",
	"C: (across ranks) this rank's count of messages to every other rank one more than it sends, in the round's "
	"first step (a peer whose bytes do not match: the others refuse them, UNKNOWN)",
	NULL,
};

static const char *const ec_selftest_options[] = { "rows=4096", "batch=64", "steps=4", NULL };
static const char *const ec_selftest_faults[] = {
	"ecparity:E:iter=1",
	"ecparity:O:iter=2,bit=grow",
	"ecparity:U:iter=3",
	"ecparity:M:iter=1,col=3",
	"ecparity:L:iter=4,row=11,col=4",
	NULL,
};

static int ec_variants(const void *opts, struct sdc_variant *out, int max)
{
	const struct sdc_ec_opts *o = opts;
	if (max < 1)
		return 0;
	memset(out, 0, sizeof(*out));
	out->numerics = SDC_NUMERICS_EXACT;
	out->devices = 1u << SDC_DEVICE_CPU;
	/* under mpirun the servers are the ranks (one worker each); on one host, its CPUs */
	out->per_rank = sdc_mpi.active && sdc_mpi.size > 1;
	out->world_dependent = out->per_rank;
	out->cross_report = !out->per_rank; /* (a server's finding is filed at its owner's device) */
	snprintf(out->name, sizeof(out->name), "adagrad-d%d%s", (int)o->dim, out->per_rank ? "-ranks" : "");
	return 1;
}
/* ---- setup and teardown (one host; the ranks' form keeps its state on its worker: ranks.c) ---- */

/* Everything ecparity's one-host workers share is in the mappings sdc_shared_alloc made, which the
 * framework unmaps (ctx->shared_maps): what is left is a helper thread of this process, if one
 * runs. (A burn's processes end without teardown; the run's end states the state's digest:
 * host_check.c, sdc_ec_host_end_done.) */
static void ec_teardown(struct sdc_probe_ctx *ctx)
{
	struct sdc_ec_host *sh = ctx->shared;
	if (!sh || ctx->variant->per_rank)
		return;
	sdc_ec_host_rebuild_join(sh);
	sdc_ec_host_replay_join(sh);
	ctx->shared = NULL;
}

/* The messages' buffers: per server its outbox (a step's message each) and where its messages
 * arrive; what is published and applied. 0, or -1 out of memory. */
static int alloc_messages(struct sdc_probe_ctx *ctx, struct sdc_ec_host *sh)
{
	struct sdc_ec_host_messages *m = &sh->msg;
	const size_t S = (size_t)sh->st.l.servers;
	m->bundle_words = sdc_ec_bundle_words((int)sh->wk.batch, sh->st.l.words);
	m->outbox = sdc_shared_alloc(ctx, S * (size_t)sh->wk.steps * m->bundle_words * 4);
	m->recv = sdc_shared_alloc(ctx, S * m->bundle_words * 4);
	m->published = sdc_shared_alloc(ctx, S * sizeof(*m->published));
	m->applied = sdc_shared_alloc(ctx, S * S * sizeof(*m->applied));
	m->transit = sdc_shared_alloc(ctx, S * sizeof(*m->transit));
	if (!m->outbox || !m->recv || !m->published || !m->applied || !m->transit)
		return -1;
	/* (published and applied start at round 0 with nothing out: no round is 2^32 - 1) */
	for (size_t s = 0; s < S; s++)
		atomic_init(&m->published[s], UINT64_MAX << 32);
	return 0;
}

/* What the servers write, shared by the workers' processes: the shards and parities, the rows'
 * flags, the rebuild's and the replay's buffers, the training times. 0, or -1 out of memory. */
static int alloc_state(struct sdc_probe_ctx *ctx, struct sdc_ec_host *sh, const struct sdc_ec_layout *l)
{
	const size_t shard = (size_t)l->rows * (size_t)l->words * 4;
	void *st = sdc_shared_alloc(ctx, sdc_ec_state_bytes(l));
	if (st)
		sdc_ec_state_place(&sh->st, l, st);
	sh->touched = sdc_shared_alloc(ctx, (size_t)l->servers * (size_t)l->rows * sizeof(*sh->touched));
	sh->rb.out = sdc_shared_alloc(ctx, shard);
	sh->rb.redo = sdc_shared_alloc(ctx, (size_t)l->rows);
	sh->rp.out = sdc_shared_alloc(ctx, shard);
	sh->train_s = sdc_shared_alloc(ctx, (size_t)sh->T * sizeof(double));
	if (!st || !sh->touched || !sh->rb.out || !sh->rb.redo || !sh->rp.out || !sh->train_s)
		return -1;
	memset(sh->rb.out, 0, shard); /* (its pages in now: a rebuild is not timed faulting them in) */
	return 0;
}

static int setup_shared(struct sdc_probe_ctx *ctx)
{
	const struct sdc_ec_opts *o = ctx->opts;
	struct sdc_ec_host *sh = sdc_shared_alloc(ctx, sizeof(*sh));
	if (!sh)
		return sdc_ctx_error(ctx, "out of memory");
	ctx->shared = sh;
	if (sdc_shared_mutex_init(&sh->found.lock) || sdc_shared_mutex_init(&sh->end.lock))
		return sdc_ctx_error(ctx, "cannot make the workers' shared locks");
	/* one server a CPU; on one CPU, two servers on its one worker (parity must be elsewhere) */
	sh->T = ctx->nworkers;
	const int S = o->servers ? (int)o->servers : SDC_MAX(2, ctx->nworkers);
	if (S < 2 || S < sh->T)
		return sdc_ctx_error(ctx, "servers=%d with %d CPUs: at least 2 servers, and at least one a CPU", S, sh->T);
	sh->rb.lost = sh->rb.server = sh->rb.catch_up = sh->rb.installed = sh->rb.failed = -1;
	const struct sdc_ec_layout l = { .servers = S, .k = o->k ? (int)o->k : sdc_ec_auto_k(S), .rows = (int)o->rows,
					 .words = (int)o->dim + 1 };
	char why[256];
	if (sdc_ec_layout_check(&l, why, sizeof(why)))
		return sdc_ctx_error(ctx, "%s", why);
	sh->wk = (struct sdc_ec_work){ .seed = sdc_variant_seed(ctx->variant, ctx->seed), .rows = l.rows, .d = (int)o->dim,
				       .steps = o->steps, .batch = o->batch };
	if (alloc_state(ctx, sh, &l))
		return sdc_ctx_error(ctx, "out of memory for %d shards of %d entries", S, l.rows);
	if (alloc_messages(ctx, sh))
		return sdc_ctx_error(ctx, "out of memory for the messages");
	for (int s = 0; s < S; s++)
		sdc_ec_initial(&sh->wk, s, sdc_ec_entry(&sh->st, s, 0));
	sdc_ec_encode(&sh->st);
	snprintf(sh->operation, sizeof(sh->operation), "ecparity %d servers, k %d, %d entries x %d", S, l.k, l.rows,
		 sh->wk.d);
	sdc_strlcpy(ctx->rate_unit, "Mupd/s", sizeof(ctx->rate_unit));
	sdc_strlcpy(ctx->iter_unit, "rounds", sizeof(ctx->iter_unit));
	ctx->rate_scale = 1e6;
	ctx->floor = o->floor;
	return 0;
}

/* (the runner calls teardown only after a setup that succeeded) */
static int ec_setup(struct sdc_probe_ctx *ctx)
{
	if (ctx->variant->per_rank)
		return sdc_ec_ranks_setup(ctx);
	const int rc = setup_shared(ctx);
	if (rc)
		ec_teardown(ctx);
	return rc;
}

static void ec_run(struct sdc_worker *w)
{
	if (w->ctx->variant->per_rank)
		sdc_ec_ranks_run(w);
	else
		sdc_ec_host_run(w);
}

static const struct sdc_command *const ec_benches[] = { &sdc_ecparity_bench, NULL };

const struct sdc_probe sdc_probe_ecparity = {
	.name = "ecparity",
	.summary = "ECRM's erasure-coded embedding shards: Adagrad training with difference propagation to rotating "
		   "parities, every parity checked exactly each round; a corrupt entry, optimizer state, update or "
		   "message named at its server, entry and bits, a lost server rebuilt bit for bit",
	.options = ec_options,
	.opts_size = sizeof(struct sdc_ec_opts),
	.inject_targets = ec_targets,
	.selftest_options = ec_selftest_options,
	.selftest_faults = ec_selftest_faults,
	.variants = ec_variants,
	.setup = ec_setup,
	.lane = { [SDC_DEVICE_CPU] = ec_run },
	.teardown = ec_teardown,
	.benches = ec_benches,
};
