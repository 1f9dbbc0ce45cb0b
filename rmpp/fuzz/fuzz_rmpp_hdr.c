/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_rmpp_hdr.c - libFuzzer target for the rmpp packet parser.
 *
 * Properties checked beyond "no crash / no out-of-bounds read":
 *   - an accepted frame never claims more bytes than it was given;
 *   - re-serialising an accepted frame reproduces it byte for byte (except
 *     the CRC field, recomputed), i.e. the encoding is canonical, and the
 *     re-serialised frame parses to the same fields with CRC verification.
 *   - the MAC trailer (rmpp_auth.h, P3_RMPP_AUTH): the input read as an
 *     authenticated frame locates its trailer inside the input, and the
 *     frame before it parses as above; sealed with a fixed key it verifies,
 *     and with one byte changed it does not; a replay window accepts a seq
 *     once only.
 * Build: fuzz/run-fuzz.sh (clang -fsanitize=fuzzer,address,undefined), or
 * link with fuzz/standalone.c to replay a corpus without libFuzzer.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "rmpp_auth.h"
#include "rmpp_wire.h"

#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t out[70000];
static uint8_t sealed[70000 + RMPP_AUTH_LEN];

static int check_frame(const uint8_t *data, size_t size);

/* The MAC trailer: located, sealed, verified, tampered with, replayed. */
static void check_trailer(const uint8_t *data, size_t size)
{
	size_t body;
	uint64_t seq;
	if (rmpp_auth_trailer(data, size, &body, &seq) == 0) {
		if (body + RMPP_AUTH_LEN != size)
			abort();
		(void)check_frame(data, body);
	} else if (size >= RMPP_AUTH_LEN) {
		abort();
	}
	/* a sealed frame verifies if it holds a whole rmpp header (the one-time
	 * key is derived from header bytes) */
	if (size < RMPP_HDR_LEN || size > sizeof(sealed) - RMPP_AUTH_LEN)
		return;
#ifdef HAVE_SODIUM
	static struct rmpp_auth a = {.on = 1, .key = {1, 2, 3, 4, 5, 6, 7, 8}, .tx_seq = 1000};
	memcpy(sealed, data, size);
	size_t n = rmpp_auth_seal(&a, sealed, size);
	if (n != size + RMPP_AUTH_LEN || rmpp_auth_verify(&a, sealed, n, &body, &seq) != 0 ||
	    body != size || seq != a.tx_seq - 1)
		abort();
	size_t at = size ? data[0] % n : n - 1;
	sealed[at] ^= 0x01;
	if (rmpp_auth_verify(&a, sealed, n, &body, &seq) == 0)
		abort();
#endif
	/* replay window over seqs taken from the input */
	struct rmpp_replay w = {0};
	for (size_t i = 0; i + 2 <= size && i < 64; i += 2) {
		uint64_t s = 100 + (uint64_t)(data[i] << 8 | data[i + 1]);
		if (rmpp_replay_check(&w, s) == 0 && rmpp_replay_check(&w, s) == 0)
			abort(); /* accepted twice */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_trailer(data, size);
	return check_frame(data, size);
}

static int check_frame(const uint8_t *data, size_t size)
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
