/* SPDX-License-Identifier: BSD-3-Clause */
/* myri_host.h - private state of the host driver of the emulated Myrinet
 * NIC, the "myrinet" NAL (host_init.c: attach, init/stop, ops table;
 * host_io.c: commands, registration, events, progress). */
#ifndef P3_MYRI_HOST_H
#define P3_MYRI_HOST_H

#include "myri_dev.h"
#include "nal.h"

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#define MYRI_HOST_SLOTS 16384u /* operations in flight (sends + deliveries) */

struct myri_slot {
	struct p3_msg *msg;
	uint32_t gen;
	uint32_t reg_first, nreg;
	uint64_t rx_token; /* a DELIVER's message: DISCARDed if the NIC rejects it */
	int in_use;
};

/* PTL_PROGRESS=interrupt (host_intr.c): LIB's progress thread is the
 * interrupt handler, bound to the application's core. */
struct myri_intr {
	int on;
	int cpu;        /* the application's core at PtlNIInit, -1: unknown */
	int bound;      /* the handler has been placed (first pass) */
	int have_clock; /* clock: the handler thread's CPU-time clock */
	clockid_t clock;
	uint64_t hdrs_seen; /* rx_hdrs at the end of the last handler pass */
};

struct myri_host {
	struct p3_lib *lib;
	int sock, doorbell_fd, intr_fd;
	struct myri_seg *seg;
	uint8_t *arena; /* the segment's EQ-ring arena (offload) */
	ptl_process_id_t id;
	uint32_t nic_ospid;
	/* cmd_lock: the command ring's producer side, the slot table and the
	 * registration allocator.  evt_lock: the event ring's consumer side
	 * (held while LIB runs, which may take cmd_lock through send()). */
	pthread_mutex_t cmd_lock, evt_lock;
	struct myri_slot slots[MYRI_HOST_SLOTS];
	uint32_t slot_next;
	uint8_t reg_busy[MYRI_NREG];
	uint32_t reg_next, key_next;
	_Atomic int nic_dead;
	int stopped;
	_Atomic uint64_t rx_hdrs; /* RX_HDR events handled */
	struct myri_intr intr;
};

/* What recv() is given as nal_ctx by the event loop. */
struct myri_rx_ctx {
	uint64_t nic_token;
	int called;
};

extern const struct p3_nal_ops p3_nal_myrinet_ops;

/* host_init.c: attach (shared with the offload mode, host_offload.c) */
struct myri_host *myri_host_new(struct p3_lib *lib); /* lib may be NULL */
int myri_host_addr(struct p3_lib *lib, const struct p3_nal_init_args *args, uint32_t *nid,
                   uint32_t *pid);
int myri_host_attach(struct myri_host *h, uint32_t nid, uint32_t pid);
void myri_host_free(struct myri_host *h);

/* host_io.c */
int myri_send(void *priv, struct p3_msg *msg, const struct p3_hdr *hdr, const struct iovec *iov,
              size_t niov, uint64_t offset, uint64_t len);
int myri_recv(void *priv, struct p3_msg *msg, void *nal_ctx, const struct iovec *iov, size_t niov,
              uint64_t offset, uint64_t mlen, uint64_t rlen);
int myri_progress(void *priv, int timeout_ms);
void myri_wakeup(void *priv);
void myri_fail_all(struct myri_host *h, ptl_ni_fail_t why);
int myri_io_drain(struct myri_host *h);
void myri_io_wait(struct myri_host *h, int timeout_ms);
void myri_io_check_nic(struct myri_host *h);
int myri_io_post_cmd(struct myri_host *h, const struct myri_cmd *cmd);
void myri_io_flush_cmds(struct myri_host *h, int timeout_ms);

/* host_intr.c */
int myri_intr_init(struct myri_host *h, const struct p3_nal_init_args *args,
                   struct p3_nal_info *info);
int myri_intr_progress(struct myri_host *h, int timeout_ms);
int myri_intr_status(struct myri_host *h, unsigned idx, ptl_sr_value_t *value);

#endif
