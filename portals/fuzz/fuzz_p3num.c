/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_p3num.c - libFuzzer target for the strict number parser that reads
 * the options and environment variables of every p3stack program and
 * library (include/p3num.h).  The first input byte picks the form (u64,
 * i64, double) and the flags (0x hex/octal, K/M/G sizes); the rest is the
 * value.  Properties: an accepted value lies in its range and came from a
 * string of digits, sign, suffix and base characters only; a refused one
 * leaves the output untouched and a terminated message naming the option. */
#include "p3num.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_msg(const char *msg, size_t len)
{
	if (!memchr(msg, '\0', len) || strncmp(msg, "--opt: \"", 8) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char msg[96]; /* short: long values are cut, never overrun */
	unsigned flags;
	char *s;

	if (size < 1)
		return 0;
	s = malloc(size); /* NUL-terminated copy of data[1..] */
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	flags = data[0] & (P3NUM_BASE0 | P3NUM_SIZE);
	memset(msg, 'x', sizeof(msg));
	if ((data[0] >> 2) % 3 == 0) {
		uint64_t v = 7, min = data[0] & 0x80 ? 1 : 0;
		uint64_t max = data[0] & 0x40 ? 65535 : UINT64_MAX;
		if (p3num_u64("--opt", s, min, max, flags, &v, msg, sizeof(msg)) == 0) {
			if (v < min || v > max || s[0] == '-' || s[0] == '+' ||
			    strspn(s, "0123456789xXabcdefABCDEFkKmMgGiBb") != strlen(s))
				abort();
		} else if (v != 7) {
			abort();
		} else {
			check_msg(msg, sizeof(msg));
		}
	} else if ((data[0] >> 2) % 3 == 1) {
		int64_t v = 7, min = data[0] & 0x80 ? -20 : INT64_MIN;
		int64_t max = data[0] & 0x40 ? 19 : INT64_MAX;
		if (p3num_i64("--opt", s, min, max, flags, &v, msg, sizeof(msg)) == 0) {
			if (v < min || v > max)
				abort();
		} else if (v != 7) {
			abort();
		} else {
			check_msg(msg, sizeof(msg));
		}
	} else {
		double v = 7, max = data[0] & 0x40 ? 1 : 1e300;
		if (p3num_dbl("--opt", s, 0, max, &v, msg, sizeof(msg)) == 0) {
			if (!(v >= 0 && v <= max))
				abort();
		} else if (v != 7) {
			abort();
		} else {
			check_msg(msg, sizeof(msg));
		}
	}
	free(s);
	return 0;
}
