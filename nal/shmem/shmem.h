/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shmem.h - the shared-memory NAL: segment layout, record formats and the
 * NAL's private state.
 *
 * Each NI owns one POSIX shared-memory segment, /dev/shm/p3shm-<uid>-<jid>-<pid>
 * (jid 0 when the job id is unknown, pid the Portals pid).  Peers map it and
 * write into it; its owner reads.  Layout (offsets, never pointers):
 *
 *   0                      struct shm_seg_hdr (magic, version first)
 *   sh_claims_off          sh_max_peers x struct shm_claim: which sender owns
 *                          which inbound ring (claimed with a CAS)
 *   sh_rings_off + i*sh_ring_stride
 *                          struct shm_ring_ctl, then sh_ring_size data bytes:
 *                          the SPSC ring from sender i to the owner
 *
 * Everything in a segment is read as untrusted input: sizes and offsets are
 * checked against the mapping before use.
 */
#ifndef P3_SHMEM_H
#define P3_SHMEM_H

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "p3copy.h"

#if defined(__has_include)
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#endif
#endif

#include "answer_q.h"
#include "nal.h"
#include "ring.h"

/* ---- segment layout (shared between processes; pinned) --------------- */

#define SHM_MAGIC          0x50334d53u /* "SM3P" little-endian */
#define SHM_LAYOUT_VERSION 4u /* 2: cooperative-copy area; 3: SMALL records; 4: record stamps */
#define SHM_NAME_PREFIX    "p3shm"
#define SHM_NAME_MAX       64

enum shm_seg_state {
	SHM_SEG_CREATING = 0,
	SHM_SEG_ALIVE = 1,
	SHM_SEG_CLOSED = 2, /* the owner stopped its NI */
};

/* rc_cma verdicts: the consumer probed process_vm_readv against the
 * producer on first contact. */
enum { SHM_CMA_UNKNOWN = 0, SHM_CMA_OK = 1, SHM_CMA_NO = 2 };

struct shm_seg_hdr {
	uint32_t sh_magic;   /* SHM_MAGIC, stored last (release) */
	uint32_t sh_version; /* SHM_LAYOUT_VERSION */
	uint64_t sh_seg_size;
	uint32_t sh_owner_ospid; /* OS pid of the owner */
	uint32_t sh_hdr_size;    /* sizeof(struct shm_seg_hdr) */
	uint64_t sh_owner_start; /* owner's start time (/proc stat field 22) */
	uint64_t sh_incarnation; /* random per segment */
	uint32_t sh_uid;
	uint32_t sh_jid;
	uint32_t sh_nid;
	uint32_t sh_pid;
	uint32_t sh_max_peers;  /* number of inbound rings */
	uint32_t sh_ring_size;  /* data bytes per ring */
	uint32_t sh_max_record; /* largest record a sender may write */
	uint32_t sh_flags;      /* SHM_SEG_F_* */
	uint64_t sh_claims_off;
	uint64_t sh_rings_off;
	uint64_t sh_ring_stride;
	_Atomic uint32_t sh_state;    /* enum shm_seg_state */
	_Atomic uint32_t sh_nclaimed; /* rings [0, nclaimed) may be in use */
	uint8_t sh_pad0[128 - 104];
	/* line 2: the doorbell.  Senders read sh_sleepers after publishing and
	 * only then bump sh_doorbell and FUTEX_WAKE. */
	_Atomic uint32_t sh_doorbell; /* futex word */
	_Atomic uint32_t sh_sleepers; /* threads about to block on it */
	uint8_t sh_pad1[SHM_CACHE_LINE - 8];
};
static_assert(offsetof(struct shm_seg_hdr, sh_magic) == 0, "magic first");
static_assert(offsetof(struct shm_seg_hdr, sh_version) == 4, "version second");
static_assert(offsetof(struct shm_seg_hdr, sh_state) == 96, "segment header layout");
static_assert(offsetof(struct shm_seg_hdr, sh_doorbell) == 128, "doorbell on its own line");
static_assert(sizeof(struct shm_seg_hdr) == 192, "segment header size");

#define SHM_SEG_F_CMA  0x1u /* the owner allows/uses single copy */
#define SHM_SEG_F_COOP 0x2u /* HELLO: the sender pushes part of large messages */

enum shm_claim_state { SHM_CLAIM_FREE = 0, SHM_CLAIM_BUSY = 1, SHM_CLAIM_TAKEN = 2 };

struct shm_claim {
	_Atomic uint32_t cl_state; /* enum shm_claim_state */
	_Atomic uint32_t cl_ospid; /* OS pid of the producer */
	uint32_t cl_nid;           /* Portals id of the producer */
	uint32_t cl_pid;
};
static_assert(sizeof(struct shm_claim) == 16, "claim layout");

#define SHM_HDR_AREA 4096 /* header, cooperative-copy area, then the claim table */

/*
 * Cooperative copy of large single-copy messages: the receiver pulls chunks
 * from the front with process_vm_readv while the sender, told by a COOP
 * record, pushes chunks from the back with process_vm_writev (one kernel
 * copy runs at half of memcpy's rate once the data leaves the LLC; two in
 * parallel do not).  The chunk states live in the receiver's segment, one
 * slot per message in progress: a 32-bit word per chunk, (gen << 2) | state,
 * so a claim (CAS FREE -> BUSY) by a sender holding a stale COOP record for
 * a reused slot fails.  Only the receiver (re)initialises a slot.
 */
#define SHM_COOP_OFF     256u
#define SHM_COOP_SLOTS   15u
#define SHM_COOP_CHUNKS  64u /* per message at most */
#define SHM_COOP_STRIDE  (SHM_COOP_CHUNKS * 4u)
enum { SHM_COOP_FREE = 0, SHM_COOP_BUSY = 1, SHM_COOP_DONE = 2 };
static_assert(SHM_COOP_OFF >= 192 && SHM_COOP_OFF + SHM_COOP_SLOTS * SHM_COOP_STRIDE <= SHM_HDR_AREA,
              "cooperative-copy area inside the header area");

/* ---- records (inside rings) ------------------------------------------ */

#define SHM_REC_KINDS(X)                                                                           \
	X(HELLO, 1)    /* first record of a producer: who it is */                                 \
	X(EAGER, 2)    /* p3_hdr + payload */                                                      \
	X(CMA_RTS, 3)  /* p3_hdr + shm_cma_desc: receiver pulls with process_vm_readv */           \
	X(CMA_DONE, 4) /* receiver -> sender: the pull is over */                                  \
	X(PIPE_RTS, 5) /* p3_hdr + seq: DATA records follow */                                     \
	X(DATA, 6)     /* one chunk of a PIPE message */                                           \
	X(COOP, 7)     /* receiver -> sender: push chunks of a CMA message (struct shm_coop) */ \
	X(SMALL, 8)    /* a PUT without an ACK, payload <= 8 bytes: one cache line (struct shm_small) */

enum shm_rec_kind {
#define SHM_REC_KIND_ENUM(name, value) SHM_REC_##name = value,
	SHM_REC_KINDS(SHM_REC_KIND_ENUM)
#undef SHM_REC_KIND_ENUM
};

struct shm_hello {
	struct shm_rec he_rec;
	uint32_t he_nid, he_pid;
	uint32_t he_ospid;
	uint32_t he_flags; /* SHM_SEG_F_CMA */
	uint64_t he_incarnation;
	uint64_t he_probe_addr; /* address of a probe word in the sender */
	uint64_t he_probe_value;
};
static_assert(sizeof(struct shm_hello) == 56, "hello layout");

/* EAGER / CMA_RTS / PIPE_RTS: the Portals header follows the record header.
 * r_aux2 carries the low 32 bits of the sender's per-peer sequence. */
struct shm_msg_rec {
	struct shm_rec mr_rec;
	struct p3_hdr mr_hdr;
	/* EAGER: payload; CMA_RTS: struct shm_cma_desc; PIPE_RTS: nothing */
};
#define SHM_MSG_HDR_LEN (sizeof(struct shm_msg_rec))
static_assert(sizeof(struct p3_hdr) == 104, "p3_hdr copied as is");
static_assert(sizeof(struct shm_msg_rec) == 120, "message record header");

struct shm_cma_desc {
	uint64_t cd_seq;
	uint32_t cd_ospid;
	uint32_t cd_niov;
	/* cd_niov x { uint64_t addr, len } */
};
struct shm_cma_iov {
	uint64_t ci_addr;
	uint64_t ci_len;
};
static_assert(sizeof(struct shm_cma_desc) == 16, "cma descriptor layout");

struct shm_done {
	struct shm_rec dn_rec;
	uint64_t dn_seq;
	uint32_t dn_status; /* ptl_ni_fail_t */
	uint32_t dn_pad;
	uint64_t dn_bytes; /* bytes pulled */
};
static_assert(sizeof(struct shm_done) == 40, "done layout");

/* COOP: copy message cp_seq's first cp_len bytes to cp_dest in the
 * receiver, chunks of cp_chunk bytes claimed in slot cp_slot, generation
 * cp_gen, of the receiver's cooperative-copy area. */
struct shm_coop {
	struct shm_rec cp_rec;
	uint64_t cp_seq;
	uint64_t cp_dest;
	uint64_t cp_len;
	uint64_t cp_chunk;
	uint32_t cp_slot;
	uint32_t cp_gen;
	uint32_t cp_nchunks;
	uint32_t cp_pad;
};
static_assert(sizeof(struct shm_coop) == 64, "coop layout");

/* SMALL: the whole of a put without an ACK whose payload fits the rest of
 * one cache line, so the receiver misses one line after head's, not two
 * (an EAGER record is 120 bytes before its payload).  What the Portals
 * header would repeat is not carried: the source is the ring's sender (its
 * HELLO), the destination the receiver, type PUT, rlength = payload_len =
 * sm_len, no ACK MD, no flags.  Payload in sm_data. */
#define SHM_SMALL_MAX 8u
struct shm_small {
	struct shm_rec sm_rec; /* r_aux: payload bytes (<= SHM_SMALL_MAX) */
	uint32_t sm_uid;
	uint32_t sm_jid;
	uint32_t sm_pt;
	uint32_t sm_ac;
	uint64_t sm_mbits;
	uint64_t sm_hdr_data;
	uint64_t sm_roff;
	uint8_t sm_data[SHM_SMALL_MAX];
};
static_assert(sizeof(struct shm_small) == SHM_CACHE_LINE, "a SMALL record is one cache line");

/* DATA: payload starts at SHM_DATA_HDR_LEN (cache-line aligned). */
struct shm_data {
	struct shm_rec da_rec;
	uint64_t da_seq;
	uint64_t da_offset;
	uint32_t da_len;
};
#define SHM_DATA_HDR_LEN 64u

/* ---- segments (segment.c: no dependency on the core) ------------------ */

struct shm_seg {
	void *sg_base;
	size_t sg_size;
	int sg_fd;
	char sg_name[SHM_NAME_MAX]; /* shm_open name, "/p3shm-..." */
};

/* Geometry of a segment to create. */
struct shm_seg_geom {
	uint32_t gm_max_peers;
	uint32_t gm_ring_size; /* a power of two >= 4096 */
};

void shm_seg_name(char *buf, size_t len, uint32_t uid, uint32_t jid, uint32_t pid);
size_t shm_seg_total_size(const struct shm_seg_geom *geom);

/* Create a segment for this process.  A segment of the same name whose
 * owner is dead (or closed) is removed and replaced; a live one gives
 * -EADDRINUSE.  Header filled except identity fields, state CREATING:
 * the caller fills them and calls shm_seg_publish(). *stale is set to 1
 * when a stale segment was removed. */
int shm_seg_create(struct shm_seg *seg, const char *name, const struct shm_seg_geom *geom,
                   int *stale);
void shm_seg_publish(struct shm_seg *seg);

/* Map a peer's segment read-write and validate its layout: 0, -ENOENT
 * (absent), -EAGAIN (still being created), -EPROTO (bad magic, version or
 * geometry), other -errno. */
int shm_seg_open(struct shm_seg *seg, const char *name);

/* Owner: mark CLOSED, unlink the name (idempotent). */
void shm_seg_unlink(struct shm_seg *seg);
/* Unmap and close (either side). */
void shm_seg_close(struct shm_seg *seg);

/* Remove this user's segments whose owner is dead (at most max_check
 * looked at).  Returns how many were removed. */
int shm_seg_sweep(uint32_t uid, unsigned int max_check);

/* 1 if the process that created the segment still runs. */
int shm_seg_owner_alive(const struct shm_seg_hdr *hdr);

/* Checked pointers into a mapped segment (NULL if out of bounds). */
struct shm_claim *shm_seg_claim(const struct shm_seg *seg, uint32_t idx);
struct shm_ring_ctl *shm_seg_ring_ctl(const struct shm_seg *seg, uint32_t idx);
uint8_t *shm_seg_ring_data(const struct shm_seg *seg, uint32_t idx);

/* Pre-fault ring `idx` of a mapped segment (its control block and data
 * pages, whole pages) in this process's mapping, so that the ring's first
 * lap pays no page fault: the pages are allocated (tmpfs) if nobody did yet
 * and mapped writable here (MADV_POPULATE_WRITE; before Linux 5.14 a read
 * of each page, which maps a shared tmpfs page writable too).  Nothing in
 * the ring is changed.  The span's bytes are taken from *budget first; if
 * it holds less, nothing is done.  Returns the bytes populated, 0 when the
 * budget did not allow it, -errno on failure (e.g. tmpfs full; the budget
 * is given back and the ring works as before, faulting as it goes). */
long shm_seg_ring_populate(const struct shm_seg *seg, uint32_t idx, _Atomic uint64_t *budget);

/* Start time of an OS process (0 if unknown). */
uint64_t shm_proc_start_time(pid_t pid);

/* Make sure created segments disappear at exit and on fatal signals
 * (installs atexit and chained signal handlers once per process). */
void shm_cleanup_register(const char *name);
void shm_cleanup_unregister(const char *name);

/* ---- NAL private state (process-local) ------------------------------- */

#define SHM_COUNTERS(X)                                                                            \
	X(EAGER_MSGS_SENT, "eager messages sent")                                                  \
	X(EAGER_BYTES_SENT, "eager payload bytes sent")                                            \
	X(CMA_MSGS_SENT, "single-copy messages sent")                                              \
	X(CMA_BYTES_SENT, "single-copy payload bytes sent")                                        \
	X(PIPE_MSGS_SENT, "two-copy pipeline messages sent")                                       \
	X(PIPE_BYTES_SENT, "two-copy pipeline payload bytes sent")                                 \
	X(EAGER_MSGS_RECV, "eager messages received")                                              \
	X(EAGER_BYTES_RECV, "eager payload bytes delivered")                                       \
	X(CMA_MSGS_RECV, "single-copy messages received")                                          \
	X(CMA_BYTES_RECV, "bytes pulled with process_vm_readv")                                    \
	X(PIPE_MSGS_RECV, "pipeline messages received")                                            \
	X(PIPE_BYTES_RECV, "pipeline payload bytes delivered")                                     \
	X(RING_FULL_STALLS, "sends queued because the peer's ring was full")                       \
	X(FUTEX_WAITS, "times progress() blocked on the doorbell")                                 \
	X(FUTEX_WAKES, "doorbell wakeups sent to sleeping peers")                                  \
	X(PEERS_CONNECTED, "peers whose segment this NI attached")                                 \
	X(PEERS_DEAD, "peers declared dead")                                                       \
	X(BAD_RECORDS, "malformed records or rings discarded")                                     \
	X(COOP_MSGS_RECV, "single-copy messages received with the sender's help")                 \
	X(COOP_BYTES_PUSHED, "bytes this NI pushed into receivers with process_vm_writev")         \
	X(PREFAULT_BYTES, "ring bytes this NI pre-faulted on first contact (P3_SHMEM_PREFAULT)")

enum shm_counter {
#define SHM_COUNTER_ENUM(name, help) SHM_CTR_##name,
	SHM_COUNTERS(SHM_COUNTER_ENUM)
#undef SHM_COUNTER_ENUM
	    SHM_CTR_COUNT
};

/* A send (or a control record) that could not go out at once. */
enum shm_txq_kind { SHM_TX_EAGER, SHM_TX_CMA, SHM_TX_PIPE, SHM_TX_DONE, SHM_TX_COOP };

struct shm_txq {
	struct shm_txq *tq_next;
	enum shm_txq_kind tq_kind;
	struct p3_msg *tq_msg;
	struct p3_hdr tq_hdr;
	uint64_t tq_len;    /* payload bytes */
	uint64_t tq_sent;   /* PIPE: bytes already in DATA records */
	int tq_rts_sent;    /* PIPE: PIPE_RTS already out */
	uint64_t tq_seq;    /* CMA/PIPE/DONE sequence */
	uint32_t tq_status; /* DONE */
	uint64_t tq_bytes;  /* DONE: bytes pulled */
	struct shm_coop tq_coop; /* COOP */
	size_t tq_niov;     /* source iovec (a copy once queued) */
	struct iovec *tq_iov;
	uint64_t tq_off; /* payload offset in tq_iov */
	struct iovec tq_iov_inline[2];
};

/* A single-copy send waiting for the receiver's CMA_DONE. */
struct shm_cma_wait {
	struct shm_cma_wait *cw_next;
	struct p3_msg *cw_msg;
	uint64_t cw_seq;
	uint64_t cw_len;
	size_t cw_niov; /* the payload, in this process (for COOP pushes) */
	struct iovec cw_iov[];
};

enum shm_peer_state {
	SHM_PEER_NEW = 0,    /* never tried */
	SHM_PEER_CONNECTING, /* segment not there yet: retry until deadline */
	SHM_PEER_UP,
	SHM_PEER_DEAD,
};

struct shm_ni;

/* Another process, as a destination (outbound ring in its segment) and as
 * a source (inbound ring index in ours, once it said HELLO). */
struct shm_peer {
	uint64_t pr_key; /* nid << 32 | pid */
	ptl_process_id_t pr_id;

	/* pr_lock protects every field below.  Never held while calling into
	 * LIB (p3_lib_parse / p3_lib_finalize).  Order: progress lock before
	 * pr_lock; never two peer locks at once. */
	pthread_mutex_t pr_lock;
	enum shm_peer_state pr_state;
	struct shm_seg pr_seg;      /* its segment (sg_base NULL: unmapped) */
	struct shm_seg_hdr *pr_hdr; /* == pr_seg.sg_base */
	uint64_t pr_incarnation;    /* of the segment we mapped */
	uint32_t pr_ospid;
	uint32_t pr_ring_idx; /* our ring in its segment */
	int pr_claimed;       /* pr_tx is usable */
	int pr_hello_sent;
	struct shm_ring pr_tx;
	uint32_t pr_eager_max;   /* clamped to its max record */
	uint32_t pr_chunk;       /* DATA payload bytes */
	uint32_t pr_cma_max_iov; /* iovecs that fit one CMA_RTS */
	uint64_t pr_seq;         /* next CMA/PIPE sequence */
	struct shm_txq *pr_q_head, *pr_q_tail;
	struct shm_cma_wait *pr_w_head, *pr_w_tail;
	uint64_t pr_deadline_ns; /* CONNECTING: give up at */
	uint64_t pr_retry_ns;    /* next connect attempt */
	int pr_need_wake;        /* a record went out since the last doorbell check */
	int pr_push_denied;      /* process_vm_writev into it failed: no more COOP pushes */
	/* answers owed by it (await.c, nal/answer_q.h): requests not yet
	 * handed over, and requests handed over (finalized) */
	struct p3_aq pr_await_unsent, pr_await_sent;
	_Atomic int pr_busy;     /* queued or awaited work: progress looks here */
	_Atomic uint64_t pr_ctr[SHM_CTR_COUNT]; /* send-side counters (pr_lock) */
	struct shm_peer *pr_next_all;           /* ni->ni_peers list (immutable once linked) */
};

/* Receiving side of one inbound ring of our segment.  Only touched with
 * the progress lock held. */
struct shm_pipe_rx {
	int px_active;
	struct p3_msg *px_msg; /* NULL: discard */
	uint64_t px_seq;
	uint64_t px_rlen, px_mlen, px_got;
	uint64_t px_offset;
	size_t px_niov;
	struct iovec *px_iov;
};

struct shm_rx {
	int rx_attached; /* rx_ring valid */
	int rx_broken;   /* corrupt: no longer polled */
	int rx_hello;    /* HELLO seen */
	struct shm_ring rx_ring;
	uint64_t rx_key;
	uint32_t rx_ospid;
	uint64_t rx_incarnation;
	int rx_coop; /* its HELLO offered to push (SHM_SEG_F_COOP) */
	struct shm_peer *rx_peer;
	struct shm_pipe_rx rx_pipe;
};

struct shm_config {
	uint32_t cf_eager_max;
	uint32_t cf_ring_size;
	uint32_t cf_max_peers;
	uint32_t cf_spin_us;
	uint32_t cf_connect_timeout_ms;
	uint32_t cf_coop_min;
	uint32_t cf_coop_deny; /* test: act as if process_vm_writev were denied */
	uint32_t cf_prefault;  /* bytes of rings this NI pre-faults (shm_seg_ring_populate) */
	int cf_cma;
};

#define SHM_PEER_HASH 1024 /* power of two */

struct shm_ni {
	struct p3_lib *ni_lib;
	ptl_process_id_t ni_id;
	uint32_t ni_uid, ni_jid, ni_ospid;
	struct shm_config ni_cf;
	int ni_progress_thread; /* LIB drives us from a progress thread */
	int ni_spin_yield;      /* the progress spin yields (shm_spin_yield) */
	int ni_cma; /* single copy usable (probed at init) */

	struct shm_seg ni_seg;
	struct shm_seg_hdr *ni_hdr;
	struct shm_rx *ni_rx; /* ni_cf.cf_max_peers entries */
	/* The control blocks of our inbound rings (ni_cf.cf_max_peers, fixed
	 * at init): an idle pass reads their head and tail without taking
	 * ni_progress_lock (shm_rx_maybe_pending). */
	struct shm_ring_ctl **ni_rx_ctl;

	/* ni_progress_lock: one consumer of the inbound rings at a time.
	 * Held across p3_lib_parse (send() never takes it). */
	pthread_mutex_t ni_progress_lock;
	_Atomic uint32_t ni_kick; /* bumped by wakeup() */
	_Atomic int ni_stopping;

	/* ni_peers_lock serialises peer creation only; lookups are lock-free
	 * (slots are written once, peers live until destroy). */
	pthread_mutex_t ni_peers_lock;
	_Atomic(struct shm_peer *) ni_peer_hash[SHM_PEER_HASH];
	_Atomic(struct shm_peer *) ni_peers; /* list of all, newest first */
	_Atomic(struct shm_peer *) ni_last_peer; /* the last one looked up (most sends go to one) */
	_Atomic uint32_t ni_npeers;
	_Atomic int ni_busy_peers; /* peers with pr_busy set */
	uint64_t ni_next_check_ns; /* liveness checks (progress lock) */
	uint32_t ni_coop_busy;     /* slots of our cooperative-copy area in use (progress lock) */
	uint32_t ni_coop_gen[SHM_COOP_SLOTS];

	_Atomic uint64_t ni_ctr[SHM_CTR_COUNT];
	/* what is left of cf_prefault: taken by the sender's claim (peers
	 * lock) and the receiver's attach (progress lock) */
	_Atomic uint64_t ni_prefault_left;
};

static inline void shm_ctr_add(struct shm_ni *ni, enum shm_counter c, uint64_t v)
{
	atomic_fetch_add_explicit(&ni->ni_ctr[c], v, memory_order_relaxed);
}

/* Increment a counter that only one thread at a time writes (its writers
 * hold one lock): a plain load and store, no locked instruction. */
static inline void shm_ctr_inc(_Atomic uint64_t *c, uint64_t v)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
	                      memory_order_relaxed);
}

/* The hot paths' locks (send_now's peer lock, the progress lock of a
 * pass) are skipped while the process has only ever had one thread
 * (glibc's __libc_single_threaded): nothing can race their holder then,
 * and each lock costs two locked instructions that wait for the store
 * buffer.  The caller keeps what shm_lock_hot returned for the unlock.
 * Only for sections that run no application code (which could start a
 * thread): a pass that may run EQ handlers locks (p3_lib_runs_handlers). */
static inline int shm_single_threaded(void)
{
#if defined(__has_include)
#if __has_include(<sys/single_threaded.h>)
	return __libc_single_threaded != 0;
#endif
#endif
	return 0;
}

static inline int shm_lock_hot(pthread_mutex_t *m)
{
	if (shm_single_threaded())
		return 0;
	pthread_mutex_lock(m);
	return 1;
}

static inline void shm_unlock_hot(pthread_mutex_t *m, int locked)
{
	if (locked)
		pthread_mutex_unlock(m);
}

static inline uint64_t shm_peer_key(ptl_process_id_t id)
{
	return ((uint64_t)id.nid << 32) | id.pid;
}

uint64_t shm_now_ns(void);

/* Pre-fault ring `idx` of `seg` (ours: an inbound ring being attached; a
 * peer's: the ring we just claimed in it) while ni_prefault_left lasts:
 * the first lap of a ring otherwise allocates and maps one page per 4 KiB
 * of records on each side inside the caller's message loop (init.c). */
void shm_ring_prefault(struct shm_ni *ni, const struct shm_seg *seg, uint32_t idx);

extern const struct p3_nal_ops p3_nal_shmem_ops;

/* send.c */
struct shm_peer *shm_peer_lookup(struct shm_ni *ni, ptl_process_id_t id, int create);
int shm_send(void *priv, struct p3_msg *msg, const struct p3_hdr *hdr, const struct iovec *iov,
             size_t niov, uint64_t offset, uint64_t len);
int shm_send_now(void *priv, const struct p3_hdr *hdr, const struct iovec *iov, size_t niov,
                 uint64_t offset, uint64_t len);
int shm_send_done(struct shm_ni *ni, struct shm_peer *peer, uint64_t seq, ptl_ni_fail_t status,
                  uint64_t bytes);
int shm_peer_drain(struct shm_ni *ni, struct shm_peer *peer);
void shm_peer_fail(struct shm_ni *ni, struct shm_peer *peer, ptl_ni_fail_t status);
int shm_peer_check(struct shm_ni *ni, struct shm_peer *peer, uint64_t now);
int shm_peer_cma_done(struct shm_ni *ni, struct shm_peer *peer, uint64_t seq, ptl_ni_fail_t status);
/* Receiver -> sender: ask it to push chunks of message seq (a COOP record). */
int shm_send_coop(struct shm_ni *ni, struct shm_peer *peer, const struct shm_coop *cp);
/* Sender: a COOP record from peer; push what can be claimed. 0 or -EPROTO. */
int shm_peer_coop(struct shm_ni *ni, struct shm_peer *peer, const struct shm_coop *cp);
void shm_peer_wake_producer(struct shm_ni *ni, struct shm_peer *peer);
void shm_peer_release(struct shm_peer *peer);
/* pr_busy from the peer's queues and records (pr_lock held) */
void shm_peer_set_busy_locked(struct shm_ni *ni, struct shm_peer *peer);

/* await.c: requests whose target owes an ACK or REPLY (all but
 * shm_await_answered/shm_await_lost with the peer's pr_lock held) */
struct shm_await;
/* before the request is pushed; -ENOMEM */
int shm_await_add_locked(struct shm_peer *peer, struct p3_msg *msg, const struct p3_hdr *hdr);
/* msg is finalized with PTL_NI_OK: its record waits for the answer */
void shm_await_sent_locked(struct shm_peer *peer, struct p3_msg *msg);
/* msg failed or was not sent: its own event reports it, drop the record */
void shm_await_drop_locked(struct shm_peer *peer, struct p3_msg *msg);
/* an ACK or REPLY header arrived (before p3_lib_parse): its record ends */
void shm_await_answered(struct shm_ni *ni, const struct p3_hdr *hdr);
/* unlink every record of the peer (its incarnation is gone) */
struct shm_await *shm_await_take_all_locked(struct shm_peer *peer);
/* post the lost answers of `list` with status (0: none, only free) */
void shm_await_lost(struct shm_ni *ni, ptl_process_id_t target, struct shm_await *list,
                    ptl_ni_fail_t status);

/* recv.c */
int shm_recv(void *priv, struct p3_msg *msg, void *nal_ctx, const struct iovec *iov, size_t niov,
             uint64_t offset, uint64_t mlen, uint64_t rlen);
int shm_rx_record(struct shm_ni *ni, uint32_t idx, struct shm_rx *rx, const struct shm_rec *rec,
                  uint32_t len);
void shm_rx_fail_pipe(struct shm_ni *ni, struct shm_rx *rx, ptl_ni_fail_t status);

/* progress.c */
int shm_progress(void *priv, int timeout_ms);
void shm_wakeup(void *priv);
void shm_doorbell_ring(struct shm_ni *ni, struct shm_seg_hdr *hdr);

/* cma.c */
int shm_cma_probe_self(void);
int shm_cma_probe_peer(uint32_t ospid, uint64_t addr, uint64_t value);
uint64_t shm_cma_probe_addr(void);
uint64_t shm_cma_probe_value(void);
/* Pull `len` bytes from the remote iovec into the local one at `offset`.
 * 0, or -errno (-ESRCH: the process is gone, -EFAULT: bad addresses,
 * -EPERM: not permitted, -EPROTO: remote iovec shorter than len). */
int shm_cma_read(uint32_t ospid, const struct iovec *liov, size_t lniov, uint64_t loffset,
                 const struct shm_cma_iov *riov, size_t rniov, uint64_t len);
/* The general form: `write` pushes local -> remote (process_vm_writev),
 * otherwise pulls; both iovecs entered at their offsets. */
int shm_cma_copy(uint32_t ospid, int write, const struct iovec *liov, size_t lniov,
                 uint64_t loffset, const struct shm_cma_iov *riov, size_t rniov, uint64_t roffset,
                 uint64_t len);
/* Claim a chunk word of generation gen: FREE -> BUSY (acquire), or false. */
static inline int shm_coop_claim(_Atomic uint32_t *word, uint32_t gen)
{
	uint32_t expect = gen << 2 | SHM_COOP_FREE;
	return atomic_compare_exchange_strong_explicit(word, &expect, gen << 2 | SHM_COOP_BUSY,
	                                               memory_order_acquire, memory_order_relaxed);
}

/* Publish a claimed chunk: DONE (release: the copied bytes before it), or
 * FREE again to hand it back. */
static inline void shm_coop_settle(_Atomic uint32_t *word, uint32_t gen, uint32_t state)
{
	atomic_store_explicit(word, gen << 2 | state, memory_order_release);
}

/* The chunk words of slot `slot` of a segment's cooperative-copy area. */
static inline _Atomic uint32_t *shm_coop_words(void *seg_base, uint32_t slot)
{
	return (_Atomic uint32_t *)((uint8_t *)seg_base + SHM_COOP_OFF + slot * SHM_COOP_STRIDE);
}

/* iovec helpers (recv.c) */
void shm_iov_copy_in(const struct iovec *iov, size_t niov, uint64_t offset, const void *src,
                     uint64_t len);
void shm_iov_copy_out(void *dst, const struct iovec *iov, size_t niov, uint64_t offset,
                      uint64_t len);
/* The payload of a SMALL record (len <= SHM_SMALL_MAX, 8): from one iovec
 * inline, as two overlapping loads and stores; the call to
 * shm_iov_copy_out and libc's memcpy for a 1-byte put was ~30 instructions
 * on the send's way into the ring.  Anything else: shm_iov_copy_out.
 * (a 0-byte put has no iovec: nothing to do, no call) */
static inline void shm_small_copy_out(uint8_t *dst, const struct iovec *iov, size_t niov,
                                      uint64_t offset, uint64_t len)
{
	if (len == 0) /* a 0-byte put (no iovec) */
		return;
	if (niov != 1 || len > 8 || offset + len > iov[0].iov_len) {
		shm_iov_copy_out(dst, iov, niov, offset, len);
		return;
	}
	p3_copy_small(dst, (const uint8_t *)iov[0].iov_base + offset, (size_t)len);
}

#endif /* P3_SHMEM_H */
