/* SPDX-License-Identifier: BSD-3-Clause */
/* check_md.c - memory descriptors: bind/unlink, MD_ILLEGAL cases, stale
 * handles and the DECISION on operations over an inactive MD (§3, §7 Data),
 * over lo and shmem. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

static char mb[64];

/* Bind and unlink; a second unlink (stale handle) -> PTL_MD_INVALID. */
START_TEST(md_bind_unlink)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL);
	ptl_handle_md_t md, md2;

	H_OK(PtlMDBind(ni, h_md(mb, 64, 1, 0, PTL_EQ_NONE), PTL_RETAIN, &md));
	H_EQ(h_sr_ni(ni, PTL_SR_MDS_ALLOCATED), 1);
	H_OK(PtlMDUnlink(md));
	H_EQ(h_sr_ni(ni, PTL_SR_MDS_ALLOCATED), 0);
	H_RC(PtlMDUnlink(md), PTL_MD_INVALID);
	H_OK(PtlMDBind(ni, h_md(mb, 64, 1, 0, PTL_EQ_NONE), PTL_RETAIN, &md2));
	H_RC(PtlMDUnlink(md), PTL_MD_INVALID); /* reused slot, old generation */
	H_EQ(PtlHandleIsEqual(md, md2), 0);
	H_OK(PtlMDUnlink(md2));
	/* zero-length MD with a NULL start is legal */
	H_OK(PtlMDBind(ni, h_md(NULL, 0, 1, 0, PTL_EQ_NONE), PTL_RETAIN, &md));
	H_OK(PtlMDUnlink(md));
	h_close(ni);
}
END_TEST

/* §7: an MD naming an EQ of another NI -> PTL_MD_ILLEGAL (bind and attach). */
START_TEST(md_eq_other_ni)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL), other;
	ptl_handle_eq_t eq;
	ptl_handle_me_t me;
	ptl_handle_md_t md;

	if (_i == H_MODE_LO) {
		h_set_env(0, 1, h_new_jid(), "app");
		H_OK(PtlSetRank(PTL_INVALID_HANDLE, (unsigned)-1, (unsigned)-1));
		H_OK(PtlNIInit(PTL_IFACE_SHMEM, PTL_PID_ANY, NULL, NULL, &other));
	} else {
		H_OK(PtlNIInit(PTL_IFACE_LO, PTL_PID_ANY, NULL, NULL, &other));
	}
	H_EQ(PtlHandleIsEqual(ni, other), 0);
	H_OK(PtlEQAlloc(other, 8, PTL_EQ_HANDLER_NONE, &eq));
	H_RC(PtlMDBind(ni, h_md(mb, 64, 1, 0, eq), PTL_RETAIN, &md), PTL_MD_ILLEGAL);
	H_OK(PtlMEAttach(ni, H_PT, h_any_id, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me));
	H_RC(PtlMDAttach(me, h_md(mb, 64, 1, PTL_MD_OP_PUT, eq), PTL_RETAIN, &md), PTL_MD_ILLEGAL);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
	h_leak_check(other);
	H_OK(PtlNIFini(other));
	if (_i == H_MODE_LO)
		h_shm_cleanup((ptl_jid_t)strtoul(getenv("PTL_MY_JID"), NULL, 10));
	h_close(ni);
}
END_TEST

/* More iovecs than max_md_iovecs, or a NULL iovec array -> PTL_MD_ILLEGAL. */
START_TEST(md_iovec_limits)
{
	ptl_ni_limits_t lim;
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, &lim);
	int n = lim.max_md_iovecs + 1;
	ptl_md_iovec_t *iov = calloc((size_t)n, sizeof(*iov));
	ptl_handle_md_t md;

	H_TRUE(iov != NULL);
	for (int i = 0; i < n; i++) {
		iov[i].iov_base = mb;
		iov[i].iov_len = 1;
	}
	H_OK(PtlMDBind(ni, h_md(iov, (ptl_size_t)lim.max_md_iovecs, 1, PTL_MD_IOVEC, PTL_EQ_NONE),
	               PTL_RETAIN, &md));
	H_OK(PtlMDUnlink(md));
	H_RC(PtlMDBind(ni, h_md(iov, (ptl_size_t)n, 1, PTL_MD_IOVEC, PTL_EQ_NONE), PTL_RETAIN, &md),
	     PTL_MD_ILLEGAL);
	H_RC(PtlMDBind(ni, h_md(NULL, 2, 1, PTL_MD_IOVEC, PTL_EQ_NONE), PTL_RETAIN, &md),
	     PTL_MD_ILLEGAL);
	free(iov);
	h_close(ni);
}
END_TEST

/* DECISION: PtlPut/PtlGet on an inactive MD (threshold 0) -> PTL_MD_ILLEGAL. */
START_TEST(md_inactive_put_get)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL);
	ptl_process_id_t self;
	ptl_handle_md_t md;

	H_OK(PtlGetId(ni, &self));
	H_OK(PtlMDBind(ni, h_md(mb, 64, 0, 0, PTL_EQ_NONE), PTL_RETAIN, &md));
	H_RC(PtlPut(md, PTL_NO_ACK_REQ, self, H_PT, 0, 0, 0, 0), PTL_MD_ILLEGAL);
	H_RC(PtlGet(md, self, H_PT, 0, 0, 0), PTL_MD_ILLEGAL);
	H_RC(PtlPutRegion(md, 0, 1, PTL_NO_ACK_REQ, self, H_PT, 0, 0, 0, 0), PTL_MD_ILLEGAL);
	H_OK(PtlMDUnlink(md));
	h_close(ni);
}
END_TEST

/* §7: PutRegion/GetRegion out of bounds -> PTL_MD_ILLEGAL. */
START_TEST(md_region_bounds)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL);
	ptl_process_id_t self;
	ptl_handle_md_t md;

	H_OK(PtlGetId(ni, &self));
	H_OK(PtlMDBind(ni, h_md(mb, 64, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE), PTL_RETAIN, &md));
	H_RC(PtlPutRegion(md, 60, 5, PTL_NO_ACK_REQ, self, H_PT, 0, 0, 0, 0), PTL_MD_ILLEGAL);
	H_RC(PtlPutRegion(md, 65, 0, PTL_NO_ACK_REQ, self, H_PT, 0, 0, 0, 0), PTL_MD_ILLEGAL);
	H_RC(PtlPutRegion(md, 1, 0xFFFFFFFFFFFFFFFFull, PTL_NO_ACK_REQ, self, H_PT, 0, 0, 0, 0),
	     PTL_MD_ILLEGAL);
	H_RC(PtlGetRegion(md, 0, 65, self, H_PT, 0, 0, 0), PTL_MD_ILLEGAL);
	H_RC(PtlGetRegion(md, 0xFFFFFFFFFFFFFFF0ull, 0x20, self, H_PT, 0, 0, 0), PTL_MD_ILLEGAL);
	H_OK(PtlMDUnlink(md));
	h_close(ni);
}
END_TEST

/* §7: GetPut with a put MD longer than max_getput_md -> PTL_MD_ILLEGAL. */
START_TEST(md_getput_too_long)
{
	ptl_ni_limits_t lim;
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, &lim);
	ptl_process_id_t self;
	ptl_handle_md_t g, p;
	size_t n = (size_t)lim.max_getput_md + 1;
	char *buf = calloc(n, 1);

	H_TRUE(buf != NULL && lim.max_getput_md >= 8);
	H_OK(PtlGetId(ni, &self));
	H_OK(PtlMDBind(ni, h_md(buf, n, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE), PTL_RETAIN, &g));
	H_OK(PtlMDBind(ni, h_md(buf, n, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE), PTL_RETAIN, &p));
	H_RC(PtlGetPut(g, p, self, H_PT, 0, 0, 0, 0), PTL_MD_ILLEGAL);
	H_OK(PtlMDUnlink(g));
	H_OK(PtlMDUnlink(p));
	free(buf);
	h_close(ni);
}
END_TEST

/* §7: bad MD handle on every data-movement call -> PTL_MD_INVALID. */
START_TEST(md_bad_handle)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL);
	ptl_process_id_t self;
	ptl_handle_md_t md, stale;
	ptl_handle_eq_t eq;

	H_OK(PtlGetId(ni, &self));
	H_OK(PtlMDBind(ni, h_md(mb, 64, 1, 0, PTL_EQ_NONE), PTL_RETAIN, &stale));
	H_OK(PtlMDUnlink(stale));
	H_OK(PtlEQAlloc(ni, 4, PTL_EQ_HANDLER_NONE, &eq));
	H_OK(PtlMDBind(ni, h_md(mb, 8, 1, 0, PTL_EQ_NONE), PTL_RETAIN, &md));
	ptl_handle_md_t bad[4] = {PTL_INVALID_HANDLE, PTL_MD_NONE, stale, eq};
	for (int i = 0; i < 4; i++) {
		H_RC(PtlPut(bad[i], PTL_NO_ACK_REQ, self, H_PT, 0, 0, 0, 0), PTL_MD_INVALID);
		H_RC(PtlPutRegion(bad[i], 0, 1, PTL_NO_ACK_REQ, self, H_PT, 0, 0, 0, 0),
		     PTL_MD_INVALID);
		H_RC(PtlGet(bad[i], self, H_PT, 0, 0, 0), PTL_MD_INVALID);
		H_RC(PtlGetRegion(bad[i], 0, 1, self, H_PT, 0, 0, 0), PTL_MD_INVALID);
		H_RC(PtlGetPut(bad[i], md, self, H_PT, 0, 0, 0, 0), PTL_MD_INVALID);
		H_RC(PtlGetPut(md, bad[i], self, H_PT, 0, 0, 0, 0), PTL_MD_INVALID);
		H_RC(PtlMDUnlink(bad[i]), PTL_MD_INVALID);
	}
	H_OK(PtlMDUnlink(md));
	H_OK(PtlEQFree(eq));
	h_close(ni);
}
END_TEST

/* §7: put and get to oneself (through the loopback path of each NAL). */
START_TEST(put_get_self)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL);
	struct h_ctx c;
	ptl_handle_eq_t eq;
	ptl_handle_me_t me;
	ptl_handle_md_t md;
	static unsigned char tgt[4096], src[4096];
	ptl_event_t ev;

	h_ctx_single(&c, ni);
	eq = h_eq(&c, 32);
	me = h_me_md(&c, H_PT, c.me, 0x5E1F, 0, PTL_RETAIN,
	             h_md(tgt, sizeof(tgt), PTL_MD_THRESH_INF,
	                  PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, eq),
	             PTL_RETAIN, &md);
	h_fill(src, sizeof(src), 31, 0);
	H_EQ(h_put(&c, c.me, H_PT, 0x5E1F, 0, src, sizeof(src), PTL_ACK_REQ, 0), sizeof(src));
	h_expect(eq, PTL_EVENT_PUT_START, &ev);
	h_expect(eq, PTL_EVENT_PUT_END, &ev);
	H_EQ(ev.initiator.pid, c.me.pid);
	H_PAT(tgt, sizeof(tgt), 31, 0);
	memset(src, 0, sizeof(src));
	H_EQ(h_getdata(&c, c.me, H_PT, 0x5E1F, 100, src, 1000), 1000);
	H_PAT(src, 1000, 31, 100);
	h_expect(eq, PTL_EVENT_GET_START, &ev);
	h_expect(eq, PTL_EVENT_GET_END, &ev);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
	h_close(ni);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("md");
	TCase *tc = tcase_create("md");
	tcase_set_timeout(tc, 30);
	H_ADD(tc, md_bind_unlink);
	H_ADD(tc, md_eq_other_ni);
	H_ADD(tc, md_iovec_limits);
	H_ADD(tc, md_inactive_put_get);
	H_ADD(tc, md_region_bounds);
	H_ADD(tc, md_getput_too_long);
	H_ADD(tc, md_bad_handle);
	H_ADD(tc, put_get_self);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return h_main(suite());
}
