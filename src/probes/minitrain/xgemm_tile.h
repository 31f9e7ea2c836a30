/*
 * The exact GEMM kernel's tile (xgemm.cu's k_xgemm): a block computes a BM x BN tile of C, BK of k
 * at a time from shared memory, each of its threads a TM x TN patch in registers. The benchmark's
 * roofline (bench_gpu.c) counts the kernel's work from the same numbers.
 */
#ifndef SDC_PROBES_MINITRAIN_XGEMM_TILE_H
#define SDC_PROBES_MINITRAIN_XGEMM_TILE_H

#define SDC_XGEMM_BM 64
#define SDC_XGEMM_BN 64
#define SDC_XGEMM_BK 16
#define SDC_XGEMM_TM 4
#define SDC_XGEMM_TN 4
#define SDC_XGEMM_THREADS ((SDC_XGEMM_BM / SDC_XGEMM_TM) * (SDC_XGEMM_BN / SDC_XGEMM_TN))
/* A's tile lies transposed in shared memory, its rows BM + SDC_XGEMM_APAD floats long. */
#define SDC_XGEMM_APAD 4

#endif
