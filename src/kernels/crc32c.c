/* CRC32C, with the SSE4.2 instruction where the CPU has it (kernels/crc32c.h). */
#include "kernels/crc32c.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>


/* Slicing-by-8 tables, built once from the polynomial. */
static uint32_t table[8][256];

static void build_table(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xFF];
}

static pthread_once_t table_once = PTHREAD_ONCE_INIT;

uint32_t sdc_crc32c_portable(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&table_once, build_table);
	const uint8_t *p = buf;
	crc = ~crc;
	while (len >= 8) {
		uint32_t lo, hi;
		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
		lo ^= crc; /* little-endian: the first byte is the low byte */
		crc = table[7][lo & 0xFF] ^ table[6][(lo >> 8) & 0xFF] ^ table[5][(lo >> 16) & 0xFF] ^
		      table[4][lo >> 24] ^ table[3][hi & 0xFF] ^ table[2][(hi >> 8) & 0xFF] ^
		      table[1][(hi >> 16) & 0xFF] ^ table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xFF];
	return ~crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/*
 * Long buffers run as three interleaved streams: the crc32 instruction takes 3 cycles but starts
 * one a cycle, so three independent registers go three times as fast (Intel's "Fast CRC
 * Computation for iSCSI Polynomial Using CRC32 Instruction", 2011). The register is linear in its
 * input, so for three blocks D0 D1 D2 of STREAM bytes each:
 *   reg(r, D0 D1 D2) = shift(shift(reg(r, D0)) ^ reg(0, D1)) ^ reg(0, D2),
 * where shift(x) = reg(x, STREAM zero bytes), a linear map of x's 32 bits, tabulated per byte.
 */
#define STREAM SDC_CRC32C_STREAM
static uint32_t shift_table[4][256];

static void build_shift(void)
{
	pthread_once(&table_once, build_table);
	uint32_t basis[32];
	for (int j = 0; j < 32; j++) {
		uint32_t c = 1u << j;
		for (int k = 0; k < STREAM; k++)
			c = (c >> 8) ^ table[0][c & 0xFF];
		basis[j] = c;
	}
	for (int t = 0; t < 4; t++)
		for (int b = 0; b < 256; b++) {
			uint32_t v = 0;
			for (int bit = 0; bit < 8; bit++)
				if (b >> bit & 1)
					v ^= basis[8 * t + bit];
			shift_table[t][b] = v;
		}
}

static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

static inline uint32_t shift(uint32_t x)
{
	return shift_table[0][x & 0xFF] ^ shift_table[1][(x >> 8) & 0xFF] ^ shift_table[2][(x >> 16) & 0xFF] ^
	       shift_table[3][x >> 24];
}

uint32_t sdc_crc32c_shift(uint32_t reg)
{
	pthread_once(&shift_once, build_shift);
	return shift(reg);
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t c = ~crc;
	if (len >= 3 * STREAM) {
		pthread_once(&shift_once, build_shift);
		while (len >= 3 * STREAM) {
			uint64_t c0 = c, c1 = 0, c2 = 0;
			for (int k = 0; k < STREAM; k += 8) {
				uint64_t v0, v1, v2;
				memcpy(&v0, p + k, 8);
				memcpy(&v1, p + STREAM + k, 8);
				memcpy(&v2, p + 2 * STREAM + k, 8);
				c0 = _mm_crc32_u64(c0, v0);
				c1 = _mm_crc32_u64(c1, v1);
				c2 = _mm_crc32_u64(c2, v2);
			}
			c = shift(shift((uint32_t)c0) ^ (uint32_t)c1) ^ (uint32_t)c2;
			p += 3 * STREAM;
			len -= 3 * STREAM;
		}
	}
	while (len >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = _mm_crc32_u64(c, v);
		p += 8;
		len -= 8;
	}
	uint32_t c32 = (uint32_t)c;
	while (len--)
		c32 = _mm_crc32_u8(c32, *p++);
	return ~c32;
}

static bool have_sse42(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("sse4.2");
}
#else
static bool have_sse42(void)
{
	return false;
}
#define crc32c_sse42 sdc_crc32c_portable

/* Without the instruction no kernel runs streams, but the map is the same: the register advanced
 * over the zero bytes one at a time. */
uint32_t sdc_crc32c_shift(uint32_t reg)
{
	pthread_once(&table_once, build_table);
	for (int k = 0; k < SDC_CRC32C_STREAM; k++)
		reg = (reg >> 8) ^ table[0][reg & 0xFF];
	return reg;
}
#endif

uint32_t sdc_crc32c(uint32_t crc, const void *buf, size_t len)
{
	static _Atomic int hw = -1; /* every thread that races here stores the same answer */
	int h = atomic_load_explicit(&hw, memory_order_relaxed);
	if (h < 0) {
		h = have_sse42();
		atomic_store_explicit(&hw, h, memory_order_relaxed);
	}
	return h ? crc32c_sse42(crc, buf, len) : sdc_crc32c_portable(crc, buf, len);
}

const char *sdc_crc32c_impl(void)
{
	return have_sse42() ? "sse4.2" : "portable";
}
