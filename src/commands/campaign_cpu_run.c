/*
 * sdcscan campaign cpu-faults (campaign_cpu.h): which variants, the child's runs (`sdcscan run
 * --variant P/V` under the injector, inject/regfault.h), each fault's draw from the seed, and what the
 * child's report says became of it.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/rng.h"
#include "base/message.h"
#include "commands/campaign_cpu.h"
#include "runner/plan.h"
#include "runner/crash.h"
#include "runner/profile.h"
#include "runner/registry.h"
#include "runner/report_read.h"
#include "probe/probe.h"

const char *const sdc_cc_outcome_keys[O_N] = { "masked", "found_located", "vote_golden_only", "crash",
					   "hang",   "no_verdict",    "other",            "missed" };
const char *const sdc_cc_outcome_heads[O_N] = { "masked", "found+loc", "vote/gold", "crash",
					    "hang",   "no-verdict", "other",    "missed" };
/* The choices of --classes and --instant (campaign_cpu.c's options read them too). */
const char *const sdc_cc_class_names[] = { "gpr", "vector", NULL };
const char *const sdc_cc_instant_names[] = { "anywhere", "random", "start", NULL };

/* The sizes a probe runs at here: one run of 16 iterations takes well under a second. */
static const struct {
	const char *probe;
	const char *sets[4];
} sizes[] = {
	{ "gemm", { "m=256", "n=256", "k=1024", NULL } },
	{ "embbag", { "rows=65536", "batches=128", NULL } },
	{ "ecparity", { "rows=16384", "steps=20", NULL } },
};

/* ---- which variants ---- */

static const char *const *size_sets(const char *probe)
{
	for (size_t i = 0; i < SDC_ARRAY_SIZE(sizes); i++)
		if (!strcmp(sizes[i].probe, probe))
			return sizes[i].sets;
	return NULL;
}

/* Whether "all" or the comma list asks for probe/variant (a word is a probe or probe/variant). */
static bool asked(const char *list, const char *probe, const char *variant, char *used)
{
	if (!strcmp(list, "all"))
		return true;
	char pv[2 * SDC_NAME_MAX + 2];
	snprintf(pv, sizeof(pv), "%.*s/%.*s", SDC_NAME_MAX - 1, probe, SDC_NAME_MAX - 1, variant);
	bool yes = false;
	for (const char *w = list; *w;) {
		const size_t n = strcspn(w, ",");
		if ((n == strlen(probe) && !strncmp(w, probe, n)) || (n == strlen(pv) && !strncmp(w, pv, n)))
			yes = (used[w - list] = true);
		w += n + (w[n] == ',');
	}
	return yes;
}

/* Each variant's share of its probe's faults, the first ones taking what does not divide; with
 * --attempt, one each. */
static void share_faults(const struct cc_campaign *c, struct cc_target *t, int n)
{
	for (int i = 0; i < n;) {
		int m = 1;
		while (i + m < n && !strcmp(t[i + m].probe, t[i].probe))
			m++;
		const uint64_t all = (uint64_t)c->o->faults;
		for (int k = 0; k < m; k++)
			t[i + k].want = c->o->attempt >= 0 ? 1 : all / (uint64_t)m + ((uint64_t)k < all % (uint64_t)m);
		i += m;
	}
}

/* Selects the variants of one probe the list asks for (sizes as above) into t. */
static void add_variants(const struct cc_campaign *c, const struct sdc_probe *probe, struct sdc_plan *plan,
			 struct cc_target *t, int *n, char *used)
{
	char err[600];
	struct sdc_plan_entry *e = sdc_plan_find(plan, probe->name);
	if (!e && !(e = sdc_plan_add(plan, probe)))
		return;
	const char *const *sets = size_sets(probe->name);
	for (int s = 0; sets && sets[s]; s++) {
		char key[64];
		snprintf(key, sizeof(key), "%.*s", (int)strcspn(sets[s], "="), sets[s]);
		sdc_plan_entry_set(e, key, strchr(sets[s], '=') + 1, err, sizeof(err));
	}
	struct sdc_variant v[SDC_VARIANTS_MAX];
	const int nv = probe->variants(e->opts, v, SDC_VARIANTS_MAX);
	for (int i = 0; i < nv && *n < CC_MAX_TARGETS; i++) {
		if (!(v[i].devices & SDC_ON_CPU) || v[i].per_rank || !asked(c->o->variants, probe->name, v[i].name, used))
			continue;
		struct cc_target *x = &t[(*n)++];
		memset(x, 0, sizeof(*x));
		sdc_strlcpy(x->probe, probe->name, sizeof(x->probe));
		sdc_strlcpy(x->variant, v[i].name, sizeof(x->variant));
		x->sets = sets;
		x->lane = (uintptr_t)probe->lane[SDC_DEVICE_CPU];
	}
}

int sdc_cc_select_targets(const struct cc_campaign *c, struct cc_target *t, int *n, json_t *left_out)
{
	struct sdc_plan plan = { 0 };
	char err[600], used[SDC_OPT_STR_MAX] = { 0 };
	if (sdc_profile_load(SDC_DEFAULT_PROFILE, &plan, err, sizeof(err))) {
		sdc_error("campaign cpu-faults: %s", err);
		return -1;
	}
	*n = 0;
	for (int p = 0; sdc_probes[p]; p++) {
		if (sdc_probes[p]->needs & SDC_NEED_MPI)
			json_array_append_new(left_out, json_pack("{s:s, s:s}", "probe", sdc_probes[p]->name, "why",
								  "it runs only across MPI ranks (mpirun)"));
		else
			add_variants(c, sdc_probes[p], &plan, t, n, used);
	}
	sdc_plan_release(&plan);
	/* every word of the list must have named something */
	const char *list = c->o->variants;
	for (const char *w = list; strcmp(list, "all") && *w; w += strcspn(w, ",") + (w[strcspn(w, ",")] == ','))
		if (!used[w - list]) {
			sdc_error("campaign cpu-faults: --variants: '%.*s' is no CPU variant of a probe that runs on one "
				  "host (see 'sdcscan list')",
				  (int)strcspn(w, ","), w);
			return -1;
		}
	share_faults(c, t, *n);
	return 0;
}

/* ---- one run of the child ---- */

/* `sdcscan run --variant P/V ...` on the two CPUs, its report to json. */
static void child_argv(const struct cc_campaign *c, const struct cc_target *t, double duration, const char *json,
		       char store[][96], char *argv[])
{
	int n = 0, k = 0;
#define ARG(...) (snprintf(store[k], sizeof(store[k]), __VA_ARGS__), argv[n++] = store[k++])
	ARG("sdcscan");
	ARG("run");
	ARG("--variant");
	ARG("%.23s/%.23s", t->probe, t->variant);
	ARG("--cpus");
	ARG("%s", c->cpus);
	ARG("--gpus");
	ARG("none");
	ARG("--seed");
	ARG("%" PRIu64, c->seed);
	ARG("--set");
	ARG("%s.iterations=%d", t->probe, CC_ITERATIONS);
	ARG("--set");
	ARG("%s.duration=%g", t->probe, duration);
	ARG("--set");
	ARG("%s.hang_timeout=%g", t->probe, c->o->hang_timeout);
	for (int s = 0; t->sets && t->sets[s]; s++) {
		ARG("--set");
		ARG("%s.%s", t->probe, t->sets[s]);
	}
	ARG("--no-state");
	ARG("--no-color");
	ARG("--quiet");
	ARG("--json");
	argv[n++] = (char *)json;
	argv[n] = NULL;
#undef ARG
}

/* Runs the child with spec s; its report (NULL: none readable). -1: the injector failed. */
static int run_child(struct cc_campaign *c, const struct cc_target *t, const char *name, double duration,
		     const struct sdc_regfault_spec *s, struct sdc_regfault_result *r, json_t **report)
{
	char json[PATH_MAX + 64], log[PATH_MAX + 64], store[40][96], *argv[48], err[400];
	snprintf(json, sizeof(json), "%.4000s/%.64s.json", c->dir, name);
	snprintf(log, sizeof(log), "%.4000s/%.64s.log", c->dir, name);
	unlink(json);
	child_argv(c, t, duration, json, store, argv);
	struct sdc_regfault_spec spec = *s;
	spec.thread = c->thread;
	spec.cpu = c->cpu;
	spec.log = log;
	spec.bp = c->bp;
	spec.lane = t->lane;
	if (sdc_regfault_run(argv, &spec, r, err, sizeof(err))) {
		sdc_error("campaign cpu-faults: %s/%s: the injector failed: %s", t->probe, t->variant, err);
		return -1;
	}
	*report = json_load_file(json, 0, NULL);
	return 0;
}

static json_t *result_at(json_t *report, const char *device)
{
	size_t i;
	json_t *x;
	json_array_foreach(json_object_get(report, "results"), i, x)
		if (!strcmp(sdc_json_str(x, "device"), device))
			return x;
	return NULL;
}

/* The faulted worker's work digest, or ecparity's state at the end ("" when none): ecparity's
 * servers hold different shards, so it has no per-device digest, and a fault on one server's
 * worker reaches the others' parities. */
static const char *work_digest(json_t *report, const char *probe, const char *device)
{
	if (!strcmp(probe, "ecparity")) {
		json_t *env = json_object_get(json_object_get(report, "run"), "environment");
		return sdc_json_str(json_object_get(env, "ecparity"), "state_sha256");
	}
	return sdc_json_str(json_object_get(result_at(report, device), "work_digest"), "sha256");
}

/* Why the unfaulted run cannot serve, or NULL. */
static const char *unfit(const struct cc_campaign *c, const struct cc_target *t, json_t *rep,
			 const struct sdc_regfault_result *r)
{
	json_t *res = result_at(rep, c->device);
	const char *d = rep ? work_digest(rep, t->probe, c->device) : "";
	if (!rep)
		return "it wrote no report";
	if (strcmp(sdc_json_str(json_object_get(rep, "verdict"), "status"), "OK"))
		return "its verdict is not OK";
	if (!res || json_integer_value(json_object_get(res, "iterations")) != CC_ITERATIONS || !*d)
		return "the faulted CPU's worker did not do 16 iterations, or left no work digest (ecparity: no state "
		       "digest)";
	if (strcmp(t->probe, "ecparity") && strcmp(d, work_digest(rep, t->probe, c->other)))
		return "its two CPUs' work digests differ";
	if (!r->traps)
		return "no breakpoint stopped the worker";
	if (c->o->instant != INSTANT_ANYWHERE && r->nlengths < CC_ITERATIONS - 1)
		return "the injector did not see the worker's iterations start";
	if (c->o->instant == INSTANT_ANYWHERE && !(r->lane_seconds > 0))
		return "the injector did not see the worker's lane start and end";
	return NULL;
}

/* Auto: hardware breakpoints were chosen, and this reference run saw none trap. */
static bool fall_back(struct cc_campaign *c, const struct cc_target *t, const struct sdc_regfault_result *r)
{
	if (!c->bp_chosen || c->bp != SDC_BP_HARDWARE || r->traps)
		return false;
	c->bp = SDC_BP_SOFTWARE;
	snprintf(c->bp_why, sizeof(c->bp_why), "hardware breakpoints took no trap in %s/%s's unfaulted run", t->probe,
		 t->variant);
	sdc_note("%s/%s: %s: software breakpoints from here on", t->probe, t->variant, c->bp_why);
	return true;
}

/* The lane's length, for --instant anywhere: the shortest of the reference's (first) and two more
 * runs'. What slows a run (other work on a loaded host: one run's lane took 40 ms where the next
 * ones took 30) never speeds one up, and a draw past a run's lane goes in no fault. */
static int lane_length(struct cc_campaign *c, struct cc_target *t, double first)
{
	double l[3] = { first, 0, 0 };
	for (int k = 1; k < 3; k++) {
		struct sdc_regfault_spec s = { .inject = false, .from = SDC_FROM_LANE, .bound = 120 };
		struct sdc_regfault_result r;
		json_t *rep = NULL;
		char name[2 * SDC_NAME_MAX + 24];
		snprintf(name, sizeof(name), "%.23s-%.23s-reference-lane%d", t->probe, t->variant, k);
		if (run_child(c, t, name, 60, &s, &r, &rep))
			return -1;
		json_decref(rep);
		if (!((l[k] = r.lane_seconds) > 0)) {
			sdc_error("campaign cpu-faults: %s/%s: the injector did not see the worker's lane start and end in %s/%s.log",
				  t->probe, t->variant, c->dir, name);
			return -1;
		}
	}
	t->lane_seconds = SDC_MIN(l[0], SDC_MIN(l[1], l[2]));
	return 0;
}

int sdc_cc_reference(struct cc_campaign *c, struct cc_target *t)
{
	/* (the instants' own breakpoints alone: each stop costs the worker more time than it is held) */
	struct sdc_regfault_spec s = { .inject = false, .bound = 120 };
	s.from = c->o->instant == INSTANT_ANYWHERE ? SDC_FROM_LANE : SDC_FROM_ITERATION;
	struct sdc_regfault_result r;
	json_t *rep = NULL;
	char name[2 * SDC_NAME_MAX + 16];
	snprintf(name, sizeof(name), "%.23s-%.23s-reference", t->probe, t->variant);
	do {
		json_decref(rep);
		if (run_child(c, t, name, 60, &s, &r, &rep))
			return -1;
	} while (fall_back(c, t, &r));
	const char *why = unfit(c, t, rep, &r);
	if (why) {
		sdc_error("campaign cpu-faults: %s/%s: the unfaulted run (%s/%s.log, %s breakpoints) cannot serve: %s",
			  t->probe, t->variant, c->dir, name, sdc_regfault_bp_names[c->bp], why);
		json_decref(rep);
		return -1;
	}
	if (!r.no_aslr)
		sdc_note("%s/%s: address-space randomisation could not be turned off in the child: a flipped pointer "
			 "lands elsewhere each run", t->probe, t->variant);
	sdc_strlcpy(t->digest, work_digest(rep, t->probe, c->device), sizeof(t->digest));
	memcpy(t->length, r.length, sizeof(t->length));
	t->ref_seconds = r.seconds;
	t->no_aslr = r.no_aslr;
	/* time enough for a slowed worker, then the hang timeout; the bound kills a run that outlives it */
	t->duration = SDC_MAX(4.0, 8 * r.seconds);
	t->bound = t->duration + c->o->hang_timeout + 5 + 2 * r.seconds;
	json_decref(rep);
	return c->o->instant == INSTANT_ANYWHERE ? lane_length(c, t, r.lane_seconds) : 0;
}

/* ---- what became of a fault ---- */

static bool vote_kind(const char *kind)
{
	return !strcmp(kind, "device-disagreement") || !strncmp(kind, "golden-", 7) || !strncmp(kind, "rank-", 5);
}

/* From the findings: crash, hang, found, vote at the faulted CPU, or other (why), or -1: none. */
static int from_findings(const struct cc_campaign *c, json_t *rep, char *why, size_t len)
{
	static const enum cc_outcome rank[] = { O_CRASH, O_HANG, O_FOUND, O_VOTE, O_OTHER };
	int best = -1; /* index into rank */
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(rep, "findings"), i, f) {
		const char *cls = sdc_json_str(f, "class"), *kind = sdc_json_str(f, "kind"), *dev = sdc_json_str(f, "device");
		const bool here = !strcmp(dev, c->device);
		int k = 4;
		if (here && !strcmp(cls, "crash"))
			k = 0;
		else if (here && !strcmp(cls, "hang"))
			k = 1;
		else if (!strcmp(cls, "corruption") && vote_kind(kind))
			k = 3;
		else if (here && !strcmp(cls, "corruption"))
			k = 2;
		if (best >= 0 && k >= best)
			continue;
		best = k;
		if (k == 0)
			snprintf(why, len, "%s %s at %s", sdc_json_str(f, "signal"), sdc_json_str(f, "si_code"),
				 sdc_json_str(f, "ip"));
		else
			snprintf(why, len, "%s %s at %s: %.160s", cls, kind, dev, sdc_json_str(f, "detail"));
	}
	return best < 0 ? -1 : (int)rank[best];
}

/* Whether the run ended in a verdict: its report holds one and its exit code is that verdict's.
 * Not: a failure of sdcscan itself, whose parent must outlive any fault of a worker (why). */
static bool ended_in_verdict(const struct cc_target *t, const struct sdc_regfault_result *r, json_t *rep, char *why,
			     size_t len)
{
	static const char *const verdicts[] = { "OK", "WARNING", "CRITICAL", "UNKNOWN" };
	json_t *v = json_object_get(rep, "verdict");
	const char *status = sdc_json_str(v, "status");
	const json_int_t code = json_integer_value(json_object_get(v, "code"));
	int known = -1;
	for (int i = 0; i < 4; i++)
		if (!strcmp(status, verdicts[i]))
			known = i;
	if (r->killed)
		snprintf(why, len, "still running at its bound (%.0f s): killed", t->bound);
	else if (WIFSIGNALED(r->status))
		snprintf(why, len, "sdcscan died of %s%s", strsignal(WTERMSIG(r->status)), rep ? " after its report" : "");
	else if (!rep)
		snprintf(why, len, "sdcscan exited %d with no report", WEXITSTATUS(r->status));
	else if (known < 0 || code != known)
		snprintf(why, len, "its report holds no verdict");
	else if (WEXITSTATUS(r->status) != code)
		snprintf(why, len, "sdcscan exited %d, not its verdict's %" JSON_INTEGER_FORMAT, WEXITSTATUS(r->status), code);
	else
		return true;
	return false;
}

static enum cc_outcome classify(const struct cc_campaign *c, const struct cc_target *t,
				const struct sdc_regfault_result *r, json_t *rep, char *why, size_t len)
{
	why[0] = '\0';
	if (!ended_in_verdict(t, r, rep, why, len))
		return O_NO_VERDICT;
	const int f = from_findings(c, rep, why, len);
	if (f >= 0)
		return (enum cc_outcome)f;
	const char *verdict = sdc_json_str(json_object_get(rep, "verdict"), "status");
	if (strcmp(verdict, "OK")) {
		snprintf(why, len, "verdict %s with no finding: %.160s", verdict,
			 sdc_json_str(json_object_get(rep, "verdict"), "summary"));
		return O_OTHER;
	}
	json_t *res = result_at(rep, c->device);
	const json_int_t it = json_integer_value(json_object_get(res, "iterations"));
	if (it < CC_ITERATIONS) {
		snprintf(why, len, "nothing reported; %s finished %" JSON_INTEGER_FORMAT " of %d iterations in %.0f s (slowed)",
			 c->device, it, CC_ITERATIONS, t->duration);
		return O_OTHER;
	}
	const char *d = work_digest(rep, t->probe, c->device);
	if (!strcmp(d, t->digest))
		return O_MASKED;
	snprintf(why, len, "nothing reported, and the work digest is %.16s%s, not the unfaulted %.16s", *d ? d : "none",
		 *d ? "..." : "", t->digest);
	return O_MISSED;
}

/* ---- the faults ---- */

/* Attempt a of target t, drawn from the seed, the variant and a alone: class, register, bit, and
 * the instant (anywhere: a moment of the lane's length; random: of the iteration's). */
static void draw(const struct cc_campaign *c, const struct cc_target *t, uint64_t a, struct sdc_regfault_spec *s)
{
	char pv[2 * SDC_NAME_MAX + 2];
	snprintf(pv, sizeof(pv), "%.23s/%.23s", t->probe, t->variant);
	const struct sdc_rng rng = sdc_rng_make(c->seed, SDC_RNG_PROBE_INJECT, 0, (unsigned)sdc_xxh64(pv, strlen(pv)),
						0xCF00);
	enum sdc_reg_class classes[SDC_REG_NCLASSES];
	int n = 0;
	for (int k = 0; k < SDC_REG_NCLASSES; k++)
		if (c->o->registers >> k & 1)
			classes[n++] = (enum sdc_reg_class)k;
	s->cls = classes[sdc_rng_below(&rng, a * 8, (uint64_t)n)];
	s->reg = (int)sdc_rng_below(&rng, a * 8 + 1, (uint64_t)sdc_regfault_nregs(s->cls));
	s->bit = (int)sdc_rng_below(&rng, a * 8 + 2, (uint64_t)sdc_regfault_width(s->cls));
	/* iterations 1 to 14: the first's setup and the last's end are left out, and the fault's
	 * iteration has a successor whose start measured its length */
	s->iteration = 1 + sdc_rng_below(&rng, a * 8 + 3, CC_ITERATIONS - 2);
	const double u = sdc_rng_uniform(&rng, a * 8 + 4);
	s->from = c->o->instant == INSTANT_ANYWHERE ? SDC_FROM_LANE : SDC_FROM_ITERATION;
	s->delay = c->o->instant == INSTANT_START ? 0 :
		   c->o->instant == INSTANT_RANDOM ? u * t->length[s->iteration] : u * t->lane_seconds;
	s->settle = c->o->instant == INSTANT_ANYWHERE ? t->lane_seconds / CC_ITERATIONS : t->length[s->iteration];
	s->inject = true;
	s->bound = t->bound;
}

/* The command line that runs attempt a of t alone, as this campaign ran it. */
static void replay_line(const struct cc_campaign *c, const struct cc_target *t, uint64_t a, char *out, size_t len)
{
	char classes[32];
	snprintf(classes, sizeof(classes), "%s%s%s", c->o->registers & 1 ? "gpr" : "", c->o->registers == 3 ? "," : "",
		 c->o->registers & 2 ? "vector" : "");
	snprintf(out, len,
		 "sdcscan campaign cpu-faults --variants %s/%s --seed %" PRIu64 " --attempt %" PRIu64 " --registers %s "
		 "--instant %s --breakpoints %s --hang-timeout %g --cpus %s",
		 t->probe, t->variant, c->seed, a, classes, sdc_cc_instant_names[c->o->instant], sdc_regfault_bp_names[c->bp],
		 c->o->hang_timeout, c->cpus);
}

/* The fault's line of the output. */
static void say(const struct cc_campaign *c, const struct cc_target *t, uint64_t a, const struct sdc_regfault_spec *s,
		const struct sdc_regfault_result *r, enum cc_outcome o, const char *why)
{
	char instant[64];
	if (s->from == SDC_FROM_LANE)
		snprintf(instant, sizeof(instant), "lane + %.2f ms", s->delay * 1e3);
	else
		snprintf(instant, sizeof(instant), "iteration %" PRIu64 " + %.2f ms", s->iteration, s->delay * 1e3);
	if (!r->injected)
		fprintf(c->out, "  %s/%s #%" PRIu64 ": %s: not injected: %s\n", t->probe, t->variant, a, instant,
			r->not_injected);
	else
		fprintf(c->out, "  %s/%s #%" PRIu64 ": %s bit %d, %s, at %s: %s%s%s\n", t->probe, t->variant, a, r->reg,
			s->bit, instant, r->at, o == O_MISSED ? "MISSED" : o == O_NO_VERDICT ? "NO-VERDICT" : sdc_cc_outcome_heads[o],
			*why ? ": " : "", why);
}

int sdc_cc_fault(struct cc_campaign *c, struct cc_target *t, uint64_t a)
{
	struct sdc_regfault_spec s = { 0 };
	struct sdc_regfault_result r;
	json_t *rep = NULL;
	char name[2 * SDC_NAME_MAX + 32], why[400] = "", replay[400];
	draw(c, t, a, &s);
	snprintf(name, sizeof(name), "%.23s-%.23s-%" PRIu64, t->probe, t->variant, a);
	if (run_child(c, t, name, t->duration, &s, &r, &rep))
		return -1;
	c->fault_seconds += r.seconds;
	c->fault_runs++;
	replay_line(c, t, a, replay, sizeof(replay));
	json_t *j = json_pack("{s:I, s:I, s:s, s:s, s:s, s:f, s:s}", "attempt", (json_int_t)a, "seed", (json_int_t)c->seed,
			      "class", sdc_cc_class_names[s.cls], "instant", sdc_cc_instant_names[c->o->instant],
			      "breakpoints", sdc_regfault_bp_names[c->bp], "delay_seconds", s.delay, "replay", replay);
	if (s.from == SDC_FROM_ITERATION)
		json_object_set_new(j, "iteration", json_integer((json_int_t)s.iteration));
	char ended[48];
	if (WIFSIGNALED(r.status))
		snprintf(ended, sizeof(ended), "signal %s", sdc_signal_name(WTERMSIG(r.status)));
	else
		snprintf(ended, sizeof(ended), "exit %d", WEXITSTATUS(r.status));
	json_object_set_new(j, "child_exit", json_string(ended)); /* (the run's: sdcscan's own end) */
	json_object_set_new(j, "killed", json_boolean(r.killed));
	enum cc_outcome o = O_OTHER;
	if (!r.injected) {
		t->not_injected++;
		json_object_set_new(j, "outcome", json_string("not-injected"));
		json_object_set_new(j, "detail", json_string(r.not_injected));
	} else {
		o = classify(c, t, &r, rep, why, sizeof(why));
		t->counts[o]++;
		t->injected++;
		json_t *more = json_pack("{s:s, s:i, s:s, s:s, s:s, s:s, s:s, s:f}", "register", r.reg, "bit", s.bit, "at",
					 r.at, "before", r.before, "after", r.after, "outcome", sdc_cc_outcome_keys[o], "detail",
					 why, "seconds", r.seconds);
		json_object_update(j, more);
		json_decref(more);
	}
	if (!c->quiet)
		say(c, t, a, &s, &r, o, why);
	json_array_append_new(t->faults, j);
	json_decref(rep);
	return 0;
}
