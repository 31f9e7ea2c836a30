/*
 * The kernel log's hardware error records of a run (hwerr/hwerr.h).
 *
 * /dev/kmsg (the kernel's Documentation/ABI/testing/dev-kmsg): each read() returns one record,
 * "PRIORITY,SEQUENCE,TIMESTAMP_US,FLAGS[,...];MESSAGE\n" then continuation lines that start with
 * a space; lseek(fd, 0, SEEK_END) puts the reader after the last record; O_NONBLOCK makes a read
 * with nothing new fail with EAGAIN; EPIPE says records were overwritten before they were read
 * (the reader goes on at the oldest left). Only facility 0 is the kernel's own: a process that
 * writes to /dev/kmsg gets facility 1 (LOG_USER) or the one it asks for, never 0
 * (kernel/printk/printk.c, devkmsg_write), so a user cannot forge a machine check here. A regular
 * file in the same format (a test's fake) is read the same way, from its end at the open.
 *
 * The messages recognised, each as the kernel prints it:
 *  - EDAC (drivers/edac/edac_mc.c, edac_ce_error/edac_ue_error through edac_mc_printk):
 *    "EDAC MC0: 1 CE memory read error on DIMM_A1 (channel:0 slot:0 page:0x12 offset:0x0 grain:8
 *    syndrome:0x0 - ...)", "EDAC MC0: 1 UE ... on LABEL (...)"; edac_device.c:
 *    "EDAC DEVICE0: CE: ..." / "UE: ...".
 *  - x86 machine checks (arch/x86/kernel/cpu/mce/core.c, __print_mce, pr_fmt "mce: ", HW_ERR
 *    "[Hardware Error]: "): "mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 8:
 *    cc00008000010090"; MCi_STATUS bit 61 (UC) set is uncorrected (mce_is_correctable). And
 *    mce_notify_irq's "mce: [Hardware Error]: Machine check events logged", which says only that
 *    some were (their records went to a decoder: EDAC, mcelog, rasdaemon).
 *  - AMD's decoder (drivers/edac/mce_amd.c, decode_smca_error / amd_decode_mce): "[Hardware
 *    Error]: CPU:2 (19:1:1) MC17_STATUS[Over|UE|MiscV|AddrV|-|-|SyndV|UECC|Deferred|Poison|
 *    Scrub]: 0x...".
 *  - APEI/GHES (drivers/firmware/efi/cper.c, cper_estatus_print): "{1}[Hardware Error]: event
 *    severity: corrected" (recoverable, fatal, corrected, info).
 *  - Memory failure (mm/memory-failure.c, action_result, pr_fmt "Memory failure: "):
 *    "Memory failure: 0x12345: recovery action for dirty LRU page: Recovered". One the kernel was
 *    asked to simulate (mm/madvise.c MADV_HWPOISON: "Injecting memory failure for pfn 0x12345 at
 *    process virtual address ...") is not a hardware error and is left out.
 *  - PCIe AER (drivers/pci/pcie/aer.c, aer_print_error): "pcieport 0000:00:1c.0: PCIe Bus Error:
 *    severity=Uncorrectable (Non-Fatal), type=..." ("Uncorrected"/"Corrected" before 5.x).
 */
#include "hwerr/hwerr.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/message.h"
#include "base/clock.h"

/* Enough for any record: the kernel's records are at most CONSOLE_EXT_LOG_MAX (8 KiB). */
#define RECORD_MAX 16384
/* A flood (a log of millions of lines) is read this far, and the report says so. */
#define RECORDS_MAX 200000

void sdc_kmsg_open(const char *path, struct sdc_kmsg *k)
{
	memset(k, 0, sizeof(*k));
	k->fd = -1;
	sdc_strlcpy(k->path, path, sizeof(k->path));
	k->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (k->fd < 0) {
		const int e = errno;
		if (e == EPERM || e == EACCES)
			snprintf(k->why, sizeof(k->why),
				 "%.100s: %s (kernel.dmesg_restrict lets only root or CAP_SYSLOG read the kernel log)", path,
				 strerror(e));
		else if (e == ENOENT)
			snprintf(k->why, sizeof(k->why), "no %.150s (a container without the host's kernel log?)", path);
		else
			snprintf(k->why, sizeof(k->why), "%.150s: %s", path, strerror(e));
		return;
	}
	if (lseek(k->fd, 0, SEEK_END) < 0) {
		snprintf(k->why, sizeof(k->why), "%.150s: cannot seek to its end: %s", path, strerror(errno));
		sdc_kmsg_close(k);
		return;
	}
	k->read = true;
}

void sdc_kmsg_close(struct sdc_kmsg *k)
{
	if (k->fd >= 0)
		close(k->fd);
	k->fd = -1;
}

static void event_init(struct sdc_hwerr_event *ev, enum sdc_finding_class cls, const char *kind, const char *msg)
{
	memset(ev, 0, sizeof(*ev));
	ev->cls = cls;
	sdc_strlcpy(ev->kind, kind, sizeof(ev->kind));
	sdc_strlcpy(ev->source, "kmsg", sizeof(ev->source));
	ev->gpu = -1;
	ev->count = 1;
	ev->when = -1;
	snprintf(ev->detail, sizeof(ev->detail), "kernel: %s", msg);
}

/* "EDAC MC0: 1 UE ... on LABEL (...)" and "EDAC DEVICE0: CE: ..." */
static bool classify_edac(const char *msg, struct sdc_hwerr_event *ev)
{
	int mc, used = 0;
	long long count;
	char type[3];
	if (sscanf(msg, "EDAC MC%d: %lld %2[CUE]%n", &mc, &count, type, &used) == 3 && used && msg[used] == ' ' &&
	    (!strcmp(type, "CE") || !strcmp(type, "UE")) && count > 0) {
		const bool ue = type[0] == 'U';
		event_init(ev, ue ? SDC_FINDING_CORRUPTION : SDC_FINDING_DEGRADED, ue ? "edac-uncorrected" : "edac-corrected",
			   msg);
		snprintf(ev->key, sizeof(ev->key), "mc%d", mc);
		ev->count = count;
		/* The label(s) the kernel named, between " on " and " (" */
		const char *on = strstr(msg + used, " on "), *paren = on ? strstr(on, " (") : NULL;
		const int llen = on ? (int)(paren ? paren - on - 4 : (long)strlen(on + 4)) : 0;
		snprintf(ev->operation, sizeof(ev->operation), "EDAC memory controller mc%d%s%.*s", mc,
			 llen > 0 ? ", " : "", SDC_MIN(llen, 70), on ? on + 4 : "");
		return true;
	}
	int dev;
	used = 0;
	if (sscanf(msg, "EDAC DEVICE%d: %2[CUE]:%n", &dev, type, &used) == 2 && used &&
	    (!strcmp(type, "CE") || !strcmp(type, "UE"))) {
		const bool ue = type[0] == 'U';
		event_init(ev, ue ? SDC_FINDING_CORRUPTION : SDC_FINDING_DEGRADED, ue ? "edac-uncorrected" : "edac-corrected",
			   msg);
		snprintf(ev->key, sizeof(ev->key), "edac device %d", dev);
		snprintf(ev->operation, sizeof(ev->operation), "EDAC device %d", dev);
		return true;
	}
	return false;
}

/* "[Hardware Error]: CPU 3: Machine Check: 0 Bank 8: cc00008000010090" */
static bool classify_mce(const char *msg, struct sdc_hwerr_event *ev)
{
	const char *hw = strstr(msg, "[Hardware Error]: ");
	if (!hw)
		return false;
	hw += strlen("[Hardware Error]: ");
	int cpu, bank;
	unsigned long long mcg, status;
	const char *mc = strstr(hw, ": Machine Check"), *colon = mc ? strchr(mc + 2, ':') : NULL;
	const char *b = strstr(hw, " Bank ");
	if (sscanf(hw, "CPU %d:", &cpu) == 1 && colon && b && sscanf(colon, ": %llx", &mcg) == 1 &&
	    sscanf(b, " Bank %d: %llx", &bank, &status) == 2) {
		const bool uc = status >> 61 & 1, pcc = status >> 57 & 1;
		event_init(ev, uc ? SDC_FINDING_CORRUPTION : SDC_FINDING_DEGRADED, "mce", msg);
		snprintf(ev->key, sizeof(ev->key), "cpu %d bank %d", cpu, bank);
		snprintf(ev->operation, sizeof(ev->operation), "machine check, CPU %d bank %d", cpu, bank);
		snprintf(ev->detail, sizeof(ev->detail),
			 "%s machine check on CPU %d bank %d: MCi_STATUS 0x%016llx%s, MCG_STATUS 0x%llx (kernel: %.180s)",
			 uc ? "uncorrected" : "corrected", cpu, bank, status, pcc ? " (processor context corrupt)" : "", mcg,
			 msg);
		return true;
	}
	/* AMD's decoder: "CPU:2 (19:1:1) MC17_STATUS[Over|UE|...]: 0x..." */
	const char *st = strstr(hw, "_STATUS[");
	if (sscanf(hw, "CPU:%d", &cpu) == 1 && st) {
		const char *mcp = st;
		while (mcp > hw && mcp[-1] >= '0' && mcp[-1] <= '9')
			mcp--;
		const char *end = strstr(st, "]: ");
		if (mcp < 2 + hw || strncmp(mcp - 2, "MC", 2) || sscanf(mcp, "%d", &bank) != 1 || !end ||
		    sscanf(end, "]: %llx", &status) != 1)
			return false;
		char flags[128];
		snprintf(flags, sizeof(flags), "|%.*s|", (int)SDC_MIN(end - st - 8, 120), st + 8);
		/* UC (bit 61, printed "UE"); deferred and poisoned errors are not correctable either
		 * (mce_is_correctable; MCi_STATUS bits 44 and 43, printed "Deferred" and "Poison") */
		const bool uc = (status >> 61 & 1) || strstr(flags, "|Deferred|") || strstr(flags, "|Poison|");
		event_init(ev, uc ? SDC_FINDING_CORRUPTION : SDC_FINDING_DEGRADED, "mce", msg);
		snprintf(ev->key, sizeof(ev->key), "cpu %d bank %d", cpu, bank);
		snprintf(ev->operation, sizeof(ev->operation), "machine check, CPU %d bank %d", cpu, bank);
		return true;
	}
	if (!strncmp(hw, "Machine check events logged", 27)) {
		event_init(ev, SDC_FINDING_DEGRADED, "mce", msg);
		sdc_strlcpy(ev->key, "mce-logged", sizeof(ev->key));
		sdc_strlcpy(ev->operation, "machine check events", sizeof(ev->operation));
		snprintf(ev->detail, sizeof(ev->detail),
			 "the kernel logged machine check events; their records went to a decoder (EDAC, mcelog, "
			 "rasdaemon) not read here, so their severity is not known (kernel: %.120s)",
			 msg);
		return true;
	}
	static const char sev[] = "event severity: ";
	const char *s = strstr(hw, sev);
	if (s == hw) {
		s += strlen(sev);
		const bool corrected = !strncmp(s, "corrected", 9);
		if (!corrected && strncmp(s, "recoverable", 11) && strncmp(s, "fatal", 5))
			return false; /* "info" */
		event_init(ev, corrected ? SDC_FINDING_DEGRADED : SDC_FINDING_CORRUPTION, "hw-error", msg);
		sdc_strlcpy(ev->key, "apei", sizeof(ev->key));
		sdc_strlcpy(ev->operation, "APEI generic hardware error source", sizeof(ev->operation));
		return true;
	}
	return false;
}

/* "pcieport 0000:00:1c.0: PCIe Bus Error: severity=Uncorrectable (Fatal), type=..." */
static bool classify_aer(const char *msg, struct sdc_hwerr_event *ev)
{
	const char *p = strstr(msg, ": PCIe Bus Error: severity=");
	if (!p)
		return false;
	const char *sev = p + strlen(": PCIe Bus Error: severity=");
	const bool unc = !strncmp(sev, "Uncorrect", 9);
	if (!unc && strncmp(sev, "Correct", 7))
		return false;
	const char *dev = p;
	while (dev > msg && dev[-1] != ' ')
		dev--;
	event_init(ev, unc ? SDC_FINDING_CORRUPTION : SDC_FINDING_DEGRADED, "pcie-aer", msg);
	snprintf(ev->key, sizeof(ev->key), "pci %.*s", (int)SDC_MIN(p - dev, 40), dev);
	snprintf(ev->operation, sizeof(ev->operation), "PCIe link of %.*s", (int)SDC_MIN(p - dev, 40), dev);
	return true;
}

/* The page frame a memory failure message or an injection names: 0, or the pfn. */
static unsigned long long failure_pfn(const char *msg, bool *injected)
{
	unsigned long long pfn = 0;
	*injected = false;
	if (!strncmp(msg, "Memory failure: ", 16) && sscanf(msg + 16, "%llx:", &pfn) == 1)
		return pfn;
	if (!strncmp(msg, "Injecting memory failure", 24)) {
		const char *p = strstr(msg, "pfn ");
		*injected = p && sscanf(p + 4, "%llx", &pfn) == 1;
		return *injected ? pfn : 0;
	}
	return 0;
}

bool sdc_kmsg_classify(const char *msg, struct sdc_hwerr_event *ev)
{
	if (classify_edac(msg, ev) || classify_mce(msg, ev) || classify_aer(msg, ev))
		return true;
	bool injected;
	const unsigned long long pfn = failure_pfn(msg, &injected);
	if (!pfn || injected)
		return false;
	event_init(ev, SDC_FINDING_CORRUPTION, "memory-failure", msg);
	snprintf(ev->key, sizeof(ev->key), "pfn 0x%llx", pfn);
	snprintf(ev->operation, sizeof(ev->operation), "memory failure at page frame 0x%llx", pfn);
	return true;
}

/* One record's priority, timestamp and message; false when it is not in /dev/kmsg's format. */
static bool parse_record(char *rec, unsigned *prio, uint64_t *ts_us, const char **msg)
{
	char *semi = strchr(rec, ';');
	unsigned long long seq, ts;
	if (!semi || sscanf(rec, "%u,%llu,%llu", prio, &seq, &ts) != 3)
		return false;
	*ts_us = ts;
	*msg = semi + 1;
	return true;
}

/* Adds one record's event, unless it is a simulated memory failure (k->injected holds the pfns
 * the kernel was asked to poison). */
static void take_record(struct sdc_kmsg *k, char *rec, double start, struct sdc_hwerr_event *out, int *n, int max)
{
	unsigned prio;
	uint64_t ts;
	const char *msg;
	rec[strcspn(rec, "\n")] = '\0'; /* its continuation lines (" KEY=value") are not needed */
	if (!parse_record(rec, &prio, &ts, &msg) || prio >> 3 != 0)
		return; /* not a record, or not the kernel's (a process wrote it) */
	bool inj;
	const unsigned long long pfn = failure_pfn(msg, &inj);
	if (inj && k->ninjected < (int)SDC_ARRAY_SIZE(k->injected))
		k->injected[k->ninjected++] = pfn;
	for (int i = 0; pfn && !inj && i < k->ninjected; i++)
		if (k->injected[i] == pfn)
			return;
	if (*n >= max || !sdc_kmsg_classify(msg, &out[*n]))
		return;
	/* The record's time (the kernel's monotonic clock, as sdc_now) when it is within the run. */
	const double t = (double)ts / 1e6 - start, now = sdc_now() - start;
	out[*n].when = t >= 0 && t <= now + 1 ? t : now;
	(*n)++;
}

void sdc_kmsg_collect(struct sdc_kmsg *k, double start, struct sdc_hwerr_event *out, int *n, int max)
{
	if (!k->read || k->fd < 0)
		return;
	char *buf = malloc(RECORD_MAX + 1);
	if (!buf) {
		sdc_strlcpy(k->note, "out of memory: the kernel log was not read", sizeof(k->note));
		return;
	}
	size_t have = 0; /* bytes of a regular file's line not finished yet */
	while (k->records < RECORDS_MAX) {
		const ssize_t got = read(k->fd, buf + have, RECORD_MAX - have);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 && errno == EPIPE) {
			k->lost++; /* overwritten before it was read: the next read goes on at the oldest left */
			continue;
		}
		if (got < 0 && errno != EAGAIN)
			snprintf(k->note, sizeof(k->note), "reading %.60s stopped: %s", k->path, strerror(errno));
		if (got <= 0)
			break;
		have += (size_t)got;
		buf[have] = '\0';
		/* /dev/kmsg gives one record a read; a file, many lines: split at the newlines. */
		char *line = buf, *nl;
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			if (*line != ' ') {
				k->records++;
				take_record(k, line, start, out, n, max);
			}
			line = nl + 1;
		}
		have = strlen(line);
		memmove(buf, line, have);
		if (have == RECORD_MAX)
			have = 0; /* a line longer than any record: dropped */
	}
	/* A file's line not finished yet (its writer is still at it): read again next time. */
	if (have)
		lseek(k->fd, -(off_t)have, SEEK_CUR);
	if (k->records >= RECORDS_MAX)
		snprintf(k->note, sizeof(k->note), "read the first %d records of the run only", RECORDS_MAX);
	else if (k->lost)
		snprintf(k->note, sizeof(k->note),
			 "the kernel's ring buffer overwrote records of the run before they were read (%" PRIu64 " times)",
			 k->lost);
	free(buf);
}
