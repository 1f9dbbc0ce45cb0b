/* SPDX-License-Identifier: BSD-3-Clause */
/* lib-move.c - the initiator side of data movement: PtlPut, PtlGet,
 * PtlGetPut (and their Region variants). */
#include "lib.h"

#include <string.h>

void p3_lib_send(struct p3_lib *lib, struct p3_msg *msg, const struct iovec *iov, size_t niov,
		 uint64_t offset, uint64_t len)
{
	const struct p3_nal_ops *ops;
	void *priv;
	int rc;

	p3_lib_nal_for(lib, msg->msg_hdr.dst, &ops, &priv);
	if (len == 0) {
		/* Nothing to read: a zero-length MD may have start == NULL. */
		iov = NULL;
		niov = 0;
		offset = 0;
	}
	P3_DBG(lib, PTL_DBG_REQUEST, "send %s to %u:%u len %llu", p3_msg_type_name(msg->msg_hdr.type),
	       (unsigned)msg->msg_hdr.dst.nid, (unsigned)msg->msg_hdr.dst.pid,
	       (unsigned long long)len);
	/* msg may be finalized (and freed) before send() returns: don't touch
	 * it afterwards unless send failed. */
	rc = ops->send(priv, msg, &msg->msg_hdr, iov, niov, offset, len);
	if (P3_UNLIKELY(rc < 0)) {
		p3_lib_log(lib, 2, "send of %s to %u:%u failed: %s",
			   p3_msg_type_name(msg->msg_hdr.type), (unsigned)msg->msg_hdr.dst.nid,
			   (unsigned)msg->msg_hdr.dst.pid, strerror(-rc));
		p3_lib_send_failed(lib, msg);
	}
}

static inline void p3_hdr_fill(struct p3_lib *lib, struct p3_hdr *h, uint32_t type,
			       ptl_process_id_t target, ptl_pt_index_t pt, ptl_ac_index_t ac,
			       ptl_match_bits_t mbits, ptl_size_t remote_offset)
{
	h->type = type;
	h->src = lib->lib_id;
	h->dst = target;
	h->src_uid = lib->lib_uid;
	h->src_jid = lib->lib_jid;
	h->pt_index = pt;
	h->ac_index = ac;
	h->match_bits = mbits;
	h->remote_offset = remote_offset;
	h->flags = 0;
}

/* Resolve the region [off, off+len) of an MD for sending.  whole: all of it. */
static inline int p3_md_region(const struct p3_md *md, int whole, ptl_size_t *off,
			       ptl_size_t *len)
{
	if (whole) {
		*off = 0;
		*len = md->md_length;
		return PTL_OK;
	}
	if (*off > md->md_length || *len > md->md_length - *off)
		return PTL_MD_ILLEGAL;
	return PTL_OK;
}

/* The MD of a put checked for sending (under the lock): the MD, or NULL
 * with *rc set. */
static struct p3_md *p3_put_md_locked(struct p3_lib *lib, ptl_handle_md_t mdh, int whole,
				      ptl_size_t *local_offset, ptl_size_t *length, int *rc)
{
	struct p3_md *md = p3_obj_lookup_locked(&lib->lib_mds, mdh);

	if (P3_UNLIKELY(!md)) {
		*rc = PTL_MD_INVALID;
		return NULL;
	}
	/* DECISION: an inactive MD cannot send (PTL_MD_ILLEGAL). */
	if (P3_UNLIKELY(!p3_md_active(md))) {
		*rc = PTL_MD_ILLEGAL;
		return NULL;
	}
	*rc = p3_md_region(md, whole, local_offset, length);
	return *rc == PTL_OK ? md : NULL;
}

/* 1 if a put from md posts no event when it succeeds (p3_eq_post_locked's
 * rules for SEND_START and SEND_END) and counts nothing against a
 * threshold: nothing in LIB waits for its end. */
static inline int p3_put_is_silent(const struct p3_md *md)
{
	unsigned int opt = md->md_user.options;
	const struct p3_eq *eq = md->md_eq;

	if (md->md_user.threshold != PTL_MD_THRESH_INF || md->md_niov != 1)
		return 0;
	if (!eq || eq->eq_obj.obj_handle != md->md_user.eq_handle)
		return 1; /* no EQ (or freed under the MD) */
	if (opt & PTL_MD_EVENT_SUCCESS_DISABLE)
		return 1;
	return (opt & PTL_MD_EVENT_START_DISABLE) && (opt & PTL_MD_EVENT_END_DISABLE);
}

/* A silent put into a NAL that takes it whole at once (nal.h send_now):
 * no message object, no finalize and its second lock round trip.  Called
 * locked, returns unlocked: 1 if the NAL took it, 0 if the general path
 * must send it (the send counters are already counted then). */
static int p3_put_now(struct p3_lib *lib, const struct p3_nal_ops *ops, void *priv,
		      const struct p3_md *md, ptl_size_t local_offset, ptl_size_t length,
		      ptl_process_id_t target, ptl_pt_index_t pt, ptl_ac_index_t ac,
		      ptl_match_bits_t mbits, ptl_size_t remote_offset, ptl_hdr_data_t hdr_data)
{
	struct iovec iov = md->md_iov[0]; /* md may go once unlocked */
	struct p3_hdr h;

	p3_hdr_fill(lib, &h, P3_MSG_PUT, target, pt, ac, mbits, remote_offset);
	h.hdr_data = hdr_data;
	h.rlength = length;
	h.mlength = 0;
	h.payload_len = length;
	h.md_offset = 0;
	h.md_handle = PTL_MD_NONE;
	lib->lib_sr[PTL_SR_SEND_COUNT]++;
	lib->lib_sr[PTL_SR_SEND_LENGTH] += length;
	p3_lib_unlock(lib);
	P3_DBG(lib, PTL_DBG_REQUEST, "send PUT to %u:%u len %llu (at once)", (unsigned)target.nid,
	       (unsigned)target.pid, (unsigned long long)length);
	return ops->send_now(priv, &h, length ? &iov : NULL, length ? 1 : 0,
			     length ? local_offset : 0, length) > 0;
}

int p3_lib_put(struct p3_lib *lib, ptl_handle_md_t mdh, int whole, ptl_size_t local_offset,
	       ptl_size_t length, ptl_ack_req_t ack, ptl_process_id_t target, ptl_pt_index_t pt,
	       ptl_ac_index_t ac, ptl_match_bits_t mbits, ptl_size_t remote_offset,
	       ptl_hdr_data_t hdr_data)
{
	struct p3_defer d;
	struct p3_msg *msg;
	struct p3_md *md;
	struct p3_hdr *h;
	ptl_size_t counted = 0; /* send counters already counted, + 1 */
	int rc;

	p3_lib_lock(lib);
	md = p3_put_md_locked(lib, mdh, whole, &local_offset, &length, &rc);
	if (P3_UNLIKELY(!md))
		goto out_unlock;
	if (ack != PTL_ACK_REQ && p3_put_is_silent(md)) {
		const struct p3_nal_ops *ops;
		void *priv;

		p3_lib_nal_for(lib, target, &ops, &priv);
		if (ops->send_now) {
			if (p3_put_now(lib, ops, priv, md, local_offset, length, target, pt, ac,
				       mbits, remote_offset, hdr_data))
				return PTL_OK;
			/* the general path, from the start: the MD was unlocked */
			counted = length + 1;
			p3_lib_lock(lib);
			md = p3_put_md_locked(lib, mdh, whole, &local_offset, &length, &rc);
			if (P3_UNLIKELY(!md))
				goto out_uncount;
		}
	}
	msg = p3_msg_alloc_locked(lib);
	if (P3_UNLIKELY(!msg)) {
		rc = PTL_NO_SPACE;
		goto out_uncount;
	}
	msg->msg_state = P3_MS_PUT_SEND;
	msg->msg_md = md;
	msg->msg_ev.ei_initiator = lib->lib_id;
	msg->msg_ev.ei_uid = lib->lib_uid;
	msg->msg_ev.ei_jid = lib->lib_jid;
	msg->msg_ev.ei_pt = pt;
	msg->msg_ev.ei_mbits = mbits;
	msg->msg_ev.ei_rlength = length;
	msg->msg_ev.ei_mlength = length;
	msg->msg_ev.ei_offset = local_offset;
	msg->msg_ev.ei_hdr_data = hdr_data;
	msg->msg_ev.ei_link = ++lib->lib_link;

	h = &msg->msg_hdr;
	p3_hdr_fill(lib, h, P3_MSG_PUT, target, pt, ac, mbits, remote_offset);
	h->hdr_data = hdr_data;
	h->rlength = length;
	h->mlength = 0;
	h->payload_len = length;
	h->md_offset = 0;
	/* DECISION: acks are requested even if this MD has no EQ. */
	h->md_handle = ack == PTL_ACK_REQ ? mdh : PTL_MD_NONE;
	if (ack == PTL_ACK_REQ) {
		/* md_offset (unused by a put) carries our link; the target
		 * echoes it in the ack so the ACK event can be ordered after
		 * this put's SEND_END. */
		h->md_offset = msg->msg_ev.ei_link;
		msg->msg_sends_prev = NULL;
		msg->msg_sends_next = md->md_acked_sends;
		if (md->md_acked_sends)
			md->md_acked_sends->msg_sends_prev = msg;
		md->md_acked_sends = msg;
		msg->msg_on_sends = 1;
	}

	p3_defer_init(&d);
	p3_md_threshold_dec_locked(md);
	p3_md_op_begin_locked(lib, md);
	p3_eq_post_locked(lib, md, PTL_EVENT_SEND_START, &msg->msg_ev, PTL_NI_OK, &d);
	if (!counted) {
		lib->lib_sr[PTL_SR_SEND_COUNT]++;
		lib->lib_sr[PTL_SR_SEND_LENGTH] += length;
	}
	p3_lib_unlock(lib);
	if (P3_UNLIKELY(d.df_nev || d.df_nfutex || d.df_nal_wake))
		p3_defer_run(lib, &d);
	p3_lib_send(lib, msg, md->md_iov, md->md_niov, local_offset, length);
	return PTL_OK;

out_uncount:
	if (counted) {
		lib->lib_sr[PTL_SR_SEND_COUNT]--;
		lib->lib_sr[PTL_SR_SEND_LENGTH] -= counted - 1;
	}
out_unlock:
	p3_lib_unlock(lib);
	return rc;
}

int p3_lib_get(struct p3_lib *lib, ptl_handle_md_t mdh, int whole, ptl_size_t local_offset,
	       ptl_size_t length, ptl_process_id_t target, ptl_pt_index_t pt, ptl_ac_index_t ac,
	       ptl_match_bits_t mbits, ptl_size_t remote_offset)
{
	struct p3_msg *msg;
	struct p3_md *md;
	struct p3_hdr *h;
	int rc;

	p3_lib_lock(lib);
	md = p3_obj_lookup_locked(&lib->lib_mds, mdh);
	if (P3_UNLIKELY(!md)) {
		rc = PTL_MD_INVALID;
		goto out_unlock;
	}
	if (P3_UNLIKELY(!p3_md_active(md))) {
		rc = PTL_MD_ILLEGAL;
		goto out_unlock;
	}
	rc = p3_md_region(md, whole, &local_offset, &length);
	if (P3_UNLIKELY(rc != PTL_OK))
		goto out_unlock;
	msg = p3_msg_alloc_locked(lib);
	if (P3_UNLIKELY(!msg)) {
		rc = PTL_NO_SPACE;
		goto out_unlock;
	}
	msg->msg_state = P3_MS_GET_SEND;
	msg->msg_md = md;
	/* Only used if the request fails (REPLY_END with ni_fail_type). */
	msg->msg_ev.ei_initiator = target;
	msg->msg_ev.ei_uid = lib->lib_uid;
	msg->msg_ev.ei_jid = lib->lib_jid;
	msg->msg_ev.ei_pt = pt;
	msg->msg_ev.ei_mbits = mbits;
	msg->msg_ev.ei_rlength = length;
	msg->msg_ev.ei_mlength = 0;
	msg->msg_ev.ei_offset = local_offset;
	msg->msg_ev.ei_hdr_data = 0;
	msg->msg_ev.ei_link = ++lib->lib_link;

	h = &msg->msg_hdr;
	p3_hdr_fill(lib, h, P3_MSG_GET, target, pt, ac, mbits, remote_offset);
	h->hdr_data = 0;
	h->rlength = length;
	h->mlength = 0;
	h->payload_len = 0;
	h->md_handle = mdh;
	h->md_offset = local_offset;

	/* Sending a get request does not count against the threshold; the
	 * reply will.  The request holds the MD until the NAL is done. */
	p3_md_op_begin_locked(lib, md);
	lib->lib_sr[PTL_SR_SEND_COUNT]++;
	p3_lib_unlock(lib);
	p3_lib_send(lib, msg, NULL, 0, 0, 0);
	return PTL_OK;

out_unlock:
	p3_lib_unlock(lib);
	return rc;
}

int p3_lib_getput(struct p3_lib *lib, ptl_handle_md_t get_mdh, ptl_handle_md_t put_mdh,
		  ptl_process_id_t target, ptl_pt_index_t pt, ptl_ac_index_t ac,
		  ptl_match_bits_t mbits, ptl_size_t remote_offset, ptl_hdr_data_t hdr_data)
{
	struct p3_md *gmd, *pmd;
	struct p3_defer d;
	struct p3_msg *msg;
	struct p3_hdr *h;
	int rc;

	p3_defer_init(&d);
	p3_lib_lock(lib);
	gmd = p3_obj_lookup_locked(&lib->lib_mds, get_mdh);
	pmd = p3_obj_lookup_locked(&lib->lib_mds, put_mdh);
	if (!gmd || !pmd) {
		rc = PTL_MD_INVALID;
		goto out_unlock;
	}
	if (!p3_md_active(gmd) || !p3_md_active(pmd) ||
	    pmd->md_length > (uint64_t)lib->lib_limits.max_getput_md) {
		rc = PTL_MD_ILLEGAL;
		goto out_unlock;
	}
	msg = p3_msg_alloc_locked(lib);
	if (!msg) {
		rc = PTL_NO_SPACE;
		goto out_unlock;
	}
	msg->msg_state = P3_MS_GETPUT_SEND;
	msg->msg_md = pmd;
	msg->msg_ev.ei_initiator = lib->lib_id;
	msg->msg_ev.ei_uid = lib->lib_uid;
	msg->msg_ev.ei_jid = lib->lib_jid;
	msg->msg_ev.ei_pt = pt;
	msg->msg_ev.ei_mbits = mbits;
	msg->msg_ev.ei_rlength = pmd->md_length;
	msg->msg_ev.ei_mlength = pmd->md_length;
	msg->msg_ev.ei_offset = 0;
	msg->msg_ev.ei_hdr_data = hdr_data;
	msg->msg_ev.ei_link = ++lib->lib_link;

	h = &msg->msg_hdr;
	p3_hdr_fill(lib, h, P3_MSG_GETPUT, target, pt, ac, mbits, remote_offset);
	h->hdr_data = hdr_data;
	h->rlength = pmd->md_length;
	h->mlength = 0;
	h->payload_len = pmd->md_length;
	h->md_handle = get_mdh; /* the reply lands here, at offset 0 */
	h->md_offset = 0;

	p3_md_threshold_dec_locked(pmd);
	p3_md_op_begin_locked(lib, pmd);
	p3_eq_post_locked(lib, pmd, PTL_EVENT_SEND_START, &msg->msg_ev, PTL_NI_OK, &d);
	lib->lib_sr[PTL_SR_SEND_COUNT]++;
	lib->lib_sr[PTL_SR_SEND_LENGTH] += pmd->md_length;
	p3_lib_unlock(lib);
	p3_defer_run(lib, &d);
	p3_lib_send(lib, msg, pmd->md_iov, pmd->md_niov, 0, h->payload_len);
	return PTL_OK;

out_unlock:
	p3_lib_unlock(lib);
	return rc;
}
