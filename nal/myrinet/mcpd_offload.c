/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mcpd_offload.c - the offload processing mode: the Portals LIB side of an
 * endpoint runs in the NIC.  The host forwards each struct p3_lib_iface call
 * as a MYRI_CMD_LIB command (host_offload.c); this file executes it with the
 * LIB code compiled into mcpd (mcpd_lib.c) and answers MYRI_EVT_LIB_REPLY.
 *
 * The LIB here drives an internal NAL ("the NIC's own"): send() reads the
 * MD's bytes from the host by DMA and hands them to the endpoint's rmpp wire;
 * the wire's header upcall calls p3_lib_parse(), whose recv() names the MD
 * bytes the payload goes to, written by DMA when the message is complete.
 * Matching, events (into EQ rings in the segment's arena), acks and replies
 * all happen here, so a host that makes no call still receives.
 *
 * MD memory: the command that creates an MD names its regions as a
 * registration run (myri_dev.h); they are checked once and kept for the
 * MD's life.  LIB never dereferences an MD address itself: sends to oneself
 * come back here (lib_nal_self) and the GetPut swap uses lib_md_swap.
 */
#include "mcpd.h"

#include "lib.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OFF_ARENA_ALIGN 64u
#define OFF_MAX_RINGS   4096u

struct off_ring {
	uint64_t off, len;
};

/* One message the NIC's NAL carries (send or receive); also the rmpp cookie. */
struct off_op {
	struct p3_msg *msg; /* NULL once LIB let go of it (NAL stop) */
	void *buf;
	uint64_t len;
	struct iovec buf_iov;
	struct iovec *dst; /* receive: the MD window the bytes go to */
	size_t ndst;
	struct off_op *prev, *next;
};

struct mcpd_off {
	struct mcpd_ep *ep;
	struct p3_lib *lib;
	struct off_ring rings[OFF_MAX_RINGS]; /* arena allocations, by offset */
	uint32_t nrings;
	struct off_op *ops; /* in flight, for stop() */
};

/* What the wire's header upcall hands p3_lib_parse as nal_ctx. */
struct off_rx_ctx {
	int self;                   /* a send to oneself: the bytes are in buf already */
	const void *buf;            /* self */
	uint64_t len;               /* self */
	struct rmpp_rx_accept *acc; /* wire */
	int called;
};

/* ---- the arena (EQ rings) ------------------------------------------------ */

/* lib_ring_alloc has no context argument: LIB calls it only from inside a
 * command this file executes, for the endpoint set here. */
static struct mcpd_off *g_cur;

static struct p3_eq_ring *arena_alloc(size_t bytes)
{
	struct mcpd_off *o = g_cur;
	uint64_t len = (bytes + OFF_ARENA_ALIGN - 1) & ~(uint64_t)(OFF_ARENA_ALIGN - 1), at = 0;
	uint32_t i = 0;
	if (!o || !o->ep->arena || o->nrings == OFF_MAX_RINGS)
		return NULL;
	for (; i < o->nrings; i++) { /* first fit between allocations */
		if (o->rings[i].off - at >= len)
			break;
		at = o->rings[i].off + o->rings[i].len;
	}
	if (at + len > MYRI_ARENA_LEN)
		return NULL;
	memmove(&o->rings[i + 1], &o->rings[i], (o->nrings - i) * sizeof(o->rings[0]));
	o->rings[i] = (struct off_ring){at, len};
	o->nrings++;
	return (struct p3_eq_ring *)(void *)(o->ep->arena + at);
}

/* bytes comes from LIB's own count; the allocation is found by address. */
static void arena_free(struct p3_eq_ring *ring, size_t bytes)
{
	struct mcpd_off *o = g_cur;
	(void)bytes;
	if (!o)
		return;
	uint64_t off = (uint64_t)((uint8_t *)ring - o->ep->arena);
	for (uint32_t i = 0; i < o->nrings; i++)
		if (o->rings[i].off == off) {
			memset(ring, 0, o->rings[i].len); /* the host sees no stale events */
			memmove(&o->rings[i], &o->rings[i + 1],
			        (o->nrings - i - 1) * sizeof(o->rings[0]));
			o->nrings--;
			return;
		}
}

/* ---- DMA over an MD window ------------------------------------------------- */

/* The [off, off + len) window of iov as a new iovec array. */
static int iov_window(const struct iovec *iov, size_t niov, uint64_t off, uint64_t len,
                      struct iovec **out, size_t *nout)
{
	struct iovec *v = calloc(niov ? niov : 1, sizeof(*v));
	size_t n = 0;
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < niov && len; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		uint64_t take = iov[i].iov_len - off < len ? iov[i].iov_len - off : len;
		v[n].iov_base = (char *)iov[i].iov_base + off;
		v[n++].iov_len = take;
		len -= take;
		off = 0;
	}
	if (len) {
		free(v);
		return -EFAULT;
	}
	*out = v;
	*nout = n;
	return 0;
}

/* LIB's own buffer (a GetPut's new and old bytes, msg_buf) is NIC memory,
 * not the host's: it is copied, not DMA'd. */
static int lib_local(const struct p3_msg *msg, const struct iovec *iov)
{
	return msg && msg->msg_buf && iov == &msg->msg_buf_iov;
}

static int dma_window(struct mcpd_ep *ep, int write, void *local, const struct iovec *iov,
                      size_t niov, uint64_t off, uint64_t len)
{
	struct iovec *v;
	size_t n;
	if (!len)
		return 0;
	int rc = iov_window(iov, niov, off, len, &v, &n);
	if (rc == 0) {
		rc = mcpd_dma(ep, write, local, len, v, n);
		free(v);
	}
	return rc;
}

/* dma_window, or a copy when iov is LIB's own buffer (see lib_local). */
static int move_window(struct mcpd_ep *ep, const struct p3_msg *msg, int write, void *local,
                       const struct iovec *iov, size_t niov, uint64_t off, uint64_t len)
{
	if (!lib_local(msg, iov))
		return dma_window(ep, write, local, iov, niov, off, len);
	if (off + len > iov->iov_len)
		return -EFAULT;
	if (write)
		memcpy((char *)iov->iov_base + off, local, len);
	else
		memcpy(local, (char *)iov->iov_base + off, len);
	return 0;
}

static int off_md_swap(struct p3_lib *lib, const struct iovec *iov, size_t niov, uint64_t off,
                       void *oldb, const void *newb, uint64_t len)
{
	struct mcpd_off *o = lib->lib_nal_priv;
	int rc = dma_window(o->ep, 0, oldb, iov, niov, off, len);
	return rc ? rc : dma_window(o->ep, 1, (void *)newb, iov, niov, off, len);
}

/* ---- the NIC's NAL ---------------------------------------------------------- */

static struct off_op *op_new(struct mcpd_off *o, struct p3_msg *msg, uint64_t len)
{
	struct off_op *op = calloc(1, sizeof(*op));
	if (!op)
		return NULL;
	op->buf = len ? malloc(len) : NULL;
	if (len && !op->buf) {
		free(op);
		return NULL;
	}
	op->msg = msg;
	op->len = len;
	op->buf_iov = (struct iovec){op->buf, len};
	op->next = o->ops;
	if (o->ops)
		o->ops->prev = op;
	o->ops = op;
	return op;
}

static void op_free(struct mcpd_off *o, struct off_op *op)
{
	if (op->prev)
		op->prev->next = op->next;
	else if (o->ops == op)
		o->ops = op->next;
	if (op->next)
		op->next->prev = op->prev;
	free(op->buf);
	free(op->dst);
	free(op);
}

static struct mcpd_off *g_opening; /* init() runs inside LIB_OPEN for this one */

static int nic_init(struct p3_lib *lib, const struct p3_nal_init_args *args,
                    struct p3_nal_info *info, void **priv)
{
	struct mcpd_off *o = g_opening;
	(void)args;
	o->lib = lib;
	memset(info, 0, sizeof(*info));
	info->id.nid = o->ep->nid;
	info->id.pid = o->ep->pid;
	info->limits.max_md_iovecs = MYRI_MAX_RUN;
	info->max_msg_size = UINT32_MAX;
	info->transfer_mode = "emulated Myrinet NIC (mcpd): LIB offloaded to the NIC";
	*priv = o;
	return 0;
}

/* A send to oneself: the bytes are read once and parsed as if received. */
static int send_self(struct mcpd_off *o, struct p3_msg *msg, const struct p3_hdr *hdr,
                     const void *buf, uint64_t len)
{
	struct off_rx_ctx ctx = {.self = 1, .buf = buf, .len = len};
	p3_lib_parse(o->lib, hdr, &ctx);
	if (msg) /* the source is reusable: SEND_END before the target's END */
		p3_lib_finalize(o->lib, msg, PTL_NI_OK);
	return 0;
}

static int nic_send(void *priv, struct p3_msg *msg, const struct p3_hdr *hdr,
                    const struct iovec *iov, size_t niov, uint64_t offset, uint64_t len)
{
	struct mcpd_off *o = priv;
	struct mcpd_ep *ep = o->ep;
	int rc;
	if (hdr->dst.nid == ep->nid && hdr->dst.pid == ep->pid) {
		void *buf = len ? malloc(len) : NULL;
		if (len && !buf)
			return -ENOMEM;
		rc = move_window(ep, msg, 0, buf, iov, niov, offset, len);
		if (rc == 0)
			rc = send_self(o, msg, hdr, buf, len);
		free(buf);
		return rc;
	}
	struct rmpp_addr to;
	rc = mcpd_wire_addr(ep, hdr->dst.nid, hdr->dst.pid, &to);
	if (rc)
		return rc;
	struct off_op *op = op_new(o, msg, len);
	if (!op)
		return -ENOMEM;
	rc = move_window(ep, msg, 0, op->buf, iov, niov, offset, len);
	uint8_t wire[MYRI_HDR_LEN];
	p3_hdr_pack(hdr, wire);
	if (rc == 0) {
		mcpd_await_add(ep, &to, wire, op); /* an ACK or REPLY is owed: watched */
		ep->tx_inflight++;                 /* a gone host's sends drain (mcpd.c) */
		/* a REPLY goes eagerly: the initiator's MD waits for it (rmpp.h) */
		unsigned flags = hdr->type == P3_MSG_REPLY ? RMPP_SEND_SOLICITED : 0;
		rc = rmpp_send_flags(ep->wire, &to, wire, MYRI_HDR_LEN, &op->buf_iov, len ? 1 : 0,
		                     0, len, op, 0, flags);
		if (rc) {
			ep->tx_inflight--;
			mcpd_await_sent(ep, op, rc);
		}
	}
	if (rc) {
		op_free(o, op);
		return rc;
	}
	mcpd_count(ep, MYRI_C_sends, 1);
	mcpd_count(ep, MYRI_C_send_bytes, len);
	return 0;
}

static int nic_recv(void *priv, struct p3_msg *msg, void *nal_ctx, const struct iovec *iov,
                    size_t niov, uint64_t offset, uint64_t mlen, uint64_t rlen)
{
	struct mcpd_off *o = priv;
	struct off_rx_ctx *ctx = nal_ctx;
	(void)rlen;
	if (!ctx || ctx->called)
		return -EINVAL;
	ctx->called = 1;
	if (ctx->self) {
		int rc = 0;
		if (msg && mlen)
			rc = move_window(o->ep, msg, 1, (void *)ctx->buf, iov, niov, offset, mlen);
		if (msg)
			p3_lib_finalize(o->lib, msg, rc ? PTL_NI_FAIL : PTL_NI_OK);
		return 0;
	}
	struct rmpp_rx_accept *acc = ctx->acc;
	if (!msg) /* dropped: accept nothing, the rest is discarded */
		return 0;
	if (lib_local(msg, iov)) { /* a GetPut's new bytes: straight into LIB's buffer */
		struct off_op *op = op_new(o, msg, 0);
		if (!op) {
			p3_lib_finalize(o->lib, msg, PTL_NI_FAIL);
			return 0;
		}
		op->buf_iov = *iov;
		acc->iov = &op->buf_iov;
		acc->niov = 1;
		acc->offset = 0;
		acc->accepted = mlen;
		acc->cookie = op;
		(void)offset; /* LIB's buffer takes the bytes from 0 */
		return 0;
	}
	struct off_op *op = op_new(o, msg, mlen);
	if (!op || (mlen && iov_window(iov, niov, offset, mlen, &op->dst, &op->ndst) != 0)) {
		if (op)
			op_free(o, op);
		p3_lib_finalize(o->lib, msg, PTL_NI_FAIL); /* LIB does not fail a receive itself */
		return 0;
	}
	acc->iov = &op->buf_iov;
	acc->niov = mlen ? 1 : 0;
	acc->accepted = mlen;
	acc->cookie = op;
	return 0;
}

static int nic_progress(void *priv, int timeout_ms)
{
	(void)priv;
	(void)timeout_ms;
	return 0; /* mcpd's event loop drives the wire */
}

/* LIB posted an event to a ring whose reader said it will block: raise
 * the interrupt (the host waits on it in PtlEQWait). */
static void nic_wakeup(void *priv)
{
	struct mcpd_off *o = priv;
	uint64_t one = 1;
	if (write(o->ep->intr_fd, &one, sizeof(one)) == sizeof(one))
		mcpd_count(o->ep, MYRI_C_interrupts, 1);
}

static int nic_dist(void *priv, ptl_process_id_t id, unsigned long *distance)
{
	struct mcpd_off *o = priv;
	*distance = id.nid == o->ep->nid ? (id.pid == o->ep->pid ? 0 : 1) : 2;
	return 0;
}

static int nic_status(void *priv, ptl_sr_index_t reg, ptl_sr_value_t *value)
{
	struct mcpd_off *o = priv;
	if (reg < PTL_SR_NAL_BASE || reg - PTL_SR_NAL_BASE >= MYRI_NCOUNTERS + MYRI_NHOST_COUNTERS)
		return -ENOENT;
	ptl_sr_index_t i = reg - PTL_SR_NAL_BASE;
	/* the host's registers too (host-written: its word, as mcpd --counters) */
	*value =
	    (ptl_sr_value_t)(i < MYRI_NCOUNTERS
	                         ? atomic_load(&o->ep->seg->counters[i])
	                         : atomic_load(&o->ep->seg->host_counters[i - MYRI_NCOUNTERS]));
	return 0;
}

/* Fail what is in flight; the wire's later upcalls only free the cookies. */
static void nic_stop(void *priv)
{
	struct mcpd_off *o = priv;
	for (struct off_op *op = o->ops; op; op = op->next) {
		struct p3_msg *msg = op->msg;
		op->msg = NULL;
		if (msg)
			p3_lib_finalize(o->lib, msg, PTL_NI_UNLINKED);
	}
}

static void nic_destroy(void *priv)
{
	(void)priv; /* struct mcpd_off belongs to the endpoint */
}

static const struct p3_nal_ops mcpd_nic_nal = {
    .size = sizeof(struct p3_nal_ops),
    .name = "myrinet",
    .iface = PTL_IFACE_MYRINET,
    .init = nic_init,
    .send = nic_send,
    .recv = nic_recv,
    .progress = nic_progress,
    .wakeup = nic_wakeup,
    .dist = nic_dist,
    .status = nic_status,
    .stop = nic_stop,
    .destroy = nic_destroy,
};

/* ---- wire upcalls of an offloaded endpoint -------------------------------- */

int mcpd_off_rx_hdr(struct mcpd_ep *ep, const struct rmpp_addr *src, const void *hdr,
                    size_t hdr_len, uint64_t msg_len, struct rmpp_rx_accept *acc)
{
	struct mcpd_off *o = ep->off;
	struct p3_hdr h;
	(void)src;
	memset(acc, 0, sizeof(*acc));
	mcpd_count(ep, MYRI_C_rx_msgs, 1);
	mcpd_count(ep, MYRI_C_rx_bytes, msg_len);
	if (!o->lib)
		return RMPP_RX_ACCEPT; /* LIB closed: nothing is accepted */
	if (p3_hdr_unpack(hdr, hdr_len, &h) != 0 || h.payload_len != msg_len) {
		p3_lib_count_drop(o->lib, msg_len);
		return RMPP_RX_ACCEPT;
	}
	struct off_rx_ctx ctx = {.acc = acc};
	g_cur = o;
	p3_lib_parse(o->lib, &h, &ctx);
	return RMPP_RX_ACCEPT;
}

void mcpd_off_rx_done(struct mcpd_ep *ep, void *cookie, int status)
{
	struct mcpd_off *o = ep->off;
	struct off_op *op = cookie;
	if (!op)
		return;
	if (status == 0 && op->len)
		status = mcpd_dma(ep, 1, op->buf, op->len, op->dst, op->ndst);
	struct p3_msg *msg = op->msg;
	op_free(o, op);
	g_cur = o;
	if (msg && o->lib)
		p3_lib_finalize(o->lib, msg, p3_nal_fail_kind(status));
}

void mcpd_off_tx_done(struct mcpd_ep *ep, void *cookie, int status)
{
	struct mcpd_off *o = ep->off;
	struct off_op *op = cookie;
	struct p3_msg *msg = op->msg;
	op_free(o, op);
	g_cur = o;
	if (msg && o->lib)
		p3_lib_finalize(o->lib, msg, p3_nal_fail_kind(status));
}

struct p3_lib *mcpd_off_lib(struct mcpd_ep *ep)
{
	g_cur = ep->off;
	return ep->off ? ep->off->lib : NULL;
}

/* ---- the LIB commands ------------------------------------------------------ */

/* The MD's memory from the command's registration run: contiguous MD, one
 * entry equal to {start, length}; iovec MD, entry i equal to element i.
 * Fills umd (start pointing at *iov for iovec MDs). */
static int md_from_run(struct mcpd_ep *ep, const struct myri_cmd *cmd, const struct myri_md *w,
                       ptl_md_t *umd, ptl_md_iovec_t **iov)
{
	*iov = NULL;
	memset(umd, 0, sizeof(*umd));
	umd->start = (void *)(uintptr_t)w->start;
	umd->length = w->length;
	umd->threshold = w->threshold;
	umd->max_size = w->max_size;
	umd->options = w->options;
	umd->user_ptr = (void *)(uintptr_t)w->user_ptr;
	umd->eq_handle = w->eq_handle;
	int is_iov = (w->options & PTL_MD_IOVEC) != 0;
	uint64_t want = is_iov ? w->length : (w->length ? 1 : 0);
	if (want > MYRI_MAX_RUN)
		return PTL_MD_ILLEGAL;
	if (cmd->nreg != want)
		return PTL_MD_ILLEGAL;
	if (!want)
		return PTL_OK;
	if (is_iov && !(*iov = calloc(want, sizeof(**iov))))
		return PTL_NO_SPACE;
	for (uint32_t i = 0; i < want; i++) {
		struct myri_reg r;
		memcpy(&r, &ep->seg->reg[(cmd->reg_first + i) % MYRI_NREG], sizeof(r));
		if (!r.valid || r.key != cmd->key || r.addr + r.len < r.addr ||
		    (!is_iov && (r.addr != w->start || r.len != w->length))) {
			free(*iov);
			*iov = NULL;
			return PTL_MD_ILLEGAL; /* not what the host registered */
		}
		if (is_iov) {
			(*iov)[i].iov_base = (void *)(uintptr_t)r.addr;
			(*iov)[i].iov_len = r.len;
		}
	}
	if (is_iov)
		umd->start = *iov;
	return PTL_OK;
}

/* Events carry the MD as the host gave it: its own start pointer. */
static void md_restore_start(struct p3_lib *lib, ptl_handle_md_t mdh, uint64_t start)
{
	p3_lib_lock(lib);
	struct p3_md *md = p3_obj_lookup_locked(&lib->lib_mds, mdh);
	if (md)
		md->md_user.start = (void *)(uintptr_t)start;
	p3_lib_unlock(lib);
}

/* The MD as the host gave it, its own start pointer included (events). */
static void md_from_wire(const struct myri_md *w, ptl_md_t *m)
{
	memset(m, 0, sizeof(*m));
	m->start = (void *)(uintptr_t)w->start;
	m->length = w->length;
	m->threshold = w->threshold;
	m->max_size = w->max_size;
	m->options = w->options;
	m->user_ptr = (void *)(uintptr_t)w->user_ptr;
	m->eq_handle = w->eq_handle;
}

static void md_to_wire(const ptl_md_t *m, struct myri_md *w)
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

static int lib_open(struct mcpd_off *o, const struct myri_lib_open *a,
                    struct myri_lib_open_rep *rep)
{
	ptl_ni_limits_t desired;
	int32_t *d = &desired.max_mes;
	_Static_assert(sizeof(desired) == 8 * sizeof(int32_t), "limits are 8 ints");
	memcpy(d, a->desired, sizeof(a->desired));
	struct p3_lib_open_args args = {.nal = &mcpd_nic_nal,
	                                .ni_index = a->ni_index % P3_MAX_NIS,
	                                .ni_gen = a->ni_gen & P3_HANDLE_GEN_MASK,
	                                .pid = o->ep->pid,
	                                .desired = &desired,
	                                .debug_mask = a->debug_mask};
	struct p3_lib_open_result res;
	struct p3_lib *lib;
	g_opening = o;
	int rc = p3_lib_local_iface.open(&args, &lib, &res);
	g_opening = NULL;
	if (rc != PTL_OK) {
		o->lib = NULL;
		return rc;
	}
	lib->lib_jid = a->jid; /* the host's job; the ACL's default entry needs it */
	lib->lib_nal_self = 1;
	lib->lib_md_swap = off_md_swap;
	lib->lib_ring_alloc = arena_alloc;
	lib->lib_ring_free = arena_free;
	rep->nid = res.id.nid;
	rep->pid = res.id.pid;
	rep->uid = res.uid;
	rep->jid = a->jid;
	memcpy(rep->limits, &res.limits, sizeof(rep->limits));
	return PTL_OK;
}

static void lib_close(struct mcpd_off *o)
{
	if (!o->lib)
		return;
	g_cur = o;
	p3_lib_local_iface.close(o->lib);
	o->lib = NULL;
}

/* After a call that named a reserved handle: a call that failed frees the
 * reservation (the slot's generation moves on, so the host's copy of the
 * handle names nothing), and the next allocation takes any slot again. */
static void want_settle(struct p3_lib *lib, struct p3_objtab *t, uint32_t want, int rc)
{
	p3_lib_lock(lib);
	t->ot_want = 0;
	if (want && rc != PTL_OK)
		p3_obj_unreserve_locked(t, want);
	p3_lib_unlock(lib);
}

/* MYRI_LIB_RESERVE: up to MYRI_MAX_RESERVE handles of MEs or MDs, fewer
 * when the table is nearly full (none: PTL_NO_SPACE). */
static int lib_reserve(struct mcpd_off *o, uint64_t a0, uint8_t *res)
{
	struct myri_lib_handles r = {0};
	uint64_t type = a0 & 0xff, want = a0 >> 8;
	if ((type != P3_HT_ME && type != P3_HT_MD) || want == 0)
		return PTL_FAIL;
	struct p3_objtab *t = type == P3_HT_ME ? &o->lib->lib_mes : &o->lib->lib_mds;
	p3_lib_lock(o->lib);
	while (r.n < want && r.n < MYRI_MAX_RESERVE) {
		ptl_handle_any_t h;
		if (p3_obj_reserve_locked(t, &h) != 0)
			break;
		r.h[r.n++] = h;
	}
	p3_lib_unlock(o->lib);
	memcpy(res, &r, sizeof(r));
	return r.n ? PTL_OK : PTL_NO_SPACE;
}

/* MYRI_LIB_UNRESERVE: handles that name no reserved slot are ignored. */
static int lib_unreserve(struct mcpd_off *o, const struct myri_cmd *cmd)
{
	struct myri_lib_handles r;
	memcpy(&r, cmd->hdr, sizeof(r));
	p3_lib_lock(o->lib);
	for (uint32_t i = 0; i < r.n && i < MYRI_MAX_RESERVE; i++) {
		struct p3_objtab *t =
		    p3_handle_type(r.h[i]) == P3_HT_ME ? &o->lib->lib_mes : &o->lib->lib_mds;
		p3_obj_unreserve_locked(t, r.h[i]);
	}
	p3_lib_unlock(o->lib);
	return PTL_OK;
}

static int lib_me(struct mcpd_off *o, const struct myri_cmd *cmd, uint32_t *out)
{
	struct myri_lib_me a;
	memcpy(&a, cmd->hdr, sizeof(a));
	ptl_process_id_t id = {.nid = a.match_nid, .pid = a.match_pid};
	if (cmd->lib_op == MYRI_LIB_ME_INSERT) {
		ptl_pt_index_t pt = a.pt;
		ptl_handle_me_t me = PTL_INVALID_HANDLE;
		o->lib->lib_mes.ot_want = a.want;
		int rc = p3_lib_local_iface.me_insert(o->lib, a.base, a.pt, id, a.mbits, a.ibits,
		                                      a.unlink, a.pos, &pt, &me);
		want_settle(o->lib, &o->lib->lib_mes, a.want, rc);
		out[0] = pt;
		out[1] = me;
		return rc;
	}
	ptl_md_t umd;
	ptl_md_iovec_t *iov;
	int posted = (cmd->nic_token & MYRI_LIB_POSTED) != 0;
	int rc = md_from_run(o->ep, cmd, &a.md, &umd, &iov);
	if (rc != PTL_OK) {
		if (posted) { /* the reservations go, as for any failed creation */
			want_settle(o->lib, &o->lib->lib_mds, a.want_md, rc);
			want_settle(o->lib, &o->lib->lib_mes, a.want, rc);
		}
		return rc;
	}
	ptl_handle_me_t me = PTL_INVALID_HANDLE;
	ptl_handle_md_t md = PTL_INVALID_HANDLE;
	if (posted) { /* PtlMEMDPostNoWait: reserved handles; a refusal is an event */
		ptl_md_t shown;
		md_from_wire(&a.md, &shown);
		o->lib->lib_mes.ot_want = a.want;
		o->lib->lib_mds.ot_want = a.want_md;
		rc = p3_lib_me_md_post_queued(o->lib, a.base, id, a.mbits, a.ibits, a.unlink, a.pos,
		                              &umd, a.md_unlink, a.test_eq, (uint32_t)cmd->offset,
		                              &shown, a.want_md, &me, &md);
		want_settle(o->lib, &o->lib->lib_mds, a.want_md, rc);
		want_settle(o->lib, &o->lib->lib_mes, a.want, rc);
	} else {
		rc = p3_lib_local_iface.me_md_post(o->lib, a.base, id, a.mbits, a.ibits, a.unlink,
		                                   a.pos, &umd, a.md_unlink, a.test_eq, &me, &md);
	}
	free(iov);
	if (rc == PTL_OK)
		md_restore_start(o->lib, md, a.md.start);
	out[0] = me;
	out[1] = md;
	return rc;
}

static int lib_md(struct mcpd_off *o, const struct myri_cmd *cmd, uint8_t *res)
{
	struct myri_lib_md a;
	memcpy(&a, cmd->hdr, sizeof(a));
	ptl_md_t umd, old;
	ptl_md_iovec_t *iov = NULL;
	int rc = PTL_OK;
	int have_new = cmd->lib_op == MYRI_LIB_MD_ATTACH || (a.flags & 2);
	if (have_new && (rc = md_from_run(o->ep, cmd, &a.md, &umd, &iov)) != PTL_OK) {
		if (cmd->lib_op == MYRI_LIB_MD_ATTACH)
			want_settle(o->lib, &o->lib->lib_mds, a.want, rc);
		return rc;
	}
	if (cmd->lib_op == MYRI_LIB_MD_ATTACH) {
		ptl_handle_md_t md = PTL_INVALID_HANDLE;
		o->lib->lib_mds.ot_want = a.want;
		rc = p3_lib_local_iface.md_attach(o->lib, a.handle, &umd, a.unlink, &md);
		want_settle(o->lib, &o->lib->lib_mds, a.want, rc);
		if (rc == PTL_OK)
			md_restore_start(o->lib, md, a.md.start);
		memcpy(res, &md, sizeof(md));
	} else {
		memset(&old, 0, sizeof(old));
		rc = p3_lib_local_iface.md_update(o->lib, a.handle, (a.flags & 1) ? &old : NULL,
		                                  have_new ? &umd : NULL, a.test_eq);
		if (rc == PTL_OK && have_new)
			md_restore_start(o->lib, a.handle, a.md.start);
		struct myri_md w;
		md_to_wire(&old, &w);
		memcpy(res, &w, sizeof(w));
	}
	free(iov);
	return rc;
}

static int lib_move(struct mcpd_off *o, const struct myri_cmd *cmd)
{
	struct myri_lib_move a;
	memcpy(&a, cmd->hdr, sizeof(a));
	ptl_process_id_t t = {.nid = a.nid, .pid = a.pid};
	switch (cmd->lib_op) {
	case MYRI_LIB_PUT:
		return p3_lib_local_iface.put(o->lib, a.md, a.whole, a.local_offset, a.length,
		                              a.ack, t, a.pt, a.ac, a.mbits, a.remote_offset,
		                              a.hdr_data);
	case MYRI_LIB_GET:
		return p3_lib_local_iface.get(o->lib, a.md, a.whole, a.local_offset, a.length, t,
		                              a.pt, a.ac, a.mbits, a.remote_offset);
	default:
		return p3_lib_local_iface.getput(o->lib, a.md, a.md2, t, a.pt, a.ac, a.mbits,
		                                 a.remote_offset, a.hdr_data);
	}
}

/* Calls on an open LIB: the PTL_* code; results into res (MYRI_HDR_LEN). */
static int lib_call(struct mcpd_off *o, const struct myri_cmd *cmd, uint8_t *res)
{
	const struct p3_lib_iface *li = &p3_lib_local_iface;
	uint64_t a0;
	uint32_t v[2] = {0, 0};
	int rc;
	memcpy(&a0, cmd->hdr, sizeof(a0));
	switch (cmd->lib_op) {
	case MYRI_LIB_STATUS: {
		ptl_sr_value_t val = 0;
		rc = li->status(o->lib, (ptl_sr_index_t)a0, &val);
		memcpy(res, &val, sizeof(val));
		return rc;
	}
	case MYRI_LIB_DEBUG:
		v[0] = li->debug(o->lib, (unsigned)a0);
		rc = PTL_OK;
		break;
	case MYRI_LIB_ME_INSERT:
	case MYRI_LIB_ME_MD_POST:
		rc = lib_me(o, cmd, v);
		break;
	case MYRI_LIB_ME_UNLINK:
		return li->me_unlink(o->lib, (ptl_handle_me_t)a0);
	case MYRI_LIB_MD_ATTACH:
	case MYRI_LIB_MD_UPDATE:
		return lib_md(o, cmd, res);
	case MYRI_LIB_MD_UNLINK:
		return li->md_unlink(o->lib, (ptl_handle_md_t)a0);
	case MYRI_LIB_EQ_ALLOC: {
		ptl_handle_eq_t eq = PTL_INVALID_HANDLE;
		struct p3_eq_ring *ring = NULL;
		/* the handler is the host's: it runs there (host_offload.c) */
		rc = li->eq_alloc(o->lib, a0, PTL_EQ_HANDLER_NONE, &eq, &ring);
		v[0] = eq;
		v[1] = ring ? (uint32_t)((uint8_t *)ring - o->ep->arena) : 0;
		break;
	}
	case MYRI_LIB_EQ_FREE:
		return li->eq_free(o->lib, (ptl_handle_eq_t)a0);
	case MYRI_LIB_AC_ENTRY: {
		struct myri_lib_ac a;
		memcpy(&a, cmd->hdr, sizeof(a));
		ptl_process_id_t id = {.nid = a.nid, .pid = a.pid};
		return li->ac_entry(o->lib, a.ac, id, a.uid, a.jid, a.pt);
	}
	case MYRI_LIB_PUT:
	case MYRI_LIB_GET:
	case MYRI_LIB_GETPUT:
		return lib_move(o, cmd);
	case MYRI_LIB_HANDLE_CHECK:
		return li->handle_check(o->lib, (ptl_handle_any_t)a0);
	case MYRI_LIB_RESERVE:
		return lib_reserve(o, a0, res);
	case MYRI_LIB_UNRESERVE:
		return lib_unreserve(o, cmd);
	default:
		return PTL_FAIL;
	}
	memcpy(res, v, sizeof(v));
	return rc;
}

static void reply(struct mcpd_ep *ep, uint64_t token, int rc, const uint8_t *res)
{
	struct myri_evt e;
	memset(&e, 0, sizeof(e));
	e.type = MYRI_EVT_LIB_REPLY;
	e.token = token;
	e.status = rc;
	memcpy(e.hdr, res, MYRI_HDR_LEN);
	mcpd_post_event(ep, &e);
}

/* A MYRI_CMD_LIB command (already through mcpd_cmd_check).  Answers with
 * LIB_REPLY and returns 0, or returns -errno (a REJECT) when the endpoint
 * cannot offload at all. */
int mcpd_off_cmd(struct mcpd_ep *ep, const struct myri_cmd *cmd)
{
	uint8_t res[MYRI_HDR_LEN];
	int rc;
	memset(res, 0, sizeof(res));
	if (cmd->lib_op == MYRI_LIB_OPEN) {
		if (ep->off || !ep->arena)
			return ep->off ? -EALREADY : -ENOSPC;
		struct mcpd_off *o = calloc(1, sizeof(*o));
		if (!o)
			return -ENOMEM;
		o->ep = ep;
		struct myri_lib_open a;
		struct myri_lib_open_rep rep;
		memset(&rep, 0, sizeof(rep));
		memcpy(&a, cmd->hdr, sizeof(a));
		g_cur = o;
		rc = lib_open(o, &a, &rep);
		if (rc != PTL_OK) {
			free(o);
		} else {
			ep->off = o;
			memcpy(res, &rep, sizeof(rep));
		}
		reply(ep, cmd->token, rc, res);
		return 0;
	}
	struct mcpd_off *o = ep->off;
	if (!o || !o->lib)
		return -ENOTCONN; /* no LIB_OPEN on this endpoint */
	g_cur = o;
	if (cmd->lib_op == MYRI_LIB_CLOSE) {
		lib_close(o);
		rc = PTL_OK;
	} else {
		rc = lib_call(o, cmd, res);
	}
	int posted = (cmd->nic_token & MYRI_LIB_POSTED) != 0;
	int quiet = posted && (cmd->nic_token & MYRI_LIB_QUIET) != 0;
	/* a posted ME_MD_POST refused by its EQ test: the event in the test EQ
	 * is the answer (p3_lib_me_md_post_queued) */
	if (posted && cmd->lib_op == MYRI_LIB_ME_MD_POST && rc == PTL_MD_NO_UPDATE) {
		mcpd_count(ep, MYRI_C_lib_posts_refused, 1);
		quiet = 1;
		rc = PTL_OK;
	}
	mcpd_count(ep, posted ? MYRI_C_lib_posted : MYRI_C_lib_calls, 1);
	if (quiet && rc != PTL_OK) /* the host asked not to hear of it */
		mcpd_count(ep, MYRI_C_lib_posted_quiet_failed, 1);
	else if (posted && rc != PTL_OK)
		mcpd_count(ep, MYRI_C_lib_posted_failed, 1);
	if (!quiet && (rc != PTL_OK || !posted))
		reply(ep, cmd->token, rc, res); /* a posted call is answered only if it failed */
	return 0;
}

/* The endpoint goes: the wire first (its upcalls fail what is in flight
 * through LIB), then LIB. */
void mcpd_off_destroy(struct mcpd_ep *ep)
{
	struct mcpd_off *o = ep->off;
	if (ep->wire) {
		rmpp_ep_destroy(ep->wire);
		ep->wire = NULL;
	}
	lib_close(o);
	while (o->ops)
		op_free(o, o->ops);
	g_cur = NULL;
	free(o);
	ep->off = NULL;
}
