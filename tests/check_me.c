/* SPDX-License-Identifier: BSD-3-Clause */
/* check_me.c - match entries: portal index checks, list length, insertion
 * order, PtlMEInsert, PtlMEAttachAny and PTL_PT_FULL (§7 MEs). */
#include "harness.h"

#include <string.h>

/* §7: bad pt index -> PTL_PT_INDEX_INVALID (max_pt_index is inclusive). */
START_TEST(bad_pt_index)
{
	ptl_ni_limits_t lim;
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, &lim);
	ptl_handle_me_t me;

	H_OK(PtlMEAttach(ni, (ptl_pt_index_t)lim.max_pt_index, h_any_id, 0, 0, PTL_RETAIN,
	                 PTL_INS_AFTER, &me));
	H_OK(PtlMEUnlink(me));
	H_RC(PtlMEAttach(ni, (ptl_pt_index_t)lim.max_pt_index + 1, h_any_id, 0, 0, PTL_RETAIN,
	                 PTL_INS_AFTER, &me),
	     PTL_PT_INDEX_INVALID);
	H_RC(PtlMEAttach(ni, PTL_PT_INDEX_ANY, h_any_id, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me),
	     PTL_PT_INDEX_INVALID);
	h_close(ni);
}
END_TEST

/* §7: list too long -> PTL_ME_LIST_TOO_LONG (attach and insert). */
START_TEST(list_too_long)
{
	ptl_ni_limits_t want = {.max_mes = 64,
	                        .max_mds = 64,
	                        .max_eqs = 8,
	                        .max_ac_index = 3,
	                        .max_pt_index = 7,
	                        .max_md_iovecs = 8,
	                        .max_me_list = 4,
	                        .max_getput_md = 8};
	ptl_ni_limits_t lim;
	ptl_handle_ni_t ni = h_open_mode(_i, &want, &lim);
	ptl_handle_me_t me[8], extra;

	H_EQ(lim.max_me_list, 4);
	for (int i = 0; i < 4; i++)
		H_OK(PtlMEAttach(ni, 2, h_any_id, (ptl_match_bits_t)i, 0, PTL_RETAIN, PTL_INS_AFTER,
		                 &me[i]));
	H_RC(PtlMEAttach(ni, 2, h_any_id, 9, 0, PTL_RETAIN, PTL_INS_AFTER, &extra),
	     PTL_ME_LIST_TOO_LONG);
	H_RC(PtlMEInsert(me[1], h_any_id, 9, 0, PTL_RETAIN, PTL_INS_BEFORE, &extra),
	     PTL_ME_LIST_TOO_LONG);
	/* another portal has its own list */
	H_OK(PtlMEAttach(ni, 3, h_any_id, 9, 0, PTL_RETAIN, PTL_INS_AFTER, &extra));
	H_OK(PtlMEUnlink(extra));
	/* room again after an unlink */
	H_OK(PtlMEUnlink(me[0]));
	H_OK(PtlMEInsert(me[1], h_any_id, 9, 0, PTL_RETAIN, PTL_INS_BEFORE, &me[0]));
	for (int i = 0; i < 4; i++)
		H_OK(PtlMEUnlink(me[i]));
	h_close(ni);
}
END_TEST

/* §7: MEAttachAny picks an unused index; PTL_PT_FULL when none is left. */
START_TEST(attach_any_pt_full)
{
	ptl_ni_limits_t want = {.max_mes = 64,
	                        .max_mds = 64,
	                        .max_eqs = 8,
	                        .max_ac_index = 3,
	                        .max_pt_index = 3,
	                        .max_md_iovecs = 8,
	                        .max_me_list = 8,
	                        .max_getput_md = 8};
	ptl_ni_limits_t lim;
	ptl_handle_ni_t ni = h_open_mode(_i, &want, &lim);
	ptl_handle_me_t used, any[4], extra;
	ptl_pt_index_t pt[4];
	int seen[4] = {0};

	H_EQ(lim.max_pt_index, 3);
	H_OK(PtlMEAttach(ni, 2, h_any_id, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &used));
	for (int i = 0; i < 3; i++) {
		pt[i] = 99;
		H_OK(PtlMEAttachAny(ni, &pt[i], h_any_id, 0, 0, PTL_RETAIN, &any[i]));
		H_TRUE(pt[i] <= 3);
		H_NE(pt[i], 2);
		H_EQ(seen[pt[i]], 0);
		seen[pt[i]] = 1;
	}
	H_RC(PtlMEAttachAny(ni, &pt[3], h_any_id, 0, 0, PTL_RETAIN, &extra), PTL_PT_FULL);
	H_RC(PtlMEAttachAny(ni, NULL, h_any_id, 0, 0, PTL_RETAIN, &extra), PTL_SEGV);
	/* freeing one portal makes it available again */
	H_OK(PtlMEUnlink(any[1]));
	H_OK(PtlMEAttachAny(ni, &pt[3], h_any_id, 0, 0, PTL_RETAIN, &any[1]));
	H_EQ(pt[3], pt[1]);
	for (int i = 0; i < 3; i++)
		H_OK(PtlMEUnlink(any[i]));
	H_OK(PtlMEUnlink(used));
	h_close(ni);
}
END_TEST

/* PtlMEUnlink twice: the second is PTL_ME_INVALID (stale handle). */
START_TEST(me_unlink_stale)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL);
	ptl_handle_me_t me, me2;

	H_OK(PtlMEAttach(ni, H_PT, h_any_id, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me));
	H_OK(PtlMEUnlink(me));
	H_RC(PtlMEUnlink(me), PTL_ME_INVALID);
	/* the slot may be reused; the old handle must stay invalid */
	H_OK(PtlMEAttach(ni, H_PT, h_any_id, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me2));
	H_RC(PtlMEUnlink(me), PTL_ME_INVALID);
	H_RC(PtlMEInsert(me, h_any_id, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me), PTL_ME_INVALID);
	H_OK(PtlMEUnlink(me2));
	h_close(ni);
}
END_TEST

/* ---- insertion order, observed through where puts land ------------------------- */

#define ORD_N 4
static char ord_buf[ORD_N][32];

/* §7: INS_BEFORE / INS_AFTER order of PtlMEAttach.
 * List built: C(before) A B -> puts 1,2,3 land in C, A, B. */
H_PAIR_TEST(attach_ins_order)
static void attach_ins_order_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 64);
	ptl_handle_me_t me[3];
	ptl_handle_md_t md[3];
	int cnt[PTL_EVENT_KIND_MAX];

	memset(ord_buf, 0, sizeof(ord_buf));
	/* A then B at the tail, C at the head */
	H_OK(PtlMEAttach(c->ni, H_PT, h_any_id, 5, 0, PTL_UNLINK, PTL_INS_AFTER, &me[0]));
	H_OK(PtlMEAttach(c->ni, H_PT, h_any_id, 5, 0, PTL_UNLINK, PTL_INS_AFTER, &me[1]));
	H_OK(PtlMEAttach(c->ni, H_PT, h_any_id, 5, 0, PTL_UNLINK, PTL_INS_BEFORE, &me[2]));
	for (int i = 0; i < 3; i++)
		H_OK(PtlMDAttach(me[i], h_md(ord_buf[i], 32, 1, PTL_MD_OP_PUT, eq), PTL_UNLINK,
		                 &md[i]));
	h_sync(c);
	h_collect(eq, 9, cnt);
	H_EQ(cnt[PTL_EVENT_PUT_START], 3);
	H_EQ(cnt[PTL_EVENT_PUT_END], 3);
	H_EQ(cnt[PTL_EVENT_UNLINK], 3);
	H_PAT(ord_buf[2], 32, 1, 0); /* C got the first put */
	H_PAT(ord_buf[0], 32, 2, 0); /* A the second */
	H_PAT(ord_buf[1], 32, 3, 0); /* B the third */
	for (int i = 0; i < 3; i++)
		H_RC(PtlMEUnlink(me[i]), PTL_ME_INVALID); /* went with their MDs */
	h_sync(c);
	H_OK(PtlEQFree(eq));
}
static void attach_ins_order_ini(struct h_ctx *c)
{
	char buf[32];
	h_sync(c);
	for (uint32_t s = 1; s <= 3; s++) {
		h_fill(buf, sizeof(buf), s, 0);
		h_put(c, h_peer(c), H_PT, 5, 0, buf, sizeof(buf), PTL_NO_ACK_REQ, 0);
	}
	h_sync(c);
}

/* §7: PtlMEInsert before/after a given entry.
 * base B; insert A before B, C after B, Z before A: list Z A B C. */
H_PAIR_TEST(meinsert_order)
static void meinsert_order_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 64);
	ptl_handle_me_t b, a, cc, z;
	ptl_handle_md_t md;
	int cnt[PTL_EVENT_KIND_MAX];

	memset(ord_buf, 0, sizeof(ord_buf));
	H_OK(PtlMEAttach(c->ni, H_PT, h_any_id, 7, 0, PTL_UNLINK, PTL_INS_AFTER, &b));
	H_OK(PtlMEInsert(b, h_any_id, 7, 0, PTL_UNLINK, PTL_INS_BEFORE, &a));
	H_OK(PtlMEInsert(b, h_any_id, 7, 0, PTL_UNLINK, PTL_INS_AFTER, &cc));
	H_OK(PtlMEInsert(a, h_any_id, 7, 0, PTL_UNLINK, PTL_INS_BEFORE, &z));
	H_OK(PtlMDAttach(z, h_md(ord_buf[0], 32, 1, PTL_MD_OP_PUT, eq), PTL_UNLINK, &md));
	H_OK(PtlMDAttach(a, h_md(ord_buf[1], 32, 1, PTL_MD_OP_PUT, eq), PTL_UNLINK, &md));
	H_OK(PtlMDAttach(b, h_md(ord_buf[2], 32, 1, PTL_MD_OP_PUT, eq), PTL_UNLINK, &md));
	H_OK(PtlMDAttach(cc, h_md(ord_buf[3], 32, 1, PTL_MD_OP_PUT, eq), PTL_UNLINK, &md));
	h_sync(c);
	h_collect(eq, 12, cnt);
	H_EQ(cnt[PTL_EVENT_PUT_START], 4);
	H_EQ(cnt[PTL_EVENT_PUT_END], 4);
	H_EQ(cnt[PTL_EVENT_UNLINK], 4);
	for (int i = 0; i < 4; i++)
		H_PAT(ord_buf[i], 32, (uint32_t)i + 1, 0);
	h_sync(c);
	H_OK(PtlEQFree(eq));
}
static void meinsert_order_ini(struct h_ctx *c)
{
	char buf[32];
	h_sync(c);
	for (uint32_t s = 1; s <= 4; s++) {
		h_fill(buf, sizeof(buf), s, 0);
		h_put(c, h_peer(c), H_PT, 7, 0, buf, sizeof(buf), PTL_NO_ACK_REQ, 0);
	}
	h_sync(c);
}

/* PtlMEUnlink of an ME in the middle keeps the rest of the list intact. */
H_PAIR_TEST(me_unlink_middle)
static void me_unlink_middle_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 64);
	ptl_handle_me_t me[3];
	ptl_handle_md_t md;
	int cnt[PTL_EVENT_KIND_MAX];

	memset(ord_buf, 0, sizeof(ord_buf));
	for (int i = 0; i < 3; i++) {
		H_OK(PtlMEAttach(c->ni, H_PT, h_any_id, 3, 0, PTL_UNLINK, PTL_INS_AFTER, &me[i]));
		H_OK(PtlMDAttach(me[i], h_md(ord_buf[i], 32, 1, PTL_MD_OP_PUT, eq), PTL_UNLINK,
		                 &md));
	}
	H_OK(PtlMEUnlink(me[1]));
	h_sync(c);
	h_collect(eq, 6, cnt);
	H_EQ(cnt[PTL_EVENT_PUT_END], 2);
	H_EQ(cnt[PTL_EVENT_UNLINK], 2);
	H_PAT(ord_buf[0], 32, 1, 0);
	H_PAT(ord_buf[2], 32, 2, 0);
	for (int k = 0; k < 32; k++)
		H_EQ(ord_buf[1][k], 0);
	h_sync(c);
	H_OK(PtlEQFree(eq));
}
static void me_unlink_middle_ini(struct h_ctx *c)
{
	char buf[32];
	h_sync(c);
	for (uint32_t s = 1; s <= 2; s++) {
		h_fill(buf, sizeof(buf), s, 0);
		h_put(c, h_peer(c), H_PT, 3, 0, buf, sizeof(buf), PTL_NO_ACK_REQ, 0);
	}
	h_sync(c);
}

static Suite *suite(void)
{
	Suite *s = suite_create("me");
	TCase *tc = tcase_create("me");
	tcase_set_timeout(tc, 60);
	H_ADD(tc, bad_pt_index);
	H_ADD(tc, list_too_long);
	H_ADD(tc, attach_any_pt_full);
	H_ADD(tc, me_unlink_stale);
	H_ADD(tc, attach_ins_order);
	H_ADD(tc, meinsert_order);
	H_ADD(tc, me_unlink_middle);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return h_main(suite());
}
