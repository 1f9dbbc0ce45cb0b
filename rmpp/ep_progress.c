/* SPDX-License-Identifier: BSD-3-Clause */
/* ep_progress.c - progress: one pass (drain the link, run the due timers,
 * send what is pending), the spin-then-block loop of rmpp_progress, the
 * timerfd behind rmpp_ep_fd, and rmpp_wakeup. */
#include "rmpp_int.h"

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/timerfd.h>
#include <unistd.h>

/* ---- progress -------------------------------------------------------------- */

void rmpp_ep_run_output(struct rmpp_ep *ep)
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
bool rmpp_ep_release_lazy(struct rmpp_ep *ep)
{
	bool any = false;
	for (struct rmpp_conn *c = ep->conns; c; c = c->lnext)
		if (c->lazy_head) {
			rmpp_msg_lazy_release(ep, c);
			any = true;
		}
	return any;
}

/* The timer walk runs at least this often even when no deadline is known
 * to be due: it also (re)arms keepalives from the connections' state. */
#define TIMER_SWEEP_US 1000u

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
	rmpp_ep_clock(ep);
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
				rmpp_ep_rx_frame(ep, ep->rxf[i].data, ep->rxf[i].len,
				                 &ep->rxf[i].src);
		}
		ep->link.ops->release(&ep->link);
		rmpp_ep_run_output(ep); /* acks and data for this batch */
		rmpp_ep_clock(ep);
		if (n < (int)ep->cfg.batch && !ep->fault.held)
			break; /* drained: spare a recvmmsg returning EAGAIN */
	}
	uint64_t next = timers_due(ep) ? run_timers(ep) : ep->timers_next;
	rmpp_ep_run_output(ep);
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
		if (rmpp_ep_release_lazy(ep)) {
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
		rmpp_ep_run_output(ep);
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
