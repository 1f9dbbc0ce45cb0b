/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * answer_q.h - the NALs' queues of requests that are owed an answer (a put's
 * ACK, a get's or GetPut's REPLY): nal/shmem/await.c, nal/rmpp/ackwait.c.
 *
 * An intrusive doubly linked queue, oldest first.  Requests are handed over
 * in the order they were queued and answered in about the order they went,
 * so a NAL keeps two queues per scope -- not yet handed over, handed over --
 * and finds each record at or near the head of its queue.  (One singly linked
 * list searched from the newest made every lookup walk the whole list: a burst
 * of 98k reads to a stalled target, mpi-adapter's fi-readburst, took 86-103 s
 * instead of 1.5.)
 */
#ifndef P3_NAL_ANSWER_Q_H
#define P3_NAL_ANSWER_Q_H

#include <stddef.h>

struct p3_aq_node {
	struct p3_aq_node *aq_next; /* newer */
	struct p3_aq_node *aq_prev; /* older */
};

struct p3_aq {
	struct p3_aq_node *aq_head, *aq_tail;
};

static inline void p3_aq_append(struct p3_aq *q, struct p3_aq_node *n)
{
	n->aq_next = NULL;
	n->aq_prev = q->aq_tail;
	if (q->aq_tail)
		q->aq_tail->aq_next = n;
	else
		q->aq_head = n;
	q->aq_tail = n;
}

static inline void p3_aq_unlink(struct p3_aq *q, struct p3_aq_node *n)
{
	if (n->aq_prev)
		n->aq_prev->aq_next = n->aq_next;
	else
		q->aq_head = n->aq_next;
	if (n->aq_next)
		n->aq_next->aq_prev = n->aq_prev;
	else
		q->aq_tail = n->aq_prev;
}

/* Move every node of `from` to the end of `to`. */
static inline void p3_aq_splice(struct p3_aq *to, struct p3_aq *from)
{
	if (!from->aq_head)
		return;
	if (to->aq_tail) {
		to->aq_tail->aq_next = from->aq_head;
		from->aq_head->aq_prev = to->aq_tail;
	} else {
		to->aq_head = from->aq_head;
	}
	to->aq_tail = from->aq_tail;
	from->aq_head = from->aq_tail = NULL;
}

#endif
