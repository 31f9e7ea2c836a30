/*
 * sdcscan bench, campaign and calibrate: each verb is a probe's own tool, found in the registry
 * (a probe's descriptor lists its benchmarks, campaign and calibration, probe/probe.h), but for the
 * framework's own, listed here (campaign cpu-faults: commands/campaign_cpu.c; bench fleet:
 * commands/fleet_bench.c).
 */
#include <stddef.h>

#include "commands/commands.h"
#include "runner/registry.h"
#include "probe/probe.h"

/* Benchmarks of the framework's, not one probe's (bench fleet: commands/fleet_bench.c). */
static const struct sdc_command *const framework_benches[] = { &sdc_command_bench_fleet, NULL };

/* The i-th benchmark: every probe's, in the registry's order, then the framework's. */
static const struct sdc_command *bench_at(int i)
{
	for (int p = 0; sdc_probes[p]; p++)
		for (int b = 0; sdc_probes[p]->benches && sdc_probes[p]->benches[b]; b++)
			if (i-- == 0)
				return sdc_probes[p]->benches[b];
	for (int b = 0; framework_benches[b]; b++)
		if (i-- == 0)
			return framework_benches[b];
	return NULL;
}

/* Campaigns of the framework's, over every probe (not one probe's own). */
static const struct sdc_command *const framework_campaigns[] = { &sdc_command_campaign_cpu, NULL };

/* The i-th campaign: the probes' (each named after its probe), then the framework's. */
static const struct sdc_command *campaign_at(int i)
{
	for (int p = 0; sdc_probes[p]; p++)
		if (sdc_probes[p]->campaign && i-- == 0)
			return sdc_probes[p]->campaign;
	for (int c = 0; framework_campaigns[c]; c++)
		if (i-- == 0)
			return framework_campaigns[c];
	return NULL;
}

/* The i-th calibration, each named after its probe. */
static const struct sdc_command *calibration_at(int i)
{
	for (int p = 0; sdc_probes[p]; p++)
		if (sdc_probes[p]->calibrate && i-- == 0)
			return sdc_probes[p]->calibrate;
	return NULL;
}

const struct sdc_command sdc_command_bench = {
	.name = "bench",
	.summary = "measure the kernels against each other and the libraries, and ABFT's overhead",
	.args = "a benchmark",
	.sub_at = bench_at,
	.default_sub = "gemm",
};

const struct sdc_command sdc_command_campaign = {
	.name = "campaign",
	.summary = "fault-injection campaigns: detection and false-positive tables",
	.args = "the probe to campaign on",
	.sub_at = campaign_at,
};

const struct sdc_command sdc_command_calibrate = {
	.name = "calibrate",
	.summary = "measure e_max for the fast class's V-ABFT thresholds on this host",
	.args = "the probe to calibrate",
	.sub_at = calibration_at,
	.default_sub = "gemm",
};
