/*
 * GPUs, through the GPU module (kernels/gpu_module.h): the CUDA code is a shared module that
 * sdcscan loads at run time (dlopen), so the one binary starts on every host and says why no GPU
 * can be tested where the module, the CUDA libraries or the driver are missing.
 */
#ifndef SDC_DEVICE_GPU_LOADER_H
#define SDC_DEVICE_GPU_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device/device.h"
#include "kernels/gpu_module.h"


/* The loaded module's main table, or NULL (sdc_gpu_discover's note says why). Loads it once. */
const struct sdc_gpu_module *sdc_gpu_ops(void);
/* The loaded module's table of family name (one of kernels/gpu_module.h's SDC_GPU_FAMILIES) when
 * the module has it at version want, the caller's own (its probe's gpu_ops.h); NULL otherwise: no
 * module, one built without that family, or with another version of its table, which turns off
 * that family alone. SDC_GPU_FAMILY(gemm, SDC_GPU_GEMM_VERSION) is a const struct
 * sdc_gpu_gemm_ops *. */
const void *sdc_gpu_family(const char *name, int want);
#define SDC_GPU_FAMILY(name, want) ((const struct sdc_gpu_##name##_ops *)sdc_gpu_family(#name, (want)))
/* Why sdc_gpu_family(family, ...) gave NULL ("" before it did). */
const char *sdc_gpu_family_why(const char *family);
/* Where the loaded module came from (NULL: none loaded). */
const char *sdc_gpu_module_path(void);

/*
 * Appends the GPUs sel selects to *devs (realloc'd; *n updated). When none can be used, note
 * says why (no module, no driver, no GPU) and 0 is returned; -1 with err for a selection that
 * names a GPU that is not there.
 */
int sdc_gpu_discover(const struct sdc_gpu_select *sel, struct sdc_device **devs, int *n, char *note,
		     size_t notelen, char *err, size_t errlen);

/* The module's nccl_init on the path algo/proto (NULL or "": NCCL's own choice), NCCL_ALGO and
 * NCCL_PROTO set to them while NCCL initialises (base/env.h: set in place, safe against the getenv
 * of other threads; one initialisation at a time), then put back. NULL with err. */
struct sdc_gpu_comm *sdc_gpu_nccl_init(const uint8_t *id, int nranks, int first_rank, int nmem, const int *devices,
				       const char *algo, const char *proto, int64_t n, double timeout, char *err,
				       size_t errlen);

/* Makes dev the calling thread's current GPU. 0, or -1 with err. */
int sdc_gpu_bind(const struct sdc_device *dev, char *err, size_t errlen);

#endif
