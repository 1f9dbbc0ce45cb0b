/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_echo.c - repair while the peer talks but does not hear us (rel_loss.c,
 * rmpp_rel_echo_detect): a burst at the receiver that swallows a lost packet's
 * retransmissions too is repaired at the pace of the peer's frames, not of
 * the RTO backoff (tests/wire/faults.sh `burst` once took 2108 ms for one
 * frame); and a packet the peer never gets is resent that way at most
 * ECHO_RETX_MAX times, after which the RTO backoff alone paces it.
 *
 * B waits on A (rmpp_peer_watch, as the Portals NAL does for a put's ACK),
 * so B sends keepalive probes; B's fault hook drops A's frames.
 */
#include "harness.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

static struct h_ep A, B;

static void setup(void)
{
	h_ep_init(&A, NULL, 0, 1);
	h_ep_init(&B, NULL, 0, 2);
	/* both directions established, RTT measured, nothing in flight */
	ck_assert_int_eq(h_send(&A, &B, 1000, 16), 0);
	ck_assert_int_eq(h_send(&B, &A, 1000, 16), 0);
	ck_assert(h_run_pair(&A, &B, 1, 5000));
	ck_assert(h_run_pair(&B, &A, 1, 5000));
	struct h_ep *eps[2] = {&A, &B};
	h_run(eps, 2, NULL, NULL, 20); /* the last acks */
	ck_assert_int_ge(rmpp_peer_watch(B.ep, &A.addr, 1), 1);
}

static void teardown(void)
{
	h_pair_fini(&A, &B);
}

struct drop {
	unsigned left;  /* frames still to drop (burst) */
	bool data_only; /* drop every DATA frame instead */
	unsigned dropped;
};

static int drop_hook(void *arg, const struct rmpp_fault_view *v)
{
	struct drop *d = arg;
	if (d->data_only ? v->type == RMPP_PKT_DATA : d->left > 0) {
		if (!d->data_only)
			d->left--;
		d->dropped++;
		return RMPP_FAULT_DROP;
	}
	return RMPP_FAULT_PASS;
}

static bool b_got(void *arg)
{
	return B.rx_ok >= *(unsigned *)arg;
}

/* 30 frames from A in a row lost at B, starting with a one-packet message:
 * its first retransmissions are lost too.  B's probes reach A and show that
 * B is alive and has not got it: A resends at each of them and restarts its
 * backoff.  Measured (4 runs each, alternated): without echo_detect
 * 2.04-2.06 s (11 RTO resends, the RTO doubling to 1 s between them); with
 * it 0.15-0.62 s (4-5 echo and 16-20 RTO resends).  The bound sits between. */
START_TEST(t_burst_repaired_at_the_peers_pace)
{
	struct drop d = {.left = 30};
	rmpp_fault_set_hook(B.ep, drop_hook, &d);
	uint64_t t0 = h_now_us();
	ck_assert_int_eq(h_send(&A, &B, 1000, 16), 0);
	unsigned want = 2;
	struct h_ep *eps[2] = {&A, &B};
	ck_assert(h_run(eps, 2, b_got, &want, 10000));
	uint64_t dt = h_now_us() - t0;
	struct rmpp_counters ca;
	h_counters(&A, &ca);
	fprintf(stderr,
	        "burst of 30 at the receiver: repaired in %llu us, %llu echo resends, "
	        "%llu RTO resends\n",
	        (unsigned long long)dt, (unsigned long long)ca.retx_echo,
	        (unsigned long long)ca.retx_rto);
	ck_assert_uint_eq(d.dropped, 30);
	ck_assert_uint_eq(B.rx_ok, 2);
	ck_assert_uint_eq(B.data_errors + B.dup_errors + B.order_errors, 0);
	ck_assert_uint_gt(ca.retx_echo, 0);
	ck_assert_uint_lt(dt, 1000000);
}
END_TEST

/* B's frames to A while every DATA frame of A is lost at B (~4 ms apart,
 * for about ms milliseconds) */
static void b_talks(struct h_ep **eps, unsigned ms)
{
	for (unsigned i = 0; i < ms / 4; i++) {
		ck_assert_int_eq(h_send(&B, &A, 100, 16), 0);
		h_run(eps, 2, NULL, NULL, 4);
	}
}

/* Every DATA frame of A is lost at B while B keeps sending A messages:
 * A's lone packet is resent at B's frames until it has been resent 32
 * times in all (ECHO_RETX_MAX: echo, TLP and RTO resends), then only the
 * RTO paces it (its expiries go on, toward the dead-peer verdict); once
 * the path carries it again it is delivered once. */
START_TEST(t_echo_resends_bounded)
{
	struct drop d = {.data_only = true};
	rmpp_fault_set_hook(B.ep, drop_hook, &d);
	ck_assert_int_eq(h_send(&A, &B, 1000, 16), 0);
	struct h_ep *eps[2] = {&A, &B};
	struct rmpp_counters c1, c2;
	b_talks(eps, 400);
	h_counters(&A, &c1);
	b_talks(eps, 1200); /* longer than RTO_MAX: the backed-off RTO expires in it */
	h_counters(&A, &c2);
	fprintf(stderr,
	        "data lost for ~1.6 s: echo resends %llu then %llu, RTO expiries %llu then "
	        "%llu, %u dropped\n",
	        (unsigned long long)c1.retx_echo, (unsigned long long)c2.retx_echo,
	        (unsigned long long)c1.rto_expired, (unsigned long long)c2.rto_expired, d.dropped);
	ck_assert_uint_eq(B.rx_ok, 1);
	ck_assert_uint_gt(c1.retx_echo, 0);
	/* the cap was reached in the first 400 ms, and held in the next 1.2 s */
	ck_assert_uint_ge(c1.retx_echo + c1.retx_rto + c1.retx_tlp + c1.retx_fast, 32);
	ck_assert_uint_eq(c2.retx_echo, c1.retx_echo);
	ck_assert_uint_gt(c2.rto_expired, c1.rto_expired);
	ck_assert_uint_eq(c2.peers_dead, 0);
	rmpp_fault_set_hook(B.ep, NULL, NULL);
	unsigned want = 2;
	ck_assert(h_run(eps, 2, b_got, &want, 5000));
	ck_assert_uint_eq(B.data_errors + B.dup_errors + B.order_errors, 0);
}
END_TEST

int main(void)
{
	const struct TTest *tests[] = {t_burst_repaired_at_the_peers_pace, t_echo_resends_bounded,
	                               NULL};
	return h_run_tests("rmpp-echo", setup, teardown, 30, tests);
}
