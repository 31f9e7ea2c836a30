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
