/* Numbers and lists read from outside: strict decimal parsing, ranges, sorting. */
#ifndef SDC_BASE_PARSE_H
#define SDC_BASE_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/macros.h"

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

#endif
