/* Memory: cache-line aligned and huge-page allocations, and what the kernel says is available. (base/memory.h) */
#include "base/memory.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

void *sdc_alloc_aligned(size_t size)
{
	void *p = NULL;
	if (posix_memalign(&p, 64, size ? size : 64))
		return NULL;
	return p;
}

void sdc_free_aligned(void *p)
{
	free(p);
}

void *sdc_alloc_huge(size_t size)
{
	void *p = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
#ifdef MADV_HUGEPAGE
	madvise(p, size, MADV_HUGEPAGE); /* advice only: without THP the table still works */
#endif
	return p;
}

void sdc_free_huge(void *p, size_t size)
{
	if (p)
		munmap(p, size ? size : 1);
}

uint64_t sdc_mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	uint64_t kib = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %" SCNu64 " kB", &kib) == 1)
			break;
	fclose(f);
	return kib * 1024;
}
