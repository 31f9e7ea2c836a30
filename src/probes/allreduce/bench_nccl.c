/*
 * sdcscan bench nccl (under mpirun or srun, one rank a GPU): sdcscan's checked ring over NCCL's
 * send and receive, timed whole with every hop's CRC32C and value checks on the GPU, against
 * ncclAllReduce timed alone between events as nccl-tests times it, on the same GPUs and the same
 * exact data, from --min-bytes to --max-bytes by factors of 4. algbw = bytes / time and busbw =
 * algbw x 2(n-1)/n (nccl-tests' doc/PERFORMANCE.md), each rank's time averaged over the ranks as
 * nccl-tests does; the two run in turns side by side (who goes first alternates) and the ratio
 * printed is the median of the turns' own ratios. Target: the checked ring at least 80% of
 * ncclAllReduce's busbw at every size from --target-bytes (64 MiB) up. Exit 0 met, 2 missed (or
 * a wrong element or hop seen while measuring), 3 could not measure.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/bench_race.h"
#include "probe/command.h"
#include "run/facts.h"
#include "mpi/transport.h"
#include "device/gpu_loader.h"
#include "mpi/gpu_ranks.h"
#include "probes/allreduce/gpu_ops.h"
#include "probes/allreduce/ring_hd.h"
#include "probe/probe.h"
#include "probes/allreduce/allreduce.h"
#include "base/message.h"

struct nccl_bench_opts {
	int64_t min_bytes, max_bytes, target_bytes, reps;
};

#define OPT(f) offsetof(struct nccl_bench_opts, f)
static const struct sdc_option nccl_bench_options[] = {
	{ .name = "min-bytes", .metavar = "B", .type = SDC_OPT_INT, .offset = OPT(min_bytes), .def = "1048576",
	  .imin = 4096, .imax = (int64_t)1 << 34, .help = "smallest all-reduce" },
	{ .name = "max-bytes", .metavar = "B", .type = SDC_OPT_INT, .offset = OPT(max_bytes), .def = "1073741824",
	  .imin = 4096, .imax = (int64_t)1 << 34, .help = "largest all-reduce (from --min-bytes up by factors of 4)" },
	{ .name = "target-bytes", .metavar = "B", .type = SDC_OPT_INT, .offset = OPT(target_bytes), .def = "67108864",
	  .imin = 4096, .imax = (int64_t)1 << 34, .help = "the target is judged at this size and above" },
	{ .name = "reps", .metavar = "R", .type = SDC_OPT_INT, .offset = OPT(reps), .def = "7", .imin = 1, .imax = 100,
	  .help = "turns per size" },
	SDC_OPT_END,
};


/* The mean over the ranks of each rank's x (nccl-tests averages the ranks' times); -1 on a rank
 * that did not answer. */
static int ranks_mean(double *x)
{
	double *all = malloc(sizeof(double) * (size_t)sdc_mpi.size);
	if (!all || sdc_mpi_allgather(x, (int)sizeof(*x), all, 120)) {
		free(all);
		return -1;
	}
	double s = 0;
	for (int r = 0; r < sdc_mpi.size; r++)
		s += all[r];
	*x = s / sdc_mpi.size;
	free(all);
	return 0;
}

/* Whether every rank says ok (all stop together when one cannot go on). */
static bool all_ok(bool ok)
{
	uint64_t bad = !ok;
	return !sdc_mpi_sum_u64(&bad, 120) && !bad;
}

/* A communicator of the ranks for n floats on the path algo/proto: 0; 1 when NCCL refused it on
 * some rank (said); -1 when the benchmark cannot go on (said). */
static int open_comm(const struct sdc_gpu_module *m, const struct sdc_device *gpu, int64_t n, const char *algo,
		     const char *proto, struct sdc_gpu_comm **c, char *err, size_t errlen)
{
	uint8_t id[SDC_GPU_NCCL_ID_BYTES];
	bool late = false;
	*c = NULL;
	if (!all_ok(!sdc_mpi_nccl_id(id, 120, &late, err, errlen))) {
		sdc_error("bench nccl: rank %d: %s", sdc_mpi.rank, err[0] ? err : "another rank failed");
		return -1;
	}
	*c = sdc_gpu_nccl_init(id, sdc_mpi.size, sdc_mpi.rank, 1, &gpu->gpu.index, algo, proto, n, 120, err, errlen);
	if (all_ok(*c != NULL))
		return 0;
	if (*c)
		m->nccl_destroy(*c, 1);
	*c = NULL;
	if (*algo)
		return 1; /* a path NCCL does not offer here */
	sdc_error("bench nccl: rank %d: %s", sdc_mpi.rank, err[0] ? err : "another rank's communicator failed");
	return -1;
}

/* What the benchmark's steps share: the options, this rank's GPU and the module's tables, the
 * ring's order and hops, the facts stated and the verdict so far. */
struct nccl_bench {
	const struct nccl_bench_opts *o;
	int P, me;
	const struct sdc_gpu_module *m;
	const struct sdc_gpu_allreduce_ops *ar;
	const struct sdc_device *gpu;
	const char *version; /* NCCL's */
	int *order;
	struct sdc_gpu_hop *hops;
	struct sdc_facts *out;
	bool met, judged, clean;
	char err[256];
};

/* This rank's GPU bound, NCCL's version and the allreduce family found, the ring's order and hops
 * allocated; b->err says what failed ("" when nothing did). */
static void bench_open(struct nccl_bench *b, struct sdc_run *run)
{
	char why[256] = "", gwhy[256] = "";
	b->m = sdc_gpu_ops();
	b->ar = SDC_GPU_FAMILY(allreduce, SDC_GPU_ALLREDUCE_VERSION);
	b->gpu = sdc_gpu_of_rank(run, gwhy, sizeof(gwhy)); /* one rank a GPU, as the probe */
	b->version = b->m && b->m->nccl_init ? b->m->nccl_version(why, sizeof(why)) : NULL;
	if (!b->gpu)
		snprintf(b->err, sizeof(b->err), "no GPU to measure: %s", gwhy);
	else if (!b->version)
		snprintf(b->err, sizeof(b->err), "%s",
			 b->m && b->m->nccl_init ? why : "this GPU module was built without NCCL");
	else if (!b->ar)
		snprintf(b->err, sizeof(b->err), "%s", sdc_gpu_family_why("allreduce"));
	else
		sdc_gpu_bind(b->gpu, b->err, sizeof(b->err));
	b->order = malloc(sizeof(int) * (size_t)b->P);
	b->hops = malloc(sizeof(*b->hops) * 2 * (size_t)b->P);
}

/* One turn of a race on communicator c: the checked ring (ring) or ncclAllReduce, iteration it;
 * *t its time averaged over the ranks. 0, or -1 (said; c destroyed) when a rank failed. */
static int race_turn(struct nccl_bench *b, struct sdc_gpu_comm *c, bool ring, uint64_t it, double *t)
{
	bool failed;
	int timed_out = 0;
	*t = 0;
	if (ring) {
		failed = b->ar->nccl_ring(c, b->order, it, NULL, 0, b->hops, t, &timed_out, 120, b->err,
					  sizeof(b->err)) != 0;
		for (int h = 0; h < 2 * (b->P - 1) && !failed; h++)
			b->clean &= b->hops[h].nbad == 0 && b->hops[h].crc == b->hops[h].hdr[0];
	} else {
		struct sdc_gpu_coll_result res;
		failed = b->ar->nccl_collective(c, 'A', it, NULL, &res, 120, b->err, sizeof(b->err)) != 0;
		b->clean &= res.wrong == 0;
		*t = res.seconds;
		timed_out = res.timed_out;
	}
	if (!all_ok(!failed) || ranks_mean(t)) {
		sdc_error("bench nccl: rank %d: %s", b->me, failed ? b->err : "another rank failed");
		b->m->nccl_destroy(c, 1);
		return -1;
	}
	return 0;
}

/* One size's race: a warm-up of each, then o->reps turns of each side by side (who goes first
 * alternates); its row printed, stated and judged. 0, or -1 (said) when the benchmark cannot go on. */
static int race_size(struct nccl_bench *b, int64_t bytes)
{
	const int reps = (int)b->o->reps;
	const int64_t n = bytes / 4 / b->P * b->P;
	struct sdc_gpu_comm *c = NULL;
	if (open_comm(b->m, b->gpu, n, "", "", &c, b->err, sizeof(b->err)))
		return -1;
	double tn[100], tr[100], ratio[100];
	for (int k = -1; k < reps; k++)
		for (int turn = 0; turn < 2; turn++) {
			const bool ring = (turn + (k < 0 ? 0 : k)) % 2 == 0;
			double t;
			if (race_turn(b, c, ring, (uint64_t)bytes + (uint64_t)(k + 1), &t))
				return -1;
			if (k >= 0)
				*(ring ? &tr[k] : &tn[k]) = t;
		}
	b->m->nccl_destroy(c, 0);
	for (int k = 0; k < reps; k++)
		ratio[k] = tn[k] / tr[k];
	const double sz = (double)n * 4, fb = sdc_coll_bus_factor('A', b->P);
	const double n_alg = sz / sdc_median(tn, reps) / 1e9, r_alg = sz / sdc_median(tr, reps) / 1e9;
	const double share = sdc_median(ratio, reps);
	const bool judge = bytes >= b->o->target_bytes;
	if (judge) {
		b->judged = true;
		b->met &= share >= 0.8;
	}
	if (b->me == 0) {
		printf("%13.0f   %10.3f  %10.3f   %10.3f  %10.3f   %14.1f%%%s\n", sz, n_alg, n_alg * fb, r_alg, r_alg * fb,
		       100 * share, judge ? share >= 0.8 ? "  (>= 80%: met)" : "  (>= 80%: MISSED)" : "");
		fflush(stdout);
	}
	struct sdc_facts *row = sdc_facts_row(b->out, "rows");
	sdc_facts_real(row, "bytes", sz);
	sdc_facts_real(row, "nccl_algbw_gb_s", n_alg);
	sdc_facts_real(row, "nccl_busbw_gb_s", n_alg * fb);
	sdc_facts_real(row, "ring_algbw_gb_s", r_alg);
	sdc_facts_real(row, "ring_busbw_gb_s", r_alg * fb);
	sdc_facts_real(row, "ring_share", share);
	sdc_facts_bool(row, "judged", judge);
	return 0;
}

/* ncclAllReduce of a size on path k (sdc_ar_nccl_paths), a communicator of its own: *busbw; 1 when
 * NCCL refused the path here, -1 (said) when the benchmark cannot go on. */
static int path_busbw(struct nccl_bench *b, int64_t bytes, int k, double *busbw)
{
	const int64_t n = bytes / 4 / b->P * b->P;
	const char *algo, *proto;
	sdc_ar_nccl_path_env(k, &algo, &proto);
	struct sdc_gpu_comm *c;
	const int rc = open_comm(b->m, b->gpu, n, algo, proto, &c, b->err, sizeof(b->err));
	if (rc < 0)
		return -1;
	double t[100];
	bool failed = rc != 0;
	for (int q = -1; q < b->o->reps && !failed; q++) {
		struct sdc_gpu_coll_result res;
		failed = b->ar->nccl_collective(c, 'A', (uint64_t)bytes + (uint64_t)(q + 1), NULL, &res, 120, b->err,
						sizeof(b->err)) != 0;
		b->clean &= failed || res.wrong == 0;
		double x = res.seconds;
		if (!all_ok(!failed) || ranks_mean(&x)) {
			sdc_error("bench nccl: rank %d: %s: %s", b->me, sdc_ar_nccl_paths[k],
				  failed ? b->err : "another rank failed");
			b->m->nccl_destroy(c, 1);
			return -1;
		}
		if (q >= 0)
			t[q] = x;
	}
	if (c)
		b->m->nccl_destroy(c, 0);
	*busbw = rc ? 0 : (double)n * 4 / sdc_median(t, (int)b->o->reps) / 1e9 * sdc_coll_bus_factor('A', b->P);
	return rc;
}

/* One size's row of ncclAllReduce's busbw on every path, printed and stated. 0, or -1 (said) when
 * the benchmark cannot go on. */
static int paths_size(struct nccl_bench *b, int64_t bytes)
{
	const int64_t n = bytes / 4 / b->P * b->P;
	struct sdc_facts *row = sdc_facts_row(b->out, "nccl_paths_busbw_gb_s");
	sdc_facts_real(row, "bytes", (double)n * 4);
	if (b->me == 0)
		printf("%13.0f", (double)n * 4);
	for (int k = 1; sdc_ar_nccl_paths[k]; k++) {
		double busbw;
		const int rc = path_busbw(b, bytes, k, &busbw);
		if (rc < 0)
			return -1;
		if (b->me == 0)
			rc ? printf("  %11s", "refused") : printf("  %11.3f", busbw);
		if (rc)
			sdc_facts_str(row, sdc_ar_nccl_paths[k], "refused");
		else
			sdc_facts_real(row, sdc_ar_nccl_paths[k], busbw);
	}
	if (b->me == 0) {
		printf("\n");
		fflush(stdout);
	}
	return 0;
}

/* The verdict agreed by the ranks, said and stated: the command's exit code. */
static int bench_end(struct nccl_bench *b, struct sdc_cmd *cmd)
{
	b->clean = all_ok(b->clean);
	b->met &= b->judged && b->clean;
	if (b->me == 0) {
		if (!b->clean)
			printf("\nwrong elements or hops were seen while measuring: see sdcscan run --probe allreduce\n");
		printf("\ntarget: the checked ring at least 80%% of ncclAllReduce's busbw from %" PRId64 " bytes up: %s\n",
		       b->o->target_bytes, !b->judged ? "MISSED (no size that large was measured)" : b->met ? "met" : "MISSED");
	}
	sdc_facts_int(b->out, "ranks", b->P);
	sdc_facts_str(b->out, "nccl", b->version);
	sdc_facts_bool(b->out, "clean", b->clean);
	if (b->me == 0)
		return sdc_cli_facts_end(&cmd->cli, b->out, b->met);
	return b->met ? 0 : SDC_CRITICAL;
}

static int nccl_bench_main(struct sdc_cmd *cmd)
{
	const struct nccl_bench_opts *o = cmd->opts;
	if (!sdc_mpi.active || sdc_mpi.size < 2)
		return sdc_cli_bad(&cmd->cli, "needs mpirun (or srun) with 2 or more ranks, one a GPU");
	if (o->min_bytes > o->max_bytes)
		return sdc_cli_bad(&cmd->cli, "--min-bytes %" PRId64 " is above --max-bytes %" PRId64, o->min_bytes,
				   o->max_bytes);
	struct nccl_bench b = { .o = o, .P = sdc_mpi.size, .me = sdc_mpi.rank, .met = true, .clean = true };
	struct sdc_run run;
	if (sdc_cli_bench_start(cmd, &run))
		return sdc_cli_unknown(&cmd->cli);
	bench_open(&b, &run);
	/* (the JSON's order: the paths' table, the race's rows, then the rest) */
	b.out = sdc_facts_new();
	sdc_facts_list(b.out, "nccl_paths_busbw_gb_s");
	sdc_facts_list(b.out, "rows");
	int code = -1;
	if (!b.order || !b.hops)
		snprintf(b.err, sizeof(b.err), "out of memory");
	if (!all_ok(!b.err[0])) {
		sdc_error("bench nccl: rank %d: %s", b.me,
			  b.err[0] ? b.err : "another rank cannot measure (its own line says why)");
		goto done;
	}
	for (int r = 0; r < b.P; r++)
		b.order[r] = r;
	if (b.me == 0)
		printf("sdcscan bench nccl: %d ranks, one a GPU (%s here), NCCL %s; per size a warm-up of each, then %d\n"
		       "turns side by side (who goes first alternates); ncclAllReduce timed alone between events, as\n"
		       "nccl-tests times it; the checked ring timed whole, with every hop's CRC32C and value checks on the\n"
		       "GPU; each rank's time averaged over the ranks; busbw = algbw x 2(n-1)/n (nccl-tests); ring/nccl\n"
		       "is the median of the turns' own ratios\n\n"
		       "        bytes   nccl algbw  nccl busbw   ring algbw  ring busbw   ring/nccl busbw\n"
		       "                      GB/s        GB/s         GB/s        GB/s\n",
		       b.P, b.gpu->gpu.pci_bus_id, b.version, (int)o->reps);
	for (int64_t bytes = o->min_bytes; bytes <= o->max_bytes; bytes *= 4)
		if (race_size(&b, bytes))
			goto done;
	/* ncclAllReduce on each (algorithm, protocol) path, a communicator each: its busbw */
	if (b.me == 0)
		printf("\nncclAllReduce busbw (GB/s) on each path NCCL offers here (NCCL_ALGO/NCCL_PROTO, a communicator each):\n"
		       "        bytes");
	for (int k = 1; sdc_ar_nccl_paths[k] && b.me == 0; k++)
		printf("  %11s", sdc_ar_nccl_paths[k]);
	if (b.me == 0)
		printf("\n");
	for (int64_t bytes = o->min_bytes; bytes <= o->max_bytes; bytes *= 4)
		if (paths_size(&b, bytes))
			goto done;
	code = bench_end(&b, cmd);
done:
	sdc_facts_free(b.out);
	free(b.order), free(b.hops);
	sdc_run_release(&run);
	return code < 0 ? sdc_cli_unknown(&cmd->cli) : code;
}

const struct sdc_command sdc_allreduce_nccl_bench = {
	.name = "nccl",
	.summary = "under mpirun, one rank a GPU: the checked ring over NCCL against ncclAllReduce, algbw and busbw "
		   "from 1 MiB to 1 GiB; target: the ring at least 80% of ncclAllReduce's busbw from 64 MiB",
	.options = nccl_bench_options,
	.opts_size = sizeof(struct nccl_bench_opts),
	.flags = SDC_CMD_JOINS_MPI,
	.common = SDC_CF_GPUS | SDC_CF_JSON,
	.fn = nccl_bench_main,
};
