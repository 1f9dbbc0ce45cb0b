/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_stage.c - the inject staging area.
 *
 * A send the receiver may have to pull (its payload landed header-only in
 * the overflow ME, or the receive was truncated and the receiver releases
 * it) must stay reachable on PT_RDV until the receiver is done.  The general
 * send path gives every send its own ME (match bits = send id) and MD: an
 * ME attach, an MD attach and an ME unlink per message.  An FI_INJECT send
 * copies its payload anyway; copied into a slot of one region that is
 * exposed once on PT_RDV (one ME, one MANAGE_REMOTE MD for every slot), it
 * needs only an MD bound for the put (threshold 2: SEND_END and ACK, it
 * unlinks itself).  Over shmem that is ~60 cycles of a rank's turnaround.
 *
 * Addressing: a staged send id is PTL3_SENDID_STAGE | shift << 25 | slot,
 * and the receiver's PtlGet uses it as match bits with remote offset
 * slot << shift (ptl3_sendid_offset), so the receiver needs no knowledge
 * of the sender's slot size.  The slot is freed when the op is (ACK with
 * everything delivered, or ACK and the receiver's get), never before: a
 * get can never read a slot reused by a later send.
 *
 * When every slot is busy (a window of unacknowledged injects wider than
 * FI_PTL3_STAGE_SLOTS), sends take the general path: nothing waits.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ptl3.h"

static const ptl_process_id_t any_id = {PTL_NID_ANY, PTL_PID_ANY};

static unsigned slot_shift_for(size_t size)
{
	unsigned s = 6; /* at least a cache line */
	while (((size_t)1 << s) < size)
		s++;
	return s;
}

int ptl3_stage_setup_locked(struct ptl3_ep *ep)
{
	struct ptl3_stage *st = &ep->stage;
	memset(st, 0, sizeof(*st));
	st->me = PTL_INVALID_HANDLE;
	uint32_t n = (uint32_t)ptl3_params.stage_slots;
	if (n == 0 || ptl3_params.inject_size == 0)
		return 0; /* disabled: every send takes the general path */
	st->shift = slot_shift_for(ptl3_params.inject_size);
	if (st->shift > PTL3_STAGE_MAX_SHIFT)
		return 0; /* slots too large to address: general path */
	size_t bytes = (size_t)n << st->shift;
	/* mmap: pages are touched only by the slots actually used */
	void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 0;
	st->owner = calloc(n, sizeof(*st->owner));
	st->free = malloc(n * sizeof(*st->free));
	if (!st->owner || !st->free)
		goto fail;
	int rc = PtlMEAttach(ep->dom->ni, ep->pt_base + PTL3_PT_RDV, any_id, PTL3_SENDID_STAGE,
	                     PTL3_STAGE_SLOT_BITS, PTL_RETAIN, PTL_INS_BEFORE, &st->me);
	if (rc != PTL_OK) {
		PTL3_WARN(FI_LOG_EP_CTRL, "PtlMEAttach(stage): %s\n", PtlErrorStr(rc));
		goto fail;
	}
	ptl_md_t md;
	memset(&md, 0, sizeof(md));
	md.start = mem;
	md.length = bytes;
	md.threshold = PTL_MD_THRESH_INF;
	md.options =
	    PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE | PTL_MD_TRUNCATE | PTL_MD_EVENT_START_DISABLE;
	md.user_ptr = PTL3_UP_STAGE;
	md.eq_handle = ep->eq;
	ptl_handle_md_t mdh;
	rc = PtlMDAttach(st->me, md, PTL_RETAIN, &mdh);
	if (rc != PTL_OK) {
		PTL3_WARN(FI_LOG_EP_CTRL, "PtlMDAttach(stage): %s\n", PtlErrorStr(rc));
		PtlMEUnlink(st->me);
		st->me = PTL_INVALID_HANDLE;
		goto fail;
	}
	st->mem = mem;
	st->bytes = bytes;
	st->nslots = n;
	for (uint32_t i = 0; i < n; i++)
		st->free[i] = n - 1 - i; /* slot 0 first: fewest pages touched */
	st->nfree = n;
	return 0;
fail:
	free(st->owner);
	free(st->free);
	munmap(mem, bytes);
	memset(st, 0, sizeof(*st));
	st->me = PTL_INVALID_HANDLE;
	return 0; /* the general path still works */
}

void ptl3_stage_teardown_locked(struct ptl3_ep *ep)
{
	struct ptl3_stage *st = &ep->stage;
	if (st->me != PTL_INVALID_HANDLE)
		PtlMEUnlink(st->me);
	st->me = PTL_INVALID_HANDLE;
}

void ptl3_stage_free(struct ptl3_ep *ep)
{
	struct ptl3_stage *st = &ep->stage;
	if (st->mem)
		munmap(st->mem, st->bytes);
	free(st->owner);
	free(st->free);
	memset(st, 0, sizeof(*st));
}

void *ptl3_stage_take_locked(struct ptl3_ep *ep, struct ptl3_op *op, const void *buf, size_t len)
{
	struct ptl3_stage *st = &ep->stage;
	if (!st->nfree || len > ((size_t)1 << st->shift))
		return NULL;
	uint32_t slot = st->free[--st->nfree];
	st->owner[slot] = op;
	op->stage_slot1 = slot + 1;
	ep->st.staged++;
	op->send_id = PTL3_SENDID_STAGE | ((uint64_t)st->shift << PTL3_STAGE_SHIFT_POS) | slot;
	char *p = st->mem + ((size_t)slot << st->shift);
	if (len)
		memcpy(p, buf, len);
	return p;
}

void ptl3_stage_release_locked(struct ptl3_ep *ep, struct ptl3_op *op)
{
	struct ptl3_stage *st = &ep->stage;
	uint32_t slot = op->stage_slot1 - 1;
	op->stage_slot1 = 0;
	if (slot >= st->nslots || st->owner[slot] != op)
		return;
	st->owner[slot] = NULL;
	st->free[st->nfree++] = slot;
}

struct ptl3_op *ptl3_stage_owner_locked(struct ptl3_ep *ep, uint64_t match_bits)
{
	struct ptl3_stage *st = &ep->stage;
	uint32_t slot = (uint32_t)(match_bits & PTL3_STAGE_SLOT_MASK);
	if (!(match_bits & PTL3_SENDID_STAGE) || slot >= st->nslots)
		return NULL;
	return st->owner[slot];
}
