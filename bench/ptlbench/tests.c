/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tests.c - the Portals tests.  Everything is posted once, before any
 * timing: persistent MEs with THRESH_INF MDs (MANAGE_REMOTE, offset 0;
 * ACK_DISABLE where no ack is wanted; START events disabled), bound send MDs
 * with and without an EQ.  Timed loops only call PtlPutRegion/PtlGetRegion
 * and wait for events (PtlEQWait, or PtlEQGet with --poll get); data is
 * verified once per size outside the timed loop.
 *
 * Match bits on one portal:
 *   PB_MB_DATA      rbuf: puts (no acks) and gets; events on recv_eq
 *   PB_MB_DATA_ACK  rbuf: puts that want an ack (--ack); events on recv_eq
 *   PB_MB_FIN       small buffer: the "window received" message of bw/rate
 *   PB_MB_CTRL      small buffer: barriers (events on ctrl_eq)
 *   PB_MB_HELLO     small buffer: the start-up handshake (events never read
 *                   after it; late hellos are harmless)
 */
#include "config.h"

#include "ptlbench.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PB_PT 2
#define PB_MB_DATA 0x5042000000000010ull
#define PB_MB_DATA_ACK 0x5042000000000011ull
#define PB_MB_FIN 0x5042000000000012ull
#define PB_MB_CTRL 0x5042000000000013ull
#define PB_MB_HELLO 0x5042000000000014ull

static ptl_handle_eq_t hello_eq;
static char hello_buf[64];
static ptl_sr_value_t drops_base; /* drops seen before the tests started */

#define CHECK(c, call)                                                                           \
	do {                                                                                     \
		int rc_ = (call);                                                                \
		if (rc_ != PTL_OK)                                                               \
			pb_die((c), "%s: %s", #call, PtlErrorStr((unsigned)rc_));                \
	} while (0)

static void ev_die(const struct pb_ctx *c, const char *where, const ptl_event_t *ev, int want)
{
	pb_die(c, "%s: unexpected event %s (wanted %s), fail type %u, mlength %" PRIu64 ", match bits %#" PRIx64,
	       where, PtlEventKindStr(ev->type), PtlEventKindStr((ptl_event_kind_t)want),
	       (unsigned)ev->ni_fail_type, (uint64_t)ev->mlength, (uint64_t)ev->match_bits);
}

/* Next event of eq.  PTL_EQ_DROPPED (overflow) is a benchmark failure. */
static inline void wait_ev(struct pb_ctx *c, ptl_handle_eq_t eq, ptl_event_t *ev)
{
	int rc;

	if (c->o.poll_get) {
		while ((rc = PtlEQGet(eq, ev)) == PTL_EQ_EMPTY)
			;
	} else {
		rc = PtlEQWait(eq, ev);
	}
	if (rc != PTL_OK)
		pb_die(c, "waiting for an event: %s", PtlErrorStr((unsigned)rc));
}

static inline void expect(struct pb_ctx *c, ptl_handle_eq_t eq, ptl_event_kind_t kind, const char *where)
{
	ptl_event_t ev;

	wait_ev(c, eq, &ev);
	if (ev.type != kind || ev.ni_fail_type != PTL_NI_OK)
		ev_die(c, where, &ev, kind);
}

static inline void put(struct pb_ctx *c, ptl_handle_md_t md, size_t size, ptl_ack_req_t ack,
		       ptl_match_bits_t mb, ptl_hdr_data_t hdr)
{
	int rc = PtlPutRegion(md, 0, size, ack, c->peer, c->pt, 0, mb, 0, hdr);

	if (rc != PTL_OK)
		pb_die(c, "PtlPutRegion(%zu bytes): %s", size, PtlErrorStr((unsigned)rc));
}

/* ---- control over Portals ---- */

#define PB_BARRIER_TIMEOUT_MS 300000

static void ptl_barrier(struct pb_ctx *c, uint64_t mine, uint64_t *peer)
{
	ptl_event_t ev;
	int rc;

	int which;

	put(c, c->cmd, 0, PTL_NO_ACK_REQ, PB_MB_CTRL, mine);
	/* Blocking (never spin here: the peer may be busy), but bounded: the
	 * control put has no EQ, so if the transport gave up on the peer
	 * nothing else would end the wait.  Both ranks run the same steps, so
	 * a healthy peer arrives within seconds. */
	rc = PtlEQPoll(&c->ctrl_eq, 1, PB_BARRIER_TIMEOUT_MS, &ev, &which);
	if (rc == PTL_EQ_EMPTY)
		pb_die(c, "barrier: no word from the peer within %d s (it died, or the transport "
			  "declared it dead: see the NAL's counters)", PB_BARRIER_TIMEOUT_MS / 1000);
	if (rc != PTL_OK)
		pb_die(c, "barrier: PtlEQPoll: %s", PtlErrorStr((unsigned)rc));
	if (ev.type != PTL_EVENT_PUT_END || ev.ni_fail_type != PTL_NI_OK)
		ev_die(c, "barrier", &ev, PTL_EVENT_PUT_END);
	if (peer)
		*peer = ev.hdr_data;
}

const struct pb_ctrl_ops pb_ctrl_portals = {
	.name = "portals",
	.barrier = ptl_barrier,
};

/* ---- set-up ---- */

static void *map_buffer(struct pb_ctx *c, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		pb_die(c, "mmap(%zu): %s", len, strerror(errno));
	memset(p, 0, len); /* touched: no page faults inside timing */
	return p;
}

static void attach(struct pb_ctx *c, ptl_match_bits_t mb, void *start, size_t len, unsigned opts,
		   ptl_handle_eq_t eq)
{
	ptl_process_id_t any = {PTL_NID_ANY, PTL_PID_ANY};
	ptl_handle_me_t me;
	ptl_handle_md_t mdh;
	ptl_md_t md = {
		.start = start,
		.length = len,
		.threshold = PTL_MD_THRESH_INF,
		.max_size = 0,
		.options = opts | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE,
		.user_ptr = NULL,
		.eq_handle = eq,
	};

	CHECK(c, PtlMEAttach(c->ni, c->pt, any, mb, 0, PTL_RETAIN, PTL_INS_AFTER, &me));
	CHECK(c, PtlMDAttach(me, md, PTL_RETAIN, &mdh));
}

static ptl_handle_md_t bind(struct pb_ctx *c, void *start, size_t len, ptl_handle_eq_t eq)
{
	ptl_handle_md_t h;
	ptl_md_t md = {
		.start = start,
		.length = len,
		.threshold = PTL_MD_THRESH_INF,
		.max_size = 0,
		.options = PTL_MD_EVENT_START_DISABLE,
		.user_ptr = NULL,
		.eq_handle = eq,
	};

	CHECK(c, PtlMDBind(c->ni, md, PTL_RETAIN, &h));
	return h;
}

/* Both ranks have posted everything once each has heard the other and knows
 * it was heard.  Hellos sent before the peer posted its MEs are dropped by
 * the peer: the drop counter is read after this, and tests report deltas. */
static void handshake(struct pb_ctx *c)
{
	double deadline = pb_now() + 60, next = 0;
	int heard = 0, peer_heard = 0;

	while (!(heard && peer_heard)) {
		ptl_event_t ev;
		int which, rc;

		if (pb_now() > deadline)
			pb_die(c, "no answer from rank %d within 60 s (is it running the same program?)",
			       1 - c->rank);
		if (pb_now() >= next) {
			rc = PtlPutRegion(c->cmd, 0, 0, PTL_NO_ACK_REQ, c->peer, c->pt, 0, PB_MB_HELLO, 0,
					  (ptl_hdr_data_t)(heard ? 2 : 1));
			if (rc != PTL_OK && rc != PTL_PROCESS_INVALID && rc != PTL_FAIL)
				pb_die(c, "hello: PtlPutRegion: %s", PtlErrorStr((unsigned)rc));
			next = pb_now() + 0.02;
		}
		rc = PtlEQPoll(&hello_eq, 1, 20, &ev, &which);
		if (rc == PTL_EQ_EMPTY)
			continue;
		if (rc != PTL_OK && rc != PTL_EQ_DROPPED)
			pb_die(c, "hello: PtlEQPoll: %s", PtlErrorStr((unsigned)rc));
		if (ev.type != PTL_EVENT_PUT_END)
			continue;
		heard = 1;
		if (ev.hdr_data == 2)
			peer_heard = 1;
	}
	/* make sure the peer hears that we heard it */
	CHECK(c, PtlPutRegion(c->cmd, 0, 0, PTL_NO_ACK_REQ, c->peer, c->pt, 0, PB_MB_HELLO, 0, 2));
}

void pb_ptl_setup(struct pb_ctx *c)
{
	ptl_ni_limits_t lim;
	size_t eqn = (size_t)c->o.window * 4 + 64;
	int rc;

	memset(&lim, 0, sizeof(lim));
	c->pt = PB_PT;
	/* as large as the largest message of the selected tests */
	c->buflen = 64;
	for (int t = 0; t < PB_NTESTS; t++) {
		size_t sizes[PB_MAX_SIZES];
		int n;

		if (!(c->o.tests & (1u << t)))
			continue;
		n = pb_sizes(c, (enum pb_test)t, sizes);
		if (n && sizes[n - 1] > c->buflen)
			c->buflen = sizes[n - 1];
	}
	c->sbuf = map_buffer(c, c->buflen);
	c->rbuf = map_buffer(c, c->buflen);
	if (eqn < 1024)
		eqn = 1024;
	CHECK(c, PtlEQAlloc(c->ni, eqn, PTL_EQ_HANDLER_NONE, &c->recv_eq));
	CHECK(c, PtlEQAlloc(c->ni, eqn, PTL_EQ_HANDLER_NONE, &c->send_eq));
	CHECK(c, PtlEQAlloc(c->ni, 64, PTL_EQ_HANDLER_NONE, &c->ctrl_eq));
	CHECK(c, PtlEQAlloc(c->ni, 64, PTL_EQ_HANDLER_NONE, &hello_eq));
	attach(c, PB_MB_DATA, c->rbuf, c->buflen, PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_ACK_DISABLE,
	       c->recv_eq);
	attach(c, PB_MB_DATA_ACK, c->rbuf, c->buflen, PTL_MD_OP_PUT, c->recv_eq);
	attach(c, PB_MB_FIN, c->finbuf, sizeof(c->finbuf),
	       PTL_MD_OP_PUT | PTL_MD_TRUNCATE | PTL_MD_ACK_DISABLE, c->recv_eq);
	attach(c, PB_MB_CTRL, c->cbuf_recv, sizeof(c->cbuf_recv),
	       PTL_MD_OP_PUT | PTL_MD_TRUNCATE | PTL_MD_ACK_DISABLE, c->ctrl_eq);
	attach(c, PB_MB_HELLO, hello_buf, sizeof(hello_buf),
	       PTL_MD_OP_PUT | PTL_MD_TRUNCATE | PTL_MD_ACK_DISABLE, hello_eq);
	c->smd_quiet = bind(c, c->sbuf, c->buflen, PTL_EQ_NONE);
	c->smd_ev = bind(c, c->sbuf, c->buflen, c->send_eq);
	c->gmd = bind(c, c->rbuf, c->buflen, c->send_eq);
	c->cmd = bind(c, c->cbuf_send, sizeof(c->cbuf_send), PTL_EQ_NONE);
	handshake(c);
	ptl_barrier(c, 0, NULL);
	rc = PtlNIStatus(c->ni, PTL_SR_DROP_COUNT, &drops_base);
	if (rc != PTL_OK)
		pb_die(c, "PtlNIStatus(PTL_SR_DROP_COUNT): %s", PtlErrorStr((unsigned)rc));
	ptl_barrier(c, 0, NULL);
}

void pb_ptl_teardown(struct pb_ctx *c)
{
	int rc = PtlNIFini(c->ni);

	if (rc != PTL_OK)
		pb_die(c, "PtlNIFini: %s", PtlErrorStr((unsigned)rc));
	munmap(c->sbuf, c->buflen);
	munmap(c->rbuf, c->buflen);
}

/* ---- iterations (OSU-like: many below 8 KiB, fewer above; bounded bytes) ---- */

static void iterations(const struct pb_ctx *c, enum pb_test t, size_t size, long *loop, long *skip)
{
	int q = c->o.quick;
	long l, s;

	switch (t) {
	case PB_LAT:
	case PB_GET:
		if (size <= 8192) {
			l = q ? 1000 : 10000;
			s = q ? 100 : 1000;
		} else {
			l = q ? 20 : 100;
			s = q ? 2 : 10;
			if (size >= (1u << 20)) { /* bound the bytes moved per size */
				long cap = (long)((q ? (128ull << 20) : (1ull << 30)) / size);
				if (l > cap)
					l = cap > 4 ? cap : 4;
				s = l / 10 ? l / 10 : 1;
			}
		}
		break;
	case PB_BW:
	case PB_BIBW:
	case PB_GETBW:
		if (size <= 8192) {
			l = q ? 20 : 100;
			s = q ? 2 : 10;
		} else {
			uint64_t per = (uint64_t)size * (uint64_t)c->o.window;
			long cap = (long)((q ? (512ull << 20) : (8ull << 30)) / (per ? per : 1));

			l = q ? 5 : 20;
			if (l > cap)
				l = cap > 2 ? cap : 2;
			s = l / 10 ? l / 10 : 1;
		}
		break;
	case PB_RATE:
	default:
		l = q ? 500 : 5000;
		s = q ? 50 : 500;
		break;
	}
	if (c->o.iters > 0) {
		l = c->o.iters;
		s = l / 10;
	}
	if (c->o.skip >= 0)
		s = c->o.skip;
	*loop = l;
	*skip = s;
}

/* ---- verification (outside timing) ---- */

static void verify_status(struct pb_ctx *c, uint64_t mine, const char *what, size_t size)
{
	uint64_t peer = 0;

	c->ctrl->barrier(c, mine, &peer);
	if (mine || peer)
		pb_die(c, "%s, %zu bytes: data verification FAILED on rank %d (see its message); "
			  "results would be meaningless",
		       what, size, mine ? c->rank : 1 - c->rank);
}

static uint64_t check_bytes(struct pb_ctx *c, const char *what, const char *buf, size_t size, int from,
			    uint64_t mlength)
{
	size_t i;

	if (mlength != size) {
		fprintf(stderr, "ptlbench: rank %d: %s: VERIFY FAILED: %" PRIu64 " bytes delivered, %zu sent\n",
			c->rank, what, mlength, size);
		return 1;
	}
	for (i = 0; i < size; i++)
		if ((unsigned char)buf[i] != pb_pattern(i, size, from)) {
			fprintf(stderr,
				"ptlbench: rank %d: %s: VERIFY FAILED at byte %zu of %zu: got 0x%02x, expected 0x%02x\n",
				c->rank, what, i, size, (unsigned char)buf[i], pb_pattern(i, size, from));
			return 1;
		}
	return 0;
}

static void verify_put(struct pb_ctx *c, size_t size, int from, ptl_match_bits_t mb, const char *what)
{
	uint64_t bad = 0;
	size_t i;

	if (c->rank == from)
		for (i = 0; i < size; i++)
			c->sbuf[i] = (char)pb_pattern(i, size, from);
	else
		memset(c->rbuf, 0xEE, size);
	c->ctrl->barrier(c, 0, NULL);
	if (c->rank == from) {
		int want = mb == PB_MB_DATA_ACK ? 2 : 1, got;

		put(c, c->smd_ev, size, want == 2 ? PTL_ACK_REQ : PTL_NO_ACK_REQ, mb, 0);
		for (got = 0; got < want; got++) { /* SEND_END, and the ACK if asked */
			ptl_event_t ev;

			wait_ev(c, c->send_eq, &ev);
			if (ev.ni_fail_type != PTL_NI_OK ||
			    (ev.type != PTL_EVENT_SEND_END && !(want == 2 && ev.type == PTL_EVENT_ACK)))
				ev_die(c, "verify: send", &ev, PTL_EVENT_SEND_END);
			if (ev.type == PTL_EVENT_ACK && ev.mlength != size) {
				fprintf(stderr, "ptlbench: rank %d: %s: ACK reports %" PRIu64 " bytes, %zu sent\n",
					c->rank, what, (uint64_t)ev.mlength, size);
				bad = 1;
			}
		}
	} else {
		ptl_event_t ev;

		wait_ev(c, c->recv_eq, &ev);
		if (ev.type != PTL_EVENT_PUT_END || ev.ni_fail_type != PTL_NI_OK || ev.match_bits != mb)
			ev_die(c, "verify: receive", &ev, PTL_EVENT_PUT_END);
		bad = check_bytes(c, what, c->rbuf, size, from, ev.mlength);
	}
	verify_status(c, bad, what, size);
}

static void verify_get(struct pb_ctx *c, size_t size)
{
	uint64_t bad = 0;
	size_t i;

	/* rank 0 gets rank 1's rbuf into its own rbuf */
	if (c->rank == 1)
		for (i = 0; i < size; i++)
			c->rbuf[i] = (char)pb_pattern(i, size, 1);
	else
		memset(c->rbuf, 0xEE, size);
	c->ctrl->barrier(c, 0, NULL);
	if (c->rank == 0) {
		ptl_event_t ev;

		CHECK(c, PtlGetRegion(c->gmd, 0, size, c->peer, c->pt, 0, PB_MB_DATA, 0));
		wait_ev(c, c->send_eq, &ev);
		if (ev.type != PTL_EVENT_REPLY_END || ev.ni_fail_type != PTL_NI_OK)
			ev_die(c, "verify: reply", &ev, PTL_EVENT_REPLY_END);
		bad = check_bytes(c, "get", c->rbuf, size, 1, ev.mlength);
	} else {
		expect(c, c->recv_eq, PTL_EVENT_GET_END, "verify: get target");
	}
	verify_status(c, bad, "get", size);
}

/* ---- first-contact warm-up ---- */

/* A NAL's rings and queues cost more on their first lap: shmem's ring pages
 * fault once in each process (4096 one-line records per pair), so OSU-like
 * warm-up counts (100 with --quick) left the first sizes' figures cold
 * (0 B 0.23 us against 8 B 0.15 us, 8 B being the first size of the second
 * lap).  Before a latency test's first size the pair ping-pongs 0-byte puts
 * for up to PB_WARM_MS or PB_WARM_MAX round trips: rank 0 times 100 of
 * them and tells rank 1 how many more fit (the barrier carries the count). */
enum { PB_WARM_FIRST = 100, PB_WARM_MAX = 5000, PB_WARM_MS = 100 };

static void pingpong_puts(struct pb_ctx *c, long n)
{
	for (long i = 0; i < n; i++) {
		if (c->rank == 0) {
			put(c, c->smd_quiet, 0, PTL_NO_ACK_REQ, PB_MB_DATA, 0);
			expect(c, c->recv_eq, PTL_EVENT_PUT_END, "warm-up");
		} else {
			expect(c, c->recv_eq, PTL_EVENT_PUT_END, "warm-up");
			put(c, c->smd_quiet, 0, PTL_NO_ACK_REQ, PB_MB_DATA, 0);
		}
	}
}

/* the number of round trips done, printed in the header */
static long warm_first_contact(struct pb_ctx *c)
{
	uint64_t more = 0, peer = 0;
	double t0;

	c->ctrl->barrier(c, 0, NULL);
	t0 = pb_now();
	pingpong_puts(c, PB_WARM_FIRST);
	if (c->rank == 0) {
		double per = (pb_now() - t0) / PB_WARM_FIRST;
		double fit = per > 0 ? (PB_WARM_MS * 1e-3) / per : PB_WARM_MAX;

		more = fit > PB_WARM_MAX - PB_WARM_FIRST ? PB_WARM_MAX - PB_WARM_FIRST : (uint64_t)fit;
	}
	c->ctrl->barrier(c, more, &peer);
	if (c->rank == 1)
		more = peer;
	pingpong_puts(c, (long)more);
	return PB_WARM_FIRST + (long)more;
}

/* ---- the timed loops; each returns rank 0's figure ---- */

static double run_lat(struct pb_ctx *c, size_t size, long loop, long skip)
{
	double t0 = 0, t1;
	long i;

	if (c->o.verify && !c->rep) {
		verify_put(c, size, 0, PB_MB_DATA, "put 0->1");
		verify_put(c, size, 1, PB_MB_DATA, "put 1->0");
	}
	c->ctrl->barrier(c, 0, NULL);
	if (c->rank == 0) {
		for (i = 0; i < loop + skip; i++) {
			if (i == skip)
				t0 = pb_now();
			put(c, c->smd_quiet, size, PTL_NO_ACK_REQ, PB_MB_DATA, 0);
			expect(c, c->recv_eq, PTL_EVENT_PUT_END, "latency");
		}
	} else {
		for (i = 0; i < loop + skip; i++) {
			expect(c, c->recv_eq, PTL_EVENT_PUT_END, "latency");
			put(c, c->smd_quiet, size, PTL_NO_ACK_REQ, PB_MB_DATA, 0);
		}
	}
	t1 = pb_now();
	return (t1 - t0) * 1e6 / (2.0 * (double)loop);
}

static double run_get(struct pb_ctx *c, size_t size, long loop, long skip)
{
	double t0 = 0, t1;
	long i;

	if (c->o.verify && !c->rep)
		verify_get(c, size);
	c->ctrl->barrier(c, 0, NULL);
	if (c->rank == 0) {
		for (i = 0; i < loop + skip; i++) {
			int rc;

			if (i == skip)
				t0 = pb_now();
			rc = PtlGetRegion(c->gmd, 0, size, c->peer, c->pt, 0, PB_MB_DATA, 0);
			if (rc != PTL_OK)
				pb_die(c, "PtlGetRegion(%zu bytes): %s", size, PtlErrorStr((unsigned)rc));
			expect(c, c->send_eq, PTL_EVENT_REPLY_END, "get latency");
		}
	} else {
		/* passive target, but it must be inside Portals calls to make
		 * progress in app mode: consume one GET_END per get */
		for (i = 0; i < loop + skip; i++)
			expect(c, c->recv_eq, PTL_EVENT_GET_END, "get latency (target)");
	}
	t1 = pb_now();
	return (t1 - t0) * 1e6 / (double)loop;
}

/* Unidirectional: rank 0 keeps `window` puts outstanding; a window is
 * complete when rank 1, having seen all its PUT_ENDs, sends a 0-byte put
 * back (OSU's 4-byte ack), or with --ack when rank 0 has all the ACKs. */
static double run_bw(struct pb_ctx *c, size_t size, long loop, long skip, int rate)
{
	int w, window = c->o.window, ack = c->o.ack;
	ptl_match_bits_t mb = ack ? PB_MB_DATA_ACK : PB_MB_DATA;
	double t0 = 0, t1;
	long i;

	if (c->o.verify && !c->rep)
		verify_put(c, size, 0, mb, rate ? "rate put" : "bw put");
	c->ctrl->barrier(c, 0, NULL);
	if (c->rank == 0) {
		for (i = 0; i < loop + skip; i++) {
			if (i == skip)
				t0 = pb_now();
			if (ack) {
				int acks = 0;

				for (w = 0; w < window; w++)
					put(c, c->smd_ev, size, PTL_ACK_REQ, mb, 0);
				while (acks < window) {
					ptl_event_t ev;

					wait_ev(c, c->send_eq, &ev);
					if (ev.ni_fail_type != PTL_NI_OK ||
					    (ev.type != PTL_EVENT_ACK && ev.type != PTL_EVENT_SEND_END))
						ev_die(c, "bw (ack)", &ev, PTL_EVENT_ACK);
					acks += ev.type == PTL_EVENT_ACK;
				}
			} else {
				for (w = 0; w < window; w++)
					put(c, c->smd_quiet, size, PTL_NO_ACK_REQ, mb, 0);
				expect(c, c->recv_eq, PTL_EVENT_PUT_END, "bw (final message)");
			}
		}
	} else {
		for (i = 0; i < loop + skip; i++) {
			for (w = 0; w < window; w++)
				expect(c, c->recv_eq, PTL_EVENT_PUT_END, "bw (receiver)");
			if (!ack)
				put(c, c->cmd, 0, PTL_NO_ACK_REQ, PB_MB_FIN, 0);
		}
	}
	t1 = pb_now();
	if (rate)
		return (double)window * (double)loop / (t1 - t0);
	return (double)size * (double)window * (double)loop / (t1 - t0) / 1e6;
}

/* Unidirectional, pulled: rank 0 keeps `window` gets of rank 1's rbuf
 * outstanding; a window is complete when all its REPLY_ENDs are in.  The
 * target only consumes its GET_ENDs (app progress needs it inside Portals).
 * The bytes and the window are bw's, so the two compare as puts vs gets. */
static double run_getbw(struct pb_ctx *c, size_t size, long loop, long skip)
{
	int w, window = c->o.window;
	double t0 = 0, t1;
	long i;

	if (c->o.verify && !c->rep)
		verify_get(c, size);
	c->ctrl->barrier(c, 0, NULL);
	for (i = 0; i < loop + skip; i++) {
		if (i == skip)
			t0 = pb_now();
		if (c->rank == 0) {
			for (w = 0; w < window; w++) {
				int rc =
				    PtlGetRegion(c->gmd, 0, size, c->peer, c->pt, 0, PB_MB_DATA, 0);

				if (rc != PTL_OK)
					pb_die(c, "PtlGetRegion(%zu bytes): %s", size,
					       PtlErrorStr((unsigned)rc));
			}
			for (w = 0; w < window; w++)
				expect(c, c->send_eq, PTL_EVENT_REPLY_END, "getbw (reply)");
		} else {
			for (w = 0; w < window; w++)
				expect(c, c->recv_eq, PTL_EVENT_GET_END, "getbw (target)");
		}
	}
	t1 = pb_now();
	return (double)size * (double)window * (double)loop / (t1 - t0) / 1e6;
}

/* Both ranks keep `window` puts outstanding to each other; an iteration ends
 * when my window's SEND_ENDs and the peer's window of PUT_ENDs are in. */
static double run_bibw(struct pb_ctx *c, size_t size, long loop, long skip)
{
	int w, window = c->o.window;
	double t0 = 0, t1;
	long i;

	if (c->o.verify && !c->rep) {
		verify_put(c, size, 0, PB_MB_DATA, "bibw put 0->1");
		verify_put(c, size, 1, PB_MB_DATA, "bibw put 1->0");
	}
	c->ctrl->barrier(c, 0, NULL);
	for (i = 0; i < loop + skip; i++) {
		if (i == skip)
			t0 = pb_now();
		for (w = 0; w < window; w++)
			put(c, c->smd_ev, size, PTL_NO_ACK_REQ, PB_MB_DATA, 0);
		for (w = 0; w < window; w++)
			expect(c, c->send_eq, PTL_EVENT_SEND_END, "bibw (send)");
		for (w = 0; w < window; w++)
			expect(c, c->recv_eq, PTL_EVENT_PUT_END, "bibw (receive)");
	}
	t1 = pb_now();
	return 2.0 * (double)size * (double)window * (double)loop / (t1 - t0) / 1e6;
}

/* ---- one test: table, sizes, drop check ---- */

void pb_run_test(struct pb_ctx *c, enum pb_test t)
{
	static const struct {
		const char *title, *label, *unit;
		enum pb_kind kind;
	} info[PB_NTESTS] = {
		[PB_LAT] = {"Put Latency Test", "Latency (us)", "us", PB_KIND_LAT},
		[PB_GET] = {"Get Latency Test", "Latency (us)", "us", PB_KIND_RTT},
		[PB_BW] = {"Put Bandwidth Test", "Bandwidth (MB/s)", "MB/s", PB_KIND_BW},
		[PB_BIBW] = {"Put Bi-Directional Bandwidth Test", "Bi-Bandwidth (MB/s)", "MB/s", PB_KIND_BW},
		[PB_RATE] = {"Put Message Rate Test", "Messages/s", "msgs/s", PB_KIND_RATE},
		[PB_GETBW] = {"Get Bandwidth Test", "Bandwidth (MB/s)", "MB/s", PB_KIND_BW},
	};
	size_t sizes[PB_MAX_SIZES];
	int n = pb_sizes(c, t, sizes), k;
	struct pb_table tab = {
		.test = pb_test_name[t],
		.title = info[t].title,
		.label = info[t].label,
		.unit = info[t].unit,
		.kind = info[t].kind,
		.ref = c->o.no_ref ? NULL : pb_ref_for(c, info[t].kind),
		.ref2 = c->o.no_ref ? NULL : pb_ref2_for(c, info[t].kind),
	};
	char l1[160], l2[320], l3[160], trailer[160];
	const char *hdr[4] = {l1, l2, NULL, NULL};
	ptl_sr_value_t drops = 0;
	uint64_t peer_drops = 0;
	int rc;

	switch (t) {
	case PB_LAT:
		snprintf(l1, sizeof(l1), "ping-pong of puts, half round trip; no acks; poll: %s",
			 c->o.poll_get ? "PtlEQGet" : "PtlEQWait");
		break;
	case PB_GET:
		snprintf(l1, sizeof(l1), "PtlGet to REPLY_END, full round trip; poll: %s",
			 c->o.poll_get ? "PtlEQGet" : "PtlEQWait");
		break;
	case PB_BW:
	case PB_RATE:
		snprintf(l1, sizeof(l1), "window: %d puts%s; completion: %s%s; poll: %s",
			 c->o.window, t == PB_RATE ? " of 8 bytes" : "",
			 c->o.ack ? "acks of every put" : "a 0-byte put back after the window arrived",
			 t == PB_RATE ? "" : "; MB = 1e6 bytes", c->o.poll_get ? "PtlEQGet" : "PtlEQWait");
		break;
	case PB_GETBW:
		snprintf(l1, sizeof(l1),
		         "window: %d gets; completion: all REPLY_ENDs of the window; "
		         "MB = 1e6 bytes; poll: %s",
		         c->o.window, c->o.poll_get ? "PtlEQGet" : "PtlEQWait");
		break;
	case PB_BIBW:
		snprintf(l1, sizeof(l1), "window: %d puts each way; completion: SEND_END + peer's PUT_END; "
			 "MB = 1e6 bytes; poll: %s", c->o.window, c->o.poll_get ? "PtlEQGet" : "PtlEQWait");
		break;
	default:
		l1[0] = '\0';
	}
	snprintf(l2, sizeof(l2), "iterations: %s%s; data verified once per size outside timing: %s",
		 c->o.iters > 0 ? "fixed (-i)" : (c->o.quick ? "by size (quick)" : "by size (OSU-like)"),
		 c->o.repeat > 1 ? (t == PB_LAT || t == PB_GET ? "; figure: best (lowest) of the repetitions"
							      : "; figure: best (highest) of the repetitions")
				 : "; figure: mean over the timed iterations",
		 c->o.verify ? "yes" : "no");
	if (c->o.repeat > 1) {
		size_t n1 = strlen(l2);

		snprintf(l2 + n1, sizeof(l2) - n1, "; repetitions: %d", c->o.repeat);
	}
	if (t == PB_LAT && n > 0) {
		size_t n2 = strlen(l2);
		long warm = warm_first_contact(c);

		snprintf(l2 + n2, sizeof(l2) - n2,
			 "; warm-up: %ld round trips of 0-byte puts before the first size (first lap of "
			 "the NAL's rings)", warm);
	}
	if (tab.ref && tab.ref->again) {
		snprintf(l3, sizeof(l3),
		         "reference interleaved: one more reference run before each "
		         "repetition of each size; its figure is the best of all its runs");
		hdr[2] = l3;
	}
	pb_table_begin(c, &tab, hdr);
	for (k = 0; k < n; k++) {
		long loop, skip;
		double v = 0;
		uint64_t bits = 0;

		iterations(c, t, sizes[k], &loop, &skip);
		for (c->rep = 0; c->rep < c->o.repeat; c->rep++) {
			double r = 0;

			if (tab.ref && tab.ref->again)
				tab.ref->again(c, tab.kind, sizes[k]);
			if (tab.ref2 && tab.ref2->again)
				tab.ref2->again(c, tab.kind, sizes[k]);

			switch (t) {
			case PB_LAT: r = run_lat(c, sizes[k], loop, skip); break;
			case PB_GET: r = run_get(c, sizes[k], loop, skip); break;
			case PB_BW: r = run_bw(c, sizes[k], loop, skip, 0); break;
			case PB_BIBW: r = run_bibw(c, sizes[k], loop, skip); break;
			case PB_RATE: r = run_bw(c, sizes[k], loop, skip, 1); break;
			case PB_GETBW: r = run_getbw(c, sizes[k], loop, skip); break;
			default: break;
			}
			/* best of the repetitions: lowest time, highest throughput */
			if (c->rep == 0 || (tab.kind == PB_KIND_LAT || tab.kind == PB_KIND_RTT ? r < v : r > v))
				v = r;
			c->ctrl->barrier(c, 0, &bits);
		}
		pb_table_row(c, &tab, sizes[k], v);
	}
	rc = PtlNIStatus(c->ni, PTL_SR_DROP_COUNT, &drops);
	if (rc != PTL_OK)
		pb_die(c, "PtlNIStatus(PTL_SR_DROP_COUNT): %s", PtlErrorStr((unsigned)rc));
	drops -= drops_base;
	drops_base += drops;
	c->ctrl->barrier(c, (uint64_t)drops, &peer_drops);
	if (tab.ref2) {
		char place[240];

		pb_placement_line(c, place, sizeof(place));
		pb_table_note(c, place);
	}
	snprintf(trailer, sizeof(trailer), "drops (PTL_SR_DROP_COUNT during this test): rank0 %" PRIu64
		 ", rank1 %" PRIu64 "%s", c->rank == 0 ? (uint64_t)drops : peer_drops,
		 c->rank == 0 ? peer_drops : (uint64_t)drops, (drops || peer_drops) ? "  FAILED" : "");
	pb_table_end(c, &tab, trailer);
	if (drops || peer_drops) {
		if (c->rank == 0)
			fprintf(stderr, "ptlbench: %s: the library dropped %" PRIu64 " request(s) (must be 0)\n",
				pb_test_name[t], (uint64_t)drops + peer_drops);
		c->failed = 1;
	}
}
