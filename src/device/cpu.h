/* CPU devices: the logical CPUs a run burns, each named by core, package, model and microcode. */
#ifndef SDC_CPU_H
#define SDC_CPU_H

#include <sched.h>
#include <stddef.h>

#include "device/device.h"

/* Parses "0-3,8,10-11" into set. Returns 0, or -1 with err naming the bad part. */
int sdc_cpu_list_parse(const char *s, cpu_set_t *set, char *err, size_t errlen);

/*
 * The CPUs in want (all of this process's allowed CPUs when NULL), as devices of kind CPU. A
 * requested CPU that is offline or outside the allowed set is an error.
 */
int sdc_cpu_devices(const cpu_set_t *want, struct sdc_device **out, int *n, char *err, size_t errlen);

/* Pins the calling thread to one logical CPU. Returns 0 or an errno value. */
int sdc_cpu_pin(int cpu);

#endif
