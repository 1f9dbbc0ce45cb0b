/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ring.h - the lock-free single-producer single-consumer byte ring that
 * carries shmem records between two processes.
 *
 * The ring lives in shared memory (the receiver's segment): a control block
 * with head and tail on separate cache lines, followed by `size` data bytes.
 * head and tail are free-running 64-bit byte counters; a record occupies a
 * multiple of SHM_RING_ALIGN bytes and never wraps: when it does not fit
 * before the end of the data area, the producer fills the rest with a WRAP
 * record and starts over at offset 0.
 *
 * A record is published by its own stamp (r_stamp, in its first cache
 * line), stored last with release: the lap of the record's position,
 * never 0.  The consumer polls the stamp of the record it expects, so one
 * cache line brings it "published" and the record's first 64 bytes
 * together; it never reads head.  A stale stamp can only be the previous
 * lap's (every line of the ring belongs to some record in every lap), and
 * the consumer zeroes the stamp word of every line of a record but the
 * first before it frees it (payload lines could hold anything).  head is
 * still stored after the stamps, for a restarted producer; tail is how the
 * producer learns about free space, read only when its cached copy says
 * full.
 *
 * Each side keeps its own position in process memory (struct shm_ring).
 * Nothing read from shared memory is trusted: a counter or record length
 * that does not fit the ring makes the consumer report SHM_RING_CORRUPT
 * instead of reading out of bounds.
 *
 * One producer and one consumer at a time: callers that have several
 * threads serialise each side themselves (the NAL holds its peer lock on the
 * producer side and its progress lock on the consumer side).
 */
#ifndef P3_SHMEM_RING_H
#define P3_SHMEM_RING_H

#include <assert.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define SHM_CACHE_LINE 64
#define SHM_RING_ALIGN SHM_CACHE_LINE /* record granularity */

/* Control block, in shared memory.  3 cache lines, padded to 256 bytes. */
struct shm_ring_ctl {
	_Atomic uint64_t rc_head; /* producer: bytes published */
	uint8_t rc_pad0[SHM_CACHE_LINE - 8];
	_Atomic uint64_t rc_tail; /* consumer: bytes consumed */
	uint8_t rc_pad1[SHM_CACHE_LINE - 8];
	_Atomic uint32_t rc_want_space; /* producer: wake me when space frees */
	_Atomic uint32_t rc_cma;        /* consumer: SHM_CMA_* verdict */
	uint8_t rc_pad2[SHM_CACHE_LINE - 8];
	uint8_t rc_pad3[SHM_CACHE_LINE];
};
static_assert(sizeof(struct shm_ring_ctl) == 256, "ring control block layout");
static_assert(offsetof(struct shm_ring_ctl, rc_tail) == 64, "head/tail on separate lines");
static_assert(offsetof(struct shm_ring_ctl, rc_want_space) == 128, "flags on their own line");

/* Every record starts with this header (16 bytes).  r_kind 0 is the ring's
 * own WRAP filler; other kinds belong to the user of the ring. */
struct shm_rec {
	uint32_t r_len;   /* whole record, multiple of SHM_RING_ALIGN */
	uint16_t r_kind;  /* SHM_REC_WRAP or a user kind */
	uint16_t r_stamp; /* the ring's: shm_ring_stamp() once published */
	uint32_t r_aux;   /* user-defined */
	uint32_t r_aux2;
};
static_assert(sizeof(struct shm_rec) == 16, "record header layout");
static_assert(offsetof(struct shm_rec, r_stamp) == 6, "stamp offset (cleared per line)");

#define SHM_REC_WRAP 0

/* Process-local view of one side of a ring. */
struct shm_ring {
	struct shm_ring_ctl *rg_ctl;
	uint8_t *rg_data;
	uint32_t rg_size;   /* data bytes, a power of two >= 4 KiB */
	uint64_t rg_pos;    /* producer: reserved head; consumer: tail */
	uint64_t rg_cached; /* producer: last tail seen */
	uint64_t rg_pub;    /* producer: first position not stamped yet */
};

enum {
	SHM_RING_OK = 0,
	SHM_RING_EMPTY = 1,    /* peek: nothing to read */
	SHM_RING_FULL = 2,     /* reserve: no room now */
	SHM_RING_CORRUPT = -1, /* a counter or record is out of bounds */
};

/* Round a record length up to the ring granularity. */
static inline uint32_t shm_ring_reclen(uint32_t len)
{
	return (len + SHM_RING_ALIGN - 1) & ~(uint32_t)(SHM_RING_ALIGN - 1);
}

/* Ring sizes are powers of two (offsets are masked, not divided):
 * the smallest valid size >= `size`. */
uint32_t shm_ring_round_size(uint32_t size);

/* Zero a fresh control block (segment creation only). */
void shm_ring_ctl_init(struct shm_ring_ctl *ctl);

/* Attach one side.  Positions start from the shared counters, so a
 * restarted producer continues where its predecessor stopped. */
void shm_ring_attach_producer(struct shm_ring *r, struct shm_ring_ctl *ctl, uint8_t *data,
                              uint32_t size);
void shm_ring_attach_consumer(struct shm_ring *r, struct shm_ring_ctl *ctl, uint8_t *data,
                              uint32_t size);

/* Producer: reserve a record of `len` bytes (header included, rounded up
 * by the ring, at most size / 2).  On SHM_RING_OK *rec points at the record,
 * its r_len is set, and the caller fills the rest and later calls
 * shm_ring_publish() (several reservations may be published at once).
 * SHM_RING_FULL: no room; SHM_RING_CORRUPT: the consumer's tail is
 * impossible. */
int shm_ring_reserve(struct shm_ring *r, uint32_t len, struct shm_rec **rec);

/* Ask for a cache line in the writable state, without waiting for it. */
static inline void shm_prefetch_for_write(const void *p)
{
#if defined(__x86_64__) || defined(__i386__)
	/* PREFETCHW: a no-op on the few x86-64 CPUs without it */
	__asm__ __volatile__("prefetchw %0" : : "m"(*(const char *)p));
#else
	__builtin_prefetch(p, 1, 3);
#endif
}

/* The stamp of a record at free-running position `pos` of a ring of
 * `size` bytes: its lap, with the top bit set so that it is never the 0 of
 * a fresh or cleared line, and never the previous lap's. */
static inline uint16_t shm_ring_stamp(uint64_t pos, uint32_t size)
{
	return (uint16_t)((pos >> __builtin_ctz(size)) | 0x8000u);
}

/* Producer: stamp the reserved records in order (walks their lengths). */
void shm_ring_stamp_pending(struct shm_ring *r);

/* Producer: make every reserved record visible to the consumer (stamp each,
 * in order, then head).  Then claim the lines of the next record (two: a
 * small message's size): the consumer read them a lap ago and may still
 * hold them, and a store to a shared line waits for the other core to give
 * it up; the stamp, stored after the record, would wait too (x86 stores
 * drain in order), and the message with it.  Done here, that wait happens
 * between messages. */
static inline void shm_ring_publish(struct shm_ring *r)
{
	uint32_t off = (uint32_t)r->rg_pos & (r->rg_size - 1);

	if (r->rg_pub != r->rg_pos) {
		struct shm_rec *first =
		    (struct shm_rec *)(r->rg_data + ((uint32_t)r->rg_pub & (r->rg_size - 1)));
		if (r->rg_pub + first->r_len == r->rg_pos) { /* one record: the common case */
			__atomic_store_n(&first->r_stamp, shm_ring_stamp(r->rg_pub, r->rg_size),
			                 __ATOMIC_RELEASE);
			r->rg_pub = r->rg_pos;
		} else {
			shm_ring_stamp_pending(r);
		}
	}
	atomic_store_explicit(&r->rg_ctl->rc_head, r->rg_pos, memory_order_release);
	shm_prefetch_for_write(r->rg_data + off);
	if (off + SHM_CACHE_LINE < r->rg_size)
		shm_prefetch_for_write(r->rg_data + off + SHM_CACHE_LINE);
}

/* Producer: free bytes as of the last look at tail (refreshes it). */
uint64_t shm_ring_space(struct shm_ring *r);

/* Consumer: the next record (WRAP fillers skipped).  SHM_RING_OK with
 * *rec and *len (validated: aligned, inside the ring, published);
 * SHM_RING_EMPTY; SHM_RING_CORRUPT. */
int shm_ring_peek(struct shm_ring *r, const struct shm_rec **rec, uint32_t *len);

/* 1 if the record at consumer position `pos` is published (acquire: its
 * contents may be read after).  `pos` is masked into the ring and down to a
 * line: a scribbled tail cannot make this read out of bounds. */
static inline int shm_ring_stamped(const uint8_t *data, uint32_t size, uint64_t pos)
{
	uint32_t off = (uint32_t)pos & (size - 1) & ~(uint32_t)(SHM_RING_ALIGN - 1);
	const uint16_t *st = (const uint16_t *)(data + off + offsetof(struct shm_rec, r_stamp));

	return __atomic_load_n(st, __ATOMIC_ACQUIRE) == shm_ring_stamp(pos, size);
}

/* Consumer: done with the record returned by peek (len bytes); the
 * producer may overwrite it from now on.  The stamp words of its lines but
 * the first are zeroed first: next lap one of them may be where a record
 * starts, and whatever payload is there must not read as its stamp. */
static inline void shm_ring_consume(struct shm_ring *r, uint32_t len)
{
	uint8_t *rec = r->rg_data + ((uint32_t)r->rg_pos & (r->rg_size - 1));

	for (uint32_t l = SHM_RING_ALIGN; l < len; l += SHM_RING_ALIGN)
		*(uint16_t *)(rec + l + offsetof(struct shm_rec, r_stamp)) = 0;
	r->rg_pos += len;
	atomic_store_explicit(&r->rg_ctl->rc_tail, r->rg_pos, memory_order_release);
}

/* Consumer: 1 if a record is waiting (reads the expected record's line). */
static inline int shm_ring_nonempty(struct shm_ring *r)
{
	return shm_ring_stamped(r->rg_data, r->rg_size, r->rg_pos);
}

#endif /* P3_SHMEM_RING_H */
