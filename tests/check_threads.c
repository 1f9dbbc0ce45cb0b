/* SPDX-License-Identifier: BSD-3-Clause */
/* check_threads.c - thread safety (§4.10, §7 Threads): several application
 * threads call PtlPut, PtlMEAttach, PtlMDAttach, PtlMDUnlink, PtlMEUnlink
 * and PtlEQGet on one NI while traffic arrives.  No event may be lost and
 * nothing delivered twice: every total is counted exactly.  Over lo and
 * shmem (app, thread). */
#include "harness.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NT    3    /* threads per side */
#define NMSG  2000 /* messages per initiator thread */
#define TOTAL (NT * NMSG)

struct tgt_shared {
	struct h_ctx *c;
	ptl_handle_eq_t rx;
	atomic_int got_start, got_end, done;
	atomic_uchar seen[TOTAL];
	atomic_int churn;
	atomic_int self_events, self_sent;
};

static void *tgt_thread(void *arg)
{
	struct tgt_shared *t = arg;
	struct h_ctx *c = t->c;
	static char churn_buf[NT][64];
	int id = atomic_fetch_add(&t->churn, 1);
	ptl_handle_eq_t myeq;
	ptl_handle_md_t self_md;
	int self_sent = 0, self_seen = 0;
	uint64_t deadline = h_now_ms() + 60000;

	H_OK(PtlEQAlloc(c->ni, 1024, PTL_EQ_HANDLER_NONE, &myeq));
	H_OK(PtlMDBind(c->ni, h_md(churn_buf[id], 8, PTL_MD_THRESH_INF, 0, myeq), PTL_RETAIN,
	               &self_md));
	while (atomic_load(&t->got_end) < TOTAL || self_sent < 50) {
		ptl_event_t ev;
		ptl_handle_me_t me;
		ptl_handle_md_t md;
		int rc;

		if (h_now_ms() > deadline)
			h_fail(__FILE__, __LINE__, "stress: %d of %d messages after 60 s",
			       atomic_load(&t->got_end), TOTAL);
		/* churn: attach and unlink objects on another portal */
		H_OK(PtlMEAttach(c->ni, H_PT + 1, h_any_id, (ptl_match_bits_t)id, 0, PTL_RETAIN,
		                 PTL_INS_AFTER, &me));
		H_OK(PtlMDAttach(me, h_md(churn_buf[id], 64, 1, PTL_MD_OP_PUT, PTL_EQ_NONE),
		                 PTL_RETAIN, &md));
		H_OK(PtlMDUnlink(md));
		H_OK(PtlMEUnlink(me));
		/* a put to ourselves on a portal nobody listens to (counts a drop) */
		if (self_sent < 50) {
			H_OK(PtlPut(self_md, PTL_NO_ACK_REQ, c->me, H_PT + 2, 0, 0, 0, 0));
			self_sent++;
		}
		while ((rc = PtlEQGet(myeq, &ev)) == PTL_OK)
			self_seen++;
		H_RC(rc, PTL_EQ_EMPTY);
		/* consume the shared receive EQ */
		for (int k = 0; k < 8; k++) {
			rc = PtlEQGet(t->rx, &ev);
			if (rc == PTL_EQ_EMPTY)
				break;
			H_RC(rc, PTL_OK);
			if (ev.type == PTL_EVENT_PUT_START) {
				atomic_fetch_add(&t->got_start, 1);
			} else {
				H_EVKIND(ev, PTL_EVENT_PUT_END);
				H_TRUE(ev.hdr_data < TOTAL);
				if (atomic_fetch_add(&t->seen[ev.hdr_data], 1) != 0)
					h_fail(__FILE__, __LINE__, "message %llu delivered twice",
					       (unsigned long long)ev.hdr_data);
				atomic_fetch_add(&t->got_end, 1);
			}
		}
	}
	/* all 2 * 50 events of the self puts */
	while (self_seen < 2 * self_sent) {
		ptl_event_t ev;
		int which;
		int rc = PtlEQPoll(&myeq, 1, H_EV_TIMEOUT_MS, &ev, &which);
		H_RC(rc, PTL_OK);
		self_seen++;
	}
	H_EQ(self_seen, 2 * self_sent);
	atomic_fetch_add(&t->self_events, self_seen);
	atomic_fetch_add(&t->self_sent, self_sent);
	H_OK(PtlMDUnlink(self_md));
	H_OK(PtlEQFree(myeq));
	return NULL;
}

H_PAIR_TEST(stress_threads)
static void stress_threads_tgt(struct h_ctx *c)
{
	static struct tgt_shared t;
	static unsigned char rxbuf[TOTAL * 16];
	pthread_t th[NT];
	ptl_handle_md_t md;
	ptl_handle_me_t me;
	ptl_event_t ev;

	memset(&t, 0, sizeof(t));
	t.c = c;
	t.rx = h_eq(c, 2 * TOTAL); /* never overflows, so every event must be seen */
	me = h_me_md(c, H_PT, h_any_id, 0, ~0ull, PTL_RETAIN,
	             h_md(rxbuf, sizeof(rxbuf), PTL_MD_THRESH_INF,
	                  PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, t.rx),
	             PTL_RETAIN, &md);
	for (int i = 0; i < NT; i++)
		H_TRUE(pthread_create(&th[i], NULL, tgt_thread, &t) == 0);
	h_sync(c);
	for (int i = 0; i < NT; i++)
		pthread_join(th[i], NULL);
	H_EQ(atomic_load(&t.got_end), TOTAL);
	H_EQ(atomic_load(&t.got_start), TOTAL);
	for (int i = 0; i < TOTAL; i++) {
		H_EQ(atomic_load(&t.seen[i]), 1);
		H_PAT(rxbuf + 16 * i, 16, (uint32_t)i, 0);
	}
	H_EQ(atomic_load(&t.self_sent), NT * 50);
	H_EQ(atomic_load(&t.self_events), NT * 100);
	H_RC(PtlEQGet(t.rx, &ev), PTL_EQ_EMPTY);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(t.rx));
}

struct ini_arg {
	struct h_ctx *c;
	int t;
	ptl_handle_eq_t eq;
	atomic_int *ends;
};

static void *ini_thread(void *arg)
{
	struct ini_arg *a = arg;
	static unsigned char src[TOTAL][16];
	int sent = 0, starts = 0, ends = 0, unlinks = 0;
	ptl_handle_md_t md;

	for (int k = 0; k < NMSG; k++) {
		int m = a->t * NMSG + k;
		ptl_event_t ev;
		int rc;
		h_fill(src[m], 16, (uint32_t)m, 0);
		H_OK(PtlMDBind(a->c->ni, h_md(src[m], 16, 1, 0, a->eq), PTL_UNLINK, &md));
		H_OK(PtlPut(md, PTL_NO_ACK_REQ, h_peer(a->c), H_PT, 0, 0, (ptl_size_t)m * 16,
		            (ptl_hdr_data_t)m));
		sent++;
		/* reap whatever is there */
		while ((rc = PtlEQGet(a->eq, &ev)) == PTL_OK) {
			if (ev.type == PTL_EVENT_SEND_START)
				starts++;
			else if (ev.type == PTL_EVENT_SEND_END)
				ends++;
			else if (ev.type == PTL_EVENT_UNLINK)
				unlinks++;
		}
		H_RC(rc, PTL_EQ_EMPTY);
	}
	while (ends < sent || unlinks < sent) {
		ptl_event_t ev;
		int which;
		H_OK(PtlEQPoll(&a->eq, 1, H_EV_TIMEOUT_MS, &ev, &which));
		if (ev.type == PTL_EVENT_SEND_START)
			starts++;
		else if (ev.type == PTL_EVENT_SEND_END)
			ends++;
		else if (ev.type == PTL_EVENT_UNLINK)
			unlinks++;
		else
			h_fail(__FILE__, __LINE__, "unexpected %s", h_evstr((int)ev.type));
	}
	/* SEND_START, SEND_END and the UNLINK of each exhausted MD, once each */
	H_EQ(unlinks, NMSG);
	H_EQ(starts, NMSG);
	H_EQ(ends, NMSG);
	atomic_fetch_add(a->ends, ends);
	return NULL;
}

static void stress_threads_ini(struct h_ctx *c)
{
	pthread_t th[NT];
	struct ini_arg a[NT];
	atomic_int ends = 0;

	for (int i = 0; i < NT; i++) {
		a[i].c = c;
		a[i].t = i;
		a[i].eq = h_eq(c, 4 * NMSG);
		a[i].ends = &ends;
	}
	h_sync(c);
	for (int i = 0; i < NT; i++)
		H_TRUE(pthread_create(&th[i], NULL, ini_thread, &a[i]) == 0);
	for (int i = 0; i < NT; i++)
		pthread_join(th[i], NULL);
	H_EQ(atomic_load(&ends), TOTAL);
	h_sync(c);
	for (int i = 0; i < NT; i++)
		H_OK(PtlEQFree(a[i].eq));
}

static Suite *suite(void)
{
	Suite *s = suite_create("threads");
	TCase *tc = tcase_create("threads");
	tcase_set_timeout(tc, 120);
	H_ADD(tc, stress_threads);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return h_main(suite());
}
