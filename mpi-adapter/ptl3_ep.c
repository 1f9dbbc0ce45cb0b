/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_ep.c - endpoints: binding, enable (EQs, portal tables), the op table,
 * Portals event dispatch (progress), cancel, close. */
#include "config.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ptl3.h"

/* ---- op table */
struct ptl3_op *ptl3_op_alloc_locked(struct ptl3_ep *ep, int kind)
{
	struct ptl3_op *op;
	uint32_t idx;
	if (ep->nfree) {
		idx = ep->freeidx[--ep->nfree];
		op = ep->ops[idx];
	} else {
		if (ep->nops == ep->capops) {
			uint32_t ncap = ep->capops ? ep->capops * 2 : 1024;
			struct ptl3_op **n = realloc(ep->ops, ncap * sizeof(*n));
			if (!n)
				return NULL;
			ep->ops = n;
			uint32_t *f = realloc(ep->freeidx, ncap * sizeof(*f));
			if (!f)
				return NULL;
			ep->freeidx = f;
			ep->capops = ncap;
		}
		op = calloc(1, sizeof(*op));
		if (!op)
			return NULL;
		idx = ep->nops++;
		ep->ops[idx] = op;
		op->idx = idx;
	}
	uint32_t gen = (op->gen + 1) & 0x3FFFFFFFu;
	void *bounce = op->bounce;
	size_t bounce_cap = op->bounce_cap;
	memset(op, 0, sizeof(*op));
	op->bounce = bounce;
	op->bounce_cap = bounce_cap;
	op->idx = idx;
	op->gen = gen ? gen : 1;
	op->kind = kind;
	op->live = 1;
	op->me = PTL_INVALID_HANDLE;
	op->md = PTL_INVALID_HANDLE;
	return op;
}

void *ptl3_op_bounce(struct ptl3_op *op, const void *buf, size_t len)
{
	if (op->bounce_cap < len) {
		free(op->bounce);
		op->bounce_cap = len < 256 ? 256 : len;
		op->bounce = malloc(op->bounce_cap);
		if (!op->bounce) {
			op->bounce_cap = 0;
			return NULL;
		}
	}
	memcpy(op->bounce, buf, len);
	return op->bounce;
}

void *ptl3_op_uptr(const struct ptl3_op *op)
{
	return PTL3_UP_MAKE(PTL3_UP_OP, op->gen, op->idx);
}

static struct ptl3_op *op_lookup(struct ptl3_ep *ep, uint64_t u)
{
	if (PTL3_UP_KIND(u) != PTL3_UP_OP)
		return NULL;
	uint32_t idx = PTL3_UP_IDX(u);
	if (idx >= ep->nops)
		return NULL;
	struct ptl3_op *op = ep->ops[idx];
	if (!op->live || op->gen != PTL3_UP_GEN(u))
		return NULL;
	return op;
}

/* ---- completions */
void ptl3_tx_complete_locked(struct ptl3_ep *ep, struct ptl3_op *op, int err)
{
	if (op->want_comp || err)
		ptl3_cq_push_locked(ep->tx_cq, op->context, op->cq_flags, 0, NULL, 0, 0, err, 0);
	ptl3_cntr_inc_locked(ep->send_cntr, err);
}

static uint64_t rx_flags(int qid)
{
	return FI_RECV | (qid == PTL3_Q_TAG ? FI_TAGGED : FI_MSG);
}

/* a send is complete when the ACK says everything arrived, or when the
 * receiver has pulled (or released) it from PT_RDV */
static void send_check_locked(struct ptl3_ep *ep, struct ptl3_op *op)
{
	if (!op->got_ack || (op->acked < op->len && !op->got_get))
		return;
	/* nobody will pull it: drop the PT_RDV entry.  The outcome is not
	 * needed (gone already or in use: as before, nothing to do), so an NI
	 * whose LIB runs in the NIC need not wait for it (PtlMEUnlinkNoWait). */
	if (!op->got_get && op->me != PTL_INVALID_HANDLE)
		PtlMEUnlinkNoWait(op->me);
	ptl3_tx_complete_locked(ep, op, 0);
	ep->outstanding_sends--;
	ptl3_op_free_locked(ep, op);
}

static void send_fail_locked(struct ptl3_ep *ep, struct ptl3_op *op, const ptl_event_t *ev)
{
	PTL3_WARN(FI_LOG_EP_DATA, "send to %u:%u failed: %s\n", op->target.nid, op->target.pid,
	          PtlNIFailStr(ep->dom->ni, ev->ni_fail_type));
	if (op->me != PTL_INVALID_HANDLE)
		PtlMEUnlink(op->me);
	ptl3_tx_complete_locked(ep, op, FI_EIO);
	ep->outstanding_sends--;
	ptl3_op_free_locked(ep, op);
}

static __attribute__((noinline)) void eq_event_locked(struct ptl3_ep *ep, const ptl_event_t *ev)
{
	uint64_t u = (uint64_t)(uintptr_t)ev->md.user_ptr;
	if (u == (uint64_t)(uintptr_t)PTL3_UP_STAGE) {
		ptl3_stage_on_event_locked(ep, ev);
		return;
	}
	if (u == (uint64_t)(uintptr_t)PTL3_UP_RELEASE) {
		ptl3_release_on_put_locked(ep, ev);
		return;
	}
	struct ptl3_op *op = op_lookup(ep, u);
	if (!op) {
		/* stale: an UNLINK after completion is expected; data landing
		 * in a buffer whose operation is gone would be lost */
		if ((ev->type == PTL_EVENT_PUT_END || ev->type == PTL_EVENT_REPLY_END) &&
		    ev->mlength) {
			ep->st.stale_data++;
			fprintf(stderr,
			        "ptl3: ERROR: %s of %llu bytes from %u:%u for a finished operation "
			        "(lost)\n",
			        PtlEventKindStr(ev->type), (unsigned long long)ev->mlength,
			        ev->initiator.nid, ev->initiator.pid);
		}
		return;
	}
	int fail = ev->ni_fail_type != PTL_NI_OK;
	switch (op->kind) {
	case PTL3_OP_SEND:
		switch (ev->type) {
		case PTL_EVENT_SEND_END:
			op->got_send_end = 1;
			if (fail) {
				send_fail_locked(ep, op, ev);
				return;
			}
			break;
		case PTL_EVENT_ACK:
			ep->st.acks++;
			if (fail) {
				send_fail_locked(ep, op, ev);
				return;
			}
			op->got_ack = 1;
			op->acked = ev->mlength;
			break;
		case PTL_EVENT_GET_END:
			ep->st.get_ends++;
			op->got_get = 1;
			break;
		default:
			return;
		}
		send_check_locked(ep, op);
		return;
	case PTL3_OP_RECV:
		if (ev->type != PTL_EVENT_PUT_END)
			return;
		{
			size_t n = ev->mlength, rlen = ev->rlength;
			uint64_t tag = ev->match_bits & ~PTL3_LONG_BIT;
			int err = 0;
			if (n < rlen) {
				err = FI_ETRUNC;
				ep->st.truncated++;
			}
			if (!fail)
				ptl3_sender_done_locked(ep, ev->initiator, ev->hdr_data, n == rlen);
			if (fail)
				err = FI_EIO;
			op->posted = 0;
			ep->posted_recvs--;
			ptl3_rx_complete_locked(ep, op->context, rx_flags(op->qid), op->buf, n, tag,
						ev->hdr_data, err, rlen - n, op->want_comp);
			ptl3_op_free_locked(ep, op);
		}
		return;
	case PTL3_OP_MRECV:
		/* The buffer is released by its MD's UNLINK, never by the PUT_END
		 * whose data reaches the end: messages land in match order but
		 * end in arrival order of their last bytes, so a short message
		 * matched after a long one (3 frames over ether) can end first.
		 * Releasing there freed the op under the long message, whose
		 * PUT_END then found no operation (its data was lost, and MPICH
		 * reposted a buffer still being written): rma/get_accumulate
		 * hung about 1 run in 20 over ether.  Portals posts the UNLINK after
		 * the MD's last pending operation has ended. */
		if (ev->type == PTL_EVENT_PUT_END) {
			size_t off = op->used + ev->offset;
			ptl3_rx_complete_locked(ep, op->context, FI_RECV | FI_MSG, op->buf + off,
			                        ev->mlength, 0, ev->hdr_data, fail ? FI_EIO : 0, 0,
			                        1);
			if (!fail)
				ptl3_sender_done_locked(ep, ev->initiator, ev->hdr_data,
				                        ev->mlength == ev->rlength);
		} else if (ev->type == PTL_EVENT_UNLINK) {
			/* a completion of its own, without data (FI_MULTI_RECV alone) */
			ptl3_cq_push_locked(ep->rx_cq, op->context, FI_MULTI_RECV, 0, NULL, 0, 0, 0, 0);
			op->posted = 0;
			ep->posted_recvs--;
			ptl3_op_free_locked(ep, op);
		}
		return;
	case PTL3_OP_PULL:
		if (ev->type != PTL_EVENT_REPLY_END)
			return;
		ep->st.replies++;
		{
			size_t n = ev->mlength;
			int err = op->rlen > n ? FI_ETRUNC : 0;
			if (fail)
				err = FI_EIO;
			ptl3_rx_complete_locked(ep, op->context, rx_flags(op->qid), op->buf, n, op->tag,
						op->hdr, err, op->rlen - n, op->want_comp);
			ptl3_op_free_locked(ep, op);
		}
		return;
	case PTL3_OP_WRITE:
		if (ev->type == PTL_EVENT_SEND_END && !fail)
			return;
		if (ev->type != PTL_EVENT_ACK && ev->type != PTL_EVENT_SEND_END)
			return;
		ep->st.acks += ev->type == PTL_EVENT_ACK;
		if (op->notify && !fail)
			ptl3_rma_notify_locked(ep, op->target, op->target_ep, op->hdr);
		if (op->want_comp || fail)
			ptl3_cq_push_locked(ep->tx_cq, op->context, FI_RMA | FI_WRITE, 0, NULL, 0, 0,
					    fail ? FI_EIO : 0, 0);
		ptl3_cntr_inc_locked(ep->write_cntr, fail);
		ptl3_op_free_locked(ep, op);
		return;
	case PTL3_OP_READ:
		if (ev->type != PTL_EVENT_REPLY_END)
			return;
		ep->st.replies++;
		if (op->want_comp || fail)
			ptl3_cq_push_locked(ep->tx_cq, op->context, FI_RMA | FI_READ, 0, NULL, 0, 0,
					    fail ? FI_EIO : 0, 0);
		ptl3_cntr_inc_locked(ep->read_cntr, fail);
		ptl3_op_free_locked(ep, op);
		return;
	case PTL3_OP_ATOMIC:
		ptl3_atomic_on_event_locked(ep, op, ev);
		return;
	case PTL3_OP_SYNC:
		if (ev->type == PTL_EVENT_REPLY_END) {
			ep->st.replies++;
			op->done = fail ? -1 : 1;
			op->rlen = ev->mlength;
		}
		return;
	default:
		return;
	}
}

static __attribute__((noinline, cold)) void eq_trace(const ptl_event_t *ev, int unexpected)
{
	fprintf(stderr,
	        "ptl3 trace: %s %s user_ptr %p from %u:%u mbits %#llx rlen %llu mlen %llu "
	        "off %llu hdr %#llx fail %u\n",
	        unexpected ? "ueq" : "eq", PtlEventKindStr(ev->type), ev->md.user_ptr,
	        ev->initiator.nid, ev->initiator.pid, (unsigned long long)ev->match_bits,
	        (unsigned long long)ev->rlength, (unsigned long long)ev->mlength,
	        (unsigned long long)ev->offset, (unsigned long long)ev->hdr_data, ev->ni_fail_type);
}

/* a receive's queued post found the unexpected EQ not empty: post it
 * again after the drain (ptl3_repost.c) */
static __attribute__((noinline)) void eq_post_refused(struct ptl3_ep *ep, const ptl_event_t *ev)
{
	struct ptl3_op *op = op_lookup(ep, (uint64_t)(uintptr_t)ev->md.user_ptr);
	if (op && op->kind == PTL3_OP_RECV)
		ptl3_repost_note_locked(ep, op, ev);
}

/* one event of either queue (out of line: tools/shmlat/lat-instr counts
 * it).  A dispatch with tail calls only: the trace and the refused post
 * are out of line, so that this saves no registers (~20 instructions per
 * event when the trace's fprintf was compiled in here) */
static __attribute__((noinline)) void eq_handle_locked(struct ptl3_ep *ep, ptl_event_t *ev,
						       int unexpected)
{
	if (__builtin_expect(ptl3_trace, 0))
		eq_trace(ev, unexpected);
	if (!unexpected)
		eq_event_locked(ep, ev);
	else if (__builtin_expect(ev->ni_fail_type == PTL_NI_POST_REFUSED, 0))
		eq_post_refused(ep, ev);
	else
		ptl3_rxq_ueq_event_locked(ep, ev, (uint64_t)(uintptr_t)ev->md.user_ptr);
}

/* The events of one EQ from the first one (rc, ev) on, handled until the
 * queue is empty: out of line, see eq_drain_locked. */
static __attribute__((noinline)) void eq_drain_rest_locked(struct ptl3_ep *ep, ptl_handle_eq_t eq,
							   int unexpected, ptl_event_t *ev, int rc)
{
	for (;;) {
		if (rc == PTL_EQ_DROPPED) {
			fprintf(stderr,
				"ptl3: FATAL: Portals %s event queue overflowed: events lost "
				"(raise FI_PTL3_EQ_SIZE)\n",
				unexpected ? "unexpected" : "completion");
			abort();
		}
		if (rc != PTL_OK) {
			PTL3_WARN(FI_LOG_EP_DATA, "PtlEQGet: %s\n", PtlErrorStr(rc));
			break;
		}
		eq_handle_locked(ep, ev, unexpected);
		rc = PtlEQGetNoProgress(eq, ev);
		if (rc == PTL_EQ_EMPTY)
			break;
	}
	if (unexpected && ep->repost) /* refused receives, in the order of their events */
		ptl3_repost_run_locked(ep);
}

/* Callers have driven the NAL (ptl3_ep_progress_locked) or only want the
 * events already there (cancel): an empty EQ does not cost another NAL pass.
 * An idle poll finds both queues empty: that check is inlined into the
 * caller, the handling is not (one call and frame fewer per empty queue). */
static inline __attribute__((always_inline)) void
eq_drain_locked(struct ptl3_ep *ep, ptl_handle_eq_t eq, int unexpected)
{
	ptl_event_t ev;
	int rc = PtlEQGetNoProgress(eq, &ev);
	if (__builtin_expect(rc == PTL_EQ_EMPTY, 1))
		return;
	eq_drain_rest_locked(ep, eq, unexpected, &ev, rc);
}

/* An oversubscribed node (<p3rt/oversub.h>): MPICH found nothing for a run
 * of polls, so wait in Portals until an event arrives on either queue, at
 * most timeout_ms: PtlEQPoll yields the core briefly to the rank sharing it,
 * then sleeps (P3_OVERSUB_WAIT).  A sleeping rank leaves the core to its
 * peers, and, woken by the event, gets it back ahead of busy processes.  The
 * domain lock stays held: other threads' calls wait at most timeout_ms. */
void ptl3_ep_block_locked(struct ptl3_ep *ep, int timeout_ms)
{
	if (!ep || !ep->enabled)
		return;
	ptl_handle_eq_t eqs[2] = {ep->eq, ep->ueq};
	ptl_event_t ev;
	int which = 0;
	int rc = PtlEQPoll(eqs, 2, (ptl_time_t)timeout_ms, &ev, &which);
	if (rc == PTL_EQ_DROPPED) {
		fprintf(stderr, "ptl3: FATAL: Portals event queue overflowed: events lost "
				"(raise FI_PTL3_EQ_SIZE)\n");
		abort();
	}
	if (rc == PTL_OK)
		eq_handle_locked(ep, &ev, which == 1);
	ptl3_ep_drain_locked(ep);
	/* a refusal PtlEQPoll took is posted again here: the drain above
	 * re-posts only after events it took itself (ptl3_repost.c) */
	if (ep->repost)
		ptl3_repost_run_locked(ep);
}

void ptl3_rxq_drain_ueq_locked(struct ptl3_ep *ep)
{
	eq_drain_locked(ep, ep->ueq, 1);
}

/* both queues' events (and the rarely used RMA-event and atomic-agent
 * queues); inlined into the progress call, which every CQ read makes */
static inline __attribute__((always_inline)) void ep_drain_inline(struct ptl3_ep *ep)
{
	/* arrivals first: a small message (soft receives, ptl3_soft.c) and
	 * every unexpected one come on ueq, and MPI waits for them; the two
	 * queues were never ordered against each other */
	eq_drain_locked(ep, ep->ueq, 1);
	eq_drain_locked(ep, ep->eq, 0);
	if (__builtin_expect(ep->dom->rma_eq_valid, 0)) /* FI_RMA_EVENT only */
		ptl3_rma_event_drain_locked(ep);
	if (__builtin_expect(ep->dom->agent != NULL, 0))
		ptl3_atomic_agent_drain_locked(ep->dom);
}

void ptl3_ep_drain_locked(struct ptl3_ep *ep)
{
	ep_drain_inline(ep);
}

void ptl3_ep_progress_locked(struct ptl3_ep *ep)
{
	if (!ep || !ep->enabled)
		return;
	struct ptl3_domain *dom = ep->dom;
	if (dom->app_progress) {
		/* Nothing posted to any queue of the NI since the count read
		 * before the last drain of them all (below): nothing to read.
		 * An idle poll skips its two PtlEQGetNoProgress calls (~40
		 * instructions each).  Every queue the provider reads is the
		 * NI's and drained below: both of each endpoint, the RMA-event
		 * and the atomic agent's. */
		ptl_seq_t n;
		if (PtlProgressEvents(dom->ni, 0, &n) != PTL_OK) {
			dom->ev_drained_ok = 0;
		} else if (dom->ev_drained_ok && n == dom->ev_drained) {
			return;
		} else {
			dom->ev_drained = n;
			dom->ev_drained_ok = 1;
		}
	}
	ep_drain_inline(ep);
	/* the NAL pass fed every endpoint's queues; a CQ or counter may be
	 * shared by several endpoints of the domain */
	if (__builtin_expect(dom->eps != ep || ep->dom_next != NULL, 0))
		for (struct ptl3_ep *o = dom->eps; o; o = o->dom_next)
			if (o != ep)
				ptl3_ep_drain_locked(o);
}

void ptl3_dom_progress_locked(struct ptl3_domain *dom)
{
	ptl3_ep_progress_locked(dom->eps);
}

/* ---- cancel */
ssize_t ptl3_ep_cancel_locked(struct ptl3_ep *ep, void *context)
{
	if (ptl3_soft_cancel_locked(ep, context))
		return 0;
	for (uint32_t i = 0; i < ep->nops; i++) {
		struct ptl3_op *op = ep->ops[i];
		if (!op->live || op->context != context || !op->posted)
			continue;
		if (op->kind != PTL3_OP_RECV && op->kind != PTL3_OP_MRECV)
			continue;
		if (PtlMEUnlink(op->me) != PTL_OK)
			return -FI_ENOENT; /* matched already: it completes normally */
		uint32_t gen = op->gen;
		/* events of matches that happened before the unlink */
		eq_drain_locked(ep, ep->eq, 0);
		if (!op->live || op->gen != gen)
			return 0;
		op->posted = 0;
		ep->posted_recvs--;
		ep->st.cancelled++;
		uint64_t flags = rx_flags(op->qid);
		if (op->kind == PTL3_OP_MRECV)
			flags |= FI_MULTI_RECV;
		ptl3_cq_push_locked(ep->rx_cq, op->context, flags, 0, op->buf, 0, op->tag, FI_ECANCELED,
				    0);
		ptl3_op_free_locked(ep, op);
		return 0;
	}
	return -FI_ENOENT;
}

static ssize_t ep_cancel(fid_t fid, void *context)
{
	struct ptl3_ep *ep = container_of(fid, struct ptl3_ep, ep_fid.fid);
	ptl3_lock(ep->dom);
	ssize_t r = ep->enabled ? ptl3_ep_cancel_locked(ep, context) : -FI_ENOENT;
	ptl3_unlock(ep->dom);
	return r;
}

static int ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	struct ptl3_ep *ep = container_of(fid, struct ptl3_ep, ep_fid.fid);
	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (optname == FI_OPT_MIN_MULTI_RECV) {
		if (*optlen < sizeof(size_t))
			return -FI_ETOOSMALL;
		*(size_t *)optval = ep->min_multi_recv;
		*optlen = sizeof(size_t);
		return 0;
	}
	return -FI_ENOPROTOOPT;
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	struct ptl3_ep *ep = container_of(fid, struct ptl3_ep, ep_fid.fid);
	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (optname == FI_OPT_MIN_MULTI_RECV) {
		if (optlen != sizeof(size_t))
			return -FI_EINVAL;
		ep->min_multi_recv = *(const size_t *)optval;
		if (!ep->min_multi_recv)
			ep->min_multi_recv = 1;
		return 0;
	}
	return -FI_ENOPROTOOPT;
}

static int no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr, struct fid_ep **tx_ep,
		     void *context)
{
	return -FI_ENOSYS;
}
static int no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr, struct fid_ep **rx_ep,
		     void *context)
{
	return -FI_ENOSYS;
}
static ssize_t ep_rx_size_left(struct fid_ep *ep)
{
	return 65536;
}
static ssize_t ep_tx_size_left(struct fid_ep *ep)
{
	return 65536;
}

static struct fi_ops_ep ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = ep_cancel,
	.getopt = ep_getopt,
	.setopt = ep_setopt,
	.tx_ctx = no_tx_ctx,
	.rx_ctx = no_rx_ctx,
	.rx_size_left = ep_rx_size_left,
	.tx_size_left = ep_tx_size_left,
};

/* ---- bind, enable, close */
static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	if (!fid || !bfid)
		return -FI_EINVAL;
	struct ptl3_ep *ep = container_of(fid, struct ptl3_ep, ep_fid.fid);
	int rc = 0;
	ptl3_lock(ep->dom);
	if (ep->enabled) {
		ptl3_unlock(ep->dom);
		return -FI_EOPBADSTATE;
	}
	switch (bfid->fclass) {
	case FI_CLASS_AV: {
		struct ptl3_av *av = container_of(bfid, struct ptl3_av, av_fid.fid);
		if (ep->av) {
			rc = -FI_EALREADY;
			break;
		}
		ep->av = av;
		av->ref++;
		break;
	}
	case FI_CLASS_CQ: {
		struct ptl3_cq *cq = container_of(bfid, struct ptl3_cq, cq_fid.fid);
		if (flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)) {
			rc = -FI_EBADFLAGS;
			break;
		}
		if (flags & FI_TRANSMIT) {
			ep->tx_cq = cq;
			ep->tx_selective = !!(flags & FI_SELECTIVE_COMPLETION);
			cq->ref++;
		}
		if (flags & FI_RECV) {
			ep->rx_cq = cq;
			ep->rx_selective = !!(flags & FI_SELECTIVE_COMPLETION);
			cq->ref++;
		}
		cq->ep = ep;
		break;
	}
	case FI_CLASS_CNTR: {
		struct ptl3_cntr *c = container_of(bfid, struct ptl3_cntr, cntr_fid.fid);
		if (flags & FI_SEND) {
			ep->send_cntr = c;
			c->ref++;
		}
		if (flags & FI_RECV) {
			ep->recv_cntr = c;
			c->ref++;
		}
		if (flags & FI_READ) {
			ep->read_cntr = c;
			c->ref++;
		}
		if (flags & FI_WRITE) {
			ep->write_cntr = c;
			c->ref++;
		}
		/* FI_REMOTE_READ/WRITE count only under FI_RMA_EVENT */
		if ((flags & FI_REMOTE_WRITE) && ep->dom->rma_event) {
			ep->rwrite_cntr = c;
			c->ref++;
		}
		if ((flags & FI_REMOTE_READ) && ep->dom->rma_event) {
			ep->rread_cntr = c;
			c->ref++;
		}
		c->ep = ep;
		break;
	}
	case FI_CLASS_EQ:
		/* an RDM endpoint posts no events; the EQ is held so it
		 * cannot close under us (ptl3_eq.c) */
		if (ep->eq_bound) {
			rc = -FI_EALREADY;
			break;
		}
		ep->eq_bound = container_of(bfid, struct fid_eq, fid);
		ptl3_eq_ref(ep->eq_bound, 1);
		break;
	default:
		rc = -FI_EINVAL;
	}
	ptl3_unlock(ep->dom);
	return rc;
}

static int ep_enable_locked(struct ptl3_ep *ep)
{
	struct ptl3_domain *dom = ep->dom;
	if (ep->enabled)
		return 0;
	if (!ep->av || !ep->tx_cq || !ep->rx_cq) {
		PTL3_WARN(FI_LOG_EP_CTRL, "enable: bind an AV and a CQ first\n");
		return -FI_ENOCQ;
	}
	int rc = ptl3_domain_ni_open_locked(dom);
	if (rc)
		return rc;
	uint32_t k = 0;
	while (k < dom->max_eps && (dom->ep_used & (1ULL << k)))
		k++;
	if (k >= dom->max_eps) {
		PTL3_WARN(FI_LOG_EP_CTRL,
			  "%u endpoints per domain: the NI's portal table is full (FI_PTL3_PT_BASE)\n",
			  dom->max_eps);
		return -FI_EBUSY;
	}
	ep->ep_index = k;
	ep->pt_base = (uint32_t)ptl3_params.pt_base;
	ep->soft_recv = ptl3_params.soft_recv > 0 ||
			(ptl3_params.soft_recv < 0 && strcmp(dom->nal_name, "myrinet") != 0);
	if (PtlEQAlloc(dom->ni, (ptl_size_t)ptl3_params.eq_size, PTL_EQ_HANDLER_NONE, &ep->eq) !=
		    PTL_OK ||
	    PtlEQAlloc(dom->ni, (ptl_size_t)ptl3_params.eq_size, PTL_EQ_HANDLER_NONE, &ep->ueq) !=
		    PTL_OK) {
		PTL3_WARN(FI_LOG_EP_CTRL, "PtlEQAlloc failed\n");
		return -FI_ENOMEM;
	}
	for (int i = 0; i < PTL3_NQ; i++) {
		ep->q[i].qid = i;
		ep->q[i].pt = ptl3_rx_pt(ep->pt_base, ep->ep_index,
					 i == PTL3_Q_TAG ? PTL3_PT_TAG : PTL3_PT_MSG);
		rc = ptl3_rxq_setup_locked(ep, &ep->q[i]);
		if (rc)
			return rc;
	}
	if (ep->atomic) {
		rc = ptl3_atomic_agent_setup_locked(dom);
		if (rc)
			return rc;
	}
	ptl3_stage_setup_locked(ep);
	ptl3_release_setup_locked(ep);
	dom->ep_used |= 1ULL << ep->ep_index;
	ep->dom_next = dom->eps;
	dom->eps = ep;
	ep->enabled = 1;
	/* only a NIC running LIB queues PtlMEMDPostNoWait (ptl3_repost.c) */
	ep->posts_queued = !strcmp(dom->progress_name, "offload");
	/* soft receives would take a message that a refused (and not yet
	 * re-posted) older receive must get: never beside queued posts */
	if (ep->posts_queued)
		ep->soft_recv = 0;
	return 0;
}

static int ep_control(struct fid *fid, int command, void *arg)
{
	struct ptl3_ep *ep = container_of(fid, struct ptl3_ep, ep_fid.fid);
	int rc;
	switch (command) {
	case FI_ENABLE:
		ptl3_lock(ep->dom);
		rc = ep_enable_locked(ep);
		ptl3_unlock(ep->dom);
		return rc;
	case FI_GETOPSFLAG: {
		uint64_t *f = arg;
		if (*f & FI_TRANSMIT)
			*f = ep->tx_op_flags;
		else
			*f = ep->rx_op_flags;
		return 0;
	}
	case FI_SETOPSFLAG: {
		uint64_t *f = arg;
		if (*f & FI_TRANSMIT)
			ep->tx_op_flags = *f & ~(FI_TRANSMIT | PTL3_INJECT_CALL);
		else
			ep->rx_op_flags = *f & ~(FI_RECV | PTL3_INJECT_CALL);
		return 0;
	}
	default:
		return -FI_ENOSYS;
	}
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void unref(int *r)
{
	if (*r > 0)
		(*r)--;
}

static int ep_close(struct fid *fid)
{
	struct ptl3_ep *ep = container_of(fid, struct ptl3_ep, ep_fid.fid);
	struct ptl3_domain *dom = ep->dom;
	ptl3_lock(dom);
	ep->closing = 1;
	if (ep->enabled) {
		/* wait (bounded) for sends the peers still have to ack or pull,
		 * and for their releases of our stage slots (a slot still held
		 * may be pulled); give our peers theirs first */
		double end = now_s() + ptl3_params.close_timeout;
		ptl3_release_flush_locked(ep);
		while ((ep->outstanding_sends || ptl3_stage_held(ep)) && now_s() < end) {
			ptl3_ep_progress_locked(ep);
			ptl3_release_flush_locked(ep);
			if (ep->outstanding_sends || ptl3_stage_held(ep)) {
				ptl3_unlock(dom);
				sched_yield();
				ptl3_lock(dom);
			}
		}
		if (ep->outstanding_sends || ptl3_stage_held(ep))
			fprintf(stderr,
			        "ptl3: close: %u sends still outstanding, %u staged injects not "
			        "released by their receivers after %d s\n",
			        ep->outstanding_sends, ptl3_stage_held(ep),
			        ptl3_params.close_timeout);
		ptl3_ep_progress_locked(ep);
		if (ptl3_params.counters) {
			ptl3_ep_print_counters_locked(ep);
			ptl3_repost_print(ep);
		}
		for (uint32_t i = 0; i < ep->nops; i++) {
			struct ptl3_op *op = ep->ops[i];
			if (op->live && op->me != PTL_INVALID_HANDLE &&
			    (op->posted || op->kind == PTL3_OP_SEND || op->kind == PTL3_OP_ATOMIC))
				PtlMEUnlink(op->me);
		}
		for (int i = 0; i < PTL3_NQ; i++)
			ptl3_rxq_teardown_locked(ep, &ep->q[i]);
		ptl3_stage_teardown_locked(ep);
		ptl3_release_teardown_locked(ep);
		ptl3_repost_free(ep);
		PtlEQFree(ep->eq);
		PtlEQFree(ep->ueq);
		for (struct ptl3_ep **pp = &dom->eps; *pp; pp = &(*pp)->dom_next)
			if (*pp == ep) {
				*pp = ep->dom_next;
				break;
			}
		dom->ep_used &= ~(1ULL << ep->ep_index);
	}
	if (ep->av)
		unref(&ep->av->ref);
	if (ep->eq_bound)
		ptl3_eq_ref(ep->eq_bound, -1);
	if (ep->tx_cq) {
		unref(&ep->tx_cq->ref);
		if (ep->tx_cq->ep == ep) /* progress drains all: any other will do */
			ep->tx_cq->ep = dom->eps;
	}
	if (ep->rx_cq) {
		unref(&ep->rx_cq->ref);
		if (ep->rx_cq->ep == ep)
			ep->rx_cq->ep = dom->eps;
	}
	struct ptl3_cntr *cs[6] = {ep->send_cntr, ep->recv_cntr,   ep->read_cntr,
				   ep->write_cntr, ep->rwrite_cntr, ep->rread_cntr};
	for (int i = 0; i < 6; i++)
		if (cs[i]) {
			unref(&cs[i]->ref);
			if (cs[i]->ep == ep)
				cs[i]->ep = dom->eps;
		}
	dom->ref--;
	ptl3_unlock(dom);
	for (uint32_t i = 0; i < ep->nops; i++) {
		free(ep->ops[i]->bounce);
		free(ep->ops[i]);
	}
	free(ep->ops);
	free(ep->freeidx);
	ptl3_stage_free(ep);
	if (ep->info)
		fi_freeinfo(ep->info);
	free(ep);
	return 0;
}

static struct fi_ops ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = ep_close,
	.bind = ep_bind,
	.control = ep_control,
	.ops_open = ptl3_no_ops_open,
	.tostr = ptl3_no_tostr,
	.ops_set = ptl3_no_ops_set,
};

extern struct fi_ops_atomic ptl3_atomic_ops;
extern struct fi_ops_collective ptl3_collective_ops;

int ptl3_endpoint(struct fid_domain *domain, struct fi_info *info, struct fid_ep **fep,
		  void *context)
{
	struct ptl3_domain *dom = container_of(domain, struct ptl3_domain, domain_fid);
	if (info && info->ep_attr && info->ep_attr->type != FI_EP_RDM &&
	    info->ep_attr->type != FI_EP_UNSPEC)
		return -FI_EINVAL;
	struct ptl3_ep *ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->dom = dom;
	ep->info = info ? fi_dupinfo(info) : NULL;
	/* the endpoint's source address names the pid its NI opens at */
	if (info && ptl3_addr_valid(info->src_addr, info->src_addrlen) && !dom->ni_open)
		dom->req_pid = ((const struct ptl3_addr *)info->src_addr)->pid;
	/* fi_msg(3): the source address of a receive is ignored unless the
	 * endpoint has FI_DIRECTED_RECV (no info: everything we offer) */
	ep->directed_recv = !info || (info->caps & FI_DIRECTED_RECV) ||
			    (info->rx_attr && (info->rx_attr->caps & FI_DIRECTED_RECV));
	ep->atomic = dom->atomic && (!info || (info->caps & FI_ATOMIC));
	ep->rx_cq_data = info && ((info->mode & FI_RX_CQ_DATA) ||
				  (info->rx_attr && (info->rx_attr->mode & FI_RX_CQ_DATA)));
	ep->tx_op_flags = info && info->tx_attr ? info->tx_attr->op_flags & ~PTL3_INJECT_CALL : 0;
	ep->rx_op_flags = info && info->rx_attr ? info->rx_attr->op_flags & ~PTL3_INJECT_CALL : 0;
	ep->min_multi_recv = 16384;
	ep->eq = ep->ueq = PTL_INVALID_HANDLE;
	ep->ep_fid.fid.fclass = FI_CLASS_EP;
	ep->ep_fid.fid.context = context;
	ep->ep_fid.fid.ops = &ep_fi_ops;
	ep->ep_fid.ops = &ep_ops;
	ep->ep_fid.cm = &ptl3_ep_cm_ops;
	ep->ep_fid.msg = &ptl3_msg_ops;
	ep->ep_fid.tagged = &ptl3_tagged_ops;
	ep->ep_fid.rma = &ptl3_rma_ops;
	ep->ep_fid.atomic = &ptl3_atomic_ops;
	ep->ep_fid.collective = &ptl3_collective_ops;
	ptl3_lock(dom);
	dom->ref++;
	ptl3_unlock(dom);
	*fep = &ep->ep_fid;
	return 0;
}
