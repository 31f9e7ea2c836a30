# Shared helpers for the CLI tests. Each test gets the sdcscan binary as $1.
set -u
SDCSCAN=${1:?usage: $0 PATH_TO_SDCSCAN}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sdcscan-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
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

finish() {
	if [ "$FAILED" = 0 ]; then
		echo "PASS"
		exit 0
	fi
	exit 1
}
