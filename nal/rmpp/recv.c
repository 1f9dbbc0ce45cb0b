/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * recv.c - rmpp NALs: the header upcall and recv().
 *
 * librmpp hands each message header to rnal_rx_hdr() strictly in order per
 * peer.  It unpacks the Portals header and calls p3_lib_parse(); LIB matches
 * and calls recv() (rnal_recv) before returning, which records the
 * destination in the context; the upcall answers librmpp with that iovec
 * and the accepted length (mlen), so for rendezvous messages only mlen bytes
 * cross the wire.  rx_done then finalizes the message.
 *
 * A message's header may be followed by the headers of Portals ACKs the
 * peer held and sent along (send.c, rmpp_send_carry): P3_HDR_WIRE_LEN bytes
 * each, oldest first.  They were sent before the message, so LIB sees them
 * first.  Anything but a payload-less ACK there is dropped and logged.
 */
#include "rmpp_nal.h"

#include <errno.h>
#include <string.h>

static void rx_carried_ack(struct rnal *rn, const uint8_t *wire)
{
	struct p3_hdr h;
	struct rnal_rx_ctx ctx;
	if (p3_hdr_unpack(wire, P3_HDR_WIRE_LEN, &h) != 0 || h.type != P3_MSG_ACK ||
	    h.payload_len != 0) {
		p3_lib_log(rn->rn_lib, 1, "rmpp: malformed carried ACK header, dropped");
		p3_lib_count_drop(rn->rn_lib, 0);
		return;
	}
	memset(&ctx, 0, sizeof(ctx));
	rnal_ackwait_acked(rn, &h);
	p3_lib_parse(rn->rn_lib, &h, &ctx); /* an ACK: nothing to receive */
}

int rnal_rx_hdr(void *arg, const struct rmpp_addr *src, const void *hdr, size_t hdr_len,
		uint64_t msg_len, struct rmpp_rx_accept *acc)
{
	struct rnal *rn = arg;
	struct p3_hdr h;
	struct rnal_rx_ctx ctx;
	(void)src;
	memset(acc, 0, sizeof(*acc));
	if (hdr_len > P3_HDR_WIRE_LEN && hdr_len % P3_HDR_WIRE_LEN == 0) {
		for (size_t at = P3_HDR_WIRE_LEN; at < hdr_len; at += P3_HDR_WIRE_LEN)
			rx_carried_ack(rn, (const uint8_t *)hdr + at);
		hdr_len = P3_HDR_WIRE_LEN;
	}
	rmpp_pathprof_mark(rn->rn_ep, RMPP_PP_NAL_RX_HDR);
	memset(&ctx, 0, sizeof(ctx));
	if (p3_hdr_unpack(hdr, hdr_len, &h) != 0 || h.payload_len != msg_len) {
		p3_lib_log(rn->rn_lib, 1, "rmpp: malformed Portals header (%zu bytes), dropped",
			   hdr_len);
		p3_lib_count_drop(rn->rn_lib, msg_len);
		return RMPP_RX_ACCEPT; /* accepted 0: the payload is discarded */
	}
	if (h.type == P3_MSG_ACK || h.type == P3_MSG_REPLY)
		rnal_ackwait_acked(rn, &h);
	p3_lib_parse(rn->rn_lib, &h, &ctx);
	rmpp_pathprof_mark(rn->rn_ep, RMPP_PP_NAL_MATCHED);
	if (ctx.rc_called && ctx.rc_msg) {
		acc->iov = ctx.rc_iov;
		acc->niov = ctx.rc_niov;
		acc->offset = ctx.rc_offset;
		acc->accepted = ctx.rc_mlen < msg_len ? ctx.rc_mlen : msg_len;
		acc->cookie = ctx.rc_msg;
	}
	return RMPP_RX_ACCEPT;
}

void rnal_rx_done(void *arg, void *cookie, int status, uint64_t accepted)
{
	struct rnal *rn = arg;
	(void)accepted;
	if (cookie)
		p3_lib_finalize(rn->rn_lib, cookie, p3_nal_fail_kind(status));
	rmpp_pathprof_mark(rn->rn_ep, RMPP_PP_NAL_RX_DONE);
}

int rnal_recv(void *priv, struct p3_msg *msg, void *nal_ctx, const struct iovec *iov, size_t niov,
	      uint64_t offset, uint64_t mlen, uint64_t rlen)
{
	struct rnal_rx_ctx *ctx = nal_ctx;
	(void)priv;
	if (!ctx || ctx->rc_called)
		return -EINVAL;
	ctx->rc_called = 1;
	ctx->rc_msg = msg;
	ctx->rc_iov = iov;
	ctx->rc_niov = niov;
	ctx->rc_offset = offset;
	ctx->rc_mlen = msg ? mlen : 0;
	ctx->rc_rlen = rlen;
	return 0;
}
