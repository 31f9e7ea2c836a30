/* Golden files: parse, check, key, find, write (probe/golden_file.h). The command is commands/golden.c. */
#include "probe/golden_file.h"
#include "base/builtin.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/digest.h"
#include "base/message.h"
#include "base/files.h"
#include "base/json_load.h"
#include "run/facts_json.h"
#include "mpi/transport.h"
#include "sdc_config.h"

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
	if (!json_is_integer(ver)) {
		snprintf(err, errlen, "%s: golden file with no \"version\" number, this sdcscan reads version %d", origin,
			 SDC_GOLDEN_VERSION);
		goto fail;
	}
	if (json_integer_value(ver) != SDC_GOLDEN_VERSION) {
		snprintf(err, errlen, "%s: golden file version %" JSON_INTEGER_FORMAT ", this sdcscan reads version %d",
			 origin, json_integer_value(ver), SDC_GOLDEN_VERSION);
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
	json_t *root = sdc_json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
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
	size_t len;
	err[0] = '\0';
	/* A golden file holds a few trajectories; one past 64 MiB is not one, and is not read. */
	char *text = sdc_read_regular_file(path, 64u << 20, &len, "golden file", err, errlen);
	if (!text)
		return -1;
	const int rc = sdc_golden_parse(text, len, path, g, err, errlen);
	free(text);
	return rc;
}

/* ---- keys ---- */

const char *sdc_golden_class(const struct sdc_variant *v)
{
	return v->numerics == SDC_NUMERICS_FAST ? "fast" : "exact";
}

void *sdc_golden_key(const struct sdc_probe *p, const void *opts, const struct sdc_variant *variant, uint64_t seed,
		     const char *device_model)
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
	snprintf(s, sizeof(s), "%" PRIu64, sdc_variant_seed(variant, seed));
	const char *cls = sdc_golden_class(variant);
	json_t *key = json_pack("{s:s, s:s, s:s, s:s, s:o}", "probe", p->name, "variant", variant->name, "class", cls,
				"seed", s, "options", o);
	/* A data-parallel trajectory depends on how many ranks shared the batch. */
	if (variant->world_dependent)
		json_object_set_new(key, "world", json_integer(sdc_mpi.size));
	if (variant->numerics == SDC_NUMERICS_FAST) {
		/* Fast-class results depend on the device and the library: only the same pair compares. */
		char lib[192] = "unknown";
		if (p->library_id)
			p->library_id(variant, lib, sizeof(lib));
		json_object_set_new(key, "cpu_model", json_string(device_model ? device_model : "unknown"));
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

char *sdc_golden_in_use(char *origin, size_t len)
{
	if (!override || !override->root)
		return NULL;
	sdc_strlcpy(origin, override->origin, len);
	return json_dumps(override->root, JSON_COMPACT);
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

const struct sdc_golden_entry *sdc_golden_find_for(const struct sdc_probe *p, const void *opts,
						   const struct sdc_variant *variant, uint64_t seed,
						   const char *device_model, const char **origin)
{
	json_t *key = sdc_golden_key(p, opts, variant, seed, device_model);
	const struct sdc_golden_entry *e = sdc_golden_find(key, origin);
	json_decref(key);
	return e;
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

struct sdc_facts *sdc_golden_traj_facts(const struct sdc_golden_traj *t)
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
	return sdc_facts_of(j);
}

void *sdc_golden_file_json(void *entries, const struct sdc_run *run)
{
	char host[256] = "unknown", date[32];
	gethostname(host, sizeof(host) - 1);
	const time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_t *root = json_pack("{s:s, s:i, s:{s:s, s:s, s:s, s:s}, s:o}", "format", SDC_GOLDEN_FORMAT, "version",
				 SDC_GOLDEN_VERSION, "recorded", "tool", "sdcscan " SDC_VERSION, "host", host, "cpu",
				 sdc_run_cpu_model(run), "date", date, "entries", (json_t *)entries);
	char hex[SDC_SHA256_HEX_LEN];
	if (!root || sdc_json_content_sha256(root, hex)) {
		json_decref(root);
		return NULL;
	}
	json_object_set_new(root, "sha256", json_string(hex));
	return root;
}

int sdc_golden_record_here(const struct sdc_probe *p, const void *opts, const struct sdc_variant *variant, uint64_t seed,
			   const struct sdc_run *run, struct sdc_golden *out, char *err, size_t errlen)
{
	json_t *traj = p->golden_record ? sdc_facts_json(p->golden_record(opts, variant, seed, err, errlen)) : NULL;
	if (!traj) {
		if (!p->golden_record)
			snprintf(err, errlen, "%s records no trajectory", p->name);
		return -1;
	}
	json_t *key = sdc_golden_key(p, opts, variant, seed, sdc_run_cpu_model(run));
	json_t *entries = json_pack("[{s:o, s:{s:o}}]", "key", key, "result", "trajectory", traj);
	json_t *root = entries ? sdc_golden_file_json(entries, run) : NULL;
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

