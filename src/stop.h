/*
 * When to stop: SIGINT, SIGTERM and SIGHUP end a run (a second one kills the process the default
 * way); workers poll one flag in their loops (stress-ng's stress_continue idea).
 */
#ifndef SDC_STOP_H
#define SDC_STOP_H

#include <stdatomic.h>
#include <stdbool.h>

/* Set when workers must stop: an interrupt, a deadline, a failure that ends the work. */
extern atomic_bool sdc_stop_requested;

/* Installs the handlers for SIGINT, SIGTERM and SIGHUP. */
void sdc_stop_install_signals(void);

/* Whether a signal (or a peer's interrupt, sdc_stop_interrupt) ended the run. */
bool sdc_stop_interrupted(void);

/* Marks the run interrupted and asks every worker to stop. */
void sdc_stop_interrupt(void);

#endif
