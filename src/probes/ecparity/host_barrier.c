/* ecparity on one host: the barrier that keeps every server at the same point of the same round
 * (host.h). */
#include <time.h>

#include "probes/ecparity/host.h"

/* With sh->bar.lock held: waits for a broadcast, or 50 ms at most (so a hard stop is seen). */
void sdc_ec_host_wait_a_while(struct sdc_ec_host *sh)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 50 * 1000 * 1000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&sh->bar.cond, &sh->bar.lock, &ts);
}

/* Whether another round fits before the variant's deadline with the end's replay check after it
 * (sdc_ec_host_end_check: about as long as the training so far, on the slowest worker); a run of
 * a number of iterations goes on to them. */
static bool time_for_another(const struct sdc_ec_host *sh, const struct sdc_worker *w)
{
	/* (the first round always: every variant finishes one checked iteration, however late) */
	if (w->ctx->max_iterations || !atomic_load(&w->iterations))
		return true;
	double most = 0;
	for (int i = 0; i < sh->T; i++)
		most = SDC_MAX(most, sh->train_s[i]);
	return sdc_now() + most < w->ctx->deadline;
}

/* Waits for every server; the last to come says whether the run goes on (decide). A server that
 * failed, or a hard stop, ends it for all. */
bool sdc_ec_host_barrier(struct sdc_ec_host *sh, struct sdc_worker *w, bool decide)
{
	struct sdc_ec_host_barrier *b = &sh->bar;
	pthread_mutex_lock(&b->lock);
	const uint64_t gen = b->generation;
	if (++b->arrived == sh->T) {
		b->arrived = 0;
		if (decide)
			b->go_on = sdc_worker_continue(w) && time_for_another(sh, w);
		b->generation++;
		pthread_cond_broadcast(&b->cond);
	} else {
		while (gen == b->generation && !b->abort) {
			sdc_ec_host_wait_a_while(sh);
			/* (a server's worker that crashed or hung never comes: the others stop too) */
			if (atomic_load(&w->ctx->hard_stop) || atomic_load(&w->ctx->lost_workers)) {
				b->abort = true;
				pthread_cond_broadcast(&b->cond);
			}
		}
	}
	const bool ok = !b->abort && (!decide || b->go_on);
	pthread_mutex_unlock(&b->lock);
	return ok;
}

void sdc_ec_host_abort(struct sdc_ec_host *sh)
{
	pthread_mutex_lock(&sh->bar.lock);
	sh->bar.abort = true;
	pthread_cond_broadcast(&sh->bar.cond);
	pthread_mutex_unlock(&sh->bar.lock);
}
