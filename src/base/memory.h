/* Memory: cache-line aligned and huge-page allocations, and what the kernel says is available. */
#ifndef SDC_BASE_MEMORY_H
#define SDC_BASE_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "base/macros.h"

/* Cache-line aligned allocation; NULL on failure (the caller reports it). */
void *sdc_alloc_aligned(size_t size);
void sdc_free_aligned(void *p);
/*
 * Large tables: an anonymous mapping, with transparent huge pages asked for (fewer TLB misses on
 * random lookups, as production embedding servers run). Zero-filled; NULL on failure.
 */
void *sdc_alloc_huge(size_t size);
void sdc_free_huge(void *p, size_t size);
/* Bytes the kernel says can be allocated without swapping (MemAvailable); 0 if unknown. */
uint64_t sdc_mem_available(void);

#endif
