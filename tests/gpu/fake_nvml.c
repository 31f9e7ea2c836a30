/*
 * A stand-in for libnvidia-ml.so.1 ($SDCSCAN_NVML_LIBRARY), with the functions sdcscan's nvml.c
 * looks up and the signatures of NVIDIA's nvml.h. Every GPU answers with fixed readings; with
 * FAKE_NVML_NEW_UNC=1 the volatile uncorrectable ECC count goes up by one between the first
 * reading of a GPU and the next, as if a double-bit error happened during the run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct fake_device *nvmlDevice_t;

struct fake_device {
	char bus[32];
	int reads;
};

static struct fake_device devices[8];

#define EXPORT __attribute__((visibility("default")))

EXPORT nvmlReturn_t nvmlInit_v2(void);
EXPORT const char *nvmlErrorString(nvmlReturn_t r);
EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned len);
EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvmlDevice_t *d);
EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t d, int *cur, int *pend);
EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter, unsigned long long *n);
EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned *corr, unsigned *unc, unsigned *pend,
					      unsigned *fail);
EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned *mhz);
EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned *c);
EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned *mw);
EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *r);

nvmlReturn_t nvmlInit_v2(void)
{
	return 0;
}

const char *nvmlErrorString(nvmlReturn_t r)
{
	return r ? "Not Found" : "Success";
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned len)
{
	snprintf(v, len, "580.00.fake");
	return 0;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvmlDevice_t *d)
{
	for (size_t i = 0; i < sizeof(devices) / sizeof(devices[0]); i++) {
		if (!devices[i].bus[0])
			snprintf(devices[i].bus, sizeof(devices[i].bus), "%s", bus);
		if (!strcmp(devices[i].bus, bus)) {
			*d = &devices[i];
			return 0;
		}
	}
	return 6; /* NVML_ERROR_NOT_FOUND */
}

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t d, int *cur, int *pend)
{
	(void)d;
	*cur = *pend = 1;
	return 0;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter, unsigned long long *n)
{
	(void)counter;
	const char *e = getenv("FAKE_NVML_NEW_UNC");
	if (type == 1) /* uncorrected: one reading per snapshot */
		*n = (unsigned long long)(e && *e == '1' && d->reads++ > 0);
	else
		*n = 3;
	return 0;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned *corr, unsigned *unc, unsigned *pend, unsigned *fail)
{
	(void)d;
	*corr = 1, *unc = 0, *pend = 0, *fail = 0;
	return 0;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned *mhz)
{
	(void)d;
	*mhz = type == 1 ? 1980 : 2619;
	return 0;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned *c)
{
	(void)d, (void)sensor;
	*c = 41;
	return 0;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned *mw)
{
	(void)d;
	*mw = 312500;
	return 0;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *r)
{
	(void)d;
	*r = 4; /* sw-power-cap */
	return 0;
}
