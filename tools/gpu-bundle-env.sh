# shellcheck shell=sh
# The GPU bundle's environment (tools/gpu-check.sh puts this file in the bundle as bin/bundle-env.sh;
# the bundle's wrappers bin/sdcscan, bin/mpirun and mpi/bin/* source it). Sourced, it defines
# bundle_env DIR, which exports:
#   SDCSCAN_BUNDLE_LIBPATH  the bundled loader's --library-path: the bundle's libraries (glibc
#                           among them), the CUDA driver's forward-compatibility folder where the
#                           driver is older than the build's CUDA needs, cuBLAS and NCCL where they
#                           were found, then $LD_LIBRARY_PATH
#   SDCSCAN_GPU_MODULE      the bundle's module (unless set)
#   OPAL_PREFIX, OPAL_SYSCONFDIR, PMIX_*  the bundled Open MPI, relocated (see mpi_env)
# and, for gpu-check.sh's info stage, BUNDLE_FOUND (one line a library: where it resolved and
# why) and BUNDLE_COMPAT (what was decided about the compat folder, and why).
# Nothing here may run a bundled binary: the wrappers call it before they can.
#
# Testing knob: SDCSCAN_BUNDLE_DRIVER_VERSION stands for the loaded NVIDIA driver's version.

# The loaded kernel driver's version, e.g. 580.159.04 (empty: no NVIDIA driver loaded).
bundle_driver_version() {
	if [ -n "${SDCSCAN_BUNDLE_DRIVER_VERSION:-}" ]; then
		echo "$SDCSCAN_BUNDLE_DRIVER_VERSION"
	elif [ -r /sys/module/nvidia/version ]; then
		cat /sys/module/nvidia/version
	elif [ -r /proc/driver/nvidia/version ]; then
		sed -n 's/.*Kernel Module  *\([0-9][0-9.]*\).*/\1/p' /proc/driver/nvidia/version | head -n 1
	fi
}

# bundle_ver_lt A B: version A sorts before B (sort -V: 570.86.10 < 580.65.06)
bundle_ver_lt() {
	[ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1)" = "$1" ]
}

# Where the toolkit may be: $CUDA_HOME, the usual symlink, then versioned installs, newest first.
bundle_cuda_homes() {
	[ -n "${CUDA_HOME:-}" ] && echo "$CUDA_HOME"
	echo /usr/local/cuda
	ls -d /usr/local/cuda-[0-9]* 2>/dev/null | sort -rV
}

# Folders that may hold cuBLAS and NCCL, in order, each with where it came from: what the bundle
# carries (gpu-check.sh bundle --carry-cuda), the toolkit's, then pip's wheels (nvidia-cublas,
# nvidia-nccl-cu13: site-packages/nvidia/*/lib) for the python3 on PATH and the usual prefixes.
bundle_lib_dirs() {
	echo "$1/cuda-lib bundle"
	for h in $(bundle_cuda_homes); do
		for s in lib64 lib targets/x86_64-linux/lib; do echo "$h/$s toolkit"; done
	done
	sites=$(python3 -c 'import site, sys; print("\n".join(site.getsitepackages() + [site.getusersitepackages()] + sys.path))' 2>/dev/null)
	for s in $sites /usr/local/lib/python3*/dist-packages /usr/local/lib/python3*/site-packages \
		/usr/lib/python3/dist-packages /opt/*/.venv/lib/python3*/site-packages; do
		for d in "$s"/nvidia/*/lib; do [ -d "$d" ] && echo "$d pip"; done
	done
}

# The CUDA major version -> the oldest driver that runs it (NVIDIA, "CUDA Compatibility",
# https://docs.nvidia.com/deploy/cuda-compatibility/, minor version compatibility: CUDA 13.x
# needs a driver >= 580, 12.x >= 525, 11.x >= 450).
bundle_driver_floor() {
	case $1 in 13) echo 580 ;; 12) echo 525 ;; 11) echo 450 ;; *) echo "" ;; esac
}

# The compat folder (NVIDIA's cuda-compat package: $CUDA_HOME/compat/libcuda.so.1, a newer user-mode
# driver over an older kernel driver; "CUDA Compatibility", forward compatibility): used only
# where the loaded driver is older than the build's CUDA needs, and the compat driver is new
# enough; never over a driver that is new enough (the guide: it must not be used then). Sets
# BUNDLE_COMPAT_DIR (empty: not used) and BUNDLE_COMPAT (why).
bundle_compat_dir() {
	BUNDLE_COMPAT_DIR=""
	floor=$(bundle_driver_floor "${BUNDLE_CUDA_MAJOR:-}")
	drv=$(bundle_driver_version)
	if [ -z "$floor" ]; then
		BUNDLE_COMPAT="not used: the bundle does not say which CUDA it was built with"
		return
	fi
	if [ -z "$drv" ]; then
		BUNDLE_COMPAT="not used: no NVIDIA driver loaded (no /sys/module/nvidia/version)"
		return
	fi
	if ! bundle_ver_lt "$drv" "$floor"; then
		BUNDLE_COMPAT="not used: driver $drv runs CUDA $BUNDLE_CUDA_MAJOR.x (needs >= $floor)"
		return
	fi
	for h in $(bundle_cuda_homes); do
		c=$h/compat
		[ -e "$c/libcuda.so.1" ] || continue
		v=$(ls "$c"/libcuda.so.[0-9]*.* 2>/dev/null | sed -n 's/.*libcuda\.so\.//p' | sort -V | tail -n 1)
		if [ -n "$v" ] && bundle_ver_lt "$v" "$floor"; then
			BUNDLE_COMPAT="not used: driver $drv is older than CUDA $BUNDLE_CUDA_MAJOR.x needs ($floor) and $c holds libcuda $v, older still"
			continue
		fi
		BUNDLE_COMPAT="USED: driver $drv is older than CUDA $BUNDLE_CUDA_MAJOR.x needs ($floor): forward compatibility from $c (libcuda ${v:-of unknown version})"
		BUNDLE_COMPAT_DIR=$c
		return
	done
	BUNDLE_COMPAT="not used, none found: driver $drv is older than CUDA $BUNDLE_CUDA_MAJOR.x needs ($floor) and no \$CUDA_HOME/compat/libcuda.so.1 (NVIDIA's cuda-compat package) is here"
}

# Open MPI carried in DIR/mpi with the layout of its installation, relocated as its FAQ says
# (Open MPI 4.1's FAQ, https://www.open-mpi.org/faq/?category=building#installdirs, and
# https://docs.open-mpi.org/en/v5.0.x/installing-open-mpi/installation-location.html: set
# OPAL_PREFIX to the new prefix; every folder configured relative to the prefix follows it, and
# one that was not, like Debian's sysconfdir /etc/openmpi, is set alone: OPAL_SYSCONFDIR).
# Debian's PMIx is outside Open MPI's prefix: PMIx reads its own PMIX_PREFIX and folders.
bundle_mpi_env() {
	[ -d "$1/mpi" ] || return 0
	export OPAL_PREFIX="$1/mpi"
	export OPAL_SYSCONFDIR="$1/mpi/etc/openmpi"
	if [ -d "$1/mpi/pmix" ]; then
		export PMIX_PREFIX="$1/mpi/pmix" PMIX_EXEC_PREFIX="$1/mpi/pmix" PMIX_LIBDIR="$1/mpi/pmix/lib"
		export PMIX_PKGLIBDIR="$1/mpi/pmix/lib/pmix" PMIX_DATADIR="$1/mpi/pmix/share"
		export PMIX_PKGDATADIR="$1/mpi/pmix/share/pmix" PMIX_SYSCONFDIR="$1/mpi/pmix/share"
		# (PMIx 4.2 still looks for its components where it was installed without this)
		export PMIX_MCA_mca_base_component_path="$1/mpi/pmix/lib/pmix"
	fi
	# the bundled mpirun and its daemon before any other on PATH
	case ":$PATH:" in *":$1/bin:"*) ;; *) export PATH="$1/bin:$PATH" ;; esac
}

bundle_env() {
	d=$1
	[ -r "$d/bin/bundle.conf" ] && . "$d/bin/bundle.conf"
	export SDCSCAN_GPU_MODULE="${SDCSCAN_GPU_MODULE:-$d/bin/sdcscan-gpu.so}"
	bundle_mpi_env "$d"
	# computed once for a process tree (gpu-check.sh run exports it; the wrappers then reuse it)
	if [ "${SDCSCAN_BUNDLE_DIR:-}" = "$d" ] && [ -n "${SDCSCAN_BUNDLE_LIBPATH:-}" ]; then
		return 0
	fi
	path=$d/lib
	bundle_compat_dir
	[ -n "$BUNDLE_COMPAT_DIR" ] && path=$path:$BUNDLE_COMPAT_DIR
	BUNDLE_FOUND=""
	dirs=$(bundle_lib_dirs "$d")
	for so in ${BUNDLE_CUDA_SONAMES:-} libnccl.so.2; do
		hit=$(echo "$dirs" | while read -r dir from; do
			[ -e "$dir/$so" ] && { echo "$dir $from"; break; }
		done)
		if [ -n "$hit" ]; then
			dir=${hit% *}
			BUNDLE_FOUND="$BUNDLE_FOUND$so: $dir/$so (${hit##* })
"
			case ":$path:" in *":$dir:"*) ;; *) path=$path:$dir ;; esac
		else
			sys=$(/sbin/ldconfig -p 2>/dev/null | sed -n "s/^[[:space:]]*$so (.*) => //p" | head -n 1)
			if [ -n "$sys" ]; then
				BUNDLE_FOUND="$BUNDLE_FOUND$so: $sys (ld.so.cache)
"
			else
				BUNDLE_FOUND="$BUNDLE_FOUND$so: NOT FOUND
"
			fi
		fi
	done
	[ -n "${LD_LIBRARY_PATH:-}" ] && path=$path:$LD_LIBRARY_PATH
	export SDCSCAN_BUNDLE_DIR="$d" SDCSCAN_BUNDLE_LIBPATH="$path"
}
