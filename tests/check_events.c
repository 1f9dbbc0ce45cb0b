/* SPDX-License-Identifier: BSD-3-Clause */
/* check_events.c - which events, in what order, with which fields (§4.7,
 * §7 Events), over lo and shmem (app, thread). */
#include "harness.h"

#include <string.h>
#include <unistd.h>

static char tb[128];
#define UPTR_T ((void *)0x7A7A)
#define UPTR_I ((void *)0x1B1B)

static void check_md_snapshot(const ptl_event_t *ev, void *start, ptl_size_t len, int thr,
                              unsigned opts, void *uptr, ptl_handle_eq_t eq)
{
	H_EQ((uintptr_t)ev->md.start, (uintptr_t)start);
	H_EQ(ev->md.length, len);
	H_EQ(ev->md.threshold, thr);
	H_EQ(ev->md.options, opts);
	H_EQ((uintptr_t)ev->md.user_ptr, (uintptr_t)uptr);
	H_EQ(ev->md.eq_handle, eq);
}

/* §7: put: SEND_START/SEND_END/ACK at the initiator and PUT_START/PUT_END
 * at the target, in that order, with every field right. */
H_PAIR_TEST(put_events_fields)
static void put_events_fields_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_md_t d = h_md(tb, 128, 5, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, eq);
	ptl_handle_md_t md;
	ptl_handle_me_t me;
	ptl_event_t s, e;

	d.user_ptr = UPTR_T;
	me = h_me_md(c, H_PT, h_any_id, 0x42, 0xF00, PTL_RETAIN, d, PTL_RETAIN, &md);
	h_sync(c);
	h_expect(eq, PTL_EVENT_PUT_START, &s);
	h_expect(eq, PTL_EVENT_PUT_END, &e);
	for (int k = 0; k < 2; k++) {
		const ptl_event_t *ev = k ? &e : &s;
		H_EQ(ev->initiator.nid, h_peer(c).nid);
		H_EQ(ev->initiator.pid, h_peer(c).pid);
		H_EQ(ev->uid, getuid());
		H_EQ(ev->jid, h_val(c, 1, 0));
		H_EQ(ev->pt_index, H_PT);
		H_EQ(ev->match_bits, 0x342);
		H_EQ(ev->rlength, 48);
		H_EQ(ev->mlength, 48);
		H_EQ(ev->offset, 16);
		H_EQ(ev->md_handle, md);
		H_EQ(ev->hdr_data, 0x0123456789ABCDEFull);
		H_EQ(ev->ni_fail_type, PTL_NI_OK);
		check_md_snapshot(ev, tb, 128, 4, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, UPTR_T, eq);
	}
	H_EQ(s.link, e.link);
	H_TRUE((int32_t)(e.sequence - s.sequence) > 0);
	H_PAT(tb + 16, 48, 77, 0);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void put_events_fields_ini(struct h_ctx *c)
{
	char buf[48];
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_md_t d = h_md(buf, 48, PTL_MD_THRESH_INF, 0, eq);
	ptl_handle_md_t md;
	ptl_event_t s, e, a;

	h_pub(c, 0, c->jid);
	h_fill(buf, 48, 77, 0);
	d.user_ptr = UPTR_I;
	md = h_bind(c, d, PTL_RETAIN);
	h_sync(c);
	H_OK(PtlPut(md, PTL_ACK_REQ, h_peer(c), H_PT, 0, 0x342, 16, 0x0123456789ABCDEFull));
	h_expect(eq, PTL_EVENT_SEND_START, &s);
	h_expect(eq, PTL_EVENT_SEND_END, &e);
	h_expect(eq, PTL_EVENT_ACK, &a);
	H_EQ(s.link, e.link);
	H_TRUE((int32_t)(e.sequence - s.sequence) > 0);
	H_TRUE((int32_t)(a.sequence - e.sequence) > 0);
	for (int k = 0; k < 3; k++) {
		const ptl_event_t *ev = k == 0 ? &s : k == 1 ? &e : &a;
		H_EQ(ev->md_handle, md);
		H_EQ((uintptr_t)ev->md.user_ptr, (uintptr_t)UPTR_I);
		H_EQ(ev->md.length, 48);
		H_EQ(ev->ni_fail_type, PTL_NI_OK);
		H_EQ(ev->match_bits, 0x342);
		H_EQ(ev->pt_index, H_PT);
	}
	H_EQ(e.mlength, 48);
	H_EQ(a.mlength, 48);
	H_EQ(a.offset, 16);
	h_sync(c);
	h_expect_none(eq, 20);
	H_OK(PtlMDUnlink(md));
	H_OK(PtlEQFree(eq));
}

/* §7: get: GET_START/GET_END at the target, REPLY_START/REPLY_END at the
 * initiator, with every field right. */
H_PAIR_TEST(get_events_fields)
static void get_events_fields_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_md_t d = h_md(tb, 128, PTL_MD_THRESH_INF, PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, eq);
	ptl_handle_md_t md;
	ptl_handle_me_t me;
	ptl_event_t s, e;

	h_fill(tb, 128, 78, 0);
	d.user_ptr = UPTR_T;
	me = h_me_md(c, H_PT, h_any_id, 0x43, 0, PTL_RETAIN, d, PTL_RETAIN, &md);
	h_sync(c);
	h_expect(eq, PTL_EVENT_GET_START, &s);
	h_expect(eq, PTL_EVENT_GET_END, &e);
	for (int k = 0; k < 2; k++) {
		const ptl_event_t *ev = k ? &e : &s;
		H_EQ(ev->initiator.nid, h_peer(c).nid);
		H_EQ(ev->initiator.pid, h_peer(c).pid);
		H_EQ(ev->uid, getuid());
		H_EQ(ev->pt_index, H_PT);
		H_EQ(ev->match_bits, 0x43);
		H_EQ(ev->rlength, 40);
		H_EQ(ev->mlength, 40);
		H_EQ(ev->offset, 8);
		H_EQ(ev->md_handle, md);
		H_EQ(ev->ni_fail_type, PTL_NI_OK);
		check_md_snapshot(ev, tb, 128, PTL_MD_THRESH_INF,
		                  PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, UPTR_T, eq);
	}
	H_EQ(s.link, e.link);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void get_events_fields_ini(struct h_ctx *c)
{
	char buf[64];
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_md_t d = h_md(buf, 64, 3, 0, eq);
	ptl_handle_md_t md;
	ptl_event_t s, e;

	memset(buf, 0, sizeof(buf));
	d.user_ptr = UPTR_I;
	md = h_bind(c, d, PTL_RETAIN);
	h_sync(c);
	H_OK(PtlGetRegion(md, 10, 40, h_peer(c), H_PT, 0, 0x43, 8));
	h_expect(eq, PTL_EVENT_REPLY_START, &s);
	h_expect(eq, PTL_EVENT_REPLY_END, &e);
	H_EQ(s.link, e.link);
	for (int k = 0; k < 2; k++) {
		const ptl_event_t *ev = k ? &e : &s;
		H_EQ(ev->md_handle, md);
		H_EQ((uintptr_t)ev->md.user_ptr, (uintptr_t)UPTR_I);
		H_EQ(ev->md.threshold, 2); /* reply counted, request not */
		H_EQ(ev->ni_fail_type, PTL_NI_OK);
		H_EQ(ev->mlength, 40);
	}
	H_EQ(e.offset, 10); /* where the reply landed in the local MD */
	H_PAT(buf + 10, 40, 78, 8);
	H_EQ(buf[9], 0);
	H_EQ(buf[50], 0);
	h_sync(c);
	h_expect_none(eq, 20);
	H_OK(PtlMDUnlink(md));
	H_OK(PtlEQFree(eq));
}

/* §7: link pairing: START and END share link; different operations differ. */
H_PAIR_TEST(link_pairing)
static void link_pairing_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 64);
	ptl_handle_md_t md;
	ptl_handle_me_t me =
	    h_me_md(c, H_PT, h_any_id, 3, 0, PTL_RETAIN,
	            h_md(tb, 8, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, eq),
	            PTL_RETAIN, &md);
	ptl_seq_t start_link[4];
	int nstart = 0, nend = 0;
	h_sync(c);
	for (int i = 0; i < 8; i++) {
		ptl_event_t ev;
		(void)h_next(eq, &ev);
		if (ev.type == PTL_EVENT_PUT_START) {
			H_TRUE(nstart < 4);
			for (int k = 0; k < nstart; k++)
				H_NE(start_link[k], ev.link);
			start_link[nstart++] = ev.link;
		} else {
			H_EVKIND(ev, PTL_EVENT_PUT_END);
			int found = 0;
			for (int k = 0; k < nstart; k++)
				found |= start_link[k] == ev.link;
			if (!found)
				h_fail(__FILE__, __LINE__,
				       "PUT_END link %u matches no earlier PUT_START", ev.link);
			nend++;
		}
	}
	H_EQ(nstart, 4);
	H_EQ(nend, 4);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void link_pairing_ini(struct h_ctx *c)
{
	char buf[8] = {0};
	ptl_handle_eq_t eq = h_eq(c, 64);
	ptl_handle_md_t md = h_bind(c, h_md(buf, 8, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN);
	ptl_seq_t links[4];
	int n = 0;
	h_sync(c);
	for (int i = 0; i < 4; i++)
		H_OK(PtlPut(md, PTL_NO_ACK_REQ, h_peer(c), H_PT, 0, 3, 0, 0));
	for (int i = 0; i < 8; i++) {
		ptl_event_t ev;
		(void)h_next(eq, &ev);
		if (ev.type == PTL_EVENT_SEND_START) {
			for (int k = 0; k < n; k++)
				H_NE(links[k], ev.link);
			links[n++] = ev.link;
		} else {
			H_EVKIND(ev, PTL_EVENT_SEND_END);
			int found = 0;
			for (int k = 0; k < n; k++)
				found |= links[k] == ev.link;
			H_TRUE(found);
		}
	}
	H_EQ(n, 4);
	h_sync(c);
	H_OK(PtlMDUnlink(md));
	H_OK(PtlEQFree(eq));
}

/* §7: sequence numbers increase along one EQ (across puts and gets). */
H_PAIR_TEST(sequence_increasing)
static void sequence_increasing_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 128);
	ptl_handle_md_t md;
	ptl_handle_me_t me = h_me_md(c, H_PT, h_any_id, 4, 0, PTL_RETAIN,
	                             h_md(tb, 8, PTL_MD_THRESH_INF,
	                                  PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, eq),
	                             PTL_RETAIN, &md);
	ptl_event_t ev;
	ptl_seq_t prev = 0;
	h_sync(c);
	for (int i = 0; i < 40; i++) {
		(void)h_next(eq, &ev);
		if (i > 0 && (int32_t)(ev.sequence - prev) <= 0)
			h_fail(__FILE__, __LINE__, "event %d: sequence %u after %u", i, ev.sequence,
			       prev);
		prev = ev.sequence;
	}
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void sequence_increasing_ini(struct h_ctx *c)
{
	char buf[8] = {0};
	h_sync(c);
	for (int i = 0; i < 10; i++) {
		h_put(c, h_peer(c), H_PT, 4, 0, buf, 8, PTL_ACK_REQ, 0);
		h_getdata(c, h_peer(c), H_PT, 4, 0, buf, 8);
	}
	h_sync(c);
}

/* §7: EVENT_START_DISABLE / EVENT_END_DISABLE suppress the START / END
 * events at the target and at the initiator. */
H_PAIR_TEST(start_end_disable)
static void start_end_disable_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t m1, m2;
	ptl_handle_me_t e1 = h_me_md(c, H_PT, h_any_id, 5, 0, PTL_RETAIN,
	                             h_md(tb, 8, 1, PTL_MD_OP_PUT | PTL_MD_EVENT_START_DISABLE, eq),
	                             PTL_RETAIN, &m1);
	ptl_handle_me_t e2 =
	    h_me_md(c, H_PT, h_any_id, 6, 0, PTL_RETAIN,
	            h_md(tb, 8, 1, PTL_MD_OP_PUT | PTL_MD_EVENT_END_DISABLE, eq), PTL_RETAIN, &m2);
	ptl_event_t ev;
	h_sync(c);
	h_expect(eq, PTL_EVENT_PUT_END, &ev);
	H_EQ(ev.md_handle, m1);
	h_expect(eq, PTL_EVENT_PUT_START, &ev);
	H_EQ(ev.md_handle, m2);
	h_sync(c);
	h_expect_none(eq, 50);
	H_OK(PtlMEUnlink(e1));
	H_OK(PtlMEUnlink(e2));
	H_OK(PtlEQFree(eq));
}
static void start_end_disable_ini(struct h_ctx *c)
{
	char buf[8] = {0};
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t s =
	    h_bind(c, h_md(buf, 8, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, eq), PTL_RETAIN);
	ptl_handle_md_t e =
	    h_bind(c, h_md(buf, 8, PTL_MD_THRESH_INF, PTL_MD_EVENT_END_DISABLE, eq), PTL_RETAIN);
	ptl_event_t ev;
	h_sync(c);
	H_OK(PtlPut(s, PTL_NO_ACK_REQ, h_peer(c), H_PT, 0, 5, 0, 0));
	h_expect(eq, PTL_EVENT_SEND_END, &ev);
	H_EQ(ev.md_handle, s);
	H_OK(PtlPut(e, PTL_NO_ACK_REQ, h_peer(c), H_PT, 0, 6, 0, 0));
	h_expect(eq, PTL_EVENT_SEND_START, &ev);
	H_EQ(ev.md_handle, e);
	h_sync(c);
	h_expect_none(eq, 50);
	H_OK(PtlMDUnlink(s));
	H_OK(PtlMDUnlink(e));
	H_OK(PtlEQFree(eq));
}

/* Extension PTL_MD_EVENT_UNLINK_DISABLE: a use-once MD that unlinks itself
 * posts its END event but no UNLINK; without the option, UNLINK follows.
 * Target: receive MDs; initiator: a bound send MD. */
H_PAIR_TEST(unlink_disable)
static void unlink_disable_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t m1, m2;
	h_me_md(c, H_PT, h_any_id, 7, 0, PTL_UNLINK, h_md(tb, 8, 1, PTL_MD_OP_PUT, eq), PTL_UNLINK,
	        &m1);
	h_me_md(c, H_PT, h_any_id, 8, 0, PTL_UNLINK,
	        h_md(tb + 8, 8, 1, PTL_MD_OP_PUT | PTL_MD_EVENT_UNLINK_DISABLE, eq), PTL_UNLINK,
	        &m2);
	ptl_event_t ev;
	h_sync(c);
	h_expect(eq, PTL_EVENT_PUT_START, &ev);
	h_expect(eq, PTL_EVENT_PUT_END, &ev);
	H_EQ(ev.md_handle, m1);
	h_expect(eq, PTL_EVENT_UNLINK, &ev);
	H_EQ(ev.md_handle, m1);
	h_sync(c);
	h_expect(eq, PTL_EVENT_PUT_START, &ev);
	h_expect(eq, PTL_EVENT_PUT_END, &ev);
	H_EQ(ev.md_handle, m2);
	h_expect_none(eq, 50);
	/* both MDs are gone (the second one silently) */
	H_RC(PtlMDUnlink(m1), PTL_MD_INVALID);
	H_RC(PtlMDUnlink(m2), PTL_MD_INVALID);
	h_sync(c);
	H_OK(PtlEQFree(eq));
}
static void unlink_disable_ini(struct h_ctx *c)
{
	char buf[8] = {0};
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t s = h_bind(
	    c, h_md(buf, 8, 1, PTL_MD_EVENT_START_DISABLE | PTL_MD_EVENT_UNLINK_DISABLE, eq),
	    PTL_UNLINK);
	ptl_event_t ev;
	h_sync(c);
	H_OK(PtlPut(s, PTL_NO_ACK_REQ, h_peer(c), H_PT, 0, 7, 0, 0));
	h_expect(eq, PTL_EVENT_SEND_END, &ev);
	H_EQ(ev.md_handle, s);
	h_expect_none(eq, 50);
	H_RC(PtlMDUnlink(s), PTL_MD_INVALID);
	h_sync(c);
	s = h_bind(c, h_md(buf, 8, 1, PTL_MD_EVENT_START_DISABLE | PTL_MD_EVENT_UNLINK_DISABLE, eq),
	           PTL_UNLINK);
	H_OK(PtlPut(s, PTL_NO_ACK_REQ, h_peer(c), H_PT, 0, 8, 0, 0));
	h_expect(eq, PTL_EVENT_SEND_END, &ev);
	h_expect_none(eq, 50);
	h_sync(c);
	H_OK(PtlEQFree(eq));
}

/* Extension PTL_MD_EVENT_SUCCESS_DISABLE: an MD posts no START, END or ACK
 * event of a successful operation (its UNLINK stays, under its own
 * option); the data moves as usual.  Target: a receive MD; initiator: a
 * bound send MD asking for an ACK. */
H_PAIR_TEST(success_disable)
static void success_disable_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t m1, m2;
	memset(tb, 0, 16);
	h_me_md(c, H_PT, h_any_id, 9, 0, PTL_UNLINK,
	        h_md(tb, 8, 1, PTL_MD_OP_PUT | PTL_MD_EVENT_SUCCESS_DISABLE, eq), PTL_UNLINK, &m1);
	h_me_md(c, H_PT, h_any_id, 10, 0, PTL_UNLINK, h_md(tb + 8, 8, 1, PTL_MD_OP_PUT, eq),
	        PTL_UNLINK, &m2);
	ptl_event_t ev;
	h_sync(c);
	/* the quiet MD's put: only its UNLINK (threshold used up) */
	h_expect(eq, PTL_EVENT_UNLINK, &ev);
	H_EQ(ev.md_handle, m1);
	H_PAT(tb, 8, 91, 0);
	h_sync(c);
	h_expect(eq, PTL_EVENT_PUT_START, &ev);
	h_expect(eq, PTL_EVENT_PUT_END, &ev);
	H_EQ(ev.md_handle, m2);
	h_expect(eq, PTL_EVENT_UNLINK, &ev);
	H_EQ(ev.md_handle, m2);
	H_PAT(tb + 8, 8, 92, 0);
	h_expect_none(eq, 50);
	h_sync(c);
	H_OK(PtlEQFree(eq));
}
static void success_disable_ini(struct h_ctx *c)
{
	char buf[8];
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t s = h_bind(
	    c, h_md(buf, 8, PTL_MD_THRESH_INF, PTL_MD_EVENT_SUCCESS_DISABLE, eq), PTL_RETAIN);
	h_fill(buf, 8, 91, 0);
	h_sync(c);
	H_OK(PtlPut(s, PTL_ACK_REQ, h_peer(c), H_PT, 0, 9, 0, 0));
	/* SEND_START, SEND_END and the ACK: all successful, none posted */
	h_expect_none(eq, 50);
	h_sync(c);
	h_fill(buf, 8, 92, 0);
	h_put(c, h_peer(c), H_PT, 10, 0, buf, 8, PTL_ACK_REQ, 0);
	h_expect_none(eq, 50);
	H_OK(PtlMDUnlink(s));
	h_sync(c);
	H_OK(PtlEQFree(eq));
}

/* §7: 64-bit hdr_data arrives intact (both halves, top bit set). */
H_PAIR_TEST(hdr_data_64bit)
static void hdr_data_64bit_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t md;
	ptl_handle_me_t me =
	    h_me_md(c, H_PT, h_any_id, 7, 0, PTL_RETAIN,
	            h_md(tb, 8, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, eq),
	            PTL_RETAIN, &md);
	static const ptl_hdr_data_t want[3] = {0xFEDCBA9876543210ull, 0x8000000000000001ull,
	                                       0xFFFFFFFFFFFFFFFFull};
	ptl_event_t ev;
	h_sync(c);
	for (int i = 0; i < 3; i++) {
		h_expect(eq, PTL_EVENT_PUT_START, &ev);
		H_EQ(ev.hdr_data, want[i]);
		h_expect(eq, PTL_EVENT_PUT_END, &ev);
		H_EQ(ev.hdr_data, want[i]);
	}
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void hdr_data_64bit_ini(struct h_ctx *c)
{
	char buf[8] = {0};
	h_sync(c);
	h_put(c, h_peer(c), H_PT, 7, 0, buf, 8, PTL_NO_ACK_REQ, 0xFEDCBA9876543210ull);
	h_put(c, h_peer(c), H_PT, 7, 0, buf, 8, PTL_NO_ACK_REQ, 0x8000000000000001ull);
	h_put(c, h_peer(c), H_PT, 7, 0, buf, 8, PTL_NO_ACK_REQ, 0xFFFFFFFFFFFFFFFFull);
	h_sync(c);
}

/* §7: ordering of two puts: the target's PUT_STARTs come in the order of
 * the initiator's SEND_STARTs (both puts issued back to back, large then
 * small, so a faster small message cannot overtake). */
H_PAIR_TEST(two_puts_ordered)
static unsigned char big_t[1 << 20];
static void two_puts_ordered_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t md;
	ptl_handle_me_t me = h_me_md(
	    c, H_PT, h_any_id, 8, 0, PTL_RETAIN,
	    h_md(big_t, sizeof(big_t), PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, eq),
	    PTL_RETAIN, &md);
	ptl_event_t ev;
	int n = 0;
	ptl_hdr_data_t order[2];
	h_sync(c);
	for (int i = 0; i < 4; i++) {
		(void)h_next(eq, &ev);
		if (ev.type == PTL_EVENT_PUT_START)
			order[n++] = ev.hdr_data;
	}
	H_EQ(n, 2);
	H_EQ(order[0], 1);
	H_EQ(order[1], 2);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static unsigned char big_i[1 << 20];
static void two_puts_ordered_ini(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t md =
	    h_bind(c, h_md(big_i, sizeof(big_i), PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN);
	ptl_event_t ev;
	ptl_hdr_data_t order[2];
	int n = 0;
	h_sync(c);
	H_OK(PtlPut(md, PTL_NO_ACK_REQ, h_peer(c), H_PT, 0, 8, 0, 1));
	H_OK(PtlPutRegion(md, 0, 1, PTL_NO_ACK_REQ, h_peer(c), H_PT, 0, 8, 0, 2));
	for (int i = 0; i < 4; i++) {
		(void)h_next(eq, &ev);
		if (ev.type == PTL_EVENT_SEND_START)
			order[n++] = ev.hdr_data;
	}
	H_EQ(n, 2);
	H_EQ(order[0], 1);
	H_EQ(order[1], 2);
	h_sync(c);
	H_OK(PtlMDUnlink(md));
	H_OK(PtlEQFree(eq));
}

/* GetPut: GETPUT_START/END at the target; SEND_* on the put MD and REPLY_*
 * on the get MD at the initiator (§4.6). */
H_PAIR_TEST(getput_events)
static void getput_events_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t md;
	ptl_handle_me_t me = h_me_md(
	    c, H_PT, h_any_id, 9, 0, PTL_RETAIN,
	    h_md(tb, 8, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_OP_GET, eq), PTL_RETAIN, &md);
	ptl_event_t s, e;
	memcpy(tb, "OLDVALUE", 8);
	h_sync(c);
	h_expect(eq, PTL_EVENT_GETPUT_START, &s);
	h_expect(eq, PTL_EVENT_GETPUT_END, &e);
	H_EQ(s.link, e.link);
	H_EQ(e.mlength, 8);
	H_EQ(e.hdr_data, 0x99);
	H_EQ(e.initiator.pid, h_peer(c).pid);
	H_TRUE(memcmp(tb, "NEWVALUE", 8) == 0);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void getput_events_ini(struct h_ctx *c)
{
	char oldv[8] = {0}, newv[8];
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t g = h_bind(c, h_md(oldv, 8, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN);
	ptl_handle_md_t p = h_bind(c, h_md(newv, 8, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN);
	int gs = 0, ge = 0, ps = 0, pe = 0;
	memcpy(newv, "NEWVALUE", 8);
	h_sync(c);
	H_OK(PtlGetPut(g, p, h_peer(c), H_PT, 0, 9, 0, 0x99));
	for (int i = 0; i < 4; i++) {
		ptl_event_t ev;
		(void)h_next(eq, &ev);
		switch (ev.type) {
		case PTL_EVENT_SEND_START:
			H_EQ(ev.md_handle, p);
			ps++;
			break;
		case PTL_EVENT_SEND_END:
			H_EQ(ev.md_handle, p);
			pe++;
			break;
		case PTL_EVENT_REPLY_START:
			H_EQ(ev.md_handle, g);
			gs++;
			break;
		case PTL_EVENT_REPLY_END:
			H_EQ(ev.md_handle, g);
			H_EQ(ev.mlength, 8);
			ge++;
			break;
		default:
			h_fail(__FILE__, __LINE__, "unexpected %s", h_evstr((int)ev.type));
		}
	}
	H_TRUE(gs == 1 && ge == 1 && ps == 1 && pe == 1);
	H_TRUE(memcmp(oldv, "OLDVALUE", 8) == 0);
	h_sync(c);
	H_OK(PtlMDUnlink(g));
	H_OK(PtlMDUnlink(p));
	H_OK(PtlEQFree(eq));
}

static Suite *suite(void)
{
	Suite *s = suite_create("events");
	TCase *tc = tcase_create("events");
	tcase_set_timeout(tc, 60);
	H_ADD(tc, put_events_fields);
	H_ADD(tc, get_events_fields);
	H_ADD(tc, link_pairing);
	H_ADD(tc, sequence_increasing);
	H_ADD(tc, start_end_disable);
	H_ADD(tc, unlink_disable);
	H_ADD(tc, success_disable);
	H_ADD(tc, hdr_data_64bit);
	H_ADD(tc, two_puts_ordered);
	H_ADD(tc, getput_events);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return h_main(suite());
}
