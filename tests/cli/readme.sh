#!/bin/sh
# The commands in README's "Using it" work as written: each parses (no usage error: an unknown
# option, an option that needs a value, a missing argument), run for at most 1.5 s in a scratch
# directory and stopped there as an SRE's Ctrl-C would. Lines that need mpirun or name a FILE to
# give are left to the mpi suite and the golden tests.
# usage: readme.sh SDCSCAN README
. "$(dirname "$0")/lib.sh"
README=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
SDC=$(cd "$(dirname "$SDCSCAN")" && pwd)/$(basename "$SDCSCAN")
mkdir -p "$TMP/work/reports"
cd "$TMP/work" || exit 1
# (what the commands keep goes to the scratch directory too, not to this host's /var/lib/sdcscan:
# a calibration left there by an interrupted `sdcscan calibrate` would change later runs)
export SDCSCAN_STATE_DIR="$TMP/work/state" SDCSCAN_CALIBRATION="$TMP/work/calibration.json"
n=0
sed -n '/^## Using it/,/^## /p' "$README" | sed -n '/^```sh$/,/^```$/p' | grep '^sdcscan ' | sed 's/ *#.*//' >"$TMP/lines"
while IFS= read -r line; do
	case "$line" in *FILE*) continue ;; esac
	n=$((n + 1))
	# shellcheck disable=SC2086
	eval "set -- ${line#sdcscan }"
	timeout -s INT 1.5 "$SDC" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
	rc=$?
	[ "$rc" -le 3 ] || [ "$rc" = 124 ] || fail "README: '$line': exit $rc: $(tail -1 "$TMP/err")"
	# (a GPU or CPU this machine lacks is the machine's answer, not a misprint in the README)
	if grep -q "see 'sdcscan.*--help'\|unknown option\|needs a value\|unknown command" "$TMP/err" &&
		! grep -q "no GPU can be tested\|not in this process's CPU set" "$TMP/err"; then
		fail "README: '$line': $(grep -m1 "see 'sdcscan\|unknown\|needs a value" "$TMP/err") (exit $rc)"
	fi
done <"$TMP/lines"
[ "$n" -ge 20 ] || fail "README: only $n commands found in its 'Using it' block"
finish
