/*
 * A variant's burn in processes of its own (DESIGN.md "Where work runs"), and the channel between
 * them and the run's process.
 *
 * The run's process (the parent) burns nothing. For each variant it spawns the variant's leader by
 * exec'ing sdcscan itself (SDC_BURN_ARGV1), so the leader inherits none of the parent's threads,
 * MPI state, CUDA context, locks or heap. The leader reads its order, runs the probe's setup and,
 * still one thread and without CUDA (it checks both), forks one worker process per device and
 * exits. The workers are adopted by the parent (PR_SET_CHILD_SUBREAPER), which alone waits for
 * them, kills them and reaps them; each binds its device, runs the probe's lane, reports and
 * _exits. Why a process a device and variant, not a device for the whole run: the setup's tables
 * are shared with every worker copy-on-write (one copy of embbag's table for all cores, where a
 * process a device would build its own), each variant starts from a process no earlier variant
 * touched, and a device that crashed or hung is given no more work in the run anyway.
 *
 * The channel, made by the parent before the leader runs:
 *   slots    one shared mapping (a memfd) of fixed layout, one slot a worker and one for the
 *            leader: parent -> process, the stop flags (base/stop.h); process -> parent, its pid,
 *            phase, progress (iterations, heartbeats), its result digests (a ring) and the crash
 *            record its fault handler writes before the process dies of the fault.
 *   sockets  one SOCK_SEQPACKET pair a worker and one for the leader: records, one a message (a
 *            finding, an injection, facts, an error, the result), and the fleet calls the parent
 *            makes for a worker under MPI (mpi/transport.h's remote calls) and their replies.
 * The parent reads both as it reads a peer's bytes: each record and slot field is checked (type,
 * size, ranges, strings ended) before use; one that fails is a finding at the worker's device.
 */
#ifndef SDC_CORE_BURN_H
#define SDC_CORE_BURN_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runner/plan.h"
#include "mpi/transport.h"
#include "probe/probe.h"
#include "run/record.h"
#include "base/stop.h"


/* Bumped when the order, a slot or a record changes; with the structs' sizes it must match
 * between the parent and the leader (the same executable, /proc/self/exe). */
#define SDC_BURN_VERSION 1u
#define SDC_BURN_MAGIC 0x53444342u /* "SDCB" */

/* ---- the slot (shared memory, fixed layout) ---- */

#define SDC_BURN_RING 4096 /* result digests in flight: the parent drains them every 0.1 s */

enum sdc_burn_phase {
	SDC_BURN_FORKED,    /* the worker's process exists (its pid is set) */
	SDC_BURN_ADOPTED,   /* the parent is its parent: it may be supervised */
	SDC_BURN_BURNING,   /* its device bound, the lane running */
	SDC_BURN_REPORTED,  /* its result sent: what is left is its exit */
};

/* What the fault handler saw, written in signal context just before the process dies of it. */
struct sdc_burn_crash {
	_Atomic uint32_t claimed; /* the first thread to fault takes the record; others die unsaid */
	_Atomic uint32_t written; /* 1 once the rest is written */
	int32_t signo, code;
	int32_t sender;    /* si_pid of a signal a process sent (si_code <= 0), else 0 */
	int32_t is_fault;  /* the process's own view (the parent decides from code and sender) */
	uint64_t addr, ip, iteration;
	uint64_t module_offset; /* ip from the load address of the module that holds it */
	char module[120];       /* that module's file name, "" when none holds it */
};

struct sdc_burn_digest {
	uint64_t iteration, digest;
};

struct sdc_burn_slot {
	uint32_t magic; /* SDC_BURN_MAGIC, written by the parent */
	uint32_t index; /* the worker (nworkers: the leader) */
	/* parent -> process */
	struct sdc_stop_flags stop;
	/* process -> parent */
	struct sdc_worker_progress progress;
	_Atomic int32_t pid;
	_Atomic uint32_t phase;        /* enum sdc_burn_phase */
	_Atomic uint64_t t_burn;       /* when its lane began (sdc_now(), a double's bits) */
	_Atomic uint64_t ring_head;    /* digests written (the process) */
	_Atomic uint64_t ring_tail;    /* digests taken (the parent) */
	struct sdc_burn_digest ring[SDC_BURN_RING];
	struct sdc_burn_crash crash;
};

/* Slots are page-aligned, so a worker unmaps the others' and keeps only its own. */
size_t sdc_burn_slot_stride(void);

/* ---- records (one SOCK_SEQPACKET message each) ---- */

enum sdc_burn_record_type {
	SDC_REC_SETUP = 1,    /* leader: the setup is done (struct sdc_burn_setup) */
	SDC_REC_SETUP_FAILED, /* leader: why the variant cannot run here (text) */
	SDC_REC_PIDS,         /* leader: its workers' pids, int32_t a worker (0: not started) */
	SDC_REC_FINDING,      /* struct sdc_finding */
	SDC_REC_DROPPED,      /* a finding detected but not kept in detail */
	SDC_REC_INJECTION,    /* struct sdc_injection */
	SDC_REC_FACTS,        /* struct sdc_burn_facts_head, then JSON text with its NUL */
	SDC_REC_ERROR,        /* struct sdc_burn_error */
	SDC_REC_RESULT,       /* struct sdc_burn_result */
	SDC_REC_CALL,         /* a fleet call for the parent to make (mpi/transport.h), its bytes */
	SDC_REC_REPLY,        /* parent -> worker: the call's outcome */
	SDC_REC_NTYPES,
};

struct sdc_burn_head {
	uint32_t type;
	int32_t worker; /* the worker the record is about (a finding may be filed for another's device) */
};

/* Facts records a process may send (a probe states a few a variant). */
#define SDC_BURN_FACTS_MAX 1000

/* The largest record: a fleet call's header (its payload goes through the window), facts. */
#define SDC_BURN_RECORD_MAX (192 * 1024)

struct sdc_burn_setup {
	char rate_unit[16], iter_unit[16];
	double rate_scale, floor;
	double t_start;        /* the variant's clock (its deadline is t_start + its share) */
	double setup_seconds;  /* the probe's setup */
	double fleet_timeout;  /* the fleet's wait as the setup left it (a probe's timeout option sets it:
				* the run's gather at the end waits no longer than the probe's waits) */
};

struct sdc_burn_facts_head {
	int32_t how; /* enum sdc_facts_how */
	char name[32];
};

struct sdc_burn_error {
	int32_t lost; /* the device is unusable for the rest of the run (sdc_worker_device_lost) */
	char text[256];
};

struct sdc_burn_result {
	uint64_t iterations, corruptions;
	double ops, t_start, t_end, ref_rate;
	char kernel[64], ref_name[48];
	int32_t no_floor, failed, device_lost;
	char error[256];
};

/* ---- the order (parent -> leader: a memfd the leader reads whole) ---- */

struct sdc_burn_order {
	uint32_t magic, version;
	uint64_t bytes;       /* the whole order, header and arrays */
	uint32_t sizes[6];    /* sizeof order, slot, finding, injection, device, result: a mismatch is refused */
	int32_t parent;       /* the parent's pid: the leader and its workers stay its children */
	char probe[SDC_NAME_MAX];
	struct sdc_variant variant;
	struct sdc_common_opts common;
	uint64_t seed, max_iterations;
	double share;         /* the variant's seconds */
	char profile[128];
	struct sdc_mpi fleet;
	double window_bytes;  /* the fleet calls' window (0: none) */
	/* descriptors, as numbered in the leader */
	int32_t slots_fd, leader_fd, window_fd, first_worker_fd;
	int32_t nworkers, ndevices, ninject, nhosts;
	uint32_t opts_size;
	uint32_t golden_size;     /* a golden in use in the run (selftest's, recorded here): its text */
	char golden_origin[256];
	/* then: int32_t worker_device[nworkers]; struct sdc_device devices[ndevices];
	 * struct sdc_inject_spec inject[ninject]; char hosts[nhosts][64]; opts (opts_size);
	 * the golden's text (golden_size, with its NUL) */
};

/* ---- the leader's side (runner/burn_child.c) ---- */

/* The signals a person, a terminal or a service manager sends to end a process: the run's to act
 * on (base/stop.h), ignored by its burn processes, which the run tells to stop. */
static inline void sdc_burn_parent_signals(sigset_t *set)
{
	static const int sigs[] = { SIGINT,  SIGTERM, SIGHUP,	 SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2,
				    SIGALRM, SIGVTALRM, SIGPROF, SIGIO,	  SIGPWR,  SIGXCPU, SIGXFSZ };
	sigemptyset(set);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(set, sigs[i]);
}

/* The leader's main: `sdcscan __burn FD`. Never returns to the caller's command driver. */
int sdc_burn_main(int argc, char **argv);
/* Whether this process may fork the workers: one thread, and no CUDA driver initialised (why not). */
bool sdc_burn_fork_safe(char *why, size_t len);

/* ---- the parent's side (runner/supervise.c) ---- */

/* A worker's end, as the parent saw it. */
enum sdc_burn_end {
	SDC_END_RUNNING,  /* not ended (yet) */
	SDC_END_CLEAN,    /* reported its result and exited 0 */
	SDC_END_CRASHED,  /* died of a fault (a finding of class crash was filed) */
	SDC_END_HUNG,     /* no progress for the timeout, or stuck at its exit: killed (class hang) */
	SDC_END_LOST,     /* ended some other way: killed from outside, not started (class error) */
};

struct sdc_burn_worker {
	int device;      /* index into run->devices */
	int fd;          /* the parent's end of its socket */
	pid_t pid;       /* 0 until it is known to be the parent's child */
	struct sdc_burn_slot *slot;
	enum sdc_burn_end end;
	bool reaped, killed, reported;
	bool corrupt;    /* it sent a record no sound process writes: what it sends after is not read */
	double reported_at;          /* when its result came: it must exit soon after */
	struct sdc_burn_result result;
	uint64_t corruption_findings; /* class corruption records for it */
	int facts;       /* facts records taken from it (a flood is refused) */
	/* the digests, checked as they come */
	uint64_t digest_next;
	struct sdc_sha256 work;
	uint8_t work_digest[32];
	bool work_done;
	/* progress, for the hang watch */
	uint64_t seen;
	double since;
	double t_burn;   /* when its lane began (0: not yet) */
	char error[256]; /* how it ended, when not cleanly; an error it reported */
	bool failed, device_lost;
};

/* What the parent asks of one variant's processes. */
struct sdc_burn_request {
	struct sdc_run *run;
	const struct sdc_plan_entry *entry;
	const struct sdc_variant *variant;
	const int *devices; /* run device index of each worker */
	int nworkers;
	double share;
	bool fleet_calls;   /* its workers talk to other ranks: a window for the payloads */
	bool may_stall;     /* an --inject asks for the ring's X fault: its stall may be served */
};

/* One variant's processes, as the parent sees them. */
struct sdc_burn {
	struct sdc_burn_request rq;
	struct sdc_burn_worker *w;
	pid_t leader;
	int leader_fd;
	struct sdc_burn_slot *leader_slot;
	unsigned char *slots;
	size_t slots_bytes;
	void *window;
	size_t window_bytes;
	bool fleet_failed;      /* a fleet call failed: the window stays mapped (MPI may hold it) */
	void *polls;            /* struct pollfd[nworkers + 1] */
	int *poll_who;
	double t_spawn;
	bool leader_reaped;
	bool pids_named;        /* the leader's list of its workers came */
	bool leader_killed;
	int leader_facts;
	double setup_at;        /* when its setup record came: the leader must exit soon after */
	/* from the leader's setup record */
	bool setup_done;
	bool interrupted;       /* the run was interrupted before the setup was done */
	char setup_error[256];
	struct sdc_burn_setup setup;
	/* the digests, to the caller's vote */
	void (*on_digest)(void *arg, int worker, uint64_t iteration, uint64_t digest);
	void *arg;
};

/* argv[0] of this process (main.c), so a variant's process is started as this one was (a loader
 * run by hand before it: the GPU bundle). */
void sdc_burn_remember_self(const char *argv0);

/* Slot i of b (nworkers: the leader's). */
static inline struct sdc_burn_slot *sdc_burn_slot_at(const struct sdc_burn *b, int i)
{
	return (struct sdc_burn_slot *)(void *)(b->slots + (size_t)i * sdc_burn_slot_stride());
}

/* Spawns the variant's leader (runner/burn_spawn.c). 0, or -1 with why in b->setup_error (nothing
 * was started). */
int sdc_burn_start(struct sdc_burn *b, const struct sdc_burn_request *rq);
/* Waits for the leader's setup (its deadline: sdc_burn_setup_limit); 0 when its workers were
 * forked, -1 when the setup failed or the leader died (b->setup_error says why, a finding filed
 * where it crashed or hung; b->interrupted when an interrupt ended it). poll_interrupt is called
 * while it waits (NULL: none). */
int sdc_burn_wait_setup(struct sdc_burn *b, void (*poll_interrupt)(void));
/* Seconds a variant's setup may take (hang_timeout-based, at least 30 s). */
double sdc_burn_setup_limit(double hang_timeout);
/* Takes what came (records, digests, exits) for at most `wait` seconds; names a worker hung
 * after `hang_timeout` seconds without progress, and kills it. */
void sdc_burn_tick(struct sdc_burn *b, double wait, double hang_timeout);
/* The stop flags, into every process of the variant. */
void sdc_burn_signal(struct sdc_burn *b, bool stop, bool hard, bool interrupted);
/* How many workers have not ended. */
int sdc_burn_running(const struct sdc_burn *b);
/* Kills the workers still running (named hung: still there `why`), reaps them all within a
 * deadline, and closes the channel. */
void sdc_burn_finish(struct sdc_burn *b, const char *why);
/* Frees what sdc_burn_start made. */
void sdc_burn_release(struct sdc_burn *b);

/* Exit codes of a burn process that could not start its work: an order it cannot read, or a
 * worker the run's process did not adopt. */
#define SDC_BURN_EXIT_BAD_ORDER 90
#define SDC_BURN_EXIT_NOT_ADOPTED 91

/* Seconds a worker may take to exit once it has sent its result, and to die once killed. */
#define SDC_BURN_EXIT_GRACE 2.0
#define SDC_BURN_EXIT_GRACE_GPU 15.0
#define SDC_BURN_KILL_GRACE 5.0
/* Seconds the leader has to fork its workers and exit once its setup is done. */
#define SDC_BURN_LEADER_EXIT 30.0

#endif
