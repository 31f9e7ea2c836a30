/*
 * The benchmarks' race (dav1d's checkasm --bench idea): contenders run in interleaved rounds on
 * one pinned core, each reports its median round, and ratios are taken round by round so a
 * noisy neighbour slows both sides of a comparison alike.
 */
#ifndef SDC_BENCH_H
#define SDC_BENCH_H

#define SDC_BENCH_ROUNDS 15
#define SDC_BENCH_MAX_CONTENDERS 8

typedef void (*sdc_bench_call)(void *arg);

struct sdc_contender {
	const char *name;
	sdc_bench_call call;
	void *arg;
	double rate;                     /* median, 1e9 operations per second */
	double rounds[SDC_BENCH_ROUNDS]; /* each round's rate, in order */
};

/* Runs every contender for seconds / SDC_BENCH_ROUNDS per round; ops is the work of one call. */
void sdc_bench_race(struct sdc_contender *c, int n, double ops, double seconds);

/* Quartiles (q[0], median q[1], q[2]) over rounds of plain / checked - 1: the checked one's overhead. */
void sdc_bench_overhead(const struct sdc_contender *plain, const struct sdc_contender *checked, double q[3]);

/* The median of n doubles (sorts v; n small: the turns of a benchmark). */
double sdc_median(double *v, int n);

/*
 * A bit-for-bit comparison as a benchmark's target (a GPU's results against this CPU's): prints
 * "bits: WHAT against this CPU's: SAME" or "...: DIFFERENT, FIRST  MISSED", states key = bad in
 * the benchmark's facts (its JSON) and clears *met when something differed.
 */
#include <stdbool.h>
#include <stdint.h>
struct sdc_facts;
void sdc_bench_bits(const char *what, const char *same, int64_t bad, const char *first, struct sdc_facts *report,
		    const char *key, bool *met);

#endif
