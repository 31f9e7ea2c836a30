/*
 * The runner (runner/runner.h): each plan entry's variants run one after another, each in processes
 * of its own (runner/variant.c, runner/burn.h), the GPUs' health compared before and after and the
 * hardware's error counters read around it. What a worker calls (faults, errors, findings,
 * digests) is in worker.c, the --inject checks in inject_check.c.
 */
#include "runner/runner.h"
#include "mpi/transport.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "run/facts_json.h"
#include "probe/probe.h"
#include "runner/registry.h"
#include "runner/shares.h"
#include "runner/variant.h"
#include "hwerr/hwerr.h"
#include "base/message.h"

/* Under MPI an interrupt on one rank stops them all: this rank's is passed on, a peer's taken. */
static void poll_fleet_interrupt(void)
{
	int from;
	if (sdc_mpi_interrupt_poll(sdc_stop_interrupted(), &from) && !sdc_stop_interrupted()) {
		sdc_note("rank %d (%s) was interrupted: this rank stops too", from, sdc_mpi_host(from));
		sdc_stop_interrupt();
	}
}

/* Each GPU's health from NVML, before (slot 0) or after (slot 1) the run. */
static void gpu_health(struct sdc_run *run, int slot)
{
	if (!run->health)
		run->health = calloc((size_t)run->ndevices * 2, sizeof(*run->health));
	for (int d = 0; run->health && d < run->ndevices; d++)
		if (run->devices[d].kind == SDC_DEVICE_GPU)
			sdc_nvml_health(run->devices[d].gpu.pci_bus_id, &run->health[2 * d + slot]);
}

static void health_finding(struct sdc_run *run, int d, const char *fmt, ...) SDC_PRINTF(3, 4);
static void health_finding(struct sdc_run *run, int d, const char *fmt, ...)
{
	struct sdc_finding f = { .cls = SDC_FINDING_CORRUPTION, .device = d, .row = -1, .col = -1 };
	sdc_strlcpy(f.probe, "health", sizeof(f.probe));
	sdc_strlcpy(f.kind, "ecc-uncorrectable", sizeof(f.kind));
	snprintf(f.operation, sizeof(f.operation), "NVML memory error counters of %s (%s)", run->devices[d].id,
		 run->devices[d].gpu.pci_bus_id);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f.detail, sizeof(f.detail), fmt, ap);
	va_end(ap);
	sdc_run_add_finding(run, &f);
}

/* An uncorrectable memory error that appeared during the run is corruption: the GPU's memory
 * lost data its ECC could not restore, whatever the probes saw. */
static void health_compare(struct sdc_run *run)
{
	for (int d = 0; run->health && d < run->ndevices; d++) {
		const struct sdc_gpu_health *b = &run->health[2 * d], *a = &run->health[2 * d + 1];
		if (run->devices[d].kind != SDC_DEVICE_GPU || !b->valid || !a->valid)
			continue;
		if (b->ecc_uncorrected >= 0 && a->ecc_uncorrected > b->ecc_uncorrected)
			health_finding(run, d, "%" PRId64 " new uncorrectable ECC error%s during the run (volatile count %" PRId64
				       " -> %" PRId64 ")", a->ecc_uncorrected - b->ecc_uncorrected,
				       a->ecc_uncorrected - b->ecc_uncorrected == 1 ? "" : "s", b->ecc_uncorrected,
				       a->ecc_uncorrected);
		if (b->remapped_unc >= 0 && a->remapped_unc > b->remapped_unc)
			health_finding(run, d, "%" PRId64 " row%s remapped for uncorrectable errors during the run",
				       a->remapped_unc - b->remapped_unc, a->remapped_unc - b->remapped_unc == 1 ? "" : "s");
		if (b->retired_dbe >= 0 && a->retired_dbe > b->retired_dbe)
			health_finding(run, d, "%" PRId64 " page%s retired for double-bit errors during the run",
				       a->retired_dbe - b->retired_dbe, a->retired_dbe - b->retired_dbe == 1 ? "" : "s");
		if (b->remap_failure == 0 && a->remap_failure == 1)
			health_finding(run, d, "a row remapping failed during the run");
	}
}

/* A run in which no probe ran on any device tested nothing: UNKNOWN saying why, never "OK: 0
 * results clean" (a profile of only allreduce without mpirun, every probe's hardware missing). */
static void check_tested_something(struct sdc_run *run, const struct sdc_plan *plan)
{
	for (int i = 0; i < run->nresults; i++)
		if (run->results[i].status != SDC_STATUS_SKIPPED && run->results[i].status != SDC_STATUS_NOT_RUN)
			return;
	struct sdc_finding f = { .cls = SDC_FINDING_ERROR, .device = -1, .row = -1, .col = -1 };
	sdc_strlcpy(f.kind, "tested-nothing", sizeof(f.kind));
	int n = snprintf(f.detail, sizeof(f.detail), "nothing was tested: no probe ran on any device");
	const char *sep = " (";
	for (int i = 0; i < plan->n && n > 0 && (size_t)n < sizeof(f.detail); i++) {
		const struct sdc_plan_entry *e = &plan->entries[i];
		const char *why = "no device it runs on was selected";
		if ((e->probe->needs & SDC_NEED_MPI) && !sdc_mpi.active)
			why = "it needs 2 or more MPI ranks: mpirun -np N or srun --mpi=pmix";
		for (int r = 0; r < run->nresults; r++)
			if (!strcmp(run->results[r].probe, e->probe->name) && run->results[r].error[0])
				why = run->results[r].error;
		n += snprintf(f.detail + n, sizeof(f.detail) - (size_t)n, "%s%s: %s", sep, e->probe->name, why);
		sep = "; ";
	}
	if (n > 0 && (size_t)n < sizeof(f.detail) - 1 && plan->n)
		sdc_strlcpy(f.detail + n, ")", sizeof(f.detail) - (size_t)n);
	sdc_run_add_finding(run, &f);
}

int sdc_runner_execute(struct sdc_run *run, const struct sdc_plan *plan, struct sdc_output *out)
{
	gpu_health(run, 0);
	struct sdc_hwerr *hwerr = sdc_hwerr_begin(run); /* the hardware's error counters, before and during */
	/* What every probe builds on goes into every report (the BLAS of the fast class, ...). */
	for (int i = 0; sdc_probes[i]; i++)
		if (sdc_probes[i]->environment)
			sdc_probes[i]->environment(sdc_facts_of(run->environment));
	for (int i = 0; i < plan->n; i++) {
		const struct sdc_plan_entry *e = &plan->entries[i];
		struct sdc_variant variants[SDC_VARIANTS_MAX];
		const int nv = sdc_shares_variants(e, variants);
		char why[256];
		/* A cross-node probe in a profile that also runs alone (admit): not a WARNING on one host. */
		if ((e->probe->needs & SDC_NEED_MPI) && e->common.optional && !sdc_mpi.active) {
			sdc_note("%s: not launched under MPI (mpirun, srun --mpi=pmix): single-host run, %s not run",
				 e->probe->name, e->probe->name);
			continue;
		}
		if (!sdc_probe_usable(e->probe, run, why, sizeof(why))) {
			int added = 0;
			for (int v = 0; v < nv; v++)
				added += sdc_variant_plain_results(run, e->probe, &variants[v],
							   e->common.optional ? SDC_STATUS_SKIPPED : SDC_STATUS_ERROR, why);
			sdc_output_results(out, run, run->nresults - added, run->nresults);
			continue;
		}
		int gpu_only = 0;
		const int runnable = sdc_shares_runnable(run, e, variants, nv, &gpu_only);
		for (int v = 0; v < runnable; v++) {
			poll_fleet_interrupt();
			if (sdc_stop_interrupted()) {
				sdc_variant_plain_results(run, e->probe, &variants[v], SDC_STATUS_NOT_RUN,
						  "the run was interrupted before this probe started");
				continue;
			}
			const double share = sdc_shares_of(e, &variants[v], runnable, gpu_only);
			if (sdc_variant_run(run, e, &variants[v], share, out, poll_fleet_interrupt)) {
				sdc_hwerr_end(hwerr, NULL);
				return -1;
			}
		}
	}
	poll_fleet_interrupt();
	run->interrupted = sdc_stop_interrupted();
	if (!run->interrupted) {
		sdc_runner_check_injected(run);
		check_tested_something(run, plan);
	}
	gpu_health(run, 1);
	health_compare(run);
	sdc_hwerr_end(hwerr, run);
	sdc_output_host_findings(out, run, "health");
	return 0;
}
