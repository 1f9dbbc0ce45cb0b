/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * eq_ring.h - the event queue ring: the only structure both sides of the
 * API/LIB boundary touch directly.
 *
 * It is self-contained and pointer-free (a header and a power-of-two array
 * of ptl_event_t), so it may be allocated in shared memory and written by a
 * LIB side that runs in another process (an offloading NIC).  One writer at
 * a time (the LIB side, under its lock); any number of lock-free readers.
 *
 * Writer (p3_eq_ring_write_begin/_end), for event number w:
 *   1. slot.sequence = w + 2^31          (marks the slot "being written")
 *   2. release fence, write every other field
 *   3. slot.sequence = w (release store), then eqr_write_seq = w + 1
 * Reader at eqr_read_seq = r (p3_eq_ring_read):
 *   write_seq == r             -> PTL_EQ_EMPTY
 *   0 < write_seq - r <= count -> copy slot r; valid iff its sequence reads r
 *                                 before and after the copy (a seqlock), then
 *                                 CAS read_seq r -> r + 1: PTL_OK
 *   write_seq - r > count      -> lapped: jump to the oldest event still in
 *                                 the ring (write_seq - count), return it with
 *                                 PTL_EQ_DROPPED and add the number skipped to
 *                                 eqr_dropped (PTL_SR_EQ_DROPPED)
 * Sequences start at -count, so the 32-bit wrap is exercised by every test
 * that posts more than count events.
 *
 * Event w lives in slot (w - eqr_base) & mask.  eqr_base is 0 (slot w &
 * mask) except for a writer whose every reader is its own thread
 * (p3_eq_ring_write_begin_alone: the ring in that process's heap, the
 * process with one thread): finding the ring empty, it sets eqr_base = w, so
 * that the event goes to slot 0 again.  A ping-pong then reuses the same
 * few cache lines instead of walking a ring larger than the L2 (the MPI
 * adapter's 32768-slot unexpected EQ, 4.7 MB: every event landed in lines
 * last touched 32768 messages before).  Capacity and the lapping rules are
 * unchanged: the base moves only while no event is unread, so the events a
 * reader can still get were all written under one base.
 *
 * eqr_owed mirrors LIB's count of operations started on MDs of this EQ
 * whose END event is not yet posted (lib.h, eq_owed), stored after the END
 * is written.  A reader in another process (the host of an offloading NIC)
 * learns from it, without a round trip, that a conditional post tested
 * against this EQ would be refused: a message is arriving (PtlMEMDPostNoWait).
 */
#ifndef P3_EQ_RING_H
#define P3_EQ_RING_H

#include <assert.h>
#include <portals3.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define P3_EQ_RING_MAGIC 0x50334551u /* "P3EQ" */
#define P3_EQ_RING_VERSION 1u
#define P3_EQ_BUSY_BIT 0x80000000u

struct p3_eq_ring {
	uint32_t eqr_magic;
	uint32_t eqr_version;
	uint32_t eqr_count; /* slots, a power of two */
	uint32_t eqr_mask;  /* count - 1 */
	_Atomic uint32_t eqr_handle; /* EQ handle; 0 once freed (API-side check) */
	uint32_t eqr_pad0[11];
	/* written by the LIB side only; its own cache line */
	_Atomic uint32_t eqr_write_seq; /* next sequence to write; futex word */
	_Atomic uint32_t eqr_base;      /* event w is in slot (w - base) & mask */
	_Atomic uint32_t eqr_owed;      /* operations on this EQ's MDs whose END is owed */
	uint32_t eqr_pad1[13];
	/* written by readers */
	_Atomic uint32_t eqr_read_seq; /* next sequence to read */
	_Atomic uint32_t eqr_waiters;  /* readers blocked (or about to block) */
	_Atomic uint64_t eqr_dropped;  /* events overwritten before being read */
	uint32_t eqr_pad2[12];
	ptl_event_t eqr_slots[]; /* eqr_count entries */
};

static_assert(offsetof(struct p3_eq_ring, eqr_write_seq) == 64, "ring layout");
static_assert(offsetof(struct p3_eq_ring, eqr_base) == 68, "ring layout");
static_assert(offsetof(struct p3_eq_ring, eqr_owed) == 72, "ring layout");
static_assert(offsetof(struct p3_eq_ring, eqr_read_seq) == 128, "ring layout");
static_assert(offsetof(struct p3_eq_ring, eqr_slots) == 192, "ring layout");

static inline size_t p3_eq_ring_bytes(uint32_t count)
{
	return sizeof(struct p3_eq_ring) + (size_t)count * sizeof(ptl_event_t);
}

/* Initialise a ring of `count` (power of two) slots in `mem`. */
static inline void p3_eq_ring_init(struct p3_eq_ring *r, uint32_t count, ptl_handle_eq_t handle)
{
	uint32_t start = (uint32_t)0 - count;

	memset(r, 0, p3_eq_ring_bytes(count));
	r->eqr_magic = P3_EQ_RING_MAGIC;
	r->eqr_version = P3_EQ_RING_VERSION;
	r->eqr_count = count;
	r->eqr_mask = count - 1;
	for (uint32_t i = 0; i < count; i++)
		r->eqr_slots[i].sequence = (start + i) ^ P3_EQ_BUSY_BIT;
	atomic_store_explicit(&r->eqr_write_seq, start, memory_order_relaxed);
	atomic_store_explicit(&r->eqr_read_seq, start, memory_order_relaxed);
	atomic_store_explicit(&r->eqr_handle, handle, memory_order_release);
}

/* The slot of event number seq. */
static inline ptl_event_t *p3_eq_ring_slot(struct p3_eq_ring *r, uint32_t seq, uint32_t mask)
{
	return &r->eqr_slots[(seq - atomic_load_explicit(&r->eqr_base, memory_order_relaxed)) &
			     mask];
}

/* Writer, event w at ev: mark it busy. */
static inline ptl_event_t *p3_eq_ring_claim(ptl_event_t *ev, uint32_t w, uint32_t *seq)
{
	__atomic_store_n(&ev->sequence, w ^ P3_EQ_BUSY_BIT, __ATOMIC_RELAXED);
	atomic_thread_fence(memory_order_release);
	*seq = w;
	return ev;
}

/* Writer: claim the next slot and mark it busy.  Caller fills every field
 * but `sequence`, then calls p3_eq_ring_write_end().  `mask` is the writer's
 * own copy of count - 1, not the ring's: a ring in memory the reader can
 * write (an offloading NIC's) must not steer the writer outside it. */
static inline ptl_event_t *p3_eq_ring_write_begin(struct p3_eq_ring *r, uint32_t mask,
						  uint32_t *seq)
{
	uint32_t w = atomic_load_explicit(&r->eqr_write_seq, memory_order_relaxed);

	return p3_eq_ring_claim(p3_eq_ring_slot(r, w, mask), w, seq);
}

/* Writer whose every reader is the calling thread (the pair of
 * p3_eq_ring_write_end_alone): as p3_eq_ring_write_begin, but an event
 * written into an empty ring goes to slot 0 (eqr_base = its sequence).
 * No reader runs meanwhile, and none has an unread event whose slot the
 * move could change. */
static inline ptl_event_t *p3_eq_ring_write_begin_alone(struct p3_eq_ring *r, uint32_t mask,
							uint32_t *seq)
{
	uint32_t w = atomic_load_explicit(&r->eqr_write_seq, memory_order_relaxed);

	if (atomic_load_explicit(&r->eqr_read_seq, memory_order_relaxed) == w) {
		atomic_store_explicit(&r->eqr_base, w, memory_order_relaxed);
		return p3_eq_ring_claim(&r->eqr_slots[0], w, seq);
	}
	return p3_eq_ring_claim(p3_eq_ring_slot(r, w, mask), w, seq);
}

/* Writer: publish.  Returns nonzero if a reader is blocked and must be
 * woken (futex on eqr_write_seq, or the NAL's wakeup in app mode). */
static inline int p3_eq_ring_write_end(struct p3_eq_ring *r, ptl_event_t *ev, uint32_t w)
{
	__atomic_store_n(&ev->sequence, w, __ATOMIC_RELEASE);
	/* seq_cst pairs with the reader's increment of eqr_waiters followed by
	 * its re-check of eqr_write_seq: no lost wake-ups. */
	atomic_store_explicit(&r->eqr_write_seq, w + 1, memory_order_seq_cst);
	return atomic_load_explicit(&r->eqr_waiters, memory_order_seq_cst) != 0;
}

/* Writer whose every reader is the calling thread (the ring is in this
 * process's heap and the process has one thread: lib-eq.c): the same
 * publication without the full fence.  Program order already puts a
 * reader's eqr_waiters increment before or after this, so the fence that
 * pairs with another thread's re-check has nothing to pair with; on x86
 * it is a locked instruction on every event. */
static inline int p3_eq_ring_write_end_alone(struct p3_eq_ring *r, ptl_event_t *ev, uint32_t w)
{
	__atomic_store_n(&ev->sequence, w, __ATOMIC_RELEASE);
	atomic_store_explicit(&r->eqr_write_seq, w + 1, memory_order_release);
	return atomic_load_explicit(&r->eqr_waiters, memory_order_relaxed) != 0;
}

/* Number of events written but not yet read (0 if empty). */
static inline uint32_t p3_eq_ring_unread(struct p3_eq_ring *r)
{
	uint32_t w = atomic_load_explicit(&r->eqr_write_seq, memory_order_acquire);
	uint32_t rd = atomic_load_explicit(&r->eqr_read_seq, memory_order_acquire);

	return w - rd;
}

/* Reader: PTL_OK, PTL_EQ_DROPPED (event returned, earlier ones lost) or
 * PTL_EQ_EMPTY. Lock-free; safe against concurrent readers and the writer.
 * alone: no other thread reads this ring (the process has one thread; a
 * writer in another process never writes eqr_read_seq): the slot is taken
 * with a release store instead of a compare-and-swap, a locked
 * instruction on x86. */
static inline int p3_eq_ring_read_as(struct p3_eq_ring *r, ptl_event_t *out, int alone)
{
	for (;;) {
		uint32_t rd = atomic_load_explicit(&r->eqr_read_seq, memory_order_acquire);
		uint32_t w = atomic_load_explicit(&r->eqr_write_seq, memory_order_acquire);
		uint32_t want = rd;
		int rc = PTL_OK;

		if (w == rd)
			return PTL_EQ_EMPTY;
		if (w - rd > r->eqr_count) {
			want = w - r->eqr_count; /* oldest event still in the ring */
			rc = PTL_EQ_DROPPED;
		}
		const ptl_event_t *slot = p3_eq_ring_slot(r, want, r->eqr_mask);
		if (__atomic_load_n(&slot->sequence, __ATOMIC_ACQUIRE) != want)
			continue; /* overwritten meanwhile: re-evaluate */
		memcpy(out, slot, sizeof(*out));
		atomic_thread_fence(memory_order_acquire);
		if (__atomic_load_n(&slot->sequence, __ATOMIC_RELAXED) != want)
			continue; /* torn copy */
		if (alone)
			atomic_store_explicit(&r->eqr_read_seq, want + 1, memory_order_release);
		else if (!atomic_compare_exchange_strong_explicit(&r->eqr_read_seq, &rd, want + 1,
								  memory_order_acq_rel,
								  memory_order_acquire))
			continue; /* another reader took it */
		out->sequence = want;
		if (rc == PTL_EQ_DROPPED)
			atomic_fetch_add_explicit(&r->eqr_dropped, (uint64_t)(want - rd),
						  memory_order_relaxed);
		return rc;
	}
}

/* Reader, any number of threads. */
static inline int p3_eq_ring_read(struct p3_eq_ring *r, ptl_event_t *out)
{
	return p3_eq_ring_read_as(r, out, 0);
}

#endif
