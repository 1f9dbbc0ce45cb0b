/* SPDX-License-Identifier: BSD-3-Clause */
/* harness.h - two (or more) rmpp endpoints in one process for the tests:
 * patterned messages, in-order/exactly-once/content checks, a driver loop. */
#ifndef RMPP_TEST_HARNESS_H
#define RMPP_TEST_HARNESS_H

#include "rmpp.h"
#include "rmpp_wire.h"

#include <stdbool.h>
#include <stdint.h>

#define H_MAX_SEQ 100000

struct h_ep {
	struct rmpp_ep *ep;
	struct rmpp_addr addr;
	struct rmpp_config cfg;
	uint16_t port;
	/* receive side */
	uint64_t accept_limit;  /* truncate every message to this (UINT64_MAX: all) */
	int defer_seq;          /* rx_hdr defers this seq (-1: never) */
	bool deferring;
	/* rmpp_send_carry: headers after the first 16 bytes are carried
	 * messages (16-byte headers, no payload), delivered first */
	bool carry;
	unsigned rx_carried;
	unsigned rx_hdr_calls, rx_ok, rx_fail, order_errors, data_errors, dup_errors;
	uint32_t next_seq;
	uint64_t rx_bytes;
	uint64_t last_accepted;
	unsigned char *seen; /* seen[seq] */
	uint32_t arrival[16]; /* seq of the first 16 headers, in arrival order */
	/* send side */
	unsigned tx_ok, tx_fail, tx_fail_reset, tx_fail_timeout;
	uint64_t tx_last_accepted;
	unsigned ev_dead, ev_restarted, ev_closed, ev_reset;
	uint64_t ev_time_us;
	uint32_t sent_seq;
};

/* Create an endpoint on 127.0.0.1 (port 0 = ephemeral) with cfg (NULL:
 * defaults); the fault spec may be NULL. */
void h_ep_init(struct h_ep *h, const struct rmpp_config *cfg, uint16_t port, uint16_t ep_id);
/* Raw Ethernet endpoint on ifname; returns rmpp_ep_create's result. */
int h_ep_init_ether(struct h_ep *h, const struct rmpp_config *cfg, const char *ifname,
		    uint16_t ep_id);
void h_ep_fini(struct h_ep *h);
/* A test's teardown: with H_VERBOSE set print a's and b's counters, then
 * close both (either may be closed already). */
void h_pair_fini(struct h_ep *a, struct h_ep *b);
/* Send message number h->sent_seq++ of len bytes to peer; header of hdr_len
 * (>= 16) bytes.  Returns rmpp_send's result. */
int h_send(struct h_ep *h, struct h_ep *to, uint64_t len, size_t hdr_len);
/* The same through rmpp_send_lazy(). */
int h_send_lazy(struct h_ep *h, struct h_ep *to, uint64_t len, size_t hdr_len);
/* The same through rmpp_send_carry() with carry_len 16 (the receiver needs
 * carry set to unpack what was carried). */
int h_send_carry(struct h_ep *h, struct h_ep *to, uint64_t len);
/* The same through rmpp_send_flags() (16-byte header, no carrying). */
int h_send_flags(struct h_ep *h, struct h_ep *to, uint64_t len, unsigned flags);
/* Drive all endpoints until cond(arg) or timeout; returns true if cond. */
typedef bool (*h_cond_fn)(void *arg);
bool h_run(struct h_ep **eps, int n, h_cond_fn cond, void *arg, int timeout_ms);
/* Convenience: run a and b until b has received `count` messages and a has
 * `count` send completions. */
bool h_run_pair(struct h_ep *a, struct h_ep *b, unsigned count, int timeout_ms);
void h_counters(struct h_ep *h, struct rmpp_counters *c);
void h_dump(const char *name, struct h_ep *h);
uint64_t h_now_us(void);
/* A free UDP port on 127.0.0.1 below the kernel's ephemeral range
 * (ip_local_port_range): an endpoint that is "restarted" on the same port
 * must find it free again, and a port the kernel never hands out to
 * port-0 binds (another job's or our own connected send sockets) is not
 * taken in between, however few ephemeral ports are left.  0 if none. */
uint16_t h_fixed_port(void);

struct Suite; /* check.h */
struct TTest;
/* Run every test of the suite s (check's CK_NORMAL output) and return the
 * program's exit status: EXIT_SUCCESS when none failed. */
int h_run_suite(struct Suite *s);
/* The main of a test program: one suite `name` of one test case with the
 * fixture setup/teardown (NULL: none) run around each test, timeout_s per
 * test, the tests of the NULL-terminated list; RMPP_TEST=<substring> keeps
 * only the tests whose name contains it.  Returns h_run_suite's status. */
int h_run_tests(const char *name, void (*setup)(void), void (*teardown)(void), int timeout_s,
                const struct TTest *const *tests);

#endif
