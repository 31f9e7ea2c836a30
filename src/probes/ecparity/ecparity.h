/* The ecparity probe's tools (its folder's own header). */
#ifndef SDC_PROBES_ECPARITY_H
#define SDC_PROBES_ECPARITY_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "kernels/crc32c.h"
#include "kernels/ecparity.h"

/* A difference on its way to a parity: to the stripe's (kind 0) or the column's (kind 1) holder.
 * The header and the difference carry a CRC32C each: the difference's, the same for both
 * messages of an update, is computed once. */
struct sdc_ec_msg {
	uint32_t seq, from, row, kind;
	uint32_t hcrc, pcrc; /* of the four words above; of the difference (as many words as an entry has) */
	uint32_t diff[SDC_EC_MAX_DIM + 1];
};

/* The two messages of one update of server `from`'s entry `row` from old to now (words each),
 * numbered seq and seq + 1: what the probe's servers send and the benchmark times. */
static inline void sdc_ec_msg_pair(struct sdc_ec_msg m[2], uint32_t seq, int from, int row, const uint32_t *now,
				   const uint32_t *old, int words)
{
	for (int kind = 0; kind < 2; kind++) {
		m[kind].seq = seq + (uint32_t)kind;
		m[kind].from = (uint32_t)from;
		m[kind].row = (uint32_t)row;
		m[kind].kind = (uint32_t)kind;
		m[kind].hcrc = sdc_crc32c(0, &m[kind], 16);
	}
	for (int x = 0; x < words; x++)
		m[0].diff[x] = sdc_ec_diff(now[x], old[x]);
	m[0].pcrc = sdc_crc32c(0, m[0].diff, 4 * (size_t)words);
	memcpy(m[1].diff, m[0].diff, 4 * (size_t)words);
	m[1].pcrc = m[0].pcrc;
}

/* What the holder checks before applying a message. */
static inline bool sdc_ec_msg_intact(const struct sdc_ec_msg *m, int words)
{
	return sdc_crc32c(0, m, 16) == m->hcrc && sdc_crc32c(0, m->diff, 4 * (size_t)words) == m->pcrc;
}

struct sdc_command;
extern const struct sdc_command sdc_ecparity_bench;

#endif
