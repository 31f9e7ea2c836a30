#include "stop.h"

#include <signal.h>
#include <string.h>

atomic_bool sdc_stop_requested;
static atomic_bool interrupted;

static void on_signal(int sig)
{
	atomic_store(&interrupted, true);
	atomic_store(&sdc_stop_requested, true);
	/* A second signal ends the process the default way. */
	signal(sig, SIG_DFL);
}

static void on_pipe(int sig)
{
	atomic_store(&interrupted, true);
	atomic_store(&sdc_stop_requested, true);
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
	struct sigaction pipe = sa;
	pipe.sa_handler = on_pipe;
	sigaction(SIGPIPE, &pipe, NULL);
}

bool sdc_stop_interrupted(void)
{
	return atomic_load(&interrupted);
}

void sdc_stop_interrupt(void)
{
	atomic_store(&interrupted, true);
	atomic_store(&sdc_stop_requested, true);
}
