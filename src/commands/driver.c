/*
 * The one driver behind every command (probe/command.h): the command and its sub-verbs are chosen by
 * position (argv[1], then the first argument after it when the command has sub-verbs), MPI is
 * joined when the chosen command says so, the common flags and the command's own table are
 * parsed with getopt, and --help is generated from the same tables.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe/command.h"
#include "commands/commands.h"
#include "runner/registry.h"
#include "device/cpu.h"
#include "mpi/transport.h"
#include "sdc_config.h"
#include "base/message.h"
#include "base/parse.h"

static const struct sdc_command *const commands[] = {
	&sdc_command_run,     &sdc_command_status,    &sdc_command_clear,     &sdc_command_list,     &sdc_command_selftest,
	&sdc_command_golden,  &sdc_command_fleet,     &sdc_command_bench,     &sdc_command_calibrate, &sdc_command_campaign,
	&sdc_command_version, NULL,
};

/* The common flags, for getopt and --help; parsed by parse_common. */
static const struct {
	unsigned bit;
	struct sdc_option opt;
} common[] = {
	{ SDC_CF_CPUS, { .name = "cpus", .short_name = 'c', .metavar = "LIST", .type = SDC_OPT_CUSTOM,
			 .help = "CPUs to use, e.g. 0-3,8 (default: all this process may use)" } },
	{ SDC_CF_GPUS, { .name = "gpus", .short_name = 'g', .metavar = "LIST", .type = SDC_OPT_CUSTOM,
			 .help = "GPUs to use: all (the default), none, or indices like 0,2-3" } },
	{ SDC_CF_SEED, { .name = "seed", .short_name = 'S', .metavar = "N", .type = SDC_OPT_CUSTOM,
			 .help = "data seed (every finding can be replayed from it)" } },
	{ SDC_CF_JSON, { .name = "json", .short_name = 'j', .metavar = "FILE|-", .type = SDC_OPT_CUSTOM,
			 .help = "write the JSON report to FILE (atomically), or to stdout with -" } },
	{ SDC_CF_EXIT, { .name = "exit-codes", .short_name = 'e', .metavar = "STYLE", .type = SDC_OPT_CUSTOM,
			 .help = "nagios (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN) or npd (0, 1 problem, 2 unknown)" } },
	{ SDC_CF_QUIET, { .name = "quiet", .short_name = 'q', .type = SDC_OPT_FLAG,
			  .help = "print only the verdict line" } },
	{ SDC_CF_COLOR, { .name = "no-color", .type = SDC_OPT_FLAG,
			  .help = "no colour even on a terminal (NO_COLOR is honoured too)" } },
};

/* Whether some variant of p at its default options runs on GPUs. */
static bool runs_on_gpus(const struct sdc_probe *p)
{
	void *opts = calloc(1, p->opts_size ? p->opts_size : 1);
	struct sdc_variant v[SDC_VARIANTS_MAX];
	bool gpus = false;
	if (!opts)
		return false;
	sdc_opt_defaults(p->options, opts);
	const int n = p->variants ? p->variants(opts, v, SDC_VARIANTS_MAX) : 0;
	for (int i = 0; i < n; i++)
		gpus |= (v[i].devices & SDC_ON_GPU) != 0;
	free(opts);
	return gpus;
}

/* "a, b and c" (last: " and ") or "a, b or c": names[0..n), joined for a sentence. */
static void join_names(const char *const *names, int n, const char *last, char *buf, size_t len)
{
	buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		const size_t used = strlen(buf);
		snprintf(buf + used, len - used, "%s%s", i ? (i + 1 < n ? ", " : last) : "", names[i]);
	}
}

static void top_usage(FILE *out)
{
	fprintf(out, "Usage: sdcscan COMMAND [OPTIONS]\n"
		     "Find CPUs and GPUs that compute wrong answers without crashing.\n\nCommands:\n");
	for (int i = 0; commands[i]; i++)
		fprintf(out, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
	/* the probes with GPU variants, from the registry: a new GPU lane is never missing here */
	const char *gpu_probes[32];
	int n = 0;
	for (int i = 0; sdc_probes[i] && n < (int)SDC_ARRAY_SIZE(gpu_probes); i++)
		if (runs_on_gpus(sdc_probes[i]))
			gpu_probes[n++] = sdc_probes[i]->name;
	char names[256];
	join_names(gpu_probes, n, " and ", names, sizeof(names));
	fprintf(out, "\nRun 'sdcscan COMMAND --help' for the options of a command.\n"
		     "Exit status: 0 OK, 1 WARNING, 2 CRITICAL (corruption found), 3 UNKNOWN (could not test).\n"
		     "GPUs: %s run on them; not yet validated on GPU hardware\n"
		     "by this project (the host side is tested; see BUGS in sdcscan(1)). 'sdcscan version' says which\n"
		     "GPUs this build can test.\n",
		names);
}

/* "  -c, --cpus LIST          help (default: x)" */
static void print_option(FILE *out, const struct sdc_option *o)
{
	char left[64];
	int w;
	if (o->short_name)
		w = snprintf(left, sizeof(left), "-%c, --%s", o->short_name, o->name);
	else
		w = snprintf(left, sizeof(left), "    --%s", o->name);
	if (o->type != SDC_OPT_FLAG && w > 0 && (size_t)w < sizeof(left))
		snprintf(left + w, sizeof(left) - (size_t)w, " %s", o->metavar ? o->metavar : "VALUE");
	fprintf(out, "  %-25s %s", left, o->help);
	if (o->def && *o->def && o->type != SDC_OPT_FLAG)
		fprintf(out, " (default %s)", o->def);
	fputc('\n', out);
}

/* The i-th sub-verb of c (its table's, or sub_at's), NULL after the last. */
static const struct sdc_command *sub_at(const struct sdc_command *c, int i)
{
	if (c->sub_at)
		return c->sub_at(i);
	return c->subs ? c->subs[i] : NULL;
}

static bool has_subs(const struct sdc_command *c)
{
	return c->subs || c->sub_at;
}

static void command_usage(FILE *out, const struct sdc_command *c, const char *path)
{
	if (has_subs(c)) {
		fprintf(out, "Usage: sdcscan %s %s [OPTIONS]\n%s\n", path, c->default_sub ? "[VERB]" : "VERB", c->summary);
		fprintf(out, "\nVerbs:\n");
		const struct sdc_command *s;
		for (int i = 0; (s = sub_at(c, i)); i++)
			fprintf(out, "  %-12s %s\n", s->name, s->summary);
		if (c->default_sub)
			fprintf(out, "Without a verb: %s. 'sdcscan %s VERB --help' for a verb's options.\n",
				c->default_sub, path);
		else
			fprintf(out, "'sdcscan %s VERB --help' for a verb's options.\n", path);
		if (c->help) {
			fputc('\n', out);
			c->help(out);
		}
		return;
	}
	fprintf(out, "Usage: sdcscan %s [OPTIONS]%s%s\n%s\n", path, c->args ? " " : "", c->args ? c->args : "",
		c->summary);
	fprintf(out, "\nOptions:\n");
	for (const struct sdc_option *o = c->options; o && o->name; o++)
		print_option(out, o);
	for (size_t i = 0; i < SDC_ARRAY_SIZE(common); i++) {
		if (!(c->common & common[i].bit))
			continue;
		struct sdc_option o = common[i].opt;
		if (common[i].bit == SDC_CF_GPUS && c->flags & SDC_CMD_GPUS_ASKED)
			o.help = "measure GPUs instead: all, or indices like 0,2-3 (default: none, the CPUs)";
		if (common[i].bit == SDC_CF_JSON && c->json_help)
			o.help = c->json_help;
		print_option(out, &o);
	}
	fprintf(out, "  %-25s %s\n", "-h, --help", "this help");
	if (c->help) {
		fputc('\n', out);
		c->help(out);
	}
}

static int parse_common(struct sdc_cli *cli, const char *name, const char *arg)
{
	char err[256];
	if (!strcmp(name, "cpus")) {
		if (sdc_cpu_list_parse(arg, &cli->cpus, err, sizeof(err)))
			return sdc_cli_bad(cli, "--cpus: %s", err), -1;
		cli->have_cpus = true;
	} else if (!strcmp(name, "gpus")) {
		if (sdc_gpu_select_parse(arg, &cli->gpus, err, sizeof(err)))
			return sdc_cli_bad(cli, "--gpus: %s", err), -1;
		cli->have_gpus = true;
	} else if (!strcmp(name, "seed")) {
		if (!sdc_parse_u64(arg, &cli->seed))
			return sdc_cli_bad(cli, "--seed '%s': expected a non-negative integer%s", arg,
					   sdc_non_decimal(arg) ? ", in decimal" : ""), -1;
		cli->have_seed = true;
	} else if (!strcmp(name, "json")) {
		cli->json = arg;
	} else if (!strcmp(name, "exit-codes")) {
		if (!strcmp(arg, "nagios"))
			cli->exit_style = SDC_EXIT_NAGIOS;
		else if (!strcmp(arg, "npd"))
			cli->exit_style = SDC_EXIT_NPD;
		else
			return sdc_cli_bad(cli, "--exit-codes '%s': expected nagios or npd", arg), -1;
	} else if (!strcmp(name, "quiet")) {
		cli->quiet = true;
	} else if (!strcmp(name, "no-color")) {
		cli->no_color = true;
	}
	return 0;
}

/* One line naming a bad value: "--duration 'soon': expected seconds, ..." or the parser's own words. */
static int bad_value(const struct sdc_cli *cli, const struct sdc_option *o, const char *arg, const char *err)
{
	if (o->type == SDC_OPT_SET)
		return sdc_cli_bad(cli, "--%s: %s", o->name, err);
	char expected[600];
	sdc_opt_expected(o, expected, sizeof(expected));
	if (o->type == SDC_OPT_CUSTOM)
		snprintf(expected, sizeof(expected), "%s", strstr(err, "(expected ") ? strstr(err, "(expected ") + 10 : err);
	size_t n = strlen(expected);
	if (n && expected[n - 1] == ')' && o->type == SDC_OPT_CUSTOM)
		expected[n - 1] = '\0';
	const bool number = o->type == SDC_OPT_INT || o->type == SDC_OPT_DOUBLE || o->type == SDC_OPT_CUSTOM;
	return sdc_cli_bad(cli, "--%s '%s': expected %s%s", o->name, arg, expected,
			   number && sdc_non_decimal(arg) ? ", in decimal" : "");
}

/*
 * The exit style asked for anywhere on the line, before anything can fail: an error in a flag
 * that comes before --exit-codes must already be reported in its style.
 */
static enum sdc_exit_style scan_exit_style(int argc, char **argv)
{
	enum sdc_exit_style style = SDC_EXIT_NAGIOS;
	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		if (!strcmp(argv[i], "--"))
			break;
		if ((!strcmp(argv[i], "--exit-codes") || !strcmp(argv[i], "-e")) && i + 1 < argc)
			v = argv[i + 1];
		else if (!strncmp(argv[i], "--exit-codes=", 13))
			v = argv[i] + 13;
		if (v && !strcmp(v, "npd"))
			style = SDC_EXIT_NPD;
		else if (v && !strcmp(v, "nagios"))
			style = SDC_EXIT_NAGIOS;
	}
	return style;
}

/* Parses argv[0..argc) (argv[0] is the command's last word) into c. 1: --help was printed. */
static int parse(struct sdc_cmd *c, int argc, char **argv)
{
	const struct sdc_command *cmd = c->command;
	struct option longopts[64];
	const struct sdc_option *which[64];
	bool is_common[64] = { false };
	char shorts[160] = ":";
	int n = 0;
	size_t sl = 1;
	for (size_t i = 0; i < SDC_ARRAY_SIZE(common); i++)
		if (cmd->common & common[i].bit)
			is_common[n] = true, which[n++] = &common[i].opt;
	for (const struct sdc_option *o = cmd->options; o && o->name && n < 62; o++)
		which[n++] = o;
	for (int i = 0; i < n; i++) {
		const struct sdc_option *o = which[i];
		longopts[i] = (struct option){ o->name, o->type == SDC_OPT_FLAG ? no_argument : required_argument, NULL,
					       o->short_name ? o->short_name : 256 + i };
		if (o->short_name) {
			if (strchr(shorts + 1, o->short_name) || o->short_name == 'h') {
				sdc_error("internal: sdcscan %s: -%c is used twice", c->cli.command, o->short_name);
				abort();
			}
			shorts[sl++] = o->short_name;
			if (o->type != SDC_OPT_FLAG)
				shorts[sl++] = ':';
		}
	}
	longopts[n] = (struct option){ "help", no_argument, NULL, 'h' };
	longopts[n + 1] = (struct option){ NULL, 0, NULL, 0 };
	shorts[sl++] = 'h';
	shorts[sl] = '\0';

	/* Repeatable options get room for every argument of the line. */
	for (const struct sdc_option *o = cmd->options; o && o->name; o++) {
		if (o->type != SDC_OPT_LIST)
			continue;
		struct sdc_arglist *l = (struct sdc_arglist *)(void *)((char *)c->opts + o->offset);
		l->v = calloc((size_t)argc + 1, sizeof(char *));
		if (!l->v) {
			sdc_error("out of memory");
			return -1;
		}
	}
	int ch;
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, shorts, longopts, NULL)) != -1) {
		if (ch == 'h') {
			command_usage(stdout, cmd, c->cli.command);
			return 1;
		}
		if (ch == ':') {
			sdc_cli_bad(&c->cli, "option '%s' needs a value", argv[optind - 1]);
			return -1;
		}
		if (ch == '?') {
			if (optopt && optopt < 256)
				sdc_cli_bad(&c->cli, "unknown option '-%c'", optopt);
			else
				sdc_cli_bad(&c->cli, "unknown option '%s'", argv[optind - 1]);
			return -1;
		}
		int k = 0;
		while (k < n && longopts[k].val != ch)
			k++;
		if (k == n)
			continue;
		const struct sdc_option *o = which[k];
		if (is_common[k]) {
			if (parse_common(&c->cli, o->name, optarg))
				return -1;
			continue;
		}
		char err[600];
		if (sdc_opt_parse(o, c->opts, o->type == SDC_OPT_FLAG ? "true" : optarg, err, sizeof(err))) {
			bad_value(&c->cli, o, optarg, err);
			return -1;
		}
	}
	c->args = argv + optind;
	c->nargs = argc - optind;
	if (c->nargs > cmd->max_args) {
		sdc_cli_bad(&c->cli, "unexpected argument '%s'", c->args[cmd->max_args]);
		return -1;
	}
	if (c->nargs < cmd->min_args) {
		sdc_cli_bad(&c->cli, "expected %s", cmd->args ? cmd->args : "an argument");
		return -1;
	}
	return 0;
}

static const struct sdc_command *find_sub(const struct sdc_command *c, const char *name)
{
	const struct sdc_command *s;
	for (int i = 0; (s = sub_at(c, i)); i++)
		if (!strcmp(s->name, name))
			return s;
	return NULL;
}

/* "gemm, overhead, embbag": c's sub-verbs by name, for messages. */
static void sub_names(const struct sdc_command *c, char *buf, size_t len)
{
	const struct sdc_command *s;
	buf[0] = '\0';
	for (int i = 0; (s = sub_at(c, i)); i++) {
		const size_t used = strlen(buf);
		snprintf(buf + used, len - used, "%s%s", i ? ", " : "", s->name);
	}
}

int sdc_main(int argc, char **argv)
{
	if (argc < 2) {
		top_usage(stderr);
		return SDC_UNKNOWN;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		top_usage(stdout);
		return 0;
	}
	const char *name = !strcmp(argv[1], "--version") ? "version" : argv[1];
	const struct sdc_command *cmd = NULL;
	for (int i = 0; commands[i] && !cmd; i++)
		if (!strcmp(commands[i]->name, name))
			cmd = commands[i];
	const enum sdc_exit_style style = scan_exit_style(argc, argv);
	if (!cmd) {
		/* the commands by name, from the table: a new one is never missing from the message */
		const char *all[SDC_ARRAY_SIZE(commands)];
		int n = 0;
		for (; commands[n]; n++)
			all[n] = commands[n]->name;
		char names[256];
		join_names(all, n, " or ", names, sizeof(names));
		sdc_print_line(stderr, "sdcscan: unknown command '%s' (expected %s; see 'sdcscan --help')", argv[1], names);
		return sdc_exit_code(SDC_UNKNOWN, style);
	}
	/* The sub-verb is the argument right after the command: never searched for further along. */
	char path[96];
	int first = 2;
	snprintf(path, sizeof(path), "%s", cmd->name);
	while (has_subs(cmd)) {
		const struct sdc_cli parent = { .command = path, .exit_style = style };
		const char *word = first < argc ? argv[first] : NULL;
		const struct sdc_command *sub = NULL;
		char names[512];
		if (word && (!strcmp(word, "--help") || !strcmp(word, "-h"))) {
			command_usage(stdout, cmd, path);
			return 0;
		}
		if (word && word[0] != '-') {
			if (!(sub = find_sub(cmd, word))) {
				sub_names(cmd, names, sizeof(names));
				return sdc_cli_bad(&parent, "unknown verb '%s' (expected %s)", word, names);
			}
			first++;
		} else if (cmd->default_sub) {
			sub = find_sub(cmd, cmd->default_sub);
		}
		if (!sub) {
			sub_names(cmd, names, sizeof(names));
			return sdc_cli_bad(&parent, "expected %s: %s", cmd->args ? cmd->args : "a verb", names);
		}
		size_t used = strlen(path);
		snprintf(path + used, sizeof(path) - used, " %s", sub->name);
		cmd = sub;
	}

	if ((cmd->flags & SDC_CMD_JOINS_MPI) && sdc_mpi_init(&argc, &argv)) {
		fprintf(stderr, "sdcscan: MPI_Init failed\n");
		return sdc_exit_code(SDC_UNKNOWN, style);
	}
	/* The report's argv starts at the command, as it always has. */
	struct sdc_cmd c = { .command = cmd, .argc = argc - 1, .argv = argv + 1 };
	c.cli.command = path;
	c.cli.exit_style = style;
	c.opts = calloc(1, cmd->opts_size ? cmd->opts_size : 1);
	int rc;
	if (!c.opts) {
		sdc_error("out of memory");
		rc = sdc_exit_code(SDC_UNKNOWN, style);
		goto out;
	}
	sdc_opt_defaults(cmd->options, c.opts);
	const int p = parse(&c, argc - first + 1, argv + first - 1);
	if (p) {
		rc = p > 0 ? 0 : sdc_exit_code(SDC_UNKNOWN, c.cli.exit_style);
		goto out;
	}
	sdc_set_quiet(c.cli.quiet);
	/* --json -: stdout holds the JSON alone, whatever the command prints for people */
	if (c.cli.json && !strcmp(c.cli.json, "-") && sdc_cli_json_stdout()) {
		rc = sdc_exit_code(SDC_UNKNOWN, c.cli.exit_style);
		goto out;
	}
	rc = cmd->fn(&c);
	/* Output that did not reach its file (a full disk, a closed pipe) makes a clean run UNKNOWN. */
	if (fflush(stdout) || ferror(stdout)) {
		sdc_error("%s: writing the output failed: %s", path, strerror(errno));
		if (rc == sdc_exit_code(SDC_OK, c.cli.exit_style) || rc == sdc_exit_code(SDC_WARNING, c.cli.exit_style))
			rc = sdc_exit_code(SDC_UNKNOWN, c.cli.exit_style);
	}
out:
	for (const struct sdc_option *o = cmd->options; o && o->name && c.opts; o++)
		if (o->type == SDC_OPT_LIST)
			free(((struct sdc_arglist *)(void *)((char *)c.opts + o->offset))->v);
	free(c.opts);
	if (cmd->flags & SDC_CMD_JOINS_MPI)
		sdc_mpi_end(rc);
	return rc;
}
