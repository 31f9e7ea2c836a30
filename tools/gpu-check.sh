#!/bin/sh
# GPU validation in one command, on a machine with an NVIDIA GPU, its driver and the CUDA runtime
# but none of Debian's -dev packages (../shared/GPU.md: build here, run there).
#
#   tools/gpu-check.sh bundle [BUILD_DIR] [BUNDLE.tar.xz]
#       On the development machine: sdcscan, its GPU module, the gpu suite and the non-CUDA
#       shared libraries they need (from ldd, glibc and its loader included, so the bundle runs
#       whatever glibc the GPU machine has) into gpu-bundle.tar.xz (default), for the GPU machine.
#       CUDA's own libraries (cuBLASLt, the driver, NVML) are that machine's.
#
#   tools/gpu-check.sh run OUT_DIR [STAGE...]
#       On the GPU machine, from the repository root (the bundle unpacked from gpu-bundle.tar.xz
#       when it is not yet): every stage, or those named, each log and report into OUT_DIR, and
#       OUT_DIR/summary.txt with each stage's exit status and time. Stages:
#         info       sdcscan version, nvidia-smi -q, where every library resolves
#         suite      the gpu meson suite (tests/gpu/gpu_suite.sh)
#         selftest   sdcscan selftest, GPUs included (selftest.json)
#         quick      sdcscan run --profile quick (quick.json)
#         calibrate  sdcscan calibrate gemm --gpus (calibration.json)
#         tightness  sdcscan campaign gemm --gpus: Table 7's e_max, then the calibration's
#         bench      sdcscan bench overhead --gpus (bench.json): plain cuBLASLt against checked;
#                    sdcscan bench minitrain --gpus (bench-minitrain.json): the exact class's bits
#                    and its GEMM against cuBLAS sgemm, n = 512 ... 4096; sdcscan bench ring-hops
#                    --gpus (bench-ring-hops.json): the hop checks' bits and GB/s; sdcscan bench
#                    embbag --gpus (bench-embbag.json): lookups/s, GB/s and the checked lookup's
#                    overhead on the GPU, with its bits against the CPU's kernel; with mpirun
#                    and 2 GPUs or more, sdcscan bench nccl (bench-nccl.json): the checked ring
#                    over NCCL against ncclAllReduce, busbw 1 MiB to 1 GiB
#         sanitizer  compute-sanitizer memcheck, racecheck and synccheck on short GPU runs (gemm,
#                    embbag, minitrain)
#       Exit status: 0 when every stage did (the suite may skip: 77), 1 otherwise.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:-}
[ $# -gt 0 ] && shift

# Libraries the GPU machine provides itself: the driver's and CUDA's.
is_cuda_lib() {
	case "$(basename "$1")" in
	libcuda.so* | libnvidia-* | libcublas* | libcudart* | libnvrtc* | libnccl*) return 0 ;;
	esac
	return 1
}

bundle() {
	build=${1:-build}
	out=${2:-gpu-bundle.tar.xz}
	[ -x "$build/src/sdcscan" ] || { echo "gpu-check: no $build/src/sdcscan: build first" >&2; return 1; }
	[ -f "$build/src/sdcscan-gpu.so" ] || { echo "gpu-check: no $build/src/sdcscan-gpu.so: a build with cuda" >&2; return 1; }
	stage=$(mktemp -d "${TMPDIR:-/tmp}/gpu-bundle.XXXXXX")
	b=$stage/gpu-bundle
	mkdir -p "$b/bin" "$b/lib" "$b/tests/gpu" "$b/tests/cli" "$b/tools"
	cp "$build/src/sdcscan" "$b/bin/sdcscan.bin"
	cp "$build/src/sdcscan-gpu.so" "$b/bin/"
	cp "$here/tests/gpu/gpu_suite.sh" "$b/tests/gpu/"
	cp "$here/tests/cli/lib.sh" "$b/tests/cli/"
	cp "$here/tools/gpu-check.sh" "$b/tools/"
	for f in "$build/src/sdcscan" "$build/src/sdcscan-gpu.so"; do
		ldd "$f" | awk '/=> \// { print $3 } /^\t\/.*ld-linux/ { print $1 }'
	done | sort -u | while read -r lib; do
		is_cuda_lib "$lib" || cp -L "$lib" "$b/lib/"
	done
	# The binary runs through the bundled loader, with the bundled libraries first; it finds its
	# module next to itself otherwise, so the wrapper names it.
	cat >"$b/bin/sdcscan" <<'EOF'
#!/bin/sh
d=$(cd "$(dirname "$0")/.." && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
export SDCSCAN_GPU_MODULE="${SDCSCAN_GPU_MODULE:-$d/bin/sdcscan-gpu.so}"
exec "$d/lib/ld-linux-x86-64.so.2" --library-path "$d/lib:$cuda/lib64:$cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}" \
	"$d/bin/sdcscan.bin" "$@"
EOF
	chmod +x "$b/bin/sdcscan"
	[ -f "$b/lib/ld-linux-x86-64.so.2" ] || { echo "gpu-check: ldd named no ld-linux-x86-64.so.2" >&2; return 1; }
	XZ_OPT=${XZ_OPT:--3} tar -C "$stage" -cJf "$out" gpu-bundle
	rm -rf "$stage"
	echo "gpu-check: $out ($(du -h "$out" | cut -f1)): $(tar -tJf "$out" | grep -c '/lib/') libraries"
}

# One stage: its command's output into OUT/NAME.log, its status and time into the summary.
stage() {
	name=$1
	shift
	t0=$(date +%s)
	"$@" >"$out/$name.log" 2>&1
	rc=$?
	printf '%-10s exit %-3s %5ss  %s\n' "$name" "$rc" "$(($(date +%s) - t0))" "$*" | tee -a "$out/summary.txt"
	case "$name:$rc" in suite:77) ;; *:0) ;; *) failed=1 ;; esac
}

info() {
	"$S" version
	echo
	command -v nvidia-smi >/dev/null && nvidia-smi -q
	echo
	echo "libraries as the bundle resolves them:"
	"$B/lib/ld-linux-x86-64.so.2" --list --library-path "$B/lib:${CUDA_HOME:-/usr/local/cuda}/lib64" "$B/bin/sdcscan.bin"
	"$B/lib/ld-linux-x86-64.so.2" --list --library-path "$B/lib:${CUDA_HOME:-/usr/local/cuda}/lib64" "$B/bin/sdcscan-gpu.so"
}

sanitize() {
	cs=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
	[ -x "$cs" ] || { echo "no compute-sanitizer"; return 1; }
	small="--probe gemm --gpus 0 --cpus 0 --set gemm.dtypes=int8 --set gemm.m=64 --set gemm.n=64 --set gemm.k=256
--set gemm.gpu_dtypes=int8,bf16,fp32-fast --set gemm.gpu_m=256 --set gemm.gpu_n=256 --set gemm.gpu_k=512
--set gemm.iterations=3 --set gemm.gpu_timeout=600"
	rc=0
	for tool in memcheck racecheck synccheck; do
		echo "== $tool"
		# shellcheck disable=SC2086
		"$cs" --tool "$tool" --target-processes all --error-exitcode 9 "$S" run $small \
			--inject gemm/gpu-int8:C:iter=1,row=5,col=9,bit=4 || [ $? = 2 ] || rc=1
		# embbag's kernels (the expectation warp's tree in shared memory) and minitrain's
		"$cs" --tool "$tool" --target-processes all --error-exitcode 9 "$S" run --probe embbag --gpus 0 --cpus 0 \
			--set embbag.rows=65536 --set embbag.batches=4 --set embbag.iterations=3 --set embbag.gpu_timeout=600 \
			--inject embbag/8bit-fast-d64:R:iter=1,device=gpu0 || [ $? = 2 ] || rc=1
		"$cs" --tool "$tool" --target-processes all --error-exitcode 9 "$S" run --probe minitrain --gpus 0 --cpus 0 \
			--set minitrain.models=dlrm --set minitrain.iterations=2 --set minitrain.gpu_timeout=600 || rc=1
	done
	return $rc
}

run() {
	out=${1:?usage: gpu-check.sh run OUT_DIR [STAGE...]}
	shift
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	# the runs' saved reports and lock come back with the logs, not into the machine's /var/lib
	export SDCSCAN_STATE_DIR="$out/state"
	cd "$here" || return 1
	if [ ! -x gpu-bundle/bin/sdcscan ]; then
		[ -f gpu-bundle.tar.xz ] || { echo "gpu-check: no gpu-bundle/ and no gpu-bundle.tar.xz here" >&2; return 1; }
		tar -xJf gpu-bundle.tar.xz
	fi
	B=$here/gpu-bundle
	S=$B/bin/sdcscan
	stages=${*:-info suite selftest quick calibrate tightness bench sanitizer}
	failed=0
	: >>"$out/summary.txt"
	for s in $stages; do
		case $s in
		info) stage info info ;;
		suite) stage suite sh "$B/tests/gpu/gpu_suite.sh" "$S" ;;
		selftest) stage selftest "$S" selftest --json "$out/selftest.json" ;;
		quick) stage quick "$S" run --profile quick --json "$out/quick.json" ;;
		calibrate) stage calibrate "$S" calibrate gemm --gpus all --trials 3000 -o "$out/calibration.json" ;;
		tightness)
			stage tightness "$S" campaign gemm --gpus 0 --json "$out/tightness.json"
			[ -f "$out/calibration.json" ] &&
				stage tightness-cal "$S" campaign gemm --gpus 0 --calibration "$out/calibration.json" \
					--json "$out/tightness-calibrated.json"
			;;
		bench)
			stage bench "$S" bench overhead --gpus 0 --json "$out/bench.json"
			stage bench-minitrain "$S" bench minitrain --gpus 0 --json "$out/bench-minitrain.json"
			stage bench-ring-hops "$S" bench ring-hops --gpus 0 --json "$out/bench-ring-hops.json"
			stage bench-embbag "$S" bench embbag --gpus 0 --json "$out/bench-embbag.json"
			ngpu=$("$S" version | sed -n 's/^gpus: \([0-9]*\) .*/\1/p')
			if command -v mpirun >/dev/null 2>&1 && [ "${ngpu:-0}" -ge 2 ]; then
				stage bench-nccl mpirun --allow-run-as-root -np "$ngpu" "$S" bench nccl --gpus all \
					--json "$out/bench-nccl.json"
			else
				echo "bench-nccl: not run: needs mpirun and 2 GPUs or more (${ngpu:-0} here; NCCL takes no two ranks on one GPU)" \
					>>"$out/summary.txt"
			fi
			;;
		sanitizer) stage sanitizer sanitize ;;
		*) echo "gpu-check: no stage '$s'" >&2; failed=1 ;;
		esac
	done
	return $failed
}

case $cmd in
bundle) bundle "$@" ;;
run) run "$@" ;;
*)
	sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
	;;
esac
