/*
 * The state directory (/var/lib/sdcscan; --state-dir; SDCSCAN_STATE_DIR): where every run that
 * keeps state saves its report (last.json, atomically) and the time of its last OK run
 * (last-success), what `sdcscan status`, Slurm's HealthCheckProgram and node-problem-detector
 * read; and the lock that lets one run at a time burn this host's cores. The lock is an flock
 * on DIR/lock, released by the kernel when the holder exits or dies; the file says who holds it.
 */
#ifndef SDC_STATE_H
#define SDC_STATE_H

#include <stdbool.h>
#include <stddef.h>

#define SDC_STATE_DIR_DEFAULT "/var/lib/sdcscan"

/* The state directory: dir when given, else $SDCSCAN_STATE_DIR, else the default. */
const char *sdc_state_dir(const char *dir);
/* DIR/name into buf; -1 when it does not fit. */
int sdc_state_path(const char *dir, const char *name, char *buf, size_t len);
/* Creates the state directory (mode 0755, parents too) when missing. 0, or -1 with err. */
int sdc_state_prepare(const char *dir, char *err, size_t errlen);

struct sdc_state_lock {
	int fd;
};
/*
 * Takes the run lock of dir, waiting up to wait seconds (0: not at all) for a holder to finish;
 * on success writes this process's pid, start time and command into the lock file. -1 with err
 * naming the holder (pid, start time, command) when it is held, or why it could not be taken.
 */
int sdc_state_lock(const char *dir, double wait, const char *command, struct sdc_state_lock *l, char *err,
		   size_t errlen);
void sdc_state_unlock(struct sdc_state_lock *l);

/* The epoch time of the last OK run saved in dir (0 when none), and saving it. */
double sdc_state_last_success(const char *dir);
int sdc_state_save_success(const char *dir, double epoch, char *err, size_t errlen);

/*
 * A run's start, saved before it burns (DIR/started: start time, pid, the process's start time
 * since boot, boot id, profile) and cleared once its verdict is saved: a run that dies anyway
 * (SIGKILL, the OOM killer, a power loss) leaves it, and `status` says so instead of the verdict
 * of the run before.
 */
int sdc_state_save_start(const char *dir, const char *profile, char *err, size_t errlen);
void sdc_state_clear_start(const char *dir);
struct sdc_state_start {
	double start; /* epoch */
	int pid;
	char profile[128];
	bool alive; /* that process is still running (same boot, same process) */
};
/* 1 with s filled: a run started and has not saved its verdict; 0: none; -1: the record is unreadable. */
int sdc_state_read_start(const char *dir, struct sdc_state_start *s);

#endif
