/* Which variants run where and each one's share of its probe's time (runner/shares.h). */
#include "runner/shares.h"

#include <math.h>
#include <string.h>

#include "base/macros.h"
#include "mpi/transport.h"
#include "runner/registry.h"

bool sdc_variant_runs_on(const struct sdc_run *run, const struct sdc_probe *p, const struct sdc_variant *v, int d)
{
	if (!(v->devices & (1u << run->devices[d].kind)))
		return false;
	if (!v->per_rank && !(p->needs & SDC_NEED_MPI))
		return true;
	/* one such device: the first, or on GPUs the one the rank's place on its host picks (one rank a
	 * GPU, as NCCL needs: two ranks on one GPU would be refused) */
	int before = 0, all = 0;
	for (int i = 0; i < run->ndevices; i++)
		if (v->devices & (1u << run->devices[i].kind))
			before += i < d, all++;
	return before == (run->devices[d].kind == SDC_DEVICE_GPU ? sdc_mpi.local_rank % all : 0);
}

int sdc_shares_variants(const struct sdc_plan_entry *e, struct sdc_variant *variants)
{
	int nv = e->probe->variants ? e->probe->variants(e->opts, variants, SDC_VARIANTS_MAX) : 0;
	if (nv <= 0) {
		variants[0] = (struct sdc_variant){ .name = "default", .devices = SDC_ON_CPU };
		nv = 1;
	}
	if (e->only_variant[0]) {
		int keep = 0;
		for (int v = 0; v < nv; v++)
			if (!strcmp(variants[v].name, e->only_variant))
				variants[keep++] = variants[v];
		nv = keep;
	}
	return nv;
}

int sdc_shares_runnable(const struct sdc_run *run, const struct sdc_plan_entry *e, struct sdc_variant *variants,
			int nv, int *gpu_only)
{
	int runnable = 0;
	*gpu_only = 0;
	for (int v = 0; v < nv; v++) {
		bool any = false;
		for (int d = 0; d < run->ndevices && !any; d++)
			any = sdc_variant_runs_on(run, e->probe, &variants[v], d);
		if (any) {
			variants[runnable++] = variants[v];
			*gpu_only += variants[v].devices == SDC_ON_GPU;
		}
	}
	return runnable;
}

double sdc_shares_of(const struct sdc_plan_entry *e, const struct sdc_variant *v, int runnable, int gpu_only)
{
	const bool own = e->common.gpu_duration > 0 && gpu_only;
	return !own				  ? e->common.duration / runnable
	       : v->devices == SDC_ON_GPU ? e->common.gpu_duration / gpu_only
					  : e->common.duration / SDC_MAX(1, runnable - gpu_only);
}

double sdc_shares_overrun(uint64_t iterations, double span, double late)
{
	return iterations == 1 && late > SDC_MAX(0.05, 0.25 * span) ? late : 0;
}

int sdc_shares_short(const struct sdc_run *run, const struct sdc_plan *plan, double below, double *least)
{
	int n = 0;
	*least = INFINITY;
	for (int i = 0; i < plan->n; i++) {
		const struct sdc_plan_entry *e = &plan->entries[i];
		struct sdc_variant variants[SDC_VARIANTS_MAX];
		char why[256];
		if (((e->probe->needs & SDC_NEED_MPI) && e->common.optional && !sdc_mpi.active) ||
		    !sdc_probe_usable(e->probe, run, why, sizeof(why)))
			continue; /* (not run: said where the run gets to it) */
		int gpu_only;
		const int runnable = sdc_shares_runnable(run, e, variants, sdc_shares_variants(e, variants), &gpu_only);
		for (int v = 0; v < runnable; v++) {
			const double share = sdc_shares_of(e, &variants[v], runnable, gpu_only);
			if (share < below)
				n++, *least = fmin(*least, share);
		}
	}
	return n;
}

