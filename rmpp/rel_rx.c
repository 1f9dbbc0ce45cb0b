/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rel_rx.c - the reliable layer's receive path: every packet of a known
 * connection enters here (rmpp_rel_rx); DATA is handed to the message layer
 * strictly in PSN order, out-of-order packets (and packets arriving while
 * the message layer is stalled) are copied into reorder slots, out-of-order
 * RDATA and EAGER_CONT are placed at once; duplicates and window overruns
 * are counted and answered with an (D)SACK.  All functions run with ep->lock held.
 */
#include "rmpp_rel.h"

#include <stdlib.h>
#include <string.h>

uint8_t rmpp_slot_placed; /* the buf of a placed slot: non-NULL, never freed */

/* ---- receive side ---------------------------------------------------------------- */

static int slot_store(struct rmpp_ep *ep, struct rmpp_conn *c, uint32_t psn, const uint8_t *frame,
                      uint32_t len)
{
	struct rmpp_rxslot *s = &c->rxring[psn & RING_MASK(ep)];
	s->buf = malloc(len);
	if (!s->buf)
		return -ENOMEM;
	memcpy(s->buf, frame, len);
	s->len = len;
	s->placed = false;
	c->nbuffered++;
	ep->rx_buffered++;
	if (ep->rx_buffered > ep->ctr.rx_buffered_peak)
		ep->ctr.rx_buffered_peak = ep->rx_buffered;
	return 0;
}

/* An out-of-order RDATA whose bytes rmpp_msg_rdata_place() put in place:
 * the slot remembers the range only. */
static void slot_mark_placed(struct rmpp_ep *ep, struct rmpp_conn *c, uint32_t psn,
                             const struct rmpp_pkt *pkt)
{
	struct rmpp_rxslot *s = &c->rxring[psn & RING_MASK(ep)];
	s->buf = &rmpp_slot_placed;
	s->len = 0;
	s->placed = true;
	s->msn = pkt->m.msn;
	s->offset = pkt->m.offset;
	s->dlen = pkt->data_len;
	ep->ctr.rx_placed++;
	c->nbuffered++;
	ep->rx_buffered++;
	if (ep->rx_buffered > ep->ctr.rx_buffered_peak)
		ep->ctr.rx_buffered_peak = ep->rx_buffered;
}

static void slot_free(struct rmpp_ep *ep, struct rmpp_conn *c, uint32_t psn)
{
	struct rmpp_rxslot *s = &c->rxring[psn & RING_MASK(ep)];
	if (!s->placed)
		free(s->buf);
	s->buf = NULL;
	s->placed = false;
	c->nbuffered--;
	ep->rx_buffered--;
}

void rmpp_rel_consume(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	uint32_t mask = RING_MASK(ep);
	while (c->rcv_cons != c->rcv_nxt && !c->rx_stalled && c->state != CONN_DEAD &&
	       c->peer_known) {
		struct rmpp_rxslot *s = &c->rxring[c->rcv_cons & mask];
		struct rmpp_pkt pkt;
		if (s->placed) {
			rmpp_msg_rdata_placed(ep, c, s->msn, s->offset, s->dlen);
			slot_free(ep, c, c->rcv_cons);
			c->rcv_cons++;
		} else if (rmpp_pkt_parse(s->buf, s->len, 0, &pkt) != 0 ||
		           rmpp_msg_rx(ep, c, &pkt) == 0) {
			slot_free(ep, c, c->rcv_cons);
			c->rcv_cons++;
		} else {
			break; /* stalled */
		}
	}
	uint16_t before = c->last_adv_credit;
	rmpp_rel_update_edge(ep, c);
	if (before == 0 && rmpp_rel_adv_credit(c) > 0) {
		c->ack_now = true; /* window update */
		rmpp_conn_want_output(ep, c);
	}
}

static void rx_data(struct rmpp_ep *ep, struct rmpp_conn *c, const struct rmpp_pkt *pkt,
                    const uint8_t *frame)
{
	uint32_t mask = RING_MASK(ep);
	uint32_t psn = pkt->psn;
	if (rmpp_seq_lt(psn, c->rcv_nxt) ||
	    (rmpp_seq_lt(psn, c->rcv_edge) && c->rxring[psn & mask].buf)) {
		ep->ctr.dup_rx++;
		c->dsack_pending = true;
		c->dsack.start = psn;
		c->dsack.end = psn + 1;
		c->ack_now = true;
		return;
	}
	if (!rmpp_seq_lt(psn, c->rcv_edge)) {
		ep->ctr.window_drops++;
		c->ack_now = true;
		return;
	}
	if (pkt->flags & RMPP_F_ACK_REQ)
		c->ack_now = true;
	if (psn == c->rcv_nxt && c->rcv_cons == c->rcv_nxt && !c->rx_stalled) {
		if (rmpp_msg_rx(ep, c, pkt) == 0) {
			c->rcv_nxt++;
			c->rcv_cons++;
		} else {
			if (slot_store(ep, c, psn, frame, pkt->frame_len) != 0)
				return;
			c->rcv_nxt++;
		}
		c->unacked++;
	} else {
		if (rmpp_msg_rdata_place(ep, c, pkt))
			slot_mark_placed(ep, c, psn, pkt);
		else if (slot_store(ep, c, psn, frame, pkt->frame_len) != 0)
			return;
		if (psn != c->rcv_nxt) {
			ep->ctr.ooo_rx++;
			c->ack_now = true;
		} else {
			c->rcv_nxt++;
		}
		c->unacked++;
	}
	bool filled = false;
	while (rmpp_seq_lt(c->rcv_nxt, c->rcv_edge) && c->rxring[c->rcv_nxt & mask].buf) {
		c->rcv_nxt++; /* a hole was filled: ack at once */
		filled = true;
	}
	if (filled)
		c->ack_now = true;
	rmpp_rel_consume(ep, c);
	if (c->unacked >= ep->cfg.ack_every)
		c->ack_now = true;
	if (!c->ack_now && c->unacked && !c->delack_at)
		rmpp_timer_arm(ep, &c->delack_at, ep->now + ep->cfg.delack_us);
}

void rmpp_rel_rx(struct rmpp_ep *ep, struct rmpp_conn *c, const struct rmpp_pkt *pkt,
                 const uint8_t *frame, size_t wire_len)
{
	if (pkt->type == RMPP_PKT_HELLO || pkt->type == RMPP_PKT_HELLO_ACK) {
		rmpp_rel_rx_hello(ep, c, pkt, wire_len);
		return;
	}
	if (pkt->src_epoch != c->peer_epoch) {
		if (pkt->type == RMPP_PKT_RESET) {
			ep->ctr.resets_rx++;
			/* only an incarnation we know can be failed; later RESETs
			 * (answers to packets already in flight) are ignored */
			if (c->peer_known) {
				rmpp_conn_fail(ep, c, RMPP_PEER_RESTARTED, pkt->src_epoch);
				rmpp_conn_want_output(ep, c);
			}
		} else if (pkt->type != RMPP_PKT_CLOSE) {
			ep->ctr.stale_drops++;
			rmpp_rel_send_reset(ep, &c->peer, pkt->src_epoch, pkt->src_ep,
			                    RMPP_PKT_RESET, pkt->dst_epoch);
		}
		return;
	}
	switch (pkt->type) {
	case RMPP_PKT_RESET:
		ep->ctr.resets_rx++;
		if (pkt->psn && pkt->psn != c->peer_epoch) {
			/* it answers a frame we sent to an earlier incarnation
			 * of the peer before we learned this one: the peer
			 * knows nothing of ours to reset (resetting here would
			 * make us re-handshake and the peer reset us in turn) */
			ep->ctr.stale_drops++;
			return;
		}
		if (c->peer_known)
			rmpp_conn_fail(ep, c, RMPP_PEER_RESET, pkt->src_epoch);
		rmpp_conn_want_output(ep, c);
		return;
	case RMPP_PKT_CLOSE:
		if (c->peer_known)
			rmpp_conn_fail(ep, c, RMPP_PEER_CLOSED, pkt->src_epoch);
		return;
	default:
		break;
	}
	if (c->state == CONN_DEAD)
		return;
	c->peer_knows_us = true;
	rmpp_rel_establish(ep, c);
	c->ts_recent = pkt->tsval;
	c->ts_recent_at = ep->now;
	/* a probe (keepalive, zero window) is out: this frame answers it */
	bool probing = c->persist_at || c->ka_at;
	c->ka_at = 0; /* the peer is alive; re-armed by the timer pass */
	rmpp_rel_process_ack(ep, c, pkt);
	RMPP_PP_MARK(ep, RMPP_PP_RX_ACKED);
	switch (pkt->type) {
	case RMPP_PKT_DATA:
		rx_data(ep, c, pkt, frame);
		break;
	case RMPP_PKT_ACK:
		ep->ctr.acks_rx++;
		if ((pkt->flags & RMPP_F_MSG) && pkt->m.mop == RMPP_MOP_RNR) {
			ep->ctr.rnr_rx++;
			c->n_timeouts = 0;
			uint64_t b = pkt->m.arg;
			if (b < c->persist_us)
				b = c->persist_us;
			if (b > ep->cfg.rto_max_us)
				b = ep->cfg.rto_max_us;
			c->persist_us = b;
			rmpp_timer_arm(ep, &c->persist_at, ep->now + b);
		} else if (probing) {
			/* the peer answers our probes: alive, whatever it owes
			 * above rmpp (ka_at was tested after it was cleared
			 * above, so a watched peer answering every keepalive
			 * was declared dead after DEAD_TIMEOUTS of them) */
			c->n_timeouts = 0;
			c->ka_us = 0;
		}
		break;
	case RMPP_PKT_PROBE:
		c->probe_rcvd = true;
		c->ack_now = true;
		break;
	default:
		break;
	}
	if (c->ack_now || c->dsack_pending)
		rmpp_conn_want_output(ep, c);
}
