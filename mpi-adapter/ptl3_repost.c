/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_repost.c - receives whose queued post was refused.
 *
 * Receives go into Portals with PtlMEMDPostNoWait, conditional on the
 * unexpected EQ being empty.  Over an NI whose LIB runs in a NIC (myrinet
 * offload) the post is queued without a round trip, and the NIC refuses it
 * if the unexpected EQ got an event this process had not read when it
 * posted (an unexpected message raced the post): nothing is posted, and the
 * NIC writes a refusal event into the unexpected EQ (PTL_EVENT_UNLINK,
 * PTL_NI_POST_REFUSED, naming the ME and MD the post would have created).
 * Every receive posted after the refused one and before this process read
 * that event is refused too (that event, or the racing message's, was
 * unread when it was posted), so the refused receives are reported in
 * their order, and each is posted again here, in that order, the way a new
 * receive is (unexpected list first, then the conditional post), with the
 * waiting PtlMEMDPost, before anything else is posted: nothing posted later
 * overtakes a refused receive.
 *
 * A message taken from the unexpected EQ may have arrived before a queued
 * post ran, and then belongs to that post if it matches it (the post is
 * refused and posted again, and takes it from the unexpected list): before
 * the unexpected lists are searched, PtlMEMDPostSync makes sure every
 * queued post ran, so that its refusal is in the EQ (settle, below).  It
 * costs a round trip only when the NIC has not run the last post yet.
 *
 * The refusals are collected while the unexpected EQ is drained and posted
 * again when the drain ends (ptl3_repost_run_locked), never from inside a
 * drain nested in a re-post: the order is the order of the events.  Over an
 * in-process LIB a post is never queued, and none of this runs.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ptl3.h"

/* One refused receive: what its event said. */
struct ptl3_refused {
	uint32_t idx, gen;  /* the op */
	ptl_handle_md_t md; /* the MD the refused post named */
};

struct ptl3_repost {
	struct ptl3_refused *v; /* a FIFO: [head, n) */
	uint32_t head, n, cap;
	int running;                /* re-posting: refusals found meanwhile wait their turn */
	uint64_t refused, reposted; /* counters (printed with FI_PTL3_COUNTERS) */
};

void ptl3_repost_settle_locked(struct ptl3_ep *ep)
{
	ep->posts_unsettled = 0;
	int rc = PtlMEMDPostSync(ep->dom->ni);
	if (rc != PTL_OK)
		PTL3_WARN(FI_LOG_EP_DATA, "PtlMEMDPostSync: %s\n", PtlErrorStr(rc));
}

int ptl3_repost_waiting(const struct ptl3_ep *ep)
{
	return ep->repost && ep->repost->running;
}

static struct ptl3_repost *repost_of(struct ptl3_ep *ep)
{
	if (!ep->repost)
		ep->repost = calloc(1, sizeof(*ep->repost));
	return ep->repost;
}

static int fifo_push(struct ptl3_repost *r, const struct ptl3_refused *f)
{
	if (r->head == r->n)
		r->head = r->n = 0;
	if (r->n == r->cap) {
		uint32_t cap = r->cap ? 2 * r->cap : 16;
		struct ptl3_refused *v = realloc(r->v, cap * sizeof(*v));
		if (!v)
			return -1;
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = *f;
	return 0;
}

void ptl3_repost_note_locked(struct ptl3_ep *ep, struct ptl3_op *op, const ptl_event_t *ev)
{
	struct ptl3_repost *r = repost_of(ep);
	/* the op keeps its own source and ignore bits (ptl3_recv_repost_locked):
	 * the event's initiator and hdr_data, the ME's, are not needed */
	struct ptl3_refused f = {.idx = op->idx, .gen = op->gen, .md = ev->md_handle};
	if (!r || fifo_push(r, &f) != 0) {
		fprintf(stderr, "ptl3: FATAL: out of memory keeping a refused receive\n");
		abort();
	}
	r->refused++;
}

/* Post the refused receive f again; a failure completes it with an error. */
static void repost_one_locked(struct ptl3_ep *ep, const struct ptl3_refused *f)
{
	if (f->idx >= ep->nops)
		return;
	struct ptl3_op *op = ep->ops[f->idx];
	/* a receive posted again already (its newer post names another MD), or
	 * gone (cancelled: the cancel found no ME and left it to us) */
	if (!op->live || op->gen != f->gen || op->kind != PTL3_OP_RECV || !op->posted ||
	    op->md != f->md)
		return;
	op->posted = 0;
	ep->posted_recvs--;
	void *context = op->context, *buf = op->buf;
	uint64_t tag = op->tag, flags = FI_RECV | (op->qid == PTL3_Q_TAG ? FI_TAGGED : FI_MSG);
	ep->repost->reposted++;
	ssize_t rc = ptl3_recv_repost_locked(ep, op);
	if (rc < 0) /* the op is freed; its receive ends with the error */
		ptl3_rx_complete_locked(ep, context, flags, buf, 0, tag, 0, (int)-rc, 0, 1);
}

void ptl3_repost_run_locked(struct ptl3_ep *ep)
{
	struct ptl3_repost *r = ep->repost;
	if (!r || r->running || r->head == r->n)
		return;
	r->running = 1;
	while (r->head != r->n) {
		struct ptl3_refused f = r->v[r->head++];
		repost_one_locked(ep, &f);
	}
	r->running = 0;
}

void ptl3_repost_print(const struct ptl3_ep *ep)
{
	if (ep->repost)
		fprintf(stderr, "ptl3 reposts [pid %d]: posts_refused %llu reposted %llu\n",
		        (int)getpid(), (unsigned long long)ep->repost->refused,
		        (unsigned long long)ep->repost->reposted);
}

void ptl3_repost_free(struct ptl3_ep *ep)
{
	if (!ep->repost)
		return;
	free(ep->repost->v);
	free(ep->repost);
	ep->repost = NULL;
}
