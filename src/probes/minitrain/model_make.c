/* A model made by kind (model.h): the DLRM (mt_dlrm.c) or the transformer block (mt_xfmr.c), over
 * the plumbing both share (model.c), so the plumbing never calls up into a model. */
#include <stdio.h>
#include <stdlib.h>

#include "probes/minitrain/mt_internal.h"

struct sdc_mt_model *sdc_mt_create_on(const struct sdc_mt_cfg *cfg, sdc_xgemm_fn gemm,
				      const struct sdc_mt_backend *be, char *err, size_t errlen)
{
	struct sdc_mt_model *m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	m->cfg = *cfg;
	m->gemm = gemm ? gemm : sdc_xgemm;
	if (be) {
		m->be = *be;
		m->on_device = true;
	}
	const int rc = cfg->kind == SDC_MT_DLRM ? sdc_mt_dlrm_init(m, err, errlen) : sdc_mt_xfmr_init(m, err, errlen);
	if (rc || sdc_mt_error(m)) {
		if (!rc)
			snprintf(err, errlen, "%s", m->err);
		sdc_mt_free(m);
		return NULL;
	}
	sdc_mt_reset(m);
	return m;
}

struct sdc_mt_model *sdc_mt_create(const struct sdc_mt_cfg *cfg, sdc_xgemm_fn gemm, char *err, size_t errlen)
{
	return sdc_mt_create_on(cfg, gemm, NULL, err, errlen);
}
