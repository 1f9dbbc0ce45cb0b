/* SPDX-License-Identifier: BSD-3-Clause */
/* ep_send.c - the send entry points (rmpp_send, rmpp_send_lazy,
 * rmpp_send_carry, rmpp_send_flags) and rmpp_peer_resume: validate, queue on
 * the peer's connection, and send at once unless called from inside
 * progress. */
#include "rmpp_int.h"

#include <string.h>

static_assert(RMPP_WIRE_MAX_PTLHDR == RMPP_MAX_HDR,
              "the parser accepts every header rmpp_send takes");

/* ---- API entry points ------------------------------------------------------------- */

/* Leave an entry point that queued output (lock held, depth raised): a
 * thread blocked in progress must re-arm its timers, so wake it. */
static void entry_leave(struct rmpp_ep *ep)
{
	bool wake = ep->blocked > 0;
	ep->depth--;
	pthread_mutex_unlock(&ep->lock);
	if (wake)
		rmpp_wakeup(ep);
}

/* RTS/CTS above EAGER_LIMIT, except for a solicited message up to
 * SOLICITED_EAGER_MAX: its receiver is waiting for exactly these bytes, so a
 * CTS would only cost a round trip (rmpp.h, RMPP_SEND_SOLICITED). */
static bool send_rndv(const struct rmpp_ep *ep, uint64_t len, unsigned flags)
{
	if (len <= ep->cfg.eager_limit)
		return false;
	return !(flags & RMPP_SEND_SOLICITED) || len > ep->cfg.solicited_eager_max;
}

static int send_common(struct rmpp_ep *ep, const struct rmpp_addr *peer, const void *hdr,
                       size_t hdr_len, const struct iovec *iov, size_t niov, uint64_t offset,
                       uint64_t len, void *cookie, bool lazy, size_t carry_len, unsigned flags)
{
	if ((flags & ~(unsigned)RMPP_SEND_SOLICITED) || hdr_len > RMPP_MAX_HDR ||
	    len > UINT32_MAX || (hdr_len && !hdr) || (len && (!iov || !niov)) ||
	    peer->ra_link != ep->link.self.ra_link)
		return -EINVAL;
	RMPP_PP_MARK(ep, RMPP_PP_SEND);
	uint64_t total = 0;
	for (size_t i = 0; i < niov; i++)
		total += iov[i].iov_len;
	if (total < offset || total - offset < len)
		return -EINVAL;
	pthread_mutex_lock(&ep->lock);
	struct rmpp_txmsg *m = rmpp_txmsg_alloc(ep, niov);
	if (!m) {
		pthread_mutex_unlock(&ep->lock);
		return -ENOMEM;
	}
	if (niov)
		memcpy(m->iov, iov, niov * sizeof(*iov));
	m->niov = niov;
	m->data_off = offset;
	memcpy(m->hdr, hdr, hdr_len);
	m->hdr_len = (uint16_t)hdr_len;
	m->len = len;
	m->cookie = cookie;

	ep->depth++;
	int rc = 0;
	struct rmpp_conn *c = rmpp_conn_find(ep, peer);
	if (!c)
		c = rmpp_conn_create(ep, peer);
	if (!c) {
		rc = -ENOMEM;
	} else if (c->state == CONN_DEAD) {
		rc = -EHOSTUNREACH;
	} else if ((uint32_t)m->hdr_len + RMPP_DATA_OVERHEAD >= c->mtu) {
		rc = -EINVAL;
	}
	if (rc) {
		rmpp_txmsg_free(ep, m);
		ep->depth--;
		pthread_mutex_unlock(&ep->lock);
		return rc;
	}
	m->rndv = send_rndv(ep, len, flags);
	if (m->rndv)
		ep->ctr.rndv_msgs++;
	else
		ep->ctr.eager_msgs++;
	if (!m->rndv && len > ep->cfg.eager_limit)
		ep->ctr.solicited_eager++;
	m->anext = c->tx_all;
	if (c->tx_all)
		c->tx_all->aprev = m;
	c->tx_all = m;
	if (lazy && !m->rndv && ep->cfg.lazy_us) {
		rmpp_msg_lazy_hold(ep, c, m);
		ep->depth--;
		pthread_mutex_unlock(&ep->lock);
		return 0;
	}
	if (carry_len && c->lazy_head)
		rmpp_msg_lazy_carry(ep, c, m, carry_len);
	rmpp_msg_enqueue(ep, c, m);
	/* held messages follow this one, in the same transmit batch */
	if (c->lazy_head)
		rmpp_msg_lazy_release(ep, c);
	if (ep->depth == 1) {
		rmpp_ep_clock(ep);
		RMPP_PP_MARK(ep, RMPP_PP_SEND_QUEUED);
		rmpp_ep_run_output(ep);
	}
	entry_leave(ep);
	return 0;
}

int rmpp_send(struct rmpp_ep *ep, const struct rmpp_addr *peer, const void *hdr, size_t hdr_len,
              const struct iovec *iov, size_t niov, uint64_t offset, uint64_t len, void *cookie)
{
	return send_common(ep, peer, hdr, hdr_len, iov, niov, offset, len, cookie, false, 0, 0);
}

int rmpp_send_lazy(struct rmpp_ep *ep, const struct rmpp_addr *peer, const void *hdr,
                   size_t hdr_len, const struct iovec *iov, size_t niov, uint64_t offset,
                   uint64_t len, void *cookie)
{
	return send_common(ep, peer, hdr, hdr_len, iov, niov, offset, len, cookie, true, 0, 0);
}

int rmpp_send_carry(struct rmpp_ep *ep, const struct rmpp_addr *peer, const void *hdr,
                    size_t hdr_len, const struct iovec *iov, size_t niov, uint64_t offset,
                    uint64_t len, void *cookie, size_t carry_len)
{
	return send_common(ep, peer, hdr, hdr_len, iov, niov, offset, len, cookie, false, carry_len,
	                   0);
}

int rmpp_send_flags(struct rmpp_ep *ep, const struct rmpp_addr *peer, const void *hdr,
                    size_t hdr_len, const struct iovec *iov, size_t niov, uint64_t offset,
                    uint64_t len, void *cookie, size_t carry_len, unsigned flags)
{
	return send_common(ep, peer, hdr, hdr_len, iov, niov, offset, len, cookie, false, carry_len,
	                   flags);
}

int rmpp_peer_resume(struct rmpp_ep *ep, const struct rmpp_addr *peer)
{
	pthread_mutex_lock(&ep->lock);
	struct rmpp_conn *c = rmpp_conn_find(ep, peer);
	if (!c) {
		pthread_mutex_unlock(&ep->lock);
		return -ENOENT;
	}
	ep->depth++;
	rmpp_ep_clock(ep);
	c->rx_stalled = false;
	rmpp_rel_consume(ep, c);
	rmpp_conn_want_output(ep, c);
	if (ep->depth == 1)
		rmpp_ep_run_output(ep);
	entry_leave(ep);
	return 0;
}
