/* SPDX-License-Identifier: BSD-3-Clause */
/* ep_frame.c - frames between the link and the reliable layer: the
 * transmit batch (slots the layers build frames in, sealed and handed to the
 * link together) and the receive dispatch (MAC, parse, epoch, connection,
 * replay check, then rmpp_rel_rx). */
#include "rmpp_int.h"

/* ---- transmit batch ------------------------------------------------------------ */

void rmpp_ep_tx_flush(struct rmpp_ep *ep)
{
	if (!ep->ntx)
		return;
	RMPP_PP_MARK(ep, RMPP_PP_TX);
	ep->link.ops->send(&ep->link, ep->txf, (int)ep->ntx);
	for (unsigned i = 0; i < ep->ntx; i++) {
		ep->ctr.tx_pkts++;
		ep->ctr.tx_bytes += ep->txf[i].len;
	}
	ep->ntx = 0;
}

uint8_t *rmpp_ep_tx_slot(struct rmpp_ep *ep, const struct rmpp_addr *dst)
{
	if (ep->ntx == ep->cfg.batch)
		rmpp_ep_tx_flush(ep);
	struct rmpp_txframe *f = &ep->txf[ep->ntx];
	f->data = ep->txbuf + (size_t)ep->ntx * ep->txbuf_stride + RMPP_LINK_HEADROOM;
	f->dst = *dst;
	return f->data;
}

void rmpp_ep_tx_commit(struct rmpp_ep *ep, size_t len, bool direct)
{
	if (ep->auth.on) /* the slot has room: link.mtu was lowered at create */
		len = rmpp_auth_seal(&ep->auth, ep->txf[ep->ntx].data, len);
	ep->txf[ep->ntx].len = len;
	ep->txf[ep->ntx].direct = direct;
	ep->ntx++;
}

/* ---- receive dispatch ----------------------------------------------------------- */

void rmpp_ep_rx_frame(struct rmpp_ep *ep, const uint8_t *data, size_t len,
                      const struct rmpp_addr *src)
{
	struct rmpp_pkt pkt;
	uint64_t seq = 0;
	ep->ctr.rx_pkts++;
	ep->ctr.rx_bytes += len;
	if (ep->auth.on) {
		size_t body;
		if (rmpp_auth_verify(&ep->auth, data, len, &body, &seq) != 0) {
			ep->ctr.auth_drops++;
			rmpp_log(ep, RMPP_LOG_DEBUG, src, "dropped frame of %zu bytes: bad MAC",
			         len);
			return;
		}
		len = body;
	}
	int rc = rmpp_pkt_parse(data, len, RMPP_PARSE_VERIFY_CRC, &pkt);
	if (rc == 0 && ep->link.require_crc && !(pkt.flags & RMPP_F_CRC) &&
	    pkt.type != RMPP_PKT_HELLO && pkt.type != RMPP_PKT_HELLO_ACK)
		rc = RMPP_PERR_NOCRC;
	if (rc != 0) {
		if (rc == RMPP_PERR_CRC || rc == RMPP_PERR_NOCRC)
			ep->ctr.csum_drops++;
		else
			ep->ctr.malformed_drops++;
		rmpp_log(ep, RMPP_LOG_DEBUG, src, "dropped frame of %zu bytes: %s", len,
		         rmpp_parse_err_str(rc));
		return;
	}
	RMPP_PP_MARK(ep, RMPP_PP_RX_PARSED);
	if (pkt.dst_ep != ep->ep_id) {
		ep->ctr.stale_drops++;
		return;
	}
	struct rmpp_addr from = *src;
	from.ra_ep = pkt.src_ep;
	if (ep->log_level >= RMPP_LOG_TRACE)
		rmpp_log(ep, RMPP_LOG_TRACE, &from,
		         "rx %s fl %02x psn %u ack %u cr %u sack %u %s msn %u off %u",
		         rmpp_pkt_type_name(pkt.type), pkt.flags, pkt.psn, pkt.ack_psn, pkt.credit,
		         pkt.sack_n, (pkt.flags & RMPP_F_MSG) ? rmpp_mop_name(pkt.m.mop) : "-",
		         pkt.m.msn, pkt.m.offset);
	bool hello = pkt.type == RMPP_PKT_HELLO || pkt.type == RMPP_PKT_HELLO_ACK;
	if (!hello && pkt.dst_epoch != ep->epoch) {
		/* addressed to a previous incarnation of this endpoint */
		ep->ctr.stale_drops++;
		if (pkt.type != RMPP_PKT_RESET && pkt.type != RMPP_PKT_CLOSE)
			rmpp_rel_send_reset(ep, &from, pkt.src_epoch, pkt.src_ep, RMPP_PKT_RESET,
			                    pkt.dst_epoch);
		return;
	}
	struct rmpp_conn *c = rmpp_conn_find(ep, &from);
	if (!c && !hello)
		c = rmpp_conn_find_direct(ep, &from, pkt.src_epoch);
	if (!c) {
		if (pkt.type != RMPP_PKT_HELLO) {
			ep->ctr.stale_drops++;
			if (pkt.type != RMPP_PKT_RESET && pkt.type != RMPP_PKT_CLOSE)
				rmpp_rel_send_reset(ep, &from, pkt.src_epoch, pkt.src_ep,
				                    RMPP_PKT_RESET, pkt.dst_epoch);
			return;
		}
		c = rmpp_conn_create(ep, &from);
		if (!c)
			return;
	}
	if (ep->auth.on && rmpp_replay_check(&c->replay, seq) != 0) {
		ep->ctr.replay_drops++;
		rmpp_log(ep, RMPP_LOG_DEBUG, &from, "dropped replayed frame (seq %llu)",
		         (unsigned long long)seq);
		return;
	}
	RMPP_PP_MARK(ep, RMPP_PP_RX_CONN);
	rmpp_rel_rx(ep, c, &pkt, data, len);
	RMPP_PP_MARK(ep, RMPP_PP_RX_DONE);
}
