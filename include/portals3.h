/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file portals3.h
 * @brief The Portals 3.3 message-passing API, as implemented by p3stack.
 *
 * Programs written for the Sandia Portals 3.3 reference implementation compile
 * unchanged against this header (together with <p3rt/p3rt.h>,
 * <p3api/debug.h> and a <p3nal_NAME.h>).  3.0/3.2 spellings are provided as
 * aliases at the end of this file.
 *
 * Decisions on the points the 3.3 specification left open (portals3-api.md §8)
 * are marked "DECISION" in the comments below and collected in
 * portals/README.md.
 *
 * Thread safety: every call except PtlEQWait/PtlEQPoll/PtlProgress is
 * non-blocking and atomic with respect to other threads of the process and to
 * incoming traffic.  Any number of application threads may call at once.
 */
#ifndef PORTALS3_H
#define PORTALS3_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup types Basic types
 *  Fixed-width integer types used throughout the API.
 *  @{ */
typedef uint64_t ptl_size_t;
typedef uint32_t ptl_handle_any_t; /**< opaque: type | NI | generation | index */
typedef ptl_handle_any_t ptl_handle_ni_t;
typedef ptl_handle_any_t ptl_handle_eq_t;
typedef ptl_handle_any_t ptl_handle_md_t;
typedef ptl_handle_any_t ptl_handle_me_t;
typedef uint32_t ptl_pt_index_t;
typedef uint32_t ptl_ac_index_t;
typedef uint64_t ptl_match_bits_t;
typedef uint32_t ptl_interface_t;
typedef uint32_t ptl_nid_t;
typedef uint32_t ptl_pid_t;
typedef uint32_t ptl_uid_t;
typedef uint32_t ptl_jid_t;
typedef uint32_t ptl_sr_index_t;
typedef uint64_t ptl_sr_value_t;
typedef uint32_t ptl_seq_t;
typedef uint64_t ptl_hdr_data_t;
typedef uint32_t ptl_ni_fail_t;
typedef uint32_t ptl_time_t; /**< milliseconds */
/** @} */

/** @defgroup special Special values
 *  Handles are 32-bit words whose top three bits name the object type
 *  (1 NI, 2 ME, 3 MD, 4 EQ); the values below use type 7, so they can never
 *  collide with a real handle.
 *  @{ */
#define PTL_INVALID_HANDLE ((ptl_handle_any_t)0xFFFFFFFFu)
/** "No handle": no EQ for an MD; on the wire, "no ack wanted". */
#define PTL_HANDLE_NONE ((ptl_handle_any_t)0xFFFFFFFEu)
#define PTL_EQ_NONE ((ptl_handle_eq_t)PTL_HANDLE_NONE)
#define PTL_MD_NONE ((ptl_handle_md_t)PTL_HANDLE_NONE)

#define PTL_NID_ANY ((ptl_nid_t)0xFFFFFFFFu)
#define PTL_PID_ANY ((ptl_pid_t)0xFFFFFFFFu)
#define PTL_UID_ANY ((ptl_uid_t)0xFFFFFFFFu)
#define PTL_JID_ANY ((ptl_jid_t)0xFFFFFFFFu)
#define PTL_JID_NONE PTL_JID_ANY
#define PTL_PT_INDEX_ANY ((ptl_pt_index_t)0xFFFFFFFFu)
#define PTL_MD_THRESH_INF (-1)
#define PTL_TIME_FOREVER ((ptl_time_t)0xFFFFFFFFu)
#define PTL_EQ_HANDLER_NONE ((ptl_eq_handler_t)0)
/** @} */

/** @defgroup iface Interfaces (NAL type ids)
 *  PTL_IFACE_AUTO selects the NAL named by the PTL_NAL environment variable
 *  (set by ptlrun --nal), or shmem when unset.  Explicit ids are honoured as
 *  given.  Each <p3nal_NAME.h> redefines PTL_IFACE_DEFAULT to its own id.
 *  @{ */
#define PTL_IFACE_AUTO ((ptl_interface_t)0)
#define PTL_IFACE_LO ((ptl_interface_t)1)      /**< in-process only */
#define PTL_IFACE_SHMEM ((ptl_interface_t)2)   /**< processes of one node */
#define PTL_IFACE_UDP ((ptl_interface_t)3)     /**< RMPP over UDP */
#define PTL_IFACE_ETHER ((ptl_interface_t)4)   /**< RMPP over raw Ethernet */
#define PTL_IFACE_MYRINET ((ptl_interface_t)5) /**< emulated offloading NIC */
#define PTL_IFACE_XDP ((ptl_interface_t)6)     /**< RMPP over raw Ethernet via AF_XDP */
#ifndef PTL_IFACE_DEFAULT
#define PTL_IFACE_DEFAULT PTL_IFACE_AUTO
#endif
/** @} */

/** Process identifier: unique per network interface. */
typedef struct {
	ptl_nid_t nid;
	ptl_pid_t pid;
} ptl_process_id_t;

/** Limits negotiated by PtlNIInit.  `actual` is the field-wise minimum of the
 *  library's, the NAL's and `desired` (NULL desired = take the maximum). */
typedef struct {
	int max_mes;
	int max_mds;
	int max_eqs;
	int max_ac_index; /**< largest valid access-control index (inclusive) */
	int max_pt_index; /**< largest valid portal index (inclusive) */
	int max_md_iovecs;
	int max_me_list;   /**< longest match list on one portal */
	int max_getput_md; /**< longest PtlGetPut put MD, in bytes */
} ptl_ni_limits_t;

/** @defgroup rc Return codes
 *  Numeric values are p3stack's own (the specification names them only).
 *  @{ */
enum {
	PTL_OK = 0,
	PTL_AC_INDEX_INVALID = 1,
	PTL_EQ_DROPPED = 2,
	PTL_EQ_EMPTY = 3,
	PTL_EQ_INVALID = 4,
	PTL_FAIL = 5,
	PTL_HANDLE_INVALID = 6,
	PTL_IFACE_INVALID = 7,
	PTL_MD_ILLEGAL = 8,
	PTL_MD_INVALID = 9,
	PTL_MD_IN_USE = 10,
	PTL_MD_NO_UPDATE = 11,
	PTL_ME_INVALID = 12,
	PTL_ME_IN_USE = 13,
	PTL_ME_LIST_TOO_LONG = 14,
	PTL_NI_INVALID = 15,
	PTL_NO_INIT = 16,
	PTL_NO_SPACE = 17,
	PTL_PID_INVALID = 18,
	PTL_PROCESS_INVALID = 19,
	PTL_PT_FULL = 20,
	PTL_PT_INDEX_INVALID = 21,
	PTL_SEGV = 22,
	PTL_SR_INDEX_INVALID = 23,
	PTL_IFACE_DUP = 24,
	PTL_MAX_ERRNO = 25
};
/** Human-readable names of the return codes, indexed by code. */
extern const char *ptl_err_str[];
/** @} */

/** @defgroup nifail Failure kinds reported in ptl_event_t::ni_fail_type
 *  @{ */
#define PTL_NI_OK ((ptl_ni_fail_t)0)
#define PTL_NI_FAIL ((ptl_ni_fail_t)1)
/** NAL-specific kinds (p3stack): the peer was declared dead, or restarted. */
#define PTL_NI_PEER_DEAD ((ptl_ni_fail_t)2)
#define PTL_NI_PEER_RESTARTED ((ptl_ni_fail_t)3)
#define PTL_NI_DROPPED ((ptl_ni_fail_t)4)  /**< target dropped the request */
#define PTL_NI_UNLINKED ((ptl_ni_fail_t)5) /**< the NI went away underneath */
/** p3stack: a post PtlMEMDPostNoWait queued was refused (its test EQ was not
 *  empty); in the PTL_EVENT_UNLINK event that reports it. */
#define PTL_NI_POST_REFUSED ((ptl_ni_fail_t)6)
/** @} */

/** @defgroup sr Status registers for PtlNIStatus
 *  PTL_SR_DROP_COUNT is the one the specification requires.  NALs export
 *  their own counters from PTL_SR_NAL_BASE upward (see their README.md).
 *  @{ */
enum {
	PTL_SR_DROP_COUNT = 0,   /**< incoming requests this NI dropped */
	PTL_SR_DROP_LENGTH = 1,  /**< bytes of those requests */
	PTL_SR_RECV_COUNT = 2,   /**< requests/replies/acks accepted */
	PTL_SR_RECV_LENGTH = 3,  /**< payload bytes received */
	PTL_SR_SEND_COUNT = 4,   /**< messages sent (put, get, getput, ack, reply) */
	PTL_SR_SEND_LENGTH = 5,  /**< payload bytes sent */
	PTL_SR_MSGS_MAX = 6,     /**< most messages in flight at once */
	PTL_SR_MSGS_INFLIGHT = 7, /**< messages in flight now */
	PTL_SR_EQ_DROPPED = 8,   /**< events overwritten before they were read */
	PTL_SR_ACK_DROPPED = 9,  /**< acks/replies for a stale or inactive MD */
	PTL_SR_MES_ALLOCATED = 10,
	PTL_SR_MDS_ALLOCATED = 11,
	PTL_SR_EQS_ALLOCATED = 12,
	PTL_SR_LAST_STD = 13,
	PTL_SR_NAL_BASE = 0x100 /**< first NAL-defined register */
};
/** @} */

/** @defgroup md Memory descriptors
 *  An MD describes a region of application memory and how the network may
 *  use it.  With PTL_MD_IOVEC, `start` points at an array of ptl_md_iovec_t
 *  and `length` is the number of entries; offsets then refer to the
 *  concatenated bytes.
 *  @{ */
#define PTL_MD_OP_PUT 0x0001u
#define PTL_MD_OP_GET 0x0002u
#define PTL_MD_MANAGE_REMOTE 0x0004u
#define PTL_MD_TRUNCATE 0x0008u
#define PTL_MD_ACK_DISABLE 0x0010u
#define PTL_MD_IOVEC 0x0020u
#define PTL_MD_MAX_SIZE 0x0040u
#define PTL_MD_EVENT_START_DISABLE 0x0080u
#define PTL_MD_EVENT_END_DISABLE 0x0100u
/** p3stack extension (Portals 4's PTL_ME_EVENT_UNLINK_DISABLE): no
 *  PTL_EVENT_UNLINK when the MD unlinks itself (threshold used up, or
 *  PTL_MD_MAX_SIZE space short).  For use-once MDs whose owner learns
 *  everything from the END event (an MPI port's posted receives and sends):
 *  one event less to write and read per message. */
#define PTL_MD_EVENT_UNLINK_DISABLE 0x0200u
/** p3stack extension (Portals 4's PTL_MD_EVENT_SUCCESS_DISABLE): the MD
 *  posts only the events of operations that failed (ni_fail_type other
 *  than PTL_NI_OK); START, END and ACK events of successful operations are
 *  not written.  UNLINK is governed by PTL_MD_EVENT_UNLINK_DISABLE alone.
 *  For an MD whose owner needs to hear about failures only (an MPI port's
 *  inject sends, complete at return): no event per message. */
#define PTL_MD_EVENT_SUCCESS_DISABLE 0x0400u

typedef struct {
	void *iov_base;
	ptl_size_t iov_len;
} ptl_md_iovec_t;


typedef struct {
	void *start;
	ptl_size_t length;
	int threshold; /**< operations left; 0 = inactive; PTL_MD_THRESH_INF */
	ptl_size_t max_size;
	unsigned int options;
	void *user_ptr;
	ptl_handle_eq_t eq_handle;
} ptl_md_t;
/** @} */

typedef enum { PTL_RETAIN = 0, PTL_UNLINK = 1 } ptl_unlink_t;
typedef enum { PTL_INS_BEFORE = 0, PTL_INS_AFTER = 1 } ptl_ins_pos_t;
/** DECISION: both 3.2's PTL_NOACK_REQ and 3.3's PTL_NO_ACK_REQ are accepted. */
typedef enum { PTL_ACK_REQ = 0, PTL_NO_ACK_REQ = 1 } ptl_ack_req_t;
#define PTL_NOACK_REQ PTL_NO_ACK_REQ

/** @defgroup events Events
 *  @{ */
typedef enum {
	PTL_EVENT_GET_START = 0,
	PTL_EVENT_GET_END,
	PTL_EVENT_PUT_START,
	PTL_EVENT_PUT_END,
	PTL_EVENT_GETPUT_START,
	PTL_EVENT_GETPUT_END,
	PTL_EVENT_REPLY_START,
	PTL_EVENT_REPLY_END,
	PTL_EVENT_SEND_START,
	PTL_EVENT_SEND_END,
	PTL_EVENT_ACK,
	PTL_EVENT_UNLINK,
	PTL_EVENT_KIND_MAX
} ptl_event_kind_t;

typedef struct {
	ptl_event_kind_t type;
	ptl_process_id_t initiator;
	ptl_uid_t uid;
	ptl_jid_t jid;
	ptl_pt_index_t pt_index;
	ptl_match_bits_t match_bits;
	ptl_size_t rlength; /**< length asked for */
	ptl_size_t mlength; /**< length moved */
	ptl_size_t offset;
	ptl_handle_md_t md_handle;
	ptl_md_t md; /**< snapshot after the operation was applied */
	ptl_hdr_data_t hdr_data;
	ptl_seq_t link; /**< START and END of one operation share it */
	ptl_ni_fail_t ni_fail_type;
	volatile ptl_seq_t sequence; /**< unique, increasing per EQ */
} ptl_event_t;

/** DECISION: the handler runs when the event is enqueued (in whichever
 *  thread runs the LIB side), once per event, without the library lock held;
 *  it must not block.  The event is also left in the EQ. */
typedef void (*ptl_eq_handler_t)(ptl_event_t *event);
/** @} */

/** @defgroup init Initialization
 *  @{ */
/** Initialise the library.  May be called again (counted).  *max_interfaces
 *  receives the number of NIs a process may open at once.
 *  @return PTL_OK, PTL_SEGV (NULL), PTL_FAIL. */
int PtlInit(int *max_interfaces);
/** Release the library when the last PtlInit is matched; closes open NIs. */
void PtlFini(void);
/** @} */

/** @defgroup ni Network interfaces
 *  @{ */
/** Open (or return the already-open handle of) interface `iface` as process
 *  `pid` (PTL_PID_ANY: assigned; from PTL_PIDMAP when the job runtime is set).
 *  @return PTL_OK, PTL_NO_INIT, PTL_IFACE_INVALID, PTL_PID_INVALID (in use or
 *  out of range), PTL_NO_SPACE, PTL_SEGV (NULL ni_handle), PTL_FAIL. */
int PtlNIInit(ptl_interface_t iface, ptl_pid_t pid, ptl_ni_limits_t *desired,
	      ptl_ni_limits_t *actual, ptl_handle_ni_t *ni_handle);
/** Close an NI and free every object on it (their handles become invalid). */
int PtlNIFini(ptl_handle_ni_t ni);
/** Read status register `reg`.  @return PTL_OK, PTL_NI_INVALID,
 *  PTL_SR_INDEX_INVALID, PTL_SEGV. */
int PtlNIStatus(ptl_handle_ni_t ni, ptl_sr_index_t reg, ptl_sr_value_t *status);
/** Distance to a process: 0 self, 1 same node, 2 one link, ... */
int PtlNIDist(ptl_handle_ni_t ni, ptl_process_id_t process, unsigned long *distance);
/** The NI an object handle belongs to. */
int PtlNIHandle(ptl_handle_any_t handle, ptl_handle_ni_t *ni);
int PtlGetId(ptl_handle_ni_t ni, ptl_process_id_t *id);
int PtlGetUid(ptl_handle_ni_t ni, ptl_uid_t *uid);
int PtlGetJid(ptl_handle_ni_t ni, ptl_jid_t *jid);
/** @} */

/** @defgroup me Match entries
 *  @{ */
int PtlMEAttach(ptl_handle_ni_t ni, ptl_pt_index_t pt, ptl_process_id_t match_id,
		ptl_match_bits_t match_bits, ptl_match_bits_t ignore_bits, ptl_unlink_t unlink,
		ptl_ins_pos_t pos, ptl_handle_me_t *me);
int PtlMEAttachAny(ptl_handle_ni_t ni, ptl_pt_index_t *pt, ptl_process_id_t match_id,
		   ptl_match_bits_t match_bits, ptl_match_bits_t ignore_bits,
		   ptl_unlink_t unlink, ptl_handle_me_t *me);
int PtlMEInsert(ptl_handle_me_t base, ptl_process_id_t match_id, ptl_match_bits_t match_bits,
		ptl_match_bits_t ignore_bits, ptl_unlink_t unlink, ptl_ins_pos_t pos,
		ptl_handle_me_t *me);
/** Unlink an ME and release its MD.  @return PTL_ME_IN_USE if its MD has
 *  operations pending. */
int PtlMEUnlink(ptl_handle_me_t me);
/** @} */

/** @defgroup mdapi Memory descriptor calls
 *  @{ */
int PtlMDAttach(ptl_handle_me_t me, ptl_md_t md, ptl_unlink_t unlink, ptl_handle_md_t *md_handle);
int PtlMDBind(ptl_handle_ni_t ni, ptl_md_t md, ptl_unlink_t unlink, ptl_handle_md_t *md_handle);
/** @return PTL_MD_IN_USE if operations are pending; never posts UNLINK. */
int PtlMDUnlink(ptl_handle_md_t md);
/** Conditional atomic replace: succeeds only if test_eq is PTL_EQ_NONE or
 *  empty (no unread, no owed events) at that instant, else PTL_MD_NO_UPDATE.
 *  DECISION: old_md is filled even when PTL_MD_NO_UPDATE is returned.
 *  new_md may be NULL (read only). */
int PtlMDUpdate(ptl_handle_md_t md, ptl_md_t *old_md, ptl_md_t *new_md, ptl_handle_eq_t test_eq);
/** @} */

/** @defgroup eq Event queues
 *  @{ */
/** count is rounded up to a power of two. */
int PtlEQAlloc(ptl_handle_ni_t ni, ptl_size_t count, ptl_eq_handler_t handler,
	       ptl_handle_eq_t *eq);
int PtlEQFree(ptl_handle_eq_t eq);
/** @return PTL_OK, PTL_EQ_EMPTY, PTL_EQ_DROPPED (event returned, earlier ones
 *  were overwritten), PTL_EQ_INVALID, PTL_SEGV. */
int PtlEQGet(ptl_handle_eq_t eq, ptl_event_t *event);
int PtlEQWait(ptl_handle_eq_t eq, ptl_event_t *event);
/** Check eqs[0..size) in order until one has an event or timeout expires
 *  (0 = check once).  @return as PtlEQGet, PTL_EQ_EMPTY on timeout,
 *  PTL_EQ_INVALID for size <= 0 or a bad handle. */
int PtlEQPoll(ptl_handle_eq_t *eqs, int size, ptl_time_t timeout, ptl_event_t *event,
	      int *which);
/** @} */

/** @defgroup acl Access control
 *  DECISION: index 0 of a fresh NI admits any process of the same uid and
 *  job to every portal; other entries admit nothing until set.
 *  @{ */
int PtlACEntry(ptl_handle_ni_t ni, ptl_ac_index_t ac, ptl_process_id_t match_id, ptl_uid_t uid,
	       ptl_jid_t jid, ptl_pt_index_t pt);
/** @} */

/** @defgroup move Data movement
 *  DECISION: PtlPut/PtlGet on an inactive MD (threshold 0) return
 *  PTL_MD_ILLEGAL.  Acks are sent when requested even if the initiator MD has
 *  no EQ (the threshold still counts them).
 *  @{ */
int PtlPut(ptl_handle_md_t md, ptl_ack_req_t ack, ptl_process_id_t target, ptl_pt_index_t pt,
	   ptl_ac_index_t ac, ptl_match_bits_t match_bits, ptl_size_t remote_offset,
	   ptl_hdr_data_t hdr_data);
int PtlPutRegion(ptl_handle_md_t md, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack,
		 ptl_process_id_t target, ptl_pt_index_t pt, ptl_ac_index_t ac,
		 ptl_match_bits_t match_bits, ptl_size_t remote_offset, ptl_hdr_data_t hdr_data);
int PtlGet(ptl_handle_md_t md, ptl_process_id_t target, ptl_pt_index_t pt, ptl_ac_index_t ac,
	   ptl_match_bits_t match_bits, ptl_size_t remote_offset);
int PtlGetRegion(ptl_handle_md_t md, ptl_size_t local_offset, ptl_size_t length,
		 ptl_process_id_t target, ptl_pt_index_t pt, ptl_ac_index_t ac,
		 ptl_match_bits_t match_bits, ptl_size_t remote_offset);
/** Atomic swap: put_md's bytes replace the target's, the old bytes come back
 *  into get_md.  put length must be <= max_getput_md (else PTL_MD_ILLEGAL). */
int PtlGetPut(ptl_handle_md_t get_md, ptl_handle_md_t put_md, ptl_process_id_t target,
	      ptl_pt_index_t pt, ptl_ac_index_t ac, ptl_match_bits_t match_bits,
	      ptl_size_t remote_offset, ptl_hdr_data_t hdr_data);
/** @} */

/** @defgroup misc Miscellaneous
 *  @{ */
/** DECISION: returns 1 if equal, 0 otherwise (the reference's convention). */
int PtlHandleIsEqual(ptl_handle_any_t a, ptl_handle_any_t b);
const char *PtlErrorStr(unsigned int ptl_errno);
const char *PtlNIFailStr(ptl_handle_ni_t ni, ptl_ni_fail_t fail_type);
const char *PtlEventKindStr(ptl_event_kind_t kind);
/** @} */

/** @defgroup ext p3stack extensions (not in the specification)
 *  @{ */
#define P3STACK 1
/** Drive the NI's NAL for up to `timeout` ms (0 = one pass) without a
 *  progress thread.  @return PTL_OK, PTL_NI_INVALID. */
int PtlProgress(ptl_handle_ni_t ni, ptl_time_t timeout);
/** PtlProgress, then `*events` = the NI's event count: the number of events
 *  posted to its EQs so far, modulo 2^32.  A caller that drains every EQ of
 *  the NI after reading it knows, when the next call returns the same
 *  value, that nothing was posted meanwhile (an MPI port's idle poll skips
 *  its EQ reads).  Where LIB runs outside the process (myrinet offload) the
 *  value changes on every call.  @return as PtlProgress, PTL_SEGV. */
int PtlProgressEvents(ptl_handle_ni_t ni, ptl_time_t timeout, ptl_seq_t *events);
/** PtlEQGet without driving the NAL when the queue is empty: only events
 *  already posted.  For callers that run PtlProgress themselves and then
 *  drain several EQs (an MPI port): PtlEQGet would make one more NAL pass
 *  (a system call on udp/ether) per EQ found empty.  Returns as PtlEQGet. */
int PtlEQGetNoProgress(ptl_handle_eq_t eq, ptl_event_t *event);
/** Insert an ME (relative to `base`, as PtlMEInsert) with an MD attached,
 *  atomically, only if test_eq is empty; else PTL_MD_NO_UPDATE and nothing
 *  is inserted.  Used by MPI ports to post receives without a race. */
int PtlMEMDPost(ptl_handle_me_t base, ptl_process_id_t match_id, ptl_match_bits_t match_bits,
		ptl_match_bits_t ignore_bits, ptl_unlink_t unlink, ptl_ins_pos_t pos, ptl_md_t md,
		ptl_unlink_t md_unlink, ptl_handle_eq_t test_eq, ptl_handle_me_t *me,
		ptl_handle_md_t *md_handle);
/** PtlMEMDPost for a caller that can take a refusal later.  An NI whose LIB
 *  side runs elsewhere (myrinet `offload`: in the NIC) may queue the post
 *  and return PTL_OK at once when it can prove that only the test of
 *  test_eq can make it fail; *me and *md_handle then name the entries it
 *  creates.  The test is then whether test_eq got any event the caller had
 *  not read when it called (also one written after the call, before LIB ran
 *  the post), or owes one: the caller may read events in between, so
 *  "empty when LIB runs it" would not do.  If it did, nothing is inserted
 *  and LIB writes one event into test_eq: PTL_EVENT_UNLINK with ni_fail_type
 *  PTL_NI_POST_REFUSED, md_handle and md (user_ptr) as this call named
 *  them, the ME's pt_index and match_bits, its match_id in initiator and
 *  its ignore_bits in hdr_data.  Every queued post issued before the caller
 *  read that event is refused too (it has not read it), so a caller that
 *  posts a refused one again as soon as it reads its event, before posting
 *  anything else, keeps the order of its match list.  Otherwise (LIB in
 *  the process, or nothing to prove) this is PtlMEMDPost and returns its
 *  code. */
int PtlMEMDPostNoWait(ptl_handle_me_t base, ptl_process_id_t match_id,
		      ptl_match_bits_t match_bits, ptl_match_bits_t ignore_bits,
		      ptl_unlink_t unlink, ptl_ins_pos_t pos, ptl_md_t md, ptl_unlink_t md_unlink,
		      ptl_handle_eq_t test_eq, ptl_handle_me_t *me, ptl_handle_md_t *md_handle);
/** Return once LIB has run every PtlMEMDPostNoWait this process queued on
 *  ni: a refusal of any of them is then in its test EQ, and one not refused
 *  is inserted.  Without a round trip when the NIC ran them already; at
 *  once where LIB runs in the process (nothing is queued).  A caller about
 *  to match against messages it took from the test EQ calls it first: a
 *  message that arrived before a queued post ran belongs to that post
 *  (refused, to be posted again) if it matches it.
 *  @return PTL_OK, PTL_NO_INIT, PTL_NI_INVALID, PTL_FAIL (the NIC is gone). */
int PtlMEMDPostSync(ptl_handle_ni_t ni);
/** PtlMEUnlink whose outcome the caller does not need: the ME (and its MD)
 *  is unlinked as PtlMEUnlink would, but an NI whose LIB side runs
 *  elsewhere (myrinet `offload`: in the NIC) queues the request and returns
 *  without waiting for it.  Later calls of the process on this NI see its
 *  effect (calls are executed in order).  If the ME is gone by then
 *  (auto-unlinked) or in use, nothing happens and nothing is reported, as
 *  when PtlMEUnlink's return code is ignored.  For an MPI port dropping a
 *  send's rendezvous entry once the ACK said all data arrived.
 *  @return PTL_OK (queued, or done), PTL_NO_INIT, PTL_ME_INVALID (not an ME
 *  handle of an open NI; an in-process LIB also reports a gone ME),
 *  PTL_ME_IN_USE (in-process LIB only), PTL_FAIL (the NIC is gone). */
int PtlMEUnlinkNoWait(ptl_handle_me_t me);
/** Name of the NAL and progress mode of an NI ("shmem", "app"). */
int PtlNIDescribe(ptl_handle_ni_t ni, const char **nal_name, const char **progress_mode);
/** How long a wait on this NI's event queues (PtlEQWait, PtlEQPoll) spins
 *  before it sleeps, as the NAL decides it now (it follows the placement,
 *  which may change after PtlNIInit): *spin_us microseconds; 0 when the wait
 *  sleeps at once because the process that posts this NI's events (myrinet
 *  `offload`: the emulated NIC) may run only on this process's one CPU, or
 *  the node is oversubscribed with P3_OVERSUB_WAIT=sleep.  A caller that
 *  polls the queues itself (PtlEQGet in a loop, an MPI port) should then
 *  wait in PtlEQPoll instead of spinning or yielding: a poller holds, and a
 *  yielder competes for, the core the events must come from.
 *  @return PTL_OK, PTL_NO_INIT, PTL_NI_INVALID, PTL_SEGV (spin_us NULL). */
int PtlNIWaitSpin(ptl_handle_ni_t ni, unsigned int *spin_us);
/** @} */

/* ---- 3.0 / 3.2 spellings ---------------------------------------------- */
#define PTL_NOINIT PTL_NO_INIT
#define PTL_NOSPACE PTL_NO_SPACE
#define PTL_INUSE PTL_MD_IN_USE
#define PTL_INV_NI PTL_NI_INVALID
#define PTL_INV_ME PTL_ME_INVALID
#define PTL_INV_MD PTL_MD_INVALID
#define PTL_INV_EQ PTL_EQ_INVALID
#define PTL_INV_HANDLE PTL_HANDLE_INVALID
#define PTL_INV_PROC PTL_PROCESS_INVALID
#define PTL_INV_PTINDEX PTL_PT_INDEX_INVALID
#define PTL_INV_SR_INDX PTL_SR_INDEX_INVALID
#define PTL_INV_ACINDEX PTL_AC_INDEX_INVALID
#define PTL_AC_INV_INDEX PTL_AC_INDEX_INVALID
#define PTL_ILL_MD PTL_MD_ILLEGAL
#define PTL_NOUPDATE PTL_MD_NO_UPDATE
#define PTL_ML_TOOLONG PTL_ME_LIST_TOO_LONG
#define PTL_INV_EQ_SIZE PTL_EQ_INVALID
#define PTL_ID_ANY PTL_PID_ANY

#ifdef __cplusplus
}
#endif
#endif /* PORTALS3_H */
