/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rmpp.h - public API of the rmpp reliable message protocol library.
 *
 * rmpp moves messages = (a small opaque header, a payload) between endpoints
 * over an unreliable datagram link (UDP, or raw Ethernet through AF_PACKET).
 * It is transport agnostic: it knows nothing about Portals; nal/rmpp glues it
 * to the Portals LIB side.  The protocol is described in rmpp/README.md.
 *
 * Guarantees, per connection (local endpoint, remote endpoint):
 *   - every message is delivered at most once, and exactly once unless the
 *     peer fails (dies or restarts), in which case the sender's completion
 *     reports an error and the peer-failure upcall runs;
 *   - header upcalls run strictly in send order;
 *   - the receiver decides, per message, where the data goes and how much of
 *     it it accepts (receiver-side truncation); for rendezvous messages only
 *     the accepted bytes cross the wire.
 *
 * Threading: an endpoint is protected by one (recursive) lock.  All entry
 * points may be called from any thread.  Upcalls run from inside
 * rmpp_progress() (or rmpp_send() / rmpp_peer_resume()) with that lock held:
 * an upcall may call rmpp_send() and rmpp_peer_resume() on the same endpoint,
 * but must not wait for another thread that uses the endpoint.
 *
 * Return values: 0 or a negative errno value, unless documented otherwise.
 */
#ifndef RMPP_H
#define RMPP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/uio.h>
#include <netinet/in.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest message header (opaque bytes handed to the header upcall). */
#define RMPP_MAX_HDR 256
/* EtherType used on raw Ethernet (IEEE local experimental 1). */
#define RMPP_ETHERTYPE 0x88B5

struct rmpp_ep;

/* ---- addresses -------------------------------------------------------- */

enum rmpp_link_type {
	RMPP_LINK_UDP = 1,   /* UDP over IPv4 */
	RMPP_LINK_ETHER = 2, /* raw Ethernet frames, EtherType RMPP_ETHERTYPE */
	/* The same raw Ethernet frames through an AF_XDP socket (UMEM rings, an
	 * XDP program steering RMPP_ETHERTYPE to it).  Only an endpoint attribute:
	 * its addresses are RMPP_LINK_ETHER ones, so xdp and ether endpoints talk
	 * to each other. */
	RMPP_LINK_XDP = 3,
};

/*
 * Address of an endpoint: link address plus a 16-bit endpoint id (several
 * endpoints can share one Ethernet interface; on UDP the id is carried and
 * checked but the port already identifies the endpoint).  Treat as opaque;
 * build with rmpp_addr_udp() / rmpp_addr_ether(), compare with
 * rmpp_addr_equal().
 */
struct rmpp_addr {
	uint16_t ra_link; /* enum rmpp_link_type */
	uint16_t ra_ep;   /* endpoint id */
	union {
		struct {
			uint32_t ip;   /* network byte order */
			uint16_t port; /* network byte order */
		} udp;
		uint8_t mac[6];
	} u;
};

/* ip_be/port_be in network byte order. */
void rmpp_addr_udp(struct rmpp_addr *addr, uint32_t ip_be, uint16_t port_be, uint16_t ep_id);
void rmpp_addr_ether(struct rmpp_addr *addr, const uint8_t mac[6], uint16_t ep_id);
int rmpp_addr_equal(const struct rmpp_addr *a, const struct rmpp_addr *b);
/* "udp:127.0.0.1:4000/7" or "ether:02:00:00:00:00:01/7"; returns buf. */
const char *rmpp_addr_str(const struct rmpp_addr *addr, char *buf, size_t len);
/* The MAC address of IPv4 address ip (host byte order) on interface ifname,
 * from the kernel's neighbour table (complete entries only; nothing ARPs for
 * raw frames, so static entries are expected).  0, -EHOSTUNREACH (no entry)
 * or -errno (table unreadable).  neigh.c */
int rmpp_neigh_lookup(const char *ifname, uint32_t ip, uint8_t mac[6]);
/* The IPv4 address (host byte order) of interface ifname: 0 or -ENODEV (no
 * such interface or no address).  neigh.c */
int rmpp_iface_ipv4(const char *ifname, uint32_t *ip);

/* ---- configuration ----------------------------------------------------- */

/*
 * The configuration table: X(NAME, field, default, min, max, help).  Every
 * entry can be overridden with the environment variable P3_RMPP_<NAME>.
 * Times are in microseconds, sizes in bytes unless the name says otherwise.
 */
#define RMPP_CONFIG_TABLE(X)                                                                       \
	X(MTU, mtu, 9000, 512, 65000,                                                              \
	  "largest rmpp frame (bytes, link headers excluded); "                                    \
	  "clipped to the interface MTU, the peer's offer and the HELLO probes")                   \
	X(EAGER_LIMIT, eager_limit, 16384, 0, 1048576,                                             \
	  "messages up to this size are sent eagerly, larger ones by RTS/CTS")                     \
	X(SOLICITED_EAGER_MAX, solicited_eager_max, 262144, 0, 1048576,                            \
	  "a message sent with RMPP_SEND_SOLICITED (the Portals NALs' REPLYs) goes eagerly up to " \
	  "this size, above EAGER_LIMIT: no RTS/CTS round trip; larger ones by RTS/CTS; 0 = off")  \
	X(GRANT, grant, 262144, 1024, 1073741824,                                                  \
	  "bytes granted per CTS; the next CTS is sent when half is consumed")                     \
	X(TX_WINDOW, tx_window, 1024, 16, 65536,                                                   \
	  "per-connection packet ring (unacked packets, reorder slots); power of 2")               \
	X(RX_MIN_CREDIT, rx_min_credit, 64, 1, 65536, "packet credit guaranteed to every peer")    \
	X(RX_POOL, rx_pool, 4096, 0, 1048576, "shared credit pool (packets) split among peers")    \
	X(ACK_EVERY, ack_every, 4, 1, 64, "send a pure ACK after this many in-order segments")     \
	X(DELACK_US, delack_us, 50, 0, 100000, "delayed-ACK timer")                                \
	X(RTO_MIN_US, rto_min_us, 1000, 100, 10000000, "lower bound of the retransmit timeout")    \
	X(RTO_INIT_US, rto_init_us, 10000, 100, 10000000, "retransmit timeout before any RTT")     \
	X(RTO_MAX_US, rto_max_us, 1000000, 1000, 60000000,                                         \
	  "upper bound of the retransmit timeout")                                                 \
	X(REO_MIN_US, reo_min_us, 50, 0, 1000000, "minimum RACK reordering window")                \
	X(KEEPALIVE_US, keepalive_us, 100000, 1000, 60000000,                                      \
	  "max probe interval while operations wait on an otherwise silent peer")                  \
	X(DEAD_TIMEOUTS, dead_timeouts, 15, 1, 1000,                                               \
	  "consecutive timeouts after which a peer is declared dead")                              \
	X(DEAD_MIN_US, dead_min_us, 30000000, 0, 3600000000ULL,                                    \
	  "...and the least time those timeouts must span: a peer in app progress may compute "    \
	  "for seconds without acking")                                                            \
	X(CRC, crc, 1, 0, 1, "UDP: add and require CRC32C (always on for Ethernet)")               \
	X(LAZY_US, lazy_us, 20, 0, 100000,                                                         \
	  "a message sent with rmpp_send_lazy() (the Portals NAL's ACKs) waits at most this long " \
	  "to follow the next message to the same peer; 0 = send at once")                         \
	X(LINGER_US, linger_us, 250000, 0, 60000000,                                              \
	  "destroy/exit: wait at most this long for unfinished sends (held ACKs) to be "           \
	  "acknowledged before the CLOSE")                                                         \
	X(SPIN_US, spin_us, 50, 0, 1000000, "progress spins this long before blocking")            \
	X(SPIN_YIELD, spin_yield, 0, 0, 1,                                                         \
	  "the spin yields the CPU instead of pausing (set by the NALs for a progress thread)")    \
	X(BATCH, batch, 32, 1, 256, "packets per recvmmsg/sendmmsg batch")                         \
	X(SOCKBUF, sockbuf, 8388608, 65536, 1073741824, "SO_SNDBUF/SO_RCVBUF request")             \
	X(SEND_SOCKETS, send_sockets, 64, 0, 4096,                                                 \
	  "udp: peers that get a connected send socket (0: every frame from the bound socket)")    \
	X(GSO, gso, 1, 0, 1,                                                                       \
	  "udp: a run of full-size frames to one peer leaves as one UDP GSO send (UDP_SEGMENT)")   \
	X(ISN, isn, 0, 0, 4294967295ULL, "initial packet sequence number, 0 = random (testing)")   \
	X(ETHER_RING, ether_ring, 2, 0, 2,                                                         \
	  "Ethernet receive: 0 recvmmsg, 1 TPACKET_V3 ring, 2 TPACKET_V2 ring (low latency)")      \
	X(ETHER_BLOCK_TOV_MS, ether_block_tov_ms, 1, 1, 1000,                                      \
	  "Ethernet: TPACKET_V3 block retire timeout (ms)")                                        \
	X(QDISC_BYPASS, qdisc_bypass, 0, 0, 1,                                                     \
	  "Ethernet: PACKET_QDISC_BYPASS (also bypasses egress hooks/nftables)")                   \
	X(XDP_QUEUE, xdp_queue, 0, 0, 255, "xdp: interface receive queue the AF_XDP socket binds")  \
	X(XDP_FRAMES, xdp_frames, 4096, 256, 65536,                                                \
	  "xdp: UMEM frames of 4 KiB (half for receive, half for transmit; >= 8192 for jumbo frames)")                       \
	X(XDP_COPY, xdp_copy, 0, 0, 1, "xdp: 0 zero-copy where the driver allows, 1 copy mode only") \
	X(XDP_SKB, xdp_skb, 2, 0, 2,                                                               \
	  "xdp: 0 attach in native (driver) mode, generic if refused; 1 generic (skb) mode only; 2 generic on veth, else as 0") \
	X(XDP_BUSY_POLL, xdp_busy_poll, 0, 0, 1000,                                                \
	  "xdp: SO_BUSY_POLL microseconds; >0: an empty receive ring is kicked by recvfrom while spinning") \
	X(SEND_CLOSE, send_close, 1, 0, 1, "send CLOSE to established peers on destroy")           \
	X(LOG, log, 1, 0, 4, "log level: 0 error, 1 warn, 2 info, 3 debug, 4 packet trace")

struct rmpp_config {
#define RMPP_CONFIG_FIELD(NAME, field, def, min, max, help) uint64_t field;
	RMPP_CONFIG_TABLE(RMPP_CONFIG_FIELD)
#undef RMPP_CONFIG_FIELD
};

/* Defaults, then P3_RMPP_<NAME> overrides (out-of-range values are clamped
 * and reported).  Returns 0. */
int rmpp_config_init(struct rmpp_config *cfg);
/* Print the table with resolved values and help text. */
void rmpp_config_print(const struct rmpp_config *cfg, FILE *out);

/* ---- counters ----------------------------------------------------------- */

#define RMPP_COUNTERS(X)                                                                           \
	X(tx_pkts, "packets sent")                                                                 \
	X(tx_bytes, "bytes sent (rmpp frames)")                                                    \
	X(rx_pkts, "packets received")                                                             \
	X(rx_bytes, "bytes received (rmpp frames)")                                                \
	X(tx_payload_bytes, "message payload bytes sent, retransmissions included")                \
	X(tx_msgs, "messages completed (send side)")                                               \
	X(rx_msgs, "messages completed (receive side)")                                            \
	X(eager_msgs, "messages sent eagerly")                                                     \
	X(rndv_msgs, "messages sent by RTS/CTS")                                                   \
	X(retx_fast, "fast (RACK) retransmissions")                                                \
	X(retx_rto, "retransmissions on RTO expiry")                                               \
	X(retx_tlp, "tail-loss probes")                                                            \
	X(rto_expired, "RTO expiries")                                                             \
	X(dup_rx, "duplicate packets received")                                                    \
	X(dsack_tx, "DSACK reports sent")                                                          \
	X(dsack_rx, "DSACK reports received")                                                      \
	X(sack_blocks_tx, "SACK blocks sent")                                                      \
	X(sack_blocks_rx, "SACK blocks received")                                                  \
	X(ooo_rx, "out-of-order packets buffered")                                                 \
	X(acks_tx, "pure ACKs sent")                                                               \
	X(acks_rx, "pure ACKs received")                                                           \
	X(csum_drops, "frames dropped: CRC32C mismatch or missing")                                \
	X(malformed_drops, "frames dropped: malformed")                                            \
	X(window_drops, "packets dropped beyond the advertised window")                            \
	X(stale_drops, "packets dropped: unknown or stale epoch")                                  \
	X(credit_stalls, "times the sender ran out of peer credit")                                \
	X(probes_tx, "probes sent (zero window or keepalive)")                                     \
	X(rnr_tx, "RNR replies sent")                                                              \
	X(rnr_rx, "RNR replies received")                                                          \
	X(rx_defers, "header upcalls that deferred (receiver not ready)")                          \
	X(hello_tx, "HELLO/HELLO_ACK sent")                                                        \
	X(resets_tx, "RESET sent")                                                                 \
	X(resets_rx, "RESET received")                                                             \
	X(peers_dead, "peers declared dead")                                                       \
	X(peers_restarted, "peers seen with a new epoch")                                          \
	X(ops_failed, "messages failed because of a peer failure")                                 \
	X(fault_drops, "fault shim: frames dropped")                                               \
	X(fault_dups, "fault shim: frames duplicated")                                             \
	X(fault_reorders, "fault shim: frames held back")                                          \
	X(fault_corrupts, "fault shim: frames corrupted")                                          \
	X(fault_truncs, "fault shim: frames truncated")                                            \
	X(send_errors, "link send errors")                                                         \
	X(mtu_fallbacks, "path-MTU probe size lowered (HELLO probes unanswered, peer alive)")      \
	X(rx_buffered_peak, "most packets ever held in reorder slots at once (all peers)")         \
	X(lazy_held, "messages held by rmpp_send_lazy() to follow the next one")                   \
	X(lazy_carried, "held messages that travelled inside the next one (rmpp_send_carry)")      \
	X(tx_direct, "frames sent from a socket connected to the peer (udp SEND_SOCKETS)")         \
	X(rx_direct, "frames whose source was a peer's connected socket, found by epoch")          \
	X(tx_gso, "udp: datagrams sent with UDP GSO (runs of frames to one peer the kernel cuts)") \
	X(rx_placed, "out-of-order RDATA placed in its message's buffer on arrival")              \
	X(xdp_mode, "xdp: how the link runs (constant): 1 generic copy, 2 native copy, 3 native zero-copy") \
	X(xdp_tx_kicks, "xdp: sendto() calls that made the kernel transmit the TX ring")          \
	X(xdp_rx_kicks, "xdp: recvfrom() calls (fill-ring wakeups and busy-poll kicks)")          \
	X(xdp_tx_full, "xdp: frames not sent at once (no free UMEM frame or TX slot, driver busy)") \
	X(xdp_rx_dropped, "xdp: frames the kernel dropped for this socket (RX ring full, no fill frame; XDP_STATISTICS)") \
	X(linger_passes, "progress passes at destroy/exit carrying unfinished sends (LINGER_US)") \
	X(auth_drops, "frames dropped: MAC trailer missing or wrong (P3_RMPP_AUTH: forged)")      \
	X(replay_drops, "frames dropped: authentic but replayed (P3_RMPP_AUTH: seq seen or old)") \
	X(dsock_errors, "udp: connected send sockets that could not be opened (no ephemeral port...): bound socket used") \
	X(ether_rx_dropped, "ether: frames the kernel dropped for this socket (receive ring or buffer full; PACKET_STATISTICS)") \
	X(retx_echo, "resends of a packet the peer, still talking, has not acknowledged for an RTO") \
	X(solicited_eager, "messages above EAGER_LIMIT sent eagerly because solicited "           \
	  "(RMPP_SEND_SOLICITED, up to SOLICITED_EAGER_MAX); also counted in eager_msgs")

struct rmpp_counters {
#define RMPP_COUNTER_FIELD(name, help) uint64_t name;
	RMPP_COUNTERS(RMPP_COUNTER_FIELD)
#undef RMPP_COUNTER_FIELD
};

void rmpp_counters_get(struct rmpp_ep *ep, struct rmpp_counters *out);
void rmpp_counters_print(const struct rmpp_counters *c, FILE *out);

/* ---- upcalls ------------------------------------------------------------ */

/* What the header upcall answers. */
struct rmpp_rx_accept {
	const struct iovec *iov; /* destination; copied by the library, the
				    memory must stay valid until rx_done */
	size_t niov;
	uint64_t offset;   /* message byte 0 lands at this offset into iov */
	uint64_t accepted; /* bytes to deliver (<= msg_len; excess discarded,
			      and not sent at all for rendezvous messages) */
	void *cookie;      /* handed back to rx_done */
};

enum rmpp_rx_verdict {
	RMPP_RX_ACCEPT = 0, /* *acc filled; rx_done will follow exactly once */
	RMPP_RX_DEFER = 1,  /* receiver not ready: the connection stops
			       consuming (credit runs out, the sender probes)
			       until rmpp_peer_resume(); the header is offered
			       again then */
};

enum rmpp_peer_event {
	RMPP_PEER_DEAD = 1,      /* too many consecutive timeouts */
	RMPP_PEER_RESTARTED = 2, /* a new incarnation (epoch) appeared */
	RMPP_PEER_CLOSED = 3,    /* the peer destroyed its endpoint */
	RMPP_PEER_RESET = 4,     /* the peer no longer knows this connection */
};

struct rmpp_callbacks {
	/* A message header, in order per connection.  hdr is valid only during
	 * the call.  Return RMPP_RX_ACCEPT with *acc filled, or RMPP_RX_DEFER. */
	int (*rx_hdr)(void *arg, const struct rmpp_addr *src, const void *hdr, size_t hdr_len,
		      uint64_t msg_len, struct rmpp_rx_accept *acc);
	/* The accepted bytes are in place (status 0), or the message failed
	 * (negative errno: -ECONNRESET peer restarted/closed, -ETIMEDOUT peer
	 * dead, -ECANCELED endpoint destroyed). */
	void (*rx_done)(void *arg, void *cookie, int status, uint64_t accepted);
	/* The source buffer of a send is reusable.  status as above; accepted
	 * is what the receiver accepted (rendezvous) or msg_len (eager). */
	void (*tx_done)(void *arg, void *cookie, int status, uint64_t accepted);
	/* A peer failed; its in-flight operations have already failed through
	 * tx_done/rx_done.  epoch is the new epoch for RMPP_PEER_RESTARTED. */
	void (*peer_event)(void *arg, const struct rmpp_addr *peer, enum rmpp_peer_event ev,
			   uint32_t epoch);
	void *arg;
};

/* ---- fault injection ---------------------------------------------------- */

/* Read-only view of a received packet offered to a fault predicate. */
struct rmpp_fault_view {
	uint8_t type;  /* RMPP_PKT_* (rmpp_wire.h), 0 if unparsable */
	uint8_t flags; /* RMPP_F_* */
	uint8_t mop;   /* RMPP_MOP_*, 0 if no message sub-header */
	uint32_t psn;
	uint32_t msn;
	uint64_t offset;
	uint32_t payload_len;
	uint32_t tsecr;  /* the timestamp echo (0: none, e.g. a stale one) */
	uint64_t now_us; /* monotonic clock */
	uint64_t index;  /* frames seen by this endpoint's shim so far */
	uint32_t frame_len; /* bytes received, link padding included */
};

enum rmpp_fault_action {
	RMPP_FAULT_PASS = 0,
	RMPP_FAULT_DROP = 1,
	RMPP_FAULT_DUP = 2,
	RMPP_FAULT_CORRUPT = 3,
	RMPP_FAULT_TRUNCATE = 4,
	RMPP_FAULT_DELAY = 5, /* hold for delay_us (reorders) */
};

/* Programmatic fault rule, evaluated on every received frame before the
 * random faults.  Return an enum rmpp_fault_action. */
typedef int (*rmpp_fault_fn)(void *arg, const struct rmpp_fault_view *v);

/* Configure the shim from a string (grammar in README.md, same as
 * P3_RMPP_FAULT), replacing the environment setting.  NULL or "" disables
 * random faults.  -EINVAL on a syntax error. */
int rmpp_fault_set(struct rmpp_ep *ep, const char *spec);
void rmpp_fault_set_hook(struct rmpp_ep *ep, rmpp_fault_fn fn, void *arg);

/* ---- endpoints ----------------------------------------------------------- */

struct rmpp_ep_attr {
	enum rmpp_link_type link;
	/* UDP: local IPv4 address ("127.0.0.1", NULL = any) and port
	 * (0 = ephemeral). */
	const char *udp_addr;
	uint16_t udp_port;
	/* Ethernet: interface name and EtherType (0 = RMPP_ETHERTYPE). */
	const char *ifname;
	uint16_t ethertype;
	uint16_t ep_id;                  /* endpoint id carried in every packet */
	const struct rmpp_config *cfg;   /* NULL: rmpp_config_init() */
	struct rmpp_callbacks cb;
};

/*
 * Create an endpoint.  Errors: -EPERM (raw Ethernet without CAP_NET_RAW, with
 * a log line saying so), -ENODEV (no such interface), -EADDRINUSE,
 * -EINVAL, -ENOMEM; RMPP_LINK_XDP: -EPROTONOSUPPORT (built without AF_XDP),
 * -EBUSY (the queue has a socket), or the -errno of the libxdp/libbpf call
 * that failed (-EPERM without root), each logged with what to do.
 */
int rmpp_ep_create(const struct rmpp_ep_attr *attr, struct rmpp_ep **epp);
/* Fail every in-flight operation with -ECANCELED (upcalls run), send CLOSE
 * to established peers (config SEND_CLOSE), release everything. */
void rmpp_ep_destroy(struct rmpp_ep *ep);
/* This endpoint's own address (UDP: the bound address; with INADDR_ANY the
 * caller substitutes a reachable address). */
void rmpp_ep_addr(struct rmpp_ep *ep, struct rmpp_addr *out);
/* Frame size in use towards no peer in particular (the link limit). */
size_t rmpp_ep_mtu(struct rmpp_ep *ep);
uint32_t rmpp_ep_epoch(struct rmpp_ep *ep);
/* How the link runs, for headers and logs: "udp", "ether tpacket-v2",
 * "xdp native copy queue 0", ...  Returns buf. */
const char *rmpp_ep_link_desc(struct rmpp_ep *ep, char *buf, size_t len);

/*
 * Send a message: hdr (hdr_len <= RMPP_MAX_HDR bytes, copied) followed by len
 * payload bytes gathered from iov starting `offset` bytes in (not copied: the
 * memory must stay valid until tx_done).  len == 0 is a header-only message (a GET request).
 * Non-blocking; 0 promises exactly one tx_done.  -EINVAL (bad sizes,
 * len > UINT32_MAX), -EHOSTUNREACH (peer declared dead, until
 * rmpp_peer_forget()), -ENOMEM.
 */
int rmpp_send(struct rmpp_ep *ep, const struct rmpp_addr *peer, const void *hdr, size_t hdr_len,
	      const struct iovec *iov, size_t niov, uint64_t offset, uint64_t len, void *cookie);

/*
 * rmpp_send() for a small message nobody is waiting on in a hurry (the
 * Portals ACK of a put): it is held for at most LAZY_US so that it leaves
 * right after the next message to the same peer (in the same sendmmsg)
 * instead of in a datagram of its own ahead of it.  A held message takes its
 * place in the per-connection order when it is released, i.e. messages sent
 * while it is held are delivered before it.  Released early when the
 * progress engine is about to block; messages above EAGER_LIMIT are never held.
 */
int rmpp_send_lazy(struct rmpp_ep *ep, const struct rmpp_addr *peer, const void *hdr,
		   size_t hdr_len, const struct iovec *iov, size_t niov, uint64_t offset,
		   uint64_t len, void *cookie);

/* Flags of rmpp_send_flags(). */
enum rmpp_send_flag {
	/* The receiver asked for exactly this message and its buffer is waiting
	 * (a Portals REPLY answers a GET): send it eagerly up to
	 * SOLICITED_EAGER_MAX bytes even above EAGER_LIMIT.  The RTS/CTS round
	 * trip would only add latency; the receive side takes an eager message
	 * of any length (up to 1 MiB is tested).  Larger messages still go by
	 * RTS/CTS, so one reply cannot flood the peer's reorder slots. */
	RMPP_SEND_SOLICITED = 1u << 0,
};

/*
 * rmpp_send() that takes held messages along inside this one.  While the
 * oldest message held for PEER by rmpp_send_lazy() has no payload, a header
 * of exactly carry_len bytes, and its header still fits (the combined header
 * at most RMPP_MAX_HDR bytes and within the frame), its header is appended
 * to HDR and it leaves the held list: the receiver gets one message whose
 * header is HDR followed by the carried headers, oldest first (telling them
 * apart is the caller's protocol, e.g. by length).  A carried message
 * completes (tx_done) just before its carrier, with the carrier's status;
 * held messages that were not carried follow the carrier as with
 * rmpp_send().  This spares a request/response exchange the datagram of
 * the held message (a Portals ACK) that would otherwise follow the answer.
 */
int rmpp_send_carry(struct rmpp_ep *ep, const struct rmpp_addr *peer, const void *hdr,
		    size_t hdr_len, const struct iovec *iov, size_t niov, uint64_t offset,
		    uint64_t len, void *cookie, size_t carry_len);

/* rmpp_send_carry() (carry_len 0: rmpp_send()) with enum rmpp_send_flag
 * FLAGS; -EINVAL for an unknown flag. */
int rmpp_send_flags(struct rmpp_ep *ep, const struct rmpp_addr *peer, const void *hdr,
		    size_t hdr_len, const struct iovec *iov, size_t niov, uint64_t offset,
		    uint64_t len, void *cookie, size_t carry_len, unsigned flags);

/* A connection that deferred a header (RMPP_RX_DEFER) may continue: the
 * header is offered again from inside this call.  0, or -ENOENT. */
int rmpp_peer_resume(struct rmpp_ep *ep, const struct rmpp_addr *peer);
/* Forget a dead peer so that sends to it start a new handshake. */
int rmpp_peer_forget(struct rmpp_ep *ep, const struct rmpp_addr *peer);
/* The caller waits on this peer for something rmpp does not carry as one
 * operation (a Portals ACK that answers a delivered put): delta +1 when it
 * starts waiting, -1 when it stops.  While the count is above 0 the
 * connection is kept under keepalive as if a send were unfinished, so a
 * peer that went silent is declared dead (RMPP_PEER_DEAD after
 * DEAD_TIMEOUTS timeouts spanning DEAD_MIN_US) and a close or restart is
 * reported, through the peer_event upcall either way.  A peer event zeroes
 * the count (the watcher drops its waits there).  Returns the new count,
 * or -ENOENT when there is no connection to peer (nothing was sent). */
int rmpp_peer_watch(struct rmpp_ep *ep, const struct rmpp_addr *peer, int delta);
/* The process is going away without rmpp_ep_destroy() (exit(3) with the
 * endpoint open): send the held messages (RMPP_SEND_LAZY: Portals ACKs a
 * peer waits for) and a CLOSE to every established peer, once, without
 * freeing anything.  Safe to call from an atexit handler. */
void rmpp_ep_farewell(struct rmpp_ep *ep);

/*
 * Make progress: receive, run timers, transmit, run upcalls.  timeout_ms 0:
 * one non-blocking pass; > 0 block at most that long when nothing happened;
 * < 0 block until something happens or rmpp_wakeup().  Spins SPIN_US before
 * blocking.  Returns the number of upcalls run (>= 0) or a negative errno.
 */
int rmpp_progress(struct rmpp_ep *ep, int timeout_ms);
/* Wake a thread blocked in rmpp_progress().  Async-signal-safe. */
void rmpp_wakeup(struct rmpp_ep *ep);
/* A file descriptor that becomes readable when rmpp_progress() has work
 * (a packet, a wakeup or a protocol timer). */
int rmpp_ep_fd(struct rmpp_ep *ep);

/* Name of an enum rmpp_peer_event. */
const char *rmpp_peer_event_name(enum rmpp_peer_event ev);

/* ---- path profile -------------------------------------------------------- */

/*
 * Where the time goes between a received batch of frames and the next
 * transmit (in a ping-pong: from a request's arrival to its answer's
 * departure), layer by layer.  Off unless P3_RMPP_PATHPROF is set in the
 * environment (1: print to stderr at exit; a file name: append there, "%p"
 * in it becoming the pid); when off a mark is a load and a branch.  A path
 * starts when an endpoint's receive returns frames and ends at its next
 * transmit, so the figures mean something in app progress mode (one thread
 * receives and answers); paths longer than 100 us are counted apart.
 * Printed per point: the mean TSC ticks (and ns, calibrated at start) from
 * the start over the paths that reached the point, and their number.  Each
 * mark adds its own ~40 ticks to the points after it.  Upper layers (the
 * Portals NAL) mark their own points with rmpp_pathprof_mark().
 */
enum rmpp_pathprof_point {
	RMPP_PP_RX_PARSED,    /* header parsed, CRC verified */
	RMPP_PP_RX_CONN,      /* connection found */
	RMPP_PP_RX_ACKED,     /* ack processed (send completions ran) */
	RMPP_PP_NAL_RX_HDR,   /* NAL: header upcall entered */
	RMPP_PP_NAL_MATCHED,  /* NAL: Portals matched the header */
	RMPP_PP_NAL_RX_DONE,  /* NAL: message finalized (event posted) */
	RMPP_PP_RX_DONE,      /* frame handled */
	RMPP_PP_PROGRESS_RET, /* rmpp_progress returns */
	RMPP_PP_NAL_SEND,     /* NAL: send entered (after the application and LIB) */
	RMPP_PP_SEND,         /* rmpp_send* entered */
	RMPP_PP_SEND_QUEUED,  /* message queued, output starts */
	RMPP_PP_TX,           /* frames handed to the link: the path ends */
	RMPP_PP_NPOINTS
};
void rmpp_pathprof_mark(struct rmpp_ep *ep, enum rmpp_pathprof_point pt);

#ifdef __cplusplus
}
#endif
#endif /* RMPP_H */
