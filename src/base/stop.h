/*
 * When to stop: SIGINT, SIGTERM, SIGHUP and the other signals whose default would end the process
 * quietly (SIGUSR1, SIGALRM, ...) end a run with its report (a second SIGINT, SIGTERM or SIGHUP
 * kills the process the default way); workers poll one flag in their loops (stress-ng's
 * stress_continue idea).
 *
 * The flags are a small struct so that a burn's process can read them where its run's parent
 * writes them: in a burn child (runner/burn.h) sdc_stop points into the slot the parent shares with
 * it, everywhere else at the process's own flags, which the signal handlers set.
 */
#ifndef SDC_STOP_H
#define SDC_STOP_H

#include <stdatomic.h>
#include <stdbool.h>

struct sdc_stop_flags {
	atomic_bool requested;   /* workers must stop: an interrupt, a deadline, a failure that ends the work */
	atomic_bool hard;        /* even a worker without a finished iteration stops */
	atomic_bool interrupted; /* a signal (or a peer's interrupt) ended the run */
	atomic_int peers_lost;   /* workers of this variant that crashed or hung: one that waits for them stops */
};

/* The flags this process obeys (never NULL). */
extern struct sdc_stop_flags *sdc_stop;

static inline bool sdc_stop_is_requested(void)
{
	return atomic_load_explicit(&sdc_stop->requested, memory_order_relaxed);
}

static inline bool sdc_stop_is_hard(void)
{
	return atomic_load_explicit(&sdc_stop->hard, memory_order_relaxed);
}

/* Asks every worker to stop (not an interrupt: a deadline, a failure that ends the work). */
static inline void sdc_stop_request(void)
{
	atomic_store(&sdc_stop->requested, true);
}

/* Installs the handlers (SIGINT, SIGTERM, SIGHUP, SIGPIPE and the quiet-death signals). */
void sdc_stop_install_signals(void);

/* Whether a signal (or a peer's interrupt, sdc_stop_interrupt) ended the run. */
bool sdc_stop_interrupted(void);

/* Marks the run interrupted and asks every worker to stop. */
void sdc_stop_interrupt(void);

/* The signal that interrupted the run (0: none, or a peer's interrupt). */
int sdc_stop_signal(void);

#endif
