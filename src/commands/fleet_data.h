/*
 * sdcscan fleet's data, shared by its files: fleet_read.c reads one report into a record of the
 * few fields the comparison needs; fleet_store.c keeps what stands for each host, compactly
 * (memory grows with the hosts and the distinct kinds of report, not with the reports' bytes),
 * and votes; fleet.c is the command (reading in threads, text and JSON); fleet_html.c writes
 * --html and --csv; fleet_bench.c is `sdcscan bench fleet`.
 *
 * What is kept of a host: its name, path, times and verdict, its first findings, its "shape"
 * (the list of its results: probe/variant, device, model, kernel, the work's key; hosts of one
 * kind share one shape), each result's rate, and only the results that differ from the first
 * host of its shape (another digest, a status other than ok). A fleet of 10,000 alike hosts
 * holds one shape and 10,000 arrays of rates.
 */
#ifndef SDC_FLEET_DATA_H
#define SDC_FLEET_DATA_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <xxhash.h>

#define FL_NONE UINT32_MAX

/* ---- one report, as read (fleet_read.c); strings are offsets into arena, 0 is "" ---- */

struct fleet_res {
	uint32_t probe, variant, device, kernel, status, digest, rate_unit;
	long long iterations; /* work_digest.iterations */
	double rate;
};
struct fleet_dev {
	uint32_t id, model, type;
};
struct fleet_probe {
	uint32_t name, options; /* options: the canonical JSON text (sorted keys, compact), 0 when none */
};
struct fleet_find {
	uint32_t cls, kind, device, probe, variant, detail;
};

struct fleet_rec {
	char *arena;
	size_t alen, acap;
	uint32_t host, kind, seed, start, status, summary, node, blas_lib, blas_ver, blas_core;
	uint32_t machine_id, product_uuid, product_serial, boot_id; /* host's identity, 0 when none */
	long long major, code, sequence;
	bool major_int, code_int, duration_num, run_obj, results_arr, devices_arr, findings_arr, dup;
	double duration;
	struct fleet_res *res;
	size_t nres, cres;
	struct fleet_dev *dev;
	size_t ndev, cdev;
	struct fleet_probe *probe;
	size_t nprobe, cprobe;
	struct fleet_find *find; /* every finding (their classes check the verdict) */
	size_t nfind, cfind;
};

#define FL_S(rec, off) ((rec)->arena + (off))

/* Reads text into rec (reset first); 0 when it is a report fleet can take, -1 when not (the
 * reason is then jansson's, sdc_report_parse). The fast path: no JSON tree is built. */
int sdc_fleet_rec_read(struct fleet_rec *rec, const char *text, size_t len);
void sdc_fleet_rec_release(struct fleet_rec *rec);
/* The report's end (run.start + duration), Unix time; -1 when malformed. */
double sdc_fleet_rec_end(const struct fleet_rec *rec);

/* ---- the store (fleet_store.c) ---- */

/* Interned byte strings: the same bytes get the same id, ids count up from 0. */
struct fl_intern {
	uint64_t *slots; /* (hash & ~mask) | (id + 1); 0 empty */
	size_t nslots;
	uint32_t *off, *len;
	uint32_t n, cap;
	char *bytes;
	size_t blen, bcap;
};
uint32_t sdc_fl_intern(struct fl_intern *t, const void *p, size_t n);
uint32_t sdc_fl_intern_find(const struct fl_intern *t, const void *p, size_t n);
static inline const char *fl_str(const struct fl_intern *t, uint32_t id)
{
	return t->bytes + t->off[id];
}
void sdc_fl_intern_release(struct fl_intern *t);

/* One result of a shape. */
struct fl_sres {
	uint32_t pv, dev, model, type, unit, group;
	uint32_t ref; /* the digest of the shape's first host (id in strs; FL_NONE: no digest) */
};
/* A shape is known by the XXH3-128 of its text (fleet_store.c shape_text): the text is not kept. */
struct fl_shape {
	struct fl_sres *res;
	XXH128_hash_t *refhash; /* the first host's digests' hashes: the others compare without a lock */
	uint32_t nres;
};

/* A group of the same work: its key's parts, for the text and JSON. */
struct fl_group {
	uint32_t pv, seed, model, kernel, blas, options; /* ids in store.strs */
	long long iterations;
	/* the vote (sdc_fleet_vote_all) */
	uint32_t devices, agreeing, best; /* best: digest id, FL_NONE when there is no majority */
	uint32_t order;                  /* its place when sorted by key */
};

struct fl_exc {
	uint32_t index;  /* the result's index in the shape */
	uint32_t digest; /* FL_NONE: the shape's ref */
	uint32_t status; /* id in store.strs; FL_NONE: "ok" */
};

#define FL_FINDINGS_KEPT 8
struct fl_host {
	uint32_t name; /* id in store.hostnames: "hostname\0identity" (fl_host_identity) */
	char *label;   /* where machines share a hostname: "hostname (machine-id 1234abcd5678)"; else NULL */
	char *path;
	double end;
	bool scheduled, future, present;
	long long sequence;
	int verdict;     /* the node's where the report has one, else the run's */
	char *summary;
	uint32_t shape;
	float *rate;     /* per result of the shape; NAN where none */
	struct fl_exc *exc;
	uint32_t nexc;
	uint32_t nfind; /* findings in the report */
	uint32_t nkept;
	char *find[FL_FINDINGS_KEPT]; /* "cls: device probe/variant kind: detail" */
};

struct fl_named {
	char *a, *b; /* path and why, or host and path */
	double x;    /* ahead_seconds */
};

struct fl_minority {
	uint32_t host, index, group, digest;
};

struct fl_store {
	pthread_mutex_t lock;       /* hosts, strs, exceptions, lists */
	pthread_rwlock_t shape_lock; /* shapes, groups */
	struct fl_intern strs;      /* probe/variants, devices, models, digests, statuses, key parts */
	struct fl_intern hostnames; /* id = index into hosts */
	struct fl_intern shape_ix;  /* a shape's 16-byte hash -> shape id */
	struct fl_intern group_ix;  /* a group's key bytes -> group id */
	struct fl_host *hosts;
	size_t nhosts, chosts;
	struct fl_shape *shapes;
	uint32_t nshapes, cshapes;
	struct fl_group *groups;
	uint32_t ngroups, cgroups;
	struct fl_named *unreadable, *skewed, *links, *samename;
	size_t nunreadable, cunreadable, nskewed, cskewed, nlinks, clinks, nsamename, csamename;
	double now;
	long files;
	/* after sdc_fleet_vote_all */
	struct fl_minority *minority;
	size_t nminority;
	uint32_t *host_order; /* hosts sorted by name */
	uint32_t *group_order;
};

/*
 * A host is its hostname and its machine's identity: the report's host.machine_id, else
 * host.product_uuid, else host.product_serial; a report without any (older than schema 1.2) is
 * known by the folder it lies in. Machines that share a hostname are each a host, named apart by
 * fl_host_name and listed in store.samename.
 */
static inline const char *fl_host_identity(const struct fl_intern *hostnames, uint32_t name)
{
	const char *s = hostnames->bytes + hostnames->off[name];
	return s + strlen(s) + 1;
}
/* The host as the outputs name it: its hostname, with its identity where another machine shares it. */
const char *sdc_fl_host_name(const struct fl_store *st, const struct fl_host *h);

int sdc_fleet_store_init(struct fl_store *st, double now);
void sdc_fleet_store_release(struct fl_store *st);

/* Per-thread scratch for sdc_fleet_store_add. */
struct fl_scratch {
	char *text;
	size_t tlen, tcap;
	struct fl_exc *exc;
	size_t nexc, cexc;
};
void sdc_fl_scratch_release(struct fl_scratch *s);

/* Takes one read report (thread-safe): it stands for its host if newer than what does. */
void sdc_fleet_store_add(struct fl_store *st, struct fl_scratch *sc, const struct fleet_rec *rec, const char *path);
void sdc_fleet_store_unreadable(struct fl_store *st, const char *path, const char *why);

/* The vote of every group; minority, host_order and group_order filled. */
int sdc_fleet_vote_all(struct fl_store *st);

/* The group's whole key, as --json has always given it. */
void sdc_fleet_group_key(const struct fl_store *st, const struct fl_group *g, char *buf, size_t len);
/* The group named by only what sets it apart from the other groups of its probe/variant. */
void sdc_fleet_group_short(const struct fl_store *st, const struct fl_group *g, char *buf, size_t len);

/* The digest of result i of host h (the exception's or the shape's). */
uint32_t sdc_fl_host_digest(const struct fl_store *st, const struct fl_host *h, uint32_t i);
/* Its status id (FL_NONE: ok). */
uint32_t sdc_fl_host_status(const struct fl_store *st, const struct fl_host *h, uint32_t i);

/* The host's level in the fleet (an enum sdc_verdict) and why (fleet_store.c says the rule). */
int sdc_fl_host_level(const struct fl_store *st, const struct fl_host *h, bool minority, double max_age, char *why,
		      size_t len);

/* Reader threads: asked (> 0), else one an online CPU (fleet.c). */
int sdc_fleet_threads(int64_t asked);

/* ---- outputs (fleet_html.c) ---- */
struct fleet_out {
	const char *html, *csv;
	double max_age;
	char **missing;
	size_t nmissing;
};
int sdc_fleet_write_html(const struct fl_store *st, const struct fleet_out *o, int verdict);
int sdc_fleet_write_csv(const struct fl_store *st, const struct fleet_out *o);

#endif
