/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mcpd_ep.c - one endpoint of the emulated NIC: attach, the command queue,
 * the event queue (with a NIC-side backlog when the host does not drain it,
 * so the NIC never blocks on its host), and the wire upcalls of the
 * endpoint's rmpp connection.  The NIC is a reliable datagram device here:
 * it forwards whole Portals headers to the host in arrival order and moves
 * payload where the host's DELIVER says, after checking the registration.
 */
#include "mcpd.h"

#include "nal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

void mcpd_count(struct mcpd_ep *ep, enum myri_counter c, uint64_t n)
{
	atomic_fetch_add_explicit(&ep->seg->counters[c], n, memory_order_relaxed);
}

static int ring_put(struct mcpd_ep *ep, const struct myri_evt *evt)
{
	uint64_t tail = atomic_load_explicit(&ep->seg->evtq.tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&ep->seg->evtq.head, memory_order_acquire);
	/* head is the host's: a value that claims more than a ring is free is a
	 * lie and treated as full */
	if (tail - head >= MYRI_EVTQ_LEN)
		return -EAGAIN;
	ep->seg->evt[tail % MYRI_EVTQ_LEN] = *evt;
	atomic_store(&ep->seg->evtq.tail, tail + 1);
	return 0;
}

int mcpd_ep_flush_events(struct mcpd_ep *ep)
{
	int n = 0;
	uint64_t hdrs = 0;
	while (ep->backlog && ring_put(ep, &ep->backlog->evt) == 0) {
		struct mcpd_evt_backlog *b = ep->backlog;
		hdrs += b->evt.type == MYRI_EVT_RX_HDR;
		ep->backlog = b->next;
		if (!ep->backlog)
			ep->backlog_tail = NULL;
		free(b);
		n++;
	}
	if (n)
		mcpd_intr_raise(ep, hdrs);
	return n;
}

void mcpd_post_event(struct mcpd_ep *ep, const struct myri_evt *evt)
{
	if (!ep->backlog && ring_put(ep, evt) == 0) {
		mcpd_intr_raise(ep, evt->type == MYRI_EVT_RX_HDR);
		return;
	}
	struct mcpd_evt_backlog *b = malloc(sizeof(*b));
	if (!b) { /* out of NIC memory: the endpoint cannot keep its promises */
		ep->dead = 1;
		return;
	}
	b->next = NULL;
	b->evt = *evt;
	if (ep->backlog_tail)
		ep->backlog_tail->next = b;
	else
		ep->backlog = b;
	ep->backlog_tail = b;
	mcpd_count(ep, MYRI_C_evt_backlog, 1);
}

static void post_simple(struct mcpd_ep *ep, uint16_t type, uint64_t token, int status)
{
	struct myri_evt e;
	memset(&e, 0, sizeof(e));
	e.type = type;
	e.token = token;
	e.status = status;
	mcpd_post_event(ep, &e);
}

/* ---- receive side -------------------------------------------------------- */

static uint64_t rx_token(struct mcpd_ep *ep, uint32_t slot)
{
	return ((uint64_t)ep->rx[slot].gen << 32) | slot;
}

static struct mcpd_rx *rx_lookup(struct mcpd_ep *ep, uint64_t token)
{
	uint32_t slot = (uint32_t)token;
	if (slot >= MCPD_RX_SLOTS || !ep->rx[slot].in_use || ep->rx[slot].gen != token >> 32)
		return NULL;
	return &ep->rx[slot];
}

static void rx_release(struct mcpd_rx *rx)
{
	free(rx->buf);
	free(rx->dst);
	uint32_t gen = rx->gen + 1;
	memset(rx, 0, sizeof(*rx));
	rx->gen = gen ? gen : 1;
}

/* Show the oldest received message to the host. */
static void rx_expose(struct mcpd_ep *ep)
{
	if (!ep->rxq_len)
		return;
	uint32_t slot = ep->rxq[ep->rxq_head];
	struct mcpd_rx *rx = &ep->rx[slot];
	if (rx->exposed)
		return;
	rx->exposed = 1;
	struct myri_evt e;
	memset(&e, 0, sizeof(e));
	e.type = MYRI_EVT_RX_HDR;
	e.token = rx_token(ep, slot);
	e.len = rx->len;
	memcpy(e.hdr, rx->hdr, MYRI_HDR_LEN);
	mcpd_post_event(ep, &e);
}

/* Both halves are there (the bytes and the host's answer): DMA, complete. */
static void rx_maybe_complete(struct mcpd_ep *ep, struct mcpd_rx *rx)
{
	if (!rx->data_done || !rx->answered)
		return;
	if (!rx->discard) {
		int status = rx->data_status;
		uint64_t n = rx->dst_len < rx->len ? rx->dst_len : rx->len;
		if (status == 0 && n)
			status = mcpd_dma(ep, 1, rx->buf, n, rx->dst, rx->ndst);
		post_simple(ep, MYRI_EVT_RX_DONE, rx->host_token, status);
	}
	rx_release(rx); /* it was the oldest: only that one is answered */
	ep->rxq_head = (ep->rxq_head + 1) % MCPD_RX_SLOTS;
	ep->rxq_len--;
	rx_expose(ep);
}

static int defer(struct mcpd_ep *ep, const struct rmpp_addr *src)
{
	for (uint32_t i = 0; i < ep->ndeferred; i++)
		if (rmpp_addr_equal(&ep->deferred[i], src))
			return RMPP_RX_DEFER;
	if (ep->ndeferred == MCPD_MAX_DEFERRED)
		return RMPP_RX_DEFER; /* resumed with everybody: see mcpd_ep_resume */
	ep->deferred[ep->ndeferred++] = *src;
	return RMPP_RX_DEFER;
}

/* Let deferred peers go on when a quarter of the slots are free again (not at
 * the first free slot: a peer resumed for one message defers again at once). */
int mcpd_ep_resume(struct mcpd_ep *ep)
{
	if (!ep->ndeferred || ep->rxq_len > MCPD_RX_SLOTS * 3 / 4)
		return 0;
	uint32_t n = ep->ndeferred;
	struct rmpp_addr peers[MCPD_MAX_DEFERRED];
	memcpy(peers, ep->deferred, n * sizeof(peers[0]));
	ep->ndeferred = 0;
	for (uint32_t i = 0; i < n; i++)
		rmpp_peer_resume(ep->wire, &peers[i]);
	return (int)n;
}

static int wire_rx_hdr(void *arg, const struct rmpp_addr *src, const void *hdr, size_t hdr_len,
                       uint64_t msg_len, struct rmpp_rx_accept *acc)
{
	struct mcpd_ep *ep = arg;
	/* an ACK or REPLY a request waited for: no longer owed */
	mcpd_await_answer(ep, hdr, hdr_len);
	if (ep->off) { /* offload: LIB in the NIC matches it */
		/* nic_matching before the queue is read (both sequentially
		 * consistent, as the host's push and its look at this word):
		 * a post the host pushed too late for the queue's read below
		 * sees it set, or the END the match owes (host_offload.c) */
		atomic_store(&ep->seg->nic_matching, 1);
		mcpd_ep_cmds_before_hdr(ep);
		int v = mcpd_off_rx_hdr(ep, src, hdr, hdr_len, msg_len, acc);
		atomic_store_explicit(&ep->seg->nic_matching, 0, memory_order_release);
		return v;
	}
	memset(acc, 0, sizeof(*acc));
	uint32_t slot = MCPD_RX_SLOTS;
	for (uint32_t i = 0; i < MCPD_RX_SLOTS; i++) {
		uint32_t s = (ep->rx_next + i) % MCPD_RX_SLOTS;
		if (!ep->rx[s].in_use) {
			slot = s;
			break;
		}
	}
	if (hdr_len != MYRI_HDR_LEN) /* not a Portals header: the payload is discarded */
		return RMPP_RX_ACCEPT;
	if (slot == MCPD_RX_SLOTS) /* every slot waits for the host: back-pressure */
		return defer(ep, src);
	struct mcpd_rx *rx = &ep->rx[slot];
	void *buf = msg_len ? malloc(msg_len) : NULL;
	if (msg_len && !buf)
		return defer(ep, src);
	ep->rx_next = (slot + 1) % MCPD_RX_SLOTS;
	if (!rx->gen)
		rx->gen = 1;
	rx->in_use = 1;
	rx->buf = buf;
	rx->len = msg_len;
	rx->buf_iov.iov_base = buf;
	rx->buf_iov.iov_len = msg_len;
	acc->iov = &rx->buf_iov;
	acc->niov = msg_len ? 1 : 0;
	acc->accepted = msg_len;
	acc->cookie = rx;
	memcpy(rx->hdr, hdr, MYRI_HDR_LEN);
	ep->rxq[(ep->rxq_head + ep->rxq_len) % MCPD_RX_SLOTS] = slot;
	ep->rxq_len++;
	rx_expose(ep);
	mcpd_count(ep, MYRI_C_rx_msgs, 1);
	mcpd_count(ep, MYRI_C_rx_bytes, msg_len);
	return RMPP_RX_ACCEPT;
}

/* A transfer rmpp ended because its peer failed: counted (mcpd --counters). */
static void count_peer_failure(struct mcpd_ep *ep, int status)
{
	if (status == -ETIMEDOUT || status == -ECONNRESET)
		ep->nic->stats.ops_peer_failed++;
}

static void wire_rx_done(void *arg, void *cookie, int status, uint64_t accepted)
{
	struct mcpd_ep *ep = arg;
	struct mcpd_rx *rx = cookie;
	(void)accepted;
	count_peer_failure(ep, status);
	if (ep->off) {
		mcpd_off_rx_done(ep, cookie, status);
		return;
	}
	if (!rx)
		return;
	rx->data_done = 1;
	rx->data_status = status;
	rx_maybe_complete(ep, rx);
}

static int cmd_answer(struct mcpd_ep *ep, const struct myri_cmd *cmd)
{
	struct mcpd_rx *rx = rx_lookup(ep, cmd->nic_token);
	if (!rx || rx->answered || !rx->exposed)
		return -ENOENT; /* stale or forged token */
	if (cmd->op == MYRI_CMD_DISCARD) {
		rx->answered = rx->discard = 1;
		rx_maybe_complete(ep, rx);
		return 0;
	}
	if (cmd->len > rx->len)
		return -EMSGSIZE;
	int rc = mcpd_run_iov(ep, cmd, &rx->dst, &rx->ndst);
	if (rc)
		return rc;
	rx->dst_len = cmd->len;
	rx->host_token = cmd->token;
	rx->answered = 1;
	rx_maybe_complete(ep, rx);
	return 0;
}

/* ---- send side --------------------------------------------------------- */

static void wire_tx_done(void *arg, void *cookie, int status, uint64_t accepted)
{
	struct mcpd_ep *ep = arg;
	struct mcpd_tx *tx = cookie;
	(void)accepted;
	count_peer_failure(ep, status);
	mcpd_await_sent(ep, cookie, status);
	if (ep->tx_inflight)
		ep->tx_inflight--;
	if (ep->off) {
		mcpd_off_tx_done(ep, cookie, status);
		return;
	}
	post_simple(ep, MYRI_EVT_TX_DONE, tx->host_token, status);
	free(tx->buf);
	free(tx);
}

/* The host's LIB (interrupt and app modes) sends REPLYs through here too:
 * they go eagerly, the initiator's MD waits for exactly these bytes. */
static unsigned cmd_send_flags(const struct myri_cmd *cmd)
{
	struct p3_hdr h;
	if (!cmd->len || p3_hdr_unpack(cmd->hdr, MYRI_HDR_LEN, &h) != 0)
		return 0;
	return h.type == P3_MSG_REPLY ? RMPP_SEND_SOLICITED : 0;
}

static int cmd_send(struct mcpd_ep *ep, const struct myri_cmd *cmd)
{
	struct iovec *src;
	size_t nsrc;
	int rc = mcpd_run_iov(ep, cmd, &src, &nsrc);
	if (rc)
		return rc;
	struct mcpd_tx *tx = calloc(1, sizeof(*tx));
	void *buf = cmd->len ? malloc(cmd->len) : NULL;
	if (!tx || (cmd->len && !buf)) {
		free(src);
		free(tx);
		free(buf);
		return -ENOMEM;
	}
	rc = cmd->len ? mcpd_dma(ep, 0, buf, cmd->len, src, nsrc) : 0;
	free(src);
	if (rc) {
		free(tx);
		free(buf);
		return rc;
	}
	tx->host_token = cmd->token;
	tx->buf = buf;
	tx->iov.iov_base = buf;
	tx->iov.iov_len = cmd->len;
	struct rmpp_addr to;
	rc = mcpd_wire_addr(ep, cmd->dst_nid, cmd->dst_pid, &to);
	if (rc == 0) {
		mcpd_await_add(ep, &to, cmd->hdr, tx);
		ep->tx_inflight++; /* before: its tx_done may come from inside */
		rc = rmpp_send_flags(ep->wire, &to, cmd->hdr, MYRI_HDR_LEN, &tx->iov,
		                     cmd->len ? 1 : 0, 0, cmd->len, tx, 0, cmd_send_flags(cmd));
		if (rc) {
			ep->tx_inflight--;
			mcpd_await_sent(ep, tx, rc);
		}
	}
	if (rc) {
		free(tx);
		free(buf);
		return rc;
	}
	mcpd_count(ep, MYRI_C_sends, 1);
	mcpd_count(ep, MYRI_C_send_bytes, cmd->len);
	return 0;
}

static void wire_peer_event(void *arg, const struct rmpp_addr *peer, enum rmpp_peer_event ev,
                            uint32_t epoch)
{
	struct mcpd_ep *ep = arg;
	(void)epoch;
	mcpd_await_peer_gone(ep, peer, ev); /* the answers it owed are lost */
	if (ev == RMPP_PEER_DEAD)
		rmpp_peer_forget(ep->wire, peer); /* a later send starts a new handshake */
}

/* ---- the command queue ------------------------------------------------- */

static void cmd_execute(struct mcpd_ep *ep, const struct myri_cmd *cmd)
{
	int rc = mcpd_cmd_check(cmd);
	if (rc == 0) {
		if (cmd->op == MYRI_CMD_SEND)
			rc = cmd_send(ep, cmd);
		else if (cmd->op == MYRI_CMD_INTR_CTL)
			rc = mcpd_intr_ctl(ep, cmd);
		else if (cmd->op == MYRI_CMD_LIB)
			rc = mcpd_off_cmd(ep, cmd);
		else
			rc = cmd_answer(ep, cmd);
	}
	mcpd_count(ep, MYRI_C_cmds, 1);
	if (rc) {
		mcpd_count(ep, MYRI_C_cmds_rejected, 1);
		post_simple(ep, MYRI_EVT_REJECT, cmd->token, rc);
	}
}

/* A LIB command that may run from inside the wire's header upcall: any
 * but OPEN and CLOSE (which make and destroy that wire).  LIB's sends from
 * there are safe: rmpp queues a send made inside its progress, as it does
 * the ACKs and REPLYs LIB sends from its upcalls. */
static int cmd_runs_in_upcall(const struct myri_cmd *cmd)
{
	return cmd->op == MYRI_CMD_LIB && mcpd_cmd_check(cmd) == 0 &&
	       cmd->lib_op != MYRI_LIB_OPEN && cmd->lib_op != MYRI_LIB_CLOSE;
}

/* Run the queued commands in order; in_upcall: only while they may run
 * inside the header upcall (the next pass runs the rest).  The tail is read
 * sequentially consistent: after nic_matching is set (wire_rx_hdr). */
static int cmds_run(struct mcpd_ep *ep, int in_upcall)
{
	uint64_t head = atomic_load_explicit(&ep->seg->cmdq.head, memory_order_relaxed);
	uint64_t tail = atomic_load(&ep->seg->cmdq.tail);
	if (tail - head > MYRI_CMDQ_LEN) { /* a tail no producer could have written */
		if (!in_upcall) {
			mcpd_count(ep, MYRI_C_cmds_rejected, 1);
			atomic_store(&ep->seg->nic_state, MYRI_NIC_FAILED);
			ep->dead = 1;
		}
		return 0;
	}
	int n = 0;
	ep->in_cmds = 1;
	for (; head != tail; head++, n++) {
		struct myri_cmd cmd;
		memcpy(&cmd, &ep->seg->cmd[head % MYRI_CMDQ_LEN], sizeof(cmd));
		if (in_upcall && !cmd_runs_in_upcall(&cmd))
			break;
		cmd_execute(ep, &cmd);
		/* after it ran: a host that sees head past a command sees its
		 * effects and events (PtlMEMDPostSync, README §1.3) */
		atomic_store_explicit(&ep->seg->cmdq.head, head + 1, memory_order_release);
	}
	ep->in_cmds = 0;
	return n;
}

int mcpd_ep_poll_cmds(struct mcpd_ep *ep)
{
	return cmds_run(ep, 0);
}

/* Offload: a header is about to be matched.  The LIB commands the host
 * queued before it run first (up to one that is not: the next pass runs
 * that one and the rest).
 * Why: the loop polls the queue and then reads the wire, so a receive the
 * host posted while a pass was reading frames met a message that arrived
 * at the same moment as if it had come first: its conditional post
 * (PtlMEMDPostNoWait) was refused, and the host learned of that only at
 * its next Portals call -- in COMB's post-work-wait, after the work, which
 * then pulled the message instead of overlapping it.  Worse, a put could
 * overtake the target's posted ME_INSERT/MD_ATTACH, queued before the
 * target told the initiator to go, and be dropped (README §2.2).  Nothing
 * reorders: the commands run in queue order, all before a message the NIC
 * had not yet looked at. */
int mcpd_ep_cmds_before_hdr(struct mcpd_ep *ep)
{
	if (ep->in_cmds || ep->dead || ep->closing)
		return 0;
	int n = cmds_run(ep, 1);
	if (n)
		mcpd_count(ep, MYRI_C_cmds_before_hdr, (uint64_t)n);
	return n;
}

/* ---- attach / detach --------------------------------------------------- */

static int ep_open_wire(struct mcpd_ep *ep, uint32_t want_pid)
{
	const struct rmpp_callbacks cb = {.rx_hdr = wire_rx_hdr,
	                                  .rx_done = wire_rx_done,
	                                  .tx_done = wire_tx_done,
	                                  .peer_event = wire_peer_event,
	                                  .arg = ep};
	return mcpd_wire_open(ep, want_pid, &cb);
}

struct mcpd_ep *mcpd_ep_attach(struct mcpd *nic, int conn_fd, const struct myri_attach_req *req,
                               const int fds[3], int *status)
{
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	struct stat st;
	*status = -EINVAL;
	if (req->magic != MYRI_MAGIC || req->version != MYRI_VERSION ||
	    req->seg_size != sizeof(struct myri_seg))
		return NULL;
	if (getsockopt(conn_fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 ||
	    fstat(fds[0], &st) != 0 || (uint64_t)st.st_size < sizeof(struct myri_seg))
		return NULL;
	struct mcpd_ep *ep = calloc(1, sizeof(*ep));
	if (!ep) {
		*status = -ENOMEM;
		return NULL;
	}
	ep->seg =
	    mmap(NULL, sizeof(struct myri_seg), PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	if (ep->seg == MAP_FAILED) {
		*status = -errno;
		free(ep);
		return NULL;
	}
	ep->nic = nic;
	ep->conn_fd = conn_fd;
	ep->doorbell_fd = fds[1];
	ep->intr_fd = fds[2];
	ep->ospid = cred.pid;
	ep->nid = req->nid;
	ep->base_port = nic->base_port;
	if ((uint64_t)st.st_size >= MYRI_SEG_BYTES) { /* room for EQ rings: offload possible */
		ep->arena = mmap(NULL, MYRI_ARENA_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0],
		                 MYRI_ARENA_OFFSET);
		if (ep->arena == MAP_FAILED)
			ep->arena = NULL;
	}
	*status = ep_open_wire(ep, req->pid);
	if (*status) {
		if (ep->arena)
			munmap(ep->arena, MYRI_ARENA_LEN);
		munmap(ep->seg, sizeof(struct myri_seg));
		free(ep);
		return NULL;
	}
	atomic_store(&ep->seg->nic_state, MYRI_NIC_RUNNING);
	return ep;
}

void mcpd_ep_destroy(struct mcpd_ep *ep)
{
	if (ep->off)
		mcpd_off_destroy(ep); /* LIB fails what it has in flight */
	if (ep->wire)
		rmpp_ep_destroy(ep->wire); /* upcalls fail what is in flight */
	mcpd_await_clear(ep);
	for (uint32_t i = 0; i < MCPD_RX_SLOTS; i++)
		if (ep->rx[i].in_use)
			rx_release(&ep->rx[i]);
	while (ep->backlog) {
		struct mcpd_evt_backlog *b = ep->backlog;
		ep->backlog = b->next;
		free(b);
	}
	for (int i = 0; i < MYRI_NCOUNTERS; i++)
		ep->nic->stats.counters[i] += atomic_load(&ep->seg->counters[i]);
	for (int i = 0; i < MYRI_NHOST_COUNTERS; i++)
		ep->nic->stats.host_counters[i] += atomic_load(&ep->seg->host_counters[i]);
	if (ep->arena)
		munmap(ep->arena, MYRI_ARENA_LEN);
	munmap(ep->seg, sizeof(struct myri_seg));
	close(ep->conn_fd);
	close(ep->doorbell_fd);
	close(ep->intr_fd);
	free(ep);
}
