/*
 * Environment variables that sdcscan changes while other threads run. glibc's setenv and unsetenv
 * are not safe against a concurrent getenv (POSIX leaves it undefined; glibc reallocates environ
 * when a name is added and shifts its entries when one is removed), and Open MPI's, NCCL's and our
 * own threads call getenv at any time. A variable named here is made sdcscan's own once, before
 * any thread starts (sdc_env_reserve, first thing in main): four entries of environ point at four
 * buffers of ours, and a later change writes the next hidden one and makes it the visible one, so
 * environ and its entries never move (a value a reader holds is rewritten only three puts later). Used for NCCL_ALGO and NCCL_PROTO, which NCCL reads with
 * getenv while a communicator initialises (one path's each).
 */
#ifndef SDC_ENV_H
#define SDC_ENV_H

#include <stdbool.h>

#define SDC_ENV_VALUE_MAX 63

/* Makes name sdcscan's to change (its value, if set, kept). Call before any thread starts; 0, or -1
 * when the environment cannot take it (out of memory, too many names). */
int sdc_env_reserve(const char *name);
/* Sets a reserved name's value (NULL: absent, as unset; longer than SDC_ENV_VALUE_MAX: refused,
 * -1). Calls are serialised; a getenv on another thread finds the old or the new value, never a
 * moved or freed entry. */
int sdc_env_put(const char *name, const char *value);
/* The value the reserved name had when sdcscan started (NULL: unset then, or not reserved). */
const char *sdc_env_initial(const char *name);

#endif
