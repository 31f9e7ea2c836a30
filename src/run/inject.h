/*
 * Fault injection specs: --inject PROBE[/VARIANT]:TARGET[:KEY=VALUE,...]
 * Keys: device (a logical CPU: 3 or cpu3; a GPU: gpu0), iter, row, col, bit (or bit=grow), count, every, rate, rank (under
 * MPI), tensor (a probe's named tensor, e.g. minitrain's attn.Wq). Anything left out is drawn from
 * the run's seed, so an injected run replays exactly.
 *
 * Fault planning lives here too: which worker gets which fault at which iteration, decided once
 * per variant from the specs and the seed (sdc_fault_plan), and asked by the probes at their
 * injection points (sdc_worker_faults in probe/probe.h).
 */
#ifndef SDC_INJECT_H
#define SDC_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/rng.h"
#include "device/device.h"

struct sdc_inject_spec {
	char probe[24], variant[24]; /* variant empty: every variant */
	char target[8];
	int device;    /* logical CPU or GPU index (device_kind says which), -1: drawn */
	enum sdc_device_kind device_kind;
	int64_t iter;  /* first iteration, -1: drawn from [0, 8) */
	int64_t row, col;
	int bit;       /* -1: drawn */
	int count;     /* how many faults, at iter, iter + every, ... */
	int64_t every;
	double rate;   /* > 0: instead of count, a fault with this probability every iteration */
	char tensor[24]; /* empty: drawn by the probe */
	int rank;        /* under MPI: only this rank injects (-1: every rank) */
	char text[160];
};

int sdc_inject_parse(const char *s, struct sdc_inject_spec *spec, char *err, size_t errlen);

/* One fault due now: the element and bit asked for (-1: the probe draws them from rng). */
struct sdc_fault {
	int spec;
	int64_t row, col;
	int bit;
	struct sdc_rng rng;
	uint64_t base; /* first RNG block of this fault's draws */
};

/* bit=grow: the highest clear exponent bit of a float (fp32 30..23, fp64 62..52), the bit below the sign
 * of an integer: a change far beyond any rounding threshold, for selftests that must not miss. */
#define SDC_FAULT_BIT_GROW (-2)

/* The bit a fault flips in an element of `bits` bits holding `value`: the spec's, drawn from the
 * seed, or for bit=grow as above (is_float: a binary32 or binary64 element). */
int sdc_fault_bit(const struct sdc_fault *f, uint64_t value, int bits, bool is_float);

/* Draws a value in [0, bound) for a fault's unspecified coordinate number `which`. */
int64_t sdc_fault_draw(const struct sdc_fault *f, unsigned which, int64_t bound);

/* Whether spec names this device (device= absent: any). */
bool sdc_inject_spec_device(const struct sdc_inject_spec *s, const struct sdc_device *dev);

/*
 * The faults of one variant: the specs that name probe (and variant, or every variant) planned
 * over the workers' devices. A spec without device= or iter= lands on a worker and a first
 * iteration drawn from the seed, once per spec, so an injected run replays. NULL when out of memory.
 */
struct sdc_fault_plan;
struct sdc_fault_plan *sdc_fault_plan_new(const struct sdc_inject_spec *specs, int nspecs, const char *probe,
					  const char *variant, uint64_t seed, const struct sdc_device *const *devs,
					  int nworkers);
void sdc_fault_plan_free(struct sdc_fault_plan *fp);
/* The faults due on worker `worker` (on dev, in MPI rank `rank`) at target and iteration; at most max. */
int sdc_fault_plan_due(const struct sdc_fault_plan *fp, int worker, const struct sdc_device *dev, int rank,
		       const char *target, uint64_t iter, struct sdc_fault *out, int max);

#endif
