/*
 * Fault injection specs: --inject PROBE[/VARIANT]:TARGET[:KEY=VALUE,...]
 * Keys: device (logical CPU), iter, row, col, bit, count, every, rate, rank (under MPI), tensor (a probe's named
 * tensor, e.g. minitrain's attn.Wq). Anything left out is
 * drawn from the run's seed, so an injected run replays exactly.
 */
#ifndef SDC_INJECT_H
#define SDC_INJECT_H

#include <stddef.h>
#include <stdint.h>

#include "base/rng.h"

struct sdc_inject_spec {
	char probe[24], variant[24]; /* variant empty: every variant */
	char target[8];
	int device;    /* logical CPU, -1: drawn */
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

/* Draws a value in [0, bound) for a fault's unspecified coordinate number `which`. */
int64_t sdc_fault_draw(const struct sdc_fault *f, unsigned which, int64_t bound);

#endif
