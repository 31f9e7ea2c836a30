/* The benchmarks' race (probe/bench_race.h). */
#include "probe/bench_race.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/parse.h"
#include "base/clock.h"
#include "run/facts.h"

#define ROUNDS SDC_BENCH_ROUNDS
#define MAX_CONTENDERS SDC_BENCH_MAX_CONTENDERS
#define contender sdc_contender

void sdc_bench_race(struct sdc_contender *c, int n, double ops, double seconds)
{
	double rates[MAX_CONTENDERS][ROUNDS];
	for (int i = 0; i < n; i++)
		c[i].call(c[i].arg); /* warm caches and lazy initialisation */
	for (int round = 0; round < ROUNDS; round++) {
		for (int i = 0; i < n; i++) {
			double t0 = sdc_now(), t;
			long reps = 0;
			do {
				c[i].call(c[i].arg);
				reps++;
				t = sdc_now() - t0;
			} while (t < seconds / ROUNDS);
			rates[i][round] = c[i].rounds[round] = ops * (double)reps / t / 1e9;
		}
	}
	for (int i = 0; i < n; i++) {
		qsort(rates[i], ROUNDS, sizeof(double), sdc_cmp_double);
		c[i].rate = rates[i][ROUNDS / 2];
	}
}

void sdc_bench_overhead(const struct sdc_contender *plain, const struct sdc_contender *checked, double q[3])
{
	double ratio[ROUNDS];
	for (int r = 0; r < ROUNDS; r++)
		ratio[r] = plain->rounds[r] / checked->rounds[r] - 1.0;
	qsort(ratio, ROUNDS, sizeof(double), sdc_cmp_double);
	q[0] = ratio[ROUNDS / 4];
	q[1] = ratio[ROUNDS / 2];
	q[2] = ratio[3 * ROUNDS / 4];
}



void sdc_bench_bits(const char *what, const char *same, int64_t bad, const char *first, struct sdc_facts *report,
		    const char *key, bool *met)
{
	printf("bits: %s against this CPU's: %s%s%s\n", what, bad ? "DIFFERENT, " : same, bad ? first : "",
	       bad ? "  MISSED" : "");
	sdc_facts_int(report, key, bad);
	*met &= !bad;
}

double sdc_median(double *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			const double t = v[j];
			v[j] = v[j - 1], v[j - 1] = t;
		}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
