#!/bin/sh
# A CRITICAL is never lost, hidden or faked OK (issue 37's rows, as an SRE met them). The
# CRITICAL is real and made by a library sdcscan did not write: tests/shim/sgemm_flip.c,
# LD_PRELOADed, flips bit 28 of one element of every 20th cblas_sgemm result (the fp32 variant's
# BLAS). Each block reproduces one row as written; its comment says the row.
# usage: critical_kept.sh SDCSCAN SGEMM_FLIP_SO
. "$(dirname "$0")/lib.sh"
SHIM=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
unset SDCSCAN_GPU_MODULE SDCSCAN_NVML_LIBRARY
P=$TMP/sched.yaml
printf 'clear_after_clean_runs: 2\nprobes:\n  gemm:\n    dtypes: [int8, fp32]\n    m: 48\n    n: 40\n    k: 64\n    duration: 0.4\n' >"$P"
sed 's/duration: 0.4/duration: 30/' "$P" >"$TMP/long.yaml"
crit() { # crit DIR [ARGS]: a full scheduled run of $P under the shim: a real CRITICAL
	d=$1
	shift
	LD_PRELOAD=$SHIM "$SDCSCAN" run --profile "$P" --state-dir "$d" "$@"
}
killed_run() { # killed_run DIR: a run SIGKILLed while it burns (it dies without a verdict)
	"$SDCSCAN" run --profile "$TMP/long.yaml" --state-dir "$1" >/dev/null 2>&1 &
	pid=$!
	sleep 1.5
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
}
node_verdict() { json_get "$1/state.json" "r['verdict']"; }

# The shim makes a real CRITICAL at all (else nothing below means anything).
expect_exit 2 shim crit "$TMP/s0"
expect_grep shim out "^CRITICAL: cpu[0-9] gemm fp32"

# Row 1: the state folder nearly full (a 200 KB tmpfs, 12 KB free), a CRITICAL run, space freed, a
# clean scheduled run: the CRITICAL is kept, and the failed write is said in the run's output and exit.
D=$TMP/full
mkdir -p "$D"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=200k sdcscan-test "$D" 2>/dev/null; then
	expect_exit 0 full_ok "$SDCSCAN" run --profile "$P" --state-dir "$D"
	free=$(df -k "$D" | awk 'NR == 2 { print $4 }')
	dd if=/dev/zero of="$D/filler" bs=1k count=$((free - 12)) 2>/dev/null
	expect_exit 2 full_crit crit "$D"
	expect_grep full_crit err "No space left on device"
	expect_grep full_crit out "^CRITICAL: the report or its state.* not all written .*the node's state was saved: CRITICAL"
	rm -f "$D/filler"
	expect_exit 0 full_clean "$SDCSCAN" run --profile "$P" --state-dir "$D"
	expect_grep full_clean out "^node: stays CRITICAL since "
	expect_exit 2 full_status "$SDCSCAN" status --state-dir "$D"
	expect_grep full_status out "^CRITICAL: since .*cpu[0-9] gemm fp32"
	umount "$D"
else
	echo "row 1 (full disk) not run: mounting a tmpfs needs root here" >&2
fi

# Row 2: clear_after_clean_runs 2, then two runs with --duration, --cpus and --set: not full
# scheduled runs, so they neither clear the CRITICAL nor make the node fresh.
D=$TMP/partial
expect_exit 2 p_crit crit "$D"
fresh=$(json_get "$D/state.json" "r['last_scheduled_end']")
for i in 1 2; do
	expect_exit 0 "p_part$i" "$SDCSCAN" run --profile "$P" --state-dir "$D" --duration 0.1 --cpus 0 \
		--set gemm.dtypes=int8 --set gemm.m=4
done
[ "$(node_verdict "$D")" = CRITICAL ] || fail "row 2: two partial runs cleared the CRITICAL: $(node_verdict "$D")"
[ "$(json_get "$D/state.json" "r['last_run']['kind']")" = partial ] || fail "row 2: --set/--duration/--cpus run not partial"
[ "$(json_get "$D/state.json" "r['last_scheduled_end']")" = "$fresh" ] || fail "row 2: partial runs made the node fresh"
expect_exit 2 p_status "$SDCSCAN" status --state-dir "$D"
# ... nor do two full scheduled runs of a profile that never tests where it was found (fp32)
sed 's/dtypes: \[int8, fp32\]/dtypes: [int8]/' "$P" >"$TMP/int8only.yaml"
for i in 1 2; do
	expect_exit 0 "p_other$i" "$SDCSCAN" run --profile "$TMP/int8only.yaml" --state-dir "$D"
done
[ "$(node_verdict "$D")" = CRITICAL ] || fail "row 2: clean runs that never tested gemm/fp32 cleared its CRITICAL"
# ... and two full ones that are clean clear it, as the profile says
expect_exit 0 p_full1 "$SDCSCAN" run --profile "$P" --state-dir "$D"
[ "$(node_verdict "$D")" = CRITICAL ] || fail "row 2: one clean run of two cleared it"
expect_exit 0 p_full2 "$SDCSCAN" run --profile "$P" --state-dir "$D"
[ "$(node_verdict "$D")" = OK ] || fail "row 2: two clean full scheduled runs did not clear it"

# ... and a CRITICAL of the host as a whole (a DIMM's uncorrected count grew during the run: no
# one device's) is tested by any full run: two clean ones clear it too. The counters are a fake
# host's (SDCSCAN_HOST_ROOT, as tests/cli/hwerr.sh makes them); the count grows after the run's
# first result line, while fp32 still burns.
D=$TMP/hostcrit
MC=$TMP/host/sys/devices/system/edac/mc/mc0
mkdir -p "$MC/dimm0"
printf 'Skylake Socket#0 IMC#0\n' >"$MC/mc_name"
printf '0\n' >"$MC/ce_count"
printf '0\n' >"$MC/ue_count"
printf 'CPU_SrcID#0_MC#0_Chan#0_DIMM#0\n' >"$MC/dimm0/dimm_label"
printf '0\n' >"$MC/dimm0/dimm_ce_count"
printf '0\n' >"$MC/dimm0/dimm_ue_count"
sed 's/duration: 0.4/duration: 1/' "$P" >"$TMP/host.yaml"
during h_crit sh -c "echo 1 >'$MC/dimm0/dimm_ue_count'; echo 1 >'$MC/ue_count'"
SDCSCAN_HOST_ROOT=$TMP/host expect_exit 2 h_crit "$SDCSCAN" run --profile "$TMP/host.yaml" --state-dir "$D"
wait
expect_grep h_crit out "^CRITICAL: host health edac: 1 new uncorrected memory error"
for i in 1 2; do
	SDCSCAN_HOST_ROOT=$TMP/host expect_exit 0 "h_clean$i" "$SDCSCAN" run --profile "$TMP/host.yaml" --state-dir "$D"
done
[ "$(node_verdict "$D")" = OK ] || fail "row 2: two clean full runs did not clear the host's CRITICAL: $(node_verdict "$D")"

# Row 3: a run that tested nothing (allreduce without mpirun) is UNKNOWN saying why, never OK.
D=$TMP/nothing
expect_exit 3 nothing "$SDCSCAN" run --probe allreduce --state-dir "$D" --junit "$TMP/nothing.xml" --prom "$TMP/nothing.prom"
expect_grep nothing out "^UNKNOWN: .*nothing was tested.*allreduce: .*MPI"
[ "$(node_verdict "$D")" != OK ] || fail "row 3: a run that tested nothing left the state OK"
[ ! -s "$D/last-success" ] || fail "row 3: a run that tested nothing updated last-success"
grep -q 'status="error"' "$TMP/nothing.prom" || fail "row 3: metrics do not say the probe could not test"
grep -q '<error message="nothing was tested' "$TMP/nothing.xml" || fail "row 3: JUnit does not say nothing was tested"
printf 'probes:\n  allreduce: {}\n' >"$TMP/only_allreduce.yaml"
expect_exit 3 nothing_profile "$SDCSCAN" run --profile "$TMP/only_allreduce.yaml" --state-dir "$D"

# Rows 6 and 7: a CRITICAL node, then a run SIGKILLed: the metrics say the last run could not test
# (3, status="error") and the node CRITICAL (2); status names the CRITICAL and says the run died.
D=$TMP/killed
expect_exit 2 k_crit crit "$D"
killed_run "$D"
expect_exit 2 k_status "$SDCSCAN" status --state-dir "$D" --prom "$TMP/killed.prom"
expect_grep k_status out "^CRITICAL: cpu[0-9] gemm fp32: .*; the last run, started .* died without a verdict"
grep -q "^sdcscan_last_run_verdict 3$" "$TMP/killed.prom" || fail "row 6: the died run's own verdict is not 3"
grep -q "^sdcscan_verdict 2$" "$TMP/killed.prom" || fail "row 6: the node's verdict is not 2"
grep -q 'sdcscan_probe_failed{probe="gemm",device="cpu0",status="error"' "$TMP/killed.prom" ||
	fail "row 6: probes not status=error: $(grep probe_failed "$TMP/killed.prom")"
expect_exit 1 k_npd "$SDCSCAN" status --state-dir "$D" --exit-codes npd
expect_grep k_npd out "^SDC: CRITICAL cpu[0-9] gemm fp32.*; last run died$"

# Row 8: state.json truncated on a CRITICAL node, then a clean run: rebuilt from history, the
# CRITICAL kept, said; never a silent restart at sequence 1. Unrebuildable: refused before burning.
D=$TMP/trunc
expect_exit 2 t_crit crit "$D"
truncate -s 20 "$D/state.json"
expect_exit 0 t_clean "$SDCSCAN" run --profile "$P" --state-dir "$D"
expect_grep t_clean err "rebuilt from history/000001-scheduled-CRITICAL.json"
[ "$(node_verdict "$D")" = CRITICAL ] || fail "row 8: a truncated state.json lost the CRITICAL"
[ "$(ls "$D/history" | tr '\n' ' ')" = "000001-scheduled-CRITICAL.json 000002-scheduled-OK.json " ] ||
	fail "row 8: history $(ls "$D/history" | tr '\n' ' ')"
rm "$D/state.json"
expect_exit 2 t_lost "$SDCSCAN" status --state-dir "$D"
mkdir -p "$TMP/garbage"
printf 'root:x:0:0:\033]0;pwned\007\n' >"$TMP/garbage/state.json"
expect_exit 3 t_garbage "$SDCSCAN" run --profile "$P" --state-dir "$TMP/garbage"
expect_grep t_garbage err "not sdcscan's node state.*no run to rebuild it from"
grep -q "root\|pwned" "$TMP/t_garbage.err" && fail "row 8: the state file's bytes were echoed"
[ -e "$TMP/garbage/history" ] && fail "row 8: an unrebuildable state was not refused before the run"
# (nor does status quote a report's bytes where it is not JSON: row 12's rule)
expect_exit 3 t_status_garbage "$SDCSCAN" status "$TMP/garbage/state.json"
expect_grep t_status_garbage err "not JSON: .*(line 1, column [0-9]*)"
grep -q "root\|pwned" "$TMP/t_status_garbage.err" "$TMP/t_status_garbage.out" && fail "status: a report's bytes were echoed"

# (a spoiled last.json never hides the node's CRITICAL: status reads the node's state)
printf 'garbage' >"$TMP/stays_garbage"
D=$TMP/spoiled
expect_exit 2 sp_crit crit "$D"
cp "$TMP/stays_garbage" "$D/last.json"
expect_exit 2 sp_status "$SDCSCAN" status --state-dir "$D"
expect_grep sp_status out "^CRITICAL: since .*: CRITICAL: cpu[0-9] gemm fp32.*; the last report is unreadable"

# Row 9: a clean run on a CRITICAL node says the node stays CRITICAL and since when; status FILE
# honours the report's node section.
D=$TMP/stays
expect_exit 2 s_crit crit "$D"
expect_exit 0 s_clean "$SDCSCAN" run --profile "$P" --state-dir "$D"
expect_grep s_clean out "^node: stays CRITICAL since 20.*Z (run 1: CRITICAL: cpu[0-9] gemm fp32"
expect_exit 2 s_file "$SDCSCAN" status "$D/last.json"
expect_grep s_file out "^CRITICAL: the node stays CRITICAL since "

# Row 10: the clock 400 days ahead on a CRITICAL node: one line with separators, CRITICAL kept in
# the npd line, and the skew raises the degraded question (SDCScanDegraded) beside corruption.
D=$TMP/ahead
if command -v faketime >/dev/null 2>&1; then
	expect_exit 2 a_crit crit "$D"
	faketime -f '+400d' "$SDCSCAN" run --profile "$P" --state-dir "$D" >/dev/null 2>&1
	expect_exit 2 a_status "$SDCSCAN" status --state-dir "$D"
	expect_grep a_status out "^CRITICAL: clock skew: the last run on .* is dated 400 days in the future; since .*: CRITICAL: cpu[0-9] gemm fp32: .* clean on [0-9]* CPUs; last run "
	expect_exit 1 a_npd "$SDCSCAN" status --state-dir "$D" --exit-codes npd
	expect_grep a_npd out "^SDC: CRITICAL cpu[0-9] gemm fp32: .*; clock skew$"
	for q in "corruption 1" "degraded 1" "untested 0"; do
		set -- $q
		expect_exit "$2" "a_is_$1" "$SDCSCAN" status --state-dir "$D" --exit-codes npd --is "$1"
	done
	# a run that dies after the skewed one is still said to have died (its start is not compared
	# with a report dated ahead)
	killed_run "$D"
	expect_exit 2 a_died "$SDCSCAN" status --state-dir "$D"
	expect_grep a_died out "^CRITICAL: cpu[0-9] gemm fp32: .*; the last run, started .* died without a verdict"
else
	fail "row 10: faketime is not installed (the README's test command installs it)"
fi

# Row 11: a replay with --gpus none never makes the node fresh: last-success and the metrics'
# freshness come from full scheduled runs alone.
D=$TMP/fresh
expect_exit 0 f_full "$SDCSCAN" run --profile "$P" --state-dir "$D"
before=$(cat "$D/last-success")
sleep 1.1
expect_exit 0 f_replay "$SDCSCAN" run --profile "$P" --state-dir "$D" --variant gemm/int8 --gpus none --prom "$TMP/fresh.prom"
[ "$(cat "$D/last-success")" = "$before" ] || fail "row 11: a replay updated last-success"
grep -q "^sdcscan_last_success_timestamp_seconds $before" "$TMP/fresh.prom" ||
	fail "row 11: the replay's metrics moved last success: $(grep last_success "$TMP/fresh.prom")"
full=$(json_get "$D/state.json" "'%.3f' % r['last_scheduled_end']")
grep -q "^sdcscan_last_full_run_timestamp_seconds $full" "$TMP/fresh.prom" ||
	fail "row 11: freshness metric is not the full run's ($full): $(grep last_full "$TMP/fresh.prom")"

# Row 16: --if-idle on a busy node (Slurm says MIXED: a stand-in scontrol): JUnit says skipped
# because the node is busy, and why; not "not run on this device".
mkdir -p "$TMP/bin"
printf '#!/bin/sh\necho "NodeName=$(hostname -s) Arch=x86_64 CoresPerSocket=1 State=MIXED ThreadsPerCore=1"\n' >"$TMP/bin/scontrol"
chmod +x "$TMP/bin/scontrol"
PATH="$TMP/bin:$PATH" expect_exit 3 busy "$SDCSCAN" run --profile "$P" --state-dir "$TMP/busy" --if-idle --junit "$TMP/busy.xml"
grep -q '<skipped message="skipped: node busy: Slurm: node .* is MIXED' "$TMP/busy.xml" ||
	fail "row 16: JUnit: $(grep -o '<skipped[^>]*>' "$TMP/busy.xml" | head -1)"
finish
