#!/bin/sh
# The kernels' PTX, compiled with the module's own flags, holds no fused multiply-add and no
# flush-to-zero: the exact kernels and the host's twins (gpu_truth.c, xops.h, ring_hd.h) must
# round alike, so no contraction may change a bit (DESIGN.md, GPU.md). And the lint must be able
# to fail: a canary built without -fmad=false does contract, and with the flags does not.
# usage: ptx_lint.sh NVCC SOURCE.cu INCLUDE_DIR... -- NVCC_FLAGS...
set -u
NVCC=$1 SRC=$2
shift 2
INCS=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
	INCS="$INCS -I$1"
	shift
done
[ $# -gt 0 ] && shift
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sdcscan-ptx.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
FLAGS=""
for f in "$@"; do
	# -gencode lists real architectures; the lint reads one virtual architecture's PTX
	case "$f" in -gencode=* | -Werror=*) ;; *) FLAGS="$FLAGS $f" ;; esac
done
# shellcheck disable=SC2086
if ! "$NVCC" $FLAGS $INCS -arch=compute_90 -ptx "$SRC" -o "$TMP/project.ptx" 2>"$TMP/err"; then
	echo "FAIL: nvcc -ptx with the module's flags:" >&2
	cat "$TMP/err" >&2
	exit 1
fi
failed=0
# PTX_LINT_FMA_F32=required (embbag.cu): the kernel fuses exactly where the CPU's kernels call
# fmaf (__fmaf_rn, fma.rn.f32), so that one form must be there, and no other fma may be.
if [ "${PTX_LINT_FMA_F32:-}" = required ]; then
	if ! grep -q 'fma\.rn\.f32' "$TMP/project.ptx"; then
		echo "FAIL: no fma.rn.f32 in the PTX of $SRC: the CPU's fmaf is not mirrored (__fmaf_rn)" >&2
		failed=1
	fi
	grep -v 'fma\.rn\.f32' "$TMP/project.ptx" >"$TMP/rest.ptx"
	mv "$TMP/rest.ptx" "$TMP/project.ptx"
fi
# PTX_LINT_SHARED_LOADS=v4 (xgemm.cu): every shared-memory load is 128-bit, as the exact GEMM's
# roofline counts them (probes/minitrain/bench_gpu.c): scalar ones would take 12 wavefronts a step, not 3.
if [ "${PTX_LINT_SHARED_LOADS:-}" = v4 ]; then
	if ! grep -q 'ld\.shared\.v4\.f32' "$TMP/project.ptx" || grep -q 'ld\.shared\.f32' "$TMP/project.ptx"; then
		echo "FAIL: $SRC's shared-memory loads are not all ld.shared.v4.f32: $(grep -c 'ld\.shared\.f32' "$TMP/project.ptx") scalar" >&2
		failed=1
	fi
fi
if grep -n 'fma\.' "$TMP/project.ptx" >"$TMP/fma"; then
	echo "FAIL: $(wc -l <"$TMP/fma") fused multiply-adds in the PTX of $SRC, e.g.:" >&2
	head -3 "$TMP/fma" >&2
	failed=1
fi
if grep -n '\.ftz' "$TMP/project.ptx" >"$TMP/ftz"; then
	echo "FAIL: flush-to-zero instructions in the PTX of $SRC, e.g.:" >&2
	head -3 "$TMP/ftz" >&2
	failed=1
fi
# The self-check: the grep must be able to find what it seeks. A kernel that contracts where
# nothing forbids it, built with these flags but -fmad=false, must show an fma (the file under lint
# may hold none to contract: its exact arithmetic is all _rn intrinsics).
NOFMAD=$(echo "$FLAGS" | sed 's/-fmad=false//')
printf '__global__ void canary(float *a) { a[0] = a[1] * a[2] + a[3]; }\n' >"$TMP/canary.cu"
# shellcheck disable=SC2086
"$NVCC" $NOFMAD -arch=compute_90 -ptx "$TMP/canary.cu" -o "$TMP/fmad.ptx" 2>/dev/null
if ! grep -q 'fma\.' "$TMP/fmad.ptx"; then
	echo "FAIL: the self-check found no fma even with contraction allowed: the lint cannot see one" >&2
	failed=1
fi
# shellcheck disable=SC2086
"$NVCC" $FLAGS -arch=compute_90 -ptx "$TMP/canary.cu" -o "$TMP/nofmad.ptx" 2>/dev/null
if grep -q 'fma\.' "$TMP/nofmad.ptx"; then
	echo "FAIL: the module's flags let nvcc contract the canary: -fmad=false is not in effect" >&2
	failed=1
fi
[ $failed = 0 ] && echo "PASS: $(grep -c '^' "$TMP/project.ptx") lines of PTX, no fma${PTX_LINT_FMA_F32:+ but fma.rn.f32}, no ftz${PTX_LINT_SHARED_LOADS:+, shared loads $PTX_LINT_SHARED_LOADS}"
exit $failed
