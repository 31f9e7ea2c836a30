#!/bin/sh
# summary.txt's claims and verdict as a GPU machine's run would write them (tools/gpu-check-run.sh),
# from stage results made up here: the rehearsal's fake module can only ever show "rehearsed", so
# the GPU's own cases (tested, a missed target, one GPU, a refused sanitizer) are checked here.
#   - every stage passed on a GPU: every claim tested, verdict ok;
#   - one stage not tested here (one GPU: nccl): that claim NOT TESTED, the verdict INCOMPLETE, never ok;
#   - a bench that missed its speed target: its speed claim FAILED, its bits claim still tested;
#   - a stage not run in this call: "not run yet", INCOMPLETE;
#   - the same stages passed on the fake module: "rehearsed", never tested;
#   - compute-sanitizer's outcomes: a finding or a race fails, a wrong exit fails, its own error is
#     a refusal, no summary at all is nothing checked (never a pass).
# usage: claims.sh REPO_ROOT
set -u
root=${1:?usage: claims.sh REPO_ROOT}
. "$root/tools/gpu-check-run.sh"
out=$(mktemp -d "${TMPDIR:-/tmp}/sdcscan-claims.XXXXXX")
trap 'rm -rf "$out"' EXIT
FAILED=0
fail() {
	echo "FAIL: $*" >&2
	FAILED=1
}

# stages RESULT [STAGE=RESULT ...]: OUT/.stages with every default stage at RESULT but those named
stages() {
	all=$1
	shift
	: >"$out/.stages"
	for s in $DEFAULT_STAGES; do
		r=$all
		for o in "$@"; do [ "${o%%=*}" = "$s" ] && r=${o#*=}; done
		echo "$s|$r|1|1" >>"$out/.stages"
	done
}
# expect WHAT PATTERN: the claims summary has a line matching PATTERN
expect() {
	claims_summary >"$out/claims.txt"
	grep -q -- "$2" "$out/claims.txt" || { fail "$1: no '$2' in:"; sed 's/^/    /' "$out/claims.txt" >&2; }
}
# never WHAT PATTERN: no line matches
never() {
	grep -q -- "$2" "$out/claims.txt" && fail "$1: '$2' in the summary: $(grep -- "$2" "$out/claims.txt")"
}

BUNDLE_FAKE=0
n=$(claim_table | wc -l)
stages ok
expect "all passed" "^claims: $n: $n tested, 0 failed, 0 not tested here, 0 rehearsed on the fake only, 0 not run yet$"
expect "all passed" "^verdict: ok: every claim tested"

stages ok "nccl=not tested here: one GPU (1 here)"
expect "one GPU" "^  NOT TESTED   nccl "
expect "one GPU" "^verdict: INCOMPLETE: 1 of $n claims not tested on a GPU here (none failed)$"
never "one GPU" "^verdict: ok"

stages ok "sanitizer=not tested here: the sanitizer refused this device (Error: x)" "sanitizer-race=ok"
expect "refused" "^  NOT TESTED   sanitizer "
never "refused" "^verdict: ok"

stages ok "bench-minitrain=MISSED A TARGET (exit 2): exact GEMM 24% of sgemm: MISSED"
expect "missed" "^  FAILED       exact-gemm-speed "
expect "missed" "^  tested       exact-class-bits "
expect "missed" "^verdict: FAILED: 1 of $n claims failed$"

stages ok "bench-minitrain=FAILED (exit 1): bits differ: DIFFER"
expect "bits" "^  FAILED       exact-class-bits "
expect "bits" "^  FAILED       exact-gemm-speed "

stages ok "calibrate=not started: would end past the budget" "tightness=pending" "tightness-cal=pending"
expect "cut" "^  not run yet  calibration "
expect "cut" "^verdict: INCOMPLETE"
# a stage the call never listed (a second call's subset) is not run yet either
grep -v '^quick|' "$out/.stages" >"$out/.s" && mv "$out/.s" "$out/.stages"
expect "subset" "^  not run yet  quick-clean "

# a result in a command's own words may hold a '|' (the .stages separator): set_stage keeps its columns
stages ok
echo "bundle made here" >"$out/MANIFEST"
B=$out scale=full budget="" started=now gpus=1 failed="" t_start=$(date +%s)
set_stage embbag "FAILED (exit 1): bits differ | table a|b" 3
n=$(claim_table | wc -l) # (summary's loop reads into n)
[ "$(awk -F'|' '$1 == "embbag" { print NF "|" $3 "|" $4 }' "$out/.stages")" = "4|3|1" ] ||
	fail "set_stage with a '|' in the result: $(grep '^embbag|' "$out/.stages")"
grep -q '^embbag  *3s  *1s  FAILED (exit 1): bits differ / table a/b$' "$out/summary.txt" ||
	fail "summary.txt's embbag row: $(grep '^embbag ' "$out/summary.txt")"
expect "bar" "^  FAILED       embbag-bits "

# judge() on a bench's exit 2, from logs in the benches' own formats (a GPU's, BUNDLE_FAKE=0)
minitrain_log() { # TRAINING_TARGET GEMM_BITS GEMM_TARGET
	printf '%s\n' "bits: exact GEMM 67 x 131 x 77 (tile edges), every element against this CPU's: the same" \
		"model  bits          GPU steps/s  core steps/s  GPU/core  target" \
		"dlrm   same                248.0        1097.1       0.2x  $1" "xfmr   same                 78.6         854.9       0.1x  met" \
		"" "GEMM, square n (bits: against this CPU's exact kernel, all rows up to 1024, else the first and last 8;" \
		"    n  bits       exact GFLOP/s  sgemm GFLOP/s  exact/sgemm  roofline  target" \
		" 1024  $2         9000.0        20000.0        45.0%     44.3%  $3, met by design (roofline 44.3%)" \
		>"$out/bench-minitrain.log"
}
judged() { # STAGE RC WANT-STATUS RESULT-PATTERN: judge's result into $res
	rm -f "$out/$1.result"
	res=$(judge "$1" "$2")
	s=$?
	[ $s = "$3" ] && echo "$res" | grep -q -- "$4" || fail "judge $1 exit $2: status $s, '$res' (expected $3, '$4')"
}
minitrain_log MISSED same met
judged bench-minitrain 2 0 '^ok: .*MISSED only .*training target.*(dlrm 0.2x)'
stages ok "bench-minitrain=$res"
expect "training" "^  tested       exact-gemm-speed "
minitrain_log met same MISSED
judged bench-minitrain 2 1 '^MISSED A TARGET (exit 2): '
stages ok "bench-minitrain=$res"
expect "gemm speed" "^  FAILED       exact-gemm-speed "
expect "gemm speed" "^  tested       exact-class-bits "
minitrain_log MISSED DIFFERENT met
judged bench-minitrain 2 1 '^FAILED (exit 2): bits differ: *1024 DIFFERENT'
stages ok "bench-minitrain=$res"
expect "gemm bits" "^  FAILED       exact-class-bits "

BUNDLE_FAKE=1
stages "ok on the fake module (it says nothing of a GPU: GPU run owed)"
expect "fake" "^claims: $n: 0 tested, 0 failed, 0 not tested here, $n rehearsed on the fake only, 0 not run yet$"
never "fake" "^  tested "
never "fake" "^verdict: ok"

# sanitized(): compute-sanitizer's outcomes, from stand-ins that print what NVIDIA's prints
# (its "=========" lines: a finding and its summary, a clean summary, an error of its own, none).
# usage of each stand-in: STANDIN --tool T --target-processes all --error-exitcode 9 PROGRAM...
standin() { # standin NAME BODY: a compute-sanitizer printing BODY's lines, then running the program
	printf '#!/bin/sh\nwhile [ $# -gt 0 ]; do case $1 in --*) shift 2 ;; *) break ;; esac; done\n%s\n' "$2" >"$out/$1"
	chmod +x "$out/$1"
}
standin clean 'echo "========= COMPUTE-SANITIZER"; "$@"; r=$?; echo "========= ERROR SUMMARY: 0 errors"; exit $r'
standin finding 'echo "========= Invalid __global__ read of size 4 bytes"; "$@"; echo "========= ERROR SUMMARY: 1 error"; exit 9'
standin race 'echo "========= Error: Race reported between Write access at k_x+0x10"; "$@"; echo "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)"; exit 9'
standin refuses 'echo "========= Error: Device not supported"; exit 1'
standin nothing '"$@"'
# sanitizes STANDIN EXPECT-EXIT PROGRAM-EXIT STATUS: sanitized() with that stand-in gives STATUS
sanitizes() {
	cs=$out/$1
	sanitized memcheck "$2" sh -c "exit $3" >/dev/null
	r=$?
	[ $r = "$4" ] || fail "sanitized with a compute-sanitizer that is '$1' (the program exits $3, expected $2): status $r, not $4"
}
sanitizes clean 0 0 0
sanitizes clean 2 2 0
sanitizes clean 0 2 1
sanitizes finding 0 0 1
sanitizes race 0 0 1
sanitizes refuses 0 0 3
sanitizes nothing 0 0 4
# racecheck and synccheck leave cuBLASLt's kernels out (--kernel-name-exclude, one argument whatever
# its '|'); a sanitizer that does not take the option runs the command again without it
printf '#!/bin/sh\necho "$*" >>"%s/args"\ncase " $* " in *" --kernel-name-exclude "*) [ -n "${REFUSE_EXCLUDE:-}" ] && { echo "Unrecognized option: --kernel-name-exclude"; exit 1; } ;; esac\nwhile [ $# -gt 0 ]; do case $1 in --*) shift 2 ;; *) break ;; esac; done\necho "========= COMPUTE-SANITIZER"; "$@"; r=$?; echo "========= ERROR SUMMARY: 0 errors"; exit $r\n' \
	"$out" >"$out/scoped"
chmod +x "$out/scoped"
cs=$out/scoped cs_exclude="regex=nvjet|xmma"
sanitized racecheck 0 sh -c "exit 0" >/dev/null || fail "sanitized with --kernel-name-exclude: not a pass"
grep -q -- '--tool racecheck --target-processes all --error-exitcode 9 --kernel-name-exclude regex=nvjet|xmma sh -c exit 0$' "$out/args" ||
	fail "sanitized: the sanitizer was called as: $(cat "$out/args")"
rm -f "$out/args"
REFUSE_EXCLUDE=1 sanitized racecheck 0 sh -c "exit 0" >"$out/refuse.log"
[ $? = 0 ] && [ -z "$cs_exclude" ] && [ "$(wc -l <"$out/args")" = 2 ] && grep -q 'again without it' "$out/refuse.log" ||
	fail "sanitized with a sanitizer that refuses --kernel-name-exclude: $(cat "$out/refuse.log")"
cs=""
sanitized memcheck 2 sh -c "exit 2" >/dev/null || fail "sanitized without a sanitizer: the expected exit 2 was not a pass"

# the info stage: the module sees every GPU nvidia-smi -L lists, unless CUDA_VISIBLE_DEVICES chose some
unset CUDA_VISIBLE_DEVICES
gpus_compared 8 8 >/dev/null || fail "gpus_compared: 8 listed and 8 seen is a failure"
[ "$(gpus_compared 8 7)" = "FAIL: the driver lists 8 GPUs (nvidia-smi -L), sdcscan sees 7" ] ||
	fail "gpus_compared: 8 listed and 7 seen: '$(gpus_compared 8 7)'"
gpus_compared 1 "" >/dev/null && fail "gpus_compared: 1 listed and none seen passed"
gpus_compared 8 8 0 >/dev/null || fail "gpus_compared: 8 listed, no MIG, 8 seen is a failure"
gpus_compared 1 2 2 >/dev/null || fail "gpus_compared: a GPU with 2 MIG instances is a failure"
CUDA_VISIBLE_DEVICES=0 gpus_compared 8 1 >/dev/null || fail "gpus_compared: a CUDA_VISIBLE_DEVICES choice is a failure"

[ $FAILED = 0 ] && echo PASS
exit $FAILED
