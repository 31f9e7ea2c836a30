/*
 * Options and profiles: every way a profile can be wrong is refused with file:line:column,
 * what was wrong and the valid choices; the built-in profiles load; --set follows the same rules.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/options.h"
#include "runner/plan.h"
#include "runner/profile.h"
#include "runner/registry.h"

static void expect_error(const char *yaml, const char *where, const char *what, const char *choices)
{
	struct sdc_plan plan = { 0 };
	char err[2048] = "";
	int rc = sdc_profile_parse("t.yaml", yaml, strlen(yaml), &plan, err, sizeof(err));
	CHECK_MSG(rc == -1, "accepted: %s", yaml);
	CHECK_MSG(strstr(err, where) == err, "position: want '%s' in '%s'", where, err);
	CHECK_MSG(strstr(err, what) != NULL, "message: want '%s' in '%s'", what, err);
	if (choices)
		CHECK_MSG(strstr(err, choices) != NULL, "choices: want '%s' in '%s'", choices, err);
	CHECK(plan.n == 0);
	sdc_plan_release(&plan);
}

struct topts {
	int64_t i;
	double d;
	bool b;
	int e;
	uint32_t set;
};

static void options(void)
{
	struct topts o;
	static const char *const ch[] = { "red", "green", "blue", NULL };
	const struct sdc_option tab[] = {
		{ .name = "i", .type = SDC_OPT_INT, .offset = offsetof(struct topts, i), .def = "5", .help = "", .imin = 1, .imax = 10 },
		{ .name = "d", .type = SDC_OPT_DOUBLE, .offset = offsetof(struct topts, d), .def = "0.5", .help = "", .dmin = 0, .dmax = 1 },
		{ .name = "b", .type = SDC_OPT_BOOL, .offset = offsetof(struct topts, b), .def = "true", .help = "" },
		{ .name = "e", .type = SDC_OPT_ENUM, .offset = offsetof(struct topts, e), .def = "green", .help = "", .choices = ch },
		{ .name = "set", .type = SDC_OPT_SET, .offset = offsetof(struct topts, set), .def = "red,blue", .help = "", .choices = ch },
		SDC_OPT_END,
	};
	char err[512];
	sdc_opt_defaults(tab, &o);
	CHECK(o.i == 5 && o.d == 0.5 && o.b && o.e == 1 && o.set == 5);
	CHECK(sdc_opt_parse(&tab[0], &o, "10", err, sizeof(err)) == 0 && o.i == 10);
	/* decimal only, as every number sdcscan reads: 010 is ten (it was octal 8), 0x3 is refused, the
	 * error naming the value and saying why */
	CHECK(sdc_opt_parse(&tab[0], &o, "010", err, sizeof(err)) == 0 && o.i == 10);
	CHECK(sdc_opt_parse(&tab[0], &o, "0x3", err, sizeof(err)) == -1 && strstr(err, "'0x3' is not valid") &&
	      strstr(err, "from 1 to 10, in decimal"));
	CHECK(sdc_opt_parse(&tab[0], &o, " 3", err, sizeof(err)) == -1 && !strstr(err, "in decimal"));
	CHECK(sdc_opt_parse(&tab[1], &o, "0x0.8", err, sizeof(err)) == -1 && strstr(err, "'0x0.8' is not valid") &&
	      strstr(err, "in decimal"));
	CHECK(sdc_opt_parse(&tab[1], &o, "0.75", err, sizeof(err)) == 0 && o.d == 0.75);
	CHECK(sdc_opt_parse(&tab[0], &o, "11", err, sizeof(err)) == -1 && strstr(err, "out of range") &&
	      strstr(err, "from 1 to 10"));
	CHECK(sdc_opt_parse(&tab[0], &o, "7x", err, sizeof(err)) == -1 && strstr(err, "an integer"));
	CHECK(sdc_opt_parse(&tab[0], &o, "", err, sizeof(err)) == -1);
	CHECK(sdc_opt_parse(&tab[1], &o, "nan", err, sizeof(err)) == -1);
	CHECK(sdc_opt_parse(&tab[1], &o, "1.5", err, sizeof(err)) == -1 && strstr(err, "out of range"));
	CHECK(sdc_opt_parse(&tab[2], &o, "no", err, sizeof(err)) == 0 && !o.b);
	CHECK(sdc_opt_parse(&tab[2], &o, "maybe", err, sizeof(err)) == -1 && strstr(err, "true or false"));
	CHECK(sdc_opt_parse(&tab[3], &o, "blue", err, sizeof(err)) == 0 && o.e == 2);
	CHECK(sdc_opt_parse(&tab[3], &o, "pink", err, sizeof(err)) == -1 && strstr(err, "red, green, blue"));
	CHECK(sdc_opt_parse(&tab[4], &o, "green, blue", err, sizeof(err)) == 0 && o.set == 6);
	CHECK(sdc_opt_parse(&tab[4], &o, "green,green", err, sizeof(err)) == -1 && strstr(err, "twice"));
	CHECK(sdc_opt_parse(&tab[4], &o, "green,", err, sizeof(err)) == -1);
	char buf[64];
	sdc_opt_format(&tab[4], &o, buf, sizeof(buf));
	CHECK(!strcmp(buf, "green,blue"));
}

/* gemm's m as a profile with "m: <value>" sets it, or -1 when the profile is refused (err set). */
static int64_t gemm_m(const char *value, char *err, size_t errlen)
{
	char yaml[128];
	snprintf(yaml, sizeof(yaml), "probes:\n  gemm:\n    m: %s\n", value);
	struct sdc_plan plan = { 0 };
	int64_t m = -1;
	if (sdc_profile_parse("d.yaml", yaml, strlen(yaml), &plan, err, errlen) == 0) {
		const struct sdc_option *o = sdc_opt_find(plan.entries[0].probe->options, "m");
		char buf[32];
		sdc_opt_format(o, plan.entries[0].opts, buf, sizeof(buf));
		m = strtoll(buf, NULL, 10);
	}
	sdc_plan_release(&plan);
	return m;
}

/* A profile's numbers and --set's are decimal: YAML 1.2 reads 010 as ten, as sdcscan does; its 0x40
 * and 0o17 (hexadecimal, octal) are refused with the key, the value and why, never read in their base. */
static void decimal(void)
{
	char err[1024] = "";
	CHECK_MSG(gemm_m("010", err, sizeof(err)) == 10, "m: 010: %s", err);
	CHECK(gemm_m("0x40", err, sizeof(err)) == -1 && strstr(err, "d.yaml:3:8: gemm.m: '0x40' is not valid") &&
	      strstr(err, "in decimal"));
	CHECK(gemm_m("0o17", err, sizeof(err)) == -1 && strstr(err, "'0o17' is not valid"));
	expect_error("seed: 0x10\nprobes:\n  gemm: {}\n", "t.yaml:1:7:", "seed: '0x10' is not valid", "decimal");
	expect_error("expect_gpus: 0x2\nprobes:\n  gemm: {}\n", "t.yaml:1:14:", "expect_gpus: '0x2' is not valid",
		     "from 0 to 64, in decimal");
	expect_error("clear_after_clean_runs: 0b1\nprobes:\n  gemm: {}\n", "t.yaml:1:25:",
		     "clear_after_clean_runs: '0b1' is not valid", "in decimal");
	expect_error("expect_gpus: [1]\nprobes:\n  gemm: {}\n", "t.yaml:1:14:", "expect_gpus: expected a number of GPUs",
		     "found a list");
	const char *tens = "seed: 010\nexpect_gpus: 010\nclear_after_clean_runs: 010\nprobes:\n  gemm: {}\n";
	struct sdc_plan plan = { 0 };
	CHECK(sdc_profile_parse("t.yaml", tens, strlen(tens), &plan, err, sizeof(err)) == 0);
	CHECK_MSG(plan.seed == 10 && plan.expect_gpus == 10 && plan.clear_after == 10, "010: seed %llu, gpus %d, clear %d",
		  (unsigned long long)plan.seed, plan.expect_gpus, plan.clear_after);
	/* --set's values go through the same rules */
	CHECK(sdc_plan_set(&plan, "gemm.m=0x40") == -1);
	CHECK(sdc_plan_set(&plan, "gemm.m=010") == 0);
	sdc_plan_release(&plan);
}

int main(void)
{
	options();

	/* Every built-in profile loads, and each probe's defaults parse. */
	for (const struct sdc_builtin_file *b = sdc_builtin_profiles; b->name; b++) {
		struct sdc_plan plan = { 0 };
		char err[1024];
		CHECK_MSG(sdc_profile_load(b->name, &plan, err, sizeof(err)) == 0, "%s: %s", b->name, err);
		CHECK(plan.n > 0 && plan.description[0]);
		sdc_plan_release(&plan);
	}

	/* A good file with every form a value can take. */
	const char *good = "description: \"x\"\nseed: 7\nprobes:\n  gemm:\n    duration: 3\n"
			   "    dtypes: [fp32]\n    m: 64\n    optional: yes\n";
	struct sdc_plan plan = { 0 };
	char err[1024];
	CHECK(sdc_profile_parse("g.yaml", good, strlen(good), &plan, err, sizeof(err)) == 0);
	CHECK(plan.n == 1 && plan.seed_mode == SDC_SEED_FIXED && plan.seed == 7);
	CHECK(plan.entries[0].common.duration == 3 && plan.entries[0].common.optional);
	CHECK(sdc_plan_set(&plan, "gemm.m=128") == 0);
	CHECK(sdc_plan_set(&plan, "gemm.m=0") == -1);
	CHECK(sdc_plan_set(&plan, "gemm.nosuch=1") == -1);
	CHECK(sdc_plan_set(&plan, "nosuch.m=1") == -1);
	CHECK(sdc_plan_set(&plan, "gemm") == -1);
	sdc_plan_release(&plan);

	decimal();

	/* Not YAML. */
	expect_error("probes: [gemm\n", "t.yaml:2:1:", "not valid YAML", NULL);
	expect_error("probes:\n  gemm: {m: 1\n  x", "t.yaml:4:1:", "not valid YAML", NULL);
	/* Empty, or not a mapping. */
	expect_error("", "t.yaml:1:1:", "empty profile", NULL);
	expect_error("- gemm\n", "t.yaml:1:1:", "expected a mapping", NULL);
	expect_error("description: x\n", "t.yaml:1:1:", "missing 'probes'", NULL);
	/* Unknown top-level key, probe, option key. */
	expect_error("probes:\n  gemm: {}\nprofile: x\n", "t.yaml:3:1:", "unknown key 'profile'",
		     "valid keys: description, seed, expect_gpus, clear_after_clean_runs, probes");
	expect_error("clear_after_clean_runs: -1\nprobes:\n  gemm: {}\n", "t.yaml:1:25:", "from 0 (never) to 1000", NULL);
	{
		/* a description longer than the plan holds is refused, never cut */
		char yaml[700] = "description: ";
		memset(yaml + strlen(yaml), 'x', 600);
		strcat(yaml, "\nprobes:\n  gemm: {}\n");
		expect_error(yaml, "t.yaml:1:14:", "description: 600 characters, at most 511", NULL);
	}
	expect_error("probes:\n  gemn:\n    m: 4\n", "t.yaml:2:3:", "unknown probe 'gemn'", "valid probes: gemm");
	expect_error("probes:\n  gemm:\n    size: 4\n", "t.yaml:3:5:", "unknown key 'size' for probe gemm",
		     "valid keys: duration, gpu_duration, iterations, optional, hang_timeout, dtypes, m, n, k");
	/* Wrong type. */
	expect_error("probes:\n  gemm:\n    m: big\n", "t.yaml:3:8:", "'big' is not valid", "an integer from 1 to 16384");
	expect_error("probes:\n  gemm:\n    m: [1, 2]\n", "t.yaml:3:8:", "m: ", "an integer");
	expect_error("probes:\n  gemm:\n    m: {a: 1}\n", "t.yaml:3:8:", "expected a value, found a mapping", NULL);
	expect_error("probes:\n  gemm:\n    optional: perhaps\n", "t.yaml:3:15:", "'perhaps' is not valid",
		     "true or false");
	expect_error("probes:\n  gemm:\n    dtypes: [int4]\n", "t.yaml:3:14:", "'int4' is not a valid choice",
		     "int8, fp32");
	expect_error("probes:\n  gemm: 5\n", "t.yaml:2:9:", "expected a mapping of options", NULL);
	expect_error("seed: -3\nprobes:\n  gemm: {}\n", "t.yaml:1:7:", "seed", "daily or random");
	/* Out of range. */
	expect_error("probes:\n  gemm:\n    k: 3\n", "t.yaml:3:8:", "3 is out of range", "from 4 to 65536");
	expect_error("probes:\n  gemm:\n    duration: 0\n", "t.yaml:3:15:", "out of range", NULL);
	expect_error("probes:\n  gemm:\n    dtypes: [int8, fp32, int8]\n", "t.yaml:3:26:", "listed twice", NULL);
	/* Duplicate keys, at every level. */
	expect_error("probes:\n  gemm:\n    m: 4\n    m: 8\n", "t.yaml:4:5:", "duplicate key 'm'", "line 3");
	expect_error("probes:\n  gemm: {}\n  gemm: {}\n", "t.yaml:3:3:", "duplicate key 'gemm'", NULL);
	expect_error("seed: 1\nseed: 2\nprobes:\n  gemm: {}\n", "t.yaml:2:1:", "duplicate key 'seed'", NULL);
	/* YAML features a profile does not need. */
	expect_error("probes:\n  gemm: &a {m: 4}\n", "t.yaml:2:9:", "anchors", NULL);
	expect_error("a: 1\n---\nb: 2\n", "t.yaml:2:1:", "more than one YAML document", NULL);

	/* Loading by name and by path. */
	CHECK(sdc_profile_load("nosuch", &plan, err, sizeof(err)) == -1 && strstr(err, "built-in profiles: quick"));
	CHECK(sdc_profile_load("/nonexistent/x.yaml", &plan, err, sizeof(err)) == -1 &&
	      strstr(err, "No such file"));
	return check_done("test_profile");
}
