/*
 * CLONES: a loop the compiler vectorises is built for AVX-512, AVX2 and the baseline, and the
 * loader picks one for the CPU (gcc's target_clones; clang and other targets get the baseline).
 * Feature names, not arch= names: a VM may hide the CPU model but not its features.
 */
#ifndef SDC_CLONES_H
#define SDC_CLONES_H

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CLONES
#endif

#endif
