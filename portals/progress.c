/* SPDX-License-Identifier: BSD-3-Clause */
/* progress.c - where the LIB side runs: the per-NI progress thread
 * (PTL_PROGRESS=thread), futex and clock helpers used by the waits. */
#include "lib.h"

#include <errno.h>
#include <linux/futex.h>
#include <limits.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

uint64_t p3_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int p3_futex_wait(_Atomic uint32_t *word, uint32_t val, int timeout_ms)
{
	struct timespec ts, *tsp = NULL;

	if (timeout_ms >= 0) {
		ts.tv_sec = timeout_ms / 1000;
		ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
		tsp = &ts;
	}
	/* Shared futex: the word may live in shared memory (EQ rings). */
	return (int)syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, val, tsp, NULL, 0);
}

int p3_futex_waitv(_Atomic uint32_t *const *words, const uint32_t *vals, int n, int timeout_ms)
{
#ifdef SYS_futex_waitv
	struct futex_waitv w[FUTEX_WAITV_MAX];
	struct timespec ts, *tsp = NULL;
	static _Atomic int unsupported;

	if (n == 1)
		return p3_futex_wait(words[0], vals[0], timeout_ms);
	if (n <= FUTEX_WAITV_MAX && !atomic_load_explicit(&unsupported, memory_order_relaxed)) {
		for (int i = 0; i < n; i++) {
			w[i].val = vals[i];
			w[i].uaddr = (uintptr_t)words[i];
			w[i].flags = FUTEX_32;
			w[i].__reserved = 0;
		}
		if (timeout_ms >= 0) {
			/* futex_waitv takes an absolute timeout */
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += timeout_ms / 1000;
			ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			tsp = &ts;
		}
		long rc = syscall(SYS_futex_waitv, w, (unsigned int)n, 0u, tsp, CLOCK_MONOTONIC);
		if (rc >= 0 || errno != ENOSYS)
			return (int)rc;
		atomic_store(&unsupported, 1);
	}
#endif
	/* No futex_waitv (kernel < 5.16): sleep on the first word in short
	 * slices so events on the others are seen within 1 ms. */
	return p3_futex_wait(words[0], vals[0], timeout_ms < 0 || timeout_ms > 1 ? 1 : timeout_ms);
}

void p3_futex_wake(_Atomic uint32_t *word)
{
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* The NI whose progress thread this is (p3_lib_in_progress_thread). */
static _Thread_local const struct p3_lib *p3_progress_thread_lib;

int p3_lib_in_progress_thread(const struct p3_lib *lib)
{
	return lib && p3_progress_thread_lib == lib;
}

/* A fork() is coming (p3_progress_thread_hold): say so and wait, with
 * nothing of the NAL's on this stack, until the parent lets us run on.  A
 * new hold that comes while we still sleep here parks us again. */
static void p3_progress_park(struct p3_lib *lib)
{
	for (;;) {
		uint32_t s = P3_FORK_HOLD;

		if (!atomic_compare_exchange_strong(&lib->lib_fork_state, &s, P3_FORK_PARKED))
			return; /* released (P3_FORK_RUN) */
		p3_futex_wake(&lib->lib_fork_state);
		while (atomic_load(&lib->lib_fork_state) == P3_FORK_PARKED)
			p3_futex_wait(&lib->lib_fork_state, P3_FORK_PARKED, -1);
	}
}

static void *p3_progress_main(void *arg)
{
	struct p3_lib *lib = arg;

	p3_progress_thread_lib = lib;
	/* The NAL spins briefly, then blocks until traffic or wakeup(). */
	while (!atomic_load_explicit(&lib->lib_stop, memory_order_acquire)) {
		if (atomic_load_explicit(&lib->lib_fork_state, memory_order_acquire) != P3_FORK_RUN)
			p3_progress_park(lib);
		else
			lib->lib_nal->progress(lib->lib_nal_priv, -1);
	}
	return NULL;
}

/* Called with the API lock held (fork.c), so the thread cannot be stopped
 * meanwhile.  The NAL's progress returns on a wakeup (retried, as in
 * p3_progress_thread_stop: one may be lost); the bound keeps a fork from
 * hanging if the thread cannot get out (a thread that forks from inside a
 * NAL upcall holds the NAL's lock).  Without the park the fork still works:
 * only the child's copy may then hold memory referenced from that thread's
 * stack alone (a leak report under LeakSanitizer, nothing else). */
void p3_progress_thread_hold(struct p3_lib *lib)
{
	if (!lib->lib_thread_started || p3_lib_in_progress_thread(lib))
		return;
	atomic_store(&lib->lib_fork_state, P3_FORK_HOLD);
	for (int tries = 0; tries < 100; tries++) {
		if (atomic_load(&lib->lib_fork_state) == P3_FORK_PARKED)
			return;
		lib->lib_nal->wakeup(lib->lib_nal_priv);
		p3_futex_wait(&lib->lib_fork_state, P3_FORK_HOLD, 10);
	}
	p3_lib_log(lib, 1, "fork: the progress thread did not pause within 1 s; forking anyway");
}

void p3_progress_thread_release(struct p3_lib *lib)
{
	if (!lib->lib_thread_started)
		return;
	atomic_store(&lib->lib_fork_state, P3_FORK_RUN);
	p3_futex_wake(&lib->lib_fork_state);
}

int p3_progress_thread_start(struct p3_lib *lib)
{
	int rc;

	atomic_store(&lib->lib_stop, 0);
	rc = pthread_create(&lib->lib_thread, NULL, p3_progress_main, lib);
	if (rc) {
		p3_lib_log(lib, 0, "PtlNIInit: cannot start the progress thread (%s); "
				   "unset PTL_PROGRESS to run without one",
			   strerror(rc));
		return -1;
	}
	lib->lib_thread_started = 1;
	return 0;
}

void p3_progress_thread_stop(struct p3_lib *lib)
{
	atomic_store_explicit(&lib->lib_stop, 1, memory_order_release);
	/* A NAL's blocking progress returns on work its passes find or on a
	 * wakeup after its entry; lib_stop is neither.  A wakeup that lands
	 * after the thread checked lib_stop but before its progress call took
	 * the NAL's wakeup count is lost, and the thread would sleep for good
	 * (shmem blocks on its doorbell without a deadline): wake it until it
	 * has gone. */
	for (;;) {
		struct timespec until;

		lib->lib_nal->wakeup(lib->lib_nal_priv);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 10 * 1000 * 1000;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		if (pthread_timedjoin_np(lib->lib_thread, NULL, &until) != ETIMEDOUT)
			break;
	}
	lib->lib_thread_started = 0;
}
