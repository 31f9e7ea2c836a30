#!/bin/sh
# Each GPU family's table is versioned on its own (kernels/gpu_module.h): a module whose embbag
# table is of another version than this sdcscan's turns off embbag's GPU lanes alone, saying why,
# while gemm's GPU lanes run; and the other way round. The fake module reports a family one version
# older on request (FAKE_GPU_STALE, src/kernels/fake/fake_module.c).
# usage: gpu_family.sh SDCSCAN FAKE_GPU_MODULE FAKE_NVML
. "$(dirname "$0")/lib.sh"
FAKE_GPU=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
FAKE_NVML=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
export SDCSCAN_GPU_MODULE="$FAKE_GPU" SDCSCAN_NVML_LIBRARY="$FAKE_NVML" FAKE_GPU_COUNT=1
unset FAKE_GPU_STALE FAKE_GPU_FAIL FAKE_GPU_HANG FAKE_GPU_EB_BUG FAKE_GPU_EB_HANG
RUN="--probe gemm --probe embbag --set gemm.m=48 --set gemm.n=40 --set gemm.k=64 --set gemm.refresh=2 --set gemm.gpu_m=48
--set gemm.gpu_n=40 --set gemm.gpu_k=64 --set gemm.gpu_refresh=2 --set gemm.iterations=8 --set gemm.dtypes=int8
--set gemm.gpu_dtypes=int8 --set embbag.rows=8192 --set embbag.batches=4 --set embbag.iterations=8
--set embbag.formats=8bit --set embbag.classes=exact --cpus 0"

# Every family at this sdcscan's version: each is listed with its version, and both probes' GPU lanes run.
expect_exit 0 fresh "$SDCSCAN" version
expect_grep fresh out "^gpu families: gemm [0-9][0-9]*, minitrain [0-9][0-9]*, embbag [0-9][0-9]*, allreduce [0-9][0-9]*$"
expect_exit 0 both "$SDCSCAN" run $RUN
expect_grep both out "^gemm/int8  *gpu0  *OK"
expect_grep both out "^embbag/8bit-d64  *gpu0  *OK"

# embbag's table one version older: the module says so, the others unchanged.
FAKE_GPU_STALE=embbag expect_exit 0 staleeb "$SDCSCAN" version
versions() { sed -n 's/^gpu families: gemm \([0-9]*\), minitrain \([0-9]*\), embbag \([0-9]*\), allreduce \([0-9]*\)$/\1 \2 \3 \4/p' "$TMP/$1.out"; }
set -- $(versions fresh) $(versions staleeb)
[ $# = 8 ] && [ "$1 $2 $4" = "$5 $6 $8" ] && [ "$7" -eq $(($3 - 1)) ] ||
	fail "staleeb: the module's versions, fresh then embbag's stale: $*"
eb=${3:-1} gemm=${1:-1}
# ... and in a run: gemm's GPU lane runs and agrees, embbag's does not run and says why; the CPUs
# scan both probes.
FAKE_GPU_STALE=embbag "$SDCSCAN" run $RUN --json "$TMP/runeb.json" >"$TMP/runeb.out" 2>"$TMP/runeb.err"
[ $? = 0 ] && fail "runeb: exit 0 with embbag's GPU lane off"
expect_grep runeb out "^gemm/int8  *gpu0  *OK"
expect_grep runeb out "^gemm/int8  *cpu0  *OK"
expect_grep runeb out "^embbag/8bit-d64  *cpu0  *OK"
check=$(json_get "$TMP/runeb.json" "[x['status'] for x in r['results'] if x['probe'] == 'embbag' and x['device'] == 'gpu0']")
[ "$check" != "['ok']" ] && [ "$check" != "[]" ] || fail "runeb: embbag on gpu0: $check"
expect_grep runeb out "^embbag/8bit-d64  *gpu0  *UNKNOWN .*embbag's GPU operations at version $((eb - 1)), this sdcscan needs version $eb: install matching versions"

# gemm's table one version older: gemm's GPU lanes are off, saying why, embbag's GPU lane runs.
FAKE_GPU_STALE=gemm "$SDCSCAN" run $RUN >"$TMP/rungemm.out" 2>"$TMP/rungemm.err"
expect_grep rungemm out "gemm's GPU operations at version $((gemm - 1)), this sdcscan needs version $gemm: install matching versions"
expect_grep rungemm out "^embbag/8bit-d64  *gpu0  *OK"
expect_grep rungemm out "^gemm/int8  *cpu0  *OK"
if grep -q "^gemm/[a-z0-9-]*  *gpu0  *OK" "$TMP/rungemm.out"; then
	fail "rungemm: a gemm GPU lane ran with gemm's table of another version"
fi
finish
