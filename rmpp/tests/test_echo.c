/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_echo.c - repair while the peer talks but does not hear us (rel_loss.c,
 * rmpp_rel_echo_detect): a burst at the receiver that swallows a lost packet's
 * retransmissions too is repaired at the pace of the peer's frames, not of
 * the RTO backoff (tests/wire/faults.sh `burst` once took 2108 ms for one
 * frame); and a packet the peer never gets is resent that way at most
 * ECHO_RETX_MAX times, after which the RTO backoff alone paces it; and a
 * frame sent long after the last one received carries no timestamp echo
 * (rmpp_rel_echo), so it cannot turn the silence into an RTT sample.
 *
 * B waits on A (rmpp_peer_watch, as the Portals NAL does for a put's ACK),
 * so B sends keepalive probes; B's fault hook drops A's frames.
 */
#include "harness.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Silence both ways, then a probe: the RTO estimate is not the silence.
 * B gets A's message M1 and A's shim then drops B's frames for 300 ms
 * (B's acks and probes) while B's drops all of A's (A's resends): when
 * A's window reopens, B's next keepalive probe acks M1.  Its echo would
 * be M1's tsval, 300 ms old: before rmpp_rel_echo the sample took A's RTO
 * to ~340 ms (srtt + 4 rttvar), and in tests/wire/faults.sh `burst` (CI)
 * to RTO_MAX, where echo-loss resends wait one estimated RTO.  So the
 * probe carries no echo, and M2, whose first three transmissions B's shim
 * drops, is repaired at the RTO of the path (TLP, then 1, 2, 4 ms), not of
 * the silence (>= 600 ms with the stale sample). */
struct silence {
	uint64_t a_drop_until; /* A drops B's frames until then (monotonic us) */
	bool b_drop_all;       /* B drops every frame of A */
	unsigned b_drop_data;  /* ... or this many DATA frames of A */
	unsigned a_seen_late, a_late_echoes, a_prompt_echoes;
};
static struct silence S;

static int a_hook(void *arg, const struct rmpp_fault_view *v)
{
	(void)arg;
	if (v->now_us < S.a_drop_until)
		return RMPP_FAULT_DROP;
	if (v->type == RMPP_PKT_PROBE) {
		S.a_seen_late++;
		if (v->tsecr)
			S.a_late_echoes++;
	} else if (v->type == RMPP_PKT_ACK && v->tsecr) {
		S.a_prompt_echoes++;
	}
	return RMPP_FAULT_PASS;
}

static int b_hook(void *arg, const struct rmpp_fault_view *v)
{
	(void)arg;
	if (S.b_drop_all)
		return RMPP_FAULT_DROP;
	if (S.b_drop_data && v->type == RMPP_PKT_DATA) {
		S.b_drop_data--;
		return RMPP_FAULT_DROP;
	}
	return RMPP_FAULT_PASS;
}

static bool a_sent(void *arg)
{
	return A.tx_ok >= *(unsigned *)arg;
}

START_TEST(t_stale_echo_not_an_rtt_sample)
{
	memset(&S, 0, sizeof(S));
	struct h_ep *eps[2] = {&A, &B};
	unsigned a_done = A.tx_ok + 1, b_has = B.rx_ok + 1;
	S.a_drop_until = h_now_us() + 300000;
	rmpp_fault_set_hook(A.ep, a_hook, NULL);
	rmpp_fault_set_hook(B.ep, b_hook, NULL);
	ck_assert_int_eq(h_send(&A, &B, 1000, 16), 0);
	ck_assert(h_run(eps, 2, b_got, &b_has, 5000));
	S.b_drop_all = true;
	ck_assert(h_run(eps, 2, a_sent, &a_done, 5000)); /* a probe of B got through */
	S.b_drop_all = false;
	S.b_drop_data = 3;
	uint64_t t0 = h_now_us();
	ck_assert_int_eq(h_send(&A, &B, 1000, 16), 0);
	b_has++;
	ck_assert(h_run(eps, 2, b_got, &b_has, 5000));
	uint64_t dt = h_now_us() - t0;
	a_done++;
	ck_assert(h_run(eps, 2, a_sent, &a_done, 5000)); /* B's ack of M2 */
	struct rmpp_counters ca;
	h_counters(&A, &ca);
	fprintf(stderr,
	        "after 300 ms of silence: %u probes reached A (%u with an echo), %u acks with "
	        "one; M2 past 3 drops in %llu us (TLP %llu, RTO %llu, echo %llu resends)\n",
	        S.a_seen_late, S.a_late_echoes, S.a_prompt_echoes, (unsigned long long)dt,
	        (unsigned long long)ca.retx_tlp, (unsigned long long)ca.retx_rto,
	        (unsigned long long)ca.retx_echo);
	ck_assert_uint_gt(S.a_seen_late, 0);
	ck_assert_uint_eq(S.a_late_echoes, 0);
	ck_assert_uint_gt(S.a_prompt_echoes, 0); /* B's prompt acks of M2 still echo */
	ck_assert_uint_eq(S.b_drop_data, 0);
	ck_assert_uint_eq(B.data_errors + B.dup_errors + B.order_errors, 0);
	ck_assert_uint_lt(dt, 150000);
}
END_TEST

int main(void)
{
	const struct TTest *tests[] = {t_burst_repaired_at_the_peers_pace, t_echo_resends_bounded,
	                               t_stale_echo_not_an_rtt_sample, NULL};
	return h_run_tests("rmpp-echo", setup, teardown, 30, tests);
}
