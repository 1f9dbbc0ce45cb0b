/* SPDX-License-Identifier: BSD-3-Clause */
/* wire.c - rmpp packet serialisation and the strict parser (fuzzed). */
#include "rmpp_wire.h"

#include <string.h>
#include <sys/uio.h>

static_assert(RMPP_HDR_LEN == 40, "base header is 40 bytes");
static_assert(RMPP_MSGHDR_LEN == 24, "message sub-header is 24 bytes");
static_assert(RMPP_SACK_LEN == 8, "SACK block is 8 bytes");
static_assert(RMPP_HELLO_LEN == 8, "hello body is 8 bytes");
static_assert(RMPP_DATA_OVERHEAD == 96, "data overhead");

/* Field offsets in the base header (see rmpp_wire.h). */
enum {
	OFF_VERTYPE = 0,
	OFF_FLAGS = 1,
	OFF_PAYLOAD_LEN = 2,
	OFF_DST_EP = 4,
	OFF_SRC_EP = 6,
	OFF_SRC_EPOCH = 8,
	OFF_DST_EPOCH = 12,
	OFF_PSN = 16,
	OFF_ACK_PSN = 20,
	OFF_CREDIT = 24,
	OFF_EXT_WORDS = 26,
	OFF_SACK_N = 27,
	OFF_TSVAL = 28,
	OFF_TSECR = 32,
	OFF_CRC = 36,
};
static_assert(OFF_CRC + 4 == RMPP_HDR_LEN, "header layout");

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}
static inline uint32_t get32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}
static inline void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

const char *rmpp_pkt_type_name(unsigned type)
{
	switch (type) {
#define RMPP_PKT_NAME(name, v)                                                                   \
	case v:                                                                                  \
		return #name;
		RMPP_PKT_TYPES(RMPP_PKT_NAME)
#undef RMPP_PKT_NAME
	}
	return "?";
}

const char *rmpp_mop_name(unsigned mop)
{
	switch (mop) {
#define RMPP_MOP_NAME(name, v)                                                                   \
	case v:                                                                                  \
		return #name;
		RMPP_MOPS(RMPP_MOP_NAME)
#undef RMPP_MOP_NAME
	}
	return "?";
}

const char *rmpp_parse_err_str(int err)
{
	switch (err) {
	case 0:
		return "ok";
#define RMPP_PERR_STR(name, v, d)                                                                \
	case v:                                                                                  \
		return d;
		RMPP_PARSE_ERRORS(RMPP_PERR_STR)
#undef RMPP_PERR_STR
	}
	return "?";
}

/* Flags each packet type may carry; required flags checked separately. */
static uint8_t allowed_flags(unsigned type)
{
	switch (type) {
	case RMPP_PKT_HELLO:
	case RMPP_PKT_HELLO_ACK:
		return RMPP_F_CRC | RMPP_F_RETX;
	case RMPP_PKT_DATA:
		return RMPP_F_ACK_VALID | RMPP_F_SACK | RMPP_F_RETX | RMPP_F_ACK_REQ | RMPP_F_CRC |
		       RMPP_F_MSG | RMPP_F_DSACK;
	case RMPP_PKT_ACK:
		return RMPP_F_ACK_VALID | RMPP_F_SACK | RMPP_F_CRC | RMPP_F_MSG | RMPP_F_DSACK;
	case RMPP_PKT_PROBE:
		return RMPP_F_ACK_VALID | RMPP_F_SACK | RMPP_F_CRC | RMPP_F_DSACK | RMPP_F_ACK_REQ;
	default:
		return RMPP_F_CRC;
	}
}

static int parse_msg(const uint8_t *q, struct rmpp_pkt *pkt)
{
	struct rmpp_msghdr *m = &pkt->m;
	m->msn = get32(q);
	m->mop = q[4];
	m->mflags = q[5];
	m->ptlhdr_len = get16(q + 6);
	m->msg_len = get32(q + 8);
	m->offset = get32(q + 12);
	m->arg = get32(q + 16);
	m->handle = get32(q + 20);
	if (m->mflags != 0)
		return RMPP_PERR_RESERVED;
	if (pkt->type == RMPP_PKT_ACK) {
		if (m->mop != RMPP_MOP_RNR)
			return RMPP_PERR_MOP;
	} else if (m->mop == 0 || m->mop > RMPP_MOP_MAX || m->mop == RMPP_MOP_RNR) {
		return RMPP_PERR_MOP;
	}
	if (m->ptlhdr_len > RMPP_WIRE_MAX_PTLHDR || m->ptlhdr_len > pkt->payload_len)
		return RMPP_PERR_MSGFIELD;
	uint32_t dlen = pkt->payload_len - m->ptlhdr_len;
	switch (m->mop) {
	case RMPP_MOP_EAGER_FIRST:
	case RMPP_MOP_RTS:
		if (m->offset != 0 || dlen > m->msg_len || m->arg != 0)
			return RMPP_PERR_MSGFIELD;
		break;
	case RMPP_MOP_EAGER_CONT:
	case RMPP_MOP_RDATA:
		if (m->ptlhdr_len != 0 || dlen == 0 ||
		    (uint64_t)m->offset + dlen > (uint64_t)m->msg_len || m->offset == 0)
			return RMPP_PERR_MSGFIELD;
		break;
	case RMPP_MOP_CTS:
		if (pkt->payload_len != 0 || m->arg > m->msg_len || m->offset > m->arg)
			return RMPP_PERR_MSGFIELD;
		break;
	case RMPP_MOP_DONE:
		if (pkt->payload_len != 0 || m->arg > m->msg_len || m->offset != 0)
			return RMPP_PERR_MSGFIELD;
		break;
	default: /* NAK, RNR */
		if (pkt->payload_len != 0)
			return RMPP_PERR_MSGFIELD;
		break;
	}
	return 0;
}

int rmpp_pkt_parse(const uint8_t *buf, size_t len, unsigned opts, struct rmpp_pkt *pkt)
{
	if (len < RMPP_HDR_LEN)
		return RMPP_PERR_SHORT;
	memset(pkt, 0, sizeof(*pkt));
	pkt->version = buf[OFF_VERTYPE] >> 4;
	pkt->type = buf[OFF_VERTYPE] & 0xf;
	pkt->flags = buf[OFF_FLAGS];
	pkt->payload_len = get16(buf + OFF_PAYLOAD_LEN);
	pkt->dst_ep = get16(buf + OFF_DST_EP);
	pkt->src_ep = get16(buf + OFF_SRC_EP);
	pkt->src_epoch = get32(buf + OFF_SRC_EPOCH);
	pkt->dst_epoch = get32(buf + OFF_DST_EPOCH);
	pkt->psn = get32(buf + OFF_PSN);
	pkt->ack_psn = get32(buf + OFF_ACK_PSN);
	pkt->credit = get16(buf + OFF_CREDIT);
	pkt->ext_words = buf[OFF_EXT_WORDS];
	pkt->sack_n = buf[OFF_SACK_N];
	pkt->tsval = get32(buf + OFF_TSVAL);
	pkt->tsecr = get32(buf + OFF_TSECR);
	pkt->crc = get32(buf + OFF_CRC);

	if (pkt->version != RMPP_WIRE_VERSION)
		return RMPP_PERR_VERSION;
	if (pkt->type == 0 || pkt->type > RMPP_PKT_MAX)
		return RMPP_PERR_TYPE;
	if (pkt->flags & ~allowed_flags(pkt->type))
		return RMPP_PERR_FLAGS;
	int has_msg = !!(pkt->flags & RMPP_F_MSG);
	if (pkt->type == RMPP_PKT_DATA && !has_msg)
		return RMPP_PERR_FLAGS;
	int needs_ack = pkt->type == RMPP_PKT_DATA || pkt->type == RMPP_PKT_ACK ||
			pkt->type == RMPP_PKT_PROBE;
	if (needs_ack != !!(pkt->flags & RMPP_F_ACK_VALID))
		return RMPP_PERR_FLAGS;
	if (!(pkt->flags & RMPP_F_ACK_VALID) && pkt->ack_psn != 0)
		return RMPP_PERR_RESERVED;
	if (pkt->sack_n > RMPP_MAX_SACK)
		return RMPP_PERR_EXT;
	if (!!(pkt->flags & RMPP_F_SACK) != (pkt->sack_n > 0))
		return RMPP_PERR_FLAGS;
	if ((pkt->flags & RMPP_F_DSACK) && pkt->sack_n == 0)
		return RMPP_PERR_FLAGS;
	if (pkt->ext_words != 2 * pkt->sack_n + (has_msg ? RMPP_MSGHDR_LEN / 4 : 0))
		return RMPP_PERR_EXT;
	size_t hlen = RMPP_HDR_LEN + 4u * pkt->ext_words;
	if (hlen > len)
		return RMPP_PERR_SHORT;
	if (hlen + pkt->payload_len > len)
		return RMPP_PERR_LENGTH;
	pkt->frame_len = (uint32_t)(hlen + pkt->payload_len);
	if (pkt->src_epoch == 0)
		return RMPP_PERR_EPOCH;
	if (pkt->dst_epoch == 0 && pkt->type != RMPP_PKT_HELLO)
		return RMPP_PERR_EPOCH;

	const uint8_t *q = buf + RMPP_HDR_LEN;
	for (unsigned i = 0; i < pkt->sack_n; i++, q += RMPP_SACK_LEN) {
		pkt->sack[i].start = get32(q);
		pkt->sack[i].end = get32(q + 4);
		uint32_t span = pkt->sack[i].end - pkt->sack[i].start;
		if (span == 0 || span > RMPP_MAX_SACK_SPAN)
			return RMPP_PERR_SACK;
	}
	const uint8_t *payload = buf + hlen;
	if (pkt->type == RMPP_PKT_HELLO || pkt->type == RMPP_PKT_HELLO_ACK) {
		if (pkt->payload_len != RMPP_HELLO_LEN)
			return RMPP_PERR_HELLO;
		pkt->hello.magic = get32(payload);
		pkt->hello.mtu = get16(payload + 4);
		pkt->hello.hflags = get16(payload + 6);
		if (pkt->hello.magic != RMPP_HELLO_MAGIC || pkt->hello.mtu < 256 ||
		    (pkt->hello.hflags & ~RMPP_HELLO_F_ALL))
			return RMPP_PERR_HELLO;
	} else if (has_msg) {
		int rc = parse_msg(q, pkt);
		if (rc)
			return rc;
		pkt->ptlhdr = payload;
		pkt->data = payload + pkt->m.ptlhdr_len;
		pkt->data_len = pkt->payload_len - pkt->m.ptlhdr_len;
	} else if (pkt->payload_len != 0) {
		return RMPP_PERR_LENGTH;
	}

	if (pkt->flags & RMPP_F_CRC) {
		if (opts & RMPP_PARSE_VERIFY_CRC) {
			static const uint8_t zero[4];
			uint32_t c = rmpp_crc32c(0, buf, OFF_CRC);
			c = rmpp_crc32c(c, zero, 4);
			c = rmpp_crc32c(c, buf + RMPP_HDR_LEN, pkt->frame_len - RMPP_HDR_LEN);
			if (c != pkt->crc)
				return RMPP_PERR_CRC;
		}
	} else if (opts & RMPP_PARSE_REQUIRE_CRC) {
		return RMPP_PERR_NOCRC;
	} else if (pkt->crc != 0) {
		return RMPP_PERR_RESERVED;
	}
	return 0;
}

/* Copy len bytes at offset off of the iovec to dst; with crc non-NULL,
 * chain the CRC of those bytes onto *crc in the same pass. */
static size_t iov_gather(uint8_t *dst, const struct iovec *iov, size_t niov, uint64_t off,
                         size_t len, uint32_t *crc)
{
	size_t done = 0;
	for (size_t i = 0; i < niov && done < len; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		size_t n = iov[i].iov_len - (size_t)off;
		if (n > len - done)
			n = len - done;
		const uint8_t *src = (const uint8_t *)iov[i].iov_base + off;
		if (crc)
			*crc = rmpp_crc32c_copy(*crc, dst + done, src, n);
		else
			memcpy(dst + done, src, n);
		done += n;
		off = 0;
	}
	return done;
}

long rmpp_pkt_build(uint8_t *buf, size_t cap, struct rmpp_pkt *pkt, const struct iovec *iov,
		    size_t niov, uint64_t data_off)
{
	int has_msg = !!(pkt->flags & RMPP_F_MSG);
	int hello = pkt->type == RMPP_PKT_HELLO || pkt->type == RMPP_PKT_HELLO_ACK;
	if (pkt->sack_n > RMPP_MAX_SACK)
		return -1;
	pkt->ext_words = (uint8_t)(2 * pkt->sack_n + (has_msg ? RMPP_MSGHDR_LEN / 4 : 0));
	if (pkt->sack_n)
		pkt->flags |= RMPP_F_SACK;
	else
		pkt->flags &= (uint8_t)~(RMPP_F_SACK | RMPP_F_DSACK);
	uint32_t plen = hello ? RMPP_HELLO_LEN : 0;
	if (has_msg)
		plen = pkt->m.ptlhdr_len + pkt->data_len;
	if (plen > 0xffff)
		return -1;
	pkt->payload_len = (uint16_t)plen;
	size_t hlen = RMPP_HDR_LEN + 4u * pkt->ext_words;
	size_t flen = hlen + plen;
	if (flen > cap)
		return -1;
	buf[OFF_VERTYPE] = (uint8_t)((RMPP_WIRE_VERSION << 4) | (pkt->type & 0xf));
	buf[OFF_FLAGS] = pkt->flags;
	put16(buf + OFF_PAYLOAD_LEN, pkt->payload_len);
	put16(buf + OFF_DST_EP, pkt->dst_ep);
	put16(buf + OFF_SRC_EP, pkt->src_ep);
	put32(buf + OFF_SRC_EPOCH, pkt->src_epoch);
	put32(buf + OFF_DST_EPOCH, pkt->dst_epoch);
	put32(buf + OFF_PSN, pkt->psn);
	put32(buf + OFF_ACK_PSN, (pkt->flags & RMPP_F_ACK_VALID) ? pkt->ack_psn : 0);
	put16(buf + OFF_CREDIT, pkt->credit);
	buf[OFF_EXT_WORDS] = pkt->ext_words;
	buf[OFF_SACK_N] = pkt->sack_n;
	put32(buf + OFF_TSVAL, pkt->tsval);
	put32(buf + OFF_TSECR, pkt->tsecr);
	put32(buf + OFF_CRC, 0);
	uint8_t *q = buf + RMPP_HDR_LEN;
	for (unsigned i = 0; i < pkt->sack_n; i++, q += RMPP_SACK_LEN) {
		put32(q, pkt->sack[i].start);
		put32(q + 4, pkt->sack[i].end);
	}
	uint8_t *payload = buf + hlen;
	if (hello) {
		put32(payload, RMPP_HELLO_MAGIC);
		put16(payload + 4, pkt->hello.mtu);
		put16(payload + 6, pkt->hello.hflags);
	} else if (has_msg) {
		put32(q, pkt->m.msn);
		q[4] = pkt->m.mop;
		q[5] = pkt->m.mflags;
		put16(q + 6, pkt->m.ptlhdr_len);
		put32(q + 8, pkt->m.msg_len);
		put32(q + 12, pkt->m.offset);
		put32(q + 16, pkt->m.arg);
		put32(q + 20, pkt->m.handle);
		if (pkt->m.ptlhdr_len)
			memcpy(payload, pkt->ptlhdr, pkt->m.ptlhdr_len);
	}
	/* The CRC field is zero here; the payload is checksummed as it is
	 * copied in (one pass over the data, not two). */
	int crc_on = !!(pkt->flags & RMPP_F_CRC);
	size_t data_at = hlen + (has_msg ? pkt->m.ptlhdr_len : 0);
	uint32_t crc = crc_on ? rmpp_crc32c(0, buf, has_msg ? data_at : flen) : 0;
	if (has_msg && pkt->data_len &&
	    iov_gather(buf + data_at, iov, niov, data_off, pkt->data_len, crc_on ? &crc : NULL) !=
	        pkt->data_len)
		return -1;
	pkt->frame_len = (uint32_t)flen;
	pkt->crc = crc;
	if (crc_on)
		put32(buf + OFF_CRC, crc);
	return (long)flen;
}
