/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rmpp_rel.h - what the files of the reliable-packet layer share among
 * themselves (not the rest of rmpp: the layer's interface to ep*.c and msg.c
 * is in rmpp_int.h).  The layer is split by concern:
 *
 *   rel.c         per-connection sequence state, credits, building and
 *                 sending packets, the output pass
 *   rel_rx.c      the receive path: in-order delivery, reorder slots, SACK
 *                 and DSACK state, dispatch of every received packet
 *   rel_loss.c    acknowledgement processing and loss recovery: RTT/RTO,
 *                 RACK, tail-loss probe, RTO expiry, echo loss
 *   rel_hello.c   handshake, epochs, path-MTU probing, peer failure
 *   rel_timers.c  the timer walk, keepalive and the dead-peer verdict
 *
 * Every function runs with ep->lock held.
 */
#ifndef RMPP_REL_H
#define RMPP_REL_H

#include "rmpp_int.h"

/* Ring index of a PSN (tx_window is a power of two). */
#define RING_MASK(ep) ((uint32_t)(ep)->cfg.tx_window - 1)

/* Timestamp for tsval: the pass's clock, never 0 (0 means "none"). */
static inline uint32_t rmpp_rel_ts_now(struct rmpp_ep *ep)
{
	uint32_t t = (uint32_t)ep->now;
	return t ? t : 1;
}

/* Credit to advertise: PSNs between rcv_nxt and the right edge. */
static inline uint16_t rmpp_rel_adv_credit(struct rmpp_conn *c)
{
	uint32_t cr = c->rcv_edge - c->rcv_nxt;
	if ((int32_t)cr < 0)
		cr = 0;
	return cr > 0xffff ? 0xffff : (uint16_t)cr;
}

/* rel.c */
/* Reorder slots this connection may hold now: the guaranteed minimum plus
 * a share of the endpoint's free pool, at most tx_window. */
uint32_t rmpp_rel_conn_cap(struct rmpp_ep *ep);
/* A packet header addressed to the connection's peer (epochs, timestamps,
 * CRC flag); the caller sets the rest. */
void rmpp_rel_hdr_init(struct rmpp_ep *ep, struct rmpp_conn *c, struct rmpp_pkt *p, unsigned type);
/* Send the packet of ring entry psn again (counted in its retx). */
void rmpp_rel_retransmit(struct rmpp_ep *ep, struct rmpp_conn *c, uint32_t psn, uint8_t extra);
/* A PROBE asking for an ack (persist and keepalive). */
void rmpp_rel_send_probe(struct rmpp_ep *ep, struct rmpp_conn *c);

/* rel_loss.c */
/* The tsecr of a frame sent now: the peer's latest tsval, or 0 (no echo)
 * once it has been held longer than this side's un-backed-off RTO. */
uint32_t rmpp_rel_echo(struct rmpp_ep *ep, const struct rmpp_conn *c);
/* Arm the RTO and the tail-loss probe while data is in flight; clear
 * them when none is. */
void rmpp_rel_arm_timers(struct rmpp_ep *ep, struct rmpp_conn *c);
/* The ack part of a packet: cumulative ack, SACK/DSACK, credit edge, RTT
 * sample, loss detection. */
void rmpp_rel_process_ack(struct rmpp_ep *ep, struct rmpp_conn *c, const struct rmpp_pkt *pkt);
/* RACK: retransmit what is older than RTT + reordering window. */
void rmpp_rel_rack_detect(struct rmpp_ep *ep, struct rmpp_conn *c);
/* After a receive batch: resend the oldest packet if the talking peer has
 * not acknowledged it for a whole RTO. */
void rmpp_rel_echo_detect(struct rmpp_ep *ep, struct rmpp_conn *c);
/* The tail-loss probe's deadline passed: resend the newest packet in flight. */
void rmpp_rel_tlp_fire(struct rmpp_ep *ep, struct rmpp_conn *c);
/* The RTO expired (the timeout already counted): back off and resend the
 * oldest packet in flight. */
void rmpp_rel_rto_fire(struct rmpp_ep *ep, struct rmpp_conn *c, uint64_t now);

/* rel_hello.c */
/* Path-MTU probing starts again (a new connection incarnation). */
void rmpp_rel_pmtu_reset(struct rmpp_ep *ep, struct rmpp_conn *c);
/* One handshake round: the probe, plus a plain HELLO on retries. */
void rmpp_rel_hello_round(struct rmpp_ep *ep, struct rmpp_conn *c, bool retry);
/* The handshake went unanswered (the timeout already counted): lower the
 * probe if due, another round, re-armed with backoff. */
void rmpp_rel_hello_retry(struct rmpp_ep *ep, struct rmpp_conn *c, uint64_t now);
/* HELLO or HELLO_ACK received; wire_len includes link padding. */
void rmpp_rel_rx_hello(struct rmpp_ep *ep, struct rmpp_conn *c, const struct rmpp_pkt *pkt,
                       size_t wire_len);
/* HELLO -> ESTABLISHED once both sides know each other and the path MTU. */
void rmpp_rel_establish(struct rmpp_ep *ep, struct rmpp_conn *c);

#endif /* RMPP_REL_H */
