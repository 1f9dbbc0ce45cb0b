/* SPDX-License-Identifier: BSD-3-Clause */
/* auth.c - per-job frame authentication and replay windows (rmpp_auth.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "rmpp_auth.h"

/* the header bytes the one-time key is derived from end at 12; a whole
 * rmpp header (rmpp_wire.h) is required anyway */
#define RMPP_HDR_MIN 40

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#ifdef HAVE_SODIUM
#include <sodium.h>
#endif

static int hex_nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int parse_key(const char *s, uint8_t key[RMPP_AUTH_KEY_LEN])
{
	if (strlen(s) != 2 * RMPP_AUTH_KEY_LEN)
		return -1;
	for (size_t i = 0; i < RMPP_AUTH_KEY_LEN; i++) {
		int hi = hex_nibble(s[2 * i]), lo = hex_nibble(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		key[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

/* Frames of a later incarnation carry larger seqs than any earlier one
 * sent: the wall clock in microseconds, times 1024 (a sender would need a
 * billion frames per second to catch up with its successor). */
static uint64_t initial_seq(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u) << 10;
}

int rmpp_auth_init(struct rmpp_auth *a, char *err, size_t errlen)
{
	memset(a, 0, sizeof(*a));
	const char *mode = getenv("P3_RMPP_AUTH");
	if (!mode || !*mode || !strcasecmp(mode, "off") || !strcmp(mode, "0"))
		return 0;
	if (strcasecmp(mode, "on") && strcmp(mode, "1")) {
		snprintf(err, errlen, "P3_RMPP_AUTH=%s: on or off", mode);
		return -1;
	}
#ifdef HAVE_SODIUM
	const char *key = getenv("P3_RMPP_AUTH_KEY");
	if (!key || parse_key(key, a->key) != 0) {
		snprintf(err, errlen,
		         "P3_RMPP_AUTH=on needs the job's key in P3_RMPP_AUTH_KEY (%d hex digits; "
		         "ptlrun hands one out)",
		         2 * RMPP_AUTH_KEY_LEN);
		return -1;
	}
	if (sodium_init() < 0) {
		snprintf(err, errlen, "P3_RMPP_AUTH=on: libsodium failed to initialise");
		return -1;
	}
	a->on = 1;
	a->tx_seq = initial_seq();
	return 0;
#else
	(void)parse_key;
	(void)initial_seq;
	snprintf(err, errlen,
	         "P3_RMPP_AUTH=on: this build has no libsodium (install libsodium-dev "
	         "and rebuild)");
	return -1;
#endif
}

static void put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get_be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

#ifdef HAVE_SODIUM
/* The frame's one-time Poly1305 key: keyed BLAKE2b of its sender's
 * endpoint id and epoch (header bytes 6..11) and its seq. */
static void frame_key(const struct rmpp_auth *a, const uint8_t *frame, const uint8_t *seq_be,
                      uint8_t otk[crypto_onetimeauth_KEYBYTES])
{
	uint8_t in[6 + RMPP_AUTH_SEQ_LEN];
	memcpy(in, frame + 6, 6);
	memcpy(in + 6, seq_be, RMPP_AUTH_SEQ_LEN);
	crypto_generichash(otk, crypto_onetimeauth_KEYBYTES, in, sizeof(in), a->key,
	                   RMPP_AUTH_KEY_LEN);
}
#endif

size_t rmpp_auth_seal(struct rmpp_auth *a, uint8_t *frame, size_t len)
{
	put_be64(frame + len, a->tx_seq++);
#ifdef HAVE_SODIUM
	uint8_t otk[crypto_onetimeauth_KEYBYTES];
	frame_key(a, frame, frame + len, otk);
	crypto_onetimeauth(frame + len + RMPP_AUTH_SEQ_LEN, frame, len + RMPP_AUTH_SEQ_LEN, otk);
	sodium_memzero(otk, sizeof(otk));
#endif
	return len + RMPP_AUTH_LEN;
}

int rmpp_auth_trailer(const uint8_t *frame, size_t len, size_t *body_len, uint64_t *seq)
{
	if (len < RMPP_AUTH_LEN)
		return -1;
	*body_len = len - RMPP_AUTH_LEN;
	*seq = get_be64(frame + *body_len);
	return 0;
}

int rmpp_auth_verify(const struct rmpp_auth *a, const uint8_t *frame, size_t len, size_t *body_len,
                     uint64_t *seq)
{
	/* the one-time key is derived from header bytes: a whole header first */
	if (len < RMPP_HDR_MIN + RMPP_AUTH_LEN || rmpp_auth_trailer(frame, len, body_len, seq) != 0)
		return -1;
#ifdef HAVE_SODIUM
	uint8_t otk[crypto_onetimeauth_KEYBYTES];
	frame_key(a, frame, frame + *body_len, otk);
	int ok = crypto_onetimeauth_verify(frame + *body_len + RMPP_AUTH_SEQ_LEN, frame,
	                                   *body_len + RMPP_AUTH_SEQ_LEN, otk) == 0;
	sodium_memzero(otk, sizeof(otk));
	return ok ? 0 : -1;
#else
	(void)a;
	return -1;
#endif
}

int rmpp_replay_check(struct rmpp_replay *w, uint64_t seq)
{
	if (!w->valid) {
		w->valid = 1;
		w->top = seq;
		w->seen = 1;
		return 0;
	}
	if (seq > w->top) {
		uint64_t shift = seq - w->top;
		w->seen = shift >= 64 ? 0 : w->seen << shift;
		w->seen |= 1;
		w->top = seq;
		return 0;
	}
	uint64_t back = w->top - seq;
	if (back >= RMPP_AUTH_WINDOW || (w->seen >> back) & 1)
		return -1;
	w->seen |= 1ull << back;
	return 0;
}
