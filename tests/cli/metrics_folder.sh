#!/bin/sh
# A --prom FILE whose folder does not exist (the packaging's node_exporter textfile folder where
# Debian's prometheus is installed without prometheus-node-exporter) must not stop the scans: a
# warning on stderr and in the report's run.warnings, the probes run, the verdict is saved and
# `status` reads it. A folder that is not a folder stays an error, before the burn.
. "$(dirname "$0")/lib.sh"
SCHEMA=$(dirname "$0")/../../schema/report.schema.json
RUN="run $SMALL --set gemm.dtypes=int8 --cpus 0 --gpus none --duration 1"
PROM=$TMP/node-exporter/sdcscan.prom

expect_exit 0 clean "$SDCSCAN" $RUN --prom "$PROM"
expect_grep clean err "warning: --prom $PROM: the folder $TMP/node-exporter does not exist"
expect_grep clean out "^gemm/int8 *cpu0 *OK"
[ ! -e "$TMP/node-exporter" ] || fail "clean: the metrics folder was created"
last=$SDCSCAN_STATE_DIR/last.json
if [ -f "$last" ]; then
	# the probes burned: iterations counted on cpu0
	[ "$(json_get "$last" "sum(x['iterations'] for x in r['results'] if x['device'] == 'cpu0') > 0")" = True ] ||
		fail "clean: no iterations in the saved report"
	json_get "$last" "r['run']['warnings'][0]" | grep -q "does not exist" || fail "clean: no run.warnings in last.json"
	python3 - "$SCHEMA" "$last" <<'PY' || fail "clean: the report with run.warnings is not valid against the schema"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.validators.validator_for(schema)(schema).validate(json.load(open(sys.argv[2])))
PY
	ls "$SDCSCAN_STATE_DIR/history/" | grep -q . || fail "clean: nothing in the state's history"
else
	fail "clean: no report saved in the state directory"
fi
# (stale: a --set run is partial, and no full scheduled run has tested this node)
expect_exit 1 status "$SDCSCAN" status
expect_grep status out "^WARNING: last run .*(stale: no full scheduled run has tested this node yet).*: OK: "
expect_grep status out "^warning: the last run: .*metrics"

# What the scan finds is its verdict and is saved: a CRITICAL too (an injected one here, which
# the node's state leaves aside, so its report rather than status says it).
expect_exit 2 bad "$SDCSCAN" $RUN --set gemm.iterations=3 --prom "$PROM" \
	--inject "gemm/int8:C:device=0,iter=1,row=3,col=4,bit=12"
expect_grep bad err "warning: --prom"
[ "$(json_get "$last" "r['verdict']['status'], r['run']['kind']")" = "CRITICAL injected" ] ||
	fail "bad: the CRITICAL was not saved: $(json_get "$last" "r['verdict']['status']")"

# A clean run without the warning has no run.warnings (the field says something when present).
mkdir -p "$TMP/node-exporter"
expect_exit 0 present "$SDCSCAN" $RUN --prom "$PROM"
[ -s "$PROM" ] || fail "present: no metrics written into an existing folder"
grep -q "warning" "$TMP/present.err" && fail "present: a warning with the folder there: $(cat "$TMP/present.err")"
[ "$(json_get "$last" "'warnings' in r['run']")" = False ] || fail "present: run.warnings without a warning"

# A folder that is a file is a mistake, not a missing exporter: refused before anything burns.
: >"$TMP/file"
expect_exit 3 notdir "$SDCSCAN" $RUN --duration 30 --prom "$TMP/file/sdcscan.prom"
expect_grep notdir err "prom"
finish
