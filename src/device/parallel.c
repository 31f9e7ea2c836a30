/* A parallel loop a device for the tools that are not the burn (device/parallel.h). */
#include "device/parallel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "base/message.h"
#include "base/stop.h"

struct pool {
	sdc_job_fn fn;
	void *arg;
	uint64_t njobs;
	_Atomic uint64_t next;
};

struct thread {
	struct pool *pool;
	int worker;
	const struct sdc_device *dev;
	pthread_t tid;
};

static void *loop(void *p)
{
	struct thread *t = p;
	char err[200];
	if (sdc_device_bind(t->dev, err, sizeof(err)))
		sdc_warning("%s: %s (the work runs unbound)", t->dev->id, err);
	for (;;) {
		const uint64_t job = atomic_fetch_add(&t->pool->next, 1);
		if (job >= t->pool->njobs || sdc_stop_is_requested())
			break;
		t->pool->fn(t->pool->arg, t->worker, job);
	}
	return NULL;
}

int sdc_parallel_for(const struct sdc_device *devs, int ndev, uint64_t njobs, sdc_job_fn fn, void *arg)
{
	struct pool pool = { .fn = fn, .arg = arg, .njobs = njobs };
	struct thread *t = calloc((size_t)ndev, sizeof(*t));
	if (!t)
		return -1;
	int started = 0;
	for (; started < ndev; started++) {
		t[started] = (struct thread){ .pool = &pool, .worker = started, .dev = &devs[started] };
		if (pthread_create(&t[started].tid, NULL, loop, &t[started]))
			break;
	}
	for (int i = 0; i < started; i++)
		pthread_join(t[i].tid, NULL);
	free(t);
	return started == ndev && atomic_load(&pool.next) >= njobs && !sdc_stop_is_requested() ? 0 : -1;
}
