/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file p3rt/oversub.h
 * @brief Is this node oversubscribed (more ranks than CPUs they may use)?
 *
 * A p3stack extension.  When it is, the progress engines stop busy-polling:
 * the ptl3 MPI adapter waits in PtlEQPoll after FI_PTL3_YIELD_POLLS empty
 * completion-queue reads, and the Portals waits (PtlEQWait/PtlEQPoll, the
 * shmem and rmpp progress spins) hand the core off with sched_yield()
 * briefly and then sleep until their event (P3_OVERSUB_WAIT), so the peer a
 * rank waits for gets the core.
 *
 * Precedence, strongest first:
 *   1. a per-engine variable set explicitly (FI_PTL3_YIELD_POLLS,
 *      P3_RMPP_SPIN_YIELD, P3_SHMEM_SPIN_YIELD) always wins;
 *   2. P3_OVERSUBSCRIBED=1 or 0 forces the answer (auto or unset: detect);
 *   3. detection: local ranks > CPUs.  Local ranks come from P3_LOCAL_RANKS,
 *      else MPI_LOCALNRANKS (hydra's mpiexec), else SLURM_STEP_TASKS_PER_NODE
 *      with SLURM_NODEID (srun), else PTL_NIDMAP (ranks whose nid is
 *      PTL_MY_RID's: ptlrun).  CPUs are P3_NODE_CPUS (ptlrun --cpus sets it
 *      to the distinct CPUs of its list), else sched_getaffinity's count
 *      when that settles it (no fewer CPUs than local ranks, or every online
 *      CPU), else the union of the local ranks' masks: a pinned rank
 *      publishes its mask on a node-local board shared with the ranks of
 *      the same parent process (hydra's proxy, slurmstepd, ptlrun) and
 *      waits up to 2 s for the others (then: its own mask).
 *      Unknown local ranks: not oversubscribed.
 */
#ifndef P3RT_OVERSUB_H
#define P3RT_OVERSUB_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What ptl_oversub_detect() found. */
struct ptl_oversub {
	int oversubscribed;   /**< 1: yield/block by default */
	unsigned local_ranks; /**< ranks on this node; 0: unknown */
	unsigned cpus;        /**< CPUs they may use */
	char source[32];      /**< where the answer came from (a variable's name) */
	char cpus_source[32]; /**< where cpus came from: "P3_NODE_CPUS", "affinity"
	                           (this rank's mask), "local ranks' affinity" (the
	                           union of the node's ranks' masks) */
};

/** Fill *o from the environment and the affinity mask; returns
 *  o->oversubscribed.  Cheap (a few getenv and one system call), no
 *  allocation that outlives the call, safe before PtlInit. */
int ptl_oversub_detect(struct ptl_oversub *o);

/** How waits behave on an oversubscribed node (P3_OVERSUB_WAIT). */
enum ptl_oversub_wait {
	/** "handoff", the default: spin with sched_yield() for at most
	 *  ptl_oversub_handoff_us() (time enough for the rank sharing the core
	 *  to take its turn and answer), then sleep on the event waited for (a
	 *  message's sender wakes the sleeper: the shmem doorbell futex). */
	PTL_OVERSUB_WAIT_HANDOFF = 0,
	/** "sleep": sleep at once (no yield-spin).  A core whose ranks all
	 *  sleep goes idle, and waking an idle CPU of a virtual machine costs
	 *  tens of us per message: 66x the 2-rank figure on a quiet machine. */
	PTL_OVERSUB_WAIT_SLEEP = 1,
	/** "yield": spin with sched_yield() for the waits' whole spin budget
	 *  (50 us in PtlEQPoll, P3_SHMEM_SPIN_US in the shmem progress) before
	 *  sleeping.  A yielding waiter stays runnable behind every other
	 *  runnable process: slow when other work loads the machine. */
	PTL_OVERSUB_WAIT_YIELD = 2,
};

/** The policy P3_OVERSUB_WAIT names (handoff, sleep, yield; unset or
 *  anything else: handoff). */
enum ptl_oversub_wait ptl_oversub_wait_policy(void);

/** The handoff's budget in us: P3_OVERSUB_HANDOFF_US (0..100000) if set,
 *  else PTL_OVERSUB_HANDOFF_US.  The budget is time, not a count of
 *  yields: a yield that lets another process run a time slice (a loaded
 *  machine) uses it up at once and the waiter then sleeps, while on a quiet
 *  machine the yields return within a few us and the waiter keeps its core
 *  busy instead of letting it go idle. */
unsigned ptl_oversub_handoff_us(void);

/** PTL_OVERSUB_WAIT_HANDOFF's default budget (us). */
#define PTL_OVERSUB_HANDOFF_US 50

/** The ptl3 MPI adapter's defaults on an oversubscribed node: wait in
 *  PtlEQPoll after this many empty completion-queue reads
 *  (FI_PTL3_YIELD_POLLS; the reads before it hold the core without
 *  yielding) ... */
#define PTL_OVERSUB_ADAPTER_YIELD_POLLS 1
/** ... for an event, at most this many milliseconds (FI_PTL3_BLOCK_MS). */
#define PTL_OVERSUB_ADAPTER_BLOCK_MS 1

/** The policy's name ("handoff", "sleep", "yield"). */
const char *ptl_oversub_wait_name(enum ptl_oversub_wait w);

/** One line for a benchmark header, e.g. "4 local ranks (MPI_LOCALNRANKS)
 *  on 2 CPUs: oversubscribed, waits yield the CPU". */
void ptl_oversub_describe(const struct ptl_oversub *o, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
