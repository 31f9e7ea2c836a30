#!/bin/sh
# A real Slurm: munged, slurmctld and slurmd (Debian's slurm-wlm) on this host as a one-node
# cluster, in a temporary directory on their own ports. Checks (1) that slurmd, running
# packaging/'s HealthCheckProgram itself, drains the node with an "sdcscan:" reason when the
# node's state is CRITICAL and resumes it only once that is cleared, but leaves an admin's drain alone;
# (2) that srun -n 4 --mpi=pmix runs a 4-rank sdcscan whose fleet verdict is srun's exit code.
# Exits 77 (skipped) where Slurm or munge is not installed or this is not root (the daemons
# need it); anything else that fails is a failure.
# usage: slurm.sh SDCSCAN BUILD_ROOT
. "$(dirname "$0")/../cli/lib.sh"
BLD=${2:?build root}
for p in slurmctld slurmd munged mungekey srun scontrol sinfo; do
	command -v $p >/dev/null || { echo "SKIP: $p not installed (apt-get install slurm-wlm munge)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: not root: the Slurm daemons run as root here"; exit 77; }
grep -q pmix "$(dirname "$SDCSCAN")/../meson-info/intro-buildoptions.json" 2>/dev/null || true
"$SDCSCAN" version | grep -q "mpi=yes" || { echo "SKIP: sdcscan built without MPI"; exit 77; }

S=$TMP/slurm
mkdir -p "$S/state" "$S/spool" "$S/munge"
chmod 700 "$S/munge"
SDC=$(cd "$(dirname "$SDCSCAN")" && pwd)/$(basename "$SDCSCAN")
cleanup() {
	[ -f "$S/slurmd.pid" ] && kill "$(cat "$S/slurmd.pid")" 2>/dev/null
	[ -f "$S/slurmctld.pid" ] && kill "$(cat "$S/slurmctld.pid")" 2>/dev/null
	[ -f "$S/munge/munged.pid" ] && kill "$(cat "$S/munge/munged.pid")" 2>/dev/null
	sleep 1
	[ "$FAILED" = 0 ] || tail -n 20 "$S/slurmd.log" "$S/slurmctld.log" >&2
	rm -rf "$TMP"
}
trap cleanup EXIT

mungekey --create --keyfile="$S/munge/munge.key" >/dev/null 2>&1 || { fail "mungekey"; finish; }
munged --force --socket="$S/munge/sock" --key-file="$S/munge/munge.key" --pid-file="$S/munge/munged.pid" \
	--log-file="$S/munge/munged.log" --seed-file="$S/munge/seed" 2>"$S/munged.err" ||
	{ fail "munged: $(cat "$S/munged.err")"; finish; }

# The health check as slurmd runs it: a wrapper gives it this test's sdcscan and state directory.
cat >"$S/hc.sh" <<SH
#!/bin/sh
# slurmd runs it with an empty environment: scontrol must be told where this cluster's config is
export SLURM_CONF=$S/slurm.conf PATH=/usr/sbin:/usr/bin:/sbin:/bin
SDCSCAN=$SDC SDCSCAN_STATE_DIR=$S/st NODE=$(hostname -s) sh $BLD/packaging/sdcscan-healthcheck.sh
rc=\$?
echo done >>$S/hc.count
exit \$rc
SH
chmod +x "$S/hc.sh"
NODE=$(hostname -s)
cat >"$S/slurm.conf" <<CONF
ClusterName=sdcscantest
SlurmctldHost=$NODE
SlurmctldPort=26817
SlurmdPort=26818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$S/munge/sock
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
HealthCheckProgram=$S/hc.sh
HealthCheckInterval=2
HealthCheckNodeState=ANY
NodeName=$NODE CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
CONF
export SLURM_CONF=$S/slurm.conf
slurmctld -f "$SLURM_CONF" 2>"$S/ctld.err" || { fail "slurmctld: $(cat "$S/ctld.err")"; finish; }
slurmd -f "$SLURM_CONF" 2>"$S/slurmd.err" || { fail "slurmd: $(cat "$S/slurmd.err")"; finish; }
up=
for _ in $(seq 60); do
	sinfo -h -o %t 2>/dev/null | grep -qE "^(idle|mix|alloc|drain)" && { up=1; break; }
	sleep 0.5
done
[ -n "$up" ] || { fail "the one-node cluster did not come up: $(tail -5 "$S/slurmctld.log" "$S/slurmd.log")"; finish; }
reason() { scontrol show node "$NODE" | sed -n 's/^ *Reason=\(.*\) \[.*/\1/p'; }
wait_reason() { # wait_reason PATTERN: up to 20 s for the node's reason to match (empty: no reason)
	for _ in $(seq 40); do
		r=$(reason)
		case $1 in "") [ -z "$r" ] && return 0 ;; *) echo "$r" | grep -q "$1" && return 0 ;; esac
		sleep 0.5
	done
	return 1
}
# two_checks: wait (up to 20 s) until slurmd has finished two more health checks, so that at
# least one ran whole after what came before; a slow slurmd must not pass a check never made
two_checks() {
	n=$(($(cat "$S/hc.count" 2>/dev/null | wc -l) + 2))
	for _ in $(seq 40); do
		[ "$(cat "$S/hc.count" 2>/dev/null | wc -l)" -ge $n ] && return 0
		sleep 0.5
	done
	fail "slurmd ran no two health checks in 20 s"
}
SMALL_RUN="run --probe gemm --set gemm.dtypes=int8 --set gemm.m=48 --set gemm.n=40 --set gemm.k=64 --duration 1"

# (1) HealthCheckProgram, run by slurmd itself. A real CRITICAL (not an injected one, which never
# changes the node's state): a scheduled run on a GPU whose SM 3 computes wrong (the fake GPU
# module). It drains; the OK run after it does not resume (a CRITICAL stays until cleared);
# `sdcscan clear` does.
printf 'probes:\n  gemm:\n    dtypes: [int8]\n    m: 48\n    n: 40\n    k: 64\n    gpu_dtypes: [bf16]\n    gpu_m: 48\n    gpu_n: 40\n    gpu_k: 64\n    duration: 2\n' >"$TMP/sched.yaml"
# (the profile as it is: full scheduled runs; --duration or --cpus would make them partial)
SCHED="run --profile $TMP/sched.yaml"
export SDCSCAN_GPU_MODULE=$BLD/tests/fake-gpu.so SDCSCAN_NVML_LIBRARY=$BLD/tests/fake-nvml.so
SDCSCAN_STATE_DIR=$S/st FAKE_GPU_BAD_SM=3 expect_exit 2 crit "$SDC" $SCHED
wait_reason "^sdcscan: gpu0 gemm/.* checksum-mismatch C\[0\]\[0\]" ||
	fail "CRITICAL: slurmd's health check did not drain with an sdcscan: reason (state: $(scontrol show node "$NODE" | grep -E 'State=|Reason='))"
SDCSCAN_STATE_DIR=$S/st expect_exit 0 ok "$SDC" $SCHED
two_checks
reason | grep -q "^sdcscan:" || fail "OK after a CRITICAL resumed the node before anyone cleared it (reason: $(reason))"
SDCSCAN_STATE_DIR=$S/st expect_exit 0 clear "$SDC" clear --reason "replaced gpu0"
wait_reason "" || fail "cleared: the node sdcscan drained was not resumed (reason: $(reason))"
unset SDCSCAN_GPU_MODULE SDCSCAN_NVML_LIBRARY
scontrol update NodeName="$NODE" State=DRAIN Reason="admin: reseat DIMM"
two_checks
[ "$(reason)" = "admin: reseat DIMM" ] || fail "OK resumed or changed an admin's drain (reason: $(reason))"
scontrol update NodeName="$NODE" State=RESUME

# (2) srun -n 4: the fleet verdict is srun's exit code (srun returns the highest of its tasks').
SDCSCAN_STATE_DIR=$S/st2 expect_exit 0 srun_ok srun -n 4 --mpi=pmix --overcommit "$SDC" $SMALL_RUN
expect_grep srun_ok out "^rank 3 ([^)]*): OK"
SDCSCAN_STATE_DIR=$S/st2 expect_exit 2 srun_bad srun -n 4 --mpi=pmix --overcommit "$SDC" $SMALL_RUN \
	--inject "gemm/int8:C:device=0,iter=1,bit=12,rank=2"
expect_grep srun_bad out "^rank 2 ([^)]*): CRITICAL"
expect_grep srun_bad out "fleet-disagreement"
finish
