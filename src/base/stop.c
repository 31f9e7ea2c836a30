/* When to stop: the signals that end a run with a report, and deadlines (base/stop.h). */
#include "base/stop.h"

#include <signal.h>
#include <string.h>

static struct sdc_stop_flags own;
struct sdc_stop_flags *sdc_stop = &own;
static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
	atomic_store(&sdc_stop->interrupted, true);
	atomic_store(&sdc_stop->requested, true);
	/* A second signal ends the process the default way. */
	signal(sig, SIG_DFL);
}

/* Signals a person or a tool sends to end or poke a process (SIGUSR1 from a log rotator that has
 * the wrong pid, an alarm(1) left behind): their default is a death without a word, which would
 * leave no verdict; they interrupt the run instead, once, and the ones after are ignored. */
static void on_quiet(int sig)
{
	if (!stop_signal)
		stop_signal = sig;
	atomic_store(&sdc_stop->interrupted, true);
	atomic_store(&sdc_stop->requested, true);
	signal(sig, SIG_IGN);
}

void sdc_stop_install_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* A closed terminal or a session manager's hangup ends a run like SIGTERM: with a report. */
	sigaction(SIGHUP, &sa, NULL);
	/* So does a reader that went away (`sdcscan run | head -1`): the run ends UNKNOWN, its report,
	 * state and metrics written (later writes to the pipe fail with EPIPE, unseen). Only the first
	 * SIGPIPE interrupts; the ones after are ignored, never the default death. */
	struct sigaction quiet = sa;
	quiet.sa_handler = on_quiet;
	static const int quiet_signals[] = { SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGIO,
					     SIGPWR,  SIGSTKFLT, SIGXCPU, SIGXFSZ };
	for (size_t i = 0; i < sizeof(quiet_signals) / sizeof(quiet_signals[0]); i++)
		sigaction(quiet_signals[i], &quiet, NULL);
}

bool sdc_stop_interrupted(void)
{
	return atomic_load(&sdc_stop->interrupted);
}

void sdc_stop_interrupt(void)
{
	atomic_store(&sdc_stop->interrupted, true);
	atomic_store(&sdc_stop->requested, true);
}

int sdc_stop_signal(void)
{
	return stop_signal;
}
