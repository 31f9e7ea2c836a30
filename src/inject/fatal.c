/* Faults that kill or hang a worker, met the way a sick core meets them (inject/fatal.h). */
#include "inject/fatal.h"

#include "base/message.h"
#include "base/clock.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

const char *const sdc_fatal_targets[] = {
	"SEGV: a pointer to the probe's data with a high address bit flipped, read (SIGSEGV)",
	"BUS: a pointer redirected past the end of a mapped file, read (SIGBUS)",
	"MCE: a poisoned page read (SIGBUS, BUS_MCEERR_AR; the kernel's notice where it cannot poison)",
	"ILL: a call through a function pointer landing on an undefined instruction (SIGILL)",
	"TRAP: a call through a function pointer landing on breakpoint padding (SIGTRAP)",
	"FPE: an integer division by a counter a flip made zero (SIGFPE)",
	"ABRT: a counter a flip put out of range, caught by a check that aborts (SIGABRT)",
	"HANG: a loop whose counter a flip put on the wrong parity: it never ends",
	"SLOW: the iteration crawls for 15 s more, alive (heartbeats), as a throttled device or one retrying its "
	"errors; not fatal: it must be waited for, not cut short",
	NULL,
};

void (*sdc_fatal_after_result)(void);

static bool listed(const char *const *targets, const char *target)
{
	for (int i = 0; targets && targets[i]; i++) {
		const size_t n = strcspn(targets[i], ":");
		if (strlen(target) == n && !strncmp(target, targets[i], n))
			return true;
	}
	return false;
}

bool sdc_fatal_target(const char *target)
{
	return listed(sdc_fatal_targets, target) || (&sdc_fatal_hostile && listed(sdc_fatal_hostile.targets, target));
}

static volatile uint64_t sink;

/* data's address with the lowest high bit (46 down) whose flip lands on no mapping. */
static const volatile uint8_t *unmapped_alias(const void *data)
{
	const long page = sysconf(_SC_PAGESIZE);
	for (int bit = 46; bit >= 32; bit--) {
		const uintptr_t a = (uintptr_t)data ^ ((uintptr_t)1 << bit);
		unsigned char v;
		if (mincore((void *)(a & ~(uintptr_t)(page - 1)), 1, &v) && errno == ENOMEM)
			return (const volatile uint8_t *)a;
	}
	return (const volatile uint8_t *)((uintptr_t)data ^ ((uintptr_t)1 << 46));
}

static void fault_segv(const void *data)
{
	sink = *unmapped_alias(data);
}

static void fault_bus(const void *data)
{
	const long page = sysconf(_SC_PAGESIZE);
	FILE *f = tmpfile();
	if (!f || ftruncate(fileno(f), page))
		return;
	volatile uint8_t *p = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, fileno(f), 0);
	if (p == MAP_FAILED || ftruncate(fileno(f), 0))
		return;
	sink = p[(uintptr_t)data % (uintptr_t)page]; /* past the file's end: no page to map */
}

/* A page of this process, poisoned by the kernel where it can (*poisoned). NULL: none. */
static volatile uint8_t *mce_page(bool *poisoned)
{
	const long page = sysconf(_SC_PAGESIZE);
	volatile uint8_t *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	p[0] = 1;
	*poisoned = !madvise((void *)p, (size_t)page, MADV_HWPOISON);
	return p;
}

static void fault_mce(volatile uint8_t *p, bool poisoned)
{
	if (!p)
		return;
	if (poisoned) {
		sink = p[0];
		return;
	}
	/* what the kernel's memory-failure handling sends a thread that touches a poisoned page
	 * (mm/memory-failure.c: force_sig_mceerr(BUS_MCEERR_AR, addr, ...)); a process may queue a
	 * signal with a kernel si_code to itself (rt_tgsigqueueinfo(2)) */
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	si.si_signo = SIGBUS;
	si.si_code = BUS_MCEERR_AR;
	si.si_addr = (void *)p;
	syscall(SYS_rt_tgsigqueueinfo, getpid(), (pid_t)syscall(SYS_gettid), SIGBUS, &si);
}

/* A page of code that is all one byte: ud2 (0x0f 0x0b) or int3 (0xcc). */
static void fault_code(bool undefined)
{
	const long page = sysconf(_SC_PAGESIZE);
	uint8_t *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	for (long i = 0; i < page; i++)
		p[i] = undefined ? (i % 2 ? 0x0b : 0x0f) : 0xcc;
	if (mprotect(p, (size_t)page, PROT_READ | PROT_EXEC))
		return;
	void (*volatile fn)(void) = NULL;
	memcpy((void *)&fn, &p, sizeof(p)); /* the corrupted function pointer */
	fn();
}

/* (UBSan would name the division first: the fault is the CPU's, as a flipped counter makes it) */
__attribute__((no_sanitize("undefined"))) static void fault_fpe(uint64_t iter)
{
	volatile int64_t count = (int64_t)iter + 1;
	count ^= count; /* a flip that leaves the counter zero */
	sink = (uint64_t)((int64_t)iter * 7 + 3) / (uint64_t)count;
}

static void fault_abrt(uint64_t iter, uint64_t bound)
{
	volatile uint64_t count = iter ^ ((uint64_t)1 << 40);
	if (count > bound) {
		fprintf(stderr, "sdcscan: internal check failed: a loop counter is %llu, past its bound %llu\n",
			(unsigned long long)count, (unsigned long long)bound);
		abort();
	}
}

static void fault_hang(void)
{
	for (volatile uint64_t i = 1; i != 0x100; i += 2)
		sink = i;
}

/* SLOW_SECONDS of crawling in steps of 0.1 s, each a heartbeat; a hard stop or an interrupt ends it. */
#define SLOW_SECONDS 15.0
static void fault_slow(struct sdc_worker *w)
{
	const double until = sdc_now() + SLOW_SECONDS;
	const struct timespec step = { 0, 100 * 1000 * 1000 };
	while (sdc_now() < until && !sdc_stop_is_hard() && !sdc_stop_interrupted()) {
		sdc_worker_heartbeat(w);
		nanosleep(&step, NULL);
	}
}

void sdc_worker_fatal_faults(struct sdc_worker *w, uint64_t iter, const void *data)
{
	if (!w->ctx->fatal_planned)
		return;
	for (int t = 0; &sdc_fatal_hostile && sdc_fatal_hostile.targets[t]; t++) {
		char name[12];
		const char *target = sdc_fatal_hostile.targets[t];
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(target, ":"), target);
		struct sdc_fault f;
		if (sdc_worker_faults(w, name, iter, &f, 1) < 1)
			continue;
		sdc_worker_fault_applied(w, &f, name, iter, -1, -1, 0, "", "");
		sdc_fatal_hostile.meet(w, name, iter);
	}
	for (int t = 0; sdc_fatal_targets[t]; t++) {
		char name[8];
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(sdc_fatal_targets[t], ":"), sdc_fatal_targets[t]);
		struct sdc_fault f;
		if (sdc_worker_faults(w, name, iter, &f, 1) < 1)
			continue;
		bool poisoned = false;
		volatile uint8_t *page = !strcmp(name, "MCE") ? mce_page(&poisoned) : NULL;
		if (page && !poisoned)
			sdc_note("%s: MADV_HWPOISON is not offered here (%s): the MCE fault is the kernel's notice, queued",
				 w->dev->id, strerror(errno));
		sdc_worker_fault_applied(w, &f, name, iter, -1, -1, 0, "", "");
		if (!strcmp(name, "SEGV"))
			fault_segv(data);
		else if (!strcmp(name, "BUS"))
			fault_bus(data);
		else if (!strcmp(name, "MCE"))
			fault_mce(page, poisoned);
		else if (!strcmp(name, "ILL") || !strcmp(name, "TRAP"))
			fault_code(name[0] == 'I');
		else if (!strcmp(name, "FPE"))
			fault_fpe(iter);
		else if (!strcmp(name, "ABRT"))
			fault_abrt(iter, iter + 1);
		else if (!strcmp(name, "SLOW"))
			fault_slow(w);
		else
			fault_hang();
	}
}
