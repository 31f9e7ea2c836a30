/*
 * sdcscan bench ring-hops --gpus: the hop checks an NCCL ring will run on a GPU (ring_hd.h,
 * probes/allreduce/ring.cu), on one GPU, no launcher needed. First the bits: the GPU's CRC32C of
 * buffers of many lengths (odd ones, and the pieces' edges) against this CPU's; the GPU's check of
 * a reduce-scatter hop (wrong elements planted) against sdc_ring_check_add_crc: the same count,
 * the same sums written, the same CRC. Any difference is a missed target. Then the speed: GB/s of
 * the CRC32C and of the check with its CRC on device buffers of 1 MiB to 1 GiB: what a checked
 * ring pays on the GPU for each hop. (The ring over NCCL itself, its busbw: bench_nccl.c.)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/bench_race.h"
#include "base/rng.h"
#include "probe/command.h"
#include "run/facts.h"
#include "device/gpu_loader.h"
#include "mpi/gpu_ranks.h"
#include "probes/allreduce/gpu_ops.h"
#include "kernels/crc32c.h"
#include "probes/allreduce/ring_check.h"
#include "probe/probe.h"
#include "base/message.h"

struct hop_opts {
	int64_t max_bytes;
};

#define OPT(f) offsetof(struct hop_opts, f)
static const struct sdc_option hop_options[] = {
	{ .name = "max-bytes", .short_name = 'b', .metavar = "BYTES", .type = SDC_OPT_INT, .offset = OPT(max_bytes),
	  .def = "1073741824", .imin = 1 << 20, .imax = (int64_t)1 << 34,
	  .help = "the largest buffer timed (from 1 MiB, by 4)" },
	SDC_OPT_END,
};

/* The CRC32C of buffers of many lengths on the GPU against this CPU's: how many differ. */
static int64_t check_crc(const struct sdc_gpu_allreduce_ops *m, char *first, size_t len, char *err, size_t errlen)
{
	static const uint64_t lens[] = { 0, 1, 3, 255, 256, 257, 4096, 65535, 1 << 20, (1 << 24) + 13 };
	const uint64_t most = lens[sizeof(lens) / sizeof(lens[0]) - 1];
	uint8_t *buf = malloc(most);
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	const struct sdc_rng r = sdc_rng_make(1, SDC_RNG_PROBE_ALLREDUCE, 11, 0, 0);
	for (uint64_t i = 0; i < most; i++)
		buf[i] = (uint8_t)sdc_rng_below(&r, i, 256);
	int64_t bad = 0;
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		uint32_t crc = 0;
		if (m->crc32c(buf, lens[l], &crc, 60, err, errlen)) {
			free(buf);
			return -1;
		}
		const uint32_t want = sdc_crc32c(0, buf, lens[l]);
		if (crc != want && !bad++)
			snprintf(first, len, "%" PRIu64 " bytes: expected 0x%08" PRIx32 ", actual 0x%08" PRIx32, lens[l], want,
				 crc);
	}
	free(buf);
	return bad;
}

/* A hop of n elements among 8 ranks (3 summed so far), 7 wrong elements planted: the GPU's check
 * against this CPU's. Returns how many things differ (count, sums, CRC). */
static int64_t check_hop(const struct sdc_gpu_allreduce_ops *m, int64_t n, char *first, size_t len, char *err, size_t errlen)
{
	const int count = 3, rsum = 0 + 1 + 2;
	const uint64_t it = 77;
	int8_t *f = malloc((size_t)n), *g = malloc((size_t)n);
	float *own = malloc((size_t)n * 4), *dst = malloc((size_t)n * 4), *dst_gpu = malloc((size_t)n * 4);
	uint32_t *got = malloc((size_t)n * 4);
	int64_t bad = -1;
	if (!f || !g || !own || !dst || !dst_gpu || !got) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	sdc_ring_terms(n, it, f, g);
	sdc_ring_values(own, n, 3, f, g);
	for (int64_t i = 0; i < n; i++) {
		const float e = sdc_ring_expected(f, g, i, count, rsum);
		memcpy(&got[i], &e, 4);
	}
	for (int k = 0; k < 7; k++)
		got[(n - 1) * k / 6] ^= 1u << (k * 5 % 32);
	uint32_t crc = 0, crc_gpu = 0;
	int64_t wrong_gpu = 0;
	const int64_t wrong = sdc_ring_check_add_crc(dst, own, got, f, g, n, count, rsum, &crc);
	if (m->ring_check(n, it, count, rsum, own, got, dst_gpu, &wrong_gpu, &crc_gpu, 60, err, errlen))
		goto out;
	bad = 0;
	if (wrong_gpu != wrong && !bad++)
		snprintf(first, len, "wrong elements: CPU %" PRId64 ", GPU %" PRId64, wrong, wrong_gpu);
	for (int64_t i = 0; i < n; i++)
		if (memcmp(&dst[i], &dst_gpu[i], 4) && !bad++)
			snprintf(first, len, "sum written at %" PRId64 ": CPU %.9g, GPU %.9g", i, dst[i], dst_gpu[i]);
	if (crc != crc_gpu && !bad++)
		snprintf(first, len, "CRC32C of the sums: CPU 0x%08" PRIx32 ", GPU 0x%08" PRIx32, crc, crc_gpu);
out:
	free(f), free(g), free(own), free(dst), free(dst_gpu), free(got);
	return bad;
}

static int hops_main(struct sdc_cmd *cmd)
{
	const struct hop_opts *o = cmd->opts;
	if (!cmd->cli.have_gpus)
		return sdc_cli_bad(&cmd->cli, "measures a GPU: it needs --gpus");
	struct sdc_run run;
	if (sdc_cli_bench_start(cmd, &run))
		return sdc_cli_unknown(&cmd->cli);
	char err[512] = "", first[200] = "";
	const struct sdc_device *gpu = sdc_gpu_first_bound(&run, err, sizeof(err));
	const struct sdc_gpu_allreduce_ops *m = SDC_GPU_FAMILY(allreduce, SDC_GPU_ALLREDUCE_VERSION);
	struct sdc_facts *out = sdc_facts_new();
	int code;
	bool met = true;
	if (!gpu)
		goto fail;
	if (!m) {
		snprintf(err, sizeof(err), "%s", sdc_gpu_family_why("allreduce"));
		goto fail;
	}
	printf("sdcscan bench ring-hops on %s (%s, %d SMs, %s), CUDA runtime %s\n\n", gpu->id, gpu->model,
	       gpu->gpu.sm_count, gpu->gpu.pci_bus_id, sdc_gpu_ops()->cuda_runtime);
	int64_t bad = check_crc(m, first, sizeof(first), err, sizeof(err));
	if (bad < 0)
		goto fail;
	sdc_bench_bits("CRC32C of 10 buffers (0 B to 16 MiB, odd lengths)", "the same", bad, first, out, "crc_differing",
		       &met);
	bad = check_hop(m, 3000017, first, sizeof(first), err, sizeof(err));
	if (bad < 0)
		goto fail;
	sdc_bench_bits("a hop's check (3000017 elements, 7 wrong)", "the same count, sums and CRC32C", bad, first, out,
		       "hop_differing", &met);
	printf("\nOn device buffers (best of the reps back to back):\n       bytes   CRC32C GB/s   check+CRC GB/s\n");
	sdc_facts_list(out, "rows");
	for (int64_t bytes = 1 << 20; bytes <= o->max_bytes; bytes *= 4) {
		double tc = 0, tk = 0;
		const int reps = bytes <= (16 << 20) ? 20 : 5;
		if (m->ring_bench((uint64_t)bytes, reps, &tc, &tk, 120, err, sizeof(err)))
			goto fail;
		printf("%12" PRId64 "   %11.1f   %14.1f\n", bytes, bytes / tc / 1e9, bytes / tk / 1e9);
		struct sdc_facts *row = sdc_facts_row(out, "rows");
		sdc_facts_int(row, "bytes", bytes);
		sdc_facts_real(row, "crc_gbps", bytes / tc / 1e9);
		sdc_facts_real(row, "check_gbps", bytes / tk / 1e9);
	}
	printf("\nThe checked ring over NCCL against ncclAllReduce, busbw: sdcscan bench nccl (under mpirun).\n");
	code = sdc_cli_facts_end(&cmd->cli, out, met);
	sdc_facts_free(out);
	sdc_run_release(&run);
	return code;
fail:
	sdc_error("bench ring-hops: %s%s%s", gpu ? gpu->id : "", gpu ? ": " : "", err);
	sdc_facts_free(out);
	sdc_run_release(&run);
	return sdc_cli_unknown(&cmd->cli);
}

const struct sdc_command sdc_allreduce_hops_bench = {
	.name = "ring-hops",
	.summary = "--gpus: the GPU's hop checks (CRC32C, the check of every received sum) against the CPU's bits, "
		   "and their GB/s",
	.options = hop_options,
	.opts_size = sizeof(struct hop_opts),
	.common = SDC_CF_GPUS | SDC_CF_JSON,
	.fn = hops_main,
};
