/* SPDX-License-Identifier: BSD-3-Clause */
/* check_eq.c - event queues (§4.8, §7 EQs): empty, overflow, wrap, waits,
 * polls and handlers.  Events are produced by puts from the process to
 * itself (2 per put: SEND_START, SEND_END), over lo and shmem. */
#include "harness.h"

#include "../portals/eq_ring.h" /* the ring itself: eq_ring_rewinds_when_empty */

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char sink[64];

struct eqenv {
	struct h_ctx c;
	ptl_handle_me_t me;
	ptl_handle_md_t src;
	char buf[8];
};

/* A sink ME (no EQ) on H_PT and a source MD whose events go to `eq`. */
static void eqenv_open(struct eqenv *e, int mode, ptl_handle_eq_t eq)
{
	ptl_handle_ni_t ni = h_open_mode(mode, NULL, NULL);
	ptl_handle_md_t md;
	h_ctx_single(&e->c, ni);
	e->me = h_me_md(
	    &e->c, H_PT, h_any_id, 1, 0, PTL_RETAIN,
	    h_md(sink, 8, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, PTL_EQ_NONE),
	    PTL_RETAIN, &md);
	e->src = PTL_INVALID_HANDLE;
	if (eq != PTL_EQ_NONE)
		e->src = h_bind(&e->c, h_md(e->buf, 8, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN);
}

static void eqenv_bind(struct eqenv *e, ptl_handle_eq_t eq)
{
	e->src = h_bind(&e->c, h_md(e->buf, 8, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN);
}

static void eqenv_put(struct eqenv *e, ptl_hdr_data_t tag)
{
	H_OK(PtlPut(e->src, PTL_NO_ACK_REQ, e->c.me, H_PT, 0, 1, 0, tag));
}

/* Drive the NI until the sink has taken `n` puts in total. */
static void eqenv_settle(struct eqenv *e, ptl_sr_value_t recv_target)
{
	h_wait_sr(&e->c, PTL_SR_RECV_COUNT, recv_target);
	h_idle(&e->c, 20);
}

static void eqenv_close(struct eqenv *e)
{
	if (e->src != PTL_INVALID_HANDLE)
		H_OK(PtlMDUnlink(e->src));
	H_OK(PtlMEUnlink(e->me));
	h_close(e->c.ni);
}

/* §7: EMPTY on a fresh EQ and after draining it. */
START_TEST(eq_empty)
{
	struct eqenv e;
	ptl_handle_ni_t ni;
	ptl_handle_eq_t eq;
	ptl_event_t ev;

	ni = h_open_mode(_i, NULL, NULL);
	H_OK(PtlEQAlloc(ni, 8, PTL_EQ_HANDLER_NONE, &eq));
	H_RC(PtlEQGet(eq, &ev), PTL_EQ_EMPTY);
	H_OK(PtlEQFree(eq));
	h_close(ni);

	eqenv_open(&e, _i, PTL_EQ_NONE);
	H_OK(PtlEQAlloc(e.c.ni, 8, PTL_EQ_HANDLER_NONE, &eq));
	eqenv_bind(&e, eq);
	eqenv_put(&e, 1);
	h_expect(eq, PTL_EVENT_SEND_START, NULL);
	h_expect(eq, PTL_EVENT_SEND_END, NULL);
	H_RC(PtlEQGet(eq, &ev), PTL_EQ_EMPTY);
	H_OK(PtlMDUnlink(e.src));
	e.src = PTL_INVALID_HANDLE;
	H_OK(PtlEQFree(eq));
	eqenv_close(&e);
}
END_TEST

/* Extension PtlEQGetNoProgress: the events already posted, EMPTY without a
 * NAL pass otherwise; the argument checks of PtlEQGet. */
START_TEST(eq_get_no_progress)
{
	struct eqenv e;
	ptl_handle_eq_t eq;
	ptl_event_t ev;

	eqenv_open(&e, _i, PTL_EQ_NONE);
	H_OK(PtlEQAlloc(e.c.ni, 8, PTL_EQ_HANDLER_NONE, &eq));
	H_RC(PtlEQGetNoProgress(eq, &ev), PTL_EQ_EMPTY);
	H_RC(PtlEQGetNoProgress(PTL_INVALID_HANDLE, &ev), PTL_EQ_INVALID);
	H_RC(PtlEQGetNoProgress(e.c.ni, &ev), PTL_EQ_INVALID);
	H_RC(PtlEQGetNoProgress(eq, NULL), PTL_SEGV);
	eqenv_bind(&e, eq);
	eqenv_put(&e, 1);
	eqenv_settle(&e, 1);
	H_OK(PtlEQGetNoProgress(eq, &ev));
	ck_assert_int_eq(ev.type, PTL_EVENT_SEND_START);
	H_OK(PtlEQGetNoProgress(eq, &ev));
	ck_assert_int_eq(ev.type, PTL_EVENT_SEND_END);
	H_RC(PtlEQGetNoProgress(eq, &ev), PTL_EQ_EMPTY);
	H_OK(PtlMDUnlink(e.src));
	e.src = PTL_INVALID_HANDLE;
	H_OK(PtlEQFree(eq));
	H_RC(PtlEQGetNoProgress(eq, &ev), PTL_EQ_INVALID);
	eqenv_close(&e);
}
END_TEST

/* §7: overflow: the first read after the writer lapped the reader returns
 * PTL_EQ_DROPPED (with an event), then reading continues normally, with
 * increasing sequence numbers, ending with the newest event. */
START_TEST(eq_overflow_dropped)
{
	struct eqenv e;
	ptl_handle_eq_t eq;
	ptl_event_t ev;
	int rc, n = 0;
	ptl_seq_t prev = 0;
	ptl_sr_value_t r0;

	eqenv_open(&e, _i, PTL_EQ_NONE);
	H_OK(PtlEQAlloc(e.c.ni, 4, PTL_EQ_HANDLER_NONE, &eq));
	eqenv_bind(&e, eq);
	r0 = h_sr(&e.c, PTL_SR_RECV_COUNT);
	for (int i = 0; i < 5; i++) /* 10 events into 4 slots */
		eqenv_put(&e, (ptl_hdr_data_t)i);
	eqenv_settle(&e, r0 + 5);
	rc = PtlEQGet(eq, &ev);
	H_RC(rc, PTL_EQ_DROPPED);
	prev = ev.sequence;
	n = 1;
	while ((rc = PtlEQGet(eq, &ev)) == PTL_OK) {
		H_TRUE((int32_t)(ev.sequence - prev) > 0);
		prev = ev.sequence;
		n++;
	}
	H_RC(rc, PTL_EQ_EMPTY);
	H_LE(n, 4);
	H_EVKIND(ev, PTL_EVENT_SEND_END);
	H_EQ(ev.hdr_data, 4); /* the newest event survived */
	H_TRUE(h_sr(&e.c, PTL_SR_EQ_DROPPED) >= 6);
	/* normal operation afterwards */
	eqenv_put(&e, 9);
	h_expect(eq, PTL_EVENT_SEND_START, &ev);
	H_EQ(ev.hdr_data, 9);
	h_expect(eq, PTL_EVENT_SEND_END, &ev);
	H_RC(PtlEQGet(eq, &ev), PTL_EQ_EMPTY);
	H_OK(PtlMDUnlink(e.src));
	e.src = PTL_INVALID_HANDLE;
	H_OK(PtlEQFree(eq));
	eqenv_close(&e);
}
END_TEST

/* PtlEQAlloc rounds the count up to a power of two: 5 holds 8 events. */
START_TEST(eq_rounds_power_of_two)
{
	struct eqenv e;
	ptl_handle_eq_t eq;
	ptl_event_t ev;
	ptl_sr_value_t r0;

	eqenv_open(&e, _i, PTL_EQ_NONE);
	H_OK(PtlEQAlloc(e.c.ni, 5, PTL_EQ_HANDLER_NONE, &eq));
	eqenv_bind(&e, eq);
	r0 = h_sr(&e.c, PTL_SR_RECV_COUNT);
	for (int i = 0; i < 4; i++)
		eqenv_put(&e, (ptl_hdr_data_t)i);
	eqenv_settle(&e, r0 + 4);
	for (int i = 0; i < 8; i++) {
		H_OK(PtlEQGet(eq, &ev));
		H_EVKIND(ev, i % 2 ? PTL_EVENT_SEND_END : PTL_EVENT_SEND_START);
		H_EQ(ev.hdr_data, i / 2);
	}
	H_RC(PtlEQGet(eq, &ev), PTL_EQ_EMPTY);
	H_OK(PtlMDUnlink(e.src));
	e.src = PTL_INVALID_HANDLE;
	H_OK(PtlEQFree(eq));
	eqenv_close(&e);
}
END_TEST

/* §7: sequence wrap: 600 events through a 4-slot ring, read as they come:
 * never DROPPED, sequence always increasing by the same step. */
START_TEST(eq_sequence_wrap)
{
	struct eqenv e;
	ptl_handle_eq_t eq;
	ptl_event_t ev;
	ptl_seq_t prev = 0;
	int first = 1;

	eqenv_open(&e, _i, PTL_EQ_NONE);
	H_OK(PtlEQAlloc(e.c.ni, 4, PTL_EQ_HANDLER_NONE, &eq));
	eqenv_bind(&e, eq);
	for (int i = 0; i < 300; i++) {
		eqenv_put(&e, (ptl_hdr_data_t)i);
		for (int k = 0; k < 2; k++) {
			h_expect(eq, k ? PTL_EVENT_SEND_END : PTL_EVENT_SEND_START, &ev);
			H_EQ(ev.hdr_data, i);
			if (!first)
				H_EQ((ptl_seq_t)(ev.sequence - prev), 1);
			first = 0;
			prev = ev.sequence;
		}
	}
	H_RC(PtlEQGet(eq, &ev), PTL_EQ_EMPTY);
	H_OK(PtlMDUnlink(e.src));
	e.src = PTL_INVALID_HANDLE;
	H_OK(PtlEQFree(eq));
	eqenv_close(&e);
}
END_TEST

/* A ring emptied by its reader and then filled to its last slot: every
 * event read, none DROPPED, sequences consecutive; one event more than the
 * ring holds is DROPPED.  Where the process has one thread the writer
 * starts again at slot 0 once the ring is empty (eq_ring.h): this fills it
 * from there, across the end of the slot array and the rewind. */
START_TEST(eq_fill_after_rewind)
{
	struct eqenv e;
	ptl_handle_eq_t eq;
	ptl_event_t ev;
	ptl_seq_t prev;
	ptl_sr_value_t r0;

	eqenv_open(&e, _i, PTL_EQ_NONE);
	H_OK(PtlEQAlloc(e.c.ni, 8, PTL_EQ_HANDLER_NONE, &eq));
	eqenv_bind(&e, eq);
	for (int round = 0; round < 3; round++) {
		/* one put (2 events), read: the ring is empty, its slots used 0-1 */
		eqenv_put(&e, 100);
		h_expect(eq, PTL_EVENT_SEND_START, &ev);
		h_expect(eq, PTL_EVENT_SEND_END, &ev);
		prev = ev.sequence;
		H_RC(PtlEQGet(eq, &ev), PTL_EQ_EMPTY);
		/* 4 puts, 8 events: exactly full, nothing lost */
		r0 = h_sr(&e.c, PTL_SR_RECV_COUNT);
		for (int i = 0; i < 4; i++)
			eqenv_put(&e, (ptl_hdr_data_t)i);
		eqenv_settle(&e, r0 + 4);
		for (int i = 0; i < 8; i++) {
			H_RC(PtlEQGetNoProgress(eq, &ev), PTL_OK);
			H_EVKIND(ev, i % 2 ? PTL_EVENT_SEND_END : PTL_EVENT_SEND_START);
			H_EQ(ev.hdr_data, i / 2);
			H_EQ((ptl_seq_t)(ev.sequence - prev), 1);
			prev = ev.sequence;
		}
		H_RC(PtlEQGetNoProgress(eq, &ev), PTL_EQ_EMPTY);
		H_EQ(h_sr(&e.c, PTL_SR_EQ_DROPPED), 0);
	}
	/* half read, then more than fits: the oldest are DROPPED, the newest kept */
	r0 = h_sr(&e.c, PTL_SR_RECV_COUNT);
	eqenv_put(&e, 7);
	eqenv_settle(&e, r0 + 1);
	h_expect(eq, PTL_EVENT_SEND_START, &ev);
	for (int i = 0; i < 5; i++) /* 1 + 10 events unread, 8 slots */
		eqenv_put(&e, (ptl_hdr_data_t)(10 + i));
	eqenv_settle(&e, r0 + 6);
	H_RC(PtlEQGetNoProgress(eq, &ev), PTL_EQ_DROPPED);
	prev = ev.sequence;
	int n = 1;
	while (PtlEQGetNoProgress(eq, &ev) == PTL_OK) {
		H_EQ((ptl_seq_t)(ev.sequence - prev), 1);
		prev = ev.sequence;
		n++;
	}
	H_EQ(n, 8);
	H_EVKIND(ev, PTL_EVENT_SEND_END);
	H_EQ(ev.hdr_data, 14);
	H_EQ(h_sr(&e.c, PTL_SR_EQ_DROPPED), 3);
	H_OK(PtlMDUnlink(e.src));
	e.src = PTL_INVALID_HANDLE;
	H_OK(PtlEQFree(eq));
	eqenv_close(&e);
}
END_TEST

/* PtlProgressEvents: the NI's event count moves by the events posted to
 * its EQs, and only by them (a put from an MD without an EQ into an ME
 * without one posts none); bad arguments are refused.  With LIB in the
 * NIC (myrinet offload) it moves on every call instead. */
static void progress_events_expect(ptl_handle_ni_t ni, int offload, ptl_seq_t prev, ptl_seq_t moved,
                                   ptl_seq_t *now)
{
	H_OK(PtlProgressEvents(ni, 0, now));
	if (offload)
		H_NE(*now, prev);
	else
		H_EQ((ptl_seq_t)(*now - prev), moved);
}

START_TEST(eq_progress_events)
{
	struct eqenv e;
	ptl_handle_eq_t eq;
	ptl_event_t ev;
	ptl_seq_t n0, n1;
	ptl_sr_value_t r0;
	ptl_handle_md_t quiet;
	const char *nal, *mode;

	eqenv_open(&e, _i, PTL_EQ_NONE);
	H_OK(PtlNIDescribe(e.c.ni, &nal, &mode));
	int off = strcmp(mode, "offload") == 0;
	H_OK(PtlEQAlloc(e.c.ni, 8, PTL_EQ_HANDLER_NONE, &eq));
	eqenv_bind(&e, eq);
	H_OK(PtlProgressEvents(e.c.ni, 0, &n0));
	progress_events_expect(e.c.ni, off, n0, 0, &n1); /* nothing happened */
	n0 = n1;
	r0 = h_sr(&e.c, PTL_SR_RECV_COUNT);
	eqenv_put(&e, 1); /* SEND_START, SEND_END */
	eqenv_settle(&e, r0 + 1);
	progress_events_expect(e.c.ni, off, n0, 2, &n1);
	h_expect(eq, PTL_EVENT_SEND_START, &ev);
	h_expect(eq, PTL_EVENT_SEND_END, &ev);
	progress_events_expect(e.c.ni, off, n1, 0, &n0); /* reading events posts none */
	quiet = h_bind(&e.c, h_md(e.buf, 8, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE), PTL_RETAIN);
	H_OK(PtlPut(quiet, PTL_NO_ACK_REQ, e.c.me, H_PT, 0, 1, 0, 2));
	eqenv_settle(&e, r0 + 2);
	progress_events_expect(e.c.ni, off, n0, 0, &n1);
	H_RC(PtlProgressEvents(e.c.ni, 0, NULL), PTL_SEGV);
	H_RC(PtlProgressEvents(PTL_INVALID_HANDLE, 0, &n1), PTL_NI_INVALID);
	H_OK(PtlMDUnlink(quiet));
	H_OK(PtlMDUnlink(e.src));
	e.src = PTL_INVALID_HANDLE;
	H_OK(PtlEQFree(eq));
	eqenv_close(&e);
}
END_TEST

/* The ring alone (eq_ring.h), its writer and reader in this thread: an
 * event into an empty ring goes to slot 0; a ring with unread events is
 * never moved; full after a rewind, nothing lost; lapped, the oldest
 * surviving event comes with PTL_EQ_DROPPED; a writer that does not
 * rewind (another process's LIB) keeps the base it finds. */
static void ring_put(struct p3_eq_ring *r, int alone, ptl_hdr_data_t tag, int want_slot)
{
	uint32_t seq;
	ptl_event_t *ev = alone ? p3_eq_ring_write_begin_alone(r, r->eqr_count - 1, &seq)
	                        : p3_eq_ring_write_begin(r, r->eqr_count - 1, &seq);
	if (want_slot >= 0)
		H_EQ(ev - r->eqr_slots, want_slot);
	ev->hdr_data = tag;
	ev->type = PTL_EVENT_PUT_END;
	if (alone)
		p3_eq_ring_write_end_alone(r, ev, seq);
	else
		p3_eq_ring_write_end(r, ev, seq);
}

static void ring_get(struct p3_eq_ring *r, int rc, ptl_hdr_data_t tag)
{
	ptl_event_t ev;
	H_RC(p3_eq_ring_read_as(r, &ev, 1), rc);
	H_EQ(ev.hdr_data, tag);
	H_EQ(ev.sequence, atomic_load(&r->eqr_read_seq) - 1);
}

START_TEST(eq_ring_rewinds_when_empty)
{
	struct p3_eq_ring *r = aligned_alloc(64, p3_eq_ring_bytes(4));
	ptl_event_t ev;

	H_TRUE(r != NULL);
	p3_eq_ring_init(r, 4, 1);
	ring_put(r, 1, 1, 0);
	ring_put(r, 1, 2, 1);
	ring_put(r, 1, 3, 2);
	ring_get(r, PTL_OK, 1);
	ring_put(r, 1, 4, 3); /* not empty: no move */
	ring_put(r, 1, 5, 0); /* the array's end: wraps */
	for (int t = 2; t <= 5; t++)
		ring_get(r, PTL_OK, t);
	H_RC(p3_eq_ring_read_as(r, &ev, 1), PTL_EQ_EMPTY);
	for (int t = 6; t <= 9; t++) /* empty: from slot 0, then full */
		ring_put(r, 1, t, t - 6);
	for (int t = 6; t <= 9; t++)
		ring_get(r, PTL_OK, t);
	ring_put(r, 1, 10, 0);
	ring_get(r, PTL_OK, 10);
	for (int t = 11; t <= 16; t++) /* 6 into 4 slots: 11 and 12 lost */
		ring_put(r, 1, t, -1);
	ring_get(r, PTL_EQ_DROPPED, 13);
	H_EQ(atomic_load(&r->eqr_dropped), 2);
	for (int t = 14; t <= 16; t++)
		ring_get(r, PTL_OK, t);
	/* a writer that never rewinds continues from the base it finds */
	ring_put(r, 0, 17, 2);
	ring_put(r, 0, 18, 3);
	ring_get(r, PTL_OK, 17);
	ring_get(r, PTL_OK, 18);
	/* one event at a time: always slot 0 */
	for (uint32_t i = 0; i < 3 * 4 + 1; i++) {
		ring_put(r, 1, 100 + i, 0);
		ring_get(r, PTL_OK, 100 + i);
	}
	free(r);
}
END_TEST

struct delayed {
	struct eqenv *e;
	unsigned ms;
};

static void *delayed_put(void *arg)
{
	struct delayed *d = arg;
	usleep(d->ms * 1000);
	eqenv_put(d->e, 5);
	return NULL;
}

/* A put from another thread after d->ms: PtlEQWait on eq returns its
 * SEND_START; the milliseconds the wait took. */
static uint64_t wait_delayed_start(struct delayed *d, ptl_handle_eq_t eq)
{
	pthread_t th;
	ptl_event_t ev;
	uint64_t t0 = h_now_ms(), dt;

	H_TRUE(pthread_create(&th, NULL, delayed_put, d) == 0);
	H_OK(PtlEQWait(eq, &ev));
	dt = h_now_ms() - t0;
	pthread_join(th, NULL);
	H_EVKIND(ev, PTL_EVENT_SEND_START);
	H_EQ(ev.hdr_data, 5);
	return dt;
}

/* §7: PtlEQWait blocks until an event arrives (posted from another thread). */
START_TEST(eq_wait_blocks)
{
	struct eqenv e;
	ptl_handle_eq_t eq;
	ptl_event_t ev;
	struct delayed d = {&e, 300};

	eqenv_open(&e, _i, PTL_EQ_NONE);
	H_OK(PtlEQAlloc(e.c.ni, 8, PTL_EQ_HANDLER_NONE, &eq));
	eqenv_bind(&e, eq);
	H_TRUE(wait_delayed_start(&d, eq) >= 250);
	H_OK(PtlEQWait(eq, &ev));
	H_EVKIND(ev, PTL_EVENT_SEND_END);
	H_RC(PtlEQWait(PTL_INVALID_HANDLE, &ev), PTL_EQ_INVALID);
	H_RC(PtlEQWait(eq, NULL), PTL_SEGV);
	H_OK(PtlMDUnlink(e.src));
	e.src = PTL_INVALID_HANDLE;
	H_OK(PtlEQFree(eq));
	eqenv_close(&e);
}
END_TEST

/* §7: PtlEQPoll with timeout 0 checks once; with T waits about T ms. */
START_TEST(eq_poll_timeout)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL);
	ptl_handle_eq_t eq;
	ptl_event_t ev;
	int which = 7;
	uint64_t t0, dt;

	H_OK(PtlEQAlloc(ni, 8, PTL_EQ_HANDLER_NONE, &eq));
	t0 = h_now_ms();
	H_RC(PtlEQPoll(&eq, 1, 0, &ev, &which), PTL_EQ_EMPTY);
	dt = h_now_ms() - t0;
	H_TRUE(dt < 100);
	t0 = h_now_ms();
	H_RC(PtlEQPoll(&eq, 1, 300, &ev, &which), PTL_EQ_EMPTY);
	dt = h_now_ms() - t0;
	if (dt < 290 || dt > 3000)
		h_fail(__FILE__, __LINE__, "PtlEQPoll(timeout 300) returned after %llu ms",
		       (unsigned long long)dt);
	H_OK(PtlEQFree(eq));
	h_close(ni);
}
END_TEST

/* An oversubscribed node (<p3rt/oversub.h>): under every P3_OVERSUB_WAIT
 * policy, PtlEQWait sees an event another thread posts later, and
 * PtlEQPoll keeps its timeout.  Six late events in a row fail the
 * handoff's windows (portals/api-handoff.c): forced (P3_OVERSUBSCRIBED=1,
 * the node's rank count unknown) the waits that follow sleep at once, and
 * must still wake; detected (4096 local ranks on 1 CPU: never fewer
 * runnable tasks on the machine than ranks) they keep handing off, as on
 * a quiet machine, reading /proc/loadavg at each failed window. */
START_TEST(eq_oversub_waits)
{
	static const char *const policies[] = {"handoff", "sleep", "yield"};
	for (size_t q = 0; q < 2 * sizeof(policies) / sizeof(policies[0]); q++) {
		size_t p = q % (sizeof(policies) / sizeof(policies[0]));
		if (q == p) {
			setenv("P3_OVERSUBSCRIBED", "1", 1);
		} else {
			unsetenv("P3_OVERSUBSCRIBED");
			setenv("P3_LOCAL_RANKS", "4096", 1);
			setenv("P3_NODE_CPUS", "1", 1);
		}
		struct eqenv e;
		ptl_handle_eq_t eq;
		ptl_event_t ev;
		struct delayed d = {&e, 20};
		int which;
		uint64_t t0, dt;

		setenv("P3_OVERSUB_WAIT", policies[p], 1);
		eqenv_open(&e, _i, PTL_EQ_NONE);
		H_OK(PtlEQAlloc(e.c.ni, 8, PTL_EQ_HANDLER_NONE, &eq));
		eqenv_bind(&e, eq);
		for (int round = 0; round < 6; round++) {
			H_TRUE(wait_delayed_start(&d, eq) >= 15);
			H_OK(PtlEQPoll(&eq, 1, 1000, &ev, &which));
			H_EVKIND(ev, PTL_EVENT_SEND_END);
		}
		t0 = h_now_ms();
		H_RC(PtlEQPoll(&eq, 1, 50, &ev, &which), PTL_EQ_EMPTY);
		dt = h_now_ms() - t0;
		if (dt < 45 || dt > 3000)
			h_fail(
			    __FILE__, __LINE__,
			    "P3_OVERSUB_WAIT=%s (%s): PtlEQPoll(timeout 50) returned after %llu ms",
			    policies[p], q == p ? "forced" : "detected", (unsigned long long)dt);
		H_OK(PtlMDUnlink(e.src));
		e.src = PTL_INVALID_HANDLE;
		H_OK(PtlEQFree(eq));
		eqenv_close(&e);
	}
	unsetenv("P3_LOCAL_RANKS");
	unsetenv("P3_NODE_CPUS");
	unsetenv("P3_OVERSUB_WAIT");
}
END_TEST

/* §7: PtlEQPoll reports which EQ, checking them in array order. */
START_TEST(eq_poll_which)
{
	struct eqenv e;
	ptl_handle_eq_t eqs[3];
	ptl_handle_md_t m1, m2;
	ptl_event_t ev;
	int which = -1;
	ptl_sr_value_t r0;

	eqenv_open(&e, _i, PTL_EQ_NONE);
	for (int i = 0; i < 3; i++)
		H_OK(PtlEQAlloc(e.c.ni, 8, PTL_EQ_HANDLER_NONE, &eqs[i]));
	m2 = h_bind(&e.c, h_md(e.buf, 8, PTL_MD_THRESH_INF, 0, eqs[2]), PTL_RETAIN);
	m1 = h_bind(&e.c, h_md(e.buf, 8, PTL_MD_THRESH_INF, 0, eqs[1]), PTL_RETAIN);
	r0 = h_sr(&e.c, PTL_SR_RECV_COUNT);
	H_OK(PtlPut(m2, PTL_NO_ACK_REQ, e.c.me, H_PT, 0, 1, 0, 2));
	eqenv_settle(&e, r0 + 1);
	H_OK(PtlEQPoll(eqs, 3, 1000, &ev, &which));
	H_EQ(which, 2);
	H_EQ(ev.hdr_data, 2);
	H_OK(PtlPut(m1, PTL_NO_ACK_REQ, e.c.me, H_PT, 0, 1, 0, 1));
	eqenv_settle(&e, r0 + 2);
	/* eq 1 and eq 2 both hold events: array order picks eq 1 */
	H_OK(PtlEQPoll(eqs, 3, 1000, &ev, &which));
	H_EQ(which, 1);
	H_EQ(ev.hdr_data, 1);
	H_OK(PtlEQPoll(eqs, 3, 1000, &ev, &which));
	H_EQ(which, 1);
	H_OK(PtlEQPoll(eqs, 3, 1000, &ev, &which));
	H_EQ(which, 2);
	H_EVKIND(ev, PTL_EVENT_SEND_END);
	H_RC(PtlEQPoll(eqs, 3, 0, &ev, &which), PTL_EQ_EMPTY);
	H_OK(PtlMDUnlink(m1));
	H_OK(PtlMDUnlink(m2));
	for (int i = 0; i < 3; i++)
		H_OK(PtlEQFree(eqs[i]));
	eqenv_close(&e);
}
END_TEST

/* §7: PtlEQPoll size <= 0 -> PTL_EQ_INVALID (and bad handles in the array). */
START_TEST(eq_poll_size_invalid)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL);
	ptl_handle_eq_t eqs[2];
	ptl_event_t ev;
	int which;

	H_OK(PtlEQAlloc(ni, 8, PTL_EQ_HANDLER_NONE, &eqs[0]));
	H_RC(PtlEQPoll(eqs, 0, 0, &ev, &which), PTL_EQ_INVALID);
	H_RC(PtlEQPoll(eqs, -1, 0, &ev, &which), PTL_EQ_INVALID);
	H_RC(PtlEQPoll(eqs, -2147483647 - 1, 0, &ev, &which), PTL_EQ_INVALID);
	eqs[1] = PTL_INVALID_HANDLE;
	H_RC(PtlEQPoll(eqs, 2, 0, &ev, &which), PTL_EQ_INVALID);
	H_RC(PtlEQPoll(eqs, 1, 0, NULL, &which), PTL_SEGV);
	H_RC(PtlEQPoll(eqs, 1, 0, &ev, NULL), PTL_SEGV);
	H_RC(PtlEQPoll(NULL, 1, 0, &ev, &which), PTL_SEGV);
	H_OK(PtlEQFree(eqs[0]));
	h_close(ni);
}
END_TEST

static atomic_int handler_calls;
static atomic_int handler_bad;
static void count_handler(ptl_event_t *ev)
{
	if (ev->type != PTL_EVENT_SEND_START && ev->type != PTL_EVENT_SEND_END)
		atomic_fetch_add(&handler_bad, 1);
	atomic_fetch_add(&handler_calls, 1);
}

/* §7: the handler runs once per event; DECISION: at enqueue, and the event
 * also stays in the EQ. */
START_TEST(eq_handler_once)
{
	struct eqenv e;
	ptl_handle_eq_t eq;
	int cnt[PTL_EVENT_KIND_MAX];

	atomic_store(&handler_calls, 0);
	eqenv_open(&e, _i, PTL_EQ_NONE);
	H_OK(PtlEQAlloc(e.c.ni, 64, count_handler, &eq));
	eqenv_bind(&e, eq);
	for (int i = 0; i < 5; i++)
		eqenv_put(&e, (ptl_hdr_data_t)i);
	h_collect(eq, 10, cnt);
	H_EQ(cnt[PTL_EVENT_SEND_START], 5);
	H_EQ(cnt[PTL_EVENT_SEND_END], 5);
	h_idle(&e.c, 50);
	H_EQ(atomic_load(&handler_calls), 10);
	H_EQ(atomic_load(&handler_bad), 0);
	H_OK(PtlMDUnlink(e.src));
	e.src = PTL_INVALID_HANDLE;
	H_OK(PtlEQFree(eq));
	eqenv_close(&e);
	H_EQ(atomic_load(&handler_calls), 10);
}
END_TEST

/* §7: PtlEQFree of a bad or stale handle -> PTL_EQ_INVALID. */
START_TEST(eq_free_bad_handle)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL);
	ptl_handle_eq_t eq, eq2;
	ptl_event_t ev;
	ptl_handle_me_t me;
	ptl_handle_md_t md;

	H_RC(PtlEQFree(PTL_INVALID_HANDLE), PTL_EQ_INVALID);
	H_RC(PtlEQFree(PTL_EQ_NONE), PTL_EQ_INVALID);
	H_RC(PtlEQFree(ni), PTL_EQ_INVALID); /* an NI handle is not an EQ */
	H_OK(PtlEQAlloc(ni, 8, PTL_EQ_HANDLER_NONE, &eq));
	H_OK(PtlEQFree(eq));
	H_RC(PtlEQFree(eq), PTL_EQ_INVALID);
	H_RC(PtlEQGet(eq, &ev), PTL_EQ_INVALID);
	H_OK(PtlEQAlloc(ni, 8, PTL_EQ_HANDLER_NONE, &eq2));
	H_RC(PtlEQFree(eq), PTL_EQ_INVALID); /* slot reused: stale stays invalid */
	/* an MD naming a freed EQ is refused */
	H_OK(PtlMEAttach(ni, H_PT, h_any_id, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me));
	int rc = PtlMDAttach(me, h_md(sink, 8, 1, PTL_MD_OP_PUT, eq), PTL_RETAIN, &md);
	if (rc != PTL_EQ_INVALID && rc != PTL_MD_ILLEGAL)
		h_fail(__FILE__, __LINE__,
		       "PtlMDAttach with a freed EQ returned %d (%s), expected "
		       "PTL_EQ_INVALID or PTL_MD_ILLEGAL",
		       rc, h_rcstr(rc));
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq2));
	h_close(ni);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("eq");
	TCase *tc = tcase_create("eq");
	tcase_set_timeout(tc, 60);
	H_ADD(tc, eq_empty);
	H_ADD(tc, eq_get_no_progress);
	H_ADD(tc, eq_overflow_dropped);
	H_ADD(tc, eq_rounds_power_of_two);
	H_ADD(tc, eq_sequence_wrap);
	H_ADD(tc, eq_fill_after_rewind);
	H_ADD(tc, eq_progress_events);
	tcase_add_test(tc, eq_ring_rewinds_when_empty);
	H_ADD(tc, eq_wait_blocks);
	H_ADD(tc, eq_poll_timeout);
	H_ADD(tc, eq_oversub_waits);
	H_ADD(tc, eq_poll_which);
	H_ADD(tc, eq_poll_size_invalid);
	H_ADD(tc, eq_handler_once);
	H_ADD(tc, eq_free_bad_handle);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return h_main(suite());
}
