/* The JSON report of a run (runner/report.h). */
#include "runner/report.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "probe/command.h"
#include "runner/output.h"
#include "runner/replay_cmd.h"
#include "sdc_config.h"
#include "base/message.h"
#include "base/clock.h"

static json_t *nullable_int(int64_t v)
{
	return v < 0 ? json_null() : json_integer(v);
}

static void read_os_name(char *buf, size_t len)
{
	FILE *f = fopen("/etc/os-release", "r");
	sdc_strlcpy(buf, "unknown", len);
	if (!f)
		return;
	char line[256];
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "PRETTY_NAME=", 12))
			continue;
		char *v = line + 12;
		v[strcspn(v, "\n")] = '\0';
		if (*v == '"') {
			v++;
			v[strcspn(v, "\"")] = '\0';
		}
		sdc_strlcpy(buf, v, len);
		break;
	}
	fclose(f);
}

/* The first line of a small system file, trimmed (procfs and sysfs files say size 0 or 4096:
 * read, not sized); "" when it cannot be read (DMI serial and UUID are often root's only). */
static void read_id(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	buf[0] = '\0';
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = '\0';
	fclose(f);
	size_t n = strcspn(buf, "\n");
	while (n && (buf[n - 1] == ' ' || buf[n - 1] == '\t'))
		n--;
	buf[n] = '\0';
	for (char *p = buf; *p; p++) /* an identity is printable: anything else is not one */
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e) {
			buf[0] = '\0';
			return;
		}
}

/*
 * The machine's identity, which a hostname is not (two machines may both be "localhost"): the
 * systemd machine-id, the DMI product UUID and serial where readable, and the boot's id beside
 * them. sdcscan fleet tells hosts apart by them (the first present, in that order).
 */
static void host_identity(json_t *h)
{
	static const struct {
		const char *key, *path;
	} ids[] = { { "machine_id", "/etc/machine-id" },
		    { "product_uuid", "/sys/class/dmi/id/product_uuid" },
		    { "product_serial", "/sys/class/dmi/id/product_serial" },
		    { "boot_id", "/proc/sys/kernel/random/boot_id" } };
	/* what firmware writes where it was given no serial or UUID: shared by many machines, no identity */
	static const char *const placeholders[] = { "Not Specified", "To be filled by O.E.M.", "To Be Filled By O.E.M.",
						    "Default string", "System Serial Number", "None", "Not Applicable",
						    "03000200-0400-0500-0006-000700080009" };
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		char v[128];
		read_id(ids[i].path, v, sizeof(v));
		bool blank = strspn(v, "0-") == strlen(v);
		for (size_t k = 0; k < sizeof(placeholders) / sizeof(placeholders[0]); k++)
			blank |= !strcmp(v, placeholders[k]);
		if (!blank)
			json_object_set_new(h, ids[i].key, json_string(v));
	}
}

static json_t *host_json(const struct sdc_run *run)
{
	char hostname[256] = "unknown", os[128];
	struct utsname u;
	gethostname(hostname, sizeof(hostname) - 1);
	uname(&u);
	read_os_name(os, sizeof(os));
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	json_t *h = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:I}", "hostname", hostname, "os", os, "kernel",
			      u.release, "architecture", u.machine, "cpu_model", sdc_run_cpu_model(run), "online_cpus",
			      (int)sysconf(_SC_NPROCESSORS_ONLN), "memory_bytes", (json_int_t)pages * psize);
	host_identity(h);
	/* Why no GPU was tested, when none was: no module, no driver, --gpus none. */
	if (run->gpu_note[0])
		json_object_set_new(h, "gpu_note", json_string(run->gpu_note));
	return h;
}

static json_t *count_json(int64_t v)
{
	return v < 0 ? json_null() : json_integer(v);
}

/* One NVML reading of a GPU (device/nvml.h); null fields where NVML did not say. */
static json_t *health_json(const struct sdc_gpu_health *h)
{
	if (!h->valid)
		return json_pack("{s:s}", "unavailable", h->why[0] ? h->why : "not read");
	char throttle[160];
	sdc_nvml_throttle_text(h->throttle_reasons, throttle, sizeof(throttle));
	json_t *o = json_object();
	json_object_set_new(o, "ecc_enabled", h->ecc_mode < 0 ? json_null() : json_boolean(h->ecc_mode));
	json_object_set_new(o, "ecc_corrected_volatile", count_json(h->ecc_corrected));
	json_object_set_new(o, "ecc_uncorrected_volatile", count_json(h->ecc_uncorrected));
	json_object_set_new(o, "retired_pages_sbe", count_json(h->retired_sbe));
	json_object_set_new(o, "retired_pages_dbe", count_json(h->retired_dbe));
	json_object_set_new(o, "remapped_rows_correctable", count_json(h->remapped_corr));
	json_object_set_new(o, "remapped_rows_uncorrectable", count_json(h->remapped_unc));
	json_object_set_new(o, "remap_pending", h->remap_pending < 0 ? json_null() : json_boolean(h->remap_pending));
	json_object_set_new(o, "remap_failure", h->remap_failure < 0 ? json_null() : json_boolean(h->remap_failure));
	json_object_set_new(o, "sm_clock_mhz", count_json(h->sm_clock_mhz));
	json_object_set_new(o, "memory_clock_mhz", count_json(h->mem_clock_mhz));
	json_object_set_new(o, "temperature_c", count_json(h->temperature_c));
	json_object_set_new(o, "power_w", isfinite(h->power_w) ? json_real(h->power_w) : json_null());
	json_object_set_new(o, "throttle_reasons", json_string(throttle));
	return o;
}

static json_t *devices_json(const struct sdc_run *run)
{
	json_t *arr = json_array();
	for (int i = 0; i < run->ndevices; i++) {
		const struct sdc_device *d = &run->devices[i];
		if (d->kind == SDC_DEVICE_GPU) {
			const struct sdc_gpu_identity *g = &d->gpu;
			char cc[16];
			snprintf(cc, sizeof(cc), "%d.%d", g->cc_major, g->cc_minor);
			json_array_append_new(arr, json_pack("{s:s, s:s, s:i, s:s, s:s, s:s, s:s, s:i, s:I, s:s, s:s}", "id",
							     d->id, "type", "gpu", "index", g->index, "model", d->model,
							     "uuid", g->uuid, "pci_bus_id", g->pci_bus_id,
							     "compute_capability", cc, "sm_count", g->sm_count,
							     "memory_bytes", (json_int_t)g->memory_bytes, "driver",
							     g->driver, "cuda_runtime", g->runtime));
			if (run->health)
				json_object_set_new(json_array_get(arr, json_array_size(arr) - 1), "health",
						    json_pack("{s:o, s:o}", "before", health_json(&run->health[2 * i]),
							      "after", health_json(&run->health[2 * i + 1])));
			continue;
		}
		json_array_append_new(arr, json_pack("{s:s, s:s, s:i, s:o, s:o, s:s, s:s}", "id", d->id, "type",
						     "cpu", "logical_cpu", d->cpu.logical, "core_id",
						     nullable_int(d->cpu.core_id), "package_id",
						     nullable_int(d->cpu.package_id), "model", d->model, "microcode",
						     d->cpu.microcode));
	}
	return arr;
}

static json_t *options_json(const struct sdc_option *table, const void *opts)
{
	json_t *o = json_object();
	for (const struct sdc_option *opt = table; opt->name; opt++) {
		char buf[SDC_OPT_STR_MAX];
		sdc_opt_format(opt, opts, buf, sizeof(buf));
		json_object_set_new(o, opt->name, json_string(buf));
	}
	return o;
}

static json_t *run_json(const struct sdc_run *run, const struct sdc_plan *plan)
{
	char start[32], seed[32], replay[4096];
	sdc_format_utc(run->start_wall, start, sizeof(start));
	snprintf(seed, sizeof(seed), "%" PRIu64, run->seed);
	json_t *probes = json_array();
	for (int i = 0; i < plan->n; i++) {
		const struct sdc_plan_entry *e = &plan->entries[i];
		json_array_append_new(probes, json_pack("{s:s, s:f, s:I, s:b, s:o}", "name", e->probe->name,
							"duration_seconds", e->common.duration, "iterations",
							(json_int_t)e->common.iterations, "optional",
							e->common.optional, "options",
							options_json(e->probe->options, e->opts)));
	}
	json_t *inject = json_array();
	for (int i = 0; i < run->ninject; i++)
		json_array_append_new(inject, json_string(run->inject[i].text));
	sdc_replay_run(run, replay, sizeof(replay));
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:f, s:b, s:s, s:o, s:o, s:O}", "profile", plan->name,
			 "profile_source", plan->source, "description", plan->description, "seed", seed, "start",
			 start, "duration_seconds", run->end_mono - run->start_mono, "interrupted",
			 run->interrupted, "replay", replay, "probes", probes, "inject", inject, "environment",
			 (json_t *)run->environment);
}

static json_t *results_json(const struct sdc_run *run)
{
	json_t *arr = json_array();
	for (int i = 0; i < run->nresults; i++) {
		const struct sdc_result *r = &run->results[i];
		json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:f, s:f, s:f, s:s, s:I, s:b}",
				      "probe", r->probe, "variant", r->variant, "device",
				      run->devices[r->device].id, "status", sdc_status_name(r->status), "verdict",
				      sdc_verdict_name(sdc_status_verdict(r->status)), "iterations",
				      (json_int_t)r->iterations, "iteration_unit", r->iter_unit, "operations",
				      r->ops, "seconds", r->seconds, "rate", r->rate, "rate_unit", r->rate_unit,
				      "corruptions", (json_int_t)r->corruptions, "interrupted", r->interrupted);
		if (r->kernel[0])
			json_object_set_new(o, "kernel", json_string(r->kernel));
		if (r->overrun > 0)
			json_object_set_new(o, "overrun_seconds", json_real(r->overrun));
		if (r->start_seconds >= 0 && r->iterations)
			json_object_set_new(o, "start_seconds", json_real(r->start_seconds));
		if (r->ref_rate > 0)
			json_object_set_new(o, "reference", json_pack("{s:s, s:f, s:f}", "name", r->ref_name, "rate",
								      r->ref_rate, "share", r->rate / r->ref_rate));
		if (r->error[0])
			json_object_set_new(o, "error", json_string(r->error));
		json_object_set_new(o, "work_digest",
				    r->work_digest[0] ? json_pack("{s:i, s:s}", "iterations", SDC_WORK_DIGEST_ITERATIONS,
								  "sha256", r->work_digest)
						      : json_null());
		json_array_append_new(arr, o);
	}
	return arr;
}

static json_t *totals_json(const struct sdc_run *run)
{
	json_t *arr = json_array();
	for (int i = 0; i < run->ntotals; i++) {
		const struct sdc_total *t = &run->totals[i];
		json_array_append_new(arr, json_pack("{s:s, s:s, s:i, s:f, s:s}", "probe", t->probe, "variant",
						     t->variant, "devices", t->devices, "rate", t->rate, "rate_unit",
						     t->rate_unit));
	}
	return arr;
}

static void set_if(json_t *o, const char *key, const char *v)
{
	if (v[0])
		json_object_set_new(o, key, json_string(v));
}

static json_t *findings_json(const struct sdc_run *run)
{
	json_t *arr = json_array();
	for (int i = 0; i < run->nfindings; i++) {
		const struct sdc_finding *f = &run->findings[i];
		json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:f, s:o, s:o}", "class",
				      sdc_finding_class_name(f->cls), "probe", f->probe, "variant", f->variant, "device",
				      f->device >= 0 ? run->devices[f->device].id : "host", "kind", f->kind,
				      "operation", f->operation, "iteration", (json_int_t)f->iteration,
				      "time_to_failure_seconds", f->time_to_failure, "row", nullable_int(f->row),
				      "col", nullable_int(f->col));
		set_if(o, "target", f->target);
		set_if(o, "expected", f->expected);
		set_if(o, "actual", f->actual);
		set_if(o, "xor_mask", f->xor_mask);
		set_if(o, "expected_value", f->expected_value);
		set_if(o, "actual_value", f->actual_value);
		set_if(o, "detail", f->detail);
		if (f->threshold > 0) {
			json_object_set_new(o, "threshold", json_real(f->threshold));
			/* A NaN or infinite difference has no finite margin. */
			json_object_set_new(o, "margin", isfinite(f->margin) ? json_real(f->margin) : json_null());
		}
		if (f->sm_known)
			json_object_set_new(o, "sm", json_integer(f->sm));
		set_if(o, "signal", f->signal);
		set_if(o, "si_code", f->si_code);
		set_if(o, "fault_address", f->fault_address);
		set_if(o, "ip", f->ip);
		char replay[4096];
		sdc_replay_finding(run, f, replay, sizeof(replay));
		json_object_set_new(o, "replay", json_string(replay));
		json_array_append_new(arr, o);
	}
	return arr;
}

static json_t *injections_json(const struct sdc_run *run)
{
	json_t *arr = json_array();
	for (int i = 0; i < run->ninjections; i++) {
		const struct sdc_injection *in = &run->injections[i];
		json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s, s:I, s:o, s:o, s:i, s:o, s:o, s:s}",
						     "probe", in->probe, "variant", in->variant, "device",
						     run->devices[in->device].id, "target", in->target,
						     "iteration", (json_int_t)in->iteration, "row",
						     nullable_int(in->row), "col", nullable_int(in->col), "bit",
						     in->bit, "before", in->before[0] ? json_string(in->before) : json_null(),
						     "after", in->after[0] ? json_string(in->after) : json_null(), "spec",
						     run->inject[in->spec].text));
	}
	return arr;
}

json_t *sdc_report_build(const struct sdc_run *run, const struct sdc_plan *plan, enum sdc_verdict v,
			 int exit_status, const char *summary_text)
{
	json_t *argv = json_array();
	for (int i = 0; i < run->argc; i++)
		json_array_append_new(argv, json_string(run->argv[i]));
	json_t *build = json_pack("{s:b, s:b, s:b, s:b}", "cuda", HAVE_CUDA, "nccl", HAVE_NCCL, "mpi",
				  HAVE_MPI, "blas", HAVE_BLAS);
	char summary[512];
	if (summary_text)
		sdc_strlcpy(summary, summary_text, sizeof(summary));
	else
		sdc_summary_line(run, v, summary, sizeof(summary));
	json_t *report = json_pack("{s:[i,i], s:{s:s, s:s, s:o, s:i, s:o}, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:o, "
			 "s:{s:s, s:i, s:s}}",
			 "schema_version", SDC_SCHEMA_MAJOR, SDC_SCHEMA_MINOR, "tool", "name", "sdcscan", "version",
			 SDC_VERSION, "argv", argv, "exit_status", exit_status, "build", build, "host",
			 host_json(run), "devices", devices_json(run), "run", run_json(run, plan), "results",
			 results_json(run), "totals", totals_json(run), "findings", findings_json(run), "findings_not_kept",
			 (json_int_t)run->findings_dropped, "injections", injections_json(run), "verdict",
			 "status", sdc_verdict_name(v), "code", (int)v, "summary", summary);
	if (report && run->fleet)
		json_object_set(report, "fleet", (json_t *)run->fleet);
	return report;
}

int sdc_report_write(json_t *report, const char *path)
{
	return sdc_cli_write_json(path, report, "report");
}
