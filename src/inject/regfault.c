/*
 * The register-fault injector's registers and its host (inject/regfault.h): which registers and bits
 * there are, one bit of one flipped in a stopped thread, whether ptrace may be used here and
 * whether debug registers trap. The tracer that finds the instant is inject/regfault_trace.c.
 *
 * Sources: ptrace(2) (PTRACE_SEIZE, PTRACE_INTERRUPT, PTRACE_POKEUSER, PTRACE_GETREGSET/SETREGSET
 * with NT_PRSTATUS and NT_X86_XSTATE); the Intel SDM Vol. 3B §18.2 (DR0-DR3 hold addresses; DR7
 * bit 0 (L0) enables DR0, R/W0 = 00 breaks on the instruction's execution, LEN0 = 00) and Vol. 1
 * §13.4 (the XSAVE area: the legacy region's XMM registers at byte 160, 16 bytes each; the XSAVE
 * header's XSTATE_BV at byte 512; in the standard form, component i at the offset
 * CPUID.(EAX=0DH,ECX=i).EBX gives: 2 the upper halves of YMM0-15, 6 the upper 256 bits of
 * ZMM0-15, 7 ZMM16-31 whole); Linux's arch/x86/include/asm/user.h (the NT_X86_XSTATE buffer is
 * the standard form, with XCR0 in the software bytes at 464, as gdb's
 * I386_LINUX_XSAVE_XCR0_OFFSET reads it) and arch/x86/kernel/fpu/regset.c (a component whose
 * XSTATE_BV bit is clear is written as its init state, so the bit is set with the flip).
 */
#include "inject/regfault.h"

#include <cpuid.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"

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

/* Flips the asked bit in stopped thread t of process pid and says where it was. */
int sdc_regfault_flip(pid_t pid, pid_t t, const struct sdc_regfault_spec *s, struct sdc_regfault_result *r)
{
	struct user_regs_struct regs;
	if (ptrace(PTRACE_GETREGS, t, NULL, &regs))
		return -1;
	char at[128];
	where(pid, regs.rip, at, sizeof(at));
	if ((long long)regs.orig_rax >= 0)
		snprintf(r->at, sizeof(r->at), "%s, in syscall %lld", at, (long long)regs.orig_rax);
	else
		snprintf(r->at, sizeof(r->at), "%s", at);
	if ((s->cls == SDC_REG_GPR ? flip_gpr : flip_vector)(t, s, r))
		return -1;
	r->injected = true;
	return 0;
}

/* ---- do debug registers trap here? ---- */

static __attribute__((noinline)) void hw_probe_target(void)
{
	__asm__ volatile("" ::: "memory");
}

pid_t sdc_regfault_wait(pid_t c, int *st, double seconds)
{
	for (const double end = sdc_now() + seconds;;) {
		const pid_t w = waitpid(c, st, __WALL | WNOHANG);
		if (w != 0 || sdc_now() >= end)
			return w;
		const struct timespec t = { 0, 1000 * 1000 };
		nanosleep(&t, NULL);
	}
}

int sdc_regfault_hw_traps(char *why, size_t len)
{
	int p[2], st = 0, rc = -1;
	if (pipe2(p, O_CLOEXEC)) {
		snprintf(why, len, "pipe: %s", strerror(errno));
		return -1;
	}
	const pid_t c = fork();
	if (c == 0) {
		char ch;
		close(p[1]);
		if (read(p[0], &ch, 1) == 0)
			hw_probe_target();
		_exit(0);
	}
	close(p[0]);
	if (c < 0) {
		snprintf(why, len, "fork: %s", strerror(errno));
		close(p[1]);
		return -1;
	}
	siginfo_t si;
	pid_t w = 0;
	if (ptrace(PTRACE_SEIZE, c, NULL, (void *)(long)PTRACE_O_EXITKILL) || ptrace(PTRACE_INTERRUPT, c, NULL, NULL) ||
	    (w = sdc_regfault_wait(c, &st, 2)) != c || !WIFSTOPPED(st)) {
		snprintf(why, len, "its test child could not be traced and stopped: %s", strerror(errno));
	} else if (ptrace(PTRACE_POKEUSER, c, (void *)offsetof(struct user, u_debugreg[0]), (void *)hw_probe_target) ||
		   ptrace(PTRACE_POKEUSER, c, (void *)offsetof(struct user, u_debugreg[7]), (void *)1ul)) {
		snprintf(why, len, "the kernel refused the debug registers (PTRACE_POKEUSER: %s)", strerror(errno));
		rc = 0;
	} else {
		ptrace(PTRACE_CONT, c, NULL, NULL);
		close(p[1]); /* (the child calls the function now) */
		p[1] = -1;
		w = sdc_regfault_wait(c, &st, 2);
		rc = w == c && WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP && !ptrace(PTRACE_GETSIGINFO, c, NULL, &si) &&
		     si.si_code == TRAP_HWBKPT;
		if (!rc)
			snprintf(why, len, "a debug-register breakpoint on a function its test child then called %s",
				 w == c && WIFEXITED(st) ? "never trapped (the kernel took DR0 and DR7; a hypervisor that "
							   "does not pass debug registers through drops them)"
							 : "gave no trap within 2 s");
	}
	if (p[1] >= 0)
		close(p[1]);
	if (w == c && (WIFEXITED(st) || WIFSIGNALED(st)))
		return rc; /* (reaped: its pid is no longer its own to kill) */
	kill(c, SIGKILL);
	while (sdc_regfault_wait(c, &st, 2) == c && !WIFEXITED(st) && !WIFSIGNALED(st))
		; /* (its trap's stop, then its death) */
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
	int st;
	sdc_regfault_wait(c, &st, 2);
	if (rc) {
		snprintf(why, len, "PTRACE_SEIZE of a child of its own failed: %s (%s%s)", strerror(e),
			 cap ? "a seccomp filter or security module refuses ptrace" :
			       "a container without CAP_SYS_PTRACE, or a seccomp filter",
			 scope >= 0 ? "" : "; no Yama here");
		return -1;
	}
	return 0;
}
