/* Numbers and lists read from outside: strict decimal parsing, ranges, sorting. (base/parse.h) */
#include "base/parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base/macros.h"

/* Whether s is written in decimal: an optional sign (a minus only where minus is true), then digits
 * and, for a floating-point number, a point and an exponent. No space, no 0x (strtol and strtod
 * would read 0x40 as 64, and strtol base 0 would read 010 as 8), no inf or nan. */
static bool decimal_syntax(const char *s, bool minus, bool fraction)
{
	if (*s == '+' || (minus && *s == '-'))
		s++;
	if (!isdigit((unsigned char)*s) && !(fraction && *s == '.' && isdigit((unsigned char)s[1])))
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s) && !(fraction && strchr(".eE+-", *s)))
			return false;
	return true;
}

bool sdc_parse_i64(const char *s, int64_t *out)
{
	if (!s || !decimal_syntax(s, true, false))
		return false;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

bool sdc_parse_u64(const char *s, uint64_t *out)
{
	if (!s || !decimal_syntax(s, false, false))
		return false;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

bool sdc_parse_double(const char *s, double *out)
{
	if (!s || !decimal_syntax(s, true, true))
		return false;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !isfinite(v))
		return false;
	*out = v;
	return true;
}

bool sdc_non_decimal(const char *s)
{
	if (*s == '+' || *s == '-')
		s++;
	return s[0] == '0' && s[1] && strchr("xXbBoO", s[1]);
}

void sdc_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

int sdc_cmp_double(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

bool sdc_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };
	for (size_t i = 0; i < SDC_ARRAY_SIZE(yes); i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return true;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return true;
		}
	}
	return false;
}

int sdc_parse_ranges(const char *s, int limit, uint64_t *bits, const char **bad)
{
	memset(bits, 0, ((size_t)limit + 63) / 64 * 8);
	const char *p = s;
	*bad = NULL;
	while (*p) {
		char *end;
		if (!isdigit((unsigned char)*p))
			goto out_bad;
		long lo = strtol(p, &end, 10), hi = lo;
		p = end;
		if (*p == '-') {
			p++;
			if (!isdigit((unsigned char)*p))
				goto out_bad;
			hi = strtol(p, &end, 10);
			p = end;
		}
		if (lo > hi || hi >= limit)
			return -1;
		for (long v = lo; v <= hi; v++)
			bits[v / 64] |= 1ull << (v % 64);
		if (*p == ',')
			p++;
		else if (*p)
			goto out_bad;
	}
	return 0;
out_bad:
	*bad = p;
	return -1;
}
