/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_rma.c - FI_RMA (offered unless FI_PTL3_RMA=0; MPICH uses it for
 * MPI_Put/MPI_Get and to read long active messages), and typed "not
 * supported" stubs for atomics and collectives.
 * PT_RMA: fi_mr_reg with remote access -> ME (match bits = key, MANAGE_REMOTE,
 * OP_PUT/OP_GET by access); fi_write -> PtlPut with ack (delivery complete on
 * the ACK); fi_read -> PtlGet (complete on REPLY_END); both bump the
 * FI_WRITE/FI_READ counters.  Remote CQ data on writes is not supported. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "ptl3.h"

/* the CQ data of a finished fi_writedata: a zero-length put without ACK
 * out of the release MD (which ignores its SEND_END), send id 0 (a general
 * send delivered whole: nothing to release) */
void ptl3_rma_notify_locked(struct ptl3_ep *ep, ptl_process_id_t target, uint32_t target_ep,
			    uint64_t data)
{
	uint64_t hdr = (data & 0xFFFFFFFFULL) | PTL3_HDR_HAS_DATA;
	int rc = ep->rel.md != PTL_INVALID_HANDLE
		     ? PtlPut(ep->rel.md, PTL_NOACK_REQ, target,
			      ptl3_rx_pt(ep->pt_base, target_ep, PTL3_PT_MSG), 0, 0, 0, hdr)
		     : PTL_MD_INVALID;
	if (rc != PTL_OK)
		ptl3_cq_push_locked(ep->tx_cq, NULL, FI_RMA | FI_WRITE, 0, NULL, 0, 0, FI_EIO, 0);
}

static ssize_t rma_common_data(struct ptl3_ep *ep, int write, const struct iovec *iov,
			       size_t count, fi_addr_t peer, uint64_t addr, uint64_t key,
			       void *context, uint64_t flags, int has_data, uint64_t data);

static ssize_t rma_common(struct ptl3_ep *ep, int write, const struct iovec *iov, size_t count,
			  fi_addr_t peer, uint64_t addr, uint64_t key, void *context, uint64_t flags)
{
	return rma_common_data(ep, write, iov, count, peer, addr, key, context, flags, 0, 0);
}

static ssize_t rma_common_data(struct ptl3_ep *ep, int write, const struct iovec *iov,
			       size_t count, fi_addr_t peer, uint64_t addr, uint64_t key,
			       void *context, uint64_t flags, int has_data, uint64_t data)
{
	if (!ep || (count && !iov))
		return -FI_EINVAL;
	if (has_data && !ep->rx_cq_data)
		return -FI_EOPNOTSUPP; /* the CQ data would take a receive */
	if (!ptl3_params.rma)
		return -FI_ENOSYS;
	if (count > 1)
		return -FI_EINVAL;
	void *buf = count ? iov[0].iov_base : NULL;
	size_t len = count ? iov[0].iov_len : 0;
	ptl3_lock(ep->dom);
	if (!ep->enabled) {
		ptl3_unlock(ep->dom);
		return -FI_EOPBADSTATE;
	}
	ptl_process_id_t id;
	uint32_t peer_ep;
	if (ptl3_av_get(ep->av, peer, &id, &peer_ep)) {
		ptl3_unlock(ep->dom);
		return -FI_EINVAL;
	}
	ptl3_ep_drain_locked(ep);
	struct ptl3_op *op = ptl3_op_alloc_locked(ep, write ? PTL3_OP_WRITE : PTL3_OP_READ);
	if (!op) {
		ptl3_unlock(ep->dom);
		return -FI_EAGAIN;
	}
	op->context = context;
	op->notify = write && has_data;
	op->hdr = data;
	op->target = id;
	op->target_ep = peer_ep;
	op->want_comp = !(flags & PTL3_INJECT_CALL) && (!ep->tx_selective || (flags & FI_COMPLETION));
	if (write && (flags & FI_INJECT) && len) {
		buf = ptl3_op_bounce(op, buf, len);
		if (!buf) {
			ptl3_op_free_locked(ep, op);
			ptl3_unlock(ep->dom);
			return -FI_EAGAIN;
		}
	}
	ptl_md_t md;
	memset(&md, 0, sizeof(md));
	md.start = len ? buf : (void *)&ptl3_zero_byte;
	md.length = len;
	md.threshold = write ? 2 : 1; /* put + ack, or the reply */
	md.options = PTL_MD_EVENT_START_DISABLE;
	md.user_ptr = ptl3_op_uptr(op);
	md.eq_handle = ep->eq;
	int rc = PtlMDBind(ep->dom->ni, md, PTL_UNLINK, &op->md);
	if (rc == PTL_OK) {
		ptl_pt_index_t pt = ep->pt_base + PTL3_PT_RMA;
		if (write)
			rc = PtlPut(op->md, PTL_ACK_REQ, id, pt, 0, key, addr, 0);
		else
			rc = PtlGet(op->md, id, pt, 0, key, addr);
		if (rc != PTL_OK)
			PtlMDUnlink(op->md);
	}
	if (rc != PTL_OK) {
		ptl3_op_free_locked(ep, op);
		ptl3_unlock(ep->dom);
		return rc == PTL_NO_SPACE ? -FI_EAGAIN : -FI_EIO;
	}
	if (write) {
		ep->st.puts++;
		ep->st.bytes_sent += len;
	} else {
		ep->st.gets++;
	}
	ptl3_unlock(ep->dom);
	return 0;
}

static ssize_t r_read(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src_addr,
		      uint64_t addr, uint64_t key, void *context)
{
	struct iovec iov = {buf, len};
	struct ptl3_ep *e = ptl3_ep_of(ep);
	return rma_common(e, 0, &iov, 1, src_addr, addr, key, context, e->tx_op_flags);
}
static ssize_t r_readv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t src_addr, uint64_t addr, uint64_t key, void *context)
{
	struct ptl3_ep *e = ptl3_ep_of(ep);
	return rma_common(e, 0, iov, count, src_addr, addr, key, context, e->tx_op_flags);
}
static ssize_t r_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags)
{
	if (msg->rma_iov_count != 1)
		return -FI_EINVAL;
	return rma_common(ptl3_ep_of(ep), 0, msg->msg_iov, msg->iov_count, msg->addr,
			  msg->rma_iov[0].addr, msg->rma_iov[0].key, msg->context, flags & ~PTL3_INJECT_CALL);
}
static ssize_t r_write(struct fid_ep *ep, const void *buf, size_t len, void *desc,
		       fi_addr_t dest_addr, uint64_t addr, uint64_t key, void *context)
{
	struct iovec iov = {(void *)buf, len};
	struct ptl3_ep *e = ptl3_ep_of(ep);
	return rma_common(e, 1, &iov, 1, dest_addr, addr, key, context, e->tx_op_flags);
}
static ssize_t r_writev(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
			fi_addr_t dest_addr, uint64_t addr, uint64_t key, void *context)
{
	struct ptl3_ep *e = ptl3_ep_of(ep);
	return rma_common(e, 1, iov, count, dest_addr, addr, key, context, e->tx_op_flags);
}
static ssize_t r_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags)
{
	if (msg->rma_iov_count != 1)
		return -FI_EINVAL;
	return rma_common_data(ptl3_ep_of(ep), 1, msg->msg_iov, msg->iov_count, msg->addr,
			       msg->rma_iov[0].addr, msg->rma_iov[0].key, msg->context,
			       flags & ~PTL3_INJECT_CALL, !!(flags & FI_REMOTE_CQ_DATA), msg->data);
}
static ssize_t r_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest_addr,
			uint64_t addr, uint64_t key)
{
	struct iovec iov = {(void *)buf, len};
	return rma_common(ptl3_ep_of(ep), 1, &iov, 1, dest_addr, addr, key, NULL,
			  FI_INJECT | PTL3_INJECT_CALL);
}
static ssize_t r_writedata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			   uint64_t data, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			   void *context)
{
	struct iovec iov = {(void *)buf, len};
	struct ptl3_ep *e = ptl3_ep_of(ep);
	return rma_common_data(e, 1, &iov, 1, dest_addr, addr, key, context, e->tx_op_flags, 1,
			       data);
}
static ssize_t r_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
			    fi_addr_t dest_addr, uint64_t addr, uint64_t key)
{
	struct iovec iov = {(void *)buf, len};
	return rma_common_data(ptl3_ep_of(ep), 1, &iov, 1, dest_addr, addr, key, NULL,
			       FI_INJECT | PTL3_INJECT_CALL, 1, data);
}

struct fi_ops_rma ptl3_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = r_read,
	.readv = r_readv,
	.readmsg = r_readmsg,
	.write = r_write,
	.writev = r_writev,
	.writemsg = r_writemsg,
	.inject = r_inject,
	.writedata = r_writedata,
	.injectdata = r_injectdata,
};

/* ---- collectives */
static ssize_t c_barrier(struct fid_ep *ep, fi_addr_t coll_addr, void *context)
{
	return -FI_ENOSYS;
}
static ssize_t c_broadcast(struct fid_ep *ep, void *buf, size_t count, void *desc,
			   fi_addr_t coll_addr, fi_addr_t root_addr, enum fi_datatype datatype,
			   uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}
static ssize_t c_alltoall(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			  void *result, void *result_desc, fi_addr_t coll_addr,
			  enum fi_datatype datatype, uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}
static ssize_t c_allreduce(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			   void *result, void *result_desc, fi_addr_t coll_addr,
			   enum fi_datatype datatype, enum fi_op op, uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}
static ssize_t c_reduce_scatter(struct fid_ep *ep, const void *buf, size_t count, void *desc,
				void *result, void *result_desc, fi_addr_t coll_addr,
				enum fi_datatype datatype, enum fi_op op, uint64_t flags,
				void *context)
{
	return -FI_ENOSYS;
}
static ssize_t c_reduce(struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result,
			void *result_desc, fi_addr_t coll_addr, fi_addr_t root_addr,
			enum fi_datatype datatype, enum fi_op op, uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}
static ssize_t c_scatter(struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result,
			 void *result_desc, fi_addr_t coll_addr, fi_addr_t root_addr,
			 enum fi_datatype datatype, uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}
static ssize_t c_msg(struct fid_ep *ep, const struct fi_msg_collective *msg,
		     struct fi_ioc *resultv, void **result_desc, size_t result_count,
		     uint64_t flags)
{
	return -FI_ENOSYS;
}
static ssize_t c_barrier2(struct fid_ep *ep, fi_addr_t coll_addr, uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

struct fi_ops_collective ptl3_collective_ops = {
	.size = sizeof(struct fi_ops_collective),
	.barrier = c_barrier,
	.broadcast = c_broadcast,
	.alltoall = c_alltoall,
	.allreduce = c_allreduce,
	.allgather = c_alltoall,
	.reduce_scatter = c_reduce_scatter,
	.reduce = c_reduce,
	.scatter = c_scatter,
	.gather = c_scatter,
	.msg = c_msg,
	.barrier2 = c_barrier2,
};
