/* Golden files: parse, check, key, find, record, verify, show (golden.h). */
#include "golden.h"
#include "base/builtin.h"

#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands/cli.h"
#include "base/digest.h"
#include "fleet.h"
#include "kernels/gemm_float.h"
#include "core/plan.h"
#include "core/profile.h"
#include "core/registry.h"
#include "core/runner.h"
#include "sdc_config.h"
#include "base/util.h"

extern const struct sdc_builtin_file sdc_builtin_goldens[];

static int unhex(const char *s, uint8_t *out, size_t n)
{
	if (strlen(s) != 2 * n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		if (sscanf(s + 2 * i, "%2x", &v) != 1 || !strchr("0123456789abcdef", s[2 * i]) ||
		    !strchr("0123456789abcdef", s[2 * i + 1]))
			return -1;
		out[i] = (uint8_t)v;
	}
	return 0;
}

static int hex_u64(const char *s, int digits, uint64_t *v)
{
	uint8_t b[8];
	if (unhex(s, b, (size_t)digits / 2))
		return -1;
	*v = 0;
	for (int i = 0; i < digits / 2; i++)
		*v = *v << 8 | b[i];
	return 0;
}

/* ---- parsing ---- */

#define FAIL(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

static int parse_hex_array(json_t *a, const char *what, int n, int digits, uint64_t *out, char *err,
			   size_t errlen)
{
	if (!json_is_array(a) || (int)json_array_size(a) != n)
		FAIL("trajectory.%s: expected an array of %d hex strings", what, n);
	for (int i = 0; i < n; i++) {
		const char *s = json_string_value(json_array_get(a, (size_t)i));
		if (!s || hex_u64(s, digits, &out[i]))
			FAIL("trajectory.%s[%d]: expected %d lowercase hex digits", what, i, digits);
	}
	return 0;
}

static int parse_traj(json_t *t, struct sdc_golden_traj *g, char *err, size_t errlen)
{
	json_t *steps = json_object_get(t, "steps"), *every = json_object_get(t, "checkpoint_every");
	json_t *checks = json_object_get(t, "checkpoints");
	if (!json_is_integer(steps) || json_integer_value(steps) < 1 || json_integer_value(steps) > 1000000)
		FAIL("trajectory.steps: expected an integer from 1 to 1000000");
	if (!json_is_integer(every) || json_integer_value(every) < 1)
		FAIL("trajectory.checkpoint_every: expected a positive integer");
	g->steps = (int)json_integer_value(steps);
	g->every = (int)json_integer_value(every);
	uint64_t *tmp = calloc((size_t)g->steps, sizeof(uint64_t));
	g->loss = calloc((size_t)g->steps, sizeof(uint32_t));
	g->entry = calloc((size_t)g->steps, sizeof(uint64_t));
	g->grads = calloc((size_t)g->steps, sizeof(uint64_t));
	if (!tmp || !g->loss || !g->entry || !g->grads) {
		free(tmp);
		FAIL("out of memory");
	}
	int rc = parse_hex_array(json_object_get(t, "loss"), "loss", g->steps, 8, tmp, err, errlen) ||
		 parse_hex_array(json_object_get(t, "entry"), "entry", g->steps, 16, g->entry, err, errlen) ||
		 parse_hex_array(json_object_get(t, "grads"), "grads", g->steps, 16, g->grads, err, errlen);
	for (int i = 0; !rc && i < g->steps; i++)
		g->loss[i] = (uint32_t)tmp[i];
	free(tmp);
	if (rc)
		return -1;
	/* Data parallel: every rank's local gradients, so a rank whose gradient went wrong names itself. */
	json_t *rg = json_object_get(t, "rank_grads");
	if (rg) {
		if (!json_is_array(rg) || json_array_size(rg) < 2 || json_array_size(rg) > 4096)
			FAIL("trajectory.rank_grads: expected an array of 2 to 4096 per-rank arrays");
		g->nranks = (int)json_array_size(rg);
		g->rank_grads = calloc((size_t)g->nranks * g->steps, sizeof(uint64_t));
		if (!g->rank_grads)
			FAIL("out of memory");
		for (int r = 0; r < g->nranks; r++) {
			char what[32];
			snprintf(what, sizeof(what), "rank_grads[%d]", r);
			if (parse_hex_array(json_array_get(rg, (size_t)r), what, g->steps, 16,
					    g->rank_grads + (size_t)r * g->steps, err, errlen))
				return -1;
		}
	}
	if (!json_is_array(checks) || json_array_size(checks) < 1)
		FAIL("trajectory.checkpoints: expected a non-empty array");
	g->ncheck = (int)json_array_size(checks);
	json_t *first = json_object_get(json_array_get(checks, 0), "tensors");
	if (!json_is_array(first) || json_array_size(first) < 1)
		FAIL("trajectory.checkpoints[0].tensors: expected a non-empty array of [name, sha256]");
	g->ntensors = (int)json_array_size(first);
	g->check_step = calloc((size_t)g->ncheck, sizeof(int));
	g->names = calloc((size_t)g->ntensors, sizeof(*g->names));
	g->sha = calloc((size_t)g->ncheck * g->ntensors, SDC_SHA256_LEN);
	if (!g->check_step || !g->names || !g->sha)
		FAIL("out of memory");
	for (int c = 0; c < g->ncheck; c++) {
		json_t *ck = json_array_get(checks, (size_t)c), *st = json_object_get(ck, "step");
		json_t *ts = json_object_get(ck, "tensors");
		if (!json_is_integer(st) || json_integer_value(st) < 1 || json_integer_value(st) > g->steps ||
		    (c && json_integer_value(st) <= g->check_step[c - 1]))
			FAIL("trajectory.checkpoints[%d].step: expected an increasing step from 1 to %d", c, g->steps);
		g->check_step[c] = (int)json_integer_value(st);
		if (!json_is_array(ts) || (int)json_array_size(ts) != g->ntensors)
			FAIL("trajectory.checkpoints[%d].tensors: expected %d [name, sha256] pairs", c, g->ntensors);
		for (int i = 0; i < g->ntensors; i++) {
			json_t *pair = json_array_get(ts, (size_t)i);
			const char *name = json_string_value(json_array_get(pair, 0));
			const char *sha = json_string_value(json_array_get(pair, 1));
			if (!name || !sha || json_array_size(pair) != 2 || strlen(name) >= sizeof(g->names[0]) ||
			    unhex(sha, g->sha + ((size_t)c * g->ntensors + i) * SDC_SHA256_LEN, SDC_SHA256_LEN))
				FAIL("trajectory.checkpoints[%d].tensors[%d]: expected [name, 64 hex digits]", c, i);
			if (c == 0)
				sdc_strlcpy(g->names[i], name, sizeof(g->names[i]));
			else if (strcmp(g->names[i], name))
				FAIL("trajectory.checkpoints[%d].tensors[%d]: '%s' where checkpoint 0 has '%s'", c, i, name,
				     g->names[i]);
		}
	}
	return 0;
}

static void free_traj(struct sdc_golden_traj *t)
{
	free(t->loss);
	free(t->entry);
	free(t->grads);
	free(t->rank_grads);
	free(t->check_step);
	free(t->names);
	free(t->sha);
	memset(t, 0, sizeof(*t));
}

static int parse_entry(json_t *e, struct sdc_golden_entry *g, char *err, size_t errlen)
{
	json_t *key = json_object_get(e, "key"), *res = json_object_get(e, "result");
	if (!json_is_object(key) || !json_is_object(res))
		FAIL("expected {\"key\": {...}, \"result\": {...}}");
	const char *probe = json_string_value(json_object_get(key, "probe"));
	const char *variant = json_string_value(json_object_get(key, "variant"));
	if (!probe || !variant || strlen(probe) >= sizeof(g->probe) || strlen(variant) >= sizeof(g->variant))
		FAIL("key: expected \"probe\" and \"variant\" strings");
	if (!json_is_object(json_object_get(key, "options")) || !json_string_value(json_object_get(key, "seed")) ||
	    !json_string_value(json_object_get(key, "class")))
		FAIL("key: expected \"class\", \"seed\" and \"options\"");
	g->key = key;
	sdc_strlcpy(g->probe, probe, sizeof(g->probe));
	sdc_strlcpy(g->variant, variant, sizeof(g->variant));
	json_t *traj = json_object_get(res, "trajectory");
	if (traj) {
		g->has_traj = true;
		return parse_traj(traj, &g->traj, err, errlen);
	}
	const char *wd = json_string_value(json_object_get(res, "work_digest"));
	json_t *it = json_object_get(res, "iterations");
	uint8_t tmp[SDC_SHA256_LEN];
	if (!wd || unhex(wd, tmp, sizeof(tmp)) || !json_is_integer(it) || json_integer_value(it) < 1)
		FAIL("result: expected a \"trajectory\", or a \"work_digest\" (64 hex digits) and \"iterations\"");
	sdc_strlcpy(g->work_digest, wd, sizeof(g->work_digest));
	g->iterations = (int)json_integer_value(it);
	return 0;
}

void sdc_golden_free(struct sdc_golden *g)
{
	for (int i = 0; i < g->n; i++)
		free_traj(&g->entries[i].traj);
	free(g->entries);
	json_decref(g->root);
	memset(g, 0, sizeof(*g));
}

static int parse_root(json_t *root, const char *origin, struct sdc_golden *g, char *err, size_t errlen)
{
	g->root = root;
	char msg[400], want[SDC_SHA256_HEX_LEN];
	const char *fmt = json_string_value(json_object_get(root, "format"));
	json_t *ver = json_object_get(root, "version"), *entries = json_object_get(root, "entries");
	const char *sha = json_string_value(json_object_get(root, "sha256"));
	if (!json_is_object(root) || !fmt || strcmp(fmt, SDC_GOLDEN_FORMAT)) {
		snprintf(err, errlen, "%s: not a golden file (\"format\" is not \"%s\")", origin, SDC_GOLDEN_FORMAT);
		goto fail;
	}
	if (!json_is_integer(ver) || json_integer_value(ver) != SDC_GOLDEN_VERSION) {
		snprintf(err, errlen, "%s: golden file version %s, this sdcscan reads version %d", origin,
			 json_is_integer(ver) ? "other" : "missing", SDC_GOLDEN_VERSION);
		goto fail;
	}
	if (!sha) {
		snprintf(err, errlen, "%s: no \"sha256\": refusing a golden file that cannot be checked", origin);
		goto fail;
	}
	if (sdc_json_content_sha256(root, want)) {
		snprintf(err, errlen, "%s: cannot compute the file's digest", origin);
		goto fail;
	}
	if (strcmp(sha, want)) {
		snprintf(err, errlen, "%s: sha256 mismatch (the file says %.16s..., its content hashes to %.16s...): "
			 "the file was changed or damaged after it was recorded", origin, sha, want);
		goto fail;
	}
	if (!json_is_array(entries) || json_array_size(entries) < 1) {
		snprintf(err, errlen, "%s: \"entries\": expected a non-empty array", origin);
		goto fail;
	}
	g->n = (int)json_array_size(entries);
	g->entries = calloc((size_t)g->n, sizeof(*g->entries));
	if (!g->entries) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	for (int i = 0; i < g->n; i++) {
		if (parse_entry(json_array_get(entries, (size_t)i), &g->entries[i], msg, sizeof(msg))) {
			snprintf(err, errlen, "%s: entries[%d]: %s", origin, i, msg);
			goto fail;
		}
	}
	return 0;
fail:
	sdc_golden_free(g);
	return -1;
}

int sdc_golden_parse(const char *text, size_t len, const char *origin, struct sdc_golden *g, char *err,
		     size_t errlen)
{
	memset(g, 0, sizeof(*g));
	sdc_strlcpy(g->origin, origin, sizeof(g->origin));
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		snprintf(err, errlen, "%s:%d:%d: not a golden file: %s", origin, je.line, je.column, je.text);
		return -1;
	}
	return parse_root(root, origin, g, err, errlen);
}

int sdc_golden_load(const char *path, struct sdc_golden *g, char *err, size_t errlen)
{
	memset(g, 0, sizeof(*g));
	sdc_strlcpy(g->origin, path, sizeof(g->origin));
	json_error_t je;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!root && je.line < 0) {
		snprintf(err, errlen, "%s", je.text); /* cannot open: jansson names the file and the reason */
		return -1;
	}
	if (!root) {
		snprintf(err, errlen, "%s:%d:%d: not a golden file: %s", path, je.line, je.column, je.text);
		return -1;
	}
	return parse_root(root, path, g, err, errlen);
}

/* ---- keys ---- */

const char *sdc_golden_class(const char *variant)
{
	return strstr(variant, "fast") ? "fast" : "exact";
}

void *sdc_golden_key(const struct sdc_probe *p, const void *opts, const char *variant, uint64_t seed,
		     const char *cpu_model)
{
	json_t *o = json_object();
	for (const struct sdc_option *op = p->options; op && op->name; op++) {
		if (op->neutral)
			continue;
		char v[SDC_OPT_STR_MAX + 8];
		sdc_opt_format(op, opts, v, sizeof(v));
		json_object_set_new(o, op->name, json_string(v));
	}
	char s[24];
	snprintf(s, sizeof(s), "%" PRIu64, p->data_seed ? p->data_seed(opts, seed) : seed);
	const char *cls = sdc_golden_class(variant);
	json_t *key = json_pack("{s:s, s:s, s:s, s:s, s:o}", "probe", p->name, "variant", variant, "class", cls, "seed",
				s, "options", o);
	/* A data-parallel trajectory depends on how many ranks shared the batch. */
	if (strstr(variant, "-dp"))
		json_object_set_new(key, "world", json_integer(sdc_fleet.size));
	if (!strcmp(cls, "fast")) {
		/* Fast-class results depend on the CPU and the library: only the same pair compares. */
		struct sdc_blas_info bi;
		sdc_blas_info(&bi);
		char lib[192];
		snprintf(lib, sizeof(lib), "%s %s (%s)", bi.library, bi.version, bi.corename);
		json_object_set_new(key, "cpu_model", json_string(cpu_model ? cpu_model : "unknown"));
		json_object_set_new(key, "library", json_string(lib));
	}
	return key;
}

/* ---- lookup ---- */

static const struct sdc_golden *override;
static struct sdc_golden *builtin;
static int nbuiltin = -1;

void sdc_golden_use(const struct sdc_golden *g)
{
	override = g;
}

/* Parses the compiled-in goldens once (setup runs on the main thread). A bad one is a build bug. */
static void load_builtin(void)
{
	if (nbuiltin >= 0)
		return;
	int n = 0;
	while (sdc_builtin_goldens[n].name)
		n++;
	builtin = calloc((size_t)n + 1, sizeof(*builtin));
	nbuiltin = 0;
	for (int i = 0; i < n && builtin; i++) {
		char err[600], origin[128];
		snprintf(origin, sizeof(origin), "built-in golden %s", sdc_builtin_goldens[i].name);
		const char *text = sdc_builtin_goldens[i].text;
		if (sdc_golden_parse(text, strlen(text), origin, &builtin[nbuiltin], err, sizeof(err)))
			sdc_error("internal: %s", err);
		else
			nbuiltin++;
	}
}

static const struct sdc_golden_entry *find_in(const struct sdc_golden *g, const json_t *key)
{
	for (int i = 0; g && i < g->n; i++)
		if (json_equal(g->entries[i].key, (json_t *)key))
			return &g->entries[i];
	return NULL;
}

const struct sdc_golden_entry *sdc_golden_find(const void *key, const char **origin)
{
	const struct sdc_golden_entry *e = find_in(override, key);
	if (e) {
		*origin = override->origin;
		return e;
	}
	load_builtin();
	for (int i = 0; i < nbuiltin; i++)
		if ((e = find_in(&builtin[i], key))) {
			*origin = builtin[i].origin;
			return e;
		}
	return NULL;
}

/* ---- writing ---- */

static json_t *hex_array(const void *v, int n, int bytes)
{
	json_t *a = json_array();
	for (int i = 0; i < n; i++) {
		char s[20];
		if (bytes == 4)
			snprintf(s, sizeof(s), "%08" PRIx32, ((const uint32_t *)v)[i]);
		else
			snprintf(s, sizeof(s), "%016" PRIx64, ((const uint64_t *)v)[i]);
		json_array_append_new(a, json_string(s));
	}
	return a;
}

void *sdc_golden_traj_json(const struct sdc_golden_traj *t)
{
	json_t *checks = json_array();
	for (int c = 0; c < t->ncheck; c++) {
		json_t *ts = json_array();
		for (int i = 0; i < t->ntensors; i++) {
			char hex[SDC_SHA256_HEX_LEN];
			sdc_hex(t->sha + ((size_t)c * t->ntensors + i) * SDC_SHA256_LEN, SDC_SHA256_LEN, hex);
			json_array_append_new(ts, json_pack("[s, s]", t->names[i], hex));
		}
		json_array_append_new(checks, json_pack("{s:i, s:o}", "step", t->check_step[c], "tensors", ts));
	}
	json_t *j = json_pack("{s:i, s:i, s:o, s:o, s:o, s:o}", "steps", t->steps, "checkpoint_every", t->every, "loss",
			      hex_array(t->loss, t->steps, 4), "entry", hex_array(t->entry, t->steps, 8), "grads",
			      hex_array(t->grads, t->steps, 8), "checkpoints", checks);
	if (j && t->nranks) {
		json_t *rg = json_array();
		for (int r = 0; r < t->nranks; r++)
			json_array_append_new(rg, hex_array(t->rank_grads + (size_t)r * t->steps, t->steps, 8));
		json_object_set_new(j, "rank_grads", rg);
	}
	return j;
}

static json_t *golden_file(json_t *entries, const struct sdc_run *run)
{
	char host[256] = "unknown", date[32];
	gethostname(host, sizeof(host) - 1);
	const time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_t *root = json_pack("{s:s, s:i, s:{s:s, s:s, s:s, s:s}, s:o}", "format", SDC_GOLDEN_FORMAT, "version",
				 SDC_GOLDEN_VERSION, "recorded", "tool", "sdcscan " SDC_VERSION, "host", host, "cpu",
				 run->ndevices ? run->devices[0].model : "unknown", "date", date, "entries", entries);
	char hex[SDC_SHA256_HEX_LEN];
	if (!root || sdc_json_content_sha256(root, hex)) {
		json_decref(root);
		return NULL;
	}
	json_object_set_new(root, "sha256", json_string(hex));
	return root;
}

/* ---- the command ---- */

int sdc_golden_record_here(const struct sdc_probe *p, const void *opts, const char *variant, uint64_t seed,
			   const struct sdc_run *run, struct sdc_golden *out, char *err, size_t errlen)
{
	json_t *traj = p->golden_record ? p->golden_record(opts, variant, seed, err, errlen) : NULL;
	if (!traj) {
		if (!p->golden_record)
			snprintf(err, errlen, "%s records no trajectory", p->name);
		return -1;
	}
	json_t *key = sdc_golden_key(p, opts, variant, seed, run->ndevices ? run->devices[0].model : NULL);
	json_t *entries = json_pack("[{s:o, s:{s:o}}]", "key", key, "result", "trajectory", traj);
	json_t *root = entries ? golden_file(entries, run) : NULL;
	char *text = root ? json_dumps(root, JSON_COMPACT) : NULL;
	json_decref(root);
	if (!text) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	const int rc = sdc_golden_parse(text, strlen(text), "a golden recorded here", out, err, errlen);
	free(text);
	return rc;
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sdcscan golden record --probe NAME --output FILE [OPTIONS]\n"
		"       sdcscan golden verify FILE [OPTIONS]\n"
		"       sdcscan golden show FILE\n"
		"Record what a probe computes on a known-good host; verify that this host computes the same.\n\n"
		"  -P, --probe NAME         record: the probe (every variant its options select)\n"
		"  -p, --profile NAME|FILE  record: take the probe's options and seed from this profile\n"
		"  -s, --set PROBE.KEY=VAL  record: set a probe option (repeatable)\n"
		"  -o, --output FILE        record: where to write the golden file (atomically)\n"
		"  -V, --variant NAME       record: only this variant (e.g. xfmr-dp, under mpirun)\n"
		"  -S, --seed N             record: data seed (default: the profile's, else 1)\n"
		"  -c, --cpus LIST          CPUs to run on (record: the first; verify: each)\n"
		"  -e, --exit-codes STYLE   nagios or npd\n"
		"  -q, --quiet              print only the verdict line\n"
		"      --no-color           no colour even on a terminal\n"
		"  -h, --help               this help\n\n"
		"A golden file carries its own SHA-256 and its key (probe, variant, numerics class, seed, the\n"
		"options that change results; for the fast class also the CPU model and BLAS). verify refuses a\n"
		"tampered, truncated or unknown file (exit 3) and exits 2 when this host computes otherwise.\n");
}

/* Runs plan on run's devices without printing per-probe lines unless asked. */
static int execute(struct sdc_cli *cli, struct sdc_run *run, struct sdc_plan *plan, bool show)
{
	struct sdc_output out;
	sdc_output_init(&out, false, !show || cli->quiet, cli->no_color);
	if (show)
		sdc_output_header(&out, run, plan);
	sdc_runner_install_signals();
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

static int cmd_record(struct sdc_cli *cli, const char *probe_name, const char *profile, char **sets, int nsets,
		      const char *output, const char *only, int argc, char **argv)
{
	const struct sdc_probe *p = probe_name ? sdc_probe_find(probe_name) : NULL;
	char err[1024], names[256];
	if (!probe_name)
		return sdc_cli_bad(cli, "record: --probe NAME is required");
	if (!p) {
		sdc_probe_names(names, sizeof(names));
		return sdc_cli_bad(cli, "--probe '%s': unknown probe (valid probes: %s)", probe_name, names);
	}
	if (!output)
		return sdc_cli_bad(cli, "record: --output FILE is required");
	struct sdc_plan plan = { .seed_mode = SDC_SEED_FIXED, .seed = 1 };
	if (profile && sdc_profile_load(profile, &plan, err, sizeof(err))) {
		fprintf(stderr, "sdcscan golden: %s\n", err);
		return sdc_exit_code(SDC_UNKNOWN, cli->exit_style);
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
	int rc = sdc_exit_code(SDC_UNKNOWN, cli->exit_style);
	struct sdc_plan_entry *e = plan_for(&plan, p, NULL);
	if (!e)
		goto out_plan;
	for (int i = 0; i < nsets; i++)
		if (sdc_plan_set(&plan, sets[i]))
			goto out_plan;
	/* A probe that fixes its own data seed (minitrain's seed option) needs no fixed run seed. */
	const bool own_seed = p->data_seed && p->data_seed(e->opts, 0) != 0;
	if (plan.seed_mode != SDC_SEED_FIXED && !cli->have_seed && !own_seed) {
		sdc_cli_bad(cli, "record: the profile's seed is not fixed; give --seed N");
		goto out_plan;
	}
	struct sdc_run run;
	if (sdc_cli_prepare_run(cli, &run, &plan, argc, argv))
		goto out_plan;
	/* One device: a golden is what one healthy device computes. */
	run.ndevices = 1;
	const char *variants[16];
	int nv = p->variants ? p->variants(e->opts, variants, 16) : 0;
	if (nv <= 0)
		variants[0] = "default", nv = 1;
	if (only) {
		int keep = 0;
		for (int v = 0; v < nv; v++)
			if (!strcmp(variants[v], only))
				variants[keep++] = variants[v];
		if (!keep) {
			sdc_cli_bad(cli, "--variant '%s': not a variant these options select", only);
			goto out_run;
		}
		nv = keep;
		sdc_strlcpy(e->only_variant, only, sizeof(e->only_variant));
	}
	json_t *entries = json_array();
	if (!p->golden_record) {
		e->common.iterations = SDC_WORK_DIGEST_ITERATIONS;
		e->common.duration = 3600;
		if (execute(cli, &run, &plan, false))
			goto out_run;
	}
	for (int v = 0; v < nv; v++) {
		json_t *key = sdc_golden_key(p, e->opts, variants[v], run.seed, run.devices[0].model), *res = NULL;
		if (p->golden_record) {
			json_t *traj = p->golden_record(e->opts, variants[v], run.seed, err, sizeof(err));
			if (!traj) {
				fprintf(stderr, "sdcscan golden: %s/%s: %s\n", p->name, variants[v], err);
				json_decref(key);
				json_decref(entries);
				goto out_run;
			}
			res = json_pack("{s:o}", "trajectory", traj);
		} else {
			const struct sdc_result *r = NULL;
			for (int i = 0; i < run.nresults; i++)
				if (!strcmp(run.results[i].variant, variants[v]))
					r = &run.results[i];
			if (!r || r->status != SDC_STATUS_OK || !r->work_digest[0]) {
				fprintf(stderr, "sdcscan golden: %s/%s did not run cleanly here (%s): nothing recorded\n",
					p->name, variants[v], r ? sdc_status_name(r->status) : "no result");
				json_decref(key);
				json_decref(entries);
				goto out_run;
			}
			res = json_pack("{s:s, s:i}", "work_digest", r->work_digest, "iterations",
					SDC_WORK_DIGEST_ITERATIONS);
		}
		json_array_append_new(entries, json_pack("{s:o, s:o}", "key", key, "result", res));
		if (!cli->quiet)
			printf("recorded %s/%s (seed %" PRIu64 ")\n", p->name, variants[v],
			       p->data_seed ? p->data_seed(e->opts, run.seed) : run.seed);
	}
	json_t *root = golden_file(entries, &run);
	if (root && sdc_fleet.rank != 0) {
		rc = 0; /* under mpirun every rank computed its part; rank 0 writes the file */
	} else if (root && !sdc_cli_write_json(output, root, "sdcscan golden")) {
		if (!cli->quiet)
			printf("wrote %s\n", output);
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
	e->common.iterations = p->golden_iterations ? p->golden_iterations : SDC_WORK_DIGEST_ITERATIONS;
	if (ge->has_traj)
		e->common.iterations = ge->traj.steps;
	e->common.duration = 3600;
	*out = e;
	return 0;
}

static int cmd_verify(struct sdc_cli *cli, const char *path, int argc, char **argv)
{
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
		cli->have_seed = true, cli->seed = plan.seed;
		if (sdc_cli_prepare_run(cli, &run, &plan, argc, argv)) {
			sdc_plan_release(&plan);
			goto out;
		}
		/* The key must be the one this host would compute under (a fast-class golden names its CPU). */
		json_t *here = sdc_golden_key(e->probe, e->opts, ge->variant, plan.seed, run.devices[0].model);
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
		sdc_output_init(&out, false, cli->quiet, cli->no_color);
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

static int cmd_show(struct sdc_cli *cli, const char *path)
{
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

int sdc_cmd_golden(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "probe", required_argument, NULL, 'P' },  { "profile", required_argument, NULL, 'p' },
		{ "set", required_argument, NULL, 's' },    { "output", required_argument, NULL, 'o' },
		{ "seed", required_argument, NULL, 'S' },   { "cpus", required_argument, NULL, 'c' },
		{ "variant", required_argument, NULL, 'V' },
		{ "exit-codes", required_argument, NULL, 'e' }, { "quiet", no_argument, NULL, 'q' },
		{ "no-color", no_argument, NULL, 'C' },     { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sdc_cli cli = { .command = "golden" };
	const char *probe = NULL, *profile = NULL, *output = NULL, *variant = NULL;
	char **sets = calloc((size_t)argc + 1, sizeof(char *));
	int nsets = 0, c, rc;
	if (!sets)
		return sdc_exit_code(SDC_UNKNOWN, cli.exit_style);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":P:p:s:o:S:c:V:e:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'V': variant = optarg; break;
		case 'P': probe = optarg; break;
		case 'p': profile = optarg; break;
		case 's': sets[nsets++] = optarg; break;
		case 'o': output = optarg; break;
		case 'h':
			usage(stdout);
			free(sets);
			return 0;
		default:
			if (sdc_cli_default(&cli, c, argv)) {
				free(sets);
				return sdc_exit_code(SDC_UNKNOWN, cli.exit_style);
			}
		}
	}
	sdc_set_quiet(cli.quiet);
	const char *sub = optind < argc ? argv[optind] : NULL;
	const int rest = argc - optind - 1;
	if (!sub) {
		rc = sdc_cli_bad(&cli, "expected record, verify FILE or show FILE");
	} else if (!strcmp(sub, "record")) {
		rc = rest ? sdc_cli_bad(&cli, "record: unexpected argument '%s'", argv[optind + 1])
			  : cmd_record(&cli, probe, profile, sets, nsets, output, variant, argc, argv);
	} else if (!strcmp(sub, "verify") || !strcmp(sub, "show")) {
		if (rest != 1)
			rc = sdc_cli_bad(&cli, "%s: expected exactly one golden FILE", sub);
		else if (probe || profile || nsets || output || variant)
			rc = sdc_cli_bad(&cli, "%s: --probe, --profile, --set and --output are for record only", sub);
		else
			rc = !strcmp(sub, "show") ? cmd_show(&cli, argv[optind + 1]) : cmd_verify(&cli, argv[optind + 1], argc, argv);
	} else {
		rc = sdc_cli_bad(&cli, "'%s': unknown golden command (expected record, verify or show)", sub);
	}
	free(sets);
	return rc;
}
