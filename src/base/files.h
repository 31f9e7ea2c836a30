/* Files read and written safely: atomic writes through checked folders, whole regular files. */
#ifndef SDC_BASE_FILES_H
#define SDC_BASE_FILES_H

#include <stddef.h>

#include "base/macros.h"

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

#endif
