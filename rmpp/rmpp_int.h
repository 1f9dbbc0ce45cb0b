/* SPDX-License-Identifier: BSD-3-Clause */
/* rmpp_int.h - private structures of the rmpp library (not installed). */
#ifndef RMPP_INT_H
#define RMPP_INT_H

#include "rmpp.h"
#include "rmpp_wire.h"
#include "rmpp_auth.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

/* ---- logging -------------------------------------------------------------- */

enum { RMPP_LOG_ERR = 0, RMPP_LOG_WARN, RMPP_LOG_INFO, RMPP_LOG_DEBUG, RMPP_LOG_TRACE };

void rmpp_log_emit(int level, const struct rmpp_ep *ep, const struct rmpp_addr *peer,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Cheap when off; keeps errno. */
#define rmpp_log(ep, lvl, peer, ...)                                                             \
	do {                                                                                     \
		if ((int)(lvl) <= rmpp_log_level(ep)) {                                          \
			int rmpp_saved_errno_ = errno;                                           \
			rmpp_log_emit((lvl), (ep), (peer), __VA_ARGS__);                         \
			errno = rmpp_saved_errno_;                                               \
		}                                                                                \
	} while (0)

/* ---- clock ------------------------------------------------------------------ */

static inline uint64_t rmpp_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ---- path profile (pathprof.c) ------------------------------------------- */

extern int rmpp_pathprof_on_; /* set once, by rmpp_pathprof_init */
void rmpp_pathprof_init(void);
void rmpp_pathprof_start_(struct rmpp_ep *ep);
#define RMPP_PP_START(ep)                                                                          \
	do {                                                                                       \
		if (__builtin_expect(rmpp_pathprof_on_, 0))                                        \
			rmpp_pathprof_start_(ep);                                                  \
	} while (0)
#define RMPP_PP_MARK(ep, pt)                                                                       \
	do {                                                                                       \
		if (__builtin_expect(rmpp_pathprof_on_, 0))                                        \
			rmpp_pathprof_mark((ep), (pt));                                            \
	} while (0)
/* The open path of an endpoint (one thread receives and answers). */
struct rmpp_pathprof_path {
	uint64_t t0; /* 0: no path open */
	uint64_t at[RMPP_PP_NPOINTS];
	uint32_t hit;
};

/* ---- links ---------------------------------------------------------------- */

struct rmpp_link;

/* A received frame, valid until the next recv call (or release). */
struct rmpp_rxframe {
	uint8_t *data;
	size_t len;
	struct rmpp_addr src;
};

/* A frame to transmit. */
struct rmpp_txframe {
	uint8_t *data; /* the link may write its header in front (headroom) */
	size_t len;
	struct rmpp_addr dst;
	/* The peer knows this endpoint (epoch and address from its HELLO): the
	 * link may send from another local address (udp: a socket connected to
	 * the peer, which skips the route lookup of every unconnected sendto);
	 * the receiver finds the connection by (ip, src_ep, src_epoch). */
	bool direct;
};

struct rmpp_link_ops {
	size_t size;
	const char *name;
	/* Open the link; fills l->fd, l->mtu, l->self. */
	int (*open)(struct rmpp_link *l, const struct rmpp_ep_attr *attr,
		    const struct rmpp_config *cfg);
	/* Up to n frames, non-blocking.  Returns count (>= 0) or -errno. */
	int (*recv)(struct rmpp_link *l, struct rmpp_rxframe *frames, int n);
	/* Frames handed back by recv are no longer referenced. */
	void (*release)(struct rmpp_link *l);
	/* Send n frames; returns how many were accepted (>= 0) or -errno. */
	int (*send)(struct rmpp_link *l, const struct rmpp_txframe *frames, int n);
	void (*close)(struct rmpp_link *l);
	/* How the link runs ("xdp native copy queue 0"); NULL: the name. */
	const char *(*desc)(struct rmpp_link *l);
	/* Refresh counters the kernel keeps (xdp: XDP_STATISTICS); NULL: none. */
	void (*stats)(struct rmpp_link *l, struct rmpp_counters *ctr);
};

struct rmpp_link {
	const struct rmpp_link_ops *ops;
	struct rmpp_ep *ep;
	int fd;
	/* Readable when a frame reached one of the link's other sockets (udp:
	 * a RESET a peer sent back to a direct frame's source); -1 if none.
	 * recv() reads them when poll_aux is set (the endpoint sets it every
	 * millisecond and after blocking). */
	int aux_fd;
	bool poll_aux;
	size_t mtu; /* largest rmpp frame on this link */
	struct rmpp_addr self;
	int require_crc;
	void *priv;
};

extern const struct rmpp_link_ops rmpp_link_udp_ops;
extern const struct rmpp_link_ops rmpp_link_ether_ops;
#ifdef RMPP_HAVE_XDP
extern const struct rmpp_link_ops rmpp_link_xdp_ops;
#endif

/* ---- fault shim ------------------------------------------------------------- */

struct rmpp_held; /* a frame held back by the shim */

/* Default burst_us: a loss event drops its burst=A-B frames, or those of
 * its first 10 ms, whichever ends first.  A burst is a congestion episode
 * (Cplant's 1..22 frames in a row: a switch buffer overflowing during a
 * flight), not an outage: counted in frames alone, a burst that began at a
 * flight's tail went on eating the one retransmission per backed-off RTO
 * and the peer's 100 ms keepalives that were all the link still carried,
 * for seconds (tests/wire/faults.sh `burst`: 9.7 s in CI; 1.5-21 s in 18 of
 * 20 runs at drop=0.02,burst=15-22).  10 ms still swallows the tail-loss
 * probe and the first RTO resends (1, 2, 4 ms after), which the case is
 * there to exercise. */
#define RMPP_FAULT_BURST_US 10000

struct rmpp_fault {
	int enabled;
	double drop, dup, reorder, corrupt, truncate, pad;
	unsigned burst_min, burst_max;
	uint64_t burst_us; /* a loss event ends this long after it began (0: by count only) */
	uint64_t delay_us;
	unsigned only;   /* kinds the random faults act on (0: every frame) */
	uint64_t maxlen; /* drop frames longer than this (0: off) */
	uint64_t seed;
	uint64_t rng;
	unsigned burst_left;
	uint64_t burst_end; /* ep->now at which the current loss event ends (burst_us) */
	uint64_t index;
	rmpp_fault_fn hook;
	void *hook_arg;
	struct rmpp_held *held; /* sorted by release time */
};

int rmpp_fault_parse(struct rmpp_fault *f, const char *spec);
/* Run one received frame through the shim; calls rmpp_ep_rx_frame() for each
 * frame to deliver now (0, 1 or 2 times). */
void rmpp_fault_rx(struct rmpp_ep *ep, const struct rmpp_rxframe *fr);
/* Release held frames whose time has come; returns next release time or 0. */
uint64_t rmpp_fault_poll(struct rmpp_ep *ep, uint64_t now);
void rmpp_fault_free(struct rmpp_fault *f);

/* ---- message layer -------------------------------------------------------------- */

/* iovec entries kept inside a message descriptor (more: malloc) */
#define RMPP_IOV_INLINE 4
/* descriptors kept on the endpoint's free lists (no malloc per message) */
#define RMPP_MSG_FREE_MAX 256

/* A message being sent. */
struct rmpp_txmsg {
	struct rmpp_txmsg *next;      /* queue link (txq or rndv list) */
	struct rmpp_txmsg *rprev;     /* rndv list: previous (the list is doubly linked) */
	struct rmpp_txmsg *anext, *aprev; /* conn->tx_all: every unfinished send */
	uint32_t msn;
	uint8_t hdr[RMPP_MAX_HDR];
	uint16_t hdr_len;
	bool rndv;
	bool first_sent;   /* EAGER_FIRST / RTS queued */
	bool done_rcvd;    /* rendezvous: DONE arrived */
	bool in_rndv_list;
	struct iovec *iov;
	size_t niov;
	uint64_t data_off;  /* message byte 0 is at this offset into iov */
	uint64_t len;
	uint64_t sent;      /* payload bytes packetised */
	uint64_t accepted;  /* rendezvous: from CTS/DONE */
	uint64_t grant_end; /* rendezvous: may send below this */
	unsigned refs;      /* ring entries referencing this message */
	void *cookie;
	/* rmpp_send_carry: held messages whose headers travel in this one's
	 * (linked by next, oldest first); they complete with it */
	struct rmpp_txmsg *carried;
	struct iovec iov_inline[RMPP_IOV_INLINE];
};

/* A message being received. */
struct rmpp_rxmsg {
	struct rmpp_rxmsg *next;
	uint32_t msn;
	uint64_t len;
	uint64_t accepted;
	uint64_t rcvd;      /* payload bytes seen (accepted or not) */
	uint64_t grant_end; /* rendezvous: granted so far */
	uint64_t grant_sz;
	bool rndv;
	struct iovec *iov;
	size_t niov;
	uint64_t iov_off; /* message byte 0 lands at this offset into iov */
	void *cookie;
	/* rmpp_send_carry: held messages whose headers travel in this one's
	 * (linked by next, oldest first); they complete with it */
	struct rmpp_txmsg *carried;
	struct iovec iov_inline[RMPP_IOV_INLINE];
};

/* A control operation waiting for a PSN (CTS, DONE, NAK). */
struct rmpp_ctrl {
	uint8_t mop;
	uint32_t msn, msg_len, offset, arg;
};

/* ---- reliable-packet layer ------------------------------------------------------------- */

enum { TXE_FREE = 0, TXE_INFLIGHT, TXE_SACKED };

/* One sent, unacknowledged packet: a description, rebuilt on retransmit. */
struct rmpp_txent {
	uint8_t state;
	uint8_t mop;
	uint8_t retx;
	bool last;            /* last packet of an eager message */
	bool lost;            /* marked lost, retransmission pending */
	uint32_t msn;
	uint32_t msg_len;
	uint32_t offset;
	uint32_t len;         /* data bytes */
	uint32_t arg;
	uint64_t tx_us;       /* last (re)transmission */
	uint64_t tx_seq;      /* transmission order (RACK "sent before") */
	struct rmpp_txmsg *msg; /* EAGER_*, RTS, RDATA */
};

/* A packet received but not consumed yet: ahead of a hole, or behind a
 * deferred header.  Out-of-order RDATA of a message whose buffer is known is
 * placed at once and the slot keeps only what the in-order pass needs
 * (placed; buf points to rmpp_slot_placed); anything else is a copy. */
struct rmpp_rxslot {
	uint8_t *buf; /* the frame, or &rmpp_slot_placed */
	uint32_t len;
	bool placed;
	uint32_t msn, offset, dlen; /* placed RDATA */
};
extern uint8_t rmpp_slot_placed;

/* RFC 6298 estimator (exported for the unit tests). */
struct rmpp_rtt {
	uint64_t srtt_us, rttvar_us, rto_us;
	bool have;
};

enum rmpp_conn_state {
	CONN_HELLO = 1,   /* HELLO sent, peer epoch unknown or peer does not know us */
	CONN_ESTABLISHED, /* both sides know each other's epoch */
	CONN_DEAD,        /* peer declared dead; sends fail until forgotten */
};

struct rmpp_conn {
	struct rmpp_conn *hnext; /* hash chain */
	struct rmpp_conn *nhnext; /* node hash chain (ep->nhash) */
	struct rmpp_conn *lnext; /* all connections */
	struct rmpp_addr peer;
	enum rmpp_conn_state state;
	uint32_t peer_epoch; /* 0: unknown */
	uint32_t peer_isn;   /* the ISN of the peer's connection we learned */
	bool peer_known;     /* we know peer epoch/ISN */
	bool peer_knows_us;  /* peer sent dst_epoch == ours */
	bool peer_crc;
	struct rmpp_replay replay; /* P3_RMPP_AUTH: seqs seen from this peer */
	uint32_t mtu;        /* frame size towards this peer */
	/* path-MTU probing in the handshake (rel_hello.c) */
	uint32_t probe_mtu;   /* size our HELLO probes are padded to */
	unsigned probe_tries; /* unanswered rounds at probe_mtu while the peer answers */
	bool path_ok;         /* the peer reported a probe of ours: mtu is confirmed */

	/* sender */
	uint32_t isn, snd_una, snd_nxt;
	uint32_t peer_edge; /* may send PSN < peer_edge */
	bool peer_edge_valid;
	struct rmpp_txent *ring; /* tx_window entries, index psn & mask */
	uint32_t nsacked;        /* entries in SACKED state */
	uint32_t nlost;          /* entries marked lost */
	struct rmpp_rtt rtt;
	uint64_t min_rtt_us;
	unsigned n_timeouts; /* consecutive */
	uint64_t silent_since; /* time of the first of those timeouts */
	uint64_t tx_seq_next, rack_xmit_seq, rack_rtt_us;
	/* PSNs below sack_high are known delivered or overtaken by a delivered
	 * one: only they can be judged lost (RACK) */
	uint32_t sack_high;
	bool sack_high_valid;
	uint64_t ka_at, ka_us; /* keepalive while operations wait on the peer */
	unsigned reo_mult;
	uint64_t last_tx_us;
	uint64_t rto_at, tlp_at, reo_at, persist_at, delack_at, hello_at;
	uint64_t persist_us;
	bool tlp_out;
	bool echo_pending; /* the peer spoke this batch with data of ours in flight */
	bool credit_blocked;

	/* receiver */
	uint32_t rcv_nxt, rcv_cons, rcv_edge;
	struct rmpp_rxslot *rxring;
	uint32_t nbuffered;
	unsigned unacked;
	uint32_t ts_recent;
	uint64_t ts_recent_at; /* when ts_recent arrived (ep->now): echoes go stale */
	bool ack_now;
	bool dsack_pending;
	struct rmpp_sack dsack;
	uint32_t last_adv_credit;
	bool rx_stalled;
	bool probe_rcvd;
	unsigned rnr_sent;

	/* message layer: send */
	uint32_t tx_msn;
	struct rmpp_txmsg *txq_head, *txq_tail; /* first packet not yet (fully) sent */
	struct rmpp_txmsg *rndv_head, *rndv_tail; /* rendezvous in progress, msn order */
	struct rmpp_txmsg *tx_all;              /* every unfinished send */
	struct rmpp_txmsg *lazy_head, *lazy_tail; /* RMPP_SEND_LAZY, no msn yet */
	uint64_t lazy_due;                        /* when the oldest must go */
	struct rmpp_ctrl *ctrlq;                  /* ring: ctrl_n entries from ctrl_head */
	unsigned ctrl_head, ctrl_n, ctrl_cap;
	/* message layer: receive */
	uint32_t rx_msn;
	struct rmpp_rxmsg *rx_eager; /* eager message being filled */
	struct rmpp_rxmsg *rx_rndv;  /* rendezvous messages being filled, oldest first */
	struct rmpp_rxmsg *rx_rndv_tail;
	/* the user waits on this peer outside rmpp (a Portals ACK):
	 * rmpp_peer_watch(); kept under keepalive while > 0 */
	unsigned watch;
	bool in_work;                /* on the ep work list */
	struct rmpp_conn *wnext;
};

/* ---- endpoint ----------------------------------------------------------------- */

#define RMPP_CONN_HASH 256
/* Smallest frame any endpoint accepts (config MTU minimum, link minimum). */
#define RMPP_MIN_MTU 512

struct rmpp_ep {
	pthread_mutex_t lock; /* recursive; protects everything below */
	struct rmpp_config cfg;
	struct rmpp_callbacks cb;
	struct rmpp_link link;
	uint16_t ep_id;
	uint32_t epoch;
	struct rmpp_auth auth; /* P3_RMPP_AUTH: trailer on every frame */
	int log_level;
	int wake_fd;  /* eventfd */
	int epoll_fd; /* link fd + wake fd (+ timer fd) */
	int timer_fd;
	bool timer_armed_wanted; /* rmpp_ep_fd() was called */
	uint64_t timer_armed_at;
	_Atomic bool wake_posted; /* rmpp_wakeup wrote wake_fd since pass() read it */
	unsigned depth;       /* nesting of entry points (upcalls) */
	unsigned blocked;     /* threads blocked in ppoll (lock dropped) */
	uint64_t upcalls;     /* upcalls run so far (progress returns the delta) */
	struct rmpp_conn *hash[RMPP_CONN_HASH];
	struct rmpp_conn *nhash[RMPP_CONN_HASH]; /* by node and endpoint id (direct frames) */
	uint64_t aux_polled_at;                  /* last time the link's other sockets were read */
	struct rmpp_conn *conns;
	unsigned nconns;
	struct rmpp_conn *work; /* connections with output pending */
	uint32_t rx_buffered;   /* packets held in reorder slots, all conns */
	struct rmpp_counters ctr;
	struct rmpp_fault fault;
	uint64_t now;     /* cached clock of the current pass (rmpp_ep_clock) */
	uint64_t now_tsc; /* TSC when `now` was read (x86) */
	/* Earliest protocol deadline of any connection, or earlier (0: none
	 * known); every deadline armed outside the timer walk lowers it
	 * (rmpp_timer_arm).  The walk over the connections runs when it is due,
	 * not on every pass: see ep_progress.c timers_due(). */
	uint64_t timers_next;
	uint64_t timers_ran; /* `now` of the last walk */
	struct rmpp_pathprof_path pp;
	bool timers_force;   /* walk on the next pass */
	/* transmit batch */
	uint8_t *txbuf;
	size_t txbuf_stride;
	struct rmpp_txframe *txf;
	unsigned ntx;
	/* receive batch */
	struct rmpp_rxframe *rxf;
	bool destroying;
	/* free lists of message descriptors (msg.c) */
	struct rmpp_txmsg *tx_free;
	struct rmpp_rxmsg *rx_free;
	unsigned tx_nfree, rx_nfree;
};

/* Arm a connection's deadline *slot at `at` (absolute, microseconds) and
 * make sure the timer walk runs by then. */
static inline void rmpp_timer_arm(struct rmpp_ep *ep, uint64_t *slot, uint64_t at)
{
	*slot = at;
	if (!ep->timers_next || at < ep->timers_next)
		ep->timers_next = at;
}

/* A reading younger than this many TSC cycles (2 us at 2 GHz, 4 us at the
 * slowest 1 GHz clock) is reused: the shortest deadline (LAZY_US, 20 us) and
 * the RTO's lower bound (RTO_MIN_US, 1 ms) tolerate that much; a receive
 * syscall plus the delivery of its message take about 3000 cycles here. */
#define RMPP_CLOCK_REUSE_CYCLES 4000u

/* Stamp ep->now.  A clock_gettime through the vDSO costs ~140 cycles here,
 * an rdtsc ~25, and a request/response message took three readings (pass,
 * after its batch, the answer's send) less than a microsecond apart.  A TSC
 * that went backwards (migration) wraps the difference: the clock is read. */
static inline void rmpp_ep_clock(struct rmpp_ep *ep)
{
#if defined(__x86_64__) || defined(__i386__)
	uint64_t t = __rdtsc();
	if (t - ep->now_tsc < RMPP_CLOCK_REUSE_CYCLES)
		return;
	ep->now_tsc = t;
#endif
	uint64_t us = rmpp_now_us();
	if (us > ep->now)
		ep->now = us;
}

/* msg.c: message descriptors from the endpoint's free lists (lock held);
 * zeroed, iov pointing at room for niov entries.  NULL: out of memory. */
struct rmpp_txmsg *rmpp_txmsg_alloc(struct rmpp_ep *ep, size_t niov);
void rmpp_txmsg_free(struct rmpp_ep *ep, struct rmpp_txmsg *m);
struct rmpp_rxmsg *rmpp_rxmsg_alloc(struct rmpp_ep *ep, size_t niov);
void rmpp_rxmsg_free(struct rmpp_ep *ep, struct rmpp_rxmsg *rx);
void rmpp_msg_pools_free(struct rmpp_ep *ep);

static inline int rmpp_log_level(const struct rmpp_ep *ep)
{
	return ep ? ep->log_level : RMPP_LOG_WARN;
}

/* Room for a link header in front of each frame of the transmit batch. */
#define RMPP_LINK_HEADROOM 16

/* ep_conn.c: the connection table */
struct rmpp_conn *rmpp_conn_find(struct rmpp_ep *ep, const struct rmpp_addr *peer);
/* The connection a direct frame from src belongs to (udp: the peer's
 * connected send socket, any port), or NULL. */
struct rmpp_conn *rmpp_conn_find_direct(struct rmpp_ep *ep, const struct rmpp_addr *src,
                                        uint32_t src_epoch);
/* A new connection to peer in the table (HELLO state); NULL: no memory. */
struct rmpp_conn *rmpp_conn_create(struct rmpp_ep *ep, const struct rmpp_addr *peer);
void rmpp_conn_want_output(struct rmpp_ep *ep, struct rmpp_conn *c);
/* ep_progress.c: output of every connection on the work list, then flush. */
void rmpp_ep_run_output(struct rmpp_ep *ep);
/* Release every held (lazy) message; true if there were any. */
bool rmpp_ep_release_lazy(struct rmpp_ep *ep);
/* ep_frame.c */
void rmpp_ep_rx_frame(struct rmpp_ep *ep, const uint8_t *data, size_t len,
		      const struct rmpp_addr *src);
uint8_t *rmpp_ep_tx_slot(struct rmpp_ep *ep, const struct rmpp_addr *dst);
void rmpp_ep_tx_commit(struct rmpp_ep *ep, size_t len, bool direct);
void rmpp_ep_tx_flush(struct rmpp_ep *ep);

/* rel*.c - reliable-packet layer (the files: rmpp_rel.h) */
int rmpp_rel_conn_init(struct rmpp_ep *ep, struct rmpp_conn *c);
void rmpp_rel_conn_reset(struct rmpp_ep *ep, struct rmpp_conn *c);
void rmpp_rel_conn_free(struct rmpp_ep *ep, struct rmpp_conn *c);
/* wire_len: bytes received, link padding included (HELLO probes) */
void rmpp_rel_rx(struct rmpp_ep *ep, struct rmpp_conn *c, const struct rmpp_pkt *pkt,
		 const uint8_t *frame, size_t wire_len);
/* RESET or CLOSE to `to`.  refused: for a RESET, the dst_epoch of the frame
 * it answers (the incarnation of ours the peer addressed; carried in psn) so
 * that the peer can tell a RESET of its current view of us from one
 * answering a frame it sent to an earlier incarnation; 0 for a CLOSE. */
void rmpp_rel_send_reset(struct rmpp_ep *ep, const struct rmpp_addr *to, uint32_t dst_epoch,
			 uint16_t dst_ep, unsigned type, uint32_t refused);
void rmpp_rel_output(struct rmpp_ep *ep, struct rmpp_conn *c);
uint64_t rmpp_rel_timers(struct rmpp_ep *ep, struct rmpp_conn *c, uint64_t now);
bool rmpp_rel_can_send(struct rmpp_ep *ep, struct rmpp_conn *c);
void rmpp_rtt_sample(struct rmpp_rtt *r, uint64_t sample_us, uint64_t g_us, uint64_t min_us,
		     uint64_t max_us);
/* Queue a new sequenced packet described by *e; returns its PSN. */
uint32_t rmpp_rel_send_new(struct rmpp_ep *ep, struct rmpp_conn *c, const struct rmpp_txent *e);
void rmpp_rel_send_ack(struct rmpp_ep *ep, struct rmpp_conn *c, unsigned mop_rnr);
void rmpp_rel_update_edge(struct rmpp_ep *ep, struct rmpp_conn *c);
void rmpp_rel_consume(struct rmpp_ep *ep, struct rmpp_conn *c);
/* Peer failure: fail everything, reset sequence state. */
void rmpp_conn_fail(struct rmpp_ep *ep, struct rmpp_conn *c, enum rmpp_peer_event ev,
		    uint32_t new_epoch);

/* msg.c - message layer */
/* Deliver one in-order packet; returns 0 consumed, 1 stalled (deferred). */
int rmpp_msg_rx(struct rmpp_ep *ep, struct rmpp_conn *c, const struct rmpp_pkt *pkt);
/* RDATA (or EAGER_CONT of the eager message being received) ahead of a hole:
 * place its bytes now if its message is known and the range lies in its
 * grant (in the message) (returns true); rmpp_msg_rdata_placed() accounts
 * for them in PSN order. */
bool rmpp_msg_rdata_place(struct rmpp_ep *ep, struct rmpp_conn *c, const struct rmpp_pkt *pkt);
void rmpp_msg_rdata_placed(struct rmpp_ep *ep, struct rmpp_conn *c, uint32_t msn, uint32_t offset,
                           uint32_t len);
/* Emit packets while the window allows. */
void rmpp_msg_output(struct rmpp_ep *ep, struct rmpp_conn *c);
/* Give M its message sequence number and queue it for output. */
void rmpp_msg_enqueue(struct rmpp_ep *ep, struct rmpp_conn *c, struct rmpp_txmsg *m);
/* Hold M (rmpp_send_lazy) until rmpp_msg_lazy_release() or LAZY_US. */
void rmpp_msg_lazy_hold(struct rmpp_ep *ep, struct rmpp_conn *c, struct rmpp_txmsg *m);
/* Queue every held message of C, oldest first. */
void rmpp_msg_lazy_release(struct rmpp_ep *ep, struct rmpp_conn *c);
/* Move held messages into M's header (rmpp_send_carry); M is not queued yet. */
void rmpp_msg_lazy_carry(struct rmpp_ep *ep, struct rmpp_conn *c, struct rmpp_txmsg *m,
			 size_t carry_len);
bool rmpp_msg_has_output(struct rmpp_conn *c);
/* A ring entry left the window (acked, or dropped on failure). */
void rmpp_msg_entry_done(struct rmpp_ep *ep, struct rmpp_conn *c, struct rmpp_txent *e);
void rmpp_msg_fail_all(struct rmpp_ep *ep, struct rmpp_conn *c, int status);
void rmpp_msg_ctrl(struct rmpp_ep *ep, struct rmpp_conn *c, uint8_t mop, uint32_t msn,
		   uint32_t msg_len, uint32_t offset, uint32_t arg);
void rmpp_msg_rnr(struct rmpp_ep *ep, struct rmpp_conn *c, uint32_t backoff_us);

#endif /* RMPP_INT_H */
