/*
 * The node's verdict over time, in the state directory: every saved run in history/ (bounded,
 * oldest removed) and the node's state (DIR/state.json) that `status`, Prometheus and the Slurm,
 * NHC and node-problem-detector scripts read. The rules (man sdcscan(1), "The verdict's life"):
 *   - a full scheduled run is the profile as it is (no --inject, --variant, --probe, --set,
 *     --duration, --cpus, --gpus), not interrupted; it sets the state to its verdict, except that
 *     a CRITICAL stays until a person clears it (sdcscan clear) or the profile's
 *     clear_after_clean_runs full scheduled runs in a row are OK, each of them having tested every
 *     place (probe/variant@device) the CRITICAL was found at (default 0: never);
 *   - one that tested (OK, WARNING or CRITICAL, not UNKNOWN) makes the node's verdict fresh: the
 *     only freshness, for status, the metrics and the alert rules;
 *   - any other run is kept in history as what it is and never lowers the state; one that found
 *     corruption (and injected nothing) raises it to CRITICAL: corruption seen is corruption;
 *     until the first full scheduled run, a run that is neither injected nor interrupted sets it;
 *   - an injected or skipped run never changes the state.
 * state.json is written before history/ and last.json (a disk that fills keeps the small state
 * first), and every report in history/ holds the state after it (node): an unreadable or lost
 * state.json is rebuilt from the newest, never silently started anew.
 */
#ifndef SDC_HISTORY_H
#define SDC_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/verdict.h"

enum sdc_run_kind {
	SDC_RUN_SCHEDULED,   /* the profile as it is */
	SDC_RUN_PARTIAL,     /* --probe: some of its probes */
	SDC_RUN_VARIANT,     /* --variant: one variant (a finding's replay) */
	SDC_RUN_INJECTED,    /* --inject: faults planted on purpose */
	SDC_RUN_INTERRUPTED, /* stopped before its end (a signal, a peer's interrupt) */
	SDC_RUN_SKIPPED,     /* --if-idle found the node busy: nothing burned */
};
const char *sdc_run_kind_name(enum sdc_run_kind k);

#define SDC_HISTORY_KEEP 100 /* saved runs kept in history/ */

struct sdc_node_state {
	enum sdc_verdict verdict; /* the node's */
	double since;             /* when it became that (epoch) */
	char summary[512];        /* the run that set it: its verdict line */
	uint64_t set_by;          /* that run's sequence number */
	int clean_runs;           /* scheduled runs in a row that were OK while the state is CRITICAL */
	double cleared;           /* when a person (or the clean-run rule) cleared a CRITICAL; 0: never */
	char cleared_by[64], clear_reason[256];
	uint64_t sequence;        /* the last saved run's */
	enum sdc_run_kind last_kind;
	enum sdc_verdict last_verdict;
	double last_end;          /* when the last saved run ended */
	double last_scheduled_end; /* the last full scheduled run that tested: freshness (0: none) */
	uint64_t scheduled_runs;  /* full scheduled runs saved */
	char last_summary[512];
	/* where the standing CRITICAL was found (probe/variant@device): a clean run counts toward
	 * clear_after_clean_runs only where it tested every one */
#define SDC_NODE_PLACES 16
	char critical_at[SDC_NODE_PLACES][96];
	int ncritical_at;
	char rebuilt[300]; /* not empty: state.json was unreadable or lost and was rebuilt from this */
};

/* The state (0), none saved yet (1, s zeroed), or unreadable (-1, why in err). A state.json that
 * is unreadable or missing where history/ holds runs is rebuilt from the newest (0, s->rebuilt
 * says from what); -1 only where nothing can rebuild it. */
int sdc_node_read(const char *dir, struct sdc_node_state *s, char *err, size_t errlen);

/* A finished run into the state, then history, by the rules above: report (json_t *) gets
 * run.kind, run.sequence and node (the state after, also in s); its end is end (epoch), its
 * verdict v and summary. clear_after: the profile's clear_after_clean_runs. 0, or -1 with err
 * (s and report's node hold the state after all the same where state.json was written). */
int sdc_node_record(const char *dir, void *report, enum sdc_run_kind kind, enum sdc_verdict v, const char *summary,
		    double end, int clear_after, struct sdc_node_state *s, char *err, size_t errlen);

/* The state as a report's "node" section (json_t *). */
void *sdc_node_json(const struct sdc_node_state *s);

/* A person clears a CRITICAL (who, why): the state becomes OK until the next run says otherwise.
 * -1 with err when there is nothing to clear or the state cannot be written. */
int sdc_node_clear(const char *dir, const char *who, const char *reason, char *err, size_t errlen);

#endif
