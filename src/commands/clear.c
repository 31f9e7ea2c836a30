/*
 * sdcscan clear --reason TEXT: a person takes the node's CRITICAL back (runner/history.h), after
 * replacing a part or deciding the finding was not the host's. Recorded with who (the login, or
 * the user sudo was run by) and when; the next run's verdict is the node's again.
 */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands/commands.h"
#include "runner/history.h"
#include "runner/state.h"

struct clear_opts {
	const char *state_dir, *reason;
};

#define OPT(f) offsetof(struct clear_opts, f)
static const struct sdc_option clear_options[] = {
	{ .name = "reason", .metavar = "TEXT", .type = SDC_OPT_ARG, .offset = OPT(reason),
	  .help = "why the CRITICAL is cleared (required: kept in the state with who and when)" },
	{ .name = "state-dir", .metavar = "DIR", .type = SDC_OPT_ARG, .offset = OPT(state_dir),
	  .help = "the state directory (default: $SDCSCAN_STATE_DIR, else " SDC_STATE_DIR_DEFAULT ")" },
	SDC_OPT_END,
};

/* The person: sudo's caller where sudo ran this, else the login of the real user id. */
static void who(char *buf, size_t len)
{
	const char *sudo = getenv("SUDO_USER");
	const struct passwd *pw = getpwuid(getuid());
	if (sudo && *sudo && getuid() == 0)
		snprintf(buf, len, "%s (via sudo)", sudo);
	else if (pw)
		snprintf(buf, len, "%s", pw->pw_name);
	else
		snprintf(buf, len, "uid %ld", (long)getuid());
}

static int clear_main(struct sdc_cmd *c)
{
	const struct clear_opts *o = c->opts;
	if (!o->reason || !*o->reason)
		return sdc_cli_bad(&c->cli, "--reason TEXT is required: the reason is kept with who cleared it and when");
	char by[96], err[1024];
	who(by, sizeof(by));
	const char *dir = sdc_state_dir(o->state_dir);
	if (sdc_node_clear(dir, by, o->reason, err, sizeof(err))) {
		fprintf(stderr, "sdcscan clear: %s\n", err);
		return sdc_cli_unknown(&c->cli);
	}
	printf("OK: the node's CRITICAL was cleared by %s: %s\n", by, o->reason);
	return 0;
}

const struct sdc_command sdc_command_clear = {
	.name = "clear",
	.summary = "take back the node's CRITICAL (it stays until cleared): --reason TEXT, kept with who and when",
	.options = clear_options,
	.opts_size = sizeof(struct clear_opts),
	.fn = clear_main,
};
