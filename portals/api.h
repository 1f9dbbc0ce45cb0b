/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * api.h - private state of the API side: the table of open NIs and the EQ
 * rings this process may read.  Included only by api-*.c.
 *
 * The API side reaches the LIB side only through ni_if (lib_iface.h).
 *
 * Locking: p3_api_lock serialises PtlInit/PtlFini/PtlNIInit/PtlNIFini and
 * EQ allocation bookkeeping; the data path (PtlPut, PtlEQGet ...) reads the
 * NI table without it.  Closing an NI while another thread still uses it is
 * an application error (as freeing memory in use would be).
 */
#ifndef P3_API_H
#define P3_API_H

#include "config.h"

#include "p3.h"

#include <pthread.h>
#include <stdatomic.h>

#include "eq_ring.h"
#include "handle.h"
#include "lib_iface.h"
#include "nal.h"

struct p3_api_ni {
	_Atomic ptl_handle_ni_t ni_handle; /* 0 while the slot is closed */
	uint32_t ni_gen;
	int ni_refs;                       /* PtlNIInit calls not yet matched */
	const struct p3_lib_iface *ni_if;
	struct p3_lib *ni_lib;
	/* the in-process LIB's NAL progress, called without the hop through
	 * ni_if->progress (p3_lib_local_pass); NULL: through ni_if */
	int (*ni_pass)(void *priv, int timeout_ms);
	void *ni_pass_priv;
	/* the in-process LIB's event count (PtlProgressEvents); NULL: LIB is
	 * elsewhere, and ni_ev_calls stands in for it (moves on every call) */
	const _Atomic uint32_t *ni_ev_count;
	uint32_t ni_ev_calls;
	const struct p3_nal_ops *ni_nal;
	struct p3_lib_open_result ni_info;
	int ni_thread; /* progress thread: API calls do not drive the NAL */
	int ni_oversub; /* node oversubscribed (<p3rt/oversub.h>): waits yield */
	int ni_oversub_wait; /* ... and how (enum ptl_oversub_wait, P3_OVERSUB_WAIT) */
	unsigned int ni_handoff_us; /* ... the handoff's yield budget (us) */
	unsigned int ni_spin_us; /* EQ waits spin this long, then block (wait_policy) */
	int ni_spin_yield; /* ... yielding the CPU (offload: the NIC may share it) */
	_Atomic int ni_prog_busy; /* app mode: a waiter is blocked in the NAL */
	uint32_t ni_neqs;
	struct p3_eq_ring **ni_eqs; /* by EQ index; NULL = free */
};

extern struct p3_api_ni p3_api_nis[P3_MAX_NIS];
extern pthread_mutex_t p3_api_lock;
extern _Atomic int p3_api_refs;

/* Register the fork handlers (fork.c); idempotent, called by PtlInit. */
void p3_fork_init(void);

static inline int p3_api_up(void)
{
	return atomic_load_explicit(&p3_api_refs, memory_order_acquire) > 0;
}

/* The open NI an object (or NI) handle belongs to, or NULL. */
static inline struct p3_api_ni *p3_api_ni_of(ptl_handle_any_t h)
{
	struct p3_api_ni *ni = &p3_api_nis[p3_handle_ni(h)];

	if (atomic_load_explicit(&ni->ni_handle, memory_order_acquire) == 0)
		return NULL;
	return ni;
}

/* The open NI named by an NI handle, or NULL. */
static inline struct p3_api_ni *p3_api_ni_get(ptl_handle_ni_t h)
{
	struct p3_api_ni *ni;

	if (p3_handle_type(h) != P3_HT_NI)
		return NULL;
	ni = &p3_api_nis[p3_handle_ni(h)];
	if (atomic_load_explicit(&ni->ni_handle, memory_order_acquire) != h)
		return NULL;
	return ni;
}

/* Object handle of type `type` on an open NI (generation checked by LIB). */
static inline struct p3_api_ni *p3_api_obj_ni(ptl_handle_any_t h, unsigned int type)
{
	if (p3_handle_type(h) != type)
		return NULL;
	return p3_api_ni_of(h);
}

/* The ring of a live EQ handle, or NULL. */
static inline struct p3_eq_ring *p3_api_eq_ring(ptl_handle_eq_t h, struct p3_api_ni **nip)
{
	struct p3_api_ni *ni = p3_api_obj_ni(h, P3_HT_EQ);
	struct p3_eq_ring *ring;
	uint32_t idx = p3_handle_idx(h);

	if (!ni || idx >= ni->ni_neqs)
		return NULL;
	ring = __atomic_load_n(&ni->ni_eqs[idx], __ATOMIC_ACQUIRE);
	if (!ring || atomic_load_explicit(&ring->eqr_handle, memory_order_relaxed) != h)
		return NULL;
	*nip = ni;
	return ring;
}

/* Drive the NI's NAL (ni_if->progress, or the NAL itself for the
 * in-process LIB). */
static inline void p3_api_progress(struct p3_api_ni *ni, int timeout_ms)
{
	if (ni->ni_pass)
		ni->ni_pass(ni->ni_pass_priv, timeout_ms);
	else
		ni->ni_if->progress(ni->ni_lib, timeout_ms);
}

/* api-eq.c */
void p3_api_eq_table_free(struct p3_api_ni *ni);

/* api-handoff.c: an oversubscribed node's handoff (P3_OVERSUB_WAIT).  The
 * yield budget a wait starting at now_us gets: budget_us, or 0 (sleep at
 * once) while recent handoffs did not pay (a loaded machine). */
unsigned int p3_handoff_budget(unsigned int budget_us, uint64_t now_us);
enum p3_handoff_outcome {
	P3_HANDOFF_EVENT,      /* the event came while yielding */
	P3_HANDOFF_EXPIRED,    /* the budget ran out in quick yields */
	P3_HANDOFF_SLOW_YIELD, /* one yield took the whole budget: core taken */
};
/* How a handoff ended (it yielded at least once). */
void p3_handoff_result(enum p3_handoff_outcome outcome, uint64_t now_us);
/* The ranks of the job on this node (<p3rt/oversub.h>; 0: unknown): a
 * handoff backs off only while more tasks than that are runnable. */
void p3_handoff_set_local_ranks(unsigned ranks);

/* api-ni.c: close one NI completely (PtlNIFini's last reference, PtlFini). */
void p3_api_ni_close(struct p3_api_ni *ni);

/* Spin budget of EQWait/EQPoll before blocking, microseconds. */
#define P3_SPIN_US 50

/* A wait's spin budget (us) on this NI alone and whether that spin yields,
 * before oversubscription: asked anew where the NAL has a wait policy
 * (offload: it follows the placement, which a launcher or the program may
 * change after PtlNIInit).  EQWait/EQPoll and PtlNIWaitSpin share it. */
static inline unsigned int p3_api_ni_spin_budget(struct p3_api_ni *ni, int *yield)
{
	unsigned int budget = ni->ni_spin_us;

	*yield = ni->ni_spin_yield;
	if (ni->ni_if->wait_policy) {
		budget = P3_SPIN_US;
		*yield = 0;
		ni->ni_if->wait_policy(ni->ni_lib, &budget, yield);
	}
	return budget;
}

#endif
