/*
 * Subcommands as data. Each command is one struct: its name, summary, options (the option-table
 * form probes use, base/options.h, with a short letter and an argument name), which common flags it
 * takes, whether it joins an MPI job, its positional arguments, its sub-verbs and its function.
 * One driver (commands/driver.c) picks the command and sub-verb by position, joins MPI when the
 * command says so, parses the common flags and the command's table with getopt, and generates
 * --help from the same tables. A probe's own tools (its benchmarks, campaign, calibration) are
 * commands in the probe's folder, reached through the registry (probe/probe.h).
 */
#ifndef SDC_COMMAND_H
#define SDC_COMMAND_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/macros.h"
#include "base/verdict.h"
#include "device/device.h"
#include "base/options.h"

struct sdc_run;

/* The flags many commands share; a command lists the ones it takes. */
enum sdc_common_flag {
	SDC_CF_CPUS = 1u << 0,  /* -c, --cpus LIST */
	SDC_CF_SEED = 1u << 1,  /* -S, --seed N */
	SDC_CF_JSON = 1u << 2,  /* -j, --json FILE|- */
	SDC_CF_EXIT = 1u << 3,  /* -e, --exit-codes nagios|npd */
	SDC_CF_QUIET = 1u << 4, /* -q, --quiet */
	SDC_CF_COLOR = 1u << 5, /* --no-color */
	SDC_CF_GPUS = 1u << 6,  /* -g, --gpus LIST|all|none */
	SDC_CF_REPORTING = SDC_CF_EXIT | SDC_CF_QUIET | SDC_CF_COLOR,
};

enum sdc_command_flag {
	SDC_CMD_JOINS_MPI = 1u << 0, /* under mpirun or srun, every rank runs it and they talk (mpi/transport.h) */
	SDC_CMD_BURNS = 1u << 1,     /* it burns devices: documented as such in --help */
	SDC_CMD_GPUS_ASKED = 1u << 2, /* GPUs only when --gpus names them (a tool that measures CPUs otherwise) */
};

/* What the common flags said. */
struct sdc_cli {
	const char *command; /* "run", "bench embbag": names the command in messages */
	enum sdc_exit_style exit_style;
	bool have_cpus;
	cpu_set_t cpus;
	bool have_gpus;
	struct sdc_gpu_select gpus;
	bool have_seed;
	uint64_t seed;
	const char *json;
	bool quiet, no_color;
};

struct sdc_cmd;

struct sdc_command {
	const char *name;
	const char *summary;
	const char *args;        /* positional arguments in usage lines ("FILE"); NULL: none */
	int min_args, max_args;  /* how many positional arguments it takes */
	const struct sdc_option *options; /* its own options (SDC_OPT_END-terminated); may be NULL */
	size_t opts_size;                  /* the struct they fill (sdc_cmd.opts) */
	unsigned common;                   /* enum sdc_common_flag */
	unsigned flags;                    /* enum sdc_command_flag */
	/* Sub-verbs, chosen by the first argument after the command by their names: a table (subs,
	 * NULL-terminated), or where the registry holds them (bench, campaign, calibrate) sub_at,
	 * the i-th for i = 0, 1, ... and NULL after the last. The driver finds a verb, lists them in
	 * --help and names them in messages from these alone. default_sub runs when the first
	 * argument is an option or missing; without one a sub-verb is required. */
	const struct sdc_command *const *subs;
	const struct sdc_command *(*sub_at)(int i);
	const char *default_sub;
	/* What --json does for this command, where it is not the common words (NULL: those). */
	const char *json_help;
	/* More --help text after the options (NULL: none). */
	void (*help)(FILE *out);
	int (*fn)(struct sdc_cmd *c);
};

/* One invocation, as the driver hands it to a command's function. */
struct sdc_cmd {
	const struct sdc_command *command;
	struct sdc_cli cli;
	void *opts;         /* the command's options struct, defaults then the command line */
	char **args;        /* positional arguments */
	int nargs;
	int argc;           /* the whole command line, for reports */
	char **argv;
};

/* Prints "sdcscan CMD: message (see 'sdcscan CMD --help')" and returns the UNKNOWN exit code. */
int sdc_cli_bad(const struct sdc_cli *cli, const char *fmt, ...) SDC_PRINTF(2, 3);
/* The UNKNOWN exit code in the command's style (for "could not test" after a message). */
int sdc_cli_unknown(const struct sdc_cli *cli);

/*
 * A run for a command that burns or measures: devices from --cpus (and --gpus), the seed, argv.
 * -1 after printing why not (run is then released).
 */
int sdc_cli_start_run(struct sdc_cmd *c, struct sdc_run *run, uint64_t seed);
/* A benchmark's start: the run, with this thread pinned to the first CPU. -1 after printing why not. */
int sdc_cli_bench_start(struct sdc_cmd *c, struct sdc_run *run);

/* --json -: from here on only the JSON goes to stdout (sdc_cli_write_json), and what the command
 * prints for people goes to stderr. 0, or -1 (said). */
int sdc_cli_json_stdout(void);

/* Writes j (a json_t *) to path ("-": stdout) atomically, pretty-printed; -1 after printing why not. */
int sdc_cli_write_json(const char *path, void *j, const char *who);
/* The same for a probe's benchmark or campaign: its facts (run/facts.h) as the JSON. */
struct sdc_facts;
int sdc_cli_write_facts(const char *path, struct sdc_facts *f, const char *who);

/*
 * The end of a campaign or benchmark that states targets: records targets_met in out (a json_t
 * object), prints "OK: every target met" or "CRITICAL: a target was missed", writes out to
 * --json if asked; returns the exit code (0, 2, or 3 when the JSON could not be written).
 */
int sdc_cli_targets_end(const struct sdc_cli *cli, void *out, bool targets_met);
/* The same for a probe's benchmark or campaign, whose JSON is its facts (run/facts.h). */
int sdc_cli_facts_end(const struct sdc_cli *cli, struct sdc_facts *out, bool targets_met);

/*
 * Matrix sizes, comma-separated: "N" (N x N x N) or "MxNxK". Each dimension within [1, 16384]
 * (k from 4 to 65536). Returns how many (at most max), or -1 when malformed.
 */
struct sdc_size3 {
	int m, n, k;
};
int sdc_cli_parse_sizes(const char *s, struct sdc_size3 *out, int max);

/* Option parsers for command tables (SDC_OPT_CUSTOM). */
#define SDC_CLI_SIZES_MAX 16
struct sdc_size_list {
	struct sdc_size3 v[SDC_CLI_SIZES_MAX];
	int n; /* 0: not given */
};
/* struct sdc_size_list from "MxNxK or N, comma-separated" */
int sdc_cli_opt_sizes(const char *value, void *field, char *err, size_t errlen);
/* one struct sdc_size3 */
int sdc_cli_opt_size(const char *value, void *field, char *err, size_t errlen);
/* An SDC_OPT_CUSTOM parser for an age in seconds (a double, more than 0). */
int sdc_cli_opt_age(const char *value, void *field, char *err, size_t errlen);
/* double seconds in (0, 600]: a benchmark's --seconds */
int sdc_cli_opt_seconds(const char *value, void *field, char *err, size_t errlen);

/* The entry point: picks, parses and runs a command (commands/driver.c). */
int sdc_main(int argc, char **argv);

#endif
