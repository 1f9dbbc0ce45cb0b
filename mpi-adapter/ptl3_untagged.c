/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_untagged.c - FI_MSG: thin wrappers over the engine in ptl3_send.c and ptl3_recv.c
 * (PT_MSG; FI_MULTI_RECV through fi_recvmsg; remote CQ data in hdr_data). */
#include "config.h"

#include "ptl3.h"

static ssize_t msg_recv(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src,
                        void *context)
{
	struct ptl3_ep *ep = ptl3_ep_of(fep);
	struct iovec iov = {buf, len};
	return ptl3_recv_common(ep, PTL3_Q_MSG, &iov, 1, src, 0, ~0ULL, context, ep->rx_op_flags);
}

static ssize_t msg_recvv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
                         fi_addr_t src, void *context)
{
	struct ptl3_ep *ep = ptl3_ep_of(fep);
	return ptl3_recv_common(ep, PTL3_Q_MSG, iov, count, src, 0, ~0ULL, context,
	                        ep->rx_op_flags);
}

static ssize_t msg_recvmsg(struct fid_ep *fep, const struct fi_msg *msg, uint64_t flags)
{
	struct ptl3_ep *ep = ptl3_ep_of(fep);
	return ptl3_recv_common(ep, PTL3_Q_MSG, msg->msg_iov, msg->iov_count, msg->addr, 0, ~0ULL,
	                        msg->context, flags);
}

static ssize_t msg_send(struct fid_ep *fep, const void *buf, size_t len, void *desc, fi_addr_t dest,
                        void *context)
{
	struct ptl3_ep *ep = ptl3_ep_of(fep);
	struct iovec iov = {(void *)buf, len};
	return ptl3_send_common(ep, PTL3_Q_MSG, &iov, 1, dest, 0, 0, 0, context, ep->tx_op_flags);
}

static ssize_t msg_sendv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
                         fi_addr_t dest, void *context)
{
	struct ptl3_ep *ep = ptl3_ep_of(fep);
	return ptl3_send_common(ep, PTL3_Q_MSG, iov, count, dest, 0, 0, 0, context,
	                        ep->tx_op_flags);
}

static ssize_t msg_sendmsg(struct fid_ep *fep, const struct fi_msg *msg, uint64_t flags)
{
	struct ptl3_ep *ep = ptl3_ep_of(fep);
	if (!msg)
		return -FI_EINVAL;
	return ptl3_send_common(ep, PTL3_Q_MSG, msg->msg_iov, msg->iov_count, msg->addr, 0,
	                        msg->data, !!(flags & FI_REMOTE_CQ_DATA), msg->context,
	                        flags & ~PTL3_INJECT_CALL);
}

static ssize_t msg_inject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest)
{
	return ptl3_inject_common(ptl3_ep_of(fep), PTL3_Q_MSG, buf, len, dest, 0, 0, 0);
}

static ssize_t msg_senddata(struct fid_ep *fep, const void *buf, size_t len, void *desc,
                            uint64_t data, fi_addr_t dest, void *context)
{
	struct ptl3_ep *ep = ptl3_ep_of(fep);
	struct iovec iov = {(void *)buf, len};
	return ptl3_send_common(ep, PTL3_Q_MSG, &iov, 1, dest, 0, data, 1, context,
	                        ep->tx_op_flags);
}

static ssize_t msg_injectdata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data,
                              fi_addr_t dest)
{
	return ptl3_inject_common(ptl3_ep_of(fep), PTL3_Q_MSG, buf, len, dest, 0, data, 1);
}

struct fi_ops_msg ptl3_msg_ops = {
    .size = sizeof(struct fi_ops_msg),
    .recv = msg_recv,
    .recvv = msg_recvv,
    .recvmsg = msg_recvmsg,
    .send = msg_send,
    .sendv = msg_sendv,
    .sendmsg = msg_sendmsg,
    .inject = msg_inject,
    .senddata = msg_senddata,
    .injectdata = msg_injectdata,
};
