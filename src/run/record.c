/* The run record: results, findings, injections, kept for the report (run/record.h). */
#include "run/record.h"

#include <inttypes.h>
#include <stdio.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/message.h"

const char *sdc_status_name(enum sdc_status s)
{
	switch (s) {
	case SDC_STATUS_OK:
		return "ok";
	case SDC_STATUS_CORRUPT:
		return "corrupt";
	case SDC_STATUS_DEGRADED:
		return "degraded";
	case SDC_STATUS_ERROR:
		return "error";
	case SDC_STATUS_SKIPPED:
		return "skipped";
	case SDC_STATUS_NOT_RUN:
		return "not-run";
	case SDC_STATUS_CRASHED:
		return "crashed";
	case SDC_STATUS_HUNG:
		return "hung";
	}
	return "error";
}

const char *sdc_finding_class_name(enum sdc_finding_class c)
{
	static const char *const names[] = { [SDC_FINDING_CORRUPTION] = "corruption", [SDC_FINDING_DEGRADED] = "degraded",
					     [SDC_FINDING_ERROR] = "error", [SDC_FINDING_CRASH] = "crash",
					     [SDC_FINDING_HANG] = "hang" };
	return (unsigned)c < sizeof(names) / sizeof(names[0]) ? names[c] : "error";
}

enum sdc_verdict sdc_finding_class_verdict(enum sdc_finding_class c)
{
	switch (c) {
	case SDC_FINDING_CORRUPTION:
	case SDC_FINDING_CRASH:
		return SDC_CRITICAL;
	case SDC_FINDING_DEGRADED:
		return SDC_WARNING;
	case SDC_FINDING_ERROR:
	case SDC_FINDING_HANG:
		return SDC_UNKNOWN;
	}
	return SDC_UNKNOWN;
}

enum sdc_verdict sdc_status_verdict(enum sdc_status s)
{
	switch (s) {
	case SDC_STATUS_OK:
		return SDC_OK;
	case SDC_STATUS_CORRUPT:
	case SDC_STATUS_CRASHED:
		return SDC_CRITICAL;
	case SDC_STATUS_DEGRADED:
	case SDC_STATUS_SKIPPED:
		return SDC_WARNING;
	case SDC_STATUS_ERROR:
	case SDC_STATUS_NOT_RUN:
	case SDC_STATUS_HUNG:
		return SDC_UNKNOWN;
	}
	return SDC_UNKNOWN;
}

int sdc_run_init(struct sdc_run *run)
{
	memset(run, 0, sizeof(*run));
	if (pthread_mutex_init(&run->lock, NULL))
		return -1;
	run->environment = json_object();
	return run->environment ? 0 : -1;
}

void sdc_run_release(struct sdc_run *run)
{
	pthread_mutex_destroy(&run->lock);
	free(run->results);
	free(run->findings);
	free(run->injections);
	free(run->totals);
	free(run->devices);
	free(run->inject);
	free(run->health);
	json_decref(run->environment);
	json_decref(run->fleet);
	memset(run, 0, sizeof(*run));
}

/* Grows *arr (of *cap elements of size sz) so it can hold one more; -1 on allocation failure. */
static int grow(void **arr, int *cap, int n, size_t sz)
{
	if (n < *cap)
		return 0;
	int ncap = *cap ? 2 * *cap : 16;
	void *p = realloc(*arr, (size_t)ncap * sz);
	if (!p)
		return -1;
	*arr = p;
	*cap = ncap;
	return 0;
}

struct sdc_result *sdc_run_add_result(struct sdc_run *run)
{
	struct sdc_result *r = NULL;
	pthread_mutex_lock(&run->lock); /* wait-ok: held only to append to the run's arrays */
	if (!grow((void **)&run->results, &run->results_cap, run->nresults, sizeof(*r))) {
		r = &run->results[run->nresults++];
		memset(r, 0, sizeof(*r));
	}
	pthread_mutex_unlock(&run->lock);
	return r;
}

bool sdc_run_add_finding(struct sdc_run *run, const struct sdc_finding *f)
{
	if (run->sink) {
		run->sink->finding(run->sink->arg, f);
		return true;
	}
	bool kept = false;
	pthread_mutex_lock(&run->lock); /* wait-ok: held only to append to the run's arrays */
	if (run->nfindings < SDC_FINDINGS_MAX &&
	    !grow((void **)&run->findings, &run->findings_cap, run->nfindings, sizeof(*f))) {
		run->findings[run->nfindings++] = *f;
		kept = true;
	} else {
		run->findings_dropped++;
	}
	pthread_mutex_unlock(&run->lock);
	return kept;
}

void sdc_run_count_dropped(struct sdc_run *run)
{
	if (run->sink) {
		run->sink->dropped(run->sink->arg);
		return;
	}
	sdc_run_count_dropped_n(run, 1);
}

void sdc_run_count_dropped_n(struct sdc_run *run, uint64_t n)
{
	pthread_mutex_lock(&run->lock); /* wait-ok: held only to append to the run's arrays */
	run->findings_dropped += n;
	pthread_mutex_unlock(&run->lock);
}

void sdc_run_add_injection(struct sdc_run *run, const struct sdc_injection *inj)
{
	if (run->sink) {
		run->sink->injection(run->sink->arg, inj);
		return;
	}
	pthread_mutex_lock(&run->lock); /* wait-ok: held only to append to the run's arrays */
	if (!grow((void **)&run->injections, &run->injections_cap, run->ninjections, sizeof(*inj)))
		run->injections[run->ninjections++] = *inj;
	pthread_mutex_unlock(&run->lock);
}

void sdc_run_add_total(struct sdc_run *run, const struct sdc_total *t)
{
	pthread_mutex_lock(&run->lock); /* wait-ok: held only to append to the run's arrays */
	if (!grow((void **)&run->totals, &run->totals_cap, run->ntotals, sizeof(*t)))
		run->totals[run->ntotals++] = *t;
	pthread_mutex_unlock(&run->lock);
}

enum sdc_verdict sdc_run_verdict(const struct sdc_run *run)
{
	enum sdc_verdict v = SDC_OK;
	for (int i = 0; i < run->nresults; i++)
		v = sdc_verdict_worst(v, sdc_status_verdict(run->results[i].status));
	for (int i = 0; i < run->nfindings; i++)
		v = sdc_verdict_worst(v, sdc_finding_class_verdict(run->findings[i].cls));
	if (run->interrupted)
		v = sdc_verdict_worst(v, SDC_UNKNOWN);
	return v;
}

/* A host-level finding (device -1) is in the same place as an injection on any device. */
static bool same_place(const struct sdc_finding *f, const struct sdc_injection *inj)
{
	return (f->device == inj->device || f->device < 0) && f->iteration == inj->iteration &&
	       !strcmp(f->probe, inj->probe) && !strcmp(f->variant, inj->variant);
}

void sdc_hex_bits(char *buf, size_t len, uint64_t v, int bits)
{
	const int digits = bits <= 4 ? 1 : bits <= 8 ? 2 : bits <= 12 ? 3 : bits <= 16 ? 4 : bits <= 20 ? 5 : bits <= 32 ? 8 : 16;
	snprintf(buf, len, "0x%0*" PRIx64, digits, v);
}

void sdc_finding_set_bits(struct sdc_finding *f, uint64_t expected, uint64_t actual, int bits)
{
	sdc_hex_bits(f->expected, sizeof(f->expected), expected, bits);
	sdc_hex_bits(f->actual, sizeof(f->actual), actual, bits);
	sdc_hex_bits(f->xor_mask, sizeof(f->xor_mask), expected ^ actual, bits);
}

void sdc_finding_set_f32(struct sdc_finding *f, float expected, float actual)
{
	uint32_t e, a;
	memcpy(&e, &expected, 4);
	memcpy(&a, &actual, 4);
	sdc_finding_set_bits(f, e, a, 32);
	snprintf(f->expected_value, sizeof(f->expected_value), "%.9g", (double)expected);
	snprintf(f->actual_value, sizeof(f->actual_value), "%.9g", (double)actual);
}

void sdc_finding_corruption(struct sdc_finding *f, const char *kind, const char *operation, const char *target,
			    uint64_t iter, int64_t row, int64_t col)
{
	memset(f, 0, sizeof(*f));
	f->cls = SDC_FINDING_CORRUPTION;
	sdc_strlcpy(f->kind, kind, sizeof(f->kind));
	sdc_strlcpy(f->operation, operation, sizeof(f->operation));
	sdc_strlcpy(f->target, target, sizeof(f->target));
	f->iteration = iter;
	f->row = row;
	f->col = col;
}

bool sdc_finding_locates(const struct sdc_finding *f, const struct sdc_injection *inj)
{
	if (f->cls != SDC_FINDING_CORRUPTION || !same_place(f, inj) || strcmp(f->target, inj->target) ||
	    f->row != inj->row || f->col != inj->col)
		return false;
	/* The XOR mask must hold the flipped bit: "0x..." hex, bit 0 rightmost. */
	unsigned long long mask = strtoull(f->xor_mask, NULL, 16);
	return inj->bit < 64 && (mask >> inj->bit) & 1ull;
}

bool sdc_finding_at(const struct sdc_finding *f, const struct sdc_injection *inj)
{
	return f->cls == SDC_FINDING_CORRUPTION && same_place(f, inj);
}

bool sdc_finding_explained(const struct sdc_finding *f, const struct sdc_run *run)
{
	for (int i = 0; i < run->ninjections; i++)
		if (same_place(f, &run->injections[i]))
			return true;
	return false;
}

void sdc_devices_text(int cpus, int gpus, char *buf, size_t len)
{
	if (!gpus)
		snprintf(buf, len, "%d CPU%s", cpus, cpus == 1 ? "" : "s");
	else if (!cpus)
		snprintf(buf, len, "%d GPU%s", gpus, gpus == 1 ? "" : "s");
	else
		snprintf(buf, len, "%d CPU%s and %d GPU%s", cpus, cpus == 1 ? "" : "s", gpus, gpus == 1 ? "" : "s");
}

const char *sdc_run_cpu_model(const struct sdc_run *run)
{
	for (int i = 0; i < run->ndevices; i++)
		if (run->devices[i].kind == SDC_DEVICE_CPU)
			return run->devices[i].model;
	return "unknown";
}

void sdc_summary_line(const struct sdc_run *run, enum sdc_verdict v, char *buf, size_t len)
{
	/* Name the first result at the verdict's level: that is what a pager line needs. */
	for (int i = 0; i < run->nresults && v != SDC_OK; i++) {
		const struct sdc_result *r = &run->results[i];
		if (sdc_status_verdict(r->status) != v)
			continue;
		const char *dev = run->devices[r->device].id;
		int others = 0;
		for (int k = i + 1; k < run->nresults; k++)
			others += sdc_status_verdict(run->results[k].status) == v;
		char more[48] = "";
		if (others)
			snprintf(more, sizeof(more), " (+%d more)", others);
		switch (r->status) {
		case SDC_STATUS_CORRUPT:
			snprintf(buf, len, "%s: %s %s %s: %" PRIu64 " corrupt result%s%s", sdc_verdict_name(v), dev,
				 r->probe, r->variant, r->corruptions, r->corruptions == 1 ? "" : "s", more);
			return;
		case SDC_STATUS_DEGRADED:
			snprintf(buf, len, "%s: %s %s %s slow: %.1f %s%s", sdc_verdict_name(v), dev, r->probe,
				 r->variant, r->rate, r->rate_unit, more);
			return;
		case SDC_STATUS_CRASHED:
		case SDC_STATUS_HUNG:
			snprintf(buf, len, "%s: %s %s %s %s: %s%s", sdc_verdict_name(v), dev, r->probe, r->variant,
				 r->status == SDC_STATUS_CRASHED ? "crashed" : "hung", r->error, more);
			return;
		default:
			snprintf(buf, len, "%s: %s %s %s: %s%s", sdc_verdict_name(v), dev, r->probe, r->variant,
				 r->error[0] ? r->error : sdc_status_name(r->status), more);
			return;
		}
	}
	/* Else the first finding at that level (the fleet's, GPU memory errors, a missing GPU). */
	for (int k = 0; k < run->nfindings && v != SDC_OK; k++) {
		const struct sdc_finding *f = &run->findings[k];
		if (sdc_finding_class_verdict(f->cls) == v) {
			snprintf(buf, len, "%s: %s%s%s%s%s: %s", sdc_verdict_name(v),
				 f->device >= 0 ? run->devices[f->device].id : "host", f->probe[0] ? " " : "", f->probe,
				 f->variant[0] ? " " : "", f->variant, f->detail);
			return;
		}
	}
	/* Else, on rank 0 of a job, the first other rank at that level, in its own words. */
	json_t *rk;
	size_t ri;
	json_array_foreach(run->fleet && v != SDC_OK ? json_object_get(run->fleet, "ranks") : NULL, ri, rk) {
		const char *rv = json_string_value(json_object_get(rk, "verdict"));
		const char *sum = json_string_value(json_object_get(rk, "summary"));
		const json_int_t r = json_integer_value(json_object_get(rk, "rank"));
		if (!rv || !sum || r == 0 || strcmp(rv, sdc_verdict_name(v)))
			continue;
		const size_t skip = strlen(rv) + 2; /* its own "VERDICT: " */
		snprintf(buf, len, "%s: rank %" JSON_INTEGER_FORMAT " (%s): %s", rv, r,
			 json_string_value(json_object_get(rk, "host")) ? json_string_value(json_object_get(rk, "host")) : "?",
			 strlen(sum) > skip && !strncmp(sum, rv, skip - 2) ? sum + skip : sum);
		return;
	}
	if (v == SDC_UNKNOWN) {
		snprintf(buf, len, "UNKNOWN: %s", run->interrupted ? "interrupted" : "could not test");
		return;
	}
	int gpus = 0;
	for (int i = 0; i < run->ndevices; i++)
		gpus += run->devices[i].kind == SDC_DEVICE_GPU;
	char devs[64];
	sdc_devices_text(run->ndevices - gpus, gpus, devs, sizeof(devs));
	snprintf(buf, len, "OK: %d results clean on %s", run->nresults, devs);
}

