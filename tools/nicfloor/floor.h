/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * floor.h - p3-nicfloor's shared state: two emulated nodes, each an
 * application process and its NIC process, the token's path
 *   app0 -> nic0 -> wire -> nic1 -> app1 -> nic1 -> wire -> nic0 -> app0.
 * The host <-> NIC interface is the one of nal/myrinet (README.md §1.3)
 * reduced to one counter each way: a producer publishes its count (seq_cst)
 * and then reads the other side's sleep word, writing the other side's
 * eventfd (doorbell host -> NIC, interrupt NIC -> host) only when it is
 * set.  See README.md in this directory.
 */
#ifndef NICFLOOR_FLOOR_H
#define NICFLOOR_FLOOR_H

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#define FLOOR_MAX_ITERS     1000000
#define FLOOR_NIC_SPIN_US   50     /* mcpd's default idle spin (mcpd.c) */
#define FLOOR_APP_SPIN_US   20     /* the offload EQ wait's budget (host_offload.h) */
#define FLOOR_YIELD_SPIN_US 50     /* the EQ wait's spin when it yields (P3_SPIN_US) */
#define FLOOR_ETHERTYPE     0x88B6 /* IEEE local experimental 2: not rmpp's 0x88B5 */
#define FLOOR_FRAME_DEFAULT 150    /* bytes: about an rmpp frame carrying a 0-byte put */
#define FLOOR_FRAME_MAX     1500

enum floor_wire_kind { FLOOR_WIRE_ETHER, FLOOR_WIRE_UDP };

/* One emulated node; the two counters live on their own cache lines. */
struct floor_node {
	_Alignas(64) _Atomic uint64_t cmd_tail; /* tokens the app posted to its NIC */
	_Atomic uint32_t nic_sleeping;          /* the NIC is (about to be) blocked */
	_Alignas(64) _Atomic uint64_t evt_tail; /* tokens the NIC delivered to the app */
	_Atomic uint64_t evt_token;             /* the last token delivered */
	_Atomic uint32_t host_waiting;          /* the app is (about to be) blocked */
	_Alignas(64) _Atomic int32_t nic_pid;   /* for the app's spin policy */
	_Atomic int32_t app_pid;                /* for the NIC's spin decision */
	_Atomic uint32_t addr_ready;            /* addr below is valid */
	unsigned char addr[16];                 /* ether: MAC; udp: sockaddr_in port */
	int doorbell_fd;                        /* eventfd host -> NIC */
	int intr_fd;                            /* eventfd NIC -> host */
	/* what the NIC saw, for the report */
	uint64_t doorbells, interrupts, frames, wakeups;
};

struct floor_opts {
	enum floor_wire_kind wire;
	const char *netns[2]; /* ether: the namespace hosts of nic0, nic1 */
	const char *ifname;
	int app_cpu[2]; /* -1: unpinned */
	int nic_cpu;    /* -1: unpinned */
	long iters, warmup;
	size_t frame;
	int csv;
	int nic_spin_us; /* -1: as mcpd decides it (cpu_share.c) */
};

struct floor_shared {
	struct floor_node node[2];
	_Atomic uint32_t stop;
	_Atomic uint32_t failed;
	double rtt_us[FLOOR_MAX_ITERS]; /* app0's round trips */
};

/* floor_wire.c: the NIC's wire.  Opens it (in the NIC's namespace), fills
 * self->addr; 0 or -1 with a message. */
struct floor_wire {
	enum floor_wire_kind kind;
	int fd;
	int ifindex;
	unsigned char peer[16];
	unsigned char self[16];
	size_t frame;
};
int floor_wire_open(struct floor_wire *w, const struct floor_opts *o);
void floor_wire_peer(struct floor_wire *w, const unsigned char *peer_addr);
int floor_wire_send(struct floor_wire *w, uint64_t token);
/* 1 and *token: a frame; 0: none (EAGAIN); -1: error. */
int floor_wire_recv(struct floor_wire *w, uint64_t *token);

/* floor_nic.c: NIC k's process body (never returns). */
void floor_nic_main(struct floor_shared *sh, int k, const struct floor_opts *o);

/* floor_app.c: app k's process body; app 0 times the round trips. */
int floor_app_main(struct floor_shared *sh, int k, const struct floor_opts *o);

/* Pin the calling process to cpu (-1: leave it). */
void floor_pin(int cpu);
uint64_t floor_now_ns(void);

#endif
