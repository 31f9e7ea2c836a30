/* The embbag probe's own tools, listed in its descriptor (embbag.c). */
#ifndef SDC_PROBES_EMBBAG_H
#define SDC_PROBES_EMBBAG_H

#include <stdint.h>

#include "probe/command.h"

struct sdc_run;

extern const struct sdc_command sdc_embbag_bench;    /* bench.c: sdcscan bench embbag */
extern const struct sdc_command sdc_embbag_campaign; /* campaign.c: sdcscan campaign embbag */

/* bench_gpu.c: sdcscan bench embbag --gpus, on the run's first GPU; the command's exit code. */
int sdc_embbag_bench_gpu(struct sdc_cmd *cmd, struct sdc_run *run, const int *dims, int ndims, uint32_t formats,
			 uint64_t rows, int pooling, double seconds);

#endif
