#include "gpu.h"

#include <stdio.h>

int sdc_gpu_discover(const struct sdc_gpu_select *sel, struct sdc_device **devs, int *n, char *note,
		     size_t notelen, char *err, size_t errlen)
{
	(void)devs, (void)n;
	if (sel && sel->listed) {
		snprintf(err, errlen, "--gpus: this sdcscan cannot test GPUs (no GPU module in this build)");
		return -1;
	}
	snprintf(note, notelen, "this sdcscan has no GPU module");
	return 0;
}

int sdc_gpu_bind(const struct sdc_device *dev, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: no GPU module", dev->id);
	return -1;
}
