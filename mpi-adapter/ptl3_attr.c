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
	return PTL3_CAPS | (ptl3_params.rma ? PTL3_RMA_CAPS : 0);
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

static int hints_ok(const struct fi_info *h)
{
	if (!h)
		return 1;
	/* anything we cannot do (FI_RMA, FI_ATOMIC, FI_SOURCE, ...) */
	if (h->caps & ~ptl3_caps_now())
		return 0;
	if (h->ep_attr) {
		if (h->ep_attr->type != FI_EP_UNSPEC && h->ep_attr->type != FI_EP_RDM)
			return 0;
		if (h->ep_attr->max_msg_size > ep_attr.max_msg_size)
			return 0;
		if (h->ep_attr->tx_ctx_cnt > 1 && h->ep_attr->tx_ctx_cnt != FI_SHARED_CONTEXT)
			return 0;
		if (h->ep_attr->rx_ctx_cnt > 1 && h->ep_attr->rx_ctx_cnt != FI_SHARED_CONTEXT)
			return 0;
		if (h->ep_attr->tx_ctx_cnt == FI_SHARED_CONTEXT ||
		    h->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT)
			return 0;
	}
	if (h->addr_format != FI_FORMAT_UNSPEC)
		return 0;
	if (h->fabric_attr) {
		if (h->fabric_attr->name && strcmp(h->fabric_attr->name, fabric_attr.name))
			return 0;
		if (h->fabric_attr->prov_name && strcasecmp(h->fabric_attr->prov_name, PTL3_PROV_NAME) &&
		    !strstr(h->fabric_attr->prov_name, PTL3_PROV_NAME))
			return 0;
	}
	if (h->domain_attr) {
		const struct fi_domain_attr *d = h->domain_attr;
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
	}
	return 1;
}

int ptl3_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		 const struct fi_info *hints, struct fi_info **info)
{
	*info = NULL;
	if (!hints_ok(hints))
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
	free(fi->domain_attr->name);
	char dname[48];
	snprintf(dname, sizeof(dname), "ptl3");
	fi->domain_attr->name = strdup(dname);
	/* fabric_attr->prov_name is filled in by libfabric's core */
	if (hints) {
		/* echo what the application asked for where we can honour it */
		if (hints->caps)
			fi->caps = (hints->caps & ptl3_caps_now()) |
				   (ptl3_caps & (FI_LOCAL_COMM | FI_REMOTE_COMM));
		if (hints->caps & (FI_MSG | FI_TAGGED)) {
			if (!(fi->caps & (FI_SEND | FI_RECV)))
				fi->caps |= FI_SEND | FI_RECV;
		}
		fi->mode = 0;
		if (hints->domain_attr) {
			const struct fi_domain_attr *d = hints->domain_attr;
			if (d->threading != FI_THREAD_UNSPEC)
				fi->domain_attr->threading = d->threading;
			if (d->av_type != FI_AV_UNSPEC)
				fi->domain_attr->av_type = d->av_type;
			if (d->resource_mgmt != FI_RM_UNSPEC)
				fi->domain_attr->resource_mgmt = FI_RM_ENABLED;
		}
		if (hints->tx_attr) {
			fi->tx_attr->op_flags = hints->tx_attr->op_flags;
		}
		if (hints->rx_attr) {
			fi->rx_attr->op_flags = hints->rx_attr->op_flags;
		}
		fi->tx_attr->caps = fi->caps & (FI_MSG | FI_TAGGED | FI_SEND | FI_RMA | FI_READ |
						FI_WRITE);
		fi->rx_attr->caps = fi->caps & (FI_MSG | FI_TAGGED | FI_MULTI_RECV | FI_RECV |
						FI_DIRECTED_RECV | FI_RMA | FI_REMOTE_READ |
						FI_REMOTE_WRITE);
	}
	*info = fi;
	return 0;
}
