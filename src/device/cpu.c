/* The logical CPUs a run burns, with core, package, model and microcode (device/cpu.h). */
#include "device/cpu.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/message.h"
#include "base/parse.h"

int sdc_cpu_list_parse(const char *s, cpu_set_t *set, char *err, size_t errlen)
{
	uint64_t bits[CPU_SETSIZE / 64];
	const char *bad;
	CPU_ZERO(set);
	if (!s || !*s) {
		snprintf(err, errlen, "empty CPU list (expected a list like 0-3,8)");
		return -1;
	}
	if (sdc_parse_ranges(s, CPU_SETSIZE, bits, &bad)) {
		if (bad)
			snprintf(err, errlen, "cannot parse CPU list '%s' at '%s' (expected a list like 0-3,8)", s, bad);
		else
			snprintf(err, errlen, "bad CPU range in '%s' (expected ascending CPU numbers below %d)", s,
				 CPU_SETSIZE);
		return -1;
	}
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (bits[c / 64] >> (c % 64) & 1)
			CPU_SET(c, set);
	return 0;
}

static int read_int_file(const char *path, int fallback)
{
	FILE *f = fopen(path, "r");
	int v = fallback;
	if (!f)
		return fallback;
	if (fscanf(f, "%d", &v) != 1)
		v = fallback;
	fclose(f);
	return v;
}

/* Fills model and microcode from the /proc/cpuinfo block of every listed CPU. */
static void read_cpuinfo(struct sdc_device *devs, int n)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return;
	char line[512];
	int cur = -1;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		char *val = colon + 1;
		while (*val == ' ' || *val == '\t')
			val++;
		val[strcspn(val, "\n")] = '\0';
		size_t keylen = (size_t)(colon - line);
		while (keylen && (line[keylen - 1] == ' ' || line[keylen - 1] == '\t'))
			keylen--;
		if (keylen == 9 && !strncmp(line, "processor", 9)) {
			cur = atoi(val);
			continue;
		}
		for (int i = 0; i < n; i++) {
			if (devs[i].cpu.logical != cur)
				continue;
			if ((keylen == 10 && !strncmp(line, "model name", 10)) ||
			    (keylen == 8 && !strncmp(line, "cpu model", 8)))
				sdc_strlcpy(devs[i].model, val, sizeof(devs[i].model));
			else if (keylen == 9 && !strncmp(line, "microcode", 9))
				sdc_strlcpy(devs[i].cpu.microcode, val, sizeof(devs[i].cpu.microcode));
		}
	}
	fclose(f);
}

int sdc_cpu_devices(const cpu_set_t *want, struct sdc_device **out, int *n, char *err, size_t errlen)
{
	cpu_set_t allowed;
	if (sched_getaffinity(0, sizeof(allowed), &allowed)) {
		snprintf(err, errlen, "sched_getaffinity: %s", strerror(errno));
		return -1;
	}
	if (want) {
		for (int c = 0; c < CPU_SETSIZE; c++) {
			if (CPU_ISSET(c, want) && !CPU_ISSET(c, &allowed)) {
				snprintf(err, errlen,
					 "--cpus: CPU %d is offline or not in this process's CPU set (allowed: %d CPUs)",
					 c, CPU_COUNT(&allowed));
				return -1;
			}
		}
	}
	const cpu_set_t *use = want ? want : &allowed;
	int count = CPU_COUNT(use);
	struct sdc_device *devs = calloc((size_t)count, sizeof(*devs));
	if (!devs) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int k = 0;
	for (int c = 0; c < CPU_SETSIZE && k < count; c++) {
		if (!CPU_ISSET(c, use))
			continue;
		struct sdc_device *d = &devs[k++];
		char path[128];
		d->kind = SDC_DEVICE_CPU;
		d->cpu.logical = c;
		snprintf(d->id, sizeof(d->id), "cpu%d", c);
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/core_id", c);
		d->cpu.core_id = read_int_file(path, -1);
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
		d->cpu.package_id = read_int_file(path, -1);
		sdc_strlcpy(d->model, "unknown", sizeof(d->model));
		sdc_strlcpy(d->cpu.microcode, "unknown", sizeof(d->cpu.microcode));
	}
	read_cpuinfo(devs, count);
	*out = devs;
	*n = count;
	return 0;
}

int sdc_cpu_pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}
