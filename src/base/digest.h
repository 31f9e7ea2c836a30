/*
 * Digests. SHA-256 (OpenSSL EVP) names results that are compared across runs and hosts;
 * XXH3-64 names per-iteration results inside a run, where SHA-256 would cost as much as
 * the work it checks.
 */
#ifndef SDC_DIGEST_H
#define SDC_DIGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SDC_SHA256_LEN 32
#define SDC_SHA256_HEX_LEN (2 * SDC_SHA256_LEN + 1)

/* One EVP context, reused for every digest taken through it, freed by release. */
struct sdc_sha256 {
	void *ctx; /* EVP_MD_CTX */
};

int sdc_sha256_init(struct sdc_sha256 *s);
void sdc_sha256_update(struct sdc_sha256 *s, const void *data, size_t len);
/* Writes the digest and resets the context for the next message. */
void sdc_sha256_final(struct sdc_sha256 *s, uint8_t out[SDC_SHA256_LEN]);
void sdc_sha256_release(struct sdc_sha256 *s);

/* One-shot helper on a caller's context. */
void sdc_sha256_buf(struct sdc_sha256 *s, const void *data, size_t len, uint8_t out[SDC_SHA256_LEN]);

void sdc_hex(const uint8_t *bytes, size_t len, char *out);

uint64_t sdc_xxh64(const void *data, size_t len);

/*
 * SHA-256 (hex) of a JSON document (json_t *) without its "sha256" member, keys sorted, compact:
 * the self-check of calibration and golden files.
 */
int sdc_json_content_sha256(void *doc, char hex[SDC_SHA256_HEX_LEN]);
#if defined(__x86_64__)
uint64_t sdc_xxh64_avx2(const void *data, size_t len);
#endif

#endif
