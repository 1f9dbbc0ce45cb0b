/* SPDX-License-Identifier: BSD-3-Clause */
/* lib-msg.c - message objects and their completion (p3_lib_finalize):
 * END events, acks, get/getput replies, auto-unlink. */
#include "lib.h"

#include <stdlib.h>
#include <string.h>

#define P3_MSG_CHUNK 64

struct p3_msg *p3_msg_alloc_locked(struct p3_lib *lib)
{
	struct p3_msg *msg = lib->lib_msg_free;

	P3_ASSERT_LOCKED(lib);
	if (P3_UNLIKELY(!msg)) {
		/* Grow the pool; messages are never returned to malloc before
		 * NIFini, so the hot path is a free-list pop. */
		struct p3_msg *chunk;

		if (lib->lib_msg_nchunks == lib->lib_msg_chunks_cap) {
			unsigned int cap = lib->lib_msg_chunks_cap ? lib->lib_msg_chunks_cap * 2 : 8;
			void **n = realloc(lib->lib_msg_chunks, cap * sizeof(void *));
			if (!n)
				return NULL;
			lib->lib_msg_chunks = n;
			lib->lib_msg_chunks_cap = cap;
		}
		chunk = calloc(P3_MSG_CHUNK, sizeof(*chunk));
		if (!chunk)
			return NULL;
		lib->lib_msg_chunks[lib->lib_msg_nchunks++] = chunk;
		for (int i = P3_MSG_CHUNK - 1; i >= 0; i--) {
			chunk[i].msg_next = lib->lib_msg_free;
			lib->lib_msg_free = &chunk[i];
		}
		msg = lib->lib_msg_free;
	}
	lib->lib_msg_free = msg->msg_next;
	msg->msg_next = NULL;
	msg->msg_md = NULL;
	msg->msg_buf = NULL;
	msg->msg_on_sends = 0;
	msg->msg_ack_parked = 0;
	msg->msg_ack_fail = PTL_NI_OK;
	msg->msg_failed = 0;
	if (++lib->lib_sr[PTL_SR_MSGS_INFLIGHT] > lib->lib_sr[PTL_SR_MSGS_MAX])
		lib->lib_sr[PTL_SR_MSGS_MAX] = lib->lib_sr[PTL_SR_MSGS_INFLIGHT];
	return msg;
}

void p3_msg_free_locked(struct p3_lib *lib, struct p3_msg *msg)
{
	P3_ASSERT_LOCKED(lib);
	if (P3_UNLIKELY(msg->msg_buf != NULL)) { /* a getput's: a call less for every other */
		free(msg->msg_buf);
		msg->msg_buf = NULL;
	}
	msg->msg_state = P3_MS_FREE;
	msg->msg_next = lib->lib_msg_free;
	lib->lib_msg_free = msg;
	lib->lib_sr[PTL_SR_MSGS_INFLIGHT]--;
}

void p3_msg_pool_fini(struct p3_lib *lib)
{
	for (unsigned int i = 0; i < lib->lib_msg_nchunks; i++) {
		struct p3_msg *chunk = lib->lib_msg_chunks[i];
		for (int j = 0; j < P3_MSG_CHUNK; j++)
			free(chunk[j].msg_buf);
		free(chunk);
	}
	free(lib->lib_msg_chunks);
	lib->lib_msg_chunks = NULL;
	lib->lib_msg_free = NULL;
}

void p3_defer_run(struct p3_lib *lib, struct p3_defer *d)
{
	for (unsigned int i = 0; i < d->df_nfutex; i++)
		p3_futex_wake(&d->df_futex[i]->eqr_write_seq);
	if (d->df_nal_wake)
		lib->lib_nal->wakeup(lib->lib_nal_priv);
	/* DECISION (portals3.h): handlers run at enqueue time, once per event,
	 * without the library lock. */
	for (unsigned int i = 0; i < d->df_nev; i++)
		d->df_ev[i].h(&d->df_ev[i].ev);
}

void p3_md_sends_remove_locked(struct p3_md *md, struct p3_msg *msg)
{
	if (msg->msg_sends_prev)
		msg->msg_sends_prev->msg_sends_next = msg->msg_sends_next;
	else
		md->md_acked_sends = msg->msg_sends_next;
	if (msg->msg_sends_next)
		msg->msg_sends_next->msg_sends_prev = msg->msg_sends_prev;
	msg->msg_on_sends = 0;
}

void p3_md_op_begin_locked(struct p3_lib *lib, struct p3_md *md)
{
	struct p3_eq *eq = md->md_eq;

	P3_ASSERT_LOCKED(lib);
	md->md_pending++;
	if (eq && eq->eq_obj.obj_handle == md->md_user.eq_handle) {
		eq->eq_owed++;
		p3_eq_owed_publish(eq);
	}
}

void p3_md_op_end_locked(struct p3_lib *lib, struct p3_md *md, ptl_event_kind_t kind,
			 const struct p3_evinfo *ei, ptl_ni_fail_t fail, struct p3_defer *d)
{
	struct p3_eq *eq = md->md_eq;

	P3_ASSERT_LOCKED(lib);
	int owed = eq && eq->eq_obj.obj_handle == md->md_user.eq_handle && eq->eq_owed;
	if (owed)
		eq->eq_owed--;
	p3_eq_post_locked(lib, md, kind, ei, fail, d);
	if (owed)
		p3_eq_owed_publish(eq);
	md->md_pending--;
	p3_md_maybe_unlink_locked(lib, md, ei->ei_link, d);
}

/* Target of a put: data is in place.  Ack (if wanted), then PUT_END.  Data
 * the NAL could not place (PTL_NI_FAIL: a NIC's DMA into the MD faulted) is
 * acked too, with P3_HDR_F_FAIL and mlength 0: the initiator waits for the
 * ACK and learns of the failure from it.  A peer gone or an NI closing gets
 * no ack. */
static void p3_finalize_put_recv(struct p3_lib *lib, struct p3_msg *msg, ptl_ni_fail_t status)
{
	struct p3_msg *ack = NULL;
	struct p3_defer d;

	p3_defer_init(&d);
	if ((status == PTL_NI_OK || status == PTL_NI_FAIL) && msg->msg_peer_md != PTL_MD_NONE &&
	    !atomic_load(&lib->lib_closing)) {
		p3_lib_lock(lib);
		ack = p3_msg_alloc_locked(lib);
		if (ack)
			lib->lib_sr[PTL_SR_SEND_COUNT]++;
		p3_lib_unlock(lib);
		if (ack) {
			struct p3_hdr *h = &ack->msg_hdr;
			memset(h, 0, sizeof(*h));
			h->type = P3_MSG_ACK;
			h->src = lib->lib_id;
			h->dst = msg->msg_ev.ei_initiator;
			h->src_uid = lib->lib_uid;
			h->src_jid = lib->lib_jid;
			h->pt_index = msg->msg_ev.ei_pt;
			h->match_bits = msg->msg_ev.ei_mbits;
			h->remote_offset = msg->msg_ev.ei_offset;
			h->rlength = msg->msg_ev.ei_rlength;
			h->mlength = status == PTL_NI_OK ? msg->msg_ev.ei_mlength : 0;
			h->md_handle = msg->msg_peer_md;
			h->md_offset = msg->msg_peer_md_offset; /* initiator's link, echoed */
			h->flags = status == PTL_NI_OK ? 0 : P3_HDR_F_FAIL;
			ack->msg_state = P3_MS_ACK_SEND;
			/* 4.5: PUT_END comes after the ack was handed to the NAL. */
			p3_lib_send(lib, ack, NULL, 0, 0, 0);
		} else {
			p3_lib_log(lib, 1, "no memory for an ack to %u:%u: ack not sent",
				   (unsigned)msg->msg_ev.ei_initiator.nid,
				   (unsigned)msg->msg_ev.ei_initiator.pid);
		}
	}
	p3_lib_lock(lib);
	p3_md_op_end_locked(lib, msg->msg_md, PTL_EVENT_PUT_END, &msg->msg_ev, status, &d);
	p3_msg_free_locked(lib, msg);
	p3_lib_unlock(lib);
	if (p3_defer_pending(&d))
		p3_defer_run(lib, &d);
}

/* Target of a get or getput: build and send the reply from `iov`. */
static void p3_send_reply(struct p3_lib *lib, struct p3_msg *msg, const struct iovec *iov,
			  size_t niov, uint64_t offset)
{
	struct p3_hdr *h = &msg->msg_hdr;

	memset(h, 0, sizeof(*h));
	h->type = P3_MSG_REPLY;
	h->src = lib->lib_id;
	h->dst = msg->msg_ev.ei_initiator;
	h->src_uid = lib->lib_uid;
	h->src_jid = lib->lib_jid;
	h->pt_index = msg->msg_ev.ei_pt;
	h->match_bits = msg->msg_ev.ei_mbits;
	h->remote_offset = msg->msg_ev.ei_offset;
	h->rlength = msg->msg_ev.ei_rlength;
	h->mlength = msg->msg_ev.ei_mlength;
	h->payload_len = msg->msg_ev.ei_mlength;
	h->md_handle = msg->msg_peer_md;
	h->md_offset = msg->msg_peer_md_offset;
	h->flags = msg->msg_failed ? P3_HDR_F_FAIL : 0;
	msg->msg_state = P3_MS_REPLY_SEND;
	p3_lib_send(lib, msg, iov, niov, offset, msg->msg_ev.ei_mlength);
}

/* Target of a getput: the new bytes are in msg_buf.  Swap them with the MD's
 * under the lock (atomic with respect to other getputs and to matching), then
 * reply with the old bytes.  This is the one place LIB touches application
 * memory itself rather than through a NAL.  When an offloading NIC's swap
 * fails (its DMA of the MD), the reply carries no data and P3_HDR_F_FAIL:
 * both sides' END events say PTL_NI_FAIL. */
static void p3_finalize_getput_recv(struct p3_lib *lib, struct p3_msg *msg)
{
	struct p3_md *md = msg->msg_md;
	uint64_t len = msg->msg_ev.ei_mlength;
	char *newb = msg->msg_buf;
	char *oldb = newb + len;

	p3_lib_lock(lib);
	if (lib->lib_md_swap) {
		/* an offloading NIC: the MD is another process's memory */
		if (lib->lib_md_swap(lib, md->md_iov, md->md_niov, msg->msg_ev.ei_offset, oldb,
				     newb, len) != 0)
			msg->msg_failed = 1;
	} else {
		p3_iov_copy_out(md->md_iov, md->md_niov, msg->msg_ev.ei_offset, oldb, len);
		p3_iov_copy_in(md->md_iov, md->md_niov, msg->msg_ev.ei_offset, newb, len);
	}
	p3_lib_unlock(lib);
	if (P3_UNLIKELY(msg->msg_failed)) {
		msg->msg_ev.ei_mlength = 0;
		p3_send_reply(lib, msg, NULL, 0, 0);
		return;
	}
	msg->msg_buf_iov.iov_base = oldb;
	msg->msg_buf_iov.iov_len = len;
	p3_send_reply(lib, msg, &msg->msg_buf_iov, 1, 0);
}

void p3_lib_send_failed(struct p3_lib *lib, struct p3_msg *msg)
{
	if (msg->msg_state != P3_MS_REPLY_SEND || msg->msg_failed) {
		p3_lib_finalize(lib, msg, PTL_NI_FAIL);
		return;
	}
	p3_lib_log(lib, 2, "reply to %u:%u could not be sent; a failed reply goes instead",
		   (unsigned)msg->msg_ev.ei_initiator.nid, (unsigned)msg->msg_ev.ei_initiator.pid);
	msg->msg_failed = 1;
	msg->msg_ev.ei_mlength = 0;
	p3_send_reply(lib, msg, NULL, 0, 0);
}

void p3_lib_finalize(struct p3_lib *lib, struct p3_msg *msg, ptl_ni_fail_t status)
{
	struct p3_defer d;
	struct p3_md *md = msg->msg_md;

	p3_defer_init(&d);
	switch (msg->msg_state) {
	case P3_MS_PUT_SEND:
		p3_lib_lock(lib);
		if (msg->msg_on_sends)
			p3_md_sends_remove_locked(md, msg);
		if (P3_UNLIKELY(msg->msg_ack_parked)) {
			/* SEND_END, then the ACK that overtook it, then UNLINK. */
			struct p3_eq *eq = md->md_eq;
			int owed = eq && eq->eq_obj.obj_handle == md->md_user.eq_handle &&
				   eq->eq_owed;
			if (owed)
				eq->eq_owed--;
			p3_eq_post_locked(lib, md, PTL_EVENT_SEND_END, &msg->msg_ev, status, &d);
			p3_eq_post_locked(lib, md, PTL_EVENT_ACK, &msg->msg_ack_ev,
					  (ptl_ni_fail_t)msg->msg_ack_fail, &d);
			if (owed)
				p3_eq_owed_publish(eq);
			md->md_pending--;
			p3_md_maybe_unlink_locked(lib, md, msg->msg_ack_ev.ei_link, &d);
		} else {
			p3_md_op_end_locked(lib, md, PTL_EVENT_SEND_END, &msg->msg_ev, status, &d);
		}
		p3_msg_free_locked(lib, msg);
		p3_lib_unlock(lib);
		break;
	case P3_MS_GETPUT_SEND:
		p3_lib_lock(lib);
		p3_md_op_end_locked(lib, md, PTL_EVENT_SEND_END, &msg->msg_ev, status, &d);
		p3_msg_free_locked(lib, msg);
		p3_lib_unlock(lib);
		break;
	case P3_MS_GET_SEND:
		p3_lib_lock(lib);
		if (status != PTL_NI_OK) {
			/* No reply will come: report the failure where the
			 * application waits for the reply, and count it. */
			p3_md_threshold_dec_locked(md);
			p3_md_op_end_locked(lib, md, PTL_EVENT_REPLY_END, &msg->msg_ev, status,
					    &d);
		} else {
			/* the request's hold on the MD ends; no event */
			struct p3_eq *eq = md->md_eq;
			if (eq && eq->eq_obj.obj_handle == md->md_user.eq_handle && eq->eq_owed) {
				eq->eq_owed--;
				p3_eq_owed_publish(eq);
			}
			md->md_pending--;
			p3_md_maybe_unlink_locked(lib, md, msg->msg_ev.ei_link, &d);
		}
		p3_msg_free_locked(lib, msg);
		p3_lib_unlock(lib);
		break;
	case P3_MS_ACK_SEND:
		p3_lib_lock(lib);
		p3_msg_free_locked(lib, msg);
		p3_lib_unlock(lib);
		break;
	case P3_MS_PUT_RECV:
		p3_finalize_put_recv(lib, msg, status);
		return;
	case P3_MS_GET_RECV:
		if (status == PTL_NI_OK && !atomic_load(&lib->lib_closing)) {
			p3_send_reply(lib, msg, md->md_iov, md->md_niov, msg->msg_ev.ei_offset);
			return;
		}
		p3_lib_lock(lib);
		p3_md_op_end_locked(lib, md, PTL_EVENT_GET_END, &msg->msg_ev,
				    status == PTL_NI_OK ? PTL_NI_UNLINKED : status, &d);
		p3_msg_free_locked(lib, msg);
		p3_lib_unlock(lib);
		break;
	case P3_MS_GETPUT_RECV:
		if (status == PTL_NI_OK && msg->msg_buf && !atomic_load(&lib->lib_closing)) {
			p3_finalize_getput_recv(lib, msg);
			return;
		}
		p3_lib_lock(lib);
		p3_md_op_end_locked(lib, md, PTL_EVENT_GETPUT_END, &msg->msg_ev,
				    status == PTL_NI_OK ? PTL_NI_FAIL : status, &d);
		p3_msg_free_locked(lib, msg);
		p3_lib_unlock(lib);
		break;
	case P3_MS_REPLY_SEND:
		if (P3_UNLIKELY(msg->msg_failed) && status == PTL_NI_OK)
			status = PTL_NI_FAIL; /* the getput's swap failed: no data went */
		p3_lib_lock(lib);
		lib->lib_sr[PTL_SR_SEND_COUNT]++;
		lib->lib_sr[PTL_SR_SEND_LENGTH] += msg->msg_ev.ei_mlength;
		p3_md_op_end_locked(lib, md,
				    msg->msg_op == P3_MSG_GETPUT ? PTL_EVENT_GETPUT_END
								 : PTL_EVENT_GET_END,
				    &msg->msg_ev, status, &d);
		p3_msg_free_locked(lib, msg);
		p3_lib_unlock(lib);
		break;
	case P3_MS_REPLY_RECV:
		if (P3_UNLIKELY(msg->msg_failed) && status == PTL_NI_OK)
			status = PTL_NI_FAIL; /* the target said so (P3_HDR_F_FAIL) */
		p3_lib_lock(lib);
		p3_md_op_end_locked(lib, md, PTL_EVENT_REPLY_END, &msg->msg_ev, status, &d);
		p3_msg_free_locked(lib, msg);
		p3_lib_unlock(lib);
		break;
	default:
		p3_lib_log(lib, 0, "p3_lib_finalize: message %p in state %u: NAL finalized it twice?",
			   (void *)msg, (unsigned)msg->msg_state);
		return;
	}
	if (p3_defer_pending(&d))
		p3_defer_run(lib, &d);
}
