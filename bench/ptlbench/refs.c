/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * refs.c - reference measurements, taken in the same run by the same two
 * processes as the Portals figures, so a ratio says what the library costs:
 *
 *   shm-flag   raw shared-memory ping-pong of a cache-line flag through a
 *              small /dev/shm segment (half round trip): the floor of any
 *              same-node latency.
 *   udp-pp     raw UDP ping-pong between the two ranks (udp/ether NALs), over
 *              the ranks' own addresses (loopback on one node): spin
 *              P3_RMPP_SPIN_US with MSG_DONTWAIT, then block in recv -- the
 *              way rmpp progress waits; pure busy-poll and pure blocking
 *              figures are printed beside it.
 *   udp-stream raw UDP stream between the two ranks in datagrams of rmpp's
 *              frame size, 1 MiB bursts, two bursts in flight (goodput).
 *   memcpy     single-process memcpy bandwidth; buffers rotate through a span
 *              well beyond the last-level cache for sizes >= 1 MiB.
 *
 * The references are a table (pb_refs[]); the first usable one of a kind is
 * the column beside the test figures.  Also here: the shared segment itself and
 * the control channel over it that --ref-only uses when there is no Portals.
 */
#include "config.h"

#include "ptlbench.h"
#include "p3num.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PB_SEG_MAGIC 0x70746c62u /* "ptlb" */
#define PB_SEG_VERSION 2u
#define PB_SEG_HDR 4096u /* struct pb_seg; the ring floor's area follows (floor.c) */
#define PB_SEG_SIZE (PB_SEG_HDR + PB_FLOOR_AREA)
#define PB_RENDEZVOUS_S 30.0
#define PB_SPIN_CHECK 0xFFFFu

enum { SEG_CREATED = 1, SEG_JOINED = 2, SEG_ACKED = 3 };

/* Layout pinned below; version first.  Each rank writes only its own line. */
struct pb_seg {
	_Atomic uint32_t magic;
	uint32_t version;
	_Atomic uint32_t state;
	uint32_t pad0;
	_Alignas(64) _Atomic uint64_t ping; /* written by rank 0 */
	_Alignas(64) _Atomic uint64_t pong; /* written by rank 1 */
	_Alignas(64) _Atomic uint32_t bar_count;
	_Atomic uint32_t bar_gen; /* futex word */
	_Atomic uint64_t bar_val[2][2]; /* [generation parity][rank] */
};
_Static_assert(sizeof(struct pb_seg) <= PB_SEG_HDR, "segment layout");
_Static_assert(offsetof(struct pb_seg, ping) == 64 && offsetof(struct pb_seg, pong) == 128,
	       "flags on their own cache lines");

/* Name of a segment this process created and has not yet unlinked. */
static char pb_owned_name[96];

void pb_seg_cleanup_name(void)
{
	if (pb_owned_name[0]) {
		shm_unlink(pb_owned_name);
		pb_owned_name[0] = '\0';
	}
}

static void sleep_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};

	nanosleep(&ts, NULL);
}

static void seg_create(struct pb_ctx *c)
{
	double deadline = pb_now() + PB_RENDEZVOUS_S;
	struct pb_seg *s;
	int fd, tries;

	for (tries = 0;; tries++) {
		shm_unlink(c->seg_name); /* a stale one from a crashed run */
		fd = shm_open(c->seg_name, O_RDWR | O_CREAT | O_EXCL, 0600);
		if (fd >= 0)
			break;
		if (errno != EEXIST || tries > 100)
			pb_die(c, "shm_open(%s): %s", c->seg_name, strerror(errno));
	}
	snprintf(pb_owned_name, sizeof(pb_owned_name), "%s", c->seg_name);
	if (ftruncate(fd, PB_SEG_SIZE) != 0)
		pb_die(c, "ftruncate(%s): %s", c->seg_name, strerror(errno));
	s = mmap(NULL, PB_SEG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (s == MAP_FAILED)
		pb_die(c, "mmap(%s): %s", c->seg_name, strerror(errno));
	close(fd);
	s->version = PB_SEG_VERSION;
	atomic_store(&s->state, SEG_CREATED);
	atomic_store(&s->magic, PB_SEG_MAGIC);
	while (atomic_load(&s->state) != SEG_JOINED) {
		if (pb_now() > deadline)
			pb_die(c, "rank 1 did not map the shared segment %s within %.0f s", c->seg_name,
			       PB_RENDEZVOUS_S);
		sleep_us(200);
	}
	atomic_store(&s->state, SEG_ACKED);
	pb_seg_cleanup_name(); /* both mapped: unlink at once */
	c->seg = s;
}

/* Join rank 0's segment.  A stale segment (a crashed earlier run with the
 * same name) is recognised: it is never acknowledged and rank 0 unlinks it. */
static void seg_join(struct pb_ctx *c)
{
	double deadline = pb_now() + PB_RENDEZVOUS_S;

	for (;;) {
		struct pb_seg *s;
		struct stat st;
		uint32_t expect = SEG_CREATED;
		double t;
		int fd;

		if (pb_now() > deadline)
			pb_die(c, "no shared segment %s from rank 0 within %.0f s", c->seg_name, PB_RENDEZVOUS_S);
		fd = shm_open(c->seg_name, O_RDWR, 0);
		if (fd < 0) {
			if (errno != ENOENT)
				pb_die(c, "shm_open(%s): %s", c->seg_name, strerror(errno));
			sleep_us(500);
			continue;
		}
		if (fstat(fd, &st) != 0 || st.st_size < (off_t)PB_SEG_SIZE) {
			close(fd);
			sleep_us(500);
			continue;
		}
		s = mmap(NULL, PB_SEG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (s == MAP_FAILED)
			pb_die(c, "mmap(%s): %s", c->seg_name, strerror(errno));
		for (t = pb_now() + 0.2; atomic_load(&s->magic) != PB_SEG_MAGIC && pb_now() < t;)
			sleep_us(200);
		if (atomic_load(&s->magic) == PB_SEG_MAGIC && s->version == PB_SEG_VERSION &&
		    atomic_compare_exchange_strong(&s->state, &expect, SEG_JOINED)) {
			for (;;) {
				if (atomic_load(&s->state) == SEG_ACKED) {
					close(fd);
					c->seg = s;
					return;
				}
				if (fstat(fd, &st) == 0 && st.st_nlink == 0 &&
				    atomic_load(&s->state) != SEG_ACKED)
					break; /* unlinked without an ack: stale */
				if (pb_now() > deadline)
					break;
				sleep_us(200);
			}
		}
		munmap(s, PB_SEG_SIZE);
		close(fd);
		sleep_us(1000);
	}
}

void *pb_seg_floor_area(const struct pb_ctx *c)
{
	return c->seg ? (char *)c->seg + PB_SEG_HDR : NULL;
}

void pb_seg_attach(struct pb_ctx *c)
{
	if (c->seg)
		return;
	if (c->pair > 0)
		snprintf(c->seg_name, sizeof(c->seg_name), "/ptlbench-%u-%u-%d", (unsigned)getuid(),
			 (unsigned)c->jid, c->pair);
	else
		snprintf(c->seg_name, sizeof(c->seg_name), "/ptlbench-%u-%u", (unsigned)getuid(),
			 (unsigned)c->jid);
	if (c->rank == 0)
		seg_create(c);
	else
		seg_join(c);
}

void pb_seg_detach(struct pb_ctx *c)
{
	pb_seg_cleanup_name();
	if (c->seg) {
		munmap(c->seg, PB_SEG_SIZE);
		c->seg = NULL;
	}
}

/* ---- control over the segment (--ref-only) ---- */

static long futex(_Atomic uint32_t *addr, int op, uint32_t val)
{
	return syscall(SYS_futex, (uint32_t *)addr, op, val, NULL, NULL, 0);
}

/* Two-party barrier: spin briefly, then sleep on a futex (never a third
 * busy process on a 2-core machine). */
static void shm_barrier(struct pb_ctx *c, uint64_t mine, uint64_t *peer)
{
	struct pb_seg *s = c->seg;
	uint32_t gen = atomic_load(&s->bar_gen);
	double deadline = 0;
	unsigned spins = 0;

	atomic_store(&s->bar_val[gen & 1][c->rank], mine);
	if (atomic_fetch_add(&s->bar_count, 1) == 1) {
		atomic_store(&s->bar_count, 0);
		atomic_store(&s->bar_gen, gen + 1);
		futex(&s->bar_gen, FUTEX_WAKE, 1);
	} else {
		while (atomic_load(&s->bar_gen) == gen) {
			if (++spins < 2000) {
				pb_cpu_relax();
				continue;
			}
			if (deadline == 0)
				deadline = pb_now() + 600;
			else if (pb_now() > deadline)
				pb_die(c, "peer did not reach the barrier within 600 s");
			struct timespec ts = {1, 0};
			syscall(SYS_futex, (uint32_t *)&s->bar_gen, FUTEX_WAIT, gen, &ts, NULL, 0);
		}
	}
	if (peer)
		*peer = atomic_load(&s->bar_val[gen & 1][1 - c->rank]);
}

const struct pb_ctrl_ops pb_ctrl_shm = {
	.name = "shm",
	.barrier = shm_barrier,
};

/* ---- reference: shared-memory flag ping-pong ---- */

/* Many short runs (about a millisecond each) and the best of them: a run
 * that another process preempted says nothing about the hardware. */
#define FLAG_ITERS 5000
#define FLAG_SKIP 1000
#define FLAG_RUNS 20

static int udp_nal(const struct pb_ctx *c);

/* shmem and friends; the network NALs are measured against raw UDP */
static int flag_usable(const struct pb_ctx *c)
{
	return c->seg != NULL && !udp_nal(c);
}

int pb_flag_applies(const struct pb_ctx *c)
{
	return flag_usable(c);
}

static void flag_wait(const struct pb_ctx *c, _Atomic uint64_t *w, uint64_t v)
{
	unsigned n = 0;
	double deadline = 0;

	/* No pause instruction: it costs ~80 ns on some CPUs (Zen 4 under KVM
	 * measured 77 ns) and would inflate the floor this reference stands
	 * for.  Two spinning processes on two cores is within the rules. */
	while (atomic_load_explicit(w, memory_order_acquire) != v) {
		if ((++n & PB_SPIN_CHECK) == 0) {
			if (deadline == 0)
				deadline = pb_now() + 30;
			else if (pb_now() > deadline)
				pb_die(c, "flag ping-pong: peer stopped answering");
		}
	}
}

/* One timed run of `iters` round trips after `skip` untimed ones; rank 0's
 * elapsed nanoseconds (rank 1 returns 0). */
static uint64_t flag_run(struct pb_ctx *c, uint64_t iters, uint64_t skip)
{
	struct pb_seg *s = c->seg;
	uint64_t i, n = iters + skip, base;
	double t0 = 0, t1;

	/* Start from whatever the segment holds, so repeated runs work. */
	c->ctrl->barrier(c, 0, NULL);
	base = atomic_load(&s->ping);
	c->ctrl->barrier(c, 0, NULL);
	for (i = 1; i <= n; i++) {
		if (c->rank == 0) {
			if (i == skip + 1)
				t0 = pb_now();
			atomic_store_explicit(&s->ping, base + i, memory_order_release);
			flag_wait(c, &s->pong, base + i);
		} else {
			flag_wait(c, &s->ping, base + i);
			atomic_store_explicit(&s->pong, base + i, memory_order_release);
		}
	}
	t1 = pb_now();
	return c->rank == 0 ? (uint64_t)((t1 - t0) * 1e9) : 0;
}

static double flag_value(const struct pb_ctx *c, enum pb_kind kind, size_t size);

/* The floor: the best of FLAG_RUNS runs (the library figures beside it are
 * means unless -r is given, so the ratio errs against the library). */
static void flag_measure(struct pb_ctx *c)
{
	uint64_t iters = FLAG_ITERS, skip = FLAG_SKIP, best = UINT64_MAX, peer = 0;
	int r, runs = c->o.quick ? FLAG_RUNS / 4 : FLAG_RUNS;

	for (r = 0; r < runs; r++) {
		uint64_t t = flag_run(c, iters, skip);

		if (t < best)
			best = t;
	}
	c->ctrl->barrier(c, best, &peer);
	if (c->rank != 0)
		best = peer;
	c->flag_half_rtt_us = (double)best / 1e3 / (2.0 * (double)iters);
}

/* One more run, interleaved with a test's repetitions (struct pb_ref). */
static void flag_again(struct pb_ctx *c, enum pb_kind kind, size_t size)
{
	uint64_t t, peer = 0;

	if (isnan(flag_value(c, kind, size)))
		return; /* both ranks see the same sizes: both return */
	t = flag_run(c, FLAG_ITERS, FLAG_SKIP);
	c->ctrl->barrier(c, t, &peer);
	if (c->rank != 0)
		t = peer;
	if ((double)t / 1e3 / (2.0 * FLAG_ITERS) < c->flag_half_rtt_us)
		c->flag_half_rtt_us = (double)t / 1e3 / (2.0 * FLAG_ITERS);
}

static double flag_value(const struct pb_ctx *c, enum pb_kind kind, size_t size)
{
	if (!c->seg && c->flag_half_rtt_us <= 0)
		return NAN;
	if (size > 64) /* the flag moves one cache line */
		return NAN;
	if (kind == PB_KIND_RTT)
		return 2 * c->flag_half_rtt_us;
	return kind == PB_KIND_LAT ? c->flag_half_rtt_us : NAN;
}


/* ---- references: raw UDP ping-pong and stream (udp / ether NALs) ---- */

#define UDP_PP_ITERS 2000
#define UDP_PP_SKIP 200
#define UDP_PP_RUNS 10
#define UDP_MAX_DGRAM 65507u
#define UDP_BURST (1u << 20)
#define UDP_STREAM_BYTES (64ull << 20)
#define UDP_STREAM_RUNS 3
#define UDP_TIMEOUT_S 2.0
#define GSO_BYTES        65000u /* one GSO send, as rmpp's (rmpp/link_udp.c) */

/* What a 0-byte put puts in its one UDP datagram: the rmpp header (40 bytes),
 * the message sub-header (24) and the Portals header (104; rmpp/README.md,
 * portals/hdr.c).  A raw ping-pong carrying that many bytes tells the cost of
 * moving a header at all (a 0-byte datagram skips the kernel's copies) from
 * the cost of the protocol. */
#define PB_RMPP_PUT_FRAME 168u

static char udp_lat_note_buf[400] = "raw UDP ping-pong";

static int udp_nal(const struct pb_ctx *c)
{
	return strcmp(c->nal, "udp") == 0 || strcmp(c->nal, "ether") == 0 || strcmp(c->nal, "xdp") == 0;
}

static int udp_usable(const struct pb_ctx *c)
{
	return udp_nal(c) && c->nranks == 2;
}

static long env_long(const char *name, long dflt)
{
	const char *v = getenv(name);
	uint64_t x;
	char msg[200];

	if (!v || !*v)
		return dflt;
	if (!p3num_u64(name, v, 0, LONG_MAX, P3NUM_BASE0, &x, msg, sizeof(msg)))
		return (long)x;
	/* as librmpp does with its P3_RMPP_* (rmpp/config.c): say so, keep the default */
	fprintf(stderr, "ptlbench: warning: %s, using %ld\n", msg, dflt);
	return dflt;
}

/* This rank's IPv4 (host order): the nid for udp/ether, loopback otherwise. */
static uint32_t udp_my_ip(const struct pb_ctx *c)
{
	ptl_process_id_t id;

	if (c->have_ptl && PtlGetId(c->ni, &id) == PTL_OK && id.nid != 0 && id.nid != PTL_NID_ANY)
		return (uint32_t)id.nid;
	return INADDR_LOOPBACK;
}

/* A connected UDP socket to the peer rank (addresses exchanged over ctrl). */
static int udp_pair(struct pb_ctx *c)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t l = sizeof(a);
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), big = 8 << 20, pmtu = IP_PMTUDISC_DO;
	uint64_t mine, peer = 0;

	if (s < 0)
		pb_die(c, "socket: %s", strerror(errno));
	/* the same buffers rmpp asks for (SOCKBUF, forced when permitted) */
	big = (int)env_long("P3_RMPP_SOCKBUF", big);
	if (setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)) != 0)
		setsockopt(s, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	if (setsockopt(s, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big)) != 0)
		setsockopt(s, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	setsockopt(s, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
	a.sin_addr.s_addr = htonl(udp_my_ip(c));
	if (bind(s, (struct sockaddr *)&a, sizeof(a)) != 0 && (a.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
							       bind(s, (struct sockaddr *)&a, sizeof(a)) != 0))
		pb_die(c, "bind: %s", strerror(errno));
	getsockname(s, (struct sockaddr *)&a, &l);
	mine = ((uint64_t)ntohl(a.sin_addr.s_addr) << 16) | ntohs(a.sin_port);
	c->ctrl->barrier(c, mine, &peer);
	a.sin_addr.s_addr = htonl((uint32_t)(peer >> 16));
	a.sin_port = htons((uint16_t)(peer & 0xffff));
	if (connect(s, (struct sockaddr *)&a, sizeof(a)) != 0)
		pb_die(c, "connect: %s", strerror(errno));
	c->ctrl->barrier(c, 0, NULL);
	return s;
}

/* Receive one datagram: spin with MSG_DONTWAIT for spin_us (< 0: forever,
 * bounded by the timeout), then block.  Returns the length, -1 on timeout. */
static ssize_t udp_wait(int s, void *buf, size_t len, long spin_us)
{
	double t0 = 0, now;
	unsigned n = 0;

	for (;;) {
		ssize_t r = recv(s, buf, len, spin_us != 0 ? MSG_DONTWAIT : 0);

		if (r >= 0)
			return r;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		if (spin_us == 0) /* SO_RCVTIMEO expired */
			return -1;
		if ((++n & 15) != 1)
			continue;
		now = pb_now();
		if (t0 == 0)
			t0 = now;
		if (now - t0 > UDP_TIMEOUT_S)
			return -1;
		if (spin_us > 0 && (now - t0) * 1e6 >= (double)spin_us)
			spin_us = 0; /* spin over: block */
	}
}

static void udp_timeout(int s, double sec)
{
	struct timeval tv = {(time_t)sec, (suseconds_t)((sec - (double)(time_t)sec) * 1e6)};

	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

/* The references' socket pair: made once, kept for the interleaved runs,
 * closed by pb_refs_release(). */
static int udp_ref_sock(struct pb_ctx *c)
{
	if (c->udp_sock < 0)
		c->udp_sock = udp_pair(c);
	return c->udp_sock;
}

static int udp_pp_iters(size_t size)
{
	return size > 8192 ? UDP_PP_ITERS / 4 : UDP_PP_ITERS;
}

/* One ping-pong run: rank 0 returns the elapsed ns of `iters` round trips,
 * UINT64_MAX if a datagram was lost (the run does not count). */
static uint64_t udp_pp_run(struct pb_ctx *c, int s, char *buf, size_t size, long spin_us, int iters, int skip)
{
	double t0 = 0, t1;
	int i, lost = 0;
	uint64_t peer = 0;

	c->ctrl->barrier(c, 0, NULL);
	for (i = 0; i < iters + skip && !lost; i++) {
		if (c->rank == 0) {
			if (i == skip)
				t0 = pb_now();
			if (send(s, buf, size, 0) < 0 || udp_wait(s, buf, UDP_MAX_DGRAM, spin_us) < 0)
				lost = 1;
		} else {
			if (udp_wait(s, buf, UDP_MAX_DGRAM, spin_us) < 0 || send(s, buf, size, 0) < 0)
				lost = 1;
		}
	}
	t1 = pb_now();
	/* drain strays of a failed run, then agree */
	c->ctrl->barrier(c, (uint64_t)lost, &peer);
	if (lost || peer)
		while (recv(s, buf, UDP_MAX_DGRAM, MSG_DONTWAIT) >= 0)
			;
	c->ctrl->barrier(c, 0, NULL);
	if (lost || peer)
		return UINT64_MAX;
	return c->rank == 0 ? (uint64_t)((t1 - t0) * 1e9) : 0;
}

static double udp_pp_best(struct pb_ctx *c, int s, char *buf, size_t size, long spin_us)
{
	int iters = udp_pp_iters(size), runs = c->o.quick ? UDP_PP_RUNS / 4 : UDP_PP_RUNS, r;
	uint64_t best = UINT64_MAX, peer = 0;

	for (r = 0; r < runs; r++) {
		uint64_t t = udp_pp_run(c, s, buf, size, spin_us, iters, UDP_PP_SKIP);

		if (t < best)
			best = t;
	}
	c->ctrl->barrier(c, best, &peer);
	if (c->rank != 0)
		best = peer;
	return best == UINT64_MAX ? NAN : (double)best / 1e3 / (2.0 * iters);
}

static void udp_lat_measure(struct pb_ctx *c)
{
	size_t sizes[PB_MAX_SIZES];
	int n = 0, k, s;
	char *buf;

	if (c->o.tests & ((1u << PB_LAT) | (1u << PB_GET)))
		n = pb_sizes(c, PB_LAT, sizes);
	if (n == 0) {
		sizes[0] = 0;
		n = 1;
	}
	c->udp_spin_us = env_long("P3_RMPP_SPIN_US", 50);
	buf = calloc(1, 65536);
	if (!buf)
		pb_die(c, "out of memory");
	s = udp_ref_sock(c);
	udp_timeout(s, UDP_TIMEOUT_S);
	c->udp_lat_n = 0;
	for (k = 0; k < n && sizes[k] <= UDP_MAX_DGRAM; k++) {
		c->udp_lat_sizes[k] = sizes[k];
		c->udp_lat_us[k] = udp_pp_best(c, s, buf, sizes[k], c->udp_spin_us);
		if (k == 0) { /* the pure variants: smallest size only (the floor) */
			c->udp_lat_busy_us[k] = udp_pp_best(c, s, buf, sizes[k], -1);
			c->udp_lat_block_us[k] = udp_pp_best(c, s, buf, sizes[k], 0);
			c->udp_frame_us =
			    udp_pp_best(c, s, buf, sizes[k] + PB_RMPP_PUT_FRAME, c->udp_spin_us);
		} else {
			c->udp_lat_busy_us[k] = c->udp_lat_block_us[k] = NAN;
		}
		c->udp_lat_n = k + 1;
	}
	free(buf);
	snprintf(
	    udp_lat_note_buf, sizeof(udp_lat_note_buf),
	    "raw UDP ping-pong between the two ranks (connected sockets, own addresses), half "
	    "round trip, best of %d runs of %d; waits as rmpp progress does: MSG_DONTWAIT "
	    "spin %ld us (P3_RMPP_SPIN_US), then blocking recv [%zu B: busy-poll %.2f us, "
	    "blocking %.2f us; "
	    "%zu B, the datagram of a %zu-byte put: %.2f us]",
	    c->o.quick ? UDP_PP_RUNS / 4 : UDP_PP_RUNS, UDP_PP_ITERS, c->udp_spin_us,
	    c->udp_lat_n ? c->udp_lat_sizes[0] : (size_t)0,
	    c->udp_lat_n ? c->udp_lat_busy_us[0] : NAN, c->udp_lat_n ? c->udp_lat_block_us[0] : NAN,
	    (c->udp_lat_n ? c->udp_lat_sizes[0] : (size_t)0) + PB_RMPP_PUT_FRAME,
	    c->udp_lat_n ? c->udp_lat_sizes[0] : (size_t)0, c->udp_lat_n ? c->udp_frame_us : NAN);
}

static int udp_lat_index(const struct pb_ctx *c, size_t size)
{
	for (int k = 0; k < c->udp_lat_n; k++)
		if (c->udp_lat_sizes[k] == size)
			return k;
	return -1;
}

/* One more run, interleaved with a test's repetitions (struct pb_ref). */
static void udp_lat_again(struct pb_ctx *c, enum pb_kind kind, size_t size)
{
	int k = udp_lat_index(c, size), iters = udp_pp_iters(size);
	uint64_t t, peer = 0;
	char *buf;

	if (k < 0 || (kind != PB_KIND_LAT && kind != PB_KIND_RTT) || c->udp_sock < 0)
		return;
	if (!(buf = calloc(1, 65536)))
		pb_die(c, "out of memory");
	udp_timeout(c->udp_sock, UDP_TIMEOUT_S);
	t = udp_pp_run(c, c->udp_sock, buf, size, c->udp_spin_us, iters, UDP_PP_SKIP);
	free(buf);
	c->ctrl->barrier(c, t, &peer);
	if (c->rank != 0)
		t = peer;
	if (t != UINT64_MAX &&
	    (isnan(c->udp_lat_us[k]) || (double)t / 1e3 / (2.0 * iters) < c->udp_lat_us[k]))
		c->udp_lat_us[k] = (double)t / 1e3 / (2.0 * iters);
}

static double udp_lat_value(const struct pb_ctx *c, enum pb_kind kind, size_t size)
{
	int k = udp_lat_index(c, size);

	if ((kind != PB_KIND_LAT && kind != PB_KIND_RTT) || k < 0)
		return NAN;
	return kind == PB_KIND_RTT ? 2 * c->udp_lat_us[k] : c->udp_lat_us[k];
}

static void udp_lat_report(struct pb_ctx *c, const struct pb_ref *r)
{
	const char *hdr[] = {udp_lat_note_buf, "columns: as-rmpp (spin then block) | busy-poll (MSG_DONTWAIT "
				"spin, bounded 2 s) | blocking recv; us", NULL};
	struct pb_table t = {.test = r->name, .title = r->title, .label = "Latency (us)", .unit = r->unit,
			     .kind = r->kind, .ref = NULL};
	int k;

	if (c->rank != 0)
		return;
	if (c->o.csv) {
		pb_table_begin(c, &t, hdr);
		for (k = 0; k < c->udp_lat_n; k++)
			pb_table_row(c, &t, c->udp_lat_sizes[k], c->udp_lat_us[k]);
		pb_table_end(c, &t, NULL);
		return;
	}
	printf("# p3stack ptlbench: %s\n", r->title);
	printf("# nal: %s  progress: %s  host: %s  date: %s  load: %.2f\n", c->nal, c->progress, c->host,
	       c->date, c->load[0]);
	printf("# %s\n# %s\n", hdr[0], hdr[1]);
	printf("%-10s%18s%18s%18s\n", "# Size", "as-rmpp", "busy-poll", "blocking");
	for (k = 0; k < c->udp_lat_n; k++)
		printf("%-10zu%18.2f%18.2f%18.2f\n", c->udp_lat_sizes[k], c->udp_lat_us[k],
		       c->udp_lat_busy_us[k], c->udp_lat_block_us[k]);
	printf("\n");
}

/* Stream: rank 0 sends `bytes` in messages of `size`, each cut into
 * datagrams of c->udp_dgram, in bursts of about UDP_BURST ended by a marker
 * {'E', burst}; rank 1 answers a marker with {burst, bytes received}.  Two
 * bursts in flight.  Rank 0 returns goodput MB/s (bytes the receiver got).
 * Markers, answers and the END carry the run's number: one run's late END
 * (rank 0 sends three) or answer must not end or count in the next. */
struct udp_mark {
	uint32_t tag;
	uint32_t burst;
	uint64_t bytes;
	uint32_t run;
	uint32_t pad;
};
static uint32_t udp_stream_runs; /* both ranks count their runs in step */
/* A run that makes no progress for this long is given up (the reference
 * reports 0).  Well below rmpp's dead-peer bound (DEAD_MIN_US, 30 s): the
 * ranks do not call into Portals here, so a longer stall would get the
 * silent rank declared dead by its peer. */
#define UDP_STREAM_STALL_S 10
#define UDP_TAG_DATA 0x44415441u
#define UDP_TAG_MARK 0x4d41524bu
#define UDP_TAG_END 0x454e4421u

/* Send len bytes (at most GSO_BYTES) as datagrams of dg bytes in one
 * sendmsg with UDP_SEGMENT: the kernel cuts them after the route, as rmpp's
 * GSO sends do.  Every datagram of buf starts with the data tag. */
static ssize_t udp_send_gso(int s, const char *buf, size_t len, size_t dg)
{
	char ctl[CMSG_SPACE(sizeof(uint16_t))] = {0};
	struct iovec iov = {(void *)buf, len};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	uint16_t seg = (uint16_t)dg;

	if (len > dg) {
		struct cmsghdr *cm = (struct cmsghdr *)ctl;

		m.msg_control = ctl;
		m.msg_controllen = sizeof(ctl);
		cm->cmsg_level = SOL_UDP;
		cm->cmsg_type = UDP_SEGMENT;
		cm->cmsg_len = CMSG_LEN(sizeof(seg));
		memcpy(CMSG_DATA(cm), &seg, sizeof(seg));
	}
	return sendmsg(s, &m, 0);
}

static double udp_stream_run(struct pb_ctx *c, int s, char *buf, size_t size, uint64_t bytes,
                             int gso)
{
	size_t dg = c->udp_dgram;
	size_t chunk = gso ? GSO_BYTES / dg * dg : dg; /* bytes per send */
	uint32_t run = ++udp_stream_runs;
	uint64_t got = 0, peer = 0;
	double t0, t1, mbs = 0;
	int failed = 0;

	c->ctrl->barrier(c, 0, NULL);
	t0 = pb_now();
	if (c->rank == 0) {
		uint64_t sent = 0, burst_bytes = 0;
		uint32_t burst = 0, acked = 0;
		struct udp_mark m;

		memset(buf, 0x5a, chunk);
		for (size_t o = 0; o + 4 <= chunk; o += dg)
			memcpy(buf + o, &(uint32_t){UDP_TAG_DATA}, 4);
		while (sent < bytes && !failed) {
			size_t off;

			for (off = 0; off < size || size == 0; off += chunk) {
				size_t len = size - off < chunk ? size - off : chunk;
				ssize_t r = gso && len > dg ? udp_send_gso(s, buf, len, dg)
				                            : send(s, buf, len < 8 ? 8 : len, 0);

				if (r < 0 && errno != ENOBUFS && errno != EAGAIN)
					failed = 1;
				if (size == 0)
					break;
			}
			sent += size;
			burst_bytes += size;
			if (burst_bytes >= UDP_BURST || sent >= bytes) {
				burst_bytes = 0;
				m = (struct udp_mark){UDP_TAG_MARK, ++burst, 0, run, 0};
				send(s, &m, sizeof(m), 0);
				/* at most two bursts in flight; all acked at the end */
				while (!failed && (burst - acked > 1 || (sent >= bytes && acked < burst))) {
					struct udp_mark a;
					ssize_t r = udp_wait(s, &a, sizeof(a), 0);

					if (r < 0) { /* marker or answer lost: ask again */
						m = (struct udp_mark){UDP_TAG_MARK, burst, 0, run,
						                      0};
						if (send(s, &m, sizeof(m), 0) < 0)
							failed = 1;
						if (pb_now() - t0 > UDP_STREAM_STALL_S)
							failed = 1;
						continue;
					}
					if (r == sizeof(a) && a.tag == UDP_TAG_MARK &&
					    a.run == run && a.burst > acked) {
						acked = a.burst;
						got = a.bytes;
					}
				}
			}
		}
		t1 = pb_now();
		m = (struct udp_mark){UDP_TAG_END, 0, 0, run, 0};
		for (int i = 0; i < 3; i++)
			send(s, &m, sizeof(m), 0);
		mbs = failed ? 0 : (double)got / (t1 - t0) / 1e6;
	} else {
		uint32_t last = 0;

		for (;;) {
			ssize_t r = udp_wait(s, buf, UDP_MAX_DGRAM, 0);
			uint32_t tag;

			if (r < 0) {
				if (pb_now() - t0 > UDP_STREAM_STALL_S) {
					failed = 1;
					break;
				}
				continue;
			}
			if (r < 4)
				continue;
			memcpy(&tag, buf, 4);
			if ((tag == UDP_TAG_END || tag == UDP_TAG_MARK) &&
			    (size_t)r == sizeof(struct udp_mark)) {
				struct udp_mark m;

				memcpy(&m, buf, sizeof(m));
				if (m.run != run)
					continue; /* an earlier run's */
				if (tag == UDP_TAG_END)
					break;
				if (m.burst >= last) {
					last = m.burst;
					m.bytes = got;
					send(s, &m, sizeof(m), 0);
				}
				continue;
			}
			if (tag == UDP_TAG_DATA)
				got += size == 0 ? 0 : (uint64_t)r;
		}
	}
	while (recv(s, buf, UDP_MAX_DGRAM, MSG_DONTWAIT) >= 0)
		; /* stray END markers */
	c->ctrl->barrier(c, (uint64_t)failed, &peer);
	return mbs;
}

/* Collective: rank 0's figure (the stream's goodput is known to the sender
 * only), on both ranks. */
static double rank0_figure(struct pb_ctx *c, double v)
{
	uint64_t bits = 0;

	memcpy(&bits, &v, sizeof(bits));
	c->ctrl->barrier(c, bits, &bits);
	if (c->rank == 1)
		memcpy(&v, &bits, sizeof(v));
	return v;
}

/* Bytes per stream run: enough to reach steady state, bounded in count for
 * small messages. */
static uint64_t udp_stream_bytes(const struct pb_ctx *c, size_t size)
{
	uint64_t bytes = UDP_STREAM_BYTES;

	if (size * 8 > bytes)
		bytes = size * 8;
	if (size < 4096) /* small messages: bounded count */
		bytes = (uint64_t)size * 20000;
	if (c->o.quick)
		bytes /= 4;
	if (bytes < size)
		bytes = size;
	return bytes;
}

static char udp_bw_note_buf[480] = "raw UDP stream";

/* The kernel's best for the largest size: the same stream sent with UDP
 * GSO.  Printed in the note (the ratio stays against the plain stream). */
static void udp_bw_gso_measure(struct pb_ctx *c, int s, char *buf, size_t size)
{
	double best = 0;

	c->udp_bw_gso_mbs = NAN;
	c->udp_bw_gso_size = size;
	if (size >= 2 * c->udp_dgram) {
		for (int run = 0; run < UDP_STREAM_RUNS; run++) {
			double v = udp_stream_run(c, s, buf, size, udp_stream_bytes(c, size), 1);

			if (v > best)
				best = v;
		}
		best = rank0_figure(c, best);
		c->udp_bw_gso_mbs = best > 0 ? best : NAN;
	}
	snprintf(
	    udp_bw_note_buf, sizeof(udp_bw_note_buf),
	    "raw UDP stream between the two ranks (connected sockets, own addresses), messages cut "
	    "into datagrams of rmpp's frame size (%zu B), 1 MiB bursts acknowledged by the "
	    "receiver, "
	    "2 in flight; goodput (bytes received), best of %d, MB = 1e6 bytes [%zu B with UDP GSO "
	    "(sends of up to %u B cut by the kernel, as rmpp sends): %.2f MB/s]",
	    c->udp_dgram, UDP_STREAM_RUNS, size, GSO_BYTES, c->udp_bw_gso_mbs);
}

static void udp_bw_measure(struct pb_ctx *c)
{
	size_t sizes[PB_MAX_SIZES], mtu;
	int n = 0, k, s, run, path_mtu = 0;
	socklen_t optlen = sizeof(path_mtu);
	char *buf;

	if (c->o.tests & ((1u << PB_BW) | (1u << PB_BIBW) | (1u << PB_GETBW)))
		n = pb_sizes(c, PB_BW, sizes);
	c->udp_bw_n = 0;
	if (n == 0)
		return;
	buf = calloc(1, 65536);
	if (!buf)
		pb_die(c, "out of memory");
	s = udp_ref_sock(c);
	/* rmpp's frame size: MTU (9000) clipped to the path's (a veth between
	 * namespace hosts: 1500) less the IPv4 and UDP headers, and to 65507 */
	mtu = (size_t)env_long("P3_RMPP_MTU", 9000);
	if (getsockopt(s, IPPROTO_IP, IP_MTU, &path_mtu, &optlen) == 0 && path_mtu > 28 + 64 &&
	    (size_t)path_mtu - 28 < mtu)
		mtu = (size_t)path_mtu - 28;
	c->udp_dgram = mtu > UDP_MAX_DGRAM ? UDP_MAX_DGRAM : mtu < 64 ? 64 : mtu;
	udp_timeout(s, 0.05);
	for (k = 0; k < n; k++) {
		uint64_t bytes = udp_stream_bytes(c, sizes[k]);
		double best = 0;

		for (run = 0; run < UDP_STREAM_RUNS; run++) {
			double v = udp_stream_run(c, s, buf, sizes[k], bytes, 0);

			if (v > best)
				best = v;
		}
		best = rank0_figure(c, best);
		c->udp_bw_sizes[k] = sizes[k];
		c->udp_bw_mbs[k] = best;
		c->udp_bw_n = k + 1;
	}
	udp_bw_gso_measure(c, s, buf, sizes[n - 1]);
	free(buf);
}

/* One more run, interleaved with a test's repetitions (struct pb_ref). */
static void udp_bw_again(struct pb_ctx *c, enum pb_kind kind, size_t size)
{
	double v;
	char *buf;
	int k;

	for (k = 0; k < c->udp_bw_n && c->udp_bw_sizes[k] != size; k++)
		;
	if (k == c->udp_bw_n || kind != PB_KIND_BW || c->udp_sock < 0)
		return;
	if (!(buf = calloc(1, 65536)))
		pb_die(c, "out of memory");
	udp_timeout(c->udp_sock, 0.05);
	v = udp_stream_run(c, c->udp_sock, buf, size, udp_stream_bytes(c, size), 0);
	free(buf);
	v = rank0_figure(c, v);
	if (v > c->udp_bw_mbs[k])
		c->udp_bw_mbs[k] = v;
}

static double udp_bw_value(const struct pb_ctx *c, enum pb_kind kind, size_t size)
{
	int k;

	if (kind != PB_KIND_BW)
		return NAN;
	for (k = 0; k < c->udp_bw_n; k++)
		if (c->udp_bw_sizes[k] == size)
			return c->udp_bw_mbs[k] > 0 ? c->udp_bw_mbs[k] : NAN;
	return NAN;
}

static void udp_bw_report(struct pb_ctx *c, const struct pb_ref *r)
{
	struct pb_table t = {.test = r->name,
	                     .title = r->title,
	                     .label = "Bandwidth (MB/s)",
	                     .unit = r->unit,
	                     .kind = r->kind,
	                     .ref = NULL};
	int k;

	if (!c->udp_bw_n)
		return;
	const char *hdr[] = {r->note, NULL}; /* the note gives the datagram size */
	pb_table_begin(c, &t, hdr);
	for (k = 0; k < c->udp_bw_n; k++)
		pb_table_row(c, &t, c->udp_bw_sizes[k], c->udp_bw_mbs[k]);
	pb_table_end(c, &t, NULL);
}


/* ---- reference: memcpy bandwidth ---- */

#define MEMCPY_BIG (1u << 20)	      /* from here on, rotate through a large span */
#define MEMCPY_SPAN (128u << 20)      /* per buffer: 4x a 32 MiB L3 */
#define MEMCPY_BYTES (256ull << 20)   /* bytes copied per size and run (bounded below) */
#define MEMCPY_RUNS 3                 /* the best run is the reference */

static int memcpy_usable(const struct pb_ctx *c)
{
	(void)c;
	return 1;
}

static void *map_touched(struct pb_ctx *c, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		pb_die(c, "mmap(%zu): %s", len, strerror(errno));
	memset(p, 0x5a, len);
	return p;
}

static void memcpy_measure(struct pb_ctx *c)
{
	size_t sizes[PB_MAX_SIZES];
	int n = pb_sizes(c, PB_BW, sizes), k;
	char *src = NULL, *dst = NULL;
	size_t span = 0;

	c->ref_nsizes = n;
	for (k = 0; k < n; k++)
		c->ref_sizes[k] = sizes[k];
	c->ctrl->barrier(c, 0, NULL);
	if (c->rank == 0) {
		size_t maxs = n ? sizes[n - 1] : 0;

		span = maxs >= MEMCPY_BIG ? (maxs * 2 > MEMCPY_SPAN ? maxs * 2 : MEMCPY_SPAN) : (maxs ? maxs : 64);
		src = map_touched(c, span);
		dst = map_touched(c, span);
		for (k = 0; k < n; k++) {
			size_t sz = sizes[k], off = 0;
			uint64_t reps = MEMCPY_BYTES / sz, i, warm;
			double t0, t1;

			if (c->o.quick)
				reps /= 8;
			if (reps < 4)
				reps = 4;
			if (reps > 200000)
				reps = 200000;
			warm = reps / 10 + 1;
			c->ref_memcpy_mbs[k] = 0;
			for (int run = 0; run < MEMCPY_RUNS; run++) {
				double mbs;

				t0 = 0;
				for (i = 0; i < warm + reps; i++) {
					if (i == warm)
						t0 = pb_now();
					memcpy(dst + off, src + off, sz);
					__asm__ __volatile__("" ::: "memory");
					if (sz >= MEMCPY_BIG) {
						off += sz;
						if (off + sz > span)
							off = 0;
					}
				}
				t1 = pb_now();
				mbs = (double)sz * (double)reps / (t1 - t0) / 1e6;
				if (mbs > c->ref_memcpy_mbs[k]) /* the best run: preemption is not the hardware */
					c->ref_memcpy_mbs[k] = mbs;
			}
		}
		munmap(src, span);
		munmap(dst, span);
	}
	/* rank 1 sleeps in the barrier meanwhile; then learn rank 0's figures */
	for (k = 0; k < n; k++) {
		uint64_t bits = 0;

		if (c->rank == 0)
			memcpy(&bits, &c->ref_memcpy_mbs[k], sizeof(bits));
		c->ctrl->barrier(c, bits, &bits);
		if (c->rank == 1)
			memcpy(&c->ref_memcpy_mbs[k], &bits, sizeof(bits));
	}
}

static double memcpy_value(const struct pb_ctx *c, enum pb_kind kind, size_t size)
{
	int k;

	if (kind != PB_KIND_BW)
		return NAN;
	for (k = 0; k < c->ref_nsizes; k++)
		if (c->ref_sizes[k] == size)
			return c->ref_memcpy_mbs[k];
	return NAN;
}

const struct pb_ref pb_refs[] = {
    {
        .name = "ref-udp-pp",
        .title = "Raw UDP Ping-Pong (reference)",
        .col = "UDP (us)",
        .kind = PB_KIND_LAT,
        .unit = "us",
        .usable = udp_usable,
        .measure = udp_lat_measure,
        .value = udp_lat_value,
        .note = udp_lat_note_buf, /* filled by the measurement (spin figure) */
        .report = udp_lat_report,
        .again = udp_lat_again,
    },
    {
        .name = "ref-udp-stream",
        .title = "Raw UDP Stream (reference)",
        .col = "UDP (MB/s)",
        .kind = PB_KIND_BW,
        .unit = "MB/s",
        .usable = udp_usable,
        .measure = udp_bw_measure,
        .value = udp_bw_value,
        .note = udp_bw_note_buf, /* filled by the measurement (datagram, GSO figure) */
        .report = udp_bw_report,
        .again = udp_bw_again,
    },
    {
        .name = "ref-flag",
        .title = "Shared-Memory Flag Ping-Pong (reference)",
        .col = "Ref (us)",
        .kind = PB_KIND_LAT,
        .unit = "us",
        .usable = flag_usable,
        .measure = flag_measure,
        .value = flag_value,
        .note = "raw cache-line flag ping-pong through /dev/shm, half round trip, best of 20 "
                "runs of 5000 (5 with --quick; full round trip beside get)",
        .again = flag_again,
    },
    {
        .name = "ref-floor",
        .secondary = 1,
        .title = "Shared-Memory Ring Floor of a Small Put (reference)",
        .col = "Floor (us)",
        .kind = PB_KIND_LAT,
        .unit = "us",
        .usable = pb_floor_usable,
        .measure = pb_floor_measure,
        .value = pb_floor_value,
        .note = "ring floor: a ping-pong of one-line records through 256 KiB rings in /dev/shm, "
                "moving what a small shmem put moves (a 64-byte record with up to 8 payload bytes, "
                "stamped last; the receiver copies it out and writes and reads a local event), "
                "half round trip, best of 20 runs of 5000 (5 with --quick), up to 8 bytes",
        .report = pb_floor_report,
        .again = pb_floor_again,
    },
    {
        .name = "ref-memcpy",
        .title = "memcpy Bandwidth (reference)",
        .col = "memcpy (MB/s)",
        .kind = PB_KIND_BW,
        .unit = "MB/s",
        .usable = memcpy_usable,
        .measure = memcpy_measure,
        .value = memcpy_value,
        .note = "single-process memcpy, best of 3 runs, MB = 1e6 bytes; buffers rotate "
                "over 128 MiB (beyond the LLC) from 1 MiB up",
    },
};
const int pb_nrefs = (int)(sizeof(pb_refs) / sizeof(pb_refs[0]));

/* The usable reference of this kind that is (secondary) or is not the
 * table's second column. */
static const struct pb_ref *ref_find(const struct pb_ctx *c, enum pb_kind kind, int secondary)
{
	int i;

	if (!c->refs_measured)
		return NULL;
	if (kind == PB_KIND_RTT)
		kind = PB_KIND_LAT;
	for (i = 0; i < pb_nrefs; i++)
		if (pb_refs[i].kind == kind && !pb_refs[i].secondary == !secondary &&
		    pb_refs[i].usable(c))
			return &pb_refs[i];
	return NULL;
}

const struct pb_ref *pb_ref_for(const struct pb_ctx *c, enum pb_kind kind)
{
	return ref_find(c, kind, 0);
}

/* The second column of a table of this kind (the ring floor beside the
 * flag), or NULL. */
const struct pb_ref *pb_ref2_for(const struct pb_ctx *c, enum pb_kind kind)
{
	return ref_find(c, kind, 1);
}

/* Same node?  Compare a hash of hostname and boot id: the flag reference
 * needs a /dev/shm both ranks see. */
static uint64_t node_hash(void)
{
	char buf[256] = "";
	uint64_t h = 1469598103934665603ull;
	size_t i, n;
	FILE *f;

	gethostname(buf, 128);
	buf[127] = '\0';
	n = strlen(buf);
	f = fopen("/proc/sys/kernel/random/boot_id", "r");
	if (f) {
		if (!fgets(buf + n, (int)(sizeof(buf) - n), f))
			buf[n] = '\0';
		fclose(f);
	}
	for (i = 0; buf[i]; i++)
		h = (h ^ (unsigned char)buf[i]) * 1099511628211ull;
	return h;
}

void pb_refs_measure(struct pb_ctx *c)
{
	int i;

	if (!c->seg) {
		uint64_t mine = node_hash(), peer = 0;

		c->ctrl->barrier(c, mine, &peer);
		if (peer == mine)
			pb_seg_attach(c);
	}
	for (i = 0; i < pb_nrefs; i++)
		if (pb_refs[i].usable(c))
			pb_refs[i].measure(c);
	c->refs_measured = 1;
}

void pb_refs_release(struct pb_ctx *c)
{
	if (c->udp_sock >= 0)
		close(c->udp_sock);
	c->udp_sock = -1;
	pb_floor_release(c);
}

void pb_refs_report(struct pb_ctx *c)
{
	int i;

	for (i = 0; i < pb_nrefs; i++) {
		const struct pb_ref *r = &pb_refs[i];
		struct pb_table t = {
			.test = r->name,
			.title = r->title,
			.label = r->kind == PB_KIND_BW ? "Bandwidth (MB/s)" : "Latency (us)",
			.unit = r->unit,
			.kind = r->kind,
			.ref = NULL,
		};
		const char *hdr[] = {r->note, NULL};

		if (!r->usable(c))
			continue;
		if (r->report) {
			r->report(c, r);
			continue;
		}
		pb_table_begin(c, &t, hdr);
		if (r->kind == PB_KIND_BW) {
			int k;

			for (k = 0; k < c->ref_nsizes; k++)
				pb_table_row(c, &t, c->ref_sizes[k], c->ref_memcpy_mbs[k]);
		} else {
			pb_table_row(c, &t, 0, r->value(c, PB_KIND_LAT, 0));
		}
		pb_table_end(c, &t, NULL);
	}
}
