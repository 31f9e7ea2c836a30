/* ecparity on one host: the barrier that keeps every server at the same point of the same round,
 * and what the workers, processes of their own, wait, lock and start threads with (host.h). */
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "probes/ecparity/host.h"
#include "base/clock.h"

/*
 * Sleeps while *word holds seen: until a wake, or 50 ms at most (so a hard stop or a lost peer is
 * seen). A heartbeat each time: a worker that waits for the others is not hung, the one it waits
 * for is (and is named, then lost: sdc_ec_host_aborted). A futex of the shared mapping, not a
 * process-shared condition variable: a waiter killed in pthread_cond_wait leaves the next
 * pthread_cond_broadcast waiting for it for good (__condvar_quiesce_and_switch_g1, glibc 2.36).
 */
void sdc_ec_host_wait(struct sdc_worker *w, _Atomic uint32_t *word, uint32_t seen)
{
	const struct timespec ts = { 0, 50 * 1000 * 1000 };
	sdc_worker_heartbeat(w);
	/* (not FUTEX_PRIVATE_FLAG: the waiters are in several processes) */
	syscall(SYS_futex, (void *)word, FUTEX_WAIT, seen, &ts, NULL, 0);
}

void sdc_ec_host_wake(_Atomic uint32_t *word)
{
	syscall(SYS_futex, (void *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* The rounds end for every worker (a hard stop, a failure, a lock whose holder died). */
void sdc_ec_host_abort(struct sdc_ec_host *sh)
{
	atomic_store(&sh->bar.abort, true);
	sdc_ec_host_wake(&sh->bar.generation);
	sdc_ec_host_wake(&sh->bar.gone);
}

/* Whether the rounds were aborted; a hard stop or a lost peer aborts them (a server's worker that
 * crashed or hung never comes: the others stop too). */
bool sdc_ec_host_aborted(struct sdc_ec_host *sh)
{
	if (atomic_load(&sh->bar.abort))
		return true;
	if (!sdc_stop_is_hard() && !atomic_load(&sdc_stop->peers_lost))
		return false;
	sdc_ec_host_abort(sh);
	return true;
}

/* Locks a shared robust mutex: 0, or -1 (unlocked again, the rounds aborted) when its holder died
 * in it, so that what it guards is suspect. */
int sdc_ec_host_lock(struct sdc_ec_host *sh, pthread_mutex_t *m)
{
	if (!sdc_shared_mutex_lock(m))
		return 0;
	pthread_mutex_unlock(m);
	sdc_ec_host_abort(sh);
	return -1;
}

/* A helper thread in this worker's process: 0, or -1 when it cannot be started. */
int sdc_ec_host_thread_start(struct sdc_ec_host_thread *t, void *(*fn)(void *), void *arg)
{
	if (pthread_create(&t->thread, NULL, fn, arg))
		return -1;
	t->owner = getpid();
	return 0;
}

/* Joins a helper thread, when one runs in this process (one elsewhere is its process's to join). */
void sdc_ec_host_thread_join(struct sdc_ec_host_thread *t)
{
	if (!t->owner || t->owner != getpid())
		return;
	pthread_join(t->thread, NULL);
	t->owner = 0;
}

/* Whether another round fits before the variant's deadline with the end's replay check after it
 * (sdc_ec_host_end_check: about as long as the training so far, on the slowest worker); a run of
 * a number of iterations goes on to them. */
static bool time_for_another(const struct sdc_ec_host *sh, const struct sdc_worker *w)
{
	/* (the first round always: every variant finishes one checked iteration, however late) */
	if (w->ctx->max_iterations || !sdc_worker_iterations(w))
		return true;
	double most = 0;
	for (int i = 0; i < sh->T; i++)
		most = SDC_MAX(most, sh->train_s[i]);
	return sdc_now() + most < w->ctx->deadline;
}

/* Waits for every server; the last to come says whether the run goes on (decide). A server that
 * failed, a lost peer or a hard stop ends it for all. (generation is read before arriving: it
 * moves only once this worker has arrived too.) */
bool sdc_ec_host_barrier(struct sdc_ec_host *sh, struct sdc_worker *w, bool decide)
{
	struct sdc_ec_host_barrier *b = &sh->bar;
	const uint32_t gen = atomic_load(&b->generation);
	if (atomic_fetch_add(&b->arrived, 1) == sh->T - 1) {
		atomic_store(&b->arrived, 0);
		if (decide)
			atomic_store(&b->go_on, sdc_worker_continue(w) && time_for_another(sh, w));
		atomic_store(&b->generation, gen + 1);
		sdc_ec_host_wake(&b->generation);
	} else {
		while (atomic_load(&b->generation) == gen && !sdc_ec_host_aborted(sh))
			sdc_ec_host_wait(w, &b->generation, gen);
	}
	return !atomic_load(&b->abort) && (!decide || atomic_load(&b->go_on));
}
