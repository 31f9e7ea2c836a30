/* The golden file reader: sdcscan golden verify FILE, and the shipped goldens. The first byte
 * picks the input as it is or with its true SHA-256 (to reach the fields behind that check). */
#include "fuzz.h"
#include "probe/golden_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	size_t len;
	char *owned;
	const char *text = fuzz_signed_input(data, size, &len, &owned);
	struct sdc_golden g;
	char err[512];
	memset(&g, 0, sizeof(g));
	if (!sdc_golden_parse(text, len, "fuzz", &g, err, sizeof(err)))
		sdc_golden_free(&g);
	free(owned);
	return 0;
}
