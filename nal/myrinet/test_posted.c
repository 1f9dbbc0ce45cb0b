/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_posted.c - PTL_PROGRESS=offload posts the calls it can prove succeed
 * (README §2.2 "Posted calls"): through the real host driver, n times an
 * MD of its own (PtlMDBind, threshold 2: the put and its ack), a put with
 * ack to ourselves, and its three events; and PtlMEAttach + PtlMDAttach on
 * a fresh ME.  The NIC's counters must show the creations and puts posted
 * (lib_posted), none failed, and only the handle reservations waiting
 * (lib_calls: one per MYRI_MAX_RESERVE objects); every byte must land, and
 * the calls Portals says must fail must still fail with LIB's answer.
 * Exit 0 pass, 1 fail.  Usage: test_posted [N] (default 200).
 */
#include "myri_dev.h"
#include "plain_test.h"

#include <portals3.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PT 7

static ptl_sr_value_t reg(ptl_handle_ni_t ni, int c)
{
	ptl_sr_value_t v = -1;
	PtlNIStatus(ni, PTL_SR_NAL_BASE + c, &v);
	return v;
}

/* The next n events of eq: one of each kind in want[]. */
static int take(ptl_handle_eq_t eq, const ptl_event_kind_t *want, int n, uint64_t *put_mlen)
{
	int seen = 0;
	while (seen != (1 << n) - 1) {
		ptl_event_t ev;
		int rc = PtlEQWait(eq, &ev);
		CHECK(rc == PTL_OK, "PtlEQWait: %s", PtlErrorStr(rc));
		CHECK(ev.ni_fail_type == PTL_NI_OK, "event %s failed", PtlEventKindStr(ev.type));
		int k = 0;
		while (k < n && want[k] != ev.type)
			k++;
		CHECK(k < n && !(seen & (1 << k)), "unexpected event %s", PtlEventKindStr(ev.type));
		if (getenv("TEST_POSTED_VERBOSE"))
			fprintf(stderr, "event %s md %#x\n", PtlEventKindStr(ev.type),
			        (unsigned)ev.md_handle);
		seen |= 1 << k;
		if (ev.type == PTL_EVENT_PUT_END)
			*put_mlen = ev.mlength;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200, nifs;
	ptl_handle_ni_t ni;
	ptl_handle_eq_t eq;
	ptl_handle_me_t me;
	ptl_handle_md_t tmd, md;
	ptl_process_id_t self;
	static uint64_t src, dst;
	const ptl_process_id_t any = {PTL_NID_ANY, PTL_PID_ANY};
	setenv("PTL_PROGRESS", "offload", 1);
	CHECK(PtlInit(&nifs) == PTL_OK, "PtlInit");
	int rc = PtlNIInit(PTL_IFACE_MYRINET, PTL_PID_ANY, NULL, NULL, &ni);
	CHECK(rc == PTL_OK, "PtlNIInit: %s (is mcpd running?)", PtlErrorStr(rc));
	CHECK(PtlGetId(ni, &self) == PTL_OK, "PtlGetId");
	CHECK(PtlEQAlloc(ni, 1024, PTL_EQ_HANDLER_NONE, &eq) == PTL_OK, "PtlEQAlloc");
	ptl_sr_value_t calls0 = reg(ni, MYRI_C_lib_calls), posted0 = reg(ni, MYRI_C_lib_posted);
	CHECK(PtlMEAttach(ni, PT, any, 0, ~0ull, PTL_RETAIN, PTL_INS_AFTER, &me) == PTL_OK,
	      "PtlMEAttach");
	ptl_md_t t = {.start = &dst,
	              .length = sizeof(dst),
	              .threshold = PTL_MD_THRESH_INF,
	              .options = PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE,
	              .eq_handle = eq};
	CHECK(PtlMDAttach(me, t, PTL_RETAIN, &tmd) == PTL_OK, "PtlMDAttach");
	/* what Portals says fails still fails, with LIB's answer */
	CHECK(PtlMDAttach(me, t, PTL_RETAIN, &md) == PTL_ME_IN_USE, "a second MD on the ME");
	ptl_md_t bad = t;
	bad.eq_handle = eq ^ 0x10000u; /* another generation */
	CHECK(PtlMDBind(ni, bad, PTL_RETAIN, &md) == PTL_EQ_INVALID, "an MD with a stale EQ");
	ptl_md_t s = {.start = &src,
	              .length = sizeof(src),
	              .threshold = 2,
	              .options = PTL_MD_EVENT_START_DISABLE | PTL_MD_EVENT_UNLINK_DISABLE,
	              .eq_handle = eq};
	for (int i = 0; i < n; i++) {
		src = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		CHECK(PtlMDBind(ni, s, PTL_UNLINK, &md) == PTL_OK, "PtlMDBind %d", i);
		CHECK(PtlPut(md, PTL_ACK_REQ, self, PT, 0, 0, 0, 0) == PTL_OK, "PtlPut %d", i);
		static const ptl_event_kind_t want[] = {PTL_EVENT_SEND_END, PTL_EVENT_ACK,
		                                        PTL_EVENT_PUT_END};
		uint64_t mlen = 0;
		if (take(eq, want, 3, &mlen))
			return 1;
		CHECK(dst == src && mlen == sizeof(src), "put %d landed (%#llx)", i,
		      (unsigned long long)dst);
		/* the put and its ack took the threshold: the MD unlinked itself */
		CHECK(PtlPut(md, PTL_NOACK_REQ, self, PT, 0, 0, 0, 0) == PTL_MD_INVALID,
		      "a put from the used-up MD %d", i);
	}
	long long calls = (long long)(reg(ni, MYRI_C_lib_calls) - calls0) - 1; /* less a read */
	long long posted = (long long)(reg(ni, MYRI_C_lib_posted) - posted0);
	long long failed = (long long)reg(ni, MYRI_C_lib_posted_failed);
	/* waiting: the 2 failing creations, n used-up puts, the reservations */
	long long most = 2 + n + 2 * (n / (int)MYRI_MAX_RESERVE + 2);
	printf("test_posted: %d binds + puts: %lld calls posted, %lld waited (at most %lld), "
	       "%lld posted calls failed\n",
	       n, posted, calls, most, failed);
	CHECK(posted >= 2LL * n + 2, "every bind and put posted");
	CHECK(calls <= most, "only reservations waited");
	CHECK(failed == 0, "no posted call failed");
	PtlNIFini(ni);
	PtlFini();
	printf("test_posted: ok\n");
	return 0;
}
