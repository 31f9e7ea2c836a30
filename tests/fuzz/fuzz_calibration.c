/* The calibration reader: the file sdcscan run and campaign take e_max from. It reads a path,
 * so the bytes go into a memfd (a regular file, as the reader demands) and it reads that, for
 * both precisions. The first byte picks the input as it is or with its true SHA-256 (bit 0), and
 * the key of this host or the one the file names (bit 1), to reach what lies behind each check. */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "probes/gemm/calibration.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	size_t len;
	char *fixed;
	const char *text = fuzz_signed_input(data, size, &len, &fixed);
	const int fd = memfd_create("calibration", 0);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len)
		abort();
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct sdc_calibration_key key;
	sdc_calibration_key_here(&key, "fuzz");
	json_t *doc = data[0] & 2 ? json_loadb(text, len, 0, NULL) : NULL;
	const char *fields[] = { "cpu_model", "library", "library_version", "kernel" };
	char *dst[] = { key.cpu_model, key.library, key.library_version, key.kernel };
	const size_t cap[] = { sizeof(key.cpu_model), sizeof(key.library), sizeof(key.library_version), sizeof(key.kernel) };
	for (int f = 0; f < 4; f++) {
		const char *v = json_string_value(json_object_get(json_object_get(doc, "key"), fields[f]));
		if (v)
			snprintf(dst[f], cap[f], "%s", v);
	}
	json_decref(doc);
	static const char *const precisions[] = { "fp32", "fp64" };
	for (int p = 0; p < 2; p++) {
		double emax;
		char source[512], err[1024];
		(void)sdc_calibration_emax(path, &key, precisions[p], &emax, source, sizeof(source), err, sizeof(err));
	}
	close(fd);
	free(fixed);
	return 0;
}
