#include "probes/gemm/calibration.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu.h"
#include "base/digest.h"
#include "kernels/gemm_float.h"
#include "sdc_config.h"
#include "base/util.h"

/* Where the built-in e_max of a precision comes from (calibration.h). */
static const char *builtin_why(const char *precision)
{
	return !strcmp(precision, "fp32") ? "V-ABFT Table 7's FP32 ratio for per-step accumulation (34u, NPU at N = 1024)"
					  : "a margin (66u, about 9x the 7.5u OpenBLAS showed; V-ABFT Table 7's FP64 is 3-6u)";
}

/* A precision's entry resting on fewer GEMMs at some size than the protocol needs: err says so. */
static bool too_few(json_t *prec, const char *file, const char *name, char *err, size_t errlen)
{
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(prec, "sizes"), i, s) {
		const json_int_t g = json_integer_value(json_object_get(s, "gemms"));
		if (g < SDC_CALIBRATION_MIN_GEMMS) {
			snprintf(err, errlen, "calibration file %s: %s at K=%" JSON_INTEGER_FORMAT " rests on %" JSON_INTEGER_FORMAT
				 " GEMMs, fewer than the %d per size its maximum needs; run sdcscan calibrate with more --trials",
				 file, name, json_integer_value(json_object_get(s, "k")), g, SDC_CALIBRATION_MIN_GEMMS);
			return true;
		}
	}
	if (!json_array_size(json_object_get(prec, "sizes"))) {
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
			 char *source, size_t srclen, char *err, size_t errlen)
{
	const bool named = path && *path;
	const char *file = named ? path : sdc_calibration_default_path();
	source[0] = '\0';
	if (!named && access(file, F_OK) && errno == ENOENT)
		return 0;
	json_t *doc = sdc_calibration_read(file, err, errlen);
	if (!doc)
		return -1;
	char name[200];
	snprintf(name, sizeof(name), "%s, %s", key->cpu_model, key->library);
	json_t *e = json_object_get(json_object_get(json_object_get(json_object_get(json_object_get(doc, "gpus"), name),
								   "precisions"), precision), "emax");
	int rc = 0;
	if (e && (!json_is_real(e) || json_real_value(e) <= 0 || json_real_value(e) >= 1)) {
		snprintf(err, errlen, "calibration file %s: gpus.\"%s\".precisions.%s.emax is not a number in (0, 1)", file,
			 name, precision);
		rc = -1;
	} else if (e && too_few(json_object_get(json_object_get(json_object_get(json_object_get(doc, "gpus"), name),
							 "precisions"), precision), file, precision, err, errlen)) {
		rc = -1;
	} else if (e) {
		*emax = json_real_value(e);
		snprintf(source, srclen, "calibrated: %g for %s from %s", *emax, name, file);
	}
	json_decref(doc);
	return rc;
}

const char *sdc_calibration_default_path(void)
{
	const char *env = getenv("SDCSCAN_CALIBRATION");
	return env && *env ? env : SDC_CALIBRATION_PATH;
}

int sdc_calibration_write(const char *path, json_t *doc, char *err, size_t errlen)
{
	char hex[SDC_SHA256_HEX_LEN];
	if (sdc_json_content_sha256(doc, hex)) {
		snprintf(err, errlen, "cannot serialise the calibration");
		return -1;
	}
	json_object_set_new(doc, "sha256", json_string(hex));
	char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
	if (!text) {
		snprintf(err, errlen, "cannot serialise the calibration");
		return -1;
	}
	size_t len = strlen(text);
	text[len] = '\0';
	char *with_nl = malloc(len + 2);
	int rc = -1;
	if (with_nl) {
		memcpy(with_nl, text, len);
		with_nl[len] = '\n';
		rc = sdc_write_atomic(path, with_nl, len + 1, err, errlen);
		free(with_nl);
	}
	free(text);
	return rc;
}

json_t *sdc_calibration_read(const char *path, char *err, size_t errlen)
{
	json_error_t je;
	size_t len;
	err[0] = '\0';
	char why[600] = "";
	char *text = sdc_read_regular_file(path, 16u << 20, &len, "calibration file", why, sizeof(why));
	if (!text) {
		snprintf(err, errlen, "calibration file %s", why);
		return NULL;
	}
	json_t *doc = json_loadb(text, len, 0, &je);
	free(text);
	if (!doc) {
		/* (jansson gives no position when the file could not be opened) */
		if (je.line > 0)
			snprintf(err, errlen, "calibration file %s: %s (line %d, column %d)", path, je.text, je.line,
				 je.column);
		else
			snprintf(err, errlen, "calibration file %s: %s", path, je.text);
		return NULL;
	}
	const char *format = json_string_value(json_object_get(doc, "format"));
	const char *sha = json_string_value(json_object_get(doc, "sha256"));
	json_t *version = json_object_get(doc, "version");
	char hex[SDC_SHA256_HEX_LEN];
	if (!json_is_object(doc) || !format || strcmp(format, SDC_CALIBRATION_FORMAT)) {
		snprintf(err, errlen, "calibration file %s: not an sdcscan calibration (format is not \"%s\")", path,
			 SDC_CALIBRATION_FORMAT);
	} else if (!json_is_integer(version) || json_integer_value(version) != SDC_CALIBRATION_VERSION) {
		snprintf(err, errlen, "calibration file %s: version %s is not supported (expected %d)", path,
			 json_is_integer(version) ? "other" : "missing", SDC_CALIBRATION_VERSION);
	} else if (!sha || sdc_json_content_sha256(doc, hex) || strcmp(sha, hex)) {
		snprintf(err, errlen,
			 "calibration file %s: its SHA-256 does not match its content (corrupt or edited); "
			 "run sdcscan calibrate again",
			 path);
	} else {
		return doc;
	}
	json_decref(doc);
	return NULL;
}

static int key_matches(json_t *doc, const struct sdc_calibration_key *key, const char *path, char *err,
		       size_t errlen)
{
	json_t *k = json_object_get(doc, "key");
	const struct {
		const char *name, *want;
	} fields[] = {
		{ "cpu_model", key->cpu_model },
		{ "library", key->library },
		{ "library_version", key->library_version },
		{ "kernel", key->kernel },
	};
	for (size_t i = 0; i < SDC_ARRAY_SIZE(fields); i++) {
		const char *have = json_string_value(json_object_get(k, fields[i].name));
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
	json_t *doc = sdc_calibration_read(file, err, errlen);
	if (!doc)
		return -1;
	if (!json_object_get(doc, "key")) {
		/* written by calibrate --gpus alone: no CPU calibration in it */
		snprintf(source, srclen, "built-in: %g, %s (%s calibrates GPUs only)",
			 *emax, builtin_why(precision), file);
		json_decref(doc);
		return 0;
	}
	int rc = key_matches(doc, key, file, err, errlen);
	if (!rc) {
		json_t *p = json_object_get(json_object_get(doc, "precisions"), precision);
		json_t *e = json_object_get(p, "emax");
		if (!p) {
			snprintf(source, srclen, "built-in: %g, %s (%s has no %s entry)",
				 *emax, builtin_why(precision), file, precision);
		} else if (!json_is_real(e) || json_real_value(e) <= 0 || json_real_value(e) >= 1) {
			snprintf(err, errlen, "calibration file %s: precisions.%s.emax is not a number in (0, 1)", file,
				 precision);
			rc = -1;
		} else if (too_few(p, file, precision, err, errlen)) {
			rc = -1;
		} else {
			*emax = json_real_value(e);
			snprintf(source, srclen, "calibrated: %g from %s", *emax, file);
		}
	}
	json_decref(doc);
	return rc;
}
