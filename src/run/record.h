/*
 * A run: what was asked (seed, devices, injections), what happened (results per probe,
 * variant and device; findings; applied injections) and how it ends (the verdict).
 * Findings are data, not log lines (OpenDCDiag): each carries as much of the chain
 * host -> device -> operation -> element -> bits as its probe knows.
 */
#ifndef SDC_RUN_H
#define SDC_RUN_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "device/device.h"
#include "run/inject.h"
#include "device/nvml.h"
#include "base/verdict.h"

#define SDC_NAME_MAX 24

enum sdc_status {
	SDC_STATUS_OK,       /* ran to the end (or the deadline), found nothing */
	SDC_STATUS_CORRUPT,  /* found corruption: CRITICAL */
	SDC_STATUS_DEGRADED, /* slower than the profile's floor: WARNING */
	SDC_STATUS_ERROR,    /* could not test (platform failure, bad setup): UNKNOWN */
	SDC_STATUS_SKIPPED,  /* optional probe, hardware missing: WARNING */
	SDC_STATUS_NOT_RUN,  /* the run ended (interrupt) before this one started: UNKNOWN */
	SDC_STATUS_CRASHED,  /* its worker died of a fault (SIGSEGV, SIGBUS, ...): CRITICAL */
	SDC_STATUS_HUNG,     /* its worker stopped making progress for the probe's timeout: UNKNOWN */
};

const char *sdc_status_name(enum sdc_status s);
enum sdc_verdict sdc_status_verdict(enum sdc_status s);

enum sdc_finding_class {
	SDC_FINDING_CORRUPTION, /* wrong data: CRITICAL */
	SDC_FINDING_DEGRADED,   /* too slow: WARNING */
	SDC_FINDING_ERROR,      /* could not test: UNKNOWN */
	SDC_FINDING_CRASH,      /* a burn worker died of a fault the CPU or GPU raised: CRITICAL */
	SDC_FINDING_HANG,       /* a burn worker stopped making progress: UNKNOWN (runner/burn.h) */
};

/* "corruption", "degraded", "error", "crash", "hang": the report's class names. */
const char *sdc_finding_class_name(enum sdc_finding_class c);
/* The verdict a finding of class c gives. */
enum sdc_verdict sdc_finding_class_verdict(enum sdc_finding_class c);

struct sdc_finding {
	enum sdc_finding_class cls;
	char probe[SDC_NAME_MAX], variant[SDC_NAME_MAX];
	int device;              /* index into run->devices, -1 for the host as a whole */
	char kind[32];           /* checksum-mismatch, operand-corrupt, device-disagreement, ... */
	char operation[96];      /* what was running: "gemm int8 256x256x1024" */
	char target[8];          /* which buffer: C, A, B; empty when not an element */
	uint64_t iteration;
	double time_to_failure;  /* seconds from the start of the variant */
	int64_t row, col;        /* -1 when not known */
	char expected[40], actual[40], xor_mask[40]; /* bit patterns, hex */
	char expected_value[48], actual_value[48];   /* the same as numbers */
	double threshold, margin; /* fast class: the check's threshold and |difference| / threshold */
	bool sm_known;           /* GPU: the streaming multiprocessor that computed it wrong */
	int sm;
	/* a crash: the signal, its si_code, the faulting address and the instruction (module+offset) */
	char signal[12], si_code[24], fault_address[24], ip[112];
	char detail[320];
};

struct sdc_result {
	char probe[SDC_NAME_MAX], variant[SDC_NAME_MAX];
	int device;
	enum sdc_status status;
	uint64_t iterations;
	double ops, seconds, rate;
	char rate_unit[16], iter_unit[16];
	uint64_t corruptions; /* detections, including those beyond the findings kept */
	char kernel[64];
	double ref_rate;   /* the probe's reference throughput on this device, in rate units (0: none) */
	double overrun;    /* seconds its one iteration ran past the variant's time (0: within it) */
	double start_seconds; /* its worker's process start, from the variant's spawn to its lane, less the
			       * probe's setup (-1: it never began) */
	char ref_name[48];
	char error[256];
	bool interrupted;
	/* SHA-256 of the first SDC_WORK_DIGEST_ITERATIONS per-iteration result digests: the same
	 * work gives the same value on every healthy device and host. Empty if fewer ran. */
	char work_digest[65];
};

#define SDC_WORK_DIGEST_ITERATIONS 16

/* A variant's throughput summed over its devices. */
struct sdc_total {
	char probe[SDC_NAME_MAX], variant[SDC_NAME_MAX];
	int devices, gpus; /* devices counted, and how many of them are GPUs */
	double rate;
	char rate_unit[16];
};

struct sdc_injection {
	char probe[SDC_NAME_MAX], variant[SDC_NAME_MAX];
	int device;
	char target[8];
	uint64_t iteration;
	int64_t row, col;
	int bit;
	char before[24], after[24];
	int spec; /* index of the --inject spec that asked for it */
};

struct sdc_facts;

/*
 * In a burn's process (runner/burn.h) the run is a copy whose findings, injections and facts go to
 * the run's parent as they come, through its channel, instead of into the copy's arrays (a crash
 * a moment later must not lose them).
 */
struct sdc_run_sink {
	void (*finding)(void *arg, const struct sdc_finding *f);
	void (*dropped)(void *arg);
	void (*injection)(void *arg, const struct sdc_injection *inj);
	/* how: enum sdc_facts_how (run/facts.h) */
	void (*facts)(void *arg, const char *name, int how, const struct sdc_facts *f);
	/* a worker's error (lost: its device is gone), at once: a crash a moment later must not take it */
	void (*error)(void *arg, int worker, const char *text, bool lost);
	/* a worker's digest of one iteration, for the vote */
	void (*digest)(void *arg, uint64_t iteration, uint64_t digest);
	void *arg;
};

struct sdc_run {
	/* what was asked */
	uint64_t seed;
	char profile[128];
	char profile_source[256];
	struct sdc_device *devices; /* CPUs first, then GPUs */
	int ndevices;
	char gpu_note[160];         /* why no GPU is among them, when none is */
	struct sdc_gpu_health *health; /* [ndevices][2]: each GPU's health before and after the run */
	struct sdc_inject_spec *inject;
	int ninject;
	int argc;
	char **argv;

	/* when */
	double start_wall, start_mono, end_mono;
	bool interrupted;

	/* what happened; appended under lock by worker threads */
	pthread_mutex_t lock;
	struct sdc_result *results;
	int nresults, results_cap;
	struct sdc_finding *findings;
	int nfindings, findings_cap;
	uint64_t findings_dropped;
	struct sdc_injection *injections;
	int ninjections, injections_cap;
	struct sdc_total *totals;
	int ntotals, totals_cap;
	void *environment; /* json_t object: libraries and kernels, for the report */
	const struct sdc_run_sink *sink; /* non-NULL in a burn's process: where what happens goes */
	void *fleet;       /* json_t object on rank 0 of an MPI run: every rank's results and the vote */
};

#define SDC_FINDINGS_MAX 2000

int sdc_run_init(struct sdc_run *run);
void sdc_run_release(struct sdc_run *run);

struct sdc_result *sdc_run_add_result(struct sdc_run *run);
/* Keeps the finding if there is room; returns whether it was kept. */
/* f a corruption found by a probe's check: kind, in operation, at target[row][col] of iteration
 * iter (the rest zero: the caller adds device, bits, detail). */
void sdc_finding_corruption(struct sdc_finding *f, const char *kind, const char *operation, const char *target,
			    uint64_t iter, int64_t row, int64_t col);
bool sdc_run_add_finding(struct sdc_run *run, const struct sdc_finding *f);
/* Counts a finding that was detected but not kept in detail. */
void sdc_run_count_dropped(struct sdc_run *run);
/* n of them at once (what a burn's process counted). */
void sdc_run_count_dropped_n(struct sdc_run *run, uint64_t n);
void sdc_run_add_injection(struct sdc_run *run, const struct sdc_injection *inj);
void sdc_run_add_total(struct sdc_run *run, const struct sdc_total *t);

enum sdc_verdict sdc_run_verdict(const struct sdc_run *run);

/* The one-line summary: "CRITICAL: cpu1 gemm int8: 3 corrupt results". */
void sdc_summary_line(const struct sdc_run *run, enum sdc_verdict v, char *buf, size_t len);

/* "2 CPUs", "2 CPUs and 1 GPU": what cpus CPUs and gpus GPUs are called in lines. */
void sdc_devices_text(int cpus, int gpus, char *buf, size_t len);

/* The model of the run's CPUs ("unknown" without one): the host's, in reports and golden keys. */
const char *sdc_run_cpu_model(const struct sdc_run *run);

/* "0x" and every hex digit of a bits-wide element (a 4-bit element is one digit, fp32 eight). */
void sdc_hex_bits(char *buf, size_t len, uint64_t v, int bits);
/* A finding's expected, actual and XOR mask from two bit patterns of a bits-wide element. */
void sdc_finding_set_bits(struct sdc_finding *f, uint64_t expected, uint64_t actual, int bits);
/* The same for an fp32 element, with both values as numbers too. */
void sdc_finding_set_f32(struct sdc_finding *f, float expected, float actual);

/* Whether finding f is the detection of injection inj at the exact element and bit. */
bool sdc_finding_locates(const struct sdc_finding *f, const struct sdc_injection *inj);
/* Whether finding f happened where some injection happened (same probe, device, iteration). */
bool sdc_finding_explained(const struct sdc_finding *f, const struct sdc_run *run);
/* f is a corruption found where inj was injected (same probe, variant, device, iteration). */
bool sdc_finding_at(const struct sdc_finding *f, const struct sdc_injection *inj);

#endif
