/*
 * Faults that kill or hang the worker that meets them, injected the way a sick core makes them
 * (tests of runner/burn.h, whose processes they end; `sdcscan campaign cpu-faults` flips registers instead). Every probe
 * takes them as inject targets, on any device (a GPU lane's host thread too), and meets them in its
 * iteration loop (sdc_worker_fatal_faults): nothing is raise()d, each is a real fault of the thread:
 *   SEGV  a pointer to the probe's data with a high address bit flipped, read: SEGV_MAPERR
 *   BUS   a pointer redirected into a file mapping past the file's end, read: BUS_ADRERR
 *   MCE   a page of this process poisoned (MADV_HWPOISON) and read: BUS_MCEERR_AR; where the
 *         kernel does not offer MADV_HWPOISON (CONFIG_MEMORY_FAILURE, CAP_SYS_ADMIN), the notice
 *         the kernel sends then (SIGBUS, BUS_MCEERR_AR, the page's address) queued to the thread,
 *         and the injection says so
 *   ILL   a call through a function pointer that landed on an undefined instruction (ud2)
 *   TRAP  a call through a function pointer that landed on breakpoint padding (int3)
 *   FPE   an integer division by a counter that a flip made zero: FPE_INTDIV
 *   ABRT  a loop counter a flip put out of range, caught by the probe's own check: abort()
 *   HANG  a loop whose counter a flip put on the wrong parity: it never ends (no heartbeat)
 *   SLOW  not fatal: the iteration crawls 15 s more with heartbeats (a throttled device), which
 *         the runner must wait for however short the variant's time
 */
#ifndef SDC_FATAL_H
#define SDC_FATAL_H

#include <stdbool.h>
#include <stdint.h>

#include "probe/probe.h"

/* "SEGV: ...", NULL-terminated: the targets every probe takes. */
extern const char *const sdc_fatal_targets[];
/* Whether target names one of them (or one of the tests' build's, below). */
bool sdc_fatal_target(const char *target);

/*
 * Faults that break a worker's whole process (its heap, the allocator's lock, its exit), for the
 * tests' build only: tests/hostile/hostile.c defines this in the sdcscan-hostile executable, and
 * sdcscan itself has none (the weak reference is NULL). targets: "NAME: what it does",
 * NULL-terminated; meet makes the fault named happen now. after_result, when a fault set it, runs
 * in the worker's process after its result was sent (a process stuck at its exit).
 */
struct sdc_fatal_extra {
	const char *const *targets;
	void (*meet)(struct sdc_worker *w, const char *name, uint64_t iter);
};
extern const struct sdc_fatal_extra sdc_fatal_hostile __attribute__((weak));
extern void (*sdc_fatal_after_result)(void);

/* The faults of these targets due on w at iteration iter, met now (data: memory the probe is
 * about to use, whose pointer SEGV and BUS corrupt). Returns only when none was due. */
void sdc_worker_fatal_faults(struct sdc_worker *w, uint64_t iter, const void *data);

#endif
