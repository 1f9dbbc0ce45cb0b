/* p3copy.h - inline copy of a small message payload (internal, not installed).
 *
 * Up to 16 bytes (MPICH's small messages, the 1-byte latency test's) are
 * copied with two overlapping loads and stores of a fixed width; longer
 * ones go through memcpy.  A call to libc's memcpy for one byte (PLT,
 * length dispatch) cost ~20 instructions at each of a small message's
 * copies: the shmem NAL's copy into its ring record, the LIB's copy of an
 * eager payload into the MD, the MPI adapter's inject stage and its copy
 * out of an eager buffer.  One helper for all of them.
 *
 * dst and src must not overlap (memcpy's rule); n == 0 copies nothing.
 */
#ifndef P3_COPY_H
#define P3_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline void p3_copy_small(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	if (__builtin_expect(n > 16, 0)) {
		memcpy(d, s, n);
	} else if (n >= 8) {
		uint64_t a, b;
		memcpy(&a, s, 8);
		memcpy(&b, s + n - 8, 8);
		memcpy(d, &a, 8);
		memcpy(d + n - 8, &b, 8);
	} else if (n >= 4) {
		uint32_t a, b;
		memcpy(&a, s, 4);
		memcpy(&b, s + n - 4, 4);
		memcpy(d, &a, 4);
		memcpy(d + n - 4, &b, 4);
	} else if (n) {
		/* 1-3 bytes: first, middle, last (the same byte when n is 1) */
		unsigned char a = s[0], m = s[n >> 1], z = s[n - 1];
		d[0] = a;
		d[n >> 1] = m;
		d[n - 1] = z;
	}
}

#endif /* P3_COPY_H */
