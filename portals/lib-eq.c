/* SPDX-License-Identifier: BSD-3-Clause */
/* lib-eq.c - LIB side of event queues: allocation and event posting. */
#include "lib.h"

#include <stdlib.h>
#include <string.h>

void p3_eq_write_locked(struct p3_lib *lib, struct p3_eq *eq, struct p3_md *md,
			ptl_event_kind_t kind, const struct p3_evinfo *ei, ptl_ni_fail_t fail,
			struct p3_defer *d)
{
	ptl_event_t *ev;
	uint32_t seq;
	int alone;

	P3_ASSERT_LOCKED(lib);
	/* Every reader is this thread when the ring is in our heap (not an
	 * offloading NIC's arena) and the process has one thread: no fence,
	 * and an event into an empty ring goes to slot 0 (eq_ring.h). */
	alone = lib->lib_ring_alloc == p3_ring_alloc_heap && P3_SINGLE_THREADED();
	ev = alone ? p3_eq_ring_write_begin_alone(eq->eq_ring, eq->eq_mask, &seq)
		   : p3_eq_ring_write_begin(eq->eq_ring, eq->eq_mask, &seq);
	ev->type = kind;
	ev->initiator = ei->ei_initiator;
	ev->uid = ei->ei_uid;
	ev->jid = ei->ei_jid;
	ev->pt_index = ei->ei_pt;
	ev->match_bits = ei->ei_mbits;
	ev->rlength = ei->ei_rlength;
	ev->mlength = ei->ei_mlength;
	ev->offset = ei->ei_offset;
	ev->md_handle = md->md_obj.obj_handle;
	ev->md = md->md_user;
	ev->hdr_data = ei->ei_hdr_data;
	ev->link = ei->ei_link;
	ev->ni_fail_type = fail;
	if (alone ? p3_eq_ring_write_end_alone(eq->eq_ring, ev, seq)
		  : p3_eq_ring_write_end(eq->eq_ring, ev, seq)) {
		if (d->df_nfutex < P3_DEFER_MAX)
			d->df_futex[d->df_nfutex++] = eq->eq_ring;
		if (!lib->lib_thread_mode)
			d->df_nal_wake = 1; /* a waiter may be blocked in progress() */
	}
	/* after the event (PtlProgressEvents: a reader that sees the count
	 * finds the event); writers are serialised by lib_lock: no RMW */
	atomic_store_explicit(&lib->lib_ev_count,
			      atomic_load_explicit(&lib->lib_ev_count, memory_order_relaxed) + 1,
			      memory_order_release);
	if (eq->eq_handler && d->df_nev < P3_DEFER_MAX) {
		d->df_ev[d->df_nev].h = eq->eq_handler;
		memcpy(&d->df_ev[d->df_nev].ev, ev, sizeof(*ev));
		d->df_ev[d->df_nev].ev.sequence = seq;
		d->df_nev++;
	}
	P3_DBG(lib, PTL_DBG_DELIVERY, "event %s md %#x seq %u link %u mlength %llu fail %u",
	       PtlEventKindStr(kind), (unsigned)ev->md_handle, (unsigned)seq,
	       (unsigned)ei->ei_link, (unsigned long long)ei->ei_mlength, (unsigned)fail);
}

int p3_eq_is_empty_locked(struct p3_lib *lib, struct p3_eq *eq)
{
	P3_ASSERT_LOCKED(lib);
	return eq->eq_owed == 0 && p3_eq_ring_unread(eq->eq_ring) == 0;
}

uint64_t p3_eq_dropped_total_locked(struct p3_lib *lib)
{
	uint64_t total = lib->lib_eq_dropped_gone;

	for (uint32_t i = 0; i < lib->lib_eqs.ot_next_new; i++) {
		struct p3_eq *eq = (struct p3_eq *)((char *)lib->lib_eqs
							    .ot_chunks[i >> P3_CHUNK_SHIFT] +
						    (i & (P3_CHUNK_SIZE - 1)) * sizeof(*eq));
		if (eq->eq_obj.obj_handle)
			total += atomic_load(&eq->eq_ring->eqr_dropped);
	}
	return total;
}

void p3_eq_destroy_locked(struct p3_lib *lib, struct p3_eq *eq)
{
	struct p3_eq_ring *ring = eq->eq_ring;

	lib->lib_eq_dropped_gone += atomic_load(&ring->eqr_dropped);
	if (eq->eq_handler)
		atomic_fetch_sub_explicit(&lib->lib_eq_handlers, 1, memory_order_relaxed);
	atomic_store(&ring->eqr_handle, 0);
	lib->lib_ring_free(ring, p3_eq_ring_bytes(eq->eq_mask + 1));
	eq->eq_ring = NULL;
	p3_obj_free_locked(&lib->lib_eqs, eq);
}

int p3_lib_eq_alloc(struct p3_lib *lib, ptl_size_t count, ptl_eq_handler_t handler,
		    ptl_handle_eq_t *eq_out, struct p3_eq_ring **ring_out)
{
	struct p3_eq_ring *ring;
	struct p3_eq *eq;
	uint32_t n = 1;

	/* Round up to a power of two; 0 is treated as 1. */
	if (count > (1u << 24))
		return PTL_NO_SPACE;
	while (n < count)
		n <<= 1;
	ring = lib->lib_ring_alloc(p3_eq_ring_bytes(n));
	if (!ring)
		return PTL_NO_SPACE;
	p3_lib_lock(lib);
	eq = p3_obj_alloc_locked(&lib->lib_eqs);
	if (!eq) {
		p3_lib_unlock(lib);
		lib->lib_ring_free(ring, p3_eq_ring_bytes(n));
		return PTL_NO_SPACE;
	}
	p3_eq_ring_init(ring, n, eq->eq_obj.obj_handle);
	eq->eq_ring = ring;
	eq->eq_mask = n - 1;
	eq->eq_handler = handler;
	if (handler)
		atomic_fetch_add_explicit(&lib->lib_eq_handlers, 1, memory_order_relaxed);
	eq->eq_owed = 0;
	*eq_out = eq->eq_obj.obj_handle;
	*ring_out = ring;
	P3_DBG(lib, PTL_DBG_EQ, "EQ %#x allocated, %u slots", (unsigned)*eq_out, (unsigned)n);
	p3_lib_unlock(lib);
	return PTL_OK;
}

int p3_lib_eq_free(struct p3_lib *lib, ptl_handle_eq_t eqh)
{
	struct p3_eq *eq;

	p3_lib_lock(lib);
	eq = p3_obj_lookup_locked(&lib->lib_eqs, eqh);
	if (!eq) {
		p3_lib_unlock(lib);
		return PTL_EQ_INVALID;
	}
	/* MDs still naming this EQ post nothing from now on: their eq_handle
	 * no longer matches the slot (generations). */
	p3_eq_destroy_locked(lib, eq);
	P3_DBG(lib, PTL_DBG_EQ, "EQ %#x freed", (unsigned)eqh);
	p3_lib_unlock(lib);
	return PTL_OK;
}

int p3_lib_runs_handlers(const struct p3_lib *lib)
{
	return atomic_load_explicit(&lib->lib_eq_handlers, memory_order_relaxed) != 0;
}
