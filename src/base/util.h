/* Small helpers shared by every part of sdcscan: messages, parsing, time, memory. */
#ifndef SDC_UTIL_H
#define SDC_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SDC_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define SDC_MIN(a, b) ((a) < (b) ? (a) : (b))
#define SDC_MAX(a, b) ((a) > (b) ? (a) : (b))
/* A macro's value as a string literal: SDC_XSTR(SDC_EB_C_SIGMA) is "6.0". */
#define SDC_STR(x) #x
#define SDC_XSTR(x) SDC_STR(x)

#if defined(__GNUC__)
#define SDC_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define SDC_PRINTF(f, a)
#endif

/* Diagnostics go to stderr, prefixed with "sdcscan: ". */
void sdc_error(const char *fmt, ...) SDC_PRINTF(1, 2);
void sdc_warning(const char *fmt, ...) SDC_PRINTF(1, 2);
void sdc_note(const char *fmt, ...) SDC_PRINTF(1, 2);
/* Quiet mode silences notes and warnings, never errors. */
void sdc_set_quiet(bool quiet);

/* Strict number parsing: the whole string must be consumed, and it must be decimal, as every number
 * sdcscan reads is (010 is ten; 0x40, a leading space, inf and nan are refused). */
bool sdc_parse_i64(const char *s, int64_t *out);
bool sdc_parse_u64(const char *s, uint64_t *out);
bool sdc_parse_double(const char *s, double *out);
bool sdc_parse_bool(const char *s, bool *out);
/* Whether s is a number written in another base (0x40, 0b101, 0o17), for an error that says why it was
 * refused. */
bool sdc_non_decimal(const char *s);

/*
 * Ranges of non-negative numbers below limit, "0-3,8,10-11", into bits (limit bits, cleared first).
 * Returns 0; -1 with *bad at the character that did not parse, or *bad NULL for a range out of
 * order or beyond the limit.
 */
int sdc_parse_ranges(const char *s, int limit, uint64_t *bits, const char **bad);

/* qsort's comparator for doubles, ascending: -1, 0 or 1 (a NaN compares equal to everything, so
 * keep NaNs out of what is sorted). */
int sdc_cmp_double(const void *a, const void *b);
/* qsort(3), where an empty list may have no array (qsort's first argument must not be NULL,
 * even for no elements: UBSan's nonnull check). */
void sdc_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

/* Monotonic seconds, and wall-clock seconds since the epoch. */
double sdc_now(void);
double sdc_wall_now(void);
/* Formats an epoch time as RFC 3339 UTC ("2026-11-21T19:24:00Z"). */
void sdc_format_utc(double epoch, char *buf, size_t len);

/* Cache-line aligned allocation; NULL on failure (the caller reports it). */
void *sdc_alloc_aligned(size_t size);
void sdc_free_aligned(void *p);
/*
 * Large tables: an anonymous mapping, with transparent huge pages asked for (fewer TLB misses on
 * random lookups, as production embedding servers run). Zero-filled; NULL on failure.
 */
void *sdc_alloc_huge(size_t size);
void sdc_free_huge(void *p, size_t size);
/* Bytes the kernel says can be allocated without swapping (MemAvailable); 0 if unknown. */
uint64_t sdc_mem_available(void);

/* Writes data to path via a temporary file in its directory, fsync and rename, so a reader sees the
 * old file or the new one, never half of one; the path is checked as sdc_output_path says, and the
 * temporary file created and renamed through the folder's handle (never through a link). "-" is
 * refused (standard output is the caller's to write). Returns 0 or -1 with err set. */
int sdc_write_atomic(const char *path, const char *data, size_t len, char *err, size_t errlen);

/*
 * Where a file written with sdc_write_atomic lands, checked so a command can refuse it before it
 * burns: the path walked a component at a time, a symbolic link among its folders followed only
 * where the link and the folder holding it are root's or this user's and not writable by group or
 * others; a link as the file itself refused, whoever owns it; what is not a regular file (a device
 * such as /dev/full, a directory, a FIFO) refused, as is a folder sdcscan cannot create a file in
 * (tried: a temporary file made there and removed, as root passes access(2) in /proc), and "-". 0 with out set (the folder as walked, its links replaced by their targets, and the
 * name), or -1 with err naming the path and, for a link, the owner and mode refused.
 */
int sdc_output_path(const char *path, char *out, size_t outlen, char *err, size_t errlen);

/*
 * Reads a whole regular file of at most max bytes (NUL-terminated; *len without the NUL).
 * Refuses, without blocking, a directory, FIFO, device or socket, a file over max before reading
 * it, and one that grew past its size while read. A procfs or sysfs file, whose size says 0, is
 * read to its end (at most max). NULL with err naming the file and what it is.
 */
char *sdc_read_regular_file(const char *path, size_t max, size_t *len, const char *what, char *err, size_t errlen);

/* Creates the directory that will hold file path, and its parents, with mode (0 when they
 * exist; -1 with err). */
int sdc_make_parent_dirs(const char *path, unsigned mode, char *err, size_t errlen);

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
