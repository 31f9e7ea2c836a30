#!/bin/sh
# State, lock, status, Prometheus and JUnit: a run saves its report in the state directory, one
# run at a time holds the host (the second exits UNKNOWN naming the first, or waits), the lock
# dies with its holder; status reads the saved verdict fast, says stale and unknown, and fits
# node-problem-detector's 80 characters; --prom passes promtool, --junit a JUnit reader.
. "$(dirname "$0")/lib.sh"

ST=$TMP/st
# a small profile, run as it is: full scheduled runs (a --set or --cpus run is partial and never
# makes the node fresh: critical_kept.sh)
P=$TMP/quick.yaml
printf 'probes:\n  gemm:\n    dtypes: [int8]\n    m: 48\n    n: 40\n    k: 64\n    duration: 1\n' >"$P"
sed 's/duration: 1/duration: 30/' "$P" >"$TMP/quick30.yaml"
RUN="run --profile $P --state-dir $ST"

expect_exit 3 status_none "$SDCSCAN" status --state-dir "$ST"
expect_grep status_none out "^UNKNOWN: no usable sdcscan result at $ST/last.json"
expect_exit 2 status_none_npd "$SDCSCAN" status --state-dir "$ST" --exit-codes npd

expect_exit 0 clean "$SDCSCAN" $RUN --prom "$TMP/m.prom" --junit "$TMP/j.xml"
[ -s "$ST/last.json" ] || fail "run saved no last.json in the state directory"
[ -s "$ST/last-success" ] || fail "an OK run saved no last-success"
expect_exit 0 status_ok "$SDCSCAN" status --state-dir "$ST"
expect_grep status_ok out "^OK: last run [0-9]* s ago, profile $P"
expect_exit 1 stale "$SDCSCAN" status --state-dir "$ST" --max-age 0.001
expect_grep stale out "^WARNING: .*stale"
expect_exit 1 stale_npd "$SDCSCAN" status --state-dir "$ST" --max-age 0.001 --exit-codes npd
# SDCSCAN_STATE_DIR is the default directory, as the timer and the health check share it
SDCSCAN_STATE_DIR=$ST expect_exit 0 status_env "$SDCSCAN" status

# What status reads is checked: another schema major, a verdict whose code and status disagree, a
# report without its run times or lists, and a file that is not JSON are each UNKNOWN, with why.
for case in "schema_version=[2,0]|report schema 2.x" "verdict={\"status\":\"OK\",\"code\":2}|verdict is not one of" \
	"run={}|run.start or run.duration_seconds" "findings=7|no results, devices or findings list"; do
	edit=${case%%|*} reason=${case#*|}
	python3 - "$ST/last.json" "$TMP/edited.json" "$edit" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
k, v = sys.argv[3].split("=", 1)
r[k] = json.loads(v)
json.dump(r, open(sys.argv[2], "w"))
PY
	expect_exit 3 refused "$SDCSCAN" status "$TMP/edited.json"
	expect_grep refused err "$reason"
done
printf '{"schema_version": [1, 0], "verdict"' >"$TMP/cut.json"
expect_exit 3 cut "$SDCSCAN" status "$TMP/cut.json"
expect_grep cut err "not JSON"

# Prometheus: promtool accepts it; every probe x device present, 0 when clean.
if command -v promtool >/dev/null; then
	promtool check metrics <"$TMP/m.prom" >"$TMP/promtool.out" 2>&1 || fail "promtool: $(cat "$TMP/promtool.out")"
else
	fail "promtool not found (apt-get install prometheus)"
fi
grep -q "^sdcscan_probe_failed{probe=\"gemm\",device=\"cpu0\",status=\"ok\",profile=\"$P\",injected=\"false\"} 0\$" "$TMP/m.prom" ||
	fail "no clean gemm/cpu0 series: $(grep probe_failed "$TMP/m.prom")"
grep -q '^sdcscan_verdict 0$' "$TMP/m.prom" || fail "sdcscan_verdict is not 0"
grep -q '^sdcscan_build_info{version="' "$TMP/m.prom" || fail "no sdcscan_build_info"
grep -q ' [0-9.]* [0-9]*$' "$TMP/m.prom" && fail "a sample carries a timestamp"

# A corrupt run (injected): its report names it, status given the report says so; npd gets one
# line of at most 80 characters and exit 1. The node's state is not an injected run's to change
# (verdict_life.sh has the node's life): status of the state directory stays OK, and says why.
expect_exit 2 bad "$SDCSCAN" $RUN --duration 1 --cpus 0-1 --set gemm.iterations=4 --prom "$TMP/b.prom" \
	--junit "$TMP/b.xml" --inject "gemm/int8:C:device=1,iter=1,row=3,col=4,bit=12"
expect_exit 0 status_node "$SDCSCAN" status --state-dir "$ST"
expect_grep status_node out "^OK: OK since .*; the last run was injected (.* ago, which does not change the node's state): CRITICAL"
expect_exit 2 status_bad "$SDCSCAN" status "$ST/last.json"
expect_grep status_bad out "^CRITICAL: last run .* cpu1 gemm/int8 checksum-mismatch C\[3\]\[4\]"
# The headline names the device whatever order the report lists its findings in: the vote's
# "host" disagreement and cpu1's located fault of the same iteration arrive in either order (the
# burns' records and the vote race), so the same report with its findings reversed says the same.
python3 - "$ST/last.json" "$TMP/reversed.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["findings"].reverse()
json.dump(r, open(sys.argv[2], "w"))
PY
expect_exit 2 status_reversed "$SDCSCAN" status "$TMP/reversed.json"
expect_grep status_reversed out "^CRITICAL: last run .* cpu1 gemm/int8 checksum-mismatch C\[3\]\[4\]"
expect_exit 1 status_bad_npd "$SDCSCAN" status "$ST/last.json" --exit-codes npd
[ "$(wc -l <"$TMP/status_bad_npd.out")" -eq 1 ] && [ "$(head -1 "$TMP/status_bad_npd.out" | wc -c)" -le 81 ] ||
	fail "npd output is not one line of at most 80 characters: $(cat "$TMP/status_bad_npd.out")"
expect_grep status_bad_npd out "^SDC: CRITICAL cpu1 gemm"
grep -q "^sdcscan_probe_failed{probe=\"gemm\",device=\"cpu1\",status=\"corrupt\",profile=\"$P\",injected=\"true\"} 1\$" "$TMP/b.prom" ||
	fail "cpu1 not failed in prom"
grep -q "^sdcscan_probe_failed{probe=\"gemm\",device=\"cpu0\",status=\"ok\",profile=\"$P\",injected=\"true\"} 0\$" "$TMP/b.prom" ||
	fail "cpu0 not clean in prom"
grep -q '^sdcscan_last_run_verdict 2$' "$TMP/b.prom" || fail "sdcscan_last_run_verdict is not 2"
grep -q '^sdcscan_verdict 0$' "$TMP/b.prom" || fail "sdcscan_verdict (the node's) is not 0 after an injected run"
# last success is the clean run's, not this one's
[ "$(sed -n 's/^sdcscan_last_success_timestamp_seconds //p' "$TMP/b.prom")" = "$(sed -n 's/^sdcscan_last_run_timestamp_seconds //p' "$TMP/m.prom")" ] ||
	fail "last success moved with a CRITICAL run"
promtool check metrics <"$TMP/b.prom" >"$TMP/promtool.out" 2>&1 || fail "promtool (corrupt run): $(cat "$TMP/promtool.out")"

# JUnit: well-formed, and a JUnit reader sees one case per probe and device, the bad one failed
# with its finding in the text.
for x in j b; do
	xmllint --noout "$TMP/$x.xml" 2>"$TMP/xmllint.out" || fail "xmllint $x.xml: $(cat "$TMP/xmllint.out")"
done
junit=$(/usr/bin/python3 - "$TMP/b.xml" <<'PY'
import sys
from junitparser import JUnitXml, Failure
cases = {}
for suite in JUnitXml.fromfile(sys.argv[1]):
    for case in suite:
        cases[case.name] = [r for r in case.result if isinstance(r, Failure)]
bad = []
if sorted(cases) != ["gemm on cpu0", "gemm on cpu1"]: bad.append("cases %s" % sorted(cases))
if cases.get("gemm on cpu0"): bad.append("cpu0 failed")
f = cases.get("gemm on cpu1") or []
if not f or "checksum-mismatch" not in (f[0].text or ""): bad.append("cpu1 failure text: %r" % [x.text for x in f])
print("; ".join(bad) or "ok")
PY
)
[ "$junit" = ok ] || fail "junit: $junit"

# One run at a time: the second exits UNKNOWN at once naming the first; --wait waits for it.
"$SDCSCAN" $RUN --duration 4 --cpus 0 >"$TMP/first.out" 2>&1 &
first=$!
for _ in $(seq 50); do grep -q "^pid $first," "$ST/lock" 2>/dev/null && break; sleep 0.1; done
t0=$(date +%s)
expect_exit 3 second "$SDCSCAN" $RUN --duration 1 --cpus 1
expect_grep second err "another sdcscan run holds this host (pid $first, started "
[ $(($(date +%s) - t0)) -le 2 ] || fail "the second run did not exit at once"
expect_exit 0 waited "$SDCSCAN" $RUN --duration 1 --cpus 1 --wait 30
wait $first || fail "the first run failed"
# The kernel releases the lock of a run that dies.
"$SDCSCAN" $RUN --duration 30 --cpus 0 >/dev/null 2>&1 &
victim=$!
for _ in $(seq 50); do grep -q "^pid $victim," "$ST/lock" 2>/dev/null && break; sleep 0.1; done
kill -9 $victim
wait $victim 2>/dev/null
expect_exit 0 after_kill "$SDCSCAN" $RUN --duration 1 --cpus 1

# --no-state: no lock taken, nothing saved.
rm -rf "$TMP/ns"
expect_exit 0 no_state "$SDCSCAN" run --probe gemm --set gemm.dtypes=int8 --duration 1 --cpus 0 --no-state --state-dir "$TMP/ns"
[ -e "$TMP/ns" ] && fail "--no-state created the state directory"
# A state directory that cannot be one: refused before the burn.
: >"$TMP/afile"
expect_exit 3 bad_state "$SDCSCAN" run --probe gemm --duration 30 --state-dir "$TMP/afile/sub"
expect_grep bad_state err "state directory"
[ -s "$TMP/bad_state.out" ] && grep -q "^sdcscan .*profile" "$TMP/bad_state.out" && fail "bad state dir: the run started"

# status latency: well under a second (what a 60 s HealthCheckProgram budget needs)
t0=$(date +%s%N)
for _ in 1 2 3 4 5 6 7 8 9 10; do "$SDCSCAN" status --state-dir "$ST" >/dev/null; done
echo "status: $(( ($(date +%s%N) - t0) / 10000000 )) ms a call (mean of 10)"

# A run that dies outright (SIGKILL, the OOM killer, a power loss) leaves its start record: status
# says it died without a verdict, UNKNOWN in its line, npd line and metrics, never the OK before it.
# A run still going is said as such.
D="$TMP/died"
expect_exit 0 before "$SDCSCAN" run --profile "$P" --state-dir "$D"
"$SDCSCAN" run --profile "$TMP/quick30.yaml" --state-dir "$D" > /dev/null 2>&1 &
pid=$!
sleep 1.5
expect_exit 0 going "$SDCSCAN" status --state-dir "$D"
expect_grep going out "^OK: last run .* ago (a run is in progress: pid $pid, profile .*quick30.yaml)"
kill -KILL "$pid"
wait "$pid" 2>/dev/null
expect_exit 3 died "$SDCSCAN" status --state-dir "$D" --prom "$TMP/died.prom"
expect_grep died out "^UNKNOWN: the last run, started .* (.* ago, pid $pid, profile .*quick30.yaml), died without a verdict; the run before it: OK"
grep -q "^sdcscan_verdict 3$" "$TMP/died.prom" || fail "died: metrics not UNKNOWN"
expect_exit 2 diednpd "$SDCSCAN" status --state-dir "$D" --exit-codes npd
expect_grep diednpd out "^SDC: UNKNOWN last run died without a verdict$"
expect_exit 2 crit "$SDCSCAN" run $SMALL --set gemm.dtypes=int8 --cpus 0 --duration 1 --state-dir "$D" --inject "gemm:C:iter=0,row=1,col=2,bit=30"
"$SDCSCAN" run $SMALL --set gemm.dtypes=int8 --cpus 0 --duration 30 --state-dir "$D" > /dev/null 2>&1 &
pid=$!
sleep 1.5
kill -KILL "$pid"
wait "$pid" 2>/dev/null
# (an injected CRITICAL is not the node's: the died run is UNKNOWN; verdict_life.sh has a real one)
expect_exit 3 diedinj "$SDCSCAN" status --state-dir "$D"
expect_grep diedinj out "^UNKNOWN: the last run, started .* died without a verdict; the run before it: CRITICAL"
finish
