/* SPDX-License-Identifier: BSD-3-Clause */
/* lib-me.c - match entries and the portal table's match lists. */
#include "lib.h"

#include <string.h>

static void p3_me_link_locked(struct p3_portal *p, struct p3_me *me, struct p3_me *base,
			      ptl_ins_pos_t pos)
{
	struct p3_me *prev, *next;

	if (!base) {
		/* relative to the whole list */
		prev = pos == PTL_INS_BEFORE ? NULL : p->pt_tail;
	} else {
		prev = pos == PTL_INS_BEFORE ? base->me_prev : base;
	}
	next = prev ? prev->me_next : p->pt_head;
	me->me_prev = prev;
	me->me_next = next;
	if (prev)
		prev->me_next = me;
	else
		p->pt_head = me;
	if (next)
		next->me_prev = me;
	else
		p->pt_tail = me;
	p->pt_len++;
}

void p3_me_destroy_locked(struct p3_lib *lib, struct p3_me *me)
{
	struct p3_portal *p = &lib->lib_ptl[me->me_pt];

	P3_ASSERT_LOCKED(lib);
	if (me->me_prev)
		me->me_prev->me_next = me->me_next;
	else
		p->pt_head = me->me_next;
	if (me->me_next)
		me->me_next->me_prev = me->me_prev;
	else
		p->pt_tail = me->me_prev;
	p->pt_len--;
	P3_DBG(lib, PTL_DBG_ME, "ME %#x unlinked from portal %u", (unsigned)me->me_obj.obj_handle,
	       (unsigned)me->me_pt);
	p3_obj_free_locked(&lib->lib_mes, me);
}

/* A new ME on portal pt, linked relative to base (NULL: the whole list). */
static int p3_me_new_locked(struct p3_lib *lib, struct p3_me *base, ptl_pt_index_t pt,
			    ptl_process_id_t match_id, ptl_match_bits_t mbits,
			    ptl_match_bits_t ibits, ptl_unlink_t unlink, ptl_ins_pos_t pos,
			    ptl_pt_index_t *pt_out, struct p3_me **me_out)
{
	struct p3_me *me;

	if (lib->lib_ptl[pt].pt_len >= lib->lib_limits.max_me_list)
		return PTL_ME_LIST_TOO_LONG;
	me = p3_obj_alloc_locked(&lib->lib_mes);
	if (!me)
		return PTL_NO_SPACE;
	me->me_pt = pt;
	me->me_match_id = match_id;
	me->me_mbits = mbits;
	me->me_ibits = ibits;
	me->me_unlink = unlink;
	me->me_md = NULL;
	p3_me_link_locked(&lib->lib_ptl[pt], me, base, pos);
	if (pt_out)
		*pt_out = pt;
	*me_out = me;
	P3_DBG(lib, PTL_DBG_ME, "ME %#x on portal %u %s %s: id %u:%u bits %#llx ignore %#llx",
	       (unsigned)me->me_obj.obj_handle, (unsigned)pt,
	       pos == PTL_INS_BEFORE ? "before" : "after", base ? "base ME" : "list",
	       (unsigned)match_id.nid, (unsigned)match_id.pid, (unsigned long long)mbits,
	       (unsigned long long)ibits);
	return PTL_OK;
}

int p3_me_insert_locked(struct p3_lib *lib, ptl_handle_me_t baseh, ptl_pt_index_t pt,
			ptl_process_id_t match_id, ptl_match_bits_t mbits,
			ptl_match_bits_t ibits, ptl_unlink_t unlink, ptl_ins_pos_t pos,
			ptl_pt_index_t *pt_out, struct p3_me **me_out)
{
	struct p3_me *base = NULL;

	P3_ASSERT_LOCKED(lib);
	if (baseh != PTL_INVALID_HANDLE) {
		base = p3_obj_lookup_locked(&lib->lib_mes, baseh);
		if (!base)
			return PTL_ME_INVALID;
		pt = base->me_pt;
	} else if (pt == PTL_PT_INDEX_ANY) {
		/* PtlMEAttachAny: the first portal with an empty match list. */
		for (pt = 0; pt <= (uint32_t)lib->lib_limits.max_pt_index; pt++)
			if (!lib->lib_ptl[pt].pt_head)
				break;
		if (pt > (uint32_t)lib->lib_limits.max_pt_index)
			return PTL_PT_FULL;
	} else if (pt > (uint32_t)lib->lib_limits.max_pt_index) {
		return PTL_PT_INDEX_INVALID;
	}
	return p3_me_new_locked(lib, base, pt, match_id, mbits, ibits, unlink, pos, pt_out, me_out);
}

int p3_me_insert_base_locked(struct p3_lib *lib, struct p3_me *base, ptl_process_id_t match_id,
			     ptl_match_bits_t mbits, ptl_match_bits_t ibits, ptl_unlink_t unlink,
			     ptl_ins_pos_t pos, struct p3_me **me_out)
{
	P3_ASSERT_LOCKED(lib);
	return p3_me_new_locked(lib, base, base->me_pt, match_id, mbits, ibits, unlink, pos, NULL,
				me_out);
}

int p3_lib_me_insert(struct p3_lib *lib, ptl_handle_me_t base, ptl_pt_index_t pt,
		     ptl_process_id_t match_id, ptl_match_bits_t mbits, ptl_match_bits_t ibits,
		     ptl_unlink_t unlink, ptl_ins_pos_t pos, ptl_pt_index_t *pt_out,
		     ptl_handle_me_t *me_out)
{
	struct p3_me *me;
	int rc;

	p3_lib_lock(lib);
	rc = p3_me_insert_locked(lib, base, pt, match_id, mbits, ibits, unlink, pos, pt_out, &me);
	if (rc == PTL_OK)
		*me_out = me->me_obj.obj_handle;
	p3_lib_unlock(lib);
	return rc;
}

int p3_lib_me_unlink(struct p3_lib *lib, ptl_handle_me_t meh)
{
	struct p3_me *me;
	int rc = PTL_OK;

	p3_lib_lock(lib);
	me = p3_obj_lookup_locked(&lib->lib_mes, meh);
	if (!me) {
		rc = PTL_ME_INVALID;
	} else if (me->me_md && me->me_md->md_pending) {
		rc = PTL_ME_IN_USE;
	} else {
		/* The spec: unlinking an ME releases its MD (no UNLINK event). */
		if (me->me_md) {
			struct p3_md *md = me->me_md;
			md->md_me = NULL; /* keep destroy from recursing into the ME */
			me->me_md = NULL;
			p3_md_destroy_locked(lib, md);
		}
		p3_me_destroy_locked(lib, me);
	}
	p3_lib_unlock(lib);
	return rc;
}

/* What a queued post that is refused reports (p3_lib_me_md_post_queued). */
struct p3_post_refusal {
	const ptl_md_t *shown;
	ptl_handle_md_t named;
	ptl_process_id_t match_id; /* the ME's, in the event's initiator */
	ptl_match_bits_t ibits;    /* the ME's ignore bits, in its hdr_data */
	uint32_t seen;             /* test_eq's read sequence at the call */
};

/* The refusal event into teq. */
static void post_refused_locked(struct p3_lib *lib, struct p3_eq *teq, struct p3_me *base,
				ptl_match_bits_t mbits, const struct p3_post_refusal *q,
				struct p3_defer *d)
{
	struct p3_md shown;
	struct p3_evinfo ei;

	memset(&shown, 0, sizeof(shown));
	shown.md_obj.obj_handle = q->named;
	shown.md_user = *q->shown;
	memset(&ei, 0, sizeof(ei));
	ei.ei_initiator = q->match_id;
	ei.ei_uid = lib->lib_uid;
	ei.ei_jid = lib->lib_jid;
	ei.ei_pt = base->me_pt;
	ei.ei_mbits = mbits;
	ei.ei_hdr_data = q->ibits;
	p3_eq_write_locked(lib, teq, &shown, PTL_EVENT_UNLINK, &ei, PTL_NI_POST_REFUSED, d);
}

static int me_md_post(struct p3_lib *lib, ptl_handle_me_t baseh, ptl_process_id_t match_id,
		      ptl_match_bits_t mbits, ptl_match_bits_t ibits, ptl_unlink_t unlink,
		      ptl_ins_pos_t pos, const ptl_md_t *umd, ptl_unlink_t md_unlink,
		      ptl_handle_eq_t test_eq, const struct p3_post_refusal *queued,
		      ptl_handle_me_t *me_out, ptl_handle_md_t *md_out)
{
	struct p3_eq *teq = NULL, *eq;
	struct p3_me *base, *me;
	struct p3_md *md;
	struct p3_defer d;
	int rc;

	p3_defer_init(&d);
	p3_lib_lock(lib);
	if (test_eq != PTL_EQ_NONE) {
		teq = p3_obj_lookup_locked(&lib->lib_eqs, test_eq);
		if (!teq) {
			rc = PTL_EQ_INVALID;
			goto out;
		}
	}
	/* Validate everything before changing anything: the post is atomic.
	 * Each check once (a receive posted per message: MPI over ptl3). */
	rc = p3_md_validate_locked(lib, umd, &eq);
	if (rc != PTL_OK)
		goto out;
	base = baseh == PTL_INVALID_HANDLE ? NULL : p3_obj_lookup_locked(&lib->lib_mes, baseh);
	if (!base) {
		rc = PTL_ME_INVALID;
		goto out;
	}
	/* A queued post: no event after those the caller had read when it
	 * called (it may have read more since: "empty now" would not do). */
	if (teq && (queued ? teq->eq_owed ||
				 atomic_load(&teq->eq_ring->eqr_write_seq) != queued->seen
			   : !p3_eq_is_empty_locked(lib, teq))) {
		if (queued)
			post_refused_locked(lib, teq, base, mbits, queued, &d);
		rc = PTL_MD_NO_UPDATE;
		goto out;
	}
	md = p3_md_create_valid_locked(lib, umd, eq, md_unlink, &rc);
	if (!md)
		goto out;
	rc = p3_me_insert_base_locked(lib, base, match_id, mbits, ibits, unlink, pos, &me);
	if (rc != PTL_OK) {
		p3_md_destroy_locked(lib, md);
		goto out;
	}
	me->me_md = md;
	md->md_me = me;
	*me_out = me->me_obj.obj_handle;
	*md_out = md->md_obj.obj_handle;
out:
	p3_lib_unlock(lib);
	if (p3_defer_pending(&d))
		p3_defer_run(lib, &d);
	return rc;
}

int p3_lib_me_md_post(struct p3_lib *lib, ptl_handle_me_t baseh, ptl_process_id_t match_id,
		      ptl_match_bits_t mbits, ptl_match_bits_t ibits, ptl_unlink_t unlink,
		      ptl_ins_pos_t pos, const ptl_md_t *umd, ptl_unlink_t md_unlink,
		      ptl_handle_eq_t test_eq, ptl_handle_me_t *me_out, ptl_handle_md_t *md_out)
{
	return me_md_post(lib, baseh, match_id, mbits, ibits, unlink, pos, umd, md_unlink, test_eq,
			  NULL, me_out, md_out);
}

int p3_lib_me_md_post_queued(struct p3_lib *lib, ptl_handle_me_t base, ptl_process_id_t match_id,
			     ptl_match_bits_t mbits, ptl_match_bits_t ibits, ptl_unlink_t unlink,
			     ptl_ins_pos_t pos, const ptl_md_t *umd, ptl_unlink_t md_unlink,
			     ptl_handle_eq_t test_eq, uint32_t seen, const ptl_md_t *shown,
			     ptl_handle_md_t named, ptl_handle_me_t *me_out, ptl_handle_md_t *md_out)
{
	struct p3_post_refusal q = {
	    .shown = shown, .named = named, .match_id = match_id, .ibits = ibits, .seen = seen};

	return me_md_post(lib, base, match_id, mbits, ibits, unlink, pos, umd, md_unlink, test_eq,
			  &q, me_out, md_out);
}
