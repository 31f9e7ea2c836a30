/* Messages and text: diagnostics on stderr, a quiet mode, strings copied and escaped for a terminal. (base/message.h) */
#include "base/message.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static bool quiet;

void sdc_set_quiet(bool q)
{
	quiet = q;
}

static void vmsg(const char *level, const char *fmt, va_list ap)
{
	/* One fprintf per line so lines from threads do not interleave. */
	char line[2048], shown[4 * sizeof(line)];
	vsnprintf(line, sizeof(line), fmt, ap);
	/* what the line quotes (a --set value, a path, a peer's words) never reaches the terminal raw */
	sdc_escape(shown, sizeof(shown), line);
	fprintf(stderr, "sdcscan: %s%s\n", level, shown);
}

void sdc_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("error: ", fmt, ap);
	va_end(ap);
}

void sdc_warning(const char *fmt, ...)
{
	if (quiet)
		return;
	va_list ap;
	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

void sdc_note(const char *fmt, ...)
{
	if (quiet)
		return;
	va_list ap;
	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}


void sdc_strlcpy(char *dst, const char *src, size_t len)
{
	if (!len)
		return;
	size_t n = strlen(src);
	if (n >= len)
		n = len - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}


/* The length of the valid UTF-8 character at s (RFC 3629: no overlong form, no surrogate, nothing
 * above U+10FFFF), or 0 where s holds none. */
static size_t utf8_char(const unsigned char *s)
{
	const unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

size_t sdc_escape(char *dst, size_t len, const char *src)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t need = 0, at = 0;
	bool full = !len;
	while (*s) {
		char unit[16];
		size_t n = utf8_char(s), k = 0;
		if (n == 2 && s[0] == 0xc2 && s[1] <= 0x9f) /* a C1 control (U+0080..U+009F): its two bytes */
			k = (size_t)snprintf(unit, sizeof(unit), "\\x%02x\\x%02x", s[0], s[1]);
		else if (n)
			memcpy(unit, s, n), k = n;
		else if (*s == '\n' || *s == '\r' || *s == '\t' || *s == '\\')
			k = (size_t)snprintf(unit, sizeof(unit), "\\%c", *s == '\n' ? 'n' : *s == '\r' ? 'r' : *s == '\t' ? 't' : '\\'), n = 1;
		else if (*s < 0x20 || *s >= 0x7f) /* other C0, DEL, a byte that is not UTF-8 */
			k = (size_t)snprintf(unit, sizeof(unit), "\\x%02x", *s), n = 1;
		else
			unit[0] = (char)*s, k = n = 1;
		s += n;
		need += k;
		/* never half an escape or half a character */
		if (!full && at + k < len)
			memcpy(dst + at, unit, k), at += k;
		else
			full = true;
	}
	if (len)
		dst[at] = '\0';
	return need;
}

void sdc_print_line(FILE *fp, const char *fmt, ...)
{
	char small[1024], *text = small;
	va_list ap;
	va_start(ap, fmt);
	const int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(small) && (text = malloc((size_t)n + 1))) {
		va_start(ap, fmt);
		vsnprintf(text, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	if (!text)
		text = small; /* out of memory: the line cut where small ends */
	const size_t need = sdc_escape(NULL, 0, text);
	char *out = malloc(need + 1);
	if (out)
		sdc_escape(out, need + 1, text);
	fprintf(fp, "%s\n", out ? out : "(a line that could not be escaped: out of memory)");
	free(out);
	if (text != small)
		free(text);
}
