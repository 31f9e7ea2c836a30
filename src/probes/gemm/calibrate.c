/*
 * sdcscan calibrate: V-ABFT's calibration protocol (Gao et al. §3.6) on this host.
 *   1. positive |N(1,1)| matrices (no cancellation in the denominator),
 *   2. the relative verification error |E| / |checksum| of every row (of the plain and the
 *      weighted checksum, both held to e_max), over many GEMMs at representative sizes, with the
 *      same kernel and checks the burn uses,
 *   3. e_max = the observed maximum plus a 20% margin.
 * The per-size maxima are kept in the file too, so growth with K would show.
 * The file is keyed by CPU model, BLAS library, version and kernel; `run` refuses it elsewhere.
 * With --gpus the GPUs are calibrated instead (calibrate_gpu.c), into the file's "gpus" section,
 * one entry per GPU model and library; each kind of calibration keeps what the file holds of the
 * other.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probes/gemm/calibration.h"
#include "probe/command.h"
#include "probes/gemm/gemm.h"
#include "probes/gemm/dist.h"
#include "device/parallel.h"
#include "probe/probe.h"
#include "probes/gemm/abft.h"
#include "run/record.h"
#include "sdc_config.h"
#include "base/message.h"
#include "base/clock.h"
#include "base/files.h"

#define MAX_SIZES 8
#define MARGIN 0.2

struct precision_stats {
	double max_rel[MAX_SIZES]; /* largest |E| / |checksum| per size */
	uint64_t rows[MAX_SIZES];
	uint64_t gemms[MAX_SIZES];
};

struct calib_worker {
	struct sdc_gemm g[MAX_SIZES];
	bool ready[MAX_SIZES];
	struct precision_stats st;
};

struct calib {
	enum sdc_gemm_class cls;
	const char *kernel;
	int sizes[MAX_SIZES], nsizes;
	uint64_t seed;
	const struct sdc_dist_pool *pool;
	struct calib_worker *w;
	char error[256];
};

static void fail(struct calib *c, const char *msg)
{
	snprintf(c->error, sizeof(c->error), "%s", msg);
	sdc_stop_request();
}

/* One trial: a GEMM at one of the sizes, every row's relative verification error. */
static void calib_trial(void *arg, int worker, uint64_t trial)
{
	struct calib *c = arg;
	struct calib_worker *w = &c->w[worker];
	const int s = (int)(trial % (uint64_t)c->nsizes);
	struct sdc_gemm *g = &w->g[s];
	if (!w->ready[s]) {
		const struct sdc_gemm_cfg cfg = {
			.cls = c->cls, .m = c->sizes[s], .n = c->sizes[s], .k = c->sizes[s], .kernel = c->kernel,
			.seed = c->seed, .emax = 1, .c_sigma = SDC_C_SIGMA, .pools = c->pool, .npools = 1,
		};
		char err[256];
		if (sdc_gemm_init(g, &cfg, err, sizeof(err))) {
			fail(c, err);
			return;
		}
		w->ready[s] = true;
	}
	sdc_gemm_load(g, trial);
	sdc_gemm_multiply(g);
	for (int i = 0; i < g->cfg.m; i++) {
		/* Both checksums: the check holds each to the same e_max. */
		double e, cs, e2, cs2;
		sdc_gemm_row_difference(g, i, &e, &cs, &e2, &cs2);
		const double rel = SDC_MAX(fabs(e) / fabs(cs), fabs(e2) / fabs(cs2));
		if (!isfinite(rel)) {
			fail(c, "a row's verification difference was not finite: this host does not compute "
				"correctly; run sdcscan run before calibrating");
			return;
		}
		w->st.max_rel[s] = SDC_MAX(w->st.max_rel[s], rel);
	}
	w->st.rows[s] += (uint64_t)g->cfg.m;
	w->st.gemms[s]++;
}

static const char *const precision_names[] = { "fp32", "fp64", NULL };
static const char *const gpu_precision_names[] = { "fp32-fast", "tf32-fast", "bf16-fast", NULL };

struct square_sizes {
	int v[MAX_SIZES], n;
};

struct calibrate_opts {
	const char *output;
	int64_t trials;
	struct square_sizes sizes;
	uint32_t precisions;
	const char *kernel;
	struct square_sizes gpu_sizes;
	uint32_t gpu_precisions;
};

/* Up to MAX_SIZES square sizes from 16 to 8192 (the protocol's representative K). */
static int parse_square_sizes(const char *value, void *field, char *err, size_t errlen)
{
	struct square_sizes *out = field;
	struct sdc_size3 z[MAX_SIZES];
	const int n = sdc_cli_parse_sizes(value, z, MAX_SIZES);
	int ok = n > 0;
	for (int i = 0; i < n && ok; i++)
		ok = z[i].m == z[i].n && z[i].n == z[i].k && z[i].m >= 16 && z[i].m <= 8192;
	if (!ok) {
		snprintf(err, errlen, "up to %d square sizes from 16 to 8192, comma-separated", MAX_SIZES);
		return -1;
	}
	for (int i = 0; i < n; i++)
		out->v[i] = z[i].m;
	out->n = n;
	return 0;
}

/* --gpu-sizes: up to MAX_SIZES depths K from 16 to the burn's deepest gpu_k, comma-separated
 * (sdc_cli_parse_sizes stops square sizes at 16384); each GEMM min(K, 1024) square by K. */
static int parse_gpu_depths(const char *value, void *field, char *err, size_t errlen)
{
	struct square_sizes *out = field;
	int n = 0;
	for (const char *s = value; *s && n <= MAX_SIZES; n++) {
		char *end;
		errno = 0;
		const long v = strtol(s, &end, 10);
		if (n == MAX_SIZES || end == s || (*end && *end != ',') || errno || v < 16 || v > 32768)
			break;
		out->v[n] = (int)v;
		s = *end ? end + 1 : end;
		if (!*s) {
			out->n = n + 1;
			return 0;
		}
	}
	snprintf(err, errlen, "up to %d depths from 16 to 32768, comma-separated", MAX_SIZES);
	return -1;
}

#define OPT(f) offsetof(struct calibrate_opts, f)
static const struct sdc_option calibrate_options[] = {
	{ .name = "output", .short_name = 'o', .metavar = "FILE", .type = SDC_OPT_ARG, .offset = OPT(output),
	  .help = "where to write (default: $SDCSCAN_CALIBRATION or " SDC_CALIBRATION_PATH ")" },
	{ .name = "trials", .short_name = 'n', .metavar = "N", .type = SDC_OPT_INT, .offset = OPT(trials),
	  .def = "10000", .imin = 1, .imax = 100000000, .help = "GEMMs per precision, spread over the sizes" },
	{ .name = "sizes", .short_name = 'z', .metavar = "LIST", .type = SDC_OPT_CUSTOM, .offset = OPT(sizes),
	  .parse = parse_square_sizes, .def = "128,256,512", .help = "square sizes" },
	{ .name = "precisions", .short_name = 'p', .metavar = "LIST", .type = SDC_OPT_SET, .offset = OPT(precisions),
	  .choices = precision_names, .def = "fp32,fp64", .help = "fp32, fp64 or both" },
	{ .name = "kernel", .short_name = 'k', .metavar = "NAME", .type = SDC_OPT_ARG, .offset = OPT(kernel),
	  .def = "auto", .help = "auto, openblas or portable (auto, as the burn)" },
	{ .name = "gpu-sizes", .metavar = "LIST", .type = SDC_OPT_CUSTOM, .offset = OPT(gpu_sizes),
	  .parse = parse_gpu_depths, .def = "1024,4096,32768",
	  .help = "with --gpus: depths K, each GEMM min(K, 1024) square by K (the burn's gpu_k is 32768: its bound from a "
		  "shallower calibration is scaled up to its depth)" },
	{ .name = "gpu-precisions", .metavar = "LIST", .type = SDC_OPT_SET, .offset = OPT(gpu_precisions),
	  .choices = gpu_precision_names, .def = "fp32-fast,tf32-fast,bf16-fast",
	  .help = "with --gpus: the GPU's fast types" },
	SDC_OPT_END,
};

/*
 * What the output file holds already, to keep what this calibration does not replace. NULL when
 * there is none; a file that cannot be read is said and replaced.
 */
static struct sdc_facts *existing_calibration(const char *path, bool quiet)
{
	if (access(path, F_OK))
		return NULL;
	char err[700];
	struct sdc_facts *doc = sdc_calibration_read(path, err, sizeof(err));
	if (!doc && !quiet)
		printf("note: replacing %s: %s\n", path, err);
	return doc;
}

/* calibrate --gpus: the GPUs' entries into the file's "gpus" section; the rest of the file kept. */
static int calibrate_gpus_main(struct sdc_cmd *cmd, struct sdc_run *run, const char *output)
{
	struct calibrate_opts *o = cmd->opts;
	struct sdc_cli *cli = &cmd->cli;
	struct sdc_facts *fresh = sdc_facts_new();
	if (sdc_gemm_calibrate_gpus(run, o->gpu_sizes.v, o->gpu_sizes.n, (uint64_t)o->trials, o->gpu_precisions,
				    cli->quiet, fresh)) {
		sdc_facts_free(fresh);
		return -1;
	}
	char created[32], err[700];
	sdc_format_utc(sdc_wall_now(), created, sizeof(created));
	struct sdc_facts *doc = existing_calibration(output, cli->quiet);
	if (!doc) {
		doc = sdc_facts_new();
		sdc_facts_str(doc, "format", SDC_CALIBRATION_FORMAT);
		sdc_facts_int(doc, "version", SDC_CALIBRATION_VERSION);
		sdc_facts_str(doc, "tool_version", SDC_VERSION);
		sdc_facts_str(doc, "created", created);
	}
	const char *name;
	for (size_t i = 0; (name = sdc_facts_name_at(fresh, i)); i++)
		sdc_facts_str(sdc_facts_key(fresh, name), "created", created);
	/* each GPU model's entry replaces the file's whole, in its place; new ones after */
	sdc_facts_replace(sdc_facts_group(doc, "gpus"), fresh);
	const int rc = sdc_calibration_write(output, doc, err, sizeof(err));
	if (rc)
		sdc_error("calibrate: %s", err);
	else
		printf("OK: GPU calibration written to %s\n", output);
	sdc_facts_free(doc);
	return rc;
}

/* The arguments checked before anything is measured: where the file goes (the state directory,
 * /var/lib/sdcscan, made when it is missing), enough trials a size, the kernel. 0, or the exit
 * code of a bad argument (said). */
static int check_args(struct sdc_cmd *cmd, const char *output)
{
	const struct calibrate_opts *o = cmd->opts;
	struct sdc_cli *cli = &cmd->cli;
	char where[4096], werr[4200];
	if ((!o->output && sdc_make_parent_dirs(output, 0755, werr, sizeof(werr))) ||
	    sdc_output_path(output, where, sizeof(where), werr, sizeof(werr)))
		return sdc_cli_bad(cli, "--output: %s", werr);
	if (cli->have_gpus ? o->trials / o->gpu_sizes.n < SDC_CALIBRATION_MIN_GEMMS
			   : o->trials / o->sizes.n < SDC_CALIBRATION_MIN_GEMMS)
		return sdc_cli_bad(cli, "--trials %" PRId64 " over %d size%s gives %" PRId64 " GEMMs a size; V-ABFT's maximum "
				   "needs at least %d", o->trials, cli->have_gpus ? o->gpu_sizes.n : o->sizes.n,
				   (cli->have_gpus ? o->gpu_sizes.n : o->sizes.n) == 1 ? "" : "s",
				   o->trials / (cli->have_gpus ? o->gpu_sizes.n : o->sizes.n), SDC_CALIBRATION_MIN_GEMMS);
	if (!sdc_fgemm_find(o->kernel))
		return sdc_cli_bad(cli, "--kernel '%s': expected auto, portable%s", o->kernel,
				   sdc_fgemm_find("openblas") ? " or openblas" : "");
	return 0;
}

/* What the CPUs' calibration of every precision shares. */
struct cpu_calibration {
	const struct sdc_run *run;
	int ncpus; /* the run's first devices, its CPUs */
	const char *kernel;
	const struct sdc_dist_pool *pool;
	int sizes[MAX_SIZES], nsizes;
	uint64_t trials;
	bool quiet;
};

/* The workers' statistics merged into *st, their GEMMs released, cb->w freed. */
static void gather_stats(struct calib *cb, int ncpus, struct precision_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (int d = 0; cb->w && d < ncpus; d++) {
		for (int s = 0; s < cb->nsizes; s++) {
			st->max_rel[s] = SDC_MAX(st->max_rel[s], cb->w[d].st.max_rel[s]);
			st->rows[s] += cb->w[d].st.rows[s];
			st->gemms[s] += cb->w[d].st.gemms[s];
			if (cb->w[d].ready[s])
				sdc_gemm_release(&cb->w[d].g[s]);
		}
	}
	free(cb->w);
}

/* One precision's maxima and its e_max (p: 0 fp32, 1 fp64) printed and stated into precisions;
 * t0: when its trials began. */
static void report_precision(const struct cpu_calibration *cc, int p, const struct precision_stats *st, double t0,
			     struct sdc_facts *precisions)
{
	const double u = p ? 0x1p-53 : 0x1p-24;
	const char *name = p ? "fp64" : "fp32";
	double emax = 0;
	uint64_t total_rows = 0;
	for (int s = 0; s < cc->nsizes; s++) {
		emax = SDC_MAX(emax, st->max_rel[s]);
		total_rows += st->rows[s];
		if (!cc->quiet)
			printf("  %s K=%-5d %7" PRIu64 " GEMMs %9" PRIu64 " rows  max |E|/|checksum| %.3g (%.1f u)\n", name,
			       cc->sizes[s], st->gemms[s], st->rows[s], st->max_rel[s], st->max_rel[s] / u);
	}
	emax *= 1.0 + MARGIN;
	if (!cc->quiet)
		printf("  %s e_max = %.3g (%.1f u: the maximum plus %.0f%%), %.1f s\n", name, emax, emax / u, 100 * MARGIN,
		       sdc_now() - t0);
	struct sdc_facts *pf = sdc_facts_key(precisions, name);
	sdc_facts_real(pf, "emax", emax);
	sdc_facts_int(pf, "rows", (int64_t)total_rows);
	sdc_facts_list(pf, "sizes");
	for (int s = 0; s < cc->nsizes; s++) {
		struct sdc_facts *row = sdc_facts_row(pf, "sizes");
		sdc_facts_int(row, "k", cc->sizes[s]);
		sdc_facts_int(row, "gemms", (int64_t)st->gemms[s]);
		sdc_facts_int(row, "rows", (int64_t)st->rows[s]);
		sdc_facts_real(row, "max_relative_error", st->max_rel[s]);
	}
}

/* One precision's trials on every CPU (p: 0 fp32, 1 fp64), reported. 0, or -1 (said). */
static int calibrate_precision(const struct cpu_calibration *cc, int p, struct sdc_facts *precisions)
{
	struct calib cb = {
		.cls = p ? SDC_GEMM_FP64_FAST : SDC_GEMM_FP32_FAST, .kernel = cc->kernel, .nsizes = cc->nsizes,
		.seed = cc->run->seed, .pool = cc->pool,
	};
	memcpy(cb.sizes, cc->sizes, sizeof(cb.sizes));
	cb.w = calloc((size_t)cc->ncpus, sizeof(*cb.w));
	const double t0 = sdc_now();
	const int prc = cb.w ? sdc_parallel_for(cc->run->devices, cc->ncpus, cc->trials, calib_trial, &cb) : -1;
	struct precision_stats st;
	gather_stats(&cb, cc->ncpus, &st);
	if (prc || cb.error[0]) {
		sdc_error("calibrate: %s", cb.error[0] ? cb.error : "interrupted");
		return -1;
	}
	report_precision(cc, p, &st, t0, precisions);
	return 0;
}

/* The CPUs' calibration file: its key, the method, the precisions measured, and the GPUs' entries
 * the file held, kept. 0, or -1 (said). */
static int write_cpu_calibration(const struct cpu_calibration *cc, const struct sdc_calibration_key *key,
				 struct sdc_facts *precisions, const char *output)
{
	char created[32], seed[32], err[700];
	sdc_format_utc(sdc_wall_now(), created, sizeof(created));
	snprintf(seed, sizeof(seed), "%" PRIu64, cc->run->seed);
	struct sdc_facts *doc = sdc_facts_new();
	sdc_facts_str(doc, "format", SDC_CALIBRATION_FORMAT);
	sdc_facts_int(doc, "version", SDC_CALIBRATION_VERSION);
	sdc_facts_str(doc, "tool_version", SDC_VERSION);
	sdc_facts_str(doc, "created", created);
	sdc_facts_str(doc, "key.cpu_model", key->cpu_model);
	sdc_facts_str(doc, "key.library", key->library);
	sdc_facts_str(doc, "key.library_version", key->library_version);
	sdc_facts_str(doc, "key.kernel", key->kernel);
	sdc_facts_str(doc, "method.protocol", "V-ABFT 3.6: max |E|/|checksum| on |N(1,1)| rows, plus 20%");
	sdc_facts_str(doc, "method.distribution", "|N(1,1)|");
	sdc_facts_int(doc, "method.trials", (int64_t)cc->trials);
	sdc_facts_list(doc, "method.sizes");
	for (int s = 0; s < cc->nsizes; s++)
		sdc_facts_append_int(doc, "method.sizes", cc->sizes[s]);
	sdc_facts_real(doc, "method.margin", MARGIN);
	sdc_facts_str(doc, "method.seed", seed);
	sdc_facts_put(doc, "precisions", precisions);
	/* The GPUs' entries of the file, kept. */
	struct sdc_facts *old = existing_calibration(output, cc->quiet);
	const struct sdc_facts *old_gpus = sdc_facts_find(old, "gpus");
	if (old_gpus)
		sdc_facts_put(doc, "gpus", sdc_facts_copy(old_gpus));
	sdc_facts_free(old);
	const int rc = sdc_calibration_write(output, doc, err, sizeof(err));
	if (rc)
		sdc_error("calibrate: %s", err);
	sdc_facts_free(doc);
	return rc ? -1 : 0;
}

static int calibrate_main(struct sdc_cmd *cmd)
{
	struct calibrate_opts *o = cmd->opts;
	struct sdc_cli *cli = &cmd->cli;
	const char *output = o->output ? o->output : sdc_calibration_default_path();
	const int bad = check_args(cmd, output);
	if (bad)
		return bad;
	struct sdc_run run;
	if (sdc_cli_start_run(cmd, &run, cli->have_seed ? cli->seed : 1))
		return sdc_cli_unknown(cli);
	sdc_blas_single_thread();
	sdc_stop_install_signals();
	if (cli->have_gpus) {
		const int grc = calibrate_gpus_main(cmd, &run, output);
		sdc_run_release(&run);
		return grc ? sdc_cli_unknown(cli) : 0;
	}
	struct cpu_calibration cc = { .run = &run, .nsizes = o->sizes.n, .trials = (uint64_t)o->trials,
				      .quiet = cli->quiet };
	memcpy(cc.sizes, o->sizes.v, sizeof(cc.sizes));
	/* The CPUs alone (they come first; GPUs are here only with --gpus). */
	while (cc.ncpus < run.ndevices && run.devices[cc.ncpus].kind == SDC_DEVICE_CPU)
		cc.ncpus++;
	const struct sdc_fgemm_impl *impl = sdc_fgemm_find(o->kernel);
	cc.kernel = impl->name;
	struct sdc_calibration_key key;
	sdc_calibration_key_here(&key, impl->name);
	struct sdc_dist_pool pool;
	if (sdc_dist_pool_init(&pool, SDC_DIST_ABSNORMAL1, run.seed)) {
		sdc_error("calibrate: out of memory");
		sdc_run_release(&run);
		return sdc_cli_unknown(cli);
	}
	cc.pool = &pool;
	struct sdc_facts *precisions = sdc_facts_new();
	int rc = 0;
	if (!cli->quiet)
		printf("sdcscan calibrate: %s %s (kernel %s) on %d CPU%s of %s; |N(1,1)| data, %" PRIu64
		       " GEMMs per precision\n",
		       key.library, key.library_version, key.kernel, cc.ncpus, cc.ncpus == 1 ? "" : "s", key.cpu_model,
		       cc.trials);
	for (int p = 0; p < 2 && !rc; p++)
		if (sdc_opt_set_has(o->precisions, p))
			rc = calibrate_precision(&cc, p, precisions);
	sdc_dist_pool_release(&pool);
	if (rc) {
		sdc_facts_free(precisions);
		sdc_run_release(&run);
		return sdc_cli_unknown(cli);
	}
	if (write_cpu_calibration(&cc, &key, precisions, output)) {
		sdc_run_release(&run);
		return sdc_cli_unknown(cli);
	}
	printf("OK: calibration written to %s\n", output);
	sdc_run_release(&run);
	return 0;
}

const struct sdc_command sdc_gemm_calibrate = {
	.name = "gemm",
	.summary = "measure e_max for the fast class's V-ABFT thresholds on this host (--gpus: on its GPUs) and write "
		   "the calibration file that sdcscan run then uses",
	.options = calibrate_options,
	.opts_size = sizeof(struct calibrate_opts),
	.common = SDC_CF_CPUS | SDC_CF_GPUS | SDC_CF_SEED | SDC_CF_QUIET,
	.flags = SDC_CMD_GPUS_ASKED,
	.fn = calibrate_main,
};
