/* How a burn process ended, as findings (runner/crash.h). */
#include "runner/crash.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "base/message.h"

const char *sdc_signal_name(int sig)
{
	static const struct {
		int sig;
		const char *name;
	} names[] = {
		{ SIGSEGV, "SIGSEGV" }, { SIGBUS, "SIGBUS" },   { SIGILL, "SIGILL" },   { SIGFPE, "SIGFPE" },
		{ SIGABRT, "SIGABRT" }, { SIGTRAP, "SIGTRAP" }, { SIGSYS, "SIGSYS" },   { SIGKILL, "SIGKILL" },
		{ SIGTERM, "SIGTERM" }, { SIGINT, "SIGINT" },   { SIGHUP, "SIGHUP" },   { SIGQUIT, "SIGQUIT" },
		{ SIGUSR1, "SIGUSR1" }, { SIGUSR2, "SIGUSR2" }, { SIGALRM, "SIGALRM" }, { SIGPIPE, "SIGPIPE" },
		{ SIGXCPU, "SIGXCPU" }, { SIGXFSZ, "SIGXFSZ" },
	};
	for (size_t i = 0; i < SDC_ARRAY_SIZE(names); i++)
		if (names[i].sig == sig)
			return names[i].name;
	return "a signal";
}

bool sdc_signal_is_fault(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGABRT || sig == SIGTRAP ||
	       sig == SIGSYS;
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
		{ SIGSYS, 1 /* SYS_SECCOMP */, "SYS_SECCOMP", "a system call a seccomp filter refused" },
	};
	for (size_t i = 0; i < SDC_ARRAY_SIZE(codes); i++)
		if (codes[i].sig == sig && codes[i].code == code) {
			*means = codes[i].means;
			return codes[i].name;
		}
	*means = code == SI_KERNEL && sig == SIGTRAP   ? "a breakpoint instruction (int3)"
		 : code == SI_KERNEL && sig == SIGSEGV ? "a general-protection fault (a non-canonical address)"
		 : code == SI_KERNEL                   ? "raised by the kernel"
		 : code == SI_TKILL && sig == SIGABRT  ? "it aborted itself: a failed check (the heap's, or its own)"
		 : code == SI_TKILL                    ? "sent to the thread (tgkill)"
		 : code == SI_USER                     ? "sent by kill"
		 : code == SI_QUEUE                    ? "sent by sigqueue"
						       : "";
	return code == SI_KERNEL ? "SI_KERNEL" : code == SI_TKILL ? "SI_TKILL" : code == SI_USER ? "SI_USER"
	       : code == SI_QUEUE ? "SI_QUEUE" : "unknown";
}

/* The same module loaded here (the executable itself, the GPU module): its load address. */
struct module_find {
	const char *name;
	uintptr_t base;
	bool found;
};

static int find_loaded(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct module_find *m = arg;
	const char *path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : NULL;
	char exe[4096];
	if (!path) { /* the executable: dl_iterate_phdr names it "" */
		const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n <= 0)
			return 0;
		exe[n] = 0;
		path = exe;
	}
	const char *slash = strrchr(path, '/');
	if (strcmp(slash ? slash + 1 : path, m->name))
		return 0;
	m->base = (uintptr_t)info->dlpi_addr;
	m->found = true;
	return 1;
}

void sdc_crash_describe_ip(const char *module, uint64_t offset, uint64_t ip, char *buf, size_t len)
{
	if (!module[0]) {
		snprintf(buf, len, "0x%" PRIx64, ip);
		return;
	}
	int n = snprintf(buf, len, "%s+0x%" PRIx64, module, offset);
	/* the symbol, where this process has the same file loaded: the same offset in it */
	struct module_find m = { .name = module };
	dl_iterate_phdr(find_loaded, &m);
	Dl_info info;
	if (m.found && dladdr((void *)(m.base + (uintptr_t)offset), &info) && info.dli_sname && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " (%s+0x%" PRIxPTR ")", info.dli_sname,
			 (uintptr_t)m.base + (uintptr_t)offset - (uintptr_t)info.dli_saddr);
}

void sdc_crash_finding(const struct sdc_crash_seen *c, struct sdc_finding *f)
{
	char who[64];
	if (c->device)
		snprintf(who, sizeof(who), "the worker on %.12s", c->device);
	else
		snprintf(who, sizeof(who), "the variant's setup");
	const char *after = c->device ? "the other devices went on" : "no device ran the variant";
	memset(f, 0, sizeof(*f));
	f->cls = c->is_fault ? SDC_FINDING_CRASH : SDC_FINDING_ERROR;
	sdc_strlcpy(f->kind, c->is_fault ? "crash" : "signal-sent", sizeof(f->kind));
	f->iteration = c->iteration;
	f->row = f->col = -1;
	const char *means = "";
	sdc_strlcpy(f->signal, sdc_signal_name(c->signo), sizeof(f->signal));
	if (c->recorded)
		sdc_strlcpy(f->si_code, code_name(c->signo, c->code, &means), sizeof(f->si_code));
	const bool has_addr = c->recorded && c->signo != SIGABRT && c->code > 0;
	if (has_addr)
		snprintf(f->fault_address, sizeof(f->fault_address), "0x%" PRIx64, c->addr);
	if (c->recorded)
		sdc_crash_describe_ip(c->module, c->module_offset, c->ip, f->ip, sizeof(f->ip));
	if (!c->is_fault) {
		if (c->sender)
			snprintf(f->detail, sizeof(f->detail),
				 "%s sent by process %d (%s) to %s: not a fault of the host; in iteration %" PRIu64 ", %s",
				 f->signal, c->sender, f->si_code, who, c->iteration, after);
		else
			snprintf(f->detail, sizeof(f->detail),
				 "%s was killed by %s, not by sdcscan and not by a fault of its own (the kernel's out-of-memory "
				 "killer, or a person), in iteration %" PRIu64 "; %s",
				 who, f->signal, c->iteration, after);
		return;
	}
	if (!c->recorded) {
		snprintf(f->detail, sizeof(f->detail),
			 "%s died of %.11s in iteration %" PRIu64 " before its fault handler could say where (a fault on its "
			 "alternate stack, a second fault, or before the handler was set up); %s",
			 who, f->signal, c->iteration, after);
		return;
	}
	snprintf(f->detail, sizeof(f->detail),
		 /* (each part bounded so that the whole fits the 320 bytes) */
		 "%.32s died of %.11s (%.23s%s%.60s)%s%.23s, instruction at %.70s, in iteration %" PRIu64 "; %s",
		 who, f->signal, f->si_code, *means ? ": " : "", means, has_addr ? " at address " : "", f->fault_address,
		 f->ip, c->iteration, after);
}
