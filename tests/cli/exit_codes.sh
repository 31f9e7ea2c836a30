#!/bin/sh
# Exit codes from real runs: 0 clean, 2 corruption found, 3 bad arguments; the npd mapping.
. "$(dirname "$0")/lib.sh"

# 0: a clean run, with a report that says OK.
expect_exit 0 clean "$SDCSCAN" run $SMALL --duration 1 --json "$TMP/clean.json"
[ "$(json_get "$TMP/clean.json" "r['verdict']['status']")" = OK ] || fail "clean report verdict"
[ "$(json_get "$TMP/clean.json" "r['tool']['exit_status']")" = 0 ] || fail "clean report exit_status"
[ "$(json_get "$TMP/clean.json" "sum(x['iterations']>0 for x in r['results'])")" = \
  "$(json_get "$TMP/clean.json" "len(r['results'])")" ] || fail "a clean device did no work"
expect_grep clean out "^OK: "

# 2: an injected output fault, found on the device and element it was put.
expect_exit 2 inject "$SDCSCAN" run $SMALL --duration 1 --set gemm.dtypes=int8 \
	--inject gemm/int8:C:device=0,iter=1,row=5,col=7,bit=3 --json "$TMP/inject.json"
expect_grep inject out "^CRITICAL: cpu0 gemm int8"
[ "$(json_get "$TMP/inject.json" \
  "[(f['device'],f['iteration'],f['row'],f['col'],f['xor_mask']) for f in r['findings'] if f['kind']=='checksum-mismatch']")" \
  = "[('cpu0', 1, 5, 7, '0x00000008')]" ] || fail "injected fault not located at cpu0 iteration 1 C[5][7] bit 3"
[ "$(json_get "$TMP/inject.json" "r['tool']['exit_status']")" = 2 ] || fail "inject report exit_status"

# 1: a core below the profile's throughput floor is WARNING, with a slow-device finding.
expect_exit 1 floor "$SDCSCAN" run $SMALL --duration 0.5 --set gemm.dtypes=int8 --set gemm.int8_floor=1000000 \
	--json "$TMP/floor.json"
expect_grep floor out "^WARNING: cpu[0-9]* gemm int8 slow"
[ "$(json_get "$TMP/floor.json" "sorted(set(f['kind'] for f in r['findings']))")" = "['slow-device']" ] \
	|| fail "floor: expected only slow-device findings"

# npd: 0 OK, 1 problem, 2 unknown.
expect_exit 0 npd_ok "$SDCSCAN" run $SMALL --duration 0.5 --exit-codes npd
expect_exit 1 npd_bad "$SDCSCAN" run $SMALL --duration 0.5 --exit-codes npd --inject gemm:C:iter=0
expect_exit 2 npd_unknown "$SDCSCAN" run --exit-codes npd --duration zero
# the mapping holds whatever the order: a bad flag before or after it, = or a space
expect_exit 2 npd_before "$SDCSCAN" run --frobnicate --exit-codes npd
expect_exit 2 npd_eq "$SDCSCAN" run --exit-codes=npd --frobnicate
expect_exit 2 npd_short "$SDCSCAN" run -e npd --duration zero

# 3: each bad argument gets one line on stderr naming it, and nothing runs.
bad() {
	name=$1 pattern=$2
	shift 2
	expect_exit 3 "$name" "$SDCSCAN" "$@"
	expect_grep "$name" err "$pattern"
	[ "$(wc -l <"$TMP/$name.err")" -eq 1 ] || fail "$name: expected one line on stderr"
	[ ! -s "$TMP/$name.out" ] || fail "$name: printed on stdout (a probe ran?)"
}
bad unknown_opt "unknown option '--frobnicate'" run --frobnicate
bad missing_value "option '--duration' needs a value" run --duration
bad bad_duration "--duration 'soon': expected seconds" run --duration soon
bad neg_duration "--duration '-1'" run --duration -1
bad bad_seed "--seed 'x': expected a non-negative integer" run --seed x
bad bad_cpus "cannot parse CPU list '0-x'" run --cpus 0-x
bad missing_cpu "CPU 1000 is offline or not in this process" run --cpus 1000
bad bad_probe "--probe 'gemx': unknown probe (valid probes: gemm" run --probe gemx
bad twice_probe "given twice" run --probe gemm --probe gemm
bad bad_set_key "unknown key 'mm' for probe gemm (valid keys: duration" run --set gemm.mm=3
bad bad_set_range "gemm.m: 0 is out of range (expected an integer from 1 to 16384)" run --set gemm.m=0
bad bad_set_form "expected PROBE.KEY=VALUE" run --set gemm
bad bad_profile "unknown profile 'nosuch' (built-in profiles: quick, cron" run --profile nosuch
bad missing_file "No such file" run --profile ./nosuch.yaml
bad bad_exit "--exit-codes 'sensu': expected nagios or npd" run --exit-codes sensu
bad bad_inject "expected PROBE" run --inject gemm
bad bad_target "has no target 'D' (valid targets: A, B, C)" run --inject gemm:D
bad bad_inject_key "unknown key 'colour'" run --inject gemm:C:colour=red
bad extra_arg "unexpected argument 'now'" run now
bad bad_command "unknown command 'scan'" scan
bad bad_list "unknown option '--all'" list --all
bad bad_bench "--sizes '9x9': expected MxNxK" bench --sizes 9x9

# A bad profile file: refused with file:line:column before any probe runs.
printf 'probes:\n  gemm:\n    m: 4\n    m: 5\n' >"$TMP/dup.yaml"
bad dup_profile "dup.yaml:4:5: duplicate key 'm'" run --profile "$TMP/dup.yaml"
printf 'probes:\n  gemm:\n    dtypes: [int4]\n' >"$TMP/type.yaml"
bad type_profile "type.yaml:3:14: gemm.dtypes: 'int4' is not a valid choice" run --profile "$TMP/type.yaml"

# Help on every command and verb, exit 0, on stdout, from the same tables the parser reads.
for cmd in run list selftest golden "golden record" "golden verify" "golden show" bench "bench gemm" \
	"bench overhead" "bench embbag" "bench minitrain" "bench allreduce" calibrate "calibrate gemm" campaign \
	"campaign gemm" "campaign embbag" version; do
	name=$(echo "help_$cmd" | tr ' ' _)
	expect_exit 0 "$name" "$SDCSCAN" $cmd --help
	expect_grep "$name" out "Usage: sdcscan $cmd"
done
# A verb is chosen by position; a bad one is named with the valid ones.
bad bad_verb "unknown verb 'gem' (expected gemm, overhead, embbag, minitrain, allreduce, ring-hops, nccl, ecparity, fleet)" bench gem
bad no_verb "expected a golden command: record, verify, show" golden
# The verbs the registry holds (commands/tools.c), each probe's then the framework's, and the
# commands of the top level (man page's Commands), as the messages name them.
bad bad_campaign "unknown verb 'x' (expected gemm, embbag, cpu-faults)" campaign x
bad no_campaign "expected the probe to campaign on: gemm, embbag, cpu-faults" campaign
bad bad_calibrate "unknown verb 'x' (expected gemm)" calibrate x
expect_grep help_campaign out "^  cpu-faults   flip register bits"
bad bad_command_list "(expected run, status, clear, list, selftest, golden, fleet, bench, calibrate, campaign or version;" scan
# --exit-codes npd holds whatever the order of the arguments: a bad flag before it is npd's unknown (2).
expect_exit 2 npd_order "$SDCSCAN" run --bogus --exit-codes npd
expect_exit 0 help_top "$SDCSCAN" --help
# The probes with GPU variants (gemm.c, embbag.c, minitrain.c, allreduce.c's nccl; not ecparity).
expect_grep help_top out "^GPUs: gemm, embbag, minitrain and allreduce run on them;"
expect_exit 3 no_command "$SDCSCAN"

# --json - puts the report on stdout and the human text on stderr.
expect_exit 0 json_stdout "$SDCSCAN" run $SMALL --duration 0.5 --json -
python3 -m json.tool "$TMP/json_stdout.out" >/dev/null || fail "--json - did not print JSON on stdout"
expect_grep json_stdout err "^OK: "

# --quiet: the verdict line only. Not a TTY here, so never an escape sequence.
expect_exit 0 quiet "$SDCSCAN" run $SMALL --duration 0.5 --quiet
[ "$(wc -l <"$TMP/quiet.out")" -eq 1 ] || fail "--quiet printed more than the verdict line"
expect_exit 0 colour "$SDCSCAN" run $SMALL --duration 0.5
if grep -q "$(printf '\033')" "$TMP/colour.out"; then fail "escape sequences on a pipe"; fi

# list names every probe's availability and every built-in profile.
expect_exit 0 list "$SDCSCAN" list
expect_grep list out "gemm *available"
expect_grep list out "quick .*\[default\]"
expect_grep list out "cron "
finish
