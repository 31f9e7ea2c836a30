/*
 * NVML, loaded with dlopen (nvml.h). There is no NVML header on the build machines, so the few
 * prototypes and constants used are declared here, from NVIDIA's nvml.h (CUDA 12/13): functions
 * return nvmlReturn_t (0 success, 7 insufficient size), a device is an opaque pointer.
 */
#include "nvml.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

typedef int nvml_ret;
typedef struct nvml_device *nvml_dev;

enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
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
