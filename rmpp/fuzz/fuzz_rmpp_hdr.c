/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_rmpp_hdr.c - libFuzzer target for the rmpp packet parser.
 *
 * Properties checked beyond "no crash / no out-of-bounds read":
 *   - an accepted frame never claims more bytes than it was given;
 *   - re-serialising an accepted frame reproduces it byte for byte (except
 *     the CRC field, recomputed), i.e. the encoding is canonical, and the
 *     re-serialised frame parses to the same fields with CRC verification.
 * Build: fuzz/run-fuzz.sh (clang -fsanitize=fuzzer,address,undefined), or
 * link with fuzz/standalone.c to replay a corpus without libFuzzer.
 */
#include "rmpp_wire.h"

#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t out[70000];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rmpp_pkt p, q;
	(void)rmpp_pkt_parse(data, size, RMPP_PARSE_VERIFY_CRC | RMPP_PARSE_REQUIRE_CRC, &p);
	if (rmpp_pkt_parse(data, size, 0, &p) != 0)
		return 0;
	if (p.frame_len > size)
		abort();
	if (p.data_len && (p.data < data || p.data + p.data_len > data + size))
		abort();
	struct rmpp_pkt b = p;
	struct iovec iov = {(void *)(uintptr_t)p.data, p.data_len};
	long len = rmpp_pkt_build(out, sizeof(out), &b, &iov, 1, 0);
	if (len != (long)p.frame_len)
		abort();
	if (memcmp(out, data, 36) != 0 || memcmp(out + 40, data + 40, (size_t)len - 40) != 0)
		abort();
	if (rmpp_pkt_parse(out, (size_t)len, RMPP_PARSE_VERIFY_CRC, &q) != 0)
		abort();
	if (q.type != p.type || q.flags != p.flags || q.psn != p.psn || q.ack_psn != p.ack_psn ||
	    q.sack_n != p.sack_n || q.m.msn != p.m.msn || q.m.mop != p.m.mop ||
	    q.data_len != p.data_len || q.payload_len != p.payload_len)
		abort();
	return 0;
}
