/*
 * One report read for the fleet (fleet_data.h): the fields the comparison needs, taken with the
 * scanner (base/json_scan.h) without building a JSON tree, and checked as sdc_report_parse checks
 * every report a reader takes (runner/report_read.c): this schema major, a verdict whose code and
 * status agree, run.start and duration, results, devices and findings lists, a verdict no less
 * than its findings and results say. A key the reader reads given twice refuses the report
 * (jansson's JSON_REJECT_DUPLICATES). The reason a report is refused is jansson's (fleet.c).
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/json_scan.h"
#include "base/verdict.h"
#include "commands/fleet_data.h"
#include "runner/report.h"
#include "run/record.h"

#define STR_MAX 4096 /* longer strings are cut (no field fleet compares comes near) */

static uint32_t put(struct fleet_rec *r, const char *s, size_t n)
{
	if (r->alen + n + 1 > r->acap) {
		size_t cap = r->acap ? r->acap : 1 << 16;
		while (cap < r->alen + n + 1)
			cap *= 2;
		char *a = realloc(r->arena, cap);
		if (!a)
			return 0;
		r->arena = a, r->acap = cap;
	}
	const uint32_t off = (uint32_t)r->alen;
	memcpy(r->arena + off, s, n);
	r->arena[off + n] = '\0';
	r->alen += n + 1;
	return off;
}

/* A string member into the arena; 0 ("") when the value is not a string (it is skipped). */
static bool str(struct sdc_jscan *s, struct fleet_rec *r, uint32_t *out)
{
	if (sdc_jscan_peek(s) != SDC_JSTRING) {
		*out = 0;
		return sdc_jscan_skip(s);
	}
	char buf[STR_MAX];
	size_t n;
	if (!sdc_jscan_string(s, buf, sizeof(buf), &n))
		return false;
	*out = put(r, buf, n < sizeof(buf) ? n : sizeof(buf) - 1);
	return true;
}

/* An integer member (json_integer_value: 0 when not an integer). */
static bool integer(struct sdc_jscan *s, long long *v, bool *is)
{
	bool is_int = false;
	double d;
	*v = 0;
	if (is)
		*is = false;
	if (sdc_jscan_peek(s) != SDC_JINT)
		return sdc_jscan_skip(s);
	if (!sdc_jscan_number(s, &is_int, v, &d))
		return false;
	if (!is_int)
		*v = 0;
	if (is)
		*is = is_int;
	return true;
}

/* A number member (json_number_value: 0 when not a number). */
static bool num(struct sdc_jscan *s, double *v, bool *is)
{
	bool is_int;
	long long i;
	*v = 0;
	if (is)
		*is = sdc_jscan_peek(s) == SDC_JINT;
	if (sdc_jscan_peek(s) != SDC_JINT)
		return sdc_jscan_skip(s);
	return sdc_jscan_number(s, &is_int, &i, v);
}

/* Whether key bit b was seen in this object already (a key given twice: refused). */
static bool twice(struct fleet_rec *r, unsigned *seen, unsigned b)
{
	if (*seen & b)
		r->dup = true;
	*seen |= b;
	return r->dup;
}

#define GROW(arr, n, cap)                                                                \
	do {                                                                             \
		if ((n) == (cap)) {                                                      \
			size_t c_ = (cap) ? 2 * (cap) : 64;                              \
			void *p_ = realloc((arr), c_ * sizeof(*(arr)));                  \
			if (!p_)                                                         \
				return false;                                            \
			(arr) = p_, (cap) = c_;                                          \
		}                                                                        \
	} while (0)

/* The members of an object, each handed to fn(s, r, key, seen, arg); others skipped by fn. */
typedef bool (*member_fn)(struct sdc_jscan *s, struct fleet_rec *r, const char *key, unsigned *seen, void *arg);

static bool object(struct sdc_jscan *s, struct fleet_rec *r, member_fn fn, void *arg)
{
	if (sdc_jscan_peek(s) != SDC_JOBJECT)
		return sdc_jscan_skip(s);
	if (!sdc_jscan_open(s, '{'))
		return false;
	size_t n = 0;
	unsigned seen = 0;
	char key[32];
	int k;
	while ((k = sdc_jscan_key(s, &n, key, sizeof(key))) > 0)
		if (!fn(s, r, key, &seen, arg) || r->dup)
			return false;
	return k == 0;
}

/* The elements of an array, each handed to fn (objects) or skipped. *is: it was an array. */
static bool array(struct sdc_jscan *s, struct fleet_rec *r, member_fn fn, bool (*start)(struct fleet_rec *), bool *is)
{
	*is = sdc_jscan_peek(s) == SDC_JARRAY;
	if (!*is)
		return sdc_jscan_skip(s);
	if (!sdc_jscan_open(s, '['))
		return false;
	size_t n = 0;
	int k;
	while ((k = sdc_jscan_item(s, &n)) > 0) {
		if (sdc_jscan_peek(s) != SDC_JOBJECT) {
			if (!sdc_jscan_skip(s))
				return false;
			continue;
		}
		if (!start(r) || !object(s, r, fn, NULL))
			return false;
	}
	return k == 0;
}

static bool m_digest(struct sdc_jscan *s, struct fleet_rec *r, const char *key, unsigned *seen, void *arg)
{
	(void)arg;
	struct fleet_res *x = &r->res[r->nres - 1];
	if (!strcmp(key, "sha256"))
		return !twice(r, seen, 1) && str(s, r, &x->digest);
	if (!strcmp(key, "iterations"))
		return !twice(r, seen, 2) && integer(s, &x->iterations, NULL);
	return sdc_jscan_skip(s);
}

static bool m_result(struct sdc_jscan *s, struct fleet_rec *r, const char *key, unsigned *seen, void *arg)
{
	(void)arg;
	struct fleet_res *x = &r->res[r->nres - 1];
	static const char *const names[] = { "probe", "variant", "device", "kernel", "status", "rate_unit" };
	uint32_t *fields[] = { &x->probe, &x->variant, &x->device, &x->kernel, &x->status, &x->rate_unit };
	for (unsigned i = 0; i < 6; i++)
		if (!strcmp(key, names[i]))
			return !twice(r, seen, 1u << i) && str(s, r, fields[i]);
	if (!strcmp(key, "rate"))
		return !twice(r, seen, 1u << 6) && num(s, &x->rate, NULL);
	if (!strcmp(key, "work_digest"))
		return !twice(r, seen, 1u << 7) && object(s, r, m_digest, NULL);
	return sdc_jscan_skip(s);
}

static bool new_result(struct fleet_rec *r)
{
	GROW(r->res, r->nres, r->cres);
	memset(&r->res[r->nres++], 0, sizeof(r->res[0]));
	return true;
}

static bool m_device(struct sdc_jscan *s, struct fleet_rec *r, const char *key, unsigned *seen, void *arg)
{
	(void)arg;
	struct fleet_dev *d = &r->dev[r->ndev - 1];
	if (!strcmp(key, "id"))
		return !twice(r, seen, 1) && str(s, r, &d->id);
	if (!strcmp(key, "model"))
		return !twice(r, seen, 2) && str(s, r, &d->model);
	if (!strcmp(key, "type"))
		return !twice(r, seen, 4) && str(s, r, &d->type);
	return sdc_jscan_skip(s);
}

static bool new_device(struct fleet_rec *r)
{
	GROW(r->dev, r->ndev, r->cdev);
	memset(&r->dev[r->ndev++], 0, sizeof(r->dev[0]));
	return true;
}

static bool m_finding(struct sdc_jscan *s, struct fleet_rec *r, const char *key, unsigned *seen, void *arg)
{
	(void)arg;
	struct fleet_find *f = &r->find[r->nfind - 1];
	static const char *const names[] = { "class", "kind", "device", "probe", "variant", "detail" };
	uint32_t *fields[] = { &f->cls, &f->kind, &f->device, &f->probe, &f->variant, &f->detail };
	for (unsigned i = 0; i < 6; i++)
		if (!strcmp(key, names[i]))
			return !twice(r, seen, 1u << i) && str(s, r, fields[i]);
	return sdc_jscan_skip(s);
}

static bool new_finding(struct fleet_rec *r)
{
	GROW(r->find, r->nfind, r->cfind);
	memset(&r->find[r->nfind++], 0, sizeof(r->find[0]));
	return true;
}

/* A probe's options: jansson reads this small object, and writes it back sorted (the work's key). */
static bool options(struct sdc_jscan *s, struct fleet_rec *r, uint32_t *out)
{
	*out = 0;
	/* (what is not an object or array writes as "{}", as json_dumps without JSON_ENCODE_ANY) */
	if (sdc_jscan_peek(s) != SDC_JOBJECT && sdc_jscan_peek(s) != SDC_JARRAY)
		return sdc_jscan_skip(s);
	const char *from = sdc_jscan_here(s);
	if (!sdc_jscan_skip(s))
		return false;
	json_t *o = json_loadb(from, (size_t)(s->p - from), JSON_REJECT_DUPLICATES, NULL);
	char *text = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(o);
	if (!text) {
		r->dup = true; /* jansson refuses it: so does the report's reader */
		return false;
	}
	*out = put(r, text, strlen(text));
	free(text);
	return true;
}

static bool m_probe(struct sdc_jscan *s, struct fleet_rec *r, const char *key, unsigned *seen, void *arg)
{
	(void)arg;
	struct fleet_probe *p = &r->probe[r->nprobe - 1];
	if (!strcmp(key, "name"))
		return !twice(r, seen, 1) && str(s, r, &p->name);
	if (!strcmp(key, "options"))
		return !twice(r, seen, 2) && options(s, r, &p->options);
	return sdc_jscan_skip(s);
}

static bool new_probe(struct fleet_rec *r)
{
	GROW(r->probe, r->nprobe, r->cprobe);
	memset(&r->probe[r->nprobe++], 0, sizeof(r->probe[0]));
	return true;
}

static bool m_blas(struct sdc_jscan *s, struct fleet_rec *r, const char *key, unsigned *seen, void *arg)
{
	(void)arg;
	if (!strcmp(key, "library"))
		return !twice(r, seen, 1) && str(s, r, &r->blas_lib);
	if (!strcmp(key, "version"))
		return !twice(r, seen, 2) && str(s, r, &r->blas_ver);
	if (!strcmp(key, "core"))
		return !twice(r, seen, 4) && str(s, r, &r->blas_core);
	return sdc_jscan_skip(s);
}

static bool m_env(struct sdc_jscan *s, struct fleet_rec *r, const char *key, unsigned *seen, void *arg)
{
	(void)arg;
	if (!strcmp(key, "blas"))
		return !twice(r, seen, 1) && object(s, r, m_blas, NULL);
	return sdc_jscan_skip(s);
}

static bool m_run(struct sdc_jscan *s, struct fleet_rec *r, const char *key, unsigned *seen, void *arg)
{
	(void)arg;
	bool is;
	if (!strcmp(key, "kind"))
		return !twice(r, seen, 1) && str(s, r, &r->kind);
	if (!strcmp(key, "seed"))
		return !twice(r, seen, 2) && str(s, r, &r->seed);
	if (!strcmp(key, "start"))
		return !twice(r, seen, 4) && str(s, r, &r->start);
	if (!strcmp(key, "duration_seconds"))
		return !twice(r, seen, 8) && num(s, &r->duration, &r->duration_num);
	if (!strcmp(key, "sequence"))
		return !twice(r, seen, 16) && integer(s, &r->sequence, NULL);
	if (!strcmp(key, "probes"))
		return !twice(r, seen, 32) && array(s, r, m_probe, new_probe, &is);
	if (!strcmp(key, "environment"))
		return !twice(r, seen, 64) && object(s, r, m_env, NULL);
	return sdc_jscan_skip(s);
}

static bool m_host(struct sdc_jscan *s, struct fleet_rec *r, const char *key, unsigned *seen, void *arg)
{
	(void)arg;
	if (!strcmp(key, "hostname"))
		return !twice(r, seen, 1) && str(s, r, &r->host);
	/* the machine's identity (reports before schema 1.2 have none: fleet tells those apart by folder) */
	if (!strcmp(key, "machine_id"))
		return !twice(r, seen, 2) && str(s, r, &r->machine_id);
	if (!strcmp(key, "product_uuid"))
		return !twice(r, seen, 4) && str(s, r, &r->product_uuid);
	if (!strcmp(key, "product_serial"))
		return !twice(r, seen, 8) && str(s, r, &r->product_serial);
	if (!strcmp(key, "boot_id"))
		return !twice(r, seen, 16) && str(s, r, &r->boot_id);
	return sdc_jscan_skip(s);
}

static bool m_verdict(struct sdc_jscan *s, struct fleet_rec *r, const char *key, unsigned *seen, void *arg)
{
	(void)arg;
	if (!strcmp(key, "code"))
		return !twice(r, seen, 1) && integer(s, &r->code, &r->code_int);
	if (!strcmp(key, "status"))
		return !twice(r, seen, 2) && str(s, r, &r->status);
	if (!strcmp(key, "summary"))
		return !twice(r, seen, 4) && str(s, r, &r->summary);
	return sdc_jscan_skip(s);
}

static bool m_node(struct sdc_jscan *s, struct fleet_rec *r, const char *key, unsigned *seen, void *arg)
{
	(void)arg;
	if (!strcmp(key, "verdict"))
		return !twice(r, seen, 1) && str(s, r, &r->node);
	return sdc_jscan_skip(s);
}

static bool schema(struct sdc_jscan *s, struct fleet_rec *r)
{
	if (sdc_jscan_peek(s) != SDC_JARRAY)
		return sdc_jscan_skip(s);
	if (!sdc_jscan_open(s, '['))
		return false;
	size_t n = 0;
	int k;
	while ((k = sdc_jscan_item(s, &n)) > 0)
		if (!(n == 1 ? integer(s, &r->major, &r->major_int) : sdc_jscan_skip(s)))
			return false;
	return k == 0;
}

static bool m_top(struct sdc_jscan *s, struct fleet_rec *r, const char *key, unsigned *seen, void *arg)
{
	(void)arg;
	if (!strcmp(key, "schema_version"))
		return !twice(r, seen, 1) && schema(s, r);
	if (!strcmp(key, "host"))
		return !twice(r, seen, 2) && object(s, r, m_host, NULL);
	if (!strcmp(key, "devices"))
		return !twice(r, seen, 4) && array(s, r, m_device, new_device, &r->devices_arr);
	if (!strcmp(key, "run")) {
		r->run_obj = sdc_jscan_peek(s) == SDC_JOBJECT;
		return !twice(r, seen, 8) && object(s, r, m_run, NULL);
	}
	if (!strcmp(key, "results"))
		return !twice(r, seen, 16) && array(s, r, m_result, new_result, &r->results_arr);
	if (!strcmp(key, "findings"))
		return !twice(r, seen, 32) && array(s, r, m_finding, new_finding, &r->findings_arr);
	if (!strcmp(key, "verdict"))
		return !twice(r, seen, 64) && object(s, r, m_verdict, NULL);
	if (!strcmp(key, "node"))
		return !twice(r, seen, 128) && object(s, r, m_node, NULL);
	return sdc_jscan_skip(s);
}

double sdc_fleet_rec_end(const struct fleet_rec *r)
{
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	if (!r->start || !r->duration_num)
		return -1;
	const char *end = strptime(FL_S(r, r->start), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!end || *end)
		return -1;
	return (double)timegm(&tm) + r->duration;
}

/* sdc_report_parse's inconsistent(): a verdict less than the findings or results say. */
static bool inconsistent(const struct fleet_rec *r, enum sdc_verdict v)
{
	for (size_t i = 0; i < r->nfind; i++)
		for (int c = SDC_FINDING_CORRUPTION; c <= SDC_FINDING_HANG; c++)
			if (!strcmp(FL_S(r, r->find[i].cls), sdc_finding_class_name((enum sdc_finding_class)c)) &&
			    sdc_verdict_worst(v, sdc_finding_class_verdict((enum sdc_finding_class)c)) != v)
				return true;
	for (size_t i = 0; i < r->nres; i++) {
		const char *st = FL_S(r, r->res[i].status);
		if ((!strcmp(st, "corrupt") || !strcmp(st, "crashed")) && v != SDC_CRITICAL)
			return true;
	}
	return false;
}

int sdc_fleet_rec_read(struct fleet_rec *r, const char *text, size_t len)
{
	r->alen = 0;
	r->nres = r->ndev = r->nprobe = r->nfind = 0;
	char *keep = r->arena;
	size_t kcap = r->acap;
	struct fleet_res *res = r->res;
	struct fleet_dev *dev = r->dev;
	struct fleet_probe *probe = r->probe;
	struct fleet_find *find = r->find;
	const size_t cr = r->cres, cd = r->cdev, cp = r->cprobe, cf = r->cfind;
	memset(r, 0, sizeof(*r));
	r->arena = keep, r->acap = kcap, r->res = res, r->dev = dev, r->probe = probe, r->find = find;
	r->cres = cr, r->cdev = cd, r->cprobe = cp, r->cfind = cf;
	put(r, "", 0); /* offset 0: "" */
	if (!r->arena)
		return -1;
	struct sdc_jscan s;
	sdc_jscan_init(&s, text, len);
	if (sdc_jscan_peek(&s) != SDC_JOBJECT || !object(&s, r, m_top, NULL) || !sdc_jscan_end(&s) || r->dup)
		return -1;
	if (!r->major_int || r->major != SDC_SCHEMA_MAJOR)
		return -1;
	if (!r->code_int || r->code < SDC_OK || r->code > SDC_UNKNOWN ||
	    strcmp(FL_S(r, r->status), sdc_verdict_name((enum sdc_verdict)r->code)))
		return -1;
	if (!r->run_obj || sdc_fleet_rec_end(r) < 0 || !(r->duration >= 0))
		return -1;
	if (!r->results_arr || !r->devices_arr || !r->findings_arr)
		return -1;
	if (inconsistent(r, (enum sdc_verdict)r->code))
		return -1;
	return 0;
}

void sdc_fleet_rec_release(struct fleet_rec *r)
{
	free(r->arena);
	free(r->res);
	free(r->dev);
	free(r->probe);
	free(r->find);
	memset(r, 0, sizeof(*r));
}
