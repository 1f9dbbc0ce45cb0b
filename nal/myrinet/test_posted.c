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

/* PtlMEUnlinkNoWait: ME_UNLINK posted and quiet (no answer, not even when
 * it fails); the next waiting call sees it done; one on an ME already gone
 * is counted in lib_posted_quiet_failed, not in lib_posted_failed. */
static int unlink_nowait(ptl_handle_ni_t ni, ptl_handle_eq_t eq)
{
	static uint64_t buf;
	const ptl_process_id_t any = {PTL_NID_ANY, PTL_PID_ANY};
	ptl_handle_me_t me;
	ptl_handle_md_t md;
	ptl_md_t d = {.start = &buf,
	              .length = sizeof(buf),
	              .threshold = 3, /* as an MPI send's: its put, ack, a get */
	              .options = PTL_MD_OP_GET | PTL_MD_EVENT_START_DISABLE,
	              .eq_handle = eq};
	ptl_sr_value_t quiet0 = reg(ni, MYRI_C_lib_posted_quiet_failed);
	ptl_sr_value_t posted0 = reg(ni, MYRI_C_lib_posted);
	ptl_sr_value_t calls0 = reg(ni, MYRI_C_lib_calls);
	CHECK(PtlMEAttach(ni, PT, any, 77, 0, PTL_UNLINK, PTL_INS_AFTER, &me) == PTL_OK,
	      "PtlMEAttach (send ME)");
	CHECK(PtlMDAttach(me, d, PTL_UNLINK, &md) == PTL_OK, "PtlMDAttach (send MD)");
	CHECK(PtlMEUnlinkNoWait(me) == PTL_OK, "PtlMEUnlinkNoWait");
	CHECK(PtlMEUnlinkNoWait(me) == PTL_OK, "PtlMEUnlinkNoWait of a gone ME (queued)");
	long long calls = (long long)(reg(ni, MYRI_C_lib_calls) - calls0);
	long long posted = (long long)(reg(ni, MYRI_C_lib_posted) - posted0);
	long long quiet = (long long)(reg(ni, MYRI_C_lib_posted_quiet_failed) - quiet0);
	printf("test_posted: attach + 2 unlinks without wait: %lld posted, %lld waited (reads and "
	       "reservations), %lld quiet failures\n",
	       posted, calls, quiet);
	CHECK(posted >= 4, "the attaches and both unlinks posted");
	CHECK(calls <= 4, "the unlinks did not wait"); /* 2 reads, reservations asked ahead */
	CHECK(quiet == 1, "the second unlink failed quietly");
	CHECK(PtlMEUnlink(me) == PTL_ME_INVALID, "the ME was gone before the next call");
	CHECK(PtlMDUnlink(md) == PTL_MD_INVALID, "its MD went with it");
	return 0;
}

/* PtlMEMDPostNoWait: ME_MD_POST posted; with its test EQ empty it inserts
 * (the next waiting call sees the ME), with the EQ not empty the NIC
 * answers nothing, counts lib_posts_refused and writes the refusal event;
 * none of it is a failed posted call.  base: a RETAIN ME without an MD. */
static int memdpost_nowait(ptl_handle_ni_t ni, ptl_handle_eq_t eq, ptl_handle_me_t base)
{
	static uint64_t buf;
	const ptl_process_id_t any = {PTL_NID_ANY, PTL_PID_ANY};
	ptl_handle_eq_t teq;
	ptl_handle_me_t me;
	ptl_handle_md_t md;
	ptl_event_t ev;
	ptl_md_t d = {.start = &buf,
	              .length = sizeof(buf),
	              .threshold = 1,
	              .options = PTL_MD_OP_PUT | PTL_MD_EVENT_START_DISABLE,
	              .user_ptr = &buf,
	              .eq_handle = eq};
	CHECK(PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &teq) == PTL_OK, "PtlEQAlloc (test EQ)");
	ptl_sr_value_t refused0 = reg(ni, MYRI_C_lib_posts_refused);
	ptl_sr_value_t posted0 = reg(ni, MYRI_C_lib_posted);
	ptl_sr_value_t mes0 = -1;
	PtlNIStatus(ni, PTL_SR_MES_ALLOCATED, &mes0);
	CHECK(PtlMEMDPostNoWait(base, any, 91, 0, PTL_UNLINK, PTL_INS_BEFORE, d, PTL_UNLINK, teq,
	                        &me, &md) == PTL_OK,
	      "PtlMEMDPostNoWait, test EQ empty");
	ptl_sr_value_t mes = -1;
	PtlNIStatus(ni, PTL_SR_MES_ALLOCATED, &mes);
	CHECK(mes == mes0 + 1, "the posted ME is there (%lld, was %lld)", (long long)mes,
	      (long long)mes0);
	CHECK(PtlMEUnlink(me) == PTL_OK, "unlink the posted ME");
	/* an unread event in the test EQ: a put to ourselves from an MD
	 * reporting to it (its SEND_END; nothing matches at portal PT + 1) */
	ptl_md_t t = d;
	t.threshold = PTL_MD_THRESH_INF;
	t.eq_handle = teq;
	t.user_ptr = NULL;
	ptl_handle_md_t tmd;
	ptl_process_id_t self;
	CHECK(PtlGetId(ni, &self) == PTL_OK, "PtlGetId");
	CHECK(PtlMDBind(ni, t, PTL_RETAIN, &tmd) == PTL_OK, "PtlMDBind (event source)");
	CHECK(PtlPut(tmd, PTL_NOACK_REQ, self, PT + 1, 0, 0, 0, 0) == PTL_OK, "put into nothing");
	CHECK(PtlMEMDPostNoWait(base, any, 92, 0, PTL_UNLINK, PTL_INS_BEFORE, d, PTL_UNLINK, teq,
	                        &me, &md) == PTL_OK,
	      "PtlMEMDPostNoWait, test EQ not empty (queued)");
	CHECK(PtlEQWait(teq, &ev) == PTL_OK && ev.type == PTL_EVENT_SEND_END, "SEND_END in teq");
	CHECK(PtlEQWait(teq, &ev) == PTL_OK && ev.type == PTL_EVENT_UNLINK &&
	          ev.ni_fail_type == PTL_NI_POST_REFUSED && ev.md_handle == md &&
	          ev.md.user_ptr == &buf && ev.match_bits == 92,
	      "the refusal event (%s, fail %u)", PtlEventKindStr(ev.type),
	      (unsigned)ev.ni_fail_type);
	long long refused = (long long)(reg(ni, MYRI_C_lib_posts_refused) - refused0);
	long long posted = (long long)(reg(ni, MYRI_C_lib_posted) - posted0);
	printf("test_posted: 2 posts without wait: %lld posted calls (binds and puts included), "
	       "%lld refused\n",
	       posted, refused);
	CHECK(refused == 1, "one post refused");
	CHECK(posted >= 2, "both posts posted");
	CHECK(PtlMEUnlink(me) == PTL_ME_INVALID, "the refused post's ME does not exist");
	CHECK(PtlMDUnlink(tmd) == PTL_OK, "PtlMDUnlink (event source)");
	CHECK(PtlEQFree(teq) == PTL_OK, "PtlEQFree");
	return 0;
}

/* PtlMEMDPostNoWait whose test EQ visibly holds an event the caller has not
 * read (or an END owed) when it calls: the host answers PTL_MD_NO_UPDATE
 * itself, as the waiting call would (host register posts_failed_early);
 * nothing reaches the NIC, no refusal event is written. */
static int memdpost_nowait_early(ptl_handle_ni_t ni, ptl_handle_me_t base)
{
	static uint64_t buf;
	const ptl_process_id_t any = {PTL_NID_ANY, PTL_PID_ANY};
	ptl_handle_eq_t teq;
	ptl_handle_me_t me;
	ptl_handle_md_t md, tmd;
	ptl_process_id_t self;
	ptl_event_t ev;
	CHECK(PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &teq) == PTL_OK, "PtlEQAlloc (test EQ)");
	ptl_md_t d = {.start = &buf,
	              .length = sizeof(buf),
	              .threshold = PTL_MD_THRESH_INF,
	              .options = PTL_MD_OP_PUT | PTL_MD_EVENT_START_DISABLE,
	              .eq_handle = teq};
	CHECK(PtlGetId(ni, &self) == PTL_OK, "PtlGetId");
	CHECK(PtlMDBind(ni, d, PTL_RETAIN, &tmd) == PTL_OK, "PtlMDBind (event source)");
	CHECK(PtlPut(tmd, PTL_NOACK_REQ, self, PT + 1, 0, 0, 0, 0) == PTL_OK, "put into nothing");
	ptl_sr_value_t v;
	/* a waiting call: the NIC ran the put before it (queue order), so its
	 * SEND_END is in teq or owed there */
	CHECK(PtlNIStatus(ni, PTL_SR_MES_ALLOCATED, &v) == PTL_OK, "PtlNIStatus");
	ptl_sr_value_t early0 = reg(ni, MYRI_NCOUNTERS + MYRI_H_posts_failed_early);
	ptl_sr_value_t refused0 = reg(ni, MYRI_C_lib_posts_refused);
	ptl_sr_value_t posted0 = reg(ni, MYRI_C_lib_posted);
	int rc = PtlMEMDPostNoWait(base, any, 93, 0, PTL_UNLINK, PTL_INS_BEFORE, d, PTL_UNLINK, teq,
	                           &me, &md);
	CHECK(rc == PTL_MD_NO_UPDATE, "PtlMEMDPostNoWait, an unread event: %s", PtlErrorStr(rc));
	long long early = (long long)(reg(ni, MYRI_NCOUNTERS + MYRI_H_posts_failed_early) - early0);
	long long posted = (long long)(reg(ni, MYRI_C_lib_posted) - posted0);
	CHECK(early == 1, "answered by the host (posts_failed_early +%lld)", early);
	CHECK(posted == 0, "the post never reached the NIC (%lld posted calls)", posted);
	CHECK(PtlEQWait(teq, &ev) == PTL_OK && ev.type == PTL_EVENT_SEND_END, "SEND_END in teq");
	CHECK(PtlMEMDPostSync(ni) == PTL_OK, "PtlMEMDPostSync");
	CHECK(PtlEQGet(teq, &ev) == PTL_EQ_EMPTY, "no refusal event");
	CHECK(reg(ni, MYRI_C_lib_posts_refused) == refused0, "no refusal by the NIC");
	CHECK(PtlMDUnlink(tmd) == PTL_OK, "PtlMDUnlink (event source)");
	CHECK(PtlEQFree(teq) == PTL_OK, "PtlEQFree");
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
	ptl_sr_value_t waits0 = reg(ni, MYRI_NCOUNTERS + MYRI_H_lib_waits);
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
	/* the host's own count of the calls it waited for (host register
	 * lib_waits), less the six register reads since waits0 (its own
	 * included: a read returns the count before its own wait ends) */
	long long waited = (long long)(reg(ni, MYRI_NCOUNTERS + MYRI_H_lib_waits) - waits0) - 6;
	ptl_sr_value_t wait_ns = reg(ni, MYRI_NCOUNTERS + MYRI_H_lib_wait_ns);
	/* waiting: the 2 failing creations, n used-up puts, the reservations */
	long long most = 2 + n + 2 * (n / (int)MYRI_MAX_RESERVE + 2);
	printf("test_posted: %d binds + puts: %lld calls posted, %lld waited (at most %lld), "
	       "%lld posted calls failed\n",
	       n, posted, calls, most, failed);
	CHECK(posted >= 2LL * n + 2, "every bind and put posted");
	CHECK(calls <= most, "only reservations waited");
	CHECK(failed == 0, "no posted call failed");
	printf("test_posted: the host waited for %lld calls (%.1f us in all, since PtlNIInit)\n",
	       waited, (double)wait_ns / 1e3);
	CHECK(waited >= 2 + n && waited <= calls + 2, "the host counts the calls it waited for");
	CHECK(wait_ns > 0, "and the time it waited");
	if (unlink_nowait(ni, eq))
		return 1;
	if (memdpost_nowait_early(ni, me))
		return 1;
	if (memdpost_nowait(ni, eq, me))
		return 1;
	CHECK(reg(ni, MYRI_C_lib_posted_failed) == 0, "no posted call failed");
	PtlNIFini(ni);
	PtlFini();
	printf("test_posted: ok\n");
	return 0;
}
