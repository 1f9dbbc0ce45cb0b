/* SPDX-License-Identifier: BSD-3-Clause */
/* crc32c_fold.c - CRC32C of long buffers by carry-less multiplication
 * (AVX-512 VPCLMULQDQ), optionally copying the bytes on the way.
 *
 * Why: the crc32 instruction retires 8 bytes per cycle at best, and on the
 * udp link a 9000-byte frame is checksummed once by the sender and once by
 * the receiver; with the sender's gather copy that was ~20 % of a bulk
 * stream's cost.  Folding 4 x 512 bits per step with VPCLMULQDQ runs several
 * times faster, and the sender's copy into the frame rides along
 * (rmpp_crc32c_copy): one pass over the payload instead of two.
 *
 * The mathematics, in the bit-reflected domain the CRC works in (the first
 * bit on the wire, bit 0 of byte 0, is the highest power):
 *   - a 16-byte block held in a 128-bit register is H(x) x^64 + L(x), H the
 *     low quadword (bytes 0-7), L the high one;
 *   - a carry-less product of two reflected 64-bit operands is x * A * K in
 *     the reflected 128-bit layout (the product's top bit is one place short);
 *   - so moving a block F bits further down the message (multiplying by x^F,
 *     modulo P) is clmul(H, [x^(F+63) mod P]) ^ clmul(L, [x^(F-1) mod P]):
 *     the result is congruent, degree < 96, and is xor-ed into the block that
 *     sits F bits later.
 * The remainder of the whole buffer is then one 128-bit value congruent to
 * the message; running the crc32 instruction over its 16 bytes from a zero
 * register gives the CRC (the caller's register was xor-ed into the first
 * four bytes, which is what a CRC register means).  The constants are
 * computed at start-up from the polynomial, not tabulated. */
#include "rmpp_wire.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CRC32C_POLY_NORMAL 0x11edc6f41ull /* x^32 + ... (0x1EDC6F41) */
#define FOLD_MIN           256            /* shorter buffers: the crc32 instruction */

static pthread_once_t fold_once = PTHREAD_ONCE_INIT;
static int fold_ok;
/* {low, high} quadword multipliers for a fold over 2048, 512 and 128 bits */
static uint64_t k2048[2], k512[2], k128[2];

/* x^n mod P as a reflected 64-bit clmul operand (x^d at bit 63 - d). */
static uint64_t xpow_mod_reflected(unsigned n)
{
	uint64_t r = 1;
	for (unsigned i = 0; i < n; i++) {
		r <<= 1;
		if (r >> 32)
			r ^= CRC32C_POLY_NORMAL;
	}
	uint64_t rep = 0;
	for (unsigned d = 0; d < 32; d++)
		if ((r >> d) & 1)
			rep |= 1ull << (63 - d);
	return rep;
}

static void fold_constants(uint64_t k[2], unsigned bits)
{
	k[0] = xpow_mod_reflected(bits + 63); /* multiplies H (bytes 0-7) */
	k[1] = xpow_mod_reflected(bits - 1);  /* multiplies L (bytes 8-15) */
}

static void fold_init(void)
{
	fold_constants(k2048, 2048);
	fold_constants(k512, 512);
	fold_constants(k128, 128);
#if defined(__x86_64__)
	__builtin_cpu_init();
	fold_ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
	          __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("pclmul") &&
	          __builtin_cpu_supports("sse4.2");
	if (getenv("P3_RMPP_CRC_NOFOLD")) /* for tests and comparisons */
		fold_ok = 0;
#endif
}

int rmpp_crc32c_fold_available(void)
{
	pthread_once(&fold_once, fold_init);
	return fold_ok;
}

#if defined(__x86_64__)
#include <immintrin.h>

#define FOLD_TARGET __attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.2")))

FOLD_TARGET static inline __m512i fold512(__m512i acc, __m512i k, __m512i next)
{
	__m512i lo = _mm512_clmulepi64_epi128(acc, k, 0x00);
	__m512i hi = _mm512_clmulepi64_epi128(acc, k, 0x11);
	return _mm512_ternarylogic_epi64(lo, hi, next, 0x96); /* lo ^ hi ^ next */
}

FOLD_TARGET static inline __m128i fold128(__m128i acc, __m128i k, __m128i next)
{
	__m128i lo = _mm_clmulepi64_si128(acc, k, 0x00);
	__m128i hi = _mm_clmulepi64_si128(acc, k, 0x11);
	return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

/* Load 64 bytes (and store them to dst when copying). */
FOLD_TARGET static inline __m512i load64(const uint8_t *p, uint8_t *dst)
{
	__m512i v = _mm512_loadu_si512((const void *)p);
	if (dst)
		_mm512_storeu_si512((void *)dst, v);
	return v;
}

FOLD_TARGET static inline __m128i load16(const uint8_t *p, uint8_t *dst)
{
	__m128i v = _mm_loadu_si128((const __m128i *)p);
	if (dst)
		_mm_storeu_si128((__m128i *)dst, v);
	return v;
}

/* len >= FOLD_MIN.  dst NULL: checksum only.  Always inlined into the two
 * entry points, so the copy test folds away. */
FOLD_TARGET static inline __attribute__((always_inline)) uint32_t
fold_run(uint32_t crc, uint8_t *dst, const uint8_t *p, size_t len)
{
	const __m512i kw =
	    _mm512_broadcast_i32x4(_mm_set_epi64x((long long)k2048[1], (long long)k2048[0]));
	const __m512i k1 =
	    _mm512_broadcast_i32x4(_mm_set_epi64x((long long)k512[1], (long long)k512[0]));
	const __m128i k0 = _mm_set_epi64x((long long)k128[1], (long long)k128[0]);
	__m512i a0 = load64(p, dst), a1 = load64(p + 64, dst ? dst + 64 : NULL);
	__m512i a2 = load64(p + 128, dst ? dst + 128 : NULL);
	__m512i a3 = load64(p + 192, dst ? dst + 192 : NULL);
	a0 = _mm512_xor_si512(a0, _mm512_maskz_set1_epi32(1, (int)~crc)); /* the register */
	p += 256, len -= 256;
	if (dst)
		dst += 256;
	while (len >= 256) { /* four independent chains: the multiplier's latency */
		a0 = fold512(a0, kw, load64(p, dst));
		a1 = fold512(a1, kw, load64(p + 64, dst ? dst + 64 : NULL));
		a2 = fold512(a2, kw, load64(p + 128, dst ? dst + 128 : NULL));
		a3 = fold512(a3, kw, load64(p + 192, dst ? dst + 192 : NULL));
		p += 256, len -= 256;
		if (dst)
			dst += 256;
	}
	a1 = fold512(a0, k1, a1);
	a2 = fold512(a1, k1, a2);
	a3 = fold512(a2, k1, a3);
	for (; len >= 64; p += 64, len -= 64) {
		a3 = fold512(a3, k1, load64(p, dst));
		if (dst)
			dst += 64;
	}
	__m128i x = _mm512_extracti32x4_epi32(a3, 0);
	x = fold128(x, k0, _mm512_extracti32x4_epi32(a3, 1));
	x = fold128(x, k0, _mm512_extracti32x4_epi32(a3, 2));
	x = fold128(x, k0, _mm512_extracti32x4_epi32(a3, 3));
	for (; len >= 16; p += 16, len -= 16) {
		x = fold128(x, k0, load16(p, dst));
		if (dst)
			dst += 16;
	}
	/* x is congruent to everything so far: its 16 bytes, then the tail */
	uint64_t c = 0;
	c = __builtin_ia32_crc32di(c, (uint64_t)_mm_cvtsi128_si64(x));
	c = __builtin_ia32_crc32di(c, (uint64_t)_mm_extract_epi64(x, 1));
	if (dst && len)
		memcpy(dst, p, len);
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return ~(uint32_t)c;
}

FOLD_TARGET static uint32_t fold_crc(uint32_t crc, const void *buf, size_t len)
{
	return fold_run(crc, NULL, buf, len);
}

FOLD_TARGET static uint32_t fold_crc_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
	return fold_run(crc, dst, src, len);
}
#endif

/* Short buffers (every header) go straight to the word path: no once-check. */
uint32_t rmpp_crc32c_fold(uint32_t crc, const void *buf, size_t len)
{
#if defined(__x86_64__)
	if (len >= FOLD_MIN && rmpp_crc32c_fold_available())
		return fold_crc(crc, buf, len);
#endif
	return rmpp_crc32c_word(crc, buf, len);
}

uint32_t rmpp_crc32c_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
#if defined(__x86_64__)
	if (len >= FOLD_MIN && rmpp_crc32c_fold_available())
		return fold_crc_copy(crc, dst, src, len);
#endif
	memcpy(dst, src, len);
	return rmpp_crc32c_word(crc, dst, len);
}
