/* sdcscan list: the probes (whether each can run here, and why not) and the built-in profiles. */
#include <stdio.h>
#include <string.h>

#include "commands/commands.h"
#include "runner/plan.h"
#include "runner/profile.h"
#include "runner/registry.h"

static int list_main(struct sdc_cmd *c)
{
	(void)c;
	printf("Probes:\n");
	for (int i = 0; sdc_probes[i]; i++) {
		char why[256];
		bool ok = sdc_probe_usable(sdc_probes[i], NULL, why, sizeof(why));
		printf("  %-10s %-11s %s\n", sdc_probes[i]->name, ok ? "available" : "unavailable",
		       sdc_probes[i]->summary);
		if (!ok)
			printf("  %-10s %-11s why: %s\n", "", "", why);
	}
	printf("\nProfiles (built in; --profile FILE takes your own):\n");
	for (const struct sdc_builtin_file *b = sdc_builtin_profiles; b->name; b++) {
		struct sdc_plan plan = { 0 };
		char err[512];
		if (sdc_profile_load(b->name, &plan, err, sizeof(err))) {
			printf("  %-10s (broken: %s)\n", b->name, err);
			continue;
		}
		double total = 0;
		for (int i = 0; i < plan.n; i++)
			total += plan.entries[i].common.duration;
		printf("  %-10s %s%s (about %.0f s)\n", b->name, plan.description,
		       strcmp(b->name, SDC_DEFAULT_PROFILE) ? "" : " [default]", total);
		sdc_plan_release(&plan);
	}
	return 0;
}

const struct sdc_command sdc_command_list = {
	.name = "list",
	.summary = "list probes (and whether they can run here) and built-in profiles",
	.fn = list_main,
};
