/* SPDX-License-Identifier: BSD-3-Clause */
/* check_mdupdate.c - PtlMDUpdate, the conditional atomic replace (§4.9,
 * §7 MDUpdate, DECISION: old_md is filled even on PTL_MD_NO_UPDATE). */
#include "harness.h"

#include <string.h>

static char mb[64], mb2[64];

/* §7: OK with PTL_EQ_NONE; old_md filled; the new values take effect. */
START_TEST(update_eq_none)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL);
	ptl_handle_md_t md;
	ptl_md_t d = h_md(mb, 64, 3, PTL_MD_OP_PUT, PTL_EQ_NONE), n, old;

	d.user_ptr = (void *)0x55;
	H_OK(PtlMDBind(ni, d, PTL_RETAIN, &md));
	n = h_md(mb2, 32, 7, PTL_MD_OP_GET, PTL_EQ_NONE);
	n.user_ptr = (void *)0x66;
	memset(&old, 0xEE, sizeof(old));
	H_OK(PtlMDUpdate(md, &old, &n, PTL_EQ_NONE));
	H_EQ((uintptr_t)old.start, (uintptr_t)mb);
	H_EQ(old.length, 64);
	H_EQ(old.threshold, 3);
	H_EQ(old.options, PTL_MD_OP_PUT);
	H_EQ((uintptr_t)old.user_ptr, 0x55);
	H_EQ(old.eq_handle, PTL_EQ_NONE);
	H_OK(PtlMDUpdate(md, &old, NULL, PTL_EQ_NONE));
	H_EQ((uintptr_t)old.start, (uintptr_t)mb2);
	H_EQ(old.length, 32);
	H_EQ(old.threshold, 7);
	H_EQ((uintptr_t)old.user_ptr, 0x66);
	/* old_md may be NULL */
	H_OK(PtlMDUpdate(md, NULL, &d, PTL_EQ_NONE));
	H_OK(PtlMDUnlink(md));
	h_close(ni);
}
END_TEST

/* §7: OK with an empty EQ; NO_UPDATE with an unread event (old_md still
 * filled, the MD unchanged); OK again once the event has been read. */
START_TEST(update_eq_unread_event)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL);
	struct h_ctx c;
	ptl_handle_eq_t eq;
	ptl_handle_md_t md, src;
	ptl_handle_me_t me;
	ptl_md_t n = h_md(mb, 64, 9, PTL_MD_OP_PUT, PTL_EQ_NONE), old;
	ptl_event_t ev;
	char buf[4] = {0};

	h_ctx_single(&c, ni);
	H_OK(PtlEQAlloc(ni, 16, PTL_EQ_HANDLER_NONE, &eq));
	me = h_me_md(&c, H_PT, h_any_id, 1, 0, PTL_RETAIN, h_md(mb, 64, 4, PTL_MD_OP_PUT, eq),
	             PTL_RETAIN, &md);
	n.eq_handle = eq;
	H_OK(PtlMDUpdate(md, &old, &n, eq)); /* empty: OK */
	H_EQ(old.threshold, 4);
	/* one put to ourselves: PUT_START/PUT_END now unread in eq */
	src = h_bind(&c, h_md(buf, 4, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE), PTL_RETAIN);
	H_OK(PtlPut(src, PTL_NO_ACK_REQ, c.me, H_PT, 0, 1, 0, 0));
	h_wait_sr(&c, PTL_SR_RECV_COUNT, 1);
	h_idle(&c, 20);
	memset(&old, 0, sizeof(old));
	n.threshold = 2;
	H_RC(PtlMDUpdate(md, &old, &n, eq), PTL_MD_NO_UPDATE);
	H_EQ(old.threshold, 8); /* DECISION: filled; 9 - 1 put */
	H_EQ(old.length, 64);
	H_OK(PtlMDUpdate(md, &old, NULL, PTL_EQ_NONE));
	H_EQ(old.threshold, 8); /* unchanged by the refused update */
	h_expect(eq, PTL_EVENT_PUT_START, &ev);
	H_RC(PtlMDUpdate(md, &old, &n, eq), PTL_MD_NO_UPDATE); /* END still unread */
	h_expect(eq, PTL_EVENT_PUT_END, &ev);
	H_OK(PtlMDUpdate(md, &old, &n, eq));
	H_OK(PtlMDUpdate(md, &old, NULL, PTL_EQ_NONE));
	H_EQ(old.threshold, 2);
	H_OK(PtlMDUnlink(src));
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
	h_close(ni);
}
END_TEST

/* §7: reactivation: an exhausted (threshold 0) attached MD is revived by an
 * update and matches again. */
START_TEST(update_reactivates)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL);
	struct h_ctx c;
	ptl_handle_eq_t eq;
	ptl_handle_md_t md, src;
	ptl_handle_me_t me;
	ptl_md_t d = h_md(mb, 64, 0, PTL_MD_OP_PUT, PTL_EQ_NONE), old;
	char buf[4] = {0};
	ptl_event_t ev;

	h_ctx_single(&c, ni);
	H_OK(PtlEQAlloc(ni, 16, PTL_EQ_HANDLER_NONE, &eq));
	d.eq_handle = eq;
	me = h_me_md(&c, H_PT, h_any_id, 1, 0, PTL_RETAIN, d, PTL_RETAIN, &md);
	src = h_bind(&c, h_md(buf, 4, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE), PTL_RETAIN);
	H_OK(PtlPut(src, PTL_NO_ACK_REQ, c.me, H_PT, 0, 1, 0, 0));
	h_wait_sr(&c, PTL_SR_DROP_COUNT, 1);
	H_RC(PtlEQGet(eq, &ev), PTL_EQ_EMPTY);
	d.threshold = 1;
	H_OK(PtlMDUpdate(md, &old, &d, eq));
	H_EQ(old.threshold, 0);
	H_OK(PtlPut(src, PTL_NO_ACK_REQ, c.me, H_PT, 0, 1, 0, 0));
	h_expect(eq, PTL_EVENT_PUT_START, &ev);
	h_expect(eq, PTL_EVENT_PUT_END, &ev);
	H_EQ(ev.md_handle, md);
	H_EQ(h_sr(&c, PTL_SR_DROP_COUNT), 1);
	H_OK(PtlMDUnlink(src));
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
	h_close(ni);
}
END_TEST

/* Argument errors of PtlMDUpdate. */
START_TEST(update_errors)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL);
	ptl_handle_md_t md;
	ptl_md_t d = h_md(mb, 64, 1, 0, PTL_EQ_NONE), old;

	H_OK(PtlMDBind(ni, d, PTL_RETAIN, &md));
	H_RC(PtlMDUpdate(md, &old, &d, PTL_INVALID_HANDLE), PTL_EQ_INVALID);
	H_RC(PtlMDUpdate(PTL_INVALID_HANDLE, &old, &d, PTL_EQ_NONE), PTL_MD_INVALID);
	d.options = PTL_MD_IOVEC;
	d.start = NULL;
	d.length = 1;
	H_RC(PtlMDUpdate(md, &old, &d, PTL_EQ_NONE), PTL_MD_ILLEGAL);
	H_OK(PtlMDUnlink(md));
	H_RC(PtlMDUpdate(md, &old, NULL, PTL_EQ_NONE), PTL_MD_INVALID);
	h_close(ni);
}
END_TEST

/* §7: race test: the MPI "search the unexpected queue, then post" pattern
 * loses no message.  The target posts receives (MEs before a catch-all)
 * with inactive MDs and activates each with PtlMDUpdate conditional on the
 * unexpected EQ being empty, while the initiator streams messages.  Every
 * message must land exactly once: in its posted MD or in the unexpected
 * MD, never both, never dropped. */
#define RACE_N 300
H_PAIR_TEST(update_race)
static void update_race_tgt(struct h_ctx *c)
{
	static unsigned char ubuf[RACE_N * 8], rbuf[RACE_N][8];
	static ptl_handle_me_t me[RACE_N];
	static ptl_handle_md_t md[RACE_N];
	static unsigned char seen[RACE_N];
	ptl_handle_eq_t ueq = h_eq(c, 4096), req = h_eq(c, 4096);
	ptl_handle_md_t umd;
	ptl_handle_me_t ume = h_me_md(
	    c, H_PT, h_any_id, 0, ~0ull, PTL_RETAIN,
	    h_md(ubuf, sizeof(ubuf), PTL_MD_THRESH_INF, PTL_MD_OP_PUT, ueq), PTL_RETAIN, &umd);
	int unexpected = 0, posted = 0, retries = 0;
	ptl_event_t ev;
	ptl_sr_value_t d0 = h_sr(c, PTL_SR_DROP_COUNT);

	memset(seen, 0, sizeof(seen));
	h_sync(c);
	for (int i = 0; i < RACE_N; i++) {
		ptl_md_t d = h_md(rbuf[i], 8, 0, PTL_MD_OP_PUT, req);
		H_OK(PtlMEInsert(ume, h_any_id, (ptl_match_bits_t)i + 1, 0, PTL_RETAIN,
		                 PTL_INS_BEFORE, &me[i]));
		H_OK(PtlMDAttach(me[i], d, PTL_RETAIN, &md[i]));
		d.threshold = 1;
		for (;;) {
			/* search: drain the unexpected queue */
			int rc;
			while ((rc = PtlEQGet(ueq, &ev)) == PTL_OK) {
				if (ev.type != PTL_EVENT_PUT_END)
					continue;
				H_TRUE(ev.match_bits >= 1 && ev.match_bits <= RACE_N);
				H_EQ(seen[ev.match_bits - 1], 0);
				seen[ev.match_bits - 1] = 1;
				unexpected++;
			}
			H_RC(rc, PTL_EQ_EMPTY);
			if (seen[i])
				break; /* already arrived: the posted MD stays inactive */
			rc = PtlMDUpdate(md[i], NULL, &d, ueq);
			if (rc == PTL_OK)
				break;
			H_RC(rc, PTL_MD_NO_UPDATE);
			retries++;
		}
	}
	/* collect the rest */
	while (posted + unexpected < RACE_N) {
		ptl_handle_eq_t both[2] = {req, ueq};
		int which;
		int rc = PtlEQPoll(both, 2, H_EV_TIMEOUT_MS, &ev, &which);
		if (rc == PTL_EQ_EMPTY)
			h_fail(__FILE__, __LINE__, "lost messages: %d posted + %d unexpected of %d",
			       posted, unexpected, RACE_N);
		H_OK(rc);
		if (ev.type != PTL_EVENT_PUT_END)
			continue;
		H_TRUE(ev.match_bits >= 1 && ev.match_bits <= RACE_N);
		H_EQ(seen[ev.match_bits - 1], 0);
		seen[ev.match_bits - 1] = 1 + which;
		if (which == 0) {
			posted++;
			H_EQ(ev.md_handle, md[ev.match_bits - 1]);
			H_PAT(rbuf[ev.match_bits - 1], 8, (uint32_t)ev.match_bits, 0);
		} else {
			unexpected++;
		}
	}
	h_expect_none(req, 20);
	h_expect_none(ueq, 20);
	H_EQ(h_sr(c, PTL_SR_DROP_COUNT), d0);
	printf("update_race over %s: %d posted, %d unexpected, %d update retries\n",
	       h_mode_name(c->mode), posted, unexpected, retries);
	h_sync(c);
	for (int i = 0; i < RACE_N; i++)
		H_OK(PtlMEUnlink(me[i]));
	H_OK(PtlMEUnlink(ume));
	H_OK(PtlEQFree(ueq));
	H_OK(PtlEQFree(req));
}
static void update_race_ini(struct h_ctx *c)
{
	unsigned char buf[8];
	ptl_handle_eq_t eq = h_eq(c, 64);
	ptl_handle_md_t md;
	h_sync(c);
	for (int i = 0; i < RACE_N; i++) {
		h_fill(buf, 8, (uint32_t)i + 1, 0);
		md = h_bind(c, h_md(buf, 8, 1, 0, eq), PTL_RETAIN);
		H_OK(PtlPut(md, PTL_NO_ACK_REQ, h_peer(c), H_PT, 0, (ptl_match_bits_t)i + 1, 0, 0));
		h_expect(eq, PTL_EVENT_SEND_START, NULL);
		h_expect(eq, PTL_EVENT_SEND_END, NULL);
		H_OK(PtlMDUnlink(md));
	}
	h_sync(c);
	H_OK(PtlEQFree(eq));
}

static Suite *suite(void)
{
	Suite *s = suite_create("mdupdate");
	TCase *tc = tcase_create("mdupdate");
	tcase_set_timeout(tc, 90);
	H_ADD(tc, update_eq_none);
	H_ADD(tc, update_eq_unread_event);
	H_ADD(tc, update_reactivates);
	H_ADD(tc, update_errors);
	H_ADD(tc, update_race);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return h_main(suite());
}
