/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * api-handoff.c - the handoff wait of an oversubscribed node
 * (<p3rt/oversub.h>, P3_OVERSUB_WAIT=handoff): before it sleeps, an EQ
 * wait yields the CPU for up to P3_OVERSUB_HANDOFF_US (50 us by default)
 * so that the rank sharing its core takes
 * its turn and answers; a quiet machine's core then does not go idle
 * between two messages (waking an idle virtual CPU costs tens of us).
 *
 * On a machine loaded by other work the handoff does not pay: a yield
 * either hands the core to a foreign process for a time slice (a
 * millisecond), or comes straight back to the yielder without the peer
 * having answered, and the awaited event comes only after the sleep anyway
 * (measured, 4 ranks on 2 cores at load 20: 8 of 8,000 handoffs saw their
 * event, most ending in quick yields).  There, sleeping at once is best: a
 * sleeper woken by its event preempts.  So
 * the handoffs are judged in windows of P3_HANDOFF_WINDOW: fewer than half
 * of a window seeing their event, or one yield taking the whole budget (the
 * core was taken), make the process's waits sleep at once for a back-off
 * period: 1 ms, doubling while the window of handoffs that probes after
 * each period keeps failing, up to 128 ms; a window that pays clears it.
 * Under load, probing costs a few handoffs every 128 ms.  State is per
 * process (relaxed atomics: threads may race on it harmlessly).
 *
 * Handoffs also fail on a quiet machine, where the event comes late
 * because the ranks of the job are slow to send it, and a back-off there
 * can feed itself (a rank that sleeps at once lets its core go idle and
 * sends late, so its peers' handoffs fail and they back off too): on the
 * quiet machine, 4 ranks of osu_allreduce 64 B took 95 us with the
 * handoff (20 us then), 99 us sleeping at once, 21.5 us yielding for 80 us
 * (mpi-adapter/README.md).  So a failed window, or a slow yield, backs
 * off only when other work is runnable: the machine's runnable tasks
 * (/proc/loadavg, read on that path only) outnumber the job's ranks on
 * this node (p3_handoff_set_local_ranks; unknown: always back off).
 */
#include "api.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define P3_HANDOFF_WINDOW         4u
#define P3_HANDOFF_BACKOFF_MIN_US 1000u
#define P3_HANDOFF_BACKOFF_MAX_US 128000u
#define P3_HANDOFF_LOAD_CHECK_US  1000u

static _Atomic uint64_t handoff_skip_until_us; /* sleep at once until then */
static _Atomic uint32_t handoff_backoff_us = P3_HANDOFF_BACKOFF_MIN_US;
static _Atomic uint32_t handoff_window;      /* handoffs judged in this window */
static _Atomic uint32_t handoff_window_ok;   /* ... that saw their event */
static _Atomic unsigned handoff_local_ranks; /* the node's ranks; 0: unknown */

void p3_handoff_set_local_ranks(unsigned ranks)
{
	atomic_store_explicit(&handoff_local_ranks, ranks, memory_order_relaxed);
}

/* The runnable-task count of /proc/loadavg's text (0: malformed). */
static unsigned loadavg_running(const char *text)
{
	/* "0.52 0.58 0.59 3/250 12345": the fourth field's numerator */
	const char *p = text;
	for (int field = 0; field < 3; field++) {
		p = strchr(p, ' ');
		if (!p)
			return 0;
		p++;
	}
	char *end;
	unsigned long n = strtoul(p, &end, 10);
	return end != p && *end == '/' && n <= UINT32_MAX ? (unsigned)n : 0;
}

/* Runnable tasks on the machine (me included), or 0 if unknown.  Opened
 * anew each time (a failing window's path only): a descriptor kept open
 * could be closed by the program and its number reused. */
static unsigned machine_running(void)
{
	char buf[128];
	int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return loadavg_running(buf);
}

/* Is work other than this job's ranks runnable?  Unknown: yes.  Asked at
 * most once per P3_HANDOFF_LOAD_CHECK_US (three system calls; windows may
 * fail every few waits), the last answer standing in between. */
static int foreign_load(uint64_t now_us)
{
	static _Atomic uint64_t checked_us;
	static _Atomic int verdict;
	uint64_t last = atomic_load_explicit(&checked_us, memory_order_relaxed);
	if (last && now_us - last < P3_HANDOFF_LOAD_CHECK_US)
		return atomic_load_explicit(&verdict, memory_order_relaxed);
	unsigned ranks = atomic_load_explicit(&handoff_local_ranks, memory_order_relaxed);
	unsigned running = ranks ? machine_running() : 0;
	int loaded = !running || running > ranks;
	atomic_store_explicit(&verdict, loaded, memory_order_relaxed);
	atomic_store_explicit(&checked_us, now_us, memory_order_relaxed);
	return loaded;
}

unsigned int p3_handoff_budget(unsigned int budget_us, uint64_t now_us)
{
	uint64_t until = atomic_load_explicit(&handoff_skip_until_us, memory_order_relaxed);
	return now_us < until ? 0 : budget_us;
}

static void handoff_window_reset(void)
{
	atomic_store_explicit(&handoff_window, 0, memory_order_relaxed);
	atomic_store_explicit(&handoff_window_ok, 0, memory_order_relaxed);
}

static void handoff_back_off(uint64_t now_us)
{
	uint32_t backoff = atomic_load_explicit(&handoff_backoff_us, memory_order_relaxed);
	handoff_window_reset();
	if (!foreign_load(now_us))
		return; /* the job's own ranks are slow: keep handing off */
	atomic_store_explicit(&handoff_skip_until_us, now_us + backoff, memory_order_relaxed);
	if (backoff < P3_HANDOFF_BACKOFF_MAX_US)
		atomic_store_explicit(&handoff_backoff_us, backoff * 2, memory_order_relaxed);
}

void p3_handoff_result(enum p3_handoff_outcome outcome, uint64_t now_us)
{
	if (outcome == P3_HANDOFF_SLOW_YIELD) {
		handoff_back_off(now_us);
		return;
	}
	uint32_t ok = atomic_load_explicit(&handoff_window_ok, memory_order_relaxed);
	if (outcome == P3_HANDOFF_EVENT)
		atomic_store_explicit(&handoff_window_ok, ++ok, memory_order_relaxed);
	uint32_t n = atomic_fetch_add_explicit(&handoff_window, 1, memory_order_relaxed) + 1;
	if (n < P3_HANDOFF_WINDOW)
		return;
	if (2 * ok < n) {
		handoff_back_off(now_us);
		return;
	}
	handoff_window_reset();
	if (atomic_load_explicit(&handoff_backoff_us, memory_order_relaxed) !=
	    P3_HANDOFF_BACKOFF_MIN_US)
		atomic_store_explicit(&handoff_backoff_us, P3_HANDOFF_BACKOFF_MIN_US,
		                      memory_order_relaxed);
}
