#!/bin/sh
# GPU validation in one command, on a machine with an NVIDIA GPU, its driver and the CUDA 13
# runtime but none of the project's build dependencies (../shared/GPU.md: build here, run there).
#
#   tools/gpu-check.sh bundle [OPTIONS] [BUILD_DIR] [BUNDLE.tar.gz]
#       Here, on the development machine: into BUNDLE.tar.gz (default gpu-bundle.tar.gz; gzip,
#       which every machine can unpack; .tar.xz is smaller and slower to make), one
#       folder gpu-bundle/ with sdcscan, its GPU module, the gpu suite, this script, every
#       non-CUDA library they load (glibc and its loader included: the bundle runs on any glibc)
#       and Open MPI's runtime (mpirun, orted, its components, help files and configuration,
#       PMIx's), relocated to wherever the bundle is unpacked. cuBLAS, cuBLASLt and NCCL are
#       the GPU machine's (its toolkit's $CUDA_HOME/lib64, or pip's nvidia/*/lib); the driver
#       and NVML always are. Options:
#         --carry-cuda        carry libcublas, libcublasLt and libnccl too, for a machine that has
#                             none (848 MB unpacked, 614 MB .tar.gz: too big for a 64 MiB carry)
#         --fake-module FILE  put FILE (build/tests/fake-gpu.so) in the place of the GPU module
#         --fake-nvml FILE    and FILE (build/tests/fake-nvml.so) in the place of NVML: the
#                             rehearsal without a GPU (tests/gpu/rehearse.sh)
#
#   gpu-bundle/tools/gpu-check.sh run [--budget SECONDS] [--scale full|rehearsal] OUT_DIR [STAGE...]
#       There, from anywhere (this script inside the unpacked bundle; or tools/gpu-check.sh in a
#       checkout beside gpu-bundle/ or gpu-bundle.tar.gz): the stages, most valuable first, or
#       those named; each log and report into OUT_DIR, and OUT_DIR/summary.txt: each stage's
#       result, time and estimate; each claim of README.md's GPU section as tested, FAILED, not
#       tested here (and why: one GPU, no sanitizer), rehearsed on the fake only, or not run yet;
#       a verdict that is "ok" only when every claim was tested; and the command for the next call
#       when some stages did not run. --budget: start no stage that its estimate says would end
#       past SECONDS from the start, and stop one still running then (cut short); --scale
#       rehearsal: the same stages and commands at the sizes the fake module (2 CPU cores) runs in
#       minutes. The default stages, in order (estimates, their basis and which fit a first call
#       of --budget 480: "gpu-check.sh plan"):
#         info             the bundle, driver, where each library and compute-sanitizer resolved,
#                          nvidia-smi -q, the bundled MPI
#         selftest         every GPU check finds and locates its planted faults
#         gemm             the exact types' bits against the CPU, at the deepest k; V-ABFT clean
#         minitrain        the shipped goldens bit for bit on every GPU; faults in GPU memory
#         bench-minitrain  the exact class's bits; its GEMM against cuBLAS sgemm (>= 30%)
#         embbag           lookups the core's bits on every GPU; faults in GPU memory
#         bench-ring-hops  the hop checks' bits against the CPU's, and their GB/s
#         sm-replay        a faulty tile recomputed on every SM (transient or persistent)
#         quick            sdcscan run --profile quick, 30 s (quick.json)
#         calibrate        sdcscan calibrate gemm --gpus all --trials 3000 (calibration.json)
#         tightness        campaign gemm --gpus 0: V-ABFT's tightness table with Table 7's e_max,
#         tightness-cal    then with the calibration's (calibrate in the same call)
#         bench-overhead   plain cuBLASLt against the checked GEMM (>= 95%), and the roofline's
#         bench-embbag     the checked lookups' overhead (<= 10%)
#         nccl             2 GPUs or more: NCCL's paths checked, a fault named, bench nccl
#         sanitizer        compute-sanitizer memcheck on a short selftest
#         sanitizer-race   racecheck and synccheck on short gemm, embbag and minitrain runs
#       Also: suite (the whole gpu suite), bench (the four bench- stages).
#       Exit status: 0 when every stage that ran passed (or could not be judged here and says
#       why), 1 otherwise; summary.txt's verdict says what was proven.
#
#   tools/gpu-check.sh plan [--budget SECONDS]
#       Each default stage's estimate on one H100 and its basis, and which call it falls in.
#   tools/gpu-check.sh claims
#       The IDs of README.md's GPU claims, as summary.txt names them.
set -u
self=$(cd "$(dirname "$0")" && pwd)
cmd=${1:-}
[ $# -gt 0 ] && shift

# Libraries the GPU machine provides itself: the driver's and CUDA's.
is_cuda_lib() {
	case "$(basename "$1")" in
	libcuda.so* | libnvidia-* | libcublas* | libcudart* | libnvrtc* | libnccl*) return 0 ;;
	esac
	return 1
}

# The libraries FILE... load (from ldd), glibc's loader included.
lib_deps() {
	for f in "$@"; do
		ldd "$f" | awk '/=> \// { print $3 } /^\t\/.*ld-linux/ { print $1 }'
	done | sort -u
}

# (the same helpers beside this script in a checkout's tools/ and in the bundle's)
. "$self/gpu-bundle-env.sh"
. "$self/gpu-check-run.sh"

bundle() {
	carry_cuda=0 fake_module="" fake_nvml=""
	while [ $# -gt 0 ]; do
		case $1 in
		--carry-cuda) carry_cuda=1 ;;
		--fake-module) fake_module=${2:?}; shift ;;
		--fake-nvml) fake_nvml=${2:?}; shift ;;
		-*) echo "gpu-check: bundle: unknown option $1" >&2; return 2 ;;
		*) break ;;
		esac
		shift
	done
	build=${1:-build}
	out=${2:-gpu-bundle.tar.gz}
	here=$(cd "$self/.." && pwd)
	module=${fake_module:-$build/src/sdcscan-gpu.so}
	[ -x "$build/src/sdcscan" ] || { echo "gpu-check: no $build/src/sdcscan: build first" >&2; return 1; }
	[ -f "$module" ] || { echo "gpu-check: no $module: a build with cuda" >&2; return 1; }
	if [ -n "$fake_module" ] && [ -z "$fake_nvml" ]; then
		echo "gpu-check: --fake-module needs --fake-nvml (the fake's GPUs have no NVML otherwise)" >&2
		return 2
	fi
	mkdir -p "$(dirname "$out")" && out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out") || return 1
	stage=$(mktemp -d "${TMPDIR:-/tmp}/gpu-bundle.XXXXXX")
	b=$stage/gpu-bundle
	mkdir -p "$b/bin" "$b/lib" "$b/tests/gpu" "$b/tests/cli" "$b/tools"
	cp "$build/src/sdcscan" "$b/bin/sdcscan.bin"
	cp "$module" "$b/bin/sdcscan-gpu.so"
	cp "$here/tests/gpu/gpu_suite.sh" "$b/tests/gpu/"
	cp "$here/tests/cli/lib.sh" "$b/tests/cli/"
	cp "$here/tools/gpu-check.sh" "$here/tools/gpu-check-run.sh" "$here/tools/gpu-bundle-env.sh" "$b/tools/"
	[ -n "$fake_nvml" ] && cp "$fake_nvml" "$b/lib/libnvidia-ml.so.1"
	files="$build/src/sdcscan $module ${fake_nvml:-}"
	# shellcheck disable=SC2086
	for lib in $(lib_deps $files); do
		is_cuda_lib "$lib" || cp -L "$lib" "$b/lib/"
	done
	[ -f "$b/lib/ld-linux-x86-64.so.2" ] || { echo "gpu-check: ldd named no ld-linux-x86-64.so.2" >&2; return 1; }
	# The CUDA libraries the CUDA module needs by name (the real one's, also when the fake stands in:
	# info then says where they would resolve), and the CUDA they come from (the driver it needs).
	real=$build/src/sdcscan-gpu.so
	[ -f "$real" ] || real=$module
	sonames=$(ldd "$real" | awk '{ print $1 }' | while read -r so; do is_cuda_lib "$so" && echo "$so"; done | sort -u | tr '\n' ' ')
	major=$(echo "$sonames" | sed -n 's/.*libcublasLt\.so\.\([0-9]*\).*/\1/p')
	nvcc=$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")
	cuda=$("$nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\),.*/\1/p')
	[ -z "$major" ] && major=${cuda%%.*}
	if [ $carry_cuda = 1 ]; then
		mkdir -p "$b/cuda-lib"
		for so in $sonames libnccl.so.2; do
			p=$(ldd "$real" | awk -v s="$so" '$1 == s { print $3 }')
			[ -z "$p" ] && p=$(ls "${CUDA_HOME:-/usr/local/cuda}/lib64/$so" 2>/dev/null)
			if [ -n "$p" ]; then cp -L "$p" "$b/cuda-lib/"; else echo "gpu-check: --carry-cuda: no $so here" >&2; fi
		done
	fi
	if ldd "$build/src/sdcscan" | grep -q 'libmpi\.so'; then
		bundle_mpi "$b" || return 1
	fi
	wrap "$b" bin/sdcscan bin/sdcscan.bin
	{
		echo "BUNDLE_FAKE=$([ -n "$fake_module" ] && echo 1 || echo 0)"
		echo "BUNDLE_CUDA_MAJOR=$major"
		echo "BUNDLE_CUDA_SONAMES='$sonames'"
	} >"$b/bin/bundle.conf"
	{
		echo "sdcscan GPU bundle, made $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname)"
		echo "source: $(git -C "$here" describe --always --dirty 2>/dev/null || echo unknown)"
		if [ -n "$fake_module" ]; then
			echo "module: THE FAKE GPU MODULE ($(basename "$fake_module"), CPU emulation) and fake NVML: a rehearsal bundle"
		else
			echo "module: the CUDA module, built with CUDA ${cuda:-$major}; needs ${sonames:-no CUDA library by name}"
		fi
		echo "cuda libraries carried: $([ $carry_cuda = 1 ] && ls "$b/cuda-lib" | tr '\n' ' ' || echo "none (the GPU machine's)")"
		echo "open mpi: $([ -d "$b/mpi" ] && cat "$b/mpi/VERSION" || echo "not carried (sdcscan built without MPI)")"
	} >"$b/MANIFEST"
	case $out in
	*.xz) XZ_OPT=${XZ_OPT:--3 -T0} tar -C "$stage" -cJf "$out" gpu-bundle ;;
	*) tar -C "$stage" -czf "$out" gpu-bundle ;;
	esac || return 1
	echo "gpu-check: $out ($(du -h "$out" | cut -f1), $(du -sh "$b" | cut -f1) unpacked):" \
		"$(ls "$b/lib" | wc -l) libraries; $(sed -n 3p "$b/MANIFEST")"
	rm -rf "$stage"
}

# wrap BUNDLE WRAPPER TARGET: WRAPPER (relative to the bundle) runs TARGET (likewise) through the
# bundled loader with the bundle's library path and Open MPI's relocation (gpu-bundle-env.sh).
# ld.so(8): --library-path stands for LD_LIBRARY_PATH, which is left alone for the programs
# these start (a system shell must not load the bundle's glibc).
wrap() {
	up=$(echo "$2" | sed 's|[^/]*/|../|g; s|[^/]*$||')
	cat >"$1/$2" <<EOF
#!/bin/sh
d=\$(cd "\$(dirname "\$0")/${up%/}" && pwd)
. "\$d/tools/gpu-bundle-env.sh"
bundle_env "\$d"
exec "\$d/lib/ld-linux-x86-64.so.2" --library-path "\$SDCSCAN_BUNDLE_LIBPATH" "\$d/$3" "\$@"
EOF
	chmod +x "$1/$2"
}

# Open MPI's runtime into BUNDLE/mpi, laid out as under its prefix (ompi_info --path all), so that
# OPAL_PREFIX relocates it (gpu-bundle-env.sh): mpirun (orterun), orted (a singleton's MPI_Init
# starts one from bindir), ompi_info, the components, help files and configuration; PMIx's
# components and help files into BUNDLE/mpi/pmix; every library they load into BUNDLE/lib.
# Components that need a fabric library (InfiniBand verbs, UCX, libfabric, PSM) are left out:
# one host's ranks talk through shared memory (vader) and TCP.
bundle_mpi() {
	info=$(ompi_info --parsable --path all 2>/dev/null) ||
		{ echo "gpu-check: sdcscan links Open MPI, and ompi_info is missing (openmpi-bin)" >&2; return 1; }
	get() { echo "$info" | sed -n "s/^path:$1://p" | head -n 1; }
	prefix=$(get prefix) bindir=$(get bindir) pkglibdir=$(get pkglibdir) pkgdatadir=$(get pkgdatadir)
	sysconfdir=$(get sysconfdir)
	for d in "$bindir" "$pkglibdir" "$pkgdatadir"; do
		case $d in "$prefix"/*) ;; *)
			echo "gpu-check: Open MPI's $d is outside its prefix $prefix: OPAL_PREFIX cannot move it" >&2
			return 1
			;;
		esac
	done
	m=$1/mpi
	mb=mpi${bindir#"$prefix"} ml=$m${pkglibdir#"$prefix"} md=$m${pkgdatadir#"$prefix"}
	mkdir -p "$1/$mb" "$ml" "$md" "$m/etc/openmpi" "$m/elf"
	cp -r "$pkgdatadir/." "$md/"
	cp -r "$sysconfdir/." "$m/etc/openmpi/"
	# One host and no ssh there: ranks started by mpirun itself (the isolated launcher), not by
	# the rsh launcher, which refuses to start without ssh or rsh even for local ranks.
	printf '\n# tools/gpu-check.sh bundle: one host, no ssh\nplm = isolated\n' >>"$m/etc/openmpi/openmpi-mca-params.conf"
	kept="" left=""
	for c in "$pkglibdir"/mca_*.so; do
		deps=$(ldd "$c" 2>&1)
		if echo "$deps" | grep -q 'not found' ||
			echo "$deps" | grep -Eq 'lib(fabric|ucp|ucs|uct|ucm|ibverbs|rdmacm|psm_infinipath|psm2)\.so'; then
			left="$left $(basename "$c" .so)"
			continue
		fi
		cp "$c" "$ml/"
		kept="$kept $c"
	done
	for p in orterun orted ompi_info; do
		cp "$bindir/$p" "$m/elf/$p"
		wrap "$1" "$mb/$p" "mpi/elf/$p"
		kept="$kept $bindir/$p"
	done
	wrap "$1" bin/mpirun mpi/elf/orterun
	# shellcheck disable=SC2086
	for lib in $(lib_deps $kept); do
		is_cuda_lib "$lib" || cp -L "$lib" "$1/lib/"
	done
	# shellcheck disable=SC2086
	pmix=$(lib_deps $kept | grep '/libpmix\.so' | head -n 1)
	if [ -n "$pmix" ]; then
		pl=$(dirname "$(readlink -f "$pmix")")
		mkdir -p "$m/pmix/lib" "$m/pmix/share"
		[ -d "$pl/pmix" ] && cp -r "$pl/pmix" "$m/pmix/lib/"
		[ -d "$pl/../share" ] && cp -r "$pl/../share/." "$m/pmix/share/"
	fi
	echo "$(ompi_info --version 2>/dev/null | head -n 1) from $prefix," \
		"$(echo "$kept" | wc -w) pieces; left out (fabrics):${left:- none}" >"$m/VERSION"
}

case $cmd in
bundle) bundle "$@" ;;
run) run "$@" ;;
plan) plan "$@" ;;
claims) claim_table | cut -d'|' -f1 ;;
__stage) run_stage "$@" ;;
*)
	sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 2
	;;
esac
