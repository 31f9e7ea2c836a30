/* YAML profiles read with libyaml (runner/profile.h). */
#include "runner/profile.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "runner/registry.h"
#include "base/message.h"
#include "base/parse.h"
#include "base/files.h"

/* A small document tree that keeps each node's position for error messages. */
enum node_type { NODE_SCALAR, NODE_SEQ, NODE_MAP };

struct node {
	enum node_type type;
	int line, col; /* 1-based */
	char *value;   /* scalars */
	bool plain;    /* unquoted scalar */
	struct node **items; /* sequence items; mapping keys and values alternating */
	int n, cap;
};

static void node_free(struct node *nd)
{
	if (!nd)
		return;
	for (int i = 0; i < nd->n; i++)
		node_free(nd->items[i]);
	free(nd->items);
	free(nd->value);
	free(nd);
}

struct parse {
	const char *file;
	char *err;
	size_t errlen;
};

static int fail(struct parse *ps, int line, int col, const char *fmt, ...) SDC_PRINTF(4, 5);
static int fail(struct parse *ps, int line, int col, const char *fmt, ...)
{
	char msg[900];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(ps->err, ps->errlen, "%s:%d:%d: %s", ps->file, line, col, msg);
	return -1;
}

static struct node *node_new(enum node_type t, const yaml_mark_t *m)
{
	struct node *nd = calloc(1, sizeof(*nd));
	if (nd) {
		nd->type = t;
		nd->line = (int)m->line + 1;
		nd->col = (int)m->column + 1;
	}
	return nd;
}

static int node_append(struct parse *ps, struct node *parent, struct node *child)
{
	if (parent->type == NODE_MAP && parent->n % 2 == 0) {
		/* child is a key: keys are scalars and must be unique. */
		if (child->type != NODE_SCALAR)
			return fail(ps, child->line, child->col, "mapping keys must be plain names");
		for (int i = 0; i < parent->n; i += 2)
			if (!strcmp(parent->items[i]->value, child->value))
				return fail(ps, child->line, child->col, "duplicate key '%s' (first given at line %d)",
					    child->value, parent->items[i]->line);
	}
	if (parent->n == parent->cap) {
		int ncap = parent->cap ? 2 * parent->cap : 8;
		struct node **p = realloc(parent->items, (size_t)ncap * sizeof(*p));
		if (!p)
			return fail(ps, child->line, child->col, "out of memory");
		parent->items = p;
		parent->cap = ncap;
	}
	parent->items[parent->n++] = child;
	return 0;
}

#define MAX_DEPTH 16

static int build_tree(struct parse *ps, const char *text, size_t len, struct node **root)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	struct node *stack[MAX_DEPTH];
	int depth = 0, docs = 0, rc = -1;
	*root = NULL;

	if (!yaml_parser_initialize(&parser))
		return fail(ps, 1, 1, "cannot initialise the YAML parser");
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	for (;;) {
		if (!yaml_parser_parse(&parser, &ev)) {
			fail(ps, (int)parser.problem_mark.line + 1, (int)parser.problem_mark.column + 1,
			     "not valid YAML: %s%s%s", parser.problem ? parser.problem : "syntax error",
			     parser.context ? " " : "", parser.context ? parser.context : "");
			goto out;
		}
		struct node *nd = NULL;
		const yaml_mark_t *m = &ev.start_mark;
		int line = (int)m->line + 1, col = (int)m->column + 1;
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			yaml_event_delete(&ev);
			rc = 0;
			goto out;
		case YAML_DOCUMENT_START_EVENT:
			if (++docs > 1) {
				fail(ps, line, col, "more than one YAML document (expected one profile)");
				goto out_event;
			}
			break;
		case YAML_ALIAS_EVENT:
			fail(ps, line, col, "YAML aliases are not supported in profiles");
			goto out_event;
		case YAML_SCALAR_EVENT:
			if (ev.data.scalar.anchor || (ev.data.scalar.tag && !ev.data.scalar.plain_implicit &&
						      !ev.data.scalar.quoted_implicit)) {
				fail(ps, line, col, "YAML anchors and tags are not supported in profiles");
				goto out_event;
			}
			nd = node_new(NODE_SCALAR, m);
			if (nd) {
				nd->value = strdup((const char *)ev.data.scalar.value);
				nd->plain = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
			}
			break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if ((ev.type == YAML_SEQUENCE_START_EVENT ? ev.data.sequence_start.anchor
								  : ev.data.mapping_start.anchor)) {
				fail(ps, line, col, "YAML anchors are not supported in profiles");
				goto out_event;
			}
			nd = node_new(ev.type == YAML_SEQUENCE_START_EVENT ? NODE_SEQ : NODE_MAP, m);
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		default:
			break;
		}
		if (ev.type == YAML_SCALAR_EVENT || ev.type == YAML_SEQUENCE_START_EVENT ||
		    ev.type == YAML_MAPPING_START_EVENT) {
			if (!nd || (nd->type == NODE_SCALAR && !nd->value)) {
				node_free(nd);
				fail(ps, line, col, "out of memory");
				goto out_event;
			}
			if (depth == 0) {
				*root = nd;
			} else if (node_append(ps, stack[depth - 1], nd)) {
				node_free(nd);
				goto out_event;
			}
			if (nd->type != NODE_SCALAR) {
				if (depth == MAX_DEPTH) {
					fail(ps, line, col, "nested too deeply");
					goto out_event;
				}
				stack[depth++] = nd;
			}
		}
		yaml_event_delete(&ev);
	}
out_event:
	yaml_event_delete(&ev);
out:
	yaml_parser_delete(&parser);
	if (rc) {
		node_free(*root);
		*root = NULL;
	}
	return rc;
}

static const char *kind_name(const struct node *nd)
{
	return nd->type == NODE_MAP ? "a mapping" : nd->type == NODE_SEQ ? "a list" : "a value";
}

static bool is_null(const struct node *nd)
{
	return nd->type == NODE_SCALAR && nd->plain &&
	       (!nd->value[0] || !strcmp(nd->value, "~") || !strcmp(nd->value, "null"));
}

/* A probe option's value: a scalar, or a list of scalars (for list options). */
static int option_text(struct parse *ps, const struct node *v, const char *key, char *buf, size_t len)
{
	if (v->type == NODE_MAP)
		return fail(ps, v->line, v->col, "%s: expected a value, found a mapping", key);
	if (v->type == NODE_SCALAR) {
		if (is_null(v))
			return fail(ps, v->line, v->col, "%s: missing value", key);
		if (strlen(v->value) >= len)
			return fail(ps, v->line, v->col, "%s: value too long", key);
		sdc_strlcpy(buf, v->value, len);
		return 0;
	}
	size_t used = 0;
	buf[0] = '\0';
	if (!v->n)
		return fail(ps, v->line, v->col, "%s: empty list", key);
	for (int i = 0; i < v->n; i++) {
		const struct node *it = v->items[i];
		if (it->type != NODE_SCALAR || is_null(it) || strchr(it->value, ','))
			return fail(ps, it->line, it->col, "%s: list items must be single values", key);
		int w = snprintf(buf + used, len - used, "%s%s", i ? "," : "", it->value);
		if (w < 0 || (size_t)w >= len - used)
			return fail(ps, v->line, v->col, "%s: list too long", key);
		used += (size_t)w;
	}
	return 0;
}

static int load_probe(struct parse *ps, struct sdc_plan *plan, const struct node *key,
		      const struct node *body)
{
	const struct sdc_probe *probe = sdc_probe_find(key->value);
	if (!probe) {
		char names[256];
		sdc_probe_names(names, sizeof(names));
		return fail(ps, key->line, key->col, "unknown probe '%s' (valid probes: %s)", key->value, names);
	}
	struct sdc_plan_entry *e = sdc_plan_add(plan, probe);
	if (!e)
		return fail(ps, key->line, key->col, "too many probes (at most %d)", SDC_PLAN_MAX);
	if (is_null(body))
		return 0;
	if (body->type != NODE_MAP)
		return fail(ps, body->line, body->col, "probe %s: expected a mapping of options, found %s",
			    probe->name, kind_name(body));
	for (int i = 0; i < body->n; i += 2) {
		const struct node *k = body->items[i], *v = body->items[i + 1];
		const struct sdc_option *opt = sdc_plan_entry_option(e, k->value);
		char value[SDC_OPT_STR_MAX], err[1024];
		if (opt && opt->type != SDC_OPT_SET && v->type == NODE_SEQ) {
			char expected[600];
			sdc_opt_expected(opt, expected, sizeof(expected));
			return fail(ps, v->line, v->col, "%s.%s: expected a single value, found a list (expected %s)",
				    probe->name, k->value, expected);
		}
		if (option_text(ps, v, k->value, value, sizeof(value)))
			return -1;
		if (!sdc_plan_entry_set(e, k->value, value, err, sizeof(err)))
			continue;
		const struct node *at = strstr(err, "unknown key") ? k : v;
		/* In a list, point at the first item that makes it invalid (a bad or repeated choice). */
		for (int n = 1; at == v && v->type == NODE_SEQ && n <= v->n; n++) {
			struct node prefix = *v;
			char part[SDC_OPT_STR_MAX], perr[1024];
			prefix.n = n;
			if (!option_text(ps, &prefix, k->value, part, sizeof(part)) &&
			    sdc_plan_entry_set(e, k->value, part, perr, sizeof(perr)))
				at = v->items[n - 1];
		}
		return fail(ps, at->line, at->col, "%s", err);
	}
	return 0;
}

static int load_seed(struct parse *ps, struct sdc_plan *plan, const struct node *v)
{
	uint64_t s;
	if (v->type != NODE_SCALAR)
		return fail(ps, v->line, v->col, "seed: expected a value, found %s", kind_name(v));
	if (!strcmp(v->value, "daily")) {
		plan->seed_mode = SDC_SEED_DAILY;
	} else if (!strcmp(v->value, "random")) {
		plan->seed_mode = SDC_SEED_RANDOM;
	} else if (sdc_parse_u64(v->value, &s)) {
		plan->seed_mode = SDC_SEED_FIXED;
		plan->seed = s;
	} else {
		return fail(ps, v->line, v->col,
			    "seed: '%s' is not valid (expected a non-negative decimal integer, daily or random)", v->value);
	}
	return 0;
}

/* A count from 0 to max, in decimal as every number sdcscan reads (YAML's 0x40 and 0o17 refused, not
 * read in their base; 010 is ten, as YAML 1.2 reads it). */
static int load_count(struct parse *ps, const char *key, const struct node *v, int max, const char *expected,
		      int *out)
{
	int64_t n;
	if (v->type != NODE_SCALAR)
		return fail(ps, v->line, v->col, "%s: expected %s, found %s", key, expected, kind_name(v));
	if (!sdc_parse_i64(v->value, &n) || n < 0 || n > max)
		return fail(ps, v->line, v->col, "%s: '%s' is not valid (expected %s%s)", key, v->value, expected,
			    sdc_non_decimal(v->value) ? ", in decimal" : "");
	*out = (int)n;
	return 0;
}

int sdc_profile_parse(const char *file, const char *text, size_t len, struct sdc_plan *plan, char *err,
		      size_t errlen)
{
	struct parse ps = { file, err, errlen };
	struct node *root;
	int rc = -1;

	plan->n = 0;
	plan->seed_mode = SDC_SEED_DAILY;
	plan->description[0] = '\0';
	if (build_tree(&ps, text, len, &root))
		return -1;
	if (!root || is_null(root)) {
		fail(&ps, 1, 1, "empty profile (expected a mapping with a 'probes' key)");
		goto out;
	}
	if (root->type != NODE_MAP) {
		fail(&ps, root->line, root->col, "expected a mapping with a 'probes' key, found %s",
		     kind_name(root));
		goto out;
	}
	const struct node *probes = NULL;
	for (int i = 0; i < root->n; i += 2) {
		const struct node *k = root->items[i], *v = root->items[i + 1];
		if (!strcmp(k->value, "description")) {
			if (v->type != NODE_SCALAR) {
				fail(&ps, v->line, v->col, "description: expected text, found %s", kind_name(v));
				goto out;
			}
			if (strlen(v->value) >= sizeof(plan->description)) {
				fail(&ps, v->line, v->col, "description: %zu characters, at most %zu", strlen(v->value),
				     sizeof(plan->description) - 1);
				goto out;
			}
			sdc_strlcpy(plan->description, v->value, sizeof(plan->description));
		} else if (!strcmp(k->value, "seed")) {
			if (load_seed(&ps, plan, v))
				goto out;
		} else if (!strcmp(k->value, "expect_gpus")) {
			if (load_count(&ps, k->value, v, 64, "a number of GPUs from 0 to 64", &plan->expect_gpus))
				goto out;
		} else if (!strcmp(k->value, "clear_after_clean_runs")) {
			if (load_count(&ps, k->value, v, 1000, "a number of runs from 0 (never) to 1000", &plan->clear_after))
				goto out;
		} else if (!strcmp(k->value, "probes")) {
			probes = v;
			if (v->type != NODE_MAP || !v->n) {
				fail(&ps, v->line, v->col, "probes: expected a mapping of probe names to options");
				goto out;
			}
		} else {
			fail(&ps, k->line, k->col, "unknown key '%s' (valid keys: description, seed, expect_gpus, "
						"clear_after_clean_runs, probes)",
			     k->value);
			goto out;
		}
	}
	if (!probes) {
		fail(&ps, root->line, root->col, "missing 'probes' (expected a mapping of probe names to options)");
		goto out;
	}
	for (int i = 0; i < probes->n; i += 2)
		if (load_probe(&ps, plan, probes->items[i], probes->items[i + 1]))
			goto out;
	rc = 0;
out:
	if (rc)
		sdc_plan_release(plan);
	node_free(root);
	return rc;
}


int sdc_profile_load(const char *name, struct sdc_plan *plan, char *err, size_t errlen)
{
	err[0] = '\0';
	bool is_path = strchr(name, '/') || strstr(name, ".yaml") || strstr(name, ".yml");
	if (!is_path) {
		for (const struct sdc_builtin_file *b = sdc_builtin_profiles; b->name; b++) {
			if (strcmp(b->name, name))
				continue;
			char file[160];
			snprintf(file, sizeof(file), "profiles/%s.yaml", b->name);
			if (sdc_profile_parse(file, b->text, strlen(b->text), plan, err, errlen))
				return -1;
			sdc_strlcpy(plan->name, b->name, sizeof(plan->name));
			sdc_strlcpy(plan->source, "built-in", sizeof(plan->source));
			return 0;
		}
		char names[256] = "";
		size_t used = 0;
		for (const struct sdc_builtin_file *b = sdc_builtin_profiles; b->name; b++) {
			int w = snprintf(names + used, sizeof(names) - used, "%s%s", used ? ", " : "", b->name);
			if (w > 0 && (size_t)w < sizeof(names) - used)
				used += (size_t)w;
		}
		snprintf(err, errlen, "--profile: unknown profile '%s' (built-in profiles: %s; or a path to a YAML file)",
			 name, names);
		return -1;
	}
	size_t len;
	err[0] = '\0';
	char *text = sdc_read_regular_file(name, 16u << 20, &len, "profile", err, errlen);
	if (!text)
		return -1;
	int rc = sdc_profile_parse(name, text, len, plan, err, errlen);
	free(text);
	if (rc)
		return -1;
	sdc_strlcpy(plan->name, name, sizeof(plan->name));
	sdc_strlcpy(plan->source, name, sizeof(plan->source));
	return 0;
}
