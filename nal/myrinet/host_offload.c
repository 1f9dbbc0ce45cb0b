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
#include "myri_host.h"

#include "handle.h"
#include "lib_iface.h"
#include "runtime.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define OFF_SPIN_NS      20000         /* spin for a reply before blocking */
#define OFF_FULL_WAIT_NS 2000000000ull /* command queue full this long: fail */

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
	int always_active; /* threshold infinite, no MAX_SIZE: never inactive, never auto-unlinked
	                    */
};

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
	pthread_mutex_t hd_lock; /* handler table */
	struct off_eq *eqs;      /* by EQ index, limits.max_eqs */
	uint32_t neqs;
	_Atomic int nhandlers;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct myri_off *OFF(struct p3_lib *lib)
{
	return (struct myri_off *)(void *)lib;
}

/* ---- the NIC's health ------------------------------------------------------ */

/* The NIC died with LIB and every operation in flight: nothing will post
 * to the EQs again.  The host, now their only writer, posts one event to
 * each: PTL_EVENT_UNLINK, ni_fail_type PTL_NI_FAIL, md_handle
 * PTL_INVALID_HANDLE, so that a waiter learns it at once instead of
 * waiting forever. */
static void post_death_events(struct myri_off *o)
{
	pthread_mutex_lock(&o->hd_lock);
	for (uint32_t i = 0; i < o->neqs; i++) {
		struct off_eq *e = &o->eqs[i];
		if (!e->ring)
			continue;
		uint32_t seq;
		ptl_event_t *ev = p3_eq_ring_write_begin(e->ring, e->mask, &seq);
		memset((char *)ev + sizeof(ev->sequence), 0, sizeof(*ev) - sizeof(ev->sequence));
		ev->type = PTL_EVENT_UNLINK;
		ev->md_handle = PTL_INVALID_HANDLE;
		ev->ni_fail_type = PTL_NI_FAIL;
		p3_eq_ring_write_end(e->ring, ev, seq);
	}
	pthread_mutex_unlock(&o->hd_lock);
}

static int nic_gone(struct myri_off *o)
{
	struct myri_host *h = o->h;
	if (atomic_load(&h->nic_dead))
		return 1;
	struct pollfd p = {.fd = h->sock, .events = POLLIN};
	if (poll(&p, 1, 0) > 0 && p.revents) {
		if (!atomic_exchange(&h->nic_dead, 1)) {
			p3_lib_log(
			    NULL, 0,
			    "myrinet offload: the NIC (mcpd pid %u) is gone; every EQ gets a "
			    "PTL_NI_FAIL event and Portals calls fail from now on",
			    h->nic_ospid);
			post_death_events(o);
		}
		return 1;
	}
	return 0;
}

/* Block until the interrupt, the NIC's hang-up or timeout_ms. */
static void wait_interrupt(struct myri_off *o, int timeout_ms)
{
	struct myri_host *h = o->h;
	struct pollfd p[2] = {{.fd = h->intr_fd, .events = POLLIN},
	                      {.fd = h->sock, .events = POLLIN}};
	if (poll(p, 2, timeout_ms) > 0) {
		uint64_t v;
		if ((p[0].revents & POLLIN) && read(h->intr_fd, &v, sizeof(v)) < 0)
			v = 0;
		if (p[1].revents)
			nic_gone(o);
	}
}

/* ---- handlers ------------------------------------------------------------- */

static void run_handlers(struct myri_off *o)
{
	if (!atomic_load_explicit(&o->nhandlers, memory_order_relaxed) ||
	    pthread_mutex_trylock(&o->hd_lock) != 0)
		return;
	for (uint32_t i = 0; i < o->neqs; i++) {
		struct off_eq *e = &o->eqs[i];
		if (!e->handler)
			continue;
		uint32_t w = atomic_load_explicit(&e->ring->eqr_write_seq, memory_order_acquire);
		if (w - e->cursor > e->mask + 1)
			e->cursor =
			    w - (e->mask + 1); /* lapped: those are lost to the handler too */
		while (e->cursor != w) {
			const ptl_event_t *slot = &e->ring->eqr_slots[e->cursor & e->mask];
			ptl_event_t ev;
			if (__atomic_load_n(&slot->sequence, __ATOMIC_ACQUIRE) != e->cursor)
				break;
			memcpy(&ev, slot, sizeof(ev));
			atomic_thread_fence(memory_order_acquire);
			if (__atomic_load_n(&slot->sequence, __ATOMIC_RELAXED) != e->cursor)
				break;
			e->cursor++;
			e->handler(&ev);
		}
	}
	pthread_mutex_unlock(&o->hd_lock);
}

/* ---- calls ------------------------------------------------------------------ */

static int cmd_push(struct myri_off *o, const struct myri_cmd *cmd)
{
	struct myri_host *h = o->h;
	struct myri_ring_idx *q = &h->seg->cmdq;
	uint64_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed), t0 = now_ns();
	while (tail - atomic_load_explicit(&q->head, memory_order_acquire) >= MYRI_CMDQ_LEN) {
		uint64_t one = 1;
		if (nic_gone(o) || now_ns() - t0 > OFF_FULL_WAIT_NS)
			return -1;
		if (write(h->doorbell_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			return -1;
		sched_yield();
	}
	h->seg->cmd[tail % MYRI_CMDQ_LEN] = *cmd;
	atomic_store(&q->tail, tail + 1);
	if (atomic_load(&h->seg->nic_sleeping)) {
		uint64_t one = 1;
		if (write(h->doorbell_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			return -1;
	}
	return 0;
}

/* Take events until the reply to token: 1 with *out, 0 none yet. */
static int take_reply(struct myri_off *o, uint64_t token, struct myri_evt *out)
{
	struct myri_ring_idx *q = &o->h->seg->evtq;
	for (;;) {
		uint64_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
		if (head == atomic_load_explicit(&q->tail, memory_order_acquire))
			return 0;
		struct myri_evt e = o->h->seg->evt[head % MYRI_EVTQ_LEN];
		atomic_store_explicit(&q->head, head + 1, memory_order_release);
		if (e.token & OFF_POSTED_TOKEN) { /* a posted call failed after all */
			p3_lib_log(NULL, 1,
			           "myrinet offload: a posted put/get failed in the NIC: %d",
			           e.status);
			continue;
		}
		if (e.token != token)
			continue; /* a reply to a call that gave up: nobody waits */
		if (e.type == MYRI_EVT_REJECT) {
			p3_lib_log(NULL, 0, "myrinet offload: the NIC rejected a call: %s",
			           strerror(-e.status));
			e.status = PTL_FAIL;
		}
		*out = e;
		return 1;
	}
}

/* One call (rpc_lock held): the PTL_* code; results in out->hdr. */
static int rpc_locked(struct myri_off *o, uint16_t lib_op, struct myri_cmd *cmd,
                      struct myri_evt *out)
{
	struct myri_host *h = o->h;
	cmd->op = MYRI_CMD_LIB;
	cmd->lib_op = lib_op;
	cmd->token = ++o->rpc_seq;
	if (nic_gone(o) || cmd_push(o, cmd) != 0)
		return PTL_FAIL;
	uint64_t t0 = now_ns();
	for (;;) {
		if (take_reply(o, cmd->token, out))
			return out->status;
		if (now_ns() - t0 < OFF_SPIN_NS)
			continue;
		atomic_fetch_add(&h->seg->host_sleeping, 1);
		if (atomic_load(&h->seg->evtq.head) == atomic_load(&h->seg->evtq.tail))
			wait_interrupt(o, 1); /* 1 ms slices: another thread may take it */
		atomic_fetch_sub(&h->seg->host_sleeping, 1);
		if (atomic_load(&h->nic_dead) || nic_gone(o))
			return PTL_FAIL;
	}
}

static int rpc(struct myri_off *o, uint16_t lib_op, struct myri_cmd *cmd, struct myri_evt *out)
{
	pthread_mutex_lock(&o->rpc_lock);
	int rc = rpc_locked(o, lib_op, cmd, out);
	pthread_mutex_unlock(&o->rpc_lock);
	run_handlers(o);
	return rc;
}

/* A call whose one argument is a 64-bit value. */
static int rpc1(struct myri_off *o, uint16_t lib_op, uint64_t a0, struct myri_evt *out)
{
	struct myri_cmd cmd;
	struct myri_evt e = {0};
	memset(&cmd, 0, sizeof(cmd));
	memcpy(cmd.hdr, &a0, sizeof(a0));
	return rpc(o, lib_op, &cmd, out ? out : &e);
}

static uint32_t rep_u32(const struct myri_evt *e, int i)
{
	uint32_t v[2];
	memcpy(v, e->hdr, sizeof(v));
	return v[i];
}

/* ---- MD registration (rpc_lock held) -------------------------------------- */

static void run_release(struct myri_off *o, uint32_t i)
{
	struct myri_host *h = o->h;
	for (uint32_t k = 0; k < o->runs[i].n; k++) {
		uint32_t r = (o->runs[i].first + k) % MYRI_NREG;
		h->seg->reg[r].valid = 0;
		h->reg_busy[r] = 0;
	}
	o->runs[i] = o->runs[--o->nruns];
}

static void runs_drop_md(struct myri_off *o, ptl_handle_md_t md)
{
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
		if (rpc_locked(o, MYRI_LIB_HANDLE_CHECK, &cmd, &e) == PTL_HANDLE_INVALID)
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
static int reg_md(struct myri_off *o, const ptl_md_t *md, struct myri_cmd *cmd)
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
static void reg_settle(struct myri_off *o, const struct myri_cmd *cmd, int rc, ptl_handle_md_t md)
{
	if (!cmd->nreg)
		return;
	if (rc == PTL_OK)
		o->runs[o->nruns - 1].md = md;
	else
		run_release(o, o->nruns - 1);
}

/* ---- MD records (rpc_lock held) ----------------------------------------- */

static struct off_md *md_rec(struct myri_off *o, ptl_handle_md_t md)
{
	uint32_t i = p3_handle_idx(md);
	return i < o->nmds ? &o->mds[i] : NULL;
}

static void md_note(struct myri_off *o, ptl_handle_md_t mdh, ptl_handle_me_t me, const ptl_md_t *md)
{
	struct off_md *r = md_rec(o, mdh);
	if (!r)
		return;
	uint64_t bytes = md->length;
	if (md->options & PTL_MD_IOVEC) {
		const ptl_md_iovec_t *iov = md->start;
		bytes = 0;
		for (uint64_t i = 0; i < md->length; i++)
			bytes += iov[i].iov_len;
	}
	*r = (struct off_md){.h = mdh,
	                     .me = me,
	                     .bytes = bytes,
	                     .always_active = md->threshold == PTL_MD_THRESH_INF &&
	                                      !(md->options & PTL_MD_MAX_SIZE)};
}

static void md_forget(struct myri_off *o, ptl_handle_md_t mdh)
{
	struct off_md *r = md_rec(o, mdh);
	if (r && r->h == mdh)
		*r = (struct off_md){0};
}

/* PtlMEUnlink frees the ME's MD too. */
static void md_forget_me(struct myri_off *o, ptl_handle_me_t me)
{
	for (uint32_t i = 0; i < o->nmds; i++)
		if (o->mds[i].h && o->mds[i].me == me)
			o->mds[i] = (struct off_md){0};
}

/* A put or get on mdh that LIB would certainly accept. */
static int md_can_post(struct myri_off *o, ptl_handle_md_t mdh, int whole, uint64_t off,
                       uint64_t len)
{
	struct off_md *r = md_rec(o, mdh);
	if (!r || r->h != mdh || !r->always_active)
		return 0;
	return whole || (off <= r->bytes && len <= r->bytes - off);
}

static void md_wire(const ptl_md_t *m, struct myri_md *w)
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
	rc = rpc(o, MYRI_LIB_OPEN, &cmd, &e);
	struct myri_lib_open_rep rep;
	memcpy(&rep, e.hdr, sizeof(rep));
	if (rc == PTL_OK && (!(o->eqs = calloc((size_t)rep.limits[2] + 1, sizeof(*o->eqs))) ||
	                     !(o->mds = calloc((size_t)rep.limits[1] + 1, sizeof(*o->mds)))))
		rc = PTL_NO_SPACE;
	if (rc != PTL_OK) {
		myri_host_free(o->h);
		free(o->eqs);
		free(o->mds);
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
	rpc1(o, MYRI_LIB_CLOSE, 0, NULL);
	myri_host_free(o->h); /* the hang-up detaches the endpoint */
	pthread_mutex_destroy(&o->rpc_lock);
	pthread_mutex_destroy(&o->hd_lock);
	free(o->runs);
	free(o->eqs);
	free(o->mds);
	free(o);
}

static int off_status(struct p3_lib *lib, ptl_sr_index_t reg, ptl_sr_value_t *value)
{
	struct myri_evt e;
	int rc = rpc1(OFF(lib), MYRI_LIB_STATUS, reg, &e);
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
	return rpc1(OFF(lib), MYRI_LIB_DEBUG, mask, &e) == PTL_OK ? rep_u32(&e, 0) : 0;
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
	run_handlers(o);
	if (timeout_ms == 0) {
		uint64_t t = now_ns();
		if (t - last > 1000000u) { /* a dead NIC is noticed within 1 ms of polling */
			last = t;
			nic_gone(o);
		}
		return PTL_OK;
	}
	if (!atomic_load(&o->h->nic_dead))
		wait_interrupt(o, timeout_ms);
	else /* nothing will come: a waiter sleeps, in short slices, never spins */
		poll(NULL, 0, timeout_ms < 0 || timeout_ms > 10 ? 10 : timeout_ms);
	run_handlers(o);
	return PTL_OK;
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
	memset(&cmd, 0, sizeof(cmd));
	memcpy(cmd.hdr, &a, sizeof(a));
	int rc = rpc(OFF(lib), MYRI_LIB_ME_INSERT, &cmd, &e);
	if (rc == PTL_OK) {
		if (pt_out)
			*pt_out = rep_u32(&e, 0);
		*me_out = rep_u32(&e, 1);
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
	int rc = rpc_locked(o, MYRI_LIB_ME_UNLINK, &cmd, &e);
	if (rc == PTL_OK)
		md_forget_me(o, me);
	pthread_mutex_unlock(&o->rpc_lock);
	return rc;
}

static int off_me_md_post(struct p3_lib *lib, ptl_handle_me_t base, ptl_process_id_t match_id,
                          ptl_match_bits_t mbits, ptl_match_bits_t ibits, ptl_unlink_t unlink,
                          ptl_ins_pos_t pos, const ptl_md_t *md, ptl_unlink_t md_unlink,
                          ptl_handle_eq_t test_eq, ptl_handle_me_t *me_out, ptl_handle_md_t *md_out)
{
	struct myri_off *o = OFF(lib);
	struct myri_lib_me a = {.mbits = mbits,
	                        .ibits = ibits,
	                        .base = base,
	                        .match_nid = match_id.nid,
	                        .match_pid = match_id.pid,
	                        .unlink = unlink,
	                        .pos = pos,
	                        .md_unlink = md_unlink,
	                        .test_eq = test_eq};
	struct myri_cmd cmd;
	struct myri_evt e = {0};
	memset(&cmd, 0, sizeof(cmd));
	md_wire(md, &a.md);
	memcpy(cmd.hdr, &a, sizeof(a));
	pthread_mutex_lock(&o->rpc_lock);
	int rc = reg_md(o, md, &cmd);
	if (rc == PTL_OK) {
		rc = rpc_locked(o, MYRI_LIB_ME_MD_POST, &cmd, &e);
		reg_settle(o, &cmd, rc, rep_u32(&e, 1));
		if (rc == PTL_OK)
			md_note(o, rep_u32(&e, 1), rep_u32(&e, 0), md);
	}
	pthread_mutex_unlock(&o->rpc_lock);
	if (rc == PTL_OK) {
		*me_out = rep_u32(&e, 0);
		*md_out = rep_u32(&e, 1);
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
	memset(&cmd, 0, sizeof(cmd));
	md_wire(md, &a.md);
	memcpy(cmd.hdr, &a, sizeof(a));
	pthread_mutex_lock(&o->rpc_lock);
	int rc = reg_md(o, md, &cmd);
	if (rc == PTL_OK) {
		rc = rpc_locked(o, MYRI_LIB_MD_ATTACH, &cmd, &e);
		reg_settle(o, &cmd, rc, rep_u32(&e, 0));
		if (rc == PTL_OK)
			md_note(o, rep_u32(&e, 0), me, md);
	}
	pthread_mutex_unlock(&o->rpc_lock);
	if (rc == PTL_OK)
		*md_out = rep_u32(&e, 0);
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
	int rc = rpc_locked(o, MYRI_LIB_MD_UNLINK, &cmd, &e);
	if (rc == PTL_OK) {
		runs_drop_md(o, md);
		md_forget(o, md);
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
		md_wire(new_md, &a.md);
	memcpy(cmd.hdr, &a, sizeof(a));
	pthread_mutex_lock(&o->rpc_lock);
	int rc = new_md ? reg_md(o, new_md, &cmd) : PTL_OK;
	if (rc == PTL_OK) {
		rc = rpc_locked(o, MYRI_LIB_MD_UPDATE, &cmd, &e);
		if (rc == PTL_OK && new_md) { /* the old memory is released, the new kept */
			struct off_run keep =
			    cmd.nreg ? o->runs[o->nruns - 1] : (struct off_run){0};
			if (cmd.nreg)
				o->nruns--;
			runs_drop_md(o, mdh);
			if (cmd.nreg) {
				keep.md = mdh;
				o->runs[o->nruns++] = keep;
			}
			struct off_md *r = md_rec(o, mdh);
			if (r && r->h == mdh)
				md_note(o, mdh, r->me, new_md);
		} else if (new_md) {
			reg_settle(o, &cmd, PTL_FAIL, mdh);
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
	run_handlers(o);
	return rc;
}

static int off_eq_alloc(struct p3_lib *lib, ptl_size_t count, ptl_eq_handler_t handler,
                        ptl_handle_eq_t *eq_out, struct p3_eq_ring **ring_out)
{
	struct myri_off *o = OFF(lib);
	struct myri_evt e;
	int rc = rpc1(o, MYRI_LIB_EQ_ALLOC, count, &e);
	if (rc != PTL_OK)
		return rc;
	ptl_handle_eq_t eq = rep_u32(&e, 0);
	uint64_t off = rep_u32(&e, 1);
	struct p3_eq_ring *ring = (struct p3_eq_ring *)(void *)(o->h->arena + off);
	/* the NIC's word, checked: the ring must lie in the arena */
	if (off + sizeof(*ring) > MYRI_ARENA_LEN ||
	    off + p3_eq_ring_bytes(ring->eqr_count) > MYRI_ARENA_LEN ||
	    ring->eqr_magic != P3_EQ_RING_MAGIC || atomic_load(&ring->eqr_handle) != eq) {
		rpc1(o, MYRI_LIB_EQ_FREE, eq, NULL);
		return PTL_FAIL;
	}
	uint32_t i = p3_handle_idx(eq), slots = ring->eqr_count;
	if (i >= o->neqs || !slots || (slots & (slots - 1))) {
		rpc1(o, MYRI_LIB_EQ_FREE, eq, NULL);
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
	return rpc1(o, MYRI_LIB_EQ_FREE, eq, NULL);
}

static int off_ac_entry(struct p3_lib *lib, ptl_ac_index_t ac, ptl_process_id_t match_id,
                        ptl_uid_t uid, ptl_jid_t jid, ptl_pt_index_t pt)
{
	struct myri_lib_ac a = {ac, match_id.nid, match_id.pid, uid, jid, pt};
	struct myri_cmd cmd;
	struct myri_evt e = {0};
	memset(&cmd, 0, sizeof(cmd));
	memcpy(cmd.hdr, &a, sizeof(a));
	return rpc(OFF(lib), MYRI_LIB_AC_ENTRY, &cmd, &e);
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
	pthread_mutex_lock(&o->rpc_lock);
	if (op != MYRI_LIB_GETPUT &&
	    md_can_post(o, a->md, (int)a->whole, a->local_offset, a->length)) {
		cmd.op = MYRI_CMD_LIB;
		cmd.lib_op = op;
		cmd.nic_token = MYRI_LIB_POSTED;
		cmd.token = ++o->rpc_seq | OFF_POSTED_TOKEN;
		int rc = atomic_load(&o->h->nic_dead) || cmd_push(o, &cmd) != 0 ? PTL_FAIL : PTL_OK;
		pthread_mutex_unlock(&o->rpc_lock);
		run_handlers(o);
		return rc;
	}
	int rc = rpc_locked(o, op, &cmd, &e);
	pthread_mutex_unlock(&o->rpc_lock);
	run_handlers(o);
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
	return rpc1(OFF(lib), MYRI_LIB_HANDLE_CHECK, h, NULL);
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
    .me_md_post = off_me_md_post,
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
};
