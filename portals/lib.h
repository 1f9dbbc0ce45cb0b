/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib.h - private state of the LIB side: portal table, ACL, ME/MD/EQ
 * objects, message objects.  Included only by lib-*.c (and progress.c).
 * The API side never sees these structures (see lib_iface.h).
 *
 * Locking: one mutex per NI, lib_lock, protects everything reachable from
 * struct p3_lib except the fields marked otherwise.  Functions that expect
 * it held end in _locked.  LIB never calls a NAL method with lib_lock held
 * (nal.h), and never calls an EQ handler with it held: handlers, futex
 * wake-ups and NAL wake-ups are collected in a struct p3_defer while locked
 * and run by p3_defer_run() after unlocking.
 */
#ifndef P3_LIB_H
#define P3_LIB_H

#include "config.h"

#include "p3.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/uio.h>

#include "eq_ring.h"
#include "handle.h"
#include "lib_iface.h"
#include "nal.h"

/* ---- generic object table: slots in lazily allocated chunks ---------- */

#define P3_CHUNK_SHIFT 6
#define P3_CHUNK_SIZE (1u << P3_CHUNK_SHIFT)

/* Common head of every ME/MD/EQ: the handle currently naming the slot
 * (0 while free) and the generation the next allocation will use. */
struct p3_obj {
	ptl_handle_any_t obj_handle;
	uint32_t obj_gen;
	uint32_t obj_idx;
	uint32_t obj_next_free; /* index + 1 of the next free slot, 0 = none */
};

struct p3_objtab {
	unsigned int ot_type; /* P3_HT_* */
	unsigned int ot_ni;
	size_t ot_size;     /* bytes per object (starts with struct p3_obj) */
	uint32_t ot_max;    /* negotiated limit */
	uint32_t ot_inuse;
	uint32_t ot_next_new; /* slots below this have been used once */
	uint32_t ot_free;     /* index + 1 of the first free slot, 0 = none */
	uint32_t ot_gen_base; /* first generation of fresh slots (varies per NI open) */
	void **ot_chunks;     /* ceil(max / CHUNK) pointers */
	/* Reservations (the offloading NIC, nal/myrinet mcpd_offload.c, hands
	 * its host handles before the objects exist, so that the host can
	 * create objects without waiting for an answer): slots held out of the
	 * free list, and the reserved handle the next p3_obj_alloc_locked must
	 * take (0: any free slot). */
	uint32_t ot_reserved;
	ptl_handle_any_t ot_want;
};

int p3_objtab_init(struct p3_objtab *t, unsigned int type, unsigned int ni, unsigned int ni_gen,
		   size_t size, uint32_t max);
void p3_objtab_fini(struct p3_objtab *t);
/* A free slot (or, with ot_want set, exactly that reserved slot), zeroed,
 * with a fresh handle; NULL when none. */
void *p3_obj_alloc_locked(struct p3_objtab *t);
void p3_obj_free_locked(struct p3_objtab *t, void *obj);
/* Take a free slot out of circulation and name the handle its object will
 * have; -1 when the table is full.  A reserved slot is not live (lookups
 * fail) and not counted in ot_inuse until an allocation with ot_want takes
 * it. */
int p3_obj_reserve_locked(struct p3_objtab *t, ptl_handle_any_t *h);
/* Give a reserved slot back (0), or -1 when h names no reserved slot. */
int p3_obj_unreserve_locked(struct p3_objtab *t, ptl_handle_any_t h);
/* Object named by handle h, or NULL if h is not a live handle of this table. */
static inline void *p3_obj_lookup_locked(const struct p3_objtab *t, ptl_handle_any_t h)
{
	uint32_t idx = p3_handle_idx(h);
	struct p3_obj *o;

	if (p3_handle_type(h) != t->ot_type || p3_handle_ni(h) != t->ot_ni ||
	    idx >= t->ot_next_new)
		return NULL;
	o = (struct p3_obj *)((char *)t->ot_chunks[idx >> P3_CHUNK_SHIFT] +
			      (idx & (P3_CHUNK_SIZE - 1)) * t->ot_size);
	return o->obj_handle == h ? o : NULL;
}
/* Iterate over live objects (NI teardown, status). */
void p3_objtab_foreach(struct p3_objtab *t, void (*fn)(void *obj, void *arg), void *arg);

/* ---- objects --------------------------------------------------------- */

struct p3_md;

struct p3_me {
	struct p3_obj me_obj;
	struct p3_me *me_next; /* match list of portal me_pt */
	struct p3_me *me_prev;
	ptl_pt_index_t me_pt;
	ptl_process_id_t me_match_id;
	ptl_match_bits_t me_mbits;
	ptl_match_bits_t me_ibits;
	ptl_unlink_t me_unlink;
	struct p3_md *me_md; /* NULL: skipped by matching */
};

struct p3_eq {
	struct p3_obj eq_obj;
	struct p3_eq_ring *eq_ring;
	uint32_t eq_mask; /* slots - 1, LIB's own copy (the ring may be shared) */
	ptl_eq_handler_t eq_handler;
	uint32_t eq_owed; /* operations started on MDs of this EQ, END not yet posted */
};

/* eq_owed as readers of the ring see it (eq_ring.h, eqr_owed): stored after
 * the END that lowered it was written, so a reader never sees neither. */
static inline void p3_eq_owed_publish(struct p3_eq *eq)
{
	if (eq)
		atomic_store_explicit(&eq->eq_ring->eqr_owed, eq->eq_owed, memory_order_release);
}

struct p3_md {
	struct p3_obj md_obj;
	struct p3_me *md_me; /* NULL for PtlMDBind */
	ptl_md_t md_user;    /* as given; md_user.threshold is live */
	struct iovec *md_iov;
	size_t md_niov;
	struct iovec md_iov1; /* md_iov for contiguous MDs */
	uint64_t md_length;   /* bytes */
	uint64_t md_local_offset;
	struct p3_eq *md_eq; /* valid only while md_eq->eq_obj.obj_handle == eq_handle */
	uint32_t md_pending; /* messages in a NAL referencing this MD */
	ptl_unlink_t md_unlink;
	uint8_t md_maxed; /* MAX_SIZE: went inactive */
	uint8_t md_armed; /* an operation made it inactive: auto-unlink allowed */
	struct p3_msg *md_acked_sends; /* puts in flight that asked for an ack */
};

static inline int p3_md_active(const struct p3_md *md)
{
	return md->md_user.threshold != 0 && !md->md_maxed;
}

/* ---- messages -------------------------------------------------------- */

enum p3_msg_state {
	P3_MS_FREE = 0,
	P3_MS_PUT_SEND,    /* initiator: put in flight -> SEND_END */
	P3_MS_GET_SEND,    /* initiator: get request in flight */
	P3_MS_GETPUT_SEND, /* initiator: getput in flight -> SEND_END on put MD */
	P3_MS_ACK_SEND,    /* target: ack in flight, nothing to post */
	P3_MS_PUT_RECV,    /* target: put data arriving -> ack, PUT_END */
	P3_MS_GET_RECV,    /* target: get matched -> send reply */
	P3_MS_GETPUT_RECV, /* target: new bytes arriving in msg_buf -> swap, reply */
	P3_MS_REPLY_SEND,  /* target: reply in flight -> GET_END / GETPUT_END */
	P3_MS_REPLY_RECV,  /* initiator: reply data arriving -> REPLY_END */
};

/* Everything an event needs besides the MD. */
struct p3_evinfo {
	ptl_process_id_t ei_initiator;
	ptl_uid_t ei_uid;
	ptl_jid_t ei_jid;
	ptl_pt_index_t ei_pt;
	ptl_match_bits_t ei_mbits;
	uint64_t ei_rlength;
	uint64_t ei_mlength;
	uint64_t ei_offset;
	ptl_hdr_data_t ei_hdr_data;
	uint32_t ei_link;
};

struct p3_msg {
	struct p3_msg *msg_next; /* free list */
	uint8_t msg_state;
	uint8_t msg_op;       /* P3_MSG_GET / P3_MSG_GETPUT for replies */
	struct p3_md *msg_md; /* MD whose pending count this message holds */
	ptl_handle_md_t msg_peer_md; /* ack/reply target MD at the initiator */
	uint64_t msg_peer_md_offset;
	struct p3_evinfo msg_ev;
	struct p3_hdr msg_hdr; /* header being sent (lives until finalize) */
	void *msg_buf;         /* getput: new bytes, then old bytes */
	struct iovec msg_buf_iov;
	/* A put that asked for an ack sits on its MD's md_acked_sends list
	 * until SEND_END; an ACK that overtakes SEND_END (a NAL may report the
	 * send's completion late) is parked here and posted right after it. */
	struct p3_msg *msg_sends_next;
	struct p3_msg *msg_sends_prev;
	uint8_t msg_on_sends;
	uint8_t msg_ack_parked;
	uint8_t msg_failed; /* a reply sent or received with P3_HDR_F_FAIL: its END fails */
	uint8_t msg_ack_fail; /* the parked ACK's ni_fail_type (P3_HDR_F_FAIL: PTL_NI_FAIL) */
	struct p3_evinfo msg_ack_ev;
};

/* ---- access control ------------------------------------------------- */

struct p3_ac {
	int ac_valid;
	ptl_process_id_t ac_id;
	ptl_uid_t ac_uid;
	ptl_jid_t ac_jid;
	ptl_pt_index_t ac_pt;
};

struct p3_portal {
	struct p3_me *pt_head;
	struct p3_me *pt_tail;
	int pt_len;
};

/* ---- deferred work (run after unlocking) ----------------------------- */

#define P3_DEFER_MAX 4
struct p3_defer {
	unsigned int df_nev;
	unsigned int df_nfutex;
	int df_nal_wake;
	struct p3_eq_ring *df_futex[P3_DEFER_MAX];
	struct {
		ptl_eq_handler_t h;
		ptl_event_t ev;
	} df_ev[P3_DEFER_MAX];
};

static inline void p3_defer_init(struct p3_defer *d)
{
	d->df_nev = 0;
	d->df_nfutex = 0;
	d->df_nal_wake = 0;
}

/* Anything collected to run after unlocking (most calls collect nothing). */
static inline int p3_defer_pending(const struct p3_defer *d)
{
	return P3_UNLIKELY(d->df_nev || d->df_nfutex || d->df_nal_wake);
}

/* ---- one NI's LIB side ---------------------------------------------- */

struct p3_lib {
	pthread_mutex_t lib_lock;
	int lib_lock_taken; /* the holder locked lib_lock (0: skipped, P3_SINGLE_THREADED) */
#ifdef P3_DEBUG
	_Atomic uintptr_t lib_lock_owner; /* P3_ASSERT_LOCKED: holder's P3_LIB_SELF, or 0 */
#endif

	/* set at open, read-only afterwards */
	const struct p3_nal_ops *lib_nal;
	void *lib_nal_priv;
	void *lib_lo_priv; /* loopback NAL for sends to ourselves */
	ptl_process_id_t lib_id;
	ptl_uid_t lib_uid;
	ptl_jid_t lib_jid;
	unsigned int lib_ni;
	unsigned int lib_ni_gen;
	ptl_ni_limits_t lib_limits;
	int lib_thread_mode;
	const char *lib_transfer_mode;
	struct p3_eq_ring *(*lib_ring_alloc)(size_t bytes);
	void (*lib_ring_free)(struct p3_eq_ring *ring, size_t bytes);
	/* LIB run for another process (the offloading NIC, nal/myrinet
	 * mcpd_offload.c): MD addresses are that process's, so LIB must not
	 * touch them itself.  Sends to oneself then go to the NAL (not lo), and
	 * the GetPut swap goes through lib_md_swap (the NIC's DMA).  Unset: this
	 * process's memory. */
	int lib_nal_self;
	int (*lib_md_swap)(struct p3_lib *lib, const struct iovec *iov, size_t niov,
			   uint64_t off, void *oldb, const void *newb, uint64_t len);

	_Atomic unsigned int lib_debug; /* PtlNIDebug mask: read without the lock */
	_Atomic int lib_stop;            /* progress thread: exit */
	int lib_thread_started;
	pthread_t lib_thread;
	/* fork(): P3_FORK_RUN, _HOLD (asked to park) or _PARKED (progress.c) */
	_Atomic uint32_t lib_fork_state;
	_Atomic int lib_closing; /* NIFini: NAL may still finalize */

	/* protected by lib_lock */
	struct p3_portal *lib_ptl; /* max_pt_index + 1 */
	struct p3_ac *lib_acl;     /* max_ac_index + 1 */
	struct p3_objtab lib_mes;
	struct p3_objtab lib_mds;
	struct p3_objtab lib_eqs;
	struct p3_msg *lib_msg_free;
	void **lib_msg_chunks;
	unsigned int lib_msg_nchunks;
	unsigned int lib_msg_chunks_cap;
	uint32_t lib_link;
	uint64_t lib_sr[PTL_SR_LAST_STD];
	uint64_t lib_eq_dropped_gone; /* EQ_DROPPED of freed EQs */
	_Atomic int lib_eq_handlers;  /* live EQs with a handler (p3_lib_runs_handlers) */
	/* events posted to any EQ of the NI, mod 2^32 (PtlProgressEvents):
	 * stored (release) after the event is published, under lib_lock */
	_Atomic uint32_t lib_ev_count;
};

/* lib-ni.c */
/* The default lib_ring_alloc: EQ rings in this process's heap (only this
 * process reads them; lib-eq.c). */
struct p3_eq_ring *p3_ring_alloc_heap(size_t bytes);
#ifdef P3_DEBUG
/* The debug build records which thread holds lib_lock, so that
 * P3_ASSERT_LOCKED is a load and a compare.  It used to be a
 * pthread_mutex_trylock: a locked instruction on the lock's cache line
 * per check, about ten per message on each side.  (tools/build makes the
 * debug build with ASan only: benchmarks measure the default build.) */
#define P3_LIB_SELF ((uintptr_t)pthread_self())
#endif
static inline void p3_lib_lock(struct p3_lib *lib)
{
	/* the holder's own record of how it took the lock: written with the
	 * mutex held, or by the only thread there is */
	if (P3_SINGLE_THREADED()) {
		lib->lib_lock_taken = 0;
	} else {
		pthread_mutex_lock(&lib->lib_lock);
		lib->lib_lock_taken = 1;
	}
#ifdef P3_DEBUG
	atomic_store_explicit(&lib->lib_lock_owner, P3_LIB_SELF, memory_order_relaxed);
#endif
}
static inline void p3_lib_unlock(struct p3_lib *lib)
{
#ifdef P3_DEBUG
	atomic_store_explicit(&lib->lib_lock_owner, 0, memory_order_relaxed);
#endif
	if (lib->lib_lock_taken)
		pthread_mutex_unlock(&lib->lib_lock);
}
#ifdef P3_DEBUG
#define P3_ASSERT_LOCKED(lib)                                                                      \
	assert(atomic_load_explicit(&(lib)->lib_lock_owner, memory_order_relaxed) == P3_LIB_SELF)
#else
#define P3_ASSERT_LOCKED(lib) ((void)(lib))
#endif

/* NAL to use for a message to `dst`: loopback for ourselves. */
static inline void p3_lib_nal_for(struct p3_lib *lib, ptl_process_id_t dst,
				  const struct p3_nal_ops **ops, void **priv)
{
	if (dst.nid == lib->lib_id.nid && dst.pid == lib->lib_id.pid && !lib->lib_nal_self) {
		*ops = &p3_nal_lo_ops;
		*priv = lib->lib_lo_priv;
	} else {
		*ops = lib->lib_nal;
		*priv = lib->lib_nal_priv;
	}
}

/* lib-msg.c */
struct p3_msg *p3_msg_alloc_locked(struct p3_lib *lib);
void p3_msg_free_locked(struct p3_lib *lib, struct p3_msg *msg);
void p3_msg_pool_fini(struct p3_lib *lib);
void p3_defer_run(struct p3_lib *lib, struct p3_defer *d);
/* Start an operation on md: pending++, EQ owes an END. */
void p3_md_op_begin_locked(struct p3_lib *lib, struct p3_md *md);
/* Finish it: post END (kind) unless disabled, pending--, auto-unlink. */
void p3_md_op_end_locked(struct p3_lib *lib, struct p3_md *md, ptl_event_kind_t kind,
			 const struct p3_evinfo *ei, ptl_ni_fail_t fail, struct p3_defer *d);
/* Take a put off its MD's list of sends awaiting SEND_END. */
void p3_md_sends_remove_locked(struct p3_md *md, struct p3_msg *msg);
/* Count one operation against the threshold (threshold 0 -> inactive, armed). */
static inline void p3_md_threshold_dec_locked(struct p3_md *md)
{
	if (md->md_user.threshold != PTL_MD_THRESH_INF && md->md_user.threshold > 0) {
		if (--md->md_user.threshold == 0)
			md->md_armed = 1;
	}
}

/* lib-eq.c */
/* The EQ an event of `kind` with status `fail` on md goes to: NULL without
 * a live EQ or when md's options disable it (inline: a disabled event, e.g.
 * every START of the MPI adapter's MDs, costs no call). */
static inline struct p3_eq *p3_eq_of_event(const struct p3_md *md, ptl_event_kind_t kind,
					   ptl_ni_fail_t fail)
{
	struct p3_eq *eq = md->md_eq;
	unsigned int opt = md->md_user.options;

	if (!eq || eq->eq_obj.obj_handle != md->md_user.eq_handle)
		return NULL; /* no EQ, or it was freed under the MD */
	/* extension: only failures (UNLINK has its own option) */
	if ((opt & PTL_MD_EVENT_SUCCESS_DISABLE) && fail == PTL_NI_OK && kind != PTL_EVENT_UNLINK)
		return NULL;
	switch (kind) {
	case PTL_EVENT_GET_START:
	case PTL_EVENT_PUT_START:
	case PTL_EVENT_GETPUT_START:
	case PTL_EVENT_REPLY_START:
	case PTL_EVENT_SEND_START:
		return (opt & PTL_MD_EVENT_START_DISABLE) ? NULL : eq;
	case PTL_EVENT_GET_END:
	case PTL_EVENT_PUT_END:
	case PTL_EVENT_GETPUT_END:
	case PTL_EVENT_REPLY_END:
	case PTL_EVENT_SEND_END:
		return (opt & PTL_MD_EVENT_END_DISABLE) ? NULL : eq;
	case PTL_EVENT_ACK:
		/* R33 rule: an ACK is suppressed only when both kinds are disabled. */
		return (opt & PTL_MD_EVENT_START_DISABLE) && (opt & PTL_MD_EVENT_END_DISABLE) ? NULL
											       : eq;
	default:
		return eq;
	}
}
/* Write an event of `kind` for md into eq (what p3_eq_of_event returned). */
void p3_eq_write_locked(struct p3_lib *lib, struct p3_eq *eq, struct p3_md *md,
			ptl_event_kind_t kind, const struct p3_evinfo *ei, ptl_ni_fail_t fail,
			struct p3_defer *d);
/* Post an event of `kind` for md (no-op without a live EQ or when disabled). */
static inline void p3_eq_post_locked(struct p3_lib *lib, struct p3_md *md, ptl_event_kind_t kind,
				     const struct p3_evinfo *ei, ptl_ni_fail_t fail,
				     struct p3_defer *d)
{
	struct p3_eq *eq = p3_eq_of_event(md, kind, fail);

	P3_ASSERT_LOCKED(lib);
	if (eq)
		p3_eq_write_locked(lib, eq, md, kind, ei, fail, d);
}
int p3_eq_is_empty_locked(struct p3_lib *lib, struct p3_eq *eq);
void p3_eq_destroy_locked(struct p3_lib *lib, struct p3_eq *eq);
int p3_lib_eq_alloc(struct p3_lib *lib, ptl_size_t count, ptl_eq_handler_t handler,
		    ptl_handle_eq_t *eq_out, struct p3_eq_ring **ring_out);
int p3_lib_eq_free(struct p3_lib *lib, ptl_handle_eq_t eqh);
uint64_t p3_eq_dropped_total_locked(struct p3_lib *lib);

/* lib-md.c */
int p3_md_validate_locked(struct p3_lib *lib, const ptl_md_t *umd, struct p3_eq **eq);
int p3_md_setup_locked(struct p3_lib *lib, struct p3_md *md, const ptl_md_t *umd,
		       struct p3_eq *eq);
struct p3_md *p3_md_create_locked(struct p3_lib *lib, const ptl_md_t *umd, ptl_unlink_t unlink,
				  int *rc);
/* The same for a umd p3_md_validate_locked accepted (eq: what it found). */
struct p3_md *p3_md_create_valid_locked(struct p3_lib *lib, const ptl_md_t *umd,
					struct p3_eq *eq, ptl_unlink_t unlink, int *rc);
/* Free md; if attached, detach it and (PTL_UNLINK ME) unlink the ME too. */
void p3_md_destroy_locked(struct p3_lib *lib, struct p3_md *md);
/* Auto-unlink: UNLINK event then free, if armed, PTL_UNLINK and idle. */
void p3_md_maybe_unlink_locked(struct p3_lib *lib, struct p3_md *md, uint32_t link,
			       struct p3_defer *d);
int p3_lib_md_attach(struct p3_lib *lib, ptl_handle_me_t meh, const ptl_md_t *umd,
		     ptl_unlink_t unlink, ptl_handle_md_t *out);
int p3_lib_md_unlink(struct p3_lib *lib, ptl_handle_md_t mdh);
int p3_lib_md_update(struct p3_lib *lib, ptl_handle_md_t mdh, ptl_md_t *old_md,
		     const ptl_md_t *new_md, ptl_handle_eq_t test_eq);
/* Copy between an MD's bytes and a flat buffer (GetPut swap). */
void p3_iov_copy_out(const struct iovec *iov, size_t niov, uint64_t off, void *dst,
		     uint64_t len);
void p3_iov_copy_in(const struct iovec *iov, size_t niov, uint64_t off, const void *src,
		    uint64_t len);

/* lib-me.c */
int p3_lib_me_insert(struct p3_lib *lib, ptl_handle_me_t base, ptl_pt_index_t pt,
		     ptl_process_id_t match_id, ptl_match_bits_t mbits, ptl_match_bits_t ibits,
		     ptl_unlink_t unlink, ptl_ins_pos_t pos, ptl_pt_index_t *pt_out,
		     ptl_handle_me_t *me_out);
int p3_me_insert_locked(struct p3_lib *lib, ptl_handle_me_t base, ptl_pt_index_t pt,
			ptl_process_id_t match_id, ptl_match_bits_t mbits,
			ptl_match_bits_t ibits, ptl_unlink_t unlink, ptl_ins_pos_t pos,
			ptl_pt_index_t *pt_out, struct p3_me **me_out);
int p3_lib_me_unlink(struct p3_lib *lib, ptl_handle_me_t meh);
int p3_lib_me_md_post(struct p3_lib *lib, ptl_handle_me_t base, ptl_process_id_t match_id,
		      ptl_match_bits_t mbits, ptl_match_bits_t ibits, ptl_unlink_t unlink,
		      ptl_ins_pos_t pos, const ptl_md_t *umd, ptl_unlink_t md_unlink,
		      ptl_handle_eq_t test_eq, ptl_handle_me_t *me_out, ptl_handle_md_t *md_out);
/* PtlMEMDPostNoWait as an offloading NIC's LIB runs it after the host went
 * on without waiting (lib-me.c): as p3_lib_me_md_post, but the EQ test is
 * whether test_eq got no event after the `seen` first ones (its read
 * sequence when the caller called: the caller may have read events since)
 * and owes none.  If it did, nothing is inserted, the refusal event
 * (PTL_EVENT_UNLINK, PTL_NI_POST_REFUSED, md_handle `named`, md `shown`;
 * the ME's portal, match bits, match_id in initiator and ignore bits in
 * hdr_data: all it takes to post it again) is written into test_eq and
 * PTL_MD_NO_UPDATE returned. */
int p3_lib_me_md_post_queued(struct p3_lib *lib, ptl_handle_me_t base, ptl_process_id_t match_id,
			     ptl_match_bits_t mbits, ptl_match_bits_t ibits, ptl_unlink_t unlink,
			     ptl_ins_pos_t pos, const ptl_md_t *umd, ptl_unlink_t md_unlink,
			     ptl_handle_eq_t test_eq, uint32_t seen, const ptl_md_t *shown,
			     ptl_handle_md_t named, ptl_handle_me_t *me_out, ptl_handle_md_t *md_out);
/* The same relative to a base ME already looked up (base != NULL). */
int p3_me_insert_base_locked(struct p3_lib *lib, struct p3_me *base, ptl_process_id_t match_id,
			     ptl_match_bits_t mbits, ptl_match_bits_t ibits, ptl_unlink_t unlink,
			     ptl_ins_pos_t pos, struct p3_me **me_out);
void p3_me_destroy_locked(struct p3_lib *lib, struct p3_me *me);

/* lib-acl.c */
void p3_acl_init(struct p3_lib *lib);
int p3_lib_ac_entry(struct p3_lib *lib, ptl_ac_index_t ac, ptl_process_id_t id, ptl_uid_t uid,
		    ptl_jid_t jid, ptl_pt_index_t pt);
/* 1 if entry ac admits the request in hdr (the caller checked ac_index
 * against the limit).  Inline: every request's arrival runs it. */
static inline int p3_acl_admits_locked(const struct p3_lib *lib, const struct p3_hdr *hdr)
{
	const struct p3_ac *e = &lib->lib_acl[hdr->ac_index];

	return e->ac_valid && (e->ac_id.nid == PTL_NID_ANY || e->ac_id.nid == hdr->src.nid) &&
	       (e->ac_id.pid == PTL_PID_ANY || e->ac_id.pid == hdr->src.pid) &&
	       (e->ac_uid == PTL_UID_ANY || e->ac_uid == hdr->src_uid) &&
	       (e->ac_jid == PTL_JID_ANY || e->ac_jid == hdr->src_jid) &&
	       (e->ac_pt == PTL_PT_INDEX_ANY || e->ac_pt == hdr->pt_index);
}

/* lib-match.c */
/* First ME on hdr's portal that matches and whose MD accepts the request;
 * on success *offset and *mlength are set. */
struct p3_me *p3_match_locked(struct p3_lib *lib, const struct p3_hdr *hdr, uint64_t *offset,
			      uint64_t *mlength);

/* lib-move.c (initiator) */
int p3_lib_put(struct p3_lib *lib, ptl_handle_md_t mdh, int whole, ptl_size_t local_offset,
	       ptl_size_t length, ptl_ack_req_t ack, ptl_process_id_t target, ptl_pt_index_t pt,
	       ptl_ac_index_t ac, ptl_match_bits_t mbits, ptl_size_t remote_offset,
	       ptl_hdr_data_t hdr_data);
int p3_lib_get(struct p3_lib *lib, ptl_handle_md_t mdh, int whole, ptl_size_t local_offset,
	       ptl_size_t length, ptl_process_id_t target, ptl_pt_index_t pt, ptl_ac_index_t ac,
	       ptl_match_bits_t mbits, ptl_size_t remote_offset);
int p3_lib_getput(struct p3_lib *lib, ptl_handle_md_t get_mdh, ptl_handle_md_t put_mdh,
		  ptl_process_id_t target, ptl_pt_index_t pt, ptl_ac_index_t ac,
		  ptl_match_bits_t mbits, ptl_size_t remote_offset, ptl_hdr_data_t hdr_data);
/* Hand msg (header already built) to the NAL for hdr.dst; fail it on error. */
void p3_lib_send(struct p3_lib *lib, struct p3_msg *msg, const struct iovec *iov, size_t niov,
		 uint64_t offset, uint64_t len);

/* log.c */
void p3_dbg(const struct p3_lib *lib, unsigned int mask, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define P3_DBG(lib, mask, ...)                                                                   \
	do {                                                                                     \
		if (atomic_load_explicit(&(lib)->lib_debug, memory_order_relaxed) & (mask))      \
			p3_dbg((lib), (mask), __VA_ARGS__);                                      \
	} while (0)

/* progress.c */
int p3_progress_thread_start(struct p3_lib *lib);
void p3_progress_thread_stop(struct p3_lib *lib);
/* fork() (portals/fork.c): park the progress thread between two progress
 * passes, where everything the NAL and LIB own is reachable from lib (none
 * of it only on that thread's stack, which is nobody's in the child), and
 * let it run on.  Waits at most about a second; a no-op without a thread
 * or from the progress thread itself. */
enum { P3_FORK_RUN = 0, P3_FORK_HOLD = 1, P3_FORK_PARKED = 2 };
void p3_progress_thread_hold(struct p3_lib *lib);
void p3_progress_thread_release(struct p3_lib *lib);

#endif
