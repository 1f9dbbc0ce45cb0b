/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ether.c - rmpp over raw Ethernet (AF_PACKET, EtherType 0x88B5) on the
 * loopback interface (or RMPP_TEST_IFNAME): two endpoints told apart by
 * their endpoint ids (BPF filter), TPACKET_V3 ring and plain recvmmsg, with
 * and without faults.  Without CAP_NET_RAW the tests report a skip (77).
 */
#include "harness.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct h_ep A, B;
static const char *ifname = "lo";

static void open_pair(int ring, const char *faults)
{
	struct rmpp_config cfg;
	rmpp_config_init(&cfg);
	cfg.ether_ring = (uint64_t)ring;
	ck_assert_int_eq(h_ep_init_ether(&A, &cfg, ifname, 11), 0);
	ck_assert_int_eq(h_ep_init_ether(&B, &cfg, ifname, 12), 0);
	if (faults) {
		ck_assert_int_eq(rmpp_fault_set(A.ep, faults), 0);
		ck_assert_int_eq(rmpp_fault_set(B.ep, faults), 0);
	}
}

static void close_pair(void)
{
	h_pair_fini(&A, &B);
}

static void exchange(void)
{
	const uint64_t sizes[] = {0, 1, 100, 16383, 16384, 16385, 1 << 20, 8 << 20};
	const unsigned n = sizeof(sizes) / sizeof(sizes[0]);
	for (unsigned i = 0; i < n; i++)
		ck_assert_int_eq(h_send(&A, &B, sizes[i], 16 + i * 20), 0);
	for (unsigned i = 0; i < 20; i++)
		ck_assert_int_eq(h_send(&B, &A, i * 500, 16), 0);
	ck_assert(h_run_pair(&A, &B, n, 30000));
	ck_assert(h_run_pair(&B, &A, 20, 30000));
	ck_assert_uint_eq(B.rx_ok, n);
	ck_assert_uint_eq(A.rx_ok, 20);
	ck_assert_uint_eq(B.order_errors + B.dup_errors + B.data_errors, 0);
	ck_assert_uint_eq(A.order_errors + A.dup_errors + A.data_errors, 0);
}

START_TEST(t_ether_ring)
{
	open_pair(1, NULL);
	exchange();
	close_pair();
}
END_TEST

START_TEST(t_ether_plain)
{
	open_pair(0, NULL);
	exchange();
	close_pair();
}
END_TEST

START_TEST(t_ether_ring_v2)
{
	open_pair(2, NULL);
	exchange();
	close_pair();
}
END_TEST

START_TEST(t_ether_faults)
{
	open_pair(1, "drop=0.02,dup=0.01,corrupt=0.01,pad=0.05,seed=5");
	exchange();
	struct rmpp_counters c;
	rmpp_counters_get(B.ep, &c);
	ck_assert_uint_gt(c.fault_drops, 0);
	ck_assert_uint_gt(c.csum_drops, 0);
	close_pair();
}
END_TEST

int main(void)
{
	if (getenv("RMPP_TEST_IFNAME"))
		ifname = getenv("RMPP_TEST_IFNAME");
	/* probe for CAP_NET_RAW */
	struct h_ep probe;
	int rc = h_ep_init_ether(&probe, NULL, ifname, 99);
	if (rc == -EPERM) {
		printf("SKIP: raw Ethernet needs CAP_NET_RAW\n");
		return 77;
	}
	if (rc != 0) {
		printf("SKIP: cannot open AF_PACKET on %s: %s\n", ifname, strerror(-rc));
		return 77;
	}
	h_ep_fini(&probe);
	const struct TTest *tests[] = {t_ether_ring, t_ether_plain, t_ether_ring_v2, t_ether_faults,
	                               NULL};
	return h_run_tests("rmpp-ether", NULL, NULL, 60, tests);
}
