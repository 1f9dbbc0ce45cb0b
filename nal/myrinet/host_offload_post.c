/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * host_offload_post.c - offload on the host, posted calls: the rule by which
 * a call that creates an ME or an MD goes into the command queue without
 * waiting for its answer, as a NIC driver posts work (README §2.2 "Posted
 * calls").  The host may post a call only when it can prove LIB accepts it:
 * the handle is one the NIC reserved for it beforehand (MYRI_LIB_RESERVE,
 * a pool per object type, refilled by one waiting call per
 * MYRI_MAX_RESERVE objects), and every error the call could return is ruled
 * out by what the host knows — its own records of the MEs, MDs and EQs it
 * created.  Anything it cannot prove is a waiting call, as before, and
 * returns LIB's own answer.
 */
#include "host_offload.h"

#include <stdlib.h>
#include <string.h>

/* The MD options LIB knows (lib-md.c): any other bit is PTL_MD_ILLEGAL. */
#define OFF_MD_OPTIONS_ALL                                                                         \
	(PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE | PTL_MD_TRUNCATE |                  \
	 PTL_MD_ACK_DISABLE | PTL_MD_IOVEC | PTL_MD_MAX_SIZE | PTL_MD_EVENT_START_DISABLE |        \
	 PTL_MD_EVENT_END_DISABLE | PTL_MD_EVENT_UNLINK_DISABLE | PTL_MD_EVENT_SUCCESS_DISABLE)

int off_post_init(struct myri_off *o, const int32_t limits[8])
{
	memcpy(&o->limits, limits, sizeof(o->limits));
	o->nmes = (uint32_t)(limits[0] > 0 ? limits[0] : 0);
	uint32_t npt = (uint32_t)(limits[4] >= 0 ? limits[4] + 1 : 0);
	o->mes = calloc((size_t)o->nmes + 1, sizeof(*o->mes));
	o->pt_len = calloc((size_t)npt + 1, sizeof(*o->pt_len));
	return o->mes && o->pt_len ? 0 : -1;
}

void off_post_fini(struct myri_off *o)
{
	free(o->mes);
	free(o->pt_len);
	o->mes = NULL;
	o->pt_len = NULL;
}

/* ---- ME records ------------------------------------------------------------ */

struct off_me *off_me_rec(struct myri_off *o, ptl_handle_me_t me)
{
	uint32_t i = p3_handle_idx(me);
	return i < o->nmes ? &o->mes[i] : NULL;
}

static void me_rec_clear(struct myri_off *o, struct off_me *r)
{
	if (r->h && o->pt_len[r->pt])
		o->pt_len[r->pt]--;
	*r = (struct off_me){0};
}

void off_me_note(struct myri_off *o, ptl_handle_me_t me, uint32_t pt, ptl_unlink_t unlink,
                 ptl_handle_md_t md)
{
	struct off_me *r = off_me_rec(o, me);
	if (!r || pt > (uint32_t)o->limits.max_pt_index)
		return;
	me_rec_clear(o, r); /* a stale record of the slot's earlier ME */
	*r = (struct off_me){
	    .h = me, .pt = pt, .retain = unlink == PTL_RETAIN, .had_md = md != 0, .md = md};
	o->pt_len[pt]++;
}

void off_me_got_md(struct myri_off *o, ptl_handle_me_t me, ptl_handle_md_t md)
{
	struct off_me *r = off_me_rec(o, me);
	if (r && r->h == me) {
		r->had_md = 1;
		r->md = md;
	}
}

void off_me_forget(struct myri_off *o, ptl_handle_me_t me)
{
	struct off_me *r = off_me_rec(o, me);
	if (r && r->h == me)
		me_rec_clear(o, r);
}

/* ---- the NIC's reservations ------------------------------------------------ */

/* A reserved handle names a free slot: whatever the host recorded there
 * before is gone (the NIC freed it: auto-unlink, ME unlink), and so are the
 * registration entries of an MD that was there. */
static void slot_seen_free(struct myri_off *o, int which, uint32_t h)
{
	if (which == OFF_POOL_ME) {
		struct off_me *r = off_me_rec(o, h);
		if (r && r->h)
			me_rec_clear(o, r);
		return;
	}
	struct off_md *r = off_md_rec(o, h);
	if (r && r->h) {
		off_runs_drop_md(o, r->h);
		*r = (struct off_md){0};
	}
}

/* The handles of a RESERVE answer join the pool. */
static void pool_add(struct myri_off *o, int which, const struct myri_evt *e)
{
	struct off_pool *p = &o->pool[which];
	unsigned int type = which == OFF_POOL_ME ? P3_HT_ME : P3_HT_MD;
	struct myri_lib_handles r;
	if (e->status != PTL_OK) {
		p->dry = OFF_POOL_DRY;
		return;
	}
	memcpy(&r, e->hdr, sizeof(r));
	for (uint32_t i = 0; i < r.n && i < MYRI_MAX_RESERVE; i++) {
		if (p3_handle_type(r.h[i]) != type || p->n == 2 * MYRI_MAX_RESERVE)
			continue;      /* the NIC's word, checked */
		p->h[p->n++] = r.h[i]; /* seen free when taken (off_pool_take) */
	}
}

static void reserve_cmd(int which, struct myri_cmd *cmd)
{
	uint64_t a0 = (uint64_t)(which == OFF_POOL_ME ? P3_HT_ME : P3_HT_MD) |
	              (uint64_t)MYRI_MAX_RESERVE << 8;
	memset(cmd, 0, sizeof(*cmd));
	memcpy(cmd->hdr, &a0, sizeof(a0));
}

/* Fill an empty pool, waiting: for the RESERVE asked ahead, or a new one. */
static int pool_fill(struct myri_off *o, int which)
{
	struct off_pool *p = &o->pool[which];
	struct myri_evt e = {0};
	if (p->ahead) {
		e.status = off_wait_reply(o, p->ahead, &e);
		p->ahead = 0;
	} else {
		struct myri_cmd cmd;
		reserve_cmd(which, &cmd);
		e.status = off_rpc_locked(o, MYRI_LIB_RESERVE, &cmd, &e);
	}
	pool_add(o, which, &e);
	return p->n ? 0 : -1;
}

/* Ask for the next handles while one batch or less is left, so that the host
 * never waits for them in a steady stream of creations. */
static void pool_ask_ahead(struct myri_off *o, int which)
{
	struct off_pool *p = &o->pool[which];
	if (p->ahead || p->dry || p->n > MYRI_MAX_RESERVE)
		return;
	struct myri_cmd cmd;
	reserve_cmd(which, &cmd);
	p->ahead = off_call_ahead(o, MYRI_LIB_RESERVE, &cmd);
}

void off_pool_on_reply(struct myri_off *o, const struct myri_evt *e)
{
	for (int w = 0; w < 2; w++)
		if (o->pool[w].ahead && e->token == o->pool[w].ahead) {
			o->pool[w].ahead = 0;
			pool_add(o, w, e);
		}
}

int off_pool_take(struct myri_off *o, int which, uint32_t *h)
{
	struct off_pool *p = &o->pool[which];
	if (p->ahead) /* its answer may be in: no system call */
		off_take_events(o);
	if (!p->n) {
		if (p->dry) {
			p->dry--;
			return -1;
		}
		if (pool_fill(o, which) != 0)
			return -1;
	}
	*h = p->h[--p->n];
	/* Not when the answer came: that may be inside the wait of a call whose
	 * registration run is not settled yet, which releasing another run would
	 * move (off_reg_settle takes the last run; a release moves the last run
	 * into the hole).  Here no run is pending. */
	slot_seen_free(o, which, *h);
	pool_ask_ahead(o, which);
	return 0;
}

/* A handle taken for a call that did not reach the NIC. */
void off_pool_put_back(struct myri_off *o, int which, uint32_t h)
{
	struct off_pool *p = &o->pool[which];
	if (p->n < 2 * MYRI_MAX_RESERVE)
		p->h[p->n++] = h;
}

/* Give every reserved handle back (a waiting call found the table full:
 * the host's pools may hold the slots it needs).  1 if any went back. */
int off_pool_release(struct myri_off *o)
{
	int any = 0;
	for (int w = 0; w < 2; w++) {
		struct off_pool *p = &o->pool[w];
		if (p->ahead) { /* its handles too */
			struct myri_evt e = {0};
			e.status = off_wait_reply(o, p->ahead, &e);
			p->ahead = 0;
			pool_add(o, w, &e);
		}
		p->dry = OFF_POOL_DRY;
		while (p->n) {
			struct myri_lib_handles r = {0};
			while (p->n && r.n < MYRI_MAX_RESERVE)
				r.h[r.n++] = p->h[--p->n];
			struct myri_cmd cmd;
			struct myri_evt e = {0};
			memset(&cmd, 0, sizeof(cmd));
			memcpy(cmd.hdr, &r, sizeof(r));
			off_rpc_locked(o, MYRI_LIB_UNRESERVE, &cmd, &e);
			any = 1;
		}
	}
	return any;
}

/* ---- the proofs ------------------------------------------------------------ */

/* ME_INSERT cannot fail: a portal named (not PTL_PT_INDEX_ANY: the answer
 * would be needed) and valid, or a base ME the NIC cannot have freed; and a
 * match list shorter than max_me_list even counting every ME the host
 * created there and did not see go. */
int off_me_can_post(struct myri_off *o, ptl_handle_me_t base, ptl_pt_index_t pt, uint32_t *pt_out)
{
	if (base != PTL_INVALID_HANDLE) {
		struct off_me *r = off_me_rec(o, base);
		if (!r || r->h != base || r->unlinked || !(r->retain || !r->had_md))
			return 0;
		pt = r->pt;
	} else if (pt == PTL_PT_INDEX_ANY || pt > (uint32_t)o->limits.max_pt_index) {
		return 0;
	}
	if (o->pt_len[pt] + 1 >= (uint32_t)o->limits.max_me_list)
		return 0;
	*pt_out = pt;
	return 1;
}

int off_eq_alive(struct myri_off *o, ptl_handle_eq_t eq)
{
	uint32_t seen;
	return off_eq_seen(o, eq, &seen);
}

static int ring_test_fails(const struct p3_eq_ring *r, uint32_t seen)
{
	return atomic_load_explicit(&r->eqr_owed, memory_order_acquire) != 0 ||
	       atomic_load_explicit(&r->eqr_write_seq, memory_order_acquire) != seen;
}

/* The ring of EQ eq if the host allocated it and did not free it (hd_lock
 * held), else NULL. */
static struct p3_eq_ring *eq_ring_locked(struct myri_off *o, ptl_handle_eq_t eq)
{
	uint32_t i = p3_handle_idx(eq);
	return i < o->neqs && o->eqs[i].ring && o->eqs[i].handle == eq ? o->eqs[i].ring : NULL;
}

/* A posted ME_MD_POST's EQ test (p3_lib_me_md_post_queued): how many
 * events of test EQ eq the process has read (its ring's read sequence);
 * 0 when it is not an EQ the host allocated and did not free. */
int off_eq_seen(struct myri_off *o, ptl_handle_eq_t eq, uint32_t *seen)
{
	*seen = 0;
	if (eq == PTL_EQ_NONE)
		return 1;
	/* Never wait for hd_lock here (rpc_lock held): a thread running EQ
	 * handlers holds it and may call into Portals.  Busy: not proven. */
	if (pthread_mutex_trylock(&o->hd_lock) != 0)
		return 0;
	struct p3_eq_ring *r = eq_ring_locked(o, eq);
	if (r)
		*seen = atomic_load(&r->eqr_read_seq);
	pthread_mutex_unlock(&o->hd_lock);
	return r != NULL;
}

/* Must the NIC's test of a post made with `seen` (off_eq_seen) fail?  An
 * event the process had not read, or an END owed (the ring's eqr_owed: a
 * message is arriving into one of the EQ's MDs, and its END will be an
 * event not read when the post was made). */
int off_eq_test_fails(struct myri_off *o, ptl_handle_eq_t eq, uint32_t seen)
{
	if (eq == PTL_EQ_NONE || pthread_mutex_trylock(&o->hd_lock) != 0)
		return 0; /* the NIC's test decides */
	struct p3_eq_ring *r = eq_ring_locked(o, eq);
	int fails = r && ring_test_fails(r, seen);
	pthread_mutex_unlock(&o->hd_lock);
	return fails;
}

/* MD_ATTACH (a bind when me is PTL_INVALID_HANDLE) cannot fail: LIB's MD
 * checks (lib-md.c) pass, its EQ is one the host allocated and did not
 * free, and the ME is one the host created, to which no MD was ever
 * attached (an ME without an MD is never freed by the NIC). */
int off_md_can_create(struct myri_off *o, ptl_handle_me_t me, const ptl_md_t *md)
{
	if (md->options & ~(unsigned int)OFF_MD_OPTIONS_ALL || md->threshold < PTL_MD_THRESH_INF)
		return 0;
	if (md->options & PTL_MD_IOVEC) {
		if (md->length > (ptl_size_t)o->limits.max_md_iovecs || md->length > MYRI_MAX_RUN)
			return 0;
	}
	if (md->length && !md->start)
		return 0;
	if (me != PTL_INVALID_HANDLE) {
		struct off_me *r = off_me_rec(o, me);
		if (!r || r->h != me || r->had_md || r->unlinked)
			return 0;
	}
	return off_eq_alive(o, md->eq_handle);
}

/* Queue a LIB call without waiting: the NIC answers only if it fails. */
int off_post_locked(struct myri_off *o, uint16_t lib_op, struct myri_cmd *cmd)
{
	return off_post_flags_locked(o, lib_op, cmd, 0);
}

int off_post_flags_locked(struct myri_off *o, uint16_t lib_op, struct myri_cmd *cmd,
                          uint64_t flags)
{
	cmd->op = MYRI_CMD_LIB;
	cmd->lib_op = lib_op;
	cmd->nic_token = MYRI_LIB_POSTED | flags;
	cmd->token = ++o->rpc_seq | OFF_POSTED_TOKEN;
	return atomic_load(&o->h->nic_dead) || off_cmd_push(o, cmd) != 0 ? PTL_FAIL : PTL_OK;
}
