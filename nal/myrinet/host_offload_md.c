/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * host_offload_md.c - offload on the host, MD memory: the registration run
 * a call that creates an MD names (held while the MD lives, reclaimed after
 * LIB_HANDLE_CHECK says the NIC freed it), and what the host knows of each
 * MD it created, which decides whether a put or get may be posted.
 */
#include "host_offload.h"

#include <stdlib.h>
#include <string.h>

/* ---- MD registration (rpc_lock held) -------------------------------------- */

/* The MD record naming run i (its run1 is i + 1), or NULL. */
static struct off_md *run_owner(struct myri_off *o, uint32_t i)
{
	ptl_handle_md_t md = o->runs[i].md;
	struct off_md *r = md != PTL_INVALID_HANDLE ? off_md_rec(o, md) : NULL;
	return r && r->h == md && r->run1 == i + 1 ? r : NULL;
}

static void run_release(struct myri_off *o, uint32_t i)
{
	struct myri_host *h = o->h;
	struct off_md *r = run_owner(o, i);
	if (r)
		r->run1 = 0;
	for (uint32_t k = 0; k < o->runs[i].n; k++) {
		uint32_t e = (o->runs[i].first + k) % MYRI_NREG;
		h->seg->reg[e].valid = 0;
		h->reg_busy[e] = 0;
	}
	uint32_t last = --o->nruns;
	if (i != last) { /* the last run moves to i: its MD's record follows */
		struct off_md *m = run_owner(o, last);
		o->runs[i] = o->runs[last];
		if (m)
			m->run1 = i + 1;
	}
}

/* An MD's run goes: found through its record (one run per MD), or, for an
 * MD the host holds no record of, by looking at every run. */
void off_runs_drop_md(struct myri_off *o, ptl_handle_md_t md)
{
	struct off_md *r = off_md_rec(o, md);
	if (r && r->h == md) {
		if (r->run1)
			run_release(o, r->run1 - 1);
		return;
	}
	for (uint32_t i = 0; i < o->nruns;)
		if (o->runs[i].md == md)
			run_release(o, i);
		else
			i++;
}

/* Give back the entries of MDs the NIC has freed (auto-unlink, ME unlink). */
static void runs_reclaim(struct myri_off *o)
{
	for (uint32_t i = 0; i < o->nruns;) {
		struct myri_cmd cmd;
		struct myri_evt e;
		uint64_t a0 = o->runs[i].md;
		memset(&cmd, 0, sizeof(cmd));
		memcpy(cmd.hdr, &a0, sizeof(a0));
		if (off_rpc_locked(o, MYRI_LIB_HANDLE_CHECK, &cmd, &e) == PTL_HANDLE_INVALID)
			run_release(o, i);
		else
			i++;
	}
}

static int reg_find(struct myri_off *o, uint32_t n, uint32_t *start)
{
	struct myri_host *h = o->h;
	for (uint32_t tries = 0; tries < MYRI_NREG; tries++) {
		uint32_t s = (h->reg_next + tries) % MYRI_NREG, ok = 1;
		for (uint32_t i = 0; i < n && ok; i++)
			ok = !h->reg_busy[(s + i) % MYRI_NREG];
		if (ok) {
			*start = s;
			return 0;
		}
	}
	return -1;
}

/* Register md's memory as the command's run (see myri_dev.h).  PTL_OK, or
 * the code the call fails with. */
int off_reg_md(struct myri_off *o, const ptl_md_t *md, struct myri_cmd *cmd)
{
	struct myri_host *h = o->h;
	int is_iov = (md->options & PTL_MD_IOVEC) != 0;
	uint64_t n = is_iov ? md->length : md->length ? 1 : 0;
	cmd->nreg = 0;
	if (n == 0)
		return PTL_OK;
	if (n > MYRI_MAX_RUN || (is_iov && !md->start))
		return PTL_MD_ILLEGAL;
	uint32_t start;
	if (reg_find(o, (uint32_t)n, &start) != 0) {
		runs_reclaim(o);
		if (reg_find(o, (uint32_t)n, &start) != 0)
			return PTL_NO_SPACE;
	}
	if (o->nruns == o->cap) {
		uint32_t cap = o->cap ? 2 * o->cap : 64;
		struct off_run *r = realloc(o->runs, cap * sizeof(*r));
		if (!r)
			return PTL_NO_SPACE;
		o->runs = r;
		o->cap = cap;
	}
	uint32_t key = ++h->key_next ? h->key_next : ++h->key_next;
	const ptl_md_iovec_t *iov = md->start;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t r = (start + i) % MYRI_NREG;
		struct myri_reg *e = &h->seg->reg[r];
		h->reg_busy[r] = 1;
		e->addr = (uint64_t)(uintptr_t)(is_iov ? iov[i].iov_base : md->start);
		e->len = is_iov ? iov[i].iov_len : md->length;
		e->key = key;
		e->valid = 1;
	}
	h->reg_next = (start + (uint32_t)n) % MYRI_NREG;
	o->runs[o->nruns++] = (struct off_run){start, (uint32_t)n, PTL_INVALID_HANDLE};
	cmd->reg_first = start;
	cmd->nreg = (uint16_t)n;
	cmd->key = key;
	return PTL_OK;
}

/* The run just registered (last in the table) now belongs to md, or goes. */
void off_reg_settle(struct myri_off *o, const struct myri_cmd *cmd, int rc, ptl_handle_md_t md)
{
	if (!cmd->nreg)
		return;
	if (rc == PTL_OK)
		o->runs[o->nruns - 1].md = md;
	else
		run_release(o, o->nruns - 1);
}

/* ---- MD records (rpc_lock held) ----------------------------------------- */

struct off_md *off_md_rec(struct myri_off *o, ptl_handle_md_t md)
{
	uint32_t i = p3_handle_idx(md);
	return i < o->nmds ? &o->mds[i] : NULL;
}

void off_md_note(struct myri_off *o, ptl_handle_md_t mdh, ptl_handle_me_t me, const ptl_md_t *md)
{
	struct off_md *r = off_md_rec(o, mdh);
	if (!r)
		return;
	uint64_t bytes = md->length;
	if (md->options & PTL_MD_IOVEC) {
		const ptl_md_iovec_t *iov = md->start;
		bytes = 0;
		for (uint64_t i = 0; i < md->length; i++)
			bytes += iov[i].iov_len;
	}
	/* the slot was reused: its old MD is gone, and so is its run (released
	 * once the new record is in place: the release may move the new run) */
	uint32_t old_run1 = r->h && r->h != mdh ? r->run1 : 0;
	uint32_t run1 = r->h == mdh ? r->run1 : 0;
	/* the run just registered (last) for this MD, if any */
	if (o->nruns && o->runs[o->nruns - 1].md == mdh)
		run1 = o->nruns;
	*r = (struct off_md){.h = mdh,
	                     .me = me,
	                     .bytes = bytes,
	                     .threshold = md->threshold,
	                     .run1 = run1,
	                     .max_size = (md->options & PTL_MD_MAX_SIZE) != 0};
	if (old_run1)
		run_release(o, old_run1 - 1);
}

void off_md_forget(struct myri_off *o, ptl_handle_md_t mdh)
{
	struct off_md *r = off_md_rec(o, mdh);
	if (r && r->h == mdh)
		*r = (struct off_md){0};
}

/* PtlMEUnlink frees the ME's MD too. */
void off_md_forget_me(struct myri_off *o, ptl_handle_me_t me)
{
	for (uint32_t i = 0; i < o->nmds; i++)
		if (o->mds[i].h && o->mds[i].me == me)
			o->mds[i] = (struct off_md){0};
}

/* A put or get on mdh that LIB would accept: an MD the host created and did
 * not unlink, no MAX_SIZE, and threshold left even if every operation the
 * host started on it (a put and its ack, a get's reply) has taken its share
 * (a finite threshold; README §2.2 "Posted calls" on remote operations). */
int off_md_can_post(struct myri_off *o, ptl_handle_md_t mdh, int whole, uint64_t off, uint64_t len)
{
	struct off_md *r = off_md_rec(o, mdh);
	if (!r || r->h != mdh || r->max_size || r->unlinked)
		return 0;
	if (r->threshold != PTL_MD_THRESH_INF && r->used >= (uint32_t)r->threshold)
		return 0;
	return whole || (off <= r->bytes && len <= r->bytes - off);
}

/* The host started an operation on mdh that may take n of its threshold. */
void off_md_used(struct myri_off *o, ptl_handle_md_t mdh, uint32_t n)
{
	struct off_md *r = off_md_rec(o, mdh);
	if (r && r->h == mdh)
		r->used += n;
}

void off_md_wire(const ptl_md_t *m, struct myri_md *w)
{
	memset(w, 0, sizeof(*w));
	w->start = (uint64_t)(uintptr_t)m->start;
	w->length = m->length;
	w->max_size = m->max_size;
	w->user_ptr = (uint64_t)(uintptr_t)m->user_ptr;
	w->threshold = m->threshold;
	w->options = m->options;
	w->eq_handle = m->eq_handle;
}
