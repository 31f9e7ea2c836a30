/*
 * sdcscan bench, campaign and calibrate: each verb is a probe's own tool, found in the registry
 * (a probe's descriptor lists its benchmarks, campaign and calibration, probe.h), but for the
 * framework's campaigns over every probe (campaign cpu-faults: commands/campaign_cpu.c).
 */
#include <stdio.h>
#include <string.h>

#include "commands/commands.h"
#include "core/registry.h"
#include "probe.h"

/* Benchmarks of the framework's, not one probe's (bench fleet: commands/fleet_bench.c). */
static const struct sdc_command *const framework_benches[] = { &sdc_command_bench_fleet, NULL };

static const struct sdc_command *find_bench(const char *name)
{
	for (int i = 0; sdc_probes[i]; i++)
		for (int b = 0; sdc_probes[i]->benches && sdc_probes[i]->benches[b]; b++)
			if (!strcmp(sdc_probes[i]->benches[b]->name, name))
				return sdc_probes[i]->benches[b];
	for (int b = 0; framework_benches[b]; b++)
		if (!strcmp(framework_benches[b]->name, name))
			return framework_benches[b];
	return NULL;
}

static void list_benches(FILE *out)
{
	for (int i = 0; sdc_probes[i]; i++)
		for (int b = 0; sdc_probes[i]->benches && sdc_probes[i]->benches[b]; b++)
			fprintf(out, "  %-12s %s\n", sdc_probes[i]->benches[b]->name, sdc_probes[i]->benches[b]->summary);
	for (int b = 0; framework_benches[b]; b++)
		fprintf(out, "  %-12s %s\n", framework_benches[b]->name, framework_benches[b]->summary);
}

/* Campaigns of the framework's, over every probe (not one probe's own). */
static const struct sdc_command *const framework_campaigns[] = { &sdc_command_campaign_cpu, NULL };

static const struct sdc_command *find_campaign(const char *name)
{
	for (int i = 0; framework_campaigns[i]; i++)
		if (!strcmp(framework_campaigns[i]->name, name))
			return framework_campaigns[i];
	const struct sdc_probe *p = sdc_probe_find(name);
	return p ? p->campaign : NULL;
}

static void list_campaigns(FILE *out)
{
	for (int i = 0; sdc_probes[i]; i++)
		if (sdc_probes[i]->campaign)
			fprintf(out, "  %-12s %s\n", sdc_probes[i]->name, sdc_probes[i]->campaign->summary);
	for (int i = 0; framework_campaigns[i]; i++)
		fprintf(out, "  %-12s %s\n", framework_campaigns[i]->name, framework_campaigns[i]->summary);
}

static const struct sdc_command *find_calibration(const char *name)
{
	const struct sdc_probe *p = sdc_probe_find(name);
	return p ? p->calibrate : NULL;
}

static void list_calibrations(FILE *out)
{
	for (int i = 0; sdc_probes[i]; i++)
		if (sdc_probes[i]->calibrate)
			fprintf(out, "  %-12s %s\n", sdc_probes[i]->name, sdc_probes[i]->calibrate->summary);
}

const struct sdc_command sdc_command_bench = {
	.name = "bench",
	.summary = "measure the kernels against each other and the libraries, and ABFT's overhead",
	.args = "a benchmark",
	.find_sub = find_bench,
	.list_subs = list_benches,
	.default_sub = "gemm",
};

const struct sdc_command sdc_command_campaign = {
	.name = "campaign",
	.summary = "fault-injection campaigns: detection and false-positive tables",
	.args = "the probe to campaign on",
	.find_sub = find_campaign,
	.list_subs = list_campaigns,
};

const struct sdc_command sdc_command_calibrate = {
	.name = "calibrate",
	.summary = "measure e_max for the fast class's V-ABFT thresholds on this host",
	.args = "the probe to calibrate",
	.find_sub = find_calibration,
	.list_subs = list_calibrations,
	.default_sub = "gemm",
};
