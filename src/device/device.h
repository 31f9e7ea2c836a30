/*
 * Devices: what a worker burns. One model for CPUs and GPUs: a kind, an id ("cpu3", "gpu0"), a
 * model name, and the identity of its kind. One place discovers them (sdc_devices_discover:
 * the CPUs this process may use, and the GPUs the GPU module finds), and one call binds a
 * worker thread to its device whatever its kind (sdc_device_bind).
 */
#ifndef SDC_DEVICE_H
#define SDC_DEVICE_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sdc_device_kind {
	SDC_DEVICE_CPU,
	SDC_DEVICE_GPU,
	SDC_DEVICE_NKINDS,
};

/* Sets of kinds, as a variant declares where it runs. */
#define SDC_ON_CPU (1u << SDC_DEVICE_CPU)
#define SDC_ON_GPU (1u << SDC_DEVICE_GPU)

struct sdc_cpu_identity {
	int logical;    /* logical CPU number */
	int core_id;    /* -1 when the kernel does not say */
	int package_id;
	char microcode[32];
};

struct sdc_gpu_identity {
	int index;            /* CUDA device ordinal */
	char uuid[48];        /* "GPU-8c1f...", as nvidia-smi and dcgm-exporter print it */
	char pci_bus_id[24];  /* "00000000:3B:00.0" */
	int cc_major, cc_minor;
	int sm_count;
	uint64_t memory_bytes;
	char driver[32];      /* driver version (NVML), else the driver's CUDA version */
	char runtime[32];     /* CUDA runtime the GPU module carries */
};

struct sdc_device {
	enum sdc_device_kind kind;
	char id[16];       /* "cpu3", "gpu0" */
	char model[128];   /* CPU model name or GPU name */
	struct sdc_cpu_identity cpu; /* kind CPU */
	struct sdc_gpu_identity gpu; /* kind GPU */
	/* A device that failed as a platform (a sticky CUDA error, a hang): why. No more work goes to
	 * it in this run, since any call might fail the same way or block. */
	char lost[256];
};

/* "cpu", "gpu" */
const char *sdc_device_kind_name(enum sdc_device_kind k);

/* Which GPUs a run asks for: --gpus all (the default), none, or a list of indices. */
struct sdc_gpu_select {
	bool none;
	bool listed;       /* false: all */
	uint64_t indices;  /* bit i: GPU i, when listed */
};
/* Parses "all", "none" or "0,2-3". 0, or -1 with err saying what was wrong. */
int sdc_gpu_select_parse(const char *s, struct sdc_gpu_select *sel, char *err, size_t errlen);

/*
 * The devices of a run: the CPUs in cpus (all this process may use when NULL) first, then the
 * GPUs gpus selects (all when NULL). A GPU that cannot be used leaves a reason in gpu_note
 * (no module, no driver, ...) and no device; a GPU listed by index that is not there is an error.
 * Returns 0, or -1 with err set.
 */
int sdc_devices_discover(const cpu_set_t *cpus, const struct sdc_gpu_select *gpus, struct sdc_device **out,
			 int *n, char *gpu_note, size_t notelen, char *err, size_t errlen);

/*
 * Binds the calling thread to dev: a CPU pins it there, a GPU makes that GPU the thread's
 * current device. Returns 0, or -1 with err saying why not.
 */
int sdc_device_bind(const struct sdc_device *dev, char *err, size_t errlen);

#endif
