/*
 * The GPU engine's operands and products, regenerated on the host from the same element
 * definitions the CUDA kernels use (gemm_data.h, kernels/abft_ref.h, kernels/half.h): what
 * an element should have been, for findings and for the host-side tests of every GPU path.
 *
 * B_ext's checksum columns are encoded as the device encodes them: exact types by balanced digits
 * of each row's integer sums; fast types by each row's sums in double, in column order (the device
 * gives each row one thread that adds in that order too), rounded to the element type.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/abft_ref.h"
#include "probes/gemm/gemm_data.h"
#include "probes/gemm/gemm_elements.h"
#include "kernels/half.h"
#include "probes/gemm/gemm.h"

double sdc_gpu_value(enum sdc_gpu_type type, int c_elem, uint64_t bits)
{
	if (c_elem || type == SDC_GPU_FP32 || type == SDC_GPU_FP32_FAST || type == SDC_GPU_TF32_FAST) {
		if (c_elem && type == SDC_GPU_INT8)
			return (int32_t)(uint32_t)bits;
		float f;
		const uint32_t u = (uint32_t)bits;
		memcpy(&f, &u, 4);
		return f;
	}
	switch (type) {
	case SDC_GPU_INT8:
		return (int8_t)(uint8_t)bits;
	case SDC_GPU_BF16:
	case SDC_GPU_BF16_FAST:
		return sdc_bf16_to_float((uint16_t)bits);
	default:
		return sdc_half_to_float((uint16_t)bits);
	}
}

static void put(void *buf, int esz, size_t idx, uint64_t bits)
{
	memcpy((char *)buf + idx * (size_t)esz, &bits, (size_t)esz); /* little-endian hosts (as the GPU) */
}

static uint64_t get(const void *buf, int esz, size_t idx)
{
	uint64_t v = 0;
	memcpy(&v, (const char *)buf + idx * (size_t)esz, (size_t)esz);
	return v;
}

int sdc_gpu_truth_init(struct sdc_gpu_truth *t, const struct sdc_gpu_gemm_cfg *cfg)
{
	memset(t, 0, sizeof(*t));
	t->cfg = *cfg;
	t->kp = (cfg->k + 15) / 16 * 16;
	return 0;
}

void sdc_gpu_truth_release(struct sdc_gpu_truth *t)
{
	free(t->b_ext);
	memset(t, 0, sizeof(*t));
}

uint64_t sdc_gpu_truth_a(const struct sdc_gpu_truth *t, int i, int p)
{
	const struct sdc_gpu_gemm_cfg *c = &t->cfg;
	if (p >= c->k)
		return 0; /* padding */
	if (sdc_gpu_type_exact(c->type)) {
		const struct sdc_rng r = sdc_gd_rng(c->seed, c->cls, SDC_GD_A);
		if (c->extreme)
			return sdc_gemm_bits_of(c->type, (double)sdc_gd_extreme_a(c->type == SDC_GPU_INT8, c->amax));
		if (c->type == SDC_GPU_INT8)
			return (uint64_t)sdc_gd_int8_a(&r, t->set, c->k, i, p);
		return sdc_gemm_bits_of(c->type, (double)sdc_gd_small_a(&r, t->set, c->k, i, p, c->amax));
	}
	const struct sdc_rng wr = sdc_gd_rng(c->seed, c->cls, SDC_GD_WINDOW);
	const struct sdc_gd_window w = sdc_gd_window_of(&wr, t->set, c->pool_size);
	return sdc_gemm_bits_of(c->type, sdc_gd_window_at(t->pool, c->pool_size, w.a0, w.as, (uint64_t)i * (uint64_t)c->k + (uint64_t)p));
}

int sdc_gpu_truth_load(struct sdc_gpu_truth *t, uint64_t set, const double *pool)
{
	const struct sdc_gpu_gemm_cfg *c = &t->cfg;
	const int esz = sdc_gpu_type_esz(c->type), n = c->n, ne = c->n_ext;
	t->set = set;
	t->pool = pool;
	t->valid = false;
	if (!t->b_ext && !(t->b_ext = malloc((size_t)c->k * (size_t)ne * (size_t)esz)))
		return -1;
	if (sdc_gpu_type_exact(c->type)) {
		const struct sdc_rng r = sdc_gd_rng(c->seed, c->cls, SDC_GD_B);
		int64_t *row = malloc(sizeof(int64_t) * (size_t)ne);
		if (!row)
			return -1;
		for (int p = 0; p < c->k; p++) {
			int64_t s1 = 0, s2 = 0;
			for (int j = 0; j < n; j++) {
				row[j] = c->extreme ? sdc_gd_extreme_b(c->type == SDC_GPU_INT8, c->bmax)
					 : c->type == SDC_GPU_INT8 ? sdc_gd_int8_b(&r, set, n, p, j)
								   : sdc_gd_small_b(&r, set, n, p, j, c->bmax);
				s1 += row[j];
				s2 += (int64_t)(j + 1) * row[j];
			}
			sdc_ref_digits(s1, c->base_log2, c->nd1, row + n);
			sdc_ref_digits(s2, c->base_log2, c->nd2, row + n + c->nd1);
			for (int j = 0; j < ne; j++)
				put(t->b_ext, esz, (size_t)p * ne + j, sdc_gemm_bits_of(c->type, (double)row[j]));
		}
		free(row);
	} else {
		const struct sdc_rng wr = sdc_gd_rng(c->seed, c->cls, SDC_GD_WINDOW);
		const struct sdc_gd_window w = sdc_gd_window_of(&wr, set, c->pool_size);
		for (int p = 0; p < c->k; p++) {
			double r1 = 0, r2 = 0;
			for (int j = 0; j < n; j++) {
				const uint64_t b = sdc_gemm_bits_of(c->type, sdc_gd_window_at(pool, c->pool_size, w.b0, w.bs,
										  (uint64_t)p * (uint64_t)n + (uint64_t)j));
				put(t->b_ext, esz, (size_t)p * ne + j, b);
				const double v = sdc_gpu_value(c->type, 0, b);
				r1 += v;
				r2 += (double)(j + 1) * v;
			}
			put(t->b_ext, esz, (size_t)p * ne + n, sdc_gemm_bits_of(c->type, r1));
			put(t->b_ext, esz, (size_t)p * ne + n + 1, sdc_gemm_bits_of(c->type, r2));
		}
	}
	t->valid = true;
	return 0;
}

uint64_t sdc_gpu_truth_b(const struct sdc_gpu_truth *t, int p, int j)
{
	if (p >= t->cfg.k || j >= t->cfg.n_ext)
		return 0; /* padding */
	return get(t->b_ext, sdc_gpu_type_esz(t->cfg.type), (size_t)p * t->cfg.n_ext + j);
}

void sdc_gpu_truth_c_row(const struct sdc_gpu_truth *t, int i, int64_t *ref_i64, double *ref_f64)
{
	const struct sdc_gpu_gemm_cfg *c = &t->cfg;
	const int ne = c->n_ext;
	const bool exact = sdc_gpu_type_exact(c->type);
	for (int j = 0; j < ne; j++) {
		if (exact)
			ref_i64[j] = 0;
		else
			ref_f64[j] = 0;
	}
	for (int p = 0; p < c->k; p++) {
		const double a = sdc_gpu_value(c->type, 0, sdc_gpu_truth_a(t, i, p));
		if (a == 0)
			continue;
		for (int j = 0; j < ne; j++) {
			const double b = sdc_gpu_value(c->type, 0, sdc_gpu_truth_b(t, p, j));
			if (exact)
				ref_i64[j] += (int64_t)a * (int64_t)b;
			else
				ref_f64[j] += a * b;
		}
	}
}
