/* SPDX-License-Identifier: BSD-3-Clause */
/* check_data.c - data movement (§4.6, §7 Data): regions, get truncation,
 * GetPut atomicity under contention, the drop counter, and byte-exact data
 * across the eager threshold, over lo and shmem (app, thread). */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

static unsigned char tb[4096];

/* §7: PutRegion moves exactly the slice (and refuses out-of-bounds). */
H_PAIR_TEST(putregion_data)
static void putregion_data_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 16);
	ptl_handle_md_t md;
	ptl_handle_me_t me =
	    h_me_md(c, H_PT, h_any_id, 1, 0, PTL_RETAIN,
	            h_md(tb, 256, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, eq),
	            PTL_RETAIN, &md);
	ptl_event_t ev;
	memset(tb, 0, 256);
	h_sync(c);
	h_expect(eq, PTL_EVENT_PUT_START, &ev);
	h_expect(eq, PTL_EVENT_PUT_END, &ev);
	H_EQ(ev.rlength, 100);
	H_EQ(ev.mlength, 100);
	H_EQ(ev.offset, 7);
	H_PAT(tb + 7, 100, 21, 33);
	H_EQ(tb[6], 0);
	H_EQ(tb[107], 0);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void putregion_data_ini(struct h_ctx *c)
{
	unsigned char buf[200];
	ptl_handle_eq_t eq = h_eq(c, 16);
	ptl_handle_md_t md = h_bind(c, h_md(buf, 200, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN);
	ptl_event_t ev;
	h_fill(buf, 200, 21, 0);
	h_sync(c);
	H_RC(PtlPutRegion(md, 101, 100, PTL_NO_ACK_REQ, h_peer(c), H_PT, 0, 1, 7, 0),
	     PTL_MD_ILLEGAL);
	H_OK(PtlPutRegion(md, 33, 100, PTL_ACK_REQ, h_peer(c), H_PT, 0, 1, 7, 0));
	/* (the order of SEND_END and ACK is asserted in check_events) */
	for (int i = 0; i < 3; i++) {
		(void)h_next(eq, &ev);
		if (ev.type == PTL_EVENT_SEND_END || ev.type == PTL_EVENT_ACK)
			H_EQ(ev.mlength, 100);
		else
			H_EVKIND(ev, PTL_EVENT_SEND_START);
	}
	h_sync(c);
	H_OK(PtlMDUnlink(md));
	H_OK(PtlEQFree(eq));
}

/* §7: GetRegion lands the reply at local_offset (and refuses out-of-bounds). */
H_PAIR_TEST(getregion_data)
static void getregion_data_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 16);
	ptl_handle_md_t md;
	ptl_handle_me_t me =
	    h_me_md(c, H_PT, h_any_id, 2, 0, PTL_RETAIN,
	            h_md(tb, 256, PTL_MD_THRESH_INF, PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, eq),
	            PTL_RETAIN, &md);
	h_fill(tb, 256, 22, 0);
	h_sync(c);
	h_expect(eq, PTL_EVENT_GET_START, NULL);
	h_expect(eq, PTL_EVENT_GET_END, NULL);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void getregion_data_ini(struct h_ctx *c)
{
	unsigned char buf[128];
	ptl_handle_eq_t eq = h_eq(c, 16);
	ptl_handle_md_t md = h_bind(c, h_md(buf, 128, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN);
	ptl_event_t ev;
	memset(buf, 0, sizeof(buf));
	h_sync(c);
	H_RC(PtlGetRegion(md, 100, 29, h_peer(c), H_PT, 0, 2, 0), PTL_MD_ILLEGAL);
	H_OK(PtlGetRegion(md, 20, 50, h_peer(c), H_PT, 0, 2, 150));
	h_expect(eq, PTL_EVENT_REPLY_START, &ev);
	h_expect(eq, PTL_EVENT_REPLY_END, &ev);
	H_EQ(ev.mlength, 50);
	H_PAT(buf + 20, 50, 22, 150);
	H_EQ(buf[19], 0);
	H_EQ(buf[70], 0);
	h_sync(c);
	H_OK(PtlMDUnlink(md));
	H_OK(PtlEQFree(eq));
}

/* §7: get truncation: a TRUNCATE target MD shorter than the request
 * replies with what it has; REPLY_END carries that mlength. */
H_PAIR_TEST(get_truncation)
static void get_truncation_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 16);
	ptl_handle_md_t md;
	ptl_handle_me_t me = h_me_md(
	    c, H_PT, h_any_id, 3, 0, PTL_RETAIN,
	    h_md(tb, 10, PTL_MD_THRESH_INF, PTL_MD_OP_GET | PTL_MD_TRUNCATE, eq), PTL_RETAIN, &md);
	ptl_event_t ev;
	h_fill(tb, 10, 23, 0);
	h_sync(c);
	h_expect(eq, PTL_EVENT_GET_START, &ev);
	h_expect(eq, PTL_EVENT_GET_END, &ev);
	H_EQ(ev.rlength, 100);
	H_EQ(ev.mlength, 10);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void get_truncation_ini(struct h_ctx *c)
{
	unsigned char buf[100];
	memset(buf, 0, sizeof(buf));
	h_sync(c);
	H_EQ(h_getdata(c, h_peer(c), H_PT, 3, 0, buf, 100), 10);
	H_PAT(buf, 10, 23, 0);
	H_EQ(buf[10], 0);
	h_sync(c);
}

/* §7: GetPut is atomic under contention: 3 ranks swap unique tokens into
 * one 8-byte word 60 times each; the old values returned plus the final
 * value are exactly the initial value plus every token, each once. */
#define GP_K 60
H_JOB_TEST(getput_contention, 4, 90)
static void getput_contention_rank(struct h_ctx *c)
{
	uint64_t *res = (uint64_t *)c->sh->scratch; /* [rank][k] */
	if (c->rank == 0) {
		static uint64_t word;
		ptl_handle_eq_t eq = h_eq(c, 1024);
		ptl_handle_md_t md;
		ptl_handle_me_t me;
		int cnt[PTL_EVENT_KIND_MAX];
		word = 0xFFFF;
		me = h_me_md(c, H_PT, h_any_id, 0x6E7, 0, PTL_RETAIN,
		             h_md(&word, 8, PTL_MD_THRESH_INF,
		                  PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, eq),
		             PTL_RETAIN, &md);
		h_sync(c);
		h_collect(eq, 2 * 3 * GP_K, cnt);
		H_EQ(cnt[PTL_EVENT_GETPUT_START], 3 * GP_K);
		H_EQ(cnt[PTL_EVENT_GETPUT_END], 3 * GP_K);
		h_sync(c);
		/* verify: multiset of olds + final == {0xFFFF} + tokens */
		static unsigned char seen[4][GP_K];
		int seen_init = 0;
		memset(seen, 0, sizeof(seen));
		for (int r = 1; r < 4; r++)
			for (int k = 0; k < GP_K + 1; k++) {
				uint64_t v = k < GP_K ? res[r * (GP_K + 1) + k] : 0;
				if (k == GP_K) {
					if (r != 1)
						continue;
					v = word;
				}
				if (v == 0xFFFF) {
					H_EQ(seen_init, 0);
					seen_init = 1;
					continue;
				}
				uint64_t rr = v >> 16, kk = v & 0xFFFF;
				if (rr < 1 || rr > 3 || kk >= GP_K)
					h_fail(__FILE__, __LINE__, "value 0x%llx was never written",
					       (unsigned long long)v);
				if (seen[rr][kk])
					h_fail(__FILE__, __LINE__, "token 0x%llx seen twice",
					       (unsigned long long)v);
				seen[rr][kk] = 1;
			}
		H_EQ(seen_init, 1);
		for (int r = 1; r < 4; r++)
			for (int k = 0; k < GP_K; k++)
				if (!seen[r][k])
					h_fail(__FILE__, __LINE__, "token r%d k%d lost", r, k);
		H_OK(PtlMEUnlink(me));
		H_OK(PtlEQFree(eq));
	} else {
		uint64_t oldv, newv;
		ptl_handle_eq_t eq = h_eq(c, 64);
		ptl_handle_md_t g = h_bind(c, h_md(&oldv, 8, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN);
		ptl_handle_md_t p = h_bind(c, h_md(&newv, 8, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN);
		int cnt[PTL_EVENT_KIND_MAX];
		h_sync(c);
		for (int k = 0; k < GP_K; k++) {
			newv = ((uint64_t)c->rank << 16) | (uint64_t)k;
			H_OK(PtlGetPut(g, p, c->id[0], H_PT, 0, 0x6E7, 0, 0));
			h_collect(eq, 4, cnt);
			H_EQ(cnt[PTL_EVENT_REPLY_END], 1);
			H_EQ(cnt[PTL_EVENT_SEND_END], 1);
			res[c->rank * (GP_K + 1) + k] = oldv;
		}
		h_sync(c);
		H_OK(PtlMDUnlink(g));
		H_OK(PtlMDUnlink(p));
		H_OK(PtlEQFree(eq));
	}
}

/* §7: the drop counter grows by exactly one per rejected request (no match,
 * bad portal, bad ac index, get with no match, oversize). */
H_PAIR_TEST(drop_counter_exact)
static void drop_counter_exact_tgt(struct h_ctx *c)
{
	ptl_handle_eq_t eq = h_eq(c, 16);
	ptl_handle_md_t md;
	ptl_handle_me_t me =
	    h_me_md(c, H_PT, h_any_id, 4, 0, PTL_RETAIN,
	            h_md(tb, 8, PTL_MD_THRESH_INF, PTL_MD_OP_PUT, eq), PTL_RETAIN, &md);
	ptl_sr_value_t d0 = h_sr(c, PTL_SR_DROP_COUNT);
	ptl_ni_limits_t lim;
	ptl_handle_ni_t ni2;
	H_OK(PtlNIInit(h_mode_iface(c->mode), PTL_PID_ANY, NULL,
	               &lim, &ni2));
	h_pub(c, 0, (uint64_t)lim.max_pt_index);
	h_sync(c);
	h_wait_sr(c, PTL_SR_DROP_COUNT, d0 + 6);
	h_idle(c, 30);
	H_EQ(h_sr(c, PTL_SR_DROP_COUNT), d0 + 6);
	H_TRUE(h_sr(c, PTL_SR_DROP_LENGTH) >= 16);
	h_expect_none(eq, 10);
	h_sync(c);
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
}
static void drop_counter_exact_ini(struct h_ctx *c)
{
	char buf[16] = {0};
	ptl_handle_eq_t eq = h_eq(c, 64);
	ptl_handle_md_t md = h_bind(c, h_md(buf, 16, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN);
	ptl_pt_index_t maxpt;
	int cnt[PTL_EVENT_KIND_MAX];
	h_sync(c);
	maxpt = (ptl_pt_index_t)h_val(c, 0, 0);
	H_OK(PtlPut(md, PTL_NO_ACK_REQ, h_peer(c), H_PT, 0, 5, 0, 0));        /* no match */
	H_OK(PtlPut(md, PTL_NO_ACK_REQ, h_peer(c), maxpt + 1, 0, 4, 0, 0));   /* bad portal */
	H_OK(PtlPut(md, PTL_NO_ACK_REQ, h_peer(c), H_PT, 0xFFFFFF, 4, 0, 0)); /* bad ac */
	H_OK(PtlPut(md, PTL_ACK_REQ, h_peer(c), H_PT, 0, 4, 0, 0));           /* oversize */
	H_OK(PtlPut(md, PTL_NO_ACK_REQ, h_peer(c), H_PT + 1, 0, 4, 0, 0));    /* empty portal */
	H_OK(PtlGet(md, h_peer(c), H_PT, 0, 4, 0));                           /* not OP_GET */
	h_collect(eq, 10, cnt);
	H_EQ(cnt[PTL_EVENT_SEND_START], 5);
	H_EQ(cnt[PTL_EVENT_SEND_END], 5);
	h_sync(c);
	h_expect_none(eq, 20); /* no ack, no reply */
	H_OK(PtlMDUnlink(md));
	H_OK(PtlEQFree(eq));
}

/* Byte-exact put and get across the eager threshold (0, 1, 16383, 16384,
 * 16385, 1 MiB), data depending on size and offset. */
static const ptl_size_t sizes[] = {0, 1, 16383, 16384, 16385, 1u << 20};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
H_PAIR_TEST(sizes_put_get)
static void sizes_put_get_tgt(struct h_ctx *c)
{
	unsigned char *buf = malloc(1u << 20);
	ptl_handle_eq_t eq = h_eq(c, 64);
	ptl_event_t ev;
	H_TRUE(buf != NULL);
	for (size_t i = 0; i < NSIZES; i++) {
		ptl_handle_md_t md;
		ptl_handle_me_t me;
		memset(buf, 0xEE, 1u << 20);
		me = h_me_md(c, H_PT, h_any_id, 100 + i, 0, PTL_UNLINK,
		             h_md(buf, sizes[i], 2,
		                  PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, eq),
		             PTL_UNLINK, &md);
		h_sync(c);
		h_expect(eq, PTL_EVENT_PUT_START, &ev);
		h_expect(eq, PTL_EVENT_PUT_END, &ev);
		H_EQ(ev.mlength, sizes[i]);
		H_PAT(buf, sizes[i], (uint32_t)i + 1000, 0);
		if (sizes[i] < (1u << 20))
			H_EQ(buf[sizes[i]], 0xEE);
		h_fill(buf, sizes[i], (uint32_t)i + 2000, 0);
		h_sync(c);
		h_expect(eq, PTL_EVENT_GET_START, &ev);
		h_expect(eq, PTL_EVENT_GET_END, &ev);
		H_EQ(ev.mlength, sizes[i]);
		h_expect(eq, PTL_EVENT_UNLINK, &ev);
		H_RC(PtlMEUnlink(me), PTL_ME_INVALID);
		h_sync(c);
	}
	H_OK(PtlEQFree(eq));
	free(buf);
}
static void sizes_put_get_ini(struct h_ctx *c)
{
	unsigned char *buf = malloc(1u << 20);
	H_TRUE(buf != NULL);
	for (size_t i = 0; i < NSIZES; i++) {
		h_fill(buf, sizes[i], (uint32_t)i + 1000, 0);
		h_sync(c);
		H_EQ(h_put(c, h_peer(c), H_PT, 100 + i, 0, buf, sizes[i], PTL_ACK_REQ, 0),
		     sizes[i]);
		h_sync(c);
		memset(buf, 0, 1u << 20);
		H_EQ(h_getdata(c, h_peer(c), H_PT, 100 + i, 0, buf, sizes[i]), sizes[i]);
		H_PAT(buf, sizes[i], (uint32_t)i + 2000, 0);
		h_sync(c);
	}
	free(buf);
}

static Suite *suite(void)
{
	Suite *s = suite_create("data");
	TCase *tc = tcase_create("data");
	tcase_set_timeout(tc, 120);
	H_ADD(tc, putregion_data);
	H_ADD(tc, getregion_data);
	H_ADD(tc, get_truncation);
	H_ADD(tc, getput_contention);
	H_ADD(tc, drop_counter_exact);
	H_ADD(tc, sizes_put_get);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return h_main(suite());
}
