/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rel.c - the reliable-packet layer: connections and epochs, PSN windows,
 * cumulative + selective acknowledgement, RTT/RTO, RACK fast retransmit,
 * tail-loss probes, credits, persist probes and RNR.
 *
 * Only DATA packets are sequenced (consume a PSN).  The receiver hands
 * packets to the message layer strictly in PSN order; out-of-order packets
 * (and packets arriving while the message layer is stalled) are copied into
 * reorder slots.  All functions run with ep->lock held.
 */
#include "rmpp_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>

#define RING_MASK(ep) ((uint32_t)(ep)->cfg.tx_window - 1)

static uint32_t rand32(void)
{
	uint32_t v = 0;
	while (getrandom(&v, sizeof(v), 0) != sizeof(v))
		;
	return v;
}

static uint32_t ts_now(struct rmpp_ep *ep)
{
	uint32_t t = (uint32_t)ep->now;
	return t ? t : 1;
}

/* The RTO the estimate gives (RFC 6298: srtt + max(4 rttvar, G)), without
 * the backoff that expiries add to rto_us. */
static uint64_t rtt_base_rto(const struct rmpp_rtt *r, uint64_t g_us, uint64_t min_us,
                             uint64_t max_us)
{
	uint64_t k = 4 * r->rttvar_us;
	uint64_t rto = r->srtt_us + (k > g_us ? k : g_us);
	if (rto < min_us)
		rto = min_us;
	return rto > max_us ? max_us : rto;
}

void rmpp_rtt_sample(struct rmpp_rtt *r, uint64_t m, uint64_t g_us, uint64_t min_us,
		     uint64_t max_us)
{
	if (!r->have) {
		r->srtt_us = m;
		r->rttvar_us = m / 2;
		r->have = true;
	} else {
		uint64_t d = r->srtt_us > m ? r->srtt_us - m : m - r->srtt_us;
		r->rttvar_us = (3 * r->rttvar_us + d) / 4;
		r->srtt_us = (7 * r->srtt_us + m) / 8;
	}
	r->rto_us = rtt_base_rto(r, g_us, min_us, max_us);
}

static uint32_t conn_cap(struct rmpp_ep *ep)
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
	uint32_t e = c->rcv_cons + conn_cap(ep);
	if (rmpp_seq_lt(c->rcv_edge, e))
		c->rcv_edge = e; /* the right edge never moves left */
}

static uint16_t adv_credit(struct rmpp_conn *c)
{
	uint32_t cr = c->rcv_edge - c->rcv_nxt;
	if ((int32_t)cr < 0)
		cr = 0;
	return cr > 0xffff ? 0xffff : (uint16_t)cr;
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

/* Path-MTU probing restarts with every connection incarnation: the frame
 * size is unconfirmed until the peer reports one of our HELLO probes. */
static void pmtu_reset(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	c->mtu = (uint32_t)ep->link.mtu;
	c->probe_mtu = c->mtu;
	c->probe_tries = 0;
	c->path_ok = false;
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
	pmtu_reset(ep, c);
	rel_fresh_seq(ep, c);
	return 0;
}

uint8_t rmpp_slot_placed; /* the buf of a placed slot: non-NULL, never freed */

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
	pmtu_reset(ep, c);
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

static void hdr_init(struct rmpp_ep *ep, struct rmpp_conn *c, struct rmpp_pkt *p, unsigned type)
{
	memset(p, 0, sizeof(*p));
	p->type = (uint8_t)type;
	p->src_ep = ep->ep_id;
	p->dst_ep = c->peer.ra_ep;
	p->src_epoch = ep->epoch;
	p->dst_epoch = c->peer_epoch;
	p->tsval = ts_now(ep);
	p->tsecr = c->ts_recent;
	if (ep->link.require_crc || c->peer_crc)
		p->flags |= RMPP_F_CRC;
}

/* Piggyback cumulative ack, credit and SACK/DSACK blocks. */
static void fill_ack(struct rmpp_ep *ep, struct rmpp_conn *c, struct rmpp_pkt *p)
{
	p->flags |= RMPP_F_ACK_VALID;
	p->ack_psn = c->rcv_nxt;
	p->credit = adv_credit(c);
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
			 p->sack_n,
			 (p->flags & RMPP_F_MSG) ? rmpp_mop_name(p->m.mop) : "-", p->m.msn,
			 p->m.offset);
}

static void transmit(struct rmpp_ep *ep, struct rmpp_conn *c, uint32_t psn, uint8_t extra)
{
	struct rmpp_txent *e = &c->ring[psn & RING_MASK(ep)];
	struct rmpp_pkt p;
	hdr_init(ep, c, &p, RMPP_PKT_DATA);
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

static uint64_t pto_us(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	if (!c->rtt.have)
		return c->rtt.rto_us / 2;
	uint64_t p = 2 * c->rtt.srtt_us + ep->cfg.delack_us;
	return p < c->rtt.rto_us ? p : c->rtt.rto_us;
}

static void arm_timers(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	if (c->snd_una == c->snd_nxt) {
		c->rto_at = c->tlp_at = c->reo_at = 0;
		return;
	}
	if (!c->rto_at)
		rmpp_timer_arm(ep, &c->rto_at, ep->now + c->rtt.rto_us);
	if (!c->tlp_out && !c->tlp_at)
		rmpp_timer_arm(ep, &c->tlp_at, ep->now + pto_us(ep, c));
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
	arm_timers(ep, c);
	return psn;
}

static void retransmit(struct rmpp_ep *ep, struct rmpp_conn *c, uint32_t psn, uint8_t extra)
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
	hdr_init(ep, c, &p, RMPP_PKT_ACK);
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

static void send_probe(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	struct rmpp_pkt p;
	hdr_init(ep, c, &p, RMPP_PKT_PROBE);
	p.flags |= RMPP_F_ACK_REQ;
	p.psn = c->snd_nxt;
	fill_ack(ep, c, &p);
	emit(ep, c, &p, NULL, 0, 0);
	ep->ctr.probes_tx++;
}

/* ---- handshake and path-MTU probing -------------------------------------------
 *
 * A HELLO is padded to the probe size (PROBE flag); the peer answers with a
 * HELLO_ACK whose mtu is the length it received (PROBE flag), which becomes
 * our frame size (path_ok).  Data waits until then.  If a probe stays
 * unanswered we cannot tell a black hole from a peer that is not up yet, so
 * every retry also carries a plain, small HELLO: once the peer answers those
 * (peer_known) but still not the probe, PMTU_TRIES more rounds lower the
 * probe to the next rung of the ladder.
 */
#define PMTU_TRIES 2
static const uint32_t pmtu_ladder[] = {1500, 1280, 576}; /* frame bytes, descending */

static uint32_t pmtu_next(uint32_t cur)
{
	for (size_t i = 0; i < sizeof(pmtu_ladder) / sizeof(pmtu_ladder[0]); i++)
		if (pmtu_ladder[i] < cur)
			return pmtu_ladder[i];
	return cur; /* the floor: keep probing until the peer is declared dead */
}

static uint32_t clamp_mtu(uint32_t v)
{
	return v < RMPP_MIN_MTU ? RMPP_MIN_MTU : v;
}

/* HELLO or HELLO_ACK carrying mtu and hflags; padded with zeros to pad_to
 * bytes (link padding: not covered by payload_len or the CRC). */
static void hello_emit(struct rmpp_ep *ep, struct rmpp_conn *c, unsigned type, uint32_t mtu,
		       uint16_t hflags, uint32_t pad_to)
{
	struct rmpp_pkt p;
	hdr_init(ep, c, &p, type);
	p.flags &= (uint8_t)~RMPP_F_CRC;
	if (ep->link.require_crc)
		p.flags |= RMPP_F_CRC;
	p.psn = c->isn;
	rmpp_rel_update_edge(ep, c);
	p.credit = (uint16_t)(conn_cap(ep) > 0xffff ? 0xffff : conn_cap(ep));
	p.hello.mtu = (uint16_t)(mtu > 0xffff ? 0xffff : mtu);
	p.hello.hflags = hflags | RMPP_HELLO_F_PMTU | (ep->link.require_crc ? RMPP_HELLO_F_CRC : 0);
	uint8_t *buf = rmpp_ep_tx_slot(ep, &c->peer);
	long len = rmpp_pkt_build(buf, ep->link.mtu, &p, NULL, 0, 0);
	if (len < 0) {
		rmpp_log(ep, RMPP_LOG_ERR, &c->peer, "cannot build %s", rmpp_pkt_type_name(type));
		return;
	}
	if (pad_to > ep->link.mtu)
		pad_to = (uint32_t)ep->link.mtu;
	if ((size_t)len < pad_to) {
		memset(buf + len, 0, pad_to - (size_t)len);
		len = pad_to;
	}
	rmpp_ep_tx_commit(ep, (size_t)len, false); /* HELLOs tell the peer our address */
	ep->ctr.hello_tx++;
	rmpp_log(ep, RMPP_LOG_TRACE, &c->peer, "tx %s psn %u mtu %u hflags %#x frame %ld",
		 rmpp_pkt_type_name(type), p.psn, p.hello.mtu, p.hello.hflags, len);
}

/* Our offer is what we can receive: the link MTU. */
static void send_hello_probe(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	uint32_t size = c->probe_mtu < c->mtu ? c->probe_mtu : c->mtu;
	hello_emit(ep, c, RMPP_PKT_HELLO, (uint32_t)ep->link.mtu, RMPP_HELLO_F_PROBE, size);
}

/* One handshake round: the probe, plus a plain HELLO on retries (see above). */
static void hello_round(struct rmpp_ep *ep, struct rmpp_conn *c, bool retry)
{
	if (retry && !c->path_ok)
		hello_emit(ep, c, RMPP_PKT_HELLO, (uint32_t)ep->link.mtu, 0, 0);
	send_hello_probe(ep, c);
}

/* A retry is due: lower the probe once the peer has answered plain HELLOs
 * for PMTU_TRIES rounds but never the probe. */
static void pmtu_retry(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	if (c->path_ok || !c->peer_known || ++c->probe_tries < PMTU_TRIES)
		return;
	uint32_t cur = c->probe_mtu < c->mtu ? c->probe_mtu : c->mtu;
	uint32_t next = pmtu_next(cur);
	c->probe_tries = 0;
	if (next == cur)
		return;
	c->probe_mtu = next;
	ep->ctr.mtu_fallbacks++;
	rmpp_log(ep, RMPP_LOG_INFO, &c->peer, "path MTU: no answer to %u-byte probes, trying %u",
		 cur, next);
}

/* Answer a HELLO: report the probe's received length, or our plain offer. */
static void send_hello_ack(struct rmpp_ep *ep, struct rmpp_conn *c, const struct rmpp_pkt *pkt,
			   size_t wire_len)
{
	uint32_t mtu = (uint32_t)ep->link.mtu;
	uint16_t fl = 0;
	if (pkt->hello.hflags & RMPP_HELLO_F_PROBE) {
		if (wire_len < mtu)
			mtu = clamp_mtu((uint32_t)wire_len);
		fl = RMPP_HELLO_F_PROBE;
	}
	hello_emit(ep, c, RMPP_PKT_HELLO_ACK, mtu, fl, 0);
}

void rmpp_rel_send_reset(struct rmpp_ep *ep, const struct rmpp_addr *to, uint32_t dst_epoch,
			 uint16_t dst_ep, unsigned type, uint32_t refused)
{
	struct rmpp_pkt p;
	memset(&p, 0, sizeof(p));
	p.type = (uint8_t)type;
	p.src_ep = ep->ep_id;
	p.dst_ep = dst_ep;
	p.src_epoch = ep->epoch;
	p.dst_epoch = dst_epoch;
	p.psn = refused;
	p.tsval = ts_now(ep);
	if (ep->link.require_crc)
		p.flags |= RMPP_F_CRC;
	uint8_t *buf = rmpp_ep_tx_slot(ep, to);
	long len = rmpp_pkt_build(buf, ep->link.mtu, &p, NULL, 0, 0);
	if (len > 0)
		rmpp_ep_tx_commit(ep, (size_t)len, false);
	if (type == RMPP_PKT_RESET)
		ep->ctr.resets_tx++;
}

/* ---- acknowledgement processing (sender side) ------------------------------ */

static void rack_update(struct rmpp_ep *ep, struct rmpp_conn *c, struct rmpp_txent *e,
			uint32_t tsecr)
{
	uint64_t rtt = ep->now - e->tx_us;
	/* An ack for the original of a retransmitted packet says nothing about
	 * the retransmission: the echoed timestamp predates it, or the RTT is
	 * implausibly small. */
	if (e->retx && ((tsecr && rmpp_seq_lt(tsecr, (uint32_t)e->tx_us)) ||
			(c->min_rtt_us && rtt < c->min_rtt_us)))
		return;
	if (e->tx_seq > c->rack_xmit_seq) {
		c->rack_xmit_seq = e->tx_seq;
		c->rack_rtt_us = rtt;
	}
}

static uint64_t reo_wnd(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	uint64_t w = c->min_rtt_us / 4;
	if (w < ep->cfg.reo_min_us)
		w = ep->cfg.reo_min_us;
	w *= c->reo_mult;
	if (w > ep->cfg.rto_min_us)
		w = ep->cfg.rto_min_us;
	return w;
}

/* RACK: a packet sent before the most recently delivered one is lost once
 * it is older than RTT + reordering window. */
static void rack_detect(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	uint32_t mask = RING_MASK(ep);
	uint64_t reo = reo_wnd(ep, c);
	c->reo_at = 0;
	/* Only below the highest delivered PSN: a packet above it has no
	 * evidence of loss, whatever its transmission order (the SACK blocks
	 * may not have covered everything the peer holds). */
	uint32_t end =
	    c->sack_high_valid && rmpp_seq_lt(c->sack_high, c->snd_nxt) ? c->sack_high : c->snd_nxt;
	for (uint32_t psn = c->snd_una; rmpp_seq_lt(psn, end); psn++) {
		struct rmpp_txent *e = &c->ring[psn & mask];
		if (e->state != TXE_INFLIGHT || e->tx_seq >= c->rack_xmit_seq)
			continue;
		uint64_t deadline = e->tx_us + c->rack_rtt_us + reo;
		if (ep->now >= deadline) {
			ep->ctr.retx_fast++;
			retransmit(ep, c, psn, 0);
		} else if (!c->reo_at || deadline < c->reo_at) {
			rmpp_timer_arm(ep, &c->reo_at, deadline);
		}
	}
}

static void process_ack(struct rmpp_ep *ep, struct rmpp_conn *c, const struct rmpp_pkt *pkt)
{
	uint32_t mask = RING_MASK(ep);
	uint32_t ack = pkt->ack_psn;
	bool progressed = false, sacked = false;
	if (rmpp_seq_lt(c->snd_nxt, ack) || rmpp_seq_lt(ack, c->snd_una - ep->cfg.tx_window))
		return; /* acks something never sent: ignore the ack part */
	while (rmpp_seq_lt(c->snd_una, ack)) {
		struct rmpp_txent *e = &c->ring[c->snd_una & mask];
		if (e->state == TXE_INFLIGHT)
			rack_update(ep, c, e, pkt->tsecr);
		else if (e->state == TXE_SACKED)
			c->nsacked--;
		if (e->lost)
			c->nlost--;
		e->state = TXE_FREE;
		e->lost = false;
		rmpp_msg_entry_done(ep, c, e);
		e->msg = NULL;
		c->snd_una++;
		progressed = true;
	}
	for (unsigned i = 0; i < pkt->sack_n; i++) {
		if (i == 0 && (pkt->flags & RMPP_F_DSACK)) {
			ep->ctr.dsack_rx++;
			if (c->reo_mult < 16)
				c->reo_mult++;
			continue;
		}
		ep->ctr.sack_blocks_rx++;
		uint32_t s = pkt->sack[i].start, end = pkt->sack[i].end;
		if (rmpp_seq_lt(s, c->snd_una))
			s = c->snd_una;
		if (rmpp_seq_lt(c->snd_nxt, end))
			end = c->snd_nxt;
		if (rmpp_seq_lt(s, end) &&
		    (!c->sack_high_valid || rmpp_seq_lt(c->sack_high, end))) {
			c->sack_high = end;
			c->sack_high_valid = true;
		}
		for (uint32_t psn = s; rmpp_seq_lt(psn, end); psn++) {
			struct rmpp_txent *e = &c->ring[psn & mask];
			if (e->state != TXE_INFLIGHT)
				continue;
			rack_update(ep, c, e, pkt->tsecr);
			e->state = TXE_SACKED;
			if (e->lost) {
				e->lost = false;
				c->nlost--;
			}
			c->nsacked++;
			sacked = true;
		}
	}
	uint32_t edge = ack + pkt->credit;
	if (!c->peer_edge_valid || rmpp_seq_lt(c->peer_edge, edge)) {
		c->peer_edge = edge;
		c->peer_edge_valid = true;
	}
	if (pkt->tsecr && (progressed || sacked)) {
		uint32_t sample = ts_now(ep) - pkt->tsecr;
		if (sample < 10000000u) {
			rmpp_rtt_sample(&c->rtt, sample, ep->cfg.delack_us, ep->cfg.rto_min_us,
					ep->cfg.rto_max_us);
			if (!c->min_rtt_us || sample < c->min_rtt_us)
				c->min_rtt_us = sample ? sample : 1;
		}
	}
	if (progressed) {
		c->n_timeouts = 0;
		c->tlp_out = false;
		c->rto_at = 0;
		c->tlp_at = 0;
		arm_timers(ep, c);
	}
	if (c->nsacked)
		rack_detect(ep, c);
	if (rmpp_seq_lt(c->snd_nxt, c->peer_edge)) {
		c->persist_at = 0;
		c->credit_blocked = false;
	}
	if (progressed || sacked || rmpp_msg_has_output(c))
		rmpp_conn_want_output(ep, c);
	if (c->snd_una != c->snd_nxt && !c->echo_pending) {
		c->echo_pending = true; /* judged once the batch is in: echo_detect */
		rmpp_conn_want_output(ep, c);
	}
}

/* Echo loss.  The peer keeps sending us frames, yet none acknowledges our
 * oldest packet in flight although it left a whole (un-backed-off) RTO ago:
 * the peer is alive and that packet, or its last retransmission, is lost.
 * Resend it now and restart the backoff.  Why: the RTO doubles on every
 * expiry to RTO_MAX (1 s), which paces retransmissions to a peer that may be
 * dead; when a burst at the receiver (rmpp.md §4.2: 1..22 frames in a row)
 * swallows the first retransmissions too, the backoff alone made the repair
 * of one lost frame take seconds (tests/wire/faults.sh `burst`, CI: 2108 ms,
 * the initiator's keepalive probes arriving all the while).  A talking peer
 * is not a dead one: its frames pace the resends instead.  Judged after a
 * receive batch (a later frame of the batch may carry the ack) and at most
 * ECHO_RETX_MAX times per packet, so a packet the path cannot carry (a
 * shrunk path MTU) ends with RTO backoff and the dead-peer verdict as before;
 * the RTO expiries still count toward DEAD_TIMEOUTS, unchanged. */
#define ECHO_RETX_MAX 32

static void echo_detect(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	if (c->state != CONN_ESTABLISHED || c->snd_una == c->snd_nxt || !c->rtt.have)
		return;
	struct rmpp_txent *e = &c->ring[c->snd_una & RING_MASK(ep)];
	if (e->state != TXE_INFLIGHT || e->retx >= ECHO_RETX_MAX)
		return;
	uint64_t base =
	    rtt_base_rto(&c->rtt, ep->cfg.delack_us, ep->cfg.rto_min_us, ep->cfg.rto_max_us);
	if (ep->now - e->tx_us < base)
		return;
	ep->ctr.retx_echo++;
	retransmit(ep, c, c->snd_una, RMPP_F_ACK_REQ);
	c->rtt.rto_us = base;
	c->rto_at = 0;
	rmpp_timer_arm(ep, &c->rto_at, ep->now + base);
}

/* ---- receive side ---------------------------------------------------------------- */

static int slot_store(struct rmpp_ep *ep, struct rmpp_conn *c, uint32_t psn,
		      const uint8_t *frame, uint32_t len)
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
	if (before == 0 && adv_credit(c) > 0) {
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

/* ---- connection / epoch handling -------------------------------------------------- */

void rmpp_conn_fail(struct rmpp_ep *ep, struct rmpp_conn *c, enum rmpp_peer_event ev,
		    uint32_t new_epoch)
{
	int status = ev == RMPP_PEER_DEAD ? -ETIMEDOUT : -ECONNRESET;
	rmpp_log(ep, ev == RMPP_PEER_DEAD ? RMPP_LOG_WARN : RMPP_LOG_INFO, &c->peer,
		 "peer %s (epoch %08x -> %08x)", rmpp_peer_event_name(ev), c->peer_epoch,
		 new_epoch);
	rmpp_rel_conn_reset(ep, c); /* drops ring references first */
	rmpp_msg_fail_all(ep, c, status);
	c->watch = 0; /* the watchers learn it from the peer_event upcall */
	c->state = ev == RMPP_PEER_DEAD ? CONN_DEAD : CONN_HELLO;
	c->rx_msn = 0;
	c->tx_msn = 0;
	if (ev == RMPP_PEER_DEAD)
		ep->ctr.peers_dead++;
	else if (ev == RMPP_PEER_RESTARTED)
		ep->ctr.peers_restarted++;
	if (ep->cb.peer_event && !ep->destroying) {
		struct rmpp_addr peer = c->peer;
		ep->upcalls++;
		ep->cb.peer_event(ep->cb.arg, &peer, ev, new_epoch);
	}
}

static void learn_peer(struct rmpp_ep *ep, struct rmpp_conn *c, const struct rmpp_pkt *pkt)
{
	c->peer_epoch = pkt->src_epoch;
	c->peer_isn = pkt->psn;
	c->peer_known = true;
	c->rcv_nxt = c->rcv_cons = pkt->psn;
	c->rcv_edge = c->rcv_nxt;
	rmpp_rel_update_edge(ep, c);
	c->peer_edge = c->snd_una + pkt->credit;
	c->peer_edge_valid = true;
	c->peer_crc = !!(pkt->hello.hflags & RMPP_HELLO_F_CRC);
}

static void establish(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	if (c->state == CONN_HELLO && c->peer_known && c->peer_knows_us && c->path_ok) {
		c->state = CONN_ESTABLISHED;
		c->hello_at = 0;
		c->n_timeouts = 0;
		c->ack_now = true; /* tells the peer we know it */
		rmpp_conn_want_output(ep, c);
	}
}

/* Frame size from a HELLO/HELLO_ACK: the peer's offer only ever lowers it;
 * a probe report confirms it. */
static void hello_mtu(struct rmpp_ep *ep, struct rmpp_conn *c, const struct rmpp_pkt *pkt)
{
	uint32_t offer = clamp_mtu(pkt->hello.mtu);
	if (offer < c->mtu)
		c->mtu = offer;
	if (pkt->type == RMPP_PKT_HELLO_ACK && (pkt->hello.hflags & RMPP_HELLO_F_PROBE) &&
	    !c->path_ok) {
		c->path_ok = true;
		rmpp_log(ep, RMPP_LOG_INFO, &c->peer, "path MTU %u confirmed", c->mtu);
	}
	/* a peer that does not probe has nothing to confirm */
	if (!(pkt->hello.hflags & RMPP_HELLO_F_PMTU))
		c->path_ok = true;
}

static void rx_hello(struct rmpp_ep *ep, struct rmpp_conn *c, const struct rmpp_pkt *pkt,
		     size_t wire_len)
{
	if (pkt->type == RMPP_PKT_HELLO_ACK && pkt->dst_epoch != ep->epoch) {
		ep->ctr.stale_drops++;
		return;
	}
	if (c->state == CONN_DEAD) {
		rmpp_rel_conn_reset(ep, c);
		c->state = CONN_HELLO;
	}
	if (c->peer_known && c->peer_epoch != pkt->src_epoch)
		rmpp_conn_fail(ep, c, RMPP_PEER_RESTARTED, pkt->src_epoch);
	else if (c->state == CONN_ESTABLISHED && pkt->type == RMPP_PKT_HELLO && !pkt->dst_epoch &&
		 c->peer_isn != pkt->psn)
		/* same incarnation, but it no longer knows us and offers
		 * another ISN: the peer dropped the connection we share (a
		 * RESET or CLOSE it took) and starts afresh; keeping our
		 * sequence state would strand both directions */
		rmpp_conn_fail(ep, c, RMPP_PEER_RESET, pkt->src_epoch);
	if (!c->peer_known)
		learn_peer(ep, c, pkt);
	hello_mtu(ep, c, pkt);
	if (pkt->dst_epoch == ep->epoch)
		c->peer_knows_us = true;
	if (pkt->type == RMPP_PKT_HELLO) {
		send_hello_ack(ep, c, pkt, wire_len);
		/* the responder probes its own direction right away */
		if (!c->path_ok && !c->hello_at && c->state == CONN_HELLO) {
			send_hello_probe(ep, c);
			rmpp_timer_arm(ep, &c->hello_at, ep->now + c->rtt.rto_us);
		}
	}
	establish(ep, c);
}

void rmpp_rel_rx(struct rmpp_ep *ep, struct rmpp_conn *c, const struct rmpp_pkt *pkt,
		 const uint8_t *frame, size_t wire_len)
{
	if (pkt->type == RMPP_PKT_HELLO || pkt->type == RMPP_PKT_HELLO_ACK) {
		rx_hello(ep, c, pkt, wire_len);
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
	establish(ep, c);
	c->ts_recent = pkt->tsval;
	/* a probe (keepalive, zero window) is out: this frame answers it */
	bool probing = c->persist_at || c->ka_at;
	c->ka_at = 0; /* the peer is alive; re-armed by the timer pass */
	process_ack(ep, c, pkt);
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

/* ---- output and timers --------------------------------------------------------- */

void rmpp_rel_output(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	if (c->echo_pending) {
		c->echo_pending = false;
		echo_detect(ep, c);
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
		hello_round(ep, c, false);
		rmpp_timer_arm(ep, &c->hello_at, ep->now + c->rtt.rto_us);
	}
	if (c->probe_rcvd) {
		c->probe_rcvd = false;
		if (c->state == CONN_ESTABLISHED && adv_credit(c) == 0) {
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

static void timeout_or_dead(struct rmpp_ep *ep, struct rmpp_conn *c, bool *dead)
{
	/* Dead only after DEAD_TIMEOUTS unanswered timeouts spanning at least
	 * DEAD_MIN_US: the backed-off RTOs alone add up to a few seconds, and
	 * a live peer in app progress that computes that long without calling
	 * into its library (so without acking) must not be declared dead. */
	if (c->n_timeouts++ == 0)
		c->silent_since = ep->now;
	*dead = c->n_timeouts >= ep->cfg.dead_timeouts &&
		ep->now - c->silent_since >= ep->cfg.dead_min_us;
	if (*dead)
		rmpp_conn_fail(ep, c, RMPP_PEER_DEAD, 0);
}

static uint64_t next_of(uint64_t a, uint64_t b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	return a < b ? a : b;
}

uint64_t rmpp_rel_timers(struct rmpp_ep *ep, struct rmpp_conn *c, uint64_t now)
{
	bool dead = false;
	if (c->state == CONN_DEAD)
		return 0;
	if (c->hello_at && now >= c->hello_at) {
		c->hello_at = 0;
		if (c->state == CONN_HELLO) {
			timeout_or_dead(ep, c, &dead);
			if (dead)
				return 0;
			uint64_t b = c->rtt.rto_us << (c->n_timeouts < 10 ? c->n_timeouts : 10);
			if (b > ep->cfg.rto_max_us)
				b = ep->cfg.rto_max_us;
			pmtu_retry(ep, c);
			hello_round(ep, c, true);
			c->hello_at = now + b;
		}
	}
	if (c->delack_at && now >= c->delack_at) {
		c->delack_at = 0;
		c->ack_now = true;
		rmpp_conn_want_output(ep, c);
	}
	if (c->reo_at && now >= c->reo_at) {
		c->reo_at = 0;
		rack_detect(ep, c);
	}
	if (c->tlp_at && now >= c->tlp_at) {
		c->tlp_at = 0;
		if (c->snd_una != c->snd_nxt && !c->tlp_out) {
			uint32_t mask = RING_MASK(ep);
			for (uint32_t psn = c->snd_nxt - 1;; psn--) {
				if (c->ring[psn & mask].state == TXE_INFLIGHT) {
					ep->ctr.retx_tlp++;
					retransmit(ep, c, psn, RMPP_F_ACK_REQ);
					c->tlp_out = true;
					break;
				}
				if (psn == c->snd_una)
					break;
			}
		}
	}
	if (c->rto_at && now >= c->rto_at) {
		c->rto_at = 0;
		if (c->snd_una != c->snd_nxt) {
			ep->ctr.rto_expired++;
			timeout_or_dead(ep, c, &dead);
			if (dead)
				return 0;
			c->rtt.rto_us *= 2;
			if (c->rtt.rto_us > ep->cfg.rto_max_us)
				c->rtt.rto_us = ep->cfg.rto_max_us;
			uint32_t mask = RING_MASK(ep);
			for (uint32_t psn = c->snd_una; psn != c->snd_nxt; psn++) {
				if (c->ring[psn & mask].state == TXE_INFLIGHT) {
					ep->ctr.retx_rto++;
					retransmit(ep, c, psn, RMPP_F_ACK_REQ);
					break;
				}
			}
			c->rto_at = now + c->rtt.rto_us;
		}
	}
	if (c->persist_at && now >= c->persist_at) {
		c->persist_at = 0;
		if (c->state == CONN_ESTABLISHED && rmpp_msg_has_output(c) &&
		    !rmpp_rel_can_send(ep, c)) {
			timeout_or_dead(ep, c, &dead);
			if (dead)
				return 0;
			send_probe(ep, c);
			c->persist_us *= 2;
			if (c->persist_us > ep->cfg.rto_max_us)
				c->persist_us = ep->cfg.rto_max_us;
			c->persist_at = now + c->persist_us;
		}
	}
	/* keepalive: operations wait on the peer but nothing is in flight */
	bool waiting = c->state == CONN_ESTABLISHED &&
		       (c->tx_all || c->rx_eager || c->rx_rndv || c->watch);
	if (c->ka_at && now >= c->ka_at) {
		c->ka_at = 0;
		if (waiting && c->snd_una == c->snd_nxt && !c->persist_at) {
			timeout_or_dead(ep, c, &dead);
			if (dead)
				return 0;
			send_probe(ep, c);
			c->ka_us *= 2;
			if (c->ka_us > ep->cfg.keepalive_us)
				c->ka_us = ep->cfg.keepalive_us;
		}
	}
	if (waiting && c->snd_una == c->snd_nxt && !c->persist_at) {
		if (!c->ka_us)
			c->ka_us = 4 * c->rtt.rto_us;
		if (!c->ka_at)
			c->ka_at = now + c->ka_us;
	} else if (!waiting) {
		c->ka_at = 0;
		c->ka_us = 0;
	}
	uint64_t n = 0;
	n = next_of(n, c->ka_at);
	n = next_of(n, c->hello_at);
	n = next_of(n, c->delack_at);
	n = next_of(n, c->reo_at);
	n = next_of(n, c->tlp_at);
	n = next_of(n, c->rto_at);
	n = next_of(n, c->persist_at);
	return n;
}
