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

#include "bench.h"
#include "command.h"
#include "facts.h"
#include "fleet.h"
#include "gpu.h"
#include "probes/allreduce/gpu_ops.h"
#include "probes/allreduce/ring_hd.h"
#include "probe.h"
#include "probes/allreduce/allreduce.h"

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
	double *all = malloc(sizeof(double) * (size_t)sdc_fleet.size);
	if (!all || sdc_fleet_allgather(x, (int)sizeof(*x), all, 120)) {
		free(all);
		return -1;
	}
	double s = 0;
	for (int r = 0; r < sdc_fleet.size; r++)
		s += all[r];
	*x = s / sdc_fleet.size;
	free(all);
	return 0;
}

/* Whether every rank says ok (all stop together when one cannot go on). */
static bool all_ok(bool ok)
{
	uint64_t bad = !ok;
	return !sdc_fleet_sum_u64(&bad, 120) && !bad;
}

/* A communicator of the ranks for n floats on the path algo/proto: 0; 1 when NCCL refused it on
 * some rank (said); -1 when the benchmark cannot go on (said). */
static int open_comm(const struct sdc_gpu_module *m, const struct sdc_device *gpu, int64_t n, const char *algo,
		     const char *proto, struct sdc_gpu_comm **c, char *err, size_t errlen)
{
	uint8_t id[SDC_GPU_NCCL_ID_BYTES];
	bool late = false;
	*c = NULL;
	if (!all_ok(!sdc_gpu_nccl_fleet_id(id, 120, &late, err, errlen))) {
		sdc_error("bench nccl: rank %d: %s", sdc_fleet.rank, err[0] ? err : "another rank failed");
		return -1;
	}
	*c = sdc_gpu_nccl_init(id, sdc_fleet.size, sdc_fleet.rank, 1, &gpu->gpu.index, algo, proto, n, 120, err, errlen);
	if (all_ok(*c != NULL))
		return 0;
	if (*c)
		m->nccl_destroy(*c, 1);
	*c = NULL;
	if (*algo)
		return 1; /* a path NCCL does not offer here */
	sdc_error("bench nccl: rank %d: %s", sdc_fleet.rank, err[0] ? err : "another rank's communicator failed");
	return -1;
}

static int nccl_bench_main(struct sdc_cmd *cmd)
{
	const struct nccl_bench_opts *o = cmd->opts;
	if (!sdc_fleet.active || sdc_fleet.size < 2)
		return sdc_cli_bad(&cmd->cli, "needs mpirun (or srun) with 2 or more ranks, one a GPU");
	if (o->min_bytes > o->max_bytes)
		return sdc_cli_bad(&cmd->cli, "--min-bytes %" PRId64 " is above --max-bytes %" PRId64, o->min_bytes,
				   o->max_bytes);
	const int P = sdc_fleet.size, me = sdc_fleet.rank;
	struct sdc_run run;
	if (sdc_cli_bench_start(cmd, &run))
		return sdc_cli_unknown(&cmd->cli);
	const struct sdc_gpu_module *m = sdc_gpu_ops();
	const struct sdc_gpu_allreduce_ops *ar = SDC_GPU_FAMILY(allreduce, SDC_GPU_ALLREDUCE_VERSION);
	char err[256] = "", why[256] = "", gwhy[256] = "";
	const struct sdc_device *gpu = sdc_gpu_of_rank(&run, gwhy, sizeof(gwhy)); /* one rank a GPU, as the probe */
	const char *version = m && m->nccl_init ? m->nccl_version(why, sizeof(why)) : NULL;
	if (!gpu)
		snprintf(err, sizeof(err), "no GPU to measure: %s", gwhy);
	else if (!version)
		snprintf(err, sizeof(err), "%s", m && m->nccl_init ? why : "this GPU module was built without NCCL");
	else if (!ar)
		snprintf(err, sizeof(err), "%s", sdc_gpu_family_why("allreduce"));
	else
		sdc_gpu_bind(gpu, err, sizeof(err));
	int *order = malloc(sizeof(int) * (size_t)P);
	struct sdc_gpu_hop *hops = malloc(sizeof(*hops) * 2 * (size_t)P);
	/* (the JSON's order: the paths' table, the race's rows, then the rest) */
	struct sdc_facts *out = sdc_facts_new();
	sdc_facts_list(out, "nccl_paths_busbw_gb_s");
	sdc_facts_list(out, "rows");
	bool met = true, judged = false, clean = true;
	int code = -1;
	if (!order || !hops)
		snprintf(err, sizeof(err), "out of memory");
	if (!all_ok(!err[0])) {
		sdc_error("bench nccl: rank %d: %s", me, err[0] ? err : "another rank cannot measure (its own line says why)");
		goto done;
	}
	for (int r = 0; r < P; r++)
		order[r] = r;
	if (me == 0)
		printf("sdcscan bench nccl: %d ranks, one a GPU (%s here), NCCL %s; per size a warm-up of each, then %d\n"
		       "turns side by side (who goes first alternates); ncclAllReduce timed alone between events, as\n"
		       "nccl-tests times it; the checked ring timed whole, with every hop's CRC32C and value checks on the\n"
		       "GPU; each rank's time averaged over the ranks; busbw = algbw x 2(n-1)/n (nccl-tests); ring/nccl\n"
		       "is the median of the turns' own ratios\n\n"
		       "        bytes   nccl algbw  nccl busbw   ring algbw  ring busbw   ring/nccl busbw\n"
		       "                      GB/s        GB/s         GB/s        GB/s\n",
		       P, gpu->gpu.pci_bus_id, version, (int)o->reps);
	for (int64_t bytes = o->min_bytes; bytes <= o->max_bytes; bytes *= 4) {
		const int64_t n = bytes / 4 / P * P;
		struct sdc_gpu_comm *c = NULL;
		if (open_comm(m, gpu, n, "", "", &c, err, sizeof(err)))
			goto done;
		double tn[100], tr[100], ratio[100];
		bool failed = false;
		for (int k = -1; k < o->reps && !failed; k++)
			for (int turn = 0; turn < 2 && !failed; turn++) {
				const bool ring = (turn + (k < 0 ? 0 : k)) % 2 == 0;
				const uint64_t it = (uint64_t)bytes + (uint64_t)(k + 1);
				double t = 0;
				int timed_out = 0;
				if (ring) {
					failed = ar->nccl_ring(c, order, it, NULL, 0, hops, &t, &timed_out, 120, err, sizeof(err)) != 0;
					for (int h = 0; h < 2 * (P - 1) && !failed; h++)
						clean &= hops[h].nbad == 0 && hops[h].crc == hops[h].hdr[0];
				} else {
					struct sdc_gpu_coll_result res;
					failed = ar->nccl_collective(c, 'A', it, NULL, &res, 120, err, sizeof(err)) != 0;
					clean &= res.wrong == 0;
					t = res.seconds;
					timed_out = res.timed_out;
				}
				if (!all_ok(!failed) || ranks_mean(&t)) {
					sdc_error("bench nccl: rank %d: %s", me, failed ? err : "another rank failed");
					m->nccl_destroy(c, 1);
					goto done;
				}
				if (k >= 0)
					*(ring ? &tr[k] : &tn[k]) = t;
			}
		m->nccl_destroy(c, 0);
		for (int k = 0; k < o->reps; k++)
			ratio[k] = tn[k] / tr[k];
		const double b = (double)n * 4, fb = sdc_coll_bus_factor('A', P);
		const double n_alg = b / sdc_median(tn, (int)o->reps) / 1e9, r_alg = b / sdc_median(tr, (int)o->reps) / 1e9;
		const double share = sdc_median(ratio, (int)o->reps);
		const bool judge = bytes >= o->target_bytes;
		if (judge) {
			judged = true;
			met &= share >= 0.8;
		}
		if (me == 0) {
			printf("%13.0f   %10.3f  %10.3f   %10.3f  %10.3f   %14.1f%%%s\n", b, n_alg, n_alg * fb, r_alg, r_alg * fb,
			       100 * share, judge ? share >= 0.8 ? "  (>= 80%: met)" : "  (>= 80%: MISSED)" : "");
			fflush(stdout);
		}
		struct sdc_facts *row = sdc_facts_row(out, "rows");
		sdc_facts_real(row, "bytes", b);
		sdc_facts_real(row, "nccl_algbw_gb_s", n_alg);
		sdc_facts_real(row, "nccl_busbw_gb_s", n_alg * fb);
		sdc_facts_real(row, "ring_algbw_gb_s", r_alg);
		sdc_facts_real(row, "ring_busbw_gb_s", r_alg * fb);
		sdc_facts_real(row, "ring_share", share);
		sdc_facts_bool(row, "judged", judge);
	}
	/* ncclAllReduce on each (algorithm, protocol) path, a communicator each: its busbw */
	if (me == 0)
		printf("\nncclAllReduce busbw (GB/s) on each path NCCL offers here (NCCL_ALGO/NCCL_PROTO, a communicator each):\n"
		       "        bytes");
	for (int k = 1; sdc_ar_nccl_paths[k] && me == 0; k++)
		printf("  %11s", sdc_ar_nccl_paths[k]);
	if (me == 0)
		printf("\n");
	for (int64_t bytes = o->min_bytes; bytes <= o->max_bytes; bytes *= 4) {
		const int64_t n = bytes / 4 / P * P;
		struct sdc_facts *row = sdc_facts_row(out, "nccl_paths_busbw_gb_s");
		sdc_facts_real(row, "bytes", (double)n * 4);
		if (me == 0)
			printf("%13.0f", (double)n * 4);
		for (int k = 1; sdc_ar_nccl_paths[k]; k++) {
			const char *algo, *proto;
			sdc_ar_nccl_path_env(k, &algo, &proto);
			struct sdc_gpu_comm *c;
			const int rc = open_comm(m, gpu, n, algo, proto, &c, err, sizeof(err));
			if (rc < 0)
				goto done;
			double t[100];
			bool failed = rc != 0;
			for (int q = -1; q < o->reps && !failed; q++) {
				struct sdc_gpu_coll_result res;
				failed = ar->nccl_collective(c, 'A', (uint64_t)bytes + (uint64_t)(q + 1), NULL, &res, 120, err,
							    sizeof(err)) != 0;
				clean &= failed || res.wrong == 0;
				double x = res.seconds;
				if (!all_ok(!failed) || ranks_mean(&x)) {
					sdc_error("bench nccl: rank %d: %s: %s", me, sdc_ar_nccl_paths[k], failed ? err : "another rank failed");
					m->nccl_destroy(c, 1);
					goto done;
				}
				if (q >= 0)
					t[q] = x;
			}
			if (c)
				m->nccl_destroy(c, 0);
			const double busbw = rc ? 0 : (double)n * 4 / sdc_median(t, (int)o->reps) / 1e9 * sdc_coll_bus_factor('A', P);
			if (me == 0)
				rc ? printf("  %11s", "refused") : printf("  %11.3f", busbw);
			if (rc)
				sdc_facts_str(row, sdc_ar_nccl_paths[k], "refused");
			else
				sdc_facts_real(row, sdc_ar_nccl_paths[k], busbw);
		}
		if (me == 0) {
			printf("\n");
			fflush(stdout);
		}
	}
	clean = all_ok(clean);
	met &= judged && clean;
	if (me == 0) {
		if (!clean)
			printf("\nwrong elements or hops were seen while measuring: see sdcscan run --probe allreduce\n");
		printf("\ntarget: the checked ring at least 80%% of ncclAllReduce's busbw from %" PRId64 " bytes up: %s\n",
		       o->target_bytes, !judged ? "MISSED (no size that large was measured)" : met ? "met" : "MISSED");
	}
	sdc_facts_int(out, "ranks", P);
	sdc_facts_str(out, "nccl", version);
	sdc_facts_bool(out, "clean", clean);
	if (me == 0)
		code = sdc_cli_facts_end(&cmd->cli, out, met);
	else
		code = met ? 0 : SDC_CRITICAL;
done:
	sdc_facts_free(out);
	free(order), free(hops);
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
