/*
 * The fake GPU module's NCCL, in its core (kernels/gpu_module.h's nccl_ entries and ping; the
 * shared parts in fake_nccl.h): communicators of MPI's ranks under mpirun (one rank a GPU), or of
 * every fake GPU in one process. The work the families run on them: fake_allreduce.c,
 * fake_minitrain.c. Its knobs are listed in fake_allreduce.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_nccl.h"

bool fake_under_mpi(void)
{
#if HAVE_MPI
	int on = 0;
	MPI_Initialized(&on);
	return on;
#else
	return false;
#endif
}

/* FAKE_GPU_NCCL_HANG, FAKE_GPU_NCCL_STUCK: a rank under mpirun, a GPU (its ordinal) in one process. */
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

int fake_world_rank(void)
{
	int r = -1;
#if HAVE_MPI
	if (fake_under_mpi())
		MPI_Comm_rank(MPI_COMM_WORLD, &r);
#endif
	return r;
}

/* Whether member m of c stopped (its collectives never start). */
bool fake_member_hangs(const struct sdc_gpu_comm *c, const struct fmember *m)
{
	return fake_hangs(c->mpi ? m->rank : m->ordinal);
}

const char *fake_nccl_version(char *why, size_t len)
{
	const char *v = getenv("FAKE_GPU_NCCL");
	if (v && !strcmp(v, "0")) {
		snprintf(why, len, "NCCL cannot be loaded: libnccl.so.2: cannot open shared object file (fake)");
		return NULL;
	}
	return "fake 2.28 (MPI)";
}

int fake_nccl_unique_id(uint8_t *id, char *err, size_t errlen)
{
	if (!fake_nccl_version(err, errlen))
		return -1;
	/* different on every call and every rank, so the ranks must be given the one rank 0 made */
	static unsigned calls;
	memset(id, 0, SDC_GPU_NCCL_ID_BYTES);
	const uint64_t v[2] = { (uint64_t)getpid() << 20 ^ ++calls, (uint64_t)(fake_now() * 1e6) };
	memcpy(id, v, sizeof(v));
	return 0;
}

void fake_nccl_destroy(struct sdc_gpu_comm *c, int abort)
{
	if (!c)
		return;
#if HAVE_MPI
	if (c->mpi && !abort) /* (after a deadline a collective may still be posted on it: left as it is) */
		MPI_Comm_free(&c->comm);
#endif
	for (int i = 0; abort && c->m && i < c->nmem; i++)
		fake_spinning[c->m[i].ordinal & 63] = false; /* ncclCommAbort ends its kernels */
	for (int i = 0; c->m && i < c->nmem; i++)
		free(c->m[i].in), free(c->m[i].out), free(c->m[i].recv), free(c->m[i].sums), free(c->m[i].fault);
	free(c->m);
	free(c);
}

struct sdc_gpu_comm *fake_nccl_init(const uint8_t *id, int nranks, int first_rank, int nmem, const int *devices,
					   const char *algo, const char *proto, int64_t n, double timeout, char *err,
					   size_t errlen)
{
	(void)timeout;
	if (!fake_nccl_version(err, errlen))
		return NULL;
	struct sdc_gpu_comm *c = calloc(1, sizeof(*c));
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
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->P = nranks, c->nmem = nmem, c->n = n;
	c->mpi = nmem == 1 && nranks > 1 && fake_under_mpi();
	snprintf(c->algo, sizeof(c->algo), "%s", algo ? algo : "");
	snprintf(c->proto, sizeof(c->proto), "%s", proto ? proto : "");
	const char *refuse = getenv("FAKE_GPU_NCCL_REFUSE");
	char path[40];
	snprintf(path, sizeof(path), "%s/%s", c->algo, c->proto);
	int dup = -1, dup_of = -1, dup_gpu = -1;
	bool same_id = true, shape = nmem == nranks;
#if HAVE_MPI
	if (c->mpi) {
		MPI_Comm_dup(MPI_COMM_WORLD, &c->comm);
		/* every rank must hold the same unique id (the one rank 0 made), as NCCL needs */
		uint64_t mine[2], lo[2], hi[2];
		memcpy(mine, id, sizeof(mine));
		MPI_Allreduce(mine, lo, 2, MPI_UINT64_T, MPI_MIN, c->comm);
		MPI_Allreduce(mine, hi, 2, MPI_UINT64_T, MPI_MAX, c->comm);
		same_id = !memcmp(lo, hi, sizeof(lo));
		int size = 0;
		MPI_Comm_size(c->comm, &size);
		shape = size == nranks && first_rank == fake_world_rank();
		struct {
			char host[64];
			int32_t gpu;
		} me = { .gpu = devices[0] }, *all = calloc((size_t)size, sizeof(me));
		gethostname(me.host, sizeof(me.host) - 1);
		if (all) {
			MPI_Allgather(&me, (int)sizeof(me), MPI_BYTE, all, (int)sizeof(me), MPI_BYTE, c->comm);
			for (int q = 0; q < size && dup < 0; q++)
				if (q != first_rank && all[q].gpu == me.gpu && !strcmp(all[q].host, me.host))
					dup = first_rank, dup_of = q, dup_gpu = me.gpu;
			free(all);
		}
	}
#endif
	(void)id;
	for (int i = 0; i < nmem && dup < 0; i++)
		for (int j = 0; j < i; j++)
			if (devices[i] == devices[j])
				dup = first_rank + i, dup_of = first_rank + j, dup_gpu = devices[i];
	if (!same_id || !shape)
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

#if HAVE_MPI
/* Waits for reqs within the deadline (t0 + timeout); false past it. */
bool fake_wait(MPI_Request *reqs, int n, double t0, double timeout)
{
	int done = 0;
	while (!done && fake_now() - t0 < timeout) {
		MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
		if (!done)
			usleep(200);
	}
	return done;
}
#endif

int fake_ping(int device, double timeout, char *err, size_t errlen)
{
	if (fake_spinning[device & 63]) {
		fake_wait_out(fake_now(), timeout);
		snprintf(err, errlen, "a kernel of one thread did not finish in time (fake: it waited behind NCCL's "
			 "kernels of a stuck collective, not aborted)");
		return -1;
	}
	if (!fake_hangs(fake_under_mpi() ? fake_world_rank() : device))
		return 0;
	fake_wait_out(fake_now(), timeout);
	snprintf(err, errlen, "a kernel of one thread did not finish in time (fake: this GPU stopped)");
	return -1;
}

