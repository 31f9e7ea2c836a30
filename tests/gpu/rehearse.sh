#!/bin/sh
# The GPU validation rehearsed without a GPU (issue 28), as it will run on a GPU machine: a bundle
# made by tools/gpu-check.sh with the fake module (src/kernels/fake/) and fake NVML in the place
# of the real ones, unpacked into an empty folder inside a bare Debian (debootstrap
# --variant=minbase bookworm, plus python3: no compiler, no MPI, none of sdcscan's libraries),
# and `gpu-bundle/tools/gpu-check.sh run --scale rehearsal OUT` run there with 1, 2 and 8 fake
# GPUs. Every stage must pass, or say why it cannot be judged without a GPU (summary.txt).
# Each run also checks one way of finding CUDA's libraries (stubs, since the fake loads none):
#   1 GPU:  a driver older than CUDA 13 needs (570) with $CUDA_HOME/compat: compat USED; no
#           compute-sanitizer anywhere
#   2 GPUs: cuBLAS and NCCL only in pip's site-packages/nvidia/cu13/lib: found there; a
#           compute-sanitizer in pip's nvidia/cu13/bin that refuses the device
#   8 GPUs: a driver new enough (580) and a toolkit in CUDA_HOME=/opt/cuda-13.0: found there,
#           compat not used although present; a compute-sanitizer in Nsight Compute's folder
# and the summary's claims table: never "tested" on the fake, never a verdict "ok"; NCCL's claim
# "not tested here: one GPU" with 1, rehearsed with 2 and 8; the sanitizer's not tested, with why.
#
# usage (as root: debootstrap, chroot, mount): tests/gpu/rehearse.sh BUILD_DIR OUT_DIR [COUNT...]
#   The root file system is made once and kept in $SDCSCAN_CI_ROOTFS (default
#   /var/cache/sdcscan-ci/rootfs, outside the checkout), made again only when it is missing.
#   Mounts (/proc, /sys, /dev and tmpfs on the work folders) live in a mount namespace of their own
#   (unshare), so they go with it whatever happens; the cached root file system is never written.
#   OUT_DIR/gpus-N/ gets each run's logs and summary.txt; OUT_DIR/times.txt the times.
#   REHEARSE_STAGES="info ..." runs only those stages (to debug one; the checks then fail);
#   COUNT "none": no run, only the judge and budget checks (the end of this file).
# Exit: 0 every run passed its checks, 1 not, 77 not root (skipped).
set -u
build=${1:?usage: rehearse.sh BUILD_DIR OUT_DIR [COUNT...]}
out=${2:?usage: rehearse.sh BUILD_DIR OUT_DIR [COUNT...]}
shift 2
counts=${*:-1 2 8}
here=$(cd "$(dirname "$0")/../.." && pwd)
root=${SDCSCAN_CI_ROOTFS:-/var/cache/sdcscan-ci/rootfs}
mirror=${SDCSCAN_CI_MIRROR:-http://deb.debian.org/debian}
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: rehearse.sh needs root (debootstrap, chroot and mounts)"
	exit 77
fi
mkdir -p "$out" && out=$(cd "$out" && pwd) && build=$(cd "$build" && pwd) || exit 1
: >"$out/times.txt"
say() { echo "rehearse: $*" | tee -a "$out/times.txt"; }

# The bare Debian, once. A folder appears under its name only when whole (made beside, then moved).
if [ ! -f "$root/.sdcscan-rootfs" ]; then
	command -v debootstrap >/dev/null || { echo "rehearse: no debootstrap (apt-get install debootstrap)" >&2; exit 1; }
	rm -rf "$root.new"
	mkdir -p "$(dirname "$root")"
	t0=$(date +%s)
	debootstrap --variant=minbase --include=python3 bookworm "$root.new" "$mirror" >"$out/debootstrap.log" 2>&1 ||
		{ tail -20 "$out/debootstrap.log"; echo "rehearse: debootstrap failed" >&2; exit 1; }
	mkdir -p "$root.new/rehearsal"
	date -u >"$root.new/.sdcscan-rootfs"
	rm -rf "$root" && mv "$root.new" "$root"
	say "debootstrap --variant=minbase --include=python3 bookworm: $(($(date +%s) - t0)) s"
fi
# None of what the bundle must carry may be there (else the rehearsal proves nothing).
for f in usr/bin/mpirun usr/bin/cc usr/bin/gcc usr/lib/x86_64-linux-gnu/libmpi.so.40 \
	usr/lib/x86_64-linux-gnu/libopenblas.so.0 usr/lib/x86_64-linux-gnu/libjansson.so.4 usr/lib/x86_64-linux-gnu/libyaml-0.so.2; do
	[ -e "$root/$f" ] && { echo "rehearse: $root has /$f: not a bare system (remove $root to make it again)" >&2; exit 1; }
done

t0=$(date +%s)
"$here/tools/gpu-check.sh" bundle --fake-module "$build/tests/fake-gpu.so" --fake-nvml "$build/tests/fake-nvml.so" \
	"$build" "$out/gpu-bundle.tar.gz" || exit 1
say "bundle: $(($(date +%s) - t0)) s, $(du -k "$out/gpu-bundle.tar.gz" | cut -f1) KiB"

# Stubs standing for CUDA's libraries (a soname and nothing else): the fake loads none of them.
stubs=$out/stubs
mkdir -p "$stubs"
for so in libcublas.so.13 libcublasLt.so.13 libnccl.so.2 libcuda.so.580.65.06; do
	cc -shared -x c /dev/null -Wl,-soname,"$so" -o "$stubs/$so" || exit 1
done
# compute-sanitizers standing for NVIDIA's: one that refuses the device with an error of its own
# (the form "========= Error: ..." its errors take; the exact words a refusal uses vary), and one
# that runs the program it is given, as a clean memcheck would.
printf '#!/bin/sh\necho "========= COMPUTE-SANITIZER"\necho "========= Error: Device not supported"\nexit 1\n' \
	>"$stubs/sanitizer-refuses"
printf '#!/bin/sh\nwhile [ $# -gt 0 ]; do case $1 in --*) shift 2 ;; *) break ;; esac; done\n%s\n' \
	'echo "========= COMPUTE-SANITIZER"; "$@"; r=$?; echo "========= ERROR SUMMARY: 0 errors"; exit $r' >"$stubs/sanitizer-runs"
# nvidia-smi standing for the driver's: -L lists FAKE_GPU_COUNT GPUs, as the fake module sees them
printf '#!/bin/sh\nif [ "$1" = -L ]; then i=0; while [ $i -lt "$FAKE_GPU_COUNT" ]; do echo "GPU $i: fake (UUID: GPU-$i)"; i=$((i + 1)); done; else echo "nvidia-smi stand-in"; fi\n' \
	>"$stubs/nvidia-smi"
chmod +x "$stubs/sanitizer-refuses" "$stubs/sanitizer-runs" "$stubs/nvidia-smi"

# One run inside the bare system, in a mount namespace of its own: NAME (its OUT_DIR is copied to
# OUT_DIR/NAME), N GPUS, a shell command (run inside the chroot first) that lays out its stubs,
# the arguments of gpu-check.sh run (its OUT_DIR rehearsal/out), then KEY=VALUE environment.
inside() {
	name=$1 n=$2 setup=$3 args=$4
	shift 4
	unshare --mount --propagation private sh -eu -c '
		root=$1 out=$2 n=$3 setup=$4 stubs=$5 args=$6 name=$7
		shift 7
		mount -t proc proc "$root/proc"
		mount --rbind /sys "$root/sys"
		mount --rbind /dev "$root/dev"
		for d in tmp rehearsal usr/local opt; do mount -t tmpfs -o size=4g tmpfs "$root/$d"; done
		mkdir -p "$root/rehearsal/stubs"
		cp "$stubs"/* "$root/rehearsal/stubs/"
		cp "$out/gpu-bundle.tar.gz" "$root/rehearsal/"
		rc=0
		chroot "$root" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root TERM=dumb FAKE_GPU_COUNT="$n" "$@" \
			sh -c "$setup
				cd /rehearsal && tar -xzf gpu-bundle.tar.gz && rm gpu-bundle.tar.gz && cd / &&
				/rehearsal/gpu-bundle/tools/gpu-check.sh run $args" || rc=$?
		rm -rf "$out/$name" && cp -r "$root/rehearsal/out" "$out/$name"
		exit $rc
	' inside "$root" "$out" "$n" "$setup" "$stubs" "$args" "$name" "$@"
}

# claim N SUMMARY ID PATTERN: the summary's line for claim ID (and the line below it) has PATTERN
claim() {
	sed -n "/^  [A-Za-z ]* $3 /{N;p}" "$2" | tr '\n' ' ' | grep -q -- "$4" ||
		{ echo "rehearse: $1 GPUs: claim $3 is not '$4': $(grep "^  [A-Za-z ]* $3 " "$2")" >&2; bad=1; }
}

# claims N SUMMARY: the claims table, honest on the fake: every claim of README.md's GPU section
# there, none "tested" (a fake proves nothing of a GPU), the verdict never "ok"; NCCL and the
# sanitizer not tested, with why, where this run's machine cannot test them.
claims() {
	for id in $("$here/tools/gpu-check.sh" claims); do
		grep -q "^  [A-Za-z ]* $id " "$2" || { echo "rehearse: $1 GPUs: no claim $id in summary.txt" >&2; bad=1; }
	done
	grep -q '^  tested ' "$2" && { echo "rehearse: $1 GPUs: a claim 'tested' on the fake" >&2; bad=1; }
	grep -q '^verdict: INCOMPLETE: [0-9]* of [0-9]* claims not tested on a GPU here (none failed)$' "$2" ||
		{ echo "rehearse: $1 GPUs: the verdict is not INCOMPLETE: $(grep '^verdict' "$2")" >&2; bad=1; }
	claim "$1" "$2" module "^  rehearsed "
	claim "$1" "$2" exact-bits "^  rehearsed "
	case $1 in
	1) claim 1 "$2" nccl "^  NOT TESTED .*not tested here: one GPU"
		claim 1 "$2" sanitizer "not tested here: no compute-sanitizer here" ;;
	2) claim 2 "$2" nccl "^  rehearsed "
		claim 2 "$2" sanitizer "not tested here: the sanitizer refused this device (Error: Device not supported)" ;;
	*) claim "$1" "$2" nccl "^  rehearsed "
		claim "$1" "$2" sanitizer "not tested here: the fake module runs no GPU kernel .*the commands ran under /opt/nvidia/nsight-compute/2025.3.1/compute-sanitizer and passed" ;;
	esac
}

# expect N PATTERN WHAT: the run's info.log has PATTERN
expect() {
	grep -q -- "$2" "$out/gpus-$1/info.log" || { echo "rehearse: $1 GPUs: $3: '$2' not in info.log" >&2; bad=1; }
}

failed=0
for n in $counts; do
	case $n in
	none) continue ;;
	1) setup='mkdir -p /usr/local/cuda/compat && cp /rehearsal/stubs/libcuda.so.580.65.06 /usr/local/cuda/compat/ &&
ln -s libcuda.so.580.65.06 /usr/local/cuda/compat/libcuda.so.1'
		env="SDCSCAN_BUNDLE_DRIVER_VERSION=570.86.10" ;;
	2) setup='p=/usr/local/lib/python3.11/dist-packages/nvidia/cu13 && mkdir -p $p/lib $p/bin &&
cp /rehearsal/stubs/libcublas.so.13 /rehearsal/stubs/libcublasLt.so.13 /rehearsal/stubs/libnccl.so.2 $p/lib/ &&
cp /rehearsal/stubs/sanitizer-refuses $p/bin/compute-sanitizer'
		env="SDCSCAN_BUNDLE_DRIVER_VERSION=" ;;
	*) setup='mkdir -p /opt/cuda-13.0/lib64 /opt/cuda-13.0/compat && cp /rehearsal/stubs/libcu* /rehearsal/stubs/libnccl* /opt/cuda-13.0/lib64/ &&
cp /rehearsal/stubs/libcuda.so.580.65.06 /opt/cuda-13.0/compat/ && ln -s libcuda.so.580.65.06 /opt/cuda-13.0/compat/libcuda.so.1 &&
mkdir -p /opt/nvidia/nsight-compute/2025.3.1 && cp /rehearsal/stubs/sanitizer-runs /opt/nvidia/nsight-compute/2025.3.1/compute-sanitizer &&
mkdir -p /usr/local/bin && cp /rehearsal/stubs/nvidia-smi /usr/local/bin/'
		env="SDCSCAN_BUNDLE_DRIVER_VERSION=580.95.05 CUDA_HOME=/opt/cuda-13.0" ;;
	esac
	t0=$(date +%s)
	# shellcheck disable=SC2086
	inside "gpus-$n" "$n" "$setup" "--scale rehearsal rehearsal/out ${REHEARSE_STAGES:-}" $env
	rc=$?
	secs=$(($(date +%s) - t0))
	bad=0
	[ $rc = 0 ] || { echo "rehearse: $n GPUs: gpu-check.sh run exited $rc" >&2; bad=1; }
	s=$out/gpus-$n/summary.txt
	if [ ! -f "$s" ]; then
		echo "rehearse: $n GPUs: no summary.txt" >&2
		bad=1
	else
		grep -q '^next call: none: every stage ran' "$s" || { echo "rehearse: $n GPUs: a stage did not run" >&2; bad=1; }
		grep -q "^GPUs: $n (" "$s" || { echo "rehearse: $n GPUs: the run did not see $n fake GPUs" >&2; bad=1; }
		for st in info selftest gemm minitrain bench-minitrain embbag bench-ring-hops sm-replay quick calibrate \
			tightness tightness-cal bench-overhead bench-embbag nccl sanitizer sanitizer-race; do
			grep -q "^$st " "$s" || { echo "rehearse: $n GPUs: no $st in summary.txt" >&2; bad=1; }
		done
		claims "$n" "$s"
		expect "$n" "^libnvidia-ml.so.1: /rehearsal/gpu-bundle/lib/libnvidia-ml.so.1 (the bundle: fake)" "the fake NVML"
		expect "$n" "^-- mpirun -np 2" "the bundled mpirun"
		case $n in
		1) expect 1 "^compute-sanitizer: none found" "no sanitizer"
			expect 1 "(\$CUDA_HOME/compat): USED: driver 570.86.10 is older than CUDA 13.x needs (580): forward compatibility from /usr/local/cuda/compat (libcuda 580.65.06)" "compat"
			expect 1 "^library path: /rehearsal/gpu-bundle/lib:/usr/local/cuda/compat" "compat on the library path"
			expect 1 "^libcublasLt.so.13: NOT FOUND" "cuBLASLt nowhere" ;;
		2) expect 2 "^libcublasLt.so.13: /usr/local/lib/python3.11/dist-packages/nvidia/cu13/lib/libcublasLt.so.13 (pip)" "cuBLASLt from pip"
			expect 2 "^compute-sanitizer: /usr/local/lib/python3.11/dist-packages/nvidia/cu13/bin/compute-sanitizer (pip)" "the sanitizer from pip"
			expect 2 "^libnccl.so.2: /usr/local/lib/python3.11/dist-packages/nvidia/cu13/lib/libnccl.so.2 (pip)" "NCCL from pip"
			expect 2 "no NVIDIA driver loaded" "no driver" ;;
		*) expect "$n" "^libcublas.so.13: /opt/cuda-13.0/lib64/libcublas.so.13 (toolkit)" "cuBLAS from CUDA_HOME"
			expect "$n" "not used: driver 580.95.05 runs CUDA 13.x" "compat left alone over a new driver"
			expect "$n" "^compute-sanitizer: /opt/nvidia/nsight-compute/2025.3.1/compute-sanitizer (Nsight)" "the sanitizer from Nsight"
			expect "$n" "^GPUs: the driver lists $n, sdcscan sees $n$" "nvidia-smi -L against the module" ;;
		esac
	fi
	say "$n fake GPU(s): $secs s, $([ $bad = 0 ] && echo passed || echo FAILED)"
	[ -f "$s" ] && cat "$s"
	[ $bad = 0 ] || failed=1
done

# The judge and the budget: a stage whose bits differ fails also on the fake (its timings there
# are not judged, its bits are); a stage that would not fit is not started, one that runs past the
# budget is cut short, and the summary names both for the next call. The budget case is a GPU that
# hangs (FAKE_GPU_EB_HANG: embbag's third lookup never ends, and the run would wait out its 30 s
# deadline), so the cut does not hang on how fast this machine is; info ends in 1-3 s of the 10 s
# that let embbag start.
if [ -z "${REHEARSE_STAGES:-}" ]; then
	t0=$(date +%s)
	bad=0
	inside bits-bug 1 : "--scale rehearsal rehearsal/out bench-minitrain bench-ring-hops bench-embbag" \
		FAKE_GPU_XGEMM_BUG=1 FAKE_GPU_CRC_BUG=1 FAKE_GPU_EB_BUG=0
	s=$out/bits-bug/summary.txt
	for st in bench-minitrain bench-ring-hops bench-embbag; do
		grep -q "^$st .*FAILED (exit [0-9]*): bits differ" "$s" || { echo "rehearse: a planted bits bug in $st was not a failure" >&2; bad=1; }
	done
	inside budget 1 : "--budget 12 --scale rehearsal rehearsal/out info embbag quick" GPU_CHECK_ESTIMATES="info=1 embbag=2" \
		FAKE_GPU_EB_HANG=0
	s=$out/budget/summary.txt
	grep -q "^embbag .*CUT SHORT: still running at the end of the budget (12 s)" "$s" || { echo "rehearse: the hung embbag was not cut short" >&2; bad=1; }
	grep -q "^quick .*not started: would end past the budget" "$s" || { echo "rehearse: quick was started past the budget" >&2; bad=1; }
	grep -q "^next call: .* run --budget 12 --scale rehearsal /rehearsal/out embbag quick$" "$s" || { echo "rehearse: no next call for embbag and quick" >&2; bad=1; }
	say "judge and budget checks: $(($(date +%s) - t0)) s, $([ $bad = 0 ] && echo passed || echo FAILED)"
	[ $bad = 0 ] || { cat "$out/bits-bug/summary.txt" "$out/budget/summary.txt"; failed=1; }
fi
# README.md's GPU claims are the summary's, and one call proves the most: by the plan's estimates
# (tools/gpu-check.sh plan), every stage up to the quick profile fits a first call of 480 s.
bad=0
readme=$(sed -n '/^## GPUs/,/^## /p' "$here/README.md" | sed -n 's/^| `\([a-z-]*\)` | .*/\1/p' | tr '\n' ' ')
ours=$("$here/tools/gpu-check.sh" claims | tr '\n' ' ')
[ "$readme" = "$ours" ] || { echo "rehearse: README.md's GPU claims ($readme) are not summary.txt's ($ours)" >&2; bad=1; }
p=$("$here/tools/gpu-check.sh" plan --budget 480)
for st in info selftest gemm minitrain bench-minitrain embbag bench-ring-hops sm-replay quick; do
	echo "$p" | grep -q "^call 1 $st " || { echo "rehearse: $st is not in the first call of 480 s: $(echo "$p" | grep " $st ")" >&2; bad=1; }
done
say "README's claims and the plan: $([ $bad = 0 ] && echo passed || echo FAILED)"
[ $bad = 0 ] || { echo "$p"; failed=1; }
exit $failed
