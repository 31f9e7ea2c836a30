/*
 * ecparity's parity arithmetic: the placement keeps members and parity on different servers
 * and spreads the parities evenly; difference propagation through a long Adagrad run leaves the
 * parities equal, bit for bit, to parities computed afresh from the data (an independent
 * encoding) with no false positive in over a million group verifications; every single flipped
 * bit is located at its server, entry, word and bit; a corrupt parity word is not blamed on a
 * member; every server's entries are rebuilt bit for bit.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "probes/ecparity/parity.h"
#include "probes/ecparity/ecparity.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t next(void)
{
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}
static float uniform(void)
{
	return (float)((double)(next() >> 11) * 0x1p-53 * 2.0 - 1.0);
}

/*
 * The single-host form's messages: the update recorded in one pass gives the bits of the update
 * and of its difference apart; every holder applying what it holds gives the parities that
 * applying every record to both does (each record reaches its stripe's holder and its column's);
 * and the CRC sees any one bit flipped in the header or a record.
 */
static void test_bundle(void)
{
	const struct sdc_ec_layout l = { .servers = 6, .k = 3, .rows = 97, .words = 9 };
	const int d = l.words - 1, n = 40;
	struct sdc_ec_state a, b;
	CHECK(!sdc_ec_state_alloc(&a, &l) && !sdc_ec_state_alloc(&b, &l));
	for (size_t i = 0; i < (size_t)l.servers * (size_t)l.rows * (size_t)l.words; i++) {
		const float v = (float)((int)(i * 2654435761u % 1000) - 500) * 1e-4f;
		memcpy(&a.data[i], &v, 4);
	}
	memcpy(b.data, a.data, (size_t)l.servers * (size_t)l.rows * (size_t)l.words * 4);
	sdc_ec_encode(&a);
	sdc_ec_encode(&b);
	uint32_t *buf = calloc(sdc_ec_bundle_words(n, l.words), 4);
	struct sdc_ec_bundle *m = (struct sdc_ec_bundle *)buf;
	*m = (struct sdc_ec_bundle){ .from = 4, .round = 7, .step = 3 };
	int bad_bits = 0;
	for (int i = 0; i < n; i++) {
		float g[SDC_EC_MAX_DIM];
		for (int j = 0; j < d; j++)
			g[j] = (float)((i * 31 + j * 7) % 17 - 8) * 0.125f;
		const int row = (i * 13) % l.rows;
		uint32_t *ea = sdc_ec_entry(&a, 4, row), *eb = sdc_ec_entry(&b, 4, row), old[SDC_EC_MAX_DIM + 1];
		memcpy(old, eb, 4 * (size_t)l.words);
		sdc_ec_bundle_update(m, ea, row, d, g);
		sdc_ec_adagrad(eb, d, g);
		const uint32_t *rec = sdc_ec_bundle_record(m, i, l.words);
		bad_bits += memcmp(ea, eb, 4 * (size_t)l.words) != 0 || rec[0] != (uint32_t)row;
		for (int w = 0; w < l.words; w++)
			bad_bits += rec[1 + w] != sdc_ec_diff(eb[w], old[w]);
	}
	CHECK_MSG(!bad_bits, "%d updates or differences recorded in one pass differ from sdc_ec_adagrad's", bad_bits);
	m->crc = sdc_ec_bundle_crc(m, (uint32_t)n, l.words);
	/* every holder its share (a), against every record to both parities (b) */
	for (int h = 0; h < l.servers; h++)
		sdc_ec_bundle_apply(&a, m, h);
	sdc_ec_bundle_apply(&b, m, -1);
	struct sdc_ec_break br;
	CHECK(!memcmp(a.stripe, b.stripe, (size_t)l.rows * (size_t)sdc_ec_chunks(&l) * (size_t)l.words * 4));
	CHECK(!memcmp(a.column, b.column, (size_t)l.servers * (size_t)l.words * 4));
	CHECK(!sdc_ec_verify_stripes(&a, &br, 1) && !sdc_ec_verify_columns(&a, &br, 1));
	/* the CRC: any one bit of the header's four words or of a record */
	const size_t nw = sdc_ec_bundle_words(n, l.words);
	int missed = 0;
	for (size_t w = 0; w < nw; w++) {
		if (w == 4)
			continue; /* the CRC word itself */
		for (int bit = 0; bit < 32; bit += 5) {
			buf[w] ^= 1u << bit;
			missed += sdc_ec_bundle_crc(m, (uint32_t)n, l.words) == m->crc;
			buf[w] ^= 1u << bit;
		}
	}
	CHECK_MSG(!missed, "%d single-bit changes of a message pass its CRC32C", missed);
	free(buf);
	sdc_ec_state_free(&a);
	sdc_ec_state_free(&b);
}

static void test_layout(void)
{
	char why[256];
	const struct sdc_ec_layout bad[] = { { 1, 1, 8, 4 }, { 4, 4, 8, 4 }, { 6, 4, 8, 4 }, { 4, 0, 8, 4 }, { 4, 2, 0, 4 } };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_MSG(sdc_ec_layout_check(&bad[i], why, sizeof(why)), "layout %zu accepted", i);
	const struct sdc_ec_layout good[] = { { 2, 1, 12, 3 }, { 4, 2, 12, 3 }, { 6, 3, 12, 3 }, { 8, 1, 16, 3 }, { 6, 2, 12, 3 } };
	for (size_t g = 0; g < sizeof(good) / sizeof(good[0]); g++) {
		const struct sdc_ec_layout *l = &good[g];
		CHECK(!sdc_ec_layout_check(l, why, sizeof(why)));
		int held[4096] = { 0 };
		for (int r = 0; r < l->rows; r++)
			for (int c = 0; c < sdc_ec_chunks(l); c++) {
				const int p = sdc_ec_stripe_parity_server(l, r, c);
				held[p]++;
				for (int i = 0; i < l->k; i++) {
					const int m = sdc_ec_member(l, r, c, i);
					CHECK_MSG(m != p, "layout %zu: stripe (%d, %d) holds its parity on member %d", g, r, c, m);
					CHECK(sdc_ec_chunk_of(l, m, r) == c);
					for (int j = 0; j < i; j++)
						CHECK(sdc_ec_member(l, r, c, j) != m);
				}
			}
		/* every entry in exactly one stripe; parities spread evenly (rows a multiple of S) */
		for (int s = 0; s < l->servers; s++)
			CHECK_MSG(held[s] == l->rows * sdc_ec_chunks(l) / l->servers, "layout %zu: server %d holds %d parities", g,
				  s, held[s]);
	}
}

int main(void)
{
	test_bundle();
	test_layout();
	const int d = 16;
	const struct sdc_ec_layout l = { .servers = 4, .k = 2, .rows = 1000, .words = d + 1 };
	struct sdc_ec_state st, fresh;
	CHECK(!sdc_ec_state_alloc(&st, &l) && !sdc_ec_state_alloc(&fresh, &l));
	for (int s = 0; s < l.servers; s++)
		for (int r = 0; r < l.rows; r++) {
			uint32_t *e = sdc_ec_entry(&st, s, r);
			for (int j = 0; j < d; j++) {
				const float v = uniform() * 0.1f;
				memcpy(&e[j], &v, 4);
			}
			const float acc = 0.1f;
			memcpy(&e[d], &acc, 4);
		}
	sdc_ec_encode(&st);

	/* Training with difference propagation; verified every 20 updates' batch. */
	struct sdc_ec_break br[4];
	int64_t verifications = 0, false_breaks = 0;
	uint32_t old[64], diff[64];
	float g[64];
	for (int step = 0; step < 300; step++) {
		for (int u = 0; u < 200; u++) {
			const int s = (int)(next() % (uint64_t)l.servers), r = (int)(next() % (uint64_t)l.rows);
			uint32_t *e = sdc_ec_entry(&st, s, r);
			memcpy(old, e, 4 * (size_t)l.words);
			for (int j = 0; j < d; j++)
				g[j] = uniform();
			sdc_ec_adagrad(e, d, g);
			for (int w = 0; w < l.words; w++)
				diff[w] = sdc_ec_diff(e[w], old[w]);
			sdc_ec_apply_diff(&st, s, r, diff);
		}
		false_breaks += sdc_ec_verify_stripes(&st, br, 4) + sdc_ec_verify_columns(&st, br, 4);
		verifications += (int64_t)l.rows * sdc_ec_chunks(&l) + l.servers;
	}
	CHECK_MSG(false_breaks == 0, "%lld broken groups on a clean run", (long long)false_breaks);
	CHECK_MSG(verifications >= 600000, "only %lld group verifications", (long long)verifications);
	/* the propagated parities are the parities of the data, computed afresh */
	memcpy(fresh.data, st.data, (size_t)l.servers * (size_t)l.rows * (size_t)l.words * 4);
	sdc_ec_encode(&fresh);
	CHECK(!memcmp(fresh.stripe, st.stripe, (size_t)l.rows * (size_t)sdc_ec_chunks(&l) * (size_t)l.words * 4));
	CHECK(!memcmp(fresh.column, st.column, (size_t)l.servers * (size_t)l.words * 4));
	/* and a clean state verifies another million groups without a break */
	for (int i = 0; i < 250; i++) {
		false_breaks += sdc_ec_verify_stripes(&st, br, 4) + sdc_ec_verify_columns(&st, br, 4);
		verifications += (int64_t)l.rows * sdc_ec_chunks(&l) + l.servers;
	}
	CHECK_MSG(false_breaks == 0 && verifications >= 1000000, "%lld breaks in %lld verifications", (long long)false_breaks,
		  (long long)verifications);

	/* One flipped bit anywhere: one stripe and one column break, located at the word and bit. */
	int missed = 0;
	for (int t = 0; t < 2000; t++) {
		const int s = (int)(next() % (uint64_t)l.servers), r = (int)(next() % (uint64_t)l.rows);
		const int w = (int)(next() % (uint64_t)l.words), bit = (int)(next() % 32);
		uint32_t *e = sdc_ec_entry(&st, s, r);
		const uint32_t was = e[w];
		e[w] ^= 1u << bit;
		struct sdc_ec_break bs, bc;
		struct sdc_ec_located at;
		const bool ok = sdc_ec_verify_stripes(&st, &bs, 1) == 1 && sdc_ec_verify_columns(&st, &bc, 1) == 1 &&
				sdc_ec_locate(&st.l, sdc_ec_entry(&st, bc.row, 0), &bs, &bc, &at) && at.server == s && at.row == r && at.word == w &&
				at.expected == was && (at.expected ^ at.actual) == 1u << bit;
		missed += !ok;
		e[w] = was;
	}
	CHECK_MSG(missed == 0, "%d of 2000 single-bit flips not located", missed);
	/* A corrupt parity word (or a difference that reached one parity corrupt): one group alone
	 * breaks, and no member is blamed. */
	sdc_ec_stripe_word(&st, 7, 1)[3] ^= 1u << 9;
	struct sdc_ec_break bs, bc;
	struct sdc_ec_located at;
	CHECK(sdc_ec_verify_stripes(&st, &bs, 1) == 1 && sdc_ec_verify_columns(&st, &bc, 1) == 0);
	CHECK(bs.row == 7 && bs.chunk == 1 && bs.word == 3);
	sdc_ec_stripe_word(&st, 7, 1)[3] ^= 1u << 9;
	sdc_ec_column_word(&st, 2)[5] += 12345;
	CHECK(sdc_ec_verify_columns(&st, &bc, 1) == 1 && sdc_ec_verify_stripes(&st, &bs, 1) == 0 && bc.row == 2);
	sdc_ec_column_word(&st, 2)[5] -= 12345;
	/* Two faults in different words: the two breaks do not meet, nothing is guessed. */
	sdc_ec_entry(&st, 0, 0)[0] ^= 1;
	sdc_ec_entry(&st, 1, 5)[2] ^= 4;
	struct sdc_ec_break two_s[2], two_c[2];
	CHECK(sdc_ec_verify_stripes(&st, two_s, 2) == 2 && sdc_ec_verify_columns(&st, two_c, 2) == 2);
	/* each stripe break meets only its own fault's column break (server 0 row 0, server 1 row 5) */
	for (int a = 0; a < 2; a++)
		for (int b = 0; b < 2; b++)
			CHECK_MSG(sdc_ec_locate(&st.l, sdc_ec_entry(&st, two_c[b].row, 0), &two_s[a], &two_c[b], &at) == (two_s[a].row == (two_c[b].row ? 5 : 0)),
				  "two faults: stripe break %d and column break %d", a, b);
	sdc_ec_entry(&st, 0, 0)[0] ^= 1;
	sdc_ec_entry(&st, 1, 5)[2] ^= 4;

	/* Rebuild: each server's entries from the stripes and the other members, bit for bit. */
	uint32_t *out = malloc((size_t)l.rows * (size_t)l.words * 4);
	CHECK(out != NULL);
	for (int s = 0; out && s < l.servers; s++) {
		memset(out, 0xa5, (size_t)l.rows * (size_t)l.words * 4);
		sdc_ec_rebuild(&st, s, out);
		CHECK_MSG(!memcmp(out, sdc_ec_entry(&st, s, 0), (size_t)l.rows * (size_t)l.words * 4),
			  "server %d not rebuilt bit for bit", s);
	}
	free(out);
	sdc_ec_state_free(&st);
	sdc_ec_state_free(&fresh);
	return check_done("test_ecparity");
}
