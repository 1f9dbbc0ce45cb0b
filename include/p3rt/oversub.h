/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file p3rt/oversub.h
 * @brief Is this node oversubscribed (more ranks than CPUs they may use)?
 *
 * A p3stack extension.  When it is, the progress engines stop busy-polling:
 * the ptl3 MPI adapter yields the CPU after FI_PTL3_YIELD_POLLS empty
 * completion-queue reads (64 by default then), and the Portals waits
 * (PtlEQWait/PtlEQPoll, the shmem and rmpp progress spins) yield instead of
 * pausing before they block, so the peer a rank waits for gets the core.
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

/** How waits behave on an oversubscribed node: 1 (P3_OVERSUB_WAIT=sleep,
 *  the default) sleep at once on the event they wait for (PtlEQPoll's spin
 *  phase and the shmem progress spin are skipped; a message's sender wakes
 *  the sleeper), 0 (P3_OVERSUB_WAIT=yield) spin with sched_yield() first, as
 *  before.  A yield leaves the waiter runnable behind every other runnable
 *  process for a time slice, a sleeper woken by its event runs at once: on
 *  a machine that also runs other work, 4 ranks on 2 cores took 5-9x less
 *  time per allreduce sleeping (mpi-adapter/README.md). */
int ptl_oversub_wait_sleeps(void);

/** One line for a benchmark header, e.g. "4 local ranks (MPI_LOCALNRANKS)
 *  on 2 CPUs: oversubscribed, waits yield the CPU". */
void ptl_oversub_describe(const struct ptl_oversub *o, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
