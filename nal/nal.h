/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nal.h - the contract between the Portals LIB side (portals/) and a network
 * abstraction layer (nal/<name>/).
 *
 * Everything a NAL needs from the core is declared here; the core never
 * includes a NAL's headers, and a NAL never sees ME/MD/EQ internals: it gets
 * a header, iovecs, offsets and an opaque message token.
 *
 * Life of a message
 *   initiator: API call -> LIB builds a struct p3_hdr and calls ops->send()
 *              with the source iovec.  When the source buffer is reusable the
 *              NAL calls p3_lib_finalize(lib, msg, PTL_NI_OK).
 *   target:    the NAL reads a whole header and calls p3_lib_parse().  LIB
 *              matches it and, before p3_lib_parse() returns, calls
 *              ops->recv() exactly once: with a message token and a
 *              destination iovec when data is to be delivered, or with
 *              msg == NULL and mlen == 0 when the request was dropped (the NAL
 *              then discards rlen payload bytes and must not finalize).  The
 *              NAL moves the bytes (possibly later, possibly in pieces) and
 *              calls p3_lib_finalize(lib, msg, status) once they are in place.
 *
 * Locking rules
 *   - LIB never calls an ops method with its own lock held, so a NAL may call
 *     back into LIB (p3_lib_parse / p3_lib_finalize) from inside send(),
 *     recv() or progress().
 *   - A NAL must not hold a lock that its own send() takes while it calls
 *     p3_lib_parse(), because LIB may call send() from inside p3_lib_parse()
 *     (acks, get replies).
 *   - p3_lib_parse/p3_lib_finalize may be called from any thread, including
 *     a NAL's own threads.
 *
 * Ordering: a NAL delivers headers from one initiator to p3_lib_parse() in
 * the order that initiator called send() (Portals requires in-order delivery
 * between a pair of processes).
 *
 * Sends to oneself never reach a NAL: LIB routes them through the loopback
 * NAL (nal/lo), which is also the smallest executable example of this
 * contract.
 */
#ifndef P3_NAL_H
#define P3_NAL_H

#include <portals3.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define P3_NAL_ABI_VERSION 1

struct p3_lib; /* LIB-side state of one NI: opaque to NALs */
struct p3_msg; /* one in-flight message: opaque to NALs */

/* Message types carried in p3_hdr.type. */
#define P3_MSG_TYPES(X)                                                                          \
	X(PUT, 1)                                                                                \
	X(GET, 2)                                                                                \
	X(GETPUT, 3)                                                                             \
	X(ACK, 4)                                                                                \
	X(REPLY, 5)

enum p3_msg_type {
#define P3_MSG_TYPE_ENUM(name, value) P3_MSG_##name = value,
	P3_MSG_TYPES(P3_MSG_TYPE_ENUM)
#undef P3_MSG_TYPE_ENUM
};

/* Name of a message type ("PUT"), or "?" for an unknown value. */
const char *p3_msg_type_name(unsigned int type);

/*
 * The Portals header of one message, in host representation.  A NAL that
 * crosses a machine boundary serialises it with p3_hdr_pack() (explicit,
 * network byte order, versioned); shmem may copy the struct as is.
 *
 *                 PUT            GET             GETPUT          ACK            REPLY
 * md_handle   ack target MD   reply MD        reply (get) MD  initiator MD    initiator MD
 *             or PTL_MD_NONE
 * md_offset   initiator link  where the reply where the reply link echoed    echoed
 *             (acked puts)    lands locally   lands locally   from the put
 * remote_off  target offset   target offset   target offset   offset at tgt   offset at tgt
 * rlength     bytes sent      bytes asked     bytes sent      rlength of put  rlength of get
 * mlength     -               -               -               accepted len    bytes carried
 * payload_len rlength         0               rlength         0               mlength
 *
 * An acked put carries the initiator's event link in md_offset and the ACK
 * echoes it, so LIB can post the initiator's ACK event strictly after its
 * SEND_END even when a NAL reports send completion late.
 */
struct p3_hdr {
	uint32_t type; /* enum p3_msg_type */
	ptl_process_id_t src;
	ptl_process_id_t dst;
	ptl_uid_t src_uid;
	ptl_jid_t src_jid;
	ptl_pt_index_t pt_index;
	ptl_ac_index_t ac_index;
	ptl_match_bits_t match_bits;
	ptl_hdr_data_t hdr_data;
	uint64_t remote_offset;
	uint64_t rlength;
	uint64_t mlength;
	uint64_t payload_len;
	uint64_t md_offset;
	ptl_handle_md_t md_handle;
	uint32_t flags; /* P3_HDR_F_*; 0 but in a failed REPLY or ACK */
};

/* p3_hdr.flags.  P3_HDR_F_FAIL: a REPLY (mlength and payload 0) saying the
 * target could not complete the get or getput (the NAL could not read the
 * target MD -- a NIC's DMA of it failed -- or an offloading NIC's GetPut
 * swap failed): the initiator's REPLY_END carries PTL_NI_FAIL.  In an ACK
 * (mlength 0): the put's data could not be placed in the target MD (its
 * PUT_END failed with PTL_NI_FAIL): the initiator's ACK carries PTL_NI_FAIL. */
#define P3_HDR_F_FAIL 1u

/* Wire form of p3_hdr: P3_HDR_WIRE_LEN bytes, network byte order, first byte
 * P3_HDR_WIRE_VERSION.  unpack returns 0 or -1 (short, wrong version, bad
 * type, payload_len inconsistent with type); it never reads past len. */
#define P3_HDR_WIRE_VERSION 1
#define P3_HDR_WIRE_LEN 104
void p3_hdr_pack(const struct p3_hdr *hdr, uint8_t *wire);
int p3_hdr_unpack(const uint8_t *wire, size_t len, struct p3_hdr *hdr);

/* What a NAL is given at start-up. */
struct p3_nal_init_args {
	ptl_interface_t iface;
	ptl_pid_t requested_pid; /* PTL_PID_ANY: the NAL (or the runtime) picks */
	ptl_jid_t jid;           /* job id from the runtime, or PTL_JID_ANY */
	int rank;                /* this process's rank, -1 if no runtime */
	int nranks;              /* job size, 0 if no runtime */
	const ptl_nid_t *nidmap; /* rank -> nid (nranks entries) or NULL */
	const ptl_pid_t *pidmap; /* rank -> pid (nranks entries) or NULL */
	int progress_thread;     /* 1: LIB runs a progress thread that blocks in
				    progress(); the NAL may rely on it.
				    P3_PROGRESS_INTERRUPT (2): the same thread,
				    which a NAL with an interrupting NIC turns
				    into its interrupt handler (it says so in
				    p3_nal_info.interrupt_handler); other NALs
				    treat it as 1 */
};

/* PTL_PROGRESS=interrupt (p3_nal_init_args.progress_thread). */
#define P3_PROGRESS_INTERRUPT 2

/* What a NAL reports back from init. */
struct p3_nal_info {
	ptl_process_id_t id;    /* this NI's process id */
	ptl_ni_limits_t limits; /* NAL-imposed limits (fields <= 0: no limit) */
	uint64_t max_msg_size;  /* largest payload, 0: unlimited */
	const char *transfer_mode; /* e.g. "cma single copy" / "two-copy pipeline" */
	int interrupt_handler;  /* 1: LIB's progress thread is this NAL's interrupt
				   handler (PTL_PROGRESS=interrupt honoured) */
};

/*
 * The NAL operations table.  The first field is the struct size (ABI check:
 * the core refuses a table whose size differs from its own).  No member may
 * be NULL (a NAL without a feature points at p3_nal_nosys_*()), except the
 * ones marked optional at the end.
 *
 * All methods return 0 on success or a negative errno-style value.
 */
struct p3_nal_ops {
	size_t size;  /* sizeof(struct p3_nal_ops) */
	const char *name;      /* "lo", "shmem", "udp", "ether", "myrinet" */
	ptl_interface_t iface; /* PTL_IFACE_* */

	/* Bring the NAL up for one NI.  On success *priv holds the NAL's state
	 * and *info is filled.  -EADDRINUSE if the requested pid is taken,
	 * -EINVAL if it is out of range, -EDOM if one of the NAL's parameters
	 * (an environment variable) is malformed or out of range: the NAL has
	 * then logged which one and what it accepts. */
	int (*init)(struct p3_lib *lib, const struct p3_nal_init_args *args,
		    struct p3_nal_info *info, void **priv);

	/* Send hdr followed by `len` bytes taken from iov at `offset`
	 * (len == hdr->payload_len).  Non-blocking: a return of 0 promises a
	 * later p3_lib_finalize(lib, msg, ...) once the source may be reused;
	 * a negative return means nothing was sent and no finalize will come
	 * (LIB then fails the operation itself).  msg may be NULL for sends
	 * that need no completion (none today; reserved). */
	int (*send)(void *priv, struct p3_msg *msg, const struct p3_hdr *hdr,
		    const struct iovec *iov, size_t niov, uint64_t offset, uint64_t len);

	/* Called by LIB from inside p3_lib_parse(), exactly once per parsed
	 * header.  nal_ctx is what the NAL passed to p3_lib_parse().  Deliver
	 * mlen bytes into iov at offset and discard the remaining rlen - mlen
	 * payload bytes; then p3_lib_finalize(lib, msg, status).  msg == NULL:
	 * the request was dropped, discard rlen bytes, no finalize. */
	int (*recv)(void *priv, struct p3_msg *msg, void *nal_ctx, const struct iovec *iov,
		    size_t niov, uint64_t offset, uint64_t mlen, uint64_t rlen);

	/* Make progress: poll the wire, move data, call back into LIB.
	 * timeout_ms 0: one non-blocking pass; > 0: may block up to that long
	 * when idle; < 0: may block until woken.  Implementations spin briefly
	 * before blocking.  Returns the number of events handled (>= 0). */
	int (*progress)(void *priv, int timeout_ms);

	/* Wake a thread blocked in progress() (for NIFini and thread exit).
	 * Must be async-signal-safe and callable from any thread. */
	void (*wakeup)(void *priv);

	/* Distance to a process (0 self, 1 same node, 2 one hop ...). */
	int (*dist)(void *priv, ptl_process_id_t id, unsigned long *distance);

	/* Read NAL status register `reg` (>= PTL_SR_NAL_BASE).  -ENOENT if the
	 * NAL has no such register. */
	int (*status)(void *priv, ptl_sr_index_t reg, ptl_sr_value_t *value);

	/* Stop: finish or fail (p3_lib_finalize with PTL_NI_UNLINKED) every
	 * in-flight message; no callback into LIB after it returns. */
	void (*stop)(void *priv);

	/* Release everything; priv is invalid afterwards. */
	void (*destroy)(void *priv);

	/* Optional (NULL: not offered).  A send nobody waits for: LIB calls it
	 * for a put without an ACK whose MD posts no event on success, instead
	 * of send(), without a message token.  Take the header and the len
	 * payload bytes of iov at offset now -- before returning, the source
	 * may be reused at once -- and return 1; or return 0 having sent
	 * nothing (peer not connected, no ring space, too large, anything
	 * else), and LIB goes the general way through send(), which reports
	 * failures.  Never blocks; may be called from any thread. */
	int (*send_now)(void *priv, const struct p3_hdr *hdr, const struct iovec *iov,
			size_t niov, uint64_t offset, uint64_t len);
};

/* "Not supported" stubs for optional methods. */
int p3_nal_nosys_dist(void *priv, ptl_process_id_t id, unsigned long *distance);
int p3_nal_nosys_status(void *priv, ptl_sr_index_t reg, ptl_sr_value_t *value);
void p3_nal_nosys_wakeup(void *priv);

/* The failure kind of a transfer whose transport ended it with an
 * errno-style status (nal_fail.c): 0 PTL_NI_OK, -ETIMEDOUT PTL_NI_PEER_DEAD,
 * -ECONNRESET PTL_NI_PEER_RESTARTED, -ECANCELED PTL_NI_UNLINKED, anything
 * else PTL_NI_FAIL. */
ptl_ni_fail_t p3_nal_fail_kind(int status);

/* ---- entry points of the LIB side, for NALs ---------------------------- */

/* A whole header has arrived.  LIB matches it and calls ops->recv() once
 * before returning (see the top of this file).  Returns 0, or a negative
 * value if the header was malformed (it was still counted as a drop and
 * recv() was still called with msg == NULL). */
int p3_lib_parse(struct p3_lib *lib, const struct p3_hdr *hdr, void *nal_ctx);

/* A PUT header whose whole payload (hdr->payload_len bytes) is at
 * `payload`, readable until the call returns (an eager record in a
 * shared-memory ring).  LIB matches it and copies the accepted bytes into
 * the MD itself, under its lock, posting PUT_START/PUT_END at once: no
 * message token, no recv() call, no finalize.  Returns 1 when LIB took it
 * (*delivered: bytes placed; 0 for a drop, counted as p3_lib_parse counts
 * it), or 0 when nothing happened and the NAL must call p3_lib_parse()
 * instead (not a PUT, more than P3_PARSE_COPY_MAX bytes, an ACK to send,
 * the NI closing, ...).  The same rules as p3_lib_parse otherwise. */
#define P3_PARSE_COPY_MAX 4096
int p3_lib_parse_eager(struct p3_lib *lib, const struct p3_hdr *hdr, const void *payload,
		       uint64_t *delivered);

/* 1 if an EQ of this NI has a handler: application code that LIB runs from
 * inside p3_lib_parse / p3_lib_finalize.  A NAL that skips its own locks
 * while the process has a single thread (nal/shmem) must take them while
 * handlers may run there, since one could start a thread.  Lock-free. */
int p3_lib_runs_handlers(const struct p3_lib *lib);

/* A header the NAL could not hand to p3_lib_parse (malformed): counted
 * like LIB's own drops (PTL_SR_DROP_COUNT, PTL_SR_DROP_LENGTH += len). */
void p3_lib_count_drop(struct p3_lib *lib, uint64_t len);

/* The NAL is done with msg: for a send, the source buffer is reusable; for
 * a receive, the data is in place.  status is PTL_NI_OK or a PTL_NI_* failure
 * kind (the END event carries it). */
void p3_lib_finalize(struct p3_lib *lib, struct p3_msg *msg, ptl_ni_fail_t status);

/* The NAL took msg in send() but could not send it (the NIC rejected the
 * command: a DMA of the source MD faulted, ...).  Like p3_lib_finalize(msg,
 * PTL_NI_FAIL), except for a REPLY: the initiator waits for that, so it is
 * sent again without data and with P3_HDR_F_FAIL (its REPLY_END fails; this
 * side's GET_END / GETPUT_END says PTL_NI_FAIL); a reply that already went
 * that way is finalized.  LIB does the same when send() returns an error. */
void p3_lib_send_failed(struct p3_lib *lib, struct p3_msg *msg);

/* 1 if the calling thread is LIB's progress thread of this NI (the
 * interrupt handler in PTL_PROGRESS=interrupt), 0 otherwise. */
int p3_lib_in_progress_thread(const struct p3_lib *lib);

/* The ACK a put asked for (header md_handle = mdh, md_offset = link) will
 * not come: the target died, closed or restarted after the put was
 * delivered (the NAL watches for that; nal/rmpp does).  Posts the put's
 * ACK event with ni_fail_type = status (mlength 0) so the initiator's wait
 * ends, unless the MD is gone.  Call it only after the put's own
 * p3_lib_finalize (an unfinalized put reports through its SEND_END). */
void p3_lib_ack_lost(struct p3_lib *lib, ptl_process_id_t peer, ptl_handle_md_t mdh,
		     uint64_t link, ptl_ni_fail_t status);

/* The REPLY a get or GetPut asked for (header md_handle = mdh, md_offset =
 * offset) will not come: the target died, closed or restarted after the
 * request was delivered.  Posts REPLY_END on that MD with ni_fail_type =
 * status (mlength 0) so the initiator's wait ends, unless the MD is gone.
 * Call it only after the request's own p3_lib_finalize with PTL_NI_OK (a
 * failed request reports through its own REPLY_END / SEND_END). */
void p3_lib_reply_lost(struct p3_lib *lib, ptl_process_id_t peer, ptl_handle_md_t mdh,
		       uint64_t offset, ptl_ni_fail_t status);

/* True for a header whose target owes the initiator an answer: a put with
 * an ACK MD, a get or a GetPut (the NALs watch those: nal/rmpp/ackwait.c,
 * nal/shmem/await.c). */
static inline int p3_hdr_wants_answer(const struct p3_hdr *hdr)
{
	if (hdr->type == P3_MSG_GET || hdr->type == P3_MSG_GETPUT)
		return 1;
	return hdr->type == P3_MSG_PUT && hdr->md_handle != PTL_MD_NONE &&
	       hdr->md_handle != PTL_INVALID_HANDLE;
}

/* This NI's own process id (valid after init returned). */
ptl_process_id_t p3_lib_id(const struct p3_lib *lib);

/* Logging for NALs: level 0 error, 1 warning, 2 info, 3 debug.  Messages
 * are printed to stderr prefixed with "p3stack[<nal>] nid:pid"; debug
 * messages only when PTL_DEBUG / PtlNIDebug enable them. */
void p3_lib_log(const struct p3_lib *lib, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- NAL registry (nal/registry.c) ------------------------------------ */

/* Built-in NALs; NULL if not built. */
const struct p3_nal_ops *p3_nal_find_by_iface(ptl_interface_t iface);
const struct p3_nal_ops *p3_nal_find_by_name(const char *name);
/* The loopback NAL, used by LIB for sends to oneself. */
extern const struct p3_nal_ops p3_nal_lo_ops;

#ifdef __cplusplus
}
#endif
#endif /* P3_NAL_H */
