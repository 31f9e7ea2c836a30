/*
 * The register-fault injector (regfault.h): a traced child, a hardware breakpoint at the start of
 * the asked iteration, a stop after the asked delay, one bit flipped, detached.
 *
 * Sources: ptrace(2) (PTRACE_SEIZE, PTRACE_INTERRUPT, PTRACE_O_TRACECLONE and the stops each
 * gives, PTRACE_GETREGSET/SETREGSET with NT_PRSTATUS and NT_X86_XSTATE, __WALL); the Intel SDM
 * Vol. 3B §18.2 (DR0-DR3 hold addresses; DR7 bit 0 (L0) enables DR0, R/W0 = 00 breaks on the
 * instruction's execution, LEN0 = 00) and Vol. 1 §13.4 (the XSAVE area: the legacy region's XMM
 * registers at byte 160, 16 bytes each; the XSAVE header's XSTATE_BV at byte 512; in the standard
 * form, component i at the offset CPUID.(EAX=0DH,ECX=i).EBX gives: 2 the upper halves of
 * YMM0-15, 6 the upper 256 bits of ZMM0-15, 7 ZMM16-31 whole); Linux's
 * arch/x86/include/asm/user.h (the NT_X86_XSTATE buffer is the standard form, with XCR0 in the
 * software bytes at 464, as gdb's I386_LINUX_XSAVE_XCR0_OFFSET reads it) and
 * arch/x86/kernel/fpu/regset.c (a component whose XSTATE_BV bit is clear is written as its init
 * state, so the bit is set with the flip).
 */
#include "regfault.h"

#include <cpuid.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "fatal.h"

#define GPR(r) { #r, offsetof(struct user_regs_struct, r) }
static const struct {
	const char *name;
	size_t off;
} gprs[] = {
	GPR(rax), GPR(rbx), GPR(rcx), GPR(rdx), GPR(rsi), GPR(rdi), GPR(rbp), GPR(rsp), GPR(r8),
	GPR(r9),  GPR(r10), GPR(r11), GPR(r12), GPR(r13), GPR(r14), GPR(r15), GPR(rip),
};
#define NGPRS ((int)(sizeof(gprs) / sizeof(gprs[0])))

#define XSTATE_XCR0 464   /* the software bytes' first word (arch/x86/include/asm/user.h) */
#define XSTATE_BV 512     /* the XSAVE header's first word (SDM Vol. 1 §13.4.2) */
#define LEGACY_XMM 160    /* XMM0 in the legacy region (SDM Vol. 1 Table 10-2) */
#define XSTATE_MAX 16384  /* the largest XSAVE area of today's CPUs is under 12 KiB */

/* XCR0: which register state the OS keeps (XGETBV 0, where CPUID says the OS uses XSAVE). */
static uint64_t host_xcr0(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE))
		return 3; /* x87 and SSE: FXSAVE's */
	uint32_t lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return (uint64_t)hi << 32 | lo;
}

static bool has_avx512(void)
{
	return (host_xcr0() & 0xe0) == 0xe0; /* opmask, ZMM_Hi256, Hi16_ZMM */
}

int sdc_regfault_nregs(enum sdc_reg_class c)
{
	return c == SDC_REG_GPR ? NGPRS : has_avx512() ? 32 : 16;
}

int sdc_regfault_width(enum sdc_reg_class c)
{
	if (c == SDC_REG_GPR)
		return 64;
	return has_avx512() ? 512 : host_xcr0() & 4 ? 256 : 128;
}

static unsigned component_offset(unsigned i)
{
	unsigned a, b, c, d;
	__cpuid_count(0xd, i, a, b, c, d);
	return b;
}

/* Where bit `bit` of vector register v lies in the standard XSAVE form, and its component. */
static size_t vector_byte(int v, int bit, int *comp)
{
	if (v >= 16) {
		*comp = 7;
		return component_offset(7) + 64 * (size_t)(v - 16) + (size_t)bit / 8;
	}
	if (bit < 128) {
		*comp = 1;
		return LEGACY_XMM + 16 * (size_t)v + (size_t)bit / 8;
	}
	if (bit < 256) {
		*comp = 2;
		return component_offset(2) + 16 * (size_t)v + (size_t)(bit - 128) / 8;
	}
	*comp = 6;
	return component_offset(6) + 32 * (size_t)v + (size_t)(bit - 256) / 8;
}

/* "sdcscan+0x2b4a0", "[vdso]+0x9a0": the mapping of the child's that holds addr. */
static void where(pid_t pid, uint64_t addr, char *out, size_t len)
{
	char path[64], line[768];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	snprintf(out, len, "0x%" PRIx64, addr);
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end, off;
		int name = 0;
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &start, &end, &off, &name) < 3 || addr < start || addr >= end)
			continue;
		char *mod = name ? line + name : "";
		mod[strcspn(mod, "\n")] = '\0';
		const char *base = strrchr(mod, '/') ? strrchr(mod, '/') + 1 : *mod ? mod : "anonymous";
		snprintf(out, len, "%.100s+0x%" PRIx64, base, (uint64_t)(addr - start + off));
		break;
	}
	fclose(f);
}

/* The load address of the child's executable: its mapping at file offset 0. */
static uintptr_t exe_base(pid_t pid)
{
	char path[64], exe[PATH_MAX], line[PATH_MAX + 128];
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	const ssize_t n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0;
	exe[n] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "r");
	uintptr_t base = 0;
	while (f && !base && fgets(line, sizeof(line), f)) {
		unsigned long start, off;
		int name = 0;
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%lx-%*x %*s %lx %*s %*s %n", &start, &off, &name) >= 2 && name && !off &&
		    !strcmp(line + name, exe))
			base = start;
	}
	if (f)
		fclose(f);
	return base;
}

/* ---- the fault ---- */

static int flip_gpr(pid_t t, const struct sdc_regfault_spec *s, struct sdc_regfault_result *r)
{
	struct user_regs_struct regs;
	struct iovec iov = { &regs, sizeof(regs) };
	if (ptrace(PTRACE_GETREGSET, t, (void *)NT_PRSTATUS, &iov))
		return -1;
	uint64_t *p = (uint64_t *)(void *)((char *)&regs + gprs[s->reg].off);
	snprintf(r->reg, sizeof(r->reg), "%s", gprs[s->reg].name);
	snprintf(r->before, sizeof(r->before), "0x%016" PRIx64, *p);
	*p ^= 1ull << s->bit;
	snprintf(r->after, sizeof(r->after), "0x%016" PRIx64, *p);
	return ptrace(PTRACE_SETREGSET, t, (void *)NT_PRSTATUS, &iov) ? -1 : 0;
}

static int flip_vector(pid_t t, const struct sdc_regfault_spec *s, struct sdc_regfault_result *r)
{
	static uint8_t buf[XSTATE_MAX] __attribute__((aligned(64)));
	struct iovec iov = { buf, sizeof(buf) };
	int comp;
	const size_t byte = vector_byte(s->reg, s->bit, &comp);
	long note = NT_X86_XSTATE;
	if (ptrace(PTRACE_GETREGSET, t, (void *)note, &iov)) {
		/* no XSAVE: the FXSAVE image (NT_PRFPREG) holds XMM0-15 at the same place */
		if (comp != 1)
			return -1;
		note = NT_PRFPREG;
		iov.iov_len = sizeof(struct user_fpregs_struct);
		if (ptrace(PTRACE_GETREGSET, t, (void *)note, &iov))
			return -1;
	}
	if (byte + 8 > iov.iov_len)
		return errno = ERANGE, -1;
	const int width = sdc_regfault_width(SDC_REG_VECTOR);
	snprintf(r->reg, sizeof(r->reg), "%smm%d", width == 512 ? "z" : width == 256 ? "y" : "x", s->reg);
	uint64_t lane;
	const size_t lane_at = byte & ~(size_t)7;
	memcpy(&lane, buf + lane_at, 8);
	snprintf(r->before, sizeof(r->before), "0x%016" PRIx64, lane);
	buf[byte] ^= (uint8_t)(1u << (s->bit % 8));
	memcpy(&lane, buf + lane_at, 8);
	snprintf(r->after, sizeof(r->after), "0x%016" PRIx64, lane);
	if (note == NT_X86_XSTATE) {
		uint64_t bv;
		memcpy(&bv, buf + XSTATE_BV, 8);
		bv |= 1ull << comp; /* (clear, the component would be written as its init state) */
		memcpy(buf + XSTATE_BV, &bv, 8);
	}
	return ptrace(PTRACE_SETREGSET, t, (void *)note, &iov) ? -1 : 0;
}

/* Flips the asked bit in stopped thread t and says where it was. */
static int inject(pid_t child, pid_t t, const struct sdc_regfault_spec *s, struct sdc_regfault_result *r)
{
	struct user_regs_struct regs;
	if (ptrace(PTRACE_GETREGS, t, NULL, &regs))
		return -1;
	char at[128];
	where(child, regs.rip, at, sizeof(at));
	if ((long long)regs.orig_rax >= 0)
		snprintf(r->at, sizeof(r->at), "%s, in syscall %lld", at, (long long)regs.orig_rax);
	else
		snprintf(r->at, sizeof(r->at), "%s", at);
	if ((s->cls == SDC_REG_GPR ? flip_gpr : flip_vector)(t, s, r))
		return -1;
	r->injected = true;
	return 0;
}

/* ---- the tracer ---- */

#define MAX_TRACEES 256

enum phase { WAIT_START, WAIT_INSTANT, STOPPING, DETACHING };

struct tracer {
	const struct sdc_regfault_spec *s;
	struct sdc_regfault_result *r;
	pid_t child;
	uintptr_t anchor_off, anchor;
	pid_t tids[MAX_TRACEES];
	bool seen[MAX_TRACEES]; /* its first stop came (a new thread's: where it is armed) */
	int n;
	pid_t target;
	enum phase phase;
	double t_spawn, instant, resumed, first_stop;
	uint64_t last_iter;
	int in_syscall; /* stops of the target to inject at: the first, and those that found it waiting */
};

static int tracee(struct tracer *tr, pid_t t)
{
	for (int i = 0; i < tr->n; i++)
		if (tr->tids[i] == t)
			return i;
	if (tr->n == MAX_TRACEES)
		return -1;
	tr->tids[tr->n] = t;
	tr->seen[tr->n] = false;
	return tr->n++;
}

static void forget(struct tracer *tr, pid_t t)
{
	for (int i = 0; i < tr->n; i++)
		if (tr->tids[i] == t) {
			tr->tids[i] = tr->tids[--tr->n];
			tr->seen[i] = tr->seen[tr->n];
			return;
		}
}

/* DR0 at the anchor, DR7 L0 (execute, one byte); or DR7 cleared. */
static void arm(pid_t t, uintptr_t addr)
{
	ptrace(PTRACE_POKEUSER, t, (void *)offsetof(struct user, u_debugreg[0]), (void *)addr);
	ptrace(PTRACE_POKEUSER, t, (void *)offsetof(struct user, u_debugreg[7]), (void *)1ul);
}

static void disarm(pid_t t)
{
	ptrace(PTRACE_POKEUSER, t, (void *)offsetof(struct user, u_debugreg[7]), (void *)0ul);
}

static void detach(struct tracer *tr, pid_t t, int sig)
{
	disarm(t);
	ptrace(PTRACE_DETACH, t, NULL, (void *)(long)sig);
	forget(tr, t);
}

/* Every thread let go: the stopped one now, the others when their interrupt stops them. */
static void detach_all(struct tracer *tr, pid_t stopped, int sig)
{
	tr->phase = DETACHING;
	if (stopped > 0)
		detach(tr, stopped, sig);
	for (int i = 0; i < tr->n; i++)
		ptrace(PTRACE_INTERRUPT, tr->tids[i], NULL, NULL);
}

static bool thread_is(pid_t child, pid_t t, const char *name)
{
	char path[64], comm[32] = "";
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)child, (int)t);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = '\0';
	fclose(f);
	comm[strcspn(comm, "\n")] = '\0';
	return !strcmp(comm, name);
}

/* A thread stopped at the anchor: the worker's iteration i starts. */
static void on_anchor(struct tracer *tr, pid_t t)
{
	if (!thread_is(tr->child, t, tr->s->thread)) {
		detach(tr, t, 0); /* another worker: let it run untraced */
		return;
	}
	struct user_regs_struct regs;
	ptrace(PTRACE_GETREGS, t, NULL, &regs);
	const uint64_t iter = regs.rsi; /* sdc_worker_fatal_faults(w, iter, data): the SysV ABI's 2nd */
	tr->target = t;
	/* the last iteration's length: from its start, resumed, to this stop (our stops left out) */
	if (iter && iter == tr->last_iter + 1 && iter <= SDC_REGFAULT_MAX_ITERATIONS) {
		tr->r->length[iter - 1] = sdc_now() - tr->resumed;
		tr->r->nlengths = (int)iter;
	}
	tr->last_iter = iter;
	if (tr->s->inject && iter >= tr->s->iteration && tr->s->delay <= 0) {
		/* here and now: the same instruction, and the same registers, every time */
		if (inject(tr->child, t, tr->s, tr->r))
			snprintf(tr->r->not_injected, sizeof(tr->r->not_injected), "the registers could not be changed: %s",
				 strerror(errno));
		detach_all(tr, t, 0);
		return;
	}
	if (tr->s->inject && iter >= tr->s->iteration) {
		disarm(t);
		tr->phase = WAIT_INSTANT;
	} else if (!tr->s->inject && iter >= SDC_REGFAULT_MAX_ITERATIONS) {
		disarm(t);
	}
	tr->resumed = sdc_now();
	tr->instant = tr->resumed + tr->s->delay;
	ptrace(PTRACE_CONT, t, NULL, NULL);
}

/* Whether thread t has a SIGTRAP pending (its SigPnd in /proc/PID/task/TID/status, proc(5)). */
static bool trap_pending(pid_t child, pid_t t)
{
	char path[64], line[128];
	bool yes = false;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)child, (int)t);
	FILE *f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long mask;
		if (sscanf(line, "SigPnd: %llx", &mask) == 1)
			yes = mask >> (SIGTRAP - 1) & 1;
	}
	if (f)
		fclose(f);
	return yes;
}

/* Whether a signal-delivery stop is our breakpoint's (a SIGTRAP the CPU raised for DR0). */
static bool breakpoint_trap(pid_t t, int event, int sig)
{
	siginfo_t si;
	return !event && sig == SIGTRAP && !ptrace(PTRACE_GETSIGINFO, t, NULL, &si) && si.si_code == TRAP_HWBKPT;
}

/* One stop of thread t (status st). */
static void on_stop(struct tracer *tr, pid_t t, int st)
{
	const int event = st >> 16, sig = WSTOPSIG(st);
	const int i = tracee(tr, t);
	const bool first = i >= 0 && !tr->seen[i];
	/* the signal a signal-delivery stop holds, for the child (none for ptrace's own stops) */
	const int deliver = event || breakpoint_trap(t, event, sig) ? 0 : sig;
	if (i >= 0)
		tr->seen[i] = true;
	if (tr->phase == DETACHING) {
		/* A breakpoint's SIGTRAP may be queued behind our interrupt's stop: let it come and take
		 * it, or it is delivered after the detach and the child calls it a crash. */
		if (event && trap_pending(tr->child, t)) {
			disarm(t);
			ptrace(PTRACE_CONT, t, NULL, NULL);
			return;
		}
		detach(tr, t, deliver);
		return;
	}
	if (tr->phase == STOPPING && t == tr->target) {
		/* Waiting in the kernel (a barrier, a lock) is not its burn: on, and again 100 us later,
		 * for up to s->settle seconds; then the fault goes in where it is. */
		struct user_regs_struct regs;
		const double now = sdc_now();
		if (!tr->in_syscall++)
			tr->first_stop = now;
		if (!deliver && !ptrace(PTRACE_GETREGS, t, NULL, &regs) && (long long)regs.orig_rax >= 0 &&
		    now - tr->first_stop < tr->s->settle) {
			tr->phase = WAIT_INSTANT;
			tr->instant = now + 100e-6;
			ptrace(PTRACE_CONT, t, NULL, NULL);
			return;
		}
		if (inject(tr->child, t, tr->s, tr->r))
			snprintf(tr->r->not_injected, sizeof(tr->r->not_injected), "the registers could not be changed: %s",
				 strerror(errno));
		detach_all(tr, t, deliver);
		return;
	}
	if (event == PTRACE_EVENT_EXEC) {
		tr->anchor = exe_base(tr->child) + tr->anchor_off;
		char path[64], text[32] = "";
		snprintf(path, sizeof(path), "/proc/%d/personality", (int)tr->child);
		FILE *f = fopen(path, "r");
		if (f && fgets(text, sizeof(text), f))
			tr->r->no_aslr = strtoul(text, NULL, 16) & ADDR_NO_RANDOMIZE;
		if (f)
			fclose(f);
	} else if (event == PTRACE_EVENT_STOP && first && t != tr->child && tr->anchor) {
		arm(t, tr->anchor); /* a new thread, at its first stop */
	} else if (!event && sig == SIGTRAP && !deliver) {
		on_anchor(tr, t);
		return;
	}
	/* a clone, an interrupt, a group stop: on; a signal for the child: delivered */
	ptrace(PTRACE_CONT, t, NULL, (void *)(long)deliver);
}

/* Waits for what the tracees do until the child is gone. */
static void trace(struct tracer *tr)
{
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	const double deadline = tr->t_spawn + tr->s->bound;
	bool killed = false;
	for (;;) {
		int st;
		const pid_t t = waitpid(-1, &st, __WALL | WNOHANG);
		if (t < 0 && errno == EINTR)
			continue;
		if (t < 0)
			break; /* (ECHILD: nothing left) */
		if (t > 0) {
			if (WIFSTOPPED(st)) {
				on_stop(tr, t, st);
			} else if (t == tr->child) {
				tr->r->status = st;
				break;
			} else {
				forget(tr, t);
				if (t == tr->target && tr->phase != DETACHING) {
					snprintf(tr->r->not_injected, sizeof(tr->r->not_injected),
						 "the thread ended before the instant");
					detach_all(tr, -1, 0);
				}
			}
			continue;
		}
		const double now = sdc_now();
		if (now >= deadline && !killed) {
			kill(tr->child, SIGKILL);
			killed = tr->r->killed = true;
		}
		if (tr->phase == WAIT_INSTANT && now >= tr->instant) {
			ptrace(PTRACE_INTERRUPT, tr->target, NULL, NULL);
			tr->phase = STOPPING;
		}
		/* Nothing now: wait for a SIGCHLD (a tracee's stop or exit), the instant or 20 ms. */
		double wait = SDC_MIN(0.02, SDC_MAX(0.0, deadline - now));
		if (tr->phase == WAIT_INSTANT)
			wait = SDC_MIN(wait, SDC_MAX(0.0, tr->instant - now));
		const struct timespec ts = { (time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9) };
		sigtimedwait(&chld, NULL, &ts);
	}
	tr->r->seconds = sdc_now() - tr->t_spawn;
}

/* The child: its output to log, no address randomisation, waits until it is traced, then runs
 * (with the signal mask and CPUs the campaign had). */
static void child_main(char *const argv[], const char *log, int ready, const sigset_t *mask, const cpu_set_t *cpus)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	sigprocmask(SIG_SETMASK, mask, NULL);
	sched_setaffinity(0, sizeof(*cpus), cpus);
	const int fd = open(log ? log : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
	const int persona = personality(0xffffffff);
	if (persona != -1)
		personality((unsigned long)persona | ADDR_NO_RANDOMIZE);
	char c;
	if (read(ready, &c, 1) != 0) /* (the parent closes its end once the child is seized) */
		_exit(127);
	execv("/proc/self/exe", argv);
	_exit(127);
}

int sdc_regfault_run(char *const argv[], const struct sdc_regfault_spec *s, struct sdc_regfault_result *r,
		     char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	struct tracer tr = { .s = s, .r = r, .target = -1 };
	Dl_info info;
	if (!dladdr((void *)sdc_worker_fatal_faults, &info) || !info.dli_fbase) {
		snprintf(err, errlen, "cannot find sdc_worker_fatal_faults in this executable");
		return -1;
	}
	tr.anchor_off = (uintptr_t)sdc_worker_fatal_faults - (uintptr_t)info.dli_fbase;
	sigset_t chld, old;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &old);
	int p[2];
	if (pipe2(p, O_CLOEXEC)) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		sigprocmask(SIG_SETMASK, &old, NULL);
		return -1;
	}
	/*
	 * The tracer runs on the faulted worker's CPU: a stop and a resumption then wake the other on
	 * the same CPU, at once. Elsewhere, a CPU left idle by a stopped worker halts, and in a virtual
	 * machine waking it again took milliseconds here, longer than an iteration; and the delay's
	 * timer fires on the worker's own CPU.
	 */
	cpu_set_t all, one;
	const bool pinned = s->cpu >= 0 && !sched_getaffinity(0, sizeof(all), &all);
	if (pinned) {
		CPU_ZERO(&one);
		CPU_SET(s->cpu, &one);
		sched_setaffinity(0, sizeof(one), &one);
	}
	/* the delay's timer without the default 50 us of slack (prctl(2) PR_SET_TIMERSLACK) */
	const int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	prctl(PR_SET_TIMERSLACK, 1ul, 0, 0, 0);
	fflush(NULL);
	tr.t_spawn = sdc_now();
	tr.child = fork();
	if (tr.child == 0) {
		close(p[1]);
		child_main(argv, s->log, p[0], &old, pinned ? &all : &one);
	}
	close(p[0]);
	int rc = 0;
	if (tr.child < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		rc = -1;
	} else if (ptrace(PTRACE_SEIZE, tr.child, NULL,
			  (void *)(long)(PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL))) {
		snprintf(err, errlen, "PTRACE_SEIZE of the child failed: %s", strerror(errno));
		kill(tr.child, SIGKILL);
		waitpid(tr.child, NULL, 0);
		rc = -1;
	} else {
		tracee(&tr, tr.child);
		tr.seen[0] = true; /* (the main thread is never armed: it runs no probe) */
		close(p[1]);
		p[1] = -1;
		trace(&tr);
		if (s->inject && !r->injected && !r->not_injected[0])
			snprintf(r->not_injected, sizeof(r->not_injected), "iteration %" PRIu64 " was not reached",
				 s->iteration);
	}
	if (p[1] >= 0)
		close(p[1]);
	if (pinned)
		sched_setaffinity(0, sizeof(all), &all);
	if (slack > 0)
		prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0, 0, 0);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* ---- may we? ---- */

static bool has_cap_sys_ptrace(void)
{
	char line[256];
	bool yes = false;
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long caps;
		if (sscanf(line, "CapEff: %llx", &caps) == 1)
			yes = caps >> 19 & 1; /* CAP_SYS_PTRACE is 19 (linux/capability.h) */
	}
	if (f)
		fclose(f);
	return yes;
}

int sdc_regfault_allowed(char *why, size_t len)
{
	int scope = -1;
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = -1;
		fclose(f);
	}
	const bool cap = has_cap_sys_ptrace();
	if (scope >= 3) {
		snprintf(why, len, "Yama's ptrace_scope is %d (/proc/sys/kernel/yama/ptrace_scope): no process may be traced",
			 scope);
		return -1;
	}
	if (scope == 2 && !cap) {
		snprintf(why, len, "Yama's ptrace_scope is 2 (/proc/sys/kernel/yama/ptrace_scope) and this process lacks "
				   "CAP_SYS_PTRACE");
		return -1;
	}
	/* The kernel's word: seize a child of our own (a seccomp filter refuses ptrace itself). */
	const pid_t c = fork();
	if (c == 0) {
		pause();
		_exit(0);
	}
	if (c < 0) {
		snprintf(why, len, "fork: %s", strerror(errno));
		return -1;
	}
	const int rc = ptrace(PTRACE_SEIZE, c, NULL, NULL);
	const int e = errno;
	kill(c, SIGKILL);
	waitpid(c, NULL, __WALL);
	if (rc) {
		snprintf(why, len, "PTRACE_SEIZE of a child of its own failed: %s (%s%s)", strerror(e),
			 cap ? "a seccomp filter or security module refuses ptrace" :
			       "a container without CAP_SYS_PTRACE, or a seccomp filter",
			 scope >= 0 ? "" : "; no Yama here");
		return -1;
	}
	return 0;
}
