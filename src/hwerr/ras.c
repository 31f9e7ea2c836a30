/*
 * rasdaemon's database (hwerr/hwerr.h): the rows it added during the run. rasdaemon records the
 * kernel's RAS trace events (ras:mc_event, mce:mce_record, ras:aer_event) in SQLite at
 * RASSTATEDIR/RAS_DB_FNAME, /var/lib/rasdaemon/ras-mc_event.db (rasdaemon's configure.ac); its
 * tables, from rasdaemon's ras-record.c:
 *   mc_event   (id INTEGER PRIMARY KEY, timestamp TEXT, err_count, err_type TEXT, err_msg, label, mc, ...)
 *              err_type "Corrected", "Uncorrected", "Deferred", "Fatal" or "Info" (ras-mc-handler.c)
 *   mce_record (id, timestamp, ..., status, ..., cpu, ..., bank, cpuvendor, ..., bank_name, error_msg, ...)
 *   aer_event  (id, timestamp, dev_name, err_type "Corrected", "Uncorrected (Non-Fatal)" or
 *              "Uncorrected (Fatal)" (ras-aer-handler.c), err_msg)
 * Rows are told apart by id (each insert takes the next), not by their local-time timestamp.
 *
 * SQLite is loaded at run time (libsqlite3.so.0, dlopen) so sdcscan needs no SQLite to build or
 * start; the few functions used are declared here from the SQLite C interface (sqlite.org/c3ref):
 * sqlite3_open_v2 with SQLITE_OPEN_READONLY, sqlite3_prepare_v2, sqlite3_step (SQLITE_ROW 100,
 * SQLITE_DONE 101), sqlite3_column_int64/_text/_type (SQLITE_NULL 5), sqlite3_finalize,
 * sqlite3_close, sqlite3_errmsg, sqlite3_busy_timeout.
 */
#include "hwerr/hwerr.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/message.h"

typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;

enum { SQLITE_OK = 0, SQLITE_OPEN_READONLY = 1, SQLITE_NULL = 5, SQLITE_ROW = 100 };

static struct {
	void *handle;
	char why[160];
	int (*open)(const char *, sqlite3 **, int, const char *);
	int (*close)(sqlite3 *);
	int (*busy_timeout)(sqlite3 *, int);
	const char *(*errmsg)(sqlite3 *);
	int (*prepare)(sqlite3 *, const char *, int, sqlite3_stmt **, const char **);
	int (*step)(sqlite3_stmt *);
	int (*finalize)(sqlite3_stmt *);
	long long (*col_int64)(sqlite3_stmt *, int);
	const unsigned char *(*col_text)(sqlite3_stmt *, int);
	int (*col_type)(sqlite3_stmt *, int);
} sq;

static pthread_once_t sq_once = PTHREAD_ONCE_INIT;

static void sq_load(void)
{
	sq.handle = dlopen("libsqlite3.so.0", RTLD_NOW | RTLD_LOCAL);
	if (!sq.handle) {
		const char *e = dlerror();
		snprintf(sq.why, sizeof(sq.why), "libsqlite3.so.0 cannot be loaded (%.100s)", e ? e : "not found");
		return;
	}
	*(void **)&sq.open = dlsym(sq.handle, "sqlite3_open_v2");
	*(void **)&sq.close = dlsym(sq.handle, "sqlite3_close");
	*(void **)&sq.busy_timeout = dlsym(sq.handle, "sqlite3_busy_timeout");
	*(void **)&sq.errmsg = dlsym(sq.handle, "sqlite3_errmsg");
	*(void **)&sq.prepare = dlsym(sq.handle, "sqlite3_prepare_v2");
	*(void **)&sq.step = dlsym(sq.handle, "sqlite3_step");
	*(void **)&sq.finalize = dlsym(sq.handle, "sqlite3_finalize");
	*(void **)&sq.col_int64 = dlsym(sq.handle, "sqlite3_column_int64");
	*(void **)&sq.col_text = dlsym(sq.handle, "sqlite3_column_text");
	*(void **)&sq.col_type = dlsym(sq.handle, "sqlite3_column_type");
	if (!sq.open || !sq.close || !sq.busy_timeout || !sq.errmsg || !sq.prepare || !sq.step || !sq.finalize ||
	    !sq.col_int64 || !sq.col_text || !sq.col_type) {
		snprintf(sq.why, sizeof(sq.why), "libsqlite3.so.0 lacks a function of SQLite's C interface");
		dlclose(sq.handle);
		sq.handle = NULL;
	}
}

static sqlite3 *db_open(const char *path, char *why, size_t len)
{
	pthread_once(&sq_once, sq_load);
	if (!sq.handle) {
		sdc_strlcpy(why, sq.why, len);
		return NULL;
	}
	sqlite3 *db = NULL;
	if (sq.open(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		snprintf(why, len, "%.100s: %.80s", path, db ? sq.errmsg(db) : "cannot be opened");
		if (db)
			sq.close(db);
		return NULL;
	}
	sq.busy_timeout(db, 2000); /* rasdaemon may be writing a row */
	return db;
}

/* The highest id of table, 0 when empty, -1 when there is no such table (an older rasdaemon, or
 * one built without that event). */
static int64_t last_id(sqlite3 *db, const char *table)
{
	char sql[96];
	sqlite3_stmt *st;
	snprintf(sql, sizeof(sql), "SELECT MAX(id) FROM %s", table);
	if (sq.prepare(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	int64_t v = -1;
	if (sq.step(st) == SQLITE_ROW)
		v = sq.col_type(st, 0) == SQLITE_NULL ? 0 : sq.col_int64(st, 0);
	sq.finalize(st);
	return v;
}

void sdc_ras_open(const char *path, struct sdc_ras *r)
{
	memset(r, 0, sizeof(*r));
	sdc_strlcpy(r->path, path, sizeof(r->path));
	r->last_mc = r->last_mce = r->last_aer = -1;
	struct stat stb;
	if (stat(path, &stb)) {
		if (errno == ENOENT)
			snprintf(r->why, sizeof(r->why), "no %.150s (rasdaemon is not installed or has not run)", path);
		else
			snprintf(r->why, sizeof(r->why), "%.150s: %s", path, strerror(errno));
		return;
	}
	sqlite3 *db = db_open(path, r->why, sizeof(r->why));
	if (!db)
		return;
	r->last_mc = last_id(db, "mc_event");
	r->last_mce = last_id(db, "mce_record");
	r->last_aer = last_id(db, "aer_event");
	sq.close(db);
	if (r->last_mc < 0 && r->last_mce < 0 && r->last_aer < 0)
		snprintf(r->why, sizeof(r->why), "%.120s has none of rasdaemon's tables mc_event, mce_record, aer_event", path);
	else
		r->read = true;
}

static const char *text(sqlite3_stmt *st, int col)
{
	const unsigned char *t = sq.col_text(st, col);
	return t ? (const char *)t : "";
}

static struct sdc_hwerr_event *ras_event(struct sdc_hwerr_event *out, int *n, int max, bool unc, const char *kind)
{
	if (*n >= max)
		return NULL;
	struct sdc_hwerr_event *ev = &out[(*n)++];
	memset(ev, 0, sizeof(*ev));
	ev->cls = unc ? SDC_FINDING_CORRUPTION : SDC_FINDING_DEGRADED;
	sdc_strlcpy(ev->kind, kind, sizeof(ev->kind));
	sdc_strlcpy(ev->source, "rasdaemon", sizeof(ev->source));
	ev->gpu = -1;
	ev->count = 1;
	ev->when = -1;
	return ev;
}

/* Runs a SELECT of the rows after id from, calling row() on each. */
static void each_row(sqlite3 *db, const char *cols, const char *table, int64_t from,
		     void (*row)(sqlite3_stmt *, struct sdc_hwerr_event *, int *, int), struct sdc_hwerr_event *out,
		     int *n, int max)
{
	char sql[256];
	sqlite3_stmt *st;
	if (from < 0)
		from = 0; /* a table rasdaemon made during the run: all its rows are the run's */
	snprintf(sql, sizeof(sql), "SELECT %s FROM %s WHERE id > %" PRId64 " ORDER BY id", cols, table, from);
	if (sq.prepare(db, sql, -1, &st, NULL) != SQLITE_OK)
		return; /* no such table, or not these columns */
	while (sq.step(st) == SQLITE_ROW && *n < max)
		row(st, out, n, max);
	sq.finalize(st);
}

static void mc_row(sqlite3_stmt *st, struct sdc_hwerr_event *out, int *n, int max)
{
	const char *type = text(st, 3);
	const bool corrected = !strcmp(type, "Corrected");
	if (!corrected && strcmp(type, "Uncorrected") && strcmp(type, "Fatal") && strcmp(type, "Deferred"))
		return; /* "Info" */
	struct sdc_hwerr_event *ev = ras_event(out, n, max, !corrected, corrected ? "edac-corrected" : "edac-uncorrected");
	if (!ev)
		return;
	const int mc = (int)sq.col_int64(st, 6);
	const int64_t count = sq.col_int64(st, 2);
	ev->count = count > 0 ? count : 1;
	snprintf(ev->key, sizeof(ev->key), "mc%d", mc);
	snprintf(ev->operation, sizeof(ev->operation), "EDAC memory controller mc%d, %.60s", mc, text(st, 5));
	snprintf(ev->detail, sizeof(ev->detail),
		 "rasdaemon mc_event %" PRId64 " at %.32s: %" PRId64 " %s error%s %.80s on %.100s",
		 (int64_t)sq.col_int64(st, 0), text(st, 1), ev->count, type, ev->count == 1 ? "" : "s", text(st, 4),
		 text(st, 5));
}

static void mce_row(sqlite3_stmt *st, struct sdc_hwerr_event *out, int *n, int max)
{
	const uint64_t status = (uint64_t)sq.col_int64(st, 4);
	const int64_t vendor = sq.col_int64(st, 5);
	/* MCi_STATUS UC (bit 61); AMD's and Hygon's deferred (bit 44) is not correctable either
	 * (the kernel's mce_is_correctable; X86_VENDOR_AMD 2, X86_VENDOR_HYGON 9) */
	const bool unc = (status >> 61 & 1) || ((vendor == 2 || vendor == 9) && (status >> 44 & 1));
	struct sdc_hwerr_event *ev = ras_event(out, n, max, unc, "mce");
	if (!ev)
		return;
	const int cpu = (int)sq.col_int64(st, 2), bank = (int)sq.col_int64(st, 3);
	snprintf(ev->key, sizeof(ev->key), "cpu %d bank %d", cpu, bank);
	snprintf(ev->operation, sizeof(ev->operation), "machine check, CPU %d bank %d%s%.50s", cpu, bank,
		 text(st, 6)[0] ? ", " : "", text(st, 6));
	snprintf(ev->detail, sizeof(ev->detail),
		 "%s machine check on CPU %d bank %d: MCi_STATUS 0x%016" PRIx64 " (rasdaemon mce_record %" PRId64
		 " at %.32s: %.120s)",
		 unc ? "uncorrected" : "corrected", cpu, bank, status, (int64_t)sq.col_int64(st, 0), text(st, 1),
		 text(st, 7));
}

static void aer_row(sqlite3_stmt *st, struct sdc_hwerr_event *out, int *n, int max)
{
	const char *type = text(st, 3);
	const bool unc = !strncmp(type, "Uncorrected", 11);
	if (!unc && strcmp(type, "Corrected"))
		return;
	struct sdc_hwerr_event *ev = ras_event(out, n, max, unc, "pcie-aer");
	if (!ev)
		return;
	snprintf(ev->key, sizeof(ev->key), "pci %.40s", text(st, 2));
	snprintf(ev->operation, sizeof(ev->operation), "PCIe link of %.40s", text(st, 2));
	snprintf(ev->detail, sizeof(ev->detail), "%s PCIe error at %.40s (rasdaemon aer_event %" PRId64 " at %.32s: %.160s)",
		 type, text(st, 2), (int64_t)sq.col_int64(st, 0), text(st, 1), text(st, 4));
}

void sdc_ras_collect(struct sdc_ras *r, struct sdc_hwerr_event *out, int *n, int max)
{
	if (!r->read)
		return;
	char why[200];
	sqlite3 *db = db_open(r->path, why, sizeof(why));
	if (!db) {
		r->read = false;
		snprintf(r->why, sizeof(r->why), "read before the run, not after: %.160s", why);
		return;
	}
	each_row(db, "id, timestamp, err_count, err_type, err_msg, label, mc", "mc_event", r->last_mc, mc_row, out, n,
		 max);
	each_row(db, "id, timestamp, cpu, bank, status, cpuvendor, bank_name, error_msg", "mce_record", r->last_mce,
		 mce_row, out, n, max);
	each_row(db, "id, timestamp, dev_name, err_type, err_msg", "aer_event", r->last_aer, aer_row, out, n, max);
	sq.close(db);
}
