/* SHA-256 and XXH3-64 digests of results (base/digest.h). */
#include "base/digest.h"

#include <jansson.h>
#include <string.h>

#include <openssl/evp.h>
#include <stdlib.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

int sdc_sha256_init(struct sdc_sha256 *s)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (!ctx)
		return -1;
	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(ctx);
		return -1;
	}
	s->ctx = ctx;
	return 0;
}

void sdc_sha256_update(struct sdc_sha256 *s, const void *data, size_t len)
{
	/* EVP_DigestUpdate only fails on a misused context, which is a bug here. */
	if (EVP_DigestUpdate(s->ctx, data, len) != 1)
		abort();
}

void sdc_sha256_final(struct sdc_sha256 *s, uint8_t out[SDC_SHA256_LEN])
{
	unsigned int len = 0;
	if (EVP_DigestFinal_ex(s->ctx, out, &len) != 1 || len != SDC_SHA256_LEN)
		abort();
	/* Re-arm the same context instead of allocating a new one per digest. */
	if (EVP_DigestInit_ex(s->ctx, NULL, NULL) != 1)
		abort();
}

void sdc_sha256_release(struct sdc_sha256 *s)
{
	EVP_MD_CTX_free(s->ctx);
	s->ctx = NULL;
}

void sdc_sha256_buf(struct sdc_sha256 *s, const void *data, size_t len, uint8_t out[SDC_SHA256_LEN])
{
	sdc_sha256_update(s, data, len);
	sdc_sha256_final(s, out);
}

void sdc_hex(const uint8_t *bytes, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[bytes[i] >> 4];
		out[2 * i + 1] = digits[bytes[i] & 15];
	}
	out[2 * len] = '\0';
}

uint64_t sdc_xxh64(const void *data, size_t len)
{
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx2"))
		return sdc_xxh64_avx2(data, len);
#endif
	return XXH3_64bits(data, len);
}

int sdc_json_content_sha256(void *doc, char hex[SDC_SHA256_HEX_LEN])
{
	json_t *copy = json_deep_copy(doc);
	if (!copy)
		return -1;
	json_object_del(copy, "sha256");
	char *text = json_dumps(copy, JSON_SORT_KEYS | JSON_COMPACT | JSON_REAL_PRECISION(17));
	json_decref(copy);
	if (!text)
		return -1;
	struct sdc_sha256 s;
	uint8_t d[SDC_SHA256_LEN];
	if (sdc_sha256_init(&s)) {
		free(text);
		return -1;
	}
	sdc_sha256_buf(&s, text, strlen(text), d);
	sdc_sha256_release(&s);
	sdc_hex(d, sizeof(d), hex);
	free(text);
	return 0;
}
