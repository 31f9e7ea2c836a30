/* A plan: probes, options and times, from a profile and the command line (runner/plan.h). */
#include "runner/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "runner/registry.h"
#include "base/message.h"

#define OPT(field) offsetof(struct sdc_common_opts, field)

const struct sdc_option sdc_common_options[] = {
	{ .name = "duration", .type = SDC_OPT_DOUBLE, .offset = OPT(duration), .def = "10",
	  .help = "seconds this probe runs, split evenly across its variants", .dmin = 0.1,
	  .dmax = 7 * 86400.0, .unit = "s" },
	{ .name = "gpu_duration", .type = SDC_OPT_DOUBLE, .offset = OPT(gpu_duration), .def = "0",
	  .help = "seconds for the variants that run only on GPUs, split evenly among them, when the host has GPUs "
		  "(0: they share duration with the others)", .dmin = 0, .dmax = 7 * 86400.0, .unit = "s" },
	{ .name = "iterations", .type = SDC_OPT_INT, .offset = OPT(iterations), .def = "0",
	  .help = "stop each device after this many iterations (0: the duration decides)", .imin = 0,
	  .imax = (int64_t)1 << 40 },
	{ .name = "optional", .type = SDC_OPT_BOOL, .offset = OPT(optional), .def = "false",
	  .help = "when the hardware is missing, skip with WARNING instead of UNKNOWN" },
	{ .name = "hang_timeout", .type = SDC_OPT_DOUBLE, .offset = OPT(hang_timeout), .def = "120", .neutral = true,
	  .help = "seconds a device's worker may finish no iteration and send no heartbeat before it is named hung "
		  "(UNKNOWN) and left behind; the run then ends within its duration plus this",
	  .dmin = 1, .dmax = 86400.0, .unit = "s" },
	SDC_OPT_END,
};

void sdc_plan_release(struct sdc_plan *plan)
{
	for (int i = 0; i < plan->n; i++)
		free(plan->entries[i].opts);
	plan->n = 0;
}

struct sdc_plan_entry *sdc_plan_add(struct sdc_plan *plan, const struct sdc_probe *probe)
{
	if (plan->n >= SDC_PLAN_MAX)
		return NULL;
	struct sdc_plan_entry *e = &plan->entries[plan->n];
	memset(e, 0, sizeof(*e));
	e->probe = probe;
	e->opts = calloc(1, probe->opts_size ? probe->opts_size : 1);
	if (!e->opts)
		return NULL;
	sdc_opt_defaults(probe->options, e->opts);
	sdc_opt_defaults(sdc_common_options, &e->common);
	plan->n++;
	return e;
}

struct sdc_plan_entry *sdc_plan_find(struct sdc_plan *plan, const char *probe)
{
	for (int i = 0; i < plan->n; i++)
		if (!strcmp(plan->entries[i].probe->name, probe))
			return &plan->entries[i];
	return NULL;
}

const struct sdc_option *sdc_plan_entry_option(const struct sdc_plan_entry *e, const char *key)
{
	const struct sdc_option *o = sdc_opt_find(sdc_common_options, key);
	return o ? o : sdc_opt_find(e->probe->options, key);
}

int sdc_plan_entry_set(struct sdc_plan_entry *e, const char *key, const char *value, char *err,
		       size_t errlen)
{
	const struct sdc_option *o = sdc_plan_entry_option(e, key);
	void *dst = sdc_opt_find(sdc_common_options, key) ? (void *)&e->common : e->opts;
	if (!o) {
		char names[512], common[128];
		sdc_opt_list_names(sdc_common_options, NULL, common, sizeof(common));
		sdc_opt_list_names(e->probe->options, common, names, sizeof(names));
		snprintf(err, errlen, "unknown key '%s' for probe %s (valid keys: %s)", key, e->probe->name,
			 names);
		return -1;
	}
	char why[700];
	if (sdc_opt_parse(o, dst, value, why, sizeof(why))) {
		snprintf(err, errlen, "%s.%s: %s", e->probe->name, key, why);
		return -1;
	}
	return 0;
}

int sdc_plan_set(struct sdc_plan *plan, const char *assignment)
{
	const char *dot = strchr(assignment, '.'), *eq = strchr(assignment, '=');
	if (!dot || !eq || dot > eq || dot == assignment || eq == dot + 1) {
		sdc_error("--set '%s': expected PROBE.KEY=VALUE", assignment);
		return -1;
	}
	char probe[64], key[64];
	if ((size_t)(dot - assignment) >= sizeof(probe) || (size_t)(eq - dot - 1) >= sizeof(key)) {
		sdc_error("--set '%s': name too long", assignment);
		return -1;
	}
	snprintf(probe, sizeof(probe), "%.*s", (int)(dot - assignment), assignment);
	snprintf(key, sizeof(key), "%.*s", (int)(eq - dot - 1), dot + 1);
	struct sdc_plan_entry *e = sdc_plan_find(plan, probe);
	if (!e) {
		char names[256];
		if (!sdc_probe_find(probe)) {
			sdc_probe_names(names, sizeof(names));
			sdc_error("--set '%s': unknown probe '%s' (valid probes: %s)", assignment, probe, names);
		} else {
			sdc_error("--set '%s': probe %s is not part of this run (add --probe %s)", assignment,
				  probe, probe);
		}
		return -1;
	}
	char err[1024];
	if (sdc_plan_entry_set(e, key, eq + 1, err, sizeof(err))) {
		sdc_error("--set %s", err);
		return -1;
	}
	return 0;
}

void sdc_plan_scale_duration(struct sdc_plan *plan, double total)
{
	double sum = 0;
	for (int i = 0; i < plan->n; i++)
		sum += plan->entries[i].common.duration;
	for (int i = 0; i < plan->n; i++)
		plan->entries[i].common.duration =
			sum > 0 ? total * plan->entries[i].common.duration / sum : total / plan->n;
}

uint64_t sdc_plan_seed(const struct sdc_plan *plan, double now)
{
	switch (plan->seed_mode) {
	case SDC_SEED_FIXED:
		return plan->seed;
	case SDC_SEED_DAILY: {
		/* The UTC date as a number, 20261121: readable in reports, equal fleet-wide each day. */
		time_t t = (time_t)now;
		struct tm tm;
		gmtime_r(&t, &tm);
		return (uint64_t)(tm.tm_year + 1900) * 10000 + (uint64_t)(tm.tm_mon + 1) * 100 +
		       (uint64_t)tm.tm_mday;
	}
	case SDC_SEED_RANDOM: {
		uint64_t s = 0;
		if (getrandom(&s, sizeof(s), 0) != (ssize_t)sizeof(s))
			s = (uint64_t)(now * 1e6);
		return s;
	}
	}
	return plan->seed;
}
