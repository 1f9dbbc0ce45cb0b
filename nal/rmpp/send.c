/* SPDX-License-Identifier: BSD-3-Clause */
/* send.c - rmpp NALs: process id -> address, send(), send completions. */
#include "rmpp_nal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The neighbour table: found -> fills OUT (if given) and returns true. */
static bool mac_lookup_locked(struct rnal *rn, ptl_nid_t nid, struct rmpp_addr *out, uint16_t pid)
{
	for (size_t i = 0; i < rn->rn_nmacs; i++)
		if (rn->rn_macs[i].nid == nid) {
			if (out)
				rmpp_addr_ether(out, rn->rn_macs[i].mac, pid);
			return true;
		}
	return false;
}

static bool mac_lookup(struct rnal *rn, ptl_nid_t nid, struct rmpp_addr *out, uint16_t pid)
{
	pthread_mutex_lock(&rn->rn_macs_lock);
	bool found = mac_lookup_locked(rn, nid, out, pid);
	pthread_mutex_unlock(&rn->rn_macs_lock);
	return found;
}

int rnal_addr(struct rnal *rn, ptl_process_id_t id, struct rmpp_addr *out)
{
	if (id.pid > 0xffff)
		return -EINVAL;
	if (rn->rn_link == RMPP_LINK_UDP) {
		if (rn->rn_base_port + id.pid > 65535)
			return -EINVAL;
		rmpp_addr_udp(out, htonl(id.nid), htons((uint16_t)(rn->rn_base_port + id.pid)),
			      (uint16_t)id.pid);
		return 0;
	}
	if (mac_lookup(rn, id.nid, out, (uint16_t)id.pid))
		return 0;
	/* A miss: resolve without the lock (the neighbour table is a file, and
	 * rmpp_ep_addr takes the endpoint lock), then add unless another
	 * thread got there first. */
	struct rnal_map m = {.nid = id.nid};
	int rc;
	if (id.nid == rn->rn_id.nid) {
		struct rmpp_addr self;
		rmpp_ep_addr(rn->rn_ep, &self);
		memcpy(m.mac, self.u.mac, 6);
	} else if ((rc = rmpp_neigh_lookup(rn->rn_ifname, id.nid, m.mac)) != 0) {
		p3_lib_log(rn->rn_lib, 1, "ether: no neighbour entry for nid %u.%u.%u.%u on %s",
			   id.nid >> 24, (id.nid >> 16) & 255, (id.nid >> 8) & 255, id.nid & 255,
			   rn->rn_ifname);
		return rc;
	}
	pthread_mutex_lock(&rn->rn_macs_lock);
	rc = 0;
	if (!mac_lookup_locked(rn, id.nid, NULL, 0)) {
		struct rnal_map *t = realloc(rn->rn_macs, (rn->rn_nmacs + 1) * sizeof(*t));
		if (t) {
			rn->rn_macs = t;
			rn->rn_macs[rn->rn_nmacs++] = m;
		} else {
			rc = -ENOMEM;
		}
	}
	pthread_mutex_unlock(&rn->rn_macs_lock);
	if (rc == 0)
		rmpp_addr_ether(out, m.mac, (uint16_t)id.pid);
	return rc;
}

int rnal_send(void *priv, struct p3_msg *msg, const struct p3_hdr *hdr, const struct iovec *iov,
	      size_t niov, uint64_t offset, uint64_t len)
{
	struct rnal *rn = priv;
	struct rmpp_addr to;
	uint8_t wire[P3_HDR_WIRE_LEN];
	rmpp_pathprof_mark(rn->rn_ep, RMPP_PP_NAL_SEND);
	if (rn->rn_stopped || !rn->rn_ep)
		return -ESHUTDOWN;
	int rc = rnal_addr(rn, hdr->dst, &to);
	if (rc)
		return rc;
	p3_hdr_pack(hdr, wire);
	bool want_ack = rnal_ack_wanted(hdr);
	if (want_ack && rnal_ackwait_add(rn, msg, hdr, &to) != 0)
		return -ENOMEM;
	/* Nobody is blocked on an ACK the way the peer is on a reply: let it
	 * follow the target's next message (an MPI ping-pong's answer) in the
	 * same batch instead of costing a datagram and a syscall ahead of it. */
	if (hdr->type == P3_MSG_ACK)
		return rmpp_send_lazy(rn->rn_ep, &to, wire, sizeof(wire), iov, niov, offset, len,
				      msg);
	/* ...and when that answer goes, it carries the held ACKs in its own
	 * header (recv.c unpacks them): one datagram, one receive, instead of
	 * a second frame the peer reads before it sees its answer.  A REPLY
	 * goes eagerly (up to P3_RMPP_SOLICITED_EAGER_MAX): the initiator asked
	 * for exactly these bytes and its MD waits, so an RTS/CTS would only
	 * add a round trip to the get. */
	unsigned flags = hdr->type == P3_MSG_REPLY ? RMPP_SEND_SOLICITED : 0;
	rc = rmpp_send_flags(rn->rn_ep, &to, wire, sizeof(wire), iov, niov, offset, len, msg,
			     P3_HDR_WIRE_LEN, flags);
	if (rc && want_ack)
		rnal_ackwait_sent(rn, msg, rc); /* drops the record */
	return rc;
}

void rnal_tx_done(void *arg, void *cookie, int status, uint64_t accepted)
{
	struct rnal *rn = arg;
	(void)accepted;
	if (!cookie)
		return;
	rnal_ackwait_sent(rn, cookie, status);
	p3_lib_finalize(rn->rn_lib, cookie, p3_nal_fail_kind(status));
}
