#!/bin/sh
# Replays reproduce: a report's run.replay runs the same work and finds the same findings, and each
# finding's own replay (its variant, device, seed and iteration) finds that finding again.
. "$(dirname "$0")/lib.sh"

# The fields that make a finding the same finding.
same() { # same REPORT: one line per finding
	python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for f in r["findings"]:
    print(f["probe"], f["variant"], f["device"], f["kind"], f["iteration"], f.get("target"), f["row"], f["col"],
          f.get("xor_mask"))
PY
}

replay_of() { # replay_of REPORT PYTHON-EXPRESSION: the command, sdcscan swapped for the binary under test
	r=$(json_get "$1" "$2")
	case "$r" in
	"sdcscan "*) printf '"$SDCSCAN" %s' "${r#sdcscan }" ;;
	*) fail "replay does not start with sdcscan: $r" ;;
	esac
}

expect_exit 2 orig "$SDCSCAN" run $SMALL --set gemm.dtypes=int8,fp32-fast --set gemm.iterations=8 --cpus 0 --gpus none \
	--inject gemm/int8:C:iter=3,row=5,col=7,bit=12 --inject gemm/fp32-fast:B:iter=5,row=2,col=9,bit=30 \
	--json "$TMP/orig.json" --quiet
same "$TMP/orig.json" >"$TMP/orig.f"
[ "$(wc -l <"$TMP/orig.f")" -ge 2 ] || fail "the injected run found fewer than two findings"

# The run's replay: the same findings.
cmd=$(replay_of "$TMP/orig.json" "r['run']['replay']")
eval "$cmd --json \"\$TMP/again.json\" --quiet" >/dev/null 2>&1
[ $? = 2 ] || fail "run.replay did not end CRITICAL: $cmd"
same "$TMP/again.json" >"$TMP/again.f"
cmp -s "$TMP/orig.f" "$TMP/again.f" || fail "run.replay found other findings: $(diff "$TMP/orig.f" "$TMP/again.f")"

# Each finding's replay: that finding again.
n=$(json_get "$TMP/orig.json" "len(r['findings'])")
i=0
while [ "$i" -lt "$n" ]; do
	cmd=$(replay_of "$TMP/orig.json" "r['findings'][$i]['replay']")
	eval "$cmd --json \"\$TMP/f$i.json\" --quiet" >/dev/null 2>&1
	want=$(sed -n "$((i + 1))p" "$TMP/orig.f")
	same "$TMP/f$i.json" | grep -qxF "$want" || fail "finding $i's replay did not find it again: $cmd"
	i=$((i + 1))
done

# The replay leaves out where output went, and names the seed the run used.
case "$(json_get "$TMP/orig.json" "r['run']['replay']")" in
*--json* | *--quiet*) fail "run.replay keeps output options" ;;
*"--seed 1") ;;
*) fail "run.replay does not end with the run's seed" ;;
esac
# A profile seeded by the date replays with the seed it had.
expect_exit 0 daily "$SDCSCAN" run --profile cron $SMALL --set gemm.dtypes=int8 --set gemm.iterations=2 \
	--cpus 0 --gpus none --json "$TMP/daily.json" --quiet
seed=$(json_get "$TMP/daily.json" "r['run']['seed']")
case "$(json_get "$TMP/daily.json" "r['run']['replay']")" in
*"--profile cron"*"--seed $seed") ;;
*) fail "a daily-seeded run's replay does not carry its seed $seed" ;;
esac

# selftest replays as selftest (there is no profile called selftest).
expect_exit 0 st "$SDCSCAN" selftest --cpus 0 --gpus none --json "$TMP/st.json"
[ "$(json_get "$TMP/st.json" "r['run']['replay']")" = "sdcscan selftest --cpus 0 --gpus none --seed 1" ] ||
	fail "selftest's replay: $(json_get "$TMP/st.json" "r['run']['replay']")"

# --variant: PROBE/VARIANT, and a variant the options give.
expect_exit 3 badvar "$SDCSCAN" run --variant gemm
expect_grep badvar err "expected PROBE/VARIANT"
expect_exit 3 novar "$SDCSCAN" run --variant gemm/int4 --set gemm.m=48
expect_grep novar err "the probe's options give no such variant (they give: int8, fp32, fp32-fast, fp64-fast"
finish
