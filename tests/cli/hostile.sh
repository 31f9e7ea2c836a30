#!/bin/sh
# Faults that break a worker's whole process (tests/hostile/hostile.c, in the sdcscan-hostile
# executable only): a heap whose free list a flipped bit broke, a thread that dies holding the
# allocator's lock, another that holds it for good while the worker allocates, an exit in the
# middle of the work, a system call that never returns, a process stuck after its results, and
# inject/fatal.h's spin; a record no code writes, a digest out of order. Each on a CPU's worker and on a GPU's lane (the fake module): the device is
# named (crash or hang, its signal), the other device goes on to an OK result, and the run ends
# with its verdict and report within its time plus the man page's bound (hang_timeout + 2 s
# for a worker that stops; the kill's 5 s grace; a little for the start).
# usage: hostile.sh SDCSCAN_HOSTILE FAKE_GPU_MODULE FAKE_NVML
. "$(dirname "$0")/lib.sh"
FAKE_GPU=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
FAKE_NVML=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
unset FAKE_GPU_COUNT FAKE_GPU_BAD_SM FAKE_GPU_FAIL FAKE_NVML_NEW_UNC
HANG=3
DURATION=2
# the bound a run must end within: its time, one hang_timeout, the kill's grace, and start-up
BOUND=$((DURATION + HANG + 5 + 4))

# one NAME KIND DEVICE TARGET CLASS SIGNAL: a run with TARGET on DEVICE; the finding of CLASS
# (and SIGNAL) at DEVICE, the other device OK, within the bound.
one() {
	name=$1 kind=$2 dev=$3 target=$4 class=$5 sig=$6
	if [ "$kind" = cpu ]; then
		args="--probe gemm --set gemm.dtypes=int8 --set gemm.m=64 --set gemm.n=64 --set gemm.k=256 --cpus 0-1 --gpus none"
		other=cpu0
	else
		args="--probe gemm --set gemm.dtypes=int8 --set gemm.m=48 --set gemm.n=40 --set gemm.k=64 --set gemm.gpu_dtypes=int8 \
--set gemm.gpu_m=48 --set gemm.gpu_n=40 --set gemm.gpu_k=64 --set gemm.gpu_duration=$DURATION --cpus 0"
		other=cpu0
	fi
	start=$(date +%s)
	# shellcheck disable=SC2086
	HOSTILE_MARK=$name SDCSCAN_GPU_MODULE="$FAKE_GPU" SDCSCAN_NVML_LIBRARY="$FAKE_NVML" \
		"$SDCSCAN" run --no-state $args --set gemm.duration=$DURATION --set gemm.hang_timeout=$HANG \
		--inject "gemm/int8:$target:device=$dev,iter=3" --json "$TMP/$name.json" >"$TMP/$name.out" 2>"$TMP/$name.err"
	code=$?
	took=$(($(date +%s) - start))
	bound=$BOUND
	# (a GPU's process is given 15 s to exit after its results: its driver tears the context down)
	[ "$name" = gpu-stuck ] && bound=$((DURATION + 15 + 5 + 4))
	if [ "$took" -gt "$bound" ]; then
		fail "$name: the run took $took s, past its bound of $bound s"
	fi
	want=2
	[ "$class" = hang ] && want=3
	grep -q "left behind" "$TMP/$name.err" && fail "$name: a worker's process was left behind: $(grep 'left behind' "$TMP/$name.err")"
	left_behind "$name"
	if [ "$code" != "$want" ]; then
		fail "$name: exit $code, expected $want"
		sed 's/^/    stderr: /' "$TMP/$name.err" >&2
	fi
	got=$(python3 - "$TMP/$name.json" "$dev" "$class" "$sig" "$other" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
dev, cls, sig, other = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
bad = []
hit = [f for f in r["findings"] if f["device"] == dev and f["class"] == cls and (sig == "-" or f.get("signal") == sig)]
if not hit:
    bad.append("no %s finding at %s (signal %s): %r" % (cls, dev, sig, [(f["device"], f["class"], f["kind"], f.get("signal"), f["detail"][:90]) for f in r["findings"]]))
ok = [x for x in r["results"] if x["device"] == other and x["variant"] == "int8"]
if not ok or ok[0]["status"] != "ok":
    bad.append("%s did not go on to an OK result: %r" % (other, ok))
want = {"crash": "crashed", "hang": "hung", "corruption": "corrupt"}[cls]
mine = [x for x in r["results"] if x["device"] == dev and x["variant"].endswith("int8")]
if not mine or mine[0]["status"] != want:
    bad.append("%s's result is %r, not %s" % (dev, mine[0]["status"] if mine else None, want))
print(" ".join(bad) or "ok")
PY
)
	[ "$got" = ok ] || fail "$name: $got"
}

# left_behind NAME: no process of the run NAME is still there (they all carry its mark)
left_behind() {
	for e in /proc/[0-9]*/environ; do
		if grep -qz "^HOSTILE_MARK=$1$" "$e" 2>/dev/null; then
			fail "$1: a process of the run is still there after it ended: $(tr '\0' ' ' < "${e%environ}cmdline")"
			return
		fi
	done
}

# A variant's setup that dies of a fault (a crash at the host, CRITICAL) or never ends (named hung
# at the host after max(30 s, 4 x hang_timeout), killed; UNKNOWN): the run ends with its report.
for how in crash hang; do
	start=$(date +%s)
	HOSTILE_MARK=setup-$how SDCSCAN_HOSTILE_SETUP=$how "$SDCSCAN" run --no-state --probe gemm --set gemm.dtypes=int8 \
		--set gemm.m=64 --set gemm.n=64 --set gemm.k=256 --cpus 0-1 --gpus none --set gemm.duration=2 \
		--set gemm.hang_timeout=$HANG --json "$TMP/setup-$how.json" >"$TMP/setup-$how.out" 2>"$TMP/setup-$how.err"
	code=$?
	took=$(($(date +%s) - start))
	want=2 class=crash
	[ "$how" = hang ] && want=3 class=hang
	[ "$code" = "$want" ] || fail "setup-$how: exit $code, expected $want: $(tail -2 "$TMP/setup-$how.out")"
	[ "$took" -le 40 ] || fail "setup-$how: the run took $took s, past 30 s and the kill's grace"
	[ "$(json_get "$TMP/setup-$how.json" "[(f['device'], f['class']) for f in r['findings']], sorted(set(x['status'] for x in r['results']))")" = \
		"[('host', '$class')] ['error']" ] || fail "setup-$how: $(json_get "$TMP/setup-$how.json" "r['findings'], [x['error'] for x in r['results']]")"
	left_behind "setup-$how"
done

for kind in cpu gpu; do
	dev=cpu1
	[ "$kind" = gpu ] && dev=gpu0
	one "$kind-heap" "$kind" "$dev" HEAP crash SIGABRT
	one "$kind-lock" "$kind" "$dev" LOCK crash SIGSEGV
	one "$kind-mlock" "$kind" "$dev" MLOCK hang -
	one "$kind-exit" "$kind" "$dev" EXIT crash -
	one "$kind-block" "$kind" "$dev" BLOCK hang -
	one "$kind-stuck" "$kind" "$dev" STUCK hang -
	one "$kind-spin" "$kind" "$dev" HANG hang -
	one "$kind-garble" "$kind" "$dev" GARBLE corruption -
	one "$kind-digest" "$kind" "$dev" DIGEST corruption -
	one "$kind-jump" "$kind" "$dev" JUMP corruption -
done
expect_grep cpu-exit json "without its results"
expect_grep cpu-stuck json "stuck at its exit"
expect_grep cpu-heap json "aborted itself"
expect_grep cpu-garble json "channel-corrupt"
expect_grep gpu-digest json "a result digest out of order"
expect_grep cpu-jump json "iteration-jump"
expect_grep gpu-jump json "iteration-jump"
finish
