/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_rt_envmap.c - libFuzzer target for the runtime's environment parsers
 * (portals/runtime/env.c): PTL_NIDMAP/PTL_PIDMAP maps (with and without
 * dotted IPv4 entries) and the single numbers (PTL_MY_RID, PTL_MY_JID).
 * The first input byte picks the parser; the rest is the variable's value.
 * Properties: a map is accepted only with 1..n entries and an error message
 * otherwise; the message is always terminated. */
#include "config.h"

#include "rt.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[P3_RT_ERRLEN];
	char *s;

	if (size < 1)
		return 0;
	s = malloc(size); /* NUL-terminated copy of data[1..] */
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	memset(err, 'x', sizeof(err));
	if (data[0] & 2) {
		uint32_t v;
		if (p3_rt_parse_u32("PTL_MY_RID", s, &v, err, sizeof(err)) != 0 &&
		    !memchr(err, '\0', sizeof(err)))
			abort();
	} else {
		uint32_t *map = NULL;
		unsigned int n = 0;
		int rc = p3_rt_parse_map("PTL_NIDMAP", s, data[0] & 1, &map, &n, err, sizeof(err));
		if (rc == 0 && (!map || n == 0))
			abort();
		if (rc != 0 && !memchr(err, '\0', sizeof(err)))
			abort();
		if (rc == 0)
			for (unsigned int i = 0; i < n; i++)
				(void)*(volatile uint32_t *)&map[i]; /* every entry readable */
		free(map);
	}
	free(s);
	return 0;
}
