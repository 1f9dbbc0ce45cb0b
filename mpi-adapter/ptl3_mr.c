/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_mr.c - memory registration.  mr_mode 0: keys are chosen by the
 * application (MPICH picks 64-bit keys, from 0).  A region with remote access
 * is exposed as an ME on PT_RMA whose match bits are the key; local-only
 * registration is bookkeeping (Portals needs none). */
#include "config.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "ptl3.h"

static int mr_expose_locked(struct ptl3_mr *m)
{
	struct ptl3_domain *dom = m->dom;
	int rc = ptl3_domain_ni_open_locked(dom);
	if (rc)
		return rc;
	ptl_process_id_t any = {PTL_NID_ANY, PTL_PID_ANY};
	rc = PtlMEAttach(dom->ni, (ptl_pt_index_t)ptl3_params.pt_base + PTL3_PT_RMA, any,
			 m->mr_fid.key, 0, PTL_RETAIN, PTL_INS_AFTER, &m->me);
	if (rc != PTL_OK)
		return -FI_EIO;
	ptl_md_t md;
	ptl_handle_md_t mdh;
	memset(&md, 0, sizeof(md));
	md.start = m->len ? m->buf : (void *)&ptl3_zero_byte;
	md.length = m->len;
	md.threshold = PTL_MD_THRESH_INF;
	md.options = PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE;
	md.eq_handle = ptl3_rma_event_eq_locked(dom);
	if (md.eq_handle == PTL_EQ_NONE) /* the usual case: no FI_RMA_EVENT */
		md.options |= PTL_MD_EVENT_END_DISABLE;
	if (m->access & FI_REMOTE_WRITE)
		md.options |= PTL_MD_OP_PUT;
	if (m->access & FI_REMOTE_READ)
		md.options |= PTL_MD_OP_GET;
	rc = PtlMDAttach(m->me, md, PTL_RETAIN, &mdh);
	if (rc != PTL_OK) {
		PtlMEUnlink(m->me);
		return -FI_EIO;
	}
	m->exposed = 1;
	return 0;
}

static int mr_key_in_use_locked(struct ptl3_domain *dom, uint64_t key)
{
	for (struct ptl3_mr *m = dom->mrs; m; m = m->next)
		if (m->exposed && m->mr_fid.key == key)
			return 1;
	return 0;
}

static int mr_close(struct fid *fid)
{
	struct ptl3_mr *mr = container_of(fid, struct ptl3_mr, mr_fid.fid);
	struct ptl3_domain *dom = mr->dom;
	ptl3_lock(dom);
	for (struct ptl3_mr **pp = &dom->mrs; *pp; pp = &(*pp)->next) {
		if (*pp == mr) {
			*pp = mr->next;
			break;
		}
	}
	dom->ref--;
	if (mr->exposed) {
		/* an in-flight remote access keeps it busy for a moment */
		for (int i = 0; i < 100000 && PtlMEUnlink(mr->me) == PTL_ME_IN_USE; i++) {
			ptl3_dom_progress_locked(dom);
			sched_yield();
		}
	}
	ptl3_unlock(dom);
	free(mr);
	return 0;
}

static int mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return 0;
}

static int mr_control(struct fid *fid, int command, void *arg)
{
	return command == FI_ENABLE ? 0 : -FI_ENOSYS;
}

static struct fi_ops mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = mr_close,
	.bind = mr_bind,
	.control = mr_control,
	.ops_open = ptl3_no_ops_open,
	.tostr = ptl3_no_tostr,
	.ops_set = ptl3_no_ops_set,
};

int ptl3_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
		uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{
	struct ptl3_domain *dom = container_of(fid, struct ptl3_domain, domain_fid.fid);
	if (fid->fclass != FI_CLASS_DOMAIN)
		return -FI_EINVAL;
	struct ptl3_mr *m = calloc(1, sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	m->dom = dom;
	m->buf = (void *)buf;
	m->len = len;
	m->access = access;
	m->mr_fid.fid.fclass = FI_CLASS_MR;
	m->mr_fid.fid.context = context;
	m->mr_fid.fid.ops = &mr_fi_ops;
	m->mr_fid.mem_desc = m;
	ptl3_lock(dom);
	/* mr_mode 0 (scalable): the key is the application's, 0 included
	 * (MPICH's key allocator starts at 0); it selects the ME on PT_RMA, so
	 * two remotely accessible regions may not share one. */
	m->mr_fid.key = requested_key;
	if (ptl3_params.rma && (access & (FI_REMOTE_READ | FI_REMOTE_WRITE))) {
		if (mr_key_in_use_locked(dom, requested_key)) {
			ptl3_unlock(dom);
			free(m);
			return -FI_ENOKEY;
		}
		int rc = mr_expose_locked(m);
		if (rc) {
			ptl3_unlock(dom);
			free(m);
			return rc;
		}
	}
	m->next = dom->mrs;
	dom->mrs = m;
	dom->ref++;
	ptl3_unlock(dom);
	*mr = &m->mr_fid;
	return 0;
}

int ptl3_mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
		 uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
		 void *context)
{
	if (count != 1)
		return -FI_EINVAL;
	return ptl3_mr_reg(fid, iov[0].iov_base, iov[0].iov_len, access, offset, requested_key,
			   flags, mr, context);
}

int ptl3_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
		    struct fid_mr **mr)
{
	if (!attr || attr->iov_count != 1)
		return -FI_EINVAL;
	return ptl3_mr_reg(fid, attr->mr_iov[0].iov_base, attr->mr_iov[0].iov_len, attr->access,
			   attr->offset, attr->requested_key, flags, mr, attr->context);
}
