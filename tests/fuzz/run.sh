#!/bin/sh
# One libFuzzer harness for a bounded time: the corpus in the repo is read, never written (new
# inputs go to a scratch directory); a crash, leak, UBSan report or timeout fails the test and
# leaves its input in ARTIFACTS, printed here in base64 to reproduce from a CI log:
#   base64 -d > crash && ./build-fuzz/tests/fuzz_NAME crash
# (libFuzzer exits 77 on a crash by default, which meson would read as skipped: exit 1 here.)
# Usage: run.sh HARNESS CORPUS_DIR SECONDS ARTIFACTS_DIR
set -u
exe=$1 corpus=$2 seconds=$3 artifacts=$4
name=$(basename "$exe")
scratch=$(mktemp -d) || exit 1
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$artifacts" || exit 1
[ -d "$corpus" ] && [ -n "$(ls "$corpus")" ] || { echo "$name: no corpus in $corpus" >&2; exit 1; }
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
"$exe" -max_total_time="$seconds" -timeout=10 -error_exitcode=1 -timeout_exitcode=1 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
	-artifact_prefix="$artifacts/$name-" "$scratch" "$corpus" 2>"$scratch.log"
rc=$?
[ $rc -eq 77 ] && rc=1 # never "skipped"
grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb|Done [0-9]+ runs)" "$scratch.log"
if [ $rc -ne 0 ]; then
	tail -60 "$scratch.log" >&2
	for a in "$artifacts/$name-"*; do
		[ -f "$a" ] && { echo "$name: input $a (base64):" >&2; base64 "$a" >&2; }
	done
fi
rm -f "$scratch.log"
exit $rc
