/*
 * base/parse.c: the comparator for doubles (sdc_cmp_double), which the benchmarks' medians and
 * quartiles sort with: its sign for pairs worked by hand, and an array sorted with it against the
 * order written out here (negative, zero, equal values, a huge one, an infinity). The number
 * parsers, decimal only (0x40 was read as 64, 010 as 8). The file reader on a procfs file, which
 * says size 0 in stat (the start record's boot id was always empty), against the same file read here
 * with stdio; and on regular files, whose size still bounds what is read.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/parse.h"
#include "base/files.h"
#include "check.h"

static int cmp(double x, double y)
{
	return sdc_cmp_double(&x, &y);
}

static void comparator(void)
{
	CHECK(cmp(1, 2) == -1);
	CHECK(cmp(2, 1) == 1);
	CHECK(cmp(2, 2) == 0);
	CHECK(cmp(-0.0, 0.0) == 0);
	CHECK(cmp(-1e300, 1e-300) == -1);
	CHECK(cmp(INFINITY, 1e308) == 1);

	double v[] = { 3, -0.5, 2, 1e300, 2, -7, 0, -INFINITY };
	const double want[] = { -INFINITY, -7, -0.5, 0, 2, 2, 3, 1e300 };
	qsort(v, SDC_ARRAY_SIZE(v), sizeof(double), sdc_cmp_double);
	for (size_t i = 0; i < SDC_ARRAY_SIZE(v); i++)
		CHECK_MSG(v[i] == want[i], "sorted[%zu] = %g, want %g", i, v[i], want[i]);
}

/* Every number is decimal: a leading zero is not octal, 0x and 0b are refused, as is what strtol
 * and strtod would skip or take (a space, inf, nan, a hex float). */
static void numbers(void)
{
	int64_t i = 0;
	uint64_t u = 0;
	double d = 0;
	CHECK(sdc_parse_i64("010", &i) && i == 10);
	CHECK(sdc_parse_i64("-12", &i) && i == -12);
	CHECK(sdc_parse_i64("+7", &i) && i == 7);
	CHECK(sdc_parse_i64("0", &i) && i == 0);
	CHECK(sdc_parse_i64("9223372036854775807", &i) && i == INT64_MAX);
	CHECK(!sdc_parse_i64("9223372036854775808", &i));
	CHECK(sdc_parse_i64("000009", &i) && i == 9); /* base 0 refused this as a bad octal number */
	static const char *const bad_int[] = { "0x40", "0X40", "-0x1", "0b101", "0o17", " 5", "5 ", "", "-", "+",
					       "1e3", "1.0", "12a", "--1" };
	for (size_t k = 0; k < SDC_ARRAY_SIZE(bad_int); k++) {
		CHECK_MSG(!sdc_parse_i64(bad_int[k], &i), "i64 took '%s'", bad_int[k]);
		CHECK_MSG(!sdc_parse_u64(bad_int[k], &u), "u64 took '%s'", bad_int[k]);
	}
	CHECK(sdc_parse_u64("010", &u) && u == 10);
	CHECK(sdc_parse_u64("18446744073709551615", &u) && u == UINT64_MAX);
	CHECK(!sdc_parse_u64("-1", &u));

	CHECK(sdc_parse_double("010", &d) && d == 10);
	CHECK(sdc_parse_double("0.25", &d) && d == 0.25);
	CHECK(sdc_parse_double(".5", &d) && d == 0.5);
	CHECK(sdc_parse_double("-1.5e-3", &d) && d == -1.5e-3);
	CHECK(sdc_parse_double("2E2", &d) && d == 200);
	static const char *const bad_double[] = { "0x10", "0x1p3", "-0X1", " 1", "1 ", "inf", "nan", "infinity",
						  "", ".", "e5", "1e", "1.5.2" };
	for (size_t k = 0; k < SDC_ARRAY_SIZE(bad_double); k++)
		CHECK_MSG(!sdc_parse_double(bad_double[k], &d), "double took '%s'", bad_double[k]);

	CHECK(sdc_non_decimal("0x40") && sdc_non_decimal("-0X1") && sdc_non_decimal("0b1") && sdc_non_decimal("0o7"));
	CHECK(!sdc_non_decimal("010") && !sdc_non_decimal("0") && !sdc_non_decimal("x") && !sdc_non_decimal(""));
}

/* The file as stdio reads it to its end, whatever stat says of its size. */
static size_t slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;
	if (f) {
		n = fread(buf, 1, len - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	return n;
}

static void reader(void)
{
	char err[512] = "", want[256];
	size_t len = 0;
	/* procfs says size 0; the text is a UUID and a newline (37 bytes) */
	const char *boot = "/proc/sys/kernel/random/boot_id";
	const size_t wn = slurp(boot, want, sizeof(want));
	CHECK_MSG(wn == 37, "%s read with stdio: %zu bytes", boot, wn);
	char *t = sdc_read_regular_file(boot, 128, &len, "boot id", err, sizeof(err));
	CHECK_MSG(t && len == wn && !strcmp(t, want), "%s: '%s' (%s), want '%s'", boot, t ? t : "", err, want);
	free(t);
	/* a procfs file longer than the limit is refused, not cut */
	err[0] = '\0';
	t = sdc_read_regular_file(boot, 36, &len, "boot id", err, sizeof(err));
	CHECK_MSG(!t && strstr(err, "more than a boot id may have"), "36-byte limit: %s", err);
	free(t);
	/* one longer than the first buffer the reader takes (4 KiB), read whole where the kernel has it
	 * (its list of ciphers, 11 KB here, stable while the test runs) */
	static char big[1 << 16];
	const char *crypto = "/proc/crypto";
	const size_t cn = slurp(crypto, big, sizeof(big));
	if (cn > 4096 && cn < sizeof(big) - 1) {
		t = sdc_read_regular_file(crypto, sizeof(big), &len, "cipher list", err, sizeof(err));
		CHECK_MSG(t && len == cn && !memcmp(t, big, cn), "%s: %zu bytes (%s), want %zu", crypto, len, err, cn);
		free(t);
		err[0] = '\0';
		t = sdc_read_regular_file(crypto, cn - 1, &len, "cipher list", err, sizeof(err));
		CHECK_MSG(!t && strstr(err, "more than a cipher list may have"), "%s, one byte short: %s", crypto, err);
		free(t);
	} else {
		printf("(%s: %zu bytes, not between 4 and 64 KiB: its check skipped)\n", crypto, cn);
	}

	/* a regular file: its size from stat is what is read, an empty one included */
	char path[] = "/tmp/sdcscan-test-util.XXXXXX";
	const int fd = mkstemp(path);
	CHECK(fd >= 0);
	t = sdc_read_regular_file(path, 64, &len, "test file", err, sizeof(err));
	CHECK_MSG(t && len == 0 && !t[0], "empty file: %s", err);
	free(t);
	CHECK(write(fd, "abc\n", 4) == 4);
	t = sdc_read_regular_file(path, 64, &len, "test file", err, sizeof(err));
	CHECK_MSG(t && len == 4 && !strcmp(t, "abc\n"), "4-byte file: %s", err);
	free(t);
	err[0] = '\0';
	t = sdc_read_regular_file(path, 3, &len, "test file", err, sizeof(err));
	CHECK_MSG(!t && strstr(err, "4 bytes, more than a test file may have (3)"), "over the limit: %s", err);
	free(t);
	close(fd);
	unlink(path);
}

int main(void)
{
	comparator();
	numbers();
	reader();
	return check_done("test_util");
}
