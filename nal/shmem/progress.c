/* SPDX-License-Identifier: BSD-3-Clause */
/* progress.c - shmem NAL progress engine: poll the inbound rings, drain
 * queued sends, spin briefly, then sleep on the futex doorbell. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <linux/futex.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "shmem.h"

#define SHM_RX_BATCH        64                    /* records per ring per pass */
#define SHM_CHECK_PERIOD_NS (50ull * 1000 * 1000) /* liveness checks */
#define SHM_BUSY_SLEEP_MS   1  /* longest sleep while sends wait for ring space */
#define SHM_WAIT_SLEEP_MS   50 /* longest sleep while work is outstanding */

static inline void shm_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

static long shm_futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
	/* not FUTEX_PRIVATE_FLAG: the word is shared between processes */
	return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

void shm_doorbell_ring(struct shm_ni *ni, struct shm_seg_hdr *hdr)
{
	atomic_fetch_add_explicit(&hdr->sh_doorbell, 1, memory_order_release);
	shm_futex(&hdr->sh_doorbell, FUTEX_WAKE, INT_MAX, NULL);
	if (ni)
		shm_ctr_add(ni, SHM_CTR_FUTEX_WAKES, 1);
}

void shm_wakeup(void *priv)
{
	struct shm_ni *ni = priv;

	/* async-signal-safe: atomics and one system call */
	atomic_fetch_add(&ni->ni_kick, 1);
	atomic_fetch_add_explicit(&ni->ni_hdr->sh_doorbell, 1, memory_order_release);
	shm_futex(&ni->ni_hdr->sh_doorbell, FUTEX_WAKE, INT_MAX, NULL);
}

static void shm_rx_broken(struct shm_ni *ni, uint32_t idx, struct shm_rx *rx)
{
	rx->rx_broken = 1;
	shm_ctr_add(ni, SHM_CTR_BAD_RECORDS, 1);
	p3_lib_log(ni->ni_lib, 0, "shmem: inbound ring %u (from %u:%u) is corrupt; ignoring it",
	           idx, (uint32_t)(rx->rx_key >> 32), (uint32_t)rx->rx_key);
	shm_rx_fail_pipe(ni, rx, PTL_NI_FAIL);
}

/* Attach newly claimed rings. */
static void shm_rx_attach(struct shm_ni *ni, uint32_t idx, struct shm_rx *rx)
{
	struct shm_claim *cl = shm_seg_claim(&ni->ni_seg, idx);

	if (!cl || atomic_load_explicit(&cl->cl_state, memory_order_acquire) != SHM_CLAIM_TAKEN)
		return;
	shm_ring_attach_consumer(&rx->rx_ring, shm_seg_ring_ctl(&ni->ni_seg, idx),
	                         shm_seg_ring_data(&ni->ni_seg, idx), ni->ni_cf.cf_ring_size);
	shm_ring_prefault(ni, &ni->ni_seg, idx);
	rx->rx_attached = 1;
}

/* One pass over the inbound rings (progress lock held). */
static int shm_poll_rx_locked(struct shm_ni *ni)
{
	uint32_t nclaimed = atomic_load_explicit(&ni->ni_hdr->sh_nclaimed, memory_order_acquire);
	int events = 0;

	if (nclaimed > ni->ni_cf.cf_max_peers)
		nclaimed = ni->ni_cf.cf_max_peers;
	for (uint32_t i = 0; i < nclaimed; i++) {
		struct shm_rx *rx = &ni->ni_rx[i];
		int consumed = 0;

		if (!rx->rx_attached) {
			shm_rx_attach(ni, i, rx);
			if (!rx->rx_attached)
				continue;
		}
		if (rx->rx_broken || !shm_ring_nonempty(&rx->rx_ring))
			continue;
		for (int k = 0; k < SHM_RX_BATCH; k++) {
			const struct shm_rec *rec;
			uint32_t len;
			int r = shm_ring_peek(&rx->rx_ring, &rec, &len);

			if (r == SHM_RING_EMPTY)
				break;
			if (r != SHM_RING_OK) {
				shm_rx_broken(ni, i, rx);
				break;
			}
			r = shm_rx_record(ni, i, rx, rec, len);
			if (r == -ENOMEM)
				break; /* leave it there, retry later */
			if (r < 0) {
				shm_rx_broken(ni, i, rx);
				break;
			}
			shm_ring_consume(&rx->rx_ring, len);
			events += r;
			consumed = 1;
		}
		/* the producer queued sends for lack of space: tell it */
		if (consumed &&
		    atomic_load_explicit(&rx->rx_ring.rg_ctl->rc_want_space,
		                         memory_order_relaxed) &&
		    atomic_exchange(&rx->rx_ring.rg_ctl->rc_want_space, 0) && rx->rx_peer)
			shm_peer_wake_producer(ni, rx->rx_peer);
	}
	return events;
}

/* Drain queued sends and check on peers with outstanding work. */
static int shm_poll_tx(struct shm_ni *ni, int check)
{
	int events = 0;
	uint64_t now = 0;

	if (check) {
		now = shm_now_ns();
		if (now < ni->ni_next_check_ns)
			check = 0;
		else
			ni->ni_next_check_ns = now + SHM_CHECK_PERIOD_NS;
	}
	for (struct shm_peer *p = atomic_load(&ni->ni_peers); p; p = p->pr_next_all) {
		if (!atomic_load_explicit(&p->pr_busy, memory_order_relaxed))
			continue;
		events += shm_peer_drain(ni, p);
		if (check)
			events += shm_peer_check(ni, p, now);
	}
	if (check) {
		/* senders of half-received pipeline messages */
		for (uint32_t i = 0; i < ni->ni_cf.cf_max_peers; i++) {
			struct shm_rx *rx = &ni->ni_rx[i];
			if (rx->rx_pipe.px_active && kill((pid_t)rx->rx_ospid, 0) < 0 &&
			    errno == ESRCH) {
				shm_rx_fail_pipe(ni, rx, PTL_NI_PEER_DEAD);
				events++;
			}
		}
	}
	return events;
}

/* 1 if an inbound ring may hold a record: the record at its shared tail
 * is stamped (the record's own line: the one cache line a message moves).
 * Both are in our segment, so no lock is needed to look (the data follow
 * the control block: shm_seg_ring_data); a ring claimed but not attached
 * yet says 1 once its HELLO is there and the locked pass deals with it. */
static int shm_rx_maybe_pending(struct shm_ni *ni)
{
	uint32_t n = atomic_load_explicit(&ni->ni_hdr->sh_nclaimed, memory_order_acquire);

	if (n > ni->ni_cf.cf_max_peers)
		n = ni->ni_cf.cf_max_peers;
	for (uint32_t i = 0; i < n; i++) {
		struct shm_ring_ctl *ctl = ni->ni_rx_ctl[i];
		if (ctl &&
		    shm_ring_stamped((const uint8_t *)(ctl + 1), ni->ni_cf.cf_ring_size,
		                     atomic_load_explicit(&ctl->rc_tail, memory_order_relaxed)))
			return 1;
	}
	return 0;
}

/* The pass proper (out of line: its frame is not the idle check's). */
static __attribute__((noinline)) int shm_pass_locked(struct shm_ni *ni, int check)
{
	int events;
	/* EQ handlers run inside a pass (from p3_lib_parse): lock while there
	 * are any, as one could start a thread (shm_lock_hot) */
	int locked = !shm_single_threaded() || p3_lib_runs_handlers(ni->ni_lib);

	if (locked && pthread_mutex_trylock(&ni->ni_progress_lock) != 0)
		return -1;
	events = shm_poll_rx_locked(ni);
	if (atomic_load_explicit(&ni->ni_busy_peers, memory_order_relaxed) > 0 || check)
		events += shm_poll_tx(ni, check);
	if (locked)
		pthread_mutex_unlock(&ni->ni_progress_lock);
	return events;
}

/* Returns -1 if another thread is progressing, else the events handled. */
static inline int shm_pass(struct shm_ni *ni, int check)
{
	/* Nothing inbound and no queued sends: done without the lock (a
	 * locked instruction on lock and unlock; an idle poll of app-mode
	 * progress runs this between every two messages). */
	if (!check && atomic_load_explicit(&ni->ni_busy_peers, memory_order_relaxed) == 0 &&
	    !shm_rx_maybe_pending(ni))
		return 0;
	return shm_pass_locked(ni, check);
}

static int shm_has_rx_pipe(struct shm_ni *ni)
{
	uint32_t n = atomic_load(&ni->ni_hdr->sh_nclaimed);

	if (n > ni->ni_cf.cf_max_peers)
		n = ni->ni_cf.cf_max_peers;
	for (uint32_t i = 0; i < n; i++)
		if (ni->ni_rx[i].rx_pipe.px_active)
			return 1;
	return 0;
}

/* progress() with a timeout: pass, spin, then sleep on the doorbell. */
static __attribute__((noinline)) int shm_progress_wait(struct shm_ni *ni, int timeout_ms)
{
	uint32_t kick = atomic_load(&ni->ni_kick);
	int events;

	if (atomic_load_explicit(&ni->ni_stopping, memory_order_relaxed))
		return 0;
	events = shm_pass(ni, 0);
	if (events > 0 || timeout_ms == 0)
		return events > 0 ? events : 0;

	uint64_t start = shm_now_ns();
	uint64_t deadline = timeout_ms > 0 ? start + (uint64_t)timeout_ms * 1000000ull : UINT64_MAX;
	uint64_t spin_end = start + (uint64_t)ni->ni_cf.cf_spin_us * 1000ull;

	/* spin: a bounded number of passes (never indefinitely: 2 cores).
	 * The clock is read every 32 passes: clock_gettime may cost more than
	 * a pass (no vDSO fast path on some virtual machines); every pass when
	 * the spin yields (a system call each, and an oversubscribed node's
	 * handoff budget is a few us: <p3rt/oversub.h>). */
	for (unsigned int n = 0;; n++) {
		if (ni->ni_spin_yield || (n & 31) == 0) {
			uint64_t now = shm_now_ns();
			if (now >= spin_end || now >= deadline)
				break;
		}
		/* Driven by a progress thread, which shares its core with the
		 * application thread when the rank is pinned, or on an
		 * oversubscribed node (more ranks than CPUs): yield instead of
		 * pausing, or the thread or rank we wait for waits for the
		 * whole spin. */
		if (ni->ni_spin_yield)
			sched_yield();
		else
			shm_cpu_relax();
		events = shm_pass(ni, 0);
		if (events > 0)
			return events;
		if (atomic_load_explicit(&ni->ni_kick, memory_order_relaxed) != kick)
			return 0;
	}

	/* block on the doorbell */
	for (;;) {
		uint64_t now = shm_now_ns();
		if (now >= deadline)
			return 0;
		if (atomic_load(&ni->ni_stopping))
			return 0;

		uint32_t bell =
		    atomic_load_explicit(&ni->ni_hdr->sh_doorbell, memory_order_acquire);
		atomic_fetch_add(&ni->ni_hdr->sh_sleepers, 1);
		atomic_thread_fence(memory_order_seq_cst);
		events = shm_pass(ni, 1);
		if (events > 0 || atomic_load(&ni->ni_kick) != kick) {
			atomic_fetch_sub(&ni->ni_hdr->sh_sleepers, 1);
			return events > 0 ? events : 0;
		}

		/* Sleep, but not past the deadline, and only briefly while
		 * our sends wait for ring space or completions (receivers do
		 * not always wake us) or peers need liveness checks. */
		uint64_t ms =
		    deadline == UINT64_MAX ? UINT64_MAX : (deadline - now + 999999) / 1000000;
		int busy = atomic_load(&ni->ni_busy_peers) > 0;
		if (busy && ms > SHM_BUSY_SLEEP_MS)
			ms = SHM_BUSY_SLEEP_MS;
		if (!busy && ms > SHM_WAIT_SLEEP_MS && shm_has_rx_pipe(ni))
			ms = SHM_WAIT_SLEEP_MS;
		struct timespec ts, *tsp = NULL;
		if (ms != UINT64_MAX) {
			ts.tv_sec = (time_t)(ms / 1000);
			ts.tv_nsec = (long)(ms % 1000) * 1000000L;
			tsp = &ts;
		}
		shm_ctr_add(ni, SHM_CTR_FUTEX_WAITS, 1);
		shm_futex(&ni->ni_hdr->sh_doorbell, FUTEX_WAIT, bell, tsp);
		atomic_fetch_sub(&ni->ni_hdr->sh_sleepers, 1);

		events = shm_pass(ni, busy);
		if (events > 0)
			return events;
		if (atomic_load(&ni->ni_kick) != kick)
			return 0;
	}
}

int shm_progress(void *priv, int timeout_ms)
{
	struct shm_ni *ni = priv;

	/* One pass, no wait (app-mode polls, each Portals call), apart from
	 * the waiting loop so that it costs no more than the pass itself. */
	if (timeout_ms == 0) {
		if (atomic_load_explicit(&ni->ni_stopping, memory_order_relaxed))
			return 0;
		int n = shm_pass(ni, 0);
		return n > 0 ? n : 0;
	}
	return shm_progress_wait(ni, timeout_ms);
}
