/*
 * CRC32C (Castagnoli, reflected polynomial 0x82F63B78), as iSCSI (RFC 3720), ext4 and NVMe use it:
 * the SSE4.2 crc32 instruction where the CPU has it, a slicing table otherwise. It guards
 * embedding rows at rest and, across nodes, every chunk a rank sends.
 */
#ifndef SDC_CRC32C_H
#define SDC_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continues crc (0 to start) over buf; crc32c("123456789") = 0xE3069283. */
uint32_t sdc_crc32c(uint32_t crc, const void *buf, size_t len);
/* The same, always on the table path (the tests compare both). */
uint32_t sdc_crc32c_portable(uint32_t crc, const void *buf, size_t len);
/* Kernels that fold a CRC32C into another pass over the data run three interleaved streams of
 * SDC_CRC32C_STREAM bytes, as sdc_crc32c does, and join them with this: the raw register (not
 * inverted) advanced over SDC_CRC32C_STREAM zero bytes. */
#define SDC_CRC32C_STREAM 4096
uint32_t sdc_crc32c_shift(uint32_t reg);
/* "sse4.2" or "portable": which one sdc_crc32c uses here. */
const char *sdc_crc32c_impl(void);

/* On a GPU: probes/allreduce/ring_hd.h (one byte at a time, pieces joined with
 * sdc_crc32c_combine) in the GPU module's crc32c entry (probes/allreduce/ring.cu); the unit test holds
 * both to this one. */

#endif
