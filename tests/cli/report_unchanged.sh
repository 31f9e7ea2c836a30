#!/bin/sh
# The house was rebuilt (issue 38: src/'s files moved into folders, shared parts pushed down, no
# behaviour meant to change): a report of the same command and seed is the same as the one the
# tree before the move made (tests/cli/report_before_move.json, written by commit 6b28c60's
# sdcscan with this command), times and the host aside (report_unchanged.py says what is set
# aside). Exact dtypes only, so every CPU's kernels give these digests; two planted faults give
# findings to compare.
. "$(dirname "$0")/lib.sh"

# The reference names cpu0 (its results, findings and injections): a host whose cgroup or affinity
# leaves CPU 0 out cannot make the same report, and says so.
if ! python3 -c 'import os, sys; sys.exit(0 not in os.sched_getaffinity(0))'; then
	echo "SKIP: CPU 0 is not among this process's CPUs (cgroup or affinity); the reference report is cpu0's"
	exit 77
fi

"$SDCSCAN" run --seed 7 --cpus 0 --probe gemm --probe embbag --probe minitrain --probe ecparity \
	--set gemm.dtypes=int8,fp32 --set gemm.iterations=20 --set embbag.iterations=20 \
	--set minitrain.iterations=20 --set ecparity.iterations=20 \
	--inject gemm/int8:C:device=0,iter=1,bit=12 --inject embbag:T:device=0,iter=2,bit=3 -q \
	--state-dir "$TMP/state" --json "$TMP/after.json" >/dev/null 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "the run exited $rc, expected 2 (its planted faults are CRITICAL)"
python3 "$(dirname "$0")/report_unchanged.py" "$(dirname "$0")/report_before_move.json" "$TMP/after.json" \
	|| fail "the report differs from the one made before the move"
finish
