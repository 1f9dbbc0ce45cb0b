/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_restart.c - a peer restart converges: after B restarts (a new epoch),
 * frames still in flight from the old connection must not make A reset the
 * new one, and a connection one side dropped alone must be dropped by the
 * other too, so that both directions work again (tools/soak found peers
 * resetting each other after a restart, and operations that never ended).
 *
 * The stray frames are forged from a plain UDP socket with the fields the
 * real ones carry (the receiver finds the connection by (ip, src_ep,
 * src_epoch), as for a peer's connected send socket), so the order of
 * events is fixed, not left to the scheduler.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static struct h_ep A, B;
static uint32_t b_old_epoch;

/* A and B talk, B "crashes" (no CLOSE) and restarts on the same port with a
 * new epoch, A learns it (RESTARTED) and the new pair works both ways. */
static void setup(void)
{
	struct rmpp_config cfg;
	rmpp_config_init(&cfg);
	cfg.send_close = 0;
	uint16_t port = h_fixed_port();
	ck_assert_uint_ne(port, 0);
	h_ep_init(&A, NULL, 0, 1);
	h_ep_init(&B, &cfg, port, 2);
	ck_assert_int_eq(h_send(&A, &B, 3000, 16), 0);
	ck_assert(h_run_pair(&A, &B, 1, 5000));
	b_old_epoch = rmpp_ep_epoch(B.ep);
	h_ep_fini(&B);
	h_ep_init(&B, &cfg, port, 2);
	ck_assert_uint_ne(rmpp_ep_epoch(B.ep), b_old_epoch);
	A.sent_seq = 0;
	ck_assert_int_eq(h_send(&B, &A, 3000, 16), 0);
	ck_assert(h_run_pair(&B, &A, 1, 5000));
	ck_assert_uint_eq(A.ev_restarted, 1);
	ck_assert_int_eq(h_send(&A, &B, 3000, 16), 0);
	/* until it is acknowledged, not only delivered: nothing in flight */
	struct h_ep *eps[2] = {&A, &B};
	uint64_t t0 = h_now_us();
	while ((A.tx_ok < 2 || B.tx_ok < 1) && h_now_us() - t0 < 5000000)
		h_run(eps, 2, NULL, NULL, 10);
	ck_assert_uint_eq(A.tx_ok, 2);
	ck_assert_uint_eq(B.tx_ok, 1);
	ck_assert_uint_eq(A.tx_fail + B.tx_fail, 0);
}

static void teardown(void)
{
	h_pair_fini(&A, &B);
}

/* A frame from "B" (src_ep 2, B's current epoch) to A, from another port. */
static void forge_to_a(struct rmpp_pkt *p)
{
	p->src_ep = 2;
	p->dst_ep = 1;
	p->src_epoch = rmpp_ep_epoch(B.ep);
	p->tsval = 1;
	p->flags |= RMPP_F_CRC;
	uint8_t frame[256];
	long len = rmpp_pkt_build(frame, sizeof(frame), p, NULL, 0, 0);
	ck_assert_int_gt(len, 0);
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(s, 0);
	/* not from an ephemeral port: there may be none left */
	struct sockaddr_in me = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons(h_fixed_port())};
	ck_assert_int_eq(bind(s, (struct sockaddr *)&me, sizeof(me)), 0);
	struct sockaddr_in to = {.sin_family = AF_INET,
	                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	                         .sin_port = htons(A.port)};
	ck_assert_int_eq(sendto(s, frame, (size_t)len, 0, (struct sockaddr *)&to, sizeof(to)), len);
	close(s);
}

/* The RESET B's new incarnation sends for a frame addressed to the old one */
static void forge_reset(uint32_t refused)
{
	struct rmpp_pkt p;
	memset(&p, 0, sizeof(p));
	p.type = RMPP_PKT_RESET;
	p.dst_epoch = rmpp_ep_epoch(A.ep);
	p.psn = refused;
	forge_to_a(&p);
}

/* n messages each way must get through, none failing */
static void both_ways_work(unsigned n)
{
	unsigned a_ok = A.tx_ok, b_ok = B.tx_ok, a_fail = A.tx_fail, b_fail = B.tx_fail;
	unsigned a_rx = A.rx_ok, b_rx = B.rx_ok;
	for (unsigned i = 0; i < n; i++) {
		ck_assert_int_eq(h_send(&A, &B, i == 1 ? 200000 : 1000, 16), 0);
		ck_assert_int_eq(h_send(&B, &A, i == 1 ? 200000 : 1000, 16), 0);
	}
	struct h_ep *eps[2] = {&A, &B};
	uint64_t t0 = h_now_us();
	while (!(A.tx_ok + A.tx_fail >= a_ok + a_fail + n &&
	         B.tx_ok + B.tx_fail >= b_ok + b_fail + n && A.rx_ok >= a_rx + n &&
	         B.rx_ok >= b_rx + n) &&
	       h_now_us() - t0 < 5000000)
		h_run(eps, 2, NULL, NULL, 10);
	ck_assert_uint_eq(A.tx_fail, a_fail);
	ck_assert_uint_eq(B.tx_fail, b_fail);
	ck_assert_uint_eq(A.tx_ok, a_ok + n);
	ck_assert_uint_eq(B.tx_ok, b_ok + n);
	ck_assert_uint_eq(A.rx_ok, a_rx + n);
	ck_assert_uint_eq(B.rx_ok, b_rx + n);
}

/* A RESET answering a frame A sent to B's old epoch arrives after A learned
 * the new one: stale, dropped (before: A failed the new connection with
 * PEER_RESET and B, which had reset nothing, then refused A's new ISN). */
START_TEST(t_stale_reset_ignored)
{
	struct rmpp_counters c0, c1;
	h_counters(&A, &c0);
	forge_reset(b_old_epoch);
	struct h_ep *eps[2] = {&A, &B};
	h_run(eps, 2, NULL, NULL, 30);
	h_counters(&A, &c1);
	ck_assert_uint_eq(c1.resets_rx, c0.resets_rx + 1);
	ck_assert_uint_eq(c1.stale_drops, c0.stale_drops + 1);
	ck_assert_uint_eq(A.ev_reset, 0);
	ck_assert_uint_eq(A.ev_restarted, 1);
	both_ways_work(3);
}
END_TEST

/* A RESET of the epoch A knows (B lost A): A drops the connection; B,
 * which did not, drops it too when A's fresh HELLO (no epoch of B's, a new
 * ISN) arrives -- both directions work again (before: B kept its sequence
 * state, refused A's new ISN and A never got B's PSNs: nothing completed). */
START_TEST(t_one_sided_reset_converges)
{
	forge_reset(rmpp_ep_epoch(B.ep));
	struct h_ep *eps[2] = {&A, &B};
	h_run(eps, 2, NULL, NULL, 30);
	ck_assert_uint_eq(A.ev_reset, 1);
	/* A's next message starts the new connection; B takes A's HELLO
	 * (same epoch, another ISN, no epoch of B's) as the end of the old */
	unsigned a_ok = A.tx_ok;
	ck_assert_int_eq(h_send(&A, &B, 1000, 16), 0);
	uint64_t t0 = h_now_us();
	while (A.tx_ok + A.tx_fail == a_ok && h_now_us() - t0 < 5000000)
		h_run(eps, 2, NULL, NULL, 10);
	ck_assert_uint_eq(A.tx_ok, a_ok + 1);
	ck_assert_uint_eq(B.ev_reset, 1);
	both_ways_work(3);
	ck_assert_uint_eq(A.ev_reset, 1);
	ck_assert_uint_eq(B.ev_reset, 1);
}
END_TEST

/* A RESET without the refused epoch (psn 0: an older peer) keeps the old
 * meaning: the peer lost us. */
START_TEST(t_reset_without_epoch)
{
	forge_reset(0);
	struct h_ep *eps[2] = {&A, &B};
	h_run(eps, 2, NULL, NULL, 30);
	ck_assert_uint_eq(A.ev_reset, 1);
}
END_TEST

int main(void)
{
	const struct TTest *tests[] = {t_stale_reset_ignored, t_one_sided_reset_converges,
	                               t_reset_without_epoch, NULL};
	return h_run_tests("rmpp-restart", setup, teardown, 60, tests);
}
