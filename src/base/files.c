/* Files read and written safely: atomic writes through checked folders, whole regular files. (base/files.h) */
#include "base/files.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <linux/magic.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include "base/message.h"
#include "base/clock.h"

/*
 * Output files (sdc_output_path, sdc_write_atomic). sdcscan runs as root and writes where it is
 * told, into folders that may be another user's (Debian's node_exporter textfile folder is the
 * prometheus user's), so a path is walked one component at a time through directory handles, as
 * systemd's chaseat() does (src/basic/chase.c: openat(O_PATH|O_NOFOLLOW) a component, readlinkat
 * a link, and with CHASE_SAFE no step out of a folder an unprivileged user owns to something owned
 * by another), and never by the kernel's own lookup, which follows every link. A link in a folder above the file is followed
 * only where the link and the folder holding it are root's or this user's and the folder is not
 * writable by its group or others: the test sudo applies to its own files (sudo_check_secure in
 * sudo's lib/util/secure_path.c: owner, not world-writable, not group-writable). A POSIX ACL that
 * lets another user write shows in the group bits (its mask: acl(5)), so it is refused too. The
 * file itself is never reached through a link: a link there is refused, and the file is created
 * as a new temporary name (O_CREAT|O_EXCL|O_NOFOLLOW) and renamed over the name (rename(2)
 * replaces a link at newpath, it never writes through it). openat2(2)'s RESOLVE_NO_SYMLINKS would
 * refuse every link, the trusted ones an admin made too (/var/lib -> /data/var/lib).
 */
#define SDC_MAX_LINKS 40 /* the kernel's own bound on links in one lookup (path_resolution(7)) */

/* "root", "uid 1000 (alice)": an owner for a message. */
static void owner_text(uid_t uid, char *buf, size_t len)
{
	const struct passwd *pw = getpwuid(uid);
	if (uid == 0)
		snprintf(buf, len, "root");
	else if (pw)
		snprintf(buf, len, "uid %u (%s)", (unsigned)uid, pw->pw_name);
	else
		snprintf(buf, len, "uid %u", (unsigned)uid);
}

/* Whether only root or this user can have made a link (its lstat) in its folder (the folder's). */
static bool link_trusted(const struct stat *link, const struct stat *dir)
{
	const uid_t me = geteuid();
	return (link->st_uid == 0 || link->st_uid == me) && (dir->st_uid == 0 || dir->st_uid == me) &&
	       !(dir->st_mode & (S_IWGRP | S_IWOTH));
}

/* a/b as a path for messages: "" and "/" joined without a doubled slash */
static void join(char *dst, size_t len, const char *dir, const char *name)
{
	const size_t n = strlen(dir);
	snprintf(dst, len, "%s%s%s", dir, n && dir[n - 1] != '/' ? "/" : "", name);
}

/*
 * Walks path to the folder that holds its last component: *dirfd an O_PATH handle of that folder,
 * name the last component, shown the folder as walked (links replaced by their targets). Only the
 * folders' links are followed, under link_trusted. 0, or -1 with err naming what was refused.
 */
static int walk_to_parent(const char *path, int *dirfd, char *name, size_t namelen, char *shown, size_t shownlen,
			  char *err, size_t errlen)
{
	char rest[8192], walked[4096], comp[NAME_MAX + 1];
	if (strlen(path) >= sizeof(walked)) {
		snprintf(err, errlen, "%.64s...: path too long", path);
		return -1;
	}
	sdc_strlcpy(rest, path, sizeof(rest));
	sdc_strlcpy(walked, path[0] == '/' ? "/" : "", sizeof(walked));
	int fd = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC), links = 0;
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path[0] == '/' ? "/" : ".", strerror(errno));
		return -1;
	}
	const char *p = rest;
	for (;;) {
		while (*p == '/')
			p++;
		const size_t n = strcspn(p, "/");
		const char *after = p + n;
		while (*after == '/')
			after++;
		if (!n || n > NAME_MAX) {
			snprintf(err, errlen, "%s: %s", path, n ? "a name too long" : "no file name (it ends in /)");
			goto out_close;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		if (!*after) { /* the last component: the file */
			if (p[n] == '/' || !strcmp(comp, ".") || !strcmp(comp, "..")) {
				snprintf(err, errlen, "%s: not a file name", path);
				goto out_close;
			}
			sdc_strlcpy(name, comp, namelen);
			sdc_strlcpy(shown, walked, shownlen);
			*dirfd = fd;
			return 0;
		}
		p = after;
		if (!strcmp(comp, "."))
			continue;
		char here[4096 + NAME_MAX + 2];
		join(here, sizeof(here), walked, comp);
		struct stat st, dst;
		if (fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW)) {
			snprintf(err, errlen, "cannot write in %s (for %s): %s", here, path, strerror(errno));
			goto out_close;
		}
		if (S_ISLNK(st.st_mode)) {
			char target[4096], lown[64], down[64];
			ssize_t t = -1;
			if (fstat(fd, &dst)) {
				snprintf(err, errlen, "%s: %s", walked[0] ? walked : ".", strerror(errno));
				goto out_close;
			}
			if (!link_trusted(&st, &dst)) {
				owner_text(st.st_uid, lown, sizeof(lown));
				owner_text(dst.st_uid, down, sizeof(down));
				snprintf(err, errlen, "refusing the symbolic link %s (owner %s) in %s (owner %s, mode %04o): sdcscan "
					 "follows a link only where the link and its folder are root's or its own user's and no "
					 "one else can write in that folder", here, lown, walked[0] ? walked : ".", down,
					 (unsigned)(dst.st_mode & 07777));
				goto out_close;
			}
			if (++links > SDC_MAX_LINKS || (t = readlinkat(fd, comp, target, sizeof(target))) <= 0 ||
			    (size_t)t >= sizeof(target)) {
				snprintf(err, errlen, "%s: %s", here, links > SDC_MAX_LINKS ? "too many symbolic links"
								 : t < 0 ? strerror(errno) : t ? "a link target too long"
								 : "an empty link");
				goto out_close;
			}
			target[t] = '\0';
			/* the target, then what was left after the link */
			char next[sizeof(rest)];
			if (snprintf(next, sizeof(next), "%s/%s", target, p) >= (int)sizeof(next)) {
				snprintf(err, errlen, "%s: path too long", path);
				goto out_close;
			}
			memcpy(rest, next, sizeof(rest));
			p = rest;
			if (target[0] == '/') {
				close(fd);
				if ((fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
					snprintf(err, errlen, "/: %s", strerror(errno));
					return -1;
				}
				sdc_strlcpy(walked, "/", sizeof(walked));
			}
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			snprintf(err, errlen, "%s: not a directory", here);
			goto out_close;
		}
		/* O_NOFOLLOW: a link put in its place since the fstatat is not followed (ELOOP) */
		const int next = openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			snprintf(err, errlen, "%s: %s", here, strerror(errno));
			goto out_close;
		}
		close(fd);
		fd = next;
		if (strlen(here) >= sizeof(walked)) {
			snprintf(err, errlen, "%s: path too long", path);
			goto out_close;
		}
		sdc_strlcpy(walked, here, sizeof(walked));
	}
out_close:
	close(fd);
	return -1;
}

/*
 * The folder and name a file written to path goes to, checked: no link as the file, a regular
 * file or none, a folder this user can create a file in. 0 with *dirfd open (O_PATH), or -1.
 */
static int output_target(const char *path, int *dirfd, char *name, size_t namelen, char *shown, size_t shownlen,
			 char *err, size_t errlen)
{
	char dir[4096];
	if (!*path) {
		snprintf(err, errlen, "an empty path");
		return -1;
	}
	if (!strcmp(path, "-")) {
		snprintf(err, errlen, "- (standard output) is not taken here: give a file name (./- for a file named -)");
		return -1;
	}
	if (walk_to_parent(path, dirfd, name, namelen, dir, sizeof(dir), err, errlen))
		return -1;
	join(shown, shownlen, dir, name);
	struct stat st;
	if (fstatat(*dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISLNK(st.st_mode)) {
			char target[4096] = "?", own[64];
			const ssize_t t = readlinkat(*dirfd, name, target, sizeof(target) - 1);
			target[t > 0 ? t : 1] = '\0';
			owner_text(st.st_uid, own, sizeof(own));
			snprintf(err, errlen, "refusing %s: a symbolic link (to %s, owner %s); sdcscan writes no file through a "
				 "link: give the path of the file itself", shown, target, own);
			goto out_close;
		}
		if (!S_ISREG(st.st_mode)) {
			snprintf(err, errlen, "%s is not a regular file (%s): sdcscan writes only regular files, or - for standard "
				 "output", path, S_ISCHR(st.st_mode) ? "a character device" : S_ISDIR(st.st_mode) ? "a directory"
				 : S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISBLK(st.st_mode) ? "a block device" : "not a file");
			goto out_close;
		}
	} else if (errno != ENOENT) {
		snprintf(err, errlen, "%s: %s", shown, strerror(errno));
		goto out_close;
	}
	/* the rename lands in this folder, which must let us create a file */
	if (faccessat(*dirfd, ".", W_OK | X_OK, 0)) {
		snprintf(err, errlen, "cannot write in %s (for %s): %s", dir[0] ? dir : ".", path, strerror(errno));
		goto out_close;
	}
	return 0;
out_close:
	close(*dirfd);
	return -1;
}

/* Whether fd is on the kernel's procfs or sysfs: its files say size 0 in stat whatever they hold
 * (/proc/sys/kernel/random/boot_id), and its folders take no new file, even from root. */
static bool kernel_fs(int fd)
{
	struct statfs fs;
	return !fstatfs(fd, &fs) && (fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC);
}

/*
 * A new temporary file beside name in dirfd's folder, named name.tmp.XXXXXXXX in tmp (NAME_MAX + 32
 * bytes): a new name (O_EXCL), never a link (O_NOFOLLOW). The fd, or -1 with err naming path.
 */
static int create_temp(int dirfd, const char *name, const char *path, char *tmp, char *err, size_t errlen)
{
	int fd = -1, e = EEXIST;
	for (uint32_t tries = 0; fd < 0 && e == EEXIST && tries < 100; tries++) {
		uint32_t r;
		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
			r = (uint32_t)getpid() * 2654435761u ^ (uint32_t)(sdc_now() * 1e9) ^ tries;
		if (snprintf(tmp, NAME_MAX + 32, "%s.tmp.%08x", name, (unsigned)r) >= NAME_MAX + 32 || strlen(tmp) > NAME_MAX) {
			snprintf(err, errlen, "%s: a name too long for its temporary file", path);
			return -1;
		}
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		e = fd < 0 ? errno : 0;
	}
	if (fd < 0) {
		snprintf(err, errlen, "cannot create a temporary file next to %s%s: %s", path,
			 kernel_fs(dirfd) ? " (a folder of the kernel's procfs or sysfs, which takes no file)" : "", strerror(e));
	}
	return fd;
}

int sdc_output_path(const char *path, char *out, size_t outlen, char *err, size_t errlen)
{
	char name[NAME_MAX + 1], shown[4096 + NAME_MAX + 2];
	int dirfd;
	if (output_target(path, &dirfd, name, sizeof(name), shown, sizeof(shown), err, errlen))
		return -1;
	/* The folder's mode and access(2) do not say all: root passes them in /proc, which takes no
	 * file, and on a read-only mount. A file made and removed there shows it before a run burns. */
	char tmp[NAME_MAX + 32];
	const int fd = create_temp(dirfd, name, shown, tmp, err, errlen);
	if (fd >= 0) {
		close(fd);
		unlinkat(dirfd, tmp, 0);
	}
	close(dirfd);
	if (fd < 0)
		return -1;
	if (strlen(shown) >= outlen) {
		snprintf(err, errlen, "%s: path too long", path);
		return -1;
	}
	sdc_strlcpy(out, shown, outlen);
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
	/* what may be read: the size stat gave (one byte more: it changed while read); a procfs or
	 * sysfs file that says size 0, its whole text up to max. A regular file on a real filesystem
	 * keeps its size as the bound, an empty one included. */
	const bool pseudo = st.st_size == 0 && kernel_fs(fd);
	const size_t bound = pseudo ? max : (size_t)st.st_size;
	size_t cap = (pseudo ? SDC_MIN(bound, (size_t)4095) : bound) + 1, n = 0;
	char *buf = malloc(cap);
	int read_errno = 0;
	/* to the end, or to one byte past the bound */
	while (buf && n <= bound) {
		if (n == cap) {
			char *grown = realloc(buf, cap = SDC_MIN(cap * 2, bound + 1));
			if (!grown) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = grown;
		}
		const ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			read_errno = r < 0 ? errno : 0;
			break;
		}
		n += (size_t)r;
	}
	close(fd);
	if (!buf || read_errno || n > bound) {
		if (!buf)
			snprintf(err, errlen, "%s: out of memory", path);
		else if (read_errno)
			snprintf(err, errlen, "%s: %s", path, strerror(read_errno));
		else if (pseudo)
			snprintf(err, errlen, "%s: more than a %s may have (%zu bytes)", path, what, max);
		else /* it grew while read */
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
	char name[NAME_MAX + 1], tmp[NAME_MAX + 32], path[4096 + NAME_MAX + 2];
	int dirfd, fd = -1;
	if (output_target(given, &dirfd, name, sizeof(name), path, sizeof(path), err, errlen))
		return -1;
	if ((fd = create_temp(dirfd, name, path, tmp, err, errlen)) < 0)
		goto out_close;
	const char *suffix = tmp + strlen(name); /* messages name the temporary file as path + suffix */
	size_t done = 0;
	while (done < len) {
		ssize_t w = write(fd, data + done, len - done);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			snprintf(err, errlen, "%s%s: write: %s", path, suffix, strerror(errno));
			goto out_unlink;
		}
		done += (size_t)w;
	}
	/* 0644 whatever the umask: the monitoring user reads reports and metrics */
	if (fchmod(fd, 0644) || fsync(fd)) {
		snprintf(err, errlen, "%s%s: %s", path, suffix, strerror(errno));
		goto out_unlink;
	}
	if (close(fd)) {
		fd = -1;
		snprintf(err, errlen, "%s%s: close: %s", path, suffix, strerror(errno));
		goto out_unlink;
	}
	fd = -1;
	/* within the folder's handle: a link put at the name since the check is replaced, not followed */
	if (renameat(dirfd, tmp, dirfd, name)) {
		snprintf(err, errlen, "cannot rename %s%s to %s: %s", path, suffix, path, strerror(errno));
		goto out_unlink;
	}
	/* the rename itself made durable (fsync needs a handle opened for reading, not O_PATH) */
	const int syncfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (syncfd >= 0) {
		fsync(syncfd);
		close(syncfd);
	}
	close(dirfd);
	return 0;
out_unlink:
	if (fd >= 0)
		close(fd);
	unlinkat(dirfd, tmp, 0);
out_close:
	close(dirfd);
	return -1;
}
