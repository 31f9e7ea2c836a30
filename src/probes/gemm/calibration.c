/* V-ABFT e_max calibration files: read, matched, written (probes/gemm/calibration.h). */
#include "probes/gemm/calibration.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device/cpu.h"
#include "base/digest.h"
#include "run/facts.h"
#include "kernels/gemm_float.h"
#include "sdc_config.h"
#include "base/message.h"

/* Where the built-in e_max of a precision comes from (calibration.h). */
static const char *builtin_why(const char *precision)
{
	return !strcmp(precision, "fp32") ? "V-ABFT Table 7's FP32 ratio for per-step accumulation (34u, NPU at N = 1024)"
					  : "a margin (66u, about 9x the 7.5u OpenBLAS showed; V-ABFT Table 7's FP64 is 3-6u)";
}

/* A precision's entry resting on fewer GEMMs at some size than the protocol needs: err says so.
 * (A size whose counts are not integers counts as 0.) */
static bool too_few(const struct sdc_facts *prec, const char *file, const char *name, char *err, size_t errlen)
{
	for (size_t i = 0; i < sdc_facts_rows(prec, "sizes"); i++) {
		const struct sdc_facts *s = sdc_facts_row_at(prec, "sizes", i);
		int64_t g = 0, k = 0;
		sdc_facts_get_int(s, "gemms", &g);
		if (!sdc_facts_get_int(s, "k", &k) || k < 1 || k > INT32_MAX) {
			snprintf(err, errlen, "calibration file %s: %s has a size whose K is not a positive integer (the "
				 "depth it was measured at)", file, name);
			return true;
		}
		if (g < SDC_CALIBRATION_MIN_GEMMS) {
			snprintf(err, errlen, "calibration file %s: %s at K=%" PRId64 " rests on %" PRId64
				 " GEMMs, fewer than the %d per size its maximum needs; run sdcscan calibrate with more --trials",
				 file, name, k, g, SDC_CALIBRATION_MIN_GEMMS);
			return true;
		}
	}
	if (!sdc_facts_rows(prec, "sizes")) {
		snprintf(err, errlen, "calibration file %s: %s names no sizes it was measured at", file, name);
		return true;
	}
	return false;
}

void sdc_calibration_key_here(struct sdc_calibration_key *k, const char *impl)
{
	memset(k, 0, sizeof(*k));
	struct sdc_device *devs = NULL;
	int n = 0;
	char err[128];
	sdc_strlcpy(k->cpu_model, "unknown", sizeof(k->cpu_model));
	if (!sdc_cpu_devices(NULL, &devs, &n, err, sizeof(err)) && n)
		sdc_strlcpy(k->cpu_model, devs[0].model, sizeof(k->cpu_model));
	free(devs);
	if (!strcmp(impl, "openblas")) {
		struct sdc_blas_info bi;
		sdc_blas_info(&bi);
		sdc_strlcpy(k->library, bi.library, sizeof(k->library));
		sdc_strlcpy(k->library_version, bi.version, sizeof(k->library_version));
		sdc_strlcpy(k->kernel, bi.corename, sizeof(k->kernel));
	} else {
		sdc_strlcpy(k->library, "sdcscan", sizeof(k->library));
		sdc_strlcpy(k->library_version, SDC_VERSION, sizeof(k->library_version));
		sdc_strlcpy(k->kernel, impl, sizeof(k->kernel));
	}
}

void sdc_calibration_key_gpu(struct sdc_calibration_key *k, const char *model, const char *library)
{
	memset(k, 0, sizeof(*k));
	sdc_strlcpy(k->cpu_model, model, sizeof(k->cpu_model));
	sdc_strlcpy(k->library, library, sizeof(k->library));
	sdc_strlcpy(k->kernel, "gpu", sizeof(k->kernel));
}

int sdc_calibration_find(const char *path, const struct sdc_calibration_key *key, const char *precision, double *emax,
			 int *deepest, char *source, size_t srclen, char *err, size_t errlen)
{
	const bool named = path && *path;
	const char *file = named ? path : sdc_calibration_default_path();
	source[0] = '\0';
	if (!named && access(file, F_OK) && errno == ENOENT)
		return 0;
	struct sdc_facts *doc = sdc_calibration_read(file, err, errlen);
	if (!doc)
		return -1;
	char name[200];
	snprintf(name, sizeof(name), "%s, %s", key->cpu_model, key->library);
	const struct sdc_facts *p = sdc_facts_find_key(sdc_facts_find_key(sdc_facts_find(doc, "gpus"), name),
						       "precisions");
	p = sdc_facts_find_key(p, precision);
	double e = 0;
	int rc = 0;
	if (sdc_facts_has(p, "emax") && (!sdc_facts_get_real(p, "emax", &e) || e <= 0 || e >= 1)) {
		snprintf(err, errlen, "calibration file %s: gpus.\"%s\".precisions.%s.emax is not a number in (0, 1)", file,
			 name, precision);
		rc = -1;
	} else if (sdc_facts_has(p, "emax") && too_few(p, file, precision, err, errlen)) {
		rc = -1;
	} else if (sdc_facts_has(p, "emax")) {
		*emax = e;
		*deepest = 0;
		for (size_t i = 0; i < sdc_facts_rows(p, "sizes"); i++) {
			int64_t k = 0;
			sdc_facts_get_int(sdc_facts_row_at(p, "sizes", i), "k", &k);
			*deepest = k > *deepest ? (int)k : *deepest; /* (too_few: each in 1..INT32_MAX) */
		}
		snprintf(source, srclen, "calibrated: %g for %s from %s", *emax, name, file);
	}
	sdc_facts_free(doc);
	return rc;
}

const char *sdc_calibration_default_path(void)
{
	const char *env = getenv("SDCSCAN_CALIBRATION");
	return env && *env ? env : SDC_CALIBRATION_PATH;
}

int sdc_calibration_write(const char *path, struct sdc_facts *doc, char *err, size_t errlen)
{
	char hex[SDC_SHA256_HEX_LEN];
	if (sdc_facts_sha256(doc, hex)) {
		snprintf(err, errlen, "cannot serialise the calibration");
		return -1;
	}
	sdc_facts_str(doc, "sha256", hex);
	return sdc_facts_write(path, doc, err, errlen);
}

struct sdc_facts *sdc_calibration_read(const char *path, char *err, size_t errlen)
{
	struct sdc_facts *doc = sdc_facts_load(path, 16u << 20, "calibration file", err, errlen);
	if (!doc)
		return NULL;
	/* (a document that is not an object has none of these) */
	const char *format = sdc_facts_get_str(doc, "format");
	const char *sha = sdc_facts_get_str(doc, "sha256");
	int64_t version = 0;
	const bool has_version = sdc_facts_get_int(doc, "version", &version);
	char hex[SDC_SHA256_HEX_LEN];
	if (!format || strcmp(format, SDC_CALIBRATION_FORMAT)) {
		snprintf(err, errlen, "calibration file %s: not an sdcscan calibration (format is not \"%s\")", path,
			 SDC_CALIBRATION_FORMAT);
	} else if (!has_version || version != SDC_CALIBRATION_VERSION) {
		snprintf(err, errlen, "calibration file %s: version %s is not supported (expected %d)", path,
			 has_version ? "other" : "missing", SDC_CALIBRATION_VERSION);
	} else if (!sha || sdc_facts_sha256(doc, hex) || strcmp(sha, hex)) {
		snprintf(err, errlen,
			 "calibration file %s: its SHA-256 does not match its content (corrupt or edited); "
			 "run sdcscan calibrate again",
			 path);
	} else {
		return doc;
	}
	sdc_facts_free(doc);
	return NULL;
}

static int key_matches(const struct sdc_facts *doc, const struct sdc_calibration_key *key, const char *path, char *err,
		       size_t errlen)
{
	const struct sdc_facts *k = sdc_facts_find(doc, "key");
	const struct {
		const char *name, *want;
	} fields[] = {
		{ "cpu_model", key->cpu_model },
		{ "library", key->library },
		{ "library_version", key->library_version },
		{ "kernel", key->kernel },
	};
	for (size_t i = 0; i < SDC_ARRAY_SIZE(fields); i++) {
		const char *have = sdc_facts_get_str(k, fields[i].name);
		if (!have || strcmp(have, fields[i].want)) {
			snprintf(err, errlen,
				 "calibration file %s was made for %s '%s', but this host has '%s'; run sdcscan "
				 "calibrate on this host (or point SDCSCAN_CALIBRATION elsewhere)",
				 path, fields[i].name, have ? have : "(none)", fields[i].want);
			return -1;
		}
	}
	return 0;
}

int sdc_calibration_emax(const char *path, const struct sdc_calibration_key *key, const char *precision,
			 double *emax, char *source, size_t srclen, char *err, size_t errlen)
{
	const bool named = path && *path;
	const char *file = named ? path : sdc_calibration_default_path();
	*emax = !strcmp(precision, "fp32") ? SDC_EMAX_FP32 : SDC_EMAX_FP64;
	if (!named && access(file, F_OK) && errno == ENOENT) {
		snprintf(source, srclen, "built-in: %g, %s (no calibration file at %s)",
			 *emax, builtin_why(precision), file);
		return 0;
	}
	struct sdc_facts *doc = sdc_calibration_read(file, err, errlen);
	if (!doc)
		return -1;
	if (!sdc_facts_has(doc, "key")) {
		/* written by calibrate --gpus alone: no CPU calibration in it */
		snprintf(source, srclen, "built-in: %g, %s (%s calibrates GPUs only)",
			 *emax, builtin_why(precision), file);
		sdc_facts_free(doc);
		return 0;
	}
	int rc = key_matches(doc, key, file, err, errlen);
	if (!rc) {
		const struct sdc_facts *precisions = sdc_facts_find(doc, "precisions");
		const struct sdc_facts *p = sdc_facts_find_key(precisions, precision);
		double e = 0;
		if (!p && !sdc_facts_has(precisions, precision)) {
			snprintf(source, srclen, "built-in: %g, %s (%s has no %s entry)",
				 *emax, builtin_why(precision), file, precision);
		} else if (!sdc_facts_get_real(p, "emax", &e) || e <= 0 || e >= 1) {
			snprintf(err, errlen, "calibration file %s: precisions.%s.emax is not a number in (0, 1)", file,
				 precision);
			rc = -1;
		} else if (too_few(p, file, precision, err, errlen)) {
			rc = -1;
		} else {
			*emax = e;
			snprintf(source, srclen, "calibrated: %g from %s", *emax, file);
		}
	}
	sdc_facts_free(doc);
	return rc;
}
