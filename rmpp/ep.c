/* SPDX-License-Identifier: BSD-3-Clause */
/* ep.c - endpoints: creation and destruction (link, fds, buffers), the
 * linger and farewell before an endpoint goes, the per-peer controls
 * (rmpp_peer_watch, rmpp_peer_forget) and the accessors.  The rest of the
 * endpoint: ep_conn.c (connection table), ep_frame.c (transmit batch,
 * receive dispatch), ep_progress.c (progress, blocking, wakeup), ep_send.c
 * (send entry points). */
#include "rmpp_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/timerfd.h>
#include <unistd.h>

/* Unfinished sends to a peer that may still take them (held ones
 * included)?  Caller holds the lock. */
static bool sends_pending(struct rmpp_ep *ep)
{
	for (struct rmpp_conn *c = ep->conns; c; c = c->lnext)
		if (c->tx_all && c->state != CONN_DEAD)
			return true;
	return false;
}

/* Before the endpoint goes (destroy, exit): release the held messages (a
 * Portals ACK some peer waits for) and let progress carry every unfinished
 * send to its acknowledgement, for at most LINGER_US.  One pass is not
 * enough: the connection may still be finishing its handshake (a target
 * that got one put and closes at once) or a frame may need resending. */
static void linger(struct rmpp_ep *ep)
{
	pthread_mutex_lock(&ep->lock);
	uint64_t until = rmpp_now_us() + ep->cfg.linger_us;
	if (rmpp_ep_release_lazy(ep))
		rmpp_ep_run_output(ep);
	for (;;) {
		bool more = sends_pending(ep) && rmpp_now_us() < until;
		if (more)
			ep->ctr.linger_passes++;
		pthread_mutex_unlock(&ep->lock);
		if (!more)
			return;
		rmpp_progress(ep, 1);
		pthread_mutex_lock(&ep->lock);
	}
}

int rmpp_peer_watch(struct rmpp_ep *ep, const struct rmpp_addr *peer, int delta)
{
	pthread_mutex_lock(&ep->lock);
	struct rmpp_conn *c = rmpp_conn_find(ep, peer);
	int rc = -ENOENT;
	if (c) {
		if (delta < 0 && (unsigned)-delta > c->watch)
			c->watch = 0;
		else
			c->watch += (unsigned)delta;
		rc = (int)c->watch;
		ep->timers_force = true; /* arm the keepalive at the next pass */
	}
	pthread_mutex_unlock(&ep->lock);
	return rc;
}

void rmpp_ep_farewell(struct rmpp_ep *ep)
{
	if (!ep)
		return;
	linger(ep);
	pthread_mutex_lock(&ep->lock);
	ep->depth++;
	rmpp_ep_clock(ep);
	if (rmpp_ep_release_lazy(ep))
		rmpp_ep_run_output(ep);
	for (struct rmpp_conn *c = ep->conns; c; c = c->lnext)
		if (ep->cfg.send_close && c->state == CONN_ESTABLISHED)
			rmpp_rel_send_reset(ep, &c->peer, c->peer_epoch, c->peer.ra_ep,
			                    RMPP_PKT_CLOSE, 0);
	rmpp_ep_tx_flush(ep);
	ep->depth--;
	pthread_mutex_unlock(&ep->lock);
}

int rmpp_peer_forget(struct rmpp_ep *ep, const struct rmpp_addr *peer)
{
	pthread_mutex_lock(&ep->lock);
	struct rmpp_conn *c = rmpp_conn_find(ep, peer);
	int rc = -ENOENT;
	if (c) {
		if (c->state == CONN_DEAD) {
			rmpp_rel_conn_reset(ep, c);
			c->state = CONN_HELLO;
		}
		rc = 0;
	}
	pthread_mutex_unlock(&ep->lock);
	return rc;
}

void rmpp_counters_get(struct rmpp_ep *ep, struct rmpp_counters *out)
{
	pthread_mutex_lock(&ep->lock);
	if (ep->link.ops && ep->link.ops->stats && ep->link.priv)
		ep->link.ops->stats(&ep->link, &ep->ctr); /* the kernel's counts */
	*out = ep->ctr;
	pthread_mutex_unlock(&ep->lock);
}

void rmpp_ep_addr(struct rmpp_ep *ep, struct rmpp_addr *out)
{
	*out = ep->link.self;
}

size_t rmpp_ep_mtu(struct rmpp_ep *ep)
{
	return ep->link.mtu;
}

uint32_t rmpp_ep_epoch(struct rmpp_ep *ep)
{
	return ep->epoch;
}

const char *rmpp_ep_link_desc(struct rmpp_ep *ep, char *buf, size_t len)
{
	pthread_mutex_lock(&ep->lock);
	const struct rmpp_link_ops *ops = ep->link.ops;
	snprintf(buf, len, "%s", ops->desc ? ops->desc(&ep->link) : ops->name);
	pthread_mutex_unlock(&ep->lock);
	return buf;
}

/* ---- create / destroy ----------------------------------------------------------- */

static void ep_free(struct rmpp_ep *ep)
{
	if (ep->link.ops && ep->link.fd >= 0)
		ep->link.ops->close(&ep->link);
	if (ep->wake_fd >= 0)
		close(ep->wake_fd);
	if (ep->timer_fd >= 0)
		close(ep->timer_fd);
	if (ep->epoll_fd >= 0)
		close(ep->epoll_fd);
	rmpp_fault_free(&ep->fault);
	rmpp_msg_pools_free(ep);
	free(ep->txbuf);
	free(ep->txf);
	free(ep->rxf);
	pthread_mutex_destroy(&ep->lock);
	free(ep);
}

int rmpp_ep_create(const struct rmpp_ep_attr *attr, struct rmpp_ep **epp)
{
	struct rmpp_ep *ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -ENOMEM;
	rmpp_pathprof_init();
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&ep->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	ep->wake_fd = ep->timer_fd = ep->epoll_fd = -1;
	ep->link.fd = -1;
	ep->link.aux_fd = -1;
	ep->link.ep = ep;
	if (attr->cfg)
		ep->cfg = *attr->cfg;
	else
		rmpp_config_init(&ep->cfg);
	/* the ring index is psn & (size - 1) */
	uint64_t w = 16;
	while (w < ep->cfg.tx_window)
		w <<= 1;
	ep->cfg.tx_window = w;
	ep->log_level = (int)ep->cfg.log;
	ep->cb = attr->cb;
	ep->ep_id = attr->ep_id;
	do {
		if (getrandom(&ep->epoch, sizeof(ep->epoch), 0) != sizeof(ep->epoch))
			ep->epoch = (uint32_t)rmpp_now_us() ^ (uint32_t)getpid();
	} while (ep->epoch == 0);

	char aerr[160];
	int rc = rmpp_auth_init(&ep->auth, aerr, sizeof(aerr));
	if (rc) {
		rmpp_log(ep, RMPP_LOG_ERR, NULL, "%s", aerr);
		rc = -EINVAL;
		goto fail;
	}
	rc = rmpp_fault_parse(&ep->fault, getenv("P3_RMPP_FAULT"));
	if (rc) {
		rmpp_log(ep, RMPP_LOG_ERR, NULL, "P3_RMPP_FAULT='%s': syntax error",
		         getenv("P3_RMPP_FAULT"));
		goto fail;
	}
	if (attr->link == RMPP_LINK_UDP)
		ep->link.ops = &rmpp_link_udp_ops;
	else if (attr->link == RMPP_LINK_ETHER)
		ep->link.ops = &rmpp_link_ether_ops;
#ifdef RMPP_HAVE_XDP
	else if (attr->link == RMPP_LINK_XDP)
		ep->link.ops = &rmpp_link_xdp_ops;
#else
	else if (attr->link == RMPP_LINK_XDP) {
		rmpp_log(ep, RMPP_LOG_ERR, NULL,
		         "xdp: this librmpp was built without AF_XDP (configure found no "
		         "libxdp-dev/libbpf-dev/clang): run tools/install-deps and rebuild, or "
		         "use ether");
		rc = -EPROTONOSUPPORT;
		goto fail;
	}
#endif
	else {
		rc = -EINVAL;
		goto fail;
	}
	rc = ep->link.ops->open(&ep->link, attr, &ep->cfg);
	if (rc)
		goto fail;
	if (ep->link.mtu < 512) {
		rmpp_log(ep, RMPP_LOG_ERR, NULL, "link MTU %zu too small", ep->link.mtu);
		rc = -EINVAL;
		goto fail;
	}
	/* authenticated frames end with a trailer: frames are built that much
	 * smaller, and every slot has room for it */
	if (ep->auth.on)
		ep->link.mtu -= RMPP_AUTH_LEN;
	ep->txbuf_stride = (RMPP_LINK_HEADROOM + ep->link.mtu + RMPP_AUTH_LEN + 63) & ~(size_t)63;
	ep->txbuf = malloc(ep->txbuf_stride * ep->cfg.batch);
	ep->txf = calloc(ep->cfg.batch, sizeof(*ep->txf));
	ep->rxf = calloc(ep->cfg.batch, sizeof(*ep->rxf));
	ep->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ep->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	ep->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (!ep->txbuf || !ep->txf || !ep->rxf) {
		rc = -ENOMEM;
		goto fail;
	}
	if (ep->wake_fd < 0 || ep->timer_fd < 0 || ep->epoll_fd < 0) {
		rc = -errno;
		goto fail;
	}
	int fds[4] = {ep->link.fd, ep->wake_fd, ep->timer_fd, ep->link.aux_fd};
	for (int i = 0; i < (ep->link.aux_fd >= 0 ? 4 : 3); i++) {
		struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[i]};
		if (epoll_ctl(ep->epoll_fd, EPOLL_CTL_ADD, fds[i], &ev) != 0) {
			rc = -errno;
			goto fail;
		}
	}
	char abuf[64];
	rmpp_log(ep, RMPP_LOG_INFO, NULL, "endpoint %s link %s mtu %zu epoch %08x crc %s auth %s",
	         rmpp_addr_str(&ep->link.self, abuf, sizeof(abuf)), ep->link.ops->name,
	         ep->link.mtu, ep->epoch, ep->link.require_crc ? "on" : "off",
	         ep->auth.on ? "on" : "off");
	*epp = ep;
	return 0;
fail:
	ep_free(ep);
	return rc;
}

void rmpp_ep_destroy(struct rmpp_ep *ep)
{
	if (!ep)
		return;
	linger(ep);
	pthread_mutex_lock(&ep->lock);
	ep->depth++;
	rmpp_ep_clock(ep);
	/* Held messages (a Portals ACK for a put that arrived just before the
	 * NI closed) go out now, once, ahead of the CLOSE: the initiator may be
	 * waiting for exactly that ACK before it closes in turn. */
	if (rmpp_ep_release_lazy(ep))
		rmpp_ep_run_output(ep);
	for (struct rmpp_conn *c = ep->conns; c; c = c->lnext) {
		if (ep->cfg.send_close && c->state == CONN_ESTABLISHED)
			rmpp_rel_send_reset(ep, &c->peer, c->peer_epoch, c->peer.ra_ep,
			                    RMPP_PKT_CLOSE, 0);
		rmpp_rel_conn_reset(ep, c);
		rmpp_msg_fail_all(ep, c, -ECANCELED);
	}
	ep->destroying = true;
	rmpp_ep_tx_flush(ep);
	while (ep->conns) {
		struct rmpp_conn *c = ep->conns;
		ep->conns = c->lnext;
		rmpp_rel_conn_free(ep, c);
		free(c->ctrlq);
		free(c);
	}
	pthread_mutex_unlock(&ep->lock);
	ep_free(ep);
}
