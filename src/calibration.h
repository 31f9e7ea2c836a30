/*
 * V-ABFT e_max calibration files (Gao et al. §3.6): the maximum relative verification error
 * |E| / |checksum| seen on positive |N(1,1)| matrices, plus a 20% margin, per precision.
 *
 * e_max model. OpenBLAS (like the portable kernel) accumulates along k one rounding per step,
 * the case the paper's Table 7 gives as "NPU FP32: 2e-6 sqrt(N/1024)", so e_max is kept as its
 * value at K = 1024 and scaled by sqrt(K / 1024). Below the smallest K measured (or 256 for the
 * built-in values) it is not scaled down further. The paper's CPU row (FP32 4e-7, FP64 6e-16,
 * constant) came from PyTorch on Xeon; with OpenBLAS on this project's Xeon it gave false
 * alarms at K = 1024 (observed relative error 9.6u, above the row's 6u), so the built-in
 * defaults are the per-step row: FP32 2e-6 and FP64 the same 34u, i.e. 3.8e-15, at K = 1024.
 * A file is keyed by what decides the rounding: CPU model, BLAS library, its version and its
 * kernel (OpenBLAS core type). It carries a SHA-256 of its own content, so a corrupt,
 * truncated or hand-edited file is refused, as is one made for another key.
 *
 * Location: $SDCSCAN_CALIBRATION, else /var/lib/sdcscan/calibration.json; without a file,
 * V-ABFT Table 7's CPU values are used and the report says so.
 */
#ifndef SDC_CALIBRATION_H
#define SDC_CALIBRATION_H

#include <jansson.h>
#include <stddef.h>

#define SDC_CALIBRATION_PATH "/var/lib/sdcscan/calibration.json"
#define SDC_CALIBRATION_FORMAT "sdcscan-calibration"
#define SDC_CALIBRATION_VERSION 1

struct sdc_calibration_key {
	char cpu_model[128];
	char library[32];
	char library_version[64];
	char kernel[64];
};

/* Built-in e_max at K = 1024 (V-ABFT Table 7's per-step-accumulation row; see above). */
#define SDC_EMAX1024_FP32 2e-6
#define SDC_EMAX1024_FP64 (34 * 0x1p-53)
#define SDC_EMAX_KMIN_BUILTIN 256

/* e_max for inner dimension k from its value at 1024, not scaled below kmin. */
double sdc_emax_at(double emax1024, int k, int kmin);

/* The key of this host for the floating-point kernel `impl` ("openblas", "portable"). */
void sdc_calibration_key_here(struct sdc_calibration_key *k, const char *impl);

/* $SDCSCAN_CALIBRATION when set, else SDC_CALIBRATION_PATH. */
const char *sdc_calibration_default_path(void);

/*
 * e_max at K = 1024 and the smallest K it holds for, for precision "fp32" or "fp64" under key.
 * path: a file, or "" for the default location. With no file at the default location, the
 * built-in value and a source saying so; a file named explicitly must exist. Returns 0, or -1
 * with err (corrupt, mismatched, unreadable).
 */
int sdc_calibration_emax(const char *path, const struct sdc_calibration_key *key, const char *precision,
			 double *emax1024, int *kmin, char *source, size_t srclen, char *err, size_t errlen);

/* Adds "sha256" over the canonical form of doc (sorted keys, compact) and writes it atomically. */
int sdc_calibration_write(const char *path, json_t *doc, char *err, size_t errlen);

/* Loads and verifies a file's format and digest. NULL with err on failure. */
json_t *sdc_calibration_read(const char *path, char *err, size_t errlen);

#endif
