/*
 * NVML, loaded with dlopen (device/nvml.h). There is no NVML header on the build machines, so the few
 * prototypes and constants used are declared here, from NVIDIA's nvml.h (CUDA 12/13): functions
 * return nvmlReturn_t (0 success, 7 insufficient size), a device is an opaque pointer.
 * Events: NVML API Reference, "Event Handling Methods" (nvmlEventSetCreate,
 * nvmlDeviceRegisterEvents, nvmlEventSetWait_v2, nvmlEventSetFree), docs.nvidia.com/deploy/nvml-api.
 */
#include "device/nvml.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/message.h"

typedef int nvml_ret;
typedef struct nvml_device *nvml_dev;
typedef struct nvml_event_set *nvml_event_set;

/* nvmlEventData_t as nvmlEventSetWait_v2 fills it; the older nvmlEventSetWait fills the first
 * three members only (its struct had no MIG instance ids). */
struct nvml_event_data {
	nvml_dev device;
	unsigned long long type;
	unsigned long long data; /* the Xid, for nvmlEventTypeXidCriticalError */
	unsigned gpu_instance, compute_instance;
};

#define NVML_EVENT_XID_CRITICAL 0x0000000000000008ULL /* nvmlEventTypeXidCriticalError */

enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_TIMEOUT = 10,     /* no event waiting */
	NVML_ERROR_GPU_IS_LOST = 15, /* a GPU fell off the bus */
	/* nvmlMemoryErrorType_t, nvmlEccCounterType_t */
	NVML_MEMORY_ERROR_TYPE_CORRECTED = 0,
	NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1,
	NVML_VOLATILE_ECC = 0,
	/* nvmlPageRetirementCause_t */
	NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
	NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1,
	/* nvmlClockType_t, nvmlTemperatureSensors_t */
	NVML_CLOCK_SM = 1,
	NVML_CLOCK_MEM = 2,
	NVML_TEMPERATURE_GPU = 0,
};

static struct {
	void *handle;
	char why[160];
	nvml_ret (*init)(void);
	const char *(*error_string)(nvml_ret);
	nvml_ret (*driver_version)(char *, unsigned);
	nvml_ret (*by_pci)(const char *, nvml_dev *);
	nvml_ret (*ecc_mode)(nvml_dev, int *, int *);
	nvml_ret (*ecc_total)(nvml_dev, int, int, unsigned long long *);
	nvml_ret (*retired_pages)(nvml_dev, int, unsigned *, unsigned long long *);
	nvml_ret (*remapped_rows)(nvml_dev, unsigned *, unsigned *, unsigned *, unsigned *);
	nvml_ret (*clock)(nvml_dev, int, unsigned *);
	nvml_ret (*temperature)(nvml_dev, int, unsigned *);
	nvml_ret (*power)(nvml_dev, unsigned *);
	nvml_ret (*throttle)(nvml_dev, unsigned long long *);
	nvml_ret (*event_set_create)(nvml_event_set *);
	nvml_ret (*event_types)(nvml_dev, unsigned long long *);
	nvml_ret (*register_events)(nvml_dev, unsigned long long, nvml_event_set);
	nvml_ret (*event_wait)(nvml_event_set, struct nvml_event_data *, unsigned);
	nvml_ret (*event_set_free)(nvml_event_set);
	nvml_ret (*compute_procs)(nvml_dev, unsigned *, void *);
} nv;

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *sym(const char *a, const char *b)
{
	void *p = dlsym(nv.handle, a);
	return p || !b ? p : dlsym(nv.handle, b);
}

static void load(void)
{
	const char *path = getenv("SDCSCAN_NVML_LIBRARY");
	if (!path || !*path)
		path = "libnvidia-ml.so.1";
	nv.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!nv.handle) {
		const char *e = dlerror();
		snprintf(nv.why, sizeof(nv.why), "NVML (%s) cannot be loaded: %.100s", path, e ? e : "unknown error");
		return;
	}
	nv.init = (nvml_ret (*)(void))sym("nvmlInit_v2", "nvmlInit");
	nv.error_string = (const char *(*)(nvml_ret))sym("nvmlErrorString", NULL);
	nv.driver_version = (nvml_ret (*)(char *, unsigned))sym("nvmlSystemGetDriverVersion", NULL);
	nv.by_pci = (nvml_ret (*)(const char *, nvml_dev *))sym("nvmlDeviceGetHandleByPciBusId_v2",
								  "nvmlDeviceGetHandleByPciBusId");
	nv.ecc_mode = (nvml_ret (*)(nvml_dev, int *, int *))sym("nvmlDeviceGetEccMode", NULL);
	nv.ecc_total = (nvml_ret (*)(nvml_dev, int, int, unsigned long long *))sym("nvmlDeviceGetTotalEccErrors", NULL);
	nv.retired_pages = (nvml_ret (*)(nvml_dev, int, unsigned *, unsigned long long *))sym("nvmlDeviceGetRetiredPages",
											     NULL);
	nv.remapped_rows = (nvml_ret (*)(nvml_dev, unsigned *, unsigned *, unsigned *, unsigned *))sym(
		"nvmlDeviceGetRemappedRows", NULL);
	nv.clock = (nvml_ret (*)(nvml_dev, int, unsigned *))sym("nvmlDeviceGetClockInfo", NULL);
	nv.temperature = (nvml_ret (*)(nvml_dev, int, unsigned *))sym("nvmlDeviceGetTemperature", NULL);
	nv.power = (nvml_ret (*)(nvml_dev, unsigned *))sym("nvmlDeviceGetPowerUsage", NULL);
	/* NVML 13 renamed the throttle reasons to clock event reasons; older drivers have the old name. */
	nv.throttle = (nvml_ret (*)(nvml_dev, unsigned long long *))sym("nvmlDeviceGetCurrentClocksEventReasons",
									"nvmlDeviceGetCurrentClocksThrottleReasons");
	/* (only counted: called with no array, whose layout the versions change) */
	nv.compute_procs = (nvml_ret (*)(nvml_dev, unsigned *, void *))sym("nvmlDeviceGetComputeRunningProcesses_v3",
									   "nvmlDeviceGetComputeRunningProcesses");
	nv.event_set_create = (nvml_ret (*)(nvml_event_set *))sym("nvmlEventSetCreate", NULL);
	nv.event_types = (nvml_ret (*)(nvml_dev, unsigned long long *))sym("nvmlDeviceGetSupportedEventTypes", NULL);
	nv.register_events = (nvml_ret (*)(nvml_dev, unsigned long long, nvml_event_set))sym("nvmlDeviceRegisterEvents",
											  NULL);
	nv.event_wait = (nvml_ret (*)(nvml_event_set, struct nvml_event_data *, unsigned))sym("nvmlEventSetWait_v2",
												 "nvmlEventSetWait");
	nv.event_set_free = (nvml_ret (*)(nvml_event_set))sym("nvmlEventSetFree", NULL);
	if (!nv.init || !nv.by_pci) {
		snprintf(nv.why, sizeof(nv.why), "%s lacks nvmlInit or nvmlDeviceGetHandleByPciBusId", path);
		goto out_close;
	}
	const nvml_ret rc = nv.init();
	if (rc != NVML_SUCCESS) {
		snprintf(nv.why, sizeof(nv.why), "nvmlInit: %s", nv.error_string ? nv.error_string(rc) : "failed");
		goto out_close;
	}
	return;
out_close:
	dlclose(nv.handle);
	nv.handle = NULL;
}

int sdc_nvml_driver_version(char *buf, size_t len)
{
	pthread_once(&once, load);
	char v[96];
	if (!nv.handle || !nv.driver_version || nv.driver_version(v, sizeof(v)) != NVML_SUCCESS)
		return -1;
	v[sizeof(v) - 1] = '\0';
	sdc_strlcpy(buf, v, len);
	return 0;
}

void sdc_nvml_health(const char *pci_bus_id, struct sdc_gpu_health *h)
{
	pthread_once(&once, load);
	memset(h, 0, sizeof(*h));
	h->ecc_mode = h->remap_pending = h->remap_failure = -1;
	h->ecc_corrected = h->ecc_uncorrected = h->retired_sbe = h->retired_dbe = -1;
	h->remapped_corr = h->remapped_unc = h->throttle_reasons = -1;
	h->sm_clock_mhz = h->mem_clock_mhz = h->temperature_c = -1;
	h->power_w = NAN;
	if (!nv.handle) {
		sdc_strlcpy(h->why, nv.why, sizeof(h->why));
		return;
	}
	nvml_dev d;
	const nvml_ret rc = nv.by_pci(pci_bus_id, &d);
	if (rc != NVML_SUCCESS) {
		snprintf(h->why, sizeof(h->why), "NVML does not know the GPU at %s: %s", pci_bus_id,
			 nv.error_string ? nv.error_string(rc) : "error");
		return;
	}
	h->valid = true;
	int cur, pend;
	if (nv.ecc_mode && nv.ecc_mode(d, &cur, &pend) == NVML_SUCCESS)
		h->ecc_mode = cur != 0;
	unsigned long long c;
	if (nv.ecc_total && nv.ecc_total(d, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &c) == NVML_SUCCESS)
		h->ecc_corrected = (int64_t)c;
	if (nv.ecc_total && nv.ecc_total(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &c) == NVML_SUCCESS)
		h->ecc_uncorrected = (int64_t)c;
	unsigned pages, rc_ = 0;
	/* With no room for addresses NVML answers the count, as success or "insufficient size". */
	if (nv.retired_pages) {
		pages = 0;
		rc_ = (unsigned)nv.retired_pages(d, NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, &pages, NULL);
		if (rc_ == NVML_SUCCESS || rc_ == NVML_ERROR_INSUFFICIENT_SIZE)
			h->retired_sbe = pages;
		pages = 0;
		rc_ = (unsigned)nv.retired_pages(d, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &pages, NULL);
		if (rc_ == NVML_SUCCESS || rc_ == NVML_ERROR_INSUFFICIENT_SIZE)
			h->retired_dbe = pages;
	}
	unsigned corr, unc, pending, failure;
	if (nv.remapped_rows && nv.remapped_rows(d, &corr, &unc, &pending, &failure) == NVML_SUCCESS) {
		h->remapped_corr = corr;
		h->remapped_unc = unc;
		h->remap_pending = pending != 0;
		h->remap_failure = failure != 0;
	}
	unsigned v;
	if (nv.clock && nv.clock(d, NVML_CLOCK_SM, &v) == NVML_SUCCESS)
		h->sm_clock_mhz = (int)v;
	if (nv.clock && nv.clock(d, NVML_CLOCK_MEM, &v) == NVML_SUCCESS)
		h->mem_clock_mhz = (int)v;
	if (nv.temperature && nv.temperature(d, NVML_TEMPERATURE_GPU, &v) == NVML_SUCCESS)
		h->temperature_c = (int)v;
	if (nv.power && nv.power(d, &v) == NVML_SUCCESS)
		h->power_w = v / 1000.0;
	unsigned long long r;
	if (nv.throttle && nv.throttle(d, &r) == NVML_SUCCESS)
		h->throttle_reasons = (int64_t)r;
}

void sdc_nvml_throttle_text(int64_t reasons, char *buf, size_t len)
{
	/* nvmlClocksEventReason* bits */
	static const char *const names[] = { "gpu-idle",    "applications-clocks", "sw-power-cap",
					     "hw-slowdown", "sync-boost",          "sw-thermal",
					     "hw-thermal",  "hw-power-brake",      "display-clocks" };
	size_t used = 0;
	buf[0] = '\0';
	if (reasons < 0) {
		sdc_strlcpy(buf, "unknown", len);
		return;
	}
	for (size_t i = 0; i < SDC_ARRAY_SIZE(names); i++) {
		if (!(reasons >> i & 1))
			continue;
		int w = snprintf(buf + used, len - used, "%s%s", used ? " " : "", names[i]);
		if (w < 0 || (size_t)w >= len - used)
			break;
		used += (size_t)w;
	}
	if (!used)
		sdc_strlcpy(buf, reasons ? "other" : "none", len);
}

/* ---- critical Xid events ---- */

struct sdc_nvml_events {
	nvml_event_set set; /* NULL when none could be made */
	int n;
	nvml_dev *devs;     /* per GPU; NULL when not registered */
	char (*why)[160];
};

static const char *nvml_error(nvml_ret rc)
{
	return nv.error_string ? nv.error_string(rc) : "error";
}

struct sdc_nvml_events *sdc_nvml_events_open(const char *const *pci_bus_ids, int n)
{
	pthread_once(&once, load);
	struct sdc_nvml_events *ev = calloc(1, sizeof(*ev));
	if (!ev)
		return NULL;
	ev->n = n;
	ev->devs = calloc((size_t)n + 1, sizeof(*ev->devs));
	ev->why = calloc((size_t)n + 1, sizeof(*ev->why));
	if (!ev->devs || !ev->why) {
		sdc_nvml_events_close(ev);
		return NULL;
	}
	char common[160] = "";
	nvml_ret rc;
	if (!nv.handle)
		sdc_strlcpy(common, nv.why, sizeof(common));
	else if (!nv.event_set_create || !nv.register_events || !nv.event_wait)
		snprintf(common, sizeof(common), "this NVML has no nvmlEventSetCreate, nvmlDeviceRegisterEvents or nvmlEventSetWait");
	else if ((rc = nv.event_set_create(&ev->set)) != NVML_SUCCESS)
		snprintf(common, sizeof(common), "nvmlEventSetCreate: %s", nvml_error(rc));
	for (int i = 0; i < n; i++) {
		nvml_dev d;
		unsigned long long types = NVML_EVENT_XID_CRITICAL;
		if (common[0])
			sdc_strlcpy(ev->why[i], common, sizeof(ev->why[i]));
		else if ((rc = nv.by_pci(pci_bus_ids[i], &d)) != NVML_SUCCESS)
			snprintf(ev->why[i], sizeof(ev->why[i]), "NVML does not know the GPU at %s: %s", pci_bus_ids[i],
				 nvml_error(rc));
		else if (nv.event_types && nv.event_types(d, &types) == NVML_SUCCESS && !(types & NVML_EVENT_XID_CRITICAL))
			snprintf(ev->why[i], sizeof(ev->why[i]), "NVML says the GPU at %s reports no Xid events",
				 pci_bus_ids[i]);
		else if ((rc = nv.register_events(d, NVML_EVENT_XID_CRITICAL, ev->set)) != NVML_SUCCESS)
			snprintf(ev->why[i], sizeof(ev->why[i]), "nvmlDeviceRegisterEvents (%s): %s", pci_bus_ids[i],
				 nvml_error(rc));
		else
			ev->devs[i] = d;
	}
	return ev;
}

bool sdc_nvml_events_registered(const struct sdc_nvml_events *ev, int i, char *why, size_t len)
{
	if (ev && i >= 0 && i < ev->n && ev->devs[i])
		return true;
	sdc_strlcpy(why, ev && i >= 0 && i < ev->n ? ev->why[i] : "not a GPU of this run", len);
	return false;
}

int sdc_nvml_events_poll(struct sdc_nvml_events *ev, struct sdc_nvml_xid *out, int max, char *why, size_t len)
{
	int got = 0;
	if (!ev || !ev->set)
		return 0;
	while (got < max) {
		struct nvml_event_data e = { .gpu_instance = 0xFFFFFFFFu, .compute_instance = 0xFFFFFFFFu };
		/* A timeout of 0 returns at once: an event waiting, or NVML_ERROR_TIMEOUT when none is. */
		const nvml_ret rc = nv.event_wait(ev->set, &e, 0);
		if (rc == NVML_ERROR_TIMEOUT)
			break;
		if (rc != NVML_SUCCESS) {
			snprintf(why, len, "nvmlEventSetWait: %s%s", nvml_error(rc),
				 rc == NVML_ERROR_GPU_IS_LOST ? " (a GPU fell off the bus or cannot be reached)" : "");
			return got ? got : -1;
		}
		if (!(e.type & NVML_EVENT_XID_CRITICAL))
			continue;
		out[got] = (struct sdc_nvml_xid){ .gpu = -1, .xid = e.data, .gpu_instance = e.gpu_instance,
						  .compute_instance = e.compute_instance };
		for (int i = 0; i < ev->n; i++)
			if (ev->devs[i] && ev->devs[i] == e.device)
				out[got].gpu = i;
		got++;
	}
	return got;
}

void sdc_nvml_events_close(struct sdc_nvml_events *ev)
{
	if (!ev)
		return;
	if (ev->set && nv.event_set_free)
		nv.event_set_free(ev->set);
	free(ev->devs);
	free(ev->why);
	free(ev);
}

int sdc_nvml_gpu_processes(const char *pci_bus_id, char *why, size_t len)
{
	pthread_once(&once, load);
	nvml_dev d;
	if (!nv.handle || !nv.init) {
		snprintf(why, len, "%s", nv.why[0] ? nv.why : "NVML cannot be loaded");
		return -1;
	}
	if (!nv.compute_procs) {
		snprintf(why, len, "this NVML has no nvmlDeviceGetComputeRunningProcesses");
		return -1;
	}
	nvml_ret r = nv.by_pci(pci_bus_id, &d);
	if (r != NVML_SUCCESS) {
		snprintf(why, len, "NVML does not know GPU %s: %s", pci_bus_id, nv.error_string ? nv.error_string(r) : "error");
		return -1;
	}
	/* "call this function with *infoCount = 0: the return code will be NVML_ERROR_INSUFFICIENT_SIZE,
	 * or NVML_SUCCESS if none are running" (device/nvml.h) */
	unsigned count = 0;
	r = nv.compute_procs(d, &count, NULL);
	if (r == NVML_SUCCESS)
		return 0;
	if (r == NVML_ERROR_INSUFFICIENT_SIZE)
		return (int)count;
	snprintf(why, len, "nvmlDeviceGetComputeRunningProcesses on %s: %s", pci_bus_id,
		 nv.error_string ? nv.error_string(r) : "error");
	return -1;
}
