/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_cq.c - completion queues: one ordered ring of successes and errors;
 * fi_cq_read returns -FI_EAVAIL when an error entry is at the head. */
#include "config.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ptl3.h"

/* The ring's capacity is a power of two (1024, doubled when full): slots
 * are masked, not divided (a 64-bit division per entry pushed and read). */
static inline size_t cq_slot(const struct ptl3_cq *cq, size_t i)
{
	return i & (cq->cap - 1);
}

/* the head entry taken: an empty ring starts again at slot 0, so that a
 * ping-pong pushes and reads the same cache lines (1024 entries of 72
 * bytes are twice the L1) */
static inline void cq_pop_locked(struct ptl3_cq *cq)
{
	cq->count--;
	cq->head = cq->count ? cq_slot(cq, cq->head + 1) : 0;
}

int ptl3_cq_grow_locked(struct ptl3_cq *cq)
{
	size_t ncap = cq->cap ? cq->cap * 2 : 1024;
	struct ptl3_cq_ent *r = malloc(ncap * sizeof(*r));
	if (!r) {
		PTL3_WARN(FI_LOG_CQ, "completion queue: out of memory, completion lost\n");
		return -FI_ENOMEM;
	}
	for (size_t i = 0; i < cq->count; i++)
		r[i] = cq->ring[cq_slot(cq, cq->head + i)];
	free(cq->ring);
	cq->ring = r;
	cq->cap = ncap;
	cq->head = 0;
	return 0;
}

static size_t entry_size(enum fi_cq_format f)
{
	switch (f) {
	case FI_CQ_FORMAT_CONTEXT:
		return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	default:
		return sizeof(struct fi_cq_tagged_entry);
	}
}

static void copy_out(enum fi_cq_format f, void *dst, const struct fi_cq_tagged_entry *e)
{
	switch (f) {
	case FI_CQ_FORMAT_CONTEXT: {
		struct fi_cq_entry *d = dst;
		d->op_context = e->op_context;
		break;
	}
	case FI_CQ_FORMAT_MSG: {
		struct fi_cq_msg_entry *d = dst;
		d->op_context = e->op_context;
		d->flags = e->flags;
		d->len = e->len;
		break;
	}
	case FI_CQ_FORMAT_DATA: {
		struct fi_cq_data_entry *d = dst;
		d->op_context = e->op_context;
		d->flags = e->flags;
		d->len = e->len;
		d->buf = e->buf;
		d->data = e->data;
		break;
	}
	default: /* MPICH's: an assignment, not a call to memcpy */
		*(struct fi_cq_tagged_entry *)dst = *e;
		break;
	}
}

int ptl3_cq_poll_ready_locked(struct fid_cq *fcq)
{
	struct ptl3_cq *cq = container_of(fcq, struct ptl3_cq, cq_fid);
	if (cq->ep)
		ptl3_ep_progress_locked(cq->ep);
	return cq->count > 0;
}

/* the entries at the head, up to count (out of line: an idle poll, the
 * common case, does not get here) */
static __attribute__((noinline)) ssize_t cq_take_locked(struct ptl3_cq *cq, void *buf, size_t count)
{
	size_t n = 0, es = entry_size(cq->format);
	while (n < count && cq->count) {
		struct ptl3_cq_ent *e = &cq->ring[cq->head];
		if (e->err)
			break;
		copy_out(cq->format, (char *)buf + n * es, &e->e);
		cq_pop_locked(cq);
		n++;
	}
	if (n)
		return (ssize_t)n;
	if (cq->count)
		return -FI_EAVAIL;
	return -FI_EAGAIN;
}

/* inline into cq_read: an idle poll is the progress call and one test
 * (a frame of its own cost ~15 instructions per poll) */
static inline __attribute__((always_inline)) ssize_t cq_read_locked(struct ptl3_cq *cq, void *buf,
                                                                    size_t count)
{
	if (cq->ep)
		ptl3_ep_progress_locked(cq->ep);
	if (!cq->count)
		return -FI_EAGAIN; /* an idle poll: nothing more to do */
	return cq_take_locked(cq, buf, count);
}

/* inline into cq_read: does ptl3_wait_idle_locked have anything to do after
 * this empty read (most of them: no) */
static inline __attribute__((always_inline)) int idle_due(const struct ptl3_cq *cq)
{
	if (!cq->ep)
		return ptl3_params.yield_polls && cq->empty_polls >= ptl3_params.yield_polls;
	const struct ptl3_wait *w = &cq->ep->dom->wait;
	if (w->polls)
		return cq->empty_polls >= w->polls || (cq->empty_polls == 1 && w->block_by_nic);
	return (cq->empty_polls & (PTL3_WAIT_IDLE_RECHECK - 1)) == 0;
}

static ssize_t cq_read(struct fid_cq *fcq, void *buf, size_t count)
{
	if (!fcq || (count && !buf))
		return -FI_EINVAL;
	struct ptl3_cq *cq = container_of(fcq, struct ptl3_cq, cq_fid);
	ptl3_lock_data(cq->dom);
	ssize_t r = cq_read_locked(cq, buf, count);
	/* callers poll in a tight loop: after a run of empty polls give the
	 * CPU away, so an oversubscribed node (more ranks than cores) still
	 * lets the peer we wait for run */
	int yield = 0;
	if (r == -FI_EAGAIN) {
		++cq->empty_polls;
		/* idle: hand our senders back the stage slots we are done
		 * with (ptl3_release.c) before they run short: a full batch
		 * at once, smaller ones after a while */
		struct ptl3_release *rel = cq->ep ? &cq->ep->rel : NULL;
		if (rel && (rel->ndeferred ||
			    (rel->npending &&
			     (rel->due || (cq->empty_polls & (PTL3_RELEASE_IDLE_POLLS - 1)) == 0))))
			ptl3_release_idle_locked(cq->ep, cq->empty_polls);
		/* after a run of empty reads: go on, yield, or wait in
		 * Portals for an event (oversubscribed, or the NIC on this
		 * core: ptl3_wait.c) */
		int block_ms = 0;
		enum ptl3_idle act =
		    idle_due(cq) ? ptl3_wait_idle_locked(cq, &block_ms) : PTL3_IDLE_POLL;
		if (act == PTL3_IDLE_YIELD) {
			yield = 1;
		} else if (act == PTL3_IDLE_BLOCK) {
			ptl3_ep_block_locked(cq->ep, block_ms);
			r = cq_read_locked(cq, buf, count);
		}
	} else {
		cq->empty_polls = 0;
	}
	ptl3_unlock_data(cq->dom);
	if (yield)
		sched_yield();
	return r;
}

static ssize_t cq_readfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src_addr)
{
	ssize_t r = cq_read(fcq, buf, count);
	if (r > 0 && src_addr)
		for (ssize_t i = 0; i < r; i++)
			src_addr[i] = FI_ADDR_NOTAVAIL;
	return r;
}

static ssize_t cq_readerr(struct fid_cq *fcq, struct fi_cq_err_entry *buf, uint64_t flags)
{
	if (!fcq || !buf)
		return -FI_EINVAL;
	struct ptl3_cq *cq = container_of(fcq, struct ptl3_cq, cq_fid);
	ssize_t r = -FI_EAGAIN;
	ptl3_lock(cq->dom);
	if (cq->count && cq->ring[cq->head].err) {
		struct ptl3_cq_ent *e = &cq->ring[cq->head];
		size_t user_err_size = buf->err_data_size;
		void *user_err_data = buf->err_data;
		memset(buf, 0, sizeof(*buf));
		buf->op_context = e->e.op_context;
		buf->flags = e->e.flags;
		buf->len = e->e.len;
		buf->buf = e->e.buf;
		buf->data = e->e.data;
		buf->tag = e->e.tag;
		buf->olen = e->olen;
		buf->err = e->err;
		buf->prov_errno = e->prov_errno;
		buf->err_data = user_err_data;
		buf->err_data_size = 0;
		(void)user_err_size;
		cq_pop_locked(cq);
		r = 1;
	}
	ptl3_unlock(cq->dom);
	return r;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* a pending fi_cq_signal, consumed: the waiter returns -FI_ECANCELED */
static int cq_take_signal(struct ptl3_cq *cq)
{
	ptl3_lock(cq->dom);
	int s = cq->signaled;
	cq->signaled = 0;
	ptl3_unlock(cq->dom);
	return s;
}

static ssize_t cq_sread(struct fid_cq *fcq, void *buf, size_t count, const void *cond, int timeout)
{
	if (!fcq || (count && !buf))
		return -FI_EINVAL;
	struct ptl3_cq *cq = container_of(fcq, struct ptl3_cq, cq_fid);
	double end = now_ms() + timeout;
	for (;;) {
		ssize_t r = cq_read(fcq, buf, count);
		if (r != -FI_EAGAIN)
			return r;
		if (cq_take_signal(cq))
			return -FI_ECANCELED;
		if (timeout >= 0 && now_ms() >= end)
			return -FI_EAGAIN;
		sched_yield();
	}
}

static ssize_t cq_sreadfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src_addr,
			    const void *cond, int timeout)
{
	ssize_t r = cq_sread(fcq, buf, count, cond, timeout);
	if (r > 0 && src_addr)
		for (ssize_t i = 0; i < r; i++)
			src_addr[i] = FI_ADDR_NOTAVAIL;
	return r;
}

/* wake a thread blocked in fi_cq_sread (which polls: it sees the flag on
 * its next pass); a signal with nobody waiting ends the next sread */
static int cq_signal(struct fid_cq *fcq)
{
	if (!fcq)
		return -FI_EINVAL;
	struct ptl3_cq *cq = container_of(fcq, struct ptl3_cq, cq_fid);
	ptl3_lock(cq->dom);
	cq->signaled = 1;
	ptl3_unlock(cq->dom);
	return 0;
}

static const char *cq_strerror(struct fid_cq *cq, int prov_errno, const void *err_data, char *buf,
			       size_t len)
{
	return ptl3_prov_strerror(prov_errno, buf, len);
}

static struct fi_ops_cq cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = cq_read,
	.readfrom = cq_readfrom,
	.readerr = cq_readerr,
	.sread = cq_sread,
	.sreadfrom = cq_sreadfrom,
	.signal = cq_signal,
	.strerror = cq_strerror,
};

static int cq_close(struct fid *fid)
{
	struct ptl3_cq *cq = container_of(fid, struct ptl3_cq, cq_fid.fid);
	if (cq->ref)
		return -FI_EBUSY;
	ptl3_lock(cq->dom);
	cq->dom->ref--;
	ptl3_unlock(cq->dom);
	free(cq->ring);
	free(cq);
	return 0;
}

static struct fi_ops cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cq_close,
	.bind = ptl3_no_bind,
	.control = ptl3_no_control,
	.ops_open = ptl3_no_ops_open,
	.tostr = ptl3_no_tostr,
	.ops_set = ptl3_no_ops_set,
};

int ptl3_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **fcq,
		 void *context)
{
	struct ptl3_domain *dom = container_of(domain, struct ptl3_domain, domain_fid);
	enum fi_cq_format fmt = FI_CQ_FORMAT_CONTEXT;
	if (attr) {
		if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC)
			return -FI_ENOSYS;
		if (attr->format != FI_CQ_FORMAT_UNSPEC)
			fmt = attr->format;
		if (fmt != FI_CQ_FORMAT_CONTEXT && fmt != FI_CQ_FORMAT_MSG &&
		    fmt != FI_CQ_FORMAT_DATA && fmt != FI_CQ_FORMAT_TAGGED)
			return -FI_ENOSYS;
	}
	struct ptl3_cq *cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->dom = dom;
	cq->format = fmt;
	cq->cq_fid.fid.fclass = FI_CLASS_CQ;
	cq->cq_fid.fid.context = context;
	cq->cq_fid.fid.ops = &cq_fi_ops;
	cq->cq_fid.ops = &cq_ops;
	ptl3_lock(dom);
	dom->ref++;
	ptl3_unlock(dom);
	*fcq = &cq->cq_fid;
	return 0;
}
