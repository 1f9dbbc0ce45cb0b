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
static int no_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq,
		      void *context)
{
	return -FI_ENOSYS;
}
static int no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
			struct fid_wait **waitset)
{
	return -FI_ENOSYS;
}
static int no_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	return -FI_ENOSYS;
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
	.eq_open = no_eq_open,
	.wait_open = no_wait_open,
	.trywait = no_trywait,
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
