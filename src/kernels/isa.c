/* The instruction-set levels the kernels are written for, and this CPU's (kernels/isa.h). */
#include "kernels/isa.h"

bool sdc_isa_supported(enum sdc_isa isa)
{
	switch (isa) {
	case SDC_ISA_PORTABLE:
		return true;
#if defined(__x86_64__) && defined(__GNUC__)
	/* Feature names, not CPU models: a VM may hide the model but not its features. */
	case SDC_ISA_AVX2:
		return __builtin_cpu_supports("avx2");
	case SDC_ISA_AVX512F:
		return __builtin_cpu_supports("avx512f");
	case SDC_ISA_AVX512BW:
		return __builtin_cpu_supports("avx512bw");
	case SDC_ISA_AVX512VNNI:
		return __builtin_cpu_supports("avx512vnni");
#endif
	default:
		return false;
	}
}

const char *sdc_isa_name(enum sdc_isa isa)
{
	static const char *const names[SDC_ISA_COUNT] = { "portable", "avx2", "avx512f", "avx512bw", "avx512vnni" };
	return isa >= 0 && isa < SDC_ISA_COUNT ? names[isa] : "unknown";
}
