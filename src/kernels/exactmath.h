/*
 * exp and log from correctly rounded + - * / only, so their results are the same bits on
 * every IEEE-754 machine (libm's differ between versions, and between FMA and non-FMA paths
 * of the same libm). Built with -ffp-contract=off: a fused multiply-add would change the bits.
 * Accuracy: within 1 ulp on normal inputs (tests/unit/test_exactmath.c measures it).
 */
#ifndef SDC_EXACTMATH_H
#define SDC_EXACTMATH_H

double sdc_exp(double x);
double sdc_log(double x);

#endif
