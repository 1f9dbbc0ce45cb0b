/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rmpp_auth.h - per-job frame authentication (P3_RMPP_AUTH=on).
 *
 * Every frame of an endpoint with authentication on ends with a trailer:
 *
 *   frame (header, body, probe padding) | seq (64, big endian) | tag (16 bytes)
 *
 * tag = crypto_onetimeauth (Poly1305, libsodium) over everything before it
 * (the header with its epochs and PSNs, the body and seq) under a one-time
 * key: crypto_generichash (keyed BLAKE2b-256) under the job's 32-byte key of
 * the frame's src_ep and src_epoch (header bytes 6..11) and seq.  A sender
 * endpoint never uses a (src_ep, src_epoch, seq) twice, so no Poly1305 key
 * serves two frames; Poly1305 is 6x cheaper than HMAC-SHA-512 on 9 KB frames
 * (rmpp-auth-cost).  seq is the sender endpoint's frame counter, started from the
 * wall clock in microseconds x 1024 and incremented per frame, so that it
 * only grows, across incarnations (restarts) of the sender too.  A receiver
 * keeps, per connection, the highest seq seen and a 64-frame window below
 * it: a frame whose tag does not verify is forged (auth_drops); a verified
 * frame whose seq is at or below the window, or already seen, is replayed
 * (replay_drops).  Both are dropped before the reliable layer sees them.
 */
#ifndef RMPP_AUTH_H
#define RMPP_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define RMPP_AUTH_KEY_LEN 32
#define RMPP_AUTH_SEQ_LEN 8
#define RMPP_AUTH_TAG_LEN 16
#define RMPP_AUTH_LEN     (RMPP_AUTH_SEQ_LEN + RMPP_AUTH_TAG_LEN)
/* replayed frames older than this many frames below the newest are refused */
#define RMPP_AUTH_WINDOW 64

struct rmpp_auth {
	int on;
	uint8_t key[RMPP_AUTH_KEY_LEN];
	uint64_t tx_seq; /* next frame's seq */
};

/* The receiver's per-connection replay window. */
struct rmpp_replay {
	int valid;
	uint64_t top;  /* highest seq accepted */
	uint64_t seen; /* bit i: top - i accepted */
};

/* P3_RMPP_AUTH (on|off|1|0; default off) and P3_RMPP_AUTH_KEY (64 hex
 * digits).  0, or -1 with err filled: a bad value, on without a key, or
 * on in a build without libsodium. */
int rmpp_auth_init(struct rmpp_auth *a, char *err, size_t errlen);

/* Append the trailer to frame[0..len) (room for RMPP_AUTH_LEN more bytes
 * is the caller's); returns the new length. */
size_t rmpp_auth_seal(struct rmpp_auth *a, uint8_t *frame, size_t len);

/* Locate the trailer of a received frame: *body_len = len - RMPP_AUTH_LEN,
 * *seq decoded.  0, or -1 when the frame is too short to carry one.  Pure
 * parsing (the fuzz target drives it). */
int rmpp_auth_trailer(const uint8_t *frame, size_t len, size_t *body_len, uint64_t *seq);

/* Verify the tag of frame[0..len): 0 authentic (*body_len, *seq set), -1
 * forged or truncated. */
int rmpp_auth_verify(const struct rmpp_auth *a, const uint8_t *frame, size_t len, size_t *body_len,
                     uint64_t *seq);

/* 0: seq is fresh (and is now recorded), -1: replayed. */
int rmpp_replay_check(struct rmpp_replay *w, uint64_t seq);

#endif
