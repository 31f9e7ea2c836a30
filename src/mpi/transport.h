/*
 * The MPI transport (DESIGN.md "Multi-node"): under mpirun or srun every rank runs its probes
 * and talks to the others through these calls; the vote across ranks is runner/fleet_vote.h. Every
 * wait has a deadline: a rank that is dead or stuck is named instead of hanging the job.
 * Point-to-point messages only (a collective cannot say who did not come).
 *
 * Without MPI in the build, or when not launched by an MPI launcher, everything here is a no-op
 * with one rank, except the launch check: a scheduler that says there are several tasks while
 * this process is alone gives UNKNOWN, not OK.
 */
#ifndef SDC_MPI_TRANSPORT_H
#define SDC_MPI_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "run/record.h"
#include "base/verdict.h"

struct sdc_mpi {
	bool active; /* MPI initialised with more than zero ranks */
	int rank, size;
	int local_rank, local_size; /* this rank's place among the ranks on its host, and their count */
	char host[64];
	double timeout; /* seconds any one wait may take */
};

extern struct sdc_mpi sdc_mpi;

/* The MPI watchdog (mpi/transport.c) ends a rank whose one MPI call has lasted the timeout plus this many
 * seconds (the man page says how long; tests/unit/test_defaults.c holds the two together). */
#define SDC_FLEET_WATCH_GRACE 5.0
/* The same watchdog bounds MPI's start (the launcher's wire-up of every rank, the first collective):
 * a rank still in it after this many seconds ends (UNKNOWN). */
#define SDC_FLEET_INIT_SECONDS 300.0

/* MPI_Init_thread when launched by an MPI launcher (OMPI_/PMI_/PMIX_ environment). */
int sdc_mpi_init(int *argc, char ***argv);
/* Ends MPI; after a peer died, skips MPI_Finalize (which would wait for it) and exits with code. */
void sdc_mpi_end(int code);

/*
 * An interrupt on one rank ends them all. Called by the main thread while probes run: passes this
 * rank's interrupt (local true) on to every rank, once, and returns true with *from set to the
 * rank when another rank's interrupt has arrived.
 */
bool sdc_mpi_interrupt_poll(bool local, int *from);

/* Adds an UNKNOWN host finding when the scheduler's task count and MPI's rank count disagree. */
void sdc_mpi_launch_check(struct sdc_run *run);

/*
 * A gather of texts at rank 0, with deadlines, and rank 0's answer back (the fleet verdict, the
 * selftest's). Rank != 0: sdc_mpi_to_root sends text and waits for the answer (-1: rank 0 did not
 * answer). Rank 0: sdc_mpi_gather_texts fills texts[1..size-1] (malloc'd, NULL for a rank that
 * sent nothing in time), then sdc_mpi_answer sends the answer to the ranks marked alive.
 */
int sdc_mpi_to_root(const char *text, int32_t *answer, int tag);
void sdc_mpi_gather_texts(char **texts, int tag);
void sdc_mpi_answer(const bool *alive, int32_t answer, int tag);

/*
 * Point-to-point exchange with a deadline, for probes: sends sbuf to dst and receives into rbuf
 * from src (either count may be 0). Returns 0, or -1 with *late set to the rank that did not
 * complete its side in time (or failed).
 */
int sdc_mpi_sendrecv(const void *sbuf, int sbytes, int dst, void *rbuf, int rbytes, int src, int tag,
		       double timeout, int *late);
/* The same with up to two parts each way (a header and a payload sent from where it lies), for a
 * ring's neighbours: a neighbour is late when nothing, data or heartbeat, has come from it for the
 * timeout; one that gives up tells every rank whom it gave up on, and that ends their waits with
 * *late set to the same rank (-1: the others gave up on this one). */
struct sdc_mpi_part {
	void *buf;
	int bytes;
};
int sdc_mpi_exchange(const struct sdc_mpi_part *send, int nsend, int dst, const struct sdc_mpi_part *recv,
		       int nrecv, int src, int tag, double timeout, int *late);
/* From now on this rank's point-to-point exchanges never come back, as from an MPI library that
 * stopped returning (Open MPI's TCP transport spinning in MPI_Test after a peer died): a fault
 * planted for the watchdog to end (the allreduce probe's X). */
void sdc_mpi_stall(void);
/* out[r * bytes ..] = rank r's in, for every rank, with a deadline; -1 on timeout. */
int sdc_mpi_allgather(const void *in, int bytes, void *out, double timeout);
/* Sum of v over all ranks (for agreeing on a count), with a deadline; -1 on timeout. */
int sdc_mpi_sum_u64(uint64_t *v, double timeout);
/*
 * One exchange among the ranks still taking part (live[r]): send[r] to every other live rank r and
 * recv[r] (its capacity; on return recv[r].bytes is what arrived) from each, all posted at once and waited for with one deadline, for
 * probes whose members may be lost mid-run (ecparity). A rank that fails or does not complete in
 * time (nothing from it, data or heartbeat, for timeout seconds: a rank blocked behind a lost one
 * keeps beating) is marked gone in live[] and every live rank is told (a notice), so none of them
 * waits its deadline out again; a notice that arrives meanwhile marks that rank gone here too. An
 * abandoned receive is cancelled, so a late message cannot land in a buffer used since.
 * Returns the ranks newly marked gone, or -1 when a notice says this rank is gone (cut off).
 */
int sdc_mpi_alltoall(const struct sdc_mpi_part *send, struct sdc_mpi_part *recv, bool *live, int tag,
		       double timeout);
/* Says to every live rank that this one is there, at most once a period (seconds), and takes in
 * theirs: sdc_mpi_alltoall calls it while it waits, and a rank computing longer than a fraction
 * of the timeout between two exchanges calls it now and then (a rebuild's replay). */
void sdc_mpi_keepalive(const bool *live, double period);
/* Tells every live rank that this one leaves the exchanges of sdc_mpi_alltoall (a member taken
 * away on purpose: the others stop waiting for it at once, and MPI stays usable for the rest). */
void sdc_mpi_leave(const bool *live);
/* Whether rank's sdc_mpi_leave has reached this one (in an sdc_mpi_alltoall): it stopped on
 * purpose, and is not to be named as lost. */
bool sdc_mpi_left(int rank);
/* MPI_Test(req (an MPI_Request *), flag) under the watchdog that ends a process whose MPI library
 * stops returning after a peer died (mpi/transport.c); only with MPI. */
int sdc_mpi_test(void *req, int *flag);
/* The host name of a rank, when the gather has happened or for this rank; "rank N" otherwise. */
const char *sdc_mpi_host(int rank);
/* The element-wise sum of every rank's n floats into out (MPI_Allreduce, the vendor collective the
 * allreduce probe checks), with a deadline. 0, or -1 when it did not finish in time. */
int sdc_mpi_allreduce_f32(const float *in, float *out, int64_t n, double timeout);

/*
 * A burn's process (runner/burn.h) never joins MPI: its calls above go to the run's parent, which
 * makes them with its own deadlines and watchdog (mpi/transport_remote.c). fn sends a call's bytes and
 * takes the reply; the payloads lie in window, mapped by both. The hosts of the ranks come with
 * the burn's order (sdc_mpi_host works without a call).
 */
#define SDC_MPI_REMOTE_MAX_RANKS 4096
typedef int (*sdc_mpi_remote_fn)(void *arg, const void *req, size_t reqlen, void *reply, size_t replymax,
				   size_t *replylen, double timeout);
void sdc_mpi_set_remote(sdc_mpi_remote_fn fn, void *arg, void *window, size_t bytes);
void sdc_mpi_set_hosts(const char (*hosts)[64], int n);
/* The parent's side: makes the call req asks for, its payloads in the window; the reply in reply
 * (at most max bytes, *rlen used). A call whose bytes do not check out (a part outside the window,
 * a rank that is none, a tag the transport keeps for itself, a stall no --inject asked for) is answered
 * as failed, and a deadline past max_timeout is cut to it. Returns 0, or -1 when the call was
 * refused or failed (a request given up on may still write the window later). */
struct sdc_mpi_serving {
	void *window;
	size_t bytes;
	double max_timeout;
	bool may_stall;
};
int sdc_mpi_serve(const void *req, size_t len, const struct sdc_mpi_serving *sv, void *reply, size_t max,
		    size_t *rlen);
/* Whether a probe may use tag: the transport's own (its notices, heartbeats, the reports' gather) are
 * kept apart. */
bool sdc_mpi_probe_tag(int tag);

#endif
