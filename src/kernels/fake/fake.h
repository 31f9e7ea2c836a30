/*
 * What the fake GPU module's files share (kernels/fake/fake_module.c and one twin a family, in its
 * probe folder): the environment knobs, the GPU bound to the calling thread, the clock, and each
 * family's table.
 */
#ifndef SDC_KERNELS_FAKE_H
#define SDC_KERNELS_FAKE_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/gpu_module.h"

#define FAKE_HIDDEN __attribute__((visibility("hidden")))

/* The fake GPU's SMs (its props, the SM replay). */
#define FAKE_SMS 8

/* An integer from the environment, def when unset or empty. */
FAKE_HIDDEN int fake_env_int(const char *name, int def);
/* Seconds on the monotonic clock. */
FAKE_HIDDEN double fake_now(void);
/* Sleeps until timeout seconds after t0 (a wait that runs out its deadline). */
FAKE_HIDDEN void fake_wait_out(double t0, double timeout);
/* The GPU bound to the calling thread (bind), -1 before. */
extern _Thread_local int fake_bound FAKE_HIDDEN;

/* 1 when FAKE_GPU_STALE names family name: its table then reports a version one older than its
 * header's (a module built against another sdcscan), else 0. */
FAKE_HIDDEN int fake_stale(const char *name);

/* A family's table (fake_gemm.c, ...), made by its file: declared weak, so a fake built without a
 * family's file has none (NULL), as the CUDA module built without it (module.cu). */
#define FAKE_FAMILY_DECL(name) __attribute__((weak)) FAKE_HIDDEN const struct sdc_gpu_##name##_ops *fake_##name##_family(void);
SDC_GPU_FAMILIES(FAKE_FAMILY_DECL)

#endif
