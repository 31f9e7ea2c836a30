/*
 * Shared by the libFuzzer harnesses (tests/fuzz/fuzz_NAME.c): each feeds one reader of outside input
 * the bytes libFuzzer makes, and lets ASan/UBSan judge. A reader may refuse its input; it may
 * not crash, leak, read out of bounds or overflow doing so.
 */
#ifndef SDC_FUZZ_H
#define SDC_FUZZ_H

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/digest.h"

/* The bytes as a C string (a command-line argument cannot hold a NUL: cut there). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/*
 * Files that carry the SHA-256 of their content (golden, calibration) refuse nearly every fuzzed
 * input at that gate. With fix set, a JSON object gets its true digest first, so the fields
 * behind the gate are fuzzed too. Returns a malloc'd text (*len) or NULL (not a JSON object).
 */
static inline char *fuzz_with_true_sha(const uint8_t *data, size_t size, size_t *len)
{
	json_t *doc = json_loadb((const char *)data, size, 0, NULL);
	char hex[SDC_SHA256_HEX_LEN];
	char *text = NULL;
	if (json_is_object(doc) && !sdc_json_content_sha256(doc, hex)) {
		json_object_set_new(doc, "sha256", json_string(hex));
		text = json_dumps(doc, JSON_COMPACT);
	}
	json_decref(doc);
	*len = text ? strlen(text) : 0;
	return text;
}

/*
 * The input of a reader of signed files: the first byte picks the rest as it is (bit 0 clear) or
 * with its true SHA-256 (set; a text that is not a JSON object stays as it is). Returns the text
 * and its length; *owned is what to free (NULL when the text is the input's own bytes). size >= 1.
 */
static inline const char *fuzz_signed_input(const uint8_t *data, size_t size, size_t *len, char **owned)
{
	*owned = data[0] & 1 ? fuzz_with_true_sha(data + 1, size - 1, len) : NULL;
	if (*owned)
		return *owned;
	*len = size - 1;
	return (const char *)data + 1;
}

#endif
