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
 * needs no ACK and no event at all: the puts go out of a second MD over
 * the same memory, bound once with PTL_MD_EVENT_SUCCESS_DISABLE (a p3stack
 * extension), so only a failed put posts its SEND_END (an fi_inject()
 * writes no completion; with a send counter bound, the puts take the stage
 * MD, whose SEND_END counts them).  The slot stays held until the receiver
 * says it is done with it - by pulling it (a get, GET_END here) or, for the
 * common case of a message delivered whole, in a release batched with
 * others of the same sender (ptl3_release.c).  Without the per-message ACK
 * event a rank's turnaround over shmem is ~0.06 us shorter.
 *
 * Addressing: a staged send id is PTL3_SENDID_STAGE | shift << 25 | gen <<
 * 16 | slot, and the receiver's PtlGet uses it as match bits with remote
 * offset slot << shift (ptl3_sendid_offset), so the receiver needs no
 * knowledge of the sender's slot size.  A slot is freed by the first of its
 * receiver's get (same generation) or release (same peer), or by a failed
 * put; never while the receiver may still read it.
 *
 * When every slot is held (a window of injects wider than
 * FI_PTL3_STAGE_SLOTS, or receivers that have not released yet), sends take
 * the general path: nothing waits.
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
	st->quiet_md = PTL_INVALID_HANDLE;
	uint32_t n = (uint32_t)ptl3_params.stage_slots;
	if (n == 0 || ptl3_params.inject_size == 0)
		return 0; /* disabled: every send takes the general path */
	if (ep->dom->stager)
		return 0; /* PT_RDV is the domain's: one stage ME on it */
	st->shift = slot_shift_for(ptl3_params.inject_size);
	if (st->shift > PTL3_STAGE_MAX_SHIFT)
		return 0; /* slots too large to address: general path */
	size_t bytes = (size_t)n << st->shift;
	/* mmap: pages are touched only by the slots actually used */
	void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 0;
	st->slot = calloc(n, sizeof(*st->slot));
	st->free = malloc(n * sizeof(*st->free));
	if (!st->slot || !st->free)
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
	rc = PtlMDAttach(st->me, md, PTL_RETAIN, &st->md);
	if (rc != PTL_OK) {
		PTL3_WARN(FI_LOG_EP_CTRL, "PtlMDAttach(stage): %s\n", PtlErrorStr(rc));
		PtlMEUnlink(st->me);
		st->me = PTL_INVALID_HANDLE;
		goto fail;
	}
	/* the staged puts' own MD: no event unless one fails */
	md.options = PTL_MD_EVENT_SUCCESS_DISABLE | PTL_MD_EVENT_START_DISABLE;
	if (PtlMDBind(ep->dom->ni, md, PTL_RETAIN, &st->quiet_md) != PTL_OK)
		st->quiet_md = PTL_INVALID_HANDLE; /* every staged put goes out of st->md */
	st->mem = mem;
	st->bytes = bytes;
	st->nslots = n;
	for (uint32_t i = 0; i < n; i++)
		st->free[i] = n - 1 - i; /* slot 0 first: fewest pages touched */
	st->nfree = n;
	ep->dom->stager = ep;
	return 0;
fail:
	free(st->slot);
	free(st->free);
	munmap(mem, bytes);
	memset(st, 0, sizeof(*st));
	st->me = PTL_INVALID_HANDLE;
	st->quiet_md = PTL_INVALID_HANDLE;
	return 0; /* the general path still works */
}

void ptl3_stage_teardown_locked(struct ptl3_ep *ep)
{
	struct ptl3_stage *st = &ep->stage;
	if (st->quiet_md != PTL_INVALID_HANDLE)
		PtlMDUnlink(st->quiet_md);
	st->quiet_md = PTL_INVALID_HANDLE;
	if (st->me != PTL_INVALID_HANDLE)
		PtlMEUnlink(st->me);
	st->me = PTL_INVALID_HANDLE;
	if (ep->dom->stager == ep)
		ep->dom->stager = NULL;
}

void ptl3_stage_free(struct ptl3_ep *ep)
{
	struct ptl3_stage *st = &ep->stage;
	if (st->mem)
		munmap(st->mem, st->bytes);
	free(st->slot);
	free(st->free);
	memset(st, 0, sizeof(*st));
}

static void slot_free_locked(struct ptl3_stage *st, uint32_t slot)
{
	st->slot[slot].held = 0;
	st->free[st->nfree++] = slot;
}

int ptl3_stage_send_locked(struct ptl3_ep *ep, ptl_process_id_t dest, ptl_pt_index_t pt,
                           uint64_t mbits, uint64_t hdr, const void *buf, size_t len)
{
	struct ptl3_stage *st = &ep->stage;
	if (!st->nfree || len > ((size_t)1 << st->shift))
		return 0;
	uint32_t slot = st->free[--st->nfree];
	struct ptl3_stage_slot *s = &st->slot[slot];
	s->gen = (uint16_t)((s->gen + 1) & PTL3_STAGE_GEN_MASK);
	s->dest = dest;
	s->held = 1;
	uint64_t sid = PTL3_SENDID_STAGE | ((uint64_t)st->shift << PTL3_STAGE_SHIFT_POS) |
	               ((uint64_t)s->gen << PTL3_STAGE_GEN_POS) | slot;
	size_t off = (size_t)slot << st->shift;
	if (len)
		ptl3_copy(st->mem + off, buf, len);
	/* a bound send counter counts at SEND_END: then the MD with events */
	int quiet = !ep->send_cntr && st->quiet_md != PTL_INVALID_HANDLE;
	int rc = PtlPutRegion(quiet ? st->quiet_md : st->md, off, len, PTL_NOACK_REQ, dest, pt, 0,
	                      mbits, 0, hdr | sid << 32);
	if (rc != PTL_OK) {
		slot_free_locked(st, slot);
		PTL3_WARN(FI_LOG_EP_DATA, "PtlPutRegion (staged): %s\n", PtlErrorStr(rc));
		return rc == PTL_NO_SPACE ? -FI_EAGAIN : -FI_EIO;
	}
	/* a quiet put is not waited for: its slot stays held until the
	 * receiver releases or pulls it, which fi_close waits for */
	if (!quiet)
		ep->outstanding_sends++;
	ep->st.puts++;
	ep->st.staged++;
	ep->st.bytes_sent += len;
	return 1;
}

/* free the slot of a staged send id if it is still that use of the slot;
 * returns it (its dest still valid) or NULL */
static struct ptl3_stage_slot *drop_sendid_locked(struct ptl3_stage *st, uint64_t sid)
{
	uint32_t slot = (uint32_t)(sid & PTL3_STAGE_SLOT_MASK);
	uint16_t gen = (uint16_t)((sid >> PTL3_STAGE_GEN_POS) & PTL3_STAGE_GEN_MASK);
	if (!(sid & PTL3_SENDID_STAGE) || slot >= st->nslots || !st->slot[slot].held ||
	    st->slot[slot].gen != gen)
		return NULL;
	slot_free_locked(st, slot);
	return &st->slot[slot];
}

/* SEND_END of a staged put: the inject is complete (it has no completion
 * entry; a bound send counter counts it); a failed one frees its slot, as
 * nobody will pull or release it, and is reported as an error entry */
static void stage_send_end_locked(struct ptl3_ep *ep, const ptl_event_t *ev)
{
	/* the quiet MD posts a failed put's SEND_END only, and its puts were
	 * not counted outstanding */
	if (ev->md_handle != ep->stage.quiet_md)
		ep->outstanding_sends--;
	if (ev->ni_fail_type == PTL_NI_OK) {
		ptl3_cntr_inc_locked(ep->send_cntr, 0);
		return;
	}
	/* the event's initiator is us: the target is the slot's */
	const struct ptl3_stage_slot *s =
	    drop_sendid_locked(&ep->stage, ptl3_sendid_of(ev->hdr_data));
	PTL3_WARN(FI_LOG_EP_DATA, "inject to %u:%u failed: %s\n", s ? s->dest.nid : PTL_NID_ANY,
	          s ? s->dest.pid : PTL_PID_ANY, PtlNIFailStr(ep->dom->ni, ev->ni_fail_type));
	/* the target's receive portal: PT_TAG or PT_MSG of one of its endpoints */
	int tagged = (ev->pt_index - ep->pt_base) % PTL3_PT_COUNT == PTL3_PT_TAG;
	uint64_t flags = FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
	ptl3_cq_push_locked(ep->tx_cq, NULL, flags, 0, NULL, 0, 0, FI_EIO, 0);
	ptl3_cntr_inc_locked(ep->send_cntr, 1);
}

void ptl3_stage_on_event_locked(struct ptl3_ep *ep, const ptl_event_t *ev)
{
	if (ev->type == PTL_EVENT_SEND_END) {
		stage_send_end_locked(ep, ev);
	} else if (ev->type == PTL_EVENT_GET_END) {
		ep->st.get_ends++;
		drop_sendid_locked(&ep->stage, ev->match_bits);
	}
}

uint32_t ptl3_stage_release_window_locked(struct ptl3_ep *ep, ptl_process_id_t src, uint64_t base,
                                          uint64_t bits)
{
	struct ptl3_stage *st = &ep->stage;
	uint32_t bad = 0;
	for (; bits; bits &= bits - 1) {
		uint64_t slot = base + (uint64_t)__builtin_ctzll(bits);
		struct ptl3_stage_slot *s = slot < st->nslots ? &st->slot[slot] : NULL;
		if (!s || !s->held || s->dest.nid != src.nid || s->dest.pid != src.pid) {
			bad++;
			continue;
		}
		slot_free_locked(st, (uint32_t)slot);
		ep->st.slots_released++;
	}
	return bad;
}

uint32_t ptl3_stage_held(const struct ptl3_ep *ep)
{
	return ep->stage.nslots - ep->stage.nfree;
}
