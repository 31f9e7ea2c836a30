#!/bin/sh
# The host side of every GPU path, on a machine without a GPU: sdcscan loads a GPU module that runs
# on the CPU (src/kernels/fake/fake_module.c and a twin a family, the same element definitions and
# check arithmetic as the CUDA kernels) and an NVML stand-in (tests/gpu/fake_nvml.c). Checked: GPU
# devices and their identity in the report, the GPU lanes of int8/fp32 voting with the cores
# (bit-identical results), every GPU fault kind found and located (selftest), a persistent SM fault named with its SM, a new
# uncorrectable ECC error, extreme data against its closed form (and a narrow accumulator), a sticky CUDA error (UNKNOWN naming the GPU), a missing GPU (WARNING),
# --gpus, and a host without a module (the CPU scan goes on, the report says why). minitrain on
# GPUs (the fake runs probes/minitrain/mt_ops.h's threads in reverse order): the shipped goldens
# hold, the work digests equal the core's, a GPU that rounds one update wrong is named with the
# element, every fault kind on GPU memory is located, a hung GPU is lost within its timeout.
# usage: gpu_host.sh SDCSCAN FAKE_GPU_MODULE FAKE_NVML
. "$(dirname "$0")/lib.sh"
FAKE_GPU=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
FAKE_NVML=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
export SDCSCAN_GPU_MODULE="$FAKE_GPU" SDCSCAN_NVML_LIBRARY="$FAKE_NVML"
unset FAKE_GPU_COUNT FAKE_GPU_BAD_SM FAKE_GPU_FAIL FAKE_NVML_NEW_UNC
GPU="--probe gemm --set gemm.m=48 --set gemm.n=40 --set gemm.k=64 --set gemm.refresh=2 --set gemm.gpu_m=48 \
--set gemm.gpu_n=40 --set gemm.gpu_k=64 --set gemm.gpu_refresh=2 --set gemm.iterations=16 --cpus 0"

# A clean run: every GPU variant and the GPU lanes of int8 and fp32, with the GPU's identity.
expect_exit 0 clean "$SDCSCAN" run $GPU --set gemm.gpu_dtypes=int8,fp32,bf16,fp16,fp32-fast,tf32-fast,bf16-fast \
	--json "$TMP/clean.json"
expect_grep clean out "1 GPU (sdcscan fake GPU"
expect_grep clean out "^  gpu0: sdcscan fake GPU (CPU emulation), GPU-00000000-0000-0000-0000-000000000000, bus 0000:f0:00.0, compute 9.0, 8 SMs, [0-9]* GiB, driver 580.00.fake, CUDA runtime fake$"
for v in gpu-int8 gpu-fp32 gpu-bf16 gpu-fp16 gpu-fp32-fast gpu-tf32-fast gpu-bf16-fast; do
	expect_grep clean out "^gemm/$v  *gpu0  *OK"
done
expect_grep clean out "^gemm/int8  *gpu0  *OK"
expect_grep clean out "on 1 CPU and 1 GPU"
check=$(python3 - "$TMP/clean.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
bad = []
gpu = [d for d in r["devices"] if d["type"] == "gpu"]
if len(gpu) != 1:
    bad.append("devices: %d GPUs" % len(gpu))
else:
    g = gpu[0]
    for k, want in [("index", 0), ("uuid", "GPU-00000000-0000-0000-0000-000000000000"), ("pci_bus_id", "0000:f0:00.0"),
                    ("compute_capability", "9.0"), ("sm_count", 8), ("driver", "580.00.fake"), ("cuda_runtime", "fake")]:
        if g.get(k) != want:
            bad.append("gpu %s: %r, want %r" % (k, g.get(k), want))
    h = g.get("health", {})
    if h.get("before", {}).get("ecc_uncorrected_volatile") != 0 or h.get("after", {}).get("throttle_reasons") != "sw-power-cap":
        bad.append("health: %r" % h)
# int8 and fp32 on the CPU and the GPU computed the same work digest: bit-identical results.
for v in ("int8", "fp32"):
    d = {x["device"]: x["work_digest"]["sha256"] if x["work_digest"] else None for x in r["results"] if x["variant"] == v}
    if set(d) != {"cpu0", "gpu0"} or d["cpu0"] is None or d["cpu0"] != d["gpu0"]:
        bad.append("%s digests: %r" % (v, d))
if r["findings"]:
    bad.append("findings in a clean run: %r" % r["findings"][0])
# Each burn lane measured plain cuBLASLt on its GPU and says how busy it kept it.
for x in r["results"]:
    if x["variant"].startswith("gpu-"):
        ref = x.get("reference")
        if not ref or not ref["rate"] > 0 or abs(ref["share"] - x["rate"] / ref["rate"]) > 1e-6 * ref["share"]:
            bad.append("%s reference: %r" % (x["variant"], ref))
print(" ".join(bad) or "ok")
PY
)
[ "$check" = ok ] || fail "clean GPU run: $check"
expect_grep clean out "^gemm/gpu-bf16  *gpu0  *OK .*TFLOP/s ([0-9]*% of plain fake cuBLASLt)"
# No calibration names the fake GPU: the report says each fast type's e_max is a default, what it
# is derived from, and the command that makes a calibration.
nocal="; no calibration for sdcscan fake GPU (CPU emulation), fake cuBLASLt: \`sdcscan calibrate gemm --gpus all\` makes one"
for v in fp32-fast:"Table 7's H100 FP32 row" tf32-fast:"TF32's unit roundoff" bf16-fast:"bf16's unit roundoff"; do
	t=${v%%:*}
	src=$(json_get "$TMP/clean.json" "r['run']['environment']['gemm']['gpu-$t']['emax_source']")
	case "$src" in
	"default, not a calibration: "*" for $t at K=64, "*"${v#*:}"*"$nocal") ;;
	*) fail "clean GPU run: gpu-$t's e_max is not said to be a default: $src" ;;
	esac
	# and its line says so where the SRE reads it; an exact type's, which has no e_max, does not
	expect_grep clean out "^gemm/gpu-$t  *gpu0  *OK .*kernel default e_max (uncalibrated), fake GPU"
done
grep -q "^gemm/gpu-int8 .*default e_max" "$TMP/clean.out" && fail "clean GPU run: int8, exact, said to have a default e_max"

# Operands changed at rest, while the next iteration is already in flight (two slots): found at
# their own iteration only (the one in flight ran on them, is thrown away and runs again), and
# every iteration is counted once.
expect_exit 2 atrest "$SDCSCAN" run $GPU --set gemm.dtypes=int8 --set gemm.gpu_dtypes=bf16 --set gemm.gpu_refresh=4 \
	--inject gemm/gpu-bf16:A:iter=2,row=5,col=7,bit=3 --inject gemm/gpu-bf16:B:iter=5,row=6,col=9,bit=12 \
	--json "$TMP/atrest.json"
check=$(python3 - "$TMP/atrest.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
bad = []
its = [x["iterations"] for x in r["results"] if x["variant"] == "gpu-bf16"]
if its != [16]:
    bad.append("iterations %r, want [16]" % its)
ops = sorted((f["iteration"], f["target"], f["row"], f["col"]) for f in r["findings"] if f["kind"] == "operand-corrupt")
if ops != [(2, "A", 5, 7), (5, "B", 6, 9)]:
    bad.append("operand findings %r" % ops)
other = sorted(set(f["iteration"] for f in r["findings"]) - {2, 5})
if other:
    bad.append("findings at iterations %r too" % other)
print(" ".join(bad) or "ok")
PY
)
[ "$check" = ok ] || fail "operands at rest: $check"

# An operand that rots unannounced (the fake flips A[5][7] bit 3 after the Nth checked product, as a
# page going bad under the burn would): the burn fingerprints its operands at each set's last GEMM
# (gpu_refresh 4: iterations 3, 7, 11, ...) and at its own end, so the flip under iteration 5 is
# found at 7, and one under the last iteration (13 of 14, mid-set) by the check at the end.
rot() { # NAME N ITERATIONS WANT_ITERATION
	expect_exit 2 "$1" env FAKE_GPU_ROT="$2" "$SDCSCAN" run $GPU --set gemm.dtypes=int8 --set gemm.gpu_dtypes=bf16 \
		--set gemm.gpu_refresh=4 --set gemm.iterations="$3" --json "$TMP/$1.json"
	check=$(python3 - "$TMP/$1.json" "$3" "$4" <<'PY'
import json, sys
r, n, want = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
bad = []
its = [x["iterations"] for x in r["results"] if x["variant"] == "gpu-bf16"]
if its != [n]:
    bad.append("iterations %r, want [%d]" % (its, n))
got = sorted((f["iteration"], f["kind"], f.get("target"), f.get("row"), f.get("col")) for f in r["findings"])
if got != [(want, "operand-corrupt", "A", 5, 7)]:
    bad.append("findings %r, want A[5][7] operand-corrupt at iteration %d" % (got, want))
print(" ".join(bad) or "ok")
PY
)
	[ "$check" = ok ] || fail "an operand rotting at rest ($1): $check"
}
rot rot_midset 6 16 7
rot rot_at_end 14 14 13
# B rotting mid-set fails every row of the next GEMM (iteration 6): that look takes the fingerprints
# at once, so B is named there, reloaded, and no SM is blamed for rows it computed right.
expect_exit 2 rot_b env FAKE_GPU_ROT_B=6 "$SDCSCAN" run $GPU --set gemm.dtypes=int8 --set gemm.gpu_dtypes=bf16 \
	--set gemm.gpu_refresh=8 --json "$TMP/rot_b.json"
check=$(python3 - "$TMP/rot_b.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
bad = []
f = r["findings"]
ops = [(x["iteration"], x["target"], x["row"], x["col"]) for x in f if x["kind"] == "operand-corrupt"]
if ops != [(6, "B", 5, 7)]:
    bad.append("operand findings %r, want B[5][7] at iteration 6" % ops)
if sorted(set(x["iteration"] for x in f)) != [6]:
    bad.append("findings at iterations %r, want 6 only" % sorted(set(x["iteration"] for x in f)))
blamed = [x for x in f if x.get("sm") is not None and x.get("sm", -1) >= 0]
if blamed:
    bad.append("an SM blamed: %s" % blamed[0].get("detail"))
print(" ".join(bad) or "ok")
PY
)
[ "$check" = ok ] || fail "B rotting at rest: $check"

# selftest: every GPU fault kind (A, B, C of every GPU variant) found and located.
# (--gpu-timeout, as gpu-check's memcheck gives it: every GPU probe's deadline, no other probe's)
expect_exit 0 selftest "$SDCSCAN" selftest --cpus 0 --gpu-timeout 600 --json "$TMP/st.json"
expect_grep selftest out "^OK: selftest passed"
[ "$(json_get "$TMP/st.json" "[p['options'].get('gpu_timeout') for n in ('gemm', 'embbag', 'minitrain', 'ecparity') \
	for p in r['run']['probes'] if p['name'] == n]")" = "['600', '600', '600', None]" ] ||
	fail "selftest --gpu-timeout 600: $(json_get "$TMP/st.json" "[(p['name'], p['options'].get('gpu_timeout')) for p in r['run']['probes']]")"
[ "$(json_get "$TMP/st.json" "len([i for i in r['injections'] if i['device'] == 'gpu0'])")" -ge 20 ] ||
	fail "selftest injected fewer than 20 faults into the GPU"
[ "$(located "$TMP/st.json" same-step)" = ok ] || fail "selftest: $(located "$TMP/st.json" same-step)"
# ... minitrain's W, G, O and A among them, in gpu0's memory (dlrm's W may be drawn elsewhere)
check=$(json_get "$TMP/st.json" "sorted({'dlrm:O', 'dlrm:G', 'xfmr:W', 'xfmr:A', 'xfmr:G', 'xfmr:O'} - {i['variant'] + ':' + i['target'] for i in r['injections'] if i['device'] == 'gpu0' and i['probe'] == 'minitrain'})")
[ "$check" = "[]" ] || fail "selftest: minitrain faults not in gpu0: $check"
# ... and embbag's T and R, in gpu0's memory
check=$(json_get "$TMP/st.json" "sorted({'8bit-d64:T', '4bit-fast-d64:T', '8bit-fast-d64:R', '4bit-d64:R'} - {i['variant'] + ':' + i['target'] for i in r['injections'] if i['device'] == 'gpu0' and i['probe'] == 'embbag'})")
[ "$check" = "[]" ] || fail "selftest: embbag faults not in gpu0: $check"

# The GPU validation's selftest (tests/gpu/gpu_suite.sh, step 2) on a host of 8 GPUs with one
# selected: allreduce, NCCL between the selected GPUs, needs 2 and is not asked for (it counted the
# host's GPUs, then refused the one selected: UNKNOWN). On exactly 2 GPUs every allreduce fault
# names a member the ring has (row=2 needed 3: "72 of 73 faults injected").
FAKE_GPU_COUNT=8 expect_exit 0 selftest8 "$SDCSCAN" selftest --cpus 0 --gpus 0
expect_grep selftest8 out "^OK: selftest passed"
FAKE_GPU_COUNT=2 expect_exit 0 selftest2 "$SDCSCAN" selftest --cpus 0 --json "$TMP/st2.json"
expect_grep selftest2 out "^OK: selftest passed"
# (with no launcher: the 4 faults of nccl-ring and the 1 of nccl in allreduce's selftest list)
[ "$(json_get "$TMP/st2.json" "len([i for i in r['injections'] if i['probe'] == 'allreduce'])")" = 5 ] ||
	fail "selftest on 2 GPUs: not the 5 allreduce faults of its list injected"
# A fault naming a member the ring lacks could never take effect: refused, not run as clean.
FAKE_GPU_COUNT=2 expect_exit 3 rowout "$SDCSCAN" run --probe allreduce --set allreduce.variants=nccl-ring \
	--set allreduce.bytes=65536 --duration 2 --inject allreduce/nccl-ring:H:iter=1,row=2,bit=5
expect_grep rowout out "row=2 names member 2, but the GPUs' ring has 2 (0-1)"

# A crash in a GPU lane's host thread (a corrupted pointer read in its iteration loop) is named at
# that GPU, CRITICAL, and the CPU lane goes on (runner/burn.h).
expect_exit 2 gpucrash "$SDCSCAN" run $GPU --set gemm.dtypes=int8 --set gemm.gpu_dtypes=int8 --json "$TMP/gpucrash.json" \
	--inject gemm/gpu-int8:SEGV:iter=2,device=gpu0
[ "$(json_get "$TMP/gpucrash.json" "[(f['device'], f['class'], f['signal'], f['iteration']) for f in r['findings']], sorted((x['variant'], x['device'], x['status']) for x in r['results'])")" = \
	"[('gpu0', 'crash', 'SIGSEGV', 2)] [('gpu-int8', 'gpu0', 'crashed'), ('int8', 'cpu0', 'ok'), ('int8', 'gpu0', 'ok')]" ] ||
	fail "gpucrash: $(tail -3 "$TMP/gpucrash.out")"

# A persistent fault on one SM: found, and the SM replay names SM 3.
FAKE_GPU_BAD_SM=3 expect_exit 2 badsm "$SDCSCAN" run $GPU --set gemm.dtypes=int8 --set gemm.gpu_dtypes=bf16 \
	--json "$TMP/badsm.json"
expect_grep badsm out "^gemm/gpu-bf16  *gpu0  *CRITICAL"
expect_grep badsm out "checksum-mismatch at C\[0\]\[0\] (SM 3)"
expect_grep badsm out "persistent), first SM 3, at this element"
[ "$(json_get "$TMP/badsm.json" "sorted(set(f.get('sm', -1) for f in r['findings'] if f['kind'] == 'checksum-mismatch'))")" = "[3]" ] ||
	fail "badsm: findings do not carry sm 3"
# The same persistent fault, but the replay's blocks never reach SM 3 (its block ran on SM 4):
# the replay says which SM it did not reach and judges only the others, never "transient".
FAKE_GPU_BAD_SM=3 FAKE_GPU_SM_MISSED=3 expect_exit 2 smmissed "$SDCSCAN" run $GPU --set gemm.dtypes=int8 \
	--set gemm.gpu_dtypes=bf16
expect_grep smmissed out "recomputed by sdcscan's exact kernel on 7 of the GPU's 8 SMs (not reached: SM 3; two blocks shared an SM): all right there; the SMs not reached cannot be judged"
grep -q "fault did not repeat (transient" "$TMP/smmissed.out" && fail "smmissed: called transient with SM 3 untested"
# The same product on the CPU is right: the CPU lane of int8 stays OK while the GPU's disagrees.
expect_grep badsm out "^gemm/int8  *cpu0  *OK"

# A fault injected into C: located at its element and tile, and the replay finds it transient.
expect_exit 2 tileC "$SDCSCAN" run $GPU --set gemm.dtypes=int8 --set gemm.gpu_dtypes=int8 \
	--inject gemm/gpu-int8:C:iter=1,row=21,col=35,bit=12
expect_grep tileC out "checksum-mismatch at C\[21\]\[35\]: expected .* xor 0x00001000"
expect_grep tileC out "tile (16, 32) recomputed on each of 8 SMs by sdcscan's exact kernel: all right"

# Extreme data (every element at its bound): each row's sums have a closed form, and hold it.
expect_exit 0 extreme "$SDCSCAN" run $GPU --set gemm.dtypes=int8 --set gemm.gpu_dtypes=int8,bf16,fp16 \
	--set gemm.gpu_data=extreme
for v in gpu-int8 gpu-bf16 gpu-fp16; do
	expect_grep extreme out "^gemm/$v  *gpu0  *OK"
done
# A tensor core whose accumulator is narrower than the bound assumes: the closed form says so.
FAKE_GPU_ACC_BITS=12 expect_exit 2 narrow "$SDCSCAN" run $GPU --set gemm.dtypes=int8 --set gemm.gpu_dtypes=bf16 \
	--set gemm.gpu_data=extreme
expect_grep narrow out "inexact-accumulation in C row 0: .*extreme data (every a = 127, b = 127, k = 64): row 0 sums to .*the closed form says 41290240 and 846449920"
# (n k a b = 40 * 64 * 127^2 and n(n+1)/2 k a b = 820 * 64 * 127^2)

# A hung GPU: UNKNOWN within the deadline, and the GPU gets no more work in this run.
start=$(date +%s)
FAKE_GPU_HANG=1 expect_exit 3 hang "$SDCSCAN" run $GPU --set gemm.dtypes=int8 --set gemm.gpu_dtypes=int8,bf16 \
	--set gemm.gpu_timeout=0.5
[ $(($(date +%s) - start)) -lt 15 ] || fail "hang: the run took more than 15 s with a 0.5 s GPU deadline"
expect_grep hang out "^gemm/int8  *gpu0  *UNKNOWN  gpu0 (0000:f0:00.0): .*did not finish within 0.5 s: the GPU is hung"
expect_grep hang out "^gemm/gpu-bf16  *gpu0  *UNKNOWN  not run: gpu0 failed earlier in this run"
expect_grep hang out "^gemm/int8  *cpu0  *OK"

# The device's operand generator against the host's twin: a difference is named at its element.
FAKE_GPU_GEN_BUG=1 expect_exit 2 genbug "$SDCSCAN" run $GPU --set gemm.dtypes=int8 --set gemm.gpu_dtypes=bf16 \
	--json "$TMP/genbug.json"
[ "$(json_get "$TMP/genbug.json" "sorted((f['target'], f['row'], f['col']) for f in r['findings'] if f['kind'] == 'operand-generation')")" = \
	"[('A', 1, 2), ('B', 0, 1)]" ] || fail "genbug: the generator's differences were not named at A[1][2] and B[0][1]"

# A new uncorrectable ECC error during the run: CRITICAL, named.
FAKE_NVML_NEW_UNC=1 expect_exit 2 ecc "$SDCSCAN" run $GPU --set gemm.dtypes=int8 --set gemm.gpu_dtypes=int8
expect_grep ecc out "^CRITICAL: gpu0 health: 1 new uncorrectable ECC error during the run"

# A sticky CUDA error: UNKNOWN naming the GPU and its bus, never OK, never CRITICAL.
FAKE_GPU_FAIL=multiply expect_exit 3 sticky "$SDCSCAN" run $GPU --set gemm.dtypes=int8 --set gemm.gpu_dtypes=int8
expect_grep sticky out "gpu0 (0000:f0:00.0): multiplying: cudaErrorIllegalAddress"
# (the node's CRITICAL from a run above stands, said on a "node:" line: not this run's verdict)
if grep -v "^node: stays CRITICAL" "$TMP/sticky.out" | grep -q "CRITICAL"; then fail "sticky: a platform failure reported as corruption"; fi

# Fewer GPUs than expected: WARNING naming how many are missing.
expect_exit 1 missing "$SDCSCAN" run $GPU --set gemm.dtypes=int8 --set gemm.gpu_dtypes=int8 --expect-gpus 3
expect_grep missing out "^WARNING: host health: 2 GPUs are missing: expected 3, found 1"

# --gpus: none leaves the GPUs out; an index that is not there is refused.
expect_exit 0 nogpus "$SDCSCAN" run $GPU --set gemm.gpu_dtypes=int8 --gpus none
if grep -v "^node: stays CRITICAL" "$TMP/nogpus.out" | grep -q "gpu0"; then fail "--gpus none: a GPU ran"; fi
expect_exit 3 badgpu "$SDCSCAN" run $GPU --gpus 4
expect_grep badgpu err "GPU 4 is not there (this host has 1 GPU: 0-0)"

# bench overhead --gpus: plain against checked and burn per type, every row judged against the
# 95% target as its own numbers say (the fake GPU's shares are whatever they are: 0 or 2).
"$SDCSCAN" bench overhead --gpus 0 --sizes 48x40x64 --seconds 0.2 --dtypes int8,bf16-fast --json "$TMP/bench.json" \
	>"$TMP/bench.out" 2>"$TMP/bench.err"
rc=$?
case $rc in 0 | 2) ;; *) fail "bench overhead --gpus: exit $rc"; cat "$TMP/bench.err" >&2 ;; esac
expect_grep bench out "^int8 *48x40x64 .* TOP/s .*%  *- *\(met\|MISSED\)$"
expect_grep bench out "^bf16-fast *48x40x64 .* TFLOP/s .*%  *- *\(met\|MISSED\)$"
# The fake GPU has no datasheet: no roofline, said rather than guessed (the estimates' arithmetic is
# tests/unit/test_roofline.c's). Its row checks count the bytes they load: the model's, exactly
# (48 rows of n_ext words; the fast class's two thresholds a row too).
expect_grep bench out "^roofline: no roofline for sdcscan fake GPU (CPU emulation)"
[ "$(grep -c "^ *bytes read per check: measured \([0-9]*\) (fake) vs model \1$" "$TMP/bench.out")" = 2 ] ||
	fail "bench overhead --gpus: the fake's check read other bytes than the model says: $(grep "bytes read" "$TMP/bench.out")"
check=$(python3 - "$TMP/bench.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
bad = []
rows = r["rows"]
if [x["type"] for x in rows] != ["int8", "bf16-fast"]:
    bad.append("rows %r" % [x["type"] for x in rows])
for x in rows:
    if not (x["plain"] > 0 and x["checked"] > 0 and x["burn"] > 0):
        bad.append("%s: rates %r" % (x["type"], x))
    if x["target_met"] != (x["checked_share"] >= r["target_share"] and x.get("design_met", True)):
        bad.append("%s: target_met %r at share %r" % (x["type"], x["target_met"], x["checked_share"]))
    if x["check_bytes_measured"] != x["check_bytes_model"] or "roofline_share" in x:
        bad.append("%s: check bytes %r, model %r" % (x["type"], x["check_bytes_measured"], x["check_bytes_model"]))
if r["targets_met"] != all(x["target_met"] for x in rows):
    bad.append("targets_met %r" % r["targets_met"])
if r["roofline"] != {"none": "no roofline for sdcscan fake GPU (CPU emulation)"}:
    bad.append("roofline %r" % r["roofline"])
print(" ".join(bad) or "ok")
PY
)
[ "$check" = ok ] || fail "bench overhead --gpus: $check"
expect_exit 3 benchdt "$SDCSCAN" bench overhead --dtypes int8
expect_grep benchdt err "it needs --gpus"

# bench minitrain --gpus: the exact class's bits against this CPU's, from the module's host twin
# (kernels/xops.h): the same; and a port of the exact GEMM that contracts one element is named at
# it. Training on the GPU beside a core: the same bits (the fake's speed is a core's, so the
# speed target may go either way); a GPU that rounds an update wrong differs from the first step.
# (The fake module cannot time a GPU's GEMM: that table is the GPU suite's.)
expect_exit 3 mtbench "$SDCSCAN" bench minitrain --gpus 0 --sizes 64 --seconds 0.3
expect_grep mtbench out "^bits: exact GEMM 67 x 131 x 77 (tile edges), every element against this CPU's: the same$"
expect_grep mtbench out "^bits: exp and log of 8192 values against this CPU's: the same$"
expect_grep mtbench out "^dlrm   same  *[0-9.]*  *[0-9.]*  *[0-9.]*x  \(met\|MISSED\)$"
expect_grep mtbench out "^xfmr   same  *[0-9.]*  *[0-9.]*  *[0-9.]*x  \(met\|MISSED\)$"
FAKE_GPU_MT_BUG=0 "$SDCSCAN" bench minitrain --gpus 0 --sizes 64 --seconds 0.3 >"$TMP/mttrain.out" 2>"$TMP/mttrain.err"
expect_grep mttrain out "^dlrm   DIFFER at 0  .*  MISSED$"
expect_grep mtbench err "the fake GPU module has no GPU to time"
expect_grep mtbench out "^roofline: no roofline for sdcscan fake GPU (CPU emulation)"
FAKE_GPU_XGEMM_BUG=1 "$SDCSCAN" bench minitrain --gpus 0 --sizes 64 >"$TMP/mtbug.out" 2>"$TMP/mtbug.err"
expect_grep mtbug out "^bits: exact GEMM 67 x 131 x 77 (tile edges), every element against this CPU's: DIFFERENT, C\[1\]\[2\]: expected 0x[0-9a-f]*, actual 0x[0-9a-f]*, xor 0x[0-9a-f]*  MISSED"
FAKE_GPU_XMATH_BUG=1 "$SDCSCAN" bench minitrain --gpus 0 --sizes 64 >"$TMP/mtexp.out" 2>"$TMP/mtexp.err"
expect_grep mtexp out "^bits: exp and log of 8192 values against this CPU's: DIFFERENT, exp(.*): CPU .*, GPU .*  MISSED"
expect_exit 3 mtjson "$SDCSCAN" bench minitrain --json "$TMP/mt.json"
expect_grep mtjson err "only the GPU benchmark (--gpus) writes a report"

# bench ring-hops --gpus: the GPU's hop checks against this CPU's bits (the module's host twin,
# probes/allreduce/ring_hd.h): the same; a join of the CRC's pieces that goes wrong is caught.
expect_exit 3 hops "$SDCSCAN" bench ring-hops --gpus 0
expect_grep hops out "^bits: CRC32C of 10 buffers (0 B to 16 MiB, odd lengths) against this CPU's: the same$"
expect_grep hops out "^bits: a hop's check (3000017 elements, 7 wrong) against this CPU's: the same count, sums and CRC32C$"
expect_grep hops err "the fake GPU module has no GPU to time"
FAKE_GPU_CRC_BUG=1 "$SDCSCAN" bench ring-hops --gpus 0 >"$TMP/hopsbug.out" 2>"$TMP/hopsbug.err"
expect_grep hopsbug out "^bits: CRC32C of 10 buffers .*: DIFFERENT, 257 bytes: expected 0x[0-9a-f]*, actual 0x[0-9a-f]*  MISSED"
expect_grep hopsbug out "^bits: a hop's check .*: DIFFERENT, CRC32C of the sums: CPU 0x[0-9a-f]*, GPU 0x[0-9a-f]*  MISSED"
FAKE_GPU_HOP_BUG=1 "$SDCSCAN" bench ring-hops --gpus 0 >"$TMP/hopcount.out" 2>"$TMP/hopcount.err"
expect_grep hopcount out "^bits: CRC32C of 10 buffers .*: the same$"
expect_grep hopcount out "^bits: a hop's check .*: DIFFERENT, wrong elements: CPU 7, GPU 6  MISSED"
expect_exit 3 hopsnogpu "$SDCSCAN" bench ring-hops
expect_grep hopsnogpu err "it needs --gpus"

# calibrate --gpus: e_max per fast type into the file's "gpus" section. The fake GPU rounds each
# element of C once to fp32 from an exact sum, and the check sums in double, so on positive data
# |E| / |checksum| <= 2 u32 (fp32, tf32), plus the bf16 rounding of the checksum columns
# (2^-9) for bf16-fast; e_max is the maximum plus 20%.
expect_exit 0 calgpu "$SDCSCAN" calibrate gemm --gpus all --gpu-sizes 64,128 --trials 200 -o "$TMP/cal.json"
check=$(python3 - "$TMP/cal.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
bad = []
if "key" in r or "precisions" in r:
    bad.append("a GPU calibration wrote CPU entries")
e = r["gpus"].get("sdcscan fake GPU (CPU emulation), fake cuBLASLt")
bound = {"fp32-fast": 2 * 2**-24, "tf32-fast": 2 * 2**-24, "bf16-fast": 2**-9 + 2 * 2**-24}
for p, b in bound.items():
    x = e["precisions"][p] if e else None
    if not x or not 0 < x["emax"] <= 1.2 * b or x["rows"] != 100 * 64 + 100 * 128:
        bad.append("%s: %r (bound %g)" % (p, x and (x["emax"], x["rows"]), 1.2 * b))
    elif abs(x["emax"] - 1.2 * max(s["max_relative_error"] for s in x["sizes"])) > 1e-9 * x["emax"]:
        bad.append("%s: e_max is not the maximum plus 20%%" % p)
print(" ".join(bad) or "ok")
PY
)
[ "$check" = ok ] || fail "calibrate --gpus: $check"
# The burn's fast types read it; the CPU's fast classes find no CPU entry and say so.
expect_exit 0 calrun "$SDCSCAN" run $GPU --set gemm.dtypes=fp32-fast --set gemm.gpu_dtypes=bf16-fast \
	--set gemm.calibration="$TMP/cal.json" --json "$TMP/calrun.json"
case "$(json_get "$TMP/calrun.json" "r['run']['environment']['gemm']['gpu-bf16-fast']['emax_source']")" in
"calibrated: "*"for sdcscan fake GPU (CPU emulation), fake cuBLASLt from $TMP/cal.json") ;;
*) fail "calibrate --gpus: the burn did not use it" ;;
esac
case "$(json_get "$TMP/calrun.json" "r['run']['environment']['gemm']['fp32-fast']['emax_source']")" in
"built-in: "*"calibrates GPUs only)") ;;
*) fail "calibrate --gpus: the CPU's fast class did not fall back to its built-in e_max" ;;
esac
# A burn deeper than the calibration went (K=128, the burn's 256) scales its e_max as the default
# grows with K (V-ABFT Table 7's accumulation, 5e-9 sqrt(K) + 1.2e-7), and says so.
expect_exit 0 caldeep "$SDCSCAN" run $GPU --set gemm.dtypes=int8 --set gemm.gpu_dtypes=fp32-fast --set gemm.gpu_k=256 \
	--set gemm.calibration="$TMP/cal.json" --json "$TMP/caldeep.json"
check=$(python3 - "$TMP/cal.json" "$TMP/caldeep.json" <<'PY'
import json, math, sys
cal = json.load(open(sys.argv[1]))["gpus"]["sdcscan fake GPU (CPU emulation), fake cuBLASLt"]["precisions"]["fp32-fast"]
env = json.load(open(sys.argv[2]))["run"]["environment"]["gemm"]["gpu-fp32-fast"]
acc = lambda k: 5e-9 * math.sqrt(k) + 1.2e-7
want = cal["emax"] * acc(256) / acc(128)
bad = []
if abs(env["emax"] / want - 1) > 1e-9:
    bad.append("e_max %r, want %r (the calibration's %r x %.4f)" % (env["emax"], want, cal["emax"], acc(256) / acc(128)))
if ", measured to K=128: x%.4g for K=256 as the default grows" % (acc(256) / acc(128)) not in env["emax_source"]:
    bad.append("source: %s" % env["emax_source"])
print(" ".join(bad) or "ok")
PY
)
[ "$check" = ok ] || fail "a burn deeper than its calibration: $check"
# A CPU calibration into the same file keeps the GPUs' entries, and the reverse.
expect_exit 0 calcpu "$SDCSCAN" calibrate gemm --cpus 0 --sizes 64 --trials 100 -o "$TMP/cal.json"
[ "$(json_get "$TMP/cal.json" "sorted(r['gpus']) + sorted(r['precisions'])")" = \
	"['sdcscan fake GPU (CPU emulation), fake cuBLASLt', 'fp32', 'fp64']" ] || fail "calibrate: the GPUs' entries were lost"
expect_exit 0 calgpu2 "$SDCSCAN" calibrate gemm --gpus 0 --gpu-sizes 64 --gpu-precisions fp32-fast --trials 100 \
	-o "$TMP/cal.json"
[ "$(json_get "$TMP/cal.json" "sorted(r['precisions']) + sorted(r['gpus']['sdcscan fake GPU (CPU emulation), fake cuBLASLt']['precisions'])")" = \
	"['fp32', 'fp64', 'fp32-fast']" ] || fail "calibrate --gpus: the CPU's entries were lost, or the GPU entry not replaced"

# campaign gemm --gpus: V-ABFT's Table 5 form on the GPU. The thresholds come from the device's
# own row statistics at Table 7's H100 e_max, so they must be the paper's published V-ABFT T
# (FP32, n = 128 and 256) within 3%; no row's threshold may be below its |E|.
"$SDCSCAN" campaign gemm --gpus 0 --tightness 128,256 --tightness-trials 3 --json "$TMP/ctight.json" \
	>"$TMP/ctight.out" 2>"$TMP/ctight.err"
rc=$?
case $rc in 0 | 2) ;; *) fail "campaign --gpus: exit $rc"; cat "$TMP/ctight.err" >&2 ;; esac
expect_grep ctight out "^target: V-ABFT's FP32 range (7-20x, Table 5) at every size: .*: \(met\|MISSED\)$"
check=$(python3 - "$TMP/ctight.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
bad = []
paper = {128: 9.19e-5, 256: 2.09e-4}
t = r["gpu_tightness"]["types"]
for x in t["fp32-fast"]:
    if abs(x["mean_threshold"] / paper[x["n"]] - 1) > 0.03:
        bad.append("n=%d: T %g, the paper's %g" % (x["n"], x["mean_threshold"], paper[x["n"]]))
for name, rows in t.items():
    for x in rows:
        if x["rows"] != 3 * x["n"] or x["false_positive_rows"] != 0 or not x["min_ratio"] >= 1:
            bad.append("%s n=%d: %r" % (name, x["n"], x))
tight = [7 <= x["tightness"] <= 20 for x in t["fp32-fast"]]
if r["targets_met"] != all(tight):
    bad.append("targets_met %r with tightness %r" % (r["targets_met"], [x["tightness"] for x in t["fp32-fast"]]))
print(" ".join(bad) or "ok")
PY
)
[ "$check" = ok ] || fail "campaign --gpus: $check"

# gpu_duration: the GPU-only variants have their own time, so a GPU does not shorten the CPUs'.
expect_exit 0 gpudur "$SDCSCAN" run $GPU --set gemm.iterations=0 --set gemm.dtypes=int8 --cpus 0 --gpus none \
	--set gemm.duration=1.5 --set gemm.gpu_duration=2 --set gemm.gpu_dtypes=bf16,fp16 --json "$TMP/gpudur0.json"
expect_grep gpudur out "about 2 s"
expect_exit 0 gpudur1 "$SDCSCAN" run $GPU --set gemm.iterations=0 --set gemm.dtypes=int8 --cpus 0 \
	--set gemm.duration=1.5 --set gemm.gpu_duration=2 --set gemm.gpu_dtypes=bf16,fp16 --json "$TMP/gpudur1.json"
expect_grep gpudur1 out "about 4 s"
[ "$(json_get "$TMP/gpudur1.json" "[x['variant'] for x in r['results'] if x['device'] == 'cpu0' and x['seconds'] >= 1.4]")" = \
	"['int8']" ] || fail "gpu_duration: the CPU's variant lost its time to the GPU's"

# No module: the CPUs are scanned as always, and the report says why no GPU was tested.
SDCSCAN_GPU_MODULE="$TMP/none.so" expect_exit 0 nomodule "$SDCSCAN" run $GPU --json "$TMP/nomodule.json"
case "$(json_get "$TMP/nomodule.json" "r['host'].get('gpu_note', '')")" in
*"none.so cannot be loaded"*) ;;
*) fail "no module: the report does not say why no GPU was tested" ;;
esac
FAKE_GPU_COUNT=0 expect_exit 0 nodevice "$SDCSCAN" run $GPU --json "$TMP/nodevice.json"
[ "$(json_get "$TMP/nodevice.json" "r['host'].get('gpu_note', '')")" = "no CUDA-capable device is detected (fake module)" ] ||
	fail "no device: gpu_note"
# NCCL with no launcher: one process over every GPU of the host (the fake does NCCL's part in
# memory between its GPUs). Every path clean; a fault of each kind named at its GPU; a stuck GPU
# named within the deadline and a few seconds; one GPU, or no NCCL, says why.
NC="--probe allreduce --set allreduce.bytes=65536 --no-color"
FAKE_GPU_COUNT=4 expect_exit 0 nclocal "$SDCSCAN" run $NC --duration 4 --json "$TMP/nclocal.json"
[ "$(json_get "$TMP/nclocal.json" "r['run']['environment']['nccl']['shape'], r['run']['environment']['nccl']['members'], len(r['run']['environment']['nccl']['paths']), 'busbw_gb_s' in r['run']['environment']['nccl']['ring']['checked_ring'], sorted(x['variant'] for x in r['results'])")" = \
	"one process, every GPU of the host 4 5 True ['nccl', 'nccl-ring']" ] || fail "nccl, one process: report"
# (the default paths force no LL128: forced where the platform does not enable it, it can corrupt)
[ "$(json_get "$TMP/nclocal.json" "sorted(r['run']['environment']['nccl']['paths'])")" = \
	"['auto', 'ring/ll', 'ring/simple', 'tree/ll', 'tree/simple']" ] || fail "nccl, one process: default paths"
# A path NCCL refuses at its first collective (its initialisation went through): said in the
# report as refused, left out, the rest runs clean (it was a worker error, UNKNOWN)
FAKE_GPU_COUNT=2 FAKE_GPU_NCCL_REFUSE_LATE=ring/ll128 expect_exit 0 nclate "$SDCSCAN" run $NC --set allreduce.variants=nccl \
	--set allreduce.nccl_paths=auto,ring/ll128,tree/simple --duration 2 --json "$TMP/nclate.json"
[ "$(json_get "$TMP/nclate.json" "r['run']['environment']['nccl']['paths']['ring/ll128']['at'], r['run']['environment']['nccl']['paths']['ring/ll128']['gpus_refusing'], sorted(r['run']['environment']['nccl']['paths']['tree/simple'])")" = \
	"first collective 2 ['all_reduce']" ] || fail "nccl, a path refused at its first collective: report"
FAKE_GPU_COUNT=4 expect_exit 2 nclocalh "$SDCSCAN" run $NC --duration 4 --inject allreduce/nccl-ring:H:iter=1,row=1,bit=9
expect_grep nclocalh out "link-corrupt at H\[1\]\[2\]: .* xor 0x00000200; .*from GPU 1 (0000:f1:00.0) to GPU 2 (0000:f2:00.0) failed"
FAKE_GPU_COUNT=4 expect_exit 2 nclocalc "$SDCSCAN" run $NC --duration 4 --inject allreduce/nccl-ring:C:iter=3,row=2,bit=25
expect_grep nclocalc out "sender-compute at C\[2\]\[[0-9]*\]: .* xor 0x02000000; .*GPU 2 (0000:f2:00.0) sent a chunk whose CRC32C holds"
FAKE_GPU_COUNT=4 expect_exit 2 nclocalv "$SDCSCAN" run $NC --duration 4 --inject allreduce/nccl:V:iter=2,row=3,col=7,bit=3
expect_grep nclocalv out "collective-wrong at V\[3\]\[7\]: .* xor 0x00000008; ncclAllReduce on path auto gave GPU 3 (0000:f3:00.0) 1 wrong"
FAKE_GPU_COUNT=3 FAKE_GPU_NCCL_BUG=2,R,ring,LL expect_exit 2 nclocalbug "$SDCSCAN" run $NC --set allreduce.variants=nccl --duration 2
expect_grep nclocalbug out "collective-wrong at V\[2\]\[1\]: .* xor 0x00200000; ncclReduceScatter on path ring/ll gave GPU 2"
start=$(date +%s)
FAKE_GPU_COUNT=2 FAKE_GPU_NCCL_HANG=1 expect_exit 3 nclocalhang "$SDCSCAN" run $NC --set allreduce.timeout=3 --duration 30
[ $(( $(date +%s) - start )) -le 25 ] || fail "nccl, one process, a stuck GPU: took $(( $(date +%s) - start )) s"
expect_grep nclocalhang out "UNKNOWN  GPU 1 (0000:f1:00.0) is stuck: ncclAllReduce on path auto did not finish within 3 s"
# A stuck path on healthy GPUs: its communicators are aborted before the GPUs are pinged (a ping
# queued behind NCCL's spinning kernels waits too), so the path is named, not a GPU
FAKE_GPU_COUNT=2 FAKE_GPU_NCCL_STUCK=1 expect_exit 3 nclocalstuck "$SDCSCAN" run $NC --set allreduce.variants=nccl \
	--set allreduce.timeout=3 --duration 30
expect_grep nclocalstuck out "UNKNOWN  ncclAllReduce on path auto did not finish within 3 s: the path is stuck"
grep -q "is stuck: ncclAllReduce" "$TMP/nclocalstuck.out" && fail "nclocalstuck: a healthy GPU named stuck"
FAKE_GPU_COUNT=4 expect_exit 3 nclocalone "$SDCSCAN" run $NC --gpus 2 --duration 2
expect_grep nclocalone out "1 GPU selected: NCCL between GPUs needs 2 or more"
FAKE_GPU_COUNT=4 FAKE_GPU_NCCL=0 expect_exit 3 nclocalnone "$SDCSCAN" run $NC --duration 2
expect_grep nclocalnone out "or NCCL between this host's GPUs, which cannot be loaded here"

# minitrain on GPUs: the selftest's golden (built in), two GPUs and a core training the same model.
MT="--probe minitrain --set minitrain.seed=1 --set minitrain.steps=12 --set minitrain.checkpoint=4 \
--set minitrain.dlrm_rows=256 --set minitrain.dlrm_batch=32 --set minitrain.xfmr_seq=16 --set minitrain.xfmr_ff=64 \
--cpus 0 --duration 2"
FAKE_GPU_COUNT=2 expect_exit 0 mtclean "$SDCSCAN" run $MT --json "$TMP/mtclean.json"
for d in gpu0 gpu1; do
	for v in dlrm xfmr; do
		expect_grep mtclean out "^minitrain/$v  *$d  *OK .*kernel exact CUDA, golden: built-in golden minitrain-selftest"
	done
done
check=$(json_get "$TMP/mtclean.json" "' '.join('%s:%s' % (v, len({x['work_digest']['sha256'] for x in r['results'] if x['variant'] == v})) for v in ('dlrm', 'xfmr')) + ' ' + str(sorted({x['device'] for x in r['results']}))")
[ "$check" = "dlrm:1 xfmr:1 ['cpu0', 'gpu0', 'gpu1']" ] || fail "mtclean: the core's and the GPUs' work digests differ: $check"
# GPU 1 rounds every SGD update's element 0 wrong: the golden names the first element (against a
# replay on a core), the vote names gpu1, nothing else is named.
FAKE_GPU_COUNT=2 FAKE_GPU_MT_BUG=1 expect_exit 2 mtbug "$SDCSCAN" run $MT --set minitrain.models=dlrm --json "$TMP/mtbug.json"
expect_grep mtbug out "gpu1 iteration 1: golden-divergence at W\[0\]\[0\]: .* xor 0x00000001; step 1: .*first bottom.W0\[0\]\[0\]"
expect_grep mtbug out "a replay on this GPU ALSO differs from step 1: persistent (the element is against a replay on a CPU core"
check=$(json_get "$TMP/mtbug.json" "sorted({f['device'] for f in r['findings'] if f['device'] != 'host'}), sorted({f['kind'] for f in r['findings'] if f['device'] == 'gpu1'})")
[ "$check" = "['gpu1'] ['device-disagreement', 'golden-divergence']" ] || fail "mtbug: findings on and kinds: $check"
# Every fault kind in GPU memory, on gpu0: found at its element (the selftest's faults, on the GPU).
FAKE_GPU_COUNT=1 expect_exit 2 mtfaults "$SDCSCAN" run $MT --json "$TMP/mtfaults.json" \
	--inject minitrain/dlrm:W:iter=3,device=gpu0 --inject minitrain/dlrm:G:iter=5,tensor=grad.top.U0,bit=27,device=gpu0 \
	--inject minitrain/dlrm:O:iter=7,tensor=adagrad.emb1,device=gpu0 \
	--inject minitrain/xfmr:W:iter=2,tensor=attn.Wv,bit=30,device=gpu0 --inject minitrain/xfmr:G:iter=4,bit=28,device=gpu0 \
	--inject minitrain/xfmr:O:iter=6,tensor=adam.v.mlp.W1,device=gpu0 \
	--inject minitrain/xfmr:A:iter=8,tensor=act.Q,bit=30,device=gpu0 --inject minitrain/xfmr:A:iter=9,tensor=act.S,bit=31,device=gpu0
check=$(located "$TMP/mtfaults.json")
[ "$check" = ok ] || fail "mtfaults: $check"
# (one core and one GPU: the vote has no majority to name either, so only the goldens name gpu0)
check=$(json_get "$TMP/mtfaults.json" "len(r['injections']), sorted({f['device'] for f in r['findings'] if f['device'] != 'host'})")
[ "$check" = "8 ['gpu0']" ] || fail "mtfaults: injections and devices named: $check"
# A GPU that stops: its copy back waits out gpu_timeout, the GPU is lost (UNKNOWN), the core goes on.
FAKE_GPU_COUNT=1 FAKE_GPU_MT_HANG=0 expect_exit 3 mthang "$SDCSCAN" run $MT --set minitrain.models=dlrm \
	--set minitrain.gpu_timeout=2
expect_grep mthang out "gpu0 (0000:f0:00.0): step [0-9]*: copying from the device: a copy from the GPU did not finish within 2 s"
expect_grep mthang out "^minitrain/dlrm  *cpu0  *OK"

# embbag on GPUs (the fake runs probes/embbag/embbag_hd.h in embbag.cu's shape, threads in
# reverse): the core's and both GPUs' work digests are one per variant (the same bits in both
# classes).
EB="--probe embbag --set embbag.rows=8192 --set embbag.batches=4 --set embbag.iterations=16 --cpus 0"
FAKE_GPU_COUNT=2 expect_exit 0 ebclean "$SDCSCAN" run $EB --json "$TMP/ebclean.json"
for v in 8bit-d64 8bit-fast-d64 4bit-d64 4bit-fast-d64; do
	for d in gpu0 gpu1; do
		expect_grep ebclean out "^embbag/$v  *$d  *OK .*Mlookup/s kernel CUDA"
	done
done
check=$(json_get "$TMP/ebclean.json" "' '.join('%s:%d' % (v, len({x['work_digest']['sha256'] for x in r['results'] if x['variant'] == v})) for v in sorted({x['variant'] for x in r['results']})) + ' ' + str(sorted({x['device'] for x in r['results']}))")
[ "$check" = "4bit-d64:1 4bit-fast-d64:1 8bit-d64:1 8bit-fast-d64:1 ['cpu0', 'gpu0', 'gpu1']" ] ||
	fail "ebclean: the core's and the GPUs' work digests differ: $check"
# GPU 1 rounds column 3's multiply and add apart: the same values in the exact class, other low bits
# in the fast one, below any threshold: the vote names gpu1 there, and nothing else is named.
FAKE_GPU_COUNT=2 FAKE_GPU_EB_BUG=1 expect_exit 2 ebbug "$SDCSCAN" run $EB --json "$TMP/ebbug.json"
check=$(json_get "$TMP/ebbug.json" "sorted({(f['device'], f['variant'], f['kind']) for f in r['findings']})")
[ "$check" = "[('gpu1', '4bit-fast-d64', 'device-disagreement'), ('gpu1', '8bit-fast-d64', 'device-disagreement')]" ] ||
	fail "ebbug: findings: $check"
# T and R in gpu0's memory: each found at its element (a row at rest by the lookups or the GPU's
# sweep, which passes rows 1024..1535 in iteration 2: a scale changed is in the lookups' sums and
# their expectation alike, so only the sweep sees it; an output before its check on the GPU), and
# only gpu0 named.
FAKE_GPU_COUNT=1 expect_exit 2 ebfaults "$SDCSCAN" run $EB --json "$TMP/ebfaults.json" \
	--inject embbag/8bit-d64:T:iter=1,device=gpu0 --inject embbag/4bit-fast-d64:T:iter=2,col=66,device=gpu0 \
	--inject embbag/8bit-fast-d64:R:iter=1,bit=30,device=gpu0 --inject embbag/4bit-d64:R:iter=3,bit=0,device=gpu0 \
	--inject embbag/8bit-fast-d64:T:iter=2,row=1200,col=64,bit=20,device=gpu0 \
	--inject embbag/4bit-d64:T:iter=4,row=3000,col=5,bit=2,device=gpu0
check=$(located "$TMP/ebfaults.json")
[ "$check" = ok ] || fail "ebfaults: $check"
check=$(json_get "$TMP/ebfaults.json" "len(r['injections']), sorted({f['device'] for f in r['findings'] if f['device'] != 'host'})")
[ "$check" = "6 ['gpu0']" ] || fail "ebfaults: injections and devices named: $check"
check=$(json_get "$TMP/ebfaults.json" "[(f['iteration'], f['kind']) for f in r['findings'] if f['row'] == 1200 and f['col'] == 64 and 'scale changed in memory; found by the sweep at rest on the GPU' in f['detail']]")
[ "$check" = "[(2, 'table-corrupt')]" ] || fail "ebfaults: the scale changed at rest, found by the GPU's sweep: $check"
# A GPU that stops: its third lookup waits out gpu_timeout, the GPU is lost (UNKNOWN), the core goes on.
FAKE_GPU_COUNT=1 FAKE_GPU_EB_HANG=0 expect_exit 3 ebhang "$SDCSCAN" run $EB --set embbag.formats=8bit \
	--set embbag.classes=exact --set embbag.gpu_timeout=1
expect_grep ebhang out "gpu0 (0000:f0:00.0): iteration 2: the lookups did not finish within 1 s"
expect_grep ebhang out "^embbag/8bit-d64  *cpu0  *OK"
# bench embbag --gpus: the bits against this CPU's portable kernel the same (the fake's speed is a
# core's: the overhead target may go either way); a GPU whose column 3 rounds apart: DIFFERENT.
"$SDCSCAN" bench embbag --gpus 0 --rows 8192 --dims 32 --pooling 10 --seconds 0.2 --json "$TMP/ebbench.json" \
	>"$TMP/ebbench.out" 2>"$TMP/ebbench.err"
expect_grep ebbench out "^8bit    32    40    48  .* same  *[0-9]*  \(met\|MISSED\)$"
expect_grep ebbench out "^4bit    32    20    24  .* same  *[0-9]*  \(met\|MISSED\)$"
[ "$(json_get "$TMP/ebbench.json" "[x['differing'] for x in r['rows']]")" = "[0, 0]" ] || fail "ebbench: report rows"
expect_grep ebbench out "^roofline: no roofline for sdcscan fake GPU (CPU emulation)"
[ "$(json_get "$TMP/ebbench.json" "r['roofline']['none']")" = "no roofline for sdcscan fake GPU (CPU emulation)" ] ||
	fail "ebbench: the report's roofline"
FAKE_GPU_EB_BUG=0 "$SDCSCAN" bench embbag --gpus 0 --rows 8192 --dims 32 --formats 8bit --pooling 10 --seconds 0.2 \
	>"$TMP/ebbenchbug.out" 2>"$TMP/ebbenchbug.err"
expect_grep ebbenchbug out "^8bit    32    40    48  .* DIFFERENT  *[0-9]*  MISSED$"
expect_grep ebbenchbug out "first bag [0-9]* column 3: CPU .*, GPU "
finish
