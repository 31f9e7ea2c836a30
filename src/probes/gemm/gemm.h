/* The gemm probe's own tools, listed in its descriptor (gemm.c). */
#ifndef SDC_PROBES_GEMM_H
#define SDC_PROBES_GEMM_H

#include "command.h"

extern const struct sdc_command sdc_gemm_bench;          /* bench.c: sdcscan bench gemm */
extern const struct sdc_command sdc_gemm_bench_overhead; /* bench.c: sdcscan bench overhead */
extern const struct sdc_command sdc_gemm_campaign;       /* campaign.c: sdcscan campaign gemm */
extern const struct sdc_command sdc_gemm_calibrate;      /* calibrate.c: sdcscan calibrate */

#endif
