/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_recv.c - posting receives for FI_MSG (ptl3_untagged.c) and
 * FI_TAGGED (ptl3_tagged.c), FI_MULTI_RECV and FI_PEEK/FI_CLAIM: the
 * unexpected list first, then the soft list (ptl3_soft.c) or a race-free
 * PtlMEMDPost; unexpected messages delivered (copied, or pulled from the
 * sender's PT_RDV).  The queues and arrivals: ptl3_rxq.c. */
#include "config.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "ptl3.h"

static const ptl_process_id_t any_id = {PTL_NID_ANY, PTL_PID_ANY};

static struct ptl3_ux *ux_find_locked(struct ptl3_rxq *q, int has_src, ptl_process_id_t src,
				      uint64_t tag, uint64_t ignore, int remove)
{
	struct ptl3_ux *prev = NULL;
	for (struct ptl3_ux *x = q->ux_head; x; prev = x, x = x->next) {
		if (!ptl3_ux_matches(x, has_src, src, tag, ignore))
			continue;
		if (remove) {
			if (prev)
				prev->next = x->next;
			else
				q->ux_head = x->next;
			if (q->ux_tail == x)
				q->ux_tail = prev;
			x->next = NULL;
			q->ux_count--;
		}
		return x;
	}
	return NULL;
}

/* a use-once MD over buf[0..len) (zero-length ones point at a dummy byte)
 * whose events go to op's completion EQ (nowhere without op); it unlinks
 * itself after `threshold` operations, without an UNLINK event */
static int md_bind_once_locked(struct ptl3_ep *ep, struct ptl3_op *op, const void *buf,
			       size_t len, int threshold, ptl_handle_md_t *mdh)
{
	ptl_md_t md;
	memset(&md, 0, sizeof(md));
	md.start = len ? (void *)buf : (void *)&ptl3_zero_byte;
	md.length = len;
	md.threshold = threshold;
	md.options = PTL_MD_EVENT_START_DISABLE | PTL_MD_EVENT_UNLINK_DISABLE;
	md.user_ptr = op ? ptl3_op_uptr(op) : NULL;
	md.eq_handle = op ? ep->eq : PTL_EQ_NONE;
	return PtlMDBind(ep->dom->ni, md, PTL_UNLINK, mdh);
}

/* PtlGet of n bytes from the sender's PT_RDV entry named by hdr's send id
 * into dst: op's pull of a header-only message, or (no op, n 0) a release */
static int pull_start_locked(struct ptl3_ep *ep, struct ptl3_op *op, ptl_process_id_t src,
			     uint64_t hdr, char *dst, size_t n)
{
	ptl_handle_md_t mdh;
	int rc = md_bind_once_locked(ep, op, dst, n, 1, &mdh);
	if (rc != PTL_OK)
		return ptl3_ptl_to_fi(rc);
	uint64_t sid = ptl3_sendid_of(hdr);
	rc = PtlGet(mdh, src, ep->pt_base + PTL3_PT_RDV, 0, sid, ptl3_sendid_offset(sid));
	if (rc != PTL_OK) {
		PtlMDUnlink(mdh);
		return ptl3_ptl_to_fi(rc);
	}
	ep->st.gets++;
	return 0;
}

void ptl3_release_general_locked(struct ptl3_ep *ep, ptl_process_id_t src, uint64_t hdr)
{
	pull_start_locked(ep, NULL, src, hdr, NULL, 0);
}

/* deliver an unexpected message to a receive op (RECV); may free op (the
 * caller frees x) */
int ptl3_ux_deliver_locked(struct ptl3_ep *ep, struct ptl3_op *op, const struct ptl3_ux *x)
{
	size_t n = x->rlen < op->buflen ? x->rlen : op->buflen;
	uint64_t flags = FI_RECV | (op->qid == PTL3_Q_TAG ? FI_TAGGED : FI_MSG);
	if (x->buf || x->rlen == 0) {
		if (n)
			ptl3_copy(op->buf, x->buf->mem + x->off, n);
		if (x->buf)
			ptl3_ebuf_release_locked(ep, x->buf);
		ptl3_rx_complete_locked(ep, op->context, flags, op->buf, n, x->tag, x->hdr,
					x->rlen > n ? FI_ETRUNC : 0, x->rlen - n, op->want_comp);
		ptl3_op_free_locked(ep, op);
		return 0;
	}
	op->kind = PTL3_OP_PULL;
	op->rlen = x->rlen;
	op->tag = x->tag;
	op->hdr = x->hdr;
	int rc = pull_start_locked(ep, op, x->src, x->hdr, op->buf, n);
	if (rc) {
		ptl3_rx_complete_locked(ep, op->context, flags, op->buf, 0, x->tag, x->hdr, FI_EIO, 0,
					1);
		ptl3_op_free_locked(ep, op);
	}
	return 0;
}

/* an unexpected message x taken off the list for receive op */
static int ux_take_deliver_locked(struct ptl3_ep *ep, struct ptl3_op *op, struct ptl3_ux *x)
{
	ep->st.ux_matched++;
	int r = ptl3_ux_deliver_locked(ep, op, x);
	free(x);
	return r;
}

/* PtlMEMDPost found the unexpected EQ not empty: an event to read, or an
 * unexpected message still arriving (its END owed).  The drain does not
 * drive the NAL (eq_drain_locked): do it here, or in app progress mode a
 * message whose END is owed would never finish and the post would spin. */
static void mdpost_retry_locked(struct ptl3_ep *ep)
{
	ep->st.mdupdate_retries++;
	if (ep->dom->app_progress)
		PtlProgress(ep->dom->ni, 0);
	else
		sched_yield(); /* the progress thread finishes it */
}

/* PtlMEMDPost of a RECV op's ME before the marker, conditional on the
 * unexpected EQ being empty (PTL_MD_NO_UPDATE otherwise) */
static int me_post_locked(struct ptl3_ep *ep, struct ptl3_rxq *q, struct ptl3_op *op)
{
	ptl_md_t md;
	memset(&md, 0, sizeof(md));
	md.start = op->buflen ? (void *)op->buf : (void *)&ptl3_zero_byte;
	md.length = op->buflen;
	md.threshold = 1;
	md.options = PTL_MD_OP_PUT | PTL_MD_TRUNCATE | PTL_MD_EVENT_START_DISABLE |
		     PTL_MD_EVENT_UNLINK_DISABLE;
	md.user_ptr = ptl3_op_uptr(op);
	md.eq_handle = ep->eq;
	ptl_process_id_t mid = op->has_src ? op->src : any_id;
	uint64_t mbits = op->qid == PTL3_Q_TAG ? op->tag & ~PTL3_LONG_BIT : 0;
	uint64_t ibits = op->qid == PTL3_Q_TAG ? (op->ignore | PTL3_LONG_BIT) : ~0ULL;
	/* Without waiting where the NI can (LIB in a NIC): a refusal then comes
	 * as an event in ep->ueq (ptl3_repost.c, which re-posts with the
	 * waiting call).  Where LIB runs in the process both are the same. */
	int rc = (ptl3_repost_waiting(ep) ? PtlMEMDPost : PtlMEMDPostNoWait)(
	    q->marker, mid, mbits, ibits, PTL_UNLINK, PTL_INS_BEFORE, md, PTL_UNLINK, ep->ueq,
	    &op->me, &op->md);
	if (rc == PTL_OK) {
		ep->posts_unsettled = ep->posts_queued;
		op->posted = 1;
		ep->posted_recvs++;
	}
	return rc;
}

/* Before a receive goes into Portals, the soft receives of its queue
 * (ptl3_soft.c), all older, go there first, oldest first: a message must
 * match the oldest receive it fits.  Each post is conditional on the
 * unexpected EQ being empty; the drain before it may complete the oldest
 * one.  Returns 0, or -1 if one could not be posted (the rest stay soft,
 * and so must the new receive). */
static int soft_flush_locked(struct ptl3_ep *ep, struct ptl3_rxq *q)
{
	for (;;) {
		ptl3_rxq_drain_ueq_locked(ep);
		struct ptl3_op *op = q->soft_head;
		if (!op)
			return 0;
		int rc = me_post_locked(ep, q, op);
		if (rc == PTL_MD_NO_UPDATE) {
			mdpost_retry_locked(ep);
			continue;
		}
		if (rc != PTL_OK) {
			PTL3_WARN(FI_LOG_EP_DATA, "PtlMEMDPost (soft receive): %s\n",
				  PtlErrorStr(rc));
			return -1;
		}
		ptl3_soft_pop_locked(q);
		ep->st.soft_flushed++;
	}
}

/* post a RECV op: unexpected list first, then the soft list (small
 * receives, or behind other soft ones) or an ME before the marker,
 * atomically conditional on the unexpected EQ being empty */
static ssize_t post_recv_locked(struct ptl3_ep *ep, struct ptl3_op *op)
{
	struct ptl3_rxq *q = &ep->q[op->qid];
	for (;;) {
		if (ep->posts_unsettled) /* queued posts ran: their refusals are in ep->ueq */
			ptl3_repost_settle_locked(ep);
		ptl3_rxq_drain_ueq_locked(ep);
		struct ptl3_ux *x = ux_find_locked(q, op->has_src, op->src, op->tag, op->ignore, 1);
		if (x)
			return ux_take_deliver_locked(ep, op, x);
		if (ptl3_soft_wanted(ep, q, op->buflen)) {
			if (op->buflen <= ptl3_params.soft_recv_max || soft_flush_locked(ep, q)) {
				ptl3_soft_append_locked(ep, q, op);
				return 0;
			}
			continue; /* flushed: the drain may have brought a match */
		}
		int rc = me_post_locked(ep, q, op);
		if (rc == PTL_MD_NO_UPDATE) {
			mdpost_retry_locked(ep);
			continue;
		}
		if (rc != PTL_OK) {
			PTL3_WARN(FI_LOG_EP_DATA, "PtlMEMDPost: %s\n", PtlErrorStr(rc));
			ptl3_op_free_locked(ep, op);
			return ptl3_ptl_to_fi(rc);
		}
		/* A queued post that a message raced is refused, and the NI
		 * has waited for that (nal/myrinet README §2.2): take the
		 * refusal now and post again, so the message is pulled while
		 * the caller computes, not at its next wait.  Otherwise the
		 * queue is empty here: one ring read. */
		if (ep->posts_queued)
			ptl3_rxq_drain_ueq_locked(ep);
		return 0;
	}
}

/* the op keeps its source and ignore bits from its first post */
ssize_t ptl3_recv_repost_locked(struct ptl3_ep *ep, struct ptl3_op *op)
{
	return post_recv_locked(ep, op);
}

static void mrecv_release_locked(struct ptl3_ep *ep, struct ptl3_op *op)
{
	ptl3_cq_push_locked(ep->rx_cq, op->context, FI_MULTI_RECV, 0, NULL, 0, 0, 0, 0);
	ptl3_op_free_locked(ep, op);
}

/* synchronous pull into a multi-receive buffer (keeps FI_ORDER_SAS) */
static int sync_pull_locked(struct ptl3_ep *ep, const struct ptl3_ux *x, char *dst, size_t n,
			    size_t *got)
{
	struct ptl3_op *s = ptl3_op_alloc_locked(ep, PTL3_OP_SYNC);
	if (!s)
		return -FI_ENOMEM;
	uint32_t idx = s->idx;
	int rc = pull_start_locked(ep, s, x->src, x->hdr, dst, n);
	if (rc) {
		ptl3_op_free_locked(ep, s);
		return rc;
	}
	while (!ep->ops[idx]->done) {
		ptl3_ep_progress_locked(ep);
		if (!ep->ops[idx]->done) {
			ptl3_unlock_data(ep->dom);
			sched_yield();
			ptl3_lock_data(ep->dom);
		}
	}
	s = ep->ops[idx];
	rc = s->done < 0 ? -FI_EIO : 0;
	*got = s->rlen;
	ptl3_op_free_locked(ep, s);
	return rc;
}

static ssize_t post_mrecv_locked(struct ptl3_ep *ep, struct ptl3_op *op)
{
	struct ptl3_rxq *q = &ep->q[PTL3_Q_MSG];
	size_t min = ep->min_multi_recv;
	for (;;) {
		if (ep->posts_unsettled)
			ptl3_repost_settle_locked(ep);
		ptl3_rxq_drain_ueq_locked(ep);
		struct ptl3_ux *x;
		while ((x = q->ux_head) != NULL) {
			size_t space = op->buflen - op->used;
			if (x->rlen > space && op->used > 0) {
				mrecv_release_locked(ep, op);
				return 0;
			}
			ux_find_locked(q, 0, any_id, x->tag, ~0ULL, 1); /* pops the head */
			size_t n = x->rlen < space ? x->rlen : space, got = n;
			char *dst = op->buf + op->used;
			int err = 0;
			ep->st.ux_matched++;
			if (x->buf || x->rlen == 0) {
				if (n)
					memcpy(dst, x->buf->mem + x->off, n);
				if (x->buf)
					ptl3_ebuf_release_locked(ep, x->buf);
			} else {
				if (sync_pull_locked(ep, x, dst, n, &got))
					err = FI_EIO;
			}
			if (!err && x->rlen > n)
				err = FI_ETRUNC;
			op->used += n;
			uint64_t flags = FI_RECV | FI_MSG;
			int last = op->buflen - op->used < min;
			if (last)
				flags |= FI_MULTI_RECV;
			ptl3_rx_complete_locked(ep, op->context, flags, dst, got, 0, x->hdr, err,
						x->rlen - n, 1);
			free(x);
			if (last) {
				ptl3_op_free_locked(ep, op);
				return 0;
			}
		}
		if (op->buflen - op->used < min) {
			mrecv_release_locked(ep, op);
			return 0;
		}
		ptl_md_t md;
		memset(&md, 0, sizeof(md));
		md.start = op->buf + op->used;
		md.length = op->buflen - op->used;
		md.threshold = PTL_MD_THRESH_INF;
		md.max_size = min;
		md.options = PTL_MD_OP_PUT | PTL_MD_MAX_SIZE | PTL_MD_EVENT_START_DISABLE;
		md.user_ptr = ptl3_op_uptr(op);
		md.eq_handle = ep->eq;
		int rc = PtlMEMDPost(q->marker, any_id, 0, ~0ULL, PTL_UNLINK, PTL_INS_BEFORE, md,
				     PTL_UNLINK, ep->ueq, &op->me, &op->md);
		if (rc == PTL_MD_NO_UPDATE) {
			mdpost_retry_locked(ep);
			continue;
		}
		if (rc != PTL_OK) {
			PTL3_WARN(FI_LOG_EP_DATA, "PtlMEMDPost(multi-recv): %s\n", PtlErrorStr(rc));
			ptl3_op_free_locked(ep, op);
			return ptl3_ptl_to_fi(rc);
		}
		op->posted = 1;
		ep->posted_recvs++;
		return 0;
	}
}

static int resolve_src(struct ptl3_ep *ep, fi_addr_t src, int *has_src, ptl_process_id_t *id)
{
	*has_src = 0;
	if (src == FI_ADDR_UNSPEC || src == FI_ADDR_NOTAVAIL || !ep->directed_recv)
		return 0;
	if (ptl3_av_get(ep->av, src, id, NULL))
		return -FI_EINVAL;
	*has_src = 1;
	return 0;
}

/* FI_PEEK / FI_CLAIM / FI_DISCARD on the tagged queue */
static ssize_t peek_claim_locked(struct ptl3_ep *ep, const struct iovec *iov, size_t count,
				 fi_addr_t src, uint64_t tag, uint64_t ignore, void *context,
				 uint64_t flags)
{
	struct ptl3_rxq *q = &ep->q[PTL3_Q_TAG];
	struct fi_context *fctx = context;
	int has_src;
	ptl_process_id_t sid;
	if (resolve_src(ep, src, &has_src, &sid))
		return -FI_EINVAL;
	int want = !ep->rx_selective || (flags & FI_COMPLETION);
	if (flags & FI_PEEK) {
		if (ep->posts_unsettled)
			ptl3_repost_settle_locked(ep);
		ptl3_ep_progress_locked(ep);
		int take = !!(flags & (FI_CLAIM | FI_DISCARD));
		struct ptl3_ux *x = ux_find_locked(q, has_src, sid, tag, ignore, take);
		if (!x) {
			ptl3_cq_push_locked(ep->rx_cq, context, FI_RECV | FI_TAGGED, 0, NULL, 0, tag,
					    FI_ENOMSG, 0);
			return 0;
		}
		if (want) {
			uint64_t f = FI_RECV | FI_TAGGED, d = 0;
			if (x->hdr & PTL3_HDR_HAS_DATA) {
				f |= FI_REMOTE_CQ_DATA;
				d = x->hdr & 0xFFFFFFFFULL;
			}
			ptl3_cq_push_locked(ep->rx_cq, context, f, x->rlen, NULL, d, x->tag, 0, 0);
		}
		if (flags & FI_DISCARD) {
			if (x->buf)
				ptl3_ebuf_release_locked(ep, x->buf);
			else if (x->rlen)
				ptl3_sender_done_locked(ep, x->src, x->hdr, 0);
			free(x);
		} else if (flags & FI_CLAIM) {
			fctx->internal[0] = x;
		}
		return 0;
	}
	/* FI_CLAIM: the message found by an earlier FI_PEEK|FI_CLAIM */
	struct ptl3_ux *x = fctx ? fctx->internal[0] : NULL;
	if (!x)
		return -FI_EINVAL;
	fctx->internal[0] = NULL;
	if (flags & FI_DISCARD) {
		if (x->buf)
			ptl3_ebuf_release_locked(ep, x->buf);
		else if (x->rlen)
			ptl3_sender_done_locked(ep, x->src, x->hdr, 0);
		ptl3_rx_complete_locked(ep, context, FI_RECV | FI_TAGGED, NULL, 0, x->tag, x->hdr, 0,
					0, want);
		free(x);
		return 0;
	}
	struct ptl3_op *op = ptl3_op_alloc_locked(ep, PTL3_OP_RECV);
	if (!op)
		return -FI_ENOMEM;
	op->qid = PTL3_Q_TAG;
	op->context = context;
	op->buf = count ? iov[0].iov_base : NULL;
	op->buflen = count ? iov[0].iov_len : 0;
	op->want_comp = want;
	return ux_take_deliver_locked(ep, op, x);
}

ssize_t ptl3_recv_common(struct ptl3_ep *ep, int qid, const struct iovec *iov, size_t count,
			 fi_addr_t src, uint64_t tag, uint64_t ignore, void *context,
			 uint64_t flags)
{
	ssize_t r;
	if (count > 1)
		return -FI_EINVAL;
	ptl3_lock_data(ep->dom);
	if (!ep->enabled) {
		ptl3_unlock_data(ep->dom);
		return -FI_EOPBADSTATE;
	}
	if (qid == PTL3_Q_TAG && (flags & (FI_PEEK | FI_CLAIM))) {
		r = peek_claim_locked(ep, iov, count, src, tag, ignore, context, flags);
		ptl3_unlock_data(ep->dom);
		return r;
	}
	int has_src;
	ptl_process_id_t sid = any_id;
	if (resolve_src(ep, src, &has_src, &sid)) {
		ptl3_unlock_data(ep->dom);
		return -FI_EINVAL;
	}
	int multi = qid == PTL3_Q_MSG && (flags & FI_MULTI_RECV);
	struct ptl3_op *op = ptl3_op_alloc_locked(ep, multi ? PTL3_OP_MRECV : PTL3_OP_RECV);
	if (!op) {
		ptl3_unlock_data(ep->dom);
		return -FI_EAGAIN;
	}
	op->qid = qid;
	op->context = context;
	op->buf = count ? iov[0].iov_base : NULL;
	op->buflen = count ? iov[0].iov_len : 0;
	op->tag = tag;
	op->has_src = has_src;
	op->src = sid;
	op->ignore = ignore;
	op->want_comp = !ep->rx_selective || (flags & FI_COMPLETION);
	if (multi)
		r = post_mrecv_locked(ep, op);
	else
		r = post_recv_locked(ep, op);
	ptl3_unlock_data(ep->dom);
	return r;
}
