/* A JSON scanner that builds nothing (json_scan.h). Its rules are jansson 2.14's (load.c, utf.c). */
#include "base/json_scan.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void sdc_jscan_init(struct sdc_jscan *s, const char *text, size_t len)
{
	s->p = text;
	s->end = text + len;
	s->depth = 0;
	s->bad = false;
}

const char *sdc_json_nul(const char *text, size_t len)
{
	return len ? memchr(text, '\0', len) : NULL;
}

static bool fail(struct sdc_jscan *s)
{
	s->bad = true;
	return false;
}

static void ws(struct sdc_jscan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
		s->p++;
}

const char *sdc_jscan_here(struct sdc_jscan *s)
{
	ws(s);
	return s->p;
}

bool sdc_jscan_end(struct sdc_jscan *s)
{
	ws(s);
	return !s->bad && s->p == s->end;
}

/* Length of the valid UTF-8 sequence at p (a first byte >= 0x80), 0 when invalid: no overlong
 * forms, no surrogates, nothing above U+10FFFF (jansson utf.c utf8_check_first/full). */
static int utf8_len(const unsigned char *p, const unsigned char *end)
{
	const unsigned c = p[0];
	int n;
	uint32_t v;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, v = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, v = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, v = c & 0x07;
	else
		return 0;
	if (end - p < n)
		return 0;
	for (int i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (p[i] & 0x3f);
	}
	if ((n == 3 && v < 0x800) || (n == 4 && v < 0x10000) || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	return n;
}

static int hex4(const char *p)
{
	int v = 0;
	for (int i = 0; i < 4; i++) {
		const char c = p[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

static size_t put_utf8(char *o, uint32_t v)
{
	if (v < 0x80)
		return o[0] = (char)v, 1;
	if (v < 0x800)
		return o[0] = (char)(0xc0 | (v >> 6)), o[1] = (char)(0x80 | (v & 0x3f)), 2;
	if (v < 0x10000)
		return o[0] = (char)(0xe0 | (v >> 12)), o[1] = (char)(0x80 | ((v >> 6) & 0x3f)),
		       o[2] = (char)(0x80 | (v & 0x3f)), 3;
	return o[0] = (char)(0xf0 | (v >> 18)), o[1] = (char)(0x80 | ((v >> 12) & 0x3f)),
	       o[2] = (char)(0x80 | ((v >> 6) & 0x3f)), o[3] = (char)(0x80 | (v & 0x3f)), 4;
}

/*
 * The string at s->p (its opening quote), checked; decoded into out when out is not NULL.
 * \u0000 is refused (jansson without JSON_ALLOW_NUL), and so is a lone or reversed surrogate.
 */
static bool string(struct sdc_jscan *s, char *out, size_t outlen, size_t *len)
{
	const unsigned char *p = (const unsigned char *)s->p + 1, *end = (const unsigned char *)s->end;
	size_t n = 0;
	for (;;) {
		const unsigned char *run = p;
		/* the bulk: printable ASCII other than the quote and backslash */
		while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
			p++;
		if (out && p > run) {
			const size_t k = (size_t)(p - run);
			if (n + 1 < outlen)
				memcpy(out + n, run, n + k < outlen ? k : outlen - 1 - n);
			n += k;
		} else
			n += (size_t)(p - run);
		if (p >= end)
			return fail(s);
		if (*p == '"')
			break;
		char buf[4];
		size_t k;
		if (*p >= 0x80) {
			const int u = utf8_len(p, end);
			if (!u)
				return fail(s);
			memcpy(buf, p, (size_t)u);
			k = (size_t)u;
			p += u;
		} else if (*p < 0x20) {
			return fail(s);
		} else { /* a backslash */
			if (end - p < 2)
				return fail(s);
			const unsigned char e = p[1];
			p += 2;
			switch (e) {
			case '"': case '\\': case '/':
				buf[0] = (char)e, k = 1;
				break;
			case 'b': buf[0] = '\b', k = 1; break;
			case 'f': buf[0] = '\f', k = 1; break;
			case 'n': buf[0] = '\n', k = 1; break;
			case 'r': buf[0] = '\r', k = 1; break;
			case 't': buf[0] = '\t', k = 1; break;
			case 'u': {
				int v = end - p >= 4 ? hex4((const char *)p) : -1;
				if (v < 0)
					return fail(s);
				p += 4;
				if (v >= 0xd800 && v <= 0xdbff) {
					const int lo = end - p >= 6 && p[0] == '\\' && p[1] == 'u' ? hex4((const char *)p + 2) : -1;
					if (lo < 0xdc00 || lo > 0xdfff)
						return fail(s);
					p += 6;
					v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
				} else if ((v >= 0xdc00 && v <= 0xdfff) || v == 0)
					return fail(s);
				k = put_utf8(buf, (uint32_t)v);
				break;
			}
			default:
				return fail(s);
			}
		}
		if (out && n + 1 < outlen)
			memcpy(out + n, buf, n + k < outlen ? k : outlen - 1 - n);
		n += k;
	}
	s->p = (const char *)p + 1;
	if (out && outlen)
		out[n < outlen ? n : outlen - 1] = '\0';
	if (len)
		*len = n;
	return true;
}

/* A number at s->p, its grammar checked (RFC 8259, as jansson's lexer) and its value when asked:
 * an integer that does not fit json_int_t, or a real that overflows, is refused as jansson does. */
static bool number(struct sdc_jscan *s, bool *is_int, long long *iv, double *dv)
{
	const char *p = s->p, *start = p, *end = s->end;
	if (p < end && *p == '-')
		p++;
	if (p >= end || *p < '0' || *p > '9')
		return fail(s);
	const char *digits = p;
	if (*p == '0')
		p++;
	else
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	const size_t int_digits = (size_t)(p - digits);
	bool real = false;
	long exp10 = 0;
	if (p < end && *p == '.') {
		real = true;
		if (++p >= end || *p < '0' || *p > '9')
			return fail(s);
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		real = true;
		bool neg = false;
		if (++p < end && (*p == '+' || *p == '-'))
			neg = *p++ == '-';
		if (p >= end || *p < '0' || *p > '9')
			return fail(s);
		while (p < end && *p >= '0' && *p <= '9') {
			if (exp10 < 100000)
				exp10 = exp10 * 10 + (*p - '0');
			p++;
		}
		if (neg)
			exp10 = -exp10;
	}
	s->p = p;
	/* strtod and strtoll need the value only where it is asked for or could overflow */
	const bool may_overflow = real ? (long)int_digits + exp10 > 300 : int_digits > 18;
	if (!is_int && !may_overflow)
		return true;
	char buf[512];
	if ((size_t)(p - start) >= sizeof(buf)) {
		if (!real)
			return fail(s); /* more than 500 digits: past any json_int_t */
		/* a long real: its value within a double is all that can be asked of it */
	}
	const size_t n = (size_t)(p - start) < sizeof(buf) ? (size_t)(p - start) : sizeof(buf) - 1;
	memcpy(buf, start, n);
	buf[n] = '\0';
	errno = 0;
	if (!real) {
		const long long v = strtoll(buf, NULL, 10);
		if (errno == ERANGE)
			return fail(s);
		if (is_int)
			*is_int = true, *iv = v, *dv = (double)v;
		return true;
	}
	const double v = strtod(buf, NULL);
	if (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL))
		return fail(s);
	if (is_int)
		*is_int = false, *iv = 0, *dv = v;
	return true;
}

enum sdc_jtype sdc_jscan_peek(struct sdc_jscan *s)
{
	ws(s);
	if (s->bad || s->p >= s->end)
		return SDC_JBAD;
	switch (*s->p) {
	case '{': return SDC_JOBJECT;
	case '[': return SDC_JARRAY;
	case '"': return SDC_JSTRING;
	case 't': return SDC_JTRUE;
	case 'f': return SDC_JFALSE;
	case 'n': return SDC_JNULL;
	case '-':
		return SDC_JINT; /* (or a real: number() tells) */
	default:
		return *s->p >= '0' && *s->p <= '9' ? SDC_JINT : SDC_JBAD;
	}
}

/* A value's depth (jansson counts every value, a scalar too, against its limit). */
static bool deeper(struct sdc_jscan *s)
{
	return s->depth + 1 <= SDC_JSCAN_MAX_DEPTH || fail(s);
}

static bool literal(struct sdc_jscan *s, const char *word, size_t n)
{
	if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n))
		return fail(s);
	s->p += n;
	return true;
}

bool sdc_jscan_open(struct sdc_jscan *s, char open)
{
	ws(s);
	if (s->bad || s->p >= s->end || *s->p != open || !deeper(s))
		return fail(s);
	s->p++;
	s->depth++;
	return true;
}

/* After a member or element: ',' (more) or the closing bracket (consumed, 0). */
static int next(struct sdc_jscan *s, size_t *n, char close)
{
	ws(s);
	if (s->bad || s->p >= s->end)
		return fail(s), -1;
	if (*n == 0 && *s->p == close) {
		s->p++;
		s->depth--;
		return 0;
	}
	if (*n > 0) {
		if (*s->p == close) {
			s->p++;
			s->depth--;
			return 0;
		}
		if (*s->p != ',')
			return fail(s), -1;
		s->p++;
		ws(s);
	}
	(*n)++;
	return 1;
}

int sdc_jscan_key(struct sdc_jscan *s, size_t *n, char *key, size_t keylen)
{
	const int r = next(s, n, '}');
	if (r <= 0)
		return r;
	size_t len;
	if (s->p >= s->end || *s->p != '"' || !string(s, key, keylen, &len))
		return fail(s), -1;
	/* jansson refuses a key with a NUL byte in it; \u0000 is refused everywhere already */
	ws(s);
	if (s->p >= s->end || *s->p != ':')
		return fail(s), -1;
	s->p++;
	return 1;
}

int sdc_jscan_item(struct sdc_jscan *s, size_t *n)
{
	return next(s, n, ']');
}

bool sdc_jscan_string(struct sdc_jscan *s, char *out, size_t outlen, size_t *len)
{
	ws(s);
	if (s->bad || s->p >= s->end || *s->p != '"' || !deeper(s))
		return fail(s);
	return string(s, out, outlen, len);
}

bool sdc_jscan_number(struct sdc_jscan *s, bool *is_int, long long *i, double *d)
{
	const enum sdc_jtype t = sdc_jscan_peek(s);
	if (t != SDC_JINT || !deeper(s))
		return fail(s);
	bool dummy_int;
	long long dummy_i;
	double dummy_d;
	return number(s, is_int ? is_int : &dummy_int, i ? i : &dummy_i, d ? d : &dummy_d);
}

bool sdc_jscan_skip(struct sdc_jscan *s)
{
	size_t n = 0;
	int r;
	switch (sdc_jscan_peek(s)) {
	case SDC_JOBJECT:
		if (!sdc_jscan_open(s, '{'))
			return false;
		/* keys are checked, not decoded */
		while ((r = next(s, &n, '}')) > 0) {
			if (s->p >= s->end || *s->p != '"' || !string(s, NULL, 0, NULL))
				return fail(s);
			ws(s);
			if (s->p >= s->end || *s->p != ':')
				return fail(s);
			s->p++;
			if (!sdc_jscan_skip(s))
				return false;
		}
		return r == 0;
	case SDC_JARRAY:
		if (!sdc_jscan_open(s, '['))
			return false;
		while ((r = next(s, &n, ']')) > 0)
			if (!sdc_jscan_skip(s))
				return false;
		return r == 0;
	case SDC_JSTRING:
		return deeper(s) && string(s, NULL, 0, NULL);
	case SDC_JINT:
		return deeper(s) && number(s, NULL, NULL, NULL);
	case SDC_JTRUE:
		return deeper(s) && literal(s, "true", 4);
	case SDC_JFALSE:
		return deeper(s) && literal(s, "false", 5);
	case SDC_JNULL:
		return deeper(s) && literal(s, "null", 4);
	default:
		return fail(s);
	}
}
