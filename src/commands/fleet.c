/*
 * sdcscan fleet: the reports that independent runs (cron, timers) left on many hosts, collected
 * into one place, compared offline. The same work (probe, variant, seed, options, device model,
 * kernel and library) must give the same work digest on every device: the digests of each group
 * are majority-voted and the minority named (host, device). Hosts whose last report found
 * something, is stale, missing (--hosts) or unreadable are named too. Text, --json, exit code.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands/commands.h"
#include "core/export.h"
#include "core/report.h"
#include "core/report_read.h"

struct fleet_opts {
	double max_age;
	const char *hosts;
};

#define OPT(f) offsetof(struct fleet_opts, f)
static const struct sdc_option fleet_options[] = {
	{ .name = "max-age", .metavar = "SECONDS", .type = SDC_OPT_CUSTOM, .offset = OPT(max_age), .parse = sdc_cli_opt_age,
	  .def = "172800", .help = "a host whose last report is older than this is stale (default two days)" },
	{ .name = "hosts", .metavar = "FILE", .type = SDC_OPT_ARG, .offset = OPT(hosts),
	  .help = "the hosts that should have reported, one name a line: those without a report are missing" },
	SDC_OPT_END,
};

struct fleet {
	json_t *latest;     /* hostname -> {report, path, end, scheduled, sequence, future}: what stands for each host */
	json_t *unreadable; /* [{path, why}] */
	json_t *skewed;     /* [{host, path, ahead_seconds}]: reports dated in the future */
	double now;
	int files;
};


static void unreadable(struct fleet *f, const char *path, const char *why)
{
	json_array_append_new(f->unreadable, json_pack("{s:s, s:s}", "path", path, "why", why));
}

/* Seconds a report may be dated ahead of this clock before it is a clock skew. */
#define CLOCK_SLACK 300.0

/*
 * Whether report cand stands for its host rather than have: a full scheduled run over any other
 * kind (an injected or partial run says less of the host); then the later sequence number of the
 * host's own state where both carry one (a clock cannot skew it); then the later end. A report
 * dated in the future stands only where nothing else does: its clock, not its age, put it first.
 */
static bool newer(json_t *cand, json_t *have)
{
	const bool cf = json_is_true(json_object_get(cand, "future")), hf = json_is_true(json_object_get(have, "future"));
	if (cf != hf)
		return hf;
	const bool cs = json_is_true(json_object_get(cand, "scheduled")), hs = json_is_true(json_object_get(have, "scheduled"));
	if (cs != hs)
		return cs;
	const json_int_t cq = json_integer_value(json_object_get(cand, "sequence")),
			 hq = json_integer_value(json_object_get(have, "sequence"));
	if (cq && hq && cq != hq)
		return cq > hq;
	return json_real_value(json_object_get(cand, "end")) > json_real_value(json_object_get(have, "end"));
}

/* One report: checked for what the comparison reads, kept if it is what stands for its host. */
static void take_report(struct fleet *f, const char *path)
{
	char why[700];
	size_t len;
	f->files++;
	char *text = sdc_read_regular_file(path, 64u << 20, &len, "report", why, sizeof(why));
	if (!text) {
		unreadable(f, path, why);
		return;
	}
	json_t *r = sdc_report_parse(text, len, why, sizeof(why));
	free(text);
	const char *host = sdc_json_str(json_object_get(r, "host"), "hostname");
	if (r && !*host)
		snprintf(why, sizeof(why), "no host.hostname");
	else if (r)
		why[0] = '\0';
	const double end = r ? sdc_report_end_time(r) : -1;
	if (why[0]) {
		unreadable(f, path, why);
		json_decref(r);
		return;
	}
	json_t *run = json_object_get(r, "run");
	const char *kind = sdc_json_str(run, "kind");
	json_t *cand = json_pack("{s:o, s:s, s:f, s:b, s:I, s:b}", "report", r, "path", path, "end", end, "scheduled",
				 !*kind || !strcmp(kind, "scheduled"), "sequence", json_integer_value(json_object_get(run, "sequence")),
				 "future", end > f->now + CLOCK_SLACK);
	json_t *have = json_object_get(f->latest, host);
	if (have && !newer(cand, have)) {
		if (json_is_true(json_object_get(cand, "future")))
			json_array_append_new(f->skewed, json_pack("{s:s, s:s, s:f}", "host", host, "path", path, "ahead_seconds",
								   end - f->now));
		json_decref(cand);
		return;
	}
	if (have && json_is_true(json_object_get(have, "future")))
		json_array_append_new(f->skewed, json_pack("{s:s, s:O, s:f}", "host", host, "path", json_object_get(have, "path"),
							   "ahead_seconds", json_real_value(json_object_get(have, "end")) - f->now));
	json_object_set_new(f->latest, host, cand);
}

/* A directory: every *.json under it, three levels down at most (DIR/host/last.json and the like). */
static void take_dir(struct fleet *f, const char *dir, int depth)
{
	DIR *d = opendir(dir);
	if (!d) {
		unreadable(f, dir, strerror(errno));
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[4096];
		if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		struct stat st;
		if (stat(path, &st))
			continue;
		const size_t n = strlen(e->d_name);
		if (S_ISDIR(st.st_mode) && depth < 3)
			take_dir(f, path, depth + 1);
		else if (S_ISREG(st.st_mode) && n > 5 && !strcmp(e->d_name + n - 5, ".json"))
			take_report(f, path);
	}
	closedir(d);
}

/* The key of the same work: what must give the same digest on every device. */
static void work_key(json_t *r, json_t *res, char *buf, size_t len)
{
	json_t *run = json_object_get(r, "run"), *opts = NULL, *p, *d, *blas;
	size_t i;
	json_array_foreach(json_object_get(run, "probes"), i, p)
		if (!strcmp(sdc_json_str(p, "name"), sdc_json_str(res, "probe")))
			opts = json_object_get(p, "options");
	const char *model = "?";
	json_array_foreach(json_object_get(r, "devices"), i, d)
		if (!strcmp(sdc_json_str(d, "id"), sdc_json_str(res, "device")))
			model = sdc_json_str(d, "model");
	blas = json_object_get(json_object_get(run, "environment"), "blas");
	char *o = opts ? json_dumps(opts, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	snprintf(buf, len, "%s/%s seed %s on %s, kernel %s, %s %s %s, %" JSON_INTEGER_FORMAT " iterations, options %s",
		 sdc_json_str(res, "probe"), sdc_json_str(res, "variant"), sdc_json_str(run, "seed"), model,
		 sdc_json_str(res, "kernel"), sdc_json_str(blas, "library"), sdc_json_str(blas, "version"),
		 sdc_json_str(blas, "core"),
		 json_integer_value(json_object_get(json_object_get(res, "work_digest"), "iterations")), o ? o : "{}");
	free(o);
}

static int fleet_main(struct sdc_cmd *c)
{
	const struct fleet_opts *o = c->opts;
	struct sdc_cli *cli = &c->cli;
	struct fleet f = { .latest = json_object(), .unreadable = json_array(), .skewed = json_array(), .now = sdc_wall_now() };
	for (int a = 0; a < c->nargs; a++) {
		struct stat st;
		if (stat(c->args[a], &st)) {
			json_decref(f.latest), json_decref(f.unreadable), json_decref(f.skewed);
			return sdc_cli_bad(cli, "%s: %s", c->args[a], strerror(errno));
		}
		if (S_ISDIR(st.st_mode))
			take_dir(&f, c->args[a], 0);
		else
			take_report(&f, c->args[a]);
	}
	const double now = sdc_wall_now();
	enum sdc_verdict worst = SDC_OK;
	json_t *groups = json_object(), *findings = json_array(), *stale = json_array(), *missing = json_array();
	const char *host;
	json_t *h;
	json_object_foreach(f.latest, host, h) {
		json_t *r = json_object_get(h, "report");
		const double age = now - json_real_value(json_object_get(h, "end"));
		if (age > o->max_age) {
			json_array_append_new(stale, json_pack("{s:s, s:f, s:s}", "host", host, "age_seconds", age, "path",
							       sdc_json_str(h, "path")));
			worst = sdc_verdict_worst(worst, SDC_WARNING);
		}
		json_t *v = json_object_get(r, "verdict");
		enum sdc_verdict hv = (enum sdc_verdict)json_integer_value(json_object_get(v, "code"));
		/* the node's state where the host keeps one: a CRITICAL stays until cleared */
		const char *node = sdc_json_str(json_object_get(r, "node"), "verdict");
		for (int nv = SDC_OK; nv <= SDC_UNKNOWN && *node; nv++)
			if (!strcmp(node, sdc_verdict_name((enum sdc_verdict)nv)))
				hv = (enum sdc_verdict)nv;
		if (hv != SDC_OK) {
			json_array_append_new(findings, json_pack("{s:s, s:s, s:s}", "host", host, "verdict",
								  sdc_verdict_name(hv), "summary", sdc_json_str(v, "summary")));
			/* a host that could not test is a warning of the fleet, not its corruption */
			worst = sdc_verdict_worst(worst, hv == SDC_UNKNOWN ? SDC_WARNING : hv);
		}
		size_t i;
		json_t *res;
		json_array_foreach(json_object_get(r, "results"), i, res) {
			const char *digest = sdc_json_str(json_object_get(res, "work_digest"), "sha256");
			if (!*digest)
				continue;
			char key[2048];
			work_key(r, res, key, sizeof(key));
			json_t *g = json_object_get(groups, key);
			if (!g)
				json_object_set_new(groups, key, g = json_pack("{s:[], s:{}}", "devices", "counts"));
			json_array_append_new(json_object_get(g, "devices"),
					      json_pack("{s:s, s:s, s:s}", "host", host, "device", sdc_json_str(res, "device"), "digest", digest));
			json_t *counts = json_object_get(g, "counts");
			json_object_set_new(counts, digest, json_integer(json_integer_value(json_object_get(counts, digest)) + 1));
		}
	}
	if (o->hosts) {
		char why[700];
		size_t len;
		char *text = sdc_read_regular_file(o->hosts, 16u << 20, &len, "hosts file", why, sizeof(why));
		if (!text) {
			json_decref(groups), json_decref(findings), json_decref(stale), json_decref(missing);
			json_decref(f.latest), json_decref(f.unreadable), json_decref(f.skewed);
			return sdc_cli_bad(cli, "--hosts %s", why);
		}
		for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			line[strcspn(line, " \t\r#")] = '\0';
			if (*line && !json_object_get(f.latest, line)) {
				json_array_append_new(missing, json_string(line));
				worst = sdc_verdict_worst(worst, SDC_WARNING);
			}
		}
		free(text);
	}
	if (json_array_size(f.unreadable) || json_array_size(f.skewed))
		worst = sdc_verdict_worst(worst, SDC_WARNING);
	/* the vote, group by group */
	json_t *out_groups = json_array(), *minority_all = json_array();
	const char *key;
	json_t *g;
	json_object_foreach(groups, key, g) {
		const char *best = NULL, *dg;
		json_int_t best_n = 0, n = (json_int_t)json_array_size(json_object_get(g, "devices"));
		json_t *cnt;
		json_object_foreach(json_object_get(g, "counts"), dg, cnt)
			if (json_integer_value(cnt) > best_n)
				best_n = json_integer_value(cnt), best = dg;
		const bool majority = 2 * best_n > n;
		json_t *minority = json_array(), *dev;
		size_t i;
		json_array_foreach(json_object_get(g, "devices"), i, dev)
			if (!majority || strcmp(sdc_json_str(dev, "digest"), best)) {
				if (best_n < n)
					json_array_append(minority, dev);
			}
		if (json_array_size(minority))
			worst = sdc_verdict_worst(worst, SDC_CRITICAL);
		json_array_foreach(minority, i, dev)
			json_array_append_new(minority_all, json_pack("{s:s, s:O, s:O, s:O, s:s, s:I, s:I}", "work", key, "host",
								      json_object_get(dev, "host"), "device",
								      json_object_get(dev, "device"), "digest",
								      json_object_get(dev, "digest"), "majority",
								      majority ? best : "", "agreeing", best_n, "devices", n));
		json_array_append_new(out_groups, json_pack("{s:s, s:I, s:I, s:s, s:o}", "work", key, "devices", n, "agreeing",
							    best_n, "majority", majority ? best : "", "minority", minority));
	}
	const size_t nhosts = json_object_size(f.latest);
	if (!nhosts)
		worst = SDC_UNKNOWN;
	/* text: names, summaries and paths from reports with their control characters escaped */
	printf("sdcscan fleet: %d report file%s, %zu host%s, %zu group%s of the same work\n", f.files, f.files == 1 ? "" : "s",
	       nhosts, nhosts == 1 ? "" : "s", json_object_size(groups), json_object_size(groups) == 1 ? "" : "s");
	size_t i;
	json_t *e;
	json_array_foreach(minority_all, i, e)
		sdc_print_line(stdout,
			       "disagrees: %s %s: %s: digest %.16s..., the majority (%" JSON_INTEGER_FORMAT
			       " of %" JSON_INTEGER_FORMAT " devices) %.16s%s",
			       sdc_json_str(e, "host"), sdc_json_str(e, "device"), sdc_json_str(e, "work"),
			       sdc_json_str(e, "digest"), json_integer_value(json_object_get(e, "agreeing")),
			       json_integer_value(json_object_get(e, "devices")),
			       *sdc_json_str(e, "majority") ? sdc_json_str(e, "majority") : "none (no majority)",
			       *sdc_json_str(e, "majority") ? "..." : "");
	json_array_foreach(findings, i, e)
		sdc_print_line(stdout, "%s: %s: %s", sdc_json_str(e, "verdict"), sdc_json_str(e, "host"),
			       sdc_json_str(e, "summary"));
	json_array_foreach(stale, i, e)
		sdc_print_line(stdout, "stale: %s: last report %.1f days old (%s)", sdc_json_str(e, "host"),
			       json_real_value(json_object_get(e, "age_seconds")) / 86400, sdc_json_str(e, "path"));
	json_array_foreach(missing, i, e)
		sdc_print_line(stdout, "missing: %s: no report", json_string_value(e));
	json_array_foreach(f.unreadable, i, e)
		sdc_print_line(stdout, "unreadable: %s: %s", sdc_json_str(e, "path"), sdc_json_str(e, "why"));
	json_array_foreach(f.skewed, i, e)
		sdc_print_line(stdout, "clock-skew: %s: a report dated %.0f s in the future (%s): its clock is wrong",
			       sdc_json_str(e, "host"), json_real_value(json_object_get(e, "ahead_seconds")),
			       sdc_json_str(e, "path"));
	printf("%s: %zu minority device%s, %zu host%s with findings, %zu stale, %zu missing, %zu unreadable\n",
	       sdc_verdict_name(worst), json_array_size(minority_all), json_array_size(minority_all) == 1 ? "" : "s",
	       json_array_size(findings), json_array_size(findings) == 1 ? "" : "s", json_array_size(stale),
	       json_array_size(missing), json_array_size(f.unreadable));
	int rc = sdc_exit_code(worst, cli->exit_style);
	if (cli->json) {
		json_t *j = json_pack("{s:[i,i], s:i, s:I, s:o, s:O, s:o, s:o, s:o, s:O, s:O, s:{s:s, s:i}}", "schema_version",
				      SDC_SCHEMA_MAJOR, SDC_SCHEMA_MINOR, "report_files", f.files, "hosts", (json_int_t)nhosts,
				      "groups", out_groups, "minority", minority_all, "hosts_with_findings", findings,
				      "stale", stale, "missing", missing, "unreadable", f.unreadable, "clock_skew", f.skewed,
				      "verdict", "status", sdc_verdict_name(worst), "code", (int)worst);
		if (!j || sdc_cli_write_json(cli->json, j, "fleet"))
			rc = sdc_cli_unknown(cli);
		json_decref(j);
	} else {
		json_decref(out_groups), json_decref(findings), json_decref(stale), json_decref(missing);
	}
	json_decref(minority_all);
	json_decref(groups);
	json_decref(f.latest);
	json_decref(f.unreadable);
	json_decref(f.skewed);
	return rc;
}

const struct sdc_command sdc_command_fleet = {
	.name = "fleet",
	.summary = "compare the reports many hosts' runs left (collected in DIR or given as FILEs): majority-vote the "
		   "work digests of the same work, name the minority, and the hosts with findings, stale, missing or "
		   "unreadable reports",
	.args = "DIR|FILE...",
	.min_args = 1,
	.max_args = 1 << 20,
	.options = fleet_options,
	.opts_size = sizeof(struct fleet_opts),
	.common = SDC_CF_JSON | SDC_CF_EXIT,
	.fn = fleet_main,
};
