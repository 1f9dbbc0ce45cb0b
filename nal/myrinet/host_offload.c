/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * host_offload.c - PTL_PROGRESS=offload on the host: the API side's
 * struct p3_lib_iface forwarded to the NIC.  Each call is one MYRI_CMD_LIB
 * command answered by a MYRI_EVT_LIB_REPLY (mcpd_offload.c runs LIB there);
 * EQ rings live in the segment's arena, so PtlEQGet/PtlEQWait read them with
 * no round trip, and a waiter blocks on the interrupt eventfd, which the NIC
 * raises when it posts to a ring whose reader said it will block.
 *
 * MD memory is registered before the call that creates the MD (the
 * command's run, myri_dev.h); the run stays registered while the MD lives.
 * The host learns an MD died by unlinking it itself, or, when it runs out
 * of registration entries, by asking the NIC about each MD it still holds
 * entries for (LIB_HANDLE_CHECK).
 *
 * EQ handlers are host code the NIC cannot call: they run here, once per
 * event, when the process next enters the library (progress, a wait, any
 * forwarded call).
 */
#include "host_offload.h"

#include "runtime.h"

#include <sched.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- struct p3_lib_iface ------------------------------------------------------- */

static int off_open(const struct p3_lib_open_args *args, struct p3_lib **libp,
                    struct p3_lib_open_result *res)
{
	const struct p3_runtime *rt = p3_runtime_get();
	struct p3_nal_init_args nargs = {.iface = args->nal->iface,
	                                 .requested_pid = args->pid,
	                                 .jid = rt->jid,
	                                 .rank = rt->rank,
	                                 .nranks = rt->nranks,
	                                 .nidmap = rt->nidmap,
	                                 .pidmap = rt->pidmap};
	struct myri_off *o = calloc(1, sizeof(*o));
	if (!o || !(o->h = myri_host_new(NULL))) {
		free(o);
		return PTL_NO_SPACE;
	}
	pthread_mutex_init(&o->rpc_lock, NULL);
	pthread_mutex_init(&o->hd_lock, NULL);
	uint32_t nid, pid;
	int rc = myri_host_addr(NULL, &nargs, &nid, &pid);
	if (rc == 0)
		rc = myri_host_attach(o->h, nid, pid);
	if (rc) {
		myri_host_free(o->h);
		free(o);
		return rc == -EADDRINUSE || rc == -EINVAL ? PTL_PID_INVALID : PTL_FAIL;
	}
	o->spin = off_spin_policy(o);
	o->spin_at = off_now_ns();
	o->spin_us = off_spin_budget_us();
	struct myri_cmd cmd;
	struct myri_evt e = {0};
	struct myri_lib_open a = {.ni_index = args->ni_index,
	                          .ni_gen = args->ni_gen,
	                          .debug_mask = args->debug_mask,
	                          .jid = rt->jid};
	if (args->desired)
		memcpy(a.desired, args->desired, sizeof(a.desired));
	memset(&cmd, 0, sizeof(cmd));
	memcpy(cmd.hdr, &a, sizeof(a));
	rc = off_rpc(o, MYRI_LIB_OPEN, &cmd, &e);
	struct myri_lib_open_rep rep;
	memcpy(&rep, e.hdr, sizeof(rep));
	if (rc == PTL_OK && (!(o->eqs = calloc((size_t)rep.limits[2] + 1, sizeof(*o->eqs))) ||
	                     !(o->mds = calloc((size_t)rep.limits[1] + 1, sizeof(*o->mds))) ||
	                     off_post_init(o, rep.limits) != 0))
		rc = PTL_NO_SPACE;
	if (rc != PTL_OK) {
		myri_host_free(o->h);
		free(o->eqs);
		free(o->mds);
		off_post_fini(o);
		free(o);
		return rc;
	}
	o->neqs = (uint32_t)rep.limits[2];
	o->nmds = (uint32_t)rep.limits[1];
	o->id.nid = rep.nid;
	o->id.pid = rep.pid;
	res->id = o->id;
	res->uid = rep.uid;
	res->jid = rep.jid;
	memcpy(&res->limits, rep.limits, sizeof(rep.limits));
	*libp = (struct p3_lib *)(void *)o;
	return PTL_OK;
}

static void off_close(struct p3_lib *lib)
{
	struct myri_off *o = OFF(lib);
	off_rpc1(o, MYRI_LIB_CLOSE, 0, NULL);
	myri_host_free(o->h); /* the hang-up detaches the endpoint */
	pthread_mutex_destroy(&o->rpc_lock);
	pthread_mutex_destroy(&o->hd_lock);
	free(o->runs);
	free(o->eqs);
	free(o->mds);
	off_post_fini(o);
	free(o);
}

static int off_status(struct p3_lib *lib, ptl_sr_index_t reg, ptl_sr_value_t *value)
{
	struct myri_evt e;
	int rc = off_rpc1(OFF(lib), MYRI_LIB_STATUS, reg, &e);
	if (rc == PTL_OK)
		memcpy(value, e.hdr, sizeof(*value));
	return rc;
}

static int off_dist(struct p3_lib *lib, ptl_process_id_t id, unsigned long *distance)
{
	struct myri_off *o = OFF(lib);
	*distance = id.nid == o->id.nid ? (id.pid == o->id.pid ? 0 : 1) : 2;
	return PTL_OK;
}

static unsigned int off_debug(struct p3_lib *lib, unsigned int mask)
{
	struct myri_evt e;
	return off_rpc1(OFF(lib), MYRI_LIB_DEBUG, mask, &e) == PTL_OK ? off_rep_u32(&e, 0) : 0;
}

static int off_describe(struct p3_lib *lib, const char **nal_name, const char **mode)
{
	(void)lib;
	*nal_name = "myrinet";
	*mode = "offload";
	return PTL_OK;
}

/* Nothing to drive: the NIC does the work.  A wait blocks on the interrupt. */
static int off_progress(struct p3_lib *lib, int timeout_ms)
{
	struct myri_off *o = OFF(lib);
	static _Thread_local uint64_t last;
	off_run_handlers(o);
	if (timeout_ms == 0) {
		uint64_t t = off_now_ns();
		if (t - last > 1000000u) { /* a dead NIC is noticed within 1 ms of polling */
			last = t;
			off_nic_gone(o);
		}
		off_spin_refresh(o, t);
		return PTL_OK;
	}
	if (!atomic_load(&o->h->nic_dead))
		off_wait_interrupt(o, timeout_ms);
	else /* nothing will come: a waiter sleeps, in short slices, never spins */
		poll(NULL, 0, timeout_ms < 0 || timeout_ms > 10 ? 10 : timeout_ms);
	off_run_handlers(o);
	return PTL_OK;
}

static void off_wait_policy(struct p3_lib *lib, unsigned int *spin_us, int *yield)
{
	struct myri_off *o = OFF(lib);
	off_spin_refresh(o, off_now_ns());
	enum myri_spin spin = o->spin;
	if (spin == MYRI_SPIN_NONE)
		*spin_us = 0;
	else if (spin == MYRI_SPIN)
		*spin_us = o->spin_us;
	*yield = spin == MYRI_SPIN_YIELD;
}

static int off_progress_thread(struct p3_lib *lib)
{
	(void)lib;
	return 0; /* waits block in progress(): on the interrupt line */
}

static int off_me_insert(struct p3_lib *lib, ptl_handle_me_t base, ptl_pt_index_t pt,
                         ptl_process_id_t match_id, ptl_match_bits_t mbits, ptl_match_bits_t ibits,
                         ptl_unlink_t unlink, ptl_ins_pos_t pos, ptl_pt_index_t *pt_out,
                         ptl_handle_me_t *me_out)
{
	struct myri_off *o = OFF(lib);
	struct myri_lib_me a = {.mbits = mbits,
	                        .ibits = ibits,
	                        .base = base,
	                        .pt = pt,
	                        .match_nid = match_id.nid,
	                        .match_pid = match_id.pid,
	                        .unlink = unlink,
	                        .pos = pos};
	struct myri_cmd cmd;
	struct myri_evt e = {0};
	uint32_t at, want;
	memset(&cmd, 0, sizeof(cmd));
	pthread_mutex_lock(&o->rpc_lock);
	if (off_me_can_post(o, base, pt, &at) && off_pool_take(o, OFF_POOL_ME, &want) == 0) {
		a.want = want;
		memcpy(cmd.hdr, &a, sizeof(a));
		int rc = off_post_locked(o, MYRI_LIB_ME_INSERT, &cmd);
		if (rc == PTL_OK) {
			off_me_note(o, want, at, unlink, 0);
			if (pt_out)
				*pt_out = at;
			*me_out = want;
		} else {
			off_pool_put_back(o, OFF_POOL_ME, want);
		}
		pthread_mutex_unlock(&o->rpc_lock);
		off_run_handlers(o);
		return rc;
	}
	memcpy(cmd.hdr, &a, sizeof(a));
	int rc = off_rpc_locked(o, MYRI_LIB_ME_INSERT, &cmd, &e);
	if (rc == PTL_NO_SPACE && off_pool_release(o))
		rc = off_rpc_locked(o, MYRI_LIB_ME_INSERT, &cmd, &e);
	if (rc == PTL_OK)
		off_me_note(o, off_rep_u32(&e, 1), off_rep_u32(&e, 0), unlink, 0);
	pthread_mutex_unlock(&o->rpc_lock);
	off_run_handlers(o);
	if (rc == PTL_OK) {
		if (pt_out)
			*pt_out = off_rep_u32(&e, 0);
		*me_out = off_rep_u32(&e, 1);
	}
	return rc;
}

static int off_me_unlink(struct p3_lib *lib, ptl_handle_me_t me)
{
	struct myri_off *o = OFF(lib);
	struct myri_cmd cmd;
	struct myri_evt e = {0};
	uint64_t a0 = me;
	memset(&cmd, 0, sizeof(cmd));
	memcpy(cmd.hdr, &a0, sizeof(a0));
	pthread_mutex_lock(&o->rpc_lock);
	int rc = off_rpc_locked(o, MYRI_LIB_ME_UNLINK, &cmd, &e);
	if (rc == PTL_OK) { /* the ME's MD went with it */
		struct off_me *r = off_me_rec(o, me);
		if (r && r->h == me && r->md) {
			struct off_md *d = off_md_rec(o, r->md);
			if (d && d->h == r->md && d->me == me) {
				off_runs_drop_md(o, r->md);
				off_md_forget(o, r->md);
			}
		} else if (!r || r->h != me) {
			off_md_forget_me(o, me); /* no record (cannot happen): look at all */
		}
	}
	if (rc == PTL_OK || rc == PTL_ME_INVALID) /* gone either way */
		off_me_forget(o, me);
	pthread_mutex_unlock(&o->rpc_lock);
	return rc;
}

/* PtlMEUnlinkNoWait: ME_UNLINK posted and quiet, never answered.  The host
 * cannot know whether it will find the ME (a remote get may have used up
 * the MD), so its records stay, marked: nothing is proven from them any
 * more, the ME still counts in its portal's list length (an upper bound)
 * and the MD keeps its registration run until the slot is seen free
 * (off_pool_take) or LIB_HANDLE_CHECK says the MD is gone. */
static int off_me_unlink_nowait(struct p3_lib *lib, ptl_handle_me_t me)
{
	struct myri_off *o = OFF(lib);
	struct myri_cmd cmd;
	uint64_t a0 = me;
	memset(&cmd, 0, sizeof(cmd));
	memcpy(cmd.hdr, &a0, sizeof(a0));
	pthread_mutex_lock(&o->rpc_lock);
	int rc = off_post_flags_locked(o, MYRI_LIB_ME_UNLINK, &cmd, MYRI_LIB_QUIET);
	if (rc == PTL_OK) {
		struct off_me *r = off_me_rec(o, me);
		if (r && r->h == me) {
			r->unlinked = 1;
			struct off_md *d = r->md ? off_md_rec(o, r->md) : NULL;
			if (d && d->h == r->md && d->me == me)
				d->unlinked = 1;
		}
	}
	pthread_mutex_unlock(&o->rpc_lock);
	off_run_handlers(o);
	return rc;
}

/* ME_MD_POST's arguments, waiting or posted (the posted call adds the
 * reserved handles). */
static struct myri_lib_me me_md_args(ptl_handle_me_t base, ptl_process_id_t match_id,
                                     ptl_match_bits_t mbits, ptl_match_bits_t ibits,
                                     ptl_unlink_t unlink, ptl_ins_pos_t pos, const ptl_md_t *md,
                                     ptl_unlink_t md_unlink, ptl_handle_eq_t test_eq)
{
	struct myri_lib_me a = {.mbits = mbits,
	                        .ibits = ibits,
	                        .base = base,
	                        .match_nid = match_id.nid,
	                        .match_pid = match_id.pid,
	                        .unlink = unlink,
	                        .pos = pos,
	                        .md_unlink = md_unlink,
	                        .test_eq = test_eq};
	off_md_wire(md, &a.md);
	return a;
}

static int off_me_md_post(struct p3_lib *lib, ptl_handle_me_t base, ptl_process_id_t match_id,
                          ptl_match_bits_t mbits, ptl_match_bits_t ibits, ptl_unlink_t unlink,
                          ptl_ins_pos_t pos, const ptl_md_t *md, ptl_unlink_t md_unlink,
                          ptl_handle_eq_t test_eq, ptl_handle_me_t *me_out, ptl_handle_md_t *md_out)
{
	struct myri_off *o = OFF(lib);
	struct myri_lib_me a =
	    me_md_args(base, match_id, mbits, ibits, unlink, pos, md, md_unlink, test_eq);
	struct myri_cmd cmd;
	struct myri_evt e = {0};
	memset(&cmd, 0, sizeof(cmd));
	memcpy(cmd.hdr, &a, sizeof(a));
	pthread_mutex_lock(&o->rpc_lock);
	int rc = off_reg_md(o, md, &cmd);
	if (rc == PTL_OK) {
		rc = off_rpc_locked(o, MYRI_LIB_ME_MD_POST, &cmd, &e);
		if (rc == PTL_NO_SPACE && off_pool_release(o))
			rc = off_rpc_locked(o, MYRI_LIB_ME_MD_POST, &cmd, &e);
		off_reg_settle(o, &cmd, rc, off_rep_u32(&e, 1));
		if (rc == PTL_OK) {
			off_md_note(o, off_rep_u32(&e, 1), off_rep_u32(&e, 0), md);
			struct off_me *base_rec = off_me_rec(o, base);
			if (base_rec && base_rec->h == base)
				off_me_note(o, off_rep_u32(&e, 0), base_rec->pt, unlink,
				            off_rep_u32(&e, 1));
		}
	}
	pthread_mutex_unlock(&o->rpc_lock);
	if (rc == PTL_OK) {
		*me_out = off_rep_u32(&e, 0);
		*md_out = off_rep_u32(&e, 1);
	}
	return rc;
}

static int posts_settle_locked(struct myri_off *o);

/* A queued post the NIC would refuse (its test EQ has an event the caller
 * had not read, or an END owed): answered PTL_MD_NO_UPDATE at once, as the
 * waiting call would, instead of a refusal event the caller reads only at
 * its next call -- a receive that raced a message then lost the overlap
 * (COMB's worker pulled the message after its work, not during it). */
static int post_failed_early(struct myri_off *o)
{
	atomic_fetch_add_explicit(&o->h->seg->host_counters[MYRI_H_posts_failed_early], 1,
	                          memory_order_relaxed);
	return PTL_MD_NO_UPDATE;
}

/* PtlMEMDPostNoWait: ME_MD_POST posted, with reserved ME and MD handles,
 * when the host can prove that only the EQ test can fail (the base ME, the
 * MD, its EQ and the test EQ as for the other posted calls); the NIC then
 * answers only a failure, and a refusal by the EQ test is LIB's event in the
 * test EQ.  Otherwise the waiting call. */
static int off_me_md_post_nowait(struct p3_lib *lib, ptl_handle_me_t base,
                                 ptl_process_id_t match_id, ptl_match_bits_t mbits,
                                 ptl_match_bits_t ibits, ptl_unlink_t unlink, ptl_ins_pos_t pos,
                                 const ptl_md_t *md, ptl_unlink_t md_unlink,
                                 ptl_handle_eq_t test_eq, ptl_handle_me_t *me_out,
                                 ptl_handle_md_t *md_out)
{
	struct myri_off *o = OFF(lib);
	uint32_t pt = 0, want_me = 0, want_md = 0, seen = 0;
	/* the EQ test is against what the caller had read of test_eq when it
	 * called: it may read more before the NIC runs the post */
	pthread_mutex_lock(&o->rpc_lock);
	int ok = base != PTL_INVALID_HANDLE && off_me_can_post(o, base, 0, &pt) &&
	         off_md_can_create(o, PTL_INVALID_HANDLE, md) &&
	         off_eq_seen(o, test_eq, &seen) && off_pool_take(o, OFF_POOL_ME, &want_me) == 0;
	if (ok && off_pool_take(o, OFF_POOL_MD, &want_md) != 0) {
		off_pool_put_back(o, OFF_POOL_ME, want_me);
		ok = 0;
	}
	if (!ok) {
		pthread_mutex_unlock(&o->rpc_lock);
		return off_me_md_post(lib, base, match_id, mbits, ibits, unlink, pos, md, md_unlink,
		                      test_eq, me_out, md_out);
	}
	struct myri_lib_me a =
	    me_md_args(base, match_id, mbits, ibits, unlink, pos, md, md_unlink, test_eq);
	a.want = want_me;
	a.want_md = want_md;
	struct myri_cmd cmd;
	memset(&cmd, 0, sizeof(cmd));
	memcpy(cmd.hdr, &a, sizeof(a));
	cmd.offset = seen;
	int rc = off_reg_md(o, md, &cmd);
	/* just before the command goes: a post the NIC would refuse is
	 * answered here (and commands queued before a header run before it
	 * is matched: mcpd_ep_cmds_before_hdr) */
	if (rc == PTL_OK && off_eq_test_fails(o, test_eq, seen))
		rc = post_failed_early(o);
	if (rc == PTL_OK)
		rc = off_post_locked(o, MYRI_LIB_ME_MD_POST, &cmd);
	off_reg_settle(o, &cmd, rc, want_md);
	if (rc == PTL_OK) {
		off_md_note(o, want_md, want_me, md);
		off_me_note(o, want_me, pt, unlink, want_md);
		o->post_at = atomic_load_explicit(&o->h->seg->cmdq.tail, memory_order_relaxed);
		*me_out = want_me;
		*md_out = want_md;
		/* A message the NIC matched, or is matching, between the test
		 * above and the push (it read the queue just before): the NIC
		 * will refuse the post.  Let it run the post now, so that the
		 * refusal is in the test EQ when this call returns and a
		 * caller that drains the EQ after posting takes it at once.
		 * nic_matching is read after the push (both sequentially
		 * consistent, as the NIC's store and its read of the queue):
		 * one of the two sides sees the other. */
		if (atomic_load(&o->h->seg->nic_matching) || off_eq_test_fails(o, test_eq, seen))
			(void)posts_settle_locked(o);
	} else { /* the NIC never saw it */
		off_pool_put_back(o, OFF_POOL_MD, want_md);
		off_pool_put_back(o, OFF_POOL_ME, want_me);
	}
	pthread_mutex_unlock(&o->rpc_lock);
	off_run_handlers(o);
	return rc;
}

/* PtlMEMDPostSync: the NIC publishes a command's head only after it ran it
 * (mcpd_ep.c), so head past the last posted ME_MD_POST says it ran, and its
 * refusal event is in the ring; otherwise one waiting call (its answer
 * comes after every command before it). */
/* Has the NIC run every command up to the last posted ME_MD_POST? */
static int posts_ran(struct myri_off *o)
{
	return atomic_load_explicit(&o->h->seg->cmdq.head, memory_order_acquire) >= o->post_at;
}

static int posts_settle_locked(struct myri_off *o)
{
	int rc = PTL_OK;
	/* A NIC that runs elsewhere publishes head as it goes: watch it for
	 * up to OFF_SETTLE_SPIN_NS before asking (a round trip the NIC must
	 * answer, and a wait that sleeps on its interrupt once the host's
	 * spin is over: COMB's worker, posting while the NIC matched the
	 * message that raced its receive, paid ~50 us per refusal so). */
	if (o->post_at && !posts_ran(o) && o->spin != MYRI_SPIN_NONE) {
		uint64_t t0 = off_now_ns();
		while (!posts_ran(o) && off_now_ns() - t0 < OFF_SETTLE_SPIN_NS &&
		       !atomic_load(&o->h->nic_dead)) {
			if (o->spin == MYRI_SPIN_YIELD)
				sched_yield(); /* the NIC may share this core */
		}
	}
	if (o->post_at && !posts_ran(o)) {
		struct myri_cmd cmd;
		struct myri_evt e = {0};
		memset(&cmd, 0, sizeof(cmd)); /* HANDLE_CHECK of no handle: a no-op */
		rc = off_rpc_locked(o, MYRI_LIB_HANDLE_CHECK, &cmd, &e) == PTL_FAIL ? PTL_FAIL
		                                                                     : PTL_OK;
	}
	if (rc == PTL_OK)
		o->post_at = 0;
	return rc;
}

static int off_me_md_post_sync(struct p3_lib *lib)
{
	struct myri_off *o = OFF(lib);
	pthread_mutex_lock(&o->rpc_lock);
	int rc = posts_settle_locked(o);
	pthread_mutex_unlock(&o->rpc_lock);
	return rc;
}

/* MD_ATTACH posted: a reserved handle, no answer (rpc_lock held). */
static int md_attach_posted(struct myri_off *o, ptl_handle_me_t me, const ptl_md_t *md,
                            struct myri_lib_md *a, uint32_t want)
{
	struct myri_cmd cmd;
	memset(&cmd, 0, sizeof(cmd));
	a->want = want;
	memcpy(cmd.hdr, a, sizeof(*a));
	int rc = off_reg_md(o, md, &cmd);
	if (rc == PTL_OK) {
		rc = off_post_locked(o, MYRI_LIB_MD_ATTACH, &cmd);
		off_reg_settle(o, &cmd, rc, want);
	}
	if (rc == PTL_OK) {
		off_md_note(o, want, me, md);
		off_me_got_md(o, me, want);
	} else {
		off_pool_put_back(o, OFF_POOL_MD, want); /* the NIC never saw it */
	}
	return rc;
}

static int off_md_attach(struct p3_lib *lib, ptl_handle_me_t me, const ptl_md_t *md,
                         ptl_unlink_t unlink, ptl_handle_md_t *md_out)
{
	struct myri_off *o = OFF(lib);
	struct myri_lib_md a = {.handle = me, .unlink = unlink};
	struct myri_cmd cmd;
	struct myri_evt e = {0};
	uint32_t want;
	memset(&cmd, 0, sizeof(cmd));
	off_md_wire(md, &a.md);
	pthread_mutex_lock(&o->rpc_lock);
	if (off_md_can_create(o, me, md) && off_pool_take(o, OFF_POOL_MD, &want) == 0) {
		int rc = md_attach_posted(o, me, md, &a, want);
		pthread_mutex_unlock(&o->rpc_lock);
		off_run_handlers(o);
		if (rc == PTL_OK)
			*md_out = want;
		return rc;
	}
	memcpy(cmd.hdr, &a, sizeof(a));
	int rc = off_reg_md(o, md, &cmd);
	if (rc == PTL_OK) {
		rc = off_rpc_locked(o, MYRI_LIB_MD_ATTACH, &cmd, &e);
		if (rc == PTL_NO_SPACE && off_pool_release(o))
			rc = off_rpc_locked(o, MYRI_LIB_MD_ATTACH, &cmd, &e);
		off_reg_settle(o, &cmd, rc, off_rep_u32(&e, 0));
		if (rc == PTL_OK) {
			off_md_note(o, off_rep_u32(&e, 0), me, md);
			off_me_got_md(o, me, off_rep_u32(&e, 0));
		}
	}
	pthread_mutex_unlock(&o->rpc_lock);
	off_run_handlers(o);
	if (rc == PTL_OK)
		*md_out = off_rep_u32(&e, 0);
	return rc;
}

static int off_md_unlink(struct p3_lib *lib, ptl_handle_md_t md)
{
	struct myri_off *o = OFF(lib);
	struct myri_cmd cmd;
	struct myri_evt e = {0};
	uint64_t a0 = md;
	memset(&cmd, 0, sizeof(cmd));
	memcpy(cmd.hdr, &a0, sizeof(a0));
	pthread_mutex_lock(&o->rpc_lock);
	int rc = off_rpc_locked(o, MYRI_LIB_MD_UNLINK, &cmd, &e);
	if (rc == PTL_MD_INVALID) { /* the NIC freed it (auto-unlink): forget it too */
		off_runs_drop_md(o, md);
		off_md_forget(o, md);
	} else if (rc == PTL_OK) {
		struct off_md *r = off_md_rec(o, md);
		if (r && r->h == md && r->me != PTL_INVALID_HANDLE) {
			struct off_me *m = off_me_rec(o, r->me); /* an UNLINK ME goes with it */
			if (m && m->h == r->me && !m->retain)
				off_me_forget(o, r->me);
		}
		off_runs_drop_md(o, md);
		off_md_forget(o, md);
	}
	pthread_mutex_unlock(&o->rpc_lock);
	return rc;
}

static int off_md_update(struct p3_lib *lib, ptl_handle_md_t mdh, ptl_md_t *old_md,
                         const ptl_md_t *new_md, ptl_handle_eq_t test_eq)
{
	struct myri_off *o = OFF(lib);
	struct myri_lib_md a = {
	    .handle = mdh, .test_eq = test_eq, .flags = (old_md ? 1u : 0u) | (new_md ? 2u : 0u)};
	struct myri_cmd cmd;
	struct myri_evt e = {0};
	memset(&cmd, 0, sizeof(cmd));
	if (new_md)
		off_md_wire(new_md, &a.md);
	memcpy(cmd.hdr, &a, sizeof(a));
	pthread_mutex_lock(&o->rpc_lock);
	int rc = new_md ? off_reg_md(o, new_md, &cmd) : PTL_OK;
	if (rc == PTL_OK) {
		rc = off_rpc_locked(o, MYRI_LIB_MD_UPDATE, &cmd, &e);
		if (rc == PTL_OK && new_md) { /* the old memory is released, the new kept */
			struct off_run keep =
			    cmd.nreg ? o->runs[o->nruns - 1] : (struct off_run){0};
			if (cmd.nreg)
				o->nruns--;
			off_runs_drop_md(o, mdh);
			if (cmd.nreg) {
				keep.md = mdh;
				o->runs[o->nruns++] = keep;
			}
			struct off_md *r = off_md_rec(o, mdh);
			if (r && r->h == mdh)
				off_md_note(o, mdh, r->me, new_md);
		} else if (new_md) {
			off_reg_settle(o, &cmd, PTL_FAIL, mdh);
		}
	}
	pthread_mutex_unlock(&o->rpc_lock);
	if (old_md && (rc == PTL_OK || rc == PTL_MD_NO_UPDATE)) {
		struct myri_md w;
		memcpy(&w, e.hdr, sizeof(w));
		old_md->start = (void *)(uintptr_t)w.start;
		old_md->length = w.length;
		old_md->threshold = w.threshold;
		old_md->max_size = w.max_size;
		old_md->options = w.options;
		old_md->user_ptr = (void *)(uintptr_t)w.user_ptr;
		old_md->eq_handle = w.eq_handle;
	}
	off_run_handlers(o);
	return rc;
}

static int off_eq_alloc(struct p3_lib *lib, ptl_size_t count, ptl_eq_handler_t handler,
                        ptl_handle_eq_t *eq_out, struct p3_eq_ring **ring_out)
{
	struct myri_off *o = OFF(lib);
	struct myri_evt e;
	int rc = off_rpc1(o, MYRI_LIB_EQ_ALLOC, count, &e);
	if (rc != PTL_OK)
		return rc;
	ptl_handle_eq_t eq = off_rep_u32(&e, 0);
	uint64_t off = off_rep_u32(&e, 1);
	struct p3_eq_ring *ring = (struct p3_eq_ring *)(void *)(o->h->arena + off);
	/* the NIC's word, checked: the ring must lie in the arena */
	if (off + sizeof(*ring) > MYRI_ARENA_LEN ||
	    off + p3_eq_ring_bytes(ring->eqr_count) > MYRI_ARENA_LEN ||
	    ring->eqr_magic != P3_EQ_RING_MAGIC || atomic_load(&ring->eqr_handle) != eq) {
		off_rpc1(o, MYRI_LIB_EQ_FREE, eq, NULL);
		return PTL_FAIL;
	}
	uint32_t i = p3_handle_idx(eq), slots = ring->eqr_count;
	if (i >= o->neqs || !slots || (slots & (slots - 1))) {
		off_rpc1(o, MYRI_LIB_EQ_FREE, eq, NULL);
		return PTL_FAIL;
	}
	pthread_mutex_lock(&o->hd_lock);
	o->eqs[i] = (struct off_eq){.ring = ring,
	                            .handler = handler,
	                            .handle = eq,
	                            .mask = slots - 1,
	                            .cursor = atomic_load(&ring->eqr_write_seq)};
	pthread_mutex_unlock(&o->hd_lock);
	if (handler)
		atomic_fetch_add(&o->nhandlers, 1);
	*eq_out = eq;
	*ring_out = ring;
	return PTL_OK;
}

static int off_eq_free(struct p3_lib *lib, ptl_handle_eq_t eq)
{
	struct myri_off *o = OFF(lib);
	uint32_t i = p3_handle_idx(eq);
	pthread_mutex_lock(&o->hd_lock);
	if (i < o->neqs && o->eqs[i].ring && o->eqs[i].handle == eq) {
		if (o->eqs[i].handler)
			atomic_fetch_sub(&o->nhandlers, 1);
		o->eqs[i] = (struct off_eq){0};
	}
	pthread_mutex_unlock(&o->hd_lock);
	return off_rpc1(o, MYRI_LIB_EQ_FREE, eq, NULL);
}

static int off_ac_entry(struct p3_lib *lib, ptl_ac_index_t ac, ptl_process_id_t match_id,
                        ptl_uid_t uid, ptl_jid_t jid, ptl_pt_index_t pt)
{
	struct myri_lib_ac a = {ac, match_id.nid, match_id.pid, uid, jid, pt};
	struct myri_cmd cmd;
	struct myri_evt e = {0};
	memset(&cmd, 0, sizeof(cmd));
	memcpy(cmd.hdr, &a, sizeof(a));
	return off_rpc(OFF(lib), MYRI_LIB_AC_ENTRY, &cmd, &e);
}

/* A put or get: posted (a queue write, no answer) when the host can prove
 * LIB accepts it (md_can_post), otherwise a call like the others. */
static int move(struct p3_lib *lib, uint16_t op, const struct myri_lib_move *a)
{
	struct myri_off *o = OFF(lib);
	struct myri_cmd cmd;
	struct myri_evt e = {0};
	memset(&cmd, 0, sizeof(cmd));
	memcpy(cmd.hdr, a, sizeof(*a));
	/* threshold the operation may take: a put 1, its ack 1; a get's reply 1 */
	uint32_t takes = op == MYRI_LIB_PUT ? 1u + (a->ack == PTL_ACK_REQ) : 1u;
	pthread_mutex_lock(&o->rpc_lock);
	if (op != MYRI_LIB_GETPUT &&
	    off_md_can_post(o, a->md, (int)a->whole, a->local_offset, a->length)) {
		int rc = off_post_locked(o, op, &cmd);
		if (rc == PTL_OK)
			off_md_used(o, a->md, takes);
		pthread_mutex_unlock(&o->rpc_lock);
		off_run_handlers(o);
		return rc;
	}
	int rc = off_rpc_locked(o, op, &cmd, &e);
	if (rc == PTL_OK && op != MYRI_LIB_GETPUT)
		off_md_used(o, a->md, takes);
	pthread_mutex_unlock(&o->rpc_lock);
	off_run_handlers(o);
	return rc;
}

static int off_put(struct p3_lib *lib, ptl_handle_md_t md, int whole, ptl_size_t local_offset,
                   ptl_size_t length, ptl_ack_req_t ack, ptl_process_id_t target, ptl_pt_index_t pt,
                   ptl_ac_index_t ac, ptl_match_bits_t mbits, ptl_size_t remote_offset,
                   ptl_hdr_data_t hdr_data)
{
	struct myri_lib_move a = {.local_offset = local_offset,
	                          .length = length,
	                          .mbits = mbits,
	                          .remote_offset = remote_offset,
	                          .hdr_data = hdr_data,
	                          .md = md,
	                          .whole = (uint32_t)whole,
	                          .ack = ack,
	                          .nid = target.nid,
	                          .pid = target.pid,
	                          .pt = pt,
	                          .ac = ac};
	return move(lib, MYRI_LIB_PUT, &a);
}

static int off_get(struct p3_lib *lib, ptl_handle_md_t md, int whole, ptl_size_t local_offset,
                   ptl_size_t length, ptl_process_id_t target, ptl_pt_index_t pt, ptl_ac_index_t ac,
                   ptl_match_bits_t mbits, ptl_size_t remote_offset)
{
	struct myri_lib_move a = {.local_offset = local_offset,
	                          .length = length,
	                          .mbits = mbits,
	                          .remote_offset = remote_offset,
	                          .md = md,
	                          .whole = (uint32_t)whole,
	                          .nid = target.nid,
	                          .pid = target.pid,
	                          .pt = pt,
	                          .ac = ac};
	return move(lib, MYRI_LIB_GET, &a);
}

static int off_getput(struct p3_lib *lib, ptl_handle_md_t get_md, ptl_handle_md_t put_md,
                      ptl_process_id_t target, ptl_pt_index_t pt, ptl_ac_index_t ac,
                      ptl_match_bits_t mbits, ptl_size_t remote_offset, ptl_hdr_data_t hdr_data)
{
	struct myri_lib_move a = {.mbits = mbits,
	                          .remote_offset = remote_offset,
	                          .hdr_data = hdr_data,
	                          .md = get_md,
	                          .md2 = put_md,
	                          .nid = target.nid,
	                          .pid = target.pid,
	                          .pt = pt,
	                          .ac = ac};
	return move(lib, MYRI_LIB_GETPUT, &a);
}

static int off_handle_check(struct p3_lib *lib, ptl_handle_any_t h)
{
	return off_rpc1(OFF(lib), MYRI_LIB_HANDLE_CHECK, h, NULL);
}

static void off_wakeup(struct p3_lib *lib)
{
	uint64_t one = 1;
	if (write(OFF(lib)->h->intr_fd, &one, sizeof(one)) < 0) {
		/* saturated: a wake-up is pending anyway */
	}
}

const struct p3_lib_iface p3_myri_offload_iface = {
    .open = off_open,
    .close = off_close,
    .status = off_status,
    .dist = off_dist,
    .debug = off_debug,
    .describe = off_describe,
    .progress = off_progress,
    .progress_thread = off_progress_thread,
    .me_insert = off_me_insert,
    .me_unlink = off_me_unlink,
    .me_unlink_nowait = off_me_unlink_nowait,
    .me_md_post = off_me_md_post,
    .me_md_post_nowait = off_me_md_post_nowait,
    .me_md_post_sync = off_me_md_post_sync,
    .md_attach = off_md_attach,
    .md_unlink = off_md_unlink,
    .md_update = off_md_update,
    .eq_alloc = off_eq_alloc,
    .eq_free = off_eq_free,
    .ac_entry = off_ac_entry,
    .put = off_put,
    .get = off_get,
    .getput = off_getput,
    .handle_check = off_handle_check,
    .wakeup = off_wakeup,
    .wait_policy = off_wait_policy,
};
