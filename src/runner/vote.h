/*
 * Cross-device majority vote on per-iteration result digests. Every device runs the same
 * seeded work, so iteration t must give the same digest everywhere; the odd one out is named.
 * Each device writes into its own ring; the main thread compares the iterations every device
 * has reached and frees those slots, so memory stays bounded however long the burn runs.
 */
#ifndef SDC_VOTE_H
#define SDC_VOTE_H

#include <stdbool.h>
#include <stdint.h>

struct sdc_vote;

struct sdc_vote *sdc_vote_new(int nlanes);
void sdc_vote_free(struct sdc_vote *v);

/* Worker thread of lane `lane`: iterations must come in order 0, 1, 2, ... */
void sdc_vote_record(struct sdc_vote *v, int lane, uint64_t iter, uint64_t digest);
/* Worker thread: no more records from this lane. */
void sdc_vote_lane_done(struct sdc_vote *v, int lane);

/*
 * Called once for every iteration where the lanes did not all agree. With a strict majority,
 * the minority lanes are the odd ones out; without one (two lanes, or a tie) every
 * participating lane is listed and nobody can be blamed from the digests alone.
 */
struct sdc_vote_dissent {
	uint64_t iteration;
	int participants;
	int agreeing; /* lanes holding the most common digest */
	bool has_majority;
	uint64_t majority_digest;
	int nlisted;
	const int *lanes;         /* the minority, or every participant without a majority */
	const uint64_t *digests;
};
typedef void (*sdc_vote_dissent_fn)(void *arg, const struct sdc_vote_dissent *d);

/* Main thread: compares what every live lane has reached (all of it when final). */
void sdc_vote_compare(struct sdc_vote *v, bool final, sdc_vote_dissent_fn fn, void *arg);

struct sdc_vote_stats {
	uint64_t compared;  /* iterations compared across two or more lanes */
	uint64_t dissents;  /* iterations where some lane disagreed */
	uint64_t dropped;   /* digests a lane could not store (it ran too far ahead) */
};
void sdc_vote_stats(const struct sdc_vote *v, struct sdc_vote_stats *s);

#endif
