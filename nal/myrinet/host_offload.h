/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * host_offload.h - private state of the host side of PTL_PROGRESS=offload
 * (host_offload.c: the struct p3_lib_iface calls; host_offload_link.c: the
 * command queue, replies, interrupts, the NIC's health and host-side EQ
 * handlers; host_offload_md.c: MD registration runs and the MD records
 * that decide which puts and gets may be posted).
 */
#ifndef P3_HOST_OFFLOAD_H
#define P3_HOST_OFFLOAD_H

#include "cpu_share.h"
#include "myri_host.h"

#include "handle.h"
#include "lib_iface.h"

#include <stdint.h>

#define OFF_SPIN_NS      20000         /* spin for a reply before blocking */
#define OFF_FULL_WAIT_NS 2000000000ull /* command queue full this long: fail */

/* An EQ wait whose NIC runs on other cores spins this long before it
 * blocks.  Short: on the loaded 2-core machine a rank spinning on its core
 * pushed the other jobs' work onto the NIC's core, and 0-byte put latency
 * rose (0 or 20 us: 91-286 us, 50 us: 200-290 us, 250 us: 154-309 us,
 * alternated runs, load 17-20). */
#define OFF_EQ_SPIN_US 20
/* PtlMEMDPostSync watches the NIC's queue head this long before it asks */
#define OFF_SETTLE_SPIN_NS 100000ull

/* How often a host that polls or waits looks again at where it and its NIC
 * may run (cpu_share.c): a process pinned after PtlNIInit (COMB pins its
 * ranks after MPI_Init) gets the policy of its final placement. */
#define OFF_POLICY_REFRESH_NS 5000000ull

/* Registration entries an MD holds. */
struct off_run {
	uint32_t first, n;
	ptl_handle_md_t md;
};

/* An EQ: its handler runs on the host; its ring gets the NIC-death event. */
struct off_eq {
	struct p3_eq_ring *ring;
	ptl_eq_handler_t handler;
	ptl_handle_eq_t handle;
	uint32_t mask, cursor;
};

/* An MD this host created, as far as the host can know it (for posted
 * puts and gets: calls the host proves cannot fail need no answer). */
struct off_md {
	ptl_handle_md_t h; /* 0: no record */
	ptl_handle_me_t me;
	uint64_t bytes;
	int32_t threshold; /* as created (PTL_MD_THRESH_INF: never inactive by count) */
	uint32_t used;     /* threshold the host's own operations may have taken */
	uint32_t run1;     /* its registration run: index in runs[] + 1 (0: none) */
	uint8_t max_size;  /* PTL_MD_MAX_SIZE: may go inactive by a remote put */
	uint8_t unlinked;  /* its ME's unlink was posted (PtlMEUnlinkNoWait): prove nothing */
};

/* An ME this host created (for posted MD attaches and ME inserts). */
struct off_me {
	ptl_handle_me_t h; /* 0: no record */
	uint32_t pt;
	uint8_t retain;     /* PTL_RETAIN: never freed by the NIC */
	uint8_t had_md;     /* an MD was attached: the NIC may free the ME with it */
	ptl_handle_md_t md; /* the last MD the host attached (0: none) */
	uint8_t unlinked;   /* its unlink was posted: no base, no MD (record kept in
	                       pt_len until the slot is seen free) */
};

/* Handles the NIC reserved for this host (MYRI_LIB_RESERVE). */
struct off_pool {
	uint32_t h[2 * MYRI_MAX_RESERVE];
	uint32_t n;
	uint32_t dry;   /* creations left before asking again after the NIC had none */
	uint64_t ahead; /* token of the RESERVE asked ahead, not answered yet (0: none) */
};

#define OFF_POOL_ME  0
#define OFF_POOL_MD  1
#define OFF_POOL_DRY 64u

#define OFF_POSTED_TOKEN (1ull << 63)

struct myri_off {
	struct myri_host *h;
	ptl_process_id_t id;
	pthread_mutex_t rpc_lock; /* one call at a time; runs table */
	uint64_t rpc_seq;
	struct off_run *runs;
	uint32_t nruns, cap;
	struct off_md *mds; /* by MD index, limits.max_mds; under rpc_lock */
	uint32_t nmds;
	struct off_me *mes; /* by ME index, limits.max_mes; under rpc_lock */
	uint32_t nmes;
	uint32_t *pt_len; /* per portal: MEs the host created and did not see go (an upper bound) */
	ptl_ni_limits_t limits;
	struct off_pool pool[2]; /* OFF_POOL_ME, OFF_POOL_MD; under rpc_lock */
	uint64_t post_at;        /* cmdq tail after the last posted ME_MD_POST (0: none) */
	pthread_mutex_t hd_lock; /* handler table */
	struct off_eq *eqs;      /* by EQ index, limits.max_eqs */
	uint32_t neqs;
	_Atomic int nhandlers;
	_Atomic enum myri_spin spin; /* waits: from where the NIC runs (cpu_share.c) */
	_Atomic uint64_t spin_at;    /* when spin was decided (off_now_ns) */
	unsigned int spin_us;        /* MYRI_SPIN: the EQ waits' budget (P3_MYRI_SPIN_US) */
};

static inline struct myri_off *OFF(struct p3_lib *lib)
{
	return (struct myri_off *)(void *)lib;
}

/* host_offload_link.c */
/* The waits' policy: P3_MYRI_SPIN (none, yield, spin) or from affinity. */
enum myri_spin off_spin_policy(const struct myri_off *o);
/* An EQ wait's spin when the NIC runs on other cores: P3_MYRI_SPIN_US or
 * OFF_EQ_SPIN_US. */
unsigned int off_spin_budget_us(void);
/* o->spin decided again when it is older than OFF_POLICY_REFRESH_NS. */
void off_spin_refresh(struct myri_off *o, uint64_t now_ns);
uint64_t off_now_ns(void);
int off_nic_gone(struct myri_off *o);
void off_wait_interrupt(struct myri_off *o, int timeout_ms);
void off_run_handlers(struct myri_off *o);
int off_cmd_push(struct myri_off *o, const struct myri_cmd *cmd);
/* One LIB call (rpc_lock held): the PTL_* code; results in out->hdr. */
int off_rpc_locked(struct myri_off *o, uint16_t lib_op, struct myri_cmd *cmd, struct myri_evt *out);
uint64_t off_call_ahead(struct myri_off *o, uint16_t lib_op, struct myri_cmd *cmd);
int off_wait_reply(struct myri_off *o, uint64_t token, struct myri_evt *out);
void off_take_events(struct myri_off *o);
int off_rpc(struct myri_off *o, uint16_t lib_op, struct myri_cmd *cmd, struct myri_evt *out);
int off_rpc1(struct myri_off *o, uint16_t lib_op, uint64_t a0, struct myri_evt *out);
uint32_t off_rep_u32(const struct myri_evt *e, int i);

/* host_offload_md.c (rpc_lock held) */
void off_runs_drop_md(struct myri_off *o, ptl_handle_md_t md);
int off_reg_md(struct myri_off *o, const ptl_md_t *md, struct myri_cmd *cmd);
void off_reg_settle(struct myri_off *o, const struct myri_cmd *cmd, int rc, ptl_handle_md_t md);
struct off_md *off_md_rec(struct myri_off *o, ptl_handle_md_t md);
void off_md_note(struct myri_off *o, ptl_handle_md_t mdh, ptl_handle_me_t me, const ptl_md_t *md);
void off_md_forget(struct myri_off *o, ptl_handle_md_t mdh);
void off_md_forget_me(struct myri_off *o, ptl_handle_me_t me);
int off_md_can_post(struct myri_off *o, ptl_handle_md_t mdh, int whole, uint64_t off, uint64_t len);
void off_md_used(struct myri_off *o, ptl_handle_md_t mdh, uint32_t n);
void off_md_wire(const ptl_md_t *m, struct myri_md *w);

/* host_offload_post.c (rpc_lock held): which creating calls may be posted */
int off_post_init(struct myri_off *o, const int32_t limits[8]);
void off_post_fini(struct myri_off *o);
int off_pool_take(struct myri_off *o, int which, uint32_t *h);
void off_pool_put_back(struct myri_off *o, int which, uint32_t h);
void off_pool_on_reply(struct myri_off *o, const struct myri_evt *e);
int off_pool_release(struct myri_off *o);
struct off_me *off_me_rec(struct myri_off *o, ptl_handle_me_t me);
void off_me_note(struct myri_off *o, ptl_handle_me_t me, uint32_t pt, ptl_unlink_t unlink,
                 ptl_handle_md_t md);
void off_me_got_md(struct myri_off *o, ptl_handle_me_t me, ptl_handle_md_t md);
void off_me_forget(struct myri_off *o, ptl_handle_me_t me);
int off_me_can_post(struct myri_off *o, ptl_handle_me_t base, ptl_pt_index_t pt, uint32_t *pt_out);
int off_md_can_create(struct myri_off *o, ptl_handle_me_t me, const ptl_md_t *md);
/* eq is PTL_EQ_NONE or an EQ the host allocated and did not free. */
int off_eq_alive(struct myri_off *o, ptl_handle_eq_t eq);
/* The same, and *seen = how many of its events the process has read. */
int off_eq_seen(struct myri_off *o, ptl_handle_eq_t eq, uint32_t *seen);
/* 1 if the NIC must refuse a post made with seen (an unread event, an END
 * owed): asked just before the post goes. */
int off_eq_test_fails(struct myri_off *o, ptl_handle_eq_t eq, uint32_t seen);
int off_post_locked(struct myri_off *o, uint16_t lib_op, struct myri_cmd *cmd);
/* off_post_locked with more MYRI_LIB_* flags (MYRI_LIB_QUIET). */
int off_post_flags_locked(struct myri_off *o, uint16_t lib_op, struct myri_cmd *cmd,
                          uint64_t flags);

#endif
