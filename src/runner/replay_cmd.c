/*
 * Replay commands, written into the report: the run's own command line with its seed (which
 * reproduces the run), and for each finding of `sdcscan run` a narrower one (its probe and
 * variant, its device, the seed, up to its iteration) that reproduces that finding. Built from
 * the command line as given, so every --set, --inject, --profile and --duration carries over;
 * what only says where output goes (--json, --quiet, --no-color, --exit-codes) or where the run is
 * saved (--state-dir, --no-state, --prom, --junit, --wait) is left out.
 */
#include "runner/replay_cmd.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "mpi/transport.h"
#include "run/inject.h"

/* Options dropped from the run's line, with whether each takes a value. */
struct drop {
	const char *lng;
	char shrt;
	bool value;
};

/* (and what saves the run: a replay is a run of its own kind, it never writes where the scheduled
 * scans keep the node's state, metrics or JUnit; runner/history.h) */
#define STATE_AND_OUTPUTS                                                                                  \
	{ "state-dir", 0, true }, { "no-state", 0, false }, { "prom", 0, true }, { "junit", 0, true }, \
		{ "wait", 0, true }
static const struct drop output_only[] = {
	{ "json", 'j', true }, { "quiet", 'q', false }, { "no-color", 0, false }, { "exit-codes", 'e', true },
	{ "seed", 'S', true }, STATE_AND_OUTPUTS,     { NULL, 0, false },
};

/* For a finding: where it ran and how long are set anew. */
static const struct drop narrowed[] = {
	{ "json", 'j', true },	{ "quiet", 'q', false }, { "no-color", 0, false }, { "exit-codes", 'e', true },
	{ "seed", 'S', true },	{ "probe", 'P', true },	 { "variant", 0, true },   { "cpus", 'c', true },
	{ "gpus", 'g', true },	STATE_AND_OUTPUTS,	 { NULL, 0, false },
};

static void append(char *buf, size_t len, const char *s)
{
	const size_t n = strlen(buf);
	if (n < len)
		snprintf(buf + n, len - n, "%s", s);
}

/* s as one shell word: bare when it is safe, else in single quotes. */
static void append_word(char *buf, size_t len, const char *s)
{
	bool safe = *s != '\0';
	for (const char *p = s; *p && safe; p++)
		safe = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.,:/+@%", *p) != NULL;
	append(buf, len, " ");
	if (safe) {
		append(buf, len, s);
		return;
	}
	append(buf, len, "'");
	for (const char *p = s; *p; p++) {
		const char c[2] = { *p, 0 };
		append(buf, len, *p == '\'' ? "'\\''" : c);
	}
	append(buf, len, "'");
}

/* How many words argv[i] takes when it is one of drops: 0 when it is not. */
static int dropped(char **argv, int argc, int i, const struct drop *drops)
{
	const char *a = argv[i];
	for (const struct drop *d = drops; d->lng; d++) {
		if (a[0] == '-' && a[1] == '-' && !strncmp(a + 2, d->lng, strlen(d->lng))) {
			const char *rest = a + 2 + strlen(d->lng);
			if (!*rest)
				return d->value && i + 1 < argc ? 2 : 1;
			if (*rest == '=')
				return 1;
		}
		if (d->shrt && a[0] == '-' && a[1] == d->shrt) {
			if (!a[2])
				return d->value && i + 1 < argc ? 2 : 1;
			if (d->value)
				return 1; /* -j FILE written as -jFILE */
		}
	}
	return 0;
}

/*
 * How many words argv[i] takes when it is an --inject whose fault cannot come in a finding's
 * replay (another probe or variant, or a later iteration: the replay stops at the finding's),
 * which the replay would refuse as one that cannot take effect. 0 when it is not.
 */
static int foreign_inject(char **argv, int argc, int i, const struct sdc_finding *f)
{
	const char *a = argv[i], *spec = NULL;
	int words = 1;
	if ((!strcmp(a, "--inject") || !strcmp(a, "-i")) && i + 1 < argc)
		spec = argv[i + 1], words = 2;
	else if (!strncmp(a, "--inject=", 9))
		spec = a + 9;
	else if (!strncmp(a, "-i", 2) && a[2])
		spec = a + 2;
	struct sdc_inject_spec s;
	char err[256];
	if (!f || !spec || sdc_inject_parse(spec, &s, err, sizeof(err)))
		return 0;
	const bool here = !strcmp(s.probe, f->probe) && (!s.variant[0] || !strcmp(s.variant, f->variant)) &&
			  (s.iter < 0 || (uint64_t)s.iter <= f->iteration);
	return here ? 0 : words;
}

static void command_line(const struct sdc_run *run, const struct drop *drops, const struct sdc_finding *f, char *buf,
			 size_t len)
{
	buf[0] = '\0';
	if (sdc_mpi.active)
		snprintf(buf, len, "mpirun -np %d ", sdc_mpi.size);
	append(buf, len, "sdcscan");
	for (int i = 0; i < run->argc;) {
		int skip = i ? dropped(run->argv, run->argc, i, drops) : 0;
		if (!skip && i)
			skip = foreign_inject(run->argv, run->argc, i, f);
		if (skip) {
			i += skip;
			continue;
		}
		append_word(buf, len, run->argv[i]);
		i++;
	}
	char seed[32];
	snprintf(seed, sizeof(seed), "%" PRIu64, run->seed);
	append(buf, len, " --seed ");
	append(buf, len, seed);
}

void sdc_replay_run(const struct sdc_run *run, char *buf, size_t len)
{
	command_line(run, output_only, NULL, buf, len);
}

/* "--cpus 0,3 --gpus none": the devices the run had. */
static void all_devices(const struct sdc_run *run, char *buf, size_t len)
{
	char cpus[512] = "", gpus[256] = "";
	for (int d = 0; d < run->ndevices; d++) {
		char one[24];
		const struct sdc_device *dev = &run->devices[d];
		snprintf(one, sizeof(one), "%s%d", dev->kind == SDC_DEVICE_GPU ? (gpus[0] ? "," : "") : (cpus[0] ? "," : ""),
			 dev->kind == SDC_DEVICE_GPU ? dev->gpu.index : dev->cpu.logical);
		append(dev->kind == SDC_DEVICE_GPU ? gpus : cpus, dev->kind == SDC_DEVICE_GPU ? sizeof(gpus) : sizeof(cpus),
		       one);
	}
	append(buf, len, " --cpus ");
	append(buf, len, cpus);
	append(buf, len, " --gpus ");
	append(buf, len, gpus[0] ? gpus : "none");
}

void sdc_replay_finding(const struct sdc_run *run, const struct sdc_finding *f, char *buf, size_t len)
{
	/* Only run's findings narrow; the other commands' (selftest, golden verify) replay whole. */
	if (!run->argc || strcmp(run->argv[0], "run") || !f->probe[0] || !f->variant[0] || !strcmp(f->probe, "health")) {
		sdc_replay_run(run, buf, len);
		return;
	}
	command_line(run, narrowed, f, buf, len);
	char words[160];
	snprintf(words, sizeof(words), " --variant %s/%s", f->probe, f->variant);
	append(buf, len, words);
	/* A disagreement between devices needs them all; a device's own check needs only it. */
	const struct sdc_device *dev = f->device >= 0 ? &run->devices[f->device] : NULL;
	if (!dev || !strcmp(f->kind, "device-disagreement")) {
		all_devices(run, buf, len);
	} else if (dev->kind == SDC_DEVICE_GPU) {
		/* a CPU is still needed to start; the variant runs on the GPU */
		int cpu = 0;
		for (int d = 0; d < run->ndevices; d++)
			if (run->devices[d].kind == SDC_DEVICE_CPU) {
				cpu = run->devices[d].cpu.logical;
				break;
			}
		snprintf(words, sizeof(words), " --cpus %d --gpus %d", cpu, dev->gpu.index);
		append(buf, len, words);
	} else {
		snprintf(words, sizeof(words), " --cpus %d --gpus none", dev->cpu.logical);
		append(buf, len, words);
	}
	snprintf(words, sizeof(words), " --set %s.iterations=%" PRIu64, f->probe, f->iteration + 1);
	append(buf, len, words);
}
