/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_cntr.c - completion counters (MPICH binds one with FI_READ|FI_WRITE). */
#include "config.h"

#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "ptl3.h"

static void cntr_progress_locked(struct ptl3_cntr *c)
{
	if (c->ep)
		ptl3_ep_progress_locked(c->ep);
	else
		ptl3_dom_progress_locked(c->dom);
}

uint64_t ptl3_cntr_poll_value_locked(struct fid_cntr *fc, int progress)
{
	struct ptl3_cntr *c = container_of(fc, struct ptl3_cntr, cntr_fid);
	if (progress)
		cntr_progress_locked(c);
	return c->value + c->errors;
}

static uint64_t cntr_read(struct fid_cntr *fc)
{
	struct ptl3_cntr *c = container_of(fc, struct ptl3_cntr, cntr_fid);
	ptl3_lock(c->dom);
	cntr_progress_locked(c);
	uint64_t v = c->value;
	ptl3_unlock(c->dom);
	return v;
}

static uint64_t cntr_readerr(struct fid_cntr *fc)
{
	struct ptl3_cntr *c = container_of(fc, struct ptl3_cntr, cntr_fid);
	ptl3_lock(c->dom);
	cntr_progress_locked(c);
	uint64_t v = c->errors;
	ptl3_unlock(c->dom);
	return v;
}

static int cntr_add(struct fid_cntr *fc, uint64_t value)
{
	struct ptl3_cntr *c = container_of(fc, struct ptl3_cntr, cntr_fid);
	ptl3_lock(c->dom);
	c->value += value;
	ptl3_unlock(c->dom);
	return 0;
}

static int cntr_set(struct fid_cntr *fc, uint64_t value)
{
	struct ptl3_cntr *c = container_of(fc, struct ptl3_cntr, cntr_fid);
	ptl3_lock(c->dom);
	c->value = value;
	ptl3_unlock(c->dom);
	return 0;
}

static int cntr_adderr(struct fid_cntr *fc, uint64_t value)
{
	struct ptl3_cntr *c = container_of(fc, struct ptl3_cntr, cntr_fid);
	ptl3_lock(c->dom);
	c->errors += value;
	ptl3_unlock(c->dom);
	return 0;
}

static int cntr_seterr(struct fid_cntr *fc, uint64_t value)
{
	struct ptl3_cntr *c = container_of(fc, struct ptl3_cntr, cntr_fid);
	ptl3_lock(c->dom);
	c->errors = value;
	ptl3_unlock(c->dom);
	return 0;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cntr_wait(struct fid_cntr *fc, uint64_t threshold, int timeout)
{
	struct ptl3_cntr *c = container_of(fc, struct ptl3_cntr, cntr_fid);
	double end = timeout < 0 ? 0 : now_ms() + timeout;
	for (;;) {
		ptl3_lock(c->dom);
		cntr_progress_locked(c);
		uint64_t v = c->value, e = c->errors;
		ptl3_unlock(c->dom);
		if (v >= threshold)
			return 0;
		if (e)
			return -FI_EAVAIL;
		if (timeout >= 0 && now_ms() >= end)
			return -FI_ETIMEDOUT;
		sched_yield();
	}
}

static struct fi_ops_cntr cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = cntr_read,
	.readerr = cntr_readerr,
	.add = cntr_add,
	.set = cntr_set,
	.wait = cntr_wait,
	.adderr = cntr_adderr,
	.seterr = cntr_seterr,
};

static int cntr_close(struct fid *fid)
{
	struct ptl3_cntr *c = container_of(fid, struct ptl3_cntr, cntr_fid.fid);
	if (c->ref)
		return -FI_EBUSY;
	ptl3_lock(c->dom);
	c->dom->ref--;
	ptl3_unlock(c->dom);
	free(c);
	return 0;
}

static struct fi_ops cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cntr_close,
	.bind = ptl3_no_bind,
	.control = ptl3_no_control,
	.ops_open = ptl3_no_ops_open,
	.tostr = ptl3_no_tostr,
	.ops_set = ptl3_no_ops_set,
};

int ptl3_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **cntr,
		   void *context)
{
	struct ptl3_domain *dom = container_of(domain, struct ptl3_domain, domain_fid);
	if (attr) {
		if (attr->events != FI_CNTR_EVENTS_COMP)
			return -FI_ENOSYS;
		if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC)
			return -FI_ENOSYS;
	}
	struct ptl3_cntr *c = calloc(1, sizeof(*c));
	if (!c)
		return -FI_ENOMEM;
	c->dom = dom;
	c->cntr_fid.fid.fclass = FI_CLASS_CNTR;
	c->cntr_fid.fid.context = context;
	c->cntr_fid.fid.ops = &cntr_fi_ops;
	c->cntr_fid.ops = &cntr_ops;
	ptl3_lock(dom);
	dom->ref++;
	ptl3_unlock(dom);
	*cntr = &c->cntr_fid;
	return 0;
}
