/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * api-eq.c - event queue calls (API side).  PtlEQGet reads the ring
 * lock-free (eq_ring.h); the waits spin for P3_SPIN_US, then block:
 *   app mode    one waiting thread per NI blocks in the NAL's progress()
 *               (slices of 10 ms, doubling to 100 ms while idle); the LIB
 *               side calls the NAL's wakeup() when it posts to a ring whose
 *               eqr_waiters is set.  Other waiting
 *               threads sleep on their ring's futex (1 ms slices), which the
 *               LIB side also wakes.
 *   thread mode on a futex on the ring's eqr_write_seq, which the LIB side
 *               wakes when eqr_waiters is set
 * A wait over several EQs sleeps on all their rings at once (futex_waitv);
 * in app mode the NAL-driving thread gives every NI a pass each 1 ms.
 */
#include "api.h"

#include <p3rt/oversub.h>

#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>

void p3_api_eq_table_free(struct p3_api_ni *ni)
{
	free(ni->ni_eqs);
	ni->ni_eqs = NULL;
	ni->ni_neqs = 0;
}

int PtlEQAlloc(ptl_handle_ni_t h, ptl_size_t count, ptl_eq_handler_t handler, ptl_handle_eq_t *eq)
{
	struct p3_eq_ring *ring;
	struct p3_api_ni *ni;
	int rc;

	if (!p3_api_up())
		return PTL_NO_INIT;
	if (!(ni = p3_api_ni_get(h)))
		return PTL_NI_INVALID;
	if (!eq)
		return PTL_SEGV;
	if (count == 0)
		return PTL_EQ_INVALID; /* 3.0's PTL_INV_EQ_SIZE */
	rc = ni->ni_if->eq_alloc(ni->ni_lib, count, handler, eq, &ring);
	if (rc != PTL_OK)
		return rc;
	if (p3_handle_idx(*eq) >= ni->ni_neqs) {
		/* cannot happen: LIB allocates below max_eqs */
		ni->ni_if->eq_free(ni->ni_lib, *eq);
		return PTL_NO_SPACE;
	}
	__atomic_store_n(&ni->ni_eqs[p3_handle_idx(*eq)], ring, __ATOMIC_RELEASE);
	return PTL_OK;
}

int PtlEQFree(ptl_handle_eq_t eqh)
{
	struct p3_eq_ring *ring;
	struct p3_api_ni *ni;

	if (!p3_api_up())
		return PTL_NO_INIT;
	ring = p3_api_eq_ring(eqh, &ni);
	if (!ring)
		return PTL_EQ_INVALID;
	__atomic_store_n(&ni->ni_eqs[p3_handle_idx(eqh)], NULL, __ATOMIC_RELEASE);
	return ni->ni_if->eq_free(ni->ni_lib, eqh);
}

/* The rest of PtlEQGet and PtlEQGetNoProgress once the checks passed and
 * the queue was seen non-empty (or progress is wanted): read, and for an
 * app-mode PtlEQGet on an empty queue, give the NAL one pass first.  Out of
 * line, so that the empty check pollers run costs no register saves. */
static __attribute__((noinline)) int p3_eq_get_slow(struct p3_api_ni *ni, struct p3_eq_ring *ring,
						    ptl_event_t *ev, bool progress)
{
	if (progress && p3_eq_ring_unread(ring) == 0)
		p3_api_progress(ni, 0);
	return p3_eq_ring_read_as(ring, ev, P3_SINGLE_THREADED());
}

/* PtlEQGet and PtlEQGetNoProgress: the same checks; progress says whether
 * an empty queue gives an app-mode NAL one pass. */
static inline int p3_eq_get(ptl_handle_eq_t eqh, ptl_event_t *ev, bool progress)
{
	struct p3_eq_ring *ring;
	struct p3_api_ni *ni;

	if (P3_UNLIKELY(!p3_api_up()))
		return PTL_NO_INIT;
	ring = p3_api_eq_ring(eqh, &ni);
	if (P3_UNLIKELY(!ring))
		return PTL_EQ_INVALID;
	if (P3_UNLIKELY(!ev))
		return PTL_SEGV;
	progress = progress && !ni->ni_thread;
	/* An empty queue that gets no pass: two loads (callers poll this). */
	if (!progress && p3_eq_ring_unread(ring) == 0)
		return PTL_EQ_EMPTY;
	return p3_eq_get_slow(ni, ring, ev, progress);
}

int PtlEQGet(ptl_handle_eq_t eqh, ptl_event_t *ev)
{
	return p3_eq_get(eqh, ev, true);
}

int PtlEQGetNoProgress(ptl_handle_eq_t eqh, ptl_event_t *ev)
{
	return p3_eq_get(eqh, ev, false);
}

#define P3_POLL_MAX 64 /* EQs handled without allocation */

struct p3_poll_set {
	int n;
	struct p3_eq_ring **rings;
	struct p3_api_ni **nis;
	_Atomic uint32_t **words; /* &rings[i]->eqr_write_seq */
	uint32_t *snaps;
};

static int p3_poll_check(struct p3_poll_set *s, ptl_event_t *ev, int *which)
{
	for (int i = 0; i < s->n; i++) {
		int rc = p3_eq_ring_read_as(s->rings[i], ev, P3_SINGLE_THREADED());
		if (rc != PTL_EQ_EMPTY) {
			*which = i;
			return rc;
		}
	}
	return PTL_EQ_EMPTY;
}

/* One non-blocking NAL pass per distinct app-mode NI. */
static void p3_poll_kick(struct p3_poll_set *s)
{
	for (int i = 0; i < s->n; i++) {
		struct p3_api_ni *ni = s->nis[i];
		int seen = 0;
		if (ni->ni_thread)
			continue;
		for (int j = 0; j < i && !seen; j++)
			seen = s->nis[j] == ni;
		if (!seen) /* the NAL's pass itself for the in-process LIB (api.h) */
			p3_api_progress(ni, 0);
	}
}

static void p3_poll_waiters(struct p3_poll_set *s, int delta)
{
	for (int i = 0; i < s->n; i++)
		atomic_fetch_add_explicit(&s->rings[i]->eqr_waiters, (uint32_t)delta,
					  memory_order_seq_cst);
}

/* timeout_ms < 0: forever. */
static int p3_poll_wait(struct p3_poll_set *s, int timeout_ms, ptl_event_t *ev, int *which)
{
	uint64_t start = p3_now_us(), now;
	uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : start + (uint64_t)timeout_ms * 1000u;
	int rc;

	rc = p3_poll_check(s, ev, which);
	if (rc != PTL_EQ_EMPTY)
		return rc;
	/* Spin phase: cheap latency for the common case.  When every NI has a
	 * progress thread, the events come from those threads: yield the CPU
	 * instead of pausing, or a rank pinned to one core starves its own
	 * progress thread for the whole spin budget.
	 * On an oversubscribed node (<p3rt/oversub.h>) the peer may wait for
	 * this very core: yield, and by default (P3_OVERSUB_WAIT=handoff) only
	 * for the handoff budget (a few us: the rank sharing the core takes its
	 * turn and answers), then sleep until the event.  Yielding for long
	 * holds the core against other processes of a loaded machine (a
	 * yielder queues behind each of them); sleeping at once lets a quiet
	 * machine's core go idle, and waking an idle virtual CPU costs tens of
	 * us per message (mpi-adapter/README.md, "Oversubscription").
	 * In offload the events come from the NIC (mcpd), which may share
	 * this core: a spin that does not yield holds it off for the whole
	 * budget (one interrupt per message, +50 us each hop, was measured),
	 * and on the NIC's only core the wait does not spin (wait_policy).
	 * A pausing spin reads the clock every 16 passes only (a vDSO clock
	 * read costs as much as a pass); a yielding one every pass (the
	 * system call costs more than the read, and the handoff's budget is
	 * short). */
	int threaded = 1, yield = 0, handoff = 0;
	unsigned int spin_us = UINT_MAX; /* the least budget of the NIs */
	for (int i = 0; i < s->n; i++) {
		struct p3_api_ni *ni = s->nis[i];
		int ni_yield;
		unsigned int budget = p3_api_ni_spin_budget(ni, &ni_yield);
		threaded &= ni->ni_thread != 0;
		yield |= ni_yield;
		if (ni->ni_oversub) {
			yield = 1;
			if (ni->ni_oversub_wait == PTL_OVERSUB_WAIT_SLEEP) {
				budget = 0;
			} else if (ni->ni_oversub_wait == PTL_OVERSUB_WAIT_HANDOFF) {
				handoff = 1;
				/* its own budget, not capped by P3_SPIN_US; an
				 * offload NIC's wait_policy may cut it */
				if (!ni->ni_if->wait_policy || ni->ni_handoff_us < budget)
					budget = ni->ni_handoff_us;
			}
		}
		if (budget < spin_us)
			spin_us = budget;
	}
	yield |= threaded;
	if (handoff)
		spin_us = p3_handoff_budget(spin_us, start);
	unsigned int spins = 0;
	int slow_yield = 0;
	now = start;
	do {
		p3_poll_kick(s);
		rc = p3_poll_check(s, ev, which);
		if (rc != PTL_EQ_EMPTY)
			break;
		if (timeout_ms == 0)
			return PTL_EQ_EMPTY;
		if (spin_us == 0)
			break;
		uint64_t before = now;
		spins++;
		if (yield)
			sched_yield();
		else
			p3_cpu_relax();
		if (yield || (spins & 15u) == 0)
			now = p3_now_us();
		/* one yield took the whole handoff: the core is taken by
		 * other work (api-handoff.c) */
		slow_yield = handoff && now - before >= spin_us;
	} while (!slow_yield && now - start < spin_us && now < deadline);
	if (handoff && spins)
		p3_handoff_result(rc != PTL_EQ_EMPTY ? P3_HANDOFF_EVENT
		                  : slow_yield       ? P3_HANDOFF_SLOW_YIELD
		                                     : P3_HANDOFF_EXPIRED,
		                  now);
	if (rc != PTL_EQ_EMPTY)
		return rc;

	/* Block phase: never spin for long on a 2-core machine. */
	p3_poll_waiters(s, 1);
	/* The NAL slice below starts at 10 ms and doubles while nothing comes,
	 * up to 100 ms: every slice is a wake-up and the NAL's own spin, and
	 * 1024 idle ranks waking 100 times a second kept both cores busy
	 * (tools/scale). */
	int idle_cap = 10;
	for (;;) {
		struct p3_api_ni *ni0 = s->nis[0];
		int slice;

		/* Snapshot the futex words before the last check: an event
		 * posted after it changes a word and ends the sleep. */
		for (int i = 0; i < s->n; i++)
			s->snaps[i] = atomic_load(&s->rings[i]->eqr_write_seq);
		rc = p3_poll_check(s, ev, which);
		if (rc != PTL_EQ_EMPTY)
			break;
		now = p3_now_us();
		if (now >= deadline) {
			rc = PTL_EQ_EMPTY;
			break;
		}
		slice = deadline == UINT64_MAX ? -1
			: (deadline - now) / 1000u > INT_MAX ? INT_MAX
			: (int)((deadline - now + 999u) / 1000u);
		if (ni0->ni_thread) {
			p3_futex_waitv(s->words, s->snaps, s->n, slice);
		} else if (!atomic_exchange_explicit(&ni0->ni_prog_busy, 1, memory_order_acquire)) {
			/* This thread drives the NAL; a wake-up it misses (another
			 * thread consumed it) costs at most one 10 ms slice.  With
			 * EQs of several NIs, the others get a pass every 1 ms. */
			int multi_ni = 0, cap;
			for (int i = 1; i < s->n && !multi_ni; i++)
				multi_ni = s->nis[i] != ni0;
			cap = multi_ni ? 1 : idle_cap;
			if (multi_ni)
				p3_poll_kick(s);
			ni0->ni_if->progress(ni0->ni_lib, slice < 0 || slice > cap ? cap : slice);
			if (idle_cap < 100)
				idle_cap *= 2;
			atomic_store_explicit(&ni0->ni_prog_busy, 0, memory_order_release);
		} else {
			/* Another thread drives the NAL: sleep on our rings (the
			 * LIB side wakes them), briefly, to take over if it leaves. */
			p3_futex_waitv(s->words, s->snaps, s->n, slice < 0 || slice > 1 ? 1 : slice);
		}
	}
	p3_poll_waiters(s, -1);
	return rc;
}

int PtlEQWait(ptl_handle_eq_t eqh, ptl_event_t *ev)
{
	struct p3_eq_ring *ring;
	struct p3_api_ni *ni;
	struct p3_poll_set s;
	int which;

	if (P3_UNLIKELY(!p3_api_up()))
		return PTL_NO_INIT;
	ring = p3_api_eq_ring(eqh, &ni);
	if (P3_UNLIKELY(!ring))
		return PTL_EQ_INVALID;
	if (P3_UNLIKELY(!ev))
		return PTL_SEGV;
	_Atomic uint32_t *word = &ring->eqr_write_seq;
	uint32_t snap;
	s.n = 1;
	s.rings = &ring;
	s.nis = &ni;
	s.words = &word;
	s.snaps = &snap;
	return p3_poll_wait(&s, -1, ev, &which);
}

int PtlEQPoll(ptl_handle_eq_t *eqs, int size, ptl_time_t timeout, ptl_event_t *ev, int *which)
{
	struct p3_eq_ring *rings_local[P3_POLL_MAX], **rings = rings_local;
	struct p3_api_ni *nis_local[P3_POLL_MAX], **nis = nis_local;
	_Atomic uint32_t *words_local[P3_POLL_MAX], **words = words_local;
	uint32_t snaps_local[P3_POLL_MAX], *snaps = snaps_local;
	struct p3_poll_set s;
	int rc, w = 0;

	if (P3_UNLIKELY(!p3_api_up()))
		return PTL_NO_INIT;
	if (size <= 0)
		return PTL_EQ_INVALID;
	if (!eqs || !ev || !which)
		return PTL_SEGV;
	if (size > P3_POLL_MAX) {
		rings = malloc((size_t)size * sizeof(*rings));
		nis = malloc((size_t)size * sizeof(*nis));
		words = malloc((size_t)size * sizeof(*words));
		snaps = malloc((size_t)size * sizeof(*snaps));
		if (!rings || !nis || !words || !snaps) {
			free(rings);
			free(nis);
			free(words);
			free(snaps);
			return PTL_NO_SPACE;
		}
	}
	rc = PTL_OK;
	for (int i = 0; i < size; i++) {
		rings[i] = p3_api_eq_ring(eqs[i], &nis[i]);
		if (!rings[i]) {
			rc = PTL_EQ_INVALID;
			break;
		}
		words[i] = &rings[i]->eqr_write_seq;
	}
	if (rc == PTL_OK) {
		s.n = size;
		s.rings = rings;
		s.nis = nis;
		s.words = words;
		s.snaps = snaps;
		rc = p3_poll_wait(&s,
				  timeout == PTL_TIME_FOREVER ? -1
				  : timeout > INT_MAX	     ? INT_MAX
							     : (int)timeout,
				  ev, &w);
		if (rc != PTL_EQ_EMPTY)
			*which = w;
	}
	if (rings != rings_local) {
		free(rings);
		free(nis);
		free(words);
		free(snaps);
	}
	return rc;
}
