/* What the burning commands (run, selftest, bench) share: common flags, devices, the report. */
#ifndef SDC_CLI_H
#define SDC_CLI_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/output.h"
#include "core/plan.h"
#include "run.h"
#include "base/verdict.h"

struct sdc_cli {
	const char *command;
	enum sdc_exit_style exit_style;
	bool have_cpus;
	cpu_set_t cpus;
	bool have_seed;
	uint64_t seed;
	const char *json;
	bool quiet, no_color;
};

/* Prints "sdcscan CMD: message (see ...)" and returns the UNKNOWN exit code. */
int sdc_cli_bad(const struct sdc_cli *cli, const char *fmt, ...) SDC_PRINTF(2, 3);
/* One line for getopt's ':' (missing value) and '?' (unknown option). */
int sdc_cli_getopt_error(const struct sdc_cli *cli, int c, char **argv);
/* Handles -c/--cpus, -S/--seed, -j/--json, -q, --no-color (C), -e: 0 done, 1 not ours, -1 error. */
int sdc_cli_common(struct sdc_cli *cli, int c, const char *arg);
/*
 * The default branch of every command's getopt switch: getopt's errors ('?', ':') and the common
 * options. Returns 0 when handled, -1 after printing one line about a bad argument.
 */
int sdc_cli_default(struct sdc_cli *cli, int c, char **argv);
/* Inits run with seed, devices and argv. -1 after printing the error (run is then released). */
int sdc_cli_prepare_run(struct sdc_cli *cli, struct sdc_run *run, const struct sdc_plan *plan, int argc,
			char **argv);
/* Writes the report if asked, prints the verdict line, returns the exit code. */
int sdc_cli_finish(struct sdc_cli *cli, struct sdc_run *run, const struct sdc_plan *plan,
		   struct sdc_output *out, enum sdc_verdict v);

/*
 * Matrix sizes, comma-separated: "N" (N x N x N) or "MxNxK". Each dimension within [1, 16384]
 * (k from 4 to 65536). Returns how many (at most max), or -1 when malformed.
 */
struct sdc_size3 {
	int m, n, k;
};
int sdc_cli_parse_sizes(const char *s, struct sdc_size3 *out, int max);

/*
 * FLAG's value ARG as an unsigned integer in [lo, hi]. -1 after printing "FLAG 'ARG': expected an
 * integer from LO to HI" (return the UNKNOWN exit code then).
 */
int sdc_cli_uint(const struct sdc_cli *cli, const char *flag, const char *arg, uint64_t lo, uint64_t hi,
		 uint64_t *out);
/* A benchmark's --seconds: more than 0 and at most 600. -1 after printing why not. */
int sdc_cli_seconds(const struct sdc_cli *cli, const char *arg, double *out);
/*
 * A benchmark's start: the run (its devices from --cpus), with this thread pinned to the first
 * CPU. -1 after printing why not (run is then released).
 */
int sdc_cli_bench_start(struct sdc_cli *cli, struct sdc_run *run, int argc, char **argv);

/* Writes j to path ("-": stdout) atomically, pretty-printed; -1 after printing why not. */
int sdc_cli_write_json(const char *path, void *j, const char *who);

int sdc_cmd_selftest(int argc, char **argv);
int sdc_cmd_bench(int argc, char **argv);
int sdc_cmd_calibrate(int argc, char **argv);
int sdc_cmd_campaign(int argc, char **argv);
int sdc_campaign_embbag(int argc, char **argv);

#endif
