/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_rxq.c - the receive queues of FI_MSG and FI_TAGGED (posted MEs |
 * marker | unexpected buffers | overflow ME): their setup and teardown, the
 * unexpected buffers, and what arrives on the unexpected EQ (the small
 * message a soft receive takes, ptl3_soft.c; everything else queued as
 * unexpected).  Posting receives: ptl3_recv.c; sends: ptl3_send.c. */
#include "config.h"

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

void ptl3_ebuf_repost_locked(struct ptl3_ep *ep, struct ptl3_ebuf *b)
{
	ep->st.ebuf_reposts++;
	if (ebuf_post_locked(ep, &ep->q[b->qid], b))
		fprintf(stderr, "ptl3: could not re-post an unexpected buffer\n");
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
				ptl3_ebuf_release_locked(ep, b);
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
		ptl3_ux_deliver_locked(ep, op, &m);
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
	 * buffer never referenced (ptl3_ux_deliver_locked's case).  Apart from the
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
