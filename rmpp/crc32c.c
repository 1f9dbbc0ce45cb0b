/* SPDX-License-Identifier: BSD-3-Clause */
/* crc32c.c - CRC32C (Castagnoli): SSE4.2 crc32 instruction when available,
 * slicing-by-8 tables otherwise; long buffers go to the carry-less-multiply
 * fold of crc32c_fold.c when the CPU has it. */
#include "rmpp_wire.h"

#include <pthread.h>
#include <string.h>

#define CRC32C_POLY 0x82f63b78u /* reflected 0x1EDC6F41 */

static uint32_t crc_tab[8][256];
/* The hardware path runs three independent lanes of CRC_LANE bytes (the
 * crc32 instruction has a latency of 3 cycles, a throughput of 1) and joins
 * them with crc_shift: crc_shift[k][b] = the register b << 8k after CRC_LANE
 * zero bytes (a linear map, applied byte by byte). */
#define CRC_LANE 512
static uint32_t crc_shift[4][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static int crc_hw;

static void crc_init(void)
{
	for (unsigned i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ ((c & 1) ? CRC32C_POLY : 0);
		crc_tab[0][i] = c;
	}
	for (unsigned i = 0; i < 256; i++)
		for (unsigned t = 1; t < 8; t++)
			crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xff];
	for (unsigned k = 0; k < 4; k++)
		for (unsigned i = 0; i < 256; i++) {
			uint32_t c = (uint32_t)i << (8 * k);
			for (unsigned z = 0; z < CRC_LANE; z++)
				c = (c >> 8) ^ crc_tab[0][c & 0xff];
			crc_shift[k][i] = c;
		}
#if defined(__x86_64__)
	__builtin_cpu_init();
	crc_hw = __builtin_cpu_supports("sse4.2");
#endif
}

uint32_t rmpp_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	pthread_once(&crc_once, crc_init);
	crc = ~crc;
	while (len && ((uintptr_t)p & 7)) {
		crc = (crc >> 8) ^ crc_tab[0][(crc ^ *p++) & 0xff];
		len--;
	}
	while (len >= 8) {
		uint32_t lo, hi;
		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		lo = __builtin_bswap32(lo);
		hi = __builtin_bswap32(hi);
#endif
		lo ^= crc;
		crc = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
		      crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^
		      crc_tab[3][hi & 0xff] ^ crc_tab[2][(hi >> 8) & 0xff] ^
		      crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ crc_tab[0][(crc ^ *p++) & 0xff];
	return ~crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const void *buf,
							      size_t len)
{
	const uint8_t *p = buf;
	uint64_t c = ~crc;
	while (len && ((uintptr_t)p & 7)) {
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
		len--;
	}
	while (len >= 3 * CRC_LANE) {
		uint64_t a = c, b = 0, d = 0, v;
		for (size_t i = 0; i < CRC_LANE; i += 8) {
			memcpy(&v, p + i, 8);
			a = __builtin_ia32_crc32di(a, v);
			memcpy(&v, p + CRC_LANE + i, 8);
			b = __builtin_ia32_crc32di(b, v);
			memcpy(&v, p + 2 * CRC_LANE + i, 8);
			d = __builtin_ia32_crc32di(d, v);
		}
		uint32_t x = (uint32_t)a;
		x = crc_shift[0][x & 0xff] ^ crc_shift[1][(x >> 8) & 0xff] ^
		    crc_shift[2][(x >> 16) & 0xff] ^ crc_shift[3][x >> 24] ^ (uint32_t)b;
		x = crc_shift[0][x & 0xff] ^ crc_shift[1][(x >> 8) & 0xff] ^
		    crc_shift[2][(x >> 16) & 0xff] ^ crc_shift[3][x >> 24] ^ (uint32_t)d;
		c = x;
		p += 3 * CRC_LANE;
		len -= 3 * CRC_LANE;
	}
	while (len >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return ~(uint32_t)c;
}
#endif

int rmpp_crc32c_hw_available(void)
{
	pthread_once(&crc_once, crc_init);
	return crc_hw;
}

uint32_t rmpp_crc32c(uint32_t crc, const void *buf, size_t len)
{
	return rmpp_crc32c_fold(crc, buf, len);
}

uint32_t rmpp_crc32c_word(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc_once, crc_init);
#if defined(__x86_64__)
	if (crc_hw)
		return crc32c_hw(crc, buf, len);
#endif
	return rmpp_crc32c_sw(crc, buf, len);
}
