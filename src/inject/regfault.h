/*
 * A register-fault injector on ptrace(2), the one `sdcscan campaign cpu-faults` uses: it runs a
 * command (`sdcscan run`) as a traced child, follows every process and thread it makes from
 * birth (a burn runs in processes of its own, runner/burn.h: the run spawns the variant's leader,
 * which forks one worker process a device), stops one named worker ("sdc cpu1") at a given
 * instant of its burn, flips one bit of one general-purpose or vector register and lets it go on,
 * as a defective core would.
 *
 * The instant is found in two steps. A breakpoint stops the worker at a known point: the entry of
 * sdc_worker_fatal_faults, which every CPU probe calls once at each iteration's start with the
 * iteration in its second argument, or the entry of the probe's lane (the worker's whole burn,
 * from before its first iteration to after its last check); the worker then runs on and is
 * stopped (PTRACE_INTERRUPT) after the asked delay, a moment of wall-clock time, so where it
 * lands varies a little from run to run (a PMU would count instructions, but this host's
 * hypervisor gives none; single-stepping costs 40-70 us an instruction here). With no delay from
 * an iteration's start the fault goes in at the breakpoint itself, the same instruction every run.
 * The breakpoint is a debug register (DR0-DR2) where they trap, or an int3 written into the
 * worker's text where they do not (many hypervisors and containers take the writes and never
 * trap: sdc_regfault_hw_traps says which). Everything else is reproducible: the child runs
 * without address-space randomisation (personality ADDR_NO_RANDOMIZE, kept across fork and exec),
 * so a flipped pointer lands where it did before.
 *
 * Needs ptrace on one's own child: Yama's ptrace_scope 0, 1 or 2 with CAP_SYS_PTRACE (not 3), and
 * no seccomp filter that refuses ptrace (containers).
 */
#ifndef SDC_REGFAULT_H
#define SDC_REGFAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum sdc_reg_class {
	SDC_REG_GPR,    /* rax..r15 and rip: bits 0-63 */
	SDC_REG_VECTOR, /* xmm/ymm/zmm 0-15 (0-31 with AVX-512): as wide as XCR0 makes them */
	SDC_REG_NCLASSES,
};

/* The registers of a class on this host and the bits each has (the same host runs the child). */
int sdc_regfault_nregs(enum sdc_reg_class c);
int sdc_regfault_width(enum sdc_reg_class c);

enum sdc_regfault_bp {
	SDC_BP_HARDWARE, /* debug registers, through PTRACE_POKEUSER */
	SDC_BP_SOFTWARE, /* int3 in the worker's own copy of the text, stepped over (PTRACE_SINGLESTEP) */
};
extern const char *const sdc_regfault_bp_names[]; /* "hardware", "software" */

enum sdc_regfault_from {
	SDC_FROM_ITERATION, /* the delay counts from the start of the asked iteration */
	SDC_FROM_LANE,      /* the delay counts from the start of the worker's lane: its whole burn */
};

/* What to do to the child. */
struct sdc_regfault_spec {
	const char *thread;    /* the comm of the worker to fault ("sdc cpu1") */
	int cpu;               /* the CPU it is pinned to: the tracer runs there too (-1: anywhere) */
	bool inject;           /* false: a reference run, whose iterations' lengths (from: iteration) or
				* lane's length (from: lane) are taken */
	enum sdc_regfault_bp bp;
	enum sdc_regfault_from from;
	uintptr_t lane;        /* the probe's CPU lane in this executable (the worker's burn) */
	uint64_t iteration;    /* SDC_FROM_ITERATION: the iteration at whose start the delay starts */
	double delay;          /* seconds after that (0: at the breakpoint itself, the same instruction
				* every run) */
	double settle;         /* a stop that finds the worker in a system call (waiting) lets it go on
				* and tries again 100 us later, for this long */
	enum sdc_reg_class cls;
	int reg, bit;          /* reg < sdc_regfault_nregs(cls), bit < sdc_regfault_width(cls) */
	double bound;          /* seconds the child may run before it and its processes are killed */
	const char *log;       /* the child's stdout and stderr go here (NULL: /dev/null) */
};

#define SDC_REGFAULT_MAX_ITERATIONS 64

/* What happened. */
struct sdc_regfault_result {
	bool injected;
	char reg[8];            /* "rsp", "zmm17" */
	char at[160];           /* where the worker was: module+offset of its instruction; "in syscall N" */
	char before[20], after[20]; /* the register's 64-bit lane holding the bit, before and after */
	bool no_aslr;           /* every process of the child ran without address-space randomisation */
	char not_injected[160]; /* why no fault went in (the worker ended before the instant...) */
	int status;             /* the child's wait status */
	bool killed;            /* still running at the bound: killed */
	double seconds;         /* the child's wall time */
	int traps;              /* breakpoint stops of the target worker */
	/* the target's iterations' lengths, seconds, from one start to the next (the tracer's stops
	 * left out): length[i] is iteration i's; nlengths known */
	double length[SDC_REGFAULT_MAX_ITERATIONS];
	int nlengths;
	double lane_seconds;    /* the target's lane from its entry to its return, the same way (0: not seen) */
};

/*
 * Whether ptrace may be used here: 0, or -1 with why (Yama's ptrace_scope, a seccomp filter or a
 * missing CAP_SYS_PTRACE, named) in why. It tries PTRACE_SEIZE on a child of its own.
 */
int sdc_regfault_allowed(char *why, size_t len);

/*
 * Whether a debug-register breakpoint traps here: 1; 0 with why (the kernel refused the
 * registers, or took them and the breakpoint never fired, as under many hypervisors); -1 with why
 * when it could not be tried. It sets one on a function a child of its own then calls.
 */
int sdc_regfault_hw_traps(char *why, size_t len);

/* Flips s's bit in stopped thread t of process pid and says where it was, in r (the tracer's). */
int sdc_regfault_flip(pid_t pid, pid_t t, const struct sdc_regfault_spec *s, struct sdc_regfault_result *r);

/* Waits up to `seconds` for a state change of c (a child or a tracee): waitpid's answer, 0 when
 * none came (polled: every wait of the injector's has a deadline). */
pid_t sdc_regfault_wait(pid_t c, int *st, double seconds);

/*
 * Runs argv[0] (this executable: /proc/self/exe with argv) as a traced child and does what s asks.
 * 0 when the child ran to its end (r says what happened, the fault in or not), -1 with why in err
 * when the injector itself failed (fork, ptrace refused, a breakpoint it could not take out).
 */
int sdc_regfault_run(char *const argv[], const struct sdc_regfault_spec *s, struct sdc_regfault_result *r,
		     char *err, size_t errlen);

#endif
