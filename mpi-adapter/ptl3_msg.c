/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_msg.c - the send/receive engine shared by FI_MSG (ptl3_untagged.c)
 * and FI_TAGGED (ptl3_tagged.c), and FI_MULTI_RECV: receive queues (posted
 * MEs | marker | unexpected buffers | overflow ME), the unexpected list,
 * race-free posting with PtlMEMDPost, soft receives' arrival and their
 * move into Portals (ptl3_soft.c). */
#include "config.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "ptl3.h"

char ptl3_zero_byte;

static const ptl_process_id_t any_id = {PTL_NID_ANY, PTL_PID_ANY};

/* ---- unexpected buffers */
static int ebuf_post_locked(struct ptl3_ep *ep, struct ptl3_rxq *q, struct ptl3_ebuf *b)
{
	ptl_md_t md;
	int rc = PtlMEInsert(q->ovf_me, any_id, 0, ~PTL3_LONG_BIT, PTL_UNLINK, PTL_INS_BEFORE, &b->me);
	if (rc != PTL_OK) {
		PTL3_WARN(FI_LOG_EP_CTRL, "PtlMEInsert (unexpected buffer): %s\n", PtlErrorStr(rc));
		return -FI_EIO;
	}
	memset(&md, 0, sizeof(md));
	md.start = b->mem;
	md.length = b->size;
	md.threshold = PTL_MD_THRESH_INF;
	md.max_size = ptl3_params.eager ? ptl3_params.eager : 1;
	md.options = PTL_MD_OP_PUT | PTL_MD_MAX_SIZE | PTL_MD_EVENT_START_DISABLE;
	md.user_ptr = PTL3_UP_MAKE(PTL3_UP_EBUF, q->qid, b->index);
	md.eq_handle = ep->ueq;
	rc = PtlMDAttach(b->me, md, PTL_UNLINK, &b->md);
	if (rc != PTL_OK) {
		PtlMEUnlink(b->me);
		PTL3_WARN(FI_LOG_EP_CTRL, "PtlMDAttach (unexpected buffer): %s\n", PtlErrorStr(rc));
		return -FI_EIO;
	}
	b->linked = 1;
	return 0;
}

static void ebuf_release_locked(struct ptl3_ep *ep, struct ptl3_ebuf *b)
{
	b->refs--;
	if (!b->linked && b->refs == 0 && !ep->closing) {
		ep->st.ebuf_reposts++;
		if (ebuf_post_locked(ep, &ep->q[b->qid], b))
			fprintf(stderr, "ptl3: could not re-post an unexpected buffer\n");
	}
}

int ptl3_rxq_setup_locked(struct ptl3_ep *ep, struct ptl3_rxq *q)
{
	ptl_handle_ni_t ni = ep->dom->ni;
	ptl_md_t md;
	int rc = PtlMEAttach(ni, q->pt, any_id, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &q->marker);
	if (rc != PTL_OK) {
		PTL3_WARN(FI_LOG_EP_CTRL, "PtlMEAttach(marker, pt %u): %s\n", q->pt, PtlErrorStr(rc));
		return -FI_EIO;
	}
	rc = PtlMEAttach(ni, q->pt, any_id, 0, ~0ULL, PTL_RETAIN, PTL_INS_AFTER, &q->ovf_me);
	if (rc != PTL_OK)
		return -FI_EIO;
	memset(&md, 0, sizeof(md));
	md.start = &ptl3_zero_byte;
	md.length = 0;
	md.threshold = PTL_MD_THRESH_INF;
	md.options = PTL_MD_OP_PUT | PTL_MD_TRUNCATE | PTL_MD_EVENT_START_DISABLE;
	md.user_ptr = PTL3_UP_MAKE(PTL3_UP_OVF, q->qid, 0);
	md.eq_handle = ep->ueq;
	rc = PtlMDAttach(q->ovf_me, md, PTL_RETAIN, &q->ovf_md);
	if (rc != PTL_OK) {
		PTL3_WARN(FI_LOG_EP_CTRL, "PtlMDAttach(overflow): %s\n", PtlErrorStr(rc));
		return -FI_EIO;
	}
	q->nebufs = ptl3_params.ebuf_count;
	q->ebufs = calloc((size_t)q->nebufs, sizeof(*q->ebufs));
	if (!q->ebufs)
		return -FI_ENOMEM;
	for (int i = 0; i < q->nebufs; i++) {
		struct ptl3_ebuf *b = &q->ebufs[i];
		b->index = i;
		b->qid = q->qid;
		b->size = ptl3_params.ebuf_size;
		b->mem = malloc(b->size);
		if (!b->mem)
			return -FI_ENOMEM;
		rc = ebuf_post_locked(ep, q, b);
		if (rc)
			return rc;
	}
	return 0;
}

void ptl3_rxq_teardown_locked(struct ptl3_ep *ep, struct ptl3_rxq *q)
{
	for (int i = 0; i < q->nebufs; i++) {
		if (q->ebufs[i].linked)
			PtlMEUnlink(q->ebufs[i].me);
		free(q->ebufs[i].mem);
	}
	free(q->ebufs);
	q->ebufs = NULL;
	q->nebufs = 0;
	PtlMEUnlink(q->ovf_me);
	PtlMEUnlink(q->marker);
	while (q->ux_head) {
		struct ptl3_ux *u = q->ux_head;
		q->ux_head = u->next;
		free(u);
	}
	q->ux_tail = NULL;
	q->soft_head = q->soft_tail = NULL; /* their ops go with the op table */
}

static int ux_deliver_locked(struct ptl3_ep *ep, struct ptl3_op *op, const struct ptl3_ux *x);

/* every unexpected-queue event but the small message's (below): eager
 * buffer unlinks, header-only arrivals, messages no soft receive's head
 * takes (queued as unexpected) */
static __attribute__((noinline)) void ueq_event_rest_locked(struct ptl3_ep *ep,
                                                            const ptl_event_t *ev, uint64_t u)
{
	uint64_t kind = PTL3_UP_KIND(u);
	uint32_t qid = PTL3_UP_GEN(u);
	if (qid >= PTL3_NQ || (kind != PTL3_UP_EBUF && kind != PTL3_UP_OVF))
		return;
	struct ptl3_rxq *q = &ep->q[qid];
	struct ptl3_ebuf *b = NULL;
	if (kind == PTL3_UP_EBUF) {
		uint32_t idx = PTL3_UP_IDX(u);
		if ((int)idx >= q->nebufs)
			return;
		b = &q->ebufs[idx];
		if (ev->type == PTL_EVENT_UNLINK) {
			b->linked = 0;
			if (b->refs == 0) {
				b->refs = 1;
				ebuf_release_locked(ep, b);
			}
			return;
		}
	}
	if (ev->type != PTL_EVENT_PUT_END)
		return;
	if (ev->ni_fail_type != PTL_NI_OK) {
		PTL3_WARN(FI_LOG_EP_DATA, "failed unexpected put from %u:%u ignored\n",
			  ev->initiator.nid, ev->initiator.pid);
		return;
	}
	uint64_t tag = ev->match_bits & ~PTL3_LONG_BIT;
	int whole = ev->mlength == ev->rlength;
	/* we have it whole (or it is empty): its sender need not keep it */
	if (whole)
		ptl3_sender_done_locked(ep, ev->initiator, ev->hdr_data, 1);
	/* a receive the provider matches itself (ptl3_soft.c) takes it first */
	struct ptl3_op *op = NULL;
	struct ptl3_ux m = {NULL, ev->initiator, tag, ev->hdr_data, ev->rlength, ev->mlength, NULL,
			    0};
	if (q->soft_head)
		op = ptl3_soft_take_locked(q, &m);
	if (b && whole) {
		m.buf = b;
		m.off = ev->offset;
		b->refs++;
		ep->st.ux_eager++;
	} else {
		ep->st.ux_header++;
	}
	if (op) {
		ep->st.soft_matched++;
		ux_deliver_locked(ep, op, &m);
		return;
	}
	struct ptl3_ux *x = malloc(sizeof(*x));
	if (!x) {
		fprintf(stderr, "ptl3: FATAL: out of memory queueing an unexpected message\n");
		abort();
	}
	*x = m;
	if (q->ux_tail)
		q->ux_tail->next = x;
	else
		q->ux_head = x;
	q->ux_tail = x;
	q->ux_count++;
}

void ptl3_rxq_ueq_event_locked(struct ptl3_ep *ep, const ptl_event_t *ev, uint64_t u)
{
	/* The small message's path to MPI: whole in an eager buffer and taken
	 * by the oldest soft receive (ptl3_soft.c), copied out at once, the
	 * buffer never referenced (ux_deliver_locked's case).  Apart from the
	 * rest so that it keeps a small frame: ~60 instructions fewer per
	 * message than when both were one function. */
	uint32_t qid = PTL3_UP_GEN(u), idx = PTL3_UP_IDX(u);
	if (PTL3_UP_KIND(u) == PTL3_UP_EBUF && qid < PTL3_NQ && (int)idx < ep->q[qid].nebufs &&
	    ev->type == PTL_EVENT_PUT_END && ev->ni_fail_type == PTL_NI_OK &&
	    ev->mlength == ev->rlength) {
		struct ptl3_rxq *q = &ep->q[qid];
		uint64_t tag = ev->match_bits & ~PTL3_LONG_BIT;
		struct ptl3_op *op = ptl3_soft_take_head_locked(q, ev->initiator, tag);
		if (op) {
			/* we have it whole: its sender need not keep it */
			ptl3_sender_done_locked(ep, ev->initiator, ev->hdr_data, 1);
			ep->st.ux_eager++;
			ep->st.soft_matched++;
			size_t rlen = ev->rlength, n = rlen < op->buflen ? rlen : op->buflen;
			ptl3_copy(op->buf, q->ebufs[idx].mem + ev->offset, n);
			ptl3_rx_complete_locked(ep, op->context, FI_RECV | FI_TAGGED, op->buf, n,
			                        tag, ev->hdr_data, rlen > n ? FI_ETRUNC : 0,
			                        rlen - n, op->want_comp);
			ptl3_op_free_locked(ep, op);
			return;
		}
	}
	ueq_event_rest_locked(ep, ev, u);
}

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
static int ux_deliver_locked(struct ptl3_ep *ep, struct ptl3_op *op, const struct ptl3_ux *x)
{
	size_t n = x->rlen < op->buflen ? x->rlen : op->buflen;
	uint64_t flags = FI_RECV | (op->qid == PTL3_Q_TAG ? FI_TAGGED : FI_MSG);
	if (x->buf || x->rlen == 0) {
		if (n)
			ptl3_copy(op->buf, x->buf->mem + x->off, n);
		if (x->buf)
			ebuf_release_locked(ep, x->buf);
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
	int r = ux_deliver_locked(ep, op, x);
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
					ebuf_release_locked(ep, x->buf);
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
				ebuf_release_locked(ep, x->buf);
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
			ebuf_release_locked(ep, x->buf);
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

/* general send path: a PT_RDV entry of its own (match bits = a new send
 * id) holds the data until the ACK says it all arrived or the receiver
 * pulled it; the put goes out of the same MD */
static int send_md_expose_locked(struct ptl3_ep *ep, struct ptl3_op *op, const void *buf,
				 size_t len)
{
	op->send_id = ep->dom->next_send_id++ & PTL3_SENDID_GENERAL_MASK;
	if (!op->send_id)
		op->send_id = ep->dom->next_send_id++ & PTL3_SENDID_GENERAL_MASK;
	int rc = PtlMEAttach(ep->dom->ni, ep->pt_base + PTL3_PT_RDV, any_id, op->send_id, 0,
			     PTL_UNLINK, PTL_INS_AFTER, &op->me);
	if (rc != PTL_OK) {
		PTL3_WARN(FI_LOG_EP_DATA, "PtlMEAttach(rdv): %s\n", PtlErrorStr(rc));
		return rc;
	}
	ptl_md_t md;
	memset(&md, 0, sizeof(md));
	md.start = len ? (void *)buf : (void *)&ptl3_zero_byte;
	md.length = len;
	md.threshold = 3; /* the put, its ack, one get from the receiver */
	md.options = PTL_MD_OP_GET | PTL_MD_TRUNCATE | PTL_MD_EVENT_START_DISABLE |
		     PTL_MD_EVENT_UNLINK_DISABLE;
	md.user_ptr = ptl3_op_uptr(op);
	md.eq_handle = ep->eq;
	rc = PtlMDAttach(op->me, md, PTL_UNLINK, &op->md);
	if (rc != PTL_OK) {
		PtlMEUnlink(op->me);
		op->me = PTL_INVALID_HANDLE;
	}
	return rc;
}

/* End of a send call that reached Portals: drain, unlock, return r. */
static ssize_t send_out(struct ptl3_ep *ep, ssize_t r)
{
	ptl3_ep_drain_locked(ep);
	ptl3_unlock_data(ep->dom);
	return r;
}

/* Where a send goes and what its header says; every send call starts
 * here.  Takes the lock: 0, or an error with the lock released. */
struct send_dest {
	ptl_process_id_t id;
	ptl_pt_index_t pt;
	uint64_t mbits, hdr;
};
static inline int send_begin(struct ptl3_ep *ep, int qid, size_t len, fi_addr_t dest, uint64_t tag,
                             uint64_t data, int has_data, struct send_dest *d)
{
	if (qid == PTL3_Q_TAG && (tag & PTL3_LONG_BIT))
		return -FI_EINVAL; /* bit 63 is the wire's "long" flag */
	ptl3_lock_data(ep->dom);
	if (!ep->enabled) {
		ptl3_unlock_data(ep->dom);
		return -FI_EOPBADSTATE;
	}
	uint32_t dest_ep;
	if (ptl3_av_get(ep->av, dest, &d->id, &dest_ep)) {
		ptl3_unlock_data(ep->dom);
		return -FI_EINVAL;
	}
	uint64_t long_bit = len > ptl3_params.eager ? PTL3_LONG_BIT : 0;
	d->mbits = qid == PTL3_Q_TAG ? tag | long_bit : long_bit;
	d->hdr = (data & 0xFFFFFFFFULL) | (has_data ? PTL3_HDR_HAS_DATA : 0);
	d->pt = ptl3_rx_pt(ep->pt_base, dest_ep, qid == PTL3_Q_TAG ? PTL3_PT_TAG : PTL3_PT_MSG);
	return 0;
}

/* fi_inject()/fi_tinject() and their data variants, MPICH's small sends:
 * into a stage slot at once (ptl3_stage.c), without the general path's
 * iovec, op slot and context; the general path when no slot is free. */
ssize_t ptl3_inject_common(struct ptl3_ep *ep, int qid, const void *buf, size_t len, fi_addr_t dest,
                           uint64_t tag, uint64_t data, int has_data)
{
	struct send_dest d;
	int r = send_begin(ep, qid, len, dest, tag, data, has_data, &d);
	if (r)
		return r;
	/* the stage writes no completion: only for fi_inject() itself.  The
	 * events already posted are drained after the put (send_out), not
	 * before it: the drain still bounds the EQ (every Portals call gives
	 * the NAL a pass, which may post events), and the message leaves
	 * first. */
	r = ptl3_stage_send_locked(ep, d.id, d.pt, d.mbits, d.hdr, buf, len);
	if (r)
		return send_out(ep, r < 0 ? r : 0);
	ptl3_unlock_data(ep->dom);
	struct iovec iov = {(void *)buf, len};
	return ptl3_send_common(ep, qid, &iov, 1, dest, tag, data, has_data, NULL,
	                        FI_INJECT | PTL3_INJECT_CALL);
}

ssize_t ptl3_send_common(struct ptl3_ep *ep, int qid, const struct iovec *iov, size_t count,
                         fi_addr_t dest, uint64_t tag, uint64_t data, int has_data, void *context,
                         uint64_t flags)
{
	if (count > 1)
		return -FI_EINVAL;
	const void *buf = count ? iov[0].iov_base : NULL;
	size_t len = count ? iov[0].iov_len : 0;
	struct send_dest d;
	int r = send_begin(ep, qid, len, dest, tag, data, has_data, &d);
	if (r)
		return r;
	ptl_process_id_t id = d.id;
	uint64_t hdr = d.hdr;
	struct ptl3_op *op = ptl3_op_alloc_locked(ep, PTL3_OP_SEND);
	if (!op)
		return send_out(ep, -FI_EAGAIN);
	op->qid = qid;
	op->context = context;
	op->len = len;
	op->target = id;
	op->cq_flags = FI_SEND | (qid == PTL3_Q_TAG ? FI_TAGGED : FI_MSG);
	op->want_comp = !(flags & PTL3_INJECT_CALL) && (!ep->tx_selective || (flags & FI_COMPLETION));
	if (flags & FI_INJECT) {
		if (len) {
			buf = ptl3_op_bounce(op, buf, len);
			if (!buf) {
				ptl3_op_free_locked(ep, op);
				ptl3_unlock_data(ep->dom);
				return -FI_EAGAIN;
			}
		}
	}
	int rc = send_md_expose_locked(ep, op, buf, len);
	if (rc != PTL_OK) {
		ptl3_op_free_locked(ep, op);
		return send_out(ep, rc == PTL_NO_SPACE ? -FI_EAGAIN : -FI_EIO);
	}
	hdr |= op->send_id << 32;
	rc = PtlPut(op->md, PTL_ACK_REQ, id, d.pt, 0, d.mbits, 0, hdr);
	if (rc != PTL_OK) {
		PtlMEUnlink(op->me);
		ptl3_op_free_locked(ep, op);
		ptl3_unlock_data(ep->dom);
		PTL3_WARN(FI_LOG_EP_DATA, "PtlPut: %s\n", PtlErrorStr(rc));
		return rc == PTL_NO_SPACE ? -FI_EAGAIN : -FI_EIO;
	}
	ep->outstanding_sends++;
	ep->st.puts++;
	ep->st.bytes_sent += len;
	return send_out(ep, 0);
}
