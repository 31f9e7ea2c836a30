/*
 * The register-fault injector's tracer (inject/regfault.h): a traced child and every process it makes, a
 * breakpoint (debug register or int3) at the start of the asked iteration or of the worker's lane,
 * a stop after the asked delay, one bit flipped (inject/regfault.c), every breakpoint taken out, all let
 * go.
 *
 * Sources: ptrace(2) (PTRACE_SEIZE, PTRACE_INTERRUPT, PTRACE_O_TRACECLONE/FORK/VFORK/EXEC and the
 * stops each gives; an auto-attached tracee starts with a PTRACE_EVENT_STOP; PTRACE_GETEVENTMSG
 * after an exec; PTRACE_PEEKTEXT/POKETEXT; PTRACE_SINGLESTEP; __WALL; a tracee that is not the
 * tracer's child is reported to its tracer when it ends and then, as ever, to its real parent,
 * which alone reaps it); the Intel SDM Vol. 3B §18.2 (DR7 bit 2n (Ln) enables DRn, R/Wn = LENn =
 * 00 on the instruction's execution; Linux sets RF on resumption, so the instruction then runs)
 * and Vol. 2 (int3, 0xCC, traps after its byte: rip is one past it; Linux sends SIGTRAP with
 * si_code SI_KERNEL); Linux's fork and its x86 process code (a fork's child has a private
 * copy-on-write copy of the text and no debug registers; personality is kept by fork and exec).
 */
#include "inject/regfault.h"

#include <dlfcn.h>
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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "inject/fatal.h"

/* The load address of process pid's executable: its mapping at file offset 0. */
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

/* ---- the tracer: who is who ---- */

#define MAX_THREADS 256
#define MAX_PROCS 32

/* The breakpoints: an iteration's start, the lane's entry and the lane's return (set at its entry
 * from the return address on the stack). Debug register n holds breakpoint n. */
enum bp { BP_ITER, BP_LANE, BP_RETURN, BP_N };

const char *const sdc_regfault_bp_names[] = { "hardware", "software", NULL };

/* A burn worker's process, armed at its first stop. */
struct proc {
	pid_t pid;            /* 0: gone */
	uintptr_t addr[BP_N]; /* 0: none */
	uint8_t orig[BP_N];   /* software: the byte under the int3 */
	bool on[BP_N];
	bool released;        /* not the target's: let go, its breakpoints out */
};

struct thread {
	pid_t tid, pid; /* pid: its process (thread group) */
	bool seen;      /* its first stop came */
	int stepping;   /* software: 1 + the breakpoint it is stepping over */
};

enum phase { WAIT_START, WAIT_INSTANT, STOPPING, DETACHING };

struct tracer {
	const struct sdc_regfault_spec *s;
	struct sdc_regfault_result *r;
	bool soft;
	pid_t child;
	uintptr_t off[2]; /* the iteration's and the lane's entries from the executable's base */
	dev_t exe_dev;
	ino_t exe_ino;
	struct thread th[MAX_THREADS];
	int n;
	struct proc pr[MAX_PROCS];
	int np;
	pid_t target;
	struct proc *tp;
	enum phase phase;
	double t_spawn, instant, first_stop;
	/* the target's time held by the tracer, and the marks its lengths are taken from */
	double stopped_at, paused, mark_t, mark_paused, lane_t, lane_paused;
	uint64_t last_iter;
	int in_syscall, personalities, no_aslr;
	char trouble[160]; /* the injector's own failure */
};

/* /proc/PID/FILE's first len - 1 bytes, NUL-ended: how many, -1 when unreadable. */
static ssize_t proc_read(pid_t pid, const char *file, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	const int fd = open(path, O_RDONLY | O_CLOEXEC);
	const ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n;
}

/* A number of thread t's /proc status ("Tgid:", "SigPnd:"), def where there is none. */
static unsigned long long status_field(pid_t t, const char *key, int base, unsigned long long def)
{
	char buf[4096];
	const char *p = proc_read(t, "status", buf, sizeof(buf)) > 0 ? strstr(buf, key) : NULL;
	return p ? strtoull(p + strlen(key), NULL, base) : def;
}

static bool comm_is(pid_t t, const char *name)
{
	char comm[32];
	proc_read(t, "comm", comm, sizeof(comm));
	comm[strcspn(comm, "\n")] = '\0';
	return !strcmp(comm, name);
}

static bool runs_this_exe(const struct tracer *tr, pid_t pid)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	return !stat(path, &st) && st.st_dev == tr->exe_dev && st.st_ino == tr->exe_ino;
}

/* A burn's process (`sdcscan __burn FD`): the leader after its exec, a worker from its fork on. */
static bool burn_process(const struct tracer *tr, pid_t pid)
{
	char buf[256];
	const ssize_t n = proc_read(pid, "cmdline", buf, sizeof(buf));
	const size_t arg1 = n > 0 ? strlen(buf) + 1 : 0;
	return n > 0 && arg1 < (size_t)n && !strcmp(buf + arg1, SDC_BURN_ARGV1) && runs_this_exe(tr, pid);
}

static void check_personality(struct tracer *tr, pid_t pid)
{
	char text[32];
	tr->personalities++;
	if (proc_read(pid, "personality", text, sizeof(text)) > 0 && strtoul(text, NULL, 16) & ADDR_NO_RANDOMIZE)
		tr->no_aslr++;
}

static struct thread *thread_of(struct tracer *tr, pid_t t, bool add)
{
	for (int i = 0; i < tr->n; i++)
		if (tr->th[i].tid == t)
			return &tr->th[i];
	if (!add || tr->n == MAX_THREADS)
		return NULL;
	tr->th[tr->n] = (struct thread){ .tid = t, .pid = t };
	return &tr->th[tr->n++];
}

static void forget(struct tracer *tr, pid_t t)
{
	struct thread *th = thread_of(tr, t, false);
	if (th)
		*th = tr->th[--tr->n];
}

static struct proc *proc_of(struct tracer *tr, pid_t pid)
{
	for (int i = 0; pid > 0 && i < tr->np; i++)
		if (tr->pr[i].pid == pid)
			return &tr->pr[i];
	return NULL;
}

static void trouble(struct tracer *tr, const char *what, pid_t pid)
{
	if (!tr->trouble[0] && errno != ESRCH) /* (ESRCH: it died, and its text with it) */
		snprintf(tr->trouble, sizeof(tr->trouble), "%s in process %d: %s", what, (int)pid, strerror(errno));
}

/* ---- breakpoints ---- */

/* The byte at addr in stopped thread t's memory replaced by byte; the old one to *old. */
static int poke_byte(pid_t t, uintptr_t addr, uint8_t byte, uint8_t *old)
{
	const uintptr_t word = addr & ~(uintptr_t)7; /* (an aligned word never crosses a page) */
	const unsigned shift = (unsigned)(addr - word) * 8;
	errno = 0;
	const unsigned long v = (unsigned long)ptrace(PTRACE_PEEKTEXT, t, (void *)word, NULL);
	if (errno)
		return -1;
	if (old)
		*old = (uint8_t)(v >> shift);
	const unsigned long w = (v & ~(0xfful << shift)) | (unsigned long)byte << shift;
	return ptrace(PTRACE_POKETEXT, t, (void *)word, (void *)w) ? -1 : 0;
}

/* Thread t's debug registers: p's breakpoints that are on (none: p NULL). */
static void hw_sync(pid_t t, const struct proc *p)
{
	unsigned long dr7 = 0;
	for (int b = 0; p && b < BP_N; b++)
		if (p->on[b]) {
			ptrace(PTRACE_POKEUSER, t, (void *)offsetof(struct user, u_debugreg[b]), (void *)p->addr[b]);
			dr7 |= 1ul << (2 * b); /* Ln; R/Wn = LENn = 00: on the instruction's execution */
		}
	ptrace(PTRACE_POKEUSER, t, (void *)offsetof(struct user, u_debugreg[7]), (void *)dr7);
}

/* Breakpoint b of process p on or off, through its stopped thread t. */
static int bp_set(struct tracer *tr, pid_t t, struct proc *p, int b, bool on)
{
	if (!p->addr[b] || p->on[b] == on)
		return 0;
	if (tr->soft && poke_byte(t, p->addr[b], on ? 0xcc : p->orig[b], on ? &p->orig[b] : NULL))
		return -1;
	p->on[b] = on;
	if (!tr->soft)
		hw_sync(t, p);
	return 0;
}

/* Which breakpoint of p a SIGTRAP of thread t at rip is: b, BP_N for a debug register's of
 * unknown address (the worker sets none itself), -1 for none of ours (a fault's: delivered). */
static int our_trap(const struct tracer *tr, pid_t t, const struct proc *p, uint64_t rip)
{
	siginfo_t si;
	if (ptrace(PTRACE_GETSIGINFO, t, NULL, &si) || si.si_code != (tr->soft ? SI_KERNEL : TRAP_HWBKPT))
		return -1;
	for (int b = 0; p && b < BP_N; b++)
		if (p->addr[b] && p->addr[b] == rip - tr->soft)
			return b;
	return tr->soft ? -1 : BP_N;
}

/* Resumes t; the target's time held by the tracer is counted. */
static void go(struct tracer *tr, pid_t t, int req, int sig)
{
	if (t == tr->target)
		tr->paused += sdc_now() - tr->stopped_at;
	ptrace(req, t, NULL, (void *)(long)sig);
}

/* Lets stopped thread t go (with sig): its process's breakpoints taken out first, so none is
 * left in a process the tracer leaves, and its debug registers cleared. */
static void release(struct tracer *tr, pid_t t, int sig)
{
	const struct thread *th = thread_of(tr, t, false);
	struct proc *p = proc_of(tr, th ? th->pid : t);
	for (int b = 0; p && b < BP_N; b++)
		if (bp_set(tr, t, p, b, false))
			trouble(tr, "a breakpoint could not be taken out", p->pid);
	if (p)
		p->released = true;
	if (!tr->soft)
		hw_sync(t, NULL);
	ptrace(PTRACE_DETACH, t, NULL, (void *)(long)sig);
	forget(tr, t);
}

/* Every tracee let go: the stopped one now, the others at the stop their interrupt gives. */
static void detach_all(struct tracer *tr, pid_t stopped, int sig)
{
	tr->phase = DETACHING;
	if (stopped > 0)
		release(tr, stopped, sig);
	for (int i = 0; i < tr->n; i++)
		ptrace(PTRACE_INTERRUPT, tr->th[i].tid, NULL, NULL);
}

/* On from breakpoint b; keep: it stays for the next time (software: out, the instruction stepped,
 * back in; a debug register lets the instruction run by itself on resumption). */
static void step_over(struct tracer *tr, pid_t t, struct proc *p, int b, bool keep)
{
	struct thread *th = thread_of(tr, t, false);
	if (keep && !tr->soft) {
		go(tr, t, PTRACE_CONT, 0);
		return;
	}
	if (bp_set(tr, t, p, b, false))
		trouble(tr, "a breakpoint could not be taken out", p->pid);
	if (keep && th) {
		th->stepping = b + 1;
		go(tr, t, PTRACE_SINGLESTEP, 0);
	} else {
		go(tr, t, PTRACE_CONT, 0);
	}
}

/* A new thread's first stop: its process, and a burn worker's process (the leader's fork: its
 * own copy of the text, no debug registers) armed. The leader itself is not: its setup runs no
 * lane, and a worker's copy is its own to take the int3s out of. */
static void first_stop(struct tracer *tr, struct thread *th)
{
	th->pid = (pid_t)status_field(th->tid, "Tgid:", 10, (unsigned long long)th->tid);
	struct proc *p = proc_of(tr, th->pid);
	if (tr->phase == DETACHING || (p && p->released))
		return;
	if (p) {
		if (!tr->soft)
			hw_sync(th->tid, p); /* (a thread of an armed process) */
		return;
	}
	if (th->pid != th->tid || tr->np == MAX_PROCS || !burn_process(tr, th->pid))
		return;
	const uintptr_t base = exe_base(th->pid);
	if (!base)
		return;
	check_personality(tr, th->pid);
	p = &tr->pr[tr->np++];
	*p = (struct proc){ .pid = th->pid };
	const struct sdc_regfault_spec *s = tr->s;
	if (s->from == SDC_FROM_ITERATION)
		p->addr[BP_ITER] = base + tr->off[0];
	else
		p->addr[BP_LANE] = base + tr->off[1];
	for (int b = 0; b < BP_N; b++)
		if (bp_set(tr, th->tid, p, b, true))
			trouble(tr, "a breakpoint could not be set", p->pid);
}

/* An exec: a new image, nothing of the tracer's in it. Another program's process is let go
 * (true: t is no longer traced). */
static bool on_exec(struct tracer *tr, pid_t t)
{
	unsigned long former;
	if (!ptrace(PTRACE_GETEVENTMSG, t, NULL, &former) && (pid_t)former != t)
		forget(tr, (pid_t)former); /* (a thread that exec'd took its leader's id) */
	struct proc *p = proc_of(tr, t);
	if (p)
		p->pid = 0;
	if (!runs_this_exe(tr, t)) {
		release(tr, t, 0);
		return true;
	}
	check_personality(tr, t);
	return false;
}

/* ---- the target's stops ---- */

/* The fault now, in stopped thread t; then everything let go. */
static void inject_here(struct tracer *tr, pid_t t, int deliver)
{
	if (sdc_regfault_flip(tr->tp->pid, t, tr->s, tr->r))
		snprintf(tr->r->not_injected, sizeof(tr->r->not_injected), "the registers could not be changed: %s",
			 strerror(errno));
	detach_all(tr, t, deliver);
}

/* The target on from its breakpoint, to be stopped after delay (0: the fault here and now, the same
 * instruction and registers every run). */
static void wait_instant(struct tracer *tr, pid_t t, double delay)
{
	if (delay <= 0) {
		inject_here(tr, t, 0);
		return;
	}
	go(tr, t, PTRACE_CONT, 0);
	tr->instant = sdc_now() + delay;
	tr->phase = WAIT_INSTANT;
}

/* The target's iteration iter starts: its last one's length taken. */
static void on_iteration(struct tracer *tr, pid_t t, struct proc *p, uint64_t iter)
{
	const struct sdc_regfault_spec *s = tr->s;
	struct sdc_regfault_result *r = tr->r;
	if (tr->last_iter != UINT64_MAX && iter == tr->last_iter + 1 && iter <= SDC_REGFAULT_MAX_ITERATIONS) {
		r->length[iter - 1] = (tr->stopped_at - tr->mark_t) - (tr->paused - tr->mark_paused);
		r->nlengths = (int)iter;
	}
	tr->last_iter = iter;
	tr->mark_t = tr->stopped_at;
	tr->mark_paused = tr->paused;
	if (!s->inject || s->from != SDC_FROM_ITERATION || iter < s->iteration) {
		step_over(tr, t, p, BP_ITER, s->inject || iter + 1 < SDC_REGFAULT_MAX_ITERATIONS);
		return;
	}
	if (bp_set(tr, t, p, BP_ITER, false))
		trouble(tr, "a breakpoint could not be taken out", p->pid);
	wait_instant(tr, t, s->delay);
}

/* The target's lane starts: a breakpoint where it returns to. */
static void on_lane(struct tracer *tr, pid_t t, struct proc *p, uint64_t rsp)
{
	const struct sdc_regfault_spec *s = tr->s;
	tr->lane_t = tr->stopped_at;
	tr->lane_paused = tr->paused;
	errno = 0;
	const long ret = ptrace(PTRACE_PEEKDATA, t, (void *)(uintptr_t)rsp, NULL); /* (at a call's entry) */
	if (!errno) {
		p->addr[BP_RETURN] = (uintptr_t)ret;
		if (bp_set(tr, t, p, BP_RETURN, true))
			p->addr[BP_RETURN] = 0;
	}
	if (!s->inject || s->from != SDC_FROM_LANE) {
		step_over(tr, t, p, BP_LANE, false);
		return;
	}
	if (bp_set(tr, t, p, BP_LANE, false))
		trouble(tr, "a breakpoint could not be taken out", p->pid);
	wait_instant(tr, t, s->delay);
}

/* The target's lane returned: its length; nothing more to wait for. */
static void on_return(struct tracer *tr, pid_t t)
{
	struct sdc_regfault_result *r = tr->r;
	r->lane_seconds = (tr->stopped_at - tr->lane_t) - (tr->paused - tr->lane_paused);
	if (tr->s->inject && !r->injected)
		snprintf(r->not_injected, sizeof(r->not_injected),
			 "the worker's lane ended (after %.1f ms) before the instant (%.1f ms)", r->lane_seconds * 1e3,
			 tr->s->delay * 1e3);
	detach_all(tr, t, 0);
}

/* Thread t of process p stopped at breakpoint b (software: rip one past the int3). */
static void on_breakpoint(struct tracer *tr, pid_t t, struct proc *p, int b, struct user_regs_struct *regs)
{
	if (tr->soft) {
		regs->rip--; /* (to run the instruction whose first byte the int3 took) */
		ptrace(PTRACE_SETREGS, t, NULL, regs);
	}
	if (!tr->tp && p && !p->released && comm_is(t, tr->s->thread)) {
		tr->target = t;
		tr->tp = p;
		tr->stopped_at = sdc_now();
	}
	if (!p || p != tr->tp) {
		release(tr, t, 0); /* another worker: on untraced, its breakpoints out */
		return;
	}
	if (t != tr->target || b == BP_N) {
		step_over(tr, t, p, b == BP_N ? BP_ITER : b, true); /* (another thread of the target's) */
		return;
	}
	tr->r->traps++;
	if (b == BP_ITER)
		on_iteration(tr, t, p, regs->rsi); /* sdc_worker_fatal_faults(w, iter, data): the ABI's 2nd */
	else if (b == BP_LANE)
		on_lane(tr, t, p, regs->rsp);
	else
		on_return(tr, t);
}

/* Whether thread t has a SIGTRAP pending (its SigPnd, proc(5)): an int3 or debug register's trap
 * that an interrupt's stop got ahead of. */
static bool trap_pending(pid_t t)
{
	return status_field(t, "SigPnd:", 16, 0) >> (SIGTRAP - 1) & 1;
}

/* The target stopped at (or after) the instant: the fault, unless it waits in the kernel (a lock,
 * a record to its parent), which is not its burn: on, and again 100 us later, for up to
 * s->settle seconds; then the fault goes in where it is. */
static void on_instant(struct tracer *tr, pid_t t, int event, int deliver)
{
	const double now = sdc_now();
	if (event && trap_pending(t)) {
		go(tr, t, PTRACE_CONT, 0); /* (the trap first: it may say the lane ended) */
		tr->phase = WAIT_INSTANT;
		tr->instant = now;
		return;
	}
	struct user_regs_struct regs;
	if (!tr->in_syscall++)
		tr->first_stop = now;
	if (!deliver && !ptrace(PTRACE_GETREGS, t, NULL, &regs) && (long long)regs.orig_rax >= 0 &&
	    now - tr->first_stop < tr->s->settle) {
		go(tr, t, PTRACE_CONT, 0);
		tr->phase = WAIT_INSTANT;
		tr->instant = now + 100e-6;
		return;
	}
	inject_here(tr, t, deliver);
}

/* A stop once everything is being let go: a trap of ours taken (after an interrupt's stop, one
 * that came first is let come), never delivered after the detach, where the process's handler
 * would call it a crash. */
static void on_detaching(struct tracer *tr, const struct thread *th, int event, int sig)
{
	const pid_t t = th->tid;
	if (event && trap_pending(t)) {
		ptrace(PTRACE_CONT, t, NULL, NULL);
		return;
	}
	int deliver = event ? 0 : sig;
	struct user_regs_struct regs;
	if (!event && sig == SIGTRAP && !ptrace(PTRACE_GETREGS, t, NULL, &regs)) {
		const int b = our_trap(tr, t, proc_of(tr, th->pid), regs.rip);
		if (b >= 0 || th->stepping)
			deliver = 0;
		if (b >= 0 && tr->soft) {
			regs.rip--;
			ptrace(PTRACE_SETREGS, t, NULL, &regs);
		}
	}
	release(tr, t, deliver);
}

/* One stop of thread t (status st). */
static void on_stop(struct tracer *tr, pid_t t, int st)
{
	const int event = st >> 16, sig = WSTOPSIG(st);
	struct thread *th = thread_of(tr, t, true);
	if (!th) {
		ptrace(PTRACE_DETACH, t, NULL, NULL); /* (no room to follow it: never armed) */
		return;
	}
	if (t == tr->target)
		tr->stopped_at = sdc_now();
	if (!th->seen) {
		th->seen = true;
		first_stop(tr, th);
	}
	if (tr->phase == DETACHING) {
		on_detaching(tr, th, event, sig);
		return;
	}
	struct proc *p = proc_of(tr, th->pid);
	struct user_regs_struct regs;
	if (event == PTRACE_EVENT_EXEC) {
		if (!on_exec(tr, t)) /* (th may have moved: on_exec forgets the exec'ing thread's old id) */
			go(tr, t, PTRACE_CONT, 0);
		return;
	}
	if (!event && sig == SIGTRAP && th->stepping) {
		const int b = th->stepping - 1; /* the step over it done: back in */
		th->stepping = 0;
		if (p && !p->released && bp_set(tr, t, p, b, true))
			trouble(tr, "a breakpoint could not be set again", p->pid);
		go(tr, t, PTRACE_CONT, 0);
		return;
	}
	if (!event && sig == SIGTRAP && !ptrace(PTRACE_GETREGS, t, NULL, &regs)) {
		const int b = our_trap(tr, t, p, regs.rip);
		if (b >= 0) {
			on_breakpoint(tr, t, p, b, &regs);
			return;
		}
	}
	if (tr->phase == STOPPING && t == tr->target) {
		on_instant(tr, t, event, event ? 0 : sig);
		return;
	}
	/* a fork, a clone, an interrupt, a group stop: on; a signal for the process: delivered */
	go(tr, t, PTRACE_CONT, event ? 0 : sig);
}

/* Tracee t ended (status st). */
static void on_end(struct tracer *tr, pid_t t, int st)
{
	if (t == tr->child) {
		tr->r->status = st;
		tr->r->seconds = sdc_now() - tr->t_spawn;
	}
	struct proc *p = proc_of(tr, t);
	if (p)
		p->pid = 0;
	forget(tr, t);
	if (t == tr->target && tr->phase != DETACHING) {
		if (tr->s->inject && !tr->r->injected)
			snprintf(tr->r->not_injected, sizeof(tr->r->not_injected), "the worker ended before the instant");
		detach_all(tr, -1, 0);
	}
}

/* The child and every process still traced, killed: a traced process not yet reaped keeps its
 * pid, so none of these names another's. */
static void kill_all(struct tracer *tr, bool child)
{
	if (child)
		kill(tr->child, SIGKILL);
	for (int i = 0; i < tr->n; i++)
		kill(tr->th[i].pid, SIGKILL);
}

/* Waits for what the tracees do until none is left: the child's bound, then 5 s for what it
 * killed to be reaped; 2 s after the child's end for any process it left. */
static void trace(struct tracer *tr)
{
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	const double deadline = tr->t_spawn + tr->s->bound;
	double last = deadline + 5;
	bool killed = false, ended = false;
	for (;;) {
		int st;
		const pid_t t = waitpid(-1, &st, __WALL | WNOHANG);
		if (t < 0 && errno == EINTR)
			continue;
		if (t < 0)
			break; /* (ECHILD: nothing left, traced or a child) */
		if (t > 0) {
			if (WIFSTOPPED(st)) {
				on_stop(tr, t, st);
			} else {
				on_end(tr, t, st);
				ended |= t == tr->child;
			}
			continue;
		}
		const double now = sdc_now();
		if (now >= last)
			break;
		if ((now >= deadline || ended) && !killed) {
			tr->r->killed = !ended;
			kill_all(tr, !ended); /* (after the child's end: what it left of its run) */
			killed = true;
			last = SDC_MIN(last, now + 2);
		}
		if (tr->phase == WAIT_INSTANT && now >= tr->instant) {
			ptrace(PTRACE_INTERRUPT, tr->target, NULL, NULL);
			tr->phase = STOPPING;
		}
		/* Nothing now: wait for a SIGCHLD (a tracee's stop or end), the instant or 20 ms. */
		double wait = SDC_MIN(0.02, SDC_MAX(0.0, last - now));
		if (tr->phase == WAIT_INSTANT)
			wait = SDC_MIN(wait, SDC_MAX(0.0, tr->instant - now));
		const struct timespec ts = { (time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9) };
		sigtimedwait(&chld, NULL, &ts);
	}
	if (!ended)
		tr->r->seconds = sdc_now() - tr->t_spawn;
	tr->r->no_aslr = tr->personalities > 0 && tr->no_aslr == tr->personalities;
}

/* ---- the child ---- */

/* sched_setattr(2)'s attributes (the kernel's header for them clashes with glibc's sched header). */
struct slice_attr {
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t prio;
	uint64_t runtime, deadline, period;
	uint32_t util_min, util_max;
};

/*
 * The tracer's time slice (EEVDF's own slice of a SCHED_OTHER task, Linux 6.12: sched_runtime;
 * older kernels ignore it; 0: the default). With a short one its wakeup at the instant preempts
 * the worker it shares a CPU with at once: with the default, the interrupt went out up to 17 ms
 * late here, a third of them past 2 ms; with 100 us, under 1.2 ms. Set in the tracer alone, after
 * the fork: the run's processes keep theirs.
 */
static void set_slice(uint64_t ns)
{
	struct slice_attr a = { .size = sizeof(a) };
	if (syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0) || a.policy != SCHED_OTHER)
		return;
	a.runtime = ns;
	syscall(SYS_sched_setattr, 0, &a, 0);
}


/* The child: its output to log, no address randomisation (kept by its forks and execs), waits
 * until it is traced, then runs (with the signal mask and CPUs the campaign had). */
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

/* The tracer's own setup: where the breakpoints go (from this executable's base) and which file
 * it is. -1 with why. */
static int tracer_init(struct tracer *tr, char *err, size_t errlen)
{
	Dl_info info;
	struct stat st;
	if (!dladdr((void *)sdc_worker_fatal_faults, &info) || !info.dli_fbase) {
		snprintf(err, errlen, "cannot find sdc_worker_fatal_faults in this executable");
		return -1;
	}
	const uintptr_t base = (uintptr_t)info.dli_fbase, lane = tr->s->lane;
	tr->off[0] = (uintptr_t)sdc_worker_fatal_faults - base;
	tr->off[1] = lane > base ? lane - base : 0;
	if (tr->s->from == SDC_FROM_LANE && !tr->off[1]) {
		snprintf(err, errlen, "no lane to count the instant from");
		return -1;
	}
	if (stat("/proc/self/exe", &st)) {
		snprintf(err, errlen, "/proc/self/exe: %s", strerror(errno));
		return -1;
	}
	tr->exe_dev = st.st_dev;
	tr->exe_ino = st.st_ino;
	return 0;
}

int sdc_regfault_run(char *const argv[], const struct sdc_regfault_spec *s, struct sdc_regfault_result *r,
		     char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	static struct tracer tr; /* (a few kB: off the stack) */
	tr = (struct tracer){ .s = s, .r = r, .soft = s->bp == SDC_BP_SOFTWARE, .target = -1, .last_iter = UINT64_MAX };
	if (tracer_init(&tr, err, errlen))
		return -1;
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
	set_slice(100 * 1000);
	int rc = 0;
	/* every process and thread it makes traced from birth: posix_spawn is a vfork */
	const long opts = PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC |
			  PTRACE_O_EXITKILL;
	if (tr.child < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		rc = -1;
	} else if (ptrace(PTRACE_SEIZE, tr.child, NULL, (void *)opts)) {
		snprintf(err, errlen, "PTRACE_SEIZE of the child failed: %s", strerror(errno));
		kill(tr.child, SIGKILL);
		int st;
		sdc_regfault_wait(tr.child, &st, 2);
		rc = -1;
	} else {
		thread_of(&tr, tr.child, true)->seen = true; /* (its exec is where it is looked at) */
		close(p[1]);
		p[1] = -1;
		trace(&tr);
		if (s->inject && !r->injected && !r->not_injected[0])
			snprintf(r->not_injected, sizeof(r->not_injected), s->from == SDC_FROM_LANE ?
				 "the worker's lane was not reached" : "iteration %" PRIu64 " was not reached", s->iteration);
		if (tr.trouble[0]) {
			snprintf(err, errlen, "%s", tr.trouble);
			rc = -1;
		}
	}
	if (p[1] >= 0)
		close(p[1]);
	set_slice(0);
	if (pinned)
		sched_setaffinity(0, sizeof(all), &all);
	if (slack > 0)
		prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0, 0, 0);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc;
}

