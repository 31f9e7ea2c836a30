/*
 * The burn's own processes (runner/burn.h): the variant's leader, exec'd by the run's parent, which
 * sets the probe up and forks one worker a device; and the worker, which burns its device and
 * reports through its slot and socket. Nothing here returns to the command driver: each process
 * ends with _exit, so no exit handler, TLS destructor or stdio lock a fault may have left held is
 * ever waited for.
 */
#include "runner/burn.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "base/message.h"
#include "base/clock.h"
#include "runner/burn_records.h"
#include "runner/registry.h"
#include "run/facts_json.h"
#include "inject/fatal.h"
#include "probe/golden_file.h"

/* ---- the crash record: written by the fault handler, in signal context ---- */

static struct sdc_burn_crash *crash_record;
static const struct sdc_worker_progress *crash_progress;

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

static uint64_t hex_field(const char **p)
{
	uint64_t v = 0;
	for (;; (*p)++) {
		const char c = **p;
		const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (d < 0)
			return v;
		v = v << 4 | (uint64_t)d;
	}
}

/* What find_module keeps between lines: the file the last line mapped, and its load address. */
struct maps_walk {
	char path[120];
	uint64_t base;
};

static const char *skip_field(const char *p)
{
	while (*p && *p != ' ')
		p++;
	while (*p == ' ')
		p++;
	return p;
}

/* One line of /proc/self/maps ("start-end perms offset dev inode path"): a file's first line
 * gives its load address (start less offset, as the loader's l_map_start); the line holding ip
 * names the module. */
static void maps_line(const char *line, uintptr_t ip, struct maps_walk *mw, struct sdc_burn_crash *c)
{
	const char *p = line;
	const uint64_t start = hex_field(&p);
	p += *p == '-';
	const uint64_t end = hex_field(&p);
	p = skip_field(skip_field(p)); /* (the rest of the range, perms) */
	const uint64_t off = hex_field(&p);
	p = skip_field(skip_field(skip_field(p))); /* (the rest of offset, dev, inode) */
	if (strncmp(mw->path, p, sizeof(mw->path) - 1)) {
		size_t n = 0;
		for (; p[n] && n < sizeof(mw->path) - 1; n++)
			mw->path[n] = p[n];
		mw->path[n] = 0;
		mw->base = start - off;
	}
	if (ip < start || ip >= end || !*p)
		return;
	const char *slash = strrchr(p, '/');
	const char *name = slash ? slash + 1 : p;
	size_t n = 0;
	for (; name[n] && n < sizeof(c->module) - 1; n++)
		c->module[n] = name[n];
	c->module[n] = 0;
	c->module_offset = ip - mw->base;
}

/* The module holding ip, from /proc/self/maps with system calls alone (open, read: no malloc,
 * no loader lock, so it works in a process whose heap or loader a fault broke). */
static void find_module(uintptr_t ip, struct sdc_burn_crash *c)
{
	const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	char buf[2048], line[512];
	struct maps_walk mw = { .path = "" };
	size_t used = 0;
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] != '\n') {
				if (used < sizeof(line) - 1)
					line[used++] = buf[i];
				continue;
			}
			line[used] = 0;
			maps_line(line, ip, &mw, c);
			used = 0;
		}
	}
	close(fd);
}

static void on_fault(int sig, siginfo_t *si, void *ucv)
{
	struct sdc_burn_crash *c = crash_record;
	if (c && !atomic_exchange(&c->claimed, 1)) {
		c->signo = sig;
		c->code = si->si_code;
		c->sender = si->si_code <= 0 ? (int32_t)si->si_pid : 0;
		c->is_fault = si->si_code > 0 || si->si_pid == getpid();
		c->addr = (uint64_t)(uintptr_t)si->si_addr;
		c->ip = ip_of(ucv);
		c->iteration = crash_progress ? atomic_load_explicit(&crash_progress->iterations, memory_order_relaxed) : 0;
		find_module((uintptr_t)c->ip, c);
		atomic_store_explicit(&c->written, 1, memory_order_release);
	}
	/* die of it, as the process would have without sdcscan (the parent reads the record) */
	signal(sig, SIG_DFL);
	raise(sig);
}

static const int fault_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS };

/* The handler on an alternate stack (a stack overflow faults with no room but this), no core
 * file (a crash is a finding, not a bug report, and a GPU process's core takes minutes to write),
 * and the signals a person or a terminal sends left to the parent, which tells the burn to stop. */
static void burn_signals(void)
{
	static const size_t alt = 64 * 1024;
	stack_t ss = { .ss_sp = mmap(NULL, alt, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
		       .ss_size = alt };
	if (ss.ss_sp != MAP_FAILED)
		sigaltstack(&ss, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < SDC_ARRAY_SIZE(fault_signals); i++)
		sigaction(fault_signals[i], &sa, NULL);
	sigset_t parents;
	sdc_burn_parent_signals(&parents);
	for (int sig = 1; sig < NSIG; sig++)
		if (sigismember(&parents, sig) == 1)
			signal(sig, SIG_IGN);
	/* (they came blocked across the exec: ignored now, what was pending is dropped) */
	sigprocmask(SIG_UNBLOCK, &parents, NULL);
	const struct rlimit none = { 0, 0 };
	setrlimit(RLIMIT_CORE, &none);
}

/* ---- the order ---- */

struct burn {
	const struct sdc_burn_order *o;
	const struct sdc_probe *probe;
	void *opts;
	struct sdc_run run;
	struct sdc_probe_ctx ctx;
	struct sdc_burn_sink sink;
	unsigned char *slots;
	size_t stride;
	int self; /* the worker this process is (nworkers: the leader) */
};

static struct sdc_burn_slot *slot_of(const struct burn *b, int i)
{
	return (struct sdc_burn_slot *)(void *)(b->slots + (size_t)i * b->stride);
}

/* The order's arrays, at their offsets after the header. */
static const void *order_part(const struct sdc_burn_order *o, int part)
{
	const unsigned char *p = (const unsigned char *)(o + 1);
	const size_t sizes[] = { (size_t)o->nworkers * sizeof(int32_t), (size_t)o->ndevices * sizeof(struct sdc_device),
				 (size_t)o->ninject * sizeof(struct sdc_inject_spec), (size_t)o->nhosts * 64, o->opts_size };
	for (int i = 0; i < part; i++)
		p += sizes[i];
	return p;
}

/* The order whole, checked against what this executable expects. NULL: not one. */
static const struct sdc_burn_order *read_order(int fd)
{
	struct stat st;
	if (fstat(fd, &st) || (size_t)st.st_size < sizeof(struct sdc_burn_order) || st.st_size > (64 << 20))
		return NULL;
	struct sdc_burn_order *o = malloc((size_t)st.st_size);
	if (!o || pread(fd, o, (size_t)st.st_size, 0) != st.st_size)
		return NULL;
	const uint32_t sizes[6] = { sizeof(*o), sizeof(struct sdc_burn_slot), sizeof(struct sdc_finding),
				    sizeof(struct sdc_injection), sizeof(struct sdc_device), sizeof(struct sdc_burn_result) };
	const uint64_t want = sizeof(*o) + (uint64_t)o->nworkers * 4 + (uint64_t)o->ndevices * sizeof(struct sdc_device) +
			      (uint64_t)o->ninject * sizeof(struct sdc_inject_spec) + (uint64_t)o->nhosts * 64 + o->opts_size +
			      o->golden_size;
	if (o->magic != SDC_BURN_MAGIC || o->version != SDC_BURN_VERSION || memcmp(o->sizes, sizes, sizeof(sizes)) ||
	    o->nworkers < 1 || o->ndevices < 1 || o->ninject < 0 || o->nhosts < 0 || o->bytes != (uint64_t)st.st_size ||
	    want != o->bytes)
		return NULL;
	o->probe[sizeof(o->probe) - 1] = 0;
	o->golden_origin[sizeof(o->golden_origin) - 1] = 0;
	if (o->golden_size && ((const char *)o)[o->bytes - 1])
		return NULL;
	return o;
}

/* The run as the probe sees it: the parent's devices, injections and fleet, reporting through
 * this process's socket. 0, or -1. */
static int make_run(struct burn *b)
{
	const struct sdc_burn_order *o = b->o;
	if (sdc_run_init(&b->run))
		return -1;
	b->run.seed = o->seed;
	sdc_strlcpy(b->run.profile, o->profile, sizeof(b->run.profile));
	b->run.ndevices = o->ndevices;
	b->run.devices = calloc((size_t)o->ndevices, sizeof(*b->run.devices));
	b->run.ninject = o->ninject;
	b->run.inject = calloc((size_t)o->ninject + 1, sizeof(*b->run.inject));
	if (!b->run.devices || !b->run.inject)
		return -1;
	memcpy(b->run.devices, order_part(o, 1), (size_t)o->ndevices * sizeof(*b->run.devices));
	memcpy(b->run.inject, order_part(o, 2), (size_t)o->ninject * sizeof(*b->run.inject));
	b->run.sink = &b->sink.sink;
	if (o->golden_size) {
		/* (the run's golden in use, selftest's recorded one: probes find theirs through it) */
		static struct sdc_golden golden;
		char err[300];
		if (sdc_golden_parse(order_part(o, 5), o->golden_size - 1, o->golden_origin, &golden, err, sizeof(err)))
			return -1;
		sdc_golden_use(&golden);
	}
	sdc_mpi = o->fleet;
	sdc_mpi_set_hosts((const char(*)[64])order_part(o, 3), o->nhosts);
	return 0;
}

/* The probe's context as the runner made it in one process: every worker, each with its slot. */
static int make_ctx(struct burn *b)
{
	const struct sdc_burn_order *o = b->o;
	struct sdc_probe_ctx *ctx = &b->ctx;
	b->probe = sdc_probe_find(o->probe);
	b->opts = calloc(1, o->opts_size + 1);
	if (!b->probe || !b->opts || o->opts_size != b->probe->opts_size)
		return -1;
	memcpy(b->opts, (const unsigned char *)order_part(o, 4), o->opts_size);
	ctx->probe = b->probe;
	ctx->opts = b->opts;
	ctx->variant = &o->variant;
	ctx->seed = o->seed;
	ctx->run = &b->run;
	ctx->max_iterations = o->max_iterations;
	sdc_strlcpy(ctx->rate_unit, "GOP/s", sizeof(ctx->rate_unit));
	sdc_strlcpy(ctx->iter_unit, "iterations", sizeof(ctx->iter_unit));
	ctx->rate_scale = 1e9;
	ctx->nworkers = o->nworkers;
	ctx->workers = calloc((size_t)o->nworkers, sizeof(*ctx->workers));
	const struct sdc_device **devs = calloc((size_t)o->nworkers, sizeof(*devs));
	if (!ctx->workers || !devs)
		return -1;
	const int32_t *wd = order_part(o, 0);
	for (int i = 0; i < o->nworkers; i++) {
		if (wd[i] < 0 || wd[i] >= o->ndevices)
			return -1;
		struct sdc_worker *w = &ctx->workers[i];
		w->ctx = ctx;
		w->index = i;
		w->device = wd[i];
		w->dev = devs[i] = &b->run.devices[wd[i]];
		w->progress = &slot_of(b, i)->progress;
	}
	ctx->faults = sdc_fault_plan_new(b->run.inject, b->run.ninject, b->probe->name, o->variant.name, o->seed, devs,
					 o->nworkers);
	for (int i = 0; i < b->run.ninject; i++)
		ctx->fatal_planned |= !strcmp(b->run.inject[i].probe, b->probe->name) && sdc_fatal_target(b->run.inject[i].target);
	return ctx->faults ? 0 : -1;
}

/* ---- a worker ---- */

/* The parent is this process's parent: the leader exited after forking it, and the run's process
 * (a subreaper) adopted it. Until then it must not burn: nobody could kill it. */
static int wait_adopted(pid_t parent, double limit, const struct sdc_burn_slot *s)
{
	/* (the leader forks every worker before it exits: with many, the first wait a while) */
	const double until = sdc_now() + limit;
	while (getppid() != parent && sdc_now() < until && !atomic_load(&s->stop.hard)) {
		const struct timespec t = { 0, 200 * 1000 };
		nanosleep(&t, NULL);
	}
	if (getppid() != parent)
		return -1;
	/* the parent's death ends this one too (after the check: the leader's exit would have sent it) */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	return getppid() == parent ? 0 : -1;
}

static void worker_main(struct burn *b, int i)
{
	const struct sdc_burn_order *o = b->o;
	struct sdc_burn_slot *s = slot_of(b, i);
	struct sdc_worker *w = &b->ctx.workers[i];
	atomic_store(&s->pid, (int32_t)getpid());
	atomic_store(&s->phase, SDC_BURN_FORKED);
	b->self = i;
	/* only its own slot and socket: another's is not its to write */
	for (int k = 0; k < o->nworkers; k++)
		if (k != i)
			close(o->first_worker_fd + k);
	close(o->leader_fd);
	const size_t own = (size_t)i * b->stride;
	if (own)
		munmap(b->slots, own);
	munmap(b->slots + own + b->stride, (size_t)(o->nworkers - i) * b->stride);
	crash_record = &s->crash;
	crash_progress = &s->progress;
	sdc_stop = &s->stop;
	sdc_burn_sink_init(&b->sink, o->first_worker_fd + i, i, s);
	char name[16];
	snprintf(name, sizeof(name), "sdc %.11s", w->dev->id); /* what top, ps and the campaign see */
	prctl(PR_SET_NAME, name);
	if (wait_adopted(o->parent, SDC_BURN_LEADER_EXIT + 5, s))
		_exit(SDC_BURN_EXIT_NOT_ADOPTED);
	atomic_store(&s->phase, SDC_BURN_ADOPTED);
	sdc_mpi_set_remote(sdc_burn_fleet_call, &b->sink, b->sink.window, b->sink.window_bytes);
	char err[200];
	void (*const lane)(struct sdc_worker *) = b->probe->lane[w->dev->kind];
	const int bound = sdc_device_bind(w->dev, err, sizeof(err));
	w->t_start = sdc_now();
	w->t_end = 0;
	uint64_t bits;
	memcpy(&bits, &w->t_start, sizeof(bits));
	atomic_store(&s->t_burn, bits);
	atomic_store(&s->phase, SDC_BURN_BURNING);
	if (bound)
		sdc_worker_error(w, "%s", err);
	else if (!lane)
		sdc_worker_error(w, "%s: the %s probe has no %s lane", w->dev->id, b->probe->name,
				 sdc_device_kind_name(w->dev->kind));
	else
		lane(w);
	if (!w->t_end) /* (where the probe did not stop the clock before a check at its end) */
		w->t_end = sdc_now();
	sdc_burn_send_result(&b->sink, w);
	atomic_store(&s->phase, SDC_BURN_REPORTED);
	if (sdc_fatal_after_result) /* (the tests' build: a process stuck at its exit, inject/fatal.h) */
		sdc_fatal_after_result();
	_exit(0);
}

/* ---- the leader ---- */

/* Whether this process is one thread, and has not initialised the CUDA driver: what a fork needs. */
bool sdc_burn_fork_safe(char *why, size_t len)
{
	int threads = 0;
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	while (d && (e = readdir(d)))
		threads += e->d_name[0] != '.';
	if (d)
		closedir(d);
	if (threads > 1) {
		snprintf(why, len, "the variant's process has %d threads after its setup (a library started threads): its "
			 "workers cannot be forked from it", threads);
		return false;
	}
	/* the GPU module loads the driver's library (device/gpu_loader.c), which is harmless; a driver cuInit made
	 * ready is not fork-safe. Before cuInit, every driver call returns CUDA_ERROR_NOT_INITIALIZED
	 * (3) (CUDA Driver API, "Initialization"): cuCtxGetCurrent asks without initialising. */
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	int (*ctx_get_current)(void **) = NULL;
	if (cuda)
		*(void **)&ctx_get_current = dlsym(cuda, "cuCtxGetCurrent");
	void *ctx = NULL;
	const int rc = ctx_get_current ? ctx_get_current(&ctx) : 3;
	if (cuda)
		dlclose(cuda);
	if (rc != 3) {
		snprintf(why, len, "the variant's setup initialised the CUDA driver (cuCtxGetCurrent: %d): its workers "
			 "cannot be forked from it", rc);
		return false;
	}
	return true;
}

static int lead(struct burn *b)
{
	const struct sdc_burn_order *o = b->o;
	struct sdc_probe_ctx *ctx = &b->ctx;
	const double t0 = sdc_now();
	char why[256];
	if (b->probe->setup && b->probe->setup(ctx)) {
		sdc_burn_send_text(&b->sink, SDC_REC_SETUP_FAILED, ctx->error);
		return 0;
	}
	if (!sdc_burn_fork_safe(why, sizeof(why))) {
		sdc_burn_send_text(&b->sink, SDC_REC_SETUP_FAILED, why);
		return 0;
	}
	struct sdc_burn_setup su = { .rate_scale = ctx->rate_scale, .floor = ctx->floor, .setup_seconds = sdc_now() - t0,
				     .fleet_timeout = sdc_mpi.timeout };
	sdc_strlcpy(su.rate_unit, ctx->rate_unit, sizeof(su.rate_unit));
	sdc_strlcpy(su.iter_unit, ctx->iter_unit, sizeof(su.iter_unit));
	ctx->t_start = su.t_start = sdc_now();
	ctx->deadline = ctx->t_start + o->share;
	if (sdc_burn_send(&b->sink, SDC_REC_SETUP, -1, &su, sizeof(su)))
		return -1;
	fflush(NULL); /* (nothing buffered is written twice by the workers) */
	int32_t *pids = calloc((size_t)o->nworkers, sizeof(*pids));
	if (!pids)
		return -1;
	for (int i = 0; i < o->nworkers; i++) {
		const pid_t pid = fork();
		if (pid == 0)
			worker_main(b, i); /* (never returns) */
		if (pid < 0) {
			struct sdc_burn_error e = { .lost = 0 };
			snprintf(e.text, sizeof(e.text), "cannot start the worker's process: fork: %s", strerror(errno));
			sdc_burn_send(&b->sink, SDC_REC_ERROR, i, &e, sizeof(e));
		}
		pids[i] = pid > 0 ? (int32_t)pid : 0;
	}
	/* (the parent adopts them when this process exits, next) */
	return sdc_burn_send(&b->sink, SDC_REC_PIDS, -1, pids, (size_t)o->nworkers * sizeof(*pids));
}

int sdc_burn_main(int argc, char **argv)
{
	struct burn b = { 0 };
	char *end;
	const long fd = argc == 3 ? strtol(argv[2], &end, 10) : -1;
	if (fd < 0 || *end || !(b.o = read_order((int)fd))) {
		fprintf(stderr, "sdcscan: %s is how a run starts its own burns, not a command (see sdcscan --help)\n",
			SDC_BURN_ARGV1);
		_exit(SDC_BURN_EXIT_BAD_ORDER);
	}
	const struct sdc_burn_order *o = b.o;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != o->parent)
		_exit(SDC_BURN_EXIT_NOT_ADOPTED);
	close((int)fd);
	b.stride = sdc_burn_slot_stride();
	const size_t bytes = (size_t)(o->nworkers + 1) * b.stride;
	b.slots = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, o->slots_fd, 0);
	if (b.slots == MAP_FAILED)
		_exit(SDC_BURN_EXIT_BAD_ORDER);
	close(o->slots_fd);
	struct sdc_burn_slot *ls = slot_of(&b, o->nworkers);
	atomic_store(&ls->pid, (int32_t)getpid());
	crash_record = &ls->crash;
	sdc_stop = &ls->stop;
	burn_signals();
	b.self = o->nworkers;
	sdc_burn_sink_init(&b.sink, o->leader_fd, -1, NULL);
	if (o->window_bytes > 0 && sdc_burn_sink_window(&b.sink, o->window_fd, (size_t)o->window_bytes))
		_exit(SDC_BURN_EXIT_BAD_ORDER);
	sdc_mpi_set_remote(sdc_burn_fleet_call, &b.sink, b.sink.window, b.sink.window_bytes);
	if (make_run(&b) || make_ctx(&b)) {
		sdc_burn_send_text(&b.sink, SDC_REC_SETUP_FAILED, "out of memory, or an order this sdcscan cannot read");
		_exit(0);
	}
	lead(&b);
	fflush(NULL);
	_exit(0);
}
