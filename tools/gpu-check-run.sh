# shellcheck shell=sh disable=SC2154
# tools/gpu-check.sh run: the stages, their sizes at each scale, the time budget and OUT/summary.txt
# (sourced by gpu-check.sh, in a checkout and in the bundle alike; its help says what each stage
# does and how long it should take).

# The stages, most valuable first (the default list), one a line: NAME|FULL|REHEARSAL|PROCESSES|BASIS.
# FULL: seconds on one H100 at full scale, from what the stage runs: PROCESSES sdcscan processes
# at about 3 s each (a CUDA context and cuBLASLt's 540 MB loaded: an assumption until a GPU's info
# stage measures it, "one process's fixed cost" in info.log), the run's own timed seconds (a
# --duration, a bench's --seconds), the GPU's work at its sizes by a roofline (H100 SXM: 990
# dense TFLOP/s bf16/fp16, 1979 TOP/s int8, 67 FP32, 3.35 TB/s; nvidia.com/en-us/data-center/h100),
# and the CPU's share as the fake runs it (the rehearsal's REHEARSAL: measured, 8 fake GPUs on 2
# cores). GPU_CHECK_ESTIMATES="STAGE=SECONDS ..." overrides some (for tests of the budget).
stage_table() {
	cat <<'TABLE'
info|10|2|4|sdcscan version (timed: one process's fixed cost), nvidia-smi -q, 2 tiny CPU-only MPI runs
selftest|45|20|1|every probe's faults on a core and the GPU; the CPU's share dominates, the GPU's burns < 1 s
gemm|30|20|2|32 iterations of 7 types at 2048^3 (3.9 TOP: < 0.1 s) and 4 at k = 32768 on extreme data; CPU < 2 s
minitrain|40|25|2|the goldens: --duration 20 (timed), then the faults: --duration 5 (timed)
bench-minitrain|20|5|1|20 training steps and the bits at tile edges, then n = 1024 and 2048 x 2 contenders x 0.5 s (timed; 512 misses 30% by design: 64 blocks, 132 SMs)
embbag|40|20|2|16 rounds at 4,000,000 rows: a core's lookups (~15 s) and the table's fill; then 16 rounds with faults
bench-ring-hops|15|3|1|CRC32C and the hop check up to 64 MiB: GPU < 0.1 s at 3.35 TB/s, the CPU's at ~10 GB/s ~7 s
sm-replay|12|5|1|4 iterations at 512x512x512 bf16, one tile replayed on each of the 132 SMs (< 0.1 s)
quick|50|20|1|the quick profile, --duration 30 (timed) and gemm.gpu_duration=12
calibrate|45|5|1|3000 trials of fp32, tf32 and bf16: 9000 GEMMs of 1024 x 1024 by K = 1024, 4096, 32768 (fp32 on the CUDA cores ~3 s), their operands drawn and checked
tightness|25|3|1|V-ABFT's table: 5 sizes x 100 trials, each a GEMM and its fp64 reference on the CPU
tightness-cal|25|3|1|the same with the calibration's e_max
bench-overhead|40|10|1|6 types x 2 sizes x 3 contenders x 0.5 s (timed, 18 s) and each size's operands drawn
bench-embbag|25|5|1|4 dims x 3 contenders x 0.5 s (timed) and a table at 4,000,000 rows
nccl|90|20|4|2 GPUs or more: checked NCCL runs (25 s timed) and bench nccl (60 s); one GPU: 1 s, it says why
sanitizer|75|5|1|memcheck on selftest --cpus 0 --gpus 0: 45 s, its kernels (< 1 s) 10-100x slower
sanitizer-race|150|5|6|racecheck and synccheck on short gemm, embbag and minitrain runs (their kernels; cuBLASLt's left out)
suite|300|110|16|the whole gpu suite (tests/gpu/gpu_suite.sh, steps 1-11): not in the default list
TABLE
}
DEFAULT_STAGES="info selftest gemm minitrain bench-minitrain embbag bench-ring-hops sm-replay quick calibrate
tightness tightness-cal bench-overhead bench-embbag nccl sanitizer sanitizer-race"

# est STAGE: the stage's estimate at this scale (above), in seconds
est() {
	for o in ${GPU_CHECK_ESTIMATES:-}; do
		[ "${o%%=*}" = "$1" ] && { echo "${o#*=}"; return; }
	done
	if [ "$1" = nccl ] && [ "${gpus%% *}" -lt 2 ] 2>/dev/null; then
		echo 1 # (it says why it does not run)
		return
	fi
	stage_table | awk -F'|' -v n="$1" -v r="$([ "$scale" = rehearsal ] && echo 3 || echo 2)" '$1 == n { print $r; f = 1 } END { if (!f) print 0 }'
}

# plan [--budget SECONDS]: each default stage, its estimate and basis, and where the budget ends
plan() {
	budget=480 scale=full gpus=1
	[ "${1:-}" = --budget ] && budget=${2:?}
	echo "The default stages at full scale on one H100, most valuable first; the first call (--budget $budget)"
	echo "runs those that end inside the budget by their estimates, the next call the rest."
	t=0 call=1
	for s in $DEFAULT_STAGES; do
		e=$(est "$s")
		[ $((t + e)) -gt "$budget" ] && { call=$((call + 1)); t=0; }
		t=$((t + e))
		printf 'call %d %-16s %4d s (ends at %3d s)  %s\n' "$call" "$s" "$e" "$t" "$(stage_table | awk -F'|' -v n="$s" '$1 == n { print "processes " $4 ": " $5 }')"
	done
}

# sz FULL REHEARSAL: the value for this scale
sz() { if [ "$scale" = rehearsal ]; then echo "$2"; else echo "$1"; fi; }

# The info stage: what runs where. Fails when a library cannot be resolved, no GPU can be
# tested, or the bundled Open MPI cannot start ranks.
stage_info() {
	rc=0
	cat "$B/MANIFEST"
	echo
	unset SDCSCAN_BUNDLE_DIR SDCSCAN_BUNDLE_LIBPATH
	bundle_env "$B"
	# (the gpu suite's checks read the JSON reports with python3)
	command -v python3 >/dev/null 2>&1 || { echo "FAIL: no python3 here: the gpu suite's stages need it (apt-get install python3)"; rc=1; }
	echo "== sdcscan version"
	t0=$(date +%s%N)
	v=$("$S" version) || rc=1
	echo "$v"
	echo "one process's fixed cost here (sdcscan version: its start, the module and the GPUs' discovery; a run adds contexts and cuBLASLt): $((($(date +%s%N) - t0) / 1000000)) ms"
	case $(echo "$v" | sed -n 's/^gpus: //p') in
	none:* | "") echo "FAIL: no GPU can be tested: $(echo "$v" | sed -n 's/^gpus: //p')"; rc=1 ;;
	esac
	echo
	echo "== the NVIDIA driver: ${SDCSCAN_BUNDLE_DRIVER_VERSION:+(SDCSCAN_BUNDLE_DRIVER_VERSION) }$(bundle_driver_version)"
	echo "CUDA's forward compatibility (\$CUDA_HOME/compat): $BUNDLE_COMPAT"
	echo
	echo "== where each library resolved (the bundled loader's --library-path, then the system's ld.so.cache)"
	echo "library path: $SDCSCAN_BUNDLE_LIBPATH"
	printf '%s' "$BUNDLE_FOUND"
	for so in libcuda.so.1 libnvidia-ml.so.1; do
		hit=""
		for dir in $(echo "$SDCSCAN_BUNDLE_LIBPATH" | tr ':' ' '); do
			[ -e "$dir/$so" ] && { hit="$dir/$so"; break; }
		done
		[ -z "$hit" ] && hit=$(/sbin/ldconfig -p 2>/dev/null | sed -n "s/^[[:space:]]*$so (.*) => //p" | head -n 1)
		case $hit in
		"$B"/*) echo "$so: $hit (the bundle: fake)" ;;
		"${BUNDLE_COMPAT_DIR:-//}"/*) echo "$so: $hit (CUDA's forward compatibility)" ;;
		"") echo "$so: NOT FOUND (the driver installs it)" ;;
		*) echo "$so: $hit (the driver)" ;;
		esac
	done
	for f in "$B/bin/sdcscan.bin" "$B/bin/sdcscan-gpu.so"; do
		echo "-- $(basename "$f") (ld.so --list)"
		l=$("$B/lib/ld-linux-x86-64.so.2" --library-path "$SDCSCAN_BUNDLE_LIBPATH" --list "$f" 2>&1)
		echo "$l"
		if echo "$l" | grep -Eq 'not found|error while loading'; then
			echo "FAIL: $(basename "$f") needs a library that is not here: a CUDA $BUNDLE_CUDA_MAJOR toolkit's" \
				"(CUDA_HOME=...; or pip's nvidia-cublas), or a bundle made with --carry-cuda"
			rc=1
		fi
	done
	cs=$(sanitizer_path)
	echo "compute-sanitizer: ${cs:-$SANITIZER_NONE}"
	if command -v nvidia-smi >/dev/null 2>&1; then
		echo
		echo "== nvidia-smi -q"
		nvidia-smi -q
		L=$(nvidia-smi -L 2>/dev/null)
		gpus_compared "$(echo "$L" | grep -c '^GPU ')" "$(echo "$v" | sed -n 's/^gpus: \([0-9]*\) .*/\1/p')" \
			"$(echo "$L" | grep -c '^ *MIG ')" || rc=1
	fi
	if [ -d "$B/mpi" ]; then
		echo
		echo "== the bundled Open MPI: $(cat "$B/mpi/VERSION")"
		"$B/mpi/bin/ompi_info" --path all || rc=1
		# ranks from the bundled mpirun, and a singleton (what SLURM_NTASKS alone starts)
		tiny="run --probe gemm --gpus none --no-state --set gemm.m=16 --set gemm.n=16 --set gemm.k=16 --set gemm.iterations=2 --set gemm.dtypes=int8"
		echo "-- mpirun -np 2 sdcscan $tiny"
		# shellcheck disable=SC2086
		mpirun --allow-run-as-root --oversubscribe -np 2 "$S" $tiny || { echo "FAIL: the bundled mpirun could not start 2 ranks"; rc=1; }
		echo "-- SLURM_NTASKS=1 sdcscan $tiny (MPI_Init as a singleton)"
		# shellcheck disable=SC2086
		SLURM_NTASKS=1 "$S" $tiny || { echo "FAIL: MPI_Init as a singleton failed"; rc=1; }
	fi
	return $rc
}

# gpus_compared LISTED SEEN [MIGS]: the module sees every GPU the driver lists (nvidia-smi -L's GPU
# lines; SEEN empty: none), or the line says FAIL (a GPU CUDA cannot open would go untested,
# unsaid). Under CUDA_VISIBLE_DEVICES, or with MIG instances (CUDA enumerates those, not the
# GPUs), the two differ by design: not compared.
gpus_compared() {
	if [ -n "${CUDA_VISIBLE_DEVICES+set}" ]; then
		echo "GPUs: the driver lists $1, sdcscan sees ${2:-none} (CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES: not compared)"
	elif [ "${3:-0}" != 0 ]; then
		echo "GPUs: the driver lists $1 with $3 MIG instances, sdcscan sees ${2:-none} (MIG: not compared)"
	elif [ "$1" != "${2:-0}" ]; then
		echo "FAIL: the driver lists $1 GPUs (nvidia-smi -L), sdcscan sees ${2:-none}"
		return 1
	else
		echo "GPUs: the driver lists $1, sdcscan sees $2"
	fi
}

SANITIZER_NONE="none found (PATH, the toolkit, pip's nvidia packages, Nsight's folders)"

# sanitizer_path: "PATH (where)" of the first compute-sanitizer found: PATH, the toolkit
# ($CUDA_HOME, /usr/local/cuda*, /opt/cuda*, the HPC SDK's), pip's nvidia packages (nvidia/cu13/bin
# and nvidia/cuda_nvcc/bin, as cuda-python's cuda_pathfinder looks: supported_nvidia_binaries.py),
# and Nsight's folders (/opt/nvidia/nsight-*, pip's nvidia/nsight_compute/bin); nothing if none.
sanitizer_path() {
	c=$(command -v compute-sanitizer 2>/dev/null) && [ -x "$c" ] && { echo "$c (PATH)"; return; }
	for c in "${CUDA_HOME:-/usr/local/cuda}"/bin/compute-sanitizer "${CUDA_HOME:-/usr/local/cuda}"/compute-sanitizer/compute-sanitizer \
		$(ls -d /usr/local/cuda /usr/local/cuda-* /opt/cuda* /opt/nvidia/hpc_sdk/Linux_x86_64/*/cuda/* 2>/dev/null | sort -r -V |
			sed 's|$|/bin/compute-sanitizer|'); do
		[ -x "$c" ] && { echo "$c (toolkit)"; return; }
	done
	for site in ${VIRTUAL_ENV:+$VIRTUAL_ENV/lib/python3*/site-packages} ${CONDA_PREFIX:+$CONDA_PREFIX/lib/python3*/site-packages} \
		/usr/local/lib/python3*/dist-packages /usr/lib/python3/dist-packages /usr/local/lib/python3*/site-packages \
		"${HOME:-/root}"/.local/lib/python3*/site-packages /opt/conda/lib/python3*/site-packages; do
		for c in "$site"/nvidia/cu13/bin/compute-sanitizer "$site"/nvidia/cuda_nvcc/bin/compute-sanitizer \
			"$site"/nvidia/cuda_sanitizer_api/compute-sanitizer/compute-sanitizer; do
			[ -x "$c" ] && { echo "$c (pip)"; return; }
		done
		c=$site/nvidia/nsight_compute/bin/compute-sanitizer
		[ -x "$c" ] && { echo "$c (Nsight)"; return; }
	done
	for c in $(ls -d /opt/nvidia/nsight-compute/* /opt/nvidia/nsight-systems/* /usr/local/NVIDIA-Nsight-Compute* 2>/dev/null | sort -r -V); do
		for f in "$c"/compute-sanitizer "$c"/bin/compute-sanitizer "$c"/target/linux-desktop-glibc_2_11_3-x64/compute-sanitizer; do
			[ -x "$f" ] && { echo "$f (Nsight)"; return; }
		done
	done
}

# sanitized TOOL EXPECT COMMAND...: COMMAND under compute-sanitizer's TOOL (plain where $cs is
# empty), which should exit EXPECT (0 clean; 2 where it plants a fault). Status 0 passed; 1 failed:
# a finding (the sanitizer's exit 9, or a nonzero ERROR or RACECHECK SUMMARY) or the wrong exit;
# 3 the sanitizer refused: an "========= Error:" of its own, no finding and no summary of checks
# made ($refused says it); 4 it checked nothing (no summary line: its injection did not reach the
# program through the bundle's wrapper), which is no pass. $cs_exclude, where set, is passed as
# --kernel-name-exclude; a sanitizer that does not take it runs the command again without it.
sanitized() {
	tool=$1 expect=$2
	shift 2
	echo "-- ${cs:+compute-sanitizer --tool $tool ${cs_exclude:+--kernel-name-exclude '$cs_exclude' }}$* (expect exit $expect)"
	if [ -z "$cs" ]; then
		"$@"
		[ $? = "$expect" ]
		return
	fi
	"$cs" --tool "$tool" --target-processes all --error-exitcode 9 ${cs_exclude:+--kernel-name-exclude "$cs_exclude"} "$@" \
		>"$out/sanitizer.cmd.log" 2>&1
	r=$?
	l=$out/sanitizer.cmd.log
	cat "$l"
	if [ -n "${cs_exclude:-}" ] && ! grep -Eq '^========= (ERROR|RACECHECK) SUMMARY: ' "$l" && grep -q 'kernel-name-exclude' "$l"; then
		echo "-- this compute-sanitizer does not take --kernel-name-exclude: again without it (NVIDIA's kernels checked too)"
		cs_exclude=""
		sanitized "$tool" "$expect" "$@"
		return
	fi
	[ $r = 9 ] && return 1
	grep -Eq '^========= (ERROR SUMMARY: [1-9]|RACECHECK SUMMARY: [1-9])' "$l" && return 1
	if ! grep -Eq '^========= (ERROR|RACECHECK) SUMMARY: 0 ' "$l"; then
		e=$(grep -m 1 '^========= Error: ' "$l")
		[ -n "$e" ] && { refused=$(echo "$e" | sed 's/^========= *//' | cut -c1-120); return 3; }
		refused="no summary of checks made (exit $r): nothing was checked"
		return 4
	fi
	[ $r = "$expect" ]
}

# compute-sanitizer on this GPU: "sanitizer", memcheck on a short selftest (every probe's GPU
# kernels, faults planted); "sanitizer-race", racecheck and synccheck on short gemm, embbag and
# minitrain runs. Where there is none, the module is the fake, or the sanitizer refuses this
# device, the same commands run without it, and the claim is "not tested here" with why.
stage_sanitizer() {
	found=$(sanitizer_path)
	cs=${found% (*}
	echo "compute-sanitizer: ${found:-$SANITIZER_NONE}"
	why="" refused=""
	[ "${BUNDLE_FAKE:-0}" = 1 ] && why="the fake module runs no GPU kernel for compute-sanitizer to check"
	[ -z "$cs" ] && why="no compute-sanitizer here (PATH, the toolkit, pip's nvidia packages, Nsight's folders)"
	rc=0
	if [ "$1" = memcheck ]; then
		sanitized memcheck 0 "$S" selftest --cpus 0 --gpus 0 --gpu-timeout 600 --json "$out/sanitizer-selftest.json" || rc=$?
	else
		G=$(sz 256 64)
		small="--probe gemm --gpus 0 --cpus 0 --set gemm.dtypes=int8 --set gemm.m=64 --set gemm.n=64 --set gemm.k=256
--set gemm.gpu_dtypes=int8,bf16,fp32-fast --set gemm.gpu_m=$G --set gemm.gpu_n=$G --set gemm.gpu_k=$((2 * G))
--set gemm.iterations=3 --set gemm.gpu_timeout=600"
		# cuBLASLt's kernels are NVIDIA's to check (its names: nvjet on Hopper, xmma, cutlass; the
		# option and its regex= key: Compute Sanitizer's release notes, 2023.1); ours are all k_*
		cs_exclude="regex=nvjet|xmma|cutlass|cublas|gemv|splitK"
		for tool in racecheck synccheck; do
			[ $rc -ge 3 ] && break
			# shellcheck disable=SC2086
			sanitized $tool 2 "$S" run $small --inject gemm/gpu-int8:C:iter=1,row=5,col=9,bit=4 || rc=$?
			# embbag's kernels (the expectation warp's tree in shared memory) and minitrain's
			# shellcheck disable=SC2046
			sanitized $tool 2 "$S" run --probe embbag --gpus 0 --cpus 0 --set embbag.rows=$(sz 65536 16384) --set embbag.batches=4 \
				--set embbag.iterations=3 --set embbag.gpu_timeout=600 --inject embbag/8bit-fast-d64:R:iter=1,device=gpu0 || rc=$?
			sanitized $tool 0 "$S" run --probe minitrain --gpus 0 --cpus 0 --set minitrain.models=dlrm --set minitrain.iterations=2 \
				--set minitrain.gpu_timeout=600 || rc=$?
		done
		cs_exclude=""
	fi
	[ $rc = 3 ] && why="the sanitizer refused this device ($refused)"
	[ $rc = 4 ] && why="compute-sanitizer ran but reached no program ($refused)"
	if [ -n "$why" ] && [ $rc = 1 ]; then
		echo "FAILED: its commands failed (run without the sanitizer: $why)" >"$out/$stage.result"
	elif [ -n "$why" ]; then
		echo "not tested here: $why ($([ $rc -ge 3 ] && echo "at its first command" ||
			echo "the commands ran ${cs:+under $cs }and passed"))" >"$out/$stage.result"
	fi
	[ $rc != 1 ]
}

# suite_not_tested LOG: the first assertion the gpu suite's log says it could not make here (its
# "NOT TESTED here" list at the end, the step's number dropped), or nothing
suite_not_tested() {
	sed -n '/^NOT TESTED here/,/^[^ ]/p' "$1" | grep '^  - ' | head -n 1 | sed 's/^  - [0-9]*\. *//'
}

# NCCL between the GPUs, one rank a GPU, where there are 2 or more: the gpu suite's step 8 (every
# path clean, a fault named at its rank) and bench nccl under the bundled mpirun.
stage_nccl() {
	n=$("$S" version | sed -n 's/^gpus: \([0-9]*\) .*/\1/p')
	if [ "${n:-0}" -lt 2 ]; then
		echo "not tested here: one GPU (${n:-0} here; NCCL takes no two ranks on one GPU, and the vote across GPUs needs two)" >"$out/nccl.result"
		return 0
	fi
	GPU_SUITE_KEEP=$out/json sh "$B/tests/gpu/gpu_suite.sh" "$S" 8 >"$out/nccl.suite.log" 2>&1
	r=$?
	cat "$out/nccl.suite.log"
	[ $r = 0 ] || return 1
	t=$(suite_not_tested "$out/nccl.suite.log")
	[ -n "$t" ] && { echo "not tested here: $t" >"$out/nccl.result"; return 0; }
	# shellcheck disable=SC2046
	mpirun --allow-run-as-root --oversubscribe -np "$n" "$S" bench nccl --gpus all --json "$out/bench-nccl.json" \
		$(sz "" "--max-bytes 4194304 --reps 2")
}

# The command of one stage (stages run as commands, so that timeout can stop their whole group).
# Stages that are steps of the gpu suite run those steps only; their reports land in OUT/json.
stage_cmd() {
	c="$self/gpu-check.sh __stage"
	suite="env GPU_SUITE_KEEP=$out/json sh $B/tests/gpu/gpu_suite.sh $S"
	case $1 in
	info) echo "$c info" ;;
	suite) echo "$suite" ;;
	selftest) echo "$suite 2" ;;
	gemm) echo "$suite 1 3" ;;
	minitrain) echo "$suite 9" ;;
	embbag) echo "$suite 10" ;;
	sm-replay) echo "$suite 4" ;;
	quick) echo "$S run --profile quick --json $out/quick.json$(sz " --duration 30 --set gemm.gpu_duration=12" " --duration 5 --set gemm.gpu_duration=1 \
--set gemm.m=64 --set gemm.n=64 --set gemm.k=256 --set gemm.gpu_m=64 --set gemm.gpu_n=64 --set gemm.gpu_k=128 \
--set embbag.rows=65536")" ;;
	calibrate) echo "$S calibrate gemm --gpus all --trials $(sz 3000 200)$(sz "" " --gpu-sizes 16,32") -o $out/calibration.json" ;;
	tightness) echo "$S campaign gemm --gpus 0 --json $out/tightness.json$(sz "" " --tightness 64,128 --tightness-trials 3")" ;;
	tightness-cal) echo "$S campaign gemm --gpus 0 --calibration $out/calibration.json --json $out/tightness-calibrated.json$(sz "" " --tightness 64,128 --tightness-trials 3")" ;;
	bench-overhead) echo "$S bench overhead --gpus 0 --json $out/bench.json$(sz " --seconds 0.5" " --sizes 32 --seconds 0.1")" ;;
	bench-minitrain) echo "$S bench minitrain --gpus 0 --json $out/bench-minitrain.json --sizes $(sz 1024,2048 64,96) --seconds $(sz 0.5 0.3)" ;;
	bench-ring-hops) echo "$S bench ring-hops --gpus 0 --json $out/bench-ring-hops.json --max-bytes $(sz 67108864 4194304)" ;;
	bench-embbag) echo "$S bench embbag --gpus 0 --json $out/bench-embbag.json$(sz " --seconds 0.5" " --dims 32,64 --rows 16384 --pooling 10 --seconds 0.1")" ;;
	nccl) echo "$c nccl" ;;
	sanitizer) echo "$c sanitizer" ;;
	sanitizer-race) echo "$c sanitizer-race" ;;
	esac
}

# The claims of README.md's GPU section, one a line: ID|STAGES|CLAIM. A claim is tested when
# every stage named ran on a GPU and passed; "gpu-check.sh claims" prints the IDs (the rehearsal
# checks README's table against them).
claim_table() {
	cat <<'TABLE'
module|info|the GPU module loads, sees every GPU, and its CUDA libraries and Open MPI resolve
faults-found|selftest|every GPU check finds and locates its planted faults (selftest)
exact-bits|gemm|int8, bf16, fp16 and fp32 exact on the tensor cores: the CPU's bits, and exact at the deepest k
vabft-clean|gemm|fp32, tf32 and bf16 on real data clean under V-ABFT's thresholds
sm-replay|sm-replay|a failing tile recomputed on every SM, a transient fault told from a persistent one
minitrain-goldens|minitrain|minitrain's shipped goldens bit for bit on every GPU; faults in GPU memory located
exact-class-bits|bench-minitrain|the exact class's GEMM, exp, log and 20 training steps: the CPU's bits
embbag-bits|embbag|embbag's lookups the core's bits on every GPU; faults in GPU memory located
hop-bits|bench-ring-hops|the hop checks (CRC32C, received sums) the CPU's bits
quick-clean|quick|the quick profile OK on a healthy GPU, NVML health recorded before and after
calibration|calibrate tightness tightness-cal|a GPU model's e_max calibration, and V-ABFT's tightness table with it
gemm-speed|bench-overhead|the checked GEMM at least 95% of plain cuBLASLt
exact-gemm-speed|bench-minitrain|the exact GEMM at least 30% of cuBLAS sgemm
embbag-speed|bench-embbag|embbag's check at most 10% over the plain lookups
nccl|nccl|NCCL's paths checked and a fault in a collective named at its rank and element (2 GPUs or more)
sanitizer|sanitizer sanitizer-race|compute-sanitizer finds no memory error, race or barrier error in the kernels
TABLE
}

# judge STAGE RC: the stage's result line on stdout; status 0 if it passed (or cannot be judged
# without a GPU and says why), 1 if not.
judge() {
	log=$out/$1.log
	if [ -f "$out/$1.result" ]; then
		r=$(cat "$out/$1.result")
		echo "$r"
		case $r in *FAIL*) return 1 ;; esac
		return 0
	fi
	case $2 in
	124 | 137) echo "CUT SHORT: $cut_why"; return 1 ;;
	esac
	# wrong bits fail a stage wherever it runs (the fake's timings are not judged, its bits are):
	# the benches' bits lines and columns, rows that failed their check while timed, wrong elements
	bits='^bits: .*(DIFFER|differ)|  DIFFER|DIFFERENT|elements or checks differ|rows failed their check|wrong elements'
	if grep -Eq "$bits" "$log"; then
		echo "FAILED (exit $2): bits differ: $(grep -Em 1 "$bits" "$log" | sed 's/  */ /g' | cut -c1-120)"
		return 1
	fi
	fake_note=""
	if [ "${BUNDLE_FAKE:-0}" = 1 ]; then
		case $1 in
		calibrate | tightness* | bench-*) fake_note=" (its figures are the fake's, not a GPU's: GPU run owed)" ;;
		*) fake_note=" on the fake module (it says nothing of a GPU: GPU run owed)" ;;
		esac
	fi
	case $1 in suite | selftest | gemm | minitrain | embbag | sm-replay) is_suite=1 ;; *) is_suite=0 ;; esac
	if [ $is_suite = 1 ] && [ "$2" = 0 ]; then
		# the suite's own account at its end: what it could not assert here, what the fake cannot judge
		t=$(suite_not_tested "$log")
		n=$(sed -n '/^NOT JUDGED/,$p' "$log" | grep -c '^  - ')
		if [ -n "$t" ]; then
			echo "not tested here: $t"
		else
			echo "ok$fake_note$([ "$n" -gt 0 ] && echo "; $n assertions say nothing of a GPU even as a rehearsal (the log's end)")"
		fi
		return 0
	fi
	case $1:$2 in
	*:0) echo "ok$fake_note"; return 0 ;;
	esac
	# bench minitrain's training speed (the GPU faster than one core) is its own target, which no
	# README claim makes: missed alone (the bits held: above), the exact GEMM's speed claim holds
	case $1:$2 in bench-minitrain:2)
		if ! sed -n '/^GEMM, square n/,$p' "$log" | grep -q 'MISSED' && [ "${BUNDLE_FAKE:-0}" = 0 ]; then
			echo "ok: the bits the same, the exact GEMM's speed met; MISSED only bench minitrain's training target," \
				"the GPU slower than one core ($(grep -E '^(dlrm|xfmr) .*MISSED' "$log" | awk '{ printf "%s%s %s", s, $1, $(NF - 1); s = ", " }')): no README claim"
			return 0
		fi ;;
	esac
	if [ "${BUNDLE_FAKE:-0}" = 1 ]; then
		m=$(grep -m 1 'the fake GPU module has no GPU to time' "$log")
		if [ -n "$m" ] && [ "$2" = 3 ] && [ "${1#bench-}" != "$1" ]; then
			echo "NOT JUDGED on the fake: its bits held; its timings cannot be made (${m#sdcscan: error: })"
			return 0
		fi
		if [ "$2" = 2 ] && ! grep -q 'false positive rows: MISSED' "$log"; then
			case $1 in
			tightness*)
				echo "NOT JUDGED on the fake: no false positive row (met); V-ABFT's 7-20x range is a GPU's rounding, not the fake's: $(grep -m 1 "7-20x" "$log" | sed 's/.*: \([0-9]* of [0-9]* sizes\).*/\1 in range/')"
				return 0
				;;
			bench-* | nccl)
				echo "NOT JUDGED on the fake: its speed targets ($(grep -c 'MISSED' "$log") MISSED) are a GPU's; no bits differ"
				return 0
				;;
			esac
		fi
	fi
	# V-ABFT's 7-20x tightness is the paper's range (its own Table 5 sits on both edges; with a
	# calibration's e_max it does not apply): a figure to read, not a failure. A false positive is.
	case $1:$2 in tightness*:2)
		if ! grep -q 'false positive rows: MISSED' "$log"; then
			echo "ok: no false positive row; V-ABFT's 7-20x range: $(grep -m 1 "7-20x" "$log" | sed 's/.*: \([0-9]* of [0-9]* sizes\).*/\1 in range/') (a figure, not judged)"
			return 0
		fi ;;
	esac
	case $1:$2 in
	bench-*:2 | nccl:2 | tightness*:2) echo "MISSED A TARGET (exit 2): $(grep -m 1 'MISSED' "$log" | cut -c1-120)" ;;
	*)
		f=$(grep -m 1 '^FAIL' "$log")
		echo "FAILED (exit $2): $(echo "${f:-$(grep -v '^ *$' "$log" | tail -n 1)}" | cut -c1-160)"
		;;
	esac
	return 1
}

# claim_state STAGES: one claim's state from its stages' results in OUT/.stages, the worst of
# them: FAILED, not tested here (why), not run yet (a later call), rehearsed (passed on the fake:
# it says nothing of a GPU), tested. A speed claim is judged by its bench's targets, a bits claim
# by its bits (a bench that missed a speed target still proved its bits).
claim_state() {
	awk -F'|' -v want=" $1 " -v id="$2" -v fake="${BUNDLE_FAKE:-0}" '
	function rank(r) {
		if (r ~ /^(FAILED|CUT SHORT|SKIPPED)/) return 5
		if (r ~ /^MISSED/) return id ~ /bits$/ ? (fake ? 2 : 1) : 5
		if (r ~ /^not tested here/) return 4
		if (r ~ /^(pending|not started|RUNNING|not run)/ || r == "") return 3
		return fake ? 2 : 1
	}
	index(want, " " $1 " ") { seen++; k = rank($2); if (k > worst) { worst = k; why = $2 } }
	END {
		if (!seen) { print "not run yet: not in this call"; exit }
		if (worst == 5) print "FAILED: " why
		else if (worst == 4) print why
		else if (worst == 3) print "not run yet: the next call"
		else if (worst == 2) print "rehearsed on the fake module only: says nothing of a GPU"
		else print "tested"
	}' "$out/.stages"
}

# The claims section of the summary, and the verdict: "ok" only when every claim was tested.
claims_summary() {
	echo "claims of README.md's GPU section on this machine:"
	nt=0 nn=0 nf=0 nr=0 nl=0 all=0
	while IFS='|' read -r id st text; do
		c=$(claim_state "$st" "$id")
		all=$((all + 1))
		case $c in
		tested) nt=$((nt + 1)); tag=tested ;;
		FAILED*) nf=$((nf + 1)); tag=FAILED ;;
		"not tested here"*) nn=$((nn + 1)); tag="NOT TESTED" ;;
		rehearsed*) nr=$((nr + 1)); tag=rehearsed ;;
		*) nl=$((nl + 1)); tag="not run yet" ;;
		esac
		printf '  %-12s %-18s %s\n' "$tag" "$id" "$text"
		[ "$tag" = tested ] || printf '  %-12s %-18s   (%s: %s)\n' "" "" "$st" "$c"
	done <<EOF2
$(claim_table)
EOF2
	echo "claims: $all: $nt tested, $nf failed, $nn not tested here, $nr rehearsed on the fake only, $nl not run yet"
	if [ $nf -gt 0 ]; then
		echo "verdict: FAILED: $nf of $all claims failed"
	elif [ $nt = "$all" ]; then
		echo "verdict: ok: every claim tested on this machine's GPUs"
	else
		echo "verdict: INCOMPLETE: $((all - nt)) of $all claims not tested on a GPU here (none failed)"
	fi
}

# OUT/summary.txt from OUT/.stages (NAME|RESULT|SECONDS|ESTIMATE lines), written whole each time a
# stage starts or ends: a call cut off by its time limit leaves the running stage as RUNNING and
# the command for the next call.
summary() {
	{
		echo "sdcscan gpu-check run, scale $scale, budget ${budget:-none}, started $started on $(hostname)"
		sed -n '1,3p' "$B/MANIFEST"
		echo "GPUs: $gpus"
		echo
		printf '%-16s %6s %6s  %s\n' stage time est result
		while IFS='|' read -r n r t e; do
			printf '%-16s %6s %6s  %s\n' "$n" "${t:+${t}s}" "${e}s" "$r"
		done <"$out/.stages"
		echo
		claims_summary
		echo
		left=$(awk -F'|' '$2 ~ /^(RUNNING|not started|CUT SHORT|pending)/ { printf "%s ", $1 }' "$out/.stages")
		if [ -z "$left" ]; then
			echo "next call: none: every stage ran"
		else
			echo "next call: $0 run${budget:+ --budget $budget} --scale $scale $out ${left% }"
			echo "  (into the same folder: this summary keeps what this call proved; a stage still RUNNING above was"
			echo "  cut off with the call; tightness-cal reads calibrate's calibration.json there)"
		fi
		echo "total: $(($(date +%s) - t_start)) s; failed stages: $failed"
	} >"$out/summary.txt.tmp" && mv "$out/summary.txt.tmp" "$out/summary.txt"
}

# set_stage NAME RESULT [SECONDS] (a '|' or a line break in RESULT, from a command's own words,
# would shift .stages' columns: each becomes '/' or a space)
set_stage() {
	awk -F'|' -v n="$1" -v r="$2" -v t="${3:-}" 'BEGIN { OFS = "|"; gsub(/\|/, "/", r); gsub(/\n/, " ", r) }
		$1 == n { $2 = r; $3 = t } { print }' \
		"$out/.stages" >"$out/.stages.tmp" && mv "$out/.stages.tmp" "$out/.stages"
	summary
}

run() {
	budget="" scale=full
	while [ $# -gt 0 ]; do
		case $1 in
		--budget) budget=${2:?}; shift ;;
		--scale) scale=${2:?}; shift ;;
		-*) echo "gpu-check: run: unknown option $1" >&2; return 2 ;;
		*) break ;;
		esac
		shift
	done
	case $scale in full | rehearsal) ;; *) echo "gpu-check: --scale full or rehearsal" >&2; return 2 ;; esac
	out=${1:?usage: gpu-check.sh run [--budget SECONDS] [--scale full|rehearsal] OUT_DIR [STAGE...]}
	shift
	mkdir -p "$out" && out=$(cd "$out" && pwd) || return 1
	if [ -f "$self/../MANIFEST" ]; then
		B=$(cd "$self/.." && pwd) # this script inside the bundle
	else
		B=$(cd "$self/.." && pwd)/gpu-bundle
		if [ ! -x "$B/bin/sdcscan" ]; then
			if [ -f "$B.tar.gz" ]; then
				tar -C "$(dirname "$B")" -xzf "$B.tar.gz" || return 1
			elif [ -f "$B.tar.xz" ]; then
				tar -C "$(dirname "$B")" -xJf "$B.tar.xz" || return 1
			else
				echo "gpu-check: no $B, $B.tar.gz or $B.tar.xz" >&2
				return 1
			fi
		fi
	fi
	S=$B/bin/sdcscan
	# the runs' saved reports and lock come back with the logs, not into the machine's /var/lib
	export SDCSCAN_STATE_DIR="$out/state" SDCSCAN_GPU_CHECK_SCALE="$scale" GPU_CHECK_BUNDLE="$B" GPU_CHECK_OUT="$out"
	unset SDCSCAN_BUNDLE_DIR SDCSCAN_BUNDLE_LIBPATH
	bundle_env "$B"
	stages=""
	# shellcheck disable=SC2086
	[ $# = 0 ] && set -- $DEFAULT_STAGES
	for s in "$@"; do
		case $s in
		bench) stages="$stages bench-overhead bench-minitrain bench-ring-hops bench-embbag" ;;
		*)
			[ -n "$(stage_cmd "$s")" ] || { echo "gpu-check: no stage '$s' (gpu-check.sh plan lists them)" >&2; return 2; }
			stages="$stages $s"
			;;
		esac
	done
	mkdir -p "$out/json"
	started=$(date '+%F %T') t_start=$(date +%s) failed=0
	gpus=$("$S" version 2>&1 | sed -n 's/^gpus: //p')
	# a later call into the same OUT_DIR keeps the earlier calls' rows of the stages it does not run
	if [ -f "$out/.stages" ]; then
		awk -F'|' -v run=" $stages " 'index(run, " " $1 " ") == 0' "$out/.stages" >"$out/.stages.kept"
		mv "$out/.stages.kept" "$out/.stages"
	else
		: >"$out/.stages"
	fi
	for s in $stages; do echo "$s|pending||$(est "$s")" >>"$out/.stages"; done
	summary
	stop=""
	for s in $stages; do
		rm -f "$out/$s.result"
		e=$(est "$s") used=$(($(date +%s) - t_start))
		if [ -n "$stop" ] || { [ -n "$budget" ] && [ $((used + e)) -gt "$budget" ]; }; then
			[ -z "$stop" ] && stop="$s"
			set_stage "$s" "not started: would end past the budget (${used} s used, estimate ${e} s, budget ${budget} s)"
			continue
		fi
		if [ "$s" = tightness-cal ] && [ ! -f "$out/calibration.json" ]; then
			set_stage "$s" "not run: no calibration.json (calibrate did not run in this call)" 0
			continue
		fi
		set_stage "$s" "RUNNING since $(date +%T) (if this stays, the call's time ran out: cut short)"
		t0=$(date +%s)
		echo "\$ $(stage_cmd "$s")" >"$out/$s.log"
		# a stage may take 4 times its estimate and 2 minutes more (a hung GPU or NCCL must not
		# spend the whole lease), and no longer than the budget left
		lim=$((4 * e + 120)) cut_why="still running after $((4 * e + 120)) s, 4 times its estimate and 120 s: hung?"
		if [ -n "$budget" ] && [ $((budget - used)) -lt $lim ]; then
			lim=$((budget - used)) cut_why="still running at the end of the budget (${budget} s)"
		fi
		# shellcheck disable=SC2046
		timeout -k 10 $lim $(stage_cmd "$s") >>"$out/$s.log" 2>&1
		rc=$?
		r=$(judge "$s" $rc) || failed=$((failed + 1))
		set_stage "$s" "$r" $(($(date +%s) - t0))
		case $r in CUT*) stop=$s ;; esac
	done
	cat "$out/summary.txt"
	[ $failed = 0 ]
}

# gpu-check.sh __stage NAME: a stage that is a function here, run as a command (stage_cmd)
run_stage() {
	B=$GPU_CHECK_BUNDLE out=$GPU_CHECK_OUT scale=$SDCSCAN_GPU_CHECK_SCALE S=$B/bin/sdcscan
	bundle_env "$B"
	[ -r "$B/bin/bundle.conf" ] && . "$B/bin/bundle.conf"
	case $1 in
	info) stage_info ;;
	sanitizer) stage=sanitizer; stage_sanitizer memcheck ;;
	sanitizer-race) stage=sanitizer-race; stage_sanitizer race ;;
	nccl) stage_nccl ;;
	esac
}
