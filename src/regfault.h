/*
 * A register-fault injector on ptrace(2), the one `sdcscan campaign cpu-faults` uses: it runs a
 * command as a traced child, stops one named thread of it (a burn worker, "sdc cpu1") at a given
 * instant of its burn, flips one bit of one general-purpose or vector register and lets it go on,
 * as a defective core would. Every thread of the child is traced from its birth
 * (PTRACE_O_TRACECLONE), because a small burn's worker lives for a fraction of a second. The
 * instant is found in two steps: a hardware breakpoint (debug register) on the entry of
 * sdc_worker_fatal_faults, which every CPU probe calls once at each iteration with the iteration
 * in its second argument, stops the worker at the start of the asked iteration, exactly; the worker
 * then runs on and is stopped (PTRACE_INTERRUPT) after the asked delay, a moment of wall-clock
 * time, so where within the iteration it lands varies a little from run to run (a PMU would
 * count instructions, but this host's hypervisor gives none; single-stepping costs 40-70 us an
 * instruction here). With no delay the fault goes in at the breakpoint itself, the same
 * instruction every run. Everything else is reproducible: the child runs without address-space
 * randomisation (personality ADDR_NO_RANDOMIZE), so a flipped pointer lands where it did before.
 *
 * Needs ptrace on one's own child: Yama's ptrace_scope 0, 1 or 2 with CAP_SYS_PTRACE (not 3), and
 * no seccomp filter that refuses ptrace (containers).
 */
#ifndef SDC_REGFAULT_H
#define SDC_REGFAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sdc_reg_class {
	SDC_REG_GPR,    /* rax..r15 and rip: bits 0-63 */
	SDC_REG_VECTOR, /* xmm/ymm/zmm 0-15 (0-31 with AVX-512): as wide as XCR0 makes them */
	SDC_REG_NCLASSES,
};

/* The registers of a class on this host and the bits each has (the same host runs the child). */
int sdc_regfault_nregs(enum sdc_reg_class c);
int sdc_regfault_width(enum sdc_reg_class c);

/* What to do to the child. */
struct sdc_regfault_spec {
	const char *thread;    /* the comm of the thread to fault ("sdc cpu1") */
	int cpu;               /* the CPU it is pinned to: the tracer runs there too (-1: anywhere) */
	bool inject;           /* false: a reference run; only the iterations' start times are taken */
	uint64_t iteration;    /* the iteration at whose start (sdc_worker_fatal_faults) the delay starts */
	double delay;          /* seconds after that (0: at the start itself, the same instruction every
				* run) */
	double settle;         /* a stop that finds the thread in a system call (waiting: a barrier, a
				* lock) lets it go on and tries again 100 us later, for this long */
	enum sdc_reg_class cls;
	int reg, bit;          /* reg < sdc_regfault_nregs(cls), bit < sdc_regfault_width(cls) */
	double bound;          /* seconds the child may run before it is killed */
	const char *log;       /* the child's stdout and stderr go here (NULL: /dev/null) */
};

#define SDC_REGFAULT_MAX_ITERATIONS 64

/* What happened. */
struct sdc_regfault_result {
	bool injected;
	char reg[8];            /* "rsp", "zmm17" */
	char at[160];           /* where the thread was: module+offset of its instruction; "in syscall N" */
	char before[20], after[20]; /* the register's 64-bit lane holding the bit, before and after */
	bool no_aslr;           /* the child ran without address-space randomisation */
	char not_injected[160]; /* why no fault went in (the thread ended before the instant...) */
	int status;             /* the child's wait status */
	bool killed;            /* still running at the bound: killed */
	double seconds;         /* the child's wall time */
	/* the target's iterations' lengths, seconds, from its resumption at one start to its stop at
	 * the next (the tracer's stops left out): length[i] is iteration i's; nlengths known */
	double length[SDC_REGFAULT_MAX_ITERATIONS];
	int nlengths;
};

/*
 * Whether ptrace may be used here: 0, or -1 with why (Yama's ptrace_scope, a seccomp filter or a
 * missing CAP_SYS_PTRACE, named) in why. It tries PTRACE_SEIZE on a child of its own.
 */
int sdc_regfault_allowed(char *why, size_t len);

/*
 * Runs argv[0] (this executable: /proc/self/exe with argv) as a traced child and does what s asks.
 * 0 when the child ran to its end (r says what happened, the fault in or not), -1 with why in err
 * when the injector itself failed (fork, ptrace refused).
 */
int sdc_regfault_run(char *const argv[], const struct sdc_regfault_spec *s, struct sdc_regfault_result *r,
		     char *err, size_t errlen);

#endif
