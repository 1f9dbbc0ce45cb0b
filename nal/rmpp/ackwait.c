/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ackwait.c - rmpp NALs: a put that asked for an ACK completes or fails in
 * bounded time whatever its target does after receiving it.
 *
 * rmpp finishes a put (tx_done) once the target's rmpp has the data; the
 * Portals ACK is a separate message the target's LIB sends later.  If the
 * target then dies, closes or restarts before that ACK leaves, nothing in
 * rmpp is unfinished for that peer, so without help nobody would notice
 * and the initiator would wait for the ACK forever.  So every put with
 * an ACK is recorded here from send() until its ACK is parsed; while a
 * peer has records the rmpp connection is watched (rmpp_peer_watch: kept
 * under keepalive), and the peer_event upcall (dead after DEAD_TIMEOUTS
 * probes spanning P3_RMPP_DEAD_MIN_US, closed, reset, restarted) ends each
 * finalized record's wait with p3_lib_ack_lost(): the put's ACK event with
 * the failure.  A record whose put is not finalized yet is only dropped:
 * rmpp fails that put itself, so its SEND_END carries the failure.
 *
 * Records live in two queues per NAL instance under a leaf lock -- not yet
 * finalized, finalized; nal/answer_q.h says why -- and LIB is called only
 * after the lock is dropped.
 *
 * Gets and GetPuts are recorded the same way: their REPLY is a message the
 * target sends later too, and a target that restarts between the request
 * and the reply would leave the initiator waiting for REPLY_END forever
 * (tools/soak found such gets over udp with rank kills).  Their records end
 * with the REPLY's header or, when the peer is gone, p3_lib_reply_lost().
 */
#include "rmpp_nal.h"
#include <stdlib.h>
#include <string.h>

struct rnal_ackwait {
	struct p3_aq_node node;  /* first: a node is its record */
	struct rmpp_addr peer;   /* the connection watched */
	ptl_process_id_t target; /* who owes the ACK */
	ptl_handle_md_t md;      /* the initiator's MD, echoed in the ACK/REPLY */
	uint64_t link;           /* the put's link / the get's offset: md_offset */
	bool reply;              /* a get or GetPut: a REPLY is owed, not an ACK */
	struct p3_msg *msg;      /* the put until finalized, then NULL */
};

bool rnal_ack_wanted(const struct p3_hdr *hdr)
{
	return p3_hdr_wants_answer(hdr) != 0;
}

int rnal_ackwait_add(struct rnal *rn, struct p3_msg *msg, const struct p3_hdr *hdr,
                     const struct rmpp_addr *peer)
{
	struct rnal_ackwait *w = calloc(1, sizeof(*w));
	if (!w)
		return -1;
	w->peer = *peer;
	w->target = hdr->dst;
	w->md = hdr->md_handle;
	w->link = hdr->md_offset;
	w->reply = hdr->type != P3_MSG_PUT;
	w->msg = msg;
	pthread_mutex_lock(&rn->rn_ack_lock);
	p3_aq_append(&rn->rn_ackwait_unsent, &w->node);
	atomic_fetch_add_explicit(&rn->rn_nackwait, 1, memory_order_relaxed);
	pthread_mutex_unlock(&rn->rn_ack_lock);
	return 0;
}

/* Unlink the oldest record of q satisfying match(w, key); NULL if none. */
static struct rnal_ackwait *take_locked(struct rnal *rn, struct p3_aq *q,
                                        bool (*match)(const struct rnal_ackwait *, const void *),
                                        const void *key)
{
	for (struct p3_aq_node *n = q->aq_head; n; n = n->aq_next) {
		struct rnal_ackwait *w = (struct rnal_ackwait *)n;
		if (match(w, key)) {
			p3_aq_unlink(q, n);
			atomic_fetch_sub_explicit(&rn->rn_nackwait, 1, memory_order_relaxed);
			return w;
		}
	}
	return NULL;
}

static bool match_msg(const struct rnal_ackwait *w, const void *key)
{
	return w->msg == key;
}

static bool match_ack(const struct rnal_ackwait *w, const void *key)
{
	const struct p3_hdr *h = key;
	return w->reply == (h->type == P3_MSG_REPLY) && w->md == h->md_handle && w->link == h->md_offset && w->target.nid == h->src.nid &&
	       w->target.pid == h->src.pid;
}

/* The rmpp connection of a record starts being watched once its put is
 * finalized (before that rmpp watches the put itself). */
void rnal_ackwait_sent(struct rnal *rn, struct p3_msg *msg, int status)
{
	/* Most sends want no ACK (staged injects, replies): skip the lock.
	 * A record is added before its send enters rmpp, so it is counted. */
	if (!atomic_load_explicit(&rn->rn_nackwait, memory_order_relaxed))
		return;
	pthread_mutex_lock(&rn->rn_ack_lock);
	struct rnal_ackwait *w = take_locked(rn, &rn->rn_ackwait_unsent, match_msg, msg);
	if (w && status == 0) {
		w->msg = NULL;
		p3_aq_append(&rn->rn_ackwait_sent, &w->node);
		atomic_fetch_add_explicit(&rn->rn_nackwait, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&rn->rn_ack_lock);
	if (w && status == 0)
		rmpp_peer_watch(rn->rn_ep, &w->peer, +1);
	else
		free(w); /* failed: the put's SEND_END reports it */
}

void rnal_ackwait_acked(struct rnal *rn, const struct p3_hdr *ack)
{
	pthread_mutex_lock(&rn->rn_ack_lock);
	/* an ACK may overtake tx_done: then its record is still unsent */
	struct rnal_ackwait *w = take_locked(rn, &rn->rn_ackwait_sent, match_ack, ack);
	if (!w)
		w = take_locked(rn, &rn->rn_ackwait_unsent, match_ack, ack);
	pthread_mutex_unlock(&rn->rn_ack_lock);
	if (!w)
		return;
	if (!w->msg) /* an ACK that overtook tx_done was never watched */
		rmpp_peer_watch(rn->rn_ep, &w->peer, -1);
	free(w);
}

static bool match_peer(const struct rnal_ackwait *w, const void *key)
{
	return rmpp_addr_equal(&w->peer, key);
}

void rnal_ackwait_peer_gone(struct rnal *rn, const struct rmpp_addr *peer, ptl_ni_fail_t status)
{
	struct p3_aq lost = {NULL, NULL};
	struct rnal_ackwait *w;
	pthread_mutex_lock(&rn->rn_ack_lock);
	for (int i = 0; i < 2; i++) {
		struct p3_aq *q = i ? &rn->rn_ackwait_unsent : &rn->rn_ackwait_sent;
		while ((w = take_locked(rn, q, match_peer, peer)))
			p3_aq_append(&lost, &w->node);
	}
	pthread_mutex_unlock(&rn->rn_ack_lock);
	while ((w = (struct rnal_ackwait *)lost.aq_head)) {
		p3_aq_unlink(&lost, &w->node);
		if (!w->msg) {
			char buf[64];
			p3_lib_log(rn->rn_lib, 2, "rmpp: the %s %u:%u owed is lost (%s): %s failed",
			           w->reply ? "REPLY" : "ACK", w->target.nid, w->target.pid,
			           rmpp_addr_str(peer, buf, sizeof(buf)), w->reply ? "get" : "put");
			if (w->reply)
				p3_lib_reply_lost(rn->rn_lib, w->target, w->md, w->link, status);
			else
				p3_lib_ack_lost(rn->rn_lib, w->target, w->md, w->link, status);
		}
		free(w);
	}
}

void rnal_ackwait_clear(struct rnal *rn)
{
	pthread_mutex_lock(&rn->rn_ack_lock);
	p3_aq_splice(&rn->rn_ackwait_sent, &rn->rn_ackwait_unsent);
	struct p3_aq_node *n = rn->rn_ackwait_sent.aq_head;
	rn->rn_ackwait_sent.aq_head = rn->rn_ackwait_sent.aq_tail = NULL;
	atomic_store_explicit(&rn->rn_nackwait, 0, memory_order_relaxed);
	pthread_mutex_unlock(&rn->rn_ack_lock);
	while (n) {
		struct p3_aq_node *next = n->aq_next;
		free(n);
		n = next;
	}
}
