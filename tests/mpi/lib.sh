# Shared helpers of the mpi suite: 4 ranks on one host over TCP loopback (CONVENTIONS.md).
# Sourced after tests/cli/lib.sh; skips (77) without mpirun or an MPI build.
if ! command -v mpirun >/dev/null 2>&1; then
	echo "mpirun not installed (apt-get install openmpi-bin): the mpi suite is skipped"
	exit 77
fi
if ! "$SDCSCAN" version | grep -q "^features: .*mpi=yes"; then
	echo "this sdcscan was built without MPI: the mpi suite is skipped"
	exit 77
fi
# (-x SDC_TEST_JOB: the kill and interrupt tests pick their victim among this test's ranks only)
export SDC_TEST_JOB=$$
# (mpirun itself without meson's MALLOC_PERTURB_: Open MPI 4.1.4's launcher relays a dead peer's
# "peer hung up" through freed memory, and perturbed it crashes nearly every time; the ranks, our
# code, keep it)
MPIRUN="env -u MALLOC_PERTURB_ mpirun --allow-run-as-root --oversubscribe -np 4 --mca btl self,tcp -x SDC_TEST_JOB${MALLOC_PERTURB_:+ -x MALLOC_PERTURB_=$MALLOC_PERTURB_}"

# Waits until every rank of the job writing $1 is past MPI_Init and burning (rank 0 prints its
# header line then: MPI_Init returns once every rank has joined), then $2 seconds more.
wait_started() { # wait_started OUTPUT SECONDS
	for _ in $(seq 60); do
		grep -q "^sdcscan .*profile" "$1" 2>/dev/null && break
		sleep 0.5
	done
	sleep "$2"
}
# The pid of this test's rank N (an sdcscan process, not its sh wrapper), or nothing.
rank_pid() { # rank_pid N
	for p in $(pgrep -x sdcscan); do
		grep -qz "^OMPI_COMM_WORLD_RANK=$1$" "/proc/$p/environ" 2>/dev/null &&
			grep -qz "^SDC_TEST_JOB=$SDC_TEST_JOB$" "/proc/$p/environ" && echo "$p"
	done | head -1
}

# Each rank appends "RANK CODE" to $1, so the test sees every rank's exit status.
each_rank() { # each_rank CODES-FILE ARGS...
	codes=$1
	shift
	: > "$codes"
	$MPIRUN sh -c '"$@"; echo "$OMPI_COMM_WORLD_RANK $?" >> '"$codes" sh "$SDCSCAN" "$@"
}
same_code() { # same_code CODES-FILE CODE: every one of the 4 ranks exited CODE
	[ "$(sort -u "$1" | awk '{print $2}' | sort -u)" = "$2" ] && [ "$(wc -l < "$1")" -eq 4 ]
}
# Waits (30 s at most) until no sdcscan process of this test is left (after a launcher that
# crashed: its ranks may go on writing their files for a while).
wait_job_gone() {
	for _ in $(seq 60); do
		left=""
		for p in $(pgrep -x sdcscan); do
			grep -qz "^SDC_TEST_JOB=$SDC_TEST_JOB$" "/proc/$p/environ" 2>/dev/null && left="$left $p"
		done
		[ -z "$left" ] && return 0
		sleep 0.5
	done
	kill -9 $left 2>/dev/null
}

# kill_mid_run RANK SETTLE FILES SDCSCAN-ARGS...: runs sdcscan on every rank (mpirun
# --enable-recovery: the survivors must not be ended with the dead) and SIGKILLs rank RANK once the
# job has burned SETTLE seconds; every rank's exit code goes to FILES.codes ("RANK CODE"), the
# output to FILES.out. Sets $started, $killed (epoch seconds) and $launcher_status. Open MPI
# 4.1.4's mpirun itself sometimes segfaults relaying a survivor's "peer hung up" message
# (pmix_server_log_fn -> orte_rml_oob_send_buffer_nb, a few runs in a hundred here) and takes the
# survivors with it: that crash of the launcher, and only that, gets the job run again, twice at
# most, after its ranks are waited out; the run that counts must pass the caller's checks.
kill_mid_run() {
	k_rank=$1 k_settle=$2 k_files=$3
	shift 3
	for k_attempt in 1 2 3; do
		started=$(date +%s)
		: > "$k_files.codes"
		$MPIRUN --enable-recovery sh -c '"$@"; echo "$OMPI_COMM_WORLD_RANK $?" >> '"$k_files.codes" sh "$SDCSCAN" \
			"$@" > "$k_files.out" 2>&1 &
		k_launcher=$!
		wait_started "$k_files.out" "$k_settle"
		k_victim=$(rank_pid "$k_rank")
		[ -n "$k_victim" ] || fail "kill: rank $k_rank not found"
		kill -9 "$k_victim"
		killed=$(date +%s)
		launcher_status=0
		wait "$k_launcher" || launcher_status=$?
		[ "$launcher_status" -eq 139 ] || return 0
		echo "kill: mpirun crashed (SIGSEGV) on attempt $k_attempt; running the job again"
		wait_job_gone # (its ranks would go on writing this test's files)
	done
}

# rank_dies FILES SDCSCAN-ARGS...: runs sdcscan on every rank (mpirun --enable-recovery) where a
# planted fault kills one; every rank's exit code goes to FILES.codes, the output to FILES.out,
# the job's seconds to $took. mpirun's own crash relaying the death (see kill_mid_run) gets the
# job run again, twice at most.
rank_dies() {
	d_files=$1
	shift
	for d_attempt in 1 2 3; do
		d_start=$(date +%s)
		: > "$d_files.codes"
		d_rc=0
		$MPIRUN --enable-recovery sh -c '"$@"; echo "$OMPI_COMM_WORLD_RANK $?" >> '"$d_files.codes" sh "$SDCSCAN" \
			"$@" > "$d_files.out" 2>&1 || d_rc=$?
		took=$(( $(date +%s) - d_start ))
		[ "$d_rc" -eq 139 ] || return 0
		echo "$d_files: mpirun crashed (SIGSEGV) on attempt $d_attempt; running the job again"
		wait_job_gone
	done
}
