/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_smoke.c - two processes talking Portals over the shmem NAL: puts with
 * acks and gets of every size class (0 bytes, eager, the eager boundary,
 * single copy / pipeline up to 4 MiB), with data checks, in the progress
 * mode and transfer mode given by the environment.  Also a ping-pong and a
 * windowed message-rate measurement (printed, not asserted).
 *
 * libportals3 is loaded with dlopen from the build tree, so this directory
 * builds before portals/; the test is skipped (77) if the library is not
 * there.  Usage: test_shmem_smoke [--bench]; environment: PTL_PROGRESS,
 * P3_SHMEM_CMA as for any program.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <p3rt/p3rt.h>
#include <portals3.h>

#ifndef P3_PORTALS_LIB
#define P3_PORTALS_LIB "../../portals/.libs/libportals3.so"
#endif

#define API(X)                                                                                     \
	X(PtlInit)                                                                                 \
	X(PtlFini)                                                                                 \
	X(PtlSetRank)                                                                              \
	X(PtlNIInit)                                                                               \
	X(PtlNIFini)                                                                               \
	X(PtlNIStatus)                                                                             \
	X(PtlNIDist)                                                                               \
	X(PtlGetId)                                                                                \
	X(PtlGetRankId)                                                                            \
	X(PtlEQAlloc)                                                                              \
	X(PtlEQWait)                                                                               \
	X(PtlEQPoll)                                                                               \
	X(PtlMEAttach)                                                                             \
	X(PtlMDAttach)                                                                             \
	X(PtlMDBind)                                                                               \
	X(PtlPut)                                                                                  \
	X(PtlPutRegion)                                                                            \
	X(PtlGetRegion)                                                                            \
	X(PtlErrorStr)                                                                             \
	X(PtlEventKindStr)

#define DECL(f) static __typeof__(f) *p_##f;
API(DECL)
#undef DECL

#define CHECK(call)                                                                                \
	do {                                                                                       \
		int rc_ = (call);                                                                  \
		if (rc_ != PTL_OK) {                                                               \
			fprintf(stderr, "rank %d: %s:%d: %s = %s\n", my_rank, __FILE__, __LINE__,  \
			        #call, p_PtlErrorStr((unsigned)rc_));                              \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)
#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "rank %d: ", my_rank);                                             \
		fprintf(stderr, __VA_ARGS__);                                                      \
		fputc('\n', stderr);                                                               \
		exit(1);                                                                           \
	} while (0)

static int my_rank = -1;
static const ptl_size_t sizes[] = {0,     1,     8,          1000,    16383,        16384,
                                   16385, 65536, 100000 + 3, 1 << 20, (4 << 20) + 5};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define PT     4
#define MATCH  0x1234

static uint8_t pattern(size_t msg, size_t k)
{
	return (uint8_t)(k * 7 + msg * 13 + 1 + (k >> 12));
}

static ptl_size_t offset_of(size_t i)
{
	ptl_size_t off = 0;
	for (size_t j = 0; j < i; j++)
		off += sizes[j];
	return off;
}

static void wait_event(ptl_handle_eq_t eq, ptl_event_kind_t kind, ptl_event_t *ev)
{
	int rc = p_PtlEQWait(eq, ev);
	if (rc != PTL_OK)
		FAIL("PtlEQWait: %s", p_PtlErrorStr((unsigned)rc));
	if (ev->type != kind)
		FAIL("expected %s, got %s", p_PtlEventKindStr(kind), p_PtlEventKindStr(ev->type));
	if (ev->ni_fail_type != PTL_NI_OK)
		FAIL("%s failed: ni_fail_type %u", p_PtlEventKindStr(ev->type), ev->ni_fail_type);
}

/* SEND_END and the ACK/REPLY_END of one operation come in either order. */
static void wait_pair(ptl_handle_eq_t eq, ptl_event_kind_t kind, ptl_event_t *ev)
{
	int seen_send = 0, seen_other = 0;

	while (!seen_send || !seen_other) {
		ptl_event_t e;
		int rc = p_PtlEQWait(eq, &e);
		if (rc != PTL_OK)
			FAIL("PtlEQWait: %s", p_PtlErrorStr((unsigned)rc));
		if (e.ni_fail_type != PTL_NI_OK)
			FAIL("%s failed: ni_fail_type %u", p_PtlEventKindStr(e.type),
			     e.ni_fail_type);
		if (e.type == PTL_EVENT_SEND_END && !seen_send) {
			seen_send = 1;
		} else if (e.type == kind && !seen_other) {
			seen_other = 1;
			*ev = e;
		} else {
			FAIL("unexpected %s waiting for SEND_END + %s", p_PtlEventKindStr(e.type),
			     p_PtlEventKindStr(kind));
		}
	}
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void ni_up(ptl_handle_ni_t *ni, ptl_process_id_t *peer)
{
	int max;
	unsigned long dist;
	ptl_process_id_t me;

	CHECK(p_PtlInit(&max));
	CHECK(p_PtlSetRank(PTL_INVALID_HANDLE, (unsigned)-1, (unsigned)-1));
	CHECK(p_PtlNIInit(PTL_IFACE_SHMEM, PTL_PID_ANY, NULL, NULL, ni));
	CHECK(p_PtlGetId(*ni, &me));
	CHECK(p_PtlGetRankId(*ni, (unsigned)(1 - my_rank), peer));
	if (me.pid != (ptl_pid_t)my_rank || me.nid != 0)
		FAIL("my id is %u:%u", me.nid, me.pid);
	CHECK(p_PtlNIDist(*ni, *peer, &dist));
	if (dist != 1)
		FAIL("distance to the peer is %lu", dist);
	CHECK(p_PtlNIDist(*ni, me, &dist));
	if (dist != 0)
		FAIL("distance to myself is %lu", dist);
}

/* ---- rank 1: the target -------------------------------------------------- */

static int target(int ready_fd, int done_fd, int bench)
{
	ptl_handle_ni_t ni;
	ptl_handle_eq_t eq;
	ptl_handle_me_t me;
	ptl_handle_md_t md;
	ptl_process_id_t peer, any = {PTL_NID_ANY, PTL_PID_ANY};
	ptl_event_t ev;
	ptl_size_t total = offset_of(NSIZES);
	uint8_t *buf = calloc(1, total + 64);

	ni_up(&ni, &peer);
	CHECK(p_PtlEQAlloc(ni, 4096, PTL_EQ_HANDLER_NONE, &eq));
	CHECK(p_PtlMEAttach(ni, PT, any, MATCH, 0, PTL_RETAIN, PTL_INS_AFTER, &me));
	ptl_md_t d = {.start = buf,
	              .length = total,
	              .threshold = PTL_MD_THRESH_INF,
	              .options = PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE |
	                         PTL_MD_EVENT_START_DISABLE,
	              .eq_handle = eq};
	CHECK(p_PtlMDAttach(me, d, PTL_RETAIN, &md));
	if (write(ready_fd, "r", 1) != 1)
		FAIL("pipe");

	for (size_t i = 0; i < NSIZES; i++) {
		wait_event(eq, PTL_EVENT_PUT_END, &ev);
		if (ev.mlength != sizes[i] || ev.offset != offset_of(i))
			FAIL("put %zu: mlength %llu offset %llu", i, (unsigned long long)ev.mlength,
			     (unsigned long long)ev.offset);
		for (size_t k = 0; k < sizes[i]; k++)
			if (buf[offset_of(i) + k] != pattern(i, k))
				FAIL("put %zu (%llu bytes): byte %zu is wrong", i,
				     (unsigned long long)sizes[i], k);
	}
	for (size_t i = 0; i < NSIZES; i++) {
		wait_event(eq, PTL_EVENT_GET_END, &ev);
		if (ev.mlength != sizes[i])
			FAIL("get %zu: mlength %llu", i, (unsigned long long)ev.mlength);
	}

	if (bench) {
		/* ping-pong: echo each put back; then absorb the rate test */
		ptl_handle_md_t smd;
		ptl_md_t s = {.start = buf,
		              .length = 8,
		              .threshold = PTL_MD_THRESH_INF,
		              .options = PTL_MD_EVENT_START_DISABLE,
		              .eq_handle = PTL_EQ_NONE};
		CHECK(p_PtlMDBind(ni, s, PTL_RETAIN, &smd));
		for (int it = 0; it < 20000 + 1000; it++) {
			wait_event(eq, PTL_EVENT_PUT_END, &ev);
			CHECK(p_PtlPut(smd, PTL_NO_ACK_REQ, peer, PT, 0, MATCH, 0, 0));
		}
	}

	/* serve until the initiator is done (its gets pull from our memory) */
	for (;;) {
		struct pollfd p = {done_fd, POLLIN, 0};
		if (poll(&p, 1, 0) > 0)
			break;
		int which;
		int rc = p_PtlEQPoll(&eq, 1, 10, &ev, &which);
		if (rc != PTL_OK && rc != PTL_EQ_EMPTY)
			FAIL("PtlEQPoll: %s", p_PtlErrorStr((unsigned)rc));
	}
	CHECK(p_PtlNIFini(ni));
	p_PtlFini();
	free(buf);
	return 0;
}

/* ---- rank 0: the initiator ------------------------------------------------ */

static int initiator(int ready_fd, int done_fd, int bench)
{
	ptl_handle_ni_t ni;
	ptl_handle_eq_t eq;
	ptl_handle_md_t md;
	ptl_process_id_t peer;
	ptl_event_t ev;
	ptl_size_t max = sizes[NSIZES - 1];
	uint8_t *buf = malloc(max + 64);
	char c;

	ni_up(&ni, &peer);
	CHECK(p_PtlEQAlloc(ni, 4096, PTL_EQ_HANDLER_NONE, &eq));
	if (read(ready_fd, &c, 1) != 1)
		FAIL("pipe");

	ptl_md_t d = {.start = buf,
	              .length = max,
	              .threshold = PTL_MD_THRESH_INF,
	              .options = PTL_MD_EVENT_START_DISABLE,
	              .eq_handle = eq};
	CHECK(p_PtlMDBind(ni, d, PTL_RETAIN, &md));
	for (size_t i = 0; i < NSIZES; i++) {
		for (size_t k = 0; k < sizes[i]; k++)
			buf[k] = pattern(i, k);
		CHECK(p_PtlPutRegion(md, 0, sizes[i], PTL_ACK_REQ, peer, PT, 0, MATCH, offset_of(i),
		                     i));
		wait_pair(eq, PTL_EVENT_ACK, &ev);
		if (ev.mlength != sizes[i])
			FAIL("ack %zu: mlength %llu", i, (unsigned long long)ev.mlength);
	}
	for (size_t i = 0; i < NSIZES; i++) {
		memset(buf, 0xAA, sizes[i]);
		CHECK(p_PtlGetRegion(md, 0, sizes[i], peer, PT, 0, MATCH, offset_of(i)));
		wait_event(eq, PTL_EVENT_REPLY_END, &ev); /* a get has no SEND_END */
		if (ev.mlength != sizes[i])
			FAIL("reply %zu: mlength %llu", i, (unsigned long long)ev.mlength);
		for (size_t k = 0; k < sizes[i]; k++)
			if (buf[k] != pattern(i, k))
				FAIL("get %zu (%llu bytes): byte %zu is wrong", i,
				     (unsigned long long)sizes[i], k);
	}

	ptl_sr_value_t v;
	if (bench) {
		ptl_handle_eq_t peq;
		ptl_handle_me_t me;
		ptl_handle_md_t rmd, smd;
		ptl_process_id_t any = {PTL_NID_ANY, PTL_PID_ANY};
		static uint8_t small[64];
		CHECK(p_PtlEQAlloc(ni, 4096, PTL_EQ_HANDLER_NONE, &peq));
		CHECK(p_PtlMEAttach(ni, PT, any, MATCH, 0, PTL_RETAIN, PTL_INS_AFTER, &me));
		ptl_md_t r = {.start = small,
		              .length = 64,
		              .threshold = PTL_MD_THRESH_INF,
		              .options =
		                  PTL_MD_OP_PUT | PTL_MD_EVENT_START_DISABLE | PTL_MD_MANAGE_REMOTE,
		              .eq_handle = peq};
		CHECK(p_PtlMDAttach(me, r, PTL_RETAIN, &rmd));
		ptl_md_t s = {.start = small,
		              .length = 8,
		              .threshold = PTL_MD_THRESH_INF,
		              .options = PTL_MD_EVENT_START_DISABLE,
		              .eq_handle = PTL_EQ_NONE};
		CHECK(p_PtlMDBind(ni, s, PTL_RETAIN, &smd));
		const int iters = 20000, warm = 1000;
		double t0 = 0;
		for (int it = 0; it < iters + warm; it++) {
			if (it == warm)
				t0 = now_us();
			CHECK(p_PtlPut(smd, PTL_NO_ACK_REQ, peer, PT, 0, MATCH, 0, 0));
			wait_event(peq, PTL_EVENT_PUT_END, &ev);
		}
		double lat = (now_us() - t0) / iters / 2;
		printf("shmem smoke: 8-byte put half round trip %.3f us\n", lat);
		for (ptl_sr_index_t reg = 13; reg <= 14; reg++) {
			CHECK(p_PtlNIStatus(ni, PTL_SR_NAL_BASE + reg, &v));
			printf("shmem smoke: rank 0 NAL counter %u = %llu\n", reg,
			       (unsigned long long)v);
		}
	}

	if (write(done_fd, "d", 1) != 1)
		FAIL("pipe");

	CHECK(p_PtlNIStatus(ni, PTL_SR_NAL_BASE + 2, &v)); /* single-copy msgs sent */
	printf("shmem smoke: rank 0 single-copy sends %llu\n", (unsigned long long)v);
	/* cooperative copies: the gets' replies of >= P3_SHMEM_COOP_MIN bytes */
	ptl_sr_value_t coop, pushed;
	CHECK(p_PtlNIStatus(ni, PTL_SR_NAL_BASE + 18, &coop)); /* COOP_MSGS_RECV */
	CHECK(p_PtlNIStatus(ni, PTL_SR_NAL_BASE + 19, &pushed)); /* COOP_BYTES_PUSHED */
	printf("shmem smoke: rank 0 cooperative receives %llu, bytes pushed %llu\n",
	       (unsigned long long)coop, (unsigned long long)pushed);
	const char *want = getenv("SMOKE_EXPECT_COOP");
	if (want && coop < strtoull(want, NULL, 0))
		FAIL("%llu cooperative receives, expected at least %s", (unsigned long long)coop,
		     want);
	if (getenv("P3_SHMEM_COOP_DENY") && pushed)
		FAIL("pushed %llu bytes with pushes denied", (unsigned long long)pushed);
	/* rings pre-faulted on first contact: the one it sends into and the
	 * one it reads from, whole (the default budget holds both), or none */
	ptl_sr_value_t prefault;
	CHECK(p_PtlNIStatus(ni, PTL_SR_NAL_BASE + 20, &prefault)); /* PREFAULT_BYTES */
	const char *pf = getenv("P3_SHMEM_PREFAULT"), *rs = getenv("P3_SHMEM_RING_SIZE");
	unsigned long long ring = rs ? strtoull(rs, NULL, 0) : 262144;
	printf("shmem smoke: rank 0 pre-faulted %llu ring bytes\n", (unsigned long long)prefault);
	if (pf && strtoull(pf, NULL, 0) == 0 && prefault != 0)
		FAIL("pre-faulted %llu bytes with P3_SHMEM_PREFAULT=0",
		     (unsigned long long)prefault);
	if (!pf && prefault < 2 * ring)
		FAIL("pre-faulted %llu bytes, expected both rings (2 x %llu)",
		     (unsigned long long)prefault, ring);
	CHECK(p_PtlNIFini(ni));
	p_PtlFini();
	free(buf);
	return 0;
}

/* ---- --peer-death: the target stops making progress and is SIGKILLed ----- */

static int death_target(int ready_fd)
{
	ptl_handle_ni_t ni;
	ptl_process_id_t peer;

	ptl_handle_eq_t eq;
	ptl_event_t ev;
	int which;

	ni_up(&ni, &peer);
	CHECK(p_PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &eq));
	if (write(ready_fd, "r", 1) != 1)
		FAIL("pipe");
	/* make progress for a while: the initiator's first (dropped) put
	 * introduces it, so its large send can take the single-copy path */
	for (double t0 = now_us(); now_us() - t0 < 150000;)
		p_PtlEQPoll(&eq, 1, 10, &ev, &which);
	for (;;)
		pause(); /* no progress any more: the large send stalls; then SIGKILL */
}

/* The start of the peer-death initiators: NI up, an EQ, the target ready
 * (ready_fd), buf (len bytes) bound, and a first 8-byte put the target
 * reads before it stops progressing; returns once it has. */
static void death_start(int ready_fd, uint8_t *buf, size_t len, ptl_handle_ni_t *ni,
                        ptl_handle_eq_t *eq, ptl_handle_md_t *md, ptl_process_id_t *peer)
{
	ptl_event_t ev;
	char c;

	ni_up(ni, peer);
	CHECK(p_PtlEQAlloc(*ni, 64, PTL_EQ_HANDLER_NONE, eq));
	if (read(ready_fd, &c, 1) != 1)
		FAIL("pipe");
	ptl_md_t d = {.start = buf,
	              .length = len,
	              .threshold = PTL_MD_THRESH_INF,
	              .options = PTL_MD_EVENT_START_DISABLE,
	              .eq_handle = *eq};
	CHECK(p_PtlMDBind(*ni, d, PTL_RETAIN, md));
	CHECK(p_PtlPutRegion(*md, 0, 8, PTL_NO_ACK_REQ, *peer, PT, 0, MATCH, 0, 0));
	wait_event(*eq, PTL_EVENT_SEND_END, &ev);
	usleep(400000); /* the target has read it (and our HELLO) and stopped */
}

static int death_initiator(int ready_fd, int sent_fd)
{
	ptl_handle_ni_t ni;
	ptl_handle_eq_t eq;
	ptl_handle_md_t md;
	ptl_process_id_t peer;
	ptl_event_t ev;
	const size_t len = 4 << 20; /* more than a ring holds */
	uint8_t *buf = calloc(1, len);

	death_start(ready_fd, buf, len, &ni, &eq, &md, &peer);
	CHECK(p_PtlPut(md, PTL_NO_ACK_REQ, peer, PT, 0, MATCH, 0, 0));
	if (write(sent_fd, "s", 1) != 1)
		FAIL("pipe");
	double t0 = now_us();
	int rc = p_PtlEQWait(eq, &ev);
	if (rc != PTL_OK || ev.type != PTL_EVENT_SEND_END)
		FAIL("expected SEND_END, got rc %d type %d", rc, ev.type);
	if (ev.ni_fail_type != PTL_NI_PEER_DEAD)
		FAIL("SEND_END to a killed peer: ni_fail_type %u, not PTL_NI_PEER_DEAD",
		     ev.ni_fail_type);
	ptl_sr_value_t cma;
	CHECK(p_PtlNIStatus(ni, PTL_SR_NAL_BASE + 2, &cma));
	printf("shmem smoke: %s send to a killed peer failed with PTL_NI_PEER_DEAD after %.1f "
	       "ms\n",
	       cma ? "single-copy" : "pipeline", (now_us() - t0) / 1000);
	CHECK(p_PtlNIFini(ni));
	p_PtlFini();
	free(buf);
	return 0;
}

/* --answer-death ack|reply: a small put with an ACK (or a get) reaches the
 * target's ring, the target (no progress any more) never reads it and is
 * SIGKILLed; the ACK (REPLY_END) it owed must end the wait with
 * PTL_NI_PEER_DEAD.  Before nal/shmem/await.c it never came. */
static int answer_initiator(int ready_fd, int sent_fd, int reply)
{
	ptl_handle_ni_t ni;
	ptl_handle_eq_t eq;
	ptl_handle_md_t md;
	ptl_process_id_t peer;
	ptl_event_t ev;
	static uint8_t buf[256];
	int which;

	death_start(ready_fd, buf, sizeof(buf), &ni, &eq, &md, &peer);
	if (reply)
		CHECK(p_PtlGetRegion(md, 0, 64, peer, PT, 0, MATCH, 0));
	else
		CHECK(p_PtlPutRegion(md, 0, 64, PTL_ACK_REQ, peer, PT, 0, MATCH, 0, 0));
	ptl_event_kind_t want = reply ? PTL_EVENT_REPLY_END : PTL_EVENT_ACK;
	if (!reply) /* in the target's ring: done for the NAL */
		wait_event(eq, PTL_EVENT_SEND_END, &ev);
	if (write(sent_fd, "s", 1) != 1)
		FAIL("pipe");
	double t0 = now_us();
	int rc = p_PtlEQPoll(&eq, 1, 10000, &ev, &which);
	if (rc == PTL_EQ_EMPTY)
		FAIL("no %s 10 s after the target was killed", p_PtlEventKindStr(want));
	if (rc != PTL_OK || ev.type != want)
		FAIL("expected %s, got rc %d type %s", p_PtlEventKindStr(want), rc,
		     p_PtlEventKindStr(ev.type));
	if (ev.ni_fail_type != PTL_NI_PEER_DEAD)
		FAIL("%s owed by a killed peer: ni_fail_type %u, not PTL_NI_PEER_DEAD",
		     p_PtlEventKindStr(want), ev.ni_fail_type);
	printf("shmem smoke: the %s a killed peer owed failed with PTL_NI_PEER_DEAD after %.1f ms\n",
	       p_PtlEventKindStr(want), (now_us() - t0) / 1000);
	CHECK(p_PtlNIFini(ni));
	p_PtlFini();
	return 0;
}

/* mode 0: a large send stalls on a killed peer; 1: a put's ACK is owed;
 * 2: a get's REPLY is owed */
static int peer_death(int mode)
{
	int ready[2], sent[2], st;
	char c;

	if (pipe(ready) || pipe(sent))
		return 1;
	pid_t t = fork();
	if (t == 0) {
		setenv("PTL_MY_RID", "1", 1);
		my_rank = 1;
		alarm(60);
		exit(death_target(ready[1]));
	}
	pid_t i = fork();
	if (i == 0) {
		setenv("PTL_MY_RID", "0", 1);
		my_rank = 0;
		alarm(60);
		exit(mode ? answer_initiator(ready[0], sent[1], mode == 2)
		          : death_initiator(ready[0], sent[1]));
	}
	if (read(sent[0], &c, 1) != 1)
		return 1;
	usleep(20000);
	kill(t, SIGKILL); /* uncatchable: its segment stays behind */
	waitpid(t, &st, 0);
	if (waitpid(i, &st, 0) != i || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "initiator failed (status 0x%x)\n", st);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int bench = argc > 1 && strcmp(argv[1], "--bench") == 0;
	int death = argc > 1 && strcmp(argv[1], "--peer-death") == 0;
	if (argc > 2 && strcmp(argv[1], "--answer-death") == 0)
		death = strcmp(argv[2], "reply") == 0 ? 3 : 2;
	const char *lib = getenv("P3_PORTALS_LIB") ? getenv("P3_PORTALS_LIB") : P3_PORTALS_LIB;
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		printf("SKIP: %s\n", dlerror());
		return 77;
	}
#define LOAD(f)                                                                                    \
	p_##f = (__typeof__(f) *)dlsym(h, #f);                                                     \
	if (!p_##f) {                                                                              \
		printf("SKIP: %s has no %s\n", lib, #f);                                           \
		return 77;                                                                         \
	}
	API(LOAD)
#undef LOAD

	char jid[32];
	snprintf(jid, sizeof(jid), "%d", (int)(getpid() % 100000) + 1000);
	setenv("PTL_NAL", "shmem", 1);
	setenv("PTL_NIDMAP", "0:0", 1);
	setenv("PTL_PIDMAP", "0:1", 1);
	setenv("PTL_MY_JID", jid, 1);

	if (death) {
		int rc = peer_death(death - 1);
		/* what a launcher does after a job: remove what SIGKILL left */
		char path[128];
		snprintf(path, sizeof(path), "/dev/shm/p3shm-%u-%s-1", (unsigned)getuid(), jid);
		/* ENOENT is fine: another NI's stale-segment sweep (tests run in
		 * parallel) may have removed it already. */
		if (unlink(path) != 0 && errno != ENOENT) {
			fprintf(stderr, "%s: cannot remove the killed peer's segment: %s\n", path,
				strerror(errno));
			rc = 1;
		}
		snprintf(path, sizeof(path), "/dev/shm/p3shm-%u-%s-0", (unsigned)getuid(), jid);
		if (access(path, F_OK) == 0) {
			fprintf(stderr, "%s left behind\n", path);
			unlink(path);
			rc = 1;
		}
		return rc;
	}

	int ready[2], done[2];
	if (pipe(ready) || pipe(done))
		return 1;
	pid_t kids[2];
	for (int r = 0; r < 2; r++) {
		kids[r] = fork();
		if (kids[r] < 0)
			return 1;
		if (kids[r] == 0) {
			char rid[8];
			snprintf(rid, sizeof(rid), "%d", r);
			setenv("PTL_MY_RID", rid, 1);
			my_rank = r;
			alarm(120);
			exit(r == 0 ? initiator(ready[0], done[1], bench)
			            : target(ready[1], done[0], bench));
		}
	}
	int ok = 1;
	for (int r = 0; r < 2; r++) {
		int st;
		if (waitpid(kids[r], &st, 0) != kids[r] || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "rank %d failed (status 0x%x)\n", r, st);
			ok = 0;
			kill(kids[1 - r], SIGKILL);
		}
	}
	/* nothing may be left behind in /dev/shm */
	for (int r = 0; r < 2; r++) {
		char path[128];
		snprintf(path, sizeof(path), "/dev/shm/p3shm-%u-%s-%d", (unsigned)getuid(), jid, r);
		if (access(path, F_OK) == 0) {
			fprintf(stderr, "%s left behind\n", path);
			unlink(path);
			ok = 0;
		}
	}
	return ok ? 0 : 1;
}
