/*
 * The data of the allreduce probe and the checks of every hop (nccl-tests builds its data the same
 * way): rank r contributes f(i) + r g(i) at index i, with f in [-8, 8] and g in [-2, 2] small
 * integers from a hash of (i, iteration). Any set S of ranks then sums to |S| f(i) + (sum of S) g(i),
 * exact in fp32 in any order for up to 4096 ranks, and a checker predicts every partial sum in
 * O(1) from the same f and g.
 */
#ifndef SDC_RING_CHECK_H
#define SDC_RING_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* f and g of indices 0 .. n-1 in iteration it (once per iteration; every check reads them). */
void sdc_ring_terms(int64_t n, uint64_t it, int8_t *f, int8_t *g);
/* What rank r contributes: buf[i] = f[i] + r g[i]. */
void sdc_ring_values(float *buf, int64_t n, int r, const int8_t *f, const int8_t *g);
/* The sum of count ranks whose numbers add up to rsum, at index i. */
static inline float sdc_ring_expected(const int8_t *f, const int8_t *g, int64_t i, int count, int rsum)
{
	return (float)(count * f[i] + rsum * g[i]);
}
/* Counts the elements of got (n, bit patterns) that are not the sum of count ranks adding up to
 * rsum; dst = own + the expected values (a reduce-scatter step; dst may be own, not got), so a wrong
 * element does not echo through later steps. */
int64_t sdc_ring_check_add(float *dst, const float *own, const uint32_t *got, const int8_t *f, const int8_t *g,
			   int64_t n, int count, int rsum);
/* Counts the elements of got that are not that sum (a final result). */
int64_t sdc_ring_count_wrong(const float *got, const int8_t *f, const int8_t *g, int64_t n, int count, int rsum);
/* The first element of got that is not that sum (-1: none), its value into *first_got (when not
 * NULL); with repair, every wrong element is then set to its sum (an all-gather step puts right
 * what it forwards). Scalar: for after a count found some. */
int64_t sdc_ring_first_wrong(float *got, const int8_t *f, const int8_t *g, int64_t n, int count, int rsum,
			     bool repair, float *first_got);
/* sdc_ring_check_add with the CRC32C of the sums it writes folded into the pass (a reduce-scatter
 * step sends them on next, with their CRC): *crc = CRC32C of dst. */
int64_t sdc_ring_check_add_crc(float *dst, const float *own, const uint32_t *got, const int8_t *f, const int8_t *g,
			       int64_t n, int count, int rsum, uint32_t *crc);

/*
 * Whose fault a hop's damage is, from what arrived: the header (the sender's CRC32C of the chunk,
 * the step, the header's own CRC32C of those two words) and the chunk (cb bytes), of which the
 * value check found nbad wrong elements. A header that fails its own check or a chunk whose
 * CRC32C differs from the sender's: the link corrupted it. A CRC that holds on wrong values: the
 * sender computed or kept them wrong. The chunk's CRC is computed only when it can matter (nbad,
 * or a bad header); crc is what was compared, for the report.
 */
enum sdc_hop_fault { SDC_HOP_OK, SDC_HOP_LINK, SDC_HOP_SENDER };
struct sdc_hop_verdict {
	enum sdc_hop_fault fault;
	bool header_ok;
	uint32_t crc; /* the chunk's CRC32C as it arrived (the sender's when nothing was wrong) */
};
void sdc_ring_hop_verdict(const uint32_t header[3], uint32_t step, const void *chunk, size_t cb, int64_t nbad,
			  struct sdc_hop_verdict *v);
/* The same, where the chunk's CRC32C as it arrived was taken elsewhere (on a GPU, every hop). */
void sdc_ring_hop_verdict_crc(const uint32_t header[3], uint32_t step, uint32_t chunk_crc, int64_t nbad,
			      struct sdc_hop_verdict *v);
/* The header a sender puts ahead of a chunk whose CRC32C is crc. */
void sdc_ring_hop_header(uint32_t header[3], uint32_t crc, uint32_t step);

/* The hop checks on a GPU, for NCCL rings: ring_hd.h (the same terms, expected values and
 * CRC32C), run by the GPU module's ring_check entry (probes/allreduce/ring.cu). */

#endif
