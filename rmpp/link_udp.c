/* SPDX-License-Identifier: BSD-3-Clause */
/* link_udp.c - rmpp link over UDP/IPv4: recvmmsg/sendmmsg batches, DF set
 * (IP_PMTUDISC_DO, never fragments), frame size from the interface MTU.
 *
 * Fast path: the message headers are built once.  A poll of an empty socket
 * with recvmmsg costs about twice a recvfrom (msghdr and iovec import), and
 * a progress loop spins on empty polls, so the link polls with recvfrom
 * while traffic is sparse (request/response: a frame, then an empty poll)
 * and switches to recvmmsg batches after two polls in a row found data (a
 * stream), back after a batch of at most one frame.  A lone
 * frame goes out with sendto, several with sendmmsg.
 *
 * Direct frames (the peer knows us: rmpp_txframe.direct) leave from a
 * socket connected to the peer, one per peer up to SEND_SOCKETS: an
 * unconnected sendto looks the route up for every frame (~0.35 us here, a
 * sixth of a loopback round trip).  Such a socket has its own ephemeral
 * port; the peer finds the connection by (ip, src_ep, src_epoch), and
 * answers to the bound port.  Only a RESET for an unknown source comes back
 * to the ephemeral port: the send sockets sit in an epoll set (aux_fd) that
 * recv() drains when the endpoint asks (poll_aux).
 *
 * UDP GSO (UDP_SEGMENT, config GSO): a run of frames to one destination,
 * all but the last exactly as long as the first and the last no longer,
 * leaves as one send that the kernel cuts back into those frames after the
 * route (a NIC with UDP segmentation offload cuts them in hardware).  The
 * stack is crossed once per run instead of once per frame: a stream of
 * 9000-byte frames costs the sender about 40 % less here.  The receiver sees
 * ordinary datagrams.  A kernel or device that refuses it (EIO: no checksum
 * offload; EINVAL, ENOPROTOOPT) turns it off for the link, once, logged. */
#include "rmpp_int.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <unistd.h>

#define UDP_IP_OVERHEAD 28 /* IPv4 header + UDP header */
#define GSO_MAX_BYTES   65000u /* one GSO send: under 64 KiB of IPv4 payload */
#define GSO_MAX_SEGS    64     /* UDP_MAX_SEGMENTS of the oldest kernels with GSO */
#define GSO_CTL_SIZE    CMSG_SPACE(sizeof(uint16_t))

struct udp_priv {
	unsigned batch;
	size_t bufsz;
	uint8_t *bufs;
	struct mmsghdr *rmsg;
	struct iovec *riov;
	struct sockaddr_in *rsa;
	struct mmsghdr *smsg;
	struct iovec *siov;
	struct sockaddr_in *ssa;
	int use_mmsg; /* a stream: poll with recvmmsg batches */
	int streak;   /* consecutive recvfrom polls that found data */
	/* connected send sockets, open addressing on (ip, port); never removed */
	struct udp_dsock *dsocks;
	unsigned ndsock, dsock_cap;
	struct mmsghdr *dmsg;     /* sendmmsg on a connected socket: no names */
	bool gso;                 /* config GSO, until the kernel refuses it */
	struct mmsghdr *gmsg;     /* GSO sends: a group of frames per entry */
	int *gcount;              /* frames of each gmsg entry */
	uint8_t *gctl;            /* UDP_SEGMENT control message of each entry */
	struct sockaddr_in local; /* bound address (the port replaced by 0) */
	int sockbuf;
};

struct udp_dsock {
	bool used;
	uint16_t port; /* network order */
	uint32_t ip;   /* network order */
	int fd;        /* -1: could not be opened, use the bound socket */
};

/* MTU of the interface owning ip (network order); for INADDR_ANY the
 * smallest MTU of the running IPv4 interfaces.  0 if unknown. */
static size_t udp_iface_mtu(uint32_t ip)
{
	struct ifaddrs *ifa, *i;
	size_t best = 0;
	if (getifaddrs(&ifa) != 0)
		return 0;
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	for (i = ifa; i && s >= 0; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP))
			continue;
		const struct sockaddr_in *sin = (const struct sockaddr_in *)i->ifa_addr;
		if (ip != htonl(INADDR_ANY) && sin->sin_addr.s_addr != ip)
			continue;
		struct ifreq ifr;
		memset(&ifr, 0, sizeof(ifr));
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", i->ifa_name);
		if (ioctl(s, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0) {
			size_t m = (size_t)ifr.ifr_mtu;
			if (!best || m < best)
				best = m;
		}
	}
	if (s >= 0)
		close(s);
	freeifaddrs(ifa);
	return best;
}

static void udp_free(struct udp_priv *p)
{
	if (!p)
		return;
	free(p->bufs);
	free(p->rmsg);
	free(p->riov);
	free(p->rsa);
	free(p->smsg);
	free(p->siov);
	free(p->ssa);
	free(p->dmsg);
	free(p->gmsg);
	free(p->gcount);
	free(p->gctl);
	for (unsigned i = 0; p->dsocks && i < p->dsock_cap; i++)
		if (p->dsocks[i].used && p->dsocks[i].fd >= 0)
			close(p->dsocks[i].fd);
	free(p->dsocks);
	free(p);
}

static void set_bufsize(struct rmpp_link *l, int fd, int opt, int force_opt, int want)
{
	/* SO_*BUFFORCE ignores rmem_max/wmem_max but needs CAP_NET_ADMIN. */
	if (setsockopt(fd, SOL_SOCKET, force_opt, &want, sizeof(want)) == 0)
		return;
	if (setsockopt(fd, SOL_SOCKET, opt, &want, sizeof(want)) != 0)
		rmpp_log(l->ep, RMPP_LOG_WARN, NULL, "setsockopt buffer %d: %s", want,
			 strerror(errno));
}

static int udp_open(struct rmpp_link *l, const struct rmpp_ep_attr *attr,
		    const struct rmpp_config *cfg)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	if (attr->udp_addr && *attr->udp_addr) {
		if (inet_pton(AF_INET, attr->udp_addr, &sa.sin_addr) != 1) {
			rmpp_log(l->ep, RMPP_LOG_ERR, NULL, "bad IPv4 address '%s'", attr->udp_addr);
			return -EINVAL;
		}
	} else {
		sa.sin_addr.s_addr = htonl(INADDR_ANY);
	}
	sa.sin_port = htons(attr->udp_port);

	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int pmtu = IP_PMTUDISC_DO;
	/* No SO_REUSEADDR: the port is the Portals pid, and a second process
	 * binding it must fail (PTL_PID_INVALID), not share it. */
	if (setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)) != 0)
		rmpp_log(l->ep, RMPP_LOG_WARN, NULL, "IP_MTU_DISCOVER: %s", strerror(errno));
	set_bufsize(l, fd, SO_RCVBUF, SO_RCVBUFFORCE, (int)cfg->sockbuf);
	set_bufsize(l, fd, SO_SNDBUF, SO_SNDBUFFORCE, (int)cfg->sockbuf);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int err = -errno;
		rmpp_log(l->ep, RMPP_LOG_ERR, NULL, "bind %s:%u: %s",
			 attr->udp_addr ? attr->udp_addr : "*", attr->udp_port, strerror(errno));
		close(fd);
		return err;
	}
	socklen_t slen = sizeof(sa);
	getsockname(fd, (struct sockaddr *)&sa, &slen);

	size_t mtu = cfg->mtu;
	size_t ifmtu = udp_iface_mtu(sa.sin_addr.s_addr);
	if (ifmtu > UDP_IP_OVERHEAD && ifmtu - UDP_IP_OVERHEAD < mtu)
		mtu = ifmtu - UDP_IP_OVERHEAD;
	if (mtu > 65507)
		mtu = 65507;

	struct udp_priv *p = calloc(1, sizeof(*p));
	if (!p) {
		close(fd);
		return -ENOMEM;
	}
	p->batch = (unsigned)cfg->batch;
	p->bufsz = mtu + 64;
	p->bufs = malloc(p->bufsz * p->batch);
	p->rmsg = calloc(p->batch, sizeof(*p->rmsg));
	p->riov = calloc(p->batch, sizeof(*p->riov));
	p->rsa = calloc(p->batch, sizeof(*p->rsa));
	p->smsg = calloc(p->batch, sizeof(*p->smsg));
	p->siov = calloc(p->batch, sizeof(*p->siov));
	p->ssa = calloc(p->batch, sizeof(*p->ssa));
	p->dmsg = calloc(p->batch, sizeof(*p->dmsg));
	p->gso = cfg->gso != 0;
	p->gmsg = calloc(p->batch, sizeof(*p->gmsg));
	p->gcount = calloc(p->batch, sizeof(*p->gcount));
	p->gctl = calloc(p->batch, GSO_CTL_SIZE);
	/* twice the peers that get one: the probe sequences stay short */
	p->dsock_cap = cfg->send_sockets ? 2 * (unsigned)cfg->send_sockets : 0;
	p->dsocks = p->dsock_cap ? calloc(p->dsock_cap, sizeof(*p->dsocks)) : NULL;
	p->local = sa;
	p->local.sin_port = 0;
	p->sockbuf = (int)cfg->sockbuf;
	l->aux_fd = p->dsock_cap ? epoll_create1(EPOLL_CLOEXEC) : -1;
	if (!p->bufs || !p->rmsg || !p->riov || !p->rsa || !p->smsg || !p->siov || !p->ssa ||
	    !p->dmsg || !p->gmsg || !p->gcount || !p->gctl ||
	    (p->dsock_cap && (!p->dsocks || l->aux_fd < 0))) {
		if (l->aux_fd >= 0)
			close(l->aux_fd);
		l->aux_fd = -1;
		udp_free(p);
		close(fd);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < p->batch; i++) {
		p->riov[i].iov_base = p->bufs + (size_t)i * p->bufsz;
		p->riov[i].iov_len = p->bufsz;
		p->rmsg[i].msg_hdr.msg_iov = &p->riov[i];
		p->rmsg[i].msg_hdr.msg_iovlen = 1;
		p->rmsg[i].msg_hdr.msg_name = &p->rsa[i];
		p->rmsg[i].msg_hdr.msg_namelen = sizeof(p->rsa[i]);
		p->smsg[i].msg_hdr.msg_iov = &p->siov[i];
		p->smsg[i].msg_hdr.msg_iovlen = 1;
		p->smsg[i].msg_hdr.msg_name = &p->ssa[i];
		p->smsg[i].msg_hdr.msg_namelen = sizeof(p->ssa[i]);
		p->ssa[i].sin_family = AF_INET;
		p->dmsg[i].msg_hdr.msg_iov = &p->siov[i];
		p->dmsg[i].msg_hdr.msg_iovlen = 1;
	}
	l->fd = fd;
	l->mtu = mtu;
	l->priv = p;
	l->require_crc = (int)cfg->crc;
	rmpp_addr_udp(&l->self, sa.sin_addr.s_addr, sa.sin_port, attr->ep_id);
	return 0;
}

/* Frames that reached the connected send sockets (RESETs answering a direct
 * frame from a peer that no longer knows us).  Their source is the peer's
 * bound address: the connection's own. */
static int udp_recv_aux(struct rmpp_link *l, struct rmpp_rxframe *frames, int n)
{
	struct udp_priv *p = l->priv;
	struct epoll_event ev[8];
	int got = 0;
	int r = epoll_wait(l->aux_fd, ev, n < 8 ? n : 8, 0);
	for (int i = 0; i < r && got < n; i++) {
		socklen_t sl = sizeof(p->rsa[got]);
		uint8_t *buf = p->bufs + (size_t)got * p->bufsz;
		ssize_t len = recvfrom(ev[i].data.fd, buf, p->bufsz, MSG_DONTWAIT | MSG_TRUNC,
		                       (struct sockaddr *)&p->rsa[got], &sl);
		if (len < 0)
			continue; /* e.g. ECONNREFUSED: the peer's port is closed */
		frames[got].data = buf;
		frames[got].len = (size_t)len > p->bufsz ? 0 : (size_t)len;
		rmpp_addr_udp(&frames[got].src, p->rsa[got].sin_addr.s_addr, p->rsa[got].sin_port,
		              0);
		got++;
	}
	return got;
}

static int udp_recv(struct rmpp_link *l, struct rmpp_rxframe *frames, int n)
{
	struct udp_priv *p = l->priv;
	if ((unsigned)n > p->batch)
		n = (int)p->batch;
	if (n <= 0)
		return 0;
	if (l->poll_aux) {
		l->poll_aux = false;
		if (p->ndsock) {
			int got = udp_recv_aux(l, frames, n);
			if (got > 0)
				return got;
		}
	}
	if (!p->use_mmsg || n == 1) {
		socklen_t sl = sizeof(p->rsa[0]);
		ssize_t r = recvfrom(l->fd, p->bufs, p->bufsz, MSG_DONTWAIT | MSG_TRUNC,
				     (struct sockaddr *)&p->rsa[0], &sl);
		if (r < 0) {
			p->streak = 0;
			return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -errno;
		}
		frames[0].data = p->bufs;
		frames[0].len = (size_t)r > p->bufsz ? 0 : (size_t)r; /* oversize: dropped */
		rmpp_addr_udp(&frames[0].src, p->rsa[0].sin_addr.s_addr, p->rsa[0].sin_port, 0);
		if (++p->streak >= 2) /* data twice in a row: a stream, batch */
			p->use_mmsg = 1;
		return 1;
	}
	for (int i = 0; i < n; i++) {
		p->rmsg[i].msg_hdr.msg_namelen = sizeof(p->rsa[i]);
		p->rmsg[i].msg_hdr.msg_flags = 0;
	}
	int got = recvmmsg(l->fd, p->rmsg, (unsigned)n, MSG_DONTWAIT, NULL);
	if (got < 0) {
		p->use_mmsg = 0;
		p->streak = 0;
		return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -errno;
	}
	if (got <= 1) {
		p->use_mmsg = 0;
		p->streak = got;
	}
	for (int i = 0; i < got; i++) {
		frames[i].data = p->riov[i].iov_base;
		frames[i].len = p->rmsg[i].msg_len;
		if (p->rmsg[i].msg_hdr.msg_flags & MSG_TRUNC)
			frames[i].len = 0; /* oversize: dropped as malformed */
		rmpp_addr_udp(&frames[i].src, p->rsa[i].sin_addr.s_addr, p->rsa[i].sin_port, 0);
	}
	return got;
}

static void udp_release(struct rmpp_link *l)
{
	(void)l;
}

static void udp_send_error(struct rmpp_link *l, const struct rmpp_txframe *f)
{
	if (errno == EMSGSIZE)
		rmpp_log(l->ep, RMPP_LOG_WARN, &f->dst,
			 "frame of %zu bytes too large for the path (EMSGSIZE)", f->len);
	/* skip the failing frame: the reliable layer repairs */
	l->ep->ctr.send_errors++;
}

static unsigned dsock_hash(uint32_t ip, uint16_t port, unsigned cap)
{
	uint32_t h = (ip ^ ((uint32_t)port << 16 | port)) * 2654435761u;
	return (h ^ (h >> 16)) % cap;
}

static int dsock_open(struct rmpp_link *l, struct udp_priv *p, uint32_t ip, uint16_t port)
{
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_addr.s_addr = ip, .sin_port = port};
	int pmtu = IP_PMTUDISC_DO;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
	if (setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)) != 0 ||
	    bind(fd, (struct sockaddr *)&p->local, sizeof(p->local)) != 0 ||
	    connect(fd, (struct sockaddr *)&to, sizeof(to)) != 0 ||
	    epoll_ctl(l->aux_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		rmpp_log(l->ep, RMPP_LOG_INFO, NULL,
		         "connected send socket: %s (bound socket used)", strerror(errno));
		l->ep->ctr.dsock_errors++;
		close(fd);
		return -1;
	}
	set_bufsize(l, fd, SO_SNDBUF, SO_SNDBUFFORCE, p->sockbuf);
	return fd;
}

/* The connected socket for dst, opened on first use; -1: use the bound one
 * (no room left, or it could not be opened). */
static int dsock_fd(struct rmpp_link *l, struct udp_priv *p, const struct rmpp_addr *dst)
{
	uint32_t ip = dst->u.udp.ip;
	uint16_t port = dst->u.udp.port;
	if (!p->dsock_cap)
		return -1;
	for (unsigned i = dsock_hash(ip, port, p->dsock_cap);; i = (i + 1) % p->dsock_cap) {
		struct udp_dsock *d = &p->dsocks[i];
		if (d->used && d->ip == ip && d->port == port)
			return d->fd;
		if (!d->used) {
			if (2 * p->ndsock >= p->dsock_cap)
				return -1; /* SEND_SOCKETS peers have theirs */
			d->used = true;
			d->ip = ip;
			d->port = port;
			d->fd = dsock_open(l, p, ip, port);
			p->ndsock++;
			return d->fd;
		}
	}
}

/* How many frames from f[0] on (at most max) can leave as one GSO send:
 * all but the last as long as the first, the last no longer, one
 * destination (a connected socket has only one). */
static int gso_group(const struct rmpp_txframe *f, int max, bool connected)
{
	size_t seg = f[0].len, total = seg;
	int g = 1;
	while (g < max && g < GSO_MAX_SEGS && f[g - 1].len == seg && f[g].len <= seg &&
	       total + f[g].len <= GSO_MAX_BYTES &&
	       (connected || (f[g].dst.u.udp.ip == f[0].dst.u.udp.ip &&
	                      f[g].dst.u.udp.port == f[0].dst.u.udp.port))) {
		total += f[g].len;
		g++;
	}
	return g;
}

/* One sendmmsg entry: frames f[0..g) gathered, cut at f[0].len if g > 1. */
static void gso_entry(struct udp_priv *p, unsigned i, struct iovec *iov,
                      const struct rmpp_txframe *f, int g, bool connected)
{
	struct msghdr *h = &p->gmsg[i].msg_hdr;
	for (int k = 0; k < g; k++) {
		iov[k].iov_base = (void *)f[k].data;
		iov[k].iov_len = f[k].len;
	}
	memset(h, 0, sizeof(*h));
	h->msg_iov = iov;
	h->msg_iovlen = (size_t)g;
	if (!connected) {
		p->ssa[i].sin_addr.s_addr = f[0].dst.u.udp.ip;
		p->ssa[i].sin_port = f[0].dst.u.udp.port;
		h->msg_name = &p->ssa[i];
		h->msg_namelen = sizeof(p->ssa[i]);
	}
	if (g > 1) {
		struct cmsghdr *cm = (struct cmsghdr *)(p->gctl + (size_t)i * GSO_CTL_SIZE);
		uint16_t seg = (uint16_t)f[0].len;
		h->msg_control = cm;
		h->msg_controllen = GSO_CTL_SIZE;
		cm->cmsg_level = SOL_UDP;
		cm->cmsg_type = UDP_SEGMENT;
		cm->cmsg_len = CMSG_LEN(sizeof(seg));
		memcpy(CMSG_DATA(cm), &seg, sizeof(seg));
	}
	p->gcount[i] = g;
}

/* The kernel refused a GSO send for a reason that will not go away. */
static bool gso_refused(int err)
{
	return err == EIO || err == EINVAL || err == ENOPROTOOPT || err == EOPNOTSUPP;
}

/* n >= 2 frames through fd, grouped for GSO.  Returns how many went out
 * (or failed for good); fewer than n only when GSO was just turned off. */
static int udp_send_gso(struct rmpp_link *l, int fd, bool connected,
                        const struct rmpp_txframe *frames, int n)
{
	struct udp_priv *p = l->priv;
	int done = 0;
	while (done < n) {
		unsigned nmsg = 0, niov = 0;
		int pos = done;
		while (pos < n && nmsg < p->batch && niov < p->batch) {
			int g = gso_group(frames + pos,
			                  (int)(p->batch - niov) < n - pos ? (int)(p->batch - niov)
			                                                   : n - pos,
			                  connected);
			gso_entry(p, nmsg++, &p->siov[niov], frames + pos, g, connected);
			niov += (unsigned)g;
			pos += g;
		}
		int r = sendmmsg(fd, p->gmsg, nmsg, MSG_DONTWAIT);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (p->gcount[0] > 1 && gso_refused(errno)) {
				rmpp_log(l->ep, RMPP_LOG_INFO, &frames[done].dst,
				         "UDP GSO refused (%s): frames go out one by one",
				         strerror(errno));
				p->gso = false;
				return done;
			}
			udp_send_error(l, &frames[done]);
			r = 1; /* skip the failing group: the reliable layer repairs */
		}
		for (int i = 0; i < r; i++) {
			done += p->gcount[i];
			if (p->gcount[i] > 1)
				l->ep->ctr.tx_gso++;
		}
	}
	return done;
}

/* A run of n >= 1 frames through one socket: the bound one (fd < 0; each
 * frame named with its destination) or a peer's connected one (no names).
 * A lone frame goes out with send/sendto (no msghdr import), several with
 * sendmmsg; a failing frame is skipped (the reliable layer repairs). */
static void udp_send_run(struct rmpp_link *l, int fd, const struct rmpp_txframe *frames, int n)
{
	struct udp_priv *p = l->priv;
	bool connected = fd >= 0;
	int sent = 0;
	if (connected)
		l->ep->ctr.tx_direct += (uint64_t)n;
	else
		fd = l->fd;
	if (n == 1) { /* the request/response case */
		struct sockaddr_in sa = {.sin_family = AF_INET,
		                         .sin_addr.s_addr = frames[0].dst.u.udp.ip,
		                         .sin_port = frames[0].dst.u.udp.port};
		for (;;) {
			ssize_t r = connected
			                ? send(fd, frames[0].data, frames[0].len, MSG_DONTWAIT)
			                : sendto(fd, frames[0].data, frames[0].len, MSG_DONTWAIT,
			                         (struct sockaddr *)&sa, sizeof(sa));
			if (r >= 0)
				return;
			if (errno != EINTR)
				break;
		}
		udp_send_error(l, &frames[0]);
		return;
	}
	if (p->gso)
		sent = udp_send_gso(l, fd, connected, frames, n);
	while (sent < n) {
		int m = n - sent;
		if ((unsigned)m > p->batch)
			m = (int)p->batch;
		for (int i = 0; i < m; i++) {
			const struct rmpp_txframe *f = &frames[sent + i];
			p->siov[i].iov_base = (void *)f->data;
			p->siov[i].iov_len = f->len;
			p->ssa[i].sin_addr.s_addr = f->dst.u.udp.ip;
			p->ssa[i].sin_port = f->dst.u.udp.port;
		}
		int r = sendmmsg(fd, connected ? p->dmsg : p->smsg, (unsigned)m, MSG_DONTWAIT);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			udp_send_error(l, &frames[sent]);
			r = 1;
		}
		sent += r;
	}
}

static int frame_fd(struct rmpp_link *l, const struct rmpp_txframe *f)
{
	return f->direct ? dsock_fd(l, l->priv, &f->dst) : -1;
}

/* Runs of frames that share a socket (and so, connected, a destination) go
 * out together. */
static int udp_send(struct rmpp_link *l, const struct rmpp_txframe *frames, int n)
{
	int i = 0, fd = n > 0 ? frame_fd(l, &frames[0]) : -1;
	while (i < n) {
		int j = i + 1, next = -1;
		while (j < n && (next = frame_fd(l, &frames[j])) == fd)
			j++;
		udp_send_run(l, fd, frames + i, j - i);
		i = j;
		fd = next;
	}
	return n;
}

static void udp_close(struct rmpp_link *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	if (l->aux_fd >= 0)
		close(l->aux_fd);
	l->aux_fd = -1;
	udp_free(l->priv);
	l->priv = NULL;
}

const struct rmpp_link_ops rmpp_link_udp_ops = {
	.size = sizeof(struct rmpp_link_ops),
	.name = "udp",
	.open = udp_open,
	.recv = udp_recv,
	.release = udp_release,
	.send = udp_send,
	.close = udp_close,
};
