/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_shm_ring.c - libFuzzer target for the shmem ring's record framing
 * (nal/shmem/ring.c, shm_ring_peek/consume) as a hostile producer could
 * leave it: the input gives the consumer's tail (8 bytes), the producer's
 * head as an offset from it (4 bytes, up to twice the ring: impossible
 * counters included) and the 4 KiB of ring data.  The consumer reads until
 * the ring is empty or declared corrupt.  Property: every record it returns
 * lies inside the ring, is at least a header long and carries the stamp of
 * its position (ring layout 4: records are published by their stamps, head
 * is not read by the consumer). */
#include "ring.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#define RING_BYTES 4096u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static alignas(SHM_CACHE_LINE) struct shm_ring_ctl ctl;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t tail = 0;
	uint32_t ahead = 0;
	struct shm_ring r;
	uint8_t *ring;

	if (size < 12)
		return 0;
	memcpy(&tail, data, 8);
	memcpy(&ahead, data + 8, 4);
	ahead %= 2 * RING_BYTES + 1;
	ring = aligned_alloc(SHM_CACHE_LINE, RING_BYTES); /* exact size: ASan sees overreads */
	if (!ring)
		return 0;
	memset(ring, 0, RING_BYTES);
	memcpy(ring, data + 12, size - 12 < RING_BYTES ? size - 12 : RING_BYTES);
	shm_ring_ctl_init(&ctl);
	atomic_store(&ctl.rc_tail, tail);
	atomic_store(&ctl.rc_head, tail + ahead);
	shm_ring_attach_consumer(&r, &ctl, ring, RING_BYTES);
	for (int i = 0; i < 256; i++) {
		const struct shm_rec *rec;
		uint32_t len;
		int rc = shm_ring_peek(&r, &rec, &len);

		if (rc != SHM_RING_OK)
			break;
		const uint8_t *p = (const uint8_t *)rec;
		if (p < ring || len < sizeof(*rec) || len > RING_BYTES ||
		    p + len > ring + RING_BYTES || !shm_ring_stamped(ring, RING_BYTES, r.rg_pos))
			abort();
		(void)*(volatile const uint8_t *)(p + len - 1); /* the whole record is readable */
		shm_ring_consume(&r, len);
	}
	free(ring);
	return 0;
}
