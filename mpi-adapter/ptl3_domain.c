/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_domain.c - the domain: owns the Portals NI (opened on first use). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "ptl3.h"

int ptl3_domain_ni_open_locked(struct ptl3_domain *dom)
{
	if (dom->ni_open)
		return 0;
	int nmax = 0, rc;
	if (!dom->ptl_inited) {
		rc = PtlInit(&nmax);
		if (rc != PTL_OK) {
			PTL3_WARN(FI_LOG_DOMAIN, "PtlInit: %s\n", PtlErrorStr(rc));
			return -FI_EIO;
		}
		dom->ptl_inited = 1;
	}
	if (ptl3_params.progress[0])
		setenv("PTL_PROGRESS", ptl3_params.progress, 1);
	ptl_interface_t iface = ptl3_nal_iface(ptl3_params.nal);
	if (iface == (ptl_interface_t)-1) {
		PTL3_WARN(FI_LOG_DOMAIN, "FI_PTL3_NAL=%s: unknown NAL\n", ptl3_params.nal);
		return -FI_EINVAL;
	}
	ptl_ni_limits_t actual;
	memset(&actual, 0, sizeof(actual));
	rc = PtlNIInit(iface, dom->req_pid, NULL, &actual, &dom->ni);
	if (rc != PTL_OK) {
		PTL3_WARN(FI_LOG_DOMAIN, "PtlNIInit(%s): %s\n", ptl3_params.nal, PtlErrorStr(rc));
		fprintf(stderr, "ptl3: PtlNIInit(nal=%s) failed: %s\n", ptl3_params.nal,
			PtlErrorStr(rc));
		return -FI_EIO;
	}
	rc = PtlGetId(dom->ni, &dom->id);
	if (rc != PTL_OK) {
		PtlNIFini(dom->ni);
		return -FI_EIO;
	}
	dom->iface = iface;
	dom->nal_name = ptl3_params.nal;
	dom->progress_name = "app";
	const char *nal = NULL, *prog = NULL;
	if (PtlNIDescribe(dom->ni, &nal, &prog) == PTL_OK) {
		if (nal)
			dom->nal_name = nal;
		if (prog)
			dom->progress_name = prog;
	}
	dom->app_progress = 1; /* PtlProgress is harmless with a progress thread */
	if (actual.max_pt_index > 0 && ptl3_params.pt_base + PTL3_PT_COUNT - 1 > actual.max_pt_index)
		ptl3_params.pt_base = actual.max_pt_index + 1 - PTL3_PT_COUNT;
	if (ptl3_params.pt_base < 0)
		ptl3_params.pt_base = 0;
	dom->max_eps = actual.max_pt_index > 0 ? ptl3_ep_cnt(actual.max_pt_index) : 1;
	dom->ni_open = 1;
	ptl3_wait_refresh_locked(dom); /* the idle-read policy for this NI (ptl3_wait.c) */
	PTL3_INFO(FI_LOG_DOMAIN, "NI open: nal %s progress %s nid %u pid %u\n", dom->nal_name,
		  dom->progress_name, dom->id.nid, dom->id.pid);
	return 0;
}

static int domain_close(struct fid *fid)
{
	struct ptl3_domain *dom = container_of(fid, struct ptl3_domain, domain_fid.fid);
	if (dom->ref)
		return -FI_EBUSY;
	ptl3_atomic_agent_teardown_locked(dom);
	if (dom->ni_open)
		PtlNIFini(dom->ni);
	if (dom->ptl_inited)
		PtlFini();
	while (dom->mrs) {
		struct ptl3_mr *m = dom->mrs;
		dom->mrs = m->next;
		free(m);
	}
	pthread_mutex_destroy(&dom->lock);
	free(dom);
	return 0;
}

static struct fi_ops domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = domain_close,
	.bind = ptl3_no_bind,
	.control = ptl3_no_control,
	.ops_open = ptl3_no_ops_open,
	.tostr = ptl3_no_tostr,
	.ops_set = ptl3_no_ops_set,
};

static int no_scalable_ep(struct fid_domain *domain, struct fi_info *info, struct fid_ep **sep,
			  void *context)
{
	return -FI_ENOSYS;
}
static int no_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr, struct fid_stx **stx,
		      void *context)
{
	return -FI_ENOSYS;
}
static int no_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr, struct fid_ep **rx_ep,
		      void *context)
{
	return -FI_ENOSYS;
}
static int no_query_collective(struct fid_domain *domain, enum fi_collective_op coll,
			       struct fi_collective_attr *attr, uint64_t flags)
{
	return -FI_ENOSYS;
}
static int no_endpoint2(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
			uint64_t flags, void *context)
{
	if (flags)
		return -FI_ENOSYS;
	return ptl3_endpoint(domain, info, ep, context);
}

static struct fi_ops_domain domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = ptl3_av_open,
	.cq_open = ptl3_cq_open,
	.endpoint = ptl3_endpoint,
	.scalable_ep = no_scalable_ep,
	.cntr_open = ptl3_cntr_open,
	.poll_open = ptl3_poll_open,
	.stx_ctx = no_stx_ctx,
	.srx_ctx = no_srx_ctx,
	.query_atomic = ptl3_query_atomic,
	.query_collective = no_query_collective,
	.endpoint2 = no_endpoint2,
};

static struct fi_ops_mr domain_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = ptl3_mr_reg,
	.regv = ptl3_mr_regv,
	.regattr = ptl3_mr_regattr,
};

int ptl3_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **domain,
		     void *context)
{
	if (info && info->domain_attr && info->domain_attr->name &&
	    strcmp(info->domain_attr->name, "ptl3"))
		return -FI_EINVAL;
	struct ptl3_domain *dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;
	pthread_mutex_init(&dom->lock, NULL);
	dom->fabric = container_of(fabric, struct ptl3_fabric, fabric_fid);
	dom->threading = info && info->domain_attr ? info->domain_attr->threading : FI_THREAD_SAFE;
	dom->serialized = dom->threading == FI_THREAD_DOMAIN;
	dom->req_pid = PTL_PID_ANY;
	dom->next_send_id = 1;
	dom->rma_event = info && (info->caps & FI_RMA_EVENT) && ptl3_params.rma;
	dom->atomic = info && (info->caps & FI_ATOMIC) && ptl3_params.rma;
	if (info && ptl3_addr_valid(info->src_addr, info->src_addrlen))
		dom->req_pid = ((const struct ptl3_addr *)info->src_addr)->pid;
	dom->domain_fid.fid.fclass = FI_CLASS_DOMAIN;
	dom->domain_fid.fid.context = context;
	dom->domain_fid.fid.ops = &domain_fi_ops;
	dom->domain_fid.ops = &domain_ops;
	dom->domain_fid.mr = &domain_mr_ops;
	*domain = &dom->domain_fid;
	return 0;
}
