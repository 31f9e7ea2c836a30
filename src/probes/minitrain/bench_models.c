/*
 * The models the benchmarks train, the quick profile's, on the CPU (bench.c) and on a GPU
 * (bench_gpu.c): here below both, as bench.c calls bench_gpu.c.
 */
#include "probes/minitrain/minitrain.h"

const struct sdc_mt_cfg sdc_mt_bench_dlrm = { .kind = SDC_MT_DLRM, .seed = 1, .batch = 128, .dense = 16, .bottom = 64,
					  .emb_dim = 32, .tables = 4, .rows = 4096, .pooling = 8, .top = 64 };
const struct sdc_mt_cfg sdc_mt_bench_xfmr = { .kind = SDC_MT_XFMR, .seed = 1, .batch = 4, .seq = 32, .dmodel = 64,
					  .heads = 2, .dff = 256 };
