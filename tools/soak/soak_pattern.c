/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak_pattern.c - the content of every byte p3soak moves, derived from
 * (seed, source, incarnation, sequence, offset), and the GetPut records.
 * A receiver recomputes the stream from the header data alone; a byte that
 * differs is a corrupted delivery.
 */
#include "soak.h"

#include <string.h>

/* splitmix64 finalizer: every input bit reaches every output bit */
uint64_t soak_mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

uint64_t soak_key(uint64_t seed, unsigned src, unsigned inc, uint64_t seq, enum soak_op op)
{
	return soak_mix(soak_mix(seed ^ ((uint64_t)src << 48) ^ ((uint64_t)inc << 32) ^
	                         ((uint64_t)op << 60)) ^
	                seq);
}

uint64_t soak_get_key(uint64_t seed, unsigned rank)
{
	return soak_mix(seed * 31 + 0x6e7e000000ull + rank);
}

/* bytes come in words of 8: word w of stream key is soak_mix(key + w) */
unsigned char soak_byte(uint64_t key, uint64_t off)
{
	return (unsigned char)(soak_mix(key + (off >> 3)) >> (8 * (off & 7)));
}

void soak_fill(unsigned char *buf, size_t len, uint64_t key, uint64_t off)
{
	size_t i = 0;
	while (i < len && ((off + i) & 7))
		buf[i] = soak_byte(key, off + i), i++;
	for (; i + 8 <= len; i += 8) {
		uint64_t w = soak_mix(key + ((off + i) >> 3));
		for (int b = 0; b < 8; b++)
			buf[i + (size_t)b] = (unsigned char)(w >> (8 * b));
	}
	for (; i < len; i++)
		buf[i] = soak_byte(key, off + i);
}

long soak_check(const unsigned char *buf, size_t len, uint64_t key, uint64_t off)
{
	size_t i = 0;
	for (; i < len && ((off + i) & 7); i++)
		if (buf[i] != soak_byte(key, off + i))
			return (long)i;
	for (; i + 8 <= len; i += 8) {
		uint64_t w = soak_mix(key + ((off + i) >> 3));
		for (int b = 0; b < 8; b++)
			if (buf[i + (size_t)b] != (unsigned char)(w >> (8 * b)))
				return (long)(i + (size_t)b);
	}
	for (; i < len; i++)
		if (buf[i] != soak_byte(key, off + i))
			return (long)i;
	return -1;
}

uint64_t soak_hdr(unsigned src, unsigned inc, uint64_t seq)
{
	return ((uint64_t)(src & 0xffff) << 48) | ((uint64_t)(inc & 0xffff) << 32) |
	       (seq & 0xffffffffu);
}

void soak_hdr_split(uint64_t h, unsigned *src, unsigned *inc, uint64_t *seq)
{
	*src = (unsigned)(h >> 48);
	*inc = (unsigned)(h >> 32) & 0xffff;
	*seq = h & 0xffffffffu;
}

#define REC_MAGIC 0x53574150u /* "SWAP" */

static void put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
}
static uint32_t get32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

/* header: magic, src, inc, seq, len, check word (of the five), then data */
void soak_rec_fill(unsigned char *buf, size_t len, uint64_t seed, unsigned src, unsigned inc,
                   uint64_t seq)
{
	uint32_t f[5] = {REC_MAGIC, src, inc, (uint32_t)seq, (uint32_t)len};
	memset(buf, 0, SOAK_REC_HDR);
	for (int i = 0; i < 5; i++)
		put32(buf + 4 * i, f[i]);
	put32(buf + 20, (uint32_t)soak_mix(((uint64_t)f[1] << 32 | f[2]) ^ ((uint64_t)f[3] << 20) ^ f[4]));
	soak_fill(buf + SOAK_REC_HDR, len - SOAK_REC_HDR, soak_key(seed, src, inc, seq, SOAK_GETPUT),
	          0);
}

int soak_rec_parse(const unsigned char *buf, size_t len, uint64_t seed, unsigned *src,
                   unsigned *inc, uint64_t *seq)
{
	size_t i;
	for (i = 0; i < len && buf[i] == 0; i++)
		;
	if (i == len)
		return 0;
	if (len < SOAK_REC_HDR || get32(buf) != REC_MAGIC)
		return -1;
	uint32_t s = get32(buf + 4), n = get32(buf + 8), q = get32(buf + 12), l = get32(buf + 16);
	if (get32(buf + 20) != (uint32_t)soak_mix(((uint64_t)s << 32 | n) ^ ((uint64_t)q << 20) ^ l))
		return -1;
	if (l < SOAK_REC_HDR)
		return -1;
	size_t upto = l < len ? l : len; /* beyond the record: older leftovers */
	if (soak_check(buf + SOAK_REC_HDR, upto - SOAK_REC_HDR, soak_key(seed, s, n, q, SOAK_GETPUT),
	               0) >= 0)
		return -1;
	*src = s;
	*inc = n;
	*seq = q;
	return 1;
}
