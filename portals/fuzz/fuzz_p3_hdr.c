/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_p3_hdr.c - libFuzzer target for the Portals wire header parser
 * (p3_hdr_unpack, portals/hdr.c).  Beyond "no crash, no out-of-bounds read":
 * an accepted header packs back to the same 104 bytes (the encoding is
 * canonical) and unpacks again to the same fields. */
#include "p3.h"

#include <stdlib.h>
#include <string.h>

#include "nal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct p3_hdr h, h2;
	uint8_t wire[P3_HDR_WIRE_LEN];

	if (p3_hdr_unpack(data, size, &h) != 0)
		return 0;
	p3_hdr_pack(&h, wire);
	if (memcmp(wire, data, P3_HDR_WIRE_LEN) != 0)
		abort(); /* two encodings of one header */
	if (p3_hdr_unpack(wire, sizeof(wire), &h2) != 0 || memcmp(&h, &h2, sizeof(h)) != 0)
		abort();
	return 0;
}
