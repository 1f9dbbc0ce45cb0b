/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rel_hello.c - connections and epochs: the HELLO / HELLO_ACK handshake
 * with path-MTU probing, RESET and CLOSE, and what a peer's restart, reset,
 * close or death does to the connection (rmpp_conn_fail).  All functions
 * run with ep->lock held.
 */
#include "rmpp_rel.h"

#include <string.h>

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

/* Path-MTU probing restarts with every connection incarnation: the frame
 * size is unconfirmed until the peer reports one of our HELLO probes. */
void rmpp_rel_pmtu_reset(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	c->mtu = (uint32_t)ep->link.mtu;
	c->probe_mtu = c->mtu;
	c->probe_tries = 0;
	c->path_ok = false;
}

/* HELLO or HELLO_ACK carrying mtu and hflags; padded with zeros to pad_to
 * bytes (link padding: not covered by payload_len or the CRC). */
static void hello_emit(struct rmpp_ep *ep, struct rmpp_conn *c, unsigned type, uint32_t mtu,
                       uint16_t hflags, uint32_t pad_to)
{
	struct rmpp_pkt p;
	rmpp_rel_hdr_init(ep, c, &p, type);
	p.flags &= (uint8_t)~RMPP_F_CRC;
	if (ep->link.require_crc)
		p.flags |= RMPP_F_CRC;
	p.psn = c->isn;
	rmpp_rel_update_edge(ep, c);
	p.credit = (uint16_t)(rmpp_rel_conn_cap(ep) > 0xffff ? 0xffff : rmpp_rel_conn_cap(ep));
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
void rmpp_rel_hello_round(struct rmpp_ep *ep, struct rmpp_conn *c, bool retry)
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

void rmpp_rel_hello_retry(struct rmpp_ep *ep, struct rmpp_conn *c, uint64_t now)
{
	uint64_t b = c->rtt.rto_us << (c->n_timeouts < 10 ? c->n_timeouts : 10);
	if (b > ep->cfg.rto_max_us)
		b = ep->cfg.rto_max_us;
	pmtu_retry(ep, c);
	rmpp_rel_hello_round(ep, c, true);
	c->hello_at = now + b;
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
	p.tsval = rmpp_rel_ts_now(ep);
	if (ep->link.require_crc)
		p.flags |= RMPP_F_CRC;
	uint8_t *buf = rmpp_ep_tx_slot(ep, to);
	long len = rmpp_pkt_build(buf, ep->link.mtu, &p, NULL, 0, 0);
	if (len > 0)
		rmpp_ep_tx_commit(ep, (size_t)len, false);
	if (type == RMPP_PKT_RESET)
		ep->ctr.resets_tx++;
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

void rmpp_rel_establish(struct rmpp_ep *ep, struct rmpp_conn *c)
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

void rmpp_rel_rx_hello(struct rmpp_ep *ep, struct rmpp_conn *c, const struct rmpp_pkt *pkt,
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
	rmpp_rel_establish(ep, c);
}
