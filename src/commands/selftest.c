/*
 * sdcscan selftest: proves on this host that detection works. Every probe runs briefly with
 * the faults its descriptor lists injected at its real injection points; the test passes only
 * if each fault is found and located to the right device, element and bit, and nothing else
 * is reported (OpenDCDiag's selftest idea: tests that fail on purpose).
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "commands/commands.h"
#include "runner/output.h"
#include "runner/plan.h"
#include "mpi/transport.h"
#include "probe/golden_file.h"
#include "runner/registry.h"
#include "runner/report.h"
#include "runner/report_read.h"
#include "runner/runner.h"
#include "base/macros.h"
#include "base/message.h"
#include "base/clock.h"

struct selftest_opts {
	double gpu_timeout; /* 0: each probe's own */
};
#define OPT(f) offsetof(struct selftest_opts, f)
static const struct sdc_option selftest_options[] = {
	{ .name = "gpu-timeout", .metavar = "SECONDS", .type = SDC_OPT_DOUBLE, .offset = OPT(gpu_timeout), .dmin = 1,
	  .dmax = 3600, /* the probes' own bound */
	  .help = "every GPU probe's gpu_timeout, the longest one wait on a GPU may take before it is named hung (the "
		  "probes' default 30 s; their hang_timeout at least this and a minute): longer under compute-sanitizer, "
		  "whose kernels run 10-100x slower" },
	SDC_OPT_END,
};

/* Iterations per device: faults are planned in the first eight (run/inject.h). */
#define SELFTEST_ITERATIONS 12
/* Seconds a variant may take for them at most (a bound, not a budget: it ends at its last). */
#define SELFTEST_VARIANT_BOUND 600.0

/* Whether the run tests GPU index (its CUDA ordinal). */
static bool has_gpu(const struct sdc_run *run, int index)
{
	for (int d = 0; d < run->ndevices; d++)
		if (run->devices[d].kind == SDC_DEVICE_GPU && run->devices[d].gpu.index == index)
			return true;
	return false;
}

/* The variant named so, with the selftest's options (NULL: none). */
static bool find_variant(const struct sdc_probe *p, const void *opts, const char *name, struct sdc_variant *out)
{
	struct sdc_variant v[SDC_VARIANTS_MAX];
	const int n = p->variants ? p->variants(opts, v, SDC_VARIANTS_MAX) : 0;
	for (int i = 0; i < n; i++)
		if (!strcmp(v[i].name, name)) {
			*out = v[i];
			return true;
		}
	return false;
}

/* A probe whose work spans the ranks: its faults are injected on one rank and found on another. */
static bool fleet_wide(const char *probe, const char *variant)
{
	const struct sdc_probe *p = sdc_probe_find(probe);
	if (!p)
		return false;
	if (p->needs & SDC_NEED_MPI)
		return true;
	void *opts = calloc(1, p->opts_size);
	struct sdc_variant v;
	bool wide = false;
	if (opts) {
		sdc_opt_defaults(p->options, opts);
		if (*variant)
			wide = find_variant(p, opts, variant, &v) && v.per_rank;
		else {
			/* a spec for every variant: wide when every variant is (ecparity under mpirun) */
			struct sdc_variant all[SDC_VARIANTS_MAX];
			const int n = p->variants ? p->variants(opts, all, SDC_VARIANTS_MAX) : 0;
			wide = n > 0;
			for (int i = 0; i < n; i++)
				wide &= all[i].per_rank;
		}
		free(opts);
	}
	return wide;
}

/* An injection as a finding on another rank sees it: a device index is its own rank's (the sender
 * of a hop on its GPU 1, the receiver that finds it on its GPU 2), so across ranks the device is
 * not compared; everything else is. */
static const struct sdc_injection *as_seen_by(const struct sdc_injection *in, const struct sdc_finding *f,
					      bool other_rank)
{
	static _Thread_local struct sdc_injection x;
	if (!other_rank)
		return in;
	x = *in;
	x.device = f->device;
	return &x;
}

static int build_plan(struct sdc_plan *plan, struct sdc_run *run, const struct selftest_opts *o, int *expected)
{
	memset(plan, 0, sizeof(*plan));
	sdc_strlcpy(plan->name, "selftest", sizeof(plan->name));
	sdc_strlcpy(plan->source, "built-in", sizeof(plan->source));
	sdc_strlcpy(plan->description, "fault injection into every probe", sizeof(plan->description));
	plan->seed_mode = SDC_SEED_FIXED;
	plan->seed = 1;
	int nspecs = 0;
	for (int i = 0; sdc_probes[i]; i++)
		for (int f = 0; sdc_probes[i]->selftest_faults && sdc_probes[i]->selftest_faults[f]; f++)
			nspecs++;
	run->inject = calloc((size_t)nspecs + 1, sizeof(*run->inject));
	if (!run->inject)
		return -1;
	*expected = 0;
	for (int i = 0; sdc_probes[i]; i++) {
		const struct sdc_probe *p = sdc_probes[i];
		char why[256], err[1024];
		if (!p->selftest_faults || !sdc_probe_usable(p, run, why, sizeof(why)))
			continue;
		struct sdc_plan_entry *e = sdc_plan_add(plan, p);
		if (!e)
			return -1;
		e->common.iterations = SELFTEST_ITERATIONS;
		for (int k = 0; p->selftest_options && p->selftest_options[k]; k++) {
			char key[64];
			const char *eq = strchr(p->selftest_options[k], '=');
			snprintf(key, sizeof(key), "%.*s", (int)(eq - p->selftest_options[k]), p->selftest_options[k]);
			if (sdc_plan_entry_set(e, key, eq + 1, err, sizeof(err))) {
				sdc_error("internal: selftest option of %s: %s", p->name, err);
				return -1;
			}
		}
		char timeout[32];
		snprintf(timeout, sizeof(timeout), "%.17g", o->gpu_timeout);
		if (o->gpu_timeout > 0 && sdc_opt_find(p->options, "gpu_timeout")) {
			if (sdc_plan_entry_set(e, "gpu_timeout", timeout, err, sizeof(err))) {
				sdc_error("selftest: --gpu-timeout for %s: %s", p->name, err);
				return -1;
			}
			/* a GPU lane waiting on its GPU makes no progress the supervisor sees: the wait's
			 * deadline must come first, or a slow wait is a hung worker at hang_timeout */
			e->common.hang_timeout = SDC_MAX(e->common.hang_timeout, o->gpu_timeout + 60);
		}
		/* every variant runs its SELFTEST_ITERATIONS (the faults are planned on them), however slow
		 * the devices: 8 GPUs emulated on 2 cores got 1 to 3 of 12 in a share of 60 s, and 3 of 12
		 * in 60 s of their own (their operands' preparation counts in it). A variant ends at its
		 * 12th iteration; 10 minutes each is only a bound, and hang_timeout names a stuck one. */
		struct sdc_variant vs[SDC_VARIANTS_MAX];
		const int nv = p->variants ? p->variants(e->opts, vs, SDC_VARIANTS_MAX) : 0;
		e->common.duration = SELFTEST_VARIANT_BOUND * (nv > 0 ? nv : 1);
		for (int f = 0; p->selftest_faults[f]; f++) {
			struct sdc_inject_spec *s = &run->inject[run->ninject];
			if (sdc_inject_parse(p->selftest_faults[f], s, err, sizeof(err))) {
				sdc_error("internal: selftest fault of %s: %s", p->name, err);
				return -1;
			}
			/* a fault for a variant not run here (xfmr-dp outside MPI, GPU variants without a GPU),
			 * or for a GPU this host does not have, is not asked for */
			struct sdc_variant v;
			if (*s->variant && (!find_variant(p, e->opts, s->variant, &v) || !sdc_variant_runnable(&v, run)))
				continue;
			if (s->device >= 0 && s->device_kind == SDC_DEVICE_GPU && !has_gpu(run, s->device))
				continue;
			run->ninject++;
			/* fleet-wide faults happen once in the job; the others on every rank */
			*expected += s->count * (fleet_wide(s->probe, s->variant) ? 1 : sdc_mpi.size);
		}
	}
	return 0;
}

static json_t *local_record(const struct sdc_run *run)
{
	json_t *inj = json_array(), *found = json_array(), *errs = json_array();
	for (int i = 0; i < run->ninjections; i++) {
		const struct sdc_injection *in = &run->injections[i];
		json_array_append_new(inj, json_pack("{s:s, s:s, s:i, s:s, s:s, s:I, s:I, s:I, s:i}", "probe", in->probe,
						     "variant", in->variant, "device", in->device, "device_id",
						     run->devices[in->device].id, "target", in->target, "iteration",
						     (json_int_t)in->iteration, "row", (json_int_t)in->row, "col",
						     (json_int_t)in->col, "bit", in->bit));
	}
	for (int k = 0; k < run->nfindings; k++) {
		const struct sdc_finding *f = &run->findings[k];
		json_array_append_new(found, json_pack("{s:i, s:s, s:s, s:i, s:s, s:s, s:s, s:I, s:I, s:I, s:s, s:s}", "cls",
						       (int)f->cls, "probe", f->probe, "variant", f->variant, "device",
						       f->device, "device_id", f->device >= 0 ? run->devices[f->device].id : "host",
						       "kind", f->kind, "target", f->target, "iteration", (json_int_t)f->iteration,
						       "row", (json_int_t)f->row, "col", (json_int_t)f->col, "xor_mask",
						       f->xor_mask, "detail", f->detail));
	}
	for (int r = 0; r < run->nresults; r++) {
		const struct sdc_result *res = &run->results[r];
		if (res->status == SDC_STATUS_ERROR || res->status == SDC_STATUS_NOT_RUN ||
		    res->status == SDC_STATUS_SKIPPED) {
			char line[512];
			snprintf(line, sizeof(line), "could not test %s/%s on %s: %s", res->probe, res->variant,
				 run->devices[res->device].id, res->error);
			json_array_append_new(errs, json_string(line));
		}
	}
	if (run->interrupted)
		json_array_append_new(errs, json_string("interrupted"));
	return json_pack("{s:i, s:o, s:o, s:o}", "rank", sdc_mpi.rank, "injections", inj, "findings", found, "errors",
			 errs);
}


static void injection_of(json_t *j, struct sdc_injection *in)
{
	memset(in, 0, sizeof(*in));
	sdc_strlcpy(in->probe, sdc_json_str(j, "probe"), sizeof(in->probe));
	sdc_strlcpy(in->variant, sdc_json_str(j, "variant"), sizeof(in->variant));
	sdc_strlcpy(in->target, sdc_json_str(j, "target"), sizeof(in->target));
	in->device = (int)json_integer_value(json_object_get(j, "device"));
	in->iteration = (uint64_t)json_integer_value(json_object_get(j, "iteration"));
	in->row = json_integer_value(json_object_get(j, "row"));
	in->col = json_integer_value(json_object_get(j, "col"));
	in->bit = (int)json_integer_value(json_object_get(j, "bit"));
}

static void finding_of(json_t *j, struct sdc_finding *f)
{
	memset(f, 0, sizeof(*f));
	f->cls = (enum sdc_finding_class)json_integer_value(json_object_get(j, "cls"));
	sdc_strlcpy(f->probe, sdc_json_str(j, "probe"), sizeof(f->probe));
	sdc_strlcpy(f->variant, sdc_json_str(j, "variant"), sizeof(f->variant));
	sdc_strlcpy(f->kind, sdc_json_str(j, "kind"), sizeof(f->kind));
	sdc_strlcpy(f->target, sdc_json_str(j, "target"), sizeof(f->target));
	sdc_strlcpy(f->xor_mask, sdc_json_str(j, "xor_mask"), sizeof(f->xor_mask));
	sdc_strlcpy(f->detail, sdc_json_str(j, "detail"), sizeof(f->detail));
	f->device = (int)json_integer_value(json_object_get(j, "device"));
	f->iteration = (uint64_t)json_integer_value(json_object_get(j, "iteration"));
	f->row = json_integer_value(json_object_get(j, "row"));
	f->col = json_integer_value(json_object_get(j, "col"));
}

struct tally {
	int injected, located, missed, false_alarms, errors;
};

/* Every injection of every rank against every finding of every rank: within a rank, or across
 * ranks for a probe whose work spans them. Each record is converted once, then matched. */
struct injected {
	struct sdc_injection in;
	size_t rec; /* index in the gathered records, one per rank */
	json_t *j;
};
struct found {
	struct sdc_finding f;
	size_t rec;
	json_t *j;
};
/* "rank N " before each line when there are several ranks, "" with one */
typedef char rank_label[32];

static struct tally evaluate(json_t *all, const struct sdc_output *out, bool quiet)
{
	struct tally t = { 0 };
	const bool many = json_array_size(all) > 1;
	size_t a, i, ni = 0, nf = 0;
	json_t *ra, *ji;
	json_array_foreach(all, a, ra) {
		ni += json_array_size(json_object_get(ra, "injections"));
		nf += json_array_size(json_object_get(ra, "findings"));
	}
	struct injected *inj = calloc(ni + 1, sizeof(*inj));
	struct found *fnd = calloc(nf + 1, sizeof(*fnd));
	rank_label *where = calloc(json_array_size(all) + 1, sizeof(*where));
	if (!inj || !fnd || !where) {
		free(inj), free(fnd), free(where);
		t.errors++;
		fprintf(out->fp, "selftest: out of memory matching findings to faults\n");
		return t;
	}
	ni = nf = 0;
	json_array_foreach(all, a, ra) {
		if (many)
			snprintf(where[a], sizeof(where[a]), "rank %d ", (int)json_integer_value(json_object_get(ra, "rank")));
		json_array_foreach(json_object_get(ra, "injections"), i, ji) {
			injection_of(ji, &inj[ni].in);
			inj[ni].rec = a, inj[ni++].j = ji;
		}
		json_array_foreach(json_object_get(ra, "findings"), i, ji) {
			finding_of(ji, &fnd[nf].f);
			fnd[nf].rec = a, fnd[nf++].j = ji;
		}
	}
	for (size_t x = 0; x < ni; x++) {
		const struct sdc_injection *in = &inj[x].in;
		const bool wide = fleet_wide(in->probe, in->variant);
		bool ok = false;
		if (in->bit < 0) /* nothing flipped (a rank taken away: its rebuilder records what to find) */
			continue;
		for (size_t y = 0; y < nf && !ok; y++)
			ok = (fnd[y].rec == inj[x].rec || wide) &&
			     sdc_finding_locates(&fnd[y].f, as_seen_by(in, &fnd[y].f, fnd[y].rec != inj[x].rec));
		t.injected++;
		ok ? t.located++ : t.missed++;
		if (!quiet || !ok)
			fprintf(out->fp, "selftest: %s%s/%s %s iteration %" PRIu64 ": %s[%" PRId64 "][%" PRId64 "] bit %d%*s %s\n",
				where[inj[x].rec], in->probe, in->variant, sdc_json_str(inj[x].j, "device_id"), in->iteration, in->target, in->row,
				in->col, in->bit, 4, "", ok ? "found and located" : "MISSED");
	}
	for (size_t y = 0; y < nf; y++) {
		const struct sdc_finding *f = &fnd[y].f;
		bool explained = false;
		for (size_t x = 0; x < ni && !explained; x++)
			explained = (inj[x].rec == fnd[y].rec || fleet_wide(inj[x].in.probe, inj[x].in.variant)) &&
				    sdc_finding_at(f, as_seen_by(&inj[x].in, f, inj[x].rec != fnd[y].rec));
		if (explained)
			continue;
		t.false_alarms++;
		fprintf(out->fp, "selftest: FALSE ALARM %s%s/%s %s iteration %" PRIu64 ": %s %s\n", where[fnd[y].rec], f->probe,
			f->variant, sdc_json_str(fnd[y].j, "device_id"), f->iteration, f->kind, f->detail);
	}
	json_array_foreach(all, a, ra) {
		json_array_foreach(json_object_get(ra, "errors"), i, ji) {
			t.errors++;
			fprintf(out->fp, "selftest: %s%s\n", where[a], json_string_value(ji));
		}
	}
	free(inj), free(fnd), free(where);
	return t;
}

static enum sdc_verdict verdict_of(const struct tally *t, int expected, char *summary, size_t len)
{
	if (t->errors || t->injected < expected) {
		snprintf(summary, len, "UNKNOWN: selftest could not run: %d of %d faults injected, %d errors", t->injected,
			 expected, t->errors);
		return SDC_UNKNOWN;
	}
	if (t->missed || t->false_alarms) {
		snprintf(summary, len, "CRITICAL: selftest failed: %d of %d faults located, %d missed, %d false alarms",
			 t->located, t->injected, t->missed, t->false_alarms);
		return SDC_CRITICAL;
	}
	snprintf(summary, len, "OK: selftest passed: %d of %d injected faults found and located, no false alarms%s",
		 t->located, t->injected, sdc_mpi.size > 1 ? " (across every rank)" : "");
	return SDC_OK;
}

static int selftest_main(struct sdc_cmd *c)
{
	struct sdc_cli *cli = &c->cli;
	struct sdc_plan plan;
	struct sdc_run run;
	int expected = 0, rc;
	char summary[256];
	struct sdc_golden recorded = { 0 };
	if (sdc_cli_start_run(c, &run, cli->have_seed ? cli->seed : 1))
		return sdc_cli_unknown(cli);
	if (build_plan(&plan, &run, c->opts, &expected) || sdc_runner_check_injections(&run, &plan)) {
		rc = sdc_cli_unknown(cli);
		goto out;
	}
	/* A data-parallel trajectory with the selftest's options and this world size has no shipped
	 * golden: every rank records it here first (the plain reference kernel), so a rank's gradient
	 * gone wrong before the all-reduce can be named (the golden is the repeated computation). */
	for (int i = 0; sdc_mpi.size > 1 && i < plan.n; i++) {
		const struct sdc_probe *p = plan.entries[i].probe;
		struct sdc_variant variants[SDC_VARIANTS_MAX];
		const int nv = p->golden_record && p->variants ? p->variants(plan.entries[i].opts, variants, SDC_VARIANTS_MAX) : 0;
		for (int v = 0; v < nv; v++) {
			char err[256];
			if (!variants[v].per_rank)
				continue;
			if (recorded.n || sdc_golden_record_here(p, plan.entries[i].opts, &variants[v], run.seed, &run, &recorded,
								 err, sizeof(err))) {
				sdc_error("selftest: cannot record the %s/%s golden here: %s", p->name, variants[v].name,
					  recorded.n ? "only one fleet-wide trajectory is supported" : err);
				rc = sdc_cli_unknown(cli);
				goto out;
			}
			sdc_golden_use(&recorded);
		}
	}

	struct sdc_output quiet_out, out;
	sdc_output_init(&quiet_out, false, true, true, false);
	sdc_output_init(&out, cli->json && !strcmp(cli->json, "-"), cli->quiet, cli->no_color, sdc_mpi.rank == 0);
	sdc_stop_install_signals();
	if (sdc_runner_execute(&run, &plan, &quiet_out)) {
		rc = sdc_cli_unknown(cli);
		goto out;
	}
	run.end_mono = sdc_now();

	/* What this rank injected, found and could not test; under MPI rank 0 gathers every rank's
	 * and matches across them: a hop's fault is injected by the sender and found by the receiver. */
	json_t *mine = local_record(&run);
	json_t *all = json_array();
	int32_t fleet_verdict = -1;
	if (sdc_mpi.active && sdc_mpi.size > 1 && sdc_mpi.rank != 0) {
		char *text = json_dumps(mine, JSON_COMPACT);
		if (!text || sdc_mpi_to_root(text, &fleet_verdict, 0x5e1))
			fleet_verdict = SDC_UNKNOWN;
		free(text);
	} else if (sdc_mpi.active && sdc_mpi.size > 1) {
		char **texts = calloc((size_t)sdc_mpi.size, sizeof(char *));
		bool *alive = calloc((size_t)sdc_mpi.size, sizeof(bool));
		if (texts && alive)
			sdc_mpi_gather_texts(texts, 0x5e1);
		json_array_append(all, mine);
		for (int r = 1; r < sdc_mpi.size; r++) {
			json_t *j = texts && texts[r] ? json_loads(texts[r], 0, NULL) : NULL;
			if (texts)
				free(texts[r]);
			if (j && json_integer_value(json_object_get(j, "rank")) == r) {
				json_array_append_new(all, j);
				alive[r] = true;
			} else {
				json_decref(j);
				json_array_append_new(all, json_pack("{s:i, s:[s]}", "rank", r, "errors",
								     "sent no selftest results in time: dead or stuck"));
			}
		}
		free(texts);
		struct tally t = evaluate(all, &out, cli->quiet);
		fleet_verdict = (int32_t)verdict_of(&t, expected, summary, sizeof(summary));
		if (alive)
			sdc_mpi_answer(alive, fleet_verdict, 0x5e1);
		free(alive);
	} else
		json_array_append(all, mine);

	enum sdc_verdict v;
	if (sdc_mpi.active && sdc_mpi.size > 1 && sdc_mpi.rank != 0) {
		v = fleet_verdict >= SDC_OK && fleet_verdict <= SDC_UNKNOWN ? (enum sdc_verdict)fleet_verdict : SDC_UNKNOWN;
		snprintf(summary, sizeof(summary), "%s: selftest across %d ranks (rank 0 prints what was found)",
			 sdc_verdict_name(v), sdc_mpi.size);
	} else if (fleet_verdict >= 0) {
		v = (enum sdc_verdict)fleet_verdict;
	} else {
		struct tally t = evaluate(all, &out, cli->quiet);
		v = verdict_of(&t, expected, summary, sizeof(summary));
	}
	json_decref(mine);
	json_decref(all);
	rc = sdc_exit_code(v, cli->exit_style);
	if (cli->json) {
		json_t *report = sdc_report_build(&run, &plan, v, rc, summary);
		if (!report || sdc_report_write(report, cli->json))
			rc = sdc_exit_code(sdc_verdict_worst(v, SDC_UNKNOWN), cli->exit_style);
		json_decref(report);
	}
	fprintf(out.fp, "%s\n", summary);
out:
	sdc_golden_use(NULL);
	sdc_golden_free(&recorded);
	sdc_plan_release(&plan);
	sdc_run_release(&run);
	return rc;
}

const struct sdc_command sdc_command_selftest = {
	.name = "selftest",
	.summary = "inject faults into every probe and check that each is found and located; exit 0 every fault "
		   "found and located, 2 a fault missed or mislocated or a false alarm, 3 could not run",
	.options = selftest_options,
	.opts_size = sizeof(struct selftest_opts),
	.common = SDC_CF_CPUS | SDC_CF_GPUS | SDC_CF_SEED | SDC_CF_JSON | SDC_CF_REPORTING,
	.flags = SDC_CMD_JOINS_MPI | SDC_CMD_BURNS,
	.fn = selftest_main,
};
