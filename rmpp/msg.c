/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * msg.c - the message layer: message sequence numbers, eager vs RTS/CTS,
 * receiver-side truncation, pipelined grants, reassembly into the
 * receiver's iovec, completions.  Runs on top of rel*.c, which delivers
 * packets strictly in PSN order, exactly once per epoch.
 */
#include "rmpp_int.h"

#include <stddef.h>

#include <stdlib.h>
#include <string.h>

static uint32_t seg_room(struct rmpp_conn *c)
{
	return c->mtu - RMPP_DATA_OVERHEAD;
}

bool rmpp_msg_has_output(struct rmpp_conn *c)
{
	if (c->ctrl_n || c->txq_head)
		return true;
	for (struct rmpp_txmsg *m = c->rndv_head; m; m = m->next) {
		uint64_t lim = m->grant_end < m->accepted ? m->grant_end : m->accepted;
		if (m->sent < lim)
			return true;
	}
	return false;
}

void rmpp_msg_ctrl(struct rmpp_ep *ep, struct rmpp_conn *c, uint8_t mop, uint32_t msn,
		   uint32_t msg_len, uint32_t offset, uint32_t arg)
{
	if (c->ctrl_n == c->ctrl_cap) {
		unsigned cap = c->ctrl_cap ? 2 * c->ctrl_cap : 8;
		struct rmpp_ctrl *q = malloc(cap * sizeof(*q));
		if (!q) {
			rmpp_log(ep, RMPP_LOG_ERR, &c->peer, "out of memory queueing %s",
				 rmpp_mop_name(mop));
			return;
		}
		for (unsigned i = 0; i < c->ctrl_n; i++)
			q[i] = c->ctrlq[(c->ctrl_head + i) % c->ctrl_cap];
		free(c->ctrlq);
		c->ctrlq = q;
		c->ctrl_cap = cap;
		c->ctrl_head = 0;
	}
	/* a ring: one CTS or DONE per outstanding rendezvous can queue up
	 * (100000 MPI_Gets), so taking the oldest must not move the others */
	struct rmpp_ctrl *k = &c->ctrlq[(c->ctrl_head + c->ctrl_n++) % c->ctrl_cap];
	k->mop = mop;
	k->msn = msn;
	k->msg_len = msg_len;
	k->offset = offset;
	k->arg = arg;
	rmpp_conn_want_output(ep, c);
}

/* ---- send side -------------------------------------------------------------------- */

static void tx_unlink_all(struct rmpp_conn *c, struct rmpp_txmsg *m)
{
	if (!m->aprev && c->tx_all != m)
		return; /* detached */
	if (m->aprev)
		m->aprev->anext = m->anext;
	else
		c->tx_all = m->anext;
	if (m->anext)
		m->anext->aprev = m->aprev;
	m->anext = m->aprev = NULL;
}

static void rndv_append(struct rmpp_conn *c, struct rmpp_txmsg *m)
{
	m->next = NULL;
	m->rprev = c->rndv_tail;
	if (c->rndv_tail)
		c->rndv_tail->next = m;
	else
		c->rndv_head = m;
	c->rndv_tail = m;
	m->in_rndv_list = true;
}

static void rndv_unlink(struct rmpp_conn *c, struct rmpp_txmsg *m)
{
	if (!m->in_rndv_list)
		return;
	if (m->rprev)
		m->rprev->next = m->next;
	else
		c->rndv_head = m->next;
	if (m->next)
		m->next->rprev = m->rprev;
	else
		c->rndv_tail = m->rprev;
	m->next = m->rprev = NULL;
	m->in_rndv_list = false;
}

static void tx_complete_one(struct rmpp_ep *ep, struct rmpp_txmsg *m, int status,
			    uint64_t accepted)
{
	if (status == 0)
		ep->ctr.tx_msgs++;
	else
		ep->ctr.ops_failed++;
	ep->upcalls++;
	if (ep->cb.tx_done)
		ep->cb.tx_done(ep->cb.arg, m->cookie, status, accepted);
	rmpp_txmsg_free(ep, m);
}

static void tx_complete(struct rmpp_ep *ep, struct rmpp_conn *c, struct rmpp_txmsg *m,
			int status, uint64_t accepted)
{
	tx_unlink_all(c, m);
	/* carried messages were sent before their carrier: they complete first */
	struct rmpp_txmsg *k = m->carried;
	m->carried = NULL;
	while (k) {
		struct rmpp_txmsg *n = k->next;
		tx_complete_one(ep, k, status, 0);
		k = n;
	}
	tx_complete_one(ep, m, status, accepted);
}

static void tx_maybe_done(struct rmpp_ep *ep, struct rmpp_conn *c, struct rmpp_txmsg *m)
{
	if (m->refs || !m->first_sent)
		return;
	if (m->rndv) {
		if (m->done_rcvd)
			tx_complete(ep, c, m, 0, m->accepted);
	} else if (m->sent == m->len) {
		tx_complete(ep, c, m, 0, m->len);
	}
}

void rmpp_msg_entry_done(struct rmpp_ep *ep, struct rmpp_conn *c, struct rmpp_txent *e)
{
	struct rmpp_txmsg *m = e->msg;
	if (!m)
		return;
	e->msg = NULL;
	m->refs--;
	tx_maybe_done(ep, c, m);
}

/* From both ends at once: a first CTS is for one of the newest messages (near
 * the tail), a pipelined grant or a DONE for one being sent (near the head);
 * with 100000 rendezvous outstanding a walk from the head alone was quadratic. */
static struct rmpp_txmsg *rndv_find(struct rmpp_conn *c, uint32_t msn)
{
	struct rmpp_txmsg *h = c->rndv_head, *t = c->rndv_tail;
	while (h) {
		if (h->msn == msn)
			return h;
		if (t->msn == msn)
			return t;
		if (h == t || h->next == t)
			break;
		h = h->next;
		t = t->rprev;
	}
	return NULL;
}

void rmpp_msg_enqueue(struct rmpp_ep *ep, struct rmpp_conn *c, struct rmpp_txmsg *m)
{
	m->msn = c->tx_msn++;
	m->next = NULL;
	if (c->txq_tail)
		c->txq_tail->next = m;
	else
		c->txq_head = m;
	c->txq_tail = m;
	rmpp_conn_want_output(ep, c);
}

void rmpp_msg_lazy_hold(struct rmpp_ep *ep, struct rmpp_conn *c, struct rmpp_txmsg *m)
{
	m->next = NULL;
	if (c->lazy_tail) {
		c->lazy_tail->next = m;
	} else {
		c->lazy_head = m;
		rmpp_timer_arm(ep, &c->lazy_due, rmpp_now_us() + ep->cfg.lazy_us);
	}
	c->lazy_tail = m;
	ep->ctr.lazy_held++;
}

void rmpp_msg_lazy_release(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	struct rmpp_txmsg *m = c->lazy_head;
	c->lazy_head = c->lazy_tail = NULL;
	c->lazy_due = 0;
	while (m) {
		struct rmpp_txmsg *n = m->next;
		rmpp_msg_enqueue(ep, c, m);
		m = n;
	}
}

void rmpp_msg_lazy_carry(struct rmpp_ep *ep, struct rmpp_conn *c, struct rmpp_txmsg *m,
			 size_t carry_len)
{
	struct rmpp_txmsg *h, **tail = &m->carried; /* M is new: carries nothing yet */
	while ((h = c->lazy_head) && h->len == 0 && h->hdr_len == carry_len &&
	       m->hdr_len + carry_len <= RMPP_MAX_HDR &&
	       m->hdr_len + carry_len + RMPP_DATA_OVERHEAD < c->mtu) {
		c->lazy_head = h->next;
		memcpy(m->hdr + m->hdr_len, h->hdr, carry_len);
		m->hdr_len = (uint16_t)(m->hdr_len + carry_len);
		tx_unlink_all(c, h); /* from now on it lives and dies with M */
		h->next = NULL;
		*tail = h;
		tail = &h->next;
		ep->ctr.lazy_carried++;
	}
	if (!c->lazy_head) {
		c->lazy_tail = NULL;
		c->lazy_due = 0;
	}
}

void rmpp_msg_output(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	while (rmpp_rel_can_send(ep, c)) {
		struct rmpp_txent e;
		memset(&e, 0, sizeof(e));
		if (c->ctrl_n) {
			struct rmpp_ctrl k = c->ctrlq[c->ctrl_head];
			c->ctrl_head = (c->ctrl_head + 1) % c->ctrl_cap;
			c->ctrl_n--;
			e.mop = k.mop;
			e.msn = k.msn;
			e.msg_len = k.msg_len;
			e.offset = k.offset;
			e.arg = k.arg;
			rmpp_rel_send_new(ep, c, &e);
			continue;
		}
		struct rmpp_txmsg *m = c->txq_head;
		if (m) {
			e.msg = m;
			e.msn = m->msn;
			e.msg_len = (uint32_t)m->len;
			e.offset = (uint32_t)m->sent;
			if (!m->first_sent) {
				uint32_t room = seg_room(c) - m->hdr_len;
				uint64_t d = m->len < room ? m->len : room;
				e.mop = m->rndv ? RMPP_MOP_RTS : RMPP_MOP_EAGER_FIRST;
				e.len = (uint32_t)d;
				m->first_sent = true;
			} else {
				uint64_t d = m->len - m->sent;
				if (d > seg_room(c))
					d = seg_room(c);
				e.mop = RMPP_MOP_EAGER_CONT;
				e.len = (uint32_t)d;
			}
			m->sent += e.len;
			if (m->rndv || m->sent == m->len) {
				c->txq_head = m->next;
				if (!c->txq_head)
					c->txq_tail = NULL;
				m->next = NULL;
				if (m->rndv)
					rndv_append(c, m); /* waits for CTS; msn order */
			}
			e.last = !m->rndv && m->sent == m->len;
			rmpp_rel_send_new(ep, c, &e);
			continue;
		}
		/* rendezvous data, FIFO over messages with grant left (the oldest
		 * message completes first) */
		struct rmpp_txmsg *pick = NULL;
		for (struct rmpp_txmsg *x = c->rndv_head; x; x = x->next) {
			uint64_t lim = x->grant_end < x->accepted ? x->grant_end : x->accepted;
			if (x->sent < lim) {
				pick = x;
				break;
			}
		}
		if (!pick)
			break;
		uint64_t lim = pick->grant_end < pick->accepted ? pick->grant_end : pick->accepted;
		uint64_t d = lim - pick->sent;
		if (d > seg_room(c))
			d = seg_room(c);
		e.msg = pick;
		e.msn = pick->msn;
		e.msg_len = (uint32_t)pick->len;
		e.offset = (uint32_t)pick->sent;
		e.mop = RMPP_MOP_RDATA;
		e.len = (uint32_t)d;
		pick->sent += d;
		rmpp_rel_send_new(ep, c, &e);
	}
}

/* ---- receive side ---------------------------------------------------------------------- */

static void scatter(struct rmpp_rxmsg *rx, uint64_t off, const uint8_t *data, uint64_t len)
{
	if (off >= rx->accepted)
		return;
	if (len > rx->accepted - off)
		len = rx->accepted - off;
	off += rx->iov_off;
	for (size_t i = 0; i < rx->niov && len; i++) {
		if (off >= rx->iov[i].iov_len) {
			off -= rx->iov[i].iov_len;
			continue;
		}
		size_t n = rx->iov[i].iov_len - (size_t)off;
		if (n > len)
			n = (size_t)len;
		memcpy((uint8_t *)rx->iov[i].iov_base + off, data, n);
		data += n;
		len -= n;
		off = 0;
	}
}

static void rx_complete(struct rmpp_ep *ep, struct rmpp_rxmsg *rx, int status)
{
	if (status == 0)
		ep->ctr.rx_msgs++;
	else
		ep->ctr.ops_failed++;
	ep->upcalls++;
	if (ep->cb.rx_done)
		ep->cb.rx_done(ep->cb.arg, rx->cookie, status, status == 0 ? rx->accepted : 0);
	rmpp_rxmsg_free(ep, rx);
}

static void rx_protocol_error(struct rmpp_ep *ep, struct rmpp_conn *c,
			      const struct rmpp_pkt *pkt, const char *why)
{
	ep->ctr.malformed_drops++;
	rmpp_log(ep, RMPP_LOG_WARN, &c->peer, "protocol error: %s (%s msn %u off %u)", why,
		 rmpp_mop_name(pkt->m.mop), pkt->m.msn, pkt->m.offset);
}

/* Data that does not continue its message: a protocol error if it came in
 * a frame (pkt), a counted drop if it was placed ahead of its turn (pkt
 * NULL; checked when its turn came: the message failed meanwhile). */
static void rx_data_refused(struct rmpp_ep *ep, struct rmpp_conn *c, const struct rmpp_pkt *pkt,
                            const char *why)
{
	if (pkt)
		rx_protocol_error(ep, c, pkt, why);
	else
		ep->ctr.malformed_drops++;
}

static int rx_first(struct rmpp_ep *ep, struct rmpp_conn *c, const struct rmpp_pkt *pkt)
{
	const struct rmpp_msghdr *m = &pkt->m;
	if (m->msn != c->rx_msn || c->rx_eager) {
		rx_protocol_error(ep, c, pkt, "unexpected message number");
		return 0;
	}
	struct rmpp_rx_accept acc = {0};
	int v = ep->cb.rx_hdr ? ep->cb.rx_hdr(ep->cb.arg, &c->peer, pkt->ptlhdr, m->ptlhdr_len,
					      m->msg_len, &acc)
			      : RMPP_RX_ACCEPT;
	ep->upcalls++;
	if (v == RMPP_RX_DEFER) {
		ep->ctr.rx_defers++;
		c->rx_stalled = true;
		return 1;
	}
	struct rmpp_rxmsg *rx = rmpp_rxmsg_alloc(ep, acc.niov);
	if (!rx) {
		/* Cannot track it: behave as not ready (retried on resume). */
		c->rx_stalled = true;
		return 1;
	}
	if (acc.niov)
		memcpy(rx->iov, acc.iov, acc.niov * sizeof(*rx->iov));
	c->rx_msn++;
	rx->niov = acc.niov;
	rx->iov_off = acc.offset;
	rx->msn = m->msn;
	rx->len = m->msg_len;
	rx->accepted = acc.accepted < m->msg_len ? acc.accepted : m->msg_len;
	rx->cookie = acc.cookie;
	rx->rndv = m->mop == RMPP_MOP_RTS;
	scatter(rx, 0, pkt->data, pkt->data_len);
	rx->rcvd = pkt->data_len;
	if (!rx->rndv) {
		if (rx->rcvd == rx->len)
			rx_complete(ep, rx, 0);
		else
			c->rx_eager = rx;
		return 0;
	}
	if (rx->rcvd >= rx->accepted) {
		rmpp_msg_ctrl(ep, c, RMPP_MOP_DONE, rx->msn, (uint32_t)rx->len, 0,
			      (uint32_t)rx->accepted);
		rx_complete(ep, rx, 0);
		return 0;
	}
	rx->grant_sz = ep->cfg.grant;
	rx->grant_end = rx->rcvd + rx->grant_sz;
	if (rx->grant_end > rx->accepted)
		rx->grant_end = rx->accepted;
	rmpp_msg_ctrl(ep, c, RMPP_MOP_CTS, rx->msn, (uint32_t)rx->len, (uint32_t)rx->grant_end,
		      (uint32_t)rx->accepted);
	/* oldest first: the sender serves grants in message order, so RDATA
	 * finds its message near the head however many RTSs wait behind it
	 * (100000 outstanding MPI_Gets made a newest-first list quadratic) */
	rx->next = NULL;
	if (c->rx_rndv_tail)
		c->rx_rndv_tail->next = rx;
	else
		c->rx_rndv = rx;
	c->rx_rndv_tail = rx;
	return 0;
}

/* RDATA in PSN order: data NULL if rmpp_msg_rdata_place() put it in already. */
static void rx_rdata(struct rmpp_ep *ep, struct rmpp_conn *c, const struct rmpp_pkt *pkt,
                     uint32_t msn, uint32_t offset, const uint8_t *data, uint32_t len)
{
	struct rmpp_rxmsg **pp = &c->rx_rndv, *rx, *prev = NULL;
	while ((rx = *pp) && rx->msn != msn) {
		prev = rx;
		pp = &rx->next;
	}
	if (!rx || offset != rx->rcvd || (uint64_t)offset + len > rx->grant_end) {
		rx_data_refused(ep, c, pkt, "RDATA outside the grant");
		return;
	}
	if (data)
		scatter(rx, offset, data, len);
	rx->rcvd += len;
	if (rx->rcvd >= rx->accepted) {
		*pp = rx->next;
		if (c->rx_rndv_tail == rx)
			c->rx_rndv_tail = prev;
		rmpp_msg_ctrl(ep, c, RMPP_MOP_DONE, rx->msn, (uint32_t)rx->len, 0,
			      (uint32_t)rx->accepted);
		rx_complete(ep, rx, 0);
		return;
	}
	/* pipelined grants: extend once half of the current grant is consumed */
	if (rx->grant_end < rx->accepted && rx->rcvd + rx->grant_sz / 2 >= rx->grant_end) {
		rx->grant_end += rx->grant_sz;
		if (rx->grant_end > rx->accepted)
			rx->grant_end = rx->accepted;
		rmpp_msg_ctrl(ep, c, RMPP_MOP_CTS, rx->msn, (uint32_t)rx->len,
			      (uint32_t)rx->grant_end, (uint32_t)rx->accepted);
	}
}

/* EAGER_CONT in PSN order: data NULL if eager_place() put it in already. */
static void rx_eager_cont(struct rmpp_ep *ep, struct rmpp_conn *c, const struct rmpp_pkt *pkt,
                          uint32_t msn, uint32_t offset, const uint8_t *data, uint32_t len)
{
	struct rmpp_rxmsg *rx = c->rx_eager;
	if (!rx || rx->msn != msn || offset != rx->rcvd || (uint64_t)offset + len > rx->len) {
		rx_data_refused(ep, c, pkt, "EAGER_CONT out of sequence");
		return;
	}
	if (data)
		scatter(rx, offset, data, len);
	rx->rcvd += len;
	if (rx->rcvd >= rx->len) {
		c->rx_eager = NULL;
		rx_complete(ep, rx, 0);
	}
}

/* An eager message above EAGER_LIMIT (a solicited one: a Portals REPLY of up
 * to SOLICITED_EAGER_MAX) is as long as a rendezvous, and what waits behind
 * a hole in it goes to its buffer at once as RDATA does (below).  Its
 * EAGER_FIRST was consumed, so the buffer is known; bytes beyond the message
 * are refused (kept whole, then reported by the in-order pass). */
static bool eager_place(struct rmpp_conn *c, const struct rmpp_pkt *pkt)
{
	struct rmpp_rxmsg *rx = c->rx_eager;
	const struct rmpp_msghdr *m = &pkt->m;
	if (!rx || rx->msn != m->msn || m->offset < rx->rcvd ||
	    (uint64_t)m->offset + pkt->data_len > rx->len)
		return false;
	scatter(rx, m->offset, pkt->data, pkt->data_len);
	return true;
}

/* Out-of-order RDATA is most of what a loss leaves behind its hole in a
 * stream: copying each such frame into a reorder slot and again into the
 * message later doubled the receiver's copying (at 1 % loss nearly every
 * frame waits behind a hole).  Its message's buffer and grant are known, so
 * its bytes go there at once; the in-order pass only counts them. */
bool rmpp_msg_rdata_place(struct rmpp_ep *ep, struct rmpp_conn *c, const struct rmpp_pkt *pkt)
{
	const struct rmpp_msghdr *m = &pkt->m;
	struct rmpp_rxmsg *rx = c->rx_rndv;
	(void)ep;
	if (!(pkt->flags & RMPP_F_MSG))
		return false;
	if (m->mop == RMPP_MOP_EAGER_CONT)
		return eager_place(c, pkt);
	if (m->mop != RMPP_MOP_RDATA)
		return false;
	while (rx && rx->msn != m->msn)
		rx = rx->next;
	if (!rx || m->offset < rx->rcvd || (uint64_t)m->offset + pkt->data_len > rx->grant_end)
		return false;
	scatter(rx, m->offset, pkt->data, pkt->data_len);
	return true;
}

void rmpp_msg_rdata_placed(struct rmpp_ep *ep, struct rmpp_conn *c, uint32_t msn, uint32_t offset,
                           uint32_t len)
{
	/* msns are unique per direction: the eager message or an RDATA one */
	if (c->rx_eager && c->rx_eager->msn == msn)
		rx_eager_cont(ep, c, NULL, msn, offset, NULL, len);
	else
		rx_rdata(ep, c, NULL, msn, offset, NULL, len);
}

int rmpp_msg_rx(struct rmpp_ep *ep, struct rmpp_conn *c, const struct rmpp_pkt *pkt)
{
	const struct rmpp_msghdr *m = &pkt->m;
	struct rmpp_txmsg *tm;
	switch (m->mop) {
	case RMPP_MOP_EAGER_FIRST:
	case RMPP_MOP_RTS:
		return rx_first(ep, c, pkt);
	case RMPP_MOP_EAGER_CONT:
		rx_eager_cont(ep, c, pkt, m->msn, m->offset, pkt->data, pkt->data_len);
		return 0;
	case RMPP_MOP_RDATA:
		rx_rdata(ep, c, pkt, m->msn, m->offset, pkt->data, pkt->data_len);
		return 0;
	case RMPP_MOP_CTS:
		tm = rndv_find(c, m->msn);
		if (!tm) {
			rx_protocol_error(ep, c, pkt, "CTS for an unknown message");
			return 0;
		}
		tm->accepted = m->arg;
		if (m->offset > tm->grant_end)
			tm->grant_end = m->offset;
		rmpp_conn_want_output(ep, c);
		return 0;
	case RMPP_MOP_DONE:
		tm = rndv_find(c, m->msn);
		if (!tm) {
			rx_protocol_error(ep, c, pkt, "DONE for an unknown message");
			return 0;
		}
		tm->accepted = m->arg;
		tm->done_rcvd = true;
		rndv_unlink(c, tm);
		tx_maybe_done(ep, c, tm);
		return 0;
	case RMPP_MOP_NAK:
		tm = rndv_find(c, m->msn);
		if (tm) {
			rndv_unlink(c, tm);
			tm->done_rcvd = true;
			tm->accepted = 0;
			tx_maybe_done(ep, c, tm);
		}
		return 0;
	default:
		rx_protocol_error(ep, c, pkt, "unexpected operation");
		return 0;
	}
}

void rmpp_msg_fail_all(struct rmpp_ep *ep, struct rmpp_conn *c, int status)
{
	/* Detach everything first: the upcalls may start new sends. */
	struct rmpp_txmsg *tl = c->tx_all;
	struct rmpp_rxmsg *re = c->rx_eager, *rl = c->rx_rndv;
	c->txq_head = c->txq_tail = NULL;
	c->lazy_head = c->lazy_tail = NULL; /* held messages are on tx_all too */
	c->lazy_due = 0;
	c->rndv_head = c->rndv_tail = NULL;
	c->tx_all = NULL;
	c->rx_eager = NULL;
	c->rx_rndv = c->rx_rndv_tail = NULL;
	c->ctrl_n = c->ctrl_head = 0;
	while (tl) {
		struct rmpp_txmsg *m = tl;
		tl = m->anext;
		m->anext = m->aprev = NULL;
		m->rprev = NULL;
		m->in_rndv_list = false; /* the list itself was dropped above */
		m->refs = 0;
		tx_complete(ep, c, m, status, 0);
	}
	if (re)
		rx_complete(ep, re, status);
	while (rl) {
		struct rmpp_rxmsg *rx = rl;
		rl = rx->next;
		rx_complete(ep, rx, status);
	}
}

/* ---- descriptor free lists ------------------------------------------------------ */

struct rmpp_txmsg *rmpp_txmsg_alloc(struct rmpp_ep *ep, size_t niov)
{
	struct rmpp_txmsg *m = ep->tx_free;
	if (m) {
		ep->tx_free = m->next;
		ep->tx_nfree--;
		memset(m, 0, offsetof(struct rmpp_txmsg, iov_inline));
	} else if (!(m = calloc(1, sizeof(*m)))) {
		return NULL;
	}
	if (niov <= RMPP_IOV_INLINE) {
		m->iov = m->iov_inline;
	} else if (!(m->iov = malloc(niov * sizeof(*m->iov)))) {
		rmpp_txmsg_free(ep, m);
		return NULL;
	}
	return m;
}

void rmpp_txmsg_free(struct rmpp_ep *ep, struct rmpp_txmsg *m)
{
	if (m->iov && m->iov != m->iov_inline)
		free(m->iov);
	m->iov = NULL;
	if (ep->tx_nfree >= RMPP_MSG_FREE_MAX || ep->destroying) {
		free(m);
		return;
	}
	m->next = ep->tx_free;
	ep->tx_free = m;
	ep->tx_nfree++;
}

struct rmpp_rxmsg *rmpp_rxmsg_alloc(struct rmpp_ep *ep, size_t niov)
{
	struct rmpp_rxmsg *rx = ep->rx_free;
	if (rx) {
		ep->rx_free = rx->next;
		ep->rx_nfree--;
		memset(rx, 0, offsetof(struct rmpp_rxmsg, iov_inline));
	} else if (!(rx = calloc(1, sizeof(*rx)))) {
		return NULL;
	}
	if (niov <= RMPP_IOV_INLINE) {
		rx->iov = rx->iov_inline;
	} else if (!(rx->iov = malloc(niov * sizeof(*rx->iov)))) {
		rmpp_rxmsg_free(ep, rx);
		return NULL;
	}
	return rx;
}

void rmpp_rxmsg_free(struct rmpp_ep *ep, struct rmpp_rxmsg *rx)
{
	if (rx->iov && rx->iov != rx->iov_inline)
		free(rx->iov);
	rx->iov = NULL;
	if (ep->rx_nfree >= RMPP_MSG_FREE_MAX || ep->destroying) {
		free(rx);
		return;
	}
	rx->next = ep->rx_free;
	ep->rx_free = rx;
	ep->rx_nfree++;
}

void rmpp_msg_pools_free(struct rmpp_ep *ep)
{
	while (ep->tx_free) {
		struct rmpp_txmsg *m = ep->tx_free;
		ep->tx_free = m->next;
		free(m);
	}
	while (ep->rx_free) {
		struct rmpp_rxmsg *rx = ep->rx_free;
		ep->rx_free = rx->next;
		free(rx);
	}
	ep->tx_nfree = ep->rx_nfree = 0;
}
