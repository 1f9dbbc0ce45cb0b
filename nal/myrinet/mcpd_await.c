/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mcpd_await.c - the NIC watches the peers its endpoints wait on.
 *
 * rmpp finishes a message once the peer NIC has it; the answer a Portals
 * request is owed -- a put's ACK, a get's or GetPut's REPLY -- is another
 * message the target sends later.  If the target process dies (its NIC
 * drops the endpoint and sends CLOSE), or the target's NIC dies (silence),
 * or either restarts, between the request and the answer, rmpp has nothing
 * unfinished for that peer and nobody would notice: the initiator would wait
 * forever.  So the NIC records every request that wants an answer, whoever
 * built it (the host's LIB in app/thread/interrupt: a SEND command; the
 * NIC's own LIB in offload), from the moment it enters rmpp until the
 * answer's header arrives.  While a peer owes answers its connection is
 * watched (rmpp_peer_watch: kept under keepalive), so a silent peer is
 * declared dead after --peer-dead-ms (mcpd_wire.c sets rmpp's DEAD_MIN_US)
 * and a close, reset or new incarnation is seen at once.  The peer_event
 * upcall then ends each handed-over record's wait:
 *   - offload: the NIC's LIB posts the ACK / REPLY_END with the failure
 *     (p3_lib_ack_lost / p3_lib_reply_lost), into the host's EQ ring;
 *   - host modes: an ANSWER_LOST event carrying the request's header, and
 *     the host driver makes the same call (host_io.c).
 * A record whose request rmpp has not handed over yet is only dropped:
 * rmpp fails that send itself (TX_DONE / SEND_END with the failure).
 * The same plan as the rmpp NALs' (nal/rmpp/ackwait.c), in the NIC, which
 * is single-threaded: no lock.
 */
#include "mcpd.h"

#include "nal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct await_rec {
	struct p3_aq_node node; /* first: a node is its record */
	struct rmpp_addr peer;  /* the connection watched */
	struct p3_hdr req;      /* the request as it went */
	uint8_t wire[MYRI_HDR_LEN];
	const void *cookie; /* the send's rmpp cookie until its tx_done, then NULL */
};

void mcpd_await_add(struct mcpd_ep *ep, const struct rmpp_addr *peer, const uint8_t *hdr,
                    const void *cookie)
{
	struct p3_hdr h;
	if (p3_hdr_unpack(hdr, MYRI_HDR_LEN, &h) != 0 || !p3_hdr_wants_answer(&h))
		return;
	struct await_rec *r = calloc(1, sizeof(*r));
	if (!r)
		return; /* out of NIC memory: this request is not watched */
	r->peer = *peer;
	r->req = h;
	memcpy(r->wire, hdr, MYRI_HDR_LEN);
	r->cookie = cookie;
	p3_aq_append(&ep->await_unsent, &r->node);
	ep->nawait++;
}

static void rec_drop(struct mcpd_ep *ep, struct p3_aq *q, struct await_rec *r)
{
	p3_aq_unlink(q, &r->node);
	ep->nawait--;
	free(r);
}

void mcpd_await_sent(struct mcpd_ep *ep, const void *cookie, int status)
{
	if (!ep->nawait) /* most sends want no answer */
		return;
	for (struct p3_aq_node *n = ep->await_unsent.aq_head; n; n = n->aq_next) {
		struct await_rec *r = (struct await_rec *)n;
		if (r->cookie != cookie)
			continue;
		if (status) { /* failed: its own completion says so */
			rec_drop(ep, &ep->await_unsent, r);
			return;
		}
		p3_aq_unlink(&ep->await_unsent, n);
		r->cookie = NULL;
		p3_aq_append(&ep->await_sent, n);
		rmpp_peer_watch(ep->wire, &r->peer, +1);
		return;
	}
}

static int answers(const struct await_rec *r, const struct p3_hdr *a)
{
	return (r->req.type != P3_MSG_PUT) == (a->type == P3_MSG_REPLY) &&
	       r->req.md_handle == a->md_handle && r->req.md_offset == a->md_offset &&
	       r->req.dst.nid == a->src.nid && r->req.dst.pid == a->src.pid;
}

void mcpd_await_answer(struct mcpd_ep *ep, const void *hdr, size_t hdr_len)
{
	struct p3_hdr a;
	if (!ep->nawait || hdr_len != MYRI_HDR_LEN || p3_hdr_unpack(hdr, hdr_len, &a) != 0 ||
	    (a.type != P3_MSG_ACK && a.type != P3_MSG_REPLY))
		return;
	/* an answer may overtake its request's tx_done: look in both */
	for (int i = 0; i < 2; i++) {
		struct p3_aq *q = i ? &ep->await_unsent : &ep->await_sent;
		for (struct p3_aq_node *n = q->aq_head; n; n = n->aq_next) {
			struct await_rec *r = (struct await_rec *)n;
			if (!answers(r, &a))
				continue;
			if (!r->cookie)
				rmpp_peer_watch(ep->wire, &r->peer, -1);
			rec_drop(ep, q, r);
			return;
		}
	}
}

/* The answer to r will not come: its initiator learns it with the failure. */
static void answer_lost(struct mcpd_ep *ep, const struct await_rec *r, int status)
{
	int reply = r->req.type != P3_MSG_PUT;
	ep->nic->stats.answers_lost++;
	if (ep->off) {
		struct p3_lib *lib = mcpd_off_lib(ep);
		ptl_ni_fail_t why = p3_nal_fail_kind(status);
		if (lib && reply)
			p3_lib_reply_lost(lib, r->req.dst, r->req.md_handle, r->req.md_offset, why);
		else if (lib)
			p3_lib_ack_lost(lib, r->req.dst, r->req.md_handle, r->req.md_offset, why);
		return;
	}
	struct myri_evt e;
	memset(&e, 0, sizeof(e));
	e.type = MYRI_EVT_ANSWER_LOST;
	e.status = status;
	memcpy(e.hdr, r->wire, MYRI_HDR_LEN);
	mcpd_post_event(ep, &e);
}

void mcpd_await_peer_gone(struct mcpd_ep *ep, const struct rmpp_addr *peer, enum rmpp_peer_event ev)
{
	int status = ev == RMPP_PEER_DEAD ? -ETIMEDOUT : -ECONNRESET;
	if (ev == RMPP_PEER_DEAD)
		ep->nic->stats.peers_dead++;
	else
		ep->nic->stats.peers_gone++;
	for (int i = 0; i < 2; i++) {
		struct p3_aq *q = i ? &ep->await_unsent : &ep->await_sent;
		for (struct p3_aq_node *n = q->aq_head, *next; n; n = next) {
			struct await_rec *r = (struct await_rec *)n;
			next = n->aq_next;
			if (!rmpp_addr_equal(&r->peer, peer))
				continue;
			if (!r->cookie) /* handed over: nothing else will end its wait */
				answer_lost(ep, r, status);
			rec_drop(ep, q, r); /* rmpp zeroed the watch count */
		}
	}
}

void mcpd_await_clear(struct mcpd_ep *ep)
{
	struct p3_aq *qs[2] = {&ep->await_sent, &ep->await_unsent};
	for (int i = 0; i < 2; i++)
		while (qs[i]->aq_head)
			rec_drop(ep, qs[i], (struct await_rec *)qs[i]->aq_head);
}
