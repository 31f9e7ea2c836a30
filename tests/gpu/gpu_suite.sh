#!/bin/sh
# The gpu suite: the CUDA module on a real GPU (skipped, exit 77, where none can be tested).
#   1. every GPU variant clean, and int8 and fp32 on the GPU bit-identical to the CPU's kernels
#      (the same work digest), each burn lane at a measured share of plain cuBLASLt;
#   2. selftest: every GPU fault kind found and located at its element and iteration;
#   3. the exactness bound of the tensor-core types at its deepest k, on extreme data (every
#      element at its bound), against the closed form of each row's sums;
#   4. a persistent fault needs a GPU to have it: instead, a C fault in one tile is named at that
#      tile and the SM replay finds every SM right (transient);
#   5. the GPU's calibration and tightness table and benchmark run end to end (the full-size
#      figures come from tools/gpu-check.sh);
#   6. the exact class (minitrain's arithmetic): the GPU's exact GEMM, exp and log bit-identical
#      to the CPU's (bench minitrain --gpus, which also times the GEMM against cuBLAS sgemm);
#   7. the allreduce probe's hop checks on the GPU (CRC32C, a hop's check) bit-identical to the
#      CPU's (bench ring-hops --gpus, which also gives their GB/s);
#   8. NCCL between the GPUs (allreduce's nccl variant, one rank a GPU): every path clean with its
#      busbw, and a V fault named at its rank and element; needs mpirun, NCCL and 2 GPUs or more
#      (NCCL takes no two ranks on one GPU), and says which is missing otherwise;
#   9. minitrain on every GPU against the shipped quick goldens (dlrm and xfmr, each step's state,
#      gradients and loss), voting with a core; then W, G, O and A faults in gpu0's memory, each
#      found at its element;
#  10. embbag on every GPU: the quick profile's variants at 4,000,000 rows, the GPUs' work digests
#      the core's (the same bits); T and R faults in gpu0's memory found at their elements;
#  11. bench embbag --gpus: the bits against the CPU's kernel, lookups/s, GB/s and the checked
#      lookup's overhead against the plain one (target <= 10%).
# usage: gpu_suite.sh SDCSCAN [STEP...] (the module next to it, as installed; every step, or those
# named). Environment:
#   GPU_SUITE_KEEP=DIR: the steps' JSON reports copied into DIR at the end (tools/gpu-check.sh);
#   SDCSCAN_GPU_CHECK_SCALE=full (default) or rehearsal: the same steps and commands at smaller
#      sizes and times (tools/gpu-check.sh's --scale), for the fake module on a 2-core machine;
#      with rehearsal, $SDCSCAN_GPU_MODULE and $SDCSCAN_NVML_LIBRARY are kept (the fake may stand
#      in for the GPU), otherwise they are unset (the module next to sdcscan, and the driver's NVML).
# On the fake module (src/kernels/fake/fake_module.c and its families' twins, which run the GPU's
# work on the CPU with the CPU's own functions) every assertion is made as on a GPU; the end says which of them can say nothing
# about a GPU there (bits by construction, emulated SMs and NCCL, timings), never silently.
. "$(dirname "$0")/../cli/lib.sh"
shift
scale=${SDCSCAN_GPU_CHECK_SCALE:-full}
case $scale in
full) unset SDCSCAN_GPU_MODULE SDCSCAN_NVML_LIBRARY ;;
rehearsal) ;;
*) echo "gpu_suite: SDCSCAN_GPU_CHECK_SCALE is full or rehearsal, not '$scale'" >&2; exit 1 ;;
esac
steps=${*:-1 2 3 4 5 6 7 8 9 10 11}
# sz FULL REHEARSAL: the value for this scale
sz() { if [ "$scale" = rehearsal ]; then echo "$2"; else echo "$1"; fi; }
# step N: whether step N is to run (and its start, for the time it took)
step() {
	case " $steps " in *" $1 "*) ;; *) return 1 ;; esac
	echo "== step $1 ($(date +%T))"
	return 0
}
gpus=$("$SDCSCAN" version | sed -n 's/^gpus: //p')
case "$gpus" in
none:* | "")
	echo "SKIP: no GPU can be tested here (${gpus:-sdcscan version says nothing about GPUs})"
	exit 77
	;;
esac
echo "GPUs: $gpus (scale $scale, steps $steps)"
fake=0
case "$gpus" in *"CUDA runtime fake"*) fake=1 ;; esac
# the CPU's own variant beside the GPU's, where a step is about the GPU's (small in a rehearsal)
CPU_SMALL=$(sz "" "--set gemm.m=32 --set gemm.n=32 --set gemm.k=64")
NOT_JUDGED=""
# digests_agree REPORT: VARIANT:N for each variant, N its distinct work digests over the devices
# (1: every device the same bits), and the devices with none (under 16 iterations: not compared)
digests_agree() {
	python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
out = []
for v in sorted({x["variant"] for x in r["results"]}):
    xs = [x for x in r["results"] if x["variant"] == v]
    none = [x["device"] for x in xs if not x["work_digest"]]
    out.append("%s:%d%s" % (v, len({x["work_digest"]["sha256"] for x in xs if x["work_digest"]}),
                            " (no digest on %s)" % ",".join(none) if none else ""))
print(" ".join(out))
PY
}
# not_judged TEXT: an assertion made here that says nothing about a GPU on the fake module
not_judged() { [ $fake = 1 ] && NOT_JUDGED="$NOT_JUDGED
  - $*"; }
# not_tested TEXT: an assertion this machine cannot make (one GPU, no mpirun), said at the end
NOT_TESTED=""
not_tested() {
	echo "$*"
	NOT_TESTED="$NOT_TESTED
  - $*"
}

# 1. Clean, every variant; CPU and GPU agree bit for bit.
if step 1; then
	# (16 iterations at least: the work digest is of the first 16)
	G=$(sz 2048 64)
	SIZES="$(sz "--set gemm.m=256 --set gemm.n=240 --set gemm.k=512" "--set gemm.m=64 --set gemm.n=48 --set gemm.k=128") \
--set gemm.gpu_m=$G --set gemm.gpu_n=$G --set gemm.gpu_k=$G --set gemm.gpu_refresh=8"
	expect_exit 0 clean "$SDCSCAN" run --probe gemm --gpus 0 --cpus 0 $SIZES --set gemm.iterations=$(sz 32 16) \
		--set gemm.dtypes=int8,fp32 --set gemm.gpu_dtypes=int8,fp32,bf16,fp16,fp32-fast,tf32-fast,bf16-fast \
		--json "$TMP/clean.json"
	check=$(python3 - "$TMP/clean.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
bad = []
for v in ("int8", "fp32"):
    d = {x["device"]: x["work_digest"]["sha256"] if x["work_digest"] else None for x in r["results"] if x["variant"] == v}
    if d.get("cpu0") is None or d.get("cpu0") != d.get("gpu0"):
        bad.append("%s: CPU and GPU digests differ: %r" % (v, d))
for x in r["results"]:
    if x["status"] != "ok":
        bad.append("%s on %s: %s %s" % (x["variant"], x["device"], x["status"], x.get("error", "")))
    if x["variant"].startswith("gpu-") and not (x.get("reference") or {}).get("share", 0) > 0:
        bad.append("%s: no measured share of plain cuBLASLt" % x["variant"])
print(" ".join(bad) or "ok")
PY
)
	[ "$check" = ok ] || fail "clean: $check"
	not_judged "1: int8 and fp32 digests the CPU's: the fake computes with the CPU's own functions"
	not_judged "1: each lane's share of plain cuBLASLt: the fake times a CPU loop, not cuBLASLt"
fi

# 2. selftest, GPUs included.
if step 2; then
	expect_exit 0 selftest "$SDCSCAN" selftest --cpus 0 --gpus 0 --json "$TMP/st.json"
	[ "$(located "$TMP/st.json" same-step)" = ok ] || fail "selftest: $(located "$TMP/st.json" same-step)"
	[ "$(json_get "$TMP/st.json" "len([i for i in r['injections'] if i['device'] == 'gpu0'])")" -ge 20 ] ||
		fail "selftest injected fewer than 20 faults into the GPU"
fi

# 3. The exactness bound at its deepest k (2^22 / 2^7 = 32768): every product and partial sum
# an integer below 2^22, so the tensor cores must add them exactly; the closed form says whether.
# (The rehearsal keeps k and shrinks the rows and columns.)
if step 3; then
	E=$(sz 512 16)
	expect_exit 0 extreme "$SDCSCAN" run --probe gemm --gpus 0 --cpus 0 --set gemm.dtypes=int8 $CPU_SMALL \
		--set gemm.gpu_dtypes=int8,bf16,fp16 --set gemm.gpu_data=extreme --set gemm.gpu_m=$E --set gemm.gpu_n=$E \
		--set gemm.gpu_k=32768 --set gemm.iterations=4
	for v in gpu-int8 gpu-bf16 gpu-fp16; do
		expect_grep extreme out "^gemm/$v  *gpu0  *OK"
	done
	not_judged "3: exact sums at k = 32768: the fake's accumulators are int64 and double, not tensor cores"
fi

# 4. A fault in C, in one tile: named there, and the replay on every SM finds it transient.
if step 4; then
	expect_exit 2 tile "$SDCSCAN" run --probe gemm --gpus 0 --cpus 0 --set gemm.dtypes=int8 $CPU_SMALL --set gemm.gpu_dtypes=bf16 \
		--set gemm.gpu_m=512 --set gemm.gpu_n=512 --set gemm.gpu_k=$(sz 512 64) --set gemm.iterations=4 \
		--inject gemm/gpu-bf16:C:iter=2,row=37,col=300,bit=20
	expect_grep tile out "checksum-mismatch at C\[37\]\[300\]"
	expect_grep tile out "tile (32, 288) recomputed on each of [0-9]* SMs by sdcscan's exact kernel: all right"
	not_judged "4: the replay on every SM: the fake's SMs are emulated (nothing ran on an SM)"
fi

# 5. Calibration, tightness and benchmark, small.
if step 5; then
	expect_exit 0 calibrate "$SDCSCAN" calibrate gemm --gpus 0 --gpu-sizes $(sz 256,1024 32,64) --trials 200 \
		-o "$TMP/cal.json"
	"$SDCSCAN" campaign gemm --gpus 0 --tightness $(sz 128,256 64,128) --tightness-trials $(sz 10 3) \
		>"$TMP/tight.out" 2>"$TMP/tight.err"
	rc=$?
	case $rc in 0 | 2) ;; *) fail "campaign --gpus: exit $rc"; cat "$TMP/tight.err" >&2 ;; esac
	expect_grep tight out "^target: no threshold below its row's |E|: 0 false positive rows: met"
	"$SDCSCAN" bench overhead --gpus 0 --sizes $(sz 2048 64) --seconds $(sz 0.5 0.2) --dtypes int8,bf16 \
		>"$TMP/bench.out" 2>"$TMP/bench.err"
	rc=$?
	case $rc in 0 | 2) ;; *) fail "bench overhead --gpus: exit $rc"; cat "$TMP/bench.err" >&2 ;; esac
	cat "$TMP/bench.out"
	not_judged "5: e_max, the tightness ratios and the overhead: the fake's rounding and timings, not a GPU's"
fi

# 6. The exact class's bits on the GPU: every line "the same" (a speed target may be missed).
if step 6; then
	"$SDCSCAN" bench minitrain --gpus 0 --sizes $(sz 512,1536 64,96) $(sz "" "--seconds 0.3") \
		>"$TMP/mt.out" 2>"$TMP/mt.err"
	rc=$?
	cat "$TMP/mt.out"
	expect_grep mt out "^bits: exact GEMM 67 x 131 x 77 (tile edges), every element against this CPU's: the same$"
	expect_grep mt out "^bits: exp and log of 8192 values against this CPU's: the same$"
	if [ $fake = 1 ] && [ $rc = 3 ] && grep -q "the fake GPU module has no GPU to time and no cuBLAS" "$TMP/mt.err"; then
		# the fake stops where the sizes are timed against cuBLAS sgemm, after the training
		not_judged "6: each size's exact GEMM against the CPU's bits and against cuBLAS sgemm: NOT RUN on the fake" \
			"('$(cat "$TMP/mt.err")')"
	else
		case $rc in 0 | 2) ;; *) fail "bench minitrain --gpus: exit $rc"; cat "$TMP/mt.err" >&2 ;; esac
		[ "$(grep -c "^ *[0-9]*  same  " "$TMP/mt.out")" = 2 ] || fail "bench minitrain --gpus: a size's GEMM differs from the CPU's"
	fi
	# training on the GPU: 20 steps of each model the same bits as this CPU's
	expect_grep mt out "^dlrm   same  "
	expect_grep mt out "^xfmr   same  "
	not_judged "6: the exact class's bits and 20 training steps the CPU's: the fake runs xops.h and mt_ops.h on the CPU"
fi

# 7. The hop checks' bits on the GPU.
if step 7; then
	"$SDCSCAN" bench ring-hops --gpus 0 --max-bytes $(sz 67108864 4194304) >"$TMP/hops.out" 2>"$TMP/hops.err"
	rc=$?
	cat "$TMP/hops.out"
	if [ $fake = 1 ] && [ $rc = 3 ] && grep -q "the fake GPU module has no GPU to time" "$TMP/hops.err"; then
		not_judged "7: the hop checks' GB/s on device buffers: NOT RUN on the fake ('$(cat "$TMP/hops.err")')"
	elif [ $rc != 0 ]; then
		fail "hops: exit $rc"
		sed 's/^/    stderr: /' "$TMP/hops.err" >&2
	fi
	expect_grep hops out "^bits: CRC32C of 10 buffers (0 B to 16 MiB, odd lengths) against this CPU's: the same$"
	expect_grep hops out "^bits: a hop's check (3000017 elements, 7 wrong) against this CPU's: the same count, sums and CRC32C$"
	not_judged "7: CRC32C and the hop check the CPU's: the fake runs ring_hd.h on the CPU"
fi

# 8. NCCL between the GPUs.
if step 8; then
	ngpus=$(echo "$gpus" | sed -n 's/^\([0-9]*\) .*/\1/p')
	if ! command -v mpirun >/dev/null 2>&1; then
		not_tested "8. NCCL: not tested: no mpirun here (apt-get install openmpi-bin, or tools/gpu-check.sh's bundle)"
	elif [ "${ngpus:-0}" -lt 2 ]; then
		not_tested "8. NCCL: not tested: ${ngpus:-0} GPU (NCCL takes no two ranks on one GPU)"
	else
		# (--oversubscribe: the rehearsal's ranks outnumber its 2 cores; on a GPU machine there are
		# more cores than GPUs, and it changes nothing)
		NCCL_RUN="mpirun --allow-run-as-root --oversubscribe -np $ngpus $SDCSCAN run --probe allreduce \
--set allreduce.variants=nccl --set allreduce.bytes=$(sz 67108864 1048576) --no-color"
		$NCCL_RUN --duration $(sz 20 4) --json "$TMP/nccl.json" >"$TMP/nccl.out" 2>&1
		rc=$?
		cat "$TMP/nccl.out"
		if grep -q "libnccl.so.2" "$TMP/nccl.out"; then
			not_tested "8. NCCL: not tested: NCCL cannot be loaded here"
		else
			[ $rc -eq 0 ] || fail "nccl: exit $rc"
			json_get "$TMP/nccl.json" "r['run']['environment']['nccl']"
			$NCCL_RUN --duration $(sz 5 3) --inject "allreduce/nccl:V:iter=1,row=1,col=12345,bit=7" >"$TMP/ncclv.out" 2>&1
			grep -q "collective-wrong at V\[1\]\[12345\]: .* xor 0x00000080; ncclAllReduce on path auto gave rank 1" \
				"$TMP/ncclv.out" || fail "nccl: the V fault on rank 1 was not named"
			not_judged "8: NCCL's paths and busbw: the fake's NCCL is collectives through shared memory on the host"
		fi
	fi
fi

# 9. minitrain on the GPUs: the quick profile's goldens, and a fault of each kind in GPU memory.
if step 9; then
	# (the rehearsal's 8 fake GPUs share 2 cores: each stops at 16 steps, the work digest's)
	expect_exit 0 mtquick "$SDCSCAN" run --profile quick --probe minitrain --cpus 0 \
		$(sz "--duration 20" "--duration 60 --set minitrain.iterations=16") --json "$TMP/mtq.json"
	cat "$TMP/mtquick.out"
	for v in dlrm xfmr; do
		expect_grep mtquick out "^minitrain/$v  *gpu0  *OK .*kernel exact CUDA, golden: built-in golden minitrain-quick"
	done
	check=$(digests_agree "$TMP/mtq.json")
	[ "$check" = "dlrm:1 xfmr:1" ] || fail "mtquick: the core's and the GPUs' work digests differ: $check"
	MT="--probe minitrain --set minitrain.seed=1 --set minitrain.steps=12 --set minitrain.checkpoint=4 \
--set minitrain.dlrm_rows=256 --set minitrain.dlrm_batch=32 --set minitrain.xfmr_seq=16 --set minitrain.xfmr_ff=64 \
--cpus 0 --gpus 0 --duration 5"
	expect_exit 2 mtfaults "$SDCSCAN" run $MT --json "$TMP/mtfaults.json" \
		--inject minitrain/dlrm:W:iter=3,device=gpu0 --inject minitrain/dlrm:G:iter=5,tensor=grad.top.U0,bit=27,device=gpu0 \
		--inject minitrain/dlrm:O:iter=7,tensor=adagrad.emb1,device=gpu0 \
		--inject minitrain/xfmr:W:iter=2,tensor=attn.Wv,bit=30,device=gpu0 --inject minitrain/xfmr:G:iter=4,bit=28,device=gpu0 \
		--inject minitrain/xfmr:O:iter=6,tensor=adam.v.mlp.W1,device=gpu0 \
		--inject minitrain/xfmr:A:iter=8,tensor=act.Q,bit=30,device=gpu0 --inject minitrain/xfmr:A:iter=9,tensor=act.S,bit=31,device=gpu0
	cat "$TMP/mtfaults.out"
	check=$(located "$TMP/mtfaults.json")
	[ "$check" = ok ] || fail "mtfaults: $check"
	not_judged "9: the goldens on every GPU: the fake trains with the CPU's mt_ops.h"
fi

# 10. embbag on the GPUs: Li et al.'s table size, the same bits as a core, faults in GPU memory.
if step 10; then
	# (16 rounds: the work digest's; the rehearsal's 8 fake GPUs on 2 cores need more than the
	# profile's 16 s for them)
	expect_exit 0 ebquick "$SDCSCAN" run --profile quick --probe embbag --cpus 0 --set embbag.rows=$(sz 4000000 16384) \
		--set embbag.iterations=16 $(sz "" "--duration 60") --json "$TMP/ebq.json"
	cat "$TMP/ebquick.out"
	check=$(digests_agree "$TMP/ebq.json")
	[ "$check" = "4bit-d64:1 4bit-fast-d64:1 8bit-d64:1 8bit-fast-d64:1" ] || fail "ebquick: the core's and the GPUs' work digests differ: $check"
	expect_exit 2 ebfaults "$SDCSCAN" run --probe embbag --cpus 0 --gpus 0 --set embbag.rows=$(sz 65536 16384) --set embbag.iterations=16 \
		--json "$TMP/ebfaults.json" \
		--inject embbag/8bit-d64:T:iter=1,device=gpu0 --inject embbag/4bit-fast-d64:T:iter=2,col=66,device=gpu0 \
		--inject embbag/8bit-fast-d64:R:iter=1,bit=30,device=gpu0 --inject embbag/4bit-d64:R:iter=3,bit=0,device=gpu0 \
		--inject embbag/8bit-fast-d64:T:iter=2,row=1200,col=64,bit=20,device=gpu0
	cat "$TMP/ebfaults.out"
	check=$(located "$TMP/ebfaults.json")
	[ "$check" = ok ] || fail "ebfaults: $check"
	not_judged "10: the lookups' bits the core's: the fake looks up with embbag_hd.h on the CPU"
fi

# 11. The embbag benchmark: bits against the CPU's kernel, lookups/s, GB/s, the check's overhead.
if step 11; then
	"$SDCSCAN" bench embbag --gpus 0 --dims $(sz 32,64,128,256 32,64) --seconds $(sz 2 0.1) $(sz "" "--rows 16384 --pooling 10") \
		--json "$TMP/ebbench.json" >"$TMP/ebbench.out" 2>"$TMP/ebbench.err"
	rc=$?
	case $rc in 0 | 2) ;; *) fail "bench embbag --gpus: exit $rc"; cat "$TMP/ebbench.err" >&2 ;; esac
	cat "$TMP/ebbench.out"
	[ "$(json_get "$TMP/ebbench.json" "sum(x['differing'] for x in r['rows'])")" = 0 ] || fail "bench embbag --gpus: bits differ from the CPU's"
	not_judged "11: lookups/s, GB/s and the overhead: the fake times embbag_hd.h on the CPU"
fi

echo "== end ($(date +%T))"
[ -n "${GPU_SUITE_KEEP:-}" ] && for f in "$TMP"/*.json; do [ -f "$f" ] && cp "$f" "$GPU_SUITE_KEEP/"; done
if [ -n "$NOT_TESTED" ]; then
	echo "NOT TESTED here (this machine cannot make these assertions):$NOT_TESTED"
fi
if [ $fake = 1 ]; then
	echo "NOT JUDGED: on the fake module these assertions held but say nothing about a GPU (GPU run owed):$NOT_JUDGED"
fi
finish
