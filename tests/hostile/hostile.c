/*
 * Faults that break a worker's whole process, for the tests' build only (inject/fatal.h's
 * sdc_fatal_hostile; linked into sdcscan-hostile, never into sdcscan). Each is what a flipped bit
 * in a pointer, a length or a return address does to a process, met for real, nothing raise()d:
 *   HEAP   a freed chunk's link in the allocator's free list with one bit flipped, then the
 *          allocations that follow it: glibc's check aborts (SIGABRT), as "corrupted size vs.
 *          prev_size" did under a flipped register
 *   LOCK   the thread dies (SIGSEGV) while it holds the allocator's lock: malloc_stats prints
 *          with its arena locked, into a stream whose write faults
 *   MLOCK  another thread of the process stops for good holding the allocator's lock; the
 *          worker's next allocation waits for it forever (a deadlock in malloc: no progress)
 *   EXIT   the process exits (exit(0)) in the middle of its work, without its results
 *   BLOCK  the worker blocks for good in a system call (a read nobody will answer)
 *   STUCK  the worker sends its results and then never exits (its exit path deadlocked)
 *   GARBLE its next record to the run is a finding of a class no code writes (a flipped bit in the
 *          record it built): the run must not take it as it came
 *   DIGEST a result digest goes into its ring for an iteration out of order (its counter flipped
 *          after the check that says so): the run must not hand it to the vote
 *   JUMP   the worker hands on a digest for a later iteration than the one it did (its loop counter
 *          flipped): the worker's own check names the jump
 * The spin without progress is inject/fatal.h's HANG. And in a variant's own process, before its setup
 * (SDCSCAN_HOSTILE_SETUP=crash or hang in the environment of this executable alone): the setup
 * dies of a wild write, or never ends.
 */
#include <malloc.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner/burn_records.h"
#include "inject/fatal.h"
#include "probe/probe.h"
#include "base/message.h"

static const char *const targets[] = {
	"HEAP: one bit of a freed chunk's link in the allocator's free list flipped, then allocated (SIGABRT)",
	"LOCK: the worker dies of SIGSEGV holding the allocator's lock",
	"MLOCK: another thread stops holding the allocator's lock; the worker's next allocation waits forever",
	"EXIT: the worker's process exits in the middle of its work, without its results",
	"BLOCK: the worker blocks forever in a system call",
	"STUCK: the worker sends its results, then its process never exits",
	"GARBLE: the worker's next record to the run is a finding of a class no code writes",
	"DIGEST: a result digest for an iteration out of order goes into the worker's ring",
	"JUMP: the worker hands on a result digest for a later iteration than the one it did",
	NULL,
};

static volatile uintptr_t sink;

/* (a size the allocator's per-thread cache holds; what it held of that size is taken first, so
 * the two chunks freed below are its list's only entries) */
#define HEAP_CHUNK 1000

static void heap(void)
{
	void *volatile hold[16];
	for (int i = 0; i < 16; i++)
		hold[i] = malloc(HEAP_CHUNK);
	void *volatile p = malloc(HEAP_CHUNK), *volatile q = malloc(HEAP_CHUNK);
	free((void *)q);
	free((void *)p);
	/* p heads the tcache list and its first word links to q (mangled, glibc's safe-linking): one
	 * bit of that link flipped, as a bad core flips a register that holds it */
	volatile uintptr_t *link = (volatile uintptr_t *)(void *)p; /* (volatile: a store the compiler keeps) */
	*link ^= (uintptr_t)1 << 3;
	void *volatile a = malloc(HEAP_CHUNK);
	void *volatile b = malloc(HEAP_CHUNK); /* glibc: "malloc(): unaligned tcache chunk detected" */
	sink = (uintptr_t)a ^ (uintptr_t)b ^ (uintptr_t)hold[0];
}

static ssize_t write_faults(void *cookie, const char *buf, size_t n)
{
	(void)buf;
	/* a wild pointer, as a flipped bit leaves one, written through (cookie is NULL) */
	volatile uintptr_t base = (uintptr_t)cookie; /* (volatile: the compiler knows nothing of it) */
	volatile uintptr_t *wild = (volatile uintptr_t *)(base | 0x10);
	*wild = n;
	return (ssize_t)n;
}

static void block(void);

static ssize_t write_forever(void *cookie, const char *buf, size_t n)
{
	(void)cookie, (void)buf;
	block();
	return (ssize_t)n;
}

/* malloc_stats with stderr a stream whose writes do what write does: the arena is locked while
 * it prints (glibc's __malloc_stats). */
static void stats_into(ssize_t (*write)(void *, const char *, size_t))
{
	const cookie_io_functions_t io = { .write = write };
	FILE *f = fopencookie(NULL, "w", io);
	if (!f)
		return;
	setvbuf(f, NULL, _IONBF, 0);
	stderr = f;
	malloc_stats();
}

static void *hold_lock(void *arg)
{
	(void)arg;
	stats_into(write_forever);
	return NULL;
}

static void mlock(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, hold_lock, NULL))
		return;
	sleep(1); /* (it takes the lock and stops) */
	for (;;)
		free(malloc(4096 + (size_t)(sink++ % 64))); /* waits for the lock, forever */
}

static void block(void)
{
	int fd[2];
	char c;
	if (pipe(fd))
		return;
	for (;;)
		if (read(fd[0], &c, 1) < 0) /* nobody writes: the write end is this process's own */
			pause();
}

static void never_exit(void)
{
	block();
}

static void garble(struct sdc_worker *w, uint64_t iter)
{
	struct sdc_finding f = { .cls = (enum sdc_finding_class)77, .iteration = iter, .row = -1, .col = -1 };
	sdc_strlcpy(f.kind, "checksum-mismatch", sizeof(f.kind));
	sdc_worker_report(w, &f);
}

static void meet(struct sdc_worker *w, const char *name, uint64_t iter)
{
	(void)w, (void)iter;
	if (!strcmp(name, "HEAP"))
		heap();
	else if (!strcmp(name, "LOCK"))
		stats_into(write_faults);
	else if (!strcmp(name, "MLOCK"))
		mlock();
	else if (!strcmp(name, "EXIT"))
		exit(0);
	else if (!strcmp(name, "BLOCK"))
		block();
	else if (!strcmp(name, "STUCK"))
		sdc_fatal_after_result = never_exit;
	else if (!strcmp(name, "GARBLE"))
		garble(w, iter);
	else if (!strcmp(name, "JUMP"))
		sdc_worker_digest(w, iter + 5, 0x5dc);
	else if (!strcmp(name, "DIGEST"))
		sdc_burn_push_digest(sdc_burn_sink_of(w->ctx->run), iter + 5, 0x5dc);
}

const struct sdc_fatal_extra sdc_fatal_hostile = { targets, meet };

/* Whether this process is a variant's own (`sdcscan __burn FD`): its command line's second word. */
static bool a_variant_process(void)
{
	char buf[256];
	FILE *f = fopen("/proc/self/cmdline", "r");
	const size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = 0;
	const size_t first = strlen(buf) + 1;
	return first < n && !strcmp(buf + first, SDC_BURN_ARGV1);
}

__attribute__((constructor)) static void setup_fault(void)
{
	const char *how = getenv("SDCSCAN_HOSTILE_SETUP");
	if (!how || !a_variant_process())
		return;
	if (!strcmp(how, "crash"))
		write_faults(NULL, "", 1);
	else if (!strcmp(how, "hang"))
		block();
}
