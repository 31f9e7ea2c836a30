#!/bin/sh
# The kernels' PTX, compiled with the module's own flags, holds no fused multiply-add and no
# flush-to-zero: the exact kernels and the host's twins (gpu_truth.c) must round alike, so no
# contraction may change a bit (DESIGN.md, GPU.md). And the lint must be able to fail: the same
# source built without -fmad=false does contract somewhere.
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
# The self-check: without -fmad=false nvcc contracts (so the grep above can find what it seeks).
NOFMAD=$(echo "$FLAGS" | sed 's/-fmad=false//')
# shellcheck disable=SC2086
"$NVCC" $NOFMAD $INCS -arch=compute_90 -ptx "$SRC" -o "$TMP/fmad.ptx" 2>/dev/null
if ! grep -q 'fma\.' "$TMP/fmad.ptx"; then
	echo "FAIL: the self-check found no fma even with contraction allowed: the lint cannot see one" >&2
	failed=1
fi
[ $failed = 0 ] && echo "PASS: $(grep -c '^' "$TMP/project.ptx") lines of PTX, no fma, no ftz"
exit $failed
