/* The state directory and the run lock (state.h). */
#include "core/state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"

const char *sdc_state_dir(const char *dir)
{
	if (dir && *dir)
		return dir;
	const char *env = getenv("SDCSCAN_STATE_DIR");
	return env && *env ? env : SDC_STATE_DIR_DEFAULT;
}

int sdc_state_path(const char *dir, const char *name, char *buf, size_t len)
{
	const int n = snprintf(buf, len, "%s/%s", dir, name);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int sdc_state_prepare(const char *dir, char *err, size_t errlen)
{
	char probe[4096];
	if (sdc_state_path(dir, "lock", probe, sizeof(probe))) {
		snprintf(err, errlen, "state directory %s: path too long", dir);
		return -1;
	}
	char why[600];
	if (sdc_make_parent_dirs(probe, 0755, why, sizeof(why))) {
		snprintf(err, errlen, "state directory: %s (run as root, or give --state-dir DIR or --no-state)", why);
		return -1;
	}
	struct stat st;
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "state directory %s: %s", dir, errno ? strerror(errno) : "not a directory");
		return -1;
	}
	if (access(dir, W_OK)) {
		snprintf(err, errlen, "state directory %s: %s (run as root, or give --state-dir DIR or --no-state)", dir,
			 strerror(errno));
		return -1;
	}
	return 0;
}

/* What the lock file says of its holder, one line ("pid 123, started 2026-...Z: sdcscan run"). */
static void holder(int fd, char *buf, size_t len)
{
	char text[512];
	const ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
	text[n > 0 ? n : 0] = '\0';
	text[strcspn(text, "\n")] = '\0';
	snprintf(buf, len, "%s", text[0] ? text : "a process that has not said who it is yet");
}

int sdc_state_lock(const char *dir, double wait, const char *command, struct sdc_state_lock *l, char *err,
		   size_t errlen)
{
	char path[4096];
	l->fd = -1;
	if (sdc_state_path(dir, "lock", path, sizeof(path))) {
		snprintf(err, errlen, "state directory %s: path too long", dir);
		return -1;
	}
	const int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "lock %s: %s", path, strerror(errno));
		return -1;
	}
	const double deadline = sdc_now() + wait;
	while (flock(fd, LOCK_EX | LOCK_NB)) {
		if (errno != EWOULDBLOCK && errno != EINTR) {
			snprintf(err, errlen, "lock %s: %s", path, strerror(errno));
			close(fd);
			return -1;
		}
		if (sdc_now() >= deadline) {
			char who[512];
			holder(fd, who, sizeof(who));
			snprintf(err, errlen, "another sdcscan run holds this host (%s, lock %s)%s", who, path,
				 wait > 0 ? ", and did not finish within --wait" : "; --wait SECONDS to wait for it");
			close(fd);
			return -1;
		}
		const struct timespec ts = { 0, 100 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	char started[40], line[640];
	sdc_format_utc(sdc_wall_now(), started, sizeof(started));
	const int n = snprintf(line, sizeof(line), "pid %ld, started %s: %s\n", (long)getpid(), started, command);
	if (ftruncate(fd, 0) || pwrite(fd, line, (size_t)n, 0) != n) {
		/* the lock is held; only the note of who holds it is missing */
	}
	l->fd = fd;
	return 0;
}

void sdc_state_unlock(struct sdc_state_lock *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
}

double sdc_state_last_success(const char *dir)
{
	char path[4096], err[256];
	size_t len;
	if (sdc_state_path(dir, "last-success", path, sizeof(path)))
		return 0;
	char *text = sdc_read_regular_file(path, 64, &len, "last-success", err, sizeof(err));
	if (!text)
		return 0;
	char *end;
	const double t = strtod(text, &end);
	free(text);
	return end != text && t > 0 ? t : 0;
}

int sdc_state_save_success(const char *dir, double epoch, char *err, size_t errlen)
{
	char path[4096], text[64];
	if (sdc_state_path(dir, "last-success", path, sizeof(path))) {
		snprintf(err, errlen, "state directory %s: path too long", dir);
		return -1;
	}
	const int n = snprintf(text, sizeof(text), "%.3f\n", epoch);
	return sdc_write_atomic(path, text, (size_t)n, err, errlen);
}
