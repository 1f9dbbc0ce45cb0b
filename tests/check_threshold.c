/* SPDX-License-Identifier: BSD-3-Clause */
/* check_threshold.c - thresholds, initiator accounting and unlinking
 * (§4.4, §7 Threshold/unlink), over lo and shmem (app, thread). */
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tb[256];

static void expect_put_pair(ptl_handle_eq_t eq, ptl_handle_md_t md)
{
	ptl_event_t ev;
	h_expect(eq, PTL_EVENT_PUT_START, &ev);
	H_EQ(ev.md_handle, md);
	h_expect(eq, PTL_EVENT_PUT_END, &ev);
	H_EQ(ev.md_handle, md);
}

/* §7: threshold N admits exactly N operations (RETAIN: no unlink). */
H_PAIR_TEST(threshold_n_exact)
static void threshold_n_exact_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t md;
	ptl_handle_me_t me = h_me_md(c, H_PT, h_any_id, 1, 0, PTL_RETAIN,
	                             h_md(tb, 256, 3, PTL_MD_OP_PUT, eq), PTL_RETAIN, &md);
	ptl_sr_value_t d0 = h_sr(c, PTL_SR_DROP_COUNT);
	ptl_md_t old;

	h_sync(c);
	for (int i = 0; i < 3; i++)
		expect_put_pair(eq, md);
	h_wait_sr(c, PTL_SR_DROP_COUNT, d0 + 1);
	h_expect_none(eq, 50);
	H_EQ(h_sr(c, PTL_SR_DROP_COUNT), d0 + 1);
	H_OK(PtlMDUpdate(md, &old, NULL, PTL_EQ_NONE));
	H_EQ(old.threshold, 0);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void threshold_n_exact_ini(struct h_ctx *c)
{
	char buf[8] = {0};
	h_sync(c);
	for (int i = 0; i < 4; i++)
		h_put(c, h_peer(c), H_PT, 1, 0, buf, 8, PTL_NO_ACK_REQ, 0);
	h_sync(c);
}

/* §7: PTL_MD_THRESH_INF never runs out. */
#define INF_N 100
H_PAIR_TEST(thresh_inf)
static void thresh_inf_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 512);
	ptl_handle_md_t md;
	ptl_handle_me_t me =
	    h_me_md(c, H_PT, h_any_id, 2, 0, PTL_RETAIN,
	            h_md(tb, 8, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, eq),
	            PTL_RETAIN, &md);
	int cnt[PTL_EVENT_KIND_MAX];
	ptl_md_t old;

	h_sync(c);
	h_collect(eq, 2 * INF_N, cnt);
	H_EQ(cnt[PTL_EVENT_PUT_START], INF_N);
	H_EQ(cnt[PTL_EVENT_PUT_END], INF_N);
	h_expect_none(eq, 20);
	H_OK(PtlMDUpdate(md, &old, NULL, PTL_EQ_NONE));
	H_EQ(old.threshold, PTL_MD_THRESH_INF);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void thresh_inf_ini(struct h_ctx *c)
{
	char buf[8] = {0};
	ptl_handle_eq_t eq = h_eq(c, 1024);
	ptl_handle_md_t md = h_bind(c, h_md(buf, 8, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN);
	int cnt[PTL_EVENT_KIND_MAX];
	h_sync(c);
	for (int i = 0; i < INF_N; i++)
		H_OK(PtlPut(md, PTL_NO_ACK_REQ, h_peer(c), H_PT, 0, 2, 0, 0));
	h_collect(eq, 2 * INF_N, cnt);
	H_EQ(cnt[PTL_EVENT_SEND_START], INF_N);
	H_EQ(cnt[PTL_EVENT_SEND_END], INF_N);
	h_sync(c);
	H_OK(PtlMDUnlink(md));
	H_OK(PtlEQFree(eq));
}

/* §7: initiator accounting for puts: the send counts 1 and the ACK 1, so a
 * threshold-2 MD takes its ack and then unlinks; a threshold-1 MD unlinks
 * after the send and the ack is dropped (counted in PTL_SR_ACK_DROPPED). */
H_PAIR_TEST(initiator_put_accounting)
static void initiator_put_accounting_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t md;
	ptl_handle_me_t me =
	    h_me_md(c, H_PT, h_any_id, 3, 0, PTL_RETAIN,
	            h_md(tb, 64, PTL_MD_THRESH_INF, PTL_MD_OP_PUT, eq), PTL_RETAIN, &md);
	h_sync(c);
	expect_put_pair(eq, md);
	expect_put_pair(eq, md);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void initiator_put_accounting_ini(struct h_ctx *c)
{
	char buf[16] = {0};
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t md = h_bind(c, h_md(buf, 16, 2, 0, eq), PTL_UNLINK);
	ptl_event_t ev;
	int cnt[PTL_EVENT_KIND_MAX];
	ptl_sr_value_t a0;

	h_sync(c);
	H_OK(PtlPut(md, PTL_ACK_REQ, h_peer(c), H_PT, 0, 3, 0, 0));
	h_collect(eq, 3, cnt);
	H_EQ(cnt[PTL_EVENT_SEND_START], 1);
	H_EQ(cnt[PTL_EVENT_SEND_END], 1);
	H_EQ(cnt[PTL_EVENT_ACK], 1);
	h_expect(eq, PTL_EVENT_UNLINK, &ev);
	H_EQ(ev.md_handle, md);
	H_RC(PtlMDUnlink(md), PTL_MD_INVALID);

	/* threshold 1: the send exhausts it; the ack finds a stale MD */
	a0 = h_sr(c, PTL_SR_ACK_DROPPED);
	md = h_bind(c, h_md(buf, 16, 1, 0, eq), PTL_UNLINK);
	H_OK(PtlPut(md, PTL_ACK_REQ, h_peer(c), H_PT, 0, 3, 0, 0));
	h_expect(eq, PTL_EVENT_SEND_START, &ev);
	h_expect(eq, PTL_EVENT_SEND_END, &ev);
	h_expect(eq, PTL_EVENT_UNLINK, &ev);
	h_wait_sr(c, PTL_SR_ACK_DROPPED, a0 + 1);
	h_expect_none(eq, 50);
	H_RC(PtlMDUnlink(md), PTL_MD_INVALID);
	h_sync(c);
	H_OK(PtlEQFree(eq));
}

/* §7: initiator accounting for gets: sending the request counts 0, the
 * reply 1: a threshold-1 MD receives its reply, then unlinks. */
H_PAIR_TEST(initiator_get_accounting)
static void initiator_get_accounting_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t md;
	ptl_handle_me_t me =
	    h_me_md(c, H_PT, h_any_id, 4, 0, PTL_RETAIN,
	            h_md(tb, 32, PTL_MD_THRESH_INF, PTL_MD_OP_GET, eq), PTL_RETAIN, &md);
	ptl_event_t ev;
	h_fill(tb, 32, 4, 0);
	h_sync(c);
	h_expect(eq, PTL_EVENT_GET_START, &ev);
	h_expect(eq, PTL_EVENT_GET_END, &ev);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void initiator_get_accounting_ini(struct h_ctx *c)
{
	char buf[32] = {0};
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t md = h_bind(c, h_md(buf, 32, 1, 0, eq), PTL_UNLINK);
	ptl_event_t ev;

	h_sync(c);
	H_OK(PtlGet(md, h_peer(c), H_PT, 0, 4, 0));
	h_expect(eq, PTL_EVENT_REPLY_START, &ev);
	h_expect(eq, PTL_EVENT_REPLY_END, &ev);
	H_EQ(ev.mlength, 32);
	h_expect(eq, PTL_EVENT_UNLINK, &ev);
	H_EQ(ev.md_handle, md);
	H_PAT(buf, 32, 4, 0);
	H_RC(PtlMDUnlink(md), PTL_MD_INVALID);
	h_sync(c);
	H_OK(PtlEQFree(eq));
}

/* §7: auto-unlink: END then UNLINK, and an ME created with PTL_UNLINK goes too. */
H_PAIR_TEST(auto_unlink_order)
static void auto_unlink_order_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t md;
	ptl_handle_me_t me = h_me_md(c, H_PT, h_any_id, 5, 0, PTL_UNLINK,
	                             h_md(tb, 32, 1, PTL_MD_OP_PUT, eq), PTL_UNLINK, &md);
	ptl_event_t s, e, u;
	h_sync(c);
	h_expect(eq, PTL_EVENT_PUT_START, &s);
	h_expect(eq, PTL_EVENT_PUT_END, &e);
	h_expect(eq, PTL_EVENT_UNLINK, &u);
	H_EQ(u.md_handle, md);
	H_TRUE((int32_t)(u.sequence - e.sequence) > 0);
	H_EQ(u.ni_fail_type, PTL_NI_OK);
	h_expect_none(eq, 20);
	H_RC(PtlMDUnlink(md), PTL_MD_INVALID);
	H_RC(PtlMEUnlink(me), PTL_ME_INVALID);
	h_sync(c);
	H_OK(PtlEQFree(eq));
}
static void auto_unlink_order_ini(struct h_ctx *c)
{
	char buf[32] = {0};
	h_sync(c);
	h_put(c, h_peer(c), H_PT, 5, 0, buf, 32, PTL_NO_ACK_REQ, 0);
	h_sync(c);
}

/* §7: RETAIN keeps an exhausted MD; PtlMDUpdate reactivates it. */
H_PAIR_TEST(retain_update_reactivates)
static void retain_update_reactivates_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t md;
	ptl_md_t d = h_md(tb, 32, 1, PTL_MD_OP_PUT, eq), old;
	ptl_handle_me_t me = h_me_md(c, H_PT, h_any_id, 6, 0, PTL_RETAIN, d, PTL_RETAIN, &md);
	ptl_sr_value_t d0 = h_sr(c, PTL_SR_DROP_COUNT);

	h_sync(c);
	expect_put_pair(eq, md);
	h_sync(c);
	h_wait_sr(c, PTL_SR_DROP_COUNT, d0 + 1); /* second put: MD inactive */
	h_expect_none(eq, 20);
	H_OK(PtlMDUpdate(md, &old, &d, eq));
	H_EQ(old.threshold, 0);
	h_sync(c);
	expect_put_pair(eq, md);
	h_sync(c);
	H_EQ(h_sr(c, PTL_SR_DROP_COUNT), d0 + 1);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void retain_update_reactivates_ini(struct h_ctx *c)
{
	char buf[8] = {0};
	h_sync(c);
	h_put(c, h_peer(c), H_PT, 6, 0, buf, 8, PTL_NO_ACK_REQ, 0);
	h_put(c, h_peer(c), H_PT, 6, 0, buf, 8, PTL_NO_ACK_REQ, 0);
	h_sync(c);
	h_sync(c);
	h_put(c, h_peer(c), H_PT, 6, 0, buf, 8, PTL_NO_ACK_REQ, 0);
	h_sync(c);
}

/* §7: threshold 0 (at creation or set by PtlMDUpdate) never unlinks, even
 * with PTL_UNLINK. */
H_PAIR_TEST(threshold0_never_unlinks)
static void threshold0_never_unlinks_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t md0, md5;
	ptl_md_t z = h_md(tb, 32, 0, PTL_MD_OP_PUT, eq), old;
	ptl_handle_me_t me0 = h_me_md(c, H_PT, h_any_id, 7, 0, PTL_UNLINK, z, PTL_UNLINK, &md0);
	ptl_handle_me_t me5 = h_me_md(c, H_PT, h_any_id, 8, 0, PTL_UNLINK,
	                              h_md(tb, 32, 5, PTL_MD_OP_PUT, eq), PTL_UNLINK, &md5);
	ptl_sr_value_t d0 = h_sr(c, PTL_SR_DROP_COUNT);

	H_OK(PtlMDUpdate(md5, &old, &z, PTL_EQ_NONE));
	H_EQ(old.threshold, 5);
	h_sync(c);
	h_wait_sr(c, PTL_SR_DROP_COUNT, d0 + 2);
	h_expect_none(eq, 50);
	/* both still exist */
	H_OK(PtlMDUpdate(md0, &old, NULL, PTL_EQ_NONE));
	H_EQ(old.threshold, 0);
	H_OK(PtlMDUpdate(md5, &old, NULL, PTL_EQ_NONE));
	H_EQ(old.threshold, 0);
	h_sync(c);
	H_OK(PtlMEUnlink(me0));
	H_OK(PtlMEUnlink(me5));
	H_OK(PtlEQFree(eq));
}
static void threshold0_never_unlinks_ini(struct h_ctx *c)
{
	char buf[8] = {0};
	h_sync(c);
	h_put(c, h_peer(c), H_PT, 7, 0, buf, 8, PTL_NO_ACK_REQ, 0);
	h_put(c, h_peer(c), H_PT, 8, 0, buf, 8, PTL_NO_ACK_REQ, 0);
	h_sync(c);
}

/* §7: PtlMDUnlink with pending operations -> PTL_MD_IN_USE, and no UNLINK
 * event, before or after a later successful PtlMDUnlink.  A 64 MiB put is
 * in flight while the target (app progress) does not call into Portals. */
#define BIG (64u << 20)
H_PAIR_TEST(mdunlink_pending_in_use)
static void mdunlink_pending_in_use_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t md;
	char *big = malloc(BIG);
	ptl_handle_me_t me;
	uint64_t deadline;

	H_TRUE(big != NULL);
	me = h_me_md(c, H_PT, h_any_id, 9, 0, PTL_RETAIN, h_md(big, BIG, 1, PTL_MD_OP_PUT, eq),
	             PTL_RETAIN, &md);
	h_sync(c);
	/* stay out of Portals until the initiator has tried PtlMDUnlink */
	deadline = h_now_ms() + 30000;
	while (atomic_load(&c->sh->counter[0]) == 0 && h_now_ms() < deadline)
		usleep(1000);
	H_EQ(atomic_load(&c->sh->counter[0]), 1);
	expect_put_pair(eq, md);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
	free(big);
}
static void mdunlink_pending_in_use_ini(struct h_ctx *c)
{
	char *big = malloc(BIG);
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t md;
	ptl_event_t ev;
	int rc;

	H_TRUE(big != NULL);
	memset(big, 0x5a, BIG);
	md = h_bind(c, h_md(big, BIG, 1, 0, eq), PTL_RETAIN);
	h_sync(c);
	H_OK(PtlPut(md, PTL_NO_ACK_REQ, h_peer(c), H_PT, 0, 9, 0, 0));
	h_expect(eq, PTL_EVENT_SEND_START, &ev);
	rc = PtlMDUnlink(md);
	atomic_store(&c->sh->counter[0], 1);
	H_RC(rc, PTL_MD_IN_USE);
	h_expect(eq, PTL_EVENT_SEND_END, &ev);
	H_OK(PtlMDUnlink(md));
	h_expect_none(eq, 50); /* explicit unlink: no UNLINK event */
	h_sync(c);
	H_OK(PtlEQFree(eq));
	free(big);
}

/* §7: PtlMDAttach on an ME that already has an MD -> PTL_ME_IN_USE. */
START_TEST(mdattach_busy_me)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL);
	ptl_handle_me_t me;
	ptl_handle_md_t md, md2 = PTL_INVALID_HANDLE;

	H_OK(PtlMEAttach(ni, H_PT, h_any_id, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me));
	H_OK(PtlMDAttach(me, h_md(tb, 8, 1, PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_RETAIN, &md));
	H_RC(PtlMDAttach(me, h_md(tb, 8, 1, PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_RETAIN, &md2),
	     PTL_ME_IN_USE);
	H_EQ(md2, PTL_INVALID_HANDLE); /* outputs set only on success */
	/* after unlinking the MD the ME takes a new one */
	H_OK(PtlMDUnlink(md));
	H_OK(PtlMDAttach(me, h_md(tb, 8, 1, PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_RETAIN, &md2));
	H_OK(PtlMEUnlink(me));
	h_close(ni);
}
END_TEST

/* §7: PtlMEUnlink releases the ME's MD (whatever its unlink option). */
START_TEST(meunlink_releases_md)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL);
	ptl_handle_me_t me;
	ptl_handle_md_t md;
	ptl_handle_eq_t eq;
	ptl_event_t ev;
	ptl_md_t old;

	H_OK(PtlEQAlloc(ni, 8, PTL_EQ_HANDLER_NONE, &eq));
	H_OK(PtlMEAttach(ni, H_PT, h_any_id, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me));
	H_OK(PtlMDAttach(me, h_md(tb, 8, 1, PTL_MD_OP_PUT, eq), PTL_RETAIN, &md));
	H_EQ(h_sr_ni(ni, PTL_SR_MDS_ALLOCATED), 1);
	H_OK(PtlMEUnlink(me));
	H_RC(PtlMDUpdate(md, &old, NULL, PTL_EQ_NONE), PTL_MD_INVALID);
	H_RC(PtlMDUnlink(md), PTL_MD_INVALID);
	H_EQ(h_sr_ni(ni, PTL_SR_MDS_ALLOCATED), 0);
	H_RC(PtlEQGet(eq, &ev), PTL_EQ_EMPTY); /* explicit: no UNLINK event */
	H_OK(PtlEQFree(eq));
	h_close(ni);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("threshold");
	TCase *tc = tcase_create("threshold");
	tcase_set_timeout(tc, 90);
	H_ADD(tc, threshold_n_exact);
	H_ADD(tc, thresh_inf);
	H_ADD(tc, initiator_put_accounting);
	H_ADD(tc, initiator_get_accounting);
	H_ADD(tc, auto_unlink_order);
	H_ADD(tc, retain_update_reactivates);
	H_ADD(tc, threshold0_never_unlinks);
	H_ADD_X(tc, mdunlink_pending_in_use, H_X_LO | H_X_THREADS,
	        "needs an operation that stays pending: lo completes sends inside PtlPut, and a "
	        "progress thread may finish the transfer before PtlMDUnlink runs");
	H_ADD(tc, mdattach_busy_me);
	H_ADD(tc, meunlink_releases_md);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return h_main(suite());
}
