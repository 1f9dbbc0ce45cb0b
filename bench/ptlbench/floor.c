/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * floor.c - two shared-memory references beside the flag ping-pong (refs.c):
 *
 *   ring floor  what a small put over the shmem NAL cannot avoid, and only
 *               that: per message the sender writes one 64-byte record (the
 *               NAL's SMALL record: the header fields and up to 8 payload
 *               bytes) into the next slot of a 256 KiB ring in the shared
 *               segment, stamps it last (release) and claims the next slot's
 *               lines (PREFETCHW), as nal/shmem/ring.h does; the receiver
 *               polls that slot's stamp, copies the record out, writes a
 *               ptl_event_t into a 1024-slot ring of its own memory, reads it
 *               back, copies the payload and publishes its tail.  The same
 *               cache lines cross between the cores as for the put (one per
 *               message), the same memory is touched, none of the Portals
 *               work (handles, checks, matching, the MD) is done.  A put
 *               at this figure would be a library that costs nothing.
 *
 *   placement   whether the two ranks' CPUs are two physical cores or the two
 *               hardware threads of one (a virtual machine's vCPUs may be
 *               either, and may move between runs).  Rank 0 times a fixed
 *               compute loop while rank 1 sleeps on a futex and while rank 1
 *               spins on a cache line as the flag ping-pong's waiter does;
 *               the ratio of the two (best of several) is ~1 on separate
 *               cores and well above 1 when the spinning thread shares the
 *               core.  On one core a cache line moves between the threads'
 *               L1s without leaving the core (the flag ping-pong reads about
 *               half its figure on two cores), while every instruction of
 *               the put competes with the peer's polling for the core.
 *
 * Both are measured up front and again before each repetition of a latency
 * test, like the flag; the floor is the best of its runs, the placement
 * ratio is reported as its range over the run.
 */
#include "config.h"

#include "ptlbench.h"

#include <linux/futex.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define FLOOR_RING       (256u * 1024u) /* shmem's default ring (P3_SHMEM_RING_SIZE) */
#define FLOOR_LINE       64u
#define FLOOR_SLOTS      (FLOOR_RING / FLOOR_LINE)
#define FLOOR_PAYLOAD    8u    /* shmem's SMALL records: up to 8 payload bytes */
#define FLOOR_EVENTS     1024u /* the receiver's local event ring */
#define FLOOR_ITERS      5000
#define FLOOR_SKIP       1000
#define FLOOR_RUNS       20
#define FLOOR_SPIN_CHECK 0xFFFFu

#define PROBE_LOOP      40000u /* compute-loop iterations: ~30-60 us */
#define PROBE_REPS      5      /* per condition and probe; the best counts */
#define PROBE_SETTLE_US 300    /* rank 1 reaches its futex meanwhile */
/* Median slowdown at or above which the two CPUs are taken to share a
 * core, at or below which they are not.  Measured here: 1.00 on separate
 * cores, 2.00 (1.62-1.70 at times) on the two threads of one core, single
 * probes straying under load (README, "The flag ping-pong and the
 * placement"). */
#define PROBE_SHARED   1.25
#define PROBE_SEPARATE 1.10

/* One record, one cache line: the layout of shmem's SMALL record
 * (nal/shmem/shmem.h, struct shm_small), stamp at the same offset. */
struct floor_rec {
	uint32_t len;
	uint16_t kind;
	_Atomic uint16_t stamp;
	uint32_t aux; /* payload bytes */
	uint32_t aux2;
	uint32_t uid, jid, pt, ac;
	uint64_t mbits;
	uint64_t hdr_data;
	uint64_t roff;
	uint8_t data[FLOOR_PAYLOAD];
};
_Static_assert(sizeof(struct floor_rec) == FLOOR_LINE, "one record, one line");

struct floor_word {
	_Alignas(64) _Atomic uint64_t v;
};

/* The floor's part of the shared segment (pb_seg_floor_area). */
struct floor_area {
	struct floor_word head[2];           /* ring d's producer: records published */
	struct floor_word tail[2];           /* ring d's consumer: records consumed */
	_Alignas(64) _Atomic uint32_t probe; /* the placement probe's word (futex) */
	_Alignas(4096) struct floor_rec ring[2][FLOOR_SLOTS]; /* ring d: rank d -> rank 1 - d */
};
_Static_assert(sizeof(struct floor_area) <= PB_FLOOR_AREA, "floor area");

static ptl_md_t floor_md; /* what a PUT_END's snapshot holds */

static struct floor_area *area(const struct pb_ctx *c)
{
	return (struct floor_area *)pb_seg_floor_area(c);
}

int pb_floor_usable(const struct pb_ctx *c)
{
	return pb_seg_floor_area(c) != NULL && pb_flag_applies(c);
}

static void floor_wait(const struct pb_ctx *c, _Atomic uint16_t *w, uint16_t v)
{
	unsigned n = 0;
	double deadline = 0;

	/* no pause: as the flag's waiter (refs.c) */
	while (atomic_load_explicit(w, memory_order_acquire) != v) {
		if ((++n & FLOOR_SPIN_CHECK) == 0) {
			if (deadline == 0)
				deadline = pb_now() + 30;
			else if (pb_now() > deadline)
				pb_die(c, "ring floor: peer stopped answering");
		}
	}
}

/* The stamp of the record at slot count p: its lap, top bit set (never the
 * 0 of a fresh line, never the previous lap's), as shm_ring_stamp. */
static inline uint16_t floor_stamp(uint64_t p)
{
	return (uint16_t)((p / FLOOR_SLOTS) | 0x8000u);
}

static inline void prefetch_for_write(const void *p)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ __volatile__("prefetchw %0" : : "m"(*(const char *)p));
#else
	__builtin_prefetch(p, 1, 3);
#endif
}

static void floor_send(struct pb_ctx *c, struct floor_area *a, int d, uint64_t p)
{
	struct floor_rec *r = &a->ring[d][p & (FLOOR_SLOTS - 1)];

	/* room: the cached tail, the shared one once a lap (never full in a
	 * ping-pong, but the put checks too) */
	if (p - c->floor_tail_seen >= FLOOR_SLOTS) {
		c->floor_tail_seen = atomic_load_explicit(&a->tail[d].v, memory_order_acquire);
		if (p - c->floor_tail_seen >= FLOOR_SLOTS)
			pb_die(c, "ring floor: ring full in a ping-pong");
	}
	r->len = FLOOR_LINE;
	r->kind = 8;
	r->aux = FLOOR_PAYLOAD;
	r->aux2 = 0;
	r->uid = c->floor_uid;
	r->jid = (uint32_t)c->jid;
	r->pt = 2;
	r->ac = 0;
	r->mbits = p;
	r->hdr_data = 0;
	r->roff = 0;
	memcpy(r->data, c->floor_src, FLOOR_PAYLOAD);
	atomic_store_explicit(&r->stamp, floor_stamp(p), memory_order_release);
	atomic_store_explicit(&a->head[d].v, p + 1, memory_order_release);
	/* claim the next record's lines between messages (ring.h) */
	prefetch_for_write(&a->ring[d][(p + 1) & (FLOOR_SLOTS - 1)]);
	prefetch_for_write(&a->ring[d][(p + 2) & (FLOOR_SLOTS - 1)]);
}

static void floor_recv(struct pb_ctx *c, struct floor_area *a, int d, uint64_t p)
{
	struct floor_rec *r = &a->ring[d][p & (FLOOR_SLOTS - 1)], rec;
	ptl_event_t *ev = &c->floor_evq[c->floor_evw++ & (FLOOR_EVENTS - 1)], out;

	floor_wait(c, &r->stamp, floor_stamp(p));
	memcpy(&rec, r, sizeof(rec));
	if (rec.mbits != p || rec.aux > FLOOR_PAYLOAD)
		pb_die(c, "ring floor: record %llu out of order", (unsigned long long)p);
	/* the event a PUT_END carries, written and read back locally */
	ev->type = PTL_EVENT_PUT_END;
	ev->initiator.nid = 0;
	ev->initiator.pid = (ptl_pid_t)c->partner;
	ev->uid = rec.uid;
	ev->jid = rec.jid;
	ev->pt_index = rec.pt;
	ev->match_bits = rec.mbits;
	ev->rlength = rec.aux;
	ev->mlength = rec.aux;
	ev->offset = rec.roff;
	ev->md_handle = 0;
	ev->md = floor_md; /* the MD snapshot a PUT_END carries */
	ev->hdr_data = rec.hdr_data;
	ev->link = 0;
	ev->ni_fail_type = PTL_NI_OK;
	ev->sequence = (ptl_seq_t)p;
	memcpy(&out, ev, sizeof(out));
	memcpy(c->floor_dst, rec.data, out.mlength);
	atomic_store_explicit(&a->tail[d].v, p + 1, memory_order_release);
}

/* One timed run of `iters` round trips after `skip` untimed ones; rank 0's
 * elapsed nanoseconds (rank 1 returns 0).  Both ranks count the same
 * records, so their positions agree from run to run. */
static uint64_t floor_run(struct pb_ctx *c, uint64_t iters, uint64_t skip)
{
	struct floor_area *a = area(c);
	uint64_t i, n = iters + skip;
	double t0 = 0, t1;

	c->ctrl->barrier(c, 0, NULL);
	for (i = 0; i < n; i++, c->floor_pos++) {
		if (c->rank == 0) {
			if (i == skip)
				t0 = pb_now();
			floor_send(c, a, 0, c->floor_pos);
			floor_recv(c, a, 1, c->floor_pos);
		} else {
			floor_recv(c, a, 0, c->floor_pos);
			floor_send(c, a, 1, c->floor_pos);
		}
	}
	t1 = pb_now();
	return c->rank == 0 ? (uint64_t)((t1 - t0) * 1e9) : 0;
}

/* ---- placement probe ---- */

/* A fixed loop of independent integer work (throughput-bound, as the
 * put's straight-line code mostly is): seconds it took. */
static double probe_kernel(void)
{
	uint64_t x0 = 1, x1 = 2, x2 = 3, x3 = 4, x4 = 5, x5 = 6;
	double t0 = pb_now(), t1;

	for (unsigned i = 0; i < PROBE_LOOP; i++) {
		x0 += x1 ^ i;
		x1 = (x1 << 3) ^ (x2 + 7);
		x2 += x3 >> 5;
		x3 ^= x4 + i;
		x4 = (x4 >> 1) + x5;
		x5 ^= x0 << 2;
		/* keep them in registers and out of vector units */
		__asm__ __volatile__(""
		                     : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3), "+r"(x4), "+r"(x5));
	}
	t1 = pb_now();
	__asm__ __volatile__("" : : "r"(x0 ^ x1 ^ x2 ^ x3 ^ x4 ^ x5));
	return t1 - t0;
}

static long futex(_Atomic uint32_t *w, int op, uint32_t v, const struct timespec *ts)
{
	return syscall(SYS_futex, (uint32_t *)w, op, v, ts, NULL, 0);
}

/* One probe (collective): rank 0's slowdown, on both ranks. */
static double probe_once(struct pb_ctx *c)
{
	struct floor_area *a = area(c);
	double idle = INFINITY, spin = INFINITY, ratio = 0;
	uint64_t bits = 0;

	for (int k = 0; k < PROBE_REPS; k++) {
		uint32_t gen;

		/* rank 1 spins on the word, as a flag waiter */
		c->ctrl->barrier(c, 0, NULL);
		gen = atomic_load(&a->probe);
		c->ctrl->barrier(c, 0, NULL);
		if (c->rank == 0) {
			double t = probe_kernel();

			spin = t < spin ? t : spin;
			atomic_store_explicit(&a->probe, gen + 1, memory_order_release);
		} else {
			unsigned n = 0;
			double deadline = pb_now() + 30;

			while (atomic_load_explicit(&a->probe, memory_order_acquire) == gen)
				if ((++n & FLOOR_SPIN_CHECK) == 0 && pb_now() > deadline)
					pb_die(c, "placement probe: peer stopped");
		}
		/* rank 1 sleeps on it */
		c->ctrl->barrier(c, 0, NULL);
		gen = atomic_load(&a->probe);
		c->ctrl->barrier(c, 0, NULL);
		if (c->rank == 0) {
			struct timespec ts = {0, PROBE_SETTLE_US * 1000L};
			double t;

			nanosleep(&ts, NULL);
			t = probe_kernel();
			idle = t < idle ? t : idle;
			atomic_store_explicit(&a->probe, gen + 1, memory_order_release);
			futex(&a->probe, FUTEX_WAKE, 1, NULL);
		} else {
			double deadline = pb_now() + 30;

			while (atomic_load_explicit(&a->probe, memory_order_acquire) == gen) {
				struct timespec ts = {1, 0};

				if (pb_now() > deadline)
					pb_die(c, "placement probe: peer stopped");
				futex(&a->probe, FUTEX_WAIT, gen, &ts);
			}
		}
	}
	if (c->rank == 0)
		ratio = spin / idle;
	memcpy(&bits, &ratio, sizeof(bits));
	c->ctrl->barrier(c, bits, &bits);
	if (c->rank == 1)
		memcpy(&ratio, &bits, sizeof(ratio));
	return ratio;
}

static void probe_note(struct pb_ctx *c)
{
	double r = probe_once(c);

	if (!(r > 0) || !isfinite(r))
		return;
	if (c->probe_n == 0 || r < c->probe_min)
		c->probe_min = r;
	if (c->probe_n == 0 || r > c->probe_max)
		c->probe_max = r;
	if (c->probe_n < PB_PROBES_MAX)
		c->probe_v[c->probe_n] = r;
	c->probe_n++;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of the probes kept: other processes on a loaded machine
 * disturb single probes either way (seen: 0.67-1.41 around 1.00). */
static double probe_median(const struct pb_ctx *c)
{
	double v[PB_PROBES_MAX];
	int n = c->probe_n < PB_PROBES_MAX ? c->probe_n : PB_PROBES_MAX;

	memcpy(v, c->probe_v, (size_t)n * sizeof(v[0]));
	qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

const char *pb_placement_verdict(double median)
{
	if (median >= PROBE_SHARED)
		return "one physical core (SMT siblings)";
	if (median <= PROBE_SEPARATE)
		return "separate physical cores";
	return "unclear";
}

void pb_placement_line(const struct pb_ctx *c, char *buf, size_t len)
{
	double m;

	if (c->probe_n == 0) {
		snprintf(buf, len, "placement: not probed");
		return;
	}
	m = probe_median(c);
	snprintf(buf, len,
	         "placement: rank 0's compute loop ran %.2fx slower (median; range %.2f-%.2f, %d "
	         "probes) while rank 1 spun than while it slept: %s",
	         m, c->probe_min, c->probe_max, c->probe_n, pb_placement_verdict(m));
}

/* ---- the reference (struct pb_ref) ---- */

static void floor_prepare(struct pb_ctx *c)
{
	if (c->floor_evq)
		return;
	c->floor_evq = calloc(FLOOR_EVENTS, sizeof(ptl_event_t));
	if (!c->floor_evq)
		pb_die(c, "out of memory");
	for (unsigned i = 0; i < FLOOR_PAYLOAD; i++)
		c->floor_src[i] = (char)pb_pattern(i, FLOOR_PAYLOAD, c->rank);
	c->floor_uid = (uint32_t)getuid();
	floor_md.start = c->floor_dst;
	floor_md.length = sizeof(c->floor_dst);
	floor_md.threshold = PTL_MD_THRESH_INF;
	floor_md.options = PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE;
}

static void floor_note(struct pb_ctx *c, uint64_t t)
{
	uint64_t peer = 0;
	double us;

	c->ctrl->barrier(c, t, &peer);
	if (c->rank != 0)
		t = peer;
	us = (double)t / 1e3 / (2.0 * FLOOR_ITERS);
	if (c->floor_half_rtt_us <= 0 || us < c->floor_half_rtt_us)
		c->floor_half_rtt_us = us;
}

void pb_floor_measure(struct pb_ctx *c)
{
	int runs = c->o.quick ? FLOOR_RUNS / 4 : FLOOR_RUNS;

	floor_prepare(c);
	c->floor_half_rtt_us = 0;
	/* the first lap faults the ring's pages in: untimed */
	floor_run(c, 0, FLOOR_SLOTS);
	for (int r = 0; r < runs; r++)
		floor_note(c, floor_run(c, FLOOR_ITERS, FLOOR_SKIP));
	probe_note(c);
}

double pb_floor_value(const struct pb_ctx *c, enum pb_kind kind, size_t size)
{
	if (c->floor_half_rtt_us <= 0 || size > FLOOR_PAYLOAD)
		return NAN;
	if (kind == PB_KIND_RTT)
		return 2 * c->floor_half_rtt_us;
	return kind == PB_KIND_LAT ? c->floor_half_rtt_us : NAN;
}

void pb_floor_again(struct pb_ctx *c, enum pb_kind kind, size_t size)
{
	if (isnan(pb_floor_value(c, kind, size)))
		return; /* both ranks see the same sizes: both return */
	floor_note(c, floor_run(c, FLOOR_ITERS, FLOOR_SKIP));
	probe_note(c);
}

void pb_floor_report(struct pb_ctx *c, const struct pb_ref *r)
{
	struct pb_table t = {.test = r->name,
	                     .title = r->title,
	                     .label = "Latency (us)",
	                     .unit = r->unit,
	                     .kind = r->kind,
	                     .ref = NULL};
	char place[240];
	const char *hdr[] = {r->note, place, NULL};

	pb_placement_line(c, place, sizeof(place));
	pb_table_begin(c, &t, hdr);
	pb_table_row(c, &t, 0, c->floor_half_rtt_us);
	pb_table_end(c, &t, NULL);
}

void pb_floor_release(struct pb_ctx *c)
{
	free(c->floor_evq);
	c->floor_evq = NULL;
}
