/*
 * A stand-in for libnvidia-ml.so.1 ($SDCSCAN_NVML_LIBRARY), with the functions sdcscan's device/nvml.c
 * looks up and the signatures of NVIDIA's device/nvml.h. Every GPU answers with fixed readings; with
 * FAKE_NVML_NEW_UNC=1 the volatile uncorrectable ECC count goes up by one between the first
 * reading of a GPU and the next, as if a double-bit error happened during the run.
 *
 * Xid events: FAKE_NVML_XID="BUS=XID[,BUS=XID...]" (e.g. "0000:f0:00.0=79") raises each Xid once
 * on the GPU at that PCI bus id, FAKE_NVML_XID_DELAY_MS (default 300) after the GPU was registered
 * for events, as if it happened during the run; an event set's wait delivers it like NVML's (one
 * event a call, NVML_ERROR_TIMEOUT when none is waiting). FAKE_NVML_NO_XID_EVENTS=1: the GPUs
 * report no Xid event type (nvmlDeviceGetSupportedEventTypes), as where NVML cannot deliver them.
 *
 * FAKE_NVML_PROCS=N: every GPU runs N compute processes (another job), as
 * nvmlDeviceGetComputeRunningProcesses counts them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int nvmlReturn_t;
typedef struct fake_device *nvmlDevice_t;

struct fake_device {
	char bus[32];
	int reads;
	double registered; /* when it was registered for events (0: not) */
	int delivered;     /* how many of its FAKE_NVML_XID entries were delivered */
};

/* nvmlEventData_t of CUDA 12/13's device/nvml.h (nvmlEventSetWait_v2) */
typedef struct {
	nvmlDevice_t device;
	unsigned long long eventType;
	unsigned long long eventData;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlEventData_t;
typedef struct fake_event_set *nvmlEventSet_t;
struct fake_event_set {
	int n;
	nvmlDevice_t devs[8];
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
EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set);
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned *count, void *infos);
EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t d, unsigned long long *types);
EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set);
EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms);
EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set);

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

/* ---- events (Xid) ---- */

#define XID_CRITICAL 0x8ULL /* nvmlEventTypeXidCriticalError */

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
	*set = calloc(1, sizeof(**set));
	return *set ? 0 : 2; /* NVML_ERROR_INVALID_ARGUMENT stands in for no memory */
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t d, unsigned long long *types)
{
	(void)d;
	const char *no = getenv("FAKE_NVML_NO_XID_EVENTS");
	*types = no && *no == '1' ? 0x3ULL /* ECC events only */ : 0x3ULL | XID_CRITICAL;
	return 0;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set)
{
	if (!(types & XID_CRITICAL) || set->n == 8)
		return 3; /* NVML_ERROR_NOT_SUPPORTED */
	set->devs[set->n++] = d;
	d->registered = now_seconds();
	return 0;
}

/* The k-th "BUS=XID" entry of FAKE_NVML_XID for bus: its Xid, or 0 when there is none. */
static unsigned long long xid_entry(const char *bus, int k)
{
	const char *spec = getenv("FAKE_NVML_XID");
	size_t blen = strlen(bus);
	for (const char *p = spec; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, bus, blen) && p[blen] == '=' && k-- == 0)
			return strtoull(p + blen + 1, NULL, 10);
	return 0;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
	(void)timeoutms; /* sdcscan polls with 0; a fake that never sleeps serves both */
	const char *delay = getenv("FAKE_NVML_XID_DELAY_MS");
	const double after = (delay ? atof(delay) : 300.0) / 1000.0;
	for (int i = 0; i < set->n; i++) {
		nvmlDevice_t d = set->devs[i];
		const unsigned long long xid = xid_entry(d->bus, d->delivered);
		if (!xid || now_seconds() - d->registered < after)
			continue;
		d->delivered++;
		*data = (nvmlEventData_t){ .device = d, .eventType = XID_CRITICAL, .eventData = xid,
					   .gpuInstanceId = 0xFFFFFFFFu, .computeInstanceId = 0xFFFFFFFFu };
		return 0;
	}
	return 10; /* NVML_ERROR_TIMEOUT */
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
	free(set);
	return 0;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned *count, void *infos)
{
	(void)d, (void)infos;
	const char *e = getenv("FAKE_NVML_PROCS");
	const unsigned n = e ? (unsigned)atoi(e) : 0;
	if (n > *count) {
		*count = n;
		return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
	}
	*count = n;
	return 0;
}
