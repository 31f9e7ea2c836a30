/* Roofline estimates of the GPU benchmarks' targets: the GPUs' figures and their arithmetic (probe/roofline.h). */
#include "probe/roofline.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "run/facts.h"

/*
 * NVIDIA's datasheets list the tensor-core rates with structured sparsity ("* With sparsity",
 * "Specifications 1/2 lower without sparsity"); a GEMM of dense operands gets half, so each
 * tensor figure below is the datasheet's halved. FP32 is the CUDA cores' FFMA rate, dense as listed.
 * The figures (checked against copies of the datasheets: archive-lib.hpctech.co.jp/gpuproduct/
 * nvidia-h100.html for the SXM and PCIe columns, glennklockwood.com/garden/processors/h100 for
 * the dense split, lzwjava.github.io/nvidia-h200-gpu-specs-en for H200 against H100):
 *   H100 SXM   INT8 3,958* TOPS, BF16/FP16 1,979*, TF32 989*, FP32 67 TFLOPS; HBM3 3.35 TB/s; 132 SMs
 *   H100 PCIe  INT8 3,026* TOPS, BF16/FP16 1,513*, TF32 756*, FP32 51 TFLOPS; HBM2e 2.0 TB/s; 114 SMs
 *   H200 SXM   the H100 SXM's compute; HBM3e 4.8 TB/s; 132 SMs
 * Hopper's SM: 128 FP32 lanes, 32 banks of shared memory (NVIDIA H100 Tensor Core GPU Architecture
 * whitepaper). The NVL boards (H100 NVL, H200 NVL: a lower power limit, other rates) are left out
 * until their figures are checked the same way: they get "no roofline".
 */
#define H100_URL "https://www.nvidia.com/en-us/data-center/h100/"
#define H200_URL "https://www.nvidia.com/en-us/data-center/h200/"

static const struct sdc_rl_gpu h100_sxm = {
	.name = "H100 SXM",
	.models = { "NVIDIA H100 80GB HBM3" },
	.peak = { [SDC_RL_INT8] = 3958e12 / 2, [SDC_RL_FP16] = 1979e12 / 2, [SDC_RL_TF32] = 989e12 / 2,
		  [SDC_RL_FP32] = 67e12 },
	.bandwidth = 3.35e12,
	.sms = 132,
	.fp32_lanes = 128,
	.smem_banks = 32,
	.source = H100_URL ", the H100 SXM column",
};

static const struct sdc_rl_gpu h100_pcie = {
	.name = "H100 PCIe",
	.models = { "NVIDIA H100 PCIe" },
	.peak = { [SDC_RL_INT8] = 3026e12 / 2, [SDC_RL_FP16] = 1513e12 / 2, [SDC_RL_TF32] = 756e12 / 2,
		  [SDC_RL_FP32] = 51e12 },
	.bandwidth = 2.0e12,
	.sms = 114,
	.fp32_lanes = 128,
	.smem_banks = 32,
	.source = H100_URL ", the 2022 datasheet's H100 PCIe column (product brief PB-11133)",
};

static const struct sdc_rl_gpu h200_sxm = {
	.name = "H200 SXM",
	.models = { "NVIDIA H200" },
	.peak = { [SDC_RL_INT8] = 3958e12 / 2, [SDC_RL_FP16] = 1979e12 / 2, [SDC_RL_TF32] = 989e12 / 2,
		  [SDC_RL_FP32] = 67e12 },
	.bandwidth = 4.8e12,
	.sms = 132,
	.fp32_lanes = 128,
	.smem_banks = 32,
	.source = H200_URL ", the H200 SXM column",
};

const struct sdc_rl_gpu *const sdc_rl_gpus[] = { &h100_sxm, &h100_pcie, &h200_sxm, NULL };

static bool same_name(const char *a, const char *b)
{
	for (; *a && *b; a++, b++)
		if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
			return false;
	return !*a && !*b;
}

const struct sdc_rl_gpu *sdc_rl_find(const char *model, char *why, size_t whylen)
{
	for (int i = 0; model && sdc_rl_gpus[i]; i++)
		for (int j = 0; j < 2; j++)
			if (sdc_rl_gpus[i]->models[j] && same_name(model, sdc_rl_gpus[i]->models[j]))
				return sdc_rl_gpus[i];
	snprintf(why, whylen, "no roofline for %s", model && model[0] ? model : "an unnamed GPU");
	return NULL;
}

void sdc_rl_checked_gemm(double peak, double bandwidth, double m, double n_plain, double n_product, double k,
			 double check_bytes, struct sdc_rl_checked *out)
{
	out->t_plain = 2 * m * n_plain * k / peak;
	out->t_product = 2 * m * n_product * k / peak;
	out->t_check = check_bytes / bandwidth;
	out->share = out->t_plain / (out->t_product + out->t_check);
}

double sdc_rl_run_bytes(uint64_t offset, uint64_t len)
{
	if (!len)
		return 0;
	const uint64_t first = offset / SDC_RL_SECTOR, last = (offset + len - 1) / SDC_RL_SECTOR;
	return (double)(last - first + 1) * SDC_RL_SECTOR;
}

double sdc_rl_row_bytes(uint64_t stride, uint64_t len)
{
	/* row r starts at r stride: within a sector at the multiples of gcd(stride, 32), each as often */
	uint64_t g = SDC_RL_SECTOR, s = stride % SDC_RL_SECTOR;
	while (s) {
		const uint64_t t = g % s;
		g = s, s = t;
	}
	double sum = 0;
	int n = 0;
	for (uint64_t off = 0; off < SDC_RL_SECTOR; off += g, n++)
		sum += sdc_rl_run_bytes(off, len);
	return sum / n;
}

int sdc_rl_wavefronts(const uint32_t *word, int n, int banks)
{
	int most = 1;
	for (int b = 0; b < banks; b++) {
		int distinct = 0;
		for (int l = 0; l < n; l++) {
			if (word[l] % (uint32_t)banks != (uint32_t)b)
				continue;
			int k = 0; /* counted once: at its first lane */
			while (k < l && word[k] != word[l])
				k++;
			distinct += k == l;
		}
		most = distinct > most ? distinct : most;
	}
	return most;
}

bool sdc_rl_verdict(double estimate, double target, bool at_least, char *buf, size_t len)
{
	const bool ok = at_least ? estimate >= target : estimate <= target;
	snprintf(buf, len, "%s by design (roofline %.1f%%)", ok ? "met" : "MISSED", 100 * estimate);
	return ok;
}

void sdc_rl_facts(struct sdc_facts *out, const struct sdc_rl_gpu *g, const char *why)
{
	if (!g) {
		sdc_facts_str(out, "roofline.none", why);
		return;
	}
	sdc_facts_str(out, "roofline.gpu", g->name);
	sdc_facts_real(out, "roofline.int8_tops", g->peak[SDC_RL_INT8] / 1e12);
	sdc_facts_real(out, "roofline.fp16_tflops", g->peak[SDC_RL_FP16] / 1e12);
	sdc_facts_real(out, "roofline.tf32_tflops", g->peak[SDC_RL_TF32] / 1e12);
	sdc_facts_real(out, "roofline.fp32_tflops", g->peak[SDC_RL_FP32] / 1e12);
	sdc_facts_real(out, "roofline.bandwidth_tbps", g->bandwidth / 1e12);
	sdc_facts_str(out, "roofline.source", g->source);
}

void sdc_rl_print(const struct sdc_rl_gpu *g, const char *why)
{
	if (!g) {
		printf("roofline: %s (the design's estimates are left out)\n", why);
		return;
	}
	printf("roofline: %s: dense peaks int8 %.0f TOP/s, bf16/fp16 %.1f, tf32 %.1f, fp32 %.0f TFLOP/s; memory %.2f TB/s\n"
	       "(NVIDIA's datasheet, its sparsity figures halved: %s)\n",
	       g->name, g->peak[SDC_RL_INT8] / 1e12, g->peak[SDC_RL_FP16] / 1e12, g->peak[SDC_RL_TF32] / 1e12,
	       g->peak[SDC_RL_FP32] / 1e12, g->bandwidth / 1e12, g->source);
}
