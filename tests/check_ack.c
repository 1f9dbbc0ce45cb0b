/* SPDX-License-Identifier: BSD-3-Clause */
/* check_ack.c - acknowledgements (§4.5, §7 Acks, DECISION: acks are sent
 * even when the initiator MD has no EQ), over lo and shmem (app, thread). */
#include "harness.h"

#include <string.h>

static char tb[64];

static ptl_handle_me_t ack_target(struct h_ctx *c, ptl_handle_eq_t eq, unsigned extra,
                                  ptl_size_t len, ptl_handle_md_t *md)
{
	return h_me_md(c, H_PT, h_any_id, 1, 0, PTL_RETAIN,
	               h_md(tb, len, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | extra, eq), PTL_RETAIN, md);
}

/* Target for the ack tests: accept `n` puts, then release. */
static void ack_tgt_n(struct h_ctx *c, unsigned extra, ptl_size_t len, int n)
{
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t md;
	ptl_handle_me_t me = ack_target(c, eq, extra, len, &md);
	int cnt[PTL_EVENT_KIND_MAX];
	h_sync(c);
	h_collect(eq, 2 * n, cnt);
	H_EQ(cnt[PTL_EVENT_PUT_START], n);
	H_EQ(cnt[PTL_EVENT_PUT_END], n);
	h_sync(c);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}

/* §7: an ack when requested: ACK event with the target's values. */
H_PAIR_TEST(ack_when_requested)
static void ack_when_requested_tgt(struct h_ctx *c)
{
	ack_tgt_n(c, 0, 64, 1);
}
static void ack_when_requested_ini(struct h_ctx *c)
{
	char buf[32];
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_md_t d = h_md(buf, 32, PTL_MD_THRESH_INF, 0, eq);
	ptl_handle_md_t md;
	ptl_event_t ev;
	int cnt[PTL_EVENT_KIND_MAX] = {0};

	d.user_ptr = (void *)0x1234;
	md = h_bind(c, d, PTL_RETAIN);
	h_sync(c);
	H_OK(PtlPut(md, PTL_ACK_REQ, h_peer(c), H_PT, 0, 1, 0, 0x77));
	for (int i = 0; i < 3; i++) {
		(void)h_next(eq, &ev);
		H_TRUE(ev.type < PTL_EVENT_KIND_MAX);
		cnt[ev.type]++;
		if (ev.type == PTL_EVENT_ACK) {
			H_EQ(ev.mlength, 32);
			H_EQ(ev.md_handle, md);
			H_EQ(ev.match_bits, 1);
			H_EQ(ev.pt_index, H_PT);
			H_EQ((uintptr_t)ev.md.user_ptr, 0x1234);
			H_EQ(ev.ni_fail_type, PTL_NI_OK);
		}
	}
	H_EQ(cnt[PTL_EVENT_SEND_START], 1);
	H_EQ(cnt[PTL_EVENT_SEND_END], 1);
	H_EQ(cnt[PTL_EVENT_ACK], 1);
	h_sync(c);
	h_expect_none(eq, 30);
	h_sync(c);
	H_OK(PtlMDUnlink(md));
	H_OK(PtlEQFree(eq));
}

/* §7: no ack when the target MD has ACK_DISABLE. */
H_PAIR_TEST(ack_disabled_at_target)
static void ack_disabled_at_target_tgt(struct h_ctx *c)
{
	ack_tgt_n(c, PTL_MD_ACK_DISABLE, 64, 1);
}
static void ack_disabled_at_target_ini(struct h_ctx *c)
{
	char buf[32] = {0};
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t md = h_bind(c, h_md(buf, 32, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN);
	h_sync(c);
	H_OK(PtlPut(md, PTL_ACK_REQ, h_peer(c), H_PT, 0, 1, 0, 0));
	h_expect(eq, PTL_EVENT_SEND_START, NULL);
	h_expect(eq, PTL_EVENT_SEND_END, NULL);
	h_sync(c); /* the target has seen PUT_END */
	h_expect_none(eq, 200);
	h_sync(c);
	H_OK(PtlMDUnlink(md));
	H_OK(PtlEQFree(eq));
}

/* §7: the ACK event carries the target's mlength (truncated). */
H_PAIR_TEST(ack_carries_target_mlength)
static void ack_carries_target_mlength_tgt(struct h_ctx *c)
{
	ack_tgt_n(c, PTL_MD_TRUNCATE, 10, 1);
}
static void ack_carries_target_mlength_ini(struct h_ctx *c)
{
	char buf[48] = {0};
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t md = h_bind(c, h_md(buf, 48, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN);
	ptl_event_t ev;
	int cnt[PTL_EVENT_KIND_MAX] = {0};
	h_sync(c);
	H_OK(PtlPut(md, PTL_ACK_REQ, h_peer(c), H_PT, 0, 1, 0, 0));
	for (int i = 0; i < 3; i++) {
		(void)h_next(eq, &ev);
		H_TRUE(ev.type < PTL_EVENT_KIND_MAX);
		cnt[ev.type]++;
		if (ev.type == PTL_EVENT_ACK) {
			H_EQ(ev.mlength, 10);
		}
		if (ev.type == PTL_EVENT_SEND_END)
			H_EQ(ev.mlength, 48);
	}
	H_EQ(cnt[PTL_EVENT_ACK], 1);
	h_sync(c);
	h_sync(c);
	H_OK(PtlMDUnlink(md));
	H_OK(PtlEQFree(eq));
}

/* §7: no ack for PTL_NO_ACK_REQ (and its 3.2 spelling PTL_NOACK_REQ). */
H_PAIR_TEST(no_ack_for_noack)
static void no_ack_for_noack_tgt(struct h_ctx *c)
{
	ack_tgt_n(c, 0, 64, 2);
}
static void no_ack_for_noack_ini(struct h_ctx *c)
{
	char buf[32] = {0};
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t md = h_bind(c, h_md(buf, 32, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN);
	int cnt[PTL_EVENT_KIND_MAX];
	h_sync(c);
	H_OK(PtlPut(md, PTL_NO_ACK_REQ, h_peer(c), H_PT, 0, 1, 0, 0));
	H_OK(PtlPut(md, PTL_NOACK_REQ, h_peer(c), H_PT, 0, 1, 0, 0));
	h_collect(eq, 4, cnt);
	H_EQ(cnt[PTL_EVENT_SEND_START], 2);
	H_EQ(cnt[PTL_EVENT_SEND_END], 2);
	h_sync(c);
	h_expect_none(eq, 200);
	h_sync(c);
	H_OK(PtlMDUnlink(md));
	H_OK(PtlEQFree(eq));
}

/* §7: no ack for a failed (dropped) put, even when requested. */
H_PAIR_TEST(no_ack_for_failed_put)
static void no_ack_for_failed_put_tgt(struct h_ctx *c)
{
	ptl_sr_value_t d0 = h_sr(c, PTL_SR_DROP_COUNT);
	h_sync(c);
	h_wait_sr(c, PTL_SR_DROP_COUNT, d0 + 1);
	h_sync(c);
	h_sync(c);
}
static void no_ack_for_failed_put_ini(struct h_ctx *c)
{
	char buf[32] = {0};
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t md = h_bind(c, h_md(buf, 32, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN);
	h_sync(c);
	H_OK(PtlPut(md, PTL_ACK_REQ, h_peer(c), H_PT, 0, 0xBAD, 0, 0)); /* nothing matches */
	h_expect(eq, PTL_EVENT_SEND_START, NULL);
	h_expect(eq, PTL_EVENT_SEND_END, NULL);
	h_sync(c);
	h_expect_none(eq, 200);
	h_sync(c);
	H_OK(PtlMDUnlink(md));
	H_OK(PtlEQFree(eq));
}

/* DECISION: the ack is sent when the initiator MD has no EQ, and counts
 * against its threshold: a threshold-2 PTL_UNLINK MD without EQ goes away
 * once the ack has arrived. */
H_PAIR_TEST(ack_without_eq_counts)
static void ack_without_eq_counts_tgt(struct h_ctx *c)
{
	ack_tgt_n(c, 0, 64, 1);
}
static void ack_without_eq_counts_ini(struct h_ctx *c)
{
	char buf[32] = {0};
	ptl_handle_md_t md = h_bind(c, h_md(buf, 32, 2, 0, PTL_EQ_NONE), PTL_UNLINK);
	ptl_md_t old;
	uint64_t deadline;
	int rc;

	h_sync(c);
	H_OK(PtlPut(md, PTL_ACK_REQ, h_peer(c), H_PT, 0, 1, 0, 0));
	deadline = h_now_ms() + H_EV_TIMEOUT_MS;
	while ((rc = PtlMDUpdate(md, &old, NULL, PTL_EQ_NONE)) == PTL_OK && h_now_ms() < deadline)
		(void)PtlProgress(c->ni, 1);
	H_RC(rc, PTL_MD_INVALID);
	h_sync(c);
	h_sync(c);
}

static Suite *suite(void)
{
	Suite *s = suite_create("ack");
	TCase *tc = tcase_create("ack");
	tcase_set_timeout(tc, 60);
	H_ADD(tc, ack_when_requested);
	H_ADD(tc, ack_disabled_at_target);
	H_ADD(tc, ack_carries_target_mlength);
	H_ADD(tc, no_ack_for_noack);
	H_ADD(tc, no_ack_for_failed_put);
	H_ADD(tc, ack_without_eq_counts);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return h_main(suite());
}
