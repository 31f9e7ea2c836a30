/*
 * GPU health from NVML, loaded at run time with dlopen (libnvidia-ml.so.1, which the driver
 * installs; $SDCSCAN_NVML_LIBRARY names another, for tests), so the binary runs where there is no
 * driver. A run records each GPU's health before and after it; an uncorrectable ECC error that
 * appeared during the run is a finding (runner/runner.c). The Xid events a GPU raises during the run
 * are polled here too (hwerr/hwerr.c makes them findings).
 */
#ifndef SDC_NVML_H
#define SDC_NVML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* -1 (or NAN for power) in a field: NVML did not say (not supported, no permission). */
struct sdc_gpu_health {
	bool valid;               /* NVML answered for this GPU; why not otherwise */
	char why[160];
	int ecc_mode;             /* 1 enabled, 0 disabled */
	int64_t ecc_corrected;    /* volatile counts, since the driver loaded */
	int64_t ecc_uncorrected;
	int64_t retired_sbe, retired_dbe;  /* pages retired (pre-Ampere) for multiple single-bit / double-bit errors */
	int64_t remapped_corr, remapped_unc;  /* rows remapped (Ampere and later) */
	int remap_pending, remap_failure;
	int sm_clock_mhz, mem_clock_mhz, temperature_c;
	double power_w;
	int64_t throttle_reasons; /* nvmlClocksEventReasons bits */
};

/* The driver's version ("580.65.06"); -1 when NVML cannot be loaded or does not say. */
int sdc_nvml_driver_version(char *buf, size_t len);

/* Health of the GPU at this PCI bus id ("0000:3b:00.0"). Always fills h; h->valid says if NVML answered. */
void sdc_nvml_health(const char *pci_bus_id, struct sdc_gpu_health *h);

/* The throttle reasons as words ("sw-power-cap hw-slowdown"), "none" for 0. */
void sdc_nvml_throttle_text(int64_t reasons, char *buf, size_t len);

/*
 * Critical Xid events (nvmlEventTypeXidCriticalError) of a set of GPUs, registered once and then
 * polled without waiting (nvmlEventSetWait_v2 with a timeout of 0). Events raised before the
 * registration are not delivered: register before the work starts.
 */
struct sdc_nvml_events;

struct sdc_nvml_xid {
	int gpu;                 /* index into the bus ids given to sdc_nvml_events_open, -1 if none matches */
	unsigned long long xid;  /* the Xid (999: one NVML does not know) */
	unsigned gpu_instance, compute_instance; /* MIG instance, 0xFFFFFFFF when not attributed */
};

/* Registers each GPU (PCI bus id) for critical Xid events. NULL only when out of memory; a GPU
 * that could not be registered says why (sdc_nvml_events_registered). */
struct sdc_nvml_events *sdc_nvml_events_open(const char *const *pci_bus_ids, int n);
/* Whether GPU i is registered; why not in why otherwise. */
bool sdc_nvml_events_registered(const struct sdc_nvml_events *ev, int i, char *why, size_t len);
/* The events waiting now, at most max of them, without waiting: how many, or -1 with why (a GPU
 * fell off the bus, an NVML error), after which polling is pointless. */
int sdc_nvml_events_poll(struct sdc_nvml_events *ev, struct sdc_nvml_xid *out, int max, char *why, size_t len);
void sdc_nvml_events_close(struct sdc_nvml_events *ev);

/* The compute processes running on the GPU at this bus id (another job's), or -1 with why. */
int sdc_nvml_gpu_processes(const char *pci_bus_id, char *why, size_t len);

#endif
