/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * myri_bypass.c - application bypass over myrinet with PTL_PROGRESS=offload
 * (issue 17): a target that spins in a compute loop and makes no Portals
 * call while 1000 8-byte puts and one 64 MiB put land must find, when it
 * looks, every byte right and every event there; its CPU time during the
 * transfer must be the loop's alone (no progress thread, no system time:
 * the NIC moves the data).
 *
 * Two processes (fork) on one NIC (a running mcpd; myri-bypass.sh starts
 * one).  They share one anonymous page for the handshake, read without
 * system calls:  ready (target is in its loop), done (the initiator saw
 * every ack).  Exit 0 pass, 1 fail (reasons printed).
 *
 * Usage: myri_bypass [MIB]   (size of the big put, default 64)
 *
 * myri_bypass --nickill MIB: the NIC is killed (by myri-nickill.sh) while
 * the initiator streams MIB-MiB puts and the target waits in PtlEQWait:
 * both must see a PTL_NI_FAIL event or an error return, no hang.  Each
 * prints "<role>: NIC failure seen at <CLOCK_REALTIME ms>" and exits 0, or
 * exits 1 when it saw nothing within 30 s.
 *
 * myri_bypass --putcpu N (a measurement, not a test; PTL_PROGRESS as set):
 * the initiator's CPU time per 8-byte put without ack: in the PtlPut calls
 * (CLOCK_THREAD_CPUTIME_ID) and of the whole process until the N SEND_ENDs
 * are in (getrusage: progress threads included).
 */
#include <portals3.h>

#include "plain_test.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NSMALL   1000
#define PT_SMALL 4
#define PT_BIG   5
#define EQ_LEN   4096
#define WAIT_S   120 /* bound on every wait */

struct shared {
	_Atomic int ready, done, failed;
	_Atomic uint32_t tgt_pid; /* the target's Portals pid, once it has one */
};

/* The NIC picks both pids (PTL_PID_ANY: it retries past UDP ports other
 * programs hold) and the target publishes its own here. */
static struct shared *g_sh;

static uint64_t small_value(int i)
{
	return 0x5a5a000000000000ull ^ ((uint64_t)i * 0x9e3779b97f4a7c15ull);
}

static uint8_t big_byte(uint64_t i)
{
	return (uint8_t)(i * 131u + (i >> 12) + 7u);
}

static double ts_s(const struct timespec *t)
{
	return (double)t->tv_sec + (double)t->tv_nsec / 1e9;
}

static double now_s(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return ts_s(&t);
}

static double rusage_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static double stime_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int ni_open(int publish, ptl_handle_ni_t *ni, ptl_handle_eq_t *eq)
{
	ptl_pid_t pid = PTL_PID_ANY;
	int n;
	const char *nal, *mode;
	CHECK(PtlInit(&n) == PTL_OK, "PtlInit");
	int rc = PtlNIInit(PTL_IFACE_MYRINET, pid, NULL, NULL, ni);
	CHECK(rc == PTL_OK, "PtlNIInit(myrinet, pid %u): %s (is mcpd running?)", (unsigned)pid,
	      PtlErrorStr(rc));
	CHECK(PtlNIDescribe(*ni, &nal, &mode) == PTL_OK &&
	          strcmp(mode, getenv("PTL_PROGRESS")) == 0,
	      "the NI is not in %s mode", getenv("PTL_PROGRESS"));
	CHECK(PtlEQAlloc(*ni, EQ_LEN, PTL_EQ_HANDLER_NONE, eq) == PTL_OK, "PtlEQAlloc");
	return 0;
}

/* The target publishes its pid once its ME is posted. */
static void publish_target(ptl_handle_ni_t ni)
{
	ptl_process_id_t id;
	if (PtlGetId(ni, &id) == PTL_OK)
		atomic_store(&g_sh->tgt_pid, id.pid);
}

/* The target's id, waiting up to 30 s for it; pid PTL_PID_ANY if none. */
static ptl_process_id_t wait_target(void)
{
	ptl_process_id_t t = {0x7f000001u, PTL_PID_ANY};
	for (int i = 0; i < 30000 && !atomic_load(&g_sh->failed); i++) {
		uint32_t p = atomic_load(&g_sh->tgt_pid);
		if (p) {
			t.pid = p;
			break;
		}
		usleep(1000);
	}
	return t;
}

static int post(ptl_handle_ni_t ni, ptl_pt_index_t pt, void *buf, uint64_t len, ptl_handle_eq_t eq)
{
	ptl_handle_me_t me;
	ptl_handle_md_t md;
	ptl_process_id_t any = {PTL_NID_ANY, PTL_PID_ANY};
	ptl_md_t d = {.start = buf,
	              .length = len,
	              .threshold = PTL_MD_THRESH_INF,
	              .options = PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE,
	              .eq_handle = eq};
	CHECK(PtlMEAttach(ni, pt, any, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me) == PTL_OK,
	      "PtlMEAttach");
	CHECK(PtlMDAttach(me, d, PTL_RETAIN, &md) == PTL_OK, "PtlMDAttach");
	return 0;
}

/* The target: post, spin without Portals calls until done, then look. */
static int target(struct shared *sh, uint64_t big_len)
{
	ptl_handle_ni_t ni;
	ptl_handle_eq_t eq;
	uint64_t *small = calloc(NSMALL, sizeof(*small));
	uint8_t *big = malloc(big_len);
	CHECK(small && big, "no memory");
	memset(big, 0, big_len); /* resident before the NIC writes it */
	if (ni_open(1, &ni, &eq) || post(ni, PT_SMALL, small, NSMALL * sizeof(*small), eq) ||
	    post(ni, PT_BIG, big, big_len, eq))
		return 1;
	publish_target(ni);

	/* The compute loop: no Portals call, no system call. */
	double wall0 = now_s(CLOCK_MONOTONIC), thr0 = now_s(CLOCK_THREAD_CPUTIME_ID);
	double ru0 = rusage_s(), st0 = stime_s();
	atomic_store(&sh->ready, 1);
	uint64_t x = 1, iters = 0;
	while (!atomic_load_explicit(&sh->done, memory_order_acquire)) {
		for (int k = 0; k < 1000; k++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			__asm__ volatile("" : "+r"(x)); /* the work is done, not folded */
		}
		iters++;
	}
	double thr = now_s(CLOCK_THREAD_CPUTIME_ID) - thr0, ru = rusage_s() - ru0;
	double st = stime_s() - st0, wall = now_s(CLOCK_MONOTONIC) - wall0;
	CHECK(!atomic_load(&sh->failed), "the initiator failed");

	/* Look: every byte, every event, without waiting. */
	for (int i = 0; i < NSMALL; i++)
		CHECK(small[i] == small_value(i), "small put %d: got %#llx", i,
		      (unsigned long long)small[i]);
	for (uint64_t i = 0; i < big_len; i++)
		CHECK(big[i] == big_byte(i), "big put byte %llu wrong", (unsigned long long)i);
	int ends_small = 0, ends_big = 0, starts = 0, other = 0;
	ptl_event_t ev;
	int rc;
	while ((rc = PtlEQGet(eq, &ev)) == PTL_OK) {
		if (ev.type == PTL_EVENT_PUT_START)
			starts++;
		else if (ev.type == PTL_EVENT_PUT_END && ev.pt_index == PT_SMALL &&
		         ev.mlength == 8 && ev.ni_fail_type == PTL_NI_OK)
			ends_small++;
		else if (ev.type == PTL_EVENT_PUT_END && ev.pt_index == PT_BIG &&
		         ev.mlength == big_len && ev.ni_fail_type == PTL_NI_OK)
			ends_big++;
		else
			other++;
	}
	CHECK(rc == PTL_EQ_EMPTY, "PtlEQGet: %s", PtlErrorStr(rc));
	CHECK(ends_small == NSMALL && ends_big == 1 && starts == NSMALL + 1 && other == 0,
	      "events: %d small PUT_END, %d big PUT_END, %d PUT_START, %d other", ends_small,
	      ends_big, starts, other);
	printf("target: loop %.3f s wall, %.3f s loop thread CPU, %.3f s process CPU "
	       "(%.3f s system), %llu iterations; every byte and all %d events there\n",
	       wall, thr, ru, st, (unsigned long long)iters, 2 * (NSMALL + 1));
	/* The loop's alone: the process used no CPU but the loop thread's (no
	 * progress thread), and next to no system time (no calls: the NIC's DMA
	 * is charged to the NIC).  Margins are wide: the clocks tick at 1-4 ms. */
	CHECK(ru <= thr + 0.02 + 0.05 * thr,
	      "the process used %.3f s CPU during the transfer, the loop %.3f s", ru, thr);
	CHECK(st <= 0.02 + 0.05 * ru, "%.3f s of system time during the transfer", st);
	PtlNIFini(ni);
	PtlFini();
	free(small);
	free(big);
	return 0;
}

static int wait_acks(ptl_handle_eq_t eq, int want)
{
	int acks = 0;
	double t0 = now_s(CLOCK_MONOTONIC);
	while (acks < want) {
		ptl_event_t ev;
		int which;
		int rc = PtlEQPoll(&eq, 1, 1000, &ev, &which);
		CHECK(now_s(CLOCK_MONOTONIC) - t0 < WAIT_S, "only %d of %d acks in %d s", acks,
		      want, WAIT_S);
		if (rc == PTL_EQ_EMPTY)
			continue;
		CHECK(rc == PTL_OK, "PtlEQPoll: %s", PtlErrorStr(rc));
		CHECK(ev.ni_fail_type == PTL_NI_OK, "event %s failed", PtlEventKindStr(ev.type));
		if (ev.type == PTL_EVENT_ACK)
			acks++;
	}
	return 0;
}

static int initiator(struct shared *sh, uint64_t big_len)
{
	ptl_handle_ni_t ni;
	ptl_handle_eq_t eq;
	ptl_handle_md_t md_small, md_big;
	uint64_t *small = malloc(NSMALL * sizeof(*small));
	uint8_t *big = malloc(big_len);
	CHECK(small && big, "no memory");
	for (int i = 0; i < NSMALL; i++)
		small[i] = small_value(i);
	for (uint64_t i = 0; i < big_len; i++)
		big[i] = big_byte(i);
	if (ni_open(0, &ni, &eq))
		return 1;
	ptl_process_id_t tgt = wait_target();
	CHECK(tgt.pid != PTL_PID_ANY, "the target never got its NI");
	ptl_md_t d = {.start = small,
	              .length = NSMALL * sizeof(*small),
	              .threshold = PTL_MD_THRESH_INF,
	              .eq_handle = eq};
	CHECK(PtlMDBind(ni, d, PTL_RETAIN, &md_small) == PTL_OK, "PtlMDBind small");
	d.start = big;
	d.length = big_len;
	CHECK(PtlMDBind(ni, d, PTL_RETAIN, &md_big) == PTL_OK, "PtlMDBind big");
	for (double t0 = now_s(CLOCK_MONOTONIC); !atomic_load(&sh->ready);) {
		CHECK(now_s(CLOCK_MONOTONIC) - t0 < WAIT_S && !atomic_load(&sh->failed),
		      "the target never got ready");
		usleep(1000);
	}
	double t0 = now_s(CLOCK_MONOTONIC);
	for (int i = 0; i < NSMALL; i++) {
		int rc = PtlPutRegion(md_small, (ptl_size_t)i * 8, 8, PTL_ACK_REQ, tgt, PT_SMALL, 0,
		                      0, (ptl_size_t)i * 8, 0);
		CHECK(rc == PTL_OK, "PtlPutRegion %d: %s", i, PtlErrorStr(rc));
	}
	CHECK(PtlPut(md_big, PTL_ACK_REQ, tgt, PT_BIG, 0, 0, 0, 0) == PTL_OK, "PtlPut big");
	if (wait_acks(eq, NSMALL + 1))
		return 1;
	printf("initiator: %d puts of 8 bytes and one of %llu MiB acked in %.3f s\n", NSMALL,
	       (unsigned long long)(big_len >> 20), now_s(CLOCK_MONOTONIC) - t0);
	atomic_store_explicit(&sh->done, 1, memory_order_release);
	PtlNIFini(ni);
	PtlFini();
	free(small);
	free(big);
	return 0;
}

static double epoch_ms(void)
{
	return now_s(CLOCK_REALTIME) * 1e3;
}

/* --nickill: wait on eq until an event carries a failure (or a call fails). */
static int nickill_role(const char *role, ptl_handle_ni_t ni, ptl_handle_eq_t eq,
                        ptl_handle_md_t md, ptl_process_id_t tgt)
{
	double t0 = now_s(CLOCK_MONOTONIC);
	int puts = 0;
	while (now_s(CLOCK_MONOTONIC) - t0 < 30) {
		if (md != PTL_INVALID_HANDLE) { /* the initiator keeps one put in flight */
			int rc = PtlPut(md, PTL_ACK_REQ, tgt, PT_BIG, 0, 0, 0, 0);
			if (rc != PTL_OK) {
				printf(
				    "%s: NIC failure seen at %.0f ms (PtlPut returned %s after %d "
				    "puts)\n",
				    role, epoch_ms(), PtlErrorStr(rc), puts);
				return 0;
			}
			puts++;
		}
		for (;;) {
			ptl_event_t ev;
			int rc = PtlEQWait(eq, &ev);
			if (rc != PTL_OK && rc != PTL_EQ_DROPPED) {
				printf("%s: NIC failure seen at %.0f ms (PtlEQWait returned %s)\n",
				       role, epoch_ms(), PtlErrorStr(rc));
				return 0;
			}
			if (ev.ni_fail_type != PTL_NI_OK) {
				printf("%s: NIC failure seen at %.0f ms (%s event, %s)\n", role,
				       epoch_ms(), PtlEventKindStr(ev.type),
				       PtlNIFailStr(ni, ev.ni_fail_type));
				return 0;
			}
			if (md != PTL_INVALID_HANDLE && ev.type == PTL_EVENT_ACK)
				break;
		}
	}
	printf("%s: no failure seen in 30 s\n", role);
	return 1;
}

static int nickill(uint64_t big_len)
{
	ptl_process_id_t tgt;
	ptl_handle_ni_t ni;
	ptl_handle_eq_t eq;
	ptl_handle_md_t md;
	uint8_t *big = calloc(1, big_len);
	if (!big)
		return 1;
	setenv("PTL_PROGRESS", "offload", 1);
	pid_t child = fork();
	if (child == 0) {
		int rc = ni_open(1, &ni, &eq) || post(ni, PT_BIG, big, big_len, eq);
		if (!rc) {
			publish_target(ni);
			rc = nickill_role("target", ni, eq, PTL_INVALID_HANDLE, tgt);
		}
		fflush(NULL);
		_exit(rc);
	}
	ptl_md_t d = {.start = big, .length = big_len, .threshold = PTL_MD_THRESH_INF};
	if (ni_open(0, &ni, &eq))
		return 1;
	tgt = wait_target();
	if (tgt.pid == PTL_PID_ANY)
		return 1;
	d.eq_handle = eq;
	if (PtlMDBind(ni, d, PTL_RETAIN, &md) != PTL_OK)
		return 1;
	printf("ready\n");
	fflush(stdout);
	int rc = nickill_role("initiator", ni, eq, md, tgt);
	fflush(stdout);
	int st;
	waitpid(child, &st, 0);
	free(big);
	return rc || !WIFEXITED(st) || WEXITSTATUS(st) != 0;
}

static int putcpu(int n)
{
	ptl_process_id_t tgt;
	ptl_handle_ni_t ni;
	ptl_handle_eq_t eq;
	ptl_handle_md_t md;
	static uint64_t buf[8];
	int pfd[2];
	if (pipe(pfd) != 0)
		return 1;
	setenv("PTL_PROGRESS", getenv("PTL_PROGRESS") ? getenv("PTL_PROGRESS") : "app", 0);
	pid_t child = fork();
	if (child == 0) { /* the target: an ME, then take events until the initiator is done
		             (app mode receives only inside calls) */
		int rc = ni_open(1, &ni, &eq) || post(ni, PT_SMALL, buf, sizeof(buf), eq);
		if (!rc)
			publish_target(ni);
		struct pollfd p = {.fd = pfd[0], .events = POLLIN};
		while (!rc && poll(&p, 1, 0) == 0) {
			ptl_event_t ev;
			int which;
			PtlEQPoll(&eq, 1, 100, &ev, &which);
		}
		_exit(rc);
	}
	ptl_md_t d = {.start = buf, .length = 8, .threshold = PTL_MD_THRESH_INF};
	if (ni_open(0, &ni, &eq))
		return 1;
	tgt = wait_target();
	if (tgt.pid == PTL_PID_ANY)
		return 1;
	d.eq_handle = eq;
	CHECK(PtlMDBind(ni, d, PTL_RETAIN, &md) == PTL_OK, "PtlMDBind");
	double ru0 = rusage_s(), th0 = now_s(CLOCK_THREAD_CPUTIME_ID);
	double wall0 = now_s(CLOCK_MONOTONIC);
	int ends = 0;
	for (int i = 0; i < n; i++) {
		CHECK(PtlPut(md, PTL_NOACK_REQ, tgt, PT_SMALL, 0, 0, 0, 0) == PTL_OK, "PtlPut");
		ptl_event_t ev; /* keep the EQ from overflowing, without waiting */
		while (i - ends > EQ_LEN / 4 && PtlEQGet(eq, &ev) == PTL_OK)
			ends += ev.type == PTL_EVENT_SEND_END;
	}
	double th = now_s(CLOCK_THREAD_CPUTIME_ID) - th0;
	while (ends < n) {
		ptl_event_t ev;
		int which;
		int rc = PtlEQPoll(&eq, 1, 5000, &ev, &which);
		CHECK(rc == PTL_OK, "PtlEQPoll: %s (%d of %d SEND_END)", PtlErrorStr(rc), ends, n);
		ends += ev.type == PTL_EVENT_SEND_END;
	}
	double ru = rusage_s() - ru0, wall = now_s(CLOCK_MONOTONIC) - wall0;
	printf("putcpu %s: %d puts of 8 bytes in %.3f s: %.2f us CPU per put in the calls, "
	       "%.2f us process CPU per put\n",
	       getenv("PTL_PROGRESS"), n, wall, th / n * 1e6, ru / n * 1e6);
	if (write(pfd[1], "x", 1) < 0)
		return 1;
	int st;
	waitpid(child, &st, 0);
	PtlNIFini(ni);
	PtlFini();
	return 0;
}

int main(int argc, char **argv)
{
	struct shared *sh =
	    mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	g_sh = sh;
	if (argc > 2 && strcmp(argv[1], "--putcpu") == 0)
		return putcpu(atoi(argv[2]));
	if (argc > 2 && strcmp(argv[1], "--nickill") == 0)
		return nickill(strtoull(argv[2], NULL, 0) << 20);
	uint64_t big_len = (argc > 1 ? strtoull(argv[1], NULL, 0) : 64) << 20;
	if (big_len == 0)
		return 1;
	setenv("PTL_PROGRESS", "offload", 1);
	pid_t child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		int rc = target(sh, big_len);
		if (rc)
			atomic_store(&sh->failed, 1);
		fflush(NULL);
		_exit(rc);
	}
	int rc = initiator(sh, big_len);
	if (rc) {
		atomic_store(&sh->failed, 1);
		atomic_store(&sh->done, 1); /* let the target out of its loop */
	}
	int st;
	waitpid(child, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		rc = 1;
	printf("%s\n", rc ? "FAIL" : "PASS: application bypass over myrinet offload");
	return rc;
}
