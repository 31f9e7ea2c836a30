/* Burn workers that crash: a handler on the thread's alternate stack (core/supervise.h). */
#include "core/supervise.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "base/util.h"

static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP };

/* The running worker's recovery point, on its own stack; NULL on every other thread. */
struct guard {
	sigjmp_buf back;
	struct sdc_crash *c;
	const _Atomic uint64_t *iterations;
	volatile sig_atomic_t armed;
};
static _Thread_local struct guard *guard;

/* The instruction that faulted, from the interrupted context. */
static uintptr_t ip_of(const void *ucv)
{
	const ucontext_t *uc = ucv;
#if defined(__x86_64__)
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
	return (uintptr_t)uc->uc_mcontext.pc;
#else
	(void)uc;
	return 0;
#endif
}

/* Async-signal-safe: stores into the worker's slot, then back to its recovery point. */
static void on_fault(int sig, siginfo_t *si, void *ucv)
{
	struct guard *g = guard;
	if (!g || !g->armed) {
		/* not a worker's, or a second fault while one is handled: what the signal would do
		 * without sdcscan (the default action, a core dump) */
		struct sigaction dfl;
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		sigemptyset(&dfl.sa_mask);
		sigaction(sig, &dfl, NULL);
		raise(sig);
		return;
	}
	g->armed = 0;
	struct sdc_crash *c = g->c;
	c->signo = sig;
	c->code = si->si_code;
	c->sender = si->si_code <= 0 ? (int)si->si_pid : 0;
	c->addr = (uintptr_t)si->si_addr;
	c->ip = ip_of(ucv);
	c->iteration = atomic_load_explicit(g->iterations, memory_order_relaxed);
	c->hit = 1;
	siglongjmp(g->back, 1);
}

int sdc_supervise_init(void)
{
	static int done;
	if (done)
		return 0;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++)
		if (sigaction(fatal_signals[i], &sa, NULL))
			return -1;
	done = 1;
	return 0;
}

/* An overflowing stack faults with no room for the handler but this. */
#define ALT_STACK (64 * 1024)

/* Whether some worker of this process died of a fault (sdc_supervise_crashed). */
static atomic_bool crashed;

bool sdc_supervise_crashed(void)
{
	return atomic_load(&crashed);
}

int sdc_supervise_call(struct sdc_worker *w, void (*run)(struct sdc_worker *), struct sdc_crash *c)
{
	memset(c, 0, sizeof(*c));
	stack_t ss = { .ss_sp = malloc(ALT_STACK), .ss_size = ALT_STACK };
	const bool alt = ss.ss_sp && !sigaltstack(&ss, NULL);
	struct guard g = { .c = c, .iterations = &w->iterations };
	if (sigsetjmp(g.back, 1) == 0) {
		guard = &g;
		g.armed = 1;
		run(w);
		g.armed = 0;
	}
	guard = NULL;
	if (alt) {
		const stack_t off = { .ss_flags = SS_DISABLE };
		sigaltstack(&off, NULL);
	}
	if (!c->hit)
		free(ss.ss_sp);
	else
		atomic_store(&crashed, true);
	/* (after a crash the heap may be what failed: the stack is left, not freed) */
	return c->hit ? 1 : 0;
}

bool sdc_crash_is_fault(const struct sdc_crash *c)
{
	return c->code > 0 || c->sender == (int)getpid();
}

static const char *signal_name(int sig)
{
	switch (sig) {
	case SIGSEGV:
		return "SIGSEGV";
	case SIGBUS:
		return "SIGBUS";
	case SIGILL:
		return "SIGILL";
	case SIGFPE:
		return "SIGFPE";
	case SIGABRT:
		return "SIGABRT";
	case SIGTRAP:
		return "SIGTRAP";
	}
	return "signal";
}

/* si_code's name and what it means (sigaction(2)). */
static const char *code_name(int sig, int code, const char **means)
{
	static const struct {
		int sig, code;
		const char *name, *means;
	} codes[] = {
		{ SIGSEGV, SEGV_MAPERR, "SEGV_MAPERR", "address not mapped" },
		{ SIGSEGV, SEGV_ACCERR, "SEGV_ACCERR", "no permission for the access" },
		{ SIGBUS, BUS_ADRALN, "BUS_ADRALN", "misaligned address" },
		{ SIGBUS, BUS_ADRERR, "BUS_ADRERR", "no such physical address" },
		{ SIGBUS, BUS_OBJERR, "BUS_OBJERR", "hardware error of the object" },
		{ SIGBUS, BUS_MCEERR_AR, "BUS_MCEERR_AR",
		  "an uncorrected memory error (machine check) in memory this thread used: the host's memory" },
		{ SIGBUS, BUS_MCEERR_AO, "BUS_MCEERR_AO",
		  "an uncorrected memory error (machine check) found in this process's memory: the host's memory" },
		{ SIGILL, ILL_ILLOPC, "ILL_ILLOPC", "illegal opcode" },
		{ SIGILL, ILL_ILLOPN, "ILL_ILLOPN", "illegal operand" },
		{ SIGILL, ILL_ILLADR, "ILL_ILLADR", "illegal addressing mode" },
		{ SIGILL, ILL_ILLTRP, "ILL_ILLTRP", "illegal trap" },
		{ SIGILL, ILL_PRVOPC, "ILL_PRVOPC", "privileged opcode" },
		{ SIGILL, ILL_PRVREG, "ILL_PRVREG", "privileged register" },
		{ SIGILL, ILL_COPROC, "ILL_COPROC", "coprocessor error" },
		{ SIGILL, ILL_BADSTK, "ILL_BADSTK", "internal stack error" },
		{ SIGFPE, FPE_INTDIV, "FPE_INTDIV", "integer divide by zero" },
		{ SIGFPE, FPE_INTOVF, "FPE_INTOVF", "integer overflow" },
		{ SIGFPE, FPE_FLTDIV, "FPE_FLTDIV", "floating-point divide by zero" },
		{ SIGFPE, FPE_FLTOVF, "FPE_FLTOVF", "floating-point overflow" },
		{ SIGFPE, FPE_FLTUND, "FPE_FLTUND", "floating-point underflow" },
		{ SIGFPE, FPE_FLTRES, "FPE_FLTRES", "floating-point inexact result" },
		{ SIGFPE, FPE_FLTINV, "FPE_FLTINV", "floating-point invalid operation" },
		{ SIGFPE, FPE_FLTSUB, "FPE_FLTSUB", "subscript out of range" },
		{ SIGTRAP, TRAP_BRKPT, "TRAP_BRKPT", "breakpoint" },
		{ SIGTRAP, TRAP_TRACE, "TRAP_TRACE", "trace trap" },
	};
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (codes[i].sig == sig && codes[i].code == code) {
			*means = codes[i].means;
			return codes[i].name;
		}
	*means = code == SI_KERNEL && sig == SIGTRAP   ? "a breakpoint instruction (int3)"
		 : code == SI_KERNEL && sig == SIGSEGV ? "a general-protection fault (a non-canonical address)"
		 : code == SI_KERNEL                   ? "raised by the kernel"
		 : code == SI_TKILL    ? "sent to the thread (tgkill)"
		 : code == SI_USER     ? "sent by kill"
		 : code == SI_QUEUE    ? "sent by sigqueue"
				       : "";
	return code == SI_KERNEL ? "SI_KERNEL" : code == SI_TKILL ? "SI_TKILL" : code == SI_USER ? "SI_USER"
	       : code == SI_QUEUE ? "SI_QUEUE" : "unknown";
}

/* "libx.so+0x1f2a3 (fn+0x42)", or the bare address where no module holds it. */
static void describe_ip(uintptr_t ip, char *buf, size_t len)
{
	Dl_info info;
	if (!ip || !dladdr((void *)ip, &info) || !info.dli_fname) {
		snprintf(buf, len, "0x%" PRIxPTR, ip);
		return;
	}
	const char *base = strrchr(info.dli_fname, '/');
	base = base ? base + 1 : info.dli_fname;
	int n = snprintf(buf, len, "%s+0x%" PRIxPTR, base, ip - (uintptr_t)info.dli_fbase);
	if (info.dli_sname && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " (%s+0x%" PRIxPTR ")", info.dli_sname, ip - (uintptr_t)info.dli_saddr);
}

void sdc_crash_finding(const struct sdc_worker *w, const struct sdc_crash *c, struct sdc_finding *f)
{
	memset(f, 0, sizeof(*f));
	const bool fault = sdc_crash_is_fault(c);
	f->cls = fault ? SDC_FINDING_CRASH : SDC_FINDING_ERROR;
	sdc_strlcpy(f->kind, fault ? "crash" : "signal-sent", sizeof(f->kind));
	snprintf(f->operation, sizeof(f->operation), "%.40s %.40s worker on %.12s", w->ctx->probe->name,
		 w->ctx->variant->name, w->dev->id);
	f->iteration = c->iteration;
	f->row = f->col = -1;
	const char *means;
	sdc_strlcpy(f->signal, signal_name(c->signo), sizeof(f->signal));
	sdc_strlcpy(f->si_code, code_name(c->signo, c->code, &means), sizeof(f->si_code));
	const bool has_addr = c->signo != SIGABRT && c->code > 0;
	if (has_addr)
		snprintf(f->fault_address, sizeof(f->fault_address), "0x%" PRIxPTR, c->addr);
	describe_ip(c->ip, f->ip, sizeof(f->ip));
	if (!fault) {
		snprintf(f->detail, sizeof(f->detail),
			 "%s sent by process %d (%s): not a fault of %s; its worker stopped in iteration %" PRIu64
			 ", the other devices went on",
			 f->signal, c->sender, f->si_code, w->dev->id, c->iteration);
		return;
	}
	snprintf(f->detail, sizeof(f->detail),
		 /* (each part bounded so that the whole fits the 320 bytes: 99 of text, 20 of a count) */
		 "the worker on %.12s died of %.11s (%.23s%s%.60s)%s%.23s, instruction at %.70s, in iteration %" PRIu64
		 "; the other devices went on",
		 w->dev->id, f->signal, f->si_code, *means ? ": " : "", means, has_addr ? " at address " : "",
		 f->fault_address, f->ip, c->iteration);
}
