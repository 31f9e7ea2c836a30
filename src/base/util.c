#include "base/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static bool quiet;

void sdc_set_quiet(bool q)
{
	quiet = q;
}

static void vmsg(const char *level, const char *fmt, va_list ap)
{
	/* One fprintf per line so lines from threads do not interleave. */
	char line[2048];
	vsnprintf(line, sizeof(line), fmt, ap);
	fprintf(stderr, "sdcscan: %s%s\n", level, line);
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

bool sdc_parse_i64(const char *s, int64_t *out)
{
	if (!s || !*s)
		return false;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 0);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

bool sdc_parse_u64(const char *s, uint64_t *out)
{
	if (!s || !*s || *s == '-')
		return false;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

bool sdc_parse_double(const char *s, double *out)
{
	if (!s || !*s)
		return false;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !isfinite(v))
		return false;
	*out = v;
	return true;
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

double sdc_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double sdc_wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void sdc_format_utc(double epoch, char *buf, size_t len)
{
	time_t t = (time_t)epoch;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void *sdc_alloc_aligned(size_t size)
{
	void *p = NULL;
	if (posix_memalign(&p, 64, size ? size : 64))
		return NULL;
	return p;
}

void sdc_free_aligned(void *p)
{
	free(p);
}

void *sdc_alloc_huge(size_t size)
{
	void *p = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
#ifdef MADV_HUGEPAGE
	madvise(p, size, MADV_HUGEPAGE); /* advice only: without THP the table still works */
#endif
	return p;
}

void sdc_free_huge(void *p, size_t size)
{
	if (p)
		munmap(p, size ? size : 1);
}

uint64_t sdc_mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	uint64_t kib = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %" SCNu64 " kB", &kib) == 1)
			break;
	fclose(f);
	return kib * 1024;
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

int sdc_output_path(const char *path, char *out, size_t outlen, char *err, size_t errlen)
{
	char cur[4096], link[4096];
	if (!*path) {
		snprintf(err, errlen, "an empty path");
		return -1;
	}
	sdc_strlcpy(cur, path, sizeof(cur));
	/* Follow symlinks (a bounded number) to the file they name, existing or not. */
	for (int hops = 0;; hops++) {
		struct stat st;
		if (lstat(cur, &st)) {
			if (errno != ENOENT) {
				snprintf(err, errlen, "%s: %s", cur, strerror(errno));
				return -1;
			}
			break; /* to be created */
		}
		if (S_ISLNK(st.st_mode)) {
			const ssize_t n = readlink(cur, link, sizeof(link) - 1);
			if (n < 0 || hops >= 40) {
				snprintf(err, errlen, "%s: %s", cur, n < 0 ? strerror(errno) : "too many symbolic links");
				return -1;
			}
			link[n] = '\0';
			if (link[0] == '/') {
				sdc_strlcpy(cur, link, sizeof(cur));
			} else {
				/* relative to the link's own directory */
				char d[4096];
				sdc_strlcpy(d, cur, sizeof(d));
				const char *dn = dirname(d);
				if (snprintf(cur, sizeof(cur), "%s/%s", dn, link) >= (int)sizeof(cur)) {
					snprintf(err, errlen, "%s: path too long", path);
					return -1;
				}
			}
			continue;
		}
		if (!S_ISREG(st.st_mode)) {
			snprintf(err, errlen, "%s%s%s is not a regular file (%s): sdcscan writes only regular files, or - for "
				 "standard output", path, strcmp(cur, path) ? " -> " : "", strcmp(cur, path) ? cur : "",
				 S_ISCHR(st.st_mode) ? "a character device" : S_ISDIR(st.st_mode) ? "a directory"
				 : S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISBLK(st.st_mode) ? "a block device" : "not a file");
			return -1;
		}
		break;
	}
	/* The rename lands in the file's own directory, which must let us create a file. */
	char d[4096];
	sdc_strlcpy(d, cur, sizeof(d));
	const char *dn = dirname(d);
	if (access(dn, W_OK | X_OK)) {
		snprintf(err, errlen, "cannot write in %s (for %s): %s", dn, path, strerror(errno));
		return -1;
	}
	if (strlen(cur) >= outlen) {
		snprintf(err, errlen, "%s: path too long", path);
		return -1;
	}
	sdc_strlcpy(out, cur, outlen);
	return 0;
}

char *sdc_read_regular_file(const char *path, size_t max, size_t *len, const char *what, char *err, size_t errlen)
{
	/* O_NONBLOCK: opening a FIFO must not wait for a writer */
	const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file (%s), so not a %s", path,
			 S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO"
			 : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : "a socket", what);
		close(fd);
		return NULL;
	}
	if ((uint64_t)st.st_size > max) {
		snprintf(err, errlen, "%s: %" PRIu64 " bytes, more than a %s may have (%zu)", path, (uint64_t)st.st_size,
			 what, max);
		close(fd);
		return NULL;
	}
	char *buf = malloc((size_t)st.st_size + 1);
	size_t n = 0;
	while (buf) {
		const ssize_t r = read(fd, buf + n, (size_t)st.st_size + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			free(buf);
			buf = NULL;
			break;
		}
		n += (size_t)r;
		if (r == 0 || n > (size_t)st.st_size)
			break;
	}
	close(fd);
	if (!buf) {
		if (!err[0])
			snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	if (n > (size_t)st.st_size) { /* it grew while read */
		snprintf(err, errlen, "%s: changed while it was read", path);
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

int sdc_make_parent_dirs(const char *path, unsigned mode, char *err, size_t errlen)
{
	char d[4096];
	if (strlen(path) >= sizeof(d)) {
		snprintf(err, errlen, "%s: path too long", path);
		return -1;
	}
	sdc_strlcpy(d, path, sizeof(d));
	char *dir = dirname(d);
	for (char *p = dir + 1; ; p++) {
		const char c = *p;
		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (mkdir(dir, (mode_t)mode) && errno != EEXIST) {
			snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
			return -1;
		}
		*p = c;
		if (!c)
			break;
	}
	return 0;
}

int sdc_write_atomic(const char *given, const char *data, size_t len, char *err, size_t errlen)
{
	char tmp[4096], dir[4096], path[4096];
	if (sdc_output_path(given, path, sizeof(path), err, errlen))
		return -1;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= (int)sizeof(tmp)) {
		snprintf(err, errlen, "%s: path too long", path);
		return -1;
	}
	int fd = mkstemp(tmp);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create a temporary file next to %s: %s", path, strerror(errno));
		return -1;
	}
	size_t done = 0;
	while (done < len) {
		ssize_t w = write(fd, data + done, len - done);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			snprintf(err, errlen, "%s: write: %s", tmp, strerror(errno));
			goto out_unlink;
		}
		done += (size_t)w;
	}
	/* The default 0600 of mkstemp would hide reports from the monitoring user. */
	if (fchmod(fd, 0644) || fsync(fd)) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		goto out_unlink;
	}
	if (close(fd)) {
		fd = -1;
		snprintf(err, errlen, "%s: close: %s", tmp, strerror(errno));
		goto out_unlink;
	}
	fd = -1;
	if (rename(tmp, path)) {
		snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
		goto out_unlink;
	}
	/* Make the rename itself durable. */
	sdc_strlcpy(dir, path, sizeof(dir));
	int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
out_unlink:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return -1;
}
