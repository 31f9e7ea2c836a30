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
#      the core's (the same bits); T and R faults in gpu0's memory found at their elements; and
#      bench embbag --gpus: the bits against the CPU's kernel, lookups/s, GB/s and the checked
#      lookup's overhead against the plain one (target <= 10%).
# usage: gpu_suite.sh SDCSCAN (the module next to it, as installed)
. "$(dirname "$0")/../cli/lib.sh"
unset SDCSCAN_GPU_MODULE SDCSCAN_NVML_LIBRARY
gpus=$("$SDCSCAN" version | sed -n 's/^gpus: //p')
case "$gpus" in
none:* | "")
	echo "SKIP: no GPU can be tested here (${gpus:-sdcscan version says nothing about GPUs})"
	exit 77
	;;
esac
echo "GPUs: $gpus"

# 1. Clean, every variant; CPU and GPU agree bit for bit.
SIZES="--set gemm.m=256 --set gemm.n=240 --set gemm.k=512 --set gemm.gpu_m=2048 --set gemm.gpu_n=2048 \
--set gemm.gpu_k=2048 --set gemm.gpu_refresh=8"
expect_exit 0 clean "$SDCSCAN" run --probe gemm --gpus 0 --cpus 0 $SIZES --set gemm.iterations=32 \
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

# 2. selftest, GPUs included.
expect_exit 0 selftest "$SDCSCAN" selftest --cpus 0 --gpus 0 --json "$TMP/st.json"
[ "$(located "$TMP/st.json" same-step)" = ok ] || fail "selftest: $(located "$TMP/st.json" same-step)"
[ "$(json_get "$TMP/st.json" "len([i for i in r['injections'] if i['device'] == 'gpu0'])")" -ge 20 ] ||
	fail "selftest injected fewer than 20 faults into the GPU"

# 3. The exactness bound at its deepest k (2^22 / 2^7 = 32768): every product and partial sum
# an integer below 2^22, so the tensor cores must add them exactly; the closed form says whether.
expect_exit 0 extreme "$SDCSCAN" run --probe gemm --gpus 0 --cpus 0 --set gemm.dtypes=int8 \
	--set gemm.gpu_dtypes=int8,bf16,fp16 --set gemm.gpu_data=extreme --set gemm.gpu_m=512 --set gemm.gpu_n=512 \
	--set gemm.gpu_k=32768 --set gemm.iterations=4
for v in gpu-int8 gpu-bf16 gpu-fp16; do
	expect_grep extreme out "^gemm/$v  *gpu0  *OK"
done

# 4. A fault in C, in one tile: named there, and the replay on every SM finds it transient.
expect_exit 2 tile "$SDCSCAN" run --probe gemm --gpus 0 --cpus 0 --set gemm.dtypes=int8 --set gemm.gpu_dtypes=bf16 \
	--set gemm.gpu_m=512 --set gemm.gpu_n=512 --set gemm.gpu_k=512 --set gemm.iterations=4 \
	--inject gemm/gpu-bf16:C:iter=2,row=37,col=300,bit=20
expect_grep tile out "checksum-mismatch at C\[37\]\[300\]"
expect_grep tile out "tile (32, 288) recomputed on each of [0-9]* SMs by sdcscan's exact kernel: all right"

# 5. Calibration, tightness and benchmark, small.
expect_exit 0 calibrate "$SDCSCAN" calibrate gemm --gpus 0 --gpu-sizes 256,1024 --trials 200 -o "$TMP/cal.json"
"$SDCSCAN" campaign gemm --gpus 0 --tightness 128,256 --tightness-trials 10 >"$TMP/tight.out" 2>"$TMP/tight.err"
rc=$?
case $rc in 0 | 2) ;; *) fail "campaign --gpus: exit $rc"; cat "$TMP/tight.err" >&2 ;; esac
expect_grep tight out "^target: no threshold below its row's |E|: 0 false positive rows: met"
"$SDCSCAN" bench overhead --gpus 0 --sizes 2048 --seconds 0.5 --dtypes int8,bf16 >"$TMP/bench.out" 2>"$TMP/bench.err"
rc=$?
case $rc in 0 | 2) ;; *) fail "bench overhead --gpus: exit $rc"; cat "$TMP/bench.err" >&2 ;; esac
cat "$TMP/bench.out"

# 6. The exact class's bits on the GPU: every line "the same" (a speed target may be missed).
"$SDCSCAN" bench minitrain --gpus 0 --sizes 512,1536 >"$TMP/mt.out" 2>"$TMP/mt.err"
rc=$?
case $rc in 0 | 2) ;; *) fail "bench minitrain --gpus: exit $rc"; cat "$TMP/mt.err" >&2 ;; esac
cat "$TMP/mt.out"
expect_grep mt out "^bits: exact GEMM 67 x 131 x 77 (tile edges), every element against this CPU's: the same$"
expect_grep mt out "^bits: exp and log of 8192 values against this CPU's: the same$"
[ "$(grep -c "^ *[0-9]*  same  " "$TMP/mt.out")" = 2 ] || fail "bench minitrain --gpus: a size's GEMM differs from the CPU's"
# training on the GPU: 20 steps of each model the same bits as this CPU's
expect_grep mt out "^dlrm   same  "
expect_grep mt out "^xfmr   same  "

# 7. The hop checks' bits on the GPU.
expect_exit 0 hops "$SDCSCAN" bench ring-hops --gpus 0 --max-bytes 67108864
cat "$TMP/hops.out"
expect_grep hops out "^bits: CRC32C of 10 buffers (0 B to 16 MiB, odd lengths) against this CPU's: the same$"
expect_grep hops out "^bits: a hop's check (3000017 elements, 7 wrong) against this CPU's: the same count, sums and CRC32C$"

# 8. NCCL between the GPUs.
ngpus=$(echo "$gpus" | sed -n 's/^\([0-9]*\) .*/\1/p')
if ! command -v mpirun >/dev/null 2>&1; then
	echo "8. NCCL: not tested: no mpirun here (apt-get install openmpi-bin)"
elif [ "${ngpus:-0}" -lt 2 ]; then
	echo "8. NCCL: not tested: ${ngpus:-0} GPU (NCCL takes no two ranks on one GPU)"
else
	NCCL_RUN="mpirun --allow-run-as-root -np $ngpus $SDCSCAN run --probe allreduce --set allreduce.variants=nccl \
--set allreduce.bytes=67108864 --no-color"
	$NCCL_RUN --duration 20 --json "$TMP/nccl.json" >"$TMP/nccl.out" 2>&1
	rc=$?
	cat "$TMP/nccl.out"
	if grep -q "libnccl.so.2" "$TMP/nccl.out"; then
		echo "8. NCCL: not tested: NCCL cannot be loaded here"
	else
		[ $rc -eq 0 ] || fail "nccl: exit $rc"
		json_get "$TMP/nccl.json" "r['run']['environment']['nccl']"
		$NCCL_RUN --duration 5 --inject "allreduce/nccl:V:iter=1,row=1,col=12345,bit=7" >"$TMP/ncclv.out" 2>&1
		grep -q "collective-wrong at V\[1\]\[12345\]: .* xor 0x00000080; ncclAllReduce on path auto gave rank 1" \
			"$TMP/ncclv.out" || fail "nccl: the V fault on rank 1 was not named"
	fi
fi

# 9. minitrain on the GPUs: the quick profile's goldens, and a fault of each kind in GPU memory.
expect_exit 0 mtquick "$SDCSCAN" run --profile quick --probe minitrain --cpus 0 --duration 20 --json "$TMP/mtq.json"
cat "$TMP/mtquick.out"
for v in dlrm xfmr; do
	expect_grep mtquick out "^minitrain/$v  *gpu0  *OK .*kernel exact CUDA, golden: built-in golden minitrain-quick"
done
check=$(json_get "$TMP/mtq.json" "' '.join('%s:%s' % (v, len({x['work_digest']['sha256'] for x in r['results'] if x['variant'] == v})) for v in ('dlrm', 'xfmr'))")
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

# 10. embbag on the GPUs: Li et al.'s table size, the same bits as a core, faults in GPU memory,
# the benchmark.
expect_exit 0 ebquick "$SDCSCAN" run --profile quick --probe embbag --cpus 0 --set embbag.rows=4000000 \
	--set embbag.iterations=16 --json "$TMP/ebq.json"
cat "$TMP/ebquick.out"
check=$(json_get "$TMP/ebq.json" "' '.join('%s:%d' % (v, len({x['work_digest']['sha256'] for x in r['results'] if x['variant'] == v})) for v in sorted({x['variant'] for x in r['results']}))")
[ "$check" = "4bit-d64:1 4bit-fast-d64:1 8bit-d64:1 8bit-fast-d64:1" ] || fail "ebquick: the core's and the GPUs' work digests differ: $check"
expect_exit 2 ebfaults "$SDCSCAN" run --probe embbag --cpus 0 --gpus 0 --set embbag.rows=65536 --set embbag.iterations=16 \
	--json "$TMP/ebfaults.json" \
	--inject embbag/8bit-d64:T:iter=1,device=gpu0 --inject embbag/4bit-fast-d64:T:iter=2,col=66,device=gpu0 \
	--inject embbag/8bit-fast-d64:R:iter=1,bit=30,device=gpu0 --inject embbag/4bit-d64:R:iter=3,bit=0,device=gpu0 \
	--inject embbag/8bit-fast-d64:T:iter=2,row=1200,col=64,bit=20,device=gpu0
cat "$TMP/ebfaults.out"
check=$(located "$TMP/ebfaults.json")
[ "$check" = ok ] || fail "ebfaults: $check"
"$SDCSCAN" bench embbag --gpus 0 --dims 32,64,128,256 --seconds 2 --json "$TMP/ebbench.json" >"$TMP/ebbench.out" 2>"$TMP/ebbench.err"
rc=$?
case $rc in 0 | 2) ;; *) fail "bench embbag --gpus: exit $rc"; cat "$TMP/ebbench.err" >&2 ;; esac
cat "$TMP/ebbench.out"
[ "$(json_get "$TMP/ebbench.json" "sum(x['differing'] for x in r['rows'])")" = 0 ] || fail "bench embbag --gpus: bits differ from the CPU's"
finish
