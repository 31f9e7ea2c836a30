/* The state directory and the run lock (state.h). */
#include "runner/state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/files.h"

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
	if (stat(dir, &st)) {
		snprintf(err, errlen, "state directory %s: %s", dir, strerror(errno));
		return -1;
	}
	/* (errno is not asked here: mkdir left EEXIST in it for a file at dir) */
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "state directory %s: not a directory (give --state-dir DIR or --no-state)", dir);
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

/* The kernel's id of this boot (a run started in another boot died with it), and a process's start
 * time in clock ticks since boot (/proc/PID/stat field 22: a pid reused by another process has
 * another). */
static void boot_id(char *buf, size_t len)
{
	char err[128];
	size_t n;
	char *t = sdc_read_regular_file("/proc/sys/kernel/random/boot_id", 128, &n, "boot id", err, sizeof(err));
	snprintf(buf, len, "%s", t ? t : "");
	buf[strcspn(buf, "\n")] = '\0';
	free(t);
}

static unsigned long long proc_start_ticks(long pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	const size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* after the command's closing parenthesis: fields 3 .. (state is field 3) */
	const char *p = strrchr(buf, ')');
	unsigned long long ticks = 0;
	for (int field = 2; p && *p; p++)
		if (*p == ' ' && ++field == 22) {
			ticks = strtoull(p + 1, NULL, 10);
			break;
		}
	return ticks;
}

int sdc_state_save_start(const char *dir, const char *profile, char *err, size_t errlen)
{
	char path[4096], boot[64], text[1024], when[40];
	if (sdc_state_path(dir, "started", path, sizeof(path))) {
		snprintf(err, errlen, "state directory %s: path too long", dir);
		return -1;
	}
	boot_id(boot, sizeof(boot));
	const double now = sdc_wall_now();
	sdc_format_utc(now, when, sizeof(when));
	/* one "key value" a line; the profile last, as it may hold spaces */
	const int n = snprintf(text, sizeof(text), "start %.3f\nstarted %s\npid %ld\nticks %llu\nboot %s\nprofile %s\n",
			       now, when, (long)getpid(), proc_start_ticks((long)getpid()), boot, profile);
	return sdc_write_atomic(path, text, (size_t)(n < (int)sizeof(text) ? n : (int)sizeof(text) - 1), err, errlen);
}

void sdc_state_clear_start(const char *dir)
{
	char path[4096];
	if (!sdc_state_path(dir, "started", path, sizeof(path)))
		unlink(path);
}

int sdc_state_read_start(const char *dir, struct sdc_state_start *s)
{
	char path[4096], err[256], boot[64] = "";
	size_t len;
	memset(s, 0, sizeof(*s));
	if (sdc_state_path(dir, "started", path, sizeof(path)) || access(path, F_OK))
		return 0;
	char *text = sdc_read_regular_file(path, 4096, &len, "start record", err, sizeof(err));
	if (!text)
		return -1;
	unsigned long long ticks = 0;
	long pid = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		if (!strncmp(line, "start ", 6))
			s->start = strtod(line + 6, NULL);
		else if (!strncmp(line, "pid ", 4))
			pid = strtol(line + 4, NULL, 10);
		else if (!strncmp(line, "ticks ", 6))
			ticks = strtoull(line + 6, NULL, 10);
		else if (!strncmp(line, "boot ", 5))
			snprintf(boot, sizeof(boot), "%s", line + 5);
		else if (!strncmp(line, "profile ", 8))
			snprintf(s->profile, sizeof(s->profile), "%s", line + 8);
	}
	free(text);
	if (!(s->start > 0) || pid <= 0)
		return -1;
	s->pid = (int)pid;
	char now_boot[64];
	boot_id(now_boot, sizeof(now_boot));
	/* the same boot, the pid there, and the same process (not a later one given its pid) */
	s->alive = !strcmp(boot, now_boot) && (kill((pid_t)pid, 0) == 0 || errno == EPERM) &&
		   proc_start_ticks(pid) == ticks;
	return 1;
}
