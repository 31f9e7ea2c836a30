#!/bin/sh
# On a host without the NVIDIA driver (no libcuda.so.1), sdcscan never loads its GPU module, nor
# cuBLASLt and cuBLAS with it (0.4 s and 200 MB for every command): version, list and run say
# why no GPU is tested. Where libcuda.so.1 is found (a stub here) the module is loaded, and when
# --gpus asks for a GPU it is loaded anyway, to say in its own words why there is none.
# Skipped (77) where this build has no CUDA module or this host has the driver.
# usage: no_driver.sh SDCSCAN STUB_LIBCUDA
. "$(dirname "$0")/lib.sh"
STUB_DIR=$(cd "$(dirname "$2")" && pwd)
unset SDCSCAN_GPU_MODULE SDCSCAN_NVML_LIBRARY
# (meson puts the folder of a library named among a test's arguments on LD_LIBRARY_PATH: the stub's
# folder is taken off it, so the runs "without a driver" are)
LD_LIBRARY_PATH=$(printf %s "${LD_LIBRARY_PATH:-}" | tr : "\n" | grep -vxF "$STUB_DIR" | paste -sd: -)
export LD_LIBRARY_PATH
if [ ! -f "$(dirname "$SDCSCAN")/sdcscan-gpu.so" ]; then
	echo "SKIP: this build has no GPU module"
	exit 77
fi
if "$SDCSCAN" version | grep -q "^gpus: [0-9]"; then
	echo "SKIP: this host has the NVIDIA driver"
	exit 77
fi
# (the loader's own record of every library it opens; the module names sdcscan-gpu.so)
opened() { # opened NAME: which libraries of interest the run in $TMP/NAME.err opened
	grep -o "file=[^ ]*" "$TMP/$1.err" | sed 's|^file=.*/|file=|' | grep "^file=\(libcublasLt\|libcublas\|sdcscan-gpu\)" |
		sort -u | tr '\n' ' '
}
LD_DEBUG=files expect_exit 0 version "$SDCSCAN" version
expect_grep version out "^gpus: none: no NVIDIA driver here (libcuda.so.1: "
[ -z "$(opened version)" ] || fail "version without a driver opened $(opened version)"
LD_DEBUG=files expect_exit 0 list "$SDCSCAN" list
[ -z "$(opened list)" ] || fail "list without a driver opened $(opened list)"
LD_DEBUG=files expect_exit 0 run "$SDCSCAN" run $SMALL --set gemm.dtypes=int8 --cpus 0 --duration 1 --no-state
[ -z "$(opened run)" ] || fail "run without a driver opened $(opened run)"
LD_DEBUG=files expect_exit 0 gpusnone "$SDCSCAN" run $SMALL --set gemm.dtypes=int8 --cpus 0 --gpus none --duration 1 --no-state
[ -z "$(opened gpusnone)" ] || fail "run --gpus none opened $(opened gpusnone)"
# --gpus 0: the module is asked, and says why no GPU can be tested
LD_DEBUG=files expect_exit 3 gpus0 "$SDCSCAN" run $SMALL --set gemm.dtypes=int8 --cpus 0 --gpus 0 --duration 1 --no-state
case "$(opened gpus0)" in *sdcscan-gpu*libcublasLt* | *libcublasLt*sdcscan-gpu*) ;; *) fail "--gpus 0 did not load the module: $(opened gpus0)" ;; esac
expect_grep gpus0 err "no GPU can be tested"
# a libcuda.so.1 on the library path: the module is loaded (and finds no usable driver in it)
LD_LIBRARY_PATH="$STUB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" LD_DEBUG=files expect_exit 0 stub "$SDCSCAN" version
case "$(opened stub)" in *sdcscan-gpu*) ;; *) fail "version with libcuda.so.1 found did not load the module: $(opened stub)" ;; esac
grep -q "^gpus: none: no NVIDIA driver here" "$TMP/stub.out" && fail "stub: said no driver where libcuda.so.1 was found"
finish
