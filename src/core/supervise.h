/*
 * Burn workers that crash or hang are findings at their device, never the end of the run.
 *
 * Why a handler in the thread and not a child process per device (OpenDCDiag, stress-ng): the
 * runner's vote across devices, the probes' shared tables and the fleet's exchange live in the one
 * process, and under mpirun a fork is not safe. So each worker thread runs its probe on an alternate
 * signal stack behind a recovery point: a fault the CPU or GPU raises in it (SIGSEGV, SIGBUS,
 * SIGILL, SIGFPE, SIGTRAP) or its own abort (SIGABRT: a failed check of the heap or an assertion)
 * is recorded in the worker's slot (async-signal-safe stores only) and the thread jumps back out:
 * the other devices go on, and the run ends with its verdict and every output. What a handler
 * cannot undo (a lock the dead thread held, a second fault, a fault outside a worker) ends or
 * stalls the process; the state's start record (core/state.h) then keeps `sdcscan status` from
 * calling the host OK, and the runner's deadline bounds a stall it can see.
 *
 * A hang: a worker whose iteration count and heartbeat (sdc_worker_heartbeat) stand still for the
 * probe's timeout is named at its device (UNKNOWN: a stall can come from the host's scheduling,
 * a stopped process or swap, so it is not called corruption) and left behind; the run goes on.
 */
#ifndef SDC_SUPERVISE_H
#define SDC_SUPERVISE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "probe.h"

/* What the handler saw, written in signal context. */
struct sdc_crash {
	volatile sig_atomic_t hit;
	int signo, code;
	int sender;          /* si_pid of a signal sent by a process (si_code <= 0), else 0 */
	uintptr_t addr, ip;
	uint64_t iteration;
};

/* The handlers, installed once for the process (before any worker starts); 0 or -1. */
int sdc_supervise_init(void);

/* Runs run(w) on the calling (worker) thread behind a recovery point: 0 when it returned, 1 when
 * it died of a fault (c says which). The thread's alternate signal stack is set up and undone here. */
int sdc_supervise_call(struct sdc_worker *w, void (*run)(struct sdc_worker *), struct sdc_crash *c);

/* Whether a worker of this process died of a fault: what it held (the dynamic loader's lock, one
 * of malloc's) may never be released, so the process leaves without its exit handlers. */
bool sdc_supervise_crashed(void);

/* Whether a crash is the host's (the kernel raised it, or the process aborted itself), not a
 * signal another process sent: only the former is CRITICAL. */
bool sdc_crash_is_fault(const struct sdc_crash *c);

/* The finding of a crash in w (class crash, or error for a signal another process sent):
 * signal, si_code, address, instruction as module+offset (and symbol where the module has one). */
void sdc_crash_finding(const struct sdc_worker *w, const struct sdc_crash *c, struct sdc_finding *f);

#endif
