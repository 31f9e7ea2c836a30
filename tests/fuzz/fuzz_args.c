/* The --inject and --cpus parsers: the first byte picks which, the rest is the argument. */
#include <sched.h>

#include "device/cpu.h"
#include "fuzz.h"
#include "run/inject.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	char *s = fuzz_cstr(data + 1, size - 1);
	char err[512];
	if (data[0] & 1) {
		cpu_set_t set;
		(void)sdc_cpu_list_parse(s, &set, err, sizeof(err));
	} else {
		struct sdc_inject_spec spec;
		(void)sdc_inject_parse(s, &spec, err, sizeof(err));
	}
	free(s);
	return 0;
}
