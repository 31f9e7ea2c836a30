/*
 * What every part of the minitrain probe uses (minitrain.h): a model's configuration from the
 * options and its making on a worker's CPU or GPU, the tensors' hashes and flat copies, and a
 * finding's start. Below the probe (minitrain.c) and its parts (dp.c, golden_record.c, replay.c), which
 * call each other only downwards.
 */
#include <stdio.h>
#include <string.h>

#include "mpi/transport.h"
#include "probes/minitrain/minitrain.h"
#include "base/message.h"

/* ---- the model ---- */

void sdc_mt_cfg_from_opts(const struct minitrain_opts *o, const struct sdc_variant *v, uint64_t seed,
			  struct sdc_mt_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->seed = sdc_variant_seed(v, seed);
	if (v->param[0] == MODEL_DLRM) {
		c->kind = SDC_MT_DLRM;
		c->batch = (int)o->dlrm_batch, c->dense = 16, c->bottom = 64, c->emb_dim = (int)o->dlrm_dim;
		c->tables = (int)o->dlrm_tables, c->rows = (int)o->dlrm_rows, c->pooling = (int)o->dlrm_pooling;
		c->top = 64;
	} else {
		c->kind = SDC_MT_XFMR;
		if (v->world_dependent)
			c->shard = sdc_mpi.rank, c->nshards = sdc_mpi.size;
		c->batch = (int)o->xfmr_batch, c->seq = (int)o->xfmr_seq, c->dmodel = (int)o->xfmr_dim;
		c->heads = (int)o->xfmr_heads, c->dff = (int)o->xfmr_ff;
	}
}

int sdc_mt_check_cfg(const struct sdc_mt_cfg *c, char *err, size_t len)
{
	if (c->kind == SDC_MT_DLRM && (long)c->batch * (2 * c->pooling - 1) > 60000) {
		snprintf(err, len, "dlrm_batch x (2 dlrm_pooling - 1) must be at most 60000 indices per table");
		return -1;
	}
	if (c->kind == SDC_MT_XFMR && c->dmodel % c->heads) {
		snprintf(err, len, "xfmr_heads (%d) must divide xfmr_dim (%d)", c->heads, c->dmodel);
		return -1;
	}
	return 0;
}

struct sdc_mt_model *sdc_mt_model_new(struct mt_worker *mw, char *err, size_t len)
{
	const struct mt_shared *sh = mw->sh;
	const sdc_xgemm_fn gemm = sh->plain ? sdc_xgemm_plain : sdc_xgemm;
	return mw->gpu ? sdc_mt_create_on(&sh->cfg, gemm, &mw->be, err, len) : sdc_mt_create(&sh->cfg, gemm, err, len);
}

/* ---- hashing ---- */

/* Tensor bytes are hashed little-endian, as the golden files define them. */
static uint64_t tensor_xxh(const struct sdc_mt_tensor *t)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return sdc_xxh64(t->data, sdc_mt_numel(t) * sizeof(float));
#else
#error "minitrain hashes tensors as little-endian bytes; add a byte swap for this host"
#endif
}

uint64_t sdc_mt_tensors_hash(const struct sdc_mt_tensor *t, int n, uint64_t *out)
{
	uint64_t h[64];
	for (int i = 0; i < n && i < 64; i++) {
		h[i] = tensor_xxh(&t[i]);
		if (out)
			out[i] = h[i];
	}
	return sdc_xxh64(h, sizeof(uint64_t) * (size_t)(n < 64 ? n : 64));
}

void sdc_mt_tensors_to_flat(const struct sdc_mt_tensor *t, int n, float *flat)
{
	for (int i = 0; i < n; i++) {
		memcpy(flat, t[i].data, sdc_mt_numel(&t[i]) * sizeof(float));
		flat += sdc_mt_numel(&t[i]);
	}
}

void sdc_mt_tensors_from_flat(struct sdc_mt_tensor *t, int n, const float *flat)
{
	for (int i = 0; i < n; i++) {
		memcpy(t[i].data, flat, sdc_mt_numel(&t[i]) * sizeof(float));
		flat += sdc_mt_numel(&t[i]);
	}
}

void sdc_mt_tensors_sha(struct sdc_sha256 *s, const struct sdc_mt_tensor *t, int n, uint8_t *out)
{
	for (int i = 0; i < n; i++)
		sdc_sha256_buf(s, t[i].data, sdc_mt_numel(&t[i]) * sizeof(float), out + (size_t)i * SDC_SHA256_LEN);
}

/* ---- findings ---- */

void sdc_mt_finding_init(struct sdc_finding *f, const struct mt_worker *mw, const char *kind, const char *target,
			 int64_t row, int64_t col)
{
	sdc_finding_corruption(f, kind, mw->sh->operation, target, mw->iter, row, col);
}
