/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_tagged.c - FI_TAGGED: thin wrappers over the engine in ptl3_send.c
 * and ptl3_recv.c (PT_TAG; FI_PEEK/FI_CLAIM/FI_DISCARD; remote CQ data in
 * hdr_data). */
#include "config.h"

#include "ptl3.h"

static ssize_t t_recv(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src,
		      uint64_t tag, uint64_t ignore, void *context)
{
	struct ptl3_ep *ep = ptl3_ep_of(fep);
	struct iovec iov = {buf, len};
	return ptl3_recv_common(ep, PTL3_Q_TAG, &iov, 1, src, tag, ignore, context,
				ep->rx_op_flags);
}

static ssize_t t_recvv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t src, uint64_t tag, uint64_t ignore, void *context)
{
	struct ptl3_ep *ep = ptl3_ep_of(fep);
	return ptl3_recv_common(ep, PTL3_Q_TAG, iov, count, src, tag, ignore, context,
				ep->rx_op_flags);
}

static ssize_t t_recvmsg(struct fid_ep *fep, const struct fi_msg_tagged *msg, uint64_t flags)
{
	return ptl3_recv_common(ptl3_ep_of(fep), PTL3_Q_TAG, msg->msg_iov, msg->iov_count,
				msg->addr, msg->tag, msg->ignore, msg->context, flags);
}

static ssize_t t_send(struct fid_ep *fep, const void *buf, size_t len, void *desc, fi_addr_t dest,
		      uint64_t tag, void *context)
{
	struct ptl3_ep *ep = ptl3_ep_of(fep);
	struct iovec iov = {(void *)buf, len};
	return ptl3_send_common(ep, PTL3_Q_TAG, &iov, 1, dest, tag, 0, 0, context,
				ep->tx_op_flags);
}

static ssize_t t_sendv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t dest, uint64_t tag, void *context)
{
	struct ptl3_ep *ep = ptl3_ep_of(fep);
	return ptl3_send_common(ep, PTL3_Q_TAG, iov, count, dest, tag, 0, 0, context,
				ep->tx_op_flags);
}

static ssize_t t_sendmsg(struct fid_ep *fep, const struct fi_msg_tagged *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return ptl3_send_common(ptl3_ep_of(fep), PTL3_Q_TAG, msg->msg_iov, msg->iov_count,
				msg->addr, msg->tag, msg->data, !!(flags & FI_REMOTE_CQ_DATA),
				msg->context, flags & ~PTL3_INJECT_CALL);
}

static ssize_t t_inject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest,
			uint64_t tag)
{
	return ptl3_inject_common(ptl3_ep_of(fep), PTL3_Q_TAG, buf, len, dest, tag, 0, 0);
}

static ssize_t t_senddata(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			  uint64_t data, fi_addr_t dest, uint64_t tag, void *context)
{
	struct ptl3_ep *ep = ptl3_ep_of(fep);
	struct iovec iov = {(void *)buf, len};
	return ptl3_send_common(ep, PTL3_Q_TAG, &iov, 1, dest, tag, data, 1, context,
				ep->tx_op_flags);
}

static ssize_t t_injectdata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data,
			    fi_addr_t dest, uint64_t tag)
{
	return ptl3_inject_common(ptl3_ep_of(fep), PTL3_Q_TAG, buf, len, dest, tag, data, 1);
}

struct fi_ops_tagged ptl3_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = t_recv,
	.recvv = t_recvv,
	.recvmsg = t_recvmsg,
	.send = t_send,
	.sendv = t_sendv,
	.sendmsg = t_sendmsg,
	.inject = t_inject,
	.senddata = t_senddata,
	.injectdata = t_injectdata,
};
