/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * floor_wire.c - p3-nicfloor's wire: one frame per token hop.  ether is an
 * AF_PACKET raw socket on the namespace host's interface, as rmpp's ether
 * link (mcpd --link ether) uses, bound to the interface and an EtherType of
 * its own; udp a UDP socket on 127.0.0.1 (mcpd's default link).  What
 * differs from the NIC's wire: no reliability (no acks, no timers, no
 * retransmission), no frame check, one send() and one recv() per frame
 * (rmpp's ether link receives through a TPACKET_V2 ring instead).
 */
#include "floor.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define ETH_HDR 14

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

static int ether_open(struct floor_wire *w, const struct floor_opts *o)
{
	w->fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(FLOOR_ETHERTYPE));
	if (w->fd < 0) {
		fprintf(stderr, "p3-nicfloor: AF_PACKET socket: %s%s\n", strerror(errno),
		        errno == EPERM ? " (raw Ethernet needs CAP_NET_RAW: run as root)" : "");
		return -1;
	}
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", o->ifname);
	if (ioctl(w->fd, SIOCGIFINDEX, &ifr) != 0) {
		fprintf(stderr, "p3-nicfloor: interface %s: %s\n", o->ifname, strerror(errno));
		return -1;
	}
	w->ifindex = ifr.ifr_ifindex;
	if (ioctl(w->fd, SIOCGIFHWADDR, &ifr) != 0) {
		fprintf(stderr, "p3-nicfloor: %s: no MAC address: %s\n", o->ifname,
		        strerror(errno));
		return -1;
	}
	memcpy(w->self, ifr.ifr_hwaddr.sa_data, 6);
	int one = 1;
	setsockopt(w->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
	struct sockaddr_ll sll = {.sll_family = AF_PACKET,
	                          .sll_protocol = htons(FLOOR_ETHERTYPE),
	                          .sll_ifindex = w->ifindex};
	if (bind(w->fd, (struct sockaddr *)&sll, sizeof(sll)) != 0) {
		fprintf(stderr, "p3-nicfloor: bind to %s: %s\n", o->ifname, strerror(errno));
		return -1;
	}
	return 0;
}

static int udp_open(struct floor_wire *w)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	w->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (w->fd < 0 || bind(w->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    getsockname(w->fd, (struct sockaddr *)&sa, &sl) != 0) {
		fprintf(stderr, "p3-nicfloor: UDP socket on 127.0.0.1: %s\n", strerror(errno));
		return -1;
	}
	memcpy(w->self, &sa, sizeof(sa));
	return 0;
}

int floor_wire_open(struct floor_wire *w, const struct floor_opts *o)
{
	memset(w, 0, sizeof(*w));
	w->kind = o->wire;
	w->frame = o->frame;
	return o->wire == FLOOR_WIRE_ETHER ? ether_open(w, o) : udp_open(w);
}

void floor_wire_peer(struct floor_wire *w, const unsigned char *peer_addr)
{
	memcpy(w->peer, peer_addr, sizeof(w->peer));
}

int floor_wire_send(struct floor_wire *w, uint64_t token)
{
	unsigned char buf[FLOOR_FRAME_MAX];
	memset(buf, 0, w->frame);
	ssize_t n;
	if (w->kind == FLOOR_WIRE_ETHER) {
		memcpy(buf, w->peer, 6);
		memcpy(buf + 6, w->self, 6);
		buf[12] = FLOOR_ETHERTYPE >> 8;
		buf[13] = FLOOR_ETHERTYPE & 0xff;
		memcpy(buf + ETH_HDR, &token, sizeof(token));
		struct sockaddr_ll sll = {.sll_family = AF_PACKET,
		                          .sll_protocol = htons(FLOOR_ETHERTYPE),
		                          .sll_ifindex = w->ifindex,
		                          .sll_halen = 6};
		memcpy(sll.sll_addr, w->peer, 6);
		n = sendto(w->fd, buf, w->frame, 0, (struct sockaddr *)&sll, sizeof(sll));
	} else {
		memcpy(buf, &token, sizeof(token));
		n = sendto(w->fd, buf, w->frame - ETH_HDR, 0, (struct sockaddr *)w->peer,
		           sizeof(struct sockaddr_in));
	}
	if (n < 0) {
		fprintf(stderr, "p3-nicfloor: send: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

int floor_wire_recv(struct floor_wire *w, uint64_t *token)
{
	unsigned char buf[FLOOR_FRAME_MAX + 64];
	ssize_t n = recv(w->fd, buf, sizeof(buf), 0);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
	size_t off = w->kind == FLOOR_WIRE_ETHER ? ETH_HDR : 0;
	if ((size_t)n < off + sizeof(*token))
		return 0; /* a runt: not ours */
	memcpy(token, buf + off, sizeof(*token));
	return 1;
}
