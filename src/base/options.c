/* Options declared as tables: defaults, parsing, ranges and help (base/options.h). */
#include "base/options.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/message.h"
#include "base/parse.h"

const struct sdc_option *sdc_opt_find(const struct sdc_option *table, const char *name)
{
	for (const struct sdc_option *o = table; o && o->name; o++)
		if (!strcmp(o->name, name))
			return o;
	return NULL;
}

void sdc_opt_defaults(const struct sdc_option *table, void *opts)
{
	char err[256];
	for (const struct sdc_option *o = table; o && o->name; o++) {
		if (!o->def)
			continue;
		if (sdc_opt_parse(o, opts, o->def, err, sizeof(err))) {
			sdc_error("internal: default of option %s: %s", o->name, err);
			abort();
		}
	}
}

static void join_choices(const char *const *choices, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int i = 0; choices[i]; i++) {
		int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", choices[i]);
		if (w < 0 || (size_t)w >= len - used)
			break;
		used += (size_t)w;
	}
}

void sdc_opt_expected(const struct sdc_option *o, char *buf, size_t len)
{
	char list[512];
	if (o->expect) {
		snprintf(buf, len, "%s", o->expect);
		return;
	}
	switch (o->type) {
	case SDC_OPT_FLAG:
	case SDC_OPT_BOOL:
		snprintf(buf, len, "true or false");
		break;
	case SDC_OPT_INT:
		snprintf(buf, len, "an integer from %" PRId64 " to %" PRId64 "%s%s", o->imin, o->imax,
			 o->unit ? " " : "", o->unit ? o->unit : "");
		break;
	case SDC_OPT_DOUBLE:
		snprintf(buf, len, "a number from %g to %g%s%s", o->dmin, o->dmax, o->unit ? " " : "",
			 o->unit ? o->unit : "");
		break;
	case SDC_OPT_ENUM:
		join_choices(o->choices, list, sizeof(list));
		snprintf(buf, len, "one of: %s", list);
		break;
	case SDC_OPT_SET:
		join_choices(o->choices, list, sizeof(list));
		snprintf(buf, len, "a list of one or more of: %s", list);
		break;
	case SDC_OPT_STRING:
		snprintf(buf, len, "a string of at most %d bytes", SDC_OPT_STR_MAX - 1);
		break;
	case SDC_OPT_ARG:
	case SDC_OPT_LIST:
	case SDC_OPT_CUSTOM:
		snprintf(buf, len, "%s", o->metavar ? o->metavar : "a value");
		break;
	}
}

static int choice_index(const char *const *choices, const char *s, size_t len)
{
	for (int i = 0; choices[i]; i++)
		if (strlen(choices[i]) == len && !strncmp(choices[i], s, len))
			return i;
	return -1;
}

int sdc_opt_parse(const struct sdc_option *o, void *opts, const char *value, char *err, size_t errlen)
{
	char *field = (char *)opts + o->offset;
	char expected[600];
	sdc_opt_expected(o, expected, sizeof(expected));

	switch (o->type) {
	case SDC_OPT_BOOL: {
		bool b;
		if (!sdc_parse_bool(value, &b))
			goto bad_value;
		memcpy(field, &b, sizeof(b));
		return 0;
	}
	case SDC_OPT_INT: {
		int64_t v;
		if (!sdc_parse_i64(value, &v))
			goto bad_value;
		if (v < o->imin || v > o->imax) {
			snprintf(err, errlen, "%s is out of range (expected %s)", value, expected);
			return -1;
		}
		memcpy(field, &v, sizeof(v));
		return 0;
	}
	case SDC_OPT_DOUBLE: {
		double v;
		if (!sdc_parse_double(value, &v))
			goto bad_value;
		if (v < o->dmin || v > o->dmax) {
			snprintf(err, errlen, "%s is out of range (expected %s)", value, expected);
			return -1;
		}
		memcpy(field, &v, sizeof(v));
		return 0;
	}
	case SDC_OPT_ENUM: {
		int idx = choice_index(o->choices, value, strlen(value));
		if (idx < 0)
			goto bad_value;
		memcpy(field, &idx, sizeof(idx));
		return 0;
	}
	case SDC_OPT_SET: {
		uint32_t set = 0;
		const char *s = value;
		for (;;) {
			size_t len = strcspn(s, ",");
			while (len && s[0] == ' ') {
				s++;
				len--;
			}
			while (len && s[len - 1] == ' ')
				len--;
			int idx = choice_index(o->choices, s, len);
			if (idx < 0) {
				snprintf(err, errlen, "'%.*s' is not a valid choice (expected %s)", (int)len, s,
					 expected);
				return -1;
			}
			if (set & (1u << idx)) {
				snprintf(err, errlen, "'%.*s' is listed twice", (int)len, s);
				return -1;
			}
			set |= 1u << idx;
			s += strcspn(s, ",");
			if (!*s)
				break;
			s++;
		}
		memcpy(field, &set, sizeof(set));
		return 0;
	}
	case SDC_OPT_STRING:
		if (strlen(value) >= SDC_OPT_STR_MAX)
			goto bad_value;
		sdc_strlcpy(field, value, SDC_OPT_STR_MAX);
		return 0;
	case SDC_OPT_FLAG: {
		const bool b = true;
		memcpy(field, &b, sizeof(b));
		return 0;
	}
	case SDC_OPT_ARG:
		memcpy(field, &value, sizeof(value));
		return 0;
	case SDC_OPT_LIST: {
		/* The driver sizes v for every argument of the command line before parsing. */
		struct sdc_arglist *l = (struct sdc_arglist *)(void *)field;
		l->v[l->n++] = value;
		return 0;
	}
	case SDC_OPT_CUSTOM:
		if (o->parse(value, field, expected, sizeof(expected)))
			goto bad_value;
		return 0;
	}
bad_value:
	/* 0x40 read as 64 (and 010 as 8) once: every number is decimal now, and the error says so */
	snprintf(err, errlen, "'%s' is not valid (expected %s%s)", value, expected,
		 (o->type == SDC_OPT_INT || o->type == SDC_OPT_DOUBLE) && sdc_non_decimal(value) ? ", in decimal" : "");
	return -1;
}

void sdc_opt_list_names(const struct sdc_option *table, const char *extra, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	if (extra) {
		int w = snprintf(buf, len, "%s", extra);
		used = w > 0 ? SDC_MIN((size_t)w, len - 1) : 0;
	}
	for (const struct sdc_option *o = table; o && o->name; o++) {
		int w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", o->name);
		if (w < 0 || (size_t)w >= len - used)
			break;
		used += (size_t)w;
	}
}

void sdc_opt_format(const struct sdc_option *o, const void *opts, char *buf, size_t len)
{
	const char *field = (const char *)opts + o->offset;
	switch (o->type) {
	case SDC_OPT_BOOL: {
		bool b;
		memcpy(&b, field, sizeof(b));
		snprintf(buf, len, "%s", b ? "true" : "false");
		break;
	}
	case SDC_OPT_INT: {
		int64_t v;
		memcpy(&v, field, sizeof(v));
		snprintf(buf, len, "%" PRId64, v);
		break;
	}
	case SDC_OPT_DOUBLE: {
		double v;
		memcpy(&v, field, sizeof(v));
		snprintf(buf, len, "%g", v);
		break;
	}
	case SDC_OPT_ENUM: {
		int idx;
		memcpy(&idx, field, sizeof(idx));
		snprintf(buf, len, "%s", o->choices[idx]);
		break;
	}
	case SDC_OPT_SET: {
		uint32_t set;
		size_t used = 0;
		memcpy(&set, field, sizeof(set));
		buf[0] = '\0';
		for (int i = 0; o->choices[i]; i++) {
			if (!sdc_opt_set_has(set, i))
				continue;
			int w = snprintf(buf + used, len - used, "%s%s", used ? "," : "", o->choices[i]);
			if (w < 0 || (size_t)w >= len - used)
				break;
			used += (size_t)w;
		}
		break;
	}
	case SDC_OPT_STRING:
		snprintf(buf, len, "%s", field);
		break;
	case SDC_OPT_FLAG: {
		bool b;
		memcpy(&b, field, sizeof(b));
		snprintf(buf, len, "%s", b ? "true" : "false");
		break;
	}
	case SDC_OPT_ARG: {
		const char *v;
		memcpy(&v, field, sizeof(v));
		snprintf(buf, len, "%s", v ? v : "");
		break;
	}
	case SDC_OPT_LIST:
	case SDC_OPT_CUSTOM:
		snprintf(buf, len, "(given on the command line)");
		break;
	}
}

void sdc_opt_print_help(const struct sdc_option *table, const char *prefix, FILE *out)
{
	for (const struct sdc_option *o = table; o && o->name; o++) {
		char expected[600];
		sdc_opt_expected(o, expected, sizeof(expected));
		fprintf(out, "  %s%s=%s\n      %s\n      default %s; %s\n", prefix, o->name,
			o->type == SDC_OPT_BOOL ? "BOOL" : "VALUE", o->help, o->def, expected);
	}
}
