/* Messages and text: diagnostics on stderr, a quiet mode, strings copied and escaped for a terminal. */
#ifndef SDC_BASE_MESSAGE_H
#define SDC_BASE_MESSAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "base/macros.h"

/* Diagnostics go to stderr, prefixed with "sdcscan: ". */
void sdc_error(const char *fmt, ...) SDC_PRINTF(1, 2);
void sdc_warning(const char *fmt, ...) SDC_PRINTF(1, 2);
void sdc_note(const char *fmt, ...) SDC_PRINTF(1, 2);
/* Quiet mode silences notes and warnings, never errors. */
void sdc_set_quiet(bool quiet);

/* snprintf that always terminates and never warns about truncation. */
void sdc_strlcpy(char *dst, const char *src, size_t len);

/*
 * src made safe to print on a terminal or in a log, where it came from a report, a peer or a file:
 * newline, carriage return, tab and backslash as \n \r \t \\, every other C0 control, DEL and
 * each byte that is not valid UTF-8 as \xNN, a C1 control (U+0080..U+009F) as its two bytes
 * \xc2\xNN; valid UTF-8 kept. Writes at most len - 1 bytes and a NUL (none with len 0), never
 * cutting an escape or a character in two; returns the length the whole escaped text needs, as
 * snprintf does.
 */
size_t sdc_escape(char *dst, size_t len, const char *src);
/* One line: fmt formatted, the whole line escaped as sdc_escape does, then a newline (fmt holds
 * none). For lines made of strings from reports or peers. */
void sdc_print_line(FILE *fp, const char *fmt, ...) SDC_PRINTF(2, 3);

#endif
