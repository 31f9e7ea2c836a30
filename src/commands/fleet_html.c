/*
 * sdcscan fleet --html and --csv (fleet_data.h): the fleet as a picture and as rows.
 *
 * Each host's cell for a probe/variant is the worst of its devices' results there: CRITICAL for
 * a device in the vote's minority or a corrupt or crashed result, UNKNOWN for one that could not
 * test, WARNING for a degraded result, SLOW for a device slower than SLOW_FRACTION of the median
 * rate of its model's devices for that probe/variant across the fleet (at least SLOW_MIN of them:
 * shown, never a WARNING: a rate against the fleet is no verdict, the profile's floor is), OK, or
 * skipped. A host's level is the one rule of the text and the exit code (sdc_fl_host_level), and
 * the page says which reasons set it. The page (fleet_page.html, compiled in) draws the data this
 * file writes into it.
 */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/builtin.h"
#include "base/message.h"
#include "base/parse.h"
#include "base/clock.h"
#include "base/files.h"
#include "base/verdict.h"
#include "commands/fleet_data.h"

extern const struct sdc_builtin_file sdc_builtin_fleet_page[];

#define SLOW_FRACTION 0.75
#define SLOW_MIN 5
#define HIST_BINS 40 /* rate / median from 0 to 2, 5% a bin (the last also holds what is above) */
#define PROBLEMS_KEPT 2000
#define SLOW_LISTED 200

/* A model's devices for one probe/variant: their rates, sorted. */
struct dist {
	uint32_t model, pv, unit;
	float *rate;
	size_t n, cap, nslow;
	double median;
};

struct view {
	const struct fl_store *st;
	int *col_of; /* strs id -> column, -1 */
	uint32_t *cols;
	int ncols;
	struct fl_intern dix; /* (model, pv) -> dist */
	struct dist *dist;
	size_t ndist, cdist;
	uint32_t *mfirst; /* per host: its first entry in mins (sorted by host, index) */
	struct fl_minority *mins;
	double now, max_age;
};

static int by_str(const void *a, const void *b, void *st)
{
	return strcmp(fl_str(&((const struct fl_store *)st)->strs, *(const uint32_t *)a),
		      fl_str(&((const struct fl_store *)st)->strs, *(const uint32_t *)b));
}

static int cmp_float(const void *a, const void *b)
{
	const float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

static int by_host_index(const void *a, const void *b)
{
	const struct fl_minority *x = a, *y = b;
	if (x->host != y->host)
		return x->host < y->host ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

static struct dist *dist_of(struct view *v, uint32_t model, uint32_t pv, bool make)
{
	const uint32_t key[2] = { model, pv };
	const uint32_t id = make ? sdc_fl_intern(&v->dix, key, sizeof(key)) : sdc_fl_intern_find(&v->dix, key, sizeof(key));
	if (id == FL_NONE)
		return NULL;
	if (id == v->ndist) {
		if (v->ndist == v->cdist) {
			const size_t c = v->cdist ? 2 * v->cdist : 16;
			struct dist *d = realloc(v->dist, c * sizeof(*d));
			if (!d)
				return NULL;
			v->dist = d, v->cdist = c;
		}
		v->dist[v->ndist++] = (struct dist){ .model = model, .pv = pv, .unit = 0 };
	}
	return &v->dist[id];
}

static int view_init(struct view *v, const struct fl_store *st, double max_age)
{
	memset(v, 0, sizeof(*v));
	v->st = st, v->now = sdc_wall_now(), v->max_age = max_age;
	v->col_of = malloc(st->strs.n * sizeof(int));
	v->cols = malloc((st->strs.n + 1) * sizeof(uint32_t));
	v->mfirst = malloc((st->nhosts + 1) * sizeof(uint32_t));
	v->mins = malloc((st->nminority + 1) * sizeof(*v->mins));
	if (!v->col_of || !v->cols || !v->mfirst || !v->mins)
		return -1;
	for (uint32_t i = 0; i < st->strs.n; i++)
		v->col_of[i] = -1;
	/* the columns: every probe/variant any shape ran, by name */
	for (uint32_t s = 0; s < st->nshapes; s++)
		for (uint32_t i = 0; i < st->shapes[s].nres; i++) {
			const uint32_t pv = st->shapes[s].res[i].pv;
			if (v->col_of[pv] < 0)
				v->col_of[pv] = 0, v->cols[v->ncols++] = pv;
		}
	qsort_r(v->cols, (size_t)v->ncols, sizeof(uint32_t), by_str, (void *)st);
	for (int c = 0; c < v->ncols; c++)
		v->col_of[v->cols[c]] = c;
	/* the minority by host */
	if (st->nminority) /* none: st->minority may be NULL, which memcpy may not be given */
		memcpy(v->mins, st->minority, st->nminority * sizeof(*v->mins));
	sdc_sort(v->mins, st->nminority, sizeof(*v->mins), by_host_index);
	size_t m = 0;
	for (uint32_t h = 0; h <= st->nhosts; h++) {
		while (m < st->nminority && v->mins[m].host < h)
			m++;
		v->mfirst[h] = (uint32_t)m;
	}
	/* each model's rates for each probe/variant */
	for (size_t h = 0; h < st->nhosts; h++) {
		const struct fl_host *x = &st->hosts[h];
		if (!x->present)
			continue;
		const struct fl_shape *sh = &st->shapes[x->shape];
		for (uint32_t i = 0; i < sh->nres; i++) {
			if (!(x->rate[i] > 0) || !isfinite(x->rate[i]))
				continue;
			struct dist *d = dist_of(v, sh->res[i].model, sh->res[i].pv, true);
			if (!d)
				return -1;
			if (d->n == d->cap) {
				const size_t c = d->cap ? 2 * d->cap : 64;
				float *r = realloc(d->rate, c * sizeof(float));
				if (!r)
					return -1;
				d->rate = r, d->cap = c;
			}
			d->rate[d->n++] = x->rate[i];
			d->unit = sh->res[i].unit;
		}
	}
	for (size_t k = 0; k < v->ndist; k++) {
		struct dist *d = &v->dist[k];
		sdc_sort(d->rate, d->n, sizeof(float), cmp_float);
		d->median = d->n % 2 ? d->rate[d->n / 2] : ((double)d->rate[d->n / 2 - 1] + d->rate[d->n / 2]) / 2;
	}
	return 0;
}

static void view_release(struct view *v)
{
	for (size_t k = 0; k < v->ndist; k++)
		free(v->dist[k].rate);
	free(v->dist), free(v->col_of), free(v->cols), free(v->mfirst), free(v->mins);
	sdc_fl_intern_release(&v->dix);
}

/* Result i of host x against its model's median: rate / median, or -1 where there is no judging it. */
static double ratio(const struct view *v, const struct fl_host *x, uint32_t i)
{
	const struct fl_sres *r = &v->st->shapes[x->shape].res[i];
	if (!(x->rate[i] > 0) || !isfinite(x->rate[i]))
		return -1;
	struct dist *d = dist_of((struct view *)v, r->model, r->pv, false);
	return d && d->n >= SLOW_MIN && d->median > 0 ? x->rate[i] / d->median : -1;
}

enum { K_OK = 1, K_SKIP = 2, K_WARN = 4, K_UNK = 8, K_CRIT = 16, K_SLOW = 32 };

static int status_kind(const char *s)
{
	if (!strcmp(s, "corrupt") || !strcmp(s, "crashed"))
		return K_CRIT;
	if (!strcmp(s, "degraded"))
		return K_WARN;
	if (!strcmp(s, "skipped"))
		return K_SKIP;
	return K_UNK; /* error, hung, anything else that is not ok */
}

static char cell_char(int k)
{
	return k & K_CRIT ? 'c' : k & K_UNK ? 'u' : k & K_WARN ? 'w' : k & K_SLOW ? 'l' : k & K_OK ? 'o' : k & K_SKIP ? 's' : '.';
}

static const char *cell_name(char c)
{
	switch (c) {
	case 'c': return "CRITICAL";
	case 'u': return "UNKNOWN";
	case 'w': return "WARNING";
	case 'l': return "SLOW";
	case 'o': return "OK";
	case 's': return "SKIPPED";
	default: return "";
	}
}

/* Per column of host h: its cell kind, its slowest ratio (or 2.55 cap; -1 none), its devices. */
struct hostcols {
	int *kind;
	double *minr;
	int *ndev;
};

static const char *host_state(const struct view *v, const struct fl_host *x)
{
	return x->future ? "clock skew" : v->now - x->end > v->max_age ? "stale" : "";
}

/* The host's cells; with details (a JSON object, may be NULL) its minority, bad and slow lists. */
static void host_cells(struct view *v, uint32_t h, struct hostcols *hc, json_t *minority, json_t *bad, json_t *slow)
{
	const struct fl_store *st = v->st;
	const struct fl_host *x = &st->hosts[h];
	const struct fl_shape *sh = &st->shapes[x->shape];
	for (int c = 0; c < v->ncols; c++)
		hc->kind[c] = 0, hc->minr[c] = -1, hc->ndev[c] = 0;
	uint32_t m = v->mfirst[h];
	for (uint32_t i = 0; i < sh->nres; i++) {
		const int c = v->col_of[sh->res[i].pv];
		const char *dev = fl_str(&st->strs, sh->res[i].dev);
		hc->ndev[c]++;
		const uint32_t status = sdc_fl_host_status(st, x, i);
		int k = status == FL_NONE ? K_OK : status_kind(fl_str(&st->strs, status));
		if (status != FL_NONE && bad)
			json_array_append_new(bad, json_pack("[i, s, s]", c, dev, fl_str(&st->strs, status)));
		while (m < v->mfirst[h + 1] && v->mins[m].index < i)
			m++;
		if (m < v->mfirst[h + 1] && v->mins[m].index == i) {
			k |= K_CRIT;
			const struct fl_group *g = &st->groups[v->mins[m].group];
			char dg[17], best[17] = "";
			snprintf(dg, sizeof(dg), "%.16s", fl_str(&st->strs, v->mins[m].digest));
			if (g->best != FL_NONE)
				snprintf(best, sizeof(best), "%.16s", fl_str(&st->strs, g->best));
			if (minority)
				json_array_append_new(minority, json_pack("[i, s, s, s, I, I]", c, dev, dg, best,
									  (json_int_t)g->agreeing, (json_int_t)g->devices));
		}
		const double r = ratio(v, x, i);
		if (r >= 0) {
			if (hc->minr[c] < 0 || r < hc->minr[c])
				hc->minr[c] = r;
			if (r < SLOW_FRACTION) {
				k |= K_SLOW;
				if (slow)
					json_array_append_new(slow, json_pack("[i, s, i]", c, dev, (int)floor(r * 100)));
			}
		}
		hc->kind[c] |= k;
	}
}

/* ---- --csv ---- */

static void csv_field(FILE *f, const char *s, bool last)
{
	if (strpbrk(s, ",\"\r\n")) { /* RFC 4180: quoted, a quote doubled */
		fputc('"', f);
		for (; *s; s++) {
			if (*s == '"')
				fputc('"', f);
			fputc(*s, f);
		}
		fputc('"', f);
	} else
		fputs(s, f);
	fputc(last ? '\n' : ',', f);
}

int sdc_fleet_write_csv(const struct fl_store *st, const struct fleet_out *o)
{
	struct view v = { 0 };
	char *buf = NULL, err[600] = "out of memory";
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct hostcols hc = { malloc((st->strs.n + 1) * sizeof(int)), malloc((st->strs.n + 1) * sizeof(double)),
			       malloc((st->strs.n + 1) * sizeof(int)) };
	int rc = -1;
	if (!f || !hc.kind || !hc.minr || !hc.ndev || view_init(&v, st, o->max_age))
		goto out;
	fputs("host,state,host_verdict,probe,variant,cell,devices,minority_devices,not_ok,slow_devices,"
	      "slowest_vs_median,report\n", f);
	for (size_t n = 0; n < st->nhosts; n++) {
		const uint32_t h = st->host_order[n];
		const struct fl_host *x = &st->hosts[h];
		if (!x->present)
			continue;
		json_t *mins = json_array(), *bad = json_array(), *slow = json_array();
		host_cells(&v, h, &hc, mins, bad, slow);
		for (int c = 0; c < v.ncols; c++) {
			if (!hc.ndev[c])
				continue;
			const char *pv = fl_str(&st->strs, v.cols[c]), *slash = strchr(pv, '/');
			char probe[256], ms[4096] = "", bs[4096] = "", ss[4096] = "", num[32] = "", nd[16];
			snprintf(probe, sizeof(probe), "%.*s", slash ? (int)(slash - pv) : (int)strlen(pv), pv);
			size_t i;
			json_t *e;
			size_t a = 0, b = 0, s = 0;
			json_array_foreach(mins, i, e)
				if (json_integer_value(json_array_get(e, 0)) == c && a < sizeof(ms))
					a += (size_t)snprintf(ms + a, sizeof(ms) - a, "%s%s", a ? " " : "", json_string_value(json_array_get(e, 1)));
			json_array_foreach(bad, i, e)
				if (json_integer_value(json_array_get(e, 0)) == c && b < sizeof(bs))
					b += (size_t)snprintf(bs + b, sizeof(bs) - b, "%s%s:%s", b ? " " : "",
							      json_string_value(json_array_get(e, 1)), json_string_value(json_array_get(e, 2)));
			json_array_foreach(slow, i, e)
				if (json_integer_value(json_array_get(e, 0)) == c && s < sizeof(ss))
					s += (size_t)snprintf(ss + s, sizeof(ss) - s, "%s%s:%.2f", s ? " " : "",
							      json_string_value(json_array_get(e, 1)),
							      (double)json_integer_value(json_array_get(e, 2)) / 100);
			if (hc.minr[c] >= 0)
				snprintf(num, sizeof(num), "%.3f", hc.minr[c]);
			snprintf(nd, sizeof(nd), "%d", hc.ndev[c]);
			const char cell[2] = { cell_char(hc.kind[c]), 0 };
			csv_field(f, sdc_fl_host_name(st, x), false);
			csv_field(f, *host_state(&v, x) ? host_state(&v, x) : "ok", false);
			csv_field(f, sdc_verdict_name((enum sdc_verdict)x->verdict), false);
			csv_field(f, probe, false);
			csv_field(f, slash ? slash + 1 : "", false);
			csv_field(f, cell_name(cell[0]), false);
			csv_field(f, nd, false);
			csv_field(f, ms, false);
			csv_field(f, bs, false);
			csv_field(f, ss, false);
			csv_field(f, num, false);
			csv_field(f, x->path, true);
		}
		json_decref(mins), json_decref(bad), json_decref(slow);
	}
	for (size_t i = 0; i < o->nmissing; i++) {
		csv_field(f, o->missing[i], false);
		fputs("missing,,,,,,,,,,\n", f);
	}
	for (size_t i = 0; i < st->nunreadable; i++) {
		fputs(",unreadable,,,,,,,,,,", f);
		csv_field(f, st->unreadable[i].a, true);
	}
	const int closed = fclose(f);
	f = NULL;
	if (!closed && !sdc_write_atomic(o->csv, buf, len, err, sizeof(err)))
		rc = 0;
out:
	if (rc)
		sdc_error("fleet --csv %s: %s", o->csv, err);
	if (f)
		fclose(f);
	view_release(&v);
	free(buf), free(hc.kind), free(hc.minr), free(hc.ndev);
	return rc;
}

/* ---- --html ---- */

static size_t problems_dropped; /* past PROBLEMS_KEPT (the text output and --json list them all) */

static json_t *problems_add(json_t *p, long host, const char *fmt, ...) SDC_PRINTF(3, 4);
static json_t *problems_add(json_t *p, long host, const char *fmt, ...)
{
	char buf[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (json_array_size(p) < PROBLEMS_KEPT)
		json_array_append_new(p, json_pack("[I, s]", (json_int_t)host, buf));
	else
		problems_dropped++;
	return p;
}

/* The quantiles and histogram of a model's rates for a probe/variant, against its median. */
static json_t *dist_json(const struct view *v, const struct dist *d, json_t *slow)
{
	json_t *q = json_array(), *hist = json_array();
	static const double at[] = { 0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0 };
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		size_t k = (size_t)(at[i] * (double)(d->n - 1) + 0.5);
		json_array_append_new(q, json_integer((json_int_t)floor(100 * d->rate[k] / d->median + 0.5)));
	}
	size_t bins[HIST_BINS] = { 0 };
	for (size_t i = 0; i < d->n; i++) {
		const double r = d->rate[i] / d->median;
		const int b = (int)(r * 20);
		bins[b < 0 ? 0 : b >= HIST_BINS ? HIST_BINS - 1 : b]++;
	}
	for (int b = 0; b < HIST_BINS; b++)
		json_array_append_new(hist, json_integer((json_int_t)bins[b]));
	const char *pv = fl_str(&v->st->strs, d->pv);
	return json_pack("{s:s, s:s, s:I, s:f, s:s, s:o, s:o, s:o, s:I}", "col", pv, "model", fl_str(&v->st->strs, d->model),
			 "n", (json_int_t)d->n, "median", d->median, "unit", fl_str(&v->st->strs, d->unit), "q", q, "hist",
			 hist, "slow", slow, "nslow", (json_int_t)d->nslow);
}

/* A host's row of the page: name, state, its report's verdict, cells, ratios, its details' index,
 * and its level in the fleet with the reasons (the one rule, sdc_fl_host_level). */
static json_t *host_row(const struct view *v, uint32_t h, const char *state, const char *cells, const char *ratios, long di)
{
	const struct fl_host *x = &v->st->hosts[h];
	char why[600];
	const int level = sdc_fl_host_level(v->st, x, v->mfirst[h + 1] > v->mfirst[h], v->max_age, why, sizeof(why));
	return json_pack("[s, s, s, s, s, I, s, s]", sdc_fl_host_name(v->st, x), state,
			 sdc_verdict_name((enum sdc_verdict)x->verdict), cells, ratios, (json_int_t)di,
			 sdc_verdict_name((enum sdc_verdict)level), why);
}

/* The page's data (the JSON fleet_page.html reads). */
static json_t *page_data(struct view *v, const struct fleet_out *o, int verdict, struct hostcols *hc)
{
	const struct fl_store *st = v->st;
	problems_dropped = 0;
	json_t *cols = json_array(), *hosts = json_array(), *details = json_array(), *problems = json_array();
	json_t *dist = json_array(), **dslow = calloc(v->ndist + 1, sizeof(*dslow));
	long *pos = malloc((st->nhosts + 1) * sizeof(long));
	if (!dslow || !pos)
		return free(dslow), free(pos), NULL;
	for (int c = 0; c < v->ncols; c++)
		json_array_append_new(cols, json_string(fl_str(&st->strs, v->cols[c])));
	for (size_t k = 0; k < v->ndist; k++)
		dslow[k] = json_array();
	size_t n = 0, nslow = 0, nfind = 0, nstale = 0;
	for (size_t i = 0; i < st->nhosts; i++)
		if (st->hosts[st->host_order[i]].present)
			pos[st->host_order[i]] = (long)n++;
	char *cells = malloc((size_t)v->ncols + 1), *ratios = malloc(2 * (size_t)v->ncols + 1);
	for (size_t i = 0; cells && ratios && i < st->nhosts; i++) {
		const uint32_t h = st->host_order[i];
		const struct fl_host *x = &st->hosts[h];
		if (!x->present)
			continue;
		json_t *mins = json_array(), *bad = json_array(), *slow = json_array(), *finds = json_array();
		host_cells(v, h, hc, mins, bad, slow);
		for (int c = 0; c < v->ncols; c++) {
			cells[c] = hc->ndev[c] ? cell_char(hc->kind[c]) : '.';
			if (hc->minr[c] >= 0)
				snprintf(ratios + 2 * c, 3, "%02x", (unsigned)(hc->minr[c] * 100 > 255 ? 255 : hc->minr[c] * 100));
			else
				memcpy(ratios + 2 * c, "--", 3);
		}
		cells[v->ncols] = '\0';
		ratios[2 * v->ncols] = '\0';
		const char *name = sdc_fl_host_name(st, x), *state = host_state(v, x);
		/* each slow device in its distribution's list */
		const struct fl_shape *sh = &st->shapes[x->shape];
		for (uint32_t r = 0; r < sh->nres; r++) {
			const double q = ratio(v, x, r);
			if (q < 0 || q >= SLOW_FRACTION)
				continue;
			struct dist *d = dist_of(v, sh->res[r].model, sh->res[r].pv, false);
			const size_t k = (size_t)(d - v->dist);
			if (d->nslow++ < SLOW_LISTED)
				json_array_append_new(dslow[k], json_pack("[I, s, i]", (json_int_t)pos[h],
									  fl_str(&st->strs, sh->res[r].dev), (int)floor(q * 100)));
			nslow++;
			problems_add(problems, pos[h], "slow: %s %s: %s at %.0f%% of the median of its model's devices (%s)", name,
				     fl_str(&st->strs, sh->res[r].dev), fl_str(&st->strs, sh->res[r].pv), floor(q * 100),
				     fl_str(&st->strs, sh->res[r].model));
		}
		for (uint32_t k = 0; k < x->nkept; k++)
			json_array_append_new(finds, json_string(x->find[k]));
		long di = -1;
		if (x->verdict != SDC_OK || *state || json_array_size(mins) || json_array_size(bad) || json_array_size(slow) || x->nfind) {
			di = (long)json_array_size(details);
			json_t *d = json_pack("{s:s, s:s, s:f, s:o, s:o, s:o, s:o, s:I}", "summary", x->summary, "path", x->path,
					      "age_days", (v->now - x->end) / 86400, "minority", mins, "bad", bad, "slow", slow,
					      "findings", finds, "nfind", (json_int_t)x->nfind);
			json_array_append_new(details, d);
		} else
			json_decref(mins), json_decref(bad), json_decref(slow), json_decref(finds);
		if (x->verdict != SDC_OK) {
			nfind++;
			problems_add(problems, pos[h], "%s: %s: %s", sdc_verdict_name((enum sdc_verdict)x->verdict), name, x->summary);
			for (uint32_t k = 0; k < x->nkept; k++)
				problems_add(problems, pos[h], "  %s: %s", name, x->find[k]);
		}
		if (*state) {
			nstale++;
			problems_add(problems, pos[h], "%s: %s: last report %.1f days old (%s)", state, name,
				     (v->now - x->end) / 86400, x->path);
		}
		json_array_append_new(hosts, host_row(v, h, state, cells, ratios, di));
	}
	/* the minority first among the problems: what a person looks at first */
	json_t *first = json_array();
	for (size_t m = 0; m < st->nminority; m++) {
		const struct fl_minority *x = &st->minority[m];
		const struct fl_host *h = &st->hosts[x->host];
		const struct fl_group *g = &st->groups[x->group];
		problems_add(first, pos[x->host], "disagrees: %s %s: %s: digest %.16s..., the majority (%u of %u devices) %.16s",
			     sdc_fl_host_name(st, h), fl_str(&st->strs, st->shapes[h->shape].res[x->index].dev),
			     fl_str(&st->strs, g->pv), fl_str(&st->strs, x->digest), g->agreeing, g->devices,
			     g->best == FL_NONE ? "none (no majority)" : fl_str(&st->strs, g->best));
	}
	json_array_extend(first, problems);
	json_decref(problems);
	problems = first;
	for (size_t i = 0; i < o->nmissing; i++) {
		char dots[1024];
		memset(dots, '.', (size_t)v->ncols < sizeof(dots) - 1 ? (size_t)v->ncols : sizeof(dots) - 1);
		dots[(size_t)v->ncols < sizeof(dots) - 1 ? (size_t)v->ncols : sizeof(dots) - 1] = '\0';
		problems_add(problems, (long)n, "missing: %s: no report", o->missing[i]);
		json_array_append_new(hosts, json_pack("[s, s, s, s, s, i, s, s]", o->missing[i], "missing", "", dots, "", -1,
						       "WARNING", "missing: it is in --hosts and left no report"));
		n++;
	}
	for (size_t i = 0; i < st->nskewed; i++)
		problems_add(problems, -1, "clock-skew: %s: a report dated %.0f s in the future (%s)", st->skewed[i].a,
			     st->skewed[i].x, st->skewed[i].b);
	for (size_t i = 0; i < st->nunreadable; i++)
		problems_add(problems, -1, "unreadable: %s: %s", st->unreadable[i].a, st->unreadable[i].b);
	for (size_t k = 0; k < v->ndist; k++)
		if (v->dist[k].n)
			json_array_append_new(dist, dist_json(v, &v->dist[k], dslow[k]));
		else
			json_decref(dslow[k]);
	char counts[400];
	snprintf(counts, sizeof(counts), "%zu host%s, %u group%s of the same work: %zu minority device%s, %zu host%s with "
		 "findings, %zu slow device%s (shown, not a warning), %zu stale, %zu missing, %zu unreadable", n - o->nmissing,
		 n - o->nmissing == 1 ? "" : "s", st->ngroups, st->ngroups == 1 ? "" : "s", st->nminority,
		 st->nminority == 1 ? "" : "s", nfind, nfind == 1 ? "" : "s", nslow, nslow == 1 ? "" : "s", nstale, o->nmissing,
		 st->nunreadable);
	free(dslow), free(pos), free(cells), free(ratios);
	return json_pack("{s:s, s:s, s:f, s:o, s:o, s:o, s:o, s:i, s:o}", "verdict", sdc_verdict_name((enum sdc_verdict)verdict),
			 "counts", counts, "slow_fraction", SLOW_FRACTION, "cols", cols, "hosts", hosts, "details", details,
			 "problems", problems, "problems_more", (int)problems_dropped, "dist", dist);
}

int sdc_fleet_write_html(const struct fl_store *st, const struct fleet_out *o, int verdict)
{
	struct view v = { 0 };
	struct hostcols hc = { malloc((st->strs.n + 1) * sizeof(int)), malloc((st->strs.n + 1) * sizeof(double)),
			       malloc((st->strs.n + 1) * sizeof(int)) };
	char err[600] = "out of memory", *data = NULL, *page = NULL;
	int rc = -1;
	json_t *j = NULL;
	if (!hc.kind || !hc.minr || !hc.ndev || view_init(&v, st, o->max_age) || !(j = page_data(&v, o, verdict, &hc)))
		goto out;
	if (!(data = json_dumps(j, JSON_COMPACT)))
		goto out;
	/* every "<" as \u003c: no string of a report can end the script element or open a comment */
	size_t lt = 0, dl = strlen(data);
	for (size_t i = 0; i < dl; i++)
		lt += data[i] == '<';
	const char *tmpl = sdc_builtin_fleet_page[0].text, *mark = strstr(tmpl, "/*FLEET_DATA*/");
	if (!mark) {
		snprintf(err, sizeof(err), "the page template has no data marker");
		goto out;
	}
	const size_t pre = (size_t)(mark - tmpl), post = strlen(mark + 14);
	if (!(page = malloc(pre + dl + 5 * lt + post + 1)))
		goto out;
	size_t n = pre;
	memcpy(page, tmpl, pre);
	for (size_t i = 0; i < dl; i++)
		if (data[i] == '<')
			memcpy(page + n, "\\u003c", 6), n += 6;
		else
			page[n++] = data[i];
	memcpy(page + n, mark + 14, post);
	n += post;
	if (!sdc_write_atomic(o->html, page, n, err, sizeof(err)))
		rc = 0;
out:
	if (rc)
		sdc_error("fleet --html %s: %s", o->html, err);
	json_decref(j);
	free(data), free(page);
	view_release(&v);
	free(hc.kind), free(hc.minr), free(hc.ndev);
	return rc;
}
