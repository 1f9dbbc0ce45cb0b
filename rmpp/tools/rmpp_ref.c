/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rmpp_ref.c - reference numbers for the rmpp stack: raw UDP ping-pong and
 * stream between two processes on loopback (what the kernel alone gives),
 * and the same two patterns over librmpp (what the protocol costs on top).
 *
 *   rmpp-ref udp-pingpong|udp-stream|rmpp-pingpong|rmpp-stream
 *            [-m max_size] [-n iters] [-b] [-q]
 *   -b  busy-poll (non-blocking receive loop / rmpp_progress(ep, 0))
 *   -q  print counters of the rmpp endpoints at the end
 * The program forks: the child is the echo/sink side.
 *
 *   rmpp-ref ether-echo IFNAME EP_ID            (run first, e.g. in netns B)
 *   rmpp-ref ether-pingpong IFNAME PEER_MAC PEER_EP_ID [-m max] [-n iters] [-b]
 * run the rmpp ping-pong over raw Ethernet between two processes that may
 * live in different network namespaces (veth pair); needs CAP_NET_RAW.
 *   rmpp-ref xdp-echo / xdp-pingpong: the same over the AF_XDP link (root).
 *   rmpp-ref xdp-probe IFNAME: open and close an AF_XDP endpoint, print how
 *   the link runs (exit 1, with the link's message, if it cannot).
 * Output: one line per
 * size, "size  latency_us" (half round trip) or "size  MB/s".
 *
 *   rmpp-ref crc [-m size] [-n iters]
 * CRC32C paths side by side in one run, per buffer of `size` bytes (default
 * 9000, the udp frame) in cache: tables, crc32 instruction, carry-less fold,
 * memcpy then CRC, and the fold's copy+CRC; microseconds per buffer.
 */
#include "rmpp.h"
#include "rmpp_wire.h"
#include "p3num.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int busy, iters = 1000, iters_set, show_ctr;
static size_t max_size;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int iters_for(size_t s)
{
	int n = iters;
	if (s >= 65536)
		n = iters / 10 > 10 ? iters / 10 : 10;
	if (s >= 1 << 20)
		n = iters / 100 > 5 ? iters / 100 : 5;
	return n;
}

/* ---- raw UDP ------------------------------------------------------------------- */

static int udp_sock(uint16_t *port)
{
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	int big = 8 << 20;
	setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
	setsockopt(s, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big));
	int pmtu = IP_PMTUDISC_DO;
	setsockopt(s, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (bind(s, (struct sockaddr *)&a, sizeof(a)) != 0) {
		perror("bind");
		exit(1);
	}
	socklen_t l = sizeof(a);
	getsockname(s, (struct sockaddr *)&a, &l);
	*port = ntohs(a.sin_port);
	return s;
}

static ssize_t urecv(int s, void *buf, size_t len)
{
	for (;;) {
		ssize_t r = recv(s, buf, len, busy ? MSG_DONTWAIT : 0);
		if (r >= 0)
			return r;
		if (errno != EAGAIN && errno != EINTR)
			return -1;
	}
}

static void udp_connect(int s, uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				.sin_port = htons(port)};
	connect(s, (struct sockaddr *)&a, sizeof(a));
}

static void udp_run(int stream)
{
	uint16_t pport, cport;
	int ps = udp_sock(&pport), cs = udp_sock(&cport);
	size_t maxs = max_size ? max_size : 65507;
	if (maxs > 65507)
		maxs = 65507;
	char *buf = calloc(1, 65536);
	pid_t pid = fork();
	if (pid == 0) { /* echo / sink */
		close(ps);
		udp_connect(cs, pport);
		for (;;) {
			ssize_t r = urecv(cs, buf, 65536);
			if (r < 0)
				_exit(1);
			if (r == 1 && buf[0] == 'Q')
				_exit(0);
			if (!stream || (r == 1 && buf[0] == 'E'))
				send(cs, buf, stream ? 1 : (size_t)r, 0);
		}
	}
	close(cs);
	udp_connect(ps, cport);
	printf("# rmpp-ref %s (raw UDP, loopback, %s)\n# %-10s %s\n",
	       stream ? "udp-stream" : "udp-pingpong", busy ? "busy poll" : "blocking", "size",
	       stream ? "MB/s" : "latency_us");
	for (size_t s = 1; s <= maxs; s = s * 2 > maxs && s < maxs ? maxs : s * 2) {
		int n = iters_for(s);
		double t0 = now_s();
		if (!stream) {
			for (int i = 0; i < n; i++) {
				buf[0] = 'P';
				send(ps, buf, s, 0);
				urecv(ps, buf, 65536);
			}
			printf("  %-10zu %.2f\n", s, (now_s() - t0) / n / 2 * 1e6);
		} else {
			/* windows of 64 datagrams, each window acknowledged */
			long sent = 0;
			for (int w = 0; w < n; w++) {
				for (int k = 0; k < 64; k++) {
					buf[0] = 'D';
					if (send(ps, buf, s < 2 ? 2 : s, 0) > 0)
						sent++;
				}
				buf[0] = 'E';
				send(ps, buf, 1, 0);
				urecv(ps, buf, 65536);
			}
			double dt = now_s() - t0;
			printf("  %-10zu %.1f\n", s, (double)sent * (double)s / dt / 1e6);
		}
		fflush(stdout);
		if (s == maxs)
			break;
	}
	buf[0] = 'Q';
	send(ps, buf, 1, 0);
	waitpid(pid, NULL, 0);
	free(buf);
}

/* ---- rmpp ---------------------------------------------------------------------------- */

struct rstate {
	struct rmpp_ep *ep;
	char *rbuf;
	struct iovec riov;
	struct rmpp_addr src;
	unsigned rx_done, tx_done;
	uint64_t last_len;
};

static int r_hdr(void *arg, const struct rmpp_addr *src, const void *hdr, size_t hdr_len,
		 uint64_t msg_len, struct rmpp_rx_accept *acc)
{
	struct rstate *st = arg;
	st->riov.iov_base = st->rbuf;
	st->riov.iov_len = msg_len;
	acc->iov = &st->riov;
	acc->niov = 1;
	acc->accepted = msg_len;
	acc->cookie = NULL;
	st->last_len = msg_len;
	st->src = *src;
	(void)hdr;
	(void)hdr_len;
	return RMPP_RX_ACCEPT;
}

static void r_rx_done(void *arg, void *cookie, int status, uint64_t accepted)
{
	struct rstate *st = arg;
	st->rx_done++;
	(void)cookie;
	(void)status;
	(void)accepted;
}

static void r_tx_done(void *arg, void *cookie, int status, uint64_t accepted)
{
	struct rstate *st = arg;
	st->tx_done++;
	(void)cookie;
	(void)status;
	(void)accepted;
}

static const char *ether_if;
static enum rmpp_link_type ether_link = RMPP_LINK_ETHER; /* or RMPP_LINK_XDP */

static void r_open(struct rstate *st, size_t maxs, uint16_t ep_id)
{
	memset(st, 0, sizeof(*st));
	st->rbuf = calloc(1, maxs + 1);
	struct rmpp_ep_attr a = {.link = ether_if ? ether_link : RMPP_LINK_UDP,
				 .ifname = ether_if,
				 .udp_addr = "127.0.0.1",
				 .ep_id = ep_id,
				 .cb = {.rx_hdr = r_hdr,
					.rx_done = r_rx_done,
					.tx_done = r_tx_done,
					.arg = st}};
	int rc = rmpp_ep_create(&a, &st->ep);
	if (rc) {
		fprintf(stderr, "rmpp_ep_create: %s\n", strerror(-rc));
		exit(1);
	}
}

static void r_wait(struct rstate *st, unsigned *ctr, unsigned target)
{
	while (*ctr < target)
		rmpp_progress(st->ep, busy ? 0 : -1);
}

static void rmpp_run(int stream)
{
	size_t maxs = max_size ? max_size : 4u << 20;
	int up[2], down[2]; /* child -> parent, parent -> child */
	if (pipe(up) != 0 || pipe(down) != 0)
		exit(1);
	struct rstate st;
	struct rmpp_addr me, peer;
	char *sbuf = calloc(1, maxs + 1);
	const char hdr[64] = "rmpp-ref";
	pid_t pid = fork();
	if (pid == 0) {
		r_open(&st, maxs, 2);
		rmpp_ep_addr(st.ep, &me);
		if (write(up[1], &me, sizeof(me)) != sizeof(me) ||
		    read(down[0], &peer, sizeof(peer)) != sizeof(peer))
			_exit(1);
		unsigned expect = 0;
		for (;;) {
			r_wait(&st, &st.rx_done, ++expect);
			if (st.last_len == 1 && st.rbuf[0] == 'Q')
				break;
			if (!stream || (st.last_len == 1 && st.rbuf[0] == 'E')) {
				struct iovec v = {sbuf, st.last_len};
				rmpp_send(st.ep, &peer, hdr, sizeof(hdr), &v, 1, 0,
					  stream ? 1 : st.last_len, NULL);
			}
		}
		/* let the last acks go out */
		for (int i = 0; i < 100; i++)
			rmpp_progress(st.ep, 1);
		if (show_ctr) {
			struct rmpp_counters c;
			rmpp_counters_get(st.ep, &c);
			fprintf(stderr, "# echo side counters\n");
			rmpp_counters_print(&c, stderr);
		}
		rmpp_ep_destroy(st.ep);
		_exit(0);
	}
	if (read(up[0], &peer, sizeof(peer)) != sizeof(peer))
		exit(1);
	r_open(&st, maxs, 1);
	rmpp_ep_addr(st.ep, &me);
	if (write(down[1], &me, sizeof(me)) != sizeof(me))
		exit(1);
	printf("# rmpp-ref %s (librmpp over UDP, loopback, %s, mtu %zu)\n# %-10s %s\n",
	       stream ? "rmpp-stream" : "rmpp-pingpong", busy ? "busy poll" : "spin then block",
	       rmpp_ep_mtu(st.ep), "size", stream ? "MB/s" : "latency_us");
	for (size_t s = 1; s <= maxs; s *= 2) {
		int n = iters_for(s);
		struct iovec v = {sbuf, s};
		sbuf[0] = 'D';
		double t0 = now_s();
		if (!stream) {
			for (int i = 0; i < n; i++) {
				rmpp_send(st.ep, &peer, hdr, sizeof(hdr), &v, 1, 0, s, NULL);
				r_wait(&st, &st.rx_done, st.rx_done + 1);
			}
			printf("  %-10zu %.2f\n", s, (now_s() - t0) / n / 2 * 1e6);
		} else {
			unsigned base = st.tx_done;
			int win = s >= 65536 ? 8 : 64;
			for (int w = 0; w < n; w++) {
				for (int k = 0; k < win; k++)
					rmpp_send(st.ep, &peer, hdr, sizeof(hdr), &v, 1, 0, s, NULL);
				struct iovec e = {(char *)"E", 1};
				rmpp_send(st.ep, &peer, hdr, sizeof(hdr), &e, 1, 0, 1, NULL);
				r_wait(&st, &st.rx_done, st.rx_done + 1);
			}
			r_wait(&st, &st.tx_done, base + (unsigned)(n * (win + 1)));
			double dt = now_s() - t0;
			printf("  %-10zu %.1f\n", s, (double)n * win * (double)s / dt / 1e6);
		}
		fflush(stdout);
	}
	struct iovec q = {(char *)"Q", 1};
	rmpp_send(st.ep, &peer, hdr, sizeof(hdr), &q, 1, 0, 1, NULL);
	r_wait(&st, &st.tx_done, st.tx_done + 1);
	waitpid(pid, NULL, 0);
	if (show_ctr) {
		struct rmpp_counters c;
		rmpp_counters_get(st.ep, &c);
		fprintf(stderr, "# initiator counters\n");
		rmpp_counters_print(&c, stderr);
	}
	rmpp_ep_destroy(st.ep);
	free(sbuf);
}

static int xdp_probe(const char *ifname)
{
	struct rmpp_ep *ep;
	struct rmpp_ep_attr a = {.link = RMPP_LINK_XDP, .ifname = ifname, .ep_id = 1};
	int rc = rmpp_ep_create(&a, &ep);
	if (rc) {
		fprintf(stderr, "xdp-probe: rmpp_ep_create on %s: %s\n", ifname, strerror(-rc));
		return 1;
	}
	char d[64];
	printf("%s on %s, mtu %zu\n", rmpp_ep_link_desc(ep, d, sizeof(d)), ifname, rmpp_ep_mtu(ep));
	rmpp_ep_destroy(ep);
	return 0;
}

/* Two-process raw Ethernet ping-pong (no fork: each side may sit in its
 * own network namespace). */
static int ether_main(int echo, int argc, char **argv)
{
	struct rstate st;
	struct rmpp_addr peer;
	size_t maxs = max_size ? max_size : 1u << 20;
	const char hdr[64] = "rmpp-ref";
	char *sbuf = calloc(1, maxs + 1);
	ether_if = argv[0];
	r_open(&st, maxs,
	       (uint16_t)(echo ? p3num_arg_u64("rmpp-ref", "EP_ID", argv[1], 0, 65535, 0) : 1));
	struct rmpp_addr me;
	char b[64];
	rmpp_ep_addr(st.ep, &me);
	fprintf(stderr, "# %s on %s\n", rmpp_addr_str(&me, b, sizeof(b)), ether_if);
	if (echo) {
		unsigned expect = 0;
		for (;;) {
			r_wait(&st, &st.rx_done, ++expect);
			if (st.last_len == 1 && st.rbuf[0] == 'Q')
				break;
			/* the echo answers whoever pinged: the client is ep 1 */
			peer = st.src;
			struct iovec v = {sbuf, st.last_len};
			rmpp_send(st.ep, &peer, hdr, sizeof(hdr), &v, 1, 0, st.last_len, NULL);
		}
		for (int i = 0; i < 100; i++)
			rmpp_progress(st.ep, 1);
	} else {
		unsigned m[6];
		uint8_t mac[6];
		if (argc < 3 || sscanf(argv[1], "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3],
				       &m[4], &m[5]) != 6) {
			fprintf(stderr, "bad MAC\n");
			return 2;
		}
		for (int i = 0; i < 6; i++)
			mac[i] = (uint8_t)m[i];
		rmpp_addr_ether(
		    &peer, mac,
		    (uint16_t)p3num_arg_u64("rmpp-ref", "PEER_EP_ID", argv[2], 0, 65535, 0));
		char ld[64];
		printf("# rmpp-ref %s-pingpong (librmpp over %s on %s, %s, mtu %zu)\n"
		       "# %-10s latency_us\n",
		       ether_link == RMPP_LINK_XDP ? "xdp" : "ether",
		       rmpp_ep_link_desc(st.ep, ld, sizeof(ld)), ether_if,
		       busy ? "busy poll" : "spin then block", rmpp_ep_mtu(st.ep), "size");
		for (size_t s = 1; s <= maxs; s *= 2) {
			int n = iters_for(s);
			struct iovec v = {sbuf, s};
			sbuf[0] = 'D';
			double t0 = now_s();
			for (int i = 0; i < n; i++) {
				rmpp_send(st.ep, &peer, hdr, sizeof(hdr), &v, 1, 0, s, NULL);
				r_wait(&st, &st.rx_done, st.rx_done + 1);
			}
			printf("  %-10zu %.2f\n", s, (now_s() - t0) / n / 2 * 1e6);
			fflush(stdout);
		}
		struct iovec q = {(char *)"Q", 1};
		rmpp_send(st.ep, &peer, hdr, sizeof(hdr), &q, 1, 0, 1, NULL);
		r_wait(&st, &st.tx_done, st.tx_done + 1);
	}
	if (show_ctr) {
		struct rmpp_counters c;
		rmpp_counters_get(st.ep, &c);
		rmpp_counters_print(&c, stderr);
	}
	rmpp_ep_destroy(st.ep);
	free(sbuf);
	return 0;
}

static double crc_now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* One path: microseconds per call over n calls (best of 3). */
static double crc_time(int path, uint8_t *dst, const uint8_t *src, size_t len, int n,
                       uint32_t *sink)
{
	double best = 0;
	for (int r = 0; r < 3; r++) {
		uint32_t c = 0;
		double t0 = crc_now_us();
		for (int i = 0; i < n; i++) {
			switch (path) {
			case 0:
				c = rmpp_crc32c_sw(c, src, len);
				break;
			case 1:
				c = rmpp_crc32c_word(c, src, len);
				break;
			case 2:
				c = rmpp_crc32c_fold(c, src, len);
				break;
			case 3:
				memcpy(dst, src, len);
				c = rmpp_crc32c_word(c, dst, len);
				break;
			default:
				c = rmpp_crc32c_copy(c, dst, src, len);
				break;
			}
		}
		double t = (crc_now_us() - t0) / n;
		*sink ^= c;
		if (r == 0 || t < best)
			best = t;
	}
	return best;
}

static int crc_main(void)
{
	size_t len = max_size ? (size_t)max_size : 9000;
	int n = iters_set && iters > 0 ? iters : 100000;
	uint8_t *src = malloc(len + 64), *dst = malloc(len + 64);
	if (!src || !dst) {
		fprintf(stderr, "crc: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < len; i++)
		src[i] = (uint8_t)(i * 131 + 7);
	uint32_t sink = 0;
	static const char *names[] = {"tables", "crc32-insn", "fold", "memcpy+crc32-insn",
	                              "copy+fold"};
	printf("# CRC32C of %zu bytes in cache, us per buffer (best of 3 x %d calls, tables x "
	       "1/10); fold %s\n",
	       len, n,
	       rmpp_crc32c_fold_available() ? "available (AVX-512 VPCLMULQDQ)" : "not available");
	for (int path = 0; path < 5; path++)
		printf("%-20s %8.3f\n", names[path],
		       crc_time(path, dst, src, len, path ? n : n / 10, &sink));
	printf("# checksums xor %08x (keeps the loops)\n", sink);
	free(src);
	free(dst);
	return 0;
}

int main(int argc, char **argv)
{
	int opt;
	if (argc < 2) {
		fprintf(stderr,
		        "usage: %s udp-pingpong|udp-stream|rmpp-pingpong|rmpp-stream "
		        "[-m max_size] [-n iters] [-b] [-q]\n       %s config\n"
		        "       %s crc [-m size] [-n iters]\n",
		        argv[0], argv[0], argv[0]);
		return 2;
	}
	const char *mode = argv[1];
	if (!strncmp(mode, "xdp-", 4))
		ether_link = RMPP_LINK_XDP;
	if (!strcmp(mode, "xdp-probe"))
		return argc < 3 ? 2 : xdp_probe(argv[2]);
	int ether_echo = !strcmp(mode, "ether-echo") || !strcmp(mode, "xdp-echo"),
	    ether_ping = !strcmp(mode, "ether-pingpong") || !strcmp(mode, "xdp-pingpong");
	int npos = ether_echo ? 2 : ether_ping ? 3 : 0;
	if (argc < 2 + npos) {
		fprintf(stderr, "%s: missing arguments\n", mode);
		return 2;
	}
	optind = 2 + npos;
	while ((opt = getopt(argc, argv, "m:n:bq")) != -1) {
		switch (opt) {
		case 'm':
			max_size =
			    p3num_arg_u64("rmpp-ref", "-m", optarg, 0, 1ull << 30, P3NUM_BASE0);
			break;
		case 'n':
			iters = (int)p3num_arg_u64("rmpp-ref", "-n", optarg, 1, INT_MAX, 0);
			iters_set = 1;
			break;
		case 'b':
			busy = 1;
			break;
		case 'q':
			show_ctr = 1;
			break;
		default:
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	if (ether_echo || ether_ping)
		return ether_main(ether_echo, npos, argv + 2);
	if (!strcmp(mode, "udp-pingpong"))
		udp_run(0);
	else if (!strcmp(mode, "udp-stream"))
		udp_run(1);
	else if (!strcmp(mode, "rmpp-pingpong"))
		rmpp_run(0);
	else if (!strcmp(mode, "rmpp-stream"))
		rmpp_run(1);
	else if (!strcmp(mode, "config"))
		rmpp_config_print(NULL, stdout);
	else if (!strcmp(mode, "crc"))
		return crc_main();
	else {
		fprintf(stderr, "unknown mode %s\n", mode);
		return 2;
	}
	return 0;
}
