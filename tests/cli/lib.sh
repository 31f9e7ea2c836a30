# Shared helpers for the CLI tests. Each test gets the sdcscan binary as $1.
set -u
SDCSCAN=${1:?usage: $0 PATH_TO_SDCSCAN}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sdcscan-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
# Each test keeps its runs' state (last.json, the lock) to itself, never in /var/lib/sdcscan.
export SDCSCAN_STATE_DIR="$TMP/state"
# Some tests preload a library (tests/shim, faketime's libfaketime) ahead of a sanitized build's
# ASan runtime, which would refuse to start; neither replaces malloc, so ASan's check of the
# load order is all that is in the way (a no-op in a build without ASan).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
FAILED=0
# Small, fast options for real runs.
SMALL="--probe gemm --set gemm.m=48 --set gemm.n=40 --set gemm.k=64 --set gemm.refresh=2"

fail() {
	echo "FAIL: $*" >&2
	FAILED=1
}

# expect_exit CODE NAME COMMAND...: runs COMMAND, stdout/stderr to $TMP/NAME.{out,err}.
expect_exit() {
	want=$1 name=$2
	shift 2
	"$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
	got=$?
	if [ "$got" != "$want" ]; then
		fail "$name: exit $got, expected $want: $*"
		sed 's/^/    stderr: /' "$TMP/$name.err" >&2
	fi
}

# expect_grep NAME FILE-SUFFIX PATTERN: the output file contains the pattern.
expect_grep() {
	if ! grep -q -- "$3" "$TMP/$1.$2"; then
		fail "$1: '$3' not in $2"
		sed "s/^/    $2: /" "$TMP/$1.$2" >&2
	fi
}

json_get() { # json_get FILE PYTHON-EXPRESSION-ON-r
	python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"
}

# during NAME COMMAND...: once NAME's output has its first result line (the run under way, its
# counters read), runs COMMAND in the background (the caller waits for it)
during() {
	name=$1
	shift
	(
		i=0
		while ! grep -q '^gemm/' "$TMP/$name.out" 2>/dev/null && [ $i -lt 400 ]; do
			sleep 0.05
			i=$((i + 1))
		done
		"$@"
	) &
}

finish() {
	if [ "$FAILED" = 0 ]; then
		echo "PASS"
		exit 0
	fi
	exit 1
}

# Every injection must be matched by a finding at its element whose XOR mask holds the bit (and,
# with "same-step", at the injection's iteration: not true of a flip at rest a sweep finds later).
located() { # located REPORT [same-step]: prints "ok" or what was not found
	python3 - "$1" "${2:-}" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
same = sys.argv[2] == "same-step"
missing = []
for i in r["injections"]:
    hit = [f for f in r["findings"] if f.get("target") == i["target"] and f.get("row") == i["row"]
           and f.get("col") == i["col"] and (not same or f.get("iteration") == i["iteration"]) and int(f.get("xor_mask", "0x0"), 16) >> i["bit"] & 1]
    if not hit:
        missing.append("%s[%d][%d] bit %d" % (i["target"], i["row"], i["col"], i["bit"]))
print("ok" if r["injections"] and not missing else "not located: " + (", ".join(missing) or "no injection"))
PY
}
