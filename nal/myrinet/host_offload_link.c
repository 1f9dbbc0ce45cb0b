/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * host_offload_link.c - offload on the host, the link to the NIC: LIB calls
 * as commands and their replies (one call at a time; posted puts and gets
 * need none), waiting on the interrupt line, noticing the NIC's death (and
 * then ending every EQ wait), and running EQ handlers on the host.
 */
#include "host_offload.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t off_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
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

int off_nic_gone(struct myri_off *o)
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

enum myri_spin off_spin_policy(const struct myri_off *o)
{
	return myri_spin_policy_env((pid_t)o->h->nic_ospid); /* P3_MYRI_SPIN, cpu_share.c */
}

void off_spin_refresh(struct myri_off *o, uint64_t now_ns)
{
	uint64_t at = atomic_load_explicit(&o->spin_at, memory_order_relaxed);
	if (now_ns - at < OFF_POLICY_REFRESH_NS ||
	    !atomic_compare_exchange_strong(&o->spin_at, &at, now_ns))
		return;
	atomic_store_explicit(&o->spin, off_spin_policy(o), memory_order_relaxed);
}

unsigned int off_spin_budget_us(void)
{
	return myri_spin_budget_env(OFF_EQ_SPIN_US); /* P3_MYRI_SPIN_US, cpu_share.c */
}

/* Block until the interrupt, the NIC's hang-up or timeout_ms. */
void off_wait_interrupt(struct myri_off *o, int timeout_ms)
{
	struct myri_host *h = o->h;
	struct pollfd p[2] = {{.fd = h->intr_fd, .events = POLLIN},
	                      {.fd = h->sock, .events = POLLIN}};
	if (poll(p, 2, timeout_ms) > 0) {
		uint64_t v;
		if ((p[0].revents & POLLIN) && read(h->intr_fd, &v, sizeof(v)) < 0)
			v = 0;
		if (p[1].revents)
			off_nic_gone(o);
	}
}

/* ---- handlers ------------------------------------------------------------- */

void off_run_handlers(struct myri_off *o)
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

int off_cmd_push(struct myri_off *o, const struct myri_cmd *cmd)
{
	struct myri_host *h = o->h;
	struct myri_ring_idx *q = &h->seg->cmdq;
	uint64_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed), t0 = off_now_ns();
	while (tail - atomic_load_explicit(&q->head, memory_order_acquire) >= MYRI_CMDQ_LEN) {
		uint64_t one = 1;
		if (off_nic_gone(o) || off_now_ns() - t0 > OFF_FULL_WAIT_NS)
			return -1;
		if (write(h->doorbell_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			return -1;
		sched_yield();
	}
	h->seg->cmd[tail % MYRI_CMDQ_LEN] = *cmd;
	atomic_store(&q->tail, tail + 1);
	/* Doorbells coalesce: the first command after the NIC went to sleep
	 * takes the word and rings; the next ones, until the NIC sets it
	 * again before its next sleep, see it clear (a doorbell per put while
	 * a sleeping NIC woke cost a system call each). */
	if (atomic_load(&h->seg->nic_sleeping) && atomic_exchange(&h->seg->nic_sleeping, 0)) {
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
			p3_lib_log(NULL, 1, "myrinet offload: a posted call failed in the NIC: %d",
			           e.status);
			continue;
		}
		if (e.token != token) {
			off_pool_on_reply(o, &e); /* a reservation asked ahead, or nobody waits */
			continue;
		}
		if (e.type == MYRI_EVT_REJECT) {
			p3_lib_log(NULL, 0, "myrinet offload: the NIC rejected a call: %s",
			           strerror(-e.status));
			e.status = PTL_FAIL;
		}
		*out = e;
		return 1;
	}
}

/* The events the NIC posted so far, without waiting (rpc_lock held):
 * answers to reservations asked ahead, failed posted calls. */
void off_take_events(struct myri_off *o)
{
	struct myri_evt e;
	take_reply(o, 0, &e); /* token 0 is never a call's */
}

/* The wait of off_wait_reply, begun at t0. */
static int wait_reply(struct myri_off *o, uint64_t token, struct myri_evt *out, uint64_t t0)
{
	struct myri_host *h = o->h;
	for (;;) {
		if (take_reply(o, token, out))
			return out->status;
		if (o->spin != MYRI_SPIN_NONE && off_now_ns() - t0 < OFF_SPIN_NS) {
			if (o->spin == MYRI_SPIN_YIELD)
				sched_yield(); /* the NIC may share this core */
			continue;
		}
		atomic_fetch_add(&h->seg->host_sleeping, 1);
		if (atomic_load(&h->seg->evtq.head) == atomic_load(&h->seg->evtq.tail))
			off_wait_interrupt(o, 1); /* 1 ms slices: another thread may take it */
		atomic_fetch_sub(&h->seg->host_sleeping, 1);
		if (atomic_load(&h->nic_dead) || off_nic_gone(o))
			return PTL_FAIL;
	}
}

/* Wait for the answer to the call with this token (rpc_lock held).  Every
 * such wait is counted in the host registers lib_waits and lib_wait_ns
 * (mcpd --counters: host_lib_waits, host_lib_wait_ns): what a posted call
 * saves, and what the host still waits for, per message. */
int off_wait_reply(struct myri_off *o, uint64_t token, struct myri_evt *out)
{
	uint64_t t0 = off_now_ns();
	int rc = wait_reply(o, token, out, t0);
	_Atomic uint64_t *hc = o->h->seg->host_counters;
	atomic_fetch_add_explicit(&hc[MYRI_H_lib_waits], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&hc[MYRI_H_lib_wait_ns], off_now_ns() - t0, memory_order_relaxed);
	return rc;
}

/* Queue a call that will be answered, without waiting (rpc_lock held):
 * its token, or 0 when it could not be queued. */
uint64_t off_call_ahead(struct myri_off *o, uint16_t lib_op, struct myri_cmd *cmd)
{
	cmd->op = MYRI_CMD_LIB;
	cmd->lib_op = lib_op;
	cmd->token = ++o->rpc_seq;
	if (off_nic_gone(o) || off_cmd_push(o, cmd) != 0)
		return 0;
	return cmd->token;
}

/* One call (rpc_lock held): the PTL_* code; results in out->hdr. */
int off_rpc_locked(struct myri_off *o, uint16_t lib_op, struct myri_cmd *cmd, struct myri_evt *out)
{
	uint64_t token = off_call_ahead(o, lib_op, cmd);
	return token ? off_wait_reply(o, token, out) : PTL_FAIL;
}

int off_rpc(struct myri_off *o, uint16_t lib_op, struct myri_cmd *cmd, struct myri_evt *out)
{
	pthread_mutex_lock(&o->rpc_lock);
	int rc = off_rpc_locked(o, lib_op, cmd, out);
	pthread_mutex_unlock(&o->rpc_lock);
	off_run_handlers(o);
	return rc;
}

/* A call whose one argument is a 64-bit value. */
int off_rpc1(struct myri_off *o, uint16_t lib_op, uint64_t a0, struct myri_evt *out)
{
	struct myri_cmd cmd;
	struct myri_evt e = {0};
	memset(&cmd, 0, sizeof(cmd));
	memcpy(cmd.hdr, &a0, sizeof(a0));
	return off_rpc(o, lib_op, &cmd, out ? out : &e);
}

uint32_t off_rep_u32(const struct myri_evt *e, int i)
{
	uint32_t v[2];
	memcpy(v, e->hdr, sizeof(v));
	return v[i];
}
