/* The overrun rule: a device whose one iteration ended past its variant's time is named "too
 * short a run to mean much" when it ended later than max(0.05 s, a quarter of the time), and only
 * then. The cases sit on both sides of each bound, so a rule ten times looser or tighter fails. */
#include "check.h"
#include "runner/runner.h"
#include "runner/shares.h"

int main(void)
{
	/* a short share (0.045 s: the quick profile's 11 variants in 0.5 s): the 0.05 s floor */
	CHECK(sdc_shares_overrun(1, 0.045, 0.06) == 0.06);
	CHECK(sdc_shares_overrun(1, 0.045, 0.04) == 0);
	CHECK(sdc_shares_overrun(1, 0.045, 0.2) == 0.2);
	/* a long share (4 s): a quarter of it, 1 s */
	CHECK(sdc_shares_overrun(1, 4.0, 1.2) == 1.2);
	CHECK(sdc_shares_overrun(1, 4.0, 0.8) == 0);
	CHECK(sdc_shares_overrun(1, 4.0, 0.1) == 0);
	/* more than one iteration, or none: never */
	CHECK(sdc_shares_overrun(2, 0.045, 5.0) == 0);
	CHECK(sdc_shares_overrun(0, 0.045, 5.0) == 0);
	/* ended in time */
	CHECK(sdc_shares_overrun(1, 0.045, -0.01) == 0);
	return check_done("overrun");
}
