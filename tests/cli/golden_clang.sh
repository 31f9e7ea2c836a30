#!/bin/sh
# The golden cross-check built by a second compiler: clang compiles the exact sources and
# tests/golden/golden_check.c, and the result must reproduce every shipped trajectory.
# usage: golden_clang.sh SOURCE_ROOT GOLDEN...
set -eu
root=$1
shift
if ! command -v clang >/dev/null 2>&1; then
	echo "clang not installed: the second-compiler cross-check is skipped (apt-get install clang)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
src="$root/src"
printf '#define HAVE_CUDA 0\n' > "$tmp/sdc_config.h"
clang -std=c11 -O2 -D_GNU_SOURCE -ffp-contract=off -Wall -Werror -I"$tmp" -I"$src" \
	"$root/tests/golden/golden_check.c" "$src/probes/minitrain/attn_check.c" "$src/kernels/exact_gemm.c" \
	"$src/kernels/exactmath.c" "$src/probes/minitrain/model.c" "$src/probes/minitrain/model_make.c" "$src/probes/minitrain/mt_dlrm.c" "$src/probes/minitrain/mt_xfmr.c" \
	"$src/base/rng.c" -lcrypto -ljansson -lxxhash -lm -o "$tmp/golden_check"
"$tmp/golden_check" "$@"
