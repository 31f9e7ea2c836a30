#!/bin/sh
# The mpi suite: 4 ranks on one host over TCP loopback (CONVENTIONS.md). A clean run is OK on
# every rank; a corrupted hop names exactly that link; a compute fault names exactly that rank; a
# rank killed mid-run gives UNKNOWN naming it, within the deadline (and one whose MPI library hangs
# is ended by its watchdog); every rank exits the same.
# Under mpirun only rank 0 prints: its own lines, then each other rank's summary and findings.
# usage: allreduce.sh SDCSCAN
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
AR="--probe allreduce --set allreduce.bytes=262144 --no-color"

each_rank "$TMP/clean.codes" run $AR --duration 3 --json "$TMP/clean.json" > "$TMP/clean.out" 2>&1
same_code "$TMP/clean.codes" 0 || fail "clean: exit codes $(cat "$TMP/clean.codes")"
[ "$(json_get "$TMP/clean.json" "r['fleet']['verdict'], len(r['fleet']['ranks'])")" = "OK 4" ] ||
	fail "clean: fleet section"

each_rank "$TMP/hop.codes" run $AR --set allreduce.variants=ring --duration 2 --json "$TMP/hop.json" \
	--inject "allreduce:H:iter=1,row=1,col=2,bit=9" > "$TMP/hop.out" 2>&1
same_code "$TMP/hop.codes" 2 || fail "hop: exit codes $(cat "$TMP/hop.codes")"
grep -q "link-corrupt at H\[1\]\[2\]" "$TMP/hop.out" || fail "hop: the link 1 -> 2 was not named"
[ "$(grep -c "link-corrupt\|sender-compute" "$TMP/hop.out")" -eq 1 ] || fail "hop: other links or ranks named"

# A link that corrupts only a chunk's header (its CRC word; the data arrive right): the header's own
# CRC names that link, and the xor is the flipped bit of the CRC word.
each_rank "$TMP/hdr.codes" run $AR --set allreduce.variants=ring --duration 2 \
	--inject "allreduce:H:iter=1,row=3,col=0,tensor=ag-header,bit=13" > "$TMP/hdr.out" 2>&1
same_code "$TMP/hdr.codes" 2 || fail "header: exit codes $(cat "$TMP/hdr.codes")"
grep -q "link-corrupt at H\[3\]\[0\]: .* xor 0x00002000; .*all-gather step 0: CRC32C of the chunk's header" \
	"$TMP/hdr.out" || fail "header: the link 3 -> 0 was not named"
[ "$(grep -c "link-corrupt\|sender-compute" "$TMP/hdr.out")" -eq 1 ] || fail "header: other links or ranks named"
each_rank "$TMP/bad.codes" run $AR --set allreduce.variants=ring --duration 2 \
	--inject "allreduce:C:iter=1,row=1,tensor=ag,bit=3" > "$TMP/bad.out" 2>&1
same_code "$TMP/bad.codes" 3 || fail "tensor= on a C fault: exit codes $(cat "$TMP/bad.codes")"
grep -q "allreduce takes tensor= only for H faults" "$TMP/bad.out" || fail "tensor= on a C fault: no error"

each_rank "$TMP/cmp.codes" run $AR --set allreduce.variants=ring --duration 2 \
	--inject "allreduce:C:iter=2,row=3,bit=25" > "$TMP/cmp.out" 2>&1
same_code "$TMP/cmp.codes" 2 || fail "compute: exit codes $(cat "$TMP/cmp.codes")"
grep -q "sender-compute at C\[3\]" "$TMP/cmp.out" || fail "compute: rank 3 was not named"
[ "$(grep -c "link-corrupt\|sender-compute" "$TMP/cmp.out")" -eq 1 ] || fail "compute: others named"

# Data-parallel minitrain: gradients all-reduced in rank order, the state compared across ranks
# every step. Clean: every rank OK and the fleet agrees; a weight flipped on rank 2 at step 7: that
# rank names itself at that step, and the fleet vote names it too.
# (17 steps each, whatever the machine's speed: the fleet vote compares the work digests of the
# first 16, so a loaded host that got fewer steps in a fixed time would make it flaky)
MT="--probe minitrain --set minitrain.models=xfmr --set minitrain.steps=40 --set minitrain.iterations=17 --no-color"
each_rank "$TMP/dp.codes" run $MT --duration 60 --json "$TMP/dp.json" > "$TMP/dp.out" 2>&1
same_code "$TMP/dp.codes" 0 || fail "dp clean: exit codes $(cat "$TMP/dp.codes")"
grep -q "minitrain/xfmr-dp .* OK" "$TMP/dp.out" || fail "dp clean: no xfmr-dp results"
each_rank "$TMP/dpw.codes" run $MT --duration 60 --inject "minitrain/xfmr-dp:W:iter=7,rank=2,tensor=attn.Wq,bit=24" \
	> "$TMP/dpw.out" 2>&1
same_code "$TMP/dpw.codes" 2 || fail "dp fault: exit codes $(cat "$TMP/dpw.codes")"
grep -q "iteration 7: rank-divergence at W\[[0-9]*\]\[[0-9]*\]: .* xor 0x01000000; step 7: the state of rank 2 " "$TMP/dpw.out" ||
	fail "dp fault: rank 2 and the flipped element not named at step 7"
[ "$(grep -c "rank-divergence" "$TMP/dpw.out")" -eq 1 ] || fail "dp fault: other ranks named"
grep -q "fleet-disagreement: .*rank 2 cpu0" "$TMP/dpw.out" || fail "dp fault: the fleet vote did not name rank 2"
# One human report for the job (rank 0's), with no colour or progress escapes in a log: each
# rank's output is a pseudo-terminal of mpirun's, whatever mpirun's own output is.
[ "$(grep -c "^sdcscan .*profile" "$TMP/dpw.out")" -eq 1 ] || fail "dp fault: more than one rank printed a header"
[ "$(grep -c "^CRITICAL: \|^OK: \|^UNKNOWN: \|^WARNING: " "$TMP/dpw.out")" -eq 1 ] ||
	fail "dp fault: more than one verdict line: $(grep "^CRITICAL: \|^OK: " "$TMP/dpw.out")"
if grep -q "$(printf '\033')" "$TMP/dpw.out"; then fail "dp fault: escape sequences in a log"; fi
grep -q "^rank 2 (.*): CRITICAL: cpu0 minitrain xfmr-dp: 1 corrupt result" "$TMP/dpw.out" ||
	fail "dp fault: rank 0 did not print rank 2's summary"

# A gradient gone wrong on rank 1 before the all-reduce (every rank would agree on the wrong sum):
# the 4-rank golden holds every rank's own gradients, so rank 1 names itself and the element.
each_rank "$TMP/dpg1.codes" run --profile quick --probe minitrain --set minitrain.models=xfmr --duration 4 \
	--no-color --inject "minitrain/xfmr-dp:G:iter=5,rank=1,tensor=grad.attn.Wk,bit=28" > "$TMP/dpg1.out" 2>&1
same_code "$TMP/dpg1.codes" 2 || fail "dp gradient: exit codes $(cat "$TMP/dpg1.codes")"
grep -q "iteration 5: rank-gradient at G\[[0-9]*\]\[[0-9]*\]: .* xor 0x10000000; step 5: rank 1 " "$TMP/dpg1.out" ||
	fail "dp gradient: rank 1 and the element not named at step 5"
[ "$(grep -c "rank-gradient\|rank-divergence\|golden-divergence" "$TMP/dpg1.out")" -eq 1 ] ||
	fail "dp gradient: other findings (the repair did not hold)"

# selftest under mpirun: the hop, compute and data-parallel faults are found across ranks, and
# ecparity's across its servers (ranks), the lost one's rebuild included.
each_rank "$TMP/st.codes" selftest --no-color > "$TMP/st.out" 2>&1
same_code "$TMP/st.codes" 0 || fail "selftest: exit codes $(cat "$TMP/st.codes"): $(grep -v "found and located" "$TMP/st.out" | tail)"
for f in "rank 1 allreduce/ring cpu0 iteration 1: H\[1\]\[2\] bit 9" "rank 0 allreduce/ring cpu0 iteration 2: H\[0\]\[1\] bit 20" \
	"rank 1 allreduce/ring cpu0 iteration 3: C\[1\]" "rank 1 minitrain/xfmr-dp cpu0 iteration 3: W" \
	"rank 0 minitrain/xfmr-dp cpu0 iteration 6: G" \
	"ecparity/adagrad-d32-ranks cpu0 iteration 1: E" "ecparity/adagrad-d32-ranks cpu0 iteration 2: O" \
	"ecparity/adagrad-d32-ranks cpu0 iteration 3: U" "ecparity/adagrad-d32-ranks cpu0 iteration 1: M" \
	"ecparity/adagrad-d32-ranks cpu0 iteration 4: L\[11\]\[4\]"; do
	grep -q "selftest: .*$f.* found and located" "$TMP/st.out" || fail "selftest: not located: $f"
done
grep -q "^OK: selftest passed: .* (across every rank)" "$TMP/st.out" || fail "selftest: no fleet summary"

# With the quick profile's options the 4-rank trajectory matches the shipped golden on every rank.
# (rank 0 prints the job's report: every rank's results are in its JSON, each with its kernel line)
each_rank "$TMP/dpg.codes" run --profile quick --probe minitrain --set minitrain.models=xfmr --duration 4 \
	--no-color --json "$TMP/dpg.json" > "$TMP/dpg.out" 2>&1
same_code "$TMP/dpg.codes" 0 || fail "dp golden: exit codes $(cat "$TMP/dpg.codes")"
[ "$(json_get "$TMP/dpg.json" "sorted(rk['rank'] for rk in r['fleet']['ranks'] for x in rk['results'] if x['variant'] == 'xfmr-dp' and 'golden: built-in golden minitrain-quick-dp4' in x.get('kernel', ''))")" = "[0, 1, 2, 3]" ] ||
	fail "dp golden: not every rank compared with the 4-rank golden"

# A rank killed mid-run: the survivors name it, UNKNOWN, within the deadline (timeout 5 s).
# (over TCP as the rest: a survivor's write to the dead rank's socket must not kill it with SIGPIPE,
# and one whose MPI library stops returning is ended by the watchdog with the same code)
kill_mid_run 2 2 "$TMP/kill" run $AR --set allreduce.timeout=5 --duration 20
took=$(( $(date +%s) - started ))
[ "$took" -le 40 ] || fail "kill: the job took ${took}s (deadline 5 s + duration)"
grep -q "rank 2 (.*) did not answer\|rank 2 (.*) sent no results" "$TMP/kill.out" || fail "kill: rank 2 not named"
# (the killed rank's wrapper reports 137, SIGKILL)
[ "$(grep -v "^2 " "$TMP/kill.codes" | awk '{print $2}' | sort -u)" = 3 ] ||
	fail "kill: survivors' codes $(cat "$TMP/kill.codes")"
[ "$(grep -vc "^2 " "$TMP/kill.codes")" -eq 3 ] ||
	fail "kill: not every survivor reported; the job said: $(grep -v "iterations on" "$TMP/kill.out" | tail -15)"
# Only rank 2 named: rank 0, a step ahead of rank 3 (which waits behind rank 2), once named rank 3,
# in the job's verdict, on every kill; now a rank that gives up on a neighbour says which, and the
# others, kept waiting by its heartbeats, name that one
grep "did not answer" "$TMP/kill.out" | grep -v "rank 2 (" && fail "kill: a survivor named"
grep "^UNKNOWN" "$TMP/kill.out" | grep "rank [013] (" && fail "kill: the verdict names a survivor"

# A rank whose MPI library stops returning (the X fault stands in for Open MPI's TCP transport
# spinning inside MPI_Test after a peer died): its watchdog ends it with exit code 3 once one call
# has lasted the timeout + 5 s, and the others name it. (--enable-recovery: mpirun must not kill
# the stalled rank when the others leave, as they do after a peer failure, without MPI_Finalize.)
start=$(date +%s)
: > "$TMP/stall.codes"
$MPIRUN --enable-recovery sh -c '"$@" 2> '"$TMP/stall.err."'$OMPI_COMM_WORLD_RANK; echo "$OMPI_COMM_WORLD_RANK $?" >> '"$TMP/stall.codes" \
	sh "$SDCSCAN" run $AR --set allreduce.timeout=5 --duration 20 --inject allreduce:X:iter=1,row=1 > "$TMP/stall.out" 2>&1 || true
took=$(( $(date +%s) - start ))
[ "$took" -le 40 ] || fail "stall: the job took ${took}s"
same_code "$TMP/stall.codes" 3 || fail "stall: exit codes $(cat "$TMP/stall.codes")"
grep -q "rank 1 (.*): the MPI library has not come back from one call" "$TMP/stall.err.1" ||
	fail "stall: rank 1's watchdog said nothing: $(tail -3 "$TMP/stall.err.1")"
grep -q "rank 1 (.*) sent no results" "$TMP/stall.out" "$TMP/stall.err.0" || fail "stall: rank 0 did not name rank 1"
cat "$TMP/stall.out" "$TMP/stall.err.0" "$TMP/stall.err.2" "$TMP/stall.err.3" | grep "did not answer" | grep -v "rank 1 (" &&
	fail "stall: a rank other than rank 1 named"

# An interrupt on one rank ends them all, cleanly: every rank stops within seconds, UNKNOWN, and
# the others say which rank was interrupted.
: > "$TMP/int.codes"
# (each rank's stderr to a file of its own: one shared file can merge a note into another's line)
$MPIRUN sh -c '"$@" 2> '"$TMP/int.err."'$OMPI_COMM_WORLD_RANK; echo "$OMPI_COMM_WORLD_RANK $?" >> '"$TMP/int.codes" \
	sh "$SDCSCAN" run $SMALL --duration 120 --no-color > "$TMP/int.out" 2>&1 &
launcher=$!
wait_started "$TMP/int.out" 1
victim=$(rank_pid 2)
[ -n "$victim" ] || fail "interrupt: rank 2 not found"
start=$(date +%s)
kill -INT "$victim"
wait "$launcher" || true
took=$(( $(date +%s) - start ))
[ "$took" -le 15 ] || fail "interrupt: the job took ${took}s to end after rank 2 was interrupted"
same_code "$TMP/int.codes" 3 || fail "interrupt: exit codes $(cat "$TMP/int.codes")"
for r in 0 1 3; do
	grep -q "rank 2 (.*) was interrupted: this rank stops too" "$TMP/int.err.$r" ||
		fail "interrupt: rank $r did not name rank 2: $(cat "$TMP/int.err.$r")"
done

# A worker that crashes on rank 2 (a corrupted pointer read in the gemm loop): that rank stays in
# the fleet vote and every rank exits CRITICAL, the job's verdict naming rank 2 and its CPU.
each_rank "$TMP/crash.codes" run --variant gemm/int8 --set gemm.m=48 --set gemm.n=40 --set gemm.k=64 --duration 2 \
	--json "$TMP/crash.json" --inject "gemm:SEGV:iter=1,rank=2" > "$TMP/crash.out" 2>&1
same_code "$TMP/crash.codes" 2 || fail "crash: exit codes $(cat "$TMP/crash.codes")"
grep -q "^CRITICAL: rank 2 (.*): cpu[0-9]* gemm int8 crashed: SIGSEGV (SEGV_MAPERR)" "$TMP/crash.out" ||
	fail "crash: the job's verdict does not name rank 2's CPU: $(grep "^[A-Z]*:" "$TMP/crash.out" | tail -2)"
[ "$(json_get "$TMP/crash.json" "len(r['fleet']['ranks']), sorted(k['verdict'] for k in r['fleet']['ranks'])")" = \
	"4 ['CRITICAL', 'OK', 'OK', 'OK']" ] || fail "crash: the crashed rank is not in the fleet vote"

# Under --enable-recovery mpirun exits 0 whatever the ranks return (Open MPI 4.1): the job's
# verdict is read from rank 0's report, whose status is it (the man page says so).
$MPIRUN --enable-recovery "$SDCSCAN" run --variant gemm/int8 --set gemm.m=48 --set gemm.n=40 --set gemm.k=64 --duration 2 \
	--json "$TMP/rec.json" --inject "gemm:C:iter=1,rank=1,row=1,col=2,bit=20" > "$TMP/rec.out" 2>&1
echo "mpirun --enable-recovery: exit $?"
expect_exit 2 recstatus "$SDCSCAN" status "$TMP/rec.json"
expect_grep recstatus out "^CRITICAL: last run"

# Several tasks announced, one rank: UNKNOWN, not OK.
expect_exit 3 launch env SLURM_NTASKS=4 "$SDCSCAN" run --probe minitrain --duration 1
expect_grep launch err "SLURM_NTASKS says 4 tasks"

finish
