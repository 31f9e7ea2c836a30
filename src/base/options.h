/*
 * Options, declared once as a table (libvmaf's VmafOption style): name, type, default, range,
 * help and the offset of the field it fills. A probe's table serves --set PROBE.KEY=VALUE, YAML
 * profile keys, --help text, the JSON report and golden keys; a command's table (probe/command.h) is
 * the same form with a short letter and an argument name, and serves its getopt and --help.
 */
#ifndef SDC_OPTIONS_H
#define SDC_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum sdc_opt_type {
	SDC_OPT_BOOL,   /* bool */
	SDC_OPT_INT,    /* int64_t, within [imin, imax] */
	SDC_OPT_DOUBLE, /* double, within [dmin, dmax] */
	SDC_OPT_ENUM,   /* int: index into choices */
	SDC_OPT_SET,    /* uint32_t: bit i set when choices[i] chosen; at least one */
	SDC_OPT_STRING, /* char[SDC_OPT_STR_MAX] */
	/* Command-line only (probe/command.h): */
	SDC_OPT_FLAG,   /* bool, set by the flag's presence; takes no value */
	SDC_OPT_ARG,    /* const char *: the argument itself (a path), not copied */
	SDC_OPT_LIST,   /* struct sdc_arglist: every occurrence, in order (--set, --probe, --inject) */
	SDC_OPT_CUSTOM, /* parsed by the option's parse function into its field */
};

/* A repeatable command-line option's values, pointing into argv. */
struct sdc_arglist {
	const char **v;
	int n;
};

#define SDC_OPT_STR_MAX 256

struct sdc_option {
	const char *name;
	enum sdc_opt_type type;
	size_t offset;
	const char *def; /* default, as text, parsed by the same code as user values */
	const char *help;
	int64_t imin, imax;
	double dmin, dmax;
	const char *const *choices; /* NULL-terminated, for ENUM and SET */
	const char *unit;
	/* Changes how a run is checked or scheduled, not what it computes: left out of golden keys. */
	bool neutral;

	/* Command-line only: the short letter (0: none), the value's name in --help ("SECONDS"),
	 * what a value must look like when the type's own words would not say it, and for
	 * SDC_OPT_CUSTOM the parser (0, or -1 with err saying what a value must look like). */
	char short_name;
	const char *metavar;
	const char *expect;
	int (*parse)(const char *value, void *field, char *err, size_t errlen);
};

#define SDC_OPT_END { .name = NULL }

const struct sdc_option *sdc_opt_find(const struct sdc_option *table, const char *name);

/* Fills every field of opts from the defaults (an option with no default is left zero). Aborts on
 * a bad default: that is a bug. */
void sdc_opt_defaults(const struct sdc_option *table, void *opts);

/*
 * Parses value into opt's field. A SET takes a comma-separated list. On error returns -1
 * and writes "what was wrong (what was expected)" into err.
 */
int sdc_opt_parse(const struct sdc_option *opt, void *opts, const char *value, char *err, size_t errlen);

/* "a, b, c": the keys of a table (plus extra, if not NULL), for "valid keys" messages. */
void sdc_opt_list_names(const struct sdc_option *table, const char *extra, char *buf, size_t len);
/* What a value must look like: "an integer from 16 to 8192", "one of: int8, fp32". */
void sdc_opt_expected(const struct sdc_option *opt, char *buf, size_t len);
/* The current value as text (the form the parser accepts). */
void sdc_opt_format(const struct sdc_option *opt, const void *opts, char *buf, size_t len);

void sdc_opt_print_help(const struct sdc_option *table, const char *prefix, FILE *out);

static inline bool sdc_opt_set_has(uint32_t set, int idx)
{
	return (set >> idx) & 1u;
}

#endif
