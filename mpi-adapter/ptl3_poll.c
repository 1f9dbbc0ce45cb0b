/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_poll.c - poll sets (fi_poll(3)): fi_poll_open on a domain,
 * fi_poll_add/del of CQs and counters, fi_poll.  Progress is manual, so
 * fi_poll first drives each member's endpoint (as a CQ read or counter
 * read would), then reports the context of every CQ holding an entry (an
 * error entry included) and of every counter whose value or error count
 * changed since the last fi_poll that reported it. */
#include "config.h"

#include <stdlib.h>

#include "ptl3.h"

struct ptl3_poll_member {
	struct fid *fid;
	uint64_t seen; /* counters: value + errors last reported */
};

struct ptl3_poll {
	struct fid_poll poll_fid;
	struct ptl3_domain *dom;
	struct ptl3_poll_member *m; /* under the domain lock */
	size_t n, cap;
};

static struct ptl3_poll *poll_of(struct fid_poll *f)
{
	return container_of(f, struct ptl3_poll, poll_fid);
}

static int poll_add(struct fid_poll *fp, struct fid *event_fid, uint64_t flags)
{
	if (!fp || !event_fid || flags)
		return -FI_EINVAL;
	struct ptl3_poll *ps = poll_of(fp);
	/* members share the set's domain, hence its lock */
	if (event_fid->fclass == FI_CLASS_CQ) {
		if (container_of(event_fid, struct ptl3_cq, cq_fid.fid)->dom != ps->dom)
			return -FI_EINVAL;
	} else if (event_fid->fclass == FI_CLASS_CNTR) {
		if (container_of(event_fid, struct ptl3_cntr, cntr_fid.fid)->dom != ps->dom)
			return -FI_EINVAL;
	} else {
		return -FI_EINVAL;
	}
	int rc = 0;
	ptl3_lock(ps->dom);
	for (size_t i = 0; i < ps->n; i++)
		if (ps->m[i].fid == event_fid)
			rc = -FI_EALREADY;
	if (!rc && ps->n == ps->cap) {
		size_t cap = ps->cap ? 2 * ps->cap : 4;
		struct ptl3_poll_member *m = realloc(ps->m, cap * sizeof(*m));
		if (m) {
			ps->m = m;
			ps->cap = cap;
		} else {
			rc = -FI_ENOMEM;
		}
	}
	if (!rc) {
		uint64_t seen = 0;
		if (event_fid->fclass == FI_CLASS_CNTR)
			seen = ptl3_cntr_poll_value_locked(
			    container_of(event_fid, struct fid_cntr, fid), 0);
		ps->m[ps->n++] = (struct ptl3_poll_member){event_fid, seen};
	}
	ptl3_unlock(ps->dom);
	return rc;
}

static int poll_del(struct fid_poll *fp, struct fid *event_fid, uint64_t flags)
{
	if (!fp || !event_fid || flags)
		return -FI_EINVAL;
	struct ptl3_poll *ps = poll_of(fp);
	int rc = -FI_ENOENT;
	ptl3_lock(ps->dom);
	for (size_t i = 0; i < ps->n; i++)
		if (ps->m[i].fid == event_fid) {
			ps->m[i] = ps->m[--ps->n];
			rc = 0;
			break;
		}
	ptl3_unlock(ps->dom);
	return rc;
}

static int poll_poll(struct fid_poll *fp, void **context, int count)
{
	if (!fp || count < 0 || (count && !context))
		return -FI_EINVAL;
	struct ptl3_poll *ps = poll_of(fp);
	int found = 0;
	ptl3_lock(ps->dom);
	for (size_t i = 0; i < ps->n && found < count; i++) {
		struct ptl3_poll_member *m = &ps->m[i];
		int ready;
		if (m->fid->fclass == FI_CLASS_CQ) {
			ready = ptl3_cq_poll_ready_locked(container_of(m->fid, struct fid_cq, fid));
		} else {
			uint64_t v = ptl3_cntr_poll_value_locked(
			    container_of(m->fid, struct fid_cntr, fid), 1);
			ready = v != m->seen;
			m->seen = v;
		}
		if (ready)
			context[found++] = m->fid->context;
	}
	ptl3_unlock(ps->dom);
	return found;
}

static int poll_close(struct fid *fid)
{
	struct ptl3_poll *ps = container_of(fid, struct ptl3_poll, poll_fid.fid);
	free(ps->m);
	free(ps);
	return 0;
}

static struct fi_ops_poll poll_ops = {
    .size = sizeof(struct fi_ops_poll),
    .poll = poll_poll,
    .poll_add = poll_add,
    .poll_del = poll_del,
};

static struct fi_ops poll_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = poll_close,
    .bind = ptl3_no_bind,
    .control = ptl3_no_control,
    .ops_open = ptl3_no_ops_open,
    .tostr = ptl3_no_tostr,
    .ops_set = ptl3_no_ops_set,
};

int ptl3_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr, struct fid_poll **pollset)
{
	if (!domain || !pollset || (attr && attr->flags))
		return -FI_EINVAL;
	struct ptl3_poll *ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -FI_ENOMEM;
	ps->dom = container_of(domain, struct ptl3_domain, domain_fid);
	ps->poll_fid.fid.fclass = FI_CLASS_POLL;
	ps->poll_fid.fid.ops = &poll_fi_ops;
	ps->poll_fid.ops = &poll_ops;
	*pollset = &ps->poll_fid;
	return 0;
}
