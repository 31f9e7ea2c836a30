/*
 * allreduce: names the corrupt link or node of a ring all-reduce (Adept's failure: a bad hop in
 * the all-gather leaves every later rank agreeing on the same wrong answer).
 *
 * Variants:
 *   ring: sdcscan's own ring all-reduce (reduce-scatter, then all-gather) over MPI point-to-point.
 *         The data are small integers per (rank, index, iteration), as nccl-tests builds them, so
 *         every partial sum is exact in any order and every rank can compute what it should
 *         receive at every step. Every chunk travels with a CRC32C of its bytes: a bad CRC names
 *         the link (sender -> receiver); a good CRC with a wrong value names the sender's
 *         arithmetic or memory. Each iteration runs the ring forward, reversed and shuffled, so a
 *         bad node (all its links fail) is told from a bad link (one does).
 *   mpi:  the vendor collective (MPI_Allreduce) on the same data: each rank counts its wrong
 *         elements, the counts are summed so all ranks agree, and each rank with wrong elements
 *         names itself.
 * Both report busbw as nccl-tests defines it: algbw = bytes / time, busbw = algbw 2 (n - 1) / n.
 * Every wait has a deadline (option timeout): a peer that does not answer is named, UNKNOWN.
 *
 * This file: the options, the variants, the setup, the findings every variant reports, the mpi
 * variant's lane and the descriptor; the ring variant's lane and `sdcscan bench allreduce` are in
 * ring_mpi.c, the nccl variants in nccl.c.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/transport.h"
#include "device/gpu_loader.h"
#include "probes/allreduce/allreduce.h"
#include "probes/allreduce/ring_check.h"
#include "probes/allreduce/ring_hd.h"
#include "probe/command.h"
#include "probe/probe.h"
#include "inject/fatal.h"
#include "sdc_config.h"
#include "base/message.h"

int sdc_bench_allreduce(int argc, char **argv);

static const char *const variant_names[] = { "ring", "mpi", "nccl", "nccl-ring", NULL };

struct allreduce_opts {
	uint32_t variants, nccl_paths;
	int64_t bytes;
	double timeout, floor;
};

#define OPT(f) offsetof(struct allreduce_opts, f)
static const struct sdc_option allreduce_options[] = {
	{ .name = "variants", .type = SDC_OPT_SET, .offset = OPT(variants), .def = "ring,mpi,nccl,nccl-ring",
	  .neutral = true,
	  .help = "ring: sdcscan's checked ring all-reduce; mpi: MPI_Allreduce checked exactly; nccl: NCCL's "
		  "all-reduce, reduce-scatter and all-gather between the ranks' GPUs (one rank a GPU), checked exactly "
		  "on each path of nccl_paths; nccl-ring: the checked ring between the GPUs over NCCL's send and "
		  "receive, every hop checked on the GPU (the nccl ones are left out where the ranks have no GPU)",
	  .choices = variant_names },
	{ .name = "nccl_paths", .type = SDC_OPT_SET, .offset = OPT(nccl_paths),
	  .def = "auto,ring/simple,ring/ll,tree/simple,tree/ll", .neutral = true,
	  .help = "the nccl variant's NCCL_ALGO/NCCL_PROTO paths, a communicator each (auto: NCCL's own choice); one "
		  "NCCL refuses on this host, at its initialisation or its first collective, is left out and said in "
		  "run.environment.nccl. The ll128 ones are not in the default: NCCL enables LL128 only where the "
		  "platform keeps its ordering, and forced elsewhere it can corrupt data (NCCL's NCCL_PROTO "
		  "documentation), which would be NCCL's configuration, not the GPU; name them where NCCL's auto "
		  "path uses LL128 itself",
	  .choices = sdc_ar_nccl_paths },
	{ .name = "bytes", .type = SDC_OPT_INT, .offset = OPT(bytes), .def = "4194304",
	  .help = "bytes of fp32 data all-reduced per iteration", .imin = 4096, .imax = (int64_t)1 << 31 },
	{ .name = "timeout", .type = SDC_OPT_DOUBLE, .offset = OPT(timeout), .def = "30", .neutral = true,
	  .help = "seconds any wait for a peer may take before the peer is named unresponsive", .dmin = 1,
	  .dmax = 3600, .unit = "s" },
	{ .name = "floor", .type = SDC_OPT_DOUBLE, .offset = OPT(floor), .def = "0", .neutral = true,
	  .help = "bus bandwidth below which the rank is WARNING (0: no floor)", .dmin = 0, .dmax = 1e6,
	  .unit = "GB/s" },
	SDC_OPT_END,
};

static const char *const allreduce_targets[] = {
	"H: bytes on a hop: row = sending rank, col = receiving rank (its ring successor when left out), bit; "
	"tensor=rs|ag picks the phase (default rs), rs-header|ag-header corrupts the chunk's header (its CRC) "
	"instead of its data; the ring runs forward",
	"C: the sender's arithmetic: row = the rank whose reduce-scatter sum goes wrong at its first step, bit",
	"V: NCCL's result in GPU memory before the check (nccl variant): row = rank, col = element of the first "
	"path's all-reduce, bit (H and C act on the ring and nccl-ring variants alike)",
	"X: the MPI library stops returning (ring variant): row = the rank whose exchanges from that iteration "
	"on never come back; its watchdog must end it and the others name it",
	"K: a rank dies mid-exchange (nccl variant, under mpirun): row = the rank that, after that iteration's "
	"first collective, says its word to the ranks below it only and is killed (SIGKILL); the others name it "
	"and no one else",
	NULL,
};

/* Under mpirun (2 ranks or more): a hop in each phase and one rank's arithmetic, on the MPI ring
 * and (where the ranks have GPUs) on the ring over NCCL; a wrong element of NCCL's all-reduce. */
static const char *const allreduce_selftest_options[] = { "variants=ring,nccl,nccl-ring", "nccl_paths=auto,ring/ll",
							  "bytes=262144", NULL };
static const char *const allreduce_selftest_faults[] = {
	"allreduce/ring:H:iter=1,row=1,bit=9",
	"allreduce/ring:H:iter=2,row=0,tensor=ag,bit=20",
	"allreduce/ring:H:iter=3,row=0,tensor=ag-header,bit=5",
	"allreduce/ring:C:iter=3,row=1,bit=25",
	"allreduce/nccl-ring:H:iter=1,row=1,bit=9",
	"allreduce/nccl-ring:H:iter=2,row=0,tensor=ag,bit=20",
	"allreduce/nccl-ring:H:iter=3,row=0,tensor=ag-header,bit=5",
	"allreduce/nccl-ring:C:iter=3,row=1,bit=25",
	"allreduce/nccl:V:iter=1,row=1,col=100,bit=7",
	NULL,
};


enum { VARIANT_RING, VARIANT_MPI, VARIANT_NCCL, VARIANT_NCCL_RING };

/* Launched as 2 ranks or more: the ranks are the members; otherwise this host's GPUs are. */
static bool under_mpi(void)
{
	return sdc_mpi.active && sdc_mpi.size > 1;
}

static int allreduce_variants(const void *opts, struct sdc_variant *out, int max)
{
	const struct allreduce_opts *o = opts;
	int n = 0;
	for (int i = 0; variant_names[i] && n < max; i++) {
		/* with no launcher only the nccl ones run: one process over every GPU of the host */
		if (!sdc_opt_set_has(o->variants, i) || (!under_mpi() && i < VARIANT_NCCL))
			continue;
		/* one worker a rank (nccl: on the rank's GPU; with no launcher one worker driving every
		 * GPU); exact data, so every rank's sums are the same whatever the world */
		out[n] = (struct sdc_variant){ .devices = i >= VARIANT_NCCL ? SDC_ON_GPU : SDC_ON_CPU, .per_rank = true,
					       .param = { i } };
		sdc_strlcpy(out[n++].name, variant_names[i], SDC_NAME_MAX);
	}
	return n;
}

/* The GPUs a run without a launcher would put in its communicator: the selected ones (run), or
 * with no run (`list`) every GPU of the host. */
static int local_gpus(const struct sdc_run *run, char *note, size_t len)
{
	if (!run) {
		const struct sdc_gpu_module *m = sdc_gpu_ops();
		return m ? m->count(note, len) : 0;
	}
	int n = 0;
	for (int d = 0; d < run->ndevices; d++)
		n += run->devices[d].kind == SDC_DEVICE_GPU;
	return n;
}

static bool allreduce_available(const struct sdc_run *run, char *why, size_t len)
{
	if (under_mpi())
		return true;
	/* no launcher: NCCL between the selected GPUs, where there are two and NCCL */
	const struct sdc_gpu_module *m = sdc_gpu_ops();
	char note[200] = "";
	const int gpus = local_gpus(run, note, sizeof(note));
	if (gpus >= 2 && m && m->nccl_init && m->nccl_version(note, sizeof(note)))
		return true;
	const char *mpi = HAVE_MPI ? "" : ", which this build cannot join: install libopenmpi-dev and rebuild";
	if (gpus >= 2)
		snprintf(why, len, "needs 2 or more MPI ranks (mpirun -np N or srun --mpi=pmix%s), or NCCL between this "
				   "host's GPUs, which cannot be loaded here", mpi);
	else if (run)
		snprintf(why, len, "%d GPU selected: NCCL between GPUs needs 2 or more (or 2 or more MPI ranks: mpirun -np "
				   "N or srun --mpi=pmix%s)", gpus, mpi);
	else
		snprintf(why, len, "needs 2 or more MPI ranks (mpirun -np N or srun --mpi=pmix%s), or 2 GPUs or more here "
				   "for NCCL between them", mpi);
	return false;
}

static void allreduce_teardown(struct sdc_probe_ctx *ctx)
{
	if (ctx->shared)
		free(((struct ar_shared *)ctx->shared)->member_bus);
	free(ctx->shared);
	ctx->shared = NULL;
}

/* The runner calls teardown only after a setup that succeeded: a failing setup undoes itself. */
SDC_PRINTF(2, 3) static int fail_setup(struct sdc_probe_ctx *ctx, const char *fmt, ...)
{
	char msg[sizeof(ctx->error)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	allreduce_teardown(ctx);
	return sdc_ctx_error(ctx, "%s", msg);
}

static int allreduce_setup(struct sdc_probe_ctx *ctx)
{
	const struct allreduce_opts *o = ctx->opts;
	struct ar_shared *sh = calloc(1, sizeof(*sh));
	if (!sh)
		return sdc_ctx_error(ctx, "out of memory");
	ctx->shared = sh;
	for (int i = 0; i < ctx->run->ninject; i++) {
		const struct sdc_inject_spec *in = &ctx->run->inject[i];
		int phase;
		bool header;
		const bool known = !in->tensor[0] || (!strcmp(in->target, "H") && sdc_ar_hop_tensor(in->tensor, &phase, &header));
		if (!strcmp(in->probe, "allreduce") && !known)
			return fail_setup(ctx, "--inject %s: tensor=%s: allreduce takes tensor= only for H faults: rs, ag, "
						  "rs-header or ag-header", in->text, in->tensor);
	}
	/* the members: the ranks, or with no launcher this host's GPUs (the nccl variants) */
	int members = sdc_mpi.size;
	sh->local = !under_mpi();
	if (sh->local) {
		members = 0;
		for (int d = 0; d < ctx->run->ndevices; d++)
			members += ctx->run->devices[d].kind == SDC_DEVICE_GPU;
		if (members < 2)
			return fail_setup(ctx, "%d GPU selected: NCCL between GPUs needs 2 or more (or mpirun across "
						  "hosts)", members);
	}
	/* a fault's row names a member (a rank, or a GPU with no launcher): one outside the ring
	 * could never take effect */
	for (int i = 0; i < ctx->run->ninject; i++) {
		const struct sdc_inject_spec *in = &ctx->run->inject[i];
		if (!strcmp(in->probe, "allreduce") && (!in->variant[0] || !strcmp(in->variant, ctx->variant->name)) &&
		    in->row >= members)
			return fail_setup(ctx, "--inject %s: row=%" PRId64 " names member %" PRId64 ", but the %s has %d "
						  "(0-%d)", in->text, in->row, in->row, sh->local ? "GPUs' ring" : "ring of ranks",
					  members, members - 1);
	}
	/* a whole number of floats per chunk */
	sh->n = o->bytes / 4 / members * members;
	sh->timeout = o->timeout;
	sh->nccl_paths = o->nccl_paths;
	sdc_mpi.timeout = o->timeout; /* the gather at the end waits no longer than the probe's waits */
	snprintf(sh->operation, sizeof(sh->operation), "%s all-reduce of %" PRId64 " fp32 over %d %s", ctx->variant->name,
		 sh->n, members, sh->local ? "GPUs" : "ranks");
	snprintf(ctx->rate_unit, sizeof(ctx->rate_unit), "GB/s busbw");
	snprintf(ctx->iter_unit, sizeof(ctx->iter_unit), "reductions");
	ctx->rate_scale = 1e9;
	ctx->floor = o->floor;
	return 0;
}

#if HAVE_MPI

static void mpi_run(struct sdc_worker *w)
{
	const struct ar_shared *sh = w->ctx->shared;
	const int P = sdc_mpi.size;
	float *in = malloc((size_t)sh->n * 4), *out = malloc((size_t)sh->n * 4);
	int8_t *f = malloc((size_t)sh->n), *gt = malloc((size_t)sh->n);
	if (!in || !out || !f || !gt) {
		sdc_worker_error(w, "out of memory");
		goto done;
	}
	for (uint64_t it = 0;; it++) {
		if (!sdc_ar_all_go_on(w))
			break;
		sdc_ring_terms(sh->n, it, f, gt);
		sdc_ring_values(in, sh->n, sdc_mpi.rank, f, gt);
		sdc_worker_fatal_faults(w, it, in);
		/* (the parent makes the call for this burn's process: mpi/transport.h) */
		if (sdc_mpi_allreduce_f32(in, out, sh->n, sh->timeout)) {
			sdc_ar_unresponsive(w, -1, "MPI_Allreduce");
			break;
		}
		const int all = P * (P - 1) / 2;
		const uint64_t wrong = (uint64_t)sdc_ring_count_wrong(out, f, gt, sh->n, P, all);
		const int64_t first = wrong ? sdc_ring_first_wrong(out, f, gt, sh->n, P, all, false, NULL) : -1;
		uint64_t total = wrong;
		if (sdc_mpi_sum_u64(&total, sh->timeout)) {
			sdc_ar_unresponsive(w, -1, "the count of wrong elements");
			break;
		}
		if (wrong) {
			const float e = sdc_ring_expected(f, gt, first, P, all);
			sdc_ar_report(w, it, "collective-wrong", "V", sdc_mpi.rank, first, e, out[first], NULL,
			       "MPI_Allreduce gave rank %d (%s) %" PRIu64 " wrong elements of %" PRId64 " (%" PRIu64
			       " on all ranks); first element %" PRId64,
			       sdc_mpi.rank, sdc_mpi.host, wrong, sh->n, total, first);
		}
		sdc_worker_digest(w, it, total);
		sdc_worker_account(w, (double)sh->n * 4 * 2 * (P - 1) / P);
	}
done:
	free(in), free(out), free(f), free(gt);
}

/* The CPU lane: the checked ring over MPI, or MPI's own all-reduce checked. */
static void allreduce_run(struct sdc_worker *w)
{
	snprintf(w->kernel, sizeof(w->kernel), "%s, rank %d of %d", w->ctx->variant->name, sdc_mpi.rank,
		 sdc_mpi.size);
	if (w->ctx->variant->param[0] == VARIANT_RING)
		sdc_ar_ring_run(w);
	else
		mpi_run(w);
}

#else

/* (only the nccl variants, the GPU lane's, are offered without MPI: one process over the host's GPUs) */
static void allreduce_run(struct sdc_worker *w)
{
	sdc_worker_error(w, "built without MPI");
}

#endif

/* The GPU lane: NCCL's all-reduce checked, or the checked ring over NCCL's sends and receives. */
static void allreduce_gpu_lane(struct sdc_worker *w)
{
#if HAVE_MPI
	snprintf(w->kernel, sizeof(w->kernel), "%s, rank %d of %d", w->ctx->variant->name, sdc_mpi.rank,
		 sdc_mpi.size);
#endif
	if (w->ctx->variant->param[0] == VARIANT_NCCL)
		sdc_ar_nccl_run(w);
	else
		sdc_ar_nccl_ring_run(w);
}

extern const struct sdc_command sdc_allreduce_bench;       /* ring_mpi.c */
extern const struct sdc_command sdc_allreduce_hops_bench;  /* bench_gpu.c */
extern const struct sdc_command sdc_allreduce_nccl_bench;  /* bench_nccl.c */
static const struct sdc_command *const allreduce_benches[] = { &sdc_allreduce_bench, &sdc_allreduce_hops_bench,
							       &sdc_allreduce_nccl_bench, NULL };

const struct sdc_probe sdc_probe_allreduce = {
	.name = "allreduce",
	.summary = "ring all-reduce with every hop CRC- and value-checked (names the link or node), and "
		   "MPI_Allreduce checked exactly; busbw",
	.needs = SDC_NEED_MPI,
	.options = allreduce_options,
	.opts_size = sizeof(struct allreduce_opts),
	.inject_targets = allreduce_targets,
	.selftest_options = allreduce_selftest_options,
	.selftest_faults = allreduce_selftest_faults,
	.variants = allreduce_variants,
	.available = allreduce_available,
	.setup = allreduce_setup,
	.lane = { [SDC_DEVICE_CPU] = allreduce_run, [SDC_DEVICE_GPU] = allreduce_gpu_lane },
	.teardown = allreduce_teardown,
	.benches = allreduce_benches,
};
