#!/bin/sh
# sdcscan run --if-idle never burns a busy node (runner/idle.h): Slurm's view (a stand-in scontrol on PATH
# says MIXED), another job's processes on a GPU (the fake NVML counts 2), CPUs busy with other work
# (a spinning process on cpu0): each run is skipped, said why, kept as skipped in history
# (UNKNOWN), and leaves the node's state as it was; an idle node burns.
# usage: idle.sh SDCSCAN FAKE_GPU_MODULE FAKE_NVML
. "$(dirname "$0")/lib.sh"
FAKE_GPU=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
FAKE_NVML=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
D=$TMP/st
G="run --probe gemm --set gemm.dtypes=int8 --set gemm.m=48 --set gemm.n=40 --set gemm.k=64 --duration 1 --state-dir $D"
mkdir -p "$TMP/bin"
stand_in() { # stand_in STATE: an scontrol that says this node is in STATE
	printf '#!/bin/sh\necho "NodeName=$(hostname -s) Arch=x86_64 CoresPerSocket=1 State=%s ThreadsPerCore=1"\n' "$1" >"$TMP/bin/scontrol"
	chmod +x "$TMP/bin/scontrol"
}
expect_exit 0 first "$SDCSCAN" $G --cpus 1 --gpus none

stand_in MIXED
PATH="$TMP/bin:$PATH" expect_exit 3 slurm "$SDCSCAN" $G --cpus 1 --gpus none --if-idle --json "$TMP/slurm.json"
expect_grep slurm out "^UNKNOWN: host: skipped, the node is busy: Slurm: node .* is MIXED (a job runs on it)"
[ "$(json_get "$TMP/slurm.json" "r['run']['kind'], len(r['results']), r['node']['verdict']")" = "skipped 0 OK" ] ||
	fail "slurm: report $(json_get "$TMP/slurm.json" "r['run'].get('kind'), r.get('node')")"
# (WARNING: stale, as only partial runs, --set, have tested this node)
expect_exit 1 status "$SDCSCAN" status --state-dir "$D"
expect_grep status out "the last run was skipped.*; stale: no full scheduled run has tested this node yet"

stand_in IDLE
PATH="$TMP/bin:$PATH" SDCSCAN_GPU_MODULE=$FAKE_GPU SDCSCAN_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_PROCS=2 \
	expect_exit 3 gpu "$SDCSCAN" $G --cpus 1 --if-idle
expect_grep gpu out "skipped, the node is busy: gpu0 (0000:f0:00.0) runs 2 compute processes of another job"

# another job on cpu0 (a shell spinning there)
taskset -c 0 sh -c 'while :; do :; done' &
spin=$!
sleep 0.3
PATH="$TMP/bin:$PATH" expect_exit 3 cpu "$SDCSCAN" $G --cpus 0 --gpus none --if-idle
kill "$spin"
expect_grep cpu out "skipped, the node is busy: the run's CPUs [0-9]*% busy over 1 s (more than 25%"
[ "$(ls "$D/history" | sed 's/^[0-9]*-//; s/\.json$//' | tr '\n' ' ')" = "partial-OK skipped-UNKNOWN skipped-UNKNOWN skipped-UNKNOWN " ] ||
	fail "history: $(ls "$D/history")"

# idle: it burns (unless this machine's cpu1 is busy with something else now: then it cannot be judged)
if [ "$(awk '/^cpu1 /{print $2+$3+$4+$7+$8, $5}' /proc/stat)" ]; then
	PATH="$TMP/bin:$PATH" "$SDCSCAN" $G --cpus 1 --gpus none --if-idle > "$TMP/idle.out" 2>&1
	rc=$?
	if grep -q "the run's CPUs" "$TMP/idle.out"; then
		echo "note: cpu1 was busy with other work here: the idle case not judged"
	else
		[ "$rc" = 0 ] || fail "idle: exit $rc: $(tail -2 "$TMP/idle.out")"
	fi
fi
finish
