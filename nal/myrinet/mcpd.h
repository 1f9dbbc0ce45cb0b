/* SPDX-License-Identifier: BSD-3-Clause */
/* mcpd.h - private state of mcpd, the emulated Myrinet NIC (mcpd.c: the
 * daemon and its event loop; mcpd_ep.c: one endpoint's command processing,
 * wire upcalls and DMA; mcpd_dma.c: registration checks and DMA). */
#ifndef P3_MCPD_H
#define P3_MCPD_H

#include "answer_q.h"
#include "myri_dev.h"
#include "rmpp.h"

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#define MCPD_RX_SLOTS     4096u /* received messages awaiting the host's answer */
#define MCPD_MAX_DEFERRED 1024u

/* A received message the host has not answered yet (or whose data is still
 * arriving). */
struct mcpd_rx {
	uint32_t gen;
	int in_use;
	int data_done, data_status; /* rx_done seen */
	int answered;               /* DELIVER or DISCARD seen */
	int discard;
	int exposed; /* its RX_HDR event has been posted */
	uint8_t hdr[MYRI_HDR_LEN];
	uint64_t host_token; /* the DELIVER's run, checked at answer time */
	struct iovec *dst;
	size_t ndst;
	uint64_t dst_len;
	void *buf; /* the NIC-side buffer the wire fills */
	uint64_t len;
	struct iovec buf_iov;
};

struct mcpd_tx {
	uint64_t host_token;
	void *buf;
	struct iovec iov;
};

struct mcpd_evt_backlog {
	struct mcpd_evt_backlog *next;
	struct myri_evt evt;
};

/* What an epoll registration points at. */
enum mcpd_tag_kind { MCPD_TAG_LISTEN, MCPD_TAG_CONN, MCPD_TAG_DOORBELL, MCPD_TAG_WIRE };
struct mcpd_tag {
	enum mcpd_tag_kind kind;
	struct mcpd_ep *ep;
};

struct mcpd_ep {
	struct mcpd *nic;
	struct mcpd_tag tag[3]; /* conn, doorbell, wire */
	int conn_fd, doorbell_fd, intr_fd;
	pid_t ospid; /* the host process (SO_PEERCRED), the only one DMA touches */
	struct myri_seg *seg;
	struct rmpp_ep *wire;
	uint32_t nid, pid;
	unsigned base_port;
	struct mcpd_rx rx[MCPD_RX_SLOTS];
	uint32_t rx_next;
	/* Arrival order of the received messages.  Only the oldest is shown to
	 * the host (RX_HDR); the next follows once it completed, so that a
	 * message's END event precedes the next message's START as over the
	 * other NALs. */
	uint32_t rxq[MCPD_RX_SLOTS];
	uint32_t rxq_head, rxq_len;
	/* Peers whose header found every slot taken (RMPP_RX_DEFER): resumed
	 * once slots are free again. */
	struct rmpp_addr deferred[MCPD_MAX_DEFERRED];
	uint32_t ndeferred;
	struct mcpd_evt_backlog *backlog, *backlog_tail;
	uint8_t *arena;       /* the segment's EQ-ring arena, NULL if absent */
	struct mcpd_off *off; /* offload: the LIB side of this endpoint */
	int dead;             /* tear down at the next loop turn */
	int wire_due;         /* progress the wire in the next pass (mcpd.c) */
	int intr_per_hdr;     /* MYRI_CMD_INTR_CTL: an interrupt per RX_HDR event */
	/* Requests whose target owes an answer (a put's ACK, a get's REPLY):
	 * sent, and handed over by rmpp (mcpd_await.c) */
	struct p3_aq await_unsent, await_sent;
	uint32_t nawait;
	uint32_t tx_inflight; /* sends rmpp has not completed (the host's, LIB's) */
	int in_cmds;          /* mcpd_ep_poll_cmds is running this queue */
	int closing;          /* the host is gone, the wire drains them (mcpd.c) */
	uint64_t close_by;    /* ...until then at the most */
	struct mcpd_ep *next;
};

/* The NIC's global counters (mcpd --counters). */
struct mcpd_stats {
	uint64_t attaches, detaches, attach_rejected, endpoints;
	uint64_t counters[MYRI_NCOUNTERS];           /* summed over detached endpoints */
	uint64_t host_counters[MYRI_NHOST_COUNTERS]; /* likewise */
	/* peers that failed (mcpd_await.c): declared dead; closed, reset or
	 * restarted; messages rmpp failed because of that; ACKs and REPLYs
	 * owed by such a peer that the NIC declared lost */
	uint64_t peers_dead, peers_gone, ops_peer_failed, answers_lost;
	/* endpoints whose host left with sends on the wire: drained in the
	 * background, or cut at the linger time */
	uint64_t drained, drain_cut;
};

/* A peer nid's MAC address (ether wire), looked up once. */
struct mcpd_mac {
	uint32_t nid;
	uint8_t mac[6];
};

struct mcpd {
	int listen_fd, epoll_fd;
	struct mcpd_tag listen_tag;
	enum rmpp_link_type link; /* RMPP_LINK_UDP or RMPP_LINK_ETHER (mcpd_wire.c) */
	char ifname[32];          /* ether: the interface */
	struct mcpd_mac *macs;    /* ether: nid -> MAC */
	size_t nmacs;
	unsigned base_port;
	unsigned spin_us;
	unsigned peer_dead_ms; /* a silent peer is declared dead after this (--peer-dead-ms) */
	uint64_t linger_us;    /* how long a gone host's sends may drain (rmpp's LINGER_US) */
	int spin_auto;         /* spin_us not given: 0 when the hosts cover our CPUs */
	unsigned spin_eff;     /* the spin of the event loop now (spin_update) */
	int bulk_spin;         /* spin_eff 0, all hosts offloaded: spin while bulk moves */
	unsigned slice_us;     /* the scheduling slice asked for (--slice-us, 0: none) */
	unsigned slice_eff_us; /* the slice the kernel granted, 0 if none (sched_slice.c) */
	uint64_t wires_all_at; /* when every wire last got a pass (mcpd.c) */
	uint64_t spin_at;      /* when spin_eff was last decided (mcpd.c) */
	struct mcpd_ep *eps;
	struct mcpd_stats stats;
	volatile int stop;
};

/* mcpd_ep.c */
struct mcpd_ep *mcpd_ep_attach(struct mcpd *nic, int conn_fd, const struct myri_attach_req *req,
                               const int fds[3], int *status);
int mcpd_ep_poll_cmds(struct mcpd_ep *ep);
/* Offload: the LIB commands at the head of the queue, before a
 * header is matched (mcpd_ep.c).  Returns how many ran. */
int mcpd_ep_cmds_before_hdr(struct mcpd_ep *ep);
int mcpd_ep_flush_events(struct mcpd_ep *ep);
int mcpd_ep_resume(struct mcpd_ep *ep);
void mcpd_ep_destroy(struct mcpd_ep *ep);
void mcpd_count(struct mcpd_ep *ep, enum myri_counter c, uint64_t n);
void mcpd_post_event(struct mcpd_ep *ep, const struct myri_evt *evt);

/* mcpd_dma.c */
int mcpd_run_iov(struct mcpd_ep *ep, const struct myri_cmd *cmd, struct iovec **out, size_t *nout);
int mcpd_dma(struct mcpd_ep *ep, int write, void *local, uint64_t len, const struct iovec *remote,
             size_t nremote);

/* mcpd_intr.c: the interrupt line (PTL_PROGRESS=interrupt) */
int mcpd_intr_ctl(struct mcpd_ep *ep, const struct myri_cmd *cmd);
void mcpd_intr_raise(struct mcpd_ep *ep, uint64_t hdrs);
void mcpd_intr_print(const struct mcpd *nic, FILE *out);

/* mcpd_offload.c: the Portals LIB side in the NIC (PTL_PROGRESS=offload).
 * Hooks: MYRI_CMD_LIB commands, the wire upcalls of an offloaded endpoint,
 * its teardown. */
struct mcpd_off;
int mcpd_off_cmd(struct mcpd_ep *ep, const struct myri_cmd *cmd);
int mcpd_off_rx_hdr(struct mcpd_ep *ep, const struct rmpp_addr *src, const void *hdr,
                    size_t hdr_len, uint64_t msg_len, struct rmpp_rx_accept *acc);
void mcpd_off_rx_done(struct mcpd_ep *ep, void *cookie, int status);
void mcpd_off_tx_done(struct mcpd_ep *ep, void *cookie, int status);
void mcpd_off_destroy(struct mcpd_ep *ep);

/* mcpd_wire.c: the endpoint's rmpp endpoint (udp or ether) and peer addresses */
int mcpd_wire_open(struct mcpd_ep *ep, uint32_t want_pid, const struct rmpp_callbacks *cb);
int mcpd_wire_addr(struct mcpd_ep *ep, uint32_t nid, uint32_t pid, struct rmpp_addr *out);
/* rmpp's LINGER_US (P3_RMPP_LINGER_US): the NIC's wires have none, mcpd.c
 * lingers for them */
uint64_t mcpd_wire_linger_us(void);

/* mcpd_await.c: answers owed by peers, failed when a peer fails.  add
 * before the request enters rmpp (cookie = its rmpp cookie), sent from its
 * tx_done (or with the error when rmpp_send refused it), answer for every
 * arriving header, peer_gone from the peer_event upcall, clear at teardown. */
void mcpd_await_add(struct mcpd_ep *ep, const struct rmpp_addr *peer, const uint8_t *hdr,
                    const void *cookie);
void mcpd_await_sent(struct mcpd_ep *ep, const void *cookie, int status);
void mcpd_await_answer(struct mcpd_ep *ep, const void *hdr, size_t hdr_len);
void mcpd_await_peer_gone(struct mcpd_ep *ep, const struct rmpp_addr *peer,
                          enum rmpp_peer_event ev);
void mcpd_await_clear(struct mcpd_ep *ep);
/* offload: the endpoint's LIB (NULL when closed), made current for a call */
struct p3_lib *mcpd_off_lib(struct mcpd_ep *ep);

/* mcpd_cmd.c: the command-queue entry check (also the fuzz target's entry) */
int mcpd_cmd_check(const struct myri_cmd *cmd);

#endif
