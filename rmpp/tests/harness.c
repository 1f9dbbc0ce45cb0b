/* SPDX-License-Identifier: BSD-3-Clause */
/* harness.c - test endpoints: patterned data, ordering and content checks. */
#include "harness.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define H_MAGIC 0x54455354u

struct h_hdr {
	uint32_t magic;
	uint32_t seq;
	uint64_t len;
};

struct h_rx {
	struct h_ep *h;
	uint32_t seq;
	uint64_t len, accepted;
	unsigned char *buf, *raw;
	struct iovec iov[3];
};

struct h_tx {
	unsigned char *buf;
};

uint16_t h_fixed_port(void)
{
	unsigned lo = 32768, hi = 60999;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	if (f) {
		if (fscanf(f, "%u %u", &lo, &hi) != 2)
			lo = 32768;
		fclose(f);
	}
	if (lo <= 12000)
		return 0;
	/* start somewhere per process: tests of other directories run at once */
	unsigned span = lo - 11000, start = (unsigned)getpid() * 7919u % span;
	for (unsigned i = 0; i < span && i < 4096; i++) {
		uint16_t port = (uint16_t)(11000 + (start + i) % span);
		int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (s < 0)
			return 0;
		struct sockaddr_in sa = {.sin_family = AF_INET,
					 .sin_port = htons(port),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		int ok = bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		close(s);
		if (ok)
			return port;
	}
	return 0;
}

uint64_t h_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static inline unsigned char pat(uint32_t seq, uint64_t i)
{
	return (unsigned char)(seq * 131u + i * 7u + (i >> 9));
}

static void fill(unsigned char *b, uint32_t seq, uint64_t len)
{
	for (uint64_t i = 0; i < len; i++)
		b[i] = pat(seq, i);
}

/* arrival bookkeeping of one message header: order, duplicates */
static void rx_record(struct h_ep *h, uint32_t seq)
{
	if (h->rx_hdr_calls <= 16)
		h->arrival[h->rx_hdr_calls - 1] = seq;
	if (seq != h->next_seq)
		h->order_errors++;
	if (seq < H_MAX_SEQ) {
		if (h->seen[seq])
			h->dup_errors++;
		h->seen[seq] = 1;
	}
	h->next_seq = seq + 1;
}

/* a carried header: a whole payload-less message of its own */
static void rx_carried(struct h_ep *h, const unsigned char *p)
{
	struct h_hdr hh;
	memcpy(&hh, p, sizeof(hh));
	ck_assert_uint_eq(hh.magic, H_MAGIC);
	ck_assert_uint_eq(hh.len, 0);
	h->rx_hdr_calls++;
	rx_record(h, hh.seq);
	h->rx_carried++;
	h->rx_ok++;
}

static int rx_hdr(void *arg, const struct rmpp_addr *src, const void *hdr, size_t hdr_len,
		  uint64_t msg_len, struct rmpp_rx_accept *acc)
{
	struct h_ep *h = arg;
	struct h_hdr hh;
	if (h->carry && hdr_len > sizeof(hh)) {
		ck_assert_uint_eq(hdr_len % sizeof(hh), 0);
		for (size_t at = sizeof(hh); at < hdr_len; at += sizeof(hh))
			rx_carried(h, (const unsigned char *)hdr + at);
		hdr_len = sizeof(hh);
	}
	h->rx_hdr_calls++;
	ck_assert_uint_ge(hdr_len, sizeof(hh));
	memcpy(&hh, hdr, sizeof(hh));
	ck_assert_uint_eq(hh.magic, H_MAGIC);
	ck_assert_uint_eq(hh.len, msg_len);
	for (size_t i = sizeof(hh); i < hdr_len; i++)
		ck_assert_uint_eq(((const unsigned char *)hdr)[i], (unsigned char)(i ^ hh.seq));
	if (h->defer_seq >= 0 && hh.seq == (uint32_t)h->defer_seq && h->deferring)
		return RMPP_RX_DEFER;
	rx_record(h, hh.seq);
	struct h_rx *r = calloc(1, sizeof(*r));
	ck_assert_ptr_nonnull(r);
	r->h = h;
	r->seq = hh.seq;
	r->len = msg_len;
	r->accepted = msg_len < h->accept_limit ? msg_len : h->accept_limit;
	/* three pieces and a 5-byte offset to exercise the scatter path; the
	 * guard bytes before and after must survive */
	r->raw = malloc(r->accepted + 10);
	ck_assert_ptr_nonnull(r->raw);
	memset(r->raw, 0x5a, r->accepted + 10);
	r->buf = r->raw + 5;
	uint64_t a = (r->accepted + 5) / 3, b = (r->accepted + 5) / 3;
	r->iov[0].iov_base = r->raw;
	r->iov[0].iov_len = a;
	r->iov[1].iov_base = r->raw + a;
	r->iov[1].iov_len = b;
	r->iov[2].iov_base = r->raw + a + b;
	r->iov[2].iov_len = r->accepted + 5 - a - b;
	acc->iov = r->iov;
	acc->niov = 3;
	acc->offset = 5;
	acc->accepted = r->accepted;
	acc->cookie = r;
	(void)src;
	return RMPP_RX_ACCEPT;
}

static void rx_done(void *arg, void *cookie, int status, uint64_t accepted)
{
	struct h_ep *h = arg;
	struct h_rx *r = cookie;
	if (status == 0) {
		h->rx_ok++;
		h->rx_bytes += accepted;
		h->last_accepted = accepted;
		if (accepted != r->accepted)
			h->data_errors++;
		for (uint64_t i = 0; i < r->accepted; i++)
			if (r->buf[i] != pat(r->seq, i)) {
				h->data_errors++;
				fprintf(stderr, "data error seq %u at %llu of %llu\n", r->seq,
					(unsigned long long)i, (unsigned long long)r->accepted);
				break;
			}
		for (int i = 0; i < 5; i++)
			if (r->raw[i] != 0x5a || r->raw[5 + r->accepted + i] != 0x5a)
				h->data_errors++;
	} else {
		h->rx_fail++;
	}
	free(r->raw);
	free(r);
}

static void tx_done(void *arg, void *cookie, int status, uint64_t accepted)
{
	struct h_ep *h = arg;
	struct h_tx *t = cookie;
	if (status == 0) {
		h->tx_ok++;
		h->tx_last_accepted = accepted;
	} else {
		h->tx_fail++;
		if (status == -ECONNRESET)
			h->tx_fail_reset++;
		if (status == -ETIMEDOUT)
			h->tx_fail_timeout++;
	}
	free(t->buf);
	free(t);
}

static void peer_event(void *arg, const struct rmpp_addr *peer, enum rmpp_peer_event ev,
		       uint32_t epoch)
{
	struct h_ep *h = arg;
	h->ev_time_us = h_now_us();
	switch (ev) {
	case RMPP_PEER_DEAD:
		h->ev_dead++;
		break;
	case RMPP_PEER_RESTARTED:
		h->ev_restarted++;
		break;
	case RMPP_PEER_CLOSED:
		h->ev_closed++;
		break;
	case RMPP_PEER_RESET:
		h->ev_reset++;
		break;
	}
	(void)peer;
	(void)epoch;
}

static int h_ep_open(struct h_ep *h, const struct rmpp_config *cfg, enum rmpp_link_type link,
		     const char *ifname, uint16_t port, uint16_t ep_id);

void h_ep_init(struct h_ep *h, const struct rmpp_config *cfg, uint16_t port, uint16_t ep_id)
{
	ck_assert_int_eq(h_ep_open(h, cfg, RMPP_LINK_UDP, NULL, port, ep_id), 0);
}

int h_ep_init_ether(struct h_ep *h, const struct rmpp_config *cfg, const char *ifname,
		    uint16_t ep_id)
{
	return h_ep_open(h, cfg, RMPP_LINK_ETHER, ifname, 0, ep_id);
}

static int h_ep_open(struct h_ep *h, const struct rmpp_config *cfg, enum rmpp_link_type link,
		     const char *ifname, uint16_t port, uint16_t ep_id)
{
	memset(h, 0, sizeof(*h));
	if (cfg)
		h->cfg = *cfg;
	else
		rmpp_config_init(&h->cfg);
	h->accept_limit = UINT64_MAX;
	h->defer_seq = -1;
	h->seen = calloc(H_MAX_SEQ, 1);
	struct rmpp_ep_attr attr = {
		.link = link,
		.ifname = ifname,
		.udp_addr = "127.0.0.1",
		.udp_port = port,
		.ep_id = ep_id,
		.cfg = &h->cfg,
		.cb = {.rx_hdr = rx_hdr,
		       .rx_done = rx_done,
		       .tx_done = tx_done,
		       .peer_event = peer_event,
		       .arg = h},
	};
	int rc = rmpp_ep_create(&attr, &h->ep);
	if (rc) {
		free(h->seen);
		h->seen = NULL;
		h->ep = NULL;
		return rc;
	}
	rmpp_ep_addr(h->ep, &h->addr);
	h->port = link == RMPP_LINK_UDP ? ntohs(h->addr.u.udp.port) : 0;
	return 0;
}

void h_ep_fini(struct h_ep *h)
{
	rmpp_ep_destroy(h->ep);
	h->ep = NULL;
	free(h->seen);
	h->seen = NULL;
}

void h_pair_fini(struct h_ep *a, struct h_ep *b)
{
	struct h_ep *both[2] = {a, b};
	for (int i = 0; i < 2; i++) {
		if (!both[i]->ep)
			continue;
		if (getenv("H_VERBOSE"))
			h_dump(i ? "B" : "A", both[i]);
		h_ep_fini(both[i]);
	}
}

enum h_how { H_PLAIN, H_LAZY, H_CARRY, H_FLAGS };

static int send_seq(struct h_ep *h, struct h_ep *to, uint64_t len, size_t hdr_len,
		    enum h_how how, unsigned flags)
{
	struct h_hdr hh = {.magic = H_MAGIC, .seq = h->sent_seq, .len = len};
	unsigned char hdr[RMPP_MAX_HDR + 16]; /* room for the oversize case */
	if (hdr_len < sizeof(hh))
		hdr_len = sizeof(hh);
	if (hdr_len > sizeof(hdr))
		hdr_len = sizeof(hdr);
	memcpy(hdr, &hh, sizeof(hh));
	for (size_t i = sizeof(hh); i < hdr_len; i++)
		hdr[i] = (unsigned char)(i ^ hh.seq);
	struct h_tx *t = calloc(1, sizeof(*t));
	t->buf = malloc(len + 1);
	fill(t->buf, hh.seq, len);
	/* the payload starts 3 bytes into a 3-piece iovec (offset path) */
	t->buf = realloc(t->buf, len + 4);
	memmove(t->buf + 3, t->buf, len);
	memset(t->buf, 0xee, 3);
	struct iovec iov[3] = {{t->buf, 1},
			       {t->buf + 1, 2 + len / 2},
			       {t->buf + 3 + len / 2, len - len / 2}};
	int rc = how == H_CARRY ? rmpp_send_carry(h->ep, &to->addr, hdr, hdr_len, iov, 3, 3, len, t,
						  sizeof(hh))
		 : how == H_LAZY ? rmpp_send_lazy(h->ep, &to->addr, hdr, hdr_len, iov, 3, 3, len, t)
		 : how == H_FLAGS
		         ? rmpp_send_flags(h->ep, &to->addr, hdr, hdr_len, iov, 3, 3, len, t, 0, flags)
		         : rmpp_send(h->ep, &to->addr, hdr, hdr_len, iov, 3, 3, len, t);
	if (rc == 0)
		h->sent_seq++;
	else {
		free(t->buf);
		free(t);
	}
	return rc;
}

int h_send(struct h_ep *h, struct h_ep *to, uint64_t len, size_t hdr_len)
{
	return send_seq(h, to, len, hdr_len, H_PLAIN, 0);
}

int h_send_lazy(struct h_ep *h, struct h_ep *to, uint64_t len, size_t hdr_len)
{
	return send_seq(h, to, len, hdr_len, H_LAZY, 0);
}

int h_send_carry(struct h_ep *h, struct h_ep *to, uint64_t len)
{
	return send_seq(h, to, len, 16, H_CARRY, 0);
}

int h_send_flags(struct h_ep *h, struct h_ep *to, uint64_t len, unsigned flags)
{
	return send_seq(h, to, len, 16, H_FLAGS, flags);
}

bool h_run(struct h_ep **eps, int n, h_cond_fn cond, void *arg, int timeout_ms)
{
	uint64_t end = h_now_us() + (uint64_t)timeout_ms * 1000u;
	for (;;) {
		if (cond && cond(arg))
			return true;
		if (h_now_us() >= end)
			return false;
		for (int i = 0; i < n; i++)
			if (eps[i]->ep)
				rmpp_progress(eps[i]->ep, 0);
	}
}

struct pair_cond {
	struct h_ep *a, *b;
	unsigned count;
};

static bool pair_done(void *arg)
{
	struct pair_cond *p = arg;
	return p->b->rx_ok + p->b->rx_fail >= p->count && p->a->tx_ok + p->a->tx_fail >= p->count;
}

bool h_run_pair(struct h_ep *a, struct h_ep *b, unsigned count, int timeout_ms)
{
	struct pair_cond p = {a, b, count};
	struct h_ep *eps[2] = {a, b};
	return h_run(eps, 2, pair_done, &p, timeout_ms);
}

void h_counters(struct h_ep *h, struct rmpp_counters *c)
{
	rmpp_counters_get(h->ep, c);
}

void h_dump(const char *name, struct h_ep *h)
{
	struct rmpp_counters c;
	h_counters(h, &c);
	fprintf(stderr, "--- %s: rx_ok %u rx_fail %u tx_ok %u tx_fail %u\n", name, h->rx_ok,
		h->rx_fail, h->tx_ok, h->tx_fail);
	rmpp_counters_print(&c, stderr);
}

int h_run_suite(struct Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int h_run_tests(const char *name, void (*setup)(void), void (*teardown)(void), int timeout_s,
                const struct TTest *const *tests)
{
	const char *only = getenv("RMPP_TEST");
	Suite *s = suite_create(name);
	TCase *tc = tcase_create(name);
	if (setup || teardown)
		tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, timeout_s);
	for (; *tests; tests++)
		if (!only || strstr((*tests)->name, only))
			tcase_add_test(tc, *tests);
	suite_add_tcase(s, tc);
	return h_run_suite(s);
}
