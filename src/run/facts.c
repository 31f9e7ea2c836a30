/*
 * Facts (run/facts.h) as JSON: a struct sdc_facts is a jansson object (run/facts_json.h gives the
 * framework the object itself), so what a probe states is what the report, the benchmark's or the
 * campaign's JSON holds, in the order stated. jansson keeps an object's keys in insertion order
 * and json_object_set on a key already there replaces the value in its place (jansson 2.14,
 * "Object" in https://jansson.readthedocs.io/en/2.14/apiref.html): the writers rest on both.
 */
#include "run/facts_json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/digest.h"
#include "base/message.h"
#include "base/files.h"
#include "base/json_load.h"
#include "run/record.h"

/* Path segments are at most this long (a longer name is one a probe would never state). */
#define SEGMENT_MAX 128

/*
 * The object that holds the last segment of name, and that segment in *last: the groups on the
 * way made where create (a fact of another type in the way is replaced by a group), else NULL
 * where one is missing.
 */
static json_t *parent_of(json_t *o, const char *name, bool create, char last[SEGMENT_MAX])
{
	const char *dot;
	while (o && (dot = strchr(name, '.'))) {
		char seg[SEGMENT_MAX];
		sdc_strlcpy(seg, name, SDC_MIN(sizeof(seg), (size_t)(dot - name) + 1));
		json_t *next = json_object_get(o, seg);
		if (!json_is_object(next)) {
			if (!create)
				return NULL;
			next = json_object();
			if (json_object_set_new(o, seg, next))
				return NULL;
		}
		o = next;
		name = dot + 1;
	}
	if (!json_is_object(o))
		return NULL;
	sdc_strlcpy(last, name, SEGMENT_MAX);
	return o;
}

/* v (taken; NULL: left out, as a real that is not finite or a string that is not UTF-8) at name. */
static void set(struct sdc_facts *f, const char *name, json_t *v)
{
	char last[SEGMENT_MAX];
	json_t *o = v ? parent_of(sdc_facts_json(f), name, true, last) : NULL;
	if (o)
		json_object_set_new(o, last, v);
	else
		json_decref(v);
}

static json_t *get(const struct sdc_facts *f, const char *name)
{
	char last[SEGMENT_MAX];
	json_t *o = parent_of(sdc_facts_json((struct sdc_facts *)f), name, false, last);
	return o ? json_object_get(o, last) : NULL;
}

struct sdc_facts *sdc_facts_new(void)
{
	return sdc_facts_of(json_object());
}

void sdc_facts_free(struct sdc_facts *f)
{
	json_decref(sdc_facts_json(f));
}

void sdc_facts_int(struct sdc_facts *f, const char *name, int64_t v)
{
	set(f, name, json_integer((json_int_t)v));
}

void sdc_facts_real(struct sdc_facts *f, const char *name, double v)
{
	set(f, name, isfinite(v) ? json_real(v) : NULL);
}

void sdc_facts_str(struct sdc_facts *f, const char *name, const char *v)
{
	set(f, name, v ? json_string(v) : json_null());
}

void sdc_facts_bool(struct sdc_facts *f, const char *name, bool v)
{
	set(f, name, json_boolean(v));
}

void sdc_facts_null(struct sdc_facts *f, const char *name)
{
	set(f, name, json_null());
}

/* The object under key in o, made where there is none (or something else is there). */
static json_t *object_at(json_t *o, const char *key)
{
	json_t *g = json_object_get(o, key);
	if (!json_is_object(g) && (!o || json_object_set_new(o, key, g = json_object())))
		return NULL;
	return g;
}

struct sdc_facts *sdc_facts_group(struct sdc_facts *f, const char *name)
{
	char last[SEGMENT_MAX];
	return sdc_facts_of(object_at(parent_of(sdc_facts_json(f), name, true, last), last));
}

struct sdc_facts *sdc_facts_key(struct sdc_facts *f, const char *key)
{
	return sdc_facts_of(object_at(sdc_facts_json(f), key));
}

/* The array at name, made where there is none. */
static json_t *list_at(struct sdc_facts *f, const char *name)
{
	char last[SEGMENT_MAX];
	json_t *o = parent_of(sdc_facts_json(f), name, true, last);
	json_t *a = json_object_get(o, last);
	if (!json_is_array(a) && (!o || json_object_set_new(o, last, a = json_array())))
		return NULL;
	return a;
}

struct sdc_facts *sdc_facts_row(struct sdc_facts *f, const char *name)
{
	json_t *a = list_at(f, name), *row = json_object();
	if (!a || json_array_append_new(a, row))
		return NULL;
	return sdc_facts_of(row);
}

void sdc_facts_list(struct sdc_facts *f, const char *name)
{
	(void)list_at(f, name);
}

static void append(struct sdc_facts *f, const char *name, json_t *v)
{
	json_t *a = v ? list_at(f, name) : NULL;
	if (a)
		json_array_append_new(a, v);
	else
		json_decref(v);
}

void sdc_facts_append_int(struct sdc_facts *f, const char *name, int64_t v)
{
	append(f, name, json_integer((json_int_t)v));
}

void sdc_facts_append_real(struct sdc_facts *f, const char *name, double v)
{
	append(f, name, isfinite(v) ? json_real(v) : NULL);
}

void sdc_facts_append_str(struct sdc_facts *f, const char *name, const char *v)
{
	append(f, name, v ? json_string(v) : json_null());
}

void sdc_facts_put(struct sdc_facts *f, const char *name, struct sdc_facts *g)
{
	set(f, name, sdc_facts_json(g));
}

/* src's members into dst, object into object; keep: dst's own win. */
static void merge(json_t *dst, json_t *src, bool keep)
{
	const char *k;
	json_t *v;
	json_object_foreach(src, k, v) {
		json_t *have = json_object_get(dst, k);
		if (json_is_object(have) && json_is_object(v))
			merge(have, v, keep);
		else if (!have || !keep)
			json_object_set(dst, k, v);
	}
}

void sdc_facts_merge(struct sdc_facts *f, struct sdc_facts *g)
{
	merge(sdc_facts_json(f), sdc_facts_json(g), false);
	sdc_facts_free(g);
}

void sdc_facts_replace(struct sdc_facts *f, struct sdc_facts *g)
{
	json_object_update(sdc_facts_json(f), sdc_facts_json(g));
	sdc_facts_free(g);
}

struct sdc_facts *sdc_facts_copy(const struct sdc_facts *f)
{
	return sdc_facts_of(json_deep_copy(sdc_facts_json((struct sdc_facts *)f)));
}

const struct sdc_facts *sdc_facts_find(const struct sdc_facts *f, const char *name)
{
	json_t *g = get(f, name);
	return json_is_object(g) ? sdc_facts_of(g) : NULL;
}

const struct sdc_facts *sdc_facts_find_key(const struct sdc_facts *f, const char *key)
{
	json_t *g = json_object_get(sdc_facts_json((struct sdc_facts *)f), key);
	return json_is_object(g) ? sdc_facts_of(g) : NULL;
}

bool sdc_facts_has(const struct sdc_facts *f, const char *name)
{
	return get(f, name) != NULL;
}

bool sdc_facts_get_int(const struct sdc_facts *f, const char *name, int64_t *v)
{
	json_t *j = get(f, name);
	if (!json_is_integer(j))
		return false;
	*v = (int64_t)json_integer_value(j);
	return true;
}

bool sdc_facts_get_real(const struct sdc_facts *f, const char *name, double *v)
{
	json_t *j = get(f, name);
	if (!json_is_real(j))
		return false;
	*v = json_real_value(j);
	return true;
}

const char *sdc_facts_get_str(const struct sdc_facts *f, const char *name)
{
	return json_string_value(get(f, name));
}

const char *sdc_facts_name_at(const struct sdc_facts *f, size_t i)
{
	void *it = json_object_iter(sdc_facts_json((struct sdc_facts *)f));
	while (it && i--)
		it = json_object_iter_next(sdc_facts_json((struct sdc_facts *)f), it);
	return it ? json_object_iter_key(it) : NULL;
}

size_t sdc_facts_rows(const struct sdc_facts *f, const char *name)
{
	return json_array_size(get(f, name));
}

const struct sdc_facts *sdc_facts_row_at(const struct sdc_facts *f, const char *name, size_t i)
{
	json_t *row = json_array_get(get(f, name), i);
	return json_is_object(row) ? sdc_facts_of(row) : NULL;
}

struct sdc_facts *sdc_facts_load(const char *path, size_t max, const char *what, char *err, size_t errlen)
{
	size_t len;
	char why[600] = "";
	err[0] = '\0';
	char *text = sdc_read_regular_file(path, max, &len, what, why, sizeof(why));
	if (!text) {
		snprintf(err, errlen, "%s %s", what, why);
		return NULL;
	}
	json_error_t je;
	json_t *doc = sdc_json_loadb(text, len, 0, &je);
	free(text);
	if (!doc) {
		/* (jansson gives no position when the file could not be opened) */
		if (je.line > 0)
			snprintf(err, errlen, "%s %s: %s (line %d, column %d)", what, path, je.text, je.line, je.column);
		else
			snprintf(err, errlen, "%s %s: %s", what, path, je.text);
	}
	return sdc_facts_of(doc);
}

int sdc_facts_sha256(const struct sdc_facts *f, char hex[65])
{
	return sdc_json_content_sha256(sdc_facts_json((struct sdc_facts *)f), hex);
}

int sdc_facts_write(const char *path, const struct sdc_facts *f, char *err, size_t errlen)
{
	char *text = json_dumps(sdc_facts_json((struct sdc_facts *)f),
				JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
	if (!text) {
		snprintf(err, errlen, "cannot serialise the JSON");
		return -1;
	}
	const size_t len = strlen(text);
	char *with_nl = malloc(len + 1);
	int rc = -1;
	if (with_nl) {
		memcpy(with_nl, text, len);
		with_nl[len] = '\n';
		rc = sdc_write_atomic(path, with_nl, len + 1, err, errlen);
	} else {
		snprintf(err, errlen, "out of memory");
	}
	free(with_nl);
	free(text);
	return rc;
}

void sdc_run_facts_apply(struct sdc_run *run, const char *name, enum sdc_facts_how how, struct sdc_facts *f)
{
	if (run->sink) {
		run->sink->facts(run->sink->arg, name, (int)how, f);
		sdc_facts_free(f);
		return;
	}
	pthread_mutex_lock(&run->lock); /* wait-ok: held only to merge facts */
	struct sdc_facts *at = sdc_facts_group(sdc_facts_of(run->environment), name);
	if (at && how == SDC_FACTS_REPLACE)
		json_object_update(sdc_facts_json(at), sdc_facts_json(f));
	else if (at)
		merge(sdc_facts_json(at), sdc_facts_json(f), how == SDC_FACTS_KEEP);
	pthread_mutex_unlock(&run->lock);
	sdc_facts_free(f);
}

void sdc_run_facts(struct sdc_run *run, const char *name, struct sdc_facts *f)
{
	sdc_run_facts_apply(run, name, SDC_FACTS_MERGE, f);
}

void sdc_run_facts_keep(struct sdc_run *run, const char *name, struct sdc_facts *f)
{
	sdc_run_facts_apply(run, name, SDC_FACTS_KEEP, f);
}

void sdc_run_facts_replace(struct sdc_run *run, const char *name, struct sdc_facts *f)
{
	sdc_run_facts_apply(run, name, SDC_FACTS_REPLACE, f);
}
