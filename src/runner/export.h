/*
 * A report (runner/report.h's JSON) in the forms the fleet's tools read: Prometheus text for
 * node_exporter's textfile collector, and JUnit XML for CI. Both are made from the report alone,
 * so `sdcscan run` writes them at the end of a run and `sdcscan status` can again from the saved
 * one. Written atomically (a temporary file in the same directory, then rename).
 */
#ifndef SDC_EXPORT_H
#define SDC_EXPORT_H

#include "runner/report_fields.h"

#include <stddef.h>

/*
 * Prometheus: sdcscan_build_info, sdcscan_last_run_timestamp_seconds,
 * sdcscan_last_full_run_timestamp_seconds (last_full: the node's freshness, the last full scheduled
 * run that tested), sdcscan_last_success_timestamp_seconds (last_success: the last such run that
 * was OK; 0: none known),
 * sdcscan_last_run_duration_seconds, sdcscan_verdict, sdcscan_last_run_verdict,
 * sdcscan_last_run_info{profile,injected}, and for every probe x device of the run (and any other
 * a finding names, device "host" for the host) sdcscan_probe_failed (0 or 1, with its status:
 * ok, corrupt, crashed, degraded, error, hung, interrupted, skipped) and sdcscan_probe_findings,
 * labelled probe, device, profile, injected; a GPU also gpu and UUID, as dcgm-exporter labels it
 * (device="nvidiaN"). No label is empty. man sdcscan(1), NOTES, Metrics; the alert rules and the
 * dashboard in packaging/ ask for exactly these (tests/packaging/prometheus.sh). report: json_t *.
 */
int sdc_export_prom(void *report, double last_success, double last_full, const char *path, char *err, size_t errlen);
/* JUnit: one testcase per probe x device, failing with its findings in the element text. */
int sdc_export_junit(void *report, const char *path, char *err, size_t errlen);


#endif
