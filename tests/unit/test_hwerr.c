/*
 * hwerr/hwerr.h's readers and comparers on fake trees: EDAC counters read before and after (a DIMM's
 * uncorrected count grows, a legacy csrow channel's corrected count grows, errors the controller
 * could not place, counters reset during the run, nothing grows); kernel log messages written as
 * the kernel's format strings write them (edac_mc.c, mce/core.c, mce_amd.c, cper.c,
 * memory-failure.c, aer.c) and a fake /dev/kmsg file appended to after it was opened (records
 * before the open, a process's record and a simulated memory failure are not errors); rasdaemon's
 * database with rasdaemon's own schema (ras-record.c), rows added after the open; the merging of
 * sources; and the verdict of each Xid NVIDIA's documentation names.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "hwerr/hwerr.h"

static char root[256];

static void put(const char *rel, const char *text)
{
	char path[512], dir[512];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	/* make the parents */
	for (char *p = strchr(path + strlen(root) + 1, '/'); p; p = strchr(p + 1, '/')) {
		snprintf(dir, sizeof(dir), "%.*s", (int)(p - path), path);
		if (mkdir(dir, 0755) && errno != EEXIST)
			perror(dir);
	}
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		check_failures++;
		return;
	}
	fputs(text, f);
	fclose(f);
}

static void append(const char *rel, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	FILE *f = fopen(path, "a");
	if (!f) {
		perror(path);
		check_failures++;
		return;
	}
	fputs(text, f);
	fclose(f);
}

/* A host of two controllers: mc0 with DIMM objects (EDAC's current interface), mc1 with the
 * legacy csrow interface only. */
static void fake_edac(void)
{
	put("edac/mc/mc0/mc_name", "Skylake Socket#0 IMC#0\n");
	put("edac/mc/mc0/ce_count", "7\n");
	put("edac/mc/mc0/ue_count", "0\n");
	put("edac/mc/mc0/ce_noinfo_count", "0\n");
	put("edac/mc/mc0/ue_noinfo_count", "0\n");
	put("edac/mc/mc0/seconds_since_reset", "86400\n");
	put("edac/mc/mc0/dimm0/dimm_label", "CPU_SrcID#0_MC#0_Chan#0_DIMM#0\n");
	put("edac/mc/mc0/dimm0/dimm_location", "channel 0 slot 0\n");
	put("edac/mc/mc0/dimm0/dimm_ce_count", "7\n");
	put("edac/mc/mc0/dimm0/dimm_ue_count", "0\n");
	put("edac/mc/mc0/dimm1/dimm_label", "CPU_SrcID#0_MC#0_Chan#1_DIMM#0\n");
	put("edac/mc/mc0/dimm1/dimm_location", "channel 1 slot 0\n");
	put("edac/mc/mc0/dimm1/dimm_ce_count", "0\n");
	put("edac/mc/mc0/dimm1/dimm_ue_count", "0\n");
	put("edac/mc/mc1/mc_name", "i5000\n");
	put("edac/mc/mc1/ce_count", "5\n");
	put("edac/mc/mc1/ue_count", "0\n");
	put("edac/mc/mc1/csrow0/ue_count", "0\n");
	put("edac/mc/mc1/csrow0/ch0_ce_count", "5\n");
	put("edac/mc/mc1/csrow0/ch0_dimm_label", "DIMM_A1\n");
	put("edac/mc/mc1/csrow0/ch1_ce_count", "0\n");
	put("edac/mc/mc1/csrow0/ch1_dimm_label", "DIMM_B1\n");
}

static int read_edac(struct sdc_edac *e)
{
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/edac/mc", root);
	return sdc_edac_read(dir, e);
}

static void test_edac(void)
{
	struct sdc_edac b, a;
	struct sdc_hwerr_event ev[16];
	fake_edac();
	CHECK(read_edac(&b) == 0 && b.read && b.nmcs == 2);
	CHECK(b.nmcs == 2 && b.mcs[0].ndimms == 2 && b.mcs[1].ndimms == 3); /* two channels and the row */
	/* nothing new: nothing found, though the counters are not zero */
	CHECK(read_edac(&a) == 0 && sdc_edac_compare(&b, &a, ev, 16) == 0);
	sdc_edac_release(&a);

	/* one uncorrected error on mc0's second DIMM, two corrected ones on mc1's channel 1 */
	put("edac/mc/mc0/ue_count", "1\n");
	put("edac/mc/mc0/dimm1/dimm_ue_count", "1\n");
	put("edac/mc/mc1/ce_count", "7\n");
	put("edac/mc/mc1/csrow0/ch1_ce_count", "2\n");
	CHECK(read_edac(&a) == 0);
	int n = sdc_edac_compare(&b, &a, ev, 16);
	CHECK_MSG(n == 2, "%d events", n);
	if (n == 2) {
		CHECK(ev[0].cls == SDC_FINDING_CORRUPTION && !strcmp(ev[0].kind, "edac-uncorrected") && ev[0].count == 1);
		CHECK(!strcmp(ev[0].key, "mc0") && ev[0].gpu == -1 && !strcmp(ev[0].source, "edac"));
		CHECK_MSG(strstr(ev[0].detail, "CPU_SrcID#0_MC#0_Chan#1_DIMM#0") && strstr(ev[0].detail, "channel 1 slot 0"),
			  "%s", ev[0].detail);
		CHECK_MSG(strstr(ev[0].operation, "mc0") && strstr(ev[0].operation, "Skylake Socket#0 IMC#0"), "%s",
			  ev[0].operation);
		CHECK(ev[1].cls == SDC_FINDING_DEGRADED && !strcmp(ev[1].kind, "edac-corrected") && ev[1].count == 2);
		CHECK_MSG(!strcmp(ev[1].key, "mc1") && strstr(ev[1].detail, "DIMM_B1"), "%s", ev[1].detail);
	}
	sdc_edac_release(&a);

	/* errors the controller counted but could not place on a DIMM */
	put("edac/mc/mc0/ue_count", "3\n");
	put("edac/mc/mc0/ue_noinfo_count", "2\n");
	CHECK(read_edac(&a) == 0);
	n = sdc_edac_compare(&b, &a, ev, 16);
	int unplaced = 0;
	for (int i = 0; i < n; i++)
		unplaced += !strcmp(ev[i].key, "mc0") && ev[i].cls == SDC_FINDING_CORRUPTION && ev[i].count == 2 &&
			    strstr(ev[i].detail, "not placed on a DIMM");
	CHECK_MSG(unplaced == 1, "%d events, %d unplaced", n, unplaced);
	sdc_edac_release(&a);

	/* a legacy row's uncorrected count names the row and both its channels' labels */
	put("edac/mc/mc0/ue_count", "0\n");
	put("edac/mc/mc0/ue_noinfo_count", "0\n");
	put("edac/mc/mc0/dimm1/dimm_ue_count", "0\n");
	put("edac/mc/mc1/ce_count", "5\n");
	put("edac/mc/mc1/csrow0/ch1_ce_count", "0\n");
	put("edac/mc/mc1/ue_count", "1\n");
	put("edac/mc/mc1/csrow0/ue_count", "1\n");
	CHECK(read_edac(&a) == 0);
	n = sdc_edac_compare(&b, &a, ev, 16);
	CHECK_MSG(n == 1 && ev[0].cls == SDC_FINDING_CORRUPTION && strstr(ev[0].detail, "DIMM_A1 or DIMM_B1") &&
			  strstr(ev[0].detail, "csrow0"),
		  "%d: %s", n, n ? ev[0].detail : "");
	sdc_edac_release(&a);

	/* counters reset during the run (seconds_since_reset went down): what they hold now is new */
	put("edac/mc/mc1/ue_count", "0\n");
	put("edac/mc/mc1/csrow0/ue_count", "0\n");
	put("edac/mc/mc0/seconds_since_reset", "3\n");
	put("edac/mc/mc0/ce_count", "2\n");
	put("edac/mc/mc0/dimm0/dimm_ce_count", "2\n");
	CHECK(read_edac(&a) == 0);
	n = sdc_edac_compare(&b, &a, ev, 16);
	CHECK_MSG(n == 1 && ev[0].cls == SDC_FINDING_DEGRADED && ev[0].count == 2 && strstr(ev[0].detail, "reset"),
		  "%d: %s", n, n ? ev[0].detail : "");
	sdc_edac_release(&a);
	/* ... and a counter that went down without a reset is not an error */
	put("edac/mc/mc0/seconds_since_reset", "86500\n");
	CHECK(read_edac(&a) == 0 && sdc_edac_compare(&b, &a, ev, 16) == 0);
	sdc_edac_release(&a);
	sdc_edac_release(&b);

	/* no EDAC: not read, and why */
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/no-such-dir", root);
	CHECK(sdc_edac_read(dir, &b) == 0 && !b.read && strstr(b.why, "no EDAC driver"));
}

struct want {
	const char *msg;
	int cls; /* -1: not a hardware error */
	const char *kind, *key;
};

static void test_classify(void)
{
	/* Each written as the kernel's format string writes it (see hwerr/kmsg.c for where). */
	static const struct want w[] = {
		{ "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (channel:1 slot:0 page:0x1234 "
		  "offset:0x0 grain:32 syndrome:0x0 - err_code:0x0000:0x009f)",
		  SDC_FINDING_DEGRADED, "edac-corrected", "mc0" },
		{ "EDAC MC1: 2 UE memory read error on DIMM_B2 (channel:0 slot:1 page:0x0 offset:0x0 grain:32)",
		  SDC_FINDING_CORRUPTION, "edac-uncorrected", "mc1" },
		{ "EDAC DEVICE0: UE: l2 instance: cache0 block: 0 count: 1 'L2 parity'", SDC_FINDING_CORRUPTION,
		  "edac-uncorrected", "edac device 0" },
		/* MCi_STATUS 0xcc00008000010090: bits 63, 62, 59, 58, no UC (bit 61): corrected */
		{ "mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 8: cc00008000010090", SDC_FINDING_DEGRADED, "mce",
		  "cpu 3 bank 8" },
		/* 0xbe00000000800400: UC (61) and PCC (57) set */
		{ "mce: [Hardware Error]: CPU 0: Machine Check Exception: 5 Bank 4: be00000000800400",
		  SDC_FINDING_CORRUPTION, "mce", "cpu 0 bank 4" },
		{ "mce: [Hardware Error]: Machine check events logged", SDC_FINDING_DEGRADED, "mce", "mce-logged" },
		{ "[Hardware Error]: CPU:2 (19:1:1) MC17_STATUS[Over|UE|MiscV|AddrV|-|-|SyndV|UECC|-|Poison|-]: "
		  "0xfea0000000000108",
		  SDC_FINDING_CORRUPTION, "mce", "cpu 2 bank 17" },
		{ "[Hardware Error]: CPU:0 (17:31:0) MC22_STATUS[-|CE|MiscV|AddrV|-|-|SyndV|CECC|-|-|-]: "
		  "0x9c2040000000011b",
		  SDC_FINDING_DEGRADED, "mce", "cpu 0 bank 22" },
		/* no UC, but deferred (bit 44) or poisoned (bit 43): not correctable either */
		{ "[Hardware Error]: CPU:5 (19:1:1) MC16_STATUS[-|-|MiscV|AddrV|-|-|SyndV|-|Deferred|-|-]: "
		  "0x9c00100000000108",
		  SDC_FINDING_CORRUPTION, "mce", "cpu 5 bank 16" },
		{ "[Hardware Error]: CPU:5 (19:1:1) MC16_STATUS[-|CE|MiscV|AddrV|-|-|SyndV|-|-|Poison|-]: "
		  "0x9c00080000000108",
		  SDC_FINDING_CORRUPTION, "mce", "cpu 5 bank 16" },
		{ "{1}[Hardware Error]: event severity: fatal", SDC_FINDING_CORRUPTION, "hw-error", "apei" },
		{ "{2}[Hardware Error]: event severity: recoverable", SDC_FINDING_CORRUPTION, "hw-error", "apei" },
		{ "{3}[Hardware Error]: event severity: corrected", SDC_FINDING_DEGRADED, "hw-error", "apei" },
		{ "Memory failure: 0x12345: recovery action for dirty LRU page: Recovered", SDC_FINDING_CORRUPTION,
		  "memory-failure", "pfn 0x12345" },
		{ "pcieport 0000:00:1c.0: PCIe Bus Error: severity=Uncorrectable (Non-Fatal), type=Transaction Layer, "
		  "(Requester ID)",
		  SDC_FINDING_CORRUPTION, "pcie-aer", "pci 0000:00:1c.0" },
		{ "nvme 0000:01:00.0: PCIe Bus Error: severity=Correctable, type=Physical Layer, (Receiver ID)",
		  SDC_FINDING_DEGRADED, "pcie-aer", "pci 0000:01:00.0" },
		{ "pcieport 0000:00:03.0: PCIe Bus Error: severity=Corrected, type=Data Link Layer, id=0018(Transmitter ID)",
		  SDC_FINDING_DEGRADED, "pcie-aer", "pci 0000:00:03.0" },
		/* not hardware errors */
		{ "EDAC MC: Ver: 3.0.0", -1, NULL, NULL },
		{ "EDAC MC0: Giving out device to module skx_edac controller Skylake Socket#0 IMC#0: DEV 0000:3a:0a.0 "
		  "(INTERRUPT)",
		  -1, NULL, NULL },
		{ "mce: CPU0: Thermal monitoring enabled (TM1)", -1, NULL, NULL },
		{ "mce: [Hardware Error]: Run the above through 'mcelog --ascii'", -1, NULL, NULL },
		{ "{4}[Hardware Error]: event severity: info", -1, NULL, NULL },
		{ "Injecting memory failure for pfn 0x12345 at process virtual address 0x7f0000000000", -1, NULL, NULL },
		{ "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.65.06", -1, NULL, NULL },
	};
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		struct sdc_hwerr_event ev;
		const bool hit = sdc_kmsg_classify(w[i].msg, &ev);
		if (w[i].cls < 0) {
			CHECK_MSG(!hit, "taken for a hardware error: %s", w[i].msg);
			continue;
		}
		CHECK_MSG(hit && (int)ev.cls == w[i].cls && !strcmp(ev.kind, w[i].kind) && !strcmp(ev.key, w[i].key) &&
				  ev.gpu == -1 && !strcmp(ev.source, "kmsg"),
			  "%s: %s cls %d kind %s key %s", w[i].msg, hit ? "hit" : "missed", (int)ev.cls, hit ? ev.kind : "",
			  hit ? ev.key : "");
	}
	struct sdc_hwerr_event ev;
	CHECK(sdc_kmsg_classify(w[1].msg, &ev) && ev.count == 2 && strstr(ev.operation, "DIMM_B2"));
}

/* A fake /dev/kmsg: records before the open are old; after it, the kernel's count, a process's
 * (facility 1) does not, nor a memory failure the kernel was asked to simulate. */
static void test_kmsg_file(void)
{
	struct sdc_kmsg k;
	struct sdc_hwerr_event ev[16];
	int n = 0;
	char path[512];
	put("dev/kmsg", "3,100,5000000,-;EDAC MC0: 1 UE memory read error on DIMM_OLD (channel:0 slot:0 page:0x0 "
			"offset:0x0 grain:32)\n SUBSYSTEM=edac\n");
	snprintf(path, sizeof(path), "%s/dev/kmsg", root);
	sdc_kmsg_open(path, &k);
	CHECK_MSG(k.read, "%s", k.why);
	append("dev/kmsg", "4,101,6000000,-;EDAC MC2: 1 UE memory read error on DIMM_C3 (channel:2 slot:0 page:0x9 "
			   "offset:0x0 grain:32)\n SUBSYSTEM=edac\n DEVICE=+edac:mc2\n"
			   "12,102,6100000,-;mce: [Hardware Error]: CPU 1: Machine Check: 0 Bank 5: be00000000800400\n"
			   "6,103,6200000,-;Injecting memory failure for pfn 0xabc at process virtual address 0x7f0000\n"
			   "3,104,6200100,-;Memory failure: 0xabc: recovery action for dirty LRU page: Recovered\n"
			   "3,105,6300000,-;Memory failure: 0xdef: recovery action for clean LRU page: Recovered\n"
			   "6,106,6400000,-;random: crng init done\n");
	sdc_kmsg_collect(&k, 0, ev, &n, 16);
	sdc_kmsg_close(&k);
	CHECK_MSG(n == 2, "%d events", n);
	CHECK(k.records == 6);
	if (n == 2) {
		CHECK_MSG(!strcmp(ev[0].key, "mc2") && ev[0].cls == SDC_FINDING_CORRUPTION && strstr(ev[0].detail, "DIMM_C3"),
			  "%s %s", ev[0].key, ev[0].detail);
		CHECK_MSG(!strcmp(ev[1].kind, "memory-failure") && !strcmp(ev[1].key, "pfn 0xdef"), "%s", ev[1].key);
	}
	/* read while the run goes on (the poller does, every second): a record its writer has not
	 * finished is read when it is, once */
	sdc_kmsg_open(path, &k);
	n = 0;
	append("dev/kmsg", "0,107,7000000,-;mce: [Hardware Error]: CPU 2: Machine Check: 0 Bank 1: be0000");
	sdc_kmsg_collect(&k, 0, ev, &n, 16);
	CHECK_MSG(n == 0, "%d events from half a record", n);
	append("dev/kmsg", "0000800400\n");
	sdc_kmsg_collect(&k, 0, ev, &n, 16);
	sdc_kmsg_collect(&k, 0, ev, &n, 16);
	CHECK_MSG(n == 1 && !strcmp(ev[0].key, "cpu 2 bank 1") && ev[0].cls == SDC_FINDING_CORRUPTION, "%d events", n);
	sdc_kmsg_close(&k);
	/* unreadable: not read, and why */
	snprintf(path, sizeof(path), "%s/dev/none", root);
	sdc_kmsg_open(path, &k);
	CHECK(!k.read && strstr(k.why, "no ") && k.fd < 0);
	n = 0;
	sdc_kmsg_collect(&k, 0, ev, &n, 16);
	CHECK(n == 0);
}

/* rasdaemon's database, made by python3's sqlite3 with the tables of rasdaemon's ras-record.c. */
static int sqlite(const char *db, const char *sql)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
				   "c.executescript(sys.argv[2]); c.commit()' '%s' \"%s\"",
		 db, sql);
	return system(cmd);
}

static void test_ras(void)
{
	char db[512];
	struct sdc_ras r;
	struct sdc_hwerr_event ev[16];
	int n = 0;
	snprintf(db, sizeof(db), "%s/ras-mc_event.db", root);
	sdc_ras_open(db, &r);
	CHECK(!r.read && strstr(r.why, "rasdaemon is not installed"));
	if (sqlite(db, "CREATE TABLE mc_event (id INTEGER PRIMARY KEY, timestamp TEXT, err_count INTEGER, err_type TEXT, "
		       "err_msg TEXT, label TEXT, mc INTEGER, top_layer INTEGER, middle_layer INTEGER, lower_layer "
		       "INTEGER, address INTEGER, grain INTEGER, syndrome INTEGER, driver_detail TEXT);"
		       "CREATE TABLE aer_event (id INTEGER PRIMARY KEY, timestamp TEXT, dev_name TEXT, err_type TEXT, "
		       "err_msg TEXT);"
		       "CREATE TABLE mce_record (id INTEGER PRIMARY KEY, timestamp TEXT, mcgcap INTEGER, mcgstatus "
		       "INTEGER, status INTEGER, addr INTEGER, misc INTEGER, ip INTEGER, tsc INTEGER, walltime INTEGER, "
		       "ppin INTEGER, cpu INTEGER, cpuid INTEGER, apicid INTEGER, socketid INTEGER, cs INTEGER, bank "
		       "INTEGER, cpuvendor INTEGER, microcode INTEGER, bank_name TEXT, error_msg TEXT, mcgstatus_msg "
		       "TEXT, mcistatus_msg TEXT, mcastatus_msg TEXT, user_action TEXT, mc_location TEXT);"
		       "INSERT INTO mc_event (timestamp, err_count, err_type, err_msg, label, mc) VALUES "
		       "('2026-11-20 10:00:00 +0000', 1, 'Uncorrected', 'memory read error', 'DIMM_OLD', 0);")) {
		printf("test_hwerr: python3's sqlite3 cannot make a database: rasdaemon's part not tested\n");
		return;
	}
	sdc_ras_open(db, &r);
	if (!r.read && strstr(r.why, "libsqlite3")) {
		printf("test_hwerr: %s: rasdaemon's part not tested\n", r.why);
		return;
	}
	CHECK_MSG(r.read && r.last_mc == 1 && r.last_aer == 0 && r.last_mce == 0, "%s", r.why);
	/* during the run: a corrected DIMM error, an info event, an uncorrectable PCIe error, and a
	 * machine check whose MCi_STATUS has UC (bit 61) set: 0xb000000000000135 as SQLite's signed */
	CHECK(sqlite(db, "INSERT INTO mc_event (timestamp, err_count, err_type, err_msg, label, mc) VALUES "
			 "('2026-11-21 10:00:00 +0000', 3, 'Corrected', 'memory read error', 'DIMM_A1', 1);"
			 "INSERT INTO mc_event (timestamp, err_count, err_type, err_msg, label, mc) VALUES "
			 "('2026-11-21 10:00:01 +0000', 1, 'Info', 'scrub', 'DIMM_A1', 1);"
			 "INSERT INTO aer_event (timestamp, dev_name, err_type, err_msg) VALUES "
			 "('2026-11-21 10:00:02 +0000', '0000:3b:00.0', 'Uncorrected (Fatal)', 'Completion Timeout');"
			 "INSERT INTO mce_record (timestamp, status, cpu, bank, cpuvendor, bank_name, error_msg) VALUES "
			 "('2026-11-21 10:00:03 +0000', -5764607523034234571, 6, 7, 0, 'Intel: MC7', 'Memory read ECC');") ==
	      0);
	sdc_ras_collect(&r, ev, &n, 16);
	CHECK_MSG(n == 3, "%d events", n);
	if (n == 3) {
		CHECK(!strcmp(ev[0].kind, "edac-corrected") && ev[0].cls == SDC_FINDING_DEGRADED && ev[0].count == 3 &&
		      !strcmp(ev[0].key, "mc1") && strstr(ev[0].operation, "DIMM_A1"));
		CHECK(!strcmp(ev[1].kind, "mce") && ev[1].cls == SDC_FINDING_CORRUPTION && !strcmp(ev[1].key, "cpu 6 bank 7"));
		CHECK(!strcmp(ev[2].kind, "pcie-aer") && ev[2].cls == SDC_FINDING_CORRUPTION &&
		      !strcmp(ev[2].key, "pci 0000:3b:00.0"));
	}
}

static struct sdc_hwerr_event mk(const char *source, const char *key, const char *kind, enum sdc_finding_class cls)
{
	struct sdc_hwerr_event e = { .cls = cls, .gpu = -1, .count = 1, .when = -1 };
	snprintf(e.source, sizeof(e.source), "%s", source);
	snprintf(e.key, sizeof(e.key), "%s", key);
	snprintf(e.kind, sizeof(e.kind), "%s", kind);
	snprintf(e.detail, sizeof(e.detail), "%s", "d");
	return e;
}

static void test_merge(void)
{
	struct sdc_hwerr_event ev[8] = {
		mk("edac", "mc0", "edac-uncorrected", SDC_FINDING_CORRUPTION),
		mk("kmsg", "mce-logged", "mce", SDC_FINDING_DEGRADED),
		mk("kmsg", "mc0", "edac-uncorrected", SDC_FINDING_CORRUPTION),
		mk("kmsg", "cpu 3 bank 8", "mce", SDC_FINDING_DEGRADED),
		mk("kmsg", "cpu 3 bank 8", "mce", SDC_FINDING_DEGRADED),
		mk("rasdaemon", "mc0", "edac-uncorrected", SDC_FINDING_CORRUPTION),
		mk("kmsg", "mc0", "edac-corrected", SDC_FINDING_DEGRADED),
	};
	int n = sdc_hwerr_merge(ev, 7);
	CHECK_MSG(n == 3, "%d left", n);
	CHECK_MSG(!strcmp(ev[0].source, "edac") && ev[0].count == 1 && strstr(ev[0].detail, "also in kmsg, rasdaemon"),
		  "%s", ev[0].detail);
	CHECK(!strcmp(ev[1].key, "cpu 3 bank 8") && ev[1].count == 2);
	CHECK(!strcmp(ev[2].kind, "edac-corrected"));
	/* alone, "machine check events logged" is kept: something was logged */
	ev[0] = mk("kmsg", "mce-logged", "mce", SDC_FINDING_DEGRADED);
	ev[1] = mk("kmsg", "pci 0000:00:1c.0", "pcie-aer", SDC_FINDING_DEGRADED);
	CHECK(sdc_hwerr_merge(ev, 2) == 2);
	/* the same Xid on two GPUs is two events */
	ev[0] = mk("nvml", "xid 48", "gpu-xid", SDC_FINDING_CORRUPTION);
	ev[1] = ev[0];
	ev[1].gpu = 1;
	ev[2] = ev[0];
	CHECK(sdc_hwerr_merge(ev, 3) == 2 && ev[0].count == 2);
}

static void test_xid(void)
{
	/* NVIDIA's Xid documentation: uncorrectable or uncontained memory errors, retired or
	 * unremappable memory, a GPU off the bus, a failed NVLink are hardware errors (CRITICAL); a
	 * high corrected-error rate is wear (WARNING); application- or driver-first Xids and unknown
	 * ones say the work was disturbed (UNKNOWN). */
	static const unsigned critical[] = { 48, 63, 64, 74, 79, 94, 95 };
	static const unsigned unknown[] = { 13, 31, 43, 45, 62, 119, 120, 999, 12345 };
	const char *name, *why;
	for (size_t i = 0; i < sizeof(critical) / sizeof(critical[0]); i++)
		CHECK_MSG(sdc_xid_class(critical[i], &name, &why) == SDC_FINDING_CORRUPTION, "Xid %u", critical[i]);
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
		CHECK_MSG(sdc_xid_class(unknown[i], &name, &why) == SDC_FINDING_ERROR, "Xid %u", unknown[i]);
	CHECK(sdc_xid_class(92, &name, &why) == SDC_FINDING_DEGRADED && strstr(name, "single-bit"));
	CHECK(sdc_xid_class(79, &name, &why) == SDC_FINDING_CORRUPTION && strstr(name, "fallen off the bus"));
}

int main(void)
{
	snprintf(root, sizeof(root), "%s/sdcscan-hwerr.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(root)) {
		perror(root);
		return 1;
	}
	test_edac();
	test_classify();
	test_kmsg_file();
	test_ras();
	test_merge();
	test_xid();
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", root);
	return check_done("test_hwerr");
}
