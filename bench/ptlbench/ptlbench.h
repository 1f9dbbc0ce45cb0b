/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ptlbench.h - shared declarations of ptlbench, the Portals-level latency,
 * bandwidth and message-rate benchmark (see man/ptlbench.1).
 *
 * Files: main.c (options, start-up, dispatch), tests.c (the Portals tests),
 * refs.c (the reference measurements: raw shared-memory flag ping-pong,
 * raw UDP ping-pong and stream for the network NALs, memcpy bandwidth), ctrl.c (out-of-band control between the two ranks:
 * barriers over Portals or over the shared segment), report.c (OSU-style
 * tables and CSV).
 */
#ifndef PTLBENCH_H
#define PTLBENCH_H

#include <portals3.h>
#include <p3rt/p3rt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* Tests, in the order they run. */
enum pb_test { PB_LAT, PB_GET, PB_BW, PB_BIBW, PB_RATE, PB_GETBW, PB_NTESTS };

/* The tests run without -t: all but getbw (added later; the comparison's
 * rows stay what they were).  -t all selects every test. */
#define PB_DEFAULT_TESTS ((1u << PB_GETBW) - 1)

/* What a figure measures: selects the reference and the column labels. */
enum pb_kind { PB_KIND_LAT, PB_KIND_RTT, PB_KIND_BW, PB_KIND_RATE };

#define PB_MAX_SIZES 64

struct pb_opts {
	unsigned int tests;	/* bit per enum pb_test */
	size_t min_size;
	size_t max_size;
	long iters;		/* -i: timed iterations per size, -1 = by size */
	long skip;		/* -x: warm-up iterations per size, -1 = by size */
	int window;		/* -w */
	int csv;
	int ref_only;
	int no_ref;
	int verify;
	int ack;		/* bw/rate completion by acks instead of a final message */
	int poll_get;		/* spin in PtlEQGet instead of PtlEQWait */
	int quick;
	int repeat;		/* -r: timed loops per size; the best is reported */
};

struct pb_seg; /* the shared-memory segment of the flag reference (refs.c) */
struct pb_ctx;

/* Out-of-band control between the two ranks.  barrier() exchanges one
 * 64-bit word (a status, a count) and returns when both ranks entered. */
struct pb_ctrl_ops {
	const char *name;
	void (*barrier)(struct pb_ctx *c, uint64_t mine, uint64_t *peer);
};

/* One reference measurement: a table, so more can be added (a raw UDP
 * ping-pong for the network NALs ...).  measure() is collective (both ranks
 * call it); value() returns NAN where the reference does not apply. */
struct pb_ref {
	const char *name;	/* CSV test name of --ref-only rows: "ref-flag" */
	int secondary;		/* a second column beside the first reference (pb_ref2_for) */
	const char *title;	/* table title */
	const char *col;	/* column label beside a test's figure */
	enum pb_kind kind;	/* PB_KIND_LAT (also serves RTT) or PB_KIND_BW */
	const char *unit;
	int (*usable)(const struct pb_ctx *c);
	void (*measure)(struct pb_ctx *c);
	double (*value)(const struct pb_ctx *c, enum pb_kind kind, size_t size);
	const char *note;	/* one header line describing the method */
	void (*report)(struct pb_ctx *c, const struct pb_ref *r); /* own table (NULL: generic) */
	/* One more run at `size`, collective, before each repetition of a test:
	 * the reference becomes the best of all its runs, so its samples come
	 * from the same minutes as the test's and a drift of the machine between
	 * the up-front measurement and the test does not skew the ratio.  NULL:
	 * measured up front only. */
	void (*again)(struct pb_ctx *c, enum pb_kind kind, size_t size);
};

struct pb_ctx {
	struct pb_opts o;
	int rank;		/* role in my pair: 0 (reports) or 1 */
	int nranks;
	int world_rank;		/* rank in the job */
	int npairs;		/* nranks / 2 pairs measure at once */
	int pair;		/* my pair: ranks pair and pair + npairs */
	unsigned int partner;	/* the other rank of my pair */
	ptl_jid_t jid;
	const struct pb_ctrl_ops *ctrl;

	/* description printed in every header */
	char nal[32];
	char progress[32];
	char transfer[96];
	char host[64];
	char commit[64];
	char date[32];
	char cpus[128];
	char oversub[160]; /* <p3rt/oversub.h>: do waits yield? */
	double load[1]; /* 1-minute load average at start: other busy processes skew figures */

	/* Portals state (unused with --ref-only) */
	int have_ptl;
	ptl_handle_ni_t ni;
	ptl_process_id_t peer;
	ptl_pt_index_t pt;
	ptl_handle_eq_t recv_eq; /* PUT_END/GET_END on my buffers */
	ptl_handle_eq_t send_eq; /* SEND_END, ACK, REPLY_END of my operations */
	ptl_handle_eq_t ctrl_eq; /* control messages (barriers) */
	ptl_handle_md_t smd_quiet; /* sbuf, no EQ */
	ptl_handle_md_t smd_ev;	   /* sbuf, events on send_eq */
	ptl_handle_md_t gmd;	   /* rbuf as a get destination, events on send_eq */
	ptl_handle_md_t cmd;	   /* control send buffer, no EQ */
	char *sbuf;
	char *rbuf;
	size_t buflen;
	char cbuf_send[64];
	char cbuf_recv[64];
	char finbuf[64];

	/* shared segment: flag reference and --ref-only control */
	struct pb_seg *seg;
	char seg_name[96];

	/* reference results */
	double flag_half_rtt_us;
	size_t ref_sizes[PB_MAX_SIZES];
	double ref_memcpy_mbs[PB_MAX_SIZES];
	int ref_nsizes;

	/* ring floor and placement probe (floor.c) */
	double floor_half_rtt_us;
	uint64_t floor_pos;	  /* records sent (= received) per direction so far */
	uint64_t floor_tail_seen; /* producer: the consumer's tail last read */
	uint64_t floor_evw;	  /* events written into floor_evq */
	ptl_event_t *floor_evq;
	uint32_t floor_uid;	  /* the records' uid field */
	char floor_src[8];
	char floor_dst[8];
	double probe_min, probe_max; /* placement probe: rank 0's slowdown */
#define PB_PROBES_MAX 64
	double probe_v[PB_PROBES_MAX]; /* the first PB_PROBES_MAX probes */
	int probe_n;

	/* raw UDP references (network NALs): sizes of the lat / bw tests */
	int udp_lat_n;
	size_t udp_lat_sizes[PB_MAX_SIZES];
	double udp_lat_us[PB_MAX_SIZES];   /* spin P3_RMPP_SPIN_US, then block: as rmpp waits */
	double udp_lat_busy_us[PB_MAX_SIZES];  /* pure MSG_DONTWAIT spin */
	double udp_lat_block_us[PB_MAX_SIZES]; /* pure blocking recv */
	long udp_spin_us;
	int udp_bw_n;
	size_t udp_bw_sizes[PB_MAX_SIZES];
	double udp_bw_mbs[PB_MAX_SIZES];
	size_t udp_dgram;	/* datagram size of the stream (rmpp's frame size) */
	double udp_bw_gso_mbs;  /* the stream sent with UDP GSO, at udp_bw_gso_size (NAN: not
	                           measured) */
	size_t udp_bw_gso_size;
	int udp_sock; /* the references' connected socket, kept for again(); -1: none */
	double
	    udp_frame_us; /* ping-pong carrying a 0-byte put's rmpp frame (PB_RMPP_PUT_FRAME B) */
	int refs_measured;
	int csv_header_done;
	int failed;
	int rep;		/* current repetition (verification only in the first) */
};

/* main.c */
void pb_die(const struct pb_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
extern const char *const pb_test_name[PB_NTESTS];
int pb_sizes(const struct pb_ctx *c, enum pb_test t, size_t *sizes);

/* tests.c */
void pb_ptl_setup(struct pb_ctx *c);
void pb_ptl_teardown(struct pb_ctx *c);
void pb_run_test(struct pb_ctx *c, enum pb_test t);
extern const struct pb_ctrl_ops pb_ctrl_portals;

/* refs.c */
extern const struct pb_ref pb_refs[];
extern const int pb_nrefs;
void pb_seg_attach(struct pb_ctx *c);
void pb_seg_detach(struct pb_ctx *c);
void pb_seg_cleanup_name(void);
extern const struct pb_ctrl_ops pb_ctrl_shm;
const struct pb_ref *pb_ref_for(const struct pb_ctx *c, enum pb_kind kind);
const struct pb_ref *pb_ref2_for(const struct pb_ctx *c, enum pb_kind kind);
int pb_flag_applies(const struct pb_ctx *c); /* same node, shmem-like NAL */
/* the ring floor's part of the shared segment, NULL without one */
#define PB_FLOOR_AREA (2u * 256u * 1024u + 4096u)
void *pb_seg_floor_area(const struct pb_ctx *c);

/* floor.c: the ring floor and the placement probe (struct pb_ref methods) */
int pb_floor_usable(const struct pb_ctx *c);
void pb_floor_measure(struct pb_ctx *c);
double pb_floor_value(const struct pb_ctx *c, enum pb_kind kind, size_t size);
void pb_floor_again(struct pb_ctx *c, enum pb_kind kind, size_t size);
void pb_floor_report(struct pb_ctx *c, const struct pb_ref *r);
void pb_floor_release(struct pb_ctx *c);
/* "placement: ..." (the probe's range and verdict) */
void pb_placement_line(const struct pb_ctx *c, char *buf, size_t len);
const char *pb_placement_verdict(double median);
void pb_refs_measure(struct pb_ctx *c);
void pb_refs_report(struct pb_ctx *c);
void pb_refs_release(struct pb_ctx *c);

/* report.c */
struct pb_table {
	const char *test;	/* CSV name: "lat" */
	const char *title;	/* "Put Latency Test" */
	const char *label;	/* "Latency (us)" */
	const char *unit;	/* "us" */
	enum pb_kind kind;
	const struct pb_ref *ref; /* NULL: no reference column */
	const struct pb_ref *ref2; /* a second reference column (the ring floor), or NULL */
};
void pb_table_begin(struct pb_ctx *c, const struct pb_table *t, const char *const *extra_hdr);
void pb_table_row(struct pb_ctx *c, const struct pb_table *t, size_t size, double value);
void pb_table_end(struct pb_ctx *c, const struct pb_table *t, const char *trailer);
void pb_table_note(struct pb_ctx *c, const char *line); /* "# line" (rank 0) */

static inline double pb_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void pb_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Verification pattern: depends on position, size and direction, so a
 * misplaced, stale or truncated delivery is caught. */
static inline unsigned char pb_pattern(size_t i, size_t size, int from)
{
	return (unsigned char)((i * 131u) + (size * 7u) + (unsigned)from * 29u + 1u);
}

#endif
