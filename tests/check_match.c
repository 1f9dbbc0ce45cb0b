/* SPDX-License-Identifier: BSD-3-Clause */
/* check_match.c - the matching rule (§4.2) and MD acceptance while walking
 * the match list (§4.1, §4.3): one test per §7 "Matching" line, each over lo
 * and shmem (app, thread). */
#include "harness.h"

#include <string.h>

static char tbuf[4][256];

/* Wait until DROP_COUNT has grown by exactly `n` from `base` (and stays). */
static void wait_drops(struct h_ctx *c, ptl_sr_value_t base, ptl_sr_value_t n)
{
	h_wait_sr(c, PTL_SR_DROP_COUNT, base + n);
	h_idle(c, 20);
	H_EQ(h_sr(c, PTL_SR_DROP_COUNT), base + n);
}

/* Target side used by most tests: the put with seed s landed in buf. */
static void expect_put(ptl_handle_eq_t eq, ptl_handle_md_t md, ptl_match_bits_t bits,
                       ptl_size_t len)
{
	ptl_event_t ev;
	h_expect(eq, PTL_EVENT_PUT_START, &ev);
	H_EQ(ev.md_handle, md);
	h_expect(eq, PTL_EVENT_PUT_END, &ev);
	H_EQ(ev.md_handle, md);
	H_EQ(ev.match_bits, bits);
	H_EQ(ev.mlength, len);
}

/* §7: exact bits (all 64 significant). */
H_PAIR_TEST(exact_bits)
static void exact_bits_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 16);
	ptl_handle_md_t md;
	ptl_handle_me_t me =
	    h_me_md(c, H_PT, h_any_id, 0xDEADBEEF12345678ull, 0, PTL_RETAIN,
	            h_md(tbuf[0], 64, PTL_MD_THRESH_INF, PTL_MD_OP_PUT, eq), PTL_RETAIN, &md);
	ptl_sr_value_t d0 = h_sr(c, PTL_SR_DROP_COUNT);
	h_sync(c);
	expect_put(eq, md, 0xDEADBEEF12345678ull, 64);
	H_PAT(tbuf[0], 64, 11, 0);
	h_sync(c);
	H_EQ(h_sr(c, PTL_SR_DROP_COUNT), d0);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void exact_bits_ini(struct h_ctx *c)
{
	char buf[64];
	h_fill(buf, 64, 11, 0);
	h_sync(c);
	h_put(c, h_peer(c), H_PT, 0xDEADBEEF12345678ull, 0, buf, 64, PTL_NO_ACK_REQ, 0);
	h_sync(c);
}

/* §7: ignore bits: bits under the ignore mask do not matter. */
H_PAIR_TEST(ignore_bits)
static void ignore_bits_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 16);
	ptl_handle_md_t md;
	ptl_handle_me_t me =
	    h_me_md(c, H_PT, h_any_id, 0xAB00, 0xF0000000000000FFull, PTL_RETAIN,
	            h_md(tbuf[0], 8, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, eq),
	            PTL_RETAIN, &md);
	ptl_sr_value_t d0 = h_sr(c, PTL_SR_DROP_COUNT);
	h_sync(c);
	expect_put(eq, md, 0xAB37, 8);
	expect_put(eq, md, 0x700000000000ABFFull, 8);
	wait_drops(c, d0, 1); /* 0xAC37 differs in a significant bit */
	h_expect_none(eq, 50);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void ignore_bits_ini(struct h_ctx *c)
{
	char buf[8] = {0};
	h_sync(c);
	h_put(c, h_peer(c), H_PT, 0xAB37, 0, buf, 8, PTL_NO_ACK_REQ, 0);
	h_put(c, h_peer(c), H_PT, 0x700000000000ABFFull, 0, buf, 8, PTL_NO_ACK_REQ, 0);
	h_put(c, h_peer(c), H_PT, 0xAC37, 0, buf, 8, PTL_NO_ACK_REQ, 0);
	h_sync(c);
}

/* §7: one significant bit off (lowest, middle, highest) -> no match, dropped. */
H_PAIR_TEST(one_bit_off)
static void one_bit_off_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 16);
	ptl_handle_md_t md;
	ptl_handle_me_t me =
	    h_me_md(c, H_PT, h_any_id, 0x8000000180000001ull, 0, PTL_RETAIN,
	            h_md(tbuf[0], 8, PTL_MD_THRESH_INF, PTL_MD_OP_PUT, eq), PTL_RETAIN, &md);
	ptl_sr_value_t d0 = h_sr(c, PTL_SR_DROP_COUNT);
	h_sync(c);
	wait_drops(c, d0, 4);
	h_expect_none(eq, 50);
	h_sync(c);
	expect_put(eq, md, 0x8000000180000001ull, 8);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void one_bit_off_ini(struct h_ctx *c)
{
	char buf[8] = {0};
	const ptl_match_bits_t want = 0x8000000180000001ull;
	h_sync(c);
	h_put(c, h_peer(c), H_PT, want ^ 1ull, 0, buf, 8, PTL_NO_ACK_REQ, 0);
	h_put(c, h_peer(c), H_PT, want ^ (1ull << 31), 0, buf, 8, PTL_NO_ACK_REQ, 0);
	h_put(c, h_peer(c), H_PT, want ^ (1ull << 32), 0, buf, 8, PTL_NO_ACK_REQ, 0);
	h_put(c, h_peer(c), H_PT, want ^ (1ull << 63), 0, buf, 8, PTL_NO_ACK_REQ, 0);
	h_sync(c);
	h_put(c, h_peer(c), H_PT, want, 0, buf, 8, PTL_NO_ACK_REQ, 0);
	h_sync(c);
}

/* §7: source filters with ANY: wrong pid, wrong nid skipped; exact and ANY match. */
H_PAIR_TEST(source_filter)
static void source_filter_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_process_id_t src = h_peer(c);
	ptl_process_id_t wrong_pid = {PTL_NID_ANY, src.pid + 1};
	ptl_process_id_t wrong_nid = {src.nid + 1, PTL_PID_ANY};
	ptl_process_id_t wrong_both = {src.nid, src.pid + 7};
	ptl_process_id_t exact = src;
	ptl_process_id_t nid_any = {PTL_NID_ANY, src.pid};
	ptl_handle_md_t md[6];
	ptl_handle_me_t me[6];

	me[0] = h_me_md(c, H_PT, wrong_pid, 1, 0, PTL_RETAIN,
	                h_md(tbuf[0], 8, PTL_MD_THRESH_INF, PTL_MD_OP_PUT, eq), PTL_RETAIN, &md[0]);
	me[1] = h_me_md(c, H_PT, wrong_nid, 1, 0, PTL_RETAIN,
	                h_md(tbuf[0], 8, PTL_MD_THRESH_INF, PTL_MD_OP_PUT, eq), PTL_RETAIN, &md[1]);
	me[2] = h_me_md(c, H_PT, wrong_both, 1, 0, PTL_RETAIN,
	                h_md(tbuf[0], 8, PTL_MD_THRESH_INF, PTL_MD_OP_PUT, eq), PTL_RETAIN, &md[2]);
	me[3] = h_me_md(c, H_PT, nid_any, 1, 0, PTL_RETAIN, h_md(tbuf[1], 8, 1, PTL_MD_OP_PUT, eq),
	                PTL_RETAIN, &md[3]);
	me[4] = h_me_md(c, H_PT, exact, 1, 0, PTL_RETAIN, h_md(tbuf[2], 8, 1, PTL_MD_OP_PUT, eq),
	                PTL_RETAIN, &md[4]);
	me[5] = h_me_md(c, H_PT, h_any_id, 1, 0, PTL_RETAIN, h_md(tbuf[3], 8, 1, PTL_MD_OP_PUT, eq),
	                PTL_RETAIN, &md[5]);
	h_sync(c);
	expect_put(eq, md[3], 1, 8); /* nid ANY + right pid */
	expect_put(eq, md[4], 1, 8); /* exact */
	expect_put(eq, md[5], 1, 8); /* ANY/ANY */
	h_sync(c);
	for (int i = 0; i < 6; i++)
		H_OK(PtlMEUnlink(me[i]));
	H_OK(PtlEQFree(eq));
}
static void source_filter_ini(struct h_ctx *c)
{
	char buf[8] = {0};
	h_sync(c);
	for (int i = 0; i < 3; i++)
		h_put(c, h_peer(c), H_PT, 1, 0, buf, 8, PTL_NO_ACK_REQ, 0);
	h_sync(c);
}

/* §7: an ME without an MD is skipped. */
H_PAIR_TEST(me_without_md_skipped)
static void me_without_md_skipped_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 16);
	ptl_handle_me_t bare, me;
	ptl_handle_md_t md;
	ptl_sr_value_t d0 = h_sr(c, PTL_SR_DROP_COUNT);

	H_OK(PtlMEAttach(c->ni, H_PT, h_any_id, 2, 0, PTL_RETAIN, PTL_INS_AFTER, &bare));
	me = h_me_md(c, H_PT, h_any_id, 2, 0, PTL_RETAIN, h_md(tbuf[0], 16, 1, PTL_MD_OP_PUT, eq),
	             PTL_RETAIN, &md);
	h_sync(c);
	expect_put(eq, md, 2, 16);
	h_sync(c);
	H_EQ(h_sr(c, PTL_SR_DROP_COUNT), d0);
	H_OK(PtlMEUnlink(bare));
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void me_without_md_skipped_ini(struct h_ctx *c)
{
	char buf[16] = {0};
	h_sync(c);
	h_put(c, h_peer(c), H_PT, 2, 0, buf, 16, PTL_NO_ACK_REQ, 0);
	h_sync(c);
}

/* §7: an inactive MD (threshold 0) is skipped. */
H_PAIR_TEST(inactive_md_skipped)
static void inactive_md_skipped_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 16);
	ptl_handle_md_t md0, md1;
	ptl_handle_me_t me0 = h_me_md(c, H_PT, h_any_id, 3, 0, PTL_RETAIN,
	                              h_md(tbuf[0], 16, 0, PTL_MD_OP_PUT, eq), PTL_RETAIN, &md0);
	ptl_handle_me_t me1 = h_me_md(c, H_PT, h_any_id, 3, 0, PTL_RETAIN,
	                              h_md(tbuf[1], 16, 1, PTL_MD_OP_PUT, eq), PTL_RETAIN, &md1);
	memset(tbuf[0], 0, 16);
	h_sync(c);
	expect_put(eq, md1, 3, 16);
	H_PAT(tbuf[1], 16, 3, 0);
	for (int i = 0; i < 16; i++)
		H_EQ(tbuf[0][i], 0);
	h_sync(c);
	H_OK(PtlMEUnlink(me0));
	H_OK(PtlMEUnlink(me1));
	H_OK(PtlEQFree(eq));
}
static void inactive_md_skipped_ini(struct h_ctx *c)
{
	char buf[16];
	h_fill(buf, 16, 3, 0);
	h_sync(c);
	h_put(c, h_peer(c), H_PT, 3, 0, buf, 16, PTL_NO_ACK_REQ, 0);
	h_sync(c);
}

/* §7: an MD lacking the OP bit is skipped and the search continues
 * (a get passes a put-only MD, a put passes a get-only MD). */
H_PAIR_TEST(op_bit_skipped)
static void op_bit_skipped_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 16);
	ptl_handle_md_t mdp, mdg;
	ptl_handle_me_t mep = h_me_md(c, H_PT, h_any_id, 4, 0, PTL_RETAIN,
	                              h_md(tbuf[0], 32, 1, PTL_MD_OP_PUT, eq), PTL_RETAIN, &mdp);
	ptl_handle_me_t meg = h_me_md(c, H_PT, h_any_id, 4, 0, PTL_RETAIN,
	                              h_md(tbuf[1], 32, 1, PTL_MD_OP_GET, eq), PTL_RETAIN, &mdg);
	ptl_event_t ev;

	h_fill(tbuf[0], 32, 40, 0);
	h_fill(tbuf[1], 32, 41, 0);
	h_sync(c);
	/* the get skips the put-only MD */
	h_expect(eq, PTL_EVENT_GET_START, &ev);
	H_EQ(ev.md_handle, mdg);
	h_expect(eq, PTL_EVENT_GET_END, &ev);
	H_EQ(ev.md_handle, mdg);
	H_EQ(ev.mlength, 32);
	h_sync(c);
	H_OK(PtlMEUnlink(mep));
	H_OK(PtlMEUnlink(meg));
	/* a put skips a get-only MD at the head */
	meg = h_me_md(c, H_PT, h_any_id, 4, 0, PTL_RETAIN, h_md(tbuf[1], 32, 1, PTL_MD_OP_GET, eq),
	              PTL_RETAIN, &mdg);
	mep = h_me_md(c, H_PT, h_any_id, 4, 0, PTL_RETAIN, h_md(tbuf[0], 32, 1, PTL_MD_OP_PUT, eq),
	              PTL_RETAIN, &mdp);
	h_sync(c);
	expect_put(eq, mdp, 4, 32);
	H_PAT(tbuf[0], 32, 42, 0);
	H_PAT(tbuf[1], 32, 41, 0);
	h_sync(c);
	H_OK(PtlMEUnlink(mep));
	H_OK(PtlMEUnlink(meg));
	H_OK(PtlEQFree(eq));
}
static void op_bit_skipped_ini(struct h_ctx *c)
{
	char buf[32];
	h_sync(c);
	H_EQ(h_getdata(c, h_peer(c), H_PT, 4, 0, buf, 32), 32);
	H_PAT(buf, 32, 41, 0);
	h_sync(c);
	h_sync(c);
	h_fill(buf, 32, 42, 0);
	h_put(c, h_peer(c), H_PT, 4, 0, buf, 32, PTL_NO_ACK_REQ, 0);
	h_sync(c);
}

/* §7: oversized request without TRUNCATE: skipped by that MD (the next one
 * takes it); when no MD fits, dropped and counted. */
H_PAIR_TEST(oversize_skipped_then_dropped)
static void oversize_skipped_then_dropped_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 16);
	ptl_handle_md_t small, big;
	ptl_handle_me_t me0 =
	    h_me_md(c, H_PT, h_any_id, 5, 0, PTL_RETAIN,
	            h_md(tbuf[0], 8, PTL_MD_THRESH_INF, PTL_MD_OP_PUT, eq), PTL_RETAIN, &small);
	ptl_handle_me_t me1 =
	    h_me_md(c, H_PT, h_any_id, 5, 0, PTL_RETAIN,
	            h_md(tbuf[1], 64, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, eq),
	            PTL_RETAIN, &big);
	ptl_sr_value_t d0 = h_sr(c, PTL_SR_DROP_COUNT);
	h_sync(c);
	expect_put(eq, big, 5, 32);
	wait_drops(c, d0, 1);
	h_expect_none(eq, 50);
	h_sync(c);
	H_OK(PtlMEUnlink(me0));
	H_OK(PtlMEUnlink(me1));
	H_OK(PtlEQFree(eq));
}
static void oversize_skipped_then_dropped_ini(struct h_ctx *c)
{
	char buf[128] = {0};
	h_sync(c);
	h_put(c, h_peer(c), H_PT, 5, 0, buf, 32, PTL_NO_ACK_REQ, 0);
	h_put(c, h_peer(c), H_PT, 5, 0, buf, 128, PTL_NO_ACK_REQ, 0);
	h_sync(c);
}

/* §7: TRUNCATE gives mlength = min(rlength, space). */
H_PAIR_TEST(truncate_mlength)
static void truncate_mlength_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 16);
	ptl_handle_md_t md;
	ptl_event_t ev;
	ptl_handle_me_t me =
	    h_me_md(c, H_PT, h_any_id, 6, 0, PTL_RETAIN,
	            h_md(tbuf[0], 16, PTL_MD_THRESH_INF,
	                 PTL_MD_OP_PUT | PTL_MD_TRUNCATE | PTL_MD_MANAGE_REMOTE, eq),
	            PTL_RETAIN, &md);
	memset(tbuf[0], 0, 32);
	h_sync(c);
	/* 40 bytes at offset 0 into 16: mlength 16 */
	h_expect(eq, PTL_EVENT_PUT_START, &ev);
	h_expect(eq, PTL_EVENT_PUT_END, &ev);
	H_EQ(ev.rlength, 40);
	H_EQ(ev.mlength, 16);
	H_EQ(ev.offset, 0);
	/* 5 bytes at offset 10: fits, mlength 5 */
	h_expect(eq, PTL_EVENT_PUT_START, &ev);
	h_expect(eq, PTL_EVENT_PUT_END, &ev);
	H_EQ(ev.rlength, 5);
	H_EQ(ev.mlength, 5);
	H_EQ(ev.offset, 10);
	/* 40 bytes at offset 12: mlength 4 */
	h_expect(eq, PTL_EVENT_PUT_START, &ev);
	h_expect(eq, PTL_EVENT_PUT_END, &ev);
	H_EQ(ev.rlength, 40);
	H_EQ(ev.mlength, 4);
	H_EQ(ev.offset, 12);
	/* final contents: put 1 (0..9), put 2 (10..11 of its 5), put 3 (12..15) */
	H_PAT(tbuf[0], 10, 6, 0);
	H_PAT(tbuf[0] + 10, 2, 6, 0);
	H_PAT(tbuf[0] + 12, 4, 7, 0);
	H_EQ(tbuf[0][16], 0); /* nothing past the MD */
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void truncate_mlength_ini(struct h_ctx *c)
{
	char buf[40];
	h_sync(c);
	h_fill(buf, 40, 6, 0);
	H_EQ(h_put(c, h_peer(c), H_PT, 6, 0, buf, 40, PTL_ACK_REQ, 0), 16);
	H_EQ(h_put(c, h_peer(c), H_PT, 6, 10, buf, 5, PTL_ACK_REQ, 0), 5);
	h_fill(buf, 40, 7, 0);
	H_EQ(h_put(c, h_peer(c), H_PT, 6, 12, buf, 40, PTL_ACK_REQ, 0), 4);
	h_sync(c);
}

static Suite *suite(void)
{
	Suite *s = suite_create("match");
	TCase *tc = tcase_create("match");
	tcase_set_timeout(tc, 60);
	H_ADD(tc, exact_bits);
	H_ADD(tc, ignore_bits);
	H_ADD(tc, one_bit_off);
	H_ADD(tc, source_filter);
	H_ADD(tc, me_without_md_skipped);
	H_ADD(tc, inactive_md_skipped);
	H_ADD(tc, op_bit_skipped);
	H_ADD(tc, oversize_skipped_then_dropped);
	H_ADD(tc, truncate_mlength);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return h_main(suite());
}
