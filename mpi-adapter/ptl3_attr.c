/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_attr.c - capabilities and limits as data; fi_getinfo. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "ptl3.h"

/* FI_RMA is added at run time unless FI_PTL3_RMA=0 (ptl3_caps_now). */
const uint64_t ptl3_caps = PTL3_CAPS;

uint64_t ptl3_caps_now(void)
{
	/* FI_RMA_EVENT and FI_ATOMIC: granted when the hints ask for them */
	return PTL3_CAPS | (ptl3_params.rma ? PTL3_RMA_CAPS | FI_RMA_EVENT | FI_ATOMIC : 0);
}

static struct fi_tx_attr tx_attr = {
	.caps = FI_MSG | FI_TAGGED | FI_SEND,
	.mode = 0,
	.op_flags = 0,
	.msg_order = FI_ORDER_SAS,
	.comp_order = FI_ORDER_NONE,
	.inject_size = 4096,
	.size = 65536,
	.iov_limit = 1,
	.rma_iov_limit = 1,
};

static struct fi_rx_attr rx_attr = {
	.caps = FI_MSG | FI_TAGGED | FI_MULTI_RECV | FI_RECV | FI_DIRECTED_RECV,
	.mode = 0,
	.op_flags = 0,
	.msg_order = FI_ORDER_SAS,
	.comp_order = FI_ORDER_NONE,
	.total_buffered_recv = 0,
	.size = 65536,
	.iov_limit = 1,
};

static struct fi_ep_attr ep_attr = {
	.type = FI_EP_RDM,
	.protocol = FI_PROTO_UNSPEC,
	.protocol_version = 1,
	.max_msg_size = 1ULL << 40,
	.msg_prefix_size = 0,
	.max_order_raw_size = 0,
	.max_order_war_size = 0,
	.max_order_waw_size = 0,
	.mem_tag_format = 0,
	.tx_ctx_cnt = 1,
	.rx_ctx_cnt = 1,
	.auth_key_size = 0,
};

static struct fi_domain_attr domain_attr = {
	.name = (char *)"ptl3",
	.threading = FI_THREAD_SAFE,
	.control_progress = FI_PROGRESS_MANUAL,
	.data_progress = FI_PROGRESS_MANUAL,
	.resource_mgmt = FI_RM_ENABLED,
	.av_type = FI_AV_TABLE,
	.mr_mode = 0,
	.mr_key_size = 8,
	.cq_data_size = 4,
	.cq_cnt = 256,
	.ep_cnt = 1,
	.tx_ctx_cnt = 1,
	.rx_ctx_cnt = 1,
	.max_ep_tx_ctx = 1,
	.max_ep_rx_ctx = 1,
	.max_ep_stx_ctx = 0,
	.max_ep_srx_ctx = 0,
	.cntr_cnt = 256,
	.mr_iov_limit = 1,
	.caps = FI_LOCAL_COMM | FI_REMOTE_COMM,
	.mode = 0,
	.mr_cnt = 65536,
};

static struct fi_fabric_attr fabric_attr = {
	.name = (char *)"ptl3",
	.prov_name = NULL,
	.prov_version = PTL3_PROV_VERSION,
	.api_version = PTL3_FI_VERSION,
};

const struct fi_info ptl3_info_template = {
	.caps = PTL3_CAPS,
	.mode = 0,
	.addr_format = FI_FORMAT_UNSPEC,
	.tx_attr = &tx_attr,
	.rx_attr = &rx_attr,
	.ep_attr = &ep_attr,
	.domain_attr = &domain_attr,
	.fabric_attr = &fabric_attr,
};

/* mr_mode: a region is addressed by offsets from its start under a key the
 * application chooses, which is FI_MR_SCALABLE (and needs no mr_mode bit
 * since 1.5).  FI_MR_BASIC (virtual addresses, provider keys) cannot be
 * honoured.  Returns the mode to report, or -1. */
static int mr_mode_for(uint32_t version, const struct fi_info *h)
{
	int asked = h && h->domain_attr ? h->domain_attr->mr_mode : 0;
	if (asked == FI_MR_BASIC)
		return -1;
	if (asked == FI_MR_SCALABLE || FI_VERSION_LT(version, FI_VERSION(1, 5)))
		return FI_MR_SCALABLE;
	return 0;
}

static int tx_rx_hints_ok(const struct fi_info *h)
{
	if (h->tx_attr) {
		if (h->tx_attr->msg_order & ~tx_attr.msg_order)
			return 0;
		if (h->tx_attr->comp_order & ~tx_attr.comp_order)
			return 0;
		if (h->tx_attr->iov_limit > tx_attr.iov_limit ||
		    h->tx_attr->rma_iov_limit > tx_attr.rma_iov_limit)
			return 0;
		if (h->tx_attr->inject_size > ptl3_params.inject_size)
			return 0;
		if (h->tx_attr->size > tx_attr.size)
			return 0;
		if (h->tx_attr->caps & ~ptl3_caps_now())
			return 0;
	}
	if (h->rx_attr) {
		if (h->rx_attr->msg_order & ~rx_attr.msg_order)
			return 0;
		if (h->rx_attr->comp_order & ~rx_attr.comp_order)
			return 0;
		if (h->rx_attr->iov_limit > rx_attr.iov_limit)
			return 0;
		if (h->rx_attr->size > rx_attr.size)
			return 0;
		if (h->rx_attr->caps & ~ptl3_caps_now())
			return 0;
	}
	return 1;
}

static int ep_hints_ok(const struct fi_ep_attr *e)
{
	if (e->type != FI_EP_UNSPEC && e->type != FI_EP_RDM)
		return 0;
	if (e->protocol != FI_PROTO_UNSPEC)
		return 0;
	if (e->max_msg_size > ep_attr.max_msg_size)
		return 0;
	/* no RMA ordering (read-after-write &c.) is offered */
	if (e->max_order_raw_size || e->max_order_war_size || e->max_order_waw_size)
		return 0;
	if (e->tx_ctx_cnt > 1 || e->rx_ctx_cnt > 1)
		return 0; /* FI_SHARED_CONTEXT included */
	if (e->auth_key_size)
		return 0;
	return 1;
}

uint32_t ptl3_ep_cnt(int max_pt_index)
{
	int npt = max_pt_index + 1 - ptl3_params.pt_base;
	if (npt < PTL3_PT_COUNT)
		return 1;
	/* the last endpoint needs only its PT_TAG and PT_MSG */
	uint32_t n = (uint32_t)npt / PTL3_PT_COUNT + (npt % PTL3_PT_COUNT > PTL3_PT_MSG);
	return n > PTL3_MAX_EPS ? PTL3_MAX_EPS : n;
}

/* endpoints a domain holds with Portals' default portal table (0..63) */
#define PTL3_DEFAULT_MAX_PT_INDEX 63
static size_t ep_cnt_now(void)
{
	return ptl3_ep_cnt(PTL3_DEFAULT_MAX_PT_INDEX);
}

static int domain_hints_ok(const struct fi_domain_attr *d)
{
	if (d->name && strcmp(d->name, domain_attr.name))
		return 0;
	if (d->av_type != FI_AV_UNSPEC && d->av_type != FI_AV_TABLE && d->av_type != FI_AV_MAP)
		return 0;
	if (d->cq_data_size > domain_attr.cq_data_size)
		return 0;
	if (d->mr_key_size > domain_attr.mr_key_size)
		return 0;
	if (d->data_progress == FI_PROGRESS_AUTO || d->control_progress == FI_PROGRESS_AUTO)
		return 0;
	/* FI_SHARED_AV (named AVs) is refused: ranks exchange addresses */
	if (d->caps & ~domain_attr.caps)
		return 0;
	if (d->ep_cnt > ep_cnt_now() || d->tx_ctx_cnt > ep_cnt_now() ||
	    d->rx_ctx_cnt > ep_cnt_now() || d->max_ep_tx_ctx > 1 ||
	    d->max_ep_rx_ctx > 1 || d->max_ep_stx_ctx || d->max_ep_srx_ctx)
		return 0;
	if (d->auth_key_size)
		return 0;
	return 1;
}

static int hints_ok(uint32_t version, const struct fi_info *h)
{
	if (!h)
		return 1;
	/* anything we cannot do (FI_ATOMIC, FI_SOURCE, FI_RMA_EVENT, ...) */
	if (h->caps & ~ptl3_caps_now())
		return 0;
	if (h->addr_format != FI_FORMAT_UNSPEC)
		return 0;
	if (h->src_addr && !ptl3_addr_valid(h->src_addr, h->src_addrlen))
		return 0;
	if (h->dest_addr && !ptl3_addr_valid(h->dest_addr, h->dest_addrlen))
		return 0;
	if (h->ep_attr && !ep_hints_ok(h->ep_attr))
		return 0;
	if (!tx_rx_hints_ok(h))
		return 0;
	if (h->fabric_attr) {
		if (h->fabric_attr->name && strcmp(h->fabric_attr->name, fabric_attr.name))
			return 0;
		if (h->fabric_attr->prov_name && strcasecmp(h->fabric_attr->prov_name, PTL3_PROV_NAME) &&
		    !strstr(h->fabric_attr->prov_name, PTL3_PROV_NAME))
			return 0;
	}
	if (h->domain_attr && !domain_hints_ok(h->domain_attr))
		return 0;
	return mr_mode_for(version, h) >= 0;
}

static void *dup_addr(const struct ptl3_addr *a, size_t *len)
{
	void *p = malloc(sizeof(*a));
	if (p)
		memcpy(p, a, sizeof(*a));
	*len = p ? sizeof(*a) : 0;
	return p;
}

/* src_addr and dest_addr: node/service name the source with FI_SOURCE,
 * the destination otherwise; the hints' addresses are kept */
static int fill_addrs(struct fi_info *fi, const char *node, const char *service, uint64_t flags,
		      const struct fi_info *h)
{
	struct ptl3_addr src, dst;
	int have_dst = 0, rc;
	if (flags & FI_SOURCE) {
		rc = ptl3_addr_resolve(node, service, &src);
	} else if (h && h->src_addr) {
		memcpy(&src, h->src_addr, sizeof(src));
		rc = 0;
	} else {
		rc = ptl3_addr_resolve(NULL, NULL, &src);
	}
	if (rc)
		return rc;
	if (!(flags & FI_SOURCE) && (node || service)) {
		rc = ptl3_addr_resolve(node, service, &dst);
		if (rc)
			return rc;
		have_dst = 1;
	} else if (h && h->dest_addr) {
		memcpy(&dst, h->dest_addr, sizeof(dst));
		have_dst = 1;
	}
	fi->src_addr = dup_addr(&src, &fi->src_addrlen);
	if (!fi->src_addr)
		return -FI_ENOMEM;
	if (have_dst) {
		fi->dest_addr = dup_addr(&dst, &fi->dest_addrlen);
		if (!fi->dest_addr)
			return -FI_ENOMEM;
	}
	return 0;
}

static void echo_hints(struct fi_info *fi, const struct fi_info *hints)
{
	/* echo what the application asked for where we can honour it */
	if (hints->caps)
		fi->caps = (hints->caps & ptl3_caps_now()) | (ptl3_caps & (FI_LOCAL_COMM | FI_REMOTE_COMM));
	if (hints->caps & (FI_MSG | FI_TAGGED)) {
		if (!(fi->caps & (FI_SEND | FI_RECV)))
			fi->caps |= FI_SEND | FI_RECV;
	}
	/* remote CQ data of writes takes a posted receive (ptl3_rma.c):
	 * fi_writedata is there for applications that accept FI_RX_CQ_DATA */
	fi->mode = hints->mode & FI_RX_CQ_DATA;
	fi->rx_attr->mode = fi->mode;
	if (hints->domain_attr) {
		const struct fi_domain_attr *d = hints->domain_attr;
		if (d->threading != FI_THREAD_UNSPEC)
			fi->domain_attr->threading = d->threading;
		if (d->av_type != FI_AV_UNSPEC)
			fi->domain_attr->av_type = d->av_type;
		if (d->resource_mgmt != FI_RM_UNSPEC)
			fi->domain_attr->resource_mgmt = FI_RM_ENABLED;
	}
	if (hints->tx_attr)
		fi->tx_attr->op_flags = hints->tx_attr->op_flags;
	if (hints->rx_attr)
		fi->rx_attr->op_flags = hints->rx_attr->op_flags;
	fi->tx_attr->caps =
	    fi->caps & (FI_MSG | FI_TAGGED | FI_SEND | FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE);
	fi->rx_attr->caps = fi->caps & (FI_MSG | FI_TAGGED | FI_MULTI_RECV | FI_RECV |
					FI_DIRECTED_RECV | FI_RMA | FI_ATOMIC | FI_REMOTE_READ |
					FI_REMOTE_WRITE | FI_RMA_EVENT);
}

int ptl3_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		 const struct fi_info *hints, struct fi_info **info)
{
	if (!info)
		return -FI_EINVAL;
	*info = NULL;
	if (!hints_ok(version, hints))
		return -FI_ENODATA;
	struct fi_info *fi = fi_dupinfo(&ptl3_info_template);
	if (!fi)
		return -FI_ENOMEM;
	if (ptl3_params.rma) {
		fi->caps |= PTL3_RMA_CAPS;
		fi->tx_attr->caps |= FI_RMA | FI_READ | FI_WRITE;
		fi->rx_attr->caps |= FI_RMA | FI_REMOTE_READ | FI_REMOTE_WRITE;
	}
	fi->tx_attr->inject_size = ptl3_params.inject_size;
	fi->domain_attr->mr_mode = mr_mode_for(version, hints);
	fi->domain_attr->ep_cnt = ep_cnt_now();
	fi->domain_attr->tx_ctx_cnt = ep_cnt_now(); /* one context per endpoint */
	fi->domain_attr->rx_ctx_cnt = ep_cnt_now();
	/* fabric_attr->prov_name is filled in by libfabric's core */
	if (hints)
		echo_hints(fi, hints);
	int rc = fill_addrs(fi, node, service, flags, hints);
	if (rc) {
		fi_freeinfo(fi);
		return rc;
	}
	*info = fi;
	return 0;
}
