/* SPDX-License-Identifier: BSD-3-Clause */
/* check_silent.c - puts nobody waits for (portals/README.md, "A put nobody
 * waits for"): no ACK, an MD that posts no event on success.  Over shmem
 * the initiator hands them to the NAL's send_now and the target copies
 * small ones in p3_lib_parse_eager; these tests hold those paths to what
 * the general path does: data, events, counters, unlinks, truncation,
 * drops, and the order of a burst that fills the ring (send_now gives way
 * to the queued general path) mixed with acked puts.  Over every transport:
 * elsewhere they check the same semantics through the general path. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#define SMAX 20000
static unsigned char tb[SMAX + 64];

static const ptl_size_t sizes[] = {0, 1, 8, 4095, 4096, 4097, SMAX};

/* Unlink an MD whose puts post no event: each holds it until the transport
 * is done with its bytes (over udp: the peer's acknowledgement), which
 * nothing signals, so PTL_MD_IN_USE is retried while progressing. */
static void unlink_when_idle(struct h_ctx *c, ptl_handle_md_t md)
{
	uint64_t end = h_now_ms() + H_EV_TIMEOUT_MS;
	int rc;
	while ((rc = PtlMDUnlink(md)) == PTL_MD_IN_USE && h_now_ms() < end)
		h_idle(c, 1);
	H_OK(rc);
}
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* Every size from a silent MD (no EQ) and from a SUCCESS_DISABLE one: the
 * bytes at the right offset, PUT_START/PUT_END with every field, the
 * registers counted once on both sides. */
H_PAIR_TEST(silent_sizes)
static void silent_sizes_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 64);
	ptl_handle_md_t md;
	ptl_handle_me_t me = h_me_md(
	    c, H_PT, h_any_id, 5, 0, PTL_RETAIN,
	    h_md(tb, sizeof(tb), PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, eq),
	    PTL_RETAIN, &md);
	ptl_sr_value_t n0 = h_sr(c, PTL_SR_RECV_COUNT), l0 = h_sr(c, PTL_SR_RECV_LENGTH);
	ptl_size_t total = 0;
	ptl_event_t ev;
	h_sync(c);
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < NSIZES; i++) {
			memset(tb, 0, sizeof(tb));
			h_sync(c);
			h_expect(eq, PTL_EVENT_PUT_START, &ev);
			H_EQ(ev.rlength, sizes[i]);
			h_expect(eq, PTL_EVENT_PUT_END, &ev);
			H_EQ(ev.ni_fail_type, PTL_NI_OK);
			H_EQ(ev.rlength, sizes[i]);
			H_EQ(ev.mlength, sizes[i]);
			H_EQ(ev.offset, 3);
			H_EQ(ev.hdr_data, 0xABC0 + i);
			H_EQ(ev.match_bits, 5);
			H_EQ(ev.initiator.nid, h_peer(c).nid);
			H_EQ(ev.initiator.pid, h_peer(c).pid);
			H_EQ(ev.md_handle, md);
			H_PAT(tb + 3, sizes[i], (uint32_t)(i + 40 * k), 0);
			H_EQ(tb[2], 0);
			H_EQ(tb[3 + sizes[i]], 0);
			total += sizes[i];
			h_sync(c);
		}
	}
	h_expect_none(eq, 20);
	H_EQ(h_sr(c, PTL_SR_RECV_COUNT) - n0, 2 * NSIZES);
	H_EQ(h_sr(c, PTL_SR_RECV_LENGTH) - l0, total);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void silent_sizes_ini(struct h_ctx *c)
{
	unsigned char *buf = malloc(SMAX + 16);
	H_TRUE(buf != NULL);
	ptl_handle_eq_t eq = h_eq(c, 64);
	ptl_handle_md_t md[2] = {
	    h_bind(c, h_md(buf, SMAX + 16, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE), PTL_RETAIN),
	    h_bind(c,
	           h_md(buf, SMAX + 16, PTL_MD_THRESH_INF, PTL_MD_EVENT_SUCCESS_DISABLE, eq),
	           PTL_RETAIN),
	};
	ptl_sr_value_t n0 = h_sr(c, PTL_SR_SEND_COUNT), l0 = h_sr(c, PTL_SR_SEND_LENGTH);
	ptl_size_t total = 0;
	h_sync(c);
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < NSIZES; i++) {
			h_fill(buf + 16, sizes[i], (uint32_t)(i + 40 * k), 0);
			h_sync(c);
			H_OK(PtlPutRegion(md[k], 16, sizes[i], PTL_NO_ACK_REQ, h_peer(c), H_PT, 0, 5, 3,
			                  0xABC0 + i));
			total += sizes[i];
			h_sync(c);
		}
	}
	h_expect_none(eq, 20);
	H_EQ(h_sr(c, PTL_SR_SEND_COUNT) - n0, 2 * NSIZES);
	H_EQ(h_sr(c, PTL_SR_SEND_LENGTH) - l0, total);
	h_sync(c);
	unlink_when_idle(c, md[0]);
	unlink_when_idle(c, md[1]);
	H_OK(PtlEQFree(eq));
	free(buf);
}

/* The target's side of a small put: an MD of threshold 1 unlinks (UNLINK
 * after PUT_END, ME and MD gone), a MAX_SIZE MD goes inactive and unlinks,
 * a TRUNCATE MD takes what fits, a put that matches nothing is dropped and
 * counted (PTL_SR_DROP_COUNT/LENGTH). */
H_PAIR_TEST(silent_target_rules)
static void silent_target_rules_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 64);
	ptl_handle_md_t m1, m2, m3;
	ptl_event_t ev;
	memset(tb, 0, sizeof(tb));
	ptl_handle_me_t me1 = h_me_md(c, H_PT, h_any_id, 1, 0, PTL_UNLINK,
	                              h_md(tb, 64, 1, PTL_MD_OP_PUT, eq), PTL_UNLINK, &m1);
	ptl_md_t ms = h_md(tb + 64, 100, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MAX_SIZE, eq);
	ms.max_size = 40;
	ptl_handle_me_t me2 = h_me_md(c, H_PT, h_any_id, 2, 0, PTL_UNLINK, ms, PTL_UNLINK, &m2);
	ptl_handle_me_t me3 = h_me_md(
	    c, H_PT, h_any_id, 3, 0, PTL_RETAIN,
	    h_md(tb + 256, 10, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_TRUNCATE, eq), PTL_RETAIN,
	    &m3);
	ptl_sr_value_t d0 = h_sr(c, PTL_SR_DROP_COUNT), dl0 = h_sr(c, PTL_SR_DROP_LENGTH);
	h_sync(c);
	/* threshold 1 */
	h_expect(eq, PTL_EVENT_PUT_START, &ev);
	h_expect(eq, PTL_EVENT_PUT_END, &ev);
	H_EQ(ev.md_handle, m1);
	H_EQ(ev.mlength, 20);
	h_expect(eq, PTL_EVENT_UNLINK, &ev);
	H_EQ(ev.md_handle, m1);
	H_PAT(tb, 20, 61, 0);
	/* MAX_SIZE 40 of 100: the second put of 30 leaves 40, the third 10 */
	for (int i = 0; i < 3; i++) {
		h_expect(eq, PTL_EVENT_PUT_START, &ev);
		h_expect(eq, PTL_EVENT_PUT_END, &ev);
		H_EQ(ev.md_handle, m2);
		H_EQ(ev.offset, 30 * i);
	}
	h_expect(eq, PTL_EVENT_UNLINK, &ev);
	H_EQ(ev.md_handle, m2);
	H_PAT(tb + 64, 90, 62, 0);
	/* truncated to 10 */
	h_expect(eq, PTL_EVENT_PUT_START, &ev);
	h_expect(eq, PTL_EVENT_PUT_END, &ev);
	H_EQ(ev.md_handle, m3);
	H_EQ(ev.rlength, 50);
	H_EQ(ev.mlength, 10);
	H_PAT(tb + 256, 10, 63, 0);
	H_EQ(tb[266], 0);
	h_sync(c);
	/* the drop (match bits 9: no ME) */
	h_wait_sr(c, PTL_SR_DROP_COUNT, d0 + 1);
	H_EQ(h_sr(c, PTL_SR_DROP_LENGTH) - dl0, 33);
	h_expect_none(eq, 20);
	/* both unlinked themselves, with their MEs (counting objects would
	 * race the peer's over lo, where the ranks share the NI) */
	H_RC(PtlMDUnlink(m1), PTL_MD_INVALID);
	H_RC(PtlMDUnlink(m2), PTL_MD_INVALID);
	H_RC(PtlMEUnlink(me1), PTL_ME_INVALID);
	H_RC(PtlMEUnlink(me2), PTL_ME_INVALID);
	h_sync(c);
	H_OK(PtlMEUnlink(me3));
	H_OK(PtlEQFree(eq));
}
static void silent_target_rules_ini(struct h_ctx *c)
{
	/* a region of its own per put: nothing says when an eventless put's
	 * source is free again (a reliable transport may still resend it) */
	unsigned char buf[256];
	ptl_handle_md_t md =
	    h_bind(c, h_md(buf, sizeof(buf), PTL_MD_THRESH_INF, 0, PTL_EQ_NONE), PTL_RETAIN);
	h_fill(buf, 20, 61, 0);
	h_fill(buf + 20, 90, 62, 0);
	h_fill(buf + 110, 50, 63, 0);
	h_sync(c);
	H_OK(PtlPutRegion(md, 0, 20, PTL_NO_ACK_REQ, h_peer(c), H_PT, 0, 1, 0, 0));
	for (int i = 0; i < 3; i++)
		H_OK(PtlPutRegion(md, 20 + 30 * (ptl_size_t)i, 30, PTL_NO_ACK_REQ, h_peer(c), H_PT,
		                  0, 2, 0, 0));
	H_OK(PtlPutRegion(md, 110, 50, PTL_NO_ACK_REQ, h_peer(c), H_PT, 0, 3, 0, 0));
	h_sync(c);
	H_OK(PtlPutRegion(md, 160, 33, PTL_NO_ACK_REQ, h_peer(c), H_PT, 0, 9, 0, 0));
	h_sync(c);
	unlink_when_idle(c, md);
}

/* A burst wider than the shmem ring (256 KiB): silent puts that find no
 * room go the general way and queue; the ones after them must queue behind
 * them, acked puts in between keep their place.  Every PUT_END in order
 * (hdr_data = sequence), the acks all come, the last bytes are the last
 * put's. */
#define BURST 1200
#define BLEN  1000
H_PAIR_TEST(silent_burst_order)
static void silent_burst_order_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 4 * BURST);
	ptl_handle_md_t md;
	ptl_handle_me_t me = h_me_md(
	    c, H_PT, h_any_id, 7, 0, PTL_RETAIN,
	    h_md(tb, BLEN, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, eq),
	    PTL_RETAIN, &md);
	ptl_event_t ev;
	h_sync(c);
	for (int i = 0; i < BURST; i++) {
		h_expect(eq, PTL_EVENT_PUT_START, &ev);
		h_expect(eq, PTL_EVENT_PUT_END, &ev);
		H_EQ(ev.hdr_data, (ptl_hdr_data_t)i);
		H_EQ(ev.mlength, BLEN);
	}
	H_PAT(tb, BLEN, BURST - 1, 0);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void silent_burst_order_ini(struct h_ctx *c)
{
	/* each put its own bytes: a queued send still reads its source */
	unsigned char *buf = malloc((size_t)BURST * BLEN);
	H_TRUE(buf != NULL);
	ptl_handle_eq_t eq = h_eq(c, 4 * BURST);
	ptl_handle_md_t quiet = h_bind(
	    c, h_md(buf, (size_t)BURST * BLEN, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE), PTL_RETAIN);
	ptl_handle_md_t acked = h_bind(
	    c, h_md(buf, (size_t)BURST * BLEN, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, eq),
	    PTL_RETAIN);
	int nack = 0;
	for (int i = 0; i < BURST; i++)
		h_fill(buf + (size_t)i * BLEN, BLEN, (uint32_t)i, 0);
	h_sync(c);
	for (int i = 0; i < BURST; i++) {
		int ack = i % 7 == 3;
		nack += ack;
		H_OK(PtlPutRegion(ack ? acked : quiet, (ptl_size_t)i * BLEN, BLEN,
		                  ack ? PTL_ACK_REQ : PTL_NO_ACK_REQ, h_peer(c), H_PT, 0, 7, 0,
		                  (ptl_hdr_data_t)i));
	}
	int counts[PTL_EVENT_KIND_MAX] = {0};
	h_collect(eq, 2 * nack, counts);
	H_EQ(counts[PTL_EVENT_SEND_END], nack);
	H_EQ(counts[PTL_EVENT_ACK], nack);
	h_sync(c);
	unlink_when_idle(c, quiet);
	unlink_when_idle(c, acked);
	H_OK(PtlEQFree(eq));
	free(buf);
}

/* Not silent: a finite threshold counts every put (the third from an MD
 * of threshold 2 is refused), a START-only-disabled MD posts SEND_END. */
H_PAIR_TEST(silent_not_when_counted)
static void silent_not_when_counted_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 16);
	ptl_handle_md_t md;
	ptl_handle_me_t me = h_me_md(
	    c, H_PT, h_any_id, 8, 0, PTL_RETAIN,
	    h_md(tb, 64, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_EVENT_START_DISABLE, eq),
	    PTL_RETAIN, &md);
	h_sync(c);
	for (int i = 0; i < 3; i++)
		h_expect(eq, PTL_EVENT_PUT_END, NULL);
	h_expect_none(eq, 20);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void silent_not_when_counted_ini(struct h_ctx *c)
{
	unsigned char buf[8] = {0};
	ptl_handle_eq_t eq = h_eq(c, 16);
	ptl_handle_md_t two = h_bind(c, h_md(buf, 8, 2, 0, PTL_EQ_NONE), PTL_RETAIN);
	ptl_handle_md_t ends =
	    h_bind(c, h_md(buf, 8, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, eq), PTL_RETAIN);
	ptl_event_t ev;
	h_sync(c);
	H_OK(PtlPut(two, PTL_NO_ACK_REQ, h_peer(c), H_PT, 0, 8, 0, 0));
	H_OK(PtlPut(two, PTL_NO_ACK_REQ, h_peer(c), H_PT, 0, 8, 0, 0));
	H_RC(PtlPut(two, PTL_NO_ACK_REQ, h_peer(c), H_PT, 0, 8, 0, 0), PTL_MD_ILLEGAL);
	H_OK(PtlPut(ends, PTL_NO_ACK_REQ, h_peer(c), H_PT, 0, 8, 0, 0));
	h_expect(eq, PTL_EVENT_SEND_END, &ev);
	H_EQ(ev.md_handle, ends);
	h_expect_none(eq, 20);
	h_sync(c);
	unlink_when_idle(c, two);
	unlink_when_idle(c, ends);
	H_OK(PtlEQFree(eq));
}

static Suite *suite(void)
{
	Suite *s = suite_create("silent");
	TCase *tc = tcase_create("silent");
	tcase_set_timeout(tc, 120);
	H_ADD(tc, silent_sizes);
	H_ADD(tc, silent_target_rules);
	H_ADD(tc, silent_burst_order);
	H_ADD(tc, silent_not_when_counted);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return h_main(suite());
}
