/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib_iface.h - the API/LIB boundary ("forward" in the reference
 * implementations).
 *
 * The API side (api-*.c) checks arguments, decodes handles and reads event
 * queue rings; everything that touches portal tables, MEs, MDs, EQ objects,
 * matching or messages is on the LIB side (lib-*.c) and is reached ONLY
 * through the const table below.  Every method takes plain data (handles,
 * ptl_md_t values, process ids) and returns a PTL_* code, so the table can be
 * replaced by one that marshals the call over a command ring to a LIB side
 * running in another process (an emulated offloading NIC).
 *
 * The one structure both sides share is the EQ ring (eq_ring.h), which is
 * pointer-free and allocated through lib->lib_ring_alloc so it can live in
 * shared memory.
 */
#ifndef P3_LIB_IFACE_H
#define P3_LIB_IFACE_H

#include <portals3.h>

#include "eq_ring.h"

struct p3_lib;

/* What PtlNIInit hands to the LIB side. */
struct p3_lib_open_args {
	const struct p3_nal_ops *nal;
	unsigned int ni_index;   /* API slot: goes into every handle */
	unsigned int ni_gen;     /* generation of the NI handle */
	ptl_pid_t pid;           /* requested pid or PTL_PID_ANY */
	const ptl_ni_limits_t *desired; /* NULL: maximum */
	int progress_thread;     /* PTL_PROGRESS=thread */
	unsigned int debug_mask; /* initial PtlNIDebug mask (PTL_DEBUG) */
};

/* What the LIB side reports back. */
struct p3_lib_open_result {
	ptl_process_id_t id;
	ptl_uid_t uid;
	ptl_jid_t jid;
	ptl_ni_limits_t limits;
};

struct p3_lib_iface {
	int (*open)(const struct p3_lib_open_args *args, struct p3_lib **lib,
		    struct p3_lib_open_result *res);
	void (*close)(struct p3_lib *lib);

	int (*status)(struct p3_lib *lib, ptl_sr_index_t reg, ptl_sr_value_t *value);
	int (*dist)(struct p3_lib *lib, ptl_process_id_t id, unsigned long *distance);
	unsigned int (*debug)(struct p3_lib *lib, unsigned int mask);
	int (*describe)(struct p3_lib *lib, const char **nal_name, const char **mode);
	int (*progress)(struct p3_lib *lib, int timeout_ms);
	int (*progress_thread)(struct p3_lib *lib); /* 1 if a progress thread runs */

	/* base == PTL_INVALID_HANDLE: attach at portal `pt` (pos = head/tail);
	 * pt == PTL_PT_INDEX_ANY with base invalid: MEAttachAny (*pt_out set). */
	int (*me_insert)(struct p3_lib *lib, ptl_handle_me_t base, ptl_pt_index_t pt,
			 ptl_process_id_t match_id, ptl_match_bits_t mbits,
			 ptl_match_bits_t ibits, ptl_unlink_t unlink, ptl_ins_pos_t pos,
			 ptl_pt_index_t *pt_out, ptl_handle_me_t *me_out);
	int (*me_unlink)(struct p3_lib *lib, ptl_handle_me_t me);
	/* Optional (NULL: me_unlink): PtlMEUnlinkNoWait, an unlink whose
	 * outcome the caller ignores; may return before LIB ran it. */
	int (*me_unlink_nowait)(struct p3_lib *lib, ptl_handle_me_t me);
	/* Atomic ME + MD insert, only if test_eq is empty (PtlMEMDPost). */
	int (*me_md_post)(struct p3_lib *lib, ptl_handle_me_t base, ptl_process_id_t match_id,
			  ptl_match_bits_t mbits, ptl_match_bits_t ibits, ptl_unlink_t unlink,
			  ptl_ins_pos_t pos, const ptl_md_t *md, ptl_unlink_t md_unlink,
			  ptl_handle_eq_t test_eq, ptl_handle_me_t *me_out,
			  ptl_handle_md_t *md_out);
	/* Optional (NULL: me_md_post): PtlMEMDPostNoWait, which may queue the
	 * post and report a refusal later as an event in test_eq. */
	int (*me_md_post_nowait)(struct p3_lib *lib, ptl_handle_me_t base,
				 ptl_process_id_t match_id, ptl_match_bits_t mbits,
				 ptl_match_bits_t ibits, ptl_unlink_t unlink, ptl_ins_pos_t pos,
				 const ptl_md_t *md, ptl_unlink_t md_unlink, ptl_handle_eq_t test_eq,
				 ptl_handle_me_t *me_out, ptl_handle_md_t *md_out);
	/* Optional (NULL: nothing queued): PtlMEMDPostSync, return once every
	 * queued me_md_post_nowait has run. */
	int (*me_md_post_sync)(struct p3_lib *lib);

	/* me == PTL_INVALID_HANDLE: PtlMDBind (free-floating MD). */
	int (*md_attach)(struct p3_lib *lib, ptl_handle_me_t me, const ptl_md_t *md,
			 ptl_unlink_t unlink, ptl_handle_md_t *md_out);
	int (*md_unlink)(struct p3_lib *lib, ptl_handle_md_t md);
	int (*md_update)(struct p3_lib *lib, ptl_handle_md_t md, ptl_md_t *old_md,
			 const ptl_md_t *new_md, ptl_handle_eq_t test_eq);

	int (*eq_alloc)(struct p3_lib *lib, ptl_size_t count, ptl_eq_handler_t handler,
			ptl_handle_eq_t *eq_out, struct p3_eq_ring **ring_out);
	int (*eq_free)(struct p3_lib *lib, ptl_handle_eq_t eq);

	int (*ac_entry)(struct p3_lib *lib, ptl_ac_index_t ac, ptl_process_id_t match_id,
			ptl_uid_t uid, ptl_jid_t jid, ptl_pt_index_t pt);

	/* whole != 0: the whole MD (local_offset/length ignored). */
	int (*put)(struct p3_lib *lib, ptl_handle_md_t md, int whole, ptl_size_t local_offset,
		   ptl_size_t length, ptl_ack_req_t ack, ptl_process_id_t target,
		   ptl_pt_index_t pt, ptl_ac_index_t ac, ptl_match_bits_t mbits,
		   ptl_size_t remote_offset, ptl_hdr_data_t hdr_data);
	int (*get)(struct p3_lib *lib, ptl_handle_md_t md, int whole, ptl_size_t local_offset,
		   ptl_size_t length, ptl_process_id_t target, ptl_pt_index_t pt,
		   ptl_ac_index_t ac, ptl_match_bits_t mbits, ptl_size_t remote_offset);
	int (*getput)(struct p3_lib *lib, ptl_handle_md_t get_md, ptl_handle_md_t put_md,
		      ptl_process_id_t target, ptl_pt_index_t pt, ptl_ac_index_t ac,
		      ptl_match_bits_t mbits, ptl_size_t remote_offset, ptl_hdr_data_t hdr_data);

	/* PTL_OK if h names a live object of this NI, else PTL_HANDLE_INVALID. */
	int (*handle_check)(struct p3_lib *lib, ptl_handle_any_t h);

	/* Wake a thread blocked in progress() (EQ waits in app mode). */
	void (*wakeup)(struct p3_lib *lib);

	/* Optional (NULL: spin P3_SPIN_US, not yielding): how EQ waits spin
	 * before they block -- the budget in us (*spin_us holds the default)
	 * and whether the spin yields the CPU.  Offload sets it from where the
	 * NIC runs: on the waiter's only core a spin would hold the NIC off. */
	void (*wait_policy)(struct p3_lib *lib, unsigned int *spin_us, int *yield);

	/* Optional (NULL: nothing to do): around fork() (portals/fork.c),
	 * with the API lock held.  fork_hold pauses the LIB side's own threads
	 * where all its state is reachable from lib; fork_release (in the
	 * parent) lets them run on. */
	void (*fork_hold)(struct p3_lib *lib);
	void (*fork_release)(struct p3_lib *lib);
};

/* The in-process LIB side (lib-ni.c). */
extern const struct p3_lib_iface p3_lib_local_iface;

/* For p3_lib_local_iface only: its progress() is the NAL's progress on the
 * NAL's state, which the API side may then call directly (one hop less on
 * every poll and every data-movement call in app mode). */
void p3_lib_local_pass(struct p3_lib *lib, int (**pass)(void *priv, int timeout_ms),
		       void **priv);
/* For p3_lib_local_iface only: the count of events LIB posted to the NI's
 * EQs (PtlProgressEvents reads it without a call through the table). */
const _Atomic uint32_t *p3_lib_local_ev_count(const struct p3_lib *lib);

/* PTL_PROGRESS=offload: LIB in the emulated NIC, every call forwarded over
 * its command queue (nal/myrinet/host_offload.c); NULL-weak when the
 * myrinet NAL is not built. */
extern const struct p3_lib_iface p3_myri_offload_iface __attribute__((weak));

#endif
