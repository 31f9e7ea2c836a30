#!/bin/sh
# Output files: only regular files are written (or - for stdout); a symlink as the file is
# refused, a folder's link of root's followed (safe_outputs.sh has the rest); a report that cannot
# be written is refused before the burn; output that does not reach its file makes a clean run
# UNKNOWN.
. "$(dirname "$0")/lib.sh"
RUN="run $SMALL --set gemm.dtypes=int8 --cpus 0 --gpus none"

for dev in /dev/null /dev/full; do
	name=$(basename "$dev")
	expect_exit 3 "$name" "$SDCSCAN" $RUN --set gemm.iterations=2 --json "$dev"
	expect_grep "$name" err "$dev is not a regular file (a character device)"
	[ -c "$dev" ] || fail "$dev is no longer a character device"
done
mkdir "$TMP/dir"
expect_exit 3 dir "$SDCSCAN" $RUN --set gemm.iterations=2 --json "$TMP/dir"
expect_grep dir err "is not a regular file (a directory)"

# Found before the burn: a 30 s run refused at once.
start=$(date +%s)
expect_exit 3 nodir "$SDCSCAN" $RUN --duration 30 --json "$TMP/missing/report.json"
expect_grep nodir err "cannot write in $TMP/missing"
[ $(($(date +%s) - start)) -lt 10 ] || fail "nodir: the unwritable report was found only after the burn"
[ ! -e "$TMP/missing" ] || fail "nodir: a directory was created"

# A symlink as the file is refused, the link and its target left as they were; a folder's link
# (root's, or this user's, in a folder no one else can write) is followed.
ln -s "$TMP/target.json" "$TMP/link.json"
expect_exit 3 link "$SDCSCAN" $RUN --set gemm.iterations=2 --json "$TMP/link.json"
expect_grep link err "refusing $TMP/link.json: a symbolic link"
[ -L "$TMP/link.json" ] && [ ! -e "$TMP/target.json" ] || fail "link: the symlink was replaced or its target written"
mkdir "$TMP/elsewhere"
ln -s ../elsewhere "$TMP/dir/rel"
expect_exit 0 rellink "$SDCSCAN" $RUN --set gemm.iterations=2 --json "$TMP/dir/rel/r.json"
[ -f "$TMP/elsewhere/r.json" ] && [ -L "$TMP/dir/rel" ] || fail "rellink: a folder's relative link was not followed"

# The human output to a full disk: an error, not exit 0.
"$SDCSCAN" $RUN --set gemm.iterations=2 >/dev/full 2>"$TMP/full.err"
rc=$?
[ $rc = 3 ] || fail "human output to /dev/full: exit $rc, expected 3"
grep -q "writing the output failed" "$TMP/full.err" || fail "human output to /dev/full: not said"

# The other files sdcscan writes follow the same rule.
expect_exit 3 golden_null "$SDCSCAN" golden record --probe gemm --set gemm.dtypes=int8 --output /dev/null
expect_grep golden_null err "not a regular file"
expect_exit 3 cal_full "$SDCSCAN" calibrate --trials 100 --sizes 16 --output /dev/full
expect_grep cal_full err "not a regular file"
# --json -: stdout holds the JSON alone, for every command that takes it (what each prints for
# people goes to stderr)
mkdir -p "$TMP/fl"
"$SDCSCAN" run $SMALL --set gemm.dtypes=int8 --cpus 0 --duration 1 --no-state --json "$TMP/fl/a.json" >/dev/null 2>&1
for cmd in "run $SMALL --set gemm.dtypes=int8 --cpus 0 --duration 1 --no-state" "fleet $TMP/fl" "campaign gemm --trials 20" \
	"selftest --cpus 0" "bench ecparity --rows 4096 --updates 4096 --seconds 0.2 --steps 4 --batch 64"; do
	"$SDCSCAN" $cmd --json - >"$TMP/js.out" 2>"$TMP/js.err"
	python3 -c "import json, sys; json.load(open(sys.argv[1]))" "$TMP/js.out" 2>/dev/null ||
		fail "--json - of '$cmd': stdout is not JSON alone: $(head -c 160 "$TMP/js.out")"
done
finish
