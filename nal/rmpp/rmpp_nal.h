/* SPDX-License-Identifier: BSD-3-Clause */
/* rmpp_nal.h - private state of the rmpp NALs ("udp" and "ether"): the glue
 * between the Portals LIB side (nal.h) and librmpp (rmpp/rmpp.h). */
#ifndef P3_RMPP_NAL_H
#define P3_RMPP_NAL_H

#include "answer_q.h"
#include "nal.h"
#include "rmpp.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Process id -> transport address (README.md):
 *   udp:   nid = IPv4 address (host order), UDP port = BASE_PORT + pid,
 *          rmpp endpoint id = pid;
 *   ether: nid = IPv4 address of the peer's interface, MAC from the kernel
 *          neighbour table (/proc/net/arp) of IFNAME, endpoint id = pid. */
struct rnal_map {
	ptl_nid_t nid;
	uint8_t mac[6];
};

struct rnal {
	struct p3_lib *rn_lib;
	enum rmpp_link_type rn_link;
	char rn_transfer[96]; /* xdp: the transfer mode, with how the link runs */
	struct rmpp_ep *rn_ep;
	ptl_process_id_t rn_id;
	unsigned rn_base_port;
	char rn_ifname[32];
	/* ether: resolved neighbours.  send() runs in application threads and
	 * in the progress thread at once (acks, replies), so the table has its
	 * own leaf lock; nothing else is taken while it is held. */
	pthread_mutex_t rn_macs_lock;
	struct rnal_map *rn_macs;
	size_t rn_nmacs;
	int rn_stopped;
	/* puts whose ACK is outstanding (ackwait.c), under a leaf lock */
	pthread_mutex_t rn_ack_lock;
	/* answers owed (ackwait.c, nal/answer_q.h): requests not yet
	 * finalized, and finalized ones */
	struct p3_aq rn_ackwait_unsent, rn_ackwait_sent;
	atomic_uint rn_nackwait;
	struct rnal *rn_live_next; /* farewell.c: live instances, for exit */
	pid_t rn_owner;		   /* the process that opened the endpoint */
};

/* What recv() tells the header upcall (recv is called from inside
 * p3_lib_parse, which the upcall calls). */
struct rnal_rx_ctx {
	int rc_called;
	struct p3_msg *rc_msg;
	const struct iovec *rc_iov;
	size_t rc_niov;
	uint64_t rc_offset, rc_mlen, rc_rlen;
};

/* init.c: the ops tables (found by nal/registry.c through weak symbols) */
extern const struct p3_nal_ops p3_nal_udp_ops;
extern const struct p3_nal_ops p3_nal_ether_ops;
extern const struct p3_nal_ops p3_nal_xdp_ops;

/* send.c */
int rnal_addr(struct rnal *rn, ptl_process_id_t id, struct rmpp_addr *out);
int rnal_send(void *priv, struct p3_msg *msg, const struct p3_hdr *hdr, const struct iovec *iov,
	      size_t niov, uint64_t offset, uint64_t len);
void rnal_tx_done(void *arg, void *cookie, int status, uint64_t accepted);
/* recv.c */
int rnal_rx_hdr(void *arg, const struct rmpp_addr *src, const void *hdr, size_t hdr_len,
		uint64_t msg_len, struct rmpp_rx_accept *acc);
void rnal_rx_done(void *arg, void *cookie, int status, uint64_t accepted);
int rnal_recv(void *priv, struct p3_msg *msg, void *nal_ctx, const struct iovec *iov, size_t niov,
	      uint64_t offset, uint64_t mlen, uint64_t rlen);
/* ackwait.c: puts that asked for an ACK, gets and GetPuts (a REPLY), until
 * it comes or cannot come */
struct rnal_ackwait;
bool rnal_ack_wanted(const struct p3_hdr *hdr);
int rnal_ackwait_add(struct rnal *rn, struct p3_msg *msg, const struct p3_hdr *hdr,
		     const struct rmpp_addr *peer);
/* tx_done of any send: a recorded put's ACK wait starts (status 0) or ends */
void rnal_ackwait_sent(struct rnal *rn, struct p3_msg *msg, int status);
/* an ACK or REPLY header from the peer (before or after p3_lib_parse) */
void rnal_ackwait_acked(struct rnal *rn, const struct p3_hdr *ack);
/* peer dead/closed/restarted: every finalized request's ACK/REPLY is lost */
void rnal_ackwait_peer_gone(struct rnal *rn, const struct rmpp_addr *peer, ptl_ni_fail_t status);
/* NI stop: drop every record (the MDs go with the NI) */
void rnal_ackwait_clear(struct rnal *rn);
/* farewell.c: the exit hook's list */
void rnal_live_add(struct rnal *rn);
void rnal_live_remove(struct rnal *rn);

/* progress.c */
int rnal_progress(void *priv, int timeout_ms);
void rnal_wakeup(void *priv);
void rnal_peer_event(void *arg, const struct rmpp_addr *peer, enum rmpp_peer_event ev,
		     uint32_t epoch);

#endif
