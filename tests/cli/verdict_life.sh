#!/bin/sh
# The node's verdict outlives its runs (runner/history.h). A real CRITICAL (a scheduled run on a GPU
# whose SM 3 computes wrong: the fake GPU module, not --inject) stays the node's state through a
# clean scheduled run, an interrupted one, a replay and an injected one, each kept in history as
# what it was; status, its npd line and the metrics say CRITICAL and why; `sdcscan clear` (with a
# reason, recorded with who and when) takes it back; a profile's clear_after_clean_runs does so
# after that many clean scheduled runs. History keeps the last 100 runs. A report dated in the
# future is a clock-skew WARNING in status and in fleet, and never hides another; a report whose
# verdict is less than its findings is refused.
# usage: verdict_life.sh SDCSCAN FAKE_GPU_MODULE FAKE_NVML
. "$(dirname "$0")/lib.sh"
export SDCSCAN_GPU_MODULE=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
export SDCSCAN_NVML_LIBRARY=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
unset FAKE_GPU_BAD_SM
P=$TMP/sched.yaml
printf 'probes:\n  gemm:\n    dtypes: [int8]\n    m: 48\n    n: 40\n    k: 64\n    gpu_dtypes: [bf16]\n    gpu_m: 48\n    gpu_n: 40\n    gpu_k: 64\n    duration: 2\n' >"$P"
D=$TMP/st
# (the profile as it is: a full scheduled run; --duration or --cpus would make it partial)
SCHED="run --profile $P --state-dir $D"
kinds() { ls "$D/history" | sed 's/^[0-9]*-//; s/\.json$//' | tr '\n' ' '; }

expect_exit 0 ok1 "$SDCSCAN" $SCHED
FAKE_GPU_BAD_SM=3 expect_exit 2 crit "$SDCSCAN" $SCHED --json "$TMP/crit.json"
expect_exit 2 st_crit "$SDCSCAN" status --state-dir "$D"
# a clean scheduled run after it: still CRITICAL, and status says since when, what, and the clean run
expect_exit 0 ok2 "$SDCSCAN" $SCHED --prom "$TMP/ok2.prom"
expect_exit 2 st_sticky "$SDCSCAN" status --state-dir "$D"
expect_grep st_sticky out "^CRITICAL: since .* (.* ago, run 2; it stays until \`sdcscan clear --reason ...\`): CRITICAL: gpu0 gemm .*; 1 clean scheduled run since; the last run (scheduled, .* ago): OK"
expect_exit 1 st_sticky_npd "$SDCSCAN" status --state-dir "$D" --exit-codes npd
expect_grep st_sticky_npd out "^SDC: CRITICAL gpu0 gemm "
grep -q "^sdcscan_verdict 2$" "$TMP/ok2.prom" || fail "metrics: the node's verdict is not 2 after a clean run"
grep -q "^sdcscan_last_run_verdict 0$" "$TMP/ok2.prom" || fail "metrics: the last run's own verdict is not 0"
[ "$(json_get "$D/last.json" "r['node']['verdict'], r['node']['set_by'], r['node']['clean_runs'], r['run']['kind'], r['run']['sequence']")" = \
	"CRITICAL 2 1 scheduled 3" ] || fail "report: node $(json_get "$D/last.json" "r.get('node'), r['run'].get('kind')")"
# an interrupted run, the finding's replay (its own line, no state options in it), an injected run
"$SDCSCAN" $SCHED --duration 30 >/dev/null 2>&1 &
pid=$!
sleep 1.5
kill -INT "$pid"
wait "$pid"
replay=$(json_get "$TMP/crit.json" "[f['replay'] for f in r['findings'] if f['kind'] == 'checksum-mismatch'][0]")
case "$replay" in *state-dir* | *--prom* | *--junit* | *no-state*) fail "replay names a state or output option: $replay" ;; esac
expect_exit 0 replay sh -c "\"$SDCSCAN\" ${replay#sdcscan } --state-dir $D"
expect_exit 2 injected "$SDCSCAN" $SCHED --inject "gemm/int8:C:iter=1,row=1,col=2,bit=20"
[ "$(kinds)" = "scheduled-OK scheduled-CRITICAL scheduled-OK interrupted-UNKNOWN variant-OK injected-CRITICAL " ] ||
	fail "history: $(kinds)"
expect_exit 2 st_still "$SDCSCAN" status --state-dir "$D"
expect_grep st_still out "^CRITICAL: since .*run 2;.* 1 clean scheduled run since; the last run (injected"
# a run that dies outright after it: the CRITICAL stands (a died run says no more than that)
"$SDCSCAN" $SCHED --duration 30 >/dev/null 2>&1 &
pid=$!
sleep 1.5
kill -KILL "$pid"
wait "$pid" 2>/dev/null
expect_exit 2 died "$SDCSCAN" status --state-dir "$D"
expect_grep died out "^CRITICAL: gpu0 gemm .* (since 20.*Z); the last run, started .* died without a verdict"
# clear: a reason is required; then OK, said with who, when and why, until a run says otherwise
expect_exit 3 clear_noreason "$SDCSCAN" clear --state-dir "$D"
expect_grep clear_noreason err "reason TEXT is required"
expect_exit 0 clear "$SDCSCAN" clear --state-dir "$D" --reason "gpu0 replaced (ticket 42)"
expect_exit 0 st_cleared "$SDCSCAN" status --state-dir "$D"
expect_grep st_cleared out "^OK: cleared by root: gpu0 replaced (ticket 42) (at .*); no run since"
[ "$(json_get "$D/state.json" "r['cleared']['by'], r['cleared']['reason'], r['verdict']")" = "root gpu0 replaced (ticket 42) OK" ] ||
	fail "clear: not recorded"
expect_exit 3 clear_again "$SDCSCAN" clear --state-dir "$D" --reason "twice"
expect_grep clear_again err "not CRITICAL: nothing to clear"
expect_exit 0 ok3 "$SDCSCAN" $SCHED
expect_exit 0 st_ok "$SDCSCAN" status --state-dir "$D"
expect_grep st_ok out "^OK: last run"

# clear_after_clean_runs: 2 clean scheduled runs in a row clear a CRITICAL
P2=$TMP/auto.yaml
{ echo "clear_after_clean_runs: 2"; cat "$P"; } >"$P2"
D2=$TMP/st2
AUTO="run --profile $P2 --state-dir $D2"
FAKE_GPU_BAD_SM=3 expect_exit 2 acrit "$SDCSCAN" $AUTO
expect_exit 0 a1 "$SDCSCAN" $AUTO
expect_exit 2 st_a1 "$SDCSCAN" status --state-dir "$D2"
expect_exit 0 a2 "$SDCSCAN" $AUTO
expect_exit 0 st_a2 "$SDCSCAN" status --state-dir "$D2"
[ "$(json_get "$D2/state.json" "r['cleared']['by'], r['clean_runs']")" = "sdcscan 2" ] || fail "clear_after_clean_runs: $(cat "$D2/state.json")"

# History keeps the last 100 runs: with 150 saved, one more leaves 101..151 minus the oldest
python3 - "$D2" <<'PY'
import json, os, sys
d = sys.argv[1]
s = json.load(open(d + "/state.json"))
s["last_run"]["sequence"] = 150
json.dump(s, open(d + "/state.json", "w"))
for n in range(1, 151):
    open("%s/history/%06d-scheduled-OK.json" % (d, n), "w").write("{}")
PY
expect_exit 0 a3 "$SDCSCAN" $AUTO
[ "$(ls "$D2/history" | wc -l)" = 100 ] || fail "history: $(ls "$D2/history" | wc -l) files kept, not 100"
[ "$(ls "$D2/history" | head -1)" = "000052-scheduled-OK.json" ] || fail "history: the oldest kept is $(ls "$D2/history" | head -1)"

# A report from the future: a clock-skew WARNING, never OK; in fleet it hides no other report
python3 - "$D/last.json" "$TMP/future.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["run"]["start"] = "9999-01-01T00:00:00Z"
json.dump(r, open(sys.argv[2], "w"))
PY
expect_exit 1 future "$SDCSCAN" status "$TMP/future.json"
expect_grep future out "^WARNING: clock skew: the last run on .* is dated .* in the future"
mkdir -p "$TMP/fleet/h1"
cp "$TMP/crit.json" "$TMP/fleet/h1/crit.json"
python3 - "$TMP/future.json" "$TMP/crit.json" "$TMP/fleet/h1/future.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c = json.load(open(sys.argv[2]))
r["run"]["sequence"] = c["run"].get("sequence", 2) - 1  # an older run whose clock is wrong
json.dump(r, open(sys.argv[3], "w"))
PY
expect_exit 2 fleet "$SDCSCAN" fleet "$TMP/fleet"
expect_grep fleet out "^CRITICAL: .*: CRITICAL: gpu0 gemm "
expect_grep fleet out "^clock-skew: .*: a report dated .* s in the future"
# A report whose verdict is less than its findings: refused
python3 - "$TMP/crit.json" "$TMP/edited.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["verdict"] = {"status": "OK", "code": 0, "summary": "OK"}
json.dump(r, open(sys.argv[2], "w"))
PY
expect_exit 3 edited "$SDCSCAN" status "$TMP/edited.json"
expect_grep edited err "its verdict (OK) disagrees with its findings"

# An --inject whose iteration never comes in the run's time: UNKNOWN, the spec named (not OK:
# what it asked was not tested)
expect_exit 3 never "$SDCSCAN" run --variant gemm/int8 --set gemm.m=48 --set gemm.n=40 --set gemm.k=64 --cpus 0 \
	--duration 1 --no-state --json "$TMP/never.json" --inject "gemm:C:iter=100000000"
[ "$(json_get "$TMP/never.json" "[(f['kind'], f['class']) for f in r['findings']]")" = "[('not-injected', 'error')]" ] ||
	fail "never: $(tail -2 "$TMP/never.out")"
expect_grep never out "^UNKNOWN: .*--inject 'gemm:C:iter=100000000' was never injected"
finish
