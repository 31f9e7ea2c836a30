/*
 * The allreduce probe's hop arithmetic written once for the CPU and the GPU (base/hd.h), so an
 * NCCL ring checks a hop on the GPU with the bits the MPI ring checks it with on the CPU:
 *   - the terms f(i), g(i) of index i in iteration it (ring_check.h: rank r contributes f + r g);
 *   - the value a set of count ranks whose numbers add up to rsum sums to at i;
 *   - CRC32C, one byte at a time (no table: the same code runs in a kernel) and the combination
 *     of two CRCs of adjacent pieces (zlib's crc32_combine, for CRC32C's polynomial), so a GPU
 *     computes pieces in parallel and joins them into the CRC the CPU computes in one pass.
 * ring_check.c's loops and crc32c.c's SSE4.2 path are the CPU's own, faster kernels: the unit test
 * holds them equal to these.
 */
#ifndef SDC_RING_HD_H
#define SDC_RING_HD_H

#include <stddef.h>
#include <stdint.h>

#include "base/hd.h"
#include "kernels/xops.h"

/* f(i) in [-8, 8] and g(i) in [-2, 2] of iteration it: a murmur-style finaliser, 32-bit only. */
SDC_HD uint32_t sdc_ring_salt(uint64_t it)
{
	return (uint32_t)(it * 0x85EBCA77u) ^ (uint32_t)(it >> 32) ^ 0x27D4EB2Fu;
}

SDC_HD void sdc_ring_term(int64_t i, uint32_t salt, int8_t *f, int8_t *g)
{
	uint32_t x = (uint32_t)i * 0x9E3779B1u ^ salt;
	x ^= x >> 15;
	x *= 0x2C1B3C6Du;
	x ^= x >> 12;
	x *= 0x297A2D39u;
	x ^= x >> 15;
	*f = (int8_t)((int)(((x & 0xFFFFu) * 17u) >> 16) - 8);
	*g = (int8_t)((int)(((x >> 16) * 5u) >> 16) - 2);
}

/* The sum of count ranks whose numbers add up to rsum, at an index with terms f, g: count f and
 * rsum g are exact in fp32 (ring_check.c says for how many ranks), so the one rounding of their sum
 * is the exact integer sum's. */
SDC_HD float sdc_ring_expect(int count, int rsum, int8_t f, int8_t g)
{
	return SDC_XADD(SDC_XMUL((float)count, (float)f), SDC_XMUL((float)rsum, (float)g));
}

#define SDC_CRC32C_POLY 0x82F63B78u /* reflected Castagnoli */

/* The raw register (not inverted) advanced over one byte. */
SDC_HD uint32_t sdc_crc32c_hd_byte(uint32_t reg, uint8_t b)
{
	reg ^= b;
	for (int k = 0; k < 8; k++)
		reg = reg >> 1 ^ (SDC_CRC32C_POLY & (0u - (reg & 1u)));
	return reg;
}

/* crc (0 to start) continued over len bytes: sdc_crc32c's value. */
SDC_HD uint32_t sdc_crc32c_hd(uint32_t crc, const uint8_t *p, size_t len)
{
	uint32_t reg = ~crc;
	for (size_t i = 0; i < len; i++)
		reg = sdc_crc32c_hd_byte(reg, p[i]);
	return ~reg;
}

/* a times b modulo the polynomial, both polynomials in the reflected bit order (zlib's multmodp). */
SDC_HD uint32_t sdc_crc32c_multmodp(uint32_t a, uint32_t b)
{
	uint32_t m = 1u << 31, p = 0;
	for (;;) {
		if (a & m) {
			p ^= b;
			if (!(a & (m - 1)))
				break;
		}
		m >>= 1;
		b = b & 1 ? b >> 1 ^ SDC_CRC32C_POLY : b >> 1;
	}
	return p;
}

/* x^(8 len) modulo the polynomial: what len zero bytes do to a register. */
SDC_HD uint32_t sdc_crc32c_x8n(uint64_t len)
{
	uint32_t p = 1u << 31;  /* x^0 */
	uint32_t sq = 1u << 23; /* x^8 */
	for (; len; len >>= 1) {
		if (len & 1)
			p = sdc_crc32c_multmodp(sq, p);
		sq = sdc_crc32c_multmodp(sq, sq);
	}
	return p;
}

/* The CRC32C of A followed by B, from A's CRC, B's CRC and B's length. */
SDC_HD uint32_t sdc_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
	return sdc_crc32c_multmodp(sdc_crc32c_x8n(len_b), crc_a) ^ crc_b;
}

/*
 * The CRC32C of a buffer in pieces, as a GPU computes it: piece s is bytes [s seg, (s + 1) seg),
 * each CRC'd on its own, then joined pairwise, level by level, until one is left. The CPU's twin
 * (tests, the fake GPU module) runs the same two functions over every index.
 */
SDC_HD void sdc_crc32c_piece(const uint8_t *p, uint64_t len, uint64_t seg, uint64_t s, uint32_t *crc, uint64_t *plen)
{
	const uint64_t start = s * seg, n = len - start < seg ? len - start : seg;
	*crc = sdc_crc32c_hd(0, p + start, (size_t)n);
	*plen = n;
}

/* Pair i of a level of n pieces: pieces 2i and 2i + 1 joined (the last one alone when n is odd). */
SDC_HD void sdc_crc32c_join(const uint32_t *crc, const uint64_t *len, int64_t n, int64_t i, uint32_t *ocrc,
			    uint64_t *olen)
{
	if (2 * i + 1 < n) {
		*ocrc = sdc_crc32c_combine(crc[2 * i], crc[2 * i + 1], len[2 * i + 1]);
		*olen = len[2 * i] + len[2 * i + 1];
	} else {
		*ocrc = crc[2 * i];
		*olen = len[2 * i];
	}
}

/*
 * One element of a reduce-scatter hop's check (ring_check.h, sdc_ring_check_add): got is the
 * received partial sum's bit pattern, which must be the sum of count ranks adding up to rsum;
 * *dst = own + that expected sum (so a wrong element does not echo). Returns 1 when got is wrong.
 */
SDC_HD int sdc_ring_check_add_one(float *dst, float own, uint32_t got, int8_t f, int8_t g, int count, int rsum)
{
	const float e = sdc_ring_expect(count, rsum, f, g);
	uint32_t u;
	memcpy(&u, &e, 4);
	if (dst)
		*dst = SDC_XADD(own, e);
	return u != got;
}

/*
 * NCCL's native collectives on the same data (the allreduce probe's nccl variant): what rank r of
 * P puts in and what every output element must be, with cn = n / P elements a chunk. 'A'
 * all-reduce: in n, out n; 'R' reduce-scatter: in n, out chunk r; 'G' all-gather: in chunk r,
 * out n (chunk q from rank q). Inputs are rank r's values f + r g at their place in the whole
 * vector, so an all-gather's output is every rank's own value at each place.
 */
SDC_HD int64_t sdc_coll_in_count(char op, int64_t n, int P)
{
	return op == 'G' ? n / P : n;
}
SDC_HD int64_t sdc_coll_out_count(char op, int64_t n, int P)
{
	return op == 'R' ? n / P : n;
}
/* Input element i of rank r: rank r's value at its place (all-gather: i + r cn). */
SDC_HD float sdc_coll_input(char op, int64_t i, int r, int P, int64_t n, uint32_t salt)
{
	const int64_t at = op == 'G' ? i + (int64_t)r * (n / P) : i;
	int8_t f, g;
	sdc_ring_term(at, salt, &f, &g);
	return (float)(f + r * g); /* |f + r g| <= 8 + 2 r: an exact integer in fp32 */
}
/* Output element i of rank r: the sum over every rank (all-reduce; reduce-scatter at i + r cn),
 * or the one rank whose chunk it lies in (all-gather). */
SDC_HD float sdc_coll_expect(char op, int64_t i, int r, int P, int64_t n, uint32_t salt)
{
	const int64_t cn = n / P, at = op == 'R' ? i + (int64_t)r * cn : i;
	int8_t f, g;
	sdc_ring_term(at, salt, &f, &g);
	if (op == 'G')
		return sdc_ring_expect(1, (int)(i / cn), f, g);
	return sdc_ring_expect(P, P * (P - 1) / 2, f, g);
}
/* nccl-tests' busbw factor (doc/PERFORMANCE.md): all-reduce 2(n-1)/n, reduce-scatter and
 * all-gather (n-1)/n, where their algbw counts the whole vector's bytes. */
SDC_HD double sdc_coll_bus_factor(char op, int P)
{
	return (op == 'A' ? 2.0 : 1.0) * (P - 1) / P;
}

/*
 * The ring all-reduce's schedule (reduce-scatter, then all-gather), the same for the MPI ring and
 * the NCCL one: at step s (0 .. P-2) of phase 0 (reduce-scatter) or 1 (all-gather), the rank at
 * ring position p sends chunk send_c to the next position and receives chunk recv_c from the
 * previous one; what it receives must be the partial sum of the count ranks at positions first ..
 * first + count - 1 (mod P).
 */
struct sdc_ring_step {
	int send_c, recv_c, first, count;
};
SDC_HD struct sdc_ring_step sdc_ring_step_at(int phase, int s, int p, int P)
{
	struct sdc_ring_step st;
	st.send_c = phase == 0 ? ((p - s) % P + P) % P : ((p + 1 - s) % P + P) % P;
	st.recv_c = phase == 0 ? ((p - s - 1) % P + P) % P : ((p - s) % P + P) % P;
	st.first = phase == 0 ? p - 1 - s : p + 1;
	st.count = phase == 0 ? s + 1 : P;
	return st;
}
/* The sum of the ranks at positions first .. first + count - 1 (mod P) of order. */
SDC_HD int sdc_ring_rank_sum(const int *order, int P, int first, int count)
{
	int s = 0;
	for (int k = 0; k < count; k++)
		s += order[((first + k) % P + P) % P];
	return s;
}

#endif
