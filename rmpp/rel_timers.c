/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rel_timers.c - the reliable layer's timer walk and peer liveness: each
 * connection's deadlines (handshake retry, delayed ack, RACK reordering
 * window, tail-loss probe, RTO, persist probe, keepalive) fired in a fixed
 * order, the keepalive that watches a peer operations wait on, and the
 * dead-peer verdict that every unanswered timeout counts towards.
 * ep_progress.c runs the walk; all functions run with ep->lock held.
 */
#include "rmpp_rel.h"

/* Count one unanswered timeout; true (and the connection failed with
 * RMPP_PEER_DEAD) once they make the peer dead. */
static bool timeout_or_dead(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	/* Dead only after DEAD_TIMEOUTS unanswered timeouts spanning at least
	 * DEAD_MIN_US: the backed-off RTOs alone add up to a few seconds, and
	 * a live peer in app progress that computes that long without calling
	 * into its library (so without acking) must not be declared dead. */
	if (c->n_timeouts++ == 0)
		c->silent_since = ep->now;
	bool dead = c->n_timeouts >= ep->cfg.dead_timeouts &&
	            ep->now - c->silent_since >= ep->cfg.dead_min_us;
	if (dead)
		rmpp_conn_fail(ep, c, RMPP_PEER_DEAD, 0);
	return dead;
}

/* The handshake went unanswered: another round, backed off. */
static bool hello_due(struct rmpp_ep *ep, struct rmpp_conn *c, uint64_t now)
{
	c->hello_at = 0;
	if (c->state != CONN_HELLO)
		return false;
	if (timeout_or_dead(ep, c))
		return true;
	rmpp_rel_hello_retry(ep, c, now);
	return false;
}

static bool rto_due(struct rmpp_ep *ep, struct rmpp_conn *c, uint64_t now)
{
	c->rto_at = 0;
	if (c->snd_una == c->snd_nxt)
		return false;
	ep->ctr.rto_expired++;
	if (timeout_or_dead(ep, c))
		return true;
	rmpp_rel_rto_fire(ep, c, now);
	return false;
}

/* Zero window: probe until the peer opens it (or answers RNR). */
static bool persist_due(struct rmpp_ep *ep, struct rmpp_conn *c, uint64_t now)
{
	c->persist_at = 0;
	if (c->state != CONN_ESTABLISHED || !rmpp_msg_has_output(c) || rmpp_rel_can_send(ep, c))
		return false;
	if (timeout_or_dead(ep, c))
		return true;
	rmpp_rel_send_probe(ep, c);
	c->persist_us *= 2;
	if (c->persist_us > ep->cfg.rto_max_us)
		c->persist_us = ep->cfg.rto_max_us;
	c->persist_at = now + c->persist_us;
	return false;
}

/* Keepalive: operations wait on the peer but nothing is in flight, so no
 * RTO would notice the peer's death.  Probes back off to KEEPALIVE_US. */
static bool keepalive(struct rmpp_ep *ep, struct rmpp_conn *c, uint64_t now)
{
	bool waiting =
	    c->state == CONN_ESTABLISHED && (c->tx_all || c->rx_eager || c->rx_rndv || c->watch);
	if (c->ka_at && now >= c->ka_at) {
		c->ka_at = 0;
		if (waiting && c->snd_una == c->snd_nxt && !c->persist_at) {
			if (timeout_or_dead(ep, c))
				return true;
			rmpp_rel_send_probe(ep, c);
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
	return false;
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
	if (c->state == CONN_DEAD)
		return 0;
	if (c->hello_at && now >= c->hello_at && hello_due(ep, c, now))
		return 0;
	if (c->delack_at && now >= c->delack_at) {
		c->delack_at = 0;
		c->ack_now = true;
		rmpp_conn_want_output(ep, c);
	}
	if (c->reo_at && now >= c->reo_at) {
		c->reo_at = 0;
		rmpp_rel_rack_detect(ep, c);
	}
	if (c->tlp_at && now >= c->tlp_at) {
		c->tlp_at = 0;
		rmpp_rel_tlp_fire(ep, c);
	}
	if (c->rto_at && now >= c->rto_at && rto_due(ep, c, now))
		return 0;
	if (c->persist_at && now >= c->persist_at && persist_due(ep, c, now))
		return 0;
	if (keepalive(ep, c, now))
		return 0;
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
