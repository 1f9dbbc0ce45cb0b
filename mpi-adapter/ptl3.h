/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ptl3.h - private header of the "ptl3" libfabric provider: FI_EP_RDM with
 * FI_MSG, FI_MULTI_RECV and FI_TAGGED over Portals 3.3 (libportals3).
 *
 * Mapping (shared/reference/mpich-adapter.md).  A domain is one Portals NI
 * (Portals 3.3 gives a process one NI per interface: a second PtlNIInit
 * returns the same handle), so its endpoints are told apart by portal
 * index: endpoint k receives on pt_base + 4k + {PT_TAG, PT_MSG}; PT_RDV and
 * PT_RMA (pt_base + 2, + 3) are the domain's, shared by its endpoints
 * (send ids are unique in the domain, the MDs route the events):
 *   PT_TAG  tagged receives: posted MEs, a marker, catch-all eager buffers and
 *           a zero-length truncating "overflow" ME (header only); small
 *           receives are matched by the provider instead (ptl3_soft.c)
 *   PT_MSG  FI_MSG receives and FI_MULTI_RECV buffers, same catch-all layout
 *   PT_RDV  one ME per send (match bits = send id, OP_GET): the receiver pulls
 *           whatever the put could not deliver (long unexpected, truncated);
 *           at its head one ME for every staged inject (ptl3_stage.c; only
 *           the domain's first endpoint stages); atomic requests and
 *           their replies (ptl3_atomic.c)
 *   PT_RMA  FI_RMA: one ME per remotely accessible region, match bits = key
 * Wire conventions:
 *   match bits  = the 64-bit tag; bit 63 (PTL3_LONG_BIT) marks a message
 *                 larger than the eager limit so eager buffers refuse it
 *   hdr_data    = bits 0..31 remote CQ data, bits 32..62 send id,
 *                 bit 63 "CQ data present"
 * Every send asks for an ACK; it completes when the ACK reports the whole
 * length delivered, or when the receiver's PtlGet on PT_RDV has finished.
 *
 * Locking: one mutex per domain (dom_lock) protects everything below the
 * domain; public entry points take it, functions ending in _locked expect it.
 */
#ifndef PTL3_H
#define PTL3_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include <portals3.h>
#include <p3copy.h>
#include <p3rt/oversub.h>

#define PTL3_PROV_NAME "ptl3"
#define PTL3_PROV_VERSION FI_VERSION(0, 1)
#define PTL3_FI_VERSION FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)

#define PTL3_LONG_BIT (1ULL << 63)
#define PTL3_HDR_HAS_DATA (1ULL << 63)
#define PTL3_SENDID_MASK 0x7FFFFFFFULL
/* send ids of the general path (one ME per send) leave bits 30 and 31
 * clear; a staged inject (ptl3_stage.c) is STAGE | shift << 25 | gen << 16
 * | slot, pulled at remote offset slot << shift through the one stage ME
 * (which ignores bits 0..29) */
#define PTL3_SENDID_GENERAL_MASK 0x3FFFFFFFULL
#define PTL3_SENDID_STAGE (1ULL << 30)
#define PTL3_STAGE_SHIFT_POS 25
#define PTL3_STAGE_MAX_SHIFT 31
#define PTL3_STAGE_GEN_POS       16
#define PTL3_STAGE_GEN_MASK      0x1FFu
#define PTL3_STAGE_SLOT_MASK     0xFFFFULL
#define PTL3_STAGE_SLOT_BITS (PTL3_SENDID_STAGE - 1) /* ignored by the stage ME */
/* match bits of a release (ptl3_release.c): a zero-length put to the
 * sender's PT_RDV naming slots base..base+63 (base in bits 0..15) whose
 * messages the receiver is done with, one bit each in the header data */
#define PTL3_SENDID_RELEASE    (1ULL << 31)
#define PTL3_RELEASE_BASE_MASK 0xFFFFULL
#define PTL3_RELEASE_WINDOW    64

static inline int ptl3_sendid_is_staged(uint64_t send_id)
{
	return (send_id & PTL3_SENDID_STAGE) != 0;
}

/* the send id in a message's header data */
static inline uint64_t ptl3_sendid_of(uint64_t hdr)
{
	return (hdr >> 32) & PTL3_SENDID_MASK;
}

/* remote offset of a send's data in the sender's PT_RDV entry */
static inline uint64_t ptl3_sendid_offset(uint64_t send_id)
{
	if (!(send_id & PTL3_SENDID_STAGE))
		return 0;
	return (send_id & PTL3_STAGE_SLOT_MASK) << ((send_id >> PTL3_STAGE_SHIFT_POS) & 31);
}
/* inject copies up to this size stay with their op slot for reuse */
#define PTL3_BOUNCE_KEEP 65536

#define PTL3_ADDR_MAGIC 0x50334649u /* "P3FI" */
#define PTL3_ADDR_VERSION 1

/* portal indexes, relative to the endpoint's base */
enum { PTL3_PT_TAG = 0, PTL3_PT_MSG = 1, PTL3_PT_RDV = 2, PTL3_PT_RMA = 3, PTL3_PT_COUNT = 4 };
/* endpoints per domain: one bit each in ptl3_domain.ep_used, and 4 portal
 * indexes each (fewer when the NI has fewer portals) */
#define PTL3_MAX_EPS 64

/* endpoints a domain holds when the NI's largest portal index is
 * max_pt_index (ptl3_attr.c): endpoint k receives on pt_base + 4k + {0, 1} */
uint32_t ptl3_ep_cnt(int max_pt_index);

/* the receive portal (PT_TAG or PT_MSG) of endpoint ep_index */
static inline ptl_pt_index_t ptl3_rx_pt(uint32_t pt_base, uint32_t ep_index, int pt)
{
	return (ptl_pt_index_t)(pt_base + ep_index * PTL3_PT_COUNT + (uint32_t)pt);
}
enum { PTL3_Q_TAG = 0, PTL3_Q_MSG = 1, PTL3_NQ = 2 };

extern struct fi_provider ptl3_prov;

/* ---- tunables (ptl3_init.c, registered with fi_param_define) */
/* FI_PTL3_YIELD_POLLS's default on an oversubscribed node, and
 * FI_PTL3_BLOCK_MS's there (<p3rt/oversub.h>: bench/osu's header says them) */
#define PTL3_OVERSUB_YIELD_POLLS PTL_OVERSUB_ADAPTER_YIELD_POLLS
#define PTL3_OVERSUB_BLOCK_MS    PTL_OVERSUB_ADAPTER_BLOCK_MS

struct ptl3_params {
	char nal[32];		/* shmem|udp|ether|myrinet|lo|auto */
	char progress[16];	/* app|thread|"" (library default) */
	int counters;		/* print counters at endpoint close */
	size_t eager;		/* eager limit (bytes) */
	size_t inject_size;	/* tx_attr->inject_size: sends up to this are copied */
	size_t ebuf_size;	/* size of one unexpected buffer */
	int ebuf_count;		/* unexpected buffers per queue */
	int eq_size;		/* Portals EQ entries */
	int close_timeout;	/* seconds fi_close(ep) waits for outstanding ops */
	int pt_base;		/* first portal index used */
	int rma;		/* offer FI_RMA (PT_RMA); off by default */
	unsigned yield_polls;	/* sched_yield after this many empty CQ reads (0: never) */
	int block_ms;		/* with yield_polls: sleep in PtlEQPoll instead (0: yield) */
	int yield_polls_given;	/* FI_PTL3_YIELD_POLLS was set (ptl3_wait.c keeps it) */
	int block_ms_given;	/* FI_PTL3_BLOCK_MS was set */
	int stage_slots;	/* inject staging slots per endpoint (0: no staging) */
	int soft_recv;		/* match small tagged receives in the provider (ptl3_soft.c) */
	size_t soft_recv_max;	/* ... receives of at most this many bytes */
};
extern struct ptl3_params ptl3_params;
extern int ptl3_trace; /* FI_PTL3_TRACE=1: every Portals event on stderr */
void ptl3_params_load(void);
ptl_interface_t ptl3_nal_iface(const char *name);

/* ---- logging */
#define PTL3_WARN(subsys, ...) FI_WARN(&ptl3_prov, subsys, __VA_ARGS__)
#define PTL3_INFO(subsys, ...) FI_INFO(&ptl3_prov, subsys, __VA_ARGS__)
#define PTL3_DBG(subsys, ...) FI_DBG(&ptl3_prov, subsys, __VA_ARGS__)

/* ---- attributes (ptl3_attr.c) */
extern const struct fi_info ptl3_info_template;
#define PTL3_RMA_CAPS (FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)
/* FI_RMA_EVENT: with FI_RMA, granted only when the hints ask for it */
#define PTL3_CAPS                                                                                  \
	(FI_MSG | FI_TAGGED | FI_MULTI_RECV | FI_SEND | FI_RECV | FI_DIRECTED_RECV | FI_LOCAL_COMM | \
	 FI_REMOTE_COMM)
extern const uint64_t ptl3_caps;
uint64_t ptl3_caps_now(void); /* PTL3_CAPS, plus PTL3_RMA_CAPS unless FI_PTL3_RMA=0 */
int ptl3_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		 const struct fi_info *hints, struct fi_info **info);

/* ---- "not supported" stubs (ptl3_init.c) */
int ptl3_no_close(struct fid *fid);
int ptl3_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int ptl3_no_control(struct fid *fid, int command, void *arg);
/* fi_eq_strerror / fi_cq_strerror: prov_errno is a Portals return code
 * (PtlErrorStr), 0 none; copied into buf when given (fi_eq(3)). */
const char *ptl3_prov_strerror(int prov_errno, char *buf, size_t len);
int ptl3_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context);
int ptl3_no_tostr(const struct fid *fid, char *buf, size_t len);
int ptl3_no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops, void *context);
extern struct fi_ops_cm ptl3_ep_cm_ops;

/* ---- objects */
struct ptl3_fabric {
	struct fid_fabric fabric_fid;
};

struct ptl3_ep;

/* What an idle CQ read does after a run of empty reads (ptl3_wait.c): the
 * FI_PTL3_YIELD_POLLS / FI_PTL3_BLOCK_MS values in force for this domain's
 * NI, which over an NI whose event poster shares this rank's only CPU
 * (PtlNIWaitSpin 0) default to a wait in PtlEQPoll. */
#define PTL3_NIC_CORE_YIELD_POLLS 64
#define PTL3_NIC_CORE_BLOCK_MS    1
#define PTL3_WAIT_RECHECK_NS      10000000u /* the placement is read again after 10 ms */
#define PTL3_WAIT_IDLE_RECHECK    1024u /* with no yield: check every this many empty reads */
/* the NIC's default blocks only a caller that polls in a tight loop (its run
 * of empty reads took less than this of its CPU time): one that computes
 * between its MPI_Test calls is not put to sleep, it yields */
#define PTL3_WAIT_TIGHT_NS 200000u
struct ptl3_wait {
	unsigned polls;	     /* yield or block after this many empty reads (0: never) */
	int block_ms;	     /* block in PtlEQPoll at most this long instead of yielding */
	unsigned ni_spin_us; /* PtlNIWaitSpin at the last check (UINT_MAX: unknown) */
	int nic_core;	     /* ... it was 0: Portals' waits sleep at once */
	int block_by_nic;    /* block_ms is the NIC's default (tight loops only) */
	uint64_t checked_ns; /* CLOCK_MONOTONIC_COARSE of the last check (0: never) */
	uint64_t yields, blocks;
};

struct ptl3_domain {
	struct fid_domain domain_fid;
	struct ptl3_fabric *fabric;
	pthread_mutex_t lock;
	int ref;		/* open child objects */
	int ptl_inited;
	int ni_open;
	ptl_handle_ni_t ni;
	ptl_process_id_t id;
	ptl_interface_t iface;
	ptl_pid_t req_pid;	/* pid to open the NI at (fi_info src_addr), or PTL_PID_ANY */
	const char *nal_name, *progress_name;
	int app_progress;	/* call PtlProgress from the provider */
	/* app progress: the NI's event count (PtlProgressEvents) read before
	 * the last drain of every queue of the domain; the same count at the
	 * next progress call means nothing to read (ptl3_ep_progress_locked) */
	ptl_seq_t ev_drained;
	int ev_drained_ok;
	struct ptl3_ep *eps;	/* enabled endpoints (ep->dom_next) */
	uint64_t ep_used;	/* endpoint indexes taken */
	uint32_t max_eps;	/* endpoints the NI's portal table holds */
	struct ptl3_ep *stager;	/* the endpoint with the stage and release MEs */
	uint64_t next_send_id;	/* PT_RDV match bits: unique in the domain */
	struct ptl3_mr *mrs;
	enum fi_threading threading;
	/* FI_THREAD_DOMAIN (MPICH's request): the application serialises its
	 * calls on the domain, so the data path (sends, receives, CQ reads)
	 * takes no lock: a lock and an unlock were a quarter of an idle
	 * fi_cq_read.  Control calls still lock (cheap insurance). */
	int serialized;
	int rma_event;		/* FI_RMA_EVENT granted: regions post END events */
	int rma_eq_valid;
	ptl_handle_eq_t rma_eq; /* ptl3_rma_event.c */
	int atomic;		/* FI_ATOMIC granted */
	struct ptl3_atomic_agent *agent; /* applies peers' atomics (ptl3_atomic.c) */
	uint64_t atomics_applied;	/* requests applied by the agent */
	uint64_t atomics_refused;	/* answered with an error (key, range, access) */
	uint64_t atomics_dropped;	/* malformed: not answered */
	struct ptl3_wait wait;		/* idle CQ reads: yield or block (ptl3_wait.c) */
};
/* the idle-read policy in force, asked of the NI again after
 * PTL3_WAIT_RECHECK_NS; the counters printed with FI_PTL3_COUNTERS */
void ptl3_wait_refresh_locked(struct ptl3_domain *dom);
void ptl3_wait_print_locked(const struct ptl3_domain *dom);
struct ptl3_cq;
enum ptl3_idle { PTL3_IDLE_POLL, PTL3_IDLE_YIELD, PTL3_IDLE_BLOCK };
/* After an empty read (cq->empty_polls counted): what to do now; with
 * PTL3_IDLE_BLOCK, *block_ms is the wait's bound (cq->ep is set then). */
enum ptl3_idle ptl3_wait_idle_locked(struct ptl3_cq *cq, int *block_ms);

struct ptl3_addr {
	uint32_t magic;
	uint16_t version;
	uint16_t pt_base;
	uint32_t iface;
	uint32_t nid;
	uint32_t pid;
	uint32_t ep_index; /* which endpoint of the NI: its receive portals */
};

/* node/service -> address (ptl3_addr.c): service = Portals pid (none:
 * PTL_PID_ANY), node = nid (IPv4 over udp/ether, 0 over shmem) or a
 * printed address; -FI_ENODATA if they name none */
#define PTL3_ADDR_PREFIX "ptl3://"
int ptl3_addr_resolve(const char *node, const char *service, struct ptl3_addr *out);
int ptl3_addr_valid(const void *addr, size_t len); /* a ptl3 address of that length */
/* "ptl3://nid:pid" into buf (snprintf rules); returns the full length */
size_t ptl3_addr_print(const struct ptl3_addr *a, char *buf, size_t len);

struct ptl3_av {
	struct fid_av av_fid;
	struct ptl3_domain *dom;
	int ref;
	size_t count, cap;
	struct ptl3_addr *tab;
};

struct ptl3_cq_ent {
	struct fi_cq_tagged_entry e;
	int err;		/* positive FI_E* code, 0 = success */
	size_t olen;
	int prov_errno;
};

struct ptl3_cq {
	struct fid_cq cq_fid;
	struct ptl3_domain *dom;
	enum fi_cq_format format;
	int ref;
	struct ptl3_cq_ent *ring;
	size_t cap, head, count;
	struct ptl3_ep *ep;	/* for progress */
	unsigned empty_polls;	/* consecutive reads that found nothing */
	uint64_t idle_since_ns;	/* thread CPU time when the run of empty reads began (ptl3_wait.c) */
	int signaled;		/* fi_cq_signal not yet seen by fi_cq_sread */
};

struct ptl3_cntr {
	struct fid_cntr cntr_fid;
	struct ptl3_domain *dom;
	int ref;
	uint64_t value, errors;
	struct ptl3_ep *ep;
};

struct ptl3_mr {
	struct fid_mr mr_fid;
	struct ptl3_domain *dom;
	struct ptl3_mr *next;
	void *buf;
	size_t len;
	uint64_t access;
	int exposed; /* an ME on PT_RMA (remote access; FI_RMA offered) */
	ptl_handle_me_t me;
};

/* unexpected-message buffer (catch-all after the marker) */
struct ptl3_ebuf {
	char *mem;
	size_t size;
	int refs;		/* unexpected entries still pointing into it */
	int linked;
	int index;
	int qid;
	ptl_handle_me_t me;
	ptl_handle_md_t md;
};

/* one unexpected message */
struct ptl3_ux {
	struct ptl3_ux *next;
	ptl_process_id_t src;
	uint64_t tag;		/* long bit cleared */
	uint64_t hdr;
	size_t rlen;		/* sent length */
	size_t mlen;		/* deposited length (== rlen: data here) */
	struct ptl3_ebuf *buf;	/* NULL: header only */
	size_t off;
};

struct ptl3_rxq {
	int qid;
	ptl_pt_index_t pt;
	ptl_handle_me_t marker;
	ptl_handle_me_t ovf_me;
	ptl_handle_md_t ovf_md;
	struct ptl3_ebuf *ebufs;
	int nebufs;
	struct ptl3_ux *ux_head, *ux_tail;
	size_t ux_count;
	/* receives the provider matches itself, oldest first (ptl3_soft.c);
	 * while any is here, every new receive of this queue joins them */
	struct ptl3_op *soft_head, *soft_tail;
};

/* does unexpected message x match a receive of (has_src, src, tag, ignore)? */
static inline int ptl3_ux_matches(const struct ptl3_ux *x, int has_src, ptl_process_id_t src,
				  uint64_t tag, uint64_t ignore)
{
	if (has_src && (x->src.nid != src.nid || x->src.pid != src.pid))
		return 0;
	return ((x->tag ^ tag) & ~ignore) == 0;
}

enum ptl3_op_kind {
	PTL3_OP_SEND = 1,	/* put + ack (+ get from PT_RDV) */
	PTL3_OP_RECV,		/* posted receive (ME before the marker) */
	PTL3_OP_MRECV,		/* multi-receive buffer */
	PTL3_OP_PULL,		/* receiver's PtlGet of an unexpected message */
	PTL3_OP_SYNC,		/* synchronous get (multi-recv from the unexpected list) */
	PTL3_OP_WRITE,		/* fi_write: put with ack on PT_RMA */
	PTL3_OP_READ,		/* fi_read: get on PT_RMA */
	PTL3_OP_ATOMIC,		/* fi_atomic: request put + reply ME (ptl3_atomic.c) */
};

struct ptl3_op {
	uint32_t gen;
	uint32_t idx;
	int kind;
	int live;
	void *context;
	uint64_t cq_flags;	/* FI_SEND|FI_TAGGED|... */
	int want_comp;
	/* send */
	ptl_handle_me_t me;
	ptl_handle_md_t md;
	size_t len;
	int got_ack, got_get, got_send_end;
	size_t acked;
	void *bounce;		/* inject copy; kept with the slot (ptl3_op_bounce) */
	size_t bounce_cap;
	uint64_t send_id;
	ptl_process_id_t target; /* for messages: a SEND_END's initiator is ourselves */
	uint32_t target_ep;	/* its endpoint index (fi_writedata's notification) */
	/* recv */
	int qid;
	char *buf;
	size_t buflen;
	size_t used;		/* multi-recv: bytes consumed before the ME */
	size_t rlen;		/* pull: sent length */
	uint64_t tag;
	uint64_t hdr;
	int done;		/* sync get finished */
	int notify;		/* fi_writedata: send the CQ data (hdr) at the ACK */
	int posted;		/* ME is in the match list */
	int soft;		/* in its queue's soft list (ptl3_soft.c), no ME */
	int has_src;		/* receive: FI_DIRECTED_RECV source in src */
	ptl_process_id_t src;
	uint64_t ignore;	/* receive: tag bits ignored */
	struct ptl3_op *next;	/* soft list */
};

/* one staging slot: held from the staged put until the receiver pulls
 * it (GET_END) or releases it (ptl3_release.c) */
struct ptl3_stage_slot {
	ptl_process_id_t dest; /* the only peer whose release frees it */
	uint16_t gen;          /* bumped per use; in the send id */
	uint8_t held;
};

/* the inject staging area (ptl3_stage.c) */
struct ptl3_stage {
	char *mem;		/* nslots << shift bytes, mmap'd */
	size_t bytes;
	unsigned shift;		/* log2 of the slot size */
	uint32_t nslots;	/* 0: staging off */
	uint32_t *free;		/* stack of free slots */
	uint32_t nfree;
	struct ptl3_stage_slot *slot;
	ptl_handle_me_t me;	/* on PT_RDV, match bits PTL3_SENDID_STAGE */
	ptl_handle_md_t md;     /* its MD: staged puts go out of it when a send counter is bound */
	/* a second MD over the same memory, bound for the staged puts with
	 * PTL_MD_EVENT_SUCCESS_DISABLE: a put that went out posts nothing (an
	 * inject writes no completion), a failed one its SEND_END */
	ptl_handle_md_t quiet_md;
};

/* slots of one sender that this receiver is done with, not yet released */
struct ptl3_release_batch {
	ptl_process_id_t src;
	uint32_t base; /* first slot of the window */
	uint32_t count;
	uint64_t bits; /* slot base + i done */
	int used;
};

#define PTL3_RELEASE_WAYS 64 /* senders with releases pending at once */
/* empty completion-queue polls after which pending releases go out (a
 * power of two) */
#define PTL3_RELEASE_IDLE_POLLS 32

/* slots done with but not yet put into their batches: a message's
 * arrival only notes its slot, the batching waits for the next empty CQ
 * poll (ptl3_release.c) */
#define PTL3_RELEASE_DEFER 32

/* the release protocol, both sides (ptl3_release.c) */
struct ptl3_release {
	ptl_handle_me_t me; /* sender: on PT_RDV, match bits PTL3_SENDID_RELEASE */
	ptl_handle_md_t md; /* receiver: zero-length, the releases go out of it */
	int ready;
	uint32_t npending; /* batches with count > 0 */
	int due;           /* a batch holds PTL3_RELEASE_BATCH: out at the next empty CQ poll */
	uint32_t ndeferred; /* slots noted in deferred[], not yet batched */
	struct {
		ptl_process_id_t src;
		uint32_t slot;
	} deferred[PTL3_RELEASE_DEFER];
	struct ptl3_release_batch batch[PTL3_RELEASE_WAYS];
};

struct ptl3_stats {
	uint64_t puts, gets, acks, get_ends, replies;
	uint64_t ux_eager, ux_header, ux_matched;
	uint64_t mdupdate_retries, ebuf_reposts;
	uint64_t bytes_sent, bytes_recv;
	uint64_t truncated, cancelled;
	uint64_t staged; /* inject sends that went through a stage slot */
	uint64_t releases_sent, releases_recv; /* release puts (ptl3_release.c) */
	uint64_t slots_released;               /* stage slots freed by a release */
	uint64_t releases_bad;                 /* releases naming no slot held for their sender */
	uint64_t stale_data; /* data events whose operation was gone (lost data) */
	uint64_t soft_posted, soft_matched; /* receives matched by the provider (ptl3_soft.c) */
	uint64_t soft_flushed;              /* ... moved into Portals before a large receive */
};

struct ptl3_ep {
	struct fid_ep ep_fid;
	struct ptl3_domain *dom;
	struct ptl3_ep *dom_next; /* the domain's enabled endpoints */
	uint32_t ep_index;	  /* receive portals pt_base + 4 * ep_index + ... */
	struct fi_info *info;
	int directed_recv; /* FI_DIRECTED_RECV granted: receives honour src_addr */
	int atomic;	   /* FI_ATOMIC granted to this endpoint */
	int enabled;
	int closing;
	struct ptl3_av *av;
	struct fid_eq *eq_bound; /* fi_ep_bind'ed EQ (no events posted to it) */
	struct ptl3_cq *tx_cq, *rx_cq;
	int tx_selective, rx_selective;
	struct ptl3_cntr *send_cntr, *recv_cntr, *read_cntr, *write_cntr;
	struct ptl3_cntr *rwrite_cntr, *rread_cntr; /* FI_REMOTE_WRITE/READ (FI_RMA_EVENT) */
	uint64_t tx_op_flags, rx_op_flags;
	int rx_cq_data;		/* FI_RX_CQ_DATA mode accepted: fi_writedata allowed */
	size_t min_multi_recv;
	uint32_t pt_base;
	ptl_handle_eq_t eq;	/* completions */
	ptl_handle_eq_t ueq;	/* unexpected arrivals (test EQ for posting) */
	struct ptl3_rxq q[PTL3_NQ];
	/* op table: stable pointers, index + generation in MD user_ptr */
	struct ptl3_op **ops;
	uint32_t nops, capops;
	uint32_t *freeidx;
	uint32_t nfree;
	uint32_t outstanding_sends;
	uint32_t posted_recvs;
	int soft_recv; /* small tagged receives are matched by the provider */
	struct ptl3_stage stage;
	struct ptl3_release rel;
	struct ptl3_stats st;
	struct ptl3_repost *repost; /* refused queued receives (ptl3_repost.c); NULL: none yet */
	uint8_t posts_queued;	 /* the NI may queue PtlMEMDPostNoWait (LIB in a NIC: offload) */
	uint8_t posts_unsettled; /* one was queued since the last PtlMEMDPostSync */
};

static inline struct ptl3_ep *ptl3_ep_of(struct fid_ep *ep)
{
	return (struct ptl3_ep *)ep;
}

/* ---- fabric/domain (ptl3_fabric.c, ptl3_domain.c) */
int ptl3_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
int ptl3_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **domain,
		     void *context);
int ptl3_domain_ni_open_locked(struct ptl3_domain *dom);
#define ptl3_lock(dom) pthread_mutex_lock(&(dom)->lock)
#define ptl3_unlock(dom) pthread_mutex_unlock(&(dom)->lock)
/* the data path's lock: none when the application serialises (above) */
static inline void ptl3_lock_data(struct ptl3_domain *dom)
{
	if (!dom->serialized)
		pthread_mutex_lock(&dom->lock);
}
static inline void ptl3_unlock_data(struct ptl3_domain *dom)
{
	if (!dom->serialized)
		pthread_mutex_unlock(&dom->lock);
}

/* ---- event queues (ptl3_eq.c) */
int ptl3_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq,
		 void *context);
void ptl3_eq_ref(struct fid_eq *eq, int delta); /* bound by an endpoint */
int ptl3_eq_trywait(struct fid_eq *eq);         /* -FI_EAGAIN while not empty */

/* ---- objects opened from the domain */
int ptl3_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av,
		 void *context);
/* the process and endpoint index (ep_index may be NULL) of an AV entry:
 * inline, every send and directed receive looks one up */
static inline int ptl3_av_get(const struct ptl3_av *av, fi_addr_t addr, ptl_process_id_t *id,
			      uint32_t *ep_index)
{
	if (!av || addr >= av->count)
		return -FI_EINVAL;
	id->nid = av->tab[addr].nid;
	id->pid = av->tab[addr].pid;
	if (ep_index)
		*ep_index = av->tab[addr].ep_index;
	return 0;
}
int ptl3_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq,
		 void *context);
/* ptl3_poll.c: poll sets; the members' side (domain lock held): a CQ
 * after progress holds an entry; a counter's value + errors (after
 * progress when asked) */
/* ptl3_rma_event.c: the domain's EQ for target-side RMA events
 * (PTL_EQ_NONE without FI_RMA_EVENT); drained into the endpoint's
 * FI_REMOTE_WRITE/READ counters by its progress */
ptl_handle_eq_t ptl3_rma_event_eq_locked(struct ptl3_domain *dom);
void ptl3_rma_event_drain_locked(struct ptl3_ep *ep);
int ptl3_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr, struct fid_poll **pollset);
int ptl3_cq_poll_ready_locked(struct fid_cq *fcq);
uint64_t ptl3_cntr_poll_value_locked(struct fid_cntr *fc, int progress);
int ptl3_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **cntr,
		   void *context);
int ptl3_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
		uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context);
int ptl3_mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
		 uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
		 void *context);
int ptl3_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
		    struct fid_mr **mr);
int ptl3_endpoint(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
		  void *context);

/* ---- completion plumbing (ptl3_cq.c, ptl3_cntr.c) */
/* a full ring doubled (1024 slots at first); -FI_ENOMEM: the entry is lost */
int ptl3_cq_grow_locked(struct ptl3_cq *cq);
/* append an entry (no CQ: nothing).  Inline: a completion per message,
 * and the call with nine arguments cost as much as the stores. */
static inline int ptl3_cq_push_locked(struct ptl3_cq *cq, void *context, uint64_t flags,
				      size_t len, void *buf, uint64_t data, uint64_t tag, int err,
				      size_t olen)
{
	if (!cq)
		return 0;
	if (__builtin_expect(cq->count == cq->cap, 0)) {
		int rc = ptl3_cq_grow_locked(cq);
		if (rc)
			return rc;
	}
	/* the capacity is a power of two: masked, not divided */
	struct ptl3_cq_ent *e = &cq->ring[(cq->head + cq->count) & (cq->cap - 1)];
	e->e.op_context = context;
	e->e.flags = flags;
	e->e.len = len;
	e->e.buf = buf;
	e->e.data = data;
	e->e.tag = tag;
	e->err = err;
	e->olen = olen;
	e->prov_errno = 0;
	cq->count++;
	return 0;
}
/* count one completion (or error) on cntr, if one is bound: inline, a
 * call per message for the counters MPICH never binds cost ~5 Ir */
static inline void ptl3_cntr_inc_locked(struct ptl3_cntr *cntr, int err)
{
	if (!cntr)
		return;
	if (err)
		cntr->errors++;
	else
		cntr->value++;
}

/* ---- endpoint engine (ptl3_ep.c) */
void ptl3_ep_progress_locked(struct ptl3_ep *ep);
/* progress every enabled endpoint of the domain */
void ptl3_dom_progress_locked(struct ptl3_domain *dom);
struct ptl3_op *ptl3_op_alloc_locked(struct ptl3_ep *ep, int kind);
/* the op's slot back to the free list (inline: one per message) */
static inline void ptl3_op_free_locked(struct ptl3_ep *ep, struct ptl3_op *op)
{
	if (!op->live)
		return;
	op->live = 0;
	if (op->bounce_cap > PTL3_BOUNCE_KEEP) {
		free(op->bounce);
		op->bounce = NULL;
		op->bounce_cap = 0;
	}
	ep->freeidx[ep->nfree++] = op->idx;
}
/* The events already posted, both EQs, without a NAL pass.  Every
 * initiating call (send, write, read) starts with it: in app progress mode
 * each Portals data-movement call gives the NAL a pass, and a pass may post
 * many events (up to 64 records per peer on shmem).  An application that
 * issues operations without reading its CQ (MPICH's MPI_Get loop) while a
 * peer that had fallen behind catches up would otherwise fill the EQ between
 * two drains (rma/manyget under load: 30000 events within 8192 reads). */
void ptl3_ep_drain_locked(struct ptl3_ep *ep);
/* print the endpoint's counters on stderr (ptl3_stats.c) */
void ptl3_ep_print_counters_locked(struct ptl3_ep *ep);
/* Sleep in PtlEQPoll on the EP's queues until an event (handled) or
 * timeout_ms; then drain.  For oversubscribed nodes (ptl3_cq.c). */
void ptl3_ep_block_locked(struct ptl3_ep *ep, int timeout_ms);
/* A copy of buf[0..len) owned by op (for FI_INJECT), or NULL (out of
 * memory).  Small copies keep their buffer with the op slot for the next
 * user: a window of injects then allocates nothing (malloc/free of such
 * windows made glibc trim and re-fault its heap every round). */
void *ptl3_op_bounce(struct ptl3_op *op, const void *buf, size_t len);
void *ptl3_op_uptr(const struct ptl3_op *op);
void ptl3_tx_complete_locked(struct ptl3_ep *ep, struct ptl3_op *op, int err);
/* a receive's completion (entry unless unwanted and successful, counter,
 * byte count); hdr's CQ data goes into the entry.  Inline: one per message */
static inline void ptl3_rx_complete_locked(struct ptl3_ep *ep, void *context, uint64_t flags,
					   void *buf, size_t len, uint64_t tag, uint64_t hdr,
					   int err, size_t olen, int want_comp)
{
	uint64_t data = 0;
	if (hdr & PTL3_HDR_HAS_DATA) {
		flags |= FI_REMOTE_CQ_DATA;
		data = hdr & 0xFFFFFFFFULL;
	}
	if (!(flags & FI_TAGGED))
		tag = 0;
	if (want_comp || err)
		ptl3_cq_push_locked(ep->rx_cq, context, flags, len, buf, data, tag, err, olen);
	if (flags & FI_RECV)
		ptl3_cntr_inc_locked(ep->recv_cntr, err);
	ep->st.bytes_recv += len;
}

/* a message's payload: up to 16 bytes inline (<p3copy.h>) */
static inline void ptl3_copy(void *dst, const void *src, size_t n)
{
	p3_copy_small(dst, src, n);
}

/* ---- data movement (ptl3_send.c, ptl3_recv.c, ptl3_rxq.c, ptl3_tagged.c,
 * ptl3_untagged.c, ptl3_rma.c) */
extern struct fi_ops_msg ptl3_msg_ops;
extern struct fi_ops_tagged ptl3_tagged_ops;
extern struct fi_ops_rma ptl3_rma_ops;
/* after a fi_writedata's ACK: its CQ data to the target's PT_MSG */
void ptl3_rma_notify_locked(struct ptl3_ep *ep, ptl_process_id_t target, uint32_t target_ep,
			    uint64_t data);
/* fi_inject()/fi_tinject()/fi_inject_write() and their data variants: the
 * one case fi_msg(3) writes no completion for.  The FI_INJECT *flag*
 * (op_flags, fi_sendmsg) only means "buffer reusable at return"; such a
 * send still completes.  A provider-private flag bit (60-63 are unused by
 * libfabric's public flags); stripped from the application's flags. */
#define PTL3_INJECT_CALL (1ULL << 62)
/* the common send path: qid selects PT_TAG or PT_MSG */
ssize_t ptl3_send_common(struct ptl3_ep *ep, int qid, const struct iovec *iov, size_t count,
			 fi_addr_t dest, uint64_t tag, uint64_t data, int has_data, void *context,
			 uint64_t flags);
/* fi_inject()/fi_tinject() and their data variants: a stage slot, else
 * the common send path with PTL3_INJECT_CALL */
ssize_t ptl3_inject_common(struct ptl3_ep *ep, int qid, const void *buf, size_t len, fi_addr_t dest,
                           uint64_t tag, uint64_t data, int has_data);
/* the common receive path */
ssize_t ptl3_recv_common(struct ptl3_ep *ep, int qid, const struct iovec *iov, size_t count,
			 fi_addr_t src, uint64_t tag, uint64_t ignore, void *context,
			 uint64_t flags);
int ptl3_rxq_setup_locked(struct ptl3_ep *ep, struct ptl3_rxq *q);
void ptl3_rxq_teardown_locked(struct ptl3_ep *ep, struct ptl3_rxq *q);
void ptl3_rxq_ueq_event_locked(struct ptl3_ep *ep, const ptl_event_t *ev, uint64_t uptr);
void ptl3_rxq_drain_ueq_locked(struct ptl3_ep *ep);
/* an unexpected buffer unlinked and no longer referenced: attach it again
 * (ptl3_rxq.c) */
void ptl3_ebuf_repost_locked(struct ptl3_ep *ep, struct ptl3_ebuf *b);
/* one reference to unexpected buffer b dropped (a message in it consumed) */
static inline void ptl3_ebuf_release_locked(struct ptl3_ep *ep, struct ptl3_ebuf *b)
{
	b->refs--;
	if (!b->linked && b->refs == 0 && !ep->closing)
		ptl3_ebuf_repost_locked(ep, b);
}
/* deliver unexpected message x to receive op (copied out of its buffer,
 * or pulled); may free op, the caller frees x (ptl3_recv.c) */
int ptl3_ux_deliver_locked(struct ptl3_ep *ep, struct ptl3_op *op, const struct ptl3_ux *x);
ssize_t ptl3_ep_cancel_locked(struct ptl3_ep *ep, void *context);

/* ---- receives whose queued post was refused (ptl3_repost.c) */
/* a PTL_NI_POST_REFUSED event in the unexpected EQ for receive op */
void ptl3_repost_note_locked(struct ptl3_ep *ep, struct ptl3_op *op, const ptl_event_t *ev);
/* post the refused receives again, in order (after a drain of the unexpected EQ) */
void ptl3_repost_run_locked(struct ptl3_ep *ep);
/* before a search of the unexpected lists: the queued posts ran, their
 * refusals are in the unexpected EQ (call when ep->posts_unsettled) */
void ptl3_repost_settle_locked(struct ptl3_ep *ep);
/* 1 while re-posting: receives are posted with the waiting PtlMEMDPost */
int ptl3_repost_waiting(const struct ptl3_ep *ep);
void ptl3_repost_print(const struct ptl3_ep *ep);
void ptl3_repost_free(struct ptl3_ep *ep);
/* post receive op again as a new one is (ptl3_recv.c); < 0: failed, op freed */
ssize_t ptl3_recv_repost_locked(struct ptl3_ep *ep, struct ptl3_op *op);
/* ---- receives matched by the provider (ptl3_soft.c) */
/* whether a receive of buflen bytes on q joins the soft list */
int ptl3_soft_wanted(const struct ptl3_ep *ep, const struct ptl3_rxq *q, size_t buflen);
void ptl3_soft_append_locked(struct ptl3_ep *ep, struct ptl3_rxq *q, struct ptl3_op *op);
/* the oldest soft receive of q that x matches, taken off the list; NULL if none */
struct ptl3_op *ptl3_soft_take_locked(struct ptl3_rxq *q, const struct ptl3_ux *x);
/* take q's oldest soft receive off the list (it went into Portals) */
struct ptl3_op *ptl3_soft_pop_locked(struct ptl3_rxq *q);
/* the oldest soft receive of q taken off the list if a message from src
 * with tag matches it, else NULL (the common case, inline; any other
 * match: ptl3_soft_take_locked) */
static inline struct ptl3_op *ptl3_soft_take_head_locked(struct ptl3_rxq *q, ptl_process_id_t src,
							 uint64_t tag)
{
	struct ptl3_op *op = q->soft_head;
	if (!op || ((op->tag ^ tag) & ~op->ignore) != 0 ||
	    (op->has_src && (op->src.nid != src.nid || op->src.pid != src.pid)))
		return NULL;
	q->soft_head = op->next;
	if (q->soft_tail == op)
		q->soft_tail = NULL;
	op->next = NULL;
	op->soft = 0;
	return op;
}
/* fi_cancel of a soft receive: 1 if context named one (cancelled), else 0 */
int ptl3_soft_cancel_locked(struct ptl3_ep *ep, void *context);
/* a zero-length get on a general send's PT_RDV entry: its sender may
 * complete (the receiver will not pull it) */
void ptl3_release_general_locked(struct ptl3_ep *ep, ptl_process_id_t src, uint64_t hdr);
extern char ptl3_zero_byte;

/* ---- atomics in software (ptl3_atomic.c, ptl3_atomic_math.c) */
/* PT_RDV match bits (above every send id, stage and release bit): a request
 * to the target domain's agent; ATOMIC_REPLY | reply id: its answer */
#define PTL3_MBITS_ATOMIC_REQ (1ULL << 32)
#define PTL3_MBITS_ATOMIC_REPLY (1ULL << 33)
#define PTL3_ATOMIC_MAX_BYTES 4096 /* operand bytes per operation (count * size) */
extern struct fi_ops_atomic ptl3_atomic_ops;
int ptl3_query_atomic(struct fid_domain *domain, enum fi_datatype datatype, enum fi_op op,
		      struct fi_atomic_attr *attr, uint64_t flags);
int ptl3_atomic_agent_setup_locked(struct ptl3_domain *dom);   /* idempotent */
void ptl3_atomic_agent_teardown_locked(struct ptl3_domain *dom);
void ptl3_atomic_agent_drain_locked(struct ptl3_domain *dom); /* apply what arrived */
void ptl3_atomic_on_event_locked(struct ptl3_ep *ep, struct ptl3_op *op, const ptl_event_t *ev);
/* element size of a datatype offered (0: not offered); whether (dt, op) is */
size_t ptl3_atomic_size(enum fi_datatype dt);
int ptl3_atomic_offered(enum fi_datatype dt, enum fi_op op);
/* dst[i] = dst[i] op src[i] (compare-swaps: cmp[i]), old[i] = previous dst[i] */
void ptl3_atomic_apply(enum fi_datatype dt, enum fi_op op, void *dst, const void *src,
		       const void *cmp, void *old, size_t count);

/* ---- inject staging (ptl3_stage.c) */
/* expose the staging area on PT_RDV; failure leaves staging off (no error) */
int ptl3_stage_setup_locked(struct ptl3_ep *ep);
void ptl3_stage_teardown_locked(struct ptl3_ep *ep); /* unlink the ME */
void ptl3_stage_free(struct ptl3_ep *ep);	     /* after teardown: the memory */
/* an FI_INJECT send of buf[0..len) through a slot (no op, no MD of its
 * own, no ACK); hdr is the header data without the send id.  Returns 1 if
 * sent, 0 if no slot fits (take the general path), or a -FI_ error */
int ptl3_stage_send_locked(struct ptl3_ep *ep, ptl_process_id_t dest, ptl_pt_index_t pt,
                           uint64_t mbits, uint64_t hdr, const void *buf, size_t len);
/* an event on the stage MD: SEND_END of a staged put, or GET_END of a
 * receiver's pull (or release) of a slot */
void ptl3_stage_on_event_locked(struct ptl3_ep *ep, const ptl_event_t *ev);
/* free the slots of window base whose bits are set, held for src; returns
 * how many named no slot held for src */
uint32_t ptl3_stage_release_window_locked(struct ptl3_ep *ep, ptl_process_id_t src, uint64_t base,
                                          uint64_t bits);
uint32_t ptl3_stage_held(const struct ptl3_ep *ep);

/* ---- the release protocol (ptl3_release.c) */
int ptl3_release_setup_locked(struct ptl3_ep *ep);
void ptl3_release_teardown_locked(struct ptl3_ep *ep);
/* the receiver is done with the message of src whose header data is hdr:
 * hand a staged slot back (batched), or let a general send complete (a
 * zero-length get on its PT_RDV entry) unless delivered whole */
void ptl3_sender_done_locked(struct ptl3_ep *ep, ptl_process_id_t src, uint64_t hdr,
                             int delivered_whole);
/* send every pending release */
void ptl3_release_flush_locked(struct ptl3_ep *ep);
/* an empty CQ poll (the empty_polls-th in a row): batch the slots noted
 * since the last one, send the batches that are due */
void ptl3_release_idle_locked(struct ptl3_ep *ep, unsigned empty_polls);
/* a release arrived (PUT_END on the release MD) */
void ptl3_release_on_put_locked(struct ptl3_ep *ep, const ptl_event_t *ev);

/* user_ptr encoding: kind in bits 62..63, generation 32..61, index 0..31 */
#define PTL3_UP_OP 1ULL
#define PTL3_UP_EBUF 2ULL
#define PTL3_UP_OVF 3ULL
/* the stage MD (kind OVF with an index no overflow ME has) */
#define PTL3_UP_STAGE PTL3_UP_MAKE(PTL3_UP_OVF, 0, 0xFFFFFFFFu)
/* the release MD (ptl3_release.c) */
#define PTL3_UP_RELEASE PTL3_UP_MAKE(PTL3_UP_OVF, 0, 0xFFFFFFFEu)
#define PTL3_UP_KIND(u) ((uint64_t)(u) >> 62)
#define PTL3_UP_GEN(u) ((uint32_t)(((uint64_t)(u) >> 32) & 0x3FFFFFFFu))
#define PTL3_UP_IDX(u) ((uint32_t)((uint64_t)(u)&0xFFFFFFFFu))
#define PTL3_UP_MAKE(kind, gen, idx)                                                               \
	((void *)(uintptr_t)(((uint64_t)(kind) << 62) | (((uint64_t)(gen)&0x3FFFFFFFu) << 32) |       \
			     (uint64_t)(uint32_t)(idx)))

static inline int ptl3_ptl_to_fi(int rc)
{
	switch (rc) {
	case PTL_OK:
		return 0;
	case PTL_NO_SPACE:
		return -FI_EAGAIN;
	case PTL_SEGV:
		return -FI_EFAULT;
	case PTL_PROCESS_INVALID:
		return -FI_EADDRNOTAVAIL;
	default:
		return -FI_EIO;
	}
}

#endif
