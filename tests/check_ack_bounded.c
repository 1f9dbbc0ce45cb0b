/* SPDX-License-Identifier: BSD-3-Clause */
/* check_ack_bounded.c - a put that asked for an ACK ends in bounded time
 * whatever its target does once the put was delivered (nal/rmpp ackwait.c
 * and farewell.c), over udp (app; the exit test over thread too):
 *   - the target exits (exit(3)) without PtlNIFini while it still holds the
 *     ACK (P3_RMPP_LAZY_US 0.1 s): the exit hook sends it, the ACK arrives
 *     with PTL_NI_OK;
 *   - the target vanishes (_exit: no hook, no CLOSE) holding the ACK: the
 *     initiator's keepalive declares it dead after the peer-death timeout
 *     (P3_RMPP_DEAD_MIN_US, 0.5 s here) and the ACK event carries
 *     PTL_NI_PEER_DEAD.
 * Both ranks leave from inside the test function (the harness's closing
 * barrier needs a target that is gone by design). */
#include "harness.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static char tb[64];

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Target: take one put, then leave (hook: exit(3), else _exit). */
static void take_put_and_leave(struct h_ctx *c, int hook)
{
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t md;
	(void)h_me_md(c, H_PT, h_any_id, 1, 0, PTL_RETAIN,
	              h_md(tb, sizeof(tb), PTL_MD_THRESH_INF, PTL_MD_OP_PUT, eq), PTL_RETAIN, &md);
	h_sync(c);
	h_expect(eq, PTL_EVENT_PUT_START, NULL);
	h_expect(eq, PTL_EVENT_PUT_END, NULL);
	if (hook)
		exit(0);
	_exit(0);
}

/* Initiator: one put with an ACK; the ACK event's status within limit_s. */
static void put_and_expect_ack(struct h_ctx *c, ptl_ni_fail_t want, double limit_s)
{
	char buf[32] = {0};
	ptl_handle_eq_t eq = h_eq(c, 32);
	ptl_handle_md_t md =
	    h_bind(c, h_md(buf, sizeof(buf), PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN);
	ptl_event_t ev;
	h_sync(c);
	double t0 = now_s();
	H_OK(PtlPut(md, PTL_ACK_REQ, h_peer(c), H_PT, 0, 1, 0, 0));
	h_expect(eq, PTL_EVENT_SEND_START, NULL);
	h_expect(eq, PTL_EVENT_SEND_END, &ev);
	H_EQ(ev.ni_fail_type, PTL_NI_OK);
	h_expect(eq, PTL_EVENT_ACK, &ev);
	double took = now_s() - t0;
	H_EQ(ev.ni_fail_type, want);
	H_TRUE(took < limit_s);
	H_OK(PtlMDUnlink(md));
	H_OK(PtlEQFree(eq));
	H_OK(PtlNIFini(c->ni));
	PtlFini();
	_exit(0);
}

static void exit_tgt(struct h_ctx *c)
{
	take_put_and_leave(c, 1);
}
static void exit_ini(struct h_ctx *c)
{
	put_and_expect_ack(c, PTL_NI_OK, 5.0);
}

START_TEST(ack_after_target_exit)
{
	setenv("P3_RMPP_LAZY_US", "100000", 1);
	h_run_pair(_i, exit_tgt, exit_ini);
	unsetenv("P3_RMPP_LAZY_US");
}
END_TEST

static void vanish_tgt(struct h_ctx *c)
{
	take_put_and_leave(c, 0);
}
static void vanish_ini(struct h_ctx *c)
{
	put_and_expect_ack(c, PTL_NI_PEER_DEAD, 12.0);
}

START_TEST(ack_lost_target_vanished)
{
	setenv("P3_RMPP_LAZY_US", "100000", 1);
	setenv("P3_RMPP_DEAD_MIN_US", "500000", 1);
	setenv("P3_RMPP_DEAD_TIMEOUTS", "3", 1);
	h_run_pair(_i, vanish_tgt, vanish_ini);
	unsetenv("P3_RMPP_LAZY_US");
	unsetenv("P3_RMPP_DEAD_MIN_US");
	unsetenv("P3_RMPP_DEAD_TIMEOUTS");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("ack_bounded");
	TCase *tc = tcase_create("ack_bounded");
	unsigned not_rmpp = H_X_LO | H_X_SHMEM;
	tcase_set_timeout(tc, 60);
	H_ADD_X(tc, ack_after_target_exit, not_rmpp,
	        "the rmpp NALs' ACK watch and exit hook (shmem has no held ACKs)");
	H_ADD_X(tc, ack_lost_target_vanished, not_rmpp | (1u << H_MODE_UDP_THREAD),
	        "rmpp app progress only (a progress thread sends held ACKs when it blocks)");
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return h_main(suite());
}
