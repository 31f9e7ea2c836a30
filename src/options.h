/*
 * Probe options, declared once per probe as a table (libvmaf's VmafOption style): name,
 * type, default, range, help and the offset of the field it fills. The same table serves
 * --set PROBE.KEY=VALUE, YAML profile keys, --help text and the JSON report.
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
};

#define SDC_OPT_END { NULL, 0, 0, NULL, NULL, 0, 0, 0, 0, NULL, NULL, false }

const struct sdc_option *sdc_opt_find(const struct sdc_option *table, const char *name);

/* Fills every field of opts from the defaults. Aborts on a bad default: that is a bug. */
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
