#!/bin/sh
# embbag: a clean run is OK; faults injected into the table (read by a lookup, or found by the
# sweep at rest) and into a bag's output are reported CRITICAL with their row, column and bits;
# bad options are refused with exit 3; the campaign's counts add up; the benchmark runs.
. "$(dirname "$0")/lib.sh"

EB="--probe embbag --set embbag.rows=65536 --set embbag.batches=8"

expect_exit 0 clean "$SDCSCAN" run $EB --duration 4 --json "$TMP/clean.json"
expect_grep clean out "^OK:"
expect_grep clean out "embbag/4bit-fast-d64"
[ "$(json_get "$TMP/clean.json" "sorted({x['variant'] for x in r['results']})")" = \
	"['4bit-d64', '4bit-fast-d64', '8bit-d64', '8bit-fast-d64']" ] || fail "clean: variants"

for v in 8bit 8bit-fast 4bit 4bit-fast; do
	fmt=${v%%-*}
	cls=exact
	[ "$v" = "${v%-fast}" ] || cls=fast
	expect_exit 2 "faults_$v" "$SDCSCAN" run $EB --set embbag.formats=$fmt --set embbag.classes=$cls \
		--duration 3 --json "$TMP/$v.json" \
		--inject "embbag:T:iter=1,col=5,bit=0" --inject "embbag:R:iter=2,row=3,col=7,bit=30"
	expect_grep "faults_$v" out "table-corrupt at T\["
	expect_grep "faults_$v" out "checksum-mismatch at R\[3\]\[7\]"
	[ "$(located "$TMP/$v.json")" = ok ] || fail "faults_$v: $(located "$TMP/$v.json")"
done

# A flip in a row nobody looks up is found by the sweep at rest.
expect_exit 2 sweep "$SDCSCAN" run --probe embbag --set embbag.formats=8bit --set embbag.classes=exact \
	--set embbag.rows=65536 --set embbag.batch=1 --set embbag.pooling=1 --set embbag.batches=1 \
	--set embbag.sweep_rows=8192 --duration 2 --json "$TMP/sweep.json" \
	--inject "embbag:T:iter=1,row=60000,col=64,bit=22"
expect_grep sweep out "T\[60000\]\[64\].*scale changed in memory; found by the sweep"
[ "$(located "$TMP/sweep.json")" = ok ] || fail "sweep: $(located "$TMP/sweep.json")"

bad() { # bad NAME MESSAGE ARGS...
	name=$1 msg=$2
	shift 2
	expect_exit 3 "$name" "$SDCSCAN" "$@"
	expect_grep "$name" err "$msg"
}
bad bad_dims "'48' is not a valid choice (expected a list of one or more of: 32, 64, 128, 256)" \
	run --probe embbag --set embbag.dims=48
bad bad_pooling "embbag.pooling: 0 is out of range (expected an integer from 1 to 400)" \
	run --probe embbag --set embbag.pooling=0
bad bad_kernel "'avx9' is not valid (expected one of: auto, portable, avx2, avx512)" \
	run --probe embbag --set embbag.kernel=avx9
bad bad_target "has no target 'Q' (valid targets: T, R)" run --probe embbag --inject embbag:Q
# A table that cannot fit is refused before anything is allocated, naming the option to change.
expect_exit 3 too_big "$SDCSCAN" run --probe embbag --set embbag.rows=4000000000 --set embbag.dims=256 \
	--set embbag.formats=8bit --set embbag.classes=exact --duration 1
expect_grep too_big out "UNKNOWN.*needs more than half of the .* GiB available: lower embbag.rows"

# Campaign: counts add up, exact-class cells find everything, no false positive anywhere.
expect_exit 0 campaign "$SDCSCAN" campaign embbag --trials 300 --bit-trials 4 --dims 32 --rows 8192 \
	--json "$TMP/c.json"
expect_grep campaign out "Li et al. Table III"
expect_grep campaign out "^OK: every target met"
check=$(python3 - "$TMP/c.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
bad = []
cells = [k for k in r if k != "targets_met"]
if sorted(cells) != ["4bit-d32", "4bit-fast-d32", "8bit-d32", "8bit-fast-d32"]: bad.append("cells")
for name in cells:
    c = r[name]
    for kind in ("clean", "table_high", "table_low", "output_high", "output_low"):
        k = c[kind]
        if k["trials"] != 300 or not 0 <= k["located"] <= k["detected"] <= k["trials"]: bad.append(name + " " + kind)
        if "fast" not in name and kind != "clean" and k["detected"] != k["trials"]: bad.append(name + " exact " + kind)
    if c["clean"]["detected"] or c["clean_bags_flagged"] or c["clean_bags"] != 3000: bad.append(name + " clean")
    if len(c["output_bits"]) != 32 or any(b["trials"] != 4 for b in c["output_bits"]): bad.append(name + " bits")
print(" ".join(bad) or "ok")
PY
)
[ "$check" = ok ] || fail "campaign counts do not add up: $check"

expect_exit 0 bench "$SDCSCAN" bench embbag --rows 65536 --dims 32 --formats 8bit --seconds 0.2
expect_grep bench out "^8bit    32"
# --class exact checks exact-class data with the exact class's sums: no bag of a healthy core fails
# (the fast class's checks on exact sums failed every one); --skip-checks says no bag was checked.
expect_exit 0 bench_exact "$SDCSCAN" bench embbag --rows 4096 --dims 32 --formats 8bit --seconds 0.1 --class exact
expect_grep bench_exact out "exact-class data"
expect_exit 0 bench_skip "$SDCSCAN" bench embbag --rows 4096 --dims 32 --formats 8bit --seconds 0.1 --skip-checks
expect_grep bench_skip out "no bag checked (--skip-checks)"
for b in bench bench_exact bench_skip; do
	! grep -q "failed their checks" "$TMP/$b.out" || fail "$b: bags failed their checks on a healthy core"
done
finish
