/* The helpers commands share, probes' own commands included (probe/command.h). */
#include "probe/command.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "device/cpu.h"
#include "run/facts_json.h"
#include "mpi/transport.h"
#include "run/record.h"
#include "base/message.h"
#include "base/parse.h"
#include "base/clock.h"
#include "base/files.h"

int sdc_cli_bad(const struct sdc_cli *cli, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* the message quotes what was typed: a control character in it is shown escaped, never sent raw */
	sdc_print_line(stderr, "sdcscan %s: %s (see 'sdcscan %s --help')", cli->command, msg, cli->command);
	return sdc_exit_code(SDC_UNKNOWN, cli->exit_style);
}

int sdc_cli_unknown(const struct sdc_cli *cli)
{
	return sdc_exit_code(SDC_UNKNOWN, cli->exit_style);
}

int sdc_cli_start_run(struct sdc_cmd *c, struct sdc_run *run, uint64_t seed)
{
	struct sdc_cli *cli = &c->cli;
	char err[512];
	if (sdc_run_init(run)) {
		sdc_error("out of memory");
		return -1;
	}
	/* A report that could not be written is found now, not after the burn. */
	char where[4096];
	if (cli->json && strcmp(cli->json, "-") && sdc_output_path(cli->json, where, sizeof(where), err, sizeof(err))) {
		sdc_cli_bad(cli, "--json: %s", err);
		sdc_run_release(run);
		return -1;
	}
	run->argc = c->argc;
	run->argv = c->argv;
	run->start_wall = sdc_wall_now();
	run->start_mono = sdc_now();
	run->seed = seed;
	sdc_mpi_launch_check(run);
	/* GPUs only for the commands that take --gpus: the others test CPUs alone, as they always did. */
	const struct sdc_gpu_select none = { .none = true };
	const bool asked_only = c->command->flags & SDC_CMD_GPUS_ASKED;
	const struct sdc_gpu_select *gpus = !(c->command->common & SDC_CF_GPUS) ? &none
					    : cli->have_gpus		     ? &cli->gpus
					    : asked_only		     ? &none
									     : NULL;
	if (sdc_devices_discover(cli->have_cpus ? &cli->cpus : NULL, gpus, &run->devices, &run->ndevices,
				 run->gpu_note, sizeof(run->gpu_note), err, sizeof(err))) {
		sdc_cli_bad(cli, "%s", err);
		goto out_release;
	}
	if (!run->ndevices) {
		sdc_cli_bad(cli, "no CPUs selected");
		goto out_release;
	}
	return 0;
out_release:
	sdc_run_release(run);
	return -1;
}

int sdc_cli_bench_start(struct sdc_cmd *c, struct sdc_run *run)
{
	if (sdc_cli_start_run(c, run, c->cli.have_seed ? c->cli.seed : 1))
		return -1;
	char err[256];
	if (sdc_device_bind(&run->devices[0], err, sizeof(err))) {
		sdc_error("%s: %s", c->cli.command, err);
		sdc_run_release(run);
		return -1;
	}
	return 0;
}

/* Where --json - goes: the process's stdout as it was, while the commands' own printing goes to
 * stderr (sdc_cli_json_stdout). */
static FILE *json_stdout;

int sdc_cli_json_stdout(void)
{
	fflush(stdout);
	const int fd = dup(STDOUT_FILENO);
	if (fd < 0 || !(json_stdout = fdopen(fd, "w")) || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
		sdc_error("--json -: cannot set stdout aside for the JSON: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int sdc_cli_write_json(const char *path, void *j, const char *who)
{
	char *text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	char err[600];
	int rc = 0;
	if (!text) {
		sdc_error("%s: cannot format the JSON", who);
		return -1;
	}
	const size_t len = strlen(text);
	if (!strcmp(path, "-")) {
		FILE *out = json_stdout ? json_stdout : stdout;
		if (fwrite(text, 1, len, out) != len || fputc('\n', out) == EOF || fflush(out)) {
			sdc_error("%s: cannot write to stdout", who);
			rc = -1;
		}
	} else {
		char *with_nl = malloc(len + 1);
		if (!with_nl) {
			sdc_error("%s: out of memory", who);
			rc = -1;
		} else {
			memcpy(with_nl, text, len);
			with_nl[len] = '\n';
			if (sdc_write_atomic(path, with_nl, len + 1, err, sizeof(err))) {
				sdc_error("%s: %s", who, err);
				rc = -1;
			}
			free(with_nl);
		}
	}
	free(text);
	return rc;
}

int sdc_cli_write_facts(const char *path, struct sdc_facts *f, const char *who)
{
	return sdc_cli_write_json(path, sdc_facts_json(f), who);
}

int sdc_cli_facts_end(const struct sdc_cli *cli, struct sdc_facts *out, bool targets_met)
{
	return sdc_cli_targets_end(cli, sdc_facts_json(out), targets_met);
}

int sdc_cli_targets_end(const struct sdc_cli *cli, void *out, bool targets_met)
{
	json_object_set_new(out, "targets_met", json_boolean(targets_met));
	printf("\n%s\n", targets_met ? "OK: every target met" : "CRITICAL: a target was missed (see above)");
	if (cli->json && sdc_cli_write_json(cli->json, out, cli->command))
		return sdc_cli_unknown(cli);
	return sdc_exit_code(targets_met ? SDC_OK : SDC_CRITICAL, cli->exit_style);
}

int sdc_cli_parse_sizes(const char *s, struct sdc_size3 *out, int max)
{
	int n = 0;
	while (*s) {
		int m, nn, k, used;
		if (n == max)
			return -1;
		if (sscanf(s, "%dx%dx%d%n", &m, &nn, &k, &used) == 3 && (s[used] == ',' || !s[used])) {
			/* MxNxK */
		} else if (sscanf(s, "%d%n", &m, &used) == 1 && (s[used] == ',' || !s[used])) {
			nn = k = m;
		} else {
			return -1;
		}
		if (m < 1 || nn < 1 || k < 4 || m > 16384 || nn > 16384 || k > 65536)
			return -1;
		out[n++] = (struct sdc_size3){ m, nn, k };
		s += used;
		if (*s == ',')
			s++;
	}
	return n;
}

int sdc_cli_opt_age(const char *value, void *field, char *err, size_t errlen)
{
	double v;
	if (!sdc_parse_double(value, &v) || !(v > 0) || v > 3650 * 86400.0) {
		snprintf(err, errlen, "seconds, more than 0 and at most ten years");
		return -1;
	}
	memcpy(field, &v, sizeof(v));
	return 0;
}

int sdc_cli_opt_sizes(const char *value, void *field, char *err, size_t errlen)
{
	struct sdc_size_list *l = field;
	const int n = sdc_cli_parse_sizes(value, l->v, SDC_CLI_SIZES_MAX);
	if (n <= 0) {
		snprintf(err, errlen, "MxNxK or N, comma-separated (k >= 4, at most %d)", SDC_CLI_SIZES_MAX);
		return -1;
	}
	l->n = n;
	return 0;
}

int sdc_cli_opt_size(const char *value, void *field, char *err, size_t errlen)
{
	if (sdc_cli_parse_sizes(value, field, 1) != 1) {
		snprintf(err, errlen, "MxNxK");
		return -1;
	}
	return 0;
}

int sdc_cli_opt_seconds(const char *value, void *field, char *err, size_t errlen)
{
	double v;
	if (!sdc_parse_double(value, &v) || !(v > 0) || v > 600) {
		snprintf(err, errlen, "a number of seconds in (0, 600]");
		return -1;
	}
	memcpy(field, &v, sizeof(v));
	return 0;
}
