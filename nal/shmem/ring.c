/* SPDX-License-Identifier: BSD-3-Clause */
/* ring.c - lock-free SPSC byte ring in shared memory (see ring.h). */
#include "ring.h"

#include <string.h>

uint32_t shm_ring_round_size(uint32_t size)
{
	uint32_t r = 4096;

	while (r < size && r < (1u << 30))
		r <<= 1;
	return r;
}

void shm_ring_ctl_init(struct shm_ring_ctl *ctl)
{
	memset(ctl, 0, sizeof(*ctl));
	atomic_store_explicit(&ctl->rc_head, 0, memory_order_relaxed);
	atomic_store_explicit(&ctl->rc_tail, 0, memory_order_relaxed);
	atomic_store_explicit(&ctl->rc_want_space, 0, memory_order_relaxed);
	atomic_store_explicit(&ctl->rc_cma, 0, memory_order_relaxed);
}

void shm_ring_attach_producer(struct shm_ring *r, struct shm_ring_ctl *ctl, uint8_t *data,
                              uint32_t size)
{
	r->rg_ctl = ctl;
	r->rg_data = data;
	r->rg_size = size;
	r->rg_pos = atomic_load_explicit(&ctl->rc_head, memory_order_acquire);
	r->rg_cached = atomic_load_explicit(&ctl->rc_tail, memory_order_acquire);
	/* a predecessor killed between a stamp and head left records the
	 * consumer may have read already: resume after them (at most a lap) */
	for (uint32_t n = 0; n < size / SHM_RING_ALIGN && r->rg_pos % SHM_RING_ALIGN == 0 &&
	                     shm_ring_stamped(data, size, r->rg_pos);
	     n++) {
		uint32_t off = (uint32_t)r->rg_pos & (size - 1);
		uint32_t len = ((const volatile struct shm_rec *)(data + off))->r_len;

		if (len < SHM_RING_ALIGN || len % SHM_RING_ALIGN != 0 || len > size - off)
			break;
		r->rg_pos += len;
	}
	r->rg_pub = r->rg_pos;
}

void shm_ring_attach_consumer(struct shm_ring *r, struct shm_ring_ctl *ctl, uint8_t *data,
                              uint32_t size)
{
	r->rg_ctl = ctl;
	r->rg_data = data;
	r->rg_size = size;
	r->rg_pos = atomic_load_explicit(&ctl->rc_tail, memory_order_acquire);
	r->rg_cached = r->rg_pos;
	r->rg_pub = r->rg_pos;
}

void shm_ring_stamp_pending(struct shm_ring *r)
{
	while (r->rg_pub != r->rg_pos) {
		struct shm_rec *rec =
		    (struct shm_rec *)(r->rg_data + ((uint32_t)r->rg_pub & (r->rg_size - 1)));
		uint64_t left = r->rg_pos - r->rg_pub;
		uint32_t len = rec->r_len; /* ours, unless the consumer scribbled on it */

		if (len < SHM_RING_ALIGN || len % SHM_RING_ALIGN != 0 || len > left)
			len = (uint32_t)left; /* stop here; the consumer will judge it */
		__atomic_store_n(&rec->r_stamp, shm_ring_stamp(r->rg_pub, r->rg_size),
		                 __ATOMIC_RELEASE);
		r->rg_pub += len;
	}
}

uint64_t shm_ring_space(struct shm_ring *r)
{
	uint64_t tail = atomic_load_explicit(&r->rg_ctl->rc_tail, memory_order_acquire);
	uint64_t used = r->rg_pos - tail;

	if (used > r->rg_size)
		return 0; /* impossible tail: report full, reserve says corrupt */
	r->rg_cached = tail;
	return r->rg_size - used;
}

int shm_ring_reserve(struct shm_ring *r, uint32_t len, struct shm_rec **rec)
{
	uint32_t size = r->rg_size;
	uint32_t rlen = shm_ring_reclen(len);
	uint32_t off = (uint32_t)r->rg_pos & (size - 1);
	uint32_t contig = size - off;
	uint64_t need = rlen > contig ? (uint64_t)contig + rlen : rlen;
	uint64_t used = r->rg_pos - r->rg_cached;

	if (rlen == 0 || rlen > size / 2)
		return SHM_RING_FULL; /* never fits: callers size records below */
	if (used > size || size - used < need) {
		uint64_t tail = atomic_load_explicit(&r->rg_ctl->rc_tail, memory_order_acquire);

		used = r->rg_pos - tail;
		if (used > size)
			return SHM_RING_CORRUPT;
		r->rg_cached = tail;
		if (size - used < need)
			return SHM_RING_FULL;
	}
	if (rlen > contig) {
		struct shm_rec *wrap = (struct shm_rec *)(r->rg_data + off);

		wrap->r_len = contig;
		wrap->r_kind = SHM_REC_WRAP; /* r_stamp: written by publish */
		r->rg_pos += contig;
		off = 0;
	}
	*rec = (struct shm_rec *)(r->rg_data + off);
	(*rec)->r_len = rlen;
	r->rg_pos += rlen;
	return SHM_RING_OK;
}

int shm_ring_peek(struct shm_ring *r, const struct shm_rec **rec, uint32_t *len)
{
	uint32_t size = r->rg_size;

	/* At most one WRAP filler precedes a real record. */
	for (int i = 0; i < 2; i++) {
		/* records start on SHM_RING_ALIGN boundaries: an unaligned
		 * position (a tail counter scribbled before we attached) would
		 * put the header across the end of the ring (portals/fuzz) */
		if (r->rg_pos % SHM_RING_ALIGN != 0)
			return SHM_RING_CORRUPT;
		if (!shm_ring_stamped(r->rg_data, size, r->rg_pos))
			return SHM_RING_EMPTY;
		uint32_t off = (uint32_t)r->rg_pos & (size - 1);
		const volatile struct shm_rec *v =
		    (const volatile struct shm_rec *)(r->rg_data + off);
		uint32_t rlen = v->r_len; /* read once: the producer may be hostile */
		uint16_t kind = v->r_kind;

		if (rlen < SHM_RING_ALIGN || rlen % SHM_RING_ALIGN != 0 || rlen > size - off)
			return SHM_RING_CORRUPT;
		if (kind == SHM_REC_WRAP) {
			if (rlen != size - off)
				return SHM_RING_CORRUPT;
			shm_ring_consume(r, rlen);
			continue;
		}
		*rec = (const struct shm_rec *)(r->rg_data + off);
		*len = rlen;
		return SHM_RING_OK;
	}
	return SHM_RING_CORRUPT; /* two fillers in a row */
}
