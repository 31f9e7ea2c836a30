# shellcheck shell=sh disable=SC2154
# tools/gpu-check.sh run: the stages, their sizes at each scale, the time budget and OUT/summary.txt
# (sourced by gpu-check.sh, in a checkout and in the bundle alike; its help says what each stage
# does and how long it should take).

# est STAGE: seconds the stage should take: full scale on one H100 (its sizes at the H100's rates,
# plus the fixed costs of each command measured on the fake: process and module start, the CPU's
# share), or the rehearsal on the fake module with 8 GPUs on 2 cores (measured).
# GPU_CHECK_ESTIMATES="STAGE=SECONDS ..." overrides some (for tests of the budget).
est() {
	for o in ${GPU_CHECK_ESTIMATES:-}; do
		[ "${o%%=*}" = "$1" ] && { echo "${o#*=}"; return; }
	done
	if [ "$1" = bench-nccl ] && [ "${gpus%% *}" -lt 2 ] 2>/dev/null; then
		echo 1 # (it says why it does not run)
		return
	fi
	if [ "$scale" = rehearsal ]; then
		case $1 in
		info) echo 2 ;; suite) echo 110 ;; selftest) echo 65 ;; quick) echo 15 ;; calibrate) echo 5 ;;
		tightness | tightness-cal) echo 2 ;; bench-overhead) echo 10 ;; bench-minitrain) echo 3 ;;
		bench-ring-hops) echo 2 ;; bench-embbag) echo 5 ;; bench-nccl) echo 15 ;; sanitizer) echo 3 ;;
		*) echo 0 ;;
		esac
		return
	fi
	case $1 in
	info) echo 10 ;; suite) echo 240 ;; selftest) echo 45 ;; quick) echo 110 ;; calibrate) echo 45 ;;
	tightness | tightness-cal) echo 25 ;; bench-overhead) echo 90 ;; bench-minitrain) echo 50 ;;
	bench-ring-hops) echo 30 ;; bench-embbag) echo 100 ;; bench-nccl) echo 60 ;; sanitizer) echo 240 ;;
	*) echo 0 ;;
	esac
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
	echo "== sdcscan version"
	v=$("$S" version) || rc=1
	echo "$v"
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
	echo "compute-sanitizer: ${cs:-none}"
	if command -v nvidia-smi >/dev/null 2>&1; then
		echo
		echo "== nvidia-smi -q"
		nvidia-smi -q
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

sanitizer_path() {
	for c in "$(command -v compute-sanitizer 2>/dev/null)" "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer" \
		/usr/local/cuda/bin/compute-sanitizer; do
		[ -n "$c" ] && [ -x "$c" ] && { echo "$c"; return; }
	done
}

# compute-sanitizer's memcheck, racecheck and synccheck on short gemm, embbag and minitrain runs;
# where there is none (or the module is the fake), the same runs without it: their arguments are
# right, the sanitizer's checks are not made, and the result says so.
stage_sanitizer() {
	cs=$(sanitizer_path)
	why=""
	[ "${BUNDLE_FAKE:-0}" = 1 ] && why="the fake module runs no GPU kernel for compute-sanitizer to check"
	[ -z "$cs" ] && why="no compute-sanitizer (CUDA's, on PATH or in \$CUDA_HOME/bin)"
	tools="memcheck racecheck synccheck"
	[ -n "$why" ] && tools=none
	G=$(sz 256 64)
	small="--probe gemm --gpus 0 --cpus 0 --set gemm.dtypes=int8 --set gemm.m=64 --set gemm.n=64 --set gemm.k=256
--set gemm.gpu_dtypes=int8,bf16,fp32-fast --set gemm.gpu_m=$G --set gemm.gpu_n=$G --set gemm.gpu_k=$((2 * G))
--set gemm.iterations=3 --set gemm.gpu_timeout=600"
	rc=0
	for tool in $tools; do
		echo "== $tool"
		pre="$cs --tool $tool --target-processes all --error-exitcode 9"
		[ "$tool" = none ] && pre=""
		# shellcheck disable=SC2086
		$pre "$S" run $small --inject gemm/gpu-int8:C:iter=1,row=5,col=9,bit=4 || [ $? = 2 ] || rc=1
		# embbag's kernels (the expectation warp's tree in shared memory) and minitrain's
		# shellcheck disable=SC2086,SC2046
		$pre "$S" run --probe embbag --gpus 0 --cpus 0 --set embbag.rows=$(sz 65536 16384) --set embbag.batches=4 \
			--set embbag.iterations=3 --set embbag.gpu_timeout=600 \
			--inject embbag/8bit-fast-d64:R:iter=1,device=gpu0 || [ $? = 2 ] || rc=1
		# shellcheck disable=SC2086
		$pre "$S" run --probe minitrain --gpus 0 --cpus 0 --set minitrain.models=dlrm --set minitrain.iterations=2 \
			--set minitrain.gpu_timeout=600 || rc=1
	done
	if [ -n "$why" ]; then
		echo "skipped: $why (its runs' commands ran without it$([ $rc = 0 ] && echo ", and passed" || echo ", and FAILED"))" \
			>"$out/sanitizer.result"
	fi
	return $rc
}

# bench nccl under the bundled mpirun, one rank a GPU, where there are 2 or more.
stage_nccl() {
	n=$("$S" version | sed -n 's/^gpus: \([0-9]*\) .*/\1/p')
	if [ "${n:-0}" -lt 2 ]; then
		echo "not run: needs 2 GPUs or more (${n:-0} here; NCCL takes no two ranks on one GPU)" >"$out/bench-nccl.result"
		return 0
	fi
	# shellcheck disable=SC2046
	mpirun --allow-run-as-root --oversubscribe -np "$n" "$S" bench nccl --gpus all --json "$out/bench-nccl.json" \
		$(sz "" "--max-bytes 4194304 --reps 2")
}

# The command of one stage (stages run as commands, so that timeout can stop their whole group).
stage_cmd() {
	c="$self/gpu-check.sh __stage"
	case $1 in
	info) echo "$c info" ;;
	suite) echo "sh $B/tests/gpu/gpu_suite.sh $S" ;;
	selftest) echo "$S selftest --json $out/selftest.json" ;;
	quick) echo "$S run --profile quick --json $out/quick.json$(sz "" " --duration 5 --set gemm.gpu_duration=1 \
--set gemm.m=64 --set gemm.n=64 --set gemm.k=256 --set gemm.gpu_m=64 --set gemm.gpu_n=64 --set gemm.gpu_k=128 \
--set embbag.rows=65536")" ;;
	calibrate) echo "$S calibrate gemm --gpus all --trials $(sz 3000 200)$(sz "" " --gpu-sizes 16,32") -o $out/calibration.json" ;;
	tightness) echo "$S campaign gemm --gpus 0 --json $out/tightness.json$(sz "" " --tightness 64,128 --tightness-trials 3")" ;;
	tightness-cal) echo "$S campaign gemm --gpus 0 --calibration $out/calibration.json --json $out/tightness-calibrated.json$(sz "" " --tightness 64,128 --tightness-trials 3")" ;;
	bench-overhead) echo "$S bench overhead --gpus 0 --json $out/bench.json$(sz "" " --sizes 32 --seconds 0.1")" ;;
	bench-minitrain) echo "$S bench minitrain --gpus 0 --json $out/bench-minitrain.json$(sz "" " --sizes 64,96 --seconds 0.3")" ;;
	bench-ring-hops) echo "$S bench ring-hops --gpus 0 --json $out/bench-ring-hops.json$(sz "" " --max-bytes 4194304")" ;;
	bench-embbag) echo "$S bench embbag --gpus 0 --json $out/bench-embbag.json$(sz "" " --dims 32,64 --rows 16384 --pooling 10 --seconds 0.1")" ;;
	bench-nccl) echo "$c nccl" ;;
	sanitizer) echo "$c sanitizer" ;;
	esac
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
	124 | 137) echo "CUT SHORT: still running at the end of the budget (${budget} s)"; return 1 ;;
	esac
	# wrong bits fail a stage wherever it runs (the fake's timings are not judged, its bits are):
	# the benches' bits lines and columns, rows that failed their check while timed, wrong elements
	bits='^bits: .*(DIFFER|differ)|  DIFFER|DIFFERENT|elements or checks differ|rows failed their check|wrong elements'
	if grep -Eq "$bits" "$log"; then
		echo "FAILED (exit $2): bits differ: $(grep -Em 1 "$bits" "$log" | sed 's/  */ /g' | cut -c1-120)"
		return 1
	fi
	fake_note=""
	case $1 in calibrate | tightness* | bench-*)
		[ "${BUNDLE_FAKE:-0}" = 1 ] && fake_note=" (its figures are the fake's, not a GPU's: GPU run owed)" ;;
	esac
	case $1:$2 in
	suite:0)
		n=$(sed -n '/^NOT JUDGED/,$p' "$log" | grep -c '^  - ')
		echo "ok$([ "$n" -gt 0 ] && echo "; $n assertions held but are NOT JUDGED on the fake (suite.log's end)")"
		return 0
		;;
	suite:77) echo "SKIPPED: no GPU could be tested ($(grep -m 1 '^SKIP' "$log"))"; return 1 ;;
	*:0) echo "ok$fake_note"; return 0 ;;
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
			bench-*)
				echo "NOT JUDGED on the fake: its speed targets ($(grep -c 'MISSED' "$log") MISSED) are a GPU's; no bits differ"
				return 0
				;;
			esac
		fi
	fi
	case $1:$2 in
	bench-*:2 | tightness*:2) echo "MISSED A TARGET (exit 2): $(grep -m 1 'MISSED' "$log" | cut -c1-120)" ;;
	*)
		f=$(grep -m 1 '^FAIL' "$log")
		echo "FAILED (exit $2): $(echo "${f:-$(grep -v '^ *$' "$log" | tail -n 1)}" | cut -c1-160)"
		;;
	esac
	return 1
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
		left=$(awk -F'|' '$2 ~ /^(RUNNING|not started|CUT SHORT|pending)/ { printf "%s ", $1 }' "$out/.stages")
		if [ -z "$left" ]; then
			echo "next call: none: every stage ran"
		else
			echo "next call: $0 run${budget:+ --budget $budget} --scale $scale OUT_DIR ${left% }"
			echo "  (a stage still RUNNING above was cut off with the call; calibrate and tightness-cal go in one call)"
		fi
		echo "total: $(($(date +%s) - t_start)) s; failed stages: $failed"
	} >"$out/summary.txt.tmp" && mv "$out/summary.txt.tmp" "$out/summary.txt"
}

# set_stage NAME RESULT [SECONDS]
set_stage() {
	awk -F'|' -v n="$1" -v r="$2" -v t="${3:-}" 'BEGIN { OFS = "|" } $1 == n { $2 = r; $3 = t } { print }' \
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
	[ $# = 0 ] && set -- info suite selftest quick calibrate tightness bench sanitizer
	for s in "$@"; do
		case $s in
		bench) stages="$stages bench-overhead bench-minitrain bench-ring-hops bench-embbag bench-nccl" ;;
		tightness) stages="$stages tightness tightness-cal" ;;
		*)
			[ -n "$(stage_cmd "$s")" ] || { echo "gpu-check: no stage '$s'" >&2; return 2; }
			stages="$stages $s"
			;;
		esac
	done
	started=$(date '+%F %T') t_start=$(date +%s) failed=0
	gpus=$("$S" version 2>&1 | sed -n 's/^gpus: //p')
	: >"$out/.stages"
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
		if [ -n "$budget" ]; then
			# shellcheck disable=SC2046
			timeout -k 10 $((budget - used)) $(stage_cmd "$s") >>"$out/$s.log" 2>&1
		else
			# shellcheck disable=SC2046,SC2091
			$(stage_cmd "$s") >>"$out/$s.log" 2>&1
		fi
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
	sanitizer) stage_sanitizer ;;
	nccl) stage_nccl ;;
	esac
}
