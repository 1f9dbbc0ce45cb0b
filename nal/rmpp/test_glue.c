/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_glue.c - the udp NAL under a stub LIB (no libportals3 needed): two NAL
 * instances on 127.0.0.1 exchange PUT headers and payloads of every size
 * class through librmpp; the stub's p3_lib_parse() calls recv() like LIB does
 * (including truncation, mlen < rlen, and drops, msg == NULL), and counts
 * p3_lib_finalize() calls and their status.  Then stop() with work in flight
 * must finalize it with PTL_NI_UNLINKED.
 */
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rmpp_nal.h"

/* ---- stub LIB ---------------------------------------------------------------- */

struct p3_lib {
	void *priv;
	int rank;
	uint8_t *buf; /* receive buffer */
	size_t buflen;
	uint64_t limit; /* accept at most this many bytes (truncation) */
	int drop;       /* drop the next request (msg == NULL) */
	unsigned parsed, fin_ok, fin_fail, fin_unlinked, drops;
	unsigned acks_lost;
	unsigned replies_lost;
	ptl_ni_fail_t ack_lost_status;
	unsigned types[8]; /* types of the first 8 parsed headers */
	uint64_t last_mlen;
};

struct p3_msg {
	int dummy;
};
static struct p3_msg rx_msg, tx_msg;

int p3_lib_parse(struct p3_lib *lib, const struct p3_hdr *hdr, void *nal_ctx)
{
	if (lib->parsed < 8)
		lib->types[lib->parsed] = hdr->type;
	lib->parsed++;
	if (hdr->type == P3_MSG_ACK) /* as LIB: nothing to receive */
		return p3_nal_udp_ops.recv(lib->priv, NULL, nal_ctx, NULL, 0, 0, 0, 0);
	if (lib->drop) {
		lib->drop = 0;
		return p3_nal_udp_ops.recv(lib->priv, NULL, nal_ctx, NULL, 0, 0, 0, hdr->rlength);
	}
	uint64_t mlen = hdr->rlength < lib->limit ? hdr->rlength : lib->limit;
	struct iovec iov = {lib->buf, lib->buflen};
	lib->last_mlen = mlen;
	return p3_nal_udp_ops.recv(lib->priv, &rx_msg, nal_ctx, &iov, 1, 16, mlen, hdr->rlength);
}

void p3_lib_finalize(struct p3_lib *lib, struct p3_msg *msg, ptl_ni_fail_t status)
{
	(void)msg;
	if (status == PTL_NI_OK)
		lib->fin_ok++;
	else if (status == PTL_NI_UNLINKED)
		lib->fin_unlinked++;
	else
		lib->fin_fail++;
}

void p3_lib_ack_lost(struct p3_lib *lib, ptl_process_id_t peer, ptl_handle_md_t mdh,
		     uint64_t link, ptl_ni_fail_t status)
{
	(void)peer;
	ck_assert_uint_eq(mdh, 77);
	ck_assert_uint_eq(link, 1234);
	lib->acks_lost++;
	lib->ack_lost_status = status;
}

void p3_lib_reply_lost(struct p3_lib *lib, ptl_process_id_t peer, ptl_handle_md_t mdh,
		       uint64_t offset, ptl_ni_fail_t status)
{
	(void)peer;
	ck_assert_uint_eq(mdh, 88);
	ck_assert_uint_eq(offset, 5);
	lib->replies_lost++;
	lib->ack_lost_status = status;
}

void p3_lib_count_drop(struct p3_lib *lib, uint64_t len)
{
	(void)len;
	lib->drops++;
}

ptl_process_id_t p3_lib_id(const struct p3_lib *lib)
{
	ptl_process_id_t id = {0x7f000001u, (ptl_pid_t)lib->rank};
	return id;
}

void p3_lib_log(const struct p3_lib *lib, int level, const char *fmt, ...)
{
	(void)lib;
	if (level > 1 && !getenv("H_VERBOSE"))
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

const char *p3_msg_type_name(unsigned int type)
{
	return type == P3_MSG_PUT ? "PUT" : "?";
}

/* ---- test ---------------------------------------------------------------------- */

static struct p3_lib L[2];
static const ptl_nid_t nids[2] = {0x7f000001u, 0x7f000001u};
static const ptl_pid_t pids[2] = {1, 2};

/* Both NAL instances with UDP ports base + 1 and base + 2; 0 or the
 * failing init's -errno (the instances made before it are gone again). */
static int up_on(unsigned base)
{
	char port[16];
	snprintf(port, sizeof(port), "%u", base);
	setenv("P3_RMPP_BASE_PORT", port, 1);
	for (int r = 0; r < 2; r++) {
		struct p3_nal_init_args a = {.requested_pid = PTL_PID_ANY,
					     .rank = r,
					     .nranks = 2,
					     .nidmap = nids,
					     .pidmap = pids};
		struct p3_nal_info info;
		memset(&L[r], 0, sizeof(L[r]));
		L[r].rank = r;
		L[r].buflen = (4u << 20) + 64;
		L[r].buf = calloc(1, L[r].buflen);
		L[r].limit = UINT64_MAX;
		int rc = p3_nal_udp_ops.init(&L[r], &a, &info, &L[r].priv);
		if (rc != 0) {
			for (int k = 0; k <= r; k++) {
				if (k < r) {
					p3_nal_udp_ops.stop(L[k].priv);
					p3_nal_udp_ops.destroy(L[k].priv);
				}
				free(L[k].buf);
			}
			return rc;
		}
		ck_assert_uint_eq(info.id.pid, pids[r]);
		ck_assert_uint_eq(info.id.nid, 0x7f000001u);
	}
	return 0;
}

/* The base port starts from this process' pid (test programs of other
 * directories run at the same time); another process may hold either port
 * (the NAL binds without SO_REUSEADDR): the next base, at most 64 times. */
static void up(void)
{
	unsigned base = 30000 + (unsigned)(getpid() % 20000);
	for (int tries = 1;; tries++) {
		int rc = up_on(base);
		if (rc != -EADDRINUSE || tries == 64) {
			ck_assert_msg(rc == 0, "udp NAL init on ports %u, %u: %s", base + 1,
			              base + 2, strerror(-rc));
			return;
		}
		unsigned next = 30000 + (base - 30000 + 2) % 20000;
		fprintf(stderr,
		        "test_glue: udp port %u or %u is held by another process: trying %u\n",
		        base + 1, base + 2, next);
		base = next;
	}
}

static void down(void)
{
	for (int r = 0; r < 2; r++) {
		p3_nal_udp_ops.stop(L[r].priv);
		p3_nal_udp_ops.destroy(L[r].priv);
		free(L[r].buf);
	}
}

static void hdr_init(struct p3_hdr *h, unsigned type, uint64_t len)
{
	memset(h, 0, sizeof(*h));
	h->type = type;
	h->src.nid = nids[0];
	h->src.pid = pids[0];
	h->dst.nid = nids[1];
	h->dst.pid = pids[1];
	h->rlength = len;
	h->payload_len = len;
	h->md_handle = PTL_INVALID_HANDLE;
}

static void put(uint64_t len, const uint8_t *src)
{
	struct p3_hdr h;
	memset(&h, 0, sizeof(h));
	h.type = P3_MSG_PUT;
	h.src.nid = nids[0];
	h.src.pid = pids[0];
	h.dst.nid = nids[1];
	h.dst.pid = pids[1];
	h.rlength = len;
	h.payload_len = len;
	h.md_handle = PTL_INVALID_HANDLE;
	struct iovec iov = {(void *)src, len + 8};
	ck_assert_int_eq(p3_nal_udp_ops.send(L[0].priv, &tx_msg, &h, &iov, 1, 8, len), 0);
}

static void run_until(unsigned tx_fin, unsigned rx_fin)
{
	for (int i = 0; i < 2000000; i++) {
		if (L[0].fin_ok + L[0].fin_fail >= tx_fin && L[1].fin_ok + L[1].fin_fail >= rx_fin)
			return;
		p3_nal_udp_ops.progress(L[0].priv, 0);
		p3_nal_udp_ops.progress(L[1].priv, 0);
	}
	ck_abort_msg("timeout: tx fin %u rx fin %u", L[0].fin_ok, L[1].fin_ok);
}

START_TEST(t_put_sizes)
{
	up();
	static const uint64_t sizes[] = {0, 1, 16384, 16385, 1 << 20, 4u << 20};
	uint8_t *src = malloc((4u << 20) + 16);
	for (size_t i = 0; i < (4u << 20) + 16; i++)
		src[i] = (uint8_t)(i * 13 + 1);
	unsigned n = 0;
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		memset(L[1].buf, 0, L[1].buflen);
		put(sizes[k], src);
		n++;
		run_until(n, n);
		ck_assert_uint_eq(L[1].parsed, n);
		ck_assert_uint_eq(L[1].last_mlen, sizes[k]);
		ck_assert_mem_eq(L[1].buf + 16, src + 8, sizes[k]);
	}
	/* truncation: the target accepts 1000 of 1 MiB */
	L[1].limit = 1000;
	memset(L[1].buf, 0, L[1].buflen);
	put(1 << 20, src);
	n++;
	run_until(n, n);
	ck_assert_mem_eq(L[1].buf + 16, src + 8, 1000);
	ck_assert_uint_eq(L[1].buf[16 + 1000], 0);
	/* a dropped request: no receive finalize, the send still completes */
	L[1].drop = 1;
	put(100000, src);
	run_until(n + 1, n);
	ck_assert_uint_eq(L[1].fin_ok, n);
	ck_assert_uint_eq(L[0].fin_ok, n + 1);
	ck_assert_uint_eq(L[0].fin_fail + L[1].fin_fail, 0);
	/* stop with a send in flight: finalized as PTL_NI_UNLINKED */
	put(4u << 20, src);
	p3_nal_udp_ops.stop(L[0].priv);
	ck_assert_uint_eq(L[0].fin_unlinked, 1);
	ck_assert_int_lt(p3_nal_udp_ops.send(L[0].priv, &tx_msg,
					     &(struct p3_hdr){.type = P3_MSG_PUT, .dst = {1, 2}},
					     NULL, 0, 0, 0),
			 0);
	ptl_sr_value_t v;
	ck_assert_int_eq(p3_nal_udp_ops.status(L[1].priv, PTL_SR_NAL_BASE + 0, &v), 0);
	ck_assert_uint_gt(v, 0); /* tx_pkts */
	unsigned long d;
	ck_assert_int_eq(p3_nal_udp_ops.dist(L[1].priv, (ptl_process_id_t){nids[0], pids[0]}, &d),
			 0);
	ck_assert_uint_eq(d, 1);
	free(src);
	down();
}
END_TEST

/* A held ACK travels in the next message's header and reaches LIB first;
 * a carried header that is not a payload-less ACK is a counted drop and the
 * message carrying it is still delivered. */
START_TEST(t_carried_ack)
{
	up();
	struct p3_hdr h;
	uint8_t src[64] = {0};
	put(0, src); /* the connection first */
	run_until(1, 1);
	hdr_init(&h, P3_MSG_ACK, 0);
	ck_assert_int_eq(p3_nal_udp_ops.send(L[0].priv, &tx_msg, &h, NULL, 0, 0, 0), 0);
	put(16, src);
	run_until(3, 2); /* ACK and PUT sent, the PUT received */
	ck_assert_uint_eq(L[1].parsed, 3);
	ck_assert_uint_eq(L[1].types[1], P3_MSG_ACK);
	ck_assert_uint_eq(L[1].types[2], P3_MSG_PUT);
	struct rmpp_counters c;
	rmpp_counters_get(((struct rnal *)L[0].priv)->rn_ep, &c);
	ck_assert_uint_eq(c.lazy_carried, 1);
	ck_assert_uint_eq(L[1].drops, 0);
	/* hostile: a PUT header where a carried ACK belongs */
	uint8_t wire[2 * P3_HDR_WIRE_LEN];
	hdr_init(&h, P3_MSG_PUT, 0);
	p3_hdr_pack(&h, wire);
	p3_hdr_pack(&h, wire + P3_HDR_WIRE_LEN);
	struct rmpp_addr to;
	struct rnal *rn0 = L[0].priv;
	ck_assert_int_eq(rnal_addr(rn0, (ptl_process_id_t){nids[1], pids[1]}, &to), 0);
	ck_assert_int_eq(rmpp_send(rn0->rn_ep, &to, wire, sizeof(wire), NULL, 0, 0, 0, &tx_msg),
			 0);
	run_until(4, 3);
	ck_assert_uint_eq(L[1].drops, 1);
	ck_assert_uint_eq(L[1].parsed, 4); /* the carrier still went to LIB */
	down();
}
END_TEST

/* A put that asked for an ACK (md_handle 77, link 1234) from L[0] to L[1]. */
static void put_acked(void)
{
	struct p3_hdr h;
	static uint8_t src[64];
	hdr_init(&h, P3_MSG_PUT, 16);
	h.md_handle = 77;
	h.md_offset = 1234;
	struct iovec iov = {src, sizeof(src)};
	ck_assert_int_eq(p3_nal_udp_ops.send(L[0].priv, &tx_msg, &h, &iov, 1, 0, 16), 0);
}

static unsigned watched(void)
{
	return atomic_load(&((struct rnal *)L[0].priv)->rn_nackwait);
}

/* progress L[0] (and L[1] unless silent) until *lost (L[0]'s count of lost
 * ACKs or REPLYs) reaches n; seconds */
static double until_lost_of(const unsigned *lost, unsigned n, int silent, double limit)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		double el = (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9;
		if (*lost >= n)
			return el;
		ck_assert_msg(el < limit, "no ACK/REPLY-lost report within %.1f s", limit);
		p3_nal_udp_ops.progress(L[0].priv, 1);
		if (!silent)
			p3_nal_udp_ops.progress(L[1].priv, 0);
	}
}

static double until_lost(unsigned n, int silent, double limit)
{
	return until_lost_of(&L[0].acks_lost, n, silent, limit);
}

/* A get (GetPuts alike): the target owes a REPLY */
static void get_request(void)
{
	struct p3_hdr h;
	hdr_init(&h, P3_MSG_GET, 0);
	h.rlength = 64;
	h.md_handle = 88;
	h.md_offset = 5;
	ck_assert_int_eq(p3_nal_udp_ops.send(L[0].priv, &tx_msg, &h, NULL, 0, 0, 0), 0);
}

/* The REPLY comes: the wait ends without a report.  The target closes its
 * NI after it got the request: the REPLY is reported lost (REPLY_END with
 * PEER_RESTARTED) at once -- before, the get waited forever. */
START_TEST(t_reply_closed)
{
	up();
	get_request();
	run_until(1, 1);
	ck_assert_uint_eq(watched(), 1);
	struct p3_hdr r;
	hdr_init(&r, P3_MSG_REPLY, 0);
	r.src = (ptl_process_id_t){nids[1], pids[1]};
	r.dst = (ptl_process_id_t){nids[0], pids[0]};
	r.md_handle = 88;
	r.md_offset = 5;
	ck_assert_int_eq(p3_nal_udp_ops.send(L[1].priv, &rx_msg, &r, NULL, 0, 0, 0), 0);
	for (int i = 0; i < 200000 && L[0].parsed < 1; i++) {
		p3_nal_udp_ops.progress(L[1].priv, 0);
		p3_nal_udp_ops.progress(L[0].priv, 0);
	}
	ck_assert_uint_eq(L[0].parsed, 1);
	ck_assert_uint_eq(watched(), 0);
	get_request();
	run_until(3, 3);
	ck_assert_uint_eq(watched(), 1);
	p3_nal_udp_ops.stop(L[1].priv);
	double s = until_lost_of(&L[0].replies_lost, 1, 1, 5.0);
	ck_assert_uint_eq(L[0].ack_lost_status, PTL_NI_PEER_RESTARTED);
	ck_assert_uint_eq(L[0].acks_lost, 0);
	ck_assert_uint_eq(watched(), 0);
	ck_assert_double_lt(s, 1.0);
	down();
}
END_TEST

/* The ACK comes: the wait ends without a report.  The target closes its NI
 * before acking: the put's ACK is reported lost (PEER_RESTARTED, the CLOSE)
 * at once. */
START_TEST(t_ack_closed)
{
	up();
	put_acked();
	run_until(1, 1);
	ck_assert_uint_eq(watched(), 1);
	struct p3_hdr a;
	hdr_init(&a, P3_MSG_ACK, 0);
	a.src = (ptl_process_id_t){nids[1], pids[1]};
	a.dst = (ptl_process_id_t){nids[0], pids[0]};
	a.md_handle = 77;
	a.md_offset = 1234;
	ck_assert_int_eq(p3_nal_udp_ops.send(L[1].priv, &rx_msg, &a, NULL, 0, 0, 0), 0);
	for (int i = 0; i < 200000 && L[0].parsed < 1; i++) {
		p3_nal_udp_ops.progress(L[1].priv, 0);
		p3_nal_udp_ops.progress(L[0].priv, 0);
	}
	ck_assert_uint_eq(L[0].parsed, 1);
	ck_assert_uint_eq(watched(), 0);
	put_acked();
	run_until(2, 2);
	ck_assert_uint_eq(watched(), 1);
	p3_nal_udp_ops.stop(L[1].priv);
	double s = until_lost(1, 1, 5.0);
	ck_assert_uint_eq(L[0].ack_lost_status, PTL_NI_PEER_RESTARTED);
	ck_assert_uint_eq(watched(), 0);
	ck_assert_double_lt(s, 1.0);
	down();
}
END_TEST

/* The target goes silent (a dead process that said nothing) after it got
 * the put: keepalive declares it dead after the peer-death timeout (here
 * DEAD_MIN_US 0.3 s) and the ACK is reported lost (PEER_DEAD). */
START_TEST(t_ack_dead)
{
	setenv("P3_RMPP_DEAD_MIN_US", "300000", 1);
	setenv("P3_RMPP_DEAD_TIMEOUTS", "3", 1);
	setenv("P3_RMPP_KEEPALIVE_US", "20000", 1);
	up();
	put_acked();
	run_until(1, 1);
	double s = until_lost(1, 1, 10.0);
	ck_assert_uint_eq(L[0].ack_lost_status, PTL_NI_PEER_DEAD);
	ck_assert_uint_eq(watched(), 0);
	ck_assert_double_ge(s, 0.3);
	down();
	unsetenv("P3_RMPP_DEAD_MIN_US");
	unsetenv("P3_RMPP_DEAD_TIMEOUTS");
	unsetenv("P3_RMPP_KEEPALIVE_US");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("nal-rmpp");
	TCase *tc = tcase_create("glue");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, t_put_sizes);
	tcase_add_test(tc, t_carried_ack);
	tcase_add_test(tc, t_ack_closed);
	tcase_add_test(tc, t_ack_dead);
	tcase_add_test(tc, t_reply_closed);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
