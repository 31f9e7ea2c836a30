#!/bin/sh
# The allreduce probe's nccl variant across 4 ranks, with the fake GPU module (src/kernels/
# fake/fake_nccl.c) standing in for the GPUs and for NCCL (its collectives go through shared memory
# between the ranks' burn processes, found from the unique id as NCCL's are, and are checked by
# the twin of the device's check): what CI can prove of the host side without a GPU.
# One rank a GPU (the rank's place on its host picks it: two ranks on one GPU are refused, as NCCL
# refuses them); every path's collectives clean; a wrong element in one path's collective on one
# rank names that rank, path and collective; a fault in GPU memory names its rank and element; a
# path NCCL refuses is said and left out; a stuck GPU and a killed rank are named, UNKNOWN, within
# the deadline and a few seconds, and a rank killed between two sends of one exchange is named by
# every survivor and no survivor is; no NCCL is UNKNOWN with what to do.
# usage: nccl.sh SDCSCAN FAKE_GPU_MODULE FAKE_NVML
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
FAKE_GPU=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
FAKE_NVML=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
MPIRUN="$MPIRUN -x SDCSCAN_GPU_MODULE=$FAKE_GPU -x SDCSCAN_NVML_LIBRARY=$FAKE_NVML -x FAKE_GPU_COUNT=4"
NC="--probe allreduce --set allreduce.variants=nccl --set allreduce.bytes=65536 --no-color"
PATHS="auto ring/simple ring/ll tree/simple tree/ll" # the default: no LL128 forced

each_rank "$TMP/clean.codes" run $NC --duration 3 --json "$TMP/clean.json" > "$TMP/clean.out" 2>&1
same_code "$TMP/clean.codes" 0 || fail "clean: exit codes $(cat "$TMP/clean.codes"); $(tail -5 "$TMP/clean.out")"
# every path ran every collective it has, with nccl-tests' busbw (all-reduce 2(n-1)/n = 1.5 x algbw
# on 4 ranks, the others (n-1)/n = 0.75 x)
for p in $PATHS; do
	want="['all_gather', 'all_reduce', 'reduce_scatter']"
	case $p in tree/*) want="['all_reduce']" ;; esac
	[ "$(json_get "$TMP/clean.json" "sorted(r['run']['environment']['nccl']['paths']['$p'])")" = "$want" ] ||
		fail "clean: path $p ran $(json_get "$TMP/clean.json" "list(r['run']['environment']['nccl']['paths']['$p'])")"
done
[ "$(json_get "$TMP/clean.json" "set(round(c['busbw_gb_s'] / c['algbw_gb_s'], 6) for p in r['run']['environment']['nccl']['paths'].values() for k, c in p.items() if k == 'all_reduce')")" = "{1.5}" ] ||
	fail "clean: all-reduce busbw is not 2(n-1)/n algbw"
[ "$(json_get "$TMP/clean.json" "set(round(c['busbw_gb_s'] / c['algbw_gb_s'], 6) for p in r['run']['environment']['nccl']['paths'].values() for k, c in p.items() if k != 'all_reduce')")" = "{0.75}" ] ||
	fail "clean: reduce-scatter / all-gather busbw is not (n-1)/n algbw"
grep -q "corrupt\|wrong" "$TMP/clean.out" && fail "clean: a finding on a clean run"

# Two ranks on one GPU (4 ranks, 2 GPUs): NCCL refuses it or hangs in its initialisation, so
# sdcscan refuses it first, on every rank alike, naming the ranks and the GPU (never OK)
MPIRUN2=$(echo "$MPIRUN" | sed 's/FAKE_GPU_COUNT=4/FAKE_GPU_COUNT=2/')
$MPIRUN2 "$SDCSCAN" run $NC --duration 2 > "$TMP/dup.out" 2>&1
grep -q "UNKNOWN.*ranks 0 and 2 share GPU 0000:f0:00.0 on .*: NCCL takes one rank a GPU" "$TMP/dup.out" ||
	fail "two ranks a GPU: not refused by sdcscan: $(grep UNKNOWN "$TMP/dup.out" | head -3)"
grep -q "Duplicate GPU" "$TMP/dup.out" && fail "two ranks a GPU: NCCL was still asked"

# One path's all-gather wrong on rank 2 only: that rank, path and collective named, nothing else
MPIRUN_SAVED=$MPIRUN
MPIRUN="$MPIRUN -x FAKE_GPU_NCCL_BUG=2,G,ring,LL"
each_rank "$TMP/bug.codes" run $NC --duration 2 > "$TMP/bug.out" 2>&1
MPIRUN=$MPIRUN_SAVED
same_code "$TMP/bug.codes" 2 || fail "bug: exit codes $(cat "$TMP/bug.codes")"
grep -q "rank 2 gpu2 iteration 0: collective-wrong at V\[2\]\[1\]: .* xor 0x00200000; ncclAllGather on path ring/ll gave rank 2" \
	"$TMP/bug.out" || fail "bug: rank 2's all-gather on ring/ll not named: $(grep collective "$TMP/bug.out" | head -3)"
grep "collective-wrong" "$TMP/bug.out" | grep -qv "ncclAllGather on path ring/ll gave rank 2" &&
	fail "bug: another rank, path or collective named"

# A flipped bit in GPU memory after the collective, before the check (V), on rank 3
each_rank "$TMP/v.codes" run $NC --duration 2 --inject "allreduce/nccl:V:iter=2,row=3,col=7,bit=3" \
	> "$TMP/v.out" 2>&1
same_code "$TMP/v.codes" 2 || fail "V: exit codes $(cat "$TMP/v.codes")"
grep -q "rank 3 gpu3 iteration 2: collective-wrong at V\[3\]\[7\]: .* xor 0x00000008; ncclAllReduce on path auto" \
	"$TMP/v.out" || fail "V: rank 3's element 7 not named"
[ "$(grep -c "collective-wrong at" "$TMP/v.out")" -eq 1 ] || fail "V: other findings"

# A path NCCL refuses on this host: said in the report, left out, the rest runs clean; at its
# initialisation, and at its first collective (then every rank agrees to leave it out)
MPIRUN="$MPIRUN_SAVED -x FAKE_GPU_NCCL_REFUSE=ring/ll128"
each_rank "$TMP/ref.codes" run $NC --set allreduce.nccl_paths=auto,ring/simple,ring/ll128 --duration 2 \
	--json "$TMP/ref.json" > "$TMP/ref.out" 2>&1
MPIRUN=$MPIRUN_SAVED
same_code "$TMP/ref.codes" 0 || fail "refused path: exit codes $(cat "$TMP/ref.codes")"
[ "$(json_get "$TMP/ref.json" "r['run']['environment']['nccl']['paths']['ring/ll128']['ranks_refusing']")" = 4 ] ||
	fail "refused path: not in the report"
MPIRUN="$MPIRUN_SAVED -x FAKE_GPU_NCCL_REFUSE_LATE=ring/ll128"
each_rank "$TMP/late.codes" run $NC --set allreduce.nccl_paths=auto,ring/ll128 --duration 2 \
	--json "$TMP/late.json" > "$TMP/late.out" 2>&1
MPIRUN=$MPIRUN_SAVED
same_code "$TMP/late.codes" 0 || fail "path refused at its first collective: exit codes $(cat "$TMP/late.codes")"
[ "$(json_get "$TMP/late.json" "r['run']['environment']['nccl']['paths']['ring/ll128']['at'], r['run']['environment']['nccl']['paths']['ring/ll128']['ranks_refusing']")" = \
	"first collective 4" ] || fail "path refused at its first collective: not in the report"

# No NCCL on the host: UNKNOWN, saying what to do
MPIRUN="$MPIRUN_SAVED -x FAKE_GPU_NCCL=0"
each_rank "$TMP/none.codes" run $NC --duration 2 > "$TMP/none.out" 2>&1
MPIRUN=$MPIRUN_SAVED
same_code "$TMP/none.codes" 3 || fail "no NCCL: exit codes $(cat "$TMP/none.codes")"
grep -q "UNKNOWN.*libnccl.so.2.*install NCCL" "$TMP/none.out" || fail "no NCCL: not said"

# Rank 1's GPU stops (deadline 3 s): every rank names it, UNKNOWN, within 3 s + the ping and the
# exchange (3 + 4 s) and the results' gather
start=$(date +%s)
MPIRUN="$MPIRUN_SAVED -x FAKE_GPU_NCCL_HANG=1"
each_rank "$TMP/hang.codes" run $NC --duration 30 --set allreduce.timeout=3 > "$TMP/hang.out" 2>&1
MPIRUN=$MPIRUN_SAVED
took=$(( $(date +%s) - start ))
same_code "$TMP/hang.codes" 3 || fail "stuck GPU: exit codes $(cat "$TMP/hang.codes")"
[ "$took" -le 25 ] || fail "stuck GPU: the job took ${took}s"
grep -q "^UNKNOWN: .*rank 1 (.*)'s GPU is stuck: ncclAllReduce on path auto did not finish within 3 s" "$TMP/hang.out" ||
	fail "stuck GPU: rank 1 not named in the verdict: $(tail -4 "$TMP/hang.out")"
grep -q "gpu-unresponsive: .*rank 1 (.*)'s GPU then did not run a kernel of one thread" "$TMP/hang.out" ||
	fail "stuck GPU: no finding"

# Rank 2 killed mid-run: the survivors name it, UNKNOWN, within the deadlines and a few seconds:
# the collective's (3 s), the exchange's after it (3 + 3 + 4 s), the gather's (3 s): 16 s
kill_mid_run 2 2 "$TMP/kill" run $NC --set allreduce.timeout=3 --duration 30
took=$(( $(date +%s) - killed ))
echo "kill: the survivors ended ${took}s after it"
[ "$took" -le 22 ] || fail "kill: the survivors took ${took}s after the kill: $(grep "did not answer\|stopped in" "$TMP/kill.out" | head -8)"
grep -q "rank 2 (.*) did not answer" "$TMP/kill.out" || fail "kill: rank 2 not named: $(tail -5 "$TMP/kill.out")"
[ "$(grep -v "^2 " "$TMP/kill.codes" | awk '{print $2}' | sort -u)" = 3 ] ||
	fail "kill: survivors' codes $(cat "$TMP/kill.codes")"
grep "did not answer" "$TMP/kill.out" | grep -qv "rank 2 (" && fail "kill: a survivor named"

# Rank 2 dies between two sends of its word after iteration 1's first collective (K): ranks 0 and 1
# have it and go on to the next collective, rank 3 waits for it. Rank 3 names rank 2 and leaves,
# saying so: ranks 0 and 1 stop at once and name rank 2 too, never rank 3 (which was once named
# after its silence outlasted their deadline: CI saw 25 s and a survivor named).
rank_dies "$TMP/mid" run $NC --set allreduce.timeout=3 --duration 30 --inject "allreduce/nccl:K:iter=1,row=2"
[ "$(grep -v "^2 " "$TMP/mid.codes" | awk '{print $2}' | sort | tr '\n' ' ')" = "3 3 3 " ] ||
	fail "mid-exchange: survivors' codes $(cat "$TMP/mid.codes")"
[ "$(grep -c "iteration 1: rank-unresponsive: rank 2 (.*) did not answer within 3 s during ncclAllReduce on path auto" "$TMP/mid.out")" -ge 1 ] ||
	fail "mid-exchange: rank 3 did not name rank 2 in iteration 1's first step: $(grep "did not answer" "$TMP/mid.out")"
grep "did not answer" "$TMP/mid.out" | grep -v "rank 2 (" && fail "mid-exchange: a survivor named"
grep -q "^UNKNOWN: gpu0 allreduce nccl: rank 2 (.*) did not answer" "$TMP/mid.out" ||
	fail "mid-exchange: the verdict does not name rank 2: $(grep "^UNKNOWN" "$TMP/mid.out")"
echo "mid-exchange: ${took}s"
# (rank 3 waits out rank 2 (3 + 3 + 4 s), then the gather waits for rank 2's results (3 s))
[ "$took" -le 20 ] || fail "mid-exchange: the job took ${took}s"

# Rank 2 dies inside iteration 1's first collective (the fake's FAKE_GPU_NCCL_DIE): ranks 0 and 1
# had its data and finish, rank 3 waits out the collective's 8 s. The exchange after it waits for
# a rank still in the collective: ranks 0 and 1 once gave up on rank 3 after 7 s and named it.
MPIRUN="$MPIRUN_SAVED -x FAKE_GPU_NCCL_DIE=2"
rank_dies "$TMP/die" run $NC --set allreduce.timeout=8 --duration 40
MPIRUN=$MPIRUN_SAVED
echo "in-collective death: ${took}s"
[ "$(grep -v "^2 " "$TMP/die.codes" | awk '{print $2}' | sort | tr '\n' ' ')" = "3 3 3 " ] ||
	fail "in-collective death: survivors' codes $(cat "$TMP/die.codes")"
grep "did not answer" "$TMP/die.out" | grep -v "rank 2 (" && fail "in-collective death: a survivor named"
grep -q "^UNKNOWN: gpu0 allreduce nccl: rank 2 (.*) did not answer" "$TMP/die.out" ||
	fail "in-collective death: the verdict does not name rank 2: $(grep "^UNKNOWN" "$TMP/die.out")"
# (the collective's 8 s, the exchange's 8 + 3 + 4 s, the gather's 8 s)
[ "$took" -le 36 ] || fail "in-collective death: the job took ${took}s"

# sdcscan's checked ring over NCCL's send and receive (nccl-ring): clean, with its busbw; each hop
# fault of the MPI ring's selftest named exactly as the MPI ring names it (the link, or the sender)
RING="--probe allreduce --set allreduce.variants=nccl-ring --set allreduce.bytes=65536 --no-color"
each_rank "$TMP/ring.codes" run $RING --duration 3 --json "$TMP/ring.json" > "$TMP/ring.out" 2>&1
same_code "$TMP/ring.codes" 0 || fail "ring clean: exit codes $(cat "$TMP/ring.codes"); $(tail -3 "$TMP/ring.out")"
[ "$(json_get "$TMP/ring.json" "round(r['run']['environment']['nccl']['ring']['checked_ring']['busbw_gb_s'] / r['run']['environment']['nccl']['ring']['checked_ring']['algbw_gb_s'], 6)")" = 1.5 ] ||
	fail "ring clean: no busbw of the checked ring"
ring_fault() { # ring_fault NAME SPEC PATTERN
	each_rank "$TMP/$1.codes" run $RING --duration 3 --inject "$2" > "$TMP/$1.out" 2>&1
	same_code "$TMP/$1.codes" 2 || fail "ring $1: exit codes $(cat "$TMP/$1.codes")"
	grep -q "$3" "$TMP/$1.out" || fail "ring $1: not named: $(grep "corrupt\|compute" "$TMP/$1.out" | head -2)"
	[ "$(grep -c "link-corrupt at\|sender-compute at" "$TMP/$1.out")" -eq 1 ] || fail "ring $1: other links or ranks named"
}
ring_fault hop "allreduce/nccl-ring:H:iter=1,row=1,bit=9" \
	"rank 2 gpu2 iteration 1: link-corrupt at H\[1\]\[2\]: .* xor 0x00000200; the forward checked ring over NCCL's reduce-scatter step 0"
ring_fault ag "allreduce/nccl-ring:H:iter=2,row=0,tensor=ag,bit=20" \
	"rank 1 gpu1 iteration 2: link-corrupt at H\[0\]\[1\]: .* xor 0x00100000; the forward checked ring over NCCL's all-gather step 0"
ring_fault header "allreduce/nccl-ring:H:iter=3,row=2,tensor=ag-header,bit=5" \
	"rank 3 gpu3 iteration 3: link-corrupt at H\[2\]\[3\]: .* xor 0x00000020; .*CRC32C of the chunk's header from rank 2"
ring_fault compute "allreduce/nccl-ring:C:iter=3,row=1,bit=25" \
	"rank 2 gpu2 iteration 3: sender-compute at C\[1\]\[[0-9]*\]: .* xor 0x02000000; .*rank 1 (.*) sent a chunk whose CRC32C holds"
# a stuck GPU in the ring: named as in the collectives
MPIRUN="$MPIRUN_SAVED -x FAKE_GPU_NCCL_HANG=3"
each_rank "$TMP/rhang.codes" run $RING --duration 30 --set allreduce.timeout=3 > "$TMP/rhang.out" 2>&1
MPIRUN=$MPIRUN_SAVED
same_code "$TMP/rhang.codes" 3 || fail "ring stuck GPU: exit codes $(cat "$TMP/rhang.codes")"
grep -q "^UNKNOWN: .*rank 3 (.*)'s GPU is stuck: the forward checked ring over NCCL did not finish" "$TMP/rhang.out" ||
	fail "ring stuck GPU: rank 3 not named: $(tail -3 "$TMP/rhang.out")"

# bench nccl: the checked ring's busbw against ncclAllReduce's, side by side, with a target that is
# judged (the fake's one-byte-at-a-time CRC makes its ring slow: MISSED is what it must say here)
$MPIRUN "$SDCSCAN" bench nccl --min-bytes 65536 --max-bytes 1048576 --target-bytes 262144 --reps 3 \
	--json "$TMP/bench.json" > "$TMP/bench.out" 2>&1
grep -q "^ *1048576  .*%  (>= 80%: \(met\|MISSED\))$" "$TMP/bench.out" || fail "bench nccl: no judged row: $(cat "$TMP/bench.out")"
grep -q "^ *65536  .*[0-9]%$" "$TMP/bench.out" || fail "bench nccl: the unjudged row"
grep -q "^target: the checked ring at least 80% of ncclAllReduce's busbw from 262144 bytes up: MISSED$" "$TMP/bench.out" ||
	fail "bench nccl: the fake's slow ring was not MISSED"
[ "$(json_get "$TMP/bench.json" "[x['judged'] for x in r['rows']], r['clean'], r['targets_met']")" = "[False, True, True] True False" ] ||
	fail "bench nccl: report $(json_get "$TMP/bench.json" "r")"
# and ncclAllReduce's busbw on each path, a refused one said
MPIRUN="$MPIRUN_SAVED -x FAKE_GPU_NCCL_REFUSE=tree/ll"
$MPIRUN "$SDCSCAN" bench nccl --min-bytes 65536 --max-bytes 65536 --target-bytes 65536 --reps 2 \
	--json "$TMP/bench2.json" > "$TMP/bench2.out" 2>&1
MPIRUN=$MPIRUN_SAVED
grep -q "^ *65536  *[0-9.]*  *[0-9.]*  *[0-9.]*  *[0-9.]*  *refused  *[0-9.]*$" "$TMP/bench2.out" ||
	fail "bench nccl: no per-path row with tree/ll refused: $(tail -8 "$TMP/bench2.out")"
[ "$(json_get "$TMP/bench2.json" "sorted(k for k, v in r['nccl_paths_busbw_gb_s'][0].items() if isinstance(v, float) and v > 0)")" = \
	"['bytes', 'ring/ll', 'ring/ll128', 'ring/simple', 'tree/ll128', 'tree/simple']" ] || fail "bench nccl: per-path report"

# Data-parallel minitrain's gradients over NCCL (all-gathered, then summed in rank order on each
# GPU): the same trajectory as over MPI, bit for bit (the same work digest); a GPU whose sum goes
# wrong once (step 5) makes its rank diverge, and the state check names that rank at the next step.
MT="--probe minitrain --set minitrain.models=xfmr --set minitrain.steps=40 --set minitrain.iterations=17 --no-color"
each_rank "$TMP/dpn.codes" run $MT --set minitrain.dp_transport=nccl --duration 60 --json "$TMP/dpn.json" > "$TMP/dpn.out" 2>&1
same_code "$TMP/dpn.codes" 0 || fail "dp over NCCL: exit codes $(cat "$TMP/dpn.codes"); $(tail -3 "$TMP/dpn.out")"
each_rank "$TMP/dpm.codes" run $MT --set minitrain.dp_transport=mpi --duration 60 --json "$TMP/dpm.json" > "$TMP/dpm.out" 2>&1
same_code "$TMP/dpm.codes" 0 || fail "dp over MPI: exit codes $(cat "$TMP/dpm.codes")"
dp_digest() { json_get "$1" "[(x['kernel'].endswith('NCCL grads'), x['work_digest']['sha256']) for x in r['results'] if x['variant'] == 'xfmr-dp'][0]"; }
n=$(dp_digest "$TMP/dpn.json") m=$(dp_digest "$TMP/dpm.json")
case "$n" in "(True, "*) ;; *) fail "dp over NCCL: not over NCCL: $n" ;; esac
[ "${n#*, }" = "${m#*, }" ] || fail "dp over NCCL: another trajectory than over MPI: $n against $m"
MPIRUN="$MPIRUN_SAVED -x FAKE_GPU_DP_BUG=2,5"
each_rank "$TMP/dpb.codes" run $MT --set minitrain.dp_transport=nccl --duration 60 > "$TMP/dpb.out" 2>&1
MPIRUN=$MPIRUN_SAVED
same_code "$TMP/dpb.codes" 2 || fail "dp over NCCL, a GPU's sum wrong: exit codes $(cat "$TMP/dpb.codes")"
grep -q "rank 2 cpu0 iteration 6: rank-divergence at .*step 6: the state of rank 2 " "$TMP/dpb.out" ||
	fail "dp over NCCL, a GPU's sum wrong: rank 2 not named at step 6: $(grep divergence "$TMP/dpb.out" | head -2)"
[ "$(grep -c "rank-divergence" "$TMP/dpb.out")" -eq 1 ] || fail "dp over NCCL, a GPU's sum wrong: other ranks named"

# ... and with 4 ranks on 2 GPUs, dp_transport=nccl is refused before NCCL is asked (two ranks
# would share a GPU), naming why
$MPIRUN2 "$SDCSCAN" run $MT --set minitrain.dp_transport=nccl --duration 60 > "$TMP/dpdup.out" 2>&1
grep -q "dp_transport=nccl: not every rank can: 4 ranks on this host (.*) and 2 GPUs selected: NCCL takes one rank a GPU" \
	"$TMP/dpdup.out" || fail "dp over NCCL, ranks sharing a GPU: not refused: $(grep -i "unknown\|nccl" "$TMP/dpdup.out" | head -3)"

# A path that is not one
"$SDCSCAN" run $NC --set allreduce.nccl_paths=ring/fast --duration 1 > "$TMP/badopt.out" 2>&1
[ $? -eq 3 ] || fail "bad path: exit code"
grep -q "nccl_paths" "$TMP/badopt.out" || fail "bad path: not named"
finish
