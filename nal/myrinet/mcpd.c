/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mcpd.c - the emulated Myrinet NIC ("MCP firmware"): one daemon per node
 * serving every endpoint of the node.  This file is the daemon: options,
 * the control socket (attach, counters) and the event loop, which spins
 * for --spin-us after the last piece of work and then blocks on one epoll
 * set holding every endpoint's doorbell, control connection and wire.
 * See mcpd(8) and README.md.
 */
#include "mcpd.h"

#include "cpu_share.h"
#include "p3num.h"

#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MCPD_DEFAULT_BASE_PORT    23000
#define MCPD_DEFAULT_SPIN_US      50
#define MCPD_SPIN_REFRESH_US      10000
#define MCPD_DEFAULT_PEER_DEAD_MS 2000
#define MCPD_DEFAULT_SLICE_US     100 /* sched_slice.c: the shortest the kernel grants */
#define MCPD_MAX_SPIN_US          100000
/* A NIC beside its host's only CPU does not spin after its work (spin_update)
 * but for bulk data: for --spin-us after a turn that moved at least this
 * many bytes by DMA (a jumbo frame's payload: a message of several frames is
 * in flight), yielding.  Blocking after every turn, such a NIC was woken for
 * every batch of frames of COMB's 100 KB exchange (offload, the NICs on CPU 1
 * with the support rank, 2026-11-28): with this spin the exchange is 15-20 %
 * faster and ptlbench's offload peak bandwidth +16 %.  A 0-byte ping-pong
 * moves no bulk and keeps the block (spinning after every turn cost ptlbench
 * +25-35 % latency).  Only when every endpoint is offloaded: in interrupt
 * mode the spin took the core from the host's handler (osu_bw -8 to -14 %).
 * nal/myrinet/README.md 3.11. */
#define MCPD_BULK_BYTES           8192
#define MCPD_MAX_PEER_DEAD_MS     3600000 /* rmpp's DEAD_MIN_US at most 3600 s */
/* The NIC's heap (heap_policy): staging buffers up to MCPD_HEAP_MMAP_MIN
 * come from the heap, which gives memory back only once MCPD_HEAP_TRIM_MIN
 * lies free at its top. */
#define MCPD_HEAP_MMAP_MIN (8u << 20)
#define MCPD_HEAP_TRIM_MIN (64u << 20)

static struct mcpd *g_nic;

/* How the loop spent its turns, and the wires' protocol work (rmpp's own
 * counters, summed over the endpoints, the detached ones included): where a
 * message's system calls and wake-ups go (mcpd --counters, README.md §3.5). */
static struct {
	uint64_t sleeps, polls, yields; /* blocking waits, non-blocking waits, spin turns */
	uint64_t bulk_yields;           /* spin turns of a NIC beside its host (bulk_spin) */
	struct rmpp_counters gone;      /* wires of endpoints already destroyed */
} g_loop;

/* rmpp's counters mcpd --counters shows (as wire_<name>) */
#define MCPD_WIRE_COUNTERS(X)                                                                      \
	X(tx_pkts)                                                                                 \
	X(rx_pkts)                                                                                 \
	X(acks_tx)                                                                                 \
	X(acks_rx)                                                                                 \
	X(retx_fast)                                                                               \
	X(retx_rto)                                                                                \
	X(retx_tlp)                                                                                \
	X(retx_echo)                                                                               \
	X(dup_rx)                                                                                  \
	X(ooo_rx)                                                                                  \
	X(ether_rx_dropped)                                                                        \
	X(rx_defers)                                                                               \
	X(probes_tx)                                                                               \
	X(eager_msgs)                                                                              \
	X(rndv_msgs)                                                                               \
	X(solicited_eager)

/* SIGTERM and SIGINT are blocked but inside epoll_pwait (with this mask):
 * a signal landing between the loop's stop check and a blocking wait would
 * otherwise be lost until the next wake-up (ptlrun then waited 2 s and sent
 * SIGKILL). */
static sigset_t g_wait_mask;

static void on_signal(int sig)
{
	(void)sig;
	if (g_nic)
		g_nic->stop = 1;
}

static socklen_t sock_addr(struct sockaddr_un *sa, const char *tag)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	int n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, MYRI_SOCK_FMT,
	                 (unsigned)getuid(), tag && *tag ? "-" : "", tag && *tag ? tag : "");
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int ep_watch(struct mcpd *nic, struct mcpd_ep *ep)
{
	int fds[3] = {ep->conn_fd, ep->doorbell_fd, rmpp_ep_fd(ep->wire)};
	enum mcpd_tag_kind kinds[3] = {MCPD_TAG_CONN, MCPD_TAG_DOORBELL, MCPD_TAG_WIRE};
	/* the doorbell edge-triggered: every host write is one event, and the
	 * NIC need not read the eventfd back (a system call per doorbell);
	 * whatever the host passed as its doorbell, it cannot keep the loop
	 * busy by staying readable */
	uint32_t mode[3] = {EPOLLIN, EPOLLIN | EPOLLET, EPOLLIN};
	for (int i = 0; i < 3; i++) {
		ep->tag[i].kind = kinds[i];
		ep->tag[i].ep = ep;
		struct epoll_event ev = {.events = mode[i], .data.ptr = &ep->tag[i]};
		if (epoll_ctl(nic->epoll_fd, EPOLL_CTL_ADD, fds[i], &ev) != 0)
			return -errno;
	}
	return 0;
}

static void wire_counters_add(struct rmpp_counters *sum, struct rmpp_ep *wire)
{
	struct rmpp_counters c;
	rmpp_counters_get(wire, &c);
#define MCPD_WIRE_ADD(n) sum->n += c.n;
	MCPD_WIRE_COUNTERS(MCPD_WIRE_ADD)
#undef MCPD_WIRE_ADD
}

static void print_loop_counters(const struct mcpd *nic, FILE *out)
{
	struct rmpp_counters sum = g_loop.gone;
	for (const struct mcpd_ep *ep = nic->eps; ep; ep = ep->next)
		wire_counters_add(&sum, ep->wire);
	fprintf(out, "sched_slice_us %u\n", nic->slice_eff_us);
	fprintf(out, "loop_sleeps %llu\nloop_polls %llu\nloop_yields %llu\nloop_bulk_yields %llu\n",
	        (unsigned long long)g_loop.sleeps, (unsigned long long)g_loop.polls,
	        (unsigned long long)g_loop.yields, (unsigned long long)g_loop.bulk_yields);
#define MCPD_WIRE_PRINT(n) fprintf(out, "wire_" #n " %llu\n", (unsigned long long)sum.n);
	MCPD_WIRE_COUNTERS(MCPD_WIRE_PRINT)
#undef MCPD_WIRE_PRINT
}

static void print_counters(const struct mcpd *nic, FILE *out)
{
	static const char *const names[] = {
#define MYRI_COUNTER_NAME(n) #n,
	    MYRI_COUNTERS(MYRI_COUNTER_NAME)
#undef MYRI_COUNTER_NAME
	};
	uint64_t sum[MYRI_NCOUNTERS];
	memcpy(sum, nic->stats.counters, sizeof(sum));
	for (const struct mcpd_ep *ep = nic->eps; ep; ep = ep->next)
		for (int i = 0; i < MYRI_NCOUNTERS; i++)
			sum[i] += atomic_load(&ep->seg->counters[i]);
	fprintf(out, "endpoints %llu\nattaches %llu\ndetaches %llu\nattach_rejected %llu\n",
	        (unsigned long long)nic->stats.endpoints, (unsigned long long)nic->stats.attaches,
	        (unsigned long long)nic->stats.detaches,
	        (unsigned long long)nic->stats.attach_rejected);
	for (int i = 0; i < MYRI_NCOUNTERS; i++)
		fprintf(out, "%s %llu\n", names[i], (unsigned long long)sum[i]);
	fprintf(out, "peers_dead %llu\npeers_gone %llu\nops_peer_failed %llu\nanswers_lost %llu\n",
	        (unsigned long long)nic->stats.peers_dead,
	        (unsigned long long)nic->stats.peers_gone,
	        (unsigned long long)nic->stats.ops_peer_failed,
	        (unsigned long long)nic->stats.answers_lost);
	fprintf(out, "drained %llu\ndrain_cut %llu\n", (unsigned long long)nic->stats.drained,
	        (unsigned long long)nic->stats.drain_cut);
	mcpd_intr_print(nic, out);
	print_loop_counters(nic, out);
}

static void answer_counters(struct mcpd *nic, int fd)
{
	char buf[4096];
	FILE *f = fmemopen(buf, sizeof(buf), "w");
	if (!f)
		return;
	print_counters(nic, f);
	long n = ftell(f);
	fclose(f);
	if (n > 0 && send(fd, buf, (size_t)n, MSG_NOSIGNAL) < 0)
		perror("mcpd: counters reply");
}

static void reap(struct mcpd *nic, int force);

/* Detach the endpoints whose host is gone (draining ones when drained). */
static void reap_dead(struct mcpd *nic)
{
	reap(nic, 0);
}

/* The loop's spin after an attach or detach: none when every CPU the NIC
 * may run on is the only CPU of an attached host (the benchmark placement
 * puts the NIC beside the peer rank): a NIC spinning there holds its own
 * host off, and yielding hands the core to any other job; it then blocks
 * at once and the host rings the doorbell (cpu_share.c). */
static void spin_update(struct mcpd *nic)
{
	cpu_set_t mine, taken, h;
	nic->spin_eff = nic->spin_us;
	nic->bulk_spin = 0;
	if (!nic->spin_auto || !nic->eps || sched_getaffinity(0, sizeof(mine), &mine) != 0)
		return;
	CPU_ZERO(&taken);
	int offloaded = 1;
	for (const struct mcpd_ep *ep = nic->eps; ep; ep = ep->next) {
		if (sched_getaffinity(ep->ospid, sizeof(h), &h) == 0 && CPU_COUNT(&h) == 1)
			CPU_OR(&taken, &taken, &h);
		offloaded &= ep->off != NULL;
	}
	if (myri_cpus_covered(&mine, &taken)) {
		nic->spin_eff = 0;
		/* an offloaded host has no per-message work: while bulk data
		 * moves, the NIC's spin takes nothing it needs (MCPD_BULK_BYTES);
		 * an interrupt handler or a progress thread needs the core */
		nic->bulk_spin = offloaded;
	}
}

/* Bytes the NIC has moved by DMA for its endpoints (both directions). */
static uint64_t dma_bytes(const struct mcpd *nic)
{
	uint64_t n = 0;
	for (const struct mcpd_ep *ep = nic->eps; ep; ep = ep->next)
		n += atomic_load_explicit(&ep->seg->counters[MYRI_C_dma_read_bytes],
		                          memory_order_relaxed) +
		     atomic_load_explicit(&ep->seg->counters[MYRI_C_dma_write_bytes],
		                          memory_order_relaxed);
	return n;
}

/* Endpoints whose host already hung up (it may re-attach with the same pid
 * before the loop has seen the hang-up): detach them now. */
static void reap_hung(struct mcpd *nic)
{
	for (struct mcpd_ep *ep = nic->eps; ep; ep = ep->next) {
		struct pollfd p = {.fd = ep->conn_fd, .events = POLLIN};
		if (poll(&p, 1, 0) > 0)
			ep->dead = 1;
	}
	reap(nic, 1); /* draining ones too: the host's pid may be theirs */
}

/* One request on a new connection: an attach (with three descriptors) or a
 * counters query.  A client that says nothing within a second is dropped. */
static void accept_one(struct mcpd *nic)
{
	int fd = accept4(nic->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	struct myri_attach_req req;
	int fds[3] = {-1, -1, -1};
	char cbuf[CMSG_SPACE(sizeof(fds))];
	struct iovec iov = {&req, sizeof(req)};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	memset(&req, 0, sizeof(req));
	ssize_t n = poll(&pfd, 1, 1000) == 1 ? recvmsg(fd, &mh, MSG_CMSG_CLOEXEC) : -1;
	struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL;
	int nfds = 0;
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
		nfds = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		memcpy(fds, CMSG_DATA(c), (size_t)(nfds < 3 ? nfds : 3) * sizeof(int));
	}
	if (n == (ssize_t)sizeof(req) && req.magic == MYRI_MAGIC && req.op == MYRI_CTL_COUNTERS) {
		answer_counters(nic, fd);
		close(fd);
		return;
	}
	struct myri_attach_rep rep = {
	    .magic = MYRI_MAGIC, .version = MYRI_VERSION, .status = -EINVAL};
	struct mcpd_ep *ep = NULL;
	if (n == (ssize_t)sizeof(req) && req.op == MYRI_CTL_ATTACH && nfds == 3) {
		ep = mcpd_ep_attach(nic, fd, &req, fds, &rep.status);
		if (!ep && rep.status == -EADDRINUSE) {
			reap_hung(nic);
			ep = mcpd_ep_attach(nic, fd, &req, fds, &rep.status);
		}
	}
	if (ep && ep_watch(nic, ep) != 0) {
		mcpd_ep_destroy(ep); /* closes fd and the three descriptors */
		ep = NULL;
		rep.status = -ENOMEM;
		fd = -1;
	}
	if (ep) {
		rep.status = 0;
		rep.nid = ep->nid;
		rep.pid = ep->pid;
		rep.nic_ospid = (uint32_t)getpid();
		ep->next = nic->eps;
		nic->eps = ep;
		nic->stats.attaches++;
		nic->stats.endpoints++;
		spin_update(nic);
	} else {
		nic->stats.attach_rejected++;
		for (int i = 0; i < nfds && i < 3; i++)
			if (fds[i] >= 0 && fd >= 0)
				close(fds[i]);
	}
	if (fd >= 0 && send(fd, &rep, sizeof(rep), MSG_NOSIGNAL) != (ssize_t)sizeof(rep) && ep)
		ep->dead = 1;
	if (!ep && fd >= 0)
		close(fd);
}

/* A host is gone (its hang-up) while its endpoint still has sends on the
 * wire -- the last ACK it owed a peer, a put whose data is in NIC memory:
 * they drain in the background for rmpp's LINGER_US at most, the wire
 * progressed by the loop, instead of inside rmpp_ep_destroy, where every
 * other endpoint of the NIC waited for them (up to 250 ms).  1 while the
 * endpoint stays for that, 0 when it goes. */
static int ep_linger(struct mcpd *nic, struct mcpd_ep *ep, int force)
{
	uint64_t t = now_us();
	if (force && ep->tx_inflight) {
		/* a re-attach wants its pid now (or the NIC stops): the drain
		 * finishes here, blocking, as rmpp_ep_destroy's own linger did */
		uint64_t until = ep->closing ? ep->close_by : t + nic->linger_us;
		while (ep->tx_inflight && now_us() < until)
			rmpp_progress(ep->wire, 1);
	}
	if (!ep->closing) {
		if (force || !ep->tx_inflight || !nic->linger_us)
			return 0;
		ep->closing = 1;
		ep->close_by = t + nic->linger_us;
		epoll_ctl(nic->epoll_fd, EPOLL_CTL_DEL, ep->conn_fd, NULL);
		epoll_ctl(nic->epoll_fd, EPOLL_CTL_DEL, ep->doorbell_fd, NULL);
		return 1;
	}
	if (ep->tx_inflight && t < ep->close_by && !force)
		return 1;
	if (ep->tx_inflight)
		nic->stats.drain_cut++;
	else
		nic->stats.drained++;
	return 0;
}

static void reap(struct mcpd *nic, int force)
{
	for (struct mcpd_ep **pp = &nic->eps; *pp;) {
		struct mcpd_ep *ep = *pp;
		if (!ep->dead || ep_linger(nic, ep, force)) {
			pp = &ep->next;
			continue;
		}
		*pp = ep->next;
		epoll_ctl(nic->epoll_fd, EPOLL_CTL_DEL, ep->conn_fd, NULL);
		epoll_ctl(nic->epoll_fd, EPOLL_CTL_DEL, ep->doorbell_fd, NULL);
		epoll_ctl(nic->epoll_fd, EPOLL_CTL_DEL, rmpp_ep_fd(ep->wire), NULL);
		wire_counters_add(&g_loop.gone, ep->wire);
		mcpd_ep_destroy(ep);
		nic->stats.detaches++;
		nic->stats.endpoints--;
		spin_update(nic);
	}
}

/* One pass over every endpoint: events held back, commands, the wire.
 * The queues are shared memory (no system call); a wire costs several
 * (receive, timer reads, re-arming), so it gets a pass only when epoll
 * said it is ready (a frame, a protocol timer), when this endpoint just
 * did something that may have sent (its timers must be armed), or, as a
 * safety net, once a millisecond: measured, rmpp_progress on every wire in
 * every turn was 3/4 of the NIC's ~22 system calls per message. */
static int poll_all(struct mcpd *nic)
{
	int work = 0, all = 0;
	uint64_t t = now_us();
	if (t - nic->wires_all_at >= 1000) {
		nic->wires_all_at = t;
		all = 1;
	}
	/* hosts may be pinned after they attached (COMB pins its ranks after
	 * MPI_Init): the spin follows their placement within 10 ms */
	if (t - nic->spin_at >= MCPD_SPIN_REFRESH_US) {
		nic->spin_at = t;
		spin_update(nic);
	}
	for (struct mcpd_ep *ep = nic->eps; ep; ep = ep->next) {
		int w = 0;
		if (!ep->closing) { /* else the host is gone: only the wire runs */
			w += mcpd_ep_flush_events(ep);
			w += mcpd_ep_poll_cmds(ep);
			w += mcpd_ep_resume(ep);
		}
		if (w || ep->wire_due || all) {
			int n = rmpp_progress(ep->wire, 0); /* arms the wire's timers too */
			ep->wire_due = 0;
			w += n > 0 ? n : 0;
		}
		work += w;
	}
	return work;
}

static int set_sleeping(struct mcpd *nic, uint32_t v)
{
	int pending = 0;
	for (struct mcpd_ep *ep = nic->eps; ep; ep = ep->next) {
		if (ep->closing) { /* no host to ring: wake for its linger time */
			pending = pending ? pending : -1;
			continue;
		}
		atomic_store(&ep->seg->nic_sleeping, v);
		if (v && atomic_load(&ep->seg->cmdq.tail) != atomic_load(&ep->seg->cmdq.head))
			pending = 1;
		else if (v && ep->backlog && pending == 0) /* no doorbell says the host made room */
			pending = -1;
	}
	return pending;
}

static void handle_ready(struct mcpd *nic, struct mcpd_tag *t, uint32_t events)
{
	switch (t->kind) {
	case MCPD_TAG_LISTEN:
		accept_one(nic);
		break;
	case MCPD_TAG_CONN: /* the host's only message on it is its end */
		if (events & (EPOLLHUP | EPOLLERR | EPOLLIN))
			t->ep->dead = 1;
		break;
	case MCPD_TAG_DOORBELL: /* edge-triggered: nothing to read back */
		mcpd_count(t->ep, MYRI_C_doorbells, 1);
		break;
	case MCPD_TAG_WIRE: /* rmpp_progress() in the next pass reads it */
		t->ep->wire_due = 1;
		break;
	}
}

/* One epoll_wait: which wires have frames or timers, doorbells, hang-ups,
 * a new connection.  1 if anything was ready. */
static int take_ready(struct mcpd *nic, int timeout_ms)
{
	struct epoll_event evs[32];
	int n = epoll_pwait(nic->epoll_fd, evs, 32, timeout_ms, &g_wait_mask);
	/* accepting may detach endpoints (reap_hung): the other events of
	 * the batch, which may point at them, go first */
	int listen_ready = 0;
	for (int i = 0; i < n; i++) {
		struct mcpd_tag *t = evs[i].data.ptr;
		if (t->kind == MCPD_TAG_LISTEN)
			listen_ready = 1;
		else
			handle_ready(nic, t, evs[i].events);
	}
	if (listen_ready)
		accept_one(nic);
	return n > 0;
}

/* The loop.  A turn is one epoll_wait and one pass over the endpoints.
 * The blocking wait already said what is ready, so the pass after it takes
 * no second look (a non-blocking epoll_wait per turn was ~1/3 of the NIC's
 * system calls per message); and a NIC that does not spin goes back to
 * its sleep protocol right after a pass with work: the blocking wait
 * returns at once when something came meanwhile (a frame or hang-up still
 * pending, a doorbell edge not yet reported), so that wait is the look the
 * next turn would have taken. */
static void run(struct mcpd *nic)
{
	uint64_t last_work = now_us(), last_bulk = 0;
	int fresh = 0; /* the blocking wait just took what was ready */
	while (!nic->stop) {
		int ready = fresh;
		if (!fresh) {
			ready = take_ready(nic, 0);
			g_loop.polls++;
		}
		fresh = 0;
		/* the DMA tally only where it decides something (bulk_spin) */
		uint64_t moved = nic->bulk_spin ? dma_bytes(nic) : 0;
		int work = poll_all(nic) || ready;
		moved = nic->bulk_spin ? dma_bytes(nic) - moved : 0;
		reap_dead(nic);
		uint64_t t = now_us();
		if (work)
			last_work = t;
		if (moved >= MCPD_BULK_BYTES)
			last_bulk = t;
		int bulk = nic->bulk_spin && t - last_bulk < nic->spin_us;
		if ((nic->spin_eff && t - last_work < nic->spin_eff) || bulk) {
			if (!work) { /* a host (or another NIC) may share this core: let it in */
				sched_yield();
				g_loop.yields++;
				g_loop.bulk_yields += (uint64_t)bulk;
			}
			continue;
		}
		int pending = set_sleeping(nic, 1);
		if (pending <= 0) {
			fresh = take_ready(nic, pending < 0 ? 1 : -1);
			g_loop.sleeps++;
		}
		set_sleeping(nic, 0);
		/* no reap here: a host that rang and hung up at once (its last
		 * command: an ACK, a barrier put its peer waits for) has that
		 * command run by the next pass, which reaps it afterwards */
		last_work = now_us();
	}
}

/* SIGTERM/SIGINT: no more attaches; every endpoint detached, their sends
 * given the linger time to drain (the NIC goes on moving them), then the
 * rest fails. */
static void shut_down(struct mcpd *nic)
{
	epoll_ctl(nic->epoll_fd, EPOLL_CTL_DEL, nic->listen_fd, NULL);
	close(nic->listen_fd);
	for (struct mcpd_ep *ep = nic->eps; ep; ep = ep->next)
		ep->dead = 1;
	uint64_t until = now_us() + nic->linger_us;
	for (reap_dead(nic); nic->eps && now_us() < until; reap_dead(nic)) {
		poll_all(nic);
		take_ready(nic, 1);
	}
	reap(nic, 1);
}

static int query_counters(const char *tag)
{
	struct sockaddr_un sa;
	socklen_t sl = sock_addr(&sa, tag);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sl) != 0) {
		fprintf(stderr, "mcpd: no NIC is running here (%s)\n", strerror(errno));
		return 1;
	}
	struct myri_attach_req req = {
	    .magic = MYRI_MAGIC, .version = MYRI_VERSION, .op = MYRI_CTL_COUNTERS};
	char buf[4096];
	ssize_t n = -1;
	if (send(fd, &req, sizeof(req), 0) == (ssize_t)sizeof(req))
		n = recv(fd, buf, sizeof(buf), 0);
	close(fd);
	if (n <= 0) {
		fprintf(stderr, "mcpd: the NIC did not answer\n");
		return 1;
	}
	fwrite(buf, 1, (size_t)n, stdout);
	return 0;
}

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: mcpd [options]        run the emulated Myrinet NIC of this node\n"
	    "       mcpd --counters       print the running NIC's counters\n"
	    "  -n, --nic TAG         NIC name (default $P3_MYRI_NIC or none): the control\n"
	    "                        socket is @p3-mcpd-<uid>[-TAG], one per network namespace\n"
	    "  -p, --base-port N     UDP port of Portals pid 0 on the wire (default\n"
	    "                        $P3_MYRI_BASE_PORT or %d)\n"
	    "  -l, --link LINK       the wire: udp (default, $P3_MYRI_LINK) or ether (raw\n"
	    "                        Ethernet between namespace hosts; needs CAP_NET_RAW)\n"
	    "  -i, --ifname IF       ether: the interface (default $P3_MYRI_IFNAME or eth0);\n"
	    "                        peers' MACs come from its neighbour table\n"
	    "  -s, --spin-us N       spin this long after the last work before blocking\n"
	    "                        (default $P3_MCPD_SPIN_US or %d, yielding the CPU; none\n"
	    "                        when every CPU the NIC may use is the only CPU of an\n"
	    "                        attached host: it then blocks at once)\n"
	    "  -d, --peer-dead-ms N  a peer NIC silent this long (after its first unanswered\n"
	    "                        timeout) is dead: what waits on it fails (default\n"
	    "                        $P3_MCPD_PEER_DEAD_MS or %d; all in all within N ms\n"
	    "                        + 2 s of its last frame)\n"
	    "  -S, --slice-us N      ask the kernel for a scheduling slice of N us (Linux\n"
	    "                        >= 6.12; default $P3_MCPD_SLICE_US or %d, 0 = the\n"
	    "                        kernel's): the NIC then gets its core when it wakes\n"
	    "                        instead of waiting for the task beside it to use up\n"
	    "                        its slice (counters: sched_slice_us)\n"
	    "  -c, --counters        print the counters of the NIC already running and exit\n"
	    "  -h, --help            this text\n"
	    "Ranges, from the options or the environment: --base-port 1-65535, --spin-us and\n"
	    "--slice-us 0-100000, --peer-dead-ms 0-3600000 (decimal, 0x hex or 0 octal);\n"
	    "anything else exits with status 2 naming it.\n"
	    "SIGTERM/SIGINT: detach every endpoint (their operations fail) and exit.\n",
	    MCPD_DEFAULT_BASE_PORT, MCPD_DEFAULT_SPIN_US, MCPD_DEFAULT_PEER_DEAD_MS,
	    MCPD_DEFAULT_SLICE_US);
}

static int listen_on(struct mcpd *nic, const char *tag)
{
	struct sockaddr_un sa;
	socklen_t sl = sock_addr(&sa, tag);
	nic->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (nic->listen_fd < 0 || bind(nic->listen_fd, (struct sockaddr *)&sa, sl) != 0 ||
	    listen(nic->listen_fd, 64) != 0) {
		fprintf(stderr, "mcpd: cannot listen on @%s: %s%s\n", sa.sun_path + 1,
		        strerror(errno),
		        errno == EADDRINUSE ? " (a NIC is already running here)" : "");
		return -1;
	}
	nic->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	nic->listen_tag.kind = MCPD_TAG_LISTEN;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &nic->listen_tag};
	if (nic->epoll_fd < 0 || epoll_ctl(nic->epoll_fd, EPOLL_CTL_ADD, nic->listen_fd, &ev)) {
		perror("mcpd: epoll");
		return -1;
	}
	return 0;
}

/* --link / --ifname (mcpd_wire.c); -1 on a bad value. */
static int set_link(struct mcpd *nic, const char *link, const char *ifname)
{
	if (!link || !*link || strcmp(link, "udp") == 0)
		nic->link = RMPP_LINK_UDP;
	else if (strcmp(link, "ether") == 0)
		nic->link = RMPP_LINK_ETHER;
	else {
		fprintf(stderr, "mcpd: --link %s: expected udp or ether\n", link);
		return -1;
	}
	if (!ifname || !*ifname)
		ifname = "eth0";
	if (strlen(ifname) >= sizeof(nic->ifname)) {
		fprintf(stderr, "mcpd: --ifname %s: too long\n", ifname);
		return -1;
	}
	snprintf(nic->ifname, sizeof(nic->ifname), "%s", ifname);
	return 0;
}

/* --slice-us (sched_slice.c): a failure is said only when the slice was asked
 * for explicitly; the default is best effort (sched_slice_us 0). */
static void set_slice(struct mcpd *nic, int given)
{
	int r = myri_sched_set_slice(nic->slice_us);
	nic->slice_eff_us = r > 0 ? (unsigned)r : 0;
	if (r < 0 && given)
		fprintf(stderr, "mcpd: --slice-us %u: the kernel kept its own slice (%s)\n",
		        nic->slice_us,
		        r == -ENOSYS ? "custom slices need Linux 6.12 or later" : strerror(-r));
}

/* The NIC stages every message in a buffer of the message's size
 * (mcpd_offload.c op_new; mcpd_ep.c's receive slots) and frees it when the
 * message is done.  Under glibc's adaptive policy each freshly started NIC
 * got one of two speeds for its whole life: until some buffer above the
 * mmap threshold (128 KiB at start) had been freed, and glibc raised its
 * thresholds for good, a 100 KB buffer freed at the top of the heap went
 * back to the kernel and the next one faulted its pages in again.  In
 * COMB's 100 KB exchange that was ~3000 brk calls a second per NIC (strace
 * -c), and such a job ran its exchange ~50 us slower per iteration (the
 * PWW knee's "slow state", README §3.12).  Fixed thresholds: the same
 * policy from the first message on. */
static void heap_policy(void)
{
	if (!mallopt(M_MMAP_THRESHOLD, (int)MCPD_HEAP_MMAP_MIN) ||
	    !mallopt(M_TRIM_THRESHOLD, (int)MCPD_HEAP_TRIM_MIN))
		fprintf(stderr, "mcpd: mallopt failed: the heap keeps glibc's adaptive policy\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"nic", required_argument, NULL, 'n'},
	                                     {"base-port", required_argument, NULL, 'p'},
	                                     {"spin-us", required_argument, NULL, 's'},
	                                     {"counters", no_argument, NULL, 'c'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {"link", required_argument, NULL, 'l'},
	                                     {"ifname", required_argument, NULL, 'i'},
	                                     {"peer-dead-ms", required_argument, NULL, 'd'},
	                                     {"slice-us", required_argument, NULL, 'S'},
	                                     {NULL, 0, NULL, 0}};
	static struct mcpd nic;
	const char *tag = getenv("P3_MYRI_NIC");
	const char *s = getenv("P3_MYRI_BASE_PORT");
	const char *link = getenv("P3_MYRI_LINK");
	const char *ifname = getenv("P3_MYRI_IFNAME");
	int counters = 0, slice_given = 0, o;
	nic.base_port = (unsigned)p3num_env_u64("mcpd", "P3_MYRI_BASE_PORT", MCPD_DEFAULT_BASE_PORT,
	                                        1, 65535, P3NUM_BASE0);
	nic.spin_us = MCPD_DEFAULT_SPIN_US;
	nic.spin_auto = 1;
	nic.peer_dead_ms =
	    (unsigned)p3num_env_u64("mcpd", "P3_MCPD_PEER_DEAD_MS", MCPD_DEFAULT_PEER_DEAD_MS, 0,
	                            MCPD_MAX_PEER_DEAD_MS, P3NUM_BASE0);
	char msg[256];
	heap_policy();
	nic.slice_us = myri_slice_env("P3_MCPD_SLICE_US", MCPD_DEFAULT_SLICE_US, &slice_given, msg,
	                              sizeof(msg));
	if (slice_given < 0)
		p3num_usage_exit("mcpd", msg);
	if ((s = getenv("P3_MCPD_SPIN_US")) && *s) {
		nic.spin_us = (unsigned)p3num_arg_u64("mcpd", "P3_MCPD_SPIN_US", s, 0,
		                                      MCPD_MAX_SPIN_US, P3NUM_BASE0);
		nic.spin_auto = 0;
	}
	while ((o = getopt_long(argc, argv, "n:p:s:l:i:d:S:ch", opts, NULL)) != -1) {
		switch (o) {
		case 'n':
			tag = optarg;
			break;
		case 'p':
			nic.base_port = (unsigned)p3num_arg_u64("mcpd", "--base-port", optarg, 1,
			                                        65535, P3NUM_BASE0);
			break;
		case 's':
			nic.spin_us = (unsigned)p3num_arg_u64("mcpd", "--spin-us", optarg, 0,
			                                      MCPD_MAX_SPIN_US, P3NUM_BASE0);
			nic.spin_auto = 0;
			break;
		case 'c':
			counters = 1;
			break;
		case 'd':
			nic.peer_dead_ms =
			    (unsigned)p3num_arg_u64("mcpd", "--peer-dead-ms", optarg, 0,
			                            MCPD_MAX_PEER_DEAD_MS, P3NUM_BASE0);
			break;
		case 'S':
			nic.slice_us = (unsigned)p3num_arg_u64("mcpd", "--slice-us", optarg, 0,
			                                       MYRI_MAX_SLICE_US, P3NUM_BASE0);
			slice_given = 1;
			break;
		case 'l':
			link = optarg;
			break;
		case 'i':
			ifname = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (set_link(&nic, link, ifname) != 0 || optind < argc || nic.base_port == 0 ||
	    nic.base_port > 65535) {
		usage(stderr);
		return 2;
	}
	if (counters)
		return query_counters(tag);
	if (listen_on(&nic, tag) != 0)
		return 1;
	nic.spin_eff = nic.spin_us;
	set_slice(&nic, slice_given);
	nic.linger_us = mcpd_wire_linger_us();
	g_nic = &nic;
	struct sigaction sa = {.sa_handler = on_signal};
	sigset_t stop_sigs;
	sigemptyset(&stop_sigs);
	sigaddset(&stop_sigs, SIGTERM);
	sigaddset(&stop_sigs, SIGINT);
	sigprocmask(SIG_BLOCK, &stop_sigs, &g_wait_mask); /* delivered in take_ready only */
	sigdelset(&g_wait_mask, SIGTERM);
	sigdelset(&g_wait_mask, SIGINT);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	run(&nic);
	shut_down(&nic);
	if (getenv("P3_MYRI_STATS"))
		print_counters(&nic, stderr);
	free(nic.macs);
	return 0;
}
