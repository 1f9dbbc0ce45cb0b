/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_faults.c - rmpp under injected faults (seeded shim on the receive
 * path of each endpoint): random and burst loss, duplication, reordering,
 * corruption, truncation/padding, tail loss, lost CTS/DONE/ACKs, zero
 * credit, peer restart, peer death, wrap under loss, garbage frames.
 * Each test checks exactly-once in-order delivery with the right bytes and
 * asserts the counters that prove the repair mechanism.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static struct h_ep A, B;
static struct rmpp_counters ca, cb;

static void setup(void)
{
	h_ep_init(&A, NULL, 0, 1);
	h_ep_init(&B, NULL, 0, 2);
}

static void teardown(void)
{
	h_pair_fini(&A, &B);
}

static void check_clean(struct h_ep *rx, unsigned n)
{
	ck_assert_uint_eq(rx->rx_ok, n);
	ck_assert_uint_eq(rx->rx_fail, 0);
	ck_assert_uint_eq(rx->order_errors, 0);
	ck_assert_uint_eq(rx->dup_errors, 0);
	ck_assert_uint_eq(rx->data_errors, 0);
}

/* A workload: n messages of mixed sizes A -> B, plus some B -> A. */
static unsigned workload(unsigned n)
{
	static const uint64_t sizes[] = {0, 1, 100, 1400, 9000, 16383, 16384, 16385, 70000, 300000};
	for (unsigned i = 0; i < n; i++)
		ck_assert_int_eq(h_send(&A, &B, sizes[i % 10], 16 + (i % 7) * 30), 0);
	ck_assert_int_eq(h_send(&A, &B, 4 << 20, 16), 0);
	for (unsigned i = 0; i < n / 4; i++)
		ck_assert_int_eq(h_send(&B, &A, sizes[(i * 3) % 10], 16), 0);
	return n + 1;
}

static void run_workload(unsigned n, int timeout_ms)
{
	unsigned total = workload(n);
	ck_assert(h_run_pair(&A, &B, total, timeout_ms));
	ck_assert(h_run_pair(&B, &A, n / 4, timeout_ms));
	check_clean(&B, total);
	check_clean(&A, n / 4);
	ck_assert_uint_eq(A.tx_ok, total);
	h_counters(&A, &ca);
	h_counters(&B, &cb);
}

static void set_faults(const char *a, const char *b)
{
	ck_assert_int_eq(rmpp_fault_set(A.ep, a), 0);
	ck_assert_int_eq(rmpp_fault_set(B.ep, b), 0);
}

START_TEST(t_loss_1pct)
{
	set_faults("drop=0.01,seed=11", "drop=0.01,seed=12");
	run_workload(200, 30000);
	ck_assert_uint_gt(cb.fault_drops, 0);
	/* losses in the middle of a flight are repaired by RACK, not timers */
	ck_assert_uint_gt(ca.retx_fast, 0);
	ck_assert_uint_gt(cb.sack_blocks_tx, 0);
	ck_assert_uint_ge(ca.retx_fast + ca.retx_tlp, ca.retx_rto);
}
END_TEST

/* A bulk stream under loss keeps more holes in flight than an ACK has SACK
 * blocks (4): the sender does not know about the ranges above the reported
 * blocks, and must not take them for lost when a retransmission (sent last)
 * is acknowledged.  Before rack_detect stopped at the highest delivered PSN:
 * here 2383 duplicates for 527 drops (ptlbench udp under 1 % loss: ~25 per
 * lost frame); after: 2 for 406. */
START_TEST(t_loss_bulk_no_spurious)
{
	set_faults(NULL, "drop=0.05,only=rdata,seed=13");
	for (unsigned i = 0; i < 8; i++)
		ck_assert_int_eq(h_send(&A, &B, 8u << 20, 16), 0);
	ck_assert(h_run_pair(&A, &B, 8, 60000));
	check_clean(&B, 8);
	h_counters(&A, &ca);
	h_counters(&B, &cb);
	fprintf(stderr, "bulk 5%%: dropped %llu, fast retx %llu, duplicates at the receiver %llu\n",
	        (unsigned long long)cb.fault_drops, (unsigned long long)ca.retx_fast,
	        (unsigned long long)cb.dup_rx);
	ck_assert_uint_gt(cb.fault_drops, 20);
	ck_assert_uint_le(cb.dup_rx, cb.fault_drops / 2 + 10);
	/* what waited behind the holes went to the messages' buffers at once
	 * (check_clean verified every byte) */
	ck_assert_uint_gt(cb.rx_placed, cb.fault_drops);
}
END_TEST

START_TEST(t_loss_10pct)
{
	set_faults("drop=0.10,seed=21", "drop=0.10,seed=22");
	run_workload(150, 60000);
	ck_assert_uint_gt(cb.fault_drops, 100);
	ck_assert_uint_gt(ca.retx_fast, 0);
	ck_assert_uint_eq(ca.peers_dead + cb.peers_dead, 0);
}
END_TEST

START_TEST(t_burst_loss)
{
	/* Cplant's pattern: bursts of 1..22 frames */
	set_faults("drop=0.004,burst=1-22,seed=31", "drop=0.004,burst=1-22,seed=32");
	run_workload(200, 30000);
	ck_assert_uint_gt(cb.fault_drops, 10);
	ck_assert_uint_gt(ca.retx_fast, 0);
	/* a burst leaves a hole of several packets, all reported by SACK */
	ck_assert_uint_gt(cb.sack_blocks_tx, 0);
}
END_TEST

/* A loss event is a congestion episode, not an outage: it ends burst_us
 * after it began even when its frame count is not used up.  Bursts of
 * 100000 frames at the default 10 ms, and at 5 ms: the workload completes,
 * its drops cannot all have been one burst, and no peer is declared dead.
 * With burst_us=0 the first such burst would swallow every later frame. */
START_TEST(t_burst_ends_in_time)
{
	ck_assert_int_eq(rmpp_fault_set(A.ep, "burst=1-22,burst_us=0"), 0);
	ck_assert_int_eq(rmpp_fault_set(A.ep, "burst_us=x"), -EINVAL);
	ck_assert_int_eq(rmpp_fault_set(A.ep, "burst_us=-1"), -EINVAL);
	set_faults("drop=0.01,burst=100000,seed=33",
	           "drop=0.01,burst=100000,burst_us=5000,seed=34");
	run_workload(100, 30000);
	fprintf(stderr, "bursts of 100000 frames ended in time: %llu + %llu frames dropped\n",
	        (unsigned long long)ca.fault_drops, (unsigned long long)cb.fault_drops);
	ck_assert_uint_gt(cb.fault_drops, 0);
	ck_assert_uint_lt(cb.fault_drops, 100000);
	ck_assert_uint_eq(ca.peers_dead + cb.peers_dead, 0);
}
END_TEST

START_TEST(t_duplication)
{
	set_faults("dup=0.05,seed=41", "dup=0.05,seed=42");
	run_workload(200, 30000);
	ck_assert_uint_gt(cb.fault_dups, 0);
	ck_assert_uint_gt(cb.dup_rx, 0);
	ck_assert_uint_gt(cb.dsack_tx, 0);
	ck_assert_uint_gt(ca.dsack_rx, 0);
}
END_TEST

START_TEST(t_reorder)
{
	set_faults("reorder=0.05,delay_us=200,seed=51", "reorder=0.05,delay_us=200,seed=52");
	run_workload(200, 30000);
	ck_assert_uint_gt(cb.fault_reorders, 0);
	ck_assert_uint_gt(cb.ooo_rx, 0);
	/* 200 us is several loopback RTTs: RACK may retransmit at first, then
	 * its window grows with every DSACK */
	ck_assert_uint_gt(ca.dsack_rx + cb.dsack_rx + 1, 0);
	fprintf(stderr, "reorder 200us: reordered %llu, fast retx %llu, dsack %llu\n",
		(unsigned long long)cb.fault_reorders, (unsigned long long)ca.retx_fast,
		(unsigned long long)ca.dsack_rx);
}
END_TEST

START_TEST(t_reorder_mild)
{
	/* reordering shorter than the RACK window: buffered, no retransmission */
	set_faults("reorder=0.05,delay_us=5,seed=53", "reorder=0.05,delay_us=5,seed=54");
	run_workload(200, 30000);
	ck_assert_uint_gt(cb.fault_reorders, 0);
	ck_assert_uint_gt(cb.ooo_rx, 0);
	fprintf(stderr, "reorder 5us: reordered %llu, ooo %llu, fast retx %llu\n",
		(unsigned long long)cb.fault_reorders, (unsigned long long)cb.ooo_rx,
		(unsigned long long)ca.retx_fast);
	ck_assert_uint_le(ca.retx_fast, cb.fault_reorders / 4);
}
END_TEST

START_TEST(t_corruption)
{
	set_faults("corrupt=0.02,seed=61", "corrupt=0.02,seed=62");
	run_workload(200, 30000);
	ck_assert_uint_gt(cb.fault_corrupts, 0);
	ck_assert_uint_gt(cb.csum_drops + cb.malformed_drops, 0);
	/* every corrupted frame was dropped, none delivered (data checked),
	 * except flips in the zero padding of HELLO probes (not covered by the
	 * CRC, carries nothing) */
	uint64_t dropped = cb.csum_drops + cb.malformed_drops + cb.stale_drops;
	ck_assert_uint_le(dropped, cb.fault_corrupts);
	ck_assert_uint_ge(dropped + ca.hello_tx, cb.fault_corrupts);
}
END_TEST

START_TEST(t_truncate_pad)
{
	set_faults("truncate=0.02,pad=0.05,seed=71", "truncate=0.02,pad=0.05,seed=72");
	run_workload(200, 30000);
	ck_assert_uint_gt(cb.fault_truncs, 0);
	ck_assert_uint_eq(cb.malformed_drops + cb.csum_drops, cb.fault_truncs);
}
END_TEST

/* ---- predicate hooks --------------------------------------------------------- */

struct drop_rule {
	uint8_t mop;
	uint32_t msn;
	unsigned nth;  /* drop the nth matching packet (1-based) */
	unsigned seen;
	unsigned dropped;
	bool pure_acks;
	uint64_t until_us;
};

static int drop_nth(void *arg, const struct rmpp_fault_view *v)
{
	struct drop_rule *r = arg;
	if (v->type != RMPP_PKT_DATA || v->mop != r->mop || v->msn != r->msn ||
	    (v->flags & RMPP_F_RETX))
		return RMPP_FAULT_PASS;
	if (++r->seen == r->nth) {
		r->dropped++;
		return RMPP_FAULT_DROP;
	}
	return RMPP_FAULT_PASS;
}

/* The single-threaded test driver stalls while it fills multi-MiB buffers;
 * a 20 ms RTO floor keeps such stalls from firing timers, so the tests
 * below see only the repair mechanism under test. */
/* The tests that assert "repaired without an RTO" give the sender an RTO far
 * above the repair they expect (RACK, a tail-loss probe: ~2 RTTs on
 * loopback).  20 ms was not enough in CI's ASan build under load 15: the
 * process was off its CPU longer than that and the RTO fired first. */
static void slow_rto_sender(void)
{
	struct rmpp_config cfg = A.cfg;
	cfg.rto_min_us = 200000;
	cfg.rto_init_us = 200000;
	h_ep_fini(&A);
	h_ep_init(&A, &cfg, 0, 1);
}

START_TEST(t_drop_3rd_data_of_msg5)
{
	slow_rto_sender();
	struct drop_rule r = {.mop = RMPP_MOP_RDATA, .msn = 5, .nth = 3};
	rmpp_fault_set_hook(B.ep, drop_nth, &r);
	for (unsigned i = 0; i < 8; i++)
		ck_assert_int_eq(h_send(&A, &B, i == 5 ? 2 << 20 : 1000, 16), 0);
	ck_assert(h_run_pair(&A, &B, 8, 10000));
	check_clean(&B, 8);
	h_counters(&A, &ca);
	ck_assert_uint_eq(r.dropped, 1);
	/* repaired by RACK (later packets were SACKed), no RTO */
	ck_assert_uint_ge(ca.retx_fast, 1);
	ck_assert_uint_eq(ca.rto_expired, 0);
}
END_TEST

START_TEST(t_tail_loss)
{
	/* one eager message of two packets; drop the last one once */
	slow_rto_sender();
	struct drop_rule r = {.mop = RMPP_MOP_EAGER_CONT, .msn = 0, .nth = 1};
	rmpp_fault_set_hook(B.ep, drop_nth, &r);
	uint64_t t0 = h_now_us();
	ck_assert_int_eq(h_send(&A, &B, 12000, 16), 0);
	ck_assert(h_run_pair(&A, &B, 1, 5000));
	uint64_t dt = h_now_us() - t0;
	check_clean(&B, 1);
	h_counters(&A, &ca);
	ck_assert_uint_eq(r.dropped, 1);
	ck_assert_uint_ge(ca.retx_tlp, 1);
	ck_assert_uint_eq(ca.rto_expired, 0);
	fprintf(stderr, "tail loss repaired in %llu us (RTO initial %llu us)\n",
		(unsigned long long)dt, (unsigned long long)A.cfg.rto_init_us);
}
END_TEST

START_TEST(t_lost_cts_done)
{
	struct drop_rule cts = {.mop = RMPP_MOP_CTS, .msn = 0, .nth = 1};
	rmpp_fault_set_hook(A.ep, drop_nth, &cts);
	ck_assert_int_eq(h_send(&A, &B, 1 << 20, 16), 0);
	ck_assert(h_run_pair(&A, &B, 1, 5000));
	ck_assert_uint_eq(cts.dropped, 1);
	struct drop_rule done = {.mop = RMPP_MOP_DONE, .msn = 1, .nth = 1};
	rmpp_fault_set_hook(A.ep, drop_nth, &done);
	ck_assert_int_eq(h_send(&A, &B, 1 << 20, 16), 0);
	ck_assert(h_run_pair(&A, &B, 2, 5000));
	ck_assert_uint_eq(done.dropped, 1);
	/* let the duplicate DONE arrive and be acknowledged */
	struct h_ep *eps[2] = {&A, &B};
	h_run(eps, 2, NULL, NULL, 50);
	check_clean(&B, 2);
	ck_assert_uint_eq(A.tx_ok, 2);
	h_counters(&B, &cb);
	h_counters(&A, &ca);
	/* the receiver repaired its control packets, delivered once */
	ck_assert_uint_ge(cb.retx_fast + cb.retx_tlp + cb.retx_rto, 2);
	ck_assert_uint_eq(cb.rx_msgs, 2);
}
END_TEST

/* Drops every ACK for 10 ms from the first one: timed from the first ACK,
 * not from the test start, so a slow handshake (ASan, loaded machine)
 * cannot use up the window. */
static int drop_acks(void *arg, const struct rmpp_fault_view *v)
{
	struct drop_rule *r = arg;
	if (v->type == RMPP_PKT_ACK && !r->until_us)
		r->until_us = v->now_us + 10000;
	if (v->type == RMPP_PKT_ACK && v->now_us < r->until_us) {
		r->dropped++;
		return RMPP_FAULT_DROP;
	}
	return RMPP_FAULT_PASS;
}

START_TEST(t_drop_acks_10ms)
{
	struct drop_rule r = {0};
	rmpp_fault_set_hook(A.ep, drop_acks, &r);
	for (unsigned i = 0; i < 20; i++)
		ck_assert_int_eq(h_send(&A, &B, 5000, 16), 0);
	ck_assert(h_run_pair(&A, &B, 20, 10000));
	check_clean(&B, 20);
	h_counters(&A, &ca);
	h_counters(&B, &cb);
	ck_assert_uint_gt(r.dropped, 0);
	/* the sender probed/retransmitted; the receiver saw duplicates and
	 * answered with DSACK, and never delivered twice */
	ck_assert_uint_gt(ca.retx_tlp + ca.retx_rto, 0);
	ck_assert_uint_gt(cb.dup_rx, 0);
	ck_assert_uint_gt(cb.dsack_tx, 0);
}
END_TEST

/* ---- predicate keys of the shim: only=, maxlen= -------------------------------------- */

START_TEST(t_only_syntax)
{
	ck_assert_int_eq(rmpp_fault_set(A.ep, "drop=0.1,only=ack+cts+done,seed=3"), 0);
	ck_assert_int_eq(rmpp_fault_set(A.ep, "only=data"), 0);
	ck_assert_int_eq(rmpp_fault_set(A.ep, "maxlen=1000"), 0);
	ck_assert_int_eq(rmpp_fault_set(A.ep, "only=ack+bogus"), -EINVAL);
	ck_assert_int_eq(rmpp_fault_set(A.ep, "only="), -EINVAL);
	ck_assert_int_eq(rmpp_fault_set(A.ep, "only=+"), -EINVAL);
	ck_assert_int_eq(rmpp_fault_set(A.ep, "maxlen=10"), -EINVAL);
	ck_assert_int_eq(rmpp_fault_set(A.ep, "maxlen=-1"), -EINVAL);
	ck_assert_int_eq(rmpp_fault_set(A.ep, "maxlen=1x"), -EINVAL);
	ck_assert_int_eq(rmpp_fault_set(A.ep, NULL), 0);
}
END_TEST

START_TEST(t_only_selects_kinds)
{
	/* A receives only HELLO_ACK/ACK frames from B: a data-only rule never
	 * fires, an ack-only rule drops pure ACKs and nothing else */
	set_faults("drop=0.5,only=data+rts+cts,seed=5", NULL);
	for (unsigned i = 0; i < 50; i++)
		ck_assert_int_eq(h_send(&A, &B, 3000, 16), 0);
	ck_assert(h_run_pair(&A, &B, 50, 10000));
	h_counters(&A, &ca);
	ck_assert_uint_eq(ca.fault_drops, 0);
	set_faults("drop=0.3,only=ack,seed=5", NULL);
	for (unsigned i = 0; i < 200; i++)
		ck_assert_int_eq(h_send(&A, &B, 3000, 16), 0);
	ck_assert(h_run_pair(&A, &B, 250, 20000));
	check_clean(&B, 250);
	h_counters(&A, &ca);
	h_counters(&B, &cb);
	ck_assert_uint_gt(ca.fault_drops, 0);
	ck_assert_uint_le(ca.fault_drops + ca.acks_rx, cb.acks_tx);
	ck_assert_uint_eq(ca.peers_dead, 0);
}
END_TEST

/* §4.4 by rate: a third of the ACKs, CTSs and DONEs lost on both sides;
 * every message delivered once, its header offered once (no restart). */
START_TEST(t_lost_ack_cts_done_rate)
{
	set_faults("drop=0.3,only=ack+cts+done,seed=91", "drop=0.3,only=ack+cts+done,seed=92");
	for (unsigned i = 0; i < 30; i++)
		ck_assert_int_eq(h_send(&A, &B, i % 3 ? 100000 : 2000, 16), 0);
	ck_assert(h_run_pair(&A, &B, 30, 20000));
	struct h_ep *eps[2] = {&A, &B};
	h_run(eps, 2, NULL, NULL, 50);
	check_clean(&B, 30);
	ck_assert_uint_eq(B.rx_hdr_calls, 30);
	ck_assert_uint_eq(A.tx_ok, 30);
	h_counters(&A, &ca);
	h_counters(&B, &cb);
	ck_assert_uint_gt(ca.fault_drops, 0);
	ck_assert_uint_gt(cb.retx_fast + cb.retx_tlp + cb.retx_rto, 0);
	ck_assert_uint_eq(ca.rndv_msgs, 20);
	ck_assert_uint_eq(cb.rx_msgs, 30);
}
END_TEST

/* ---- path-MTU probing ------------------------------------------------------------------ */

struct frame_stat {
	uint32_t max_data, max_hello;
};

static int record_len(void *arg, const struct rmpp_fault_view *v)
{
	struct frame_stat *st = arg;
	uint32_t *m = v->type == RMPP_PKT_DATA ? &st->max_data : &st->max_hello;
	if (v->type != RMPP_PKT_DATA && v->type != RMPP_PKT_HELLO)
		return RMPP_FAULT_PASS;
	if (v->frame_len > *m)
		*m = v->frame_len;
	return RMPP_FAULT_PASS;
}

START_TEST(t_pmtu_black_hole)
{
	/* frames above 1400 bytes never reach B: A's 9000 and 1500-byte probes
	 * go unanswered while its plain HELLOs are answered -> 1280 */
	struct frame_stat st = {0};
	set_faults(NULL, "maxlen=1400");
	rmpp_fault_set_hook(B.ep, record_len, &st);
	for (unsigned i = 0; i < 6; i++)
		ck_assert_int_eq(h_send(&A, &B, i == 3 ? 1 << 20 : 5000 * i, 16), 0);
	ck_assert(h_run_pair(&A, &B, 6, 10000));
	for (unsigned i = 0; i < 4; i++)
		ck_assert_int_eq(h_send(&B, &A, 30000, 16), 0);
	ck_assert(h_run_pair(&B, &A, 4, 10000));
	check_clean(&B, 6);
	check_clean(&A, 4);
	h_counters(&A, &ca);
	h_counters(&B, &cb);
	ck_assert_uint_eq(ca.mtu_fallbacks, 2);
	ck_assert_uint_eq(cb.mtu_fallbacks, 0); /* B -> A is clean */
	ck_assert_uint_ge(cb.fault_drops, 4);   /* 2 probes each at 9000 and 1500 */
	ck_assert_uint_gt(st.max_hello, 1400);  /* the dropped probes were seen */
	ck_assert_uint_le(st.max_data, 1280);
	ck_assert_uint_gt(st.max_data, 1000);
	fprintf(stderr, "pmtu: A fell back %llu times, largest data frame %u\n",
		(unsigned long long)ca.mtu_fallbacks, st.max_data);
}
END_TEST

START_TEST(t_pmtu_late_peer)
{
	/* B does not run for 150 ms: unanswered probes mean nothing, A must
	 * not lower its frame size */
	ck_assert_int_eq(h_send(&A, &B, 1 << 20, 16), 0);
	struct h_ep *only_a[1] = {&A};
	h_run(only_a, 1, NULL, NULL, 150);
	ck_assert(h_run_pair(&A, &B, 1, 10000));
	check_clean(&B, 1);
	h_counters(&A, &ca);
	ck_assert_uint_eq(ca.mtu_fallbacks, 0);
	ck_assert_uint_ge(ca.hello_tx, 3);
}
END_TEST

/* ---- credits ------------------------------------------------------------------------ */

/* the stalled sender has probed and the receiver answered RNR */
static bool zero_credit_seen(void *arg)
{
	struct rmpp_counters a, b;
	(void)arg;
	h_counters(&A, &a);
	h_counters(&B, &b);
	return a.probes_tx >= 1 && a.rnr_rx >= 1 && b.rnr_tx >= 1;
}

START_TEST(t_zero_credit)
{
	h_ep_fini(&B);
	struct rmpp_config cfg;
	rmpp_config_init(&cfg);
	cfg.rx_min_credit = 8;
	cfg.rx_pool = 0;
	h_ep_init(&B, &cfg, 0, 2);
	B.defer_seq = 3;
	B.deferring = true;
	for (unsigned i = 0; i < 40; i++)
		ck_assert_int_eq(h_send(&A, &B, 8000, 16), 0);
	struct h_ep *eps[2] = {&A, &B};
	/* receiver stopped for at least 60 ms, until the sender has probed and
	 * been refused (bounded: 3 s; an ASan build on a loaded machine once
	 * sent no probe within a fixed 60 ms) */
	h_run(eps, 2, NULL, NULL, 60);
	h_run(eps, 2, zero_credit_seen, NULL, 3000);
	ck_assert_uint_eq(B.rx_ok, 3);
	h_counters(&A, &ca);
	h_counters(&B, &cb);
	ck_assert_uint_ge(ca.credit_stalls, 1);
	ck_assert_uint_ge(ca.probes_tx, 1);
	ck_assert_uint_ge(cb.rnr_tx, 1);
	ck_assert_uint_ge(ca.rnr_rx, 1);
	ck_assert_uint_ge(cb.rx_defers, 1);
	ck_assert_uint_eq(ca.peers_dead, 0);
	/* the receiver resumes: everything flows, no deadlock */
	B.deferring = false;
	ck_assert_int_eq(rmpp_peer_resume(B.ep, &A.addr), 0);
	ck_assert(h_run_pair(&A, &B, 40, 10000));
	check_clean(&B, 40);
	h_counters(&A, &ca);
	fprintf(stderr, "zero credit: stalls %llu probes %llu rnr %llu\n",
		(unsigned long long)ca.credit_stalls, (unsigned long long)ca.probes_tx,
		(unsigned long long)ca.rnr_rx);
}
END_TEST

START_TEST(t_flood_unprogressed_receiver)
{
	/* 3000 messages sent while the receiver does not progress at all */
	for (unsigned i = 0; i < 3000; i++)
		ck_assert_int_eq(h_send(&A, &B, 500, 16), 0);
	struct h_ep *only_a[1] = {&A};
	h_run(only_a, 1, NULL, NULL, 30);
	ck_assert(h_run_pair(&A, &B, 3000, 20000));
	check_clean(&B, 3000);
}
END_TEST

/* ---- peer failures ------------------------------------------------------------------- */

static bool b_got_some(void *arg)
{
	(void)arg;
	return B.rx_ok >= 1;
}

START_TEST(t_peer_restart)
{
	struct rmpp_config cfg = B.cfg;
	cfg.send_close = 0; /* crash: no CLOSE */
	/* B restarts on the same port: one outside the ephemeral range, so
	 * that nobody's port-0 bind can take it while B is down */
	uint16_t port = h_fixed_port();
	ck_assert_uint_ne(port, 0);
	h_ep_fini(&B);
	h_ep_init(&B, &cfg, port, 2);
	for (unsigned i = 0; i < 6; i++)
		ck_assert_int_eq(h_send(&A, &B, i == 0 ? 100 : 4 << 20, 16), 0);
	struct h_ep *eps[2] = {&A, &B};
	uint32_t old_epoch = rmpp_ep_epoch(B.ep);
	ck_assert(h_run(eps, 2, b_got_some, NULL, 10000));
	/* crash B with operations in flight, restart it on the same port */
	h_ep_fini(&B);
	h_ep_init(&B, &cfg, port, 2);
	ck_assert_uint_ne(rmpp_ep_epoch(B.ep), old_epoch);
	unsigned ok_before = A.tx_ok;
	h_run(eps, 2, NULL, NULL, 200);
	h_counters(&A, &ca);
	fprintf(stderr, "restart: A ok %u failed %u (reset %u), resets_rx %llu\n", A.tx_ok,
		A.tx_fail, A.tx_fail_reset, (unsigned long long)ca.resets_rx);
	ck_assert_uint_eq(A.ev_restarted, 1);
	ck_assert_uint_eq(A.tx_ok + A.tx_fail, 6);
	ck_assert_uint_ge(A.tx_fail, 1);
	ck_assert_uint_eq(A.tx_fail_reset, A.tx_fail);
	ck_assert_uint_ge(A.tx_fail_reset, 4);
	ck_assert_uint_le(ok_before, A.tx_ok);
	/* the new incarnation works */
	A.sent_seq = 0;
	for (unsigned i = 0; i < 5; i++)
		ck_assert_int_eq(h_send(&A, &B, i == 2 ? 1 << 20 : 3000, 16), 0);
	ck_assert(h_run_pair(&A, &B, 5, 10000));
	check_clean(&B, 5);
	h_counters(&A, &ca);
	ck_assert_uint_ge(ca.resets_rx, 1);
	ck_assert_uint_eq(ca.peers_restarted, 1);
	/* A's frames left its connected send socket: the RESET of the new
	 * incarnation came back to that socket's port (aux_fd) -- unless no
	 * ephemeral port was left for that socket (another job holding them
	 * all): then they left the bound socket, and that is counted */
	ck_assert_uint_gt(ca.tx_direct + ca.dsock_errors, 0);
}
END_TEST

START_TEST(t_peer_close)
{
	ck_assert_int_eq(h_send(&A, &B, 100, 16), 0);
	ck_assert(h_run_pair(&A, &B, 1, 5000));
	h_ep_fini(&B); /* sends CLOSE */
	struct h_ep *eps[1] = {&A};
	h_run(eps, 1, NULL, NULL, 20);
	ck_assert_uint_eq(A.ev_closed, 1);
}
END_TEST

/* A with fast, bounded death detection (RTO_MAX 20 ms, the given count and
 * time span); B without CLOSE; one message across, then B dies silently and
 * never comes back. */
static void pair_then_silent_death(unsigned dead_timeouts, uint64_t dead_min_us)
{
	h_ep_fini(&A);
	struct rmpp_config cfg;
	rmpp_config_init(&cfg);
	cfg.rto_max_us = 20000;
	cfg.dead_timeouts = dead_timeouts;
	cfg.dead_min_us = dead_min_us;
	h_ep_init(&A, &cfg, 0, 1);
	struct rmpp_config bc = B.cfg;
	bc.send_close = 0;
	uint16_t port = h_fixed_port(); /* as in t_peer_restart */
	ck_assert_uint_ne(port, 0);
	h_ep_fini(&B);
	h_ep_init(&B, &bc, port, 2);
	ck_assert_int_eq(h_send(&A, &B, 100, 16), 0);
	ck_assert(h_run_pair(&A, &B, 1, 5000));
	h_ep_fini(&B);
}

START_TEST(t_peer_death)
{
	pair_then_silent_death(8, 0); /* the count alone (the time bound: t_dead_min) */
	for (unsigned i = 0; i < 3; i++)
		ck_assert_int_eq(h_send(&A, &B, 1 << 20, 16), 0);
	uint64_t t0 = h_now_us();
	struct h_ep *eps[1] = {&A};
	h_run(eps, 1, NULL, NULL, 1000);
	ck_assert_uint_eq(A.ev_dead, 1);
	uint64_t dt = A.ev_time_us - t0;
	/* bound: sum of the backed-off RTOs, 1+2+4+8+16+20+20+20 ms = 91 ms,
	 * with generous slack for a loaded 2-core machine */
	ck_assert_uint_lt(dt, 1000000);
	ck_assert_uint_eq(A.tx_fail_timeout, 3);
	h_counters(&A, &ca);
	ck_assert_uint_eq(ca.peers_dead, 1);
	ck_assert_int_eq(h_send(&A, &B, 1, 16), -EHOSTUNREACH);
	fprintf(stderr, "peer declared dead after %llu us\n", (unsigned long long)dt);
}
END_TEST

/* A silent peer is declared dead only once the timeouts span DEAD_MIN_US
 * (a live peer in app progress may not ack while it computes). */
START_TEST(t_dead_min)
{
	pair_then_silent_death(4, 400000);
	ck_assert_int_eq(h_send(&A, &B, 4096, 16), 0);
	uint64_t t0 = h_now_us();
	struct h_ep *eps[1] = {&A};
	h_run(eps, 1, NULL, NULL, 3000);
	ck_assert_uint_eq(A.ev_dead, 1);
	uint64_t dt = A.ev_time_us - t0;
	/* 4 timeouts alone take ~1+2+4+8 ms; the time bound holds it to 400 ms */
	ck_assert_uint_ge(dt, 400000);
	ck_assert_uint_lt(dt, 2500000);
	fprintf(stderr, "peer declared dead after %llu us (DEAD_MIN_US 400000)\n", (unsigned long long)dt);
}
END_TEST

START_TEST(t_wrap_under_loss)
{
	h_ep_fini(&A);
	h_ep_fini(&B);
	struct rmpp_config cfg;
	rmpp_config_init(&cfg);
	cfg.isn = 0xffffffffu - 100;
	h_ep_init(&A, &cfg, 0, 1);
	h_ep_init(&B, &cfg, 0, 2);
	set_faults("drop=0.05,reorder=0.02,seed=81", "drop=0.05,dup=0.02,seed=82");
	run_workload(150, 30000);
	ck_assert_uint_gt(cb.fault_drops, 0);
}
END_TEST

START_TEST(t_garbage_frames)
{
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	ck_assert_int_ge(s, 0);
	struct sockaddr_in to = {.sin_family = AF_INET,
				 .sin_port = B.addr.u.udp.port,
				 .sin_addr.s_addr = B.addr.u.udp.ip};
	uint8_t buf[2000];
	uint64_t x = 12345;
	for (int i = 0; i < 500; i++) {
		size_t len = (size_t)(i * 7) % sizeof(buf);
		for (size_t k = 0; k < len; k++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			buf[k] = (uint8_t)(x >> 56);
		}
		if (i % 3 == 0 && len > 0)
			buf[0] = (uint8_t)((2 << 4) | 3); /* wrong version */
		sendto(s, buf, len, 0, (struct sockaddr *)&to, sizeof(to));
	}
	close(s);
	ck_assert_int_eq(h_send(&A, &B, 5000, 16), 0);
	ck_assert(h_run_pair(&A, &B, 1, 5000));
	check_clean(&B, 1);
	h_counters(&B, &cb);
	ck_assert_uint_ge(cb.malformed_drops + cb.csum_drops, 400);
}
END_TEST

static bool b_deferred(void *arg)
{
	struct rmpp_counters c;
	(void)arg;
	h_counters(&B, &c);
	return c.rx_defers >= 1;
}

/* Solicited eager messages of 200 KiB (Portals REPLYs) under loss,
 * duplication and reordering, with B's rendezvous sends putting A's CTS and
 * DONE between their frames and the receiver deferring one of them: every
 * message exactly once, in order, byte-exact, none by RTS/CTS; under loss
 * what waited behind a hole went to its message at once (rx_placed: A sends
 * B no RDATA, so only eager data is placed there). */
START_TEST(t_solicited_faults)
{
	static const char *const spec[] = {"drop=0.03,seed=71", "dup=0.05,seed=72",
	                                   "reorder=0.05,delay_us=200,seed=73",
	                                   "drop=0.02,dup=0.02,reorder=0.02,burst=1-5,seed=74"};
	struct h_ep *eps[2] = {&A, &B};
	for (unsigned k = 0; k < sizeof(spec) / sizeof(spec[0]); k++) {
		if (k) {
			h_pair_fini(&A, &B);
			setup();
		}
		set_faults(spec[k], spec[k]);
		B.defer_seq = 5;
		B.deferring = true;
		for (unsigned i = 0; i < 20; i++) {
			ck_assert_int_eq(h_send_flags(&A, &B, 200 << 10, RMPP_SEND_SOLICITED), 0);
			if (i % 4 == 0)
				ck_assert_int_eq(h_send(&B, &A, 300000, 16), 0);
		}
		ck_assert(h_run(eps, 2, b_deferred, NULL, 10000));
		ck_assert_uint_eq(B.rx_ok, 5);
		B.deferring = false;
		ck_assert_int_eq(rmpp_peer_resume(B.ep, &A.addr), 0);
		ck_assert(h_run_pair(&A, &B, 20, 30000));
		ck_assert(h_run_pair(&B, &A, 5, 30000));
		check_clean(&B, 20);
		check_clean(&A, 5);
		h_counters(&A, &ca);
		h_counters(&B, &cb);
		ck_assert_uint_eq(ca.solicited_eager, 20);
		ck_assert_uint_eq(ca.rndv_msgs, 0);
		ck_assert_uint_eq(cb.rndv_msgs, 5);
		ck_assert_uint_eq(cb.malformed_drops, 0);
		fprintf(stderr, "solicited %s: drops %llu dups %llu reorders %llu placed %llu\n",
		        spec[k], (unsigned long long)cb.fault_drops, (unsigned long long)cb.dup_rx,
		        (unsigned long long)cb.fault_reorders, (unsigned long long)cb.rx_placed);
		if (k == 0) {
			ck_assert_uint_gt(cb.fault_drops, 0);
			ck_assert_uint_gt(cb.rx_placed, 0);
		} else if (k == 1) {
			ck_assert_uint_gt(cb.dup_rx, 0);
		} else if (k == 2) {
			ck_assert_uint_gt(cb.ooo_rx, 0);
		}
	}
}
END_TEST

/* A solicited eager message of 200 KiB in 1500-byte frames is ~140 frames
 * against a credit of 8: the sender stalls inside it again and again, and
 * the receiver's in-order pass hands credit back as it reassembles. */
START_TEST(t_solicited_small_credit)
{
	struct rmpp_config cfg;
	rmpp_config_init(&cfg);
	cfg.mtu = 1500;
	cfg.rx_min_credit = 8;
	cfg.rx_pool = 0;
	h_pair_fini(&A, &B);
	h_ep_init(&A, &cfg, 0, 1);
	h_ep_init(&B, &cfg, 0, 2);
	set_faults("drop=0.02,seed=75", "drop=0.02,seed=76");
	for (unsigned i = 0; i < 10; i++)
		ck_assert_int_eq(h_send_flags(&A, &B, 200 << 10, RMPP_SEND_SOLICITED), 0);
	ck_assert(h_run_pair(&A, &B, 10, 30000));
	check_clean(&B, 10);
	h_counters(&A, &ca);
	h_counters(&B, &cb);
	ck_assert_uint_eq(ca.solicited_eager, 10);
	ck_assert_uint_gt(ca.credit_stalls, 0);
	ck_assert_uint_gt(cb.fault_drops, 0);
	ck_assert_uint_eq(cb.malformed_drops, 0);
}
END_TEST

int main(void)
{
	const struct TTest *tests[] = {t_loss_1pct,
	                               t_loss_bulk_no_spurious,
	                               t_loss_10pct,
	                               t_burst_loss,
	                               t_burst_ends_in_time,
	                               t_duplication,
	                               t_reorder,
	                               t_reorder_mild,
	                               t_corruption,
	                               t_truncate_pad,
	                               t_drop_3rd_data_of_msg5,
	                               t_tail_loss,
	                               t_lost_cts_done,
	                               t_drop_acks_10ms,
	                               t_only_syntax,
	                               t_only_selects_kinds,
	                               t_lost_ack_cts_done_rate,
	                               t_pmtu_black_hole,
	                               t_pmtu_late_peer,
	                               t_zero_credit,
	                               t_flood_unprogressed_receiver,
	                               t_peer_restart,
	                               t_peer_close,
	                               t_peer_death,
	                               t_dead_min,
	                               t_wrap_under_loss,
	                               t_garbage_frames,
	                               t_solicited_faults,
	                               t_solicited_small_credit,
	                               NULL};
	return h_run_tests("rmpp-faults", setup, teardown, 60, tests);
}
