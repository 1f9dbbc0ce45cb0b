/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * link_xdp.c - rmpp link over AF_XDP (libxdp's xsk API): the same raw
 * Ethernet frames as link_ether.c (EtherType 0x88B5, ether addresses), but
 * received from and sent through UMEM rings shared with the kernel, with no
 * socket buffer per frame.
 *
 * UMEM: XDP_FRAMES frames of 4 KiB; the first half receive (they circulate
 * fill ring -> kernel -> RX ring -> recv()/release() -> fill ring), the second
 * half transmit (a stack of free frames -> TX ring -> kernel -> completion
 * ring -> the stack).  Received frames are handed to the endpoint in place
 * (no copy); a sent frame is copied once into its UMEM frame.  The XDP
 * program (xdp_prog.c) steers the endpoint's frames on queue XDP_QUEUE to
 * the socket and passes everything else to the kernel.
 *
 * Zero-copy is asked for first (XDP_ZEROCOPY), copy mode (XDP_COPY) where the
 * driver does not offer it (veth); the need_wakeup flags say when the kernel
 * must be kicked: sendto() for TX (always, in copy mode), recvfrom() for a
 * fill ring the driver waits on.  Spinning polls the RX ring in user space
 * (with XDP_BUSY_POLL > 0 an empty ring is also kicked with recvfrom, which
 * runs the driver's NAPI poll in this thread); blocking is poll() on the
 * socket (the endpoint's ppoll).  Needs root (CAP_NET_RAW for the socket,
 * CAP_BPF + CAP_NET_ADMIN for the program).
 */
#include "xdp_link.h"

#include <linux/ethtool.h>
#include <linux/if_xdp.h>
#include <linux/sockios.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ETH_HDR        14
#define XDP_FRAME_SIZE XSK_UMEM__DEFAULT_FRAME_SIZE
/* Room the kernel leaves in front of a received frame (copy mode). */
#define XDP_RX_HEADROOM 256

/* Multi-buffer AF_XDP (kernel >= 6.6; Debian's UAPI headers predate it). */
#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif
/* Most UMEM frames one rmpp frame may span (the kernel allows 18). */
#define XDP_SG_MAX_DESCS 16
/* UMEM frames at least, when frames span several (a full window of 9000-byte
 * frames takes 3 receive frames each). */
#define XDP_SG_MIN_FRAMES 8192

#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL 69
#endif
#ifndef SO_BUSY_POLL_BUDGET
#define SO_BUSY_POLL_BUDGET 70
#endif

struct xdp_priv {
	struct xdp_state x;
	uint16_t ep_id;
	uint8_t *area;
	size_t area_len;
	unsigned rx_frames, tx_frames;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fq, tx;
	struct xsk_ring_cons cq, rx;
	bool zerocopy;
	bool sg; /* bound with XDP_USE_SG: a frame may span several UMEM frames */
	unsigned busy_poll;
	/* multi-frame receives, copied together: asm_cap slots of asm_stride */
	uint8_t *asm_buf;
	size_t asm_stride;
	unsigned asm_cap, asm_used;
	/* frames handed out by recv() (rx_held of them, their RX entries
	 * released by release()) and frames released but not yet back in the
	 * fill ring: rx_addr[0 .. rx_pending), the held ones last */
	uint64_t *rx_addr;
	unsigned rx_held, rx_pending;
	/* free transmit frames (UMEM offsets) */
	uint64_t *tx_free;
	unsigned tx_nfree;
	uint64_t asm_dropped; /* multi-buffer frames longer than the MTU */
	char desc[64];
};

static int iface_info(struct rmpp_link *l, const char *ifname, int *ifindex, size_t *mtu,
                      uint8_t mac[6])
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	int rc = 0;
	if (ioctl(s, SIOCGIFINDEX, &ifr) != 0) {
		rmpp_log(l->ep, RMPP_LOG_ERR, NULL, "xdp: interface %s: %s", ifname,
		         strerror(errno));
		rc = -ENODEV;
	} else {
		*ifindex = ifr.ifr_ifindex;
		if (ioctl(s, SIOCGIFMTU, &ifr) != 0)
			rc = -errno;
		else
			*mtu = (size_t)ifr.ifr_mtu;
		if (!rc && ioctl(s, SIOCGIFHWADDR, &ifr) != 0)
			rc = -errno;
		else if (!rc)
			memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	}
	close(s);
	return rc;
}

/* The interface's driver is veth (ETHTOOL_GDRVINFO). */
static bool iface_is_veth(const char *ifname)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return false;
	struct ethtool_drvinfo info = {.cmd = ETHTOOL_GDRVINFO};
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (char *)&info;
	bool veth = ioctl(s, SIOCETHTOOL, &ifr) == 0 && strcmp(info.driver, "veth") == 0;
	close(s);
	return veth;
}

/* Attach in generic (skb) mode only?  XDP_SKB 1 yes, 0 no (native first);
 * 2 (the default) on veth only: veth receives its frames from the peer as
 * skbs, and its native XDP copies each into a page-pool page and runs the
 * program from a NAPI pass, where generic mode runs it on the skb in the
 * backlog: measured 0.3-0.5 us less per frame on the way to the peer's RX
 * ring (rmpp/README.md, xdp, "Latency").  A NIC's native mode gets the
 * frame before any skb exists, and zero-copy where the driver has it. */
static bool want_skb_mode(struct rmpp_link *l, const struct xdp_priv *p,
                          const struct rmpp_config *cfg)
{
	if (cfg->xdp_skb != 2)
		return cfg->xdp_skb == 1;
	if (!iface_is_veth(p->x.ifname))
		return false;
	rmpp_log(l->ep, RMPP_LOG_INFO, NULL,
	         "xdp: %s is a veth: generic (skb) mode (XDP_SKB=0 for native)", p->x.ifname);
	return true;
}

static void xdp_free(struct xdp_priv *p)
{
	if (!p)
		return;
	rmpp_xdp_prog_detach(&p->x);
	if (p->xsk)
		xsk_socket__delete(p->xsk);
	if (p->umem)
		xsk_umem__delete(p->umem);
	if (p->area)
		munmap(p->area, p->area_len);
	free(p->rx_addr);
	free(p->tx_free);
	free(p->asm_buf);
	free(p);
}

static void socket_failed(struct rmpp_link *l, const char *call, int err)
{
	const char *what = "";
	if (err == -EPERM || err == -EACCES)
		what = ": AF_XDP needs CAP_NET_RAW (run as root), or use --nal udp";
	else if (err == -EAFNOSUPPORT || err == -ENOPROTOOPT)
		what = ": the kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS): use --nal ether";
	else if (err == -EBUSY)
		what = ": another AF_XDP socket holds this queue (one xdp endpoint per "
		       "interface queue: set P3_RMPP_XDP_QUEUE, or use --nal ether for the others)";
	else if (err == -ENOMEM || err == -ENOBUFS)
		what = ": UMEM could not be pinned (lower P3_RMPP_XDP_FRAMES or raise "
		       "RLIMIT_MEMLOCK)";
	rmpp_log(l->ep, RMPP_LOG_ERR, NULL, "xdp: %s failed: %s%s", call, strerror(-err), what);
}

/* One UMEM and socket bound with `bind_flags`; on failure both are gone. */
static int try_bind(struct xdp_priv *p, const struct xsk_umem_config *uc,
                    struct xsk_socket_config *sc, uint16_t bind_flags, const char **call)
{
	*call = "xsk_umem__create";
	int rc = xsk_umem__create(&p->umem, p->area, p->area_len, &p->fq, &p->cq, uc);
	if (rc) {
		p->umem = NULL;
		return rc;
	}
	*call = "xsk_socket__create";
	sc->bind_flags = bind_flags;
	rc = xsk_socket__create(&p->xsk, p->x.ifname, p->x.queue, p->umem, &p->rx, &p->tx, sc);
	if (rc) {
		p->xsk = NULL;
		xsk_umem__delete(p->umem);
		p->umem = NULL;
	}
	return rc;
}

/* UMEM and socket, zero-copy if the driver takes it, else copy mode.  The
 * kernel frees a closed socket's hold on its queue later (deferred work; on
 * a loaded machine more than a second after a process was killed): EBUSY is
 * retried for up to 3 s, so an NI closed and opened again, or an endpoint
 * restarted after a crash, gets the queue; a queue held by a live endpoint
 * fails after that. */
static int open_socket(struct rmpp_link *l, struct xdp_priv *p, bool copy_only)
{
	struct xsk_umem_config uc = {.fill_size = p->rx_frames,
	                             .comp_size = p->tx_frames,
	                             .frame_size = XDP_FRAME_SIZE,
	                             .frame_headroom = 0,
	                             .flags = 0};
	struct xsk_socket_config sc = {.rx_size = p->rx_frames,
	                               .tx_size = p->tx_frames,
	                               .libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
	                               .xdp_flags = 0,
	                               .bind_flags = 0};
	bool zc = !copy_only;
	const char *call = "";
	uint64_t t0 = rmpp_now_us();
	for (;;) {
		int rc = try_bind(p, &uc, &sc,
		                  XDP_USE_NEED_WAKEUP | (zc ? XDP_ZEROCOPY : XDP_COPY) |
		                      (p->sg ? XDP_USE_SG : 0),
		                  &call);
		if (rc == 0) {
			p->zerocopy = zc;
			return 0;
		}
		if (p->sg && !zc && (rc == -EINVAL || rc == -EOPNOTSUPP)) {
			rmpp_log(
			    l->ep, RMPP_LOG_INFO, NULL,
			    "xdp: multi-buffer bind on %s refused (%s): frames fit one UMEM frame",
			    p->x.ifname, strerror(-rc));
			p->sg = false;
			continue;
		}
		if (rc == -EBUSY && rmpp_now_us() - t0 < 3000000) {
			struct timespec d = {0, 5000000};
			nanosleep(&d, NULL);
			continue;
		}
		if (zc && rc != -EBUSY && rc != -EPERM && rc != -EACCES) {
			rmpp_log(l->ep, RMPP_LOG_INFO, NULL,
			         "xdp: zero-copy bind on %s refused (%s): copy mode", p->x.ifname,
			         strerror(-rc));
			zc = false;
			continue;
		}
		socket_failed(l, call, rc);
		return rc;
	}
}

/* Every receive frame to the fill ring; the transmit frames to the stack. */
static int stock_frames(struct xdp_priv *p)
{
	uint32_t idx;
	if (xsk_ring_prod__reserve(&p->fq, p->rx_frames, &idx) != p->rx_frames)
		return -ENOSPC;
	for (unsigned i = 0; i < p->rx_frames; i++)
		*xsk_ring_prod__fill_addr(&p->fq, idx + i) = (uint64_t)i * XDP_FRAME_SIZE;
	xsk_ring_prod__submit(&p->fq, p->rx_frames);
	for (unsigned i = 0; i < p->tx_frames; i++)
		p->tx_free[p->tx_nfree++] = (uint64_t)(p->rx_frames + i) * XDP_FRAME_SIZE;
	return 0;
}

/* Busy polling (XDP_BUSY_POLL > 0): SO_BUSY_POLL (µs), SO_PREFER_BUSY_POLL
 * and SO_BUSY_POLL_BUDGET (BATCH), each asked for on its own; what the kernel
 * refuses is logged with its reason and left out.  Busy polling is on when
 * SO_BUSY_POLL is. */
static void set_busy_poll(struct rmpp_link *l, struct xdp_priv *p, const struct rmpp_config *cfg)
{
	if (!cfg->xdp_busy_poll)
		return;
	int fd = xsk_socket__fd(p->xsk), one = 1, us = (int)cfg->xdp_busy_poll,
	    budget = (int)cfg->batch;
	const struct {
		int opt;
		const char *name;
		const int *val;
	} opts[] = {{SO_BUSY_POLL, "SO_BUSY_POLL", &us},
	            {SO_PREFER_BUSY_POLL, "SO_PREFER_BUSY_POLL", &one},
	            {SO_BUSY_POLL_BUDGET, "SO_BUSY_POLL_BUDGET", &budget}};
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		if (setsockopt(fd, SOL_SOCKET, opts[i].opt, opts[i].val, sizeof(int)) == 0) {
			if (i == 0)
				p->busy_poll = (unsigned)us;
			continue;
		}
		rmpp_log(l->ep, RMPP_LOG_WARN, NULL, "xdp: setsockopt %s %d on %s refused: %s%s",
		         opts[i].name, *opts[i].val, p->x.ifname, strerror(errno),
		         i == 0 ? " (no busy polling)" : "");
		if (i == 0)
			return;
	}
}

static int xdp_open(struct rmpp_link *l, const struct rmpp_ep_attr *attr,
                    const struct rmpp_config *cfg)
{
	if (!attr->ifname || !*attr->ifname || strlen(attr->ifname) >= IF_NAMESIZE)
		return -EINVAL;
	if (attr->ethertype && attr->ethertype != RMPP_ETHERTYPE) {
		rmpp_log(l->ep, RMPP_LOG_ERR, NULL,
		         "xdp: the XDP program steers EtherType 0x%04x only", RMPP_ETHERTYPE);
		return -EINVAL;
	}
	struct xdp_priv *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->x.eps_fd = -1;
	p->ep_id = attr->ep_id;
	snprintf(p->x.ifname, sizeof(p->x.ifname), "%s", attr->ifname);
	p->x.queue = (unsigned)cfg->xdp_queue;
	size_t mtu = 0;
	uint8_t mac[6];
	int rc = iface_info(l, attr->ifname, &p->x.ifindex, &mtu, mac);
	if (rc)
		goto fail;
	/* Jumbo frames span several UMEM frames (multi-buffer AF_XDP): asked
	 * for when the interface and MTU allow frames larger than one. */
	size_t room = XDP_FRAME_SIZE - XDP_RX_HEADROOM - ETH_HDR;
	p->sg = mtu > room && cfg->mtu > room;
	unsigned frames = 256;
	while (frames < cfg->xdp_frames || (p->sg && frames < XDP_SG_MIN_FRAMES))
		frames <<= 1; /* ring sizes are powers of two */
	p->rx_frames = p->tx_frames = frames / 2;
	p->area_len = (size_t)frames * XDP_FRAME_SIZE;
	p->area =
	    mmap(NULL, p->area_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	p->rx_addr = calloc(p->rx_frames, sizeof(*p->rx_addr));
	p->tx_free = calloc(p->tx_frames, sizeof(*p->tx_free));
	if (p->area == MAP_FAILED || !p->rx_addr || !p->tx_free) {
		p->area = p->area == MAP_FAILED ? NULL : p->area;
		rc = -ENOMEM;
		goto fail;
	}
	madvise(p->area, p->area_len, MADV_DONTFORK); /* not a fork child's */
	rc = open_socket(l, p, cfg->xdp_copy != 0);
	if (rc)
		goto fail;
	/* Generic mode takes a program without frags support and a multi-buffer
	 * socket: the kernel linearizes the skb for it (in place, when the
	 * headroom is short) and the socket still spreads the frame over UMEM
	 * frames; a frags-aware program makes it copy every skb into page-pool
	 * pages instead: +0.5 us on a 0-byte half round trip (measured, 9000-byte
	 * veth bed).  Native mode on veth needs frags support above a page. */
	bool skb_mode = want_skb_mode(l, p, cfg);
	p->x.frags = p->sg && !skb_mode;
	rc = rmpp_xdp_prog_attach(l, &p->x, skb_mode);
	if (rc)
		goto fail;
	rc = rmpp_xdp_prog_register(l, &p->x, p->xsk, attr->ep_id);
	if (rc)
		goto fail;
	rc = stock_frames(p);
	if (rc)
		goto fail;
	set_busy_poll(l, p, cfg);
	if (p->sg && !p->x.frags && !skb_mode) /* native without multi-buffer frames */
		p->sg = false;
	if (p->sg)
		room = XDP_SG_MAX_DESCS * (XDP_FRAME_SIZE - XDP_RX_HEADROOM) - ETH_HDR;
	if (mtu > room)
		mtu = room;
	if (mtu > cfg->mtu)
		mtu = cfg->mtu;
	if (p->sg) {
		p->asm_cap = (unsigned)cfg->batch;
		p->asm_stride = mtu + ETH_HDR;
		p->asm_buf = malloc(p->asm_stride * p->asm_cap);
		if (!p->asm_buf) {
			rc = -ENOMEM;
			goto fail;
		}
	}
	snprintf(p->desc, sizeof(p->desc), "xdp %s %s queue %u%s%s",
	         p->x.mode == XDP_MODE_NATIVE ? "native" : "generic",
	         p->zerocopy ? "zero-copy" : "copy", p->x.queue, p->sg ? " multi-buffer" : "",
	         p->busy_poll ? " busy-poll" : "");
	l->ep->ctr.xdp_mode = p->x.mode != XDP_MODE_NATIVE ? 1 : p->zerocopy ? 3 : 2;
	l->fd = xsk_socket__fd(p->xsk);
	l->mtu = mtu;
	l->priv = p;
	l->require_crc = 1;
	rmpp_addr_ether(&l->self, mac, attr->ep_id);
	rmpp_log(l->ep, RMPP_LOG_INFO, NULL, "xdp: %s on %s, %u UMEM frames", p->desc, p->x.ifname,
	         frames);
	return 0;
fail:
	xdp_free(p);
	return rc;
}

static void kick_rx(struct rmpp_link *l, struct xdp_priv *p)
{
	l->ep->ctr.xdp_rx_kicks++;
	if (recvfrom(xsk_socket__fd(p->xsk), NULL, 0, MSG_DONTWAIT, NULL, NULL) < 0) {
		/* EAGAIN: nothing to do; the ring is read right after */
	}
}

/* A frame that spans descriptors d[0..m-1] (all but the last marked
 * XDP_PKT_CONTD), copied together into a reassembly slot (held until
 * release()); NULL if it does not fit (counted with the kernel's drops). */
static uint8_t *assemble(struct xdp_priv *p, uint32_t idx, unsigned m, size_t *len)
{
	size_t total = 0;
	for (unsigned i = 0; i < m; i++)
		total += xsk_ring_cons__rx_desc(&p->rx, idx + i)->len;
	if (total > p->asm_stride) {
		p->asm_dropped++;
		return NULL;
	}
	uint8_t *out = p->asm_buf + (size_t)p->asm_used++ * p->asm_stride;
	size_t off = 0;
	for (unsigned i = 0; i < m; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&p->rx, idx + i);
		memcpy(out + off,
		       xsk_umem__get_data(p->area, xsk_umem__add_offset_to_addr(d->addr)), d->len);
		off += d->len;
	}
	*len = total;
	return out;
}

/* Descriptors of the frame starting at idx (at most avail); 0 if its last
 * descriptor is not among them. */
static unsigned frame_descs(struct xdp_priv *p, uint32_t idx, unsigned avail)
{
	for (unsigned m = 1; m <= avail; m++)
		if (!(xsk_ring_cons__rx_desc(&p->rx, idx + m - 1)->options & XDP_PKT_CONTD))
			return m;
	return 0;
}

static int xdp_recv(struct rmpp_link *l, struct rmpp_rxframe *frames, int n)
{
	struct xdp_priv *p = l->priv;
	if (n <= 0)
		return 0;
	/* multi-buffer: peek everything, a frame's descriptors may be many */
	unsigned want = p->sg ? p->rx_frames - p->rx_pending : (unsigned)n;
	if (want > p->rx_frames - p->rx_pending)
		want = p->rx_frames - p->rx_pending;
	uint32_t idx;
	unsigned got = xsk_ring_cons__peek(&p->rx, want, &idx);
	if (!got && p->busy_poll) {
		kick_rx(l, p);
		got = xsk_ring_cons__peek(&p->rx, want, &idx);
	}
	int k = 0;
	unsigned used = 0;
	while (used < got && k < n) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&p->rx, idx + used);
		unsigned m = 1;
		uint8_t *eth = xsk_umem__get_data(p->area, xsk_umem__add_offset_to_addr(d->addr));
		size_t len = d->len;
		if (d->options & XDP_PKT_CONTD) {
			m = frame_descs(p, idx + used, got - used);
			if (!m || p->asm_used == p->asm_cap)
				break; /* the rest next time, after release() */
			eth = assemble(p, idx + used, m, &len);
		}
		for (unsigned i = 0; i < m; i++)
			p->rx_addr[p->rx_pending++] = xsk_umem__extract_addr(
			    xsk_ring_cons__rx_desc(&p->rx, idx + used + i)->addr);
		p->rx_held += m;
		used += m;
		if (!eth || len < ETH_HDR)
			continue;
		frames[k].data = eth + ETH_HDR;
		frames[k].len = len - ETH_HDR;
		rmpp_addr_ether(&frames[k].src, eth + 6, 0);
		k++;
	}
	if (used < got)
		xsk_ring_cons__cancel(&p->rx, got - used);
	return k;
}

/* Received frames the endpoint is done with wait here until there are this
 * many, then go back to the fill ring in one reserve/submit: a lone message
 * does not write the fill ring's producer index and read its wakeup flag
 * each time.  The kernel still has all the other receive frames (thousands)
 * to fill.  Their RX entries are released at once: the kernel's poll()
 * reports the socket readable while the RX ring's consumer index lags its
 * producer, so a lagging index would turn the endpoint's blocking ppoll into
 * a spin (tried: on the loaded machine the 0-byte latency got several times
 * worse). */
#define XDP_FILL_BATCH 32u

static void refill(struct rmpp_link *l, struct xdp_priv *p)
{
	uint32_t idx;
	/* the fill ring holds every receive frame: the pending ones always fit */
	if (xsk_ring_prod__reserve(&p->fq, p->rx_pending, &idx) != p->rx_pending)
		return;
	for (unsigned i = 0; i < p->rx_pending; i++)
		*xsk_ring_prod__fill_addr(&p->fq, idx + i) = p->rx_addr[i];
	xsk_ring_prod__submit(&p->fq, p->rx_pending);
	p->rx_pending = 0;
	if (xsk_ring_prod__needs_wakeup(&p->fq))
		kick_rx(l, p);
}

static void xdp_release(struct rmpp_link *l)
{
	struct xdp_priv *p = l->priv;
	p->asm_used = 0; /* the reassembled frames are the endpoint's no more */
	if (!p->rx_held)
		return;
	xsk_ring_cons__release(&p->rx, p->rx_held);
	p->rx_held = 0;
	if (p->rx_pending >= XDP_FILL_BATCH)
		refill(l, p);
}

/* Transmit frames the kernel is done with go back to the stack. */
static void reclaim_tx(struct xdp_priv *p)
{
	uint32_t idx;
	unsigned n = xsk_ring_cons__peek(&p->cq, p->tx_frames, &idx);
	for (unsigned i = 0; i < n; i++)
		p->tx_free[p->tx_nfree++] =
		    xsk_umem__extract_addr(*xsk_ring_cons__comp_addr(&p->cq, idx + i));
	if (n)
		xsk_ring_cons__release(&p->cq, n);
}

/* Make the kernel send what the TX ring holds.  Copy mode sends at most 32
 * descriptors per call (EAGAIN: call again); EBUSY/ENOBUFS: the device is
 * full, the descriptors stay and go with the next kick. */
static void kick_tx(struct rmpp_link *l, struct xdp_priv *p, unsigned queued)
{
	if (!xsk_ring_prod__needs_wakeup(&p->tx))
		return;
	int fd = xsk_socket__fd(p->xsk);
	for (unsigned round = 0; round <= queued / 32 + 1; round++) {
		l->ep->ctr.xdp_tx_kicks++;
		if (sendto(fd, NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0)
			return;
		if (errno != EAGAIN && errno != EINTR)
			return;
	}
}

/* UMEM frames a link frame of len bytes (Ethernet header included) takes. */
static unsigned tx_descs(const struct xdp_priv *p, size_t len)
{
	return p->sg ? (unsigned)((len + XDP_FRAME_SIZE - 1) / XDP_FRAME_SIZE) : 1;
}

/* Copy one frame (Ethernet header at eth) into free UMEM frames from TX
 * slot idx on; the pieces but the last say XDP_PKT_CONTD.  Returns the
 * slots used. */
static unsigned put_frame(struct xdp_priv *p, uint32_t idx, const uint8_t *eth, size_t len)
{
	unsigned used = 0;
	for (size_t off = 0; off < len; used++) {
		size_t piece = len - off < XDP_FRAME_SIZE ? len - off : XDP_FRAME_SIZE;
		uint64_t addr = p->tx_free[--p->tx_nfree];
		memcpy(xsk_umem__get_data(p->area, addr), eth + off, piece);
		struct xdp_desc *d = xsk_ring_prod__tx_desc(&p->tx, idx + used);
		d->addr = addr;
		d->len = (uint32_t)piece;
		off += piece;
		d->options = off < len ? XDP_PKT_CONTD : 0;
	}
	return used;
}

static int xdp_send(struct rmpp_link *l, const struct rmpp_txframe *frames, int n)
{
	struct xdp_priv *p = l->priv;
	int sent = 0;
	for (int tries = 0; sent < n && tries < 4; tries++) {
		/* every send: the frame the kernel just completed goes back on
		 * top of the stack and is the next one used, so a ping-pong
		 * reuses one cache-hot UMEM frame (reaping only when frames ran
		 * short cycled through thousands of cold frames: +0.1-0.2 us per
		 * message, measured) */
		reclaim_tx(p);
		int take = 0;
		unsigned descs = 0;
		while (sent + take < n) {
			unsigned d = tx_descs(p, frames[sent + take].len + ETH_HDR);
			if (descs + d > p->tx_nfree)
				break;
			descs += d;
			take++;
		}
		uint32_t idx = 0;
		if (!descs || xsk_ring_prod__reserve(&p->tx, descs, &idx) != descs) {
			kick_tx(l, p, 0);
			continue;
		}
		unsigned slot = 0;
		for (int i = 0; i < take; i++) {
			const struct rmpp_txframe *f = &frames[sent + i];
			uint8_t *eth = f->data - ETH_HDR; /* headroom reserved by the ep */
			memcpy(eth, f->dst.u.mac, 6);
			memcpy(eth + 6, l->self.u.mac, 6);
			eth[12] = (uint8_t)(RMPP_ETHERTYPE >> 8);
			eth[13] = (uint8_t)RMPP_ETHERTYPE;
			slot += put_frame(p, idx + slot, eth, f->len + ETH_HDR);
		}
		xsk_ring_prod__submit(&p->tx, descs);
		sent += take;
		kick_tx(l, p, descs);
	}
	if (sent < n) {
		/* lost like a dropped frame: the reliable layer repairs it */
		l->ep->ctr.xdp_tx_full += (uint64_t)(n - sent);
	}
	return n;
}

static void xdp_close(struct rmpp_link *l)
{
	xdp_free(l->priv);
	l->priv = NULL;
	l->fd = -1;
}

static const char *xdp_desc(struct rmpp_link *l)
{
	struct xdp_priv *p = l->priv;
	return p ? p->desc : "xdp";
}

static void xdp_stats(struct rmpp_link *l, struct rmpp_counters *ctr)
{
	struct xdp_priv *p = l->priv;
	struct xdp_statistics st;
	socklen_t len = sizeof(st);
	memset(&st, 0, sizeof(st));
	if (getsockopt(xsk_socket__fd(p->xsk), SOL_XDP, XDP_STATISTICS, &st, &len) == 0)
		ctr->xdp_rx_dropped = st.rx_dropped + st.rx_ring_full + p->asm_dropped;
}

const struct rmpp_link_ops rmpp_link_xdp_ops = {
    .size = sizeof(struct rmpp_link_ops),
    .name = "xdp",
    .open = xdp_open,
    .recv = xdp_recv,
    .release = xdp_release,
    .send = xdp_send,
    .close = xdp_close,
    .desc = xdp_desc,
    .stats = xdp_stats,
};
