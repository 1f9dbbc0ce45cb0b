/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_send.c - the send path shared by FI_MSG and FI_TAGGED: fi_inject's
 * staged put (ptl3_stage.c) and the general path (a PT_RDV entry of its
 * own, a put with an ACK). */
#include "config.h"

#include <string.h>

#include "ptl3.h"

static const ptl_process_id_t any_id = {PTL_NID_ANY, PTL_PID_ANY};

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
