/*
 * Hardware error counters around a run: what the hardware itself reported while sdcscan burned.
 * CPU side: Linux EDAC's memory controller and DIMM counters (read before and after), the
 * kernel's log records of the run (/dev/kmsg: machine checks, EDAC's own lines, APEI/GHES, memory
 * failure, PCIe AER) and rasdaemon's database (rows added during the run). GPU side: NVML's
 * critical Xid events of the run's GPUs, polled by one thread for the whole run.
 *
 * A new uncorrected error is CRITICAL (SDC_FINDING_CORRUPTION), a new corrected one WARNING
 * (SDC_FINDING_DEGRADED), an Xid that says the GPU's work was disturbed without naming the
 * hardware UNKNOWN (SDC_FINDING_ERROR); each is a finding of probe "health" with the source as its
 * variant. A source that cannot be read (no EDAC driver, kmsg not readable, no rasdaemon) gives no
 * finding: the report's run.environment.hardware_errors says which sources were read, and why the
 * others were not.
 *
 * The readers take the root they read from, so tests call them on fake trees; the run reads below
 * $SDCSCAN_HOST_ROOT when it is set (the host's / mounted in a container, as node_exporter's
 * --path.rootfs; the cli tests point it at a fake tree), else below /.
 */
#ifndef SDC_HWERR_H
#define SDC_HWERR_H

#include <stdbool.h>
#include <stdint.h>

#include "run/record.h"

/* ---- what the runner calls ---- */

struct sdc_hwerr;

/* Before the probes: reads the counters, seeks the kernel log to its end, notes rasdaemon's last
 * rows, and starts polling the run's GPUs for Xid events. NULL only when out of memory. */
struct sdc_hwerr *sdc_hwerr_begin(struct sdc_run *run);
/* After the probes: stops the poller, reads again, adds the findings (probe "health") and the
 * sources (run->environment's "hardware_errors"), and frees h. With run NULL it only frees h. */
void sdc_hwerr_end(struct sdc_hwerr *h, struct sdc_run *run);

/* ---- the parts, for the tests ---- */

/* One error the hardware reported during the run, from one source. */
struct sdc_hwerr_event {
	enum sdc_finding_class cls; /* CORRUPTION uncorrected, DEGRADED corrected, ERROR disturbed */
	char kind[32];              /* edac-uncorrected, edac-corrected, mce, memory-failure, hw-error, pcie-aer, gpu-xid */
	char source[16];            /* edac, kmsg, rasdaemon, nvml */
	char key[64];               /* what sources share for one event: "mc0", "cpu3 bank 8", "pci 0000:01:00.0" */
	int gpu;                    /* index among the run's GPUs, -1 for the host */
	int64_t count;              /* errors it stands for */
	double when;                /* seconds from the start of the run, -1 when not known */
	char operation[96];
	char detail[320];
};

#define SDC_HWERR_EVENTS_MAX 256

/* EDAC (Documentation/ABI/testing/sysfs-devices-edac): per memory controller mcN its counters,
 * and per DIMM (dimmN, or rankN on a chip-select based controller; csrowN/chM on kernels with the
 * legacy interface only) its counters and label. -1: the file was not there. */
struct sdc_edac_dimm {
	char name[32];     /* "dimm3", "rank1", "csrow0/ch1" */
	char label[80];    /* dimm_label, chM_dimm_label: what the board calls the slot */
	char location[64]; /* dimm_location: "channel 1 slot 0" */
	int64_t ce, ue;
};

struct sdc_edac_mc {
	int index;      /* N of mcN */
	char name[64];  /* mc_name: the driver's name of the controller */
	int64_t ce, ue, ce_noinfo, ue_noinfo, since_reset;
	struct sdc_edac_dimm *dimms;
	int ndimms;
};

struct sdc_edac {
	bool read;       /* the directory was there and was read */
	char why[200];   /* why not */
	struct sdc_edac_mc *mcs;
	int nmcs;
};

/* Reads dir (normally /sys/devices/system/edac/mc). Returns 0, or -1 when out of memory; e->read
 * and e->why say whether there was EDAC to read. */
int sdc_edac_read(const char *dir, struct sdc_edac *e);
void sdc_edac_release(struct sdc_edac *e);
/* The errors counted between two readings, into out (at most max): returns how many. Counters
 * reset during the run (seconds_since_reset went down) count from zero. */
int sdc_edac_compare(const struct sdc_edac *before, const struct sdc_edac *after, struct sdc_hwerr_event *out,
		     int max);

/* The kernel log (Documentation/ABI/testing/dev-kmsg): opened non-blocking and at its end before
 * the run; the records logged after are read during it (hwerr/hwerr.c's poller, every second) and
 * after it. */
struct sdc_kmsg {
	int fd;
	bool read;
	char why[200];
	char path[256];
	uint64_t records, lost; /* records read; records the ring overwrote before they were read */
	char note[160];         /* what limited the reading, when something did */
	unsigned long long injected[64]; /* page frames the kernel was asked to poison (MADV_HWPOISON) */
	int ninjected;
};

/* Opens path (normally /dev/kmsg) at its end; k->read and k->why say whether it can be read. */
void sdc_kmsg_open(const char *path, struct sdc_kmsg *k);
/* Reads every record logged since the open (or the last collect) and adds the errors they report
 * to out (at most max, from *n on); start is sdc_now() at the run's start (for the events' times). */
void sdc_kmsg_collect(struct sdc_kmsg *k, double start, struct sdc_hwerr_event *out, int *n, int max);
void sdc_kmsg_close(struct sdc_kmsg *k);
/* One kernel message (the text after a record's ';'): whether it reports a hardware error, and
 * which (ev filled). */
bool sdc_kmsg_classify(const char *msg, struct sdc_hwerr_event *ev);

/* rasdaemon's SQLite database (rasdaemon's ras-record.c: tables mc_event, mce_record, aer_event),
 * read through libsqlite3.so.0 loaded at run time. */
struct sdc_ras {
	bool read;
	char why[200];
	char path[256];
	int64_t last_mc, last_mce, last_aer; /* the highest row id before the run, -1: no such table */
};

/* Notes the last rows of path (normally /var/lib/rasdaemon/ras-mc_event.db). */
void sdc_ras_open(const char *path, struct sdc_ras *r);
/* The rows added since sdc_ras_open, as events into out from *n on. */
void sdc_ras_collect(struct sdc_ras *r, struct sdc_hwerr_event *out, int *n, int max);

/* Events that stand for the same error (the same key and class) are merged into the first: one
 * source's repeats add up their counts, another source's copy is named in its detail. A machine
 * check the kernel only said was logged is dropped when another source names one. Returns the
 * number left. */
int sdc_hwerr_merge(struct sdc_hwerr_event *ev, int n);

/* The class NVIDIA's Xid documentation gives xid (hwerr/xid.c), and why. */
enum sdc_finding_class sdc_xid_class(unsigned long long xid, const char **name, const char **why);

#endif
