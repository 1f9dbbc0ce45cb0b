/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_wait.c - what an idle CQ read does after a run of empty reads: go on
 * polling, give the core away with sched_yield(), or wait in PtlEQPoll for
 * the endpoint's next event.
 *
 * MPICH never blocks: it polls fi_cq_read.  FI_PTL3_YIELD_POLLS makes the
 * provider yield after that many empty reads, FI_PTL3_BLOCK_MS makes it wait
 * in PtlEQPoll instead (both by default only on an oversubscribed node).
 * One more case needs the wait: an NI whose events are posted by another
 * process that may run only on this rank's one CPU -- the emulated Myrinet
 * NIC (mcpd) in `offload` mode, placed beside the peer rank as the
 * benchmark placement does.  Portals' own waits know it (PtlNIWaitSpin says
 * 0: they sleep at once, nal/myrinet/cpu_share.c); a polling rank there
 * holds the NIC off, and a yielding one stays runnable: under the fair
 * scheduler (EEVDF) a yield forfeits the task's turn, so when its events
 * arrive it waits behind whatever else is runnable on the core (the other
 * NIC's idle spin, other jobs), while a task that slept and is woken by the
 * event is eligible at once and preempts.  In COMB's PWW test that delay
 * decided which rank posted first; a support rank that posted after the
 * worker kept posting after it, and every 100 KB transfer then waited for
 * it (nal/myrinet/README.md, sections 3.8 and 3.9).  So over such an NI an
 * unset FI_PTL3_YIELD_POLLS defaults to PTL3_NIC_CORE_YIELD_POLLS and an
 * unset FI_PTL3_BLOCK_MS to PTL3_NIC_CORE_BLOCK_MS -- for a caller polling
 * in a tight loop only (MPI_Wait, an MPI_Test loop: its run of empty reads
 * took less than PTL3_WAIT_TIGHT_NS of its CPU time); one that computes
 * between its reads yields as before instead of losing up to a millisecond
 * of its work.  The placement may change after the endpoint opened (COMB pins its ranks after
 * MPI_Init): the NI is asked again every PTL3_WAIT_RECHECK_NS.
 */
#include "config.h"

#include <limits.h>
#include <time.h>
#include <unistd.h>

#include "ptl3.h"

static uint64_t coarse_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* How long Portals' own waits on this NI spin (0: they sleep at once, the
 * NI's event poster shares our only CPU); UINT_MAX: unknown. */
static unsigned int ni_wait_spin(struct ptl3_domain *dom)
{
	unsigned int spin_us = UINT_MAX;
	if (!dom->ni_open || PtlNIWaitSpin(dom->ni, &spin_us) != PTL_OK)
		return UINT_MAX;
	return spin_us;
}

void ptl3_wait_refresh_locked(struct ptl3_domain *dom)
{
	struct ptl3_wait *w = &dom->wait;
	uint64_t now = coarse_now_ns();
	if (w->checked_ns && now - w->checked_ns < PTL3_WAIT_RECHECK_NS)
		return;
	w->checked_ns = now ? now : 1;
	w->ni_spin_us = ni_wait_spin(dom);
	w->nic_core = w->ni_spin_us == 0;
	w->polls = ptl3_params.yield_polls;
	w->block_ms = ptl3_params.block_ms;
	if (w->nic_core && !ptl3_params.yield_polls_given && !w->polls)
		w->polls = PTL3_NIC_CORE_YIELD_POLLS;
	w->block_by_nic = 0;
	if (w->nic_core && !ptl3_params.block_ms_given && !w->block_ms) {
		w->block_ms = PTL3_NIC_CORE_BLOCK_MS;
		w->block_by_nic = 1;
	}
}

/* This thread's CPU time: a run of empty reads the NICs preempted (they
 * share the core) is still a tight loop; one with work between the reads
 * is not. */
static uint64_t cpu_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

enum ptl3_idle ptl3_wait_idle_locked(struct ptl3_cq *cq, int *block_ms)
{
	if (!cq->ep) { /* no NI to wait on: yield only */
		if (!ptl3_params.yield_polls || cq->empty_polls < ptl3_params.yield_polls)
			return PTL3_IDLE_POLL;
		cq->empty_polls = 0;
		return PTL3_IDLE_YIELD;
	}
	struct ptl3_domain *dom = cq->ep->dom;
	struct ptl3_wait *w = &dom->wait;
	if (w->block_by_nic && cq->empty_polls == 1)
		cq->idle_since_ns = cpu_now_ns();
	unsigned polls = w->polls;
	if (polls ? cq->empty_polls < polls : (cq->empty_polls & (PTL3_WAIT_IDLE_RECHECK - 1)) != 0)
		return PTL3_IDLE_POLL;
	ptl3_wait_refresh_locked(dom); /* the placement may have changed */
	if (!w->polls || cq->empty_polls < w->polls)
		return PTL3_IDLE_POLL;
	cq->empty_polls = 0;
	if (w->block_ms &&
	    (!w->block_by_nic || cpu_now_ns() - cq->idle_since_ns < PTL3_WAIT_TIGHT_NS)) {
		w->blocks++;
		*block_ms = w->block_ms;
		return PTL3_IDLE_BLOCK;
	}
	w->yields++;
	return PTL3_IDLE_YIELD;
}

void ptl3_wait_print_locked(const struct ptl3_domain *dom)
{
	const struct ptl3_wait *w = &dom->wait;
	fprintf(stderr,
	        "ptl3 waits [pid %d]: ni_wait_spin_us %d yield_polls %u block_ms %d%s yields %llu "
	        "blocks %llu\n",
	        (int)getpid(), w->ni_spin_us == UINT_MAX ? -1 : (int)w->ni_spin_us, w->polls,
	        w->block_ms, w->block_by_nic ? " (tight loops)" : "", (unsigned long long)w->yields,
	        (unsigned long long)w->blocks);
}
