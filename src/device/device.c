/* Devices, CPUs and GPUs in one model: selection and naming (device/device.h). */
#include "device/device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/parse.h"
#include "device/cpu.h"
#include "device/gpu_loader.h"

const char *sdc_device_kind_name(enum sdc_device_kind k)
{
	return k == SDC_DEVICE_GPU ? "gpu" : "cpu";
}

int sdc_gpu_select_parse(const char *s, struct sdc_gpu_select *sel, char *err, size_t errlen)
{
	memset(sel, 0, sizeof(*sel));
	if (!strcmp(s, "all"))
		return 0;
	if (!strcmp(s, "none")) {
		sel->none = true;
		return 0;
	}
	const char *bad;
	if (!*s || sdc_parse_ranges(s, 64, &sel->indices, &bad)) {
		snprintf(err, errlen, "'%s' is not a GPU list (expected all, none, or indices below 64 like 0,2-3)", s);
		return -1;
	}
	sel->listed = true;
	return 0;
}

int sdc_devices_discover(const cpu_set_t *cpus, const struct sdc_gpu_select *gpus, struct sdc_device **out,
			 int *n, char *gpu_note, size_t notelen, char *err, size_t errlen)
{
	struct sdc_device *devs = NULL;
	int count = 0;
	gpu_note[0] = '\0';
	if (sdc_cpu_devices(cpus, &devs, &count, err, errlen))
		return -1;
	if (!gpus || !gpus->none) {
		if (sdc_gpu_discover(gpus, &devs, &count, gpu_note, notelen, err, errlen)) {
			free(devs);
			return -1;
		}
	} else {
		snprintf(gpu_note, notelen, "--gpus none");
	}
	*out = devs;
	*n = count;
	return 0;
}

int sdc_device_bind(const struct sdc_device *dev, char *err, size_t errlen)
{
	if (dev->kind == SDC_DEVICE_GPU)
		return sdc_gpu_bind(dev, err, errlen);
	const int e = sdc_cpu_pin(dev->cpu.logical);
	if (e) {
		snprintf(err, errlen, "cannot pin a thread to CPU %d: %s", dev->cpu.logical, strerror(e));
		return -1;
	}
	return 0;
}
