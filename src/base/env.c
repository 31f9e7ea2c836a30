/* Environment variables changed while threads run (env.h). */
#include "base/env.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RESERVED_MAX 4
#define NAME_MAX_LEN 31

/* One reserved name: BUFS "NAME=value" buffers in environ, at most one visible, written in turn,
 * so a value a reader got from getenv is rewritten only BUFS - 1 puts later. A hidden buffer's
 * name starts with HIDDEN[b] instead of its first letter, so getenv(NAME) passes over it (a mark
 * each: putenv would take two entries of one name for one). */
#define BUFS 4
static const char HIDDEN[BUFS] = { '_', '-', '.', '+' };

struct reserved {
	char name[NAME_MAX_LEN + 1];
	char *buf[BUFS];
	int visible; /* the buffer getenv finds, or -1: none (the variable is absent) */
	int next;    /* the buffer the next value goes to */
	char *initial;
};

static struct reserved reserved[RESERVED_MAX];
static int nreserved;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static struct reserved *find(const char *name)
{
	for (int i = 0; i < nreserved; i++)
		if (!strcmp(reserved[i].name, name))
			return &reserved[i];
	return NULL;
}

/* The first byte of a buffer, visible (the name's own) or hidden ('_'), stored so that a reader
 * sees the value written before it. */
static void show(struct reserved *r, int b, bool visible)
{
	atomic_thread_fence(memory_order_release);
	*(volatile char *)r->buf[b] = visible ? r->name[0] : HIDDEN[b];
}

int sdc_env_reserve(const char *name)
{
	const size_t len = strlen(name);
	if (nreserved == RESERVED_MAX || len == 0 || len > NAME_MAX_LEN || memchr(HIDDEN, name[0], BUFS) || find(name))
		return -1;
	struct reserved *r = &reserved[nreserved];
	const char *now = getenv(name);
	if (now && strlen(now) > SDC_ENV_VALUE_MAX)
		return -1; /* too long to be one of ours: left as it is, and not reserved */
	memset(r, 0, sizeof(*r));
	memcpy(r->name, name, len);
	r->initial = now ? strdup(now) : NULL;
	for (int b = 0; b < BUFS; b++) {
		r->buf[b] = calloc(1, len + 2 + SDC_ENV_VALUE_MAX);
		if (!r->buf[b])
			return -1;
		snprintf(r->buf[b], len + 2 + SDC_ENV_VALUE_MAX, "%c%s=%s", HIDDEN[b], name + 1, now ? now : "");
	}
	/* the variable's own entry (if any) goes, while no other thread runs; ours stay for good */
	unsetenv(name);
	for (int b = 0; b < BUFS; b++)
		if (putenv(r->buf[b]))
			return -1;
	r->visible = -1;
	r->next = 1;
	if (now) {
		show(r, 0, true);
		r->visible = 0;
	}
	nreserved++;
	return 0;
}

int sdc_env_put(const char *name, const char *value)
{
	if (value && strlen(value) > SDC_ENV_VALUE_MAX)
		return -1;
	pthread_mutex_lock(&lock); /* wait-ok: held only to copy a value */
	struct reserved *r = find(name);
	if (!r) {
		pthread_mutex_unlock(&lock);
		return -1;
	}
	const int old = r->visible;
	if (value) {
		/* the next hidden buffer takes the value, then shows; the old one hides after */
		const int b = r->next;
		r->next = (b + 1) % BUFS;
		snprintf(r->buf[b] + 1, strlen(r->name) + 1 + SDC_ENV_VALUE_MAX, "%s=%s", r->name + 1, value);
		show(r, b, true);
		r->visible = b;
	} else {
		r->visible = -1;
	}
	if (old >= 0 && old != r->visible)
		show(r, old, false);
	pthread_mutex_unlock(&lock);
	return 0;
}

const char *sdc_env_initial(const char *name)
{
	const struct reserved *r = find(name);
	return r ? r->initial : NULL;
}
