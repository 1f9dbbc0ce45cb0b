/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * p3-faultbridge - a user-space Ethernet bridge between two interfaces that
 * injects seeded faults into the frames it forwards: drop, duplicate,
 * reorder, delay and corrupt.  These kernels have no sch_netem, so this is
 * how wire-level duplication, delay, reordering and corruption reach the
 * RMPP tests; loss alone can also come from nftables (tools/p3-netns loss).
 *
 *   p3-faultbridge -a IF_A -b IF_B [--drop P] [--dup P] [--reorder P]
 *                  [--delay-us N] [--corrupt P] [--seed S] [--ethertype T]
 *                  [--only-udp-port N] [--duration S] [--stats FILE]
 *
 * Probabilities are fractions (0.01 = 1 %).  Only frames of --ethertype
 * (hex, e.g. 0x88b5) or UDP to/from --only-udp-port are subjected to faults;
 * everything else (ARP, ...) is forwarded untouched.  Statistics are printed
 * on SIGTERM/SIGINT or at the end of --duration, and written to --stats.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "p3num.h"

#define FB_MAX_FRAME 9216
#define FB_DELAY_SLOTS 1024

struct fb_rules {
	double drop, dup, reorder, corrupt;
	long delay_us;
	int ethertype;     /* -1: any */
	int udp_port;      /* -1: any */
};

struct fb_frame {
	uint64_t due_ns;
	int out_fd;
	size_t len;
	unsigned char data[FB_MAX_FRAME];
};

struct fb_stats {
	unsigned long forwarded, faulted_candidates, dropped, duplicated, reordered, delayed,
		corrupted, send_errors, kernel_drops;
};

static volatile sig_atomic_t fb_stop;
static struct fb_stats fb_st;
static struct fb_frame *fb_queue[FB_DELAY_SLOTS]; /* delayed/held frames (pointers: cheap to move) */
static size_t fb_queued;
static uint64_t fb_rng_state;

static void fb_on_signal(int sig)
{
	(void)sig;
	fb_stop = 1;
}

/* xorshift64*: deterministic for a given --seed. */
static double fb_rand(void)
{
	fb_rng_state ^= fb_rng_state >> 12;
	fb_rng_state ^= fb_rng_state << 25;
	fb_rng_state ^= fb_rng_state >> 27;
	return (double)((fb_rng_state * 2685821657736338717ULL) >> 11) / (double)(1ULL << 53);
}

static uint64_t fb_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int fb_open(const char *ifname)
{
	int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	if (fd < 0) {
		fprintf(stderr, "p3-faultbridge: socket(AF_PACKET): %s (needs CAP_NET_RAW)\n",
			strerror(errno));
		return -1;
	}
	struct sockaddr_ll sll = {0};
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = (int)if_nametoindex(ifname);
	if (sll.sll_ifindex == 0) {
		fprintf(stderr, "p3-faultbridge: no interface %s\n", ifname);
		close(fd);
		return -1;
	}
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		fprintf(stderr, "p3-faultbridge: bind %s: %s\n", ifname, strerror(errno));
		close(fd);
		return -1;
	}
	/* Deep receive buffers: frames arrive in bursts while we hold others. */
	int rcvbuf = 16 << 20;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	struct packet_mreq mr = {0};
	mr.mr_ifindex = sll.sll_ifindex;
	mr.mr_type = PACKET_MR_PROMISC;
	if (setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr)) < 0)
		fprintf(stderr, "p3-faultbridge: promiscuous %s: %s\n", ifname, strerror(errno));
	return fd;
}

/* Is this frame one the rules apply to? */
static int fb_is_candidate(const struct fb_rules *r, const unsigned char *f, size_t len)
{
	if (len < ETH_HLEN)
		return 0;
	int type = (f[12] << 8) | f[13];
	if (r->ethertype >= 0)
		return type == r->ethertype;
	if (r->udp_port >= 0) {
		if (type != ETH_P_IP || len < ETH_HLEN + sizeof(struct iphdr))
			return 0;
		const struct iphdr *ip = (const void *)(f + ETH_HLEN);
		size_t ihl = (size_t)ip->ihl * 4;
		if (ip->protocol != IPPROTO_UDP || ihl < 20 || len < ETH_HLEN + ihl + 8)
			return 0;
		const unsigned char *udp = f + ETH_HLEN + ihl;
		int sport = (udp[0] << 8) | udp[1], dport = (udp[2] << 8) | udp[3];
		return sport == r->udp_port || dport == r->udp_port;
	}
	return 1;
}

static void fb_send(int fd, const unsigned char *f, size_t len)
{
	if (send(fd, f, len, 0) < 0)
		fb_st.send_errors++;
	else
		fb_st.forwarded++;
}

static void fb_hold(int out_fd, const unsigned char *f, size_t len, uint64_t due)
{
	if (fb_queued == FB_DELAY_SLOTS) { /* full: send the oldest now */
		struct fb_frame *o = fb_queue[0];
		fb_send(o->out_fd, o->data, o->len);
		free(o);
		memmove(&fb_queue[0], &fb_queue[1], (FB_DELAY_SLOTS - 1) * sizeof(*fb_queue));
		fb_queued--;
	}
	struct fb_frame *q = malloc(sizeof(*q));
	if (!q) { /* out of memory: forward at once rather than lose it */
		fb_send(out_fd, f, len);
		return;
	}
	q->due_ns = due;
	q->out_fd = out_fd;
	q->len = len;
	memcpy(q->data, f, len);
	fb_queue[fb_queued++] = q;
}

/* Send every held frame that is due; returns ms until the next one (-1 none). */
static int fb_flush_due(void)
{
	uint64_t now = fb_now_ns(), next = UINT64_MAX;
	size_t kept = 0;
	for (size_t i = 0; i < fb_queued; i++) {
		struct fb_frame *q = fb_queue[i];
		if (q->due_ns <= now) {
			fb_send(q->out_fd, q->data, q->len);
			free(q);
		} else {
			if (q->due_ns < next)
				next = q->due_ns;
			fb_queue[kept++] = q;
		}
	}
	fb_queued = kept;
	if (next == UINT64_MAX)
		return -1;
	return (int)((next - now) / 1000000ULL) + 1;
}

static void fb_forward(const struct fb_rules *r, int out_fd, unsigned char *f, size_t len)
{
	if (!fb_is_candidate(r, f, len)) {
		fb_send(out_fd, f, len);
		return;
	}
	fb_st.faulted_candidates++;
	if (fb_rand() < r->drop) {
		fb_st.dropped++;
		return;
	}
	if (fb_rand() < r->corrupt && len > ETH_HLEN) {
		/* Flip one bit past the Ethernet header: the payload checksum must catch it. */
		size_t at = ETH_HLEN + (size_t)(fb_rand() * (double)(len - ETH_HLEN));
		if (at >= len)
			at = len - 1;
		f[at] ^= (unsigned char)(1u << (int)(fb_rand() * 8));
		fb_st.corrupted++;
	}
	int copies = fb_rand() < r->dup ? 2 : 1;
	if (copies == 2)
		fb_st.duplicated++;
	uint64_t now = fb_now_ns();
	for (int c = 0; c < copies; c++) {
		if (fb_rand() < r->reorder) {
			/* Hold it back behind the next frames: 0.5-2 ms. */
			fb_st.reordered++;
			fb_hold(out_fd, f, len, now + 500000ULL + (uint64_t)(fb_rand() * 1.5e6));
		} else if (r->delay_us > 0) {
			fb_st.delayed++;
			fb_hold(out_fd, f, len, now + (uint64_t)r->delay_us * 1000ULL);
		} else {
			fb_send(out_fd, f, len);
		}
	}
}

static void fb_print_stats(FILE *out)
{
	fprintf(out,
		"forwarded %lu candidates %lu dropped %lu duplicated %lu reordered %lu delayed %lu "
		"corrupted %lu send_errors %lu kernel_drops %lu\n",
		fb_st.forwarded, fb_st.faulted_candidates, fb_st.dropped, fb_st.duplicated,
		fb_st.reordered, fb_st.delayed, fb_st.corrupted, fb_st.send_errors, fb_st.kernel_drops);
}

static void fb_usage(FILE *out)
{
	fprintf(out,
		"usage: p3-faultbridge -a IF_A -b IF_B [--drop P] [--dup P] [--reorder P]\n"
		"                      [--delay-us N] [--corrupt P] [--seed S] [--ethertype T]\n"
		"                      [--only-udp-port N] [--duration SEC] [--stats FILE]\n"
		"Forwards frames between IF_A and IF_B, injecting seeded faults.\n"
		"Probabilities are fractions (0.01 = 1 %%).\n");
}

static double fb_parse_prob(const char *opt, const char *s)
{
	return p3num_arg_dbl("p3-faultbridge", opt, s, 0, 1);
}

/* An integer option in 0-max (C forms: 0x88b5), or exit 2 with the reason. */
static uint64_t fb_parse_num(const char *opt, const char *s, uint64_t max)
{
	return p3num_arg_u64("p3-faultbridge", opt, s, 0, max, P3NUM_BASE0);
}

int main(int argc, char **argv)
{
	struct fb_rules r = {.ethertype = -1, .udp_port = -1};
	const char *ifa = NULL, *ifb = NULL, *stats = NULL;
	long duration = 0;
	unsigned long long seed = 1;
	static const struct option opts[] = {
		{"drop", 1, 0, 'd'},        {"dup", 1, 0, 'u'},     {"reorder", 1, 0, 'r'},
		{"delay-us", 1, 0, 'l'},    {"corrupt", 1, 0, 'c'}, {"seed", 1, 0, 's'},
		{"ethertype", 1, 0, 'e'},   {"only-udp-port", 1, 0, 'p'},
		{"duration", 1, 0, 't'},    {"stats", 1, 0, 'o'},   {"help", 0, 0, 'h'},
		{0, 0, 0, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "a:b:h", opts, NULL)) != -1) {
		switch (c) {
		case 'a': ifa = optarg; break;
		case 'b': ifb = optarg; break;
		case 'd': r.drop = fb_parse_prob("--drop", optarg); break;
		case 'u': r.dup = fb_parse_prob("--dup", optarg); break;
		case 'r': r.reorder = fb_parse_prob("--reorder", optarg); break;
		case 'c': r.corrupt = fb_parse_prob("--corrupt", optarg); break;
		case 'l': r.delay_us = (long)fb_parse_num("--delay-us", optarg, 60000000); break;
		case 's': seed = fb_parse_num("--seed", optarg, UINT64_MAX); break;
		case 'e': r.ethertype = (int)fb_parse_num("--ethertype", optarg, 0xffff); break;
		case 'p': r.udp_port = (int)fb_parse_num("--only-udp-port", optarg, 65535); break;
		case 't': duration = (long)fb_parse_num("--duration", optarg, 31536000); break;
		case 'o': stats = optarg; break;
		case 'h': fb_usage(stdout); return 0;
		default: fb_usage(stderr); return 2;
		}
	}
	if (!ifa || !ifb) {
		fb_usage(stderr);
		return 2;
	}
	fb_rng_state = seed ? seed : 0x9E3779B97F4A7C15ULL;
	int fa = fb_open(ifa), fbd = fb_open(ifb);
	if (fa < 0 || fbd < 0)
		return 1;
	signal(SIGINT, fb_on_signal);
	signal(SIGTERM, fb_on_signal);
	uint64_t end = duration > 0 ? fb_now_ns() + (uint64_t)duration * 1000000000ULL : 0;
	static unsigned char buf[FB_MAX_FRAME];
	struct pollfd pf[2] = {{.fd = fa, .events = POLLIN}, {.fd = fbd, .events = POLLIN}};
	while (!fb_stop) {
		int wait = fb_flush_due();
		if (wait < 0 || wait > 100)
			wait = 100;
		if (end && fb_now_ns() >= end)
			break;
		int n = poll(pf, 2, wait);
		if (n < 0 && errno != EINTR)
			break;
		for (int i = 0; i < 2 && n > 0; i++) {
			if (!(pf[i].revents & POLLIN))
				continue;
			/* Drain the socket (bounded), releasing due frames as we go. */
			for (int k = 0; k < 4096; k++) {
				struct sockaddr_ll from;
				socklen_t fl = sizeof(from);
				ssize_t len = recvfrom(pf[i].fd, buf, sizeof(buf), MSG_DONTWAIT,
						       (struct sockaddr *)&from, &fl);
				if (len < 0)
					break;
				/* Frames we sent ourselves come back as PACKET_OUTGOING. */
				if (len == 0 || from.sll_pkttype == PACKET_OUTGOING)
					continue;
				fb_forward(&r, i == 0 ? fbd : fa, buf, (size_t)len);
				if ((k & 63) == 63)
					fb_flush_due();
			}
		}
	}
	while (fb_queued) /* deliver what is still held */
		if (fb_flush_due() > 0)
			usleep(1000);
	/* Frames the kernel dropped before we could read them: never silent. */
	int fds[2] = {fa, fbd};
	for (int i = 0; i < 2; i++) {
		struct tpacket_stats ts;
		socklen_t tl = sizeof(ts);
		if (getsockopt(fds[i], SOL_PACKET, PACKET_STATISTICS, &ts, &tl) == 0)
			fb_st.kernel_drops += ts.tp_drops;
	}
	fb_print_stats(stderr);
	if (stats) {
		FILE *f = fopen(stats, "w");
		if (f) {
			fb_print_stats(f);
			fclose(f);
		}
	}
	return 0;
}
