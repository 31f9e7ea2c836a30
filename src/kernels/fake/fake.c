/*
 * What the fake GPU module's files share (kernels/fake/fake.h): the environment knobs, the clock,
 * the GPU bound to the calling thread and the families made one version older on request.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernels/fake/fake.h"

_Thread_local int fake_bound = -1;

int fake_env_int(const char *name, int def)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : def;
}

double fake_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void fake_wait_out(double t0, double timeout)
{
	while (fake_now() - t0 < timeout)
		usleep(20000);
}

int fake_stale(const char *name)
{
	const char *stale = getenv("FAKE_GPU_STALE");
	return stale && !strcmp(stale, name);
}
