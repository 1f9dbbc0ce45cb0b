/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness.h - shared helpers of the Check suites in tests/.
 *
 * Every functional test is written once as a function of a struct h_ctx
 * (its rank, its NI, the ids of its peers) and run over every transport:
 *
 *   H_MODE_LO            one process, one NI on PTL_IFACE_LO; ranks are
 *                        threads sharing that NI (sends to oneself go
 *                        through the loopback path).
 *   H_MODE_SHMEM_APP     one forked process per rank, PTL_IFACE_SHMEM,
 *                        PTL_PROGRESS=app.
 *   H_MODE_SHMEM_THREAD  the same with PTL_PROGRESS=thread.
 *
 * A pair test is a job of two ranks: rank 0 is the target, rank 1 the
 * initiator.  Ranks synchronise through a barrier in shared memory that
 * keeps driving the NI (PtlProgress) while it waits, so app-progress mode
 * cannot deadlock on a barrier.
 *
 * Assertions print both operands and PtlErrorStr of return codes.  A failing
 * rank records its message in shared memory and exits; the test process
 * reports it through Check.  Every rank ends with a leak check: the
 * PTL_SR_{MES,MDS,EQS}_ALLOCATED registers must be back to 0 before
 * PtlNIFini.
 */
#ifndef P3_TESTS_HARNESS_H
#define P3_TESTS_HARNESS_H

#include <check.h>
#include <portals3.h>
#include <p3rt/p3rt.h>
#include <p3api/debug.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>

/* ---- failure reporting --------------------------------------------------- */

void h_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));

/* Name of a return code that never crashes on garbage values. */
const char *h_rcstr(int rc);
const char *h_evstr(int kind);

/** Assert that `call` returns `expect`; prints both codes and their names. */
#define H_RC(call, expect)                                                                         \
	do {                                                                                       \
		int h_rc_ = (call);                                                                \
		int h_ex_ = (expect);                                                              \
		if (h_rc_ != h_ex_)                                                                \
			h_fail(__FILE__, __LINE__, "%s returned %d (%s), expected %d (%s)", #call, \
			       h_rc_, h_rcstr(h_rc_), h_ex_, h_rcstr(h_ex_));                      \
	} while (0)
#define H_OK(call) H_RC(call, PTL_OK)

/** Assert integer equality, printing both operands. */
#define H_EQ(a, b)                                                                                 \
	do {                                                                                       \
		unsigned long long h_a_ = (unsigned long long)(a);                                 \
		unsigned long long h_b_ = (unsigned long long)(b);                                 \
		if (h_a_ != h_b_)                                                                  \
			h_fail(__FILE__, __LINE__,                                                 \
			       "%s == %s failed: %llu (0x%llx) vs %llu (0x%llx)", #a, #b, h_a_,    \
			       h_a_, h_b_, h_b_);                                                  \
	} while (0)
#define H_NE(a, b)                                                                                 \
	do {                                                                                       \
		unsigned long long h_a_ = (unsigned long long)(a);                                 \
		unsigned long long h_b_ = (unsigned long long)(b);                                 \
		if (h_a_ == h_b_)                                                                  \
			h_fail(__FILE__, __LINE__, "%s != %s failed: both %llu (0x%llx)", #a, #b,  \
			       h_a_, h_a_);                                                        \
	} while (0)
#define H_LE(a, b)                                                                                 \
	do {                                                                                       \
		long long h_a_ = (long long)(a);                                                   \
		long long h_b_ = (long long)(b);                                                   \
		if (h_a_ > h_b_)                                                                   \
			h_fail(__FILE__, __LINE__, "%s <= %s failed: %lld vs %lld", #a, #b, h_a_,  \
			       h_b_);                                                              \
	} while (0)
#define H_TRUE(cond)                                                                               \
	do {                                                                                       \
		if (!(cond))                                                                       \
			h_fail(__FILE__, __LINE__, "assertion failed: %s", #cond);                 \
	} while (0)
/** Assert an event's kind, printing what arrived instead. */
#define H_EVKIND(ev, kind)                                                                         \
	do {                                                                                       \
		int h_k_ = (int)(ev).type;                                                         \
		if (h_k_ != (int)(kind))                                                           \
			h_fail(__FILE__, __LINE__, "event kind %d (%s), expected %d (%s)", h_k_,   \
			       h_evstr(h_k_), (int)(kind), h_evstr((int)(kind)));                  \
	} while (0)

/* ---- transports and jobs -------------------------------------------------- */

/* udp: forked ranks with PTL_NAL=udp on 127.0.0.1 (ports from the test's
 * own pid, see h_pid_base); ether: forked ranks with PTL_NAL=ether, rank r
 * in network namespace r % 2 of P3_TEST_NETNS="ns0,ns1" (nid 10.77.0.(ns+1)),
 * only when P3_TEST_MODES names them; P3_TEST_ETHER_NAL=xdp runs these modes
 * over the xdp NAL (PTL_IFACE_XDP). */
enum h_mode {
	H_MODE_LO = 0,
	H_MODE_SHMEM_APP = 1,
	H_MODE_SHMEM_THREAD = 2,
	H_MODE_UDP_APP = 3,
	H_MODE_UDP_THREAD = 4,
	H_MODE_ETHER_APP = 5,
	H_MODE_ETHER_THREAD = 6,
	H_NMODES = 7
};
#define H_X_LO           (1u << H_MODE_LO)
#define H_X_SHMEM_APP    (1u << H_MODE_SHMEM_APP)
#define H_X_SHMEM_THREAD (1u << H_MODE_SHMEM_THREAD)
#define H_X_SHMEM        (H_X_SHMEM_APP | H_X_SHMEM_THREAD)
#define H_X_UDP          ((1u << H_MODE_UDP_APP) | (1u << H_MODE_UDP_THREAD))
#define H_X_ETHER        ((1u << H_MODE_ETHER_APP) | (1u << H_MODE_ETHER_THREAD))
#define H_X_RMPP         (H_X_UDP | H_X_ETHER)
#define H_X_THREADS      ((1u << H_MODE_SHMEM_THREAD) | (1u << H_MODE_UDP_THREAD) | (1u << H_MODE_ETHER_THREAD))
#define H_X_NOT_SHMEM    (H_X_LO | H_X_RMPP)
const char *h_mode_name(int mode);
/** Interface, NAL name ("lo", "shmem", "udp", "ether") and progress mode of a mode. */
ptl_interface_t h_mode_iface(int mode);
const char *h_mode_nal(int mode);
/** PTL_PROGRESS of a mode: app, thread ($P3_TEST_THREAD_PROGRESS replaces
 * "thread", e.g. interrupt), or $P3_TEST_MYRI_PROGRESS for the udp modes
 * over myrinet (e.g. offload). */
const char *h_mode_progress(int mode);
int h_mode_thread(int mode);
/** Runtime environment of rank `rank` of `nranks` over `mode` (not lo):
 *  PTL_NAL, maps, job id and progress; ether also enters the rank's namespace. */
void h_set_env_mode(int mode, int rank, int nranks, ptl_jid_t jid);
/** First pid of this process' jobs over udp/ether: ports base+pid unique per
 *  test process and free on 127.0.0.1 when chosen (a job whose port is taken
 *  before its rank binds runs again on the next free base). */
unsigned h_pid_base(void);

#define H_MAX_RANKS 8
#define H_SCRATCH   (4u << 20) /* bytes of shared scratch memory per job */

struct h_shared {
	atomic_uint bar_count;
	atomic_uint bar_gen;
	atomic_int failed;
	atomic_int port_busy; /* a rank's udp port was taken: run the job again */
	atomic_uint_fast64_t counter[16];
	uint64_t val[H_MAX_RANKS][16]; /* value exchange: rank r writes val[r][] */
	char msg[2048];
	unsigned char scratch[]; /* H_SCRATCH bytes */
};
/* tests keep uint64_t values in scratch (UBSan: misaligned stores) */
_Static_assert(offsetof(struct h_shared, scratch) % 8 == 0, "scratch must be 8-byte aligned");

struct h_ctx {
	int mode;
	int rank;
	int nranks;
	ptl_handle_ni_t ni;
	ptl_process_id_t me;
	ptl_process_id_t id[H_MAX_RANKS]; /* id of every rank */
	ptl_uid_t uid;
	ptl_jid_t jid;
	struct h_shared *sh;
	int bar_sense;
};

typedef void (*h_rank_fn)(struct h_ctx *c);

/** Run fn as `nranks` ranks over `mode`; fails the Check test if any rank
 *  fails, times out (timeout_s) or leaks an object. */
void h_run_job(int mode, int nranks, h_rank_fn fn, int timeout_s);
/** A pair test: rank 0 runs target(), rank 1 runs initiator(). */
void h_run_pair(int mode, h_rank_fn target, h_rank_fn initiator);

/** Barrier of all ranks; keeps progressing the NI while waiting. */
void h_sync(struct h_ctx *c);
/** Publish value slot `i` of this rank (others read it after the next h_sync). */
void h_pub(struct h_ctx *c, int i, uint64_t v);
uint64_t h_val(struct h_ctx *c, int rank, int i);
/** The peer of a pair test. */
static inline ptl_process_id_t h_peer(const struct h_ctx *c)
{
	return c->id[c->rank == 0 ? 1 : 0];
}

/** Register a pair/job test function (Check loop test over _i = mode) for
 *  every mode not in `exclude`; excluded modes are listed on stdout. */
void h_add(TCase *tc, const TTest *tt, unsigned exclude, const char *why);
#define H_ADD(tc, fn)            h_add(tc, fn, 0, NULL)
#define H_ADD_X(tc, fn, ex, why) h_add(tc, fn, ex, why)

/** Define a pair test `name`: write name##_tgt and name##_ini after it. */
#define H_PAIR_TEST(name)                                                                          \
	static void name##_tgt(struct h_ctx *c);                                                   \
	static void name##_ini(struct h_ctx *c);                                                   \
	START_TEST(name)                                                                           \
	{                                                                                          \
		h_run_pair(_i, name##_tgt, name##_ini);                                            \
	}                                                                                          \
	END_TEST
/** Define a job test `name` of n ranks: write name##_rank after it. */
#define H_JOB_TEST(name, n, timeout_s)                                                             \
	static void name##_rank(struct h_ctx *c);                                                  \
	START_TEST(name)                                                                           \
	{                                                                                          \
		h_run_job(_i, n, name##_rank, timeout_s);                                          \
	}                                                                                          \
	END_TEST

/** Single-process helpers: PtlInit + PtlNIInit(iface) / leak check + fini. */
ptl_handle_ni_t h_open(ptl_interface_t iface, ptl_ni_limits_t *desired, ptl_ni_limits_t *actual);
void h_close(ptl_handle_ni_t ni);
/** Open an NI for a single-process test over `mode` (shmem: as rank 0 of a
 *  one-rank job with a fresh job id, progress per mode). */
ptl_handle_ni_t h_open_mode(int mode, ptl_ni_limits_t *desired, ptl_ni_limits_t *actual);
/** Register a single-process test for every mode not excluded (like h_add). */
#define H_ADD_SINGLE(tc, fn) h_add(tc, fn, 0, NULL)
/** A one-rank context over an already open NI (for single-process tests). */
void h_ctx_single(struct h_ctx *c, ptl_handle_ni_t ni);

/** Build and run an SRunner over `s` in CK_FORK mode; returns exit status. */
int h_main(Suite *s);

/* ---- objects --------------------------------------------------------------- */

#define H_PT            4 /* the portal index the functional tests use */
#define H_EV_TIMEOUT_MS 15000

extern const ptl_process_id_t h_any_id;

ptl_md_t h_md(void *start, ptl_size_t length, int threshold, unsigned options, ptl_handle_eq_t eq);
ptl_handle_eq_t h_eq(struct h_ctx *c, ptl_size_t count);
/** Attach an ME at the tail of portal `pt` and an MD to it. */
ptl_handle_me_t h_me_md(struct h_ctx *c, ptl_pt_index_t pt, ptl_process_id_t src,
                        ptl_match_bits_t bits, ptl_match_bits_t ignore, ptl_unlink_t me_unlink,
                        ptl_md_t md, ptl_unlink_t md_unlink, ptl_handle_md_t *mdh);
ptl_handle_md_t h_bind(struct h_ctx *c, ptl_md_t md, ptl_unlink_t unlink);
ptl_sr_value_t h_sr(struct h_ctx *c, ptl_sr_index_t reg);
ptl_sr_value_t h_sr_ni(ptl_handle_ni_t ni, ptl_sr_index_t reg);
/** Wait (progressing) until register `reg` reaches at least `value`. */
void h_wait_sr_(const char *f, int l, struct h_ctx *c, ptl_sr_index_t reg, ptl_sr_value_t value);
#define h_wait_sr(c, reg, v) h_wait_sr_(__FILE__, __LINE__, c, reg, v)

/** Next event of eq within H_EV_TIMEOUT_MS, which must be of `kind`. */
void h_expect_(const char *f, int l, ptl_handle_eq_t eq, int kind, ptl_event_t *ev);
#define h_expect(eq, kind, ev) h_expect_(__FILE__, __LINE__, eq, kind, ev)
/** Any next event within the timeout (returns the PtlEQPoll code: OK/DROPPED). */
int h_next_(const char *f, int l, ptl_handle_eq_t eq, ptl_event_t *ev);
#define h_next(eq, ev) h_next_(__FILE__, __LINE__, eq, ev)
/** No event within ms (progressing meanwhile). */
void h_expect_none_(const char *f, int l, ptl_handle_eq_t eq, unsigned ms);
#define h_expect_none(eq, ms) h_expect_none_(__FILE__, __LINE__, eq, ms)
/** Collect exactly n events and count them by kind into counts[PTL_EVENT_KIND_MAX]. */
void h_collect_(const char *f, int l, ptl_handle_eq_t eq, int n, int *counts);
#define h_collect(eq, n, counts) h_collect_(__FILE__, __LINE__, eq, n, counts)

/** Initiator helpers over a temporary MD with its own EQ.  h_put waits for
 *  SEND_START and SEND_END (and the ACK when ack == PTL_ACK_REQ) and returns
 *  the ACK's mlength (0 without ack); h_getdata waits for REPLY_START and
 *  REPLY_END and returns the reply's mlength.  Both free everything. */
ptl_size_t h_put_(const char *f, int l, struct h_ctx *c, ptl_process_id_t tgt, ptl_pt_index_t pt,
                  ptl_match_bits_t bits, ptl_size_t roff, const void *buf, ptl_size_t len,
                  ptl_ack_req_t ack, ptl_hdr_data_t hdr);
#define h_put(c, tgt, pt, bits, roff, buf, len, ack, hdr)                                          \
	h_put_(__FILE__, __LINE__, c, tgt, pt, bits, roff, buf, len, ack, hdr)
ptl_size_t h_getdata_(const char *f, int l, struct h_ctx *c, ptl_process_id_t tgt,
                      ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t roff, void *buf,
                      ptl_size_t len);
#define h_getdata(c, tgt, pt, bits, roff, buf, len)                                                \
	h_getdata_(__FILE__, __LINE__, c, tgt, pt, bits, roff, buf, len)

/** Progress the NI for ms milliseconds. */
void h_idle(struct h_ctx *c, unsigned ms);

/** Deterministic data pattern depending on (seed, offset). */
unsigned char h_pat(uint32_t seed, uint64_t off);
void h_fill(void *buf, size_t len, uint32_t seed, uint64_t off0);
/** Index of the first mismatch, or (size_t)-1. */
size_t h_check_pat(const void *buf, size_t len, uint32_t seed, uint64_t off0);
#define H_PAT(buf, len, seed, off0)                                                                \
	do {                                                                                       \
		size_t h_bad_ = h_check_pat(buf, len, seed, off0);                                 \
		if (h_bad_ != (size_t)-1)                                                          \
			h_fail(__FILE__, __LINE__,                                                 \
			       "data mismatch in %s at byte %zu of %zu: got 0x%02x, want 0x%02x",  \
			       #buf, h_bad_, (size_t)(len),                                        \
			       ((const unsigned char *)(buf))[h_bad_],                             \
			       h_pat(seed, (off0) + h_bad_));                                      \
	} while (0)

/** Assert every object of the NI has been freed. */
void h_leak_check_(const char *f, int l, ptl_handle_ni_t ni);
#define h_leak_check(ni) h_leak_check_(__FILE__, __LINE__, ni)

/** Milliseconds on the monotonic clock. */
uint64_t h_now_ms(void);

/** Remove /dev/shm segments that belong to job `jid` (best effort). */
void h_shm_cleanup(ptl_jid_t jid);
/** Number of /dev/shm segments of job `jid` that exist now. */
int h_shm_count(ptl_jid_t jid);
/** Job id of the last h_run_job over shmem and how many of its segments
 *  were left in /dev/shm after all ranks exited (before the cleanup). */
extern ptl_jid_t h_last_jid;
extern int h_last_leftover;
/** A job id unique to this test process. */
ptl_jid_t h_new_jid(void);
/** Put the shmem runtime environment for (rank, nranks, jid, progress) in place. */
void h_set_env(int rank, int nranks, ptl_jid_t jid, const char *progress);

#endif
