/* SPDX-License-Identifier: BSD-3-Clause */
/* lib-parse.c - the target side: p3_lib_parse() takes an incoming header,
 * matches it, posts START events and tells the NAL where the data goes. */
#include "lib.h"
#include "p3copy.h"

#include <stdlib.h>
#include <string.h>

/* Where p3_lib_parse tells the NAL to put the payload. */
struct p3_parse_out {
	struct p3_msg *msg;
	const struct iovec *iov;
	size_t niov;
	uint64_t offset;
	uint64_t mlen;
};

static void p3_drop_locked(struct p3_lib *lib, const struct p3_hdr *hdr, const char *why)
{
	P3_ASSERT_LOCKED(lib);
	lib->lib_sr[PTL_SR_DROP_COUNT]++;
	lib->lib_sr[PTL_SR_DROP_LENGTH] += hdr->payload_len;
	P3_DBG(lib, PTL_DBG_DROP,
	       "drop %s from %u:%u pt %u ac %u bits %#llx len %llu: %s",
	       p3_msg_type_name(hdr->type), (unsigned)hdr->src.nid, (unsigned)hdr->src.pid,
	       (unsigned)hdr->pt_index, (unsigned)hdr->ac_index,
	       (unsigned long long)hdr->match_bits, (unsigned long long)hdr->payload_len, why);
}

/* 4.1 steps 1-3 for a request: portal and ac index, ACL, matching.  The
 * ME whose MD accepts it (*offset, *mlength set), or NULL with the drop
 * counted. */
static struct p3_me *p3_request_match_locked(struct p3_lib *lib, const struct p3_hdr *hdr,
					     uint64_t *offset, uint64_t *mlength)
{
	struct p3_me *me;

	if (hdr->pt_index > (uint32_t)lib->lib_limits.max_pt_index) {
		p3_drop_locked(lib, hdr, "portal index out of range");
		return NULL;
	}
	if (hdr->ac_index > (uint32_t)lib->lib_limits.max_ac_index) {
		p3_drop_locked(lib, hdr, "access control index out of range");
		return NULL;
	}
	if (!p3_acl_admits_locked(lib, hdr)) {
		p3_drop_locked(lib, hdr, "access control entry refuses it");
		return NULL;
	}
	me = p3_match_locked(lib, hdr, offset, mlength);
	if (!me)
		p3_drop_locked(lib, hdr, "no matching ME/MD accepts it");
	return me;
}

/* 4.1 step 4 on the matched MD: local offset, threshold, inactivity (the
 * caller holds the lock matching ran under). */
static void p3_md_take_locked(struct p3_md *md, uint64_t offset, uint64_t mlength)
{
	if (!(md->md_user.options & PTL_MD_MANAGE_REMOTE))
		md->md_local_offset = offset + mlength;
	p3_md_threshold_dec_locked(md);
	if ((md->md_user.options & PTL_MD_MAX_SIZE) &&
	    md->md_length - md->md_local_offset < md->md_user.max_size) {
		md->md_maxed = 1;
		md->md_armed = 1;
	}
}

/* The event fields a received header gives (its sender's id, uid and jid,
 * portal, match bits, requested length), the rest from the caller, and the
 * next link of the NI: shared by requests, ACKs and REPLYs. */
static void p3_ev_from_hdr_locked(struct p3_lib *lib, struct p3_evinfo *ei,
                                  const struct p3_hdr *hdr, uint64_t mlength, uint64_t offset,
                                  ptl_hdr_data_t hdr_data)
{
	ei->ei_initiator = hdr->src;
	ei->ei_uid = hdr->src_uid;
	ei->ei_jid = hdr->src_jid;
	ei->ei_pt = hdr->pt_index;
	ei->ei_mbits = hdr->match_bits;
	ei->ei_rlength = hdr->rlength;
	ei->ei_mlength = mlength;
	ei->ei_offset = offset;
	ei->ei_hdr_data = hdr_data;
	ei->ei_link = ++lib->lib_link;
}

/* PUT, GET, GETPUT. */
static void p3_parse_request_locked(struct p3_lib *lib, const struct p3_hdr *hdr,
				    struct p3_parse_out *out, struct p3_defer *d)
{
	struct p3_msg *msg;
	struct p3_me *me;
	struct p3_md *md;
	uint64_t offset, mlength;
	ptl_event_kind_t kind;

	me = p3_request_match_locked(lib, hdr, &offset, &mlength);
	if (!me)
		return;
	msg = p3_msg_alloc_locked(lib);
	if (!msg) {
		p3_drop_locked(lib, hdr, "out of message objects");
		return;
	}
	md = me->me_md;

	/* 4.1 step 4: offset, local offset, threshold, inactivity, pending,
	 * START - all under the lock matching runs under. */
	p3_md_take_locked(md, offset, mlength);
	p3_md_op_begin_locked(lib, md);

	msg->msg_md = md;
	p3_ev_from_hdr_locked(lib, &msg->msg_ev, hdr, mlength, offset, hdr->hdr_data);
	msg->msg_peer_md = hdr->md_handle;
	msg->msg_peer_md_offset = hdr->md_offset;
	msg->msg_op = (uint8_t)hdr->type;

	out->msg = msg;
	switch (hdr->type) {
	case P3_MSG_PUT:
		msg->msg_state = P3_MS_PUT_RECV;
		if (md->md_user.options & PTL_MD_ACK_DISABLE)
			msg->msg_peer_md = PTL_MD_NONE;
		out->iov = md->md_iov;
		out->niov = md->md_niov;
		out->offset = offset;
		out->mlen = mlength;
		kind = PTL_EVENT_PUT_START;
		break;
	case P3_MSG_GET:
		msg->msg_state = P3_MS_GET_RECV;
		out->mlen = 0;
		kind = PTL_EVENT_GET_START;
		break;
	default: /* GETPUT: new bytes go to a private buffer first */
		msg->msg_state = P3_MS_GETPUT_RECV;
		msg->msg_buf = malloc(mlength ? 2 * mlength : 1);
		if (!msg->msg_buf) {
			/* Too late to refuse the match: fail the operation. */
			p3_lib_log(lib, 0, "getput from %u:%u: no memory for %llu bytes",
				   (unsigned)hdr->src.nid, (unsigned)hdr->src.pid,
				   (unsigned long long)mlength);
		}
		msg->msg_buf_iov.iov_base = msg->msg_buf;
		msg->msg_buf_iov.iov_len = mlength;
		out->iov = &msg->msg_buf_iov;
		out->niov = 1;
		out->offset = 0;
		out->mlen = msg->msg_buf ? mlength : 0;
		kind = PTL_EVENT_GETPUT_START;
		break;
	}
	p3_eq_post_locked(lib, md, kind, &msg->msg_ev, PTL_NI_OK, d);
	lib->lib_sr[PTL_SR_RECV_COUNT]++;
	lib->lib_sr[PTL_SR_RECV_LENGTH] += hdr->type == P3_MSG_GET ? 0 : mlength;
	P3_DBG(lib, PTL_DBG_PARSE,
	       "%s from %u:%u pt %u bits %#llx matched ME %#x MD %#x offset %llu mlength %llu",
	       p3_msg_type_name(hdr->type), (unsigned)hdr->src.nid, (unsigned)hdr->src.pid,
	       (unsigned)hdr->pt_index, (unsigned long long)hdr->match_bits,
	       (unsigned)me->me_obj.obj_handle, (unsigned)md->md_obj.obj_handle,
	       (unsigned long long)offset, (unsigned long long)mlength);
}

/* An ack names the initiator's MD directly (handle with generation). */
static void p3_parse_ack_locked(struct p3_lib *lib, const struct p3_hdr *hdr, struct p3_defer *d)
{
	struct p3_md *md = p3_obj_lookup_locked(&lib->lib_mds, hdr->md_handle);
	/* P3_HDR_F_FAIL: the target could not place the data */
	ptl_ni_fail_t fail = (hdr->flags & P3_HDR_F_FAIL) ? PTL_NI_FAIL : PTL_NI_OK;
	struct p3_evinfo ei;

	if (!md || !p3_md_active(md)) {
		lib->lib_sr[PTL_SR_ACK_DROPPED]++;
		p3_drop_locked(lib, hdr, md ? "ack for an inactive MD" : "ack for a stale MD handle");
		return;
	}
	p3_md_threshold_dec_locked(md);
	/* mlength: what the target accepted */
	p3_ev_from_hdr_locked(lib, &ei, hdr, hdr->mlength, hdr->remote_offset, 0);
	lib->lib_sr[PTL_SR_RECV_COUNT]++;
	/* 4.7: the put's SEND_END comes before its ACK.  If the NAL has not
	 * finalized the send yet, park the ACK on the send message. */
	for (struct p3_msg *s = md->md_acked_sends; s; s = s->msg_sends_next) {
		if (s->msg_ev.ei_link == (uint32_t)hdr->md_offset && !s->msg_ack_parked) {
			s->msg_ack_ev = ei;
			s->msg_ack_fail = (uint8_t)fail;
			s->msg_ack_parked = 1;
			return;
		}
	}
	p3_eq_post_locked(lib, md, PTL_EVENT_ACK, &ei, fail, d);
	p3_md_maybe_unlink_locked(lib, md, ei.ei_link, d);
}

/* whether the put of md whose ACK is link is still waiting to be finalized */
static int ack_send_unfinalized(const struct p3_md *md, uint64_t link)
{
	for (const struct p3_msg *s = md->md_acked_sends; s; s = s->msg_sends_next)
		if (s->msg_ev.ei_link == (uint32_t)link)
			return 1;
	return 0;
}

/* The event a lost ACK (kind PTL_EVENT_ACK, link the put's) or a lost REPLY
 * (PTL_EVENT_REPLY_END, at offset) stands for, posted on mdh with status. */
static void post_lost(struct p3_lib *lib, ptl_event_kind_t kind, ptl_process_id_t peer,
		      ptl_handle_md_t mdh, uint64_t link, uint64_t offset, ptl_ni_fail_t status)
{
	struct p3_defer d;
	struct p3_md *md;
	struct p3_evinfo ei;

	p3_defer_init(&d);
	p3_lib_lock(lib);
	md = p3_obj_lookup_locked(&lib->lib_mds, mdh);
	/* An MD unlinked meanwhile waits for nothing: no event.  A put not
	 * finalized yet: its SEND_END says it. */
	if (md && p3_md_active(md) &&
	    !(kind == PTL_EVENT_ACK && ack_send_unfinalized(md, link))) {
		memset(&ei, 0, sizeof(ei));
		p3_md_threshold_dec_locked(md);
		ei.ei_initiator = peer;
		ei.ei_offset = offset;
		ei.ei_link = ++lib->lib_link;
		p3_eq_post_locked(lib, md, kind, &ei, status, &d);
		p3_md_maybe_unlink_locked(lib, md, ei.ei_link, &d);
	}
	p3_lib_unlock(lib);
	if (d.df_nev || d.df_nfutex || d.df_nal_wake)
		p3_defer_run(lib, &d);
}

void p3_lib_ack_lost(struct p3_lib *lib, ptl_process_id_t peer, ptl_handle_md_t mdh,
		     uint64_t link, ptl_ni_fail_t status)
{
	post_lost(lib, PTL_EVENT_ACK, peer, mdh, link, 0, status);
}

void p3_lib_reply_lost(struct p3_lib *lib, ptl_process_id_t peer, ptl_handle_md_t mdh,
		       uint64_t offset, ptl_ni_fail_t status)
{
	post_lost(lib, PTL_EVENT_REPLY_END, peer, mdh, 0, offset, status);
}

static void p3_parse_reply_locked(struct p3_lib *lib, const struct p3_hdr *hdr,
				  struct p3_parse_out *out, struct p3_defer *d)
{
	struct p3_md *md = p3_obj_lookup_locked(&lib->lib_mds, hdr->md_handle);
	struct p3_msg *msg;
	uint64_t off, len;

	if (!md || !p3_md_active(md)) {
		lib->lib_sr[PTL_SR_ACK_DROPPED]++;
		p3_drop_locked(lib, hdr,
			       md ? "reply for an inactive MD" : "reply for a stale MD handle");
		return;
	}
	msg = p3_msg_alloc_locked(lib);
	if (!msg) {
		p3_drop_locked(lib, hdr, "out of message objects");
		return;
	}
	/* Replies are truncated to fit. */
	off = hdr->md_offset <= md->md_length ? hdr->md_offset : md->md_length;
	len = hdr->mlength;
	if (len > md->md_length - off)
		len = md->md_length - off;
	p3_md_threshold_dec_locked(md);
	p3_md_op_begin_locked(lib, md);
	msg->msg_state = P3_MS_REPLY_RECV;
	msg->msg_failed = (hdr->flags & P3_HDR_F_FAIL) != 0;
	msg->msg_md = md;
	p3_ev_from_hdr_locked(lib, &msg->msg_ev, hdr, len, off, 0);
	p3_eq_post_locked(lib, md, PTL_EVENT_REPLY_START, &msg->msg_ev, PTL_NI_OK, d);
	lib->lib_sr[PTL_SR_RECV_COUNT]++;
	lib->lib_sr[PTL_SR_RECV_LENGTH] += len;
	out->msg = msg;
	out->iov = md->md_iov;
	out->niov = md->md_niov;
	out->offset = off;
	out->mlen = len;
}

/* nal.h.  The general path for a PUT costs a message object, two lock
 * round trips (parse, finalize) and the NAL's recv() and finalize calls; a
 * small eager payload the NAL holds whole is placed here under the one
 * lock instead (as the GetPut swap is), and both events are posted at
 * once.  Taken only where LIB may write the MD itself (not for an
 * offloading NIC's LIB, lib_md_swap) and for puts without an ACK (4.5:
 * PUT_END comes after the ACK went to the NAL). */
int p3_lib_parse_eager(struct p3_lib *lib, const struct p3_hdr *hdr, const void *payload,
		       uint64_t *delivered)
{
	uint64_t offset, mlength;
	struct p3_evinfo ei;
	struct p3_defer d;
	struct p3_me *me;
	struct p3_md *md;

	if (hdr->type != P3_MSG_PUT || hdr->md_handle != PTL_MD_NONE ||
	    hdr->payload_len > P3_PARSE_COPY_MAX || hdr->payload_len != hdr->rlength ||
	    lib->lib_md_swap)
		return 0;
	p3_lib_lock(lib);
	/* misaddressed or closing: p3_lib_parse counts it */
	if (P3_UNLIKELY(hdr->dst.pid != lib->lib_id.pid || hdr->dst.nid != lib->lib_id.nid ||
			atomic_load_explicit(&lib->lib_closing, memory_order_relaxed))) {
		p3_lib_unlock(lib);
		return 0;
	}
	me = p3_request_match_locked(lib, hdr, &offset, &mlength);
	if (!me) {
		p3_lib_unlock(lib);
		*delivered = 0;
		return 1;
	}
	md = me->me_md;
	p3_defer_init(&d);
	p3_md_take_locked(md, offset, mlength);
	p3_ev_from_hdr_locked(lib, &ei, hdr, mlength, offset, hdr->hdr_data);
	/* nothing to place for 0 bytes (and no call: ~20 instructions) */
	if (mlength && md->md_niov == 1) /* matching kept offset + mlength inside it */
		p3_copy_small((char *)md->md_iov[0].iov_base + offset, payload, (size_t)mlength);
	else if (mlength)
		p3_iov_copy_in(md->md_iov, md->md_niov, offset, payload, mlength);
	lib->lib_sr[PTL_SR_RECV_COUNT]++;
	lib->lib_sr[PTL_SR_RECV_LENGTH] += mlength;
	p3_eq_post_locked(lib, md, PTL_EVENT_PUT_START, &ei, PTL_NI_OK, &d);
	p3_eq_post_locked(lib, md, PTL_EVENT_PUT_END, &ei, PTL_NI_OK, &d);
	P3_DBG(lib, PTL_DBG_PARSE,
	       "PUT from %u:%u pt %u bits %#llx matched ME %#x MD %#x offset %llu mlength %llu "
	       "(placed at once)",
	       (unsigned)hdr->src.nid, (unsigned)hdr->src.pid, (unsigned)hdr->pt_index,
	       (unsigned long long)hdr->match_bits, (unsigned)me->me_obj.obj_handle,
	       (unsigned)md->md_obj.obj_handle, (unsigned long long)offset,
	       (unsigned long long)mlength);
	/* may free md and me: last.  Only an armed MD can go (the call
	 * checks the rest): a persistent MD pays no call. */
	if (P3_UNLIKELY(md->md_armed))
		p3_md_maybe_unlink_locked(lib, md, ei.ei_link, &d);
	p3_lib_unlock(lib);
	if (P3_UNLIKELY(d.df_nev || d.df_nfutex || d.df_nal_wake))
		p3_defer_run(lib, &d);
	*delivered = mlength;
	return 1;
}

void p3_lib_count_drop(struct p3_lib *lib, uint64_t len)
{
	p3_lib_lock(lib);
	lib->lib_sr[PTL_SR_DROP_COUNT]++;
	lib->lib_sr[PTL_SR_DROP_LENGTH] += len;
	p3_lib_unlock(lib);
}

int p3_lib_parse(struct p3_lib *lib, const struct p3_hdr *hdr, void *nal_ctx)
{
	struct p3_parse_out out = {NULL, NULL, 0, 0, 0};
	const struct p3_nal_ops *ops;
	struct p3_defer d;
	void *priv;
	int rc = 0;

	p3_defer_init(&d);
	p3_lib_lock(lib);
	if (P3_UNLIKELY(hdr->dst.pid != lib->lib_id.pid || hdr->dst.nid != lib->lib_id.nid)) {
		p3_drop_locked(lib, hdr, "addressed to another process");
	} else if (P3_UNLIKELY(atomic_load_explicit(&lib->lib_closing, memory_order_relaxed))) {
		p3_drop_locked(lib, hdr, "NI is closing");
	} else {
		switch (hdr->type) {
		case P3_MSG_PUT:
		case P3_MSG_GET:
		case P3_MSG_GETPUT:
			p3_parse_request_locked(lib, hdr, &out, &d);
			break;
		case P3_MSG_ACK:
			p3_parse_ack_locked(lib, hdr, &d);
			break;
		case P3_MSG_REPLY:
			p3_parse_reply_locked(lib, hdr, &out, &d);
			break;
		default:
			p3_drop_locked(lib, hdr, "unknown message type");
			rc = -EPROTO;
			break;
		}
	}
	p3_lib_unlock(lib);
	if (P3_UNLIKELY(d.df_nev || d.df_nfutex || d.df_nal_wake))
		p3_defer_run(lib, &d);

	/* Messages from ourselves come through the loopback NAL. */
	p3_lib_nal_for(lib, hdr->src, &ops, &priv);
	/* Acks complete inside parse: like a drop, recv gets msg == NULL and
	 * has nothing to deliver (an ack carries no payload). */
	if (out.mlen == 0) {
		/* Nothing to write: a zero-length MD may have start == NULL. */
		out.iov = NULL;
		out.niov = 0;
		out.offset = 0;
	}
	ops->recv(priv, out.msg, nal_ctx, out.iov, out.niov, out.offset, out.mlen,
		  hdr->payload_len);
	return rc;
}
