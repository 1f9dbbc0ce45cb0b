/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rel_loss.c - loss detection and retransmission timing of the reliable
 * layer (sender side): the RFC 6298 RTT estimator and RTO, acknowledgement
 * processing (cumulative ack, SACK scoreboard, DSACK-driven reordering
 * window), RACK fast retransmit, the tail-loss probe, RTO expiry, and echo
 * loss.  The timers fire from rel_timers.c.  All functions run with
 * ep->lock held.
 */
#include "rmpp_rel.h"

/* ---- RTT, RTO and the loss timers ------------------------------------------ */

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

/* This connection's un-backed-off RTO, with the endpoint's bounds. */
static uint64_t conn_base_rto(struct rmpp_ep *ep, const struct rmpp_conn *c)
{
	return rtt_base_rto(&c->rtt, ep->cfg.delack_us, ep->cfg.rto_min_us, ep->cfg.rto_max_us);
}

/* The echo a frame sent now carries.  The peer takes an RTT sample from
 * every echo that comes with an ack of new data, and the time the echo was
 * held here is in that sample.  Replies leave within DELACK_US/LAZY_US, but
 * a keepalive PROBE, or any frame after a silence, echoes a tsval received
 * long before: tests/wire/faults.sh `burst` (CI, 9.7 s for one frame), where
 * bursts at both receivers ate the initiator's resends and the target's acks
 * of them, the first frame of the target to get through was a probe echoing
 * a tsval 1 s old; the initiator's RTO estimate jumped to RTO_MAX and its
 * echo-loss resends (which wait one estimated RTO) stopped, leaving the
 * repair to the backoff at 1 s a step.  So an echo held longer than this
 * side's own RTO estimate (>= RTO_MIN_US; it includes this host's response
 * time under load) is not sent: no sample rather than a wrong one. */
uint32_t rmpp_rel_echo(struct rmpp_ep *ep, const struct rmpp_conn *c)
{
	uint64_t held = ep->now - c->ts_recent_at;
	uint64_t bound = c->rtt.have ? conn_base_rto(ep, c) : ep->cfg.rto_init_us;
	return held <= bound ? c->ts_recent : 0;
}

static uint64_t pto_us(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	if (!c->rtt.have)
		return c->rtt.rto_us / 2;
	uint64_t p = 2 * c->rtt.srtt_us + ep->cfg.delack_us;
	return p < c->rtt.rto_us ? p : c->rtt.rto_us;
}

void rmpp_rel_arm_timers(struct rmpp_ep *ep, struct rmpp_conn *c)
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
void rmpp_rel_rack_detect(struct rmpp_ep *ep, struct rmpp_conn *c)
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
			rmpp_rel_retransmit(ep, c, psn, 0);
		} else if (!c->reo_at || deadline < c->reo_at) {
			rmpp_timer_arm(ep, &c->reo_at, deadline);
		}
	}
}

void rmpp_rel_process_ack(struct rmpp_ep *ep, struct rmpp_conn *c, const struct rmpp_pkt *pkt)
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
		uint32_t sample = rmpp_rel_ts_now(ep) - pkt->tsecr;
		if (sample < 10000000u) {
			rmpp_rtt_sample(&c->rtt, sample, ep->cfg.delack_us, ep->cfg.rto_min_us,
			                ep->cfg.rto_max_us);
			if (!c->min_rtt_us || sample < c->min_rtt_us)
				c->min_rtt_us = sample ? sample : 1;
		}
	}
	if (progressed) {
		/* the path delivers: drop the backoff (QUIC resets its PTO backoff
		 * on every ack too).  A sample did it implicitly; an ack without
		 * one (no echo, rmpp_rel_echo) left the RTO backed off. */
		if (c->rtt.have)
			c->rtt.rto_us = conn_base_rto(ep, c);
		c->n_timeouts = 0;
		c->tlp_out = false;
		c->rto_at = 0;
		c->tlp_at = 0;
		rmpp_rel_arm_timers(ep, c);
	}
	if (c->nsacked)
		rmpp_rel_rack_detect(ep, c);
	if (rmpp_seq_lt(c->snd_nxt, c->peer_edge)) {
		c->persist_at = 0;
		c->credit_blocked = false;
	}
	if (progressed || sacked || rmpp_msg_has_output(c))
		rmpp_conn_want_output(ep, c);
	if (c->snd_una != c->snd_nxt && !c->echo_pending) {
		c->echo_pending = true; /* judged once the batch is in: rmpp_rel_echo_detect */
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

void rmpp_rel_echo_detect(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	if (c->state != CONN_ESTABLISHED || c->snd_una == c->snd_nxt || !c->rtt.have)
		return;
	struct rmpp_txent *e = &c->ring[c->snd_una & RING_MASK(ep)];
	if (e->state != TXE_INFLIGHT || e->retx >= ECHO_RETX_MAX)
		return;
	uint64_t base = conn_base_rto(ep, c);
	if (ep->now - e->tx_us < base)
		return;
	ep->ctr.retx_echo++;
	rmpp_rel_retransmit(ep, c, c->snd_una, RMPP_F_ACK_REQ);
	c->rtt.rto_us = base;
	c->rto_at = 0;
	rmpp_timer_arm(ep, &c->rto_at, ep->now + base);
}

void rmpp_rel_tlp_fire(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	if (c->snd_una == c->snd_nxt || c->tlp_out)
		return;
	uint32_t mask = RING_MASK(ep);
	for (uint32_t psn = c->snd_nxt - 1;; psn--) {
		if (c->ring[psn & mask].state == TXE_INFLIGHT) {
			ep->ctr.retx_tlp++;
			rmpp_rel_retransmit(ep, c, psn, RMPP_F_ACK_REQ);
			c->tlp_out = true;
			break;
		}
		if (psn == c->snd_una)
			break;
	}
}

void rmpp_rel_rto_fire(struct rmpp_ep *ep, struct rmpp_conn *c, uint64_t now)
{
	c->rtt.rto_us *= 2;
	if (c->rtt.rto_us > ep->cfg.rto_max_us)
		c->rtt.rto_us = ep->cfg.rto_max_us;
	uint32_t mask = RING_MASK(ep);
	for (uint32_t psn = c->snd_una; psn != c->snd_nxt; psn++) {
		if (c->ring[psn & mask].state == TXE_INFLIGHT) {
			ep->ctr.retx_rto++;
			rmpp_rel_retransmit(ep, c, psn, RMPP_F_ACK_REQ);
			break;
		}
	}
	c->rto_at = now + c->rtt.rto_us;
}
