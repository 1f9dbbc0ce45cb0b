/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_atomic.c - FI_ATOMIC in software: the target's provider applies the
 * operation to the registered region and answers.
 *
 * Portals 3.3 has one atomic operation (PtlGetPut, a swap); the fi_atomic(3)
 * operations are carried as requests to an agent in the target's provider:
 *   initiator: a reply ME on its own PT_RDV (match bits ATOMIC_REPLY | a
 *     reply id unique in the domain) over the result buffer (fetch and
 *     compare) or zero bytes; then a put without ACK of the request (header,
 *     operands, compare values; copied, so the caller's buffers are free at
 *     return) to the target's PT_RDV, match bits ATOMIC_REQ.
 *   target: the domain's agent keeps two request buffers on PT_RDV
 *     (MAX_SIZE: each request lands whole after the previous one; a buffer
 *     that fills unlinks and is attached again at once, its requests having
 *     been applied as their events were read).  Any endpoint's progress
 *     drains the agent's EQ: each request is checked (key, bounds, access),
 *     applied under the domain lock, and answered by a put of the old values
 *     (none for the non-fetching ops) with the status in the header data.
 *   initiator: the operation completes when both its request's SEND_END and
 *     the reply have been seen: every atomic is delivery-complete (applied at
 *     the target), and a bad key or range completes with an error entry
 *     instead of being dropped as a Portals RMA would be.
 * Atomicity holds among the atomics of one target domain (one lock), which
 * is what fi_atomic(3) promises; the target must call into the provider
 * (manual progress) for its requests to be applied, as for every rendezvous.
 * No atomic ordering (FI_ORDER_ATOMIC_*) is offered. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "ptl3.h"

#define REQ_MAGIC       0x50334154u /* "P3AT" */
#define AGENT_BUF_BYTES (256 * 1024)
#define AGENT_NBUF      2

struct atomic_req {
	uint32_t magic;
	uint8_t op;       /* enum fi_op */
	uint8_t datatype; /* enum fi_datatype */
	uint8_t fetch;    /* send the old values back */
	uint8_t has_cmp;  /* compare values follow the operands */
	uint32_t count;
	uint32_t reserved;
	uint64_t key;
	uint64_t offset; /* in the region (mr_mode 0: offsets) */
	uint64_t reply_id;
};

struct agent_buf {
	char *mem;
	ptl_handle_me_t me;
	ptl_handle_md_t md;
};

struct ptl3_atomic_agent {
	ptl_handle_eq_t eq;
	struct agent_buf buf[AGENT_NBUF];
};

static const ptl_process_id_t any_id = {PTL_NID_ANY, PTL_PID_ANY};

static size_t req_max_bytes(void)
{
	return sizeof(struct atomic_req) + 2 * (size_t)PTL3_ATOMIC_MAX_BYTES;
}

/* ---- target: the agent */

static int agent_buf_post_locked(struct ptl3_domain *dom, struct agent_buf *b)
{
	int rc = PtlMEAttach(dom->ni, (ptl_pt_index_t)ptl3_params.pt_base + PTL3_PT_RDV, any_id,
	                     PTL3_MBITS_ATOMIC_REQ, 0, PTL_UNLINK, PTL_INS_AFTER, &b->me);
	if (rc != PTL_OK)
		return rc;
	ptl_md_t md;
	memset(&md, 0, sizeof(md));
	md.start = b->mem;
	md.length = AGENT_BUF_BYTES;
	md.threshold = PTL_MD_THRESH_INF;
	md.max_size = req_max_bytes();
	md.options = PTL_MD_OP_PUT | PTL_MD_MAX_SIZE | PTL_MD_EVENT_START_DISABLE;
	md.user_ptr = b;
	md.eq_handle = dom->agent->eq;
	rc = PtlMDAttach(b->me, md, PTL_UNLINK, &b->md);
	if (rc != PTL_OK) {
		PtlMEUnlink(b->me);
		b->me = PTL_INVALID_HANDLE;
	}
	return rc;
}

int ptl3_atomic_agent_setup_locked(struct ptl3_domain *dom)
{
	if (dom->agent)
		return 0;
	struct ptl3_atomic_agent *a = calloc(1, sizeof(*a));
	if (!a)
		return -FI_ENOMEM;
	if (PtlEQAlloc(dom->ni, (ptl_size_t)ptl3_params.eq_size, PTL_EQ_HANDLER_NONE, &a->eq) !=
	    PTL_OK) {
		free(a);
		return -FI_ENOMEM;
	}
	dom->agent = a;
	for (int i = 0; i < AGENT_NBUF; i++) {
		a->buf[i].me = PTL_INVALID_HANDLE;
		a->buf[i].mem = malloc(AGENT_BUF_BYTES);
		if (!a->buf[i].mem || agent_buf_post_locked(dom, &a->buf[i]) != PTL_OK) {
			PTL3_WARN(FI_LOG_EP_CTRL, "atomic agent: no request buffer\n");
			ptl3_atomic_agent_teardown_locked(dom);
			return -FI_ENOMEM;
		}
	}
	return 0;
}

void ptl3_atomic_agent_teardown_locked(struct ptl3_domain *dom)
{
	struct ptl3_atomic_agent *a = dom->agent;
	if (!a)
		return;
	for (int i = 0; i < AGENT_NBUF; i++) {
		if (a->buf[i].me != PTL_INVALID_HANDLE)
			PtlMEUnlink(a->buf[i].me);
	}
	/* replies still going out keep their buffers: free them as they end */
	ptl_event_t ev;
	while (PtlEQGetNoProgress(a->eq, &ev) == PTL_OK) {
		if (ev.type == PTL_EVENT_SEND_END && ev.md.user_ptr != &a->buf[0] &&
		    ev.md.user_ptr != &a->buf[1])
			free(ev.md.user_ptr);
	}
	PtlEQFree(a->eq);
	for (int i = 0; i < AGENT_NBUF; i++)
		free(a->buf[i].mem);
	free(a);
	dom->agent = NULL;
}

static struct ptl3_mr *mr_of_locked(struct ptl3_domain *dom, uint64_t key)
{
	for (struct ptl3_mr *m = dom->mrs; m; m = m->next)
		if (m->exposed && m->mr_fid.key == key)
			return m;
	return NULL;
}

static int req_kind_ok(const struct atomic_req *r)
{
	int cmp_op = r->op >= FI_CSWAP && r->op <= FI_MSWAP;
	if (cmp_op != !!r->has_cmp || (r->op == FI_ATOMIC_READ && !r->fetch))
		return 0;
	return ptl3_atomic_offered((enum fi_datatype)r->datatype, (enum fi_op)r->op);
}

/* check and apply one request; returns the status for the reply (0 or a
 * positive FI_ errno) and the old values in old[] when it fetches */
static int agent_apply_locked(struct ptl3_domain *dom, const struct atomic_req *r,
                              const char *operands, size_t len, char *old)
{
	if (!req_kind_ok(r))
		return FI_EOPNOTSUPP;
	size_t bytes = (size_t)r->count * ptl3_atomic_size((enum fi_datatype)r->datatype);
	size_t need = (r->op == FI_ATOMIC_READ ? 0 : bytes) + (r->has_cmp ? bytes : 0);
	if (!r->count || bytes > PTL3_ATOMIC_MAX_BYTES || len < need)
		return FI_EINVAL;
	struct ptl3_mr *m = mr_of_locked(dom, r->key);
	if (!m)
		return FI_EACCES;
	uint64_t want =
	    (r->op == FI_ATOMIC_READ ? 0 : FI_REMOTE_WRITE) | (r->fetch ? FI_REMOTE_READ : 0);
	if ((m->access & want) != want)
		return FI_EACCES;
	if (r->offset > m->len || bytes > m->len - r->offset)
		return FI_EINVAL;
	const char *src = r->op == FI_ATOMIC_READ ? NULL : operands;
	const char *cmp = r->has_cmp ? operands + bytes : NULL;
	ptl3_atomic_apply((enum fi_datatype)r->datatype, (enum fi_op)r->op,
	                  (char *)m->buf + r->offset, src, cmp, r->fetch ? old : NULL, r->count);
	return 0;
}

static void agent_reply_locked(struct ptl3_domain *dom, ptl_process_id_t to, uint64_t reply_id,
                               int status, char *old, size_t len)
{
	ptl_md_t md;
	memset(&md, 0, sizeof(md));
	md.start = old;
	md.length = len;
	md.threshold = 1;
	md.options = PTL_MD_EVENT_START_DISABLE | PTL_MD_EVENT_UNLINK_DISABLE;
	md.user_ptr = old;
	md.eq_handle = dom->agent->eq;
	ptl_handle_md_t mdh;
	int rc = PtlMDBind(dom->ni, md, PTL_UNLINK, &mdh);
	if (rc == PTL_OK) {
		rc = PtlPut(mdh, PTL_NOACK_REQ, to,
		            (ptl_pt_index_t)ptl3_params.pt_base + PTL3_PT_RDV, 0,
		            PTL3_MBITS_ATOMIC_REPLY | reply_id, 0, (ptl_hdr_data_t)status);
		if (rc == PTL_OK)
			return; /* freed at its SEND_END */
		PtlMDUnlink(mdh);
	}
	PTL3_WARN(FI_LOG_EP_DATA, "atomic reply to %u:%u: %s\n", to.nid, to.pid, PtlErrorStr(rc));
	free(old);
}

static void agent_request_locked(struct ptl3_domain *dom, const ptl_event_t *ev)
{
	struct atomic_req r;
	const char *at = (const char *)ev->md.start + ev->offset;
	if (ev->ni_fail_type != PTL_NI_OK)
		return; /* nothing arrived: the initiator's own SEND_END fails */
	if (ev->mlength < sizeof(r) || ev->mlength != ev->rlength) {
		dom->atomics_dropped++; /* not a request of ours */
		return;
	}
	memcpy(&r, at, sizeof(r));
	if (r.magic != REQ_MAGIC) {
		dom->atomics_dropped++;
		return;
	}
	size_t size = ptl3_atomic_size((enum fi_datatype)r.datatype);
	size_t bytes = r.fetch && r.count <= PTL3_ATOMIC_MAX_BYTES ? r.count * size : 0;
	char *old = malloc(bytes ? bytes : 1);
	if (!old)
		return; /* the initiator's close bounds its wait */
	int status = agent_apply_locked(dom, &r, at + sizeof(r), ev->mlength - sizeof(r), old);
	if (status)
		dom->atomics_refused++;
	else
		dom->atomics_applied++;
	agent_reply_locked(dom, ev->initiator, r.reply_id & PTL3_SENDID_GENERAL_MASK, status, old,
	                   status ? 0 : bytes);
}

void ptl3_atomic_agent_drain_locked(struct ptl3_domain *dom)
{
	struct ptl3_atomic_agent *a = dom->agent;
	ptl_event_t ev;
	while (a && PtlEQGetNoProgress(a->eq, &ev) == PTL_OK) {
		struct agent_buf *b = ev.md.user_ptr;
		int is_buf = b == &a->buf[0] || b == &a->buf[1];
		if (!is_buf) {
			if (ev.type == PTL_EVENT_SEND_END)
				free(ev.md.user_ptr); /* a reply went out */
		} else if (ev.type == PTL_EVENT_PUT_END) {
			agent_request_locked(dom, &ev);
		} else if (ev.type == PTL_EVENT_UNLINK) {
			/* full: every request in it has been applied */
			b->me = PTL_INVALID_HANDLE;
			if (agent_buf_post_locked(dom, b) != PTL_OK)
				PTL3_WARN(FI_LOG_EP_DATA, "atomic agent: request buffer lost\n");
		}
	}
}

/* ---- initiator */

enum { KIND_BASE, KIND_FETCH, KIND_COMPARE };

static int kind_ok(int kind, enum fi_datatype dt, enum fi_op op)
{
	int cmp_op = op >= FI_CSWAP && op <= FI_MSWAP;
	if (kind == KIND_COMPARE ? !cmp_op : cmp_op)
		return 0;
	if (kind == KIND_BASE && op == FI_ATOMIC_READ)
		return 0;
	return ptl3_atomic_offered(dt, op);
}

static int valid_count(int kind, enum fi_datatype dt, enum fi_op op, size_t *count)
{
	if (!kind_ok(kind, dt, op))
		return -FI_EOPNOTSUPP;
	if (count)
		*count = PTL3_ATOMIC_MAX_BYTES / ptl3_atomic_size(dt);
	return 0;
}

int ptl3_query_atomic(struct fid_domain *domain, enum fi_datatype datatype, enum fi_op op,
                      struct fi_atomic_attr *attr, uint64_t flags)
{
	if (!domain || !attr || (flags & ~(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC)) ||
	    (flags & FI_FETCH_ATOMIC && flags & FI_COMPARE_ATOMIC))
		return -FI_EINVAL;
	struct ptl3_domain *dom = container_of(domain, struct ptl3_domain, domain_fid);
	if (!dom->atomic)
		return -FI_EOPNOTSUPP;
	int kind = flags & FI_COMPARE_ATOMIC ? KIND_COMPARE
	           : flags & FI_FETCH_ATOMIC ? KIND_FETCH
	                                     : KIND_BASE;
	size_t count;
	int rc = valid_count(kind, datatype, op, &count);
	if (rc)
		return rc;
	attr->size = ptl3_atomic_size(datatype);
	attr->count = count;
	return 0;
}

struct atomic_args {
	int kind;
	const void *buf;     /* operands (NULL for a read) */
	const void *compare; /* compare values (KIND_COMPARE) */
	void *result;        /* old values (fetch, compare) */
	size_t count;
	fi_addr_t dest;
	uint64_t addr, key;
	enum fi_datatype dt;
	enum fi_op op;
	void *context;
	uint64_t flags;
};

static int args_ok(const struct ptl3_ep *ep, const struct atomic_args *a)
{
	if (!kind_ok(a->kind, a->dt, a->op) || !a->count ||
	    a->count * ptl3_atomic_size(a->dt) > PTL3_ATOMIC_MAX_BYTES)
		return 0;
	if ((a->op != FI_ATOMIC_READ && !a->buf) || (a->kind != KIND_BASE && !a->result) ||
	    (a->kind == KIND_COMPARE && !a->compare))
		return 0;
	return ep->atomic;
}

/* the request into op's bounce buffer; returns its length or 0 */
static size_t build_request(struct ptl3_op *op, const struct atomic_args *a, uint64_t reply_id)
{
	size_t bytes = a->count * ptl3_atomic_size(a->dt);
	size_t len = sizeof(struct atomic_req) + (a->op == FI_ATOMIC_READ ? 0 : bytes) +
	             (a->kind == KIND_COMPARE ? bytes : 0);
	struct atomic_req r = {
	    .magic = REQ_MAGIC,
	    .op = (uint8_t)a->op,
	    .datatype = (uint8_t)a->dt,
	    .fetch = a->kind != KIND_BASE,
	    .has_cmp = a->kind == KIND_COMPARE,
	    .count = (uint32_t)a->count,
	    .key = a->key,
	    .offset = a->addr,
	    .reply_id = reply_id,
	};
	char req[sizeof(struct atomic_req) + 2 * PTL3_ATOMIC_MAX_BYTES];
	memcpy(req, &r, sizeof(r));
	size_t off = sizeof(r);
	if (a->op != FI_ATOMIC_READ) {
		memcpy(req + off, a->buf, bytes);
		off += bytes;
	}
	if (a->kind == KIND_COMPARE)
		memcpy(req + off, a->compare, bytes);
	return ptl3_op_bounce(op, req, len) ? len : 0;
}

/* the reply ME (on our PT_RDV) and the request MD of op */
static int post_locked(struct ptl3_ep *ep, struct ptl3_op *op, const struct atomic_args *a,
                       ptl_process_id_t id, uint64_t reply_id, size_t reqlen)
{
	int rc =
	    PtlMEAttach(ep->dom->ni, ep->pt_base + PTL3_PT_RDV, id,
	                PTL3_MBITS_ATOMIC_REPLY | reply_id, 0, PTL_UNLINK, PTL_INS_AFTER, &op->me);
	if (rc != PTL_OK)
		return rc;
	ptl_md_t md;
	memset(&md, 0, sizeof(md));
	size_t bytes = a->kind == KIND_BASE ? 0 : a->count * ptl3_atomic_size(a->dt);
	md.start = bytes ? a->result : (void *)&ptl3_zero_byte;
	md.length = bytes;
	md.threshold = 1;
	md.options = PTL_MD_OP_PUT | PTL_MD_TRUNCATE | PTL_MD_EVENT_START_DISABLE |
	             PTL_MD_EVENT_UNLINK_DISABLE;
	md.user_ptr = ptl3_op_uptr(op);
	md.eq_handle = ep->eq;
	ptl_handle_md_t reply_md;
	rc = PtlMDAttach(op->me, md, PTL_UNLINK, &reply_md);
	if (rc == PTL_OK) {
		md.start = op->bounce;
		md.length = reqlen;
		md.options = PTL_MD_EVENT_START_DISABLE | PTL_MD_EVENT_UNLINK_DISABLE;
		rc = PtlMDBind(ep->dom->ni, md, PTL_UNLINK, &op->md);
		if (rc == PTL_OK) {
			rc = PtlPut(op->md, PTL_NOACK_REQ, id, ep->pt_base + PTL3_PT_RDV, 0,
			            PTL3_MBITS_ATOMIC_REQ, 0, 0);
			if (rc == PTL_OK)
				return PTL_OK;
			PtlMDUnlink(op->md);
		}
	}
	PtlMEUnlink(op->me);
	op->me = PTL_INVALID_HANDLE;
	return rc;
}

static ssize_t atomic_common(struct ptl3_ep *ep, const struct atomic_args *a)
{
	ptl3_lock(ep->dom);
	if (!ep->enabled) {
		ptl3_unlock(ep->dom);
		return -FI_EOPBADSTATE;
	}
	ptl_process_id_t id;
	if (!args_ok(ep, a) || ptl3_av_get(ep->av, a->dest, &id, NULL)) {
		ptl3_unlock(ep->dom);
		return -FI_EINVAL;
	}
	ptl3_ep_drain_locked(ep);
	struct ptl3_op *op = ptl3_op_alloc_locked(ep, PTL3_OP_ATOMIC);
	if (!op) {
		ptl3_unlock(ep->dom);
		return -FI_EAGAIN;
	}
	uint64_t reply_id = ep->dom->next_send_id++ & PTL3_SENDID_GENERAL_MASK;
	op->context = a->context;
	op->target = id;
	op->cq_flags = FI_ATOMIC | (a->kind == KIND_BASE ? FI_WRITE : FI_READ);
	op->want_comp =
	    !(a->flags & PTL3_INJECT_CALL) && (!ep->tx_selective || (a->flags & FI_COMPLETION));
	size_t reqlen = build_request(op, a, reply_id);
	int rc = reqlen ? post_locked(ep, op, a, id, reply_id, reqlen) : PTL_NO_SPACE;
	if (rc != PTL_OK) {
		ptl3_op_free_locked(ep, op);
		ptl3_unlock(ep->dom);
		return rc == PTL_NO_SPACE ? -FI_EAGAIN : -FI_EIO;
	}
	ep->outstanding_sends++;
	ptl3_unlock(ep->dom);
	return 0;
}

static void complete_locked(struct ptl3_ep *ep, struct ptl3_op *op, int err)
{
	if (op->want_comp || err)
		ptl3_cq_push_locked(ep->tx_cq, op->context, op->cq_flags, 0, NULL, 0, 0, err, 0);
	ptl3_cntr_inc_locked(op->cq_flags & FI_WRITE ? ep->write_cntr : ep->read_cntr, err != 0);
	ep->outstanding_sends--;
	ptl3_op_free_locked(ep, op);
}

void ptl3_atomic_on_event_locked(struct ptl3_ep *ep, struct ptl3_op *op, const ptl_event_t *ev)
{
	int fail = ev->ni_fail_type != PTL_NI_OK;
	if (ev->type == PTL_EVENT_SEND_END) {
		op->got_send_end = 1;
		if (fail && PtlMEUnlink(op->me) == PTL_OK) {
			complete_locked(ep, op, FI_EIO); /* no reply can come */
			return;
		}
	} else if (ev->type == PTL_EVENT_PUT_END) {
		op->done = 1;
		/* the target's status: 0 or a positive FI_ errno */
		uint64_t status = ev->hdr_data;
		op->acked = fail || status > FI_ENOCQ ? FI_EIO : status;
	} else {
		return;
	}
	if (op->got_send_end && op->done)
		complete_locked(ep, op, (int)op->acked);
}

/* ---- fi_ops_atomic */

/* every entry point of fi_ops_atomic ends here: one operation of `kind` */
static ssize_t atomic_call(struct fid_ep *fep, int kind, const void *buf, const void *compare,
                           void *result, size_t count, fi_addr_t dest, uint64_t addr, uint64_t key,
                           enum fi_datatype dt, enum fi_op op, void *context, uint64_t flags)
{
	struct atomic_args a = {kind, buf, compare, result, count,   dest,
	                        addr, key, dt,      op,     context, flags};
	return atomic_common(ptl3_ep_of(fep), &a);
}

/* an fi_*atomicmsg call (msg checked by the caller: one rma_iov): the
 * target, datatype, op and context from msg, the operands given; the
 * provider's internal flag PTL3_INJECT_CALL cannot come from the caller */
static ssize_t atomic_msg(struct fid_ep *fep, int kind, const struct fi_msg_atomic *msg,
                          const void *buf, const void *compare, void *result, size_t count,
                          uint64_t flags)
{
	return atomic_call(fep, kind, buf, compare, result, count, msg->addr, msg->rma_iov[0].addr,
	                   msg->rma_iov[0].key, msg->datatype, msg->op, msg->context,
	                   flags & ~PTL3_INJECT_CALL);
}

static ssize_t a_writemsg(struct fid_ep *fep, const struct fi_msg_atomic *msg, uint64_t flags)
{
	if (!msg || msg->iov_count != 1 || msg->rma_iov_count != 1 || !msg->msg_iov ||
	    !msg->rma_iov || msg->msg_iov[0].count != msg->rma_iov[0].count)
		return -FI_EINVAL;
	return atomic_msg(fep, KIND_BASE, msg, msg->msg_iov[0].addr, NULL, NULL,
	                  msg->msg_iov[0].count, flags);
}

static ssize_t a_write(struct fid_ep *fep, const void *buf, size_t count, void *desc,
                       fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
                       enum fi_op op, void *context)
{
	return atomic_call(fep, KIND_BASE, buf, NULL, NULL, count, dest, addr, key, dt, op, context,
	                   ptl3_ep_of(fep)->tx_op_flags);
}

static ssize_t a_writev(struct fid_ep *fep, const struct fi_ioc *iov, void **desc, size_t count,
                        fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
                        enum fi_op op, void *context)
{
	if (count != 1 || !iov)
		return -FI_EINVAL;
	return a_write(fep, iov[0].addr, iov[0].count, NULL, dest, addr, key, dt, op, context);
}

static ssize_t a_inject(struct fid_ep *fep, const void *buf, size_t count, fi_addr_t dest,
                        uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op)
{
	return atomic_call(fep, KIND_BASE, buf, NULL, NULL, count, dest, addr, key, dt, op, NULL,
	                   PTL3_INJECT_CALL);
}

static ssize_t a_readwrite(struct fid_ep *fep, const void *buf, size_t count, void *desc,
                           void *result, void *result_desc, fi_addr_t dest, uint64_t addr,
                           uint64_t key, enum fi_datatype dt, enum fi_op op, void *context)
{
	return atomic_call(fep, KIND_FETCH, buf, NULL, result, count, dest, addr, key, dt, op,
	                   context, ptl3_ep_of(fep)->tx_op_flags);
}

static ssize_t a_readwritev(struct fid_ep *fep, const struct fi_ioc *iov, void **desc, size_t count,
                            struct fi_ioc *resultv, void **result_desc, size_t result_count,
                            fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
                            enum fi_op op, void *context)
{
	if (count != 1 || result_count != 1 || !iov || !resultv || iov[0].count != resultv[0].count)
		return -FI_EINVAL;
	return a_readwrite(fep, iov[0].addr, iov[0].count, NULL, resultv[0].addr, NULL, dest, addr,
	                   key, dt, op, context);
}

static ssize_t a_readwritemsg(struct fid_ep *fep, const struct fi_msg_atomic *msg,
                              struct fi_ioc *resultv, void **result_desc, size_t result_count,
                              uint64_t flags)
{
	if (!msg || msg->iov_count > 1 || msg->rma_iov_count != 1 || !msg->rma_iov ||
	    result_count != 1 || !resultv || resultv[0].count != msg->rma_iov[0].count)
		return -FI_EINVAL;
	return atomic_msg(fep, KIND_FETCH, msg, msg->iov_count ? msg->msg_iov[0].addr : NULL, NULL,
	                  resultv[0].addr, resultv[0].count, flags);
}

static ssize_t a_compwrite(struct fid_ep *fep, const void *buf, size_t count, void *desc,
                           const void *compare, void *compare_desc, void *result, void *result_desc,
                           fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
                           enum fi_op op, void *context)
{
	return atomic_call(fep, KIND_COMPARE, buf, compare, result, count, dest, addr, key, dt, op,
	                   context, ptl3_ep_of(fep)->tx_op_flags);
}

static ssize_t a_compwritev(struct fid_ep *fep, const struct fi_ioc *iov, void **desc, size_t count,
                            const struct fi_ioc *comparev, void **compare_desc,
                            size_t compare_count, struct fi_ioc *resultv, void **result_desc,
                            size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
                            enum fi_datatype dt, enum fi_op op, void *context)
{
	if (count != 1 || compare_count != 1 || result_count != 1 || !iov || !comparev ||
	    !resultv || iov[0].count != comparev[0].count || iov[0].count != resultv[0].count)
		return -FI_EINVAL;
	return a_compwrite(fep, iov[0].addr, iov[0].count, NULL, comparev[0].addr, NULL,
	                   resultv[0].addr, NULL, dest, addr, key, dt, op, context);
}

static ssize_t a_compwritemsg(struct fid_ep *fep, const struct fi_msg_atomic *msg,
                              const struct fi_ioc *comparev, void **compare_desc,
                              size_t compare_count, struct fi_ioc *resultv, void **result_desc,
                              size_t result_count, uint64_t flags)
{
	if (!msg || msg->iov_count != 1 || !msg->msg_iov || msg->rma_iov_count != 1 ||
	    !msg->rma_iov || compare_count != 1 || !comparev || result_count != 1 || !resultv ||
	    msg->msg_iov[0].count != comparev[0].count || msg->msg_iov[0].count != resultv[0].count)
		return -FI_EINVAL;
	return atomic_msg(fep, KIND_COMPARE, msg, msg->msg_iov[0].addr, comparev[0].addr,
	                  resultv[0].addr, msg->msg_iov[0].count, flags);
}

static int a_writevalid(struct fid_ep *fep, enum fi_datatype dt, enum fi_op op, size_t *count)
{
	return ptl3_ep_of(fep)->atomic ? valid_count(KIND_BASE, dt, op, count) : -FI_EOPNOTSUPP;
}

static int a_readwritevalid(struct fid_ep *fep, enum fi_datatype dt, enum fi_op op, size_t *count)
{
	return ptl3_ep_of(fep)->atomic ? valid_count(KIND_FETCH, dt, op, count) : -FI_EOPNOTSUPP;
}

static int a_compwritevalid(struct fid_ep *fep, enum fi_datatype dt, enum fi_op op, size_t *count)
{
	return ptl3_ep_of(fep)->atomic ? valid_count(KIND_COMPARE, dt, op, count) : -FI_EOPNOTSUPP;
}

struct fi_ops_atomic ptl3_atomic_ops = {
    .size = sizeof(struct fi_ops_atomic),
    .write = a_write,
    .writev = a_writev,
    .writemsg = a_writemsg,
    .inject = a_inject,
    .readwrite = a_readwrite,
    .readwritev = a_readwritev,
    .readwritemsg = a_readwritemsg,
    .compwrite = a_compwrite,
    .compwritev = a_compwritev,
    .compwritemsg = a_compwritemsg,
    .writevalid = a_writevalid,
    .readwritevalid = a_readwritevalid,
    .compwritevalid = a_compwritevalid,
};
