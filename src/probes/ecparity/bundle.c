/* The single-host form's messages (ecparity.h: struct sdc_ec_bundle). */
#include "probes/ecparity/ecparity.h"

uint32_t sdc_ec_bundle_crc(const struct sdc_ec_bundle *b, uint32_t n, int words)
{
	/* the header's four words before the CRC, then the records (they follow the CRC word) */
	const uint32_t c = sdc_crc32c(0, b, 4 * sizeof(uint32_t));
	return sdc_crc32c(c, (const uint32_t *)b + SDC_EC_BUNDLE_HDR_WORDS,
			  4 * (sdc_ec_bundle_words((int)n, words) - SDC_EC_BUNDLE_HDR_WORDS));
}

void sdc_ec_bundle_apply(struct sdc_ec_state *st, const struct sdc_ec_bundle *b, int holder)
{
	const struct sdc_ec_layout *l = &st->l;
	const int from = (int)b->from, words = l->words;
	const bool column = holder < 0 || sdc_ec_column_parity_server(l, from) == holder;
	uint32_t *q = sdc_ec_column_word(st, from);
	for (uint32_t i = 0; i < b->n; i++) {
		const uint32_t *r = sdc_ec_bundle_record((struct sdc_ec_bundle *)b, (int)i, words);
		const int row = (int)r[0], c = sdc_ec_chunk_of(l, from, row);
		const uint32_t *diff = r + 1;
		if (holder < 0 || sdc_ec_stripe_parity_server(l, row, c) == holder) {
			uint32_t *p = sdc_ec_stripe_word(st, row, c);
			for (int w = 0; w < words; w++)
				p[w] += diff[w];
		}
		if (column)
			for (int w = 0; w < words; w++)
				q[w] += diff[w];
	}
}
