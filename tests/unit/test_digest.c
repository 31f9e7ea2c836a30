/*
 * SHA-256 through OpenSSL EVP against sha256sum (coreutils, an independent implementation)
 * on files of many sizes, and against the FIPS 180-2 example; one context reused throughout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "base/digest.h"
#include "base/rng.h"

#include <xxhash.h> /* the library build, as an independent XXH3 */

static void sha256sum_of(const char *path, char *hex)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "sha256sum '%s'", path);
	FILE *p = popen(cmd, "r");
	hex[0] = '\0';
	if (!p)
		return;
	if (fscanf(p, "%64s", hex) != 1)
		hex[0] = '\0';
	pclose(p);
}

int main(void)
{
	struct sdc_sha256 s;
	uint8_t d[SDC_SHA256_LEN];
	char hex[SDC_SHA256_HEX_LEN], want[SDC_SHA256_HEX_LEN + 8];
	CHECK(sdc_sha256_init(&s) == 0);

	/* FIPS 180-2, appendix B.1. */
	sdc_sha256_buf(&s, "abc", 3, d);
	sdc_hex(d, sizeof(d), hex);
	CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));

	const size_t sizes[] = { 0, 1, 55, 56, 63, 64, 65, 1000, 4096, 1 << 20, (1 << 20) + 7 };
	uint8_t *buf = malloc((1 << 20) + 8);
	char path[] = "/tmp/sdcscan-digest-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	struct sdc_rng r = sdc_rng_make(42, 0, 0, 0, 0);
	sdc_rng_fill_u32(&r, 0, (uint32_t *)buf, ((1 << 20) + 8) / 4);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		CHECK(ftruncate(fd, 0) == 0 && lseek(fd, 0, SEEK_SET) == 0);
		CHECK(write(fd, buf, sizes[i]) == (ssize_t)sizes[i]);
		sha256sum_of(path, want);
		/* Feed it in two uneven pieces to exercise update. */
		sdc_sha256_update(&s, buf, sizes[i] / 3);
		sdc_sha256_update(&s, buf + sizes[i] / 3, sizes[i] - sizes[i] / 3);
		sdc_sha256_final(&s, d);
		sdc_hex(d, sizeof(d), hex);
		CHECK_MSG(!strcmp(hex, want), "size %zu: ours %s, sha256sum %s", sizes[i], hex, want);
	}
	close(fd);
	unlink(path);
	sdc_sha256_release(&s);
	CHECK(s.ctx == NULL);

	/* Our dispatched XXH3 (AVX2 where present) against the library's own build. */
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		CHECK_MSG(sdc_xxh64(buf, sizes[i]) == XXH3_64bits(buf, sizes[i]), "xxh3 size %zu", sizes[i]);
	uint64_t h = sdc_xxh64(buf, 1 << 20);
	buf[12345] ^= 0x10;
	CHECK(sdc_xxh64(buf, 1 << 20) != h);
	buf[12345] ^= 0x10;
	CHECK(sdc_xxh64(buf, 1 << 20) == h);
	free(buf);
	return check_done("test_digest");
}
