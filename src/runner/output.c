/* Human output: header, progress, a line a result, findings, the verdict (runner/output.h). */
#include "runner/output.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner/runner.h"
#include "runner/shares.h"
#include "mpi/transport.h"
#include "sdc_config.h"
#include "base/message.h"

#define RED "\033[1;31m"
#define YELLOW "\033[1;33m"
#define GREEN "\033[32m"
#define DIM "\033[2m"
#define RESET "\033[0m"

void sdc_output_init(struct sdc_output *o, bool json_on_stdout, bool quiet, bool no_color, bool lead)
{
	memset(o, 0, sizeof(*o));
	o->fp = json_on_stdout ? stderr : stdout;
	o->quiet = quiet;
	const bool tty = isatty(fileno(o->fp));
	const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");
	o->color = tty && !no_color && !(nc && *nc) && !(term && !strcmp(term, "dumb"));
	o->progress = tty && !quiet && !(term && !strcmp(term, "dumb")) && lead;
	/*
	 * Under mpirun a rank's output is a pseudo-terminal of mpirun's, whatever mpirun's own output
	 * is (often a job's log file): no colour and no progress line there. Only rank 0 prints the
	 * human report; it prints what the other ranks found too (sdc_output_fleet_ranks).
	 */
	if (sdc_mpi.active) {
		o->color = o->progress = false;
		o->quiet = quiet || sdc_mpi.rank != 0;
	}
}

static const char *verdict_color(const struct sdc_output *o, enum sdc_verdict v)
{
	if (!o->color)
		return "";
	switch (v) {
	case SDC_OK:
		return GREEN;
	case SDC_WARNING:
	case SDC_UNKNOWN:
		return YELLOW;
	case SDC_CRITICAL:
		return RED;
	}
	return "";
}

/* A variant's share of its probe's time below which the header says the run will be longer. */
#define SHORT_SHARE 1.0

void sdc_output_header(struct sdc_output *o, const struct sdc_run *run, const struct sdc_plan *plan)
{
	if (o->quiet)
		return;
	int cpus = 0, gpus = 0;
	const char *gpu_model = NULL;
	for (int i = 0; i < run->ndevices; i++) {
		if (run->devices[i].kind == SDC_DEVICE_GPU) {
			gpus++;
			gpu_model = run->devices[i].model;
		} else {
			cpus++;
		}
	}
	double total = 0, share;
	for (int i = 0; i < plan->n; i++)
		total += plan->entries[i].common.duration + (gpus ? plan->entries[i].common.gpu_duration : 0);
	const int nshort = sdc_shares_short(run, plan, SHORT_SHARE, &share);
	char gpu_text[192] = "";
	if (gpus)
		snprintf(gpu_text, sizeof(gpu_text), ", %d GPU%s (%s)", gpus, gpus == 1 ? "" : "s", gpu_model);
	fprintf(o->fp, "sdcscan %s: profile %s, seed %" PRIu64 ", %d CPU%s (%s)%s, about %.0f s\n", SDC_VERSION,
		plan->name, run->seed, cpus, cpus == 1 ? "" : "s", sdc_run_cpu_model(run), gpu_text, total);
	/* said at once: a share this short is less than one iteration at most profiles' sizes */
	if (nshort)
		fprintf(o->fp,
			"  a short run: %d variants have %.2f s or less each; each still runs one checked iteration, "
			"which at this profile's sizes can take far longer\n",
			nshort, share);
	/* Each GPU by every name a fleet tool might know it by. */
	for (int i = 0; i < run->ndevices; i++) {
		const struct sdc_device *d = &run->devices[i];
		if (d->kind != SDC_DEVICE_GPU)
			continue;
		fprintf(o->fp, "  %s: %s, %s, bus %s, compute %d.%d, %d SMs, %.0f GiB, driver %s, CUDA runtime %s\n", d->id,
			d->model, d->gpu.uuid, d->gpu.pci_bus_id, d->gpu.cc_major, d->gpu.cc_minor, d->gpu.sm_count,
			(double)d->gpu.memory_bytes / (1u << 30), d->gpu.driver, d->gpu.runtime);
	}
	fflush(o->fp);
}

void sdc_output_progress(struct sdc_output *o, const char *label, double elapsed, double total,
			 uint64_t iterations, int devices)
{
	if (!o->progress)
		return;
	double frac = total > 0 ? elapsed / total : 1;
	if (frac > 1)
		frac = 1;
	char bar[21];
	int fill = (int)(frac * 20);
	for (int i = 0; i < 20; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[20] = '\0';
	fprintf(o->fp, "\r%-21s [%s] %5.1f/%.0f s  %" PRIu64 " iterations on %d device%s\033[K", label, bar,
		elapsed, total, iterations, devices, devices == 1 ? "" : "s");
	fflush(o->fp);
	o->progress_shown = true;
}

void sdc_output_clear_progress(struct sdc_output *o)
{
	if (!o->progress_shown)
		return;
	fprintf(o->fp, "\r\033[K");
	fflush(o->fp);
	o->progress_shown = false;
}

static const char *status_word(enum sdc_status s)
{
	return sdc_verdict_name(sdc_status_verdict(s));
}

static void print_finding_as(struct sdc_output *o, const char *dev, const struct sdc_finding *f)
{
	fprintf(o->fp, "    %s iteration %" PRIu64 ": %s", dev, f->iteration, f->kind);
	if (f->target[0] && f->row >= 0 && f->col >= 0)
		fprintf(o->fp, " at %s[%" PRId64 "][%" PRId64 "]", f->target, f->row, f->col);
	else if (f->target[0] && f->row >= 0)
		fprintf(o->fp, " in %s row %" PRId64, f->target, f->row);
	if (f->sm_known)
		fprintf(o->fp, " (SM %d)", f->sm);
	if (f->expected[0])
		fprintf(o->fp, ": expected %s%s%s%s, actual %s%s%s%s, xor %s", f->expected,
			f->expected_value[0] ? " (" : "", f->expected_value, f->expected_value[0] ? ")" : "",
			f->actual, f->actual_value[0] ? " (" : "", f->actual_value, f->actual_value[0] ? ")" : "",
			f->xor_mask);
	if (f->detail[0])
		fprintf(o->fp, "%s%s", f->expected[0] ? "; " : ": ", f->detail);
	fputc('\n', o->fp);
}

static void print_finding(struct sdc_output *o, const struct sdc_run *run, const struct sdc_finding *f)
{
	print_finding_as(o, f->device >= 0 ? run->devices[f->device].id : "host", f);
}

/* A string member, or "" when it is not one. */
static const char *str_of(const json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));
	return v ? v : "";
}

void sdc_output_fleet_ranks(struct sdc_output *o, const void *fleet_json)
{
	if (o->quiet || !fleet_json)
		return;
	size_t i;
	json_t *rk;
	json_array_foreach(json_object_get((json_t *)fleet_json, "ranks"), i, rk) {
		const json_int_t rank = json_integer_value(json_object_get(rk, "rank"));
		if (!rank)
			continue; /* this rank's own lines are printed already */
		/* what a peer sent is printed with its control characters escaped (sdc_escape) */
		sdc_print_line(o->fp, "rank %" JSON_INTEGER_FORMAT " (%s): %s", rank, str_of(rk, "host"), str_of(rk, "summary"));
		size_t k;
		json_t *f;
		json_array_foreach(json_object_get(rk, "findings"), k, f) {
			if (k == 3) {
				fprintf(o->fp, "    ... %zu more findings on rank %" JSON_INTEGER_FORMAT "\n",
					json_array_size(json_object_get(rk, "findings")) - 3, rank);
				break;
			}
			struct sdc_finding x = { .device = -1 };
			sdc_escape(x.kind, sizeof(x.kind), str_of(f, "kind"));
			sdc_escape(x.target, sizeof(x.target), str_of(f, "target"));
			sdc_escape(x.expected, sizeof(x.expected), str_of(f, "expected"));
			sdc_escape(x.actual, sizeof(x.actual), str_of(f, "actual"));
			sdc_escape(x.expected_value, sizeof(x.expected_value), str_of(f, "expected_value"));
			sdc_escape(x.actual_value, sizeof(x.actual_value), str_of(f, "actual_value"));
			sdc_escape(x.xor_mask, sizeof(x.xor_mask), str_of(f, "xor_mask"));
			sdc_escape(x.detail, sizeof(x.detail), str_of(f, "detail"));
			x.iteration = (uint64_t)json_integer_value(json_object_get(f, "iteration"));
			x.row = json_integer_value(json_object_get(f, "row"));
			x.col = json_integer_value(json_object_get(f, "col"));
			char who[96], dev[64];
			sdc_escape(dev, sizeof(dev), json_string_value(json_object_get(f, "device")) ? str_of(f, "device") : "host");
			snprintf(who, sizeof(who), "rank %" JSON_INTEGER_FORMAT " %s", rank, dev);
			print_finding_as(o, who, &x);
		}
	}
}

void sdc_output_results(struct sdc_output *o, const struct sdc_run *run, int from, int to)
{
	if (o->quiet)
		return;
	for (int i = from; i < to; i++) {
		const struct sdc_result *r = &run->results[i];
		const enum sdc_verdict v = sdc_status_verdict(r->status);
		char label[64];
		snprintf(label, sizeof(label), "%s/%s", r->probe, r->variant);
		fprintf(o->fp, "%-21s %-7s %s%-8s%s", label, run->devices[r->device].id, verdict_color(o, v),
			status_word(r->status), o->color ? RESET : "");
		if (r->status == SDC_STATUS_ERROR || r->status == SDC_STATUS_SKIPPED ||
		    r->status == SDC_STATUS_NOT_RUN) {
			fprintf(o->fp, " %s\n", r->error);
			continue;
		}
		fprintf(o->fp, " %8" PRIu64 " %-6s %8.1f %-7s", r->iterations, r->iter_unit, r->rate, r->rate_unit);
		if (r->ref_rate > 0)
			fprintf(o->fp, " (%.0f%% of %s)", 100.0 * r->rate / r->ref_rate, r->ref_name);
		if (r->kernel[0])
			fprintf(o->fp, " %skernel %s%s", o->color ? DIM : "", r->kernel, o->color ? RESET : "");
		if (r->corruptions)
			fprintf(o->fp, "  %" PRIu64 " corrupt result%s", r->corruptions, r->corruptions == 1 ? "" : "s");
		if (r->interrupted)
			fprintf(o->fp, "  (interrupted)");
		if (r->overrun > 0)
			fprintf(o->fp, "  (its one iteration ran %.1f s past its time: too short a run to mean much)", r->overrun);
		fputc('\n', o->fp);
		int shown = 0, total = 0;
		for (int k = 0; k < run->nfindings; k++) {
			const struct sdc_finding *f = &run->findings[k];
			if (f->device != r->device || strcmp(f->probe, r->probe) || strcmp(f->variant, r->variant))
				continue;
			if (++total <= 3) {
				print_finding(o, run, f);
				shown++;
			}
		}
		if (total > shown)
			fprintf(o->fp, "    ... %d more findings in the report\n", total - shown);
	}
	for (int t = 0; t < run->ntotals; t++) {
		const struct sdc_total *tot = &run->totals[t];
		if (to > from && !strcmp(tot->probe, run->results[from].probe) &&
		    !strcmp(tot->variant, run->results[from].variant) && tot->devices > 1) {
			char devs[64];
			sdc_devices_text(tot->devices - tot->gpus, tot->gpus, devs, sizeof(devs));
			fprintf(o->fp, "%-21s %-7s %-8s %8s %-6s %8.1f %-7s on %s\n", "", "total", "", "", "", tot->rate,
				tot->rate_unit, devs);
		}
	}
	/* Findings about the host as a whole (devices that disagree with no majority). */
	for (int k = 0; k < run->nfindings; k++) {
		const struct sdc_finding *f = &run->findings[k];
		if (f->device >= 0)
			continue;
		for (int i = from; i < to; i++) {
			const struct sdc_result *r = &run->results[i];
			if (!strcmp(f->probe, r->probe) && !strcmp(f->variant, r->variant)) {
				print_finding(o, run, f);
				break;
			}
		}
	}
	fflush(o->fp);
}

void sdc_output_host_findings(struct sdc_output *o, const struct sdc_run *run, const char *probe)
{
	for (int k = 0; k < run->nfindings; k++)
		if (!strcmp(run->findings[k].probe, probe))
			print_finding(o, run, &run->findings[k]);
	fflush(o->fp);
}

void sdc_output_verdict(struct sdc_output *o, const struct sdc_run *run, enum sdc_verdict v,
			const char *report_path)
{
	if (sdc_mpi.active && sdc_mpi.rank != 0)
		return; /* rank 0 says the job's verdict */
	char line[512];
	sdc_summary_line(run, v, line, sizeof(line));
	const char *c = verdict_color(o, v);
	fprintf(o->fp, "%s%s%s", c, line, o->color ? RESET : "");
	if (report_path && !o->quiet)
		fprintf(o->fp, " (report: %s)", report_path);
	fputc('\n', o->fp);
	fflush(o->fp);
}
