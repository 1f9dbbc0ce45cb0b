/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rmpp_wire.h - the rmpp wire format: packet header, SACK blocks, message
 * sub-header, HELLO body; serialisation and the strict parser.
 *
 * Everything is network byte order, fixed width, no bitfields on the wire.
 * Layout (offsets in bytes):
 *
 *   0  ver:4 | type:4     1  flags          2  payload_len (16)
 *   4  dst_ep (16)        6  src_ep (16)    8  src_epoch (32)
 *  12  dst_epoch (32)    16  psn (32)      20  ack_psn (32)
 *  24  credit (16)       26  ext_words (8) 27  sack_n (8)
 *  28  tsval (32)        32  tsecr (32)    36  crc32c (32)
 *  40  sack_n x { start (32), end (32) }          (flag SACK)
 *  ..  message sub-header, 24 bytes               (flag MSG)
 *        msn (32) | mop (8) | mflags (8) | ptlhdr_len (16) | msg_len (32)
 *        offset (32) | arg (32) | handle (32)
 *  40 + 4*ext_words: payload_len bytes (ptlhdr_len header bytes, then data;
 *        for HELLO/HELLO_ACK the 8-byte hello body), then link padding.
 *
 * ext_words = 2*sack_n + (MSG ? 6 : 0), exactly.
 */
#ifndef RMPP_WIRE_H
#define RMPP_WIRE_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#define RMPP_WIRE_VERSION 1
#define RMPP_HDR_LEN 40
#define RMPP_SACK_LEN 8
#define RMPP_MAX_SACK 4
#define RMPP_MSGHDR_LEN 24
/* Largest message header (ptlhdr_len) on the wire: rmpp.h's RMPP_MAX_HDR. */
#define RMPP_WIRE_MAX_PTLHDR 256
#define RMPP_HELLO_LEN 8
#define RMPP_HELLO_MAGIC 0x524d5050u /* "RMPP" */
#define RMPP_HELLO_F_CRC 0x0001u
/* The sender probes the path MTU: it pads HELLO probes and answers them. */
#define RMPP_HELLO_F_PMTU 0x0002u
/* HELLO: this frame is a probe padded to a candidate size, report its
 * length.  HELLO_ACK: mtu is the received length of such a probe. */
#define RMPP_HELLO_F_PROBE 0x0004u
#define RMPP_HELLO_F_ALL (RMPP_HELLO_F_CRC | RMPP_HELLO_F_PMTU | RMPP_HELLO_F_PROBE)
/* Worst-case overhead of a data packet (SACK room always reserved). */
#define RMPP_DATA_OVERHEAD (RMPP_HDR_LEN + RMPP_MAX_SACK * RMPP_SACK_LEN + RMPP_MSGHDR_LEN)
/* Largest SACK/DSACK block span accepted by the parser. */
#define RMPP_MAX_SACK_SPAN 65536u

/* Packet types: one list, generating the enum and the names. */
#define RMPP_PKT_TYPES(X)                                                                         \
	X(HELLO, 1)                                                                              \
	X(HELLO_ACK, 2)                                                                          \
	X(DATA, 3)                                                                               \
	X(ACK, 4)                                                                                \
	X(PROBE, 5)                                                                              \
	X(RESET, 6)                                                                              \
	X(CLOSE, 7)

enum rmpp_pkt_type {
#define RMPP_PKT_ENUM(name, v) RMPP_PKT_##name = v,
	RMPP_PKT_TYPES(RMPP_PKT_ENUM)
#undef RMPP_PKT_ENUM
	RMPP_PKT_MAX = 7
};

#define RMPP_PKT_FLAGS(X)                                                                         \
	X(ACK_VALID, 0x01)                                                                       \
	X(SACK, 0x02)                                                                            \
	X(RETX, 0x04)                                                                            \
	X(ACK_REQ, 0x08)                                                                         \
	X(CRC, 0x10)                                                                             \
	X(MSG, 0x20)                                                                             \
	X(DSACK, 0x40)                                                                           \
	X(ECE, 0x80)

enum rmpp_pkt_flag {
#define RMPP_FLAG_ENUM(name, v) RMPP_F_##name = v,
	RMPP_PKT_FLAGS(RMPP_FLAG_ENUM)
#undef RMPP_FLAG_ENUM
};

/* Message operations (mop) of the message sub-header. */
#define RMPP_MOPS(X)                                                                              \
	X(EAGER_FIRST, 1)                                                                        \
	X(EAGER_CONT, 2)                                                                         \
	X(RTS, 3)                                                                                \
	X(CTS, 4)                                                                                \
	X(RDATA, 5)                                                                              \
	X(DONE, 6)                                                                               \
	X(RNR, 7)                                                                                \
	X(NAK, 8)

enum rmpp_mop {
#define RMPP_MOP_ENUM(name, v) RMPP_MOP_##name = v,
	RMPP_MOPS(RMPP_MOP_ENUM)
#undef RMPP_MOP_ENUM
	RMPP_MOP_MAX = 8
};

/* Parser results: 0 or one of these (negative). */
#define RMPP_PARSE_ERRORS(X)                                                                      \
	X(SHORT, -1, "frame shorter than the header")                                            \
	X(VERSION, -2, "unknown version")                                                        \
	X(TYPE, -3, "unknown packet type")                                                       \
	X(FLAGS, -4, "flags inconsistent with the packet")                                      \
	X(EXT, -5, "ext_words/sack_n inconsistent")                                              \
	X(LENGTH, -6, "payload_len exceeds the frame")                                           \
	X(SACK, -7, "bad SACK block")                                                            \
	X(MOP, -8, "bad message operation for this packet type")                                 \
	X(MSGFIELD, -9, "message sub-header field out of range")                                 \
	X(HELLO, -10, "bad HELLO body")                                                          \
	X(EPOCH, -11, "zero epoch")                                                              \
	X(NOCRC, -12, "CRC32C required but absent")                                              \
	X(CRC, -13, "CRC32C mismatch")                                                           \
	X(RESERVED, -14, "reserved field not zero")

enum rmpp_parse_err {
#define RMPP_PERR_ENUM(name, v, d) RMPP_PERR_##name = v,
	RMPP_PARSE_ERRORS(RMPP_PERR_ENUM)
#undef RMPP_PERR_ENUM
};

struct rmpp_sack {
	uint32_t start; /* first PSN received */
	uint32_t end;   /* one past the last */
};

struct rmpp_msghdr {
	uint32_t msn;
	uint8_t mop;
	uint8_t mflags;
	uint16_t ptlhdr_len;
	uint32_t msg_len;
	uint32_t offset;
	uint32_t arg;
	uint32_t handle;
};

struct rmpp_hello {
	uint32_t magic;
	uint16_t mtu;
	uint16_t hflags;
};

/* A parsed (or to-be-built) packet.  Pointers point into the frame. */
struct rmpp_pkt {
	uint8_t version;
	uint8_t type;
	uint8_t flags;
	uint8_t sack_n;
	uint8_t ext_words;
	uint16_t payload_len;
	uint16_t dst_ep;
	uint16_t src_ep;
	uint16_t credit;
	uint32_t src_epoch;
	uint32_t dst_epoch;
	uint32_t psn;
	uint32_t ack_psn;
	uint32_t tsval;
	uint32_t tsecr;
	uint32_t crc;
	struct rmpp_sack sack[RMPP_MAX_SACK];
	struct rmpp_msghdr m;  /* valid with RMPP_F_MSG */
	struct rmpp_hello hello; /* valid for HELLO/HELLO_ACK */
	const uint8_t *ptlhdr; /* m.ptlhdr_len bytes */
	const uint8_t *data;   /* data_len bytes */
	uint32_t data_len;
	uint32_t frame_len; /* bytes covered by the header (padding excluded) */
};

/* Parser options. */
#define RMPP_PARSE_VERIFY_CRC 0x1  /* check CRC32C when the CRC flag is set */
#define RMPP_PARSE_REQUIRE_CRC 0x2 /* reject frames without CRC */

/*
 * Validate and decode buf[0..len).  Never reads outside the buffer.  Returns
 * 0 or an enum rmpp_parse_err.  Bytes after frame_len are padding.
 */
int rmpp_pkt_parse(const uint8_t *buf, size_t len, unsigned opts, struct rmpp_pkt *pkt);

/*
 * Serialise pkt into buf (capacity cap): header, SACK blocks (pkt->sack_n),
 * message sub-header (if RMPP_F_MSG), hello body (HELLO types), ptlhdr bytes
 * and data_len bytes gathered from the iovec at data_off (may be NULL when
 * data_len == 0).  ext_words, payload_len and the SACK flag are computed;
 * CRC32C is filled when RMPP_F_CRC is set.  Returns the frame length or -1
 * if it does not fit.
 */
struct iovec;
long rmpp_pkt_build(uint8_t *buf, size_t cap, struct rmpp_pkt *pkt, const struct iovec *iov,
		    size_t niov, uint64_t data_off);

const char *rmpp_pkt_type_name(unsigned type);
const char *rmpp_mop_name(unsigned mop);
const char *rmpp_parse_err_str(int err);

/* CRC32C (Castagnoli), reflected, init/xorout ~0: crc32c("123456789") =
 * 0xe3069283.  Hardware (SSE4.2) when the CPU has it, slicing-by-8 else. */
uint32_t rmpp_crc32c(uint32_t crc, const void *buf, size_t len);
uint32_t rmpp_crc32c_sw(uint32_t crc, const void *buf, size_t len);
int rmpp_crc32c_hw_available(void);
/* The same CRC without the fold (crc32 instruction or tables), the fold's
 * entry (falls back to the former below 256 bytes or without AVX-512
 * VPCLMULQDQ), and a copy of len bytes from src to dst that returns the CRC
 * of those bytes chained on crc (one pass).  P3_RMPP_CRC_NOFOLD=1 in the
 * environment disables the fold (comparisons, tests). */
uint32_t rmpp_crc32c_word(uint32_t crc, const void *buf, size_t len);
uint32_t rmpp_crc32c_fold(uint32_t crc, const void *buf, size_t len);
uint32_t rmpp_crc32c_copy(uint32_t crc, void *dst, const void *src, size_t len);
int rmpp_crc32c_fold_available(void);

/* PSN serial arithmetic (RFC 1982 style, 32 bits). */
static inline int rmpp_seq_lt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}
static inline int rmpp_seq_le(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) <= 0;
}
static inline uint32_t rmpp_seq_max(uint32_t a, uint32_t b)
{
	return rmpp_seq_lt(a, b) ? b : a;
}

#endif /* RMPP_WIRE_H */
