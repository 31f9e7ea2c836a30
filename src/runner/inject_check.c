/*
 * --inject specs against the run before it burns (each must be able to take effect: its probe in
 * the plan, its target, variant, device, rank and iteration there), and after it (a fault that
 * was never injected is said, UNKNOWN: the run did not test what was asked).
 */
#include "runner/runner.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "runner/registry.h"
#include "inject/fatal.h"
#include "mpi/transport.h"
#include "base/message.h"

/* The variant, rank and iteration a spec names: there in this run. 0, or -1 (said). */
static int check_reach(const struct sdc_inject_spec *s, const struct sdc_probe *p, const struct sdc_plan_entry *e)
{
	if (s->variant[0]) {
		struct sdc_variant v[SDC_VARIANTS_MAX];
		const int nv = p->variants ? p->variants(e->opts, v, SDC_VARIANTS_MAX) : 0;
		char names[512] = "";
		bool found = false;
		for (int k = 0; k < nv; k++) {
			found |= !strcmp(v[k].name, s->variant);
			const size_t used = strlen(names);
			snprintf(names + used, sizeof(names) - used, "%s%.40s", k ? ", " : "", v[k].name);
		}
		if (!found) {
			sdc_error("--inject '%s': probe %s runs no variant '%s' here (its variants with these options: %s)",
				  s->text, p->name, s->variant, nv ? names : "none");
			return -1;
		}
	}
	const int ranks = sdc_mpi.active ? sdc_mpi.size : 1;
	if (s->rank >= ranks) {
		sdc_error("--inject '%s': rank=%d, but this run has %d rank%s%s", s->text, s->rank, ranks, ranks == 1 ? "" : "s",
			  sdc_mpi.active ? "" : " (not under mpirun or srun: only rank 0)");
		return -1;
	}
	if (e->common.iterations > 0 && s->iter >= e->common.iterations) {
		sdc_error("--inject '%s': iter=%" PRId64 ", but %s stops each device after %" PRId64 " iteration%s (0-%" PRId64
			  ")", s->text, s->iter, p->name, e->common.iterations, e->common.iterations == 1 ? "" : "s",
			  e->common.iterations - 1);
		return -1;
	}
	return 0;
}

/* One spec against the run: its probe, target, device; 0, or -1 (said). */
static int check_spec(const struct sdc_run *run, const struct sdc_plan *plan, const struct sdc_inject_spec *s)
{
	{
		const struct sdc_probe *p = sdc_probe_find(s->probe);
		char names[256];
		if (!p) {
			sdc_probe_names(names, sizeof(names));
			sdc_error("--inject '%s': unknown probe '%s' (valid probes: %s)", s->text, s->probe, names);
			return -1;
		}
		const struct sdc_plan_entry *entry = NULL;
		for (int e = 0; e < plan->n; e++)
			if (plan->entries[e].probe == p)
				entry = &plan->entries[e];
		if (!entry) {
			sdc_error("--inject '%s': probe %s is not part of this run (add --probe %s)", s->text,
				  s->probe, s->probe);
			return -1;
		}
		bool known = sdc_fatal_target(s->target); /* every probe's (inject/fatal.h) */
		size_t used = 0;
		names[0] = '\0';
		for (int t = 0; p->inject_targets && p->inject_targets[t]; t++) {
			const char *tg = p->inject_targets[t];
			size_t len = strcspn(tg, ":");
			known |= strlen(s->target) == len && !strncmp(tg, s->target, len);
			int w = snprintf(names + used, sizeof(names) - used, "%s%.*s", used ? ", " : "", (int)len, tg);
			if (w > 0 && (size_t)w < sizeof(names) - used)
				used += (size_t)w;
		}
		if (!known) {
			sdc_error("--inject '%s': probe %s has no target '%s' (valid targets: %s)", s->text, s->probe,
				  s->target, names[0] ? names : "none");
			return -1;
		}
		if (s->device >= 0) {
			bool found = false;
			for (int d = 0; d < run->ndevices; d++)
				found |= sdc_inject_spec_device(s, &run->devices[d]);
			if (!found) {
				sdc_error("--inject '%s': device=%s%d is not one of the %ss this run uses", s->text,
					  s->device_kind == SDC_DEVICE_GPU ? "gpu" : "", s->device,
					  s->device_kind == SDC_DEVICE_GPU ? "GPU" : "CPU");
				return -1;
			}
		}
		return check_reach(s, p, entry);
	}
}

int sdc_runner_check_injections(const struct sdc_run *run, const struct sdc_plan *plan)
{
	for (int i = 0; i < run->ninject; i++)
		if (check_spec(run, plan, &run->inject[i]))
			return -1;
	return 0;
}


void sdc_runner_check_injected(struct sdc_run *run)
{
	for (int i = 0; i < run->ninject; i++) {
		const struct sdc_inject_spec *s = &run->inject[i];
		/* (a fault drawn with a rate may rightly never come; one for another rank is that rank's) */
		if (s->rate > 0 || (sdc_mpi.active && s->rank != sdc_mpi.rank))
			continue;
		int applied = 0;
		for (int k = 0; k < run->ninjections; k++)
			applied += run->injections[k].spec == i;
		if (applied)
			continue;
		struct sdc_finding f = { .cls = SDC_FINDING_ERROR, .device = -1, .row = -1, .col = -1 };
		sdc_strlcpy(f.probe, s->probe, sizeof(f.probe));
		sdc_strlcpy(f.variant, s->variant, sizeof(f.variant));
		sdc_strlcpy(f.kind, "not-injected", sizeof(f.kind));
		sdc_strlcpy(f.target, s->target, sizeof(f.target));
		snprintf(f.detail, sizeof(f.detail),
			 "--inject '%.150s' was never injected (its variant, device or iteration never came in this run): "
			 "what it asked was not tested",
			 s->text);
		sdc_run_add_finding(run, &f);
	}
}
