/*
 * The fleet vote (fleet_vote.h): under MPI, rank 0 gathers every rank's results over the fleet
 * transport (mpi/transport.h), majority-votes the work digests of the same work per device model, names
 * the minority, and sends the fleet verdict back. It returns data (findings in the run, a JSON
 * summary); the commands print it.
 */
#include "runner/fleet_vote.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/message.h"
#include "base/json_load.h"
#include "mpi/transport.h"

static json_t *rank_summary(const struct sdc_run *run, enum sdc_verdict local)
{
	json_t *res = json_array();
	for (int i = 0; i < run->nresults; i++) {
		const struct sdc_result *r = &run->results[i];
		const struct sdc_device *d = r->device >= 0 && r->device < run->ndevices ? &run->devices[r->device] : NULL;
		json_array_append_new(res, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:s}", "probe", r->probe, "variant",
						     r->variant, "device", d ? d->id : "?", "model", d ? d->model : "?",
						     "status", sdc_status_name(r->status), "work_digest", r->work_digest,
						     "corruptions", (json_int_t)r->corruptions, "kernel", r->kernel));
	}
	char summary[512];
	/* The findings travel too, so rank 0's report names what every rank found. */
	json_t *found = json_array();
	for (int i = 0; i < run->nfindings; i++) {
		const struct sdc_finding *f = &run->findings[i];
		json_array_append_new(found, json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:s, s:s, s:s, s:s, s:s, s:s}",
						       "probe", f->probe, "variant", f->variant, "device",
						       f->device >= 0 && f->device < run->ndevices ? run->devices[f->device].id
												     : "host",
						       "kind", f->kind, "target", f->target, "row", (json_int_t)f->row, "col",
						       (json_int_t)f->col, "iteration", (json_int_t)f->iteration, "expected",
						       f->expected, "actual", f->actual, "expected_value", f->expected_value,
						       "actual_value", f->actual_value, "xor_mask", f->xor_mask, "detail", f->detail));
	}
	sdc_summary_line(run, local, summary, sizeof(summary));
	json_t *j = json_pack("{s:i, s:s, s:s, s:s, s:o, s:o}", "rank", sdc_mpi.rank, "host", sdc_mpi.host, "verdict",
			      sdc_verdict_name(local), "summary", summary, "results", res, "findings", found);
	/* what a probe measured for the whole job on this rank (ecparity's rebuild) goes to the report */
	json_t *ec = json_object_get(run->environment, "ecparity");
	if (j && ec)
		json_object_set_new(j, "environment", json_pack("{s:O}", "ecparity", ec));
	return j;
}

/* Rank r's ecparity figures into the job's report: its rebuild, where rank 0 did none (with the
 * rank), and its servers' end replay check added to the others'. */
static void merge_ecparity(struct sdc_run *run, json_t *ec, int r)
{
	if (!json_is_object(ec))
		return;
	json_t *job = json_object_get(run->environment, "ecparity");
	if (!json_is_object(job))
		json_object_set_new(run->environment, "ecparity", job = json_object());
	json_t *rb = json_object_get(ec, "rebuild");
	if (json_is_object(rb) && !json_object_get(job, "rebuild")) {
		json_object_set_new(job, "rebuild", json_deep_copy(rb));
		json_object_set_new(job, "rank", json_integer(r));
	}
	json_t *ck = json_object_get(ec, "replay_check"), *all = json_object_get(job, "replay_check");
	if (!json_is_object(ck))
		return;
	if (!json_is_object(all)) {
		json_object_set_new(job, "replay_check", json_deep_copy(ck));
		return;
	}
	const char *const counts[] = { "servers", "unfinished" };
	for (int i = 0; i < 2; i++)
		json_object_set_new(all, counts[i],
				    json_integer(json_integer_value(json_object_get(all, counts[i])) +
						 json_integer_value(json_object_get(ck, counts[i]))));
	const double a = json_number_value(json_object_get(all, "seconds")), b = json_number_value(json_object_get(ck, "seconds"));
	json_object_set_new(all, "seconds", json_real(a > b ? a : b));
}

static void fleet_finding(struct sdc_run *run, enum sdc_finding_class cls, const char *kind, const char *fmt, ...)
	SDC_PRINTF(4, 5);
static void fleet_finding(struct sdc_run *run, enum sdc_finding_class cls, const char *kind, const char *fmt, ...)
{
	struct sdc_finding f = { .cls = cls, .device = -1, .row = -1, .col = -1 };
	sdc_strlcpy(f.probe, "fleet", sizeof(f.probe));
	sdc_strlcpy(f.kind, kind, sizeof(f.kind));
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f.detail, sizeof(f.detail), fmt, ap);
	va_end(ap);
	sdc_run_add_finding(run, &f);
}

/* Whether every one of keys (NULL-ended) is in o as a string (type 's') or an integer ('i'). */
static bool has_fields(json_t *o, const char *const *keys, const char *types, char *why, size_t len, const char *what)
{
	if (!json_is_object(o)) {
		snprintf(why, len, "%s is not an object", what);
		return false;
	}
	for (int k = 0; keys[k]; k++) {
		json_t *v = json_object_get(o, keys[k]);
		if (types[k] == 's' ? !json_is_string(v) : !json_is_integer(v)) {
			snprintf(why, len, "%s has no %s %s", what, types[k] == 's' ? "string" : "integer", keys[k]);
			return false;
		}
	}
	return true;
}

void *sdc_fleet_rank_record(const char *text, size_t len, int rank, char *why, size_t whylen)
{
	static const char *const top[] = { "host", "verdict", "summary", "rank", NULL };
	static const char *const result[] = { "probe", "variant", "device", "model", "status", "work_digest", "kernel",
					       "corruptions", NULL };
	static const char *const finding[] = { "probe", "variant", "device", "kind", "target", "expected", "actual",
						"expected_value", "actual_value", "xor_mask", "detail", "row", "col",
						"iteration", NULL };
	json_error_t je;
	json_t *j = sdc_json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!j) {
		snprintf(why, whylen, "not JSON (%s)", je.text);
		return NULL;
	}
	bool ok = has_fields(j, top, "sssi", why, whylen, "the record");
	if (ok && json_integer_value(json_object_get(j, "rank")) != rank) {
		snprintf(why, whylen, "it says it is rank %" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(j, "rank")));
		ok = false;
	}
	bool known = false;
	for (enum sdc_verdict k = SDC_OK; ok && k <= SDC_UNKNOWN; k++)
		known |= !strcmp(json_string_value(json_object_get(j, "verdict")), sdc_verdict_name(k));
	if (ok && !known) {
		snprintf(why, whylen, "its verdict is not one of OK, WARNING, CRITICAL, UNKNOWN");
		ok = false;
	}
	static const char *const lists[] = { "results", "findings" };
	for (int l = 0; l < 2 && ok; l++) {
		json_t *a = json_object_get(j, lists[l]), *e;
		size_t i;
		if (!json_is_array(a)) {
			snprintf(why, whylen, "it has no %s list", lists[l]);
			ok = false;
		}
		json_array_foreach(a, i, e) {
			char what[48];
			snprintf(what, sizeof(what), "%s[%zu]", lists[l], i);
			if (!(ok = has_fields(e, l ? finding : result, l ? "sssssssssssiii" : "sssssssi", why, whylen, what)))
				break;
		}
	}
	json_t *env = json_object_get(j, "environment");
	if (ok && env && (!json_is_object(env) || !json_is_object(json_object_get(env, "ecparity")))) {
		snprintf(why, whylen, "its environment is not an object with an ecparity object");
		ok = false;
	}
	if (!ok) {
		json_decref(j);
		return NULL;
	}
	return j;
}

/* Majority vote of work digests of the same (probe, variant, CPU model) across every rank. */
static void vote(struct sdc_run *run, json_t *ranks, json_t *out)
{
	json_t *groups = json_object();
	size_t i;
	json_t *rk;
	json_array_foreach(ranks, i, rk) {
		size_t k;
		json_t *r;
		json_array_foreach(json_object_get(rk, "results"), k, r) {
			const char *wd = json_string_value(json_object_get(r, "work_digest"));
			if (!wd || !*wd)
				continue;
			char key[400];
			snprintf(key, sizeof(key), "%s/%s on %s", json_string_value(json_object_get(r, "probe")),
				 json_string_value(json_object_get(r, "variant")), json_string_value(json_object_get(r, "model")));
			json_t *g = json_object_get(groups, key);
			if (!g)
				json_object_set_new(groups, key, g = json_array());
			json_array_append_new(g, json_pack("{s:s, s:O, s:O, s:s}", "digest", wd, "rank", json_object_get(rk, "rank"),
							   "host", json_object_get(rk, "host"), "device",
							   json_string_value(json_object_get(r, "device"))));
		}
	}
	const char *key;
	json_t *g;
	json_object_foreach(groups, key, g) {
		/* the digest most devices computed */
		const char *best = NULL;
		size_t best_n = 0, n = json_array_size(g);
		for (size_t a = 0; a < n; a++) {
			const char *da = json_string_value(json_object_get(json_array_get(g, a), "digest"));
			size_t c = 0;
			for (size_t b = 0; b < n; b++)
				c += !strcmp(da, json_string_value(json_object_get(json_array_get(g, b), "digest")));
			if (c > best_n)
				best_n = c, best = da;
		}
		json_t *minority = json_array();
		for (size_t a = 0; a < n; a++) {
			json_t *e = json_array_get(g, a);
			if (!strcmp(best, json_string_value(json_object_get(e, "digest"))))
				continue;
			json_array_append(minority, e);
			if (2 * best_n > n)
				fleet_finding(run, SDC_FINDING_CORRUPTION, "fleet-disagreement",
					      "%s: host %s rank %" JSON_INTEGER_FORMAT " %s computed work digest %.16s..., the "
					      "majority (%zu of %zu devices) %.16s...",
					      key, json_string_value(json_object_get(e, "host")),
					      json_integer_value(json_object_get(e, "rank")),
					      json_string_value(json_object_get(e, "device")),
					      json_string_value(json_object_get(e, "digest")), best_n, n, best);
		}
		if (json_array_size(minority) && 2 * best_n <= n)
			fleet_finding(run, SDC_FINDING_CORRUPTION, "fleet-disagreement",
				      "%s: devices disagree with no majority (%zu of %zu agree at most)", key, best_n, n);
		json_object_set_new(out, key, json_pack("{s:s, s:i, s:i, s:o}", "majority", best, "devices", (int)n,
							"agreeing", (int)best_n, "minority", minority));
	}
	json_decref(groups);
}

void sdc_fleet_vote(struct sdc_run *run, void *ranks, void *out)
{
	vote(run, ranks, out);
}

enum sdc_verdict sdc_fleet_finish(struct sdc_run *run, enum sdc_verdict local, void **fleet_json)
{
	*fleet_json = NULL;
	if (!sdc_mpi.active || sdc_mpi.size < 2)
		return local;
	const int tag = 0x5dc;
	if (sdc_mpi.rank != 0) {
		json_t *me = rank_summary(run, local);
		char *text = json_dumps(me, JSON_COMPACT);
		json_decref(me);
		int32_t verdict = SDC_UNKNOWN;
		if (!text || sdc_mpi_to_root(text, &verdict, tag)) {
			fleet_finding(run, SDC_FINDING_ERROR, "rank-unresponsive",
				      "rank 0 (%s) did not answer within %.0f s: dead or stuck; the fleet verdict is unknown",
				      sdc_mpi_host(0), 2 * sdc_mpi.timeout + 5);
			verdict = SDC_UNKNOWN;
		}
		free(text);
		return (enum sdc_verdict)verdict > local ? (enum sdc_verdict)verdict : local;
	}
	json_t *ranks = json_array();
	json_array_append_new(ranks, rank_summary(run, local));
	enum sdc_verdict worst = local;
	bool *alive = calloc((size_t)sdc_mpi.size, sizeof(bool));
	char **texts = calloc((size_t)sdc_mpi.size, sizeof(char *));
	if (!alive || !texts) {
		free(alive), free(texts);
		return SDC_UNKNOWN;
	}
	sdc_mpi_gather_texts(texts, tag);
	for (int r = 1; r < sdc_mpi.size; r++) {
		if (!texts[r]) {
			fleet_finding(run, SDC_FINDING_ERROR, "rank-unresponsive",
				      "rank %d (%s) sent no results within %.0f s: dead or stuck", r, sdc_mpi_host(r),
				      sdc_mpi.timeout);
			continue;
		}
		char why[160];
		json_t *j = sdc_fleet_rank_record(texts[r], strlen(texts[r]), r, why, sizeof(why));
		free(texts[r]);
		if (!j) {
			fleet_finding(run, SDC_FINDING_ERROR, "rank-garbled", "rank %d (%s) sent results that do not parse: %s",
				      r, sdc_mpi_host(r), why);
			continue;
		}
		const char *v = json_string_value(json_object_get(j, "verdict"));
		alive[r] = true;
		for (enum sdc_verdict k = SDC_OK; k <= SDC_UNKNOWN; k++)
			if (!strcmp(v, sdc_verdict_name(k)) && k > worst)
				worst = k;
		merge_ecparity(run, json_object_get(json_object_get(j, "environment"), "ecparity"), r);
		json_array_append_new(ranks, j);
	}
	free(texts);
	json_t *votes = json_object();
	vote(run, ranks, votes);
	const enum sdc_verdict fleet_v = sdc_run_verdict(run);
	if (fleet_v > worst)
		worst = fleet_v;
	sdc_mpi_answer(alive, (int32_t)worst, tag);
	free(alive);
	*fleet_json = json_pack("{s:i, s:s, s:o, s:o}", "ranks_total", sdc_mpi.size, "verdict",
				sdc_verdict_name(worst), "ranks", ranks, "votes", votes);
	return worst;
}

