/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * link_ether.c - rmpp link over raw Ethernet (AF_PACKET, EtherType 0x88B5).
 *
 * Receive: TPACKET_V2 ring (ETHER_RING=2, the default: each frame is handed
 * over as soon as it is written), TPACKET_V3 ring (ETHER_RING=1: a block is
 * handed over when full or after ETHER_BLOCK_TOV_MS, >= 1 ms for a lone small
 * frame), or recvmmsg (ETHER_RING=0).  A classic BPF filter
 * accepts only our EtherType and our endpoint id, so several endpoints can
 * share an interface.  Transmit: sendmmsg of complete frames.  Needs
 * CAP_NET_RAW.  CRC32C is mandatory (raw Ethernet has no L3/L4 checksum).
 */
#include "rmpp_int.h"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define ETH_HDR 14

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

struct ether_priv {
	int ifindex;
	uint16_t ethertype;
	unsigned batch;
	/* ring */
	uint8_t *ring;
	size_t ring_len, block_size;
	unsigned block_nr, cur_block;
	struct tpacket3_hdr *cur_pkt;
	unsigned cur_left;
	bool release_block;
	int version;       /* TPACKET_V3 or TPACKET_V2 */
	size_t frame_size; /* V2: one slot */
	unsigned frames_per_block;
	unsigned frame_nr, cur_frame, frames_out;
	uint64_t rx_dropped; /* PACKET_STATISTICS tp_drops, summed (reading resets) */
	/* recvmmsg / sendmmsg */
	size_t bufsz;
	uint8_t *bufs;
	struct mmsghdr *msg;
	struct iovec *iov;
	struct sockaddr_ll *sll;
};

static void ether_free(struct ether_priv *p)
{
	if (!p)
		return;
	if (p->ring)
		munmap(p->ring, p->ring_len);
	free(p->bufs);
	free(p->msg);
	free(p->iov);
	free(p->sll);
	free(p);
}

static int attach_filter(int fd, uint16_t ethertype, uint16_t ep_id)
{
	struct sock_filter code[] = {
	    BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 12), /* EtherType */
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ethertype, 0, 3),
	    BPF_STMT(BPF_LD | BPF_H | BPF_ABS, ETH_HDR + 4), /* rmpp dst_ep */
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ep_id, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, 0x40000),
	    BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = {.len = sizeof(code) / sizeof(code[0]), .filter = code};
	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog));
}

/* TPACKET_V2 receive ring.  Slots are as small as the frame allows (not a
 * power of two: a 9000-byte frame would waste 7 KiB of a 16 KiB slot), packed
 * into 64 KiB blocks (a slot never straddles a block).  The ring holds at
 * least 8 MiB and at least TX_WINDOW + 256 frames: a peer may have TX_WINDOW
 * frames in flight (its credit never exceeds that), and they all land while
 * this process is not running - a ring of 8 MiB held only 512 frames of
 * 9000 bytes, so a burst of 1024 from a peer overflowed it whenever the
 * receiver was descheduled, and each drop cost an RTO (>= 1 ms). */
static int ring2_setup(int fd, struct ether_priv *p, size_t mtu, const struct rmpp_config *cfg)
{
	int ver = TPACKET_V2;
	if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &ver, sizeof(ver)) != 0)
		return -1;
	p->version = TPACKET_V2;
	p->frame_size = TPACKET_ALIGN(TPACKET2_HDRLEN + ETH_HDR + mtu + 64);
	p->block_size = 65536;
	while (p->block_size < p->frame_size)
		p->block_size <<= 1;
	p->frames_per_block = (unsigned)(p->block_size / p->frame_size);
	size_t want = (size_t)cfg->tx_window + 256;
	size_t by_bytes = (8u << 20) / p->block_size * p->frames_per_block;
	if (want < by_bytes)
		want = by_bytes;
	p->block_nr = (unsigned)((want + p->frames_per_block - 1) / p->frames_per_block);
	p->frame_nr = p->frames_per_block * p->block_nr;
	struct tpacket_req req = {.tp_block_size = (unsigned)p->block_size,
	                          .tp_block_nr = p->block_nr,
	                          .tp_frame_size = (unsigned)p->frame_size,
	                          .tp_frame_nr = p->frame_nr};
	if (setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req)) != 0)
		return -1;
	p->ring_len = p->block_size * p->block_nr;
	p->ring = mmap(NULL, p->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p->ring == MAP_FAILED) {
		p->ring = NULL;
		return -1;
	}
	madvise(p->ring, p->ring_len, MADV_DONTFORK); /* not a fork child's */
	return 0;
}

/* Slot idx of the V2 ring. */
static struct tpacket2_hdr *ring2_slot(const struct ether_priv *p, unsigned idx)
{
	size_t block = idx / p->frames_per_block, in = idx % p->frames_per_block;
	return (struct tpacket2_hdr *)(p->ring + block * p->block_size + in * p->frame_size);
}

static int ether_open(struct rmpp_link *l, const struct rmpp_ep_attr *attr,
                      const struct rmpp_config *cfg)
{
	uint16_t et = attr->ethertype ? attr->ethertype : RMPP_ETHERTYPE;
	if (!attr->ifname || !*attr->ifname)
		return -EINVAL;
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(et));
	if (fd < 0) {
		int err = -errno;
		if (errno == EPERM || errno == EACCES)
			rmpp_log(l->ep, RMPP_LOG_ERR, NULL,
			         "raw Ethernet needs CAP_NET_RAW (run as root, or setcap "
			         "cap_net_raw+ep on the program): %s",
			         strerror(errno));
		else
			rmpp_log(l->ep, RMPP_LOG_ERR, NULL, "AF_PACKET socket: %s",
			         strerror(errno));
		return err == -EACCES ? -EPERM : err;
	}
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", attr->ifname);
	if (ioctl(fd, SIOCGIFINDEX, &ifr) != 0) {
		rmpp_log(l->ep, RMPP_LOG_ERR, NULL, "interface %s: %s", attr->ifname,
		         strerror(errno));
		close(fd);
		return -ENODEV;
	}
	int ifindex = ifr.ifr_ifindex;
	if (ioctl(fd, SIOCGIFMTU, &ifr) != 0) {
		close(fd);
		return -errno;
	}
	size_t mtu = (size_t)ifr.ifr_mtu;
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) != 0) {
		close(fd);
		return -errno;
	}
	uint8_t mac[6];
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	if (mtu > cfg->mtu)
		mtu = cfg->mtu;

	struct ether_priv *p = calloc(1, sizeof(*p));
	if (!p) {
		close(fd);
		return -ENOMEM;
	}
	p->ifindex = ifindex;
	p->ethertype = et;
	p->batch = (unsigned)cfg->batch;
	int one = 1, rc;
	if (attach_filter(fd, et, attr->ep_id) != 0)
		rmpp_log(l->ep, RMPP_LOG_WARN, NULL, "BPF filter: %s", strerror(errno));
	setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
	if (cfg->qdisc_bypass &&
	    setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)) != 0)
		rmpp_log(l->ep, RMPP_LOG_WARN, NULL, "PACKET_QDISC_BYPASS: %s", strerror(errno));
	int sb = (int)cfg->sockbuf;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sb, sizeof(sb)) != 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sb, sizeof(sb));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sb, sizeof(sb)) != 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sb, sizeof(sb));

	if (cfg->ether_ring == 2) {
		if (ring2_setup(fd, p, mtu, cfg) != 0)
			goto fail_errno;
	} else if (cfg->ether_ring) {
		int ver = TPACKET_V3;
		p->version = TPACKET_V3;
		struct tpacket_req3 req = {0};
		if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &ver, sizeof(ver)) != 0)
			goto fail_errno;
		p->block_size = 1u << 20;
		while (p->block_size < 2 * (mtu + 256))
			p->block_size <<= 1;
		p->block_nr = 16;
		req.tp_block_size = (unsigned)p->block_size;
		req.tp_block_nr = p->block_nr;
		req.tp_frame_size = 2048;
		req.tp_frame_nr = (unsigned)(p->block_size * p->block_nr / 2048);
		req.tp_retire_blk_tov = (unsigned)cfg->ether_block_tov_ms;
		if (setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req)) != 0)
			goto fail_errno;
		p->ring_len = p->block_size * p->block_nr;
		p->ring =
		    mmap(NULL, p->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_LOCKED, fd, 0);
		if (p->ring == MAP_FAILED)
			p->ring =
			    mmap(NULL, p->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p->ring == MAP_FAILED) {
			p->ring = NULL;
			goto fail_errno;
		}
		madvise(p->ring, p->ring_len, MADV_DONTFORK); /* not a fork child's */
	}
	p->bufsz = mtu + ETH_HDR + 64;
	p->bufs = malloc(p->bufsz * p->batch);
	p->msg = calloc(p->batch, sizeof(*p->msg));
	p->iov = calloc(p->batch, sizeof(*p->iov));
	p->sll = calloc(p->batch, sizeof(*p->sll));
	if (!p->bufs || !p->msg || !p->iov || !p->sll) {
		errno = ENOMEM;
		goto fail_errno;
	}
	struct sockaddr_ll sll = {
	    .sll_family = AF_PACKET, .sll_protocol = htons(et), .sll_ifindex = ifindex};
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) != 0)
		goto fail_errno;
	l->fd = fd;
	l->mtu = mtu;
	l->priv = p;
	l->require_crc = 1;
	rmpp_addr_ether(&l->self, mac, attr->ep_id);
	return 0;
fail_errno:
	rc = -errno;
	rmpp_log(l->ep, RMPP_LOG_ERR, NULL, "AF_PACKET setup on %s: %s", attr->ifname,
	         strerror(errno));
	ether_free(p);
	close(fd);
	return rc;
}

static void frame_src(struct rmpp_rxframe *f, const uint8_t *eth)
{
	rmpp_addr_ether(&f->src, eth + 6, 0);
}

static int ring_recv(struct rmpp_link *l, struct rmpp_rxframe *frames, int n)
{
	struct ether_priv *p = l->priv;
	struct tpacket_block_desc *bd =
	    (struct tpacket_block_desc *)(p->ring + (size_t)p->cur_block * p->block_size);
	if (!p->cur_pkt) {
		if (!(bd->hdr.bh1.block_status & TP_STATUS_USER))
			return 0;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		p->cur_left = bd->hdr.bh1.num_pkts;
		p->cur_pkt =
		    (struct tpacket3_hdr *)((uint8_t *)bd + bd->hdr.bh1.offset_to_first_pkt);
	}
	int got = 0;
	while (p->cur_left && got < n) {
		struct tpacket3_hdr *h = p->cur_pkt;
		const struct sockaddr_ll *sll =
		    (const struct sockaddr_ll *)((uint8_t *)h +
		                                 TPACKET_ALIGN(sizeof(struct tpacket3_hdr)));
		uint8_t *eth = (uint8_t *)h + h->tp_mac;
		if (sll->sll_pkttype != PACKET_OUTGOING && h->tp_snaplen >= ETH_HDR) {
			frames[got].data = eth + ETH_HDR;
			frames[got].len = h->tp_snaplen - ETH_HDR;
			frame_src(&frames[got], eth);
			got++;
		}
		p->cur_left--;
		p->cur_pkt = (struct tpacket3_hdr *)((uint8_t *)h + h->tp_next_offset);
	}
	if (!p->cur_left)
		p->release_block = true; /* handed back in release() */
	return got;
}

static int plain_recv(struct rmpp_link *l, struct rmpp_rxframe *frames, int n)
{
	struct ether_priv *p = l->priv;
	if ((unsigned)n > p->batch)
		n = (int)p->batch;
	for (int i = 0; i < n; i++) {
		p->iov[i].iov_base = p->bufs + (size_t)i * p->bufsz;
		p->iov[i].iov_len = p->bufsz;
		memset(&p->msg[i].msg_hdr, 0, sizeof(p->msg[i].msg_hdr));
		p->msg[i].msg_hdr.msg_iov = &p->iov[i];
		p->msg[i].msg_hdr.msg_iovlen = 1;
		p->msg[i].msg_hdr.msg_name = &p->sll[i];
		p->msg[i].msg_hdr.msg_namelen = sizeof(p->sll[i]);
	}
	int got = recvmmsg(l->fd, p->msg, (unsigned)n, MSG_DONTWAIT, NULL);
	if (got < 0)
		return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -errno;
	int k = 0;
	for (int i = 0; i < got; i++) {
		uint8_t *eth = p->iov[i].iov_base;
		size_t len = p->msg[i].msg_len;
		if (p->sll[i].sll_pkttype == PACKET_OUTGOING || len < ETH_HDR)
			continue;
		if (p->msg[i].msg_hdr.msg_flags & MSG_TRUNC)
			len = ETH_HDR;
		frames[k].data = eth + ETH_HDR;
		frames[k].len = len - ETH_HDR;
		frame_src(&frames[k], eth);
		k++;
	}
	return k;
}

/* TPACKET_V2: one frame per slot, handed over as soon as it is written. */
static int ring2_recv(struct rmpp_link *l, struct rmpp_rxframe *frames, int n)
{
	struct ether_priv *p = l->priv;
	int got = 0;
	while (got < n && p->frames_out < p->frame_nr) {
		unsigned idx = (p->cur_frame + p->frames_out) % p->frame_nr;
		struct tpacket2_hdr *h = ring2_slot(p, idx);
		if (!(__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER))
			break;
		p->frames_out++;
		const struct sockaddr_ll *sll =
		    (const struct sockaddr_ll *)((uint8_t *)h +
		                                 TPACKET_ALIGN(sizeof(struct tpacket2_hdr)));
		uint8_t *eth = (uint8_t *)h + h->tp_mac;
		if (sll->sll_pkttype == PACKET_OUTGOING || h->tp_snaplen < ETH_HDR)
			continue;
		frames[got].data = eth + ETH_HDR;
		frames[got].len = h->tp_snaplen - ETH_HDR;
		frame_src(&frames[got], eth);
		got++;
	}
	return got;
}

static int ether_recv(struct rmpp_link *l, struct rmpp_rxframe *frames, int n)
{
	struct ether_priv *p = l->priv;
	if (!p->ring)
		return plain_recv(l, frames, n);
	return p->version == TPACKET_V2 ? ring2_recv(l, frames, n) : ring_recv(l, frames, n);
}

static void ether_release(struct rmpp_link *l)
{
	struct ether_priv *p = l->priv;
	if (p->ring && p->version == TPACKET_V2) {
		for (; p->frames_out; p->frames_out--) {
			struct tpacket2_hdr *h = ring2_slot(p, p->cur_frame);
			__atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
			p->cur_frame = (p->cur_frame + 1) % p->frame_nr;
		}
		return;
	}
	if (p->ring && p->release_block) {
		struct tpacket_block_desc *bd =
		    (struct tpacket_block_desc *)(p->ring + (size_t)p->cur_block * p->block_size);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		bd->hdr.bh1.block_status = TP_STATUS_KERNEL;
		p->cur_block = (p->cur_block + 1) % p->block_nr;
		p->cur_pkt = NULL;
		p->release_block = false;
	}
}

static int ether_send(struct rmpp_link *l, const struct rmpp_txframe *frames, int n)
{
	struct ether_priv *p = l->priv;
	int sent = 0;
	while (sent < n) {
		int m = n - sent;
		if ((unsigned)m > p->batch)
			m = (int)p->batch;
		for (int i = 0; i < m; i++) {
			const struct rmpp_txframe *f = &frames[sent + i];
			uint8_t *eth = f->data - ETH_HDR; /* headroom reserved by the ep */
			memcpy(eth, f->dst.u.mac, 6);
			memcpy(eth + 6, l->self.u.mac, 6);
			eth[12] = (uint8_t)(p->ethertype >> 8);
			eth[13] = (uint8_t)p->ethertype;
			p->iov[i].iov_base = eth;
			p->iov[i].iov_len = f->len + ETH_HDR;
			memset(&p->sll[i], 0, sizeof(p->sll[i]));
			p->sll[i].sll_family = AF_PACKET;
			p->sll[i].sll_ifindex = p->ifindex;
			p->sll[i].sll_protocol = htons(p->ethertype);
			p->sll[i].sll_halen = 6;
			memcpy(p->sll[i].sll_addr, f->dst.u.mac, 6);
			memset(&p->msg[i].msg_hdr, 0, sizeof(p->msg[i].msg_hdr));
			p->msg[i].msg_hdr.msg_iov = &p->iov[i];
			p->msg[i].msg_hdr.msg_iovlen = 1;
			p->msg[i].msg_hdr.msg_name = &p->sll[i];
			p->msg[i].msg_hdr.msg_namelen = sizeof(p->sll[i]);
		}
		int r = sendmmsg(l->fd, p->msg, (unsigned)m, MSG_DONTWAIT);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			sent++;
			l->ep->ctr.send_errors++;
			continue;
		}
		sent += r;
	}
	return sent;
}

static void ether_close(struct rmpp_link *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	ether_free(l->priv);
	l->priv = NULL;
}

/* The kernel's drops for this socket (ring or receive buffer full, e.g.
 * while the process was not scheduled); repaired like lost frames. */
static void ether_stats(struct rmpp_link *l, struct rmpp_counters *ctr)
{
	struct ether_priv *p = l->priv;
	union {
		struct tpacket_stats v2;
		struct tpacket_stats_v3 v3;
	} st;
	socklen_t len = sizeof(st);
	memset(&st, 0, sizeof(st));
	if (getsockopt(l->fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0)
		p->rx_dropped += st.v2.tp_drops; /* same offset in both layouts */
	ctr->ether_rx_dropped = p->rx_dropped;
}

const struct rmpp_link_ops rmpp_link_ether_ops = {
    .size = sizeof(struct rmpp_link_ops),
    .name = "ether",
    .open = ether_open,
    .recv = ether_recv,
    .release = ether_release,
    .send = ether_send,
    .close = ether_close,
    .stats = ether_stats,
};
