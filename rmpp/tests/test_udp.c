/* SPDX-License-Identifier: BSD-3-Clause */
/* test_udp.c - two rmpp endpoints over UDP on 127.0.0.1, no faults:
 * message sizes, ordering, truncation, header-only, wrap, threads. */
#include "harness.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static struct h_ep A, B;

/* the most one UDP GSO send carries (link_udp.c) */
#define GSO_TEST_MAX_BYTES 65000u

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
	ck_assert_uint_eq(rx->rx_hdr_calls, n);
}

START_TEST(t_sizes)
{
	const uint64_t eager = A.cfg.eager_limit;
	const uint64_t sizes[] = {0, 1, eager - 1, eager, eager + 1, 1 << 20, 16u << 20};
	const unsigned n = sizeof(sizes) / sizeof(sizes[0]);
	for (unsigned i = 0; i < n; i++)
		ck_assert_int_eq(h_send(&A, &B, sizes[i], 16 + i * 30), 0);
	ck_assert(h_run_pair(&A, &B, n, 20000));
	check_clean(&B, n);
	ck_assert_uint_eq(A.tx_ok, n);
	struct rmpp_counters ca, cb;
	h_counters(&A, &ca);
	h_counters(&B, &cb);
	ck_assert_uint_eq(ca.eager_msgs, 4);
	ck_assert_uint_eq(ca.rndv_msgs, 3);
	ck_assert_uint_eq(cb.rx_msgs, n);
	ck_assert_uint_eq(cb.malformed_drops + cb.csum_drops, 0);
	uint64_t total = 0;
	for (unsigned i = 0; i < n; i++)
		total += sizes[i];
	ck_assert_uint_eq(B.rx_bytes, total);
	/* every payload byte crossed once, plus retransmissions only if the
	 * kernel dropped datagrams */
	uint64_t retx = ca.retx_fast + ca.retx_rto + ca.retx_tlp;
	ck_assert_uint_le(ca.tx_payload_bytes, total + retx * rmpp_ep_mtu(A.ep));
	ck_assert_uint_ge(ca.tx_payload_bytes, total);
}
END_TEST

START_TEST(t_many_small_both_ways)
{
	const unsigned n = 3000;
	for (unsigned i = 0; i < n; i++) {
		ck_assert_int_eq(h_send(&A, &B, (i * 37) % 3000, 16), 0);
		ck_assert_int_eq(h_send(&B, &A, (i * 53) % 20000, 40), 0);
	}
	struct h_ep *eps[2] = {&A, &B};
	(void)eps;
	ck_assert(h_run_pair(&A, &B, n, 20000));
	ck_assert(h_run_pair(&B, &A, n, 20000));
	check_clean(&B, n);
	check_clean(&A, n);
}
END_TEST

START_TEST(t_header_only)
{
	for (unsigned i = 0; i < 10; i++)
		ck_assert_int_eq(h_send(&A, &B, 0, RMPP_MAX_HDR), 0);
	ck_assert(h_run_pair(&A, &B, 10, 5000));
	check_clean(&B, 10);
	ck_assert_int_eq(h_send(&A, &B, 0, RMPP_MAX_HDR + 1), -22);
}
END_TEST

/* rmpp_send_lazy: a held message leaves after the next message to the same
 * peer; alone, it leaves within LAZY_US (or when progress would block);
 * with LAZY_US 0 it is an ordinary send; held messages fail cleanly when the
 * endpoint goes away. */
static bool got_more(void *arg)
{
	return B.rx_ok > *(unsigned *)arg;
}

START_TEST(t_lazy)
{
	struct rmpp_counters ca;
	/* establish the connection first */
	ck_assert_int_eq(h_send(&A, &B, 8, 16), 0);
	ck_assert(h_run_pair(&A, &B, 1, 5000));
	/* held, then overtaken by an ordinary message: arrival order 2, 1 */
	ck_assert_int_eq(h_send_lazy(&A, &B, 0, 32), 0);
	ck_assert_int_eq(h_send(&A, &B, 100, 16), 0);
	ck_assert(h_run_pair(&A, &B, 3, 5000));
	ck_assert_uint_eq(B.arrival[1], 2);
	ck_assert_uint_eq(B.arrival[2], 1);
	ck_assert_uint_eq(B.rx_ok, 3);
	ck_assert_uint_eq(A.tx_ok, 3);
	ck_assert_uint_eq(B.data_errors + B.dup_errors + B.rx_fail, 0);
	h_counters(&A, &ca);
	ck_assert_uint_eq(ca.lazy_held, 1);
	/* alone: released by the LAZY_US timer or the block, promptly */
	uint64_t t0 = h_now_us();
	ck_assert_int_eq(h_send_lazy(&A, &B, 0, 16), 0);
	ck_assert(h_run_pair(&A, &B, 4, 5000));
	uint64_t dt = h_now_us() - t0;
	ck_assert_uint_lt(dt, 500000); /* LAZY_US is 20 us; slack for a loaded machine */
	ck_assert_uint_eq(B.arrival[3], 3);
	/* above the eager limit: never held */
	ck_assert_int_eq(h_send_lazy(&A, &B, A.cfg.eager_limit + 1, 16), 0);
	ck_assert(h_run_pair(&A, &B, 5, 5000));
	h_counters(&A, &ca);
	ck_assert_uint_eq(ca.lazy_held, 2);
	/* held when the endpoint is destroyed: completes with an error */
	ck_assert_int_eq(h_send_lazy(&A, &B, 0, 16), 0);
	unsigned fail0 = A.tx_fail, rx0 = B.rx_ok;
	h_ep_fini(&A);
	ck_assert_uint_eq(A.tx_fail, fail0 + 1);
	/* ...but it went out once, ahead of the CLOSE (a Portals initiator may
	 * be waiting for exactly that ACK) */
	struct h_ep *eps[1] = {&B};
	ck_assert(h_run(eps, 1, got_more, &rx0, 2000));
	h_ep_init(&A, NULL, 0, 1);
}
END_TEST

/* rmpp_send_carry: held payload-less messages travel in the carrier's header */
START_TEST(t_carry)
{
	struct rmpp_counters ca;
	ck_assert_int_eq(h_send(&A, &B, 8, 16), 0);
	ck_assert(h_run_pair(&A, &B, 1, 5000));
	B.carry = true;
	ck_assert_int_eq(h_send_lazy(&A, &B, 0, 16), 0);
	ck_assert_int_eq(h_send_lazy(&A, &B, 0, 16), 0);
	ck_assert_int_eq(h_send_carry(&A, &B, 100), 0);
	ck_assert(h_run_pair(&A, &B, 4, 5000));
	ck_assert_uint_eq(B.rx_carried, 2);
	/* sent order kept: the carried ones first */
	ck_assert_uint_eq(B.arrival[1], 1);
	ck_assert_uint_eq(B.arrival[2], 2);
	ck_assert_uint_eq(B.arrival[3], 3);
	ck_assert_uint_eq(B.order_errors + B.data_errors + B.dup_errors + B.rx_fail, 0);
	ck_assert_uint_eq(A.tx_ok, 4);
	h_counters(&A, &ca);
	ck_assert_uint_eq(ca.lazy_carried, 2);
	/* a held message with a payload is not carried: it follows the carrier */
	ck_assert_int_eq(h_send_lazy(&A, &B, 10, 16), 0);
	ck_assert_int_eq(h_send_carry(&A, &B, 0), 0);
	ck_assert(h_run_pair(&A, &B, 6, 5000));
	ck_assert_uint_eq(B.arrival[4], 5);
	ck_assert_uint_eq(B.arrival[5], 4);
	ck_assert_uint_eq(B.rx_carried, 2);
	/* a carried message shares its carrier's fate */
	ck_assert_int_eq(h_send_lazy(&A, &B, 0, 16), 0);
	ck_assert_int_eq(h_send_carry(&A, &B, 1 << 20), 0); /* rendezvous: not done at once */
	unsigned fail0 = A.tx_fail;
	h_ep_fini(&A);
	ck_assert_uint_eq(A.tx_fail, fail0 + 2);
	h_ep_init(&A, NULL, 0, 1);
}
END_TEST

START_TEST(t_lazy_off)
{
	h_ep_fini(&A);
	struct rmpp_config cfg;
	rmpp_config_init(&cfg);
	cfg.lazy_us = 0;
	h_ep_init(&A, &cfg, 0, 1);
	ck_assert_int_eq(h_send_lazy(&A, &B, 0, 16), 0);
	ck_assert_int_eq(h_send(&A, &B, 10, 16), 0);
	ck_assert(h_run_pair(&A, &B, 2, 5000));
	check_clean(&B, 2);
	struct rmpp_counters ca;
	h_counters(&A, &ca);
	ck_assert_uint_eq(ca.lazy_held, 0);
}
END_TEST

START_TEST(t_truncate)
{
	B.accept_limit = 100000;
	ck_assert_int_eq(h_send(&A, &B, 1 << 20, 16), 0);
	ck_assert(h_run_pair(&A, &B, 1, 5000));
	check_clean(&B, 1);
	ck_assert_uint_eq(B.last_accepted, 100000);
	ck_assert_uint_eq(A.tx_last_accepted, 100000);
	struct rmpp_counters ca;
	h_counters(&A, &ca);
	uint64_t retx = ca.retx_fast + ca.retx_rto + ca.retx_tlp;
	/* only the accepted bytes crossed the wire */
	ck_assert_uint_le(ca.tx_payload_bytes, 100000 + retx * rmpp_ep_mtu(A.ep));
	ck_assert_uint_ge(ca.tx_payload_bytes, 100000);
	/* accept nothing: RTS data only, then DONE */
	B.accept_limit = 0;
	uint64_t before = ca.tx_payload_bytes;
	ck_assert_int_eq(h_send(&A, &B, 4 << 20, 16), 0);
	ck_assert(h_run_pair(&A, &B, 2, 5000));
	h_counters(&A, &ca);
	ck_assert_uint_eq(A.tx_last_accepted, 0);
	retx = ca.retx_fast + ca.retx_rto + ca.retx_tlp;
	ck_assert_uint_lt(ca.tx_payload_bytes - before, rmpp_ep_mtu(A.ep) * (1 + retx));
}
END_TEST

START_TEST(t_wrap)
{
	h_ep_fini(&A);
	h_ep_fini(&B);
	struct rmpp_config cfg;
	rmpp_config_init(&cfg);
	cfg.isn = 0xffffffffu - 100;
	h_ep_init(&A, &cfg, 0, 1);
	h_ep_init(&B, &cfg, 0, 2);
	for (unsigned i = 0; i < 300; i++)
		ck_assert_int_eq(h_send(&A, &B, 1000 + i, 16), 0);
	ck_assert_int_eq(h_send(&A, &B, 2 << 20, 16), 0);
	ck_assert(h_run_pair(&A, &B, 301, 10000));
	check_clean(&B, 301);
}
END_TEST

/* ---- threads: each endpoint has a blocking progress thread -------------------- */

static atomic_int stop_threads;

static void *progress_thread(void *arg)
{
	struct h_ep *h = arg;
	while (!atomic_load(&stop_threads))
		rmpp_progress(h->ep, 100);
	return NULL;
}

START_TEST(t_threads_blocking)
{
	pthread_t ta, tb;
	atomic_store(&stop_threads, 0);
	/* spin 0: always block, to test wakeups and timers */
	pthread_create(&ta, NULL, progress_thread, &A);
	pthread_create(&tb, NULL, progress_thread, &B);
	for (unsigned i = 0; i < 200; i++)
		ck_assert_int_eq(h_send(&A, &B, i % 5 == 0 ? 100000 : 100, 16), 0);
	uint64_t end = h_now_us() + 10000000;
	while (h_now_us() < end) {
		if (B.rx_ok == 200 && A.tx_ok == 200)
			break;
		poll(NULL, 0, 1);
	}
	atomic_store(&stop_threads, 1);
	rmpp_wakeup(A.ep);
	rmpp_wakeup(B.ep);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	check_clean(&B, 200);
	ck_assert_uint_eq(A.tx_ok, 200);
}
END_TEST

START_TEST(t_pollable_fd)
{
	int fd = rmpp_ep_fd(B.ep);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(h_send(&A, &B, 10, 16), 0);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	ck_assert_int_eq(poll(&p, 1, 1000), 1);
	ck_assert(h_run_pair(&A, &B, 1, 2000));
	/* once idle, the fd is quiet (timers consumed, no busy loop) */
	struct h_ep *eps[2] = {&A, &B};
	h_run(eps, 2, NULL, NULL, 20);
	rmpp_progress(B.ep, 0);
	ck_assert_int_eq(poll(&p, 1, 0), 0);
	/* config and counters print without crashing */
	FILE *f = fopen("/dev/null", "w");
	rmpp_config_print(&A.cfg, f);
	struct rmpp_counters c;
	h_counters(&A, &c);
	rmpp_counters_print(&c, f);
	fclose(f);
}
END_TEST

/* Direct frames: after the handshake each side sends from a socket
 * connected to the other (SEND_SOCKETS), and the receiver finds the
 * connection of the ephemeral source by (ip, src_ep, src_epoch).  A frame
 * from another socket that claims A's endpoint id with a wrong epoch is not
 * taken for A's (a stale drop, answered by a RESET to where it came from).
 * With SEND_SOCKETS 0 every frame leaves the bound socket. */
START_TEST(t_direct_sockets)
{
	const unsigned n = 300;
	for (unsigned i = 0; i < n; i++) {
		ck_assert_int_eq(h_send(&A, &B, (i * 37) % 20000, 16), 0);
		ck_assert_int_eq(h_send(&B, &A, (i == 7) << 20, 16), 0);
	}
	ck_assert(h_run_pair(&A, &B, n, 20000));
	ck_assert(h_run_pair(&B, &A, n, 20000));
	check_clean(&B, n);
	check_clean(&A, n);
	struct rmpp_counters ca, cb;
	h_counters(&A, &ca);
	h_counters(&B, &cb);
	ck_assert_uint_gt(ca.tx_direct, n / 2);
	ck_assert_uint_gt(cb.tx_direct, n / 2);
	ck_assert_uint_gt(cb.rx_direct, 0);
	ck_assert_uint_le(cb.rx_direct, ca.tx_direct);
	ck_assert_uint_le(ca.rx_direct, cb.tx_direct);

	/* the impostor: an ACK from a fresh socket, src_ep = A's, wrong epoch */
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	ck_assert_int_ge(s, 0);
	struct sockaddr_in to = {.sin_family = AF_INET,
	                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	                         .sin_port = htons(B.port)};
	struct rmpp_pkt p;
	memset(&p, 0, sizeof(p));
	p.type = RMPP_PKT_ACK;
	p.flags = RMPP_F_ACK_VALID | RMPP_F_CRC;
	p.src_ep = 1;
	p.dst_ep = 2;
	p.src_epoch = rmpp_ep_epoch(A.ep) ^ 0x5a5a5a5au;
	p.dst_epoch = rmpp_ep_epoch(B.ep);
	p.tsval = 1;
	uint8_t frame[128];
	long len = rmpp_pkt_build(frame, sizeof(frame), &p, NULL, 0, 0);
	ck_assert_int_gt(len, 0);
	ck_assert_int_eq(sendto(s, frame, (size_t)len, 0, (struct sockaddr *)&to, sizeof(to)), len);
	struct h_ep *eps[2] = {&A, &B};
	h_run(eps, 2, NULL, NULL, 20);
	struct rmpp_counters cb2;
	h_counters(&B, &cb2);
	ck_assert_uint_eq(cb2.stale_drops, cb.stale_drops + 1);
	ck_assert_uint_eq(cb2.rx_direct, cb.rx_direct);
	struct pollfd pf = {.fd = s, .events = POLLIN};
	ck_assert_int_eq(poll(&pf, 1, 1000), 1);
	uint8_t reply[256];
	ssize_t r = recv(s, reply, sizeof(reply), 0);
	struct rmpp_pkt q;
	ck_assert_int_eq(rmpp_pkt_parse(reply, (size_t)r, RMPP_PARSE_VERIFY_CRC, &q), 0);
	ck_assert_uint_eq(q.type, RMPP_PKT_RESET);
	close(s);

	/* off */
	struct rmpp_config cfg;
	rmpp_config_init(&cfg);
	cfg.send_sockets = 0;
	h_ep_fini(&A);
	h_ep_fini(&B);
	h_ep_init(&A, &cfg, 0, 1);
	h_ep_init(&B, &cfg, 0, 2);
	for (unsigned i = 0; i < 20; i++)
		ck_assert_int_eq(h_send(&A, &B, i * 100, 16), 0);
	ck_assert(h_run_pair(&A, &B, 20, 20000));
	check_clean(&B, 20);
	h_counters(&A, &ca);
	h_counters(&B, &cb);
	ck_assert_uint_eq(ca.tx_direct + cb.tx_direct + ca.rx_direct + cb.rx_direct, 0);
}
END_TEST

/* UDP GSO: runs of full-size frames leave as one send each, the receiver
 * gets every byte intact and in order; through connected send sockets and
 * through the bound one (names per entry), and not at all when off. */
static void gso_round(bool gso, unsigned send_sockets)
{
	struct rmpp_config cfg;
	rmpp_config_init(&cfg);
	cfg.gso = gso;
	cfg.send_sockets = send_sockets;
	h_ep_fini(&A);
	h_ep_fini(&B);
	h_ep_init(&A, &cfg, 0, 1);
	h_ep_init(&B, &cfg, 0, 2);
	/* odd sizes: the last frame of each message is short */
	const uint64_t sizes[] = {4u << 20, (1u << 20) + 12345, 100000, 17, 3u << 20};
	const unsigned n = sizeof(sizes) / sizeof(sizes[0]);
	uint64_t total = 0;
	for (unsigned i = 0; i < n; i++) {
		ck_assert_int_eq(h_send(&A, &B, sizes[i], 16), 0);
		total += sizes[i];
	}
	ck_assert(h_run_pair(&A, &B, n, 20000));
	check_clean(&B, n);
	ck_assert_uint_eq(B.rx_bytes, total);
	struct rmpp_counters ca, cb;
	h_counters(&A, &ca);
	h_counters(&B, &cb);
	ck_assert_uint_eq(cb.malformed_drops + cb.csum_drops, 0);
	if (gso) {
		/* 8 MiB in frames of the MTU: at least half of it in GSO sends
		 * (each carries at most 64 KiB) */
		ck_assert_uint_ge(ca.tx_gso * GSO_TEST_MAX_BYTES, total / 2);
		ck_assert_uint_lt(ca.tx_gso, ca.tx_pkts);
	} else {
		ck_assert_uint_eq(ca.tx_gso, 0);
	}
}

START_TEST(t_gso)
{
	gso_round(true, 64);
	gso_round(true, 0);
	gso_round(false, 64);
}
END_TEST

/* rmpp_peer_watch: a watched peer that answers the keepalive probes is
 * alive however long the watch lasts; one that falls silent is declared
 * dead after DEAD_TIMEOUTS probes spanning DEAD_MIN_US.  (Before, an answer
 * to a keepalive did not count: the myrinet NIC, watching a target that
 * owed a Portals ACK, declared the live target's NIC dead after 1 s.) */
static bool a_saw_dead(void *arg)
{
	(void)arg;
	return A.ev_dead > 0;
}

START_TEST(t_watch_alive)
{
	struct rmpp_config cfg;
	rmpp_config_init(&cfg);
	cfg.dead_min_us = 200000;
	cfg.dead_timeouts = 3;
	cfg.keepalive_us = 20000;
	h_ep_fini(&A);
	h_ep_init(&A, &cfg, 0, 1);
	ck_assert_int_eq(h_send(&A, &B, 8, 16), 0);
	ck_assert(h_run_pair(&A, &B, 1, 5000));
	ck_assert_int_eq(rmpp_peer_watch(A.ep, &B.addr, +1), 1);
	struct h_ep *both[2] = {&A, &B}, *a_only[1] = {&A};
	/* B alive: 1 s of keepalives (~50 of them), all answered */
	ck_assert(!h_run(both, 2, a_saw_dead, NULL, 1000));
	struct rmpp_counters ca;
	h_counters(&A, &ca);
	ck_assert_uint_ge(ca.probes_tx, 10);
	ck_assert_uint_eq(A.ev_dead, 0);
	/* B silent (nobody drives it): dead soon after DEAD_MIN_US */
	uint64_t t0 = h_now_us();
	ck_assert(h_run(a_only, 1, a_saw_dead, NULL, 5000));
	uint64_t dt = h_now_us() - t0;
	ck_assert_uint_ge(dt, 200000);
	ck_assert_uint_lt(dt, 3000000); /* slack for a loaded machine */
}
END_TEST

/* A CTS arriving at A: a solicited eager message must not cost one. */
static int count_cts(void *arg, const struct rmpp_fault_view *v)
{
	if (v->type == RMPP_PKT_DATA && v->mop == RMPP_MOP_CTS)
		(*(unsigned *)arg)++;
	return RMPP_FAULT_PASS;
}

/* RMPP_SEND_SOLICITED (a Portals REPLY): eager above EAGER_LIMIT up to
 * SOLICITED_EAGER_MAX, no CTS; above the cap, or unsolicited, RTS/CTS. */
START_TEST(t_solicited)
{
	unsigned cts = 0;
	struct rmpp_counters ca;
	rmpp_fault_set_hook(A.ep, count_cts, &cts);
	const uint64_t max = A.cfg.solicited_eager_max;
	ck_assert_uint_eq(max, 262144);
	const uint64_t sizes[] = {100000, 200 << 10, max, 1000};
	uint64_t total = 0;
	for (unsigned i = 0; i < 4; i++) {
		ck_assert_int_eq(h_send_flags(&A, &B, sizes[i], RMPP_SEND_SOLICITED), 0);
		total += sizes[i];
	}
	ck_assert(h_run_pair(&A, &B, 4, 10000));
	check_clean(&B, 4);
	ck_assert_uint_eq(B.rx_bytes, total);
	h_counters(&A, &ca);
	ck_assert_uint_eq(ca.eager_msgs, 4);
	ck_assert_uint_eq(ca.rndv_msgs, 0);
	ck_assert_uint_eq(ca.solicited_eager, 3); /* 1000 bytes: eager anyway */
	ck_assert_uint_eq(cts, 0);
	/* above the cap, and a plain send of the same size: rendezvous */
	ck_assert_int_eq(h_send_flags(&A, &B, max + 1, RMPP_SEND_SOLICITED), 0);
	ck_assert_int_eq(h_send(&A, &B, 200 << 10, 16), 0);
	ck_assert(h_run_pair(&A, &B, 6, 10000));
	check_clean(&B, 6);
	h_counters(&A, &ca);
	ck_assert_uint_eq(ca.rndv_msgs, 2);
	ck_assert_uint_eq(ca.solicited_eager, 3);
	ck_assert_uint_ge(cts, 2);
	/* the receiver takes less: the rest is discarded, the bytes it took are right */
	B.accept_limit = 50000;
	ck_assert_int_eq(h_send_flags(&A, &B, 200 << 10, RMPP_SEND_SOLICITED), 0);
	ck_assert(h_run_pair(&A, &B, 7, 10000));
	check_clean(&B, 7);
	ck_assert_uint_eq(B.last_accepted, 50000);
	ck_assert_uint_eq(A.tx_last_accepted, 200 << 10); /* eager: msg_len */
	ck_assert_int_eq(h_send_flags(&A, &B, 10, 1u << 7), -EINVAL);
}
END_TEST

/* SOLICITED_EAGER_MAX 0 turns it off; 1 MiB (the largest) is reassembled. */
START_TEST(t_solicited_cap)
{
	struct rmpp_config cfg;
	struct rmpp_counters ca;
	rmpp_config_init(&cfg);
	cfg.solicited_eager_max = 0;
	h_ep_fini(&A);
	h_ep_init(&A, &cfg, 0, 1);
	ck_assert_int_eq(h_send_flags(&A, &B, 200 << 10, RMPP_SEND_SOLICITED), 0);
	ck_assert(h_run_pair(&A, &B, 1, 10000));
	h_counters(&A, &ca);
	ck_assert_uint_eq(ca.rndv_msgs, 1);
	ck_assert_uint_eq(ca.solicited_eager, 0);
	check_clean(&B, 1);
	h_pair_fini(&A, &B); /* fresh message numbers on both sides */
	cfg.solicited_eager_max = 1 << 20;
	h_ep_init(&A, &cfg, 0, 1);
	h_ep_init(&B, NULL, 0, 2);
	ck_assert_int_eq(h_send_flags(&A, &B, 1 << 20, RMPP_SEND_SOLICITED), 0);
	ck_assert_int_eq(h_send_flags(&A, &B, (1 << 20) + 1, RMPP_SEND_SOLICITED), 0);
	ck_assert(h_run_pair(&A, &B, 2, 10000));
	check_clean(&B, 2);
	h_counters(&A, &ca);
	ck_assert_uint_eq(ca.solicited_eager, 1);
	ck_assert_uint_eq(ca.rndv_msgs, 1);
}
END_TEST

int main(void)
{
	const struct TTest *tests[] = {t_sizes,
	                               t_many_small_both_ways,
	                               t_header_only,
	                               t_lazy,
	                               t_lazy_off,
	                               t_carry,
	                               t_truncate,
	                               t_wrap,
	                               t_threads_blocking,
	                               t_pollable_fd,
	                               t_direct_sockets,
	                               t_gso,
	                               t_watch_alive,
	                               t_solicited,
	                               t_solicited_cap,
	                               NULL};
	return h_run_tests("rmpp-udp", setup, teardown, 30, tests);
}
