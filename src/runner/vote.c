/* The vote across devices on each iteration's digests (runner/vote.h). */
#include "runner/vote.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "base/macros.h"

#define RING_LOG2 16
#define RING (1u << RING_LOG2)

struct slot {
	uint64_t iter;
	uint64_t digest;
};

struct lane {
	struct slot *ring;
	_Atomic uint64_t produced; /* iterations recorded so far (slots below are written) */
	atomic_bool done;
	uint64_t dropped;          /* written by the worker, read after join */
	char pad[64];
};

struct sdc_vote {
	int nlanes;
	struct lane *lanes;
	_Atomic uint64_t consumed; /* every iteration below this is compared, its slots free */
	uint64_t compared, dissents;
	/* scratch for the main thread, one entry per lane */
	int *count;
	const struct slot **slots;
	uint64_t *produced;
	int *listed;
	uint64_t *listed_digests;
};

struct sdc_vote *sdc_vote_new(int nlanes)
{
	struct sdc_vote *v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	v->nlanes = nlanes;
	v->lanes = calloc((size_t)nlanes, sizeof(*v->lanes));
	v->count = calloc((size_t)nlanes, sizeof(int));
	v->slots = calloc((size_t)nlanes, sizeof(*v->slots));
	v->produced = calloc((size_t)nlanes, sizeof(uint64_t));
	v->listed = calloc((size_t)nlanes, sizeof(int));
	v->listed_digests = calloc((size_t)nlanes, sizeof(uint64_t));
	if (!v->lanes || !v->count || !v->slots || !v->produced || !v->listed || !v->listed_digests)
		goto out_free;
	for (int i = 0; i < nlanes; i++) {
		v->lanes[i].ring = calloc(RING, sizeof(struct slot));
		if (!v->lanes[i].ring)
			goto out_free;
		/* No slot matches an iteration until it is written. */
		for (uint32_t s = 0; s < RING; s++)
			v->lanes[i].ring[s].iter = UINT64_MAX;
	}
	return v;
out_free:
	sdc_vote_free(v);
	return NULL;
}

void sdc_vote_free(struct sdc_vote *v)
{
	if (!v)
		return;
	for (int i = 0; v->lanes && i < v->nlanes; i++)
		free(v->lanes[i].ring);
	free(v->lanes);
	free(v->count);
	free(v->slots);
	free(v->produced);
	free(v->listed);
	free(v->listed_digests);
	free(v);
}

void sdc_vote_record(struct sdc_vote *v, int lane, uint64_t iter, uint64_t digest)
{
	struct lane *l = &v->lanes[lane];
	/* Slot iter % RING is free once the iteration RING before it was compared. */
	if (iter < atomic_load_explicit(&v->consumed, memory_order_acquire) + RING) {
		struct slot *s = &l->ring[iter & (RING - 1)];
		s->digest = digest;
		s->iter = iter;
	} else {
		l->dropped++;
	}
	atomic_store_explicit(&l->produced, iter + 1, memory_order_release);
}

void sdc_vote_lane_done(struct sdc_vote *v, int lane)
{
	atomic_store_explicit(&v->lanes[lane].done, true, memory_order_release);
}

static void vote_one(struct sdc_vote *v, uint64_t t, const uint64_t *produced, sdc_vote_dissent_fn fn,
		     void *arg)
{
	const struct slot **slots = v->slots;
	int participants = 0, best = -1;
	for (int i = 0; i < v->nlanes; i++) {
		const struct slot *s = &v->lanes[i].ring[t & (RING - 1)];
		slots[i] = (produced[i] > t && s->iter == t) ? s : NULL;
		v->count[i] = 0;
		if (!slots[i])
			continue;
		participants++;
		/* Count lane i's digest on the first lane that holds it. */
		for (int j = 0; j <= i; j++) {
			if (slots[j] && slots[j]->digest == slots[i]->digest) {
				v->count[j]++;
				if (best < 0 || v->count[j] > v->count[best])
					best = j;
				break;
			}
		}
	}
	if (participants < 2)
		return;
	v->compared++;
	if (v->count[best] == participants)
		return;
	v->dissents++;
	const bool majority = 2 * v->count[best] > participants;
	int n = 0;
	for (int i = 0; i < v->nlanes; i++) {
		if (!slots[i] || (majority && slots[i]->digest == slots[best]->digest))
			continue;
		v->listed[n] = i;
		v->listed_digests[n++] = slots[i]->digest;
	}
	struct sdc_vote_dissent d = {
		.iteration = t,
		.participants = participants,
		.agreeing = v->count[best],
		.has_majority = majority,
		.majority_digest = majority ? slots[best]->digest : 0,
		.nlisted = n,
		.lanes = v->listed,
		.digests = v->listed_digests,
	};
	fn(arg, &d);
}

void sdc_vote_compare(struct sdc_vote *v, bool final, sdc_vote_dissent_fn fn, void *arg)
{
	uint64_t *produced = v->produced;
	uint64_t upto = UINT64_MAX, most = 0;
	for (int i = 0; i < v->nlanes; i++) {
		/* Read done before produced: a lane seen done has published its last record. */
		bool done = atomic_load_explicit(&v->lanes[i].done, memory_order_acquire);
		produced[i] = atomic_load_explicit(&v->lanes[i].produced, memory_order_acquire);
		most = SDC_MAX(most, produced[i]);
		if (!done && !final)
			upto = SDC_MIN(upto, produced[i]);
	}
	if (upto == UINT64_MAX)
		upto = most;
	uint64_t from = atomic_load_explicit(&v->consumed, memory_order_relaxed);
	/* no lane holds an iteration past the ring (sdc_vote_record drops it): a lane whose count
	 * jumped far ahead must not make this loop walk to it */
	if (upto > from + RING)
		upto = from + RING;
	for (uint64_t t = from; t < upto; t++)
		vote_one(v, t, produced, fn, arg);
	if (upto > from)
		atomic_store_explicit(&v->consumed, upto, memory_order_release);
}

void sdc_vote_stats(const struct sdc_vote *v, struct sdc_vote_stats *s)
{
	s->compared = v->compared;
	s->dissents = v->dissents;
	s->dropped = 0;
	for (int i = 0; i < v->nlanes; i++)
		s->dropped += v->lanes[i].dropped;
}
