/*
 * V-ABFT e_max calibration files (Gao et al. §3.6): the maximum relative verification error
 * |E| / |checksum| seen on positive |N(1,1)| matrices, plus a 20% margin, per precision.
 *
 * Built-in values. The paper's CPU rows (FP32 4e-7, FP64 6e-16: about 5-6u) came from PyTorch on
 * Xeon; OpenBLAS on this project's CPUs measured up to 21u (FP32) and 7.5u (FP64) on |N(1,1)|
 * (sdcscan calibrate), so the CPU rows gave false alarms. Without a calibration file sdcscan
 * takes from Table 7, per precision, a platform whose accumulation rounds at least as often as
 * a CPU BLAS may: FP32 34u (the NPU's per-step accumulation at N = 1024), 2.0e-6. FP64 has no
 * such row: Table 7's fp64 figures are 3-6u (its H100 formula gives 5.1u at N = 1024, 10.4u at
 * 8192), so FP64's 66u, 7.3e-15, is a margin of our choosing: about nine times the 7.5u OpenBLAS
 * showed here, below the largest ratio the paper reports for any precision (34u x sqrt(8), 96u).
 * (Earlier text read Table 7 as "33-66u": the conversion's "3366" is 3-6 typeset twice.)
 * Measurements here found no growth with K (128
 * to 2048), as the paper found on CPUs, so e_max is one number per precision; calibrate at the
 * sizes you burn.
 *
 * A calibration rests on at least SDC_CALIBRATION_MIN_GEMMS GEMMs per size: calibrate refuses
 * fewer, and run refuses a file that has fewer (a maximum over a handful of rows would be a
 * threshold that healthy hosts breach).
 *
 * Location: $SDCSCAN_CALIBRATION, else /var/lib/sdcscan/calibration.json; without a file,
 * V-ABFT Table 7's CPU values are used and the report says so.
 */
#ifndef SDC_CALIBRATION_H
#define SDC_CALIBRATION_H

#include <stddef.h>

#include "run/facts.h"

#define SDC_CALIBRATION_PATH "/var/lib/sdcscan/calibration.json"
#define SDC_CALIBRATION_FORMAT "sdcscan-calibration"
#define SDC_CALIBRATION_VERSION 1

struct sdc_calibration_key {
	char cpu_model[128];
	char library[32];
	char library_version[64];
	char kernel[64];
};

/* Built-in e_max (see above). */
#define SDC_EMAX_FP32 (34 * 0x1p-24)
#define SDC_EMAX_FP64 (66 * 0x1p-53)
#define SDC_CALIBRATION_MIN_GEMMS 100

/* The key of this host for the floating-point kernel `impl` ("openblas", "portable"). */
void sdc_calibration_key_here(struct sdc_calibration_key *k, const char *impl);

/* The key of a GPU model and its BLAS ("NVIDIA H100 80GB HBM3", "cuBLASLt 13.1.0"). */
void sdc_calibration_key_gpu(struct sdc_calibration_key *k, const char *model, const char *library);

/*
 * A GPU's e_max for a precision ("fp32-fast", "tf32-fast", "bf16-fast") from the file's "gpus"
 * section, which `sdcscan calibrate --gpus` writes beside the CPU's: {"gpus": {"MODEL, LIBRARY":
 * {"precisions": {NAME: {"emax": X, "sizes": [{"k": K, ...}]}}}}}. 0 with source set when found
 * (and *deepest the largest K it was measured at); 0 with source empty when the file or the entry
 * is not there (the caller's built-in applies); -1 with err for a corrupt file or a named file
 * that is missing.
 */
int sdc_calibration_find(const char *path, const struct sdc_calibration_key *key, const char *precision, double *emax,
			 int *deepest, char *source, size_t srclen, char *err, size_t errlen);

/* $SDCSCAN_CALIBRATION when set, else SDC_CALIBRATION_PATH. */
const char *sdc_calibration_default_path(void);

/*
 * e_max for precision "fp32" or "fp64" under key. path: a file, or "" for the default location.
 * With no file at the default location, the built-in value and a source saying so; a file named
 * explicitly must exist. Returns 0, or -1 with err (corrupt, mismatched, unreadable).
 */
int sdc_calibration_emax(const char *path, const struct sdc_calibration_key *key, const char *precision,
			 double *emax, char *source, size_t srclen, char *err, size_t errlen);

/* Adds "sha256" over the canonical form of doc (sorted keys, compact) and writes it atomically. */
int sdc_calibration_write(const char *path, struct sdc_facts *doc, char *err, size_t errlen);

/* Loads and verifies a file's format and digest (the caller frees it). NULL with err on failure. */
struct sdc_facts *sdc_calibration_read(const char *path, char *err, size_t errlen);

#endif
