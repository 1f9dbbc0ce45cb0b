/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_fabric.c - the fabric object: opens domains, nothing else. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "ptl3.h"

static int fabric_close(struct fid *fid)
{
	free(container_of(fid, struct ptl3_fabric, fabric_fid.fid));
	return 0;
}

static struct fi_ops fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = fabric_close,
	.bind = ptl3_no_bind,
	.control = ptl3_no_control,
	.ops_open = ptl3_no_ops_open,
	.tostr = ptl3_no_tostr,
	.ops_set = ptl3_no_ops_set,
};

static int no_passive_ep(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **pep,
			 void *context)
{
	return -FI_ENOSYS;
}
static int no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
			struct fid_wait **waitset)
{
	return -FI_ENOSYS;
}
/* fi_trywait: -FI_EAGAIN if any of the objects has something to read.
 * CQs and counters have no wait object (they progress only when read) and
 * always answer -FI_EAGAIN, so a caller polls them instead of blocking. */
static int fabric_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	if (!fids || count < 0)
		return -FI_EINVAL;
	for (int i = 0; i < count; i++) {
		if (!fids[i])
			return -FI_EINVAL;
		if (fids[i]->fclass != FI_CLASS_EQ)
			return -FI_EAGAIN;
		int rc = ptl3_eq_trywait(container_of(fids[i], struct fid_eq, fid));
		if (rc)
			return rc;
	}
	return 0;
}

static int no_domain2(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom,
		      uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static struct fi_ops_fabric fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = ptl3_domain_open,
	.passive_ep = no_passive_ep,
	.eq_open = ptl3_eq_open,
	.wait_open = no_wait_open,
	.trywait = fabric_trywait,
	.domain2 = no_domain2,
};

int ptl3_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	if (attr && attr->name && strcmp(attr->name, "ptl3"))
		return -FI_ENODATA;
	struct ptl3_fabric *fab = calloc(1, sizeof(*fab));
	if (!fab)
		return -FI_ENOMEM;
	fab->fabric_fid.fid.fclass = FI_CLASS_FABRIC;
	fab->fabric_fid.fid.context = context;
	fab->fabric_fid.fid.ops = &fabric_fi_ops;
	fab->fabric_fid.ops = &fabric_ops;
	*fabric = &fab->fabric_fid;
	return 0;
}
