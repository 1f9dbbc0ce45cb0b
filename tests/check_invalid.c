/* SPDX-License-Identifier: BSD-3-Clause */
/* check_invalid.c - argument checking of every call in portals3.h,
 * p3rt/p3rt.h and p3api/debug.h: PTL_NO_INIT before PtlInit, bad and stale
 * handles (an object is freed and its handle reused -> *_INVALID), handles
 * of the wrong type, NULL outputs -> PTL_SEGV, out-of-range indices.  None
 * may crash (the suite also runs under ASan/UBSan).  Over lo and shmem. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char mb[64];

struct objs {
	ptl_handle_ni_t ni;
	ptl_process_id_t self;
	ptl_ni_limits_t lim;
	ptl_handle_eq_t eq, stale_eq;
	ptl_handle_me_t me, stale_me;
	ptl_handle_md_t md, stale_md;
	struct h_ctx c;
};

/* Open an NI with one live and one stale object of each kind. */
static void objs_open(struct objs *o, int mode)
{
	o->ni = h_open_mode(mode, NULL, &o->lim);
	h_ctx_single(&o->c, o->ni);
	o->self = o->c.me;
	H_OK(PtlEQAlloc(o->ni, 8, PTL_EQ_HANDLER_NONE, &o->stale_eq));
	H_OK(PtlEQFree(o->stale_eq));
	H_OK(PtlMEAttach(o->ni, H_PT, h_any_id, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &o->stale_me));
	H_OK(PtlMEUnlink(o->stale_me));
	H_OK(PtlMDBind(o->ni, h_md(mb, 8, 1, 0, PTL_EQ_NONE), PTL_RETAIN, &o->stale_md));
	H_OK(PtlMDUnlink(o->stale_md));
	H_OK(PtlEQAlloc(o->ni, 8, PTL_EQ_HANDLER_NONE, &o->eq));
	H_OK(PtlMEAttach(o->ni, H_PT, h_any_id, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &o->me));
	H_OK(PtlMDBind(o->ni, h_md(mb, 8, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE), PTL_RETAIN, &o->md));
}

static void objs_close(struct objs *o)
{
	H_OK(PtlMDUnlink(o->md));
	H_OK(PtlMEUnlink(o->me));
	H_OK(PtlEQFree(o->eq));
	h_close(o->ni);
}

/* §7 + §3: every call but PtlInit returns PTL_NO_INIT before PtlInit. */
START_TEST(no_init_every_call)
{
	ptl_handle_ni_t ni = 0x20000001u;
	ptl_handle_any_t h = 0x40000001u;
	ptl_process_id_t id = {0, 0};
	ptl_sr_value_t v;
	unsigned long dist;
	ptl_uid_t uid;
	ptl_jid_t jid;
	ptl_pt_index_t pt;
	ptl_event_t ev;
	ptl_md_t md = h_md(mb, 8, 1, 0, PTL_EQ_NONE);
	unsigned r, n;
	ptl_nid_t nids[2] = {0, 0};
	ptl_pid_t pids[2] = {0, 1};
	int which;
	const char *s1, *s2;
	unsigned int spin_us;

	H_RC(PtlNIInit(PTL_IFACE_LO, PTL_PID_ANY, NULL, NULL, &ni), PTL_NO_INIT);
	H_RC(PtlNIFini(ni), PTL_NO_INIT);
	H_RC(PtlNIStatus(ni, 0, &v), PTL_NO_INIT);
	H_RC(PtlNIDist(ni, id, &dist), PTL_NO_INIT);
	H_RC(PtlNIHandle(h, &ni), PTL_NO_INIT);
	H_RC(PtlGetId(ni, &id), PTL_NO_INIT);
	H_RC(PtlGetUid(ni, &uid), PTL_NO_INIT);
	H_RC(PtlGetJid(ni, &jid), PTL_NO_INIT);
	H_RC(PtlMEAttach(ni, 0, id, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &h), PTL_NO_INIT);
	H_RC(PtlMEAttachAny(ni, &pt, id, 0, 0, PTL_RETAIN, &h), PTL_NO_INIT);
	H_RC(PtlMEInsert(h, id, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &h), PTL_NO_INIT);
	H_RC(PtlMEUnlink(h), PTL_NO_INIT);
	H_RC(PtlMEUnlinkNoWait(h), PTL_NO_INIT);
	H_RC(PtlMDAttach(h, md, PTL_RETAIN, &h), PTL_NO_INIT);
	H_RC(PtlMDBind(ni, md, PTL_RETAIN, &h), PTL_NO_INIT);
	H_RC(PtlMDUnlink(h), PTL_NO_INIT);
	H_RC(PtlMDUpdate(h, &md, NULL, PTL_EQ_NONE), PTL_NO_INIT);
	H_RC(PtlEQAlloc(ni, 8, PTL_EQ_HANDLER_NONE, &h), PTL_NO_INIT);
	H_RC(PtlEQFree(h), PTL_NO_INIT);
	H_RC(PtlEQGet(h, &ev), PTL_NO_INIT);
	H_RC(PtlEQWait(h, &ev), PTL_NO_INIT);
	H_RC(PtlEQPoll(&h, 1, 0, &ev, &which), PTL_NO_INIT);
	H_RC(PtlACEntry(ni, 0, id, PTL_UID_ANY, PTL_JID_ANY, 0), PTL_NO_INIT);
	H_RC(PtlPut(h, PTL_NO_ACK_REQ, id, 0, 0, 0, 0, 0), PTL_NO_INIT);
	H_RC(PtlPutRegion(h, 0, 1, PTL_NO_ACK_REQ, id, 0, 0, 0, 0, 0), PTL_NO_INIT);
	H_RC(PtlGet(h, id, 0, 0, 0, 0), PTL_NO_INIT);
	H_RC(PtlGetRegion(h, 0, 1, id, 0, 0, 0, 0), PTL_NO_INIT);
	H_RC(PtlGetPut(h, h, id, 0, 0, 0, 0, 0), PTL_NO_INIT);
	H_RC(PtlProgress(ni, 0), PTL_NO_INIT);
	H_RC(PtlMEMDPost(h, id, 0, 0, PTL_RETAIN, PTL_INS_AFTER, md, PTL_RETAIN, PTL_EQ_NONE, &h,
	                 &h),
	     PTL_NO_INIT);
	H_RC(PtlMEMDPostNoWait(h, id, 0, 0, PTL_RETAIN, PTL_INS_AFTER, md, PTL_RETAIN, PTL_EQ_NONE,
	                       &h, &h),
	     PTL_NO_INIT);
	H_RC(PtlNIDescribe(ni, &s1, &s2), PTL_NO_INIT);
	H_RC(PtlNIWaitSpin(ni, &spin_us), PTL_NO_INIT);
	H_RC(PtlSetRank(PTL_INVALID_HANDLE, 0, 1), PTL_NO_INIT);
	H_RC(PtlSetNIDMap(PTL_INVALID_HANDLE, nids, 2), PTL_NO_INIT);
	H_RC(PtlSetPIDMap(PTL_INVALID_HANDLE, pids, 2), PTL_NO_INIT);
	H_RC(PtlSetJID(PTL_INVALID_HANDLE, 5), PTL_NO_INIT);
	H_RC(PtlGetRank(ni, &r, &n), PTL_NO_INIT);
	H_RC(PtlGetRankId(ni, 0, &id), PTL_NO_INIT);
	H_RC(PtlGetNIDMap(ni, nids, 2), PTL_NO_INIT);
	H_RC(PtlGetPIDMap(ni, pids, 2), PTL_NO_INIT);
	H_RC(PtlGetJID(ni, &jid), PTL_NO_INIT);
	H_EQ(PtlNIDebug(ni, PTL_DBG_ALL), 0);
	/* the helpers work without init and never crash */
	H_TRUE(PtlErrorStr(PTL_NO_INIT) != NULL);
	H_TRUE(PtlEventKindStr(PTL_EVENT_ACK) != NULL);
	H_TRUE(PtlNIFailStr(ni, PTL_NI_FAIL) != NULL);
	H_EQ(PtlHandleIsEqual(h, h), 1);
	PtlFini();
}
END_TEST

/* A handle of the wrong object type or garbage is refused by the NI calls. */
START_TEST(ni_calls_bad_ni)
{
	struct objs o;
	ptl_sr_value_t v;
	unsigned long dist;
	ptl_process_id_t id;
	ptl_uid_t uid;
	ptl_jid_t jid;
	ptl_handle_any_t h;
	ptl_pt_index_t pt;
	const char *s1, *s2;

	objs_open(&o, _i);
	ptl_handle_ni_t bad[4] = {PTL_INVALID_HANDLE, o.eq, o.me, 0x3FFFFFF0u};
	for (int i = 0; i < 4; i++) {
		H_RC(PtlNIStatus(bad[i], 0, &v), PTL_NI_INVALID);
		H_RC(PtlNIDist(bad[i], o.self, &dist), PTL_NI_INVALID);
		H_RC(PtlGetId(bad[i], &id), PTL_NI_INVALID);
		H_RC(PtlGetUid(bad[i], &uid), PTL_NI_INVALID);
		H_RC(PtlGetJid(bad[i], &jid), PTL_NI_INVALID);
		H_RC(PtlMEAttach(bad[i], 0, h_any_id, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &h),
		     PTL_NI_INVALID);
		H_RC(PtlMEAttachAny(bad[i], &pt, h_any_id, 0, 0, PTL_RETAIN, &h), PTL_NI_INVALID);
		H_RC(PtlMDBind(bad[i], h_md(mb, 8, 1, 0, PTL_EQ_NONE), PTL_RETAIN, &h),
		     PTL_NI_INVALID);
		H_RC(PtlEQAlloc(bad[i], 8, PTL_EQ_HANDLER_NONE, &h), PTL_NI_INVALID);
		H_RC(PtlACEntry(bad[i], 0, h_any_id, PTL_UID_ANY, PTL_JID_ANY, 0), PTL_NI_INVALID);
		H_RC(PtlProgress(bad[i], 0), PTL_NI_INVALID);
		H_RC(PtlNIDescribe(bad[i], &s1, &s2), PTL_NI_INVALID);
		H_RC(PtlNIFini(bad[i]), PTL_NI_INVALID);
		H_EQ(PtlNIDebug(bad[i], PTL_DBG_ALL), 0);
	}
	H_RC(PtlNIInit(99, PTL_PID_ANY, NULL, NULL, &h), PTL_IFACE_INVALID);
	H_RC(PtlNIInit(PTL_IFACE_MYRINET + 50, PTL_PID_ANY, NULL, NULL, &h), PTL_IFACE_INVALID);
	/* NULL outputs */
	H_RC(PtlNIDescribe(o.ni, NULL, &s2), PTL_SEGV);
	H_RC(PtlNIDescribe(o.ni, &s1, NULL), PTL_SEGV);
	H_RC(PtlEQAlloc(o.ni, 8, PTL_EQ_HANDLER_NONE, NULL), PTL_SEGV);
	H_RC(PtlMDBind(o.ni, h_md(mb, 8, 1, 0, PTL_EQ_NONE), PTL_RETAIN, NULL), PTL_SEGV);
	H_RC(PtlMEAttach(o.ni, 0, h_any_id, 0, 0, PTL_RETAIN, PTL_INS_AFTER, NULL), PTL_SEGV);
	H_RC(PtlMEAttachAny(o.ni, &pt, h_any_id, 0, 0, PTL_RETAIN, NULL), PTL_SEGV);
	H_OK(PtlProgress(o.ni, 0));
	objs_close(&o);
}
END_TEST

/* ME calls: bad/stale/wrong-type handles, NULL outputs, bad pt. */
START_TEST(me_calls_invalid)
{
	struct objs o;
	ptl_handle_me_t h;

	objs_open(&o, _i);
	ptl_handle_me_t bad[4] = {PTL_INVALID_HANDLE, o.stale_me, o.eq, o.md};
	for (int i = 0; i < 4; i++) {
		H_RC(PtlMEInsert(bad[i], h_any_id, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &h),
		     PTL_ME_INVALID);
		H_RC(PtlMEUnlink(bad[i]), PTL_ME_INVALID);
		H_RC(
		    PtlMDAttach(bad[i], h_md(mb, 8, 1, PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_RETAIN, &h),
		    PTL_ME_INVALID);
	}
	H_RC(PtlMEInsert(o.me, h_any_id, 0, 0, PTL_RETAIN, PTL_INS_AFTER, NULL), PTL_SEGV);
	H_RC(PtlMDAttach(o.me, h_md(mb, 8, 1, PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_RETAIN, NULL),
	     PTL_SEGV);
	H_RC(PtlMEAttach(o.ni, (ptl_pt_index_t)o.lim.max_pt_index + 1, h_any_id, 0, 0, PTL_RETAIN,
	                 PTL_INS_AFTER, &h),
	     PTL_PT_INDEX_INVALID);
	H_RC(PtlMEAttach(o.ni, 0xFFFFFFF0u, h_any_id, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &h),
	     PTL_PT_INDEX_INVALID);
	objs_close(&o);
}
END_TEST

/* MD calls: bad/stale/wrong-type handles, NULL outputs, bad EQ, IOVEC NULL. */
START_TEST(md_calls_invalid)
{
	struct objs o;
	ptl_handle_md_t h;
	ptl_md_t old, d = h_md(mb, 8, 1, 0, PTL_EQ_NONE);

	objs_open(&o, _i);
	ptl_handle_md_t bad[4] = {PTL_INVALID_HANDLE, o.stale_md, o.me, o.ni};
	for (int i = 0; i < 4; i++) {
		H_RC(PtlMDUnlink(bad[i]), PTL_MD_INVALID);
		H_RC(PtlMDUpdate(bad[i], &old, &d, PTL_EQ_NONE), PTL_MD_INVALID);
	}
	H_RC(PtlMDUpdate(o.md, &old, &d, o.stale_eq), PTL_EQ_INVALID);
	H_RC(PtlMDUpdate(o.md, &old, &d, o.me), PTL_EQ_INVALID);
	d.eq_handle = o.stale_eq;
	int rc = PtlMDBind(o.ni, d, PTL_RETAIN, &h);
	if (rc != PTL_EQ_INVALID && rc != PTL_MD_ILLEGAL)
		h_fail(__FILE__, __LINE__, "PtlMDBind with a stale EQ returned %d (%s)", rc,
		       h_rcstr(rc));
	d = h_md(NULL, 3, 1, PTL_MD_IOVEC, PTL_EQ_NONE);
	H_RC(PtlMDBind(o.ni, d, PTL_RETAIN, &h), PTL_MD_ILLEGAL);
	H_EQ(h_sr_ni(o.ni, PTL_SR_MDS_ALLOCATED), 1);
	objs_close(&o);
}
END_TEST

/* EQ calls: bad/stale/wrong-type handles, NULL outputs, absurd sizes. */
START_TEST(eq_calls_invalid)
{
	struct objs o;
	ptl_event_t ev;
	ptl_handle_eq_t h;
	int which;

	objs_open(&o, _i);
	ptl_handle_eq_t bad[4] = {PTL_INVALID_HANDLE, o.stale_eq, o.md, PTL_EQ_NONE};
	for (int i = 0; i < 4; i++) {
		H_RC(PtlEQFree(bad[i]), PTL_EQ_INVALID);
		H_RC(PtlEQGet(bad[i], &ev), PTL_EQ_INVALID);
		H_RC(PtlEQWait(bad[i], &ev), PTL_EQ_INVALID);
		H_RC(PtlEQPoll(&bad[i], 1, 0, &ev, &which), PTL_EQ_INVALID);
	}
	H_RC(PtlEQGet(o.eq, NULL), PTL_SEGV);
	H_RC(PtlEQWait(o.eq, NULL), PTL_SEGV);
	H_RC(PtlEQPoll(&o.eq, 0, 0, &ev, &which), PTL_EQ_INVALID);
	H_RC(PtlEQAlloc(o.ni, (ptl_size_t)1 << 60, PTL_EQ_HANDLER_NONE, &h), PTL_NO_SPACE);
	objs_close(&o);
}
END_TEST

/* Data-movement calls: bad MD handles (every call), region bounds. */
START_TEST(move_calls_invalid)
{
	struct objs o;

	objs_open(&o, _i);
	ptl_handle_md_t bad[3] = {PTL_INVALID_HANDLE, o.stale_md, o.eq};
	for (int i = 0; i < 3; i++) {
		H_RC(PtlPut(bad[i], PTL_ACK_REQ, o.self, H_PT, 0, 0, 0, 0), PTL_MD_INVALID);
		H_RC(PtlPutRegion(bad[i], 0, 1, PTL_ACK_REQ, o.self, H_PT, 0, 0, 0, 0),
		     PTL_MD_INVALID);
		H_RC(PtlGet(bad[i], o.self, H_PT, 0, 0, 0), PTL_MD_INVALID);
		H_RC(PtlGetRegion(bad[i], 0, 1, o.self, H_PT, 0, 0, 0), PTL_MD_INVALID);
		H_RC(PtlGetPut(bad[i], o.md, o.self, H_PT, 0, 0, 0, 0), PTL_MD_INVALID);
		H_RC(PtlGetPut(o.md, bad[i], o.self, H_PT, 0, 0, 0, 0), PTL_MD_INVALID);
	}
	H_RC(PtlPutRegion(o.md, 0, 9, PTL_ACK_REQ, o.self, H_PT, 0, 0, 0, 0), PTL_MD_ILLEGAL);
	H_RC(PtlGetRegion(o.md, 8, 1, o.self, H_PT, 0, 0, 0), PTL_MD_ILLEGAL);
	objs_close(&o);
}
END_TEST

/* PtlACEntry: out-of-range ac and pt indices, bad NI. */
START_TEST(acentry_invalid)
{
	struct objs o;

	objs_open(&o, _i);
	H_RC(PtlACEntry(o.ni, (ptl_ac_index_t)o.lim.max_ac_index + 1, h_any_id, PTL_UID_ANY,
	                PTL_JID_ANY, PTL_PT_INDEX_ANY),
	     PTL_AC_INDEX_INVALID);
	H_RC(PtlACEntry(o.ni, 0, h_any_id, PTL_UID_ANY, PTL_JID_ANY,
	                (ptl_pt_index_t)o.lim.max_pt_index + 1),
	     PTL_PT_INDEX_INVALID);
	H_RC(PtlACEntry(o.me, 0, h_any_id, PTL_UID_ANY, PTL_JID_ANY, 0), PTL_NI_INVALID);
	objs_close(&o);
}
END_TEST

/* PtlNIHandle / PtlNIStatus / PtlNIDist / PtlGet{Id,Uid,Jid}: NULL outputs,
 * stale handles. */
START_TEST(ni_query_invalid)
{
	struct objs o;
	ptl_handle_ni_t h;
	ptl_sr_value_t v;

	objs_open(&o, _i);
	H_RC(PtlNIHandle(o.stale_eq, &h), PTL_HANDLE_INVALID);
	H_RC(PtlNIHandle(o.stale_me, &h), PTL_HANDLE_INVALID);
	H_RC(PtlNIHandle(o.stale_md, &h), PTL_HANDLE_INVALID);
	H_RC(PtlNIHandle(o.eq, NULL), PTL_SEGV);
	H_RC(PtlNIStatus(o.ni, PTL_SR_NAL_BASE + 0xFFFF, &v), PTL_SR_INDEX_INVALID);
	H_RC(PtlNIDist(o.ni, o.self, NULL), PTL_SEGV);
	H_RC(PtlGetId(o.ni, NULL), PTL_SEGV);
	H_RC(PtlGetUid(o.ni, NULL), PTL_SEGV);
	H_RC(PtlGetJid(o.ni, NULL), PTL_SEGV);
	objs_close(&o);
}
END_TEST

/* PtlMEMDPost: works when the EQ is empty, PTL_MD_NO_UPDATE (and nothing
 * inserted) when it is not; bad base, NULL outputs. */
START_TEST(memdpost)
{
	struct objs o;
	ptl_handle_me_t me;
	ptl_handle_md_t md, src;
	ptl_md_t d = h_md(mb, 8, 1, PTL_MD_OP_PUT, PTL_EQ_NONE);
	char buf[4] = {0};

	objs_open(&o, _i);
	H_OK(PtlMEMDPost(o.me, h_any_id, 1, 0, PTL_RETAIN, PTL_INS_BEFORE, d, PTL_RETAIN, o.eq, &me,
	                 &md));
	H_EQ(h_sr_ni(o.ni, PTL_SR_MES_ALLOCATED), 2);
	H_OK(PtlMEUnlink(me));
	/* make o.eq non-empty: a put to ourselves into an MD reporting to o.eq */
	H_OK(PtlMEMDPost(o.me, h_any_id, 2, 0, PTL_RETAIN, PTL_INS_BEFORE,
	                 h_md(mb, 8, 1, PTL_MD_OP_PUT, o.eq), PTL_UNLINK, PTL_EQ_NONE, &me, &md));
	src = h_bind(&o.c, h_md(buf, 4, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE), PTL_RETAIN);
	H_OK(PtlPut(src, PTL_NO_ACK_REQ, o.self, H_PT, 0, 2, 0, 0));
	h_wait_sr(&o.c, PTL_SR_RECV_COUNT, 1);
	h_idle(&o.c, 20);
	ptl_handle_me_t me2 = PTL_INVALID_HANDLE;
	ptl_sr_value_t mes = h_sr_ni(o.ni, PTL_SR_MES_ALLOCATED);
	H_RC(PtlMEMDPost(o.me, h_any_id, 3, 0, PTL_RETAIN, PTL_INS_BEFORE, d, PTL_RETAIN, o.eq,
	                 &me2, &md),
	     PTL_MD_NO_UPDATE);
	H_EQ(h_sr_ni(o.ni, PTL_SR_MES_ALLOCATED), mes);
	H_RC(PtlMEMDPost(o.stale_me, h_any_id, 3, 0, PTL_RETAIN, PTL_INS_BEFORE, d, PTL_RETAIN,
	                 PTL_EQ_NONE, &me2, &md),
	     PTL_ME_INVALID);
	H_RC(PtlMEMDPost(o.me, h_any_id, 3, 0, PTL_RETAIN, PTL_INS_BEFORE, d, PTL_RETAIN,
	                 PTL_EQ_NONE, NULL, &md),
	     PTL_SEGV);
	H_RC(PtlMEMDPost(o.me, h_any_id, 3, 0, PTL_RETAIN, PTL_INS_BEFORE, d, PTL_RETAIN,
	                 PTL_EQ_NONE, &me2, NULL),
	     PTL_SEGV);
	H_EQ(h_sr_ni(o.ni, PTL_SR_MES_ALLOCATED), mes);
	ptl_event_t ev;
	h_expect(o.eq, PTL_EVENT_PUT_START, &ev);
	h_expect(o.eq, PTL_EVENT_PUT_END, &ev);
	h_expect(o.eq, PTL_EVENT_UNLINK, &ev);
	H_OK(PtlMEUnlink(me)); /* RETAIN: stays after its MD went */
	H_OK(PtlMDUnlink(src));
	objs_close(&o);
}
END_TEST

/* PtlMEMDPostNoWait (p3stack extension): PtlMEMDPost where LIB runs in the
 * process.  Where the NI queues it (myrinet offload), a failed EQ test (an
 * event the caller had not read when it called) is an event in the test EQ
 * describing the post (UNLINK, PTL_NI_POST_REFUSED: MD handle and user_ptr,
 * portal, match bits, match_id, ignore bits), and nothing is inserted. */
START_TEST(memdpost_nowait)
{
	struct objs o;
	ptl_handle_me_t me, me2;
	ptl_handle_md_t md, md2, src;
	ptl_md_t d = h_md(mb, 8, 1, PTL_MD_OP_PUT, PTL_EQ_NONE);
	char buf[4] = {0};
	ptl_event_t ev;

	objs_open(&o, _i);
	ptl_sr_value_t mes = h_sr_ni(o.ni, PTL_SR_MES_ALLOCATED);
	H_OK(PtlMEMDPostNoWait(o.me, h_any_id, 1, 0, PTL_UNLINK, PTL_INS_BEFORE, d, PTL_UNLINK,
	                       o.eq, &me, &md));
	H_EQ(h_sr_ni(o.ni, PTL_SR_MES_ALLOCATED), mes + 1);
	H_OK(PtlMEUnlink(me));
	/* make o.eq non-empty: a put to ourselves into an MD reporting to o.eq */
	H_OK(PtlMEMDPost(o.me, h_any_id, 2, 0, PTL_RETAIN, PTL_INS_BEFORE,
	                 h_md(mb, 8, 1, PTL_MD_OP_PUT, o.eq), PTL_UNLINK, PTL_EQ_NONE, &me, &md));
	src = h_bind(&o.c, h_md(buf, 4, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE), PTL_RETAIN);
	H_OK(PtlPut(src, PTL_NO_ACK_REQ, o.self, H_PT, 0, 2, 0, 0));
	h_wait_sr(&o.c, PTL_SR_RECV_COUNT, 1);
	h_idle(&o.c, 20);
	d.user_ptr = &o;
	int rc = PtlMEMDPostNoWait(o.me, o.self, 3, 0xf0, PTL_UNLINK, PTL_INS_BEFORE, d,
	                           PTL_UNLINK, o.eq, &me2, &md2);
	H_EQ(h_sr_ni(o.ni, PTL_SR_MES_ALLOCATED), mes + 1); /* nothing inserted */
	h_expect(o.eq, PTL_EVENT_PUT_START, &ev);
	h_expect(o.eq, PTL_EVENT_PUT_END, &ev);
	h_expect(o.eq, PTL_EVENT_UNLINK, &ev);
	if (rc == PTL_OK) { /* queued, and refused */
		h_expect(o.eq, PTL_EVENT_UNLINK, &ev);
		H_EQ(ev.ni_fail_type, PTL_NI_POST_REFUSED);
		H_EQ(ev.md_handle, md2);
		H_TRUE(ev.md.user_ptr == &o);
		H_EQ(ev.md.length, 8);
		H_EQ(ev.pt_index, H_PT);
		H_EQ(ev.match_bits, 3);
		H_EQ(ev.hdr_data, 0xf0);
		H_EQ(ev.initiator.nid, o.self.nid);
		H_EQ(ev.initiator.pid, o.self.pid);
	} else {
		H_RC(rc, PTL_MD_NO_UPDATE);
	}
	/* every event read: a post goes in, queued or not */
	H_OK(PtlMEMDPostNoWait(o.me, h_any_id, 4, 0, PTL_UNLINK, PTL_INS_BEFORE, d, PTL_UNLINK,
	                       o.eq, &me2, &md2));
	H_EQ(h_sr_ni(o.ni, PTL_SR_MES_ALLOCATED), mes + 2);
	H_OK(PtlMEUnlink(me2));
	H_OK(PtlMEMDPost(o.me, h_any_id, 5, 0, PTL_UNLINK, PTL_INS_BEFORE, d, PTL_UNLINK, o.eq,
	                 &me2, &md2));
	H_OK(PtlMEUnlink(me2));
	H_OK(PtlMEMDPostNoWait(o.me, h_any_id, 6, 0, PTL_UNLINK, PTL_INS_BEFORE, d, PTL_UNLINK,
	                       o.eq, &me2, &md2));
	H_EQ(h_sr_ni(o.ni, PTL_SR_MES_ALLOCATED), mes + 2);
	H_OK(PtlMEUnlink(me2));
	h_expect_none(o.eq, 20);
	/* the argument checks of PtlMEMDPost */
	H_RC(PtlMEMDPostNoWait(o.stale_me, h_any_id, 7, 0, PTL_UNLINK, PTL_INS_BEFORE, d,
	                       PTL_UNLINK, PTL_EQ_NONE, &me2, &md2),
	     PTL_ME_INVALID);
	H_RC(PtlMEMDPostNoWait(o.me, h_any_id, 7, 0, PTL_UNLINK, PTL_INS_BEFORE, d, PTL_UNLINK,
	                       o.eq, NULL, &md2),
	     PTL_SEGV);
	H_RC(PtlMEMDPostNoWait(o.me, h_any_id, 7, 0, PTL_UNLINK, PTL_INS_BEFORE, d, PTL_UNLINK,
	                       o.md, &me2, &md2),
	     PTL_EQ_INVALID);
	H_RC(PtlMEMDPostNoWait(o.me, h_any_id, 7, 0, PTL_UNLINK, PTL_INS_BEFORE, d, PTL_UNLINK,
	                       o.stale_eq, &me2, &md2),
	     PTL_EQ_INVALID);
	H_EQ(h_sr_ni(o.ni, PTL_SR_MES_ALLOCATED), mes + 1);
	H_OK(PtlMEUnlink(me)); /* RETAIN: stays after its MD went */
	H_OK(PtlMDUnlink(src));
	objs_close(&o);
}
END_TEST

/* PtlMEUnlinkNoWait (p3stack extension): unlinks the ME and its MD as
 * PtlMEUnlink does, and every later call sees it done, also where it only
 * queued the request (myrinet offload); an ME already gone is nothing the
 * caller must handle; a handle that is no ME's is refused. */
START_TEST(me_unlink_nowait)
{
	struct objs o;
	ptl_handle_me_t me;
	ptl_handle_md_t md;

	objs_open(&o, _i);
	ptl_sr_value_t mes = h_sr_ni(o.ni, PTL_SR_MES_ALLOCATED);
	ptl_sr_value_t mds = h_sr_ni(o.ni, PTL_SR_MDS_ALLOCATED);
	H_OK(PtlMEAttach(o.ni, H_PT, h_any_id, 5, 0, PTL_UNLINK, PTL_INS_AFTER, &me));
	H_OK(PtlMDAttach(me, h_md(mb, 8, 3, PTL_MD_OP_GET, PTL_EQ_NONE), PTL_UNLINK, &md));
	H_OK(PtlMEUnlinkNoWait(me));
	H_RC(PtlMEUnlink(me), PTL_ME_INVALID); /* done before this call ran */
	H_RC(PtlMDUnlink(md), PTL_MD_INVALID); /* the MD went with it */
	H_EQ(h_sr_ni(o.ni, PTL_SR_MES_ALLOCATED), mes);
	H_EQ(h_sr_ni(o.ni, PTL_SR_MDS_ALLOCATED), mds);
	int rc = PtlMEUnlinkNoWait(me); /* gone: reported at once, or not at all */
	H_TRUE(rc == PTL_OK || rc == PTL_ME_INVALID);
	H_RC(PtlMEUnlinkNoWait(o.md), PTL_ME_INVALID);
	H_RC(PtlMEUnlinkNoWait(o.eq), PTL_ME_INVALID);
	/* the ME o.me is untouched by all this */
	H_OK(PtlMEInsert(o.me, h_any_id, 6, 0, PTL_RETAIN, PTL_INS_AFTER, &me));
	H_OK(PtlMEUnlinkNoWait(me));
	H_EQ(h_sr_ni(o.ni, PTL_SR_MES_ALLOCATED), mes);
	objs_close(&o);
}
END_TEST

/* p3rt: the calls round-trip explicit values; errors for bad NI, NULL,
 * out-of-range rank; a malformed environment gives PTL_FAIL. */
START_TEST(p3rt_calls)
{
	int n;
	ptl_handle_ni_t ni;
	ptl_nid_t nids[2] = {0, 0}, gn[2];
	ptl_pid_t pids[2] = {5, 6}, gp[2];
	unsigned r, sz;
	ptl_jid_t jid = h_new_jid(), gj;
	ptl_process_id_t id;

	unsetenv("PTL_MY_RID");
	unsetenv("PTL_NIDMAP");
	unsetenv("PTL_PIDMAP");
	unsetenv("PTL_MY_JID");
	setenv("PTL_PROGRESS", h_mode_progress(_i), 1);
	H_OK(PtlInit(&n));
	H_OK(PtlSetRank(PTL_INVALID_HANDLE, 0, 2));
	H_OK(PtlSetNIDMap(PTL_INVALID_HANDLE, nids, 2));
	H_OK(PtlSetPIDMap(PTL_INVALID_HANDLE, pids, 2));
	H_OK(PtlSetJID(PTL_INVALID_HANDLE, jid));
	H_OK(PtlNIInit(PTL_IFACE_SHMEM, PTL_PID_ANY, NULL, NULL, &ni));
	H_OK(PtlGetRank(ni, &r, &sz));
	H_EQ(r, 0);
	H_EQ(sz, 2);
	H_OK(PtlGetId(ni, &id));
	H_EQ(id.pid, 5);
	H_OK(PtlGetRankId(ni, 1, &id));
	H_EQ(id.pid, 6);
	H_EQ(id.nid, 0);
	H_RC(PtlGetRankId(ni, 2, &id), PTL_PROCESS_INVALID);
	H_RC(PtlGetRankId(ni, 0xFFFFFFFFu, &id), PTL_PROCESS_INVALID);
	H_OK(PtlGetNIDMap(ni, gn, 2));
	H_OK(PtlGetPIDMap(ni, gp, 2));
	H_EQ(gn[1], 0);
	H_EQ(gp[0], 5);
	H_EQ(gp[1], 6);
	H_OK(PtlGetJID(ni, &gj));
	H_EQ(gj, jid);
	/* NULL outputs */
	H_RC(PtlGetRank(ni, NULL, &sz), PTL_SEGV);
	H_RC(PtlGetRank(ni, &r, NULL), PTL_SEGV);
	H_RC(PtlGetRankId(ni, 0, NULL), PTL_SEGV);
	H_RC(PtlGetNIDMap(ni, NULL, 2), PTL_SEGV);
	H_RC(PtlGetPIDMap(ni, NULL, 2), PTL_SEGV);
	H_RC(PtlGetJID(ni, NULL), PTL_SEGV);
	H_RC(PtlSetNIDMap(ni, NULL, 2), PTL_SEGV);
	H_RC(PtlSetPIDMap(ni, NULL, 2), PTL_SEGV);
	/* bad NI (not PTL_INVALID_HANDLE: a garbage or stale one) */
	H_RC(PtlGetRank(0x3FFFFFF0u, &r, &sz), PTL_NI_INVALID);
	H_RC(PtlGetRankId(0x3FFFFFF0u, 0, &id), PTL_NI_INVALID);
	H_RC(PtlGetJID(0x3FFFFFF0u, &gj), PTL_NI_INVALID);
	H_RC(PtlSetJID(0x3FFFFFF0u, 1), PTL_NI_INVALID);
	H_RC(PtlSetRank(0x3FFFFFF0u, 0, 1), PTL_NI_INVALID);
	h_leak_check(ni);
	H_OK(PtlNIFini(ni));
	H_RC(PtlGetRank(ni, &r, &sz), PTL_NI_INVALID);
	PtlFini();
	h_shm_cleanup(jid);
}
END_TEST

/* PtlSetRank(PTL_INVALID_HANDLE, -1, -1) with a malformed environment ->
 * PTL_FAIL (the message names the variable). */
START_TEST(p3rt_bad_env)
{
	int n;
	setenv("PTL_MY_RID", "zero", 1);
	setenv("PTL_NIDMAP", "0:0", 1);
	setenv("PTL_PIDMAP", "0:1", 1);
	setenv("PTL_MY_JID", "1234", 1);
	H_OK(PtlInit(&n));
	H_RC(PtlSetRank(PTL_INVALID_HANDLE, (unsigned)-1, (unsigned)-1), PTL_FAIL);
	PtlFini();
	setenv("PTL_MY_RID", "1", 1);
	setenv("PTL_PIDMAP", "0:x", 1);
	H_OK(PtlInit(&n));
	H_RC(PtlSetRank(PTL_INVALID_HANDLE, (unsigned)-1, (unsigned)-1), PTL_FAIL);
	PtlFini();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("invalid");
	TCase *tc = tcase_create("invalid");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, no_init_every_call);
	H_ADD(tc, ni_calls_bad_ni);
	H_ADD(tc, me_calls_invalid);
	H_ADD(tc, md_calls_invalid);
	H_ADD(tc, eq_calls_invalid);
	H_ADD(tc, move_calls_invalid);
	H_ADD(tc, acentry_invalid);
	H_ADD(tc, ni_query_invalid);
	H_ADD(tc, memdpost);
	H_ADD(tc, me_unlink_nowait);
	H_ADD(tc, memdpost_nowait);
	H_ADD_X(tc, p3rt_calls, H_X_NOT_SHMEM,
	        "the job runtime maps are exercised over shmem (nid 0, pids 5 and 6)");
	tcase_add_test(tc, p3rt_bad_env);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return h_main(suite());
}
