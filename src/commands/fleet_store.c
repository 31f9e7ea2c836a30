/*
 * What sdcscan fleet keeps of its reports (fleet_data.h): one entry a host, for the report that
 * stands for it; shapes shared by the hosts of one kind; groups of the same work; and the vote.
 */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "base/parse.h"
#include "base/verdict.h"
#include "commands/fleet_data.h"

/* ---- interning: open addressing over XXH3 hashes, the bytes in one growing block ---- */

static int intern_grow(struct fl_intern *t)
{
	const size_t n = t->nslots ? 2 * t->nslots : 1024;
	uint64_t *s = calloc(n, sizeof(*s));
	if (!s)
		return -1;
	for (uint32_t id = 0; id < t->n; id++) {
		const uint64_t h = XXH3_64bits(t->bytes + t->off[id], t->len[id]);
		size_t i = h & (n - 1);
		while (s[i])
			i = (i + 1) & (n - 1);
		s[i] = (h & ~(uint64_t)0xffffffff) | (id + 1u);
	}
	free(t->slots);
	t->slots = s, t->nslots = n;
	return 0;
}

static size_t intern_slot(const struct fl_intern *t, const void *p, size_t n, uint64_t h, uint32_t *id)
{
	size_t i = h & (t->nslots - 1);
	for (; t->slots[i]; i = (i + 1) & (t->nslots - 1)) {
		const uint32_t k = (uint32_t)(t->slots[i] & 0xffffffff) - 1;
		if ((t->slots[i] >> 32) == (h >> 32) && t->len[k] == n && !memcmp(t->bytes + t->off[k], p, n)) {
			*id = k;
			return i;
		}
	}
	*id = FL_NONE;
	return i;
}

uint32_t sdc_fl_intern_find(const struct fl_intern *t, const void *p, size_t n)
{
	uint32_t id = FL_NONE;
	if (t->nslots)
		intern_slot(t, p, n, XXH3_64bits(p, n), &id);
	return id;
}

uint32_t sdc_fl_intern(struct fl_intern *t, const void *p, size_t n)
{
	if ((t->n + 1) * 2 > t->nslots && intern_grow(t))
		return FL_NONE;
	const uint64_t h = XXH3_64bits(p, n);
	uint32_t id;
	const size_t slot = intern_slot(t, p, n, h, &id);
	if (id != FL_NONE)
		return id;
	if (t->n == t->cap) {
		const uint32_t c = t->cap ? 2 * t->cap : 1024;
		uint32_t *o = realloc(t->off, c * sizeof(*o)), *l = o ? realloc(t->len, c * sizeof(*l)) : NULL;
		if (o)
			t->off = o;
		if (!l)
			return FL_NONE;
		t->len = l, t->cap = c;
	}
	if (t->blen + n + 1 > t->bcap) {
		size_t c = t->bcap ? t->bcap : 1 << 16;
		while (c < t->blen + n + 1)
			c *= 2;
		char *b = realloc(t->bytes, c);
		if (!b)
			return FL_NONE;
		t->bytes = b, t->bcap = c;
	}
	memcpy(t->bytes + t->blen, p, n);
	t->bytes[t->blen + n] = '\0'; /* strings can be read as C strings */
	t->off[t->n] = (uint32_t)t->blen, t->len[t->n] = (uint32_t)n;
	t->blen += n + 1;
	t->slots[slot] = (h & ~(uint64_t)0xffffffff) | (t->n + 1u);
	return t->n++;
}

void sdc_fl_intern_release(struct fl_intern *t)
{
	free(t->slots), free(t->off), free(t->len), free(t->bytes);
	memset(t, 0, sizeof(*t));
}

static uint32_t S(struct fl_store *st, const char *s)
{
	return sdc_fl_intern(&st->strs, s, strlen(s));
}

/* ---- the store ---- */

int sdc_fleet_store_init(struct fl_store *st, double now)
{
	memset(st, 0, sizeof(*st));
	st->now = now;
	pthread_mutex_init(&st->lock, NULL);
	pthread_rwlock_init(&st->shape_lock, NULL);
	return S(st, "") == FL_NONE ? -1 : 0;
}

static void host_release(struct fl_host *h)
{
	free(h->path), free(h->summary), free(h->rate), free(h->exc), free(h->label);
	for (uint32_t i = 0; i < h->nkept; i++)
		free(h->find[i]);
	const uint32_t name = h->name;
	memset(h, 0, sizeof(*h));
	h->name = name;
}

void sdc_fleet_store_release(struct fl_store *st)
{
	for (size_t i = 0; i < st->nhosts; i++)
		host_release(&st->hosts[i]);
	for (uint32_t i = 0; i < st->nshapes; i++)
		free(st->shapes[i].res), free(st->shapes[i].refhash);
	for (size_t i = 0; i < st->nunreadable; i++)
		free(st->unreadable[i].a), free(st->unreadable[i].b);
	for (size_t i = 0; i < st->nskewed; i++)
		free(st->skewed[i].a), free(st->skewed[i].b);
	for (size_t i = 0; i < st->nlinks; i++)
		free(st->links[i].a), free(st->links[i].b);
	for (size_t i = 0; i < st->nsamename; i++)
		free(st->samename[i].a), free(st->samename[i].b);
	free(st->hosts), free(st->shapes), free(st->groups), free(st->unreadable), free(st->skewed), free(st->links);
	free(st->samename);
	free(st->minority), free(st->host_order), free(st->group_order);
	sdc_fl_intern_release(&st->strs), sdc_fl_intern_release(&st->hostnames), sdc_fl_intern_release(&st->shape_ix);
	sdc_fl_intern_release(&st->group_ix);
	pthread_mutex_destroy(&st->lock);
	pthread_rwlock_destroy(&st->shape_lock);
}

void sdc_fl_scratch_release(struct fl_scratch *s)
{
	free(s->text), free(s->exc);
	memset(s, 0, sizeof(*s));
}

static int named_add(struct fl_named **v, size_t *n, size_t *cap, const char *a, const char *b, double x)
{
	if (*n == *cap) {
		const size_t c = *cap ? 2 * *cap : 16;
		struct fl_named *p = realloc(*v, c * sizeof(*p));
		if (!p)
			return -1;
		*v = p, *cap = c;
	}
	(*v)[(*n)++] = (struct fl_named){ strdup(a), strdup(b), x };
	return 0;
}

void sdc_fleet_store_unreadable(struct fl_store *st, const char *path, const char *why)
{
	pthread_mutex_lock(&st->lock);
	named_add(&st->unreadable, &st->nunreadable, &st->cunreadable, path, why, 0);
	pthread_mutex_unlock(&st->lock);
}

/* ---- shapes: what a report ran where, without its digests and rates ---- */

static int text_put(struct fl_scratch *sc, const char *s)
{
	const size_t n = strlen(s) + 1;
	if (sc->tlen + n > sc->tcap) {
		size_t c = sc->tcap ? sc->tcap : 1 << 16;
		while (c < sc->tlen + n)
			c *= 2;
		char *t = realloc(sc->text, c);
		if (!t)
			return -1;
		sc->text = t, sc->tcap = c;
	}
	memcpy(sc->text + sc->tlen, s, n);
	sc->tlen += n;
	return 0;
}

/* The shape's text: NUL-separated fields (no field holds a NUL: the scanner refuses \u0000). */
static int shape_text(struct fl_scratch *sc, const struct fleet_rec *r)
{
	char num[32];
	int e = 0;
	sc->tlen = 0;
	e |= text_put(sc, FL_S(r, r->seed)) | text_put(sc, FL_S(r, r->blas_lib)) | text_put(sc, FL_S(r, r->blas_ver)) |
	     text_put(sc, FL_S(r, r->blas_core));
	snprintf(num, sizeof(num), "%zu %zu %zu", r->nprobe, r->ndev, r->nres);
	e |= text_put(sc, num);
	for (size_t i = 0; i < r->nprobe; i++)
		e |= text_put(sc, FL_S(r, r->probe[i].name)) |
		     text_put(sc, r->probe[i].options ? FL_S(r, r->probe[i].options) : "{}");
	for (size_t i = 0; i < r->ndev; i++)
		e |= text_put(sc, FL_S(r, r->dev[i].id)) | text_put(sc, FL_S(r, r->dev[i].model)) |
		     text_put(sc, FL_S(r, r->dev[i].type));
	for (size_t i = 0; i < r->nres; i++) {
		const struct fleet_res *x = &r->res[i];
		if (*FL_S(r, x->digest))
			snprintf(num, sizeof(num), "%lld", x->iterations);
		else
			snprintf(num, sizeof(num), "-");
		e |= text_put(sc, FL_S(r, x->probe)) | text_put(sc, FL_S(r, x->variant)) | text_put(sc, FL_S(r, x->device)) |
		     text_put(sc, FL_S(r, x->kernel)) | text_put(sc, num) | text_put(sc, FL_S(r, x->rate_unit));
	}
	return e ? -1 : 0;
}

/* Field k of a shape's text, walking from *p. */
static const char *field(const char **p)
{
	const char *f = *p;
	*p += strlen(f) + 1;
	return f;
}

static uint32_t group_of(struct fl_store *st, const struct fl_group *g)
{
	char kb[6 * sizeof(uint32_t) + sizeof(long long)];
	const uint32_t key[6] = { g->pv, g->seed, g->model, g->kernel, g->blas, g->options };
	memcpy(kb, key, sizeof(key));
	memcpy(kb + sizeof(key), &g->iterations, sizeof(long long));
	const uint32_t gid = sdc_fl_intern(&st->group_ix, kb, sizeof(kb));
	if (gid == st->ngroups) {
		if (st->ngroups == st->cgroups) {
			const uint32_t c = st->cgroups ? 2 * st->cgroups : 64;
			struct fl_group *gs = realloc(st->groups, c * sizeof(*gs));
			if (!gs)
				return FL_NONE;
			st->groups = gs, st->cgroups = c;
		}
		st->groups[st->ngroups++] = *g;
	}
	return gid;
}

/* A new shape from its text and its first host's digests (under both locks). */
static int shape_make(struct fl_store *st, struct fl_shape *sh, const char *text, const struct fleet_rec *r)
{
	const char *p = text;
	const char *seed = field(&p), *lib = field(&p), *ver = field(&p), *core = field(&p);
	size_t np, nd, nr;
	if (sscanf(field(&p), "%zu %zu %zu", &np, &nd, &nr) != 3 || nr != r->nres)
		return -1;
	const char *probes = p;
	for (size_t i = 0; i < 2 * np; i++)
		field(&p);
	const char *devs = p;
	for (size_t i = 0; i < 3 * nd; i++)
		field(&p);
	static char buf[4096 * 3 + 8]; /* (under the lock) */
	snprintf(buf, sizeof(buf), "%s %s %s", lib, ver, core);
	const uint32_t seed_id = S(st, seed), blas_id = S(st, buf);
	sh->res = calloc(nr ? nr : 1, sizeof(*sh->res));
	sh->refhash = calloc(nr ? nr : 1, sizeof(*sh->refhash));
	if (!sh->res || !sh->refhash)
		return -1;
	sh->nres = (uint32_t)nr;
	for (size_t i = 0; i < nr; i++) {
		const char *probe = field(&p), *variant = field(&p), *dev = field(&p), *kernel = field(&p), *iter = field(&p),
			   *unit = field(&p);
		/* the model of the last device of that id, the options of the last probe of that name (as
		 * the fleet has always looked them up) */
		const char *model = "?", *type = "", *opts = "{}", *q = devs;
		for (size_t d = 0; d < nd; d++) {
			const char *id = field(&q), *m = field(&q), *t = field(&q);
			if (!strcmp(id, dev))
				model = m, type = t;
		}
		q = probes;
		for (size_t k = 0; k < np; k++) {
			const char *name = field(&q), *o = field(&q);
			if (!strcmp(name, probe))
				opts = o;
		}
		snprintf(buf, sizeof(buf), "%s/%s", probe, variant);
		struct fl_sres *x = &sh->res[i];
		x->pv = S(st, buf), x->dev = S(st, dev), x->model = S(st, model), x->type = S(st, type), x->unit = S(st, unit);
		x->group = x->ref = FL_NONE;
		const char *digest = FL_S(r, r->res[i].digest);
		sh->refhash[i] = XXH3_128bits(digest, strlen(digest));
		if (strcmp(iter, "-")) {
			const struct fl_group g = { .pv = x->pv, .seed = seed_id, .model = x->model, .kernel = S(st, kernel),
						    .blas = blas_id, .options = S(st, opts), .iterations = atoll(iter) };
			if ((x->group = group_of(st, &g)) == FL_NONE || (x->ref = S(st, digest)) == FL_NONE)
				return -1;
		}
	}
	return 0;
}

/* The shape of r (found, or made from it). FL_NONE when out of memory. */
static uint32_t shape_of(struct fl_store *st, struct fl_scratch *sc, const struct fleet_rec *r)
{
	if (shape_text(sc, r))
		return FL_NONE;
	const XXH128_hash_t h = XXH3_128bits(sc->text, sc->tlen);
	pthread_rwlock_rdlock(&st->shape_lock);
	uint32_t id = sdc_fl_intern_find(&st->shape_ix, &h, sizeof(h));
	pthread_rwlock_unlock(&st->shape_lock);
	if (id != FL_NONE)
		return id;
	pthread_rwlock_wrlock(&st->shape_lock);
	pthread_mutex_lock(&st->lock); /* (strs is the store's) */
	id = sdc_fl_intern(&st->shape_ix, &h, sizeof(h));
	if (id == st->nshapes) {
		struct fl_shape *sh = NULL;
		if (st->nshapes < st->cshapes)
			sh = &st->shapes[st->nshapes];
		else {
			const uint32_t c = st->cshapes ? 2 * st->cshapes : 16;
			struct fl_shape *v = realloc(st->shapes, c * sizeof(*v));
			if (v)
				st->shapes = v, st->cshapes = c, sh = &st->shapes[st->nshapes];
		}
		if (sh && (memset(sh, 0, sizeof(*sh)), !shape_make(st, sh, sc->text, r)))
			st->nshapes++;
		else
			id = FL_NONE; /* (the hash stays interned without a shape: every later host of it is refused) */
	}
	if (id >= st->nshapes)
		id = FL_NONE;
	pthread_mutex_unlock(&st->lock);
	pthread_rwlock_unlock(&st->shape_lock);
	return id;
}

/*
 * Whether cand stands for its host rather than have: the later sequence number of the host's own
 * state where both carry one and are of one kind (a clock cannot skew it); a report dated in the
 * future stands only where nothing else does, or where it is CRITICAL and the other is not (its
 * clock, not its age, put it first; its CRITICAL is never hidden by that clock: the skew is said
 * beside it); a full scheduled run over any other kind (an injected or partial run says less of
 * the host); then the later end.
 */
static bool newer(const struct fl_host *cand, const struct fl_host *have)
{
	if (cand->scheduled == have->scheduled && cand->sequence && have->sequence && cand->sequence != have->sequence)
		return cand->sequence > have->sequence;
	if (cand->future != have->future) {
		const struct fl_host *f = cand->future ? cand : have, *o = cand->future ? have : cand;
		const bool f_stands = f->verdict == SDC_CRITICAL && o->verdict != SDC_CRITICAL;
		return cand->future ? f_stands : !f_stands;
	}
	if (cand->scheduled != have->scheduled)
		return cand->scheduled;
	if (cand->sequence && have->sequence && cand->sequence != have->sequence)
		return cand->sequence > have->sequence;
	return cand->end > have->end;
}

/* Seconds a report may be dated ahead of this clock before it is a clock skew. */
#define CLOCK_SLACK 300.0

static char *finding_line(const struct fleet_rec *r, const struct fleet_find *f)
{
	char buf[1024];
	snprintf(buf, sizeof(buf), "%.16s: %.32s %.32s%s%.48s %.48s: %.400s", FL_S(r, f->cls), FL_S(r, f->device),
		 FL_S(r, f->probe), *FL_S(r, f->variant) ? "/" : "", FL_S(r, f->variant), FL_S(r, f->kind),
		 FL_S(r, f->detail));
	return strdup(buf);
}

/* The host's key in store.hostnames, "hostname\0identity" (fleet_data.h; under the lock). */
static uint32_t host_key(struct fl_store *st, struct fl_scratch *sc, const struct fleet_rec *r, const char *path)
{
	static const char *const kinds[] = { "machine-id", "product-uuid", "product-serial" };
	const uint32_t ids[] = { r->machine_id, r->product_uuid, r->product_serial };
	int k = 0;
	while (k < 3 && !*FL_S(r, ids[k]))
		k++;
	const char *slash = strrchr(path, '/');
	char folder[4096];
	snprintf(folder, sizeof(folder), "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
	sc->tlen = 0;
	if (text_put(sc, FL_S(r, r->host)) || text_put(sc, k < 3 ? kinds[k] : "folder"))
		return FL_NONE;
	sc->text[sc->tlen - 1] = ' '; /* "machine-id ID" */
	if (text_put(sc, k < 3 ? FL_S(r, ids[k]) : folder))
		return FL_NONE;
	return sdc_fl_intern(&st->hostnames, sc->text, sc->tlen - 1);
}

void sdc_fleet_store_add(struct fl_store *st, struct fl_scratch *sc, const struct fleet_rec *r, const char *path)
{
	const uint32_t shape = shape_of(st, sc, r);
	struct fl_host c = { 0 };
	c.path = strdup(path);
	c.summary = strdup(FL_S(r, r->summary));
	c.rate = malloc((r->nres ? r->nres : 1) * sizeof(float));
	if (shape == FL_NONE || !c.path || !c.summary || !c.rate) {
		host_release(&c);
		sdc_fleet_store_unreadable(st, path, "out of memory");
		return;
	}
	c.shape = shape;
	c.end = sdc_fleet_rec_end(r);
	const char *kind = FL_S(r, r->kind);
	c.scheduled = !*kind || !strcmp(kind, "scheduled");
	c.sequence = r->sequence;
	c.future = c.end > st->now + CLOCK_SLACK;
	c.present = true;
	c.verdict = (int)r->code;
	/* the node's state where the host keeps one: a CRITICAL stays until cleared */
	for (int nv = SDC_OK; nv <= SDC_UNKNOWN && *FL_S(r, r->node); nv++)
		if (!strcmp(FL_S(r, r->node), sdc_verdict_name((enum sdc_verdict)nv)))
			c.verdict = nv;
	c.nfind = (uint32_t)r->nfind;
	for (size_t i = 0; i < r->nfind && c.nkept < FL_FINDINGS_KEPT; i++)
		if ((c.find[c.nkept] = finding_line(r, &r->find[i])))
			c.nkept++;
	/* the results that differ from the shape's first host: another digest, a status not ok */
	sc->nexc = 0;
	pthread_rwlock_rdlock(&st->shape_lock);
	const struct fl_shape *sh = &st->shapes[shape];
	for (size_t i = 0; i < r->nres; i++) {
		const struct fleet_res *x = &r->res[i];
		c.rate[i] = (float)x->rate;
		const char *d = FL_S(r, x->digest);
		const bool other = sh->res[i].group != FL_NONE &&
				   !XXH128_isEqual(XXH3_128bits(d, strlen(d)), sh->refhash[i]);
		const bool bad = strcmp(FL_S(r, x->status), "ok") != 0;
		if (!other && !bad)
			continue;
		if (sc->nexc == sc->cexc) {
			const size_t n = sc->cexc ? 2 * sc->cexc : 64;
			struct fl_exc *e = realloc(sc->exc, n * sizeof(*e));
			if (!e)
				break;
			sc->exc = e, sc->cexc = n;
		}
		/* (rec offsets here; ids once under the lock) */
		sc->exc[sc->nexc++] = (struct fl_exc){ (uint32_t)i, other ? x->digest : FL_NONE, bad ? x->status : FL_NONE };
	}
	pthread_rwlock_unlock(&st->shape_lock);
	if (sc->nexc && !(c.exc = malloc(sc->nexc * sizeof(*c.exc)))) {
		host_release(&c);
		sdc_fleet_store_unreadable(st, path, "out of memory");
		return;
	}
	struct fl_host old = { 0 };
	pthread_mutex_lock(&st->lock);
	for (size_t i = 0; i < sc->nexc; i++) {
		struct fl_exc e = sc->exc[i];
		if (e.digest != FL_NONE)
			e.digest = S(st, FL_S(r, e.digest));
		if (e.status != FL_NONE)
			e.status = S(st, FL_S(r, e.status));
		c.exc[c.nexc++] = e;
	}
	const char *name = FL_S(r, r->host);
	c.name = host_key(st, sc, r, path);
	if (c.name == st->nhosts) {
		if (st->nhosts == st->chosts) {
			const size_t n = st->chosts ? 2 * st->chosts : 1024;
			struct fl_host *v = realloc(st->hosts, n * sizeof(*v));
			if (v)
				st->hosts = v, st->chosts = n;
		}
		if (st->nhosts < st->chosts)
			memset(&st->hosts[st->nhosts++], 0, sizeof(struct fl_host));
	}
	struct fl_host *have = c.name < st->nhosts ? &st->hosts[c.name] : NULL;
	if (!have) {
		old = c; /* out of memory: dropped */
	} else if (have->present && !newer(&c, have)) {
		if (c.future)
			named_add(&st->skewed, &st->nskewed, &st->cskewed, name, path, c.end - st->now);
		old = c;
	} else {
		if (have->present && have->future)
			named_add(&st->skewed, &st->nskewed, &st->cskewed, name, have->path, have->end - st->now);
		old = *have;
		*have = c;
	}
	pthread_mutex_unlock(&st->lock);
	host_release(&old);
}

uint32_t sdc_fl_host_digest(const struct fl_store *st, const struct fl_host *h, uint32_t i)
{
	for (uint32_t k = 0; k < h->nexc; k++)
		if (h->exc[k].index == i && h->exc[k].digest != FL_NONE)
			return h->exc[k].digest;
	return st->shapes[h->shape].res[i].ref;
}

uint32_t sdc_fl_host_status(const struct fl_store *st, const struct fl_host *h, uint32_t i)
{
	(void)st;
	for (uint32_t k = 0; k < h->nexc; k++)
		if (h->exc[k].index == i)
			return h->exc[k].status;
	return FL_NONE;
}

/* ---- the vote ---- */

static const struct fl_store *sort_st;

static int by_name(const void *a, const void *b)
{
	const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const int c = strcmp(fl_str(&sort_st->hostnames, x), fl_str(&sort_st->hostnames, y));
	return c ? c : strcmp(fl_host_identity(&sort_st->hostnames, x), fl_host_identity(&sort_st->hostnames, y));
}

const char *sdc_fl_host_name(const struct fl_store *st, const struct fl_host *h)
{
	return h->label ? h->label : fl_str(&st->hostnames, h->name);
}

/* Whether host h's report lies in folder f (the identity of a report that has none). */
static bool lies_in(const struct fl_host *h, const char *f)
{
	const size_t n = strlen(f);
	return !strncmp(h->path, f, n) && h->path[n] == '/' && !strchr(h->path + n + 1, '/');
}

/*
 * The hosts of one hostname, order[0..n) (sorted by identity): a report without an identity
 * (older than schema 1.2) that lies in the folder of one with an identity is the same machine
 * (the newer stands); machines still sharing the name are each labelled with their identity and
 * named in store.samename.
 */
static void one_name(struct fl_store *st, const uint32_t *order, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct fl_host *old = &st->hosts[order[i]];
		const char *id = fl_host_identity(&st->hostnames, order[i]);
		if (!old->present || strncmp(id, "folder ", 7))
			continue;
		for (size_t k = 0; k < n; k++) {
			struct fl_host *h = &st->hosts[order[k]];
			if (k == i || !h->present || !strncmp(fl_host_identity(&st->hostnames, order[k]), "folder ", 7) ||
			    !lies_in(h, id + 7))
				continue;
			struct fl_host *lose = newer(old, h) ? h : old;
			if (lose->future)
				named_add(&st->skewed, &st->nskewed, &st->cskewed, fl_str(&st->hostnames, lose->name), lose->path,
					  lose->end - st->now);
			if (lose == h) { /* the older report's entry stands, under the identified host's key */
				struct fl_host keep = *old;
				keep.name = h->name;
				host_release(h);
				*h = keep;
				memset(old, 0, sizeof(*old)), old->name = order[i];
			} else
				host_release(old);
			break;
		}
	}
	size_t left = 0;
	for (size_t i = 0; i < n; i++)
		left += st->hosts[order[i]].present;
	if (left < 2)
		return;
	/* the identities shown as far as they differ (12 characters at least, as a short commit id) */
	int show = 12;
	for (size_t i = 0; i < n && n <= 64; i++)
		for (size_t j = i + 1; j < n; j++) {
			const char *x = fl_host_identity(&st->hostnames, order[i]), *y = fl_host_identity(&st->hostnames, order[j]);
			const char *sx = strchr(x, ' ');
			int c = 0;
			while (x[c] && x[c] == y[c])
				c++;
			if (sx && c - (int)(sx - x) >= show)
				show = c - (int)(sx - x);
		}
	if (n > 64)
		show = 255;
	char line[4096];
	size_t len = 0, k = 0;
	const char *name = fl_str(&st->hostnames, order[0]);
	static const char *const count[] = { "", "", "two", "three", "four" };
	if (left <= 4)
		len += (size_t)snprintf(line, sizeof(line), "%s machines report hostname %s:", count[left], name);
	else
		len += (size_t)snprintf(line, sizeof(line), "%zu machines report hostname %s:", left, name);
	for (size_t i = 0; i < n; i++) {
		struct fl_host *h = &st->hosts[order[i]];
		if (!h->present)
			continue;
		const char *id = fl_host_identity(&st->hostnames, order[i]), *sp = strchr(id, ' ');
		if (len < sizeof(line))
			len += (size_t)snprintf(line + len, sizeof(line) - len, "%s %s (%s)", k == 0 ? "" : k + 1 == left ? " and" : ",",
						id, h->path);
		k++;
		char label[600];
		snprintf(label, sizeof(label), "%.255s (%.*s %.*s)", name, sp ? (int)(sp - id) : 0, id, show, sp ? sp + 1 : id);
		if (!strncmp(id, "folder ", 7)) { /* the folder's last part says it */
			const char *f = strrchr(id, '/');
			snprintf(label, sizeof(label), "%.255s (folder %.200s)", name, f ? f + 1 : id + 7);
		}
		free(h->label);
		h->label = strdup(label);
	}
	named_add(&st->samename, &st->nsamename, &st->csamename, name, line, (double)left);
}

/* What holds across hosts once every report is in: machines of one hostname, standing reports
 * dated in the future (the skew said beside what they say). host_order sorted by name. */
static void hosts_finish(struct fl_store *st)
{
	for (size_t o = 0, end; o < st->nhosts; o = end) {
		const char *name = fl_str(&st->hostnames, st->host_order[o]);
		for (end = o + 1; end < st->nhosts && !strcmp(fl_str(&st->hostnames, st->host_order[end]), name); end++)
			;
		if (end - o > 1)
			one_name(st, &st->host_order[o], end - o);
	}
	for (size_t o = 0; o < st->nhosts; o++) {
		const struct fl_host *h = &st->hosts[st->host_order[o]];
		if (h->present && h->future)
			named_add(&st->skewed, &st->nskewed, &st->cskewed, sdc_fl_host_name(st, h), h->path, h->end - st->now);
	}
}

void sdc_fleet_group_key(const struct fl_store *st, const struct fl_group *g, char *buf, size_t len)
{
	snprintf(buf, len, "%s seed %s on %s, kernel %s, %s, %lld iterations, options %s", fl_str(&st->strs, g->pv),
		 fl_str(&st->strs, g->seed), fl_str(&st->strs, g->model), fl_str(&st->strs, g->kernel),
		 fl_str(&st->strs, g->blas), g->iterations, fl_str(&st->strs, g->options));
}

static int by_key(const void *a, const void *b)
{
	static char ka[8192], kb[8192]; /* (qsort on one thread) */
	sdc_fleet_group_key(sort_st, &sort_st->groups[*(const uint32_t *)a], ka, sizeof(ka));
	sdc_fleet_group_key(sort_st, &sort_st->groups[*(const uint32_t *)b], kb, sizeof(kb));
	return strcmp(ka, kb);
}

static int by_group_then_host(const void *a, const void *b)
{
	const struct fl_minority *x = a, *y = b;
	const uint32_t gx = sort_st->groups[x->group].order, gy = sort_st->groups[y->group].order;
	if (gx != gy)
		return gx < gy ? -1 : 1;
	if (x->host != y->host) /* host: its place in host_order */
		return x->host < y->host ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

int sdc_fleet_vote_all(struct fl_store *st)
{
	sort_st = st;
	st->host_order = malloc((st->nhosts ? st->nhosts : 1) * sizeof(uint32_t));
	st->group_order = malloc((st->ngroups ? st->ngroups : 1) * sizeof(uint32_t));
	if (!st->host_order || !st->group_order)
		return -1;
	for (uint32_t i = 0; i < st->nhosts; i++)
		st->host_order[i] = i;
	sdc_sort(st->host_order, st->nhosts, sizeof(uint32_t), by_name);
	hosts_finish(st);
	/* each digest of each group counted, in the order digests first appear (hosts by name) */
	struct fl_intern pairs = { 0 };
	uint32_t *count = NULL, cap = 0;
	for (uint32_t g = 0; g < st->ngroups; g++)
		st->groups[g].devices = st->groups[g].agreeing = 0, st->groups[g].best = FL_NONE;
	for (size_t o = 0; o < st->nhosts; o++) {
		const struct fl_host *h = &st->hosts[st->host_order[o]];
		if (!h->present)
			continue;
		const struct fl_shape *sh = &st->shapes[h->shape];
		for (uint32_t i = 0; i < sh->nres; i++) {
			if (sh->res[i].group == FL_NONE)
				continue;
			const uint32_t key[2] = { sh->res[i].group, sdc_fl_host_digest(st, h, i) };
			const uint32_t id = sdc_fl_intern(&pairs, key, sizeof(key));
			if (id == FL_NONE)
				return free(count), sdc_fl_intern_release(&pairs), -1;
			if (id >= cap) {
				const uint32_t c = cap ? 2 * cap : 1024;
				uint32_t *v = realloc(count, c * sizeof(*v));
				if (!v)
					return free(count), sdc_fl_intern_release(&pairs), -1;
				memset(v + cap, 0, (c - cap) * sizeof(*v));
				count = v, cap = c;
			}
			count[id]++;
			st->groups[key[0]].devices++;
		}
	}
	/* the most common digest (the first to appear among equals); a majority is more than half */
	for (uint32_t id = 0; id < pairs.n; id++) {
		uint32_t key[2];
		memcpy(key, fl_str(&pairs, id), sizeof(key));
		struct fl_group *g = &st->groups[key[0]];
		if (count[id] > g->agreeing)
			g->agreeing = count[id], g->best = key[1];
	}
	for (uint32_t g = 0; g < st->ngroups; g++)
		if (2 * (uint64_t)st->groups[g].agreeing <= st->groups[g].devices)
			st->groups[g].best = FL_NONE;
	free(count);
	sdc_fl_intern_release(&pairs);
	for (uint32_t g = 0; g < st->ngroups; g++)
		st->group_order[g] = g;
	sdc_sort(st->group_order, st->ngroups, sizeof(uint32_t), by_key);
	for (uint32_t o = 0; o < st->ngroups; o++)
		st->groups[st->group_order[o]].order = o;
	/* the minority: every device off the majority's digest; with no majority, every device of a
	 * group that disagrees */
	size_t cmin = 0;
	for (size_t o = 0; o < st->nhosts; o++) {
		const struct fl_host *h = &st->hosts[st->host_order[o]];
		if (!h->present)
			continue;
		const struct fl_shape *sh = &st->shapes[h->shape];
		for (uint32_t i = 0; i < sh->nres; i++) {
			const struct fl_group *g = sh->res[i].group == FL_NONE ? NULL : &st->groups[sh->res[i].group];
			if (!g || g->agreeing == g->devices)
				continue;
			const uint32_t d = sdc_fl_host_digest(st, h, i);
			if (g->best != FL_NONE && d == g->best)
				continue;
			if (st->nminority == cmin) {
				cmin = cmin ? 2 * cmin : 64;
				struct fl_minority *v = realloc(st->minority, cmin * sizeof(*v));
				if (!v)
					return -1;
				st->minority = v;
			}
			st->minority[st->nminority++] = (struct fl_minority){ (uint32_t)o, i, sh->res[i].group, d };
		}
	}
	sdc_sort(st->minority, st->nminority, sizeof(*st->minority), by_group_then_host);
	for (size_t m = 0; m < st->nminority; m++)
		st->minority[m].host = st->host_order[st->minority[m].host]; /* its place -> the host's id */
	return 0;
}

/*
 * The one rule for a host's level in the fleet, in the text, the exit code and the page alike:
 * CRITICAL where its report (the node's state where it has one) is CRITICAL or a device of it is
 * in a vote's minority; UNKNOWN where its report is (the fleet's verdict takes that as a
 * WARNING: a host that could not test is not corrupt); WARNING where its report is, where it is
 * stale (older than max_age), dated in the future, or shares its hostname with another machine;
 * else OK. A device slower than the fleet's median is shown, never a level: a rate is no
 * verdict (the profile's floor is, in the report's own "degraded" result). why: the reasons.
 */
static void why_add(char *why, size_t len, size_t *n, const char *fmt, ...) SDC_PRINTF(4, 5);
static void why_add(char *why, size_t len, size_t *n, const char *fmt, ...)
{
	va_list ap;
	if (*n && *n < len)
		*n += (size_t)snprintf(why + *n, len - *n, "; ");
	va_start(ap, fmt);
	if (*n < len)
		*n += (size_t)vsnprintf(why + *n, len - *n, fmt, ap);
	va_end(ap);
}

int sdc_fl_host_level(const struct fl_store *st, const struct fl_host *h, bool minority, double max_age, char *why,
		      size_t len)
{
	size_t n = 0;
	enum sdc_verdict level = SDC_OK;
	why[0] = '\0';
	if (h->verdict != SDC_OK) {
		level = sdc_verdict_worst(level, (enum sdc_verdict)h->verdict);
		why_add(why, len, &n, "its report says %s", sdc_verdict_name((enum sdc_verdict)h->verdict));
	}
	if (minority) {
		level = SDC_CRITICAL;
		why_add(why, len, &n, "a device of it is in a vote's minority");
	}
	const bool stale = st->now - h->end > max_age;
	if (stale)
		why_add(why, len, &n, "stale: its last report is %.1f days old", (st->now - h->end) / 86400);
	if (h->future)
		why_add(why, len, &n, "clock skew: its report is dated %.0f s in the future", h->end - st->now);
	if (h->label)
		why_add(why, len, &n, "another machine reports its hostname");
	if (stale || h->future || h->label)
		level = sdc_verdict_worst(level, SDC_WARNING);
	return (int)level;
}
