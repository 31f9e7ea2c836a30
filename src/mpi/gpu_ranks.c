/* The GPUs of a run's ranks (mpi/gpu_ranks.h). */
#include "mpi/gpu_ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/gpu_loader.h"
#include "mpi/transport.h"
#include "run/record.h"

int sdc_mpi_nccl_id(uint8_t *id, double timeout, bool *late, char *err, size_t errlen)
{
	struct {
		uint8_t id[SDC_GPU_NCCL_ID_BYTES];
		int32_t ok;
		char why[124];
	} mine = { .ok = 1 }, *ids = calloc((size_t)sdc_mpi.size, sizeof(mine));
	const struct sdc_gpu_module *m = sdc_gpu_ops();
	*late = false;
	if (!ids) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (sdc_mpi.rank == 0)
		mine.ok = m && m->nccl_unique_id && !m->nccl_unique_id(mine.id, mine.why, sizeof(mine.why));
	int rc = -1;
	if (sdc_mpi_allgather(&mine, (int)sizeof(mine), ids, timeout)) {
		*late = true;
		snprintf(err, errlen, "some rank did not take part in the exchange of NCCL's unique id within %.0f s", timeout);
	} else if (!ids[0].ok) {
		snprintf(err, errlen, "ncclGetUniqueId on rank 0 (%s): %s", sdc_mpi_host(0),
			 ids[0].why[0] ? ids[0].why : "no NCCL there");
	} else {
		memcpy(id, ids[0].id, SDC_GPU_NCCL_ID_BYTES);
		rc = 0;
	}
	free(ids);
	return rc;
}

const struct sdc_device *sdc_gpu_of_rank(const struct sdc_run *run, char *why, size_t len)
{
	int ngpus = 0;
	for (int d = 0; d < run->ndevices; d++)
		ngpus += run->devices[d].kind == SDC_DEVICE_GPU;
	if (!ngpus) {
		snprintf(why, len, "no GPU here%s%s", run->gpu_note[0] ? ": " : "", run->gpu_note);
		return NULL;
	}
	/* NCCL takes no two ranks on one GPU: it refuses them, or hangs in its initialisation */
	if (sdc_mpi.local_size > ngpus) {
		snprintf(why, len, "%d ranks on this host (%s) and %d GPU%s selected: NCCL takes one rank a GPU (start at "
				   "most %d rank%s a host)", sdc_mpi.local_size, sdc_mpi_host(sdc_mpi.rank), ngpus,
			 ngpus == 1 ? "" : "s", ngpus, ngpus == 1 ? "" : "s");
		return NULL;
	}
	for (int d = 0, k = 0; d < run->ndevices; d++)
		if (run->devices[d].kind == SDC_DEVICE_GPU && k++ == sdc_mpi.local_rank)
			return &run->devices[d];
	return NULL;
}

const struct sdc_device *sdc_gpu_first_bound(const struct sdc_run *run, char *err, size_t errlen)
{
	const struct sdc_device *gpu = NULL;
	for (int d = 0; d < run->ndevices && !gpu; d++)
		if (run->devices[d].kind == SDC_DEVICE_GPU)
			gpu = &run->devices[d];
	if (!gpu || !sdc_gpu_ops()) {
		snprintf(err, errlen, "no GPU to measure: %s", run->gpu_note[0] ? run->gpu_note : "none selected");
		return NULL;
	}
	char why[256];
	if (sdc_gpu_bind(gpu, why, sizeof(why))) {
		snprintf(err, errlen, "%s: %s", gpu->id, why);
		return NULL;
	}
	return gpu;
}
