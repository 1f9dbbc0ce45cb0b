/* SPDX-License-Identifier: BSD-3-Clause */
/* check_acl.c - access control (§4.1 step 3, §7 ACL, DECISION in
 * portals3.h: entry 0 admits same uid and job; others admit nothing until
 * set), over lo and shmem (app, thread). */
#include "harness.h"

#include <string.h>

static char tb[64];

/* One ACL case: the target sets entry 1, the initiator puts with ac 1. */
enum { ACL_PHASES = 7 };

struct acl_phase {
	int set;      /* 1: PtlACEntry(ac 1, ...) before the put */
	int id_kind;  /* 0 ANY, 1 exact peer, 2 other nid, 3 other pid */
	int uid_kind; /* 0 ANY, 1 exact, 2 other */
	int jid_kind; /* 0 ANY, 1 exact, 2 other */
	int pt_kind;  /* 0 ANY, 1 H_PT, 2 other portal */
	int admitted;
	const char *what;
};

static const struct acl_phase phases[ACL_PHASES] = {
    {1, 0, 0, 0, 0, 1, "all wildcards admit"}, {1, 1, 1, 1, 1, 1, "exact values admit"},
    {1, 2, 0, 0, 0, 0, "other nid drops"},     {1, 3, 0, 0, 0, 0, "other pid drops"},
    {1, 0, 2, 0, 0, 0, "other uid drops"},     {1, 0, 0, 2, 0, 0, "other jid drops"},
    {1, 0, 0, 0, 2, 0, "other portal drops"},
};

static void acl_set(struct h_ctx *c, const struct acl_phase *p)
{
	ptl_process_id_t src = h_peer(c), id;
	ptl_uid_t uid;
	ptl_jid_t jid;
	ptl_pt_index_t pt;

	switch (p->id_kind) {
	case 0:
		id = h_any_id;
		break;
	case 1:
		id = src;
		break;
	case 2:
		id.nid = src.nid + 1;
		id.pid = PTL_PID_ANY;
		break;
	default:
		id.nid = PTL_NID_ANY;
		id.pid = src.pid + 1;
		break;
	}
	uid = p->uid_kind == 0 ? PTL_UID_ANY : p->uid_kind == 1 ? c->uid : c->uid + 1;
	/* the initiator's jid: same job in every mode */
	jid = p->jid_kind == 0 ? PTL_JID_ANY : p->jid_kind == 1 ? c->jid : c->jid + 1;
	pt = p->pt_kind == 0 ? PTL_PT_INDEX_ANY : p->pt_kind == 1 ? H_PT : H_PT + 1;
	H_OK(PtlACEntry(c->ni, 1, id, uid, jid, pt));
}

static int acl_sel; /* which phase this test runs (inherited by the ranks) */

static void acl_one_tgt(struct h_ctx *c)
{
	const struct acl_phase *p = &phases[acl_sel];
	ptl_handle_eq_t eq = h_eq(c, 64);
	ptl_handle_md_t md;
	ptl_handle_me_t me =
	    h_me_md(c, H_PT, h_any_id, 1, 0, PTL_RETAIN,
	            h_md(tb, 64, PTL_MD_THRESH_INF, PTL_MD_OP_PUT, eq), PTL_RETAIN, &md);
	ptl_event_t ev;
	ptl_sr_value_t d0 = h_sr(c, PTL_SR_DROP_COUNT);

	acl_set(c, p);
	h_sync(c); /* entry set */
	h_sync(c); /* put sent */
	if (p->admitted) {
		h_expect(eq, PTL_EVENT_PUT_START, &ev);
		h_expect(eq, PTL_EVENT_PUT_END, &ev);
		H_EQ(ev.mlength, 8);
		H_EQ(h_sr(c, PTL_SR_DROP_COUNT), d0);
	} else {
		h_wait_sr(c, PTL_SR_DROP_COUNT, d0 + 1);
		h_expect_none(eq, 20);
		if (h_sr(c, PTL_SR_DROP_COUNT) != d0 + 1)
			h_fail(__FILE__, __LINE__, "\"%s\": drop count %llu, want %llu", p->what,
			       (unsigned long long)h_sr(c, PTL_SR_DROP_COUNT),
			       (unsigned long long)d0 + 1);
	}
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void acl_one_ini(struct h_ctx *c)
{
	char buf[8] = {0};
	ptl_handle_eq_t eq = h_eq(c, 16);
	ptl_handle_md_t md = h_bind(c, h_md(buf, 8, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN);
	h_sync(c);
	H_OK(PtlPut(md, PTL_NO_ACK_REQ, h_peer(c), H_PT, 1, 1, 0, 0));
	h_expect(eq, PTL_EVENT_SEND_START, NULL);
	h_expect(eq, PTL_EVENT_SEND_END, NULL);
	h_sync(c);
	h_sync(c);
	H_OK(PtlMDUnlink(md));
	H_OK(PtlEQFree(eq));
}

#define ACL_TEST(name, idx)                                                                        \
	START_TEST(name)                                                                           \
	{                                                                                          \
		acl_sel = idx;                                                                     \
		h_run_pair(_i, acl_one_tgt, acl_one_ini);                                          \
	}                                                                                          \
	END_TEST

/* §7 ACL, one line item each: wildcards admit; exact values admit; an entry
 * restricted to another nid / pid / uid / jid / portal drops. */
ACL_TEST(acl_wildcards_admit, 0)
ACL_TEST(acl_exact_admits, 1)
ACL_TEST(acl_other_nid_drops, 2)
ACL_TEST(acl_other_pid_drops, 3)
ACL_TEST(acl_other_uid_drops, 4)
ACL_TEST(acl_other_jid_drops, 5)
ACL_TEST(acl_other_portal_drops, 6)

/* The ac-index cases: the initiator puts with the ac indices of one case;
 * the target publishes its max_ac_index first. */
static int idx_sel;
static const struct {
	int nput;     /* puts sent */
	int admitted; /* of them admitted */
	const char *what;
} idx_cases[3] = {
    {2, 0, "ac index past max_ac_index (max+1 and 0xFFFF) drops"},
    {1, 0, "an entry never set (2) drops"},
    {1, 1, "the default entry 0 admits a process of the same uid and job"},
};

static void acl_idx_tgt(struct h_ctx *c)
{
	ptl_ni_limits_t lim;
	ptl_handle_eq_t eq = h_eq(c, 64);
	ptl_handle_md_t md;
	ptl_handle_me_t me =
	    h_me_md(c, H_PT, h_any_id, 2, 0, PTL_RETAIN,
	            h_md(tb, 64, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, eq),
	            PTL_RETAIN, &md);
	ptl_sr_value_t d0 = h_sr(c, PTL_SR_DROP_COUNT);
	int drops = idx_cases[idx_sel].nput - idx_cases[idx_sel].admitted;
	ptl_handle_ni_t ni2;

	/* PtlNIInit again returns the same NI; `actual` gives its limits */
	H_OK(PtlNIInit(h_mode_iface(c->mode), PTL_PID_ANY, NULL,
	               &lim, &ni2));
	h_pub(c, 0, (uint64_t)lim.max_ac_index);
	h_sync(c);
	h_sync(c);
	for (int i = 0; i < idx_cases[idx_sel].admitted; i++) {
		h_expect(eq, PTL_EVENT_PUT_START, NULL);
		h_expect(eq, PTL_EVENT_PUT_END, NULL);
	}
	if (drops)
		h_wait_sr(c, PTL_SR_DROP_COUNT, d0 + (ptl_sr_value_t)drops);
	h_expect_none(eq, 20);
	if (h_sr(c, PTL_SR_DROP_COUNT) != d0 + (ptl_sr_value_t)drops)
		h_fail(__FILE__, __LINE__, "\"%s\": drop count grew by %llu, want %d",
		       idx_cases[idx_sel].what,
		       (unsigned long long)(h_sr(c, PTL_SR_DROP_COUNT) - d0), drops);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void acl_idx_ini(struct h_ctx *c)
{
	char buf[8] = {0};
	ptl_handle_eq_t eq = h_eq(c, 16);
	ptl_handle_md_t md = h_bind(c, h_md(buf, 8, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN);
	ptl_ac_index_t maxac, ac[2];
	int cnt[PTL_EVENT_KIND_MAX], n = idx_cases[idx_sel].nput;

	h_sync(c);
	maxac = (ptl_ac_index_t)h_val(c, 0, 0);
	H_TRUE(maxac >= 2);
	ac[0] = idx_sel == 0 ? maxac + 1 : idx_sel == 1 ? 2 : 0;
	ac[1] = 0xFFFF;
	for (int i = 0; i < n; i++)
		H_OK(PtlPut(md, PTL_NO_ACK_REQ, h_peer(c), H_PT, ac[i], 2, 0, 0));
	h_collect(eq, 2 * n, cnt);
	H_EQ(cnt[PTL_EVENT_SEND_START], n);
	H_EQ(cnt[PTL_EVENT_SEND_END], n);
	h_sync(c);
	h_sync(c);
	H_OK(PtlMDUnlink(md));
	H_OK(PtlEQFree(eq));
}

#define ACL_IDX_TEST(name, idx)                                                                    \
	START_TEST(name)                                                                           \
	{                                                                                          \
		idx_sel = idx;                                                                     \
		h_run_pair(_i, acl_idx_tgt, acl_idx_ini);                                          \
	}                                                                                          \
	END_TEST

/* §7: an invalid ac index drops; an unset entry drops; the default entry
 * admits the same uid (DECISION in portals3.h). */
ACL_IDX_TEST(acl_invalid_index_drops, 0)
ACL_IDX_TEST(acl_unset_entry_drops, 1)
ACL_IDX_TEST(acl_default_entry_admits, 2)

/* §7: PtlACEntry argument errors. */
START_TEST(acentry_errors)
{
	ptl_ni_limits_t lim;
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, &lim);

	H_OK(PtlACEntry(ni, (ptl_ac_index_t)lim.max_ac_index, h_any_id, PTL_UID_ANY, PTL_JID_ANY,
	                PTL_PT_INDEX_ANY));
	H_RC(PtlACEntry(ni, (ptl_ac_index_t)lim.max_ac_index + 1, h_any_id, PTL_UID_ANY,
	                PTL_JID_ANY, PTL_PT_INDEX_ANY),
	     PTL_AC_INDEX_INVALID);
	H_RC(PtlACEntry(ni, 0xFFFFFFFFu, h_any_id, PTL_UID_ANY, PTL_JID_ANY, PTL_PT_INDEX_ANY),
	     PTL_AC_INDEX_INVALID);
	H_RC(PtlACEntry(ni, 1, h_any_id, PTL_UID_ANY, PTL_JID_ANY,
	                (ptl_pt_index_t)lim.max_pt_index + 1),
	     PTL_PT_INDEX_INVALID);
	H_RC(PtlACEntry(PTL_INVALID_HANDLE, 1, h_any_id, PTL_UID_ANY, PTL_JID_ANY, 0),
	     PTL_NI_INVALID);
	h_close(ni);
	H_RC(PtlACEntry(ni, 1, h_any_id, PTL_UID_ANY, PTL_JID_ANY, 0), PTL_NO_INIT);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("acl");
	TCase *tc = tcase_create("acl");
	tcase_set_timeout(tc, 60);
	H_ADD(tc, acl_wildcards_admit);
	H_ADD(tc, acl_exact_admits);
	H_ADD(tc, acl_other_nid_drops);
	H_ADD(tc, acl_other_pid_drops);
	H_ADD(tc, acl_other_uid_drops);
	H_ADD(tc, acl_other_jid_drops);
	H_ADD(tc, acl_other_portal_drops);
	H_ADD(tc, acl_invalid_index_drops);
	H_ADD(tc, acl_unset_entry_drops);
	H_ADD(tc, acl_default_entry_admits);
	H_ADD(tc, acentry_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return h_main(suite());
}
