/*
 * XXH3 compiled for AVX2: Debian's libxxhash is built for baseline x86-64 (SSE2), where XXH3
 * runs at a fifth of the AVX2 speed. The hash value is the same on every path.
 * This file alone is built with -mavx2; digest.c calls it only when the CPU has AVX2.
 */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "base/digest.h"

uint64_t sdc_xxh64_avx2(const void *data, size_t len)
{
	return XXH3_64bits(data, len);
}
