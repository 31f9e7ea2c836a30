/*
 * Instruction-set levels the kernels are written for, and whether this CPU has them. Each kernel
 * family keeps one implementation table per level (dav1d-style), the portable reference first.
 */
#ifndef SDC_ISA_H
#define SDC_ISA_H

#include <stdbool.h>

enum sdc_isa {
	SDC_ISA_PORTABLE,
	SDC_ISA_AVX2,
	SDC_ISA_AVX512F,
	SDC_ISA_AVX512BW,
	SDC_ISA_AVX512VNNI,
	SDC_ISA_COUNT,
};

/* Whether this CPU (and its OS) runs code of this level. */
bool sdc_isa_supported(enum sdc_isa isa);
/* "portable", "avx2", ... */
const char *sdc_isa_name(enum sdc_isa isa);

#endif
