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

/* The checked lookups' overhead by the roofline on gpu (probe/roofline.h), for cfg's format, width
 * and pooling: the DRAM bytes a mean bag moves plain, those the check adds, their times at the
 * GPU's bandwidth and the overhead t_check / t_plain. */
struct sdc_eb_cfg;
struct sdc_rl_gpu;
struct sdc_eb_roofline {
	double plain_bytes, extra_bytes;
	double t_plain, t_check, overhead;
};
void sdc_eb_gpu_roofline(const struct sdc_rl_gpu *gpu, const struct sdc_eb_cfg *cfg, struct sdc_eb_roofline *out);

#endif
