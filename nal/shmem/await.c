/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * await.c - shmem NAL: every operation whose target owes an answer (a put's
 * ACK, a get's or GetPut's REPLY) ends in bounded time, whatever the target
 * does after the request reached its ring.
 *
 * An eager put or a get request is finished for this NAL (p3_lib_finalize)
 * as soon as its record is in the target's ring.  The ACK or REPLY is a
 * separate message the target's LIB sends when it reads the request.  A
 * target SIGKILLed or restarted before that never answers, and nothing else
 * is outstanding to it, so without these records nobody looked at it again
 * and the initiator waited forever (tools/soak: the "stuck" operations to a
 * killed shmem rank).
 *
 * So shm_send() records each such request under the peer's lock (before it
 * is pushed: the answer may be parsed before shm_send() returns).  A record
 * carries its message until the send is finalized with PTL_NI_OK; a send
 * that fails instead reports through its own SEND_END / REPLY_END and its
 * record is dropped.  The ACK or REPLY header, when it arrives, removes the
 * record (recv.c).  A peer with records is "busy", so progress checks its
 * liveness every SHM_CHECK_PERIOD_NS (50 ms): when it is declared dead, closed
 * or replaced by a new incarnation, shm_peer_fail() hands the finalized
 * records to shm_await_lost(), which posts the ACK or REPLY_END with the
 * failure (p3_lib_ack_lost / p3_lib_reply_lost).  Bound: the liveness period
 * after the target's death is noticed (its pid gone, or its successor's
 * segment marking the old one closed).
 *
 * A peer keeps its records in two queues (nal/answer_q.h says why): requests
 * not yet handed over (their message still attached) and requests handed over.
 */
#include "shmem.h"

#include <errno.h>
#include <stdlib.h>

struct shm_await {
	struct p3_aq_node aw_node; /* first: a node is its record */
	struct p3_msg *aw_msg; /* the request until finalized OK, then NULL */
	ptl_handle_md_t aw_md; /* the initiator's MD, echoed by the answer */
	uint64_t aw_offset;    /* the put's link / the get's offset: md_offset */
	int aw_reply;          /* a REPLY is owed (get, GetPut), else an ACK */
};

#define AW(n) ((struct shm_await *)(n))

int shm_await_add_locked(struct shm_peer *peer, struct p3_msg *msg, const struct p3_hdr *hdr)
{
	struct shm_await *a = malloc(sizeof(*a));

	if (!a)
		return -ENOMEM;
	a->aw_msg = msg;
	a->aw_md = hdr->md_handle;
	a->aw_offset = hdr->md_offset;
	a->aw_reply = hdr->type != P3_MSG_PUT;
	p3_aq_append(&peer->pr_await_unsent, &a->aw_node);
	return 0;
}

/* The record of a request not yet handed over, unlinked (oldest first). */
static struct shm_await *take_msg_locked(struct shm_peer *peer, const struct p3_msg *msg)
{
	for (struct p3_aq_node *n = peer->pr_await_unsent.aq_head; n; n = n->aq_next)
		if (AW(n)->aw_msg == msg) {
			p3_aq_unlink(&peer->pr_await_unsent, n);
			return AW(n);
		}
	return NULL;
}

void shm_await_sent_locked(struct shm_peer *peer, struct p3_msg *msg)
{
	struct shm_await *a;

	if (!msg || !(a = take_msg_locked(peer, msg)))
		return;
	a->aw_msg = NULL;
	p3_aq_append(&peer->pr_await_sent, &a->aw_node);
}

void shm_await_drop_locked(struct shm_peer *peer, struct p3_msg *msg)
{
	if (msg)
		free(take_msg_locked(peer, msg));
}

/* The record an ACK or REPLY answers, unlinked: first among the requests
 * handed over, then (an answer parsed before its shm_send() returned) among
 * the others. */
static struct shm_await *take_answered_locked(struct shm_peer *peer, const struct p3_hdr *hdr)
{
	struct p3_aq *qs[2] = {&peer->pr_await_sent, &peer->pr_await_unsent};

	for (int i = 0; i < 2; i++)
		for (struct p3_aq_node *n = qs[i]->aq_head; n; n = n->aq_next) {
			struct shm_await *w = AW(n);
			if (w->aw_reply == (hdr->type == P3_MSG_REPLY) &&
			    w->aw_md == hdr->md_handle && w->aw_offset == hdr->md_offset) {
				p3_aq_unlink(qs[i], n);
				return w;
			}
		}
	return NULL;
}

void shm_await_answered(struct shm_ni *ni, const struct p3_hdr *hdr)
{
	struct shm_peer *peer = shm_peer_lookup(ni, hdr->src, 0);
	struct shm_await *a = NULL;

	if (!peer)
		return;
	pthread_mutex_lock(&peer->pr_lock);
	a = take_answered_locked(peer, hdr);
	if (a)
		shm_peer_set_busy_locked(ni, peer);
	pthread_mutex_unlock(&peer->pr_lock);
	free(a);
}

struct shm_await *shm_await_take_all_locked(struct shm_peer *peer)
{
	/* one list: the handed-over records, then the others */
	p3_aq_splice(&peer->pr_await_sent, &peer->pr_await_unsent);
	struct shm_await *all = AW(peer->pr_await_sent.aq_head);
	peer->pr_await_sent.aq_head = peer->pr_await_sent.aq_tail = NULL;
	return all;
}

void shm_await_lost(struct shm_ni *ni, ptl_process_id_t target, struct shm_await *list,
                    ptl_ni_fail_t status)
{
	while (list) {
		struct shm_await *a = list;
		list = AW(a->aw_node.aq_next);
		/* a record with its message: that send is failed by its own
		 * path (queue, single-copy wait) and reports there */
		if (!a->aw_msg && status != PTL_NI_OK) {
			p3_lib_log(ni->ni_lib, 2, "shmem: the %s %u:%u owed is lost",
			           a->aw_reply ? "REPLY" : "ACK", target.nid, target.pid);
			if (a->aw_reply)
				p3_lib_reply_lost(ni->ni_lib, target, a->aw_md, a->aw_offset,
				                  status);
			else
				p3_lib_ack_lost(ni->ni_lib, target, a->aw_md, a->aw_offset, status);
		}
		free(a);
	}
}
