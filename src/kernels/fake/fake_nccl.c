/*
 * The fake GPU module's NCCL, in its base (kernels/gpu_module.h's nccl_ entries and ping; the
 * shared parts in fake_nccl.h): communicators of every fake GPU in one process, or of members in
 * several processes of one host (one rank a GPU under mpirun), and the shared-memory transport
 * between those. The work the families run on them: fake_allreduce.c, fake_minitrain.c. Its knobs
 * are listed in fake_allreduce.c.
 *
 * The transport, as real NCCL's bootstrap: the members find each other from the unique id alone,
 * never through MPI (the burn's worker processes that run the GPU lanes never initialise it).
 * ncclGetUniqueId makes a name no other id has (pid, a counter, two clocks); each member of the
 * communicator opens the shared-memory segment of that name (the first to come creates it, with
 * O_EXCL, sized for nranks slots; the others wait, within the deadline, until it is laid out),
 * claims its rank's slot and fills in its GPU and host; once every rank has come, the name is
 * removed, so a member that dies later leaves nothing behind (and a segment left by one that died
 * before everyone came has a name no later id makes). Each exchange is then: wait until every
 * member read the last one, write one's slot, say so (posted), wait for every member's, read,
 * say so (taken): process-shared atomics, waited on with a futex and a deadline. What one member
 * reads from the others it reduces in rank order, so every member's result has the same bits.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "kernels/fake/fake_nccl.h"

/* FAKE_GPU_NCCL_HANG, FAKE_GPU_NCCL_STUCK: a communicator rank (members in several processes), a
 * GPU (its ordinal) in one process. */
bool fake_named_by(const char *var, int who)
{
	const char *h = getenv(var);
	return h && *h && atoi(h) == who;
}

bool fake_hangs(int who)
{
	return fake_named_by("FAKE_GPU_NCCL_HANG", who);
}

/* GPUs (ordinals) on which a stuck collective's kernels still spin: the communicator not yet
 * aborted, a kernel or a free queued on the GPU waits behind them */
_Atomic bool fake_spinning[64];

/* A GPU's rank + 1 in the last communicator of several processes it joined (0: none), so that a
 * ping, which knows only the GPU, is named as that GPU's collectives are: kept past the
 * communicator's end (a deadline aborts it before the ping). */
static _Atomic int rank_of[64];

/* Whether member m of c stopped (its collectives never start). */
bool fake_member_hangs(const struct sdc_gpu_comm *c, const struct fmember *m)
{
	return fake_hangs(c->shm ? m->rank : m->ordinal);
}

const char *fake_nccl_version(char *why, size_t len)
{
	const char *v = getenv("FAKE_GPU_NCCL");
	if (v && !strcmp(v, "0")) {
		snprintf(why, len, "NCCL cannot be loaded: libnccl.so.2: cannot open shared object file (fake)");
		return NULL;
	}
	return "fake 2.28 (shared memory)";
}

/* ---- the unique id and the segment's layout ---- */

/* What the fake's unique id holds (the rest of its SDC_GPU_NCCL_ID_BYTES are zero). */
struct fid {
	char magic[8]; /* FID_MAGIC */
	uint32_t pid, calls;
	uint64_t real_ns, mono_ns;
};
#define FID_MAGIC "fakeNCCL"

#define FSEG_MAGIC 0x46534547u /* "FSEG": laid out by its creator */
#define FSEG_MIN_CAP 16384     /* floats a slot holds at least (the data-parallel mean goes in pieces) */
#define ROUND64(x) (((x) + 63) & ~(uint64_t)63)

struct fseg {
	_Atomic uint32_t ready;  /* FSEG_MAGIC once the rest is set */
	_Atomic uint32_t bell;   /* bumped at every change a member may wait for (its futex) */
	_Atomic int32_t arrived; /* members whose slot is claimed and filled in */
	_Atomic int32_t bad;     /* a member that does not fit came (another shape): all fail */
	int32_t nranks, pad;
	int64_t n, cap;          /* floats a collective moves; floats a slot holds */
	uint64_t slot_bytes;
};

struct fslot {
	_Atomic int32_t claimed;
	int32_t gpu, pid, pad;
	_Atomic uint64_t posted, taken; /* the last exchange this member wrote, and read */
	uint32_t hdr[4];
	char host[64];
};

#define FSEG_HEAD ROUND64(sizeof(struct fseg))
#define FSLOT_HEAD ROUND64(sizeof(struct fslot))

static struct fslot *slot_at(const struct sdc_gpu_comm *c, int rank)
{
	return (struct fslot *)((char *)c->seg + FSEG_HEAD + (size_t)rank * c->seg->slot_bytes);
}

static void bell_ring(struct fseg *s)
{
	atomic_fetch_add(&s->bell, 1);
	syscall(SYS_futex, (void *)&s->bell, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Sleeps until the bell rings after it showed seen, 50 ms at most and not past the deadline. */
static void bell_wait(struct fseg *s, uint32_t seen, double deadline)
{
	double left = deadline - fake_now();
	if (left <= 0)
		return;
	if (left > 0.05)
		left = 0.05;
	struct timespec ts = { 0, (long)(left * 1e9) };
	syscall(SYS_futex, (void *)&s->bell, FUTEX_WAIT, seen, &ts, NULL, 0);
}

int fake_nccl_unique_id(uint8_t *id, char *err, size_t errlen)
{
	if (!fake_nccl_version(err, errlen))
		return -1;
	/* different on every call and every process, so the ranks must be given the one rank 0 made */
	static _Atomic uint32_t calls;
	struct timespec rt, mt;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mt);
	struct fid f = {
		.pid = (uint32_t)getpid(),
		.calls = ++calls,
		.real_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec,
		.mono_ns = (uint64_t)mt.tv_sec * 1000000000u + (uint64_t)mt.tv_nsec,
	};
	memcpy(f.magic, FID_MAGIC, sizeof(f.magic));
	memset(id, 0, SDC_GPU_NCCL_ID_BYTES);
	memcpy(id, &f, sizeof(f));
	return 0;
}

/* The segment's name from the id, or -1 when the id is none the fake made. */
static int seg_name(const uint8_t *id, char *name, size_t len)
{
	struct fid f;
	memcpy(&f, id, sizeof(f));
	if (memcmp(f.magic, FID_MAGIC, sizeof(f.magic)))
		return -1;
	snprintf(name, len, "/sdcscan-fake-nccl-%" PRIu32 "-%" PRIu32 "-%" PRIx64 "-%" PRIx64, f.pid, f.calls, f.real_ns,
		 f.mono_ns);
	return 0;
}

/*
 * Maps the segment of c->seg_name, creating it when first, waiting (until deadline) for its
 * creator to lay it out otherwise. 0, or -1 with err set ("in time" when the deadline passed).
 */
static int seg_open(struct sdc_gpu_comm *c, int nranks, int64_t n, double deadline, char *err, size_t errlen)
{
	const int64_t cap = n > FSEG_MIN_CAP ? n : FSEG_MIN_CAP;
	const uint64_t slot_bytes = FSLOT_HEAD + ROUND64((uint64_t)cap * 4);
	const size_t bytes = FSEG_HEAD + (size_t)nranks * slot_bytes;
	int fd;
	bool mine;
	for (;;) {
		fd = shm_open(c->seg_name, O_RDWR | O_CREAT | O_EXCL, 0600);
		mine = fd >= 0;
		if (fd < 0 && errno == EEXIST)
			fd = shm_open(c->seg_name, O_RDWR, 0);
		if (fd >= 0)
			break;
		if (errno != ENOENT || fake_now() >= deadline) { /* (ENOENT: removed between the two opens) */
			snprintf(err, errlen, "ncclCommInitRankConfig: system error: shm_open %s: %s (fake)", c->seg_name,
				 strerror(errno));
			return -1;
		}
		usleep(1000);
	}
	size_t size = bytes;
	if (mine && ftruncate(fd, (off_t)bytes)) {
		snprintf(err, errlen, "ncclCommInitRankConfig: system error: %zu bytes of shared memory: %s (fake)", bytes,
			 strerror(errno));
		close(fd);
		shm_unlink(c->seg_name);
		return -1;
	}
	struct stat st = { 0 };
	while (!mine && !fstat(fd, &st) && st.st_size == 0 && fake_now() < deadline)
		usleep(1000); /* its creator has not sized it yet */
	if (!mine)
		size = (size_t)st.st_size;
	if (size < FSEG_HEAD) {
		close(fd);
		snprintf(err, errlen, "ncclCommInitRankConfig: the ranks did not all join in time (fake: the segment "
			 "%s was not laid out within the deadline)", c->seg_name);
		return -1;
	}
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		snprintf(err, errlen, "ncclCommInitRankConfig: system error: mmap %s: %s (fake)", c->seg_name, strerror(errno));
		return -1;
	}
	c->seg = p, c->seg_bytes = size;
	if (mine) {
		c->seg->nranks = nranks, c->seg->n = n, c->seg->cap = cap, c->seg->slot_bytes = slot_bytes;
		atomic_store(&c->seg->ready, FSEG_MAGIC);
		return 0;
	}
	while (atomic_load(&c->seg->ready) != FSEG_MAGIC && fake_now() < deadline)
		usleep(500);
	if (atomic_load(&c->seg->ready) != FSEG_MAGIC) {
		snprintf(err, errlen, "ncclCommInitRankConfig: the ranks did not all join in time (fake: the segment "
			 "%s was not laid out within the deadline)", c->seg_name);
		return -1;
	}
	return 0;
}

/* ---- the exchanges (fake_nccl.h) ---- */

/* Whether every member's posted (or taken) is at least s. */
static bool every(const struct sdc_gpu_comm *c, bool taken, uint64_t s)
{
	for (int q = 0; q < c->P; q++) {
		const struct fslot *sl = slot_at(c, q);
		if ((taken ? atomic_load(&sl->taken) : atomic_load(&sl->posted)) < s)
			return false;
	}
	return true;
}

static bool wait_every(struct sdc_gpu_comm *c, bool taken, uint64_t s, double deadline)
{
	for (;;) {
		const uint32_t seen = atomic_load(&c->seg->bell);
		if (every(c, taken, s))
			return true;
		if (fake_now() >= deadline)
			return false;
		bell_wait(c->seg, seen, deadline);
	}
}

bool fake_xchg_begin(struct sdc_gpu_comm *c, double t0, double timeout)
{
	return wait_every(c, true, c->seq, t0 + timeout);
}

float *fake_xchg_slot(struct sdc_gpu_comm *c, int rank, uint32_t **hdr)
{
	struct fslot *sl = slot_at(c, rank);
	if (hdr)
		*hdr = sl->hdr;
	return (float *)((char *)sl + FSLOT_HEAD);
}

int64_t fake_xchg_cap(const struct sdc_gpu_comm *c)
{
	return c->seg->cap;
}

bool fake_xchg_post(struct sdc_gpu_comm *c, double t0, double timeout)
{
	for (int i = 0; i < c->nmem; i++)
		atomic_store(&slot_at(c, c->m[i].rank)->posted, c->seq + 1);
	bell_ring(c->seg);
	return wait_every(c, false, c->seq + 1, t0 + timeout);
}

void fake_xchg_end(struct sdc_gpu_comm *c)
{
	c->seq++;
	for (int i = 0; i < c->nmem; i++)
		atomic_store(&slot_at(c, c->m[i].rank)->taken, c->seq);
	bell_ring(c->seg);
}

/* ---- communicators ---- */

void fake_nccl_destroy(struct sdc_gpu_comm *c, int abort)
{
	if (!c)
		return;
	if (c->seg)
		munmap(c->seg, c->seg_bytes);
	if (c->seg_name[0] && !c->unlinked)
		shm_unlink(c->seg_name); /* (a member never came: the name is removed with the last who did) */
	for (int i = 0; abort && c->m && i < c->nmem; i++)
		fake_spinning[c->m[i].ordinal & 63] = false; /* ncclCommAbort ends its kernels */
	for (int i = 0; c->m && i < c->nmem; i++)
		free(c->m[i].in), free(c->m[i].out), free(c->m[i].recv), free(c->m[i].sums), free(c->m[i].fault);
	free(c->m);
	free(c);
}

/*
 * The members of this process join the others in the segment of the id: each claims its rank's
 * slot and says its GPU and host, then all wait (until t0 + timeout) for every rank. 0; 1 when
 * the ranks do not fit together (another shape, a rank claimed twice); -1 with err set.
 */
static int rendezvous(struct sdc_gpu_comm *c, const uint8_t *id, int nranks, int first_rank, int nmem, double t0,
		      double timeout, char *err, size_t errlen)
{
	const double deadline = t0 + timeout;
	if (seg_name(id, c->seg_name, sizeof(c->seg_name)))
		return 1; /* not an id ncclGetUniqueId made */
	if (seg_open(c, nranks, c->n, deadline, err, errlen)) {
		if (!c->seg)
			c->seg_name[0] = '\0'; /* not ours to remove */
		return -1;
	}
	struct fseg *s = c->seg;
	const bool fits = s->nranks == nranks && s->n == c->n && first_rank >= 0 && nmem >= 1 && first_rank + nmem <= nranks;
	for (int i = 0; fits && i < nmem; i++) {
		struct fslot *sl = slot_at(c, first_rank + i);
		if (atomic_exchange(&sl->claimed, 1)) {
			atomic_store(&s->bad, 1); /* two members took one rank */
			break;
		}
		sl->gpu = c->m[i].ordinal, sl->pid = (int32_t)getpid();
		gethostname(sl->host, sizeof(sl->host) - 1);
	}
	if (!fits)
		atomic_store(&s->bad, 1);
	else
		atomic_fetch_add(&s->arrived, nmem);
	bell_ring(s);
	for (;;) {
		const uint32_t seen = atomic_load(&s->bell);
		if (atomic_load(&s->bad))
			return 1;
		const int came = atomic_load(&s->arrived);
		if (came >= nranks)
			break;
		if (fake_now() >= deadline) {
			snprintf(err, errlen, "ncclCommInitRankConfig: the ranks did not all join in time (fake: %d of %d came "
				 "within %.0f s)", came, nranks, timeout);
			return -1;
		}
		bell_wait(s, seen, deadline);
	}
	/* every member has it mapped: its name is no longer needed */
	shm_unlink(c->seg_name);
	c->unlinked = true;
	return 0;
}

struct sdc_gpu_comm *fake_nccl_init(const uint8_t *id, int nranks, int first_rank, int nmem, const int *devices,
					   const char *algo, const char *proto, int64_t n, double timeout, char *err,
					   size_t errlen)
{
	const double t0 = fake_now();
	if (!fake_nccl_version(err, errlen))
		return NULL;
	struct sdc_gpu_comm *c = nmem > 0 && nmem <= 64 ? calloc(1, sizeof(*c)) : NULL;
	if (c)
		c->m = calloc((size_t)nmem, sizeof(*c->m));
	bool ok = c && c->m;
	for (int i = 0; ok && i < nmem; i++) {
		struct fmember *m = &c->m[i];
		m->rank = first_rank + i, m->ordinal = devices[i];
		ok = (m->in = malloc((size_t)n * 4)) && (m->out = malloc((size_t)n * 4)) &&
		     (m->recv = malloc((size_t)n * 4)) && (m->sums = malloc((size_t)n * 4)) && (m->fault = malloc((size_t)n * 4));
	}
	if (!ok) {
		fake_nccl_destroy(c, 1);
		snprintf(err, errlen, nmem > 0 && nmem <= 64 ? "out of memory" : "ncclCommInitRankConfig: invalid argument: "
			 "%d GPUs in one process (fake)", nmem);
		return NULL;
	}
	c->P = nranks, c->nmem = nmem, c->n = n;
	c->shm = nmem < nranks;
	snprintf(c->algo, sizeof(c->algo), "%s", algo ? algo : "");
	snprintf(c->proto, sizeof(c->proto), "%s", proto ? proto : "");
	const char *refuse = getenv("FAKE_GPU_NCCL_REFUSE");
	char path[40];
	snprintf(path, sizeof(path), "%s/%s", c->algo, c->proto);
	int dup = -1, dup_of = -1, dup_gpu = -1;
	bool shape = nmem == nranks;
	if (c->shm) {
		for (int i = 0; i < nmem; i++)
			rank_of[devices[i] & 63] = first_rank + i + 1;
		const int rc = rendezvous(c, id, nranks, first_rank, nmem, t0, timeout, err, errlen);
		if (rc < 0) {
			fake_nccl_destroy(c, 0);
			return NULL;
		}
		shape = rc == 0;
		/* NCCL refuses two ranks of one host on one GPU */
		for (int i = 0; shape && i < nmem && dup < 0; i++)
			for (int q = 0; q < nranks && dup < 0; q++) {
				const struct fslot *a = slot_at(c, first_rank + i), *b = slot_at(c, q);
				if (q != first_rank + i && a->gpu == b->gpu && !strcmp(a->host, b->host))
					dup = first_rank + i, dup_of = q, dup_gpu = a->gpu;
			}
	}
	for (int i = 0; i < nmem && dup < 0; i++)
		for (int j = 0; j < i; j++)
			if (devices[i] == devices[j])
				dup = first_rank + i, dup_of = first_rank + j, dup_gpu = devices[i];
	if (!shape)
		snprintf(err, errlen, "ncclCommInitRankConfig: invalid argument: the ranks hold different unique ids or "
			 "ranks (fake)");
	else if (dup >= 0)
		snprintf(err, errlen, "ncclCommInitRankConfig: invalid usage: Duplicate GPU detected: rank %d and rank %d "
			 "both on CUDA device %d (fake)", dup, dup_of, dup_gpu);
	else if (refuse && !strcasecmp(refuse, path))
		snprintf(err, errlen, "ncclCommInitRankConfig: invalid usage: no algorithm/protocol available for %s "
			 "(fake)", path);
	else
		return c;
	fake_nccl_destroy(c, 0);
	return NULL;
}

/* FAKE_GPU_NCCL_BUG: "R,OP,ALGO,PROTO": member R's output element 1 goes wrong in that path's OP. */
void fake_flip_word(float *p, int bit)
{
	uint32_t u;
	memcpy(&u, p, 4);
	u ^= 1u << (bit & 31);
	memcpy(p, &u, 4);
}

int fake_ping(int device, double timeout, char *err, size_t errlen)
{
	if (fake_spinning[device & 63]) {
		fake_wait_out(fake_now(), timeout);
		snprintf(err, errlen, "a kernel of one thread did not finish in time (fake: it waited behind NCCL's "
			 "kernels of a stuck collective, not aborted)");
		return -1;
	}
	const int r = rank_of[device & 63];
	if (!fake_hangs(r ? r - 1 : device))
		return 0;
	fake_wait_out(fake_now(), timeout);
	snprintf(err, errlen, "a kernel of one thread did not finish in time (fake: this GPU stopped)");
	return -1;
}
