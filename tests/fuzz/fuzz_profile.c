/* The profile parser (YAML): sdcscan run --profile FILE. */
#include <string.h>

#include "runner/plan.h"
#include "runner/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sdc_plan plan;
	char err[512];
	memset(&plan, 0, sizeof(plan));
	if (!sdc_profile_parse("fuzz.yaml", (const char *)data, size, &plan, err, sizeof(err)))
		sdc_plan_release(&plan);
	return 0;
}
