/* SPDX-License-Identifier: BSD-3-Clause */
/* check_offsets.c - local offsets, MANAGE_REMOTE, MAX_SIZE, IOVEC and
 * zero-length MDs (§4.3, §7 Offsets), over lo and shmem (app, thread). */
#include "harness.h"

#include <string.h>

static unsigned char tb[256];

/* §7: the local offset advances by mlength after each match. */
H_PAIR_TEST(local_offset_advances)
static void local_offset_advances_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 16);
	ptl_handle_md_t md;
	ptl_event_t ev;
	ptl_handle_me_t me =
	    h_me_md(c, H_PT, h_any_id, 1, 0, PTL_RETAIN,
	            h_md(tb, 64, PTL_MD_THRESH_INF, PTL_MD_OP_PUT, eq), PTL_RETAIN, &md);
	static const ptl_size_t len[3] = {10, 20, 5}, off[3] = {0, 10, 30};
	memset(tb, 0, sizeof(tb));
	h_sync(c);
	for (int i = 0; i < 3; i++) {
		h_expect(eq, PTL_EVENT_PUT_START, &ev);
		h_expect(eq, PTL_EVENT_PUT_END, &ev);
		H_EQ(ev.offset, off[i]);
		H_EQ(ev.mlength, len[i]);
		H_PAT(tb + off[i], len[i], 100 + (uint32_t)i, 0);
	}
	H_EQ(tb[35], 0);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void local_offset_advances_ini(struct h_ctx *c)
{
	static const ptl_size_t len[3] = {10, 20, 5};
	char buf[32];
	h_sync(c);
	for (int i = 0; i < 3; i++) {
		h_fill(buf, len[i], 100 + (uint32_t)i, 0);
		/* the remote offset is ignored without MANAGE_REMOTE */
		h_put(c, h_peer(c), H_PT, 1, 40, buf, len[i], PTL_NO_ACK_REQ, 0);
	}
	h_sync(c);
}

/* §7: MANAGE_REMOTE: the offset comes from the request. */
H_PAIR_TEST(manage_remote)
static void manage_remote_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 16);
	ptl_handle_md_t md;
	ptl_event_t ev;
	ptl_handle_me_t me = h_me_md(c, H_PT, h_any_id, 2, 0, PTL_RETAIN,
	                             h_md(tb, 64, PTL_MD_THRESH_INF,
	                                  PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, eq),
	                             PTL_RETAIN, &md);
	memset(tb, 0, sizeof(tb));
	h_sync(c);
	h_expect(eq, PTL_EVENT_PUT_START, &ev);
	h_expect(eq, PTL_EVENT_PUT_END, &ev);
	H_EQ(ev.offset, 40);
	H_EQ(ev.mlength, 8);
	h_expect(eq, PTL_EVENT_PUT_START, &ev);
	h_expect(eq, PTL_EVENT_PUT_END, &ev);
	H_EQ(ev.offset, 3);
	H_PAT(tb + 40, 8, 5, 0);
	H_PAT(tb + 3, 8, 6, 0);
	H_EQ(tb[11], 0);
	H_EQ(tb[39], 0);
	/* a get at remote offset 38 reads from there */
	h_expect(eq, PTL_EVENT_GET_START, &ev);
	h_expect(eq, PTL_EVENT_GET_END, &ev);
	H_EQ(ev.offset, 38);
	H_EQ(ev.mlength, 12);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void manage_remote_ini(struct h_ctx *c)
{
	unsigned char buf[16];
	h_sync(c);
	h_fill(buf, 8, 5, 0);
	h_put(c, h_peer(c), H_PT, 2, 40, buf, 8, PTL_NO_ACK_REQ, 0);
	h_fill(buf, 8, 6, 0);
	h_put(c, h_peer(c), H_PT, 2, 3, buf, 8, PTL_NO_ACK_REQ, 0);
	H_EQ(h_getdata(c, h_peer(c), H_PT, 2, 38, buf, 12), 12);
	H_EQ(buf[0], 0);
	H_EQ(buf[1], 0);
	H_PAT(buf + 2, 8, 5, 0);
	H_EQ(buf[10], 0);
	h_sync(c);
}

/* §7: MAX_SIZE: the MD goes inactive (and unlinks) once the space left is
 * below max_size; the next request is dropped. */
H_PAIR_TEST(max_size_inactivates)
static void max_size_inactivates_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t md;
	ptl_md_t d = h_md(tb, 64, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MAX_SIZE, eq);
	ptl_handle_me_t me;
	int cnt[PTL_EVENT_KIND_MAX];
	ptl_event_t ev;
	ptl_sr_value_t d0 = h_sr(c, PTL_SR_DROP_COUNT);

	d.max_size = 20;
	me = h_me_md(c, H_PT, h_any_id, 3, 0, PTL_UNLINK, d, PTL_UNLINK, &md);
	h_sync(c);
	/* 10 (54 left), 30 (24 left), 10 (14 left < 20: inactive, unlinked) */
	h_collect(eq, 6, cnt);
	H_EQ(cnt[PTL_EVENT_PUT_START], 3);
	H_EQ(cnt[PTL_EVENT_PUT_END], 3);
	h_expect(eq, PTL_EVENT_UNLINK, &ev);
	H_EQ(ev.md_handle, md);
	h_sync(c);
	h_wait_sr(c, PTL_SR_DROP_COUNT, d0 + 1);
	h_expect_none(eq, 50);
	H_RC(PtlMEUnlink(me), PTL_ME_INVALID);
	h_sync(c);
	H_OK(PtlEQFree(eq));
}
static void max_size_inactivates_ini(struct h_ctx *c)
{
	char buf[32] = {0};
	h_sync(c);
	h_put(c, h_peer(c), H_PT, 3, 0, buf, 10, PTL_NO_ACK_REQ, 0);
	h_put(c, h_peer(c), H_PT, 3, 0, buf, 30, PTL_NO_ACK_REQ, 0);
	h_put(c, h_peer(c), H_PT, 3, 0, buf, 10, PTL_NO_ACK_REQ, 0);
	h_sync(c);
	h_put(c, h_peer(c), H_PT, 3, 0, buf, 1, PTL_NO_ACK_REQ, 0);
	h_sync(c);
}

/* §7: IOVEC scatter at the target, at an arbitrary offset across entries. */
static unsigned char iv_a[5], iv_b[17], iv_c[10];
H_PAIR_TEST(iovec_scatter)
static void iovec_scatter_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 16);
	ptl_md_iovec_t iov[3] = {{iv_a, 5}, {iv_b, 17}, {iv_c, 10}};
	ptl_handle_md_t md;
	ptl_event_t ev;
	ptl_handle_me_t me =
	    h_me_md(c, H_PT, h_any_id, 4, 0, PTL_RETAIN,
	            h_md(iov, 3, PTL_MD_THRESH_INF,
	                 PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_IOVEC | PTL_MD_MANAGE_REMOTE, eq),
	            PTL_RETAIN, &md);
	unsigned char flat[32];
	memset(iv_a, 0, 5);
	memset(iv_b, 0, 17);
	memset(iv_c, 0, 10);
	h_sync(c);
	h_expect(eq, PTL_EVENT_PUT_START, &ev);
	h_expect(eq, PTL_EVENT_PUT_END, &ev);
	H_EQ(ev.offset, 3);
	H_EQ(ev.mlength, 21);
	memcpy(flat, iv_a, 5);
	memcpy(flat + 5, iv_b, 17);
	memcpy(flat + 22, iv_c, 10);
	H_EQ(flat[0], 0);
	H_EQ(flat[2], 0);
	H_PAT(flat + 3, 21, 9, 0);
	for (int i = 24; i < 32; i++)
		H_EQ(flat[i], 0);
	/* and a gather from the same iovec MD by a get */
	h_fill(iv_a, 5, 10, 0);
	h_fill(iv_b, 17, 10, 5);
	h_fill(iv_c, 10, 10, 22);
	h_sync(c);
	h_expect(eq, PTL_EVENT_GET_START, &ev);
	h_expect(eq, PTL_EVENT_GET_END, &ev);
	H_EQ(ev.offset, 4);
	H_EQ(ev.mlength, 25);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void iovec_scatter_ini(struct h_ctx *c)
{
	unsigned char buf[32];
	h_fill(buf, 21, 9, 0);
	h_sync(c);
	h_put(c, h_peer(c), H_PT, 4, 3, buf, 21, PTL_NO_ACK_REQ, 0);
	h_sync(c);
	H_EQ(h_getdata(c, h_peer(c), H_PT, 4, 4, buf, 25), 25);
	H_PAT(buf, 25, 10, 4);
	h_sync(c);
}

/* §7: IOVEC gather at the initiator (PutRegion at an offset inside an iovec
 * MD) and scatter of a reply into an iovec MD (GetRegion). */
H_PAIR_TEST(iovec_gather)
static void iovec_gather_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 16);
	ptl_handle_md_t md;
	ptl_event_t ev;
	ptl_handle_me_t me = h_me_md(c, H_PT, h_any_id, 5, 0, PTL_RETAIN,
	                             h_md(tb, 64, PTL_MD_THRESH_INF,
	                                  PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, eq),
	                             PTL_RETAIN, &md);
	memset(tb, 0, sizeof(tb));
	h_sync(c);
	h_expect(eq, PTL_EVENT_PUT_START, &ev);
	h_expect(eq, PTL_EVENT_PUT_END, &ev);
	H_EQ(ev.mlength, 20);
	H_PAT(tb, 20, 12, 5);
	H_EQ(tb[20], 0);
	h_fill(tb, 64, 13, 0);
	h_sync(c);
	h_expect(eq, PTL_EVENT_GET_START, &ev);
	h_expect(eq, PTL_EVENT_GET_END, &ev);
	H_EQ(ev.mlength, 9);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void iovec_gather_ini(struct h_ctx *c)
{
	unsigned char a[7], b[1], d[24], flat[32];
	ptl_md_iovec_t iov[3] = {{a, 7}, {b, 1}, {d, 24}};
	ptl_handle_eq_t eq = h_eq(c, 16);
	ptl_handle_md_t md =
	    h_bind(c, h_md(iov, 3, PTL_MD_THRESH_INF, PTL_MD_IOVEC, eq), PTL_RETAIN);
	ptl_event_t ev;

	h_fill(a, 7, 12, 0);
	h_fill(b, 1, 12, 7);
	h_fill(d, 24, 12, 8);
	h_sync(c);
	H_OK(PtlPutRegion(md, 5, 20, PTL_NO_ACK_REQ, h_peer(c), H_PT, 0, 5, 0, 0));
	h_expect(eq, PTL_EVENT_SEND_START, &ev);
	h_expect(eq, PTL_EVENT_SEND_END, &ev);
	h_sync(c);
	memset(a, 0, 7);
	memset(b, 0, 1);
	memset(d, 0, 24);
	H_OK(PtlGetRegion(md, 6, 9, h_peer(c), H_PT, 0, 5, 30));
	h_expect(eq, PTL_EVENT_REPLY_START, &ev);
	h_expect(eq, PTL_EVENT_REPLY_END, &ev);
	H_EQ(ev.mlength, 9);
	memcpy(flat, a, 7);
	memcpy(flat + 7, b, 1);
	memcpy(flat + 8, d, 24);
	H_EQ(flat[5], 0);
	H_PAT(flat + 6, 9, 13, 30);
	H_EQ(flat[15], 0);
	h_sync(c);
	H_OK(PtlMDUnlink(md));
	H_OK(PtlEQFree(eq));
}

/* §7: zero-length MDs produce events (put, get and ack with mlength 0). */
H_PAIR_TEST(zero_length)
static void zero_length_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 16);
	ptl_handle_md_t md;
	ptl_event_t ev;
	ptl_handle_me_t me =
	    h_me_md(c, H_PT, h_any_id, 6, 0, PTL_RETAIN,
	            h_md(NULL, 0, 2, PTL_MD_OP_PUT | PTL_MD_OP_GET, eq), PTL_UNLINK, &md);
	h_sync(c);
	h_expect(eq, PTL_EVENT_PUT_START, &ev);
	H_EQ(ev.rlength, 0);
	h_expect(eq, PTL_EVENT_PUT_END, &ev);
	H_EQ(ev.mlength, 0);
	h_expect(eq, PTL_EVENT_GET_START, &ev);
	h_expect(eq, PTL_EVENT_GET_END, &ev);
	H_EQ(ev.mlength, 0);
	h_expect(eq, PTL_EVENT_UNLINK, &ev);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void zero_length_ini(struct h_ctx *c)
{
	char dummy[1];
	h_sync(c);
	H_EQ(h_put(c, h_peer(c), H_PT, 6, 0, dummy, 0, PTL_ACK_REQ, 0), 0);
	H_EQ(h_getdata(c, h_peer(c), H_PT, 6, 0, dummy, 0), 0);
	h_sync(c);
}

static Suite *suite(void)
{
	Suite *s = suite_create("offsets");
	TCase *tc = tcase_create("offsets");
	tcase_set_timeout(tc, 60);
	H_ADD(tc, local_offset_advances);
	H_ADD(tc, manage_remote);
	H_ADD(tc, max_size_inactivates);
	H_ADD(tc, iovec_scatter);
	H_ADD(tc, iovec_gather);
	H_ADD(tc, zero_length);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return h_main(suite());
}
