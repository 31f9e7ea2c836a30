/* The cross-device vote: the odd lane out is named, a tie names nobody, lanes may end early. */
#include <stdlib.h>

#include "check.h"
#include "runner/vote.h"

struct seen {
	int calls;
	uint64_t iter;
	bool majority;
	int nlisted, first_lane, agreeing, participants;
};

static void record(void *arg, const struct sdc_vote_dissent *d)
{
	struct seen *s = arg;
	s->calls++;
	s->iter = d->iteration;
	s->majority = d->has_majority;
	s->nlisted = d->nlisted;
	s->first_lane = d->nlisted ? d->lanes[0] : -1;
	s->agreeing = d->agreeing;
	s->participants = d->participants;
}

int main(void)
{
	struct seen s = { 0 };
	struct sdc_vote *v = sdc_vote_new(3);
	for (uint64_t t = 0; t < 10; t++)
		for (int lane = 0; lane < 3; lane++)
			sdc_vote_record(v, lane, t, t == 5 && lane == 1 ? 999 : t * 7);
	sdc_vote_compare(v, false, record, &s);
	CHECK(s.calls == 1 && s.iter == 5 && s.majority && s.nlisted == 1 && s.first_lane == 1);
	CHECK(s.agreeing == 2 && s.participants == 3);
	/* Nothing is compared twice. */
	sdc_vote_compare(v, false, record, &s);
	CHECK(s.calls == 1);
	/* Lane 2 stops at 12; lanes 0 and 1 go on and disagree at 14 with no majority. */
	for (uint64_t t = 10; t < 12; t++)
		sdc_vote_record(v, 2, t, t * 7);
	sdc_vote_lane_done(v, 2);
	for (uint64_t t = 10; t < 16; t++) {
		sdc_vote_record(v, 0, t, t * 7);
		sdc_vote_record(v, 1, t, t == 14 ? 1 : t * 7);
	}
	sdc_vote_compare(v, true, record, &s);
	CHECK(s.calls == 2 && s.iter == 14 && !s.majority && s.nlisted == 2 && s.participants == 2);
	struct sdc_vote_stats st;
	sdc_vote_stats(v, &st);
	CHECK(st.compared == 16 && st.dissents == 2 && st.dropped == 0);
	sdc_vote_free(v);

	/* A lane that runs more than the ring ahead of the others drops digests and says so. */
	v = sdc_vote_new(2);
	for (uint64_t t = 0; t < 70000; t++)
		sdc_vote_record(v, 0, t, t);
	sdc_vote_record(v, 1, 0, 0);
	sdc_vote_compare(v, false, record, &s);
	sdc_vote_stats(v, &st);
	CHECK(st.dropped == 70000 - 65536);
	sdc_vote_free(v);

	/* A lane whose iteration count jumped far ahead (a flipped loop counter) does not make the
	 * final compare walk to it: without the cap this loop ran 2^43 iterations (a hung run). */
	v = sdc_vote_new(2);
	for (uint64_t t = 0; t < 15; t++)
		sdc_vote_record(v, 0, t, t), sdc_vote_record(v, 1, t, t);
	sdc_vote_record(v, 1, 15 | (1ull << 43), 15);
	s.calls = 0;
	sdc_vote_compare(v, true, record, &s);
	sdc_vote_stats(v, &st);
	CHECK(s.calls == 0 && st.compared <= 15 + 65536);
	sdc_vote_free(v);
	return check_done("test_vote");
}
