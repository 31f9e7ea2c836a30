/*
 * How a burn's process ended, said as a finding: a crash the CPU or GPU raised in it (SIGSEGV,
 * SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS) or its own abort (SIGABRT: glibc's heap checks, an
 * assertion) is class crash (CRITICAL) at its device; a signal another process sent, or a SIGKILL
 * from outside, is class error (UNKNOWN). The record comes from the process's fault handler
 * (runner/burn.h's slot), read by the parent after the process died.
 */
#ifndef SDC_CORE_CRASH_H
#define SDC_CORE_CRASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "run/record.h"

/* What the parent knows of a process that died of a signal. */
struct sdc_crash_seen {
	int signo, code;
	bool recorded;  /* its handler wrote the record (code, address, instruction) */
	bool is_fault;  /* the host's: the kernel raised it, or the process aborted itself */
	int sender;     /* a process that sent it, else 0 */
	uint64_t addr, ip, iteration, module_offset;
	const char *module; /* file name of the module holding ip ("" when none) */
	const char *device; /* "cpu3"; NULL: the variant's setup, in its own process */
};

/* "SIGSEGV" */
const char *sdc_signal_name(int sig);
/* Whether sig is one a fault raises (or an abort): a death by it with no record is still a crash. */
bool sdc_signal_is_fault(int sig);
/* "libx.so+0x1f2a3 (fn+0x42)": the module and offset, and the symbol where this process has the
 * same module loaded; the bare address where no module was found. */
void sdc_crash_describe_ip(const char *module, uint64_t offset, uint64_t ip, char *buf, size_t len);
/* The finding (class crash, or error for a signal from outside): signal, si_code, address,
 * instruction; the caller fills probe, variant, device, operation and time. */
void sdc_crash_finding(const struct sdc_crash_seen *c, struct sdc_finding *f);

#endif
