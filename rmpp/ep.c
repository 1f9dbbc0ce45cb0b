/* SPDX-License-Identifier: BSD-3-Clause */
/* ep.c - endpoints: creation, connection table, transmit batching, receive
 * dispatch, progress loop, blocking and wakeup. */
#include "rmpp_int.h"

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/timerfd.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#define LINK_HEADROOM 16 /* room for a link header in front of each frame */
static_assert(RMPP_WIRE_MAX_PTLHDR == RMPP_MAX_HDR,
	      "the parser accepts every header rmpp_send takes");

static unsigned addr_hash(const struct rmpp_addr *a)
{
	uint32_t h = a->ra_link * 31u + a->ra_ep;
	if (a->ra_link == RMPP_LINK_UDP)
		h = h * 2654435761u ^ a->u.udp.ip ^ ((uint32_t)a->u.udp.port << 16);
	else
		for (int i = 0; i < 6; i++)
			h = h * 31u + a->u.mac[i];
	h ^= h >> 15;
	h *= 2246822519u;
	h ^= h >> 13;
	return h % RMPP_CONN_HASH;
}

struct rmpp_conn *rmpp_conn_find(struct rmpp_ep *ep, const struct rmpp_addr *peer)
{
	for (struct rmpp_conn *c = ep->hash[addr_hash(peer)]; c; c = c->hnext)
		if (rmpp_addr_equal(&c->peer, peer))
			return c;
	return NULL;
}

/* Connections by (ip or MAC, endpoint id), whatever the port: a peer's
 * direct frames come from its connected send socket's ephemeral port. */
static unsigned node_hash(const struct rmpp_addr *a)
{
	struct rmpp_addr k = *a;
	if (k.ra_link == RMPP_LINK_UDP)
		k.u.udp.port = 0;
	return addr_hash(&k);
}

/* The connection a direct frame from src belongs to: same node and endpoint
 * id, and the peer's current epoch (so a frame of a former incarnation, or
 * of an unrelated endpoint that reuses the id on another port, never
 * matches a live connection). */
static struct rmpp_conn *conn_find_direct(struct rmpp_ep *ep, const struct rmpp_addr *src,
                                          uint32_t src_epoch)
{
	if (src->ra_link != RMPP_LINK_UDP || !src_epoch)
		return NULL;
	for (struct rmpp_conn *c = ep->nhash[node_hash(src)]; c; c = c->nhnext)
		if (c->peer_known && c->peer_epoch == src_epoch && c->peer.ra_ep == src->ra_ep &&
		    c->peer.u.udp.ip == src->u.udp.ip) {
			ep->ctr.rx_direct++;
			return c;
		}
	return NULL;
}

static struct rmpp_conn *conn_create(struct rmpp_ep *ep, const struct rmpp_addr *peer)
{
	struct rmpp_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->peer = *peer;
	if (rmpp_rel_conn_init(ep, c) != 0) {
		free(c);
		return NULL;
	}
	unsigned h = addr_hash(peer);
	c->hnext = ep->hash[h];
	ep->hash[h] = c;
	h = node_hash(peer);
	c->nhnext = ep->nhash[h];
	ep->nhash[h] = c;
	c->lnext = ep->conns;
	ep->conns = c;
	ep->nconns++;
	return c;
}

void rmpp_conn_want_output(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	if (c->in_work)
		return;
	c->in_work = true;
	c->wnext = ep->work;
	ep->work = c;
}

/* ---- transmit batch ------------------------------------------------------------ */

void rmpp_ep_tx_flush(struct rmpp_ep *ep)
{
	if (!ep->ntx)
		return;
	RMPP_PP_MARK(ep, RMPP_PP_TX);
	ep->link.ops->send(&ep->link, ep->txf, (int)ep->ntx);
	for (unsigned i = 0; i < ep->ntx; i++) {
		ep->ctr.tx_pkts++;
		ep->ctr.tx_bytes += ep->txf[i].len;
	}
	ep->ntx = 0;
}

uint8_t *rmpp_ep_tx_slot(struct rmpp_ep *ep, const struct rmpp_addr *dst)
{
	if (ep->ntx == ep->cfg.batch)
		rmpp_ep_tx_flush(ep);
	struct rmpp_txframe *f = &ep->txf[ep->ntx];
	f->data = ep->txbuf + (size_t)ep->ntx * ep->txbuf_stride + LINK_HEADROOM;
	f->dst = *dst;
	return f->data;
}

void rmpp_ep_tx_commit(struct rmpp_ep *ep, size_t len, bool direct)
{
	if (ep->auth.on) /* the slot has room: link.mtu was lowered at create */
		len = rmpp_auth_seal(&ep->auth, ep->txf[ep->ntx].data, len);
	ep->txf[ep->ntx].len = len;
	ep->txf[ep->ntx].direct = direct;
	ep->ntx++;
}

/* ---- receive dispatch ----------------------------------------------------------- */

void rmpp_ep_rx_frame(struct rmpp_ep *ep, const uint8_t *data, size_t len,
		      const struct rmpp_addr *src)
{
	struct rmpp_pkt pkt;
	uint64_t seq = 0;
	ep->ctr.rx_pkts++;
	ep->ctr.rx_bytes += len;
	if (ep->auth.on) {
		size_t body;
		if (rmpp_auth_verify(&ep->auth, data, len, &body, &seq) != 0) {
			ep->ctr.auth_drops++;
			rmpp_log(ep, RMPP_LOG_DEBUG, src, "dropped frame of %zu bytes: bad MAC", len);
			return;
		}
		len = body;
	}
	int rc = rmpp_pkt_parse(data, len, RMPP_PARSE_VERIFY_CRC, &pkt);
	if (rc == 0 && ep->link.require_crc && !(pkt.flags & RMPP_F_CRC) &&
	    pkt.type != RMPP_PKT_HELLO && pkt.type != RMPP_PKT_HELLO_ACK)
		rc = RMPP_PERR_NOCRC;
	if (rc != 0) {
		if (rc == RMPP_PERR_CRC || rc == RMPP_PERR_NOCRC)
			ep->ctr.csum_drops++;
		else
			ep->ctr.malformed_drops++;
		rmpp_log(ep, RMPP_LOG_DEBUG, src, "dropped frame of %zu bytes: %s", len,
			 rmpp_parse_err_str(rc));
		return;
	}
	RMPP_PP_MARK(ep, RMPP_PP_RX_PARSED);
	if (pkt.dst_ep != ep->ep_id) {
		ep->ctr.stale_drops++;
		return;
	}
	struct rmpp_addr from = *src;
	from.ra_ep = pkt.src_ep;
	if (ep->log_level >= RMPP_LOG_TRACE)
		rmpp_log(ep, RMPP_LOG_TRACE, &from,
			 "rx %s fl %02x psn %u ack %u cr %u sack %u %s msn %u off %u",
			 rmpp_pkt_type_name(pkt.type), pkt.flags, pkt.psn, pkt.ack_psn, pkt.credit,
			 pkt.sack_n,
			 (pkt.flags & RMPP_F_MSG) ? rmpp_mop_name(pkt.m.mop) : "-", pkt.m.msn,
			 pkt.m.offset);
	bool hello = pkt.type == RMPP_PKT_HELLO || pkt.type == RMPP_PKT_HELLO_ACK;
	if (!hello && pkt.dst_epoch != ep->epoch) {
		/* addressed to a previous incarnation of this endpoint */
		ep->ctr.stale_drops++;
		if (pkt.type != RMPP_PKT_RESET && pkt.type != RMPP_PKT_CLOSE)
			rmpp_rel_send_reset(ep, &from, pkt.src_epoch, pkt.src_ep, RMPP_PKT_RESET,
					    pkt.dst_epoch);
		return;
	}
	struct rmpp_conn *c = rmpp_conn_find(ep, &from);
	if (!c && !hello)
		c = conn_find_direct(ep, &from, pkt.src_epoch);
	if (!c) {
		if (pkt.type != RMPP_PKT_HELLO) {
			ep->ctr.stale_drops++;
			if (pkt.type != RMPP_PKT_RESET && pkt.type != RMPP_PKT_CLOSE)
				rmpp_rel_send_reset(ep, &from, pkt.src_epoch, pkt.src_ep,
						    RMPP_PKT_RESET, pkt.dst_epoch);
			return;
		}
		c = conn_create(ep, &from);
		if (!c)
			return;
	}
	if (ep->auth.on && rmpp_replay_check(&c->replay, seq) != 0) {
		ep->ctr.replay_drops++;
		rmpp_log(ep, RMPP_LOG_DEBUG, &from, "dropped replayed frame (seq %llu)",
			 (unsigned long long)seq);
		return;
	}
	RMPP_PP_MARK(ep, RMPP_PP_RX_CONN);
	rmpp_rel_rx(ep, c, &pkt, data, len);
	RMPP_PP_MARK(ep, RMPP_PP_RX_DONE);
}

/* ---- progress -------------------------------------------------------------- */

static void run_output(struct rmpp_ep *ep)
{
	while (ep->work) {
		struct rmpp_conn *c = ep->work;
		ep->work = c->wnext;
		c->in_work = false;
		rmpp_rel_output(ep, c);
	}
	rmpp_ep_tx_flush(ep);
}

/* Release every held message; true if there were any. */
static bool release_all_lazy(struct rmpp_ep *ep)
{
	bool any = false;
	for (struct rmpp_conn *c = ep->conns; c; c = c->lnext)
		if (c->lazy_head) {
			rmpp_msg_lazy_release(ep, c);
			any = true;
		}
	return any;
}

/* ---- clock and timers ------------------------------------------------------- */

/* A reading younger than this many TSC cycles (2 us at 2 GHz, 4 us at the
 * slowest 1 GHz clock) is reused: the shortest deadline (LAZY_US, 20 us) and
 * the RTO's lower bound (RTO_MIN_US, 1 ms) tolerate that much; a receive
 * syscall plus the delivery of its message take about 3000 cycles here. */
#define CLOCK_REUSE_CYCLES 4000u
/* The timer walk runs at least this often even when no deadline is known
 * to be due: it also (re)arms keepalives from the connections' state. */
#define TIMER_SWEEP_US 1000u

/* Stamp ep->now.  A clock_gettime through the vDSO costs ~140 cycles here,
 * an rdtsc ~25, and a request/response message took three readings (pass,
 * after its batch, the answer's send) less than a microsecond apart.  A TSC
 * that went backwards (migration) wraps the difference: the clock is read. */
static void ep_clock(struct rmpp_ep *ep)
{
#if defined(__x86_64__) || defined(__i386__)
	uint64_t t = __rdtsc();
	if (t - ep->now_tsc < CLOCK_REUSE_CYCLES)
		return;
	ep->now_tsc = t;
#endif
	uint64_t us = rmpp_now_us();
	if (us > ep->now)
		ep->now = us;
}

/* Walk the connections' timers?  Only when a known deadline is due, the last
 * walk is TIMER_SWEEP_US old, or the fault shim holds frames with deadlines
 * of its own: a pass that only found the link empty (the spin loop) or
 * delivered a message stays short. */
static bool timers_due(const struct rmpp_ep *ep)
{
	return ep->timers_force || ep->fault.enabled || ep->fault.hook ||
	       (ep->timers_next && ep->now >= ep->timers_next) ||
	       ep->now - ep->timers_ran >= TIMER_SWEEP_US;
}

/* Next protocol deadline (0: none). */
static uint64_t run_timers(struct rmpp_ep *ep)
{
	uint64_t next = rmpp_fault_poll(ep, ep->now);
	for (struct rmpp_conn *c = ep->conns; c; c = c->lnext) {
		uint64_t t = rmpp_rel_timers(ep, c, ep->now);
		if (c->lazy_head) {
			if (ep->now >= c->lazy_due)
				rmpp_msg_lazy_release(ep, c);
			else if (!t || c->lazy_due < t)
				t = c->lazy_due;
		}
		if (t && (!next || t < next))
			next = t;
	}
	ep->timers_next = next;
	ep->timers_ran = ep->now;
	ep->timers_force = false;
	return next;
}

/* One pass: drain the link (bounded), timers, output.  Returns next deadline. */
static uint64_t pass(struct rmpp_ep *ep)
{
	ep_clock(ep);
	if (ep->timer_armed_wanted) {
		/* the caller polls rmpp_ep_fd(): consume what made it readable,
		 * and only what can have: the timerfd once its deadline passed,
		 * the eventfd after rmpp_wakeup.  Reading both in every pass
		 * (mcpd makes one per frame and per command) was two system
		 * calls returning EAGAIN per pass. */
		uint64_t v;
		if (ep->timer_armed_at && rmpp_now_us() >= ep->timer_armed_at &&
		    read(ep->timer_fd, &v, sizeof(v)) == sizeof(v))
			ep->timer_armed_at = 0;
		if (atomic_exchange(&ep->wake_posted, false) &&
		    read(ep->wake_fd, &v, sizeof(v)) < 0) {
			/* taken by a thread blocked in rmpp_progress */
		}
	}
	if (ep->link.aux_fd >= 0 && ep->now - ep->aux_polled_at >= 1000) {
		ep->link.poll_aux = true; /* rare: see struct rmpp_link */
		ep->aux_polled_at = ep->now;
	}
	for (int round = 0; round < 8; round++) {
		int n = ep->link.ops->recv(&ep->link, ep->rxf, (int)ep->cfg.batch);
		if (n <= 0)
			break;
		RMPP_PP_START(ep);
		for (int i = 0; i < n; i++) {
			if (ep->fault.enabled || ep->fault.hook)
				rmpp_fault_rx(ep, &ep->rxf[i]);
			else
				rmpp_ep_rx_frame(ep, ep->rxf[i].data, ep->rxf[i].len, &ep->rxf[i].src);
		}
		ep->link.ops->release(&ep->link);
		run_output(ep); /* acks and data for this batch */
		ep_clock(ep);
		if (n < (int)ep->cfg.batch && !ep->fault.held)
			break; /* drained: spare a recvmmsg returning EAGAIN */
	}
	uint64_t next = timers_due(ep) ? run_timers(ep) : ep->timers_next;
	run_output(ep);
	return next;
}

static void arm_timerfd(struct rmpp_ep *ep, uint64_t next)
{
	if (!ep->timer_armed_wanted || next == ep->timer_armed_at)
		return;
	struct itimerspec its = {0};
	if (next) {
		uint64_t now = rmpp_now_us();
		uint64_t d = next > now ? next - now : 1;
		its.it_value.tv_sec = (time_t)(d / 1000000u);
		its.it_value.tv_nsec = (long)(d % 1000000u) * 1000;
	}
	timerfd_settime(ep->timer_fd, 0, &its, NULL);
	ep->timer_armed_at = next;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

int rmpp_progress(struct rmpp_ep *ep, int timeout_ms)
{
	pthread_mutex_lock(&ep->lock);
	ep->depth++;
	uint64_t up0 = ep->upcalls, next;
	/* one clock read per pass: pass() stamps ep->now */
	next = pass(ep);
	uint64_t start = ep->now;
	uint64_t deadline = timeout_ms > 0 ? start + (uint64_t)timeout_ms * 1000u : 0;
	/* The spin budget runs from the last frame received, not from the call:
	 * a stream whose frames complete no message (the middle of a long one)
	 * keeps the receiver spinning instead of sleeping between frames — each
	 * sleep costs the sender a wake-up (an IPI on a VM) per frame. */
	uint64_t spin_until = start + ep->cfg.spin_us;
	uint64_t rx_seen = ep->ctr.rx_pkts;
	for (;;) {
		if (ep->upcalls != up0 || timeout_ms == 0 || ep->depth > 1)
			break;
		uint64_t now = ep->now;
		if (deadline && now >= deadline)
			break;
		if (ep->ctr.rx_pkts != rx_seen) {
			rx_seen = ep->ctr.rx_pkts;
			spin_until = now + ep->cfg.spin_us;
		}
		if (now < spin_until) {
			pthread_mutex_unlock(&ep->lock);
			if (ep->cfg.spin_yield)
				sched_yield();
			else
				cpu_relax();
			pthread_mutex_lock(&ep->lock);
			next = pass(ep);
			continue;
		}
		/* about to block: held messages have nothing left to wait for */
		if (release_all_lazy(ep)) {
			next = pass(ep);
			continue;
		}
		/* and the timer walk must be fresh: `next` exact, keepalives armed */
		if (ep->timers_ran != ep->now) {
			ep->timers_force = true;
			next = pass(ep);
			continue;
		}
		/* block on the link and the wakeup fd until the next deadline */
		uint64_t until = deadline;
		if (next && (!until || next < until))
			until = next;
		struct timespec ts, *tsp = NULL;
		if (until) {
			uint64_t d = until > now ? until - now : 0;
			ts.tv_sec = (time_t)(d / 1000000u);
			ts.tv_nsec = (long)(d % 1000000u) * 1000;
			tsp = &ts;
		}
		struct pollfd pfd[3] = {{.fd = ep->link.fd, .events = POLLIN},
		                        {.fd = ep->wake_fd, .events = POLLIN},
		                        {.fd = ep->link.aux_fd, .events = POLLIN}};
		ep->blocked++;
		pthread_mutex_unlock(&ep->lock);
		int r = ppoll(pfd, ep->link.aux_fd >= 0 ? 3 : 2, tsp, NULL);
		if (r > 0 && ep->link.aux_fd >= 0 && (pfd[2].revents & POLLIN))
			ep->link.poll_aux = true;
		bool woken = r > 0 && (pfd[1].revents & POLLIN);
		if (woken) {
			uint64_t v;
			if (read(ep->wake_fd, &v, sizeof(v)) < 0) {
				/* already drained by another thread */
			}
		}
		pthread_mutex_lock(&ep->lock);
		ep->blocked--;
		next = pass(ep);
		if (woken)
			break;
	}
	if (ep->depth == 1 && ep->timer_armed_wanted && ep->timers_ran != ep->now) {
		next = run_timers(ep); /* the timerfd gets an exact deadline */
		run_output(ep);
	}
	RMPP_PP_MARK(ep, RMPP_PP_PROGRESS_RET);
	int events = (int)(ep->upcalls - up0);
	if (ep->depth == 1)
		arm_timerfd(ep, next);
	ep->depth--;
	pthread_mutex_unlock(&ep->lock);
	return events;
}

void rmpp_wakeup(struct rmpp_ep *ep)
{
	uint64_t one = 1;
	if (write(ep->wake_fd, &one, sizeof(one)) < 0) {
		/* counter saturated: a wakeup is pending anyway */
	}
	atomic_store(&ep->wake_posted, true); /* after the write: pass() reads it */
}

int rmpp_ep_fd(struct rmpp_ep *ep)
{
	pthread_mutex_lock(&ep->lock);
	ep->timer_armed_wanted = true;
	pthread_mutex_unlock(&ep->lock);
	return ep->epoll_fd;
}

/* ---- API entry points ------------------------------------------------------------- */

static int send_common(struct rmpp_ep *ep, const struct rmpp_addr *peer, const void *hdr,
		       size_t hdr_len, const struct iovec *iov, size_t niov, uint64_t offset,
		       uint64_t len, void *cookie, bool lazy, size_t carry_len)
{
	if (hdr_len > RMPP_MAX_HDR || len > UINT32_MAX || (hdr_len && !hdr) ||
	    (len && (!iov || !niov)) || peer->ra_link != ep->link.self.ra_link)
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
		c = conn_create(ep, peer);
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
	m->rndv = len > ep->cfg.eager_limit;
	if (m->rndv)
		ep->ctr.rndv_msgs++;
	else
		ep->ctr.eager_msgs++;
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
		ep_clock(ep);
		RMPP_PP_MARK(ep, RMPP_PP_SEND_QUEUED);
		run_output(ep);
	}
	bool wake = ep->blocked > 0;
	ep->depth--;
	pthread_mutex_unlock(&ep->lock);
	/* a thread blocked in progress must re-arm its timers */
	if (wake)
		rmpp_wakeup(ep);
	return 0;
}

int rmpp_send(struct rmpp_ep *ep, const struct rmpp_addr *peer, const void *hdr, size_t hdr_len,
	      const struct iovec *iov, size_t niov, uint64_t offset, uint64_t len, void *cookie)
{
	return send_common(ep, peer, hdr, hdr_len, iov, niov, offset, len, cookie, false, 0);
}

int rmpp_send_lazy(struct rmpp_ep *ep, const struct rmpp_addr *peer, const void *hdr,
		   size_t hdr_len, const struct iovec *iov, size_t niov, uint64_t offset,
		   uint64_t len, void *cookie)
{
	return send_common(ep, peer, hdr, hdr_len, iov, niov, offset, len, cookie, true, 0);
}

int rmpp_send_carry(struct rmpp_ep *ep, const struct rmpp_addr *peer, const void *hdr,
		    size_t hdr_len, const struct iovec *iov, size_t niov, uint64_t offset,
		    uint64_t len, void *cookie, size_t carry_len)
{
	return send_common(ep, peer, hdr, hdr_len, iov, niov, offset, len, cookie, false,
			   carry_len);
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
	ep_clock(ep);
	c->rx_stalled = false;
	rmpp_rel_consume(ep, c);
	rmpp_conn_want_output(ep, c);
	if (ep->depth == 1)
		run_output(ep);
	bool wake = ep->blocked > 0;
	ep->depth--;
	pthread_mutex_unlock(&ep->lock);
	if (wake)
		rmpp_wakeup(ep);
	return 0;
}

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
	if (release_all_lazy(ep))
		run_output(ep);
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
	ep_clock(ep);
	if (release_all_lazy(ep))
		run_output(ep);
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
	ep->txbuf_stride = (LINK_HEADROOM + ep->link.mtu + RMPP_AUTH_LEN + 63) & ~(size_t)63;
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
	ep_clock(ep);
	/* Held messages (a Portals ACK for a put that arrived just before the
	 * NI closed) go out now, once, ahead of the CLOSE: the initiator may be
	 * waiting for exactly that ACK before it closes in turn. */
	if (release_all_lazy(ep))
		run_output(ep);
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
