/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * host_io.c - the myrinet NAL's data path: memory registration runs,
 * command posting (with the doorbell only when the NIC sleeps), the event
 * loop that hands headers to LIB and completions to p3_lib_finalize, and
 * the NIC's death (every operation in flight fails at once).
 */
#include "myri_host.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MYRI_FULL_WAIT_MS 2000  /* a command queue full this long: -EAGAIN */
#define MYRI_SPIN_NS      20000 /* spin on the event queue before blocking */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- registration (cmd_lock held) --------------------------------------- */

static void reg_free(struct myri_host *h, uint32_t first, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		uint32_t r = (first + i) % MYRI_NREG;
		h->seg->reg[r].valid = 0; /* revoked before it is reused */
		h->reg_busy[r] = 0;
	}
}

/* Register the iov elements that hold [offset, offset + len) as one run of
 * consecutive entries with one fresh key; fills the run fields of cmd. */
static int reg_run(struct myri_host *h, struct myri_cmd *cmd, const struct iovec *iov, size_t niov,
                   uint64_t offset, uint64_t len)
{
	cmd->nreg = 0;
	cmd->reg_first = 0;
	cmd->offset = 0;
	cmd->len = len;
	if (len == 0)
		return 0;
	size_t first = 0;
	while (first < niov && offset >= iov[first].iov_len)
		offset -= iov[first++].iov_len;
	size_t last = first;
	uint64_t have = 0;
	while (last < niov && (have += iov[last].iov_len) < offset + len)
		last++;
	if (last >= niov)
		return -EINVAL;
	uint32_t n = (uint32_t)(last - first + 1);
	if (n > MYRI_MAX_RUN)
		return -EMSGSIZE;
	for (uint32_t tries = 0; tries < MYRI_NREG; tries++) {
		uint32_t start = (h->reg_next + tries) % MYRI_NREG, ok = 1;
		for (uint32_t i = 0; i < n && ok; i++)
			ok = !h->reg_busy[(start + i) % MYRI_NREG];
		if (!ok)
			continue;
		uint32_t key = ++h->key_next ? h->key_next : ++h->key_next;
		for (uint32_t i = 0; i < n; i++) {
			uint32_t r = (start + i) % MYRI_NREG;
			struct myri_reg *e = &h->seg->reg[r];
			h->reg_busy[r] = 1;
			e->addr = (uint64_t)(uintptr_t)iov[first + i].iov_base;
			e->len = iov[first + i].iov_len;
			e->key = key;
			e->valid = 1;
		}
		h->reg_next = (start + n) % MYRI_NREG;
		cmd->reg_first = start;
		cmd->nreg = (uint16_t)n;
		cmd->key = key;
		cmd->offset = offset;
		return 0;
	}
	return -ENOSPC;
}

/* ---- slots (cmd_lock held) ---------------------------------------------- */

static int slot_alloc(struct myri_host *h, struct p3_msg *msg, uint64_t *token)
{
	for (uint32_t i = 0; i < MYRI_HOST_SLOTS; i++) {
		uint32_t s = (h->slot_next + i) % MYRI_HOST_SLOTS;
		struct myri_slot *sl = &h->slots[s];
		if (sl->in_use)
			continue;
		sl->in_use = 1;
		sl->msg = msg;
		sl->gen++;
		sl->nreg = 0;
		h->slot_next = (s + 1) % MYRI_HOST_SLOTS;
		*token = ((uint64_t)sl->gen << 32) | s;
		return (int)s;
	}
	return -ENOSPC;
}

/* Take the operation of token out of the table: its msg, or NULL if the
 * token is unknown (already failed by myri_fail_all). */
static struct p3_msg *slot_take(struct myri_host *h, uint64_t token, uint64_t *rx_token)
{
	uint32_t s = (uint32_t)token;
	struct p3_msg *msg = NULL;
	pthread_mutex_lock(&h->cmd_lock);
	if (s < MYRI_HOST_SLOTS && h->slots[s].in_use && h->slots[s].gen == token >> 32) {
		struct myri_slot *sl = &h->slots[s];
		reg_free(h, sl->reg_first, sl->nreg);
		msg = sl->msg;
		*rx_token = sl->rx_token;
		sl->in_use = 0;
	}
	pthread_mutex_unlock(&h->cmd_lock);
	return msg;
}

/* ---- the command queue (cmd_lock held) --------------------------------- */

static int cmd_push(struct myri_host *h, const struct myri_cmd *cmd)
{
	struct myri_ring_idx *q = &h->seg->cmdq;
	uint64_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
	uint64_t t0 = 0;
	while (tail - atomic_load_explicit(&q->head, memory_order_acquire) >= MYRI_CMDQ_LEN) {
		if (atomic_load(&h->nic_dead))
			return -ENETDOWN;
		uint64_t one = 1, t = now_ns();
		if (!t0)
			t0 = t;
		else if (t - t0 > (uint64_t)MYRI_FULL_WAIT_MS * 1000000u)
			return -EAGAIN;
		if (write(h->doorbell_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			return -errno;
		sched_yield();
	}
	h->seg->cmd[tail % MYRI_CMDQ_LEN] = *cmd;
	atomic_store(&q->tail, tail + 1);
	if (atomic_load(&h->seg->nic_sleeping)) {
		uint64_t one = 1;
		if (write(h->doorbell_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			return -errno;
	}
	return 0;
}

static int drain_events_locked(struct myri_host *h);
#define MYRI_FULL_WAIT_NS ((uint64_t)MYRI_FULL_WAIT_MS * 1000000u)

/* Post an operation that completes with an event: slot, run, command. */
static int post_op_once(struct myri_host *h, struct p3_msg *msg, struct myri_cmd *cmd,
                        const struct iovec *iov, size_t niov, uint64_t offset, uint64_t len)
{
	if (atomic_load(&h->nic_dead) || h->stopped)
		return -ENETDOWN;
	pthread_mutex_lock(&h->cmd_lock);
	int s = slot_alloc(h, msg, &cmd->token);
	int rc = s < 0 ? s : reg_run(h, cmd, iov, niov, offset, len);
	if (rc == 0) {
		h->slots[s].reg_first = cmd->reg_first;
		h->slots[s].nreg = cmd->nreg;
		h->slots[s].rx_token = cmd->op == MYRI_CMD_DELIVER ? cmd->nic_token : 0;
		rc = cmd_push(h, cmd);
	}
	if (rc && s >= 0) {
		reg_free(h, h->slots[s].reg_first, h->slots[s].nreg);
		h->slots[s].in_use = 0;
	}
	pthread_mutex_unlock(&h->cmd_lock);
	return rc;
}

/* Slots or registration entries all taken: completions free them, so take
 * the events in (unless this thread is already doing so: LIB calls send()
 * from inside the event loop) and try again, for MYRI_FULL_WAIT_MS. */
static int post_op(struct myri_host *h, struct p3_msg *msg, struct myri_cmd *cmd,
                   const struct iovec *iov, size_t niov, uint64_t offset, uint64_t len)
{
	uint64_t t0 = 0;
	for (;;) {
		int rc = post_op_once(h, msg, cmd, iov, niov, offset, len);
		if (rc != -ENOSPC)
			return rc;
		uint64_t t = now_ns();
		if (!t0)
			t0 = t;
		else if (t - t0 > MYRI_FULL_WAIT_NS)
			return rc;
		if (pthread_mutex_trylock(&h->evt_lock) == 0) {
			drain_events_locked(h);
			pthread_mutex_unlock(&h->evt_lock);
		} else {
			sched_yield();
		}
	}
}

int myri_send(void *priv, struct p3_msg *msg, const struct p3_hdr *hdr, const struct iovec *iov,
              size_t niov, uint64_t offset, uint64_t len)
{
	struct myri_host *h = priv;
	struct myri_cmd cmd;
	memset(&cmd, 0, sizeof(cmd));
	cmd.op = MYRI_CMD_SEND;
	cmd.dst_nid = hdr->dst.nid;
	cmd.dst_pid = hdr->dst.pid;
	p3_hdr_pack(hdr, cmd.hdr);
	return post_op(h, msg, &cmd, iov, niov, offset, len);
}

int myri_recv(void *priv, struct p3_msg *msg, void *nal_ctx, const struct iovec *iov, size_t niov,
              uint64_t offset, uint64_t mlen, uint64_t rlen)
{
	struct myri_host *h = priv;
	struct myri_rx_ctx *ctx = nal_ctx;
	struct myri_cmd cmd;
	(void)rlen;
	if (!ctx || ctx->called)
		return -EINVAL;
	ctx->called = 1;
	memset(&cmd, 0, sizeof(cmd));
	cmd.nic_token = ctx->nic_token;
	if (!msg) {
		cmd.op = MYRI_CMD_DISCARD;
		pthread_mutex_lock(&h->cmd_lock);
		int rc = cmd_push(h, &cmd);
		pthread_mutex_unlock(&h->cmd_lock);
		return rc;
	}
	cmd.op = MYRI_CMD_DELIVER;
	int rc = post_op(h, msg, &cmd, iov, niov, offset, mlen);
	if (rc) /* LIB does not fail a receive itself: the NAL finalizes it */
		p3_lib_finalize(h->lib, msg, PTL_NI_FAIL);
	return 0;
}

/* ---- events ------------------------------------------------------------ */

static void rx_header(struct myri_host *h, const struct myri_evt *e)
{
	struct p3_hdr hdr;
	struct myri_rx_ctx ctx = {.nic_token = e->token};
	h->rx_hdrs++;
	if (p3_hdr_unpack(e->hdr, MYRI_HDR_LEN, &hdr) != 0 || hdr.payload_len != e->len) {
		p3_lib_log(h->lib, 1, "myrinet: malformed Portals header, dropped");
		p3_lib_count_drop(h->lib, e->len);
		myri_recv(h, NULL, &ctx, NULL, 0, 0, 0, e->len);
		return;
	}
	p3_lib_parse(h->lib, &hdr, &ctx);
	if (!ctx.called)
		myri_recv(h, NULL, &ctx, NULL, 0, 0, 0, e->len);
}

/* The NIC says a request's target failed before answering (mcpd_await.c):
 * end the initiator's wait as the rmpp NALs do (nal/rmpp/ackwait.c).  The
 * request's TX_DONE came before (events keep their order), so LIB has
 * finalized it. */
static void answer_lost(struct myri_host *h, const struct myri_evt *e)
{
	struct p3_hdr req;
	if (p3_hdr_unpack(e->hdr, MYRI_HDR_LEN, &req) != 0)
		return;
	ptl_ni_fail_t why = p3_nal_fail_kind(e->status);
	p3_lib_log(h->lib, 2, "myrinet: the %s %u:%u owed is lost (%s)",
	           req.type == P3_MSG_PUT ? "ACK" : "REPLY", req.dst.nid, req.dst.pid,
	           strerror(-e->status));
	if (req.type == P3_MSG_PUT)
		p3_lib_ack_lost(h->lib, req.dst, req.md_handle, req.md_offset, why);
	else
		p3_lib_reply_lost(h->lib, req.dst, req.md_handle, req.md_offset, why);
}

static void handle_event(struct myri_host *h, const struct myri_evt *e)
{
	struct p3_msg *msg;
	uint64_t rx_token = 0;
	switch (e->type) {
	case MYRI_EVT_RX_HDR:
		rx_header(h, e);
		break;
	case MYRI_EVT_REJECT:
		p3_lib_log(h->lib, 1, "myrinet: the NIC rejected a command: %s",
		           strerror(-e->status));
		if ((msg = slot_take(h, e->token, &rx_token)) == NULL)
			break;
		if (rx_token) {
			/* a rejected DELIVER leaves the message unanswered, and the
			 * NIC shows the next one only after it: drop it */
			struct myri_cmd d = {.op = MYRI_CMD_DISCARD, .nic_token = rx_token};
			myri_io_post_cmd(h, &d);
		}
		/* nothing of it left (e.g. its DMA faulted): a reply goes again
		 * without data, saying so -- its initiator waits for it */
		p3_lib_send_failed(h->lib, msg);
		break;
	case MYRI_EVT_TX_DONE:
	case MYRI_EVT_RX_DONE:
		if ((msg = slot_take(h, e->token, &rx_token)) != NULL)
			p3_lib_finalize(h->lib, msg, p3_nal_fail_kind(e->status));
		break;
	case MYRI_EVT_ANSWER_LOST:
		answer_lost(h, e);
		break;
	default:
		p3_lib_log(h->lib, 1, "myrinet: unknown event type %u ignored", e->type);
	}
}

static int drain_events_locked(struct myri_host *h)
{
	struct myri_ring_idx *q = &h->seg->evtq;
	int n = 0;
	for (;;) {
		uint64_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
		if (head == atomic_load_explicit(&q->tail, memory_order_acquire))
			break;
		struct myri_evt e = h->seg->evt[head % MYRI_EVTQ_LEN];
		atomic_store_explicit(&q->head, head + 1, memory_order_release);
		handle_event(h, &e);
		n++;
	}
	return n;
}

static int drain_events(struct myri_host *h)
{
	pthread_mutex_lock(&h->evt_lock);
	int n = drain_events_locked(h);
	pthread_mutex_unlock(&h->evt_lock);
	return n;
}

static int events_pending(struct myri_host *h)
{
	return atomic_load(&h->seg->evtq.head) != atomic_load(&h->seg->evtq.tail);
}

void myri_fail_all(struct myri_host *h, ptl_ni_fail_t why)
{
	for (uint32_t s = 0; s < MYRI_HOST_SLOTS; s++) {
		struct p3_msg *msg = NULL;
		pthread_mutex_lock(&h->cmd_lock);
		if (h->slots[s].in_use) {
			reg_free(h, h->slots[s].reg_first, h->slots[s].nreg);
			h->slots[s].in_use = 0;
			msg = h->slots[s].msg;
		}
		pthread_mutex_unlock(&h->cmd_lock);
		if (msg)
			p3_lib_finalize(h->lib, msg, why);
	}
}

/* The control connection hung up: the NIC is gone. */
static void nic_died(struct myri_host *h)
{
	if (atomic_exchange(&h->nic_dead, 1))
		return;
	p3_lib_log(h->lib, 0, "myrinet: the NIC (mcpd pid %u) is gone; failing every operation",
	           h->nic_ospid);
	atomic_store(&h->seg->nic_state, MYRI_NIC_FAILED);
	myri_fail_all(h, PTL_NI_FAIL);
}

/* A caller that only polls (app progress) notices a dead NIC too: the
 * connection is looked at once a millisecond at most. */
static void check_nic(struct myri_host *h)
{
	static _Thread_local uint64_t last;
	uint64_t t = now_ns();
	if (t - last < 1000000u)
		return;
	last = t;
	struct pollfd p = {.fd = h->sock, .events = POLLIN};
	if (poll(&p, 1, 0) > 0 && p.revents)
		nic_died(h);
}

/* Block until the NIC interrupts, the connection drops or timeout_ms. */
static void wait_interrupt(struct myri_host *h, int timeout_ms)
{
	struct pollfd p[2] = {{.fd = h->intr_fd, .events = POLLIN},
	                      {.fd = h->sock, .events = POLLIN}};
	atomic_fetch_add(&h->seg->host_sleeping, 1); /* a count: several threads may block */
	if (!events_pending(h) && poll(p, 2, timeout_ms) > 0) {
		uint64_t v;
		if (p[0].revents & POLLIN && read(h->intr_fd, &v, sizeof(v)) < 0)
			v = 0;
		if (p[1].revents)
			nic_died(h);
	}
	atomic_fetch_sub(&h->seg->host_sleeping, 1);
}

int myri_progress(void *priv, int timeout_ms)
{
	struct myri_host *h = priv;
	if (h->stopped)
		return 0;
	if (h->intr.on)
		return myri_intr_progress(h, timeout_ms);
	int n = drain_events(h);
	if (n || atomic_load(&h->nic_dead))
		return n;
	if (timeout_ms == 0) {
		check_nic(h);
		return 0;
	}
	uint64_t t0 = now_ns();
	while (now_ns() - t0 < MYRI_SPIN_NS)
		if (events_pending(h))
			return drain_events(h);
	wait_interrupt(h, timeout_ms);
	return drain_events(h);
}

void myri_wakeup(void *priv)
{
	struct myri_host *h = priv;
	uint64_t one = 1;
	if (write(h->intr_fd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: a wake-up is pending anyway */
	}
}

/* ---- for the interrupt handler (host_intr.c) ----------------------------- */

int myri_io_drain(struct myri_host *h)
{
	return drain_events(h);
}

void myri_io_wait(struct myri_host *h, int timeout_ms)
{
	wait_interrupt(h, timeout_ms);
}

void myri_io_check_nic(struct myri_host *h)
{
	check_nic(h);
}

/* Before the detach: wait (at most timeout_ms) until the NIC has taken
 * every command posted, ringing it if it sleeps.  It drops an endpoint as
 * soon as it sees the hang-up, so a command still queued then -- the ACK
 * LIB owes a peer for a put that just arrived, the last put's SEND -- would
 * be lost and the peer would wait for it forever.  A command is taken
 * (head moved) before it runs, but it runs in the same pass, before the
 * NIC looks at the connection again. */
void myri_io_flush_cmds(struct myri_host *h, int timeout_ms)
{
	uint64_t t0 = now_ns();
	struct myri_ring_idx *q = &h->seg->cmdq;
	while (atomic_load(&q->head) != atomic_load(&q->tail) && !atomic_load(&h->nic_dead)) {
		if (now_ns() - t0 > (uint64_t)timeout_ms * 1000000u) {
			p3_lib_log(h->lib, 1, "myrinet: the NIC did not take the last commands");
			return;
		}
		uint64_t one = 1;
		if (atomic_load(&h->seg->nic_sleeping) &&
		    write(h->doorbell_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			return;
		struct timespec d = {0, 50000};
		nanosleep(&d, NULL);
		check_nic(h);
	}
}

/* A command without a completion (no slot, no registration). */
int myri_io_post_cmd(struct myri_host *h, const struct myri_cmd *cmd)
{
	pthread_mutex_lock(&h->cmd_lock);
	int rc = cmd_push(h, cmd);
	pthread_mutex_unlock(&h->cmd_lock);
	return rc;
}
