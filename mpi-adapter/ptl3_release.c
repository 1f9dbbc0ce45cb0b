/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_release.c - the receiver tells a sender which of its stage slots it
 * is done with, many at a time.
 *
 * A staged inject (ptl3_stage.c) goes out without an ACK: the sender's slot
 * stays held until the receiver pulls it (a get) or releases it here.  The
 * receiver collects, per sender, the slots of messages it has whole (in a
 * posted buffer or an unexpected buffer) or will never pull (truncated,
 * discarded) as bits of a 64-slot window, and sends them back in one
 * zero-length put whose match bits name the window and whose header data
 * carries the bits: no payload, no buffer to manage at the sender, which
 * only sees a PUT_END on a zero-length MD.
 *
 * A message's arrival only notes its slot (PTL3_RELEASE_DEFER of them); the
 * next empty completion-queue poll puts them into their batches.
 * A batch that holds PTL3_RELEASE_BATCH slots goes out at the receiver's
 * next completion-queue poll that finds nothing (ptl3_cq.c), not at once:
 * sent from the completion of the message that filled it, the release put
 * came before that completion (and the sender parsed it before the reply
 * that followed), on both ranks' message path.  A batch also goes out at
 * once when it holds PTL3_RELEASE_MAX slots (a receiver whose polls always
 * find something), when a slot of another window arrives, when the
 * completion queue has been polled empty a while, and when the endpoint
 * closes.  A sender whose slots are all held does not wait: its injects
 * take the general path (with ACKs) until releases come back.
 *
 * The sender frees only slots that are held for the releasing peer; any
 * other bit is counted (releases_bad) and ignored.
 */
#include "config.h"

#include <string.h>

#include "ptl3.h"

/* slots per release put in steady traffic: one release per 16 messages
 * costs ~1/16 of the ACK events it replaces, and leaves a sender at most
 * ~16 slots held per peer that keeps sending */
#define PTL3_RELEASE_BATCH 16
#define PTL3_RELEASE_MAX   32
#define PTL3_RELEASE_PROBE 8

static const ptl_process_id_t any_id = {PTL_NID_ANY, PTL_PID_ANY};

int ptl3_release_setup_locked(struct ptl3_ep *ep)
{
	struct ptl3_release *r = &ep->rel;
	memset(r, 0, sizeof(*r));
	r->me = PTL_INVALID_HANDLE;
	r->md = PTL_INVALID_HANDLE;
	ptl_md_t md;
	memset(&md, 0, sizeof(md));
	md.start = &ptl3_zero_byte;
	md.length = 0;
	md.threshold = PTL_MD_THRESH_INF;
	md.options = PTL_MD_OP_PUT | PTL_MD_TRUNCATE | PTL_MD_EVENT_START_DISABLE;
	md.user_ptr = PTL3_UP_RELEASE;
	md.eq_handle = ep->eq;
	int rc = PTL_OK;
	/* releases name stage slots: the ME that takes them belongs to the
	 * domain's one staging endpoint (PT_RDV is shared) */
	if (ep->dom->stager == ep) {
		rc =
		    PtlMEAttach(ep->dom->ni, ep->pt_base + PTL3_PT_RDV, any_id, PTL3_SENDID_RELEASE,
		                PTL3_RELEASE_BASE_MASK, PTL_RETAIN, PTL_INS_BEFORE, &r->me);
		if (rc != PTL_OK)
			goto fail;
		ptl_handle_md_t mdh;
		rc = PtlMDAttach(r->me, md, PTL_RETAIN, &mdh);
		if (rc != PTL_OK)
			goto fail;
	}
	/* the receiving side's zero-length source, no events */
	md.options = 0;
	md.user_ptr = NULL;
	md.eq_handle = PTL_EQ_NONE;
	rc = PtlMDBind(ep->dom->ni, md, PTL_RETAIN, &r->md);
	if (rc != PTL_OK)
		goto fail;
	r->ready = 1;
	return 0;
fail:
	/* staging still works: our peers' slots come back through gets only
	 * when they are pulled, the rest stay held and their injects take the
	 * general path */
	PTL3_WARN(FI_LOG_EP_CTRL, "release protocol off: %s\n", PtlErrorStr(rc));
	ptl3_release_teardown_locked(ep);
	return 0;
}

void ptl3_release_teardown_locked(struct ptl3_ep *ep)
{
	struct ptl3_release *r = &ep->rel;
	if (r->me != PTL_INVALID_HANDLE)
		PtlMEUnlink(r->me);
	if (r->md != PTL_INVALID_HANDLE)
		PtlMDUnlink(r->md);
	r->me = PTL_INVALID_HANDLE;
	r->md = PTL_INVALID_HANDLE;
	r->ready = 0;
}

static void batch_send_locked(struct ptl3_ep *ep, struct ptl3_release_batch *b)
{
	int rc = PtlPut(ep->rel.md, PTL_NOACK_REQ, b->src, ep->pt_base + PTL3_PT_RDV, 0,
	                PTL3_SENDID_RELEASE | b->base, 0, b->bits);
	if (rc == PTL_OK)
		ep->st.releases_sent++;
	else /* the sender's slots stay held; its injects take the general path */
		PTL3_WARN(FI_LOG_EP_DATA, "release to %u:%u: PtlPut: %s\n", b->src.nid, b->src.pid,
		          PtlErrorStr(rc));
	b->count = 0;
	b->bits = 0;
	ep->rel.npending--;
}

static uint32_t src_hash(ptl_process_id_t src)
{
	uint64_t k = ((uint64_t)src.nid << 32 | src.pid) * 0x9E3779B97F4A7C15ULL;
	return (uint32_t)(k >> 32) % PTL3_RELEASE_WAYS;
}

/* the batch of src: its own, a free one, or one evicted (sent) for it;
 * looked for among PTL3_RELEASE_PROBE places from src's hash */
static struct ptl3_release_batch *batch_of_locked(struct ptl3_ep *ep, ptl_process_id_t src)
{
	struct ptl3_release *r = &ep->rel;
	uint32_t h = src_hash(src);
	for (uint32_t i = 0; i < PTL3_RELEASE_PROBE; i++) {
		struct ptl3_release_batch *b = &r->batch[(h + i) % PTL3_RELEASE_WAYS];
		if (b->used && b->src.nid == src.nid && b->src.pid == src.pid)
			return b;
		if (!b->used) {
			b->used = 1;
			b->src = src;
			return b;
		}
	}
	struct ptl3_release_batch *b = &r->batch[h];
	if (b->count)
		batch_send_locked(ep, b);
	b->src = src;
	return b;
}

static void release_slot_locked(struct ptl3_ep *ep, ptl_process_id_t src, uint32_t slot)
{
	struct ptl3_release_batch *b = batch_of_locked(ep, src);
	uint32_t base = slot & ~(uint32_t)(PTL3_RELEASE_WINDOW - 1);
	if (b->count && b->base != base)
		batch_send_locked(ep, b);
	if (!b->count) {
		b->base = base;
		ep->rel.npending++;
	}
	uint64_t bit = 1ULL << (slot - base);
	if (!(b->bits & bit)) {
		b->bits |= bit;
		b->count++;
	}
	if (b->count >= PTL3_RELEASE_MAX)
		batch_send_locked(ep, b);
	else if (b->count >= PTL3_RELEASE_BATCH)
		ep->rel.due = 1;
}

/* the slots noted by ptl3_sender_done_locked, into their batches */
static void collect_deferred_locked(struct ptl3_ep *ep)
{
	struct ptl3_release *r = &ep->rel;
	for (uint32_t i = 0; i < r->ndeferred; i++)
		release_slot_locked(ep, r->deferred[i].src, r->deferred[i].slot);
	r->ndeferred = 0;
}

/* On a message's path (its arrival) only note the slot: finding the
 * sender's batch and window was ~70 instructions between the message's
 * arrival and MPI seeing it.  The batching happens at the next empty CQ
 * poll, where a batch that filled would only have gone out anyway. */
void ptl3_sender_done_locked(struct ptl3_ep *ep, ptl_process_id_t src, uint64_t hdr,
                             int delivered_whole)
{
	uint64_t sid = ptl3_sendid_of(hdr);
	if (!ptl3_sendid_is_staged(sid)) {
		if (!delivered_whole)
			ptl3_release_general_locked(ep, src, hdr);
		return; /* else its ACK completed it */
	}
	struct ptl3_release *r = &ep->rel;
	if (!r->ready)
		return;
	if (r->ndeferred == PTL3_RELEASE_DEFER) /* a receiver that never polls empty */
		collect_deferred_locked(ep);
	r->deferred[r->ndeferred].src = src;
	r->deferred[r->ndeferred].slot = (uint32_t)(sid & PTL3_STAGE_SLOT_MASK);
	r->ndeferred++;
}

void ptl3_release_idle_locked(struct ptl3_ep *ep, unsigned empty_polls)
{
	struct ptl3_release *r = &ep->rel;
	if (r->ndeferred)
		collect_deferred_locked(ep);
	if (r->npending && (r->due || (empty_polls & (PTL3_RELEASE_IDLE_POLLS - 1)) == 0))
		ptl3_release_flush_locked(ep);
}

void ptl3_release_flush_locked(struct ptl3_ep *ep)
{
	struct ptl3_release *r = &ep->rel;
	collect_deferred_locked(ep);
	r->due = 0;
	for (uint32_t i = 0; i < PTL3_RELEASE_WAYS && r->npending; i++)
		if (r->batch[i].count)
			batch_send_locked(ep, &r->batch[i]);
}

void ptl3_release_on_put_locked(struct ptl3_ep *ep, const ptl_event_t *ev)
{
	if (ev->type != PTL_EVENT_PUT_END || ev->ni_fail_type != PTL_NI_OK)
		return;
	ep->st.releases_recv++;
	uint64_t base = ev->match_bits & PTL3_RELEASE_BASE_MASK;
	if (base % PTL3_RELEASE_WINDOW) {
		ep->st.releases_bad++;
		return;
	}
	ep->st.releases_bad +=
	    ptl3_stage_release_window_locked(ep, ev->initiator, base, ev->hdr_data);
}
