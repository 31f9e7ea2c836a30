/*
 * sdcscan golden record|verify|show: record what a probe computes on a known-good host; verify
 * that this host computes the same. The library is probe/golden_file.c.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/digest.h"
#include "commands/commands.h"
#include "runner/output.h"
#include "runner/plan.h"
#include "runner/profile.h"
#include "runner/registry.h"
#include "runner/runner.h"
#include "run/facts_json.h"
#include "mpi/transport.h"
#include "probe/golden_file.h"
#include "base/message.h"
#include "base/parse.h"
#include "base/clock.h"
#include "base/files.h"

#define FAIL(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

/* Runs plan on run's devices without printing per-probe lines unless asked. */
static int execute(const struct sdc_cli *cli, struct sdc_run *run, struct sdc_plan *plan, bool show)
{
	struct sdc_output out;
	sdc_output_init(&out, false, !show || cli->quiet, cli->no_color, sdc_mpi.rank == 0);
	if (show)
		sdc_output_header(&out, run, plan);
	sdc_stop_install_signals();
	const int rc = sdc_runner_execute(run, plan, &out);
	run->end_mono = sdc_now();
	return rc;
}

static struct sdc_plan_entry *plan_for(struct sdc_plan *plan, const struct sdc_probe *p, const char *variant)
{
	struct sdc_plan_entry *e = sdc_plan_find(plan, p->name);
	if (!e)
		e = sdc_plan_add(plan, p);
	if (e && variant)
		sdc_strlcpy(e->only_variant, variant, sizeof(e->only_variant));
	return e;
}

struct record_opts {
	const char *probe, *profile, *output, *variant;
	struct sdc_arglist sets;
};

#define ROPT(f) offsetof(struct record_opts, f)
static const struct sdc_option record_options[] = {
	{ .name = "probe", .short_name = 'P', .metavar = "NAME", .type = SDC_OPT_ARG, .offset = ROPT(probe),
	  .help = "the probe (every variant its options select); required" },
	{ .name = "profile", .short_name = 'p', .metavar = "NAME|FILE", .type = SDC_OPT_ARG, .offset = ROPT(profile),
	  .help = "take the probe's options and seed from this profile" },
	{ .name = "set", .short_name = 's', .metavar = "PROBE.KEY=VAL", .type = SDC_OPT_LIST, .offset = ROPT(sets),
	  .help = "set a probe option (repeatable)" },
	{ .name = "output", .short_name = 'o', .metavar = "FILE", .type = SDC_OPT_ARG, .offset = ROPT(output),
	  .help = "where to write the golden file (atomically); required" },
	{ .name = "variant", .short_name = 'V', .metavar = "NAME", .type = SDC_OPT_ARG, .offset = ROPT(variant),
	  .help = "only this variant (e.g. xfmr-dp, under mpirun)" },
	SDC_OPT_END,
};

/* The golden entries of each variant (json_t array): its trajectory where the probe records one
 * (golden_record), else the work digest of a run of SDC_WORK_DIGEST_ITERATIONS. NULL after
 * saying why. */
static json_t *record_entries(struct sdc_cli *cli, const struct sdc_probe *p, struct sdc_plan_entry *e,
			      struct sdc_run *run, struct sdc_plan *plan, const struct sdc_variant *variants,
			      int nv)
{
	char err[1024];
	if (!p->golden_record) {
		e->common.iterations = SDC_WORK_DIGEST_ITERATIONS;
		e->common.duration = 3600;
		if (execute(cli, run, plan, false))
			return NULL;
	}
	json_t *entries = json_array();
	for (int v = 0; v < nv; v++) {
		json_t *key = sdc_golden_key(p, e->opts, &variants[v], run->seed, sdc_run_cpu_model(run)), *res = NULL;
		if (p->golden_record) {
			json_t *traj = sdc_facts_json(p->golden_record(e->opts, &variants[v], run->seed, err, sizeof(err)));
			if (!traj) {
				fprintf(stderr, "sdcscan golden: %s/%s: %s\n", p->name, variants[v].name, err);
				json_decref(key);
				json_decref(entries);
				return NULL;
			}
			res = json_pack("{s:o}", "trajectory", traj);
		} else {
			const struct sdc_result *r = NULL;
			for (int i = 0; i < run->nresults; i++)
				if (!strcmp(run->results[i].variant, variants[v].name))
					r = &run->results[i];
			if (!r || r->status != SDC_STATUS_OK || !r->work_digest[0]) {
				fprintf(stderr, "sdcscan golden: %s/%s did not run cleanly here (%s): nothing recorded\n",
					p->name, variants[v].name, r ? sdc_status_name(r->status) : "no result");
				json_decref(key);
				json_decref(entries);
				return NULL;
			}
			res = json_pack("{s:s, s:i}", "work_digest", r->work_digest, "iterations",
					SDC_WORK_DIGEST_ITERATIONS);
		}
		json_array_append_new(entries, json_pack("{s:o, s:o}", "key", key, "result", res));
		if (!cli->quiet)
			printf("recorded %s/%s (seed %" PRIu64 ")\n", p->name, variants[v].name,
			       sdc_variant_seed(&variants[v], run->seed));
	}
	return entries;
}

static int record_main(struct sdc_cmd *c)
{
	const struct record_opts *o = c->opts;
	struct sdc_cli *cli = &c->cli;
	const struct sdc_probe *p = o->probe ? sdc_probe_find(o->probe) : NULL;
	char err[1024], names[256];
	if (!o->probe)
		return sdc_cli_bad(cli, "--probe NAME is required");
	if (!p) {
		sdc_probe_names(names, sizeof(names));
		return sdc_cli_bad(cli, "--probe '%s': unknown probe (valid probes: %s)", o->probe, names);
	}
	if (!o->output)
		return sdc_cli_bad(cli, "--output FILE is required");
	char where[4096], werr[4200];
	if (sdc_output_path(o->output, where, sizeof(where), werr, sizeof(werr)))
		return sdc_cli_bad(cli, "--output: %s", werr);
	struct sdc_plan plan = { .seed_mode = SDC_SEED_FIXED, .seed = 1 };
	if (o->profile && sdc_profile_load(o->profile, &plan, err, sizeof(err))) {
		fprintf(stderr, "sdcscan golden: %s\n", err);
		return sdc_cli_unknown(cli);
	}
	/* Only this probe: its options from the profile (or the defaults). */
	struct sdc_plan one = plan;
	one.n = 0;
	for (int i = 0; i < plan.n; i++) {
		if (plan.entries[i].probe == p)
			one.entries[one.n++] = plan.entries[i];
		else
			free(plan.entries[i].opts);
	}
	plan = one;
	int rc = sdc_cli_unknown(cli);
	struct sdc_plan_entry *e = plan_for(&plan, p, NULL);
	if (!e)
		goto out_plan;
	for (int i = 0; i < o->sets.n; i++)
		if (sdc_plan_set(&plan, o->sets.v[i]))
			goto out_plan;
	struct sdc_variant variants[SDC_VARIANTS_MAX];
	int nv = p->variants ? p->variants(e->opts, variants, SDC_VARIANTS_MAX) : 0;
	if (nv <= 0)
		variants[0] = (struct sdc_variant){ .name = "default", .devices = SDC_ON_CPU }, nv = 1;
	/* A probe that fixes its own data seed (minitrain's seed option) needs no fixed run seed. */
	bool own_seed = true;
	for (int v = 0; v < nv; v++)
		own_seed &= variants[v].seed != 0;
	if (plan.seed_mode != SDC_SEED_FIXED && !cli->have_seed && !own_seed) {
		sdc_cli_bad(cli, "the profile's seed is not fixed; give --seed N");
		goto out_plan;
	}
	struct sdc_run run;
	if (sdc_cli_start_run(c, &run, cli->have_seed ? cli->seed : sdc_plan_seed(&plan, sdc_wall_now())))
		goto out_plan;
	/* One device: a golden is what one healthy device computes (a CPU: it comes first). */
	run.ndevices = 1;
	int runnable = 0;
	for (int v = 0; v < nv; v++)
		if (sdc_variant_runnable(&variants[v], &run))
			variants[runnable++] = variants[v];
	nv = runnable;
	if (o->variant) {
		int keep = 0;
		for (int v = 0; v < nv; v++)
			if (!strcmp(variants[v].name, o->variant))
				variants[keep++] = variants[v];
		if (!keep) {
			sdc_cli_bad(cli, "--variant '%s': not a variant these options select", o->variant);
			goto out_run;
		}
		nv = keep;
		sdc_strlcpy(e->only_variant, o->variant, sizeof(e->only_variant));
	}
	json_t *entries = record_entries(cli, p, e, &run, &plan, variants, nv);
	if (!entries)
		goto out_run;
	json_t *root = sdc_golden_file_json(entries, &run);
	if (root && sdc_mpi.rank != 0) {
		rc = 0; /* under mpirun every rank computed its part; rank 0 writes the file */
	} else if (root && !sdc_cli_write_json(o->output, root, "sdcscan golden")) {
		if (!cli->quiet)
			printf("wrote %s\n", o->output);
		rc = 0;
	}
	json_decref(root);
out_run:
	sdc_run_release(&run);
out_plan:
	sdc_plan_release(&plan);
	return rc;
}

/* Applies a key's options to a fresh plan entry; -1 with err when the key names what this build lacks. */
static int entry_from_key(struct sdc_plan *plan, const struct sdc_golden_entry *ge, struct sdc_plan_entry **out,
			  char *err, size_t errlen)
{
	const struct sdc_probe *p = sdc_probe_find(ge->probe);
	if (!p)
		FAIL("probe '%s' is not in this sdcscan", ge->probe);
	struct sdc_plan_entry *e = plan_for(plan, p, ge->variant);
	if (!e)
		FAIL("out of memory");
	const char *name;
	json_t *v;
	json_object_foreach(json_object_get(ge->key, "options"), name, v) {
		char msg[300];
		const struct sdc_option *op = sdc_opt_find(p->options, name);
		if (!op || op->neutral || !json_is_string(v))
			FAIL("%s/%s: option '%s' is not one this sdcscan keys goldens by", ge->probe, ge->variant, name);
		if (sdc_opt_parse(op, e->opts, json_string_value(v), msg, sizeof(msg)))
			FAIL("%s/%s: option %s: %s", ge->probe, ge->variant, name, msg);
	}
	e->common.iterations = SDC_WORK_DIGEST_ITERATIONS;
	if (ge->has_traj)
		e->common.iterations = ge->traj.steps;
	e->common.duration = 3600;
	*out = e;
	return 0;
}

static int verify_main(struct sdc_cmd *c)
{
	struct sdc_cli *cli = &c->cli;
	const char *path = c->args[0];
	struct sdc_golden g;
	char err[1024];
	if (sdc_golden_load(path, &g, err, sizeof(err))) {
		fprintf(stderr, "sdcscan golden: %s\n", err);
		return sdc_exit_code(SDC_UNKNOWN, cli->exit_style);
	}
	enum sdc_verdict worst = SDC_OK;
	int rc = sdc_exit_code(SDC_UNKNOWN, cli->exit_style);
	for (int i = 0; i < g.n; i++) {
		const struct sdc_golden_entry *ge = &g.entries[i];
		struct sdc_plan plan = { .seed_mode = SDC_SEED_FIXED };
		struct sdc_plan_entry *e;
		err[0] = '\0';
		sdc_strlcpy(plan.name, "golden", sizeof(plan.name));
		sdc_strlcpy(plan.source, path, sizeof(plan.source));
		if (!sdc_parse_u64(json_string_value(json_object_get(ge->key, "seed")), &plan.seed) ||
		    entry_from_key(&plan, ge, &e, err, sizeof(err))) {
			fprintf(stderr, "sdcscan golden: %s: entries[%d]: %s\n", path, i,
				err[0] ? err : "seed: expected an unsigned integer");
			sdc_plan_release(&plan);
			goto out;
		}
		struct sdc_run run;
		if (sdc_cli_start_run(c, &run, plan.seed)) {
			sdc_plan_release(&plan);
			goto out;
		}
		/* The key must be the one this host would compute under (a fast-class golden names its CPU). */
		struct sdc_variant variants[SDC_VARIANTS_MAX], *var = NULL;
		const int nv = e->probe->variants ? e->probe->variants(e->opts, variants, SDC_VARIANTS_MAX) : 0;
		for (int v = 0; v < nv && !var; v++)
			if (!strcmp(variants[v].name, ge->variant))
				var = &variants[v];
		if (!var) {
			fprintf(stderr, "sdcscan golden: %s: entries[%d]: %s has no variant '%s' with these options\n", path,
				i, ge->probe, ge->variant);
			sdc_run_release(&run);
			sdc_plan_release(&plan);
			goto out;
		}
		json_t *here = sdc_golden_key(e->probe, e->opts, var, plan.seed, sdc_run_cpu_model(&run));
		if (!json_equal(here, ge->key)) {
			char *a = json_dumps(ge->key, JSON_COMPACT | JSON_SORT_KEYS), *b = json_dumps(here, JSON_COMPACT | JSON_SORT_KEYS);
			fprintf(stderr, "sdcscan golden: %s: entries[%d] is keyed for another setup:\n  golden: %s\n  here:   %s\n",
				path, i, a, b);
			free(a), free(b);
			json_decref(here);
			sdc_run_release(&run);
			sdc_plan_release(&plan);
			goto out;
		}
		json_decref(here);
		sdc_golden_use(&g);
		if (execute(cli, &run, &plan, false)) {
			sdc_golden_use(NULL);
			sdc_run_release(&run);
			sdc_plan_release(&plan);
			goto out;
		}
		sdc_golden_use(NULL);
		if (!ge->has_traj) {
			/* The work digest of every device must be the recorded one. */
			for (int r = 0; r < run.nresults; r++) {
				const struct sdc_result *res = &run.results[r];
				if (strcmp(res->variant, ge->variant) || res->status != SDC_STATUS_OK)
					continue;
				if (!res->work_digest[0] || !strcmp(res->work_digest, ge->work_digest))
					continue;
				struct sdc_finding f = { .cls = SDC_FINDING_CORRUPTION, .device = res->device, .row = -1,
							 .col = -1 };
				sdc_strlcpy(f.probe, res->probe, sizeof(f.probe));
				sdc_strlcpy(f.variant, res->variant, sizeof(f.variant));
				sdc_strlcpy(f.kind, "golden-mismatch", sizeof(f.kind));
				snprintf(f.operation, sizeof(f.operation), "work digest of the first %d iterations",
					 ge->iterations);
				snprintf(f.expected, sizeof(f.expected), "%.32s", ge->work_digest);
				snprintf(f.actual, sizeof(f.actual), "%.32s", res->work_digest);
				snprintf(f.detail, sizeof(f.detail), "%s computes %s/%s differently from the golden %s",
					 run.devices[res->device].id, res->probe, res->variant, path);
				sdc_run_add_finding(&run, &f);
			}
		}
		const enum sdc_verdict v = sdc_run_verdict(&run);
		struct sdc_output out;
		sdc_output_init(&out, false, cli->quiet, cli->no_color, sdc_mpi.rank == 0);
		sdc_output_results(&out, &run, 0, run.nresults);
		if (!cli->quiet)
			printf("golden %s/%s: %s\n", ge->probe, ge->variant, sdc_verdict_name(v));
		if (v > worst)
			worst = v;
		sdc_run_release(&run);
		sdc_plan_release(&plan);
	}
	printf("%s: %s on this host as recorded in %s\n", sdc_verdict_name(worst),
	       worst == SDC_OK ? "every golden reproduced" : "golden results NOT reproduced", path);
	rc = sdc_exit_code(worst, cli->exit_style);
out:
	sdc_golden_free(&g);
	return rc;
}

static int show_main(struct sdc_cmd *c)
{
	struct sdc_cli *cli = &c->cli;
	const char *path = c->args[0];
	struct sdc_golden g;
	char err[1024];
	if (sdc_golden_load(path, &g, err, sizeof(err))) {
		fprintf(stderr, "sdcscan golden: %s\n", err);
		return sdc_exit_code(SDC_UNKNOWN, cli->exit_style);
	}
	json_t *rec = json_object_get(g.root, "recorded");
	printf("%s: %d entr%s, sha256 ok\nrecorded by %s on %s (%s) at %s\n", path, g.n, g.n == 1 ? "y" : "ies",
	       json_string_value(json_object_get(rec, "tool")), json_string_value(json_object_get(rec, "host")),
	       json_string_value(json_object_get(rec, "cpu")), json_string_value(json_object_get(rec, "date")));
	for (int i = 0; i < g.n; i++) {
		const struct sdc_golden_entry *e = &g.entries[i];
		char *key = json_dumps(json_object_get(e->key, "options"), JSON_COMPACT | JSON_SORT_KEYS);
		printf("\n%s/%s  class %s  seed %s\n  options %s\n", e->probe, e->variant,
		       json_string_value(json_object_get(e->key, "class")),
		       json_string_value(json_object_get(e->key, "seed")), key);
		free(key);
		if (json_object_get(e->key, "world"))
			printf("  data parallel over %" JSON_INTEGER_FORMAT " ranks\n",
			       json_integer_value(json_object_get(e->key, "world")));
		if (json_object_get(e->key, "cpu_model"))
			printf("  cpu %s, library %s\n", json_string_value(json_object_get(e->key, "cpu_model")),
			       json_string_value(json_object_get(e->key, "library")));
		if (!e->has_traj) {
			printf("  work digest of the first %d iterations: %s\n", e->iterations, e->work_digest);
			continue;
		}
		const struct sdc_golden_traj *t = &e->traj;
		float l0, l1;
		memcpy(&l0, &t->loss[0], 4);
		memcpy(&l1, &t->loss[t->steps - 1], 4);
		printf("  %d steps, loss %.6g -> %.6g; %d tensors hashed at %d checkpoints (every %d steps)\n", t->steps,
		       (double)l0, (double)l1, t->ntensors, t->ncheck, t->every);
		char hex[SDC_SHA256_HEX_LEN];
		sdc_hex(t->sha + ((size_t)(t->ncheck - 1) * t->ntensors) * SDC_SHA256_LEN, SDC_SHA256_LEN, hex);
		printf("  final %s sha256 %s\n", t->names[0], hex);
	}
	sdc_golden_free(&g);
	return 0;
}

static const struct sdc_command golden_record = {
	.name = "record",
	.summary = "record what a probe computes here (a known-good host) into a golden file",
	.options = record_options,
	.opts_size = sizeof(struct record_opts),
	.common = SDC_CF_CPUS | SDC_CF_SEED | SDC_CF_REPORTING,
	.flags = SDC_CMD_JOINS_MPI | SDC_CMD_BURNS,
	.fn = record_main,
};

static const struct sdc_command golden_verify = {
	.name = "verify",
	.summary = "verify that this host computes what a golden file recorded; exit 2 when it does not",
	.args = "FILE",
	.min_args = 1,
	.max_args = 1,
	.common = SDC_CF_CPUS | SDC_CF_REPORTING,
	.flags = SDC_CMD_JOINS_MPI | SDC_CMD_BURNS,
	.fn = verify_main,
};

static const struct sdc_command golden_show = {
	.name = "show",
	.summary = "print what a golden file holds",
	.args = "FILE",
	.min_args = 1,
	.max_args = 1,
	.fn = show_main,
};

static void golden_help(FILE *out)
{
	fprintf(out,
		"A golden file carries its own SHA-256 and its key (probe, variant, numerics class, seed, the\n"
		"options that change results; for the fast class also the device model and library). verify\n"
		"refuses a tampered, truncated or unknown file (exit 3) and exits 2 when this host computes otherwise.\n");
}

static const struct sdc_command *const golden_verbs[] = { &golden_record, &golden_verify, &golden_show, NULL };

const struct sdc_command sdc_command_golden = {
	.name = "golden",
	.summary = "record, verify and show golden results (what a known-good host computes)",
	.args = "a golden command",
	.subs = golden_verbs,
	.help = golden_help,
};
