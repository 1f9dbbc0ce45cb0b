/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rel.c - the reliable-packet layer's core: per-connection sequence state
 * (PSN windows, the transmit ring and the reorder slots), credits, building
 * and sending DATA, ACK and PROBE packets with the cumulative ack, credit and
 * SACK/DSACK blocks piggybacked, and the per-connection output pass.
 *
 * Only DATA packets are sequenced (consume a PSN).  The receiver hands
 * packets to the message layer strictly in PSN order (rel_rx.c); loss
 * recovery is in rel_loss.c, the handshake in rel_hello.c, the timers and
 * peer liveness in rel_timers.c (the list: rmpp_rel.h).  All functions run
 * with ep->lock held.
 */
#include "rmpp_rel.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>

static uint32_t rand32(void)
{
	uint32_t v = 0;
	while (getrandom(&v, sizeof(v), 0) != sizeof(v))
		;
	return v;
}

uint32_t rmpp_rel_conn_cap(struct rmpp_ep *ep)
{
	uint64_t share = 0;
	if (ep->cfg.rx_pool > ep->rx_buffered)
		share = (ep->cfg.rx_pool - ep->rx_buffered) / (ep->nconns ? ep->nconns : 1);
	uint64_t cap = ep->cfg.rx_min_credit + share;
	if (cap > ep->cfg.tx_window)
		cap = ep->cfg.tx_window;
	return (uint32_t)cap;
}

void rmpp_rel_update_edge(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	uint32_t e = c->rcv_cons + rmpp_rel_conn_cap(ep);
	if (rmpp_seq_lt(c->rcv_edge, e))
		c->rcv_edge = e; /* the right edge never moves left */
}

static void rel_fresh_seq(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	c->isn = ep->cfg.isn ? (uint32_t)ep->cfg.isn : rand32();
	c->snd_una = c->snd_nxt = c->isn;
	c->peer_edge_valid = false;
	c->rtt.have = false;
	c->rtt.rto_us = ep->cfg.rto_init_us;
	c->min_rtt_us = 0;
	c->n_timeouts = 0;
	c->reo_mult = 1;
	c->rack_xmit_seq = c->rack_rtt_us = 0;
	c->sack_high_valid = false;
	c->ka_at = c->ka_us = 0;
	c->rto_at = c->tlp_at = c->reo_at = c->persist_at = c->delack_at = c->hello_at = 0;
	c->tlp_out = false;
	c->echo_pending = false;
	c->credit_blocked = false;
	c->nsacked = c->nlost = 0;
	c->unacked = 0;
	c->ack_now = c->dsack_pending = false;
	c->rx_stalled = false;
	c->probe_rcvd = false;
	c->peer_known = c->peer_knows_us = false;
	c->peer_epoch = 0;
}

/* The transmit ring and the reorder slots (TX_WINDOW entries each, 88 KiB
 * per connection by default) are anonymous mappings, not heap: a page is
 * resident only once a PSN indexes into it, so a connection that carried a
 * few messages holds a page or two of each.  From the heap (calloc zeroing
 * reused memory) every connection cost its full 88 KiB of RSS: 81 KiB per
 * peer measured in a 64-rank udp all-to-all (tools/scale), 8 KiB after. */
static void *ring_alloc(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void ring_free(void *p, size_t bytes)
{
	if (p)
		munmap(p, bytes);
}

int rmpp_rel_conn_init(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	c->ring = ring_alloc(ep->cfg.tx_window * sizeof(*c->ring));
	c->rxring = ring_alloc(ep->cfg.tx_window * sizeof(*c->rxring));
	if (!c->ring || !c->rxring) {
		ring_free(c->ring, ep->cfg.tx_window * sizeof(*c->ring));
		ring_free(c->rxring, ep->cfg.tx_window * sizeof(*c->rxring));
		c->ring = NULL;
		c->rxring = NULL;
		return -ENOMEM;
	}
	c->state = CONN_HELLO;
	rmpp_rel_pmtu_reset(ep, c);
	rel_fresh_seq(ep, c);
	return 0;
}

static void rx_slots_free(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	for (uint32_t i = 0; i < ep->cfg.tx_window; i++) {
		if (c->rxring[i].buf) {
			if (!c->rxring[i].placed)
				free(c->rxring[i].buf);
			c->rxring[i].buf = NULL;
			c->rxring[i].placed = false;
			ep->rx_buffered--;
		}
	}
	c->nbuffered = 0;
}

void rmpp_rel_conn_reset(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	for (uint32_t p = c->snd_una; p != c->snd_nxt; p++) {
		struct rmpp_txent *e = &c->ring[p & RING_MASK(ep)];
		e->state = TXE_FREE;
		e->msg = NULL;
	}
	rx_slots_free(ep, c);
	rel_fresh_seq(ep, c);
	rmpp_rel_pmtu_reset(ep, c);
}

void rmpp_rel_conn_free(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	rx_slots_free(ep, c);
	ring_free(c->ring, ep->cfg.tx_window * sizeof(*c->ring));
	ring_free(c->rxring, ep->cfg.tx_window * sizeof(*c->rxring));
	c->ring = NULL;
	c->rxring = NULL;
}

/* ---- transmit ------------------------------------------------------------- */

void rmpp_rel_hdr_init(struct rmpp_ep *ep, struct rmpp_conn *c, struct rmpp_pkt *p, unsigned type)
{
	memset(p, 0, sizeof(*p));
	p->type = (uint8_t)type;
	p->src_ep = ep->ep_id;
	p->dst_ep = c->peer.ra_ep;
	p->src_epoch = ep->epoch;
	p->dst_epoch = c->peer_epoch;
	p->tsval = rmpp_rel_ts_now(ep);
	p->tsecr = rmpp_rel_echo(ep, c);
	if (ep->link.require_crc || c->peer_crc)
		p->flags |= RMPP_F_CRC;
}

/* Piggyback cumulative ack, credit and SACK/DSACK blocks. */
static void fill_ack(struct rmpp_ep *ep, struct rmpp_conn *c, struct rmpp_pkt *p)
{
	p->flags |= RMPP_F_ACK_VALID;
	p->ack_psn = c->rcv_nxt;
	p->credit = rmpp_rel_adv_credit(c);
	c->last_adv_credit = p->credit;
	unsigned n = 0;
	if (c->dsack_pending) {
		p->sack[n++] = c->dsack;
		p->flags |= RMPP_F_DSACK;
		c->dsack_pending = false;
		ep->ctr.dsack_tx++;
	}
	uint32_t inorder = c->rcv_nxt - c->rcv_cons;
	if (c->nbuffered > inorder) { /* out-of-order slots exist */
		uint32_t mask = RING_MASK(ep);
		uint32_t psn = c->rcv_nxt + 1;
		while (n < RMPP_MAX_SACK && rmpp_seq_lt(psn, c->rcv_edge)) {
			if (!c->rxring[psn & mask].buf) {
				psn++;
				continue;
			}
			uint32_t start = psn;
			while (rmpp_seq_lt(psn, c->rcv_edge) && c->rxring[psn & mask].buf &&
			       psn - start < RMPP_MAX_SACK_SPAN)
				psn++;
			p->sack[n].start = start;
			p->sack[n].end = psn;
			n++;
			ep->ctr.sack_blocks_tx++;
		}
	}
	p->sack_n = (uint8_t)n;
	c->unacked = 0;
	c->ack_now = false;
	c->delack_at = 0;
}

static void emit(struct rmpp_ep *ep, struct rmpp_conn *c, struct rmpp_pkt *p,
                 const struct iovec *iov, size_t niov, uint64_t off)
{
	uint8_t *buf = rmpp_ep_tx_slot(ep, &c->peer);
	long len = rmpp_pkt_build(buf, ep->link.mtu, p, iov, niov, off);
	if (len < 0) {
		rmpp_log(ep, RMPP_LOG_ERR, &c->peer, "cannot build %s packet",
		         rmpp_pkt_type_name(p->type));
		return;
	}
	/* the peer knows our epoch and bound address: any source will do */
	rmpp_ep_tx_commit(ep, (size_t)len, c->state == CONN_ESTABLISHED && c->peer_knows_us);
	if (ep->log_level >= RMPP_LOG_TRACE)
		rmpp_log(ep, RMPP_LOG_TRACE, &c->peer,
		         "tx %s fl %02x psn %u ack %u cr %u sack %u %s msn %u off %u",
		         rmpp_pkt_type_name(p->type), p->flags, p->psn, p->ack_psn, p->credit,
		         p->sack_n, (p->flags & RMPP_F_MSG) ? rmpp_mop_name(p->m.mop) : "-",
		         p->m.msn, p->m.offset);
}

static void transmit(struct rmpp_ep *ep, struct rmpp_conn *c, uint32_t psn, uint8_t extra)
{
	struct rmpp_txent *e = &c->ring[psn & RING_MASK(ep)];
	struct rmpp_pkt p;
	rmpp_rel_hdr_init(ep, c, &p, RMPP_PKT_DATA);
	p.flags |= RMPP_F_MSG | extra;
	if (e->retx)
		p.flags |= RMPP_F_RETX;
	p.psn = psn;
	fill_ack(ep, c, &p);
	p.m.msn = e->msn;
	p.m.mop = e->mop;
	p.m.msg_len = e->msg_len;
	p.m.offset = e->offset;
	p.m.arg = e->arg;
	p.data_len = e->len;
	const struct iovec *iov = NULL;
	size_t niov = 0;
	uint64_t off = e->offset;
	if (e->msg) {
		off += e->msg->data_off;
		if (e->mop == RMPP_MOP_EAGER_FIRST || e->mop == RMPP_MOP_RTS) {
			p.m.ptlhdr_len = e->msg->hdr_len;
			p.ptlhdr = e->msg->hdr;
		}
		iov = e->msg->iov;
		niov = e->msg->niov;
	}
	emit(ep, c, &p, iov, niov, off);
	e->tx_us = ep->now;
	e->tx_seq = ++c->tx_seq_next;
	c->last_tx_us = ep->now;
	ep->ctr.tx_payload_bytes += e->len;
}

bool rmpp_rel_can_send(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	if (c->state != CONN_ESTABLISHED || !c->peer_edge_valid)
		return false;
	if (c->snd_nxt - c->snd_una >= ep->cfg.tx_window)
		return false;
	return rmpp_seq_lt(c->snd_nxt, c->peer_edge);
}

uint32_t rmpp_rel_send_new(struct rmpp_ep *ep, struct rmpp_conn *c, const struct rmpp_txent *src)
{
	uint32_t psn = c->snd_nxt++;
	struct rmpp_txent *e = &c->ring[psn & RING_MASK(ep)];
	*e = *src;
	e->state = TXE_INFLIGHT;
	e->retx = 0;
	e->lost = false;
	if (e->msg)
		e->msg->refs++;
	transmit(ep, c, psn, 0);
	rmpp_rel_arm_timers(ep, c);
	return psn;
}

void rmpp_rel_retransmit(struct rmpp_ep *ep, struct rmpp_conn *c, uint32_t psn, uint8_t extra)
{
	struct rmpp_txent *e = &c->ring[psn & RING_MASK(ep)];
	if (e->retx < 255)
		e->retx++;
	if (e->lost) {
		e->lost = false;
		c->nlost--;
	}
	transmit(ep, c, psn, extra);
}

void rmpp_rel_send_ack(struct rmpp_ep *ep, struct rmpp_conn *c, unsigned rnr)
{
	struct rmpp_pkt p;
	rmpp_rel_hdr_init(ep, c, &p, RMPP_PKT_ACK);
	p.psn = c->snd_nxt;
	fill_ack(ep, c, &p);
	if (rnr) {
		p.flags |= RMPP_F_MSG;
		p.m.mop = RMPP_MOP_RNR;
		p.m.arg = rnr;
		ep->ctr.rnr_tx++;
	}
	emit(ep, c, &p, NULL, 0, 0);
	ep->ctr.acks_tx++;
}

void rmpp_rel_send_probe(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	struct rmpp_pkt p;
	rmpp_rel_hdr_init(ep, c, &p, RMPP_PKT_PROBE);
	p.flags |= RMPP_F_ACK_REQ;
	p.psn = c->snd_nxt;
	fill_ack(ep, c, &p);
	emit(ep, c, &p, NULL, 0, 0);
	ep->ctr.probes_tx++;
}

/* ---- output ------------------------------------------------------------------ */

void rmpp_rel_output(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	if (c->echo_pending) {
		c->echo_pending = false;
		rmpp_rel_echo_detect(ep, c);
	}
	if (c->state == CONN_ESTABLISHED) {
		rmpp_msg_output(ep, c);
		if (rmpp_msg_has_output(c) && !rmpp_rel_can_send(ep, c) &&
		    c->snd_nxt - c->snd_una < ep->cfg.tx_window) {
			if (!c->credit_blocked) {
				c->credit_blocked = true;
				ep->ctr.credit_stalls++;
			}
			if (c->snd_una == c->snd_nxt && !c->persist_at) {
				if (c->persist_us < c->rtt.rto_us)
					c->persist_us = c->rtt.rto_us;
				rmpp_timer_arm(ep, &c->persist_at, ep->now + c->persist_us);
			}
		}
	} else if (c->state == CONN_HELLO && !c->hello_at && rmpp_msg_has_output(c)) {
		rmpp_rel_hello_round(ep, c, false);
		rmpp_timer_arm(ep, &c->hello_at, ep->now + c->rtt.rto_us);
	}
	if (c->probe_rcvd) {
		c->probe_rcvd = false;
		if (c->state == CONN_ESTABLISHED && rmpp_rel_adv_credit(c) == 0) {
			unsigned b = 1000u << (c->rnr_sent < 6 ? c->rnr_sent : 6);
			c->rnr_sent++;
			rmpp_rel_send_ack(ep, c, b);
			return;
		}
		c->rnr_sent = 0;
		c->ack_now = true;
	}
	if ((c->ack_now || c->dsack_pending) && c->peer_known)
		rmpp_rel_send_ack(ep, c, 0);
}
