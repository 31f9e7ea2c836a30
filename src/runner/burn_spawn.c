/*
 * Starting a variant's processes (runner/burn.h): the channel (slots, sockets, the fleet calls'
 * window, the order) made first, then the leader spawned as `sdcscan __burn FD` (posix_spawn:
 * no fork of the run's threaded, MPI- and CUDA-initialised process), with the environment a
 * process that forks needs.
 */
#include "runner/burn.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/message.h"
#include "base/clock.h"
#include "sdc_config.h"
#include "mpi/transport.h"
#include "probe/golden_file.h"

extern char **environ;

/* How this process was started, to start the leader the same way: argv[0] (main.c), and what
 * ran before it on the command line, a dynamic loader run by hand (the GPU bundle runs
 * `ld-linux-x86-64.so.2 --library-path LIBS sdcscan ...`: /proc/self/exe is then the loader). */
static char self_argv0[4096];

void sdc_burn_remember_self(const char *argv0)
{
	sdc_strlcpy(self_argv0, argv0 ? argv0 : "", sizeof(self_argv0));
}

/* argv for the leader into argv (at most max entries, the words kept in store): the loader's words
 * before argv[0] when one ran this program, then argv[0], SDC_BURN_ARGV1 and the order's fd. */
static void leader_argv(char **argv, int max, char *store, size_t storelen, char *fdarg)
{
	int n = 0;
	const int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	const ssize_t got = fd >= 0 ? read(fd, store, storelen - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (got > 0 && self_argv0[0]) {
		store[got] = 0;
		for (char *w = store; w < store + got && n < max - 4; w += strlen(w) + 1) {
			if (!strcmp(w, self_argv0)) {
				if (n == 0)
					break; /* (started as itself: no loader) */
				argv[n++] = self_argv0;
				argv[n++] = SDC_BURN_ARGV1;
				argv[n++] = fdarg;
				argv[n] = NULL;
				return;
			}
			argv[n++] = w;
		}
	}
	argv[0] = "sdcscan";
	argv[1] = SDC_BURN_ARGV1;
	argv[2] = fdarg;
	argv[3] = NULL;
}

/* The leader's environment: this one's, without what would make a library in it think it is an
 * MPI rank, and with the BLAS kept to one thread (the leader forks: it must be one thread). */
static char **burn_environment(void)
{
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 4, sizeof(*env));
	if (!env)
		return NULL;
	size_t k = 0;
	static const char *const drop[] = { "OMPI_", "PMIX_", "PMI_", "OPENBLAS_NUM_THREADS=", "GOTO_NUM_THREADS=",
					    "OMP_NUM_THREADS=" };
	for (size_t i = 0; i < n; i++) {
		bool keep = true;
		for (size_t d = 0; d < SDC_ARRAY_SIZE(drop) && keep; d++)
			keep = strncmp(environ[i], drop[d], strlen(drop[d])) != 0;
		if (keep)
			env[k++] = environ[i];
	}
	env[k++] = "OPENBLAS_NUM_THREADS=1";
	env[k++] = "GOTO_NUM_THREADS=1";
	env[k++] = "OMP_NUM_THREADS=1";
	return env;
}

/* The order, in a memfd the leader reads whole. -1 on failure. */
static int write_order(const struct sdc_burn *b, struct sdc_burn_order *o)
{
	const struct sdc_run *run = b->rq.run;
	const int nhosts = sdc_mpi.active ? sdc_mpi.size : 0;
	const size_t opts = b->rq.entry->probe->opts_size;
	char *golden = sdc_golden_in_use(o->golden_origin, sizeof(o->golden_origin));
	o->golden_size = golden ? (uint32_t)strlen(golden) + 1 : 0;
	o->bytes = sizeof(*o) + (size_t)b->rq.nworkers * 4 + (size_t)run->ndevices * sizeof(struct sdc_device) +
		   (size_t)run->ninject * sizeof(struct sdc_inject_spec) + (size_t)nhosts * 64 + opts + o->golden_size;
	o->nworkers = b->rq.nworkers;
	o->ndevices = run->ndevices;
	o->ninject = run->ninject;
	o->nhosts = nhosts;
	o->opts_size = (uint32_t)opts;
	const int fd = memfd_create("sdcscan-burn-order", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	int32_t *wd = calloc((size_t)b->rq.nworkers, sizeof(*wd));
	char(*hosts)[64] = calloc((size_t)nhosts + 1, 64);
	bool ok = wd && hosts;
	for (int i = 0; ok && i < b->rq.nworkers; i++)
		wd[i] = b->rq.devices[i];
	for (int r = 0; ok && r < nhosts; r++)
		sdc_strlcpy(hosts[r], sdc_mpi_host(r), 64);
	const struct {
		const void *p;
		size_t n;
	} parts[] = { { o, sizeof(*o) },
		      { wd, (size_t)b->rq.nworkers * 4 },
		      { run->devices, (size_t)run->ndevices * sizeof(struct sdc_device) },
		      { run->inject, (size_t)run->ninject * sizeof(struct sdc_inject_spec) },
		      { hosts, (size_t)nhosts * 64 },
		      { b->rq.entry->opts, opts },
		      { golden, o->golden_size } };
	for (size_t i = 0; ok && i < SDC_ARRAY_SIZE(parts); i++)
		ok = !parts[i].n || write(fd, parts[i].p, parts[i].n) == (ssize_t)parts[i].n;
	free(wd);
	free(hosts);
	free(golden);
	if (!ok) {
		close(fd);
		return -1;
	}
	return fd;
}

#if !HAVE_SPAWN_CLOSEFROM
/* Every descriptor from `from` up marked close-on-exec, so the leader gets only its channel (a
 * glibc older than 2.34 has no file action that closes the rest). */
static void cloexec_from(int from)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		const int fd = atoi(e->d_name);
		if (fd >= from && fd != dirfd(d))
			fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC);
	}
	if (d)
		closedir(d);
}
#endif

/* The channel's descriptors, numbered for the leader from 3: order, slots, leader socket, window
 * (when there is one), then a socket a worker. posix_spawn dup2s each there and closes the rest. */
struct spawn_fds {
	int src[8 + 1024];
	int n;
};

static int spawn_leader(struct sdc_burn *b, struct sdc_burn_order *o, int slots_fd, int leader_child, int window_fd,
			const int *worker_child)
{
	struct spawn_fds fds = { .n = 0 };
	if (b->rq.nworkers > 1024)
		return ENFILE;
	const int order_at = 3;
	fds.src[fds.n++] = -1; /* (the order: written last, once every number is known) */
	o->slots_fd = 3 + fds.n;
	fds.src[fds.n++] = slots_fd;
	o->leader_fd = 3 + fds.n;
	fds.src[fds.n++] = leader_child;
	o->window_fd = -1;
	if (window_fd >= 0) {
		o->window_fd = 3 + fds.n;
		fds.src[fds.n++] = window_fd;
	}
	o->first_worker_fd = 3 + fds.n;
	for (int i = 0; i < b->rq.nworkers; i++)
		fds.src[fds.n++] = worker_child[i];
	const int order_fd = write_order(b, o);
	if (order_fd < 0)
		return errno ? errno : EIO;
	fds.src[0] = order_fd;
	/* every source above the targets, so no dup2 overwrites one still to be copied */
	const int top = 3 + fds.n;
	int moved[SDC_ARRAY_SIZE(fds.src)];
	int rc = 0;
	for (int k = 0; k < fds.n; k++) {
		moved[k] = fcntl(fds.src[k], F_DUPFD_CLOEXEC, top);
		if (moved[k] < 0)
			rc = errno;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	for (int k = 0; !rc && k < fds.n; k++)
		rc = posix_spawn_file_actions_adddup2(&fa, moved[k], 3 + k);
#if HAVE_SPAWN_CLOSEFROM
	if (!rc)
		rc = posix_spawn_file_actions_addclosefrom_np(&fa, top);
#else
	cloexec_from(top);
#endif
	char fdarg[16], words[8192], *argv[64];
	snprintf(fdarg, sizeof(fdarg), "%d", order_at);
	leader_argv(argv, (int)SDC_ARRAY_SIZE(argv), words, sizeof(words), fdarg);
	char **env = rc ? NULL : burn_environment();
	if (!rc && !env)
		rc = ENOMEM;
	/* the signals a person or a terminal sends arrive blocked: across the exec they would be a
	 * default death until the leader says it ignores them (the run tells it to stop) */
	posix_spawnattr_t at;
	posix_spawnattr_init(&at);
	sigset_t mask;
	sdc_burn_parent_signals(&mask);
	posix_spawnattr_setsigmask(&at, &mask);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK);
	if (!rc)
		rc = posix_spawn(&b->leader, "/proc/self/exe", &fa, &at, argv, env);
	posix_spawnattr_destroy(&at);
	free(env);
	posix_spawn_file_actions_destroy(&fa);
	for (int k = 0; k < fds.n; k++)
		if (moved[k] >= 0)
			close(moved[k]);
	close(order_fd);
	return rc;
}

/* The fleet calls' window: as large as the address space takes (a sparse memfd: only what the
 * payloads touch is memory; where the kernel refuses the size, strict overcommit, a smaller one).
 * Its fd, or -1. */
static int make_window(struct sdc_burn *b)
{
	static const size_t sizes[] = { (size_t)8 << 30, (size_t)1 << 30, (size_t)256 << 20 };
	const int fd = memfd_create("sdcscan-burn-window", MFD_CLOEXEC);
	for (size_t k = 0; fd >= 0 && k < SDC_ARRAY_SIZE(sizes); k++) {
		if (ftruncate(fd, (off_t)sizes[k]))
			continue;
		void *w = mmap(NULL, sizes[k], PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (w != MAP_FAILED) {
			b->window = w;
			b->window_bytes = sizes[k];
			return fd;
		}
	}
	if (fd >= 0)
		close(fd);
	return -1;
}

int sdc_burn_start(struct sdc_burn *b, const struct sdc_burn_request *rq)
{
	memset(b, 0, sizeof(*b));
	b->rq = *rq;
	b->leader_fd = -1;
	const int nw = rq->nworkers;
	/* the workers become this process's children when their leader exits: without that, nobody
	 * could wait for them or kill them */
	static bool subreaper;
	if (!subreaper && prctl(PR_SET_CHILD_SUBREAPER, 1)) {
		snprintf(b->setup_error, sizeof(b->setup_error), "cannot become the workers' subreaper "
			 "(prctl PR_SET_CHILD_SUBREAPER): %s", strerror(errno));
		return -1;
	}
	subreaper = true;
	b->w = calloc((size_t)nw, sizeof(*b->w));
	b->polls = calloc((size_t)nw + 1, sizeof(struct pollfd));
	b->poll_who = calloc((size_t)nw + 1, sizeof(int));
	int *child = calloc((size_t)nw + 1, sizeof(int));
	for (int i = 0; b->w && i < nw; i++)
		b->w[i].fd = -1; /* (before anything can fail: release closes what is not -1) */
	for (int i = 0; child && i < nw; i++)
		child[i] = -1;
	b->slots_bytes = (size_t)(nw + 1) * sdc_burn_slot_stride();
	const int slots_fd = memfd_create("sdcscan-burn-slots", MFD_CLOEXEC);
	int window_fd = -1, leader_child = -1, rc = -1;
	const char *what = "out of memory";
	if (!b->w || !child || !b->polls || !b->poll_who || slots_fd < 0 || ftruncate(slots_fd, (off_t)b->slots_bytes))
		goto out;
	b->slots = mmap(NULL, b->slots_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, slots_fd, 0);
	if (b->slots == MAP_FAILED) {
		b->slots = NULL;
		goto out;
	}
	const bool interrupted = sdc_stop_interrupted();
	for (int i = 0; i <= nw; i++) {
		struct sdc_burn_slot *s = sdc_burn_slot_at(b, i);
		s->magic = SDC_BURN_MAGIC;
		s->index = (uint32_t)i;
		atomic_store(&s->stop.interrupted, interrupted);
		atomic_store(&s->stop.requested, interrupted);
	}
	b->leader_slot = sdc_burn_slot_at(b, nw);
	what = "cannot make the workers' sockets";
	for (int i = 0; i < nw; i++) {
		int sv[2];
		b->w[i].device = rq->devices[i];
		b->w[i].slot = sdc_burn_slot_at(b, i);
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
			goto out;
		b->w[i].fd = sv[0];
		child[i] = sv[1];
		if (sdc_sha256_init(&b->w[i].work))
			goto out;
	}
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		goto out;
	b->leader_fd = sv[0];
	leader_child = sv[1];
	what = "cannot make the window for the fleet's calls";
	if (rq->fleet_calls && (window_fd = make_window(b)) < 0)
		goto out;
	struct sdc_burn_order o = { .magic = SDC_BURN_MAGIC, .version = SDC_BURN_VERSION, .parent = (int32_t)getpid(),
				    .variant = *rq->variant, .common = rq->entry->common, .seed = rq->run->seed,
				    .max_iterations = (uint64_t)rq->entry->common.iterations, .share = rq->share,
				    .fleet = sdc_mpi, .window_bytes = (double)b->window_bytes,
				    .sizes = { sizeof(o), sizeof(struct sdc_burn_slot), sizeof(struct sdc_finding),
					       sizeof(struct sdc_injection), sizeof(struct sdc_device),
					       sizeof(struct sdc_burn_result) } };
	sdc_strlcpy(o.probe, rq->entry->probe->name, sizeof(o.probe));
	sdc_strlcpy(o.profile, rq->run->profile, sizeof(o.profile));
	b->t_spawn = sdc_now();
	const int err = spawn_leader(b, &o, slots_fd, leader_child, window_fd, child);
	if (err) {
		snprintf(b->setup_error, sizeof(b->setup_error), "cannot start the variant's process (/proc/self/exe): %s",
			 strerror(err));
		b->leader = 0;
		goto out_closed;
	}
	rc = 0;
	goto out_closed;
out:
	snprintf(b->setup_error, sizeof(b->setup_error), "%s: %s", what, strerror(errno));
out_closed:
	for (int i = 0; child && i < nw; i++)
		if (child[i] >= 0)
			close(child[i]);
	free(child);
	if (leader_child >= 0)
		close(leader_child);
	if (slots_fd >= 0)
		close(slots_fd);
	if (window_fd >= 0)
		close(window_fd);
	return rc;
}

