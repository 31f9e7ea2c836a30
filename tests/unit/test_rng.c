/*
 * Philox4x32-10 against independent answers: the Random123 known-answer vectors (the three
 * philox4x32 10 lines of Random123's tests/kat_vectors, copied here and also read from the
 * installed file when present), and Random123's own philox.h on many random inputs. The vector
 * fill must equal the one-block function everywhere, including across a 2^32 carry.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/rng.h"
#include "sdc_config.h"

#if HAVE_RANDOM123
#include <Random123/philox.h>
#endif

struct kat {
	uint32_t ctr[4], key[2], out[4];
};

/* From Random123 1.14 tests/kat_vectors ("philox4x32 10 ..."). */
static const struct kat kats[] = {
	{ { 0, 0, 0, 0 }, { 0, 0 }, { 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8 } },
	{ { 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff },
	  { 0xffffffff, 0xffffffff },
	  { 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd } },
	{ { 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344 },
	  { 0xa4093822, 0x299f31d0 },
	  { 0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1 } },
};

static int check_kat(const struct kat *k)
{
	struct sdc_philox_ctr c = { { k->ctr[0], k->ctr[1], k->ctr[2], k->ctr[3] } };
	struct sdc_philox_key key = { { k->key[0], k->key[1] } };
	struct sdc_philox_ctr r = sdc_philox4x32_10(c, key);
	return !memcmp(r.v, k->out, sizeof(r.v));
}

/* The installed kat_vectors file, when librandom123-doc put it there. */
static int installed_kats(void)
{
	FILE *f = popen("zcat /usr/share/doc/librandom123-dev/tests/kat_vectors.gz 2>/dev/null", "r");
	if (!f)
		return 0;
	char line[512];
	int n = 0;
	while (fgets(line, sizeof(line), f)) {
		struct kat k;
		if (sscanf(line, "philox4x32 10 %x %x %x %x %x %x %x %x %x %x", &k.ctr[0], &k.ctr[1], &k.ctr[2],
			   &k.ctr[3], &k.key[0], &k.key[1], &k.out[0], &k.out[1], &k.out[2], &k.out[3]) != 10)
			continue;
		CHECK_MSG(check_kat(&k), "installed KAT line: %s", line);
		n++;
	}
	pclose(f);
	return n;
}

int main(void)
{
	for (size_t i = 0; i < sizeof(kats) / sizeof(kats[0]); i++)
		CHECK_MSG(check_kat(&kats[i]), "known-answer vector %zu", i);
	int n = installed_kats();
	printf("checked %d known-answer vectors from the installed Random123 file\n", n);

#if HAVE_RANDOM123
	/* Random123's implementation on inputs from a simple LCG. */
	uint64_t x = 0x9E3779B97F4A7C15ull;
	for (int i = 0; i < 100000; i++) {
		uint32_t w[6];
		for (int j = 0; j < 6; j++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			w[j] = (uint32_t)(x >> 32);
		}
		philox4x32_ctr_t rc = { { w[0], w[1], w[2], w[3] } };
		philox4x32_key_t rk = { { w[4], w[5] } };
		philox4x32_ctr_t want = philox4x32_R(10, rc, rk);
		struct sdc_philox_ctr c = { { w[0], w[1], w[2], w[3] } };
		struct sdc_philox_key k = { { w[4], w[5] } };
		struct sdc_philox_ctr got = sdc_philox4x32_10(c, k);
		if (memcmp(got.v, want.v, sizeof(got.v))) {
			CHECK_MSG(0, "differs from Random123 at input %d", i);
			break;
		}
	}
#else
	printf("Random123 headers not found: cross-check against its philox.h skipped\n");
#endif

	/* The vector fill against the one-block function, across a carry into the high word. */
	struct sdc_rng r = sdc_rng_make(0x0123456789abcdefull, 7, 3, 5, 11);
	uint32_t *buf = malloc(4 * 1000 * sizeof(uint32_t));
	const uint64_t starts[] = { 0, 1, 5, 0xFFFFFFF0ull, 0xFFFFFFFFull - 40, (1ull << 40) + 3 };
	for (size_t s = 0; s < sizeof(starts) / sizeof(starts[0]); s++) {
		for (size_t n_words = 1; n_words < 4 * 1000; n_words = n_words * 3 + 1) {
			memset(buf, 0, 4 * 1000 * sizeof(uint32_t));
			sdc_rng_fill_u32(&r, starts[s], buf, n_words);
			for (size_t wd = 0; wd < n_words; wd++) {
				struct sdc_philox_ctr c = sdc_rng_block(&r, starts[s] + wd / 4);
				if (buf[wd] != c.v[wd % 4]) {
					CHECK_MSG(0, "fill differs at start %llx word %zu of %zu",
						  (unsigned long long)starts[s], wd, n_words);
					break;
				}
			}
		}
	}
	/* Streams with different keys or purposes differ. */
	struct sdc_rng r2 = sdc_rng_make(0x0123456789abcdefull, 7, 3, 5, 12);
	CHECK(memcmp(sdc_rng_block(&r, 0).v, sdc_rng_block(&r2, 0).v, 16));
	/* Uniform draws stay in range. */
	for (int i = 0; i < 1000; i++) {
		double u = sdc_rng_uniform(&r, (uint64_t)i);
		CHECK(u >= 0 && u < 1);
		CHECK(sdc_rng_below(&r, (uint64_t)i, 7) < 7);
	}
	free(buf);
	return check_done("test_rng");
}
