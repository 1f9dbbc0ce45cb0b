/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * myri_dev.h - the device interface of the emulated Myrinet NIC (mcpd), as a
 * host driver sees it.  README.md in this directory is the manual; this
 * header is its normative layout.  Everything here is shared between two
 * processes that do not trust each other: the NIC copies every entry out of
 * the segment before it looks at it and checks every index and length.
 *
 * Attach: the host connects to the NIC's control socket (abstract unix
 * SOCK_SEQPACKET "\0p3-mcpd-<uid>[-<P3_MYRI_NIC>]", one per network
 * namespace), sends struct myri_attach_req with three descriptors (the
 * segment memfd, the doorbell eventfd, the interrupt eventfd) and reads
 * struct myri_attach_rep.  The connection stays open for the life of the
 * endpoint: its hang-up tells either side that the other one is gone.  The
 * segment is an unnamed memfd, so nothing is left in the file system when
 * either side dies, whatever the signal.
 */
#ifndef P3_MYRI_DEV_H
#define P3_MYRI_DEV_H

#include <stdatomic.h>
#include <stdint.h>

#define MYRI_MAGIC 0x4d595249u /* "MYRI" */
/* bumped on any layout change (3: lib counters; 4: quiet calls, posted
 * ME_MD_POST; 5: host registers lib_waits, lib_wait_ns) */
#define MYRI_VERSION 6u

#define MYRI_CMDQ_LEN 1024u  /* command entries (power of two) */
#define MYRI_EVTQ_LEN 2048u  /* event entries (power of two) */
#define MYRI_NREG     16384u /* memory registration entries */
#define MYRI_MAX_RUN  256u   /* registration entries one command may name */
#define MYRI_HDR_LEN  104u   /* a Portals header in wire form (P3_HDR_WIRE_LEN) */

/* ---- control socket ------------------------------------------------------ */
enum myri_ctl_op {
	MYRI_CTL_ATTACH = 1,   /* + 3 fds: segment, doorbell, interrupt */
	MYRI_CTL_COUNTERS = 2, /* reply: text, the NIC's global counters */
};

struct myri_attach_req {
	uint32_t magic, version, op;
	uint32_t nid;      /* IPv4 address (host order) the endpoint answers at */
	uint32_t pid;      /* requested Portals pid, UINT32_MAX: any */
	uint32_t seg_size; /* sizeof(struct myri_seg) as the host built it */
};

struct myri_attach_rep {
	uint32_t magic, version;
	int32_t status;     /* 0 or a negative errno */
	uint32_t nid, pid;  /* the endpoint's Portals id */
	uint32_t nic_ospid; /* the NIC's process id (the host allows it to ptrace) */
};

/* ---- memory registration ------------------------------------------------ */
/* A region the NIC may read and write: [addr, addr + len) in the host
 * process.  A command names a run of consecutive entries (modulo MYRI_NREG)
 * and one key; every entry of the run must be valid and carry that key, or
 * the command is rejected.  The host revokes an entry by clearing valid
 * after the command's completion event. */
struct myri_reg {
	uint64_t addr;
	uint64_t len;
	uint32_t key; /* nonzero */
	uint32_t valid;
};

/* ---- commands (host -> NIC) --------------------------------------------- */
enum myri_cmd_op {
	MYRI_CMD_SEND = 1,     /* send hdr + len bytes read from the run at offset */
	MYRI_CMD_DELIVER = 2,  /* put the first len bytes of received message
	                          `token` into the run at offset */
	MYRI_CMD_DISCARD = 3,  /* drop received message `token` (no event) */
	MYRI_CMD_LIB = 4,      /* offload: one Portals LIB call (lib_op, args in
	                          hdr[]); answered by MYRI_EVT_LIB_REPLY */
	MYRI_CMD_INTR_CTL = 8, /* interrupt control: offset = enum myri_intr_mode
	                          (nreg and len 0); no event unless rejected */
};

/* When the NIC raises the interrupt (MYRI_CMD_INTR_CTL). */
enum myri_intr_mode {
	MYRI_INTR_SLEEP = 0,   /* only when the host said it blocks (default) */
	MYRI_INTR_PER_HDR = 1, /* also once per RX_HDR event, whatever the host
	                          does: PTL_PROGRESS=interrupt */
};

struct myri_cmd {
	uint16_t op;
	uint16_t nreg;      /* entries in the run (0 only with len 0) */
	uint32_t reg_first; /* first entry of the run */
	uint32_t key;       /* key every entry of the run carries */
	uint32_t dst_nid;   /* SEND: destination Portals id */
	uint32_t dst_pid;
	uint32_t lib_op;           /* MYRI_CMD_LIB: enum myri_lib_op, else 0 */
	uint64_t token;            /* the host's, echoed in the completion or rejection */
	uint64_t nic_token;        /* DELIVER, DISCARD: the NIC's, from MYRI_EVT_RX_HDR */
	uint64_t offset;           /* into the run */
	uint64_t len;              /* payload bytes */
	uint8_t hdr[MYRI_HDR_LEN]; /* SEND: the Portals header, wire form;
	                              LIB: the call's arguments (struct myri_lib_*) */
};

/* ---- events (NIC -> host) ----------------------------------------------- */
enum myri_evt_type {
	MYRI_EVT_TX_DONE = 1,     /* SEND token finished: status 0 or -errno */
	MYRI_EVT_RX_HDR = 2,      /* a message arrived: hdr, len = payload bytes,
	                             token = the NIC's (answer DELIVER/DISCARD) */
	MYRI_EVT_RX_DONE = 3,     /* DELIVER token's bytes are in place (status) */
	MYRI_EVT_REJECT = 4,      /* command rejected: token as given, status */
	MYRI_EVT_LIB_REPLY = 5,   /* LIB call `token` returned: status = PTL_* code,
	                             hdr[] = its results (struct myri_lib_*) */
	MYRI_EVT_ANSWER_LOST = 6, /* the answer (ACK, REPLY) a SENT request is
	                             owed will not come: its target failed after
	                             the request's TX_DONE; hdr[] = the request's
	                             header, status -ETIMEDOUT (dead) or
	                             -ECONNRESET (closed, reset, restarted) */
};

struct myri_evt {
	uint16_t type;
	uint16_t reserved;
	int32_t status;
	uint64_t token;
	uint64_t len;
	uint8_t hdr[MYRI_HDR_LEN];
};

/* ---- offload: the Portals LIB side in the NIC -------------------------- */
/*
 * With PTL_PROGRESS=offload the host forwards every struct p3_lib_iface call
 * as one MYRI_CMD_LIB entry (lib_op below, arguments packed in hdr[]) and
 * waits for the MYRI_EVT_LIB_REPLY with the same token (status = the PTL_*
 * return code, results in hdr[]).  Calls that create an MD name the MD's
 * memory as the command's registration run: one entry equal to
 * {start, length} for a contiguous MD, entry i equal to iovec element i for
 * PTL_MD_IOVEC; the NIC checks it once and keeps the MD's regions until the
 * MD is freed (the host learns that with LIB_HANDLE_CHECK before it reuses
 * the entries).  EQ rings live in the arena, the segment's bytes from
 * MYRI_ARENA_OFFSET on: the NIC allocates them (in its own memory it keeps
 * the allocation map) and returns the ring's offset; the host reads them
 * with no round trip.
 */
#define MYRI_ARENA_OFFSET 0x100000ull   /* after struct myri_seg, page-aligned */
#define MYRI_ARENA_LEN    (64ull << 20) /* EQ rings (sparse: pages on use) */
#define MYRI_SEG_BYTES    (MYRI_ARENA_OFFSET + MYRI_ARENA_LEN) /* memfd size */

enum myri_lib_op {
	MYRI_LIB_OPEN = 1,     /* myri_lib_open -> myri_lib_open_rep */
	MYRI_LIB_CLOSE,        /* - */
	MYRI_LIB_STATUS,       /* a[0] = register -> v[0] = value */
	MYRI_LIB_DEBUG,        /* a[0] = mask -> v[0] = old mask */
	MYRI_LIB_ME_INSERT,    /* myri_lib_me -> v[0] = pt, v[1] = ME */
	MYRI_LIB_ME_UNLINK,    /* a[0] = ME */
	MYRI_LIB_ME_MD_POST,   /* myri_lib_me + md, md_unlink, test_eq -> v[0] ME, v[1] MD */
	MYRI_LIB_MD_ATTACH,    /* myri_lib_md -> v[0] = MD */
	MYRI_LIB_MD_UNLINK,    /* a[0] = MD */
	MYRI_LIB_MD_UPDATE,    /* myri_lib_md -> struct myri_md old */
	MYRI_LIB_EQ_ALLOC,     /* a[0] = count -> v[0] = EQ, v[1] = ring offset in arena */
	MYRI_LIB_EQ_FREE,      /* a[0] = EQ */
	MYRI_LIB_AC_ENTRY,     /* myri_lib_ac */
	MYRI_LIB_PUT,          /* myri_lib_move */
	MYRI_LIB_GET,          /* myri_lib_move */
	MYRI_LIB_GETPUT,       /* myri_lib_move (md2 = put MD) */
	MYRI_LIB_HANDLE_CHECK, /* a[0] = handle */
	MYRI_LIB_RESERVE,      /* a[0] = P3_HT_ME or P3_HT_MD | count << 8 -> myri_lib_handles */
	MYRI_LIB_UNRESERVE,    /* myri_lib_handles (the host gives reserved handles back) */
	MYRI_LIB_NOPS
};

/* An MD as the host gave it (ptl_md_t with fixed-width fields). */
struct myri_md {
	uint64_t start, length, max_size, user_ptr;
	int32_t threshold;
	uint32_t options, eq_handle, pad;
};

struct myri_lib_open {
	uint32_t ni_index, ni_gen, debug_mask, jid;
	int32_t desired[8]; /* ptl_ni_limits_t in field order; all 0: none */
};
struct myri_lib_open_rep {
	uint32_t nid, pid, uid, jid;
	int32_t limits[8];
};

struct myri_lib_me {
	uint64_t mbits, ibits;
	uint32_t base, pt, match_nid, match_pid, unlink, pos;
	/* ME_MD_POST only: */
	uint32_t md_unlink, test_eq;
	struct myri_md md;
	uint32_t want;    /* ME_INSERT, ME_MD_POST posted: a handle from MYRI_LIB_RESERVE
	                     the ME takes (0: any) */
	uint32_t want_md; /* ME_MD_POST posted: the same for the MD */
};

struct myri_lib_md {
	struct myri_md md;
	uint32_t handle;         /* ATTACH: the ME (PTL_INVALID_HANDLE: bind); UPDATE: the MD */
	uint32_t unlink;         /* ATTACH */
	uint32_t test_eq, flags; /* UPDATE: flags 1 old wanted, 2 new given */
	uint32_t want;           /* ATTACH: a reserved handle the MD takes (0: any) */
};

/* MYRI_LIB_RESERVE's results, MYRI_LIB_UNRESERVE's arguments: handles the
 * NIC holds for the host (not live, not counted as allocated) until a
 * creating call names one in `want` or the host gives it back. */
#define MYRI_MAX_RESERVE 25u
struct myri_lib_handles {
	uint32_t n;
	uint32_t h[MYRI_MAX_RESERVE];
};

struct myri_lib_ac {
	uint32_t ac, nid, pid, uid, jid, pt;
};

/* MYRI_CMD_LIB: nic_token carries flags.  POSTED (PUT, GET, ME_INSERT,
 * MD_ATTACH, ME_MD_POST, with reserved handles in `want` (and `want_md`) for
 * the last three): the host does not wait; the NIC answers only if the call
 * fails (the host posts only calls it can prove will not, README §2.2
 * "Posted calls").  A posted ME_MD_POST (PtlMEMDPostNoWait) carries in the
 * command's `offset` the test EQ's read sequence when the host called; if
 * the EQ's write sequence differs when the NIC runs it (an event the host
 * had not read) or an END is owed, that is no failure: LIB writes the
 * refusal event into the test EQ and the NIC answers nothing
 * (lib_posts_refused). */
#define MYRI_LIB_POSTED 1u
/* QUIET (with POSTED; ME_UNLINK from PtlMEUnlinkNoWait): the host does not
 * want the outcome at all; a failure is not answered either, only counted
 * (lib_posted_quiet_failed). */
#define MYRI_LIB_QUIET 2u

struct myri_lib_move {
	uint64_t local_offset, length, mbits, remote_offset, hdr_data;
	uint32_t md, md2, whole, ack, nid, pid, pt, ac;
};

_Static_assert(sizeof(struct myri_lib_me) <= MYRI_HDR_LEN, "fits a command");
_Static_assert(sizeof(struct myri_lib_move) <= MYRI_HDR_LEN, "fits a command");
_Static_assert(sizeof(struct myri_lib_open) <= MYRI_HDR_LEN, "fits a command");
_Static_assert(sizeof(struct myri_lib_md) <= MYRI_HDR_LEN, "fits a command");
_Static_assert(sizeof(struct myri_lib_handles) <= MYRI_HDR_LEN, "fits a command");

/* ---- status registers (NIC writes, host reads: PtlNIStatus) ------------- */
#define MYRI_COUNTERS(X)                                                                           \
	X(cmds)                                                                                    \
	X(cmds_rejected)                                                                           \
	X(sends)                                                                                   \
	X(send_bytes)                                                                              \
	X(rx_msgs)                                                                                 \
	X(rx_bytes)                                                                                \
	X(dma_read_bytes)                                                                          \
	X(dma_write_bytes)                                                                         \
	X(dma_faults)                                                                              \
	X(evt_backlog)                                                                             \
	X(interrupts)                                                                              \
	X(doorbells)                                                                               \
	X(lib_calls)                                                                               \
	X(lib_posted)                                                                              \
	X(lib_posted_failed)                                                                       \
	X(lib_posted_quiet_failed)                                                                 \
	X(lib_posts_refused)                                                                       \
	X(cmds_before_hdr)

enum myri_counter {
#define MYRI_COUNTER_ENUM(n) MYRI_C_##n,
	MYRI_COUNTERS(MYRI_COUNTER_ENUM)
#undef MYRI_COUNTER_ENUM
	    MYRI_NCOUNTERS
};

/* The host driver's own registers (host-written, NIC-readable: mcpd
 * --counters prints them; PtlNIStatus(PTL_SR_NAL_BASE + MYRI_NCOUNTERS + i)):
 * interrupt-handler passes, RX_HDR events they handled, and nanoseconds spent
 * handling events in them (wall clock, per pass: from the first event
 * taken to the last), zero unless PTL_PROGRESS=interrupt; LIB calls whose
 * answer the host waited for, and nanoseconds in those waits (wall clock),
 * zero unless PTL_PROGRESS=offload; and conditional posts
 * (PtlMEMDPostNoWait) the host answered PTL_MD_NO_UPDATE itself, as the NIC
 * would have refused them (an unread event or an END owed in the test EQ). */
#define MYRI_HOST_COUNTERS(X)                                                                      \
	X(intr_handled)                                                                            \
	X(intr_hdrs)                                                                               \
	X(handler_ns)                                                                              \
	X(lib_waits)                                                                               \
	X(lib_wait_ns)                                                                             \
	X(posts_failed_early)

enum myri_host_counter {
#define MYRI_HOST_COUNTER_ENUM(n) MYRI_H_##n,
	MYRI_HOST_COUNTERS(MYRI_HOST_COUNTER_ENUM)
#undef MYRI_HOST_COUNTER_ENUM
	    MYRI_NHOST_COUNTERS
};

/* ---- the segment ------------------------------------------------------- */
/*
 * Rings: single producer, single consumer; head and tail count entries
 * forever (index = count % LEN).  The producer writes the entry, then
 * stores tail with release order; the consumer loads tail with acquire
 * order, copies the entry, then stores head with release order.
 *
 * Sleep protocol (no lost wake-ups): a side about to block sets its
 * *_sleeping word (seq_cst; the host counts its blocked threads up and
 * down), checks its ring again and only then blocks.
 * A producer publishes tail (seq_cst) and then reads the peer's flag: if
 * set, it writes 1 to the peer's eventfd (doorbell: host -> NIC; interrupt:
 * NIC -> host).
 */
struct myri_ring_idx {
	_Atomic uint64_t head; /* consumer */
	uint8_t pad0[56];
	_Atomic uint64_t tail; /* producer */
	uint8_t pad1[56];
};

struct myri_seg {
	uint32_t magic, version, size, reserved; /* written by the host at attach */
	_Atomic uint32_t nic_sleeping;           /* NIC blocks: ring the doorbell */
	_Atomic uint32_t host_sleeping;          /* host threads blocked: raise the interrupt */
	_Atomic uint32_t nic_state;              /* 1 running, 2 endpoint failed */
	_Atomic uint32_t nic_matching; /* offload: the NIC is matching a header of this endpoint */
	_Atomic uint64_t counters[MYRI_NCOUNTERS]; /* this endpoint's, NIC-written */
	struct myri_ring_idx cmdq;
	struct myri_ring_idx evtq;
	struct myri_cmd cmd[MYRI_CMDQ_LEN];
	struct myri_evt evt[MYRI_EVTQ_LEN];
	struct myri_reg reg[MYRI_NREG];
	_Atomic uint64_t host_counters[MYRI_NHOST_COUNTERS]; /* host-written */
};

_Static_assert(sizeof(struct myri_cmd) == 160, "command entry layout");
_Static_assert(sizeof(struct myri_evt) == 128, "event entry layout");
_Static_assert(sizeof(struct myri_reg) == 24, "registration entry layout");
_Static_assert(sizeof(struct myri_seg) <= MYRI_ARENA_OFFSET, "the arena follows the segment");

#define MYRI_NIC_RUNNING 1u
#define MYRI_NIC_FAILED  2u

/* The control socket's abstract name ("\0" + this) for uid and nic tag. */
#define MYRI_SOCK_FMT "p3-mcpd-%u%s%s"

#endif /* P3_MYRI_DEV_H */
