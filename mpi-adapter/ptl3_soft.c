/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_soft.c - small tagged receives matched by the provider ("soft"
 * receives) instead of an ME + MD each.
 *
 * Posting a receive as a Portals ME (PtlMEMDPost, conditional on the
 * unexpected EQ being empty) was ~520 of the ~860 instructions of MPICH's
 * 1-byte fi_trecv over shmem, and the ME and MD it created were unlinked
 * again by the arrival.  A small message that matches no ME lands whole in
 * an unexpected buffer anyway (ptl3_rxq.c); its PUT_END on the unexpected
 * EQ is as cheap as the posted buffer's.  So a small receive that finds no
 * unexpected message joins the queue's soft list (no Portals call), and each
 * unexpected PUT_END is first matched against that list, oldest first:
 * a match copies the payload out of the unexpected buffer (or pulls a
 * header-only one) and completes the receive at once, exactly as a receive
 * posted after the message's arrival would (ux_deliver_locked).
 *
 * Match order holds by one rule: while the soft list is not empty, every
 * new receive of the queue joins it.  The MEs in Portals' list are then all
 * older than every soft receive, and Portals tries them first; a message
 * none of them takes reaches the unexpected buffers and the soft list.  A
 * receive larger than FI_PTL3_SOFT_RECV_MAX (a second copy would cost more
 * than the ME, and a message above the eager limit would have to be pulled)
 * first moves the soft list into Portals, oldest first, each by the same
 * conditional PtlMEMDPost (ptl3_recv.c, soft_flush_locked); should that fail,
 * the large receive stays soft too (still in order, only slower).
 *
 * Off for the myrinet NAL (FI_PTL3_SOFT_RECV): its offload mode exists to
 * match on the NIC, without the host.
 */
#include "config.h"

#include "ptl3.h"

int ptl3_soft_wanted(const struct ptl3_ep *ep, const struct ptl3_rxq *q, size_t buflen)
{
	if (!ep->soft_recv || q->qid != PTL3_Q_TAG)
		return 0;
	return q->soft_head || buflen <= ptl3_params.soft_recv_max;
}

void ptl3_soft_append_locked(struct ptl3_ep *ep, struct ptl3_rxq *q, struct ptl3_op *op)
{
	op->soft = 1;
	op->next = NULL;
	if (q->soft_tail)
		q->soft_tail->next = op;
	else
		q->soft_head = op;
	q->soft_tail = op;
	ep->st.soft_posted++;
}

static void soft_unlink(struct ptl3_rxq *q, struct ptl3_op *prev, struct ptl3_op *op)
{
	if (prev)
		prev->next = op->next;
	else
		q->soft_head = op->next;
	if (q->soft_tail == op)
		q->soft_tail = prev;
	op->next = NULL;
	op->soft = 0;
}

struct ptl3_op *ptl3_soft_take_locked(struct ptl3_rxq *q, const struct ptl3_ux *x)
{
	struct ptl3_op *prev = NULL;
	for (struct ptl3_op *op = q->soft_head; op; prev = op, op = op->next)
		if (ptl3_ux_matches(x, op->has_src, op->src, op->tag, op->ignore)) {
			soft_unlink(q, prev, op);
			return op;
		}
	return NULL;
}

struct ptl3_op *ptl3_soft_pop_locked(struct ptl3_rxq *q)
{
	struct ptl3_op *op = q->soft_head;
	if (op)
		soft_unlink(q, NULL, op);
	return op;
}

int ptl3_soft_cancel_locked(struct ptl3_ep *ep, void *context)
{
	for (int i = 0; i < PTL3_NQ; i++) {
		struct ptl3_rxq *q = &ep->q[i];
		struct ptl3_op *prev = NULL;
		for (struct ptl3_op *op = q->soft_head; op; prev = op, op = op->next) {
			if (op->context != context)
				continue;
			soft_unlink(q, prev, op);
			ep->st.cancelled++;
			uint64_t flags = FI_RECV | (op->qid == PTL3_Q_TAG ? FI_TAGGED : FI_MSG);
			ptl3_cq_push_locked(ep->rx_cq, op->context, flags, 0, op->buf, 0, op->tag,
			                    FI_ECANCELED, 0);
			ptl3_op_free_locked(ep, op);
			return 1;
		}
	}
	return 0;
}
