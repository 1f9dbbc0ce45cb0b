/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdr.c - wire form of struct p3_hdr for NALs that leave the machine.
 *
 * 104 bytes, network byte order, no padding, version first:
 *
 *   off size field            off size field
 *     0   1  version (1)       40   8  match_bits
 *     1   1  type              48   8  hdr_data
 *     2   2  reserved (0)      56   8  remote_offset
 *     4   4  src.nid           64   8  rlength
 *     8   4  src.pid           72   8  mlength
 *    12   4  dst.nid           80   8  payload_len
 *    16   4  dst.pid           88   8  md_offset
 *    20   4  src_uid           96   4  flags (P3_HDR_F_FAIL in a REPLY or ACK, else 0)
 *    24   4  src_jid          100   4  reserved (0)
 *    28   4  pt_index
 *    32   4  ac_index
 *    36   4  md_handle
 *
 * p3_hdr_unpack validates every field it can without LIB state: version,
 * type, reserved bytes zero, flags only P3_HDR_F_FAIL and only in a REPLY or
 * ACK without data, payload_len consistent with the type, mlength not above
 * rlength where both are meaningful.  It is a fuzz target.
 */
#include "p3.h"

#include <assert.h>
#include <string.h>

#include "nal.h"

static_assert(P3_HDR_WIRE_LEN == 104, "wire header size");

static inline void p3_put8(uint8_t *p, uint8_t v)
{
	p[0] = v;
}
static inline void p3_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}
static inline void p3_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}
static inline void p3_put64(uint8_t *p, uint64_t v)
{
	p3_put32(p, (uint32_t)(v >> 32));
	p3_put32(p + 4, (uint32_t)v);
}
static inline uint16_t p3_get16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}
static inline uint32_t p3_get32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t p3_get64(const uint8_t *p)
{
	return ((uint64_t)p3_get32(p) << 32) | p3_get32(p + 4);
}

void p3_hdr_pack(const struct p3_hdr *h, uint8_t *w)
{
	p3_put8(w + 0, P3_HDR_WIRE_VERSION);
	p3_put8(w + 1, (uint8_t)h->type);
	p3_put16(w + 2, 0);
	p3_put32(w + 4, h->src.nid);
	p3_put32(w + 8, h->src.pid);
	p3_put32(w + 12, h->dst.nid);
	p3_put32(w + 16, h->dst.pid);
	p3_put32(w + 20, h->src_uid);
	p3_put32(w + 24, h->src_jid);
	p3_put32(w + 28, h->pt_index);
	p3_put32(w + 32, h->ac_index);
	p3_put32(w + 36, h->md_handle);
	p3_put64(w + 40, h->match_bits);
	p3_put64(w + 48, h->hdr_data);
	p3_put64(w + 56, h->remote_offset);
	p3_put64(w + 64, h->rlength);
	p3_put64(w + 72, h->mlength);
	p3_put64(w + 80, h->payload_len);
	p3_put64(w + 88, h->md_offset);
	p3_put32(w + 96, h->flags);
	p3_put32(w + 100, 0);
}

int p3_hdr_unpack(const uint8_t *w, size_t len, struct p3_hdr *h)
{
	if (!w || !h || len < P3_HDR_WIRE_LEN)
		return -1;
	if (w[0] != P3_HDR_WIRE_VERSION)
		return -1;
	if (p3_get16(w + 2) != 0 || p3_get32(w + 100) != 0)
		return -1;
	memset(h, 0, sizeof(*h));
	h->type = w[1];
	h->src.nid = p3_get32(w + 4);
	h->src.pid = p3_get32(w + 8);
	h->dst.nid = p3_get32(w + 12);
	h->dst.pid = p3_get32(w + 16);
	h->src_uid = p3_get32(w + 20);
	h->src_jid = p3_get32(w + 24);
	h->pt_index = p3_get32(w + 28);
	h->ac_index = p3_get32(w + 32);
	h->md_handle = p3_get32(w + 36);
	h->match_bits = p3_get64(w + 40);
	h->hdr_data = p3_get64(w + 48);
	h->remote_offset = p3_get64(w + 56);
	h->rlength = p3_get64(w + 64);
	h->mlength = p3_get64(w + 72);
	h->payload_len = p3_get64(w + 80);
	h->md_offset = p3_get64(w + 88);
	h->flags = p3_get32(w + 96);
	if (h->flags != 0 &&
	    (h->flags != P3_HDR_F_FAIL || (h->type != P3_MSG_REPLY && h->type != P3_MSG_ACK) ||
	     h->mlength != 0 || h->payload_len != 0))
		return -1;

	switch (h->type) {
	case P3_MSG_PUT:
	case P3_MSG_GETPUT:
		if (h->payload_len != h->rlength || h->mlength != 0)
			return -1;
		break;
	case P3_MSG_GET:
		if (h->payload_len != 0 || h->mlength != 0)
			return -1;
		break;
	case P3_MSG_ACK:
		if (h->payload_len != 0 || h->mlength > h->rlength)
			return -1;
		break;
	case P3_MSG_REPLY:
		if (h->payload_len != h->mlength || h->mlength > h->rlength)
			return -1;
		break;
	default:
		return -1;
	}
	/* Acks and replies name an MD; requests name one or PTL_MD_NONE. */
	if ((h->type == P3_MSG_ACK || h->type == P3_MSG_REPLY) && h->md_handle == PTL_MD_NONE)
		return -1;
	return 0;
}
